/* Cells of a reaction-diffusion model. The update kernel is generic over the number of
 * species: it treats the cell array as words (a cast to the word type), as code that predates
 * the structure does. The reaction kernel uses the structure. */
#define NSPEC 6
#define CELL_WORDS 8

typedef struct {
    float conc[6]; /* NSPEC */
    float temp;
    uint flags;
} RCell;

__kernel void react(__global RCell *cells, const int n, const float dt)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const float k = 0.5f * exp(-1.0f / cells[i].temp);
    for (int s = 0; s + 1 < NSPEC; s += 2) {
        const float r = k * cells[i].conc[s] * cells[i].conc[s + 1];
        cells[i].conc[s] -= r * dt;
        cells[i].conc[s + 1] += r * dt;
    }
    cells[i].flags = (uint)(cells[i].conc[0] > cells[i].conc[1]);
}

__kernel void diffuse_words(__global RCell *cells, __global RCell *next, const int n, const float d)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    __global const float *w = (__global const float *)cells;
    __global float *o = (__global float *)next;
    const int l = i > 0 ? i - 1 : i, r = i + 1 < n ? i + 1 : i;
    for (int k = 0; k < NSPEC; k++)
        o[i * CELL_WORDS + k] = w[i * CELL_WORDS + k] +
                                d * (w[l * CELL_WORDS + k] + w[r * CELL_WORDS + k] - 2.0f * w[i * CELL_WORDS + k]);
    o[i * CELL_WORDS + NSPEC] = w[i * CELL_WORDS + NSPEC];
    ((__global uint *)next)[i * CELL_WORDS + NSPEC + 1] = ((__global const uint *)cells)[i * CELL_WORDS + NSPEC + 1];
}
