//! Bringing one buffer into the layout a command needs: runs the steps of `state::plan` on the
//! command's queue, records them, and hands back the event the command must wait for.

use super::state::{after, plan, BufferState, Current, Need, Step};
use crate::layout::permute_host;
use crate::real::api;
use crate::registry::{self, BufferInfo, Handle};
use crate::stats::{self, Direction};
use libc::c_void;
use opencl_sys::*;

/// Why a buffer could not be brought into the needed layout.
#[derive(Debug)]
pub struct Failed {
    pub reason: String,
}

/// An event clayout owns (one reference), released when dropped.
pub struct OwnedEvent(pub cl_event);

impl Drop for OwnedEvent {
    fn drop(&mut self) {
        if !self.0.is_null() {
            unsafe { api().clReleaseEvent(self.0) };
        }
    }
}

impl OwnedEvent {
    fn retained(ev: cl_event) -> OwnedEvent {
        unsafe { api().clRetainEvent(ev) };
        OwnedEvent(ev)
    }
}

/// Forgets a buffer whose last application reference is gone.
pub fn forget(info: &BufferInfo) {
    let mut st = info.state.lock();
    if let (Current::Device(_), Some(by)) = (st.current, st.converted_by.take()) {
        super::habits::saw(&by, false);
    }
    st.current = Current::Host;
    if let Some(ev) = st.last_event.take() {
        drop(OwnedEvent(ev as cl_event));
    }
}

/// The execution status of `ev` (`CL_COMPLETE`, or negative when the command failed), if the
/// library answers.
pub fn event_status(ev: cl_event) -> Option<cl_int> {
    let mut status: cl_int = CL_QUEUED;
    let r = unsafe {
        api().clGetEventInfo(
            ev,
            CL_EVENT_COMMAND_EXECUTION_STATUS,
            std::mem::size_of::<cl_int>(),
            &mut status as *mut cl_int as *mut c_void,
            std::ptr::null_mut(),
        )
    };
    (r == CL_SUCCESS).then_some(status)
}

/// Drops the remembered last conversion once it has completed, so that commands stop waiting
/// on it.
fn last_pending(state: &mut BufferState) -> Option<cl_event> {
    let ev = state.last_event? as cl_event;
    if event_status(ev) == Some(CL_COMPLETE) {
        drop(OwnedEvent(ev));
        state.last_event = None;
        None
    } else {
        Some(ev)
    }
}

/// Makes `buffer` meet `need` for a command about to be enqueued on `queue` after `user_wait`.
/// Returns the event the command must also wait for, if any.
///
/// `st` is the buffer's state, which the caller holds locked until its command is enqueued
/// (see runtime::order); conversions are enqueued, never waited for, under that lock.
///
/// `must`: the command cannot run correctly otherwise, so a device conversion that fails falls
/// back to the host permutation (a buffer that must stay in host layout still fails).
pub fn ensure(
    queue: cl_command_queue,
    buffer: Handle,
    info: &BufferInfo,
    st: &mut BufferState,
    need: Need,
    must: bool,
    user_wait: &[cl_event],
) -> Result<Option<OwnedEvent>, Failed> {
    if let Need::Device(_) = need {
        if let Some(why) = stays_host(info, st) {
            return Err(Failed { reason: why });
        }
    }
    let steps = plan(st.current, need);
    let pending = last_pending(st);
    if steps.is_empty() {
        st.current = after(need);
        return Ok(pending.map(OwnedEvent::retained));
    }
    let mut wait: Vec<cl_event> = user_wait.to_vec();
    wait.extend(pending);
    let barrier = out_of_order_barrier(queue);
    wait.extend(barrier.as_ref().map(|b| b.0));
    let others = super::order::other_queues(queue, info.context).map_err(|reason| Failed { reason })?;
    wait.extend(others.iter().map(|m| m.0));
    let mut last: Option<OwnedEvent> = None;
    for step in steps {
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
        wait = vec![ev.0];
        last = Some(ev);
        st.current = if step.to_host { Current::Host } else { after(need) };
        if step.to_host {
            if let Some(by) = st.converted_by.take() {
                super::habits::saw(&by, true);
            }
        }
    }
    let last = last.expect("a non-empty plan enqueues at least one step");
    // The state keeps its own reference; the caller gets `last`'s.
    unsafe { api().clRetainEvent(last.0) };
    if let Some(old) = st.last_event.replace(last.0 as usize) {
        drop(OwnedEvent(old as cl_event));
    }
    Ok(Some(last))
}

/// Counts a map of `mem` (of its parent, for a sub-buffer) before it is enqueued; `unmapped`
/// undoes it when the map fails or is unmapped.
pub fn mapping(mem: cl_mem) {
    if let Some((_, info)) = whose_bytes(mem) {
        info.state.lock().maps += 1;
    }
}

