//! The private program of a rewritten program: the rewriter's source built with the
//! application's options and the tile macro, its structure layouts checked against the device
//! compiler, the conversion kernels its buffers need built ahead, and what they cost.
//!
//! Why a private program rather than the application's own: a program's source is fixed when
//! it is created, so if clayout fed the rewritten source to the application's program and that
//! failed to build, the application's `clBuildProgram` would fail where the real library would
//! not have. With a program of its own the application's program, source, binaries, kernel
//! list and build log stay exactly as it made them, and a copy that does not build or whose
//! structure layout the compiler contradicts costs one log line. The price is a second compile
//! of the program, paid right after the application's build.

use super::super::cost::kernel::TimesByClass;
use super::super::cost::tune;
use super::super::worker::Ticket;
use super::super::{probe, tile};
use super::rewrite::{Rewritten, RewrittenKernel};
use crate::cl::Program;
use crate::layout::Layout;
use crate::registry::{self, ProgramInfo};
use crate::rewrite::{self, StructLayout};
use opencl_sys::*;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A program's rewritten kernels, and their private program once built.
#[derive(Debug)]
pub struct Rewrites {
    pub rewritten: Rewritten,
    /// The rewritten source hashed (`hashed_source`), on the thread that read the program: its
    /// copies' identity is asked after the application's build, inside the build call, and the
    /// source is tens of kilobytes (particles' identity took 0.29 million instructions there).
    hashed: u64,
    /// The private program of the latest build of the application's program, and that build's
    /// options.
    private: Mutex<Option<(String, Private)>>,
    /// The identity of the copies of the latest build asked for: known before they are built,
    /// so that the launches that run as written meanwhile count towards how long the program
    /// keeps its buffers (`times_key_of`).
    identity: Mutex<Option<Identified>>,
}

/// The program holding the copies, built with the application's options and the tile macro.
#[derive(Debug)]
pub struct PrivateProgram {
    /// The copies for any size; where every copy in ASTA runs on whole tiles only, the one
    /// program below (`build_private`).
    pub program: Program,
    /// The same built with `CLAYOUT_FULL_TILES`, for launches whose every buffer holds whole
    /// tiles: its ASTA index has no branch for a narrower last tile (rewrite::emit says why).
    /// None when that build failed: the program above serves every launch then.
    pub full_tiles: Option<Program>,
    pub tile: u32,
    /// Why the compiler may fuse floating-point operations (`a*b+c`) differently in a copy than
    /// in the kernel as written, if it may: the device's compiler fuses across statements, or
    /// the build's options free it. Where it fuses depends on the code around the arithmetic,
    /// which the index for a narrower last tile changes (transparent::launch).
    pub fuses: Option<String>,
    /// Structure types whose layout the device compiler contradicted, and how.
    pub wrong_layouts: HashMap<String, String>,
    /// The device it was built and tuned for (a handle: devices outlive programs).
    pub device: usize,
    /// Hash of the source and options it was built from, the tile left out: what the disk cache
    /// keeps of its kernels (`times_key`) belongs to this build at any tile.
    pub source_hash: u64,
    /// Conversion costs of each (S, w, host layout) of the copies, at the program's tile.
    pub rates: crate::runtime::cost::Rates,
    /// The largest work-group the staged copies' local memory holds (0: none can run).
    pub stage_wg: usize,
    /// Whether the policies may run the staged copies in place of the kernels as written
    /// (`CLAYOUT_STAGED`, from the device's type).
    pub staged_offered: bool,
}

impl PrivateProgram {
    /// Key of a copy's times in the disk cache: they belong to exactly this build on this device.
    pub fn times_key(&self, private_name: &str) -> String {
        times_key(self.device as cl_device_id, private_name, self.source_hash)
    }
}

/// Per-kernel part of a launch plan in the transparent mode.
#[derive(Debug)]
pub struct TransparentPlan {
    pub program: Arc<PrivateProgram>,
    pub kernel: Arc<RewrittenKernel>,
    /// The scalar arguments whose values change what a launch needs (those the extents and
    /// proved bounds read, those whose values the plan assumed), by index: any other scalar
    /// may change between launches as written that repeat each other (`repeat`).
    pub reads: Vec<usize>,
}

/// Where the private program of one build of the application's program is.
#[derive(Debug, Clone)]
pub enum Private {
    Ready(Arc<PrivateProgram>),
    Failed(String),
    /// Being built on clayout's worker.
    Building(Ticket),
    /// Nothing asked for it yet (the program was built in a way clayout did not see finish).
    NotStarted,
}

impl Rewrites {
    pub fn new(rewritten: Rewritten) -> Rewrites {
        let hashed = hashed_source(&rewritten.source);
        Rewrites { rewritten, hashed, private: Mutex::new(None), identity: Mutex::new(None) }
    }

