// The same kernels written for ASTA, as the thesis's transformed kernels are: clayout converts
#pragma OPENCL FP_CONTRACT OFF
// the buffers before they run. CLAYOUT_TILE comes from the build (clayout defines it).
typedef struct {
    float x, y, z, vx, vy;
} particle_t;

// Word s of structure i of m structures of S words, tile T (full tiles, then a mini SoA tail).
#define ASTA(i, s, S, T, m) \
    ((i) < (m) - (m) % (T) ? ((i) / (T) * (S) + (s)) * (T) + (i) % (T) \
                           : ((m) - (m) % (T)) * (S) + (s) * ((m) % (T)) + (i) - ((m) - (m) % (T)))
#define P(s) w[ASTA(i, s, 5, CLAYOUT_TILE, n)]

//DL: AoS: p[n] -> ASTA
__kernel void advance(__global particle_t *p, uint n, float dt)
{
    __global float *w = (__global float *)p;
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float x = P(0), y = P(1), z = P(2), vx = P(3), vy = P(4);
    x += vx * dt;
    y += vy * dt;
    z = z * 0.5f + x * y;
    vx = vx * 0.99f - y * dt;
    vy = vy * 0.99f + x * dt;
    P(0) = x, P(1) = y, P(2) = z, P(3) = vx, P(4) = vy;
}

//DL: AoS: a[n], b[n] -> ASTA
__kernel void exchange(__global particle_t *a, __global particle_t *b, uint n)
{
    __global float *wa = (__global float *)a, *wb = (__global float *)b;
    uint i = get_global_id(0);
    if (i >= n)
        return;
#define A(s) wa[ASTA(i, s, 5, CLAYOUT_TILE, n)]
#define B(s) wb[ASTA(i, s, 5, CLAYOUT_TILE, n)]
    float ax = A(0), ay = A(1), bvx = B(3), bvy = B(4);
    B(0) = ax + B(2);
    B(1) = ay - B(2);
    A(3) = bvx * 0.5f;
    A(4) = bvy * 0.25f;
}

// Not annotated: runs on host-layout data, so clayout converts back before it.
__kernel void scale(__global float *f, uint count, float k)
{
    uint i = get_global_id(0);
    if (i < count)
        f[i] = f[i] * k + (float)(i % 7);
}

//DL: SoA(5): p[n] -> ASTA(16)
__kernel void step_soa(__global float *p, uint n, float dt)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
#define Q(s) p[ASTA(i, s, 5, 16, n)]
    float x = Q(0), y = Q(1), z = Q(2), vx = Q(3), vy = Q(4);
    x += vx * dt;
    y += vy * dt;
    z = z * 0.5f + x * y;
    vx = vx * 0.99f - y * dt;
    vy = vy * 0.99f + x * dt;
    Q(0) = x, Q(1) = y, Q(2) = z, Q(3) = vx, Q(4) = vy;
}

//DL: AoS: own[n], shared[n] -> ASTA
__kernel void accumulate(__global particle_t *own, __global const particle_t *shared, uint n)
{
    __global float *wo = (__global float *)own;
    __global const float *ws = (__global const float *)shared;
    uint i = get_global_id(0);
    if (i >= n)
        return;
    for (int s = 0; s < 5; s++)
        wo[ASTA(i, s, 5, CLAYOUT_TILE, n)] = wo[ASTA(i, s, 5, CLAYOUT_TILE, n)] * 0.5f + ws[ASTA(i, (s + 1) % 5, 5, CLAYOUT_TILE, n)];
}
