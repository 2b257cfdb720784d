/* Several host threads, each with its own queue and buffer, all reading one shared buffer
 * through annotated kernels and reading their results back, many times over.
 *   dl_threads KERNELS.cl [THREADS] [ROUNDS] [gather|exit|repeat|build|late|churn|callbacks]
 * Run plainly with the AoS kernels and under clayout with the ASTA ones: identical output.
 * With `gather`, each round also runs the kernel `gather` (own, shared, n) first: under the
 * transparent mode a rewritten kernel, so the shared buffer keeps moving between ASTA (for
 * `gather`) and the host layout (for `accumulate`, which runs as written) while the other
 * threads use it. With `exit`, the same, and the main thread calls exit() while the workers are
 * still enqueueing. With `repeat`, as `gather`, but every kernel's arguments are set once, before
 * the first round: under clayout each launch may repeat its kernel object's last one
 * (`transparent::repeat`) while the other threads' launches use the shared buffer. With `build`,
 * as `gather`, but each thread builds a program of its own from the kernels' source, all at
 * once: under clayout one build's reading may run on clayout's helper thread while the others
 * get threads of their own (`runtime::helper`). With `late`, as `repeat`, and once every
 * worker is halfway through its rounds the main thread builds a program of one kernel written
 * for a device layout (never launched) while they go on: under clayout, where the run was left
 * untracked (its copies declined), that program's reading starts the tracking while the
 * workers' launches run through their express lanes. With `churn`, as `repeat` without `accumulate`
 * (which runs as written, on host-layout buffers), and the main thread creates kernel objects of the program, one every 200 us, until every worker is done,
 * then releases them: under clayout kernels' records are made while the workers' launches
 * repeat and open their lanes. With `callbacks`, as `gather`, and each round's `advance` asks
 * its event, whose completion callback launches `gather` from the shared buffer into a buffer
 * of the thread's that only these callbacks touch, on the thread's queue (on the driver's
 * thread, while the worker goes on enqueueing), and every tenth round the worker also reads the
 * shared buffer: under clayout, launches and conversions made from callbacks while the
 * application's threads block in reads of the buffers those launches use. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../include/pick_platform.h"
#include "../include/fnv.h"
#include "../include/read_file.h"
#include <unistd.h>

#define CHECK(x)                                                                \
    do {                                                                        \
        cl_int e_ = (x);                                                        \
        if (e_ != CL_SUCCESS) {                                                 \
            printf("%s:%d: %s failed: %d\n", __FILE__, __LINE__, #x, e_);       \
            fflush(stdout);                                                     \
            _exit(1);                                                           \
        }                                                                       \
    } while (0)

enum { N = 777, WORDS = 5 };
static cl_context ctx;
static cl_device_id dev;
static cl_program g_prog;
static cl_mem shared;
static int rounds;
static int with_gather;
static int set_once;
static int own_build;
static const char *source;
static pthread_barrier_t start_line;
static pthread_barrier_t midway;
static int late;
static int churn;
static int with_callbacks;

/* `callbacks`' state of a worker: its queue, the kernel object and buffer its callbacks launch
 * (under `lock`: two callbacks may run at once), and how many have run. */
struct side {
    cl_command_queue q;
    cl_kernel k;
    cl_mem extra;
    pthread_mutex_t lock;
    int ran, failed;
};

static void CL_CALLBACK side_step(cl_event e, cl_int status, void *data)
{
    (void)e;
    struct side *s = data;
    pthread_mutex_lock(&s->lock);
    cl_uint n = N;
    size_t g = (N + 63) / 64 * 64;
    cl_int r = status;
    if (status == CL_COMPLETE) {
        clSetKernelArg(s->k, 0, sizeof s->extra, &s->extra);
        clSetKernelArg(s->k, 1, sizeof shared, &shared);
        clSetKernelArg(s->k, 2, sizeof n, &n);
        r = clEnqueueNDRangeKernel(s->q, s->k, 1, NULL, &g, NULL, 0, NULL, NULL);
        clFlush(s->q);
    }
    s->failed += r != CL_SUCCESS;
    __atomic_add_fetch(&s->ran, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&s->lock);
}
static int finished;

