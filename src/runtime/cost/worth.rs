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
//! kernel as written (`kernel` times, per structure, times the structures of the launches timed
//! at that size, the most of them, or where none was, twice the lower bound of its size bucket:
//! an estimate that errs towards loading), summed over the kernels for each of the program's
//! last runs (`worth`). At a
//! size where the kernel was not timed in both forms (the model does not spend a short run's
//! launches on timing), the most its copy gained per structure at any size counts; a kernel
//! that was not launched gains nothing. The verdict weighs what loading
//! would have lost on the runs too short to repay it against what declining would have lost on
//! the others (`verdict`), over the last runs made with this run's arguments where there are
//! any, else over the runs whose arguments are nearest this run's, else over the last runs
//! (`Worth::weighed`). Where any of that is unknown (a kernel launched whose times say nothing, no
//! run recorded, no load timed yet) the copies are loaded, as before. A gain bounded by the time
//! as written (copies never timed) can say that a run could not repay the load, and only a
//! quarter of it that the run would have ([`UNTIMED_MARGIN`]): where a run can buy the copies, a
//! history of runs between the two declines, and a run that lasts buys them and times them.

use super::kernel::TimesByClass;
use super::model::Times;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Runs kept in the record: the latest, so that a program whose use changes is followed.
const KEEP_RUNS: usize = 16;

/// What share of its bound from the time as written (`RunGain::at_most`) a run whose copies
/// were never timed counts as gaining, where a run can buy the copies (`verdict`): a quarter,
/// so that a run is long where its copies would repay the load saving 37.5 % of the kernels' time
/// as written (the bound has a margin of 1.5). On the H100 the copies saved 68 % of lbm's time
/// and 37 % of blackscholes' at the stress sequence's large sizes, 27 % of particles'; their
/// 100-launch runs' bounds were 20, 18 and 1.35 loads. Counting none of the bound, lbm's and
/// blackscholes' 30-launch runs after them declined and bought the copies at their 13th
/// launch (lbm 36 % of `always`' gain, 109 % before); counting all of it, particles' loaded
/// them for its 30-launch run, 9 ms inside a build of 5 ms. The run that loads them times them:
/// the bet is made once per size.
pub const UNTIMED_MARGIN: f64 = 4.0;

/// Runs the verdict weighs: the latest of those made with this run's arguments, or where none
/// was, the latest of all.
const WEIGH_RUNS: usize = 8;

const KIND: &str = "worth";
/// Format 1 kept each run's epoch count only, which the kernels' epochs (recorded under every
/// policy) were grouped by: runs under `always` sharing the cache counted twice. Format 2 kept
/// no arguments.
const FORMAT: u32 = 3;

/// What one kernel launched in a run: per size bucket of its epochs' first launches
/// ([`super::size::SizeClass::items`]), the launches.
pub type Launches = Vec<(u8, u64)>;

/// A program's record: what loading its copies inside the build last cost, and what its last
/// runs launched.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Worth {
    pub format: u32,
    /// Host time of the last load inside the application's build, in ns.
    pub load_ns: Option<f64>,
    /// The last runs, oldest first.
    pub runs: VecDeque<Run>,
}

/// One run of the program, as its record keeps it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// A hash of the process's arguments, its command line less the program's name (None where
    /// they could not be read): a run made with the same arguments as an earlier one mostly
    /// launches what it did (`weighed`).
    pub args: Option<u64>,
    /// A hash of each argument, in order (None where they could not be read, and in runs
    /// recorded before they were kept one by one): where no run had this run's arguments, those
    /// whose arguments differ from them in the fewest places are weighed (`weighed`).
    #[serde(default)]
    pub each_arg: Option<Vec<u64>>,
    /// The number each argument ends with, if any (`Number`; None where they could not be read,
    /// and in runs recorded before numbers were kept): where no run had this run's arguments, the
    /// runs that differ from them in one number say whether their launches follow it
    /// (`Worth::scaled`).
    #[serde(default)]
    pub numbers: Option<Vec<Option<Number>>>,
    /// Its longest stretch of the host's time between two of the application's waits, and that
    /// wait, in ns (`pace::run_stretch`; None where none was measured): whether its loops were
    /// bound by the device (`hidden::run_behind`).
    #[serde(default)]
    pub stretch: Option<(f64, f64)>,
    /// Its launches per rewritten kernel, in the order of the program's kernels.
    pub kernels: Vec<Launches>,
}

/// The number an argument ends with, and a hash of what comes before it: `1000` is ("", 1000),
/// `--steps=1000` ("--steps=", 1000). Two arguments whose numbers differ are the same knob
/// set to two values where what comes before is the same.
pub type Number = (u64, f64);

/// The number `arg` ends with (`Number`), where it ends with a positive one.
fn number_in(arg: &[u8]) -> Option<Number> {
    let digits = arg.iter().rev().take_while(|b| b.is_ascii_digit() || **b == b'.').count();
    let (before, number) = arg.split_at(arg.len() - digits);
    let value: f64 = std::str::from_utf8(number).ok()?.parse().ok()?;
    (value > 0.0 && value.is_finite()).then(|| (crate::cache::disk::fnv1a(before), value))
}

/// A process's arguments as a run records them (`Run::args`, `Run::each_arg`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Args {
    pub all: Option<u64>,
    pub each: Option<Vec<u64>>,
    pub numbers: Option<Vec<Option<Number>>>,
}

impl Args {
    /// The arguments in a command line as /proc/self/cmdline holds it (each followed by a NUL),
    /// less the program's name.
    fn of_cmdline(line: &[u8]) -> Args {
        let after_name = line.iter().position(|&b| b == 0).map_or(&line[..0], |at| &line[at + 1..]);
        let args: Vec<&[u8]> = after_name.strip_suffix(&[0]).map_or(Vec::new(), |a| a.split(|&b| b == 0).collect());
        Args {
            all: Some(crate::cache::disk::fnv1a(after_name)),
            each: Some(args.iter().map(|a| crate::cache::disk::fnv1a(a)).collect()),
            numbers: Some(args.iter().map(|a| number_in(a)).collect()),
        }
    }
}

/// Which of the recorded runs the verdict weighed (`Worth::weighed`), for its reason.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Alike {
    /// Those made with this run's arguments.
    Same,
    /// Those whose arguments differ from this run's in `differ` places, the fewest of any run,
    /// this run having `of` arguments.
    Nearest { differ: usize, of: usize },
    /// Those whose arguments differ from this run's only in the number argument `place` ends
    /// with (0: the first after the program's name), each one's launches scaled to this run's
    /// number, where `runs` such runs at two numbers or more said that their launches follow it
    /// (`Worth::scaled`).
    Scaled { place: usize, runs: usize },
    /// All of them: no run's arguments could be compared with this run's.
    #[default]
    All,
}

impl Run {
    /// In how many places its arguments differ from `args`, an argument that only one of them
    /// has counting as one: 0 where the hashes of all of them agree, None where either's were
    /// not kept one by one.
    fn differs_from(&self, args: &Args) -> Option<usize> {
        if self.args.is_some() && self.args == args.all {
            return Some(0);
        }
        let (ours, theirs) = (self.each_arg.as_ref()?, args.each.as_ref()?);
        let common = ours.iter().zip(theirs).filter(|(a, b)| a != b).count();
        Some(common + ours.len().abs_diff(theirs.len()))
    }
}

impl Worth {
    fn push_run(&mut self, run: Run) {
        if self.runs.len() == KEEP_RUNS {
            self.runs.pop_front();
        }
        self.runs.push_back(run);
    }

