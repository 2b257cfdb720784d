//! What the cost model keeps in each buffer's record: what the launches on it would have cost
//! since the host last accessed it (an epoch), how many launches each rewritten kernel made on it
//! in the epoch (so that how long epochs last is learnt, `lengths`), and which kernel argument
//! converted it (so that what becomes of it is learnt, `habits`).

use super::habits::{self, ConvertedBy};
use super::lengths;
use std::sync::Arc;

/// The cost model's record of one buffer between two host accesses; a host access starts it over.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Reuse {
    /// What the launches of rewritten kernels on the buffer would have taken as written, in ns.
    pub epoch_ns: f64,
    /// A launch brought the buffer back from a device layout (the cost model then leaves it in
    /// host layout until the host accesses it).
    pub sent_back: bool,
    /// What the launches in ASTA have gained over their fastest host-layout form, in ns (negative
    /// where kernels sharing the buffer lose there more than the others gain).
    pub asta_gain_ns: f64,
}

#[derive(Clone, Debug, Default)]
pub struct BufferCost {
    pub reuse: Reuse,
    /// The rewritten kernel's argument that converted the buffer to its device layout, until it
    /// comes back or is released.
    pub converted_by: Option<ConvertedBy>,
    /// This epoch's launches per (kernel's times key, converted argument), under every policy:
    /// a run whose launches all ran as written still says how long it was.
    pub launches: Vec<(Arc<str>, u32, u32)>,
}

impl BufferCost {
    /// The host sees the buffer: the count of launches on it starts over.
    pub fn host_access(&mut self) {
        self.reuse = Reuse::default();
        self.epoch_ended();
    }

    /// Counts a launch of `kernel` on the buffer at its converted argument `arg`; how many it
    /// made this epoch, this one included.
    pub fn launched(&mut self, kernel: &Arc<str>, arg: u32) -> u32 {
        // The same kernel's launches pass the same key: its pointer tells before its text.
        let same = |k: &Arc<str>| Arc::ptr_eq(k, kernel) || k == kernel;
        let at = match self.launches.iter().position(|(k, a, _)| *a == arg && same(k)) {
            Some(at) => at,
            None => {
                self.launches.push((kernel.clone(), arg, 0));
                self.launches.len() - 1
            }
        };
        let n = &mut self.launches[at].2;
        *n = n.saturating_add(1);
        *n
    }

    /// This epoch's launches, counted from zero again.
    pub fn take_epoch(&mut self) -> Vec<(Arc<str>, u32, u32)> {
        std::mem::take(&mut self.launches)
    }

    /// The epoch ended (the host accessed the buffer, or the program released it): how long it
    /// lasted at each kernel argument is kept.
    fn epoch_ended(&mut self) {
        for (kernel, arg, n) in self.take_epoch() {
            lengths::record(&kernel, arg, n);
        }
    }

    /// The buffer came back to its host layout.
    pub fn came_back(&mut self) {
        if let Some(by) = self.converted_by.take() {
            habits::saw(&by, true);
        }
    }

    /// The application released the buffer (`converted`: while it was in a device layout).
    pub fn released(&mut self, converted: bool) {
        if let Some(by) = self.converted_by.take().filter(|_| converted) {
            habits::saw(&by, false);
        }
        self.epoch_ended();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launches_are_counted_per_kernel_and_argument_until_the_epoch_ends() {
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        let mut c = BufferCost::default();
        assert_eq!(c.launched(&a, 0), 1);
        assert_eq!(c.launched(&a, 0), 2);
        assert_eq!(c.launched(&b, 0), 1, "another kernel");
        assert_eq!(c.launched(&a, 1), 1, "another argument");
        assert_eq!(c.launched(&a, 0), 3);
        assert_eq!(c.take_epoch(), vec![(a.clone(), 0, 3), (b.clone(), 0, 1), (a.clone(), 1, 1)]);
        assert_eq!(c.launched(&a, 0), 1, "a new epoch counts from the start");
        assert!(c.take_epoch().len() == 1 && c.take_epoch().is_empty());
    }
}
