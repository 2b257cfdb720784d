/* HDR frame pipeline: per-pixel luminance and its gradient, then a tone curve chosen at build
 * time (-DTONEMAP_REINHARD or -DTONEMAP_EXPOSURE). A pixel keeps its colour and the per-pixel
 * values the later passes read. */
typedef struct {
    float4 rgba;
    float lum;
    float weight;
    float2 grad;
} HdrPixel;

#define LUMA(c) (0.2126f * (c).x + 0.7152f * (c).y + 0.0722f * (c).z)

__kernel void luminance(__global HdrPixel *px, const int w, const int h)
{
    const int x = get_global_id(0), y = get_global_id(1);
    const int i = y * w + x;
    const int xl = max(x - 1, 0), xr = min(x + 1, w - 1);
    const int yd = max(y - 1, 0), yu = min(y + 1, h - 1);
    px[i].lum = LUMA(px[i].rgba);
    px[i].grad.x = 0.5f * (LUMA(px[y * w + xr].rgba) - LUMA(px[y * w + xl].rgba));
    px[i].grad.y = 0.5f * (LUMA(px[yu * w + x].rgba) - LUMA(px[yd * w + x].rgba));
    px[i].weight = 1.0f / (1.0f + 4.0f * length(px[i].grad));
}

__kernel void tonemap(__global HdrPixel *px, const int w, const float exposure)
{
    const int i = get_global_id(1) * w + get_global_id(0);
    const float l = px[i].lum * exposure;
#if defined(TONEMAP_REINHARD)
    const float scale = 1.0f / (1.0f + l);
#elif defined(TONEMAP_EXPOSURE)
    const float scale = (1.0f - exp(-l)) / max(l, 1e-4f);
#else
#error "pick a tone curve"
#endif
    const float s = mix(1.0f, scale, px[i].weight);
    px[i].rgba.xyz = px[i].rgba.xyz * s + 0.01f;
}
