//! What a program's annotations ask of the runtime: read when the program is built or
//! compiled, from the program as the device compiler sees it with that build's options
//! (`source`); the tile macro added to the build when kernels are written for ASTA; and per
//! kernel, at its first launch, a plan that says which arguments go to which layout with which
//! structure size.

use super::plan::{KernelPlan, ParamPlan, PlanResult, ProvenOut};
use super::source::{self, GivenHeader, Seen};
use super::transparent::private::{Private, PrivateProgram};
use super::transparent::{rewrite, Rewrites, TransparentPlan};
use super::worker::Ticket;
use super::{probe, tile};
use crate::annotation::{
    annotate_program, annotations_in_source, infer, parse_side_file, DeviceLayout, HostLayout, KernelInference,
    KernelLayout, Origin, ScalarArg, SideEntry,
};
use crate::layout::Layout;
use crate::registry::{self, Handle, KernelInfo, ProgramInfo, ProgramOrigin, Table};
use once_cell::sync::{Lazy, OnceCell};
use opencl_sys::*;
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::CString;
use std::sync::Arc;

/// A rewritten kernel and the plan of its launches while its copies are built.
pub type Building = (Arc<rewrite::RewrittenKernel>, Arc<KernelPlan>);

/// Clayout's record of one application program.
#[derive(Debug)]
pub struct Program {
    pub handle: Handle,
    pub facts: Arc<ProgramInfo>,
    /// The annotations of the program's latest build, compile or link, when it has any.
    dl: Mutex<Option<Arc<ProgramDl>>>,
    /// Under the cost model, clayout's builds for the program wait until then: the application
    /// has by then run, after its build, as long as that build took (`app_build_took`).
    hold_until: Mutex<Option<std::time::Instant>>,
    /// Its copies were not loaded inside its build, their load being worth less than it costs
    /// (`cost::worth`): its launches run as written until the run has forgone what the load costs
    /// (`loading_pays`; `buys_copies`).
    pub forgone: Arc<crate::runtime::cost::worth::Forgone>,
    /// The application's last build of it came from its driver's cache (`QUICK_BUILD`): what
    /// clayout's cache holds for it is loaded inside that call (`after_build`).
    quick_build: std::sync::atomic::AtomicBool,
    /// What the application's last build of it took, in ns (0: not built yet): the least the
    /// copies' load can cost before one was timed (`cost::worth::verdict`).
    app_build_ns: std::sync::atomic::AtomicU64,
    /// The times the verdict read, by copy name: those a model keeps until the copies' tile is
    /// known leave out the ASTA copy's (`KernelModel::load_read`).
    declined_times: Mutex<Vec<(String, crate::runtime::cost::kernel::TimesByClass)>>,
    /// Whether its run is tracked, or left untracked until its copies are bought (`untracked`).
    pub untracked: super::untracked::Mark,
    /// What the untracked run's journal may take of its launches (`journal_takes`,
    /// `JournalFacts`): the kernels of its declined copies whose times were read, the buckets at
    /// which each one's time as written is settled, and what a launch forgoes at each bucket.
    journal: Mutex<JournalFacts>,
    /// What the launches the journal may still take can forgo, in ns, with nothing to buy
    /// (`u64::MAX`, the load's cost unknown): less than what the copies' load costs, so that the
    /// launch that reaches it is counted in its call and buys them (`JournalFacts::budget`).
    journal_left: std::sync::atomic::AtomicU64,
}

impl Program {
    /// Whether the untracked run's journal may take a launch of its kernel `name` of work-item
    /// bucket `items`, and how many timings as written the model may still want of the kernel
    /// there (Some(0): its time there is settled; `Buckets::wanted`). None where the kernel had
    /// no times to read (a kernel whose inferred annotation waits for its stride among them:
    /// the tracked path completes it), where its time is not settled there and the launch
    /// cannot be timed by its event (`by_event`, asked only then: the model times it on the
    /// tracked path), or where what the launch forgoes would reach the copies' load
    /// (`journal_left`): that launch buys them, counted in its call.
    pub fn journal_takes(&self, name: &str, items: u8, by_event: impl FnOnce() -> bool) -> Option<u32> {
        use std::sync::atomic::Ordering::Relaxed;
        let (wanted, forgoes) = {
            let j = self.journal.lock();
            let (_, buckets) = j.buckets.iter().find(|(n, _)| n == name)?;
            (buckets.wanted(items)?, *j.forgoes.get(usize::from(items))?)
        };
        if wanted > 0 && !by_event() {
            return None;
        }
        self.journal_left.fetch_update(Relaxed, Relaxed, |left| JournalFacts::take(left, forgoes)).ok()?;
        Some(wanted)
    }
}

/// Work-item buckets (`launch::items_class`), one bit each, at which a kernel's time as written
/// was timed (at least once) and is settled (`Times::unsettled`).
#[derive(Clone, Copy, Debug, Default)]
struct Buckets {
    timed: u64,
    settled: u64,
}

impl Buckets {
    /// The timings the model still wants at bucket `items`: none where the time is settled, one
    /// where it was timed, as many as settle it (`TIMED_LAUNCHES`) where it was never timed.
    fn wanted(&self, items: u8) -> Option<u32> {
        let bit = |m: u64| m.checked_shr(u32::from(items)).map(|m| m & 1 == 1);
        Some(match (bit(self.settled)?, bit(self.timed)?) {
            (true, _) => 0,
            (false, true) => 1,
            (false, false) => crate::runtime::cost::model::TIMED_LAUNCHES,
        })
    }
}

/// A build that takes at most this long came from the driver's cache: compiling any of the
/// programs measured takes longer (NVIDIA H200: 99-235 ms for the samples, PoCL: 600 ms), a build
/// its cache answers less (NVIDIA: 2-5 ms, PoCL: 28-35 ms).
const QUICK_BUILD: std::time::Duration = std::time::Duration::from_millis(50);

/// What clayout's builds are taken to cost where the application's build tells nothing (it came
/// from its driver's cache): about the longest of them not in a driver's cache (NVIDIA H200:
/// 80-200 ms per copy, 310-840 ms per conversion program; PoCL here: about 0.6 s).
const UNCACHED_BUILD: std::time::Duration = std::time::Duration::from_secs(1);

impl Program {
    pub fn dl(&self) -> Option<Arc<ProgramDl>> {
        self.dl.lock().clone()
    }
}

/// The annotations of one build of a program.
#[derive(Debug)]
pub struct ProgramDl {
    /// Annotated kernels by name: their checked layout, or why clayout leaves them alone.
    pub kernels: HashMap<String, Result<KernelLayout, String>>,
    /// The text they were read from, and what its compiler needs.
    pub seen: Seen,
    /// The tile the program was built with (`-D CLAYOUT_TILE=T`).
    pub tile: Option<u32>,
    /// Why the tile the application's build options give cannot be used, if it cannot.
    tile_error: Option<String>,
    /// Build options as clayout passed them (the application's, plus the tile macro when the
    /// program has kernels written for ASTA).
    pub options: String,
    /// Structure sizes the device compiler reported, by type name.
    sizes: Mutex<HashMap<String, u64>>,
    /// The transparent mode's copies of the kernels annotated without a device layout.
    pub rewrites: Option<Rewrites>,
    /// The preparation of this build, on clayout's worker (`prepare`).
    prepared: Mutex<Option<Ticket>>,
    /// Inferred annotations whose stride is a scalar parameter, waiting for the application to
    /// set it (`stride_set`, `resolve`).
    waiting: Vec<KernelInference>,
    /// Inferred annotations completed with stride values, and the values they assumed.
    late: Late,
    /// The key of the program's records (`program_key`), made once: a hash of its whole text.
    key: OnceCell<String>,
    /// The records the verdict after the application's build reads, read beside that build
    /// (`Build::read_ahead`), until the verdict takes them.
    ahead: Mutex<Option<Ahead>>,
    /// Whether clayout's cache marked the program as run before (`first_run`), read beside the
    /// application's build too: a file read inside the build call after it.
    seen_before: OnceCell<bool>,
    /// Commands were left untracked when it was read, until the verdict on its build
    /// (`untracked::settle`).
    deferred: bool,
    /// Its kernels' plans while their copies are built (`building_plan`), by kernel name, worked
    /// out beside the application's build (`Build::read_ahead`): a declined run's first launch of
    /// each kernel made it, some 2,300 instructions of code run nowhere else.
    building_plans: OnceCell<HashMap<String, Building>>,
    /// Its `worth` record's key and its rewritten kernels' times keys (`worth_keys`).
    worth_keys: OnceCell<Option<(String, KeyedKernels)>>,
}

/// What the verdict on loading the copies (`loading_pays`) reads of clayout's cache, read on the
/// thread that reads the program while the application's build runs: on the H100 clayout's work
/// inside the build call after that build took 0.41-0.57 ms (medians), and 0.23-0.29 ms once
/// these reads (and the copies' source hash) were made beside it.
#[derive(Debug)]
struct Ahead {
    /// For the program's record key and its kernels' times keys, as the verdict will ask them:
    /// both come from `worth_keys`, made once per build.
    times: Vec<Option<crate::runtime::cost::kernel::TimesByClass>>,
    worth: Option<crate::runtime::cost::worth::Worth>,
    whole: bool,
    /// What the runs the verdict weighs could gain, and which runs those are (`Worth::weighed`),
    /// worked out from the records here rather than in the build call.
    gains: Option<Vec<crate::runtime::cost::worth::RunGain>>,
    alike: crate::runtime::cost::worth::Alike,
    /// What the journal may take if the verdict declines the copies.
    journal: JournalFacts,
}

