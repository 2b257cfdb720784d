//! Host-visible accesses (reads, writes, maps, copies, fills, migrations, native kernels, and
//! launches of kernels that want a buffer in host layout): each buffer involved is brought to
//! its host layout first, on the command's queue, and the command waits for that.

use super::buffers::{self, Buffer, BufferState};
use super::convert::{self, ensure};
use super::order;
use super::state::{Current, Need};
use crate::cl::{cmd, info::event_status, Event};
use crate::registry::{key, Handle};
use opencl_sys::*;
use parking_lot::lock_api::ArcMutexGuard;
use parking_lot::RawMutex;
use smallvec::SmallVec;
use std::sync::Arc;

/// The buffers of one command, most often a handful: kept inline.
pub type Few<T> = SmallVec<[T; 4]>;

/// The events a command must wait for: the application's own, then clayout's conversions.
/// It also holds the states of the command's buffers locked: drop it right after the
/// command's enqueue returns (runtime::order says why), or hand it to [`WaitList::failed`]
/// when the enqueue failed.
pub struct WaitList {
    events: Vec<cl_event>,
    _owned: Vec<Event>,
    locked: Few<ArcMutexGuard<RawMutex, BufferState>>,
    /// Whether the command, waiting for this list on its queue, is free (`order`).
    free: bool,
    /// States changed without a conversion for a command that overwrites the whole buffer:
    /// (index in `locked`, state before). Should the command not be enqueued after all, the old
    /// bytes are still there, in the old layout.
    overwritten: Vec<(usize, Current)>,
    /// States changed for a command that converts its buffers as it runs (`BufferNeed::fuse`):
    /// (index in `locked`, the buffer, state before). Undone like `overwritten` should the
    /// command not be enqueued; once it is, it stands for their conversion.
    fused: Vec<(usize, Arc<Buffer>, Current)>,
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

    /// The command was not enqueued: its buffers' bytes are as they were before it.
    pub fn failed(mut self) {
        undo(&mut self.locked, &mut self.overwritten, &mut self.fused);
    }

    /// The command was enqueued on `queue` with event `event`: it is a user of its buffers until
    /// it completes (`order`). Releases the buffers' locks.
    pub fn enqueued(self, queue: cl_command_queue, event: cl_event) {
        let in_order = order::in_order(queue);
        self.recorded(queue, in_order, event, false);
    }

    /// [`Self::enqueued`], with event `raw` (null: none), as a member of the in-order queue's
    /// open stretch (`joins`, `order::Stretch`) or as a user of its own.
    fn recorded(mut self, queue: cl_command_queue, in_order: bool, raw: cl_event, joins: bool) {
        // Whatever the command does, the buffers' bytes are the application's from now on.
        for st in &mut self.locked {
            st.defined = true;
        }
        order::noted(queue, in_order, false, raw, self.free);
        for (i, buffer, before) in std::mem::take(&mut self.fused) {
            convert::fused_enqueued(queue, &buffer, &mut self.locked[i], before, raw);
        }
        for st in &mut self.locked {
            if joins {
                st.users.record_without_event(queue);
            } else if !raw.is_null() {
                st.users.record(queue, in_order, raw, self.free);
            }
        }
    }

    /// Enqueues a command with this wait list: `call(n, list, event)` with the event pointer to
    /// pass (the application's, or clayout's own when the application asked for none, which it
    /// keeps to order later conversions; or none, for a free launch on an in-order queue);
    /// `enqueued` says whether the call succeeded. The buffers' locks are released on return.
    pub fn run<R>(
        self,
        queue: cl_command_queue,
        event: *mut cl_event,
        call: impl FnOnce(cl_uint, *const cl_event, *mut cl_event) -> R,
        enqueued: impl Fn(&R) -> bool,
    ) -> R {
        // A free command on an in-order queue joins the queue's open stretch: a marker stands
        // for it if need be (`order::Stretch`), and it gets no event where the application asked
        // none. One that asked its event joins too, so that a loop that asks one of every launch
        // repeats its launches as one that asks none (`transparent::repeat`): a marker enqueued
        // after it on its in-order queue waits for it as its event would. A fused one's event
        // stands for its buffers' conversion.
        let in_order = order::in_order(queue);
        let joins = self.free && self.fused.is_empty() && in_order;
        let mut own: cl_event = std::ptr::null_mut();
        let ev = match (event.is_null(), joins) {
            (false, _) => event,
            (true, true) => std::ptr::null_mut(),
            (true, false) => &mut own as *mut cl_event,
        };
        let r = call(self.len(), self.ptr(), ev);
        if !enqueued(&r) {
            self.failed();
            return r;
        }
        // SAFETY: the call succeeded, so it wrote its event through `ev` unless `ev` is null.
        let raw = if ev.is_null() { std::ptr::null_mut() } else { unsafe { *ev } };
        self.recorded(queue, in_order, raw, joins);
        drop(Event::from_raw(own));
        r
    }
}

