//! The calls clayout makes on its own behalf, as safe functions: object creation, kernel
//! arguments, launches, markers, transfers, maps, waits. Handles passed in must be live (the
//! module contract of `cl`); wait lists are events the caller holds or the application passed
//! to the call in progress. Every enqueue hands back the command's event as an owned `Event`.

use super::error::{check, Error, Result};
use super::handle::{Context, Event, Kernel, Mem, Queue};
use super::real::api;
use libc::c_void;
use opencl_sys::*;
use std::ffi::CString;
use std::ptr;

/// A wait list as the C API takes it: null for none.
fn list(wait: &[cl_event]) -> (cl_uint, *const cl_event) {
    if wait.is_empty() {
        (0, ptr::null())
    } else {
        (wait.len() as cl_uint, wait.as_ptr())
    }
}

/// The event an enqueue filled in, owned; an enqueue that succeeds always gives one.
fn event(call: &'static str, code: cl_int, ev: cl_event, queue: cl_command_queue) -> Result<Event> {
    check(call, code)?;
    Event::created_in(ev, queue).ok_or(Error::new(call, CL_OUT_OF_RESOURCES))
}

pub fn create_queue(
    context: cl_context,
    device: cl_device_id,
    properties: cl_command_queue_properties,
) -> Result<Queue> {
    let mut err = CL_SUCCESS;
    // SAFETY: live context and device; `err` outlives the call.
    #[allow(deprecated)]
    let q = unsafe { api().clCreateCommandQueue(context, device, properties, &mut err) };
    check("clCreateCommandQueue", err)?;
    Queue::created_in(q, context).ok_or(Error::new("clCreateCommandQueue", CL_OUT_OF_RESOURCES))
}

/// A context of `devices` (all of one platform), with no properties and no error callback.
pub fn create_context(devices: &[cl_device_id]) -> Result<Context> {
    let mut err = CL_SUCCESS;
    // SAFETY: `devices` holds as many device handles as its length says and outlives the call;
    // no callback, so no user data is kept.
    let c = unsafe {
        api().clCreateContext(ptr::null(), devices.len() as cl_uint, devices.as_ptr(), None, ptr::null_mut(), &mut err)
    };
    check("clCreateContext", err)?;
    Context::from_raw(c).ok_or(Error::new("clCreateContext", CL_OUT_OF_RESOURCES))
}

pub fn create_buffer(context: cl_context, flags: cl_mem_flags, size: usize) -> Result<Mem> {
    let mut err = CL_SUCCESS;
    // SAFETY: a live context, no host pointer.
    let m = unsafe { api().clCreateBuffer(context, flags, size, ptr::null_mut(), &mut err) };
    check("clCreateBuffer", err)?;
    Mem::created_in(m, context).ok_or(Error::new("clCreateBuffer", CL_OUT_OF_RESOURCES))
}

pub fn create_kernel(program: cl_program, name: &str) -> Result<Kernel> {
    let cname = CString::new(name).map_err(|_| Error::new("clCreateKernel", CL_INVALID_KERNEL_NAME))?;
    let mut err = CL_SUCCESS;
    // SAFETY: a live program; `cname` is NUL-terminated and outlives the call.
    let k = unsafe { api().clCreateKernel(program, cname.as_ptr(), &mut err) };
    check("clCreateKernel", err)?;
    Kernel::from_raw(k).ok_or(Error::new("clCreateKernel", CL_OUT_OF_RESOURCES))
}

/// Creates every kernel of `program` once and releases them: a driver that loads a kernel's
/// code only when it is first asked for it (NVIDIA's) does that now rather than inside a launch.
/// The number of kernels, or the failing call's error.
pub fn warm_kernels(program: cl_program) -> Result<usize> {
    let mut n: cl_uint = 0;
    // SAFETY: a live program; a null array with a count of zero asks for the count only.
    check("clCreateKernelsInProgram", unsafe {
        api().clCreateKernelsInProgram(program, 0, std::ptr::null_mut(), &mut n)
    })?;
    let mut raw: Vec<cl_kernel> = vec![std::ptr::null_mut(); n as usize];
    // SAFETY: `raw` holds `n` slots, as the call is told.
    check("clCreateKernelsInProgram", unsafe {
        api().clCreateKernelsInProgram(program, n, raw.as_mut_ptr(), std::ptr::null_mut())
    })?;
    // Each is released as it drops.
    Ok(raw.into_iter().filter_map(Kernel::from_raw).count())
}

/// A kernel argument's value, as `clSetKernelArg` takes it.
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    Mem(cl_mem),
    /// `__local` space of this many bytes.
    Local(usize),
    Bytes(&'a [u8]),
    /// A shared virtual memory pointer.
    Svm(*const c_void),
}

