//! Ordering clayout's conversions against the application's commands, without making a command
//! wait for something the application did not make it wait for wherever that can be avoided.
//!
//! A conversion rewrites a buffer in place: it must run after every command already enqueued
//! that uses the buffer, and every later command that uses the buffer must run after it. Clayout
//! sees those commands (every command that touches a tracked buffer goes through `access`), and
//! keeps, per buffer, the events of those not known to be complete ([`Users`]; on an in-order
//! queue the latest one stands for the queue's earlier ones).
//! - A conversion waits for the buffer's unfinished users on other queues, and on its own queue
//!   when that queue executes out of order; never for the application's wait list, nor for
//!   other commands of other queues (a marker on every queue would make those queues' heads,
//!   which may wait for a user event the application sets only after waiting for this queue,
//!   hold up the conversion: a deadlock the application did not write).
//! - Clayout knows which commands are *free*: they will complete without the application's help
//!   (everything they wait for is complete or free, and so is their queue's previous command;
//!   a user event is never free until set). Every command that waits for a buffer's last
//!   conversion waits only for free commands, as long as the conversion only waited for free
//!   ones and the command it was made for is free. So a conversion the command can do without
//!   (a rewritten kernel's, which can run as written) is made only when its command and the
//!   buffer's unfinished users it does not already wait for are free ([`free`],
//!   [`Users::unfinished`]). One it cannot do without (a host read of a buffer in ASTA, a kernel
//!   written for ASTA) waits for them regardless: the one wait clayout may add that depends on
//!   the application, documented in docs/reliability.md.
//! - Later commands wait for the buffer's last conversion while it is unfinished
//!   (`BufferState::last_event`, in `convert::ensure`).
//! - Commands other threads are enqueueing at that moment: a command holds the states of its
//!   buffers locked from its conversions until its own enqueue has returned and its event is
//!   recorded (`access::WaitList::enqueued`); blocking commands are enqueued non-blocking and
//!   waited for once the locks are released, so that no lock is held while waiting.
//! - A free launch on an in-order queue for which the application asked no event gets none
//!   ([`Stretch`]): asking for an event took a launch from 5.2-5.5 to 7.7-7.8 us on the H100
//!   (medians, bench/firstlaunch.c's loop on NVIDIA's driver), and clayout needs one only when
//!   a command on another queue converts a buffer such a launch used. Then a marker on the
//!   launches' queue stands for them; it waits for nothing they did not (every command enqueued
//!   there since they were is free: a command that is not closes the stretch first, [`close`]).
//!   A free launch that asks its event joins the stretch too (the marker, enqueued after it on
//!   its in-order queue, waits for it as its event would), so that a loop that asks an event of
//!   every launch repeats as one that asks none (`transparent::repeat`, `lane`).
//! - Commands of the fast path (a process before its first annotated program) are not tracked.
//!   When the first annotated program is created, the fast path's enqueues in flight are let
//!   finish (a blocking call waits outside that window), and a marker on every queue of the
//!   application then stands for everything enqueued so far, as a user of every buffer.

use crate::cl::{cmd, info::event_status, Event, HandleMap, Queue};
use crate::registry::{self, Handle};
use once_cell::sync::Lazy;
use opencl_sys::*;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Set, never cleared, when the first annotated program is created.
static ANNOTATED: AtomicBool = AtomicBool::new(false);
/// Fast-path enqueues between their check of `ANNOTATED` and the real call's return.
static FAST_IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// How long the first annotated program waits for fast-path enqueues in flight: an enqueue
/// returns at once, so past this something is wrong, and conversions are stopped rather than
/// risked.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// While held, the caller may enqueue on the fast path (no registry lookups, no locks): no
/// annotated program exists yet, and the first one waits until this is dropped. Drop it as soon
/// as the enqueue returns.
pub struct Fast(());

