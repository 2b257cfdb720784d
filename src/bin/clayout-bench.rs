//! clayout-bench: throughput of the in-place layout conversions (clayout::marshal) next to
//! clEnqueueCopyBuffer of the same bytes and an out-of-place tiled transpose, per direction.
//!
//! Usage: clayout-bench [--platform NAME] [--quick] [--json FILE] [--sweep [--variants A,B]]
//!                      [--mib N] [--tile T] [--s S]
//!   --platform NAME  first platform whose name contains NAME (default: the first one)
//!   --quick          small buffers and fewer shapes (PoCL-friendly, < 2 minutes)
//!   --json FILE      also write the records as a JSON list
//!   --sweep          also time tuning variants of the kernels (clayout::marshal::Tuning), at
//!                    T = 32, w = 4 and 8, on the largest size up to 256 MiB (or --mib)
//!   --variants A,B   only these sweep variants (names as printed in the variant column)
//!   --mib, --tile, --s  only this buffer size, tile, structure size
//!
//! GB/s count bytes read plus bytes written: 2 x buffer bytes per conversion, copy or
//! transpose. Times are device times from event profiling (median of several runs after a
//! warm-up). M is rounded down to a multiple of T for the timed runs (the partial tile is
//! exact but not tuned; the tests cover it). Every timed conversion is verified once: the
//! warm-up cycle AoS -> ASTA -> SoA -> ASTA -> AoS is read back after each step and sampled
//! words compared with the layout formulas; a mismatch prints FAIL.

use clayout::cl::{self, build, cmd, info, Context, Event, Kernel, Mem, Queue};
use clayout::layout::{Layout, Shape};
use clayout::marshal::{describe, enqueue_conversion, set_tuning, P100Kernel, Tuning};
use opencl_sys::*;
use serde::Serialize;
use std::time::Instant;

#[derive(Serialize, Clone)]
struct Record {
    direction: String,
    #[serde(rename = "S")]
    s: u32,
    #[serde(rename = "T")]
    t: u32,
    w: u32,
    #[serde(rename = "M")]
    m: u64,
    bytes: u64,
    gbps: f64,
    copy_gbps: f64,
    oop_gbps: f64,
    ratio_copy: f64,
    ms: f64,
    device: String,
    variant: String,
    kernels: String,
    ok: bool,
}

const OOP_SRC: &str = r#"
// Classic tiled local-memory transpose (32 x 32 tiles, 32 x 8 work-items, padded local
// array), batched: each T x S tile of the AoS input becomes S x T in the output buffer
// (the AoS -> ASTA permutation, out of place).
__kernel __attribute__((reqd_work_group_size(32, 8, 1)))
void oop_transpose(__global const WORD* in, __global WORD* out, uint R, uint C)
{
    __local WORD tile[32][33];
    const ulong base = (ulong)get_group_id(2) * R * C;
    const uint x = get_group_id(0) * 32 + get_local_id(0);
    const uint y = get_group_id(1) * 32 + get_local_id(1);
    for (uint j = 0; j < 32; j += 8)
        if (x < C && y + j < R) tile[get_local_id(1) + j][get_local_id(0)] = in[base + (ulong)(y + j) * C + x];
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint x2 = get_group_id(1) * 32 + get_local_id(0);
    const uint y2 = get_group_id(0) * 32 + get_local_id(1);
    for (uint j = 0; j < 32; j += 8)
        if (x2 < R && y2 + j < C) out[base + (ulong)(y2 + j) * R + x2] = tile[get_local_id(0)][get_local_id(1) + j];
}

__kernel void nop(__global WORD* p) { }
"#;

struct Ctx {
    ctx: Context,
    q: Queue,
    dev: cl_device_id,
    name: String,
}

/// The value of a call that must succeed; else the benchmark stops.
fn check<T>(r: cl::Result<T>, what: &str) -> T {
    r.unwrap_or_else(|e| {
        eprintln!("error in {what}: {e}");
        std::process::exit(2)
    })
}

fn platform_name(p: cl_platform_id) -> String {
    info::platform_string(p, CL_PLATFORM_NAME)
}

