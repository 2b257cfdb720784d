//! The proof that a kernel overwrites a buffer before reading it: the samples' kernels, each
//! rule of the proof, and odd input.

use super::tests::request;
use super::*;

const LBM: &str = include_str!("../../samples/lbm/lbm_aos.cl");

fn lbm_request(src: &str) -> RewriteRequest {
    request(src, "lbm_stream_collide", &[(0, "src", "cell_t"), (1, "dst", "cell_t")])
}

/// What the proof says of `dst` in lbm's kernel with `from` replaced by `to`: None when not
/// proved, else the bound's text ("" for none).
fn lbm_with(from: &str, to: &str) -> Option<String> {
    assert!(LBM.contains(from), "{from}");
    let src = LBM.replacen(from, to, 1);
    proved(&src, &lbm_request(&src), "dst")
}

fn proved(src: &str, req: &RewriteRequest, name: &str) -> Option<String> {
    let found = overwritten(src, req);
    found.iter().find(|o| o.name == name).map(|o| o.bound.as_ref().map_or(String::new(), |b| b.text.clone()))
}

const CELL: &str = "typedef struct { float f[4]; } cell;\ntypedef struct { float t; float k; } pair;\n";

/// Kernel `k(__global cell *d, __global const cell *s, uint n)` with `body`: the proof's bound
/// for `d`, None when not proved.
fn cell(body: &str) -> Option<String> {
    let src = format!("{CELL}__kernel void k(__global cell *d, __global const cell *s, uint n) {{\n{body}\n}}\n");
    proved(&src, &request(&src, "k", &[(0, "d", "cell"), (1, "s", "cell")]), "d")
}

const GUARD: &str = "uint i = get_global_id(0);\nif (i >= n) return;\n";

#[test]
fn lbm_destination_is_overwritten_below_its_guard() {
    let found = overwritten(LBM, &lbm_request(LBM));
    assert_eq!(found.len(), 1, "{found:?}");
    let o = &found[0];
    assert_eq!((o.index, o.name.as_str()), (1, "dst"));
    let b = o.bound.as_ref().unwrap();
    assert_eq!(b.text, "nx * ny * nz");
    let names: Vec<(&str, u32)> = b.args.iter().map(|a| (a.name.as_str(), a.arg_index)).collect();
    assert_eq!(names, [("nx", 3), ("ny", 4), ("nz", 5)]);
    assert_eq!(b.extent.to_string(), "nx * ny * nz");
}

#[test]
fn lbm_variants_that_leave_a_word_unwritten_are_not_proved() {
    // One population fewer on the solid cells' path, or on the fluid cells'.
    assert_eq!(lbm_with("dst[i].f[k] = own[k];", "if (k < 18) dst[i].f[k] = own[k];"), None);
    assert_eq!(
        lbm_with("for (int k = 0; k < 19; k++)\n            dst", "for (int k = 0; k < 18; k++)\n            dst"),
        None
    );
    assert_eq!(
        lbm_with(
            "for (int k = 0; k < 19; k++) {\n        float cu",
            "for (int k = 1; k < 19; k++) {\n        float cu"
        ),
        None
    );
    // A loop whose count is not a number.
    assert_eq!(
        lbm_with("for (int k = 0; k < 19; k++)\n            dst", "for (int k = 0; k < nx; k++)\n            dst"),
        None
    );
    // The loop variable changed in the body.
    assert_eq!(lbm_with("dst[i].f[k] = f[k] + omega", "dst[i].f[k++] = f[k] + omega"), None);
    // A return before the stores.
    assert_eq!(lbm_with("    float rho = 0.0f", "    if (omega > 1.0f) return;\n    float rho = 0.0f"), None);
    // A read.
    assert_eq!(lbm_with("    float rho = 0.0f", "    float q = dst[i].f[0];\n    float rho = 0.0f"), None);
    // Another guard, or none that the proof reads: the early return leaves the cells unwritten.
    assert_eq!(lbm_with("if (i >= nx * ny * nz)", "if (i >= nx * ny * nz || omega < 0)"), None);
    assert_eq!(lbm_with("if (i >= nx * ny * nz)", "if (i > nx * ny * nz)"), None);
}

