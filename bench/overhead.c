/* overhead.c: per-call cost of a few OpenCL entry points, to measure what the clayout shim adds.
 *
 * Build: cc -O2 -pthread -o overhead overhead.c -lOpenCL
 * Run:   ./overhead [scale]        (scale divides the iteration counts, default 1)
 *        LD_PRELOAD=.../libclayout.so ./overhead
 * scripts/bench-overhead.sh runs both and prints the table.
 *
 * Output: one line per measurement, "name ns_per_call", the best of REPS repetitions:
 *   clGetDeviceInfo        10^6 calls, a pure forward
 *   clGetKernelInfo        10^6 calls, a pure forward
 *   clSetKernelArg         10^6 calls, alternating a buffer argument and a scalar argument
 *   clEnqueueNDRangeKernel 10^5 launches of a trivial kernel, clFinish every DRAIN launches:
 *                          time of the enqueue calls alone (the drains are not counted)
 *   clEnqueueNDRangeKernel+drain  the same, drains included (what an application sees)
 *   clSetKernelArg/2threads 10^6 calls in each of 2 threads at once, each on its own kernel
 *                          (wall time / calls per thread): shows contention in the shim */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include "../tests/include/pick_platform.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define REPS 5
#define DRAIN 256

static const char *SRC = "__kernel void nop(__global int *p, int v) { if (v < 0) p[0] = v; }\n";

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#define CHECK(what, err)                                                                          \
    do {                                                                                          \
        cl_int e_ = (err);                                                                        \
        if (e_ != CL_SUCCESS) {                                                                   \
            fprintf(stderr, "overhead: %s failed: %d\n", what, e_);                              \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

struct setarg_job {
    cl_kernel k;
    cl_mem buf;
    long n;
    pthread_barrier_t *start;
};

static void *setarg_thread(void *p) {
    struct setarg_job *j = (struct setarg_job *)p;
    int v = 2;
    pthread_barrier_wait(j->start);
    for (long i = 0; i < j->n; i += 2) {
        clSetKernelArg(j->k, 0, sizeof j->buf, &j->buf);
        clSetKernelArg(j->k, 1, sizeof v, &v);
    }
    return NULL;
}

static void report(const char *name, double best_ns) { printf("%-30s %.1f\n", name, best_ns); }

int main(int argc, char **argv) {
    long scale = argc > 1 ? atol(argv[1]) : 1;
    if (scale < 1)
        scale = 1;
    const long n_fwd = 1000000 / scale, n_arg = 1000000 / scale, n_enq = 100000 / scale;

    cl_int err;
    cl_platform_id plat;
    cl_device_id dev;
    plat = pick_platform();
    CHECK("clGetDeviceIDs", clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK("clCreateContext", err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    CHECK("clCreateCommandQueueWithProperties", err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &err);
    CHECK("clCreateProgramWithSource", err);
    CHECK("clBuildProgram", clBuildProgram(prog, 1, &dev, NULL, NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "nop", &err);
    CHECK("clCreateKernel", err);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
    CHECK("clCreateBuffer", err);
    int v = 1;

    double best;
    volatile cl_ulong sink = 0;

    best = 1e30;
    for (int r = 0; r < REPS; r++) {
        cl_device_type t = 0;
        double t0 = now_ns();
        for (long i = 0; i < n_fwd; i++) {
            clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof t, &t, NULL);
            sink += t;
        }
        double per = (now_ns() - t0) / (double)n_fwd;
        if (per < best)
            best = per;
    }
    report("clGetDeviceInfo", best);

    best = 1e30;
    for (int r = 0; r < REPS; r++) {
        cl_uint na = 0;
        double t0 = now_ns();
        for (long i = 0; i < n_fwd; i++) {
            clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof na, &na, NULL);
            sink += na;
        }
        double per = (now_ns() - t0) / (double)n_fwd;
        if (per < best)
            best = per;
    }
    report("clGetKernelInfo", best);

    best = 1e30;
    for (int r = 0; r < REPS; r++) {
        double t0 = now_ns();
        for (long i = 0; i < n_arg; i += 2) {
            clSetKernelArg(k, 0, sizeof buf, &buf);
            clSetKernelArg(k, 1, sizeof v, &v);
        }
        double per = (now_ns() - t0) / (double)n_arg;
        if (per < best)
            best = per;
    }
    report("clSetKernelArg", best);

    CHECK("clSetKernelArg", clSetKernelArg(k, 0, sizeof buf, &buf));
    CHECK("clSetKernelArg", clSetKernelArg(k, 1, sizeof v, &v));
    size_t g = 1;
    /* Warm up: the first launch compiles the kernel for this work-group size. */
    CHECK("clEnqueueNDRangeKernel", clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    CHECK("clFinish", clFinish(q));
    double best_enq = 1e30, best_all = 1e30;
    for (int r = 0; r < 3; r++) {
        double enq = 0, t_all = now_ns();
        for (long i = 0; i < n_enq; i += DRAIN) {
            double t0 = now_ns();
            for (long j = 0; j < DRAIN && i + j < n_enq; j++)
                clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
            enq += now_ns() - t0;
            clFinish(q);
        }
        double all = (now_ns() - t_all) / (double)n_enq;
        enq /= (double)n_enq;
        if (enq < best_enq)
            best_enq = enq;
        if (all < best_all)
            best_all = all;
    }
    report("clEnqueueNDRangeKernel", best_enq);
    report("clEnqueueNDRangeKernel+drain", best_all);

    enum { NT = 2 };
    struct setarg_job jobs[NT];
    pthread_barrier_t start;
    best = 1e30;
    for (int r = 0; r < REPS; r++) {
        pthread_barrier_init(&start, NULL, NT + 1);
        pthread_t th[NT];
        for (int t = 0; t < NT; t++) {
            jobs[t].k = clCreateKernel(prog, "nop", &err);
            CHECK("clCreateKernel", err);
            jobs[t].buf = buf;
            jobs[t].n = n_arg;
            jobs[t].start = &start;
            pthread_create(&th[t], NULL, setarg_thread, &jobs[t]);
        }
        pthread_barrier_wait(&start);
        double t0 = now_ns();
        for (int t = 0; t < NT; t++)
            pthread_join(th[t], NULL);
        double per = (now_ns() - t0) / (double)n_arg;
        if (per < best)
            best = per;
        for (int t = 0; t < NT; t++)
            clReleaseKernel(jobs[t].k);
        pthread_barrier_destroy(&start);
    }
    report("clSetKernelArg/2threads", best);

    clReleaseMemObject(buf);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    if (sink == 42)
        fprintf(stderr, "\n");
    return 0;
}