/// Scalar arguments and the values a plan assumed for them.
pub type Fixed = Vec<(ScalarArg, u64)>;

/// Inferred annotations completed with stride values (a launch's, or remembered from an earlier
/// run): kernel by kernel, the side-file entries and the scalar arguments whose values every
/// launch of the rewritten copy must have.
#[derive(Clone, Debug, Default)]
pub struct Late {
    entries: Vec<SideEntry>,
    fixed: HashMap<String, Fixed>,
}

impl ProgramDl {
    /// Whether kernel `name`'s inferred annotation waits for its stride's value (`resolve`).
    pub fn waits_for_stride(&self, name: &str) -> bool {
        self.waiting.iter().any(|w| w.kernel == name)
    }

    fn marshals(&self) -> bool {
        self.kernels.values().any(|k| k.as_ref().map(|l| l.marshals()).unwrap_or(false))
    }
}

static PROGRAMS: Lazy<Table<Program>> = Lazy::new(Table::default);

pub fn get(h: Handle) -> Option<Arc<Program>> {
    PROGRAMS.get(h)
}

/// A program the application created. Its annotations are read when it is built.
pub fn created(h: Handle, facts: Arc<ProgramInfo>) {
    if facts.origin != ProgramOrigin::Source && facts.origin != ProgramOrigin::Linked {
        crate::log::info_with(|| {
            format!(
                "program {h:#x} created from {:?}: no source to read annotations from, its kernels run as they are",
                facts.origin
            )
        });
    }
    PROGRAMS.insert(
        h,
        Program {
            handle: h,
            facts,
            dl: Mutex::new(None),
            hold_until: Mutex::new(None),
            forgone: Default::default(),
            quick_build: Default::default(),
            app_build_ns: Default::default(),
            declined_times: Default::default(),
            untracked: Default::default(),
            journal: Default::default(),
            journal_left: Default::default(),
        },
    );
}

/// The application's last reference to a program is gone (its kernels keep their own).
pub fn released(h: Handle) {
    PROGRAMS.remove(h);
}

/// The most of a side file clayout reads: annotations are a few lines per kernel, and a path
/// that names something endless (`/dev/zero`, a pipe nobody closes) must not hang the program.
const SIDE_FILE_LIMIT: u64 = 4 << 20;

/// The text of a regular file of at most `limit` bytes.
fn read_limited(path: &str, limit: u64) -> Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // Non-blocking, so that opening a FIFO nobody writes to does not wait; only a regular file
    // is read.
    let f =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(|e| e.to_string())?;
    let meta = f.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    // Room for what the file holds now, read in one call where it does not grow meanwhile: from
    // an empty vector the reads went 32, 32, 64... bytes at a time, inside the application's
    // first build call.
    let mut bytes = Vec::with_capacity(meta.len().min(limit) as usize + 1);
    f.take(limit + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > limit {
        return Err(format!("it is larger than {} MiB", limit >> 20));
    }
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".into())
}

/// The text of the side file named by CLAYOUT_ANNOTATIONS, read once: None where none is named,
/// why not where it cannot be read (`side_entries` says it).
fn side_text() -> Option<&'static Result<String, String>> {
    static TEXT: OnceCell<Option<Result<String, String>>> = OnceCell::new();
    TEXT.get_or_init(|| Some(read_limited(crate::config::get().side_file()?, SIDE_FILE_LIMIT))).as_ref()
}

/// The side file's lines, their comments left out.
fn side_lines() -> impl Iterator<Item = &'static str> {
    let text = match side_text() {
        Some(Ok(text)) => text.as_str(),
        _ => "",
    };
    crate::annotation::uncommented_lines(text)
}

/// The side file named by CLAYOUT_ANNOTATIONS, parsed once; bad lines are reported once. Parsed
/// where a program is read for its annotations, beside the application's build when it can be:
/// the application's first build call parsed it before its build (some 25,000 instructions for
/// the samples' three lines).
fn side_entries() -> &'static [SideEntry] {
    static SIDE: OnceCell<Vec<SideEntry>> = OnceCell::new();
    SIDE.get_or_init(|| {
        let Some(path) = crate::config::get().side_file().map(str::to_string) else { return Vec::new() };
        match side_text() {
            None => Vec::new(),
            Some(Ok(text)) => {
                let (entries, errors) = parse_side_file(text);
                for e in errors {
                    crate::log::warn(&format!("CLAYOUT_ANNOTATIONS={path}: {e}; that line is ignored"));
                    crate::stats::fallback(&format!("annotation file {path}"), &e.to_string());
                }
                entries
            }
            Some(Err(e)) => {
                crate::log::warn(&format!("CLAYOUT_ANNOTATIONS={path} cannot be read ({e}); no side-file annotations"));
                Vec::new()
            }
        }
    })
}

/// The kernels of the side file that some program the application built turned out to have.
static ATTACHED: Lazy<Mutex<BTreeSet<String>>> = Lazy::new(Default::default);

/// Every side-file annotation that no program the application built has a kernel for, said
/// once, at exit (a kernel name misspelt, a program never built): an annotation is never
/// dropped without a word. Under CLAYOUT_STRICT=1 it is an error.
pub fn report_unattached() {
    let attached = ATTACHED.lock();
    let path = crate::config::get().annotations.clone().unwrap_or_default();
    for e in side_entries().iter().filter(|e| !attached.contains(&e.kernel)) {
        let why = format!("no program the application built has a kernel `{}`", e.kernel);
        let line = e.annotation.origin.to_string();
        let level =
            if crate::config::get().strict { crate::config::LogLevel::Error } else { crate::config::LogLevel::Warn };
        crate::log::write(level, &format!("CLAYOUT_ANNOTATIONS={path}, {line}: annotation not used ({why})"));
    }
}

/// Whether clayout may read program `h`'s annotations (and rewrite its copies) while the
/// application's build of it runs (`hooks::clBuildProgram`): a program built from source with
/// annotations to read, none of which may be written for a device layout (whose kernels are built
/// with the tile macro, so that the reading must come first). Any mention of ASTA in its source
/// or in the side file outside its comments counts as such: every device layout names it
/// (`-> ASTA`, `AOS2ASTA_<struct>`).
pub fn reads_beside_build(h: Handle) -> bool {
    let Some(program) = get(h) else { return false };
    let sources = &program.facts.sources;
    program.facts.origin == ProgramOrigin::Source
        && may_be_annotated(sources)
        && !side_facts().mentions_asta
        && !sources.iter().any(|s| mentions_asta(s.as_bytes()))
}

/// The search for "asta" of `mentions_asta`.
static ASTA: once_cell::sync::Lazy<memchr::memmem::Finder<'static>> =
    once_cell::sync::Lazy::new(|| memchr::memmem::Finder::new(b"asta"));

/// What the application's first build call would do before its build, done on clayout's helper
/// thread beside the creation of its first context (`helper::start`), which takes the driver
/// tens of milliseconds: the side file read (an open, a stat and a read of the file system) and
/// looked at, and the search for ASTA made (the processor's features asked). With them inside
/// the application's build call, clayout's part of particles' on PoCL ran 22,700 instructions
/// in 545 lines of code not run before in the process (callgrind with caches that keep every
/// line), 15,500 in 392 without; with no program annotated (a side file of comments), 5,800 in
/// 248 against 3,900 in 125.
pub fn ahead_of_builds() {
    once_cell::sync::Lazy::force(&ASTA);
    side_facts();
}

/// What every build asks of the side file before its build, found once.
struct SideFacts {
    /// A line that is not a comment.
    any_line: bool,
    /// A line that mentions ASTA (a kernel written for a device layout, `reads_beside_build`).
    mentions_asta: bool,
}

fn side_facts() -> &'static SideFacts {
    static FACTS: OnceCell<SideFacts> = OnceCell::new();
    FACTS.get_or_init(|| SideFacts {
        any_line: side_lines().any(|l| !l.trim().is_empty()),
        mentions_asta: side_lines().any(|l| mentions_asta(l.as_bytes())),
    })
}

/// Whether `text` holds "asta" in any case. Inside the application's build call, before its
/// build: a program's text is folded to lower case a stretch at a time and searched with
/// memchr's vector search, where comparing every four-byte window took some 25,000
/// instructions for particles' few kilobytes, a look at each byte for an `a` first 10,000, and
/// memchr's search for each `a` 7,000. The fold (`| 0x20`) makes `a`, `s` and `t` of exactly
/// those letters in either case. A short text (a line of the side file) is looked at byte by
/// byte.
fn mentions_asta(text: &[u8]) -> bool {
    const STRETCH: usize = 4096;
    if text.len() < 256 {
        return text
            .iter()
            .enumerate()
            .any(|(i, &b)| b | 0x20 == b'a' && text.get(i..i + 4).is_some_and(|w| w.eq_ignore_ascii_case(b"asta")));
    }
    let mut folded = Vec::with_capacity(text.len().min(STRETCH + 3));
    // Each stretch reaches three bytes into the next: a mention that starts in it ends there.
    (0..text.len()).step_by(STRETCH).any(|start| {
        folded.clear();
        folded.extend(text[start..(start + STRETCH + 3).min(text.len())].iter().map(|b| b | 0x20));
        ASTA.find(&folded).is_some()
    })
}

/// Whether anything could annotate a program of these sources: a `DL:` comment, a side file
/// with a line that is not a comment (or one that cannot be read, which its reading says), or the
/// inference.
fn may_be_annotated(sources: &[String]) -> bool {
    crate::config::get().infers()
        || matches!(side_text(), Some(Err(_)))
        || side_facts().any_line
        || sources.iter().any(|s| memchr::memmem::find(s.as_bytes(), b"DL:").is_some())
}

