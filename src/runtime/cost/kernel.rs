//! What the cost model knows of one rewritten kernel: its measured times in each form, per size
//! class of its launches (`size`), kept on disk under a key of the build they belong to.

use super::habits;
use super::lengths;
use super::model::{Times, Variant};
use super::size::SizeClass;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The format of the `times` records. A record of another format is ignored as stale, never
/// read as this one: format 0 held one `Times` for every size, before size classes; in format 2
/// a launch timed by its event counted the longer of its device time and its enqueue's host
/// time, which made every form of a kernel of a few microseconds a tie (`transparent::timed`),
/// and the least of those timings, once settled, was never timed again.
pub const TIMES_FORMAT: u32 = 3;

/// Size classes kept per kernel; past it the class recorded longest ago goes. A program meets a
/// few; the bound only keeps a program of ever-changing sizes from growing the record.
const MAX_CLASSES: usize = 64;

/// A kernel's times per size class, as kept on disk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimesByClass {
    /// [`TIMES_FORMAT`]; absent (0) in the records before it.
    #[serde(default)]
    pub format: u32,
    /// In the order first recorded.
    #[serde(default)]
    pub classes: Vec<(SizeClass, Times)>,
    /// The tile of the copies whose ASTA times these are (0: not known, in records before it).
    #[serde(default)]
    pub tile: u32,
    /// The ASTA times measured at other tiles, per tile: kept so that a run back at a tile an
    /// earlier run measured does not measure it again, and so that tiles can be compared
    /// (`tiles`).
    #[serde(default)]
    pub shelf: Vec<(u32, Vec<Shelved>)>,
    /// A launch of the kernel timed by the application's next `clFinish` got no time, since the
    /// application enqueued more before it waited (particles' first kernel, once per iteration,
    /// lost every run's time so): its later launches are timed with markers, in every run.
    #[serde(default)]
    pub wait_missed: bool,
    /// The model ran the kernel's first launch of the last run in another form than as written
    /// (or would have, had it been enqueued before clayout looked at it: runtime::speculate):
    /// the next run's first launch goes through the model before its enqueue.
    #[serde(default)]
    pub first_not_written: bool,
    /// Per work-items bucket ([`SizeClass::items`]), the most structures a launch timed there
    /// had: what a launch in that bucket covers where a record says only its bucket (`worth`'s
    /// runs). Without it the bucket's upper bound counted, twice its lower bound, and a program
    /// at a power of two (particles' 262,144) was taken to gain twice what it could.
    #[serde(default)]
    pub structures: Vec<(u8, f64)>,
}

/// One size class's ASTA time at a tile that is not the current one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Shelved {
    pub class: SizeClass,
    pub asta: f64,
    pub timed: u32,
}

impl Default for TimesByClass {
    fn default() -> TimesByClass {
        TimesByClass {
            format: TIMES_FORMAT,
            classes: Vec::new(),
            tile: 0,
            shelf: Vec::new(),
            wait_missed: false,
            first_not_written: false,
            structures: Vec::new(),
        }
    }
}

/// Times records changed in this process and not yet written to the cache, by key. A launch
/// that is timed records its time in the application's call, where writing the file would
/// leave the device idle behind the timed launch (0.6-0.7 ms in blackscholes' second run on the
/// H100: four records written to the machine's disk); they are written when the application
/// releases a context and at exit (`write_unwritten`). A process killed before loses them: its
/// next run times those launches again.
static UNWRITTEN: once_cell::sync::Lazy<parking_lot::Mutex<super::KeyMap<TimesByClass>>> =
    once_cell::sync::Lazy::new(Default::default);

/// Writes the times records changed since they were written (`UNWRITTEN`).
pub fn write_unwritten() {
    let all: Vec<(Arc<str>, TimesByClass)> = UNWRITTEN.lock().drain().collect();
    for (key, times) in all {
        crate::cache::disk::put_json("times", &key, &times);
    }
}

