/* Time-step loops, written the way stencil, lattice and benchmark codes write them: two buffers
 * that trade places at every step, launches that ask their event to time themselves, extents
 * and time steps set again before each launch, and the host reaching into the loop now and
 * then (a read, a map, a copy, a fill, a kernel that treats the bytes as floats, a buffer let
 * go and made again). Each loop is long enough that clayout's launches repeat one another and
 * go through its express lanes (docs/cost-model.md, "Loops that swap two buffers", "Launches
 * that ask their event"); every such shortcut must see what the host did in between. */
#include "hostile.h"
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define STEPS 24

static cl_kernel k_gather;

static void start_loops(cl_command_queue_properties props)
{
    start(props);
    k_gather = kernel(prog, "gather");
}

static void finish_loops(void)
{
    clReleaseKernel(k_gather);
    finish();
}

/* One step of a stencil: `own` from its neighbours in `shared`, the extent and the arguments
 * set again every step, as most codes do. */
static cl_int gather_on(cl_command_queue on, cl_kernel k, cl_mem own, cl_mem shared, cl_uint n, cl_uint nev,
                        const cl_event *wait, cl_event *ev)
{
    size_t g = GLOBAL;
    clSetKernelArg(k, 0, sizeof own, &own);
    clSetKernelArg(k, 1, sizeof shared, &shared);
    clSetKernelArg(k, 2, sizeof n, &n);
    return clEnqueueNDRangeKernel(on, k, 1, NULL, &g, NULL, nev, wait, ev);
}

/* The step's launch codes are summed into one line, so that a loop prints a few lines only. */
static void codes(const char *what, const cl_int *r, int count)
{
    long s = 0;
    int bad = 0;
    for (int i = 0; i < count; i++) {
        s += r[i];
        bad += r[i] != CL_SUCCESS;
    }
    printf("%s: %d launches, %d failed, codes sum %ld\n", what, count, bad, s);
}

static void trade(cl_mem *a, cl_mem *b)
{
    cl_mem t = *a;
    *a = *b;
    *b = t;
}

/* The end of a loop over two buffers: its launch codes, what the host sees of each, and the
 * objects let go. */
static void end_two(const cl_int *r, int count, cl_mem a, cl_mem b)
{
    codes("steps", r, count);
    show("a", a, BYTES);
    show("b", b, BYTES);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    finish_loops();
}

/* Two buffers trade places at every step; `between(step, src, dst)` is what the host does
 * after each step. */
static void pingpong(void (*between)(int, cl_mem *, cl_mem *))
{
    start_loops(0);
    cl_mem a = particles(1.0f), b = particles(2.0f);
    cl_int r[STEPS];
    for (int s = 0; s < STEPS; s++) {
        r[s] = gather_on(q, k_gather, b, a, N, 0, NULL, NULL);
        trade(&a, &b);
        if (between)
            between(s, &a, &b);
    }
    end_two(r, STEPS, a, b);
}

static void swap_only(void)
{
    pingpong(NULL);
}

static void read_every_fifth(int s, cl_mem *a, cl_mem *b)
{
    (void)b;
    if (s % 5 == 4)
        show("newest", *a, BYTES);
}

static void swap_read_between(void)
{
    pingpong(read_every_fifth);
}

/* The host scales one member of every structure through a map, mid-loop. */
static void map_write_at_nine(int s, cl_mem *a, cl_mem *b)
{
    (void)b;
    if (s != 9)
        return;
    cl_int err;
    particle *p = clEnqueueMapBuffer(q, *a, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, BYTES, 0, NULL, NULL, &err);
    rc("map", err);
    if (p) {
        for (int i = 0; i < N; i++)
            p[i].x *= 0.5f;
        rc("unmap", clEnqueueUnmapMemObject(q, *a, p, 0, NULL, NULL));
    }
}

static void swap_map_between(void)
{
    pingpong(map_write_at_nine);
}

/* A read that is not waited for until three more steps are enqueued. */
static particle held[N];
static cl_event held_read;

static void read_late(int s, cl_mem *a, cl_mem *b)
{
    (void)b;
    if (s == 7) {
        memset(held, 0xab, sizeof held);
        rc("nonblocking read", clEnqueueReadBuffer(q, *a, CL_FALSE, 0, BYTES, held, 0, NULL, &held_read));
    } else if (s == 10) {
        rc("wait for the read", clWaitForEvents(1, &held_read));
        sum("read at step 7", held, BYTES);
        clReleaseEvent(held_read);
    }
}

static void swap_nonblocking_read(void)
{
    pingpong(read_late);
}

