//! What the cost model knows of one rewritten kernel: its measured times in each form at each
//! launch size it ran at, kept on disk under a key of the build they belong to.
//!
//! A time is kept per size (the launch's global size and its converted buffers' shapes, which
//! the extents' scalar arguments decide), never carried to another: ASTA can win at one size and
//! lose at the next, so a new size is measured again (measuring adds no wait, `measure`).

use super::habits;
use super::model::{Times, Variant};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Sizes whose times are kept per kernel; the least recently used goes first.
pub const KEPT_SIZES: usize = 8;

/// The times of one kernel at each size, most recently used last.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SizedTimes {
    pub sizes: Vec<(u64, Times)>,
}

impl SizedTimes {
    /// The times at `size` (nothing measured: the default).
    pub fn at(&self, size: u64) -> Times {
        self.sizes.iter().find(|(s, _)| *s == size).map(|(_, t)| *t).unwrap_or_default()
    }

    /// Keeps `times` for `size` as the most recent.
    pub fn put(&mut self, size: u64, times: Times) {
        self.sizes.retain(|(s, _)| *s != size);
        self.sizes.push((size, times));
        if self.sizes.len() > KEPT_SIZES {
            self.sizes.remove(0);
        }
    }
}

#[derive(Debug, Default)]
pub struct KernelModel {
    /// The times at the size of the current launch (`select`).
    pub times: Times,
    /// The size `times` belong to.
    pub size: u64,
    /// The times at every size seen, as kept on disk.
    pub sized: SizedTimes,
    /// Key of the kernel's times in the disk cache (device, rewritten copy, program hash), once
    /// the times were looked up there.
    pub disk_key: Option<Arc<str>>,
    /// The form the last launch ran in, so that the log says when it changes.
    pub last: Option<Variant>,
    /// Launches that could not be timed; past a few the model stops asking.
    pub untimed: u32,
    /// Timings enqueued whose result has not come back yet, per form.
    pub pending: [u32; 3],
}

/// The disk record of a kernel's times (the `sized|` prefix: records of one time for every size
/// are not read).
fn record_key(key: &str) -> String {
    format!("sized|{key}")
}

impl KernelModel {
    /// Takes the kernel's times and habits from the disk cache under `key`.
    pub fn load(&mut self, key: &str) {
        let key: Arc<str> = key.into();
        if let Some(t) = crate::cache::disk::get_json::<SizedTimes>("times", &record_key(&key)) {
            crate::log::debug(&format!("kernel {key}: times from the cache: {t:?}"));
            // Timed in this run while the copies were being built: kept where the cache has
            // nothing for that size.
            let mine = std::mem::replace(&mut self.sized, t);
            for (size, times) in mine.sizes.into_iter().chain([(self.size, self.times)]) {
                if times.timed != [0; 3] && self.sized.at(size).timed == [0; 3] {
                    self.sized.put(size, times);
                }
            }
            self.times = self.sized.at(self.size);
        }
        habits::preload(&key);
        self.disk_key = Some(key);
    }

    /// Whether the model chose one of the kernel's copies (staged or ASTA, not to time it), at
    /// some size, in a run whose times are kept.
    pub fn used_copies(&self) -> bool {
        self.sized.sizes.iter().map(|(_, t)| t).chain([&self.times]).any(|t| t.chose_copy)
    }

    /// The launch about to be decided runs at `size`: the times measured there, if any.
    pub fn select(&mut self, size: u64) {
        if size != self.size {
            if self.times.timed != [0; 3] {
                self.sized.put(self.size, self.times);
            }
            self.size = size;
            self.times = self.sized.at(size);
            self.untimed = 0;
        }
    }

    /// The times with the timings still on their way counted as taken: the model moves on to
    /// the next form to time rather than timing one form again while its results travel.
    pub fn counting_pending(&self) -> Times {
        let mut t = self.times;
        for (n, p) in t.timed.iter_mut().zip(self.pending) {
            *n += p;
        }
        t
    }

    /// Notes what converting the buffers costs at the current size, kept on disk when it is
    /// news (a later run then decides before the kernel's copies exist).
    pub fn reckoned(&mut self, convert_ns: f64) {
        if self.times.convert_ns.is_some_and(|c| (c - convert_ns).abs() <= 0.1 * c) {
            return;
        }
        self.times.convert_ns = Some(convert_ns);
        self.save();
    }

    /// Keeps the times of every size on disk.
    pub fn save(&mut self) {
        self.sized.put(self.size, self.times);
        if let Some(key) = &self.disk_key {
            crate::cache::disk::put_json("times", &record_key(key), &self.sized);
        }
    }

    /// Keeps a launch's measured time, measured at `size` (or counts that it could not be
    /// timed).
    pub fn record(&mut self, kernel: &str, ran: Variant, ns: Option<f64>, size: u64) {
        let Some(ns) = ns else {
            self.untimed += 1;
            return;
        };
        if size == self.size {
            self.times.record(ran, ns);
        } else {
            let mut t = self.sized.at(size);
            t.record(ran, ns);
            self.sized.put(size, t);
        }
        crate::stats::kernel_time(kernel, ran.form(), ns);
        self.sized.put(self.size, self.times);
        if let Some(key) = &self.disk_key {
            crate::cache::disk::put_json("times", &record_key(key), &self.sized);
        }
    }
}

/// The size a launch's times belong to: its global work size and the sizes in bytes of its
/// buffer arguments.
pub fn size_key(global: &[u64], buffers: impl Iterator<Item = u64>) -> u64 {
    let mut text = format!("{global:?}");
    for b in buffers {
        text.push_str(&format!("|{b}"));
    }
    crate::cache::disk::fnv1a(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_belong_to_their_size() {
        let mut k = KernelModel::default();
        let (a, b) = (size_key(&[64000], [64000 * 16].into_iter()), size_key(&[262144], [262144 * 16].into_iter()));
        assert_ne!(a, b);
        k.select(a);
        k.record("k", Variant::Written, Some(1000.0), a);
        k.record("k", Variant::Asta, Some(500.0), a);
        assert_eq!(k.times.asta, Some(500.0));
        k.select(b);
        assert_eq!(k.times, Times::default(), "another size is measured again");
        // A timing of the old size coming back late goes to that size.
        k.record("k", Variant::Written, Some(900.0), a);
        assert_eq!(k.times, Times::default());
        k.record("k", Variant::Asta, Some(3000.0), b);
        k.select(a);
        assert_eq!((k.times.written, k.times.asta), (Some(900.0), Some(500.0)));
        k.select(b);
        assert_eq!(k.times.asta, Some(3000.0));
    }

    #[test]
    fn few_sizes_are_kept() {
        let mut s = SizedTimes::default();
        for i in 0..(KEPT_SIZES as u64 + 3) {
            s.put(i, Times { written: Some(i as f64), ..Times::default() });
        }
        assert_eq!(s.sizes.len(), KEPT_SIZES);
        assert_eq!(s.at(0), Times::default(), "the oldest went");
        assert_eq!(s.at(KEPT_SIZES as u64 + 2).written, Some((KEPT_SIZES + 2) as f64));
    }
}