impl Drop for Fast {
    fn drop(&mut self) {
        FAST_IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Set when a fast-path enqueue had a wait list: only then can what the fast path enqueued be
/// waiting for the application.
static FAST_WAITED: AtomicBool = AtomicBool::new(false);

/// Whether everything the fast path enqueued so far completes without the application's help:
/// none of it had a wait list.
pub fn fast_free() -> bool {
    !FAST_WAITED.load(Ordering::Relaxed)
}

/// `Some` when the fast path may be taken for an enqueue with a wait list of `n` events; `None`
/// when the caller must take the ordered one.
pub fn fast(n: cl_uint) -> Option<Fast> {
    // The flag is never cleared: once seen set, the ordered path needs nothing of the count
    // below. Every enqueue after the first annotated program comes here, and the count's two
    // sequentially consistent updates were two of a repeated launch's some thirty atomics.
    if ANNOTATED.load(Ordering::Acquire) {
        return None;
    }
    if n > 0 {
        FAST_WAITED.store(true, Ordering::Relaxed);
    }
    // SeqCst here and in `annotated_program_created`: either this call sees the flag, or the
    // program's creator sees this call in flight and waits for it.
    FAST_IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
    let fast = Fast(());
    if ANNOTATED.load(Ordering::SeqCst) {
        None
    } else {
        Some(fast)
    }
}

/// One command that used a buffer, by its event.
#[derive(Debug)]
struct User {
    queue: Handle,
    in_order: bool,
    seen: Seen,
    free: bool,
}

/// How clayout will see a user complete.
#[derive(Debug)]
enum Seen {
    Event(Event),
    /// A free launch enqueued without an event, on an in-order queue.
    Stretch(Arc<Stretch>),
}

impl User {
    /// Whether it is known to have completed (a stretch not marked yet is not).
    fn complete(&self) -> bool {
        match &self.seen {
            Seen::Event(e) => complete(e),
            Seen::Stretch(s) => s.marked.lock().as_ref().is_some_and(|m| m.event.as_ref().is_none_or(complete)),
        }
    }

    fn is(&self, event: cl_event) -> bool {
        matches!(&self.seen, Seen::Event(e) if e.raw() == event)
    }
}

/// Free launches clayout enqueued on an in-order queue without an event of their own, since
/// the queue's last stretch was closed. They get one event between them, a marker enqueued
/// after them, only once a command on another queue must wait for one of them ([`Users::unfinished`]);
/// a command that is not free closes its queue's stretch before it is enqueued ([`close`]), so
/// that the marker never waits for a command that may wait for the application.
#[derive(Debug)]
pub struct Stretch {
    queue: Handle,
    marked: Mutex<Option<Marker>>,
    /// No longer the queue's open stretch (set as it leaves `OPEN`), so that a launch that
    /// repeats the last checks it without the map's lock (`held_open`).
    closed: AtomicBool,
}

/// The marker that stands for a stretch's launches, and whether it is free. No event: none
/// could be enqueued, and the launches were waited for (or conversions stopped) instead.
#[derive(Debug)]
struct Marker {
    event: Option<Event>,
    free: bool,
}

/// The open stretch of each in-order queue: the one its next launch without an event joins.
static OPEN: Lazy<Mutex<HandleMap<Arc<Stretch>>>> = Lazy::new(Default::default);

/// The stretch a launch just enqueued on `queue` without an event belongs to. Joined after the
/// launch's enqueue: a stretch marked before that would not stand for it.
fn join(queue: cl_command_queue) -> Arc<Stretch> {
    let q = registry::key(queue);
    OPEN.lock()
        .entry(q)
        .or_insert_with(|| Arc::new(Stretch { queue: q, marked: Mutex::new(None), closed: AtomicBool::new(false) }))
        .clone()
}

/// The stretch the next launch without an event on `queue` joins, if one is open.
pub fn open_stretch(queue: cl_command_queue) -> Option<Arc<Stretch>> {
    OPEN.lock().get(&registry::key(queue)).cloned()
}

/// A stretch held open: its marker is not enqueued while this is held, so a launch enqueued
/// meanwhile on its queue is one of the launches the marker stands for.
pub struct HeldOpen<'a>(#[allow(dead_code)] parking_lot::MutexGuard<'a, Option<Marker>>);

/// A command that is not free is about to be enqueued on `queue` (or the application releases
/// it): the launches of its open stretch get their marker now, while it waits only for free
/// commands.
pub fn close(queue: cl_command_queue) {
    let open = leave(&mut OPEN.lock(), registry::key(queue));
    // Only the map holds a stretch no launch joined.
    if let Some(s) = open.filter(|s| Arc::strong_count(s) > 1) {
        s.marker();
    }
}

/// Takes `queue`'s stretch out of `OPEN`, `open` (every way out of the map is this one), and
/// marks it closed: `held_open` reads that rather than the map.
fn leave(open: &mut HandleMap<Arc<Stretch>>, queue: Handle) -> Option<Arc<Stretch>> {
    let s = open.remove(&queue)?;
    s.closed.store(true, Ordering::Release);
    // Launches of the express lane that joined it have enqueued; later ones see it closed.
    super::world::changed();
    Some(s)
}

impl Stretch {
    /// Holds the stretch open for one more launch on its queue, if it is still the queue's open
    /// one and its marker is not enqueued yet (`transparent::repeat`). Taken while the launch's
    /// buffers are locked, as `marker` is.
    pub fn held_open(&self) -> Option<HeldOpen<'_>> {
        let marked = self.marked.lock();
        // Every way out of `OPEN` sets `closed`, before the marker (taken under this lock) if
        // there is one: a stretch still open here is marked after this launch.
        if marked.is_some() || self.closed.load(Ordering::Acquire) {
            return None;
        }
        Some(HeldOpen(marked))
    }

