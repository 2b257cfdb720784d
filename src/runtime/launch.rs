//! Kernel launches: every buffer argument is brought to the layout the kernel's annotation
//! asks for (its device layout), or to its host layout when the kernel has no annotation for
//! it; the launch then waits for those conversions. A rewritten kernel's launch goes to the
//! transparent mode, which picks the form it runs in.
//!
//! One launch looks its kernel up once and each buffer argument once; the records travel with
//! the launch from then on.

use super::access::{conflicting, foreign_context, prepare, BufferNeed, Few, Foreign};
use super::cost::{SizeClass, Variant};
use super::dims::{Dims, Enqueue};
use super::order::user_wait;
use super::plan::KernelPlan;
use super::program::Purchase;
use super::state::{DeviceLayout, Need};
use super::transparent::rewrite::RewrittenKernel;
use super::transparent::timed::Timed;
use super::{buffers, kernels};
use crate::annotation::ExtentEnv;
use crate::layout::Shape;
use crate::registry::{key, ArgValue, KernelInfo};
use opencl_sys::*;
use std::sync::Arc;

/// Runs `enqueue(kernel, local, n, list)` after bringing the kernel's buffer arguments into the
/// layouts it needs. `enqueue` receives the kernel object to launch (the application's, or
/// one of its copies).
///
/// # Safety
/// `list` must point to `n` events when it is not null, as the OpenCL API requires.
pub unsafe fn launch(
    queue: cl_command_queue,
    kernel: cl_kernel,
    dims: Dims,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
    enqueue: impl Enqueue,
) -> cl_int {
    // A declined run left untracked (`untracked`): its launches are counted, and run on the
    // fast path until one needs commands tracked; the first of them are noted in the journal.
    let pre = if super::untracked::counting() {
        // One lookup of the kernel's record for the journal and the count in this call.
        let k = kernels::get(key(kernel));
        if let (Some(k), true) = (&k, n == 0 && super::untracked::journal_open()) {
            if let Some(r) = journaled(k, (queue, kernel), &dims, event, &enqueue) {
                return r;
            }
        }
        k.and_then(|k| crate::guard("untracked launch", || untracked_launch(k, &dims, n, list)).flatten())
    } else {
        None
    };
    let pre = match pre {
        Some(Untracked::HandOver(h)) => Some(*h),
        counted => {
            if counted.is_some() && crate::fault::inject("untracked-race") {
                race_with_untracked(kernel);
            }
            if let Some(_fast) = super::order::fast(n) {
                let r = enqueue(kernel, None, n, list, event);
                if let Some(Untracked::Ticket { k, ticket, opening: Some(opening), .. }) = &counted {
                    if r == CL_SUCCESS && n == 0 {
                        crate::guard("untracked lane", || {
                            untracked_lane(queue, kernel, k, ticket, dims, opening.clone())
                        });
                    }
                }
                return r;
            }
            // Another thread started the tracking since this launch was counted untracked: the
            // tracked path takes the count made (it would count the launch again), and counts
            // the launch in the statistics instead.
            counted.map(|c| HandedOver { counted: c.withdrawn(), bought: None, weighed: true })
        }
    };
    // The record is held, not its table's lock: the launch below enqueues, and what it runs
    // may look kernels up (a lane's opening does), which a lock held across it would deadlock
    // once another thread waits to create or release a kernel in the same shard.
    let Some(k) = kernels::get(key(kernel)) else { return enqueue(kernel, None, n, list, event) };
    let decisions = || k.copies.decisions(&k.facts.name);
    let give = |w, values: &[Option<ArgValue>], token| {
        k.copies.private(w).is_some_and(|p| p.give_again(values, token).is_ok())
    };
    let repeated = super::transparent::repeat::again(
        &k.copies.repeat,
        (&give, &lane_give(&k)),
        decisions,
        &k.facts,
        (kernel, queue),
        &dims,
        n,
        event,
        &enqueue,
    );
    if let Some(r) = repeated {
        return r;
    }
    // Under the cost model a launch does not wait for what clayout's worker is still building
    // for it: it runs as written until the copies are ready (a kernel written for a device
    // layout always waits, it has no such way out). Under `always` and `never` (and with
    // CLAYOUT_BUILD_AFTER=wait) the first launch waits, so that every launch follows the policy.
    // A launch that buys copies its run declined waits for them or has them loaded beside the
    // launches (`program::Purchase`).
    let cfg = crate::config::get();
    let (counted, bought, weighed) = pre.map_or((None, None, false), |p| (p.counted, p.bought, p.weighed));
    // A launch whose forgone gain was added up before the tracking started is not added again.
    let bought = bought.or_else(|| {
        if weighed {
            None
        } else {
            crate::guard("declined copies", || buys_copies(&k, &dims)).flatten()
        }
    });
    if bought == Some(Purchase::Beside) {
        if let Some(program) = k.program.as_ref() {
            crate::guard("copies loaded beside", || super::program::hurry_copies(program));
        }
    }
    let wait = cfg.policy != crate::config::Policy::Auto
        || cfg.build_after == crate::config::BuildAfter::Wait
        || bought == Some(Purchase::Wait);
    let planned = crate::guard("kernel plan", || k.plan(wait));
    if n == 0 {
        if let Some(in_flight) = first_launch(&planned).and_then(super::speculate::begin) {
            // Enqueued first, noted while the device runs it (runtime::speculate).
            let r = enqueue(kernel, None, n, list, event);
            if r == CL_SUCCESS {
                crate::guard("launch noted after its enqueue", || {
                    noted(queue, kernel, k, planned.clone(), dims, event)
                });
            }
            drop(in_flight);
            return r;
        }
    }
    launch_with(queue, kernel, k, planned, dims, n, list, event, enqueue, counted)
}

/// A launch of a declined run left untracked, noted in the journal (`untracked`'s comment) and
/// enqueued as written on the fast path: None where the journal does not take it (a kernel of
/// no untracked program, one whose time as written is not settled at the launch's size on a
/// queue that does not profile, or the launch that could buy the copies) or the fast path is
/// closed, and the caller takes the launch's usual path. Where the model may want the kernel
/// timed as written at its size, the launch is timed by its event (`journal_timing`).
fn journaled(
    k: &Arc<kernels::Kernel>,
    (queue, kernel): (cl_command_queue, cl_kernel),
    dims: &Dims,
    event: *mut cl_event,
    enqueue: &impl Enqueue,
) -> Option<cl_int> {
    let program = k.program.as_ref()?;
    if !program.untracked.untracked() {
        return None;
    }
    let items = super::transparent::launch::items_class(dims);
    let wanted = program.journal_takes(&k.facts.name, items, || super::cost::measure::profiles(queue))?;
    let fast = super::order::fast(0)?;
    // Timed by clayout's own event only: one of the application's held in the journal would
    // show in its reference count.
    let timing = if wanted > 0 && event.is_null() {
        crate::guard("cost model", || journal_timing(k, items, wanted)).flatten()
    } else {
        None
    };
    let mut own: cl_event = std::ptr::null_mut();
    let launch_event = if timing.is_some() { &mut own as *mut cl_event } else { event };
    let r = enqueue(kernel, None, 0, std::ptr::null(), launch_event);
    drop(fast);
    let timed = timing.and_then(|kernel| {
        let held = (r == CL_SUCCESS).then(|| crate::cl::Event::created_in(own, queue)).flatten();
        if held.is_none() {
            super::transparent::timed::dropped(&kernel);
        }
        Some((kernel, held?))
    });
    if r == CL_SUCCESS {
        crate::guard("journal", || {
            let (args, _) = k.facts.args_now();
            let at = super::cost::worth::clock_ns();
            let (k, dims) = (k.clone(), *dims);
            let count = Box::new(move || {
                if let Some((kernel, event)) = timed {
                    crate::guard("cost model", || journal_timed(&k, &kernel, event, &dims, &args));
                }
                replay_untracked(&k, &dims, &args, at)
            });
            if let Err(refused) = super::untracked::note(super::untracked::Noted::Launch(count)) {
                // Full since it was looked at: counted now, after what it holds.
                super::untracked::drain_journal();
                refused.replay();
            }
        });
    }
    Some(r)
}

