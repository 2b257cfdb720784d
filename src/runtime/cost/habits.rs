//! What the program did, in this run and the ones before it (kept on disk), with the buffers a
//! rewritten kernel converted: did they come back to host layout (the host read them, or a
//! kernel needed them there), or were they released still converted?
//!
//! The cost model's worst case counts a conversion back for every buffer it converts. A buffer
//! that the program has only ever released in ASTA, never brought back, is an input it does not
//! read again (spmv-ell's matrix): its worst case is the conversion there alone. One conversion
//! back seen at that argument, in any run, and it counts again, for good.
//!
//! A buffer that another kernel's launch brought back from ASTA before the host saw it (the
//! kernels sharing it disagree about ASTA) makes the argument that converted it `undone`: the
//! bet on history (`model::bet`), which converts on the promise of the launches to come, is not
//! made there until a buffer it converts stays converted until the host sees it again. Without
//! it, particles on the H100 converted at its 30-launch runs' first launches, on the promise
//! of one kernel's gain, and another kernel brought the buffer back at once, in every run.
//!
//! Keyed by the kernel's key in the times cache (device, program source, kernel) and the
//! argument's place among the kernel's converted arguments.

use once_cell::sync::Lazy;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// One bit per converted argument (the first 64).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Habits {
    /// A buffer converted at this argument came back to host layout.
    pub back: u64,
    /// A buffer converted at this argument was released still converted.
    pub dropped: u64,
    /// The last buffer converted at this argument to come back was brought back by another
    /// kernel's launch.
    #[serde(default)]
    pub undone: u64,
}

impl Habits {
    /// Whether a buffer converted at `arg` may be expected to come back.
    pub fn may_come_back(&self, arg: u32) -> bool {
        let bit = 1u64.checked_shl(arg).unwrap_or(0);
        bit == 0 || self.back & bit != 0 || self.dropped & bit == 0
    }

    /// Whether the last buffer converted at `arg` that came back was brought back by another
    /// kernel's launch.
    pub fn undone(&self, arg: u32) -> bool {
        1u64.checked_shl(arg).is_some_and(|bit| self.undone & bit != 0)
    }

    /// Records what became of a buffer converted at `arg` (`Outcome`); whether that is news.
    pub fn saw(&mut self, arg: u32, outcome: Outcome) -> bool {
        let Some(bit) = 1u64.checked_shl(arg) else { return false };
        let before = *self;
        match outcome {
            Outcome::Dropped => self.dropped |= bit,
            Outcome::Back => {
                self.back |= bit;
                self.undone &= !bit;
            }
            Outcome::Undone => {
                self.back |= bit;
                self.undone |= bit;
            }
        }
        *self != before
    }
}

/// What became of a converted buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It came back to host layout for the host, or a kernel that is not rewritten.
    Back,
    /// Another rewritten kernel's launch brought it back before the host saw it.
    Undone,
    /// The application released it still converted.
    Dropped,
}

/// Which kernel argument converted a buffer: kept in the buffer's state until it comes back or
/// is released.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvertedBy {
    pub kernel: Arc<str>,
    pub arg: u32,
}

static HABITS: Lazy<Mutex<super::KeyMap<Habits>>> = Lazy::new(Default::default);

const KIND: &str = "habits";

fn with<R>(kernel: &Arc<str>, f: impl FnOnce(&mut Habits) -> R) -> R {
    let mut all = HABITS.lock();
    let h = all
        .entry(kernel.clone())
        .or_insert_with(|| crate::cache::disk::get_json::<Habits>(KIND, kernel).unwrap_or_default());
    f(h)
}

/// Reads the kernel's record from disk ahead of its first launch.
pub fn preload(kernel: &Arc<str>) {
    with(kernel, |_| ());
}

/// The kernel's record as it stands (`super::Records` keeps a copy).
pub fn get(kernel: &Arc<str>) -> Habits {
    with(kernel, |h| *h)
}

/// Records what became of a converted buffer, and keeps it on disk when it is news.
pub fn saw(by: &ConvertedBy, outcome: Outcome) {
    let news = with(&by.kernel, |h| h.saw(by.arg, outcome).then_some(*h));
    if let Some(h) = news {
        super::records_changed();
        // The key ends with the copy's name and the program's hash.
        if crate::log::enabled(crate::config::LogLevel::Debug) {
            let copy = by.kernel.rsplit('|').nth(1).unwrap_or(&by.kernel);
            crate::log::debug(&format!(
                "kernel copy {copy}: a buffer converted at its converted argument {} was {}",
                by.arg,
                match outcome {
                    Outcome::Back => "brought back to host layout",
                    Outcome::Undone => "brought back to host layout by another kernel's launch",
                    Outcome::Dropped => "released still converted",
                }
            ));
        }
        crate::cache::disk::put_json_later(KIND, by.kernel.clone(), h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_buffers_never_seen_back_and_seen_dropped_are_expected_to_stay() {
        let mut h = Habits::default();
        assert!(h.may_come_back(0), "nothing seen: the worst case");
        assert!(h.saw(0, Outcome::Dropped));
        assert!(!h.saw(0, Outcome::Dropped), "not news twice");
        assert!(!h.may_come_back(0));
        assert!(h.may_come_back(1), "another argument");
        assert!(h.saw(0, Outcome::Back));
        assert!(h.may_come_back(0), "once back, for good");
        h.saw(0, Outcome::Dropped);
        assert!(h.may_come_back(0));
        assert!(h.may_come_back(64), "past the bits: the worst case");
        assert!(!h.saw(64, Outcome::Dropped));
    }

    #[test]
    fn an_argument_is_undone_until_a_buffer_it_converts_stays_converted_for_the_host() {
        let mut h = Habits::default();
        assert!(!h.undone(0));
        assert!(h.saw(0, Outcome::Undone));
        assert!(h.undone(0) && h.may_come_back(0), "it came back, too");
        assert!(!h.undone(1), "another argument");
        assert!(!h.saw(0, Outcome::Undone), "not news twice");
        h.saw(0, Outcome::Dropped);
        assert!(h.undone(0), "released converted: still undone");
        assert!(h.saw(0, Outcome::Back));
        assert!(!h.undone(0));
        assert!(!h.undone(64), "past the bits");
        let old: Habits = serde_json::from_str(r#"{"back":1,"dropped":0}"#).unwrap();
        assert!(!old.undone(0), "records from before it read as never undone");
    }
}
