//! The cost model of the transparent mode (docs/cost-model.md), in one place: the pure decision
//! (`model`), what it reads about each buffer (`buffer`) and kernel (`kernel`), what it learns
//! across runs (`habits`), what it measures about the device (`tune`) and about a launch
//! (`measure`). [`decide`] gathers one launch's inputs and decides.

pub mod buffer;
pub mod habits;
pub mod kernel;
pub mod measure;
pub mod model;
pub mod tune;

pub use buffer::{BufferCost, Reuse};
pub use kernel::KernelModel;
pub use model::{Decision, Times, Variant};

use super::state::{Current, DeviceLayout};
use crate::config::Policy;
use crate::layout::Layout;
use std::collections::HashMap;
use tune::Tuned;

/// One buffer a launch wants in a device layout, as the model sees it (its state held locked by
/// the caller).
pub struct BufferView<'a> {
    /// The buffer's place among the kernel's converted arguments (the key of its habits).
    pub arg: u32,
    pub cost: &'a mut BufferCost,
    pub current: Current,
    pub want: DeviceLayout,
}

/// What one launch of a rewritten kernel offers the model.
pub struct Offer<'a> {
    pub policy: Policy,
    /// The staged copy can run this launch.
    pub staged_ok: bool,
    /// Why the ASTA copy cannot run this launch, if it cannot.
    pub asta_blocked: bool,
    /// Conversion costs of each (S, w, host layout) at the tile of the kernel's copy.
    pub rates: &'a HashMap<(u32, u32, Layout), Tuned>,
}

/// Which form this launch runs in. Keeps each buffer's count of what its launches would have
/// cost as written, and notes the converting argument in the buffers the launch converts.
pub fn decide(kernel: &str, model: &mut KernelModel, offer: &Offer, buffers: &mut [BufferView]) -> Decision {
    let policy = offer.policy;
    // Every policy teaches the run-length model how long epochs last.
    for b in buffers.iter_mut() {
        let by = model.disk_key.as_ref().map(|k| habits::ConvertedBy { kernel: k.clone(), arg: b.arg });
        b.cost.launched(by);
    }
    if policy == Policy::Always || (policy == Policy::Never && !offer.staged_ok) {
        // Nothing to measure: the policy alone decides. Whether the buffers can be converted is
        // checked once, by the ASTA copy's launch, which falls back to the kernel as written.
        let l = model::Launch { policy, asta_ok: true, ..model::Launch::nothing_known() };
        let d = model::decide(&l);
        if d.variant == Variant::Asta {
            note_converters(model, buffers);
        }
        return d;
    }
    // Times are per launch, kept per size (`kernel`).
    let m = 1.0;
    let (mut in_asta, mut sent_back) = (true, false);
    let (mut epoch, mut balance, mut convert_ns) = (0.0f64, f64::INFINITY, 0.0);
    // The least of the buffers' histories, None while one of them has none.
    let mut past: Option<Option<u32>> = None;
    for b in buffers.iter_mut() {
        let arg = b.arg;
        let q = model.disk_key.as_ref().and_then(|k| habits::quartile(k, arg));
        past = Some(match (past, q) {
            (None, q) => q,
            (Some(Some(a)), Some(b)) => Some(a.min(b)),
            _ => None,
        });
        b.cost.reuse.epoch_ns += model.times.written.unwrap_or(0.0) * m;
        epoch = epoch.max(b.cost.reuse.epoch_ns);
        balance = balance.min(b.cost.reuse.asta_gain_ns);
        sent_back |= b.cost.reuse.sent_back;
        if b.current != Current::Device(b.want) {
            in_asta = false;
            let d = b.want;
            let back = model.disk_key.as_ref().is_none_or(|k| habits::may_come_back(k, arg));
            convert_ns += match offer.rates.get(&(d.shape.s, d.shape.w, d.host)) {
                Some(t) if back => t.round_trip_ns(d.shape.bytes()),
                Some(t) => t.to_ns_per_byte * d.shape.bytes() as f64,
                None => f64::INFINITY,
            };
        }
    }
    if !in_asta && convert_ns.is_finite() && buffers.iter().all(|b| !matches!(b.current, Current::Device(_))) {
        model.reckoned(convert_ns);
    }
    let l = model::Launch {
        policy,
        staged_ok: offer.staged_ok,
        asta_ok: !offer.asta_blocked,
        in_asta,
        sent_back,
        m,
        times: model.counting_pending(),
        convert_ns,
        epoch_written_ns: epoch,
        asta_balance_ns: if balance.is_finite() { balance } else { 0.0 },
        past_quartile: past.flatten(),
    };
    let mut d = model::decide(&l);
    let gain = l.asta_gain_ns().filter(|_| d.variant == Variant::Asta);
    if d.variant == Variant::Asta {
        note_converters(model, buffers);
    }
    for b in buffers.iter_mut() {
        if let Some(g) = gain {
            b.cost.reuse.asta_gain_ns += g;
        } else if d.variant != Variant::Asta && matches!(b.current, Current::Device(_)) {
            // This launch brings the buffer back: until the host accesses it, converting it
            // again would only start another round trip.
            b.cost.reuse.sent_back = true;
        }
    }
    // Timings still on their way count: a form is not timed more often than the model needs.
    let v = d.variant as usize;
    if d.measure && (model.untimed >= 3 || model.times.timed[v] + model.pending[v] >= model::TIMED_LAUNCHES) {
        d.measure = false;
    }
    if d.variant != Variant::Written && !d.measure && !model.times.chose_copy {
        model.times.chose_copy = true;
        model.save();
    }
    if model.last != Some(d.variant) || d.measure {
        crate::log::debug(&format!("kernel {kernel}: runs {} ({})", d.variant.name(), d.reason));
    }
    model.last = Some(d.variant);
    d
}

