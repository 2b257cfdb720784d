/* Mass-spring cloth on a 2-D grid of nodes, Verlet integration; the top row is pinned. */
typedef struct {
    float4 pos;
    float4 prev;
    float4 force;
} ClothNode;

static float4 spring(float4 a, float4 b, float rest, float k)
{
    float4 d = b - a;
    d.w = 0.0f;
    const float len = length(d);
    return len > 1e-6f ? d * (k * (len - rest) / len) : (float4)(0.0f);
}

__kernel void cloth_init(__global ClothNode *nodes, const float rest)
{
    const int x = get_global_id(0), y = get_global_id(1);
    const int i = y * get_global_size(0) + x;
    const float4 p = (float4)(x * rest, 0.0f, y * rest, 1.0f) + nodes[i].pos;
    nodes[i].pos = p;
    nodes[i].prev = p;
}

__kernel void cloth_forces(__global ClothNode *nodes, const int w, const int h, const float rest, const float k)
{
    const int x = get_global_id(0), y = get_global_id(1);
    const int i = y * w + x;
    const float4 p = nodes[i].pos;
    float4 f = (float4)(0.0f, -0.02f, 0.0f, 0.0f);
    if (x > 0) f += spring(p, nodes[i - 1].pos, rest, k);
    if (x < w - 1) f += spring(p, nodes[i + 1].pos, rest, k);
    if (y > 0) f += spring(p, nodes[i - w].pos, rest, k);
    if (y < h - 1) f += spring(p, nodes[i + w].pos, rest, k);
    if (x > 0 && y > 0) f += spring(p, nodes[i - w - 1].pos, rest * M_SQRT2_F, 0.5f * k);
    if (x < w - 1 && y > 0) f += spring(p, nodes[i - w + 1].pos, rest * M_SQRT2_F, 0.5f * k);
    nodes[i].force = f;
}

__kernel void cloth_verlet(__global ClothNode *nodes, const int w, const float dt2, const float damping)
{
    const int x = get_global_id(0), y = get_global_id(1);
    const int i = y * w + x;
    if (y == 0)
        return;
    const float4 cur = nodes[i].pos;
    nodes[i].pos = cur + damping * (cur - nodes[i].prev) + nodes[i].force * dt2;
    nodes[i].prev = cur;
}
