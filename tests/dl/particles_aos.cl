// The application's kernels, written for its array of structures.
#pragma OPENCL FP_CONTRACT OFF
typedef struct {
    float x, y, z, vx, vy;
} particle_t;

__kernel void advance(__global particle_t *p, uint n, float dt)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    particle_t q = p[i];
    q.x += q.vx * dt;
    q.y += q.vy * dt;
    q.z = q.z * 0.5f + q.x * q.y;
    q.vx = q.vx * 0.99f - q.y * dt;
    q.vy = q.vy * 0.99f + q.x * dt;
    p[i] = q;
}

// Two structure arrays at once: b takes a's positions, a takes b's velocities.
__kernel void exchange(__global particle_t *a, __global particle_t *b, uint n)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float ax = a[i].x, ay = a[i].y, bvx = b[i].vx, bvy = b[i].vy;
    b[i].x = ax + b[i].z;
    b[i].y = ay - b[i].z;
    a[i].vx = bvx * 0.5f;
    a[i].vy = bvy * 0.25f;
}

// Treats the buffer as plain floats: the position of every word matters.
__kernel void scale(__global float *f, uint count, float k)
{
    uint i = get_global_id(0);
    if (i < count)
        f[i] = f[i] * k + (float)(i % 7);
}

// The same advance, for the host program that keeps five discrete arrays in one buffer.
__kernel void step_soa(__global float *p, uint n, float dt)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float x = p[i], y = p[n + i], z = p[2 * n + i], vx = p[3 * n + i], vy = p[4 * n + i];
    x += vx * dt;
    y += vy * dt;
    z = z * 0.5f + x * y;
    vx = vx * 0.99f - y * dt;
    vy = vy * 0.99f + x * dt;
    p[i] = x, p[n + i] = y, p[2 * n + i] = z, p[3 * n + i] = vx, p[4 * n + i] = vy;
}

// Each thread's own particles take in the shared ones (read only), word by word.
__kernel void accumulate(__global particle_t *own, __global const particle_t *shared, uint n)
{
    __global float *wo = (__global float *)own;
    __global const float *ws = (__global const float *)(n ? shared : own);
    uint i = get_global_id(0);
    if (i >= n)
        return;
    for (int s = 0; s < 5; s++)
        wo[i * 5 + s] = wo[i * 5 + s] * 0.5f + ws[i * 5 + (s + 1) % 5];
}

// Each thread's own particles pull from the shared ones through the structure: rewritten by
// the transparent mode, so the shared buffer goes to the tiled layout for this kernel and back to the host
// layout for `accumulate` (written against floats), while other threads use it.
__kernel void gather(__global particle_t *own, __global const particle_t *shared, uint n)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    own[i].vx += shared[i].x * 0.25f - shared[(i + 1) % n].vy * 0.125f;
    own[i].z -= shared[i].z * 0.0625f;
}
