/* Explicit heat conduction with variable conductivity on a 3-D grid of voxel records, double
 * precision, insulated (clamped) faces. */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

typedef struct {
    double temp;
    double k;      /* conductivity */
    double source; /* heat source */
    double rho_c;  /* heat capacity per volume */
} Voxel;

#define AT(x, y, z) (((z) * ny + (y)) * nx + (x))

__kernel void conduct(__global const Voxel *in, __global Voxel *out, const double dt)
{
    const int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
    const int nx = get_global_size(0), ny = get_global_size(1), nz = get_global_size(2);
    const int c = AT(x, y, z);
    const int nb[6] = { AT(max(x - 1, 0), y, z), AT(min(x + 1, nx - 1), y, z), AT(x, max(y - 1, 0), z),
                        AT(x, min(y + 1, ny - 1), z), AT(x, y, max(z - 1, 0)), AT(x, y, min(z + 1, nz - 1)) };
    double flux = 0.0;
    for (int k = 0; k < 6; k++) {
        const double kf = 2.0 * in[c].k * in[nb[k]].k / (in[c].k + in[nb[k]].k);
        flux += kf * (in[nb[k]].temp - in[c].temp);
    }
    out[c].temp = in[c].temp + dt * (flux + in[c].source) / in[c].rho_c;
    out[c].k = in[c].k;
    out[c].source = in[c].source * 0.99;
    out[c].rho_c = in[c].rho_c;
}
