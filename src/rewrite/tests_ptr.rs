//! The rewriter on pointers derived from a buffer and on structures of every shape: the
//! rewritten text for small kernels. Whether it computes what the original computes is
//! tests/rewrite_run.rs's business (on PoCL).

use super::tests::{body_in, program, request};
use super::*;

const W: &str = "clayout_M_p";

fn rewritten(body: &str) -> String {
    let src = program(body);
    let r = rewrite_kernel(&src, &request(&src, "k", &[(0, "p", "Body")])).unwrap_or_else(|e| panic!("refused: {e}"));
    body_in(&r.source, "k__clayout_asta")
}

/// Kernel `k(__global T *p, uint n)` after `defs`, rewritten: the whole program.
fn rewrite_with(defs: &str, ty: &str, body: &str) -> String {
    let src = format!("{defs}__kernel void k(__global {ty} *p, uint n) {{\n  uint i = get_global_id(0);\n{body}\n}}\n");
    rewrite_kernel(&src, &request(&src, "k", &[(0, "p", ty)])).unwrap_or_else(|e| panic!("refused: {e}")).source
}

#[test]
fn element_pointers_become_offsets() {
    assert_eq!(
        rewritten("  __global Body *q = p + i;\n  q->x = q->y + q[1].z;\n  q++;\n  (q - 1)->id = 3;"),
        format!("  clayout_idx q = i;\n  p[clayout_asta((q), 0, 12, {W})] = p[clayout_asta((q), 1, 12, {W})] + p[clayout_asta((q + (1)), 2, 12, {W})];\n  q++;\n  ((__global int *)p)[clayout_asta((q - 1), 3, 12, {W})] = 3;")
    );
    assert_eq!(rewritten("  __global Body *q = 2 * i + p - 1;"), "  clayout_idx q = 2 * i - 1;");
    assert_eq!(
        rewritten("  __global Body *r = &p[i], *s = r;\n  (*s).x = r->y;"),
        format!(
            "  clayout_idx r = (i), s = r;\n  p[clayout_asta((s), 0, 12, {W})] = p[clayout_asta((r), 1, 12, {W})];"
        )
    );
    // A loop over a range of structures, comparisons and differences of offsets.
    assert_eq!(
        rewritten("  for (__global Body *e = p; e < p + n; e++) e->x = (float)(e - p);"),
        format!("  for (clayout_idx e = (clayout_idx)0; e < n; e++) p[clayout_asta((e), 0, 12, {W})] = (float)(((ptrdiff_t)((clayout_sidx)((e) - ((clayout_idx)0)))));")
    );
}

#[test]
fn a_parameter_that_moves_gets_an_offset_variable() {
    let src = program("  p += 2;\n  p[i].x = 1.0f;\n  p++;");
    let r = rewrite_kernel(&src, &request(&src, "k", &[(0, "p", "Body")])).unwrap();
    assert!(r.source.contains("ulong clayout_M_p) { clayout_idx clayout_o_p = 0;\n"), "{}", r.source);
    assert_eq!(
        body_in(&r.source, "k__clayout_asta"),
        format!("  clayout_o_p += 2;\n  p[clayout_asta((clayout_o_p + (i)), 0, 12, {W})] = 1.0f;\n  clayout_o_p++;")
    );
}

#[test]
fn member_pointers_address_the_byte_stream() {
    // `&p[i].x` is word 12*i of the AoS stream: its neighbours are the structure's next words.
    assert_eq!(
        rewritten("  __global float *q = &p[i].x;\n  p[i].y = q[1] - q[-1];"),
        format!("  clayout_idx q = (clayout_idx)(i) * 12 + 0;\n  p[clayout_asta((i), 1, 12, {W})] = p[clayout_aos_flat((q + (1)), 12, {W})] - p[clayout_aos_flat((q + (-1)), 12, {W})];")
    );
    // A choice between two members of one buffer.
    assert_eq!(
        rewritten("  __global float *c = (i & 1) ? &p[i].x : &p[i].a[1];"),
        "  clayout_idx c = ((i & 1)) ? ((clayout_idx)(i) * 12 + 0) : ((clayout_idx)(i) * 12 + 8 + (1) * 1);"
    );
    // An array member names its first element.
    assert_eq!(rewritten("  __global float *a = p[i].a;"), "  clayout_idx a = (clayout_idx)(i) * 12 + 8;");
}

