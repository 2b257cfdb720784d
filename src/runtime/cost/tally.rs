//! Launches the express lane (`runtime::lane`) made, counted for the cost model without the
//! locks of their buffers.
//!
//! A launch that repeats its kernel's last one counts itself in each of its buffers' records
//! (the epoch's launches, what they would have cost, what ASTA gained). The lane locks no
//! buffer: it counts one number of its own (its thread alone writes it, so no atomic
//! read-modify-write), shared with the buffers' records, and a record takes the launches
//! counted since it last looked (`take`) whenever its cost is read, under its own lock.

use super::buffer::BufferCost;
use super::Steady;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// What each launch of a lane counts in its buffers, and how many it made.
#[derive(Debug)]
pub struct Tally {
    launches: AtomicU64,
    /// No launch is counted after this is set (by the lane's thread, after its last count, so
    /// that a record that sees it sees every launch counted before).
    retired: AtomicBool,
    /// The kernel's times key and size bucket (`BufferCost::launched`), if its launches count.
    pub model_key: Option<(Arc<str>, u8)>,
    /// The kept decision the launches run by, and their structures (`Steady::count`).
    pub steady: Option<(Arc<Steady>, f64)>,
}

/// A buffer's share of a tally: the argument it is counted at, and the launches already taken.
#[derive(Debug)]
pub struct Share {
    tally: Arc<Tally>,
    arg: u32,
    taken: u64,
}

impl Tally {
    pub fn new(model_key: Option<(Arc<str>, u8)>, steady: Option<(Arc<Steady>, f64)>) -> Arc<Tally> {
        Arc::new(Tally { launches: AtomicU64::new(0), retired: AtomicBool::new(false), model_key, steady })
    }

    /// One more launch, counted by the one thread whose lane owns the tally.
    pub fn launched(&self) {
        self.launches.store(self.launches.load(Ordering::Relaxed) + 1, Ordering::Release);
    }

    /// No more launches will be counted (by the lane's thread, as it closes).
    pub fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }

    pub fn retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// A share for a buffer counted at `arg`, from now on.
    pub fn share(self: &Arc<Self>, arg: u32) -> Share {
        Share { tally: self.clone(), arg, taken: self.launches.load(Ordering::Relaxed) }
    }
}

impl Share {
    pub fn of(&self, tally: &Arc<Tally>) -> bool {
        Arc::ptr_eq(&self.tally, tally)
    }

    /// Counts the launches made since the last take in `cost`, one by one as the launch path
    /// would have; false once the tally is retired and every launch of it taken.
    pub fn take(&mut self, cost: &mut BufferCost) -> bool {
        // Retired read first: every launch counted before the retirement is then seen.
        let retired = self.tally.retired();
        let now = self.tally.launches.load(Ordering::Acquire);
        for _ in self.taken..now {
            if let Some((key, items)) = &self.tally.model_key {
                cost.launched(key, self.arg, *items);
            }
            if let Some((steady, structures)) = &self.tally.steady {
                steady.count(*structures, cost);
            }
        }
        self.taken = now;
        !retired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_takes_each_launch_once_and_goes_once_retired() {
        let key: Arc<str> = Arc::from("k");
        let t = Tally::new(Some((key.clone(), 3)), None);
        let mut cost = BufferCost::default();
        let mut s = t.share(1);
        t.launched();
        t.launched();
        assert!(s.take(&mut cost));
        assert!(s.take(&mut cost));
        t.launched();
        t.retire();
        assert!(!s.take(&mut cost));
        assert_eq!(cost.launched(&key, 1, 3), 4, "three taken, and this one");
    }

    #[test]
    fn launches_before_a_share_are_not_its() {
        let key: Arc<str> = Arc::from("k");
        let t = Tally::new(Some((key.clone(), 0)), None);
        t.launched();
        let mut s = t.share(0);
        let mut cost = BufferCost::default();
        assert!(s.take(&mut cost));
        assert_eq!(cost.launched(&key, 0, 0), 1);
    }
}
