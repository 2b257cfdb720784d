/* 8-bit RGBA image filters on a 2-D range, the image a plain array of pixel structures (as it
 * comes from an image file loader), repeated box blurs with edge clamping and a gamma curve. */
typedef struct {
    uchar r, g, b, a;
} rgba_t;

__kernel void box_blur3(__global const rgba_t *src, __global rgba_t *dst, const int width, const int height)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= width || y >= height)
        return;
    uint4 acc = (uint4)(0);
    for (int dy = -1; dy <= 1; dy++) {
        const int yy = clamp(y + dy, 0, height - 1);
        for (int dx = -1; dx <= 1; dx++) {
            const int xx = clamp(x + dx, 0, width - 1);
            const rgba_t p = src[yy * width + xx];
            acc += (uint4)(p.r, p.g, p.b, p.a);
        }
    }
    acc = (acc + 4) / 9;
    dst[y * width + x].r = (uchar)acc.x;
    dst[y * width + x].g = (uchar)acc.y;
    dst[y * width + x].b = (uchar)acc.z;
    dst[y * width + x].a = src[y * width + x].a;
}

__kernel void gamma_curve(__global rgba_t *img, const int width, const float gamma)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    const int i = y * width + x;
    img[i].r = convert_uchar_sat(255.0f * pow(img[i].r / 255.0f, gamma));
    img[i].g = convert_uchar_sat(255.0f * pow(img[i].g / 255.0f, gamma));
    img[i].b = convert_uchar_sat(255.0f * pow(img[i].b / 255.0f, gamma));
}
