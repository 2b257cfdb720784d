//! The rewriter on source text: exact output for the simple forms, key pieces for the others,
//! and a table of refusals with their reasons and lines. Whether the output computes what the
//! original computes is tests/rewrite_run.rs's business (on PoCL).

use super::*;

pub(super) const BODY: &str = "typedef struct { float x, y, z; int id; float4 v; float a[2]; } Body;\n";

pub(super) fn request(src: &str, kernel: &str, params: &[(usize, &str, &str)]) -> RewriteRequest {
    RewriteRequest {
        kernel: kernel.into(),
        private_name: format!("{kernel}__clayout_asta"),
        params: params
            .iter()
            .map(|&(index, name, ty)| ParamRewrite {
                index,
                name: name.into(),
                layout: struct_layout(src, ty).unwrap(),
                host: HostKind::Aos,
            })
            .collect(),
    }
}

/// A program with one kernel `k(__global Body *p, uint n)` whose body is `body`.
pub(super) fn program(body: &str) -> String {
    format!("{BODY}//DL: AoS: p[n]\n__kernel void k(__global Body *p, uint n) {{\n  uint i = get_global_id(0);\n{body}\n}}\n")
}

fn rewrite(body: &str) -> Result<Rewritten, Refusal> {
    let src = program(body);
    rewrite_kernel(&src, &request(&src, "k", &[(0, "p", "Body")]))
}

/// The rewritten kernel's body lines after the `uint i` line.
fn body_of(r: &Rewritten) -> String {
    body_in(&r.source, "k__clayout_asta")
}

/// The body lines of kernel `copy` of program `s` after the `uint i` line.
pub(super) fn body_in(s: &str, copy: &str) -> String {
    let start = s.find(&format!("__kernel void {copy}(")).expect("rewritten kernel");
    let from = s[start..].find("get_global_id(0);\n").unwrap() + start + "get_global_id(0);\n".len();
    let to = s[from..].find("\n}\n").unwrap() + from;
    s[from..to].to_string()
}

fn rewritten(body: &str) -> String {
    body_of(&rewrite(body).unwrap_or_else(|e| panic!("refused: {e}")))
}

const W: &str = "clayout_M_p";

#[test]
fn scalar_members_become_words() {
    assert_eq!(
        rewritten("  p[i].x = p[i].y + 1.0f;"),
        format!("  p[clayout_asta((i), 0, 12, {W})] = p[clayout_asta((i), 1, 12, {W})] + 1.0f;")
    );
    // A member of another scalar type is read through a pointer of its own type.
    assert_eq!(rewritten("  p[i].id += 2;"), format!("  ((__global int *)p)[clayout_asta((i), 3, 12, {W})] += 2;"));
}

#[test]
fn the_whole_program_is_kept_and_the_copy_follows_the_kernel() {
    let src = program("  p[i].x = 1.0f;") + "__kernel void other(__global float *q) { q[0] = 1.0f; }\n";
    let r = rewrite_kernel(&src, &request(&src, "k", &[(0, "p", "Body")])).unwrap();
    let kernel_end = src.find("}\n__kernel void other").unwrap() + 1;
    assert!(r.source.starts_with(&src[..kernel_end]));
    assert!(r.source.ends_with(&src[kernel_end..]));
    assert!(r
        .source
        .contains("#line 3\n__kernel void k__clayout_asta(__global float *p, uint n, ulong clayout_M_p) {"));
    // After the insertion the original's numbering resumes: the `}` was on line 6.
    assert!(r.source.contains("}\n#line 6\n\n__kernel void other"));
    assert_eq!(r.extra_args, vec![ExtraArg { param: "p".into(), index: 2, what: ExtraKind::StructCount }]);
}