/// The inferred annotations of a program's text (CLAYOUT_ANNOTATIONS=auto, CLAYOUT_SUGGEST) for
/// its kernels that neither the source nor the side file annotates, as side-file entries; and
/// those waiting for a launch to know their stride. `late` holds those already completed.
fn inferred(text: &str, late: &mut Late) -> (Vec<SideEntry>, Vec<KernelInference>) {
    if !crate::config::get().infers() {
        return (Vec::new(), Vec::new());
    }
    let own: Vec<String> = annotations_in_source(text).into_iter().filter_map(|a| a.kernel).collect();
    let (mut entries, mut waiting) = (Vec::new(), Vec::new());
    for inf in infer(text) {
        if own.contains(&inf.kernel) || side_entries().iter().any(|e| e.kernel == inf.kernel) {
            continue;
        }
        super::suggest::proposed(&inf);
        if late.fixed.contains_key(&inf.kernel) {
            continue;
        }
        match inf.lines(&|_| None) {
            Ok(lines) => entries.extend(inferred_entries(&lines)),
            Err(_) => {
                // The values of the kernel's first launch in an earlier run of this program, if
                // any: prepared now, as a side file would be, and held to them at every launch.
                let remembered: Option<BTreeMap<String, u64>> =
                    crate::cache::disk::get_json("strides", &strides_key(text, &inf.kernel));
                match remembered.and_then(|v| completed(&inf, &v)) {
                    Some((lines, fixed)) => {
                        late.entries.extend(inferred_entries(&lines));
                        late.fixed.insert(inf.kernel.clone(), fixed);
                    }
                    None => waiting.push(inf),
                }
            }
        }
    }
    (entries, waiting)
}

/// The lines of an inference whose stride parameters have `values`, and those arguments.
fn completed(inf: &KernelInference, values: &BTreeMap<String, u64>) -> Option<(Vec<String>, Fixed)> {
    let lines = inf.lines(&|n| values.get(n).copied()).ok()?;
    let mut fixed: Fixed = Vec::new();
    for (name, index, int_type) in inf.proposals.iter().filter_map(|p| p.stride_param()) {
        if fixed.iter().all(|(a, _)| a.name != name) {
            fixed.push((ScalarArg { arg_index: index as u32, name: name.to_string(), int_type }, *values.get(name)?));
        }
    }
    Some((lines, fixed))
}

/// The on-disk record of the stride values a kernel's inferred annotation was completed with.
fn strides_key(text: &str, kernel: &str) -> String {
    format!("{:016x}|{kernel}", crate::cache::disk::fnv1a(text.as_bytes()))
}

/// Keeps the stride values a launch of `kernel` had, so that the next run of the program
/// prepares its copy for them at build time.
pub fn remember_strides(program: &Program, kernel: &str, values: &BTreeMap<String, u64>) {
    if let Some(dl) = program.dl() {
        crate::cache::disk::put_json("strides", &strides_key(&dl.seen.text, kernel), values);
    }
}

/// Inferred side-file lines as entries (they parse: `infer` checked each extent).
fn inferred_entries(lines: &[String]) -> Vec<SideEntry> {
    let (mut entries, _) = parse_side_file(&lines.join("\n"));
    for e in &mut entries {
        e.annotation.origin = Origin::Inferred;
    }
    entries
}

/// Reads the annotations of one build's view of a program (and the side file, and the inferred
/// ones). None when nothing in it is annotated. Every annotation clayout cannot use is reported
/// here, once.
/// `defer`: commands may stay untracked until the verdict on this build (`untracked`), which
/// `ProgramDl::deferred` then says they do.
fn discover(
    seen: Seen,
    options: String,
    tile: (Option<u32>, Option<String>),
    late: Late,
    defer: bool,
) -> Option<Arc<ProgramDl>> {
    let mut late = late;
    let (inferred, waiting) = inferred(&seen.text, &mut late);
    let side: Vec<SideEntry> =
        side_entries().iter().cloned().chain(inferred).chain(late.entries.iter().cloned()).collect();
    let found = annotate_program(&seen.text, &side);
    if found.is_empty() && waiting.is_empty() {
        return None;
    }
    // Kernels written for a device layout (their annotations say so, whether usable or not)
    // cannot run without conversions: commands are tracked before they can be launched.
    let deferred =
        defer && super::untracked::may_defer(found.iter().any(|a| a.layout.as_ref().is_ok_and(|l| l.marshals())));
    if !deferred {
        super::untracked::start("an annotated program was read");
    }
    let mut kernels = HashMap::new();
    for a in found {
        let outcome = a.layout.map_err(|e| e.to_string());
        match (&a.kernel, &outcome) {
            (Some(k), Err(why)) => {
                super::suggest::verdict(k, Err(format!("annotation not used ({why})")));
                crate::log::warn(&format!("kernel {k}: annotation not used ({why}); the kernel runs as written"));
                crate::stats::fallback(&format!("kernel {k}"), why);
            }
            (None, Err(why)) => {
                crate::log::warn(&format!("annotation not used ({why})"));
                crate::stats::fallback("annotation", why);
            }
            _ => {}
        }
        if let Some(k) = a.kernel {
            kernels.insert(k, outcome);
        }
    }
    ATTACHED.lock().extend(kernels.keys().cloned());
    if kernels.values().any(|k| k.as_ref().is_ok_and(|l| l.marshals())) {
        // Its kernels need their buffers in a device layout: no launch may be noted after its
        // enqueue once they can run (runtime::speculate).
        super::speculate::off_and_drain();
    }
    let rewrites = match &seen.unsure {
        None => rewrite::rewrite_program(&seen.text, &kernels).map(Rewrites::new),
        Some(why) => {
            rewrite::refuse_all(&kernels, &format!("the program's preprocessing is not certain: {why}"));
            None
        }
    };
    Some(Arc::new(ProgramDl {
        kernels,
        seen,
        tile: tile.0,
        tile_error: tile.1,
        options,
        sizes: Mutex::new(HashMap::new()),
        rewrites,
        prepared: Mutex::new(None),
        waiting,
        late,
        key: OnceCell::new(),
        ahead: Mutex::new(None),
        seen_before: OnceCell::new(),
        deferred,
        building_plans: OnceCell::new(),
        worth_keys: OnceCell::new(),
    }))
}

/// What one build or compile of a program is to be, from clayout's side: the options to build
/// with instead of the application's (None: the application's), and the annotations read. Given
/// to [`built`] once the real call succeeded.
pub struct Build {
    pub options: Option<CString>,
    dl: Option<Arc<ProgramDl>>,
}

/// Before a build or compile of `program` with the application's `options` for `device`
/// (`headers`: those given to `clCompileProgram`): reads its annotations from the program as
/// the compiler will see it; the options to build with are the application's plus
/// `-D CLAYOUT_TILE=T` when the program has kernels written for ASTA (unless it defines that
/// itself).
pub fn build_options(
    program: &Program,
    options: Option<&str>,
    device: Option<cl_device_id>,
    headers: &[GivenHeader],
) -> Build {
    let none = Build { options: None, dl: None };
    if program.facts.origin != ProgramOrigin::Source || !may_be_annotated(&program.facts.sources) {
        return none;
    }
    let user = options.unwrap_or("");
    let seen = source::see(&program.facts.sources, user, device, headers);
    let Some(dl) = discover(seen, user.to_string(), (None, None), Late::default(), true) else { return none };
    if dl.deferred {
        super::untracked::defer(&program.untracked);
    }
    if !dl.marshals() {
        return Build { options: None, dl: Some(dl) };
    }
    if let Some(Err(why)) = tile::user_tile_raw(user) {
        // The application's own kernels get its value; clayout's plans refuse it.
        let seen = dl.seen.clone();
        return Build {
            options: None,
            dl: discover(seen, user.to_string(), (None, Some(why)), Late::default(), false),
        };
    }
    // The program is read again as the build with the tile macro will see it.
    let (tile, opts) = tile::with_tile(user, device, None);
    let seen = source::see(&program.facts.sources, &opts, device, headers);
    let dl = discover(seen, opts.clone(), (Some(tile), None), Late::default(), false);
    Build { options: CString::new(opts).ok(), dl }
}

/// The real build or compile succeeded (or, with a callback, started): its annotations are the
/// program's from now on.
pub fn built(program: &Program, build: Build) {
    *program.dl.lock() = build.dl;
}

impl Build {
    /// Reads, beside the application's build (`hooks::build_beside`), what the verdict after it
    /// will read of clayout's cache (`loading_pays`): the records, and the kernels' run lengths
    /// and habits into their tables. Under `auto` only, where that verdict is made.
    pub fn read_ahead(&self, program: &Program) {
        let Some(dl) = self.dl.as_ref().filter(|dl| !dl.marshals() && worth_decides()) else { return };
        let Some((key, keyed)) = worth_keys(program, dl) else { return };
        let _ = dl.seen_before.set(seen_before(&key));
        let kernels: Vec<Arc<str>> = keyed.iter().map(|(_, k)| k.clone()).collect();
        let (times, worth) = verdict_records(&key, &kernels);
        let journal = JournalFacts::of(dl, &keyed, &times);
        kernels.iter().for_each(crate::runtime::cost::habits::preload);
        let whole = dl.rewrites.as_ref().is_some_and(|rw| rw.whole_in_cache());
        // The verdict weighs the runs with these arguments (`weighed_gains`): read here, where
        // reading /proc/self/cmdline in the build call took six system calls.
        let (gains, alike) = weighed_gains(&times, worth.as_ref());
        let _ = dl
            .building_plans
            .set(dl.kernels.keys().filter_map(|name| Some((name.clone(), plan_while_building(dl, name)?))).collect());
        *dl.ahead.lock() = Some(Ahead { times, worth, whole, gains, alike, journal });
        // The models the verdict loads start the records' writer, and its jobs clayout's
        // worker: their threads are started here.
        crate::cache::disk::start_writer();
        super::worker::start();
    }
}

