// D2Q9 BGK lattice-Boltzmann, pull scheme, periodic in x; rows y = -1 and y = ny are ghost rows
// the host fills once (inflow/outflow reservoirs). Each buffer holds (ny + 2) rows of nx cells.
#include "lbm_d2q9.h"

__kernel void d2q9_stream_collide(__global float *fin, __global float *fout,
                                  __global const int *solid, const int nx, const int ny,
                                  const float omega)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= nx || y >= ny)
        return;
    // Skip the ghost row once, so that row 0 is the first interior row.
    fin += GHOST_WORDS(nx);
    fout += GHOST_WORDS(nx);

    const int c = CELL(x, y, nx);
    float f[Q];
    for (int k = 0; k < Q; k++) {
        int xs = x - CX(k);
        xs = xs < 0 ? xs + nx : xs >= nx ? xs - nx : xs;
        const int ys = y - CY(k); // -1 and ny are the ghost rows
        f[k] = F(fin, CELL(xs, ys, nx), k);
    }
    if (solid[c] == WALL) {
        // bounce back: swap opposite directions
        F(fout, c, 0) = f[0];
        F(fout, c, 1) = f[3];
        F(fout, c, 3) = f[1];
        F(fout, c, 2) = f[4];
        F(fout, c, 4) = f[2];
        F(fout, c, 5) = f[7];
        F(fout, c, 7) = f[5];
        F(fout, c, 6) = f[8];
        F(fout, c, 8) = f[6];
        return;
    }
    float rho = 0.0f, ux = 0.0f, uy = 0.0f;
    for (int k = 0; k < Q; k++) {
        rho += f[k];
        ux += CX(k) * f[k];
        uy += CY(k) * f[k];
    }
    ux /= rho;
    uy /= rho;
    const float usq = 1.5f * (ux * ux + uy * uy);
    for (int k = 0; k < Q; k++) {
        const float cu = 3.0f * (CX(k) * ux + CY(k) * uy);
        const float feq = WEIGHT(k) * rho * (1.0f + cu + 0.5f * cu * cu - usq);
        F(fout, c, k) = f[k] - omega * (f[k] - feq);
    }
}
