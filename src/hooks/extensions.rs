//! Extension entry points the application asks for by name. Those that can touch buffers stop
//! clayout's conversions for the rest of the process (`runtime::stop`); those of
//! `cl_khr_command_buffer` that run recorded commands are handed out wrapped, so that the
//! buffers already in a device layout come back to the host layout before a recorded command
//! can read them.
#![allow(non_snake_case)]

use super::{cstr, reg};
use crate::guard;
use crate::registry::key;
use crate::runtime::access::{host_access, HostUse};
use libc::{c_char, c_void};
use once_cell::sync::OnceCell;
use opencl_sys::*;
use parking_lot::Mutex;
use std::collections::HashMap;

type CommandBuffer = *mut c_void;
type CreateCommandBuffer =
    unsafe extern "C" fn(cl_uint, *const cl_command_queue, *const cl_ulong, *mut cl_int) -> CommandBuffer;
type EnqueueCommandBuffer = unsafe extern "C" fn(
    cl_uint,
    *mut cl_command_queue,
    CommandBuffer,
    cl_uint,
    *const cl_event,
    *mut cl_event,
) -> cl_int;

/// The real entry points behind the wrappers handed out (the first the library gave).
static REAL_CREATE: OnceCell<usize> = OnceCell::new();
static REAL_ENQUEUE: OnceCell<usize> = OnceCell::new();
/// The queue each command buffer was created for, for an enqueue that names none.
static QUEUES: Mutex<Option<HashMap<usize, usize>>> = Mutex::new(None);

unsafe extern "C" fn create_command_buffer(
    num_queues: cl_uint,
    queues: *const cl_command_queue,
    properties: *const cl_ulong,
    errcode_ret: *mut cl_int,
) -> CommandBuffer {
    // SAFETY: the library handed this address out for clCreateCommandBufferKHR, whose C
    // signature is this one; the wrapper is handed out only once the address is set.
    let real: CreateCommandBuffer =
        std::mem::transmute::<usize, CreateCommandBuffer>(*REAL_CREATE.get().expect("set before handed out"));
    let cb = real(num_queues, queues, properties, errcode_ret);
    if !cb.is_null() && num_queues > 0 && !queues.is_null() {
        let q = *queues;
        guard("clCreateCommandBufferKHR", || {
            QUEUES.lock().get_or_insert_with(HashMap::new).insert(cb as usize, q as usize);
        });
    }
    cb
}

unsafe extern "C" fn enqueue_command_buffer(
    num_queues: cl_uint,
    queues: *mut cl_command_queue,
    command_buffer: CommandBuffer,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    // SAFETY: as above, for clEnqueueCommandBufferKHR.
    let real: EnqueueCommandBuffer =
        std::mem::transmute::<usize, EnqueueCommandBuffer>(*REAL_ENQUEUE.get().expect("set before handed out"));
    let call = |n, l, ev| real(num_queues, queues, command_buffer, n, l, ev);
    let queue = if num_queues > 0 && !queues.is_null() {
        Some(*queues)
    } else {
        guard("clEnqueueCommandBufferKHR", || {
            QUEUES.lock().as_ref().and_then(|m| m.get(&(command_buffer as usize))).map(|q| *q as cl_command_queue)
        })
        .flatten()
    };
    let Some(queue) = queue else { return call(n, list, event) };
    // Every buffer of the queue's context still in a device layout comes back: the recorded
    // commands may read any of them.
    let needs: Vec<(cl_mem, HostUse)> = guard("clEnqueueCommandBufferKHR", || {
        let context = reg().queues.get(key(queue)).map(|q| q.context).unwrap_or(0);
        crate::runtime::buffers::converted_in(context).into_iter().map(|h| (h as cl_mem, HostUse::Host)).collect()
    })
    .unwrap_or_default();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| host_access(queue, &needs, n, list, event, call))) {
        Ok(r) => r,
        Err(_) => {
            crate::log::panic_fallback("clEnqueueCommandBufferKHR");
            real(num_queues, queues, command_buffer, n, list, event)
        }
    }
}

/// What to hand out for extension entry point `name`, which the library gave as `p`.
pub fn handed_out(name: *const c_char, p: *mut c_void) -> *mut c_void {
    guard("extension lookup", || {
        let name = unsafe { cstr(name) }.unwrap_or_default();
        if p.is_null() {
            crate::log::debug_with(|| format!("extension entry point {name} not available"));
            return p;
        }
        if crate::runtime::stop::extension_touches_buffers(&name) {
            crate::runtime::stop::stop_converting(&format!(
                "the application uses the extension entry point {name}, which can read or write buffers behind clayout's back"
            ));
        } else {
            crate::log::debug_with(|| format!("extension entry point {name} handed out: calls through it are not observed"));
        }
        let wrap = |slot: &OnceCell<usize>, ours: usize| {
            // One real entry point behind each wrapper: another library's is handed out as is.
            if *slot.get_or_init(|| p as usize) == p as usize {
                ours as *mut c_void
            } else {
                p
            }
        };
        match name.as_str() {
            "clCreateCommandBufferKHR" => wrap(&REAL_CREATE, create_command_buffer as *const () as usize),
            "clEnqueueCommandBufferKHR" => wrap(&REAL_ENQUEUE, enqueue_command_buffer as *const () as usize),
            _ => p,
        }
    })
    .unwrap_or(p)
}
