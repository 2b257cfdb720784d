//! What the cost model keeps in each buffer's record: what the launches on it would have cost
//! since the host last accessed it (an epoch), how many launches each rewritten kernel made on it
//! in the epoch (so that how long epochs last is learnt, `lengths`), and which kernel argument
//! converted it (so that what becomes of it is learnt, `habits`).

use super::habits::{self, ConvertedBy, Outcome};
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
    /// What the timings the model could have done without cost the application, in ns (the
    /// budget `model::afford` keeps them within).
    pub timing_ns: f64,
}

/// One kernel argument's launches on a buffer in its epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpochLaunches {
    /// The kernel's times key.
    pub kernel: Arc<str>,
    pub arg: u32,
    pub launches: u32,
    /// The size bucket of the first of them (`lengths`).
    pub items: u8,
}

#[derive(Clone, Debug, Default)]
pub struct BufferCost {
    pub reuse: Reuse,
    /// The rewritten kernel's argument that converted the buffer to its device layout, until it
    /// comes back or is released.
    pub converted_by: Option<ConvertedBy>,
    /// This epoch's launches per kernel's times key and converted argument, under every policy:
    /// a run whose launches all ran as written still says how long it was.
    pub launches: Vec<EpochLaunches>,
}

impl BufferCost {
    /// The host sees the buffer: the count of launches on it starts over.
    pub fn host_access(&mut self) {
        self.reuse = Reuse::default();
        self.epoch_ended();
    }

    /// Counts a launch of `kernel` on the buffer at its converted argument `arg`, of the size
    /// bucket `items`; how many it made this epoch, this one included.
    pub fn launched(&mut self, kernel: &Arc<str>, arg: u32, items: u8) -> u32 {
        let at = match self.launches.iter().position(|e| e.arg == arg && same_key(&e.kernel, kernel)) {
            Some(at) => at,
            None => {
                self.launches.push(EpochLaunches { kernel: kernel.clone(), arg, launches: 0, items });
                self.launches.len() - 1
            }
        };
        let n = &mut self.launches[at].launches;
        *n = n.saturating_add(1);
        *n
    }

    /// This epoch's launches, counted from zero again.
    pub fn take_epoch(&mut self) -> Vec<EpochLaunches> {
        std::mem::take(&mut self.launches)
    }

    /// The epoch ended (the host accessed the buffer, or the program released it): how long it
    /// lasted at each kernel argument is kept.
    fn epoch_ended(&mut self) {
        for e in self.take_epoch() {
            lengths::record(&e.kernel, e.arg, e.launches, e.items);
        }
    }

    /// The buffer came back to its host layout (for the host, or a kernel not rewritten: a
    /// rewritten kernel's launch that brings it back says so first, `sent_back`).
    pub fn came_back(&mut self) {
        if let Some(by) = self.converted_by.take() {
            habits::saw(&by, Outcome::Back);
        }
    }

    /// A launch of the rewritten kernel `by_kernel` brings the buffer back from its device layout
    /// before the host sees it: converting it again would only start another round trip, and
    /// where another kernel converted it, that kernel's argument learns that it was undone.
    pub fn sent_back(&mut self, by_kernel: Option<&Arc<str>>) {
        self.reuse.sent_back = true;
        if let Some(by) = self.converted_by.take() {
            habits::saw(&by, sent_back_by(&by, by_kernel));
        }
    }

    /// The application released the buffer (`converted`: while it was in a device layout).
    pub fn released(&mut self, converted: bool) {
        if let Some(by) = self.converted_by.take().filter(|_| converted) {
            habits::saw(&by, Outcome::Dropped);
        }
        self.epoch_ended();
    }
}

/// What a launch of `kernel` bringing back a buffer that `by` converted makes of it: undone when
/// another kernel's launch (or one of a kernel without times key) does it.
fn sent_back_by(by: &ConvertedBy, kernel: Option<&Arc<str>>) -> Outcome {
    match kernel {
        Some(k) if same_key(k, &by.kernel) => Outcome::Back,
        _ => Outcome::Undone,
    }
}

/// Whether two times keys are one kernel's: its launches pass the same key, so its pointer
/// tells before its text.
fn same_key(a: &Arc<str>, b: &Arc<str>) -> bool {
    Arc::ptr_eq(a, b) || a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_another_kernel_brings_back_is_undone() {
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        let by = ConvertedBy { kernel: a.clone(), arg: 0 };
        assert_eq!(sent_back_by(&by, Some(&a)), Outcome::Back, "its own launch found ASTA slower");
        assert_eq!(sent_back_by(&by, Some(&"a".into())), Outcome::Back, "the same key");
        assert_eq!(sent_back_by(&by, Some(&b)), Outcome::Undone);
        assert_eq!(sent_back_by(&by, None), Outcome::Undone);
        let mut c = BufferCost::default();
        c.sent_back(Some(&b));
        assert!(c.reuse.sent_back && c.converted_by.is_none());
    }

    #[test]
    fn launches_are_counted_per_kernel_and_argument_until_the_epoch_ends() {
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        let mut c = BufferCost::default();
        assert_eq!(c.launched(&a, 0, 15), 1);
        assert_eq!(c.launched(&a, 0, 16), 2, "the same epoch at another size");
        assert_eq!(c.launched(&b, 0, 15), 1, "another kernel");
        assert_eq!(c.launched(&a, 1, 15), 1, "another argument");
        assert_eq!(c.launched(&a, 0, 15), 3);
        let e = |kernel: &Arc<str>, arg, launches| EpochLaunches { kernel: kernel.clone(), arg, launches, items: 15 };
        assert_eq!(c.take_epoch(), vec![e(&a, 0, 3), e(&b, 0, 1), e(&a, 1, 1)], "sized by their first launch");
        assert_eq!(c.launched(&a, 0, 15), 1, "a new epoch counts from the start");
        assert!(c.take_epoch().len() == 1 && c.take_epoch().is_empty());
    }
}
