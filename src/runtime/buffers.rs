//! Clayout's record of every application buffer: the application's facts (from the registry),
//! the parent's record for a sub-buffer, and the layout state, keyed by the buffer's handle.
//! A command looks each of its buffers up here once and carries the record from then on.

use super::cost::tally::{Share, Tally};
use super::cost::BufferCost;
use super::order::Users;
use super::state::Current;
use super::world::Gen;
use crate::cl::Event;
use crate::registry::{BufferInfo, Handle, Table};
use once_cell::sync::Lazy;
use parking_lot::{ArcMutexGuard, Mutex, MutexGuard, RawMutex};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Everything clayout keeps about one buffer's layout (`state` has the transitions).
#[derive(Debug, Default)]
pub struct BufferState {
    pub current: Current,
    /// Why this buffer must stay in host layout, once something made that so.
    pub pinned: Option<String>,
    /// The last conversion enqueued on this buffer, so that a conversion or command on another
    /// queue is ordered after it.
    pub last_event: Option<Event>,
    /// Maps not yet unmapped (counted from before each map's enqueue).
    pub maps: u32,
    /// Whether the bytes are defined: false for a buffer created without host data until a
    /// command first touches it. Undefined bytes take any layout without a conversion.
    pub defined: bool,
    /// Commands that used the buffer and may not have completed (`order`).
    pub users: Users,
    /// Conversions enqueued so far; `before` is the layout before the latest one, which a
    /// failure of that conversion (through a failed command it waited for) leaves in place.
    pub conversions: u64,
    pub before: Current,
    /// What the cost model keeps about the buffer: read through [`BufferState::cost`], which
    /// first takes what the express lane counted (`shares`).
    cost: BufferCost,
    /// The tallies of the lanes that count their launches in this buffer (`cost::tally`).
    shares: smallvec::SmallVec<[Share; 2]>,
}

#[derive(Debug)]
pub struct Buffer {
    pub handle: Handle,
    pub facts: Arc<BufferInfo>,
    /// A sub-buffer's parent, whose bytes it shows; the record lives as long as its children,
    /// so that a parent the application released in a device layout still comes back before a
    /// child's bytes are used.
    pub parent: Option<Arc<Buffer>>,
    /// In an `Arc` so that a command can hold it locked from its conversions until its own
    /// enqueue returns (`access`), without holding the record. Locked through [`Buffer::lock`],
    /// which tells the express lane (`gen`).
    state: Arc<Mutex<BufferState>>,
    /// Counted up by every lock of `state` that may change it, so that a launch of the express
    /// lane (`lane`) that checked the state before sees it changed.
    pub gen: Arc<Gen>,
    /// The number of a conversion that failed on the device (0: none), set by its completion
    /// callback, which must not take the state's lock; applied at the next lock ([`settle`]).
    pub failed: AtomicU64,
}

impl BufferState {
    /// The cost model's record, with every launch the express lane counted in it.
    pub fn cost(&mut self) -> &mut BufferCost {
        if !self.shares.is_empty() {
            let cost = &mut self.cost;
            self.shares.retain(|s| s.take(cost));
        }
        &mut self.cost
    }

    /// Counts the launches of `tally` at argument `arg` from now on, unless it does already.
    pub fn share(&mut self, tally: &Arc<Tally>, arg: u32) {
        if !self.shares.iter().any(|s| s.of(tally)) {
            self.shares.push(tally.share(arg));
        }
    }

    /// Takes the news of a failed conversion into the state: if the latest conversion failed,
    /// it never ran, and the bytes are in the layout they had before it.
    pub fn settle(&mut self, buffer: &Buffer) {
        let failed = buffer.failed.load(Ordering::Acquire);
        if failed != 0 && failed == self.conversions {
            crate::log::warn(&format!(
                "buffer {:#x}: a conversion failed on the device (a command it waited for failed); the buffer stays in {:?}",
                buffer.handle, self.before
            ));
            self.current = self.before;
            self.last_event = None;
            buffer.failed.store(0, Ordering::Release);
        }
    }
}

