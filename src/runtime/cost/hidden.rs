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
    /// Waits in a row that said the same (`CONFIRMED`).
    #[serde(default = "one")]
    pub seen: u32,
}

fn one() -> u32 {
    1
}

/// Waits in a row that must find the device keeping up before the model leans on it: one run
/// of a program bound by the device on a busy machine (its host thread descheduled while the
/// device worked) found it keeping up, and kept it as written at that size from then on.
pub const CONFIRMED: u32 = 2;

impl Wait {
    /// The wait after `host_ns` of the host's time took `wait_ns`, where the longest launch of
    /// the stretch takes `launch_ns`.
    pub fn new(host_ns: f64, wait_ns: f64, launch_ns: f64) -> Wait {
        Wait { share: share(host_ns, wait_ns), host_ns, backlog: wait_ns > BACKLOG * launch_ns, seen: 1 }
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

/// Whether a kernel's launches at a size class in a host layout wait for the host
/// (`Times::waited`): where such launches kept up. The share of the wait that says so.
/// That the device kept up with launches in ASTA says nothing of the host layout's: ASTA is
/// what made the device fast enough. Read as "as written, not measured: a run as written finds
/// out" (until the twenty-fifth session), it sent the 30-launch runs of particles at 262,144 on
/// the H100 back to the kernels as written after a 1000-launch run in ASTA, and since a stretch
/// that short cannot say the device keeps up (`PACED_MIN_HOST_NS`), every such run after it.
pub fn host_paced(waited: [Option<Wait>; 2]) -> Option<f64> {
    let w = waited[slot(false)]?;
    (w.paced() && w.seen >= CONFIRMED).then_some(w.share)
}

/// Whether the last wait after a kernel's launches in a host layout at a size class found the
/// device behind the host (`Times::waited`): there a faster form shortens the run. Seen once is
/// enough: a stretch says so only where it found the device behind (`after`), which no fixed
/// latency fakes.
pub fn device_behind(waited: [Option<Wait>; 2]) -> bool {
    waited[slot(false)].is_some_and(|w| !w.paced())
}

/// The share of a run's longest stretch of the host's time (`pace::run_stretch`) that its wait
/// must take for the run to count as bound by the device, where a run's length is scaled from
/// others' (`worth`). A loop the host sets the pace of leaves the device a launch or two at its
/// wait, the driver's latency (10-20 us on the H100), under 4 % of the shortest stretch counted
/// ([`MIN_HOST_NS`]); one the device sets the pace of leaves the device's excess over the
/// host, or a full queue's worth (particles at 262,144 on the H100: 9-15 % after 1000
/// iterations).
pub const RUN_BEHIND: f64 = 0.08;

/// Whether a run whose longest stretch took `host_ns` of the host's time, and its wait
/// `wait_ns`, was bound by the device (`RUN_BEHIND`).
pub fn run_behind(host_ns: f64, wait_ns: f64) -> bool {
    host_ns >= MIN_HOST_NS && share(host_ns, wait_ns) >= RUN_BEHIND
}

/// Stretches of less host time than this say nothing: the wait after them holds at least the
/// last launch's latency (some 10-20 us on the H100), which no form shortens.
pub const MIN_HOST_NS: f64 = 500_000.0;

/// Stretches of less host time than this do not say that the device keeps up: a run's first
/// launches cost the host more than its later ones (the driver's first launch of each kernel in
/// the process, a copy's first arguments, the events of the launches the model times), so that
/// the device keeps up with a short run's host that it falls behind later. On the H100,
/// particles at 262,144 (kernels of 7-17 us): the wait after 30 iterations took 10.8 us after
/// 1.2 ms of the host's time (0.9 %: "keeps up"), the one after 1000 iterations 1.7-2.9 ms after
/// 19-20 ms (behind), and the verdict of the short runs kept a 1000-iteration run of the stress
/// sequence as written where ASTA ran it 28 % faster. That the device is behind, a short
/// stretch says as well as a long one.
pub const PACED_MIN_HOST_NS: f64 = 5_000_000.0;

/// The verdict to keep after a wait said `new`, where `kept` was kept: `new` where there was
/// none, or where it says otherwise after a stretch at least a quarter as long; `kept` seen once
/// more where it says the same; None where nothing changes. A short stretch's verdict does not
/// overturn a long one's: the long runs are where the time goes, and their verdict is the surer
/// (the fixed latency at the end weighs less).
pub fn after(kept: Option<Wait>, new: Wait) -> Option<Wait> {
    if new.host_ns < MIN_HOST_NS || (new.paced() && new.host_ns < PACED_MIN_HOST_NS) {
        return None;
    }
    match kept {
        None => Some(new),
        Some(k) if k.paced() == new.paced() => {
            (k.seen < CONFIRMED).then_some(Wait { seen: k.seen + 1, host_ns: k.host_ns.max(new.host_ns), ..k })
        }
        Some(k) => (new.host_ns * 4.0 >= k.host_ns).then_some(new),
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
        Wait { share, host_ns, backlog: false, seen: CONFIRMED }
    }

    #[test]
    fn only_a_device_that_kept_up_with_the_host_layout_decides() {
        let long = 1e7;
        assert_eq!(host_paced([None, None]), None);
        assert_eq!(host_paced([Some(w(0.001, long)), None]), Some(0.001));
        assert_eq!(host_paced([Some(w(0.3, long)), Some(w(0.001, long))]), None, "as written the device is behind");
        assert_eq!(host_paced([None, Some(w(0.001, long))]), None, "kept up in ASTA: says nothing of the host layout");
        assert_eq!(host_paced([None, Some(w(0.3, long))]), None);
        assert_eq!(host_paced([Some(Wait { seen: 1, ..w(0.001, long) }), None]), None, "seen once");
        assert_eq!(share(1e6, 1e4), 0.01);
        assert!(share(0.0, 5.0).is_finite());
    }

    #[test]
    fn a_run_is_bound_by_the_device_where_its_longest_wait_took_a_share_of_it() {
        // blackscholes at 262,144 options, 100 launches: 15 us after 0.6 ms; particles at
        // 262,144, 100 iterations: the device's excess over the host.
        assert!(!run_behind(6e5, 15e3));
        assert!(run_behind(1.7e6, 1e6));
        assert!(run_behind(2e7, 2e6), "a full queue after 1000 iterations");
        assert!(!run_behind(4e5, 4e5), "too short to say");
    }

    #[test]
    fn only_a_wait_as_written_finds_the_device_behind() {
        let behind = Wait { seen: 1, backlog: true, ..w(0.1, 1e6) };
        assert!(device_behind([Some(behind), None]));
        assert!(device_behind([Some(w(0.3, 1e6)), None]), "a share above the budget");
        assert!(!device_behind([Some(w(0.001, 1e7)), None]), "kept up");
        assert!(!device_behind([None, Some(behind)]), "behind in ASTA: says nothing of the host layout");
        assert!(!device_behind([None, None]));
    }

    #[test]
    fn a_wait_with_more_than_a_few_launches_left_finds_the_device_behind() {
        // 20 ms of host time, 14 us of wait: one launch of 16 us left, or a full queue.
        assert!(Wait::new(2e7, 14e3, 16e3).paced());
        let full = Wait::new(2e7, 300e3, 20e3);
        assert!(full.share <= PACED && full.backlog && !full.paced());
        assert_eq!(host_paced([Some(Wait { seen: CONFIRMED, ..full }), None]), None);
    }

    #[test]
    fn a_verdict_counts_once_confirmed_and_a_short_stretch_does_not_overturn_a_long_one() {
        let first = Wait::new(2e7, 2e4, 1e5);
        assert_eq!(after(None, first), Some(first));
        assert_eq!(after(None, Wait::new(MIN_HOST_NS / 2.0, 1.0, 1e5)), None, "too short to say");
        // particles at 262,144 on the H100, 30 iterations: too short to say the device keeps
        // up, long enough to say it is behind.
        assert_eq!(after(None, Wait::new(1.245e6, 10.8e3, 15.1e3)), None);
        let behind = Wait::new(1.245e6, 200e3, 15.1e3);
        assert_eq!(after(None, behind), Some(behind));
        let confirmed = after(Some(first), Wait::new(1e7, 1e4, 1e5)).unwrap();
        assert_eq!((confirmed.seen, confirmed.share, confirmed.host_ns), (CONFIRMED, first.share, 2e7));
        assert_eq!(after(Some(confirmed), first), None, "confirmed already: nothing to write");
        assert_eq!(after(Some(confirmed), w(0.2, 1e6)), None, "twenty times shorter");
        let behind = after(Some(confirmed), w(0.2, 1e7)).unwrap();
        assert_eq!(behind, w(0.2, 1e7), "half as long: replaced");
    }
}
