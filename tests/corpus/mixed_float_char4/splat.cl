/* Point-cloud splats: a position and a packed 8-bit colour in one record (float + char4), and
 * a weight record of a float and a flags byte with explicit padding. */
typedef struct {
    float x, y, z;
    uchar4 color;
} Splat;

typedef struct {
    float w;
    uchar flags;
    uchar pad[3];
} SplatWeight;

__kernel void splat_fade(__global Splat *s, __global SplatWeight *wt, const int n, const float fade)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const float4 c = convert_float4(s[i].color) * (fade * wt[i].w);
    s[i].color = convert_uchar4_sat(c);
    s[i].z += 0.01f * (wt[i].flags & 1 ? 1.0f : -1.0f);
    wt[i].w = fmin(1.0f, wt[i].w * 1.01f);
    wt[i].flags = (uchar)(wt[i].flags + 1);
}
