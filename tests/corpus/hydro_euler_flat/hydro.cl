/* 1-D compressible Euler equations, first-order finite volumes with the Rusanov flux, double
 * precision. The conserved variables of a cell are NVAR consecutive doubles of a flat array;
 * the helpers take a pointer to a cell's first word. */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

typedef double real_t;

#define NVAR 5
#define ID 0 /* density */
#define IU 1 /* momentum x */
#define IV 2 /* momentum y (passive) */
#define IW 3 /* momentum z (passive) */
#define IE 4 /* total energy */
#define GAMMA 1.4

static real_t pressure(__global const real_t *q)
{
    const real_t ke = 0.5 * (q[IU] * q[IU] + q[IV] * q[IV] + q[IW] * q[IW]) / q[ID];
    return (GAMMA - 1.0) * (q[IE] - ke);
}

static real_t sound_speed(__global const real_t *q)
{
    return sqrt(GAMMA * fmax(pressure(q), 1e-12) / q[ID]) + fabs(q[IU] / q[ID]);
}

/* physical flux of cell q, component k */
static real_t flux_k(__global const real_t *q, int k)
{
    const real_t u = q[IU] / q[ID];
    const real_t p = pressure(q);
    switch (k) {
    case ID: return q[IU];
    case IU: return q[IU] * u + p;
    case IE: return (q[IE] + p) * u;
    default: return q[k] * u;
    }
}

/* Interface i+1/2 between cells i and i+1 (clamped at the right end). */
__kernel void rusanov_flux(__global const real_t *u, __global real_t *flux, const int ncell)
{
    const int i = get_global_id(0);
    if (i >= ncell)
        return;
    __global const real_t *ql = u + i * NVAR;
    __global const real_t *qr = u + min(i + 1, ncell - 1) * NVAR;
    const real_t smax = fmax(sound_speed(ql), sound_speed(qr));
    for (int k = 0; k < NVAR; k++)
        flux[i * NVAR + k] = 0.5 * (flux_k(ql, k) + flux_k(qr, k)) - 0.5 * smax * (qr[k] - ql[k]);
}

__kernel void conservative_update(__global real_t *u, __global const real_t *flux, const int ncell, const real_t dtdx)
{
    const int i = get_global_id(0);
    if (i == 0 || i >= ncell - 1)
        return;
    for (int k = 0; k < NVAR; k++)
        u[i * NVAR + k] -= dtdx * (flux[i * NVAR + k] - flux[(i - 1) * NVAR + k]);
}