/// Whether a launch of `k` that the journal takes is to be timed as written, by its event (its
/// time not settled at the launch's work-item bucket, on a queue that profiles): the copies'
/// model its timing goes to, with the timing counted in flight there until its time is had.
/// What the timing is of (the launch's size class and structures) is worked out when the
/// journal counts the launch (`journal_timed`), out of the application's call, where it was
/// most of what the timing cost a run's first launch. At most `wanted` in flight per kernel,
/// the timings its time still needs at that bucket (`Program::journal_takes`): a timing by its
/// event costs the driver's enqueue some 7 us on NVIDIA (H200: 13-16 us against 5-8), and the
/// journal's launches are counted after the first launches of their epochs, which alone the
/// tracked path times (`timed_while_building`): timing one where two were wanted left lbm's
/// time at 128^3 unsettled after a 100-launch run, and its next 30-launch run measured it
/// again instead of converting at its second launch.
fn journal_timing(k: &kernels::Kernel, items: u8, wanted: u32) -> Option<Arc<RewrittenKernel>> {
    if !timed_while_building(1) || super::suggest::active() {
        return None;
    }
    let (kernel, _) = k.building_plan()?;
    let mut model = kernel.model.lock();
    // Settled since the verdict (timings counted at a release of the application's mid-run).
    let settled = model.times.classes.iter().any(|(c, t)| c.items == items && !t.unsettled(Variant::Written));
    if model.disk_key.is_none() || model.untimed >= 3 || model.in_flight >= wanted || settled {
        return None;
    }
    model.in_flight += 1;
    Some(kernel.clone())
}

/// The timing of a launch the journal took (`journal_timing`), by its event `event`, with the
/// arguments it was launched with: recorded in `kernel`'s model once its time is had, where
/// the model still wants the kernel timed as written at its size class; otherwise dropped.
fn journal_timed(
    k: &kernels::Kernel,
    kernel: &Arc<RewrittenKernel>,
    event: crate::cl::Event,
    dims: &Dims,
    args: &[Option<ArgValue>],
) {
    let wanted = || {
        let (_, plan) = k.building_plan()?;
        let needs = needs_with(&k.facts, Some(plan), dims, &[], args).ok()?;
        let class = super::transparent::launch::size_class(&needs, dims);
        let m = super::transparent::launch::structures(&needs)?;
        let (key, ..) = copies_key(k)?;
        let model = kernel.model.lock();
        (model.disk_key.as_ref() == Some(&key) && model.times.at(class).unsettled(Variant::Written))
            .then_some((class, m))
    };
    match wanted() {
        Some((class, m)) => super::transparent::timed::by_kept_event(event, (kernel, &k.facts.name), class, m),
        None => super::transparent::timed::dropped(kernel),
    }
}

/// What `untracked_launch` counts of a launch noted in the journal (`journaled`), launched
/// with arguments `args` at `at` (`worth::clock_ns`): its buffers' epochs, what it forgoes, and
/// the statistics. The rest (handing over, buying, the ticket) needed the launch, and is the
/// next launch's counted in its call.
fn replay_untracked(k: &kernels::Kernel, dims: &Dims, args: &[Option<ArgValue>], at: u64) {
    if k.has_plan() {
        return;
    }
    if let Some((program, rewritten, items)) = declined(k, dims) {
        if let Some(gain) = super::program::forgone_per_launch(program, rewritten, items) {
            program.forgone.forgoes_at(gain, at);
        }
    }
    if counted_with(k, dims, Some(args)).is_some() {
        untracked_as_written(k);
    }
}

/// Test builds (fault site `untracked-race`): the tracking starts between a launch's count
/// untracked and its enqueue, as where another thread's launch starts it then.
#[cold]
fn race_with_untracked(kernel: cl_kernel) {
    if let Some(program) = kernels::get(key(kernel)).and_then(|k| k.program.clone()) {
        super::untracked::hand_over(&program.untracked, "injected: another thread started it");
    }
}

/// What a launch of a declined run left untracked found out (`untracked_launch`).
enum Untracked {
    /// It starts the tracking.
    HandOver(Box<HandedOver>),
    /// It was counted in its buffers' epochs and runs as written, untracked: its count, or the
    /// ticket (`kernels::UntrackedTicket`) it made (`first`) or repeated and its place in the
    /// epoch there.
    Counted(Arc<kernels::Kernel>, Box<Counted>),
    Ticket {
        k: Arc<kernels::Kernel>,
        ticket: Arc<kernels::UntrackedTicket>,
        nth: Option<u32>,
        first: bool,
        /// A repeat's: what the express lane it opens found before its checks.
        opening: Option<Opening>,
    },
}

/// What an untracked launch that repeats its kernel object's ticket found before its checks:
/// the world's generation and the kernel records' count (`world`), and the kernel's arguments
/// with their count of sets, for the express lane it opens once enqueued (`untracked_lane`).
#[derive(Clone)]
struct Opening {
    world: (u64, u64),
    args: crate::registry::Args,
    args_set: u64,
}

impl Untracked {
    /// The count an untracked launch made, for the tracked path now that the tracking started
    /// before its enqueue: None where it could not be had (its first buffer released since),
    /// and the tracked path counts it again. The statistics take it back (the tracked path
    /// counts it).
    #[cold]
    fn withdrawn(self) -> Option<Counted> {
        let written = super::cost::model::Variant::Written.form();
        match &self {
            Untracked::Counted(k, _) => {
                crate::stats::untracked_withdrawn(k.copies.decisions(&k.facts.name), false, written)
            }
            Untracked::Ticket { k, first, .. } => {
                crate::stats::untracked_withdrawn(k.copies.decisions(&k.facts.name), !first, written)
            }
            Untracked::HandOver(_) => {}
        }
        match self {
            Untracked::HandOver(h) => h.counted,
            Untracked::Counted(_, c) => Some(*c),
            Untracked::Ticket { ticket: t, nth, .. } => Some(Counted {
                key: t.key.clone(),
                nth: nth?,
                items: t.items,
                converted: t.converted.clone(),
                build: Some(t.build.clone()),
                indices: t.indices.clone(),
                handles: t.bound.clone(),
            }),
        }
    }
}

