//! The rewriter's output, run on PoCL: every supported construct is one kernel of one program.
//! The original kernel runs on AoS (or SoA) data, its rewritten copy on the same data in ASTA
//! prepared on the host; converted back, the two results must agree bit for bit. One build per
//! tile, all kernels together, so that the test stays fast.

use clayout::cl::api;
use clayout::layout::{permute_host, Layout, Shape};
use clayout::rewrite::*;
use opencl_sys::*;
use std::ffi::{c_void, CString};
use std::ptr;

const M: usize = 100;

const SOURCE: &str = r#"
typedef struct { float x, y, z; int id; float4 v; float a[3]; } Body;
typedef struct dbl { double d; long n; double2 w; } Dbl;
typedef struct { float3 pos; uint tag; } P3;
#define GID get_global_id(0)

void inc_word(__global float *f, float d) { *f += d; }
float deeper(__global Body *c, uint k) { c[k].a[2] = c[k].z; return c[k].a[0]; }
void bump(__global Body *b, uint k) {
  b[k].x += b[k].v.y;
  b[k].v.w = 7.0f;
  b[k].y = deeper(b, k);
}

//DL: AoS: p[n]
__kernel void k_member(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  p[i].x = p[i].y * 2.0f + p[i].z;
  p[i].id += 3;
}

__kernel void k_array(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  for (int k = 0; k < 3; k++) p[i].a[k] += (float)k * p[i].x;
}

__kernel void k_component(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  p[i].v.x = p[i].v.w;
  p[i].v.s1 += 1.0f;
  p[i].v.z *= p[i].a[0];
  float2 h = p[i].v.hi;
  p[i].y = h.x - h.y;
}

__kernel void k_arrow(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  (p + i)->y = (p + i)->x + 1.0f;
  if (i == 0) p->z = 42.0f;
}

__kernel void k_whole(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  Body q = p[i];
  q.x += q.v.y;
  q.a[2] = (float)q.id;
  q.v *= 0.5f;
  p[i] = q;
}

__kernel void k_vector(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  p[i].v = p[i].v * 2.0f + (float4)(1.0f, 2.0f, 3.0f, 4.0f);
  p[i].v += p[i].v;
  p[i].v -= 1.0f;
  if (i % 2) p[i].v = 0.5f;
}

__kernel void k_side_effects(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  uint j = i;
  p[j++].x += 1.0f;
  p[j - 1].y = (float)j;
  uint k = i + 1;
  float4 t = p[--k].v;
  p[k].z = t.w + (float)k;
  uint m = i;
  p[m++].v = t + 1.0f;
  p[i].id = (int)m;
}

__kernel void k_address(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  inc_word(&p[i].z, 2.0f);
  __global float *f = &p[i].x;
  *f = 5.0f;
}

__kernel void k_helper(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  bump(p, i);
}

__kernel void k_sizeof_incdec(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  p[i].id = (int)sizeof(*p) + (int)sizeof(p[0]);
  p[i].id++;
  --p[i].id;
  ++p[i].a[1];
  p[i].a[0]--;
}

__kernel void k_double(__global Dbl *p, uint n) {
  uint i = GID; if (i >= n) return;
  p[i].d = p[i].d * 3.0 + (double)p[i].n;
  p[i].w.y -= p[i].w.x;
  p[i].n <<= 1;
  Dbl c = p[i];
  c.w = c.w * 2.0;
  p[i] = c;
}

__kernel void k_const_in(__global const Body * restrict in, __global float *out, uint n) {
  uint i = GID; if (i >= n) return;
  Body b = in[i];
  out[i] = in[i].x + in[i].v.z + b.a[2];
}

//DL: SoA(3): s[n]
__kernel void k_soa(__global float *s, uint n) {
  uint i = GID; if (i >= n) return;
  s[0*n + i] = s[n + i] + s[2*n + i] + s[n + (i * 7) % n];
  s[i + n*2] *= 2.0f;
}

//DL: AoS(4): f[n]
__kernel void k_aos_flat(__global float *f, uint n) {
  uint i = GID; if (i >= n) return;
  f[4*i + 1] += f[4*i + 3];
}

__kernel void k_vec3(__global P3 *p, uint n) {
  uint i = GID; if (i >= n) return;
  float3 t = p[i].pos;
  p[i].pos.y += (float)p[i].tag;
  p[i].tag = (uint)(t.x + t.z) + (p[i].pos.y > 10.0f ? 1u : 0u);
  p[i].pos.s2 = dot(t, t);
}

__kernel void k_two(__global Body *a, __global Body *b, uint n) {
  uint i = GID; if (i >= n) return;
  a[i].x = b[i].y;
  b[i].v.x = a[i].z;
}

/* Pointers derived from the buffer: element pointers, the parameter moved, word views. */
float sum3(__global const float *a) { return a[0] + a[1] + a[2]; }
void put2(__global float *a, float u, float v) { a[0] = u; a[1] = v; }
float through(__global const float *a) { return sum3(a + 1); }
void bump_body(__global Body *b) { b->x += 1.0f; b[0].a[1] = b->y; }
void walk(__global Body *b, uint k) { b += k; b->z = (b - 1)->id; }

