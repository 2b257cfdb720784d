/* Every host entry point that reads or writes a buffer's bytes, on a buffer an annotated
 * kernel has just used (so under clayout it sits in ASTA), each as it succeeds and as it fails:
 * bad pointers, sizes, offsets, flags, patterns, wait lists, queues, failed user events.
 * Issue 21, item 1 and its neighbours. */
#include "hostile.h"

/* The start of most cases: a buffer of particles after one launch of `advance`. */
static cl_mem used(void)
{
    start(0);
    cl_mem b = particles(1.0f);
    advance(b);
    return b;
}

/* The end of most cases: what the host sees, then one more launch and what it sees then. */
static void after(cl_mem b)
{
    show("after", b, BYTES);
    advance(b);
    show("again", b, BYTES);
    clReleaseMemObject(b);
    finish();
}

/* ---- reads ---- */

static void read_partial(void)
{
    cl_mem b = used();
    show_on(q, "unaligned part", b, 37 * sizeof(particle) + 3, 333);
    after(b);
}

static void read_nonblocking(void)
{
    cl_mem b = used();
    particle *h = malloc(BYTES);
    cl_event e;
    rc("read", clEnqueueReadBuffer(q, b, CL_FALSE, 0, BYTES, h, 0, NULL, &e));
    rc("wait", clWaitForEvents(1, &e));
    rc("status", status_of(e));
    sum("read", h, BYTES);
    clReleaseEvent(e);
    free(h);
    after(b);
}

static void read_rect(void)
{
    cl_mem b = used();
    /* The buffer seen as rows of 100 bytes: 10 rows of 40 bytes from (12, 3). */
    size_t borigin[3] = {12, 3, 0}, horigin[3] = {0, 0, 0}, region[3] = {40, 10, 1};
    unsigned char h[400];
    memset(h, 0, sizeof h);
    rc("read rect", clEnqueueReadBufferRect(q, b, CL_TRUE, borigin, horigin, region, 100, 0, 40, 0, h, 0, NULL, NULL));
    sum("rect", h, sizeof h);
    after(b);
}

/* ---- writes ---- */

static void write_partial(void)
{
    cl_mem b = used();
    particle h[10];
    fill(h, 10, 9.0f);
    cl_event e;
    rc("write", clEnqueueWriteBuffer(q, b, CL_FALSE, 17 * sizeof(particle), sizeof h, h, 0, NULL, &e));
    rc("wait", clWaitForEvents(1, &e));
    clReleaseEvent(e);
    after(b);
}

static void write_unaligned(void)
{
    cl_mem b = used();
    unsigned char h[7] = {1, 2, 3, 4, 5, 6, 7};
    rc("write", clEnqueueWriteBuffer(q, b, CL_TRUE, 101, sizeof h, h, 0, NULL, NULL));
    after(b);
}

static void write_whole(void)
{
    cl_mem b = used();
    particle *h = malloc(BYTES);
    fill(h, N, 4.0f);
    rc("write", clEnqueueWriteBuffer(q, b, CL_TRUE, 0, BYTES, h, 0, NULL, NULL));
    free(h);
    after(b);
}

static void write_rect(void)
{
    cl_mem b = used();
    size_t borigin[3] = {8, 2, 0}, horigin[3] = {0, 0, 0}, region[3] = {24, 5, 1};
    unsigned char h[120];
    for (int i = 0; i < 120; i++)
        h[i] = (unsigned char)(i * 7);
    rc("write rect", clEnqueueWriteBufferRect(q, b, CL_TRUE, borigin, horigin, region, 100, 0, 24, 0, h, 0, NULL, NULL));
    after(b);
}

/* ---- copies ---- */

static void copy_from(void)
{
    cl_mem b = used();
    cl_mem c = buffer(CL_MEM_READ_WRITE, BYTES, NULL);
    rc("copy", clEnqueueCopyBuffer(q, b, c, 0, 0, BYTES, 0, NULL, NULL));
    show("copy", c, BYTES);
    clReleaseMemObject(c);
    after(b);
}

