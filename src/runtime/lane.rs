//! The express lane: a launch that repeats its kernel object's last one on this thread, with
//! nothing changed since, enqueued with a handful of checks and no lock but the world's.
//!
//! A launch that repeats the last (`transparent::repeat`) still locks each of its buffers,
//! checks its state, holds its queue's stretch open and counts itself in each buffer: some
//! 1,000 instructions on PoCL, 0.3-0.5 us of the H100's host, 6-11 % of a 5 us launch call.
//! Once it has repeated, each thread keeps what it checked (the buffers' generations, the
//! world's, the kernel's argument count) and what it enqueued. The next launch of that kernel
//! object on that thread, on the same queue with the same work sizes, no argument set since,
//! and no wait list (its event asked or not), finds nothing changed in a few loads (`world`) and
//! enqueues the same, holding the world for reading so that no change comes between. What it
//! counts goes to numbers of its own, which only its thread writes: its tally, which the
//! buffers' records take from when they are read (`cost::tally`), and its launches, added to
//! the statistics in batches, and at exit by the thread that writes them (`close_all`).
//!
//! The lane also answers `clSetKernelArg` for its kernel: a value the argument has already is
//! no change (`set_again`), and a scalar its launches do not read, where it runs the kernel as
//! written, may change and the lane stays open (`scalar_set`).
//!
//! A kernel object keeps two lanes where its launches alternate between two lists of arguments
//! (a loop that swaps its source and destination buffers, as stencils and lattice codes do):
//! a lane serves a launch whose arguments were set since its own where they are its own again,
//! value for value (`Lane::switch`); a lane of a copy gives the copy its launch's arguments
//! again first, where the other lane gave it others (`Give`). Without it every
//! such launch closed one lane and opened the other through the slower repeat: 1,839
//! instructions of clayout's own code a step on PoCL, and the allocations they made, against
//! 434 now and 340 for a loop that swaps nothing (`scripts/setarg-loops.sh`). The buffer such a
//! loop sets at each step is the one the other lane holds there, which tells it from a scalar
//! without the lookup among the buffers (`buffer_at`), and of the two lanes the one that
//! launched less recently is tried first.
//!
//! Anything else, or anything changed, closes the lane and takes the path it came from.

use super::cost::tally::Tally;
use super::cost::{measure, pace, Variant};
use super::dims::{Dims, WorkSizes};
use super::world::{self, Gen};
use crate::registry::{key, Args, Handle, KernelInfo};
use opencl_sys::*;
use smallvec::SmallVec;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// The list a lane holds while its own goes to the record (`scalar_set`): empty, shared.
static NO_ARGS: once_cell::sync::Lazy<Args> = once_cell::sync::Lazy::new(Args::default);

/// Lanes a thread keeps (a loop of more kernels than this takes the slower repeat for some).
const LANES: usize = 8;

/// Launches a lane counts before it adds them to the statistics (it adds the rest as it closes).
const BATCH: u64 = 4096;

thread_local! {
    static OPEN: RefCell<Vec<Lane>> = const { RefCell::new(Vec::new()) };
}

/// Set, never cleared, once a lane was opened on any thread: until then no thread has one, and
/// the calls that look for the thread's lanes leave `OPEN` alone. Why: a thread-local with a
/// destructor registers it at its first touch on the thread, code met nowhere else; in a short
/// declined run on the H200 that was 2.1-2.5 us of the first `clSetKernelArg`'s 6.
static EVER_OPEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this thread may have a lane open (`EVER_OPEN`): a thread sees its own opening.
#[inline(always)]
fn may_have_lanes() -> bool {
    EVER_OPEN.load(std::sync::atomic::Ordering::Relaxed)
}

/// Every lane's launches not yet in the statistics, so that those of threads still running at
/// exit are counted too: a lane's own thread writes its count, the exit's thread takes it.
static UNREPORTED: parking_lot::Mutex<Vec<Weak<Unreported>>> = parking_lot::Mutex::new(Vec::new());

/// A lane's launches not yet added to the statistics, and where they are added.
struct Unreported {
    n: AtomicU64,
    kernel: Option<(crate::stats::KernelStats, crate::stats::Form)>,
}

impl Unreported {
    fn report(&self) {
        let n = self.n.swap(0, Ordering::Relaxed);
        if n > 0 {
            crate::stats::lane_launches(self.kernel.as_ref().map(|(k, f)| (k, *f)), n);
        }
    }
}

