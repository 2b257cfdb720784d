/* D3Q19 lattice-Boltzmann: a lid-driven cavity with obstacles, the way a legacy OpenCL code
 * keeps it: two grids of cell structures (19 floats each), source and destination swapped every
 * time step with clSetKernelArg, the result read back at the end.
 *   lbm [-x NX] [-y NY] [-z NZ] [-i STEPS] [--platform NAME] [--soa | --asta] [--kernels DIR]
 * The border of the box is wall, except the top layer (z = NZ-1), a lid moving along x; a few
 * spherical obstacles (placed by a seeded PRNG) sit inside; the fluid starts at rest with a
 * slightly perturbed density.
 * --soa runs the hand-written discrete-array peer (each grid one buffer of 19 arrays); --asta
 * runs the kernel written by hand for ASTA addressing (lbm_asta.cl), which works only under
 * clayout: clayout converts both grids to ASTA before the first step and back for the read.
 * Prints a checksum of the final grid in AoS order (equal checksums = identical bits), the fluid's
 * mass and momentum, the kernel time (the time-step loop, between clFinish calls) and the total
 * time (writes, loop and reads). */
#include "../common/sample.h"
#include <math.h>

#define NQ 19
typedef struct {
    float f[NQ];
} cell_t;

enum { FLUID = 0, WALL = 1, LID = 2 };

static const int CX[NQ] = { 0, 1, -1, 0, 0, 0, 0, 1, -1, 1, -1, 1, -1, 1, -1, 0, 0, 0, 0 };
static const float W[NQ] = { 1.0f / 3, 1.0f / 18, 1.0f / 18, 1.0f / 18, 1.0f / 18, 1.0f / 18, 1.0f / 18,
                             1.0f / 36, 1.0f / 36, 1.0f / 36, 1.0f / 36, 1.0f / 36, 1.0f / 36,
                             1.0f / 36, 1.0f / 36, 1.0f / 36, 1.0f / 36, 1.0f / 36, 1.0f / 36 };

