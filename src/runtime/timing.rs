//! Device time of conversions, read from event profiling when the queue has it: clayout never
//! turns profiling on for an application's queue unless CLAYOUT_PROFILE=1 asks.

use crate::cl::{cmd, info::event_times, Event};
use crate::registry;
use libc::c_void;
use opencl_sys::*;

extern "C" fn on_complete(ev: cl_event, status: cl_int, _user: *mut c_void) {
    // The callback owns the reference `time_event` took.
    let ev = Event::from_raw(ev);
    crate::guard("conversion timing", || {
        if status != CL_COMPLETE {
            return;
        }
        if let Some((start, end)) = ev.as_ref().and_then(|e| event_times(e.raw())) {
            if end >= start {
                crate::stats::marshal_time(end - start);
            }
        }
    });
}

/// Adds the device time of `ev` to the statistics once it completes, if `queue` profiles.
pub fn time_event(queue: cl_command_queue, ev: cl_event) {
    let profiling = registry::get().queues.get(registry::key(queue)).is_some_and(|q| q.profiling);
    if !profiling {
        return;
    }
    let Some(held) = Event::retain(ev) else { return };
    if cmd::on_complete(ev, on_complete, std::ptr::null_mut()).is_ok() {
        // Released by the callback.
        held.into_raw();
    }
}