/// What a launch of one kernel object on this thread repeats, and what it found unchanged.
pub struct Lane {
    kernel: Handle,
    queue: Handle,
    dims: Dims,
    /// The kernel object to enqueue (the application's or one of its copies, which lives as
    /// long as the kernel's record: its going changes the world) and the work-group size it
    /// replaces, if it does.
    run: (Handle, Option<usize>),
    form: Variant,
    world: u64,
    /// `world::kernel_records()` before the checks: the kernel object's handle names `facts`
    /// while it holds.
    records: u64,
    /// Every buffer of the launch, by its handle and its generation when checked.
    gens: Gens,
    facts: Arc<KernelInfo>,
    /// The arguments as the launch had them, and `KernelInfo::args_set` by then.
    args: Args,
    args_set: u64,
    /// The scalar arguments (of the first 64) that its launches do not read, which may change
    /// between them: those of a launch of the kernel as written that no extent or inferred
    /// stride reads (a time step). None for a copy's launch, whose arguments are clayout's.
    free: u64,
    /// Whether it may serve a launch whose arguments were set since `args` where they are
    /// `args` again (`same_args`): it enqueues the application's own kernel object, whose
    /// arguments are then these, or a copy it gives its launch's arguments again (`give`), and
    /// each buffer among them is one whose generation it holds (a handle set again names the
    /// same buffer while that holds: a buffer's release and a handle's reuse change it).
    switch: bool,
    /// For a copy's launch that may switch: what it gives the copy before each launch, where
    /// the kernel object's other lane gave it others since.
    give: Option<Give>,
    counts: Counts,
    unreported: Arc<Unreported>,
}

/// A lane's buffers: each one's handle, generation, and the generation's value when checked.
pub type Gens = SmallVec<[(Handle, Arc<Gen>, u64); 4]>;

/// Gives a copy the arguments its ticket's launch gave it again, before a lane's launch of the
/// copy (`repeat::Ticket::give`): whether the copy has them.
pub type Give = Box<dyn Fn() -> bool>;

/// What each launch counts.
pub struct Counts {
    /// In the buffers' records (`cost::tally`): the lane's own, retired as it closes.
    pub tally: Option<Arc<Tally>>,
    /// The kernel's model: its times harvested first (a time just measured may drop its kept
    /// decision), the decision still kept, the launch noted for the application's waits.
    pub model: Option<ModelCounts>,
    /// The application's `clFinish` calls by the last launch (`pace::launched`), where the
    /// kernel is paced.
    pub finishes: Option<u64>,
    /// The kernel's statistics, and the form counted there (none: a kernel without copies); the
    /// lane moves them beside its launches not yet added there.
    pub decisions: Option<(crate::stats::KernelStats, crate::stats::Form)>,
    /// A launch as written whose program declined its copies: what it forgoes
    /// (`cost::worth::Forgone::forgoes`); the launch that makes the forgone reach the load's cost
    /// takes the full path, which buys them.
    pub forgoes: Option<(Arc<super::cost::worth::Forgone>, u64)>,
}

pub struct ModelCounts {
    /// `KernelModel::lane_launched`.
    pub launched: Arc<AtomicBool>,
    /// `Kept::dropped`, and its value when the decision was checked.
    pub dropped: Arc<AtomicU64>,
    pub dropped_at: u64,
}

