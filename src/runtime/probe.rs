//! clayout's own small programs on the application's context: building a source with given
//! options, and running a one-work-item probe kernel that writes `ulong`s (sizes and offsets as
//! the device compiler sees them).

use crate::owned::{OwnedKernel, OwnedMem, OwnedQueue};
use crate::real::api;
use libc::c_void;
use opencl_sys::*;
use std::ffi::CString;

/// A program clayout created (one reference), released when dropped.
#[derive(Debug)]
pub struct OwnedProgram(pub cl_program);

// Program handles may be used and released from any thread (OpenCL objects are thread-safe,
// except kernels being given arguments, which clayout serializes itself).
unsafe impl Send for OwnedProgram {}
unsafe impl Sync for OwnedProgram {}

impl Drop for OwnedProgram {
    fn drop(&mut self) {
        unsafe { api().clReleaseProgram(self.0) };
    }
}

/// Builds `source` for every device of `ctx`. On failure, the reason with the first line of the
/// first device's build log that says something.
pub fn build(
    ctx: cl_context,
    device: cl_device_id,
    source: &str,
    options: &str,
    fault_site: &str,
) -> Result<OwnedProgram, String> {
    if crate::fault::inject(fault_site) {
        return Err("injected build failure".into());
    }
    let csrc = CString::new(source).map_err(|_| "the source holds a NUL byte")?;
    let copts = CString::new(options).map_err(|_| "the options hold a NUL byte")?;
    let mut err = CL_SUCCESS;
    let ptr = csrc.as_ptr();
    let p = unsafe { api().clCreateProgramWithSource(ctx, 1, &ptr as *const _ as *mut _, std::ptr::null(), &mut err) };
    if p.is_null() {
        return Err(format!("program not created ({err})"));
    }
    let program = OwnedProgram(p);
    let r = unsafe { api().clBuildProgram(p, 0, std::ptr::null(), copts.as_ptr(), None, std::ptr::null_mut()) };
    if r != CL_SUCCESS {
        let log = build_log(p, device);
        crate::log::debug(&format!("build log of clayout's program:\n{log}"));
        let first = log
            .lines()
            .map(str::trim)
            .find(|l| l.contains("error"))
            .or_else(|| log.lines().map(str::trim).find(|l| !l.is_empty()));
        return Err(match first {
            Some(l) => format!("build failed ({r}): {l}"),
            None => format!("build failed ({r})"),
        });
    }
    Ok(program)
}

fn build_log(p: cl_program, device: cl_device_id) -> String {
    let mut size: usize = 0;
    unsafe {
        if api().clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_LOG, 0, std::ptr::null_mut(), &mut size)
            != CL_SUCCESS
            || size == 0
        {
            return String::new();
        }
        let mut buf = vec![0u8; size];
        if api().clGetProgramBuildInfo(
            p,
            device,
            CL_PROGRAM_BUILD_LOG,
            size,
            buf.as_mut_ptr() as *mut c_void,
            std::ptr::null_mut(),
        ) != CL_SUCCESS
        {
            return String::new();
        }
        String::from_utf8_lossy(&buf).trim_end_matches('\0').to_string()
    }
}

/// Runs kernel `name(__global ulong *out)` of `program` once on `device` and returns `count`
/// values of `out`. Blocks until done, on a queue of its own.
pub fn run(
    ctx: cl_context,
    device: cl_device_id,
    program: cl_program,
    name: &str,
    count: usize,
) -> Result<Vec<u64>, String> {
    if crate::fault::inject("probe") {
        return Err("injected failure of the probe".into());
    }
    let cname = CString::new(name).map_err(|_| "bad probe name")?;
    let bytes = 8 * count.max(1);
    let mut err = CL_SUCCESS;
    unsafe {
        let k = OwnedKernel(api().clCreateKernel(program, cname.as_ptr(), &mut err));
        if k.0.is_null() {
            return Err(format!("probe kernel not created ({err})"));
        }
        let buf = OwnedMem(api().clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, bytes, std::ptr::null_mut(), &mut err));
        if buf.0.is_null() {
            return Err(format!("probe buffer not created ({err})"));
        }
        let q = OwnedQueue(api().clCreateCommandQueue(ctx, device, 0, &mut err));
        if q.0.is_null() {
            return Err(format!("probe queue not created ({err})"));
        }
        api().clSetKernelArg(k.0, 0, std::mem::size_of::<cl_mem>(), &buf.0 as *const cl_mem as *const c_void);
        let one: usize = 1;
        let r = api().clEnqueueNDRangeKernel(
            q.0,
            k.0,
            1,
            std::ptr::null(),
            &one,
            &one,
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
        );
        if r != CL_SUCCESS {
            return Err(format!("probe kernel did not run ({r})"));
        }
        let mut out = vec![0u64; count.max(1)];
        let r = api().clEnqueueReadBuffer(
            q.0,
            buf.0,
            CL_TRUE,
            0,
            bytes,
            out.as_mut_ptr() as *mut c_void,
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
        );
        if r != CL_SUCCESS {
            return Err(format!("probe result not read ({r})"));
        }
        out.truncate(count);
        Ok(out)
    }
}