#[test]
fn lbm_with_a_literal_bound_macro_and_the_other_guard_forms() {
    assert_eq!(lbm_with("if (i >= nx * ny * nz)", "if (nx * ny * nz <= i)").as_deref(), Some("nx * ny * nz"));
    assert_eq!(
        lbm_with("if (i >= nx * ny * nz)", "if (get_global_id(0) >= (nx + 1) * 2)").as_deref(),
        Some("( nx + 1 ) * 2")
    );
    assert_eq!(
        lbm_with("for (int k = 0; k < 19; k++) {\n        float cu", "for (int k = 0; k < Q; k++) {\n        float cu")
            .map(|_| ()),
        None,
        "Q is not defined"
    );
    let src = format!("#define Q 19\n{}", LBM.replace("k < 19", "k < Q"));
    assert_eq!(proved(&src, &lbm_request(&src), "dst").as_deref(), Some("nx * ny * nz"));
}

#[test]
fn stores_in_both_branches_count_in_one_only_not() {
    let all = "for (int k = 0; k < 4; k++) d[i].f[k] = 1.0f;";
    assert_eq!(cell(&format!("{GUARD}if (n > 3) {{ {all} }} else {{ {all} }}")).as_deref(), Some("n"));
    assert_eq!(cell(&format!("{GUARD}if (n > 3) {{ {all} }}")), None);
    assert_eq!(cell(&format!("{GUARD}if (n > 3) {{ {all} }} else {{ d[i].f[0] = 1; }}")), None);
    // Each word on its own, and through a `#define`d index.
    assert_eq!(
        cell(&format!("{GUARD}d[i].f[0] = 1; d[i].f[1] = 2; d[i].f[2] = 3; d[i].f[3] = s[i].f[0];")).as_deref(),
        Some("n")
    );
    assert_eq!(cell(&format!("{GUARD}d[i].f[0] = 1; d[i].f[1] = 2; d[i].f[3] = 3;")), None);
    // A branch that returns after writing everything.
    assert_eq!(cell(&format!("{GUARD}if (s[i].f[0] > 0) {{ {all} return; }}\n{all}")).as_deref(), Some("n"));
    assert_eq!(cell(&format!("{GUARD}if (s[i].f[0] > 0) {{ d[i].f[0] = 0; return; }}\n{all}")), None);
}

#[test]
fn anything_but_a_plain_store_is_not_proved() {
    let all = "for (int k = 0; k < 4; k++) d[i].f[k] = 1.0f;\n";
    for extra in [
        "d[i].f[0] += 1;",
        "d[i].f[0]++;",
        "d[i + 1].f[0] = 1;",
        "d[n].f[0] = 1;",
        "helper(d);",
        "__global cell *q = d;",
        "__global cell *q = d + i;",
        "float x = d[i].f[1];",
        "d[i].f[0] = d[i].f[1];",
        "*d = s[0];",
        "d->f[0] = 1;",
        "d[i].f[0] = 1, d[i].f[1] = 2;",
        "for (uint j = 0; j < n; j++) d[i].f[0] = j; d[i].f[0] = d[i].f[0];",
        "barrier(CLK_GLOBAL_MEM_FENCE);",
    ] {
        assert_eq!(cell(&format!("{GUARD}{all}{extra}")), None, "{extra}");
    }
    assert_eq!(cell(&format!("{GUARD}{all}")).as_deref(), Some("n"));
}

#[test]
fn loops_count_only_when_they_run_through() {
    let g = GUARD;
    assert_eq!(cell(&format!("{g}for (int k = 0; k < 4; k++) {{ if (k == 2) break; d[i].f[k] = 1; }}")), None);
    assert_eq!(cell(&format!("{g}for (int k = 0; k < 4; k++) {{ if (k == 2) continue; d[i].f[k] = 1; }}")), None);
    assert_eq!(cell(&format!("{g}for (int k = 0; k < 4; k++) {{ int k = 0; d[i].f[k] = 1; }}")), None);
    // An inner loop that runs through stores; one that may not run, not.
    assert_eq!(
        cell(&format!("{g}for (int k = 0; k < 4; k++) {{ for (int j = 0; j < 4; j++) d[i].f[k] = j; }}")).as_deref(),
        Some("n")
    );
    assert_eq!(
        cell(&format!("{g}for (int k = 0; k < 4; k++) {{ for (uint j = 0; j < n; j++) d[i].f[k] = j; }}")),
        None
    );
    assert_eq!(
        cell(&format!("{g}for (int k = 0; k < 4; ++k) {{ float x = 2.0f * k; d[i].f[k] = x; }}")).as_deref(),
        Some("n")
    );
    assert_eq!(cell(&format!("{g}int k = 0; while (k < 4) {{ d[i].f[k] = 1; k++; }}")), None);
    assert_eq!(cell(&format!("{g}for (int k = 0; k < 4; k++) {{ if (s[i].f[k] > 0) return; d[i].f[k] = 1; }}")), None);
}