impl Lane {
    /// A lane for the launch that just repeated, with what it checked: the world before its
    /// checks, each buffer's generation under its lock.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        kernel: cl_kernel,
        queue: cl_command_queue,
        dims: Dims,
        run: (Handle, Option<usize>),
        form: Variant,
        (world, records): (u64, u64),
        gens: Gens,
        facts: &Arc<KernelInfo>,
        (args, args_set, free, covered): (Args, u64, u64, bool),
        give: Option<Give>,
        mut counts: Counts,
    ) -> Lane {
        let unreported = Arc::new(Unreported { n: AtomicU64::new(0), kernel: counts.decisions.take() });
        {
            let mut all = UNREPORTED.lock();
            // Those of closed lanes go once they are as many as the open ones were.
            if all.len() >= all.capacity() {
                all.retain(|u| u.strong_count() > 0);
            }
            all.push(Arc::downgrade(&unreported));
        }
        let own = run.0 == key(kernel);
        let switch = covered && (own || give.is_some()) && !facts.svm_seen.load(Ordering::Relaxed);
        let give = give.filter(|_| switch && !own);
        Lane {
            kernel: key(kernel),
            queue: key(queue),
            dims,
            run,
            form,
            world,
            records,
            gens,
            facts: facts.clone(),
            args,
            args_set,
            free,
            switch,
            give,
            counts,
            unreported,
        }
    }

    /// Enqueues the launch again if nothing changed (`Again::Enqueued`, or `Closed` for a
    /// copy's launch that failed, which the slower path retries), or tells why not: the
    /// arguments are another list (`Other`: the lane stays open for its own), or anything else
    /// changed (`Closed`).
    ///
    /// Nothing after the enqueue may panic (the exported entry point would forward the call
    /// again): plain counts, and the one call that locks, guarded.
    // Forced: left to the inliner, an unrelated change elsewhere in the crate once put it out
    // of line, 60-70 instructions more a launch on PoCL (docs/results.md, "Inlining, and what
    // is left of a short run's time").
    #[inline(always)]
    fn again(
        &mut self,
        queue: cl_command_queue,
        sizes: &WorkSizes,
        enqueue: impl FnOnce(cl_kernel, Option<usize>) -> cl_int,
    ) -> Again {
        // SAFETY: the application's work sizes, as the OpenCL call requires them.
        if self.queue != key(queue) || !unsafe { sizes.is(&self.dims) } {
            return Again::Closed;
        }
        // The arguments first, so that the other list's lane of a loop that swaps two costs
        // little. Not under the world's lock: no argument set changes what it counts, and a
        // list set by another thread during the launch is the application's own race.
        // Where no argument was set since its last launch, no other lane of the kernel object
        // launched since either (that takes another list): a copy has this lane's arguments.
        let switched = self.facts.args_set.load(Ordering::Acquire) != self.args_set;
        if switched {
            if !self.switch {
                return Again::Closed;
            }
            let args = self.facts.args.lock();
            let Some(exact) = self.as_now(&args) else { return Again::Other };
            // A time step that differs: the lane's list becomes the kernel's, so that what it
            // answers for a value set again (`set_again`) is the value the kernel has.
            if !exact {
                self.args = Arc::clone(&args);
            }
            self.args_set = self.facts.args_set.load(Ordering::Acquire);
        }
        if self.counts.model.is_some() && measure::pending() {
            // What launches timed by their events measured since: a time recorded for this
            // kernel drops its kept decision.
            if crate::guard("cost model", measure::harvest).is_none() {
                return Again::Closed;
            }
        }
        let world = world::read();
        let same = *world == self.world
            && self.gens_hold()
            && self.counts.model.as_ref().is_none_or(|m| m.dropped.load(Ordering::Acquire) == m.dropped_at);
        if !same || self.counts.forgoes.as_ref().is_some_and(|(f, gain)| f.forgoes(*gain)) {
            return Again::Closed;
        }
        if switched && self.give.as_ref().is_some_and(|g| !crate::guard("express lane", g).unwrap_or(false)) {
            return Again::Closed;
        }
        let r = enqueue(self.run.0 as cl_kernel, self.run.1);
        if r != CL_SUCCESS {
            // A copy's launch that fails goes to the kernel as written, through the full path.
            return match self.form {
                Variant::Written => Again::Enqueued(r),
                _ => Again::Closed,
            };
        }
        if let Some(t) = &self.counts.tally {
            t.launched();
        }
        drop(world);
        if let Some(m) = &self.counts.model {
            if !m.launched.load(Ordering::Relaxed) {
                m.launched.store(true, Ordering::Relaxed);
            }
        }
        if let Some(f) = &mut self.counts.finishes {
            let now = pace::finishes();
            if now != *f {
                *f = now;
                crate::guard("cost model", || pace::launched(queue));
            }
        }
        // Only this thread writes the count: a load and a store, not a read-modify-write.
        let n = self.unreported.n.load(Ordering::Relaxed) + 1;
        self.unreported.n.store(n, Ordering::Relaxed);
        if n == BATCH {
            self.unreported.report();
        }
        Again::Enqueued(r)
    }

    /// Whether this lane, of the same kernel object as `other`, launched before it, and
    /// arguments were set since `other`'s launch (so that its list may be this one's).
    fn launched_before(&self, other: &Lane) -> bool {
        self.args_set < other.args_set && other.facts.args_set.load(Ordering::Relaxed) != other.args_set
    }

    fn gens_hold(&self) -> bool {
        self.gens.iter().all(|(_, g, n)| g.now() == *n)
    }

    /// The buffer that argument `i` of the lane's list names, where `value` (`size` bytes, as
    /// `clSetKernelArg` takes it) is its handle and the lane tells that the handle names that
    /// buffer still: what `registry::arg_value` would make of the value, without its lookup
    /// among the buffers. A lane holds the generation of the buffers it checked, which a
    /// release, or a new buffer at the handle, changes; for the kernel record's facts it
    /// holds, the handle must still name that record.
    ///
    /// # Safety
    /// As for `registry::arg_value`.
    unsafe fn buffer_at(&self, i: usize, size: usize, value: *const std::ffi::c_void) -> Option<Handle> {
        use crate::registry::ArgValue;
        let Some(Some(v @ ArgValue::Mem(h))) = self.args.get(i) else { return None };
        let held = *h != 0 && self.gens.iter().any(|(b, _, _)| b == h) && self.gens_hold();
        (held && self.records == world::kernel_records() && v.is_raw(size, value)).then_some(*h)
    }

    /// Whether the kernel object's handle still names the lane's record and no argument was set
    /// since the lane's launch, so that `args` are its arguments now.
    fn args_as_launched(&self) -> bool {
        self.records == world::kernel_records() && self.facts.args_set.load(Ordering::Acquire) == self.args_set
    }

    /// Whether the kernel object's handle still names the lane's record and argument `i` was
    /// not set since the lane's list was the kernel's, so that the lane's value is its value now.
    fn arg_as_launched(&self, i: usize) -> bool {
        self.records == world::kernel_records()
            && (self.facts.args_set.load(Ordering::Acquire) == self.args_set
                || self.facts.unset_since(i, self.args_set))
    }

    /// Whether arguments `now` make the lane's launch: its values, but for the scalars it does
    /// not read (`free`), which may be any of the same size.
    fn same_args(&self, now: &[Option<crate::registry::ArgValue>]) -> bool {
        self.args.len() == now.len() && (0..now.len()).all(|i| self.same_arg(i, &now[i]))
    }

    /// [`Lane::same_args`] for the kernel's list `now`, which was the lane's at `args_set`: only
    /// the arguments set since are compared (a loop that swaps two buffers sets one of them).
    /// Some(whether the values are the lane's, free scalars included) where they make its launch.
    fn as_now(&self, now: &[Option<crate::registry::ArgValue>]) -> Option<bool> {
        if self.args.len() != now.len() {
            return None;
        }
        let mut exact = true;
        for (i, is) in now.iter().enumerate() {
            if self.facts.unset_since(i, self.args_set) || self.args[i] == *is {
                continue;
            }
            if !self.same_arg(i, is) {
                return None;
            }
            exact = false;
        }
        Some(exact)
    }

    fn same_arg(&self, i: usize, is: &Option<crate::registry::ArgValue>) -> bool {
        use crate::registry::ArgValue;
        let was = &self.args[i];
        was == is
            || i < 64
                && self.free & (1 << i) != 0
                && matches!((was, is), (Some(ArgValue::Bytes(a)), Some(ArgValue::Bytes(b))) if a.len() == b.len())
    }
}

