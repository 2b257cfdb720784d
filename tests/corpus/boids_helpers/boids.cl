/* Flocking (separation, alignment, cohesion) in 2-D within a window of neighbours along the
 * array (the host keeps boids of a flock together); helpers take the whole array or one boid. */
typedef struct {
    float2 pos;
    float2 vel;
    float2 acc;
    float max_speed;
    int flock;
} Boid;

#define WINDOW 32
#define RADIUS 0.08f

static float2 steer(__global const Boid *all, const int n, const int i)
{
    float2 sep = (float2)(0.0f), ali = (float2)(0.0f), coh = (float2)(0.0f);
    int count = 0;
    for (int j = max(0, i - WINDOW); j < min(n, i + WINDOW + 1); j++) {
        if (j == i || all[j].flock != all[i].flock)
            continue;
        const float2 d = all[i].pos - all[j].pos;
        const float r = length(d);
        if (r < RADIUS && r > 1e-6f) {
            sep += d / (r * r);
            ali += all[j].vel;
            coh += all[j].pos;
            count++;
        }
    }
    if (count == 0)
        return (float2)(0.0f);
    return 0.0005f * sep + 0.05f * (ali / count - all[i].vel) + 0.01f * (coh / count - all[i].pos);
}

static void limit_speed(__global Boid *b)
{
    const float s = length(b->vel);
    if (s > b->max_speed)
        b->vel *= b->max_speed / s;
}

__kernel void boids_steer(__global Boid *boids, const int n)
{
    const int i = get_global_id(0);
    if (i < n)
        boids[i].acc = steer(boids, n, i);
}

__kernel void boids_move(__global Boid *boids, const int n, const float dt)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    boids[i].vel += boids[i].acc * dt;
    limit_speed(&boids[i]);
    float2 p = boids[i].pos + boids[i].vel * dt;
    p -= floor(p); /* unit torus */
    boids[i].pos = p;
}
