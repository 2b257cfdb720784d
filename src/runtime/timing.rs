//! What becomes of a conversion's commands after they are enqueued: every link of the chain
//! stays referenced until the last one completes (some implementations abort when a failure
//! runs through a chain whose middle links were released), and on a queue that profiles, the
//! conversion's device time, from the first command's start to the last one's end, goes to the
//! statistics. clayout never turns profiling on for an application's queue unless
//! CLAYOUT_PROFILE=1 asks.

use crate::cl::{cmd, info::event_times, Event};
use crate::registry;
use libc::c_void;
use opencl_sys::*;

struct Held {
    events: Vec<Event>,
    profiling: bool,
}

extern "C" fn on_complete(_ev: cl_event, status: cl_int, user: *mut c_void) {
    // SAFETY: `user` is the Box leaked in `hold`, handed to exactly one callback.
    let held = unsafe { Box::from_raw(user as *mut Held) };
    crate::guard("conversion timing", || {
        if status != CL_COMPLETE || !held.profiling {
            return;
        }
        let first = held.events.first().and_then(|e| event_times(e.raw()));
        let last = held.events.last().and_then(|e| event_times(e.raw()));
        if let (Some((start, _)), Some((_, end))) = (first, last) {
            if end >= start {
                crate::stats::marshal_time(end - start);
            }
        }
    });
}

/// Keeps the events of one conversion (in order) until the last completes, and times it then
/// if `queue` profiles. Returns the last event (a reference of the caller's own).
pub fn hold(queue: cl_command_queue, events: Vec<Event>) -> Option<Event> {
    let profiling = registry::get().queues.get(registry::key(queue)).is_some_and(|q| q.profiling);
    hold_on(queue, events, profiling)
}

/// `hold` on a queue of clayout's own, which the registry does not know, or for commands that
/// are not a conversion (`profiling` false: only kept): `profiling` says whether to time them.
pub fn hold_on(queue: cl_command_queue, events: Vec<Event>, profiling: bool) -> Option<Event> {
    let last = Event::retained_in(events.last()?.raw(), queue)?;
    let user = Box::into_raw(Box::new(Held { events, profiling })) as *mut c_void;
    if cmd::on_complete(last.raw(), on_complete, user).is_err() {
        // SAFETY: the callback was not registered, so the box is still ours; the links are
        // released now, as before this keeping existed.
        drop(unsafe { Box::from_raw(user as *mut Held) });
    }
    Some(last)
}
