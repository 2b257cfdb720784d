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
    /// Launches of rewritten kernels on the buffer.
    pub launches: u32,
}

#[derive(Clone, Debug, Default)]
pub struct BufferCost {
    pub reuse: Reuse,
    /// The rewritten kernel's argument that converted the buffer to its device layout, until it
    /// comes back or is released.
    pub converted_by: Option<ConvertedBy>,
    /// The rewritten kernels' arguments that launched on the buffer in this epoch: each learns
    /// how long the epoch lasted when it ends (`habits::epoch_ended`).
    pub users: Vec<ConvertedBy>,
}

/// Arguments an epoch's length is told to; past that, the rest learn nothing from it.
const USERS_KEPT: usize = 8;

impl BufferCost {
    /// The host sees the buffer: the count of launches on it starts over.
    pub fn host_access(&mut self) {
        self.end_epoch();
    }

    /// A launch of a rewritten kernel on the buffer, at its argument `by` (None: its times have
    /// no key yet).
    pub fn launched(&mut self, by: Option<ConvertedBy>) {
        self.reuse.launches = self.reuse.launches.saturating_add(1);
        if let Some(by) = by {
            if !self.users.contains(&by) && self.users.len() < USERS_KEPT {
                self.users.push(by);
            }
        }
    }

    /// The epoch ends (the host accessed the buffer, the application released it, or the
    /// process exits): each argument that launched on it learns its length.
    pub fn end_epoch(&mut self) {
        for by in self.users.drain(..) {
            habits::epoch_ended(&by, self.reuse.launches);
        }
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
