/* Smoothed-particle hydrodynamics, all pairs within the smoothing length (a small box, so no
 * cell list): density and pressure, then pressure and viscosity forces, then integration with
 * wall reflection. */
typedef struct {
    float4 pos;
    float4 vel;
    float density;
    float pressure;
    float2 pad;
} FluidParticle;

#define H 0.1f
#define H2 (H * H)
#define MASS 0.02f
#define REST_DENSITY 1000.0f
#define STIFFNESS 2.0f
#define VISCOSITY 0.25f
#define PI_F 3.14159265f

static float poly6(float r2) { const float d = H2 - r2; return 315.0f / (64.0f * PI_F * pown(H, 9)) * d * d * d; }

static float spiky_grad(float r) { const float d = H - r; return -45.0f / (PI_F * pown(H, 6)) * d * d; }

static float visc_lap(float r) { return 45.0f / (PI_F * pown(H, 6)) * (H - r); }

__kernel void sph_density(__global FluidParticle *p, const int n)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const float4 pi = p[i].pos;
    float rho = 0.0f;
    for (int j = 0; j < n; j++) {
        const float4 d = p[j].pos - pi;
        const float r2 = d.x * d.x + d.y * d.y + d.z * d.z;
        if (r2 < H2)
            rho += MASS * poly6(r2);
    }
    p[i].density = rho;
    p[i].pressure = STIFFNESS * (rho - REST_DENSITY);
}

static float4 force_on(__global const FluidParticle *p, const int n, const int i)
{
    float4 f = (float4)(0.0f);
    for (int j = 0; j < n; j++) {
        if (j == i)
            continue;
        float4 d = p[i].pos - p[j].pos;
        d.w = 0.0f;
        const float r = length(d);
        if (r < H && r > 1e-5f) {
            f += d / r * (-MASS * (p[i].pressure + p[j].pressure) / (2.0f * p[j].density) * spiky_grad(r));
            f += VISCOSITY * MASS * (p[j].vel - p[i].vel) / p[j].density * visc_lap(r);
        }
    }
    return f;
}

__kernel void sph_forces(__global const FluidParticle *p, __global float4 *accel, const int n)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    float4 a = force_on(p, n, i) / p[i].density;
    a.y -= 9.81f;
    a.w = 0.0f;
    accel[i] = a;
}

__kernel void sph_integrate(__global FluidParticle *p, __global const float4 *accel, const int n, const float dt)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    float4 v = p[i].vel + accel[i] * dt;
    float4 x = p[i].pos + v * dt;
    if (x.x < 0.0f) { x.x = -x.x; v.x = -0.5f * v.x; }
    if (x.x > 1.0f) { x.x = 2.0f - x.x; v.x = -0.5f * v.x; }
    if (x.y < 0.0f) { x.y = -x.y; v.y = -0.5f * v.y; }
    if (x.z < 0.0f) { x.z = -x.z; v.z = -0.5f * v.z; }
    if (x.z > 1.0f) { x.z = 2.0f - x.z; v.z = -0.5f * v.z; }
    p[i].vel = v;
    p[i].pos = x;
}
