/* D3Q19 BGK lattice-Boltzmann on a periodic box, one work-item per cell over a 3-D range.
 * A cell keeps its 19 populations and the macroscopic fields the solver writes for output. */
#define NPOP 19

typedef struct {
    float f[NPOP];
    float rho;
    float u[3];
} Cell;

__constant int ex[NPOP] = { 0, 1, -1, 0, 0, 0, 0, 1, -1, 1, -1, 1, -1, 1, -1, 0, 0, 0, 0 };
__constant int ey[NPOP] = { 0, 0, 0, 1, -1, 0, 0, 1, -1, -1, 1, 0, 0, 0, 0, 1, -1, 1, -1 };
__constant int ez[NPOP] = { 0, 0, 0, 0, 0, 1, -1, 0, 0, 0, 0, 1, -1, -1, 1, 1, -1, -1, 1 };
__constant float wt[NPOP] = { 1.f / 3, 1.f / 18, 1.f / 18, 1.f / 18, 1.f / 18, 1.f / 18, 1.f / 18,
                              1.f / 36, 1.f / 36, 1.f / 36, 1.f / 36, 1.f / 36, 1.f / 36,
                              1.f / 36, 1.f / 36, 1.f / 36, 1.f / 36, 1.f / 36, 1.f / 36 };

inline int wrap(int v, int n) { return v < 0 ? v + n : (v >= n ? v - n : v); }

__kernel void d3q19_step(__global const Cell *src, __global Cell *dst, const float omega, const float gx)
{
    const int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
    const int nx = get_global_size(0), ny = get_global_size(1), nz = get_global_size(2);
    const int idx = (z * ny + y) * nx + x;
    __global Cell *out = dst + idx;

    float f[NPOP];
    float rho = 0.0f, ux = 0.0f, uy = 0.0f, uz = 0.0f;
    for (int k = 0; k < NPOP; k++) {
        const int from = (wrap(z - ez[k], nz) * ny + wrap(y - ey[k], ny)) * nx + wrap(x - ex[k], nx);
        f[k] = src[from].f[k];
        rho += f[k];
        ux += ex[k] * f[k];
        uy += ey[k] * f[k];
        uz += ez[k] * f[k];
    }
    ux = ux / rho + 0.5f * gx;
    uy /= rho;
    uz /= rho;
    const float usq = 1.5f * (ux * ux + uy * uy + uz * uz);
    for (int k = 0; k < NPOP; k++) {
        const float cu = 3.0f * (ex[k] * ux + ey[k] * uy + ez[k] * uz);
        const float feq = wt[k] * rho * (1.0f + cu + 0.5f * cu * cu - usq);
        out->f[k] = f[k] + omega * (feq - f[k]);
    }
    out->rho = rho;
    out->u[0] = ux;
    out->u[1] = uy;
    out->u[2] = uz;
}