#[test]
fn copies_made_from_one_reading_splice_into_the_program_made_one_after_another() {
    // A kernel calling a helper defined after it (its ASTA copy goes after the helper; it has
    // no staged copy), and one with both copies (both after it, the staged one first). Made one
    // after another, each in the program with the copies before it (the rewriter's way until
    // the program was read once), and made from one reading then spliced, the program is the
    // same text.
    let src = format!(
        "{BODY}float get(__global Body *b, uint i);\n\
         __kernel void k(__global Body *p, uint n) {{\n  uint i = get_global_id(0);\n  p[i].x = get(p, i);\n}}\n\
         float get(__global Body *b, uint i) {{ return b[i].y; }}\n\
         __kernel void m(__global Body *q, uint n) {{\n  uint i = get_global_id(0);\n  q[i].z = q[i].x + 1.0f;\n}}\n"
    );
    let staged =
        |r: &RewriteRequest| RewriteRequest { private_name: format!("{}__clayout_staged", r.kernel), ..r.clone() };
    let reqs = [request(&src, "k", &[(0, "p", "Body")]), request(&src, "m", &[(0, "q", "Body")])];
    let mut current = src.clone();
    for r in &reqs {
        current = rewrite_kernel(&current, r).unwrap().source;
        if let Ok(st) = stage_kernel(&current, &staged(r)) {
            current = st.source;
        }
    }
    let read = Source::new(&src);
    let mut insertions = Vec::new();
    for r in &reqs {
        insertions.push(rewrite_kernel_in(&read, r).unwrap().insertion);
        if let Ok(st) = stage_kernel_in(&read, &staged(r)) {
            insertions.push(st.insertion);
        }
    }
    assert_eq!(insertions.len(), 3, "k has no staged copy");
    assert!(insertions[0].at > src.find("float get(__global Body *b, uint i) {").unwrap(), "after the helper");
    assert_eq!(insertions[1].at, insertions[2].at, "m's two copies at one place");
    assert_eq!(splice(&src, &insertions), current);
}

#[test]
fn array_members_components_and_arrows() {
    assert_eq!(
        rewritten("  p[i].a[k] = p[i].v.w + p[i].v.s1;"),
        format!("  p[clayout_asta((i), 8 + (k) * 1, 12, {W})] = p[clayout_asta((i), 4 + 3, 12, {W})] + p[clayout_asta((i), 4 + 1, 12, {W})];")
    );
    assert_eq!(
        rewritten("  (p + i + 1)->z = p->x;"),
        format!("  p[clayout_asta((i + 1), 2, 12, {W})] = p[clayout_asta(0, 0, 12, {W})];")
    );
}

#[test]
fn whole_vectors_load_and_store_through_functions() {
    let r = rewrite("  p[i].v = p[i].v * 2.0f;\n  p[i].v += 1.0f;\n  float2 h = p[i].v.lo;").unwrap();
    let b = body_of(&r);
    let ld = format!("clayout_ld_float4(p, (i), 4, 12, {W})");
    assert_eq!(
        b,
        format!("  clayout_st_float4(p, (i), 4, 12, {W}, (float4)({ld} * 2.0f));\n  clayout_st_float4(p, (i), 4, 12, {W}, (float4){ld} + (1.0f));\n  float2 h = {ld}.lo;")
    );
    assert!(r.source.contains(
        "float4 clayout_ld_float4(const __global float *p, clayout_idx i, clayout_idx s, clayout_idx S, clayout_idx M)"
    ));
    assert!(r.source.contains("p[clayout_asta(i, s + 3, S, M)] = v.s3;"));
}

#[test]
fn whole_structures_expand_member_by_member() {
    let r = rewrite("  Body q = p[i];\n  q.x += 1.0f;\n  p[i + 1] = q;").unwrap();
    assert_eq!(
        body_of(&r),
        format!("  Body q = clayout_ld_Body(p, (i), {W});\n  q.x += 1.0f;\n  clayout_st_Body(p, (i + 1), {W}, (q));")
    );
    // Every word, padding included, as the device compiler copies a structure.
    for piece in [
        "Body clayout_ld_Body(const __global float *p, clayout_idx i, clayout_idx M) {\n  union { Body v; uint w[12]; } u;",
        "  u.w[3] = ((const __global uint *)p)[clayout_asta(i, 3, 12, M)];",
        "  u.w[11] = ((const __global uint *)p)[clayout_asta(i, 11, 12, M)];\n  return u.v;",
        "  u.v = v;\n  ((__global uint *)p)[clayout_asta(i, 0, 12, M)] = u.w[0];",
    ] {
        assert!(r.source.contains(piece), "{piece}");
    }
}