/// One buffer a command touches, and what it needs.
#[derive(Clone, Debug)]
pub struct BufferNeed {
    pub buffer: Arc<Buffer>,
    /// The kernel argument the buffer is bound to, for a launch.
    pub arg: Option<usize>,
    pub need: Need,
    /// The command cannot run correctly without this need met (a kernel written for the
    /// device layout): then a failed device conversion falls back to the host.
    pub must: bool,
    /// The command overwrites the device layout's every structure before reading any (an
    /// `out` annotation) and is sure to run once enqueued: a `Need::Device` then takes the
    /// buffer's bytes as they are (`convert::ensure`). Ignored for any other need.
    pub overwrite: bool,
    /// The command converts the buffer from its host layout to the `Need::Device` layout itself
    /// as it runs, and is sure to run once enqueued (a staged copy fused with the conversion:
    /// `convert::fuse`). The need is not met, and nothing converted, unless the buffer is in
    /// host layout with defined bytes. Ignored for any other need.
    pub fuse: bool,
}

/// Brings every buffer of `needs` to what it needs before a command on `queue`; returns the
/// complete wait list for that command, or the OpenCL error the command must fail with.
pub fn prepare(queue: cl_command_queue, needs: &[BufferNeed], user: &[cl_event]) -> Result<WaitList, cl_int> {
    prepare_as(queue, needs, Devices::AsNeeded, user)
}

