//! Programs clayout builds for itself (the conversion kernels and the transparent mode's private
//! programs), kept as device binaries in the on-disk cache so that a later run skips
//! the compiler. The binary is only ever a shortcut: whatever goes wrong with it, the program is
//! built from its source as without a cache.

use crate::diskcache;
use crate::real::{api, info_string, info_vec};
use libc::{c_void, size_t};
use opencl_sys::*;
use std::ffi::CString;
use std::ptr;
use std::time::Instant;

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// `source` built with `options` for `device` of `ctx`, from the binary of record `kind` when
/// the cache has one that this driver accepts, else from source (and then cached). The caller
/// owns the one reference of the program returned.
pub fn build(
    ctx: cl_context,
    device: cl_device_id,
    source: &str,
    options: &str,
    kind: &str,
) -> Result<cl_program, String> {
    if diskcache::dir().is_none() {
        // SAFETY: handles the caller holds.
        return unsafe { from_source(ctx, device, source, options) };
    }
    // The source's hash stands for the source: a key holding several kilobytes of kernel text
    // would be written into every header.
    let key = format!(
        "{}; options {options}; source {:016x}",
        diskcache::device_key(device),
        diskcache::fnv1a(source.as_bytes())
    );
    // The times say what the cache saves on this driver (docs/cache.md).
    let start = Instant::now();
    // SAFETY: as above; the binary is only read.
    if let Some(p) = diskcache::get_with(kind, &key, |binary| unsafe { from_binary(ctx, device, binary, options) }) {
        crate::log::debug(&format!("clayout cache: {kind} program loaded as a binary in {:.1} ms", ms(start)));
        return Ok(p);
    }
    // SAFETY: as above.
    let p = unsafe { from_source(ctx, device, source, options)? };
    let built = ms(start);
    // SAFETY: a program just built for `device`.
    match unsafe { binary_of(p, device) } {
        Ok(binary) => diskcache::put(kind, &key, &binary),
        Err(why) => crate::log::debug(&format!("clayout cache: no binary of {kind} to keep ({why})")),
    }
    crate::log::debug(&format!(
        "clayout cache: {kind} program built from source in {built:.1} ms, its binary fetched and kept in {:.1} ms",
        ms(start) - built
    ));
    Ok(p)
}

unsafe fn from_source(
    ctx: cl_context,
    device: cl_device_id,
    source: &str,
    options: &str,
) -> Result<cl_program, String> {
    let csrc = CString::new(source).map_err(|e| e.to_string())?;
    let mut strings = [csrc.as_ptr()];
    let lens = [csrc.as_bytes().len()];
    let mut err: cl_int = 0;
    let prog = api().clCreateProgramWithSource(ctx, 1, strings.as_mut_ptr(), lens.as_ptr(), &mut err);
    if prog.is_null() || err != CL_SUCCESS {
        return Err(format!("clCreateProgramWithSource: {err}"));
    }
    build_for(prog, device, options).map_err(|(e, log)| format!("clBuildProgram {e} with `{options}`: {log}"))?;
    Ok(prog)
}

unsafe fn from_binary(
    ctx: cl_context,
    device: cl_device_id,
    binary: &[u8],
    options: &str,
) -> Result<cl_program, String> {
    let (len, mut bytes) = (binary.len(), binary.as_ptr());
    let (mut status, mut err): (cl_int, cl_int) = (CL_SUCCESS, CL_SUCCESS);
    let prog = api().clCreateProgramWithBinary(ctx, 1, &device, &len, &mut bytes, &mut status, &mut err);
    if prog.is_null() || err != CL_SUCCESS || status != CL_SUCCESS {
        if !prog.is_null() {
            api().clReleaseProgram(prog);
        }
        return Err(format!(
            "the driver refused the binary (clCreateProgramWithBinary: {err}, binary status {status})"
        ));
    }
    // The log's first line says enough in the one line this ends up in.
    build_for(prog, device, options).map_err(|(e, log)| {
        format!("the binary does not build (clBuildProgram: {e}): {}", log.lines().next().unwrap_or(""))
    })?;
    Ok(prog)
}

/// Builds `prog` for `device`; on failure releases it and returns the code and the build log.
unsafe fn build_for(prog: cl_program, device: cl_device_id, options: &str) -> Result<(), (cl_int, String)> {
    let Ok(copts) = CString::new(options) else {
        api().clReleaseProgram(prog);
        return Err((CL_INVALID_BUILD_OPTIONS, "the options hold a NUL byte".into()));
    };
    let e = api().clBuildProgram(prog, 1, &device, copts.as_ptr(), None, ptr::null_mut());
    if e == CL_SUCCESS {
        return Ok(());
    }
    let log = info_string(|n, v, r| api().clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, n, v, r));
    api().clReleaseProgram(prog);
    Err((e, log))
}

/// The binary of `prog` for `device`, one of the program's devices (a program from source has
/// every device of its context, built or not).
unsafe fn binary_of(prog: cl_program, device: cl_device_id) -> Result<Vec<u8>, String> {
    let query = |what: cl_program_info| move |n, v, r| api().clGetProgramInfo(prog, what, n, v, r);
    let devices = info_vec::<cl_device_id>(query(CL_PROGRAM_DEVICES)).ok_or("no device list")?;
    let sizes = info_vec::<size_t>(query(CL_PROGRAM_BINARY_SIZES)).ok_or("no binary sizes")?;
    let at = devices.iter().position(|&d| d == device).ok_or("the device is not the program's")?;
    let size = sizes.get(at).copied().filter(|&s| s > 0).ok_or("an empty binary")?;
    let mut binary = vec![0u8; size];
    // A null entry asks for no copy: only this device's binary is wanted.
    let mut slots: Vec<*mut u8> = vec![ptr::null_mut(); devices.len()];
    slots[at] = binary.as_mut_ptr();
    let e = api().clGetProgramInfo(
        prog,
        CL_PROGRAM_BINARIES,
        slots.len() * std::mem::size_of::<*mut u8>(),
        slots.as_mut_ptr() as *mut c_void,
        ptr::null_mut(),
    );
    if e != CL_SUCCESS {
        return Err(format!("clGetProgramInfo(CL_PROGRAM_BINARIES): {e}"));
    }
    Ok(binary)
}
