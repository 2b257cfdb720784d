//! Counters, and the report written at exit (`CLAYOUT_STATS`). The schema is documented in
//! `docs/stats.md`; `Report` is its single definition.

use crate::cl::FN_NAMES;
use crate::config::{self, StatsOut};
use parking_lot::Mutex;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

static TO_DEVICE: AtomicU64 = AtomicU64::new(0);
static TO_HOST: AtomicU64 = AtomicU64::new(0);
static MARSHAL_BYTES: AtomicU64 = AtomicU64::new(0);
static MARSHAL_NS: AtomicU64 = AtomicU64::new(0);
static FUSED: AtomicU64 = AtomicU64::new(0);
static CHUNKED: AtomicU64 = AtomicU64::new(0);
static REWRITTEN: AtomicU64 = AtomicU64::new(0);
static REFUSED: AtomicU64 = AtomicU64::new(0);
static LAUNCH_REWRITTEN: AtomicU64 = AtomicU64::new(0);
static LAUNCH_ORIGINAL: AtomicU64 = AtomicU64::new(0);
static CONTEXTS_RELEASED: AtomicU64 = AtomicU64::new(0);
static CONTEXTS_LEFT: AtomicU64 = AtomicU64::new(0);
static QUEUES_PROFILED: AtomicU64 = AtomicU64::new(0);
static FALLBACKS: Mutex<Vec<Fallback>> = Mutex::new(Vec::new());
/// Fallbacks kept in full; past this only the count grows, so a loop cannot eat memory.
const FALLBACKS_KEPT: usize = 1000;
static FALLBACKS_DROPPED: AtomicU64 = AtomicU64::new(0);

/// Whether this process made any OpenCL call at all.
pub fn any_calls() -> bool {
    crate::cl::thread::any()
}

/// Set in a child forked after this process had made OpenCL calls. Such a child has the
/// parent's memory (its OpenCL objects, clayout's records, clayout's locks as they stood at the
/// fork) but none of its threads: neither the OpenCL implementation's nor clayout's worker and
/// cache writer. Whatever waits for those threads would wait forever there.
static FORKED_CHILD: AtomicBool = AtomicBool::new(false);

/// Whether this is a child forked after the process had made OpenCL calls ([`FORKED_CHILD`]).
pub fn forked_child() -> bool {
    FORKED_CHILD.load(Relaxed)
}

extern "C" fn after_fork_in_child() {
    if any_calls() {
        FORKED_CHILD.store(true, Relaxed);
    }
}

/// Registers the fork handler behind [`forked_child`]; once, at load.
pub fn watch_forks() {
    // SAFETY: registering a plain extern "C" fn with no captured state; it only stores an atomic,
    // which is safe in a child that has only the forking thread.
    unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
}

/// The application's calls so far of the entry point at `index` in `FN_NAMES`.
pub fn calls(index: usize) -> u64 {
    crate::cl::thread::calls(index)
}

/// Direction of one conversion, as the stats count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    ToDevice,
    ToHost,
}

/// Records one finished conversion; `device_ns` is 0 when it was not timed.
pub fn marshal(dir: Direction, bytes: u64, device_ns: u64) {
    match dir {
        Direction::ToDevice => &TO_DEVICE,
        Direction::ToHost => &TO_HOST,
    }
    .fetch_add(1, Relaxed);
    MARSHAL_BYTES.fetch_add(bytes, Relaxed);
    MARSHAL_NS.fetch_add(device_ns, Relaxed);
}

/// A buffer converted to its device layout by the launch that uses it (a staged copy that
/// stores in ASTA order): a conversion saved.
pub fn fused() {
    FUSED.fetch_add(1, Relaxed);
}

/// A read of a buffer in a device layout that converted and read it chunk by chunk.
pub fn chunked_read() {
    CHUNKED.fetch_add(1, Relaxed);
}

/// Adds device time of a conversion measured after it completed.
pub fn marshal_time(device_ns: u64) {
    MARSHAL_NS.fetch_add(device_ns, Relaxed);
}

pub fn rewritten_kernel() {
    REWRITTEN.fetch_add(1, Relaxed);
}

/// A kernel the rewriter left as written (the reason goes to the fallback list too).
pub fn rewrite_refused() {
    REFUSED.fetch_add(1, Relaxed);
}

