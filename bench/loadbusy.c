/* loadbusy: what a program load from the driver's cache costs a run whose launches keep the
 * device busy (issue 17: a declined run that buys its copies mid-run). One in-order queue gets
 * N launches of a kernel of about K us, enqueued as fast as the host can (the host ahead of the
 * device, as in particles' 1000-launch run), then clFinish. Each mode is one such run:
 *   none     the launches alone;
 *   beside   a second thread builds FILE (its text with OPTIONS, built once before so that the
 *            driver's cache answers) once the host has enqueued launch AT, while the launches go
 *            on: when the build returns, and whether the launches' enqueues waited for it;
 *   drain    at launch AT the host waits for the queue (clFinish) and then builds FILE itself,
 *            and goes on: what clayout's mid-run purchase does now;
 *   early    the build starts beside at launch AT; at launch 2*AT the host waits for it if it
 *            has not returned, and goes on.
 * Per mode, ROUNDS runs in turn: the run's wall time, the build's start and end from the first
 * launch, and the longest enqueue call with its index.
 *   gcc -O2 -o loadbusy bench/loadbusy.c -lOpenCL -lpthread
 *   ./loadbusy NVIDIA FILE "OPTIONS" [N AT K ROUNDS]   (defaults 3000 300 9 5) */
#define CL_TARGET_OPENCL_VERSION 120
#include "device.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cl_context ctx;
static cl_device_id dev;
static char *src;
static const char *opts;
static double t0, b_start, b_end;
static atomic_int go, done;

static void build(void) {
    if (bench_load_program(ctx, dev, src, opts) != CL_SUCCESS) fprintf(stderr, "build failed\n");
}

static void *beside(void *arg) {
    (void)arg;
    while (!atomic_load(&go)) {
    }
    b_start = bench_now_us() - t0;
    build();
    b_end = bench_now_us() - t0;
    atomic_store(&done, 1);
    return NULL;
}

static const char *spin_src =
    "__kernel void spin(__global float *x, uint iters) {\n"
    "  size_t i = get_global_id(0); float v = x[i];\n"
    "  for (uint k = 0; k < iters; k++) v = v * 0.999f + 0.001f;\n"
    "  x[i] = v;\n}\n";

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    dev = bench_device(argv[1]);
    FILE *f = fopen(argv[2], "rb");
    src = calloc(1 << 22, 1);
    if (!dev || !f || fread(src, 1, (1 << 22) - 1, f) == 0) return 1;
    opts = argv[3];
    int n = argc > 4 ? atoi(argv[4]) : 3000, at = argc > 5 ? atoi(argv[5]) : 300;
    double want_us = argc > 6 ? atof(argv[6]) : 9.0;
    int rounds = argc > 7 ? atoi(argv[7]) : 5;
    cl_int e;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
    cl_program sp = clCreateProgramWithSource(ctx, 1, &spin_src, NULL, &e);
    clBuildProgram(sp, 1, &dev, "", NULL, NULL);
    cl_kernel k = clCreateKernel(sp, "spin", &e);
    size_t items = 65536;
    cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE, items * 4, NULL, &e);
    clSetKernelArg(k, 0, sizeof x, &x);
    build(); /* the driver's cache answers every later build of FILE */
    /* Iterations for a launch of about want_us on the device. */
    cl_uint iters = 64;
    for (int tries = 0; tries < 12; tries++) {
        clSetKernelArg(k, 1, sizeof iters, &iters);
        clFinish(q);
        double t = bench_now_us();
        for (int i = 0; i < 200; i++) clEnqueueNDRangeKernel(q, k, 1, NULL, &items, NULL, 0, NULL, NULL);
        clFinish(q);
        double per = (bench_now_us() - t) / 200;
        if (per > want_us * 0.9 && per < want_us * 1.1) break;
        iters = (cl_uint)(iters * want_us / per) + 1;
    }
    printf("%s: %d launches of spin (%u iterations), the build at launch %d\n", argv[2], n, iters, at);
    const char *modes[] = {"none", "beside", "drain", "early"};
    for (int r = 0; r < rounds; r++) {
        for (int m = 0; m < 4; m++) {
            pthread_t th;
            atomic_store(&go, 0);
            atomic_store(&done, 0);
            b_start = b_end = -1;
            if (m == 1 || m == 3) pthread_create(&th, NULL, beside, NULL);
            clFinish(q);
            double longest = 0;
            int longest_at = -1;
            t0 = bench_now_us();
            for (int i = 0; i < n; i++) {
                if (i == at && (m == 1 || m == 3)) atomic_store(&go, 1);
                if (i == at && m == 2) {
                    clFinish(q);
                    b_start = bench_now_us() - t0;
                    build();
                    b_end = bench_now_us() - t0;
                }
                if (i == 2 * at && m == 3) {
                    while (!atomic_load(&done)) {
                    }
                }
                double t = bench_now_us();
                clEnqueueNDRangeKernel(q, k, 1, NULL, &items, NULL, 0, NULL, NULL);
                double took = bench_now_us() - t;
                if (took > longest) longest = took, longest_at = i;
            }
            double enq = bench_now_us() - t0;
            clFinish(q);
            double total = bench_now_us() - t0;
            if (m == 1 || m == 3) pthread_join(th, NULL);
            printf("round %d %-6s total %.2f ms, enqueued in %.2f ms, build %.2f-%.2f ms, longest enqueue %.3f ms at launch %d\n",
                   r, modes[m], total / 1e3, enq / 1e3, b_start / 1e3, b_end / 1e3, longest / 1e3, longest_at);
        }
    }
    return 0;
}