    /// The runs the verdict weighs, oldest first, and which they are: the latest
    /// [`WEIGH_RUNS`] of those made with the arguments `args` where there are any, else of those
    /// whose arguments differ from `args` in the fewest places, else of all. The arguments are
    /// what a program's user changes to change its work (the stress sequence's `-i 1` and
    /// `-i 1000`, its sizes): on the H100 lbm's and blackscholes' runs of one launch loaded the
    /// copies, 4-8 ms inside builds of 4-5 ms, because their runs of 30 to 1000 launches under
    /// other arguments would have repaid it. Their runs of 2 and 8 launches, whose arguments no
    /// run had, still did for runs at the other size (lbm +48 and +61 %, builds counted), where
    /// the runs at their own size, one argument away, launched once.
    pub fn weighed(&self, args: &Args) -> (VecDeque<Run>, Alike) {
        let nearest = self.runs.iter().filter_map(|r| r.differs_from(args)).min();
        if nearest != Some(0) {
            if let Some(scaled) = self.scaled(args) {
                return scaled;
            }
        }
        let mut runs: VecDeque<Run> = match nearest {
            Some(d) => self.runs.iter().filter(|r| r.differs_from(args) == Some(d)).cloned().collect(),
            None => self.runs.clone(),
        };
        while runs.len() > WEIGH_RUNS {
            runs.pop_front();
        }
        let alike = match nearest {
            Some(0) => Alike::Same,
            Some(differ) => Alike::Nearest { differ, of: args.each.as_ref().map_or(0, Vec::len) },
            None => Alike::All,
        };
        (runs, alike)
    }
}

/// How far the launches per unit of a number may spread between runs and still be taken to
/// follow it: a kernel launched once per step and once more to set up (31 launches at `-i 30`,
/// 101 at `-i 100`) follows it, one launched once per run whatever the number does not.
const FOLLOWS_WITHIN: f64 = 1.25;

impl Worth {
    /// The runs whose arguments differ from `args` only in the number one of them ends with
    /// (the same knob, `Number`), where at least two numbers were recorded there and every
    /// kernel's launches at each size, in each of those runs, either follow the number
    /// (`FOLLOWS_WITHIN`) or are the same in all of them: each such run with its launches scaled
    /// to this run's number, the latest [`WEIGH_RUNS`], and the place. Where several places
    /// qualify, the one with the most runs. A program's length is often a number on its command
    /// line (the stress sequence's `-i`): on the H100 particles' 1000-launch run after runs of 1
    /// to 100 launches weighed the two runs at its size, of 100 and 30 launches, which could not
    /// repay the load, declined the copies, and kept 20-25 % of `always`' gain; scaled, it loads
    /// them inside its build as `always` does (on the H200, 2,997 of its 3,000 launches in
    /// ASTA). A bet like the others: a run that does not follow its number is recorded, and the
    /// runs after it no longer say they do.
    fn scaled(&self, args: &Args) -> Option<(VecDeque<Run>, Alike)> {
        let (each, numbers) = (args.each.as_ref()?, args.numbers.as_ref()?);
        let mut by_place: Vec<(usize, Vec<(&Run, f64)>)> = Vec::new();
        for run in &self.runs {
            let (Some(theirs), Some(their_numbers)) = (run.each_arg.as_ref(), run.numbers.as_ref()) else { continue };
            if theirs.len() != each.len() || their_numbers.len() != numbers.len() {
                continue;
            }
            let mut differ = each.iter().zip(theirs).enumerate().filter(|(_, (a, b))| a != b).map(|(i, _)| i);
            let (Some(place), None) = (differ.next(), differ.next()) else { continue };
            let (Some(ours), Some(their)) = (numbers.get(place).copied().flatten(), their_numbers[place]) else {
                continue;
            };
            if ours.0 != their.0 {
                continue;
            }
            match by_place.iter_mut().find(|(p, _)| *p == place) {
                Some((_, runs)) => runs.push((run, their.1)),
                None => by_place.push((place, vec![(run, their.1)])),
            }
        }
        by_place.retain(|(_, runs)| runs.iter().any(|r| r.1 != runs[0].1));
        let (place, mut runs) = by_place.into_iter().rev().max_by_key(|(_, runs)| runs.len())?;
        let value = numbers[place]?.1;
        let scale = follows(&runs)?;
        if runs.len() > WEIGH_RUNS {
            runs.drain(..runs.len() - WEIGH_RUNS);
        }
        let count = runs.len();
        let scaled = runs.into_iter().map(|(run, theirs)| run.scaled(&scale, value, theirs)).collect();
        Some((scaled, Alike::Scaled { place, runs: count }))
    }
}

impl Run {
    /// What the verdict reads of this run (its launches and its stretch), made at the number
    /// `theirs`, with the launches that follow it (`follows`, per kernel and size) scaled to
    /// `value`.
    fn scaled(&self, follow: &[Vec<bool>], value: f64, theirs: f64) -> Run {
        let scaled =
            |&(items, n): &(u8, u64), f: bool| (items, if f { (n as f64 * value / theirs).round() as u64 } else { n });
        let kernels = self
            .kernels
            .iter()
            .zip(follow)
            .map(|(l, f)| l.iter().zip(f).map(|(l, &f)| scaled(l, f)).collect())
            .collect();
        Run { stretch: self.stretch, kernels, ..Run::default() }
    }
}

/// Whether the launches of `runs` (each with its number) follow the number: per kernel, per
/// size in its launches, true where they do, false where they are the same in every run; None
/// where any does neither, or the runs launched kernels at different sizes.
fn follows(runs: &[(&Run, f64)]) -> Option<Vec<Vec<bool>>> {
    let (first, _) = runs.first()?;
    let same_shape = |r: &Run| {
        r.kernels.len() == first.kernels.len()
            && r.kernels.iter().zip(&first.kernels).all(|(a, b)| a.iter().map(|l| l.0).eq(b.iter().map(|l| l.0)))
    };
    if !runs.iter().all(|(r, _)| same_shape(r)) {
        return None;
    }
    let mut scale = Vec::with_capacity(first.kernels.len());
    for (k, launches) in first.kernels.iter().enumerate() {
        let mut sizes = Vec::with_capacity(launches.len());
        for i in 0..launches.len() {
            let n = |r: &Run| r.kernels[k][i].1;
            if runs.iter().all(|(r, _)| n(r) == n(first)) {
                sizes.push(false);
                continue;
            }
            let per = runs.iter().map(|(r, v)| n(r) as f64 / v);
            let (low, high) = per.fold((f64::MAX, 0f64), |(lo, hi), p| (lo.min(p), hi.max(p)));
            if low <= 0.0 || high > low * FOLLOWS_WITHIN {
                return None;
            }
            sizes.push(true);
        }
        scale.push(sizes);
    }
    Some(scale)
}

/// This process's arguments (`Run::args`, `Run::each_arg`), read once.
pub fn this_args() -> &'static Args {
    static ARGS: once_cell::sync::Lazy<Args> = once_cell::sync::Lazy::new(|| {
        std::fs::read("/proc/self/cmdline").map_or_else(|_| Args::default(), |line| Args::of_cmdline(&line))
    });
    &ARGS
}

/// What a launch of a kernel at size bucket `items` gains at most in its fastest copy against
/// the kernel as written, in ns: at that size where both were timed there, else at the size
/// where the copy gained most per structure (short runs at a size never time it there: the
/// model does not spend their launches on it); where no copy was timed at any size, at most the
/// kernel's own time as written (`written_bound`). None where no size says even that.
pub fn gain_per_launch(times: &TimesByClass, items: u8) -> Option<f64> {
    Some(gain_per_structure(times, items)? * structures_per_launch(times, items))
}

/// What the fastest copy gains per structure at size bucket `items`, in ns: as measured, else at
/// most the kernel's time as written (`written_bound`).
fn gain_per_structure(times: &TimesByClass, items: u8) -> Option<f64> {
    measured_gain(times, items).or_else(|| written_bound(times, items))
}

