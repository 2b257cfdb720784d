//! Shared OpenCL set-up for the marshaling tests: one context and queue per process on the
//! PoCL device (or the platform named by CLAYOUT_TEST_PLATFORM), through clayout's own
//! resolution of the real library (never through linked OpenCL symbols).
#![allow(dead_code)]

use clayout::layout::{permute_host, Layout, Shape};
use clayout::marshal::{enqueue_conversion, Converted};
use clayout::real::api;
use once_cell::sync::OnceCell;
use opencl_sys::*;
use std::ffi::c_void;
use std::ptr;

pub struct Cl {
    pub ctx: cl_context,
    pub queue: cl_command_queue,
    pub dev: cl_device_id,
}
unsafe impl Send for Cl {}
unsafe impl Sync for Cl {}

static CL: OnceCell<Option<Cl>> = OnceCell::new();

fn info_string(p: cl_platform_id) -> String {
    unsafe {
        let mut n = 0usize;
        api().clGetPlatformInfo(p, CL_PLATFORM_NAME, 0, ptr::null_mut(), &mut n);
        let mut b = vec![0u8; n.max(1)];
        api().clGetPlatformInfo(
            p,
            CL_PLATFORM_NAME,
            n,
            b.as_mut_ptr() as *mut c_void,
            ptr::null_mut(),
        );
        String::from_utf8_lossy(&b)
            .trim_end_matches('\0')
            .to_string()
    }
}

/// The test context, or None (test skipped) when no OpenCL platform exists.
pub fn cl() -> Option<&'static Cl> {
    CL.get_or_init(|| unsafe {
        let mut n: cl_uint = 0;
        if api().clGetPlatformIDs(0, ptr::null_mut(), &mut n) != CL_SUCCESS || n == 0 {
            return None;
        }
        let mut ps = vec![ptr::null_mut(); n as usize];
        api().clGetPlatformIDs(n, ps.as_mut_ptr(), ptr::null_mut());
        let want = std::env::var("CLAYOUT_TEST_PLATFORM").unwrap_or_else(|_| "Portable".into());
        let p = ps
            .iter()
            .copied()
            .find(|&p| info_string(p).contains(&want))
            .unwrap_or(ps[0]);
        let mut dev: cl_device_id = ptr::null_mut();
        if api().clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &mut dev, ptr::null_mut()) != CL_SUCCESS {
            return None;
        }
        let mut err = 0;
        let ctx = api().clCreateContext(ptr::null(), 1, &dev, None, ptr::null_mut(), &mut err);
        assert_eq!(err, CL_SUCCESS, "clCreateContext");
        let queue = api().clCreateCommandQueue(ctx, dev, 0, &mut err);
        assert_eq!(err, CL_SUCCESS, "clCreateCommandQueue");
        eprintln!("marshal tests on platform `{}`", info_string(p));
        Some(Cl { ctx, queue, dev })
    })
    .as_ref()
}

pub fn word_value(k: u64, w: u32) -> u64 {
    if w == 4 {
        k & 0xffff_ffff
    } else {
        ((!k) << 40) | k
    }
}

/// Bytes of `shape` in layout `l` where the word of (i, s) holds word_value(i*S + s).
pub fn filled(shape: Shape, l: Layout) -> Vec<u8> {
    let w = shape.w as usize;
    let mut v = vec![0u8; shape.bytes() as usize];
    for i in 0..shape.m {
        for s in 0..shape.s as u64 {
            let k = l.index(shape, i, s) as usize;
            let val = word_value(i * shape.s as u64 + s, shape.w);
            v[k * w..k * w + w].copy_from_slice(&val.to_le_bytes()[..w]);
        }
    }
    v
}

pub struct DevBuf {
    pub mem: cl_mem,
    pub size: usize,
}
impl Drop for DevBuf {
    fn drop(&mut self) {
        unsafe {
            api().clReleaseMemObject(self.mem);
        }
    }
}

