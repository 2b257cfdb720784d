/* Charged particles in a uniform magnetic field (Boris push) with float3 members: each float3
 * takes the room of a float4, so the structure is 12 words with padding. */
typedef struct {
    float3 pos;
    float3 vel;
    float mass;
    float charge;
} Particle;

__kernel void boris_push(__global Particle *ps, const uint n, const float dt, const float bz, const float ex)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float qm = ps[i].charge / ps[i].mass;
    const float3 e = (float3)(ex, 0.0f, 0.0f);
    float3 v = ps[i].vel + 0.5f * dt * qm * e;
    const float3 t = (float3)(0.0f, 0.0f, 0.5f * dt * qm * bz);
    const float3 s = 2.0f * t / (1.0f + dot(t, t));
    const float3 vp = v + cross(v, t);
    v += cross(vp, s);
    v += 0.5f * dt * qm * e;
    ps[i].vel = v;
    ps[i].pos += v * dt;
}

__kernel void periodic_wrap(__global Particle *ps, const uint n, const float box)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    float3 p = ps[i].pos;
    p = p - box * floor(p / box);
    ps[i].pos = p;
}
