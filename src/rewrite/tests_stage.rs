//! The staged rewrite on source text: the samples' kernels, the generated prologue and
//! epilogue, and a refusal for each rule. Whether the copy computes what the original computes
//! is tests/rewrite_run.rs's business (on PoCL).

use super::tests::{body_in, flat_request, program, BODY};
use super::*;

fn request(src: &str, kernel: &str, params: &[(usize, &str, &str)]) -> RewriteRequest {
    RewriteRequest { private_name: format!("{kernel}__clayout_staged"), ..super::tests::request(src, kernel, params) }
}

/// Kernel `k` of [`program`] staged, with `body` after its `uint i = get_global_id(0);`.
fn staged(body: &str) -> Staged {
    let src = program(body);
    stage_kernel(&src, &request(&src, "k", &[(0, "p", "Body")])).unwrap_or_else(|e| panic!("refused: {e}"))
}

/// Kernel `k` with `body` (and no `i` of its own) after the lines of `defs`.
fn with(defs: &str, body: &str) -> Result<Staged, Refusal> {
    let src = format!("{BODY}{defs}\n__kernel void k(__global Body *p, uint n) {{\n{body}\n}}\n");
    stage_kernel(&src, &request(&src, "k", &[(0, "p", "Body")]))
}

fn body_of(r: &Staged) -> String {
    body_in(&r.source, "k__clayout_staged")
}

const L: &str = "((__local float *)clayout_stage_p)";
const GID: &str = "  uint i = get_global_id(0);\n";
const WRITE_BACK: &str = "  barrier(CLK_LOCAL_MEM_FENCE);
  if (clayout_oa_p)
    for (clayout_idx clayout_k = clayout_lid; clayout_k < clayout_n_p; clayout_k += clayout_wg)
      ((__global uint *)p)[clayout_at_p + clayout_k] = clayout_stage_p[CLAYOUT_STAGE_ASTA(clayout_k, 12)];
  else
    for (clayout_idx clayout_k = clayout_lid; clayout_k < clayout_n_p; clayout_k += clayout_wg)
      ((__global uint *)p)[clayout_at_p + clayout_k] = clayout_stage_p[clayout_k];";