    /// The key of the times of copy `private_name` (`PrivateProgram::times_key`) for a build with
    /// `options`, once that build's copies are settled, built or not. Asked at every launch
    /// while they are built, so each key is made once.
    pub fn times_key_of(&self, options: &str, private_name: &str) -> Option<Arc<str>> {
        let mut slot = self.identity.lock();
        let known = slot.as_mut().filter(|k| k.options == options)?;
        if let Some(key) = known.keys.get(private_name) {
            return Some(key.clone());
        }
        let key: Arc<str> = times_key(known.id.device as cl_device_id, private_name, known.id.source_hash).into();
        known.keys.insert(private_name.to_string(), key.clone());
        Some(key)
    }

    /// The private program for a build of the application's program with `options`.
    pub fn lookup(&self, options: &str) -> Private {
        match self.private.lock().as_ref() {
            // A build dropped before it started (its context went) was never made.
            Some((_, Private::Building(t))) if t.dropped() => Private::NotStarted,
            Some((built_with, p)) if built_with == options => p.clone(),
            _ => Private::NotStarted,
        }
    }

    /// Notes that the private program for a build of `program` with `options` is being built
    /// (the caller submitted it), and what its copies will be (`times_key_of`).
    pub fn building(&self, program: &ProgramInfo, options: &str, compiler_options: &str, ticket: Ticket) {
        // An unknown context is said when the copies are built.
        let _ = self.identify(program, options, compiler_options);
        *self.private.lock() = Some((options.to_string(), Private::Building(ticket)));
    }

    fn identify(&self, program: &ProgramInfo, options: &str, compiler_options: &str) -> Result<Identity, String> {
        // Made already for this build, beside it (`Build::read_ahead`): the verdict after it
        // asks again, and the identity's device queries and its keys' text were some 15,000
        // instructions of clayout's work inside the application's build call.
        if let Some(known) = self.identity.lock().as_ref().filter(|k| {
            k.options == options && k.context == program.context && k.id.compiler_options == compiler_options
        }) {
            return Ok(known.id.clone());
        }
        let id = identity(self.hashed, &self.rewritten.kernels, program.context, compiler_options)?;
        *self.identity.lock() = Some(Identified {
            options: options.to_string(),
            context: program.context,
            id: id.clone(),
            keys: HashMap::new(),
        });
        Ok(id)
    }

    /// Builds the private program for a build of `program` with `options`, now (on the worker),
    /// and keeps the outcome. A program rebuilt with other options (other macros) needs its
    /// copies rebuilt too.
    pub fn build(&self, program: &ProgramInfo, options: &str, compiler_options: &str) -> Private {
        let built = self.private(program, options, compiler_options);
        self.keep(options, built)
    }

    /// The rewritten kernels of a build of `program` with `options`, each with the key of its
    /// copies' records, known before they are built.
    pub fn keyed_kernels(
        &self,
        program: &ProgramInfo,
        options: &str,
        compiler_options: &str,
    ) -> Option<Vec<(Arc<RewrittenKernel>, Arc<str>)>> {
        self.identify(program, options, compiler_options).ok()?;
        let mut kernels: Vec<_> = self.rewritten.kernels.values().collect();
        // In one order from run to run: the program's `worth` record keeps what each launched
        // in this order.
        kernels.sort_by(|a, b| a.private_name.cmp(&b.private_name));
        kernels.into_iter().map(|k| Some((k.clone(), self.times_key_of(options, &k.private_name)?))).collect()
    }

    /// Whether every piece of the copies of the build identified last (`keyed_kernels`) is in
    /// clayout's cache at some tile: their wait would be a load, not a compile.
    pub fn whole_in_cache(&self) -> bool {
        let slot = self.identity.lock();
        slot.as_ref().is_some_and(|k| {
            whole_at(&whole_key(k.id.device as cl_device_id, k.id.source_hash, &k.options, true), None)
        })
    }

    /// The private program for a build of `program` with `options`, made now.
    fn private(&self, program: &ProgramInfo, options: &str, compiler_options: &str) -> Result<PrivateProgram, String> {
        let id = self.identify(program, options, compiler_options)?;
        build_private(&self.rewritten.source, &self.rewritten.kernels, program.context, options, id, None)
    }

    /// `build`, but only from what clayout's cache holds (programs as binaries, tuning records):
    /// false, with nothing kept, when something would have to be compiled or measured.
    pub fn build_from_cache(&self, program: &ProgramInfo, options: &str, compiler_options: &str) -> bool {
        let built = crate::cache::binaries::cache_only(|| self.private(program, options, compiler_options));
        if matches!(&built, Err(why) if why.contains(crate::cache::binaries::NOT_CACHED)) {
            crate::log::debug("the rewritten copies are not all in clayout's cache: they are built later");
            return false;
        }
        self.keep(options, built);
        true
    }

