// lbm_aos.cl written by hand for ASTA addressing, as the thesis's transformed kernels are: the
// same arithmetic, population k of cell i read and written at its ASTA place. It runs only under
// clayout, which converts both grids from the host's AoS to ASTA before the first launch (the
// annotation says so) and defines CLAYOUT_TILE, the tile T, when it builds the program.
#pragma OPENCL FP_CONTRACT OFF
#ifndef CLAYOUT_TILE
#error "lbm_asta.cl needs CLAYOUT_TILE: run it under clayout (ld_preload/clayout-run)"
#endif

typedef struct {
    float f[19];
} cell_t;

// Word s of structure i of m structures of S words, tile T: full tiles of T structures, each
// S rows of T words, then the last m % T structures as a mini SoA.
#define ASTA(i, s, S, T, m) \
    ((i) < (m) - (m) % (T) ? ((i) / (T) * (S) + (s)) * (T) + (i) % (T) \
                           : ((m) - (m) % (T)) * (S) + (s) * ((m) % (T)) + (i) - ((m) - (m) % (T)))
#define SRC(c, k) ws[ASTA(c, k, 19, CLAYOUT_TILE, ncells)]
#define DST(c, k) wd[ASTA(c, k, 19, CLAYOUT_TILE, ncells)]

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

//DL: AoS: src[nx * ny * nz], dst[nx * ny * nz] -> ASTA
__kernel void lbm_stream_collide(__global const cell_t *src, __global cell_t *dst, __global const uint *flags,
                                 uint nx, uint ny, uint nz, float omega, float lid_u)
{
    __global const float *ws = (__global const float *)src;
    __global float *wd = (__global float *)dst;
    uint i = get_global_id(0), ncells = nx * ny * nz;
    if (i >= ncells)
        return;
    float own[19], f[19];
    for (int k = 0; k < 19; k++)
        own[k] = SRC(i, k);
    if (flags[i] != FLUID) {
        // Solid cells keep their (unused) populations.
        for (int k = 0; k < 19; k++)
            DST(i, k) = own[k];
        return;
    }
    // Fluid cells are never on the border (the border is wall or lid), so every neighbour exists.
    for (int k = 0; k < 19; k++) {
        uint nb = i - (uint)(CX[k] + CY[k] * (int)nx + CZ[k] * (int)(nx * ny));
        uint fl = flags[nb];
        if (fl == FLUID)
            f[k] = SRC(nb, k);
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
        DST(i, k) = f[k] + omega * (feq - f[k]);
    }
}