#[test]
fn subscripts_with_side_effects_are_evaluated_once() {
    // Each access passes its subscript to one function call: `i++` runs once per access.
    assert_eq!(
        rewritten("  p[j++].x++;\n  float4 t = p[j--].v;"),
        format!("  p[clayout_asta((j++), 0, 12, {W})]++;\n  float4 t = clayout_ld_float4(p, (j--), 4, 12, {W});")
    );
    // A compound assignment of a vector would evaluate it twice: refused.
    let e = rewrite("  p[j++].v += 1.0f;").unwrap_err();
    assert!(e.reason.contains("side effects"), "{e}");
}

#[test]
fn addresses_sizeof_and_increments() {
    assert_eq!(
        rewritten("  __global float *z = &p[i].z;\n  p[i].id = sizeof(*p) + sizeof p[0] + sizeof(p) + sizeof(z);\n  --p[i].a[1];"),
        format!("  clayout_idx z = (clayout_idx)(i) * 12 + 2;\n  ((__global int *)p)[clayout_asta((i), 3, 12, {W})] = sizeof(Body) + sizeof(Body) + sizeof(p) + sizeof(__global char *);\n  --p[clayout_asta((i), 8 + (1) * 1, 12, {W})];")
    );
}

#[test]
fn helpers_get_private_copies_with_their_own_count() {
    let src = format!("{BODY}float get(__global const Body *b, int k) {{ return b[k].y; }}\nvoid put(__global Body *c, int k) {{ c[k].x = get(c, k); }}\n__kernel void k(__global Body *p, uint n) {{\n  put(p, get_global_id(0));\n}}\n");
    let r = rewrite_kernel(&src, &request(&src, "k", &[(0, "p", "Body")])).unwrap();
    let s = &r.source;
    let get = s.find("float clayout_get_").expect("copy of get");
    let put = s.find("void clayout_put_").expect("copy of put");
    let kernel = s.find("__kernel void k__clayout_asta").unwrap();
    assert!(get < put && put < kernel, "callees first");
    assert!(s.contains(
        "(__global const float *b, int k, ulong clayout_M_b) { return b[clayout_asta((k), 1, 12, clayout_M_b)]; }"
    ));
    assert!(s.contains("c[clayout_asta((k), 0, 12, clayout_M_c)] = clayout_get_"));
    assert!(s.contains("(c, k, clayout_M_c);"));
    assert!(s.contains("(p, get_global_id(0), clayout_M_p);"));
    // The originals stay.
    assert!(s.contains("float get(__global const Body *b, int k) { return b[k].y; }"));
}

#[test]
fn qualifiers_and_several_buffers() {
    let src = format!(
        "{BODY}__kernel void k(__global const Body * restrict a, __global Body *b, int n) {{ b[n].x = a[n].y; }}\n"
    );
    let r = rewrite_kernel(&src, &request(&src, "k", &[(0, "a", "Body"), (1, "b", "Body")])).unwrap();
    assert!(r.source.contains("__kernel void k__clayout_asta(__global const float *restrict a, __global float *b, int n, ulong clayout_M_a, ulong clayout_M_b) { b[clayout_asta((n), 0, 12, clayout_M_b)] = a[clayout_asta((n), 1, 12, clayout_M_a)]; }"));
    assert_eq!(r.extra_args.iter().map(|e| e.index).collect::<Vec<_>>(), vec![3, 4]);
}

#[test]
fn eight_byte_words() {
    let src = "typedef struct { double d; long n; double2 w; } D;\n__kernel void k(__global D *p) { p[0].n = (long)p[1].w.y; }\n";
    let r = rewrite_kernel(src, &request(src, "k", &[(0, "p", "D")])).unwrap();
    assert!(r.source.contains("(__global double *p, ulong clayout_M_p) { ((__global long *)p)[clayout_asta((0), 1, 4, clayout_M_p)] = (long)p[clayout_asta((1), 2 + 1, 4, clayout_M_p)]; }"));
}

/// Kernel `k`'s flat float buffer `f` (parameter 0) of `s` words per element, copied as `k2`.
pub(super) fn flat_request(host: HostKind, s: u32) -> RewriteRequest {
    RewriteRequest {
        kernel: "k".into(),
        private_name: "k2".into(),
        params: vec![ParamRewrite {
            index: 0,
            name: "f".into(),
            layout: StructLayout::flat("float", s).unwrap(),
            host,
        }],
    }
}