/// A launch of a declined run left untracked, that starts the tracking: what it found out first.
struct HandedOver {
    /// It was counted in its buffers' epochs (the tracked path must not count it again).
    counted: Option<Counted>,
    /// It bought the copies (`buys_copies`), and how it gets them.
    bought: Option<Purchase>,
    /// Whether `buys_copies` weighed it (its forgone gain is added up already).
    weighed: bool,
}

/// A launch while commands are untracked and a declined run counts its epochs
/// (`untracked::counting`): a launch of that run's program is counted in its buffers' epochs and
/// runs as written untracked (`Untracked::Counted`, `Ticket`), unless it buys the copies, the
/// model wants it timed (which takes the launch's events), or the copies are not merely held
/// back, when commands are tracked from now on and the launch takes the tracked path with what
/// was worked out here (`HandOver`). None: a launch of another program, with nothing to count.
fn untracked_launch(k: Arc<kernels::Kernel>, dims: &Dims, n: cl_uint, list: *const cl_event) -> Option<Untracked> {
    let hand_over = |program: &super::program::Program, why: &str, h: HandedOver| {
        super::untracked::hand_over(&program.untracked, why);
        Some(Untracked::HandOver(Box::new(h)))
    };
    let program = k.program.as_ref()?;
    if program.untracked.pending() {
        // Launched before the verdict on its build was made: not a way a program is run.
        let why = "a kernel was launched before the verdict on its program's build";
        return hand_over(program, why, HandedOver { counted: None, bought: None, weighed: false });
    }
    if !program.untracked.untracked() {
        // A kernel of another program, not annotated: nothing to count.
        return None;
    }
    // Counted in this call: after what the journal holds.
    super::untracked::drain_journal();
    match repeat_untracked(&k, program, dims) {
        Some(Ok((ticket, nth, opening))) => {
            crate::stats::repeated_launch(k.copies.decisions(&k.facts.name), Variant::Written.form());
            return Some(Untracked::Ticket { k, ticket, nth, first: false, opening });
        }
        Some(Err(h)) => return Some(Untracked::HandOver(h)),
        None => {}
    }
    if !held_back(program) {
        // Built, failed or never asked for: the tracked path knows what to make of them.
        let why = "its copies are no longer merely held back";
        return hand_over(program, why, HandedOver { counted: None, bought: None, weighed: false });
    }
    if k.has_plan() {
        // Planned already, with its copies held back: a kernel that has none.
        return None;
    }
    if let Some(how) = buys_copies(&k, dims) {
        let why = "the run has forgone what its copies' load costs";
        return hand_over(program, why, HandedOver { counted: None, bought: Some(how), weighed: true });
    }
    // Read before the buffers are: a buffer created or released since, the ticket made below
    // does not hold.
    let mems_seen = crate::registry::mems_changed();
    let Some(counted) = counted_while_building(&k, dims) else {
        // Not a rewritten kernel (it runs as written), or one whose inferred annotation waits
        // for its stride's value: the tracked path completes it at this launch.
        if program.dl().is_some_and(|dl| dl.waits_for_stride(&k.facts.name)) {
            let why = "a kernel's inferred annotation waits for this launch";
            return hand_over(program, why, HandedOver { counted: None, bought: None, weighed: true });
        }
        return None;
    };
    // SAFETY: `list` points to `n` events when not null, as the caller's contract says.
    let user = unsafe { super::order::user_wait(n, list) };
    let timing = user.map(|user| timing_while_building(&k, &counted.key, counted.nth, dims, user));
    if let Some(Ok(_)) = timing {
        // Timed through the launch's events, which the tracked path keeps.
        let why = "the model times a launch as written";
        return hand_over(program, why, HandedOver { counted: Some(counted), bought: None, weighed: true });
    }
    // Not timed at an early launch of its epoch: never at this size (`NotTimed::Henceforth` for
    // good), so the next launches on these buffers may repeat this one's count.
    let for_good = matches!(timing, Some(Err(NotTimed::Henceforth)));
    untracked_as_written(&k);
    let plan = (for_good && timed_while_building(counted.nth)).then(|| k.building_plan()).flatten();
    let (Some(build), Some((rewritten, _))) = (counted.build.clone(), plan) else {
        return Some(Untracked::Counted(k, Box::new(counted)));
    };
    let nth = Some(counted.nth);
    let ticket = Arc::new(kernels::UntrackedTicket {
        rewritten: rewritten.clone(),
        key: counted.key,
        items: counted.items,
        indices: counted.indices,
        bound: counted.handles,
        converted: counted.converted,
        mems: mems_seen,
        build,
    });
    {
        let mut slot = k.untracked.lock();
        // The one before, where it still holds for another binding.
        let before = slot.drain(..).next().filter(|b| ticket_valid(b) && b.bound != ticket.bound);
        slot.push(ticket.clone());
        slot.extend(before);
    }
    Some(Untracked::Ticket { k, ticket, nth, first: true, opening: None })
}

/// A launch counted untracked (`untracked_launch`) that runs as written, in the statistics: its
/// kernel object's first, or one that made no ticket.
fn untracked_as_written(k: &kernels::Kernel) {
    static WHY: super::cost::Reason = super::cost::Reason::Static("its copies were declined and not yet bought");
    crate::stats::untracked_launch(k.copies.decisions(&k.facts.name), Variant::Written.form(), &WHY);
}

/// The place in its epoch from which an untracked launch that repeats its ticket opens an
/// express lane for the next (`untracked_lane`).
const LANE_FROM: u32 = 3;

/// A ticket repeated (`repeat_untracked`), the launch's place in its epoch there, and what the
/// lane it opens found before the checks (None: it opens none).
type Repeat = (Arc<kernels::UntrackedTicket>, Option<u32>, Option<Opening>);

