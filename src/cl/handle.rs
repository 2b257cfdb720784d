//! One reference to an OpenCL object, released when dropped, whatever path leaves the code that
//! holds it: clayout's own kernels, buffers, queues and programs, the events of its commands,
//! and references it takes on the application's objects while it needs them.
//!
//! The objects clayout creates in an application's context (buffers, queues, programs) are
//! counted per context, and the events of its commands per queue, while they live
//! ([`live_in`]): when the application lets its context go, that count says exactly whether
//! clayout still holds it, whatever the application itself leaks, and reference counts can be
//! answered without clayout's share.

use super::real::api;
use once_cell::sync::Lazy;
use opencl_sys::*;
use parking_lot::Mutex;
use std::collections::HashMap;

static LIVE: Lazy<Mutex<HandleMap<usize>>> = Lazy::new(Default::default);

/// A map keyed by OpenCL handles (the driver's pointers, as `usize`).
pub type HandleMap<V> = HashMap<usize, V, std::hash::BuildHasherDefault<HandleHasher>>;

/// The hash of a handle in one multiply. The maps keyed by handles are looked up several times
/// in every launch (the kernel, its queue, each buffer argument, the events counted per queue),
/// where the standard SipHash, made to withstand keys an adversary picks, took 6 % of
/// clayout's own time (`perf`, 15,000 launches of particles on PoCL under `always`; none left
/// with this one); a handle is the driver's pointer, which nobody picks. The high half is
/// folded into the low one, which hashbrown indexes buckets with, because a pointer's low bits
/// are its alignment.
#[derive(Clone, Copy, Debug, Default)]
pub struct HandleHasher(u64);

impl std::hash::Hasher for HandleHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        let h = (self.0.rotate_left(5) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }

    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

/// How many objects clayout created in `owner` (a context, or a queue for events) are alive.
pub fn live_in<T>(owner: *mut T) -> usize {
    LIVE.lock().get(&(owner as usize)).copied().unwrap_or(0)
}

fn count(context: usize, up: bool) {
    let mut live = LIVE.lock();
    let n = live.entry(context).or_insert(0);
    if up {
        *n += 1;
    } else {
        *n = n.saturating_sub(1);
        if *n == 0 {
            live.remove(&context);
        }
    }
}

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident, $raw:ty, $retain:ident, $release:ident) => {
        $(#[$doc])*
        #[derive(Debug, PartialEq, Eq)]
        pub struct $name($raw, usize);

        // SAFETY: OpenCL objects may be used, retained and released from any thread; the one
        // call that is not thread-safe on a shared object (clSetKernelArg on one kernel) is
        // serialized by the code that owns the kernel.
        unsafe impl Send for $name {}
        unsafe impl Sync for $name {}

        impl $name {
            /// Takes over a reference the caller holds (an object just created, or an event
            /// just returned by an enqueue). None for a null handle.
            pub fn from_raw(raw: $raw) -> Option<Self> {
                (!raw.is_null()).then(|| $name(raw, 0))
            }

            /// [`Self::from_raw`] for an object clayout just created in `owner` (a context;
            /// for an event, its queue): counted there while it lives.
            pub fn created_in<T>(raw: $raw, owner: *mut T) -> Option<Self> {
                let h = Self::from_raw(raw)?;
                count(owner as usize, true);
                Some($name(h.into_raw(), owner as usize))
            }

            /// A new reference to an object someone else holds (the application, the registry).
            /// None when the handle is null or the real library refuses the retain.
            pub fn retain(raw: $raw) -> Option<Self> {
                if raw.is_null() {
                    return None;
                }
                // SAFETY: the caller passes a live object (cl's contract); a failed retain is
                // answered, not relied upon.
                (unsafe { api().$retain(raw) } == CL_SUCCESS).then(|| $name(raw, 0))
            }

            /// [`Self::retain`], counted in `owner` (an event's queue) while held.
            pub fn retained_in<T>(raw: $raw, owner: *mut T) -> Option<Self> {
                let h = Self::retain(raw)?;
                count(owner as usize, true);
                Some($name(h.into_raw(), owner as usize))
            }

            pub fn raw(&self) -> $raw {
                self.0
            }

            /// Hands the reference to the caller, who must release it.
            pub fn into_raw(self) -> $raw {
                let raw = self.0;
                if self.1 != 0 {
                    count(self.1, false);
                }
                std::mem::forget(self);
                raw
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: the handle holds exactly one reference, taken when it was made.
                unsafe { api().$release(self.0) };
                if self.1 != 0 {
                    count(self.1, false);
                }
            }
        }
    };
}

handle!(
    /// An event of a command clayout enqueued, or a reference it took on the application's.
    Event, cl_event, clRetainEvent, clReleaseEvent
);
handle!(
    /// A kernel of one of clayout's programs (conversion kernels, rewritten copies, probes).
    Kernel, cl_kernel, clRetainKernel, clReleaseKernel
);
handle!(
    /// A buffer clayout created for itself (scratch, probe results).
    Mem, cl_mem, clRetainMemObject, clReleaseMemObject
);
handle!(
    /// A queue clayout created for itself, or a reference it holds on an application's queue.
    Queue, cl_command_queue, clRetainCommandQueue, clReleaseCommandQueue
);
handle!(
    /// A program clayout built for itself.
    Program, cl_program, clRetainProgram, clReleaseProgram
);
handle!(
    /// A reference on an application's context, held while clayout's objects of it live.
    Context, cl_context, clRetainContext, clReleaseContext
);

#[cfg(test)]
mod hash_tests {
    use super::*;

    #[test]
    fn aligned_handles_spread_over_the_low_bits() {
        use std::hash::BuildHasher;
        let build = std::hash::BuildHasherDefault::<HandleHasher>::default();
        // 4096 handles 64 bytes apart: their hashes' low 8 bits (the buckets of a table of 256)
        // take most of the 256 values, as a table's index needs.
        let buckets: std::collections::BTreeSet<u64> =
            (0..4096usize).map(|i| build.hash_one(0x5555_0000_0000usize + i * 64) & 0xff).collect();
        assert!(buckets.len() > 240, "{}", buckets.len());
        assert_ne!(build.hash_one(1usize), build.hash_one(2usize));
    }
}
