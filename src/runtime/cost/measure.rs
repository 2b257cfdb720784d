//! Timing one launch of the application's queue for the cost model, without profiling: a marker
//! before and a marker after the launch, each waited for by polling with a time limit, so that a
//! queue held back by something only the application can release (a user event it sets after
//! this call returns) costs a bounded stall, never a deadlock.

use crate::cl::{cmd, info::event_status, Event};
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

/// Polls until `ev` completes; false when it failed or the limit passed.
fn wait(ev: &Event, limit: Duration) -> bool {
    let t0 = Instant::now();
    let mut spins = 0u32;
    loop {
        match event_status(ev.raw()) {
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

/// A flushed marker on `queue`, waited for up to `limit`.
fn drained(queue: cl_command_queue, limit: Duration) -> bool {
    let Ok(m) = cmd::marker(queue, &[]) else { return false };
    let _ = cmd::flush(queue);
    wait(&m, limit)
}

/// Waits for everything queued before the launch about to be enqueued.
pub fn start(queue: cl_command_queue) -> Option<Timer> {
    drained(queue, DRAIN_LIMIT).then(|| Timer { started: Instant::now() })
}

/// The launch's time in ns, once it completed.
pub fn stop(queue: cl_command_queue, t: Timer) -> Option<f64> {
    drained(queue, LAUNCH_LIMIT).then(|| t.started.elapsed().as_nanos() as f64)
}
