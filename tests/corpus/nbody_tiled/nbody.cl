/* Gravitational N-body, all pairs, in the style of the vendor SDK samples: each work-group
 * walks the bodies in tiles of its own size, staging the positions of one tile in local memory.
 * A body is its position (w = mass) and its velocity. */
typedef struct {
    float4 pos;
    float4 vel;
} Body;

__kernel void nbody_step(__global const Body *in, __global Body *out, __local float4 *tile,
                         const int n, const float dt, const float eps2)
{
    const int gid = get_global_id(0);
    const int lid = get_local_id(0);
    const int wg = get_local_size(0);
    const float4 me = in[gid].pos;
    float4 acc = (float4)(0.0f);

    for (int base = 0; base < n; base += wg) {
        tile[lid] = in[base + lid].pos;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int j = 0; j < wg; j++) {
            const float4 other = tile[j];
            float4 d = other - me;
            d.w = 0.0f;
            const float r2 = d.x * d.x + d.y * d.y + d.z * d.z + eps2;
            const float inv = rsqrt(r2);
            acc += d * (other.w * inv * inv * inv);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float4 v = in[gid].vel + acc * dt;
    v.w = 0.0f;
    out[gid].vel = v;
    out[gid].pos = me + v * dt;
    out[gid].pos.w = me.w;
}
