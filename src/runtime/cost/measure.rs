//! Timing one launch of the application's queue for the cost model.
//!
//! On a queue that profiles (the application's choice, or CLAYOUT_PROFILE=1), nothing waits:
//! the launch's own event is kept, and its device time is read from its profiling information
//! once it has completed, at a later launch (`harvest`), a reference-count query, the context's
//! release or exit. The model learns a little later (a program that enqueues all its launches
//! before waiting learns in its next run), and the queue runs as it would without clayout.
//!
//! Otherwise, where the application itself waits for the launch (`app_wait`): a launch enqueued
//! on a queue the application's `clFinish` had drained, with nothing enqueued since, is timed
//! from its enqueue to the return of the application's next `clFinish` on that queue, when
//! nothing else was enqueued in between and the launch was still running when that wait began
//! (one that had completed is timed up to the wait's start, if the application waited at once).
//! A program of one launch then pays nothing for being timed (markers cost blackscholes' one
//! 0.48 ms launch on the H100 0.2 ms). A program that enqueues again before it waits gets no
//! time from it, and its later launches are timed with markers; so is a launch that the
//! kernel's history says more launches follow before the host sees its buffers (otherwise
//! particles' first kernel lost the time of its first launch to the next kernel's, and timed
//! it again in every run).
//!
//! Otherwise (`start`, `stop`): a marker before and a marker after the launch, each waited for by
//! polling with a time limit. On an in-order queue the marker before is enqueued right before
//! the launch itself (after any conversion it needs, with the launch's wait list) and waited for
//! only after the launch is enqueued, so that the device goes from one to the other without
//! waiting for the host: a timed launch then costs the program only the gap after it, where
//! draining the queue first made the device also wait for the launch's enqueue (blackscholes'
//! second run on the H100, six timed launches: 0.6-0.7 ms). An out-of-order queue is drained
//! first, as its launch need not wait for the marker. clayout turns profiling on only where a
//! program's earlier runs asked for few events (`runtime::profiling`): on NVIDIA a
//! launch that asks for an event costs 6 us more on a queue that profiles (bench/profq.c), and
//! for a kernel of a few microseconds the markers' latency is most of its time. The host times at which the
//! driver's completion callbacks see a marker and the launch complete are not the launch's
//! time (on the H200 both come together after the launch: 16 us for a 320 us kernel). Only a
//! few launches per kernel and size class are timed, in the runs that meet them first, and the
//! caller times a launch only when nothing in the queue waits for the application.

use crate::cl::{cmd, info::event_status, info::event_times, Event, FN_COUNT, FN_NAMES};
use opencl_sys::*;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// How long the commands already queued may take before the measured launch starts.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);
/// How long the measured launch itself may take.
const LAUNCH_LIMIT: Duration = Duration::from_secs(10);
/// How long a wait polls without sleeping.
const SPIN: Duration = Duration::from_millis(1);

/// A launch being timed.
pub struct Timer {
    start: Start,
}

enum Start {
    /// The marker enqueued right before the launch on an in-order queue: the launch starts
    /// when it completes.
    Marker(Event),
    /// The queue had drained at this time (an out-of-order queue).
    Drained(Instant),
}

/// Polls until `ev` completes; false when it failed or the limit passed.
fn wait(ev: &Event, limit: Duration) -> bool {
    wait_spinning(ev, limit, SPIN)
}