    /// The event of the marker that stands for the stretch's launches, enqueued on first need,
    /// and whether it is free. None: nothing to wait for (they were waited for instead).
    fn marker(&self) -> (Option<cl_event>, bool) {
        let mut marked = self.marked.lock();
        if let Some(m) = marked.as_ref() {
            return (m.event.as_ref().map(Event::raw), m.free);
        }
        {
            let mut open = OPEN.lock();
            if open.get(&self.queue).is_some_and(|s| std::ptr::eq(Arc::as_ptr(s), self)) {
                // Later launches start another stretch, which this marker will not stand for.
                leave(&mut open, self.queue);
            }
        }
        let mut queue = None;
        registry::get().queues.retain_if_present(self.queue, |h| queue = Queue::retain(h as cl_command_queue));
        let m = match queue {
            Some(q) => {
                let free = free(q.raw(), &[]);
                match cmd::marker(q.raw(), &[]) {
                    Ok(ev) => {
                        let _ = cmd::flush(q.raw());
                        // Listed, not made the queue's latest command: the application's thread
                        // may have enqueued and noted a later one meanwhile.
                        if free {
                            list_free(q.raw(), ev.raw());
                        }
                        Marker { event: Some(ev), free }
                    }
                    Err(e) => waited_instead(Some(&q), free, &format!("a marker could not be enqueued ({e})")),
                }
            }
            None => waited_instead(None, false, "their queue is gone"),
        };
        let out = (m.event.as_ref().map(Event::raw), m.free);
        *marked = Some(m);
        out
    }
}

/// A stretch whose marker could not be had: its launches are waited for, or conversions stop
/// (`finished_instead`).
fn waited_instead(queue: Option<&Queue>, free: bool, why: &str) -> Marker {
    finished_instead(queue.map(Queue::raw), free, why);
    Marker { event: None, free: true }
}

