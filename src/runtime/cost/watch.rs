//! Launches timed with markers, watched by a thread of clayout's rather than waited for by the
//! application's.
//!
//! On an in-order queue a timed launch goes between two markers: the one before is enqueued
//! right before it, the one after right after it, and the launch ran from the moment the one
//! before was seen complete (or its own enqueue returned, if later) to the moment the one after
//! was. Waiting for them on the application's thread (`measure::stop`) held the application
//! until the launch had run, and the device then idled while the host enqueued the next
//! command: some 25 us per timed launch of particles on the H100 (`model::TIMING_NS`). Here the
//! application's thread only enqueues the marker after and goes on; the watcher polls both
//! markers' status and hands the time to the launch's record.
//!
//! A launch whose markers had both completed before the watcher first looked at them gets no
//! time (it can only say the launch took less than that): the watcher was asleep, or the
//! machine too busy for it. After [`MISSES`] such launches the process goes back to waiting on
//! the application's thread, which always times. So does a forked child (it has no watcher).

use super::measure::Record;
use crate::cl::{cmd, info::event_status, Event};
use crate::config::Watch;
use opencl_sys::*;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// How long the marker before may take to complete (the commands queued before the launch).
const DRAIN_LIMIT: Duration = Duration::from_secs(2);
/// How long the launch itself may take once the marker before completed.
const LAUNCH_LIMIT: Duration = Duration::from_secs(10);
/// How long the watcher keeps polling after its last launch before it sleeps: the kernels of a
/// step are timed one after another, and a watcher woken from sleep may look too late at the
/// next one's markers.
const HOT: Duration = Duration::from_millis(2);
/// Launches timed too late before the process waits for its timed launches itself again.
const MISSES: u32 = 2;

struct Watched {
    before: Event,
    after: Event,
    /// When the launch's enqueue returned: it started no earlier.
    launched: Instant,
    /// The host time of the launch's own enqueue, which the device waited for when the queue
    /// had drained before it.
    enqueue_ns: f64,
    handed: Instant,
    /// When the marker before was seen complete.
    started: Option<Instant>,
    record: Record,
}

/// What came of one look at a launch's markers.
enum Look {
    Running,
    Done(Option<f64>),
}

impl Watched {
    fn look(&mut self, now: Instant) -> Look {
        // Seen complete only now: the launch started some time since the last look.
        let fresh = self.started.is_none();
        if fresh {
            match event_status(self.before.raw()) {
                Some(CL_COMPLETE) => self.started = Some(now.max(self.launched)),
                Some(s) if s > CL_COMPLETE && now - self.handed <= DRAIN_LIMIT => return Look::Running,
                _ => return Look::Done(None),
            }
        }
        let started = self.started.expect("set above");
        match event_status(self.after.raw()) {
            Some(CL_COMPLETE) if fresh => {
                // Both completed between two looks (or before the first): when the launch
                // started is not known.
                if MISSED.fetch_add(1, Relaxed) + 1 == MISSES {
                    crate::log::debug(
                        "cost model: launches timed with markers completed before clayout's watcher saw them; \
                         timed launches are waited for again",
                    );
                }
                Look::Done(None)
            }
            Some(CL_COMPLETE) => Look::Done(Some((now - started).as_nanos() as f64 + self.enqueue_ns)),
            Some(s) if s > CL_COMPLETE && now - started <= LAUNCH_LIMIT => Look::Running,
            _ => Look::Done(None),
        }
    }
}

#[derive(Default)]
struct State {
    started: bool,
    /// No watcher thread could be started: timed launches are waited for.
    failed: bool,
    /// The watcher sleeps (so that a launch about to be timed wakes it).
    asleep: bool,
}

static WATCHED: Mutex<Vec<Watched>> = Mutex::new(Vec::new());
static STATE: Mutex<State> = Mutex::new(State { started: false, failed: false, asleep: false });
static WAKE: Condvar = Condvar::new();
static MISSED: AtomicU32 = AtomicU32::new(0);
/// Set at exit: the watcher stops, and launches are waited for.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether launches timed with markers are watched (rather than waited for).
fn on() -> bool {
    MISSED.load(Relaxed) < MISSES && !CLOSED.load(Relaxed) && !crate::stats::forked_child()
}

