/* A 2-D heat diffusion (Jacobi) in the style of a textbook OpenCL program: two grids of cells
 * (temperature and conductivity), ping-ponged between launches, the kernel annotated in its
 * source. The kernel writes every member of its cell in the next grid and never reads that
 * grid, which clayout proves from the source: the next grid's old contents need no conversion,
 * as long as the launch's work-items cover its cells.
 *   dl_outproof MODE [NX NY]
 * steps:  4 launches over the grid rounded up to groups of 64, then both grids read.
 * short:  one launch over fewer work-items than cells: the cells past them keep their old
 *         values in the next grid.
 * offset: one launch from global id 64: the first cells keep their old values.
 * Every line printed must be the same with and without clayout. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../include/pick_platform.h"
#include "../include/fnv.h"

#include "../include/check.h"

static const char *SOURCE =
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "typedef struct { float t; float k; } cell;\n"
    "\n"
    "//DL: AoS: grid[nx * ny], next[nx * ny]\n"
    "__kernel void heat_step(__global const cell *grid, __global cell *next, int nx, int ny, float dt)\n"
    "{\n"
    "    int gid = get_global_id(0);\n"
    "    if (gid >= nx * ny)\n"
    "        return;\n"
    "    int x = gid % nx, y = gid / nx;\n"
    "    float t = grid[gid].t, k = grid[gid].k;\n"
    "    if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {\n"
    "        /* Fixed boundary. */\n"
    "        next[gid].t = t;\n"
    "        next[gid].k = k;\n"
    "        return;\n"
    "    }\n"
    "    float lap = grid[gid - 1].t + grid[gid + 1].t + grid[gid - nx].t + grid[gid + nx].t - 4.0f * t;\n"
    "    next[gid].t = t + dt * k * lap;\n"
    "    next[gid].k = k;\n"
    "}\n";

static cl_command_queue q;
static int nx = 32, ny = 24;

static void show(const char *what, cl_mem b, size_t bytes)
{
    unsigned char *h = malloc(bytes);
    CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
    printf("%s %016llx\n", what, (unsigned long long)fnv(h, bytes));
    free(h);
}

static void step(cl_kernel k, cl_mem from, cl_mem to, size_t offset, size_t global, size_t local)
{
    float dt = 0.1f;
    CHECK(clSetKernelArg(k, 0, sizeof from, &from));
    CHECK(clSetKernelArg(k, 1, sizeof to, &to));
    CHECK(clSetKernelArg(k, 2, sizeof nx, &nx));
    CHECK(clSetKernelArg(k, 3, sizeof ny, &ny));
    CHECK(clSetKernelArg(k, 4, sizeof dt, &dt));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, offset ? &offset : NULL, &global, local ? &local : NULL, 0, NULL, NULL));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: dl_outproof MODE [NX NY]\n");
        return 2;
    }
    const char *mode = argv[1];
    if (argc > 3) {
        nx = atoi(argv[2]);
        ny = atoi(argv[3]);
    }
    size_t n = (size_t)nx * ny, bytes = n * 2 * sizeof(float);
    cl_device_id dev;
    cl_int err;
    CHECK(clGetDeviceIDs(pick_platform(), CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &SOURCE, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "heat_step", &err);
    CHECK(err);

    /* A hot spot in the middle; the second grid starts with values of its own, which a launch
     * that does not overwrite a cell must leave as they are. */
    float *h = malloc(bytes), *g = malloc(bytes);
    for (size_t i = 0; i < n; i++) {
        size_t x = i % nx, y = i / nx;
        h[2 * i] = (x > (size_t)nx / 3 && x < (size_t)nx / 2 && y > (size_t)ny / 3 && y < (size_t)ny / 2) ? 100.0f : 0.0f;
        h[2 * i + 1] = 0.1f + (float)(i % 7) * 0.01f;
        g[2 * i] = -1.0f - (float)(i % 11);
        g[2 * i + 1] = 7.0f + (float)(i % 5);
    }
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h, &err);
    CHECK(err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, g, &err);
    CHECK(err);

    if (!strcmp(mode, "steps")) {
        size_t global = (n + 63) / 64 * 64;
        for (int s = 0; s < 4; s++)
            step(k, s % 2 ? b : a, s % 2 ? a : b, 0, global, 64);
    } else if (!strcmp(mode, "short")) {
        step(k, a, b, 0, n - 37, 0);
    } else if (!strcmp(mode, "offset")) {
        step(k, a, b, 64, n - 64, 0);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    show("grid", a, bytes);
    show("next", b, bytes);
    CHECK(clFinish(q));
    free(h);
    free(g);
    return 0;
}
