/* parbuild: whether a driver compiles programs built from several threads at once. Builds N
 * programs from one source (each with its own -D, so that none is a cached build; run with the
 * driver's cache off), one after the other and then on N threads at once, three rounds, and
 * prints both times. Diagnostic for docs/cost-model.md ("The pieces of the copies, built on
 * several threads").
 *   gcc -O2 -o parbuild bench/parbuild.c -lOpenCL -lpthread
 *   CUDA_CACHE_DISABLE=1 ./parbuild NVIDIA samples/lbm/lbm_aos.cl 3 */
#define CL_TARGET_OPENCL_VERSION 120
#include "device.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static cl_context ctx; static cl_device_id dev; static char *src; static int salt;
static void *build(void *arg) {
    long i = (long)arg; char opt[64]; snprintf(opt, sizeof opt, "-D CLAYOUT_SALT=%d", salt * 100 + (int)i);
    cl_int e; const char *s = src; cl_program p = clCreateProgramWithSource(ctx, 1, &s, NULL, &e);
    e = clBuildProgram(p, 1, &dev, opt, NULL, NULL); if (e) fprintf(stderr, "build %d\n", e);
    clReleaseProgram(p); return NULL;
}
int main(int argc, char **argv) {
    dev = bench_device(argv[1]); FILE *f = fopen(argv[2], "rb"); src = calloc(1 << 22, 1); if (!f || fread(src, 1, (1 << 22) - 1, f) == 0) return 1;
    int n = atoi(argv[3]); cl_int e; ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    for (int round = 0; round < 3; round++) {
        salt = round * 2 + 1; double t = bench_now_us();
        for (long i = 0; i < n; i++) build((void *)i);
        double seq = bench_now_us() - t; salt = round * 2 + 2; t = bench_now_us();
        pthread_t th[16]; for (long i = 0; i < n; i++) pthread_create(&th[i], NULL, build, (void *)i);
        for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
        printf("%s x%d: sequential %.0f ms, %d threads %.0f ms\n", argv[2], n, seq / 1e3, n, (bench_now_us() - t) / 1e3);
    }
    return 0;
}