/// Whether launches timed with markers on `queue` are watched (CLAYOUT_WATCH).
fn watches(queue: cl_command_queue) -> bool {
    match crate::config::get().watch {
        Watch::On => true,
        Watch::Off => false,
        Watch::Auto => crate::cl::info::queue_device(queue).is_some_and(|d| {
            let ty: cl_device_type = crate::cl::info::device_scalar(d, CL_DEVICE_TYPE);
            ty & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR) != 0
        }),
    }
}

/// A launch is about to be timed: the watcher, if asleep, is woken now, so that it looks at the
/// markers before the launch completes.
pub fn ready(queue: cl_command_queue) {
    if !on() || !watches(queue) {
        return;
    }
    wake();
}

/// Starts the watcher, or wakes it if it sleeps.
fn wake() {
    let mut s = STATE.lock();
    if !s.started {
        s.started = true;
        let spawned = std::thread::Builder::new().name("clayout-timer".into()).spawn(run);
        match spawned {
            // Registered once the driver is loaded, so that it runs before the driver's own.
            // SAFETY: a plain extern "C" fn with no captured state.
            Ok(_) => unsafe {
                libc::atexit(at_exit);
            },
            Err(e) => {
                crate::log::debug(&format!("cost model: no watcher thread ({e}); timed launches are waited for"));
                s.failed = true;
            }
        }
    } else if s.asleep {
        s.asleep = false;
        WAKE.notify_one();
    }
}

/// Hands the launch just enqueued on the in-order `queue` after the marker `before` to the
/// watcher, with a marker after it; gives `before` and `record` back when it cannot (then the
/// caller waits for them).
pub fn watch(
    queue: cl_command_queue,
    before: Event,
    launched: Instant,
    enqueue_ns: f64,
    record: Record,
) -> Result<(), (Event, Record)> {
    if !on() || !watches(queue) || STATE.lock().failed {
        return Err((before, record));
    }
    let Ok(after) = cmd::marker(queue, &[]) else { return Err((before, record)) };
    // Submitted now: a driver may hold the commands until the application's next wait.
    let _ = cmd::flush(queue);
    let handed = Instant::now();
    WATCHED.lock().push(Watched { before, after, launched, enqueue_ns, handed, started: None, record });
    wake();
    Ok(())
}

fn run() {
    let mut idle_since = Instant::now();
    loop {
        let done: Vec<(Record, Option<f64>)> = {
            let mut w = WATCHED.lock();
            let now = Instant::now();
            let mut done = Vec::new();
            let mut i = 0;
            while i < w.len() {
                match w[i].look(now) {
                    Look::Running => i += 1,
                    Look::Done(ns) => done.push((w.swap_remove(i).record, ns)),
                }
            }
            if !w.is_empty() {
                idle_since = now;
            }
            done
        };
        for (record, ns) in done {
            record(ns);
        }
        if CLOSED.load(Relaxed) {
            return;
        }
        if idle_since.elapsed() > HOT {
            let mut s = STATE.lock();
            if WATCHED.lock().is_empty() {
                s.asleep = true;
                WAKE.wait(&mut s);
                idle_since = Instant::now();
            }
        } else {
            std::thread::yield_now();
        }
    }
}

/// Gives every launch being watched its time, waiting up to `limit` for their markers: a
/// context is going (the markers' events hold it), or the process is exiting. What is still
/// running by then gets no time.
pub fn settle(limit: Duration) {
    // A forked child has no watcher; what the parent was watching is the parent's.
    if crate::stats::forked_child() {
        return;
    }
    let t0 = Instant::now();
    while !WATCHED.lock().is_empty() && t0.elapsed() < limit && STATE.lock().started && !CLOSED.load(Relaxed) {
        std::thread::sleep(Duration::from_micros(50));
    }
    let left: Vec<Watched> = std::mem::take(&mut *WATCHED.lock());
    for w in left {
        (w.record)(None);
    }
}

extern "C" fn at_exit() {
    if crate::stats::forked_child() {
        return;
    }
    crate::guard::guard("timed launches at exit", || settle(Duration::from_millis(200)));
    CLOSED.store(true, Relaxed);
    let _s = STATE.lock();
    WAKE.notify_one();
}
