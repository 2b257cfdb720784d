/* Does a process exit cleanly while another of its threads is inside clBuildProgram?
 * The main thread makes a context, starts a thread that builds a large program on it (or on
 * a context of its own), waits DELAY_US and returns from main without joining it.
 *   exitbuild PLATFORM_SUBSTRING DELAY_US [own|shared|released]   (exit status 0 expected) */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include "device.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static cl_context shared_ctx;
static cl_device_id dev;
static int own;

static void *builder(void *arg) {
    (void)arg;
    cl_int err;
    cl_context ctx = own ? clCreateContext(NULL, 1, &dev, NULL, NULL, &err) : shared_ctx;
    size_t cap = 1 << 20, len = 0;
    char *src = malloc(cap);
    for (int k = 0; k < 60; k++)
        len += snprintf(src + len, cap - len,
                        "__kernel void k%d(__global float *p, uint n) { uint i = get_global_id(0);"
                        " float a = p[i]; for (uint j = 0; j < n; j++) { a = a * 1.0001f + sin(a) * %d.0f; }"
                        " p[i] = a; }\n", k, k + 1);
    const char *s = src;
    for (;;) {
        cl_program p = clCreateProgramWithSource(ctx, 1, &s, &len, &err);
        clBuildProgram(p, 1, &dev, "", NULL, NULL);
        clReleaseProgram(p);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    const char *mode = argc > 3 ? argv[3] : "shared";
    own = strcmp(mode, "own") == 0;
    dev = bench_device(argv[1]);
    if (!dev) return 3;
    cl_int err;
    shared_ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    pthread_t t;
    pthread_create(&t, NULL, builder, NULL);
    usleep(atoi(argv[2]));
    if (strcmp(mode, "released") == 0) clReleaseContext(shared_ctx);
    return 0;
}