fn setup(platform: Option<&str>) -> Ctx {
    let ps = info::platforms();
    let p = match platform {
        Some(name) => *ps.iter().find(|&&p| platform_name(p).contains(name)).unwrap_or_else(|| {
            eprintln!(
                "no platform named like `{name}`; have: {:?}",
                ps.iter().map(|&p| platform_name(p)).collect::<Vec<_>>()
            );
            std::process::exit(2)
        }),
        None => *ps.first().unwrap_or_else(|| {
            eprintln!("no OpenCL platform");
            std::process::exit(2)
        }),
    };
    let Some(&dev) = info::devices(p, CL_DEVICE_TYPE_ALL).first() else {
        eprintln!("no device on platform `{}`", platform_name(p));
        std::process::exit(2)
    };
    let ctx = check(cmd::create_context(&[dev]), "clCreateContext");
    let q = check(cmd::create_queue(ctx.raw(), dev, CL_QUEUE_PROFILING_ENABLE), "clCreateCommandQueue");
    let name = format!("{} ({})", info::device_string(dev, CL_DEVICE_NAME), platform_name(p));
    Ctx { ctx, q, dev, name }
}

/// A command's device start or end time, when the profiling gives one.
fn prof(ev: &Event, end: bool) -> Option<u64> {
    let (start, stop) = info::event_times(ev.raw())?;
    Some(if end { stop } else { start }).filter(|&t| t != 0)
}

/// Times `f` (which enqueues after the given wait list and returns its last event): a user
/// event gates an empty kernel, `f` waits on it, then the gate opens, so the commands run
/// back to back; time = end of the last event - end of the empty kernel (falls back to
/// wall time). Kernel timestamps are used because marker timestamps are not reliable on
/// every implementation.
fn timed(c: &Ctx, nop: &Kernel, f: &mut dyn FnMut(&[cl_event]) -> Option<Event>) -> Option<f64> {
    let _ = cmd::finish(c.q.raw());
    let gate = check(cmd::user_event(c.ctx.raw()), "clCreateUserEvent");
    let mk = check(cmd::nd_range(c.q.raw(), nop.raw(), &[1], Some(&[1]), &[gate.raw()]), "nop");
    let ev = f(&[mk.raw()]);
    let t0 = Instant::now();
    check(cmd::set_user_event_status(gate.raw(), CL_COMPLETE as cl_int), "clSetUserEventStatus");
    let ev = ev?;
    check(cmd::wait(&[ev.raw()]), "clWaitForEvents");
    let wall = t0.elapsed().as_secs_f64();
    Some(match (prof(&mk, true), prof(&ev, true)) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 * 1e-9,
        _ => wall,
    })
}

/// Single command: its own START..END.
fn timed_single(c: &Ctx, f: &mut dyn FnMut() -> Event) -> f64 {
    let _ = cmd::finish(c.q.raw());
    let t0 = Instant::now();
    let ev = f();
    check(cmd::wait(&[ev.raw()]), "clWaitForEvents");
    let wall = t0.elapsed().as_secs_f64();
    match (prof(&ev, false), prof(&ev, true)) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 * 1e-9,
        _ => wall,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if v.is_empty() {
        return f64::NAN;
    }
    v[v.len() / 2]
}

/// The out-of-place transpose and the empty kernel, for words of `w` bytes.
fn build_oop(c: &Ctx, w: u32) -> (Kernel, Kernel) {
    let opts = if w == 8 { "-DWORD=ulong" } else { "-DWORD=uint" };
    let prog = build::from_source(c.ctx.raw(), &[c.dev], OOP_SRC.as_bytes(), opts).unwrap_or_else(|e| {
        eprintln!("error in oop build: {e}");
        std::process::exit(2)
    });
    let k = check(cmd::create_kernel(prog.raw(), "oop_transpose"), "oop kernel");
    let nop = check(cmd::create_kernel(prog.raw(), "nop"), "nop kernel");
    (k, nop)
}

fn word_at(buf: &[u8], k: usize, w: usize) -> u64 {
    let mut b = [0u8; 8];
    b[..w].copy_from_slice(&buf[k * w..k * w + w]);
    u64::from_le_bytes(b)
}

