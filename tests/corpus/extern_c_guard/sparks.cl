/* Spark particles of an effects system. The kernels are also compiled as C++ on the host for a
 * reference path, hence the C linkage guard around them. */
#include "sparks_shared.h"

#ifdef __cplusplus
extern "C" {
#endif

__kernel void sparks_update(__global Spark *sparks, const cl_uint count, const cl_float dt)
{
    const cl_uint i = get_global_id(0);
    if (i >= count)
        return;
    sparks[i].vx *= SPARK_DRAG;
    sparks[i].vy = sparks[i].vy * SPARK_DRAG + SPARK_GRAVITY * dt;
    sparks[i].vz *= SPARK_DRAG;
    sparks[i].x += sparks[i].vx * dt;
    sparks[i].y += sparks[i].vy * dt;
    sparks[i].z += sparks[i].vz * dt;
    if (sparks[i].y < 0.0f) {
        sparks[i].y = -sparks[i].y;
        sparks[i].vy = -0.5f * sparks[i].vy;
    }
    sparks[i].heat *= SPARK_COOLING;
    sparks[i].age += dt;
}

#ifdef __cplusplus
}
#endif