/* A kernel that treats the structures as floats, on one of the two, every sixth step. */
static void words_every_sixth(int s, cl_mem *a, cl_mem *b)
{
    (void)a;
    if (s % 6 == 5)
        rc("words", words_on(q, *b, N * 5));
}

static void swap_words_between(void)
{
    pingpong(words_every_sixth);
}

/* Device-side copies between the two buffers: the whole of one into the other, then a part. */
static void copies(int s, cl_mem *a, cl_mem *b)
{
    if (s == 8)
        rc("copy whole", clEnqueueCopyBuffer(q, *a, *b, 0, 0, BYTES, 0, NULL, NULL));
    if (s == 15)
        rc("copy part",
           clEnqueueCopyBuffer(q, *b, *a, 10 * sizeof(particle), 100 * sizeof(particle), 40 * sizeof(particle), 0,
                               NULL, NULL));
}

static void swap_copy_between(void)
{
    pingpong(copies);
}

static void fill_at_eleven(int s, cl_mem *a, cl_mem *b)
{
    (void)a;
    if (s == 11) {
        float half = 1.5f;
        rc("fill", clEnqueueFillBuffer(q, *b, &half, sizeof half, 10 * sizeof(particle), 20 * sizeof(particle), 0,
                                       NULL, NULL));
    }
}

static void swap_fill_between(void)
{
    pingpong(fill_at_eleven);
}

/* One of the two let go of mid-loop and made again (the handle may come back the same), and
 * a write over the other's first structures. */
static void remake_at_twelve(int s, cl_mem *a, cl_mem *b)
{
    if (s == 12) {
        rc("release", clReleaseMemObject(*b));
        *b = particles(5.0f);
    }
    if (s == 17) {
        particle head[4];
        fill(head, 4, 9.0f);
        rc("write", clEnqueueWriteBuffer(q, *a, CL_TRUE, 0, sizeof head, head, 0, NULL, NULL));
    }
}

static void swap_remake_between(void)
{
    pingpong(remake_at_twelve);
}

/* The extent the annotation reads changes mid-loop (half the structures, then all again),
 * and the time step at every step. */
static void extent_changes(void)
{
    start_loops(0);
    cl_mem a = particles(1.0f), b = particles(2.0f);
    cl_int r[STEPS * 2];
    size_t g = GLOBAL;
    for (int s = 0; s < STEPS; s++) {
        cl_uint n = s >= 10 && s < 18 ? N / 2 : N;
        float dt = 0.01f * (s + 1);
        clSetKernelArg(k_advance, 0, sizeof a, &a);
        clSetKernelArg(k_advance, 1, sizeof n, &n);
        clSetKernelArg(k_advance, 2, sizeof dt, &dt);
        r[2 * s] = clEnqueueNDRangeKernel(q, k_advance, 1, NULL, &g, NULL, 0, NULL, NULL);
        r[2 * s + 1] = gather_on(q, k_gather, b, a, n, 0, NULL, NULL);
        trade(&a, &b);
    }
    end_two(r, STEPS * 2, a, b);
}

/* `pair` on both buffers, their roles traded at every step (both written). */
static void pair_trades(void)
{
    start_loops(0);
    cl_mem a = particles(1.0f), b = particles(2.0f);
    cl_int r[STEPS];
    for (int s = 0; s < STEPS; s++)
        r[s] = s % 2 ? pair_on(q, b, a) : pair_on(q, a, b);
    end_two(r, STEPS, a, b);
}

/* Two kernel objects of one kernel, each bound once to the buffers in one order, launched in
 * turn without any argument set in the loop. */
static void two_kernel_objects(void)
{
    start_loops(0);
    cl_mem a = particles(1.0f), b = particles(2.0f);
    cl_kernel even = kernel(prog, "gather"), odd = kernel(prog, "gather");
    cl_uint n = N;
    clSetKernelArg(even, 0, sizeof b, &b);
    clSetKernelArg(even, 1, sizeof a, &a);
    clSetKernelArg(even, 2, sizeof n, &n);
    clSetKernelArg(odd, 0, sizeof a, &a);
    clSetKernelArg(odd, 1, sizeof b, &b);
    clSetKernelArg(odd, 2, sizeof n, &n);
    cl_int r[STEPS];
    size_t g = GLOBAL;
    for (int s = 0; s < STEPS; s++) {
        r[s] = clEnqueueNDRangeKernel(q, s % 2 ? odd : even, 1, NULL, &g, NULL, 0, NULL, NULL);
        if (s == 13)
            show("mid", a, BYTES);
    }
    clReleaseKernel(even);
    clReleaseKernel(odd);
    end_two(r, STEPS, a, b);
}

