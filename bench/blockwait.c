/* blockwait: what a blocking transfer costs when it is enqueued non-blocking and then waited for
 * (as clayout's host-access path did), against the blocking call itself, on pageable host memory.
 * Per size: the median over 31 rounds of a blocking read, a non-blocking read + clWaitForEvents,
 * and the same two for writes, each after 2 ms asleep (a short program's transfers come after
 * its launches or set-up). Without clayout: this is the driver's own difference.
 *   gcc -O2 -o blockwait bench/blockwait.c -lOpenCL && ./blockwait [PLATFORM SUBSTRING] [BYTES...]
 * Diagnostic for docs/results.md ("A short run's transfers"). */
#define CL_TARGET_OPENCL_VERSION 120
#include "device.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { R = 31, KINDS = 4 };
static const char *kinds[KINDS] = {"read blocking", "read + wait", "write blocking", "write + wait"};

/* One transfer of kind k, timed. */
static double one(cl_command_queue q, cl_mem b, size_t bytes, char *h, int k)
{
    cl_event e = NULL;
    cl_event *ev = (k & 1) ? &e : NULL;
    cl_bool blocking = (k & 1) ? CL_FALSE : CL_TRUE;
    double t = bench_now_us();
    if (k < 2)
        clEnqueueReadBuffer(q, b, blocking, 0, bytes, h, 0, NULL, ev);
    else
        clEnqueueWriteBuffer(q, b, blocking, 0, bytes, h, 0, NULL, ev);
    if (e) {
        clWaitForEvents(1, &e);
        clReleaseEvent(e);
    }
    return bench_now_us() - t;
}

int main(int argc, char **argv)
{
    const char *want = argc > 1 ? argv[1] : "";
    cl_platform_id ps[8];
    cl_uint np = 0;
    clGetPlatformIDs(8, ps, &np);
    cl_platform_id p = ps[0];
    for (cl_uint i = 0; i < np; i++) {
        char name[256];
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (*want && strstr(name, want)) p = ps[i];
    }
    cl_device_id d;
    clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, NULL);
    cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, NULL);
    cl_command_queue q = clCreateCommandQueue(c, d, 0, NULL);
    size_t sizes[8] = {2048000, 64};
    int ns = 2;
    if (argc > 2) {
        ns = 0;
        for (int i = 2; i < argc && ns < 8; i++) sizes[ns++] = strtoull(argv[i], NULL, 0);
    }
    for (int s = 0; s < ns; s++) {
        size_t bytes = sizes[s];
        cl_mem b = clCreateBuffer(c, CL_MEM_READ_WRITE, bytes, NULL, NULL);
        char *h = malloc(bytes);
        memset(h, 1, bytes);
        double t[KINDS][R];
        for (int k = 0; k < KINDS; k++) one(q, b, bytes, h, k);
        for (int r = 0; r < R; r++)
            for (int k = 0; k < KINDS; k++) {
                usleep(2000);
                t[k][r] = one(q, b, bytes, h, k);
            }
        printf("%zu bytes, us (median of %d):", bytes, R);
        for (int k = 0; k < KINDS; k++) {
            qsort(t[k], R, sizeof(double), bench_cmp_double);
            printf(" %s %.1f;", kinds[k], t[k][R / 2]);
        }
        printf("\n");
        clReleaseMemObject(b);
        free(h);
    }
    return 0;
}
