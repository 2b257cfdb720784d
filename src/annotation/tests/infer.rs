//! The inference of annotations from a kernel's source (`infer`).

use crate::annotation::infer::{infer, Form, Stride};
use crate::annotation::{annotate_program, parse_side_file};

fn lines(src: &str, value: &dyn Fn(&str) -> Option<u64>) -> Vec<String> {
    infer(src).iter().flat_map(|k| k.lines(value).unwrap()).collect()
}

fn none(_: &str) -> Option<u64> {
    None
}

const PARTICLES: &str = r#"
typedef struct { float x, y, z, vx, vy, vz, mass, charge; } particle_t;
__kernel void drift(__global particle_t *p, __global const float4 *attr, uint n, float dt)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    p[i].x += p[i].vx * dt + attr[0].x;
}
"#;

#[test]
fn structure_buffer_with_its_bound() {
    assert_eq!(lines(PARTICLES, &none), ["drift: AoS: p[n]"]);
}

#[test]
fn bound_made_of_several_parameters_and_the_other_way_round() {
    let src = r#"
typedef struct { float f[19]; } cell_t;
__kernel void k(__global const cell_t *src, __global cell_t *dst, __global const uint *flags, uint nx, uint ny, uint nz)
{
    size_t i = get_global_id(0);
    if (nx * ny * nz <= i) return;
    uint nb = i - nx;
    dst[i].f[0] = src[nb].f[0] + src[i].f[1] + flags[nb];
}
"#;
    assert_eq!(lines(src, &none), ["k: AoS: src[nx * ny * nz], dst[nx * ny * nz]"]);
}

#[test]
fn no_bound_gives_auto() {
    let src = r#"
struct body { float x, y; };
__kernel void k(__global struct body *b) { int i = (int)get_global_id(0); b[i].x = b[i].y; }
"#;
    assert_eq!(lines(src, &none), ["k: AoS: b[auto]"]);
}

#[test]
fn a_changed_bound_or_global_id_is_not_trusted() {
    let src = r#"
struct body { float x, y; };
__kernel void k(__global struct body *b, uint n) { uint i = get_global_id(0); n = n / 2; if (i >= n) return; b[i].x = 0; }
__kernel void l(__global struct body *b, uint n) { uint i = get_global_id(0); if (i >= n) return; i += 1; b[i].x = 0; }
"#;
    assert_eq!(lines(src, &none), ["k: AoS: b[auto]", "l: AoS: b[auto]"]);
}

const ELL: &str = r#"
__kernel void rowmajor(__global const int *cols, __global const float *vals, __global const float *x,
                       __global float *y, uint n, uint K)
{
    uint row = get_global_id(0);
    if (row >= n)
        return;
    float sum = 0.0f;
    for (uint k = 0; k < K; k++)
        sum += vals[row * K + k] * x[cols[row * K + k]];
    y[row] = sum;
}
__kernel void colmajor(__global const int *cols, __global const float *vals, __global const float *x,
                       __global float *y, uint n, uint K)
{
    uint row = get_global_id(0);
    if (row >= n)
        return;
    float sum = 0.0f;
    for (uint k = 0; k < K; k++)
        sum += vals[k * n + row] * x[cols[k * n + row]];
    y[row] = sum;
}
__kernel void fixed(__global float *v, uint n)
{
    uint i = get_global_id(0);
    if (i < n) { v[i * 4 + 0] = 1.0f; v[3 + 4 * i] = v[i * 4 + 1]; }
}
"#;

#[test]
fn flat_strides_constant_or_a_parameter() {
    let inf = infer(ELL);
    let row = &inf[0];
    assert_eq!(row.kernel, "rowmajor");
    assert!(row.waits_for_launch());
    assert!(matches!(&row.proposals[0].form, Form::FlatAos(Stride::Param { name, index: 5, .. }) if name == "K"));
    assert!(row.lines(&none).is_err());
    let k32 = |n: &str| (n == "K").then_some(32);
    assert_eq!(
        lines(ELL, &k32),
        ["rowmajor: AoS(32): cols[n], vals[n]", "colmajor: SoA(32): cols[n], vals[n]", "fixed: AoS(4): v[n]"]
    );
}

#[test]
fn mixed_or_unknown_subscripts_give_nothing() {
    let src = r#"
__kernel void k(__global float *a, __global float *b, __global float *c, __global float *d, uint n)
{
    uint i = get_global_id(0);
    if (i >= n) return;
    a[i * 2] = a[i];
    b[i * 2 + 1] = b[(i * 2) << 1];
    c[i] = 0;
    f(d + i);
    d[i * 2] = 1;
}
"#;
    assert!(infer(src).is_empty());
}

#[test]
fn proposals_validate_against_their_kernels() {
    let k32 = |n: &str| (n == "K").then_some(32);
    for src in [PARTICLES, ELL] {
        let text = lines(src, &k32).join("\n");
        let (entries, errors) = parse_side_file(&text);
        assert!(errors.is_empty(), "{errors:?}");
        for a in annotate_program(src, &entries) {
            assert!(a.layout.is_ok(), "{:?}", a.layout);
        }
    }
}

#[test]
fn the_samples_kernels() {
    let k32 = |n: &str| (n == "K").then_some(32);
    let got = |src: &str| lines(src, &k32);
    assert_eq!(got(include_str!("../../../samples/blackscholes/blackscholes_aos.cl")), ["black_scholes: AoS: opt[n]"]);
    assert_eq!(
        got(include_str!("../../../samples/lbm/lbm_aos.cl")),
        ["lbm_stream_collide: AoS: src[nx * ny * nz], dst[nx * ny * nz]"]
    );
    assert_eq!(
        got(include_str!("../../../samples/particles/particles_aos.cl")),
        ["particles_accelerate: AoS: p[n]", "particles_drift: AoS: p[n]", "particles_bounce: AoS: p[n]"]
    );
    assert_eq!(
        got(include_str!("../../../samples/spmv-ell/spmv_aos.cl")),
        ["ell_spmv_rowmajor: AoS(32): cols[n], vals[n]"]
    );
    assert_eq!(
        got(include_str!("../../../samples/spmv-ell/spmv_soa.cl")),
        ["ell_spmv_colmajor: SoA(32): cols[n], vals[n]"]
    );
}

#[test]
fn strides_as_constant_expressions_and_in_parentheses() {
    let src = r#"
__kernel void k(__global const float *v, __global float *o, __global float *w, const int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    for (int k = 0; k < 5; k++) o[((1 + 3) + 1) * i + k] = v[(i) * (5) + k];
    w[(i * 2)] = w[((i)) * 2 + 1];
}
"#;
    assert_eq!(lines(src, &none), ["k: AoS(5): v[n], o[n]", "k: AoS(2): w[n]"]);
}

#[test]
fn macro_accessors_as_the_preprocessor_leaves_them() {
    let src = r#"
__kernel void k(__global float *words, const int n)
{
    const int i = ((int)get_global_id(0));
    if (i >= n) return;
    (words)[(i) * 8 + (3)] += (words)[(i) * 8 + (7)];
}
"#;
    assert_eq!(lines(src, &none), ["k: AoS(8): words[n]"]);
}