    fn keep(&self, options: &str, built: Result<PrivateProgram, String>) -> Private {
        let outcome = match built.map(Arc::new) {
            Ok(p) => Private::Ready(p),
            // Not a failure of the copies: nothing is said, and nothing listed among fallbacks.
            Err(why) if why == STOPPED => Private::Failed(why),
            Err(why) => {
                crate::log::warn(&format!(
                    "the rewritten kernels of a program cannot be used ({why}); they run as written"
                ));
                crate::stats::fallback("rewritten program", &why);
                Private::Failed(why)
            }
        };
        let mut slot = self.private.lock();
        crate::log::debug_with(|| {
            format!(
                "the rewritten copies for build options {options:?}: {}",
                if matches!(outcome, Private::Ready(_)) { "ready" } else { "not usable" }
            )
        });
        // A build for other options may have been asked for since: the newest request wins.
        if slot.as_ref().is_none_or(|(o, _)| o == options) {
            *slot = Some((options.to_string(), outcome.clone()));
        }
        outcome
    }
}

/// What the copies of one build are, their tile left out: the device they are built for, the
/// options they add, and the hash of their source and options, which keys what the disk cache
/// keeps of their kernels (`times_key`).
#[derive(Clone, Debug)]
struct Identity {
    /// A handle: devices outlive programs.
    device: usize,
    compiler_options: String,
    /// The largest work-group the staged copies' local memory holds (0: none can run).
    stage_wg: usize,
    /// The options every build of the copies adds, the tile aside.
    rest: String,
    source_hash: u64,
}

/// The identity of the copies of a build with `options`, and the times keys made of it so far.
#[derive(Debug)]
struct Identified {
    options: String,
    context: registry::Handle,
    id: Identity,
    keys: HashMap<String, Arc<str>>,
}

/// The copies' source as their identity hashes it, before their build's options
/// (`identity`).
fn hashed_source(source: &str) -> u64 {
    crate::cache::disk::fnv1a_on(crate::cache::disk::fnv1a(source.as_bytes()), b"\n")
}

fn identity(
    hashed: u64,
    kernels: &HashMap<String, Arc<RewrittenKernel>>,
    context: registry::Handle,
    compiler_options: &str,
) -> Result<Identity, String> {
    let device = registry::get().first_device(context).ok_or("the program's context is unknown")?;
    // 32-bit index arithmetic in the copies; launches on bigger buffers run as written.
    let stage_wg = stage_capacity(device, kernels);
    let rest = format!(" -D {INDEX32_MACRO} -D {STAGE_WG_MACRO}={}", stage_wg.max(1));
    // Without the tile: what the cost model learns of the kernels (times as written and staged,
    // habits, run lengths) holds whatever tile a later run's copies have (a tile search between
    // two runs made the second start over: blackscholes on an H100 then ran 30 launches as
    // written where `always` was 44 % faster). Its ASTA times are kept with their tile (`cost::kernel`).
    let source_hash = crate::cache::disk::fnv1a_on(hashed, format!("{compiler_options}{rest}").as_bytes());
    Ok(Identity {
        device: device as usize,
        compiler_options: compiler_options.to_string(),
        stage_wg,
        rest,
        source_hash,
    })
}

/// Why a build of the copies stopped between its programs: its run is over (its context or the
/// process is going). What was built is in clayout's cache, and a later run goes on from there.
pub const STOPPED: &str = "stopped between its builds: its run is over";

/// How far a build of the copies goes once its run is over (`worker::cancelled`), so that the
/// exit waits for one program being built, not for the rest (on the H100 the second run of a
/// program of one-iteration runs waited 0.6-1.1 s at exit for all of them): on through what
/// the caches hold, and through one piece that must be compiled or measured, as long as
/// nothing in this job took a compile's time and what it did since the run ended stays within
/// one load's (`LOADED_WITHIN`; a "cached" piece can be slow: NVIDIA with its own cache off
/// compiles a kept binary again, some 40 ms, and a driver that dropped a source from its cache
/// compiles it in full). Stopped before every piece instead, the copies of a program whose runs
/// all end a few milliseconds after their build never got past the pieces they had cached
/// first: each run loaded those and was asked to stop before the first it lacked (on the H100
/// with the driver's cache cold, particles' conversion kernels were never built in the stress
/// sequence; on PoCL, `tests/policy.rs`, `short_runs_build_one_piece_of_the_copies_each`).
/// Copies built ahead for a tile to try run to the end: stopped, they would delay the climb by
/// several runs. The one piece is let finish (`worker::finishing`): a conversion's timings,
/// which check whether their job was asked to stop before they start, were otherwise never made
/// at an exit, so that a program of short runs got its copies ready without the conversions'
/// costs, and could not convert until a run lasted long enough to time them.
struct Steps {
    ahead: bool,
    /// A piece of this job took a compile's time.
    slow: bool,
    /// The time its pieces took since the run ended.
    after_end: std::time::Duration,
}

