/* A 2-D electrostatic particle-in-cell step on a periodic grid: deposit (integer atomics into
 * a charge grid, fixed point), field update of the node records (two Jacobi sweeps of the
 * potential and the field from it, ping-pong), gather-and-push of the particle records. */
#pragma OPENCL EXTENSION cl_khr_global_int32_base_atomics : enable

typedef struct {
    float x, y, vx, vy;
    float q, m, w;
    int cell;
} Particle;

typedef struct {
    float ex, ey, rho, phi;
} Node;

#define FIX 4096.0f

__kernel void clear_charge(__global int *charge) { charge[get_global_id(0)] = 0; }

__kernel void deposit(__global const Particle *p, const int np, __global int *charge, const int gw, const int gh)
{
    const int i = get_global_id(0);
    if (i >= np)
        return;
    const int cx = (int)floor(p[i].x), cy = (int)floor(p[i].y);
    const int c = ((cy % gh + gh) % gh) * gw + ((cx % gw + gw) % gw);
    atomic_add(&charge[c], (int)(p[i].q * p[i].w * FIX));
}

__kernel void field_update(__global const Node *in, __global Node *out, __global const int *charge, const float eps)
{
    const int x = get_global_id(0), y = get_global_id(1);
    const int gw = get_global_size(0), gh = get_global_size(1);
    const int xl = (x + gw - 1) % gw, xr = (x + 1) % gw, yd = (y + gh - 1) % gh, yu = (y + 1) % gh;
    const int c = y * gw + x;
    const float rho = charge[c] / FIX;
    const float phi = 0.25f * (in[y * gw + xl].phi + in[y * gw + xr].phi + in[yd * gw + x].phi +
                               in[yu * gw + x].phi + rho / eps);
    out[c].rho = rho;
    out[c].phi = 0.99f * phi;
    out[c].ex = -0.5f * (in[y * gw + xr].phi - in[y * gw + xl].phi);
    out[c].ey = -0.5f * (in[yu * gw + x].phi - in[yd * gw + x].phi);
}

__kernel void gather_push(__global Particle *p, const int np, __global const Node *grid, const int gw, const int gh,
                          const float dt)
{
    const int i = get_global_id(0);
    if (i >= np)
        return;
    const float fx = p[i].x - floor(p[i].x), fy = p[i].y - floor(p[i].y);
    const int x0 = ((int)floor(p[i].x) % gw + gw) % gw, y0 = ((int)floor(p[i].y) % gh + gh) % gh;
    const int x1 = (x0 + 1) % gw, y1 = (y0 + 1) % gh;
    const float w00 = (1 - fx) * (1 - fy), w10 = fx * (1 - fy), w01 = (1 - fx) * fy, w11 = fx * fy;
    const float ex = w00 * grid[y0 * gw + x0].ex + w10 * grid[y0 * gw + x1].ex + w01 * grid[y1 * gw + x0].ex +
                     w11 * grid[y1 * gw + x1].ex;
    const float ey = w00 * grid[y0 * gw + x0].ey + w10 * grid[y0 * gw + x1].ey + w01 * grid[y1 * gw + x0].ey +
                     w11 * grid[y1 * gw + x1].ey;
    const float qm = p[i].q / p[i].m;
    p[i].vx += qm * ex * dt;
    p[i].vy += qm * ey * dt;
    float nx = p[i].x + p[i].vx * dt, ny = p[i].y + p[i].vy * dt;
    nx -= gw * floor(nx / gw);
    ny -= gh * floor(ny / gh);
    p[i].x = nx;
    p[i].y = ny;
    p[i].cell = (int)ny * gw + (int)nx;
}
