/* sideq: what timing a launch costs a short run, by the ways clayout could time it on a queue
 * that does not profile. A "run" is what particles' one-launch run does after its set-up: three
 * launches of a small kernel on the application's in-order queue, clFinish, a blocking read.
 * Each round times one run, in one of these ways:
 *   plain     nothing timed (the run without clayout);
 *   markers   each launch between two markers that the host polls until they complete (how
 *             clayout times such a launch now: about 35 us per launch on the H100);
 *   side      each launch enqueued on a second queue of the same device that profiles, after a
 *             marker of the application's queue, and a barrier of the application's queue waits
 *             for it: nothing waits on the host, and the launch's event says its device time;
 *   profiled  the application's queue itself profiles and each launch asks for its event (the
 *             reference device time).
 * The ways alternate round by round, after 2 ms asleep each (a short program's launches come
 * after its set-up). Per way: the median run time, and the median device time per launch where
 * the way has one (side and profiled), so that side's times can be checked against profiled's.
 *   gcc -O2 -o sideq bench/sideq.c -lOpenCL && ./sideq [PLATFORM SUBSTRING] [N] [ROUNDS]
 * Diagnostic for docs/cost-model.md ("Timing a launch"). */
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include "device.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static const char *src =
    "typedef struct { float x, y, z, vx, vy, vz, m, q; } particle;\n"
    "__kernel void advance(__global particle *p, uint n, float dt) {\n"
    "  uint i = get_global_id(0); if (i >= n) return;\n"
    "  particle a = p[i]; a.x += a.vx * dt; a.y += a.vy * dt; a.z += a.vz * dt;\n"
    "  a.vx *= 0.999f; a.vy -= 9.8f * dt; p[i] = a; }\n";

enum { WAYS = 4, LAUNCHES = 3, MAXR = 101 };
static const char *names[WAYS] = {"plain", "markers", "side", "profiled"};

static void poll(cl_event e)
{
    cl_int s = 1;
    while (s > CL_COMPLETE)
        clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
}

static double device_us(cl_event e)
{
    cl_ulong a = 0, b = 0;
    clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof a, &a, NULL);
    clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof b, &b, NULL);
    return (b - a) / 1e3;
}

int main(int argc, char **argv)
{
    cl_device_id d = bench_device(argc > 1 ? argv[1] : "");
    if (!d) return 1;
    cl_uint n = argc > 2 ? (cl_uint)atol(argv[2]) : 64000;
    int rounds = argc > 3 ? atoi(argv[3]) : 31;
    if (rounds > MAXR) rounds = MAXR;
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, d, 0, &err);
    cl_command_queue pq = clCreateCommandQueue(ctx, d, CL_QUEUE_PROFILING_ENABLE, &err);
    cl_command_queue side = clCreateCommandQueue(ctx, d, CL_QUEUE_PROFILING_ENABLE, &err);
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    if (clBuildProgram(p, 1, &d, "", NULL, NULL) != CL_SUCCESS) return 1;
    cl_kernel k = clCreateKernel(p, "advance", &err);
    if (!q || !pq || !side || !k) {
        fprintf(stderr, "sideq: set-up failed (%d)\n", err);
        return 1;
    }
    size_t bytes = (size_t)n * 32;
    float *h = calloc(n, 32);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h, &err);
    float dt = 0.01f;
    clSetKernelArg(k, 0, sizeof b, &b);
    clSetKernelArg(k, 1, sizeof n, &n);
    clSetKernelArg(k, 2, sizeof dt, &dt);
    size_t local = 128, global = (n + local - 1) / local * local;
    static double run[WAYS][MAXR], dev[WAYS][MAXR * LAUNCHES];
    int ndev[WAYS] = {0};
    /* Warm every queue and the kernel. */
    for (int w = 0; w < 3; w++) {
        cl_command_queue qq = w == 0 ? q : w == 1 ? pq : side;
        clEnqueueNDRangeKernel(qq, k, 1, NULL, &global, &local, 0, NULL, NULL);
        clFinish(qq);
    }
    for (int r = 0; r < rounds; r++)
        for (int w = 0; w < WAYS; w++) {
            cl_command_queue qq = w == 3 ? pq : q;
            clEnqueueWriteBuffer(qq, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL);
            clFinish(qq);
            usleep(2000);
            cl_event ev[LAUNCHES] = {0};
            double t0 = bench_now_us();
            for (int l = 0; l < LAUNCHES; l++) {
                if (w == 0) {
                    clEnqueueNDRangeKernel(qq, k, 1, NULL, &global, &local, 0, NULL, NULL);
                } else if (w == 1) {
                    cl_event m0, m1;
                    clEnqueueMarkerWithWaitList(qq, 0, NULL, &m0);
                    clEnqueueNDRangeKernel(qq, k, 1, NULL, &global, &local, 0, NULL, NULL);
                    clEnqueueMarkerWithWaitList(qq, 0, NULL, &m1);
                    poll(m0);
                    poll(m1);
                    clReleaseEvent(m0);
                    clReleaseEvent(m1);
                } else if (w == 2) {
                    cl_event before;
                    clEnqueueMarkerWithWaitList(qq, 0, NULL, &before);
                    clEnqueueNDRangeKernel(side, k, 1, NULL, &global, &local, 1, &before, &ev[l]);
                    clEnqueueBarrierWithWaitList(qq, 1, &ev[l], NULL);
                    clReleaseEvent(before);
                } else {
                    clEnqueueNDRangeKernel(qq, k, 1, NULL, &global, &local, 0, NULL, &ev[l]);
                }
            }
            clFinish(qq);
            clEnqueueReadBuffer(qq, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL);
            run[w][r] = bench_now_us() - t0;
            for (int l = 0; l < LAUNCHES; l++)
                if (ev[l]) {
                    dev[w][ndev[w]++] = device_us(ev[l]);
                    clReleaseEvent(ev[l]);
                }
        }
    char name[256] = "";
    clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof name, name, NULL);
    printf("sideq: %s, n=%u (%zu bytes), %d launches per run, %d rounds\n", name, n, bytes, LAUNCHES, rounds);
    for (int w = 0; w < WAYS; w++) {
        qsort(run[w], rounds, sizeof(double), bench_cmp_double);
        printf("%-9s run_us median %8.1f  (min %8.1f, max %8.1f)", names[w], run[w][rounds / 2], run[w][0],
               run[w][rounds - 1]);
        if (ndev[w]) {
            qsort(dev[w], ndev[w], sizeof(double), bench_cmp_double);
            printf("  device_us per launch median %6.2f (min %6.2f)", dev[w][ndev[w] / 2], dev[w][0]);
        }
        printf("\n");
    }
    return 0;
}
