// blackscholes_aos.cl written by hand for ASTA addressing, as the thesis's transformed kernels
// are: the same arithmetic, each field read at its ASTA place. It runs only under clayout, which
// converts the buffer from the host's AoS to ASTA before the first launch (the annotation says
// so) and defines CLAYOUT_TILE, the tile T, when it builds the program.
#pragma OPENCL FP_CONTRACT OFF
#ifndef CLAYOUT_TILE
#error "blackscholes_asta.cl needs CLAYOUT_TILE: run it under clayout (ld_preload/clayout-run)"
#endif
typedef struct {
    float spot, strike, years, call, put;
} option_t;

// Word s of structure i of m structures of S words, tile T: full tiles of T structures, each
// S rows of T words, then the last m % T structures as a mini SoA.
#define ASTA(i, s, S, T, m) \
    ((i) < (m) - (m) % (T) ? ((i) / (T) * (S) + (s)) * (T) + (i) % (T) \
                           : ((m) - (m) % (T)) * (S) + (s) * ((m) % (T)) + (i) - ((m) - (m) % (T)))
#define OPT(s) w[ASTA(i, s, 5, CLAYOUT_TILE, n)]

static float cnd(float d)
{
    const float a1 = 0.31938153f, a2 = -0.356563782f, a3 = 1.781477937f;
    const float a4 = -1.821255978f, a5 = 1.330274429f, rsqrt2pi = 0.39894228040143267794f;
    float k = 1.0f / (1.0f + 0.2316419f * fabs(d));
    float c = rsqrt2pi * exp(-0.5f * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));
    return d > 0 ? 1.0f - c : c;
}

//DL: AoS: opt[n] -> ASTA
__kernel void black_scholes(__global option_t *opt, float riskfree, float volatility, uint n)
{
    __global float *w = (__global float *)opt;
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float s = OPT(0), x = OPT(1), t = OPT(2);
    float sqrt_t = sqrt(t);
    float d1 = (log(s / x) + (riskfree + 0.5f * volatility * volatility) * t) / (volatility * sqrt_t);
    float d2 = d1 - volatility * sqrt_t;
    float exp_rt = exp(-riskfree * t);
    OPT(3) = s * cnd(d1) - x * exp_rt * cnd(d2);
    OPT(4) = x * exp_rt * (1.0f - cnd(d2)) - s * (1.0f - cnd(-d1));
}
