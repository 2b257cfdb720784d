/* Ions in a harmonic trap with a velocity-dependent cooling term. The real type is set by the
 * host at build time (-DCL_REAL_T=float -DCL_REAL4_T=float4), as MD codes that switch
 * precision do. */
typedef CL_REAL_T real_t;
typedef CL_REAL4_T real4_t;

typedef struct {
    real4_t pos;
    real4_t vel;
} Ion;

__kernel void trap_step(__global Ion *ions, const int n, const real_t dt, const real_t omega2, const real_t gamma)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    real4_t x = ions[i].pos, v = ions[i].vel;
    const real4_t a = -omega2 * (real4_t)(x.x, x.y, 2.0f * x.z, 0.0f) - gamma * v;
    v += a * dt;
    x += v * dt;
    x.w = ions[i].pos.w;
    v.w = 0.0f;
    ions[i].pos = x;
    ions[i].vel = v;
}
