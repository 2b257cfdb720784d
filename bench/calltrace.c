/* calltrace: an LD_PRELOAD library that logs every call of some fifty OpenCL entry points, each
 * with its thread, its start and its length, to a file at exit: what a run's calls did, in
 * order, across threads. Built twice, it tells the application's calls from clayout's: one copy
 * (SIDE=app) placed before libclayout.so sees the application's calls, one (SIDE=drv) placed
 * after it sees what reaches the driver, clayout's own calls and its threads' included.
 *   gcc -O2 -shared -fPIC -DSIDE='"app"' -o /tmp/ct-app.so bench/calltrace.c -ldl -lpthread
 *   gcc -O2 -shared -fPIC -DSIDE='"drv"' -o /tmp/ct-drv.so bench/calltrace.c -ldl -lpthread
 *   CALLTRACE_DIR=/tmp/ct LD_PRELOAD="/tmp/ct-app.so libclayout.so /tmp/ct-drv.so" ./sample ...
 * Writes CALLTRACE_DIR/SIDE-PID.txt: "tid start_us length_us name faults" per call (faults: the
 * thread's page faults inside the call, counted only where built with -DFAULTS, else 0), start times from
 * CLOCK_MONOTONIC, so that the two files of a run merge by time. Diagnostic for
 * docs/results.md. */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include "device.h"
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SIDE
#define SIDE "app"
#endif

enum { MAX = 1 << 18 };
static struct {
    double t0, d;
    const char *name;
    int tid;
    long faults;
} rec[MAX];
static atomic_int used;

static int tid(void)
{
    static __thread int t;
    if (!t) t = (int)syscall(SYS_gettid);
    return t;
}

/* The calling thread's minor page faults so far, where built with -DFAULTS (a getrusage call
 * on each side of every call, about a microsecond: for counting faults, not for timing). */
static long faults(void)
{
#ifdef FAULTS
    struct rusage u;
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_minflt + u.ru_majflt;
#else
    return 0;
#endif
}

static void note(const char *name, double t0, long f0)
{
    double d = bench_now_us() - t0;
    long f = faults() - f0;
    int i = atomic_fetch_add(&used, 1);
    if (i < MAX) rec[i].t0 = t0, rec[i].d = d, rec[i].name = name, rec[i].tid = tid(), rec[i].faults = f;
}