#[test]
fn particles_drift_in_full() {
    let src = include_str!("../../samples/particles/particles_aos.cl");
    let r = stage_kernel(src, &request(src, "particles_drift", &[(0, "p", "particle_t")])).unwrap();
    let expected = format!("#ifndef CLAYOUT_STAGE_WG
#define CLAYOUT_STAGE_WG 64
#endif
#ifndef CLAYOUT_STAGE_ASTA
#define CLAYOUT_STAGE_ASTA(k, S) (((k) / CLAYOUT_TILE / (S) * CLAYOUT_TILE + (k) % CLAYOUT_TILE) * (S) + (k) / CLAYOUT_TILE % (S))
#endif
#line 36
__kernel void particles_drift__clayout_staged(__global particle_t *p, uint n, float dt, ulong clayout_M_p, ulong clayout_asta_in_p, ulong clayout_asta_out_p)
{{
  const clayout_idx clayout_lid = get_local_id(0), clayout_wg = get_local_size(0);
  const ulong clayout_first = get_global_id(0) - get_local_id(0);
  __local uint clayout_stage_p[CLAYOUT_STAGE_WG * 8];
  const clayout_idx clayout_n_p = clayout_first < clayout_M_p ? (clayout_idx)min((ulong)clayout_wg, clayout_M_p - clayout_first) * 8 : 0;
  const clayout_idx clayout_at_p = (clayout_idx)clayout_first * 8;
  const int clayout_ia_p = clayout_first + clayout_wg <= min(clayout_asta_in_p, clayout_M_p), clayout_oa_p = clayout_first + clayout_wg <= min(clayout_asta_out_p, clayout_M_p);
  if (clayout_ia_p)
    for (clayout_idx clayout_k = clayout_lid; clayout_k < clayout_n_p; clayout_k += clayout_wg)
      clayout_stage_p[CLAYOUT_STAGE_ASTA(clayout_k, 8)] = ((const __global uint *)p)[clayout_at_p + clayout_k];
  else
    for (clayout_idx clayout_k = clayout_lid; clayout_k < clayout_n_p; clayout_k += clayout_wg)
      clayout_stage_p[clayout_k] = ((const __global uint *)p)[clayout_at_p + clayout_k];
  barrier(CLK_LOCAL_MEM_FENCE);
#line 37

    uint i = get_global_id(0);
    if (i >= n)
        goto clayout_stage_end;
    {L}[clayout_lid * 8 + 0] += {L}[clayout_lid * 8 + 3] * dt;
    {L}[clayout_lid * 8 + 1] += {L}[clayout_lid * 8 + 4] * dt;
    {L}[clayout_lid * 8 + 2] += {L}[clayout_lid * 8 + 5] * dt;
clayout_stage_end: ;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (clayout_oa_p)
    for (clayout_idx clayout_k = clayout_lid; clayout_k < clayout_n_p; clayout_k += clayout_wg)
      ((__global uint *)p)[clayout_at_p + clayout_k] = clayout_stage_p[CLAYOUT_STAGE_ASTA(clayout_k, 8)];
  else
    for (clayout_idx clayout_k = clayout_lid; clayout_k < clayout_n_p; clayout_k += clayout_wg)
      ((__global uint *)p)[clayout_at_p + clayout_k] = clayout_stage_p[clayout_k];
}}
#line 44
");
    assert!(r.source.contains(&expected), "{}", r.source);
    // The original program is kept, the copy inserted after the kernel.
    let end = src.find("}\n\n// A particle").unwrap() + 1;
    assert!(r.source.starts_with(&src[..end]));
    assert!(r.source.ends_with(&src[end..]));
    assert!(r.source.contains("/* clayout: staged copy of kernel `particles_drift` */"));
    let extra = |index, what| ExtraArg { param: "p".into(), index, what };
    assert_eq!(
        r.extra_args,
        vec![extra(3, ExtraKind::StructCount), extra(4, ExtraKind::AstaIn), extra(5, ExtraKind::AstaOut)]
    );
    assert_eq!(r.params, vec![StagedParam { index: 0, name: "p".into(), writes_back: true }]);
}

#[test]
fn the_samples_are_staged() {
    let particles = include_str!("../../samples/particles/particles_aos.cl");
    let bs = include_str!("../../samples/blackscholes/blackscholes_aos.cl");
    for (src, kernel, p, ty) in [
        (bs, "black_scholes", "opt", "option_t"),
        (particles, "particles_accelerate", "p", "particle_t"),
        (particles, "particles_drift", "p", "particle_t"),
        (particles, "particles_bounce", "p", "particle_t"),
    ] {
        let r = stage_kernel(src, &request(src, kernel, &[(0, p, ty)])).unwrap_or_else(|e| panic!("{kernel}: {e}"));
        assert!(r.params[0].writes_back, "{kernel}");
        assert!(r.source.contains(&format!("__local uint clayout_stage_{p}[CLAYOUT_STAGE_WG * ")));
        assert_eq!(r.source.matches("goto clayout_stage_end;").count(), 1, "{kernel}");
        let copy = &r.source[r.source.find(&format!("{kernel}__clayout_staged")).unwrap()..];
        assert!(!copy[..copy.find("\n}\n").unwrap()].contains(&format!("{p}[i]")), "{kernel}: an access left");
    }
}

#[test]
fn members_components_vectors_and_whole_structures() {
    let r = staged("  p[i].id += 2;\n  p[i].a[1] = p[i].v.y;\n  p[get_global_id(0)].v = p[i].v * 2.0f;\n  Body q = p[i];\n  (p + i)->x = q.z;\n  p[(i)] = q;");
    let ld = "clayout_ld_local_float4(((const __local float *)clayout_stage_p), clayout_lid, 4, 12, clayout_M_p)";
    assert_eq!(
        body_of(&r),
        format!("  ((__local int *)clayout_stage_p)[clayout_lid * 12 + 3] += 2;\n  {L}[clayout_lid * 12 + 8 + (1) * 1] = {L}[clayout_lid * 12 + 4 + 1];\n  clayout_st_local_float4({L}, clayout_lid, 4, 12, clayout_M_p, (float4)({ld} * 2.0f));\n  Body q = clayout_ld_local_Body(clayout_stage_p, clayout_lid, clayout_M_p);\n  {L}[clayout_lid * 12 + 0] = q.z;\n  clayout_st_local_Body(clayout_stage_p, clayout_lid, clayout_M_p, (q));\n{WRITE_BACK}")
    );
    for piece in [
        "float4 clayout_ld_local_float4(const __local float *p, clayout_idx i, clayout_idx s, clayout_idx S, clayout_idx M) {\n  return (float4)(p[i * S + s], p[i * S + s + 1], p[i * S + s + 2], p[i * S + s + 3]);",
        "Body clayout_ld_local_Body(const __local uint *p, clayout_idx i, clayout_idx M) {",
        "  u.w[3] = p[i * 12 + 3];",
        "  p[i * 12 + 9] = u.w[9];",
        "#ifndef CLAYOUT_HAVE_local_Body",
    ] {
        assert!(r.source.contains(piece), "{piece}\n{}", r.source);
    }
    // Nothing returns early: no label.
    assert!(!r.source.contains("clayout_stage_end"));
}

#[test]
fn eight_byte_words_stage_as_ulong() {
    let src = "typedef struct { double d; long n; } D;\n__kernel void k(__global D *p) {\n  size_t i = get_global_id(0);\n  p[i].n = (long)p[i].d;\n}\n";
    let r = stage_kernel(src, &request(src, "k", &[(0, "p", "D")])).unwrap();
    for piece in [
        "__local ulong clayout_stage_p[CLAYOUT_STAGE_WG * 2];",
        "((__local long *)clayout_stage_p)[clayout_lid * 2 + 1] = (long)((__local double *)clayout_stage_p)[clayout_lid * 2 + 0];",
        "((__global ulong *)p)[clayout_at_p + clayout_k] = clayout_stage_p[clayout_k];",
    ] {
        assert!(r.source.contains(piece), "{piece}\n{}", r.source);
    }
}

#[test]
fn read_only_buffers_are_not_written_back() {
    let src = format!("{BODY}__kernel void k(__global const Body *a, __global Body *b, __global float *out, uint n) {{\n  const uint i = get_global_id(0);\n  if (i >= n) return;\n  out[i] = a[i].x + b[i].v.z;\n}}\n");
    let req = request(&src, "k", &[(0, "a", "Body"), (1, "b", "Body")]);
    let r = stage_kernel(&src, &req).unwrap();
    let summary: Vec<(&str, bool, usize)> =
        r.params.iter().zip(&r.extra_args).map(|(p, e)| (p.name.as_str(), p.writes_back, e.index)).collect();
    assert_eq!(summary, vec![("a", false, 4), ("b", false, 5)]);
    let orders: Vec<(&str, usize, ExtraKind)> =
        r.extra_args[2..].iter().map(|e| (e.param.as_str(), e.index, e.what)).collect();
    use ExtraKind::{AstaIn, AstaOut};
    assert_eq!(orders, vec![("a", 6, AstaIn), ("a", 7, AstaOut), ("b", 8, AstaIn), ("b", 9, AstaOut)]);
    assert!(r.source.contains(", ulong clayout_M_a, ulong clayout_M_b, ulong clayout_asta_in_a, ulong clayout_asta_out_a, ulong clayout_asta_in_b, ulong clayout_asta_out_b)"), "{}", r.source);
    for p in ["a", "b"] {
        let load = format!("((const __global uint *){p})[clayout_at_{p} + clayout_k]");
        assert!(r.source.contains(&load), "{load}");
        // Stored back only when the launch asks for another order than the slice came in
        // (a conversion fused with the launch).
        let store = format!(
            "  if (clayout_oa_{p} != clayout_ia_{p}) {{
    if (clayout_oa_{p})
      for (clayout_idx clayout_k = clayout_lid; clayout_k < clayout_n_{p}; clayout_k += clayout_wg)
        ((__global uint *){p})[clayout_at_{p} + clayout_k] = clayout_stage_{p}[CLAYOUT_STAGE_ASTA(clayout_k, 12)];
    else
      for (clayout_idx clayout_k = clayout_lid; clayout_k < clayout_n_{p}; clayout_k += clayout_wg)
        ((__global uint *){p})[clayout_at_{p} + clayout_k] = clayout_stage_{p}[clayout_k];
  }}
"
        );
        assert!(r.source.contains(&store), "{store}\n{}", r.source);
    }
    assert_eq!(r.source.matches("(__global uint *)").count(), 4, "a write-back besides the reordering ones");
    // The return still jumps to the end, the prologue's barrier stays the only one: a body
    // that only reads its local copy leaves nothing to wait for.
    assert!(r.source.contains("goto clayout_stage_end;"));
    assert_eq!(r.source.matches("barrier(CLK_LOCAL_MEM_FENCE)").count(), 1);
    // Each way of storing makes a write-back.
    for store in [
        "p[i].x = 1.0f;",
        "p[i].id++;",
        "--p[i].a[0];",
        "p[i].v.x *= 2.0f;",
        "p[i].v = 0.0f;",
        "p[i].v -= 1.0f;",
        "p[i] = p[i];",
    ] {
        let r = staged(store);
        assert!(r.params[0].writes_back, "{store}");
    }
    let r = staged("  float4 t = p[i].v;\n  float s = p[i].x + sizeof(p[i]);");
    assert!(!r.params[0].writes_back);
}

