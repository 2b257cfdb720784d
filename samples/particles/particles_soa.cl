// particles_aos.cl's hand-written discrete-array peer: one buffer of 8 arrays of n floats
// (field k of particle i at k*n + i: x, y, z, vx, vy, vz, mass, charge), the layout a programmer
// rewriting the host code for coalescing would choose. Same arithmetic, same order.
#pragma OPENCL FP_CONTRACT OFF

// Attractor j: position attr[j].xyz, strength attr[j].w.
__kernel void particles_accelerate(__global float *p, __global const float4 *attr, uint nattr, uint n, float dt)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float x = p[i], y = p[1 * n + i], z = p[2 * n + i];
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    for (uint j = 0; j < nattr; j++) {
        float4 a = attr[j];
        float dx = a.x - x, dy = a.y - y, dz = a.z - z;
        float r2 = dx * dx + dy * dy + dz * dz + 0.01f;
        float s = a.w / (r2 * sqrt(r2));
        ax += dx * s;
        ay += dy * s;
        az += dz * s;
    }
    float qm = p[7 * n + i] / p[6 * n + i] * dt;
    p[3 * n + i] += ax * qm;
    p[4 * n + i] += ay * qm;
    p[5 * n + i] += az * qm;
}

__kernel void particles_drift(__global float *p, uint n, float dt)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    p[i] += p[3 * n + i] * dt;
    p[1 * n + i] += p[4 * n + i] * dt;
    p[2 * n + i] += p[5 * n + i] * dt;
}

// A particle that left the box [-box, box]^3 is mirrored back in, its velocity across that wall
// reversed and damped.
__kernel void particles_bounce(__global float *p, uint n, float box, float damping)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float x = p[i], vx = p[3 * n + i];
    if (x > box) { x = 2.0f * box - x; vx = -vx * damping; }
    if (x < -box) { x = -2.0f * box - x; vx = -vx * damping; }
    p[i] = x;
    p[3 * n + i] = vx;
    float y = p[1 * n + i], vy = p[4 * n + i];
    if (y > box) { y = 2.0f * box - y; vy = -vy * damping; }
    if (y < -box) { y = -2.0f * box - y; vy = -vy * damping; }
    p[1 * n + i] = y;
    p[4 * n + i] = vy;
    float z = p[2 * n + i], vz = p[5 * n + i];
    if (z > box) { z = 2.0f * box - z; vz = -vz * damping; }
    if (z < -box) { z = -2.0f * box - z; vz = -vz * damping; }
    p[2 * n + i] = z;
    p[5 * n + i] = vz;
}
