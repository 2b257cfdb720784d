//! Whether the device keeps up with the host: the launches of a kernel whose device time hides
//! behind the host's own (a loop of kernels of a few microseconds, each launch costing the
//! driver more than the device) cannot gain anything from a faster form, and a conversion or a
//! copy's launch only adds to them.
//!
//! Measured where it costs nothing: at the application's `clFinish`. From the end of the first
//! launch on a queue since the application's last `clFinish` there (or since the queue's first
//! launch through clayout's full path) to its next `clFinish` on it, with no other wait of the
//! application's or of clayout's timings in between, the host spent `S`, and the `clFinish`
//! took `W`: the device's work left when the host was done. A form that
//! takes less device time shortens at most `W`; where `W` is at most `hidden::PACED` of `S`
//! (and a few launches' worth, `hidden::BACKLOG`), no form can gain more than that share of the
//! run. The verdict is kept per kernel and size class (`model::Times::waited`, `hidden`).
//!
//! A loop that waits for its launches one by one (`clWaitForEvents`, a blocking read, polling
//! an event's status) makes the device's time count in full whatever the last wait says: a
//! stretch with such a wait of the application's is not measured.

use super::hidden::Wait;
use super::kernel::KernelModel;
use super::size::SizeClass;
use opencl_sys::cl_command_queue;
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Weak};
use std::time::Instant;

/// A kernel whose launches the waits measure.
pub trait Paced: Send + Sync {
    fn model(&self) -> &Mutex<KernelModel>;
}

/// A queue's kernels, launched through the full path since it was seen first, and what the
/// application's next wait on it compares with.
struct Queue {
    queue: usize,
    /// The end of the first launch on the queue since the application's last `clFinish` there,
    /// and the application's and clayout's own waits by then (the stretch is measured only if
    /// there are no more): where the host's time starts (not at the wait before, so that what
    /// clayout does once in a first launch's call, a build the application waits for, does not
    /// count).
    first: Option<First>,
    /// Its first launch since the application's last `clFinish` on it not marked yet. A queue
    /// starts so: waiting for the `clFinish` before its first stretch as well, as until the
    /// thirty-ninth session, measured nothing in a run whose loop had no `clFinish` before it
    /// (a blocking write, then the launches), nor in one declined at its build whose copies
    /// were bought mid-run (its first `clFinish` came untracked), which is where a verdict
    /// counts.
    armed: bool,
    /// Each kernel, its size class and structures at its last launch through the full path.
    kernels: Vec<(usize, Weak<dyn Paced>, SizeClass, f64)>,
}

/// Where a queue's stretch starts: the end of its first launch, and the application's and
/// clayout's own waits by then.
#[derive(Clone, Copy)]
struct First {
    at: Instant,
    waits: u64,
    ours: u64,
}

/// A kernel launched on a queue since its last wait, with its size class and structures at its
/// last launch through the full path.
type Launched = (Arc<dyn Paced>, SizeClass, f64);

/// Queues followed, and kernels per queue, at most: past them the oldest goes.
const MAX_QUEUES: usize = 64;
const MAX_KERNELS: usize = 32;

static QUEUES: Mutex<Vec<Queue>> = Mutex::new(Vec::new());

/// The application's waits so far (its `clFinish`, `clWaitForEvents`, blocking commands, event
/// status queries).
static APP_WAITS: AtomicU64 = AtomicU64::new(0);

/// clayout's own timings that made an application's thread wait for its queue, so far.
static OURS: AtomicU64 = AtomicU64::new(0);

/// The application's `clFinish` calls so far: a launch that repeats the last (`transparent::
/// repeat`) marks its queue's first launch only after one (`launched`).
static FINISHES: AtomicU64 = AtomicU64::new(0);

pub fn finishes() -> u64 {
    FINISHES.load(Relaxed)
}

/// The run's own stretches, whatever clayout tracks (`app_launched`, `run_finished`): where the
/// application's first launch since its last `clFinish` was enqueued (`clock_ns`; 0: none yet),
/// and the application's waits by then.
static RUN_FIRST: AtomicU64 = AtomicU64::new(0);
static RUN_FIRST_WAITS: AtomicU64 = AtomicU64::new(0);