/// The application's build of `program` took `took`. clayout's own builds for it (the rewritten
/// copies, conversion kernels) cost about as much when that build compiled: on a machine whose
/// driver has not compiled the program before, a second or more. Under the cost model they
/// start only once the application has run that long again, ski-rental style: a run too short
/// to repay them never pays for them (the worker drops jobs not started when the process
/// exits, and must wait for one that has), and a longer run has spent at least as much as they
/// cost before paying for them. A build its driver answered from its own cache (`QUICK_BUILD`)
/// says nothing of what clayout's builds cost: what clayout's cache holds is loaded inside it,
/// and what it lacks is compiled, which that driver may never have done. In the program's first
/// run under clayout those builds wait for an uncompiled program's price, `UNCACHED_BUILD` (on
/// the H100, a first run of one iteration with clayout's cache empty and the driver's warm for
/// the application's program waited 0.5-0.7 s at exit for a build of clayout's that had started
/// 5 ms after the application's); from its second run on, for the application's build time
/// again, so that a program whose runs are all shorter than that still gets its copies, paying
/// at most one build's wait at the exit of that run.
pub fn app_build_took(program: &Program, took: std::time::Duration) {
    use crate::config::{get, Policy};
    let quick_driver = took <= QUICK_BUILD || crate::fault::inject("quick-build");
    let first_run = quick_driver && get().policy == Policy::Auto && first_run(program);
    let price = if first_run { took.max(UNCACHED_BUILD) } else { took };
    let wait = get().build_after.hold(price);
    // A worker that does not get to the copies during the run, as NVIDIA's does not while the
    // run keeps the device busy: the tests of a declined run's wait for them.
    let wait = if crate::fault::inject("hold") { std::time::Duration::from_secs(3600) } else { wait };
    let hold = get().policy == Policy::Auto && !wait.is_zero();
    *program.hold_until.lock() = hold.then(|| std::time::Instant::now() + wait);
    // Loaded inside the build wherever the copies would otherwise wait: held back (auto), or
    // waited for by the first launch (the other policies, and CLAYOUT_BUILD_AFTER=wait; under
    // `always` and `never` that first launch waited 4.5-8.4 ms on the H200 for copies clayout's
    // cache held). A fixed CLAYOUT_BUILD_AFTER asks for that wait and nothing else.
    let fixed = get().policy == Policy::Auto && matches!(get().build_after, crate::config::BuildAfter::Ms(_));
    program.quick_build.store(quick_driver && !fixed, std::sync::atomic::Ordering::Relaxed);
    program.app_build_ns.store(took.as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
}

/// Whether this is the first run under clayout of `program` (its text as clayout read it, on its
/// device): none before it left its mark in clayout's cache, which this one now does. With the
/// cache off, every run is a first.
fn first_run(program: &Program) -> bool {
    let Some(dl) = program.dl() else { return true };
    let Some(key) = program_key(program, &dl) else { return true };
    if dl.seen_before.get().copied().unwrap_or_else(|| seen_before(&key)) {
        return false;
    }
    crate::cache::disk::put_json("seen", &key, &1u32);
    true
}

/// Whether clayout's cache marks the program of record key `key` as run before (`first_run`).
fn seen_before(key: &str) -> bool {
    crate::cache::disk::get_json::<u32>("seen", key).is_some()
}

/// A program linked from compiled ones: its annotations are theirs, and its text, for the
/// rewriter, theirs one after the other (when each was read exactly).
pub fn linked(program: &Program, inputs: &[Handle], options: Option<&str>) {
    let dls: Vec<Arc<ProgramDl>> = inputs.iter().filter_map(|h| get(*h)?.dl()).collect();
    if dls.is_empty() {
        return;
    }
    let unsure = dls.iter().find_map(|d| d.seen.unsure.clone());
    let seen = Seen {
        text: dls.iter().map(|d| d.seen.text.as_str()).collect::<Vec<_>>().join("\n"),
        compiler_options: dls[0].seen.compiler_options.clone(),
        unsure,
    };
    *program.dl.lock() = discover(seen, options.unwrap_or("").to_string(), (None, None), Late::default(), false);
}

/// The first launch of a kernel whose inferred annotation waits for a stride parameter: its
/// value at this launch completes the annotation, and the program's annotations are read again
/// with it (the rewritten copies are then built for it, as after a build). The copy holds only
/// for that value: a launch with another runs as written (`KernelPlan::fixed`). None when the
/// value is not set or cannot be read.
fn resolve(program: &Arc<Program>, k: &KernelInfo) -> Option<(Arc<ProgramDl>, bool)> {
    static RESOLVING: Mutex<()> = Mutex::new(());
    let _one = RESOLVING.lock();
    let dl = program.dl()?;
    if dl.kernels.contains_key(&k.name) {
        return Some((dl, false));
    }
    let inf = dl.waiting.iter().find(|w| w.kernel == k.name)?;
    let args = k.args.lock().clone();
    let mut values = BTreeMap::new();
    for (name, index, int_type) in inf.proposals.iter().filter_map(|p| p.stride_param()) {
        let Some(Some(registry::ArgValue::Bytes(b))) = args.get(index) else { return None };
        let v = int_type.decode(b).ok()?;
        super::suggest::stride_seen(&k.name, name, v);
        values.insert(name.to_string(), v);
    }
    let (lines, fixed) = completed(inf, &values)?;
    remember_strides(program, &k.name, &values);
    crate::log::info_with(|| format!("kernel {}: inferred at its first launch: {}", k.name, lines.join("; ")));
    let mut late = dl.late.clone();
    late.entries.extend(inferred_entries(&lines));
    late.fixed.insert(k.name.clone(), fixed);
    let new = discover(dl.seen.clone(), dl.options.clone(), (dl.tile, dl.tile_error.clone()), late, false)?;
    *program.dl.lock() = Some(new.clone());
    Some((new, true))
}

/// Argument `index` of kernel `k` was set: when that completes the stride parameters an
/// inferred annotation of the kernel waits for, the annotation is completed on clayout's worker
/// and its copy prepared there, so that the first launch finds it built (`resolve` at the
/// launch would wait for the build inside the application's timed loop).
pub fn stride_set(program: &Arc<Program>, k: &Arc<KernelInfo>, index: u32) {
    let Some(dl) = program.dl() else { return };
    if dl.kernels.contains_key(&k.name) {
        return;
    }
    let Some(inf) = dl.waiting.iter().find(|w| w.kernel == k.name) else { return };
    let strides: Vec<usize> = inf.proposals.iter().filter_map(|p| p.stride_param().map(|s| s.1)).collect();
    if !strides.contains(&(index as usize)) {
        return;
    }
    {
        let args = k.args.lock();
        if !strides.iter().all(|&i| matches!(args.get(i), Some(Some(registry::ArgValue::Bytes(_))))) {
            return;
        }
    }
    let context = program.facts.context;
    let (program, k) = (program.clone(), k.clone());
    super::worker::submit_after(context, None, move || {
        if let Some((_, true)) = resolve(&program, &k) {
            prepare(&program, false);
        }
    });
}

/// After a build of the program: what its kernels will need (the private program of the
/// rewritten kernels; the structure sizes and conversion kernels of those written for a device
/// layout) is prepared on clayout's worker, so that none of it lands inside the application's
/// calls. `build_running`: the application built with a callback, so the build may still be
/// running. Failures are left for the launches to report.
pub fn prepare(program: &Arc<Program>, build_running: bool) {
    prepare_with(program, build_running, false);
}

/// `prepare`, called by the application's build itself: a build its driver answered from its
/// cache loads what clayout's cache holds at once, in the call (`load_now`).
pub fn after_build(program: &Arc<Program>, build_running: bool) {
    prepare_with(program, build_running, true);
}

fn prepare_with(program: &Arc<Program>, build_running: bool, in_build: bool) {
    let stays = prepare_loaded(program, build_running, in_build);
    // After the load, which enqueues nothing: the program's kernels cannot be launched before
    // the build call returns.
    super::untracked::settle(&program.untracked, stays);
}

/// `prepare_with` but for the program's tracking: whether its run may stay untracked, its
/// copies declined at its build (`untracked`).
fn prepare_loaded(program: &Arc<Program>, build_running: bool, in_build: bool) -> bool {
    let Some(dl) = program.dl() else { return false };
    // Kernels written for a device layout cannot run without what the job makes: not held back.
    let mut hold =
        if dl.marshals() { None } else { program.hold_until.lock().filter(|t| *t > std::time::Instant::now()) };
    let quick =
        in_build && !dl.marshals() && !build_running && program.quick_build.load(std::sync::atomic::Ordering::Relaxed);
    let mut stays = false;
    if quick {
        match loading_pays(program, &dl) {
            Load::Yes(tracked) => {
                if load_now(program, &dl, tracked) {
                    return false;
                }
            }
            // Declined, with every piece in clayout's cache and a purchase to make
            // (`buys_copies`): the copies come when the run has paid for them, not when
            // clayout's thread gets to them. On NVIDIA a load's end waits for the device's queue
            // to empty and holds the application's next enqueue meanwhile: a declined
            // 1000-launch run of particles on the H100 took 5 ms longer than without clayout
            // where the copies never came, and got them after 750-870 launches where they did.
            // Nothing is left to build for a later run.
            Load::No { bought_only: true } => {
                hold = Some(std::time::Instant::now() + BOUGHT_ONLY);
                stays = true;
            }
            // Held back until the run has lasted as long as the application's build: untracked
            // until then too, the first launch that finds them built starting the tracking.
            Load::No { bought_only: false } => stays = true,
        }
    } else if in_build && worth_decides() {
        // Nothing is weighed in this build (the driver compiled the application's program, or
        // a build after a fixed CLAYOUT_BUILD_AFTER), but the run's launches are the program's
        // history all the same: before, a program's first runs on a machine whose driver cache
        // was cold were missing from its record (particles on a fresh H100: its third run's
        // verdict knew only its second).
        if let Some((key, kernels)) = worth_keys(program, &dl) {
            crate::runtime::cost::worth::track(key, kernels.into_iter().map(|(_, k)| k).collect(), None);
        }
    }
    // What the cache holds was just tried, if quick: the job only builds what it lacks.
    submit_prepare(program, &dl, build_running, hold, hold.is_some() && !quick);
    stays
}

/// How long a declined run's copies are held back where only its wait for them should start
/// them (`prepare_with`): longer than any run.
const BOUGHT_ONLY: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// Loads the copies from what clayout's cache holds, on this thread, inside the application's
/// build call; false when something would have to be compiled or measured. For a build the
/// driver answered from its cache: on NVIDIA, loading a program (a module) waits for the
/// device to go idle, and from the application's build on the device is seldom idle until its
/// launches are queued (its uploads, then its launches: lbm's copies loaded on clayout's
/// thread were ready 36 ms after a burst of 30 launches had been queued, in 2-3 ms each at a
/// size whose uploads are short). Here each costs what the application's own build cost.
fn load_now(program: &Program, dl: &ProgramDl, tracked: Option<Tracked>) -> bool {
    let Some(rw) = dl.rewrites.as_ref() else { return false };
    let options = program.facts.build_options.lock().clone().unwrap_or_default();
    let start = std::time::Instant::now();
    let loaded = rw.build_from_cache(&program.facts, &options, &dl.seen.compiler_options);
    // A copy that failed (already said by `build_from_cache`) has nothing to load.
    if let (true, Private::Ready(p)) = (loaded, rw.lookup(&options)) {
        // The device is idle here; in the first launch a kernel's first use would load it.
        let full = p.full_tiles.as_ref().filter(|f| f.raw() != p.program.raw());
        for built in std::iter::once(&p.program).chain(full) {
            let _ = crate::cl::cmd::warm_kernels(built.raw());
        }
        crate::marshal::warm_kernels(program.facts.context as cl_context);
        let took = start.elapsed();
        crate::log::debug_with(|| {
            format!(
                "the rewritten copies loaded from the caches inside the application's build in {:.1} ms",
                took.as_secs_f64() * 1e3
            )
        });
        if let Some((key, kernels)) = tracked {
            crate::runtime::cost::worth::track(key, kernels, Some(took.as_nanos() as f64));
        }
    }
    loaded
}

/// What the copies' worth (`cost::worth`) says of loading them inside the application's build.
enum Load {
    /// Load them; under `auto`, with what the program's record is to learn of the load.
    Yes(Option<Tracked>),
    /// Not; `bought_only`: the copies are whole in clayout's cache and a launch may wait for
    /// them (`buys_copies`), so only that wait is to start their load.
    No { bought_only: bool },
}

/// The key of a program's `worth` record and its rewritten kernels' times keys.
type Tracked = (String, Vec<Arc<str>>);

/// Whether the copies' load inside the application's build pays for itself under `auto`, by the
/// program's history (`cost::worth`); under the other policies it is always made. A declined
/// load is noted for the program's record at once, and its kernels' records are read into their
/// models now: its launches run as written, and their first launches would otherwise read them
/// (some 50,000 instructions each on PoCL).
fn loading_pays(program: &Program, dl: &ProgramDl) -> Load {
    use crate::runtime::cost::worth;
    if !worth_decides() {
        return Load::Yes(None);
    }
    let Some((key, kernels)) = worth_keys(program, dl) else { return Load::Yes(None) };
    let keys: Vec<Arc<str>> = kernels.iter().map(|(_, k)| k.clone()).collect();
    // Read beside the application's build where they were, for the same keys (`worth_keys`).
    let ahead = dl.ahead.lock().take();
    let (times, record, whole, gains, alike, journal) = match ahead {
        Some(a) => {
            crate::log::debug("the copies' records for the verdict were read beside the application's build");
            (a.times, a.worth, Some(a.whole), a.gains, a.alike, Some(a.journal))
        }
        None => {
            let (times, record) = verdict_records(&key, &keys);
            let (gains, alike) = weighed_gains(&times, record.as_ref());
            (times, record, None, gains, alike, None)
        }
    };
    let build = program.app_build_ns.load(std::sync::atomic::Ordering::Relaxed);
    // What a declined run's wait for the copies would cost (`buys_copies`): the load as last
    // timed; where none was (the loads were made on clayout's thread) but every piece is in
    // clayout's cache, twice the application's build (two programs of its text and more: 1.4 to
    // 2 times it on the H100); else nothing is known, and no launch waits.
    let timed_load = record.as_ref().and_then(|w| w.load_ns).unwrap_or(0.0);
    // The `whole` record is read where the load's price depends on it (none timed; without
    // gains the verdict loads whatever it says), else only once the run declines.
    let whole_in_cache = || whole.unwrap_or_else(|| dl.rewrites.as_ref().is_some_and(|rw| rw.whole_in_cache()));
    let untimed_whole = (timed_load <= 0.0 && build > 0 && gains.is_some()).then(whole_in_cache);
    let load = if untimed_whole == Some(true) { 2.0 * build as f64 } else { timed_load };
    let build = (build > 0).then_some(build as f64);
    let verdict = worth::verdict(record.as_ref(), gains.as_deref(), build, load > 0.0, alike);
    program.forgone.reset(verdict.is_err(), load as u64);
    // Where the copies are declined, what the untracked run's journal may take of its launches.
    let (facts, left) = match (verdict.is_err(), journal) {
        (false, _) => (JournalFacts::default(), 0),
        (true, facts) => {
            let facts = facts.unwrap_or_else(|| JournalFacts::of(dl, &kernels, &times));
            let left = JournalFacts::budget(load as u64);
            (facts, left)
        }
    };
    program.journal_left.store(left, std::sync::atomic::Ordering::Relaxed);
    *program.journal.lock() = facts;
    // Noted now, loaded or not: a load that finds the copies not all in clayout's cache times
    // nothing, and the record must learn the run's epochs all the same (it learnt none before a
    // load was made, and the runs until then loaded whatever they would gain).
    worth::track(key.clone(), keys.clone(), None);
    let Err(why) = verdict else {
        crate::log::debug_with(|| {
            format!("the rewritten copies are loaded inside the build: its record {record:?}, the runs weighed ({alike:?}) gaining at most {gains:?} ns")
        });
        worth::keep_until_exit(record);
        return Load::Yes(Some((key, keys)));
    };
    worth::keep_until_exit(record);
    crate::log::debug_with(|| format!("the rewritten copies are {why}"));
    crate::stats::copies_declined(why);
    *program.declined_times.lock() =
        kernels.iter().zip(&times).filter_map(|((k, _), t)| Some((k.private_name.clone(), t.clone()?))).collect();
    for ((k, times_key), t) in kernels.iter().zip(times) {
        let mut model = k.model.lock();
        if model.disk_key.is_none() {
            // The copies' tile is not known yet (0): their build, if any, sets it.
            model.load_read(times_key, t, 0);
        }
    }
    Load::No { bought_only: load > 0.0 && untimed_whole.unwrap_or_else(whole_in_cache) }
}

/// What the untracked run's journal may take of a declined run's launches
/// (`Program::journal_takes`), worked out from the kernels' times beside the application's
/// build where they were read there (`Build::read_ahead`).
#[derive(Debug, Default)]
struct JournalFacts {
    /// For each kernel of the copies whose times were read, by name, the work-item buckets at
    /// which its time as written was timed and is settled.
    buckets: Vec<(String, Buckets)>,
    /// At each work-item bucket, the most a launch there forgoes, in ns (rounded up): at the top
    /// of the bucket, of the kernel that forgoes most (`worth::forgone_per_launch`, which takes
    /// a bucket where nothing was timed at the most timed at any other).
    forgoes: Vec<u64>,
}

impl JournalFacts {
    /// For the copies' `kernels` and their `times` (in that order).
    fn of(
        dl: &ProgramDl,
        kernels: &KeyedKernels,
        times: &[Option<crate::runtime::cost::kernel::TimesByClass>],
    ) -> Self {
        use crate::runtime::cost::model::Variant;
        let Some(rw) = dl.rewrites.as_ref() else { return JournalFacts::default() };
        let buckets = |t: &crate::runtime::cost::kernel::TimesByClass| {
            t.classes.iter().filter(|(c, times)| c.items < 64 && times.written.is_some()).fold(
                Buckets::default(),
                |b, (c, times)| Buckets {
                    timed: b.timed | 1 << c.items,
                    settled: b.settled | u64::from(!times.unsettled(Variant::Written)) << c.items,
                },
            )
        };
        let timed_at: Vec<(String, Buckets)> = rw
            .rewritten
            .kernels
            .iter()
            .filter_map(|(name, rk)| {
                let at = kernels.iter().position(|(k, _)| Arc::ptr_eq(k, rk))?;
                Some((name.clone(), buckets(times.get(at)?.as_ref()?)))
            })
            .collect();
        // Worked out near the buckets some kernel was timed at only (within `NEAR`); a launch
        // farther off counts as one that reaches the load (`u64::MAX`), counted in its call: the
        // whole range took some 200 calls of `forgone_per_launch` where the verdict is made in
        // the build call.
        let timed = timed_at.iter().fold(0u64, |m, (_, b)| m | b.timed);
        let forgoes = (0..64u32)
            .map(|b| {
                let near = (b.saturating_sub(Self::NEAR)..=(b + Self::NEAR).min(63)).any(|n| timed & 1 << n != 0);
                if !near {
                    return u64::MAX;
                }
                let top = u64::MAX >> (63 - b);
                times
                    .iter()
                    .flatten()
                    .filter_map(|t| crate::runtime::cost::worth::forgone_per_launch(t, top))
                    .fold(0.0f64, f64::max)
                    .ceil() as u64
            })
            .collect();
        JournalFacts { buckets: timed_at, forgoes }
    }

    /// How many work-item buckets (factors of two) from one some kernel was timed at the journal
    /// takes launches at.
    const NEAR: u32 = 4;

    /// What the journal's launches may forgo (`Program::journal_left`) where the copies' load
    /// costs `load_ns`: less than that, so that the launch that reaches it is counted in its
    /// call; with the load's cost unknown (0) no launch buys the copies (`u64::MAX`). The bound
    /// counts the journal's launches only: where launches counted in their calls come between
    /// them, their share can bring the purchase inside the journal, and it comes at the first
    /// launch after it, a few launches late.
    fn budget(load_ns: u64) -> u64 {
        if load_ns == 0 {
            u64::MAX
        } else {
            load_ns
        }
    }

    /// What is `left` of the budget once a launch that forgoes `forgoes` is taken; None where it
    /// would reach the load.
    fn take(left: u64, forgoes: u64) -> Option<u64> {
        if left == u64::MAX {
            return Some(left);
        }
        left.checked_sub(forgoes).filter(|&l| l > 0)
    }
}

/// What the runs the verdict weighs (those of the program's `record` with this process's
/// arguments, `Worth::weighed`) could have gained with the copies whose `times` were read, and
/// which runs those are.
fn weighed_gains(
    times: &[Option<crate::runtime::cost::kernel::TimesByClass>],
    record: Option<&crate::runtime::cost::worth::Worth>,
) -> (Option<Vec<crate::runtime::cost::worth::RunGain>>, crate::runtime::cost::worth::Alike) {
    let (runs, alike) = record.map(|w| w.weighed(crate::runtime::cost::worth::this_args())).unwrap_or_default();
    (crate::runtime::cost::worth::gains_per_run(times, &runs), alike)
}

/// The records the verdict on loading the copies reads (`loading_pays`), for the program's
/// record `key` and its kernels' times keys: each kernel's times, and the program's `worth`. The
/// kernels' run lengths are read into their table too: the launches' bets read them, and a
/// declined run's launches come at once.
fn verdict_records(
    key: &str,
    kernels: &[Arc<str>],
) -> (Vec<Option<crate::runtime::cost::kernel::TimesByClass>>, Option<crate::runtime::cost::worth::Worth>) {
    use crate::runtime::cost::{kernel::TimesByClass, lengths, worth};
    kernels.iter().for_each(lengths::preload);
    (kernels.iter().map(|k| TimesByClass::read(k)).collect(), worth::read(key))
}

/// How a launch that buys the copies gets them (`buys_copies`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purchase {
    /// It waits for their load: the device runs what is queued, then idles while the load ends.
    Wait,
    /// It starts their load and runs as written, as the launches after it do until the copies
    /// are ready (`hurry_copies`).
    Beside,
}