fn flat(body: &str, host: HostKind, s: u32) -> Result<String, Refusal> {
    let src = format!("__kernel void k(__global float *f, uint n) {{\n{body}\n}}\n");
    let r = rewrite_kernel(&src, &flat_request(host, s))?;
    let start = r.source.find("__kernel void k2").unwrap();
    let from = r.source[start..].find("{\n").unwrap() + start + 2;
    let to = r.source[from..].find("\n}\n").unwrap() + from;
    Ok(r.source[from..to].to_string())
}

#[test]
fn flat_soa_subscripts() {
    let soa = || HostKind::Soa { extent: "n".into() };
    let at = |i: &str, s: u32| format!("f[clayout_soa_at(({i}), {s}, 3, clayout_M_f)]");
    for (sub, i, s) in [
        ("2*n + i", "i", 2),
        ("i + 2*n", "i", 2),
        ("n*2 + i", "i", 2),
        ("i + n", "i", 1),
        ("n + i + 1", "i + 1", 1),
        ("i - 1 + 2 * n", "i - 1", 2),
        ("0*n + i", "i", 0),
    ] {
        assert_eq!(flat(&format!("f[{sub}] = 0.0f;"), soa(), 3).unwrap(), at(i, s) + " = 0.0f;", "{sub}");
    }
    // Anything else takes the general, exact, path.
    for sub in ["i", "3*n + i", "k", "(i + n) % 7", "i - 2*n", "c ? i : n + i"] {
        assert_eq!(
            flat(&format!("f[{sub}] += 1.0f;"), soa(), 3).unwrap(),
            format!("f[clayout_soa_flat(({sub}), 3, clayout_M_f)] += 1.0f;"),
            "{sub}"
        );
    }
    assert_eq!(
        flat("f[4*i + 1] = f[k];", HostKind::Aos, 4).unwrap(),
        "f[clayout_aos_flat((4*i + 1), 4, clayout_M_f)] = f[clayout_aos_flat((k), 4, clayout_M_f)];"
    );
    let e = flat("g(&f[i]);", soa(), 3).unwrap_err();
    assert!(e.reason.contains("which the program source does not define"), "{e}");
}

#[test]
fn chained_rewrites_share_generated_functions_and_keep_lines() {
    let src = format!("{BODY}__kernel void a(__global Body *p) {{ p[0].v = p[1].v; }}\n\n__kernel void b(__global Body *p) {{\n  p[0].v.x = 1.0f;\n}}\n");
    let r1 = rewrite_kernel(&src, &request(&src, "a", &[(0, "p", "Body")])).unwrap();
    let r2 = rewrite_kernel(&r1.source, &request(&src, "b", &[(0, "p", "Body")])).unwrap();
    assert_eq!(r2.source.matches("#define CLAYOUT_HAVE_INDEX").count(), 2);
    assert_eq!(r2.source.matches("#ifndef CLAYOUT_HAVE_INDEX").count(), 2);
    // Kernel b is on line 4 of the original, whatever was inserted before it.
    assert!(r2.source.contains("#line 4\n__kernel void b__clayout_asta"));
    // Refusals name original lines too.
    let bad = r1.source.replace("p[0].v.x = 1.0f;", "p = 0;");
    let e = rewrite_kernel(&bad, &request(&src, "b", &[(0, "p", "Body")])).unwrap_err();
    assert_eq!(e.line, 5, "{e}");
}

#[test]
fn preprocessed_sources_keep_their_files_and_lines() {
    // The preprocessor's output: linemarkers name the header and the file of each part.
    let src = format!("# 1 \"body.h\"\n{BODY}float get(__global const Body *b) {{ return b->y; }}\n# 7 \"main.cl\" 2\n//DL: AoS: p[n]\n__kernel void k(__global Body *p, uint n) {{\n  p[0].x = get(p);\n}}\nint after;\n");
    let r = rewrite_kernel(&src, &request(&src, "k", &[(0, "p", "Body")])).unwrap();
    assert!(r.source.contains("#line 2 \"body.h\"\nfloat clayout_get_"), "{}", r.source);
    assert!(r.source.contains("#line 8 \"main.cl\"\n__kernel void k__clayout_asta("), "{}", r.source);
    assert!(r.source.contains("#line 10 \"main.cl\"\n\nint after;"), "{}", r.source);
    let bad = src.replace("p[0].x = get(p);", "p = 0;");
    assert_eq!(rewrite_kernel(&bad, &request(&src, "k", &[(0, "p", "Body")])).unwrap_err().line, 9);
}

