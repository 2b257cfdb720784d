//! The cost model of the transparent mode (docs/cost-model.md), in one place: the pure decision
//! (`model`), what it reads about each buffer (`buffer`) and kernel (`kernel`), what it learns
//! across runs (`habits`, `lengths`), what it measures about the device (`tune`) and about a
//! launch (`measure`), and the size class its times are kept under (`size`). [`decide`] gathers
//! one launch's inputs and decides.

pub mod buffer;
pub mod habits;
pub mod hidden;
pub mod kernel;
pub mod lengths;
pub mod measure;
pub mod model;
pub mod pace;
pub mod size;
pub mod tally;
pub mod tiles;
pub mod tune;
pub mod worth;

pub use buffer::{BufferCost, Reuse};
pub use kernel::KernelModel;
pub use model::{Decision, Reason, Times, Variant};
pub use size::SizeClass;

use super::state::{Current, DeviceLayout};
use crate::config::Policy;
use crate::layout::Layout;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tune::Tuned;

/// A map keyed by a kernel's record key (`times_key`: some 400 bytes naming the platform,
/// device, driver and kernel), hashed eight bytes at a time: SipHash, the standard map's, took
/// about 1,200 instructions per look-up of such a key, and a short run looks each kernel's up
/// in three maps at its first launch and again at every epoch's end. Nobody picks these keys
/// to collide.
pub type KeyMap<V> = std::collections::HashMap<std::sync::Arc<str>, V, std::hash::BuildHasherDefault<KeyHasher>>;

/// The hasher of [`KeyMap`], rustc's FxHasher step over words.
#[derive(Clone, Copy, Debug, Default)]
pub struct KeyHasher(u64);

impl KeyHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.add(u64::from_le_bytes(b));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b) ^ ((rest.len() as u64) << 59));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
}

/// Counts the changes to any kernel's habits or epoch lengths, so that a model's copy of its
/// kernel's ([`Records`]) is read again only after one.
static RECORDS_CHANGED: AtomicU64 = AtomicU64::new(0);

fn records_changed() {
    RECORDS_CHANGED.fetch_add(1, Ordering::Release);
}

/// A kernel's habits and epoch lengths, which the model reads at every launch of a buffer not
/// yet converted: copied from their tables (behind a lock, keyed by a long string) once, and
/// again only after a change to any of them.
#[derive(Debug)]
pub struct Records {
    pub habits: habits::Habits,
    pub lengths: lengths::Lengths,
    seen: u64,
}

impl Records {
    /// The copy of `key`'s records in `cell`, read again when a record changed since.
    fn current<'a>(cell: &'a mut Option<Records>, key: &std::sync::Arc<str>) -> &'a Records {
        // Read before the records: a change made while they are copied is seen next time.
        let now = RECORDS_CHANGED.load(Ordering::Acquire);
        if cell.as_ref().is_none_or(|r| r.seen != now) {
            *cell = Some(Records { habits: habits::get(key), lengths: lengths::get(key), seen: now });
        }
        cell.as_ref().expect("filled above")
    }
}

/// Conversion costs of each (S, w, host layout) at the tile of a program's copies: a few
/// entries, looked up at every launch of a buffer in host layout, so searched in turn (a hash
/// map's SipHash of the key cost some 260 instructions a launch).
#[derive(Clone, Debug, Default)]
pub struct Rates(Vec<((u32, u32, Layout), Tuned)>);

impl Rates {
    pub fn get(&self, key: &(u32, u32, Layout)) -> Option<&Tuned> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, t)| t)
    }

    /// Sets the costs of `key`, replacing any it had.
    pub fn insert(&mut self, key: (u32, u32, Layout), t: Tuned) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = t,
            None => self.0.push((key, t)),
        }
    }
}

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
    pub rates: &'a Rates,
    /// Structures of the first rewritten buffer: the unit of the kernel's times.
    pub structures: f64,
    /// The launch's size class: the kernel's times measured there are the ones that count.
    pub class: SizeClass,
    /// The launch was enqueued as written already (runtime::speculate): it is counted as one,
    /// and the kernel's record learns whether the model would have run another form.
    pub launched: bool,
    /// The launch's queue profiles: a timed launch is timed by its event, which costs the
    /// application only the event (`measure`, `model::EVENT_TIMING_NS`).
    pub timed_by_event: bool,
}

/// Why a first launch enqueued before clayout looked at it ran as written (runtime::speculate).
pub const LAUNCHED: &str = "its first launch in this run, enqueued as written before clayout looked at it";

