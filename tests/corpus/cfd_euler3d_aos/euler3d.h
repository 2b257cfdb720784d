/* Unstructured-mesh Euler solver constants (cell-centred, 4 faces per cell). */
#define GAMMA 1.4f
#define NDIM 3
#define NNB 4
#define RK 3
#define VAR_DENSITY 0
#define VAR_MOMENTUM 1
#define VAR_DENSITY_ENERGY (VAR_MOMENTUM + NDIM)
#define NVAR (VAR_DENSITY_ENERGY + 1)
/* neighbour codes */
#define WALL_FACE (-1)
#define FAR_FIELD (-2)
