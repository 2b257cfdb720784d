use crate::annotation::extent::ExtentKind;
use crate::annotation::*;
use crate::clc::typedefs::TypeClass;
use crate::clc::types::IntType;

fn layouts(src: &str) -> Vec<KernelLayout> {
    annotations_in_source(src).into_iter().map(|a| a.layout.unwrap_or_else(|e| panic!("{e}"))).collect()
}

fn error(src: &str) -> AnnotationError {
    let all = annotations_in_source(src);
    assert_eq!(all.len(), 1, "{src}");
    all[0].layout.clone().expect_err(src)
}

const THESIS: &str = "struct foo { float a, b, c; };
//DL: AoS: f[global_size(0)] AOS2ASTA_foo
__kernel void k(__global struct foo *f) { f[get_global_id(0)].a = 1.0f; }
";

#[test]
fn thesis_example() {
    let all = annotations_in_source(THESIS);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].kernel.as_deref(), Some("k"));
    assert_eq!((all[0].origin, all[0].line), (Origin::Source, 2));
    let l = all[0].layout.clone().unwrap();
    assert!(l.marshals());
    let p = &l.params[0];
    assert_eq!((p.arg_index, p.name.as_str(), p.elem_type.as_str()), (0, "f", "struct foo"));
    assert_eq!((p.elem_class, p.s, p.word), (TypeClass::Struct, None, None));
    assert_eq!(p.device, Some(DeviceLayout::ThesisName("AOS2ASTA_foo".into())));
}

#[test]
fn several_lines_blank_lines_and_comments_before_the_kernel() {
    let src = "typedef struct { float x, y; } P;
#define N_T uint
//DL: AoS: ps[n] -> ASTA(32)
// plain comment between
//DL: SoA(3): vs[n * 2], ws[auto] -> ASTA

/* block */
__kernel __attribute__((reqd_work_group_size(64,1,1)))
void k(__global P *ps, const N_T n, __global float *vs, __global double *ws, int unused) {}
//DL: AoS: q[global_size(0)]
kernel void plain(global P *q) {}
__kernel void unannotated(__global P *r) {}
";
    let ls = layouts(src);
    assert_eq!(ls.len(), 2);
    let k = &ls[0];
    assert_eq!(k.kernel, "k");
    let ps: Vec<(&str, u32, Option<u32>, Option<u32>)> =
        k.params.iter().map(|p| (p.name.as_str(), p.arg_index, p.s, p.word)).collect();
    assert_eq!(ps, [("ps", 0, None, None), ("vs", 2, Some(3), Some(4)), ("ws", 3, Some(3), Some(8))]);
    assert_eq!(k.params[0].device, Some(DeviceLayout::Asta { tile: Some(32) }));
    assert_eq!(k.params[1].device, Some(DeviceLayout::Asta { tile: None }));
    assert_eq!(
        k.scalar_args,
        [ScalarArg { arg_index: 1, name: "n".into(), int_type: IntType { size: Some(4), signed: false } }]
    );
    assert_eq!(k.params[2].extent.kind, ExtentKind::Auto);
    assert_eq!(ls[1].kernel, "plain");
    assert!(!ls[1].marshals(), "no device layout: the kernel runs unchanged");
}

#[test]
fn validation_errors_point_at_the_culprit() {
    let cases: &[(&str, &str, u32, u32)] = &[
        (
            "//DL: AoS: g[n]\n__kernel void k(__global struct s *f, int n) {}",
            "`g` is not a parameter of kernel `k`",
            1,
            12,
        ),
        ("//DL: AoS: n[n]\n__kernel void k(__global struct s *f, int n) {}", "`n` is a scalar", 1, 12),
        ("//DL: AoS: f[n]\n__kernel void k(__local struct s *f, int n) {}", "`f` is a __local pointer", 1, 12),
        ("//DL: AoS: f[n]\n__kernel void k(__constant struct s *f, int n) {}", "__constant pointer", 1, 12),
        ("//DL: AoS: f[m]\n__kernel void k(__global struct s *f, int n) {}", "`m` is not a parameter", 1, 14),
        (
            "//DL: AoS: f[x]\n__kernel void k(__global struct s *f, float x) {}",
            "`x` has type `float`, not an integer",
            1,
            14,
        ),
        ("//DL: AoS: f[2*x]\n__kernel void k(__global struct s *f, __global int *x) {}", "`x` is a pointer", 1, 16),
        (
            "//DL: SoA: p[n]\n__kernel void k(__global float *p, int n) {}",
            "elements are `float`, not a structure: write SoA(S)",
            1,
            7,
        ),
        ("//DL: AoS: p[n]\n__kernel void k(__global float *p, int n) {}", "write AoS(S)", 1, 7),
        (
            "//DL: SoA(3): p[n]\n__kernel void k(__global REAL *p, int n) {}",
            "cannot tell the word size of `REAL`: write SoA(S, W)",
            1,
            7,
        ),
        (
            "//DL: AoS(2): p[n]\n__kernel void k(__global float4 *p, int n) {}",
            "cannot tell the word size of `float4`",
            1,
            7,
        ),
        (
            "//DL: AoS: f[n]\n//DL: AoS: f[n]\n__kernel void k(__global struct s *f, int n) {}",
            "`f` is annotated twice",
            2,
            12,
        ),
        ("//DL: AoS: f[n]\nint x;\n__kernel void k(__global struct s *f, int n) {}", "not followed by a kernel", 1, 1),
        (
            "//DL: AoS: f[n]\n#define X 1\n__kernel void k(__global struct s *f, int n) {}",
            "not followed by a kernel",
            1,
            1,
        ),
        ("void f() {\n  //DL: AoS: f[n]\n}", "not followed by a kernel", 2, 3),
        ("//DL: AoS: f[n]", "not followed by a kernel", 1, 1),
        (
            "//DL: AoS: f[n]\n__kernel void k(__global struct s *f, int n",
            "cannot read the signature of the kernel below (line 2): unbalanced",
            1,
            1,
        ),
        ("  //DL: AoS: f[n] ->ASTA(3)\n__kernel void k(__global struct s *f, int n) {}", "power of two", 1, 26),
    ];
    for (src, reason, line, col) in cases {
        let e = error(src);
        assert!(e.reason.contains(reason), "{src}: {e}");
        assert_eq!((e.line, e.column), (*line, *col), "{src}: {e}");
        assert_eq!(e.origin, Origin::Source);
    }
    let e = error("//DL: AoS: f[n] -> ASTA(3)\n__kernel void k(__global struct s *f, int n) {}");
    assert_eq!(e.to_string(), "kernel source line 1, column 25: the tile must be a power of two from 1 to 1024, not 3");
}