/// A launch of a rewritten kernel: its copy (`true`), or the kernel as written because a
/// buffer could not or should not be converted (`false`).
pub fn transparent_launch(rewritten: bool) {
    if rewritten { &LAUNCH_REWRITTEN } else { &LAUNCH_ORIGINAL }.fetch_add(1, Relaxed);
}

/// The application released a context for the last time; `left` when references to it remained
/// although the application held no object of it any more (so clayout's did).
pub fn context_released(left: bool) {
    CONTEXTS_RELEASED.fetch_add(1, Relaxed);
    if left {
        CONTEXTS_LEFT.fetch_add(1, Relaxed);
    }
}

/// clayout turned profiling on for a queue the application created without it
/// (`runtime::profiling`).
pub fn queue_profiled() {
    QUEUES_PROFILED.fetch_add(1, Relaxed);
}

/// Something clayout could not do with certainty, and the safe path it took instead.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Fallback {
    /// Kernel name, or buffer description, the decision was about.
    pub object: String,
    pub reason: String,
}

pub fn fallback(object: &str, reason: &str) {
    let mut list = FALLBACKS.lock();
    if list.len() < FALLBACKS_KEPT {
        list.push(Fallback { object: object.to_string(), reason: reason.to_string() });
    } else {
        FALLBACKS_DROPPED.fetch_add(1, Relaxed);
    }
}

// ---- the cost model's decisions (runtime::cost) -------------------------------------------

/// A form the launches of a rewritten kernel run in (the cost model names them): its place in
/// the report's order, its key in the JSON report and its name in the summary.
#[derive(Clone, Copy, Debug)]
pub struct Form {
    pub order: u8,
    pub key: &'static str,
    pub label: &'static str,
    /// Whether its launches run a rewritten copy on buffers in a device layout (the report's
    /// launches in ASTA) rather than in a host layout.
    pub device_layout: bool,
}

// A form is its place in the order (each variant of the model has its own): compared by that
// alone, a launch's count is found without comparing the words.
impl PartialEq for Form {
    fn eq(&self, other: &Form) -> bool {
        self.order == other.order
    }
}

impl Eq for Form {}

impl PartialOrd for Form {
    fn partial_cmp(&self, other: &Form) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Form {
    fn cmp(&self, other: &Form) -> std::cmp::Ordering {
        self.order.cmp(&other.order)
    }
}

impl Serialize for Form {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.key)
    }
}

/// Per rewritten kernel: which form its launches ran in, why, and the times measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct KernelDecisions {
    pub launches: BTreeMap<Form, u64>,
    /// The distinct reasons given, in the order first given (at most `REASONS_KEPT`).
    pub reasons: Vec<KeptReason>,
    /// What tells those reasons apart, without writing each launch's out.
    #[serde(skip)]
    keys: Vec<ReasonKey>,
    /// The fastest measured launch of each form, in ms.
    pub measured_ms: BTreeMap<Form, f64>,
    /// The host time of the first enqueue of each form in this process (its conversions
    /// included), in us: what a run that tries a form pays once, which the cost model does not
    /// count yet.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub first_enqueue_us: BTreeMap<Form, f64>,
}

const REASONS_KEPT: usize = 8;
/// A rewritten kernel's decisions, held by each of its kernel objects (`KernelCopies::decisions`)
/// so that counting a launch looks nothing up by name.
pub type KernelStats = std::sync::Arc<KernelRecord>;

/// A kernel's decisions, and its launches that repeated the last one (`repeated_launch`), counted
/// apart by form without a lock: such a launch is a few microseconds of the host's where every
/// cache line clayout touches shows (docs/results.md, "The device keeps up with the host").
#[derive(Debug, Default)]
pub struct KernelRecord {
    decisions: Mutex<KernelDecisions>,
    repeated: [AtomicU64; 3],
    forms: [std::sync::OnceLock<Form>; 3],
    /// Launches of a declined run left untracked (`untracked_launch`), and their form and reason.
    untracked: AtomicU64,
    untracked_as: std::sync::OnceLock<Untracked>,
}

/// The form and reason of a kernel's launches left untracked.
#[derive(Clone, Copy)]
struct Untracked(Form, &'static dyn Reasoned);

impl std::fmt::Debug for Untracked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} ({})", self.0, self.1)
    }
}

