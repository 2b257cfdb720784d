/* The STREAM kernels (copy, scale, add, triad, plus a dot product with a work-group reduction)
 * on one array of records holding a[i], b[i], c[i]: the array-of-structures port of a
 * bandwidth benchmark. Annotated in the source. */
#ifndef TYPE
#define TYPE float
#endif

typedef struct {
    TYPE a, b, c, d;
} abcd_t;

//DL: AoS: v[n]
__kernel void stream_copy(__global abcd_t *v, const int n)
{
    const int i = get_global_id(0);
    if (i < n)
        v[i].c = v[i].a;
}

//DL: AoS: v[n]
__kernel void stream_scale(__global abcd_t *v, const int n, const TYPE scalar)
{
    const int i = get_global_id(0);
    if (i < n)
        v[i].b = scalar * v[i].c;
}

//DL: AoS: v[n]
__kernel void stream_add(__global abcd_t *v, const int n)
{
    const int i = get_global_id(0);
    if (i < n)
        v[i].c = v[i].a + v[i].b;
}

//DL: AoS: v[n]
__kernel void stream_triad(__global abcd_t *v, const int n, const TYPE scalar)
{
    const int i = get_global_id(0);
    if (i < n)
        v[i].a = v[i].b + scalar * v[i].c;
}

//DL: AoS: v[n]
__kernel void stream_dot(__global const abcd_t *v, __global TYPE *sums, __local TYPE *scratch, const int n)
{
    const int i = get_global_id(0), lid = get_local_id(0);
    scratch[lid] = i < n ? v[i].a * v[i].b : (TYPE)0;
    for (int s = get_local_size(0) / 2; s > 0; s /= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < s)
            scratch[lid] += scratch[lid + s];
    }
    if (lid == 0)
        sums[get_group_id(0)] = scratch[0];
}

//DL: AoS: v[n]
__kernel void stream_renorm(__global abcd_t *v, const int n)
{
    /* keeps the values bounded over many iterations */
    const int i = get_global_id(0);
    if (i < n) {
        v[i].a = (TYPE)0.5 * v[i].a + (TYPE)0.5;
        v[i].d += v[i].a;
    }
}
