/* Call sequences of a host program that keeps an array of structures (5 floats) on the device.
 *   dl_seq KERNELS.cl MODE [N]
 * The same program runs plainly with the AoS kernels and under clayout with their ASTA
 * twins: every checksum it prints must be identical. MODE picks the call sequence. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../include/pick_platform.h"
#include "../include/fnv.h"

#include "../include/check.h"
#include "../include/read_file.h"

typedef struct {
    float x, y, z, vx, vy;
} particle_t;

static cl_context ctx;
static cl_device_id dev;
static cl_command_queue q;
static cl_program prog;
static cl_uint n;

static void fill_particles(particle_t *p, cl_uint count, float seed)
{
    for (cl_uint i = 0; i < count; i++) {
        p[i].x = seed + i * 0.5f;
        p[i].y = seed - i * 0.25f;
        p[i].z = (float)(i % 13);
        p[i].vx = 1.0f / (i + 1);
        p[i].vy = (float)(i % 5) - 2.0f;
    }
}

static void show(const char *what, const void *data, size_t len)
{
    printf("%s %016llx\n", what, (unsigned long long)fnv(data, len));
}

static cl_kernel kernel(const char *name)
{
    cl_int err;
    cl_kernel k = clCreateKernel(prog, name, &err);
    CHECK(err);
    return k;
}

/* The scale kernel over buffer b read as 5n floats, each times k; *g its global size. */
static cl_kernel scale_kernel(cl_mem b, float k, size_t *g)
{
    cl_kernel s = kernel("scale");
    cl_uint count = n * 5;
    *g = (count + 63) / 64 * 64;
    CHECK(clSetKernelArg(s, 0, sizeof b, &b));
    CHECK(clSetKernelArg(s, 1, sizeof count, &count));
    CHECK(clSetKernelArg(s, 2, sizeof k, &k));
    return s;
}

static size_t global_size(void)
{
    return (n + 63) / 64 * 64;
}

static void step(cl_command_queue queue, cl_kernel k, cl_mem buf, cl_uint nev, const cl_event *wait, cl_event *ev)
{
    float dt = 0.01f;
    size_t g = global_size();
    CHECK(clSetKernelArg(k, 0, sizeof buf, &buf));
    CHECK(clSetKernelArg(k, 1, sizeof n, &n));
    CHECK(clSetKernelArg(k, 2, sizeof dt, &dt));
    CHECK(clEnqueueNDRangeKernel(queue, k, 1, NULL, &g, NULL, nev, wait, ev));
}

static cl_mem make_buffer(cl_mem_flags flags, size_t size, void *host)
{
    cl_int err;
    cl_mem b = clCreateBuffer(ctx, flags, size, host, &err);
    CHECK(err);
    return b;
}

/* Kernel `name` of the two-buffer kind (exchange, gather): arguments a, b, n. */
static cl_kernel pair_kernel(const char *name, cl_mem a, cl_mem b)
{
    cl_kernel k = kernel(name);
    CHECK(clSetKernelArg(k, 0, sizeof a, &a));
    CHECK(clSetKernelArg(k, 1, sizeof b, &b));
    CHECK(clSetKernelArg(k, 2, sizeof n, &n));
    return k;
}

