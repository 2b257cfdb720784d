//! What the cost model keeps in each buffer's record: what the launches on it would have cost
//! since the host last accessed it (an epoch), and which kernel argument converted it (so that
//! what becomes of it is learnt, `habits`).

use super::habits::{self, ConvertedBy};

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
}

impl BufferCost {
    /// The host sees the buffer: the count of launches on it starts over.
    pub fn host_access(&mut self) {
        self.reuse = Reuse::default();
    }

    /// The buffer came back to its host layout.
    pub fn came_back(&mut self) {
        if let Some(by) = self.converted_by.take() {
            habits::saw(&by, true);
        }
    }

    /// The application released the buffer while it was in a device layout.
    pub fn released_converted(&mut self) {
        if let Some(by) = self.converted_by.take() {
            habits::saw(&by, false);
        }
    }
}
