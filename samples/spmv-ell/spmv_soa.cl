// The standard ELL layout, column-major: entry k of row r at cols[k*n + r], vals[k*n + r], K
// arrays of n words, what a GPU programmer writes by hand. The same arithmetic as
// spmv_aos.cl's row-major kernel, in the same order.
#pragma OPENCL FP_CONTRACT OFF

__kernel void ell_spmv_colmajor(__global const int *cols, __global const float *vals, __global const float *x,
                                __global float *y, uint n, uint K)
{
    uint row = get_global_id(0);
    if (row >= n)
        return;
    float sum = 0.0f;
    for (uint k = 0; k < K; k++)
        sum += vals[k * n + row] * x[cols[k * n + row]];
    y[row] = sum;
}

// ---- the power iteration's normalisation, the same in every variant: x = y / ||y|| ----------
// A fixed reduction tree (groups of 256, then one group over the partial sums), so that every
// variant adds in the same order and the results agree bit for bit.
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void ell_sumsq_partial(__global const float *y, __global float *partial, uint n)
{
    __local float s[256];
    uint i = get_global_id(0), l = get_local_id(0);
    float v = i < n ? y[i] : 0.0f;
    s[l] = v * v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint w = 128; w > 0; w >>= 1) {
        if (l < w)
            s[l] = s[l] + s[l + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        partial[get_group_id(0)] = s[0];
}

__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void ell_sumsq_final(__global const float *partial, __global float *norm, uint ngroups)
{
    __local float s[256];
    uint l = get_local_id(0);
    float acc = 0.0f;
    for (uint g = l; g < ngroups; g += 256)
        acc += partial[g];
    s[l] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint w = 128; w > 0; w >>= 1) {
        if (l < w)
            s[l] = s[l] + s[l + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        norm[0] = sqrt(s[0]);
}

__kernel void ell_scale(__global const float *y, __global const float *norm, __global float *x, uint n)
{
    uint i = get_global_id(0);
    if (i < n)
        x[i] = y[i] / norm[0];
}
