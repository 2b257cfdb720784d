//! What the program did, in this run and the ones before it (kept on disk), with the buffers a
//! rewritten kernel converted: did they come back to host layout (the host read them, or a
//! kernel needed them there), or were they released still converted?
//!
//! The cost model's worst case counts a conversion back for every buffer it converts. A buffer
//! that the program has only ever released in ASTA, never brought back, is an input it does not
//! read again (spmv-ell's matrix): its worst case is the conversion there alone. One conversion
//! back seen at that argument, in any run, and it counts again, for good.
//!
//! And how long the buffers at each argument lasted between two host accesses (an epoch: what
//! one conversion there and back can be shared over), in launches, over the last
//! `KEPT_LENGTHS` epochs of this run and the runs before: the run-length model's history.
//!
//! Keyed by the kernel's key in the times cache (device, program source, kernel) and the
//! argument's place among the kernel's converted arguments.

use once_cell::sync::Lazy;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

/// One bit per converted argument (the first 64).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Habits {
    /// A buffer converted at this argument came back to host layout.
    pub back: u64,
    /// A buffer converted at this argument was released still converted.
    pub dropped: u64,
}

impl Habits {
    /// Whether a buffer converted at `arg` may be expected to come back.
    pub fn may_come_back(&self, arg: u32) -> bool {
        let bit = 1u64.checked_shl(arg).unwrap_or(0);
        bit == 0 || self.back & bit != 0 || self.dropped & bit == 0
    }

    /// Records what became of a buffer converted at `arg`; whether that is news.
    pub fn saw(&mut self, arg: u32, came_back: bool) -> bool {
        let Some(bit) = 1u64.checked_shl(arg) else { return false };
        let field = if came_back { &mut self.back } else { &mut self.dropped };
        let news = *field & bit == 0;
        *field |= bit;
        news
    }
}

/// Epoch lengths kept per argument: old enough runs are forgotten, so that a program whose
/// runs change is followed.
pub const KEPT_LENGTHS: usize = 16;

/// What the epochs of the buffers at each argument lasted, in launches, newest last.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lengths {
    pub by_arg: std::collections::BTreeMap<u32, Vec<u32>>,
}

impl Lengths {
    /// Adds an epoch of `launches` at `arg`; the oldest goes past `KEPT_LENGTHS`.
    pub fn push(&mut self, arg: u32, launches: u32) {
        if launches == 0 {
            return;
        }
        let v = self.by_arg.entry(arg).or_default();
        v.push(launches);
        if v.len() > KEPT_LENGTHS {
            v.remove(0);
        }
    }

    /// The length that three epochs in four at `arg` reached (the lower quartile, nearest rank
    /// from below: with fewer than four epochs, the shortest); None before any epoch ended.
    pub fn quartile(&self, arg: u32) -> Option<u32> {
        let mut v = self.by_arg.get(&arg).filter(|v| !v.is_empty())?.clone();
        v.sort_unstable();
        Some(v[(v.len() - 1) / 4])
    }
}

/// Which kernel argument converted a buffer: kept in the buffer's state until it comes back or
/// is released.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvertedBy {
    pub kernel: Arc<str>,
    pub arg: u32,
}

static HABITS: Lazy<Mutex<HashMap<Arc<str>, Habits>>> = Lazy::new(|| Mutex::new(HashMap::new()));

const KIND: &str = "habits";

fn with<R>(kernel: &Arc<str>, f: impl FnOnce(&mut Habits) -> R) -> R {
    let mut all = HABITS.lock();
    let h = all
        .entry(kernel.clone())
        .or_insert_with(|| crate::cache::disk::get_json::<Habits>(KIND, kernel).unwrap_or_default());
    f(h)
}

/// Reads the kernel's records from disk ahead of its first launch.
pub fn preload(kernel: &Arc<str>) {
    with(kernel, |_| ());
    with_lengths(kernel, |_| ());
}

/// Whether a buffer this kernel converts at `arg` may come back to host layout.
pub fn may_come_back(kernel: &Arc<str>, arg: u32) -> bool {
    with(kernel, |h| h.may_come_back(arg))
}

