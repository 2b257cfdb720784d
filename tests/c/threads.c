/* threads.c: 8 host threads hammering one context, for the clayout shim tests.
 *
 * Build: cc -O1 -pthread -o threads threads.c -lOpenCL
 *
 * One context and one program are shared. Each thread creates its own in-order queue, its own
 * kernel instances and its own buffers, and all threads use two shared buffers: `table`
 * (read by every kernel) and `out` (each thread writes only its own slice). Every iteration
 * sets the kernel's arguments, launches it and reads the thread's slice back; every 25th
 * iteration also creates, fills, copies and releases a temporary buffer and retains/releases
 * the shared ones, so object creation and destruction happen concurrently too.
 * Results do not depend on scheduling: each thread's data depend only on its own work.
 * A watchdog (alarm) ends a hung run with exit code 4 and a message on stderr. */
#include "common.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#define NTHREADS 8
#define ITERS 300
#define N 256

static const char *SRC =
    "__kernel void advance_state(__global const uint *table, __global uint *state, __global uint *out,\n"
    "                   uint tid, uint iter, uint n) {\n"
    "    uint i = get_global_id(0);\n"
    "    uint s = state[i] * 31u + table[(i + iter) % n] + tid;\n"
    "    s ^= s >> 7;\n"
    "    state[i] = s & 0xffffffu;\n"
    "    out[tid * n + i] = state[i] ^ (tid << 24);\n"
    "}\n"
    "__kernel void mix_acc(__global uint *dst, __global const uint *src, uint k) {\n"
    "    uint i = get_global_id(0);\n"
    "    dst[i] = dst[i] * k + src[i];\n"
    "}\n";

static cl_context g_ctx;
static cl_device_id g_dev;
static cl_program g_prog;
static cl_mem g_table, g_out;
static pthread_barrier_t g_start;

struct result {
    uint64_t checksum;
    uint32_t last0;
    uint64_t mixsum;
};
static struct result g_results[NTHREADS];

/* Kernel creation goes through one helper (and one lock, so that the "calls" table and the
 * creation order stay simple); every other call runs concurrently. */
static pthread_mutex_t g_kernel_lock = PTHREAD_MUTEX_INITIALIZER;
static cl_kernel create_kernel(const char *name, cl_int *err) {
    pthread_mutex_lock(&g_kernel_lock);
    cl_kernel k = CL(clCreateKernel, g_prog, name, err);
    pthread_mutex_unlock(&g_kernel_lock);
    return k;
}

