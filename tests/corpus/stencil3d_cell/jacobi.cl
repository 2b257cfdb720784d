/* Weighted Jacobi sweeps of a coupled 3-D diffusion system: four fields per cell, each relaxed
 * towards the average of its six neighbours plus a source, with the other fields coupled in. */
#include "grid3d.h"

typedef struct {
    float u, v, w, p;
    float rhs[4];
} Cell;

__kernel void jacobi7(__global const Cell *in, __global Cell *out, const float omega, const float coupling)
{
    const int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
    const int c = IDX3(x, y, z);
    if (!INTERIOR(x, y, z)) {
        out[c] = in[c];
        return;
    }
    const int n[6] = { IDX3(x - 1, y, z), IDX3(x + 1, y, z), IDX3(x, y - 1, z),
                       IDX3(x, y + 1, z), IDX3(x, y, z - 1), IDX3(x, y, z + 1) };
    float su = 0.0f, sv = 0.0f, sw = 0.0f, sp = 0.0f;
    for (int k = 0; k < 6; k++) {
        su += in[n[k]].u;
        sv += in[n[k]].v;
        sw += in[n[k]].w;
        sp += in[n[k]].p;
    }
    const float inv6 = 1.0f / 6.0f;
    out[c].u = (1.0f - omega) * in[c].u + omega * (su * inv6 + in[c].rhs[0] - coupling * in[c].p);
    out[c].v = (1.0f - omega) * in[c].v + omega * (sv * inv6 + in[c].rhs[1]);
    out[c].w = (1.0f - omega) * in[c].w + omega * (sw * inv6 + in[c].rhs[2]);
    out[c].p = (1.0f - omega) * in[c].p + omega * (sp * inv6 + in[c].rhs[3] + coupling * in[c].u);
    for (int k = 0; k < 4; k++)
        out[c].rhs[k] = in[c].rhs[k];
}