/// A buffer a rewritten kernel's launch passes at a converted argument, before the kernel has
/// its copies.
pub struct HostView<'a> {
    /// The buffer's place among the kernel's converted arguments.
    pub arg: u32,
    pub cost: &'a mut BufferCost,
    /// The buffer is in its host layout.
    pub host: bool,
}

/// Under `auto`, before the kernel's copies exist: the decision when what the model knows at
/// this size (its times, the conversions' cost it reckoned here before, the epoch, the history)
/// runs the kernel as written, timing it while it is not timed, with the launch counted in the
/// buffers; None when the model may want a copy, which needs them.
pub fn decide_without_copies(
    model: &mut KernelModel,
    staged_exists: bool,
    buffers: &mut [HostView],
) -> Option<Decision> {
    let t = model.counting_pending();
    let d = if t.unsettled(Variant::Written) && model.untimed < 3 {
        model::measure(
            Variant::Written,
            if t.timed[Variant::Written as usize] == 0 {
                "first launch: measuring the kernel as written (before its copies are built)"
            } else {
                "measuring the kernel as written again (before its copies are built)"
            },
        )
    } else {
        if buffers.iter().any(|b| !b.host) || (staged_exists && t.unsettled(Variant::Staged)) {
            return None;
        }
        let (w, convert_ns) = (t.written?, t.convert_ns?);
        let (mut epoch, mut balance, mut sent_back) = (0.0f64, f64::INFINITY, false);
        let mut past: Option<Option<u32>> = None;
        for b in buffers.iter() {
            let q = model.disk_key.as_ref().and_then(|k| habits::quartile(k, b.arg));
            past = Some(match (past, q) {
                (None, q) => q,
                (Some(Some(a)), Some(b)) => Some(a.min(b)),
                _ => None,
            });
            epoch = epoch.max(b.cost.reuse.epoch_ns + w);
            balance = balance.min(b.cost.reuse.asta_gain_ns);
            sent_back |= b.cost.reuse.sent_back;
        }
        let l = model::Launch {
            policy: Policy::Auto,
            staged_ok: staged_exists && t.staged.is_some(),
            asta_ok: true,
            in_asta: false,
            sent_back,
            m: 1.0,
            times: t,
            convert_ns,
            epoch_written_ns: epoch,
            asta_balance_ns: if balance.is_finite() { balance } else { 0.0 },
            past_quartile: past.flatten(),
        };
        let d = model::decide(&l);
        if d.variant != Variant::Written || d.measure {
            return None;
        }
        model::run(Variant::Written, format!("{} (without its copies)", d.reason))
    };
    for b in buffers.iter_mut() {
        let by = model.disk_key.as_ref().map(|k| habits::ConvertedBy { kernel: k.clone(), arg: b.arg });
        b.cost.launched(by);
        b.cost.reuse.epoch_ns += t.written.unwrap_or(0.0);
    }
    Some(d)
}

