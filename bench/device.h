/* The first device of the first OpenCL platform whose name contains `want`, for the bench
 * programs that take a platform substring; NULL when none matches. */
#ifndef CLAYOUT_BENCH_DEVICE_H
#define CLAYOUT_BENCH_DEVICE_H
#include <CL/cl.h>
#include <string.h>

static cl_device_id bench_device(const char *want) {
    cl_platform_id ps[8];
    cl_uint np = 0;
    clGetPlatformIDs(8, ps, &np);
    for (cl_uint i = 0; i < np && i < 8; i++) {
        char name[256];
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        cl_device_id d = NULL;
        if (strstr(name, want) && clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 1, &d, NULL) == CL_SUCCESS) return d;
    }
    return NULL;
}
#endif
