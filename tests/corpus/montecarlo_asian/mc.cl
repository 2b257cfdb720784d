/* Monte Carlo pricing of arithmetic Asian calls. Each work-item owns one contract and its
 * random stream; every launch adds PATHS paths of STEPS fixings to the running sums, so the
 * estimate refines over launches. Build with -DPATHS=.. -DSTEPS=.. */
typedef struct {
    float s0, strike, expiry, vol;
    float rate;
    uint seed;
    float sum, sum2;
} Contract;

inline uint lcg(uint *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s;
}

inline float uniform01(uint *s) { return ((lcg(s) >> 8) + 0.5f) * (1.0f / 16777216.0f); }

/* Box-Muller, one normal per call (the second is dropped for simplicity) */
inline float normal01(uint *s)
{
    const float u1 = uniform01(s), u2 = uniform01(s);
    return sqrt(-2.0f * log(u1)) * cos(6.2831853f * u2);
}

__kernel void asian_paths(__global Contract *c, const int n)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    uint seed = c[i].seed;
    const float dt = c[i].expiry / STEPS;
    const float drift = (c[i].rate - 0.5f * c[i].vol * c[i].vol) * dt;
    const float diff = c[i].vol * sqrt(dt);
    float sum = c[i].sum, sum2 = c[i].sum2;
    for (int p = 0; p < PATHS; p++) {
        float s = c[i].s0, avg = 0.0f;
        for (int t = 0; t < STEPS; t++) {
            s *= exp(drift + diff * normal01(&seed));
            avg += s;
        }
        const float payoff = fmax(avg / STEPS - c[i].strike, 0.0f) * exp(-c[i].rate * c[i].expiry);
        sum += payoff;
        sum2 += payoff * payoff;
    }
    c[i].seed = seed;
    c[i].sum = sum;
    c[i].sum2 = sum2;
}