static void copy_into_part(void)
{
    cl_mem b = used();
    cl_mem c = particles(7.0f);
    rc("copy", clEnqueueCopyBuffer(q, c, b, 40, 200, 360, 0, NULL, NULL));
    clReleaseMemObject(c);
    after(b);
}

static void copy_into_whole(void)
{
    cl_mem b = used();
    cl_mem c = particles(7.0f);
    advance(c);
    rc("copy", clEnqueueCopyBuffer(q, c, b, 0, 0, BYTES, 0, NULL, NULL));
    show("source", c, BYTES);
    clReleaseMemObject(c);
    after(b);
}

static void copy_within(void)
{
    cl_mem b = used();
    rc("copy", clEnqueueCopyBuffer(q, b, b, 0, BYTES / 2, BYTES / 2, 0, NULL, NULL));
    after(b);
}

static void copy_rect(void)
{
    cl_mem b = used();
    cl_mem c = buffer(CL_MEM_READ_WRITE, BYTES, NULL);
    size_t so[3] = {4, 1, 0}, dorig[3] = {0, 0, 0}, region[3] = {64, 20, 1};
    rc("fill", clEnqueueFillBuffer(q, c, "\0\0\0\0", 4, 0, BYTES, 0, NULL, NULL));
    rc("copy rect", clEnqueueCopyBufferRect(q, b, c, so, dorig, region, 200, 0, 64, 0, 0, NULL, NULL));
    show("copy", c, BYTES);
    clReleaseMemObject(c);
    after(b);
}

/* ---- fills ---- */

static void fill_part(void)
{
    cl_mem b = used();
    float pattern = 2.5f;
    rc("fill", clEnqueueFillBuffer(q, b, &pattern, sizeof pattern, 64, 400, 0, NULL, NULL));
    after(b);
}

static void fill_whole(void)
{
    cl_mem b = used();
    cl_float4 pattern = {{1.0f, -1.0f, 0.5f, 3.0f}};
    rc("fill", clEnqueueFillBuffer(q, b, &pattern, sizeof pattern, 0, BYTES, 0, NULL, NULL));
    after(b);
}

/* ---- maps ---- */

static void map_with(cl_map_flags flags, size_t offset, size_t size, int write)
{
    cl_mem b = used();
    cl_int err;
    unsigned char *m = clEnqueueMapBuffer(q, b, CL_TRUE, flags, offset, size, 0, NULL, NULL, &err);
    rc("map", err);
    if (m) {
        if (!(flags & CL_MAP_WRITE_INVALIDATE_REGION))
            sum("mapped", m, size);
        if (write)
            for (size_t i = 0; i < size; i++)
                m[i] = (unsigned char)(i * 13 + 1);
        rc("unmap", clEnqueueUnmapMemObject(q, b, m, 0, NULL, NULL));
    }
    after(b);
}

static void map_read(void)
{
    map_with(CL_MAP_READ, 0, BYTES, 0);
}
static void map_write(void)
{
    map_with(CL_MAP_WRITE, 20 * sizeof(particle), 50 * sizeof(particle), 1);
}
static void map_read_write(void)
{
    map_with(CL_MAP_READ | CL_MAP_WRITE, 8, 1000, 1);
}
static void map_invalidate_part(void)
{
    map_with(CL_MAP_WRITE_INVALIDATE_REGION, 100, 2000, 1);
}
static void map_invalidate_whole(void)
{
    map_with(CL_MAP_WRITE_INVALIDATE_REGION, 0, BYTES, 1);
}

static void map_nonblocking(void)
{
    cl_mem b = used();
    cl_int err;
    cl_event e;
    particle *m = clEnqueueMapBuffer(q, b, CL_FALSE, CL_MAP_READ, 0, BYTES, 0, NULL, &e, &err);
    rc("map", err);
    rc("wait", clWaitForEvents(1, &e));
    clReleaseEvent(e);
    if (m) {
        sum("mapped", m, BYTES);
        rc("unmap", clEnqueueUnmapMemObject(q, b, m, 0, NULL, NULL));
    }
    after(b);
}