/// A piece that took longer than this was compiled or measured, not loaded.
const LOADED_WITHIN: std::time::Duration = std::time::Duration::from_millis(50);

impl Steps {
    fn new(ahead: Option<u32>) -> Steps {
        Steps { ahead: ahead.is_some(), slow: false, after_end: std::time::Duration::ZERO }
    }

    /// Runs one piece of the build, `piece`, under the rules above: Err(`STOPPED`) for a
    /// piece not run.
    fn piece<T>(&mut self, piece: impl Fn() -> Result<T, String>) -> Result<T, String> {
        use crate::cache::binaries::{cache_only, NOT_CACHED};
        let over = !self.ahead && super::super::worker::cancelled();
        if over {
            if self.spent() {
                return Err(STOPPED.into());
            }
            match self.timed(true, || cache_only(&piece)) {
                Err(e) if e.contains(NOT_CACHED) => {}
                done => return done,
            }
            // The look in the caches may itself have been slow.
            if self.spent() {
                return Err(STOPPED.into());
            }
            return self.timed(true, || super::super::worker::finishing(&piece));
        }
        self.timed(false, piece)
    }

    /// Whether the job has had what a run that is over allows it: a compile's time.
    fn spent(&self) -> bool {
        self.slow || self.after_end > LOADED_WITHIN
    }

    fn timed<T>(&mut self, over: bool, f: impl FnOnce() -> T) -> T {
        let started = std::time::Instant::now();
        let done = f();
        let took = started.elapsed();
        self.slow |= took > LOADED_WITHIN;
        if over {
            self.after_end += took;
        }
        done
    }
}