impl Arg<'_> {
    pub fn u64(v: &u64) -> Arg<'_> {
        // SAFETY: a u64 is 8 plain bytes.
        Arg::Bytes(unsafe { std::slice::from_raw_parts(v as *const u64 as *const u8, 8) })
    }
    pub fn u32(v: &u32) -> Arg<'_> {
        // SAFETY: a u32 is 4 plain bytes.
        Arg::Bytes(unsafe { std::slice::from_raw_parts(v as *const u32 as *const u8, 4) })
    }
}

/// Sets one argument. The caller serializes calls on one kernel object.
pub fn set_arg(kernel: cl_kernel, index: u32, arg: Arg) -> Result<()> {
    if let Arg::Svm(p) = arg {
        // SAFETY: a live kernel; the pointer is the application's, passed on as it gave it.
        return check("clSetKernelArgSVMPointer", unsafe { api().clSetKernelArgSVMPointer(kernel, index, p) });
    }
    let (size, value): (usize, *const c_void) = match &arg {
        Arg::Svm(_) => unreachable!("handled above"),
        Arg::Mem(m) => (std::mem::size_of::<cl_mem>(), m as *const cl_mem as *const c_void),
        Arg::Local(n) => (*n, ptr::null()),
        Arg::Bytes(b) => (b.len(), b.as_ptr() as *const c_void),
    };
    // SAFETY: a live kernel; `value` points to `size` readable bytes (or is null for local
    // space), which outlive the call.
    check("clSetKernelArg", unsafe { api().clSetKernelArg(kernel, index, size, value) })
}

/// Enqueues an n-dimensional launch (`global.len()` dimensions, 1 to 3).
pub fn nd_range(
    queue: cl_command_queue,
    kernel: cl_kernel,
    global: &[usize],
    local: Option<&[usize]>,
    wait: &[cl_event],
) -> Result<Event> {
    let (n, l) = list(wait);
    let mut ev = ptr::null_mut();
    let local = local.map_or(ptr::null(), |l| l.as_ptr());
    // SAFETY: live queue and kernel; the size arrays have `global.len()` entries (the caller
    // gives `local` as many as `global`) and outlive the call.
    let r = unsafe {
        api().clEnqueueNDRangeKernel(
            queue,
            kernel,
            global.len() as cl_uint,
            ptr::null(),
            global.as_ptr(),
            local,
            n,
            l,
            &mut ev,
        )
    };
    event("clEnqueueNDRangeKernel", r, ev, queue)
}

/// A marker: completes once everything enqueued before it (and `wait`) has.
pub fn marker(queue: cl_command_queue, wait: &[cl_event]) -> Result<Event> {
    let (n, l) = list(wait);
    let mut ev = ptr::null_mut();
    // SAFETY: a live queue and wait list.
    let r = unsafe { api().clEnqueueMarkerWithWaitList(queue, n, l, &mut ev) };
    event("clEnqueueMarkerWithWaitList", r, ev, queue)
}

/// A barrier: on an out-of-order queue, later commands also wait for it.
pub fn barrier(queue: cl_command_queue, wait: &[cl_event]) -> Result<Event> {
    let (n, l) = list(wait);
    let mut ev = ptr::null_mut();
    // SAFETY: a live queue and wait list.
    let r = unsafe { api().clEnqueueBarrierWithWaitList(queue, n, l, &mut ev) };
    event("clEnqueueBarrierWithWaitList", r, ev, queue)
}

pub fn flush(queue: cl_command_queue) -> Result<()> {
    // SAFETY: a live queue.
    check("clFlush", unsafe { api().clFlush(queue) })
}

pub fn finish(queue: cl_command_queue) -> Result<()> {
    // SAFETY: a live queue.
    check("clFinish", unsafe { api().clFinish(queue) })
}

/// Blocks until every event of `events` has completed.
pub fn wait(events: &[cl_event]) -> Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    // SAFETY: live events, as many as the slice holds.
    check("clWaitForEvents", unsafe { api().clWaitForEvents(events.len() as cl_uint, events.as_ptr()) })
}

/// Fills `size` bytes of `mem` from `offset` with copies of `pattern` (1 to 128 bytes, a power
/// of two; `offset` and `size` multiples of its length).
pub fn fill(
    queue: cl_command_queue,
    mem: cl_mem,
    pattern: &[u8],
    offset: usize,
    size: usize,
    wait: &[cl_event],
) -> Result<Event> {
    let (n, l) = list(wait);
    let mut ev = ptr::null_mut();
    // SAFETY: live queue and buffer; the library copies the pattern's `pattern.len()` bytes
    // before the call returns.
    let r = unsafe {
        api().clEnqueueFillBuffer(
            queue,
            mem,
            pattern.as_ptr() as *const c_void,
            pattern.len(),
            offset,
            size,
            n,
            l,
            &mut ev,
        )
    };
    event("clEnqueueFillBuffer", r, ev, queue)
}