#[test]
fn returns_jump_to_the_write_back() {
    let r = staged(
        "  if (i >= n) return;\n  for (int k = 0; k < 2; k++) { if (p[i].a[k] < 0.0f) return; p[i].a[k] = 0.0f; }",
    );
    let b = body_of(&r);
    assert_eq!(b.matches("goto clayout_stage_end;").count(), 2, "{b}");
    assert!(!b.contains("return"));
    assert!(b.ends_with(&format!("\nclayout_stage_end: ;\n{WRITE_BACK}")), "{b}");
}

#[test]
fn the_global_id_in_its_accepted_spellings() {
    for (defs, body) in [
        ("", "  p[get_global_id(0)].x = 1.0f;"),
        ("", "  p[(get_global_id(0u))].x = 1.0f;"),
        ("#define GID get_global_id(0)", "  p[GID].x = 1.0f;"),
        ("#define DIM 0\n#define GID get_global_id(DIM)", "  int i = GID;\n  p[i].x = 1.0f;"),
        ("", "  const size_t i = get_global_id(0);\n  p[(i)].x = (p + i)->y;"),
        ("", "  long i = (get_global_id(0));\n  if (i < n) p[i].x = 1.0f;"),
        // Uses of `i` that neither change it nor declare another one.
        ("", "  ulong i = get_global_id(0);\n  uint k = n * i, m = i;\n  float f = (float)i;\n  p[i].id = (int)min(i, (ulong)k) + m;\n  for (uint j = 0; j < i; j++) p[i].x += f;\n  if (i == n) p[i].y = 0;"),
        ("#define SQ(x) ((x) * (x))", "  uint i = get_global_id(0);\n  p[i].x = SQ(p[i].y);"),
    ] {
        if let Err(e) = with(defs, body) {
            panic!("{body}: {e}");
        }
    }
}

