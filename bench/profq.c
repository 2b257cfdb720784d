/* profq: what profiling costs an application's queue. clayout turns profiling on behind the
 * application's back where its cost model times launches (CLAYOUT_PROFILE=auto); this measures
 * the price without clayout: the same burst of launches of a small kernel on a queue without
 * and with CL_QUEUE_PROFILING_ENABLE, alternated, each burst timed from its first enqueue to
 * clFinish, and the enqueue calls alone; each launch without an event, and with one asked for
 * and released at once (as clayout asks for one to order its conversions).
 *
 * Usage: profq PLATFORM [N] [LAUNCHES] [REPS]. Prints per burst
 * "profiling=P events=E n=N launches=L total_ms=T enqueue_us_per_launch=E". */
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include "device.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static const char *src = "__kernel void advance(__global float *a, uint n) {\n"
                         "  uint i = get_global_id(0); if (i < n) a[i] = a[i] * 1.0001f + 1.0f; }\n";

int main(int argc, char **argv)
{
    cl_device_id d = bench_device(argc > 1 ? argv[1] : "");
    if (!d) return 1;
    cl_uint n = argc > 2 ? (cl_uint)atoi(argv[2]) : 1 << 16;
    int launches = argc > 3 ? atoi(argv[3]) : 1000, reps = argc > 4 ? atoi(argv[4]) : 5;
    cl_int err;
    cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_program p = clCreateProgramWithSource(c, 1, &src, NULL, &err);
    if (clBuildProgram(p, 1, &d, "", NULL, NULL) != CL_SUCCESS) return 1;
    cl_kernel k = clCreateKernel(p, "advance", &err);
    cl_mem b = clCreateBuffer(c, CL_MEM_READ_WRITE, (size_t)n * 4, NULL, &err);
    clSetKernelArg(k, 0, sizeof b, &b);
    clSetKernelArg(k, 1, sizeof n, &n);
    size_t g = (n + 255) / 256 * 256;
    if (!k || !b) return fprintf(stderr, "profq: no kernel or buffer (%d)\n", err), 1;
    cl_command_queue qs[2] = {clCreateCommandQueue(c, d, 0, &err),
                              clCreateCommandQueue(c, d, CL_QUEUE_PROFILING_ENABLE, &err)};
    if (!qs[0] || !qs[1]) return fprintf(stderr, "profq: no queue (%d)\n", err), 1;
    for (int r = 0; r < reps; r++) {
        for (int mode = 0; mode < 4; mode++) {
            int prof = mode & 1, events = mode >> 1;
            cl_command_queue q = qs[prof];
            for (int i = 0; i < 10; i++) clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
            clFinish(q);
            double t0 = now_ms(), enq = 0;
            for (int i = 0; i < launches; i++) {
                double e0 = now_ms();
                cl_event ev = NULL;
                clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, events ? &ev : NULL);
                if (ev) clReleaseEvent(ev);
                enq += now_ms() - e0;
            }
            clFinish(q);
            printf("profiling=%d events=%d n=%u launches=%d total_ms=%.3f enqueue_us_per_launch=%.3f\n", prof, events, n, launches,
                   now_ms() - t0, enq * 1e3 / launches);
        }
    }
    return 0;
}
