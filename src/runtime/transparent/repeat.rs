//! A launch that repeats its kernel object's last one, past the cost model and the buffers'
//! bookkeeping.
//!
//! A program of kernels of a few microseconds is bound by the host: every microsecond clayout
//! adds to a launch call shows in the run's time, and in ASTA it can eat what the copy gains.
//! Where the kernel's last launch ran the form of a decision the cost model keeps
//! (`cost::Steady`: a host-layout form on buffers in host layout, or the ASTA copy on buffers
//! in ASTA already), on an in-order queue, without a wait list, and joined its queue's open
//! stretch (`order::Stretch`; a launch that asks its event joins it too, and its repeats
//! enqueue with the event they ask), the next launch on the same queue, with the
//! same arguments (set again or not; as written, a scalar no extent reads may change) and
//! work sizes, needs nothing of what the launch path works out: nothing to convert, no
//! decision to make, no record of its own for the order of later conversions (the stretch's
//! marker, once enqueued, stands for it). It checks that this still holds, with its buffers
//! locked as any command locks them, enqueues the same form, and counts the launch where the
//! full path would: its buffers' epoch and balance, the kernel's decisions.
//!
//! The launch before the last is kept too: a program that swaps two buffers between launches (a
//! stencil's time steps) repeats each of the two. A copy's arguments are clayout's (the
//! application's and the copy's extra ones): its ticket keeps those its launch had, and gives
//! them to the copy again where the other launch gave it others.
//!
//! A kernel whose copies are still being built (a program's first run under `auto`, all of
//! whose launches may come before they are) runs as written, and its launches repeat the same
//! way while the build has not ended: they are counted in their buffers' epochs only, as the
//! full path counts them then (`runtime::launch::counted_while_building`). On PoCL such a
//! launch cost clayout about 5,500 instructions through the full path.
//!
//! A kernel without copies (no annotation, one it cannot be rewritten for, `CLAYOUT_REWRITE=0`)
//! repeats the same way (`Holds::Plain`): its launch through the DL runtime works out each
//! buffer's need and state, some 3,000 instructions on PoCL, which a program of many such
//! kernels beside a few annotated ones would pay at every launch. Nothing of it is counted but
//! the report's total; an annotated one's scalars must keep their values (its extents, an
//! inferred stride read them).
//!
//! Whatever differs (another queue or work size, an argument of another value, a buffer
//! converted or used by a command that is not free, the kernel's times changed, the copies'
//! build ended) takes the full path, which makes the next ticket.

use super::super::access::{BufferNeed, Few};
use super::super::buffers::{Buffer, BufferState};
use super::super::cost::tally::Tally;
use super::super::cost::{pace, Steady, Variant};
use super::super::dims::{Dims, Enqueue};
use super::super::lane::{self, Lane};
use super::super::order::{self, Stretch};
use super::super::state::{Current, Need};
use super::super::{worker, world};
use super::rewrite::RewrittenKernel;
use crate::registry::{key, ArgValue, Args, Handle, KernelInfo};
use opencl_sys::*;
use parking_lot::{Mutex, MutexGuard};
use smallvec::SmallVec;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

/// The most buffers a launch that repeats may use (a launch with more takes the full path).
const HELD: usize = 8;

/// Where a kernel object keeps its tickets (`KernelCopies::repeat`), the latest first: two (a
/// program that swaps its buffers between two launches, as a stencil's time steps do, repeats
/// each of the two).
pub type Slot = Mutex<SmallVec<[Ticket; KEPT]>>;

/// One of a kernel object's copies (`KernelCopies::private`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Staged,
    Asta,
    /// The ASTA copy built for whole tiles only.
    AstaFull,
}

/// Gives a copy the arguments a ticket kept again, with the ticket's token
/// (`PrivateKernel::give_again`): whether it took them all.
pub type GiveAgain<'a> = &'a dyn Fn(Which, &[Option<ArgValue>], u64) -> bool;

/// Makes what a copy's lane gives the copy again before each launch (`lane::Give`), from the
/// copy, the arguments a ticket's launch gave it and the ticket's token.
pub type LaneGive<'a> = &'a dyn Fn(Which, Vec<Option<ArgValue>>, u64) -> Option<lane::Give>;