/// Where the launches so far forwent less than this much device time per unit of the host's
/// time between them, a purchase loads the copies beside the launches rather than waiting.
/// Waiting idles the device for about the load's time L; loading beside costs the launches
/// enqueued meanwhile (about L over the host's time per launch) what each forgoes, and the
/// copies come only if the host is still enqueueing when the load ends (on NVIDIA its end
/// waits for the queue to empty, holding the application's next enqueue meanwhile). With the
/// gains known, beside pays where that rate is below 1; the rate is of the gains' bounds where
/// a copy was never timed, about 6 times the gain on the H100 (particles' heaviest kernel: 25
/// us a launch at most, where its ASTA copy gained 4 once timed), hence the margin. On the H100
/// particles' 1000-launch run after short ones bought its copies at rates of 2.6-4.4 and ran in
/// 26.0-28.5 ms with them loaded beside, against 29.6-40.9 waiting (docs/data/h100-calltrace-37i.txt, 37l);
/// blackscholes at 2^25, its launches enqueued in bulk, at rates of 64-65, and loaded beside got
/// none of them in ASTA (h100-calltrace-37k.txt, 37m).
const BESIDE_BELOW_RATE: f64 = 8.0;

impl Purchase {
    /// How a purchase gets the copies, by what its launches forwent against the host's time
    /// (`BESIDE_BELOW_RATE`). A purchase at the run's first forgoing launch has no such time
    /// and waits.
    fn of(bought: &crate::runtime::cost::worth::Bought) -> Purchase {
        if bought.elapsed > 0 && bought.rate() < BESIDE_BELOW_RATE {
            Purchase::Beside
        } else {
            Purchase::Wait
        }
    }
}