__kernel void k_derived(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  __global Body *q = p + i;
  q->x = q->y + (q + 0)->z;
  __global Body *r = &p[i], *s = q;
  (*r).id += 5;
  s->a[2] = (i + 1 < n) ? q[1].y : 0.0f;
  if (q == r && q >= p && q < p + n) s->a[0] = (float)(q - p);
  q++;
  if (i + 1 < n) (q - 1)->a[1] = q->y;
}

__kernel void k_param_moves(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  p += i;
  p->x = p[0].y * 2.0f;
  p++;
  p -= 1;
  ++p;
  p = p - 1;
  p->z = (float)p->id;
}

__kernel void k_walk(__global Body *p, uint n) {
  uint i = GID; if (i == 0 || i >= n) return;
  walk(p, i);
  float acc = 0.0f;
  for (__global Body *e = p + i; e < p + n && e < p + i + 2; e++) acc += e->x;
  p[i].v.w = acc;
}

__kernel void k_word_view(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  __global float *w = (__global float *)p;
  __global uint *u = (__global uint *)(p + i);
  w[i * 12 + 1] += w[i * 12 + 2];
  u[3] ^= 1u;
  w += i * 12;
  *w = w[8] + w[4];
}

__kernel void k_member_ptr(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  __global float *q = &p[i].x;
  p[i].y = q[1] - q[2];
  __global float *pz = &p[i].z;
  pz[-1] += pz[-2];
  q++;
  *q += 1.0f;
  __global float *b = q;
  p[i].a[1] = b[0] + b[1] + through(&p[i].x);
  put2(&p[i].a[0], p[i].x, -p[i].x);
  p[i].v.x = sum3(p[i].a);
  bump_body(&p[i]);
  __global float *c = (i & 1) ? &p[i].x : &p[i].y;
  p[i].v.y = c[1];
}

__kernel void k_neighbour(__global Body *a, __global Body *b, uint n) {
  uint i = GID; if (i + 1 >= n) return;
  __global const float *q = &b[i].a[2];
  a[i].x = q[2] + q[3];
  a[i].y = (*(__global const float2 *)&b[n - 1 - i].y + (float2)(0.0f)).x;
}

__kernel void k_vload(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  float4 v = vload4(0, &p[i].x);
  p[i].a[0] = v.x + v.w * 2.0f;
  vstore2((float2)(v.y, v.z), 0, &p[i].a[1]);
  float3 a = vload3(0, p[i].a);
  p[i].v.xyz = a;
  float2 d = *(__global const float2 *)&p[i].y;
  p[i].v.w = d.x - d.y;
}

__kernel void k_atomic(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  atomic_add(&p[i % 7].id, 1);
  atomic_inc(&p[i].id);
  atomic_max((__global int *)&p[i].a[2], 3);
}

__kernel void k_swizzle(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  p[i].v.xyz = p[i].v.zyx * 2.0f;
  p[i].v.xw += 1.0f;
  p[i].id++;
  p[i].v.s3 -= 0.5f;
}

__kernel void k_copy(__global Body *a, __global Body *b, uint n) {
  uint i = GID; if (i >= n) return;
  a[i] = b[(i + 1) % n];
  Body t = b[n - 1 - i];
  t.x += 1.0f;
  a[i].v += t.v * t.x;
}

typedef struct { int type; int flags; double x, y, z; double q; double energy; } Site;
typedef struct { float x, y, z; uchar4 color; } Splat;
typedef struct { float w; uchar flags; uchar pad[3]; } Wt;
typedef struct { short s[2]; float f; } Sh;
typedef struct { float x, y, z; } vec3_t;
typedef struct { vec3_t v[3]; float area; float n[2]; } Tri;

__kernel void k_site(__global Site *s, uint n) {
  uint i = GID; if (i >= n) return;
  s[i].x += s[i].q * 0.5;
  s[i].flags = s[i].type + 1;
  s[i].energy = s[i].x * s[i].y;
  __global double *d = &s[i].z;
  d[1] -= d[-1];
  s[i].z++;
  Site c = s[i];
  c.y += 1.0;
  s[i] = c;
}

__kernel void k_splat(__global Splat *s, __global Wt *w, uint n) {
  uint i = GID; if (i >= n) return;
  float4 c = convert_float4(s[i].color) * w[i].w;
  s[i].color = convert_uchar4_sat(c);
  s[i].color.y += 1;
  w[i].flags = (uchar)(w[i].flags + 1);
  w[i].pad[1] = w[i].flags;
  s[i].z += (w[i].flags & 1) ? 1.0f : -1.0f;
  __global uchar *b = &w[i].flags;
  b[2] = b[0] ^ 0x5a;
}

__kernel void k_short(__global Sh *s, uint n) {
  uint i = GID; if (i >= n) return;
  s[i].s[1] = s[i].s[0] + 3;
  s[i].f += (float)s[i].s[1];
}

__kernel void k_nested(__global Tri *t, uint n) {
  uint i = GID; if (i >= n) return;
  t[i].v[0].z += 1.0f;
  vec3_t e = t[i].v[1];
  t[i].area = e.x + e.y + e.z;
  t[i].v[2] = e;
  t[i].n[1] = t[i].v[2].y + t[i].v[(i & 1)].x;
}

