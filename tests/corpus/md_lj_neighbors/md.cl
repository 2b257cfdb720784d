/* Lennard-Jones molecular dynamics with a precomputed neighbour list (stored column-major,
 * neighbour j of atom i at j * inum + i), velocity Verlet, precision picked by -D options. */
#ifdef SINGLE_PRECISION
#define POSVECTYPE float4
#define FORCEVECTYPE float4
#define FPTYPE float
#elif defined(K_DOUBLE_PRECISION)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define POSVECTYPE double4
#define FORCEVECTYPE double4
#define FPTYPE double
#endif

typedef struct {
    POSVECTYPE pos;
    POSVECTYPE vel;
    FORCEVECTYPE force;
} Atom;

/* Puts atom i on a cubic lattice of spacing `a` (keeping its random jitter in pos). */
__kernel void place_on_lattice(__global Atom *atoms, const int side, const FPTYPE a)
{
    const int i = get_global_id(0);
    const int x = i % side, y = (i / side) % side, z = i / (side * side);
    atoms[i].pos.x = a * x + 0.05f * atoms[i].pos.x;
    atoms[i].pos.y = a * y + 0.05f * atoms[i].pos.y;
    atoms[i].pos.z = a * z + 0.05f * atoms[i].pos.z;
    atoms[i].force = (FORCEVECTYPE)(0.0f);
}

__kernel void compute_lj_force(__global Atom *atoms, __global const int *neighList, const int neighCount,
                               const FPTYPE cutsq, const FPTYPE lj1, const FPTYPE lj2, const int inum)
{
    const int idx = get_global_id(0);
    const POSVECTYPE ipos = atoms[idx].pos;
    FORCEVECTYPE f = (FORCEVECTYPE)(0.0f);
    for (int j = 0; j < neighCount; j++) {
        const int jidx = neighList[j * inum + idx];
        const POSVECTYPE jpos = atoms[jidx].pos;
        const FPTYPE delx = ipos.x - jpos.x;
        const FPTYPE dely = ipos.y - jpos.y;
        const FPTYPE delz = ipos.z - jpos.z;
        FPTYPE r2inv = delx * delx + dely * dely + delz * delz;
        if (r2inv < cutsq && r2inv > 0.64f) {
            r2inv = 1.0f / r2inv;
            const FPTYPE r6inv = r2inv * r2inv * r2inv;
            const FPTYPE forceC = r2inv * r6inv * (lj1 * r6inv - lj2);
            f.x += delx * forceC;
            f.y += dely * forceC;
            f.z += delz * forceC;
        }
    }
    atoms[idx].force = f;
}

__kernel void verlet(__global Atom *atoms, const FPTYPE dt, const FPTYPE inv_mass)
{
    const int i = get_global_id(0);
    atoms[i].vel.xyz += atoms[i].force.xyz * (dt * inv_mass);
    atoms[i].pos.xyz += atoms[i].vel.xyz * dt;
}