/// Records what became of a converted buffer, and keeps it on disk when it is news.
pub fn saw(by: &ConvertedBy, came_back: bool) {
    let news = with(&by.kernel, |h| h.saw(by.arg, came_back).then_some(*h));
    if let Some(h) = news {
        // The key ends with the copy's name and the program's hash.
        let copy = by.kernel.rsplit('|').nth(1).unwrap_or(&by.kernel);
        crate::log::debug(&format!(
            "kernel copy {copy}: a buffer converted at its converted argument {} was {}",
            by.arg,
            if came_back { "brought back to host layout" } else { "released still converted" }
        ));
        crate::cache::disk::put_json(KIND, &by.kernel, &h);
    }
}

/// A kernel's epoch lengths in memory, with whether they changed since they were last written.
type Kept = (Lengths, bool);

static LENGTHS: Lazy<Mutex<HashMap<Arc<str>, Kept>>> = Lazy::new(|| Mutex::new(HashMap::new()));

const LENGTHS_KIND: &str = "runs";

fn with_lengths<R>(kernel: &Arc<str>, f: impl FnOnce(&mut (Lengths, bool)) -> R) -> R {
    let mut all = LENGTHS.lock();
    let h = all
        .entry(kernel.clone())
        .or_insert_with(|| (crate::cache::disk::get_json::<Lengths>(LENGTHS_KIND, kernel).unwrap_or_default(), false));
    f(h)
}

/// The lower quartile of the epoch lengths seen at the kernel's argument `arg` (`Lengths::quartile`).
pub fn quartile(kernel: &Arc<str>, arg: u32) -> Option<u32> {
    with_lengths(kernel, |(l, _)| l.quartile(arg))
}

/// An epoch of `launches` ended for a buffer the kernel launched on at `arg`. Kept in memory;
/// written at exit or when a context goes (`flush`), never inside the application's call.
pub fn epoch_ended(by: &ConvertedBy, launches: u32) {
    if launches > 0 {
        with_lengths(&by.kernel, |(l, dirty)| {
            l.push(by.arg, launches);
            *dirty = true;
        });
    }
}

/// Writes the epoch lengths that changed.
pub fn flush() {
    let dirty: Vec<(Arc<str>, Lengths)> = {
        let Some(mut all) = LENGTHS.try_lock() else { return };
        all.iter_mut()
            .filter(|(_, (_, d))| *d)
            .map(|(k, (l, d))| {
                *d = false;
                (k.clone(), l.clone())
            })
            .collect()
    };
    for (k, l) in dirty {
        crate::cache::disk::put_json(LENGTHS_KIND, &k, &l);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_buffers_never_seen_back_and_seen_dropped_are_expected_to_stay() {
        let mut h = Habits::default();
        assert!(h.may_come_back(0), "nothing seen: the worst case");
        assert!(h.saw(0, false));
        assert!(!h.saw(0, false), "not news twice");
        assert!(!h.may_come_back(0));
        assert!(h.may_come_back(1), "another argument");
        assert!(h.saw(0, true));
        assert!(h.may_come_back(0), "once back, for good");
        h.saw(0, false);
        assert!(h.may_come_back(0));
        assert!(h.may_come_back(64), "past the bits: the worst case");
        assert!(!h.saw(64, false));
    }

    #[test]
    fn epoch_lengths_keep_the_last_runs_and_their_lower_quartile() {
        let mut l = Lengths::default();
        assert_eq!(l.quartile(0), None, "nothing seen");
        l.push(0, 0);
        assert_eq!(l.quartile(0), None, "an epoch without launches says nothing");
        l.push(0, 100);
        assert_eq!(l.quartile(0), Some(100), "one run: its length");
        l.push(0, 1);
        assert_eq!(l.quartile(0), Some(1), "a short run among few: the shortest counts");
        for n in [200, 300, 400, 500, 600] {
            l.push(0, n);
        }
        // 1, 100, 200, ..., 600: three in four reached 100.
        assert_eq!(l.quartile(0), Some(100));
        assert_eq!(l.quartile(1), None, "another argument");
        for _ in 0..KEPT_LENGTHS {
            l.push(0, 30);
        }
        assert_eq!(l.by_arg[&0].len(), KEPT_LENGTHS);
        assert_eq!(l.quartile(0), Some(30), "old runs forgotten");
        let json = serde_json::to_string(&l).unwrap();
        assert_eq!(serde_json::from_str::<Lengths>(&json).unwrap(), l);
    }
}
