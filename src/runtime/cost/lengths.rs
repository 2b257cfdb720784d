//! How long the program kept its buffers on the device, in this run and the ones before it (kept
//! on disk): per rewritten kernel and converted argument, the launches of that kernel on the
//! buffer bound there in each of the last [`KEEP`] epochs (from its first launch after the host
//! last had the buffer until the host has it again or the program releases it).
//!
//! The cost model bets on it (`model`): when every recorded epoch that got as far as this launch
//! went on long enough to repay the conversion, a run like those gains by converting now, rather
//! than after the many launches that its worst-case rule waits for.
//!
//! Keyed like `habits`: the kernel's key in the times cache and the argument's place among the
//! kernel's converted arguments. Each epoch also keeps the size of its first launch (the
//! power-of-two bucket of its work-items, as `size`), and a launch reads the epochs of its own
//! size, or of every size where none is recorded at its own: a program's runs at one size may be
//! long and at another short (a test size and a production size), and a bet that the long runs
//! promised lost twice the short runs' time (the policy-stress sequence on the H100, run 7:
//! 8 launches at 64,000 particles converted on the promise of the 30- and 1000-launch runs at
//! 262,144).

use once_cell::sync::Lazy;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Epochs kept per argument: the latest ones, so that a program whose use changes is followed.
pub const KEEP: usize = 16;

/// Recorded epochs needed before they are trusted. One is enough: whatever the history says, a
/// bet on it loses at most what `model` caps it at, and the epoch it loses on is recorded at once,
/// so that the next run does not make it again.
pub const MIN_EPOCHS: usize = 1;

/// Arguments kept per kernel (as `habits`).
const MAX_ARGS: u32 = 64;

/// The record's format: a record of another one is ignored (and rewritten). Format 1 kept no
/// sizes.
const FORMAT: u32 = 2;

const KIND: &str = "lengths";

/// Records written to disk per kernel and run as they change; later changes are written at
/// exit, so that a program with many short epochs does not write a file after each one.
const WRITES_PER_RUN: u32 = 16;

/// One kernel's record: per converted argument, the last epochs, oldest first: each one's
/// launches and the size bucket of its first launch ([`super::size::SizeClass::items`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lengths {
    format: u32,
    args: Vec<Vec<(u32, u8)>>,
}

impl Default for Lengths {
    fn default() -> Self {
        Lengths { format: FORMAT, args: Vec::new() }
    }
}

impl Lengths {
    /// The launches of the epochs recorded at `arg` at the size `items`, oldest first, or of
    /// every epoch at `arg` where none is recorded at that size.
    pub fn at(&self, arg: u32, items: u8) -> impl Iterator<Item = u32> + '_ {
        let all = self.args.get(arg as usize).map_or(&[][..], |v| v.as_slice());
        let any_here = all.iter().any(|e| e.1 == items);
        all.iter().filter(move |e| !any_here || e.1 == items).map(|e| e.0)
    }

    /// The epochs recorded at `arg`, oldest first: each one's launches and size bucket.
    pub fn epochs(&self, arg: u32) -> impl Iterator<Item = (u32, u8)> + '_ {
        self.args.get(arg as usize).map_or(&[][..], |v| v.as_slice()).iter().copied()
    }

    /// Records an epoch of `launches` at `arg`, whose first launch was at the size `items`;
    /// whether the record changed.
    pub fn push(&mut self, arg: u32, launches: u32, items: u8) -> bool {
        if arg >= MAX_ARGS || launches == 0 {
            return false;
        }
        let i = arg as usize;
        if self.args.len() <= i {
            self.args.resize(i + 1, Vec::new());
        }
        let v = &mut self.args[i];
        let epoch = (launches, items);
        // A full record of this one epoch stays as it is: nothing to write.
        if v.len() == KEEP && v.iter().all(|&e| e == epoch) {
            return false;
        }
        if v.len() == KEEP {
            v.remove(0);
        }
        v.push(epoch);
        true
    }

    /// The launches left, this one included, in the shortest epoch recorded at `arg` (at the
    /// size `items`, as [`Lengths::at`]) that got to launch `k`, if any did.
    pub fn remaining(&self, arg: u32, k: u32, items: u8) -> Option<u32> {
        shortest_reaching(self.at(arg, items), k).map(|n| n - k + 1)
    }

    /// The record read back from the cache; one of another format is refused.
    pub fn parse(payload: &[u8]) -> Result<Lengths, String> {
        #[derive(Deserialize)]
        struct Format {
            format: u32,
        }
        let f: Format = serde_json::from_slice(payload).map_err(|e| format!("the record does not parse: {e}"))?;
        if f.format != FORMAT {
            return Err(format!("lengths format {}, this clayout reads format {FORMAT}", f.format));
        }
        serde_json::from_slice(payload).map_err(|e| format!("the record does not parse: {e}"))
    }
}

