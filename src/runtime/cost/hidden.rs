//! Whether a kernel's device time hides behind the host's (pure; `pace` measures it at the
//! application's waits): a verdict per kernel and size class, kept for launches in a host layout
//! and in ASTA apart (`model::Times::waited`), and what the model reads of it.

use serde::{Deserialize, Serialize};

/// Of the host's time between two of the application's waits on a queue, the most the second
/// may take for the device to count as keeping up with the host: then no faster form gains
/// more than this share of the run, the budget `auto` may lose (`model::LOSS_BUDGET`).
pub const PACED: f64 = 0.02;

/// The share of the host's time `host_ns` that a wait of `wait_ns` took (`PACED`).
pub fn share(host_ns: f64, wait_ns: f64) -> f64 {
    wait_ns / host_ns.max(1.0)
}

/// What one of the application's waits said of the launches before it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Wait {
    /// The share of the host's time before it that the wait took.
    pub share: f64,
    /// That time, in ns.
    pub host_ns: f64,
    /// The wait took longer than [`BACKLOG`] launches: the device was behind, however small
    /// the share (the driver's queue was full, and the host's launch calls waited for room).
    #[serde(default)]
    pub backlog: bool,
}

impl Wait {
    /// The wait after `host_ns` of the host's time took `wait_ns`, where the longest launch of
    /// the stretch takes `launch_ns`.
    pub fn new(host_ns: f64, wait_ns: f64, launch_ns: f64) -> Wait {
        Wait { share: share(host_ns, wait_ns), host_ns, backlog: wait_ns > BACKLOG * launch_ns }
    }

    /// Whether the device kept up with the host: no faster form could gain more than
    /// [`PACED`] of the stretch.
    pub fn paced(&self) -> bool {
        !self.backlog && self.share <= PACED
    }
}

/// Of a wait, the most launches' worth (of the stretch's longest, as timed) that the device may
/// have had left for it to have kept up. On the H100 a loop bound by the host leaves one or two
/// launches in flight at its wait (the driver's latency is longer than the kernels); one bound
/// by the device fills the driver's queue, whose launch calls then wait for room: the host's
/// time then includes the device's, and only the queue's depth is left at the wait, a small
/// share of a long loop (particles at 262,144 on the H100, where ASTA gains 13 %).
pub const BACKLOG: f64 = 4.0;

/// Whether a kernel's launches at a size class wait for the host (`Times::waited`, for
/// launches in host layout and in ASTA): where launches in host layout kept up, or, never
/// measured so, those in ASTA did (a run as written then finds out whether it does too). The
/// share of the wait that says so.
pub fn host_paced(waited: [Option<Wait>; 2]) -> Option<f64> {
    let w = match waited {
        [Some(h), _] => h,
        [None, a] => a?,
    };
    w.paced().then_some(w.share)
}

/// Stretches of less host time than this say nothing: the wait after them holds at least the
/// last launch's latency (some 10-20 us on the H100), which no form shortens.
pub const MIN_HOST_NS: f64 = 500_000.0;

/// Whether a wait's verdict `new` replaces the one kept (`kept`): where there is none, or it
/// says otherwise after a stretch at least a quarter as long. A short stretch's verdict does
/// not overturn a long one's: the long runs are where the time goes, and their verdict is the
/// surer (the fixed latency at the end weighs less).
pub fn replaces(kept: Option<Wait>, new: Wait) -> bool {
    if new.host_ns < MIN_HOST_NS {
        return false;
    }
    match kept {
        None => true,
        Some(k) => k.paced() != new.paced() && new.host_ns * 4.0 >= k.host_ns,
    }
}

/// The slot of `Times::waited` that launches in ASTA (`asta`) or in a host layout measure.
pub fn slot(asta: bool) -> usize {
    usize::from(asta)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(share: f64, host_ns: f64) -> Wait {
        Wait { share, host_ns, backlog: false }
    }

    #[test]
    fn a_device_that_kept_up_as_written_decides_and_asta_alone_only_until_then() {
        let long = 1e7;
        assert_eq!(host_paced([None, None]), None);
        assert_eq!(host_paced([Some(w(0.001, long)), None]), Some(0.001));
        assert_eq!(host_paced([Some(w(0.3, long)), Some(w(0.001, long))]), None, "as written the device is behind");
        assert_eq!(host_paced([None, Some(w(0.001, long))]), Some(0.001), "kept up in ASTA: learn as written");
        assert_eq!(host_paced([None, Some(w(0.3, long))]), None);
        assert_eq!(share(1e6, 1e4), 0.01);
        assert!(share(0.0, 5.0).is_finite());
    }

    #[test]
    fn a_wait_with_more_than_a_few_launches_left_finds_the_device_behind() {
        // 20 ms of host time, 14 us of wait: one launch of 16 us left, or a full queue.
        assert!(Wait::new(2e7, 14e3, 16e3).paced());
        let full = Wait::new(2e7, 300e3, 20e3);
        assert!(full.share <= PACED && full.backlog && !full.paced());
        assert_eq!(host_paced([Some(full), None]), None);
    }

    #[test]
    fn a_short_stretch_does_not_overturn_a_long_one() {
        let paced = w(0.001, 2e7);
        assert!(replaces(None, paced));
        assert!(!replaces(None, w(0.001, MIN_HOST_NS / 2.0)), "too short to say");
        assert!(!replaces(Some(paced), w(0.002, 1e8)), "the same verdict");
        assert!(!replaces(Some(paced), w(0.2, 1e6)), "twenty times shorter");
        assert!(replaces(Some(paced), w(0.2, 1e7)), "half as long");
    }
}
