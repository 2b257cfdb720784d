//! The size class of a launch: what a kernel's measured times are kept under, so that a time
//! measured at one problem size is never taken for another.
//!
//! Times are kept per structure, but a time per structure is not the same at every size: on a
//! GPU the buffers fit the caches at one size and not at four times that, and a small launch
//! leaves part of the device idle (on the H100, a kernel whose times were measured at 64,000
//! structures ran in ASTA at 262,144, where it is 15 % slower than as written). The class is the power-of-two bucket of two figures
//! the launch already has, so it costs two `ilog2` and no query:
//!
//! - the work-items of the launch (the product of its global sizes): how much of the device it
//!   occupies, and how much of the buffers it covers (a launch over part of a buffer costs less
//!   per structure of the whole);
//! - the bytes of the buffers it converts (its annotated buffers' structure counts times their
//!   structure sizes, together): the footprint the caches see, one figure however many buffers.
//!
//! Buckets of a factor of two are narrow enough that a time measured in one predicts the others
//! in it (caches and occupancy change over factors, not percents) and wide enough that a program
//! meets few of them. A size just across a power of two from one measured is measured again:
//! that costs the few timed launches of a first run, never a wrong decision.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SizeClass {
    /// log2 of the launch's work-items, rounded down.
    pub items: u8,
    /// log2 of the bytes of the buffers it converts, rounded down.
    pub bytes: u8,
}

/// log2 rounded down, 0 for 0 and 1.
fn bucket(x: u64) -> u8 {
    x.checked_ilog2().unwrap_or(0) as u8
}

impl SizeClass {
    /// The class of a launch of `work_items` work-items over converted buffers of `bytes` bytes.
    pub fn of(work_items: u64, bytes: u64) -> SizeClass {
        SizeClass { items: bucket(work_items), bytes: bucket(bytes) }
    }
}

impl fmt::Display for SizeClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "2^{} work-items, 2^{} bytes", self.items, self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_class_per_power_of_two() {
        // The case: 64,000 particles of 32 bytes, then 262,144.
        let small = SizeClass::of(64_000, 64_000 * 32);
        let large = SizeClass::of(262_144, 262_144 * 32);
        assert_ne!(small, large);
        assert_eq!(small, SizeClass { items: 15, bytes: 20 });
        assert_eq!(large, SizeClass { items: 18, bytes: 23 });
        // Sizes within a factor of two below the same power share a class.
        assert_eq!(SizeClass::of(40_000, 40_000 * 32), small);
        assert_eq!(SizeClass::of(65_535, 65_535 * 32), small);
        assert_ne!(SizeClass::of(65_536, 65_536 * 32), small);
        // The same buffer covered by a quarter of the work-items is another class.
        assert_ne!(SizeClass::of(16_000, 64_000 * 32), small);
        assert_eq!(SizeClass::of(0, 0), SizeClass::of(1, 1));
        assert_eq!(SizeClass::of(u64::MAX, u64::MAX), SizeClass { items: 63, bytes: 63 });
        assert_eq!(large.to_string(), "2^18 work-items, 2^23 bytes");
    }
}