#[test]
fn casts_between_the_structure_and_its_words() {
    assert_eq!(
        rewritten("  __global uint *w = (__global uint *)(p + i);\n  w[3] ^= 1u;"),
        format!("  clayout_idx w = (clayout_idx)((i)) * 12;\n  ((__global uint *)p)[clayout_aos_flat((w + (3)), 12, {W})] ^= 1u;")
    );
    // A vector read through a cast: lane by lane from the words.
    let src = program("  float2 v = *(__global const float2 *)&p[n - 1 - i].y;");
    let r = rewrite_kernel(&src, &request(&src, "k", &[(0, "p", "Body")])).unwrap();
    assert_eq!(
        body_in(&r.source, "k__clayout_asta"),
        format!("  float2 v = clayout_ld_f_float2(p, ((clayout_idx)(n - 1 - i) * 12 + 1), 12, {W});")
    );
    assert!(r.source.contains("return (float2)(p[clayout_aos_flat(x, S, M)], p[clayout_aos_flat(x + 1, S, M)]);"));
}

#[test]
fn vload_vstore_and_atomics() {
    assert_eq!(
        rewritten("  float4 v = vload4(1, &p[i].x);\n  vstore2(v.xy, 0, p[i].a);"),
        format!("  float4 v = clayout_ld_f_float4(p, (clayout_idx)(i) * 12 + 0 + (ulong)(1) * 4, 12, {W});\n  clayout_st_f_float2(p, (clayout_idx)(i) * 12 + 8 + (ulong)(0) * 2, 12, {W}, v.xy);")
    );
    // One word in ASTA too: its address; through a followed pointer, from its offset.
    assert_eq!(
        rewritten("  __global int *c = &p[i].id;\n  atom_inc(c);"),
        format!("  clayout_idx c = (clayout_idx)(i) * 12 + 3;\n  atom_inc(&((__global int *)p)[clayout_aos_flat(c, 12, {W})]);")
    );
    assert_eq!(
        rewritten("  atomic_add(&p[i % 4].id, 1);"),
        format!("  atomic_add(&((__global int *)p)[clayout_asta((i % 4), 3, 12, {W})], 1);")
    );
}

#[test]
fn parenthesized_and_dereferenced_elements() {
    assert_eq!(
        rewritten("  ((p)[(i)]).x = 2.0f;\n  (*p).y = 1.0f;\n  Body b = *(p + i);"),
        format!("  p[clayout_asta(((i)), 0, 12, {W})] = 2.0f;\n  p[clayout_asta(0, 1, 12, {W})] = 1.0f;\n  Body b = clayout_ld_Body(p, (i), {W});")
    );
}

#[test]
fn swizzle_stores_and_increments_of_vectors() {
    let src = program("  p[i].v.xyz = (float3)(1.0f);\n  p[i].v.xy += 2.0f;");
    let r = rewrite_kernel(&src, &request(&src, "k", &[(0, "p", "Body")])).unwrap();
    assert_eq!(
        body_in(&r.source, "k__clayout_asta"),
        format!("  clayout_sw_float4_s0s1s2(p, (i), 4, 12, {W}, (float3)((float3)(1.0f)));\n  clayout_sw_float4_s0s1(p, (i), 4, 12, {W}, (float2)(clayout_ld_float4(p, (i), 4, 12, {W}).xy + (2.0f)));")
    );
    // Only the lanes named are written.
    let sw = &r.source[r.source.find("float3 clayout_sw_float4_s0s1s2(").unwrap()..];
    let sw = &sw[..sw.find("#endif").unwrap()];
    assert!(sw.contains("  p[clayout_asta(i, s + 2, S, M)] = v.s2;\n  return v;"), "{sw}");
    assert!(!sw.contains("s + 3"), "{sw}");
}