/// Whether a launch of a kernel rewritten as `rewritten`, of `work_items` work-items, in a run
/// whose copies were declined, is the one to buy them, and how (`Purchase`): the launches run as
/// written since the build have forgone, by the kernels' measured times (per structure, times
/// the structures of the launches timed at that size: `worth::forgone_per_launch`), as much as
/// the load took when last timed. A ski-rental rule again: a run that turns out long pays at
/// most about twice the load, where before it got its copies only once clayout's worker could
/// load them, which on NVIDIA ends only once the device's queue is empty: a 1000-launch run of
/// blackscholes on the H100, all enqueued at once, got none. Where no copy was timed, the bound
/// from the kernel's time as written counts (`worth::written_bound`): the first such purchase
/// may come early, and its run times the copies. Only where a load from clayout's cache was
/// timed before, or every piece of the copies is there (`loading_pays`): otherwise the copies
/// may have to be compiled, which the launch could wait for.
pub fn buys_copies(program: &Program, rewritten: &rewrite::RewrittenKernel, work_items: u64) -> Option<Purchase> {
    let gain = forgone_per_launch(program, rewritten, work_items)?;
    let bought = program.forgone.buys(gain)?;
    let how = Purchase::of(&bought);
    crate::log::debug_with(|| {
        format!(
            "the rewritten copies are bought: the launches run as written without them forwent {:.3} ms in {:.3} ms, what their load costs ({:.3} ms); {}",
            bought.forgone as f64 / 1e6,
            bought.elapsed as f64 / 1e6,
            bought.load as f64 / 1e6,
            match how {
                Purchase::Wait => "the launch waits for them",
                Purchase::Beside => "they are loaded beside the launches, which run as written until they are ready",
            }
        )
    });
    crate::stats::copies_bought(bought.forgone as f64 / 1e6);
    Some(how)
}

/// Starts the load of `program`'s copies, held back on clayout's worker, without waiting for it
/// (a purchase `Purchase::Beside`): the launches run as written until they are ready.
pub fn hurry_copies(program: &Arc<Program>) {
    let Some(dl) = program.dl() else { return };
    let Some(rewrites) = dl.rewrites.as_ref() else { return };
    let options = program.facts.build_options.lock().clone().unwrap_or_default();
    if matches!(rewrites.lookup(&options), Private::NotStarted) {
        prepare(program, false);
    }
    // Submitted held back (`BOUGHT_ONLY`, or the program's hold): started now.
    if let Private::Building(t) = rewrites.lookup(&options) {
        t.hurry();
    }
}

/// What a launch of a kernel rewritten as `rewritten`, of `work_items` work-items, forgoes in
/// ns by running as written in a run whose copies were declined (`buys_copies`); None where no
/// launch buys them, or nothing is known of what they gain (`worth::forgone_per_launch`).
pub fn forgone_per_launch(program: &Program, rewritten: &rewrite::RewrittenKernel, work_items: u64) -> Option<u64> {
    // Not known to be a load from clayout's cache: the wait could be for a compile.
    if program.forgone.load_ns.load(std::sync::atomic::Ordering::Relaxed) == 0 {
        return None;
    }
    let times = program.declined_times.lock();
    let (_, times) = times.iter().find(|(name, _)| *name == rewritten.private_name)?;
    Some(crate::runtime::cost::worth::forgone_per_launch(times, work_items)? as u64)
}

/// The key of the program's `worth` record (its text on its device, as `seen`'s) and its
/// rewritten kernels with their times keys.
fn worth_keys(program: &Program, dl: &ProgramDl) -> Option<(String, KeyedKernels)> {
    // Made once per build, beside it (`Build::read_ahead`): the verdict after it asks again.
    dl.worth_keys
        .get_or_init(|| {
            let rw = dl.rewrites.as_ref()?;
            let options = program.facts.build_options.lock().clone().unwrap_or_default();
            let kernels = rw.keyed_kernels(&program.facts, &options, &dl.seen.compiler_options)?;
            Some((program_key(program, dl)?, kernels))
        })
        .clone()
}

/// A program's rewritten kernels, each with the key of its copies' records.
type KeyedKernels = Vec<(Arc<crate::runtime::transparent::rewrite::RewrittenKernel>, Arc<str>)>;

/// Whether the copies' load inside the build is decided by their worth: under `auto`, with
/// the builds held back until the run has paid for them (`CLAYOUT_BUILD_AFTER` not `wait`).
fn worth_decides() -> bool {
    let cfg = crate::config::get();
    cfg.policy == crate::config::Policy::Auto && cfg.build_after != crate::config::BuildAfter::Wait
}

