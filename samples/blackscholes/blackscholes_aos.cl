// Black-Scholes pricing of European options, one option per work-item, options kept as an
// array of structures exactly as the host program stores them.
#pragma OPENCL FP_CONTRACT OFF
typedef struct {
    float spot;    // S: current price of the underlying
    float strike;  // X
    float years;   // T: time to expiry
    float call;    // out: call price
    float put;     // out: put price
} option_t;

static float cnd(float d)
{
    const float a1 = 0.31938153f, a2 = -0.356563782f, a3 = 1.781477937f;
    const float a4 = -1.821255978f, a5 = 1.330274429f, rsqrt2pi = 0.39894228040143267794f;
    float k = 1.0f / (1.0f + 0.2316419f * fabs(d));
    float c = rsqrt2pi * exp(-0.5f * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));
    return d > 0 ? 1.0f - c : c;
}

__kernel void black_scholes(__global option_t *opt, float riskfree, float volatility, uint n)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float s = opt[i].spot, x = opt[i].strike, t = opt[i].years;
    float sqrt_t = sqrt(t);
    float d1 = (log(s / x) + (riskfree + 0.5f * volatility * volatility) * t) / (volatility * sqrt_t);
    float d2 = d1 - volatility * sqrt_t;
    float exp_rt = exp(-riskfree * t);
    opt[i].call = s * cnd(d1) - x * exp_rt * cnd(d2);
    opt[i].put = x * exp_rt * (1.0f - cnd(d2)) - s * (1.0f - cnd(-d1));
}
