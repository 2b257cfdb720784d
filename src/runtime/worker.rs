//! Clayout's own thread, where it builds what it needs (rewritten programs, probes, conversion
//! kernels) off the application's calls: a build can take seconds on a cold driver, and the
//! application's first launches run as written meanwhile, or wait where they cannot.
//!
//! A job may be held back until a moment (`submit_after`): under the cost model clayout's builds
//! start only once the application has run about as long as they will take, so a short run never
//! pays for them. A job nobody has started is dropped when its context goes or the process exits;
//! a job that has started is always waited for, since a process that exits while one of its
//! threads is inside `clBuildProgram` can crash in the driver (measured on NVIDIA: about half of
//! such exits ended in SIGSEGV or SIGABRT, docs/cost-model.md).

use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum End {
    #[default]
    Pending,
    Ran,
    /// Dropped before it started: what it would have made was never made.
    Dropped,
}

/// The end of one job, shared by whoever waits for it.
#[derive(Debug, Default)]
struct Done {
    end: Mutex<End>,
    cv: Condvar,
    /// Someone waits for it: it runs as soon as the worker is free, whatever its start time.
    urgent: AtomicBool,
}

/// A job submitted to the worker.
#[derive(Clone, Debug)]
pub struct Ticket(Arc<Done>);

impl Ticket {
    pub fn is_done(&self) -> bool {
        *self.0.end.lock() != End::Pending
    }

    /// Whether the job was dropped without running.
    pub fn dropped(&self) -> bool {
        *self.0.end.lock() == End::Dropped
    }

    /// Blocks until the job has run or was dropped. A job held back starts at once.
    pub fn wait(&self) {
        self.hurry();
        let mut d = self.0.end.lock();
        while *d == End::Pending {
            self.0.cv.wait(&mut d);
        }
    }

    /// A ticket for a job to be submitted with `submit_ticket` (handed out first, so that
    /// whoever looks for the job finds it before it can run).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Ticket {
        Ticket(Arc::new(Done::default()))
    }

    /// A ticket whose job has already run.
    pub fn done() -> Ticket {
        Ticket(Arc::new(Done { end: Mutex::new(End::Ran), ..Done::default() }))
    }

    /// Starts the job as soon as the worker is free, whatever its start time, without waiting
    /// for it.
    pub fn hurry(&self) {
        if !self.0.urgent.swap(true, Ordering::AcqRel) {
            if let Some(w) = worker() {
                let _jobs = w.jobs.lock();
                w.wake.notify_all();
            }
        }
    }

    fn finish(&self, end: End) {
        *self.0.end.lock() = end;
        // A lane that repeats launches made while the job ran (`Holds::Building`) ends with it.
        super::world::changed();
        self.0.cv.notify_all();
    }
}

type Job = Box<dyn FnOnce() + Send>;

struct Queued {
    job: Job,
    ticket: Ticket,
    /// The context the job builds for (0: none in particular).
    context: usize,
    not_before: Option<Instant>,
}

impl Queued {
    fn ready(&self, now: Instant) -> bool {
        self.ticket.0.urgent.load(Ordering::Acquire) || self.not_before.is_none_or(|t| t <= now)
    }
}

#[derive(Default)]
struct Jobs {
    queue: VecDeque<Queued>,
    /// The context of the job running now, if one is.
    running: Option<usize>,
    /// When the worker looks at the queue next without being woken (None: only when woken), and
    /// its looks in a row that found nothing to run (`POLL`).
    next_look: Option<Instant>,
    empty_looks: u32,
}

/// How often the worker looks at its queue while it had work lately (for `POLL_LOOKS` looks
/// that find nothing to run), rather than sleeping until a job wakes it: a job held back past
/// its next look (`submit_ticket`) is then queued without a wake. Why: a declined run's build
/// call queues the copies' build held back until the run has lasted as long as that build, and
/// waking the worker there was 5-6 us of the call's 30-40 on the H200's host (docs/results.md,
/// "Inlining, and what is left of a short run's time"); the worker starts beside that build
/// (`start`), so it looks every millisecond then.
const POLL: Duration = Duration::from_millis(1);
const POLL_LOOKS: u32 = 50;

struct Worker {
    jobs: Mutex<Jobs>,
    /// Wakes the worker (a job came or hurries) and those waiting for the running job to end.
    wake: Condvar,
    /// Asked of the running job: stop at its next safe point (its context or the process goes).
    cancel: AtomicBool,
}

/// Starts the worker's thread, where the caller runs beside the application's call that would
/// otherwise start it (`program::Build::read_ahead`): a thread's start is a few tens of
/// microseconds of the application's time.
pub fn start() {
    let _ = worker();
}

