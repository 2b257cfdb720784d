//! Bringing one buffer into the layout a command needs: runs the steps of `state::plan` on the
//! command's queue, records them, and hands back the event the command must wait for.

use super::buffers::{Buffer, BufferState};
use super::order;
use super::state::{after, overwrite_skips, plan, Current, DeviceLayout, Need, Step};
use crate::cl::{self, cmd, info::event_status, Event};
use crate::layout::permute_host;
use crate::stats::{self, Direction};
use libc::c_void;
use opencl_sys::*;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

/// Why a buffer could not be brought into the needed layout.
#[derive(Debug)]
pub struct Failed {
    pub reason: String,
}

/// Drops the remembered last conversion once it has completed, so that commands stop waiting
/// on it.
pub(super) fn last_pending(state: &mut BufferState) -> Option<cl_event> {
    let ev = state.last_event.as_ref()?.raw();
    if event_status(ev) == Some(CL_COMPLETE) {
        state.last_event = None;
        None
    } else {
        Some(ev)
    }
}

/// Makes `buffer` meet `need` for a command about to be enqueued on `queue` after the
/// application's `asked` wait list. Returns the event the command must also wait for, if any.
///
/// `st` is the buffer's state, which the caller holds locked until its command is enqueued
/// (see runtime::order); conversions are enqueued, never waited for, under that lock.
///
/// `must`: the command cannot run correctly otherwise, so a device conversion that fails falls
/// back to the host permutation (a buffer that must stay in host layout still fails), and it
/// waits for the buffer's unfinished users where an optional conversion is not made.
///
/// `overwrite`: the command overwrites every structure of a device need before reading any
/// and is sure to run; the buffer then takes the layout without a conversion where
/// [`overwrite_skips`] allows.
#[allow(clippy::too_many_arguments)]
pub fn ensure(
    queue: cl_command_queue,
    buffer: &Arc<Buffer>,
    st: &mut BufferState,
    need: Need,
    must: bool,
    overwrite: bool,
    asked: &[cl_event],
) -> Result<Option<Event>, Failed> {
    st.settle(buffer);
    if let Need::Device(_) = need {
        if let Some(why) = stays_host(buffer, st) {
            return Err(Failed { reason: why });
        }
        if st.current == Current::Host {
            if let Some(why) = super::speculate::entering_device(must) {
                return Err(Failed { reason: why });
            }
        }
    }
    // Bytes nothing has written yet take the needed layout as they are: no conversion.
    let skip = !st.defined || (overwrite && overwrite_skips(st.current, need));
    let steps = if skip { Vec::new() } else { plan(st.current, need) };
    let pending = last_pending(st);
    if steps.is_empty() {
        st.current = after(need);
        return Ok(pending.and_then(Event::retain));
    }
    let in_order = order::in_order(queue);
    let (mut wait, added) = st.users.unfinished(queue, in_order, asked);
    if matches!(need, Need::Device(_)) && !must {
        // An optional conversion only when nothing that waits for it can end up waiting for
        // the application (runtime::order).
        if added {
            return Err(Failed {
                reason: "the buffer is in use by an unfinished command that may wait for the application".into(),
            });
        }
        if !order::free(queue, asked) {
            return Err(Failed { reason: "the launch waits for something that may wait for the application".into() });
        }
    }
    wait.extend(pending);
    let before = st.current;
    let mut last: Option<Event> = None;
    for step in steps {
        let free = order::free(queue, &wait);
        if !free {
            order::close(queue);
        }
        let ev = match run_step(queue, buffer, step, &wait) {
            Ok(ev) => ev,
            Err(StepError { untouched: false, reason }) => {
                // The bytes are in neither layout: no safe path is left for this buffer.
                st.pinned = Some(format!("a conversion failed halfway: {reason}"));
                return Err(Failed { reason: format!("{reason}; the buffer's contents are lost") });
            }
            Err(StepError { reason, .. }) => {
                if step.to_host || must {
                    // The bytes are in a device layout the application cannot read: put them
                    // back on the host side, or fail the command rather than expose them.
                    match host_permute(queue, buffer, step, &wait) {
                        Ok(ev) => ev,
                        Err(why) => {
                            return Err(Failed { reason: format!("{reason}; host fallback failed too: {why}") });
                        }
                    }
                } else {
                    st.pinned = Some(reason.clone());
                    return Err(Failed { reason });
                }
            }
        };
        order::noted(queue, in_order, false, ev.raw(), free);
        wait = vec![ev.raw()];
        last = Some(ev);
        st.current = if step.to_host { Current::Host } else { after(need) };
        if step.to_host {
            st.cost().came_back();
        }
    }
    let last = last.expect("a non-empty plan enqueues at least one step");
    // Every earlier user ran before the conversion, which stands for them from now on.
    st.users.clear();
    st.conversions += 1;
    st.before = before;
    watch_failure(queue, buffer, st.conversions, &last);
    // The state keeps its own reference; the caller gets `last`'s.
    st.last_event = Event::retained_in(last.raw(), queue);
    Ok(Some(last))
}

