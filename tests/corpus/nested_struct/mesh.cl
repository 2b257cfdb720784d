/* A triangle soup and the atoms sitting on it: nested structures (a vector type of the code's
 * own) and an array of structures inside a structure. */
typedef struct {
    float x, y, z;
} vec3_t;

typedef struct {
    vec3_t v[3];
    float area;
    float n[2]; /* normal's x and y; z is recovered from the unit length */
} Tri;

typedef struct {
    vec3_t pos;
    vec3_t vel;
    float mass;
    int tri;
} Atom;

static vec3_t sub3(vec3_t a, vec3_t b) { vec3_t r = { a.x - b.x, a.y - b.y, a.z - b.z }; return r; }

__kernel void tri_geometry(__global Tri *tris, const int n, const float wobble)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    tris[i].v[0].z += wobble * (float)((i & 3) - 1.5f);
    const vec3_t e1 = sub3(tris[i].v[1], tris[i].v[0]);
    const vec3_t e2 = sub3(tris[i].v[2], tris[i].v[0]);
    const float cx = e1.y * e2.z - e1.z * e2.y;
    const float cy = e1.z * e2.x - e1.x * e2.z;
    const float cz = e1.x * e2.y - e1.y * e2.x;
    const float len = sqrt(cx * cx + cy * cy + cz * cz) + 1e-12f;
    tris[i].area = 0.5f * len;
    tris[i].n[0] = cx / len;
    tris[i].n[1] = cy / len;
}

__kernel void atoms_slide(__global Atom *atoms, __global const Tri *tris, const int natoms, const float dt)
{
    const int i = get_global_id(0);
    if (i >= natoms)
        return;
    const int t = atoms[i].tri;
    const float nx = tris[t].n[0], ny = tris[t].n[1];
    atoms[i].vel.x += -nx * dt / atoms[i].mass;
    atoms[i].vel.y += -ny * dt / atoms[i].mass;
    atoms[i].pos.x += atoms[i].vel.x * dt;
    atoms[i].pos.y += atoms[i].vel.y * dt;
    atoms[i].pos.z = tris[t].v[0].z;
}