impl KernelRecord {
    pub fn lock(&self) -> parking_lot::MutexGuard<'_, KernelDecisions> {
        self.decisions.lock()
    }

    /// The decisions with the repeated launches counted in, within `limit` (None: the lock was
    /// not had).
    fn snapshot(&self, limit: Duration) -> Option<KernelDecisions> {
        let mut d = self.decisions.try_lock_for(limit)?.clone();
        for (n, form) in self.repeated.iter().zip(&self.forms) {
            let n = n.load(Relaxed);
            if let (Some(f), true) = (form.get(), n > 0) {
                *d.launches.entry(*f).or_default() += n;
            }
        }
        let n = self.untracked.load(Relaxed);
        if let (Some(&Untracked(f, why)), true) = (self.untracked_as.get(), n > 0) {
            *d.launches.entry(f).or_default() += n;
            d.note(why);
        }
        Some(d)
    }
}
static DECISIONS: Mutex<BTreeMap<String, KernelStats>> = Mutex::new(BTreeMap::new());

/// The decisions of the rewritten kernel named `kernel` (one record per name, whichever kernel
/// object or program it comes from).
pub fn kernel_stats(kernel: &str) -> KernelStats {
    let mut all = DECISIONS.lock();
    match all.get(kernel) {
        Some(k) => k.clone(),
        None => all.entry(kernel.to_string()).or_default().clone(),
    }
}

/// What tells two reasons for a kernel's decisions apart: their kind and words, not their
/// figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReasonKey {
    Typed(u8, &'static str, &'static str),
    Text(String),
}

impl ReasonKey {
    /// `==`, telling the same static words by their address first: every launch compares its
    /// reason's key with those kept, and they are mostly the same words.
    fn same(&self, other: &ReasonKey) -> bool {
        let words = |a: &str, b: &str| std::ptr::eq(a, b) || a == b;
        match (self, other) {
            (ReasonKey::Typed(k, a, b), ReasonKey::Typed(l, c, d)) => k == l && words(a, c) && words(b, d),
            _ => self == other,
        }
    }
}

/// A reason for a decision, kept unwritten until it is shown.
pub trait Reasoned: std::fmt::Display + Send + Sync {
    fn key(&self) -> ReasonKey;
    /// A copy to keep among a kernel's reasons.
    fn kept(&self) -> KeptReason;
}

/// A reason kept among a kernel's, written out only when the statistics are: its figures took
/// some 4,000 instructions to write, inside the launch that first gave it (a kernel's first,
/// on a cold CPU).
#[derive(Clone)]
pub struct KeptReason(pub std::sync::Arc<dyn Reasoned>);

impl std::fmt::Display for KeptReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Debug for KeptReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0.to_string())
    }
}

impl Serialize for KeptReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// One launch of the rewritten kernel whose decisions are `kernel` ran in form `ran`, for
/// `reason`.
pub fn decision(kernel: &KernelStats, ran: Form, reason: &dyn Reasoned) {
    kernel.lock().count(ran, reason);
}

/// A launch of a declined run left untracked (`runtime::untracked`) ran in form `ran`, for
/// `reason`, the same at every such launch: counted without a lock, the reason noted when the
/// statistics are written. Through `decision` the first of these launches of each kernel took
/// some 230 first-level instruction-cache misses (callgrind, particles on PoCL), on the H100 some
/// 30 ns each from the last-level cache.
pub fn untracked_launch(kernel: &KernelStats, ran: Form, reason: &'static dyn Reasoned) {
    LAUNCH_ORIGINAL.fetch_add(1, Relaxed);
    kernel.untracked_as.get_or_init(|| Untracked(ran, reason));
    kernel.untracked.fetch_add(1, Relaxed);
}

/// A launch counted as one left untracked (`untracked_launch`, or `repeated_launch` in form
/// `ran` where it repeated its kernel object's ticket) whose enqueue found the tracking started
/// by another thread: the tracked path counts it instead.
pub fn untracked_withdrawn(kernel: &KernelStats, repeated: bool, ran: Form) {
    if repeated {
        kernel.repeated[usize::from(ran.order).min(2)].fetch_sub(1, Relaxed);
    } else {
        LAUNCH_ORIGINAL.fetch_sub(1, Relaxed);
        kernel.untracked.fetch_sub(1, Relaxed);
    }
}

