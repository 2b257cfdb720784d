/* What clayout's background work costs an application on a driver (issue 17).
 *   buildload PLATFORM FILE.cl times
 *     a program built from source, its binary loaded back three times, the source built again
 *     (ms each): which is cheaper to load once the driver's own cache has seen the source.
 *   buildload PLATFORM FILE.cl contend N
 *     N back-to-back launches of a ~0.3 ms kernel and a clFinish, timed, while another thread
 *     does nothing / loads FILE.cl's binary in a loop / builds FILE.cl from source in a loop /
 *     streams a 256 MiB buffer on a queue of its own: what each costs the application's launches,
 *     and the slowest clEnqueueNDRangeKernel call (a driver lock held by a build shows there).
 * BL_OPTS: the build options of FILE.cl. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include "device.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static cl_context ctx;
static cl_device_id dev;
static char *src;
static size_t src_len;
static unsigned char *bin;
static size_t bin_len;
static volatile int stop_bg;
static const char *opts = "";

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static cl_program from_source(const char *s, size_t len) {
    cl_int err;
    cl_program p = clCreateProgramWithSource(ctx, 1, &s, &len, &err);
    if (clBuildProgram(p, 1, &dev, opts, NULL, NULL) != CL_SUCCESS) { fprintf(stderr, "build failed\n"); exit(4); }
    return p;
}

static cl_program from_binary(void) {
    cl_int err, st;
    const unsigned char *b = bin;
    cl_program p = clCreateProgramWithBinary(ctx, 1, &dev, &bin_len, &b, &st, &err);
    if (err || clBuildProgram(p, 1, &dev, opts, NULL, NULL) != CL_SUCCESS) { fprintf(stderr, "binary failed\n"); exit(5); }
    return p;
}

static void keep_binary(cl_program p) {
    clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof bin_len, &bin_len, NULL);
    bin = malloc(bin_len);
    clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL);
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) exit(6);
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    rewind(f);
    char *s = malloc(*len + 1);
    if (fread(s, 1, *len, f) != *len) exit(6);
    s[*len] = 0;
    fclose(f);
    return s;
}

static void *bg_binload(void *a) {
    (void)a;
    while (!stop_bg) clReleaseProgram(from_binary());
    return NULL;
}

static void *bg_srcbuild(void *a) {
    (void)a;
    while (!stop_bg) clReleaseProgram(from_source(src, src_len));
    return NULL;
}

static const char *work_src =
    "__kernel void work(__global float *p, uint n) { size_t i = get_global_id(0); float a = p[i];"
    " for (uint j = 0; j < n; j++) a = a * 1.0001f + 0.5f; p[i] = a; }\n"
    "__kernel void stream(__global float4 *p) { size_t i = get_global_id(0); p[i] = p[i] * 2.0f + 1.0f; }\n";

static cl_program work_prog;

static void *bg_gpu(void *a) {
    (void)a;
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    size_t n4 = (256u << 20) / 16;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n4 * 16, NULL, &err);
    cl_kernel k = clCreateKernel(work_prog, "stream", &err);
    clSetKernelArg(k, 0, sizeof m, &m);
    while (!stop_bg) {
        clEnqueueNDRangeKernel(q, k, 1, NULL, &n4, NULL, 0, NULL, NULL);
        clFinish(q);
    }
    clReleaseKernel(k);
    clReleaseMemObject(m);
    clReleaseCommandQueue(q);
    return NULL;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void contend(int n) {
    cl_int err;
    const char *o = opts;
    opts = "";
    work_prog = from_source(work_src, strlen(work_src));
    opts = o;
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    size_t items = 1 << 20;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, items * 4, NULL, &err);
    float zero = 0;
    clEnqueueFillBuffer(q, m, &zero, 4, 0, items * 4, 0, NULL, NULL);
    cl_kernel k = clCreateKernel(work_prog, "work", &err);
    cl_uint iters = 2000;
    clSetKernelArg(k, 0, sizeof m, &m);
    clSetKernelArg(k, 1, sizeof iters, &iters);
    clFinish(q);
    const char *names[] = {"none", "binload", "srcbuild", "gpu"};
    void *(*fns[])(void *) = {NULL, bg_binload, bg_srcbuild, bg_gpu};
    for (int mode = 0; mode < 4; mode++) {
        double tot[5], worst[5];
        for (int r = 0; r < 5; r++) {
            pthread_t t;
            stop_bg = 0;
            if (fns[mode]) pthread_create(&t, NULL, fns[mode], NULL);
            if (fns[mode]) { double w = now_ms(); while (now_ms() - w < 20) ; }
            double t0 = now_ms(), slow = 0;
            for (int i = 0; i < n; i++) {
                double c = now_ms();
                clEnqueueNDRangeKernel(q, k, 1, NULL, &items, NULL, 0, NULL, NULL);
                if (now_ms() - c > slow) slow = now_ms() - c;
            }
            clFinish(q);
            tot[r] = now_ms() - t0;
            worst[r] = slow;
            stop_bg = 1;
            if (fns[mode]) pthread_join(t, NULL);
        }
        qsort(tot, 5, sizeof(double), cmp);
        qsort(worst, 5, sizeof(double), cmp);
        printf("contend %-8s launches %d: total ms min %.3f median %.3f max %.3f; slowest enqueue median %.3f ms\n",
               names[mode], n, tot[0], tot[2], tot[4], worst[2]);
    }
}

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    dev = bench_device(argv[1]);
    if (!dev) return 3;
    cl_int err;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (getenv("BL_OPTS")) opts = getenv("BL_OPTS");
    src = read_file(argv[2], &src_len);
    double t = now_ms();
    cl_program p = from_source(src, src_len);
    printf("source build %.1f ms\n", now_ms() - t);
    keep_binary(p);
    clReleaseProgram(p);
    if (strcmp(argv[3], "times") == 0) {
        for (int i = 0; i < 3; i++) {
            t = now_ms();
            clReleaseProgram(from_binary());
            printf("binary load %.1f ms (%zu bytes)\n", now_ms() - t, bin_len);
        }
        t = now_ms();
        clReleaseProgram(from_source(src, src_len));
        printf("source again %.1f ms\n", now_ms() - t);
    } else {
        contend(argc > 4 ? atoi(argv[4]) : 30);
    }
    return 0;
}