/* Two maps of overlapping ranges, a kernel that reads the buffer while both are mapped. */
static void map_twice(void)
{
    cl_mem b = used();
    cl_int e1, e2;
    particle *m1 = clEnqueueMapBuffer(q, b, CL_TRUE, CL_MAP_READ, 0, BYTES / 2, 0, NULL, NULL, &e1);
    particle *m2 = clEnqueueMapBuffer(q, b, CL_TRUE, CL_MAP_READ, BYTES / 4, BYTES / 2, 0, NULL, NULL, &e2);
    rc("map 1", e1);
    rc("map 2", e2);
    cl_mem c = particles(3.0f);
    rc("pair", pair_on(q, c, b));
    rc("finish", clFinish(q));
    if (m1)
        sum("map 1", m1, BYTES / 2);
    if (m2)
        sum("map 2", m2, BYTES / 2);
    if (m1)
        rc("unmap 1", clEnqueueUnmapMemObject(q, b, m1, 0, NULL, NULL));
    if (m2)
        rc("unmap 2", clEnqueueUnmapMemObject(q, b, m2, 0, NULL, NULL));
    show("other", c, BYTES);
    clReleaseMemObject(c);
    after(b);
}

/* ---- migrations ---- */

static void migrate(cl_mem_migration_flags flags)
{
    cl_mem b = used();
    rc("migrate", clEnqueueMigrateMemObjects(q, 1, &b, flags, 0, NULL, NULL));
    if (flags & CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED) {
        /* Undefined content: the program writes it all before it looks. */
        particle *h = malloc(BYTES);
        fill(h, N, 6.0f);
        rc("write", clEnqueueWriteBuffer(q, b, CL_TRUE, 0, BYTES, h, 0, NULL, NULL));
        free(h);
    }
    after(b);
}

static void migrate_host(void)
{
    migrate(CL_MIGRATE_MEM_OBJECT_HOST);
}
static void migrate_device(void)
{
    migrate(0);
}
static void migrate_undefined(void)
{
    migrate(CL_MIGRATE_MEM_OBJECT_HOST | CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED);
}

/* ---- native kernels ---- */

struct native_args {
    particle *p; /* replaced by the buffer's address */
    int write;
};

/* What the native function saw of the buffer (it runs on a thread of the implementation, so it
 * keeps the checksum for the main thread to print once the command is done). */
static uint64_t native_saw;

static void native_func(void *a)
{
    struct native_args *na = a;
    native_saw = fnv(na->p, BYTES);
    if (na->write)
        for (int i = 0; i < N; i += 7)
            na->p[i].vx = (float)i;
}

static void native(int write)
{
    cl_mem b = used();
    cl_device_exec_capabilities caps = 0;
    clGetDeviceInfo(dev, CL_DEVICE_EXECUTION_CAPABILITIES, sizeof caps, &caps, NULL);
    if (!(caps & CL_EXEC_NATIVE_KERNEL)) {
        printf("skipped: no native kernels\n");
        clReleaseMemObject(b);
        finish();
        return;
    }
    struct native_args na = {NULL, write};
    const void *loc = &na.p;
    cl_event e;
    rc("native", clEnqueueNativeKernel(q, native_func, &na, sizeof na, 1, &b, &loc, 0, NULL, &e));
    rc("wait", clWaitForEvents(1, &e));
    printf("native saw %016llx\n", (unsigned long long)native_saw);
    clReleaseEvent(e);
    after(b);
}

static void native_read(void)
{
    native(0);
}
static void native_write(void)
{
    native(1);
}

/* ---- failures (item 1: a whole overwrite that fails must leave the bytes readable) ---- */

static void fail_write_null(void)
{
    cl_mem b = used();
    rc("write NULL", clEnqueueWriteBuffer(q, b, CL_TRUE, 0, BYTES, NULL, 0, NULL, NULL));
    after(b);
}

static void fail_write_null_part(void)
{
    cl_mem b = used();
    rc("write NULL", clEnqueueWriteBuffer(q, b, CL_TRUE, 40, 400, NULL, 0, NULL, NULL));
    after(b);
}

static void fail_write_past_end(void)
{
    cl_mem b = used();
    particle *h = malloc(BYTES + 20);
    fill(h, N + 1, 2.0f);
    rc("write past end", clEnqueueWriteBuffer(q, b, CL_TRUE, 0, BYTES + 20, h, 0, NULL, NULL));
    free(h);
    after(b);
}