__kernel void k_scopes(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  { __global float *q = &p[i].x; q[1] = q[0] + 1.0f; }
  float q = 2.0f;
  p[i].z += q;
  __global Body *r;
  if (i & 1) r = p + i; else r = &p[i];
  r->a[0] = -r->a[0];
  for (__global const float *w = p[i].a; w < p[i].a + 3; w++) p[i].v.x += *w;
  int w = 5;
  p[i].id += w;
}

__kernel void k_vector_view(__global Body *p, uint n) {
  uint i = GID; if (i >= n) return;
  __global float4 *v = (__global float4 *)(p + i);
  float4 a = v[1];
  v[0] = a.wzyx;
  v++;
  (*v).y += 1.0f;
  v[1].z = (float)(v - (__global float4 *)p);
}

void two(__global Body *a, __global const Body *b) { a->x = b->y; a[0].a[2] = b[0].a[1]; }

__kernel void k_two_ptrs(__global Body *p, uint n) {
  uint i = GID; if (i + 1 >= n) return;
  two(p + i, &p[i + 1]);
}

__kernel void s_mixed(__global Site *s, __global Tri *t, uint n) {
  uint i = GID; if (i >= n) return;
  s[i].x += s[i].q * 0.5;
  s[i].flags = s[i].type + 1;
  s[i].z++;
  Site c = s[i];
  c.y += 1.0;
  s[i] = c;
  t[i].v[0].z += 1.0f;
  vec3_t e = t[i].v[1];
  t[i].v[2] = e;
  t[i].area = e.x;
}

__kernel void s_bytes(__global Splat *s, __global Wt *w, uint n) {
  uint i = GID; if (i >= n) return;
  s[i].color = convert_uchar4_sat(convert_float4(s[i].color) * w[i].w);
  s[i].color.y += 1;
  w[i].flags = (uchar)(w[i].flags + 1);
  w[i].pad[1] = w[i].flags;
}

//DL: SoA(3): s[n]
__kernel void k_soa_ptr(__global float *s, uint n) {
  uint i = GID; if (i >= n) return;
  __global float *s1 = s + n;
  s1[i] = s[i] * 2.0f + s1[n + i];
}

//DL: AoS(4): f[n]
__kernel void k_flat_moves(__global float *f, uint n) {
  uint i = GID; if (i >= n) return;
  f += 4 * i;
  f[0] += f[3];
  f++;
  *f = f[1] * 3.0f;
  float4 v = vload4(0, f - 1);
  vstore4(v.wzyx, i, f - 1 - 4 * i);
}
"#;

