use crate::clc::*;

fn only_kernels(src: &str) -> Vec<KernelSig> {
    kernels(src).into_iter().map(|k| k.unwrap_or_else(|e| panic!("{}", e.reason))).collect()
}

fn describe(p: &Param) -> String {
    format!(
        "{} {}{}{}{}",
        p.space,
        if p.is_const { "const " } else { "" },
        p.type_name,
        if p.pointer { " *" } else { " " },
        p.name
    )
}

#[test]
fn tricky_formatting() {
    let src = r#"
#define REAL float
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef struct { float x, y, z; } Cell;
struct particle { float4 pos; float m; };
inline float helper(__global const float *a, int i) { return a[i] * 2.0f; }
/* a kernel-looking comment: __kernel void fake(int x) {} */
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void
step( __global Cell * restrict cells , // the cells
      global const struct particle* __restrict ps,
      __constant float *coef,
      __local float4 *scratch,
      const unsigned int n,
      int /* inline comment */ m,
      __global REAL * out,
      __global float arr[],
      float __global *late_space,
      __global float * const cp
      ) __attribute__((vec_type_hint(float4)))
{
    if (n > 0) { cells[0].x = helper(coef, 0); }
}

kernel void second(void) { }
__kernel void proto(__global int *p);
"#;
    let ks = only_kernels(src);
    let names: Vec<&str> = ks.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["step", "second", "proto"]);
    let step = &ks[0];
    assert_eq!(step.line, 10);
    let got: Vec<String> = step.params.iter().map(describe).collect();
    assert_eq!(
        got,
        [
            "__global Cell *cells",
            "__global const struct particle *ps",
            "__constant float *coef",
            "__local float4 *scratch",
            "__private const unsigned int n",
            "__private int m",
            "__global REAL *out",
            "__global float *arr",
            "__global float *late_space",
            "__global float *cp",
        ]
    );
    assert_eq!(&src[step.decl_start..step.decl_start + 8], "__kernel");
    let body = step.body.unwrap();
    assert!(body.of(src).starts_with('{') && body.of(src).ends_with('}'));
    assert!(ks[1].params.is_empty());
    assert_eq!(ks[2].body, None);
    assert_eq!(step.params[1].span.of(src), "global const struct particle* __restrict ps");
}

#[test]
fn kernel_after_return_type_and_nested_braces() {
    let src =
        "void f() { struct { int a; } s = {1}; { } }\nvoid __kernel k(__global int *x) { if (1) { x[0] = 1; } }\n";
    let ks = only_kernels(src);
    assert_eq!(ks.len(), 1);
    assert_eq!(ks[0].name, "k");
    assert_eq!(&src[ks[0].decl_start..ks[0].decl_start + 4], "void");
}

#[test]
fn unreadable_signatures_are_errors_not_guesses() {
    let cases = [
        ("__kernel void k(__global float *)", "parameter 1: cannot tell the type"),
        ("__kernel void k(__global __local float *p) {}", "two address spaces"),
        ("__kernel void k(int a, int a) {}", "appears twice"),
        ("__kernel void k(int a,) {}", "parameter 2: empty"),
        ("__kernel void k(float p *) {}", "misplaced `*`"),
        ("__kernel void k(int a = 3) {}", "unexpected `=`"),
        ("__kernel void k(int a", "unbalanced"),
        // Found by fuzzing: a body whose brackets close out of order once ended at the `)`,
        // and a rewritten copy was inserted inside the kernel.
        ("__kernel void k(int a) { f(a) * t); }", "unbalanced"),
        ("__kernel void k(int a] {}", "unbalanced"),
        ("__kernel void k(int a) int", "unexpected `int` after"),
        ("__kernel void k(int a)", "ends after"),
        ("__kernel void", "ends inside"),
        ("__kernel (int a) {}", "without a name"),
        ("__kernel void *k(int a) {}", "unexpected `*`"),
        ("__kernel void k(struct *p) {}", "without a tag"),
        ("__kernel __attribute__ void k() {}", "without `((...))`"),
    ];
    for (src, reason) in cases {
        let ks = kernels(src);
        assert_eq!(ks.len(), 1, "{src}");
        let e = ks[0].clone().unwrap_err();
        assert!(e.reason.contains(reason), "{src}: {:?}", e.reason);
        assert_eq!(e.decl_start, 0);
    }
}
