//! What a launch through the express lane (`lane`) must find unchanged, and the lock that keeps
//! it unchanged while the lane enqueues.
//!
//! The lane repeats a launch without locking its buffers. It may do so only while nothing the
//! launch path checked has changed since: the buffers' states (each has a [`Gen`], counted up
//! by whatever locks the state to change it), and the few things that are not a buffer's (a
//! queue's open stretch closing, a kernel's kept decision dropped, a build ending, a kernel's
//! record going), which count up the world's generation. Either count is taken with the
//! world's lock held for writing: a lane holds it for reading from its check until its enqueue
//! has returned, so that a change waits for the launches that checked before it, and every
//! launch after it sees it.

use parking_lot::{RwLock, RwLockReadGuard};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The world's generation, under the lock lanes read it with.
static WORLD: RwLock<u64> = RwLock::new(0);

/// A buffer's generation: changed with every lock of its state that may change it.
#[derive(Debug, Default)]
pub struct Gen(AtomicU64);

impl Gen {
    pub fn now(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// The buffer's state is locked for a change: lanes that checked it before have enqueued,
    /// the ones after see it changed. Only a buffer that an open lane holds (a lane keeps its
    /// own reference, taken under the state's lock) needs the world's lock: a command on
    /// another buffer does not wait for the lanes in flight.
    pub fn changed(self: &Arc<Self>) {
        let _w = (Arc::strong_count(self) > 1).then(|| WORLD.write());
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Something a lane checks that is not a buffer's state changed (called after the change is
/// visible to the launch path's own checks, before anything enqueued that a launch must not
/// pass).
pub fn changed() {
    *WORLD.write() += 1;
}

/// Kernel records created or gone so far: a lane read without the world's lock (an argument
/// set again, `lane::set_again`) checks that its kernel object's handle still names its record.
static KERNEL_RECORDS: AtomicU64 = AtomicU64::new(0);

/// A kernel's record was made, or went (with the world changed too).
pub fn kernel_records_changed() {
    KERNEL_RECORDS.fetch_add(1, Ordering::Release);
}

pub fn kernel_records() -> u64 {
    KERNEL_RECORDS.load(Ordering::Acquire)
}

/// The world as a lane checks it, held until its enqueue has returned.
pub fn read() -> RwLockReadGuard<'static, u64> {
    WORLD.read()
}

/// The world's generation now, for a lane about to be opened (read before the launch path's
/// checks, so that a change during them leaves the lane closed).
pub fn now() -> u64 {
    *WORLD.read()
}