/// Tokens of tickets that launch a copy (`PrivateKernel::give_again`), never 0.
static TOKENS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Tickets a kernel object keeps at most.
const KEPT: usize = 2;

/// What the next launch must match to repeat the last one, and what it then enqueues and counts.
#[derive(Debug)]
pub struct Ticket {
    queue: Handle,
    /// The application's arguments the last launch had. A list set again to the same values
    /// (programs that set every argument before every launch) is the same launch too, where
    /// every buffer argument is one of `buffers` and each handle still names the same buffer
    /// (not one created since at a released one's address).
    args: Args,
    /// `KernelInfo::args_set` when `args` was the list: the same count, no argument set since.
    args_set: u64,
    /// Every buffer argument of `args` is one of `buffers`.
    args_covered: bool,
    /// The scalar arguments that must keep their values (`TransparentPlan::reads`); the
    /// others may change between launches as written, whose kernel object the application
    /// sets itself (a copy's arguments are clayout's, set at its last full launch).
    reads: Option<Vec<usize>>,
    dims: Dims,
    /// The kernel object to enqueue (the application's, or one of its copies, whose arguments
    /// only this kernel object's launches set) and the work-group size it replaces, if it does.
    run: (Handle, Option<usize>),
    /// For a copy's launch: which copy, the arguments it had, and the ticket's token.
    copy: Option<(Which, Vec<Option<ArgValue>>, u64)>,
    form: Variant,
    holds: Holds,
    /// Every buffer the launch uses, in handle order, once, and the layout it must be in; not
    /// kept alive by the ticket.
    buffers: Few<(Handle, Weak<Buffer>, Current)>,
    /// The buffers each launch is counted in (`BufferView`): index in `buffers`, converted
    /// argument.
    counted: Few<(usize, u32)>,
    model_key: Option<Arc<str>>,
    items: u8,
    stretch: Weak<Stretch>,
    /// The application's `clFinish` calls by the last launch (`cost::pace::launched`).
    finishes: u64,
}

/// Why the launches like the last one run as it did.
#[derive(Debug)]
pub enum Holds {
    /// The kernel's model keeps decision `steady` for them; each counts `structures` in its
    /// buffers' epochs and balances as the decision does.
    Model { kernel: Arc<RewrittenKernel>, steady: Arc<Steady>, structures: f64 },
    /// The kernel's copies are being built by `build`: they run as written, and each is counted
    /// in the epochs of the buffers `counted` names (handle, converted argument); where the
    /// program's copies were declined, each forgoes what it would have gained with them
    /// (`cost::worth::Forgone::forgoes`, and the gain in ns).
    Building {
        build: worker::Ticket,
        counted: Few<(Handle, u32)>,
        forgoes: Option<(Arc<super::super::cost::worth::Forgone>, u64)>,
    },
    /// The kernel has no copies (no annotation, or none it can be rewritten for): it runs as
    /// written, each buffer in the layout its annotation asks (the host's where it has none),
    /// and nothing of its launches is counted.
    Plain,
}

/// The last launch, as the launch path saw it run.
pub struct Ran<'a> {
    pub queue: cl_command_queue,
    pub info: &'a KernelInfo,
    /// `TransparentPlan::reads` (none while the copies are built: any scalar may change then).
    pub reads: &'a [usize],
    pub needs: &'a [BufferNeed],
    pub dims: &'a Dims,
    pub run: (cl_kernel, Option<usize>),
    /// For a copy's launch: which copy, and the arguments it had (`PrivateKernel::args_now`).
    pub copy: Option<(Which, Vec<Option<ArgValue>>)>,
    pub form: Variant,
    pub holds: Holds,
    pub model_key: Option<Arc<str>>,
    pub items: u8,
}

/// Makes the ticket for the launches like `ran`, which ran its kept decision's form with no
/// wait list and no event asked and was enqueued: none if it did not join its queue's open
/// stretch (its queue executes out of order, or it was not free), a buffer is a sub-buffer
/// (whose bytes are its parent's), or one is passed for arguments that want it in different
/// layouts.
///
/// Kept as the latest, with the one before it where that launches differently (a ticket of the
/// same launch is replaced).
pub fn note(slot: &Slot, ran: Ran) {
    let mut slot = slot.lock();
    let Some(t) = ticket(ran) else {
        slot.clear();
        return;
    };
    let before = slot.drain(..).next().filter(|b| !b.same_launch(&t));
    slot.push(t);
    slot.extend(before);
}