#[test]
fn refusals_name_the_rule_the_construct_and_line() {
    // (reason fragment, line of the construct, bodies): lines as if `defs` (7 lines) were not
    // there, with the kernel on line 2, `i` on line 3 and the body from line 4.
    let table: &[(&str, u32, &[&str])] = &[
        // Subscripts other than the global id.
        (
            "not provably the work-item's global id",
            4,
            &[
                "  p[i + 1].x = 0;",
                "  p[0].x = 0;",
                "  p->x = 0;",
                "  p[get_global_id(1)].x = 0;",
                "  p[get_local_id(0)].x = 0;",
                "  if (n) { uint j = get_global_id(0); p[j].x = 0; }",
            ],
        ),
        ("not provably", 5, &["  uint j = i;\n  p[j].x = 0;"]),
        // The global-id variable changed, taken or shadowed.
        (
            "`i` is assigned or incremented",
            4,
            &["  i = 3;\n  p[i].x = 0;", "  i++;\n  p[i].x = 0;", "  --i;\n  p[i].x = 0;"],
        ),
        ("`i` is assigned or incremented", 5, &["  p[i].x = 0;\n  i += 1;"]),
        ("`i` has its address taken", 4, &["  uint *q = &i;\n  p[i].x = 0;"]),
        (
            "`i` is declared again",
            4,
            &[
                "  for (uint i = 0; i < 2; i++) p[i].x = 0;",
                "  { float k, i; p[i].x = 0; }",
                "  { uint *i = 0; p[i].x = 0; }",
                "  { Body *i = 0; p[i].x = 0; }",
            ],
        ),
        ("passed to macro `SET`", 5, &["  p[i].x = 0;\n  SET(i);"]),
        ("macro `BUMP` (defined on line 3) mentions", 4, &["  BUMP;\n  p[i].x = 0;"]),
        // Work-group synchronization, directly, through a helper or a macro.
        ("work-group synchronization (`barrier`)", 4, &["  barrier(CLK_LOCAL_MEM_FENCE);\n  p[i].x = 0;"]),
        ("`work_group_reduce_add`", 4, &["  p[i].x = work_group_reduce_add(p[i].x);"]),
        ("`sub_group_any`", 4, &["  p[i].id = sub_group_any(p[i].id);"]),
        ("`async_work_group_copy`", 4, &["  event_t e = async_work_group_copy(buf, out, 4, 0);"]),
        ("`barrier`, reached through `helper`", 4, &["  helper();\n  p[i].x = 0;"]),
        ("`barrier`, reached through `SYNC`", 4, &["  SYNC;\n  p[i].x = 0;"]),
        // Jumps.
        ("`goto`", 4, &["  if (n) goto out;\n  p[i].x = 0;\nout:\n  ;"]),
        ("a label", 5, &["  p[i].x = 0;\nout: ;"]),
        ("expands to `return`", 4, &["  CHECK;\n  p[i].x = 0;"]),
        // The buffer or the address of a word leaving the kernel.
        ("`p` is passed to `take`", 4, &["  take(p, i);"]),
        ("`p` is passed to `put`", 4, &["  put(&p[i].x);", "  put(&p[i]);"]),
        ("`p` is passed to `atomic_inc`", 4, &["  atomic_inc(&p[i].id);"]),
        (
            "a pointer derived from staged `p`",
            4,
            &["  __global float *f = &p[i].x;", "  __global Body *q = p;", "  p++;"],
        ),
    ];
    let defs = "#define SET(v) v = 0\n#define BUMP i++\n#define SYNC barrier(CLK_GLOBAL_MEM_FENCE)\n#define CHECK if (i >= n) return\nvoid helper(void) { barrier(CLK_LOCAL_MEM_FENCE); }\nvoid take(__global Body *b, uint k) { b[k].x = 0; }\nvoid put(__global void *f) { }";
    for (reason, line, bodies) in table {
        for body in *bodies {
            let e = with(defs, &format!("{GID}{body}")).expect_err(body);
            assert!(e.reason.contains(reason), "{body}: {e}");
            assert_eq!(e.line, line + 7, "{body}: {e}");
            assert!(!e.construct.is_empty() && !e.construct.contains('\n'), "{body}: {e}");
        }
    }
}