/* Reads buffer b (`bytes` bytes) into host memory h and prints its checksum under `what`. */
static void read_show(const char *what, cl_mem b, void *h, size_t bytes)
{
    CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
    show(what, h, bytes);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: dl_seq KERNELS.cl MODE [N [LAUNCHES]]\n");
        return 2;
    }
    const char *mode = argv[2];
    n = argc > 3 ? (cl_uint)atoi(argv[3]) : 1000;
    cl_platform_id plat;
    plat = pick_platform();
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_int err;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    int ooo = !strcmp(mode, "ooo") || !strcmp(mode, "ooofirst");
    q = clCreateCommandQueue(ctx, dev, ooo ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0, &err);
    CHECK(err);
    char *src = read_file(argv[1]);
    prog = clCreateProgramWithSource(ctx, 1, (const char **)&src, NULL, &err);
    CHECK(err);
    const char *opts = getenv("DL_BUILD_OPTIONS");
    err = clBuildProgram(prog, 1, &dev, opts ? opts : "", NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[8192] = "";
        clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        printf("build failed %d\n%s\n", err, log);
        return 1;
    }

    size_t bytes = n * sizeof(particle_t);
    particle_t *h = malloc(bytes), *h2 = malloc(bytes);
    fill_particles(h, n, 1.0f);
    cl_kernel k = kernel("advance");

    if (!strcmp(mode, "launches")) {
        /* As many launches as the fourth argument says, ten by default: a run's length set on
         * its command line, as codes that take a step count do, with a clFinish after them. */
        int launches = argc > 4 ? atoi(argv[4]) : 10;
        cl_mem b = make_buffer(CL_MEM_READ_WRITE, bytes, NULL);
        CHECK(clEnqueueWriteBuffer(q, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
        for (int i = 0; i < launches; i++)
            step(q, k, b, 0, NULL, NULL);
        if (argc > 4)
            CHECK(clFinish(q)); /* the loop's end, as a time-step loop waits for it */
        read_show("after the launches", b, h, bytes);
        clReleaseMemObject(b);
    } else if (!strcmp(mode, "evented")) {
        /* Twenty launches that each ask for their event, the one before released as the next
         * is enqueued (as codes that time every kernel by its event do), then a wait for the
         * last one's event. */
        cl_mem b = make_buffer(CL_MEM_READ_WRITE, bytes, NULL);
        CHECK(clEnqueueWriteBuffer(q, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
        cl_event last = NULL;
        for (int i = 0; i < 20; i++) {
            cl_event e;
            step(q, k, b, 0, NULL, &e);
            if (last)
                clReleaseEvent(last);
            last = e;
        }
        CHECK(clWaitForEvents(1, &last));
        clReleaseEvent(last);
        read_show("after the launches", b, h, bytes);
        clReleaseMemObject(b);
    } else if (!strcmp(mode, "finished")) {
        /* Each launch waited for with clFinish, as a benchmark loop times its kernels; then
         * two launches before the wait. */
        cl_mem b = make_buffer(CL_MEM_READ_WRITE, bytes, NULL);
        CHECK(clEnqueueWriteBuffer(q, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
        CHECK(clFinish(q));
        for (int i = 0; i < 3; i++) {
            step(q, k, b, 0, NULL, NULL);
            CHECK(clFinish(q));
        }
        step(q, k, b, 0, NULL, NULL);
        step(q, k, b, 0, NULL, NULL);
        CHECK(clFinish(q));
        read_show("after 5 launches", b, h, bytes);
        clReleaseMemObject(b);
    } else if (!strcmp(mode, "followed")) {
        /* Each round's launch followed by another launch before the wait, as a program of
         * several kernels per iteration enqueues them: the application's clFinish is never the
         * first launch's alone. The host reads both buffers after each round: every epoch is
         * one launch long, so no history says that more launches follow. */
        cl_mem b = make_buffer(CL_MEM_READ_WRITE, bytes, NULL), c = make_buffer(CL_MEM_READ_WRITE, bytes, NULL);
        CHECK(clEnqueueWriteBuffer(q, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
        fill_particles(h2, n, 2.0f);
        CHECK(clEnqueueWriteBuffer(q, c, CL_TRUE, 0, bytes, h2, 0, NULL, NULL));
        CHECK(clFinish(q));
        for (int i = 0; i < 3; i++) {
            step(q, k, b, 0, NULL, NULL);
            step(q, k, c, 0, NULL, NULL);
            CHECK(clFinish(q));
            read_show("first", b, h, bytes);
            read_show("second", c, h2, bytes);
        }
        clReleaseMemObject(b);
        clReleaseMemObject(c);
    } else if (!strcmp(mode, "spawn")) {
        /* Starts a process of its own, which inherits the environment (LD_PRELOAD included)
         * and makes no OpenCL call. */
        cl_mem b = make_buffer(CL_MEM_READ_WRITE, bytes, NULL);
        CHECK(clEnqueueWriteBuffer(q, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
        step(q, k, b, 0, NULL, NULL);
        read_show("after a launch", b, h, bytes);
        printf("child exit %d\n", system("/bin/true && exit 3") >> 8);
        clReleaseMemObject(b);
    } else if (!strcmp(mode, "pause")) {
        /* A short run: a launch, 0.3 s of host work, a launch, the read. */
        cl_mem b = make_buffer(CL_MEM_READ_WRITE, bytes, NULL);
        CHECK(clEnqueueWriteBuffer(q, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
        step(q, k, b, 0, NULL, NULL);
        CHECK(clFinish(q));
        struct timespec pause = {0, 300000000};
        nanosleep(&pause, NULL);
        step(q, k, b, 0, NULL, NULL);
        read_show("after a pause", b, h, bytes);
        clReleaseMemObject(b);
    } else if (!strcmp(mode, "unwaited")) {
        /* A launch after a clFinish, then everything released without another wait. */
        cl_mem b = make_buffer(CL_MEM_READ_WRITE, bytes, NULL);
        CHECK(clEnqueueWriteBuffer(q, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
        CHECK(clFinish(q));
        step(q, k, b, 0, NULL, NULL);
        clReleaseMemObject(b);
        printf("released unwaited\n");
    } else if (!strcmp(mode, "map")) {
        cl_mem b = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h);
        for (int i = 0; i < 3; i++)
            step(q, k, b, 0, NULL, NULL);
        particle_t *m = clEnqueueMapBuffer(q, b, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL, NULL, &err);
        CHECK(err);
        show("mapped", m, bytes);
        m[7].x = 42.0f; /* a host write through the map must survive */
        CHECK(clEnqueueUnmapMemObject(q, b, m, 0, NULL, NULL));
        for (int i = 0; i < 2; i++)
            step(q, k, b, 0, NULL, NULL);
        m = clEnqueueMapBuffer(q, b, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, bytes, 0, NULL, NULL, &err);
        CHECK(err);
        fill_particles(m, n, 3.0f);
        CHECK(clEnqueueUnmapMemObject(q, b, m, 0, NULL, NULL));
        step(q, k, b, 0, NULL, NULL);
        read_show("after invalidating map", b, h, bytes);
        clReleaseMemObject(b);
    } else if (!strcmp(mode, "partial")) {
        cl_mem b = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h);
        step(q, k, b, 0, NULL, NULL);
        size_t off = 37 * sizeof(particle_t), len = 101 * sizeof(particle_t);
        CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, off, len, h2, 0, NULL, NULL));
        show("partial read", h2, len);
        fill_particles(h2, 10, 9.0f);
        CHECK(clEnqueueWriteBuffer(q, b, CL_TRUE, off, 10 * sizeof(particle_t), h2, 0, NULL, NULL));
        step(q, k, b, 0, NULL, NULL);
        read_show("after partial write", b, h, bytes);
        clReleaseMemObject(b);
    } else if (!strcmp(mode, "copy")) {
        cl_mem b = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h);
        cl_mem c = make_buffer(CL_MEM_READ_WRITE, bytes, NULL);
        step(q, k, b, 0, NULL, NULL);
        step(q, k, b, 0, NULL, NULL);
        CHECK(clEnqueueCopyBuffer(q, b, c, 0, 0, bytes, 0, NULL, NULL));
        step(q, k, b, 0, NULL, NULL);
        read_show("copy", c, h, bytes);
        read_show("source", b, h, bytes);
        clReleaseMemObject(b);
        clReleaseMemObject(c);
    } else if (!strcmp(mode, "fill")) {
        cl_mem b = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h);
        step(q, k, b, 0, NULL, NULL);
        float pattern = 0.5f;
        CHECK(clEnqueueFillBuffer(q, b, &pattern, sizeof pattern, 40, 400, 0, NULL, NULL));
        step(q, k, b, 0, NULL, NULL);
        read_show("after partial fill", b, h, bytes);
        CHECK(clEnqueueFillBuffer(q, b, &pattern, sizeof pattern, 0, bytes, 0, NULL, NULL));
        step(q, k, b, 0, NULL, NULL);
        read_show("after whole fill", b, h, bytes);
        clReleaseMemObject(b);
    } else if (!strcmp(mode, "mixed")) {
        cl_mem b = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h);
        size_t g;
        cl_kernel s = scale_kernel(b, 0.75f, &g);
        step(q, k, b, 0, NULL, NULL);
        CHECK(clEnqueueNDRangeKernel(q, s, 1, NULL, &g, NULL, 0, NULL, NULL));
        step(q, k, b, 0, NULL, NULL);
        read_show("mixed kernels", b, h, bytes);
        clReleaseKernel(s);
        clReleaseMemObject(b);
    } else if (!strcmp(mode, "plain")) {
        /* A kernel with no annotation (scale) launched over and over on a buffer that an
         * annotated kernel (advance) steps between the rounds, its arguments set once. */
        cl_mem b = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h);
        size_t g;
        cl_kernel s = scale_kernel(b, 0.5f, &g);
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < 4; i++)
                step(q, k, b, 0, NULL, NULL);
            for (int i = 0; i < 5; i++)
                CHECK(clEnqueueNDRangeKernel(q, s, 1, NULL, &g, NULL, 0, NULL, NULL));
            if (round == 1) {
                /* A scalar no annotation reads, set again to another value. */
                float kk = 0.25f;
                CHECK(clSetKernelArg(s, 2, sizeof kk, &kk));
            }
        }
        read_show("plain kernel", b, h, bytes);
        clReleaseKernel(s);
        clReleaseMemObject(b);
    } else if (!strcmp(mode, "twoqueues")) {
        cl_command_queue q2 = clCreateCommandQueue(ctx, dev, 0, &err);
        CHECK(err);
        cl_mem b = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h);
        cl_kernel k2 = kernel("advance");
        cl_event e1, e2;
        step(q, k, b, 0, NULL, &e1);
        step(q2, k2, b, 1, &e1, &e2);
        CHECK(clEnqueueReadBuffer(q, b, CL_FALSE, 0, bytes, h, 1, &e2, NULL));
        CHECK(clFinish(q));
        show("two queues", h, bytes);
        clReleaseEvent(e1);
        clReleaseEvent(e2);
        clReleaseKernel(k2);
        clReleaseMemObject(b);
        clReleaseCommandQueue(q2);
    } else if (!strcmp(mode, "ooo")) {
        cl_mem b = make_buffer(CL_MEM_READ_WRITE, bytes, NULL);
        cl_event ew, e[4];
        CHECK(clEnqueueWriteBuffer(q, b, CL_FALSE, 0, bytes, h, 0, NULL, &ew));
        step(q, k, b, 1, &ew, &e[0]);
        for (int i = 1; i < 4; i++)
            step(q, k, b, 1, &e[i - 1], &e[i]);
        cl_event er;
        CHECK(clEnqueueReadBuffer(q, b, CL_FALSE, 0, bytes, h2, 1, &e[3], &er));
        CHECK(clWaitForEvents(1, &er));
        cl_int status;
        CHECK(clGetEventInfo(e[3], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
        printf("last launch status %d\n", status);
        show("out of order", h2, bytes);
        clReleaseEvent(ew);
        clReleaseEvent(er);
        for (int i = 0; i < 4; i++)
            clReleaseEvent(e[i]);
        clReleaseMemObject(b);
    } else if (!strcmp(mode, "ooofirst")) {
        /* An out-of-order queue whose launches of gather only read the shared buffer, each into
         * a buffer of its own, with no wait list and no event: they may run at the same time.
         * Under clayout the first may be enqueued before clayout looks at it and a later one
         * may convert the shared buffer: that conversion must wait for the first launch, which
         * nothing of the application's orders it after. */
        enum { LAUNCHES = 16 };
        fill_particles(h2, n, 5.0f);
        cl_mem shared = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h2);
        cl_mem own[LAUNCHES];
        for (int i = 0; i < LAUNCHES; i++) {
            fill_particles(h, n, 1.0f + i);
            own[i] = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h);
        }
        cl_kernel gk = pair_kernel("gather", own[0], shared);
        size_t g = global_size();
        for (int i = 0; i < LAUNCHES; i++) {
            CHECK(clSetKernelArg(gk, 0, sizeof own[i], &own[i]));
            CHECK(clEnqueueNDRangeKernel(q, gk, 1, NULL, &g, NULL, 0, NULL, NULL));
        }
        CHECK(clFinish(q));
        for (int i = 0; i < LAUNCHES; i++) {
            char what[16];
            snprintf(what, sizeof what, "own %d", i);
            read_show(what, own[i], h, bytes);
            clReleaseMemObject(own[i]);
        }
        read_show("shared", shared, h2, bytes);
        clReleaseKernel(gk);
        clReleaseMemObject(shared);
    } else if (!strcmp(mode, "subbuf")) {
        cl_uint align_bits;
        CHECK(clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL));
        size_t align = align_bits / 8, off = (bytes / 2) / align * align;
        cl_mem b = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h);
        cl_buffer_region r = {off, bytes - off};
        cl_mem sub = clCreateSubBuffer(b, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
        CHECK(err);
        step(q, k, b, 0, NULL, NULL);
        CHECK(clEnqueueReadBuffer(q, sub, CL_TRUE, 0, r.size, h2, 0, NULL, NULL));
        show("through sub-buffer", h2, r.size);
        float pattern = 2.0f;
        CHECK(clEnqueueFillBuffer(q, sub, &pattern, sizeof pattern, 0, 64, 0, NULL, NULL));
        step(q, k, b, 0, NULL, NULL);
        read_show("parent", b, h, bytes);
        clReleaseMemObject(sub);
        clReleaseMemObject(b);
    } else if (!strcmp(mode, "hostptr")) {
        particle_t *mine = malloc(bytes);
        memcpy(mine, h, bytes);
        cl_mem b = make_buffer(CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, mine);
        for (int i = 0; i < 4; i++)
            step(q, k, b, 0, NULL, NULL);
        particle_t *m = clEnqueueMapBuffer(q, b, CL_TRUE, CL_MAP_READ, 0, bytes, 0, NULL, NULL, &err);
        CHECK(err);
        show("use host ptr", m, bytes);
        CHECK(clEnqueueUnmapMemObject(q, b, m, 0, NULL, NULL));
        CHECK(clFinish(q));
        clReleaseMemObject(b);
        free(mine);
    } else if (!strcmp(mode, "soa")) {
        float *f = malloc(bytes);
        for (cl_uint i = 0; i < n; i++)
            for (int s = 0; s < 5; s++)
                f[s * n + i] = ((float *)&h[i])[s];
        cl_mem b = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, f);
        cl_kernel ks = kernel("step_soa");
        for (int i = 0; i < 5; i++)
            step(q, ks, b, 0, NULL, NULL);
        read_show("soa", b, f, bytes);
        clReleaseKernel(ks);
        clReleaseMemObject(b);
        free(f);
    } else if (!strcmp(mode, "multi")) {
        fill_particles(h2, n, 5.0f);
        cl_mem a = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h);
        cl_mem b = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h2);
        size_t g = global_size();
        step(q, k, a, 0, NULL, NULL);
        cl_kernel x = pair_kernel("exchange", a, b);
        for (int i = 0; i < 3; i++)
            CHECK(clEnqueueNDRangeKernel(q, x, 1, NULL, &g, NULL, 0, NULL, NULL));
        step(q, k, b, 0, NULL, NULL);
        read_show("a", a, h, bytes);
        read_show("b", b, h2, bytes);
        clReleaseKernel(x);
        clReleaseMemObject(a);
        clReleaseMemObject(b);
    } else if (!strcmp(mode, "gatherread") || !strcmp(mode, "mapread")) {
        /* gatherread: the host reads back what gather wrote and never the input it gathered
         * from, which is released in whatever layout the last launch left it.
         * mapread: kernels may read a buffer the host has mapped for reading, and the host may
         * go on reading the map meanwhile: clayout must not rewrite those bytes in place. */
        int mapped = !strcmp(mode, "mapread");
        fill_particles(h2, n, 5.0f);
        cl_mem own = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h);
        cl_mem shared = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h2);
        cl_kernel gk = pair_kernel("gather", own, shared);
        size_t g = global_size();
        particle_t *m = NULL;
        if (mapped) {
            m = clEnqueueMapBuffer(q, shared, CL_TRUE, CL_MAP_READ, 0, bytes, 0, NULL, NULL, &err);
            CHECK(err);
        }
        for (int i = 0; i < 2; i++)
            CHECK(clEnqueueNDRangeKernel(q, gk, 1, NULL, &g, NULL, 0, NULL, NULL));
        if (mapped) {
            CHECK(clFinish(q));
            show("map while kernels read", m, bytes);
            CHECK(clEnqueueUnmapMemObject(q, shared, m, 0, NULL, NULL));
        }
        CHECK(clEnqueueNDRangeKernel(q, gk, 1, NULL, &g, NULL, 0, NULL, NULL));
        read_show("own", own, h, bytes);
        if (mapped)
            read_show("shared", shared, h2, bytes);
        clReleaseKernel(gk);
        clReleaseMemObject(own);
        clReleaseMemObject(shared);
    } else if (!strcmp(mode, "swapped") || !strcmp(mode, "swapped-finish")) {
        /* Two buffers that trade places at every step, as a stencil's time steps do: gather
         * reads one and writes the other, its arguments set again before each launch
         * (swapped-finish: with a clFinish after the first two, as a program that waits for
         * its first steps does). */
        fill_particles(h2, n, 5.0f);
        cl_mem a = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h);
        cl_mem b = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h2);
        cl_kernel gk = pair_kernel("gather", a, b);
        size_t g = global_size();
        for (int i = 0; i < 20; i++) {
            cl_mem own = i % 2 ? b : a, shared = i % 2 ? a : b;
            CHECK(clSetKernelArg(gk, 0, sizeof own, &own));
            CHECK(clSetKernelArg(gk, 1, sizeof shared, &shared));
            CHECK(clEnqueueNDRangeKernel(q, gk, 1, NULL, &g, NULL, 0, NULL, NULL));
            if (i == 1 && !strcmp(mode, "swapped-finish"))
                CHECK(clFinish(q));
        }
        read_show("a", a, h, bytes);
        read_show("b", b, h2, bytes);
        clReleaseKernel(gk);
        clReleaseMemObject(a);
        clReleaseMemObject(b);
    } else if (!strcmp(mode, "binary")) {
        /* The program rebuilt from its own binary, as applications with a binary cache do:
         * clayout sees no source there, so its kernels run as written. */
        size_t len = 0;
        CHECK(clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL));
        unsigned char *bin = malloc(len);
        CHECK(clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL));
        cl_int status;
        cl_program p2 = clCreateProgramWithBinary(ctx, 1, &dev, &len, (const unsigned char **)&bin, &status, &err);
        CHECK(err);
        CHECK(status);
        CHECK(clBuildProgram(p2, 1, &dev, "", NULL, NULL));
        cl_int kerr;
        cl_kernel k2 = clCreateKernel(p2, "advance", &kerr);
        CHECK(kerr);
        cl_mem b = make_buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h);
        step(q, k, b, 0, NULL, NULL); /* the source program's kernel first: ASTA under clayout */
        for (int i = 0; i < 3; i++)
            step(q, k2, b, 0, NULL, NULL);
        read_show("from binary", b, h, bytes);
        clReleaseMemObject(b);
        clReleaseKernel(k2);
        clReleaseProgram(p2);
        free(bin);
    } else {
        printf("unknown mode %s\n", mode);
        return 2;
    }
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    free(h);
    free(h2);
    free(src);
    return 0;
}