/// Which form this launch runs in. Keeps each buffer's count of what its launches would have
/// cost as written and of the launches this epoch, and notes the converting argument in the
/// buffers the launch converts.
pub fn decide(kernel: &str, model: &mut KernelModel, offer: &Offer, buffers: &mut [BufferView]) -> Decision {
    let policy = offer.policy;
    model.launches += 1;
    // Counted under every policy: runs under `always` or `never` teach `auto` how long they were.
    let counts: smallvec::SmallVec<[u32; 4]> = match &model.disk_key {
        Some(key) => buffers.iter_mut().map(|b| b.cost.launched(key, b.arg, offer.class.items)).collect(),
        None => smallvec::smallvec![0; buffers.len()],
    };
    if policy == Policy::Always || (policy == Policy::Never && !offer.staged_ok) {
        // Nothing to measure: the policy alone decides. Whether the buffers can be converted is
        // checked once, by the ASTA copy's launch, which falls back to the kernel as written.
        let l = model::Launch { policy, asta_ok: true, ..model::Launch::nothing_known() };
        let mut d = model::decide(&l);
        if offer.launched {
            // Under `never` without the staged copy: the form it would have had anyway.
            d = model::run(Variant::Written, Reason::Static(LAUNCHED));
        }
        if d.variant == Variant::Asta {
            note_converters(model, buffers);
        }
        model.last = Some(d.variant);
        policy_alone(model, offer, buffers, &d);
        return d;
    }
    if let Some(d) = kept_decision(model, offer, buffers) {
        return d;
    }
    let m = offer.structures;
    let times = model.times.at(offer.class);
    // What a launch as written costs here, per structure, before it is timed at this size.
    let written_estimate = times.written.or_else(|| model.times.written_elsewhere(offer.class));
    let (mut in_asta, mut sent_back, mut undone) = (true, false, false);
    let (mut epoch, mut balance, mut convert_ns, mut timing_spent) = (0.0f64, f64::INFINITY, 0.0, 0.0f64);
    // The launches left that the history of every buffer still to convert promises (the least).
    let mut promised: Option<u32> = None;
    let mut unknown = model.disk_key.is_none();
    let records = match &model.disk_key {
        Some(key) => Some(Records::current(&mut model.records, key)),
        None => None,
    };
    for (b, &k) in buffers.iter_mut().zip(&counts) {
        let arg = b.arg;
        b.cost.reuse.epoch_ns += written_estimate.unwrap_or(0.0) * m;
        epoch = epoch.max(b.cost.reuse.epoch_ns);
        balance = balance.min(b.cost.reuse.asta_gain_ns);
        timing_spent = timing_spent.max(b.cost.reuse.timing_ns);
        sent_back |= b.cost.reuse.sent_back;
        if b.current != Current::Device(b.want) {
            in_asta = false;
            let d = b.want;
            let back = records.is_none_or(|r| r.habits.may_come_back(arg));
            undone |= records.is_some_and(|r| r.habits.undone(arg));
            match records.and_then(|r| r.lengths.remaining(arg, k, offer.class.items)) {
                Some(n) => promised = Some(promised.map_or(n, |p| p.min(n))),
                None => unknown = true,
            }
            convert_ns += match offer.rates.get(&(d.shape.s, d.shape.w, d.host)) {
                Some(t) if back => t.round_trip_ns(d.shape.bytes()),
                Some(t) => t.to_ns(d.shape.bytes()),
                None => f64::INFINITY,
            };
        }
    }
    let l = model::Launch {
        policy,
        staged_ok: offer.staged_ok,
        asta_ok: !offer.asta_blocked,
        in_asta,
        sent_back,
        m,
        class: offer.class,
        other_sizes: model.times.known_elsewhere(offer.class),
        written_estimate,
        times,
        convert_ns,
        epoch_written_ns: epoch,
        asta_balance_ns: if balance.is_finite() { balance } else { 0.0 },
        promised: promised.filter(|_| !unknown),
        nth: counts.iter().copied().min().unwrap_or(0),
        asta_elsewhere: model.times.asta_elsewhere(offer.class),
        undone,
        timed_by_event: offer.timed_by_event,
        timing_spent_ns: timing_spent,
        asta_share_elsewhere: match (policy, times.asta) {
            (Policy::Auto, None) => model.times.asta_share_elsewhere(offer.class),
            _ => None,
        },
    };
    let mut d = model::decide(&l);
    if !model.decided {
        // The kernel's first launch in this run: whether the next run may enqueue its first
        // launch before looking at it (runtime::speculate).
        model.decided = true;
        let not_written = d.variant != Variant::Written;
        if model.times.first_not_written != not_written {
            if offer.launched {
                crate::log::debug_with(|| {
                    format!(
                    "kernel {kernel}: its first launch, enqueued as written before clayout looked at it, would have run {} ({}): the next run decides first",
                    d.variant.name(),
                    d.reason
                )
                });
            }
            model.times.first_not_written = not_written;
            model.unwritten();
        }
    }
    if offer.launched {
        d = model::run(Variant::Written, Reason::Static(LAUNCHED));
    }
    let gain = l.asta_gain_ns().filter(|_| d.variant == Variant::Asta);
    if d.variant == Variant::Asta {
        note_converters(model, buffers);
    }
    for b in buffers.iter_mut() {
        if let Some(g) = gain {
            b.cost.reuse.asta_gain_ns += g;
        } else if d.variant != Variant::Asta && matches!(b.current, Current::Device(_)) {
            b.cost.sent_back(model.disk_key.as_ref());
        }
    }
    if d.measure && (model.untimed >= 3 || model.in_flight >= model::TIMED_LAUNCHES) {
        d.measure = false;
    }
    if d.measure && d.charged_ns > 0.0 {
        for b in buffers.iter_mut() {
            b.cost.reuse.timing_ns += d.charged_ns;
        }
    }
    // The application's next wait would not be this launch's alone: one of its launches lost
    // its time so before. Timed with markers instead (`transparent::timed`).
    d.more_coming |= d.measure && model.times.wait_missed;
    if (model.last != Some(d.variant) || d.measure) && crate::log::enabled(crate::config::LogLevel::Debug) {
        crate::log::debug(&format!("kernel {kernel}: runs {} ({})", d.variant.name(), d.reason));
    }
    model.last = Some(d.variant);
    let kept = (!offer.launched && model::steady(&l, &d)).then(|| {
        let counts = (written_estimate.unwrap_or(0.0), gain.and(l.asta_gain_per_structure()));
        Steady::new(offer, (l.in_asta, l.sent_back), counts, &d)
    });
    model.steady.set(kept);
    d
}