/// The structures a launch in the work-items bucket `items` covers: the most of those timed
/// there, else at most twice the bucket's lower bound (one work-item per structure). The bound
/// alone took a program at a power of two for twice its size: on the H100 particles' 100-launch
/// run at 262,144, its copies never timed, was taken to gain 14.7 ms, three times its whole
/// time as written, and its third run (2 launches) loaded the copies for it, 6 ms inside a build
/// of 5 ms.
fn structures_per_launch(times: &TimesByClass, items: u8) -> f64 {
    times.structures_at(items).unwrap_or_else(|| 2f64.powi(i32::from(items) + 1))
}

/// What a launch of `work_items` work-items run as written forgoes against its fastest copy, in
/// ns (`program::buys_copies`): the gain per structure at its size (measured, else the bound
/// from the time as written) times the structures the launches timed in its bucket had, or one
/// a work-item where none was timed there. One a work-item always counted before: a kernel
/// whose work-items each take several structures forwent less than it did, one with more
/// work-items than structures more.
pub fn forgone_per_launch(times: &TimesByClass, work_items: u64) -> Option<f64> {
    let items = super::size::SizeClass::of(work_items, 0).items;
    Some(gain_per_structure(times, items)? * times.structures_at(items).unwrap_or(work_items as f64))
}

/// What the fastest copy gains per structure at size bucket `items`, in ns, as measured: at that
/// size, else the most at any size; None where no copy was timed beside the kernel as written.
fn measured_gain(times: &TimesByClass, items: u8) -> Option<f64> {
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
fn written_bound(times: &TimesByClass, items: u8) -> Option<f64> {
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

/// What a recorded run could have gained with the copies from its start, in ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunGain {
    /// At most (`gain_per_launch`).
    pub at_most: f64,
    /// At least: its launches whose copies were timed at some size, at what they gained there;
    /// the others nothing, since a copy never timed may be no faster than the kernel as written.
    pub at_least: f64,
    /// Of `at_most`, the launches at sizes where the kernel as written was last seen leaving the
    /// device behind the host (`hidden::device_behind`), or all of them where the run's own
    /// longest stretch found it behind (`hidden::run_behind`): where the host sets a loop's
    /// pace, a faster form gains it nothing, whatever its bound says.
    pub behind: f64,
}

/// What each of the program's last runs (`runs`, oldest first) could have gained with the
/// copies from its start, in ns, newest first: each kernel's launches at what a launch at their
/// size gains (`gain_per_launch`, by the kernel's `times`, in the order of the runs' kernels),
/// summed over the kernels. None where any is unknown (a kernel launched whose times say
/// nothing) or no run is recorded. A kernel that was not launched gains nothing.
pub fn gains_per_run(times: &[Option<TimesByClass>], runs: &VecDeque<Run>) -> Option<Vec<RunGain>> {
    let mut gains = Vec::with_capacity(runs.len());
    for run in runs.iter().rev() {
        let mut gain = RunGain { at_most: 0.0, at_least: 0.0, behind: 0.0 };
        let run_behind = run.stretch.is_some_and(|(host, wait)| super::hidden::run_behind(host, wait));
        for (launches, times) in run.kernels.iter().zip(times).filter(|(l, _)| !l.is_empty()) {
            let times = times.as_ref()?;
            for &(items, n) in launches {
                let each = gain_per_launch(times, items)?;
                gain.at_most += n as f64 * each;
                if measured_gain(times, items).is_some() {
                    gain.at_least += n as f64 * each;
                }
                let behind = |(c, t): &(super::size::SizeClass, Times)| {
                    c.items == items && super::hidden::device_behind(t.waited)
                };
                if run_behind || times.classes.iter().any(behind) {
                    gain.behind += n as f64 * each;
                }
            }
        }
        gains.push(gain);
    }
    (!gains.is_empty()).then_some(gains)
}

/// What a run whose copies were declined (`verdict`) has forgone without them, against what
/// their load costs: the launch at which the one reaches the other buys them, ski-rental style
/// (`program::buys_copies`). Shared by the program and the launches that repeat
/// (`transparent::repeat`, the express lane), which add what each forgoes.
#[derive(Debug, Default)]
pub struct Forgone {
    /// Declined, and not waited for yet.
    pub declined: std::sync::atomic::AtomicBool,
    /// What the load costs, in ns (0: not known to be a load from clayout's cache, and no
    /// launch buys the copies).
    pub load_ns: std::sync::atomic::AtomicU64,
    /// What the launches run as written since the build have forgone, in ns.
    pub forgone_ns: std::sync::atomic::AtomicU64,
    /// When the first of them added what it forgoes (`clock_ns`; 0: none yet): the host time
    /// they took, against which a purchase sets what they forwent (`Bought::rate`).
    pub first_ns: std::sync::atomic::AtomicU64,
}

/// A purchase of the copies (`Forgone::buys`): what the launches run as written forwent, what
/// the load costs, and the host time since the first of them, in ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bought {
    pub forgone: u64,
    pub load: u64,
    pub elapsed: u64,
}

impl Bought {
    /// What the launches forwent per nanosecond of the host's time between them: the device
    /// time each nanosecond of launches run as written gave away, by the kernels' gains (their
    /// bounds, where a copy was never timed).
    pub fn rate(&self) -> f64 {
        self.forgone as f64 / self.elapsed.max(1) as f64
    }
}

/// Nanoseconds of a monotonic clock, never 0.
pub fn clock_ns() -> u64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    EPOCH.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64 + 1
}

impl Forgone {
    /// A run's verdict: `declined` or not, the load's cost, nothing forgone yet.
    pub fn reset(&self, declined: bool, load_ns: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.load_ns.store(load_ns, Relaxed);
        self.forgone_ns.store(0, Relaxed);
        self.first_ns.store(0, Relaxed);
        self.declined.store(declined, Relaxed);
    }

    /// Adds `gain`, unless the launches have forgone the load's cost already: the total forgone,
    /// and the load's cost. The launch that reaches it is seen by the express lane, the repeat
    /// and the full path in turn (`forgoes`, `program::buys_copies`), and counted once: before,
    /// it added its gain up to three times to what the statistics say was forgone.
    pub fn add(&self, gain: u64) -> (u64, u64) {
        self.add_at(gain, None)
    }

    /// `add`, for a launch made at `at` (`clock_ns`; None: now).
    fn add_at(&self, gain: u64, at: Option<u64>) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let load = self.load_ns.load(Relaxed);
        if gain > 0 && self.first_ns.load(Relaxed) == 0 {
            let _ = self.first_ns.compare_exchange(0, at.unwrap_or_else(clock_ns), Relaxed, Relaxed);
        }
        let before = self.forgone_ns.fetch_update(Relaxed, Relaxed, |f| (f < load).then(|| f.saturating_add(gain)));
        let forgone = match before {
            Ok(f) => f.saturating_add(gain),
            Err(f) => f,
        };
        (forgone, load)
    }

    /// A launch repeated as written while the declined copies are built adds `gain`, what it
    /// forgoes: true once the launches have forgone the load's cost, so that the launch takes
    /// the full path, which buys the copies. Before, only the launches that took the full
    /// path counted, and a long run of repeated launches never bought its copies.
    pub fn forgoes(&self, gain: u64) -> bool {
        if !self.declined.load(std::sync::atomic::Ordering::Relaxed) {
            return false;
        }
        let (forgone, load) = self.add(gain);
        forgone >= load
    }

    /// A launch made at `at` (`clock_ns`) and counted later, from the untracked run's journal,
    /// adds `gain`: what it forwent counts towards the purchase that the next launch counted in
    /// its call makes (`buys`), and its time is the first's where it was.
    pub fn forgoes_at(&self, gain: u64, at: u64) {
        if self.declined.load(std::sync::atomic::Ordering::Relaxed) {
            self.add_at(gain, Some(at));
        }
    }

    /// A launch on the full path adds `gain`: where the launches have now forgone the load's
    /// cost and the run still declined the copies, it declines them no more and buys them
    /// (`program::buys_copies`).
    pub fn buys(&self, gain: u64) -> Option<Bought> {
        use std::sync::atomic::Ordering::Relaxed;
        let (forgone, load) = self.add(gain);
        if forgone < load || !self.declined.swap(false, Relaxed) {
            return None;
        }
        let first = self.first_ns.load(Relaxed);
        let elapsed = if first == 0 { 0 } else { clock_ns().saturating_sub(first) };
        Some(Bought { forgone, load, elapsed })
    }
}