#[test]
fn a_bad_kernel_does_not_spoil_the_others() {
    let src = "//DL: AoS: f[n]\n__kernel void a(__global float *f, int n) {}\n\
               //DL: AoS(3): f[n]\n__kernel void b(__global float *f, int n) {}\n";
    let all = annotations_in_source(src);
    assert_eq!(all.len(), 2);
    assert!(all[0].layout.is_err());
    assert_eq!(all[1].layout.as_ref().unwrap().params[0].s, Some(3));
}

#[test]
fn side_file_wins_over_the_source() {
    let (side, errs) = parse_side_file("k: AoS: f[m] -> ASTA(64)\nother: AoS: x[1]\n");
    assert!(errs.is_empty());
    let src = "//DL: AoS: f[n]\n__kernel void k(__global struct s *f, int n, int m) {}\n\
               __kernel void j(__global struct s *f) {}\n";
    let all = annotate_program(src, &side);
    assert_eq!(all.len(), 1);
    assert_eq!((all[0].origin, all[0].line, all[0].kernel.as_deref()), (Origin::SideFile, 1, Some("k")));
    let l = all[0].layout.clone().unwrap();
    assert_eq!(l.params[0].extent.kind, ExtentKind::Arg("m".into()));
    assert_eq!(l.params[0].device, Some(DeviceLayout::Asta { tile: Some(64) }));
    // Validation errors in side entries point into the side file.
    let (side, _) = parse_side_file("\n  j : AoS: f[n]\n");
    let all = annotate_program(src, &side);
    assert_eq!(all.len(), 2);
    let e = all[1].layout.clone().unwrap_err();
    assert_eq!(e.to_string(), "CLAYOUT_ANNOTATIONS line 2, column 14: `n` is not a parameter of kernel `j`");
}

#[test]
fn prototype_then_definition() {
    let src = "__kernel void k(__global struct s *f, int n);\n//DL: AoS: f[n]\n__kernel void k(__global struct s *f, int n) {}\n";
    let all = annotations_in_source(src);
    assert_eq!(all.len(), 1);
    assert!(all[0].layout.is_ok());
    let (side, _) = parse_side_file("k: AoS: f[2*n]");
    let all = annotate_program(src, &side);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].origin, Origin::SideFile);
}

#[test]
fn reasons_quoting_multiline_source_stay_on_one_line() {
    let src = "//DL: AoS: f[n]\n__kernel void k(__global struct s *f, int n,\n float /* a\n b */ * \n) {}";
    let e = error(src);
    assert!(e.reason.contains("parameter 3"), "{e}");
    assert!(!e.to_string().contains('\n'));
}

#[test]
fn out_only_on_a_buffer_the_kernel_can_write() {
    let src = "typedef struct { float x, y; } P;
//DL: AoS: a[n], out b[n]
__kernel void k(__global const P *a, __global P *b, int n) {}
";
    let l = &layouts(src)[0];
    assert_eq!(l.params.iter().map(|p| (p.name.as_str(), p.out)).collect::<Vec<_>>(), [("a", false), ("b", true)]);
    let e = error(
        "typedef struct { float x, y; } P;
//DL: AoS: out a[n]
__kernel void k(__global const P *a, int n) {}
",
    );
    assert!(e.reason.contains("points to const"), "{e}");
}
