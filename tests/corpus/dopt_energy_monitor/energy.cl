/* A particle system whose host prints the kinetic energy every step: a reduction kernel writes
 * one partial sum per work-group (read back each step), a kick kernel applies a central force.
 * Build options pick the code paths: -DUSE_LOCAL (tree reduction in local memory, else one
 * work-item sums its group serially), -DWG=<work-group size>, -DUSE_FMA. */
#ifndef WG
#error "build with -DWG=<work-group size>"
#endif

typedef struct {
    float x, y, z, mass;
    float vx, vy, vz, charge;
} Particle;

#ifdef USE_FMA
#define MADD(a, b, c) fma((a), (b), (c))
#else
#define MADD(a, b, c) ((a) * (b) + (c))
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void kinetic_energy(__global const Particle *p, __global float *partial, const int n)
{
    const int i = get_global_id(0), lid = get_local_id(0);
    const float e = i < n ? 0.5f * p[i].mass * MADD(p[i].vx, p[i].vx, MADD(p[i].vy, p[i].vy, p[i].vz * p[i].vz)) : 0.0f;
#ifdef USE_LOCAL
    __local float sums[WG];
    sums[lid] = e;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s)
            sums[lid] += sums[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = sums[0];
#else
    __local float sums[WG];
    sums[lid] = e;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        float s = 0.0f;
        for (int k = 0; k < WG; k++)
            s += sums[k];
        partial[get_group_id(0)] = s;
    }
#endif
}

__kernel void central_kick(__global Particle *p, const int n, const float dt)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const float r2 = MADD(p[i].x, p[i].x, MADD(p[i].y, p[i].y, p[i].z * p[i].z)) + 0.05f;
    const float f = -p[i].charge / (r2 * sqrt(r2));
    p[i].vx = MADD(f * p[i].x, dt, p[i].vx);
    p[i].vy = MADD(f * p[i].y, dt, p[i].vy);
    p[i].vz = MADD(f * p[i].z, dt, p[i].vz);
    p[i].x = MADD(p[i].vx, dt, p[i].x);
    p[i].y = MADD(p[i].vy, dt, p[i].y);
    p[i].z = MADD(p[i].vz, dt, p[i].z);
}