/// Notes in each buffer this launch converts which kernel argument converted it.
fn note_converters(model: &KernelModel, buffers: &mut [BufferView]) {
    let Some(kernel) = &model.disk_key else { return };
    for b in buffers.iter_mut() {
        if !matches!(b.current, Current::Device(_)) {
            b.cost.converted_by = Some(habits::ConvertedBy { kernel: kernel.clone(), arg: b.arg });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settled(written: f64, asta: Option<f64>, convert_ns: Option<f64>) -> KernelModel {
        let n = |x: Option<f64>| if x.is_some() { model::TIMED_LAUNCHES } else { 0 };
        let times = Times {
            written: Some(written),
            staged: None,
            asta,
            timed: [model::TIMED_LAUNCHES, 0, n(asta)],
            convert_ns,
            chose_copy: false,
        };
        KernelModel { times, ..KernelModel::default() }
    }

    fn without(model: &mut KernelModel, staged: bool, cost: &mut BufferCost, host: bool) -> Option<Decision> {
        decide_without_copies(model, staged, &mut [HostView { arg: 0, cost, host }])
    }

    #[test]
    fn the_first_launches_are_timed_as_written_without_copies() {
        let mut m = KernelModel::default();
        let mut c = BufferCost::default();
        let d = without(&mut m, true, &mut c, true).unwrap();
        assert_eq!((d.variant, d.measure), (Variant::Written, true));
        assert!(d.reason.starts_with("first launch: measuring the kernel as written"), "{}", d.reason);
        m.pending[0] = 1;
        assert!(without(&mut m, true, &mut c, true).unwrap().reason.contains("again"));
        m.pending[0] = 2;
        assert_eq!(without(&mut m, true, &mut c, true), None, "timed: the staged copy is next, which needs them");
        assert_eq!(c.reuse.launches, 2);
    }

    #[test]
    fn copies_are_asked_for_only_when_the_model_may_want_one() {
        // ASTA gains 0.9 of 1 ms per launch; converting costs 5 ms: the budget rule waits
        // until the launches as written reach 4.1 ms / 2 %.
        let mut m = settled(1e6, Some(0.1e6), Some(5e6));
        let mut c = BufferCost::default();
        let n = (1..1000).find(|_| without(&mut m, false, &mut c, true).is_none()).unwrap();
        assert_eq!(n, 205, "converted at the launch where 2 % of the time as written covers the loss");
        assert_eq!(c.reuse.launches, 204);
        // Nothing known of the conversions' cost here, a buffer in a device layout, or the
        // staged copy untimed: the copies are needed.
        let mut c = BufferCost::default();
        assert_eq!(without(&mut settled(1e6, None, None), false, &mut c, true), None);
        assert_eq!(without(&mut settled(1e6, Some(2e6), Some(5e6)), false, &mut c, false), None);
        assert_eq!(without(&mut settled(1e6, Some(2e6), Some(5e6)), true, &mut c, true), None);
        let d = without(&mut settled(1e6, Some(2e6), Some(5e6)), false, &mut c, true).unwrap();
        assert!(d.reason.contains("without its copies"), "{}", d.reason);
    }
}