/// Checks sampled words of `buf` (which should be layout `l` of data whose word (i, s) holds
/// its AoS index i*S+s, truncated to w bytes).
fn verify(buf: &[u8], shape: Shape, l: Layout) -> bool {
    let verbose = std::env::var("BENCH_VERBOSE").is_ok();
    let n = shape.words();
    let step = (n / (1 << 22)).max(1);
    let (ns, w) = (shape.s as u64, shape.w as usize);
    let mask = if w == 4 { 0xffff_ffffu64 } else { u64::MAX };
    let mut k = 0u64;
    let mut x = 12345u64;
    while k < n {
        let i = k / ns;
        let s = k % ns;
        let at = l.index(shape, i, s) as usize;
        if word_at(buf, at, w) != (k & mask) {
            if verbose {
                let mut bad = 0u64;
                let mut first = None;
                for kk in 0..n {
                    let a2 = l.index(shape, kk / ns, kk % ns) as usize;
                    if word_at(buf, a2, w) != (kk & mask) {
                        bad += 1;
                        if first.is_none() {
                            first = Some((kk, a2, word_at(buf, a2, w)));
                        }
                    }
                }
                eprintln!("  {bad} of {n} words wrong; first: word {:?} (aos index, position, found)", first);
            }
            return false;
        }
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        k += 1 + if step > 1 { (x >> 33) % (2 * step) } else { 0 };
    }
    true
}

struct Bufs {
    a: Mem,
    b: Mem,
    size: usize,
}

#[allow(clippy::too_many_arguments)]
fn bench_shape(
    c: &Ctx,
    bufs: &Bufs,
    (oop, nop): &(Kernel, Kernel),
    bytes_target: u64,
    s: u32,
    t: u32,
    w: u32,
    reps: usize,
    variant: &str,
    out: &mut Vec<Record>,
) {
    let per = s as u64 * w as u64;
    let m = bytes_target / per / t as u64 * t as u64;
    if m == 0 {
        return;
    }
    let shape = Shape::new(m, s, w);
    let bytes = shape.bytes();
    assert!(bytes as usize <= bufs.size);
    // Initial AoS data: word k holds k.
    let mut host = vec![0u8; bytes as usize];
    if w == 4 {
        for (k, ch) in host.chunks_exact_mut(4).enumerate() {
            ch.copy_from_slice(&(k as u32).to_le_bytes());
        }
    } else {
        for (k, ch) in host.chunks_exact_mut(8).enumerate() {
            ch.copy_from_slice(&(k as u64).to_le_bytes());
        }
    }
    check(cmd::write(c.q.raw(), bufs.a.raw(), 0, &host, &[]), "write");
    let asta = Layout::Asta { t };
    let cycle = [
        ("aos_to_asta", Layout::Aos, asta),
        ("asta_to_soa", asta, Layout::Soa),
        ("soa_to_asta", Layout::Soa, asta),
        ("asta_to_aos", asta, Layout::Aos),
    ];
    // Warm-up + verification.
    let mut ok = [true; 4];
    let verbose = std::env::var("BENCH_VERBOSE").is_ok();
    for (d, &(name, from, to)) in cycle.iter().enumerate() {
        match enqueue_conversion(c.q.raw(), bufs.a.raw(), 0, shape, from, to, &[]) {
            Ok(cv) => check(cmd::wait(&[cv.done().raw()]), name),
            Err(e) => {
                println!("FAIL {name} S={s} T={t} w={w}: {e}");
                return;
            }
        }
        check(cmd::read(c.q.raw(), bufs.a.raw(), 0, &mut host, &[]), "read");
        ok[d] = verify(&host, shape, to);
        if verbose {
            eprintln!("warm-up {name}: {}", if ok[d] { "ok" } else { "WRONG" });
        }
    }
    // Timed cycles.
    let mut times: Vec<Vec<f64>> = vec![vec![]; 4];
    for _ in 0..reps {
        for (d, &(_, from, to)) in cycle.iter().enumerate() {
            let r =
                timed(
                    c,
                    nop,
                    &mut |wait| match enqueue_conversion(c.q.raw(), bufs.a.raw(), 0, shape, from, to, wait) {
                        Ok(cv) => cv.events.into_iter().last(),
                        Err(e) => {
                            eprintln!("FAIL enqueue: {e}");
                            None
                        }
                    },
                );
            if let Some(r) = r {
                times[d].push(r);
            }
        }
    }
    // After the timed cycles the data must be AoS again.
    check(cmd::read(c.q.raw(), bufs.a.raw(), 0, &mut host, &[]), "read");
    let final_ok = verify(&host, shape, Layout::Aos);
    if verbose {
        eprintln!("after the timed cycles: {}", if final_ok { "ok" } else { "WRONG" });
    }
    // Copy of the same bytes, and the out-of-place transpose (same permutation as AoS->ASTA).
    let mut ct = vec![];
    let mut ot = vec![];
    for r in 0..reps + 1 {
        let tc = timed_single(c, &mut || {
            check(cmd::copy(c.q.raw(), bufs.a.raw(), bufs.b.raw(), 0, 0, bytes as usize, &[]), "copy")
        });
        let to = timed_single(c, &mut || {
            let (rr, cc) = (t, s);
            let args =
                [cmd::Arg::Mem(bufs.a.raw()), cmd::Arg::Mem(bufs.b.raw()), cmd::Arg::u32(&rr), cmd::Arg::u32(&cc)];
            for (i, a) in args.into_iter().enumerate() {
                check(cmd::set_arg(oop.raw(), i as u32, a), "oop arg");
            }
            let gs = [(cc as usize).div_ceil(32) * 32, (rr as usize).div_ceil(32) * 8, (m / t as u64) as usize];
            check(cmd::nd_range(c.q.raw(), oop.raw(), &gs, Some(&[32, 8, 1]), &[]), "oop")
        });
        if r > 0 {
            ct.push(tc);
            ot.push(to);
        }
    }
    let gb = |sec: f64| 2.0 * bytes as f64 / sec / 1e9;
    let copy_gbps = gb(median(ct));
    let oop_gbps = gb(median(ot));
    for (d, &(name, from, to)) in cycle.iter().enumerate() {
        let sec = median(times[d].clone());
        let gbps = gb(sec);
        let good = ok[d] && final_ok;
        let rec = Record {
            direction: name.to_string(),
            s,
            t,
            w,
            m,
            bytes,
            gbps,
            copy_gbps,
            oop_gbps,
            ratio_copy: gbps / copy_gbps,
            ms: sec * 1e3,
            device: c.name.clone(),
            variant: variant.to_string(),
            kernels: describe(c.dev, shape, from, to, 0),
            ok: good,
        };
        println!(
            "{:<12} {:>5} {:>3} {:>3} {:>2} {:>11} {:>9.1} {:>9.1} {:>6.1}% {:>9.1} {:>8.3} {:<4} {:<12} {}",
            name,
            bytes >> 20,
            s,
            t,
            w,
            m,
            gbps,
            copy_gbps,
            100.0 * gbps / copy_gbps,
            oop_gbps,
            sec * 1e3,
            if good { "ok" } else { "FAIL" },
            variant,
            rec.kernels
        );
        out.push(rec);
    }
}

