//! One launch of a rewritten kernel, in the form the policy (the cost model, under `auto`)
//! picks: its ASTA copy on converted buffers, its staged copy or the application's kernel on
//! host-layout buffers. Whatever keeps a copy from running falls back to the kernel as written.

use super::super::access::{self, BufferNeed, Devices, Few};
use super::super::convert::stays_host;
use super::super::cost::{self, measure, BufferView, Decision, Offer, Reason, SizeClass, Variant};
use super::super::dims::{Dims, Enqueue};
use super::super::state::{Current, Need};
use super::copies::{self, Extra, KernelCopies, Which};
use super::fused::{fusion, Fusion};
use super::private::{TransparentPlan, STAGE_WG_MIN};
use super::repeat;
use super::timed::Timed;
use crate::config::LogLevel;
use crate::registry::{ArgValue, KernelInfo};
use opencl_sys::*;
use std::sync::atomic::Ordering::Relaxed;

/// Runs one launch of a rewritten kernel. A launch the model asked to time is timed here,
/// around the enqueue, with no lock held.
#[allow(clippy::too_many_arguments)]
pub fn launch(
    queue: cl_command_queue,
    profiling: bool,
    kernel: cl_kernel,
    info: &KernelInfo,
    copies: &KernelCopies,
    plan: &TransparentPlan,
    needs: &[BufferNeed],
    dims: &Dims,
    user: &[cl_event],
    event: *mut cl_event,
    enqueue: impl Enqueue,
) -> cl_int {
    // What the launches timed by their events have measured since, before this one decides.
    crate::guard("cost model", measure::harvest);
    let class = size_class(needs, dims);
    if super::super::suggest::active() {
        return suggest_launch(queue, kernel, info, plan, needs, class, user, event, &enqueue);
    }
    let m = structures(needs).unwrap_or(1.0);
    crate::guard("cost model", || cost::pace::joined(queue, &plan.kernel, class, m));
    let staged_local = staged_local(plan, dims);
    // Decided before the cost model, which may convert the buffers for the ASTA copy.
    let rounding = crate::guard("transparent launch", || rounding_risk(plan, needs))
        .unwrap_or_else(|| Some("internal error while checking the copy's floating-point rounding".into()));
    let policy = crate::config::get().policy;
    let written = |reason: String| (cost::model::run(Variant::Written, Reason::Text(reason)), false, false, None);
    let (decision, in_host, converts, kept) = match &rounding {
        // Nothing to measure under `always`: the kernel as written, on host-layout buffers.
        Some(why) if policy == crate::config::Policy::Always => written(format!("policy always, but {why}")),
        _ => crate::guard("cost model", || {
            let staged_ok = staged_local.is_some() && plan.program.staged_offered;
            decide(profiling, info, plan, needs, (class, m), staged_ok, rounding.is_some())
        })
        .unwrap_or_else(|| written("internal error in the cost model".into())),
    };
    let form_start = decision.measure.then(std::time::Instant::now);
    let mut timed = Timed::new(queue, decision.measure, decision.more_coming, converts, user, form_start);
    let event = timed.event(event);
    let enqueue = timed.wrap(enqueue);
    // The ASTA copy's launch ran as the staged copy converting its buffers (`fused`).
    let fused = std::cell::Cell::new(false);
    let bit = 1u8 << decision.variant as u8;
    let first = (plan.kernel.launched_forms.load(Relaxed) & bit == 0).then(std::time::Instant::now);
    let attempt = match decision.variant {
        Variant::Asta => Some(crate::guard("transparent launch", || {
            // A launch the model times is timed as the ASTA copy it is, after its conversions.
            let f = if decision.measure || !in_host {
                // Nothing to convert (the buffers are in ASTA already): nothing to fuse.
                None
            } else {
                fusable(info, plan, needs, dims, staged_local, user)
            };
            if let Some(f) = f {
                match try_staged(queue, info, copies, plan, needs, (user, event), f.local, Some(&f), &enqueue) {
                    Ok(r) => {
                        fused.set(true);
                        if crate::log::enabled(LogLevel::Debug) {
                            let what = format!(
                                "kernel {}: its staged copy (work-groups of {}) converts its {} buffer(s) to ASTA as it runs (a fused conversion)",
                                info.name,
                                f.local,
                                f.orders.len()
                            );
                            crate::log::once(LogLevel::Debug, &what, &what);
                        }
                        return Ok(r);
                    }
                    Err(why) => not_fused(info, &why),
                }
            }
            try_copy(queue, info, copies, plan, needs, (user, event), &enqueue)
        })),
        Variant::Staged => Some(crate::guard("staged launch", || {
            try_staged(queue, info, copies, plan, needs, (user, event), staged_local.unwrap_or(0), None, &enqueue)
        })),
        Variant::Written => None,
    };
    let (ran, r) = match attempt.map(|a| a.unwrap_or_else(|| Err("internal error".into()))) {
        None => (Variant::Written, as_written(queue, kernel, needs, user, event, &enqueue)),
        Some(Ok(r)) => (decision.variant, r),
        Some(Err(why)) => {
            let what = format!("kernel {} ({} copy)", info.name, decision.variant.name());
            crate::log::once(
                LogLevel::Info,
                &format!("{what}: {why}"),
                &format!("{what}: runs as written on host-layout buffers ({why})"),
            );
            (Variant::Written, as_written(queue, kernel, needs, user, event, &enqueue))
        }
    };
    crate::stats::transparent_launch(ran == Variant::Asta);
    if let Some(at) = first.filter(|_| r == CL_SUCCESS && ran == decision.variant) {
        plan.kernel.launched_forms.fetch_or(bit, Relaxed);
        crate::stats::first_enqueue(copies.decisions(&info.name), ran.form(), at.elapsed().as_nanos() as f64);
    }
    crate::guard("cost model", || cost::pace::launched(queue));
    match &rounding {
        Some(why) if ran != Variant::Asta && policy != crate::config::Policy::Never => {
            rounding_fallback(info, plan, ran, why);
            let reason = if policy == crate::config::Policy::Always {
                decision.reason.clone()
            } else {
                Reason::Text(format!("{}; no ASTA copy: {why}", decision.reason))
            };
            crate::stats::decision(copies.decisions(&info.name), ran.form(), &reason);
        }
        _ => crate::stats::decision(copies.decisions(&info.name), ran.form(), &decision.reason),
    }
    if fused.get() {
        // Its time would be the staged copy's and a conversion's, not the ASTA copy's (a launch
        // the model times is never fused).
        return r;
    }
    drop(enqueue);
    timed.finish(r == CL_SUCCESS && ran == decision.variant, &plan.kernel, &info.name, class, ran, m);
    if let Some((steady, model_key)) = kept.filter(|_| r == CL_SUCCESS && ran == decision.variant) {
        if user.is_empty() {
            let which = match ran {
                Variant::Staged => Some(Which::Staged),
                Variant::Asta if whole_tiles(plan, needs) => Some(Which::AstaFull),
                Variant::Asta => Some(Which::Asta),
                Variant::Written => None,
            };
            let run = match which {
                Some(w) => copies.private(w).map(|p| {
                    let local = if w == Which::Staged { staged_local } else { None };
                    (p.raw(), local, Some((w, p.args_now())))
                }),
                None => Some((kernel, None, None)),
            };
            if let Some((k, local, copy)) = run {
                let ran = repeat::Ran {
                    queue,
                    info,
                    reads: &plan.reads,
                    needs,
                    dims,
                    run: (k, local),
                    copy,
                    form: ran,
                    holds: repeat::Holds::Model { kernel: plan.kernel.clone(), steady, structures: m },
                    model_key,
                    items: class.items,
                };
                crate::guard("repeated launch", || repeat::note(&copies.repeat, ran));
            }
        }
    }
    r
}