static void fail_fill_pattern3(void)
{
    cl_mem b = used();
    rc("fill pattern 3", clEnqueueFillBuffer(q, b, "abc", 3, 0, BYTES, 0, NULL, NULL));
    after(b);
}

static void fail_fill_pattern20(void)
{
    cl_mem b = used();
    particle pattern;
    fill(&pattern, 1, 5.0f);
    rc("fill pattern 20", clEnqueueFillBuffer(q, b, &pattern, sizeof pattern, 0, BYTES, 0, NULL, NULL));
    after(b);
}

static void fail_fill_size_not_multiple(void)
{
    cl_mem b = used();
    unsigned char pattern[64] = {1};
    rc("fill pattern 64", clEnqueueFillBuffer(q, b, pattern, sizeof pattern, 0, BYTES, 0, NULL, NULL));
    after(b);
}

static void fail_fill_null_pattern(void)
{
    cl_mem b = used();
    rc("fill NULL", clEnqueueFillBuffer(q, b, NULL, 4, 0, BYTES, 0, NULL, NULL));
    after(b);
}

static void fail_map_invalidate_flags(void)
{
    cl_mem b = used();
    cl_int err;
    void *m = clEnqueueMapBuffer(q, b, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION | CL_MAP_READ, 0, BYTES, 0, NULL, NULL,
                                 &err);
    rc("map", err);
    printf("mapped: %s\n", m ? "yes" : "no");
    if (m)
        clEnqueueUnmapMemObject(q, b, m, 0, NULL, NULL);
    after(b);
}

static void fail_map_past_end(void)
{
    cl_mem b = used();
    cl_int err;
    void *m = clEnqueueMapBuffer(q, b, CL_TRUE, CL_MAP_READ, 100, BYTES, 0, NULL, NULL, &err);
    rc("map", err);
    if (m)
        clEnqueueUnmapMemObject(q, b, m, 0, NULL, NULL);
    after(b);
}

static void fail_unmap_wrong_pointer(void)
{
    cl_mem b = used();
    cl_int err;
    unsigned char *m = clEnqueueMapBuffer(q, b, CL_TRUE, CL_MAP_READ, 0, BYTES, 0, NULL, NULL, &err);
    rc("map", err);
    unsigned char other[16];
    rc("unmap wrong", clEnqueueUnmapMemObject(q, b, other, 0, NULL, NULL));
    rc("finish", clFinish(q));
    advance(b); /* still mapped: the kernel reads it where the host reads the map */
    rc("finish", clFinish(q));
    if (m) {
        sum("mapped", m, BYTES);
        rc("unmap", clEnqueueUnmapMemObject(q, b, m, 0, NULL, NULL));
    }
    after(b);
}

static void fail_copy_small_source(void)
{
    cl_mem b = used();
    cl_mem c = particles(7.0f);
    cl_mem small = buffer(CL_MEM_READ_WRITE, BYTES / 2, NULL);
    rc("copy from small", clEnqueueCopyBuffer(q, small, b, 0, 0, BYTES, 0, NULL, NULL));
    clReleaseMemObject(small);
    clReleaseMemObject(c);
    after(b);
}

static void fail_copy_overlap(void)
{
    cl_mem b = used();
    rc("copy overlap", clEnqueueCopyBuffer(q, b, b, 0, 0, BYTES, 0, NULL, NULL));
    after(b);
}

static void fail_migrate_flags(void)
{
    cl_mem b = used();
    rc("migrate bad flags",
       clEnqueueMigrateMemObjects(q, 1, &b, CL_MIGRATE_MEM_OBJECT_HOST | CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED | 0x100,
                                  0, NULL, NULL));
    after(b);
}

/* A wait list that holds a NULL event: the real library refuses the command. */
static void fail_write_wait_null(void)
{
    cl_mem b = used();
    particle *h = malloc(BYTES);
    fill(h, N, 4.0f);
    cl_event bad = NULL;
    rc("write", clEnqueueWriteBuffer(q, b, CL_TRUE, 0, BYTES, h, 1, &bad, NULL));
    free(h);
    after(b);
}

