/* Launches whose conversions clayout may fuse with the launch (docs/cost-model.md, "Fused
 * conversions"), and launches where it must not: an array of structures (5 floats) on the
 * device, kernels annotated in their source, several launches, then reads.
 *   dl_fused MODE [N]
 * MODE picks the sequence; every checksum must be the same with and without clayout. */
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
    "typedef struct { float x, y, z, vx, vy; } particle_t;\n"
    "//DL: AoS: p[n]\n"
    "__kernel void advance(__global particle_t *p, uint n, float dt) {\n"
    "  uint i = get_global_id(0);\n"
    "  if (i >= n) return;\n"
    "  particle_t q = p[i];\n"
    "  q.x += q.vx * dt;\n"
    "  q.y += q.vy * dt;\n"
    "  q.z = q.z * 0.5f + q.x * q.y;\n"
    "  q.vx = q.vx * 0.99f - q.y * dt;\n"
    "  q.vy = q.vy * 0.99f + q.x * dt;\n"
    "  p[i] = q;\n"
    "}\n"
    "// a is only read.\n"
    "//DL: AoS: a[n], b[n]\n"
    "__kernel void blend(__global const particle_t *a, __global particle_t *b, uint n) {\n"
    "  uint i = get_global_id(0);\n"
    "  if (i >= n) return;\n"
    "  b[i].x += a[i].y * 0.5f;\n"
    "  b[i].vy = a[i].vx - b[i].z;\n"
    "}\n"
    "//DL: AoS: a[n], b[n]\n"
    "__kernel void exchange(__global particle_t *a, __global particle_t *b, uint n) {\n"
    "  uint i = get_global_id(0);\n"
    "  if (i >= n) return;\n"
    "  float ax = a[i].x, bvx = b[i].vx;\n"
    "  b[i].x = ax + b[i].z;\n"
    "  a[i].vx = bvx * 0.5f;\n"
    "}\n";

static cl_context ctx;
static cl_device_id dev;
static cl_command_queue q;
static cl_program prog;
static cl_uint n;

static void fill(float *p, cl_uint count, float seed)
{
    for (cl_uint i = 0; i < count * 5; i++)
        p[i] = seed + (float)(i % 97) * 0.25f - (float)(i % 13);
}

static void show(const char *what, cl_mem b, size_t bytes)
{
    unsigned char *h = malloc(bytes);
    CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
    printf("%s %016llx\n", what, (unsigned long long)fnv(h, bytes));
    free(h);
}