/// Launches on `queue` that no marker can stand for: waited for when nothing on the queue waits
/// for the application (`free`), nor for a callback of its (`callbacks::quiet`), which a finish
/// with the caller's locks held could wait for for ever; otherwise nothing can be ordered after
/// them, and conversions stop.
pub fn finished_instead(queue: Option<cl_command_queue>, free: bool, why: &str) {
    let waited = free && super::callbacks::quiet().is_some_and(|_quiet| queue.is_some_and(|q| cmd::finish(q).is_ok()));
    if !waited {
        super::stop::stop_converting(&format!(
            "launches enqueued without an event could not be ordered before a conversion: {why}"
        ));
    }
}

/// The latest command clayout knows of on a queue (for an out-of-order queue, the latest one
/// later commands wait for), and whether it is free. No event: one that is not free and whose
/// end clayout cannot see.
struct Tail {
    event: Option<Event>,
    free: bool,
}

static TAILS: Lazy<Mutex<HandleMap<Tail>>> = Lazy::new(Default::default);

/// Events of unfinished commands known to be free, by handle (referenced while listed). Every
/// unfinished one must stay listed (dropping one would make the commands after it look as if
/// they waited for the application); completed ones are dropped whenever the list has doubled
/// since the last time, so the list is as long as the commands in flight, give or take twice.
#[derive(Default)]
struct FreeEvents {
    free: HandleMap<Event>,
    prune_at: usize,
}

static FREE: Lazy<Mutex<FreeEvents>> = Lazy::new(Default::default);

/// The commands that used a buffer and are not known to be complete.
#[derive(Debug, Default)]
pub struct Users(Vec<User>);

/// Markers standing for everything the fast path enqueued before the first annotated program,
/// users of every buffer.
static PRE_TRACKING: Mutex<Vec<(Handle, bool, Event)>> = Mutex::new(Vec::new());

fn complete(e: &Event) -> bool {
    complete_raw(e.raw())
}

fn complete_raw(e: cl_event) -> bool {
    // A failed command (negative status) is finished too: it will not touch the bytes again.
    event_status(e).is_none_or(|s| s == CL_COMPLETE || s < 0)
}

/// Whether a command about to be enqueued on `queue` after `wait` will complete without the
/// application's help: every event it waits for is complete or free, and so is the latest
/// command of the queue it will run after.
pub fn free(queue: cl_command_queue, wait: &[cl_event]) -> bool {
    let tail_free =
        TAILS.lock().get(&registry::key(queue)).is_none_or(|t| t.free || t.event.as_ref().is_some_and(complete));
    // The list first, the status after: a listed event leaves the list only once complete, and
    // stays complete, so no event is seen neither listed nor complete in between.
    tail_free && wait.iter().all(|&e| FREE.lock().free.contains_key(&(e as usize)) || complete_raw(e))
}

/// Notes a command just enqueued on `queue` with event `event` (null: unknown), and whether it
/// is free. `barrier`: later commands of the queue wait for it even when the queue executes
/// out of order.
pub fn noted(queue: cl_command_queue, in_order: bool, barrier: bool, event: cl_event, free: bool) {
    if free {
        list_free(queue, event);
    }
    if in_order || barrier {
        TAILS.lock().insert(registry::key(queue), Tail { event: Event::retained_in(event, queue), free });
    }
}

/// Lists `event`, of a free command just enqueued on `queue`, among the free ones until it
/// completes.
fn list_free(queue: cl_command_queue, event: cl_event) {
    if let Some(e) = Event::retained_in(event, queue) {
        let mut all = FREE.lock();
        if all.free.len() >= all.prune_at {
            all.free.retain(|_, e| !complete(e));
            all.prune_at = (2 * all.free.len()).max(256);
        }
        all.free.insert(event as usize, e);
    }
}

/// The application released a queue: its latest command no longer matters to anyone.
pub fn queue_released(queue: Handle) {
    TAILS.lock().remove(&queue);
    leave(&mut OPEN.lock(), queue);
}

/// How many references clayout holds on `event` here (free list, queue heads, markers).
pub fn holds(event: cl_event) -> usize {
    let free = FREE.lock().free.contains_key(&(event as usize)) as usize;
    let tails = TAILS.lock().values().filter(|t| t.event.as_ref().is_some_and(|e| e.raw() == event)).count();
    let pre = PRE_TRACKING.lock().iter().filter(|(_, _, e)| e.raw() == event).count();
    free + tails + pre
}