/// Builds the copies of `kernels` (`source`) for a build of the application's program in
/// `context` with options `user` (`id.compiler_options` once preprocessed). `ahead`: the copies
/// at that tile, built only to be in clayout's cache for a later run that tries the tile
/// (`cost::tiles`); nothing of this run's model changes.
fn build_private(
    source: &str,
    kernels: &HashMap<String, Arc<RewrittenKernel>>,
    context: registry::Handle,
    user: &str,
    id: Identity,
    ahead: Option<u32>,
) -> Result<PrivateProgram, String> {
    if let Some(Err(why)) = tile::user_tile_raw(user) {
        return Err(why);
    }
    let ctx = context as cl_context;
    let Identity { device, compiler_options, stage_wg, rest, source_hash } = id;
    let device = device as cl_device_id;
    let compiler_options = compiler_options.as_str();
    // Every (S, w, host layout) of the copies; the largest structure picks the tile.
    let mut shapes: Vec<(u32, u32, Layout)> = kernels
        .values()
        .flat_map(|k| {
            k.layouts.iter().map(|(p, l)| (l.words, l.word_bytes, k.hosts.get(p).copied().unwrap_or(Layout::Aos)))
        })
        .collect();
    shapes.sort_by_key(|&(s, w, h)| (std::cmp::Reverse(s * w), s, w, h == Layout::Soa));
    shapes.dedup();
    let started = std::time::Instant::now();
    let fixed = tile::fixed_tile(user);
    let auto = crate::config::get().policy == crate::config::Policy::Auto;
    // CLAYOUT_BUILD_AFTER=wait does everything before the first launch: nothing of clayout's
    // runs on the device beside the launches it times.
    let now = crate::config::get().build_after == crate::config::BuildAfter::Wait;
    let (searched, search_later) = match (fixed, shapes.first(), ahead) {
        (_, _, Some(_)) => (None, None),
        // Under the cost model the search (a conversion program built for every candidate tile)
        // is not made before the copies: this run takes the tile found by an earlier one, or the
        // device's default, and the search follows on the worker when the run lasts long enough.
        (None, Some(&(s, w, h)), None) if auto && !now => {
            let (tile, later) = tune::searched_tile(device, s, w, h);
            (tile, later.then_some((s, w, h)))
        }
        (None, Some(&(s, w, h)), None) => {
            (tune::tuned(ctx, device, s, w, h, None).filter(|t| t.searched).map(|t| t.tile), None)
        }
        _ => (None, None),
    };
    let fuses = fuses(device, compiler_options);
    let copies = Copies { source, kernels, context, user, compiler_options, device, source_hash };
    // The text is preprocessed: the application's -D, -U and -I are spent, and the macros the
    // inserted code reads are given here, the tile among them.
    let (base, _) = tile::with_tile(user, Some(device), searched);
    // The kernels' times records, where the choice of tile read them.
    let mut read = HashMap::new();
    let tile = match ahead {
        Some(t) => t,
        None if fixed.is_none() && auto => {
            let (tile, records) = copies.measured_tile(base, started);
            read = records;
            tile
        }
        None => base,
    };
    let options = format!("{compiler_options} -D CLAYOUT_TILE={tile}{rest}");
    let whole = whole_key(device, source_hash, user, auto);
    // A load that may take only what clayout's cache holds is not begun unless every piece is
    // there: one piece missing made it load the others first, for nothing (2.5 to 8 ms on the
    // H100, in a program's second and third runs, whose exits build a piece each).
    // What `auto` made whole holds what the other policies need too.
    let whole_here =
        || whole_at(&whole, tile) || (!auto && whole_at(&whole_key(device, source_hash, user, true), tile));
    if crate::cache::binaries::only_cached() && ahead.is_none() && !whole_here() {
        return Err(format!("not every piece of the copies at tile {tile}: {}", crate::cache::binaries::NOT_CACHED));
    }
    // One probe kernel, in the same build, checks every structure layout the copies assume.
    let mut types: BTreeMap<&str, &StructLayout> = BTreeMap::new();
    for k in kernels.values() {
        for l in k
            .layouts
            .values()
            .filter(|l| l.members.len() > 1 || l.members[0].name != "w" || l.type_name != l.members[0].scalar)
        {
            types.insert(&l.type_name, l);
        }
    }
    let mut probe_src = String::from("\n__kernel void clayout_probe_layout(__global ulong *out) {\n");
    let mut expected = Vec::new();
    for (t, l) in &types {
        probe_src.push_str(&format!("  {{ {t} clayout_v;\n"));
        for (expr, want) in rewrite::probe_expressions(l, "clayout_v") {
            probe_src.push_str(&format!("    out[{}] = {expr};\n", expected.len()));
            expected.push((t.to_string(), expr, want));
        }
        probe_src.push_str("  }\n");
    }
    probe_src.push_str("}\n");
    let text = format!("{source}{probe_src}");
    let mut steps = Steps::new(ahead);
    let named = |e: String| if e == STOPPED { e } else { format!("the rewritten program: {e}") };
    let full_options = format!("{options} -D {FULL_TILES_MACRO}");
    // Where the device's compiler may fuse floating-point operations differently in a copy, a
    // floating-point kernel runs its ASTA copy on whole tiles only (`launch::rounding_risk`),
    // from the build for whole tiles, and its staged copy is the same code in either build (it
    // never calls the ASTA index): where every kernel is such, the build for any size would
    // never run. It is not made: one program less to compile, and to load in every run (2-3 ms
    // on the H100).
    let one_build = fuses.is_some() && kernels.values().all(|k| k.floating);
    let (built, full_tiles) = if one_build {
        let p = steps.piece(|| build_cached(ctx, device, &text, &full_options)).map_err(named)?;
        let again =
            crate::cl::Program::retained_in(p.raw(), ctx).ok_or("the rewritten program could not be retained")?;
        (p, Some(again))
    } else {
        let built = steps.piece(|| build_cached(ctx, device, &text, &options)).map_err(named)?;
        // The build's own failure is kept apart from the step's (not cached, stopped).
        let full_tiles = match steps.piece(|| match build_cached(ctx, device, &text, &full_options) {
            Err(e) if e.contains(crate::cache::binaries::NOT_CACHED) => Err(e),
            r => Ok(r),
        })? {
            Ok(p) => Some(p),
            Err(e) => {
                crate::log::debug_with(|| format!("the rewritten program with whole tiles only did not build: {e}"));
                None
            }
        };
        (built, full_tiles)
    };
    let probed = std::time::Instant::now();
    let probe_key = format!(
        "layout|{}|{source_hash:016x}|{:016x}",
        crate::cache::disk::device_key(device),
        crate::cache::disk::fnv1a(format!("{options}\n{probe_src}").as_bytes())
    );
    let got = probe::run_cached(ctx, device, &built, "clayout_probe_layout", expected.len(), &probe_key)
        .map_err(|e| format!("the structure layout probe: {e}"))?;
    crate::log::debug_with(|| {
        format!("the structure layout probe answered in {:.2} ms", probed.elapsed().as_secs_f64() * 1e3)
    });
    let mut wrong_layouts = HashMap::new();
    for ((t, expr, want), got) in expected.into_iter().zip(got) {
        if want != got && !wrong_layouts.contains_key(&t) {
            wrong_layouts.insert(t, format!("the device compiler says {expr} = {got}, clayout computed {want}"));
        }
    }
    // The conversion kernels these buffers will need, built now rather than in the first
    // launch, and what they cost. A failure here is only logged: the conversion will retry,
    // and fall back then.
    let mut rates = crate::runtime::cost::Rates::default();
    fn not_cached<T>() -> Result<T, String> {
        Err(crate::cache::binaries::NOT_CACHED.to_string())
    }
    for (s, w, h) in shapes {
        // Inside a load too: left to the first conversion, they cost it more than they cost the
        // build (on the H100 the load took 1-5 ms less, and a first conversion 2.5-3.5 ms more
        // and a wait for the device; the model, not counting it, converted 30-launch runs for
        // gains of 0.15 ms).
        let prepared = steps.piece(|| match crate::marshal::prepare(ctx, device, s, tile, w) {
            Err(_) if crate::cache::binaries::only_cached() => not_cached(),
            r => Ok(r),
        })?;
        if let Err(e) = prepared {
            if ahead.is_some() {
                // A tile whose conversions do not build is not one to try.
                return Err(format!("the conversion kernels for S={s} w={w} T={tile}: {e}"));
            }
            crate::log::debug_with(|| format!("conversion kernels for S={s} w={w} T={tile} not built ahead: {e}"));
        }
        if auto {
            let tuned = steps.piece(|| {
                if crate::cache::binaries::only_cached() && !tune::known(device, s, w, h, Some(tile)) {
                    return not_cached();
                }
                Ok(tune::tuned(ctx, device, s, w, h, Some(tile)))
            })?;
            if let Some(t) = tuned {
                rates.insert((s, w, h), tune::with_best_rates(device, s, w, h, t));
            }
        }
    }
    if ahead.is_some() {
        crate::log::info_with(|| format!("built the rewritten copies with tile {tile} ahead, for a later run to try"));
    } else {
        crate::log::info_with(|| format!("built the rewritten copies of {} kernel(s) with tile {tile}", kernels.len()));
    }
    if let Some((s, w, h)) = search_later {
        search_later_for(ctx, device, (s, w, h), started.elapsed());
    }
    if !crate::cache::binaries::only_cached() {
        note_whole(&whole, tile);
    }
    let private = PrivateProgram {
        program: built,
        full_tiles,
        tile,
        fuses,
        wrong_layouts,
        device: device as usize,
        source_hash,
        rates,
        stage_wg,
        staged_offered: staged_offered(device),
    };
    // What earlier runs measured, read now rather than in the application's first launch.
    for (name, k) in kernels.iter().filter(|_| ahead.is_none()) {
        let key = private.times_key(&k.private_name);
        let times = read.remove(&k.private_name).unwrap_or_else(|| TimesByClass::read(&key));
        // Only on a history from earlier runs: a kernel never timed has its first launch timed
        // as written.
        let known = times.as_ref().is_some_and(|t| !t.classes.is_empty() && !t.first_not_written);
        // Whether this run's first launch runs as written: under `auto`, and under `never` with
        // the staged copy offered, where the last run's did; under `never` without it, always;
        // under `always` it converts.
        let as_written = match crate::config::get().policy {
            crate::config::Policy::Auto => known,
            crate::config::Policy::Never => known || !private.staged_offered,
            crate::config::Policy::Always => false,
        };
        k.model.lock().load_read(&key, times, private.tile);
        k.speculate.store(as_written && !super::super::suggest::active(), std::sync::atomic::Ordering::Relaxed);
        crate::stats::copies_tile(name, tile);
    }
    Ok(private)
}