/// The run's longest stretch measured, host time and wait in ns (`run_stretch`).
static RUN_STRETCH: Mutex<Option<(f64, f64)>> = Mutex::new(None);

/// `t` in nanoseconds of a monotonic clock, never 0 (from the first call on).
fn clock_ns(t: Instant) -> u64 {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    t.saturating_duration_since(*EPOCH.get_or_init(Instant::now)).as_nanos() as u64 + 1
}

/// The application enqueues a kernel: the first since its last `clFinish` marks where the
/// host's time starts. One load a launch: the clock is read by the first only. Apart from the
/// queues' marks (`launched`), which the kernels' own verdicts read and which only launches
/// through clayout's full path or a lane that saw a `clFinish` set: particles' runs of 30 and
/// 100 launches set none of them, on PoCL or on the H200, and recorded no verdict (one run of
/// 1000 launches did, once).
pub fn app_launched() {
    if RUN_FIRST.load(Relaxed) == 0 {
        let waits = APP_WAITS.load(Relaxed);
        if RUN_FIRST.compare_exchange(0, clock_ns(Instant::now()), Relaxed, Relaxed).is_ok() {
            RUN_FIRST_WAITS.store(waits, Relaxed);
        }
    }
}

/// The application's `clFinish`, which began at `e`, returned at `done` (`ok`: successfully):
/// the stretch since the application's first launch after its last one is the run's
/// (`note_stretch`), where no other wait of the application's came in between. clayout's own
/// waits for its timings in the stretch can only shorten the application's wait (the device's
/// work was waited for there), never make the device look behind.
pub fn run_finished(e: Entering, ok: bool, done: Instant) {
    let first = RUN_FIRST.swap(0, Relaxed);
    if !ok || first == 0 || RUN_FIRST_WAITS.load(Relaxed) != e.waits {
        return;
    }
    let host = clock_ns(e.at).saturating_sub(first) as f64;
    note_stretch(host, done.saturating_duration_since(e.at).as_nanos() as f64);
}

/// A stretch of `host_ns` of the host's time, whose wait took `wait_ns`: kept where it is the
/// run's longest so far, and long enough to say anything (`hidden::MIN_HOST_NS`).
fn note_stretch(host_ns: f64, wait_ns: f64) {
    if host_ns < super::hidden::MIN_HOST_NS {
        return;
    }
    let mut kept = RUN_STRETCH.lock();
    if kept.is_none_or(|(h, _)| host_ns > h) {
        *kept = Some((host_ns, wait_ns));
        crate::log::debug_with(|| {
            format!(
                "the run's longest stretch so far: {:.3} ms of the host's time, then a wait of {:.1} us",
                host_ns / 1e6,
                wait_ns / 1e3
            )
        });
    }
}

/// The run's longest stretch of the host's time between two of the application's waits, and its
/// wait, in ns: what the program's record keeps of whether its loops were bound by the device
/// (`worth::Run::stretch`).
pub fn run_stretch() -> Option<(f64, f64)> {
    *RUN_STRETCH.lock()
}

/// The application waited (or polled) for a command.
pub fn app_waited() {
    APP_WAITS.fetch_add(1, Relaxed);
}

/// clayout's timing of a launch makes the application's thread wait for its queue.
pub fn ours() {
    OURS.fetch_add(1, Relaxed);
}

/// A launch of `kernel` (at `class`, of `structures`) on `queue` goes through the full path:
/// the application's waits on `queue` measure it from now on.
pub fn joined<K: Paced + 'static>(queue: cl_command_queue, kernel: &Arc<K>, class: SizeClass, structures: f64) {
    let ptr = Arc::as_ptr(kernel) as usize;
    let mut queues = QUEUES.lock();
    let q = queue_of(&mut queues, queue as usize);
    match q.kernels.iter_mut().find(|(p, _, _, _)| *p == ptr) {
        Some(k) => (k.2, k.3) = (class, structures),
        None => {
            q.kernels.retain(|(_, k, _, _)| k.strong_count() > 0);
            if q.kernels.len() >= MAX_KERNELS {
                q.kernels.remove(0);
            }
            let weak: Weak<dyn Paced> = Arc::downgrade(kernel) as Weak<dyn Paced>;
            q.kernels.push((ptr, weak, class, structures));
        }
    }
}

