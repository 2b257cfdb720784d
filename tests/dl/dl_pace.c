/* A simulation whose host does its own share of every step, as coupled codes do: after each
 * launch of the device's kernel the host integrates a field of its own (`host_step`) before it
 * enqueues the next, and it waits for the queue once per block of steps. In `host` mode the
 * host's share is the longer one and the device keeps up with it (a faster kernel could not
 * shorten the run); in `device` mode the host has no share and the device falls behind.
 *   dl_pace AOS_KERNELS.cl host|device [N] [STEPS] [BLOCKS] [finish|read]
 * `read` leaves out the clFinish before the first block and after each block's read: the queue
 * is waited for by the end of each block's clFinish and by its blocking read only, as in codes
 * that upload, loop and read back with no clFinish of their own before the loop.
 * Prints the particles' checksum after every block, which the run under clayout must print
 * too. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <math.h>
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

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* The host's part of a step: relaxes its field for about `us` microseconds of its own time. */
static double field[4096];
static void host_step(double us)
{
    double until = now_us() + us;
    do {
        for (int i = 1; i < 4095; i++)
            field[i] = 0.5 * field[i] + 0.25 * (field[i - 1] + field[i + 1]);
    } while (now_us() < until);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: dl_pace AOS_KERNELS.cl host|device [N] [STEPS] [BLOCKS] [finish|read]\n");
        return 2;
    }
    int host = strcmp(argv[2], "host") == 0;
    cl_uint n = argc > 3 ? (cl_uint)atoi(argv[3]) : 4096;
    int steps = argc > 4 ? atoi(argv[4]) : 20;
    int blocks = argc > 5 ? atoi(argv[5]) : 3;
    int finishes = !(argc > 6 && strcmp(argv[6], "read") == 0);
    size_t global = (n + 127) / 128 * 128;
    for (int i = 0; i < 4096; i++)
        field[i] = sin(i * 0.01);

    cl_platform_id plat = pick_platform();
    cl_device_id dev;
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK(err);

    const char *text = read_file(argv[1]);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &text, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
    cl_kernel advance = clCreateKernel(prog, "advance", &err);
    CHECK(err);

    size_t bytes = n * sizeof(particle_t);
    particle_t *h = malloc(bytes);
    for (cl_uint i = 0; i < n; i++)
        h[i] = (particle_t){0.25f * i, 2.0f - 0.125f * i, (float)(i % 7), 0.5f / (i + 1), (float)(i % 3)};
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h, &err);
    CHECK(err);
    float dt = 0.01f;
    CHECK(clSetKernelArg(advance, 0, sizeof buf, &buf));
    CHECK(clSetKernelArg(advance, 1, sizeof n, &n));
    CHECK(clSetKernelArg(advance, 2, sizeof dt, &dt));
    if (finishes)
        CHECK(clFinish(q));

    for (int b = 0; b < blocks; b++) {
        for (int s = 0; s < steps; s++) {
            CHECK(clEnqueueNDRangeKernel(q, advance, 1, NULL, &global, NULL, 0, NULL, NULL));
            if (host)
                host_step(2000.0);
        }
        CHECK(clFinish(q));
        CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
        printf("block %d %016llx\n", b, (unsigned long long)fnv(h, bytes));
        /* The host's field is its own: not part of what the device computed. */
        if (finishes)
            CHECK(clFinish(q));
    }
    CHECK(clReleaseMemObject(buf));
    CHECK(clReleaseKernel(advance));
    CHECK(clReleaseProgram(prog));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    free(h);
    return 0;
}