/// A launch of `kernel` repeated its last one in form `ran` (`transparent::repeat`): the
/// decision and its reason are the last launch's, counted already.
///
/// Counted in the kernel's record alone: the report adds them to the totals (`repeated_totals`),
/// two atomic additions fewer in a launch where every one shows.
pub fn repeated_launch(kernel: &KernelStats, ran: Form) {
    let i = usize::from(ran.order).min(2);
    kernel.forms[i].get_or_init(|| ran);
    kernel.repeated[i].fetch_add(1, Relaxed);
}

static PLAIN_REPEATED: AtomicU64 = AtomicU64::new(0);

/// A launch of a kernel without copies repeated its kernel object's last one.
pub fn repeated_plain_launch() {
    PLAIN_REPEATED.fetch_add(1, Relaxed);
}

static LANE: AtomicU64 = AtomicU64::new(0);

/// `n` launches through an express lane (`runtime::lane`) repeated their kernel object's last
/// one, in form `ran` of the kernel `kernel` (None: a kernel without copies): counted by the
/// lane, added here in one go.
pub fn lane_launches(kernel: Option<(&KernelStats, Form)>, n: u64) {
    match kernel {
        Some((k, ran)) => {
            k.repeated[usize::from(ran.order).min(2)].fetch_add(n, Relaxed);
        }
        None => {
            PLAIN_REPEATED.fetch_add(n, Relaxed);
        }
    }
    LANE.fetch_add(n, Relaxed);
}

/// Launches that repeated their kernel object's last one, in ASTA and in a host layout.
#[derive(Default)]
struct Repeated {
    asta: u64,
    host: u64,
}

fn repeated_totals<'a>(kernels: impl Iterator<Item = &'a KernelStats>) -> Repeated {
    let mut t = Repeated::default();
    for k in kernels {
        for (n, form) in k.repeated.iter().zip(&k.forms) {
            let n = n.load(Relaxed);
            match form.get() {
                Some(f) if f.device_layout => t.asta += n,
                _ => t.host += n,
            }
        }
    }
    t
}

impl KernelDecisions {
    fn count(&mut self, ran: Form, reason: &dyn Reasoned) {
        *self.launches.entry(ran).or_default() += 1;
        self.note(reason);
    }

    fn note(&mut self, reason: &dyn Reasoned) {
        // Reasons that differ only in their figures count as one.
        if self.reasons.len() < REASONS_KEPT {
            let key = reason.key();
            if !self.keys.iter().any(|k| k.same(&key)) {
                self.keys.push(key);
                self.reasons.push(reason.kept());
            }
        }
    }
}

/// The first launch of `kernel` in form `v` in this process took `ns` of the host's time to
/// enqueue.
pub fn first_enqueue(kernel: &KernelStats, v: Form, ns: f64) {
    kernel.lock().first_enqueue_us.entry(v).or_insert(ns / 1e3);
}

/// A launch of `kernel` in form `v` took `ns`.
pub fn kernel_time(kernel: &str, v: Form, ns: f64) {
    let k = kernel_stats(kernel);
    let mut k = k.lock();
    let t = k.measured_ms.entry(v).or_insert(f64::INFINITY);
    *t = t.min(ns / 1e6);
}

/// The tile of each rewritten kernel's copies, as last built (`copies_tile`).
static TILES: Mutex<BTreeMap<String, u32>> = Mutex::new(BTreeMap::new());

/// The program's copies were not loaded inside its build, for `why` (`cost::worth`): kept as
/// given, and said when the statistics are written (the text took 6,000 instructions inside
/// the application's build call).
pub fn copies_declined(why: impl std::fmt::Display + Send + 'static) {
    let mut d = DECLINED.lock();
    // Told apart only when written: a program that builds in a loop keeps the first ones.
    if d.len() < DECLINED_AT_MOST {
        d.push(Box::new(why));
    }
}

/// Reasons kept at most for the report (each build that declines gives one).
const DECLINED_AT_MOST: usize = 64;

type Why = Box<dyn std::fmt::Display + Send>;

static DECLINED: Mutex<Vec<Why>> = Mutex::new(Vec::new());