static void fail_read_wait_null(void)
{
    cl_mem b = used();
    particle *h = malloc(BYTES);
    memset(h, 0, BYTES);
    cl_event bad = NULL;
    rc("read", clEnqueueReadBuffer(q, b, CL_TRUE, 0, BYTES, h, 1, &bad, NULL));
    free(h);
    after(b);
}

static void fail_read_wait_count(void)
{
    cl_mem b = used();
    particle *h = malloc(BYTES);
    cl_event e;
    rc("marker", clEnqueueMarkerWithWaitList(q, 0, NULL, &e));
    rc("read n=0 list", clEnqueueReadBuffer(q, b, CL_TRUE, 0, BYTES, h, 0, &e, NULL));
    rc("read n=1 NULL", clEnqueueReadBuffer(q, b, CL_TRUE, 0, BYTES, h, 1, NULL, NULL));
    clReleaseEvent(e);
    free(h);
    after(b);
}

static void fail_read_null_queue(void)
{
    cl_mem b = used();
    particle *h = malloc(BYTES);
    rc("read", clEnqueueReadBuffer(NULL, b, CL_TRUE, 0, BYTES, h, 0, NULL, NULL));
    free(h);
    after(b);
}

/* A queue of another context (an application with a context per device, mixing them up). */
static void fail_read_other_context(void)
{
    cl_mem b = used();
    cl_int err;
    cl_context other = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    need("create a second context", err);
    cl_command_queue oq = clCreateCommandQueue(other, dev, 0, &err);
    need("create a queue", err);
    particle *h = malloc(BYTES);
    rc("read on other context's queue", clEnqueueReadBuffer(oq, b, CL_TRUE, 0, BYTES, h, 0, NULL, NULL));
    free(h);
    clReleaseCommandQueue(oq);
    clReleaseContext(other);
    after(b);
}

static void fail_read_null_pointer(void)
{
    cl_mem b = used();
    rc("read NULL", clEnqueueReadBuffer(q, b, CL_TRUE, 0, BYTES, NULL, 0, NULL, NULL));
    after(b);
}

static void fail_read_past_end(void)
{
    cl_mem b = used();
    particle *h = malloc(BYTES + 40);
    rc("read past end", clEnqueueReadBuffer(q, b, CL_TRUE, 40, BYTES, h, 0, NULL, NULL));
    free(h);
    after(b);
}

/* A whole write waiting for a user event that fails: the write never happens. */
static void fail_write_user_event(void)
{
    cl_mem b = used();
    cl_int err;
    cl_event u = clCreateUserEvent(ctx, &err);
    need("create a user event", err);
    particle *h = malloc(BYTES);
    fill(h, N, 4.0f);
    cl_event w;
    rc("finish", clFinish(q));
    rc("write", clEnqueueWriteBuffer(q, b, CL_FALSE, 0, BYTES, h, 1, &u, &w));
    fail_user_event("fail the user event", u);
    rc("wait", clWaitForEvents(1, &w));
    printf("write status negative: %d\n", status_of(w) < 0);
    clReleaseEvent(w);
    clReleaseEvent(u);
    /* h is not freed: a write PoCL runs after all would read memory still ours. */
    /* The in-order queue may now refuse what follows: read on a fresh one. */
    cl_command_queue q2 = clCreateCommandQueue(ctx, dev, 0, &err);
    need("create a queue", err);
    show_on(q2, "after", b, 0, BYTES);
    clReleaseCommandQueue(q2);
    clReleaseMemObject(b);
    finish();
}

