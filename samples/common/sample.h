/* Helpers shared by the samples: what every small OpenCL host program ends up writing.
 * Plain OpenCL 1.2 host API, linked with -lOpenCL, so the samples run unchanged under clayout. */
#ifndef SAMPLE_H
#define SAMPLE_H
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                  \
    do {                                                                             \
        cl_int err_ = (call);                                                        \
        if (err_ != CL_SUCCESS) {                                                    \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, err_); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

typedef struct {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    char device_name[256];
} sample_cl;

/* Picks the first platform whose name contains `want` (NULL or "" for the first one). */
static void sample_open(sample_cl *s, const char *want)
{
    cl_platform_id ps[16];
    cl_uint np = 0;
    CHECK(clGetPlatformIDs(16, ps, &np));
    s->platform = NULL;
    for (cl_uint i = 0; i < np && !s->platform; i++) {
        char name[256] = "";
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (!want || !*want || strstr(name, want))
            s->platform = ps[i];
    }
    if (!s->platform) {
        fprintf(stderr, "no OpenCL platform matches \"%s\"\n", want);
        exit(1);
    }
    CHECK(clGetDeviceIDs(s->platform, CL_DEVICE_TYPE_ALL, 1, &s->device, NULL));
    clGetDeviceInfo(s->device, CL_DEVICE_NAME, sizeof s->device_name, s->device_name, NULL);
    cl_int err;
    s->context = clCreateContext(NULL, 1, &s->device, NULL, NULL, &err);
    CHECK(err);
    s->queue = clCreateCommandQueue(s->context, s->device, 0, &err);
    CHECK(err);
}

static char *sample_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(n + 1);
    if (fread(buf, 1, n, f) != (size_t)n) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    buf[n] = 0;
    fclose(f);
    return buf;
}

static double sample_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Builds the program at `path` and prints how long that took (build_ms), outside the
 * total_ms the sample prints at the end. */
static cl_program sample_build(sample_cl *s, const char *path, const char *options)
{
    char *src = sample_read_file(path);
    double t0 = sample_now_ms();
    cl_int err;
    cl_program p = clCreateProgramWithSource(s->context, 1, (const char **)&src, NULL, &err);
    CHECK(err);
    err = clBuildProgram(p, 1, &s->device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[16384] = "";
        clGetProgramBuildInfo(p, s->device, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        fprintf(stderr, "build of %s failed (%d):\n%s\n", path, err, log);
        exit(1);
    }
    printf("build_ms: %.3f\n", sample_now_ms() - t0);
    free(src);
    return p;
}

/* FNV-1a over the bytes: equal checksums mean bit-for-bit equal results. */
static uint64_t sample_fnv(const void *data, size_t n, uint64_t h)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}
#define SAMPLE_FNV_INIT 0xcbf29ce484222325ull

/* Deterministic pseudo-random numbers, the same on every platform. */
static uint32_t sample_rand(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*state >> 33);
}
static float sample_uniform(uint64_t *state, float lo, float hi)
{
    return lo + (hi - lo) * (sample_rand(state) & 0xffffff) / (float)0x1000000;
}
/* The kernel file of a variant: DIR/BASE_VARIANT.cl, DIR from --kernels or else the directory of
 * the program (the Makefile copies the .cl files beside it). */
static inline void sample_kernel_path(char *path, size_t size, const char *argv0, const char *dir,
                               const char *base, const char *variant)
{
    char d[4096];
    if (dir)
        snprintf(d, sizeof d, "%s", dir);
    else {
        snprintf(d, sizeof d, "%s", argv0);
        char *slash = strrchr(d, '/');
        if (slash) *slash = 0; else strcpy(d, ".");
    }
    snprintf(path, size, "%s/%s_%s.cl", d, base, variant);
}

static inline cl_mem sample_buffer(sample_cl *s, size_t bytes)
{
    cl_int err;
    cl_mem m = clCreateBuffer(s->context, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, &err);
    CHECK(err);
    return m;
}

static inline cl_kernel sample_kernel(cl_program p, const char *name)
{
    cl_int err;
    cl_kernel k = clCreateKernel(p, name, &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clCreateKernel(%s) failed: %d\n", name, err);
        exit(1);
    }
    return k;
}

#define ARG(k, i, v) CHECK(clSetKernelArg((k), (i), sizeof(v), &(v)))

/* 1-D launch of n work-items rounded up to groups of `local`. */
static inline void sample_launch(sample_cl *s, cl_kernel k, size_t n, size_t local)
{
    size_t global = (n + local - 1) / local * local;
    if (!global) global = local;
    CHECK(clEnqueueNDRangeKernel(s->queue, k, 1, NULL, &global, &local, 0, NULL, NULL));
}

static inline void sample_release(sample_cl *s)
{
    clReleaseCommandQueue(s->queue);
    clReleaseContext(s->context);
}
#endif