/// Whether loading the copies inside the build pays, and if not, why (a reason for the log).
/// `gains`: what each recorded run could have gained with them (`gains_per_run`); `build_ns`:
/// what the application's own build took, the least a load can take where none was timed yet
/// (the copies' program holds the application's source and more, and a build of clayout's is
/// made beside it: on the H100 the load took 8-12 ms after builds of 4-7 ms); `buyable`: a run
/// that declines them can still buy them once its launches have forgone the load
/// (`program::buys_copies`); `alike`: which runs they are (`Worth::weighed`), which the reason
/// says.
///
/// The rule weighs what each choice would have lost on the recorded runs, ski-rental style. On a
/// run that gains less than the load, loading loses the difference and declining nothing. On one
/// that gains more, declining loses what the run gains beyond the load where the run cannot buy
/// the copies, and at most twice the load where it can: it forgoes the load's worth of gains,
/// then waits for the load, which on NVIDIA first waits for the launches already queued (lbm's
/// 30-launch run on the H100, declined after a run of 1 and one of 2 launches at 64^3, bought its
/// copies at its sixth launch and lost 2.9 loads against `always`). The mean gain against the
/// load, the rule before, let one long run among many short ones load the copies for every run
/// after it: on the H100 particles' stress sequence loaded them for its runs of 2, 8 and 30
/// launches after its 1000-launch run, 5-7 ms each inside builds of 5 ms, where that run,
/// declined, bought them itself.
///
/// A run whose gain is known only to be below the load counts as short. Where a run can buy the
/// copies, a run is long by what it gains at least (`RunGain::at_least`), or by a share of its
/// bound from the kernels' time as written ([`UNTIMED_MARGIN`]): that bound alone says that a
/// run could not repay the load, not that it would have. Counted long by it, particles'
/// 100-launch run at 262,144, its copies never timed, loaded them for the 30-launch run after it
/// on the H100 (9 ms inside the build, +124 % with the builds counted), where ASTA gains a few
/// percent. A run that may or may not have repaid it is weighed on neither side; where every
/// run is such, the run declines, and buys the copies if it lasts: the same ski-rental bound,
/// and the run that buys them times them.
pub fn verdict(
    worth: Option<&Worth>,
    gains: Option<&[RunGain]>,
    build_ns: Option<f64>,
    buyable: bool,
    alike: Alike,
) -> Result<(), Declined> {
    let Some(w) = worth else { return Ok(()) };
    let (Some(load), Some(gains)) = (w.load_ns.or(build_ns), gains) else {
        return Ok(());
    };
    let (mut long, mut short, mut loses_loading, mut loses_declining) = (0usize, 0usize, 0.0, 0.0);
    // A run's length scaled from others' (`Worth::scaled`) is a guess already: its bound counts
    // only where the device was seen behind. On the H200 blackscholes at 262,144 options, its
    // loop bound by the host, loaded the copies for its 1000-launch run on its bound and ran
    // 70 % slower than without clayout (`docs/data/h200-policy-stress-38c-*`).
    let scaled = matches!(alike, Alike::Scaled { .. });
    for g in gains {
        let bound = if scaled { g.behind } else { g.at_most };
        if g.at_most < load {
            short += 1;
            loses_loading += load - g.at_most;
        } else if !buyable {
            let most = g.at_least.max(bound);
            if most >= load {
                long += 1;
                loses_declining += most - load;
            }
        } else {
            let counted = g.at_least.max(bound / UNTIMED_MARGIN);
            if counted >= load {
                long += 1;
                loses_declining += (counted - load).min(2.0 * load);
            }
        }
    }
    let untold = gains.len() - long - short;
    if loses_declining >= loses_loading && long + short > 0 {
        return Ok(());
    }
    Err(Declined {
        runs: gains.len(),
        alike,
        short,
        long,
        untold,
        loses_loading,
        loses_declining,
        load,
        load_timed: w.load_ns.is_some(),
    })
}

/// Why a run declined the load (`verdict`), said only when asked: the text took 6,000
/// instructions of formatting inside the application's build call.
#[derive(Clone, Debug, PartialEq)]
pub struct Declined {
    runs: usize,
    alike: Alike,
    short: usize,
    long: usize,
    untold: usize,
    loses_loading: f64,
    loses_declining: f64,
    load: f64,
    load_timed: bool,
}

impl std::fmt::Display for Declined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Declined { runs, alike, short, long, untold, .. } = *self;
        write!(f, "not loaded inside the application's build: of its last {runs} runs")?;
        match alike {
            Alike::Same => write!(f, " with these arguments")?,
            Alike::Nearest { differ, of } => write!(f, " with the arguments nearest these ({differ} of {of} differ)")?,
            Alike::Scaled { place, .. } => write!(
                f,
                " with these arguments but the number in argument {}, their launches scaled to it",
                place + 1
            )?,
            Alike::All => {}
        }
        write!(
            f,
            ", {short} would not have repaid them, by {:.3} ms in all, and {long} would have, by {:.3} ms that declining loses at most",
            self.loses_loading / 1e6,
            self.loses_declining / 1e6
        )?;
        if untold > 0 {
            write!(f, ", and {untold} might have, their copies never timed (a run that lasts buys them)")?;
        }
        match self.load_timed {
            true => write!(f, " (loading them there took {:.3} ms)", self.load / 1e6)?,
            false => {
                write!(f, " (loading them there takes more than the application's build, {:.3} ms)", self.load / 1e6)?
            }
        }
        write!(f, "; they are built once the run has lasted as long as the application's build")
    }
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

/// Records the verdict read, kept until exit: dropping one (its runs' vectors) took 5,400
/// instructions inside the application's build call.
static KEPT: parking_lot::Mutex<Vec<Worth>> = parking_lot::Mutex::new(Vec::new());

/// Records kept until exit at most: a program that builds in a loop drops the later ones at once.
const KEPT_AT_MOST: usize = 16;

/// Keeps `record` until exit (`KEPT`), where the process drops it; past the first few builds
/// it is dropped at once (`KEPT_AT_MOST`).
pub fn keep_until_exit(record: Option<Worth>) {
    let mut kept = KEPT.lock();
    if kept.len() < KEPT_AT_MOST {
        kept.extend(record);
    }
}

