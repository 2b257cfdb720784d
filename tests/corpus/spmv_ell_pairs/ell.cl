/* ELLPACK SpMV with (value, column) records stored slot-major: slot k of row r at k * nrows + r,
 * so that consecutive rows read consecutive records. Rows shorter than K pad with column -1. */
typedef struct {
    float val;
    int col;
} EllEntry;

__kernel void spmv_ell(__global const EllEntry *ell, __global const float *x, __global float *y,
                       const int nrows, const int K)
{
    const int r = get_global_id(0);
    if (r >= nrows)
        return;
    float sum = 0.0f;
    for (int k = 0; k < K; k++) {
        const EllEntry e = ell[k * nrows + r];
        if (e.col >= 0)
            sum += e.val * x[e.col];
    }
    y[r] = x[r] - 0.3f * sum;
}