/// `wait`, yielding rather than sleeping for the first `spin` (a sleep overshoots by the
/// timer slack).
fn wait_spinning(ev: &Event, limit: Duration, spin: Duration) -> bool {
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
        // Yielding for the first millisecond: a sleep overshoots by the timer slack (50 us on
        // Linux), which a launch of a few hundred microseconds would carry into its time.
        if spins < 64 || t0.elapsed() < spin {
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

/// Called right before the launch is enqueued, with its wait list: on an in-order queue a
/// marker the launch will follow at once; otherwise waits for everything queued before it.
pub fn start(queue: cl_command_queue, wait: &[cl_event]) -> Option<Timer> {
    if !crate::runtime::order::in_order(queue) {
        super::pace::ours();
        return drained(queue, DRAIN_LIMIT).then(|| Timer { start: Start::Drained(Instant::now()) });
    }
    let m = cmd::marker(queue, wait).ok()?;
    Some(Timer { start: Start::Marker(m) })
}

/// The launch's time in ns, once it completed.
pub fn stop(queue: cl_command_queue, t: Timer) -> Option<f64> {
    super::pace::ours();
    let started = match t.start {
        Start::Drained(at) => at,
        Start::Marker(m) => {
            let _ = cmd::flush(queue);
            // Yielding all the way: the moment it completes is the launch's start.
            if !wait_spinning(&m, DRAIN_LIMIT, DRAIN_LIMIT) {
                return None;
            }
            Instant::now()
        }
    };
    drained(queue, LAUNCH_LIMIT).then(|| started.elapsed().as_nanos() as f64)
}

/// What becomes of a launch's device time, in ns (None: it failed or could not be read).
pub type Record = Box<dyn FnOnce(Option<f64>) + Send>;

/// A profiled launch whose event has not been seen complete yet.
struct Pending {
    event: Event,
    record: Record,
}

static PENDING: Mutex<Vec<Pending>> = Mutex::new(Vec::new());

/// Whether `PENDING` or `APP_WAIT` may hold a launch: while neither does, `harvest` (at every
/// launch) reads this alone rather than taking their locks. Set before a launch is kept, under
/// its lock; a harvest that misses one just set finds it at the next launch.
static KEPT: AtomicBool = AtomicBool::new(false);

/// Launches awaiting their times, at most: past it a launch is not timed (a queue that never
/// completes must not grow the list).
const MAX_PENDING: usize = 256;

/// Whether `queue` profiles its commands, so that a launch on it is timed by its event.
pub fn profiles(queue: cl_command_queue) -> bool {
    crate::registry::get().queues.get(crate::registry::key(queue)).is_some_and(|q| q.profiling)
}

/// Times the launch whose event is `event` (on `queue`, which profiles) once it completes;
/// false when it cannot be kept (then it is not timed, and `record` is dropped unrun).
pub fn by_event(queue: cl_command_queue, event: cl_event, record: Record) -> bool {
    if PENDING.lock().len() >= MAX_PENDING {
        return false;
    }
    Event::retained_in(event, queue).is_some_and(|event| by_held_event(event, record))
}

/// `by_event`, for an event already held.
pub fn by_held_event(event: Event, record: Record) -> bool {
    let mut pending = PENDING.lock();
    if pending.len() >= MAX_PENDING {
        return false;
    }
    KEPT.store(true, Relaxed);
    pending.push(Pending { event, record });
    true
}

/// References kept on the application's event `event` (for its reference count).
pub fn holds(event: cl_event) -> usize {
    let waiting = APP_WAIT.lock().as_ref().is_some_and(|w| w.event.raw() == event);
    PENDING.lock().iter().filter(|p| p.event.raw() == event).count() + usize::from(waiting)
}

/// Records the times of the profiled launches that have completed since the last call. Called
/// with no lock held (the records take the kernels' models).
/// Whether launches timed by their events may have times to harvest (every repeated launch of
/// a kernel the model follows asks, before it calls [`harvest`]).
#[inline]
pub fn pending() -> bool {
    KEPT.load(Relaxed)
}

pub fn harvest() {
    if !KEPT.load(Relaxed) {
        return;
    }
    settle_stale();
    let done: Vec<Pending> = {
        let mut pending = PENDING.lock();
        if pending.is_empty() {
            if APP_WAIT.lock().is_none() {
                // Cleared under both locks: a launch kept meanwhile sets it again after.
                KEPT.store(false, Relaxed);
            }
            return;
        }
        // In launch order: on an in-order queue nothing after a launch still running has
        // completed, so the scan stops there and costs one query per launch it records.
        let running = pending
            .iter()
            .position(|p| matches!(event_status(p.event.raw()), Some(s) if s > CL_COMPLETE))
            .unwrap_or(pending.len());
        pending.drain(..running).collect()
    };
    for p in done {
        let ns = match event_status(p.event.raw()) {
            Some(CL_COMPLETE) => event_times(p.event.raw()).filter(|(s, e)| e > s).map(|(s, e)| (e - s) as f64),
            _ => None,
        };
        (p.record)(ns);
    }
}

/// Whether each entry point, by its place in the call counts, enqueues a command: made when
/// clayout is compiled (made at the first `clFinish`, it was some 4,000 instructions there).
const ENQUEUES: [bool; FN_COUNT] = {
    let mut all = [false; FN_COUNT];
    let mut i = 0;
    while i < FN_COUNT {
        all[i] = starts_with(FN_NAMES[i].as_bytes(), b"clEnqueue");
        i += 1;
    }
    all
};

const fn starts_with(name: &[u8], prefix: &[u8]) -> bool {
    if name.len() < prefix.len() {
        return false;
    }
    let mut i = 0;
    while i < prefix.len() {
        if name[i] != prefix[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The commands the application has enqueued so far, on any queue.
fn enqueued() -> u64 {
    (0..FN_COUNT).filter(|&i| ENQUEUES[i]).map(crate::stats::calls).sum()
}

/// The queue the application's last `clFinish` drained, and the commands enqueued by then.
static DRAINED: Mutex<Option<(usize, u64)>> = Mutex::new(None);

/// How soon after a launch's enqueue the application's `clFinish` must come for a launch that
/// had already completed to be timed up to it.
const PROMPT_WAIT: Duration = Duration::from_micros(50);

/// A launch waiting for the application's `clFinish` to time it.
struct AppWait {
    queue: usize,
    event: Event,
    started: Instant,
    /// When clayout had enqueued it.
    kept: Instant,
    /// The commands enqueued by then, this launch included.
    enqueued: u64,
    record: Record,
    /// Told when the wait was missed (`Missed`), before `record` gets no time.
    missed: Missed,
}

/// What becomes of a launch kept for the application's wait that got no time from it, since
/// the application enqueued more first or waited late.
pub type Missed = Box<dyn FnOnce() + Send>;

static APP_WAIT: Mutex<Option<AppWait>> = Mutex::new(None);

/// The application enqueued something else before it waited: the launches timed after that
/// use markers.
static APP_WAIT_MISSED: AtomicBool = AtomicBool::new(false);

/// Whether the launch about to be enqueued on `queue` (the one enqueue since the application's
/// `clFinish` drained it) can be timed by the application's own wait.
pub fn app_wait(queue: cl_command_queue) -> bool {
    if APP_WAIT_MISSED.load(Relaxed) {
        return false;
    }
    settle_stale();
    // This launch is counted already: it must be the one command since the queue was drained.
    let drained = *DRAINED.lock();
    drained.is_some_and(|d| Some(d) == enqueued().checked_sub(1).map(|n| (queue as usize, n)))
        && APP_WAIT.lock().is_none()
}

/// Keeps the launch just enqueued on `queue` (its event `event`, enqueued from `started` on)
/// for the application's next `clFinish`; false when it cannot be kept (then `record` and
/// `missed` are dropped unrun).
pub fn after_app_wait(
    queue: cl_command_queue,
    event: cl_event,
    started: Instant,
    record: Record,
    missed: Missed,
) -> bool {
    let Some(event) = Event::retained_in(event, queue) else { return false };
    // Submitted now: the driver may otherwise hold it until the application's wait.
    let _ = cmd::flush(queue);
    let mut slot = APP_WAIT.lock();
    if slot.is_some() {
        return false;
    }
    KEPT.store(true, Relaxed);
    *slot = Some(AppWait {
        queue: queue as usize,
        event,
        started,
        kept: Instant::now(),
        enqueued: enqueued(),
        record,
        missed,
    });
    true
}

/// A context is going: a launch still kept for the application's wait gets no time (its event
/// would hold the context).
pub fn forget_app_wait() {
    let kept = APP_WAIT.lock().take();
    if let Some(w) = kept {
        (w.record)(None);
    }
}

/// A launch kept for the application's wait, when something else was enqueued since: it gets
/// no time, and later launches are timed with markers.
fn settle_stale() {
    let stale = {
        let mut slot = APP_WAIT.lock();
        match slot.as_ref() {
            Some(w) if w.enqueued != enqueued() => slot.take(),
            _ => None,
        }
    };
    if let Some(w) = stale {
        w.miss();
    }
}

impl AppWait {
    /// The application's wait did not time this launch: it gets no time, its kernel learns it
    /// (`missed`), and the launches timed after it use markers.
    fn miss(self) {
        APP_WAIT_MISSED.store(true, Relaxed);
        (self.missed)();
        (self.record)(None);
    }
}

/// The application's `clFinish` on `queue`, around the real call (`finish`): times the launch
/// kept for it, and notes the queue drained.
pub fn app_finish(queue: cl_command_queue, finish: impl FnOnce() -> cl_int) -> cl_int {
    if !super::super::order::tracking() {
        // No annotated program yet, or a declined run left untracked: nothing is timed, and
        // nothing of the queue's pace counts; the run's own pace is measured, for the record
        // of a program the run declined (`pace::run_finished`).
        let entering = super::pace::entering();
        let r = finish();
        let done = Instant::now();
        crate::guard("cost model", || super::pace::run_finished(entering, r == CL_SUCCESS, done));
        return r;
    }
    let waiting = crate::guard("cost model", || {
        settle_stale();
        let w = {
            let mut slot = APP_WAIT.lock();
            match slot.as_ref() {
                Some(w) if w.queue == queue as usize => slot.take()?,
                _ => return None,
            }
        };
        // A launch that completed before this wait began ended somewhere before it: only a
        // wait that came at once bounds it closely.
        let now = Instant::now();
        let end = match event_status(w.event.raw()) {
            Some(s) if s > CL_COMPLETE => None,
            Some(CL_COMPLETE) if now - w.kept <= PROMPT_WAIT => Some(now),
            _ => {
                w.miss();
                return None;
            }
        };
        Some((w, end))
    })
    .flatten();
    // Counted before the wait: a command another thread enqueues meanwhile is not taken for
    // one the wait drained.
    let before = enqueued();
    let entering = super::pace::entering();
    let r = finish();
    let done = Instant::now();
    crate::guard("cost model", || super::pace::finished(queue, entering, r == CL_SUCCESS));
    crate::guard("cost model", || {
        if let Some((w, end)) = waiting {
            let ns = (r == CL_SUCCESS).then(|| (end.unwrap_or(done) - w.started).as_nanos() as f64);
            (w.record)(ns);
        }
        if r == CL_SUCCESS {
            *DRAINED.lock() = Some((queue as usize, before));
        }
    });
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_enqueues_are_the_entry_points_named_so() {
        for (i, name) in FN_NAMES.iter().enumerate() {
            assert_eq!(ENQUEUES[i], name.starts_with("clEnqueue"), "{name}");
        }
        assert!(ENQUEUES.iter().filter(|&&e| e).count() > 20);
    }
}
