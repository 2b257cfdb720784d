//! Programs clayout builds for itself, from source or from a device binary, with the build log
//! when the build fails.

use super::error::Error;
use super::handle::Program;
use super::info::{build_log, info_vec};
use super::real::api;
use libc::{c_void, size_t};
use opencl_sys::*;
use std::ffi::CString;
use std::fmt;
use std::ptr;

/// Why a program did not build: the failed call, and the build log when there is one.
#[derive(Clone, Debug)]
pub struct BuildError {
    pub error: Error,
    pub log: String,
}

impl BuildError {
    fn plain(call: &'static str, code: cl_int) -> BuildError {
        BuildError { error: Error::new(call, code), log: String::new() }
    }

    /// The first line of the log that says something (an error, else any), for one-line
    /// messages.
    pub fn first_line(&self) -> &str {
        let lines = || self.log.lines().map(str::trim);
        lines().find(|l| l.contains("error")).or_else(|| lines().find(|l| !l.is_empty())).unwrap_or("")
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.first_line() {
            "" => write!(f, "{}", self.error),
            l => write!(f, "{}: {l}", self.error),
        }
    }
}

/// `source` built with `options` for `devices` of `context` (every device of the context when
/// `devices` is empty). The source is bytes: what the application gave, byte for byte.
pub fn from_source(
    context: cl_context,
    devices: &[cl_device_id],
    source: &[u8],
    options: &str,
) -> Result<Program, BuildError> {
    let mut strings = [source.as_ptr() as *const libc::c_char];
    let lens = [source.len()];
    let mut err = CL_SUCCESS;
    // SAFETY: one string of `lens[0]` bytes (no NUL needed with an explicit length), alive for
    // the call.
    let p = unsafe { api().clCreateProgramWithSource(context, 1, strings.as_mut_ptr(), lens.as_ptr(), &mut err) };
    if err != CL_SUCCESS {
        return Err(BuildError::plain("clCreateProgramWithSource", err));
    }
    let program =
        Program::created_in(p, context).ok_or(BuildError::plain("clCreateProgramWithSource", CL_OUT_OF_RESOURCES))?;
    build(&program, devices, options)?;
    Ok(program)
}

/// A program from a device binary for `device`, built with `options`.
pub fn from_binary(
    context: cl_context,
    device: cl_device_id,
    binary: &[u8],
    options: &str,
) -> Result<Program, BuildError> {
    let (len, mut bytes) = (binary.len(), binary.as_ptr());
    let (mut status, mut err) = (CL_SUCCESS, CL_SUCCESS);
    // SAFETY: one device, one binary of `len` bytes, alive for the call.
    let p = unsafe { api().clCreateProgramWithBinary(context, 1, &device, &len, &mut bytes, &mut status, &mut err) };
    let program = Program::created_in(p, context);
    if err != CL_SUCCESS || status != CL_SUCCESS {
        return Err(BuildError::plain("clCreateProgramWithBinary", if err != CL_SUCCESS { err } else { status }));
    }
    let program = program.ok_or(BuildError::plain("clCreateProgramWithBinary", CL_OUT_OF_RESOURCES))?;
    build(&program, &[device], options)?;
    Ok(program)
}

fn build(program: &Program, devices: &[cl_device_id], options: &str) -> Result<(), BuildError> {
    let copts = CString::new(options).map_err(|_| BuildError::plain("clBuildProgram", CL_INVALID_BUILD_OPTIONS))?;
    let (n, list) = if devices.is_empty() { (0, ptr::null()) } else { (devices.len() as cl_uint, devices.as_ptr()) };
    // SAFETY: a live program, `n` devices of its context, NUL-terminated options; no callback,
    // so the build is finished when the call returns.
    let r = unsafe { api().clBuildProgram(program.raw(), n, list, copts.as_ptr(), None, ptr::null_mut()) };
    if r == CL_SUCCESS {
        return Ok(());
    }
    let device = devices.first().copied().or_else(|| super::info::program_devices(program.raw()).first().copied());
    let log = device.map(|d| build_log(program.raw(), d)).unwrap_or_default();
    Err(BuildError { error: Error::new("clBuildProgram", r), log })
}

/// The binary of `program` for `device`, one of the program's devices (a program from source
/// has every device of its context, built or not).
pub fn binary_of(program: cl_program, device: cl_device_id) -> Result<Vec<u8>, String> {
    let query = |what: cl_program_info| move |n, v, r| unsafe { api().clGetProgramInfo(program, what, n, v, r) };
    // SAFETY: live program; arrays of device handles and sizes.
    let devices = unsafe { info_vec::<cl_device_id>(query(CL_PROGRAM_DEVICES)) }.ok_or("no device list")?;
    let sizes = unsafe { info_vec::<size_t>(query(CL_PROGRAM_BINARY_SIZES)) }.ok_or("no binary sizes")?;
    let at = devices.iter().position(|&d| d == device).ok_or("the device is not the program's")?;
    let size = sizes.get(at).copied().filter(|&s| s > 0).ok_or("an empty binary")?;
    let mut binary = vec![0u8; size];
    // A null entry asks for no copy: only this device's binary is wanted.
    let mut slots: Vec<*mut u8> = vec![ptr::null_mut(); devices.len()];
    slots[at] = binary.as_mut_ptr();
    // SAFETY: one pointer per device; the non-null one points to `size` writable bytes.
    let e = unsafe {
        api().clGetProgramInfo(
            program,
            CL_PROGRAM_BINARIES,
            slots.len() * std::mem::size_of::<*mut u8>(),
            slots.as_mut_ptr() as *mut c_void,
            ptr::null_mut(),
        )
    };
    if e != CL_SUCCESS {
        return Err(format!("clGetProgramInfo(CL_PROGRAM_BINARIES): {e}"));
    }
    Ok(binary)
}
