/* Library unit: the physics, compiled on its own and linked into the programs that use it. */
#include "body.h"

float4 accel_on(__global const Body *bodies, int n, int i, float eps2)
{
    const float4 pi = bodies[i].pos;
    float4 a = (float4)(0.0f);
    for (int j = 0; j < n; j++) {
        float4 d = bodies[j].pos - pi;
        const float m = d.w + pi.w; /* d.w = mj - mi */
        d.w = 0.0f;
        const float r2 = dot(d, d) + eps2;
        a += d * (m * rsqrt(r2 * r2 * r2));
    }
    return a;
}

void kick_drift(__global Body *b, float4 a, float dt)
{
    b->vel.xyz += a.xyz * dt;
    b->pos.xyz += b->vel.xyz * dt;
    b->vel.w += dt;
}