/* The kernel object let go of mid-loop and made again from the program; the new one gets its
 * arguments set in the loop as the old one did. */
static void kernel_remade(void)
{
    start_loops(0);
    cl_mem a = particles(1.0f), b = particles(2.0f);
    cl_kernel k = kernel(prog, "gather");
    cl_int r[STEPS];
    for (int s = 0; s < STEPS; s++) {
        if (s == 10) {
            rc("release kernel", clReleaseKernel(k));
            k = kernel(prog, "gather");
        }
        r[s] = gather_on(q, k, b, a, N, 0, NULL, NULL);
        trade(&a, &b);
    }
    clReleaseKernel(k);
    end_two(r, STEPS, a, b);
}

/* A clone made mid-loop, launched for the rest of it with the arguments it was cloned with. */
static void clone_midloop(void)
{
    start_loops(0);
    cl_mem a = particles(1.0f), b = particles(2.0f);
    cl_int r[STEPS];
    cl_kernel c = NULL;
    size_t g = GLOBAL;
    for (int s = 0; s < STEPS; s++) {
        if (s < 8) {
            r[s] = gather_on(q, k_gather, b, a, N, 0, NULL, NULL);
            continue;
        }
        if (s == 8) {
            cl_int err;
            c = clCloneKernel(k_gather, &err);
            rc("clone", err);
        }
        r[s] = c ? clEnqueueNDRangeKernel(q, c, 1, NULL, &g, NULL, 0, NULL, NULL) : CL_SUCCESS;
        if (s == 16)
            rc("advance between", advance_on(q, b, 0, NULL, NULL));
    }
    if (c)
        clReleaseKernel(c);
    end_two(r, STEPS, a, b);
}

/* Every launch asks its event, as codes that time each kernel do: most are let go at once,
 * every third is waited for and its profiling read, every seventh holds back a read on a
 * second queue. */
static void evented(void)
{
    start_loops(CL_QUEUE_PROFILING_ENABLE);
    cl_int err;
    cl_command_queue q2 = clCreateCommandQueue(ctx, dev, 0, &err);
    need("create a second queue", err);
    cl_mem a = particles(1.0f), b = particles(2.0f);
    cl_int r[STEPS];
    int ordered = 0, profiled = 0;
    for (int s = 0; s < STEPS; s++) {
        cl_event e = NULL;
        r[s] = gather_on(q, k_gather, b, a, N, 0, NULL, &e);
        if (r[s] == CL_SUCCESS && s % 3 == 2) {
            rc("wait", clWaitForEvents(1, &e));
            cl_ulong t0 = 0, t1 = 0;
            cl_int p0 = clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
            cl_int p1 = clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
            profiled++;
            ordered += p0 == CL_SUCCESS && p1 == CL_SUCCESS && t1 >= t0;
        }
        if (r[s] == CL_SUCCESS && s % 7 == 6) {
            particle *h = malloc(BYTES);
            memset(h, 0xab, BYTES);
            rc("read on q2", clEnqueueReadBuffer(q2, b, CL_TRUE, 0, BYTES, h, 1, &e, NULL));
            sum("read on q2", h, BYTES);
            free(h);
        }
        if (e)
            clReleaseEvent(e);
        trade(&a, &b);
    }
    printf("profiled %d, %d in order\n", profiled, ordered);
    clReleaseCommandQueue(q2);
    end_two(r, STEPS, a, b);
}

static atomic_int completed;

static void CL_CALLBACK count_completion(cl_event e, cl_int status, void *user)
{
    (void)e;
    (void)user;
    if (status == CL_COMPLETE)
        atomic_fetch_add(&completed, 1);
}

/* Every launch's event gets a completion callback and is let go at once. */
static void evented_callbacks(void)
{
    start_loops(0);
    cl_mem a = particles(1.0f), b = particles(2.0f);
    cl_int r[STEPS];
    int asked = 0;
    for (int s = 0; s < STEPS; s++) {
        cl_event e = NULL;
        r[s] = gather_on(q, k_gather, b, a, N, 0, NULL, &e);
        if (e) {
            asked += clSetEventCallback(e, CL_COMPLETE, count_completion, NULL) == CL_SUCCESS;
            clReleaseEvent(e);
        }
        trade(&a, &b);
    }
    rc("finish", clFinish(q));
    /* A callback may come after clFinish returns (the specification does not order them). */
    for (int i = 0; i < 10000 && atomic_load(&completed) < asked; i++)
        usleep(1000);
    printf("callbacks asked %d, completed %d\n", asked, atomic_load(&completed));
    end_two(r, STEPS, a, b);
}

