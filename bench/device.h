/* The first device of the first OpenCL platform whose name contains `want`, for the bench
 * programs that take a platform substring; NULL when none matches. */
#ifndef CLAYOUT_BENCH_DEVICE_H
#define CLAYOUT_BENCH_DEVICE_H
#include <CL/cl.h>
#include <string.h>
#include <time.h>

static inline cl_device_id bench_device(const char *want) {
    cl_platform_id ps[8];
    cl_uint np = 0;
    clGetPlatformIDs(8, ps, &np);
    for (cl_uint i = 0; i < np && i < 8; i++) {
        char name[256];
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        cl_device_id d = NULL;
        if (strstr(name, want) && clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 1, &d, NULL) == CL_SUCCESS) return d;
    }
    return NULL;
}

/* What loading a program costs clayout: SOURCE built with OPTIONS for DEV, every kernel of it
 * created (on NVIDIA a kernel's code is loaded then), all released. The build's status. */
static inline cl_int bench_load_program(cl_context ctx, cl_device_id dev, const char *source, const char *options) {
    cl_int e;
    cl_program p = clCreateProgramWithSource(ctx, 1, &source, NULL, &e);
    if (!p) return e;
    e = clBuildProgram(p, 1, &dev, options, NULL, NULL);
    cl_uint n = 0;
    clCreateKernelsInProgram(p, 0, NULL, &n);
    cl_kernel ks[256];
    if (n > 256) n = 256;
    if (n && clCreateKernelsInProgram(p, n, ks, NULL) == CL_SUCCESS)
        for (cl_uint k = 0; k < n; k++) clReleaseKernel(ks[k]);
    clReleaseProgram(p);
    return e;
}

/* Monotonic wall time in microseconds. */
static inline double bench_now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* qsort's comparison of doubles, for medians. */
static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
#endif
