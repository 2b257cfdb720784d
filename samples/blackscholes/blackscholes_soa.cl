// The hand-written discrete-array peer of blackscholes_aos.cl: the same arithmetic, one array
// per field, as a programmer rewriting the host code for coalescing would write it.
#pragma OPENCL FP_CONTRACT OFF
static float cnd(float d)
{
    const float a1 = 0.31938153f, a2 = -0.356563782f, a3 = 1.781477937f;
    const float a4 = -1.821255978f, a5 = 1.330274429f, rsqrt2pi = 0.39894228040143267794f;
    float k = 1.0f / (1.0f + 0.2316419f * fabs(d));
    float c = rsqrt2pi * exp(-0.5f * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));
    return d > 0 ? 1.0f - c : c;
}

__kernel void black_scholes(__global const float *spot, __global const float *strike, __global const float *years,
                            __global float *call, __global float *put, float riskfree, float volatility, uint n)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float s = spot[i], x = strike[i], t = years[i];
    float sqrt_t = sqrt(t);
    float d1 = (log(s / x) + (riskfree + 0.5f * volatility * volatility) * t) / (volatility * sqrt_t);
    float d2 = d1 - volatility * sqrt_t;
    float exp_rt = exp(-riskfree * t);
    call[i] = s * cnd(d1) - x * exp_rt * cnd(d2);
    put[i] = x * exp_rt * (1.0f - cnd(d2)) - s * (1.0f - cnd(-d1));
}