impl Buffer {
    /// The state, locked for a command that may change it.
    pub fn lock(&self) -> MutexGuard<'_, BufferState> {
        let st = self.state.lock();
        // After the lock: a launch path that checked the state before saw it unchanged, and its
        // lane sees the change.
        self.gen.changed();
        st
    }

    /// [`Buffer::lock`], held without the record (`access`).
    pub fn lock_arc(&self) -> ArcMutexGuard<RawMutex, BufferState> {
        let st = self.state.lock_arc();
        self.gen.changed();
        st
    }

    /// The state, locked by a launch that repeats the last (which changes nothing a lane checks)
    /// or to read it.
    pub fn lock_unchanged(&self) -> MutexGuard<'_, BufferState> {
        self.state.lock()
    }

    /// The buffer whose bytes this one shows: itself, or a sub-buffer's parent.
    pub fn bytes_owner(self: &Arc<Self>) -> &Arc<Buffer> {
        self.parent.as_ref().unwrap_or(self)
    }

    pub fn mem(&self) -> opencl_sys::cl_mem {
        self.handle as opencl_sys::cl_mem
    }
}

static BUFFERS: Lazy<Table<Buffer>> = Lazy::new(Table::default);

/// The record of a buffer, if it is one the application created and has not released.
pub fn get(h: Handle) -> Option<Arc<Buffer>> {
    BUFFERS.get(h)
}

/// A buffer the application created (a sub-buffer's parent must be known by then).
pub fn created(h: Handle, facts: Arc<BufferInfo>) {
    let parent = facts.parent.and_then(|(p, _, _)| get(p));
    // Created with host data (copied or used), or a window onto a parent: defined bytes.
    let with_data = facts.flags & (opencl_sys::CL_MEM_COPY_HOST_PTR | opencl_sys::CL_MEM_USE_HOST_PTR) != 0;
    let state = BufferState { defined: with_data || parent.is_some(), ..Default::default() };
    let state = Arc::new(Mutex::new(state));
    // A handle the driver reuses: lanes that used the old buffer see it gone.
    if let Some(old) = BUFFERS.remove(h) {
        drop(old.lock());
    }
    BUFFERS.insert(h, Buffer { handle: h, facts, parent, state, gen: Default::default(), failed: AtomicU64::new(0) });
}

/// The application's last reference to a buffer is gone. Its bytes are forgotten unless a
/// sub-buffer still shows them (then the record lives on in the children, state and all).
pub fn released(h: Handle) {
    crate::registry::mem_changed();
    let Some(b) = BUFFERS.remove(h) else { return };
    // Whoever still holds the record: no lane launches with this handle as this buffer again
    // (counted under the state's lock, where lanes take their reference to the count).
    drop(b.lock());
    if Arc::strong_count(&b) > 1 && b.parent.is_none() {
        return;
    }
    let mut st = b.lock();
    let converted = matches!(st.current, Current::Device(_));
    st.cost().released(converted);
    st.current = Current::Host;
    st.last_event = None;
    st.users.clear();
}

/// Drops the references every buffer's record keeps on completed commands.
pub fn forget_finished() {
    for (_, b) in BUFFERS.snapshot() {
        // Forgets only what has completed, which no lane relies on (one relies on a stretch
        // that is still open, and on no conversion pending).
        let mut st = b.lock_unchanged();
        st.users.forget_finished();
        if st.last_event.as_ref().is_some_and(|e| crate::cl::info::event_status(e.raw()).is_none_or(|s| s <= 0)) {
            st.last_event = None;
        }
    }
}

/// How many references the buffers' records hold on `event`.
pub fn holds(event: opencl_sys::cl_event) -> usize {
    BUFFERS
        .snapshot()
        .iter()
        .map(|(_, b)| {
            let st = b.lock_unchanged();
            st.users.holds(event) + st.last_event.as_ref().is_some_and(|e| e.raw() == event) as usize
        })
        .sum()
}

/// The buffers of `context` whose bytes are in a device layout now.
pub fn converted_in(context: Handle) -> Vec<Handle> {
    BUFFERS
        .snapshot()
        .iter()
        .filter(|(_, b)| b.facts.context == context && matches!(b.lock_unchanged().current, Current::Device(_)))
        .map(|(h, _)| *h)
        .collect()
}

/// Every buffer's bytes count as defined (commands before tracking began may have written any).
pub fn all_defined() {
    for (_, b) in BUFFERS.snapshot() {
        b.lock().defined = true;
    }
}