fn ticket(ran: Ran) -> Option<Ticket> {
    let kept_form = match &ran.holds {
        Holds::Model { steady, .. } => steady.form() == ran.form,
        Holds::Building { .. } | Holds::Plain => ran.form == Variant::Written,
    };
    if !kept_form || ran.needs.iter().any(|n| n.buffer.parent.is_some()) {
        return None;
    }
    let stretch = order::open_stretch(ran.queue)?;
    // A kernel without copies written for a device layout runs on its buffers in it.
    let plain = matches!(ran.holds, Holds::Plain);
    let layout = |n: &BufferNeed| match (n.need, ran.form) {
        (Need::Device(d), Variant::Asta) => Current::Device(d),
        (Need::Device(d), _) if plain => Current::Device(d),
        _ => Current::Host,
    };
    let mut all: Few<(&Arc<Buffer>, Current)> = ran.needs.iter().map(|n| (&n.buffer, layout(n))).collect();
    all.sort_unstable_by_key(|(b, _)| b.handle);
    all.dedup_by(|a, b| a.0.handle == b.0.handle && a.1 == b.1);
    if all.len() > HELD || all.windows(2).any(|w| w[0].0.handle == w[1].0.handle) {
        return None;
    }
    // Numbered as `transparent::launch::decide` numbers its views: the kernel's converted
    // arguments in order, each buffer once (while the copies are built, the launch path has
    // numbered them so).
    let converted: Few<(Handle, u32)> = match &ran.holds {
        Holds::Model { .. } => {
            let devices = ran.needs.iter().filter(|n| matches!(n.need, Need::Device(_)));
            (0u32..).zip(devices).map(|(arg, n)| (n.buffer.handle, arg)).collect()
        }
        Holds::Building { counted, .. } => counted.clone(),
        Holds::Plain => Few::new(),
    };
    let mut counted: Few<(usize, u32)> = Few::new();
    for (h, arg) in converted {
        let at = all.iter().position(|(b, _)| b.handle == h)?;
        if !counted.iter().any(|&(i, _)| i == at) {
            counted.push((at, arg));
        }
    }
    let (args, args_set) = ran.info.args_now();
    let args_covered = args.iter().all(|a| match a {
        Some(ArgValue::Mem(h)) if *h != 0 => all.iter().any(|(b, _)| b.handle == *h),
        _ => true,
    });
    Some(Ticket {
        queue: key(ran.queue),
        args,
        args_set,
        args_covered,
        reads: (ran.form == Variant::Written).then(|| ran.reads.to_vec()),
        dims: *ran.dims,
        run: (key(ran.run.0), ran.run.1),
        copy: ran.copy.map(|(w, values)| (w, values, TOKENS.fetch_add(1, Ordering::Relaxed))),
        form: ran.form,
        holds: ran.holds,
        buffers: all.iter().map(|(b, c)| (b.handle, Arc::downgrade(b), *c)).collect(),
        counted,
        model_key: ran.model_key,
        items: ran.items,
        stretch: Arc::downgrade(&stretch),
        finishes: pace::finishes(),
    })
}