#[derive(Clone)]
enum Buf {
    /// A buffer of structures of this type, rewritten.
    Struct(&'static str),
    /// A flat float buffer of S words per element, rewritten, host layout AoS or SoA.
    Flat(u32, Layout),
    /// M floats the rewriter leaves alone.
    Plain,
}

fn cases() -> Vec<(&'static str, Vec<Buf>)> {
    use Buf::*;
    let body = || Struct("Body");
    vec![
        ("k_member", vec![body()]),
        ("k_array", vec![body()]),
        ("k_component", vec![body()]),
        ("k_arrow", vec![body()]),
        ("k_whole", vec![body()]),
        ("k_vector", vec![body()]),
        ("k_side_effects", vec![body()]),
        ("k_address", vec![body()]),
        ("k_helper", vec![body()]),
        ("k_sizeof_incdec", vec![body()]),
        ("k_double", vec![Struct("Dbl")]),
        ("k_const_in", vec![body(), Plain]),
        ("k_soa", vec![Flat(3, Layout::Soa)]),
        ("k_aos_flat", vec![Flat(4, Layout::Aos)]),
        ("k_vec3", vec![Struct("P3")]),
        ("k_two", vec![body(), body()]),
        ("k_derived", vec![body()]),
        ("k_param_moves", vec![body()]),
        ("k_walk", vec![body()]),
        ("k_word_view", vec![body()]),
        ("k_member_ptr", vec![body()]),
        ("k_neighbour", vec![body(), body()]),
        ("k_vload", vec![body()]),
        ("k_atomic", vec![body()]),
        ("k_swizzle", vec![body()]),
        ("k_copy", vec![body(), body()]),
        ("k_site", vec![Struct("Site")]),
        ("k_splat", vec![Struct("Splat"), Struct("Wt")]),
        ("k_short", vec![Struct("Sh")]),
        ("k_nested", vec![Struct("Tri")]),
        ("k_scopes", vec![body()]),
        ("k_vector_view", vec![body()]),
        ("k_two_ptrs", vec![body()]),
        ("s_mixed", vec![Struct("Site"), Struct("Tri")]),
        ("s_bytes", vec![Struct("Splat"), Struct("Wt")]),
        ("k_soa_ptr", vec![Flat(3, Layout::Soa)]),
        ("k_flat_moves", vec![Flat(4, Layout::Aos)]),
    ]
}

fn param_names(kernel: &str) -> Vec<String> {
    let sig = clayout::clc::kernels(SOURCE).into_iter().filter_map(Result::ok).find(|k| k.name == kernel).unwrap();
    sig.params.iter().map(|p| p.name.clone()).collect()
}

/// Every rewritten kernel appended to the one program, one rewrite after the other.
fn rewritten_program() -> (String, Vec<Vec<ExtraArg>>) {
    let mut src = SOURCE.to_string();
    let mut extras = Vec::new();
    for (kernel, bufs) in cases() {
        let names = param_names(kernel);
        let mut params = Vec::new();
        for (k, b) in bufs.iter().enumerate() {
            let (layout, host) = match b {
                Buf::Struct(t) => (struct_layout(SOURCE, t).unwrap(), HostKind::Aos),
                Buf::Flat(s, Layout::Soa) => {
                    (StructLayout::flat("float", *s).unwrap(), HostKind::Soa { extent: "n".into() })
                }
                Buf::Flat(s, _) => (StructLayout::flat("float", *s).unwrap(), HostKind::Aos),
                Buf::Plain => continue,
            };
            params.push(ParamRewrite { index: k, name: names[k].clone(), layout, host });
        }
        let req = RewriteRequest { kernel: kernel.into(), private_name: format!("{kernel}__clayout_asta"), params };
        let r = rewrite_kernel(&src, &req).unwrap_or_else(|e| panic!("{kernel}: refused: {e}"));
        src = r.source;
        extras.push(r.extra_args);
    }
    (src, extras)
}

struct Cl {
    ctx: cl_context,
    queue: cl_command_queue,
    dev: cl_device_id,
}

fn cl() -> Option<Cl> {
    // One test at a time: PoCL 3.1 creating its first contexts from two threads at once gave one
    // of them a context that refused every buffer (CL_INVALID_BUFFER_SIZE for 4,800 bytes), in
    // about one run of this binary in five once its rewriting got faster and the two tests
    // reached this point together.
    static FIRST: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = FIRST.lock().unwrap_or_else(|e| e.into_inner());
    unsafe {
        let mut n: cl_uint = 0;
        if api().clGetPlatformIDs(0, ptr::null_mut(), &mut n) != CL_SUCCESS || n == 0 {
            return None;
        }
        let mut ps = vec![ptr::null_mut(); n as usize];
        api().clGetPlatformIDs(n, ps.as_mut_ptr(), ptr::null_mut());
        let mut dev: cl_device_id = ptr::null_mut();
        let p = ps
            .into_iter()
            .find(|&p| api().clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &mut dev, ptr::null_mut()) == CL_SUCCESS)?;
        let _ = p;
        let mut err = 0;
        let ctx = api().clCreateContext(ptr::null(), 1, &dev, None, ptr::null_mut(), &mut err);
        assert_eq!(err, CL_SUCCESS);
        let queue = api().clCreateCommandQueue(ctx, dev, 0, &mut err);
        assert_eq!(err, CL_SUCCESS);
        Some(Cl { ctx, queue, dev })
    }
}

fn build(cl: &Cl, src: &str, options: &str) -> cl_program {
    unsafe {
        let c = CString::new(src).unwrap();
        let mut p = c.as_ptr();
        let mut err = 0;
        let prog = api().clCreateProgramWithSource(cl.ctx, 1, &mut p, ptr::null(), &mut err);
        assert_eq!(err, CL_SUCCESS);
        let opts = CString::new(options).unwrap();
        let e = api().clBuildProgram(prog, 1, &cl.dev, opts.as_ptr(), None, ptr::null_mut());
        if e != CL_SUCCESS {
            let mut n = 0usize;
            api().clGetProgramBuildInfo(prog, cl.dev, CL_PROGRAM_BUILD_LOG, 0, ptr::null_mut(), &mut n);
            let mut log = vec![0u8; n];
            api().clGetProgramBuildInfo(
                prog,
                cl.dev,
                CL_PROGRAM_BUILD_LOG,
                n,
                log.as_mut_ptr() as *mut c_void,
                ptr::null_mut(),
            );
            let numbered: String = src.lines().enumerate().map(|(k, l)| format!("{:4} {l}\n", k + 1)).collect();
            panic!("build failed ({e}):\n{}\n--- source ---\n{numbered}", String::from_utf8_lossy(&log));
        }
        prog
    }
}

/// Every scalar or vector element of a structure: its scalar, lanes and byte offset.
fn leaves(l: &StructLayout, base: u32, out: &mut Vec<(String, u32, u32)>) {
    for m in &l.members {
        for e in 0..m.count {
            let off = base + m.byte_offset + e * m.elem_bytes;
            match &m.nested {
                Some(n) => leaves(n, off, out),
                None => out.push((m.scalar.clone(), m.lanes, off)),
            }
        }
    }
}

