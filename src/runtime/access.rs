//! Host-visible accesses (reads, writes, maps, copies, fills, migrations, native kernels, and
//! launches of kernels that want a buffer in host layout): each buffer involved is brought to
//! its host layout first, on the command's queue, and the command waits for that.

use super::convert::{self, ensure, OwnedEvent};
use super::order;
use super::state::{BufferState, Need};
use crate::real::api;
use crate::registry::{self, key, BufferInfo, Handle};
use opencl_sys::*;
use parking_lot::lock_api::ArcMutexGuard;
use parking_lot::RawMutex;
use std::sync::Arc;

/// The events a command must wait for: the application's own, then clayout's conversions.
/// It also holds the states of the command's buffers locked: drop it right after the
/// command's enqueue returns (runtime::order says why).
pub struct WaitList {
    events: Vec<cl_event>,
    _owned: Vec<OwnedEvent>,
    _locked: Vec<ArcMutexGuard<RawMutex, BufferState>>,
}

impl WaitList {
    pub fn len(&self) -> cl_uint {
        self.events.len() as cl_uint
    }
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
    pub fn ptr(&self) -> *const cl_event {
        if self.events.is_empty() {
            std::ptr::null()
        } else {
            self.events.as_ptr()
        }
    }
}

/// The application's wait list as a slice, or None when it is malformed (then the real library
/// must see it untouched, to give its own error).
pub unsafe fn user_wait<'a>(n: cl_uint, list: *const cl_event) -> Option<&'a [cl_event]> {
    match (n, list.is_null()) {
        (0, true) => Some(&[]),
        (0, false) | (_, true) => None,
        (n, false) => Some(std::slice::from_raw_parts(list, n as usize)),
    }
}

/// One buffer a command touches, and what it needs.
#[derive(Clone, Copy, Debug)]
pub struct BufferNeed {
    pub mem: cl_mem,
    pub need: Need,
    /// The command cannot run correctly without this need met (a kernel written for the
    /// device layout): then a failed device conversion falls back to the host.
    pub must: bool,
}

/// Brings every buffer of `needs` to what it needs before a command on `queue`; returns the
/// complete wait list for that command, or the OpenCL error the command must fail with.
pub fn prepare(queue: cl_command_queue, needs: &[BufferNeed], user: &[cl_event]) -> Result<WaitList, cl_int> {
    try_prepare(queue, needs, user).map_err(|f| {
        crate::log::error(&format!(
            "{}: cannot bring it into the layout the command needs ({}); the command fails with CL_OUT_OF_RESOURCES",
            f.object, f.reason
        ));
        crate::stats::fallback(&f.object, &f.reason);
        CL_OUT_OF_RESOURCES
    })
}

/// Why `prepare` could not meet a need.
pub struct NotMet {
    pub object: String,
    pub reason: String,
}

/// `prepare` without the verdict: the caller decides whether a need not met fails the command
/// (it does for the application's kernel) or only changes which kernel runs (a rewritten copy).
pub fn try_prepare(queue: cl_command_queue, needs: &[BufferNeed], user: &[cl_event]) -> Result<WaitList, NotMet> {
    // The buffer whose bytes each need is about: a sub-buffer shows its parent's bytes, so the
    // parent must be in host layout.
    let mut targets: Vec<(Handle, Arc<BufferInfo>, Need, bool)> = Vec::new();
    for &BufferNeed { mem, need, must } in needs {
        let target = match need {
            // A sub-buffer asked for a device layout stays itself: `ensure` refuses it.
            Need::Device(_) => registry::get().buffers.get(key(mem)).map(|b| (key(mem), b, need)),
            Need::Host | Need::HostOverwrite => {
                convert::whose_bytes(mem).map(|(h, b)| (h, b, if h == key(mem) { need } else { Need::Host }))
            }
        };
        if let Some((h, info, need)) = target {
            targets.push((h, info, need, must));
        }
    }
    // Every buffer locked once, in handle order, so that two commands never wait on each other.
    let mut order: Vec<usize> = (0..targets.len()).collect();
    order.sort_by_key(|&i| targets[i].0);
    order.dedup_by_key(|i| targets[*i].0);
    let mut locked: Vec<(Handle, ArcMutexGuard<RawMutex, BufferState>)> =
        order.iter().map(|&i| (targets[i].0, targets[i].1.state.lock_arc())).collect();
    let mut owned = Vec::new();
    for (h, info, need, must) in &targets {
        let st = &mut locked.iter_mut().find(|(k, _)| k == h).expect("every target is locked").1;
        match ensure(queue, *h, info, st, *need, *must, user) {
            Ok(ev) => owned.extend(ev),
            Err(f) => return Err(NotMet { object: format!("buffer {h:#x}"), reason: f.reason }),
        }
    }
    let mut events = user.to_vec();
    events.extend(owned.iter().map(|e| e.0));
    Ok(WaitList { events, _owned: owned, _locked: locked.into_iter().map(|(_, g)| g).collect() })
}

/// Why `needs` cannot all hold at once, if they cannot: one buffer passed for two arguments
/// that want it in different layouts.
pub fn conflicting(needs: &[BufferNeed]) -> Option<String> {
    let layout = |n: &Need| match n {
        Need::Device(d) => Some(*d),
        _ => None,
    };
    // A sub-buffer stands for its parent, which must then be in host layout.
    let whose = |m: cl_mem| convert::whose_bytes(m).map(|(h, _)| h).unwrap_or(key(m));
    for (i, a) in needs.iter().enumerate() {
        if needs[i + 1..].iter().any(|b| whose(b.mem) == whose(a.mem) && layout(&a.need) != layout(&b.need)) {
            return Some(format!(
                "buffer {:#x} is passed for two arguments that need it in different layouts",
                whose(a.mem)
            ));
        }
    }
    None
}