/// Readies `buffer` for a command on `queue` (after the application's `asked` wait list) that
/// converts it from its host layout to `d` itself as it runs: a staged copy fused with the
/// conversion (transparent::fused). The command stands for a conversion: like one, it waits for
/// the buffer's unfinished users (the events returned) and must not come to wait for the
/// application where it would not have, and the state says `d` from now on (the caller undoes
/// that if the command is not enqueued, and finishes it once it is: [`fused_enqueued`]).
/// Err, with nothing changed, when the buffer is not in host layout with defined bytes any more
/// or cannot be converted: the caller takes another path.
pub fn fuse(
    queue: cl_command_queue,
    buffer: &Arc<Buffer>,
    st: &mut BufferState,
    d: DeviceLayout,
    asked: &[cl_event],
) -> Result<Vec<Event>, Failed> {
    st.settle(buffer);
    if let Some(why) = stays_host(buffer, st) {
        return Err(Failed { reason: why });
    }
    if st.current != Current::Host || !st.defined {
        return Err(Failed { reason: "the buffer is no longer in host layout with defined bytes".into() });
    }
    if let Some(why) = super::speculate::entering_device(false) {
        return Err(Failed { reason: why });
    }
    let in_order = order::in_order(queue);
    let (mut wait, added) = st.users.unfinished(queue, in_order, asked);
    if added {
        return Err(Failed {
            reason: "the buffer is in use by an unfinished command that may wait for the application".into(),
        });
    }
    if !order::free(queue, asked) {
        return Err(Failed { reason: "the launch waits for something that may wait for the application".into() });
    }
    wait.extend(last_pending(st));
    let events = wait.into_iter().filter_map(Event::retain).collect();
    st.current = Current::Device(d);
    Ok(events)
}

/// The command that converts the buffer as it runs ([`fuse`]) was enqueued with event `event`
/// (the state was `before`): it stands for a conversion from now on. Later commands on other
/// queues wait for it, it waited for every earlier user, and should it fail on the device (a
/// command it waited for failed, so it never ran) the state goes back to `before`.
pub fn fused_enqueued(
    queue: cl_command_queue,
    buffer: &Arc<Buffer>,
    st: &mut BufferState,
    before: Current,
    event: cl_event,
) {
    st.users.clear();
    st.conversions += 1;
    st.before = before;
    st.last_event = Event::retained_in(event, queue);
    if let Some(ev) = Event::retained_in(event, queue) {
        watch_failure(queue, buffer, st.conversions, &ev);
    }
    stats::fused();
    if let Current::Device(d) = st.current {
        crate::log::debug_with(|| {
            format!(
                "buffer {:#x}: {:?} -> {:?} (M={} S={} w={}) by the launch that uses it, no conversion",
                buffer.handle, d.host, d.device, d.shape.m, d.shape.s, d.shape.w
            )
        });
    }
}

/// What the completion callback of a conversion needs: which buffer, which conversion.
struct Watch {
    buffer: Weak<Buffer>,
    conversion: u64,
    /// The callback's reference to the event, released when it has run.
    held: Option<Event>,
}