/// A decision that holds for the launches like the one it was made for (`model::steady`), and
/// what those launches are.
#[derive(Clone, Debug)]
pub struct Steady {
    class: SizeClass,
    policy: Policy,
    staged_ok: bool,
    asta_blocked: bool,
    /// The buffers are in the ASTA layout the copy wants (else in host layout).
    in_asta: bool,
    /// One of the buffers was sent back in its epoch (`model::Launch::sent_back`).
    sent_back: bool,
    /// The kernel's time as written per structure, at the class, that each launch adds to its
    /// buffers' epoch.
    written_ns: f64,
    /// What each launch in ASTA gains per structure, added to its buffers' balance.
    gain_ns: Option<f64>,
    /// Kept only while every buffer's balance is positive (`model::Reason::SlowerStay`: slower in
    /// ASTA, staying for what the kernels sharing the buffers gain there).
    while_gaining: bool,
    decision: Decision,
}

impl Steady {
    /// Decision `d` kept for the launches with `offer` whose buffers are in ASTA (or host
    /// layout) and sent back or not as `(in_asta, sent_back)` say, each counting
    /// `(written_ns, gain_ns)` per structure in their epoch and balance.
    fn new(offer: &Offer, (in_asta, sent_back): (bool, bool), counts: (f64, Option<f64>), d: &Decision) -> Arc<Steady> {
        Arc::new(Steady {
            class: offer.class,
            policy: offer.policy,
            staged_ok: offer.staged_ok,
            asta_blocked: offer.asta_blocked,
            in_asta,
            sent_back,
            written_ns: counts.0,
            gain_ns: counts.1,
            while_gaining: matches!(d.reason, Reason::SlowerStay { .. }),
            decision: d.clone(),
        })
    }

    /// Whether `offer` is the one it was made for: the same size class, policy and copies
    /// allowed.
    fn offered(&self, offer: &Offer) -> bool {
        self.class == offer.class
            && self.policy == offer.policy
            && self.staged_ok == offer.staged_ok
            && self.asta_blocked == offer.asta_blocked
    }

    /// Whether `buffers` are where its launches find them: all in the ASTA layout the copy
    /// wants (or all in host layout), sent back in their epoch as they were, and with the
    /// balances it needs (`balance_holds`).
    fn found(&self, buffers: &[BufferView]) -> bool {
        placed(buffers, self.in_asta)
            && sent_back(buffers) == self.sent_back
            && self.balance_holds(buffers.iter().map(|b| b.cost.reuse.asta_gain_ns))
    }

