//! Host-visible accesses (reads, writes, maps, copies, fills, migrations, native kernels, and
//! launches of kernels that want a buffer in host layout): each buffer involved is brought to
//! its host layout first, on the command's queue, and the command waits for that.

use super::convert::{self, ensure, OwnedEvent};
use super::state::Need;
use crate::registry::{self, key};
use opencl_sys::*;

/// The events a command must wait for: the application's own, then clayout's conversions.
pub struct WaitList {
    events: Vec<cl_event>,
    _owned: Vec<OwnedEvent>,
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
        crate::log::error(&format!("{}: cannot bring it into the layout the command needs ({}); the command fails with CL_OUT_OF_RESOURCES", f.object, f.reason));
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
    let mut owned = Vec::new();
    for &BufferNeed { mem, need, must } in needs {
        let Some(mut info) = registry::get().buffers.get(key(mem)) else { continue };
        let (mut mem, mut need) = (mem, need);
        if let (Some((parent, _, _)), Need::Host | Need::HostOverwrite) = (info.parent, need) {
            // A sub-buffer shows its parent's bytes: the parent must be in host layout.
            let Some(p) = registry::get().buffers.get(parent) else { continue };
            (info, mem, need) = (p, parent as cl_mem, Need::Host);
        }
        match ensure(queue, key(mem), &info, need, must, user) {
            Ok(ev) => owned.extend(ev),
            Err(f) => return Err(NotMet { object: format!("buffer {:#x}", key(mem)), reason: f.reason }),
        }
    }
    let mut events = user.to_vec();
    events.extend(owned.iter().map(|e| e.0));
    Ok(WaitList { events, _owned: owned })
}

/// Why `needs` cannot all hold at once, if they cannot: one buffer passed for two arguments
/// that want it in different layouts.
pub fn conflicting(needs: &[BufferNeed]) -> Option<String> {
    let layout = |n: &Need| match n {
        Need::Device(d) => Some(*d),
        _ => None,
    };
    // A sub-buffer stands for its parent, which must then be in host layout.
    let whose = |m: cl_mem| registry::get().buffers.get(key(m)).and_then(|b| b.parent.map(|p| p.0)).unwrap_or(key(m));
    for (i, a) in needs.iter().enumerate() {
        if needs[i + 1..].iter().any(|b| whose(b.mem) == whose(a.mem) && layout(&a.need) != layout(&b.need)) {
            return Some(format!("buffer {:#x} is passed for two arguments that need it in different layouts", whose(a.mem)));
        }
    }
    None
}

/// Runs `call` with the wait list `prepare` gives for `needs`; when no buffer anywhere is in a
/// device layout, or the application's wait list is malformed, calls it untouched.
pub unsafe fn host_access<R>(
    queue: cl_command_queue,
    needs: &[(cl_mem, Need)],
    n: cl_uint,
    list: *const cl_event,
    call: impl FnOnce(cl_uint, *const cl_event) -> R,
    fail: impl FnOnce(cl_int) -> R,
) -> R {
    if !convert::any_in_device_layout() {
        return call(n, list);
    }
    let Some(user) = user_wait(n, list) else { return call(n, list) };
    // An internal failure here (None) fails the command: it may be about to read bytes still
    // in a device layout, and an error beats wrong data.
    let needs: Vec<BufferNeed> = needs.iter().map(|&(mem, need)| BufferNeed { mem, need, must: false }).collect();
    match crate::guard("host access", || prepare(queue, &needs, user)) {
        Some(Ok(w)) => call(w.len(), w.ptr()),
        Some(Err(e)) => fail(e),
        None => fail(CL_OUT_OF_RESOURCES),
    }
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