#[test]
fn only_aos_buffers_of_structures_are_staged() {
    let src = program("  p[i].x = 0;");
    let mut req = request(&src, "k", &[(0, "p", "Body")]);
    req.params[0].host = HostKind::Soa { extent: "n".into() };
    let e = stage_kernel(&src, &req).unwrap_err();
    assert!(e.reason.contains("SoA host layout"), "{e}");
    let flat = "__kernel void k(__global float *f, uint n) {\n  uint i = get_global_id(0);\n  f[i] = 0;\n}\n";
    for (host, why) in
        [(HostKind::Aos, "a flat scalar pointer"), (HostKind::Soa { extent: "n".into() }, "an SoA host layout")]
    {
        let e = stage_kernel(flat, &flat_request(host, 3)).unwrap_err();
        assert!(e.reason.contains(why) && e.reason.contains("only an AoS buffer of structures"), "{e}");
        assert_eq!((e.line, e.construct.as_str()), (1, "f"));
    }
}

#[test]
fn an_asta_copy_and_a_staged_copy_share_one_program() {
    let src = program("  p[i].v = p[i].v + p[i].x;");
    let a = rewrite_kernel(&src, &request(&src, "k", &[(0, "p", "Body")])).unwrap();
    let req = RewriteRequest { private_name: "k__clayout_staged".into(), ..request(&src, "k", &[(0, "p", "Body")]) };
    let s = stage_kernel(&a.source, &req).unwrap();
    assert_eq!(s.source.matches("#define CLAYOUT_HAVE_INDEX").count(), 2);
    for name in ["clayout_ld_float4(", "clayout_ld_local_float4("] {
        assert!(s.source.contains(name), "{name}");
    }
    assert!(s.source.contains("#line 3\n__kernel void k__clayout_staged"));
}