/// A launch under CLAYOUT_SUGGEST: always as written on host-layout buffers (nothing is
/// converted), its first launches timed, and what the cost model already knows of the kernel
/// (its times on disk from earlier runs) noted for the suggestion.
#[allow(clippy::too_many_arguments)]
fn suggest_launch(
    queue: cl_command_queue,
    kernel: cl_kernel,
    info: &KernelInfo,
    plan: &TransparentPlan,
    needs: &[BufferNeed],
    class: SizeClass,
    user: &[cl_event],
    event: *mut cl_event,
    enqueue: &impl Enqueue,
) -> cl_int {
    use super::super::suggest;
    crate::guard("suggestion", || {
        let mut model = plan.kernel.model.lock();
        if model.disk_key.is_none() {
            model.load(&plan.program.times_key(&plan.kernel.private_name), plan.program.tile);
        }
        let times = model.times.at(class);
        suggest::model_times(&info.name, times.written, times.asta);
    });
    let timed = Timed::markers(queue, suggest::wants_time(&info.name), user);
    let r = as_written(queue, kernel, needs, user, event, &timed.wrap(enqueue));
    crate::stats::transparent_launch(false);
    if let Some(ns) = timed.stop(r == CL_SUCCESS) {
        suggest::timed(&info.name, ns);
    }
    r
}

