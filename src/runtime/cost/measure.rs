//! Timing one launch of the application's queue for the cost model without adding any wait to
//! it: a marker right before the launch (waiting for what the launch waits for) and one right
//! after, each with a completion callback that notes the time it arrives; the launch's time is
//! the difference, handed to `done` from the callback, whenever the application's own waits (or
//! the driver) get the queue there. The application's thread never waits for a timing: no
//! finish, no wait for events, no polling.
//!
//! (Before, a launch to time drained the queue with a marker waited for by polling, before and
//! after the launch: two waits in the application's call on each timed launch, up to six per
//! kernel and size, which cost a short run more than the model could ever save it.)

use crate::cl::{cmd, info::event_status, Event};
use libc::c_void;
use opencl_sys::*;
use parking_lot::Mutex;
use std::time::Instant;

/// What comes back from a timed launch: its time in ns, or None when it could not be timed.
pub type Done = Box<dyn FnOnce(Option<f64>) + Send>;

/// Whether every event of the application's wait list has completed: a launch waiting on an
/// event the application has not set yet is not timed (the wait would count as its time).
pub fn wait_list_complete(user: &[cl_event]) -> bool {
    user.iter().all(|&e| event_status(e) == Some(CL_COMPLETE))
}

/// The two markers of one timed launch, each noted when its callback arrives.
struct Timing {
    at: [Option<Instant>; 2],
    arrived: u8,
    failed: bool,
    /// Kept until both callbacks ran.
    markers: Vec<Event>,
    done: Option<Done>,
}

struct Side {
    timing: std::sync::Arc<Mutex<Timing>>,
    which: usize,
}

extern "C" fn on_marker(_ev: cl_event, status: cl_int, user: *mut c_void) {
    // SAFETY: `user` is a Box leaked in `finish`, handed to exactly one callback.
    let side = unsafe { Box::from_raw(user as *mut Side) };
    crate::guard("launch timing", || arrived(&side, status == CL_COMPLETE));
}

fn arrived(side: &Side, ok: bool) {
    let now = Instant::now();
    let (done, ns, markers) = {
        let mut t = side.timing.lock();
        t.at[side.which] = Some(now);
        t.failed |= !ok;
        t.arrived += 1;
        if t.arrived < 2 {
            return;
        }
        let ns = match (t.failed, t.at) {
            (false, [Some(a), Some(b)]) if b >= a => Some(b.duration_since(a).as_nanos() as f64),
            _ => None,
        };
        (t.done.take(), ns, std::mem::take(&mut t.markers))
    };
    drop(markers);
    if let Some(done) = done {
        done(ns);
    }
}

/// The markers around one launch, set by `before` and `after` as it is enqueued.
#[derive(Default)]
pub struct Markers {
    before: Mutex<Option<Event>>,
    pair: Mutex<Option<(Event, Event)>>,
}

impl Markers {
    /// Right before the launch's enqueue: on an in-order queue it completes with the commands
    /// before the launch, clayout's conversions for it included. (A launch that also waits for a
    /// command of another queue still running counts that wait: the lowest of two timings is
    /// what the model keeps.)
    pub fn before(&self, queue: cl_command_queue) {
        *self.before.lock() = cmd::marker(queue, &[]).ok();
    }

    /// Right after the launch's enqueue; `enqueued`: whether it was. The queue is flushed (a
    /// submission, not a wait), so that the timing comes back while the application goes on
    /// enqueueing rather than at its next wait.
    pub fn after(&self, queue: cl_command_queue, enqueued: bool) {
        let before = self.before.lock().take();
        let after = if enqueued { cmd::marker(queue, &[]).ok() } else { None };
        if after.is_some() {
            let _ = cmd::flush(queue);
        }
        *self.pair.lock() = before.zip(after);
    }

    /// Hands the launch's time to `done` once both markers completed; false (and `done` is
    /// dropped) when the launch was not timed.
    pub fn finish(self, done: Done) -> bool {
        let Some((a, b)) = self.pair.into_inner() else { return false };
        let (ra, rb) = (a.raw(), b.raw());
        let timing = std::sync::Arc::new(Mutex::new(Timing {
            at: [None, None],
            arrived: 0,
            failed: false,
            markers: vec![a, b],
            done: Some(done),
        }));
        for (which, ev) in [(0, ra), (1, rb)] {
            let user = Box::into_raw(Box::new(Side { timing: timing.clone(), which })) as *mut c_void;
            if cmd::on_complete(ev, on_marker, user).is_err() {
                // SAFETY: the callback was not registered, so the box is still ours.
                let side = unsafe { Box::from_raw(user as *mut Side) };
                arrived(&side, false);
            }
        }
        true
    }
}