    /// Whether the buffers' balances (`Reuse::asta_gain_ns`) let it hold: the decision to stay in
    /// ASTA although slower there holds only while each is positive, as `model::decide` decides.
    pub fn balance_holds(&self, mut balances: impl Iterator<Item = f64>) -> bool {
        !self.while_gaining || balances.all(|b| b > 0.0)
    }

    /// The form its launches run: the ASTA copy on buffers in ASTA already, or a host-layout
    /// form on buffers in host layout (a steady decision converts nothing).
    pub fn form(&self) -> Variant {
        self.decision.variant
    }

    /// Whether it is the decision `d`: the one a launch just got.
    pub fn holds(&self, d: &Decision) -> bool {
        self.decision == *d
    }

    /// Whether one of its launch's buffers was sent back in its epoch.
    pub fn sent_back(&self) -> bool {
        self.sent_back
    }

    /// Whether it holds only while its buffers' balances stay positive (`balance_holds`).
    pub fn while_gaining(&self) -> bool {
        self.while_gaining
    }

    /// Counts a launch it holds for in one of its buffers' epoch (and balance), as the full
    /// decision counts it; `structures` are the launch's (`Offer::structures`).
    pub fn count(&self, structures: f64, cost: &mut BufferCost) {
        cost.reuse.epoch_ns += self.written_ns * structures;
        if let Some(g) = self.gain_ns {
            cost.reuse.asta_gain_ns += g * structures;
        }
    }
}

/// The kernel's steady decision, if this launch is one it holds for: counted in its buffers'
/// epoch as the full decision would count it (its launches counted already), nothing else
/// looked at.
fn kept_decision(model: &KernelModel, offer: &Offer, buffers: &mut [BufferView]) -> Option<Decision> {
    let s = model.steady.as_ref()?;
    let like = s.offered(offer) && !offer.launched && s.found(buffers);
    if !like {
        return None;
    }
    for b in buffers.iter_mut() {
        s.count(offer.structures, b.cost);
    }
    Some(s.decision.clone())
}

/// Keeps decision `d`, which the policy alone made (`always`, or `never` where the staged copy
/// cannot run), for the launches like this one once their buffers are where it leaves them: it
/// is the same at every such launch, and counts nothing in their epoch but the launch, so that
/// a launch like the kernel object's last can repeat it (`transparent::repeat`).
fn policy_alone(model: &mut KernelModel, offer: &Offer, buffers: &[BufferView], d: &Decision) {
    let in_asta = d.variant == Variant::Asta;
    let settled = !offer.launched && placed(buffers, in_asta);
    let like = |s: &Steady| s.offered(offer) && s.in_asta == in_asta && s.found(buffers) && s.holds(d);
    if settled && model.steady.as_deref().is_some_and(like) {
        return;
    }
    model.steady.set(settled.then(|| Steady::new(offer, (in_asta, sent_back(buffers)), (0.0, None), d)));
}

/// Whether there are buffers and all are in the ASTA layout the copy wants (`in_asta`), or all
/// in host layout.
fn placed(buffers: &[BufferView], in_asta: bool) -> bool {
    !buffers.is_empty()
        && buffers.iter().all(|b| b.current == if in_asta { Current::Device(b.want) } else { Current::Host })
}

