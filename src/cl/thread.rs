//! What clayout keeps of the application's calls on each thread, in one thread-local block
//! that a call looks up once: how deep clayout's preloaded exports are nested on the thread
//! (`cl::layer`), and its count of each entry point's calls (`stats`).
//!
//! Every exported entry point counts its call. An atomic add on one shared counter costs each
//! call a few nanoseconds (a locked instruction, which drains the store buffer), paid in every
//! call of a loop the host sets the pace of, where issue 17 allows clayout 2 % of the loop:
//! some 35 ns a call. Here a thread counts in a slot of its own with a load and a store.
//!
//! A slot outlives its thread: a thread that ends lets go of it, and the next thread that
//! takes it counts on from there, so that no count is ever moved, freed or added twice, and a
//! sum never needs a lock (a process forked while another thread held one would wait for it
//! forever).

use super::FN_COUNT;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::*};

/// Slots, at most: threads beyond them count in `SHARED`.
const SLOTS: usize = 256;

struct Slot {
    /// Held by a live thread, the one writer of `counts`.
    held: AtomicBool,
    counts: [AtomicU64; FN_COUNT],
}

static SLOT: [AtomicPtr<Slot>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

/// Slots ever made: the sums read no further.
static MADE: AtomicUsize = AtomicUsize::new(0);

/// Where threads without a slot of their own count (all were held when the thread first
/// counted, or the thread is ending), with atomic adds: never let go of, never a `SLOT`.
static SHARED: Slot = Slot { held: AtomicBool::new(true), counts: [const { AtomicU64::new(0) }; FN_COUNT] };

/// Whether any thread has counted a call.
static ANY: AtomicBool = AtomicBool::new(false);

/// A thread's block.
pub struct ThisThread {
    /// Preloaded exports intercepting a call on this thread right now.
    depth: Cell<u32>,
    /// The thread's slot: null until its first call.
    slot: Cell<*const Slot>,
}

thread_local! {
    /// No destructor, so that reading it costs no check of the thread's state, and it lasts as
    /// long as its thread.
    static THIS: ThisThread = const { ThisThread { depth: Cell::new(0), slot: Cell::new(std::ptr::null()) } };
    /// Lets go of the slot when the thread ends.
    static HOLDER: Holder = const { Holder(Cell::new(std::ptr::null())) };
}

struct Holder(Cell<*const Slot>);

impl Drop for Holder {
    fn drop(&mut self) {
        let slot = self.0.get();
        if !slot.is_null() {
            // Calls made later in the thread's ending count in SHARED.
            THIS.with(|t| t.slot.set(&SHARED));
            // SAFETY: slots are never freed.
            unsafe { (*slot).held.store(false, Release) };
        }
    }
}

/// This thread's block.
#[inline]
pub fn this() -> &'static ThisThread {
    // SAFETY: the block has no destructor, so it lives as long as the thread, and a reference
    // to it cannot leave the thread (`ThisThread` is not `Sync`).
    THIS.with(|t| unsafe { &*(t as *const ThisThread) })
}

impl ThisThread {
    pub fn depth(&self) -> u32 {
        self.depth.get()
    }

    pub fn set_depth(&self, d: u32) {
        self.depth.set(d)
    }

    /// Counts one call of entry point `id` on this thread.
    #[inline]
    pub fn count(&self, id: usize) {
        let mine = self.slot.get();
        let slot = if mine.is_null() { take(self) } else { mine };
        if std::ptr::eq(slot, &SHARED) {
            SHARED.counts[id].fetch_add(1, Relaxed);
        } else {
            // SAFETY: slots are never freed; this thread is the slot's one writer while it
            // holds it.
            let c = unsafe { &(*slot).counts[id] };
            c.store(c.load(Relaxed) + 1, Relaxed);
        }
    }
}

/// This thread's slot, taken now; `SHARED` where none is free or the thread is ending (its
/// holder could not let go of a slot), kept as the thread's so that it does not look again.
#[cold]
#[inline(never)]
fn take(this: &ThisThread) -> *const Slot {
    ANY.store(true, Relaxed);
    let slot = HOLDER
        .try_with(|h| {
            let slot = free_slot();
            if !slot.is_null() {
                h.0.set(slot);
            }
            slot
        })
        .unwrap_or(std::ptr::null());
    let slot = if slot.is_null() { &SHARED as *const Slot } else { slot };
    this.slot.set(slot);
    slot
}

/// A slot no thread holds, now held; null where all are.
fn free_slot() -> *const Slot {
    for at in SLOT.iter() {
        let s = at.load(Acquire);
        if s.is_null() {
            let new = Box::into_raw(Box::new(Slot {
                held: AtomicBool::new(true),
                counts: [const { AtomicU64::new(0) }; FN_COUNT],
            }));
            match at.compare_exchange(std::ptr::null_mut(), new, AcqRel, Acquire) {
                Ok(_) => {
                    MADE.fetch_add(1, Relaxed);
                    return new;
                }
                // SAFETY: made above and shared with no one.
                Err(_) => drop(unsafe { Box::from_raw(new) }),
            }
            continue;
        }
        // SAFETY: slots are never freed. Acquire: the counts of the thread that let it go.
        if unsafe { (*s).held.compare_exchange(false, true, Acquire, Relaxed) }.is_ok() {
            return s;
        }
    }
    std::ptr::null()
}

/// The calls of entry point `id` so far, on every thread.
pub fn calls(id: usize) -> u64 {
    if id >= FN_COUNT {
        return 0;
    }
    let made = MADE.load(Relaxed).min(SLOTS);
    let mut n = SHARED.counts[id].load(Relaxed);
    for at in SLOT.iter().take(made) {
        let s = at.load(Acquire);
        if !s.is_null() {
            // SAFETY: slots are never freed.
            n += unsafe { (*s).counts[id].load(Relaxed) };
        }
    }
    n
}

/// Whether any call was counted.
pub fn any() -> bool {
    ANY.load(Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_that_end_leave_their_counts_and_their_slot() {
        let id = FN_COUNT - 1;
        let before = calls(id);
        let threads: Vec<_> = (0..8)
            .map(|_| {
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        this().count(id);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(calls(id), before + 8000);
        assert!(any());
        // Threads that came and went took at most the slots of those alive at once.
        let made = MADE.load(Relaxed);
        for _ in 0..4 {
            std::thread::spawn(move || this().count(id)).join().unwrap();
        }
        assert_eq!(calls(id), before + 8004);
        assert!(MADE.load(Relaxed) <= made + 1, "a slot let go of is taken again");
    }
}
