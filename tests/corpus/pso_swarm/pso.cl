/* Particle swarm optimisation of the 4-D Rastrigin function. A particle keeps its position,
 * velocity and personal best as float[4] arrays, its fitness values and its random state. The
 * global best comes from the host (one float4). */
#define DIM 4

typedef struct {
    float x[DIM];
    float v[DIM];
    float best[DIM];
    float fit, best_fit;
    uint rng;
    float inertia;
} SwarmParticle;

inline float rnd(uint *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return (*s & 0xffffff) * (1.0f / 16777216.0f);
}

inline float rastrigin(const float *x)
{
    float f = 10.0f * DIM;
    for (int d = 0; d < DIM; d++)
        f += x[d] * x[d] - 10.0f * cos(6.2831853f * x[d]);
    return f;
}

__kernel void pso_move(__global SwarmParticle *sw, __global const float *gbest, const int n, const float c1,
                       const float c2)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    uint s = sw[i].rng;
    for (int d = 0; d < DIM; d++) {
        const float r1 = rnd(&s), r2 = rnd(&s);
        sw[i].v[d] = sw[i].inertia * sw[i].v[d] + c1 * r1 * (sw[i].best[d] - sw[i].x[d]) +
                     c2 * r2 * (gbest[d] - sw[i].x[d]);
        sw[i].v[d] = clamp(sw[i].v[d], -1.0f, 1.0f);
        sw[i].x[d] = clamp(sw[i].x[d] + sw[i].v[d], -5.12f, 5.12f);
    }
    sw[i].rng = s;
    sw[i].inertia = fmax(0.4f, sw[i].inertia * 0.99f);
}

__kernel void pso_evaluate(__global SwarmParticle *sw, const int n)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    float x[DIM];
    for (int d = 0; d < DIM; d++)
        x[d] = sw[i].x[d];
    const float f = rastrigin(x);
    sw[i].fit = f;
    if (f < sw[i].best_fit) {
        sw[i].best_fit = f;
        for (int d = 0; d < DIM; d++)
            sw[i].best[d] = x[d];
    }
}