/* A blocking map that invalidates the whole buffer, waiting for a user event that fails. */
static void fail_map_user_event(void)
{
    cl_mem b = used();
    cl_int err;
    cl_command_queue q2 = clCreateCommandQueue(ctx, dev, 0, &err);
    need("create a queue", err);
    cl_event u = clCreateUserEvent(ctx, &err);
    need("create a user event", err);
    cl_event m_ev;
    rc("finish", clFinish(q));
    void *m = clEnqueueMapBuffer(q, b, CL_FALSE, CL_MAP_WRITE_INVALIDATE_REGION, 0, BYTES, 1, &u, &m_ev, &err);
    rc("map", err);
    fail_user_event("fail the user event", u);
    rc("wait", clWaitForEvents(1, &m_ev));
    printf("map status negative: %d\n", status_of(m_ev) < 0);
    clReleaseEvent(m_ev);
    clReleaseEvent(u);
    (void)m;
    show_on(q2, "after", b, 0, BYTES);
    clReleaseCommandQueue(q2);
    clReleaseMemObject(b);
    finish();
}

static void fail_read_rect_bad_pitch(void)
{
    cl_mem b = used();
    size_t origin[3] = {0, 0, 0}, region[3] = {200, 10, 1};
    unsigned char h[2000];
    rc("read rect pitch < width",
       clEnqueueReadBufferRect(q, b, CL_TRUE, origin, origin, region, 100, 0, 200, 0, h, 0, NULL, NULL));
    after(b);
}

static void fail_write_rect_past_end(void)
{
    cl_mem b = used();
    size_t borigin[3] = {0, 190, 0}, horigin[3] = {0, 0, 0}, region[3] = {100, 20, 1};
    unsigned char h[2000] = {9};
    rc("write rect past end",
       clEnqueueWriteBufferRect(q, b, CL_TRUE, borigin, horigin, region, 100, 0, 100, 0, h, 0, NULL, NULL));
    after(b);
}

static void fail_copy_rect_overlap(void)
{
    cl_mem b = used();
    size_t so[3] = {0, 0, 0}, dorig[3] = {10, 0, 0}, region[3] = {100, 10, 1};
    rc("copy rect overlap", clEnqueueCopyBufferRect(q, b, b, so, dorig, region, 200, 0, 200, 0, 0, NULL, NULL));
    after(b);
}

static void fail_fill_part_misaligned(void)
{
    cl_mem b = used();
    float f = 1.0f;
    rc("fill offset 2", clEnqueueFillBuffer(q, b, &f, sizeof f, 2, 400, 0, NULL, NULL));
    after(b);
}

static void fail_copy_whole_wait_null(void)
{
    cl_mem b = used();
    cl_mem c = particles(7.0f);
    cl_event bad = NULL;
    rc("copy", clEnqueueCopyBuffer(q, c, b, 0, 0, BYTES, 1, &bad, NULL));
    clReleaseMemObject(c);
    after(b);
}

/* A whole fill waiting for a user event that fails. */
static void fail_fill_user_event(void)
{
    cl_mem b = used();
    cl_event u = clCreateUserEvent(ctx, NULL);
    float f = 2.0f;
    cl_event e;
    rc("finish", clFinish(q));
    rc("fill", clEnqueueFillBuffer(q, b, &f, sizeof f, 0, BYTES, 1, &u, &e));
    fail_user_event("fail the user event", u);
    rc("wait", clWaitForEvents(1, &e));
    clReleaseEvent(e);
    clReleaseEvent(u);
    cl_int err;
    cl_command_queue q2 = clCreateCommandQueue(ctx, dev, 0, &err);
    need("create a queue", err);
    show_on(q2, "after", b, 0, BYTES);
    clReleaseCommandQueue(q2);
    clReleaseMemObject(b);
    finish();
}

static void fail_native_no_list(void)
{
    cl_mem b = used();
    struct native_args na = {NULL, 0};
    rc("native, 1 object and no list", clEnqueueNativeKernel(q, native_func, &na, sizeof na, 1, NULL, NULL, 0, NULL, NULL));
    after(b);
}

static void fail_migrate_null_list(void)
{
    cl_mem b = used();
    rc("migrate NULL list", clEnqueueMigrateMemObjects(q, 1, NULL, CL_MIGRATE_MEM_OBJECT_HOST, 0, NULL, NULL));
    rc("migrate 0 objects", clEnqueueMigrateMemObjects(q, 0, &b, CL_MIGRATE_MEM_OBJECT_HOST, 0, NULL, NULL));
    after(b);
}