#[test]
fn whole_structure_stores_and_no_guard() {
    // No guard: every work-item writes its structure.
    assert_eq!(cell("uint i = get_global_id(0);\nd[i] = s[i];").as_deref(), Some(""));
    assert_eq!(cell("d[get_global_id(0)] = s[get_global_id(0)];").as_deref(), Some(""));
    // A guard around the rest.
    assert_eq!(cell("size_t i = get_global_id(0);\nif (i < n * 2) { d[i] = s[i]; }").as_deref(), Some("n * 2"));
    // A global-id variable that changes is no global id.
    assert_eq!(cell("uint i = get_global_id(0);\ni += 1;\nd[i] = s[i];"), None);
    // A guard on something else, a bound naming a local or a pointer.
    assert_eq!(cell("uint i = get_global_id(0);\nif (i >= s[0].f[0]) return;\nd[i] = s[i];"), None);
    assert_eq!(cell("uint i = get_global_id(0);\nuint m = n;\nif (i >= m) return;\nd[i] = s[i];"), None);
    // A bound with a division or a cast.
    assert_eq!(cell("uint i = get_global_id(0);\nif (i >= n / 2) return;\nd[i] = s[i];"), None);
    assert_eq!(cell("uint i = get_global_id(0);\nif (i >= (uint)n) return;\nd[i] = s[i];"), None);
}

#[test]
fn members_vectors_and_padding() {
    let src = "typedef struct { float4 v; float3 w; int c; float p[3]; } S;\n__kernel void k(__global S *d) {\n  uint i = get_global_id(0);\n  BODY\n}\n";
    let run = |body: &str| {
        let s = src.replace("BODY", body);
        proved(&s, &request(&s, "k", &[(0, "d", "S")]), "d")
    };
    // The 3-vector's fourth lane is padding that a member store need not write.
    assert_eq!(run("d[i].v = 1; d[i].w = 2; d[i].c = 3; d[i].p[0] = 1; d[i].p[1] = 1; d[i].p[2] = 1;"), None);
    assert_eq!(run("S t = {0}; d[i] = t;").as_deref(), Some(""));
    let src2 = "typedef struct { float4 v; int c; float p[3]; } S;\n__kernel void k(__global S *d) {\n  uint i = get_global_id(0);\n  BODY\n}\n";
    let run2 = |body: &str| {
        let s = src2.replace("BODY", body);
        proved(&s, &request(&s, "k", &[(0, "d", "S")]), "d")
    };
    assert_eq!(
        run2("d[i].v.x = 1; d[i].v.y = 1; d[i].v.z = 1; d[i].v.w = 1; d[i].c = 3; for (int k = 0; k < 3; k++) d[i].p[k] = 1;")
            .as_deref(),
        Some("")
    );
    assert_eq!(run2("d[i].v.xy = 1; d[i].v.zw = 1; d[i].c = 3; for (int k = 0; k < 3; k++) d[i].p[k] = 1;"), None);
    assert_eq!(
        run2("d[i].v.x = 1; d[i].v.y = 1; d[i].v.z = 1; d[i].c = 3; for (int k = 0; k < 3; k++) d[i].p[k] = 1;"),
        None
    );
}

#[test]
fn nested_structures() {
    let src = "typedef struct { float a; float b; } In;\ntypedef struct { In in[2]; float z; float q; } S;\n__kernel void k(__global S *d) {\n  uint i = get_global_id(0);\n  BODY\n}\n";
    let run = |body: &str| {
        let s = src.replace("BODY", body);
        proved(&s, &request(&s, "k", &[(0, "d", "S")]), "d")
    };
    assert_eq!(
        run("for (int k = 0; k < 2; k++) { d[i].in[k].a = 1; d[i].in[k].b = 2; } d[i].z = 0; d[i].q = 0;").as_deref(),
        Some("")
    );
    assert_eq!(run("In t = {1, 2}; d[i].in[0] = t; d[i].in[1] = t; d[i].z = 0; d[i].q = 0;").as_deref(), Some(""));
    assert_eq!(run("for (int k = 0; k < 2; k++) { d[i].in[k].a = 1; } d[i].z = 0; d[i].q = 0;"), None);
}