/// At exit: each program's record learns what this run launched and the load's time, if it
/// was loaded.
pub fn write_at_exit() {
    drop(std::mem::take(&mut *KEPT.lock()));
    let tracked = std::mem::take(&mut *TRACKED.lock());
    for t in tracked {
        let kernels = t.kernels.iter().map(super::lengths::launches_this_run).collect();
        let mut w = read(&t.key).unwrap_or(Worth { format: FORMAT, ..Worth::default() });
        let args = this_args().clone();
        let stretch = super::pace::run_stretch();
        w.push_run(Run { args: args.all, each_arg: args.each, numbers: args.numbers, stretch, kernels });
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

    /// Runs of `n` kernels that each launched, in run `i`, `seq[i]`'s launches at its size.
    fn runs(n: usize, seq: &[(u64, u8)]) -> VecDeque<Run> {
        seq.iter()
            .map(|&(launches, items)| Run { kernels: vec![vec![(items, launches)]; n], ..Run::default() })
            .collect()
    }

    fn run_of(kernels: Vec<Launches>) -> Run {
        Run { kernels, ..Run::default() }
    }

    /// Gains measured: as much at least as at most.
    fn measured(gains: &[f64]) -> Vec<RunGain> {
        gains.iter().map(|&g| RunGain { at_most: g, at_least: g, behind: 0.0 }).collect()
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

    const STRESS: &[(u64, u8)] = &[(1, 15), (100, 18), (2, 15), (30, 18), (1, 15), (1000, 18), (8, 15), (30, 18)];

    #[test]
    fn the_stress_sequence_of_particles_does_not_pay_for_its_load() {
        // Three kernels, each 3 us faster a launch in ASTA at 262,144 and no faster at 64,000.
        let mut t = times(18, 0.06, None, Some(0.06 - 3000.0 / 524_288.0));
        t.classes.push((
            SizeClass { items: 15, bytes: 20 },
            Times { written: Some(0.2), asta: Some(0.2), ..Times::default() },
        ));
        let times = vec![Some(t); 3];
        let w = Worth { format: FORMAT, load_ns: Some(9e6), runs: runs(3, STRESS) };
        let gains = gains_per_run(&times, &w.runs).unwrap();
        let want: Vec<f64> =
            STRESS.iter().rev().map(|&(n, items)| if items == 18 { 9000.0 * n as f64 } else { 0.0 }).collect();
        assert_eq!(gains, measured(&want), "newest first, summed over the kernels");
        let why = verdict(Some(&w), Some(&gains), Some(5e6), true, Alike::All).unwrap_err().to_string();
        assert!(
            why.contains("7 would not have repaid them, by 61.560 ms") && why.contains("1 would have, by 0.000 ms"),
            "{why}"
        );
        // Runs that launch what the last seven did would pay for it.
        let w = Worth { runs: runs(3, &[(1160, 18)]), ..w };
        let gains = gains_per_run(&times, &w.runs).unwrap();
        assert_eq!(gains, measured(&[9000.0 * 1160.0]));
        assert!(verdict(Some(&w), Some(&gains), Some(5e6), true, Alike::All).is_ok());
    }

    #[test]
    fn one_long_run_among_short_ones_loads_only_where_a_run_could_not_buy_them() {
        // 30 us a launch at 262,144 over the kernels: the 1000-launch run gains 30 ms, the
        // 100-launch one 3 ms, against a load of 5 ms (the short runs at 64,000 gain what the
        // copy gained per structure at 262,144). The mean gain, 5.65 ms a run, paid for it.
        let times = vec![Some(times(18, 0.06, None, Some(0.06 - 10_000.0 / 524_288.0))); 3];
        let w = Worth { format: FORMAT, load_ns: Some(5e6), runs: runs(3, &STRESS[..6]) };
        let gains = gains_per_run(&times, &w.runs).unwrap();
        // A run that declines buys them after forgoing 5 ms, then waits for the load: it loses
        // at most twice the load.
        let why = verdict(Some(&w), Some(&gains), None, true, Alike::All).unwrap_err().to_string();
        assert!(
            why.contains("5 would not have repaid them, by 21.085 ms") && why.contains("1 would have, by 10.000 ms"),
            "{why}"
        );
        // Where it could not buy them, declining loses the 25 ms it gains beyond the load.
        assert!(verdict(Some(&w), Some(&gains), None, false, Alike::All).is_ok());
        // lbm's first three runs on the H100 (1 launch at 64^3, 100 at 128^3, 2 at 64^3, newest
        // first): its 30-launch run next loads them; one more short run declines them.
        let w = Worth { load_ns: Some(5.4e6), ..w };
        assert!(verdict(Some(&w), Some(&measured(&[0.2e6, 55e6, 0.1e6])), None, true, Alike::All).is_ok());
        assert!(verdict(Some(&w), Some(&measured(&[0.2e6, 55e6, 0.1e6, 0.1e6])), None, true, Alike::All).is_err());
    }

    #[test]
    fn short_runs_timed_as_written_decline_a_load_never_timed() {
        // Particles' first two runs: 1 launch at 64,000, then 100 at 262,144, the copies still
        // being built in both (timed as written only), no load timed yet.
        let mut t = times(18, 0.02, None, None);
        t.classes.push((SizeClass { items: 15, bytes: 20 }, Times { written: Some(0.1), ..Times::default() }));
        let times = vec![Some(t); 3];
        let w = Worth { format: FORMAT, load_ns: None, runs: runs(3, &[(1, 15), (100, 18)]) };
        let gains = gains_per_run(&times, &w.runs).unwrap();
        let a = crate::runtime::cost::model::AGREE;
        let want = [3.0 * 100.0 * 0.02 * a * 524_288.0, 3.0 * 0.1 * a * 65_536.0];
        assert!(gains.iter().zip(want).all(|(g, w)| (g.at_most - w).abs() < 1e-3 && g.at_least == 0.0), "{gains:?}");
        let why = verdict(Some(&w), Some(&gains), Some(5e6), true, Alike::All).unwrap_err().to_string();
        assert!(why.contains("more than the application's build, 5.000 ms"), "{why}");
        // A run of twice as many launches could repay it, by the bound (1.9 loads): where a run
        // cannot buy the copies they are loaded; where it can, the bound does not say that the
        // run would have repaid them, and the run declines, to buy them if it lasts.
        let w = Worth { runs: runs(3, &[(200, 18)]), ..w };
        let gains = gains_per_run(&times, &w.runs).unwrap();
        assert!(verdict(Some(&w), Some(&gains), Some(5e6), false, Alike::All).is_ok());
        let why = verdict(Some(&w), Some(&gains), Some(5e6), true, Alike::All).unwrap_err().to_string();
        assert!(
            why.contains("0 would not have repaid them") && why.contains("1 might have, their copies never timed"),
            "{why}"
        );
    }

    #[test]
    fn a_run_whose_copies_were_never_timed_counts_a_quarter_of_its_bound() {
        // Particles' stress sequence on the H100: the copies of its 100-launch run at 262,144
        // never timed, 15 us a launch as written each; its 30-launch run after it, weighing that
        // run alone (the arguments nearest), loaded them: 9 ms inside the build.
        let mut untimed = times(18, 15_000.0 / 262_144.0, None, None);
        untimed.structures = vec![(18, 262_144.0)];
        let w = Worth { format: FORMAT, load_ns: None, runs: runs(3, &[(100, 18)]) };
        let gains = gains_per_run(&vec![Some(untimed.clone()); 3], &w.runs).unwrap();
        assert!(gains[0].at_most > 5e6 && gains[0].at_least == 0.0, "{gains:?}");
        assert!(verdict(Some(&w), Some(&gains), Some(5e6), true, Alike::All).is_err());
        // A run that could not have repaid it, with one that might have: declined for the one.
        let w2 = Worth { runs: runs(3, &[(100, 18), (1, 18)]), ..w.clone() };
        let gains = gains_per_run(&vec![Some(untimed.clone()); 3], &w2.runs).unwrap();
        let why = verdict(Some(&w2), Some(&gains), Some(5e6), true, Alike::All).unwrap_err().to_string();
        assert!(why.contains("1 would not have repaid them") && why.contains("1 might have"), "{why}");
        // One kernel's copy timed: the run gains at least what that one saves.
        let mut timed = times(18, 15_000.0 / 262_144.0, None, Some(5_000.0 / 262_144.0));
        timed.structures = untimed.structures.clone();
        let gains = gains_per_run(&[Some(timed.clone()), Some(untimed.clone()), Some(untimed)], &w.runs).unwrap();
        assert!((gains[0].at_least - 100.0 * 10_000.0).abs() < 1.0, "{gains:?}");
        assert!(gains[0].at_most > gains[0].at_least);
        // Timed, all three would have: loaded.
        let gains = gains_per_run(&vec![Some(timed); 3], &w.runs).unwrap();
        assert!(verdict(Some(&w), Some(&gains), Some(2e6), true, Alike::All).is_ok(), "{gains:?}");
        // lbm's 100-launch run at 128^3, never timed: 0.66 ms a launch as written, a bound of
        // 20 loads. A quarter of it still repays the load: loaded.
        let mut lbm = times(21, 660_000.0 / 2_097_152.0, None, None);
        lbm.structures = vec![(21, 2_097_152.0)];
        let w = Worth { format: FORMAT, load_ns: Some(5e6), runs: runs(1, &[(100, 21)]) };
        let gains = gains_per_run(&[Some(lbm)], &w.runs).unwrap();
        assert!(gains[0].at_most >= UNTIMED_MARGIN * 5e6 && gains[0].at_least == 0.0, "{gains:?}");
        assert!(verdict(Some(&w), Some(&gains), None, true, Alike::All).is_ok());
    }

    #[test]
    fn a_launch_covers_the_structures_timed_in_its_bucket() {
        // Particles' first two runs on the H100: 1 launch at 64,000, then 100 at 262,144 (a
        // power of two), each of three kernels 15 us as written there, the copies never timed,
        // no load timed yet, builds of 4.4 ms.
        let mut t = times(18, 15_000.0 / 262_144.0, None, None);
        t.classes.push((SizeClass { items: 15, bytes: 20 }, Times { written: Some(0.1), ..Times::default() }));
        let w = Worth { format: FORMAT, load_ns: None, runs: runs(3, &[(1, 15), (100, 18)]) };
        let gain = |t: &TimesByClass| gains_per_run(&vec![Some(t.clone()); 3], &w.runs).unwrap();
        // Taken at the bucket's upper bound, 2^19 structures, the 100-launch run gained
        // 13.5 ms, three times its time as written, and the third run loaded the copies.
        // (Bounds are weighed as gains where a run cannot buy the copies.)
        let loose = gain(&t);
        assert!((loose[0].at_most - 300.0 * 15_000.0 * crate::runtime::cost::model::AGREE * 2.0).abs() < 1.0);
        assert!(verdict(Some(&w), Some(&loose), Some(4.4e6), false, Alike::All).is_ok());
        t.structures = vec![(18, 262_144.0)];
        let exact = gain(&t);
        assert!((exact[0].at_most - loose[0].at_most / 2.0).abs() < 1.0, "{exact:?}");
        assert_eq!(exact[1], loose[1], "the bucket timed at no size keeps its bound");
        let why = verdict(Some(&w), Some(&exact), Some(4.4e6), false, Alike::All).unwrap_err().to_string();
        assert!(why.contains("1 would not have repaid them") && why.contains("1 would have, by 2.350 ms"), "{why}");
    }

    #[test]
    fn what_is_not_known_loads_the_copies() {
        let w = Worth { format: FORMAT, load_ns: Some(9e6), runs: runs(1, &[(1, 18)]) };
        assert!(verdict(None, Some(&measured(&[0.0])), Some(5e6), true, Alike::All).is_ok(), "no record");
        assert!(verdict(Some(&w), None, Some(5e6), true, Alike::All).is_ok(), "a gain not known");
        assert!(
            verdict(Some(&Worth { load_ns: None, ..w.clone() }), Some(&measured(&[0.0])), None, true, Alike::All)
                .is_ok(),
            "no load timed"
        );
        let timed = Some(times(18, 0.06, None, Some(0.05)));
        assert_eq!(gains_per_run(std::slice::from_ref(&timed), &VecDeque::new()), None, "no run recorded");
        let bound = 1000.0 * 0.06 * crate::runtime::cost::model::AGREE * 524_288.0;
        let untimed = gains_per_run(&[Some(times(15, 0.06, None, None))], &runs(1, &[(1000, 18)])).unwrap();
        assert!((untimed[0].at_most - bound).abs() < 1e-3, "no copy timed: its time as written");
        assert_eq!(untimed[0].at_least, 0.0, "and at least nothing");
        assert_eq!(gains_per_run(&[None], &runs(1, &[(10, 18)])), None, "launched, never timed");
        // A kernel not launched gains nothing, known or not; the others still count. A run
        // without launches gains nothing.
        let one = gains_per_run(std::slice::from_ref(&timed), &runs(1, &[(10, 18)])).unwrap();
        let with_idle: VecDeque<Run> = [run_of(vec![vec![(18, 10)], vec![]])].into();
        assert_eq!(gains_per_run(&[timed.clone(), None], &with_idle), Some(one.clone()));
        let idle_run: VecDeque<Run> = [run_of(vec![vec![(18, 10)]]), run_of(vec![])].into();
        assert_eq!(gains_per_run(&[timed], &idle_run), Some(vec![measured(&[0.0])[0], one[0]]));
    }

    #[test]
    fn a_launch_forgoes_what_its_structures_gain() {
        // 0.01 ns a structure faster in ASTA at 2^18 work-items.
        let mut t = times(18, 0.06, None, Some(0.05));
        assert!((forgone_per_launch(&t, 300_000).unwrap() - 3000.0).abs() < 1e-6, "one structure a work-item");
        // Launches there were timed over 1,048,576 structures: four a work-item.
        t.structures = vec![(18, 1_048_576.0)];
        assert!((forgone_per_launch(&t, 262_144).unwrap() - 10_485.76).abs() < 1e-6);
        assert_eq!(forgone_per_launch(&TimesByClass::default(), 1000), None, "nothing timed");
    }

    #[test]
    fn the_launch_that_reaches_the_load_counts_once() {
        let f = Forgone::default();
        f.reset(true, 100);
        assert!(!f.forgoes(60));
        // The express lane, the repeat, then the full path see the same launch.
        assert!(f.forgoes(60));
        assert!(f.forgoes(60));
        assert_eq!(f.add(60), (120, 100), "counted once");
        let bought = f.buys(60).expect("the full path buys the copies");
        assert_eq!((bought.forgone, bought.load), (120, 100));
        assert!(bought.rate() > 0.0, "forgone over the host time since the first launch");
        assert_eq!(f.buys(60), None, "once");
        assert!(!f.forgoes(60), "no longer declined");
        f.reset(true, 0);
        assert_eq!(f.add(5), (0, 0), "no load known: nothing to reach");
    }

    #[test]
    fn a_purchase_sets_what_was_forgone_against_the_host_time_since_the_first_launch() {
        let f = Forgone::default();
        f.reset(true, 1_000_000);
        assert!(f.buys(0).is_none());
        assert_eq!(
            f.first_ns.load(std::sync::atomic::Ordering::Relaxed),
            0,
            "a launch that forgoes nothing starts no clock"
        );
        f.add(500_000);
        std::thread::sleep(std::time::Duration::from_millis(5));
        let bought = f.buys(500_000).expect("the load's cost reached");
        assert!(bought.elapsed >= 5_000_000, "{bought:?}");
        assert!(bought.rate() <= 0.2, "1 ms forgone in at least 5 ms: {bought:?}");
        f.reset(true, 10);
        assert_eq!(
            f.first_ns.load(std::sync::atomic::Ordering::Relaxed),
            0,
            "each run's clock starts at its first launch"
        );
    }

    #[test]
    fn the_record_keeps_the_last_runs() {
        let mut w = Worth::default();
        for e in 0..40u8 {
            w.push_run(run_of(vec![vec![(e, 1)]]));
        }
        assert_eq!(w.runs.len(), KEEP_RUNS);
        assert_eq!(w.runs.front(), Some(&run_of(vec![vec![(24, 1)]])));
        assert_eq!(w.runs.back(), Some(&run_of(vec![vec![(39, 1)]])));
    }

    /// Arguments that differ from `this`'s in the places `differ`, one per argument (`extra`
    /// more at the end).
    fn args_like(this: &Args, differ: &[usize], extra: usize) -> Args {
        let mut each = this.each.clone().unwrap();
        differ.iter().for_each(|&i| each[i] ^= 0x5a5a);
        each.extend((0..extra as u64).map(|e| e + 77));
        Args {
            all: Some(crate::cache::disk::fnv1a(&each.iter().flat_map(|a| a.to_le_bytes()).collect::<Vec<_>>())),
            each: Some(each),
            numbers: None,
        }
    }

    fn run_with(args: &Args, kernels: Vec<Launches>) -> Run {
        Run { args: args.all, each_arg: args.each.clone(), numbers: args.numbers.clone(), stretch: None, kernels }
    }

    #[test]
    fn runs_with_this_run_s_arguments_are_weighed_where_there_are_any() {
        // lbm's stress sequence: `-i 1` at 64^3, `-i 100` at 128^3, `-i 2`, `-i 30`, then `-i 1`
        // again, whose one earlier run launched once.
        let seq = [(1, 18, 1), (100, 21, 2), (2, 18, 3), (30, 21, 4)];
        let mut w = Worth { format: FORMAT, ..Worth::default() };
        for &(n, items, args) in &seq {
            w.push_run(Run { args: Some(args), kernels: vec![vec![(items, n)]], ..Run::default() });
        }
        let hash = |a: u64| Args { all: Some(a), ..Args::default() };
        let (runs, alike) = w.weighed(&hash(1));
        assert_eq!(alike, Alike::Same);
        assert_eq!(runs.iter().map(|r| r.kernels[0][0]).collect::<Vec<_>>(), vec![(18, 1)]);
        // Arguments never seen, or not read: every run, the latest eight.
        for args in [hash(9), Args::default()] {
            let (runs, alike) = w.weighed(&args);
            assert!(alike == Alike::All && runs.len() == 4, "{args:?}");
        }
        for e in 0..20u64 {
            w.push_run(Run { args: Some(1 + e % 2), kernels: vec![vec![(18, e)]], ..Run::default() });
        }
        let (runs, alike) = w.weighed(&hash(1));
        assert!(alike == Alike::Same && runs.len() == WEIGH_RUNS, "{runs:?}");
        assert!(runs.iter().all(|r| r.args == Some(1)));
        assert_eq!(runs.back().map(|r| r.kernels[0][0]), Some((18, 18)), "the latest");
        assert_eq!(w.weighed(&hash(7)).0.len(), WEIGH_RUNS);
        // The reason says which runs it weighed.
        let times = vec![Some(times(18, 0.06, None, Some(0.05)))];
        let w = Worth { load_ns: Some(1e9), ..w };
        let (runs, alike) = w.weighed(&hash(1));
        let gains = gains_per_run(&times, &runs).unwrap();
        let why = verdict(Some(&w), Some(&gains), None, true, alike).unwrap_err().to_string();
        assert!(why.contains("of its last 8 runs with these arguments,"), "{why}");
    }

    #[test]
    fn where_no_run_had_these_arguments_the_nearest_are_weighed() {
        // lbm's `-x 64 -y 64 -z 64 -i 2` after `-i 1` at 64^3 and `-i 100` at 128^3.
        let this = Args::of_cmdline("lbm -x 64 -y 64 -z 64 -i 2 ".replace(' ', "\0").as_bytes());
        assert_eq!(this.each.as_ref().map(Vec::len), Some(8));
        let first = args_like(&this, &[7], 0);
        let large = args_like(&this, &[1, 3, 5, 7], 0);
        let mut w = Worth { format: FORMAT, load_ns: Some(5e6), ..Worth::default() };
        w.push_run(run_with(&first, vec![vec![(18, 1)]]));
        w.push_run(run_with(&large, vec![vec![(21, 100)]]));
        // A run recorded before the arguments were kept one by one is compared by their hash.
        w.push_run(Run { args: Some(3), kernels: vec![vec![(21, 1000)]], ..Run::default() });
        let (runs, alike) = w.weighed(&this);
        assert_eq!(alike, Alike::Nearest { differ: 1, of: 8 });
        assert_eq!(runs.iter().map(|r| r.kernels[0][0]).collect::<Vec<_>>(), vec![(18, 1)]);
        // 0.01 ns per structure at 2^18 work-items, 2^21 gains 10 ms a launch.
        let mut t = times(18, 0.06, None, Some(0.05));
        t.classes.push((
            SizeClass { items: 21, bytes: 26 },
            Times { written: Some(3.0), asta: Some(1.0), ..Times::default() },
        ));
        let gains = gains_per_run(&[Some(t.clone())], &runs).unwrap();
        let why = verdict(Some(&w), Some(&gains), None, true, alike).unwrap_err().to_string();
        assert!(why.contains("of its last 1 runs with the arguments nearest these (1 of 8 differ)"), "{why}");
        // Weighed with the runs at the other size, as before, it loads.
        let gains = gains_per_run(&[Some(t)], &w.runs).unwrap();
        assert!(verdict(Some(&w), Some(&gains), None, true, Alike::All).is_ok());
        // The same arguments win over any; an argument more or fewer is a place that differs.
        w.push_run(run_with(&this, vec![vec![(18, 2)]]));
        let (runs, alike) = w.weighed(&this);
        assert_eq!((runs.len(), alike), (1, Alike::Same));
        let (runs, alike) = w.weighed(&args_like(&this, &[], 1));
        assert_eq!((runs.back().map(|r| r.kernels[0][0]), alike), (Some((18, 2)), Alike::Nearest { differ: 1, of: 9 }));
        assert_eq!(
            w.weighed(&Args { all: Some(3), ..Args::default() }),
            (VecDeque::from([w.runs[2].clone()]), Alike::Same)
        );
    }

    fn cmdline(line: &str) -> Args {
        Args::of_cmdline(line.replace(' ', "\0").as_bytes())
    }

    #[test]
    fn an_argument_s_number_is_what_it_ends_with() {
        let numbers = cmdline("particles -n 262144 -i 1000 --steps=30 run.cl 0 2.5 v1.2.3 ").numbers.unwrap();
        let knob = |s: &str| Some(crate::cache::disk::fnv1a(s.as_bytes()));
        let got: Vec<_> = numbers.iter().map(|n| n.map(|(before, v)| (Some(before), v))).collect();
        assert_eq!(
            got,
            vec![
                None,
                Some((knob(""), 262144.0)),
                None,
                Some((knob(""), 1000.0)),
                Some((knob("--steps="), 30.0)),
                None,
                None,
                Some((knob(""), 2.5)),
                None
            ]
        );
    }

    /// particles' stress sequence as recorded: `-n N -i I --platform NVIDIA`, each of its three
    /// kernels launched `I` times at N's size bucket (15: 64,000; 18: 262,144).
    fn stress_record(seq: &[(u64, u64)]) -> Worth {
        let mut w = Worth { format: FORMAT, load_ns: Some(5e6), ..Worth::default() };
        for &(n, i) in seq {
            let items = if n == 64000 { 15 } else { 18 };
            let args = cmdline(&format!("particles -n {n} -i {i} --platform NVIDIA "));
            w.push_run(run_with(&args, vec![vec![(items, i)]; 3]));
        }
        w
    }

    #[test]
    fn runs_one_number_away_scale_their_launches_to_this_run_s() {
        let w = stress_record(&[(64000, 1), (262144, 100), (64000, 2), (262144, 30), (64000, 1)]);
        let (runs, alike) = w.weighed(&cmdline("particles -n 262144 -i 1000 --platform NVIDIA "));
        assert_eq!(alike, Alike::Scaled { place: 3, runs: 2 });
        assert!(runs.iter().all(|r| r.kernels == vec![vec![(18, 1000)]; 3]), "{runs:?}");
        // With particles' gains on the H100 (its heaviest kernel 4 us faster a launch in ASTA at
        // 262,144, the others 1), the run loads the copies inside its build; weighed as the
        // nearest runs, it declined them.
        let mut t = times(18, 0.06, None, Some(0.06 - 2000.0 / 524_288.0));
        t.classes.push((
            SizeClass { items: 15, bytes: 20 },
            Times { written: Some(0.2), asta: Some(0.2), ..Times::default() },
        ));
        let times = vec![Some(t); 3];
        let gains = gains_per_run(&times, &runs).unwrap();
        assert!(verdict(Some(&w), Some(&gains), None, true, alike).is_ok(), "{gains:?}");
        let nearest: VecDeque<Run> = w.runs.iter().filter(|r| r.kernels[0][0].0 == 18).cloned().collect();
        let why = verdict(
            Some(&w),
            gains_per_run(&times, &nearest).as_deref(),
            None,
            true,
            Alike::Nearest { differ: 1, of: 6 },
        );
        assert!(why.is_err());
        // Down as well as up: 8 steps at 64,000 after three runs of 1 and 2 there.
        let (runs, alike) = w.weighed(&cmdline("particles -n 64000 -i 8 --platform NVIDIA "));
        assert_eq!(alike, Alike::Scaled { place: 3, runs: 3 });
        assert!(runs.iter().all(|r| r.kernels == vec![vec![(15, 8)]; 3]), "{runs:?}");
        // The same arguments win: the 30-launch run again weighs the one before.
        let (runs, alike) = w.weighed(&cmdline("particles -n 262144 -i 30 --platform NVIDIA "));
        assert_eq!((alike, runs.len()), (Alike::Same, 1));
        let why = verdict(Some(&w), Some(&gains), None, false, Alike::Scaled { place: 3, runs: 2 });
        assert!(why.is_ok());
    }

    #[test]
    fn a_scaled_run_counts_an_untimed_bound_only_where_the_device_was_behind() {
        use crate::runtime::cost::hidden::Wait;
        let w = stress_record(&[(64000, 1), (262144, 100), (64000, 2), (262144, 30), (64000, 1)]);
        let (runs, alike) = w.weighed(&cmdline("particles -n 262144 -i 1000 --platform NVIDIA "));
        // Copies never timed, 0.06 ns a structure as written: a bound of 47 us a launch.
        let untimed = times(18, 0.06, None, None);
        let gains = gains_per_run(&vec![Some(untimed.clone()); 3], &runs).unwrap();
        assert!(gains.iter().all(|g| g.at_least == 0.0 && g.behind == 0.0 && g.at_most > 4.0 * 4.0 * 5e6), "{gains:?}");
        // Nothing says that the device was behind at that size (a loop the host may set the
        // pace of): declined, whether the run could buy them or not; the same bound in runs
        // weighed as they were loads.
        assert!(verdict(Some(&w), Some(&gains), None, true, alike).is_err());
        assert!(verdict(Some(&w), Some(&gains), None, false, alike).is_err());
        assert!(verdict(Some(&w), Some(&gains), None, true, Alike::Same).is_ok());
        // The last wait after those launches as written found the device behind: loaded.
        let mut behind = untimed;
        behind.classes[0].1.waited[0] = Some(Wait { share: 0.4, host_ns: 2e6, backlog: true, seen: 1 });
        let gains = gains_per_run(&vec![Some(behind); 3], &runs).unwrap();
        assert!(gains.iter().all(|g| g.behind == g.at_most), "{gains:?}");
        assert!(verdict(Some(&w), Some(&gains), None, true, alike).is_ok());
        // Or the runs scaled from found their loops bound by the device, kernels untimed.
        let mut w = w;
        w.runs.iter_mut().for_each(|r| r.stretch = Some((1.7e6, 1e6)));
        let (runs, alike) = w.weighed(&cmdline("particles -n 262144 -i 1000 --platform NVIDIA "));
        assert!(runs.iter().all(|r| r.stretch == Some((1.7e6, 1e6))), "the stretch goes with the run scaled");
        let gains = gains_per_run(&vec![Some(times(18, 0.06, None, None)); 3], &runs).unwrap();
        assert!(verdict(Some(&w), Some(&gains), None, true, alike).is_ok(), "{gains:?}");
        // Bound by the host: declined.
        w.runs.iter_mut().for_each(|r| r.stretch = Some((6e5, 15e3)));
        let (runs, alike) = w.weighed(&cmdline("particles -n 262144 -i 1000 --platform NVIDIA "));
        let gains = gains_per_run(&vec![Some(times(18, 0.06, None, None)); 3], &runs).unwrap();
        assert!(verdict(Some(&w), Some(&gains), None, true, alike).is_err(), "{gains:?}");
    }

    #[test]
    fn runs_scale_only_where_they_say_their_launches_follow_the_number() {
        // One number recorded at this place: nothing says the launches follow it.
        let w = stress_record(&[(64000, 1), (262144, 100)]);
        let (_, alike) = w.weighed(&cmdline("particles -n 262144 -i 1000 --platform NVIDIA "));
        assert_eq!(alike, Alike::Nearest { differ: 1, of: 6 });
        // Launches that are the same at every size follow no size: `-n` is not a length.
        let w = stress_record(&[(64000, 1), (262144, 1)]);
        let (runs, alike) = w.weighed(&cmdline("particles -n 1000000 -i 1 --platform NVIDIA "));
        assert!(matches!(alike, Alike::Nearest { .. }), "sizes in other buckets: {alike:?}");
        assert_eq!(runs.len(), 2);
        // A kernel once per run and one per step (and one more to set up): the first kept, the
        // second scaled.
        let mut w = Worth { format: FORMAT, ..Worth::default() };
        for i in [30u64, 100] {
            w.push_run(run_with(&cmdline(&format!("lbm -i {i} ")), vec![vec![(18, 1)], vec![(18, i + 1)]]));
        }
        let (runs, alike) = w.weighed(&cmdline("lbm -i 1000 "));
        assert_eq!(alike, Alike::Scaled { place: 1, runs: 2 });
        assert_eq!(runs[1].kernels, vec![vec![(18, 1)], vec![(18, 1010)]]);
        // Launches that follow no number: nothing scaled.
        w.push_run(run_with(&cmdline("lbm -i 60 "), vec![vec![(18, 1)], vec![(18, 7)]]));
        assert!(matches!(w.weighed(&cmdline("lbm -i 1000 ")).1, Alike::Nearest { .. }));
        // Another knob at that place (`-s` where the runs had `-i`, `--steps=` against a bare
        // number) is not the same number.
        let mut w = Worth { format: FORMAT, ..Worth::default() };
        for i in [30u64, 100] {
            w.push_run(run_with(&cmdline(&format!("lbm --steps={i} ")), vec![vec![(18, i)]]));
        }
        assert!(matches!(w.weighed(&cmdline("lbm --iters=1000 ")).1, Alike::Nearest { .. }));
        assert!(matches!(w.weighed(&cmdline("lbm 1000 ")).1, Alike::Nearest { .. }));
        assert_eq!(w.weighed(&cmdline("lbm --steps=1000 ")).0[0].kernels, vec![vec![(18, 1000)]]);
        // Runs recorded before numbers were kept are not scaled.
        let mut w = stress_record(&[(262144, 100), (262144, 30)]);
        w.runs.iter_mut().for_each(|r| r.numbers = None);
        assert!(matches!(
            w.weighed(&cmdline("particles -n 262144 -i 1000 --platform NVIDIA ")).1,
            Alike::Nearest { .. }
        ));
    }

    #[test]
    fn the_reason_says_the_runs_were_scaled() {
        let w = stress_record(&[(262144, 3), (262144, 2)]);
        let (runs, alike) = w.weighed(&cmdline("particles -n 262144 -i 4 --platform NVIDIA "));
        let times = vec![Some(times(18, 0.06, None, Some(0.05))); 3];
        let gains = gains_per_run(&times, &runs).unwrap();
        let why = verdict(Some(&w), Some(&gains), None, true, alike).unwrap_err().to_string();
        assert!(
            why.contains(
                "of its last 2 runs with these arguments but the number in argument 4, their launches scaled to it,"
            ),
            "{why}"
        );
    }

    #[test]
    fn this_process_s_arguments_are_read() {
        assert!(this_args().all.is_some() && this_args().each.is_some(), "/proc/self/cmdline");
        assert_eq!(Args::of_cmdline(b"name\0").each, Some(vec![]), "no arguments");
        assert_eq!(Args::of_cmdline(b"name\0a\0\0b\0").each.map(|e| e.len()), Some(3), "an empty argument is one");
    }
}