/// M structures: floats and small integers that every operation keeps exact, padding bytes
/// a pattern of their own (copies of whole structures must carry them).
fn data(layout: &StructLayout, m: usize, seed: u64) -> Vec<u8> {
    let size = (layout.words * layout.word_bytes) as usize;
    let mut all = Vec::new();
    leaves(layout, 0, &mut all);
    let mut out = vec![0u8; m * size];
    for i in 0..m {
        let s = &mut out[i * size..(i + 1) * size];
        for (k, b) in s.iter_mut().enumerate() {
            *b = (0x90 + (i * 13 + k * 5 + seed as usize) % 37) as u8;
        }
        for (scalar, lanes, off) in &all {
            for lane in 0..*lanes {
                let v = ((i * 31 + (*off as usize + lane as usize) * 7) as u64 + seed) % 23;
                let bytes: Vec<u8> = match scalar.as_str() {
                    "float" => (v as f32 + 0.5).to_le_bytes().to_vec(),
                    "double" => (v as f64 + 0.25).to_le_bytes().to_vec(),
                    "long" | "ulong" => (v as i64).to_le_bytes().to_vec(),
                    "short" | "ushort" => (v as i16).to_le_bytes().to_vec(),
                    "char" | "uchar" => vec![v as u8],
                    _ => (v as i32).to_le_bytes().to_vec(),
                };
                let at = *off as usize + lane as usize * bytes.len();
                s[at..at + bytes.len()].copy_from_slice(&bytes);
            }
        }
    }
    out
}

struct Arg {
    host: Vec<u8>,
    shape: Option<(Shape, Layout)>,
}

/// One argument of a launch: a buffer (read back into its vector afterwards) or a value.
enum KArg<'a> {
    Mem(&'a mut Vec<u8>),
    U32(u32),
    F32(f32),
    U64(u64),
}

fn launch(cl: &Cl, prog: cl_program, kernel: &str, args: &mut [KArg], global: usize, local: Option<usize>) {
    unsafe {
        let name = CString::new(kernel).unwrap();
        let mut err = 0;
        let k = api().clCreateKernel(prog, name.as_ptr(), &mut err);
        assert_eq!(err, CL_SUCCESS, "clCreateKernel {kernel}");
        let mut mems = Vec::new();
        for (n, a) in args.iter().enumerate() {
            let set = |size: usize, value: *const c_void| {
                assert_eq!(api().clSetKernelArg(k, n as cl_uint, size, value), CL_SUCCESS, "{kernel}: argument {n}");
            };
            match a {
                KArg::Mem(host) => {
                    let mem = api().clCreateBuffer(
                        cl.ctx,
                        CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                        host.len(),
                        host.as_ptr() as *mut c_void,
                        &mut err,
                    );
                    assert_eq!(err, CL_SUCCESS, "{kernel}: clCreateBuffer of {} bytes for argument {n}", host.len());
                    set(std::mem::size_of::<cl_mem>(), &mem as *const cl_mem as *const c_void);
                    mems.push(mem);
                }
                KArg::U32(v) => set(4, v as *const u32 as *const c_void),
                KArg::F32(v) => set(4, v as *const f32 as *const c_void),
                KArg::U64(v) => set(8, v as *const u64 as *const c_void),
            }
        }
        let local_ptr = local.as_ref().map_or(ptr::null(), |l| l as *const usize);
        assert_eq!(
            api().clEnqueueNDRangeKernel(
                cl.queue,
                k,
                1,
                ptr::null(),
                &global,
                local_ptr,
                0,
                ptr::null(),
                ptr::null_mut()
            ),
            CL_SUCCESS,
            "launch {kernel}"
        );
        let hosts = args.iter_mut().filter_map(|a| match a {
            KArg::Mem(h) => Some(h),
            _ => None,
        });
        for (host, mem) in hosts.zip(&mems) {
            assert_eq!(
                api().clEnqueueReadBuffer(
                    cl.queue,
                    *mem,
                    CL_TRUE,
                    0,
                    host.len(),
                    host.as_mut_ptr() as *mut c_void,
                    0,
                    ptr::null(),
                    ptr::null_mut()
                ),
                CL_SUCCESS
            );
            api().clReleaseMemObject(*mem);
        }
        api().clReleaseKernel(k);
    }
}

/// A copy's extra arguments, M structures each, after the kernel's own `args`.
fn push_extra(args: &mut Vec<KArg>, extra: &[ExtraArg], m: usize) {
    push_ordered(args, extra, m, (0, 0));
}

/// The extra arguments: each M, and the staged slices below `order.0` structures loaded in
/// ASTA order, those below `order.1` stored in ASTA order.
fn push_ordered(args: &mut Vec<KArg>, extra: &[ExtraArg], m: usize, order: (usize, usize)) {
    for e in extra {
        assert_eq!(e.index, args.len(), "extra arguments follow the kernel's own");
        let v = match e.what {
            ExtraKind::StructCount => m,
            ExtraKind::AstaIn => order.0,
            ExtraKind::AstaOut => order.1,
        };
        args.push(KArg::U64(v as u64));
    }
}

/// The buffers, then `n` = M, then the rewritten copy's extra arguments, each M.
fn run(cl: &Cl, prog: cl_program, kernel: &str, args: &mut [Arg], extra: &[ExtraArg]) {
    let mut kargs: Vec<KArg> = args.iter_mut().map(|a| KArg::Mem(&mut a.host)).collect();
    kargs.push(KArg::U32(M as u32));
    push_extra(&mut kargs, extra, M);
    launch(cl, prog, kernel, &mut kargs, M, None);
}

