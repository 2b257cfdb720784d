/* A time-stepping loop that launches the same kernel with the same arguments again and again,
 * as host-bound codes do, and between its runs of launches everything that must stop clayout
 * from taking such a launch as a repeat of the one before (`transparent::repeat`): a kernel
 * written for ASTA converting the buffer on another queue, reads, an argument set again, an
 * event asked, a wait list, a second kernel object on the same buffer, another buffer, a time
 * step changed at every launch, an out-of-order queue, a sub-buffer, a reference count asked,
 * the host's writes (a write, a map), a buffer released and created again. Last, a thread of
 * its own runs `exchange` in a loop and is still alive, blocked, when the program exits: its
 * launches must all be in clayout's statistics.
 *   dl_repeat AOS_KERNELS.cl plain|asta [N] [STEPS]
 * `advance` and `gather` come from AOS_KERNELS.cl (the transparent mode rewrites them); `nudge`
 * is a small kernel of this program's own, in its AoS form (`plain`, the run without clayout)
 * or written for ASTA with a //DL: annotation (`asta`, under clayout): every checksum printed
 * must be the same in both. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../include/pick_platform.h"
#include "../include/fnv.h"

#include "../include/check.h"
#include "../include/read_file.h"

typedef struct {
    float x, y, z, vx, vy;
} particle_t;

static const char *nudge_aos =
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "typedef struct { float x, y, z, vx, vy; } particle_t;\n"
    "__kernel void nudge(__global particle_t *p, uint n, float k)\n"
    "{\n"
    "    uint i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    p[i].vx = p[i].vx + k * p[i].z;\n"
    "    p[i].y = p[i].y - k;\n"
    "}\n";

static const char *nudge_asta =
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "typedef struct { float x, y, z, vx, vy; } particle_t;\n"
    "#define ASTA(i, s, S, T, m) \\\n"
    "    ((i) < (m) - (m) % (T) ? ((i) / (T) * (S) + (s)) * (T) + (i) % (T) \\\n"
    "                           : ((m) - (m) % (T)) * (S) + (s) * ((m) % (T)) + (i) - ((m) - (m) % (T)))\n"
    "#define P(s) w[ASTA(i, s, 5, CLAYOUT_TILE, n)]\n"
    "//DL: AoS: p[n] -> ASTA\n"
    "__kernel void nudge(__global particle_t *p, uint n, float k)\n"
    "{\n"
    "    __global float *w = (__global float *)p;\n"
    "    uint i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    P(3) = P(3) + k * P(2);\n"
    "    P(1) = P(1) - k;\n"
    "}\n";

static cl_context ctx;
static cl_device_id dev;
static cl_uint n;
static size_t global;

static cl_program build(const char *src)
{
    cl_int err;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    err = clBuildProgram(p, 1, &dev, "", NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[8192] = "";
        clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        printf("build failed %d\n%s\n", err, log);
        exit(1);
    }
    return p;
}

static cl_kernel kernel(cl_program p, const char *name)
{
    cl_int err;
    cl_kernel k = clCreateKernel(p, name, &err);
    CHECK(err);
    return k;
}

/* advance's arguments: the buffer, n, dt. */
static void bind(cl_kernel k, cl_mem b, float dt)
{
    CHECK(clSetKernelArg(k, 0, sizeof b, &b));
    CHECK(clSetKernelArg(k, 1, sizeof n, &n));
    CHECK(clSetKernelArg(k, 2, sizeof dt, &dt));
}

/* `count` launches of k on q, no wait list, no event: the loop clayout repeats. */
static void steps(cl_command_queue q, cl_kernel k, int count)
{
    for (int i = 0; i < count; i++)
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
}

/* The thread of section 11: `exchange` (c, d) launched `count` times on a queue of its own, the
 * two buffers read back, and then blocked until the process exits. */
static pthread_mutex_t lingering = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t looped = PTHREAD_COND_INITIALIZER;
static int loop_done;
struct loop {
    cl_program prog;
    cl_mem c, d;
    int count;
};