/* STEPS steps that trade a and b, each waiting for the one before through its event, on
 * `even` and `odd` in turn (their codes in r); the last step's event. */
static cl_event chained_steps(cl_command_queue even, cl_command_queue odd, cl_mem *a, cl_mem *b, cl_int *r)
{
    cl_event last = NULL;
    for (int s = 0; s < STEPS; s++) {
        cl_event e = NULL;
        r[s] = gather_on(s % 2 ? odd : even, k_gather, *b, *a, N, last ? 1 : 0, last ? &last : NULL, &e);
        if (last)
            clReleaseEvent(last);
        last = e;
        trade(a, b);
    }
    return last;
}

/* The steps alternate between two in-order queues, each waiting for the other's last launch. */
static void two_queues(void)
{
    start_loops(0);
    cl_int err;
    cl_command_queue q2 = clCreateCommandQueue(ctx, dev, 0, &err);
    need("create a second queue", err);
    cl_mem a = particles(1.0f), b = particles(2.0f);
    cl_int r[STEPS];
    cl_event last = chained_steps(q, q2, &a, &b, r);
    if (last) {
        rc("wait", clWaitForEvents(1, &last));
        clReleaseEvent(last);
    }
    clReleaseCommandQueue(q2);
    end_two(r, STEPS, a, b);
}

/* An out-of-order queue, each step waiting for the one before through its event. */
static void out_of_order_chain(void)
{
    start_loops(CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    cl_mem a = particles(1.0f), b = particles(2.0f);
    cl_int r[STEPS];
    cl_event last = chained_steps(q, q, &a, &b, r);
    particle *h = malloc(BYTES);
    memset(h, 0xab, BYTES);
    rc("read after the chain", clEnqueueReadBuffer(q, a, CL_TRUE, 0, BYTES, h, last ? 1 : 0, last ? &last : NULL, NULL));
    sum("a", h, BYTES);
    free(h);
    if (last)
        clReleaseEvent(last);
    rc("finish", clFinish(q));
    codes("steps", r, STEPS);
    show("b", b, BYTES);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    finish_loops();
}

/* Two halves of one buffer, as sub-buffers, trade places; the parent is read at the end. */
static void sub_buffer_halves(void)
{
    start_loops(0);
    cl_uint align_bits = 0;
    need("get the base address alignment",
         clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL));
    size_t align = align_bits / 8 ? align_bits / 8 : 1;
    size_t half = (BYTES + align - 1) / align * align;
    particle *h = calloc(1, 2 * half);
    fill(h, N, 1.0f);
    fill((particle *)((char *)h + half), N, 2.0f);
    cl_mem parent = buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 2 * half, h);
    free(h);
    cl_mem sub[2];
    for (int i = 0; i < 2; i++) {
        cl_buffer_region region = {i * half, BYTES};
        cl_int err;
        sub[i] = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
        need("create a sub-buffer", err);
    }
    cl_int r[STEPS];
    for (int s = 0; s < STEPS; s++)
        r[s] = gather_on(q, k_gather, sub[(s + 1) % 2], sub[s % 2], N, 0, NULL, NULL);
    codes("steps", r, STEPS);
    show("parent", parent, 2 * half);
    show("second half", sub[1], BYTES);
    clReleaseMemObject(sub[0]);
    clReleaseMemObject(sub[1]);
    clReleaseMemObject(parent);
    finish_loops();
}

/* Two threads, each with its own kernel object, queue and pair of buffers, both reading one
 * shared buffer at every step. */
struct stepper {
    cl_mem own[2], shared;
    cl_kernel k;
    unsigned long long sum[2];
};

static void *stepper_main(void *arg)
{
    struct stepper *w = arg;
    cl_int err;
    cl_command_queue wq = clCreateCommandQueue(ctx, dev, 0, &err);
    if (err != CL_SUCCESS)
        return NULL;
    for (int s = 0; s < STEPS; s++) {
        gather_on(wq, w->k, w->own[s % 2], w->own[(s + 1) % 2], N, 0, NULL, NULL);
        if (s % 4 == 3)
            gather_on(wq, w->k, w->own[s % 2], w->shared, N, 0, NULL, NULL);
    }
    particle *h = malloc(BYTES);
    for (int i = 0; i < 2; i++) {
        memset(h, 0xab, BYTES);
        clEnqueueReadBuffer(wq, w->own[i], CL_TRUE, 0, BYTES, h, 0, NULL, NULL);
        w->sum[i] = fnv(h, BYTES);
    }
    free(h);
    clReleaseCommandQueue(wq);
    return NULL;
}

