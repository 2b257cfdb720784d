/* String 3: the kernels of the slime-mould style agent model. */
__kernel void agents_sense(__global Agent *agents, const int n, __global const float *trail, const int w, const int h)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const float2 p = agents[i].pos, d = agents[i].heading;
    const float fwd = sample_trail(trail, p + SENSOR_DIST * d, w, h);
    const float left = sample_trail(trail, p + SENSOR_DIST * rotate2(d, SENSOR_ANGLE), w, h);
    const float right = sample_trail(trail, p + SENSOR_DIST * rotate2(d, -SENSOR_ANGLE), w, h);
    float turn = 0.0f;
    if (left > fwd && left > right)
        turn = TURN_RATE;
    else if (right > fwd && right > left)
        turn = -TURN_RATE;
    else if (fwd < left && fwd < right)
        turn = (agents[i].species & 1) ? TURN_RATE : -TURN_RATE;
    agents[i].heading = normalize(rotate2(d, turn));
    agents[i].energy = 0.95f * agents[i].energy + 0.05f * fwd;
}

__kernel void agents_move(__global Agent *agents, const int n, __global float *trail, const int w, const int h)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    float2 p = agents[i].pos + agents[i].speed * agents[i].heading;
    p.x -= w * floor(p.x / w);
    p.y -= h * floor(p.y / h);
    agents[i].pos = p;
    agents[i].ticks++;
}

/* Diffusion and decay of the trail map, from one grid into the other. */
__kernel void trail_decay(__global const float *src, __global float *dst, const int w)
{
    const int x = get_global_id(0), y = get_global_id(1), h = get_global_size(1);
    const float s = src[y * w + x] + src[y * w + (x + 1) % w] + src[((y + 1) % h) * w + x];
    dst[y * w + x] = 0.3f * s + 0.001f * (float)((x * 7 + y * 13) % 5);
}