#define TCHECK(what, err)                                                                         \
    do {                                                                                          \
        cl_int e_ = (err);                                                                        \
        if (e_ != CL_SUCCESS) {                                                                   \
            printf("FAIL thread %u %s: %d %s\n", tid, what, e_, cl_err_name(e_));                 \
            fflush(stdout);                                                                       \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

static void *worker(void *arg) {
    cl_uint tid = (cl_uint)(uintptr_t)arg;
    cl_int err;
    pthread_barrier_wait(&g_start);

    cl_command_queue q = CL(clCreateCommandQueueWithProperties, g_ctx, g_dev, NULL, &err);
    TCHECK("queue", err);
    cl_kernel step = create_kernel("advance_state", &err);
    TCHECK("kernel step", err);
    cl_kernel mix = create_kernel("mix_acc", &err);
    TCHECK("kernel mix", err);
    cl_uint init[N];
    for (int i = 0; i < N; i++)
        init[i] = (cl_uint)(i * 2654435761u) ^ tid;
    cl_mem state = CL(clCreateBuffer, g_ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof init, init, &err);
    TCHECK("state buffer", err);
    cl_mem acc = CL(clCreateBuffer, g_ctx, CL_MEM_READ_WRITE, sizeof init, NULL, &err);
    TCHECK("acc buffer", err);
    cl_uint zero = 0;
    TCHECK("fill acc", CL(clEnqueueFillBuffer, q, acc, &zero, sizeof zero, 0, sizeof init, 0, NULL, NULL));

    cl_uint n = N, k = 3 + tid;
    uint64_t h = 1469598103934665603ULL;
    cl_uint slice[N];
    size_t g = N;
    for (cl_uint it = 0; it < ITERS; it++) {
        TCHECK("arg0", CL(clSetKernelArg, step, 0, sizeof(cl_mem), &g_table));
        TCHECK("arg1", CL(clSetKernelArg, step, 1, sizeof(cl_mem), &state));
        TCHECK("arg2", CL(clSetKernelArg, step, 2, sizeof(cl_mem), &g_out));
        TCHECK("arg3", CL(clSetKernelArg, step, 3, sizeof tid, &tid));
        TCHECK("arg4", CL(clSetKernelArg, step, 4, sizeof it, &it));
        TCHECK("arg5", CL(clSetKernelArg, step, 5, sizeof n, &n));
        TCHECK("step", CL(clEnqueueNDRangeKernel, q, step, 1, NULL, &g, NULL, 0, NULL, NULL));
        TCHECK("mix args", CL(clSetKernelArg, mix, 0, sizeof(cl_mem), &acc));
        TCHECK("mix args", CL(clSetKernelArg, mix, 1, sizeof(cl_mem), &state));
        TCHECK("mix args", CL(clSetKernelArg, mix, 2, sizeof k, &k));
        TCHECK("mix", CL(clEnqueueNDRangeKernel, q, mix, 1, NULL, &g, NULL, 0, NULL, NULL));
        TCHECK("read slice", CL(clEnqueueReadBuffer, q, g_out, CL_TRUE, (size_t)tid * N * sizeof(cl_uint), sizeof slice, slice, 0, NULL, NULL));
        for (int i = 0; i < N; i++) {
            h ^= slice[i];
            h *= 1099511628211ULL;
        }
        if (it % 25 == 0) {
            /* Concurrent object churn: a temporary buffer, and retains of the shared ones. */
            TCHECK("retain table", CL(clRetainMemObject, g_table));
            TCHECK("retain out", CL(clRetainMemObject, g_out));
            cl_mem tmp = CL(clCreateBuffer, g_ctx, CL_MEM_READ_WRITE, sizeof slice, NULL, &err);
            TCHECK("tmp buffer", err);
            TCHECK("copy to tmp", CL(clEnqueueCopyBuffer, q, state, tmp, 0, 0, sizeof slice, 0, NULL, NULL));
            cl_kernel extra = create_kernel("mix_acc", &err);
            TCHECK("extra kernel", err);
            TCHECK("extra arg", CL(clSetKernelArg, extra, 0, sizeof(cl_mem), &tmp));
            TCHECK("extra arg", CL(clSetKernelArg, extra, 1, sizeof(cl_mem), &g_table));
            TCHECK("extra arg", CL(clSetKernelArg, extra, 2, sizeof k, &k));
            TCHECK("extra launch", CL(clEnqueueNDRangeKernel, q, extra, 1, NULL, &g, NULL, 0, NULL, NULL));
            TCHECK("read tmp", CL(clEnqueueReadBuffer, q, tmp, CL_TRUE, 0, sizeof slice, slice, 0, NULL, NULL));
            for (int i = 0; i < N; i++) {
                h ^= slice[i];
                h *= 1099511628211ULL;
            }
            TCHECK("release extra", CL(clReleaseKernel, extra));
            TCHECK("release tmp", CL(clReleaseMemObject, tmp));
            TCHECK("release table", CL(clReleaseMemObject, g_table));
            TCHECK("release out", CL(clReleaseMemObject, g_out));
        }
    }
    TCHECK("read acc", CL(clEnqueueReadBuffer, q, acc, CL_TRUE, 0, sizeof slice, slice, 0, NULL, NULL));
    uint64_t ms = 0;
    for (int i = 0; i < N; i++)
        ms += slice[i];
    TCHECK("finish", CL(clFinish, q));
    g_results[tid].checksum = h;
    g_results[tid].mixsum = ms;
    TCHECK("read state", CL(clEnqueueReadBuffer, q, state, CL_TRUE, 0, sizeof slice, slice, 0, NULL, NULL));
    g_results[tid].last0 = slice[0];
    TCHECK("release", CL(clReleaseMemObject, state));
    TCHECK("release", CL(clReleaseMemObject, acc));
    TCHECK("release", CL(clReleaseKernel, step));
    TCHECK("release", CL(clReleaseKernel, mix));
    TCHECK("release", CL(clReleaseCommandQueue, q));
    return NULL;
}

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "threads: watchdog fired: the run is hung\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(4);
}

int main(int argc, char **argv) {
    unsigned timeout = argc > 1 ? (unsigned)atoi(argv[1]) : 60;
    signal(SIGALRM, on_alarm);
    alarm(timeout);

    cl_int err;
    cl_platform_id plat;
    cl_uint np = 0;
    CHECK("clGetPlatformIDs", CL(clGetPlatformIDs, 1, &plat, &np));
    CHECK("clGetDeviceIDs", CL(clGetDeviceIDs, plat, CL_DEVICE_TYPE_ALL, 1, &g_dev, NULL));
    g_ctx = CL(clCreateContext, NULL, 1, &g_dev, NULL, NULL, &err);
    CHECK("clCreateContext", err);
    g_prog = CL(clCreateProgramWithSource, g_ctx, 1, &SRC, NULL, &err);
    CHECK("clCreateProgramWithSource", err);
    CHECK("clBuildProgram", CL(clBuildProgram, g_prog, 1, &g_dev, "-cl-std=CL1.2", NULL, NULL));

    cl_uint table[N];
    for (int i = 0; i < N; i++)
        table[i] = (cl_uint)(i * i * 7 + 13);
    g_table = CL(clCreateBuffer, g_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof table, table, &err);
    CHECK("table", err);
    g_out = CL(clCreateBuffer, g_ctx, CL_MEM_READ_WRITE, sizeof(cl_uint) * N * NTHREADS, NULL, &err);
    CHECK("out", err);

    pthread_t th[NTHREADS];
    pthread_barrier_init(&g_start, NULL, NTHREADS);
    for (uintptr_t t = 0; t < NTHREADS; t++)
        if (pthread_create(&th[t], NULL, worker, (void *)t) != 0) {
            printf("FAIL pthread_create\n");
            return 1;
        }
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(th[t], NULL);

    for (int t = 0; t < NTHREADS; t++)
        printf("thread %d: checksum=%016llx state0=%u mixsum=%llu\n", t, (unsigned long long)g_results[t].checksum,
               g_results[t].last0, (unsigned long long)g_results[t].mixsum);

    cl_command_queue q = CL(clCreateCommandQueueWithProperties, g_ctx, g_dev, NULL, &err);
    CHECK("main queue", err);
    static cl_uint all[N * NTHREADS];
    CHECK("read out", CL(clEnqueueReadBuffer, q, g_out, CL_TRUE, 0, sizeof all, all, 0, NULL, NULL));
    printf("shared out: fnv=%016llx\n", (unsigned long long)fnv1a(all, sizeof all));
    CHECK("release", CL(clReleaseCommandQueue, q));
    CHECK("release", CL(clReleaseMemObject, g_table));
    CHECK("release", CL(clReleaseMemObject, g_out));
    CHECK("release", CL(clReleaseProgram, g_prog));
    CHECK("release", CL(clReleaseContext, g_ctx));
    print_counts();
    printf("threads: ok\n");
    return 0;
}