/// What a lane made of a launch of its kernel object.
enum Again {
    Enqueued(cl_int),
    /// The launch's arguments are another list: the lane stays open for its own.
    Other,
    Closed,
}

impl Drop for Lane {
    fn drop(&mut self) {
        self.unreported.report();
        if let Some(t) = &self.counts.tally {
            t.retire();
        }
    }
}

/// Enqueues the launch of `kernel` with work sizes `sizes` through this thread's lane for it, if
/// it has one and nothing changed (`enqueue` enqueues a kernel object, with the work-group size
/// it replaces, with no wait list, and the application's event if it asked one): Some(what the
/// enqueue returned), or None (nothing
/// enqueued; the lane is closed).
///
/// # Safety
/// `sizes` must be the application's work sizes, as the OpenCL call requires them.
// Inlined into the launch hooks, as it was before the lanes' counts moved beside them (without
// it, the call and its frame cost some 25 instructions more a launch on PoCL).
#[inline]
pub unsafe fn again(
    queue: cl_command_queue,
    kernel: cl_kernel,
    sizes: &WorkSizes,
    enqueue: impl FnOnce(cl_kernel, Option<usize>) -> cl_int,
) -> Option<cl_int> {
    if !may_have_lanes() {
        return None;
    }
    OPEN.try_with(|open| {
        let mut open = open.try_borrow_mut().ok()?;
        let mut enqueue = Some(enqueue);
        // A kernel object has two lanes at most (`open`). Of the two, the one that launched less
        // recently first where arguments were set since the other's launch: a loop that swaps
        // two buffers launches each list in turn, and a lane that does not hold the list costs
        // a lock of it to tell.
        let (mut first, mut second) = (None, None);
        for (at, l) in open.iter().enumerate() {
            if l.kernel == key(kernel) {
                if first.is_some() {
                    second = Some(at);
                    break;
                }
                first = Some(at);
            }
        }
        let first = first?;
        let (mut at, mut then) = match second {
            Some(s) if open[s].launched_before(&open[first]) => (s, Some(first)),
            _ => (first, second),
        };
        loop {
            // Only `Enqueued` calls it.
            let once = |k, local| enqueue.take().map_or(CL_INVALID_OPERATION, |e| e(k, local));
            match open[at].again(queue, sizes, once) {
                Again::Enqueued(r) => return Some(r),
                Again::Other => {}
                Again::Closed => {
                    open.remove(at);
                    then = then.map(|t| if t > at { t - 1 } else { t });
                    // A copy's launch that failed used the enqueue: the slower path retries it.
                    enqueue.as_ref()?;
                }
            }
            at = then.take()?;
        }
    })
    .ok()
    .flatten()
}