/// The first rewritten buffer's structure count: the unit of the model's times.
pub fn structures(needs: &[BufferNeed]) -> Option<f64> {
    needs.iter().find_map(|n| match n.need {
        Need::Device(d) => Some(d.shape.m as f64),
        _ => None,
    })
}

/// The launch's size class (`cost::size`): its work-items and the bytes of the buffers it would
/// convert.
pub fn size_class(needs: &[BufferNeed], dims: &Dims) -> SizeClass {
    let items = work_items(dims);
    let bytes = needs
        .iter()
        .filter_map(|n| match n.need {
            Need::Device(d) => Some(d.shape.bytes()),
            _ => None,
        })
        .fold(0u64, u64::saturating_add);
    SizeClass::of(items, bytes)
}

pub fn work_items(dims: &Dims) -> u64 {
    dims.global.iter().fold(1u64, |a, &g| a.saturating_mul(g))
}

/// The launch's work-items bucket, as its size class has it: what `cost::lengths` keys epochs
/// by, where the buffers' shapes are not known yet (while the copies are built).
pub fn items_class(dims: &Dims) -> u8 {
    SizeClass::of(work_items(dims), 0).items
}

/// Why the ASTA copy could round this launch's floating-point results differently from the
/// kernel as written, if it could: the copy needs the index for a narrower last tile, whose
/// branch changes the code around the kernel's arithmetic, and the device's compiler may fuse
/// `a*b+c` differently there (docs/reliability.md). Copies on whole tiles only were found
/// bit-identical; integer-only kernels have nothing to fuse.
fn rounding_risk(plan: &TransparentPlan, needs: &[BufferNeed]) -> Option<String> {
    let fuses = plan.program.fuses.as_deref().filter(|_| plan.kernel.floating)?;
    let tile = plan.program.tile as u64;
    let mut ms = needs.iter().filter_map(|n| match n.need {
        Need::Device(d) => Some(d.shape.m),
        _ => None,
    });
    let first = ms.next()?;
    match std::iter::once(first).chain(ms).find(|m| m % tile != 0) {
        Some(m) => Some(format!(
            "{m} structures are not a multiple of the tile {tile}, and {fuses}: the copy's index for a narrower last tile could change its rounding"
        )),
        None if plan.program.full_tiles.is_none() => Some(format!(
            "the copy for whole tiles only did not build, and {fuses}: the copy's index for a narrower last tile could change its rounding"
        )),
        None => None,
    }
}