static void *loop_then_linger(void *arg)
{
    struct loop *l = arg;
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK(err);
    cl_kernel x = kernel(l->prog, "exchange");
    CHECK(clSetKernelArg(x, 0, sizeof l->c, &l->c));
    CHECK(clSetKernelArg(x, 1, sizeof l->d, &l->d));
    CHECK(clSetKernelArg(x, 2, sizeof n, &n));
    steps(q, x, l->count);
    size_t bytes = n * sizeof(particle_t);
    particle_t *h = malloc(2 * bytes);
    CHECK(clEnqueueReadBuffer(q, l->c, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, l->d, CL_TRUE, 0, bytes, h + n, 0, NULL, NULL));
    printf("a thread's loop %016llx\n", (unsigned long long)fnv(h, 2 * bytes));
    fflush(stdout);
    pthread_mutex_lock(&lingering);
    loop_done = 1;
    pthread_cond_broadcast(&looped);
    for (;;)
        pthread_cond_wait(&looped, &lingering);
    return NULL;
}

static void show(const char *what, cl_command_queue q, cl_mem b, particle_t *h)
{
    CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, n * sizeof *h, h, 0, NULL, NULL));
    printf("%s %016llx\n", what, (unsigned long long)fnv(h, n * sizeof *h));
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: dl_repeat AOS_KERNELS.cl plain|asta [N] [STEPS]\n");
        return 2;
    }
    n = argc > 3 ? (cl_uint)atoi(argv[3]) : 1000;
    int s = argc > 4 ? atoi(argv[4]) : 12;
    global = (n + 63) / 64 * 64;
    cl_platform_id plat = pick_platform();
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_int err;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK(err);
    cl_command_queue q2 = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK(err);
    cl_command_queue qo = clCreateCommandQueue(ctx, dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
    CHECK(err);

    char *src = read_file(argv[1]);
    cl_program aos = build(src);
    cl_program other = build(strcmp(argv[2], "asta") ? nudge_aos : nudge_asta);

    size_t bytes = n * sizeof(particle_t);
    particle_t *h = malloc(bytes);
    for (cl_uint i = 0; i < n; i++)
        h[i] = (particle_t){1.0f + i * 0.5f, 1.0f - i * 0.25f, (float)(i % 13), 1.0f / (i + 1), (float)(i % 5) - 2.0f};
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h, &err);
    CHECK(err);
    cl_mem c = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h, &err);
    CHECK(err);

    cl_kernel k = kernel(aos, "advance"), k2 = kernel(aos, "advance"), nudge = kernel(other, "nudge");
    bind(k, b, 0.01f);
    bind(k2, b, 0.02f);
    float nk = 0.125f;
    CHECK(clSetKernelArg(nudge, 0, sizeof b, &b));
    CHECK(clSetKernelArg(nudge, 1, sizeof n, &n));
    CHECK(clSetKernelArg(nudge, 2, sizeof nk, &nk));

    /* 1. The loop, read back. */
    steps(q, k, s);
    show("loop", q, b, h);

    /* 2. The loop, then the ASTA kernel on another queue, ordered after the loop by a marker's
     * event only: clayout's conversion of b on q2 must wait for the repeated launches, which
     * asked for no event. Then the loop again, which brings b back to its host layout. */
    for (int round = 0; round < 3; round++) {
        cl_event m, e;
        steps(q, k, s);
        CHECK(clEnqueueMarkerWithWaitList(q, 0, NULL, &m));
        CHECK(clEnqueueNDRangeKernel(q2, nudge, 1, NULL, &global, NULL, 1, &m, &e));
        CHECK(clFlush(q2));
        CHECK(clEnqueueMarkerWithWaitList(q, 1, &e, NULL));
        steps(q, k, s);
        CHECK(clFinish(q));
        clReleaseEvent(m);
        clReleaseEvent(e);
    }
    show("after the ASTA kernel on another queue", q, b, h);

    /* 3. An argument set again (the same value, then another), mid-loop. */
    steps(q, k, s);
    float dt = 0.01f;
    CHECK(clSetKernelArg(k, 2, sizeof dt, &dt));
    steps(q, k, s);
    dt = 0.015f;
    CHECK(clSetKernelArg(k, 2, sizeof dt, &dt));
    steps(q, k, s);
    show("arguments set again", q, b, h);

    /* 4. An event asked, a wait list, between repeats. */
    cl_event ev;
    steps(q, k, s);
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, &ev));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 1, &ev, NULL));
    steps(q, k, s);
    clReleaseEvent(ev);
    show("an event and a wait list", q, b, h);

    /* 4b. A loop that asks an event of every launch (as codes that time their kernels do), then
     * the ASTA kernel on another queue waiting for the last launch's event only: clayout's
     * conversion of b there must wait for every launch of the loop, whose events it was not
     * given. Then the loop again, after a marker that waits for the ASTA kernel. */
    cl_event last = NULL, asta;
    for (int i = 0; i < 4 * s; i++) {
        cl_event e;
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, &e));
        if (last)
            clReleaseEvent(last);
        last = e;
    }
    CHECK(clEnqueueNDRangeKernel(q2, nudge, 1, NULL, &global, NULL, 1, &last, &asta));
    CHECK(clFlush(q2));
    clReleaseEvent(last);
    CHECK(clEnqueueMarkerWithWaitList(q, 1, &asta, NULL));
    for (int i = 0; i < s; i++) {
        cl_event e;
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, &e));
        clReleaseEvent(e);
    }
    CHECK(clFinish(q));
    clReleaseEvent(asta);
    show("events asked of every launch", q, b, h);

    /* 5. Two kernel objects of one kernel, each with its own dt, on one buffer, in turn; a
     * non-blocking read on another queue in between. */
    particle_t *h2 = malloc(bytes);
    for (int i = 0; i < s; i++) {
        steps(q, k, 2);
        steps(q, k2, 2);
        if (i == s / 2) {
            cl_event r;
            CHECK(clFinish(q));
            CHECK(clEnqueueReadBuffer(q2, b, CL_FALSE, 0, bytes, h2, 0, NULL, &r));
            CHECK(clWaitForEvents(1, &r));
            clReleaseEvent(r);
            printf("mid-loop read %016llx\n", (unsigned long long)fnv(h2, bytes));
        }
    }
    show("two kernel objects", q, b, h);

    /* 6. Another buffer, then back; the ASTA kernel converts c in between, on this queue. */
    bind(k, c, 0.01f);
    steps(q, k, s);
    CHECK(clSetKernelArg(nudge, 0, sizeof c, &c));
    CHECK(clEnqueueNDRangeKernel(q, nudge, 1, NULL, &global, NULL, 0, NULL, NULL));
    /* A reference count asked, as leak checks do: clayout first lets go of what completed,
     * the conversion's event among them, and the next launch finds c in ASTA with nothing
     * pending. (The count is not printed: on PoCL it is 3 without clayout and 17 under it
     * here, clayout's released events until PoCL's own thread frees them, 50 ms later.) */
    CHECK(clFinish(q));
    cl_uint refs;
    CHECK(clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof refs, &refs, NULL));
    steps(q, k, s);
    show("another buffer", q, c, h);
    bind(k, b, 0.01f);
    steps(q, k, s);
    show("back to the first", q, b, h);

    /* 7a. A time step that changes at every launch (a scalar no extent reads), over exactly n
     * work-items: at n = 1000 no work-group of 32 or more divides them, so the staged copy
     * cannot run and the kernel runs as written, whose arguments are the application's. */
    size_t exact = n;
    for (int i = 0; i < s; i++) {
        float step = 0.001f * (float)(i + 1);
        CHECK(clSetKernelArg(k, 2, sizeof step, &step));
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &exact, NULL, 0, NULL, NULL));
    }
    show("a time step changed at every launch", q, b, h);
    CHECK(clSetKernelArg(k, 2, sizeof dt, &dt));

    /* 7. The out-of-order queue, each launch ordered by the one before. */
    cl_event prev = NULL;
    for (int i = 0; i < s; i++) {
        cl_event e;
        CHECK(clEnqueueNDRangeKernel(qo, k, 1, NULL, &global, NULL, prev ? 1 : 0, prev ? &prev : NULL, &e));
        if (prev)
            clReleaseEvent(prev);
        prev = e;
    }
    CHECK(clWaitForEvents(1, &prev));
    clReleaseEvent(prev);
    show("out-of-order queue", q, b, h);

    /* 8. A sub-buffer over the first half of c. */
    cl_buffer_region half = {0, (n / 2) * sizeof(particle_t)};
    cl_mem sub = clCreateSubBuffer(c, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &half, &err);
    if (err == CL_SUCCESS) {
        cl_uint h_n = n / 2;
        CHECK(clSetKernelArg(k, 0, sizeof sub, &sub));
        CHECK(clSetKernelArg(k, 1, sizeof h_n, &h_n));
        steps(q, k, s);
        clReleaseMemObject(sub);
        show("sub-buffer", q, c, h);
    }

    /* 9. The host writes the buffer between runs of launches, nothing read in between: a
     * write, then a write through a map. The launches after each must see the new bytes
     * (clayout's express lane must find the buffer changed). */
    bind(k, b, 0.01f);
    steps(q, k, s);
    for (cl_uint i = 0; i < n; i++)
        h[i].vx += 1.0f;
    CHECK(clEnqueueWriteBuffer(q, b, CL_FALSE, 0, bytes, h, 0, NULL, NULL));
    steps(q, k, s);
    particle_t *mapped = clEnqueueMapBuffer(q, b, CL_TRUE, CL_MAP_WRITE, 0, bytes, 0, NULL, NULL, &err);
    CHECK(err);
    for (cl_uint i = 0; i < n; i++)
        mapped[i].y *= 0.5f;
    CHECK(clEnqueueUnmapMemObject(q, b, mapped, 0, NULL, NULL));
    steps(q, k, s);
    show("written by the host between runs of launches", q, b, h);

    /* 10. The buffer released and another created, often at the same handle, and set as the
     * argument again: the same value now names other bytes. */
    steps(q, k, s);
    CHECK(clFinish(q));
    clReleaseMemObject(b);
    for (cl_uint i = 0; i < n; i++)
        h[i].x = (float)i;
    b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h, &err);
    CHECK(err);
    CHECK(clSetKernelArg(k, 0, sizeof b, &b));
    steps(q, k, s);
    show("a buffer created again", q, b, h);

    /* 10b. Two buffers in turn, the argument set at every launch (as a loop that swaps its
     * source and destination does), dt set again to the value it has: clayout keeps a lane for
     * each. Halfway, the ASTA kernel converts c on this queue; then c is released and another
     * created (often at its handle) with other bytes; last, a time step that changes at every
     * launch. Each launch after each of these must see c as it is. */
    for (int i = 0; i < 8 * s; i++) {
        cl_mem own = i % 2 ? c : b;
        CHECK(clSetKernelArg(k, 0, sizeof own, &own));
        CHECK(clSetKernelArg(k, 1, sizeof n, &n));
        if (i >= 6 * s) {
            float step = 0.001f * (float)(i % 7 + 1);
            CHECK(clSetKernelArg(k, 2, sizeof step, &step));
        } else {
            CHECK(clSetKernelArg(k, 2, sizeof dt, &dt));
        }
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
        if (i == 2 * s) {
            CHECK(clSetKernelArg(nudge, 0, sizeof c, &c));
            CHECK(clEnqueueNDRangeKernel(q, nudge, 1, NULL, &global, NULL, 0, NULL, NULL));
        }
        if (i == 4 * s) {
            CHECK(clFinish(q));
            clReleaseMemObject(c);
            for (cl_uint j = 0; j < n; j++)
                h[j].z = (float)(j % 11);
            c = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h, &err);
            CHECK(err);
        }
    }
    CHECK(clSetKernelArg(k, 2, sizeof dt, &dt));
    show("two buffers in turn: b", q, b, h);
    show("two buffers in turn: c", q, c, h);

    /* 11. A thread's loop of launches, the thread still alive at exit (below). */
    cl_mem d = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h, &err);
    CHECK(err);
    CHECK(clFinish(q));
    struct loop l = {aos, c, d, 4 * s};
    pthread_t th;
    if (pthread_create(&th, NULL, loop_then_linger, &l) != 0)
        return 1;
    pthread_mutex_lock(&lingering);
    while (!loop_done)
        pthread_cond_wait(&looped, &lingering);
    pthread_mutex_unlock(&lingering);

    clReleaseKernel(k);
    clReleaseKernel(k2);
    clReleaseKernel(nudge);
    clReleaseMemObject(b);
    clReleaseMemObject(c);
    clReleaseProgram(other);
    clReleaseCommandQueue(q);
    clReleaseCommandQueue(q2);
    clReleaseCommandQueue(qo);
    clReleaseContext(ctx);
    free(h);
    free(h2);
    return 0;
}