fn worker() -> Option<&'static Worker> {
    static W: once_cell::sync::OnceCell<Option<Worker>> = once_cell::sync::OnceCell::new();
    W.get_or_init(|| {
        let spawned = std::thread::Builder::new().name("clayout-worker".into()).spawn(run);
        match spawned {
            Ok(_) => {
                // Registered now, after the OpenCL implementation was loaded and set up: exit()
                // runs it before that implementation's own exit handlers.
                // SAFETY: registering a plain extern "C" fn with no captured state.
                unsafe { libc::atexit(at_exit) };
                Some(Worker { jobs: Mutex::new(Jobs::default()), wake: Condvar::new(), cancel: AtomicBool::new(false) })
            }
            Err(e) => {
                crate::log::warn(&format!(
                    "clayout's build thread could not start ({e}); its builds run in the calls that need them"
                ));
                None
            }
        }
    })
    .as_ref()
}

fn run() {
    // Blocks until the record this thread belongs to is set (the OnceCell's initializer spawned
    // it and returns without waiting for it).
    let Some(w) = worker() else { return };
    let mut jobs = w.jobs.lock();
    loop {
        let now = Instant::now();
        if let Some(i) = jobs.queue.iter().position(|q| q.ready(now)) {
            let q = jobs.queue.remove(i).expect("position is in the queue");
            jobs.running = Some(q.context);
            // It looks again as soon as the job ends.
            jobs.next_look = Some(now);
            jobs.empty_looks = 0;
            w.cancel.store(false, Ordering::Release);
            drop(jobs);
            crate::guard("background build", q.job);
            q.ticket.finish(End::Ran);
            jobs = w.jobs.lock();
            jobs.running = None;
            w.wake.notify_all();
            continue;
        }
        let polling = jobs.empty_looks < POLL_LOOKS;
        jobs.empty_looks = jobs.empty_looks.saturating_add(1);
        let due = jobs.queue.iter().filter_map(|q| q.not_before).min();
        let look = match (due, polling) {
            (Some(t), true) => Some(t.min(now + POLL)),
            (None, true) => Some(now + POLL),
            (due, false) => due,
        };
        // Set under the lock the submitters read it under (`submit_ticket`).
        jobs.next_look = look;
        match look {
            Some(t) => {
                w.wake.wait_until(&mut jobs, t);
            }
            None => w.wake.wait(&mut jobs),
        }
    }
}

/// Runs `job` on the worker, in submission order. Without a worker (the thread could not be
/// started) it runs now, in the caller.
pub fn submit(job: impl FnOnce() + Send + 'static) -> Ticket {
    submit_after(0, None, job)
}

/// Runs `job` on the worker for `context` (0: none), not before `not_before` unless someone waits
/// for its ticket first.
pub fn submit_after(context: usize, not_before: Option<Instant>, job: impl FnOnce() + Send + 'static) -> Ticket {
    let ticket = Ticket::new();
    submit_ticket(ticket.clone(), context, not_before, job);
    ticket
}

/// `submit_after` with a ticket made beforehand.
pub fn submit_ticket(ticket: Ticket, context: usize, not_before: Option<Instant>, job: impl FnOnce() + Send + 'static) {
    if CLOSED.load(Ordering::Acquire) {
        // The process is exiting: nothing may start a build any more.
        ticket.finish(End::Dropped);
        return;
    }
    match worker() {
        Some(w) => {
            let mut jobs = w.jobs.lock();
            // Held back past the worker's next look: that look finds it, without a wake.
            let found = not_before.is_some_and(|t| jobs.next_look.is_some_and(|look| look <= t));
            jobs.queue.push_back(Queued { job: Box::new(job), ticket: ticket.clone(), context, not_before });
            jobs.empty_looks = 0;
            if !found {
                w.wake.notify_all();
            }
        }
        None => {
            crate::guard("build", job);
            ticket.finish(End::Ran);
        }
    }
}

/// Whether the running job was asked to stop (its context or the process is going): a job of
/// several builds checks between them. Not inside [`finishing`].
pub fn cancelled() -> bool {
    !FINISHING.get() && worker().is_some_and(|w| w.cancel.load(Ordering::Acquire))
}

thread_local! {
    /// This thread runs a piece of a stopped job that is let finish (`finishing`).
    static FINISHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, a piece of a job asked to stop that the job lets finish (the one piece a build of
/// the copies still makes once its run is over: transparent::private's `Steps`), as if the job
/// had not been asked: the timing of a conversion checks `cancelled` before it starts, and a
/// run's exit otherwise never got one made (nor kept).
pub fn finishing<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            FINISHING.set(self.0);
        }
    }
    let _reset = Reset(FINISHING.replace(true));
    f()
}

/// Waits, at most `limit`, for the ticket's job to run or be dropped; whether it did.
pub fn wait_for(ticket: &Ticket, limit: Duration) -> bool {
    ticket.hurry();
    let mut d = ticket.0.end.lock();
    if *d == End::Pending {
        ticket.0.cv.wait_for(&mut d, limit);
    }
    *d != End::Pending
}

