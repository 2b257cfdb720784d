/* Damped, driven oscillators integrated with semi-implicit Euler. The precision is picked at
 * build time the way older codes do it: a `real` macro. */
#ifdef USE_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define real double
#define R(x) x
#else
#define real float
#define R(x) x##f
#endif

typedef struct {
    real x, y;     /* position */
    real vx, vy;   /* velocity */
    real k, c;     /* stiffness, damping */
    real m, e;     /* mass, accumulated energy */
} Osc;

__kernel void oscillate(__global Osc *o, const int n, const real dt, const real t0, const int substeps)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    real t = t0;
    for (int s = 0; s < substeps; s++) {
        const real drive = R(0.1) * sin(R(3.0) * t + (real)i * R(0.001));
        const real ax = (-o[i].k * o[i].x - o[i].c * o[i].vx + drive) / o[i].m;
        const real ay = (-o[i].k * o[i].y - o[i].c * o[i].vy) / o[i].m;
        o[i].vx += ax * dt;
        o[i].vy += ay * dt;
        o[i].x += o[i].vx * dt;
        o[i].y += o[i].vy * dt;
        t += dt;
    }
    o[i].e = R(0.5) * o[i].m * (o[i].vx * o[i].vx + o[i].vy * o[i].vy)
           + R(0.5) * o[i].k * (o[i].x * o[i].x + o[i].y * o[i].y);
}
