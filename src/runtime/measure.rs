//! Timing one launch of the application's queue for the cost model, without profiling: a marker
//! before and a marker after the launch, each waited for by polling with a time limit, so that a
//! queue held back by something only the application can release (a user event it sets after
//! this call returns) costs a bounded stall, never a deadlock.

use super::convert::{event_status, OwnedEvent};
use crate::real::api;
use opencl_sys::*;
use std::time::{Duration, Instant};

/// How long the commands already queued may take before the measured launch starts.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);
/// How long the measured launch itself may take.
const LAUNCH_LIMIT: Duration = Duration::from_secs(10);

/// A launch being timed: the queue has drained up to it.
pub struct Timer {
    started: Instant,
}

fn marker(queue: cl_command_queue) -> Option<OwnedEvent> {
    let mut ev: cl_event = std::ptr::null_mut();
    let r = unsafe { api().clEnqueueMarkerWithWaitList(queue, 0, std::ptr::null(), &mut ev) };
    (r == CL_SUCCESS && !ev.is_null()).then_some(OwnedEvent(ev))
}

/// Polls until `ev` completes; false when it failed or the limit passed.
fn wait(ev: &OwnedEvent, limit: Duration) -> bool {
    let t0 = Instant::now();
    let mut spins = 0u32;
    loop {
        match event_status(ev.0) {
            Some(CL_COMPLETE) => return true,
            Some(s) if s < 0 => return false,
            None => return false,
            _ => {}
        }
        if t0.elapsed() > limit {
            return false;
        }
        spins += 1;
        if spins < 200 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(20));
        }
    }
}

/// Whether every event of the application's wait list has completed: a launch waiting on an
/// event the application has not set yet is not timed (its wait would stall the application).
pub fn wait_list_complete(user: &[cl_event]) -> bool {
    user.iter().all(|&e| event_status(e) == Some(CL_COMPLETE))
}

/// Waits for everything queued before the launch about to be enqueued.
pub fn start(queue: cl_command_queue) -> Option<Timer> {
    let m = marker(queue)?;
    unsafe { api().clFlush(queue) };
    wait(&m, DRAIN_LIMIT).then(|| Timer { started: Instant::now() })
}

/// The launch's time in ns, once it completed.
pub fn stop(queue: cl_command_queue, t: Timer) -> Option<f64> {
    let m = marker(queue)?;
    unsafe { api().clFlush(queue) };
    wait(&m, LAUNCH_LIMIT).then(|| t.started.elapsed().as_nanos() as f64)
}
