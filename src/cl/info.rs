//! Typed `clGet*Info` queries. A query that fails answers the type's default (or None): every
//! caller has a safe course for an object the library will not describe.

use super::real::api;
use libc::{c_void, size_t};
use opencl_sys::*;

/// The value of a `clGet*Info` query whose size is only known by asking (strings, lists):
/// `query(size, value, size_ret)` is the real call with its object and name bound. None when
/// either call fails or the answer is empty.
///
/// # Safety
/// `query` must be a `clGet*Info` call on a live object whose answer is an array of `T`.
pub unsafe fn info_vec<T: Copy + Default>(
    query: impl Fn(size_t, *mut c_void, *mut size_t) -> cl_int,
) -> Option<Vec<T>> {
    let mut bytes: size_t = 0;
    if query(0, std::ptr::null_mut(), &mut bytes) != CL_SUCCESS || bytes == 0 {
        return None;
    }
    let mut v = vec![T::default(); bytes.div_ceil(std::mem::size_of::<T>())];
    if query(bytes, v.as_mut_ptr() as *mut c_void, std::ptr::null_mut()) != CL_SUCCESS {
        return None;
    }
    Some(v)
}

/// A string answer of a `clGet*Info` query (see [`info_vec`]), without its NUL and surrounding
/// blanks; empty when the query fails.
///
/// # Safety
/// As for [`info_vec`], with an answer of `char`s.
pub unsafe fn info_string(query: impl Fn(size_t, *mut c_void, *mut size_t) -> cl_int) -> String {
    info_vec::<u8>(query)
        .map(|b| String::from_utf8_lossy(&b).trim_end_matches('\0').trim().to_string())
        .unwrap_or_default()
}

/// A fixed-size answer (a number, a handle, a bit field) of `query(size, value, size_ret)`.
///
/// # Safety
/// `query` must be a `clGet*Info` call on a live object whose answer is one `T`.
unsafe fn info_scalar<T: Copy + Default>(query: impl Fn(size_t, *mut c_void, *mut size_t) -> cl_int) -> Option<T> {
    let mut v = T::default();
    (query(std::mem::size_of::<T>(), &mut v as *mut T as *mut c_void, std::ptr::null_mut()) == CL_SUCCESS).then_some(v)
}

/// A fixed-size device answer; `T::default()` when the query fails. `T` must be the type the
/// specification gives for `what` (a wrong size fails the query, it never overruns).
pub fn device_scalar<T: Copy + Default>(device: cl_device_id, what: cl_device_info) -> T {
    // SAFETY: a live device (cl's contract); the size passed is `T`'s.
    unsafe { info_scalar(|n, v, r| api().clGetDeviceInfo(device, what, n, v, r)) }.unwrap_or_default()
}

pub fn device_string(device: cl_device_id, what: cl_device_info) -> String {
    // SAFETY: a live device; a string answer.
    unsafe { info_string(|n, v, r| api().clGetDeviceInfo(device, what, n, v, r)) }
}

pub fn device_platform(device: cl_device_id) -> Option<cl_platform_id> {
    let p: cl_platform_id = device_scalar(device, CL_DEVICE_PLATFORM);
    (!p.is_null()).then_some(p)
}

pub fn platform_string(platform: cl_platform_id, what: cl_platform_info) -> String {
    // SAFETY: a platform the library reported; a string answer.
    unsafe { info_string(|n, v, r| api().clGetPlatformInfo(platform, what, n, v, r)) }
}

/// Whether a device of vendor `vendor` on platform `platform` is NVIDIA's: either name says so
/// (a device's vendor string alone is not always filled in).
pub fn names_nvidia(vendor: &str, platform: &str) -> bool {
    [vendor, platform].iter().any(|s| s.to_ascii_lowercase().contains("nvidia"))
}

/// Whether `device` is one of NVIDIA's driver (`names_nvidia`).
pub fn is_nvidia(device: cl_device_id) -> bool {
    let platform = device_platform(device).map(|p| platform_string(p, CL_PLATFORM_NAME)).unwrap_or_default();
    names_nvidia(&device_string(device, CL_DEVICE_VENDOR), &platform)
}

/// Whether `device` is PoCL's (its platform's name).
pub fn is_pocl(device: cl_device_id) -> bool {
    let platform = device_platform(device).map(|p| platform_string(p, CL_PLATFORM_NAME)).unwrap_or_default();
    platform.contains("Portable Computing Language")
}

/// The devices of a context.
pub fn context_devices(context: cl_context) -> Vec<cl_device_id> {
    // SAFETY: a live context; the answer is an array of device handles.
    unsafe { info_vec(|n, v, r| api().clGetContextInfo(context, CL_CONTEXT_DEVICES, n, v, r)) }.unwrap_or_default()
}

/// A context's reference count, as the library counts it (the application's references and
/// clayout's own together).
pub fn context_refs(context: cl_context) -> Option<cl_uint> {
    // SAFETY: a live context; the answer is one cl_uint.
    unsafe { info_scalar(|n, v, r| api().clGetContextInfo(context, CL_CONTEXT_REFERENCE_COUNT, n, v, r)) }
}

/// The function name of a kernel object.
pub fn kernel_name(kernel: cl_kernel) -> String {
    // SAFETY: a live kernel; a string answer.
    unsafe { info_string(|n, v, r| api().clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, n, v, r)) }
}

