//! What the program did, in this run and the ones before it (kept on disk), with the buffers a
//! rewritten kernel converted: did they come back to host layout (the host read them, or a
//! kernel needed them there), or were they released still converted?
//!
//! The cost model's worst case counts a conversion back for every buffer it converts. A buffer
//! that the program has only ever released in ASTA, never brought back, is an input it does not
//! read again (spmv-ell's matrix): its worst case is the conversion there alone. One conversion
//! back seen at that argument, in any run, and it counts again, for good.
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

/// Reads the kernel's record from disk ahead of its first launch.
pub fn preload(kernel: &Arc<str>) {
    with(kernel, |_| ());
}

/// The kernel's record as it stands (`super::Records` keeps a copy).
pub fn get(kernel: &Arc<str>) -> Habits {
    with(kernel, |h| *h)
}

/// Records what became of a converted buffer, and keeps it on disk when it is news.
pub fn saw(by: &ConvertedBy, came_back: bool) {
    let news = with(&by.kernel, |h| h.saw(by.arg, came_back).then_some(*h));
    if let Some(h) = news {
        super::records_changed();
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
}