/// Arranges that a conversion which fails on the device (a command it waited for failed, so it
/// never ran) leaves the buffer's state as the bytes really are: the callback notes it, the
/// next command that locks the state applies it (`BufferState::settle`). The callback holds a
/// reference to the event until the event completes: some implementations do not like a
/// released event in the middle of a chain that fails.
pub(super) fn watch_failure(queue: cl_command_queue, buffer: &Arc<Buffer>, conversion: u64, ev: &Event) {
    extern "C" fn done(_ev: cl_event, status: cl_int, user: *mut c_void) {
        // SAFETY: `user` is the Box leaked below, handed to exactly one callback.
        let mut watch = unsafe { Box::from_raw(user as *mut Watch) };
        drop(watch.held.take());
        if status < 0 {
            if let Some(b) = watch.buffer.upgrade() {
                b.failed.store(watch.conversion, Ordering::Release);
            }
        }
    }
    let Some(held) = Event::retained_in(ev.raw(), queue) else { return };
    let user =
        Box::into_raw(Box::new(Watch { buffer: Arc::downgrade(buffer), conversion, held: Some(held) })) as *mut c_void;
    if cmd::on_complete(ev.raw(), done, user).is_err() {
        // SAFETY: the callback was not registered, so the box is still ours.
        drop(unsafe { Box::from_raw(user as *mut Watch) });
    }
}

/// Counts a map of `buffer` (of its parent, for a sub-buffer) before it is enqueued; `unmapped`
/// undoes it when the map fails or is unmapped.
pub fn mapping(buffer: &std::sync::Arc<Buffer>) {
    buffer.bytes_owner().lock().maps += 1;
}

pub fn unmapped(buffer: &std::sync::Arc<Buffer>) {
    let mut st = buffer.bytes_owner().lock();
    st.maps = st.maps.saturating_sub(1);
}

/// Why this buffer must stay in its host layout now, if it must: a conversion failed before
/// (pinned); it is a sub-buffer, whose bytes are a window onto its parent's, which the parent
/// and its other sub-buffers also see; conversions are stopped for the process; or the host
/// has it mapped.
pub fn stays_host(buffer: &Buffer, st: &BufferState) -> Option<String> {
    if let Some(why) = &st.pinned {
        return Some(why.clone());
    }
    if buffer.parent.is_some() {
        return Some("the buffer is a sub-buffer".into());
    }
    if let Some(why) = super::stop::stopped() {
        return Some(why);
    }
    (st.maps > 0).then(|| "the buffer is mapped by the host".into())
}

/// Why a step failed, and whether the buffer's bytes are still as they were before it.
struct StepError {
    untouched: bool,
    reason: String,
}

fn run_step(queue: cl_command_queue, buffer: &Buffer, step: Step, wait: &[cl_event]) -> Result<Event, StepError> {
    // `conversion-back`: only the conversions back to the host's layout fail, so that buffers
    // reach a device layout and the host fallback must bring them back.
    if crate::fault::inject("conversion") || (step.to_host && crate::fault::inject("conversion-back")) {
        return Err(StepError { untouched: true, reason: "injected failure of a conversion".into() });
    }
    let done = crate::marshal::enqueue_conversion(queue, buffer.mem(), 0, step.shape, step.from, step.to, wait)
        .map_err(|e| StepError { untouched: e.untouched(), reason: e.to_string() })?;
    let bytes_moved = done.bytes_moved;
    let ev = super::timing::hold(queue, done.events)
        .ok_or_else(|| StepError { untouched: false, reason: "the conversion's event could not be kept".into() })?;
    let dir = if step.to_host { Direction::ToHost } else { Direction::ToDevice };
    stats::marshal(dir, bytes_moved, 0);
    crate::log::debug_with(|| {
        format!(
            "converted buffer {:#x} {:?} -> {:?} (M={} S={} w={}), {} bytes moved",
            buffer.handle, step.from, step.to, step.shape.m, step.shape.s, step.shape.w, bytes_moved
        )
    });
    Ok(ev)
}

