//! Whether a program's copies are worth loading inside the application's build.
//!
//! Loading them there (`program::load_now`) makes them ready for the run's first launch, and it
//! is paid in every run, whether the run then uses them or not: on the H100 it took 8.7-11.9 ms
//! of each run of particles (three programs answered from the driver's cache, the layout probe,
//! the kernels' creation), inside a `clBuildProgram` of 4-5 ms without clayout, where the
//! stress sequence's runs gain at most 9 ms (its 1000-launch run) and most of them nothing.
//! So the load is bought like the rest: where the program's recorded history says what its
//! runs could gain, it is loaded only if a run's expected gain pays for it. Otherwise the copies
//! are treated as a build still to pay for, held back on clayout's thread until the run has
//! lasted as long as the application's build (`CLAYOUT_BUILD_AFTER`), and a run long enough uses
//! them from then on.
//!
//! What a run could gain is estimated from the kernels' records: each recorded epoch's launches
//! (`lengths`), at what each launch at that epoch's size gains in the fastest copy against the
//! kernel as written (`kernel` times, per structure, times the structures an epoch of that size
//! has at most, twice the lower bound of its size bucket: an estimate that errs towards
//! loading), averaged over the epochs and multiplied by the epochs a run has had. At a size where
//! the kernel was not timed in both forms (the model does not spend a short run's launches on
//! timing), the most its copy gained per structure at any size counts; a kernel with no epoch
//! recorded was not launched and gains nothing. Where any of that is unknown (a kernel launched
//! whose copies were timed at no size, no run recorded, no load timed yet) the copies are
//! loaded, as before: only a history that says the copies cannot repay their loading declines
//! it.

use super::kernel::TimesByClass;
use super::lengths::Lengths;
use super::model::Times;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Runs whose epoch counts are kept: the latest, so that a program whose use changes is followed.
const KEEP_RUNS: usize = 8;

const KIND: &str = "worth";
const FORMAT: u32 = 1;

/// A program's record: what loading its copies inside the build last cost, and how many epochs
/// (host accesses between launches) its last runs had.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Worth {
    pub format: u32,
    /// Host time of the last load inside the application's build, in ns.
    pub load_ns: Option<f64>,
    /// Epochs of each of the last runs, oldest first.
    pub epochs: VecDeque<u32>,
}

impl Worth {
    fn push_run(&mut self, epochs: u32) {
        if self.epochs.len() == KEEP_RUNS {
            self.epochs.pop_front();
        }
        self.epochs.push_back(epochs);
    }

    /// The mean epochs per run, None before any run was recorded.
    fn epochs_per_run(&self) -> Option<f64> {
        (!self.epochs.is_empty())
            .then(|| self.epochs.iter().map(|&e| f64::from(e)).sum::<f64>() / self.epochs.len() as f64)
    }
}

/// What a launch of a kernel at size bucket `items` gains at most in its fastest copy against
/// the kernel as written, in ns: at that size where both were timed there, else at the size
/// where the copy gained most per structure (short runs at a size never time it there: the
/// model does not spend their launches on it); where no copy was timed at any size, at most the
/// kernel's own time as written (`written_bound`). None where no size says even that.
pub fn gain_per_launch(times: &TimesByClass, items: u8) -> Option<f64> {
    let per = measured_gain(times, items).or_else(|| written_bound(times, items))?;
    // At most twice the bucket's lower bound in structures (one work-item per structure).
    let m = 2f64.powi(i32::from(items) + 1);
    Some(per * m)
}

/// What the fastest copy gains per structure at size bucket `items`, in ns, as measured: at that
/// size, else the most at any size; None where no copy was timed beside the kernel as written.
pub fn measured_gain(times: &TimesByClass, items: u8) -> Option<f64> {
    here_or_most(times, items, per_structure)
}

/// `of` the times at size bucket `items` where it says something there, else the most it says
/// at any size.
fn here_or_most(times: &TimesByClass, items: u8, of: impl Fn(&Times) -> Option<f64>) -> Option<f64> {
    let here = times.classes.iter().find(|(c, _)| c.items == items).and_then(|(_, t)| of(t));
    here.or_else(|| times.classes.iter().filter_map(|(_, t)| of(t)).reduce(f64::max))
}