/// What a lane knows of an argument set.
pub enum Known {
    /// The argument has the value already: no change.
    Same,
    /// A buffer that a lane of the kernel object holds there: recorded (`set_again`'s `record`).
    Recorded,
    /// It has another: the kernel's record, to record the value in.
    Differs(Arc<KernelInfo>),
    Unknown,
}

/// Whether argument `i` of `kernel` has the value `value` of `size` bytes already, as one of
/// this thread's lanes for it tells without a lock: the handle still names the lane's kernel
/// record, the argument was not set since the lane's list was the kernel's (`KernelInfo::
/// set_at`), and no buffer was created or released since it was set (`KernelInfo::stamps`).
/// Where it has not, and `value` is the handle of a buffer that one of the lanes holds there
/// (a loop that swaps two buffers sets, at each step, the one that the kernel object's other
/// lane has there), `record` records that buffer in the kernel's record with the count of
/// buffers made and released read before the lane told it (`registry::mems_changed`), in the
/// same look at the lanes: what `registry::arg_value` would make of the value, without its
/// lookup among the buffers. `Unknown` where no lane can tell (the caller then asks the
/// kernel's record).
///
/// # Safety
/// As for `registry::arg_value`.
pub unsafe fn set_again(
    kernel: cl_kernel,
    i: cl_uint,
    size: usize,
    value: *const std::ffi::c_void,
    record: impl FnOnce(&KernelInfo, Handle, u64),
) -> Known {
    if !may_have_lanes() {
        return Known::Unknown;
    }
    let i = i as usize;
    OPEN.try_with(|open| {
        let Ok(open) = open.try_borrow() else { return Known::Unknown };
        let mut differs = None;
        for l in open.iter() {
            if l.kernel != key(kernel) || !l.arg_as_launched(i) {
                continue;
            }
            if l.facts.has(&l.args, i, size, value) {
                return Known::Same;
            }
            // Not the value it has, or a handle the buffers made since may name otherwise:
            // recorded as any value set.
            differs = Some(l);
        }
        if size != std::mem::size_of::<cl_mem>() || value.is_null() {
            return differs.map_or(Known::Unknown, |l| Known::Differs(l.facts.clone()));
        }
        held_or_differs(&open, key(kernel), i, size, value, differs, record)
    })
    .unwrap_or(Known::Unknown)
}

