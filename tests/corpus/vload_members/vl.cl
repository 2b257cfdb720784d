/* Particle records read and written with vloadn/vstoren: as a flat float array of PART_FSIZE
 * words per particle (position, velocity, mass, radius), and as a structure whose members are
 * float arrays handed to vload3/vstore3. */
#define PART_FSIZE 8

typedef struct {
    float pos[3];
    float vel[3];
    float mass, radius;
} Part;

__kernel void gravity_flat(__global float *part_data, const int n, const float dt)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    __global float *p = part_data + i * PART_FSIZE;
    float4 a = vload4(0, p); /* x y z vx */
    float4 b = vload4(1, p); /* vy vz mass radius */
    b.x -= 9.81f * dt;
    a.xyz += (float3)(a.w, b.x, b.y) * dt;
    if (a.y < b.w) {
        a.y = b.w;
        b.x = -0.8f * b.x;
    }
    vstore4(a, 0, p);
    vstore4(b, 1, p);
}

__kernel void drag_struct(__global Part *parts, const int n, const float k)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    float3 v = vload3(0, parts[i].vel);
    const float3 x = vload3(0, parts[i].pos);
    v -= k * v * length(v) / parts[i].mass;
    vstore3(v, 0, parts[i].vel);
    vstore3(x + 0.001f * v, 0, parts[i].pos);
}
