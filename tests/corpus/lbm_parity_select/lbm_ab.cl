/* D2Q9 lattice-Boltzmann with the A-B pattern done inside the kernel: the host passes both
 * grids and the time step, and the kernel picks which one it reads and which one it writes by
 * the step's parity (so the host never swaps arguments). Periodic box, BGK, a body force. */
typedef struct {
    float f[9];
    float rho, ux, uy;
} LbCell;

__constant int cx[9] = { 0, 1, 0, -1, 0, 1, -1, -1, 1 };
__constant int cy[9] = { 0, 0, 1, 0, -1, 1, 1, -1, -1 };
__constant float w9[9] = { 4.f / 9, 1.f / 9, 1.f / 9, 1.f / 9, 1.f / 9, 1.f / 36, 1.f / 36, 1.f / 36, 1.f / 36 };

__kernel void lbm_ab_step(__global LbCell *grid_a, __global LbCell *grid_b, const int nx, const int ny,
                          const int t, const float omega, const float force)
{
    const int x = get_global_id(0), y = get_global_id(1);
    __global LbCell *src = (t & 1) ? grid_b : grid_a;
    __global LbCell *dst = (t & 1) ? grid_a : grid_b;
    float f[9], rho = 0.0f, ux = 0.0f, uy = 0.0f;
    for (int k = 0; k < 9; k++) {
        const int xs = (x - cx[k] + nx) % nx, ys = (y - cy[k] + ny) % ny;
        f[k] = src[ys * nx + xs].f[k];
        rho += f[k];
        ux += cx[k] * f[k];
        uy += cy[k] * f[k];
    }
    ux = ux / rho + force;
    uy /= rho;
    const int c = y * nx + x;
    const float usq = 1.5f * (ux * ux + uy * uy);
    for (int k = 0; k < 9; k++) {
        const float cu = 3.0f * (cx[k] * ux + cy[k] * uy);
        dst[c].f[k] = f[k] + omega * (w9[k] * rho * (1.0f + cu + 0.5f * cu * cu - usq) - f[k]);
    }
    dst[c].rho = rho;
    dst[c].ux = ux;
    dst[c].uy = uy;
}
