// D3Q19 lattice-Boltzmann, BGK collision, pull streaming: one work-item per cell gathers the
// populations streaming into its cell from its 18 neighbours (bounce-back off walls and
// obstacles, moving-wall bounce-back off the lid), relaxes them towards equilibrium and writes
// them to the other grid. The grids are arrays of cell structures, as the host keeps them.
#pragma OPENCL FP_CONTRACT OFF

typedef struct {
    float f[19];
} cell_t;

#define FLUID 0u
#define WALL 1u
#define LID 2u

// Directions: rest, the 6 faces, the 12 edges; OPP is the opposite direction.
__constant int CX[19] = { 0, 1, -1, 0, 0, 0, 0, 1, -1, 1, -1, 1, -1, 1, -1, 0, 0, 0, 0 };
__constant int CY[19] = { 0, 0, 0, 1, -1, 0, 0, 1, -1, -1, 1, 0, 0, 0, 0, 1, -1, 1, -1 };
__constant int CZ[19] = { 0, 0, 0, 0, 0, 1, -1, 0, 0, 0, 0, 1, -1, -1, 1, 1, -1, -1, 1 };
__constant int OPP[19] = { 0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15, 18, 17 };
__constant float W[19] = { 1.0f / 3, 1.0f / 18, 1.0f / 18, 1.0f / 18, 1.0f / 18, 1.0f / 18, 1.0f / 18,
                           1.0f / 36, 1.0f / 36, 1.0f / 36, 1.0f / 36, 1.0f / 36, 1.0f / 36,
                           1.0f / 36, 1.0f / 36, 1.0f / 36, 1.0f / 36, 1.0f / 36, 1.0f / 36 };

__kernel void lbm_stream_collide(__global const cell_t *src, __global cell_t *dst, __global const uint *flags,
                                 uint nx, uint ny, uint nz, float omega, float lid_u)
{
    uint i = get_global_id(0);
    if (i >= nx * ny * nz)
        return;
    float own[19], f[19];
    for (int k = 0; k < 19; k++)
        own[k] = src[i].f[k];
    if (flags[i] != FLUID) {
        // Solid cells keep their (unused) populations.
        for (int k = 0; k < 19; k++)
            dst[i].f[k] = own[k];
        return;
    }
    // Fluid cells are never on the border (the border is wall or lid), so every neighbour exists.
    for (int k = 0; k < 19; k++) {
        uint nb = i - (uint)(CX[k] + CY[k] * (int)nx + CZ[k] * (int)(nx * ny));
        uint fl = flags[nb];
        if (fl == FLUID)
            f[k] = src[nb].f[k];
        else if (fl == WALL)
            f[k] = own[OPP[k]];
        else
            f[k] = own[OPP[k]] + 6.0f * W[k] * ((float)CX[k] * lid_u);
    }
    float rho = 0.0f, ux = 0.0f, uy = 0.0f, uz = 0.0f;
    for (int k = 0; k < 19; k++) {
        rho += f[k];
        ux += (float)CX[k] * f[k];
        uy += (float)CY[k] * f[k];
        uz += (float)CZ[k] * f[k];
    }
    float inv = 1.0f / rho;
    ux *= inv;
    uy *= inv;
    uz *= inv;
    float usq = 1.5f * (ux * ux + uy * uy + uz * uz);
    for (int k = 0; k < 19; k++) {
        float cu = 3.0f * ((float)CX[k] * ux + (float)CY[k] * uy + (float)CZ[k] * uz);
        float feq = W[k] * rho * (1.0f + cu + 0.5f * cu * cu - usq);
        dst[i].f[k] = f[k] + omega * (feq - f[k]);
    }
}
