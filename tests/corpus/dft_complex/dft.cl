/* Direct DFT of many short complex signals (one row each), then a spectral filter, then the
 * inverse. Complex samples are records of two floats; twiddles come from a precomputed table.
 * Annotated in the source. */
typedef struct {
    float re, im;
} cplx_t;

inline cplx_t cmul(cplx_t a, cplx_t b)
{
    cplx_t r;
    r.re = a.re * b.re - a.im * b.im;
    r.im = a.re * b.im + a.im * b.re;
    return r;
}

//DL: AoS: tw[global_size(0)]
__kernel void make_twiddles(__global cplx_t *tw)
{
    const int k = get_global_id(0), len = get_global_size(0);
    const float a = -6.2831853f * k / len;
    tw[k].re = cos(a);
    tw[k].im = sin(a);
}

//DL: AoS: in[rows * len], out[rows * len], twiddle[len]
__kernel void dft_rows(__global const cplx_t *in, __global cplx_t *out, __global const cplx_t *twiddle,
                       const int rows, const int len, const int inverse)
{
    const int k = get_global_id(0), row = get_global_id(1);
    __global const cplx_t *x = in + row * len;
    cplx_t acc = { 0.0f, 0.0f };
    for (int t = 0; t < len; t++) {
        cplx_t w = twiddle[(k * t) % len];
        if (inverse)
            w.im = -w.im;
        const cplx_t p = cmul(x[t], w);
        acc.re += p.re;
        acc.im += p.im;
    }
    const float scale = inverse ? 1.0f / len : 1.0f;
    out[row * len + k].re = acc.re * scale;
    out[row * len + k].im = acc.im * scale;
}

//DL: AoS: spec[global_size(0) * global_size(1)]
__kernel void lowpass(__global cplx_t *spec, const int len, const int cutoff)
{
    const int k = get_global_id(0), row = get_global_id(1);
    const int f = min(k, len - k);
    const float g = f <= cutoff ? 1.0f : 0.5f;
    spec[row * len + k].re *= g;
    spec[row * len + k].im *= g;
}