#[test]
fn helpers_receive_the_buffer_and_the_offset() {
    let defs = format!("{}float sum3(__global const float *a) {{ return a[0] + a[1] + a[2]; }}\nvoid walk(__global Body *b, uint k) {{ b += k; b->x = 1.0f; }}\n", tests::BODY);
    let s = rewrite_with(&defs, "Body", "  p[i].y = sum3(&p[i].a[0]);\n  walk(p, i);\n  walk(p + 1, i);");
    // A pointer at the buffer's start passes no offset; the copy keeps one of its own.
    assert!(
        s.contains("(__global float *b, uint k, ulong clayout_M_b) { clayout_idx clayout_o_b = 0; clayout_o_b += k;"),
        "{s}"
    );
    assert!(
        s.contains("(__global float *b, uint k, ulong clayout_M_b, clayout_idx clayout_o_b) { clayout_o_b += k;"),
        "{s}"
    );
    assert!(s.contains("(__global const float *a, ulong clayout_M_a, clayout_idx clayout_o_a) { return a[clayout_aos_flat((clayout_o_a + (0)), 12, clayout_M_a)]"), "{s}");
    assert!(s.contains("(p, clayout_M_p, (clayout_idx)(i) * 12 + 8 + (0) * 1);"), "{s}");
    assert!(s.contains("(p, i, clayout_M_p, 1);"), "{s}");
}

#[test]
fn members_of_mixed_sizes() {
    // int + double: 4-byte words, a double spans two.
    let site = "typedef struct { int type; int flags; double x, y; } Site;\n";
    let s = rewrite_with(site, "Site", "  p[i].flags = p[i].type + 1;\n  p[i].x += p[i].y;\n  p[i].y++;");
    assert!(s.contains("__kernel void k__clayout_asta(__global int *p, uint n, ulong clayout_M_p) {"), "{s}");
    assert!(
        s.contains("  p[clayout_asta((i), 1, 6, clayout_M_p)] = p[clayout_asta((i), 0, 6, clayout_M_p)] + 1;"),
        "{s}"
    );
    assert!(s.contains("clayout_st_double_s4(((__global uint *)p), (i), 1, 6, clayout_M_p, (double)clayout_ld_double_s4(((const __global uint *)p), (i), 1, 6, clayout_M_p) + (clayout_ld_double_s4(((const __global uint *)p), (i), 2, 6, clayout_M_p)));"), "{s}");
    assert!(
        s.contains(
            "return as_double((uint2)(p[clayout_asta(i, (s) * 2 + 0, S, M)], p[clayout_asta(i, (s) * 2 + 1, S, M)]));"
        ),
        "{s}"
    );
    // float + uchar4: the vector is one word.
    let splat = "typedef struct { float x, y, z; uchar4 color; } Splat;\n";
    let s = rewrite_with(splat, "Splat", "  p[i].color.y += 1;");
    assert!(s.contains("  ((__global uchar4 *)p)[clayout_asta((i), 3, 4, clayout_M_p)].y += 1;"), "{s}");
    // float + uchar + uchar[3]: bytes inside the second word.
    let wt = "typedef struct { float w; uchar flags; uchar pad[3]; } Wt;\n";
    let s = rewrite_with(wt, "Wt", "  p[i].pad[k] = p[i].flags;\n  __global uchar *b = &p[i].flags;\n  b[2] = 1;");
    assert!(s.contains("  ((__global uchar *)p)[clayout_asta_part((i), 5 + (k) * 1, 2, clayout_M_p, 4)] = ((__global uchar *)p)[(ulong)(clayout_asta((i), 1, 2, clayout_M_p)) * 4 + 0];"), "{s}");
    assert!(s.contains("  ulong b = (ulong)(i) * 8 + 4;\n  ((__global uchar *)p)[clayout_aos_part((b + (2)), 2, clayout_M_p, 4)] = 1;"), "{s}");
}