/// An application's context is going (`Some`) or the process is (`None`): the jobs for it that
/// have not started are dropped, and the one running is asked to stop and waited for, at most
/// `limit` (what clayout builds for a context must be done before its references are counted;
/// a build must not be running when the process exits).
pub fn settle(context: Option<usize>, limit: Duration) {
    let Some(w) = worker() else { return };
    let mut jobs = w.jobs.lock();
    let take = |queue: &mut VecDeque<Queued>| -> VecDeque<Queued> {
        let (keep, dropped) = std::mem::take(queue).into_iter().partition(|q| context.is_some_and(|c| q.context != c));
        *queue = keep;
        dropped
    };
    let mut dropped = take(&mut jobs.queue);
    // A job of no particular context may build for this one: it is waited for, not stopped.
    let stop = |r: Option<usize>| r.is_some_and(|r| context.is_none_or(|c| r == c));
    let waits = |r: Option<usize>| r.is_some_and(|r| context.is_none_or(|c| r == c || r == 0));
    if stop(jobs.running) {
        w.cancel.store(true, Ordering::Release);
    }
    let end = Instant::now() + limit;
    while waits(jobs.running) {
        if w.wake.wait_until(&mut jobs, end).timed_out() {
            break;
        }
    }
    // What the job that was running queued meanwhile: a build of the copies queues the tile
    // search held back a minute, whose reference on the context kept the context alive that
    // long after the application's last release (its destructor callback came a minute late).
    dropped.extend(take(&mut jobs.queue));
    drop(jobs);
    // Outside the lock: a dropped job releases the references it held.
    for q in dropped {
        q.ticket.finish(End::Dropped);
    }
}

/// Set once the process exits.
static CLOSED: AtomicBool = AtomicBool::new(false);

extern "C" fn at_exit() {
    CLOSED.store(true, Ordering::Release);
    // A forked child has no worker thread: the job it saw running never ends there.
    if crate::stats::forked_child() {
        return;
    }
    crate::guard::guard("builds at exit", || settle(None, Duration::from_secs(60)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn a_held_back_job_waits_for_its_time_or_a_waiter() {
        let n = Arc::new(AtomicU32::new(0));
        let later = {
            let n = n.clone();
            submit_after(0, Some(Instant::now() + Duration::from_secs(3600)), move || {
                n.fetch_add(1, Ordering::SeqCst);
            })
        };
        let now = {
            let n = n.clone();
            submit(move || {
                n.fetch_add(10, Ordering::SeqCst);
            })
        };
        now.wait();
        assert_eq!(n.load(Ordering::SeqCst), 10, "the held-back job ran before its time");
        assert!(!later.is_done());
        later.wait();
        assert_eq!(n.load(Ordering::SeqCst), 11);
        assert!(!later.dropped());
    }

    /// A job held back past the worker's next look is queued without waking it, and runs at its
    /// time all the same: the worker looks every `POLL` while it had work lately.
    #[test]
    fn a_job_held_back_past_the_next_look_runs_at_its_time_without_a_wake() {
        submit(|| {}).wait();
        let soon = Instant::now() + Duration::from_millis(20);
        let ticket = submit_after(0, Some(soon), || {});
        let limit = Instant::now() + Duration::from_secs(10);
        while !ticket.is_done() && Instant::now() < limit {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(ticket.is_done(), "the held-back job never ran without a waiter");
        assert!(Instant::now() >= soon, "it ran before its time");
    }

    #[test]
    fn settling_a_context_drops_its_unstarted_jobs_only() {
        let far = Some(Instant::now() + Duration::from_secs(3600));
        let (a, b) = (submit_after(0x5e77_1e01, far, || {}), submit_after(0x5e77_1e02, far, || {}));
        settle(Some(0x5e77_1e01), Duration::from_secs(10));
        assert!(a.dropped(), "the job of the context that went was not dropped");
        assert!(!b.is_done(), "the job of another context was touched");
        b.wait();
        assert!(!b.dropped());
    }

    /// A job that queues another for its context while the context's settling waits for it (a
    /// load of the copies queues the tile search, held back a minute): the queued job is dropped
    /// too, with the references it holds, before the settling returns. It was kept, and its
    /// reference on the application's context kept the context from going for that minute.
    #[test]
    fn settling_drops_the_jobs_the_running_one_queues_meanwhile() {
        const CONTEXT: usize = 0x5e77_1e03;
        let (started, queued) = (Arc::new(AtomicBool::new(false)), Arc::new(Mutex::new(None)));
        let held = Arc::new(());
        let running = {
            let (started, queued, held) = (started.clone(), queued.clone(), held.clone());
            submit_after(CONTEXT, None, move || {
                started.store(true, Ordering::SeqCst);
                let asked = Instant::now() + Duration::from_secs(10);
                while !cancelled() && Instant::now() < asked {
                    std::thread::sleep(Duration::from_millis(1));
                }
                let far = Some(Instant::now() + Duration::from_secs(3600));
                *queued.lock() = Some(submit_after(CONTEXT, far, move || drop(held)));
            })
        };
        while !started.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        settle(Some(CONTEXT), Duration::from_secs(20));
        assert!(running.is_done());
        let later = queued.lock().take().expect("the running job queued one");
        assert!(later.dropped(), "the job queued while the context settled was kept");
        assert_eq!(Arc::strong_count(&held), 1, "the dropped job still holds its references");
    }
}