pub fn upload(cl: &Cl, bytes: &[u8], offset: usize) -> DevBuf {
    unsafe {
        let size = (bytes.len() + offset + 64).max(64);
        let mut err = 0;
        let mem = api().clCreateBuffer(cl.ctx, CL_MEM_READ_WRITE, size, ptr::null_mut(), &mut err);
        assert_eq!(err, CL_SUCCESS);
        // Guard bytes around the data catch out-of-range writes.
        let guard = vec![0xA5u8; size];
        let e = api().clEnqueueWriteBuffer(
            cl.queue,
            mem,
            CL_TRUE,
            0,
            size,
            guard.as_ptr() as *const c_void,
            0,
            ptr::null(),
            ptr::null_mut(),
        );
        assert_eq!(e, CL_SUCCESS);
        if !bytes.is_empty() {
            let e = api().clEnqueueWriteBuffer(
                cl.queue,
                mem,
                CL_TRUE,
                offset,
                bytes.len(),
                bytes.as_ptr() as *const c_void,
                0,
                ptr::null(),
                ptr::null_mut(),
            );
            assert_eq!(e, CL_SUCCESS);
        }
        DevBuf { mem, size }
    }
}

/// The whole buffer (guards included).
pub fn download(cl: &Cl, b: &DevBuf) -> Vec<u8> {
    let mut v = vec![0u8; b.size];
    unsafe {
        let e = api().clEnqueueReadBuffer(
            cl.queue,
            b.mem,
            CL_TRUE,
            0,
            b.size,
            v.as_mut_ptr() as *mut c_void,
            0,
            ptr::null(),
            ptr::null_mut(),
        );
        assert_eq!(e, CL_SUCCESS);
    }
    v
}

/// Converts on the device and waits; panics with context on an error.
pub fn convert(
    cl: &Cl,
    b: &DevBuf,
    offset: usize,
    shape: Shape,
    from: Layout,
    to: Layout,
) -> Converted {
    let c = enqueue_conversion(cl.queue, b.mem, offset as u64, shape, from, to, &[])
        .unwrap_or_else(|e| panic!("{shape:?} {from:?} -> {to:?}: {e}"));
    unsafe {
        assert_eq!(api().clWaitForEvents(1, &c.event), CL_SUCCESS);
        let mut st: cl_int = 0;
        api().clGetEventInfo(
            c.event,
            CL_EVENT_COMMAND_EXECUTION_STATUS,
            4,
            &mut st as *mut cl_int as *mut c_void,
            ptr::null_mut(),
        );
        assert_eq!(
            st, CL_COMPLETE as cl_int,
            "{shape:?} {from:?} -> {to:?}: event status {st}"
        );
        api().clReleaseEvent(c.event);
    }
    c
}

/// Checks the device bytes against the expected data at `offset`, and the guards around.
pub fn check(cl: &Cl, b: &DevBuf, offset: usize, expect: &[u8], what: &str) {
    let got = download(cl, b);
    assert!(
        got[..offset].iter().all(|&x| x == 0xA5),
        "{what}: guard before the data overwritten"
    );
    assert!(
        got[offset + expect.len()..].iter().all(|&x| x == 0xA5),
        "{what}: guard after the data overwritten"
    );
    let d = &got[offset..offset + expect.len()];
    if d != expect {
        let first = d.iter().zip(expect).position(|(a, b)| a != b).unwrap();
        let nbad = d.iter().zip(expect).filter(|(a, b)| a != b).count();
        panic!("{what}: {nbad} bytes differ, first at byte {first}");
    }
}

/// One conversion checked against the host reference, starting from `data` in `from`.
pub fn check_conversion(cl: &Cl, shape: Shape, from: Layout, to: Layout, offset: usize) {
    let data = filled(shape, from);
    let b = upload(cl, &data, offset);
    convert(cl, &b, offset, shape, from, to);
    let mut want = data.clone();
    permute_host(&mut want, shape, from, to);
    check(
        cl,
        &b,
        offset,
        &want,
        &format!("{shape:?} {from:?} -> {to:?} (offset {offset})"),
    );
}

// ------------------------------------------------------------------------------------------
// The grid
// ------------------------------------------------------------------------------------------

const PRIME_M: u64 = 100_003;

/// M values for a tile T: {1, 2, T-1, T, T+1, 2T+3} (deduplicated, > 0).
fn ms(t: u64) -> Vec<u64> {
    let mut v: Vec<u64> = vec![1, 2, t.saturating_sub(1), t, t + 1, 2 * t + 3];
    v.retain(|&m| m > 0);
    v.sort();
    v.dedup();
    v
}

