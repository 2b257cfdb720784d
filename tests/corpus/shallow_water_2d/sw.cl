/* 2-D shallow-water equations, Lax-Friedrichs scheme on a closed basin with reflecting walls.
 * The annotations sit in the source, above each kernel. */
typedef struct {
    float h, hu, hv, b; /* depth, momenta, bed height */
} SwCell;

#define IX(x, y, w) ((y) * (w) + (x))
#define G 9.81f

inline float3 flux_x(SwCell c)
{
    const float u = c.hu / c.h;
    return (float3)(c.hu, c.hu * u + 0.5f * G * c.h * c.h, c.hv * u);
}

inline float3 flux_y(SwCell c)
{
    const float v = c.hv / c.h;
    return (float3)(c.hv, c.hu * v, c.hv * v + 0.5f * G * c.h * c.h);
}

//DL: AoS: in[w * h], out[w * h]
__kernel void lax_friedrichs(__global const SwCell *in, __global SwCell *out, const int w, const int h,
                             const float dtdx)
{
    const int x = get_global_id(0), y = get_global_id(1);
    if (x == 0 || y == 0 || x >= w - 1 || y >= h - 1)
        return;
    const SwCell l = in[IX(x - 1, y, w)], r = in[IX(x + 1, y, w)];
    const SwCell d = in[IX(x, y - 1, w)], u = in[IX(x, y + 1, w)];
    const float3 avg = 0.25f * ((float3)(l.h, l.hu, l.hv) + (float3)(r.h, r.hu, r.hv) + (float3)(d.h, d.hu, d.hv) +
                                (float3)(u.h, u.hu, u.hv));
    const float3 q = avg - 0.5f * dtdx * (flux_x(r) - flux_x(l) + flux_y(u) - flux_y(d));
    const float slope_x = 0.5f * (r.b - l.b), slope_y = 0.5f * (u.b - d.b);
    out[IX(x, y, w)].h = q.x;
    out[IX(x, y, w)].hu = q.y - dtdx * G * q.x * slope_x;
    out[IX(x, y, w)].hv = q.z - dtdx * G * q.x * slope_y;
    out[IX(x, y, w)].b = in[IX(x, y, w)].b;
}

//DL: AoS: cells[w * h]
__kernel void reflect_walls(__global SwCell *cells, const int w, const int h)
{
    /* one work-item per border cell: first the bottom and top rows, then the side columns */
    const int k = get_global_id(0);
    int x, y, ix, iy;
    if (k < 2 * w) {
        x = k % w;
        y = k < w ? 0 : h - 1;
        ix = clamp(x, 1, w - 2);
        iy = y == 0 ? 1 : h - 2;
    } else if (k < 2 * w + 2 * h) {
        const int j = k - 2 * w;
        y = j % h;
        x = j < h ? 0 : w - 1;
        iy = clamp(y, 1, h - 2);
        ix = x == 0 ? 1 : w - 2;
    } else {
        return;
    }
    const SwCell inner = cells[IX(ix, iy, w)];
    cells[IX(x, y, w)].h = inner.h;
    cells[IX(x, y, w)].hu = (x == 0 || x == w - 1) ? -inner.hu : inner.hu;
    cells[IX(x, y, w)].hv = (y == 0 || y == h - 1) ? -inner.hv : inner.hv;
}