/* An unannotated kernel (it wants host layout) launched with a wait list holding NULL. */
static void fail_launch_wait_null(void)
{
    cl_mem b = used();
    cl_uint count = N * 5;
    size_t g = N * 5;
    cl_event bad = NULL;
    clSetKernelArg(k_words, 0, sizeof b, &b);
    clSetKernelArg(k_words, 1, sizeof count, &count);
    rc("words", clEnqueueNDRangeKernel(q, k_words, 1, NULL, &g, NULL, 1, &bad, NULL));
    after(b);
}

static void fail_launch_bad_local(void)
{
    cl_mem b = used();
    cl_uint count = N * 5;
    size_t g = N * 5, l = 7;
    clSetKernelArg(k_words, 0, sizeof b, &b);
    clSetKernelArg(k_words, 1, sizeof count, &count);
    rc("words", clEnqueueNDRangeKernel(q, k_words, 1, NULL, &g, &l, 0, NULL, NULL));
    after(b);
}

/* ---- launches that reach the same kernel other ways ---- */

static void task_launch(void)
{
    cl_mem b = used();
    cl_uint n = N;
    float dt = 0.25f;
    clSetKernelArg(k_advance, 0, sizeof b, &b);
    clSetKernelArg(k_advance, 1, sizeof n, &n);
    clSetKernelArg(k_advance, 2, sizeof dt, &dt);
    rc("task", clEnqueueTask(q, k_advance, 0, NULL, NULL));
    after(b);
}

static void cloned_kernel(void)
{
    cl_mem b = used();
    cl_int err;
    cl_kernel c = clCloneKernel(k_advance, &err);
    rc("clone", err);
    if (c) {
        size_t g = GLOBAL;
        rc("clone launch", clEnqueueNDRangeKernel(q, c, 1, NULL, &g, NULL, 0, NULL, NULL));
        clReleaseKernel(c);
    }
    after(b);
}

static void kernels_in_program(void)
{
    cl_mem b = used();
    cl_kernel ks[8];
    cl_uint n = 0;
    rc("create kernels", clCreateKernelsInProgram(prog, 8, ks, &n));
    printf("kernels %u\n", n);
    for (cl_uint i = 0; i < n; i++) {
        char name[64] = "";
        clGetKernelInfo(ks[i], CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL);
        if (!strcmp(name, "advance")) {
            cl_uint count = N;
            float dt = 0.5f;
            size_t g = GLOBAL;
            clSetKernelArg(ks[i], 0, sizeof b, &b);
            clSetKernelArg(ks[i], 1, sizeof count, &count);
            clSetKernelArg(ks[i], 2, sizeof dt, &dt);
            rc("advance (second kernel object)", clEnqueueNDRangeKernel(q, ks[i], 1, NULL, &g, NULL, 0, NULL, NULL));
        }
        clReleaseKernel(ks[i]);
    }
    after(b);
}

/* The argument switches between two buffers from launch to launch. */
static void argument_switch(void)
{
    cl_mem b = used();
    cl_mem c = particles(2.0f);
    for (int i = 0; i < 3; i++) {
        advance(c);
        advance(b);
    }
    rc("words on c", words_on(q, c, N * 5));
    show("c", c, BYTES);
    clReleaseMemObject(c);
    after(b);
}

/* The application lets go of a buffer right after a launch and makes another (which may get
 * the same handle back). */
static void release_while_queued(void)
{
    cl_mem b = used();
    rc("release", clReleaseMemObject(b));
    cl_mem c = particles(3.0f);
    advance(c);
    after(c);
}

/* CL_MEM_USE_HOST_PTR, and a host that reads its own memory after clFinish without mapping
 * (outside the specification, common in practice; docs/annotations.md names it). */
static void host_pointer_peek(void)
{
    start(0);
    particle *mine = malloc(BYTES);
    fill(mine, N, 1.0f);
    cl_mem b = buffer(CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, BYTES, mine);
    advance(b);
    advance(b);
    rc("finish", clFinish(q));
    sum("host memory", mine, BYTES);
    show("buffer", b, BYTES);
    clReleaseMemObject(b);
    finish();
    free(mine);
}

/* ---- side files (item 15): any case will do, the harness gives it the file ---- */