impl TimesByClass {
    /// The record of the kernel whose times key is `key`: this process's, not yet written, or
    /// as clayout's disk cache holds it.
    pub fn read(key: &str) -> Option<TimesByClass> {
        if let Some(t) = UNWRITTEN.lock().get(key) {
            return Some(t.clone());
        }
        crate::cache::disk::get_with("times", key, TimesByClass::parse)
    }

    /// A record's payload, if it is of this format.
    pub fn parse(payload: &[u8]) -> Result<TimesByClass, String> {
        let t: TimesByClass = serde_json::from_slice(payload).map_err(|e| format!("the record does not parse: {e}"))?;
        if t.format != TIMES_FORMAT {
            return Err(format!("kernel times of format {} (this clayout reads format {TIMES_FORMAT})", t.format));
        }
        Ok(t)
    }

    /// The times for copies of tile `tile`: the ASTA copy's times at the tile before go to the
    /// shelf, and those measured at `tile` by an earlier run come back from it (the kernel as
    /// written and its staged copy do not depend on the tile).
    pub fn at_tile(&mut self, tile: u32) {
        if self.tile == tile {
            return;
        }
        let current: Vec<Shelved> = self
            .classes
            .iter_mut()
            .filter_map(|(class, t)| {
                let asta = t.asta.take()?;
                // Shelved with all its timings once two agreed (`Times::asta_tries`).
                let timed = if t.unsettled(Variant::Asta) { t.timed[Variant::Asta as usize] } else { t.asta_tries() };
                t.timed[Variant::Asta as usize] = 0;
                t.odd[Variant::Asta as usize] = None;
                t.tries[Variant::Asta as usize] = 0;
                Some(Shelved { class: *class, asta, timed })
            })
            .collect();
        // A record from before the tile was kept (0) holds times of an unknown tile: dropped.
        if self.tile != 0 && !current.is_empty() {
            self.shelf.retain(|(t, _)| *t != self.tile);
            self.shelf.push((self.tile, current));
        }
        if let Some(at) = self.shelf.iter().position(|(t, _)| *t == tile) {
            for s in self.shelf.remove(at).1 {
                let i = self.slot(s.class);
                self.classes[i].1.asta = Some(s.asta);
                self.classes[i].1.timed[Variant::Asta as usize] = s.timed;
            }
        }
        self.tile = tile;
    }

    /// The ASTA times at `tile` timed often enough to compare tiles (`TILE_TIMED`), per size
    /// class.
    pub fn asta_settled(&self, tile: u32) -> Vec<(SizeClass, f64)> {
        use super::model::TILE_TIMED;
        if tile == self.tile {
            return self
                .classes
                .iter()
                .filter(|(_, t)| t.asta_tries() >= TILE_TIMED)
                .filter_map(|(c, t)| Some((*c, t.asta?)))
                .collect();
        }
        let shelved = self.shelf.iter().find(|(t, _)| *t == tile).map(|(_, s)| s.as_slice()).unwrap_or_default();
        shelved.iter().filter(|s| s.timed >= TILE_TIMED).map(|s| (s.class, s.asta)).collect()
    }

    /// The fastest ASTA time at `class` settled at a tile other than the current one.
    pub fn asta_elsewhere(&self, class: SizeClass) -> Option<f64> {
        self.shelf
            .iter()
            .flat_map(|(_, s)| s)
            .filter(|s| s.class == class && s.timed >= super::model::TIMED_LAUNCHES)
            .map(|s| s.asta)
            .min_by(f64::total_cmp)
    }

    /// The tiles this record holds settled ASTA times for.
    pub fn tiles(&self) -> Vec<u32> {
        let mut tiles: Vec<u32> = self.shelf.iter().map(|(t, _)| *t).chain([self.tile]).filter(|&t| t != 0).collect();
        tiles.retain(|&t| !self.asta_settled(t).is_empty());
        tiles
    }

    /// The index of `class` in `classes`, added if it is not there (the oldest class goes past
    /// the bound).
    fn slot(&mut self, class: SizeClass) -> usize {
        match self.classes.iter().position(|(c, _)| *c == class) {
            Some(i) => i,
            None => {
                if self.classes.len() >= MAX_CLASSES {
                    self.classes.remove(0);
                }
                self.classes.push((class, Times::default()));
                self.classes.len() - 1
            }
        }
    }