/// The safe path when the device conversion cannot run: map the bytes, permute them on the
/// host, unmap. Blocks until the map completes.
pub fn host_permute(queue: cl_command_queue, buffer: &Buffer, step: Step, wait: &[cl_event]) -> Result<Event, String> {
    host_permute_at(queue, buffer, 0, step, wait)
}

/// `host_permute` of the `step.shape` at byte `offset` of the buffer.
///
/// Without blocking: the caller holds the buffer's lock, and a blocking map waits for every
/// command before it on an in-order queue, one of which may have a callback of the
/// application's pending that needs that lock (PoCL releases the commands after an event only
/// once its callbacks have returned): the blocking map waited for ever there. The bytes are
/// permuted in a callback of the map's completion instead, on the driver's thread, and the
/// unmap, enqueued at once, waits for a user event that the callback completes. A map that
/// fails fails the user event, and with it the unmap and everything after it (the bytes
/// untouched, as `watch_failure` takes them).
pub fn host_permute_at(
    queue: cl_command_queue,
    buffer: &Buffer,
    offset: usize,
    step: Step,
    wait: &[cl_event],
) -> Result<Event, String> {
    if crate::config::get().strict {
        return Err("CLAYOUT_STRICT=1 forbids the host fallback".into());
    }
    let bytes = step.shape.bytes() as usize;
    let context = cl::info::queue_context(queue).ok_or("the queue's context is unknown")?;
    let permuted = cmd::user_event(context).map_err(|e| format!("no user event for the host fallback ({e})"))?;
    let (ptr, mapped) = cmd::map_later(queue, buffer.mem(), offset, bytes, wait)
        .map_err(|e| format!("mapping the buffer failed ({e})"))?;
    // Before the permutation is arranged: bytes permuted in a mapping never given back would
    // be the buffer's own where the mapping is its memory (CL_MEM_USE_HOST_PTR on a CPU).
    let ev = cmd::unmap_at(queue, buffer.mem(), ptr, &[permuted.raw()])
        .map_err(|e| format!("unmapping the buffer failed ({e})"))?;
    let permute = Box::new(Permute { ptr, len: bytes, step, permuted });
    let gate = permute.permuted.raw();
    let user = Box::into_raw(permute) as *mut c_void;
    if let Err(e) = cmd::on_complete(mapped.raw(), permute_mapped, user) {
        // SAFETY: the callback was not registered, so the box is still ours. Its user event,
        // failed, fails the unmap: the bytes stay as they are, and the command after fails.
        drop(unsafe { Box::from_raw(user as *mut Permute) });
        let _ = cmd::set_user_event_status(gate, CL_OUT_OF_RESOURCES);
        return Err(format!("the host fallback's callback could not be registered ({e})"));
    }
    let dir = if step.to_host { Direction::ToHost } else { Direction::ToDevice };
    stats::marshal(dir, 2 * bytes as u64, 0);
    stats::fallback(
        &format!("buffer {:#x}", buffer.handle),
        "converted on the host (map, permute, unmap) because the device conversion could not run",
    );
    Ok(ev)
}

/// The host fallback's permutation, run when its map completes (`host_permute_at`).
struct Permute {
    ptr: *mut u8,
    len: usize,
    step: Step,
    /// Completed once the bytes are permuted; the unmap waits for it.
    permuted: Event,
}

extern "C" fn permute_mapped(_ev: cl_event, status: cl_int, user: *mut c_void) {
    // SAFETY: `user` is the box `host_permute_at` leaked, handed to exactly one callback.
    let p = unsafe { Box::from_raw(user as *mut Permute) };
    let done = status == CL_COMPLETE
        && crate::guard("host fallback", || {
            // SAFETY: the map completed: its `len` bytes are mapped for reading and writing
            // until the unmap, which waits for `permuted`.
            let bytes = unsafe { std::slice::from_raw_parts_mut(p.ptr, p.len) };
            permute_host(bytes, p.step.shape, p.step.from, p.step.to);
        })
        .is_some();
    let status = if done { CL_COMPLETE } else { status.min(CL_OUT_OF_RESOURCES) };
    let _ = cmd::set_user_event_status(p.permuted.raw(), status);
}