/// `prepare`, with the needs for a device layout taken as `devices` says (`try_prepare_as`).
pub fn prepare_as(
    queue: cl_command_queue,
    needs: &[BufferNeed],
    devices: Devices,
    user: &[cl_event],
) -> Result<WaitList, cl_int> {
    try_prepare_as(queue, needs, devices, user).map_err(|f| {
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
    try_prepare_as(queue, needs, Devices::AsNeeded, user)
}

/// What becomes of the needs for a device layout in a command's needs (`try_prepare_as`): the
/// forms of a rewritten kernel that run on host-layout buffers take the kernel's needs as they
/// are, without a copy of them made at every launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Devices {
    AsNeeded,
    /// Each buffer in host layout instead (nothing the command cannot run without).
    InHost,
    /// Each converted by the command itself as it runs (`BufferNeed::fuse`).
    Fused,
}

/// `try_prepare`, with the needs for a device layout taken as `devices` says.
pub fn try_prepare_as(
    queue: cl_command_queue,
    needs: &[BufferNeed],
    devices: Devices,
    user: &[cl_event],
) -> Result<WaitList, NotMet> {
    // The buffer whose bytes each need is about: a sub-buffer shows its parent's bytes, so the
    // parent must be in host layout (a sub-buffer asked for a device layout stays itself:
    // `ensure` refuses it).
    let targets: Few<(&Arc<Buffer>, Need, bool, bool, bool)> = needs
        .iter()
        .map(|n| {
            let device = matches!(n.need, Need::Device(_));
            match devices {
                Devices::AsNeeded => (n.need, n.must, n.overwrite, n.fuse),
                Devices::InHost => (if device { Need::Host } else { n.need }, false, n.overwrite, false),
                Devices::Fused => (n.need, n.must, n.overwrite, device),
            }
        })
        .zip(needs)
        .map(|((need, must, overwrite, fuse), n)| match (need, &n.buffer.parent) {
            (Need::Host | Need::HostOverwrite, Some(parent)) => (parent, Need::Host, must, false, false),
            _ => (&n.buffer, need, must, overwrite, fuse),
        })
        .collect();
    // Every buffer locked once, in handle order, so that two commands never wait on each other.
    let mut handles: Few<Handle> = targets.iter().map(|t| t.0.handle).collect();
    handles.sort_unstable();
    handles.dedup();
    let mut locked: Few<ArcMutexGuard<RawMutex, BufferState>> = handles
        .iter()
        .map(|h| targets.iter().find(|t| t.0.handle == *h).expect("a target's handle").0.lock_arc())
        .collect();
    let mut owned = Vec::new();
    let mut overwritten = Vec::new();
    let mut fused = Vec::new();
    for (buffer, need, must, overwrite, fuse) in &targets {
        let i = handles.binary_search(&buffer.handle).expect("every target is locked");
        let st = &mut locked[i];
        let before = st.current;
        let met = match (*fuse, *need) {
            (true, Need::Device(d)) => {
                convert::fuse(queue, buffer, st, d, user).inspect(|_| fused.push((i, Arc::clone(buffer), before)))
            }
            _ => ensure(queue, buffer, st, *need, *must, *overwrite, user).map(|ev| ev.into_iter().collect()),
        };
        match met {
            Ok(evs) => owned.extend(evs),
            Err(f) => {
                // The command will not run: the states changed for it so far go back.
                undo(&mut locked, &mut overwritten, &mut fused);
                return Err(NotMet { object: format!("buffer {:#x}", buffer.handle), reason: f.reason });
            }
        }
        let skipped = *overwrite && !*fuse && super::state::overwrite_skips(before, *need);
        if (*need == Need::HostOverwrite || skipped) && before != st.current {
            overwritten.push((i, before));
        }
    }
    let mut events = user.to_vec();
    events.extend(owned.iter().map(Event::raw));
    let free = order::free(queue, &events);
    if !free {
        order::close(queue);
    }
    Ok(WaitList { events, _owned: owned, locked, free, overwritten, fused })
}

/// Puts back the states a command changed without a conversion, when it is not enqueued.
fn undo(
    locked: &mut [ArcMutexGuard<RawMutex, BufferState>],
    overwritten: &mut Vec<(usize, Current)>,
    fused: &mut Vec<(usize, Arc<Buffer>, Current)>,
) {
    for (i, before) in overwritten.drain(..) {
        locked[i].current = before;
    }
    for (i, _, before) in fused.drain(..) {
        locked[i].current = before;
    }
}

/// What to do with a command whose queue belongs to another context than one of its buffers.
pub enum Foreign {
    /// Forward the call untouched: those buffers hold host-layout bytes, so the real library's
    /// answer (CL_INVALID_CONTEXT by the specification, success from a lenient one) is what the
    /// application would get without clayout.
    Forward,
    /// Fail it with the specification's CL_INVALID_CONTEXT: a buffer is in a device layout, a
    /// conversion cannot run on a queue of another context, and a lenient library would expose
    /// device-layout bytes.
    Fail,
}

/// Whether `needs` hold a buffer of another context than `queue`'s, and what to do then.
pub fn foreign_context(queue: cl_command_queue, needs: &[BufferNeed]) -> Option<Foreign> {
    let context = crate::registry::get().queues.with(key(queue), |q| q.context)?;
    let foreign: Vec<&BufferNeed> = needs.iter().filter(|n| n.buffer.facts.context != context).collect();
    if foreign.is_empty() {
        return None;
    }
    let host = |n: &&BufferNeed| {
        let owner = n.buffer.bytes_owner();
        let mut st = owner.lock();
        st.settle(owner);
        st.current == Current::Host && !matches!(n.need, Need::Device(_))
    };
    Some(if foreign.iter().all(host) { Foreign::Forward } else { Foreign::Fail })
}

/// Why `needs` cannot all hold at once, if they cannot: one buffer passed for two arguments
/// that want it in different layouts.
pub fn conflicting(needs: &[BufferNeed]) -> Option<String> {
    let layout = |n: &Need| match n {
        Need::Device(d) => Some(*d),
        _ => None,
    };
    // A sub-buffer stands for its parent, which must then be in host layout.
    let whose = |n: &BufferNeed| n.buffer.bytes_owner().handle;
    for (i, a) in needs.iter().enumerate() {
        if needs[i + 1..].iter().any(|b| whose(b) == whose(a) && layout(&a.need) != layout(&b.need)) {
            return Some(format!(
                "buffer {:#x} is passed for two arguments that need it in different layouts",
                whose(a)
            ));
        }
    }
    None
}

/// What a host-visible command does to one buffer's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostUse {
    /// Reads them, or writes part of them: they must be in host layout.
    Host,
    /// Writes `size` bytes at `offset`: a write of the whole buffer needs no conversion.
    Write { offset: usize, size: usize },
}

