/* Shared by the hostile programs (the .c files of tests/hostile): each one is a host program of the kind
 * found in SDK samples and benchmark suites, with several cases chosen by name:
 *     PROG CASE        runs one case
 *     PROG --list      prints "CASE<TAB>FLAGS" per case (tests/hostile.rs reads it)
 * A case prints every OpenCL return code it gets and a checksum of every byte the host reads
 * back, nothing else (no pointers, no timings), and exits 0: the exit status says only whether
 * the program itself went wrong (2: usage). tests/hostile.rs runs each case with and without
 * clayout and wants the same standard output and exit status.
 *
 * FLAGS (space separated, read by the harness): "auto" also runs the case under
 * CLAYOUT_POLICY=auto; "policy=P" runs it under P instead of always; "timeout=S" its time limit
 * in seconds; "side=none|zero|fifo" replaces the program's side file; "env=K=V" sets a variable
 * in both runs; "stats=NAME" adds a check of clayout's statistics; "ulimit_as=MIB" limits the
 * address space of both runs; "rss=MIB" fails the shimmed run if its resident memory peaks above
 * that; "cachedir=off" gives the shimmed run no on-disk cache. */
#ifndef HOSTILE_H
#define HOSTILE_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../include/pick_platform.h"
#include "../include/fnv.h"

#pragma GCC diagnostic ignored "-Wunused-function"

static cl_platform_id plat;
static cl_device_id dev;
static cl_context ctx;
static cl_command_queue q;

/* Every return code, by label. Codes print as numbers: the comparison needs no names. */
static cl_int rc(const char *what, cl_int e)
{
    printf("%s: %d\n", what, e);
    return e;
}

static void sum(const char *what, const void *data, size_t len)
{
    printf("%s: %zu bytes fnv %016llx\n", what, len, (unsigned long long)fnv(data, len));
}

/* Something the program needs and could not get, where the plain run must not fail: said
 * on stdout (so that both runs must agree on it), and the case stops. */
static void need(const char *what, cl_int e)
{
    if (e != CL_SUCCESS) {
        printf("cannot %s: %d\n", what, e);
        fflush(stdout);
        exit(0);
    }
}

/* ---- the particles most cases work on ---------------------------------------------------- */

typedef struct {
    float x, y, z, vx, vy;
} particle;

#ifndef N
#define N 1000
#endif
#define GLOBAL 1024
#define BYTES (N * sizeof(particle))

static void fill(particle *p, size_t n, float seed)
{
    for (size_t i = 0; i < n; i++) {
        p[i].x = seed + i * 0.5f;
        p[i].y = seed - i * 0.25f;
        p[i].z = (float)(i % 13);
        p[i].vx = 1.0f / (i + 1);
        p[i].vy = (float)(i % 5) - 2.0f;
    }
}

/* The application's kernels, written for its array of structures. tests/hostile/particles.dl
 * annotates `advance`, `pair` and `gather`; `words` is never annotated (it treats the buffer as
 * floats). */
static const char *PARTICLES_CL =
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "typedef struct { float x, y, z, vx, vy; } particle;\n"
    "__kernel void advance(__global particle *p, uint n, float dt)\n"
    "{\n"
    "    uint i = get_global_id(0);\n"
    "    if (i >= n)\n"
    "        return;\n"
    "    particle q = p[i];\n"
    "    q.x += q.vx * dt;\n"
    "    q.y += q.vy * dt;\n"
    "    q.z = q.z * 0.5f + q.x * q.y;\n"
    "    q.vx = q.vx * 0.99f - q.y * dt;\n"
    "    q.vy = q.vy * 0.99f + q.x * dt;\n"
    "    p[i] = q;\n"
    "}\n"
    "__kernel void pair(__global particle *a, __global particle *b, uint n)\n"
    "{\n"
    "    uint i = get_global_id(0);\n"
    "    if (i >= n)\n"
    "        return;\n"
    "    float ax = a[i].x, bz = b[i].z;\n"
    "    b[i].x += ax * 0.5f;\n"
    "    a[i].vy -= bz * 0.25f;\n"
    "}\n"
    "__kernel void gather(__global particle *own, __global const particle *shared, uint n)\n"
    "{\n"
    "    uint i = get_global_id(0);\n"
    "    if (i >= n)\n"
    "        return;\n"
    "    own[i].vx += shared[i].x * 0.25f;\n"
    "    own[i].z -= shared[(i + 1) % n].y * 0.125f;\n"
    "}\n"
    "__kernel void words(__global float *f, uint count)\n"
    "{\n"
    "    uint i = get_global_id(0);\n"
    "    if (i < count)\n"
    "        f[i] = f[i] * 0.5f + (float)(i % 7);\n"
    "}\n";

static cl_program prog;
static cl_kernel k_advance, k_pair, k_words;

