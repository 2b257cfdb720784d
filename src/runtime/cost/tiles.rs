//! The tile of a program's copies, chosen from what its own kernels measured in ASTA at each
//! tile over earlier runs, rather than from the tile search's streaming kernel alone.
//!
//! The search (`tune`) scores a tile by a kernel that touches every word of every structure; a
//! real kernel reads some members, gathers others, and is best at another tile (on an H100
//! particles ran 3 % faster at tile 128 than at the searched or default 32, spmv-ell 3-5 %,
//! lbm 1 % slower). So once a program's kernels have settled ASTA times at their tile, a later
//! run tries a neighbouring tile (half or twice it), climbing while a neighbour is faster: each
//! tile tried costs one run at it, and only a run whose copies at that tile are already in
//! clayout's cache tries it (they are built on clayout's worker in the run before, so the
//! trying run never waits for a build). The tile is one per program, not per kernel: the
//! program's kernels share their buffers, and a buffer between two kernels of different tiles
//! would be converted between every pair of launches.
//!
//! Tiles are compared on the (kernel, size class) pairs both have settled times for, each
//! weighted by its work-items (a time per structure times the structures is a launch's time);
//! a tile must be 2 % faster to replace the one before, as in the search.

use super::kernel::TimesByClass;
use super::SizeClass;
use serde::{Deserialize, Serialize};

/// A tile must beat the one it replaces by this factor: below it, timing noise.
const MARGIN: f64 = 0.98;
/// Runs that may try a tile: a run that tried it and measured nothing (too short to convert)
/// leaves room for one more.
const TRIES: u32 = 2;

/// What earlier runs did about a program's tiles, kept on disk beside its kernels' times.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Trials {
    /// Tiles whose copies a run built ahead for a later run to try.
    #[serde(default)]
    pub prebuilt: Vec<u32>,
    /// Tiles whose copies could not be built: never tried.
    #[serde(default)]
    pub failed: Vec<u32>,
    /// Runs that tried each tile.
    #[serde(default)]
    pub tried: Vec<(u32, u32)>,
}

impl Trials {
    pub fn tries(&self, tile: u32) -> u32 {
        self.tried.iter().find(|(t, _)| *t == tile).map_or(0, |(_, n)| *n)
    }

    pub fn note_try(&mut self, tile: u32) {
        match self.tried.iter_mut().find(|(t, _)| *t == tile) {
            Some((_, n)) => *n += 1,
            None => self.tried.push((tile, 1)),
        }
    }
}

/// The tile to build a program's copies with, and the tile to try next, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The fastest tile measured (`base` while nothing is measured).
    pub best: u32,
    /// A neighbour of `best` no run has measured yet.
    pub next: Option<u32>,
}

/// The program's kernels' settled ASTA times at `tile`: ((kernel, class), time per structure).
fn settled(records: &[TimesByClass], tile: u32) -> Vec<((usize, SizeClass), f64)> {
    records
        .iter()
        .enumerate()
        .flat_map(|(k, r)| r.asta_settled(tile).into_iter().map(move |(c, t)| ((k, c), t)))
        .collect()
}

/// Whether `a` is faster than `b` by the margin on the pairs both measured; None when they
/// share no pair.
fn faster(a: &[((usize, SizeClass), f64)], b: &[((usize, SizeClass), f64)]) -> Option<bool> {
    let weight = |c: SizeClass| (1u64 << c.items.min(62)) as f64;
    let (mut sa, mut sb) = (0.0, 0.0);
    for (pair, ta) in a {
        if let Some((_, tb)) = b.iter().find(|(p, _)| p == pair) {
            sa += ta * weight(pair.1);
            sb += tb * weight(pair.1);
        }
    }
    (sb > 0.0).then_some(sa < sb * MARGIN)
}

/// Chooses among `candidates` (the tiles the device's conversion kernels may take) from the
/// kernels' `records`: the fastest tile measured, starting from `base` (the searched or default
/// tile), and its untried neighbour among the candidates when `best` has been measured.
pub fn choose(base: u32, candidates: &[u32], records: &[TimesByClass], trials: &Trials) -> Choice {
    let mut tiles: Vec<u32> = records.iter().flat_map(TimesByClass::tiles).chain(candidates.iter().copied()).collect();
    tiles.sort_unstable();
    tiles.dedup();
    let measured: Vec<(u32, Vec<_>)> =
        tiles.iter().map(|&t| (t, settled(records, t))).filter(|(_, times)| !times.is_empty()).collect();
    // From the base when it is measured, else from the smallest tile measured: a base that
    // nothing measured (a search's tile, newer than the times) does not hide measured ones.
    let start = measured.iter().position(|(t, _)| *t == base).unwrap_or(0);
    let Some((mut best, mut best_times)) = measured.get(start).cloned() else {
        return Choice { best: base, next: None };
    };
    for (i, (t, times)) in measured.into_iter().enumerate() {
        if i != start && faster(&times, &best_times) == Some(true) {
            (best, best_times) = (t, times);
        }
    }
    let next = [best * 2, best / 2].into_iter().find(|&t| {
        candidates.contains(&t)
            && !trials.failed.contains(&t)
            && trials.tries(t) < TRIES
            && faster(&settled(records, t), &best_times).is_none()
    });
    Choice { best, next }
}

