/* CSR sparse matrix-vector products with the nonzeros kept as (column, value) records: a
 * scalar kernel (one row per work-item) and a vector kernel (one row per work-group of
 * VEC_WG items, reduced in local memory), as in the SpMV benchmarks. */
#ifndef VEC_WG
#define VEC_WG 32
#endif

typedef struct {
    int col;
    float val;
} nz_t;

__kernel void spmv_csr_scalar(__global const int *rowptr, __global const nz_t *nz, __global const float *x,
                              __global float *y, const int nrows)
{
    const int row = get_global_id(0);
    if (row >= nrows)
        return;
    float sum = 0.0f;
    for (int k = rowptr[row]; k < rowptr[row + 1]; k++)
        sum += nz[k].val * x[nz[k].col];
    y[row] = 0.5f * x[row] + sum;
}

__kernel void spmv_csr_vector(__global const int *rowptr, __global const nz_t *nz, __global const float *x,
                              __global float *y, const int nrows)
{
    __local float partial[VEC_WG];
    const int row = get_group_id(0);
    const int lid = get_local_id(0);
    float sum = 0.0f;
    if (row < nrows)
        for (int k = rowptr[row] + lid; k < rowptr[row + 1]; k += VEC_WG)
            sum += nz[k].val * x[nz[k].col];
    partial[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = VEC_WG / 2; s > 0; s >>= 1) {
        if (lid < s)
            partial[lid] += partial[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0 && row < nrows)
        y[row] = 0.5f * x[row] + partial[0];
}