/// Whether one of the buffers was sent back in its epoch (`model::Launch::sent_back`).
fn sent_back(buffers: &[BufferView]) -> bool {
    buffers.iter().any(|b| b.cost.reuse.sent_back)
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
    use crate::layout::Shape;
    use kernel::TimesByClass;

    /// One AoS buffer of a million 8-float structures, in host layout, converting cheaply.
    fn decide_at(model: &mut KernelModel, class: SizeClass) -> Decision {
        decide_fixed(model, class, 0.0)
    }

    /// `decide_at`, with each conversion costing `fixed_ns` more whatever its size.
    fn decide_fixed(model: &mut KernelModel, class: SizeClass, fixed_ns: f64) -> Decision {
        decide_with(model, class, fixed_ns, false, &mut BufferCost::default())
    }

    /// `decide_fixed` for a launch that was enqueued as written already (`launched`), the
    /// buffer's counts in `cost`.
    fn decide_with(
        model: &mut KernelModel,
        class: SizeClass,
        fixed_ns: f64,
        launched: bool,
        cost: &mut BufferCost,
    ) -> Decision {
        let rates = rates(fixed_ns);
        let (offer, want) = offer(class, &rates, launched);
        let mut views = [BufferView { arg: 0, cost, current: Current::Host, want }];
        decide("k", model, &offer, &mut views)
    }

    /// Conversion rates of the 8-float AoS structure at tile 32: 0.001 ns a byte each way, and
    /// `fixed_ns` a conversion whatever its size.
    fn rates(fixed_ns: f64) -> Rates {
        let tuned = Tuned {
            tile: 32,
            to_ns_per_byte: 0.001,
            back_ns_per_byte: 0.001,
            fixed_ns,
            searched: false,
            confirmed: true,
        };
        let mut rates = Rates::default();
        rates.insert((8, 4, Layout::Aos), tuned);
        rates
    }

    /// The offer of an `auto` launch over one AoS buffer of a million 8-float structures, and
    /// the ASTA layout the copy wants it in.
    fn offer(class: SizeClass, rates: &Rates, launched: bool) -> (Offer<'_>, DeviceLayout) {
        let shape = Shape::new(1_000_000, 8, 4);
        let want = DeviceLayout { host: Layout::Aos, device: Layout::Asta { t: 32 }, shape };
        let offer = Offer {
            policy: Policy::Auto,
            staged_ok: false,
            asta_blocked: false,
            rates,
            structures: shape.m as f64,
            class,
            launched,
            timed_by_event: false,
        };
        (offer, want)
    }

    #[test]
    fn a_launch_enqueued_before_the_model_looked_counts_as_written_and_tells_the_next_run() {
        // The model would explore the ASTA copy at once (`a_launch_that_converts_is_timed`).
        let (class, mut model) = written_measured();
        model.disk_key = Some("k".into());
        let mut cost = BufferCost::default();
        let d = decide_with(&mut model, class, 0.0, true, &mut cost);
        assert_eq!((d.variant, d.measure), (Variant::Written, false), "{}", d.reason);
        assert_eq!(d.reason.to_string(), LAUNCHED);
        assert!(model.times.first_not_written, "the next run's first launch decides first");
        assert!(cost.converted_by.is_none() && cost.reuse.asta_gain_ns == 0.0, "nothing converted: {cost:?}");
        assert_eq!(cost.take_epoch().len(), 1, "counted as a launch of the epoch");
        // Only the run's first decision says it: later launches convert as they may.
        let d = decide_with(&mut model, class, 3e6, false, &mut BufferCost::default());
        assert_eq!(d.variant, Variant::Written, "{}", d.reason);
        assert!(model.times.first_not_written);
        // A run whose first launch the model runs as written clears it.
        let mut next = KernelModel { times: model.times.clone(), ..KernelModel::default() };
        let d = decide_fixed(&mut next, class, 3e6);
        assert_eq!(d.variant, Variant::Written, "{}", d.reason);
        assert!(!next.times.first_not_written);
        let old = r#"{"format":3,"classes":[],"tile":32}"#;
        assert!(!TimesByClass::parse(old.as_bytes()).unwrap().first_not_written, "records before it read as false");
    }

    #[test]
    fn the_timings_the_model_can_do_without_are_charged_to_the_buffers_epoch() {
        // Buffers in ASTA, the copy measured twice there: its timings for the choice of tile are
        // made while they fit 2 % of the epoch, and charged to each buffer until the host sees it.
        let class = SizeClass::of(1_000_000, 32_000_000);
        let mut model = KernelModel::default();
        timed(&mut model, class, 0.7, 0.5, 2);
        let rates = Rates::default();
        let (offer, want) = offer(class, &rates, false);
        let mut cost = BufferCost::default();
        let mut launch = |cost: &mut BufferCost| {
            let mut views = [BufferView { arg: 0, cost, current: Current::Device(want), want }];
            decide("k", &mut model, &offer, &mut views).measure
        };
        // 0.7 ms a launch as written: 14 us of budget a launch, a timing 25 us.
        assert!(!launch(&mut cost), "14 us");
        assert_eq!(cost.reuse.timing_ns, 0.0);
        assert!(launch(&mut cost), "28 us");
        assert_eq!(cost.reuse.timing_ns, model::TIMING_NS);
        assert!(!launch(&mut cost), "42 us, 50 with this one's");
        assert!(launch(&mut cost), "56 us");
        assert_eq!(cost.reuse.timing_ns, 2.0 * model::TIMING_NS);
        cost.host_access();
        assert_eq!(cost.reuse.timing_ns, 0.0, "a new epoch");
    }

    /// Records `n` timings at `class` of the kernel as written (`written` per structure) and of
    /// its ASTA copy (`asta`), in turn.
    fn timed(model: &mut KernelModel, class: SizeClass, written: f64, asta: f64, n: u32) {
        for _ in 0..n {
            model.times.record(class, Variant::Written, written);
            model.times.record(class, Variant::Asta, asta);
        }
    }

    /// A million-structure class, and a model that timed the kernel as written there twice
    /// (2 ns per structure) and nothing else.
    fn written_measured() -> (SizeClass, KernelModel) {
        let class = SizeClass::of(1_000_000, 32_000_000);
        let mut model = KernelModel::default();
        for _ in 0..2 {
            model.times.record(class, Variant::Written, 2.0);
        }
        (class, model)
    }

    #[test]
    fn a_launch_that_converts_is_timed() {
        // Its markers go in after the conversions (`transparent::timed`): otherwise a kernel
        // whose buffers another kernel sends back at once (particles' first kernel at 64,000)
        // converted to measure its ASTA copy in every run and never measured it.
        let (class, mut model) = written_measured();
        let d = decide_at(&mut model, class);
        assert_eq!((d.variant, d.measure), (Variant::Asta, true), "{}", d.reason);
    }

    #[test]
    fn a_conversion_costs_its_fixed_part_too() {
        // 64 us there and back by the bytes, against at most 2 ms gained per launch: one launch
        // repays it, and the ASTA copy is explored at once...
        let (class, mut model) = written_measured();
        let d = decide_at(&mut model, class);
        assert_eq!(d.variant, Variant::Asta, "{}", d.reason);
        // ...unless each conversion costs 3 ms whatever its size: then one launch does not.
        let d = decide_fixed(&mut model, class, 3e6);
        assert_eq!(d.variant, Variant::Written, "{}", d.reason);
        assert!(d.reason.to_string().starts_with("not converting yet: the conversion (6.064 ms)"), "{}", d.reason);
    }

    #[test]
    fn a_kernel_whose_launch_missed_the_application_s_wait_is_timed_with_markers() {
        let class = SizeClass::of(1_000_000, 32_000_000);
        let mut model = KernelModel::default();
        let d = decide_at(&mut model, class);
        assert_eq!((d.measure, d.more_coming), (true, false), "nothing known: its wait may time it");
        model.times.wait_missed = true;
        let d = decide_at(&mut model, class);
        assert_eq!((d.measure, d.more_coming), (true, true), "{}", d.reason);
        // Kept with the times: the runs after this one know it too.
        let json = serde_json::to_string(&model.times).unwrap();
        assert!(TimesByClass::parse(json.as_bytes()).unwrap().wait_missed);
        let old = r#"{"format":3,"classes":[],"tile":32}"#;
        assert!(!TimesByClass::parse(old.as_bytes()).unwrap().wait_missed, "records before it read as false");
    }

    #[test]
    fn times_of_another_size_class_are_not_this_launch_s() {
        let small = SizeClass::of(64_000, 64_000 * 32);
        let large = SizeClass::of(262_144, 262_144 * 32);
        // Nothing measured anywhere: the first launch measures.
        let d = decide_at(&mut KernelModel::default(), large);
        assert_eq!((d.variant, d.measure), (Variant::Written, true));
        assert_eq!(d.reason.to_string(), "first launch: measuring the kernel as written");
        // ASTA measured twice as fast at the small size: converting pays there at once...
        let mut model = KernelModel::default();
        timed(&mut model, small, 2.0, 1.0, 2);
        let d = decide_at(&mut model, small);
        assert_eq!((d.variant, d.measure), (Variant::Asta, false), "{}", d.reason);
        // ...and decides nothing at the large size, which is measured first.
        let d = decide_at(&mut model, large);
        assert_eq!((d.variant, d.measure), (Variant::Written, true), "{}", d.reason);
        assert!(
            d.reason.to_string().starts_with("first launch at this size (2^18 work-items, 2^23 bytes)"),
            "{}",
            d.reason
        );
        // Measured slower in ASTA at the large size, it stays in host layout there.
        timed(&mut model, large, 2.0, 2.3, 2);
        let d = decide_at(&mut model, large);
        assert_eq!((d.variant, d.measure), (Variant::Written, false), "{}", d.reason);
        assert!(d.reason.to_string().contains("no faster"), "{}", d.reason);
        assert_eq!(decide_at(&mut model, small).variant, Variant::Asta);
    }

    #[test]
    fn under_never_without_the_staged_copy_a_launch_enqueued_first_says_so() {
        let rates = rates(0.0);
        let class = SizeClass::of(1_000_000, 32_000_000);
        let mut model = KernelModel::default();
        for (launched, why) in [(true, LAUNCHED), (false, "policy never")] {
            let (mut offer, want) = offer(class, &rates, launched);
            offer.policy = Policy::Never;
            let mut cost = BufferCost::default();
            let mut views = [BufferView { arg: 0, cost: &mut cost, current: Current::Host, want }];
            let d = decide("k", &mut model, &offer, &mut views);
            assert_eq!((d.variant, d.reason.to_string().as_str()), (Variant::Written, why));
        }
    }

    #[test]
    fn a_steady_decision_is_kept_until_the_kernel_s_times_change() {
        let class = SizeClass::of(1_000_000, 32_000_000);
        let mut model = KernelModel::default();
        timed(&mut model, class, 2.0, 2.3, 2);
        let mut cost = BufferCost::default();
        let first = decide_with(&mut model, class, 0.0, false, &mut cost);
        assert_eq!((first.variant, first.measure), (Variant::Written, false), "{}", first.reason);
        assert!(model.steady.is_some(), "no faster in ASTA: {}", first.reason);
        // Kept: counted in the buffer's epoch as the full decision counts it.
        let again = decide_with(&mut model, class, 0.0, false, &mut cost);
        assert_eq!(again, first);
        assert_eq!(cost.reuse.epoch_ns, 2.0 * 2.0 * 1e6);
        // Not for a launch enqueued before the model looked at it, nor at another size class.
        let launched = decide_with(&mut model, class, 0.0, true, &mut cost);
        assert_eq!(launched.reason.to_string(), LAUNCHED);
        let other = SizeClass::of(64_000, 2_048_000);
        assert_ne!(decide_at(&mut model, other).reason, first.reason);
        // A time recorded through the model drops it, to be decided again.
        model.record("k", class, Variant::Asta, Some(1e6), 1e6);
        assert!(model.steady.is_none());
        assert_eq!(decide_at(&mut model, class).variant, Variant::Written);
        assert!(model.steady.is_some());
        // Faster in ASTA, but the buffer was sent back in its epoch: kept while it is so, and
        // decided again in the buffer's next epoch.
        let mut model = KernelModel::default();
        timed(&mut model, class, 2.0, 1.0, 2);
        let mut cost = BufferCost::default();
        cost.reuse.sent_back = true;
        let first = decide_with(&mut model, class, 0.0, false, &mut cost);
        assert!(matches!(first.reason, Reason::SentBack(Variant::Written)), "{}", first.reason);
        let kept = model.steady.clone().expect("kept");
        assert!(kept.holds(&first) && kept.sent_back() && kept.form() == Variant::Written);
        assert_eq!(decide_with(&mut model, class, 0.0, false, &mut cost), first);
        assert!(
            std::sync::Arc::ptr_eq(model.steady.as_ref().expect("kept"), &kept),
            "the same decision, not a new one"
        );
        let mut next_epoch = BufferCost::default();
        let d = decide_with(&mut model, class, 0.0, false, &mut next_epoch);
        assert_eq!(d.variant, Variant::Asta, "{}", d.reason);
        // In ASTA for good (faster there, its tile timings made): each launch adds its gain to
        // the buffer's balance, kept or not.
        let mut model = KernelModel::default();
        timed(&mut model, class, 2.0, 1.5, model::TILE_TIMED);
        let rates = Rates::default();
        let (offer, want) = offer(class, &rates, false);
        let mut cost = BufferCost::default();
        let mut launch = |model: &mut KernelModel| {
            let mut views = [BufferView { arg: 0, cost: &mut cost, current: Current::Device(want), want }];
            decide("k", model, &offer, &mut views)
        };
        let first = launch(&mut model);
        assert_eq!((first.variant, first.reason.to_string().as_str()), (Variant::Asta, model::IN_ASTA));
        assert!(model.steady.is_some());
        assert_eq!(launch(&mut model), first);
        assert_eq!(cost.reuse.asta_gain_ns, 2.0 * 0.5 * 1e6);
    }

    #[test]
    fn slower_in_asta_is_kept_there_while_the_kernels_sharing_the_buffer_have_gained_more() {
        let class = SizeClass::of(1_000_000, 32_000_000);
        let mut model = KernelModel::default();
        // 0.5 ns a structure slower in ASTA: each launch of a million structures loses 0.5 ms.
        timed(&mut model, class, 2.0, 2.5, model::TILE_TIMED);
        let rates = Rates::default();
        let (offer, want) = offer(class, &rates, false);
        let mut cost = BufferCost::default();
        // What the kernels sharing the buffer gained there: one launch's loss and a half.
        cost.reuse.asta_gain_ns = 0.75e6;
        let mut kept = Vec::new();
        let mut reasons = Vec::new();
        for _ in 0..3 {
            let mut views = [BufferView { arg: 0, cost: &mut cost, current: Current::Device(want), want }];
            let d = decide("k", &mut model, &offer, &mut views);
            reasons.push(d.reason.clone());
            kept.push(model.steady.clone());
        }
        assert!(matches!(reasons[0], Reason::SlowerStay { .. }), "{}", reasons[0]);
        let first = kept[0].clone().expect("kept while the balance is positive");
        let balances = |b: &[f64]| first.balance_holds(b.iter().copied());
        assert!(balances(&[0.25e6]) && !balances(&[0.25e6, 0.0]) && !balances(&[-1.0]));
        // The second launch finds 0.25 ms left: the same decision, kept.
        assert!(kept[1].as_ref().is_some_and(|k| std::sync::Arc::ptr_eq(k, &first)), "{}", reasons[1]);
        // The third finds the balance spent: back to host layout.
        assert!(matches!(reasons[2], Reason::SlowerBack { .. }), "{}", reasons[2]);
        assert_eq!(cost.reuse.asta_gain_ns, 0.75e6 - 2.0 * 0.5e6);
    }

    #[test]
    fn a_decision_the_policy_alone_makes_is_kept_once_the_buffers_are_where_it_leaves_them() {
        let class = SizeClass::of(1_000_000, 32_000_000);
        let rates = Rates::default();
        for (policy, form) in [(Policy::Never, Variant::Written), (Policy::Always, Variant::Asta)] {
            let (mut offer, want) = offer(class, &rates, false);
            offer.policy = policy;
            let mut model = KernelModel::default();
            let mut cost = BufferCost::default();
            let mut launch = |model: &mut KernelModel, current: Current| {
                let mut views = [BufferView { arg: 0, cost: &mut cost, current, want }];
                decide("k", model, &offer, &mut views)
            };
            let there = if form == Variant::Asta { Current::Device(want) } else { Current::Host };
            let elsewhere = if form == Variant::Asta { Current::Host } else { Current::Device(want) };
            // Converting first (or bringing back): nothing kept.
            assert_eq!(launch(&mut model, elsewhere).variant, form);
            assert!(model.steady.is_none(), "{policy:?}");
            let d = launch(&mut model, there);
            let kept = model.steady.clone().expect("kept");
            assert!(kept.holds(&d) && kept.form() == form, "{policy:?}");
            // The same decision kept, not a new one: a launch like the last one repeats it.
            launch(&mut model, there);
            assert!(std::sync::Arc::ptr_eq(model.steady.as_ref().unwrap(), &kept), "{policy:?}");
            // Nothing counted in the epoch but the launch, as the policy's own decision counts.
            let mut again = BufferCost::default();
            kept.count(offer.structures, &mut again);
            assert_eq!((again.reuse.epoch_ns, again.reuse.asta_gain_ns), (0.0, 0.0));
        }
    }

    #[test]
    fn record_keys_that_differ_anywhere_are_told_apart() {
        use std::hash::BuildHasher;
        let base = "NVIDIA CUDA|NVIDIA H100 80GB HBM3|580.159.04|particles_drift__clayout_asta|".repeat(6);
        let keys: Vec<std::sync::Arc<str>> = (0..=base.len())
            .flat_map(|cut| [format!("{}x", &base[..cut]), format!("{}y{}", &base[..cut], &base[cut..])])
            .map(Into::into)
            .collect();
        let mut map = KeyMap::default();
        for (i, k) in keys.iter().enumerate() {
            map.insert(k.clone(), i);
        }
        // Every prefix and every one-byte insertion is its own key, found again by its bytes.
        let distinct: std::collections::HashSet<&std::sync::Arc<str>> = keys.iter().collect();
        assert_eq!(map.len(), distinct.len());
        for k in &keys {
            let copy: std::sync::Arc<str> = k.to_string().into();
            assert_eq!(map.get(&copy).map(|&i| &keys[i]), Some(k));
        }
        let hasher = std::hash::BuildHasherDefault::<KeyHasher>::default();
        assert_ne!(hasher.hash_one("ab"), hasher.hash_one("ab\0"));
    }
}