static cl_mem buffer(float seed)
{
    size_t bytes = (size_t)n * 5 * sizeof(float);
    float *h = malloc(bytes);
    fill(h, n, seed);
    cl_int err;
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CHECK(err);
    CHECK(clEnqueueWriteBuffer(q, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
    free(h);
    return b;
}

static cl_kernel kernel(const char *name)
{
    cl_int err;
    cl_kernel k = clCreateKernel(prog, name, &err);
    CHECK(err);
    return k;
}

/* advance(p, n, dt) on `queue` over `global` work-items from `offset`, groups of `local`
 * (0: the implementation's choice). */
static void advance(cl_command_queue queue, cl_kernel k, cl_mem p, size_t offset, size_t global, size_t local,
                    cl_uint nev, const cl_event *wait, cl_event *ev)
{
    float dt = 0.01f;
    CHECK(clSetKernelArg(k, 0, sizeof p, &p));
    CHECK(clSetKernelArg(k, 1, sizeof n, &n));
    CHECK(clSetKernelArg(k, 2, sizeof dt, &dt));
    CHECK(clEnqueueNDRangeKernel(queue, k, 1, offset ? &offset : NULL, &global, local ? &local : NULL, nev, wait,
                                 ev));
}

/* A two-buffer kernel (blend, exchange) on a and b. */
static void pair(cl_command_queue queue, cl_kernel k, cl_mem a, cl_mem b, size_t local)
{
    size_t global = n;
    CHECK(clSetKernelArg(k, 0, sizeof a, &a));
    CHECK(clSetKernelArg(k, 1, sizeof b, &b));
    CHECK(clSetKernelArg(k, 2, sizeof n, &n));
    CHECK(clEnqueueNDRangeKernel(queue, k, 1, NULL, &global, local ? &local : NULL, 0, NULL, NULL));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: dl_fused MODE [N]\n");
        return 2;
    }
    const char *mode = argv[1];
    n = argc > 2 ? (cl_uint)atoi(argv[2]) : 4096;
    size_t bytes = (size_t)n * 5 * sizeof(float);
    cl_int err;
    CHECK(clGetDeviceIDs(pick_platform(), CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK(err);
    prog = clCreateProgramWithSource(ctx, 1, &SOURCE, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
    cl_kernel ka = kernel("advance"), km = kernel("blend"), kx = kernel("exchange");
    size_t whole = n;

    if (!strcmp(mode, "launches") || !strcmp(mode, "local64")) {
        /* Several launches, then a read, in groups the implementation picks or of 64 (over n
         * rounded up to whole groups): the first converts the buffer as it runs. */
        int l64 = !strcmp(mode, "local64");
        cl_mem p = buffer(1.0f);
        for (int i = 0; i < 4; i++)
            advance(q, ka, p, 0, l64 ? (n + 63) / 64 * 64 : whole, l64 ? 64 : 0, 0, NULL, NULL);
        show("p", p, bytes);
        advance(q, ka, p, 0, l64 ? (n + 63) / 64 * 64 : whole, l64 ? 64 : 0, 0, NULL, NULL);
        show("p again", p, bytes);
    } else if (!strcmp(mode, "const")) {
        /* a is only read: it still comes out in ASTA, and back. */
        cl_mem a = buffer(1.0f), b = buffer(2.0f);
        for (int i = 0; i < 3; i++)
            pair(q, km, a, b, 64);
        show("a", a, bytes);
        show("b", b, bytes);
    } else if (!strcmp(mode, "alias")) {
        /* One buffer bound to both arguments. */
        cl_mem a = buffer(1.0f);
        for (int i = 0; i < 3; i++)
            pair(q, kx, a, a, 64);
        show("a", a, bytes);
    } else if (!strcmp(mode, "short")) {
        /* The launch covers half of the structures the extent names. */
        cl_mem p = buffer(1.0f);
        for (int i = 0; i < 3; i++)
            advance(q, ka, p, 0, (n / 2 + 63) / 64 * 64, 64, 0, NULL, NULL);
        show("p", p, bytes);
    } else if (!strcmp(mode, "offset")) {
        /* Global ids from 64. */
        cl_mem p = buffer(1.0f);
        for (int i = 0; i < 3; i++)
            advance(q, ka, p, 64, whole, 64, 0, NULL, NULL);
        show("p", p, bytes);
    } else if (!strcmp(mode, "user")) {
        /* The first launch waits for a user event the program sets afterwards. */
        cl_mem p = buffer(1.0f);
        cl_event ue = clCreateUserEvent(ctx, &err), e1;
        CHECK(err);
        advance(q, ka, p, 0, whole, 64, 1, &ue, &e1);
        CHECK(clSetUserEventStatus(ue, CL_COMPLETE));
        CHECK(clWaitForEvents(1, &e1));
        for (int i = 0; i < 2; i++)
            advance(q, ka, p, 0, whole, 64, 0, NULL, NULL);
        show("p", p, bytes);
        clReleaseEvent(e1);
        clReleaseEvent(ue);
    } else if (!strcmp(mode, "twoqueues")) {
        /* Two queues read a at once, unordered (both only read it): the first converts it as it
         * runs, the second must not read it before. */
        cl_command_queue q2 = clCreateCommandQueue(ctx, dev, 0, &err);
        CHECK(err);
        cl_mem a = buffer(1.0f), b1 = buffer(2.0f), b2 = buffer(3.0f);
        cl_kernel km2 = kernel("blend");
        for (int i = 0; i < 3; i++) {
            pair(q, km, a, b1, 64);
            pair(q2, km2, a, b2, 64);
        }
        CHECK(clFinish(q));
        CHECK(clFinish(q2));
        show("a", a, bytes);
        show("b1", b1, bytes);
        show("b2", b2, bytes);
        clReleaseKernel(km2);
        clReleaseCommandQueue(q2);
    } else {
        printf("unknown mode %s\n", mode);
        return 2;
    }
    CHECK(clFinish(q));
    clReleaseKernel(ka);
    clReleaseKernel(km);
    clReleaseKernel(kx);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}