/// The most a copy could gain per structure where none was timed: all of the kernel's time as
/// written (a copy takes no less than nothing), at that size or the largest per structure at any
/// size, with the margin by which two timings still agree (`AGREE`: a time kept is the lowest of
/// those that agree). The runs before the copies ran once time the kernel as written while the
/// copies are built (`launch::timing_while_building`): with this bound their history can say that
/// no run of theirs could repay the load, where it said nothing before (on the H100 particles'
/// second and third runs loaded them, 10-12 ms inside the build, for runs of 1-2 launches).
pub fn written_bound(times: &TimesByClass, items: u8) -> Option<f64> {
    Some(here_or_most(times, items, |t| t.written)? * super::model::AGREE)
}

/// What the fastest copy gains per structure against the kernel as written (never below 0), if
/// both were timed.
fn per_structure(t: &Times) -> Option<f64> {
    let written = t.written?;
    let copy = match (t.staged, t.asta) {
        (Some(s), Some(a)) => s.min(a),
        (Some(s), None) => s,
        (None, Some(a)) => a,
        (None, None) => return None,
    };
    Some((written - copy).max(0.0))
}

/// What one epoch gains at most on average, in ns, over the epochs recorded for each kernel
/// (`kernels`: each kernel's record of epochs and its times); None where any is unknown. A
/// kernel with no epoch recorded was not launched since its record began (launches are counted
/// while the copies are built too): it gains nothing.
pub fn gain_per_epoch(kernels: &[(Option<Lengths>, Option<TimesByClass>)]) -> Option<f64> {
    let mut total = 0.0;
    for (lengths, times) in kernels {
        let epochs: Vec<(u32, u8)> = lengths.as_ref()?.epochs(0).collect();
        if epochs.is_empty() {
            continue;
        }
        let times = times.as_ref()?;
        let mut sum = 0.0;
        for &(launches, items) in &epochs {
            sum += f64::from(launches) * gain_per_launch(times, items)?;
        }
        total += sum / epochs.len() as f64;
    }
    Some(total)
}

/// What a run whose copies were declined (`verdict`) has forgone without them, against what
/// their load costs: the launch at which the one reaches the other waits for them, ski-rental
/// style (`program::buys_copies`). Shared by the program and the launches that repeat
/// (`transparent::repeat`, the express lane), which add what each forgoes.
#[derive(Debug, Default)]
pub struct Forgone {
    /// Declined, and not waited for yet.
    pub declined: std::sync::atomic::AtomicBool,
    /// What the load costs, in ns (0: not known to be a load from clayout's cache, and no
    /// launch waits for the copies).
    pub load_ns: std::sync::atomic::AtomicU64,
    /// What the launches run as written since the build have forgone, in ns.
    pub forgone_ns: std::sync::atomic::AtomicU64,
}

impl Forgone {
    /// A run's verdict: `declined` or not, the load's cost, nothing forgone yet.
    pub fn reset(&self, declined: bool, load_ns: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.load_ns.store(load_ns, Relaxed);
        self.forgone_ns.store(0, Relaxed);
        self.declined.store(declined, Relaxed);
    }

    /// Adds `gain`: the total forgone, and the load's cost.
    pub fn add(&self, gain: u64) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.forgone_ns.fetch_add(gain, Relaxed) + gain, self.load_ns.load(Relaxed))
    }

    /// A launch repeated as written while the declined copies are built adds `gain`, what it
    /// forgoes: true once the launches have forgone the load's cost, so that the launch takes
    /// the full path, which waits for the copies. Before, only the launches that took the full
    /// path counted, and a long run of repeated launches never bought its copies.
    pub fn forgoes(&self, gain: u64) -> bool {
        if !self.declined.load(std::sync::atomic::Ordering::Relaxed) {
            return false;
        }
        let (forgone, load) = self.add(gain);
        forgone >= load
    }
}

/// Whether loading the copies inside the build pays, and if not, why (a reason for the log).
/// `build_ns`: what the application's own build took, the least a load can take where none was
/// timed yet (the copies' program holds the application's source and more, and a build of
/// clayout's is made beside it: on the H100 the load took 8-12 ms after builds of 4-7 ms).
pub fn verdict(worth: Option<&Worth>, per_epoch_ns: Option<f64>, build_ns: Option<f64>) -> Result<(), String> {
    let Some(w) = worth else { return Ok(()) };
    let (Some(load), Some(epochs), Some(per_epoch)) = (w.load_ns.or(build_ns), w.epochs_per_run(), per_epoch_ns) else {
        return Ok(());
    };
    let per_run = per_epoch * epochs;
    if per_run >= load {
        return Ok(());
    }
    let cost = match w.load_ns {
        Some(_) => format!("loading them there took {:.3} ms", load / 1e6),
        None => format!("loading them there takes more than the application's build, {:.3} ms", load / 1e6),
    };
    Err(format!(
        "not loaded inside the application's build: a run of this program gains at most {:.3} ms with them by its history ({:.1} epochs a run, {:.3} ms an epoch), and {cost}; they are built once the run has lasted as long as the application's build",
        per_run / 1e6,
        epochs,
        per_epoch / 1e6,
    ))
}