/* `late`'s program: annotated in its source for ASTA, so that clayout reads it at its build. */
static const char *late_source = "typedef struct { float a, b; } pair_t;\n"
                                 "//DL: AoS: p[n] -> ASTA\n"
                                 "__kernel void nudge(__global pair_t *p, uint n)\n"
                                 "{\n"
                                 "    uint i = get_global_id(0);\n"
                                 "    if (i < n)\n"
                                 "        p[i].a += 1.0f;\n"
                                 "}\n";
static uint64_t results[64];

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK(err);
    cl_program prog = g_prog;
    if (own_build) {
        prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
        CHECK(err);
        pthread_barrier_wait(&start_line);
        CHECK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
    }
    cl_kernel acc = clCreateKernel(prog, "accumulate", &err);
    CHECK(err);
    cl_kernel adv = clCreateKernel(prog, "advance", &err);
    CHECK(err);
    cl_kernel gat = with_gather ? clCreateKernel(prog, "gather", &err) : NULL;
    CHECK(err);
    float *h = malloc(N * WORDS * sizeof(float));
    for (int i = 0; i < N * WORDS; i++)
        h[i] = (float)((i * 7 + id * 13) % 101) * 0.125f;
    cl_mem own = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, N * WORDS * sizeof(float), h, &err);
    CHECK(err);
    cl_uint n = N;
    float dt = 0.01f;
    size_t g = (N + 63) / 64 * 64;
    uint64_t hash = 0;
    struct side side = {q, NULL, NULL, PTHREAD_MUTEX_INITIALIZER, 0, 0};
    if (with_callbacks) {
        side.k = clCreateKernel(prog, "gather", &err);
        CHECK(err);
        side.extra = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, N * WORDS * sizeof(float), h, &err);
        CHECK(err);
    }
    for (int r = 0; r < rounds; r++) {
        int set = !set_once || r == 0;
        if (late && r == rounds / 2)
            pthread_barrier_wait(&midway);
        if (gat) {
            if (set) {
                CHECK(clSetKernelArg(gat, 0, sizeof own, &own));
                CHECK(clSetKernelArg(gat, 1, sizeof shared, &shared));
                CHECK(clSetKernelArg(gat, 2, sizeof n, &n));
            }
            CHECK(clEnqueueNDRangeKernel(q, gat, 1, NULL, &g, NULL, 0, NULL, NULL));
        }
        if (set && !churn) {
            CHECK(clSetKernelArg(acc, 0, sizeof own, &own));
            CHECK(clSetKernelArg(acc, 1, sizeof shared, &shared));
            CHECK(clSetKernelArg(acc, 2, sizeof n, &n));
        }
        if (!churn)
            CHECK(clEnqueueNDRangeKernel(q, acc, 1, NULL, &g, NULL, 0, NULL, NULL));
        if (set) {
            CHECK(clSetKernelArg(adv, 0, sizeof own, &own));
            CHECK(clSetKernelArg(adv, 1, sizeof n, &n));
            CHECK(clSetKernelArg(adv, 2, sizeof dt, &dt));
        }
        cl_event ev = NULL;
        CHECK(clEnqueueNDRangeKernel(q, adv, 1, NULL, &g, NULL, 0, NULL, with_callbacks ? &ev : NULL));
        if (ev) {
            CHECK(clSetEventCallback(ev, CL_COMPLETE, side_step, &side));
            CHECK(clReleaseEvent(ev));
            CHECK(clFlush(q));
        }
        if (r % 10 == 9) {
            CHECK(clEnqueueReadBuffer(q, own, CL_TRUE, 0, N * WORDS * sizeof(float), h, 0, NULL, NULL));
            hash ^= fnv(h, N * WORDS * sizeof(float)) + r;
            if (with_callbacks) {
                /* The buffer the callbacks' launches read, read here with theirs pending. */
                CHECK(clEnqueueReadBuffer(q, shared, CL_TRUE, 0, N * WORDS * sizeof(float), h, 0, NULL, NULL));
                hash ^= 5 * fnv(h, N * WORDS * sizeof(float));
            }
        }
    }
    CHECK(clEnqueueReadBuffer(q, own, CL_TRUE, 0, N * WORDS * sizeof(float), h, 0, NULL, NULL));
    results[id] = hash ^ fnv(h, N * WORDS * sizeof(float));
    if (with_callbacks) {
        while (__atomic_load_n(&side.ran, __ATOMIC_SEQ_CST) < rounds)
            usleep(1000);
        pthread_mutex_lock(&side.lock);
        CHECK(clEnqueueReadBuffer(q, side.extra, CL_TRUE, 0, N * WORDS * sizeof(float), h, 0, NULL, NULL));
        results[id] ^= 3 * fnv(h, N * WORDS * sizeof(float)) + (uint64_t)side.failed;
        pthread_mutex_unlock(&side.lock);
        clReleaseMemObject(side.extra);
        clReleaseKernel(side.k);
    }
    clReleaseMemObject(own);
    clReleaseKernel(acc);
    clReleaseKernel(adv);
    if (gat)
        clReleaseKernel(gat);
    if (own_build)
        clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    free(h);
    __atomic_add_fetch(&finished, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int threads = argc > 2 ? atoi(argv[2]) : 6;
    rounds = argc > 3 ? atoi(argv[3]) : 100;
    late = argc > 4 && strcmp(argv[4], "late") == 0;
    churn = argc > 4 && strcmp(argv[4], "churn") == 0;
    set_once = argc > 4 && (strcmp(argv[4], "repeat") == 0 || late || churn);
    own_build = argc > 4 && strcmp(argv[4], "build") == 0;
    with_callbacks = argc > 4 && strcmp(argv[4], "callbacks") == 0;
    with_gather = argc > 4 && (strcmp(argv[4], "gather") == 0 || strcmp(argv[4], "exit") == 0 || set_once || own_build ||
                               with_callbacks);
    int exit_early = argc > 4 && strcmp(argv[4], "exit") == 0;
    if (threads > 64)
        threads = 64;
    alarm(300); /* a deadlock fails the run instead of hanging it */
    cl_platform_id plat;
    plat = pick_platform();
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_int err;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    char *src = read_file(argv[1]);
    source = src;
    g_prog = clCreateProgramWithSource(ctx, 1, (const char **)&src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(g_prog, 1, &dev, "", NULL, NULL));
    float *h = malloc(N * WORDS * sizeof(float));
    for (int i = 0; i < N * WORDS; i++)
        h[i] = (float)(i % 17) - 8.0f;
    shared = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, N * WORDS * sizeof(float), h, &err);
    CHECK(err);
    pthread_t t[64];
    pthread_barrier_init(&start_line, NULL, threads);
    pthread_barrier_init(&midway, NULL, threads + 1);
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    cl_program other = NULL;
    if (late) {
        pthread_barrier_wait(&midway);
        other = clCreateProgramWithSource(ctx, 1, &late_source, NULL, &err);
        CHECK(err);
        CHECK(clBuildProgram(other, 1, &dev, "", NULL, NULL));
    }
    /* Kept until the workers are done: a release would end every repeat the workers' launches
     * make (under clayout, a kernel's record going changes what each repeat checks). */
    static cl_kernel made[4096];
    int made_n = 0;
    while (churn && made_n < 4096 && __atomic_load_n(&finished, __ATOMIC_SEQ_CST) < threads) {
        made[made_n] = clCreateKernel(g_prog, "advance", &err);
        CHECK(err);
        made_n++;
        usleep(200);
    }
    for (int i = 0; i < made_n; i++)
        CHECK(clReleaseKernel(made[i]));
    if (exit_early) {
        usleep(300 * 1000);
        printf("exit while enqueueing\n");
        fflush(stdout);
        exit(0);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < threads; i++)
        printf("thread %d %016llx\n", i, (unsigned long long)results[i]);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK(err);
    CHECK(clEnqueueReadBuffer(q, shared, CL_TRUE, 0, N * WORDS * sizeof(float), h, 0, NULL, NULL));
    printf("shared %016llx\n", (unsigned long long)fnv(h, N * WORDS * sizeof(float)));
    clReleaseMemObject(shared);
    clReleaseCommandQueue(q);
    if (other)
        clReleaseProgram(other);
    clReleaseProgram(g_prog);
    clReleaseContext(ctx);
    return 0;
}