#[test]
fn comments_and_strings_are_not_accesses() {
    assert_eq!(
        rewritten("  /* p[i].x */ p[i].x = 0; // p = 0;\n  printf(\"p[i]\");"),
        format!("  /* p[i].x */ p[clayout_asta((i), 0, 12, {W})] = 0; // p = 0;\n  printf(\"p[i]\");")
    );
    // Members named like the buffer are members.
    assert!(rewrite("  q.p = 1;").is_ok());
}

#[test]
fn refusals_name_the_construct_and_line() {
    // (body, reason fragment); the construct is on the body's first line, line 5.
    let table: &[(&str, &str)] = &[
        ("  ptrs[0] = p;", "stored where the rewriter does not follow it"),
        ("  ulong a = (ulong)&p[i].x;", "converted to `ulong`"),
        ("  __global float *at[2] = {&p[i].x, &p[i].z};", "array of pointers"),
        ("  __global float *q = i ? &p[i].x : &other[i];", "merged with another pointer"),
        ("  __global float *q = &p[i].x; q = &other[i];", "also given a value that does not"),
        ("  p = 0;", "is given a value that is not a pointer"),
        ("  if (p == 0) return;", "compared with something that is not a pointer into it"),
        ("  if (p) return;", "used as a value"),
        ("  float p = 1.0f;", "shadowed by a local declaration"),
        ("  atomic_add(&p[i].v.x, 1);", "address of a vector component"),
        ("  float4 v = vload4(0, p);", "`vload4` on a pointer to `Body`"),
        ("  g(&p[i]);", "does not define"),
        ("  g(&p[i].v);", "does not define"),
        ("  __global float *q = p[i].a + 1; g(q);", "does not define"),
        ("  --p[i].v;", "++/-- before a whole vector"),
        ("  float4 w = p[i].v++;", "++/-- on a whole vector member whose value is used"),
        ("  p[i].q = 1.0f;", "has no member `q`"),
        ("  p[i][0].x = 1.0f;", "subscript of a whole structure"),
        ("  __global Body *q = (__global Body *)&p[i].x;", "cast back to the structure"),
        ("  p[i].v.w += p[j++].v.x, p[k++].v -= 1.0f;", "side effects"),
        ("  p[i]\n#if 1\n  .x = 0;\n#endif", "preprocessor directive"),
        ("  p[] = 0;", "empty subscript"),
        ("  p[i].v[0] = 1.0f;", "subscript of a vector member"),
    ];
    for (body, reason) in table {
        let e = rewrite(body).expect_err(body);
        assert!(e.reason.contains(reason), "{body}: {e}");
        assert_eq!(e.line, 5, "{body}: {e}");
        assert!(!e.construct.is_empty() && !e.construct.contains('\n'), "{body}: {e}");
    }
}

#[test]
fn macros_that_could_change_an_access_refuse() {
    let with = |defs: &str, body: &str| {
        let src = format!("{defs}\n{}", program(body));
        rewrite_kernel(&src, &request(&src, "k", &[(0, "p", "Body")]))
    };
    let e = with("#define X p[i].x", "  X = 1.0f;").unwrap_err();
    assert!(e.reason.contains("macro `X` (defined on line 1) mentions `p`"), "{e}");
    let e = with("#define GETX(j) p[j].x", "  float v = GETX(i);").unwrap_err();
    assert!(e.reason.contains("macro `GETX`"), "{e}");
    let e = with("#define Y X\n#define X p", "  Y[i].x = 1.0f;").unwrap_err();
    assert!(e.reason.contains("macro `Y`"), "{e}");
    let e = with("#define GET(q, i) q[i].x", "  float v = GET(p, i);").unwrap_err();
    assert!(e.reason.contains("passed to macro `GET`"), "{e}");
    let e = with("#define DOT .x", "  p[i] DOT = 1.0f;").unwrap_err();
    assert!(e.reason.contains("macro next to an access"), "{e}");
    // A macro whose own parameter is named like the buffer, or one in a subscript, is fine.
    assert!(with("#define SQ(p) ((p) * (p))\n#define GID get_global_id(0)", "  p[GID].x = SQ(p[GID].y);").is_ok());
    // But a compound vector update may not evaluate a macro subscript twice.
    assert!(with("#define GID get_global_id(0)", "  p[GID].v += 1.0f;").is_err());
}

