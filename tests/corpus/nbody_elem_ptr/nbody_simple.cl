// Direct-summation N-body in two kernels per time step, the way many course and tutorial codes
// write it: a body structure of scalars, an element pointer for the work-item's own body.
typedef struct {
    float x, y, z, m;
    float vx, vy, vz, pad;
} Body;

__kernel void compute_velocities(__global Body *bodies, const int n, const float dt, const float soft)
{
    const int gid = get_global_id(0);
    if (gid >= n)
        return;
    __global Body *b = bodies + gid;
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    for (int j = 0; j < n; j++) {
        const float dx = bodies[j].x - b->x;
        const float dy = bodies[j].y - b->y;
        const float dz = bodies[j].z - b->z;
        const float r2 = dx * dx + dy * dy + dz * dz + soft;
        const float s = bodies[j].m / (r2 * sqrt(r2));
        ax += dx * s;
        ay += dy * s;
        az += dz * s;
    }
    b->vx += ax * dt;
    b->vy += ay * dt;
    b->vz += az * dt;
}

__kernel void update_positions(__global Body *bodies, const int n, const float dt)
{
    const int gid = get_global_id(0);
    if (gid >= n)
        return;
    __global Body *q = &bodies[gid];
    q->x += q->vx * dt;
    q->y += q->vy * dt;
    q->z += q->vz * dt;
}
