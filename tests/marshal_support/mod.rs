//! Shared OpenCL set-up for the marshaling tests: one context and queue per process on the
//! PoCL device (or the platform named by CLAYOUT_TEST_PLATFORM), through clayout's own
//! resolution of the real library (never through linked OpenCL symbols).
#![allow(dead_code)]

use clayout::cl::api;
use clayout::layout::{permute_host, Layout, Shape};
use clayout::marshal::{enqueue_conversion, Converted};
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
        api().clGetPlatformInfo(p, CL_PLATFORM_NAME, n, b.as_mut_ptr() as *mut c_void, ptr::null_mut());
        String::from_utf8_lossy(&b).trim_end_matches('\0').to_string()
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
        let p = ps.iter().copied().find(|&p| info_string(p).contains(&want)).unwrap_or(ps[0]);
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
pub fn convert(cl: &Cl, b: &DevBuf, offset: usize, shape: Shape, from: Layout, to: Layout) -> Converted {
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
        assert_eq!(st, CL_COMPLETE as cl_int, "{shape:?} {from:?} -> {to:?}: event status {st}");
        api().clReleaseEvent(c.event);
    }
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