/// The execution status of an event (`CL_COMPLETE`, or negative when its command failed), when
/// the library answers.
pub fn event_status(event: cl_event) -> Option<cl_int> {
    // SAFETY: a live event; the answer is one cl_int.
    unsafe { info_scalar(|n, v, r| api().clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, n, v, r)) }
}

/// Whether every event of `events` has completed (an empty list has).
pub fn all_complete(events: &[cl_event]) -> bool {
    events.iter().all(|&e| event_status(e) == Some(CL_COMPLETE))
}

/// The device start and end time of a completed command of a profiling queue, in ns.
pub fn event_times(event: cl_event) -> Option<(u64, u64)> {
    let at = |what| {
        // SAFETY: a live event; the answer is one cl_ulong.
        unsafe { info_scalar::<cl_ulong>(|n, v, r| api().clGetEventProfilingInfo(event, what, n, v, r)) }
    };
    Some((at(CL_PROFILING_COMMAND_START)?, at(CL_PROFILING_COMMAND_END)?))
}

/// The build log of a program for one device; empty when there is none.
pub fn build_log(program: cl_program, device: cl_device_id) -> String {
    // SAFETY: a live program and one of its devices; a string answer.
    unsafe { info_string(|n, v, r| api().clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, n, v, r)) }
}

/// A fixed-size answer of `clGetKernelWorkGroupInfo`; `T::default()` when the query fails.
pub fn kernel_work_group<T: Copy + Default>(
    kernel: cl_kernel,
    device: cl_device_id,
    what: cl_kernel_work_group_info,
) -> T {
    // SAFETY: a live kernel and device; the size passed is `T`'s.
    unsafe { info_scalar(|n, v, r| api().clGetKernelWorkGroupInfo(kernel, device, what, n, v, r)) }.unwrap_or_default()
}

/// The devices a program was created for.
pub fn program_devices(program: cl_program) -> Vec<cl_device_id> {
    // SAFETY: a live program; the answer is an array of device handles.
    unsafe { info_vec(|n, v, r| api().clGetProgramInfo(program, CL_PROGRAM_DEVICES, n, v, r)) }.unwrap_or_default()
}

/// The device a queue runs on.
pub fn queue_device(queue: cl_command_queue) -> Option<cl_device_id> {
    // SAFETY: a live queue; the answer is one device handle.
    unsafe { info_scalar(|n, v, r| api().clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, n, v, r)) }
}

/// The context of a queue.
pub fn queue_context(queue: cl_command_queue) -> Option<cl_context> {
    // SAFETY: a live queue; the answer is one context handle.
    unsafe { info_scalar(|n, v, r| api().clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, n, v, r)) }
}

/// Every platform the library reports.
pub fn platforms() -> Vec<cl_platform_id> {
    let mut n: cl_uint = 0;
    // SAFETY: a count query, then an array of exactly that many handles.
    unsafe {
        if api().clGetPlatformIDs(0, std::ptr::null_mut(), &mut n) != CL_SUCCESS || n == 0 {
            return Vec::new();
        }
        let mut v = vec![std::ptr::null_mut(); n as usize];
        if api().clGetPlatformIDs(n, v.as_mut_ptr(), std::ptr::null_mut()) != CL_SUCCESS {
            return Vec::new();
        }
        v
    }
}

/// The devices of `kind` of a platform.
pub fn devices(platform: cl_platform_id, kind: cl_device_type) -> Vec<cl_device_id> {
    let mut n: cl_uint = 0;
    // SAFETY: a count query, then an array of exactly that many handles.
    unsafe {
        if api().clGetDeviceIDs(platform, kind, 0, std::ptr::null_mut(), &mut n) != CL_SUCCESS || n == 0 {
            return Vec::new();
        }
        let mut v = vec![std::ptr::null_mut(); n as usize];
        if api().clGetDeviceIDs(platform, kind, n, v.as_mut_ptr(), std::ptr::null_mut()) != CL_SUCCESS {
            return Vec::new();
        }
        v
    }
}

/// Where a program's build for `device` stands (`CL_BUILD_IN_PROGRESS`, `CL_BUILD_SUCCESS`...).
pub fn build_status(program: cl_program, device: cl_device_id) -> Option<cl_build_status> {
    // SAFETY: a live program and one of its devices; the answer is one cl_build_status.
    unsafe { info_scalar(|n, v, r| api().clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_STATUS, n, v, r)) }
}

/// The number of arguments of a kernel (0 when the library does not answer).
pub fn kernel_num_args(kernel: cl_kernel) -> cl_uint {
    // SAFETY: a live kernel; the answer is one cl_uint.
    unsafe { info_scalar(|n, v, r| api().clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, n, v, r)) }.unwrap_or(0)
}

/// The queue of an event's command (None for a user event).
pub fn event_queue(event: cl_event) -> Option<cl_command_queue> {
    // SAFETY: a live event; the answer is one queue handle.
    unsafe { info_scalar(|n, v, r| api().clGetEventInfo(event, CL_EVENT_COMMAND_QUEUE, n, v, r)) }
        .filter(|q: &cl_command_queue| !q.is_null())
}

/// A queue's reference count, as the library counts it.
pub fn queue_refs(queue: cl_command_queue) -> Option<cl_uint> {
    // SAFETY: a live queue; the answer is one cl_uint.
    unsafe { info_scalar(|n, v, r| api().clGetCommandQueueInfo(queue, CL_QUEUE_REFERENCE_COUNT, n, v, r)) }
}
