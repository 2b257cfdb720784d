/* Radioactive decay chains A -> B -> C (explicit Euler substeps), written CUDA-port style: a
 * fixed number of work-items walks the whole array with a grid-stride loop. The record is four
 * `real`s, `real` a macro. */
#define real float

typedef struct {
    real a, b, c, d;
} V4;

__kernel void decay_chain(__global V4 *q, const uint n, const real la, const real lb, const real dt)
{
    for (uint i = get_global_id(0); i < n; i += get_global_size(0)) {
        real a = q[i].a, b = q[i].b, c = q[i].c;
        for (int s = 0; s < 8; s++) {
            const real da = -la * a, db = la * a - lb * b, dc = lb * b;
            a += da * dt;
            b += db * dt;
            c += dc * dt;
        }
        q[i].a = a;
        q[i].b = b;
        q[i].c = c;
        q[i].d = a + b + c;
    }
}
