/* loadpar: what loading programs the driver already compiled costs, one after the other and
 * on a thread each. Builds each FILE (its text with OPTIONS) from source and creates its
 * kernels, ROUNDS times: round 0 fills the driver's cache, the later rounds are loads from it,
 * timed in turn sequentially and on one thread per program. Diagnostic for docs/cost-model.md
 * ("The load made whole, and what a declined run forgoes"; "The load weighed run by run, and a
 * smaller conversion program": one file at a time, what a program of N kernels costs to load).
 *   gcc -O2 -o loadpar bench/loadpar.c -lOpenCL -lpthread
 *   ./loadpar NVIDIA ROUNDS "OPTIONS" FILE...   (an OPTIONS of "-" means none) */
#define CL_TARGET_OPENCL_VERSION 120
#include "device.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static cl_context ctx;
static cl_device_id dev;
static const char *opts;
static char *srcs[16];
static double took[16];
static void *load(void *arg) {
    long i = (long)arg;
    double t = bench_now_us();
    cl_int e = bench_load_program(ctx, dev, srcs[i], opts);
    if (e) fprintf(stderr, "build %ld: %d\n", i, e);
    took[i] = (bench_now_us() - t) / 1e3;
    return NULL;
}
int main(int argc, char **argv) {
    if (argc < 5) return 2;
    dev = bench_device(argv[1]);
    int rounds = atoi(argv[2]);
    opts = strcmp(argv[3], "-") ? argv[3] : "";
    int n = argc - 4 > 16 ? 16 : argc - 4;
    for (int i = 0; i < n; i++) {
        FILE *f = fopen(argv[4 + i], "rb");
        srcs[i] = calloc(1 << 22, 1);
        if (!f || fread(srcs[i], 1, (1 << 22) - 1, f) == 0) return 1;
        fclose(f);
    }
    cl_int e;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    for (int round = 0; round < rounds; round++) {
        double t = bench_now_us();
        for (long i = 0; i < n; i++) load((void *)i);
        double seq = (bench_now_us() - t) / 1e3;
        printf("round %d: sequential %.2f ms (", round, seq);
        for (int i = 0; i < n; i++) printf("%s%.2f", i ? " " : "", took[i]);
        t = bench_now_us();
        pthread_t th[16];
        for (long i = 0; i < n; i++) pthread_create(&th[i], NULL, load, (void *)i);
        for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
        printf("), %d threads %.2f ms (", n, (bench_now_us() - t) / 1e3);
        for (int i = 0; i < n; i++) printf("%s%.2f", i ? " " : "", took[i]);
        printf(")\n");
    }
    return 0;
}