/// `untracked_launch` through the kernel object's ticket (`kernels::UntrackedTicket`): None
/// where it does not hold (it is dropped), else the ticket repeated and the launch's place in
/// its epoch, or the handover of a launch that buys the copies.
fn repeat_untracked(
    k: &kernels::Kernel,
    program: &super::program::Program,
    dims: &Dims,
) -> Option<Result<Repeat, Box<HandedOver>>> {
    let mut slot = k.untracked.lock();
    slot.retain(|t| ticket_valid(t));
    let items = super::transparent::launch::items_class(dims);
    let t = {
        let args = k.facts.args.lock();
        slot.iter().find(|t| ticket_binds(t, args.as_slice(), items))?
    };
    if let Some(how) = super::program::buys_copies(program, &t.rewritten, super::transparent::launch::work_items(dims))
    {
        slot.clear();
        drop(slot);
        super::untracked::hand_over(&program.untracked, "the run has forgone what its copies' load costs");
        return Some(Err(Box::new(HandedOver { counted: None, bought: Some(how), weighed: true })));
    }
    let t = t.clone();
    drop(slot);
    let mut nth = None;
    for &(h, arg) in &t.converted {
        if let Some(buffer) = buffers::get(h) {
            // A count changes nothing an express lane checks: the other kernels' lanes on the
            // buffer stay open (particles' three kernels share theirs).
            let n = buffer.lock_unchanged().cost().launched(&t.key, arg, t.items);
            nth = nth.or((arg == 0).then_some(n));
        }
    }
    // From an epoch's third launch on: a lane costs its opening, code that a run of one or two
    // launches an epoch would meet for nothing. What the lane checks is read first, and the
    // ticket checked again: a change since the checks above is seen here, a later one by the
    // lane.
    let opening = nth.is_none_or(|n| n >= LANE_FROM).then(|| {
        let world = (super::world::now(), super::world::kernel_records());
        let (args, args_set) = k.facts.args_now();
        ticket_holds(&t, args.as_slice(), items).then_some(Opening { world, args, args_set })
    });
    Some(Ok((t, nth, opening.flatten())))
}

/// What the lane of a copy of `kernel` gives the copy again before each launch
/// (`lane::Give`, `PrivateKernel::give_again`: nothing is set where the ticket whose token it
/// holds gave the arguments last). The kernel's record is not kept alive by the lane: a kernel
/// released goes with its copies.
fn lane_give(
    kernel: &Arc<kernels::Kernel>,
) -> impl Fn(super::transparent::repeat::Which, Vec<Option<ArgValue>>, u64) -> Option<super::lane::Give> + '_ {
    move |which, values, token| {
        if crate::fault::inject("slow-lane-give") {
            // Widens the window in which another thread creates or releases kernels.
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let k = Arc::downgrade(kernel);
        Some(Box::new(move || {
            let Some(k) = k.upgrade() else { return false };
            k.copies.private(which).is_some_and(|p| p.give_again(&values, token).is_ok())
        }))
    }
}

/// Whether an untracked launch of `items` (its size bucket) with arguments `args` repeats ticket
/// `t`: it holds (`ticket_valid`) and binds as the launch does (`ticket_binds`).
fn ticket_holds(t: &kernels::UntrackedTicket, args: &[Option<ArgValue>], items: u8) -> bool {
    ticket_valid(t) && ticket_binds(t, args, items)
}

/// Whether ticket `t` may still be repeated: the copies' build still held back, no buffer
/// created or released since.
fn ticket_valid(t: &kernels::UntrackedTicket) -> bool {
    !t.build.is_done() && !t.build.dropped() && t.mems == crate::registry::mems_changed()
}

/// Whether a launch of `items` with arguments `args` binds as ticket `t`'s did: the same
/// buffers at the rewritten parameters.
fn ticket_binds(t: &kernels::UntrackedTicket, args: &[Option<ArgValue>], items: u8) -> bool {
    t.items == items
        && t.indices.iter().zip(&t.bound).all(|(&i, &h)| match args.get(i) {
            Some(Some(ArgValue::Mem(now))) => *now == h,
            _ => h == 0,
        })
}

/// Opens this thread's express lane (`lane`) for the launches like the one just enqueued on the
/// fast path, which repeated its kernel object's untracked ticket `t`: they count in the ticket's
/// buffers through a tally, add what they forgo towards the copies' purchase, and close on any
/// change (an argument but a scalar, a buffer's state, the world's: the tracking started, the
/// copies' build ended, a kernel record went).
///
/// Why: a declined run's repeated launch looked up its kernel, locked its ticket, its arguments
/// and each buffer: some 1,000 instructions of clayout's on PoCL against 390 through a lane
/// (`scripts/declined-launches.sh`: particles' 600 launches), and on the H200 0.30 against 0.21
/// us of clayout's own time a launch in blackscholes' declined 1000-launch run at 262,144 options,
/// a loop the host sets the pace of (docs/results.md, "Declined runs through the express lane").
fn untracked_lane(
    queue: cl_command_queue,
    kernel: cl_kernel,
    k: &Arc<kernels::Kernel>,
    t: &kernels::UntrackedTicket,
    dims: Dims,
    o: Opening,
) {
    use super::cost::tally::Tally;
    let tally = (!t.converted.is_empty()).then(|| Tally::new(Some((t.key.clone(), t.items)), None));
    let mut gens = super::lane::Gens::new();
    let mut seen: Few<crate::registry::Handle> = Few::new();
    for &h in &t.bound {
        if h == 0 || seen.contains(&h) {
            continue;
        }
        seen.push(h);
        let Some(b) = buffers::get(h) else { return };
        let mut st = b.lock_unchanged();
        if let (Some(tally), Some(&(_, arg))) = (&tally, t.converted.iter().find(|(c, _)| *c == h)) {
            st.share(tally, arg);
        }
        gens.push((h, b.gen.clone(), b.gen.now()));
    }
    // Every scalar may change between the launches: the ticket reads none (its count's size
    // bucket is the work-items').
    let free = o.args.iter().take(64).enumerate().fold(0u64, |m, (i, a)| {
        if matches!(a, Some(ArgValue::Bytes(_))) {
            m | 1 << i
        } else {
            m
        }
    });
    let forgoes = forgoes(k, &dims);
    let counts = super::lane::Counts {
        tally,
        model: None,
        finishes: None,
        decisions: Some((k.copies.decisions(&k.facts.name).clone(), Variant::Written.form())),
        forgoes,
    };
    super::lane::open(super::lane::Lane::new(
        kernel,
        queue,
        dims,
        (key(kernel), None),
        Variant::Written,
        o.world,
        gens,
        &k.facts,
        // Every buffer counted is one whose generation the lane holds; the others' handles
        // count for nothing here.
        (o.args, o.args_set, free, true),
        None,
        counts,
    ));
}

/// Whether `program`'s copies are being built or held back on clayout's worker.
fn held_back(program: &super::program::Program) -> bool {
    let Some(dl) = program.dl() else { return false };
    let Some(rewrites) = dl.rewrites.as_ref() else { return false };
    let built_with = program.facts.build_options.lock();
    matches!(rewrites.lookup(built_with.as_deref().unwrap_or("")), super::transparent::private::Private::Building(_))
}

/// Whether this launch buys copies its program declined to load inside its build, the run
/// having turned out long enough to pay for them, and how (`program::buys_copies`).
fn buys_copies(k: &kernels::Kernel, dims: &Dims) -> Option<Purchase> {
    if k.has_plan() {
        return None;
    }
    let (program, rewritten, items) = declined(k, dims)?;
    super::program::buys_copies(program, rewritten, items)
}

/// What each launch like this one of `k` forgoes by running as written, with the sum of its
/// program's declined run that the launches add it to (`worth::Forgone`), for the launches that
/// repeat it: None where no launch buys the copies.
fn forgoes(k: &kernels::Kernel, dims: &Dims) -> Option<(Arc<super::cost::worth::Forgone>, u64)> {
    let (program, rewritten, items) = declined(k, dims)?;
    Some((program.forgone.clone(), super::program::forgone_per_launch(program, rewritten, items)?))
}