/// The shortest recorded epoch among those that got to launch `k` (this one, counted from 1),
/// or None when fewer than [`MIN_EPOCHS`] are recorded or none got that far.
pub fn shortest_reaching(history: impl IntoIterator<Item = u32>, k: u32) -> Option<u32> {
    let (mut recorded, mut shortest) = (0usize, None::<u32>);
    for n in history {
        recorded += 1;
        if n >= k {
            shortest = Some(shortest.map_or(n, |s| s.min(n)));
        }
    }
    if recorded < MIN_EPOCHS {
        return None;
    }
    shortest
}

struct Entry {
    lengths: Lengths,
    /// Changed since it was last written.
    dirty: bool,
    writes: u32,
    /// The launches of the epochs this run ended at the first converted argument (recorded or
    /// not), per size bucket (`worth`).
    this_run: Vec<(u8, u64)>,
}

static LENGTHS: Lazy<Mutex<super::KeyMap<Entry>>> = Lazy::new(Default::default);

fn with<R>(kernel: &Arc<str>, f: impl FnOnce(&mut Entry) -> R) -> R {
    let mut all = LENGTHS.lock();
    let e = all.entry(kernel.clone()).or_insert_with(|| Entry {
        lengths: crate::cache::disk::get_with(KIND, kernel, Lengths::parse).unwrap_or_default(),
        dirty: false,
        writes: 0,
        this_run: Vec::new(),
    });
    f(e)
}

/// Reads the kernel's record from disk ahead of its first launch.
pub fn preload(kernel: &Arc<str>) {
    with(kernel, |_| ());
}

/// `Lengths::remaining` of the kernel's record as it stands, without a copy of it.
pub fn remaining(kernel: &Arc<str>, arg: u32, k: u32, items: u8) -> Option<u32> {
    with(kernel, |e| e.lengths.remaining(arg, k, items))
}

/// The kernel's record as it stands (`super::Records` keeps a copy).
pub fn get(kernel: &Arc<str>) -> Lengths {
    with(kernel, |e| e.lengths.clone())
}

/// Records an epoch of `launches` of `kernel` on the buffer at its converted argument `arg`,
/// whose first launch was at the size `items`.
pub fn record(kernel: &Arc<str>, arg: u32, launches: u32, items: u8) {
    let write = with(kernel, |e| {
        if arg == 0 {
            match e.this_run.iter_mut().find(|(i, _)| *i == items) {
                Some((_, n)) => *n += u64::from(launches),
                None => e.this_run.push((items, u64::from(launches))),
            }
        }
        if !e.lengths.push(arg, launches, items) {
            return None;
        }
        super::records_changed();
        if e.writes >= WRITES_PER_RUN {
            e.dirty = true;
            return None;
        }
        e.writes += 1;
        e.dirty = false;
        Some(e.lengths.clone())
    });
    if let Some(l) = write {
        crate::cache::disk::put_json_later(KIND, kernel.clone(), l);
    }
}

/// The launches of `kernel` in the epochs that ended in this run at its first converted
/// argument, per size bucket.
pub fn launches_this_run(kernel: &Arc<str>) -> Vec<(u8, u64)> {
    LENGTHS.lock().get(kernel).map_or_else(Vec::new, |e| e.this_run.clone())
}