fn main() {
    let mut platform = None;
    let mut quick = false;
    let mut sweep = false;
    let mut json = None;
    let mut only_mib: Option<u64> = None;
    let mut only_t: Option<u32> = None;
    let mut only_s: Option<u32> = None;
    let mut only_variants: Option<Vec<String>> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--platform" => platform = args.next(),
            "--quick" => quick = true,
            "--sweep" => sweep = true,
            "--json" => json = args.next(),
            "--mib" => only_mib = args.next().and_then(|v| v.parse().ok()),
            "--tile" => only_t = args.next().and_then(|v| v.parse().ok()),
            "--s" => only_s = args.next().and_then(|v| v.parse().ok()),
            "--variants" => only_variants = args.next().map(|v| v.split(',').map(str::to_string).collect()),
            "-h" | "--help" => {
                println!("clayout-bench [--platform NAME] [--quick] [--json FILE] [--sweep [--variants A,B]] [--mib N] [--tile T] [--s S]");
                return;
            }
            _ => {
                eprintln!("unknown argument {a}");
                std::process::exit(2);
            }
        }
    }
    let c = setup(platform.as_deref());
    let max_alloc: u64 = info::device_scalar(c.dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    let global: u64 = info::device_scalar(c.dev, CL_DEVICE_GLOBAL_MEM_SIZE);
    let mib = 1u64 << 20;
    let mut sizes: Vec<u64> = if quick { vec![16 * mib] } else { vec![64 * mib, 256 * mib, 1024 * mib] };
    if let Some(x) = only_mib {
        sizes = vec![x * mib];
    }
    sizes.retain(|&b| b <= max_alloc && 3 * b <= global);
    if sizes.is_empty() {
        sizes.push((max_alloc.min(global / 3) / mib).max(1) * mib);
    }
    let mut ss: Vec<u32> = if quick { vec![2, 5, 8, 32] } else { vec![2, 4, 5, 8, 19, 32] };
    let mut ts: Vec<u32> = if quick { vec![32] } else { vec![16, 32, 64] };
    if let Some(x) = only_s {
        ss = vec![x];
    }
    if let Some(x) = only_t {
        ts = vec![x];
    }
    let reps = if quick { 3 } else { 5 };
    let maxb = *sizes.iter().max().unwrap() as usize;
    let a = check(cmd::create_buffer(c.ctx.raw(), CL_MEM_READ_WRITE, maxb), "buffer a");
    let b = check(cmd::create_buffer(c.ctx.raw(), CL_MEM_READ_WRITE, maxb), "buffer b");
    let bufs = Bufs { a, b, size: maxb };
    let oop4 = build_oop(&c, 4);
    let oop8 = build_oop(&c, 8);
    for (_, nop) in [&oop4, &oop8] {
        check(cmd::set_arg(nop.raw(), 0, cmd::Arg::Mem(bufs.a.raw())), "nop arg");
    }
    println!("# device: {}", c.name);
    println!("# GB/s = (bytes read + bytes written) / device time = 2 x buffer bytes / time; median of {reps} after a warm-up");
    println!("# M rounded down to a multiple of T for the timed runs; copy = clEnqueueCopyBuffer, oop = out-of-place tiled transpose (32x32, local memory) of the same permutation as aos_to_asta");
    println!(
        "{:<12} {:>5} {:>3} {:>3} {:>2} {:>11} {:>9} {:>9} {:>7} {:>9} {:>8} {:<4} {:<12} kernels",
        "direction", "MiB", "S", "T", "w", "M", "GB/s", "copyGB/s", "ratio", "oopGB/s", "ms", "chk", "variant"
    );
    let t0 = Instant::now();
    let mut recs = vec![];
    if sweep {
        // Tuning variants at T = 32, one size, w = 4.
        let size = *sizes.iter().filter(|&&b| b <= 256 * mib).max().unwrap_or(&sizes[0]);
        let base = Tuning::default();
        let bs = |bytes: u64, l: u32| Tuning { bs_bytes: bytes, bs_l: l, ..base };
        let p100 = |k: P100Kernel, l: u32| Tuning { p100: k, p100_l: l, ..base };
        let wp = |per_cu: u32, l: u32| Tuning { p100: P100Kernel::Persistent, p100_per_cu: per_cu, p100_l: l, ..base };
        let variants: &[(&str, Tuning)] = &[
            ("bs8k_l256", bs(8192, 256)),
            ("bs16k_l256", bs(16384, 256)),
            ("bs32k_l256", bs(32768, 256)),
            ("bs16k_l128", bs(16384, 128)),
            ("bs8k_l128", bs(8192, 128)),
            ("bs4k_l128", bs(4096, 128)),
            ("wi64", p100(P100Kernel::WorkItem, 64)),
            ("wi256", p100(P100Kernel::WorkItem, 256)),
            ("wg", p100(P100Kernel::WorkGroup, base.p100_l)),
            ("wiv", p100(P100Kernel::WorkItemVolatile, base.p100_l)),
            ("wp512", wp(512, 128)),
            ("wp1k", wp(1024, 128)),
            ("wp2k", wp(2048, 128)),
            ("wp4k", wp(4096, 128)),
            ("wp2k_l256", wp(2048, 256)),
        ];
        let sweep_s: Vec<u32> = match only_s {
            Some(x) => vec![x],
            None => vec![2, 4, 5, 8, 19, 32],
        };
        for (vname, tuning) in variants {
            if only_variants.as_ref().is_some_and(|v| !v.iter().any(|n| n == vname)) {
                continue;
            }
            set_tuning(*tuning);
            for (w, oop) in [(4u32, &oop4), (8, &oop8)] {
                for &s in &sweep_s {
                    bench_shape(&c, &bufs, oop, size, s, 32, w, 3, &format!("sweep:{vname}"), &mut recs);
                }
            }
        }
        set_tuning(base);
    }
    for &size in &sizes {
        for &t in &ts {
            for &s in &ss {
                bench_shape(&c, &bufs, &oop4, size, s, t, 4, reps, "default", &mut recs);
            }
        }
    }
    // 8-byte words at T = 32 on the largest buffer.
    let size = *sizes.iter().max().unwrap();
    for &s in &ss {
        bench_shape(&c, &bufs, &oop8, size, s, 32, 8, reps, "default", &mut recs);
    }
    let fails = recs.iter().filter(|r| !r.ok).count();
    println!("# {} records, {} FAIL, {:.1} s", recs.len(), fails, t0.elapsed().as_secs_f64());
    if let Some(path) = json {
        std::fs::write(&path, serde_json::to_string_pretty(&recs).unwrap()).expect("writing the JSON file");
    }
    if fails > 0 {
        std::process::exit(1);
    }
}
