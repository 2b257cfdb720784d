/* An OpenCL program that never links the loader: it dlopen()s libOpenCL.so.1 and finds every
 * entry point with dlsym(), as programs built on opencl3's default features do. LD_PRELOAD
 * cannot reach it (dlsym on the loader's handle never sees a preloaded library); a loader
 * layer can.
 *   dlopen KERNELS.cl [N]
 * Runs tests/dl's `advance` kernel ten times over N particles (AoS, 5 floats each) and prints
 * the checksum of the read-back, then one `calls NAME N` line per entry point it called. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each entry point: a pointer found with dlsym and a count of the calls made through it. */
#define ENTRY(name) \
    static __typeof__(&name) p_##name; \
    static int n_##name;
#define CALL(name) (n_##name++, p_##name)
#define FIND(name)                                         \
    do {                                                   \
        p_##name = (__typeof__(&name))dlsym(lib, #name);   \
        if (!p_##name) {                                   \
            printf("dlsym %s failed: %s\n", #name, dlerror()); \
            exit(1);                                       \
        }                                                  \
    } while (0)
#define SHOW_CALLS(name) printf("calls %s %d\n", #name, n_##name)

ENTRY(clGetPlatformIDs)
ENTRY(clGetPlatformInfo)
ENTRY(clGetDeviceIDs)
ENTRY(clCreateContext)
ENTRY(clCreateCommandQueue)
ENTRY(clCreateProgramWithSource)
ENTRY(clBuildProgram)
ENTRY(clGetProgramBuildInfo)
ENTRY(clCreateKernel)
ENTRY(clCreateBuffer)
ENTRY(clEnqueueWriteBuffer)
ENTRY(clSetKernelArg)
ENTRY(clEnqueueNDRangeKernel)
ENTRY(clEnqueueReadBuffer)
ENTRY(clFinish)
ENTRY(clReleaseMemObject)
ENTRY(clReleaseKernel)
ENTRY(clReleaseProgram)
ENTRY(clReleaseCommandQueue)
ENTRY(clReleaseContext)

#include "../include/check.h"
#include "../include/read_file.h"

typedef struct {
    float x, y, z, vx, vy;
} particle_t;

static uint64_t fnv(const void *data, size_t len)
{
    const unsigned char *b = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* The first platform whose name contains $CL_PLATFORM_NAME, else the first one. */
static cl_platform_id pick_platform(void)
{
    cl_platform_id ps[16];
    cl_uint n = 0;
    if (CALL(clGetPlatformIDs)(16, ps, &n) != CL_SUCCESS || n == 0)
        return NULL;
    const char *want = getenv("CL_PLATFORM_NAME");
    for (cl_uint i = 0; want && *want && i < n; i++) {
        char name[256] = "";
        CALL(clGetPlatformInfo)(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (strstr(name, want))
            return ps[i];
    }
    return ps[0];
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: dlopen KERNELS.cl [N]\n");
        return 2;
    }
    cl_uint n = argc > 2 ? (cl_uint)atoi(argv[2]) : 1000;
    void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("dlopen libOpenCL.so.1 failed: %s\n", dlerror());
        return 1;
    }
    FIND(clGetPlatformIDs);
    FIND(clGetPlatformInfo);
    FIND(clGetDeviceIDs);
    FIND(clCreateContext);
    FIND(clCreateCommandQueue);
    FIND(clCreateProgramWithSource);
    FIND(clBuildProgram);
    FIND(clGetProgramBuildInfo);
    FIND(clCreateKernel);
    FIND(clCreateBuffer);
    FIND(clEnqueueWriteBuffer);
    FIND(clSetKernelArg);
    FIND(clEnqueueNDRangeKernel);
    FIND(clEnqueueReadBuffer);
    FIND(clFinish);
    FIND(clReleaseMemObject);
    FIND(clReleaseKernel);
    FIND(clReleaseProgram);
    FIND(clReleaseCommandQueue);
    FIND(clReleaseContext);

    cl_platform_id plat = pick_platform();
    if (!plat) {
        printf("no platform\n");
        return 1;
    }
    cl_device_id dev;
    CHECK(CALL(clGetDeviceIDs)(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_int err;
    cl_context ctx = CALL(clCreateContext)(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = CALL(clCreateCommandQueue)(ctx, dev, 0, &err);
    CHECK(err);
    char *src = read_file(argv[1]);
    cl_program prog = CALL(clCreateProgramWithSource)(ctx, 1, (const char **)&src, NULL, &err);
    CHECK(err);
    err = CALL(clBuildProgram)(prog, 1, &dev, "", NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[8192] = "";
        CALL(clGetProgramBuildInfo)(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        printf("build failed %d\n%s\n", err, log);
        return 1;
    }
    cl_kernel k = CALL(clCreateKernel)(prog, "advance", &err);
    CHECK(err);

    size_t bytes = n * sizeof(particle_t);
    particle_t *h = malloc(bytes);
    for (cl_uint i = 0; i < n; i++) {
        h[i].x = 1.0f + i * 0.5f;
        h[i].y = 1.0f - i * 0.25f;
        h[i].z = (float)(i % 13);
        h[i].vx = 1.0f / (i + 1);
        h[i].vy = (float)(i % 5) - 2.0f;
    }
    cl_mem b = CALL(clCreateBuffer)(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CHECK(err);
    CHECK(CALL(clEnqueueWriteBuffer)(q, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
    float dt = 0.01f;
    size_t g = (n + 63) / 64 * 64;
    for (int i = 0; i < 10; i++) {
        CHECK(CALL(clSetKernelArg)(k, 0, sizeof b, &b));
        CHECK(CALL(clSetKernelArg)(k, 1, sizeof n, &n));
        CHECK(CALL(clSetKernelArg)(k, 2, sizeof dt, &dt));
        CHECK(CALL(clEnqueueNDRangeKernel)(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    }
    memset(h, 0, bytes);
    CHECK(CALL(clEnqueueReadBuffer)(q, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
    CHECK(CALL(clFinish)(q));
    printf("after 10 launches %016llx\n", (unsigned long long)fnv(h, bytes));

    CHECK(CALL(clReleaseMemObject)(b));
    CHECK(CALL(clReleaseKernel)(k));
    CHECK(CALL(clReleaseProgram)(prog));
    CHECK(CALL(clReleaseCommandQueue)(q));
    CHECK(CALL(clReleaseContext)(ctx));
    free(h);
    free(src);

    SHOW_CALLS(clGetPlatformIDs);
    SHOW_CALLS(clGetPlatformInfo);
    SHOW_CALLS(clGetDeviceIDs);
    SHOW_CALLS(clCreateContext);
    SHOW_CALLS(clCreateCommandQueue);
    SHOW_CALLS(clCreateProgramWithSource);
    SHOW_CALLS(clBuildProgram);
    SHOW_CALLS(clGetProgramBuildInfo);
    SHOW_CALLS(clCreateKernel);
    SHOW_CALLS(clCreateBuffer);
    SHOW_CALLS(clEnqueueWriteBuffer);
    SHOW_CALLS(clSetKernelArg);
    SHOW_CALLS(clEnqueueNDRangeKernel);
    SHOW_CALLS(clEnqueueReadBuffer);
    SHOW_CALLS(clFinish);
    SHOW_CALLS(clReleaseMemObject);
    SHOW_CALLS(clReleaseKernel);
    SHOW_CALLS(clReleaseProgram);
    SHOW_CALLS(clReleaseCommandQueue);
    SHOW_CALLS(clReleaseContext);
    return 0;
}
