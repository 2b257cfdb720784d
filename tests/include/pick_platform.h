/* The platform the test programs run on: the first one whose name contains $CL_PLATFORM_NAME,
 * or the first one when it is unset (PoCL on CI; "NVIDIA" on the GPU machine, which lists
 * both). */
#ifndef PICK_PLATFORM_H
#define PICK_PLATFORM_H
#include <stdlib.h>
#include <string.h>

static cl_platform_id pick_platform(void)
{
    cl_platform_id ps[16];
    cl_uint n = 0;
    if (clGetPlatformIDs(16, ps, &n) != CL_SUCCESS || n == 0)
        return NULL;
    const char *want = getenv("CL_PLATFORM_NAME");
    for (cl_uint i = 0; want && *want && i < n; i++) {
        char name[256] = "";
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (strstr(name, want))
            return ps[i];
    }
    return ps[0];
}
#endif