/// Says once per kernel that its launches that need the index for a narrower last tile run
/// in a host-layout form for `why` (`rounding_risk`), and lists it among the fallbacks.
fn rounding_fallback(info: &KernelInfo, plan: &TransparentPlan, ran: Variant, why: &str) {
    if plan.kernel.rounding_noted.swap(true, std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let form = if ran == Variant::Staged { "its staged copy" } else { "as written" };
    crate::log::info_with(|| format!("kernel {}: {why}; it runs {form}, on host-layout buffers", info.name));
    crate::stats::fallback(&format!("kernel {}", info.name), why);
}

/// A decision the model keeps, and the key of the kernel's records.
type Kept = (std::sync::Arc<cost::Steady>, Option<std::sync::Arc<str>>);

/// Asks the cost model which form this launch runs in, with the states of the buffers it would
/// convert held locked while it reads and notes them, and says whether one of them is in its
/// host layout now, whether the form decided on converts one first (to ASTA, or back), and,
/// where the model keeps the decision for the launches like this one, that decision and the
/// key of the kernel's records (`repeat`).
/// `no_asta`: the ASTA copy must not run.
fn decide(
    profiling: bool,
    info: &KernelInfo,
    plan: &TransparentPlan,
    needs: &[BufferNeed],
    (class, structures): (SizeClass, f64),
    staged_ok: bool,
    no_asta: bool,
) -> (Decision, bool, bool, Option<Kept>) {
    let policy = crate::config::get().policy;
    let asta_blocked = policy == crate::config::Policy::Auto && (no_asta || asta_blocker(needs).is_some());
    let mut model = plan.kernel.model.lock();
    if model.disk_key.is_none() {
        model.load(&plan.program.times_key(&plan.kernel.private_name), plan.program.tile);
    } else if model.times.tile == 0 {
        // Loaded by a launch made while the copies were built, before their tile was known.
        model.at_tile(plan.program.tile);
    }
    let devices: Few<(&BufferNeed, _)> = needs
        .iter()
        .filter_map(|n| match n.need {
            Need::Device(d) => Some((n, d)),
            _ => None,
        })
        .collect();
    let offer = Offer {
        policy,
        staged_ok,
        asta_blocked,
        rates: &plan.program.rates,
        structures,
        class,
        launched: super::super::speculate::noting(),
        timed_by_event: profiling,
    };
    let mut decide = |views: &mut [BufferView]| {
        let in_host = views.iter().any(|v| v.current == Current::Host);
        let d = cost::decide(&info.name, &mut model, &offer, views);
        let converts = views.iter().any(|v| match d.variant {
            Variant::Asta => v.current != Current::Device(v.want),
            _ => v.current != Current::Host,
        });
        let kept = model.steady.clone().filter(|s| s.holds(&d)).map(|s| (s, model.disk_key.clone()));
        (d, in_host, converts, kept)
    };
    if let [(n, want)] = devices[..] {
        // One buffer (most kernels): nothing to order or match.
        let mut st = n.buffer.lock();
        let st = &mut *st;
        return decide(&mut [BufferView { arg: 0, current: st.current, want, cost: st.cost() }]);
    }
    // Locked in handle order, as commands lock them (`access`), then taken in the order of the
    // kernel's converted arguments (the key of their habits), each buffer once.
    let mut order: Few<usize> = (0..devices.len()).collect();
    order.sort_by_key(|&i| devices[i].0.buffer.handle);
    order.dedup_by_key(|i| devices[*i].0.buffer.handle);
    let mut guards: Few<_> = order.iter().map(|&i| (devices[i].0.buffer.handle, devices[i].0.buffer.lock())).collect();
    let mut taken = Few::new();
    for (arg, (n, want)) in (0u32..).zip(&devices) {
        if let Some(at) = guards.iter().position(|(h, _)| *h == n.buffer.handle) {
            taken.push((arg, *want, guards.swap_remove(at).1));
        }
    }
    let mut views: Few<BufferView> = taken
        .iter_mut()
        .map(|(arg, want, st)| BufferView { arg: *arg, current: st.current, want: *want, cost: st.cost() })
        .collect();
    decide(&mut views)
}

/// The application's kernel, every buffer in host layout: the path that is always correct.
fn as_written(
    queue: cl_command_queue,
    kernel: cl_kernel,
    needs: &[BufferNeed],
    user: &[cl_event],
    event: *mut cl_event,
    enqueue: &impl Enqueue,
) -> cl_int {
    match crate::guard("launch conversions", || access::prepare_as(queue, needs, Devices::InHost, user)) {
        Some(Ok(w)) => w.run(queue, event, |n, l, ev| enqueue(kernel, None, n, l, ev), |r| *r == CL_SUCCESS),
        Some(Err(e)) => e,
        None => CL_OUT_OF_RESOURCES,
    }
}

/// Why the ASTA copy cannot run this launch, decided before converting anything, so that one
/// unconvertible buffer does not cost the others a round trip.
fn asta_blocker(needs: &[BufferNeed]) -> Option<String> {
    for n in needs.iter().filter(|n| matches!(n.need, Need::Device(_))) {
        if n.buffer.facts.flags & CL_MEM_USE_HOST_PTR != 0 {
            return Some(
                "a buffer was created with CL_MEM_USE_HOST_PTR, whose host memory the application may read directly"
                    .into(),
            );
        }
        if let Need::Device(d) = n.need {
            if d.shape.m.saturating_mul(d.shape.s as u64) > u32::MAX as u64 {
                return Some(format!(
                    "a buffer holds {} structures of {} words, past the copy's 32-bit index arithmetic",
                    d.shape.m, d.shape.s
                ));
            }
        }
        let refused = stays_host(&n.buffer, &n.buffer.lock_unchanged());
        if let Some(why) = refused {
            return Some(format!("a buffer stays in host layout: {why}"));
        }
    }
    access::conflicting(needs)
}

/// Converts the buffers and enqueues the copy; Err says why the kernel as written must run
/// instead (the buffers may then be in ASTA: `as_written` brings them back).
fn try_copy(
    queue: cl_command_queue,
    info: &KernelInfo,
    copies: &KernelCopies,
    plan: &TransparentPlan,
    needs: &[BufferNeed],
    wait: (&[cl_event], *mut cl_event),
    enqueue: &impl Enqueue,
) -> Result<cl_int, String> {
    if let Some(why) = asta_blocker(needs) {
        return Err(why);
    }
    let full = whole_tiles(plan, needs);
    let cell = if full { &copies.rewritten_full } else { &copies.rewritten };
    if crate::log::enabled(LogLevel::Debug) {
        let form = if full { "whole tiles only" } else { "a narrower last tile" };
        crate::log::once(
            LogLevel::Debug,
            &format!("asta-build {} {full}", info.name),
            &format!("kernel {}: ASTA copy built for {form}", info.name),
        );
    }
    let (private, args) = copies::with_args(cell, info, plan, &plan.kernel.private_name, full)?;
    let m_of = |_: &str, mem: usize| {
        needs.iter().find_map(|n| match n.need {
            Need::Device(d) if n.buffer.handle == mem => Some(d.shape.m),
            _ => None,
        })
    };
    let extra = Extra { args: &plan.kernel.extra_args, m_of, orders: &[] };
    copies::enqueue(queue, private, &args, plan, (needs, Devices::AsNeeded), wait, extra, None, "rewritten", enqueue)
}

/// Whether the launch runs the ASTA copy built for whole tiles only: every buffer's structures
/// fill whole tiles, and that copy built (the other has the narrower last tile's branch).
fn whole_tiles(plan: &TransparentPlan, needs: &[BufferNeed]) -> bool {
    let tile = plan.program.tile as u64;
    plan.program.full_tiles.is_some()
        && needs.iter().all(|n| !matches!(n.need, Need::Device(d) if d.shape.m % tile != 0))
}

/// The work-group size the staged copy runs this launch with, if it can run it: a 1-D launch
/// whose global size fits the copy's index variables, with the application's work-group size
/// if it gave one the staged slices fit, else (when nothing in the program can tell) the largest
/// power of two they fit that divides the global size.
fn staged_local(plan: &TransparentPlan, dims: &Dims) -> Option<usize> {
    let copy = plan.kernel.staged.as_ref()?;
    if dims.local.is_none() && copy.observes_groups {
        // The implementation's choice of work-group size is not knowable; the copy's would
        // show through the program's work-group queries.
        return None;
    }
    let cap = plan.program.stage_wg as u64;
    if dims.task || dims.global.len() != 1 || cap == 0 || dims.global[0] > i32::MAX as u64 {
        return None;
    }
    let local = match &dims.local {
        Some(l) => l[0],
        None => (0..=cap.ilog2()).rev().map(|k| 1u64 << k).find(|l| dims.global[0].is_multiple_of(*l))?,
    };
    (local <= cap && local as usize >= STAGE_WG_MIN).then_some(local as usize)
}

/// How this launch of the ASTA copy runs fused with its conversions, if it can
/// (transparent::fused); said at debug level once per kernel and reason when it cannot.
fn fusable(
    info: &KernelInfo,
    plan: &TransparentPlan,
    needs: &[BufferNeed],
    dims: &Dims,
    local: Option<usize>,
    user: &[cl_event],
) -> Option<Fusion> {
    match fusion(plan, needs, dims, local, user) {
        // The ASTA copy cannot run: neither can its fused form (try_copy says why).
        Ok(_) if asta_blocker(needs).is_some() => None,
        Ok(f) => Some(f),
        Err(why) => {
            not_fused(info, &why);
            None
        }
    }
}

/// Says at debug level, once per kernel and reason, why a launch converts its buffers first.
fn not_fused(info: &KernelInfo, why: &str) {
    if crate::log::enabled(LogLevel::Debug) {
        let what = format!("kernel {}: not fused with its conversions ({why})", info.name);
        crate::log::once(LogLevel::Debug, &what, &what);
    }
}

/// Enqueues the staged copy with the buffers in host layout, or with `fuse`, converting them
/// to ASTA as it runs (transparent::fused); Err says why the kernel as written (with `fuse`:
/// the conversions and the ASTA copy) must run instead.
#[allow(clippy::too_many_arguments)]
fn try_staged(
    queue: cl_command_queue,
    info: &KernelInfo,
    copies: &KernelCopies,
    plan: &TransparentPlan,
    needs: &[BufferNeed],
    wait: (&[cl_event], *mut cl_event),
    local: usize,
    fuse: Option<&Fusion>,
    enqueue: &impl Enqueue,
) -> Result<cl_int, String> {
    let copy = plan.kernel.staged.as_ref().ok_or("no staged copy")?;
    let (private, args) = copies::with_args(&copies.staged, info, plan, &copy.private_name, false)?;
    // The write-back of a staged slice would overwrite what the kernel wrote to the same bytes
    // through another argument.
    let staged = |n: &&BufferNeed| n.arg.is_some_and(|i| plan.kernel.indices.values().any(|&j| j == i));
    for n in needs.iter().filter(staged) {
        let b = n.buffer.bytes_owner().handle;
        if needs.iter().any(|o| o.arg.is_some() && o.arg != n.arg && o.buffer.bytes_owner().handle == b) {
            return Err("a staged buffer is also passed for another argument".into());
        }
    }
    let size_of = |i: usize| needs.iter().find(|n| n.arg == Some(i)).map(|n| n.buffer.facts.size as u64);
    // Its slice offsets are word indices in the copy's 32-bit index arithmetic.
    for (param, &i) in &plan.kernel.indices {
        let (Some(Some(ArgValue::Mem(_))), Some(l)) = (args.get(i), plan.kernel.layouts.get(param)) else { continue };
        if size_of(i).is_some_and(|s| s / l.word_bytes.max(1) as u64 > u32::MAX as u64) {
            return Err(format!("{param} holds 2^32 words or more, past the copy's 32-bit index arithmetic"));
        }
    }
    // The copy's slices may cover whole buffers: their layout never changes, so the extent
    // does not matter, and a work-item the annotation's extent leaves out still finds its
    // structure where the kernel as written would.
    let m_of = |param: &str, _mem: usize| {
        let l = plan.kernel.layouts.get(param)?;
        let size = size_of(*plan.kernel.indices.get(param)?)?;
        Some(size / (l.words as u64 * l.word_bytes as u64).max(1))
    };
    let (devices, orders, what) = match fuse {
        Some(f) => (Devices::Fused, f.orders.as_slice(), "fused staged"),
        None => (Devices::InHost, &[][..], "staged"),
    };
    let extra = Extra { args: &copy.extra_args, m_of, orders };
    copies::enqueue(queue, private, &args, plan, (needs, devices), wait, extra, Some(local), what, enqueue)
}