/// Enqueues a launch of the kernel object that repeats one of the launches whose tickets `slot`
/// holds, if it does (`n` events waited for, `event` asked; `give` gives a copy its arguments
/// again), and counts it in `decisions`, the kernel's: Some(what the enqueue returned), or None
/// when the launch must take the full path (nothing was enqueued).
#[allow(clippy::too_many_arguments)]
pub fn again<'a>(
    slot: &Slot,
    (give, lane_give): (GiveAgain, LaneGive),
    decisions: impl FnOnce() -> &'a crate::stats::KernelStats,
    info: &Arc<KernelInfo>,
    (kernel, queue): (cl_kernel, cl_command_queue),
    dims: &Dims,
    n: cl_uint,
    event: *mut cl_event,
    enqueue: &impl Enqueue,
) -> Option<cl_int> {
    // The application's event, if it asked one, is the launch's as the full path's would be.
    if n != 0 {
        return None;
    }
    // Before anything is checked: a lane opened by this launch sees every change made since.
    let world = world::now();
    let records = world::kernel_records();
    let mut slot = slot.lock();
    if slot.is_empty() {
        return None;
    }
    // What the enqueue returned, once it was called: a panic in the counting after it must not
    // send the launch to the full path, which would enqueue it again.
    let mut enqueued = None;
    let mut decisions = Some(decisions);
    let r = crate::guard("repeated launch", || {
        for i in 0..slot.len() {
            match matched(&mut slot[i], info, queue, dims) {
                Match::Other => continue,
                Match::Stale => {}
                Match::Same => {
                    let decisions = decisions.take().expect("one ticket repeats");
                    let lane = Opening { kernel, info, world, records, give: lane_give };
                    let enqueue = |k, local, n, list, _: *mut cl_event| enqueue(k, local, n, list, event);
                    if let Some(r) = repeat(&mut slot[i], give, decisions, queue, &enqueue, &mut enqueued, lane) {
                        return Some(r);
                    }
                }
            }
            // The launch it stood for cannot be repeated any more.
            slot.remove(i);
            return None;
        }
        None
    });
    match r {
        Some(r) => r,
        None => {
            slot.clear();
            enqueued
        }
    }
}

/// Whether a launch on `queue` with `dims` and `info`'s arguments now is ticket `t`'s.
enum Match {
    Same,
    /// Another launch of the kernel object: the ticket may still serve a later one.
    Other,
    /// The arguments were set again in a way the ticket cannot check.
    Stale,
}

fn matched(t: &mut Ticket, info: &KernelInfo, queue: cl_command_queue, dims: &Dims) -> Match {
    if t.queue != key(queue) || t.dims != *dims {
        return Match::Other;
    }
    // Read without the list's lock (the count changes with it, under it), cloned only when
    // an argument was set since.
    let set_since = info.args_set.load(Ordering::Acquire) != t.args_set;
    if set_since {
        // A kernel given an SVM pointer runs as written from then on (`runtime::launch`), even
        // once buffers replace it: NVIDIA refuses that launch, which a copy's would hide.
        if !t.args_covered || info.svm_seen.load(Ordering::Relaxed) {
            return Match::Stale;
        }
        let (args, args_set) = info.args_now();
        if !t.same_args(&args) {
            return Match::Other;
        }
        if !t.same_buffers() {
            return Match::Stale;
        }
        (t.args, t.args_set) = (args, args_set);
    }
    Match::Same
}

/// What the lane a repeated launch opens (`runtime::lane`) is for: the application's kernel
/// object and its facts, and the world before the launch's checks.
struct Opening<'a> {
    kernel: cl_kernel,
    info: &'a Arc<KernelInfo>,
    world: u64,
    /// `world::kernel_records()` by then.
    records: u64,
    /// What a copy's lane gives the copy again (`LaneGive`).
    give: LaneGive<'a>,
}

