/* European option book: price and delta of every option (Black-Scholes), then the book is aged
 * by one trading day. An option record holds its inputs and the results. */
typedef struct {
    float spot, strike, expiry, rate;
    float vol, call, put, delta;
} Option;

#define INV_SQRT2 0.70710678118654752f

static float cnd(float d) { return 0.5f * erfc(-d * INV_SQRT2); }

static void price_one(__global Option *o)
{
    const float sqrt_t = sqrt(o->expiry);
    const float d1 = (log(o->spot / o->strike) + (o->rate + 0.5f * o->vol * o->vol) * o->expiry) / (o->vol * sqrt_t);
    const float d2 = d1 - o->vol * sqrt_t;
    const float disc = o->strike * exp(-o->rate * o->expiry);
    o->call = o->spot * cnd(d1) - disc * cnd(d2);
    o->put = disc * cnd(-d2) - o->spot * cnd(-d1);
    o->delta = cnd(d1);
}

__kernel void price_book(__global Option *book, const uint n)
{
    const uint i = get_global_id(0);
    if (i < n)
        price_one(&book[i]);
}

__kernel void age_book(__global Option *book, const uint n, const float day)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    __global Option *o = book + i;
    o->expiry = fmax(o->expiry - day, 0.02f);
    o->spot *= 1.0f + 0.01f * (o->delta - 0.5f);
}