fn check_tile(cl: &Cl, src: &str, extras: &[Vec<ExtraArg>], t: u32, options: &str) {
    let prog = build(cl, src, &format!("-D CLAYOUT_TILE={t} {options}"));
    for ((kernel, bufs), extra) in cases().into_iter().zip(extras) {
        let mut orig = Vec::new();
        let mut asta = Vec::new();
        for (n, b) in bufs.iter().enumerate() {
            let (host, shape) = match b {
                Buf::Struct(ty) => {
                    let l = struct_layout(SOURCE, ty).unwrap();
                    (data(&l, M, n as u64), Some((Shape::new(M as u64, l.words, l.word_bytes), Layout::Aos)))
                }
                Buf::Flat(s, from) => {
                    let l = StructLayout::flat("float", *s).unwrap();
                    (data(&l, M, n as u64), Some((Shape::new(M as u64, *s, 4), *from)))
                }
                Buf::Plain => (vec![0u8; M * 4], None),
            };
            let mut dev = host.clone();
            if let Some((sh, from)) = shape {
                permute_host(&mut dev, sh, from, Layout::Asta { t });
            }
            orig.push(Arg { host, shape });
            asta.push(Arg { host: dev, shape });
        }
        let before: Vec<Vec<u8>> = orig.iter().map(|a| a.host.clone()).collect();
        // Control: the original kernel on the ASTA data must go wrong, or agreeing proves
        // nothing about the rewrite.
        let mut control: Vec<Arg> = asta.iter().map(|a| Arg { host: a.host.clone(), shape: a.shape }).collect();
        run(cl, prog, kernel, &mut orig, &[]);
        run(cl, prog, &format!("{kernel}__clayout_asta"), &mut asta, extra);
        assert!(orig.iter().zip(&before).any(|(a, b)| a.host != *b), "{kernel} changed nothing");
        let differs = orig.iter().any(|a| a.shape.is_some_and(|(sh, from)| !from.same_as(Layout::Asta { t }, sh)));
        if differs {
            run(cl, prog, kernel, &mut control, &[]);
            for c in control.iter_mut() {
                if let Some((sh, from)) = c.shape {
                    permute_host(&mut c.host, sh, Layout::Asta { t }, from);
                }
            }
            assert!(control.iter().zip(&orig).any(|(c, o)| c.host != o.host), "{kernel}: the control agrees too");
        }
        for (n, (o, a)) in orig.iter().zip(asta.iter_mut()).enumerate() {
            if let Some((sh, from)) = o.shape {
                permute_host(&mut a.host, sh, Layout::Asta { t }, from);
            }
            let w = o.shape.map_or(4, |(s, _)| s.w as usize);
            assert_same(&o.host, &a.host, w, &format!("{kernel} (T={t}) buffer {n}"));
        }
    }
    unsafe {
        api().clReleaseProgram(prog);
    }
}

/// Panics naming the first `w`-byte word where the original's result and the copy's differ.
fn assert_same(original: &[u8], copy: &[u8], w: usize, what: &str) {
    if let Some(k) = (0..original.len() / w).find(|&k| original[k * w..k * w + w] != copy[k * w..k * w + w]) {
        let word = |b: &[u8]| b[k * w..k * w + w].to_vec();
        panic!("{what}: word {k} differs: original {:?}, copy {:?}", word(original), word(copy));
    }
    assert_eq!(original.len(), copy.len(), "{what}");
}

/// The platform to run on, once program `src` is written where `dump_var` names, if it does.
fn platform_for(src: &str, dump_var: &str) -> Option<Cl> {
    if let Ok(path) = std::env::var(dump_var) {
        std::fs::write(path, src).unwrap();
    }
    let cl = cl();
    if cl.is_none() {
        eprintln!("no OpenCL platform: skipped");
    }
    cl
}

#[test]
fn rewritten_kernels_agree_with_the_originals_on_pocl() {
    let (src, extras) = rewritten_program();
    let Some(cl) = platform_for(&src, "CLAYOUT_REWRITE_DUMP") else {
        return;
    };
    // M = 100: with T = 32 three full tiles and a tail of 4; with T = 128 only the tail.
    for t in [32, 128] {
        check_tile(&cl, &src, &extras, t, "");
    }
    // The 32-bit index arithmetic the runtime selects for buffers of fewer than 2^32 words.
    check_tile(&cl, &src, &extras, 32, "-D CLAYOUT_INDEX32");
}

/// The staged copies: the samples' AoS kernels as they are, the ASTA cases above that address
/// only the work-item's own structure, and kernels for what neither has.
fn staged_source() -> String {
    let samples = concat!(
        include_str!("../samples/blackscholes/blackscholes_aos.cl"),
        include_str!("../samples/particles/particles_aos.cl"),
    );
    format!("{samples}{SOURCE}{STAGED_EXTRA}")
}

const STAGED_EXTRA: &str = r#"
/* A copy from one buffer to another copies members, not the padding between them (whose value
   C leaves unspecified): a structure without padding keeps the comparison bit for bit. */
