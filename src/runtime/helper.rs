//! A thread of clayout's that runs work beside one of the application's calls, started beside
//! the application's first context creation (tens of milliseconds of the driver's), so that the
//! call does not start a thread of its own: the reading of a program beside its build started
//! one in every `clBuildProgram`, and clayout's time there before the real build went from
//! 115-122 to 28-31 us on the H100 with this thread (docs/results.md, "What a layer costs a
//! short run").
//!
//! The thread first maps clayout's code into the process (`warm::map_code`) and does what its
//! starter gives it to do ahead of the application's builds (`program::ahead_of_builds`), then
//! waits for jobs, one at a time. A caller whose job it takes waits for the job's end before
//! returning; where the helper is busy with another thread's job, was never started, or does not
//! exist in this process (a child forked after it started), [`try_run`] gives the job back and
//! the caller runs it on a thread of its own as before.

use parking_lot::{Condvar, Mutex};
use std::sync::Arc;

type Job = Box<dyn FnOnce() + Send>;

struct Slot {
    job: Option<Job>,
    /// A job was handed over and has not ended.
    busy: bool,
}

struct Helper {
    slot: Mutex<Slot>,
    wake: Condvar,
}

static HELPER: Helper = Helper { slot: Mutex::new(Slot { job: None, busy: false }), wake: Condvar::new() };

/// Set once the helper's thread runs.
static RUNNING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Starts the helper's thread, once (`hooks::clCreateContext`), whose first job is `first`.
pub fn start(first: fn()) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Its stack holds what the reading of a program holds: the size a scoped thread had.
        let spawned = std::thread::Builder::new().name("clayout-helper".into()).spawn(move || serve(first));
        if spawned.is_ok() {
            RUNNING.store(true, std::sync::atomic::Ordering::Release);
        }
    });
}

fn serve(first: fn()) {
    if crate::config::get().warm {
        crate::warm::map_code();
    }
    crate::guard("work ahead of the first build", first);
    let mut slot = HELPER.slot.lock();
    loop {
        match slot.job.take() {
            Some(job) => {
                drop(slot);
                job();
                slot = HELPER.slot.lock();
            }
            None => HELPER.wake.wait(&mut slot),
        }
    }
}

/// A job handed to the helper: its result, once it has ended. Dropped unwaited, it waits all
/// the same: a job may read what its caller holds only until the caller returns.
pub struct Pending<R> {
    done: Arc<Done<R>>,
    waited: bool,
}

/// A job's end: its result (None where it panicked), set once.
struct Done<R> {
    result: Mutex<Option<Option<R>>>,
    ended: Condvar,
}

impl<R> Pending<R> {
    /// Waits for the job's end: its result, or None where it panicked.
    pub fn wait(mut self) -> Option<R> {
        self.waited = true;
        self.ended()
    }

    fn ended(&self) -> Option<R> {
        let mut result = self.done.result.lock();
        loop {
            if let Some(r) = result.take() {
                return r;
            }
            self.done.ended.wait(&mut result);
        }
    }
}

impl<R> Drop for Pending<R> {
    fn drop(&mut self) {
        if !self.waited {
            self.ended();
        }
    }
}

/// Hands `job` to the helper when it is idle; gives it back where the caller is to run it itself.
pub fn try_run<R: Send + 'static, F: FnOnce() -> R + Send + 'static>(job: F) -> Result<Pending<R>, F> {
    if !RUNNING.load(std::sync::atomic::Ordering::Acquire) || crate::stats::forked_child() {
        return Err(job);
    }
    let mut slot = HELPER.slot.lock();
    if slot.busy {
        return Err(job);
    }
    let done = Arc::new(Done { result: Mutex::new(None), ended: Condvar::new() });
    let theirs = done.clone();
    slot.busy = true;
    slot.job = Some(Box::new(move || {
        let r = crate::guard("work beside the application's call", job);
        // Free before its caller sees the end: that thread's next job finds the helper idle.
        HELPER.slot.lock().busy = false;
        *theirs.result.lock() = Some(r);
        theirs.ended.notify_all();
    }));
    drop(slot);
    HELPER.wake.notify_one();
    Ok(Pending { done, waited: false })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Hands `f` over once the helper is idle: the tests share it.
    fn take<R: Send + 'static>(f: impl FnOnce() -> R + Send + Clone + 'static) -> Pending<R> {
        start(|| {});
        loop {
            if let Ok(p) = try_run(f.clone()) {
                return p;
            }
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_job_runs_on_the_helper_and_its_result_comes_back() {
        let pending = take(|| std::thread::current().name().map(str::to_string));
        assert_eq!(pending.wait(), Some(Some("clayout-helper".to_string())));
    }

    #[test]
    fn a_job_that_panics_gives_none_and_the_helper_goes_on() {
        assert_eq!(take(|| -> u32 { panic!("on purpose") }).wait(), None);
        assert_eq!(take(|| 7).wait(), Some(7));
    }

    #[test]
    fn a_busy_helper_hands_the_job_back() {
        static GO: AtomicBool = AtomicBool::new(false);
        let first = take(|| {
            while !GO.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
        });
        assert!(try_run(|| ()).is_err(), "busy with the first job");
        GO.store(true, Ordering::Release);
        assert_eq!(first.wait(), Some(()));
    }
}
