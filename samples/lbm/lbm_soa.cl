// lbm_aos.cl's hand-written discrete-array peer: each grid is one buffer of 19 arrays of
// ncells floats (population k of cell i at k*ncells + i), the layout a programmer rewriting the
// host code for coalescing would choose. The arithmetic is the same, in the same order.
#pragma OPENCL FP_CONTRACT OFF

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

__kernel void lbm_stream_collide(__global const float *src, __global float *dst, __global const uint *flags,
                                 uint nx, uint ny, uint nz, float omega, float lid_u)
{
    uint i = get_global_id(0), ncells = nx * ny * nz;
    if (i >= ncells)
        return;
    float own[19], f[19];
    for (int k = 0; k < 19; k++)
        own[k] = src[k * ncells + i];
    if (flags[i] != FLUID) {
        // Solid cells keep their (unused) populations.
        for (int k = 0; k < 19; k++)
            dst[k * ncells + i] = own[k];
        return;
    }
    // Fluid cells are never on the border (the border is wall or lid), so every neighbour exists.
    for (int k = 0; k < 19; k++) {
        uint nb = i - (uint)(CX[k] + CY[k] * (int)nx + CZ[k] * (int)(nx * ny));
        uint fl = flags[nb];
        if (fl == FLUID)
            f[k] = src[k * ncells + nb];
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
        dst[k * ncells + i] = f[k] + omega * (feq - f[k]);
    }
}