static void threads_swap(void)
{
    start_loops(0);
    cl_mem shared = particles(3.0f);
    struct stepper w[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        w[i].k = kernel(prog, "gather");
        w[i].own[0] = particles(1.0f + i);
        w[i].own[1] = particles(4.0f + i);
        w[i].shared = shared;
        w[i].sum[0] = w[i].sum[1] = 0;
        pthread_create(&t[i], NULL, stepper_main, &w[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        printf("thread %d %016llx %016llx\n", i, w[i].sum[0], w[i].sum[1]);
        clReleaseKernel(w[i].k);
        clReleaseMemObject(w[i].own[0]);
        clReleaseMemObject(w[i].own[1]);
    }
    show("shared", shared, BYTES);
    clReleaseMemObject(shared);
    finish_loops();
}

/* A loop whose launches run through the express lanes while a completion callback, on the
 * driver's thread, releases a kernel object of the program and makes it again, and makes and
 * lets go a small buffer (an application that renews its helpers when a step ends): under
 * clayout a kernel's record going, or a buffer's, changes what every lane checks, while the loop's thread may be inside a lane's
 * enqueue. The callback fires at step STEPS of 4 STEPS. */
static struct {
    cl_kernel made;
    cl_event done;
    cl_int code;
} remade;

static void CL_CALLBACK remake_kernel(cl_event e, cl_int status, void *data)
{
    (void)e;
    (void)data;
    usleep(2000);
    clReleaseKernel(remade.made);
    remade.made = clCreateKernel(prog, "advance", &remade.code);
    cl_mem t = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, NULL);
    if (t)
        clReleaseMemObject(t);
    clSetUserEventStatus(remade.done, status == CL_COMPLETE ? CL_COMPLETE : -1);
}

static void callback_remakes_kernel_midloop(void)
{
    start_loops(0);
    remade.made = kernel(prog, "advance");
    cl_int err;
    remade.done = clCreateUserEvent(ctx, &err);
    need("create a user event", err);
    cl_mem a = particles(1.0f), b = particles(2.0f);
    cl_int r[4 * STEPS];
    for (int s = 0; s < 4 * STEPS; s++) {
        cl_event ev = NULL;
        r[s] = gather_on(q, k_gather, b, a, N, 0, NULL, s == STEPS ? &ev : NULL);
        if (ev) {
            rc("callback", clSetEventCallback(ev, CL_COMPLETE, remake_kernel, NULL));
            clReleaseEvent(ev);
            clFlush(q);
        }
        trade(&a, &b);
    }
    rc("wait for the callback", clWaitForEvents(1, &remade.done));
    printf("kernel made again: %d\n", remade.code);
    clReleaseEvent(remade.done);
    clReleaseKernel(remade.made);
    end_two(r, 4 * STEPS, a, b);
}

CASES({"swap-only", swap_only, "auto"},
      {"callback-remakes-kernel-midloop", callback_remakes_kernel_midloop, "auto timeout=20"},
      {"callback-remakes-kernel-midloop-never", callback_remakes_kernel_midloop, "policy=never timeout=20"}, {"swap-only-never", swap_only, "policy=never"},
      {"swap-only-as-written", swap_only, "policy=never env=CLAYOUT_STAGED=0"},
      {"swap-only-runtime", swap_only, "env=CLAYOUT_REWRITE=0"},
      {"swap-read-between", swap_read_between, "auto"}, {"swap-map-between", swap_map_between, "auto"},
      {"swap-map-between-never", swap_map_between, "policy=never"},
      {"swap-nonblocking-read", swap_nonblocking_read, "auto"}, {"swap-words-between", swap_words_between, "auto"},
      {"swap-copy-between", swap_copy_between, "auto"}, {"swap-fill-between", swap_fill_between, "auto"},
      {"swap-remake-between", swap_remake_between, "auto"},
      {"swap-remake-between-never", swap_remake_between, "policy=never"},
      {"extent-changes", extent_changes, "auto"}, {"extent-changes-never", extent_changes, "policy=never"},
      {"pair-trades", pair_trades, "auto"}, {"two-kernel-objects", two_kernel_objects, "auto"},
      {"kernel-remade", kernel_remade, "auto"}, {"clone-midloop", clone_midloop, "auto"},
      {"evented", evented, "auto"}, {"evented-never", evented, "policy=never"},
      {"evented-as-written", evented, "policy=never env=CLAYOUT_STAGED=0"},
      {"evented-callbacks", evented_callbacks, "auto timeout=30"}, {"two-queues", two_queues, "auto"},
      {"out-of-order-chain", out_of_order_chain, "auto"}, {"sub-buffer-halves", sub_buffer_halves, "auto"},
      {"threads-swap", threads_swap, "auto timeout=30"})
