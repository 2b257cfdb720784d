/* Planetary-system integrator in double precision (kick-drift-kick), all pairs. The fp64
 * pragma is guarded the way portable codes guard it. */
#if defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#elif defined(cl_amd_fp64)
#pragma OPENCL EXTENSION cl_amd_fp64 : enable
#else
#error "double precision is required"
#endif

typedef struct {
    double x, y, z, gm;
    double vx, vy, vz, r;
} Planet;

__kernel void kick(__global Planet *p, const int n, const double half_dt)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    double ax = 0.0, ay = 0.0, az = 0.0;
    for (int j = 0; j < n; j++) {
        const double dx = p[j].x - p[i].x, dy = p[j].y - p[i].y, dz = p[j].z - p[i].z;
        const double r2 = dx * dx + dy * dy + dz * dz + p[i].r * p[j].r;
        const double inv = p[j].gm / (r2 * sqrt(r2));
        ax += dx * inv;
        ay += dy * inv;
        az += dz * inv;
    }
    p[i].vx += ax * half_dt;
    p[i].vy += ay * half_dt;
    p[i].vz += az * half_dt;
}

__kernel void drift(__global Planet *p, const int n, const double dt)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    p[i].x += p[i].vx * dt;
    p[i].y += p[i].vy * dt;
    p[i].z += p[i].vz * dt;
}