/// Drops every reference clayout holds to a command that has completed (a context is going, a
/// reference count is asked).
pub fn forget_finished() {
    FREE.lock().free.retain(|_, e| !complete(e));
    PRE_TRACKING.lock().retain(|(_, _, e)| !complete(e));
    TAILS.lock().retain(|_, t| t.event.as_ref().is_some_and(|e| !complete(e)));
}

/// Whether `queue` executes in order (unknown queues count as out of order: the safe side).
pub fn in_order(queue: cl_command_queue) -> bool {
    registry::get().queues.with(registry::key(queue), |q| !q.out_of_order).unwrap_or(false)
}

impl Users {
    /// Records a command enqueued on `queue` that uses the buffer. On an in-order queue it
    /// replaces the queue's earlier users: it completes after them.
    pub fn record(&mut self, queue: cl_command_queue, in_order: bool, event: cl_event, free: bool) {
        let Some(event) = Event::retained_in(event, queue) else { return };
        self.push(queue, in_order, Seen::Event(event), free);
    }

    /// Whether a launch of stretch `s` is among the users: a later launch in `s` stands in
    /// its place, and needs no record of its own.
    pub fn joined(&self, s: &Stretch) -> bool {
        self.0.iter().any(|u| matches!(&u.seen, Seen::Stretch(x) if std::ptr::eq(Arc::as_ptr(x), s)))
    }

    /// Records a free launch enqueued on the in-order `queue` without an event (a [`Stretch`]).
    pub fn record_without_event(&mut self, queue: cl_command_queue) {
        self.push(queue, true, Seen::Stretch(join(queue)), true);
    }

    fn push(&mut self, queue: cl_command_queue, in_order: bool, seen: Seen, free: bool) {
        let q = registry::key(queue);
        // An earlier user of this in-order queue completes before this one.
        let superseded = |u: &User| in_order && u.in_order && u.queue == q;
        self.0.retain(|u| !superseded(u) && !u.complete());
        self.0.push(User { queue: q, in_order, seen, free });
    }

    /// What a conversion before a command on `queue` must wait for: the unfinished users,
    /// except those of `queue` itself when it is in order (the queue orders them). The second
    /// answer says whether any of them may need the application's help to complete and is not
    /// in the command's own wait list `asked` (a wait the application did not ask for).
    /// Completed users are dropped.
    pub fn unfinished(&mut self, queue: cl_command_queue, in_order: bool, asked: &[cl_event]) -> (Vec<cl_event>, bool) {
        let q = registry::key(queue);
        self.0.retain(|u| !u.complete());
        let mut added = false;
        let mut out: Vec<cl_event> = Vec::new();
        for u in self.0.iter().filter(|u| !(in_order && u.in_order && u.queue == q)) {
            let (event, free) = match &u.seen {
                Seen::Event(e) => (Some(e.raw()), u.free),
                Seen::Stretch(s) => s.marker(),
            };
            let Some(event) = event else { continue };
            added |= !free && !asked.contains(&event);
            out.push(event);
        }
        let mut pre = PRE_TRACKING.lock();
        pre.retain(|(_, _, e)| !complete(e));
        let pre_free = !FAST_WAITED.load(Ordering::Relaxed);
        for (_, _, e) in pre.iter().filter(|(h, o, _)| !(in_order && *o && *h == q)) {
            added |= !pre_free && !asked.contains(&e.raw());
            out.push(e.raw());
        }
        (out, added)
    }

    /// Forgets every user: a conversion that waited for them all now stands for them.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Forgets the users that completed.
    pub fn forget_finished(&mut self) {
        self.0.retain(|u| !u.complete());
    }

    /// How many of the users are `event`.
    pub fn holds(&self, event: cl_event) -> usize {
        self.0.iter().filter(|u| u.is(event)).count()
    }
}