/// Enqueues ticket `t`'s launch, which the launch now matches (`matched`), if what it stood for
/// still holds, and opens this thread's lane for the launches like it.
fn repeat<'a>(
    t: &mut Ticket,
    give: GiveAgain,
    decisions: impl FnOnce() -> &'a crate::stats::KernelStats,
    queue: cl_command_queue,
    enqueue: &impl Enqueue,
    enqueued: &mut Option<cl_int>,
    opening: Opening,
) -> Option<cl_int> {
    let kept = match &t.holds {
        Holds::Model { kernel, steady, structures } => {
            // What launches timed by their events measured since: a time recorded for this
            // kernel drops its kept decision.
            // Not guarded apart: a panic here is `again`'s, before anything is enqueued (the
            // full path then takes the launch).
            super::super::cost::measure::harvest();
            let mut model = kernel.model.lock();
            if !model.steady.as_ref().is_some_and(|s| Arc::ptr_eq(s, steady)) {
                return None;
            }
            // Counted for the application's waits (`cost::pace`), enqueued or not: only whether
            // the kernel was launched since one counts.
            model.launches += 1;
            let dropped = model.steady.dropped();
            let counts = lane::ModelCounts {
                launched: model.lane_launched.clone(),
                dropped: dropped.clone(),
                dropped_at: dropped.load(Ordering::Acquire),
            };
            Some((steady, *structures, counts))
        }
        // Built (or dropped): the full path finds what became of the copies.
        Holds::Building { build, .. } if build.is_done() => return None,
        // Its launches as written have forgone what the copies' load costs: the full path
        // buys them (`program::buys_copies`).
        Holds::Building { forgoes: Some((forgone, gain)), .. } if forgone.forgoes(*gain) => return None,
        Holds::Building { .. } | Holds::Plain => None,
    };
    let stretch = t.stretch.upgrade()?;
    // Pushed one by one into inline vectors: collected through an iterator they cost some 55
    // of the path's 1,185 instructions on PoCL, as arrays of options (dropped whole, however
    // few buffers) some 40 of 1,073.
    let mut buffers: SmallVec<[Arc<Buffer>; HELD]> = SmallVec::new();
    for (_, weak, _) in &t.buffers {
        buffers.push(weak.upgrade()?);
    }
    // Locked in handle order, as every command locks them (`access`), until the launch is
    // enqueued: no conversion comes between what is checked here and the launch.
    let mut locked: SmallVec<[MutexGuard<BufferState>; HELD]> = SmallVec::new();
    for (b, (_, _, layout)) in buffers.iter().zip(&t.buffers) {
        let mut st = b.lock_unchanged();
        st.settle(b);
        // In the layout the form runs on with nothing pending (a conversion that has completed
        // is forgotten here, as the full path forgets it: the launches after the one that
        // brought the buffer where it is repeat it), defined, and used last on this queue by
        // the stretch the launch joins, which stands for it.
        let ready = st.current == *layout
            && super::super::convert::last_pending(&mut st).is_none()
            && st.defined
            && st.users.joined(&stretch);
        if !ready {
            return None;
        }
        locked.push(st);
    }
    if let Some((steady, _, _)) = &kept {
        let sent_back = t.counted.iter().any(|&(i, _)| locked[i].cost().reuse.sent_back);
        if sent_back != steady.sent_back() {
            return None;
        }
        if steady.while_gaining() {
            let balances: SmallVec<[f64; HELD]> =
                t.counted.iter().map(|&(i, _)| locked[i].cost().reuse.asta_gain_ns).collect();
            if !steady.balance_holds(balances.into_iter()) {
                return None;
            }
        }
    }
    // The stretch's marker, should another thread enqueue it now, comes after this launch. Its
    // queue's latest command is free with it: only free launches join a stretch, and a command
    // that is not free closes the queue's open stretch before it is enqueued (`order::close`),
    // so the launch is as free as the one the ticket was made for, without the queue's tail
    // looked up.
    let _open = stretch.held_open()?;
    if let Some((which, values, token)) = &t.copy {
        // The copy's arguments, where the other ticket's launch gave it others.
        if !give(*which, values, *token) {
            return None;
        }
    }
    let r = enqueue(t.run.0 as cl_kernel, t.run.1, 0, std::ptr::null(), std::ptr::null_mut());
    if r != CL_SUCCESS && t.form != Variant::Written {
        // Not enqueued: the full path falls back to the kernel as written.
        return None;
    }
    *enqueued = Some(r);
    for &(i, arg) in &t.counted {
        let cost = locked[i].cost();
        if let Some(k) = &t.model_key {
            cost.launched(k, arg, t.items);
        }
        if let Some((steady, structures, _)) = &kept {
            steady.count(*structures, cost);
        }
    }
    // A decision kept only while the balances stay positive checks them at every launch.
    let lane = r == CL_SUCCESS && !kept.as_ref().is_some_and(|(s, _, _)| s.while_gaining());
    // What the lane's launches count in the buffers, a tally of its own.
    let tally = lane.then(|| t.tally(kept.as_ref().map(|(s, m, _)| (*s, *m)))).flatten();
    if let Some(tally) = &tally {
        for &(i, arg) in &t.counted {
            locked[i].share(tally, arg);
        }
    }
    let gens: lane::Gens = buffers.iter().map(|b| (b.handle, b.gen.clone(), b.gen.now())).collect();
    drop(_open);
    drop(locked);
    if matches!(t.holds, Holds::Plain) {
        // Neither the cost model nor the report's decisions follow a kernel without copies.
        crate::stats::repeated_plain_launch();
        if lane {
            let counts = lane::Counts { tally: None, model: None, finishes: None, decisions: None, forgoes: None };
            lane::open(t.lane(queue, &opening, gens, counts));
        }
        return Some(r);
    }
    let finishes = pace::finishes();
    if finishes != t.finishes {
        t.finishes = finishes;
        pace::launched(queue);
    }
    let decisions = decisions();
    crate::stats::repeated_launch(decisions, t.form.form());
    if lane {
        let counts = lane::Counts {
            tally,
            model: kept.map(|(_, _, m)| m),
            finishes: Some(t.finishes),
            decisions: Some((decisions.clone(), t.form.form())),
            forgoes: match &t.holds {
                Holds::Building { forgoes, .. } => forgoes.clone(),
                _ => None,
            },
        };
        lane::open(t.lane(queue, &opening, gens, counts));
    }
    Some(r)
}