/// The large prime M runs only for this subset of (S, T, w) to keep the suite fast on two
/// CPU cores: every T >= 16 appears, with odd, even and large S, both word sizes.
fn prime_subset(s: u32, t: u32, w: u32) -> bool {
    matches!(
        (s, t, w),
        (3, 16, 4) | (5, 32, 8) | (32, 32, 4) | (33, 64, 4) | (2, 128, 8) | (19, 32, 4)
    )
}

/// AoS -> ASTA -> SoA -> ASTA -> AoS on one buffer, every step checked against the host
/// reference, and the final step back to the identity.
fn round_trip(cl: &Cl, shape: Shape, t: u32, offset: usize) {
    let asta = Layout::Asta { t };
    let start = filled(shape, Layout::Aos);
    let b = upload(cl, &start, offset);
    let mut cur = start.clone();
    let mut from = Layout::Aos;
    for to in [asta, Layout::Soa, asta, Layout::Aos] {
        let c = convert(cl, &b, offset, shape, from, to);
        permute_host(&mut cur, shape, from, to);
        check(
            cl,
            &b,
            offset,
            &cur,
            &format!("{shape:?} T={t} {from:?} -> {to:?} (offset {offset})"),
        );
        // One done bit per T-word super-element plus at most one tile of tail words (T = 1 is
        // AoS, whose AoS <-> SoA steps go through the device tile, 32 on PoCL).
        let te = if t <= 1 { 32 } else { t as u64 };
        let bound = (shape.m / te * shape.s as u64).div_ceil(32) * 4
            + te.max(32) * shape.s as u64 * shape.w as u64;
        assert!(
            c.scratch_bytes <= bound,
            "scratch {} > {bound}",
            c.scratch_bytes
        );
        from = to;
    }
    assert_eq!(cur, start);
}

fn grid(w: u32) {
    let Some(cl) = cl() else {
        eprintln!("no OpenCL platform: marshal grid skipped");
        return;
    };
    let t0 = std::time::Instant::now();
    let mut n = 0;
    for t in [1u32, 2, 16, 32, 64, 128] {
        for s in [1u32, 2, 3, 5, 19, 32, 33] {
            let mut mlist = ms(t as u64);
            if prime_subset(s, t, w) {
                mlist.push(PRIME_M);
            }
            for m in mlist {
                round_trip(cl, Shape::new(m, s, w), t, 0);
                n += 1;
            }
        }
    }
    eprintln!("w={w}: {n} shapes x 4 directions in {:.1?}", t0.elapsed());
}

#[test]
fn grid_w4() {
    grid(4);
}

#[test]
fn grid_w8() {
    grid(8);
}

/// AoS <-> SoA (two steps through ASTA), ASTA(T1) <-> ASTA(T2), identities, and buffers
/// that start at an offset (16: vector path; 8 or 4: scalar path).
#[test]
fn other_pairs_and_offsets() {
    let Some(cl) = cl() else { return };
    for &(m, s, w) in &[
        (1u64, 3u32, 4u32),
        (31, 5, 4),
        (32, 2, 8),
        (100, 19, 4),
        (1000, 33, 8),
        (777, 4, 4),
    ] {
        let sh = Shape::new(m, s, w);
        for (from, to) in [
            (Layout::Aos, Layout::Soa),
            (Layout::Soa, Layout::Aos),
            (Layout::Asta { t: 16 }, Layout::Asta { t: 64 }),
            (Layout::Asta { t: 1 }, Layout::Aos),
            (Layout::Soa, Layout::Soa),
        ] {
            check_conversion(cl, sh, from, to, 0);
        }
        for off in [16usize, 8, 4] {
            if off % w as usize == 0 {
                round_trip(cl, sh, 32, off);
            }
        }
    }
}

/// Randomized shapes and pairs (deterministic xorshift), checked against the host reference.
#[test]
fn randomized() {
    let Some(cl) = cl() else { return };
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let tiles = [2u32, 4, 8, 16, 32, 64, 128];
    for _ in 0..24 {
        let t = tiles[next(tiles.len() as u64) as usize];
        let big = next(4) == 0;
        let m = 1 + next(if big { 20_000 } else { 600 });
        let s = 1 + next(40) as u32;
        let w = if next(2) == 0 { 4 } else { 8 };
        let ls = [Layout::Aos, Layout::Soa, Layout::Asta { t }];
        let from = ls[next(3) as usize];
        let to = ls[next(3) as usize];
        check_conversion(cl, Shape::new(m, s, w), from, to, 0);
    }
}