__attribute__((destructor)) static void report(void)
{
    int n = atomic_load(&used);
    const char *dir = getenv("CALLTRACE_DIR");
    if (!n || !dir) return;
    char path[512];
    snprintf(path, sizeof path, "%s/%s-%d.txt", dir, SIDE, (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) return;
    for (int i = 0; i < n && i < MAX; i++) fprintf(f, "%d %.1f %.1f %s %ld\n", rec[i].tid, rec[i].t0, rec[i].d, rec[i].name, rec[i].faults);
    fclose(f);
}

/* A wrapper: RET NAME(PARAMS) calls the next NAME with ARGS and notes the call. */
#define W(ret, name, params, args)                                                  \
    ret name params                                                                 \
    {                                                                               \
        static __typeof__(&name) ct_real_;                                            \
        if (!ct_real_) ct_real_ = (__typeof__(&name))dlsym(RTLD_NEXT, #name);               \
        long ct_f0_ = faults();                                                        \
        double ct_t0_ = bench_now_us();                                                \
        ret ct_r_ = ct_real_ args;                                                        \
        note(#name, ct_t0_, ct_f0_);                                                   \
        return ct_r_;                                                                 \
    }

typedef void(CL_CALLBACK *build_cb)(cl_program, void *);
typedef void(CL_CALLBACK *event_cb)(cl_event, cl_int, void *);
typedef void(CL_CALLBACK *ctx_cb)(const char *, const void *, size_t, void *);

W(cl_int, clGetPlatformIDs, (cl_uint n, cl_platform_id *p, cl_uint *np), (n, p, np))
W(cl_int, clGetDeviceIDs, (cl_platform_id p, cl_device_type t, cl_uint n, cl_device_id *d, cl_uint *nd),
  (p, t, n, d, nd))
W(cl_int, clGetDeviceInfo, (cl_device_id d, cl_device_info w, size_t s, void *v, size_t *r), (d, w, s, v, r))
W(cl_int, clGetPlatformInfo, (cl_platform_id p, cl_platform_info w, size_t s, void *v, size_t *r), (p, w, s, v, r))
W(cl_context, clCreateContext,
  (const cl_context_properties *pr, cl_uint n, const cl_device_id *d, ctx_cb cb, void *u, cl_int *e),
  (pr, n, d, cb, u, e))
W(cl_int, clGetContextInfo, (cl_context c, cl_context_info w, size_t s, void *v, size_t *r), (c, w, s, v, r))
W(cl_command_queue, clCreateCommandQueue, (cl_context c, cl_device_id d, cl_command_queue_properties p, cl_int *e),
  (c, d, p, e))
W(cl_command_queue, clCreateCommandQueueWithProperties,
  (cl_context c, cl_device_id d, const cl_queue_properties *p, cl_int *e), (c, d, p, e))
W(cl_int, clGetCommandQueueInfo, (cl_command_queue q, cl_command_queue_info w, size_t s, void *v, size_t *r),
  (q, w, s, v, r))
W(cl_mem, clCreateBuffer, (cl_context c, cl_mem_flags f, size_t s, void *h, cl_int *e), (c, f, s, h, e))
W(cl_int, clRetainMemObject, (cl_mem m), (m))
W(cl_int, clReleaseMemObject, (cl_mem m), (m))
W(cl_int, clGetMemObjectInfo, (cl_mem m, cl_mem_info w, size_t s, void *v, size_t *r), (m, w, s, v, r))
W(cl_program, clCreateProgramWithSource,
  (cl_context c, cl_uint n, const char **s, const size_t *l, cl_int *e), (c, n, s, l, e))
W(cl_program, clCreateProgramWithBinary,
  (cl_context c, cl_uint n, const cl_device_id *d, const size_t *l, const unsigned char **b, cl_int *st, cl_int *e),
  (c, n, d, l, b, st, e))
W(cl_int, clBuildProgram, (cl_program p, cl_uint n, const cl_device_id *d, const char *o, build_cb cb, void *u),
  (p, n, d, o, cb, u))
W(cl_int, clGetProgramInfo, (cl_program p, cl_program_info w, size_t s, void *v, size_t *r), (p, w, s, v, r))
W(cl_int, clGetProgramBuildInfo,
  (cl_program p, cl_device_id d, cl_program_build_info w, size_t s, void *v, size_t *r), (p, d, w, s, v, r))
W(cl_int, clRetainProgram, (cl_program p), (p))
W(cl_int, clReleaseProgram, (cl_program p), (p))
W(cl_kernel, clCreateKernel, (cl_program p, const char *n, cl_int *e), (p, n, e))
W(cl_int, clCreateKernelsInProgram, (cl_program p, cl_uint n, cl_kernel *k, cl_uint *nr), (p, n, k, nr))
W(cl_int, clRetainKernel, (cl_kernel k), (k))
W(cl_int, clReleaseKernel, (cl_kernel k), (k))
W(cl_int, clSetKernelArg, (cl_kernel k, cl_uint i, size_t s, const void *v), (k, i, s, v))
W(cl_int, clGetKernelInfo, (cl_kernel k, cl_kernel_info w, size_t s, void *v, size_t *r), (k, w, s, v, r))
W(cl_int, clGetKernelArgInfo, (cl_kernel k, cl_uint i, cl_kernel_arg_info w, size_t s, void *v, size_t *r),
  (k, i, w, s, v, r))
W(cl_int, clGetKernelWorkGroupInfo,
  (cl_kernel k, cl_device_id d, cl_kernel_work_group_info w, size_t s, void *v, size_t *r), (k, d, w, s, v, r))
W(cl_int, clWaitForEvents, (cl_uint n, const cl_event *l), (n, l))
W(cl_int, clGetEventInfo, (cl_event e, cl_event_info w, size_t s, void *v, size_t *r), (e, w, s, v, r))
W(cl_int, clGetEventProfilingInfo, (cl_event e, cl_profiling_info w, size_t s, void *v, size_t *r),
  (e, w, s, v, r))
W(cl_int, clRetainEvent, (cl_event e), (e))
W(cl_int, clReleaseEvent, (cl_event e), (e))
W(cl_int, clSetEventCallback, (cl_event e, cl_int t, event_cb cb, void *u), (e, t, cb, u))
W(cl_event, clCreateUserEvent, (cl_context c, cl_int *e), (c, e))
W(cl_int, clSetUserEventStatus, (cl_event e, cl_int s), (e, s))
W(cl_int, clFlush, (cl_command_queue q), (q))
W(cl_int, clFinish, (cl_command_queue q), (q))
W(cl_int, clEnqueueReadBuffer,
  (cl_command_queue q, cl_mem b, cl_bool bl, size_t o, size_t s, void *p, cl_uint n, const cl_event *l,
   cl_event *e),
  (q, b, bl, o, s, p, n, l, e))
W(cl_int, clEnqueueWriteBuffer,
  (cl_command_queue q, cl_mem b, cl_bool bl, size_t o, size_t s, const void *p, cl_uint n, const cl_event *l,
   cl_event *e),
  (q, b, bl, o, s, p, n, l, e))
W(cl_int, clEnqueueCopyBuffer,
  (cl_command_queue q, cl_mem a, cl_mem b, size_t oa, size_t ob, size_t s, cl_uint n, const cl_event *l,
   cl_event *e),
  (q, a, b, oa, ob, s, n, l, e))
W(void *, clEnqueueMapBuffer,
  (cl_command_queue q, cl_mem b, cl_bool bl, cl_map_flags f, size_t o, size_t s, cl_uint n, const cl_event *l,
   cl_event *e, cl_int *er),
  (q, b, bl, f, o, s, n, l, e, er))
W(cl_int, clEnqueueUnmapMemObject, (cl_command_queue q, cl_mem m, void *p, cl_uint n, const cl_event *l, cl_event *e),
  (q, m, p, n, l, e))
W(cl_int, clEnqueueNDRangeKernel,
  (cl_command_queue q, cl_kernel k, cl_uint d, const size_t *o, const size_t *g, const size_t *lo, cl_uint n,
   const cl_event *l, cl_event *e),
  (q, k, d, o, g, lo, n, l, e))
W(cl_int, clEnqueueMarkerWithWaitList, (cl_command_queue q, cl_uint n, const cl_event *l, cl_event *e), (q, n, l, e))
W(cl_int, clEnqueueBarrierWithWaitList, (cl_command_queue q, cl_uint n, const cl_event *l, cl_event *e),
  (q, n, l, e))
W(cl_int, clEnqueueMarker, (cl_command_queue q, cl_event *e), (q, e))
W(cl_int, clReleaseCommandQueue, (cl_command_queue q), (q))
W(cl_int, clReleaseContext, (cl_context c), (c))