#[test]
fn nested_structures() {
    let defs = "typedef struct { float x, y, z; } vec3_t;\ntypedef struct { vec3_t v[3]; float area; } Tri;\n";
    let s = rewrite_with(defs, "Tri", "  p[i].v[k].z += 1.0f;\n  vec3_t e = p[i].v[1];\n  p[i].v[2] = e;");
    assert!(s.contains("  ((__global float *)p)[clayout_asta((i), 2 + (k) * 3, 10, clayout_M_p)] += 1.0f;"), "{s}");
    assert!(s.contains("  vec3_t e = clayout_ld_vec3_t_at4(p, (i), (clayout_idx)(0 + (1) * 12), 10, clayout_M_p);\n  clayout_st_vec3_t_at4(p, (i), (clayout_idx)(0 + (2) * 12), 10, clayout_M_p, (e));"), "{s}");
    assert!(s.contains("  v.z = ((const __global float *)p)[clayout_asta(i, (b + 8) / 4, S, M)];"), "{s}");
}

#[test]
fn flat_buffers_of_a_typedef_and_moved() {
    let src = "typedef double real_t;\n//DL: AoS(5): u[n]\n__kernel void k(__global real_t *u, uint n) {\n  uint i = get_global_id(0);\n  __global real_t *q = u + i * 5;\n  u += 5;\n  q[1] = u[0];\n}\n";
    let layout = crate::annotation::annotations_in_source(src).remove(0).layout.unwrap();
    let (req, _) = request::request(src, &layout).unwrap();
    let r = rewrite_kernel(src, &req).unwrap();
    assert!(r.source.contains("  clayout_idx q = clayout_o_u + i * 5;\n  clayout_o_u += 5;\n  u[clayout_aos_flat((q + (1)), 5, clayout_M_u)] = u[clayout_aos_flat((clayout_o_u + (0)), 5, clayout_M_u)];"), "{}", r.source);
}

#[test]
fn what_cannot_be_followed_is_refused_with_its_line() {
    let run = |defs: &str, body: &str| {
        let src = format!("{}{defs}\n__kernel void k(__global Body *p, __global Body *q, uint n) {{\n  uint i = get_global_id(0);\n{body}\n}}\n", tests::BODY);
        rewrite_kernel(&src, &request(&src, "k", &[(0, "p", "Body"), (1, "q", "Body")]))
    };
    let table: &[(&str, &str, &str)] = &[
        ("", "  if (p + i == q) return;", "compared or subtracted"),
        ("", "  __global Body *r = (i & 1) ? p : q;", "merged in one expression"),
        ("", "  __global Body *r = p; if (n) r = q;", "points into `p` and into `q`"),
        (
            "",
            "  union { __global float *f; ulong u; } a; a.f = &p[i].x;",
            "stored where the rewriter does not follow it",
        ),
        ("", "  ulong a = (ulong)(p + i);", "converted to `ulong`"),
        ("", "  __global float *at[2] = {&p[i].x, &q[i].x};", "array of pointers"),
        ("", "  __global Body *r = p + i; r = 0;", "also given a value that does not"),
        ("__global float *h(__global Body *b) { return &b->x; }", "  float v = *h(p);", "returns a pointer"),
        ("#define FIRST(b) b[0].x", "  FIRST(p) = 1.0f;", "passed to macro `FIRST`"),
        ("", "  atomic_add((__global uchar *)&p[i].x, 1);", "does not fill one word"),
    ];
    for (defs, body, reason) in table {
        let e = run(defs, body).expect_err(body);
        assert!(e.reason.contains(reason), "{body}: {e}");
        assert_eq!(e.line, 5, "{body}: {e}");
    }
}