/// Each of `whys` as text, each text once.
fn said_once(whys: &[Why]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in whys.iter().map(|w| w.to_string()) {
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// A launch bought copies that were not loaded inside the build (waiting for their load, or
/// starting it beside the launches), the launches before it having forgone `ms` without them
/// (`program::buys_copies`).
pub fn copies_bought(ms: f64) {
    BOUGHT.lock().push(ms);
}

static BOUGHT: Mutex<Vec<f64>> = Mutex::new(Vec::new());

/// The copies of `kernel` were built with tile `tile`.
pub fn copies_tile(kernel: &str, tile: u32) {
    TILES.lock().insert(kernel.to_string(), tile);
}

#[derive(Debug, Serialize)]
pub struct PolicyReport {
    pub policy: config::Policy,
    pub kernels: BTreeMap<String, KernelDecisions>,
    /// The tile each rewritten kernel's copies were last built with.
    pub tiles: BTreeMap<String, u32>,
    /// Why programs' copies were not loaded inside their builds (docs/cost-model.md, "The
    /// copies' load is bought too").
    pub copies_not_loaded: Vec<String>,
    /// For each program whose copies were not loaded inside its build and that a launch then
    /// bought (`program::Purchase`, either way; the name is the one it had when every purchase
    /// waited): what the launches run as written without them had forgone by then, in ms.
    pub copies_waited_for_ms: Vec<f64>,
}

// ---- The on-disk cache (cache/disk.rs) -----------------------------------------------------

/// What one look-up or write of the on-disk cache came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheEvent {
    Hit,
    Miss,
    Write,
    /// A file that was damaged (cut short, wrong checksum, not a record).
    Corrupt,
    /// A whole file written for another key, by another format, or refused by its user.
    Stale,
}

static CACHE_EVENTS: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];

pub fn cache(event: CacheEvent) {
    CACHE_EVENTS[event as usize].fetch_add(1, Relaxed);
}

#[derive(Debug, Serialize)]
pub struct Cache {
    pub hits: u64,
    pub misses: u64,
    pub writes: u64,
    pub ignored_corrupt: u64,
    pub ignored_stale: u64,
}

fn cache_report() -> Cache {
    let n = |e: CacheEvent| CACHE_EVENTS[e as usize].load(Relaxed);
    Cache {
        hits: n(CacheEvent::Hit),
        misses: n(CacheEvent::Miss),
        writes: n(CacheEvent::Write),
        ignored_corrupt: n(CacheEvent::Corrupt),
        ignored_stale: n(CacheEvent::Stale),
    }
}

/// The summary's line, or nothing for a run that never used the cache.
fn cache_summary(c: &Cache) -> Option<String> {
    (c.hits + c.misses + c.writes + c.ignored_corrupt + c.ignored_stale > 0).then(|| {
        format!(
            "  on-disk cache: {} hits, {} misses, {} writes, {} corrupt and {} stale files ignored\n",
            c.hits, c.misses, c.writes, c.ignored_corrupt, c.ignored_stale
        )
    })
}

// ----------------------------------------------------------------------------------------------

#[derive(Debug, Serialize)]
pub struct Marshal {
    pub to_device_layout: u64,
    pub to_host_layout: u64,
    pub bytes: u64,
    pub device_ns: u64,
    /// Buffers a launch converted to their device layout as it ran, instead of a conversion.
    pub fused: u64,
    /// Reads that converted their buffer back chunk by chunk, beside the transfer.
    pub chunked_reads: u64,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub version: &'static str,
    pub real_library: Option<String>,
    pub intercepted_calls: u64,
    pub calls: BTreeMap<&'static str, u64>,
    pub marshal: Marshal,
    pub cache: Cache,
    pub fallbacks: Vec<Fallback>,
    pub fallbacks_not_listed: u64,
    pub rewritten_kernels: u64,
    pub rewrite_refusals: u64,
    /// Launches of rewritten kernels that ran the ASTA copy / the kernel as written.
    pub launches_rewritten: u64,
    pub launches_as_written: u64,
    /// Of those launches (either kind), the ones that repeated their kernel object's last
    /// launch, its decision not made again (`transparent::repeat`).
    pub launches_repeated: u64,
    /// Launches of kernels without copies (not rewritten) that repeated their kernel object's
    /// last launch, their buffers' needs not worked out again.
    pub launches_repeated_without_copies: u64,
    /// Of the launches in the two fields above, those enqueued through the express lane
    /// (`runtime::lane`), with nothing of theirs checked again.
    pub launches_in_lane: u64,
    /// The application's queues clayout turned profiling on for, hidden from its queries
    /// (`runtime::profiling`).
    pub queues_profiled: u64,
    /// Contexts the application released for the last time, and how many of them were still
    /// referenced by an object clayout created (see runtime::check_context_references).
    pub contexts_released: u64,
    pub contexts_left_referenced: u64,
    /// The transparent mode's policy and, per rewritten kernel, the cost model's decisions.
    pub policy: PolicyReport,
}