/// For a launch of `k` whose program's copies were declined and not yet waited for: the
/// program, the kernel's copies and the launch's work-items.
fn declined<'a>(
    k: &'a kernels::Kernel,
    dims: &Dims,
) -> Option<(&'a Arc<super::program::Program>, &'a RewrittenKernel, u64)> {
    let program = k.program.as_ref().filter(|p| p.forgone.declined.load(std::sync::atomic::Ordering::Relaxed))?;
    let (rewritten, _) = k.building_plan()?;
    Some((program, rewritten, super::transparent::launch::work_items(dims)))
}

/// The flag a rewritten kernel's first launch takes to be enqueued before clayout's launch path
/// looks at it (runtime::speculate), when its copies are ready and its launches as written need
/// nothing converted.
fn first_launch(planned: &Option<Option<super::plan::PlanResult>>) -> Option<&std::sync::atomic::AtomicBool> {
    let Some(Some(Ok(Some(plan)))) = planned else { return None };
    let t = plan.transparent.as_ref().filter(|_| plan.fixed.is_empty())?;
    Some(&t.kernel.speculate)
}

/// A launch already enqueued as written, with no wait list, and `event` (the application's
/// event pointer) as the real call wrote it: clayout's launch path noting it, every buffer in
/// host layout, with an enqueue that enqueues nothing (or, where clayout wants an event of its
/// own to order later conversions after the launch, a marker after it).
fn noted(
    queue: cl_command_queue,
    kernel: cl_kernel,
    k: Arc<kernels::Kernel>,
    planned: Option<Option<super::plan::PlanResult>>,
    dims: Dims,
    event: *mut cl_event,
) {
    let name = k.facts.name.clone();
    let already = move |_k: cl_kernel, _local: Option<usize>, n: cl_uint, _l: *const cl_event, ev: *mut cl_event| {
        if n != 0 {
            crate::log::error(&format!(
                "kernel {name}: its first launch, enqueued before clayout looked at it, should have waited for {n} command(s) of clayout's"
            ));
        }
        if ev.is_null() || ev == event {
            return CL_SUCCESS;
        }
        // With no wait list, the marker completes after every command enqueued before it.
        let own = crate::cl::cmd::marker(queue, &[]).map_err(|e| {
            // Nothing to stand for the launch: it is waited for, so that later conversions
            // need not wait for it, where that cannot hang.
            let why = format!("a marker could not be enqueued after a first launch ({e})");
            super::order::finished_instead(Some(queue), super::order::free(queue, &[]), &why);
        });
        // SAFETY: `ev` is the pointer the launch path passed for the launch's event.
        unsafe { *ev = own.map_or(std::ptr::null_mut(), |e| e.into_raw()) };
        CL_SUCCESS
    };
    super::speculate::noting_with(|| {
        // SAFETY: no wait list.
        unsafe { launch_with(queue, kernel, k, planned, dims, 0, std::ptr::null(), event, already, None) }
    });
}

/// [`launch`] past its kernel's record and plan (`planned`: `Kernel::plan`, None when it
/// panicked).
///
/// # Safety
/// As for [`launch`].
#[allow(clippy::too_many_arguments)]
unsafe fn launch_with(
    queue: cl_command_queue,
    kernel: cl_kernel,
    k: Arc<kernels::Kernel>,
    planned: Option<Option<super::plan::PlanResult>>,
    dims: Dims,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
    enqueue: impl Enqueue,
    counted: Option<Counted>,
) -> cl_int {
    // While the copies are built: the times key and this launch's place in its epoch.
    let mut building = None;
    let plan = match planned {
        Some(Some(Ok(plan))) => plan,
        Some(None) => {
            crate::stats::transparent_launch(false);
            // Every launch until the copies are ready comes here: no text is made unless logged.
            if crate::log::enabled(crate::config::LogLevel::Debug) {
                crate::log::once(
                    crate::config::LogLevel::Debug,
                    &format!("{} still being built", k.facts.name),
                    &format!("kernel {}: runs as written until its copies are built", k.facts.name),
                );
            }
            let written = super::cost::model::Variant::Written.form();
            let why = super::cost::Reason::Static("its copies are still being built");
            crate::stats::decision(k.copies.decisions(&k.facts.name), written, &why);
            building = counted.or_else(|| crate::guard("cost model", || counted_while_building(&k, &dims)).flatten());
            None
        }
        Some(Some(Err(why))) => return cannot_run(&k.facts, &why),
        None => return cannot_run(&k.facts, "internal error while planning its conversions"),
    };
    // An annotated kernel's scalars may change what its launch needs (its extents, an inferred
    // stride): a launch that repeats it must have all of them unchanged.
    let annotated = plan.is_some();
    let plan = match plan {
        Some(p) if p.transparent.is_some() && k.facts.svm_seen.load(std::sync::atomic::Ordering::Relaxed) => {
            as_written_once(&k.facts, "an argument of it was given an SVM pointer");
            None
        }
        p => p,
    };
    let plan = plan.filter(|p| p.fixed.is_empty() || fixed_hold(&k, p));
    let Some(user) = user_wait(n, list) else { return enqueue(kernel, None, n, list, event) };
    let Some(profiling) = crate::registry::get().queues.with(key(queue), |q| q.profiling) else {
        // Not a queue of the application's: the real library gives the launch its error.
        return enqueue(kernel, None, n, list, event);
    };
    if plan.is_some() && !k.all_args_set() {
        // The real library refuses the launch (CL_INVALID_KERNEL_ARGS): let it, untouched.
        return enqueue(kernel, None, n, list, event);
    }
    let needs = match crate::guard("launch plan", || needs(&k.facts, plan.as_deref(), &dims, user)) {
        Some(Ok(needs)) => needs,
        Some(Err(why)) => return cannot_run(&k.facts, &why),
        None => return cannot_run(&k.facts, "internal error while planning its conversions"),
    };
    match foreign_context(queue, &needs) {
        Some(Foreign::Forward) => return enqueue(kernel, None, n, list, event),
        Some(Foreign::Fail) => return CL_INVALID_CONTEXT,
        None => {}
    }
    if let Some(t) = plan.as_ref().and_then(|p| p.transparent.as_ref()) {
        return super::transparent::launch::launch(
            queue, profiling, kernel, &k.facts, &k.copies, t, &needs, &dims, user, event, enqueue,
        );
    }
    if let Some(why) = conflicting(&needs) {
        if needs.iter().any(|n| n.must) {
            return cannot_run(&k.facts, &why);
        }
    }
    let timing = building.as_ref().map(|b| {
        crate::guard("cost model", || timing_while_building(&k, &b.key, b.nth, &dims, user))
            .unwrap_or(Err(NotTimed::Now))
    });
    // Once the model will time none of them, the launches like this one repeat it while the
    // copies are built (`transparent::repeat`).
    let repeatable = n == 0 && !super::suggest::active();
    // A kernel with no copies at all repeats too (`Holds::Plain`).
    let plain = repeatable && building.is_none();
    let repeats = building.filter(|b| {
        repeatable
            && matches!(timing, Some(Err(NotTimed::Henceforth)))
            && crate::guard("repeated launch", || makes_ticket(b)).unwrap_or(false)
    });
    let timing = timing.and_then(Result::ok);
    // The form's start, for its timing (`Timed::host_start`); the clock is read on this path only.
    let started = timing.as_ref().map(|_| std::time::Instant::now());
    match crate::guard("launch conversions", || prepare(queue, &needs, user)) {
        Some(Ok(w)) => match timing.zip(started) {
            None => {
                let r = w.run(queue, event, |n, l, ev| enqueue(kernel, None, n, l, ev), |r| *r == CL_SUCCESS);
                if r == CL_SUCCESS {
                    if let Some(b) = repeats {
                        crate::guard("repeated launch", || repeats_while_building(queue, kernel, &k, b, &needs, &dims));
                    } else if plain {
                        crate::guard("repeated launch", || repeats_plain(queue, kernel, &k, annotated, &needs, &dims));
                    }
                }
                r
            }
            Some((t, started)) => {
                // Events of clayout's own to wait for (a buffer another kernel's copy left in
                // ASTA, converted back): the application's wait would hold them too.
                let converts = w.len() as usize > user.len();
                let mut timed = Timed::new(queue, true, t.more_coming, converts, user, Some(started));
                let event = timed.event(event);
                let timed_enqueue = timed.wrap(&enqueue);
                let r = w.run(queue, event, |n, l, ev| timed_enqueue(kernel, None, n, l, ev), |r| *r == CL_SUCCESS);
                drop(timed_enqueue);
                timed.finish(r == CL_SUCCESS, &t.kernel, &k.facts.name, t.class, Variant::Written, t.m);
                r
            }
        },
        Some(Err(e)) => e,
        None => CL_OUT_OF_RESOURCES,
    }
}