    /// The times measured at `class` (none measured: all unknown).
    ///
    /// Not inlined: inlined into the cost model's `decide`, the copy of its `Option<f64>`s was
    /// split field by field, padding bits included, through that whole function, which grew
    /// from 6 to 21 KB of code and some 2,600 instructions more per launch (callgrind over
    /// `bench/firstlaunch.c`'s loop on PoCL, docs/results.md).
    #[inline(never)]
    pub fn at(&self, class: SizeClass) -> Times {
        self.classes.iter().find(|(c, _)| *c == class).map(|(_, t)| *t).unwrap_or_default()
    }

    /// Of the ASTA copy's times settled at classes other than `class` (at the current tile), the
    /// least share of the kernel as written's time at its class.
    pub fn asta_share_elsewhere(&self, class: SizeClass) -> Option<f64> {
        self.classes
            .iter()
            .filter(|(c, t)| *c != class && !t.unsettled(Variant::Asta) && !t.unsettled(Variant::Written))
            .filter_map(|(_, t)| Some(t.asta? / t.written?))
            .min_by(f64::total_cmp)
    }

    /// The kernel as written's time per structure at the other classes it was timed at (the
    /// least): what a launch at `class` is estimated to cost before it is timed there.
    pub fn written_elsewhere(&self, class: SizeClass) -> Option<f64> {
        self.classes.iter().filter(|(c, _)| *c != class).filter_map(|(_, t)| t.written).min_by(f64::total_cmp)
    }

    /// Whether times were measured at some class other than `class`.
    pub fn known_elsewhere(&self, class: SizeClass) -> bool {
        self.classes.iter().any(|(c, t)| *c != class && t.timed.iter().any(|&n| n > 0))
    }

    /// The times at `class`, to change (added if not there).
    pub fn at_mut(&mut self, class: SizeClass) -> &mut Times {
        let at = self.slot(class);
        &mut self.classes[at].1
    }

    /// The most structures a launch timed in the work-items bucket `items` had.
    pub fn structures_at(&self, items: u8) -> Option<f64> {
        self.structures.iter().find(|(i, _)| *i == items).map(|(_, m)| *m)
    }

    /// A launch of `m` structures in the work-items bucket `items` was timed.
    fn timed_structures(&mut self, items: u8, m: f64) {
        if let Some((_, most)) = self.structures.iter_mut().find(|(i, _)| *i == items) {
            *most = most.max(m);
        } else if self.structures.len() < MAX_CLASSES {
            self.structures.push((items, m));
        }
    }

    /// Keeps a measurement made at `class`.
    pub fn record(&mut self, class: SizeClass, ran: Variant, ns_per_structure: f64) {
        let at = self.slot(class);
        self.classes[at].1.record(ran, ns_per_structure);
    }
}

#[derive(Debug, Default)]
pub struct KernelModel {
    pub times: TimesByClass,
    /// Key of the kernel's times in the disk cache (device, rewritten copy, program hash), once
    /// the times were looked up there.
    pub disk_key: Option<Arc<str>>,
    /// The form the last launch ran in, so that the log says when it changes.
    pub last: Option<Variant>,
    /// Launches that could not be timed; past a few the model stops asking.
    pub untimed: u32,
    /// Launches timed by their events whose times have not come in yet: while as many as the
    /// model needs are on their way, it times no more.
    pub in_flight: u32,
    /// The kernel's habits and epoch lengths, as last read (`cost::Records`).
    pub records: Option<super::Records>,
    /// The model decided a launch of the kernel in this run already.
    pub decided: bool,
    /// The last decision, while it holds for the launches like it (`model::steady`); dropped
    /// whenever the kernel's times change.
    pub steady: Kept,
    /// Launches of the kernel in this run, and how many there were at the application's last
    /// wait that measured it (`pace`); the express lane says it launched in `lane_launched`,
    /// without this record's lock (a flag it sets once, not a count it updates at every launch).
    pub launches: u64,
    pub lane_launched: Arc<std::sync::atomic::AtomicBool>,
    pub waited_at: u64,
}

