/* D2Q9 lattice: the populations of a cell are 9 consecutive floats of one flat array, cells in
 * row-major order. Shared by the kernels of lbm_d2q9.cl. */
#ifndef LBM_D2Q9_H
#define LBM_D2Q9_H

#define Q 9
#define WALL 1
#define CELL(x, y, nx) ((y) * (nx) + (x))
#define FIDX(c, k) ((c) * Q + (k))
/* population k of cell c */
#define F(p, c, k) (p)[FIDX(c, k)]
/* the first interior row starts after one ghost row */
#define GHOST_WORDS(nx) ((nx) * Q)

/* directions: rest, E, N, W, S, NE, NW, SW, SE */
#define CX(k) ((k) == 1 || (k) == 5 || (k) == 8 ? 1 : (k) == 3 || (k) == 6 || (k) == 7 ? -1 : 0)
#define CY(k) ((k) == 2 || (k) == 5 || (k) == 6 ? 1 : (k) == 4 || (k) == 7 || (k) == 8 ? -1 : 0)
#define WEIGHT(k) ((k) == 0 ? 4.0f / 9.0f : (k) < 5 ? 1.0f / 9.0f : 1.0f / 36.0f)

#endif
