#ifdef __cplusplus
extern "C" {
#endif
#include "h1.h"
#define IDX(i, k) ((i) * S + (k))
#if defined(cl_khr_fp64) && __OPENCL_C_VERSION__ >= CL_VERSION_1_2
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
//DL: p : S=4
__kernel void k(__global real *p, int n) {
    int gid = get_global_id(0);
    p += OFFSET;
#pragma unroll UNROLL
    for (int k = 0; k < S; k++) p[IDX(gid, k)] *= 2.0f; /*DL: note */
}
#ifdef __cplusplus
}
#endif
