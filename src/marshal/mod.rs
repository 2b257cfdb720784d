//! In-place layout conversions on the device: AoS <-> ASTA and SoA <-> ASTA (and, in two
//! steps through ASTA, AoS <-> SoA and ASTA(T1) <-> ASTA(T2)).
//!
//! # Algorithms (kernels/marshal.cl)
//! - AoS <-> ASTA: every full tile is an independent T x S <-> S x T transposition of T*S
//!   contiguous words ("010" transposition). Fast path `bs_*`: several whole tiles per
//!   work-group staged through padded local memory, contiguous vector reads and writes.
//!   Tiles too big for local memory: PTTWAC 010 (`p010_*`, one work-group per tile, done
//!   bits in local memory with spreading and padding).
//! - SoA <-> ASTA: with `M = Q*T + r`, the first `Q*T` words of every SoA row are `Q`
//!   super-elements of `T` words, so for `r = 0` SoA is the `S x Q` array of super-elements
//!   and ASTA its `Q x S` transpose: a "100" transposition by PTTWAC (`p100_wi`: one
//!   work-item per super-element, or the warp-centric `p100_wg`) with one done bit per
//!   super-element in a scratch buffer.
//! - The partial tile (`r = M mod T > 0`) exactly, with a scratch of `r*S <= (T-1)*S` words:
//!   * AoS <-> ASTA: the last `r*S` words are AoS `r x S` in one layout and the mini SoA
//!     `S x r` in the other; copy them to the scratch and copy back transposed.
//!   * SoA -> ASTA: (1) gather the `S` row tails (`r` words each, at `s*M + Q*T`) to the
//!     scratch: that is already the ASTA tail order `s*r + j`. (2) Compact: for s = 1..S-1 in
//!     increasing order, move row s's `Q*T` body from `s*M` down to `s*Q*T`. The move is a
//!     rotation of the range `[s*Q*T, s*M + Q*T)` (holes, whose words are saved or already
//!     moved, followed by the body): reverse the whole range, then reverse its first `Q*T`
//!     words. Each reversal is perfectly parallel (one work-item swaps one pair, pairs are
//!     disjoint), and the range of row s touches only words of rows < s that were already
//!     moved out (they now end at `s*Q*T`), its own tail hole (saved), and its own body;
//!     rows > s start at `(s+1)*M >= s*M + Q*T`. Afterwards the buffer starts with the `S x Q`
//!     super-element array. (3) PTTWAC 100 on it. (4) Copy the scratch to `[Q*T*S, M*S)`.
//!   * ASTA -> SoA: the exact inverse: save the tail, PTTWAC 100 `Q x S -> S x Q`, expand
//!     rows s = S-1..1 in decreasing order (reverse `[s*Q*T, s*M+Q*T)`, then its last `Q*T`
//!     words; rows < s are still packed below `s*Q*T`, rows > s already moved above
//!     `(s+1)*M`), scatter the saved tails to `s*M + Q*T`.
//!
//!   The compaction/expansion costs O(S*M) word moves in 2(S-1) launches; it only runs when
//!   `r > 0`. The fast path (`r = 0`) is just the PTTWAC 100.
//!
//! # Memory
//! Per context, one scratch pair (cached, grown on demand, freed by [`release_context`]):
//! done flags of one bit per moved super-element (`ceil(Q*S/32)` 32-bit words, only for
//! SoA <-> ASTA) and the tail words (`r*S*w` bytes, only when `r > 0`). Conversions in one
//! context are serialized on this scratch through events. [`Converted::scratch_bytes`] is
//! what a conversion needed. No buffer of the data's size is ever allocated.
//!
//! # Tuning
//! Work-group shapes come from device queries; the few free choices are `plan::Tuning`, whose
//! defaults are the only tuning of the default build. The benchmark's build (feature `bench`)
//! exports `Tuning`, `set_tuning` and `describe`: clayout reads no environment variable for them.
//!
//! # Files, from the device up
//! - `device`: the device facts a plan needs (local memory, work-group limits, coalescing
//!   width) and [`default_tile`].
//! - `plan`: pure. The steps of a conversion, each step's kernel parameters and its commands
//!   (which kernels, with which arguments, over how many work-items), the scratch it needs.
//! - `defines`: the `-D` table of kernels/marshal.cl; the build options come from it.
//! - `programs`: the programs per context, device, tile and options; a step's kernels.
//! - `chain`: one conversion's commands on the queue, in order, with the context's scratch.
//! - `enqueue`: [`prepare`], [`enqueue_conversion`], [`release_context`].
//! - `bench` (feature `bench`): the benchmark's tuning and `describe`.

use crate::cl::Event;
use opencl_sys::cl_int;
use std::fmt;

#[cfg(feature = "bench")]
mod bench;
mod chain;
mod defines;
mod device;
mod enqueue;
mod plan;
mod programs;

#[cfg(feature = "bench")]
pub use bench::{describe, set_tuning, tuning};
pub use device::{compiler_fuses_across_statements, default_tile};
pub use enqueue::{enqueue_conversion, prepare, release_context};
#[cfg(feature = "bench")]
pub use plan::{P100Kernel, Tuning};
pub use programs::warm as warm_kernels;

/// The result of an enqueued conversion.
#[derive(Debug)]
pub struct Converted {
    /// The conversion's commands in order; the last completes when the conversion is done.
    /// Keep them all until then (see `chain`).
    pub events: Vec<Event>,
    /// Bytes read plus bytes written by all the kernels of the conversion.
    pub bytes_moved: u64,
    /// Extra device memory the conversion needed (done flags + tail words), in bytes.
    pub scratch_bytes: u64,
}

impl Converted {
    /// The event of the conversion's last command: it completes when the conversion does.
    pub fn done(&self) -> &Event {
        self.events.last().expect("a conversion enqueues at least one command")
    }
}

#[derive(Debug, Clone)]
pub enum MarshalError {
    Build(String),
    Resources(String),
    /// A call failed with this code; the string says which.
    Enqueue(cl_int, String),
    Unsupported(String),
    /// A later step of a multi-step conversion failed after earlier steps were enqueued: the
    /// buffer's bytes are in neither layout.
    Partial(Box<MarshalError>),
}

impl MarshalError {
    /// Whether the buffer was left untouched (nothing was enqueued).
    pub fn untouched(&self) -> bool {
        !matches!(self, MarshalError::Partial(_))
    }
}

impl fmt::Display for MarshalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MarshalError::Build(l) => write!(f, "building the marshaling kernels failed: {l}"),
            MarshalError::Resources(m) => write!(f, "not enough device resources: {m}"),
            MarshalError::Enqueue(e, m) => write!(f, "enqueue failed ({e}): {m}"),
            MarshalError::Unsupported(m) => write!(f, "unsupported conversion: {m}"),
            MarshalError::Partial(e) => write!(f, "{e}, after part of the conversion was enqueued"),
        }
    }
}

impl std::error::Error for MarshalError {}
#[cfg(test)]
mod tests;
