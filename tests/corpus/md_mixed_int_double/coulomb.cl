/* Site energies of a charged chain in double precision: each site interacts with the sites
 * within a window along the chain (a banded neighbour structure, as in bonded force fields),
 * screened Coulomb with a cutoff. Sites of type 0 are frozen. */
#if defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#elif defined(cl_amd_fp64)
#pragma OPENCL EXTENSION cl_amd_fp64 : enable
#endif

#define WINDOW 24

typedef struct {
    int type;
    int flags;
    double x, y, z;
    double q;
    double energy;
} Site;

__kernel void site_energy(__global Site *sites, const int n, const double kappa, const double rc2)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    double e = 0.0;
    int close = 0;
    const int lo = max(0, i - WINDOW), hi = min(n - 1, i + WINDOW);
    for (int j = lo; j <= hi; j++) {
        if (j == i)
            continue;
        const double dx = sites[j].x - sites[i].x;
        const double dy = sites[j].y - sites[i].y;
        const double dz = sites[j].z - sites[i].z;
        const double r2 = dx * dx + dy * dy + dz * dz + 0.01;
        if (r2 < rc2) {
            const double r = sqrt(r2);
            e += sites[i].q * sites[j].q * exp(-kappa * r) / r;
            close++;
        }
    }
    sites[i].energy = e;
    sites[i].flags = close;
}

__kernel void relax_sites(__global Site *sites, const int n, const double step)
{
    const int i = get_global_id(0);
    if (i >= n || sites[i].type == 0)
        return;
    /* move against the sign of the energy along a fixed per-site direction */
    const double s = sites[i].energy > 0.0 ? -step : step;
    sites[i].x += s * (double)((i % 3) - 1);
    sites[i].y += s * (double)(((i / 3) % 3) - 1);
    sites[i].z += s * 0.5;
}