pub fn unmapped(mem: cl_mem) {
    if let Some((_, info)) = whose_bytes(mem) {
        let mut st = info.state.lock();
        st.maps = st.maps.saturating_sub(1);
    }
}

/// The buffer whose bytes `mem` shows, and its handle: itself, or a sub-buffer's parent.
pub fn whose_bytes(mem: cl_mem) -> Option<(Handle, std::sync::Arc<BufferInfo>)> {
    let b = registry::get().buffers.get(registry::key(mem))?;
    match b.parent {
        Some((parent, _, _)) => Some((parent, registry::get().buffers.get(parent)?)),
        None => Some((registry::key(mem), b)),
    }
}

/// Why this buffer must stay in its host layout now, if it must: a conversion failed before
/// (pinned); it is a sub-buffer, whose bytes are a window onto its parent's, which the parent
/// and its other sub-buffers also see; conversions are stopped for the process; or the host
/// has it mapped.
pub fn stays_host(info: &BufferInfo, st: &BufferState) -> Option<String> {
    if let Some(why) = &st.pinned {
        return Some(why.clone());
    }
    if info.parent.is_some() {
        return Some("the buffer is a sub-buffer".into());
    }
    if let Some(why) = super::stopped() {
        return Some(why);
    }
    (st.maps > 0).then(|| "the buffer is mapped by the host".into())
}

/// On an out-of-order queue nothing orders our conversion after commands the application
/// enqueued earlier that read the buffer; a barrier does.
fn out_of_order_barrier(queue: cl_command_queue) -> Option<OwnedEvent> {
    let q = registry::get().queues.get(registry::key(queue))?;
    if !q.out_of_order {
        return None;
    }
    let mut ev: cl_event = std::ptr::null_mut();
    let r = unsafe { api().clEnqueueBarrierWithWaitList(queue, 0, std::ptr::null(), &mut ev) };
    (r == CL_SUCCESS).then_some(OwnedEvent(ev))
}

/// Why a step failed, and whether the buffer's bytes are still as they were before it.
struct StepError {
    untouched: bool,
    reason: String,
}

fn run_step(queue: cl_command_queue, buffer: Handle, step: Step, wait: &[cl_event]) -> Result<OwnedEvent, StepError> {
    if crate::fault::inject("conversion") {
        return Err(StepError { untouched: true, reason: "injected failure of a conversion".into() });
    }
    let done = crate::marshal::enqueue_conversion(queue, buffer as cl_mem, 0, step.shape, step.from, step.to, wait)
        .map_err(|e| StepError { untouched: e.untouched(), reason: e.to_string() })?;
    let dir = if step.to_host { Direction::ToHost } else { Direction::ToDevice };
    stats::marshal(dir, done.bytes_moved, 0);
    super::timing::time_event(queue, done.event);
    crate::log::debug(&format!(
        "converted buffer {buffer:#x} {:?} -> {:?} (M={} S={} w={}), {} bytes moved",
        step.from, step.to, step.shape.m, step.shape.s, step.shape.w, done.bytes_moved
    ));
    Ok(OwnedEvent(done.event))
}

/// The safe path when the device conversion cannot run: map the bytes, permute them on the
/// host, unmap. Blocks until the map completes.
pub fn host_permute(
    queue: cl_command_queue,
    buffer: Handle,
    step: Step,
    wait: &[cl_event],
) -> Result<OwnedEvent, String> {
    if crate::config::get().strict {
        return Err("CLAYOUT_STRICT=1 forbids the host fallback".into());
    }
    let bytes = step.shape.bytes() as usize;
    let mut err: cl_int = CL_SUCCESS;
    let ptr = unsafe {
        api().clEnqueueMapBuffer(
            queue,
            buffer as cl_mem,
            CL_TRUE,
            CL_MAP_READ | CL_MAP_WRITE,
            0,
            bytes,
            wait.len() as cl_uint,
            if wait.is_empty() { std::ptr::null() } else { wait.as_ptr() },
            std::ptr::null_mut(),
            &mut err,
        )
    };
    if err != CL_SUCCESS || ptr.is_null() {
        return Err(format!("mapping the buffer failed ({err})"));
    }
    let data = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, bytes) };
    permute_host(data, step.shape, step.from, step.to);
    let mut ev: cl_event = std::ptr::null_mut();
    let r = unsafe { api().clEnqueueUnmapMemObject(queue, buffer as cl_mem, ptr, 0, std::ptr::null(), &mut ev) };
    if r != CL_SUCCESS {
        return Err(format!("unmapping the buffer failed ({r})"));
    }
    let dir = if step.to_host { Direction::ToHost } else { Direction::ToDevice };
    stats::marshal(dir, 2 * bytes as u64, 0);
    stats::fallback(
        &format!("buffer {buffer:#x}"),
        "converted on the host (map, permute, unmap) because the device conversion could not run",
    );
    Ok(OwnedEvent(ev))
}