/// Writes the records changed since they were last written.
pub fn write_at_exit() {
    let dirty: Vec<(Arc<str>, Lengths)> = LENGTHS
        .lock()
        .iter_mut()
        .filter(|(_, e)| e.dirty)
        .map(|(k, e)| {
            e.dirty = false;
            (k.clone(), e.lengths.clone())
        })
        .collect();
    // Handed over behind the versions still waiting to be made, so that the newest lands last.
    for (k, l) in dirty {
        crate::cache::disk::put_json_later(KIND, k, l);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_epoch_that_got_this_far() {
        let h = [1, 100, 2, 30, 1, 1000, 8, 30];
        assert_eq!(shortest_reaching(h.iter().copied(), 1), Some(1));
        assert_eq!(shortest_reaching(h.iter().copied(), 2), Some(2));
        assert_eq!(shortest_reaching(h.iter().copied(), 3), Some(8));
        assert_eq!(shortest_reaching(h.iter().copied(), 9), Some(30));
        assert_eq!(shortest_reaching(h.iter().copied(), 31), Some(100));
        assert_eq!(shortest_reaching(h.iter().copied(), 1001), None, "none got this far");
        assert_eq!(shortest_reaching([0u32; 0].iter().copied(), 1), None, "nothing recorded");
        assert_eq!(shortest_reaching([30].iter().copied(), 3), Some(30), "one epoch is history enough");
    }

    #[test]
    fn the_last_epochs_are_kept_per_argument() {
        let mut l = Lengths::default();
        assert!(l.push(1, 5, 10));
        let at = |l: &Lengths, arg| l.at(arg, 10).collect::<Vec<u32>>();
        assert_eq!((at(&l, 0), at(&l, 1), at(&l, 2)), (vec![], vec![5], vec![]));
        assert!(!l.push(0, 0, 10), "an epoch without launches says nothing");
        assert!(!l.push(MAX_ARGS, 3, 10));
        for n in 0..KEEP as u32 {
            assert!(l.push(1, 10 + n, 10));
        }
        assert_eq!(at(&l, 1).len(), KEEP);
        assert_eq!(at(&l, 1)[0], 10, "the oldest went");
        for _ in 0..KEEP {
            l.push(0, 7, 10);
        }
        assert!(!l.push(0, 7, 10), "a full record of one epoch does not change");
        assert!(l.push(0, 7, 11), "the same length at another size does");
        assert!(l.push(0, 8, 10));
    }

    #[test]
    fn a_launch_reads_the_epochs_of_its_own_size() {
        // The policy-stress sequence: short runs at 64,000 (2^15 work-items), long ones at
        // 262,144 (2^18), alternating.
        let mut l = Lengths::default();
        for (n, items) in [(1, 15), (100, 18), (2, 15), (30, 18), (1, 15), (1000, 18)] {
            l.push(0, n, items);
        }
        assert_eq!(l.at(0, 15).collect::<Vec<_>>(), vec![1, 2, 1]);
        assert_eq!(l.remaining(0, 3, 15), None, "no run at this size got to a third launch");
        assert_eq!(l.remaining(0, 3, 18), Some(28));
        assert_eq!(l.remaining(0, 1, 18), Some(30), "the short runs at the other size do not count");
        assert_eq!(l.at(0, 20).collect::<Vec<_>>(), vec![1, 100, 2, 30, 1, 1000], "a size never met reads every epoch");
        assert_eq!(l.remaining(0, 3, 20), Some(28));
    }

    #[test]
    fn the_record_reads_back_and_other_formats_are_refused() {
        let mut l = Lengths::default();
        l.push(0, 30, 15);
        l.push(2, 1000, 18);
        let json = serde_json::to_vec(&l).unwrap();
        assert_eq!(Lengths::parse(&json), Ok(l));
        let why = Lengths::parse(br#"{"format":1,"args":[[3]]}"#).unwrap_err();
        assert!(why.contains("format 1"), "the sizeless format of earlier clayouts: {why}");
        assert!(Lengths::parse(br#"{"args":[[[3,15]]]}"#).is_err());
        assert!(Lengths::parse(br#"{"format":2,"args":"x"}"#).is_err());
    }
}
