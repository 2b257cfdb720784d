/* kernelwarm: what the first launch of a kernel costs when its program was built after the
 * application's own launches (as clayout builds its copies and conversion kernels), and what
 * takes that cost away. No clayout. A program "app" runs a kernel over N floats (its first
 * launch paid); then a second program "late" is built with kernels k1, k2 (the same body) and
 * an empty kernel, and before timing, according to MODE:
 *
 *   -   nothing
 *   e   the empty kernel launched once on a queue of its own (finished)
 *   s   k1 launched once on a queue of its own, over 32 floats of a scratch buffer (finished)
 *   q   k1 launched once on the application's queue over the scratch buffer (finished)
 *
 * Then, on the application's queue, each enqueue to clFinish (ms) and its enqueue call alone:
 * app (a warm launch), k1 first, k1 second, k2 first (the sibling never launched); then
 * "busy": 20 launches of app left running and a third kernel k3's first launch behind them,
 * its enqueue call alone (does a first launch wait for the device to drain?) and the time to
 * clFinish. Prints one line: MODE app k1 k1again k2 | enqueue: app k1 k1again k2 | busy: call
 * finish (20 app launches alone: ms).
 *
 * Usage: kernelwarm MODE [N] [PLATFORM]. Diagnostic for docs/results.md. */
#include "../samples/common/sample.h"

static const char *app_src = "__kernel void app(__global float *a, uint n) {\n"
                             "  uint i = get_global_id(0); if (i < n) a[i] = a[i] * 1.0001f + 1.0f; }\n";
static const char *late_src =
    "__kernel void k1(__global float *a, uint n) { uint i = get_global_id(0); if (i < n) a[i] = a[i] * 0.9999f + 2.0f; }\n"
    "__kernel void k2(__global float *a, uint n) { uint i = get_global_id(0); if (i < n) a[i] = a[i] * 0.9998f + 3.0f; }\n"
    "__kernel void k3(__global float *a, uint n) { uint i = get_global_id(0); if (i < n) a[i] = a[i] * 0.9997f + 4.0f; }\n"
    "__kernel void empty(void) { }\n";

static cl_program build(sample_cl *s, const char *src)
{
    cl_int err;
    cl_program p = clCreateProgramWithSource(s->context, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(p, 1, &s->device, "", NULL, NULL));
    return p;
}

static void launch(cl_command_queue q, cl_kernel k, cl_mem m, cl_uint n, double *call_ms)
{
    ARG(k, 0, m);
    ARG(k, 1, n);
    size_t local = 256, global = (n + 255) / 256 * 256;
    double t = sample_now_ms();
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL));
    if (call_ms) *call_ms = sample_now_ms() - t;
}

/* One launch on the application's queue, enqueue to clFinish; `call`: the enqueue alone. */
static double timed(sample_cl *s, cl_kernel k, cl_mem m, cl_uint n, double *call)
{
    double t = sample_now_ms();
    launch(s->queue, k, m, n, call);
    CHECK(clFinish(s->queue));
    return sample_now_ms() - t;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "-";
    cl_uint n = argc > 2 ? (cl_uint)strtoul(argv[2], NULL, 10) : 2048000;
    sample_cl s;
    sample_open(&s, argc > 3 ? argv[3] : getenv("SAMPLE_PLATFORM"));
    cl_int err;
    cl_mem buf = sample_buffer(&s, (size_t)n * 4), scratch = sample_buffer(&s, 32 * 4);
    float *host = calloc(n, 4);
    CHECK(clEnqueueWriteBuffer(s.queue, buf, CL_TRUE, 0, (size_t)n * 4, host, 0, NULL, NULL));
    CHECK(clEnqueueWriteBuffer(s.queue, scratch, CL_TRUE, 0, 32 * 4, host, 0, NULL, NULL));
    cl_program pa = build(&s, app_src);
    cl_kernel app = sample_kernel(pa, "app");
    timed(&s, app, buf, n, NULL);
    timed(&s, app, buf, n, NULL);
    cl_program pl = build(&s, late_src);
    cl_kernel k1 = sample_kernel(pl, "k1"), k2 = sample_kernel(pl, "k2"), k3 = sample_kernel(pl, "k3");
    cl_kernel empty = sample_kernel(pl, "empty");
    cl_command_queue own = clCreateCommandQueue(s.context, s.device, 0, &err);
    CHECK(err);
    if (strchr(mode, 'e')) {
        size_t one = 1;
        CHECK(clEnqueueNDRangeKernel(own, empty, 1, NULL, &one, NULL, 0, NULL, NULL));
        CHECK(clFinish(own));
    }
    if (strchr(mode, 's')) {
        launch(own, k1, scratch, 32, NULL);
        CHECK(clFinish(own));
    }
    if (strchr(mode, 'q')) {
        launch(s.queue, k1, scratch, 32, NULL);
        CHECK(clFinish(s.queue));
    }
    double c[4], t[4];
    t[0] = timed(&s, app, buf, n, &c[0]);
    t[1] = timed(&s, k1, buf, n, &c[1]);
    t[2] = timed(&s, k1, buf, n, &c[2]);
    t[3] = timed(&s, k2, buf, n, &c[3]);
    double b0 = sample_now_ms();
    for (int i = 0; i < 20; i++) launch(s.queue, app, buf, n, NULL);
    CHECK(clFinish(s.queue));
    double busy = sample_now_ms() - b0, call;
    b0 = sample_now_ms();
    for (int i = 0; i < 20; i++) launch(s.queue, app, buf, n, NULL);
    launch(s.queue, k3, buf, n, &call);
    CHECK(clFinish(s.queue));
    double fin = sample_now_ms() - b0;
    printf("%s %.3f %.3f %.3f %.3f | enqueue: %.3f %.3f %.3f %.3f | busy: %.3f %.3f (20 app launches %.3f)\n", mode,
           t[0], t[1], t[2], t[3], c[0], c[1], c[2], c[3], call, fin, busy);
    clReleaseCommandQueue(own);
    sample_release(&s);
    return 0;
}
