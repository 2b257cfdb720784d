/* Black-Scholes option pricing, the way a legacy OpenCL code keeps its data: an array of
 * option structures (5 floats) filled on the host, priced on the device, read back.
 *   blackscholes [-n OPTIONS] [-i ITERATIONS] [--platform NAME] [--soa | --asta] [--kernels DIR]
 * --soa runs the hand-written discrete-array peer (one buffer per field) instead; --asta runs
 * the kernel written by hand for ASTA addressing (blackscholes_asta.cl), which works only under
 * clayout: clayout converts the AoS buffer to ASTA before the first launch and back for the read.
 * Prints a checksum of the results (equal checksums = identical bits), the kernel time (the
 * iteration loop, between clFinish calls) and the total time (writes, loop and reads). */
#include "../common/sample.h"

typedef struct {
    float spot, strike, years, call, put;
} option_t;

int main(int argc, char **argv)
{
    size_t n = 1 << 20;
    int iters = 10, soa = 0, asta = 0;
    const char *platform = getenv("SAMPLE_PLATFORM"), *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-i") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--platform") && i + 1 < argc) platform = argv[++i];
        else if (!strcmp(argv[i], "--kernels") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--soa")) soa = 1;
        else if (!strcmp(argv[i], "--asta")) asta = 1;
        else { fprintf(stderr, "usage: %s [-n OPTIONS] [-i ITERATIONS] [--platform NAME] [--soa | --asta] [--kernels DIR]\n", argv[0]); return 2; }
    }
    if (soa && asta) { fprintf(stderr, "--soa and --asta exclude each other\n"); return 2; }
    const char *variant = soa ? "soa" : asta ? "asta" : "aos";
    char path[4096];
    /* Kernels live beside the program: found from argv[0] unless --kernels says where. */
    sample_kernel_path(path, sizeof path, argv[0], dir, "blackscholes", variant);

    option_t *opt = malloc(n * sizeof *opt);
    uint64_t seed = 42;
    for (size_t i = 0; i < n; i++) {
        opt[i].spot = sample_uniform(&seed, 5.0f, 30.0f);
        opt[i].strike = sample_uniform(&seed, 1.0f, 100.0f);
        opt[i].years = sample_uniform(&seed, 0.25f, 10.0f);
        opt[i].call = opt[i].put = 0.0f;
    }

    sample_cl s;
    sample_open(&s, platform);
    cl_program prog = sample_build(&s, path, "-cl-fast-relaxed-math");
    cl_int err;
    cl_kernel k = clCreateKernel(prog, "black_scholes", &err);
    CHECK(err);
    float r = 0.02f, v = 0.30f;
    cl_uint nn = (cl_uint)n;
    cl_mem bufs[5];
    int nbufs = soa ? 5 : 1;
    /* The SoA peer keeps its fields apart on the host too: split them before the clock starts. */
    float *fields = NULL;
    if (soa) {
        fields = malloc(5 * n * sizeof(float));
        for (int f = 0; f < 5; f++)
            for (size_t i = 0; i < n; i++) fields[f * n + i] = ((float *)&opt[i])[f];
    }
    double t0 = sample_now_ms();
    if (soa) {
        for (int f = 0; f < 5; f++) {
            bufs[f] = clCreateBuffer(s.context, CL_MEM_READ_WRITE, n * sizeof(float), NULL, &err);
            CHECK(err);
            CHECK(clEnqueueWriteBuffer(s.queue, bufs[f], CL_TRUE, 0, n * sizeof(float), fields + f * n, 0, NULL, NULL));
            CHECK(clSetKernelArg(k, f, sizeof(cl_mem), &bufs[f]));
        }
        CHECK(clSetKernelArg(k, 5, sizeof r, &r));
        CHECK(clSetKernelArg(k, 6, sizeof v, &v));
        CHECK(clSetKernelArg(k, 7, sizeof nn, &nn));
    } else {
        bufs[0] = clCreateBuffer(s.context, CL_MEM_READ_WRITE, n * sizeof *opt, NULL, &err);
        CHECK(err);
        CHECK(clEnqueueWriteBuffer(s.queue, bufs[0], CL_TRUE, 0, n * sizeof *opt, opt, 0, NULL, NULL));
        CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &bufs[0]));
        CHECK(clSetKernelArg(k, 1, sizeof r, &r));
        CHECK(clSetKernelArg(k, 2, sizeof v, &v));
        CHECK(clSetKernelArg(k, 3, sizeof nn, &nn));
    }
    size_t local = 128, global = (n + local - 1) / local * local;
    CHECK(clFinish(s.queue));
    double tk = sample_now_ms();
    for (int it = 0; it < iters; it++)
        CHECK(clEnqueueNDRangeKernel(s.queue, k, 1, NULL, &global, &local, 0, NULL, NULL));
    CHECK(clFinish(s.queue));
    double t1 = sample_now_ms();

    if (soa) {
        for (int f = 0; f < 5; f++)
            CHECK(clEnqueueReadBuffer(s.queue, bufs[f], CL_TRUE, 0, n * sizeof(float), fields + f * n, 0, NULL, NULL));
    } else {
        CHECK(clEnqueueReadBuffer(s.queue, bufs[0], CL_TRUE, 0, n * sizeof *opt, opt, 0, NULL, NULL));
    }
    double t2 = sample_now_ms();
    if (soa) {
        for (int f = 0; f < 5; f++)
            for (size_t i = 0; i < n; i++) ((float *)&opt[i])[f] = fields[f * n + i];
        free(fields);
    }

    uint64_t h = sample_fnv(opt, n * sizeof *opt, SAMPLE_FNV_INIT);
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += opt[i].call + opt[i].put;
    printf("blackscholes %s: %zu options, %d iterations on %s\n", variant, n, iters, s.device_name);
    printf("checksum: %016llx (sum of prices %.6e)\n", (unsigned long long)h, sum);
    printf("kernel_ms: %.3f\n", t1 - tk);
    printf("total_ms: %.3f\n", t2 - t0);

    for (int f = 0; f < nbufs; f++) clReleaseMemObject(bufs[f]);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(s.queue);
    clReleaseContext(s.context);
    free(opt);
    return 0;
}
