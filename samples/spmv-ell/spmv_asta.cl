// The ELL product written by hand for ASTA addressing, as the thesis's transformed kernels are:
// entry k of row r at its ASTA place, tile CLAYOUT_TILE, K = ELL_K = 32 words per row. It runs
// only under clayout, which converts cols and vals to ASTA before the first launch and defines
// CLAYOUT_TILE when it builds the program. Two kernels, identical but for their annotation: one
// for a host that keeps the matrix row-major (AoS(32), each row a structure of 32 words), one
// for a host that keeps it column-major (SoA(32), 32 arrays of n words).
#pragma OPENCL FP_CONTRACT OFF
#ifndef CLAYOUT_TILE
#error "spmv_asta.cl needs CLAYOUT_TILE: run it under clayout (ld_preload/clayout-run)"
#endif
#define ELL_K 32

// Word s of structure i of m structures of S words, tile T: full tiles of T structures, each
// S rows of T words, then the last m % T structures as a mini SoA.
#define ASTA(i, s, S, T, m) \
    ((i) < (m) - (m) % (T) ? ((i) / (T) * (S) + (s)) * (T) + (i) % (T) \
                           : ((m) - (m) % (T)) * (S) + (s) * ((m) % (T)) + (i) - ((m) - (m) % (T)))

//DL: AoS(32): cols[n], vals[n] -> ASTA
__kernel void ell_spmv_asta_rm(__global const int *cols, __global const float *vals, __global const float *x,
                               __global float *y, uint n, uint K)
{
    uint row = get_global_id(0);
    if (row >= n)
        return;
    float sum = 0.0f;
    for (uint k = 0; k < ELL_K; k++)
        sum += vals[ASTA(row, k, ELL_K, CLAYOUT_TILE, n)] * x[cols[ASTA(row, k, ELL_K, CLAYOUT_TILE, n)]];
    y[row] = sum;
}

//DL: SoA(32): cols[n], vals[n] -> ASTA
__kernel void ell_spmv_asta_cm(__global const int *cols, __global const float *vals, __global const float *x,
                               __global float *y, uint n, uint K)
{
    uint row = get_global_id(0);
    if (row >= n)
        return;
    float sum = 0.0f;
    for (uint k = 0; k < ELL_K; k++)
        sum += vals[ASTA(row, k, ELL_K, CLAYOUT_TILE, n)] * x[cols[ASTA(row, k, ELL_K, CLAYOUT_TILE, n)]];
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
