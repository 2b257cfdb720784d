/* Ions in a Paul trap, advanced with a kick-drift split. Like the rest of this code base's kernel
 * files it opens with the prototypes of the kernels it defines out of order, and it keeps a
 * debug variant of the energy kernel that the host selects with -D TRAP_DEBUG. */
#define TRAP_K 0.8f
#define TRAP_DAMP 0.999f

typedef struct {
    float x, y, z, q;
    float vx, vy, vz, m;
} Ion;

__kernel void trap_kick(__global Ion *ions, const uint n, const float dt);
__kernel void trap_zero(__global float *e, const uint n);

/* Potential energy of a unit charge at (x, y, z): shared by the kick and the diagnostics. */
float trap_potential(float x, float y, float z)
{
    return 0.5f * TRAP_K * (x * x + y * y + z * z);
}

__kernel void trap_drift(__global Ion *ions, const uint n, const float dt)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    ions[i].x += ions[i].vx * dt;
    ions[i].y += ions[i].vy * dt;
    ions[i].z += ions[i].vz * dt;
}

__kernel void trap_kick(__global Ion *ions, const uint n, const float dt)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float s = ions[i].q / ions[i].m * TRAP_K * dt;
    ions[i].vx = (ions[i].vx - s * ions[i].x) * TRAP_DAMP;
    ions[i].vy = (ions[i].vy - s * ions[i].y) * TRAP_DAMP;
    ions[i].vz = (ions[i].vz - 2.0f * s * ions[i].z) * TRAP_DAMP;
}

#ifdef TRAP_DEBUG
__kernel void trap_energy(__global const Ion *ions, __global float *e, const uint n)
{
    const uint i = get_global_id(0);
    if (i < n)
        e[i] = ions[i].q;
}
#else
__kernel void trap_energy(__global const Ion *ions, __global float *e, const uint n)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float v2 = ions[i].vx * ions[i].vx + ions[i].vy * ions[i].vy + ions[i].vz * ions[i].vz;
    e[i] += ions[i].q * trap_potential(ions[i].x, ions[i].y, ions[i].z) + 0.5f * ions[i].m * v2;
}
#endif

__kernel void trap_zero(__global float *e, const uint n)
{
    const uint i = get_global_id(0);
#pragma unroll 1
    for (uint k = 0; k < 1; k++)
        if (i < n)
            e[i] = 0.0f;
}

/* Clears the energies before a sample: the clearing kernel called as a function. */
__kernel void trap_reset(__global float *e, const uint n)
{
    trap_zero(e, n);
}