static void side_file(void)
{
    cl_mem b = used();
    after(b);
}

CASES({"read-partial", read_partial, "auto"}, {"read-nonblocking", read_nonblocking, ""},
      {"read-rect", read_rect, ""}, {"write-partial", write_partial, "auto"},
      {"write-unaligned", write_unaligned, ""}, {"write-whole", write_whole, ""}, {"write-rect", write_rect, ""},
      {"copy-from", copy_from, ""}, {"copy-into-part", copy_into_part, ""},
      {"copy-into-whole", copy_into_whole, ""}, {"copy-within", copy_within, ""}, {"copy-rect", copy_rect, ""},
      {"fill-part", fill_part, ""}, {"fill-whole", fill_whole, ""}, {"map-read", map_read, "auto"},
      {"map-write", map_write, ""}, {"map-read-write", map_read_write, ""},
      {"map-invalidate-part", map_invalidate_part, ""}, {"map-invalidate-whole", map_invalidate_whole, ""},
      {"map-nonblocking", map_nonblocking, ""}, {"map-twice", map_twice, ""}, {"migrate-host", migrate_host, ""},
      {"migrate-device", migrate_device, ""}, {"migrate-undefined", migrate_undefined, ""},
      {"native-read", native_read, ""}, {"native-write", native_write, ""},
      {"fail-write-null", fail_write_null, "auto"}, {"fail-write-null-part", fail_write_null_part, ""},
      {"fail-write-past-end", fail_write_past_end, ""}, {"fail-fill-pattern3", fail_fill_pattern3, ""},
      {"fail-fill-pattern20", fail_fill_pattern20, ""},
      {"fail-fill-size-not-multiple", fail_fill_size_not_multiple, ""},
      {"fail-fill-null-pattern", fail_fill_null_pattern, ""},
      {"fail-map-invalidate-flags", fail_map_invalidate_flags, ""}, {"fail-map-past-end", fail_map_past_end, ""},
      {"fail-unmap-wrong-pointer", fail_unmap_wrong_pointer, ""},
      {"fail-copy-small-source", fail_copy_small_source, ""}, {"fail-copy-overlap", fail_copy_overlap, ""},
      {"fail-migrate-flags", fail_migrate_flags, ""}, {"fail-write-wait-null", fail_write_wait_null, ""},
      {"fail-read-wait-null", fail_read_wait_null, ""}, {"fail-read-wait-count", fail_read_wait_count, ""},
      {"fail-read-null-queue", fail_read_null_queue, ""}, {"fail-read-other-context", fail_read_other_context, ""},
      {"fail-read-null-pointer", fail_read_null_pointer, ""}, {"fail-read-past-end", fail_read_past_end, ""},
      {"fail-write-user-event", fail_write_user_event, ""}, {"fail-map-user-event", fail_map_user_event, ""},
      {"fail-launch-wait-null", fail_launch_wait_null, ""},
      {"fail-read-rect-bad-pitch", fail_read_rect_bad_pitch, ""},
      {"fail-write-rect-past-end", fail_write_rect_past_end, ""},
      {"fail-copy-rect-overlap", fail_copy_rect_overlap, ""},
      {"fail-fill-part-misaligned", fail_fill_part_misaligned, ""},
      {"fail-copy-whole-wait-null", fail_copy_whole_wait_null, ""}, {"fail-fill-user-event", fail_fill_user_event, ""},
      {"fail-native-no-list", fail_native_no_list, ""}, {"fail-migrate-null-list", fail_migrate_null_list, ""}, {"fail-launch-bad-local", fail_launch_bad_local, ""},
      {"task-launch", task_launch, ""}, {"cloned-kernel", cloned_kernel, ""},
      {"kernels-in-program", kernels_in_program, ""}, {"argument-switch", argument_switch, "auto"},
      {"release-while-queued", release_while_queued, ""}, {"host-pointer-peek", host_pointer_peek, ""},
      {"side-dev-zero", side_file, "side=zero ulimit_as=3072 rss=512"},
      {"side-fifo", side_file, "side=fifo timeout=5"}, {"side-directory", side_file, "side=dir"})
