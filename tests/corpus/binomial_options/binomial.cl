/* American put by a Cox-Ross-Rubinstein binomial tree, one work-group per option: the leaves
 * are spread over the work-items, the tree is folded back in local memory, work-item 0 writes
 * the price and the early-exercise boundary estimate. NUM_STEPS is fixed at build time. */
#ifndef NUM_STEPS
#define NUM_STEPS 255
#endif

typedef struct {
    float s, x, t, r;
    float v, price, boundary, steps_used;
} OptionRec;

__kernel void binomial_american(__global OptionRec *opts, __local float *values)
{
    const int opt = get_group_id(0);
    const int lid = get_local_id(0);
    const int wg = get_local_size(0);
    const float dt = opts[opt].t / NUM_STEPS;
    const float u = exp(opts[opt].v * sqrt(dt));
    const float d = 1.0f / u;
    const float disc = exp(-opts[opt].r * dt);
    const float pu = (exp(opts[opt].r * dt) - d) / (u - d);
    const float pd = 1.0f - pu;
    const float s0 = opts[opt].s, strike = opts[opt].x;

    for (int k = lid; k <= NUM_STEPS; k += wg) {
        const float sk = s0 * pow(u, (float)(2 * k - NUM_STEPS));
        values[k] = fmax(strike - sk, 0.0f);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float boundary = 0.0f;
    for (int step = NUM_STEPS - 1; step >= 0; step--) {
        float nv[(NUM_STEPS + 64) / 64];
        int m = 0;
        for (int k = lid; k <= step; k += wg, m++) {
            const float cont = disc * (pu * values[k + 1] + pd * values[k]);
            const float sk = s0 * pow(u, (float)(2 * k - step));
            const float ex = strike - sk;
            nv[m] = fmax(cont, ex);
            if (ex > cont)
                boundary = fmax(boundary, sk);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        m = 0;
        for (int k = lid; k <= step; k += wg, m++)
            values[k] = nv[m];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    /* the largest exercise price seen by any work-item */
    values[NUM_STEPS + 1 + lid] = boundary;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        float b = 0.0f;
        for (int k = 0; k < wg; k++)
            b = fmax(b, values[NUM_STEPS + 1 + k]);
        opts[opt].price = values[0];
        opts[opt].boundary = b;
        opts[opt].steps_used += (float)NUM_STEPS;
        opts[opt].s *= 1.001f;
    }
}