/// The program's record (`key`: the program's text on its device, as `seen`), or None.
pub fn read(key: &str) -> Option<Worth> {
    crate::cache::disk::get_json::<Worth>(KIND, key).filter(|w| w.format == FORMAT)
}

/// A program whose copies this run may load: what its record learns at exit.
struct Tracked {
    key: String,
    /// The times keys of its rewritten kernels.
    kernels: Vec<std::sync::Arc<str>>,
    load_ns: Option<f64>,
}

static TRACKED: parking_lot::Mutex<Vec<Tracked>> = parking_lot::Mutex::new(Vec::new());

/// Notes that this run built program `key` with rewritten kernels keyed `kernels`, and what its
/// copies' load inside the build took (None: not loaded there).
pub fn track(key: String, kernels: Vec<std::sync::Arc<str>>, load_ns: Option<f64>) {
    let mut t = TRACKED.lock();
    match t.iter_mut().find(|t| t.key == key) {
        Some(old) => {
            old.kernels = kernels;
            old.load_ns = load_ns.or(old.load_ns);
        }
        None => t.push(Tracked { key, kernels, load_ns }),
    }
}

/// At exit: each program's record learns this run's epochs (the most any of its kernels had)
/// and the load's time, if it was loaded.
pub fn write_at_exit() {
    let tracked = std::mem::take(&mut *TRACKED.lock());
    for t in tracked {
        let epochs = t.kernels.iter().map(super::lengths::epochs_this_run).max().unwrap_or(0);
        let mut w = read(&t.key).unwrap_or(Worth { format: FORMAT, ..Worth::default() });
        w.push_run(epochs);
        if t.load_ns.is_some() {
            w.load_ns = t.load_ns;
        }
        crate::cache::disk::put_json(KIND, &t.key, &w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::cost::size::SizeClass;

    fn times(items: u8, written: f64, staged: Option<f64>, asta: Option<f64>) -> TimesByClass {
        let t = Times { written: Some(written), staged, asta, ..Times::default() };
        TimesByClass { classes: vec![(SizeClass { items, bytes: items + 5 }, t)], ..TimesByClass::default() }
    }

    fn lengths(epochs: &[(u32, u8)]) -> Lengths {
        let mut l = Lengths::default();
        for &(n, items) in epochs {
            l.push(0, n, items);
        }
        l
    }

    #[test]
    fn a_launch_gains_what_its_fastest_copy_saves_at_its_size() {
        let t = times(18, 0.06, Some(0.07), Some(0.05));
        // 0.01 ns per structure, at most 2^19 structures.
        assert!((gain_per_launch(&t, 18).unwrap() - 0.01 * 524_288.0).abs() < 1e-6);
        // Not timed at that size: at the size where the copy gained most, per structure.
        assert!((gain_per_launch(&t, 15).unwrap() - 0.01 * 65_536.0).abs() < 1e-6);
        assert_eq!(gain_per_launch(&times(18, 0.05, None, Some(0.06)), 18), Some(0.0), "slower: nothing");
        // No copy timed: at most the kernel's time as written, with the timings' margin.
        let bound = 0.05 * crate::runtime::cost::model::AGREE * 524_288.0;
        assert!((gain_per_launch(&times(18, 0.05, None, None), 18).unwrap() - bound).abs() < 1e-6);
        let nothing = TimesByClass {
            classes: vec![(SizeClass { items: 18, bytes: 23 }, Times::default())],
            ..TimesByClass::default()
        };
        assert_eq!(gain_per_launch(&nothing, 18), None, "not even timed as written");
    }

    #[test]
    fn the_stress_sequence_of_particles_does_not_pay_for_its_load() {
        // Three kernels, each 3 us faster a launch in ASTA at 262,144 and no faster at 64,000.
        let k = || {
            let mut t = times(18, 0.06, None, Some(0.06 - 3000.0 / 524_288.0));
            t.classes.push((
                SizeClass { items: 15, bytes: 20 },
                Times { written: Some(0.2), asta: Some(0.2), ..Times::default() },
            ));
            (Some(lengths(&[(1, 15), (100, 18), (2, 15), (30, 18), (1, 15), (1000, 18), (8, 15), (30, 18)])), Some(t))
        };
        let per_epoch = gain_per_epoch(&[k(), k(), k()]).unwrap();
        assert!((per_epoch - 3.0 * 3000.0 * 1160.0 / 8.0).abs() < 1.0, "{per_epoch}");
        let w = Worth { format: FORMAT, load_ns: Some(9e6), epochs: [1, 1, 1].into() };
        let why = verdict(Some(&w), Some(per_epoch), Some(5e6)).unwrap_err();
        assert!(why.contains("1.305 ms") && why.contains("9.000 ms"), "{why}");
        // Seven epochs a run would pay for it.
        let w = Worth { epochs: [7, 7].into(), ..w };
        assert!(verdict(Some(&w), Some(per_epoch), Some(5e6)).is_ok());
    }

    #[test]
    fn short_runs_timed_as_written_decline_a_load_never_timed() {
        // Particles' first two runs: 1 launch at 64,000, then 100 at 262,144, the copies still
        // being built in both (timed as written only), no load timed yet.
        let k = || {
            let mut t = times(18, 0.02, None, None);
            t.classes.push((SizeClass { items: 15, bytes: 20 }, Times { written: Some(0.1), ..Times::default() }));
            (Some(lengths(&[(1, 15), (100, 18)])), Some(t))
        };
        let per_epoch = gain_per_epoch(&[k(), k(), k()]).unwrap();
        let a = crate::runtime::cost::model::AGREE;
        let want = 3.0 * (0.1 * a * 65_536.0 + 100.0 * 0.02 * a * 524_288.0) / 2.0;
        assert!((per_epoch - want).abs() < 1e-3, "{per_epoch}");
        let w = Worth { format: FORMAT, load_ns: None, epochs: [1, 1].into() };
        let why = verdict(Some(&w), Some(per_epoch), Some(5e6)).unwrap_err();
        assert!(why.contains("more than the application's build, 5.000 ms"), "{why}");
        // Three epochs a run could repay it.
        assert!(verdict(Some(&Worth { epochs: [3, 3].into(), ..w }), Some(per_epoch), Some(5e6)).is_ok());
    }

    #[test]
    fn what_is_not_known_loads_the_copies() {
        let w = Worth { format: FORMAT, load_ns: Some(9e6), epochs: [1].into() };
        assert!(verdict(None, Some(0.0), Some(5e6)).is_ok(), "no record");
        assert!(verdict(Some(&w), None, Some(5e6)).is_ok(), "a gain not known");
        assert!(verdict(Some(&Worth { load_ns: None, ..w.clone() }), Some(0.0), None).is_ok(), "no load timed");
        assert!(
            verdict(Some(&Worth { epochs: VecDeque::new(), ..w }), Some(0.0), Some(5e6)).is_ok(),
            "no run recorded"
        );
        let untimed = (Some(lengths(&[(1000, 18)])), Some(times(15, 0.06, None, None)));
        let bound = 1000.0 * 0.06 * crate::runtime::cost::model::AGREE * 524_288.0;
        assert!((gain_per_epoch(&[untimed]).unwrap() - bound).abs() < 1e-3, "no copy timed: its time as written");
        assert_eq!(gain_per_epoch(&[(None, Some(times(18, 0.1, None, None)))]), None, "no record of epochs");
        let launched = (Some(lengths(&[(10, 18)])), Some(times(18, 0.06, None, Some(0.05))));
        assert_eq!(gain_per_epoch(&[(Some(lengths(&[(10, 18)])), None)]), None, "launched, never timed");
        // A kernel never launched gains nothing; the others still count.
        let never = (Some(Lengths::default()), None);
        let one = gain_per_epoch(std::slice::from_ref(&launched)).unwrap();
        assert_eq!(gain_per_epoch(&[launched, never]), Some(one));
    }

    #[test]
    fn the_record_keeps_the_last_runs() {
        let mut w = Worth::default();
        for e in 0..20 {
            w.push_run(e);
        }
        assert_eq!(w.epochs.len(), KEEP_RUNS);
        assert_eq!(w.epochs.front(), Some(&12));
        assert_eq!(w.epochs_per_run(), Some(15.5));
    }
}
