/* Kernels written for their array of structures, annotated in their source (`//DL: AoS: ...`,
 * no device layout: clayout's transparent mode rewrites them to address ASTA). Each case is
 * one small program a user might write: a pointer to a member that escapes, a structure
 * defined under #ifdef, build options of its own, padding, extents evaluated at launch,
 * arguments that share bytes. Issue 21, items 6, 7, 8, 9, 10, 11, 12, 17, 18. */
#include "hostile.h"

/* One launch configuration of a kernel `f(__global T *p, uint n)` over n structures of
 * `words` 4-byte words. */
struct launch {
    const char *src, *options, *name;
    int words;
    size_t n, global;
    size_t local; /* 0: NULL */
    int launches;
    int skip_n; /* leave argument 1 unset */
    unsigned padding; /* bit k: word k of each structure is padding */
};

static void init_words(float *w, size_t count)
{
    for (size_t j = 0; j < count; j++)
        w[j] = (float)((j * 7) % 101) * 0.25f - 3.0f;
}

static cl_mem words_buffer(size_t count)
{
    float *h = malloc(count * 4);
    init_words(h, count);
    cl_mem b = buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, count * 4, h);
    free(h);
    return b;
}

/* The end of a case of one program and kernel: both, the queue and the context let go. */
static void close_kernel(cl_program p, cl_kernel k)
{
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
}