/// Whether commands are tracked: an annotated program was created.
pub fn tracking() -> bool {
    ANNOTATED.load(Ordering::Acquire)
}

/// Called when a program with annotations is first seen, before it can be launched. True the
/// first time: then commands from now on are tracked, and nothing is known of those before.
pub fn annotated_program_created() -> bool {
    if ANNOTATED.swap(true, Ordering::SeqCst) {
        return false;
    }
    // The express lanes of a declined run's launches, left untracked (`launch::untracked_lane`),
    // enqueue on no fast path's count: the world's change waits for those in flight, and closes
    // them before the markers below stand for what was enqueued.
    super::world::changed();
    let start = Instant::now();
    while FAST_IN_FLIGHT.load(Ordering::SeqCst) != 0 {
        if start.elapsed() > DRAIN_LIMIT {
            super::stop::stop_converting("another thread's OpenCL enqueue was still running when the first annotated program was created, so conversions could not be ordered after it");
            return true;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let mut pre = PRE_TRACKING.lock();
    // What the fast path enqueued may wait for the application if any of it had a wait list:
    // until the marker completes, so may the queue's next command.
    let free = !FAST_WAITED.load(Ordering::Relaxed);
    for q in retained_queues() {
        if !free {
            // As before any command that is not free: a launch another thread has just made
            // there (the flag is set) joins no stretch the marker does not close.
            close(q.raw());
        }
        match cmd::marker(q.raw(), &[]) {
            Ok(m) => {
                let _ = cmd::flush(q.raw());
                noted(q.raw(), true, true, m.raw(), free);
                pre.push((registry::key(q.raw()), in_order(q.raw()), m));
            }
            Err(e) => {
                super::stop::stop_converting(&format!("a marker after the commands enqueued before the first annotated program could not be enqueued ({e})"));
                return true;
            }
        }
    }
    true
}

/// Every live queue of the application, each with a reference of its own, taken under the
/// registry's lock so that none is released under our feet.
fn retained_queues() -> Vec<Queue> {
    let mut out = Vec::new();
    registry::get().queues.retain_where(|_| true, |h| out.extend(Queue::retain(h as cl_command_queue)));
    out
}

/// An enqueue that touches no tracked buffer but may hold up its queue (a marker or barrier
/// with a wait list, an SVM command, a wait for events): run as given, and noted as the queue's
/// latest command with whether it is free. `call` takes the event pointer to pass (clayout's
/// own when the application asked for none: it needs to see the command end).
///
/// # Safety
/// `list` must point to `n` events when it is not null, as the OpenCL API requires.
pub unsafe fn forwarded(
    queue: cl_command_queue,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
    barrier: bool,
    call: impl FnOnce(*mut cl_event) -> cl_int,
) -> cl_int {
    if let Some(_fast) = fast(n) {
        return call(event);
    }
    let wait = user_wait(n, list);
    let free = wait.is_some_and(|w| free(queue, w));
    if !free {
        close(queue);
    }
    let mut own: cl_event = std::ptr::null_mut();
    let ev = if event.is_null() { &mut own as *mut cl_event } else { event };
    let r = call(ev);
    if r == CL_SUCCESS {
        let in_order = in_order(queue);
        crate::guard("queue order", || noted(queue, in_order, barrier, *ev, free));
    }
    drop(Event::from_raw(own));
    r
}

/// The application's wait list as a slice, or None when it is malformed (then the real library
/// must see it untouched, to give its own error).
///
/// # Safety
/// `list` must point to `n` events when it is not null, as the OpenCL API requires.
pub unsafe fn user_wait<'a>(n: cl_uint, list: *const cl_event) -> Option<&'a [cl_event]> {
    match (n, list.is_null()) {
        (0, true) => Some(&[]),
        (0, false) | (_, true) => None,
        (n, false) => Some(std::slice::from_raw_parts(list, n as usize)),
    }
}