#[test]
fn helper_refusals() {
    let run = |defs: &str, call: &str| {
        let src = format!("{BODY}{defs}\n__kernel void k(__global Body *p, uint n) {{\n  {call};\n}}\n");
        rewrite_kernel(&src, &request(&src, "k", &[(0, "p", "Body")]))
    };
    let e = run("void h(__global float *f) { f[0] = 1.0f; }", "h(p)").unwrap_err();
    assert!(e.reason.contains("which is not a `__global Body *`"), "{e}");
    let e = run("#ifdef A\nvoid h(__global Body *b) { b[0].x = 1.0f; }\n#else\nvoid h(__global Body *b) { b[0].y = 1.0f; }\n#endif", "h(p)").unwrap_err();
    assert!(e.reason.contains("defined more than once"), "{e}");
    let e = run("void h(__global Body *b);", "h(p)").unwrap_err();
    assert!(e.reason.contains("does not define"), "{e}");
    let e = run("__global Body *h(__global Body *b) { return b + 1; }", "h(p)").unwrap_err();
    assert!(e.reason.contains("returns a pointer"), "{e}");
    let e = run("void h(__global Body *b, __global Body *c) { return b + 1; }", "h(p, p)").unwrap_err();
    assert!(e.reason.contains("returned from a function"), "{e}");
    assert_eq!(e.line, 2);
}

#[test]
fn request_refusals() {
    let src = program("  p[i].x = 0;");
    let mut req = request(&src, "k", &[(0, "p", "Body")]);
    req.params[0].host = HostKind::Soa { extent: "n".into() };
    assert!(rewrite_kernel(&src, &req).unwrap_err().reason.contains("SoA host layout on a pointer to a structure"));
    let mut req = request(&src, "k", &[(0, "p", "Body")]);
    req.params[0].name = "q".into();
    assert!(rewrite_kernel(&src, &req).unwrap_err().reason.contains("not parameter 0"));
    let mut req = request(&src, "k", &[(0, "p", "Body")]);
    req.kernel = "nope".into();
    let e = rewrite_kernel(&src, &req).unwrap_err();
    assert!(e.reason.contains("no readable definition") && e.line == 0, "{e}");
    // A prototype alone: its line.
    let proto = format!("{BODY}__kernel void k(__global Body *p, uint n);\n");
    let e = rewrite_kernel(&proto, &request(&src, "k", &[(0, "p", "Body")])).unwrap_err();
    assert!(e.reason.contains("no readable definition") && e.line == 2, "{e}");
    let other = "typedef struct { float a; } Other;";
    let mut req = request(&src, "k", &[(0, "p", "Body")]);
    req.params[0].layout = struct_layout(other, "Other").unwrap();
    assert!(rewrite_kernel(&src, &req).unwrap_err().reason.contains("the layout describes `Other`"));
    let local = format!("{BODY}__kernel void k(__local Body *p) {{ }}");
    assert!(rewrite_kernel(&local, &request(&local, "k", &[(0, "p", "Body")]))
        .unwrap_err()
        .reason
        .contains("__global"));
}

#[test]
fn refusal_display_is_one_line() {
    let e = rewrite("  p = 0;").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 5: `p = 0`: `p` is given a value that is not a pointer into `p` the rewriter follows"
    );
}

/// The worked example of docs/annotations.md, kept honest.
#[test]
fn documented_example() {
    let doc = include_str!("../../docs/annotations.md");
    let section = &doc[doc.find("## Transparent mode").unwrap()..];
    let blocks: Vec<&str> = section.split("```c\n").skip(1).map(|b| &b[..b.find("```").unwrap()]).collect();
    let (src, expected) = (blocks[0], blocks[1]);
    let req = RewriteRequest {
        kernel: "step".into(),
        private_name: "step__clayout_asta".into(),
        params: vec![ParamRewrite {
            index: 0,
            name: "p".into(),
            layout: struct_layout(src, "Body").unwrap(),
            host: HostKind::Aos,
        }],
    };
    let out = rewrite_kernel(src, &req).unwrap().source;
    assert!(out.contains(expected), "{out}");
}