static void run(const struct launch *l)
{
    open_device(0);
    cl_program p = build(l->src, l->options ? l->options : "");
    cl_kernel k = kernel(p, l->name);
    size_t bytes = l->n * l->words * 4;
    cl_mem b = words_buffer(l->n * l->words);
    cl_uint n = (cl_uint)l->n;
    size_t g = l->global ? l->global : l->n;
    rc("arg 0", clSetKernelArg(k, 0, sizeof b, &b));
    if (!l->skip_n)
        rc("arg 1", clSetKernelArg(k, 1, sizeof n, &n));
    for (int i = 0; i < (l->launches ? l->launches : 1); i++)
        rc(l->name, clEnqueueNDRangeKernel(q, k, 1, NULL, &g, l->local ? &l->local : NULL, 0, NULL, NULL));
    show("p", b, bytes);
    if (l->padding) {
        /* The members alone: where p differs but this does not, only padding differs. */
        float *h = malloc(bytes);
        rc("read", clEnqueueReadBuffer(q, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
        for (size_t j = 0; j < l->n * l->words; j++)
            if (l->padding & (1u << (j % l->words)))
                h[j] = 0.0f;
        sum("members", h, bytes);
        free(h);
    }
    clReleaseMemObject(b);
    close_kernel(p, k);
}

#define BODY5                                                                                     \
    "#pragma OPENCL FP_CONTRACT OFF\n"                                                            \
    "typedef struct { float x, y, z, w, m; } body;\n"

/* ---- item 6: a pointer to one member, used as more than one word ---- */

static const char *ESCAPE_CL = BODY5
    "float sum3(__global const float *a) { return a[0] + a[1] + a[2]; }\n"
    "void put2(__global float *a, float u, float v) { a[0] = u; a[1] = v; }\n"
    "float through(__global const float *a) { return sum3(a + 1); }\n"
    "void bump(__global float *a) { *a += 1.0f; }\n"
    "//DL: AoS: p[n]\n"
    "__kernel void e_vload4(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  float4 v = vload4(0, &p[i].x); p[i].m = v.x + v.y * 2.0f + v.z * 3.0f + v.w * 4.0f; }\n"
    "//DL: AoS: p[n]\n"
    "__kernel void e_vstore2(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  vstore2((float2)(p[i].m, p[i].x), 0, &p[i].y); }\n"
    "//DL: AoS: p[n]\n"
    "__kernel void e_index(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  __global float *q = &p[i].x; p[i].m = q[1] - q[2]; }\n"
    "//DL: AoS: p[n]\n"
    "__kernel void e_negative(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  __global float *pz = &p[i].z; p[i].m = pz[-1] * pz[-2]; }\n"
    "//DL: AoS: p[n]\n"
    "__kernel void e_helper(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  p[i].m = sum3(&p[i].x); }\n"
    "//DL: AoS: p[n]\n"
    "__kernel void e_helper_write(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  put2(&p[i].y, p[i].m, -p[i].m); }\n"
    "//DL: AoS: p[n]\n"
    "__kernel void e_helper_of_helper(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  p[i].m = through(&p[i].x); }\n"
    "//DL: AoS: p[n]\n"
    "__kernel void e_increment(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  __global float *q = &p[i].x; q++; p[i].m = *q + q[1]; }\n"
    "//DL: AoS: p[n]\n"
    "__kernel void e_local_copy(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  __global float *a = &p[i].y; __global float *b = a; p[i].m = b[0] + b[1]; }\n"
    "//DL: AoS: p[n]\n"
    "__kernel void e_one_word(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  __global float *q = &p[i].z; *q = *q * 2.0f + 1.0f; bump(&p[i].w); q[0] += p[i].x; }\n"
    "//DL: AoS: p[n]\n"
    "__kernel void e_whole_struct(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  __global body *s = &p[i]; s->m = s->x + s->y; }\n"
    "//DL: AoS: p[n]\n"
    "__kernel void e_pointer_array(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  __global float *at[2] = {&p[i].x, &p[i].z}; p[i].m = at[0][1] + at[1][1]; }\n"

    "//DL: AoS: p[n]\n"
    "__kernel void e_choice(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  __global float *q = (i & 1) ? &p[i].x : &p[i].y; p[i].m = q[1]; }\n"
    "//DL: AoS: p[n]\n"
    "__kernel void e_neighbour(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i + 1 >= n) return;\n"
    "  __global float *q = &p[i].m; p[i].y = q[1]; }\n";

#define ESCAPE(fn, kname)                                                                         \
    static void fn(void)                                                                          \
    {                                                                                             \
        struct launch l = {ESCAPE_CL, "", kname, 5, 1000, 1024, 0, 2, 0};                         \
        run(&l);                                                                                  \
    }
ESCAPE(escape_vload4, "e_vload4")
ESCAPE(escape_vstore2, "e_vstore2")
ESCAPE(escape_index, "e_index")
ESCAPE(escape_negative, "e_negative")
ESCAPE(escape_helper, "e_helper")
ESCAPE(escape_helper_write, "e_helper_write")
ESCAPE(escape_helper_of_helper, "e_helper_of_helper")
ESCAPE(escape_increment, "e_increment")
ESCAPE(escape_local_copy, "e_local_copy")
ESCAPE(escape_one_word, "e_one_word")
ESCAPE(escape_whole_struct, "e_whole_struct")
ESCAPE(escape_neighbour, "e_neighbour")
ESCAPE(escape_pointer_array, "e_pointer_array")

/* In a program of its own: had it a staged copy (it reads its own structure only), that copy
 * would not compile (a __local address cast to __global) and clayout would drop every copy of
 * the program; reading the mirror structure keeps it to the ASTA copy. */
static const char *CAST_CL = BODY5
    "//DL: AoS: p[n]\n"
    "__kernel void e_cast_vector(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  float2 v = *(__global const float2 *)&p[n - 1 - i].y; p[i].m = v.x - v.y; }\n";

static void escape_cast_vector(void)
{
    struct launch l = {CAST_CL, "", "e_cast_vector", 5, 1000, 1024, 0, 2, 0};
    run(&l);
}
ESCAPE(escape_choice, "e_choice")

/* Atomics on a member of a structure of ints: refused by the rewriter (runs as written). */
static const char *ATOMIC_CL = "typedef struct { int hits, misses, total, last; } counter;\n"
                               "//DL: AoS: c[n]\n"
                               "__kernel void count(__global counter *c, uint n)\n"
                               "{ uint i = get_global_id(0); if (i >= n) return;\n"
                               "  atomic_add(&c[i % 16].hits, 1); atomic_inc(&c[i].total); c[i].last = (int)i; }\n";

static void escape_atomic(void)
{
    struct launch l = {ATOMIC_CL, "", "count", 4, 1000, 1024, 0, 2, 0};
    run(&l);
}

/* ---- item 7: one structure, two definitions, the preprocessor picks ---- */

static const char *IFDEF_CL = "#pragma OPENCL FP_CONTRACT OFF\n"
                              "#ifdef COUNTS_AS_INTS\n"
                              "typedef struct { int a, b, c; float w; } item;\n"
                              "#else\n"
                              "typedef struct { float a, b, c; float w; } item;\n"
                              "#endif\n"
                              "//DL: AoS: p[n]\n"
                              "__kernel void tally(__global item *p, uint n)\n"
                              "{ uint i = get_global_id(0); if (i >= n) return;\n"
                              "  p[i].a += p[i].b / 2 + 1; p[i].c = p[i].c * 3; p[i].w += 0.5f; }\n";

static void struct_ifdef_else(void)
{
    struct launch l = {IFDEF_CL, "", "tally", 4, 1000, 1024, 0, 2, 0};
    run(&l);
}

static void struct_ifdef_taken(void)
{
    struct launch l = {IFDEF_CL, "-DCOUNTS_AS_INTS", "tally", 4, 1000, 1024, 0, 2, 0};
    run(&l);
}

/* ---- item 8: the application's own CLAYOUT_TILE ---- */

static const char *TILE_CL = BODY5
    "#ifndef CLAYOUT_TILE\n"
    "#define CLAYOUT_TILE 1\n"
    "#endif\n"
    "//DL: AoS: p[n]\n"
    "__kernel void tiled(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  p[i].m += p[i].x * (float)(CLAYOUT_TILE + 1); p[i].y -= p[i].z; }\n";

#define TILE(fn, opts)                                                                            \
    static void fn(void)                                                                          \
    {                                                                                             \
        struct launch l = {TILE_CL, opts, "tiled", 5, 1000, 1024, 0, 2, 0};                       \
        run(&l);                                                                                  \
    }
TILE(tile_zero, "-D CLAYOUT_TILE=0")
TILE(tile_three, "-DCLAYOUT_TILE=3")
TILE(tile_huge, "-D CLAYOUT_TILE=4096")
TILE(tile_negative, "-D CLAYOUT_TILE=-1")
TILE(tile_expression, "-D CLAYOUT_TILE=(2*8)")
TILE(tile_sixteen, "-D CLAYOUT_TILE=16")

/* ---- item 9: work-group geometry seen by a kernel whose local size the app left open ---- */

static const char *GEOMETRY_CL = BODY5
    "//DL: AoS: p[n]\n"
    "__kernel void geometry(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  p[i].m += (float)get_local_size(0); p[i].w += (float)get_group_id(0);\n"
    "  p[i].z += (float)get_local_id(0); }\n";

static void staged_null_local(void)
{
    struct launch l = {GEOMETRY_CL, "", "geometry", 5, 4096, 4096, 0, 6, 0};
    run(&l);
}

static void staged_given_local(void)
{
    struct launch l = {GEOMETRY_CL, "", "geometry", 5, 4096, 4096, 64, 6, 0};
    run(&l);
}

static void geometry_null_local(void)
{
    struct launch l = {GEOMETRY_CL, "", "geometry", 5, 1000, 1000, 0, 2, 0};
    run(&l);
}

/* ---- launches with a global work offset: a buffer processed in chunks ---- */

/* A kernel whose subscript is the work-item's global id, which includes the launch's global
 * work offset: a program that processes its structures in chunks (to bound a launch's time,
 * or to overlap them with transfers) launches it over [offset, offset + size) each time.
 * Whatever clayout runs instead (its ASTA copy, its staged copy, whose work-groups then start
 * where no tile does, a launch that converts its buffers as it runs) must touch the same
 * structures. */
static const char *DRIFT_CL = BODY5
    "//DL: AoS: p[n]\n"
    "__kernel void drift(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  body b = p[i]; b.x += b.m * 0.5f; b.y -= b.w * 0.25f; b.z = b.x * b.y + (float)(i % 3);\n"
    "  p[i] = b; }\n";

/* Three rounds over the chunks [offsets[c], offsets[c] + sizes[c]) of n structures, each
 * launched with work-groups of `local` (0: NULL). */
static void chunks(size_t n, const size_t *offsets, const size_t *sizes, int count, size_t local)
{
    open_device(0);
    cl_program p = build(DRIFT_CL, "");
    cl_kernel k = kernel(p, "drift");
    size_t bytes = n * 5 * 4;
    cl_mem b = words_buffer(n * 5);
    cl_uint nn = (cl_uint)n;
    rc("arg 0", clSetKernelArg(k, 0, sizeof b, &b));
    rc("arg 1", clSetKernelArg(k, 1, sizeof nn, &nn));
    for (int round = 0; round < 3; round++)
        for (int c = 0; c < count; c++) {
            char what[64];
            snprintf(what, sizeof what, "round %d chunk %d", round, c);
            rc(what, clEnqueueNDRangeKernel(q, k, 1, &offsets[c], &sizes[c], local ? &local : NULL, 0, NULL, NULL));
        }
    show("p", b, bytes);
    clReleaseMemObject(b);
    close_kernel(p, k);
}

static void offset_chunks_whole(void)
{
    size_t offsets[] = {0, 1024, 2048, 3072}, sizes[] = {1024, 1024, 1024, 1024};
    chunks(4096, offsets, sizes, 4, 64);
}

static void offset_chunks_null_local(void)
{
    size_t offsets[] = {0, 1024, 2048, 3072}, sizes[] = {1024, 1024, 1024, 1024};
    chunks(4096, offsets, sizes, 4, 0);
}

static void offset_chunks_reversed(void)
{
    size_t offsets[] = {3072, 2048, 1024, 0}, sizes[] = {1024, 1024, 1024, 1024};
    chunks(4096, offsets, sizes, 4, 64);
}

/* Offsets where no tile starts: work-groups of 4 from structure 100, and one of 36 from 28. */
static void offset_unaligned(void)
{
    size_t offsets[] = {0, 100, 28}, sizes[] = {100, 900, 72};
    chunks(1000, offsets, sizes, 3, 4);
    size_t o2[] = {28}, s2[] = {972};
    chunks(1000, o2, s2, 1, 36);
}

static void offset_unaligned_null_local(void)
{
    size_t offsets[] = {0, 100}, sizes[] = {100, 900};
    chunks(1000, offsets, sizes, 2, 0);
}

/* An image of pixels kept as structures, processed by a two-dimensional launch (each
 * work-item one pixel, its subscript row * width + column), and then by bands of rows (the
 * offset in the second dimension). */
static const char *PIXELS_CL = "#pragma OPENCL FP_CONTRACT OFF\n"
                               "typedef struct { float r, g, b, a; } pixel;\n"
                               "//DL: AoS: img[w * h]\n"
                               "__kernel void shade(__global pixel *img, uint w, uint h)\n"
                               "{ uint x = get_global_id(0), y = get_global_id(1);\n"
                               "  if (x >= w || y >= h) return;\n"
                               "  uint i = y * w + x;\n"
                               "  pixel p = img[i];\n"
                               "  p.r = p.r * 0.75f + p.g * 0.25f; p.b += (float)y; p.a = p.r - p.b;\n"
                               "  img[i] = p; }\n";

static void two_dimensions(size_t local0, size_t local1)
{
    open_device(0);
    cl_program p = build(PIXELS_CL, "");
    cl_kernel k = kernel(p, "shade");
    cl_uint w = 100, h = 40;
    size_t bytes = (size_t)w * h * 4 * 4;
    cl_mem b = words_buffer((size_t)w * h * 4);
    rc("arg 0", clSetKernelArg(k, 0, sizeof b, &b));
    rc("arg 1", clSetKernelArg(k, 1, sizeof w, &w));
    rc("arg 2", clSetKernelArg(k, 2, sizeof h, &h));
    size_t local[2] = {local0, local1};
    size_t whole[2] = {w, h};
    for (int i = 0; i < 3; i++)
        rc("whole image", clEnqueueNDRangeKernel(q, k, 2, NULL, whole, local0 ? local : NULL, 0, NULL, NULL));
    show("image", b, bytes);
    for (size_t band = 0; band < h; band += 10) {
        size_t offset[2] = {0, band}, size[2] = {w, 10};
        rc("band", clEnqueueNDRangeKernel(q, k, 2, offset, size, local0 ? local : NULL, 0, NULL, NULL));
    }
    show("image after the bands", b, bytes);
    clReleaseMemObject(b);
    close_kernel(p, k);
}

static void two_dimensions_null_local(void)
{
    two_dimensions(0, 0);
}

static void two_dimensions_given_local(void)
{
    two_dimensions(20, 5);
}

/* A kernel that requires its work-group size (`reqd_work_group_size`), launched with that size
 * and with none given (the implementation then uses the required one): a copy of clayout's
 * must keep the requirement, and its staged copy, which may want a size of its own, must not
 * run with another. */
static const char *REQD_CL = BODY5
    "//DL: AoS: p[n]\n"
    "__kernel __attribute__((reqd_work_group_size(64, 1, 1)))\n"
    "void pinned(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  body b = p[i]; b.m += (float)get_local_size(0); b.w += (float)get_local_id(0); p[i] = b; }\n";

static void required_group_size(void)
{
    struct launch given = {REQD_CL, "", "pinned", 5, 4096, 4096, 64, 4, 0};
    run(&given);
    struct launch none = {REQD_CL, "", "pinned", 5, 4096, 4096, 0, 4, 0};
    run(&none);
    struct launch partial = {REQD_CL, "", "pinned", 5, 1000, 1024, 64, 4, 0};
    run(&partial);
}

/* An n-body step as the classic samples write it: each work-group copies a tile of bodies
 * into local memory given as an argument (`clSetKernelArg` with a size and no value), waits at
 * a barrier, and every work-item sums the pull of the tile's bodies on its own; the result goes
 * to a second array of structures. Bodies move between the global arrays (in ASTA under
 * clayout) and the local tile (in the application's layout) whole. */
static const char *NBODY_CL = BODY5
    "//DL: AoS: p[n], out[n]\n"
    "__kernel void pull(__global const body *p, __global body *out, uint n, __local body *tile)\n"
    "{\n"
    "    uint i = get_global_id(0), lid = get_local_id(0), lsz = get_local_size(0);\n"
    "    body me = p[min(i, n - 1)];\n"
    "    float ax = 0.0f, ay = 0.0f;\n"
    "    for (uint t = 0; t < n; t += lsz) {\n"
    "        uint j = t + lid;\n"
    "        if (j < n) tile[lid] = p[j];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "        for (uint k = 0; k < lsz && t + k < n; k++) {\n"
    "            float dx = tile[k].x - me.x, dy = tile[k].y - me.y;\n"
    "            float inv = tile[k].m / (dx * dx + dy * dy + 0.5f);\n"
    "            ax += dx * inv; ay += dy * inv;\n"
    "        }\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (i < n) { me.z = ax; me.w = ay; me.x += ax * 0.001f; out[i] = me; }\n"
    "}\n";

static void nbody_local_tile(void)
{
    open_device(0);
    cl_program p = build(NBODY_CL, "");
    cl_kernel k = kernel(p, "pull");
    cl_uint n = 1000;
    size_t bytes = n * 5 * 4, local = 64, g = 1024;
    cl_mem a = words_buffer(n * 5), b = words_buffer(n * 5);
    rc("arg n", clSetKernelArg(k, 2, sizeof n, &n));
    rc("arg tile", clSetKernelArg(k, 3, local * 5 * 4, NULL));
    for (int step = 0; step < 4; step++) {
        rc("arg p", clSetKernelArg(k, 0, sizeof a, &a));
        rc("arg out", clSetKernelArg(k, 1, sizeof b, &b));
        rc("pull", clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &local, 0, NULL, NULL));
        cl_mem t = a;
        a = b;
        b = t;
    }
    show("a", a, bytes);
    show("b", b, bytes);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    close_kernel(p, k);
}

/* ---- item 10: bytes of the source that are not UTF-8 ---- */

static const char *LATIN1_CL = BODY5
    "__constant uchar tag[] = \"caf\xe9\";\n"
    "//DL: AoS: p[n]\n"
    "__kernel void tagged(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  p[i].m += (float)tag[3] * 0.5f; }\n";

static const char *LATIN1_COMMENT_CL = BODY5
    "// r\xe9sultat: m = x + y\n"
    "//DL: AoS: p[n]\n"
    "__kernel void commented(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  p[i].m = p[i].x + p[i].y; }\n";

static void source_latin1_literal(void)
{
    struct launch l = {LATIN1_CL, "", "tagged", 5, 1000, 1024, 0, 2, 0};
    run(&l);
}

static void source_latin1_comment(void)
{
    struct launch l = {LATIN1_COMMENT_CL, "", "commented", 5, 1000, 1024, 0, 2, 0};
    run(&l);
}

/* ---- item 11: __COUNTER__ ---- */

static const char *COUNTER_CL = BODY5
    "//DL: AoS: p[n]\n"
    "__kernel void first(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return; p[i].m += (float)__COUNTER__; }\n"
    "//DL: AoS: p[n]\n"
    "__kernel void second(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return; p[i].w += (float)__COUNTER__ * 10.0f; }\n";

static void counter_first(void)
{
    struct launch l = {COUNTER_CL, "", "first", 5, 1000, 1024, 0, 1, 0};
    run(&l);
}

static void counter_second(void)
{
    struct launch l = {COUNTER_CL, "", "second", 5, 1000, 1024, 0, 1, 0};
    run(&l);
}

/* ---- item 12: padding ---- */

/* Whole structures copied between work-items: only odd work-items write, from the even
 * structures nobody writes (an in-place shift or reversal would race between work-items, and
 * its bytes would differ from run to run whatever clayout does). */
static const char *PADDING_CL = "#pragma OPENCL FP_CONTRACT OFF\n"
                                "typedef struct { float3 v; float m; } vec_item;\n" /* 32 bytes */
                                "typedef struct { float4 v; float m; } tail_item;\n" /* 32 bytes */
                                "//DL: AoS: p[n]\n"
                                "__kernel void scale3(__global vec_item *p, uint n)\n"
                                "{ uint i = get_global_id(0); if (i >= n) return;\n"
                                "  p[i].v = p[i].v * 2.0f; p[i].m += 1.0f; }\n"
                                "//DL: AoS: p[n]\n"
                                "__kernel void shift(__global tail_item *p, uint n)\n"
                                "{ uint i = get_global_id(0); if (i >= n || !(i & 1)) return;\n"
                                "  p[i] = p[i - 1]; }\n"
                                "//DL: AoS: p[n]\n"
                                "__kernel void through_private(__global tail_item *p, uint n)\n"
                                "{ uint i = get_global_id(0); if (i >= n || !(i & 1)) return;\n"
                                "  tail_item t = p[i - 1]; t.m += 1.0f; p[i] = t; }\n"
                                "//DL: AoS: p[n]\n"
                                "__kernel void members_only(__global tail_item *p, uint n)\n"
                                "{ uint i = get_global_id(0); if (i >= n) return;\n"
                                "  p[i].v = p[i].v + 1.0f; p[i].m *= 2.0f; }\n";

static void padding_vec3(void)
{
    struct launch l = {PADDING_CL, "", "scale3", 8, 1000, 1024, 0, 2, 0, 0xe8};
    run(&l);
}

static void padding_struct_copy(void)
{
    struct launch l = {PADDING_CL, "", "shift", 8, 1000, 1000, 0, 1, 0, 0xe0};
    run(&l);
}

static void padding_through_private(void)
{
    struct launch l = {PADDING_CL, "", "through_private", 8, 1000, 1000, 0, 1, 0, 0xe0};
    run(&l);
}

static void padding_members_only(void)
{
    struct launch l = {PADDING_CL, "", "members_only", 8, 1000, 1024, 0, 2, 0, 0xe0};
    run(&l);
}

/* ---- item 17: extents evaluated at launch ---- */

static const char *EXTENT_CL = BODY5
    "//DL: AoS: p[global_size(0)]\n"
    "__kernel void by_global(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return; p[i].m += p[i].x; }\n"
    "//DL: AoS: p[num_groups(0) * local_size(0)]\n"
    "__kernel void by_local(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return; p[i].m += p[i].y; }\n"
    "//DL: AoS: p[n - 2000]\n"
    "__kernel void negative(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return; p[i].m += p[i].z; }\n"
    "//DL: AoS: p[n / (n - n)]\n"
    "__kernel void by_zero(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return; p[i].m -= p[i].x; }\n"
    "//DL: AoS: p[2 * n]\n"
    "__kernel void too_large(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return; p[i].m -= p[i].y; }\n"
    "//DL: AoS: p[n]\n"
    "__kernel void plain_n(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return; p[i].m -= p[i].z; }\n"
    "//DL: AoS: p[auto]\n"
    "__kernel void by_auto(__global body *p, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return; p[i].m *= p[i].w; }\n";

#define EXTENT(fn, kname, global, local, skip)                                                    \
    static void fn(void)                                                                          \
    {                                                                                             \
        struct launch l = {EXTENT_CL, "", kname, 5, 1000, global, local, 2, skip};                \
        run(&l);                                                                                  \
    }
EXTENT(extent_global_rounded_up, "by_global", 1024, 0, 0)
EXTENT(extent_global_exact, "by_global", 1000, 0, 0)
EXTENT(extent_local_null, "by_local", 1000, 0, 0)
EXTENT(extent_local_given, "by_local", 1000, 8, 0)
EXTENT(extent_local_rounded_up, "by_local", 1024, 64, 0)
EXTENT(extent_negative, "negative", 1024, 0, 0)
EXTENT(extent_divide_by_zero, "by_zero", 1024, 0, 0)
EXTENT(extent_larger_than_buffer, "too_large", 1024, 0, 0)
EXTENT(extent_unset_argument, "plain_n", 1024, 0, 1)
EXTENT(extent_auto, "by_auto", 1024, 0, 0)

/* ---- item 18: arguments that share bytes ---- */

static const char *ALIAS_CL = BODY5
    "//DL: AoS: a[n], b[n]\n"
    "__kernel void own_only(__global body *a, __global body *b, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  a[i].x += b[i].y; b[i].z += a[i].m; }\n"
    "//DL: AoS: a[n], b[n]\n"
    "__kernel void both(__global body *a, __global body *b, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  float t = a[i].x; b[i].y += t; a[(i + 3) % n].m += b[i].z; }\n"
    "//DL: AoS: a[n]\n"
    "__kernel void first_only(__global body *a, __global body *b, uint n)\n"
    "{ uint i = get_global_id(0); if (i >= n) return;\n"
    "  float t = a[i].x; b[i].y += t; a[(i + 3) % n].m += b[i].z; }\n";

/* kname on (a, b): 0 the parent itself, 1 a sub-buffer from offset 0, 2 one further on. */
static void alias(const char *kname, int a_kind, int b_kind)
{
    open_device(0);
    cl_program p = build(ALIAS_CL, "");
    cl_kernel k = kernel(p, kname);
    size_t bytes = 2000 * sizeof(particle);
    cl_mem parent = words_buffer(2000 * 5);
    cl_uint align_bits = 1024;
    clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
    size_t align = align_bits / 8;
    /* The second window starts on a structure boundary the device accepts. */
    size_t off = 0;
    while (off == 0 || off % sizeof(particle) != 0)
        off += align;
    cl_mem subs[3] = {parent, NULL, NULL};
    cl_buffer_region r1 = {0, 1000 * sizeof(particle)}, r2 = {off, 1000 * sizeof(particle)};
    cl_int err;
    subs[1] = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r1, &err);
    need("create a sub-buffer", err);
    subs[2] = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r2, &err);
    need("create a sub-buffer", err);
    cl_uint n = 1000;
    size_t g = 1024;
    rc("arg a", clSetKernelArg(k, 0, sizeof(cl_mem), &subs[a_kind]));
    rc("arg b", clSetKernelArg(k, 1, sizeof(cl_mem), &subs[b_kind]));
    rc("arg n", clSetKernelArg(k, 2, sizeof n, &n));
    for (int i = 0; i < 6; i++)
        rc(kname, clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    show("parent", parent, bytes);
    clReleaseMemObject(subs[1]);
    clReleaseMemObject(subs[2]);
    clReleaseMemObject(parent);
    close_kernel(p, k);
}

/* The kernel qualifies for the staged copy (each work-item touches only its own structures):
 * under policy never it runs staged once measured, and the two windows overlap. */
static void alias_staged(void)
{
    alias("own_only", 0, 2);
}

static void alias_parent_and_sub(void)
{
    alias("both", 0, 1);
}
static void alias_sub_and_parent(void)
{
    alias("both", 1, 0);
}
static void alias_parent_and_later_sub(void)
{
    alias("both", 0, 2);
}
static void alias_two_subs(void)
{
    alias("both", 1, 2);
}
static void alias_same_buffer(void)
{
    alias("both", 0, 0);
}
static void alias_parent_and_sub_one_annotated(void)
{
    alias("first_only", 0, 1);
}
static void alias_same_buffer_one_annotated(void)
{
    alias("first_only", 0, 0);
}

CASES({"escape-vload4", escape_vload4, ""}, {"escape-vstore2", escape_vstore2, ""},
      {"escape-index", escape_index, ""}, {"escape-negative-index", escape_negative, ""},
      {"escape-helper", escape_helper, ""}, {"escape-helper-write", escape_helper_write, ""},
      {"escape-helper-of-helper", escape_helper_of_helper, ""}, {"escape-increment", escape_increment, ""},
      {"escape-local-copy", escape_local_copy, ""}, {"escape-one-word", escape_one_word, ""},
      {"escape-whole-struct", escape_whole_struct, ""}, {"escape-neighbour", escape_neighbour, ""},
      {"escape-pointer-array", escape_pointer_array, ""}, {"escape-cast-vector", escape_cast_vector, ""},
      {"escape-choice", escape_choice, ""}, {"escape-atomic", escape_atomic, ""},
      {"struct-ifdef-else", struct_ifdef_else, ""}, {"struct-ifdef-taken", struct_ifdef_taken, ""},
      {"tile-option-zero", tile_zero, ""}, {"tile-option-three", tile_three, ""},
      {"tile-option-huge", tile_huge, ""}, {"tile-option-negative", tile_negative, ""},
      {"tile-option-expression", tile_expression, ""}, {"tile-option-sixteen", tile_sixteen, ""},
      {"staged-null-local", staged_null_local, "policy=never cachedir=off"},
      {"staged-given-local", staged_given_local, "policy=never cachedir=off"},
      {"offset-chunks-whole", offset_chunks_whole, "auto"}, {"offset-chunks-null-local", offset_chunks_null_local, "auto"},
      {"offset-chunks-reversed", offset_chunks_reversed, ""}, {"offset-unaligned", offset_unaligned, "auto"},
      {"offset-unaligned-null-local", offset_unaligned_null_local, ""},
      {"two-dimensions-null-local", two_dimensions_null_local, "auto"},
      {"two-dimensions-given-local", two_dimensions_given_local, "auto"},
      {"required-group-size", required_group_size, "auto"},
      {"nbody-local-tile", nbody_local_tile, "auto"}, {"nbody-local-tile-never", nbody_local_tile, "policy=never"},
      {"required-group-size-never", required_group_size, "policy=never"},
      {"geometry-null-local", geometry_null_local, "auto"}, {"source-latin1-literal", source_latin1_literal, ""},
      {"source-latin1-comment", source_latin1_comment, ""}, {"counter-first", counter_first, ""},
      {"counter-second", counter_second, ""}, {"padding-vec3", padding_vec3, ""},
      {"padding-struct-copy", padding_struct_copy, ""}, {"padding-through-private", padding_through_private, ""},
      {"padding-members-only", padding_members_only, ""},
      {"extent-global-rounded-up", extent_global_rounded_up, "auto"},
      {"extent-global-exact", extent_global_exact, ""}, {"extent-local-null", extent_local_null, ""},
      {"extent-local-given", extent_local_given, ""}, {"extent-local-rounded-up", extent_local_rounded_up, ""},
      {"extent-negative", extent_negative, ""}, {"extent-divide-by-zero", extent_divide_by_zero, ""},
      {"extent-larger-than-buffer", extent_larger_than_buffer, ""},
      {"extent-unset-argument", extent_unset_argument, ""}, {"extent-auto", extent_auto, ""},
      {"alias-parent-and-sub", alias_parent_and_sub, "auto"}, {"alias-sub-and-parent", alias_sub_and_parent, ""},
      {"alias-parent-and-later-sub", alias_parent_and_later_sub, ""}, {"alias-two-subs", alias_two_subs, ""},
      {"alias-same-buffer", alias_same_buffer, "auto"},
      {"alias-parent-and-sub-one-annotated", alias_parent_and_sub_one_annotated, ""},
      {"alias-same-buffer-one-annotated", alias_same_buffer_one_annotated, ""},
      {"alias-staged", alias_staged, "policy=never cachedir=off"})