/// A kernel's kept decision (`KernelModel::steady`), and how many it dropped or replaced, which
/// the express lanes that launch by one check (`runtime::lane`).
#[derive(Debug, Default)]
pub struct Kept {
    steady: Option<Arc<super::Steady>>,
    dropped: Arc<std::sync::atomic::AtomicU64>,
}

impl Kept {
    pub fn set(&mut self, s: Option<Arc<super::Steady>>) {
        let dropped = self.steady.as_ref().is_some_and(|old| !s.as_ref().is_some_and(|new| Arc::ptr_eq(old, new)));
        self.steady = s;
        if dropped {
            // A lane that read the count before launches as it would have just before this
            // change: what the kernel's next decision converts waits for it (`runtime::world`).
            self.dropped.fetch_add(1, std::sync::atomic::Ordering::Release);
        }
    }

    /// The count of decisions dropped, shared with the lanes that check it.
    pub fn dropped(&self) -> &Arc<std::sync::atomic::AtomicU64> {
        &self.dropped
    }
}

impl std::ops::Deref for Kept {
    type Target = Option<Arc<super::Steady>>;
    fn deref(&self) -> &Self::Target {
        &self.steady
    }
}

impl KernelModel {
    pub fn load(&mut self, key: &str, tile: u32) {
        self.load_read(key, TimesByClass::read(key), tile);
    }

    /// `load`, with the times record (`TimesByClass::read`) already read.
    pub fn load_read(&mut self, key: &str, read: Option<TimesByClass>, tile: u32) {
        if self.disk_key.as_deref() == Some(key) {
            // Loaded already, by a launch that ran while the copies were built (its times of
            // the kernel as written are newer than `read`): only the tile is the copies'.
            self.at_tile(tile);
            return;
        }
        self.steady.set(None);
        let key: Arc<str> = key.into();
        if let Some(t) = read {
            crate::log::debug_with(|| format!("kernel {key}: times from the cache: {:?}", t.classes));
            self.times = t;
        }
        self.times.at_tile(tile);
        habits::preload(&key);
        lengths::preload(&key);
        // Those records change in the application's calls, and are written off its threads.
        crate::cache::disk::start_writer();
        self.disk_key = Some(key);
    }

    /// The times of the copies of tile `tile` (`TimesByClass::at_tile`).
    pub fn at_tile(&mut self, tile: u32) {
        if self.times.tile != tile {
            self.steady.set(None);
            self.times.at_tile(tile);
        }
    }

    /// A launch timed by the application's wait got no time: the next ones are timed with
    /// markers, in this run and the runs after it (`TimesByClass::wait_missed`).
    pub fn wait_missed(&mut self) {
        if self.times.wait_missed {
            return;
        }
        self.times.wait_missed = true;
        self.unwritten();
    }

    /// Keeps a launch's measured time per structure at its size class (or counts that it could
    /// not be timed).
    pub fn record(&mut self, kernel: &str, class: SizeClass, ran: Variant, ns: Option<f64>, structures: f64) {
        let Some(ns) = ns else {
            self.untimed += 1;
            return;
        };
        let ns = if crate::fault::inject("tile-timing") { injected_ns(ran, self.times.tile) * structures } else { ns };
        self.steady.set(None);
        self.times.record(class, ran, ns / structures);
        self.times.timed_structures(class.items, structures);
        crate::stats::kernel_time(kernel, ran.form(), ns);
        self.unwritten();
    }

    /// Whether the kernel was launched since the application's last wait that measured it
    /// (`pace`); from now on, not.
    pub fn launched_since_wait(&mut self) -> bool {
        let lane = self.lane_launched.swap(false, std::sync::atomic::Ordering::Relaxed);
        let since = self.launches != self.waited_at || lane;
        self.waited_at = self.launches;
        since
    }