/// Notes the launch as written just enqueued, while the kernel's copies are built (`b`), as the
/// one the next launches of its kernel object repeat until the build ends.
fn repeats_while_building(
    queue: cl_command_queue,
    kernel: cl_kernel,
    k: &kernels::Kernel,
    b: Counted,
    needs: &[BufferNeed],
    dims: &Dims,
) {
    let Some(build) = b.build else { return };
    let forgoes = forgoes(k, dims);
    let ran = super::transparent::repeat::Ran {
        queue,
        info: &k.facts,
        reads: &[],
        needs,
        dims,
        run: (kernel, None),
        copy: None,
        form: Variant::Written,
        holds: super::transparent::repeat::Holds::Building { build, counted: b.converted, forgoes },
        model_key: Some(b.key),
        items: b.items,
    };
    super::transparent::repeat::note(&k.copies.repeat, ran);
}

/// Notes the launch just enqueued, of a kernel that has no copies to run (no annotation, one it
/// cannot be rewritten for, `CLAYOUT_REWRITE=0`), as one the next launches of its kernel object
/// repeat: they need what it needed, unless the scalars of an `annotated` kernel change.
fn repeats_plain(
    queue: cl_command_queue,
    kernel: cl_kernel,
    k: &kernels::Kernel,
    annotated: bool,
    needs: &[BufferNeed],
    dims: &Dims,
) {
    let reads: Vec<usize> = if annotated { (0..k.facts.args.lock().len()).collect() } else { Vec::new() };
    let ran = super::transparent::repeat::Ran {
        queue,
        info: &k.facts,
        reads: &reads,
        needs,
        dims,
        run: (kernel, None),
        copy: None,
        form: Variant::Written,
        holds: super::transparent::repeat::Holds::Plain,
        model_key: None,
        items: 0,
    };
    super::transparent::repeat::note(&k.copies.repeat, ran);
}

/// Whether the model may time the `nth` launch of an epoch made while the copies are built
/// (`timing_while_building`).
fn timed_while_building(nth: u32) -> bool {
    nth <= 2 * super::cost::model::TIMED_LAUNCHES && crate::config::get().policy == crate::config::Policy::Auto
}

/// Whether a launch as written that the model will not time, while its kernel's copies are
/// built (`NotTimed::Henceforth`), is to be the one the next launches of its kernel object
/// repeat. A ticket, and the first repeat of a process, run code that runs nowhere else: on the
/// H100 the launch that made the first ticket took 5 us more, and the first repeat 6.6 us
/// against 3.7 for the whole launch path, so a ticket that fewer than two launches repeat costs
/// more than it saves, in the short runs where a few microseconds count most. So the kernel's
/// past epochs at this size say how many launches are left (the shortest that got this far,
/// `Lengths::remaining`); without any, a second launch says a loop. Past the launches the model
/// may time, a launch makes one as before.
fn makes_ticket(b: &Counted) -> bool {
    ticket_pays(b.nth, timed_while_building(b.nth), || super::cost::lengths::remaining(&b.key, 0, b.nth, b.items))
}

/// `makes_ticket` for the `nth` launch of an epoch, `early` while the model may still time
/// launches of it, with `left` the launches its history says are left.
fn ticket_pays(nth: u32, early: bool, left: impl FnOnce() -> Option<u32>) -> bool {
    if !early {
        return true;
    }
    match left() {
        Some(left) => left >= TICKET_PAYS,
        None => nth >= 2,
    }
}

/// The launches left in an epoch, this one included, from which a ticket pays (`makes_ticket`).
const TICKET_PAYS: u32 = 3;

/// Why a launch as written, made while the kernel's copies are built, is not timed.
#[derive(Debug, PartialEq)]
enum NotTimed {
    /// A later launch of the epoch may be: this one's timings in flight come back first, or
    /// what kept it untimed (a failure to plan it) may not hold then.
    Now,
    /// Nor is any later launch of this epoch: past the launches the model times, the kernel's
    /// time as written settled at this size, or the model not timing it at all. The next
    /// launches may repeat it (`makes_ticket`); before, they took the whole launch path up to
    /// the fifth of the epoch, timed or not (7,000-8,000 instructions each on PoCL past the
    /// first of each kernel, against 600 for a repeat).
    Henceforth,
}

/// A launch as written, while the kernel's copies are built, that the cost model wants timed.
struct WhileBuilding {
    kernel: Arc<RewrittenKernel>,
    class: SizeClass,
    m: f64,
    more_coming: bool,
}

