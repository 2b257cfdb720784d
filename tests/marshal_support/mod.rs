//! Shared OpenCL set-up for the marshaling tests: one context and queue per process on the
//! PoCL device (or the platform named by CLAYOUT_TEST_PLATFORM), through clayout's own
//! resolution of the real library (never through linked OpenCL symbols).
#![allow(dead_code)]

use clayout::cl::{cmd, info, Context, Mem, Queue};
use clayout::layout::{permute_host, Layout, Shape};
use clayout::marshal::{enqueue_conversion, Converted};
use once_cell::sync::OnceCell;
use opencl_sys::*;

pub struct Cl {
    pub ctx: Context,
    pub queue: Queue,
    pub dev: cl_device_id,
}
// SAFETY: the context and queue are thread-safe handles (cl::Context, cl::Queue); a device id
// is a plain handle that OpenCL lets any thread use.
unsafe impl Send for Cl {}
unsafe impl Sync for Cl {}

static CL: OnceCell<Option<Cl>> = OnceCell::new();

/// The test context, or None (test skipped) when no OpenCL platform exists.
pub fn cl() -> Option<&'static Cl> {
    CL.get_or_init(|| {
        let platforms = info::platforms();
        let want = std::env::var("CLAYOUT_TEST_PLATFORM").unwrap_or_else(|_| "Portable".into());
        let name = |&p: &cl_platform_id| info::platform_string(p, CL_PLATFORM_NAME);
        let p = platforms.iter().find(|p| name(p).contains(&want)).or(platforms.first()).copied()?;
        let dev = *info::devices(p, CL_DEVICE_TYPE_ALL).first()?;
        let ctx = cmd::create_context(&[dev]).expect("clCreateContext");
        let queue = cmd::create_queue(ctx.raw(), dev, 0).expect("clCreateCommandQueue");
        eprintln!("marshal tests on platform `{}`", name(&p));
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
    pub mem: Mem,
    pub size: usize,
}

pub fn upload(cl: &Cl, bytes: &[u8], offset: usize) -> DevBuf {
    let size = (bytes.len() + offset + 64).max(64);
    let mem = cmd::create_buffer(cl.ctx.raw(), CL_MEM_READ_WRITE, size).expect("clCreateBuffer");
    // Guard bytes around the data catch out-of-range writes.
    cmd::write(cl.queue.raw(), mem.raw(), 0, &vec![0xA5u8; size], &[]).expect("writing the guards");
    if !bytes.is_empty() {
        cmd::write(cl.queue.raw(), mem.raw(), offset, bytes, &[]).expect("writing the data");
    }
    DevBuf { mem, size }
}

/// The whole buffer (guards included).
pub fn download(cl: &Cl, b: &DevBuf) -> Vec<u8> {
    let mut v = vec![0u8; b.size];
    cmd::read(cl.queue.raw(), b.mem.raw(), 0, &mut v, &[]).expect("reading the buffer");
    v
}

/// Converts on the device and waits; panics with context on an error.
pub fn convert(cl: &Cl, b: &DevBuf, offset: usize, shape: Shape, from: Layout, to: Layout) -> Converted {
    let c = enqueue_conversion(cl.queue.raw(), b.mem.raw(), offset as u64, shape, from, to, &[])
        .unwrap_or_else(|e| panic!("{shape:?} {from:?} -> {to:?}: {e}"));
    cmd::wait(&[c.done().raw()]).expect("clWaitForEvents");
    let st = info::event_status(c.done().raw());
    assert_eq!(st, Some(CL_COMPLETE as cl_int), "{shape:?} {from:?} -> {to:?}: event status {st:?}");
    c
}

/// Checks the device bytes against the expected data at `offset`, and the guards around.
pub fn check(cl: &Cl, b: &DevBuf, offset: usize, expect: &[u8], what: &str) {
    let got = download(cl, b);
    assert!(got[..offset].iter().all(|&x| x == 0xA5), "{what}: guard before the data overwritten");
    assert!(got[offset + expect.len()..].iter().all(|&x| x == 0xA5), "{what}: guard after the data overwritten");
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
    check(cl, &b, offset, &want, &format!("{shape:?} {from:?} -> {to:?} (offset {offset})"));
}
