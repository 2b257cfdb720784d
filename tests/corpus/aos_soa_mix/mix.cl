/* Forces kept apart from the particles, as three arrays of n floats in one buffer (the host's
 * SoA force array), the particles as records; spring forces to a moving anchor per particle. */
typedef struct {
    float x, y, z, m;
    float vx, vy, vz, k;
} Spring;

__kernel void spring_forces(__global const Spring *s, __global float *f, const int n, const float t)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const float ax = sin(t + 0.01f * i), ay = cos(t + 0.02f * i), az = 0.0f;
    f[0 * n + i] = -s[i].k * (s[i].x - ax) - 0.1f * s[i].vx;
    f[1 * n + i] = -s[i].k * (s[i].y - ay) - 0.1f * s[i].vy;
    f[2 * n + i] = -s[i].k * (s[i].z - az) - 0.1f * s[i].vz;
}

__kernel void apply_forces(__global Spring *s, __global const float *f, const int n, const float dt)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    s[i].vx += f[i] / s[i].m * dt;
    s[i].vy += f[n + i] / s[i].m * dt;
    s[i].vz += f[2 * n + i] / s[i].m * dt;
    s[i].x += s[i].vx * dt;
    s[i].y += s[i].vy * dt;
    s[i].z += s[i].vz * dt;
}
