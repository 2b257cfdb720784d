/* Sobel edge magnitude on a float RGBA image, the work-group's tile plus a one-pixel halo
 * staged in local memory; the tile size is fixed at build time. */
#ifndef TILE_W
#define TILE_W 16
#define TILE_H 16
#endif

typedef struct {
    float r, g, b, a;
} PixelF;

inline float gray(PixelF p) { return 0.299f * p.r + 0.587f * p.g + 0.114f * p.b; }

__kernel __attribute__((reqd_work_group_size(TILE_W, TILE_H, 1)))
void sobel_tiled(__global const PixelF *in, __global PixelF *out, const int width, const int height)
{
    __local float tile[TILE_H + 2][TILE_W + 2];
    const int gx = get_global_id(0), gy = get_global_id(1);
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int x0 = get_group_id(0) * TILE_W - 1, y0 = get_group_id(1) * TILE_H - 1;
    for (int ty = ly; ty < TILE_H + 2; ty += TILE_H)
        for (int tx = lx; tx < TILE_W + 2; tx += TILE_W) {
            const int sx = clamp(x0 + tx, 0, width - 1), sy = clamp(y0 + ty, 0, height - 1);
            tile[ty][tx] = gray(in[sy * width + sx]);
        }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int cx = lx + 1, cy = ly + 1;
    const float dx = (tile[cy - 1][cx + 1] + 2.0f * tile[cy][cx + 1] + tile[cy + 1][cx + 1])
                   - (tile[cy - 1][cx - 1] + 2.0f * tile[cy][cx - 1] + tile[cy + 1][cx - 1]);
    const float dy = (tile[cy + 1][cx - 1] + 2.0f * tile[cy + 1][cx] + tile[cy + 1][cx + 1])
                   - (tile[cy - 1][cx - 1] + 2.0f * tile[cy - 1][cx] + tile[cy - 1][cx + 1]);
    const float m = sqrt(dx * dx + dy * dy);
    const int i = gy * width + gx;
    out[i].r = 0.5f * in[i].r + 0.5f * m;
    out[i].g = 0.5f * in[i].g + 0.5f * m;
    out[i].b = 0.5f * in[i].b + 0.5f * m;
    out[i].a = in[i].a;
}