typedef struct { float x, y, z; int id; float4 v; float a[4]; } Full;

__kernel void s_whole(__global Full *p, __global Full *q, uint n) {
  const ulong i = get_global_id(0);
  if (i >= n) return;
  Full b = q[i];
  b.x += b.v.y;
  b.a[2] = (float)b.id;
  b.v *= 0.5f;
  p[i] = b;
  q[i].id = (int)i;
}

__kernel void s_returns(__global Body *p, uint n) {
  int i = get_global_id(0);
  if (i >= n) return;
  for (int k = 0; k < 3; k++) {
    if (p[i].a[k] > 15.0f) return;
    (p + i)->a[k] += (float)k * p[i].x;
    p[i].id++;
  }
}
"#;

/// M for the staged kernels: not a multiple of any work-group size the test launches.
const STAGED_M: usize = 1000;

/// An argument of a staged case.
#[derive(Clone, Copy)]
enum SArg {
    /// STAGED_M structures of this type, staged.
    Staged(&'static str),
    /// This many floats, left alone.
    Floats(usize),
    /// `n`, the number of structures.
    N,
    U32(u32),
    F32(f32),
}

fn staged_cases() -> Vec<(&'static str, Vec<SArg>)> {
    use SArg::*;
    let body = || vec![Staged("Body"), N];
    vec![
        ("black_scholes", vec![Staged("option_t"), F32(0.02), F32(0.3), N]),
        ("particles_accelerate", vec![Staged("particle_t"), Floats(64), U32(16), N, F32(0.001)]),
        ("particles_drift", vec![Staged("particle_t"), N, F32(0.01)]),
        ("particles_bounce", vec![Staged("particle_t"), N, F32(5.0), F32(0.9)]),
        ("k_member", body()),
        ("k_array", body()),
        ("k_component", body()),
        ("k_whole", body()),
        ("k_vector", body()),
        ("k_sizeof_incdec", body()),
        ("k_double", vec![Staged("Dbl"), N]),
        ("k_const_in", vec![Staged("Body"), Floats(STAGED_M), N]),
        ("k_vec3", vec![Staged("P3"), N]),
        ("k_two", vec![Staged("Body"), Staged("Body"), N]),
        ("s_whole", vec![Staged("Full"), Staged("Full"), N]),
        ("s_returns", body()),
        ("s_mixed", vec![Staged("Site"), Staged("Tri"), N]),
        ("s_bytes", vec![Staged("Splat"), Staged("Wt"), N]),
    ]
}

/// Every staged copy appended to one program, one after the other.
fn staged_program() -> (String, Vec<Staged>) {
    let source = staged_source();
    let mut src = source.clone();
    let mut out = Vec::new();
    for (kernel, args) in staged_cases() {
        let sig = clayout::clc::kernels(&source).into_iter().filter_map(Result::ok).find(|k| k.name == kernel).unwrap();
        let params = args
            .iter()
            .enumerate()
            .filter_map(|(k, a)| match a {
                SArg::Staged(ty) => Some(ParamRewrite {
                    index: k,
                    name: sig.params[k].name.clone(),
                    layout: struct_layout(&source, ty).unwrap(),
                    host: HostKind::Aos,
                }),
                _ => None,
            })
            .collect();
        let req = RewriteRequest { kernel: kernel.into(), private_name: format!("{kernel}__clayout_staged"), params };
        let r = stage_kernel(&src, &req).unwrap_or_else(|e| panic!("{kernel}: refused: {e}"));
        src = r.source.clone();
        out.push(r);
    }
    (src, out)
}

/// The launch arguments of a staged case, with the copy's `extra` arguments (each M, every
/// slice in AoS order).
fn staged_args<'a>(args: &[SArg], bufs: &'a mut [Vec<u8>], extra: &[ExtraArg]) -> Vec<KArg<'a>> {
    ordered_args(args, bufs, extra, (0, 0))
}

/// `staged_args` with the slices of every staged buffer below `order.0` structures loaded in
/// ASTA order and those below `order.1` stored in ASTA order.
fn ordered_args<'a>(
    args: &[SArg],
    bufs: &'a mut [Vec<u8>],
    extra: &[ExtraArg],
    order: (usize, usize),
) -> Vec<KArg<'a>> {
    let mut mems = bufs.iter_mut();
    let mut out: Vec<KArg> = args
        .iter()
        .map(|a| match *a {
            SArg::Staged(_) | SArg::Floats(_) => KArg::Mem(mems.next().unwrap()),
            SArg::N => KArg::U32(STAGED_M as u32),
            SArg::U32(v) => KArg::U32(v),
            SArg::F32(v) => KArg::F32(v),
        })
        .collect();
    push_ordered(&mut out, extra, STAGED_M, order);
    out
}