/// A snapshot of every counter. Never blocks for long: at exit another thread may hold the
/// fallback list, and a report with the list missing beats a hung exit.
pub fn report() -> Report {
    let calls: BTreeMap<&'static str, u64> =
        FN_NAMES.iter().enumerate().map(|(i, n)| (*n, calls(i))).filter(|(_, c)| *c > 0).collect();
    let fallbacks = FALLBACKS.try_lock_for(Duration::from_millis(200)).map(|l| l.clone()).unwrap_or_default();
    let kernels: Vec<(String, KernelStats)> = DECISIONS
        .try_lock_for(Duration::from_millis(200))
        .map(|d| d.iter().map(|(n, k)| (n.clone(), k.clone())).collect())
        .unwrap_or_default();
    let repeated = repeated_totals(kernels.iter().map(|(_, k)| k));
    Report {
        version: env!("CARGO_PKG_VERSION"),
        real_library: crate::cl::source().map(str::to_string),
        intercepted_calls: calls.values().sum(),
        calls,
        marshal: Marshal {
            to_device_layout: TO_DEVICE.load(Relaxed),
            to_host_layout: TO_HOST.load(Relaxed),
            bytes: MARSHAL_BYTES.load(Relaxed),
            device_ns: MARSHAL_NS.load(Relaxed),
            fused: FUSED.load(Relaxed),
            chunked_reads: CHUNKED.load(Relaxed),
        },
        cache: cache_report(),
        fallbacks,
        fallbacks_not_listed: FALLBACKS_DROPPED.load(Relaxed),
        rewritten_kernels: REWRITTEN.load(Relaxed),
        rewrite_refusals: REFUSED.load(Relaxed),
        launches_rewritten: LAUNCH_REWRITTEN.load(Relaxed) + repeated.asta,
        launches_as_written: LAUNCH_ORIGINAL.load(Relaxed) + repeated.host,
        launches_repeated: repeated.asta + repeated.host,
        launches_repeated_without_copies: PLAIN_REPEATED.load(Relaxed),
        launches_in_lane: LANE.load(Relaxed),
        queues_profiled: QUEUES_PROFILED.load(Relaxed),
        contexts_released: CONTEXTS_RELEASED.load(Relaxed),
        contexts_left_referenced: CONTEXTS_LEFT.load(Relaxed),
        policy: PolicyReport {
            policy: config::get().policy,
            kernels: kernels
                .iter()
                .filter_map(|(n, k)| Some((n.clone(), k.snapshot(Duration::from_millis(200))?)))
                .collect(),
            tiles: TILES.try_lock_for(Duration::from_millis(200)).map(|d| d.clone()).unwrap_or_default(),
            copies_not_loaded: DECLINED
                .try_lock_for(Duration::from_millis(200))
                .map(|d| said_once(&d))
                .unwrap_or_default(),
            copies_waited_for_ms: BOUGHT
                .try_lock_for(Duration::from_millis(200))
                .map(|d| d.clone())
                .unwrap_or_default(),
        },
    }
}

