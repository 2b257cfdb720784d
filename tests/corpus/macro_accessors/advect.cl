/* Tracers advected through an analytic vortex field (midpoint rule), then aged; tracers past
 * their life are re-seeded near the origin. */
#include "tracer_access.h"

float3 field(float x, float y, float z)
{
    return (float3)(-y - 0.1f * x, x - 0.1f * y, 0.2f * sin(x + y) - 0.05f * z);
}

__kernel void advect(__global Tracer *tr, const int n, const float dt)
{
    const int i = GID;
    if (i >= n)
        return;
    const float3 k1 = field(POS_X(tr, i), POS_Y(tr, i), POS_Z(tr, i));
    const float3 mid = (float3)(POS_X(tr, i), POS_Y(tr, i), POS_Z(tr, i)) + 0.5f * dt * k1;
    const float3 k2 = field(mid.x, mid.y, mid.z);
    POS_X(tr, i) += dt * k2.x;
    POS_Y(tr, i) += dt * k2.y;
    POS_Z(tr, i) += dt * k2.z;
    VEL(tr, i, x) = k2.x;
    VEL(tr, i, y) = k2.y;
    VEL(tr, i, z) = k2.z;
}

__kernel void age_and_reseed(__global float *words, const int n, const float dt)
{
    const int i = GID;
    if (i >= n)
        return;
    WORD(words, i, W_AGE) += dt;
    if (WORD(words, i, W_AGE) > WORD(words, i, W_LIFE)) {
        WORD(words, i, W_AGE) = 0.0f;
        WORD(words, i, 0) = 0.01f * (float)(i % 7);
        WORD(words, i, 1) = 0.01f * (float)(i % 5);
        WORD(words, i, 2) = 0.0f;
    }
}
