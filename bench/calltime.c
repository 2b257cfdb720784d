/* calltime: an LD_PRELOAD library, placed before libclayout.so (or alone), that times every call
 * of the OpenCL entry points a sample's run makes (buffers, writes, arguments, launches, waits,
 * reads) and prints at exit, per entry point, the calls and their total and largest time in
 * microseconds and the page faults taken in them, to stderr: where a run's fixed cost under
 * clayout sits, call by call.
 *   gcc -O2 -shared -fPIC -o /tmp/calltime.so bench/calltime.c -ldl
 *   LD_PRELOAD="/tmp/calltime.so libclayout.so" ./sample ...
 * The last line, "calltime: init US", is the time spent in clGetPlatformIDs and clCreateContext:
 * the OpenCL platform's start-up, whose hundreds of milliseconds vary from run to run.
 * Diagnostic for docs/results.md. */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 120
#include "device.h"
#include <dlfcn.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

enum { CREATE, WRITE, SETARG, LAUNCH, FINISH, READ, RELEASE_MEM, BUILD, PLATFORMS, CONTEXT, N };
static const char *names[N] = {"clCreateBuffer",      "clEnqueueWriteBuffer", "clSetKernelArg",   "clEnqueueNDRangeKernel",
                               "clFinish",            "clEnqueueReadBuffer",  "clReleaseMemObject", "clBuildProgram",
                               "clGetPlatformIDs",    "clCreateContext"};
static double total[N], largest[N];
static long calls[N], faults[N];

/* Page faults of this thread so far (minor ones: pages of code or data first touched). */
static long minor_faults(void)
{
    struct rusage u;
    return getrusage(RUSAGE_THREAD, &u) == 0 ? u.ru_minflt : 0;
}

static void note(int i, double t0, long f0)
{
    double d = bench_now_us() - t0;
    faults[i] += minor_faults() - f0;
    total[i] += d;
    calls[i]++;
    if (d > largest[i]) largest[i] = d;
}

__attribute__((destructor)) static void report(void)
{
    long any = 0;
    for (int i = 0; i < N; i++) any += calls[i];
    if (!any) return; /* a process the program started (PoCL's linker): no OpenCL of its own */
    for (int i = 0; i < N; i++)
        if (calls[i])
            fprintf(stderr, "calltime: %-24s %4ld calls %10.1f us (largest %.1f) %ld page faults\n", names[i], calls[i],
                    total[i], largest[i], faults[i]);
    fprintf(stderr, "calltime: init %.0f\n", total[PLATFORMS] + total[CONTEXT]);
}

/* The body of a wrapper: the real entry point `name`, found once, called with `args` and timed
 * under counter `i`. */
#define TIMED(i, name, args)                                                  \
    static __typeof__(&name) real;                                            \
    if (!real) real = (__typeof__(&name))dlsym(RTLD_NEXT, #name);             \
    long faults0 = minor_faults();                                            \
    double t = bench_now_us();                                                \
    __typeof__(real args) r = real args;                                      \
    note(i, t, faults0);                                                      \
    return r;

cl_mem clCreateBuffer(cl_context c, cl_mem_flags f, size_t s, void *h, cl_int *e)
{
    TIMED(CREATE, clCreateBuffer, (c, f, s, h, e))
}

cl_int clEnqueueWriteBuffer(cl_command_queue q, cl_mem b, cl_bool blocking, size_t o, size_t s, const void *p,
                            cl_uint n, const cl_event *l, cl_event *e)
{
    TIMED(WRITE, clEnqueueWriteBuffer, (q, b, blocking, o, s, p, n, l, e))
}

cl_int clSetKernelArg(cl_kernel k, cl_uint i, size_t s, const void *v)
{
    TIMED(SETARG, clSetKernelArg, (k, i, s, v))
}

cl_int clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint d, const size_t *o, const size_t *g,
                              const size_t *lo, cl_uint n, const cl_event *l, cl_event *e)
{
    TIMED(LAUNCH, clEnqueueNDRangeKernel, (q, k, d, o, g, lo, n, l, e))
}

cl_int clFinish(cl_command_queue q)
{
    TIMED(FINISH, clFinish, (q))
}

cl_int clEnqueueReadBuffer(cl_command_queue q, cl_mem b, cl_bool blocking, size_t o, size_t s, void *p, cl_uint n,
                           const cl_event *l, cl_event *e)
{
    TIMED(READ, clEnqueueReadBuffer, (q, b, blocking, o, s, p, n, l, e))
}

cl_int clReleaseMemObject(cl_mem m)
{
    TIMED(RELEASE_MEM, clReleaseMemObject, (m))
}

cl_int clBuildProgram(cl_program p, cl_uint n, const cl_device_id *d, const char *o,
                      void (*cb)(cl_program, void *), void *u)
{
    TIMED(BUILD, clBuildProgram, (p, n, d, o, cb, u))
}

cl_int clGetPlatformIDs(cl_uint n, cl_platform_id *p, cl_uint *np)
{
    TIMED(PLATFORMS, clGetPlatformIDs, (n, p, np))
}

cl_context clCreateContext(const cl_context_properties *props, cl_uint n, const cl_device_id *d,
                           void (*cb)(const char *, const void *, size_t, void *), void *u, cl_int *e)
{
    TIMED(CONTEXT, clCreateContext, (props, n, d, cb, u, e))
}