/* Platform, device, context, one in-order queue. */
static void open_device(cl_command_queue_properties props)
{
    plat = pick_platform();
    if (!plat) {
        printf("no platform\n");
        exit(0);
    }
    need("get a device", clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_int err;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    need("create a context", err);
    q = clCreateCommandQueue(ctx, dev, props, &err);
    need("create a queue", err);
}

static cl_program build(const char *src, const char *options)
{
    cl_int err;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    need("create the program", err);
    err = clBuildProgram(p, 1, &dev, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[4096] = "";
        clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        printf("build failed: %d\n%s\n", err, log);
        fflush(stdout);
        exit(0);
    }
    return p;
}

static cl_kernel kernel(cl_program p, const char *name)
{
    cl_int err;
    cl_kernel k = clCreateKernel(p, name, &err);
    need(name, err);
    return k;
}

/* The usual start of a case: device, the particles program and its kernels. */
static void start(cl_command_queue_properties props)
{
    open_device(props);
    prog = build(PARTICLES_CL, "");
    k_advance = kernel(prog, "advance");
    k_pair = kernel(prog, "pair");
    k_words = kernel(prog, "words");
}

static void finish(void)
{
    clReleaseKernel(k_advance);
    clReleaseKernel(k_pair);
    clReleaseKernel(k_words);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
}

static cl_mem buffer(cl_mem_flags flags, size_t size, void *host)
{
    cl_int err;
    cl_mem b = clCreateBuffer(ctx, flags, size, host, &err);
    need("create a buffer", err);
    return b;
}

/* A buffer of N particles made from `seed`. */
static cl_mem particles(float seed)
{
    particle *h = malloc(BYTES);
    fill(h, N, seed);
    cl_mem b = buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, BYTES, h);
    free(h);
    return b;
}

/* One launch of `advance` on b (which puts b in ASTA under clayout's policy always). */
static cl_int advance_on(cl_command_queue queue, cl_mem b, cl_uint nev, const cl_event *wait, cl_event *ev)
{
    cl_uint n = N;
    float dt = 0.01f;
    size_t g = GLOBAL;
    clSetKernelArg(k_advance, 0, sizeof b, &b);
    clSetKernelArg(k_advance, 1, sizeof n, &n);
    clSetKernelArg(k_advance, 2, sizeof dt, &dt);
    return clEnqueueNDRangeKernel(queue, k_advance, 1, NULL, &g, NULL, nev, wait, ev);
}

static void advance(cl_mem b)
{
    rc("advance", advance_on(q, b, 0, NULL, NULL));
}

static cl_int pair_on(cl_command_queue queue, cl_mem a, cl_mem b)
{
    cl_uint n = N;
    size_t g = GLOBAL;
    clSetKernelArg(k_pair, 0, sizeof a, &a);
    clSetKernelArg(k_pair, 1, sizeof b, &b);
    clSetKernelArg(k_pair, 2, sizeof n, &n);
    return clEnqueueNDRangeKernel(queue, k_pair, 1, NULL, &g, NULL, 0, NULL, NULL);
}

static cl_int words_on(cl_command_queue queue, cl_mem b, cl_uint count)
{
    size_t g = (count + 63) / 64 * 64;
    clSetKernelArg(k_words, 0, sizeof b, &b);
    clSetKernelArg(k_words, 1, sizeof count, &count);
    return clEnqueueNDRangeKernel(queue, k_words, 1, NULL, &g, NULL, 0, NULL, NULL);
}

/* Reads `size` bytes at `offset` of b on `queue` (blocking) and prints the code and the
 * checksum. The host memory is filled first, so that a failed read prints a fixed checksum. */
static void show_on(cl_command_queue queue, const char *what, cl_mem b, size_t offset, size_t size)
{
    unsigned char *h = malloc(size ? size : 1);
    memset(h, 0xab, size);
    char label[128];
    snprintf(label, sizeof label, "%s read", what);
    rc(label, clEnqueueReadBuffer(queue, b, CL_TRUE, offset, size, h, 0, NULL, NULL));
    sum(what, h, size);
    free(h);
}

static void show(const char *what, cl_mem b, size_t size)
{
    show_on(q, what, b, 0, size);
}

static cl_int status_of(cl_event e)
{
    cl_int s = 1;
    cl_int r = clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
    return r == CL_SUCCESS ? s : r;
}

/* Sets the user event `u` to an error (said under `what`) once what was enqueued before it has
 * had 20 ms to end: PoCL 3.1 may still run a command whose gate fails at the moment another
 * command it waits for ends, and then aborts on an assertion or writes late (seen without
 * clayout, tests/dl/dl_chunked.c). */
static inline void fail_user_event(const char *what, cl_event u)
{
    usleep(20 * 1000);
    rc(what, clSetUserEventStatus(u, -1));
}

/* ---- cases ------------------------------------------------------------------------------ */

struct hcase {
    const char *name;
    void (*run)(void);
    const char *flags;
};

static int hostile_main(int argc, char **argv, const struct hcase *cases, size_t n)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (size_t i = 0; i < n; i++)
            printf("%s\t%s\n", cases[i].name, cases[i].flags ? cases[i].flags : "");
        return 0;
    }
    for (size_t i = 0; argc == 2 && i < n; i++)
        if (!strcmp(argv[1], cases[i].name)) {
            cases[i].run();
            printf("done\n");
            return 0;
        }
    fprintf(stderr, "usage: %s CASE | --list\n", argv[0]);
    return 2;
}

#define CASES(...)                                                                                \
    static const struct hcase cases_[] = {__VA_ARGS__};                                           \
    int main(int argc, char **argv)                                                               \
    {                                                                                             \
        return hostile_main(argc, argv, cases_, sizeof cases_ / sizeof cases_[0]);                \
    }

#endif
