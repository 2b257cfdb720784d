//! The rewriter's output, run on PoCL: every supported construct is one kernel of one program.
//! The original kernel runs on AoS (or SoA) data, its rewritten copy on the same data in ASTA
//! prepared on the host; converted back, the two results must agree bit for bit. One build per
//! tile, all kernels together, so that the test stays fast.

use clayout::layout::{permute_host, Layout, Shape};
use clayout::real::api;
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
    ]
}

fn param_names(kernel: &str) -> Vec<String> {
    let sig = clayout::annotation::kernels(SOURCE)
        .into_iter()
        .filter_map(Result::ok)
        .find(|k| k.name == kernel)
        .unwrap();
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
                Buf::Flat(s, Layout::Soa) => (
                    StructLayout::flat("float", *s).unwrap(),
                    HostKind::Soa { extent: "n".into() },
                ),
                Buf::Flat(s, _) => (StructLayout::flat("float", *s).unwrap(), HostKind::Aos),
                Buf::Plain => continue,
            };
            params.push(ParamRewrite {
                index: k,
                name: names[k].clone(),
                layout,
                host,
            });
        }
        let req = RewriteRequest {
            kernel: kernel.into(),
            private_name: format!("{kernel}__clayout_asta"),
            params,
        };
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
    unsafe {
        let mut n: cl_uint = 0;
        if api().clGetPlatformIDs(0, ptr::null_mut(), &mut n) != CL_SUCCESS || n == 0 {
            return None;
        }
        let mut ps = vec![ptr::null_mut(); n as usize];
        api().clGetPlatformIDs(n, ps.as_mut_ptr(), ptr::null_mut());
        let mut dev: cl_device_id = ptr::null_mut();
        let p = ps.into_iter().find(|&p| {
            api().clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &mut dev, ptr::null_mut()) == CL_SUCCESS
        })?;
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
            api().clGetProgramBuildInfo(
                prog,
                cl.dev,
                CL_PROGRAM_BUILD_LOG,
                0,
                ptr::null_mut(),
                &mut n,
            );
            let mut log = vec![0u8; n];
            api().clGetProgramBuildInfo(
                prog,
                cl.dev,
                CL_PROGRAM_BUILD_LOG,
                n,
                log.as_mut_ptr() as *mut c_void,
                ptr::null_mut(),
            );
            let numbered: String = src
                .lines()
                .enumerate()
                .map(|(k, l)| format!("{:4} {l}\n", k + 1))
                .collect();
            panic!(
                "build failed ({e}):\n{}\n--- source ---\n{numbered}",
                String::from_utf8_lossy(&log)
            );
        }
        prog
    }
}

/// Data of `bytes` bytes: floats and small integers that every operation keeps exact.
fn data(layout: &StructLayout, m: usize, seed: u64) -> Vec<u8> {
    let s = layout.words as usize;
    let w = layout.word_bytes as usize;
    let mut kinds = vec!["float"; s];
    for mem in &layout.members {
        for k in 0..mem.count * mem.stride() {
            kinds[(mem.word_offset + k) as usize] = if mem.lanes == 3 && k % 4 == 3 {
                "pad"
            } else {
                mem.scalar.as_str()
            };
        }
    }
    let mut out = Vec::with_capacity(m * s * w);
    for i in 0..m {
        for (k, kind) in kinds.iter().enumerate() {
            let v = ((i * 31 + k * 7) as u64 + seed) % 23;
            let bytes: Vec<u8> = match (*kind, w) {
                ("float", 4) => (v as f32 + 0.5).to_le_bytes().to_vec(),
                ("double", 8) => (v as f64 + 0.25).to_le_bytes().to_vec(),
                (_, 4) => (v as i32).to_le_bytes().to_vec(),
                _ => (v as i64).to_le_bytes().to_vec(),
            };
            out.extend_from_slice(&bytes);
        }
    }
    out
}

struct Arg {
    host: Vec<u8>,
    shape: Option<(Shape, Layout)>,
}