#[cfg(test)]
mod tests {
    use super::super::model::Variant;
    use super::*;

    const CANDIDATES: [u32; 4] = [32, 64, 128, 256];

    /// A kernel's record with settled ASTA times `(tile, ns)` at one class.
    fn kernel(times: &[(u32, f64)], class: SizeClass) -> TimesByClass {
        let mut r = TimesByClass::default();
        for &(tile, ns) in times {
            r.at_tile(tile);
            for _ in 0..super::super::model::TILE_TIMED {
                r.record(class, Variant::Asta, ns);
            }
        }
        r
    }

    #[test]
    fn nothing_measured_keeps_the_base_and_tries_nothing() {
        let c = choose(32, &CANDIDATES, &[TimesByClass::default()], &Trials::default());
        assert_eq!(c, Choice { best: 32, next: None });
    }

    #[test]
    fn the_tiles_are_climbed_one_neighbour_at_a_time() {
        let class = SizeClass::of(1 << 20, 1 << 25);
        let none = Trials::default();
        // Measured at 32: try 64 next.
        let c = choose(32, &CANDIDATES, &[kernel(&[(32, 1.0)], class)], &none);
        assert_eq!(c, Choice { best: 32, next: Some(64) });
        // 64 is 3 % faster: it is best, and 128 is tried.
        let c = choose(32, &CANDIDATES, &[kernel(&[(32, 1.0), (64, 0.97)], class)], &none);
        assert_eq!(c, Choice { best: 64, next: Some(128) });
        // 128 is slower than 64: 64 stays, and nothing is left to try (32 was measured).
        let c = choose(32, &CANDIDATES, &[kernel(&[(32, 1.0), (64, 0.97), (128, 0.99)], class)], &none);
        assert_eq!(c, Choice { best: 64, next: None });
        // 1 % is noise: the base stays, and its other neighbour does not exist (16 is no candidate).
        let c = choose(32, &CANDIDATES, &[kernel(&[(32, 1.0), (64, 0.99)], class)], &none);
        assert_eq!(c, Choice { best: 32, next: None });
    }

    #[test]
    fn a_base_nothing_measured_does_not_hide_the_measured_tiles() {
        // A tile search after the times were measured at 32 says 64: until 64 is measured, the
        // copies keep 32, and 64 is the neighbour to try.
        let class = SizeClass::of(1 << 20, 1 << 25);
        let c = choose(64, &CANDIDATES, &[kernel(&[(32, 1.0)], class)], &Trials::default());
        assert_eq!(c, Choice { best: 32, next: Some(64) });
        let c = choose(64, &CANDIDATES, &[kernel(&[(32, 1.0), (64, 1.3)], class)], &Trials::default());
        assert_eq!(c, Choice { best: 32, next: None });
    }

    #[test]
    fn tiles_are_compared_on_what_both_measured_weighted_by_work_items() {
        let (small, large) = (SizeClass::of(1 << 10, 1 << 15), SizeClass::of(1 << 20, 1 << 25));
        // Kernel a ran large launches, faster at 128; kernel b small ones, slower at 128.
        let a = kernel(&[(32, 1.0), (128, 0.9)], large);
        let b = kernel(&[(32, 1.0), (128, 2.0)], small);
        let c = choose(32, &CANDIDATES, &[a.clone(), b], &Trials::default());
        assert_eq!(c.best, 128, "the large launches weigh more");
        // A class measured at one tile only does not count against the other.
        let lone = kernel(&[(32, 5.0)], small);
        assert_eq!(choose(32, &CANDIDATES, &[a, lone], &Trials::default()).best, 128);
    }

    #[test]
    fn failed_or_twice_tried_tiles_are_not_tried_again() {
        let class = SizeClass::of(1 << 20, 1 << 25);
        let r = [kernel(&[(64, 1.0)], class)];
        let mut trials = Trials { failed: vec![128], ..Trials::default() };
        assert_eq!(choose(64, &CANDIDATES, &r, &trials).next, Some(32));
        trials.note_try(32);
        assert_eq!(choose(64, &CANDIDATES, &r, &trials).next, Some(32), "a try that measured nothing");
        trials.note_try(32);
        assert_eq!(choose(64, &CANDIDATES, &r, &trials), Choice { best: 64, next: None });
    }
}
