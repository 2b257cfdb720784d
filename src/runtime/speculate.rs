//! A rewritten kernel's first launch in a run, enqueued at once and noted after.
//!
//! Every launch costs clayout's launch path before the real `clEnqueueNDRangeKernel`: the
//! kernel's plan, each buffer argument's record and extent, the cost model's decision, the
//! wait list. On a CPU whose caches went cold during the application's blocking write, that
//! path cost 40-50 us (docs/results.md, "A launch on a cold CPU"), spread over every step; a
//! program of one 0.5 ms launch paid it in full (+4.8 % for blackscholes on the H100, issue 17).
//!
//! Where nothing can be in a device layout yet (no buffer of the process has entered one, and
//! no program has kernels written for one), the kernel as written, on host-layout buffers, is
//! what the launch would run unless the model converts at once. So the first launch of a
//! kernel whose last run ran its first launch as written is enqueued first, and
//! clayout's launch path runs after it, while the device runs the kernel: the same decision,
//! counts and records, with the launch already made as written (`Offer::launched`). Should the
//! model find it would have run another form, the kernel's times record says so, and its first
//! launches in later runs take the launch path first again.
//!
//! Ordering: a launch noted after it was enqueued is missing from its buffers' users for a
//! moment, so no conversion may start then. Every buffer's first step into a device layout
//! passes [`entering_device`], which turns speculation off for the process and refuses while a
//! speculative launch is being noted (an optional conversion: the launch runs as written); a
//! program with kernels written for a device layout turns it off and waits for those in flight
//! ([`off_and_drain`]) before any of them can launch. SeqCst on both sides, as in
//! `order::fast`: either the launch sees speculation off, or the conversion sees it in flight.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Set once a buffer may have entered a device layout, or a program has kernels written for
/// one: from then on every launch takes the launch path first.
static OFF: AtomicBool = AtomicBool::new(false);
/// Speculative launches enqueued or being noted.
static IN_FLIGHT: AtomicU32 = AtomicU32::new(0);

thread_local! {
    /// This thread is noting a launch it already enqueued as written.
    static NOTING: Cell<bool> = const { Cell::new(false) };
}

/// One speculative launch in flight, from before its enqueue until it has been noted.
pub struct InFlight(());

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `Some` when a launch may be enqueued at once: `first` (this kernel's first launch, which it
/// takes) and nothing in a device layout.
pub fn begin(first: &AtomicBool) -> Option<InFlight> {
    if OFF.load(Ordering::Relaxed) || !first.load(Ordering::Relaxed) || !first.swap(false, Ordering::Relaxed) {
        return None;
    }
    IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
    let f = InFlight(());
    (!OFF.load(Ordering::SeqCst)).then_some(f)
}

/// Runs `note` as the noting of a launch already enqueued as written.
pub fn noting_with<R>(note: impl FnOnce() -> R) -> R {
    crate::guard::with_flag(&NOTING, note)
}

/// Whether this thread is noting a launch it already enqueued as written.
pub fn noting() -> bool {
    NOTING.with(Cell::get)
}

/// A buffer is about to enter a device layout (`must`: the command cannot run otherwise). Why
/// it may not now, if it may not: a speculative launch is being noted, and the conversion
/// would not wait for it. A command that must have the layout waits for those instead: by
/// then only a launch that found speculation off can be in flight ([`off_and_drain`] ran
/// before any such command's program could launch), and it holds no lock.
pub fn entering_device(must: bool) -> Option<String> {
    OFF.store(true, Ordering::SeqCst);
    if IN_FLIGHT.load(Ordering::SeqCst) == 0 {
        return None;
    }
    if must && drained(Duration::from_secs(1)) {
        return None;
    }
    Some("another launch of this process was enqueued before clayout looked at it and is still being noted".into())
}

/// A program with kernels written for a device layout was created: no launch is enqueued
/// before it is looked at from now on, and those in flight are noted before this returns.
pub fn off_and_drain() {
    OFF.store(true, Ordering::SeqCst);
    // A thread noting its own launch would wait for itself.
    if !noting() && !drained(Duration::from_secs(10)) {
        crate::log::warn("a launch enqueued before clayout looked at it was still being noted after 10 s");
    }
}

fn drained(limit: Duration) -> bool {
    let start = Instant::now();
    while IN_FLIGHT.load(Ordering::SeqCst) != 0 {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::yield_now();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the flags are the process's.
    #[test]
    fn a_launch_is_speculative_once_and_never_after_a_buffer_entered_a_device_layout() {
        let first = AtomicBool::new(true);
        let f = begin(&first).expect("nothing in a device layout yet");
        assert!(begin(&first).is_none(), "only the first launch");
        assert!(entering_device(false).is_some(), "an optional conversion waits for nothing in flight: refused");
        drop(f);
        assert!(entering_device(false).is_none());
        assert!(begin(&AtomicBool::new(true)).is_none(), "off for the process");
        assert!(!noting());
        assert!(noting_with(noting));
        assert!(!noting());
    }
}