/// The human summary printed by `CLAYOUT_STATS=1`.
pub fn summary(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "clayout {} statistics", r.version);
    let _ = writeln!(s, "  OpenCL calls intercepted: {}", r.intercepted_calls);
    let mut top: Vec<_> = r.calls.iter().collect();
    top.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (name, n) in top.iter().take(12) {
        let _ = writeln!(s, "    {n:>10}  {name}");
    }
    if top.len() > 12 {
        let _ = writeln!(
            s,
            "    {:>10}  other entry points ({})",
            top[12..].iter().map(|x| *x.1).sum::<u64>(),
            top.len() - 12
        );
    }
    let m = &r.marshal;
    let _ = writeln!(
        s,
        "  conversions: {} to device layout, {} to host layout, {:.1} MiB, {:.3} ms on the device",
        m.to_device_layout,
        m.to_host_layout,
        m.bytes as f64 / (1 << 20) as f64,
        m.device_ns as f64 / 1e6
    );
    if m.fused > 0 {
        let _ = writeln!(s, "  conversions to device layout made by the launches themselves (fused): {}", m.fused);
    }
    if m.chunked_reads > 0 {
        let _ = writeln!(s, "  reads converted back chunk by chunk, beside their transfer: {}", m.chunked_reads);
    }
    s.extend(cache_summary(&r.cache));
    let _ = writeln!(s, "  kernels rewritten: {}, refused: {}", r.rewritten_kernels, r.rewrite_refusals);
    if r.launches_rewritten + r.launches_as_written > 0 {
        let _ = writeln!(
            s,
            "  launches of rewritten kernels: {} in ASTA, {} as written",
            r.launches_rewritten, r.launches_as_written
        );
    }
    if r.launches_repeated > 0 {
        let _ = writeln!(s, "  of those, repeating their kernel's last launch: {}", r.launches_repeated);
    }
    if r.launches_repeated_without_copies > 0 {
        let _ = writeln!(
            s,
            "  launches of kernels not rewritten repeating their kernel's last launch: {}",
            r.launches_repeated_without_copies
        );
    }
    if r.launches_in_lane > 0 {
        let _ = writeln!(s, "  of the repeating launches, through the express lane: {}", r.launches_in_lane);
    }
    for (k, d) in &r.policy.kernels {
        let runs: Vec<String> = d.launches.iter().map(|(v, n)| format!("{n} {}", v.label)).collect();
        let _ = writeln!(s, "  {k} (policy {}): {}", format!("{:?}", r.policy.policy).to_lowercase(), runs.join(", "));
        for reason in &d.reasons {
            let _ = writeln!(s, "    {reason}");
        }
    }
    if r.contexts_left_referenced > 0 {
        let _ = writeln!(
            s,
            "  contexts still referenced by clayout's objects at their release: {} of {}",
            r.contexts_left_referenced, r.contexts_released
        );
    }
    let _ = writeln!(s, "  fallbacks: {}", r.fallbacks.len() as u64 + r.fallbacks_not_listed);
    for f in &r.fallbacks {
        let _ = writeln!(s, "    {}: {}", f.object, f.reason);
    }
    s
}

/// Writes the report where `CLAYOUT_STATS` says; called once at exit.
pub fn write_at_exit() {
    let cfg = config::get();
    // A process that made no OpenCL call (a shell or launcher that inherited LD_PRELOAD) must
    // not overwrite the report of the OpenCL program it ran.
    if cfg.disable || crate::cl::source().is_none() {
        return;
    }
    match &cfg.stats {
        StatsOut::None => {}
        StatsOut::Summary => eprint!("{}", summary(&report())),
        StatsOut::Json(path) => {
            let json = serde_json::to_string_pretty(&report()).unwrap_or_default();
            if let Err(e) = std::fs::write(path, json + "\n") {
                crate::log::error(&format!("cannot write CLAYOUT_STATS={path}: {e}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Declined;

    impl std::fmt::Display for Declined {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("declined")
        }
    }

    impl Reasoned for Declined {
        fn key(&self) -> ReasonKey {
            ReasonKey::Typed(0, "declined", "")
        }
        fn kept(&self) -> KeptReason {
            KeptReason(std::sync::Arc::new(Declined))
        }
    }

    static WHY: Declined = Declined;

    #[test]
    fn launches_left_untracked_are_counted_with_their_reason_once_and_can_be_taken_back() {
        let k = KernelStats::default();
        let written = Form { order: 0, key: "written", label: "as written", device_layout: false };
        for _ in 0..3 {
            untracked_launch(&k, written, &WHY);
        }
        repeated_launch(&k, written);
        repeated_launch(&k, written);
        untracked_withdrawn(&k, false, written);
        untracked_withdrawn(&k, true, written);
        let d = k.snapshot(Duration::from_secs(1)).unwrap();
        assert_eq!(d.launches.get(&written), Some(&3));
        assert_eq!(d.reasons.iter().map(|r| r.0.to_string()).collect::<Vec<_>>(), ["declined"]);
        // A reason given through `decision` too is kept once.
        decision(&k, written, &WHY);
        let d = k.snapshot(Duration::from_secs(1)).unwrap();
        assert_eq!((d.launches.get(&written), d.reasons.len()), (Some(&4), 1));
    }
}