    /// What one launch of `structures` at `class` takes in the form it ran last, as timed (the
    /// kernel as written's time where that form's is not known).
    pub fn launch_ns(&self, class: SizeClass, structures: f64) -> Option<f64> {
        let t = self.times.at(class);
        Some(self.last.and_then(|v| t.get(v)).or(t.written)? * structures)
    }

    /// The application's wait after launches of the kernel at `class` said `wait` (`pace`):
    /// kept for the form it ran last, where it changes the verdict kept (`hidden::after`).
    pub fn waited(&mut self, class: SizeClass, wait: super::hidden::Wait) {
        let Some(last) = self.last else { return };
        let t = self.times.at_mut(class);
        let slot = &mut t.waited[super::hidden::slot(last == Variant::Asta)];
        let Some(wait) = super::hidden::after(*slot, wait) else { return };
        *slot = Some(wait);
        self.steady.set(None);
        if let Some(key) = &self.disk_key {
            crate::log::debug_with(|| {
                format!(
                    "kernel {key}: the application's wait after its launches {} {} ({class}): {wait:?}",
                    last.name(),
                    if wait.paced() { "finds the device keeping up with the host" } else { "finds the device behind" },
                )
            });
        }
        self.unwritten();
    }

    /// Keeps the record as it is now for the cache, written at exit (`UNWRITTEN`).
    pub(super) fn unwritten(&self) {
        if let Some(key) = &self.disk_key {
            UNWRITTEN.lock().insert(key.clone(), self.times.clone());
        }
    }
}