/// [`set_again`] for a value of a handle's size that no lane has already: the buffer a lane
/// holds there, recorded, or the record of `differs`, the lane that tells the value differs. Out
/// of line, where the look-up at every set of a value the argument has already (a loop that sets
/// every argument before every launch) would otherwise save more registers (ten instructions a
/// launch on PoCL).
///
/// # Safety
/// As for `registry::arg_value`.
#[inline(never)]
unsafe fn held_or_differs(
    open: &[Lane],
    kernel: Handle,
    i: usize,
    size: usize,
    value: *const std::ffi::c_void,
    differs: Option<&Lane>,
    record: impl FnOnce(&KernelInfo, Handle, u64),
) -> Known {
    // Before the lane tells what the value is: a buffer created or released after this read
    // makes the value's stamp stale (`KernelInfo::has`).
    let mems = crate::registry::mems_changed();
    let mut mine = open.iter().filter(|l| l.kernel == kernel);
    if let Some((l, h)) = mine.find_map(|l| Some((l, l.buffer_at(i, size, value)?))) {
        record(&l.facts, h, mems);
        return Known::Recorded;
    }
    differs.map_or(Known::Unknown, |l| Known::Differs(l.facts.clone()))
}

/// A scalar argument of `kernel` that this thread's lane for it does not read (a time step) set
/// to a new value, `value` of `size` bytes: recorded by `record` (which returns the count of
/// arguments set with it and the list as it is now), and the lane stays open, where nothing
/// else was set since its launch. False where it does not: the caller records the value.
///
/// # Safety
/// As for `registry::arg_value`.
pub unsafe fn scalar_set(
    kernel: cl_kernel,
    i: cl_uint,
    size: usize,
    value: *const std::ffi::c_void,
    record: impl FnOnce(crate::registry::ArgValue) -> Option<(u64, Args)>,
) -> bool {
    use crate::registry::ArgValue;
    if !may_have_lanes() {
        return false;
    }
    let i = i as usize;
    OPEN.try_with(|open| {
        let Ok(mut open) = open.try_borrow_mut() else { return false };
        let Some(l) = open.iter_mut().find(|l| l.kernel == key(kernel) && l.args_as_launched()) else { return false };
        let scalar = !value.is_null()
            && i < 64
            && l.free & (1 << i) != 0
            && matches!(l.args.get(i), Some(Some(ArgValue::Bytes(b))) if b.len() == size);
        if !scalar {
            return false;
        }
        // A pointer-sized value that is a buffer's handle is that buffer, not a scalar.
        let v = crate::registry::arg_value(crate::registry::get(), size, value);
        if !matches!(v, ArgValue::Bytes(_)) {
            return false;
        }
        // The lane lets go of its list first: where nothing else holds it (a declined run's
        // lane, whose ticket keeps no list), the record changes it in place rather than copy it
        // whole at every time step (a declined run's time step cost some 740 instructions on
        // PoCL in the allocator and the copy). Until the record returns, the lane's list is an
        // empty one, which matches no value (`set_again`).
        drop(std::mem::replace(&mut l.args, NO_ARGS.clone()));
        let Some((set, args)) = record(v) else { return false };
        // Set by this call alone since the lane's launch: it stays open on the new list.
        if set == l.args_set + 1 {
            (l.args_set, l.args) = (set, args);
        }
        true
    })
    .unwrap_or(false)
}

/// Opens `lane` on this thread, in place of the kernel object's lane for the same arguments,
/// beside its latest for others (a loop that swaps two buffers keeps one for each list).
pub fn open(lane: Lane) {
    EVER_OPEN.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = OPEN.try_with(|open| {
        let Ok(mut open) = open.try_borrow_mut() else { return };
        let mut kept = false;
        for at in (0..open.len()).rev() {
            let l = &open[at];
            if l.kernel != lane.kernel {
                continue;
            }
            // The other list's, the latest only, and only where both may serve a launch whose
            // arguments were set since their own.
            if !kept && lane.switch && l.switch && !lane.same_args(&l.args) {
                kept = true;
            } else {
                open.remove(at);
            }
        }
        if open.len() >= LANES {
            open.remove(0);
        }
        open.push(lane);
    });
}

/// Closes this thread's lanes and adds every other thread's launches not yet in the statistics
/// (at exit, before they are written: other threads' lanes stay open until their threads end).
pub fn close_all() {
    if may_have_lanes() {
        let _ = OPEN.try_with(|open| {
            if let Ok(mut open) = open.try_borrow_mut() {
                open.clear();
            }
        });
    }
    let open: Vec<Arc<Unreported>> = UNREPORTED.lock().iter().filter_map(Weak::upgrade).collect();
    for u in open {
        u.report();
    }
}