/// The tile search for structures `(s, w, host)`, for the runs after this one, held back on the
/// worker until the application has run a minute, and four times as long as these copies took
/// to build (the search builds about four such programs and times conversions on a scratch
/// buffer); dropped if the run ends first. A run that ends during the search waits for the
/// candidate being built (a few hundred ms on a cold driver): under 2 % of such a run.
fn search_later_for(ctx: cl_context, device: cl_device_id, (s, w, h): (u32, u32, Layout), took: std::time::Duration) {
    // Counted on the context, as the build's job is (`runtime::refs`): held back a minute, it
    // showed in the context's reference count meanwhile.
    let Some(held) = crate::cl::Context::retained_in(ctx, ctx) else { return };
    let (ctx_key, dev_key) = (ctx as usize, device as usize);
    super::super::worker::submit_after(ctx_key, held_back(took), move || {
        let _held = held;
        let _ = tune::tuned(ctx_key as cl_context, dev_key as cl_device_id, s, w, h, None);
    });
}

/// When clayout's own work for later runs may start, once these copies took `took` to build:
/// after the application has run a minute, and four times as long as that build (the work
/// builds about four such programs); None: at once (CLAYOUT_BUILD_AFTER=0 or wait).
fn held_back(took: std::time::Duration) -> Option<std::time::Instant> {
    const AT_LEAST: std::time::Duration = std::time::Duration::from_secs(60);
    let wait = crate::config::get().build_after.hold((took * 4).max(AT_LEAST));
    (!wait.is_zero()).then(|| std::time::Instant::now() + wait)
}

/// What a build of the copies is made from, for choosing their tile and building them ahead.
struct Copies<'a> {
    source: &'a str,
    kernels: &'a HashMap<String, Arc<RewrittenKernel>>,
    context: registry::Handle,
    user: &'a str,
    compiler_options: &'a str,
    device: cl_device_id,
    source_hash: u64,
}