/// The program's text as clayout read it, on its first device: the key of its records (the
/// first run's mark, the worth record), hashed once per build.
fn program_key(program: &Program, dl: &ProgramDl) -> Option<String> {
    dl.key
        .get_or_try_init(|| {
            let device = registry::get().first_device(program.facts.context).ok_or(())?;
            Ok::<_, ()>(format!(
                "{}|{:016x}",
                crate::cache::disk::device_key(device),
                crate::cache::disk::fnv1a(dl.seen.text.as_bytes())
            ))
        })
        .ok()
        .cloned()
}

/// Submits the preparation of `program`'s build `dl`, held back until `hold`; `cache_first`: at
/// once, but loading only what clayout's cache holds (a run whose copies were built before gets
/// them in milliseconds), and held back until `hold` only if something must be compiled.
fn submit_prepare(
    program: &Arc<Program>,
    dl: &Arc<ProgramDl>,
    build_running: bool,
    hold: Option<std::time::Instant>,
    cache_first: bool,
) {
    let options = program.facts.build_options.lock().clone().unwrap_or_default();
    // The job holds references of its own on the application's context and program: the
    // application may release both before the job runs. Counted on each, so that their
    // reference counts, asked meanwhile, do not show them (`runtime::refs`): a job held back
    // (`CLAYOUT_BUILD_AFTER`) holds them for as long.
    let (context, handle) = (program.facts.context as cl_context, program.handle as cl_program);
    let held = (crate::cl::Context::retained_in(context, context), crate::cl::Program::retained_in(handle, handle));
    let job = {
        let (program, dl, options) = (program.clone(), dl.clone(), options.clone());
        move || {
            let _held = held;
            if build_running {
                wait_for_build(&program);
            }
            if let Some(rw) = dl.rewrites.as_ref() {
                if !cache_first {
                    rw.build(&program.facts, &options, &dl.seen.compiler_options);
                } else if !rw.build_from_cache(&program.facts, &options, &dl.seen.compiler_options) {
                    submit_prepare(&program, &dl, false, hold, false);
                    return;
                }
            }
            prepare_marshaling(&program.facts, &dl);
        }
    };
    // The ticket is where the launches look before the job can run (and resubmit itself).
    let ticket = super::worker::Ticket::new();
    if let Some(rw) = dl.rewrites.as_ref() {
        rw.building(&program.facts, &options, &dl.seen.compiler_options, ticket.clone());
    }
    *dl.prepared.lock() = Some(ticket.clone());
    let not_before = if cache_first { None } else { hold };
    super::worker::submit_ticket(ticket, program.facts.context, not_before, job);
}

