/* firstlaunch: what the OpenCL driver charges the first launch of a kernel after other work
 * in the same context, without clayout. It runs the blackscholes sample's AoS kernel over
 * N options twice (each launch timed from enqueue to clFinish) after doing, before the first
 * launch, what clayout does after a build, one piece at a time:
 *
 *   -   nothing
 *   p   build a second program (the same source plus a probe kernel), create its kernel,
 *       release both without launching
 *   P   the same, and run the probe kernel once on a queue of its own (clayout's structure
 *       probe, src/runtime/probe.rs)
 *   u   the same as P, but on the application's queue
 *   q   only create and release a second queue
 *   k   as P, but keep the second program and its kernel alive until exit
 *   K   as p, but keep the second program and its kernel alive until exit
 *   C   as k, then also build a third program (one empty kernel) and keep it, unlaunched
 *   s   (with any of the above) sleep 0.3 s before the first launch: whatever clayout's own
 *       thread does after the build is done by then
 *
 * Usage: firstlaunch MODE [N] [PLATFORM]   (run it a few times per mode: process start-up
 * varies). Prints "MODE first_ms second_ms enqueue first_ms second_ms" (each launch from
 * enqueue to clFinish, then the enqueue call alone), then "faults A B": the page faults each
 * enqueue call took on the calling thread. FIRSTLAUNCH_COLD=n adds n launches, each after 0.1 s
 * asleep (the CPU's caches gone cold, as after a blocking transfer), and prints the median time
 * of their enqueue call (FIRSTLAUNCH_SPIN=us: busy that long after waking first;
 * FIRSTLAUNCH_EVENT=1: each of these launches asks for an event, released after clFinish).
 * FIRSTLAUNCH_LOOP=n: n more launches, clFinish every 64, and the wall time per launch
 * (with FIRSTLAUNCH_EVENT=1 each asks for an event, released at once). FIRSTLAUNCH_PAIRED=n:
 * n pairs of blocks of 64 launch calls, one through the linked symbol, one through the loader's
 * own, and the median difference (what an intercepting library adds to a launch call);
 * FIRSTLAUNCH_SETARGS=1: each launch first sets its four arguments again, to the values they
 * have (as programs that set every argument before every launch do), through the same side;
 * FIRSTLAUNCH_SETARGS=2: and the second argument to another value at every launch (a time
 * step), which no extent reads; FIRSTLAUNCH_SETARGS=3: and the first argument to one of two
 * buffers of the same options in turn (a loop that swaps its source and destination grids,
 * as stencils and lattice codes do). With FIRSTLAUNCH_EVENT=1 each launch of the pairs asks
 * for its event, released at once through the same side (as codes that time every kernel by
 * its event do). FIRSTLAUNCH_COPY=file.cl (run without clayout): the pairs'
 * first side launches, through the loader's symbol too, the kernel FIRSTLAUNCH_COPY_KERNEL
 * (default black_scholes__clayout_asta) of that source (a copy clayout wrote to its
 * CLAYOUT_DUMP_DIR), with the same arguments and the element count as a fifth, ulong one: what
 * the driver's own call costs more for the copy than for the kernel as written.
 * Diagnostic for docs/results.md. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/resource.h>
#include <unistd.h>
#include "../samples/common/sample.h"

static const char *probe_src =
    "\n__kernel void clayout_probe_sizes(__global ulong *out) { out[0] = sizeof(option_t); }\n";

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "-";
    size_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 33554432;
    sample_cl s;
    sample_open(&s, argc > 3 ? argv[3] : getenv("SAMPLE_PLATFORM"));
    char path[4096];
    sample_kernel_path(path, sizeof path, argv[0], "samples/blackscholes", "blackscholes", "aos");
    cl_program prog = sample_build(&s, path, "");
    cl_kernel k = sample_kernel(prog, "black_scholes");
    cl_int err;
    size_t bytes = n * 20;
    float *host = malloc(bytes);
    for (size_t i = 0; i < n * 5; i++) host[i] = 1.0f + (float)(i % 97) * 0.01f;
    cl_mem buf = clCreateBuffer(s.context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CHECK(err);
    CHECK(clEnqueueWriteBuffer(s.queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
    float r = 0.02f, v = 0.3f;
    cl_uint nn = (cl_uint)n;
    CHECK(clSetKernelArg(k, 0, sizeof buf, &buf));
    CHECK(clSetKernelArg(k, 1, sizeof r, &r));
    CHECK(clSetKernelArg(k, 2, sizeof v, &v));
    CHECK(clSetKernelArg(k, 3, sizeof nn, &nn));

    cl_program p2 = NULL;
    cl_kernel k2 = NULL;
    if (strpbrk(mode, "pPukKC")) {
        char *src = sample_read_file(path);
        const char *parts[2] = {src, probe_src};
        p2 = clCreateProgramWithSource(s.context, 2, parts, NULL, &err);
        CHECK(err);
        CHECK(clBuildProgram(p2, 1, &s.device, "", NULL, NULL));
        k2 = clCreateKernel(p2, "clayout_probe_sizes", &err);
        CHECK(err);
        free(src);
        if (strpbrk(mode, "PukC")) {
            cl_mem out = clCreateBuffer(s.context, CL_MEM_WRITE_ONLY, 8, NULL, &err);
            CHECK(err);
            cl_command_queue q = s.queue;
            if (!strchr(mode, 'u')) {
                q = clCreateCommandQueue(s.context, s.device, 0, &err);
                CHECK(err);
            }
            CHECK(clSetKernelArg(k2, 0, sizeof out, &out));
            size_t one = 1;
            CHECK(clEnqueueNDRangeKernel(q, k2, 1, NULL, &one, &one, 0, NULL, NULL));
            cl_ulong size = 0;
            CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, 8, &size, 0, NULL, NULL));
            if (q != s.queue) clReleaseCommandQueue(q);
            clReleaseMemObject(out);
        }
        if (!strpbrk(mode, "kKC")) {
            clReleaseKernel(k2);
            clReleaseProgram(p2);
        }
    }
    cl_program p3 = NULL;
    if (strchr(mode, 'C')) {
        const char *empty = "__kernel void clayout_empty(__global uint *p) { if (p[0] == 12345u) p[1] = 0; }\n";
        p3 = clCreateProgramWithSource(s.context, 1, &empty, NULL, &err);
        CHECK(err);
        CHECK(clBuildProgram(p3, 1, &s.device, "", NULL, NULL));
        cl_kernel k3 = clCreateKernel(p3, "clayout_empty", &err);
        CHECK(err);
        clReleaseKernel(k3);
    }
    if (strchr(mode, 'q')) {
        cl_command_queue q = clCreateCommandQueue(s.context, s.device, 0, &err);
        CHECK(err);
        clReleaseCommandQueue(q);
    }

    size_t local = 128, global = (n + local - 1) / local * local;
    double ms[2], enq[2];
    long faults[2];
    CHECK(clFinish(s.queue));
    if (strchr(mode, 's')) usleep(300000);
    for (int it = 0; it < 2; it++) {
        struct rusage ru0, ru1;
        getrusage(RUSAGE_THREAD, &ru0);
        double t0 = sample_now_ms();
        CHECK(clEnqueueNDRangeKernel(s.queue, k, 1, NULL, &global, &local, 0, NULL, NULL));
        enq[it] = sample_now_ms() - t0;
        getrusage(RUSAGE_THREAD, &ru1);
        faults[it] = ru1.ru_minflt - ru0.ru_minflt + ru1.ru_majflt - ru0.ru_majflt;
        CHECK(clFinish(s.queue));
        ms[it] = sample_now_ms() - t0;
    }
    printf("%s %.3f %.3f enqueue %.3f %.3f faults %ld %ld\n", mode, ms[0], ms[1], enq[0], enq[1],
           faults[0], faults[1]);
    /* FIRSTLAUNCH_COLD=n: n more launches, each after 0.1 s asleep (caches gone cold) */
    int cold = getenv("FIRSTLAUNCH_COLD") ? atoi(getenv("FIRSTLAUNCH_COLD")) : 0;
    if (cold) {
        double *e = malloc(cold * sizeof *e);
        for (int it = 0; it < cold; it++) {
            usleep(100000);
            /* FIRSTLAUNCH_SPIN=us: busy for that long after waking, before the launch */
            if (getenv("FIRSTLAUNCH_SPIN")) {
                double until = sample_now_ms() + atof(getenv("FIRSTLAUNCH_SPIN")) / 1000.0;
                while (sample_now_ms() < until) {}
            }
            cl_event ev = NULL;
            double t0 = sample_now_ms();
            CHECK(clEnqueueNDRangeKernel(s.queue, k, 1, NULL, &global, &local, 0, NULL,
                                         getenv("FIRSTLAUNCH_EVENT") ? &ev : NULL));
            e[it] = sample_now_ms() - t0;
            CHECK(clFinish(s.queue));
            if (ev) clReleaseEvent(ev);
        }
        for (int a = 1; a < cold; a++)
            for (int b = a; b > 0 && e[b - 1] > e[b]; b--) { double t = e[b]; e[b] = e[b - 1]; e[b - 1] = t; }
        printf("cold: enqueue median %.3f ms, min %.3f\n", e[cold / 2], e[0]);
        free(e);
    }
    /* FIRSTLAUNCH_LOOP=n: n more launches, for a profile of the steady state */
    int loops = getenv("FIRSTLAUNCH_LOOP") ? atoi(getenv("FIRSTLAUNCH_LOOP")) : 0;
    int loop_event = getenv("FIRSTLAUNCH_EVENT") && atoi(getenv("FIRSTLAUNCH_EVENT"));
    double t0 = sample_now_ms();
    for (int it = 0; it < loops; it++) {
        cl_event ev = NULL;
        CHECK(clEnqueueNDRangeKernel(s.queue, k, 1, NULL, &global, &local, 0, NULL, loop_event ? &ev : NULL));
        if (ev) clReleaseEvent(ev);
        if (it % 64 == 63) CHECK(clFinish(s.queue));
    }
    CHECK(clFinish(s.queue));
    if (loops) printf("loop: %.2f us per launch\n", (sample_now_ms() - t0) * 1e3 / loops);
    /* FIRSTLAUNCH_PAIRED=n: n pairs of blocks of 64 launches, one block through the symbol the
     * program links (clayout's, under LD_PRELOAD) and one through the loader's own (dlsym on
     * its handle, which a preloaded library does not shadow), in alternating order, clFinish
     * after each block. Only the launch calls are timed. The median of the pairs' difference
     * is what the intercepting library adds to a launch, with the host's drift (its clock,
     * other tenants) the same on both sides of each pair. The loader's launches bypass
     * clayout: use it where the buffers stay in host layout (CLAYOUT_POLICY=never). */
    int pairs = getenv("FIRSTLAUNCH_PAIRED") ? atoi(getenv("FIRSTLAUNCH_PAIRED")) : 0;
    if (pairs > 0) {
        void *loader = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_NOLOAD);
        typedef cl_int (*launch_fn)(cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *,
                                    const size_t *, cl_uint, const cl_event *, cl_event *);
        launch_fn direct = loader ? (launch_fn)dlsym(loader, "clEnqueueNDRangeKernel") : NULL;
        typedef cl_int (*set_fn)(cl_kernel, cl_uint, size_t, const void *);
        set_fn direct_set = loader ? (set_fn)dlsym(loader, "clSetKernelArg") : NULL;
        typedef cl_int (*release_fn)(cl_event);
        release_fn direct_release = loader ? (release_fn)dlsym(loader, "clReleaseEvent") : NULL;
        int with_event = getenv("FIRSTLAUNCH_EVENT") && atoi(getenv("FIRSTLAUNCH_EVENT"));
        int setargs = getenv("FIRSTLAUNCH_SETARGS") ? atoi(getenv("FIRSTLAUNCH_SETARGS")) : 0;
        cl_mem pair[2] = {buf, buf};
        if (setargs == 3) {
            pair[1] = clCreateBuffer(s.context, CL_MEM_READ_WRITE, bytes, NULL, &err);
            CHECK(err);
            CHECK(clEnqueueWriteBuffer(s.queue, pair[1], CL_TRUE, 0, bytes, host, 0, NULL, NULL));
        }
        cl_kernel kc = NULL;
        if (getenv("FIRSTLAUNCH_COPY")) {
            cl_program pc = sample_build(&s, getenv("FIRSTLAUNCH_COPY"), "-D CLAYOUT_TILE=32");
            const char *name = getenv("FIRSTLAUNCH_COPY_KERNEL");
            kc = sample_kernel(pc, name ? name : "black_scholes__clayout_asta");
            cl_ulong m = n;
            CHECK(clSetKernelArg(kc, 0, sizeof buf, &buf));
            CHECK(clSetKernelArg(kc, 1, sizeof r, &r));
            CHECK(clSetKernelArg(kc, 2, sizeof v, &v));
            CHECK(clSetKernelArg(kc, 3, sizeof nn, &nn));
            CHECK(clSetKernelArg(kc, 4, sizeof m, &m));
        }
        if (!direct || !direct_set || !direct_release) {
            printf("paired: no loader symbol\n");
        } else {
            double *d = malloc(pairs * sizeof *d), *via = malloc(pairs * sizeof *via), *own = malloc(pairs * sizeof *own);
            for (int p = 0; p < pairs; p++) {
                double t[2];
                for (int h = 0; h < 2; h++) {
                    int through_loader = (h + p) % 2;
                    double sum = 0;
                    for (int i = 0; i < 64; i++) {
                        double a = sample_now_ms();
                        if (setargs) {
                            set_fn set = through_loader ? direct_set : clSetKernelArg;
                            CHECK(set(k, 0, sizeof buf, &pair[i & 1]));
                            float step = setargs == 2 ? r * (1.0f + 0.001f * (float)(i % 7)) : r;
                            CHECK(set(k, 1, sizeof step, &step));
                            CHECK(set(k, 2, sizeof v, &v));
                            CHECK(set(k, 3, sizeof nn, &nn));
                        }
                        launch_fn launch = through_loader || kc ? direct : clEnqueueNDRangeKernel;
                        cl_event e = NULL;
                        CHECK(launch(s.queue, kc && !through_loader ? kc : k, 1, NULL, &global, &local, 0, NULL,
                                     with_event ? &e : NULL));
                        if (e)
                            CHECK((through_loader ? direct_release : clReleaseEvent)(e));
                        sum += sample_now_ms() - a;
                    }
                    CHECK(clFinish(s.queue));
                    t[through_loader] = sum * 1e3 / 64;
                }
                via[p] = t[0];
                own[p] = t[1];
                d[p] = t[0] - t[1];
            }
            double *all[3] = {d, via, own};
            for (int w = 0; w < 3; w++)
                for (int a = 1; a < pairs; a++)
                    for (int b = a; b > 0 && all[w][b - 1] > all[w][b]; b--) {
                        double x = all[w][b]; all[w][b] = all[w][b - 1]; all[w][b - 1] = x;
                    }
            printf("paired: %d pairs of 64 launch calls, medians: linked %.3f us, loader %.3f us, added %.3f us (quartiles %.3f %.3f)\n",
                   pairs, via[pairs / 2], own[pairs / 2], d[pairs / 2], d[pairs / 4], d[3 * pairs / 4]);
            free(d); free(via); free(own);
        }
        if (pair[1] != buf) clReleaseMemObject(pair[1]);
    }
    clReleaseMemObject(buf);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    sample_release(&s);
    free(host);
    return 0;
}