/// Tiles tried or built ahead in this process, per program (`Copies::trials_key`): a program
/// whose copies are looked up in the cache first and then built counts one try, one build.
static NOTED: once_cell::sync::Lazy<Mutex<std::collections::HashSet<(String, u32, bool)>>> =
    once_cell::sync::Lazy::new(|| Mutex::new(std::collections::HashSet::new()));

impl Copies<'_> {
    fn trials_key(&self) -> String {
        format!("{}|{}", crate::cache::disk::device_key(self.device), self.source_hash)
    }

    /// Whether this is the first time this process notes `tile` as tried (`ahead` false) or
    /// built ahead (true) for this program.
    fn first_note(&self, tile: u32, ahead: bool) -> bool {
        NOTED.lock().insert((self.trials_key(), tile, ahead))
    }

    /// The tile to build the copies with: the one the kernels measured fastest in ASTA over
    /// earlier runs (`cost::tiles`), `base` until they measured one, or the next tile to try
    /// once a run before this one built its copies ahead (this run then measures it). A tile
    /// to try whose copies are not built yet is built ahead on the worker, held back like the
    /// tile search. With it, the kernels' times records it read, by copy name (None: none on
    /// disk), for their models to load without reading them again.
    fn measured_tile(&self, base: u32, started: std::time::Instant) -> (u32, HashMap<String, Option<TimesByClass>>) {
        use super::super::cost::tiles;
        let read: HashMap<String, Option<TimesByClass>> = self
            .kernels
            .values()
            .map(|k| {
                let key = times_key(self.device, &k.private_name, self.source_hash);
                (k.private_name.clone(), TimesByClass::read(&key))
            })
            .collect();
        let records: Vec<TimesByClass> = read.values().flatten().cloned().collect();
        let key = self.trials_key();
        let mut trials: tiles::Trials = crate::cache::disk::get_json("tiles", &key).unwrap_or_default();
        let choice = tiles::choose(base, &tune::candidates(self.device), &records, &trials);
        let Some(next) = choice.next else { return (choice.best, read) };
        if trials.prebuilt.contains(&next) {
            if self.first_note(next, false) {
                trials.note_try(next);
                crate::cache::disk::put_json("tiles", &key, &trials);
                crate::log::info_with(|| {
                    format!(
                        "the copies take tile {next} in this run, to measure it (tile {} is the fastest measured)",
                        choice.best
                    )
                });
            }
            return (next, read);
        }
        if self.first_note(next, true) {
            // CLAYOUT_BUILD_AFTER=wait does everything at once, in the build that found it
            // (never in a load from the cache only, which must not compile).
            let now = crate::config::get().build_after == crate::config::BuildAfter::Wait
                && !crate::cache::binaries::only_cached();
            if now {
                build_ahead(self.source, self.kernels, self.context, (self.user, self.compiler_options), &key, next);
            } else {
                self.build_ahead_later(next, started.elapsed());
            }
        }
        (choice.best, read)
    }

    /// `build_ahead` on the worker, held back like the tile search.
    fn build_ahead_later(&self, tile: u32, took: std::time::Duration) {
        let ctx = self.context as cl_context;
        // Counted on the context, as the build's job is (`runtime::refs`).
        let Some(held) = crate::cl::Context::retained_in(ctx, ctx) else { return };
        let (source, kernels, context) = (self.source.to_string(), self.kernels.clone(), self.context);
        let (user, compiler_options, key) =
            (self.user.to_string(), self.compiler_options.to_string(), self.trials_key());
        super::super::worker::submit_after(context, held_back(took), move || {
            let _held = held;
            build_ahead(&source, &kernels, context, (&user, &compiler_options), &key, tile);
        });
    }
}

/// Builds the copies at `tile` so that a later run can try the tile without waiting for them,
/// and notes the outcome in the program's trials (record `key`).
fn build_ahead(
    source: &str,
    kernels: &HashMap<String, Arc<RewrittenKernel>>,
    context: registry::Handle,
    (user, compiler_options): (&str, &str),
    key: &str,
    tile: u32,
) {
    let built = identity(hashed_source(source), kernels, context, compiler_options)
        .and_then(|id| build_private(source, kernels, context, user, id, Some(tile)));
    let mut trials: super::super::cost::tiles::Trials = crate::cache::disk::get_json("tiles", key).unwrap_or_default();
    match built {
        Ok(_) => trials.prebuilt.push(tile),
        // Stopped part-way (its context or the process is going): nothing learnt.
        Err(_) if super::super::worker::cancelled() => return,
        Err(why) => {
            crate::log::debug_with(|| {
                format!("the copies with tile {tile} did not build ({why}): that tile is not tried")
            });
            trials.failed.push(tile);
        }
    }
    crate::cache::disk::put_json("tiles", key, &trials);
}

