// Charged particles in a box under a fixed set of attractors, three kernels per time step on the
// one array of particle structures the host keeps: accelerate (the attractors' field changes the
// velocities), drift (the velocities move the positions), bounce (the walls of the box reflect
// and damp).
#pragma OPENCL FP_CONTRACT OFF

typedef struct {
    float x, y, z;    // position
    float vx, vy, vz; // velocity
    float mass, charge;
} particle_t;

// Attractor j: position attr[j].xyz, strength attr[j].w.
__kernel void particles_accelerate(__global particle_t *p, __global const float4 *attr, uint nattr, uint n, float dt)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float x = p[i].x, y = p[i].y, z = p[i].z;
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
    float qm = p[i].charge / p[i].mass * dt;
    p[i].vx += ax * qm;
    p[i].vy += ay * qm;
    p[i].vz += az * qm;
}

__kernel void particles_drift(__global particle_t *p, uint n, float dt)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    p[i].x += p[i].vx * dt;
    p[i].y += p[i].vy * dt;
    p[i].z += p[i].vz * dt;
}

// A particle that left the box [-box, box]^3 is mirrored back in, its velocity across that wall
// reversed and damped.
__kernel void particles_bounce(__global particle_t *p, uint n, float box, float damping)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float x = p[i].x, vx = p[i].vx;
    if (x > box) { x = 2.0f * box - x; vx = -vx * damping; }
    if (x < -box) { x = -2.0f * box - x; vx = -vx * damping; }
    p[i].x = x;
    p[i].vx = vx;
    float y = p[i].y, vy = p[i].vy;
    if (y > box) { y = 2.0f * box - y; vy = -vy * damping; }
    if (y < -box) { y = -2.0f * box - y; vy = -vy * damping; }
    p[i].y = y;
    p[i].vy = vy;
    float z = p[i].z, vz = p[i].vz;
    if (z > box) { z = 2.0f * box - z; vz = -vz * damping; }
    if (z < -box) { z = -2.0f * box - z; vz = -vz * damping; }
    p[i].z = z;
    p[i].vz = vz;
}