/// Whether this launch as written, made while the kernel's copies are built (the first run of a
/// program, under `auto`), is to be timed: so that the next run knows the kernel's time as
/// written at this size, and can convert at its first launch where its history promises a long
/// epoch, rather than time it first (blackscholes' second 30-launch run on the H100 spent its
/// first two launches so). Timed under the plan the copies will have (the same structures and
/// size class), into the model the copies' launches read, loaded now under the key their times
/// will have; at most as often as the model times a form.
fn timing_while_building(
    k: &kernels::Kernel,
    key: &Arc<str>,
    nth: u32,
    dims: &Dims,
    user: &[cl_event],
) -> Result<WhileBuilding, NotTimed> {
    // A form is timed on the first launches that meet it: past them, a long first run pays
    // nothing more for this at each launch.
    if !timed_while_building(nth) || super::suggest::active() {
        return Err(NotTimed::Henceforth);
    }
    // Copies not loaded for their worth (`cost::worth`) are timed as written all the same while
    // that time is unsettled: it bounds what they gain at this size in the next verdicts, and the
    // run that loads them does not spend its first launches on it (blackscholes' first 30-launch
    // run at 2^25 on the H100 measured as written and converted none, its 100-launch run having
    // been declined untimed).
    let (kernel, plan) = k.building_plan().ok_or(NotTimed::Henceforth)?;
    let needs = needs(&k.facts, Some(plan), dims, user).map_err(|_| NotTimed::Now)?;
    let class = super::transparent::launch::size_class(&needs, dims);
    let m = super::transparent::launch::structures(&needs).ok_or(NotTimed::Now)?;
    let mut model = kernel.model.lock();
    if model.disk_key.is_none() {
        // The copies' tile is not known yet (0); the build sets it (`KernelModel::load_read`).
        model.load(key, 0);
    }
    // A time settles for good (`Times::record`), and launches that could not be timed only
    // add up.
    let times = model.times.at(class);
    if model.disk_key.as_ref() != Some(key) || !times.unsettled(Variant::Written) || model.untimed >= 3 {
        return Err(NotTimed::Henceforth);
    }
    if model.in_flight >= super::cost::model::TIMED_LAUNCHES {
        return Err(NotTimed::Now);
    }
    let more_coming =
        model.times.wait_missed || super::cost::lengths::remaining(key, 0, nth, class.items).is_some_and(|n| n >= 2);
    Ok(WhileBuilding { kernel: kernel.clone(), class, m, more_coming })
}

/// Counts a launch that runs as written because its kernel's copies are still being built
/// towards how long the program keeps its buffers (`cost::lengths`), as the cost model counts
/// every other launch: otherwise a program's first run, whose launches all come before its
/// copies are built, taught the next run nothing, and only its third converted (blackscholes'
/// 30-launch runs on the H100, docs/cost-model.md). The kernel's buffer arguments are taken in
/// the order the cost model numbers them: its rewritten parameters by argument index.
fn counted_while_building(k: &kernels::Kernel, dims: &Dims) -> Option<Counted> {
    counted_with(k, dims, None)
}

/// `counted_while_building`, with the arguments the launch had (`args`, where it was noted in
/// the untracked run's journal) or has now (None).
fn counted_with(k: &kernels::Kernel, dims: &Dims, args: Option<&[Option<ArgValue>]>) -> Option<Counted> {
    let items = super::transparent::launch::items_class(dims);
    let (key, build, indices) = copies_key(k)?;
    let bound = |args: &[Option<ArgValue>]| -> Few<_> {
        indices
            .iter()
            .map(|&i| match args.get(i) {
                Some(Some(ArgValue::Mem(h))) => *h,
                _ => 0,
            })
            .collect()
    };
    let handles = match args {
        Some(args) => bound(args),
        None => bound(&k.facts.args.lock()),
    };
    let mut first = None;
    let mut converted = Few::new();
    for (arg, &h) in (0u32..).zip(&handles) {
        // A buffer bound to two of them counts once, at the first (as the cost model does).
        if h == 0 || handles[..arg as usize].contains(&h) {
            continue;
        }
        if let Some(buffer) = buffers::get(h) {
            let n = buffer.lock().cost().launched(&key, arg, items);
            first = first.or((arg == 0).then_some(n));
            converted.push((h, arg));
        }
    }
    Some(Counted { key, nth: first?, items, converted, build, indices, handles })
}

/// The key of the records of kernel `k`'s copies, their build while it runs, and the kernel's
/// rewritten parameters' argument indices, in order.
fn copies_key(k: &kernels::Kernel) -> Option<(Arc<str>, Option<super::worker::Ticket>, Few<usize>)> {
    let program = k.program.as_ref()?;
    let dl = program.dl()?;
    let rewrites = dl.rewrites.as_ref()?;
    let rewritten = rewrites.rewritten.kernels.get(&k.facts.name)?;
    let built_with = program.facts.build_options.lock();
    let options = built_with.as_deref().unwrap_or("");
    let key = rewrites.times_key_of(options, &rewritten.private_name)?;
    let build = match rewrites.lookup(options) {
        super::transparent::private::Private::Building(t) => Some(t),
        _ => None,
    };
    drop(built_with);
    let mut indices: Few<usize> = rewritten.indices.values().copied().collect();
    indices.sort_unstable();
    Some((key, build, indices))
}

/// A launch counted while its kernel's copies are built (`counted_while_building`).
struct Counted {
    /// The key of the copies' records.
    key: Arc<str>,
    /// Its place in the epoch of the buffer at the first converted argument.
    nth: u32,
    items: u8,
    /// The buffers it was counted in, each once: handle, converted argument.
    converted: Few<(crate::registry::Handle, u32)>,
    /// The copies' build, while it runs.
    build: Option<super::worker::Ticket>,
    /// The rewritten parameters' argument indices, in order, and the handles bound there.
    indices: Few<usize>,
    handles: Few<crate::registry::Handle>,
}

/// Whether the scalar arguments an inferred annotation assumed (its stride) have the values it
/// assumed at this launch; if not, the launch runs as written, said once per kernel and value.
fn fixed_hold(k: &kernels::Kernel, plan: &KernelPlan) -> bool {
    let info = &k.facts;
    let args = info.args.lock();
    let hold = plan.fixed.iter().all(|(a, want)| {
        let got = match args.get(a.arg_index as usize) {
            Some(Some(ArgValue::Bytes(b))) => a.int_type.decode(b).ok(),
            _ => None,
        };
        if let Some(v) = got {
            super::suggest::stride_seen(&info.name, &a.name, v);
        }
        if got == Some(*want) {
            return true;
        }
        let what = format!("kernel {}", info.name);
        let shown = got.map_or("an unreadable value".to_string(), |v| v.to_string());
        crate::log::once(
            crate::config::LogLevel::Info,
            &format!("{what}: {} = {shown}", a.name),
            &format!(
                "{what}: its inferred annotation assumed {} = {want}, this launch has {shown}; it runs as written",
                a.name
            ),
        );
        false
    });
    if !hold {
        // The next run of the program prepares its copy for this launch's values.
        let now: std::collections::BTreeMap<String, u64> = plan
            .fixed
            .iter()
            .filter_map(|(a, _)| match args.get(a.arg_index as usize) {
                Some(Some(ArgValue::Bytes(b))) => Some((a.name.clone(), a.int_type.decode(b).ok()?)),
                _ => None,
            })
            .collect();
        if let (Some(p), true) = (&k.program, now.len() == plan.fixed.len()) {
            super::program::remember_strides(p, &info.name, &now);
        }
    }
    hold
}

