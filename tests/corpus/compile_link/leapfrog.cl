/* Kernel unit: one leapfrog step per launch, through the library's functions, from one body
 * array into the other. */
#include "body.h"

__kernel void leapfrog(__global const Body *in, __global Body *out, const int n, const float dt, const float eps2)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const float4 a = accel_on(in, n, i, eps2);
    out[i] = in[i];
    kick_drift(&out[i], a, dt);
}