/// Key of a copy's times in the disk cache: they belong to exactly this build on this device.
fn times_key(device: cl_device_id, private_name: &str, source_hash: u64) -> String {
    format!("{}|{}|{}", crate::cache::disk::device_key(device), private_name, source_hash)
}

/// Why the device compiler may fuse floating-point operations where the code around them
/// lets it (`PrivateProgram::fuses`).
fn fuses(device: cl_device_id, compiler_options: &str) -> Option<String> {
    if let Some(o) = crate::clc::pp::parse_build_options(compiler_options).free_contraction() {
        return Some(format!(
            "the build option {o} lets the compiler fuse floating-point operations where it sees fit"
        ));
    }
    crate::marshal::compiler_fuses_across_statements(device)
        .then(|| "this device's compiler may fuse floating-point operations across statements".to_string())
}

/// The key of record `whole`: the tiles at which every piece of a build's copies (their
/// programs, the probe's answer, the conversions and, under `auto`, the conversions' timings)
/// was made, so is in clayout's cache for a load. The build is the copies' source and options
/// (`source_hash`) on `device` for the application's `options`; `timed`: with the conversions'
/// timings, as `auto` needs them (a build under `always`, which times no conversion, said the
/// copies were whole, and a load under `auto` then loaded two programs for nothing, and timed the
/// conversions on the device in the middle of the run).
fn whole_key(device: cl_device_id, source_hash: u64, options: &str, timed: bool) -> String {
    format!(
        "{}|{source_hash:016x}|{options}|{}",
        crate::cache::disk::device_key(device),
        if timed { "timed" } else { "" }
    )
}

/// Whether record `whole` lists `tile` (any tile: None).
fn whole_at(key: &str, tile: impl Into<Option<u32>>) -> bool {
    let tiles: Vec<u32> = crate::cache::disk::get_json("whole", key).unwrap_or_default();
    tile.into().map_or(!tiles.is_empty(), |t| tiles.contains(&t))
}

fn note_whole(key: &str, tile: u32) {
    let mut tiles: Vec<u32> = crate::cache::disk::get_json("whole", key).unwrap_or_default();
    if !tiles.contains(&tile) {
        tiles.push(tile);
        crate::cache::disk::put_json("whole", key, &tiles);
    }
}

/// The private program, from the on-disk cache's binary when its context has one device (the
/// binary is for one device; a program for several is built from source for all of them).
fn build_cached(ctx: cl_context, device: cl_device_id, source: &str, options: &str) -> Result<Program, String> {
    let devices = registry::get().contexts.get(registry::key(ctx)).map_or(0, |c| c.devices.len());
    if devices != 1 && crate::cache::binaries::only_cached() {
        return Err(crate::cache::binaries::NOT_CACHED.into());
    }
    if devices != 1 {
        return probe::build(ctx, source, options, "build");
    }
    if crate::fault::inject("build") {
        return Err("injected build failure".into());
    }
    // The build log's first error says enough in the one line this ends up in.
    crate::cache::binaries::build(ctx, device, &crate::clc::text::encode(source), options, "private")
        .map_err(|e| e.first_line().to_string())
}

/// Selects the copies' 32-bit index arithmetic (see the rewriter's generated index functions).
const INDEX32_MACRO: &str = "CLAYOUT_INDEX32";
/// Selects the ASTA index without a narrower last tile (`PrivateProgram::full_tiles`).
const FULL_TILES_MACRO: &str = "CLAYOUT_FULL_TILES";
/// The work-group capacity of the staged copies' local arrays.
const STAGE_WG_MACRO: &str = "CLAYOUT_STAGE_WG";
/// Fewer work-items than this per group would not make the staged loads coalesce.
pub const STAGE_WG_MIN: usize = 32;

/// The largest power-of-two work-group, at most 256, whose staged slices fit in half the
/// device's local memory for every staged copy (the other half is left to the kernel's own
/// `__local` arrays); 0 when fewer than `STAGE_WG_MIN` fit.
fn staged_offered(device: cl_device_id) -> bool {
    let ty: cl_device_type = crate::cl::info::device_scalar(device, CL_DEVICE_TYPE);
    crate::config::get().staged.on(ty & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR) != 0)
}

fn stage_capacity(device: cl_device_id, kernels: &HashMap<String, Arc<RewrittenKernel>>) -> usize {
    let Some(need) = kernels.values().filter_map(|k| k.staged.as_ref()).map(|s| s.bytes_per_item).max() else {
        return 0;
    };
    let local: cl_ulong = crate::cl::info::device_scalar(device, CL_DEVICE_LOCAL_MEM_SIZE);
    let fits = (local / 2 / need.max(1)).min(256) as usize;
    let cap = if fits == 0 { 0 } else { 1 << fits.ilog2() };
    if cap < STAGE_WG_MIN {
        0
    } else {
        cap
    }
}