/// Copies `size` bytes from `src` at `src_offset` to `dst` at `dst_offset` on the device.
pub fn copy(
    queue: cl_command_queue,
    src: cl_mem,
    dst: cl_mem,
    src_offset: usize,
    dst_offset: usize,
    size: usize,
    wait: &[cl_event],
) -> Result<Event> {
    let (n, l) = list(wait);
    let mut ev = ptr::null_mut();
    // SAFETY: live queue and buffers; no host memory is involved.
    let r = unsafe { api().clEnqueueCopyBuffer(queue, src, dst, src_offset, dst_offset, size, n, l, &mut ev) };
    event("clEnqueueCopyBuffer", r, ev, queue)
}

/// A user event of `context`: commands that wait on it start once [`set_user_event_status`]
/// completes it.
pub fn user_event(context: cl_context) -> Result<Event> {
    let mut err = CL_SUCCESS;
    // SAFETY: a live context; `err` outlives the call.
    let e = unsafe { api().clCreateUserEvent(context, &mut err) };
    check("clCreateUserEvent", err)?;
    Event::from_raw(e).ok_or(Error::new("clCreateUserEvent", CL_OUT_OF_RESOURCES))
}

/// Completes a user event (`CL_COMPLETE`) or fails it (a negative status).
pub fn set_user_event_status(event: cl_event, status: cl_int) -> Result<()> {
    // SAFETY: a live user event.
    check("clSetUserEventStatus", unsafe { api().clSetUserEventStatus(event, status) })
}

/// Reads `out.len()` bytes from `mem` at `offset`, blocking.
pub fn read(queue: cl_command_queue, mem: cl_mem, offset: usize, out: &mut [u8], wait: &[cl_event]) -> Result<()> {
    let (n, l) = list(wait);
    // SAFETY: live queue and buffer; `out` is writable for its length until the blocking call
    // returns.
    let r = unsafe {
        api().clEnqueueReadBuffer(
            queue,
            mem,
            CL_TRUE,
            offset,
            out.len(),
            out.as_mut_ptr() as *mut c_void,
            n,
            l,
            ptr::null_mut(),
        )
    };
    check("clEnqueueReadBuffer", r)
}

/// Writes `data` to `mem` at `offset`, blocking.
pub fn write(queue: cl_command_queue, mem: cl_mem, offset: usize, data: &[u8], wait: &[cl_event]) -> Result<()> {
    let (n, l) = list(wait);
    // SAFETY: live queue and buffer; `data` stays readable until the blocking call returns.
    let r = unsafe {
        api().clEnqueueWriteBuffer(
            queue,
            mem,
            CL_TRUE,
            offset,
            data.len(),
            data.as_ptr() as *const c_void,
            n,
            l,
            ptr::null_mut(),
        )
    };
    check("clEnqueueWriteBuffer", r)
}

/// Maps `len` bytes of `mem` at `offset` for reading and writing without blocking: the bytes
/// are the device's once the returned event completes, and given back by [`unmap_at`].
pub fn map_later(
    queue: cl_command_queue,
    mem: cl_mem,
    offset: usize,
    len: usize,
    wait: &[cl_event],
) -> Result<(*mut u8, Event)> {
    let (n, l) = list(wait);
    let (mut err, mut ev) = (CL_SUCCESS, ptr::null_mut());
    // SAFETY: live queue and buffer; the pointer is not read here.
    let p = unsafe {
        api().clEnqueueMapBuffer(queue, mem, CL_FALSE, CL_MAP_READ | CL_MAP_WRITE, offset, len, n, l, &mut ev, &mut err)
    };
    let ev = event("clEnqueueMapBuffer", err, ev, queue)?;
    if p.is_null() {
        return Err(Error::new("clEnqueueMapBuffer", CL_MAP_FAILURE));
    }
    Ok((p as *mut u8, ev))
}

/// Gives the bytes [`map_later`] mapped at `ptr` back to the device.
pub fn unmap_at(queue: cl_command_queue, mem: cl_mem, ptr: *mut u8, wait: &[cl_event]) -> Result<Event> {
    let (n, l) = list(wait);
    let mut ev = ptr::null_mut();
    // SAFETY: the pointer came from mapping this buffer, and the caller gives it back once.
    let r = unsafe { api().clEnqueueUnmapMemObject(queue, mem, ptr as *mut c_void, n, l, &mut ev) };
    event("clEnqueueUnmapMemObject", r, ev, queue)
}

/// Calls `notify(event, status, user)` when the event reaches `CL_COMPLETE` (or fails).
pub fn on_complete(
    event: cl_event,
    notify: extern "C" fn(cl_event, cl_int, *mut c_void),
    user: *mut c_void,
) -> Result<()> {
    let notify: unsafe extern "C" fn(cl_event, cl_int, *mut c_void) = notify;
    // SAFETY: a live event; `notify` is a plain extern "C" fn, `user` is the callback's own.
    let r = unsafe { api().clSetEventCallback(event, CL_COMPLETE, Some(notify), user) };
    check("clSetEventCallback", r)
}