impl Ticket {
    /// A tally for a lane of its launches (`steady`: the kept decision they count by, with
    /// their structures), if they count anything in its buffers.
    fn tally(&self, steady: Option<(&Arc<Steady>, f64)>) -> Option<Arc<Tally>> {
        let keyed = self.model_key.clone().map(|k| (k, self.items));
        let steady = steady.map(|(s, m)| (s.clone(), m));
        let counts = !self.counted.is_empty() && (keyed.is_some() || steady.is_some());
        counts.then(|| Tally::new(keyed, steady))
    }

    /// The lane for the launches like the one it just repeated (`opening`'s), with `gens`, its
    /// buffers' generations while they were locked.
    fn lane(&self, queue: cl_command_queue, opening: &Opening, gens: lane::Gens, counts: lane::Counts) -> Lane {
        Lane::new(
            opening.kernel,
            queue,
            self.dims,
            self.run,
            self.form,
            (opening.world, opening.records),
            gens,
            opening.info,
            (self.args.clone(), self.args_set, self.free_scalars(), self.args_covered),
            self.copy.clone().and_then(|(which, values, token)| (opening.give)(which, values, token)),
            counts,
        )
    }

    /// The scalar arguments (of the first 64) that may change between its launches
    /// (`same_args`), as a mask.
    fn free_scalars(&self) -> u64 {
        let free = |(i, a): &(usize, &Option<ArgValue>)| *i < 64 && self.free_scalar(*i, a);
        self.args.iter().enumerate().filter(free).fold(0, |m, (i, _)| m | 1 << i)
    }

    /// Whether argument `i`, of value `a`, is a scalar that no part of the launch path reads,
    /// where the kernel as written runs (a time step, a seed).
    fn free_scalar(&self, i: usize, a: &Option<ArgValue>) -> bool {
        matches!(a, Some(ArgValue::Bytes(_))) && self.reads.as_ref().is_some_and(|r| r.binary_search(&i).is_err())
    }

    /// Whether arguments `now`, set since the last launch, make the same launch: the same
    /// values, but for scalars no part of the launch path reads, where the kernel as written
    /// runs (a time step, a seed).
    fn same_args(&self, now: &Args) -> bool {
        self.args.len() == now.len()
            && self
                .args
                .iter()
                .zip(now.iter())
                .enumerate()
                .all(|(i, (was, is))| was == is || self.free_scalar(i, was) && matches!(is, Some(ArgValue::Bytes(_))))
    }

    /// Whether `other` is the same launch: same queue, work sizes and arguments (as `same_args`
    /// compares them).
    fn same_launch(&self, other: &Ticket) -> bool {
        self.queue == other.queue && self.dims == other.dims && self.same_args(&other.args)
    }

    /// Whether each of its buffers' handles still names the buffer it did (a handle set again
    /// may be a new buffer's, created where a released one was).
    fn same_buffers(&self) -> bool {
        self.buffers.iter().all(|(h, b, _)| {
            super::super::buffers::get(*h).is_some_and(|now| std::ptr::eq(Arc::as_ptr(&now), b.as_ptr()))
        })
    }
}
