// particles_aos.cl written by hand for ASTA addressing, as the thesis's transformed kernels
// are: the same arithmetic, field k of particle i at its ASTA place. It runs only under clayout,
// which converts the buffer from the host's AoS to ASTA before the first launch (the annotations
// say so) and defines CLAYOUT_TILE, the tile T, when it builds the program.
#pragma OPENCL FP_CONTRACT OFF
#ifndef CLAYOUT_TILE
#error "particles_asta.cl needs CLAYOUT_TILE: run it under clayout (ld_preload/clayout-run)"
#endif

typedef struct {
    float x, y, z;    // position
    float vx, vy, vz; // velocity
    float mass, charge;
} particle_t;

// Word s of structure i of m structures of S words, tile T: full tiles of T structures, each
// S rows of T words, then the last m % T structures as a mini SoA.
#define ASTA(i, s, S, T, m) \
    ((i) < (m) - (m) % (T) ? ((i) / (T) * (S) + (s)) * (T) + (i) % (T) \
                           : ((m) - (m) % (T)) * (S) + (s) * ((m) % (T)) + (i) - ((m) - (m) % (T)))
#define P(s) ((__global float *)p)[ASTA(i, s, 8, CLAYOUT_TILE, n)]

// Attractor j: position attr[j].xyz, strength attr[j].w.
//DL: AoS: p[n] -> ASTA
__kernel void particles_accelerate(__global particle_t *p, __global const float4 *attr, uint nattr, uint n, float dt)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float x = P(0), y = P(1), z = P(2);
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
    float qm = P(7) / P(6) * dt;
    P(3) += ax * qm;
    P(4) += ay * qm;
    P(5) += az * qm;
}

//DL: AoS: p[n] -> ASTA
__kernel void particles_drift(__global particle_t *p, uint n, float dt)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    P(0) += P(3) * dt;
    P(1) += P(4) * dt;
    P(2) += P(5) * dt;
}

// A particle that left the box [-box, box]^3 is mirrored back in, its velocity across that wall
// reversed and damped.
//DL: AoS: p[n] -> ASTA
__kernel void particles_bounce(__global particle_t *p, uint n, float box, float damping)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float x = P(0), vx = P(3);
    if (x > box) { x = 2.0f * box - x; vx = -vx * damping; }
    if (x < -box) { x = -2.0f * box - x; vx = -vx * damping; }
    P(0) = x;
    P(3) = vx;
    float y = P(1), vy = P(4);
    if (y > box) { y = 2.0f * box - y; vy = -vy * damping; }
    if (y < -box) { y = -2.0f * box - y; vy = -vy * damping; }
    P(1) = y;
    P(4) = vy;
    float z = P(2), vz = P(5);
    if (z > box) { z = 2.0f * box - z; vz = -vz * damping; }
    if (z < -box) { z = -2.0f * box - z; vz = -vz * damping; }
    P(2) = z;
    P(5) = vz;
}