/// Runs `call` with the wait list `prepare` gives for `needs`; before any annotated program
/// exists, or when the application's wait list is malformed, calls it untouched.
pub unsafe fn host_access<R>(
    queue: cl_command_queue,
    needs: &[(cl_mem, Need)],
    n: cl_uint,
    list: *const cl_event,
    call: impl FnOnce(cl_uint, *const cl_event) -> R,
    fail: impl FnOnce(cl_int) -> R,
) -> R {
    let call = |n, l, _, _| call(n, l);
    let b = Blocking { blocking: CL_FALSE, event: std::ptr::null_mut(), call, enqueued: |_| true, failed: fail };
    blocking_host_access(queue, needs, n, list, b)
}

/// What a blocking read, write or map needs to be run in two halves: `call` takes the blocking
/// flag and event pointer to pass; `enqueued` says whether its result is a success; `failed`
/// makes the result of a failed preparation or wait.
pub struct Blocking<R, C: FnOnce(cl_uint, *const cl_event, cl_bool, *mut cl_event) -> R, F: FnOnce(cl_int) -> R> {
    pub blocking: cl_bool,
    pub event: *mut cl_event,
    pub call: C,
    pub enqueued: fn(&R) -> bool,
    pub failed: F,
}

/// `host_access` for a command that may block: on the ordered path it is enqueued without
/// blocking, the buffers' locks are released, and only then is it waited for, so that no lock
/// is held while waiting (another thread may have to act before it completes).
pub unsafe fn blocking_host_access<
    R,
    C: FnOnce(cl_uint, *const cl_event, cl_bool, *mut cl_event) -> R,
    F: FnOnce(cl_int) -> R,
>(
    queue: cl_command_queue,
    needs: &[(cl_mem, Need)],
    n: cl_uint,
    list: *const cl_event,
    b: Blocking<R, C, F>,
) -> R {
    if let Some(_fast) = order::fast() {
        return (b.call)(n, list, b.blocking, b.event);
    }
    let Some(user) = user_wait(n, list) else { return (b.call)(n, list, b.blocking, b.event) };
    // The host sees these buffers now: the cost model's count of launches on them starts over.
    for &(mem, _) in needs {
        if let Some((_, info)) = convert::whose_bytes(mem) {
            info.state.lock().reuse = Default::default();
        }
    }
    let w = match ordered_prepare(queue, needs, user) {
        Ok(w) => w,
        Err(e) => return (b.failed)(e),
    };
    if b.blocking == CL_FALSE {
        return (b.call)(w.len(), w.ptr(), CL_FALSE, b.event);
    }
    let mut own: cl_event = std::ptr::null_mut();
    let event = if b.event.is_null() { &mut own as *mut cl_event } else { b.event };
    let r = (b.call)(w.len(), w.ptr(), CL_FALSE, event);
    drop(w);
    if !(b.enqueued)(&r) {
        return r;
    }
    let done = if crate::fault::inject("wait") { CL_OUT_OF_HOST_MEMORY } else { api().clWaitForEvents(1, event) };
    let outcome = if done == CL_SUCCESS { Ok(()) } else { after_failed_wait(queue, *event) };
    if !own.is_null() {
        api().clReleaseEvent(own);
    }
    match outcome {
        Ok(()) => r,
        Err(code) => (b.failed)(code),
    }
}

/// The wait for a blocking command failed: if the command itself failed, what the blocking call
/// would have reported; otherwise the wait is finished another way, on its queue.
unsafe fn after_failed_wait(queue: cl_command_queue, event: cl_event) -> Result<(), cl_int> {
    if convert::event_status(event).is_some_and(|s| s < 0) {
        return Err(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
    }
    crate::log::debug("waiting for a blocking command failed; finishing its queue instead");
    match api().clFinish(queue) {
        CL_SUCCESS => Ok(()),
        e => Err(e),
    }
}

/// `prepare` for a host access, under a panic guard: an internal failure fails the command,
/// which may be about to read bytes still in a device layout, and an error beats wrong data.
fn ordered_prepare(queue: cl_command_queue, needs: &[(cl_mem, Need)], user: &[cl_event]) -> Result<WaitList, cl_int> {
    let needs: Vec<BufferNeed> = needs.iter().map(|&(mem, need)| BufferNeed { mem, need, must: false }).collect();
    crate::guard("host access", || prepare(queue, &needs, user)).unwrap_or(Err(CL_OUT_OF_RESOURCES))
}

/// Whether `[offset, offset+size)` covers the whole of `mem` (then its old bytes do not matter).
pub fn covers_whole(mem: cl_mem, offset: usize, size: usize) -> bool {
    offset == 0 && registry::get().buffers.get(key(mem)).map(|b| b.size == size).unwrap_or(false)
}

/// `Need::HostOverwrite` when the range covers the whole buffer, else `Need::Host`.
pub fn write_need(mem: cl_mem, offset: usize, size: usize) -> Need {
    if covers_whole(mem, offset, size) {
        Need::HostOverwrite
    } else {
        Need::Host
    }
}
