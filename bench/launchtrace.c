/* launchtrace: what a kernel's profiled launch time (START to END of its event) says at each
 * point of a run, for the cost model that compares forms timed at different launches. No
 * clayout. Particles' three kernels (samples/particles) on one buffer of N particles, in two
 * layouts on two buffers, AoS (particles_aos.cl) and SoA (particles_soa.cl, standing in for a
 * converted layout), launched in turn on one in-order queue that profiles: ITERS iterations of
 * accelerate, drift, bounce, first in AoS, then in SoA. With ORDER "split" every AoS iteration
 * comes first, then every SoA one (a run that converts after ITERS launches). Prints, per
 * kernel and layout, the device time of launches 1-8 and around launch 30, 100, 300 and the
 * last, in microseconds, and the median of the last half: whether a launch timed early in a
 * run (as the model times them) holds for the run's later launches.
 *
 * Usage: launchtrace [N] [ITERS] [ORDER interleaved|split] [PLATFORM]. Diagnostic for
 * docs/cost-model.md. */
#include "../samples/common/sample.h"

#define NK 3
static const char *names[NK] = {"particles_accelerate", "particles_drift", "particles_bounce"};

static double event_us(cl_event e)
{
    cl_ulong s = 0, t = 0;
    CHECK(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL));
    CHECK(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t, &t, NULL));
    return (double)(t - s) / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 262144;
    int iters = argc > 2 ? atoi(argv[2]) : 1000;
    int split = argc > 3 && strcmp(argv[3], "split") == 0;
    sample_cl s;
    sample_open(&s, argc > 4 ? argv[4] : getenv("SAMPLE_PLATFORM"));
    clReleaseCommandQueue(s.queue);
    cl_int err;
    s.queue = clCreateCommandQueue(s.context, s.device, CL_QUEUE_PROFILING_ENABLE, &err);
    CHECK(err);
    char path[4096];
    cl_kernel k[2][NK];
    const char *layouts[2] = {"aos", "soa"};
    for (int l = 0; l < 2; l++) {
        sample_kernel_path(path, sizeof path, argv[0], getenv("KERNELS") ? getenv("KERNELS") : "samples/particles", "particles", layouts[l]);
        cl_program p = sample_build(&s, path, "");
        for (int j = 0; j < NK; j++) k[l][j] = sample_kernel(p, names[j]);
    }
    size_t bytes = n * 8 * sizeof(float);
    float *host = malloc(bytes);
    uint64_t seed = 7;
    for (size_t i = 0; i < n * 8; i++) host[i] = sample_uniform(&seed, 0.1f, 0.9f);
    cl_float4 attr[16];
    for (int j = 0; j < 16; j++)
        for (int c = 0; c < 4; c++) attr[j].s[c] = sample_uniform(&seed, 0.2f, 0.8f);
    cl_mem buf[2] = {sample_buffer(&s, bytes), sample_buffer(&s, bytes)};
    cl_mem abuf = sample_buffer(&s, sizeof attr);
    for (int l = 0; l < 2; l++) CHECK(clEnqueueWriteBuffer(s.queue, buf[l], CL_TRUE, 0, bytes, host, 0, NULL, NULL));
    CHECK(clEnqueueWriteBuffer(s.queue, abuf, CL_TRUE, 0, sizeof attr, attr, 0, NULL, NULL));
    cl_uint nn = (cl_uint)n, nattr = 16;
    float dt = 0.001f, box = 1.0f, damping = 0.9f;
    for (int l = 0; l < 2; l++) {
        ARG(k[l][0], 0, buf[l]);
        ARG(k[l][0], 1, abuf);
        ARG(k[l][0], 2, nattr);
        ARG(k[l][0], 3, nn);
        ARG(k[l][0], 4, dt);
        ARG(k[l][1], 0, buf[l]);
        ARG(k[l][1], 1, nn);
        ARG(k[l][1], 2, dt);
        ARG(k[l][2], 0, buf[l]);
        ARG(k[l][2], 1, nn);
        ARG(k[l][2], 2, box);
        ARG(k[l][2], 3, damping);
    }
    CHECK(clFinish(s.queue));
    cl_event *ev = malloc(sizeof *ev * 2 * NK * (size_t)iters);
    size_t global = (n + 127) / 128 * 128, local = 128;
    double t0 = sample_now_ms();
    for (int pass = 0; pass < (split ? 2 : 1); pass++)
        for (int it = 0; it < iters; it++)
            for (int l = 0; l < 2; l++) {
                if (split && l != pass) continue;
                for (int j = 0; j < NK; j++)
                    CHECK(clEnqueueNDRangeKernel(s.queue, k[l][j], 1, NULL, &global, &local, 0, NULL,
                                                 &ev[((size_t)it * 2 + l) * NK + j]));
            }
    CHECK(clFinish(s.queue));
    double t1 = sample_now_ms();
    printf("launchtrace: %zu particles, %d iterations, %s, on %s: %.3f ms\n", n, iters, split ? "split" : "interleaved",
           s.device_name, t1 - t0);
    int marks[] = {1, 2, 3, 4, 5, 6, 7, 8, 30, 100, 300, iters};
    double *t = malloc(sizeof *t * (size_t)iters);
    for (int l = 0; l < 2; l++)
        for (int j = 0; j < NK; j++) {
            printf("%s %-22s", layouts[l], names[j]);
            for (int it = 0; it < iters; it++) t[it] = event_us(ev[((size_t)it * 2 + l) * NK + j]);
            for (size_t m = 0; m < sizeof marks / sizeof *marks; m++)
                if (marks[m] <= iters) printf(" %d:%.1f", marks[m], t[marks[m] - 1]);
            qsort(t + iters / 2, (size_t)(iters - iters / 2), sizeof *t, cmp);
            printf(" | median of last half %.2f us\n", t[iters / 2 + (iters - iters / 2) / 2]);
        }
    return 0;
}