/// The times `CLAYOUT_FAULT=tile-timing` (the fault-injection build) records instead of the
/// measured ones, per structure: the ASTA copy twice as fast as the kernel as written at tile
/// 128 and 10 % slower per factor of two away from it, so that a test of the choice of tile on
/// a CPU (whose timings are mostly noise) knows what the climb must find.
fn injected_ns(ran: Variant, tile: u32) -> f64 {
    match ran {
        Variant::Written => 100.0,
        Variant::Staged => 200.0,
        Variant::Asta => 50.0 * (1.0 + 0.1 * (f64::from(tile.max(1).ilog2()) - 7.0).abs()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asta_s_share_elsewhere_is_the_least_of_the_other_settled_classes() {
        let (small, large, other) =
            (SizeClass::of(1 << 15, 1 << 20), SizeClass::of(1 << 18, 1 << 23), SizeClass::of(1 << 20, 1 << 25));
        let mut t = TimesByClass::default();
        let twice = |t: &mut TimesByClass, class, v, ns| {
            t.record(class, v, ns);
            t.record(class, v, ns);
        };
        twice(&mut t, large, Variant::Written, 2.0);
        t.record(large, Variant::Asta, 1.5);
        assert_eq!(t.asta_share_elsewhere(small), None, "ASTA timed once: not settled");
        t.record(large, Variant::Asta, 1.7);
        assert_eq!(t.asta_share_elsewhere(small), Some(0.75));
        assert_eq!(t.asta_share_elsewhere(large), None, "its own class does not count");
        twice(&mut t, other, Variant::Written, 1.0);
        twice(&mut t, other, Variant::Asta, 0.5);
        assert_eq!(t.asta_share_elsewhere(small), Some(0.5), "the least share");
    }

    #[test]
    fn a_model_loaded_while_its_copies_were_built_keeps_its_times_when_they_are() {
        // Loaded by a launch as written (tile 0, not known yet) that then timed the kernel;
        // the build's load, with what it read before, only sets the tile.
        let class = SizeClass::of(1 << 20, 1 << 25);
        let mut model = KernelModel { disk_key: Some("k".into()), ..KernelModel::default() };
        model.times.record(class, Variant::Written, 2.0);
        let mut before = TimesByClass::default();
        before.record(class, Variant::Asta, 1.0);
        before.at_tile(64);
        model.load_read("k", Some(before), 64);
        assert_eq!((model.times.at(class).written, model.times.tile), (Some(2.0), 64));
    }

    #[test]
    fn times_are_kept_per_size_class() {
        let (a, b) = (SizeClass::of(64_000, 64_000 * 32), SizeClass::of(262_144, 262_144 * 32));
        let mut t = TimesByClass::default();
        t.record(a, Variant::Written, 2.0);
        t.record(a, Variant::Asta, 1.0);
        assert_eq!(t.at(a).written, Some(2.0));
        assert_eq!(t.at(b), Times::default(), "nothing measured at b");
        assert!(t.known_elsewhere(b));
        assert!(!t.known_elsewhere(a));
        t.record(b, Variant::Written, 3.0);
        assert_eq!((t.at(a).written, t.at(b).written), (Some(2.0), Some(3.0)));
        assert_eq!(t.at(b).timed, [1, 0, 0]);
    }

    #[test]
    fn a_bucket_keeps_the_most_structures_a_timed_launch_had() {
        let mut model = KernelModel { disk_key: Some("k".into()), ..KernelModel::default() };
        let class = SizeClass::of(262_144, 262_144 * 32);
        model.record("k", class, Variant::Written, None, 200_000.0);
        assert_eq!(model.times.structures_at(18), None, "not timed: nothing learnt");
        model.record("k", class, Variant::Written, Some(4e6), 200_000.0);
        model.record("k", SizeClass::of(300_000, 300_000 * 32), Variant::Asta, Some(4e6), 300_000.0);
        model.record("k", class, Variant::Written, Some(4e6), 262_144.0);
        assert_eq!(model.times.structures_at(18), Some(300_000.0), "one bucket of work-items, whatever the bytes");
        assert_eq!(model.times.structures_at(15), None);
        // Records from before it read back without it.
        let mut old = serde_json::to_value(&model.times).unwrap();
        old.as_object_mut().unwrap().remove("structures");
        let read = TimesByClass::parse(old.to_string().as_bytes()).unwrap();
        assert!(read.structures.is_empty() && read.classes == model.times.classes);
    }

    #[test]
    fn the_record_reads_back_and_other_formats_are_refused() {
        let mut t = TimesByClass::default();
        t.record(SizeClass::of(1000, 32_000), Variant::Staged, 0.5);
        let json = serde_json::to_vec(&t).unwrap();
        assert_eq!(TimesByClass::parse(&json), Ok(t));
        // The record before size classes: one set of times for every size.
        let old = br#"{"written":1.0,"staged":null,"asta":0.5,"timed":[2,0,2]}"#;
        let why = TimesByClass::parse(old).unwrap_err();
        assert!(why.contains("format 0"), "{why}");
        let newer = br#"{"format":4,"classes":[]}"#;
        let why = TimesByClass::parse(br#"{"format":2,"classes":[]}"#).unwrap_err();
        assert!(why.contains("format 2"), "the event times of format 2 are not read: {why}");
        assert!(TimesByClass::parse(newer).is_err());
        assert!(TimesByClass::parse(b"[1,2]").is_err());
    }

    #[test]
    fn asta_times_hold_only_at_their_tile() {
        let class = SizeClass::of(1 << 20, 1 << 25);
        let mut t = TimesByClass::default();
        t.at_tile(32);
        for v in [Variant::Written, Variant::Staged, Variant::Asta] {
            t.record(class, v, 1.0);
        }
        let json = serde_json::to_vec(&t).unwrap();
        let mut same = TimesByClass::parse(&json).unwrap();
        same.at_tile(32);
        assert_eq!(same, t, "read back at its tile: all of it");
        // A tile search between two runs gave the copies another tile: the kernel as written
        // and its staged copy keep their times, the ASTA copy is measured again.
        let mut other = TimesByClass::parse(&json).unwrap();
        other.at_tile(64);
        let at = other.at(class);
        assert_eq!((at.written, at.staged, at.asta), (Some(1.0), Some(1.0), None));
        assert_eq!(at.timed, [1, 1, 0]);
        assert_eq!(other.tile, 64);
        // ... and finds them again when a later run is back at tile 32.
        other.record(class, Variant::Asta, 0.5);
        let json = serde_json::to_vec(&other).unwrap();
        let mut back = TimesByClass::parse(&json).unwrap();
        back.at_tile(32);
        assert_eq!(back.at(class).asta, Some(1.0));
        assert_eq!(back.at(class).timed, [1, 1, 1]);
        assert_eq!(back.shelf, vec![(64, vec![Shelved { class, asta: 0.5, timed: 1 }])]);
        // A record from before the tile was kept holds no ASTA time for any tile.
        let old = br#"{"format":3,"classes":[[{"items":20,"bytes":25},{"written":1.0,"staged":null,"asta":0.5,"timed":[2,0,2]}]]}"#;
        let mut old = TimesByClass::parse(old).unwrap();
        old.at_tile(32);
        assert_eq!(old.at(class).asta, None);
    }

    #[test]
    fn settled_asta_times_are_listed_per_tile() {
        use super::super::model::TILE_TIMED;
        let class = SizeClass::of(1 << 20, 1 << 25);
        let mut t = TimesByClass::default();
        t.at_tile(32);
        for _ in 1..TILE_TIMED {
            t.record(class, Variant::Asta, 1.0);
        }
        assert!(t.tiles().is_empty(), "too few timed launches to compare tiles");
        t.record(class, Variant::Asta, 0.9);
        t.at_tile(128);
        assert_eq!(t.asta_elsewhere(class), Some(0.9), "the estimate for a tile not measured yet");
        t.record(class, Variant::Asta, 0.8);
        assert_eq!(t.asta_settled(32), vec![(class, 0.9)]);
        assert!(t.asta_settled(128).is_empty());
        assert_eq!(t.tiles(), vec![32]);
        for _ in 1..TILE_TIMED {
            t.record(class, Variant::Asta, 0.85);
        }
        assert_eq!(t.asta_settled(128), vec![(class, 0.8)]);
        assert_eq!(t.tiles(), vec![32, 128]);
    }

    #[test]
    fn the_oldest_class_goes_past_the_bound() {
        let mut t = TimesByClass::default();
        for i in 0..(MAX_CLASSES as u64 + 1) {
            t.record(SizeClass::of(1 << (i % 60), i + 1), Variant::Written, 1.0);
        }
        assert_eq!(t.classes.len(), MAX_CLASSES);
        assert_eq!(t.at(SizeClass::of(1, 1)), Times::default(), "the first class recorded went");
    }

    #[test]
    fn a_wait_is_kept_for_the_form_that_ran_only_when_it_says_otherwise() {
        use super::super::hidden::Wait;
        let class = SizeClass::of(1 << 16, 1 << 21);
        let w = |share| Wait { share, host_ns: 1e7, backlog: false, seen: 1 };
        let mut model = KernelModel { last: Some(Variant::Written), ..KernelModel::default() };
        assert!(!model.launched_since_wait());
        model.launches = 3;
        assert!(model.launched_since_wait());
        assert!(!model.launched_since_wait(), "counted once");
        model.waited(class, w(0.001));
        assert_eq!(model.times.at(class).waited, [Some(w(0.001)), None]);
        model.waited(class, w(0.0015));
        assert_eq!(model.times.at(class).waited[0], Some(Wait { seen: 2, ..w(0.001) }), "the same verdict, confirmed");
        model.last = Some(Variant::Asta);
        model.waited(class, w(0.5));
        assert_eq!(model.times.at(class).waited, [Some(Wait { seen: 2, ..w(0.001) }), Some(w(0.5))]);
        model.last = Some(Variant::Staged);
        model.waited(class, w(0.4));
        assert_eq!(model.times.at(class).waited, [Some(w(0.4)), Some(w(0.5))], "behind as written now");
        let old: Times = serde_json::from_str(r#"{"written":1.0,"staged":null,"asta":null,"timed":[2,0,0]}"#).unwrap();
        assert_eq!(old.waited, [None, None]);
        let json = serde_json::to_string(&model.times.at(class)).unwrap();
        assert_eq!(serde_json::from_str::<Times>(&json).unwrap(), model.times.at(class));
        model.times.record(class, Variant::Written, 2.0);
        assert_eq!(model.launch_ns(class, 10.0), Some(20.0), "the staged copy's not timed: as written");
    }
}