fn run(cl: &Cl, prog: cl_program, kernel: &str, args: &mut [Arg], extra: &[ExtraArg]) {
    unsafe {
        let name = CString::new(kernel).unwrap();
        let mut err = 0;
        let k = api().clCreateKernel(prog, name.as_ptr(), &mut err);
        assert_eq!(err, CL_SUCCESS, "clCreateKernel {kernel}");
        let mut mems = Vec::new();
        for (n, a) in args.iter().enumerate() {
            let mem = api().clCreateBuffer(
                cl.ctx,
                CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                a.host.len(),
                a.host.as_ptr() as *mut c_void,
                &mut err,
            );
            assert_eq!(err, CL_SUCCESS);
            assert_eq!(
                api().clSetKernelArg(
                    k,
                    n as cl_uint,
                    std::mem::size_of::<cl_mem>(),
                    &mem as *const cl_mem as *const c_void
                ),
                CL_SUCCESS
            );
            mems.push(mem);
        }
        let n = M as cl_uint;
        assert_eq!(
            api().clSetKernelArg(
                k,
                args.len() as cl_uint,
                4,
                &n as *const cl_uint as *const c_void
            ),
            CL_SUCCESS
        );
        for e in extra {
            let mv = M as cl_ulong;
            assert_eq!(
                api().clSetKernelArg(
                    k,
                    e.index as cl_uint,
                    8,
                    &mv as *const cl_ulong as *const c_void
                ),
                CL_SUCCESS,
                "extra arg {}",
                e.index
            );
        }
        let global = M;
        assert_eq!(
            api().clEnqueueNDRangeKernel(
                cl.queue,
                k,
                1,
                ptr::null(),
                &global,
                ptr::null(),
                0,
                ptr::null(),
                ptr::null_mut()
            ),
            CL_SUCCESS,
            "launch {kernel}"
        );
        for (a, mem) in args.iter_mut().zip(&mems) {
            assert_eq!(
                api().clEnqueueReadBuffer(
                    cl.queue,
                    *mem,
                    CL_TRUE,
                    0,
                    a.host.len(),
                    a.host.as_mut_ptr() as *mut c_void,
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

fn check_tile(cl: &Cl, src: &str, extras: &[Vec<ExtraArg>], t: u32, options: &str) {
    let prog = build(cl, src, &format!("-D CLAYOUT_TILE={t} {options}"));
    for ((kernel, bufs), extra) in cases().into_iter().zip(extras) {
        let mut orig = Vec::new();
        let mut asta = Vec::new();
        for (n, b) in bufs.iter().enumerate() {
            let (host, shape) = match b {
                Buf::Struct(ty) => {
                    let l = struct_layout(SOURCE, ty).unwrap();
                    (
                        data(&l, M, n as u64),
                        Some((Shape::new(M as u64, l.words, l.word_bytes), Layout::Aos)),
                    )
                }
                Buf::Flat(s, from) => {
                    let l = StructLayout::flat("float", *s).unwrap();
                    (
                        data(&l, M, n as u64),
                        Some((Shape::new(M as u64, *s, 4), *from)),
                    )
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
        let mut control: Vec<Arg> = asta
            .iter()
            .map(|a| Arg {
                host: a.host.clone(),
                shape: a.shape,
            })
            .collect();
        run(cl, prog, kernel, &mut orig, &[]);
        run(
            cl,
            prog,
            &format!("{kernel}__clayout_asta"),
            &mut asta,
            extra,
        );
        assert!(
            orig.iter().zip(&before).any(|(a, b)| a.host != *b),
            "{kernel} changed nothing"
        );
        let differs = orig.iter().any(|a| {
            a.shape
                .is_some_and(|(sh, from)| !from.same_as(Layout::Asta { t }, sh))
        });
        if differs {
            run(cl, prog, kernel, &mut control, &[]);
            for c in control.iter_mut() {
                if let Some((sh, from)) = c.shape {
                    permute_host(&mut c.host, sh, Layout::Asta { t }, from);
                }
            }
            assert!(
                control.iter().zip(&orig).any(|(c, o)| c.host != o.host),
                "{kernel}: the control agrees too"
            );
        }
        for (n, (o, a)) in orig.iter().zip(asta.iter_mut()).enumerate() {
            if let Some((sh, from)) = o.shape {
                permute_host(&mut a.host, sh, Layout::Asta { t }, from);
            }
            if o.host != a.host {
                let w = o.shape.map_or(4, |(s, _)| s.w as usize);
                let first = (0..o.host.len() / w)
                    .find(|&k| o.host[k * w..k * w + w] != a.host[k * w..k * w + w])
                    .unwrap();
                panic!("{kernel} (T={t}) buffer {n}: word {first} differs: original {:?}, rewritten {:?}", &o.host[first * w..first * w + w], &a.host[first * w..first * w + w]);
            }
        }
    }
    unsafe {
        api().clReleaseProgram(prog);
    }
}

#[test]
fn rewritten_kernels_agree_with_the_originals_on_pocl() {
    let (src, extras) = rewritten_program();
    if let Ok(path) = std::env::var("CLAYOUT_REWRITE_DUMP") {
        std::fs::write(path, &src).unwrap();
    }
    let Some(cl) = cl() else {
        eprintln!("no OpenCL platform: skipped");
        return;
    };
    // M = 100: with T = 32 three full tiles and a tail of 4; with T = 128 only the tail.
    for t in [32, 128] {
        check_tile(&cl, &src, &extras, t, "");
    }
    // The 32-bit index arithmetic the runtime selects for buffers of fewer than 2^32 words.
    check_tile(&cl, &src, &extras, 32, "-D CLAYOUT_INDEX32");
}