fn check_staged(cl: &Cl, src: &str, staged: &[Staged], options: &str, local: usize) {
    let prog = build(cl, src, options);
    let tile = options.split_whitespace().find_map(|o| o.strip_prefix("CLAYOUT_TILE=")?.parse::<usize>().ok());
    // Rounded up to whole work-groups, and one more group wholly past M.
    let global = STAGED_M.div_ceil(local) * local + local;
    for ((kernel, args), st) in staged_cases().into_iter().zip(staged) {
        let mut bufs: Vec<Vec<u8>> = args
            .iter()
            .enumerate()
            .filter_map(|(n, a)| match a {
                SArg::Staged(ty) => Some(data(&struct_layout(src, ty).unwrap(), STAGED_M, n as u64)),
                SArg::Floats(k) => Some(data(&StructLayout::flat("float", 1).unwrap(), *k, n as u64)),
                _ => None,
            })
            .collect();
        let before = bufs.clone();
        let mut copy = bufs.clone();
        launch(cl, prog, kernel, &mut staged_args(&args, &mut bufs, &[]), global, Some(local));
        let name = format!("{kernel}__clayout_staged");
        launch(cl, prog, &name, &mut staged_args(&args, &mut copy, &st.extra_args), global, Some(local));
        assert!(bufs != before, "{kernel} changed nothing");
        for (n, (o, c)) in bufs.iter().zip(&copy).enumerate() {
            assert_same(o, c, 4, &format!("{kernel} ({options}, local {local}) buffer {n}"));
        }
        if let Some(t) = tile.filter(|t| local.is_multiple_of(*t)) {
            check_orders(cl, prog, (kernel, &args), st, (&before, &bufs), (global, local), t, src);
        }
    }
    unsafe {
        api().clReleaseProgram(prog);
    }
}

/// The staged copy of one case with its slices loaded and stored in ASTA order, below the
/// structures of whole groups (`mf`, slices starting on a tile of `t`): from AoS to ASTA (the
/// conversion fused with the launch), from ASTA to AoS (fused back) and from ASTA to ASTA. The
/// staged buffers must hold the original's results (`after`, from `before`), their first `mf`
/// structures in ASTA where the copy stored them so; the other buffers must agree as they are.
#[allow(clippy::too_many_arguments)]
fn check_orders(
    cl: &Cl,
    prog: cl_program,
    (kernel, args): (&str, &[SArg]),
    st: &Staged,
    (before, after): (&[Vec<u8>], &[Vec<u8>]),
    (global, local): (usize, usize),
    t: usize,
    src: &str,
) {
    let mf = STAGED_M / local * local;
    // (The staged buffers' layouts, in the order of the buffers.)
    let shapes: Vec<Option<Shape>> = args
        .iter()
        .filter_map(|a| match a {
            SArg::Staged(ty) => {
                let l = struct_layout(src, ty).unwrap();
                Some(Some(Shape::new(mf as u64, l.words, l.word_bytes)))
            }
            SArg::Floats(_) => Some(None),
            _ => None,
        })
        .collect();
    let asta = |bufs: &[Vec<u8>]| -> Vec<Vec<u8>> {
        bufs.iter()
            .zip(&shapes)
            .map(|(b, sh)| {
                let mut b = b.clone();
                if let Some(sh) = sh {
                    permute_host(&mut b, *sh, Layout::Aos, Layout::Asta { t: t as u32 });
                }
                b
            })
            .collect()
    };
    let name = format!("{kernel}__clayout_staged");
    for (order, input, want) in [
        ((0, mf), before.to_vec(), asta(after)),
        ((mf, 0), asta(before), after.to_vec()),
        ((mf, mf), asta(before), asta(after)),
    ] {
        let mut bufs = input;
        launch(cl, prog, &name, &mut ordered_args(args, &mut bufs, &st.extra_args, order), global, Some(local));
        for (n, (w, got)) in want.iter().zip(&bufs).enumerate() {
            assert_same(w, got, 4, &format!("{kernel} (tile {t}, local {local}, orders {order:?}) buffer {n}"));
        }
    }
}

#[test]
fn staged_kernels_agree_with_the_originals_on_pocl() {
    let (src, staged) = staged_program();
    let writes: Vec<(&str, Vec<bool>)> = staged
        .iter()
        .zip(staged_cases())
        .map(|(s, (k, _))| (k, s.params.iter().map(|p| p.writes_back).collect()))
        .collect();
    for (k, w) in &writes {
        let expected = match *k {
            "k_const_in" => vec![false],
            "k_two" | "s_whole" | "s_mixed" | "s_bytes" => vec![true, true],
            _ => vec![true],
        };
        assert_eq!(*w, expected, "{k}");
    }
    let Some(cl) = platform_for(&src, "CLAYOUT_STAGE_DUMP") else {
        return;
    };
    // Groups of 64 and of 48 work-items (CLAYOUT_STAGE_WG, 64, holds either), the last group
    // partial; 64-bit and 32-bit index arithmetic; CLAYOUT_STAGE_WG given and defaulted.
    // Where the tile divides the group, the slices of whole groups also go in ASTA order.
    check_staged(&cl, &src, &staged, "-D CLAYOUT_TILE=32 -D CLAYOUT_STAGE_WG=64", 64);
    check_staged(&cl, &src, &staged, "-D CLAYOUT_TILE=32 -D CLAYOUT_INDEX32", 48);
    check_staged(&cl, &src, &staged, "-D CLAYOUT_TILE=16 -D CLAYOUT_INDEX32", 48);
}
