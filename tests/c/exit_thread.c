/* A program whose worker thread makes the OpenCL calls and then ends the process with exit()
 * while the main thread is still blocked: the statistics must still be written. */
#include "common.h"
#include <pthread.h>
#include <unistd.h>

static void *worker(void *arg)
{
    (void)arg;
    cl_platform_id plat;
    cl_uint n = 0;
    CL(clGetPlatformIDs, 1, &plat, &n);
    cl_device_id dev;
    CL(clGetDeviceIDs, plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL);
    cl_int err;
    cl_context ctx = CL(clCreateContext, NULL, 1, &dev, NULL, NULL, &err);
    cl_mem b = CL(clCreateBuffer, ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
    CL(clReleaseMemObject, b);
    CL(clReleaseContext, ctx);
    printf("worker done\n");
    print_counts();
    fflush(stdout);
    exit(0);
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    for (;;)
        pause();
}