/// A kernel written for a device layout that clayout cannot give it: it cannot run on
/// host-layout data, so the launch fails as one that cannot run, never with wrong data.
fn cannot_run(info: &KernelInfo, why: &str) -> cl_int {
    let what = format!("kernel {}", info.name);
    crate::log::once(
        crate::config::LogLevel::Error,
        &format!("{what}: {why}"),
        &format!("{what}: {why}; its launches fail with CL_OUT_OF_RESOURCES"),
    );
    crate::stats::fallback(&what, why);
    CL_OUT_OF_RESOURCES
}

/// What every buffer argument of this launch needs. A rewritten kernel's buffer whose extent
/// cannot be had at this launch (an argument it names is not set, a work size it names is not
/// given, the arithmetic fails) stays in host layout, and the kernel runs as written; one whose
/// extent passes its buffer (a global size rounded up past the data) is converted as far as the
/// buffer holds whole structures. A kernel written for a device layout has no such way out.
///
/// A parameter annotated `out`, or proved overwritten from the kernel's source for this
/// launch's work sizes (`ProvenOut::covers`), is overwritten by the launch, which needs no
/// conversion of its old contents, when the launch is sure to run once enqueued: its wait list
/// is complete (a user event set to a failure would leave the old bytes, in their old layout).
fn needs(
    info: &KernelInfo,
    plan: Option<&KernelPlan>,
    dims: &Dims,
    user: &[cl_event],
) -> Result<Few<BufferNeed>, String> {
    let args = info.args.lock().clone();
    needs_with(info, plan, dims, user, &args)
}

/// `needs`, for a launch with arguments `args`.
fn needs_with(
    info: &KernelInfo,
    plan: Option<&KernelPlan>,
    dims: &Dims,
    user: &[cl_event],
    args: &[Option<ArgValue>],
) -> Result<Few<BufferNeed>, String> {
    let sure_to_run = || crate::cl::info::all_complete(user);
    let mut out = Few::new();
    for (i, a) in args.iter().enumerate() {
        let Some(ArgValue::Mem(h)) = a else { continue };
        if *h == 0 {
            continue;
        }
        let param = plan.and_then(|p| p.params.iter().find(|q| q.index == i));
        let Some(buffer) = buffers::get(*h) else {
            match param {
                Some(p) => return Err(format!("argument {} is not a buffer clayout knows", p.name)),
                None => continue,
            }
        };
        let host =
            |buffer| BufferNeed { buffer, arg: Some(i), need: Need::Host, must: false, overwrite: false, fuse: false };
        let Some(p) = param else {
            out.push(host(buffer));
            continue;
        };
        let size = buffer.facts.size as u64;
        let capacity = size / p.struct_bytes;
        let plan = plan.expect("a parameter comes from a plan");
        let values = LaunchEnv { plan, args, dims, auto_count: capacity };
        let m = match p.extent.eval(&values) {
            Ok(m) => m,
            Err(e) if !p.must => {
                as_written_once(info, &format!("the extent of {} cannot be had at this launch ({e})", p.name));
                out.push(host(buffer));
                continue;
            }
            Err(e) => return Err(format!("extent of {}: {e}", p.name)),
        };
        let bytes = Shape::new(m, p.words, p.word_bytes).bytes();
        let m = if bytes <= size {
            m
        } else if p.must {
            return Err(format!(
                "extent of {} is {m} structures ({bytes} bytes), more than the buffer's {size} bytes",
                p.name
            ));
        } else if capacity > 0 {
            capacity
        } else {
            as_written_once(info, &format!("{} holds no whole structure", p.name));
            out.push(host(buffer));
            continue;
        };
        let shape = Shape::new(m, p.words, p.word_bytes);
        let proven = !p.out && p.proven_out.as_ref().is_some_and(|o| o.covers(dims, &values, m));
        if proven && crate::log::enabled(crate::config::LogLevel::Debug) {
            let what = format!("kernel {}: {}", info.name, p.name);
            crate::log::once(
                crate::config::LogLevel::Debug,
                &format!("{what} proven out"),
                &format!("{what} is written whole before it is read (proved from the source): its old contents are not converted"),
            );
        }
        out.push(BufferNeed {
            buffer,
            arg: Some(i),
            need: Need::Device(DeviceLayout { host: p.host, device: p.device, shape }),
            must: p.must,
            overwrite: (p.out || proven) && sure_to_run(),
            fuse: false,
        });
    }
    // A buffer also bound to an argument that reads it keeps its contents, whichever argument
    // comes first.
    if out.iter().any(|n| n.overwrite) {
        let owner = |n: &BufferNeed| n.buffer.bytes_owner().handle;
        let kept: Vec<_> = out.iter().filter(|n| !n.overwrite).map(owner).collect();
        for n in &mut out {
            if n.overwrite && kept.contains(&owner(n)) {
                n.overwrite = false;
            }
        }
    }
    Ok(out)
}

/// Says once per kernel and reason that a rewritten kernel's launch runs as written.
fn as_written_once(info: &KernelInfo, why: &str) {
    let what = format!("kernel {}", info.name);
    crate::log::once(
        crate::config::LogLevel::Info,
        &format!("{what}: {why}"),
        &format!("{what}: {why}; that launch runs as written"),
    );
}

/// What a rewritten kernel's extents read at this launch, read where it lies: the launch's
/// work sizes and the kernel's arguments, nothing copied.
struct LaunchEnv<'a> {
    plan: &'a KernelPlan,
    args: &'a [Option<ArgValue>],
    dims: &'a Dims,
    auto_count: u64,
}

impl ExtentEnv for LaunchEnv<'_> {
    fn global_size(&self, dim: u32) -> Option<u64> {
        self.dims.global.get(dim as usize).copied()
    }
    fn local_size(&self, dim: u32) -> Option<u64> {
        self.dims.local.as_ref()?.get(dim as usize).copied()
    }
    fn arg(&self, name: &str) -> Option<u64> {
        let a = self.plan.scalars.iter().find(|a| a.name == name)?;
        match self.args.get(a.arg_index as usize) {
            Some(Some(ArgValue::Bytes(b))) => a.int_type.decode(b).ok(),
            _ => None,
        }
    }
    fn auto_count(&self) -> Option<u64> {
        Some(self.auto_count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_is_made_where_two_launches_are_left_to_repeat_it() {
        // Particles' history at 64,000 (epochs of 1, 2, 1 and 8 launches): its first two
        // launches of an epoch make none, its third does (the eight-launch epoch got that far).
        let history = [1, 2, 1, 8];
        let left = |nth| move || crate::runtime::cost::lengths::shortest_reaching(history, nth).map(|n| n - nth + 1);
        assert!(!ticket_pays(1, true, left(1)));
        assert!(!ticket_pays(2, true, left(2)));
        assert!(ticket_pays(3, true, left(3)));
        // Epochs of 100 launches: at once.
        assert!(ticket_pays(1, true, || Some(100)));
        // No history (or none got this far): from the second launch on.
        assert!(!ticket_pays(1, true, || None));
        assert!(ticket_pays(2, true, || None));
        // Past the launches the model may time, always, as before.
        assert!(ticket_pays(5, false, || Some(1)));
    }
}
