/* 3-D FDTD (Yee scheme) with the six field components and the material of a cell in one
 * record; H and E updated by separate kernels, perfectly conducting outer faces. */
typedef struct {
    float ex, ey, ez;
    float hx, hy, hz;
    float eps_inv, mu_inv;
} YeeCell;

#define YI(x, y, z) (((z) * ny + (y)) * nx + (x))

__kernel void update_h(__global YeeCell *g, const float dt)
{
    const int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
    const int nx = get_global_size(0), ny = get_global_size(1), nz = get_global_size(2);
    if (x == nx - 1 || y == ny - 1 || z == nz - 1)
        return;
    const int c = YI(x, y, z), cx = YI(x + 1, y, z), cy = YI(x, y + 1, z), cz = YI(x, y, z + 1);
    const float m = dt * g[c].mu_inv;
    g[c].hx -= m * ((g[cy].ez - g[c].ez) - (g[cz].ey - g[c].ey));
    g[c].hy -= m * ((g[cz].ex - g[c].ex) - (g[cx].ez - g[c].ez));
    g[c].hz -= m * ((g[cx].ey - g[c].ey) - (g[cy].ex - g[c].ex));
}

__kernel void update_e(__global YeeCell *g, const float dt, const float src, const int src_cell)
{
    const int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
    const int nx = get_global_size(0), ny = get_global_size(1);
    if (x == 0 || y == 0 || z == 0)
        return;
    const int c = YI(x, y, z), cx = YI(x - 1, y, z), cy = YI(x, y - 1, z), cz = YI(x, y, z - 1);
    const float e = dt * g[c].eps_inv;
    g[c].ex += e * ((g[c].hz - g[cy].hz) - (g[c].hy - g[cz].hy));
    g[c].ey += e * ((g[c].hx - g[cz].hx) - (g[c].hz - g[cx].hz));
    g[c].ez += e * ((g[c].hy - g[cx].hy) - (g[c].hx - g[cy].hx));
    if (c == src_cell)
        g[c].ez += src;
}