/// A launch on `queue` was enqueued: the first since the application's last wait there marks
/// where the host's time starts.
pub fn launched(queue: cl_command_queue) {
    let mut queues = QUEUES.lock();
    if let Some(q) = queues.iter_mut().find(|q| q.queue == queue as usize && q.armed) {
        q.armed = false;
        q.first = Some(First { at: Instant::now(), waits: APP_WAITS.load(Relaxed), ours: OURS.load(Relaxed) });
    }
}

fn queue_of(queues: &mut Vec<Queue>, queue: usize) -> &mut Queue {
    let at = match queues.iter().position(|q| q.queue == queue) {
        Some(i) => i,
        None => {
            if queues.len() >= MAX_QUEUES {
                queues.remove(0);
            }
            queues.push(Queue { queue, first: None, armed: true, kernels: Vec::new() });
            queues.len() - 1
        }
    };
    &mut queues[at]
}

/// What the application's wait starting now compares with: taken before the real call.
#[derive(Clone, Copy)]
pub struct Entering {
    at: Instant,
    waits: u64,
    ours: u64,
}

pub fn entering() -> Entering {
    Entering { at: Instant::now(), waits: APP_WAITS.load(Relaxed), ours: OURS.load(Relaxed) }
}

/// The application's `clFinish` on `queue`, which began at `e`, returned (`ok`: successfully):
/// the kernels launched on the queue since its last one learn the wait's share of the host's
/// time since the first of those launches, when no other wait of the application's came in
/// between.
pub fn finished(queue: cl_command_queue, e: Entering, ok: bool) {
    let done = Instant::now();
    run_finished(e, ok, done);
    app_waited();
    FINISHES.fetch_add(1, Relaxed);
    let (first, kernels) = {
        let mut queues = QUEUES.lock();
        let q = queue_of(&mut queues, queue as usize);
        let first = q.first.take();
        q.armed = true;
        // On the stack: a program that waits after every launch comes here as often.
        let kernels: SmallVec<[Launched; 4]> =
            q.kernels.iter().filter_map(|(_, k, c, m)| Some((k.upgrade()?, *c, *m))).collect();
        (first, kernels)
    };
    // The kernels launched since the last wait, and the longest launch among them.
    let mut ran: SmallVec<[(Arc<dyn Paced>, SizeClass); 4]> = SmallVec::new();
    let mut longest: Option<f64> = Some(0.0);
    for (k, class, m) in kernels {
        let mut model = k.model().lock();
        if model.launched_since_wait() {
            longest = longest.zip(model.launch_ns(class, m)).map(|(a, b)| a.max(b));
            drop(model);
            ran.push((k, class));
        }
    }
    let measured = match (first, longest) {
        // A stretch in which clayout's timings waited for the queue says nothing: the device's
        // work left was waited for there, not at the application's wait (particles at 262,144 on
        // the H100, whose run that timed its staged copy near its end found the device
        // keeping up as written, and the next run found it behind).
        (Some(first), Some(longest)) if ok && first.waits == e.waits && !ran.is_empty() && e.ours == first.ours => {
            let host = e.at.saturating_duration_since(first.at).as_nanos() as f64;
            let wait = done.saturating_duration_since(e.at).as_nanos() as f64;
            if crate::log::enabled(crate::config::LogLevel::Debug) {
                crate::log::debug(&format!(
                    "the application's wait took {:.1} us after {:.3} ms of the host's time ({} kernel(s), the longest launch timed at {:.1} us)",
                    wait / 1e3,
                    host / 1e6,
                    ran.len(),
                    longest / 1e3
                ));
            }
            Some(Wait::new(host, wait, longest))
        }
        _ => None,
    };
    let Some(wait) = measured else { return };
    for (k, class) in ran {
        k.model().lock().waited(class, wait);
    }
}
