//! The observed entry points (`hook` in `api_table.rs`). Each one makes the real call itself,
//! exactly once, and keeps the registry in step around it; bookkeeping runs under `guard`, so a
//! failure in clayout's own logic never changes what the application gets back.
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use crate::cl::api;
use crate::guard;
use crate::registry::{
    self, key, ArgValue, BufferInfo, ContextInfo, KernelInfo, ProgramInfo, ProgramOrigin, QueueInfo,
};
use libc::{c_char, c_void, size_t};
use opencl_sys::*;
use parking_lot::Mutex;
use std::ffi::CStr;

mod enqueue;
mod extensions;
pub use enqueue::*;

fn reg() -> &'static registry::Registry {
    registry::get()
}

fn context_devices(ctx: cl_context) -> Vec<usize> {
    crate::cl::info::context_devices(ctx).into_iter().map(key).collect()
}

unsafe fn cstr(p: *const c_char) -> Option<String> {
    (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
}

// ---- contexts -------------------------------------------------------------------------------

pub unsafe fn clCreateContext(
    properties: *const cl_context_properties,
    num_devices: cl_uint,
    devices: *const cl_device_id,
    pfn_notify: Option<unsafe extern "C" fn(*const c_char, *const c_void, size_t, *mut c_void)>,
    user_data: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_context {
    crate::runtime::helper::start(crate::runtime::program::ahead_of_builds);
    let ctx = api().clCreateContext(properties, num_devices, devices, pfn_notify, user_data, errcode_ret);
    if !ctx.is_null() {
        guard("clCreateContext", || {
            let devs = std::slice::from_raw_parts(devices, num_devices as usize).iter().map(|d| key(*d)).collect();
            reg().contexts.insert(key(ctx), ContextInfo { devices: devs });
        });
    }
    ctx
}

pub unsafe fn clCreateContextFromType(
    properties: *const cl_context_properties,
    device_type: cl_device_type,
    pfn_notify: Option<unsafe extern "C" fn(*const c_char, *const c_void, size_t, *mut c_void)>,
    user_data: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_context {
    crate::runtime::helper::start(crate::runtime::program::ahead_of_builds);
    let ctx = api().clCreateContextFromType(properties, device_type, pfn_notify, user_data, errcode_ret);
    if !ctx.is_null() {
        guard("clCreateContextFromType", || {
            reg().contexts.insert(key(ctx), ContextInfo { devices: context_devices(ctx) });
        });
    }
    ctx
}

/// Retain and release of every tracked kind: forward, and on success follow the count; the
/// runtime forgets its record at the application's last release, after counting what the
/// untracked run's journal holds (`runtime::untracked`): while a buffer's record can still be
/// found by its handle, and so that no kernel record (with its copies' objects) outlives the
/// application's release in the journal.
macro_rules! refcounted {
    ($retain:ident, $release:ident, $ty:ty, $table:ident, $runtime:path) => {
        pub unsafe fn $retain(obj: $ty) -> cl_int {
            let r = api().$retain(obj);
            if r == CL_SUCCESS {
                guard(stringify!($retain), || reg().$table.retain(key(obj)));
            }
            r
        }
        pub unsafe fn $release(obj: $ty) -> cl_int {
            let r = api().$release(obj);
            if r == CL_SUCCESS {
                guard(stringify!($release), || {
                    if reg().$table.release(key(obj)).is_some() {
                        crate::runtime::untracked::drain_journal();
                        $runtime(key(obj));
                    }
                });
            }
            r
        }
    };
}

pub unsafe fn clRetainCommandQueue(obj: cl_command_queue) -> cl_int {
    let r = api().clRetainCommandQueue(obj);
    if r == CL_SUCCESS {
        guard("clRetainCommandQueue", || reg().queues.retain(key(obj)));
    }
    r
}

/// The real release runs under the registry's lock: a conversion on another queue retains
/// this one, to order itself after it, through the registry (runtime::convert).
pub unsafe fn clReleaseCommandQueue(obj: cl_command_queue) -> cl_int {
    let mut r = None;
    guard("clReleaseCommandQueue", || {
        let last = reg().queues.refs(key(obj)) == Some(1);
        if last {
            // Launches enqueued there without an event get their marker while it can be had.
            crate::runtime::order::close(obj);
        }
        reg().queues.release_with(key(obj), || {
            let code = api().clReleaseCommandQueue(obj);
            r = Some(code);
            code == CL_SUCCESS
        });
        if last && r == Some(CL_SUCCESS) {
            crate::runtime::order::queue_released(key(obj));
        }
    });
    // Only if clayout failed before the real release ran.
    r.unwrap_or_else(|| api().clReleaseCommandQueue(obj))
}
pub unsafe fn clRetainContext(context: cl_context) -> cl_int {
    let r = api().clRetainContext(context);
    if r == CL_SUCCESS {
        guard("clRetainContext", || reg().contexts.retain(key(context)));
    }
    r
}

pub unsafe fn clReleaseContext(context: cl_context) -> cl_int {
    // clayout's own programs and scratch buffers hold the context too: drop them when the
    // application lets go of it, so that the context can really go away.
    if reg().contexts.refs(key(context)) == Some(1) {
        guard("clReleaseContext", || {
            crate::runtime::untracked::drain_journal();
            crate::runtime::context::releasing(context)
        });
    }
    let r = api().clReleaseContext(context);
    if r == CL_SUCCESS {
        guard("clReleaseContext", || {
            reg().contexts.release(key(context));
        });
    }
    r
}

refcounted!(clRetainProgram, clReleaseProgram, cl_program, programs, crate::runtime::program::released);
refcounted!(clRetainKernel, clReleaseKernel, cl_kernel, kernels, crate::runtime::kernels::released);
refcounted!(clRetainMemObject, clReleaseMemObject, cl_mem, buffers, crate::runtime::buffers::released);

// ---- command queues -------------------------------------------------------------------------

/// `props`: the application's properties; `added`: the profiling clayout turned on itself.
fn record_queue(
    q: cl_command_queue,
    ctx: cl_context,
    dev: cl_device_id,
    props: cl_command_queue_properties,
    added: bool,
    app_properties: Vec<cl_queue_properties>,
) {
    guard("queue", || {
        if added && props & CL_QUEUE_PROFILING_ENABLE == 0 {
            crate::stats::queue_profiled();
        }
        reg().queues.insert(
            key(q),
            QueueInfo {
                context: key(ctx),
                device: key(dev),
                out_of_order: props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE != 0,
                profiling: added || props & CL_QUEUE_PROFILING_ENABLE != 0,
                profiling_added: added && props & CL_QUEUE_PROFILING_ENABLE == 0,
                app_properties,
            },
        );
    });
}

pub unsafe fn clCreateCommandQueue(
    context: cl_context,
    device: cl_device_id,
    properties: cl_command_queue_properties,
    errcode_ret: *mut cl_int,
) -> cl_command_queue {
    let mut profile = crate::runtime::profiling::wanted(device) && properties & CL_QUEUE_PROFILING_ENABLE == 0;
    let ours = if profile { properties | CL_QUEUE_PROFILING_ENABLE } else { properties };
    let mut q = api().clCreateCommandQueue(context, device, ours, errcode_ret);
    if q.is_null() && profile {
        // Refused with the profiling clayout added: the application gets the queue it asked for,
        // or the error it would have had.
        profile = false;
        q = api().clCreateCommandQueue(context, device, properties, errcode_ret);
    }
    if !q.is_null() {
        record_queue(q, context, device, properties, profile, Vec::new());
    }
    q
}

pub unsafe fn clCreateCommandQueueWithProperties(
    context: cl_context,
    device: cl_device_id,
    properties: *const cl_queue_properties,
    errcode_ret: *mut cl_int,
) -> cl_command_queue {
    // The application's property list, as (name, value) pairs without the terminating 0.
    let mut pairs: Vec<(cl_queue_properties, cl_queue_properties)> = Vec::new();
    if !properties.is_null() {
        let mut p = properties;
        while *p != 0 {
            pairs.push((*p, *p.add(1)));
            p = p.add(2);
        }
    }
    let key_props = CL_QUEUE_PROPERTIES as cl_queue_properties;
    let app_props = pairs.iter().find(|(k, _)| *k == key_props).map(|(_, v)| *v).unwrap_or(0);
    let app_list: Vec<cl_queue_properties> =
        if properties.is_null() { Vec::new() } else { pairs.iter().flat_map(|(k, v)| [*k, *v]).chain([0]).collect() };
    let mut profile =
        crate::runtime::profiling::wanted(device) && app_props & CL_QUEUE_PROFILING_ENABLE as cl_queue_properties == 0;
    let mut ours: Option<Vec<cl_queue_properties>> = None;
    if profile {
        match pairs.iter_mut().find(|(k, _)| *k == key_props) {
            Some((_, v)) => *v |= CL_QUEUE_PROFILING_ENABLE,
            None => pairs.push((key_props, CL_QUEUE_PROFILING_ENABLE)),
        }
        ours = Some(pairs.iter().flat_map(|(k, v)| [*k, *v]).chain([0]).collect());
    }
    let props_ptr = ours.as_ref().map(|v| v.as_ptr()).unwrap_or(properties);
    let mut q = api().clCreateCommandQueueWithProperties(context, device, props_ptr, errcode_ret);
    if q.is_null() && ours.is_some() {
        // Refused with the profiling clayout added (a queue on the device, say): the application
        // gets the queue it asked for, or the error it would have had.
        profile = false;
        q = api().clCreateCommandQueueWithProperties(context, device, properties, errcode_ret);
    }
    if !q.is_null() {
        record_queue(q, context, device, app_props, profile, app_list);
    }
    q
}

/// The queue's properties as the application set them: profiling that CLAYOUT_PROFILE turned on
/// is not shown.
pub unsafe fn clGetCommandQueueInfo(
    command_queue: cl_command_queue,
    param_name: cl_command_queue_info,
    param_value_size: size_t,
    param_value: *mut c_void,
    param_value_size_ret: *mut size_t,
) -> cl_int {
    let added =
        guard("clGetCommandQueueInfo", || reg().queues.get(key(command_queue)).filter(|q| q.profiling_added)).flatten();
    if let (Some(q), CL_QUEUE_PROPERTIES_ARRAY) = (&added, param_name) {
        // The list the application gave, answered as the library answers a list.
        let bytes: Vec<u8> = q.app_properties.iter().flat_map(|p| p.to_ne_bytes()).collect();
        if !param_value.is_null() {
            if param_value_size < bytes.len() {
                return CL_INVALID_VALUE;
            }
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), param_value as *mut u8, bytes.len());
        }
        if !param_value_size_ret.is_null() {
            *param_value_size_ret = bytes.len();
        }
        return CL_SUCCESS;
    }
    let r = api().clGetCommandQueueInfo(command_queue, param_name, param_value_size, param_value, param_value_size_ret);
    if param_name == CL_QUEUE_REFERENCE_COUNT {
        return without_ours(r, param_value, param_value_size, || crate::runtime::refs::queue(command_queue));
    }
    let fits = param_value_size >= std::mem::size_of::<cl_command_queue_properties>();
    if r == CL_SUCCESS && added.is_some() && param_name == CL_QUEUE_PROPERTIES && !param_value.is_null() && fits {
        *(param_value as *mut cl_command_queue_properties) &= !CL_QUEUE_PROFILING_ENABLE;
    }
    r
}

// ---- programs -------------------------------------------------------------------------------

fn record_program(p: cl_program, ctx: cl_context, origin: ProgramOrigin, sources: Vec<String>) {
    guard("program", || {
        let facts = reg()
            .programs
            .insert(key(p), ProgramInfo { context: key(ctx), origin, sources, build_options: Mutex::new(None) });
        crate::runtime::program::created(key(p), facts);
    });
}

pub unsafe fn clCreateProgramWithSource(
    context: cl_context,
    count: cl_uint,
    strings: *mut *const c_char,
    lengths: *const size_t,
    errcode_ret: *mut cl_int,
) -> cl_program {
    let p = api().clCreateProgramWithSource(context, count, strings, lengths, errcode_ret);
    if !p.is_null() {
        let mut sources = Vec::with_capacity(count as usize);
        guard("clCreateProgramWithSource", || {
            for i in 0..count as usize {
                let s = *strings.add(i);
                let len = if lengths.is_null() { 0 } else { *lengths.add(i) };
                let bytes = if len == 0 {
                    CStr::from_ptr(s).to_bytes()
                } else {
                    std::slice::from_raw_parts(s as *const u8, len)
                };
                sources.push(match crate::clc::text::decode(bytes) {
                    Some(s) => s,
                    // Text clayout cannot hold byte for byte: it reads none of the program.
                    None => return sources.clear(),
                });
            }
        });
        record_program(p, context, ProgramOrigin::Source, sources);
    }
    p
}

pub unsafe fn clCreateProgramWithBinary(
    context: cl_context,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    lengths: *const size_t,
    binaries: *mut *const u8,
    binary_status: *mut cl_int,
    errcode_ret: *mut cl_int,
) -> cl_program {
    let p = api().clCreateProgramWithBinary(
        context,
        num_devices,
        device_list,
        lengths,
        binaries,
        binary_status,
        errcode_ret,
    );
    if !p.is_null() {
        record_program(p, context, ProgramOrigin::Binary, Vec::new());
    }
    p
}

pub unsafe fn clCreateProgramWithIL(
    context: cl_context,
    il: *const c_void,
    length: size_t,
    errcode_ret: *mut cl_int,
) -> cl_program {
    let p = api().clCreateProgramWithIL(context, il, length, errcode_ret);
    if !p.is_null() {
        record_program(p, context, ProgramOrigin::Il, Vec::new());
    }
    p
}

pub unsafe fn clCreateProgramWithBuiltInKernels(
    context: cl_context,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    kernel_names: *const c_char,
    errcode_ret: *mut cl_int,
) -> cl_program {
    let p = api().clCreateProgramWithBuiltInKernels(context, num_devices, device_list, kernel_names, errcode_ret);
    if !p.is_null() {
        record_program(p, context, ProgramOrigin::BuiltIn, Vec::new());
    }
    p
}

/// Remembers the application's options, and reads the program's annotations as this build
/// will see it: the options to build with (instead of the application's, when the annotations
/// need the tile macro) and what to keep once the build succeeds.
fn build_options(
    program: cl_program,
    options: *const c_char,
    devices: (cl_uint, *const cl_device_id),
    headers: &[crate::runtime::source::GivenHeader],
) -> Option<(std::sync::Arc<crate::runtime::program::Program>, crate::runtime::program::Build)> {
    guard("build options", || {
        let info = crate::runtime::program::get(key(program))?;
        let user = unsafe { cstr(options) };
        *info.facts.build_options.lock() = user.clone();
        let device = if devices.0 > 0 && !devices.1.is_null() {
            Some(unsafe { *devices.1 })
        } else {
            reg().first_device(info.facts.context)
        };
        let build = crate::runtime::program::build_options(&info, user.as_deref(), device, headers);
        Some((info, build))
    })
    .flatten()
}

/// The build succeeded (or started): clayout's view of it is the program's now.
fn built(ours: Option<(std::sync::Arc<crate::runtime::program::Program>, crate::runtime::program::Build)>) {
    if let Some((info, build)) = ours {
        guard("after build", || crate::runtime::program::built(&info, build));
    }
}

type BuildNotify = Option<unsafe extern "C" fn(cl_program, *mut c_void)>;

pub unsafe fn clBuildProgram(
    program: cl_program,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    options: *const c_char,
    pfn_notify: BuildNotify,
    user_data: *mut c_void,
) -> cl_int {
    let devices = (num_devices, device_list);
    if pfn_notify.is_none()
        && guard("build beside", || crate::runtime::program::reads_beside_build(key(program))) == Some(true)
    {
        return build_beside(program, devices, options, user_data);
    }
    let ours = build_options(program, options, devices, &[]);
    let options = ours.as_ref().and_then(|(_, b)| b.options.as_ref()).map_or(options, |o| o.as_ptr());
    let start = std::time::Instant::now();
    let r = api().clBuildProgram(program, num_devices, device_list, options, pfn_notify, user_data);
    if r == CL_SUCCESS {
        after_build(program, ours, start.elapsed(), pfn_notify.is_some());
    }
    r
}

/// The application's build of `program`, with clayout's reading of its annotations and
/// rewriting of its copies made meanwhile on a thread of its own: the application's build
/// options stay as they are unless a kernel is written for a device layout, which
/// `reads_beside_build` rules out first. The reading takes 17 million instructions for particles
/// (4.9-6.8 ms on the H100's host), the build on NVIDIA from its cache 3.9-5.1 ms. Should the
/// reading ask for other options after all, the program is built again with them.
unsafe fn build_beside(
    program: cl_program,
    devices: (cl_uint, *const cl_device_id),
    options: *const c_char,
    user_data: *mut c_void,
) -> cl_int {
    /// What the reading needs of the call: pointers the caller keeps valid until it returns,
    /// which the reading does not outlast.
    #[derive(Clone, Copy)]
    struct Call(cl_program, *const c_char, cl_uint, *const cl_device_id);
    // SAFETY: read only, by a job waited for (helper's, or a scoped thread's) before this call
    // returns.
    unsafe impl Send for Call {}
    let call = Call(program, options, devices.0, devices.1);
    let start = std::time::Instant::now();
    let built = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reading = {
        let built = built.clone();
        move || {
            let c = call;
            let ours = build_options(c.0, c.1, (c.2, c.3), &[]);
            if let Some((program, build)) = &ours {
                guard("records read ahead", || build.read_ahead(program));
            }
            let read = start.elapsed();
            if ours.is_some() {
                // Annotated: the run's calls will run clayout's code.
                crate::warm::code(&built);
            }
            (ours, read)
        }
    };
    let build = || {
        let r = api().clBuildProgram(program, devices.0, devices.1, options, None, user_data);
        let took = start.elapsed();
        built.store(true, std::sync::atomic::Ordering::Relaxed);
        (r, took)
    };
    let ((ours, read), mut r, mut took) = match crate::runtime::helper::try_run(reading) {
        // On clayout's helper thread: no thread started inside the application's call.
        Ok(pending) => {
            let (r, took) = build();
            (pending.wait().unwrap_or((None, std::time::Duration::ZERO)), r, took)
        }
        Err(reading) => std::thread::scope(|scope| {
            let thread = std::thread::Builder::new().name("clayout-read".into()).spawn_scoped(scope, reading);
            let (r, took) = build();
            let read = match thread {
                Ok(handle) => handle.join().unwrap_or((None, std::time::Duration::ZERO)),
                // No thread to be had: read here, after the build.
                Err(_) => (build_options(program, options, devices, &[]), start.elapsed()),
            };
            (read, r, took)
        }),
    };
    crate::log::debug_with(|| {
        format!(
            "the program read for its annotations in {:.2} ms beside the application's build of {:.2} ms",
            read.as_secs_f64() * 1e3,
            took.as_secs_f64() * 1e3
        )
    });
    if r != CL_SUCCESS {
        return r;
    }
    if let Some(other) = ours.as_ref().and_then(|(_, b)| b.options.clone()) {
        let start = std::time::Instant::now();
        r = api().clBuildProgram(program, devices.0, devices.1, other.as_ptr(), None, user_data);
        took = start.elapsed();
        if r != CL_SUCCESS {
            return r;
        }
    }
    after_build(program, ours, took, false);
    r
}

/// The application's build succeeded (with a callback: started) in `took`.
fn after_build(
    program: cl_program,
    ours: Option<(std::sync::Arc<crate::runtime::program::Program>, crate::runtime::program::Build)>,
    took: std::time::Duration,
    notify: bool,
) {
    let start = std::time::Instant::now();
    built(ours);
    let recorded = start.elapsed();
    // clayout's own programs (rewritten copies, probes, conversion kernels) are built on its
    // worker from now on, not inside the application's calls. With a callback the
    // application's build may still be running: the worker waits for it first.
    guard("after build", || {
        if let Some(info) = crate::runtime::program::get(key(program)) {
            crate::runtime::program::app_build_took(&info, took);
            crate::runtime::program::after_build(&info, notify);
        }
    });
    // What clayout adds to the build call after the application's build returned, where a
    // short run's whole cost is a few milliseconds.
    crate::log::debug_with(|| {
        format!(
            "clayout's work after the application's build: {:.3} ms (the build noted {:.3} ms)",
            start.elapsed().as_secs_f64() * 1e3,
            recorded.as_secs_f64() * 1e3
        )
    });
}

pub unsafe fn clCompileProgram(
    program: cl_program,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    options: *const c_char,
    num_input_headers: cl_uint,
    input_headers: *const cl_program,
    header_include_names: *mut *const c_char,
    pfn_notify: BuildNotify,
    user_data: *mut c_void,
) -> cl_int {
    let headers = guard("compile headers", || given_headers(num_input_headers, input_headers, header_include_names))
        .unwrap_or_default();
    let ours = build_options(program, options, (num_devices, device_list), &headers);
    let options = ours.as_ref().and_then(|(_, b)| b.options.as_ref()).map_or(options, |o| o.as_ptr());
    let r = api().clCompileProgram(
        program,
        num_devices,
        device_list,
        options,
        num_input_headers,
        input_headers,
        header_include_names,
        pfn_notify,
        user_data,
    );
    if r == CL_SUCCESS {
        built(ours);
    }
    r
}

/// The headers given to `clCompileProgram`: each include name with its program's source.
fn given_headers(n: cl_uint, programs: *const cl_program, names: *mut *const c_char) -> Vec<(String, String)> {
    if n == 0 || programs.is_null() || names.is_null() {
        return Vec::new();
    }
    (0..n as usize)
        .filter_map(|i| {
            // SAFETY: both arrays hold `n` entries, as clCompileProgram requires.
            let (p, name) = unsafe { (*programs.add(i), cstr(*names.add(i))?) };
            let facts = reg().programs.get(key(p))?;
            Some((name, facts.source()))
        })
        .collect()
}

pub unsafe fn clLinkProgram(
    context: cl_context,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    options: *const c_char,
    num_input_programs: cl_uint,
    input_programs: *const cl_program,
    pfn_notify: BuildNotify,
    user_data: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_program {
    let p = api().clLinkProgram(
        context,
        num_devices,
        device_list,
        options,
        num_input_programs,
        input_programs,
        pfn_notify,
        user_data,
        errcode_ret,
    );
    if !p.is_null() {
        record_program(p, context, ProgramOrigin::Linked, Vec::new());
        guard("clLinkProgram", || {
            let Some(info) = crate::runtime::program::get(key(p)) else { return };
            *info.facts.build_options.lock() = cstr(options);
            let inputs: Vec<usize> = if input_programs.is_null() {
                Vec::new()
            } else {
                std::slice::from_raw_parts(input_programs, num_input_programs as usize)
                    .iter()
                    .map(|q| key(*q))
                    .collect()
            };
            crate::runtime::program::linked(&info, &inputs, cstr(options).as_deref());
            // The linked program is built: its rewritten copies are prepared like a build's.
            crate::runtime::program::prepare(&info, pfn_notify.is_some());
        });
    }
    p
}

// ---- kernels --------------------------------------------------------------------------------

fn record_kernel(k: cl_kernel, program: cl_program, name: String, args: Vec<Option<ArgValue>>, svm_seen: bool) {
    guard("kernel", || {
        let info = KernelInfo {
            name,
            program: key(program),
            args: Mutex::new(std::sync::Arc::new(args)),
            svm_seen: svm_seen.into(),
            args_set: 0.into(),
            stamps: KernelInfo::unstamped(),
            set_at: KernelInfo::never_set(),
        };
        let facts = reg().kernels.insert(key(k), info);
        crate::runtime::kernels::created(key(k), facts);
    });
}

pub unsafe fn clCreateKernel(program: cl_program, kernel_name: *const c_char, errcode_ret: *mut cl_int) -> cl_kernel {
    let k = api().clCreateKernel(program, kernel_name, errcode_ret);
    if !k.is_null() {
        record_kernel(k, program, cstr(kernel_name).unwrap_or_default(), Vec::new(), false);
    }
    k
}

pub unsafe fn clCreateKernelsInProgram(
    program: cl_program,
    num_kernels: cl_uint,
    kernels: *mut cl_kernel,
    num_kernels_ret: *mut cl_uint,
) -> cl_int {
    let mut n: cl_uint = 0;
    let r = api().clCreateKernelsInProgram(program, num_kernels, kernels, &mut n);
    if !num_kernels_ret.is_null() {
        *num_kernels_ret = n;
    }
    if r == CL_SUCCESS && !kernels.is_null() {
        for i in 0..n.min(num_kernels) as usize {
            let k = *kernels.add(i);
            record_kernel(k, program, crate::cl::info::kernel_name(k), Vec::new(), false);
        }
    }
    r
}

pub unsafe fn clCloneKernel(source_kernel: cl_kernel, errcode_ret: *mut cl_int) -> cl_kernel {
    let k = api().clCloneKernel(source_kernel, errcode_ret);
    if !k.is_null() {
        guard("clCloneKernel", || {
            if let Some(src) = reg().kernels.get(key(source_kernel)) {
                let args = Vec::clone(&src.args.lock());
                let svm = src.svm_seen.load(std::sync::atomic::Ordering::Relaxed);
                record_kernel(k, src.program as cl_program, src.name.clone(), args, svm);
            }
        });
    }
    k
}

/// Whether argument `i` of a kernel has the value `value` of `size` bytes already, which is then
/// no change: a program that sets every argument before every launch keeps its launches
/// repeating through the express lane, and each such call costs clayout one lookup and one
/// comparison. Not where a buffer was created or released since the argument was last set: the
/// same handle may now name a new buffer where a released one was, or none.
///
/// # Safety
/// As for [`registry::arg_value`].
unsafe fn set_again(kernel: cl_kernel, i: cl_uint, size: size_t, value: *const c_void) -> bool {
    reg().kernels.with(key(kernel), |info| info.has(&info.args.lock(), i as usize, size, value)) == Some(true)
}

/// Records argument `i` of a kernel as last set: the count of arguments set with it, and the
/// list as it is now. `mems`: `registry::mems_changed()` read before `v` was classified.
fn set_arg(kernel: cl_kernel, i: cl_uint, v: ArgValue, mems: u64) -> Option<(u64, registry::Args)> {
    reg().kernels.with(key(kernel), |info| record_arg(info, i, v, mems))
}

/// [`set_arg`] in the kernel's record `info`.
fn record_arg(info: &KernelInfo, i: cl_uint, v: ArgValue, mems: u64) -> (u64, registry::Args) {
    let mut shared = info.args.lock();
    let set = change_arg(info, &mut shared, i, v, mems);
    (set, shared.clone())
}

/// Sets argument `i` to `v` in `shared`, the kernel's list under its lock (`info.args`), and
/// returns the count of arguments set with it.
#[inline(always)]
fn change_arg(info: &KernelInfo, shared: &mut registry::Args, i: cl_uint, v: ArgValue, mems: u64) -> u64 {
    use std::sync::atomic::Ordering::{Relaxed, Release};
    let i = i as usize;
    let args = std::sync::Arc::make_mut(shared);
    if args.len() <= i {
        args.resize(i + 1, None);
    }
    args[i] = Some(v);
    let set = info.args_set.load(Relaxed) + 1;
    if let (Some(s), Some(at)) = (info.stamps.get(i), info.set_at.get(i)) {
        s.store(mems, Relaxed);
        at.store(set, Relaxed);
    }
    // Under the list's lock, after the change (`KernelInfo::args_now` reads both under it).
    info.args_set.store(set, Release);
    set
}

// Inlined into the exported entry points, as it was before a lane's record could be handed
// to `set_new` (without it the call costs some 30 instructions more a set on PoCL).
#[inline]
pub unsafe fn clSetKernelArg(
    kernel: cl_kernel,
    arg_index: cl_uint,
    arg_size: size_t,
    arg_value: *const c_void,
) -> cl_int {
    let r = api().clSetKernelArg(kernel, arg_index, arg_size, arg_value);
    if r == CL_SUCCESS {
        guard("clSetKernelArg", || {
            use crate::runtime::lane::{self, Known};
            // The buffer that the kernel object's other lane has there: never a scalar that a
            // lane lets change (`lane::scalar_set`).
            let told = |f: &KernelInfo, h, mems| {
                change_arg(f, &mut f.args.lock(), arg_index, ArgValue::Mem(h), mems);
            };
            match lane::set_again(kernel, arg_index, arg_size, arg_value, told) {
                Known::Same => {}
                Known::Recorded => crate::runtime::kernels::arg_set(key(kernel), arg_index),
                Known::Differs(facts) => set_new(kernel, arg_index, arg_size, arg_value, Some(facts)),
                Known::Unknown => set_new(kernel, arg_index, arg_size, arg_value, None),
            }
        });
    }
    r
}

/// `clSetKernelArg` where no lane of this thread tells the value is the argument's already, nor
/// holds the buffer it names: recorded unless the kernel's record has it. `facts`: the record,
/// from a lane that tells the value differs, which saves its lookups.
///
/// # Safety
/// As for [`registry::arg_value`].
#[inline(never)]
unsafe fn set_new(
    kernel: cl_kernel,
    arg_index: cl_uint,
    arg_size: size_t,
    arg_value: *const c_void,
    facts: Option<std::sync::Arc<KernelInfo>>,
) {
    use crate::runtime::lane;
    // Before anything tells what the value is: a buffer created or released after this read
    // makes the value's stamp stale (`KernelInfo::has`).
    let mems = registry::mems_changed();
    if facts.is_none() && set_again(kernel, arg_index, arg_size, arg_value) {
        return;
    }
    let record = |v| match &facts {
        Some(f) => Some(record_arg(f, arg_index, v, mems)),
        None => set_arg(kernel, arg_index, v, mems),
    };
    if !lane::scalar_set(kernel, arg_index, arg_size, arg_value, record) {
        let v = registry::arg_value(reg(), arg_size, arg_value);
        let change = |f: &KernelInfo| {
            change_arg(f, &mut f.args.lock(), arg_index, v, mems);
        };
        match &facts {
            Some(f) => change(f),
            None => reg().kernels.with(key(kernel), change).unwrap_or_default(),
        }
    }
    crate::runtime::kernels::arg_set(key(kernel), arg_index);
}

/// An SVM pointer replaces whatever the argument held before (a buffer, often).
pub unsafe fn clSetKernelArgSVMPointer(kernel: cl_kernel, arg_index: cl_uint, arg_value: *const c_void) -> cl_int {
    let r = api().clSetKernelArgSVMPointer(kernel, arg_index, arg_value);
    if r == CL_SUCCESS {
        guard("clSetKernelArgSVMPointer", || {
            reg().kernels.with(key(kernel), |k| k.svm_seen.store(true, std::sync::atomic::Ordering::Relaxed));
            set_arg(kernel, arg_index, ArgValue::Svm(arg_value as usize), registry::mems_changed())
        });
    }
    r
}

// ---- buffers --------------------------------------------------------------------------------

fn record_buffer(m: cl_mem, ctx: cl_context, flags: cl_mem_flags, size: size_t, parent: Option<(usize, usize, usize)>) {
    guard("buffer", || {
        let facts = reg().buffers.insert(key(m), BufferInfo { context: key(ctx), size, flags, parent });
        // After the record: a value told before it (`registry::arg_value`) carries an older
        // stamp, which no longer holds (`KernelInfo::has`).
        registry::mem_changed();
        crate::runtime::buffers::created(key(m), facts);
    });
}

pub unsafe fn clCreateBuffer(
    context: cl_context,
    flags: cl_mem_flags,
    size: size_t,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let m = api().clCreateBuffer(context, flags, size, host_ptr, errcode_ret);
    if !m.is_null() {
        record_buffer(m, context, flags, size, None);
    }
    m
}

pub unsafe fn clCreateBufferWithProperties(
    context: cl_context,
    properties: *const cl_mem_properties,
    flags: cl_mem_flags,
    size: size_t,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let m = api().clCreateBufferWithProperties(context, properties, flags, size, host_ptr, errcode_ret);
    if !m.is_null() {
        record_buffer(m, context, flags, size, None);
    }
    m
}

pub unsafe fn clCreateSubBuffer(
    buffer: cl_mem,
    flags: cl_mem_flags,
    buffer_create_type: cl_buffer_create_type,
    buffer_create_info: *const c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let m = api().clCreateSubBuffer(buffer, flags, buffer_create_type, buffer_create_info, errcode_ret);
    if !m.is_null() {
        guard("clCreateSubBuffer", || {
            let region = &*(buffer_create_info as *const cl_buffer_region);
            let parent = reg().buffers.get(key(buffer));
            let ctx = parent.as_ref().map(|p| p.context).unwrap_or(0);
            let parent_flags = parent.as_ref().map(|p| p.flags).unwrap_or(0);
            // A sub-buffer inherits the parent's host-pointer and access flags it does not set.
            let flags = if flags == 0 { parent_flags } else { flags };
            record_buffer(m, ctx as cl_context, flags, region.size, Some((key(buffer), region.origin, region.size)));
        });
    }
    m
}

// ---- extensions -----------------------------------------------------------------------------

pub unsafe fn clGetExtensionFunctionAddress(func_name: *const c_char) -> *mut c_void {
    extensions::handed_out(func_name, api().clGetExtensionFunctionAddress(func_name))
}

pub unsafe fn clGetExtensionFunctionAddressForPlatform(
    platform: cl_platform_id,
    func_name: *const c_char,
) -> *mut c_void {
    extensions::handed_out(func_name, api().clGetExtensionFunctionAddressForPlatform(platform, func_name))
}

// ---- images ---------------------------------------------------------------------------------

/// An image made from a buffer (`image_desc.mem_object`: an `image1d_buffer`, or a 2-D image
/// over a buffer) shows the buffer's bytes: it is recorded as a view of the buffer, like a
/// sub-buffer, so that every command and kernel argument on it brings the buffer to its host
/// layout first and the buffer is never converted under it.
unsafe fn record_image(image: cl_mem, context: cl_context, flags: cl_mem_flags, desc: *const cl_image_desc) {
    if desc.is_null() {
        return;
    }
    let parent = (*desc).buffer;
    if parent.is_null() {
        return;
    }
    guard("image", || {
        // An image over another image shows that image's buffer, if it has one.
        let Some(p) = reg().buffers.get(key(parent)) else { return };
        let (owner, size) = match p.parent {
            Some((grand, _, _)) => (grand, p.size),
            None => (key(parent), p.size),
        };
        record_buffer(image, context, if flags == 0 { p.flags } else { flags }, size, Some((owner, 0, size)));
    });
}

pub unsafe fn clCreateImage(
    context: cl_context,
    flags: cl_mem_flags,
    image_format: *const cl_image_format,
    image_desc: *const cl_image_desc,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let m = api().clCreateImage(context, flags, image_format, image_desc, host_ptr, errcode_ret);
    if !m.is_null() {
        record_image(m, context, flags, image_desc);
    }
    m
}

pub unsafe fn clCreateImageWithProperties(
    context: cl_context,
    properties: *const cl_mem_properties,
    flags: cl_mem_flags,
    image_format: *const cl_image_format,
    image_desc: *const cl_image_desc,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let m =
        api().clCreateImageWithProperties(context, properties, flags, image_format, image_desc, host_ptr, errcode_ret);
    if !m.is_null() {
        record_image(m, context, flags, image_desc);
    }
    m
}

/// Profiling that CLAYOUT_PROFILE turned on behind the application's back stays invisible: the
/// application's events of such a queue answer as they would without it.
pub unsafe fn clGetEventProfilingInfo(
    event: cl_event,
    param_name: cl_profiling_info,
    param_value_size: size_t,
    param_value: *mut c_void,
    param_value_size_ret: *mut size_t,
) -> cl_int {
    let hidden = guard("clGetEventProfilingInfo", || {
        crate::cl::info::event_queue(event)
            .is_some_and(|q| reg().queues.with(key(q), |q| q.profiling_added) == Some(true))
    });
    if hidden == Some(true) {
        return CL_PROFILING_INFO_NOT_AVAILABLE;
    }
    api().clGetEventProfilingInfo(event, param_name, param_value_size, param_value, param_value_size_ret)
}

// ---- reference counts: the application's, without clayout's -------------------------------

/// A reference count just answered at `value`, less what clayout holds (`ours`).
unsafe fn without_ours(r: cl_int, value: *mut c_void, size: size_t, ours: impl FnOnce() -> u32) -> cl_int {
    if r == CL_SUCCESS && !value.is_null() && size >= std::mem::size_of::<cl_uint>() {
        if let Some(ours) = guard("reference count", ours) {
            let v = value as *mut cl_uint;
            // Never below one: the object is alive, since it was asked about.
            *v = (*v).saturating_sub(ours).max(1);
        }
    }
    r
}

pub unsafe fn clGetContextInfo(
    context: cl_context,
    param_name: cl_context_info,
    param_value_size: size_t,
    param_value: *mut c_void,
    param_value_size_ret: *mut size_t,
) -> cl_int {
    let r = api().clGetContextInfo(context, param_name, param_value_size, param_value, param_value_size_ret);
    if param_name != CL_CONTEXT_REFERENCE_COUNT {
        return r;
    }
    without_ours(r, param_value, param_value_size, || crate::runtime::refs::context(context))
}

pub unsafe fn clGetProgramInfo(
    program: cl_program,
    param_name: cl_program_info,
    param_value_size: size_t,
    param_value: *mut c_void,
    param_value_size_ret: *mut size_t,
) -> cl_int {
    let r = api().clGetProgramInfo(program, param_name, param_value_size, param_value, param_value_size_ret);
    if param_name != CL_PROGRAM_REFERENCE_COUNT {
        return r;
    }
    without_ours(r, param_value, param_value_size, || crate::runtime::refs::program(program))
}

/// The application waits for its queue: a launch the cost model asked to time may be timed by
/// this wait rather than by markers of clayout's (`cost::measure::app_finish`).
pub unsafe fn clFinish(command_queue: cl_command_queue) -> cl_int {
    crate::runtime::cost::measure::app_finish(command_queue, || api().clFinish(command_queue))
}

/// The application waits for events: its device time counts in full (`cost::pace`).
pub unsafe fn clWaitForEvents(num_events: cl_uint, event_list: *const cl_event) -> cl_int {
    crate::runtime::cost::pace::app_waited();
    api().clWaitForEvents(num_events, event_list)
}

/// An event's callback, counted while registered (`runtime::callbacks`): the driver may run it
/// on its own thread, where it may call clayout.
pub unsafe fn clSetEventCallback(
    event: cl_event,
    command_exec_callback_type: cl_int,
    pfn_notify: Option<unsafe extern "C" fn(cl_event, cl_int, *mut c_void)>,
    user_data: *mut c_void,
) -> cl_int {
    crate::runtime::callbacks::event(pfn_notify, user_data, |f, data| {
        api().clSetEventCallback(event, command_exec_callback_type, f, data)
    })
}

/// A buffer's destructor callback, counted as an event's (`clSetEventCallback`).
pub unsafe fn clSetMemObjectDestructorCallback(
    memobj: cl_mem,
    pfn_notify: Option<unsafe extern "C" fn(cl_mem, *mut c_void)>,
    user_data: *mut c_void,
) -> cl_int {
    crate::runtime::callbacks::mem_destructor(pfn_notify, user_data, |f, data| {
        api().clSetMemObjectDestructorCallback(memobj, f, data)
    })
}

pub unsafe fn clGetEventInfo(
    event: cl_event,
    param_name: cl_event_info,
    param_value_size: size_t,
    param_value: *mut c_void,
    param_value_size_ret: *mut size_t,
) -> cl_int {
    if param_name == CL_EVENT_COMMAND_EXECUTION_STATUS {
        // Polling for a command is waiting for it (`cost::pace`).
        crate::runtime::cost::pace::app_waited();
    }
    let r = api().clGetEventInfo(event, param_name, param_value_size, param_value, param_value_size_ret);
    if param_name != CL_EVENT_REFERENCE_COUNT {
        return r;
    }
    without_ours(r, param_value, param_value_size, || crate::runtime::refs::event(event))
}