int main(int argc, char **argv)
{
    unsigned nx = 64, ny = 64, nz = 32;
    int iters = 10, soa = 0, asta = 0;
    const char *platform = getenv("SAMPLE_PLATFORM"), *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-x") && i + 1 < argc) nx = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-y") && i + 1 < argc) ny = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-z") && i + 1 < argc) nz = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-i") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--platform") && i + 1 < argc) platform = argv[++i];
        else if (!strcmp(argv[i], "--kernels") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--soa")) soa = 1;
        else if (!strcmp(argv[i], "--asta")) asta = 1;
        else { fprintf(stderr, "usage: %s [-x NX] [-y NY] [-z NZ] [-i STEPS] [--platform NAME] [--soa | --asta] [--kernels DIR]\n", argv[0]); return 2; }
    }
    if (soa && asta) { fprintf(stderr, "--soa and --asta exclude each other\n"); return 2; }
    if (nx < 3 || ny < 3 || nz < 3) { fprintf(stderr, "the grid needs at least 3 cells in every direction\n"); return 2; }
    const char *variant = soa ? "soa" : asta ? "asta" : "aos";
    char path[4096];
    sample_kernel_path(path, sizeof path, argv[0], dir, "lbm", variant);

    size_t n = (size_t)nx * ny * nz;
    cell_t *grid = malloc(n * sizeof *grid);
    cl_uint *flags = malloc(n * sizeof *flags);
    if (!grid || !flags) { fprintf(stderr, "out of host memory\n"); return 1; }

    /* Geometry: walls around, the lid on top, obstacles from the PRNG. */
    uint64_t seed = 7;
    int nobst = 3 + (int)(n >> 16);
    if (nobst > 24) nobst = 24;
    float oc[24][4];
    for (int o = 0; o < nobst; o++) {
        oc[o][0] = sample_uniform(&seed, 0.2f, 0.8f) * nx;
        oc[o][1] = sample_uniform(&seed, 0.2f, 0.8f) * ny;
        oc[o][2] = sample_uniform(&seed, 0.15f, 0.6f) * nz;
        float rmax = (nx < ny ? nx : ny) < nz ? (nx < ny ? nx : ny) : nz;
        oc[o][3] = sample_uniform(&seed, 0.05f, 0.15f) * rmax;
    }
    for (unsigned z = 0; z < nz; z++)
        for (unsigned y = 0; y < ny; y++)
            for (unsigned x = 0; x < nx; x++) {
                size_t i = ((size_t)z * ny + y) * nx + x;
                cl_uint fl = FLUID;
                if (z == nz - 1) fl = LID;
                else if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1) fl = WALL;
                else
                    for (int o = 0; o < nobst; o++) {
                        float dx = x + 0.5f - oc[o][0], dy = y + 0.5f - oc[o][1], dz = z + 0.5f - oc[o][2];
                        if (dx * dx + dy * dy + dz * dz < oc[o][3] * oc[o][3]) fl = WALL;
                    }
                flags[i] = fl;
                float rho = fl == FLUID ? sample_uniform(&seed, 0.99f, 1.01f) : 1.0f;
                for (int k = 0; k < NQ; k++) grid[i].f[k] = W[k] * rho;
            }

    sample_cl s;
    sample_open(&s, platform);
    cl_program prog = sample_build(&s, path, "");
    cl_kernel k = sample_kernel(prog, "lbm_stream_collide");

    /* The SoA peer keeps its populations apart on the host too: split them before the clock. */
    float *host = (float *)grid;
    if (soa) {
        host = malloc(n * sizeof *grid);
        for (int q = 0; q < NQ; q++)
            for (size_t i = 0; i < n; i++) host[q * n + i] = grid[i].f[q];
    }
    size_t bytes = n * sizeof *grid;
    float omega = 1.0f / 0.6f, lid_u = 0.05f;
    cl_uint cnx = nx, cny = ny, cnz = nz;

    double t0 = sample_now_ms();
    cl_mem g[2] = { sample_buffer(&s, bytes), sample_buffer(&s, bytes) };
    cl_mem fl = sample_buffer(&s, n * sizeof *flags);
    CHECK(clEnqueueWriteBuffer(s.queue, g[0], CL_TRUE, 0, bytes, host, 0, NULL, NULL));
    CHECK(clEnqueueWriteBuffer(s.queue, g[1], CL_TRUE, 0, bytes, host, 0, NULL, NULL));
    CHECK(clEnqueueWriteBuffer(s.queue, fl, CL_TRUE, 0, n * sizeof *flags, flags, 0, NULL, NULL));
    ARG(k, 2, fl);
    ARG(k, 3, cnx);
    ARG(k, 4, cny);
    ARG(k, 5, cnz);
    ARG(k, 6, omega);
    ARG(k, 7, lid_u);
    CHECK(clFinish(s.queue));
    double tk = sample_now_ms();
    for (int it = 0; it < iters; it++) {
        ARG(k, 0, g[it & 1]);
        ARG(k, 1, g[(it + 1) & 1]);
        sample_launch(&s, k, n, 128);
    }
    CHECK(clFinish(s.queue));
    double t1 = sample_now_ms();
    cl_mem last = g[iters & 1];
    CHECK(clEnqueueReadBuffer(s.queue, last, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
    double t2 = sample_now_ms();
    if (soa) {
        for (int q = 0; q < NQ; q++)
            for (size_t i = 0; i < n; i++) grid[i].f[q] = host[q * n + i];
        free(host);
    }

    uint64_t h = sample_fnv(grid, bytes, SAMPLE_FNV_INIT);
    double mass = 0, mx = 0;
    size_t fluid = 0;
    for (size_t i = 0; i < n; i++) {
        if (flags[i] != FLUID) continue;
        fluid++;
        for (int q = 0; q < NQ; q++) {
            mass += grid[i].f[q];
            mx += CX[q] * (double)grid[i].f[q];
        }
    }
    printf("lbm %s: %ux%ux%u cells (%zu fluid, %d obstacles), %d steps on %s\n", variant, nx, ny, nz, fluid, nobst, iters, s.device_name);
    printf("checksum: %016llx (mass %.6f, x momentum %.6e)\n", (unsigned long long)h, mass, mx);
    printf("kernel_ms: %.3f\n", t1 - tk);
    printf("total_ms: %.3f\n", t2 - t0);

    clReleaseMemObject(g[0]);
    clReleaseMemObject(g[1]);
    clReleaseMemObject(fl);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    sample_release(&s);
    free(grid);
    free(flags);
    return 0;
}