impl HostUse {
    /// What the command needs of `buffer`. An overwrite of the whole buffer needs no
    /// conversion only when the command is sure to run once enqueued: a command whose wait list
    /// is not complete yet may never run (a user event set to a failure), and then the old
    /// bytes stay, in their old layout.
    fn need(self, buffer: &Buffer, user: &[cl_event]) -> Need {
        let whole = match self {
            HostUse::Write { offset: 0, size } => size == buffer.facts.size && buffer.parent.is_none(),
            _ => false,
        };
        if whole && crate::cl::info::all_complete(user) {
            Need::HostOverwrite
        } else {
            Need::Host
        }
    }
}

/// Runs `call(n, list, event)` with the wait list `prepare` gives for `needs` and the event
/// pointer to pass; before any annotated program exists, or when the application's wait list
/// is malformed, calls it untouched.
///
/// # Safety
/// As for the enqueue call `call` makes.
pub unsafe fn host_access(
    queue: cl_command_queue,
    needs: &[(cl_mem, HostUse)],
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
    call: impl FnOnce(cl_uint, *const cl_event, *mut cl_event) -> cl_int,
) -> cl_int {
    let call = |n, l, _, ev| call(n, l, ev);
    let b = Blocking { blocking: CL_FALSE, event, call, enqueued: |r: &cl_int| *r == CL_SUCCESS, failed: |e| e };
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

/// `host_access` for a command that may block: on the ordered path, unless everything it waits
/// for is free (`order::free`: it completes without the application's help), it is enqueued
/// without blocking, the buffers' locks are released, and only then is it waited for, so that
/// no lock is held while waiting (another thread may have to act before it completes).
///
/// # Safety
/// As for the enqueue call `b.call` makes.
pub unsafe fn blocking_host_access<
    R,
    C: FnOnce(cl_uint, *const cl_event, cl_bool, *mut cl_event) -> R,
    F: FnOnce(cl_int) -> R,
>(
    queue: cl_command_queue,
    needs: &[(cl_mem, HostUse)],
    n: cl_uint,
    list: *const cl_event,
    b: Blocking<R, C, F>,
) -> R {
    if b.blocking != CL_FALSE {
        super::cost::pace::app_waited();
    }
    if let Some(fast) = order::fast(n) {
        if super::untracked::counting() {
            // A declined run left untracked counts its epochs: the host sees these buffers.
            crate::guard("untracked access", || super::untracked::host_sees(needs.iter().map(|n| n.0)));
        }
        if b.blocking == CL_FALSE {
            return (b.call)(n, list, b.blocking, b.event);
        }
        if n == 0 && order::fast_free() && !crate::fault::inject("wait") {
            if let Some(_quiet) = super::callbacks::quiet() {
                // Blocking on work that completes without the application's help (nothing
                // enqueued so far had a wait list, no callback of its can run meanwhile): the
                // call as the application made it. The first annotated program's creation,
                // which waits for the fast path's calls in flight, then waits no longer than
                // the device takes.
                return (b.call)(n, list, b.blocking, b.event);
            }
        }
        // Enqueued within the fast path's window, waited for outside it: no call that may wait
        // for the application stays in flight while it blocks (`order::annotated_program_created`
        // waits for those in flight).
        let mut own: cl_event = std::ptr::null_mut();
        let event = if b.event.is_null() { &mut own as *mut cl_event } else { b.event };
        let r = (b.call)(n, list, CL_FALSE, event);
        drop(fast);
        if !(b.enqueued)(&r) {
            return r;
        }
        return finish_blocking(queue, r, *event, Event::from_raw(own), b.failed);
    }
    let Some(user) = order::user_wait(n, list) else { return (b.call)(n, list, b.blocking, b.event) };
    if !crate::registry::get().queues.contains(key(queue)) {
        // Not a queue of the application's: the real library gives the call its error, and
        // nothing may be enqueued on it first.
        return (b.call)(n, list, b.blocking, b.event);
    }
    let needs: Vec<BufferNeed> = needs
        .iter()
        .filter_map(|&(mem, usage)| {
            let buffer = buffers::get(key(mem))?;
            Some(BufferNeed {
                need: usage.need(&buffer, user),
                buffer,
                arg: None,
                must: false,
                overwrite: false,
                fuse: false,
            })
        })
        .collect();
    match foreign_context(queue, &needs) {
        Some(Foreign::Forward) => return (b.call)(n, list, b.blocking, b.event),
        Some(Foreign::Fail) => return (b.failed)(CL_INVALID_CONTEXT),
        None => {}
    }
    // The host sees these buffers now: the cost model's count of launches on them starts over.
    for n in &needs {
        n.buffer.bytes_owner().lock().cost().host_access();
    }
    let w = match ordered_prepare(queue, &needs, user) {
        Ok(w) => w,
        Err(e) => return (b.failed)(e),
    };
    let holds = b.blocking != CL_FALSE && w.free && !crate::fault::inject("wait");
    if let Some(_quiet) = holds.then(super::callbacks::quiet).flatten() {
        // Everything the command waits for completes without the application's help, and no
        // callback of its can run on the driver's thread meanwhile: the blocking call itself,
        // with the buffers' locks held until it returns, cannot wait on another thread.
        // Enqueued non-blocking and then waited for, a small read cost 35-40 us more on the
        // H100 (bench/blockwait.c).
        let r = (b.call)(w.len(), w.ptr(), CL_TRUE, b.event);
        if !(b.enqueued)(&r) {
            w.failed();
            return r;
        }
        // SAFETY: the call succeeded, so it wrote the application's event, if it asked one.
        let event = if b.event.is_null() { std::ptr::null_mut() } else { unsafe { *b.event } };
        w.enqueued(queue, event);
        return r;
    }
    let mut own: cl_event = std::ptr::null_mut();
    let event = if b.event.is_null() { &mut own as *mut cl_event } else { b.event };
    let r = (b.call)(w.len(), w.ptr(), CL_FALSE, event);
    if !(b.enqueued)(&r) {
        w.failed();
        return r;
    }
    w.enqueued(queue, *event);
    let own = Event::from_raw(own);
    if b.blocking == CL_FALSE {
        return r;
    }
    finish_blocking(queue, r, *event, own, b.failed)
}

/// Waits for a blocking command enqueued non-blocking with event `event` (`own`: clayout's
/// reference, when the application asked for no event), and answers as the blocking call would.
pub(super) fn finish_blocking<R>(
    queue: cl_command_queue,
    r: R,
    event: cl_event,
    own: Option<Event>,
    failed: impl FnOnce(cl_int) -> R,
) -> R {
    super::cost::pace::app_waited();
    let done = if crate::fault::inject("wait") { Err(()) } else { cmd::wait(&[event]).map_err(|_| ()) };
    let outcome = if done.is_ok() { Ok(()) } else { after_failed_wait(queue, event) };
    drop(own);
    match outcome {
        Ok(()) => r,
        Err(code) => failed(code),
    }
}

/// The wait for a blocking command failed: if the command itself failed, what the blocking call
/// would have reported; otherwise the wait is finished another way, on its queue.
fn after_failed_wait(queue: cl_command_queue, event: cl_event) -> Result<(), cl_int> {
    if event_status(event).is_some_and(|s| s < 0) {
        return Err(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
    }
    crate::log::debug("waiting for a blocking command failed; finishing its queue instead");
    cmd::finish(queue).map_err(|e| e.code)
}

/// `prepare` for a host access, under a panic guard: an internal failure fails the command,
/// which may be about to read bytes still in a device layout, and an error beats wrong data.
fn ordered_prepare(queue: cl_command_queue, needs: &[BufferNeed], user: &[cl_event]) -> Result<WaitList, cl_int> {
    crate::guard("host access", || prepare(queue, needs, user)).unwrap_or(Err(CL_OUT_OF_RESOURCES))
}