/// Waits until the program's build (one with a callback, which may run on after the call
/// returned) is no longer in progress on its first device.
fn wait_for_build(program: &Program) {
    let Some(device) = registry::get().first_device(program.facts.context) else { return };
    let start = std::time::Instant::now();
    while crate::cl::info::build_status(program.handle as cl_program, device) == Some(CL_BUILD_IN_PROGRESS) {
        if start.elapsed() > std::time::Duration::from_secs(600) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// The structure sizes and conversion kernels of the kernels written for a device layout.
fn prepare_marshaling(program: &ProgramInfo, dl: &ProgramDl) {
    if !dl.marshals() {
        return;
    }
    let Some(device) = registry::get().first_device(program.context) else { return };
    for layout in dl.kernels.values().filter_map(|k| k.as_ref().ok()).filter(|l| l.marshals()) {
        let Ok(plan) = plan_layout(program, dl, layout) else { continue };
        for p in &plan.params {
            if let Layout::Asta { t } = p.device {
                let _ = crate::marshal::prepare(program.context as cl_context, device, p.words, t, p.word_bytes);
            }
        }
    }
}

/// The plan of kernel `k` of `program`: what its annotation asks at every launch. None when
/// what it needs is still being prepared on clayout's worker and `wait` is false (the launch
/// then runs as written, and a later one asks again).
pub fn make_plan(k: &KernelInfo, program: Option<&Arc<Program>>, wait: bool) -> Option<PlanResult> {
    let Some(program) = program else { return Some(Ok(None)) };
    let Some(dl) = program.dl() else { return Some(Ok(None)) };
    let dl = if !dl.kernels.contains_key(&k.name) && dl.waiting.iter().any(|w| w.kernel == k.name) {
        resolve(program, k).map_or(dl, |(new, _)| new)
    } else {
        dl
    };
    let dl = &dl;
    let layout = match dl.kernels.get(&k.name) {
        Some(Ok(layout)) => layout,
        Some(Err(why)) if crate::config::get().strict => {
            return Some(Err(format!("CLAYOUT_STRICT=1 and its annotation is not usable ({why})")))
        }
        _ => return Some(Ok(None)),
    };
    if !layout.marshals() {
        // Written for the host layout: its rewritten copy, if the transparent mode made one,
        // else the kernel as written.
        let Some((rewrites, rewritten)) =
            dl.rewrites.as_ref().and_then(|r| Some((r, r.rewritten.kernels.get(&k.name)?)))
        else {
            return Some(Ok(None));
        };
        let private = private_program(program, rewrites, wait)?;
        let fixed = dl.late.fixed.get(&k.name).cloned().unwrap_or_default();
        let plan = private.and_then(|p| transparent_plan(p, rewritten, layout, fixed));
        return Some(match plan {
            Ok(p) => Ok(Some(Arc::new(p))),
            Err(why) => {
                crate::log::warn(&format!(
                    "kernel {}: its rewritten copy cannot be used ({why}); it runs as written",
                    k.name
                ));
                crate::stats::fallback(&format!("kernel {}", k.name), &why);
                Ok(None)
            }
        });
    }
    // Written for a device layout: it cannot run before its preparation is done.
    let prepared = dl.prepared.lock().clone();
    if let Some(t) = prepared {
        t.wait();
    }
    let plan =
        plan_layout(&program.facts, dl, layout).map_err(|why| format!("cannot prepare its annotated buffers: {why}"));
    match &plan {
        Ok(p) => crate::log::info_with(|| {
            format!(
                "kernel {}: {} buffer(s) in device layout: {}",
                k.name,
                p.params.len(),
                p.params
                    .iter()
                    .map(|q| format!("{} {:?}->{:?} S={} w={}", q.name, q.host, q.device, q.words, q.word_bytes))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }),
        Err(why) => crate::log::warn(&format!("kernel {}: {why}", k.name)),
    }
    Some(plan.map(|p| Some(Arc::new(p))))
}

/// The private program of the program's current build: built (Ok), failed (Err), or None while
/// the worker builds it and `wait` is false.
/// The plan of a kernel the application is creating, when making it waits for nothing and
/// starts nothing: a kernel with a rewritten copy whose program is ready (a run whose copies
/// came from the caches inside the application's build). Otherwise None: the first launch
/// makes it.
pub fn early_plan(k: &KernelInfo, program: Option<&Arc<Program>>) -> Option<PlanResult> {
    let program = program?;
    let dl = program.dl()?;
    let layout = dl.kernels.get(&k.name)?.as_ref().ok()?;
    let rewrites = dl.rewrites.as_ref().filter(|r| !layout.marshals() && r.rewritten.kernels.contains_key(&k.name))?;
    let options = program.facts.build_options.lock().clone().unwrap_or_default();
    if !matches!(rewrites.lookup(&options), Private::Ready(_)) {
        return None;
    }
    make_plan(k, Some(program), false)
}

fn private_program(
    program: &Arc<Program>,
    rewrites: &Rewrites,
    wait: bool,
) -> Option<Result<Arc<PrivateProgram>, String>> {
    let options = program.facts.build_options.lock().clone().unwrap_or_default();
    // A few rounds: a rebuild with other options may replace the build asked for.
    for _ in 0..4 {
        match rewrites.lookup(&options) {
            Private::Ready(p) => return Some(Ok(p)),
            Private::Failed(why) => return Some(Err(why)),
            Private::Building(t) if wait => t.wait(),
            Private::Building(_) => return None,
            Private::NotStarted => {
                prepare(program, false);
                if !wait {
                    return None;
                }
            }
        }
    }
    Some(Err("the program was rebuilt while its rewritten copies were being built".into()))
}

fn plan_layout(program: &ProgramInfo, dl: &ProgramDl, layout: &KernelLayout) -> Result<KernelPlan, String> {
    let mut params = Vec::new();
    for p in layout.params.iter() {
        let Some(device) = &p.device else { continue };
        let tile = match device {
            DeviceLayout::Asta { tile: Some(t) } => *t,
            _ => match (dl.tile, dl.tile_error.clone()) {
                (Some(t), _) => t,
                (None, Some(why)) => return Err(why),
                (None, None) => return Err("the program was not built through clayout, so its tile is unknown".into()),
            },
        };
        let (s, word) = match (p.s, p.word) {
            (Some(s), Some(w)) => (s, w),
            _ => {
                let w = match p.word {
                    Some(w) => w,
                    None => crate::clc::structs::word_size(&dl.seen.text, &p.elem_type)
                        .map_err(|e| format!("{}: {e}", p.name))?,
                };
                let size = struct_size(program, dl, &p.elem_type)?;
                if size == 0 || size % w as u64 != 0 {
                    return Err(format!(
                        "{}: sizeof({}) = {size} is not a whole number of {w}-byte words",
                        p.name, p.elem_type
                    ));
                }
                ((size / w as u64) as u32, w)
            }
        };
        if word != 4 && word != 8 {
            return Err(format!("{}: words of {word} bytes are not supported (4 or 8)", p.name));
        }
        let host = match p.host {
            HostLayout::AoS { .. } => Layout::Aos,
            HostLayout::SoA { .. } => Layout::Soa,
        };
        params.push(ParamPlan {
            index: p.arg_index as usize,
            name: p.name.clone(),
            host,
            device: Layout::Asta { t: tile },
            words: s,
            word_bytes: word,
            struct_bytes: s as u64 * word as u64,
            extent: p.extent.clone(),
            must: true,
            out: p.out,
            proven_out: None,
        });
    }
    Ok(KernelPlan { params, scalars: layout.scalar_args.clone(), transparent: None, fixed: Vec::new() })
}

/// `sizeof(type_name)` as the device compiler sees it, from a probe kernel built with the
/// program's own source and options (so macros, typedefs, includes and packing count).
fn struct_size(program: &ProgramInfo, dl: &ProgramDl, type_name: &str) -> Result<u64, String> {
    if let Some(s) = dl.sizes.lock().get(type_name) {
        return Ok(*s);
    }
    let size = probe_size(program, &dl.options, type_name)?;
    dl.sizes.lock().insert(type_name.to_string(), size);
    Ok(size)
}

fn probe_size(program: &ProgramInfo, options: &str, type_name: &str) -> Result<u64, String> {
    let ctx = program.context as cl_context;
    let device = registry::get().first_device(program.context).ok_or("the program's context is unknown")?;
    let src = format!(
        "{}\n__kernel void clayout_probe_sizeof(__global ulong *out) {{ out[0] = sizeof({type_name}); }}\n",
        program.source()
    );
    let built = probe::build(ctx, &src, options, "probe").map_err(|e| format!("probe of sizeof({type_name}): {e}"))?;
    let v = probe::run(ctx, device, &built, "clayout_probe_sizeof", 1)?;
    Ok(v[0])
}

/// The launch plan of a rewritten kernel: its buffers to ASTA with the private program's tile,
/// each one optional (`must: false`): the kernel as written can always run instead.
fn transparent_plan(
    private: Arc<PrivateProgram>,
    rewritten: &Arc<rewrite::RewrittenKernel>,
    layout: &KernelLayout,
    fixed: Vec<(ScalarArg, u64)>,
) -> Result<KernelPlan, String> {
    let (params, scalars) = rewritten_params(rewritten, layout, Some(&private))?;
    let mut reads: Vec<usize> =
        scalars.iter().chain(fixed.iter().map(|(s, _)| s)).map(|s| s.arg_index as usize).collect();
    reads.sort_unstable();
    reads.dedup();
    Ok(KernelPlan {
        params,
        scalars,
        transparent: Some(TransparentPlan { program: private, kernel: rewritten.clone(), reads }),
        fixed,
    })
}

/// The plan of kernel `k` of `program` while its copies are being built: its rewritten
/// parameters as the plan made once they are built will have them (so the same structures and
/// size class), and no copy to run. For timing its launches as written meanwhile (the first
/// run of a program), so that the next run knows their time. None for a kernel with no
/// rewritten copy, or one whose inferred annotation assumed a stride.
pub fn building_plan(k: &KernelInfo, program: &Arc<Program>) -> Option<Building> {
    let dl = program.dl()?;
    match dl.building_plans.get() {
        Some(plans) => plans.get(&k.name).cloned(),
        None => plan_while_building(&dl, &k.name),
    }
}

/// `building_plan` for kernel `name` of the build `dl`.
fn plan_while_building(dl: &ProgramDl, name: &str) -> Option<Building> {
    let layout = dl.kernels.get(name)?.as_ref().ok().filter(|l| !l.marshals())?;
    let rewritten = dl.rewrites.as_ref()?.rewritten.kernels.get(name)?.clone();
    if dl.late.fixed.get(name).is_some_and(|f| !f.is_empty()) {
        return None;
    }
    let (mut params, scalars) = rewritten_params(&rewritten, layout, None).ok()?;
    // Nothing is converted while the copies are built: no overwrite to prove or say.
    for p in &mut params {
        p.proven_out = None;
    }
    Some((rewritten, Arc::new(KernelPlan { params, scalars, transparent: None, fixed: Vec::new() })))
}

/// The plan's parameters for a rewritten kernel's annotated buffers, and the scalar arguments
/// its extents and proved bounds read; in ASTA of the tile of `private` (0 while it is built).
fn rewritten_params(
    rewritten: &Arc<rewrite::RewrittenKernel>,
    layout: &KernelLayout,
    private: Option<&Arc<PrivateProgram>>,
) -> Result<(Vec<ParamPlan>, Vec<ScalarArg>), String> {
    let mut params = Vec::new();
    let mut scalars = layout.scalar_args.clone();
    for p in &layout.params {
        let l = rewritten.layouts.get(&p.name).ok_or_else(|| format!("{} was not rewritten", p.name))?;
        let proven = rewritten.overwritten.iter().find(|o| o.index == p.arg_index as usize && p.host.is_aos());
        let proven_out = proven.map(|o| ProvenOut { bound: o.bound.as_ref().map(|b| b.extent.clone()) });
        // The bound's arguments, for the launches to evaluate it.
        for a in proven.iter().flat_map(|o| o.bound.iter()).flat_map(|b| &b.args) {
            if !scalars.iter().any(|s| s.name == a.name) {
                scalars.push(a.clone());
            }
        }
        if let Some(why) = private.and_then(|private| private.wrong_layouts.get(&l.type_name)) {
            return Err(format!("{}: {why}", p.name));
        }
        params.push(ParamPlan {
            index: p.arg_index as usize,
            name: p.name.clone(),
            host: if p.host.is_aos() { Layout::Aos } else { Layout::Soa },
            device: Layout::Asta { t: private.map_or(0, |p| p.tile) },
            words: l.words,
            word_bytes: l.word_bytes,
            struct_bytes: l.words as u64 * l.word_bytes as u64,
            extent: p.extent.clone(),
            must: false,
            out: p.out,
            proven_out,
        });
    }
    Ok((params, scalars))
}

#[cfg(test)]
mod tests {
    use super::{mentions_asta, Buckets, JournalFacts, Purchase};
    use crate::runtime::cost::worth::Bought;

    #[test]
    fn a_purchase_loads_beside_only_where_the_launches_forwent_little_against_the_hosts_time() {
        let at = |forgone_ms: f64, elapsed_ms: f64| {
            Purchase::of(&Bought { forgone: (forgone_ms * 1e6) as u64, load: 1, elapsed: (elapsed_ms * 1e6) as u64 })
        };
        // particles' 1000-launch run on the H100 (rates 2.6-4.4); blackscholes at 2^25 (64-65).
        assert_eq!(at(12.3, 3.5), Purchase::Beside);
        assert_eq!(at(10.1, 0.155), Purchase::Wait);
        assert_eq!(at(8.0, 1.0), Purchase::Wait, "at the margin");
        assert_eq!(at(0.001, 0.0), Purchase::Wait, "no host time known: the first launch bought them");
    }

    #[test]
    fn the_journal_takes_fewer_launches_than_could_buy_the_copies() {
        // Launches that each forgo `gain` ns, with the copies' load at `load` ns: how many it takes.
        let taken = |gain: u64, load: u64| {
            let mut left = JournalFacts::budget(load);
            (0..1000).take_while(|_| JournalFacts::take(left, gain).map(|l| left = l).is_some()).count()
        };
        assert_eq!(taken(3, 10), 3, "three forgo 9 ns; the fourth, which reaches the load, is counted in its call");
        assert_eq!(taken(1, 10), 9);
        assert_eq!(taken(5, 1), 0, "the first launch buys them");
        assert_eq!(taken(1, 0), 1000, "the load's cost unknown: nothing buys");
        assert_eq!(taken(0, 10), 1000, "nothing forgone: nothing buys");
        assert_eq!(taken(u64::MAX, 10), 0);
        // A launch that forgoes more takes more of what is left.
        let left = JournalFacts::take(JournalFacts::budget(10), 2).unwrap();
        assert_eq!(JournalFacts::take(left, 7), Some(1));
        assert_eq!(JournalFacts::take(left, 8), None);
    }

    #[test]
    fn the_journal_times_a_kernel_as_often_as_its_time_needs_to_settle() {
        let b = Buckets { timed: 0b0110, settled: 0b0100 };
        assert_eq!(b.wanted(2), Some(0), "settled");
        assert_eq!(b.wanted(1), Some(1), "timed once, not settled");
        assert_eq!(b.wanted(0), Some(crate::runtime::cost::model::TIMED_LAUNCHES), "never timed here");
        assert_eq!(b.wanted(64), None);
    }

    #[test]
    fn asta_is_found_in_any_case_anywhere() {
        for text in ["//DL: AoS: p[n] -> ASTA", "asta", "x Asta", "aaaASTa", "pasta", "#define AsTa_(i) i"] {
            assert!(mentions_asta(text.as_bytes()), "{text}");
        }
        for text in ["", "ast", "a s t a", "aaaa", "past", "as ta", "@STA", "a\u{f3}ta", "AS\u{54}"] {
            assert!(!mentions_asta(text.as_bytes()), "{text}");
        }
    }

    #[test]
    fn asta_is_found_across_and_at_the_ends_of_stretches() {
        // The search folds the text a stretch of 4,096 bytes at a time.
        for at in [0, 4090, 4092, 4093, 4094, 4095, 4096, 8190, 9000 - 4] {
            let mut text = vec![b'x'; 9000];
            text[at..at + 4].copy_from_slice(b"AsTa");
            assert!(mentions_asta(&text), "at {at}");
        }
        assert!(!mentions_asta(&[b'x'; 9000]));
        assert!(!mentions_asta(&b"astb".repeat(3000)));
    }
}