#[test]
fn samples_that_read_their_buffers_are_not_proved() {
    let src = include_str!("../../samples/particles/particles_aos.cl");
    for k in ["particles_accelerate", "particles_drift", "particles_bounce"] {
        assert_eq!(overwritten(src, &request(src, k, &[(0, "p", "particle_t")])), [], "{k}");
    }
    let src = include_str!("../../samples/blackscholes/blackscholes_aos.cl");
    assert_eq!(overwritten(src, &request(src, "black_scholes", &[(0, "opt", "option_t")])), []);
}

#[test]
fn macros_that_hide_a_mention_or_a_jump_are_not_proved() {
    let all = "for (int k = 0; k < 4; k++) d[i].f[k] = 1.0f;";
    let with = |defs: &str, body: &str| {
        let src = format!("{CELL}{defs}\n__kernel void k(__global cell *d, uint n) {{\n{GUARD}{body}\n}}\n");
        proved(&src, &request(&src, "k", &[(0, "d", "cell")]), "d")
    };
    assert_eq!(with("#define ONE 1.0f", &format!("{all} d[i].f[0] = ONE;")).as_deref(), Some("n"));
    assert_eq!(with("#define OUT d", &format!("{all} OUT[i].f[0] = 1;")), None);
    assert_eq!(with("#define BAIL if (n > 9) return", &format!("BAIL; {all}")), None);
    assert_eq!(with("#define READ(x) x[0].f[0]", &format!("{all} float r = READ(d);")), None);
    assert_eq!(with("", &format!("#if 1\n{all}\n#endif")), None);
    assert_eq!(with("", &format!("#pragma unroll\n{all}")).as_deref(), Some("n"));
    assert_eq!(with("", &format!("# 12 \"heat.cl\"\n{all}\n#line 14")).as_deref(), Some("n"));
    assert_eq!(with("", &format!("#define Z 1\n{all}")), None);
}

#[test]
fn odd_input_is_not_proved_and_never_panics() {
    let r = request(CELL, "k", &[(0, "d", "cell")]);
    let req = |_: &str| r.clone();
    for src in [
        "",
        "__kernel void k(",
        "__kernel void k(__global cell *d) {",
        "__kernel void k(__global cell *d) { d[get_global_id(0)] = ",
        "__kernel void k(__global cell *d) { d[ = 1; }",
        "__kernel void k(__global cell *d) { d[get_global_id(0)].f[99] = 1; }",
        "__kernel void k(__global cell *d) { d[get_global_id(0)].f[-1] = 1; }",
        "__kernel void k(__global cell *d) { d[get_global_id(0)].g = 1; }",
        "__kernel void k(__global cell *d) { for (int k = 0; k < 99999999999999999999; k++) d[get_global_id(0)].f[k] = 1; }",
        "__kernel void k(__global cell *d) { if (get_global_id(0) >= ) return; d[get_global_id(0)] = d[0]; }",
        "__kernel void k(__global cell *d) { } } } ( ( [",
        "__kernel void k(__global cell *d) { \"unterminated }",
        "__kernel void k(__global cell *d) { /* unterminated }",
        "__kernel void k(__global cell *d, uint n) { uint i = get_global_id(0); if (i >= n) return; else d[i] = 0; }",
    ] {
        let s = format!("{CELL}{src}");
        let _ = overwritten(&s, &req(&s));
    }
    let deep = format!(
        "{CELL}__kernel void k(__global cell *d) {{ {} d[get_global_id(0)] = 0; {} }}",
        "{".repeat(5000),
        "}".repeat(5000)
    );
    assert_eq!(overwritten(&deep, &req(&deep)), []);
    let ifs =
        format!("{CELL}__kernel void k(__global cell *d) {{ {} d[get_global_id(0)] = 0; }}", "if (1) ".repeat(5000));
    assert_eq!(overwritten(&ifs, &req(&ifs)), []);
}

/// Every prefix of lbm's source, and the source with each bracket dropped: no panic, and
/// nothing proved that the whole kernel does not prove.
#[test]
fn cut_and_unbalanced_sources_never_panic() {
    let req = lbm_request(LBM);
    let cuts = (0..LBM.len()).step_by(5).filter(|&n| LBM.is_char_boundary(n)).map(|n| LBM[..n].to_string());
    let unbalanced =
        LBM.match_indices(['(', ')', '{', '}', '[', ']']).map(|(at, _)| format!("{}{}", &LBM[..at], &LBM[at + 1..]));
    for src in cuts.chain(unbalanced) {
        for o in overwritten(&src, &req) {
            assert_eq!(o.name, "dst", "{src}");
        }
    }
}
