/* CSR SpMV written the way C programmers walk arrays: a pointer to the row's first record,
 * advanced with ++, and `(base + k)->member` for the diagonal lookup. A Jacobi sweep
 * x' = x + omega * (b - A x) / diag. */
typedef struct {
    int col;
    float val;
} csr_nz;

__kernel void jacobi_csr_walk(__global const int *rowptr, __global const csr_nz *nz, __global const float *x,
                              __global const float *b, __global float *xnew, const int nrows, const float omega)
{
    const int row = get_global_id(0);
    if (row >= nrows)
        return;
    const int begin = rowptr[row], end = rowptr[row + 1];
    __global const csr_nz *e = nz + begin;
    float ax = 0.0f;
    for (int k = begin; k < end; k++) {
        ax += e->val * x[e->col];
        e++;
    }
    /* the diagonal is stored first in each row */
    const float diag = (nz + begin)->val;
    xnew[row] = x[row] + omega * (b[row] - ax) / diag;
}
