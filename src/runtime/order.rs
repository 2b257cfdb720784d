//! Ordering clayout's conversions against the application's commands on every queue.
//!
//! The application orders its own commands, but it has no reason to order two commands that
//! only read a buffer, even on different queues and threads. A conversion rewrites the buffer in
//! place, so clayout orders it after every command already enqueued that uses the buffer, and
//! every later command after it:
//! - later commands wait for the buffer's last conversion (`BufferState::last_event`, in
//!   `convert::ensure`);
//! - earlier commands on the conversion's own queue: it is in order, or a barrier is enqueued;
//! - earlier commands on the context's other queues: a marker on each, which the conversion
//!   waits for ([`other_queues`]);
//! - commands other threads are enqueueing at that moment: a command holds the states of its
//!   buffers locked from its conversions until its own enqueue has returned
//!   (`access::try_prepare`), and a blocking read, write or map is enqueued non-blocking and
//!   waited for once the locks are released, so that no lock is held while waiting;
//! - commands that skip all this, the fast path of a process without annotations: they run only
//!   while no annotated program exists, and the first one waits for those in flight
//!   ([`annotated_program_created`]) before any conversion can follow.

use crate::cl::{cmd, Event, Queue};
use crate::registry::{self, Handle};
use opencl_sys::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Set, never cleared, when the first annotated program is created.
static ANNOTATED: AtomicBool = AtomicBool::new(false);
/// Fast-path calls between their check of `ANNOTATED` and their return.
static FAST_IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// How long the first annotated program waits for fast-path calls to return: a blocking call
/// of another thread may take a while; past this, conversions are stopped rather than risked.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// While held, the caller may run an OpenCL call on the fast path (no registry lookups, no
/// locks): no annotated program exists yet, and the first one waits until this is dropped.
pub struct Fast(());

impl Drop for Fast {
    fn drop(&mut self) {
        FAST_IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `Some` when the fast path may be taken; `None` when the caller must take the ordered one.
pub fn fast() -> Option<Fast> {
    // SeqCst here and in `annotated_program_created`: either this call sees the flag, or the
    // program's creator sees this call in flight and waits for it.
    FAST_IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
    let fast = Fast(());
    if ANNOTATED.load(Ordering::SeqCst) {
        None
    } else {
        Some(fast)
    }
}

/// Called when a program with annotations is created, before it can be built or launched.
pub fn annotated_program_created() {
    if ANNOTATED.swap(true, Ordering::SeqCst) {
        return;
    }
    // A fast-path call blocked on a command of this thread's queue needs that queue flushed.
    for q in retained_queues(|_| true) {
        let _ = cmd::flush(q.raw());
    }
    let start = Instant::now();
    while FAST_IN_FLIGHT.load(Ordering::SeqCst) != 0 {
        if start.elapsed() > DRAIN_LIMIT {
            super::stop::stop_converting("another thread's OpenCL call was still running when the first annotated program was created, so conversions could not be ordered after it");
            return;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Every live queue of the application that `pred` accepts, each with a reference of its own,
/// taken under the registry's lock so that none is released under our feet.
fn retained_queues(pred: impl Fn(&registry::QueueInfo) -> bool) -> Vec<Queue> {
    let mut out = Vec::new();
    registry::get().queues.retain_where(pred, |h| out.extend(Queue::retain(h as cl_command_queue)));
    out
}

/// A marker on every other queue of `context`, flushed: a conversion on `queue` that waits for
/// them runs after every command enqueued on those queues so far. Where a marker cannot be
/// enqueued, that queue is finished instead (a host wait, slower but as safe); Err only when
/// that fails too, and the conversion is then not safe.
pub fn other_queues(queue: cl_command_queue, context: Handle) -> Result<Vec<Event>, String> {
    let mine = registry::key(queue);
    let mut markers = Vec::new();
    for q in retained_queues(|q| q.context == context) {
        if registry::key(q.raw()) == mine {
            continue;
        }
        let marker = if crate::fault::inject("marker") {
            Err(crate::cl::Error::new("clEnqueueMarkerWithWaitList", CL_OUT_OF_RESOURCES))
        } else {
            cmd::marker(q.raw(), &[])
        };
        match marker {
            Ok(ev) => {
                markers.push(ev);
                let _ = cmd::flush(q.raw());
            }
            Err(e) => {
                crate::log::debug(&format!(
                    "a marker on queue {:#x} failed ({e}); finishing that queue instead",
                    registry::key(q.raw())
                ));
                if let Err(f) = cmd::finish(q.raw()) {
                    return Err(format!("another queue of the context could not be waited for ({e}; {f})"));
                }
            }
        }
    }
    Ok(markers)
}
