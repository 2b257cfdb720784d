//! Configuration: every `CLAYOUT_*` variable is declared once, in `config_table!` below. The
//! parsing, the warning for a bad value and the table in `docs/configuration.md` all come from
//! that one declaration (a unit test keeps the docs in step).

use once_cell::sync::OnceCell;
use std::fmt::Write as _;

/// How much clayout says. Ordered: a message is written when its level <= the configured one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Off,
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

/// Where the statistics go at exit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StatsOut {
    None,
    /// Human summary on stderr.
    Summary,
    /// JSON document written to this path.
    Json(String),
}

/// One kind of value a variable may hold: how to read it and how the docs name it.
pub trait Setting: Sized {
    const KIND: &'static str;
    fn parse(raw: &str) -> Result<Self, String>;
}

impl Setting for bool {
    const KIND: &'static str = "0 or 1";
    fn parse(raw: &str) -> Result<Self, String> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" | "" => Ok(false),
            _ => Err("expected 0 or 1".into()),
        }
    }
}

impl Setting for LogLevel {
    const KIND: &'static str = "off, error, warn, info, debug, trace";
    fn parse(raw: &str) -> Result<Self, String> {
        Ok(match raw.trim().to_ascii_lowercase().as_str() {
            "off" | "none" | "0" => LogLevel::Off,
            "error" => LogLevel::Error,
            "warn" | "warning" => LogLevel::Warn,
            "info" => LogLevel::Info,
            "debug" => LogLevel::Debug,
            "trace" => LogLevel::Trace,
            _ => return Err("expected off, error, warn, info, debug or trace".into()),
        })
    }
}

impl Setting for StatsOut {
    const KIND: &'static str = "1 or a path ending in .json";
    fn parse(raw: &str) -> Result<Self, String> {
        let v = raw.trim();
        match v {
            "" | "0" => Ok(StatsOut::None),
            "1" => Ok(StatsOut::Summary),
            p if p.ends_with(".json") => Ok(StatsOut::Json(p.to_string())),
            _ => Err("expected 1 or a path ending in .json".into()),
        }
    }
}

impl Setting for Option<String> {
    const KIND: &'static str = "path";
    fn parse(raw: &str) -> Result<Self, String> {
        let v = raw.trim();
        Ok((!v.is_empty()).then(|| v.to_string()))
    }
}

/// When clayout's own builds for a program start under the cost model: after as long as the
/// application's build of it took (`Auto`), after a fixed number of milliseconds, or at once
/// with the first launch waiting for them (`Wait`, as under the other policies).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildAfter {
    Auto,
    Ms(u64),
    Wait,
}

impl BuildAfter {
    /// How long a build is held back, given what `auto` would wait (zero: not held back).
    pub fn hold(self, auto: std::time::Duration) -> std::time::Duration {
        match self {
            BuildAfter::Auto => auto,
            BuildAfter::Ms(ms) => std::time::Duration::from_millis(ms),
            BuildAfter::Wait => std::time::Duration::ZERO,
        }
    }
}

impl Setting for BuildAfter {
    const KIND: &'static str = "auto, milliseconds, wait";
    fn parse(raw: &str) -> Result<Self, String> {
        match raw.trim() {
            "" | "auto" => Ok(BuildAfter::Auto),
            "wait" => Ok(BuildAfter::Wait),
            v => v.parse().map(BuildAfter::Ms).map_err(|_| "expected auto, wait or a number of milliseconds".into()),
        }
    }
}

/// A setting that is on (`1`), off (`0`) or left to clayout (`auto`): where the policies may run
/// a rewritten kernel's staged copy (`CLAYOUT_STAGED`: under `auto` on GPUs and accelerators),
/// and whether the application's queues profile where it did not ask them to
/// (`CLAYOUT_PROFILE`: under `auto` as runtime::profiling learns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Switch {
    Auto,
    On,
    Off,
}

impl Switch {
    /// Whether it is on, `auto` standing for what clayout decided (for the staged copy: that
    /// the device is a GPU or an accelerator).
    pub fn on(self, auto: bool) -> bool {
        match self {
            Switch::Auto => auto,
            Switch::On => true,
            Switch::Off => false,
        }
    }
}

impl Setting for Switch {
    const KIND: &'static str = "auto, 0 or 1";
    fn parse(raw: &str) -> Result<Self, String> {
        match raw.trim() {
            "" | "auto" => Ok(Switch::Auto),
            "1" => Ok(Switch::On),
            "0" => Ok(Switch::Off),
            _ => Err("expected auto, 0 or 1".into()),
        }
    }
}

/// Whether a read of a buffer in ASTA is converted back and read chunk by chunk, each chunk's
/// transfer beside the next chunk's conversion: for host memory that is pinned (`Auto`), never
/// (`Off`), or always in this many chunks (`Chunks`, for tests and measurements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkedReads {
    Auto,
    Off,
    Chunks(u32),
}

impl Setting for ChunkedReads {
    const KIND: &'static str = "auto, 0, 2 to 64";
    fn parse(raw: &str) -> Result<Self, String> {
        match raw.trim() {
            "" | "auto" => Ok(ChunkedReads::Auto),
            "0" | "off" => Ok(ChunkedReads::Off),
            v => match v.parse::<u32>() {
                Ok(n) if (2..=64).contains(&n) => Ok(ChunkedReads::Chunks(n)),
                _ => Err("expected auto, 0 or a number of chunks from 2 to 64".into()),
            },
        }
    }
}

/// A tile size: a power of two from 1 to 1024, or empty for the device's default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile(pub Option<u32>);

impl Setting for Tile {
    const KIND: &'static str = "power of two, 1 to 1024";
    fn parse(raw: &str) -> Result<Self, String> {
        let v = raw.trim();
        if v.is_empty() {
            return Ok(Tile(None));
        }
        match v.parse::<u32>() {
            Ok(t) if t.is_power_of_two() && t <= 1024 => Ok(Tile(Some(t))),
            _ => Err("expected a power of two from 1 to 1024".into()),
        }
    }
}

/// When the transparent mode converts a buffer to ASTA for a rewritten kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Whenever the buffer can be converted (the behaviour before the cost model).
    Always,
    /// Never: rewritten kernels run as written (or staged through local memory); kernels
    /// written for a device layout still get their buffers converted, since they cannot run
    /// otherwise.
    Never,
    /// The cost model decides per launch (docs/cost-model.md).
    Auto,
}

impl Setting for Policy {
    const KIND: &'static str = "always, never, auto";
    fn parse(raw: &str) -> Result<Self, String> {
        Ok(match raw.trim().to_ascii_lowercase().as_str() {
            "always" => Policy::Always,
            "never" => Policy::Never,
            "auto" | "" => Policy::Auto,
            _ => return Err("expected always, never or auto".into()),
        })
    }
}

/// Where clayout keeps what it learns across runs; `off` keeps nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheDir {
    /// The user's cache directory: `$XDG_CACHE_HOME/clayout`, else `$HOME/.cache/clayout`.
    Default,
    Off,
    Path(String),
}

impl Setting for CacheDir {
    const KIND: &'static str = "path or off";
    fn parse(raw: &str) -> Result<Self, String> {
        Ok(match raw.trim() {
            "" => CacheDir::Default,
            "off" | "0" | "none" => CacheDir::Off,
            p => CacheDir::Path(p.to_string()),
        })
    }
}

/// One row of the documentation table.
pub struct VarDoc {
    pub name: &'static str,
    pub kind: &'static str,
    pub default: &'static str,
    pub description: &'static str,
}

macro_rules! config_table {
    ($( $field:ident : $ty:ty = $name:literal, default $default:literal, $desc:literal; )*) => {
        /// The configuration, read once from the environment.
        #[derive(Clone, Debug)]
        pub struct Config { $( pub $field: $ty, )* }

        pub const VARS: &[VarDoc] = &[
            $( VarDoc { name: $name, kind: <$ty as Setting>::KIND, default: $default, description: $desc }, )*
        ];

        impl Config {
            /// Reads every variable through `get`; a bad value is replaced by the default and
            /// reported in the returned warnings, never refused.
            pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> (Config, Vec<String>) {
                let mut warnings = Vec::new();
                let cfg = Config { $( $field: read::<$ty>($name, $default, get, &mut warnings), )* };
                (cfg, warnings)
            }
        }
    };
}

config_table! {
    disable: bool = "CLAYOUT_DISABLE", default "0",
        "1 makes clayout a pure forwarder: no tracking, no marshaling, no statistics.";
    log: LogLevel = "CLAYOUT_LOG", default "warn",
        "How much clayout writes: each level includes the ones before it.";
    log_file: Option<String> = "CLAYOUT_LOG_FILE", default "",
        "Append log lines to this file instead of standard error.";
    stats: StatsOut = "CLAYOUT_STATS", default "",
        "1 prints a summary on standard error at exit; a path ending in .json writes the statistics there as JSON.";
    tile: Tile = "CLAYOUT_TILE", default "",
        "Tile size T of the ASTA layout; empty lets clayout search the best tile once per GPU and structure for the transparent mode's copies (docs/cost-model.md; under auto the search runs on clayout's thread after the first run's copies are built, for the runs after it) and otherwise take the device's coalescing width (32 on NVIDIA, 64 on AMD, 32 elsewhere); under auto, once a program's kernels have measured their ASTA copies, later runs try the neighbouring tiles and keep the one its own kernels ran fastest at.";
    annotations: Option<String> = "CLAYOUT_ANNOTATIONS", default "",
        "auto infers an annotation for every kernel from its source (docs/annotations.md); otherwise the side file of //DL: annotations, one per line starting with the kernel name, for kernels whose source cannot be edited.";
    suggest: Option<String> = "CLAYOUT_SUGGEST", default "",
        "File to which the annotations clayout infers are written at exit, each kernel's with whether the rewriter accepts it and its measured time as written (set by clayout-run --suggest; rewritten kernels then run as written, nothing is converted).";
    rewrite: bool = "CLAYOUT_REWRITE", default "1",
        "0 turns the transparent mode off: kernels annotated without a device layout (//DL: AoS: p[n]) then run as written, on host-layout buffers.";
    dump_dir: Option<String> = "CLAYOUT_DUMP_DIR", default "",
        "Directory where the transparent mode writes every rewritten program source (one .cl file per program) for inspection.";
    strict: bool = "CLAYOUT_STRICT", default "0",
        "1 turns every fallback into a hard failure (the call returns CL_OUT_OF_RESOURCES), for testing.";
    profile: Switch = "CLAYOUT_PROFILE", default "auto",
        "Whether clayout turns on profiling for the application's queues (hidden from the application's queries: its events answer as without clayout), so that the cost model times launches from their events, later, instead of waiting for markers before and after them, and the statistics include the device time of conversions (docs/cost-model.md): auto on a GPU's or accelerator's queues from a program's second run on, where its earlier runs asked for events (of launches or other commands) no more than once per hundred launches (on NVIDIA a command that asks for an event costs 6 us more on a queue that profiles); 1 on every queue; 0 on none.";
    warm: bool = "CLAYOUT_WARM", default "1",
        "1 reads clayout's own machine code into the processor's caches on clayout's reading thread while the application's build runs (a few tenths of a millisecond of another core, stopped when the build returns), so that the first calls of a run do not wait for that code from memory: on the H100's host it halved the time clayout adds to a short run's first upload (docs/results.md, \"Where a short run's time goes, call by call\"); and maps that code into the process on a thread of its own while the application creates its first context, so that its calls take no page faults in it (docs/results.md, \"What a layer costs a short run\"); 0 does neither.";
    fault: Option<String> = "CLAYOUT_FAULT", default "",
        "Test builds only (feature fault-injection): comma-separated sites of clayout's own OpenCL calls to make fail: build (conversion kernels and the transparent mode's private program), scratch, enqueue (conversion kernels), conversion (the whole conversion), conversion-back (only the conversions back to the host's layout, so that buffers reach a device layout and the host fallback brings them back), probe (structure probes), kernel (the rewritten kernel's creation, arguments and launch), chunk (every chunk's conversion but the first in a chunked read, and the device conversion of the rest that follows: the rest comes back on the host), wait (the wait of a blocking read, write or map), all. Four sites change a judgement instead of failing a call: tracked (a declined run is tracked from its start, as before runs were left untracked: docs/cost-model.md), driver-cache (the device counts as keeping a compile cache of its own, as NVIDIA's does: docs/cache.md), quick-build (every application build counts as answered from its driver's cache: docs/cost-model.md) and profile-any-device (CLAYOUT_PROFILE=auto counts every device as a GPU); one holds clayout's work back: hold (the builds and loads of the copies a run would make on clayout's thread wait an hour, as on a worker whose loads wait for an idle device: only a declined run's wait for its copies gets them); one makes a race happen: untracked-race (the tracking of a declined run starts between each launch's count untracked and its enqueue, as where another thread starts it then); one widens a window for a race: slow-lane-give (the opening of an express lane for a rewritten kernel's copy waits 20 ms first, while other threads create or release kernels).";
    policy: Policy = "CLAYOUT_POLICY", default "auto",
        "When the transparent mode converts buffers to ASTA for a rewritten kernel: always, never (rewritten kernels run as written, or staged through local memory), or auto (the cost model decides from measured kernel and conversion times, docs/cost-model.md). Kernels written for a device layout are converted under every policy.";
    fuse: bool = "CLAYOUT_FUSE", default "1",
        "0 turns off fused conversions: a launch of a rewritten kernel that runs on buffers converted to ASTA, on buffers still in host layout, then always converts them first. With 1, when the kernel has a staged copy and the launch covers the buffers in whole work-groups of whole tiles, the staged copy runs instead, reading the buffers as AoS and writing them back in ASTA: the launch converts them as it runs, with no conversion kernel (docs/cost-model.md).";
    staged: Switch = "CLAYOUT_STAGED", default "auto",
        "Where the policies may run a rewritten kernel's staged copy (its accesses staged through local memory) instead of the kernel as written, when its timings say it is faster: auto on GPUs and accelerators only; 1 on every device; 0 nowhere. On a CPU device local memory is ordinary memory and a barrier a loop over the work-items, so staging has nothing to gain, and the launches' timings there are not to be trusted to say so (PoCL, 4,096 particles: drift's staged copy took 5 times its time as written in the run, and `auto` ran 35-45 % slower than without clayout, docs/results.md). Fused conversions (CLAYOUT_FUSE) are not affected.";
    chunked_reads: ChunkedReads = "CLAYOUT_CHUNKED_READS", default "auto",
        "How clEnqueueReadBuffer reads a buffer that is in ASTA (from AoS): auto converts it back and reads it in chunks, each chunk's transfer running beside the next chunk's conversion on a queue of clayout's, when the read's host memory is pinned (a mapped CL_MEM_ALLOC_HOST_PTR buffer) and 32 MiB or more are converted; 0 converts the whole buffer, then reads it; a number from 2 to 64 always reads in that many chunks, whatever the host memory. Transfers from pageable memory lose more by being split than the conversion costs (docs/results.md, \"Conversions beside transfers\").";
    build_after: BuildAfter = "CLAYOUT_BUILD_AFTER", default "auto",
        "Under CLAYOUT_POLICY=auto, when clayout starts building a program's rewritten copies (and, later, searching its tile): auto waits, after the application's build, as long as that build took (at least a second in the program's first run where the driver answered it from its own cache, which says nothing of what clayout's builds cost), so that a run too short to repay the builds never pays for them (docs/cost-model.md); with auto (and under the other policies, whose first launch would otherwise wait for them), a build that its driver answered from its own cache (50 ms or less) loads what clayout's cache holds for the program inside that build call, so that the first launch finds the copies ready; a number of milliseconds fixes the wait (0: at once) and loads nothing inside the call. Launches before the copies are ready run as written. wait builds them at once and makes the first launch wait for them, as the other policies do, with the tile search and the copies of the next tile to try (for tests and benchmarks that want every launch decided by the cost model, and nothing of clayout's on the device beside the launches it times).";
    cache_dir: CacheDir = "CLAYOUT_CACHE_DIR", default "",
        "Directory of clayout's on-disk cache (binaries of the conversion kernels and of the transparent mode's programs, tuned tiles, kernel timings), keyed by device and driver version; empty means $XDG_CACHE_HOME/clayout or $HOME/.cache/clayout, off keeps nothing on disk.";
    opencl_library: Option<String> = "CLAYOUT_OPENCL_LIBRARY", default "",
        "Path of the real OpenCL library to forward to, when the loader the application uses cannot be found by itself.";
}

fn read<T: Setting>(name: &str, default: &str, get: &dyn Fn(&str) -> Option<String>, warnings: &mut Vec<String>) -> T {
    let fallback = || T::parse(default).unwrap_or_else(|e| panic!("default of {name} is invalid: {e}"));
    match get(name) {
        None => fallback(),
        Some(raw) => match T::parse(&raw) {
            Ok(v) => v,
            Err(why) => {
                let shown = if default.is_empty() { "unset" } else { default };
                warnings.push(format!("{name}={raw:?} is not valid ({why}); using {shown} instead"));
                fallback()
            }
        },
    }
}

/// The documentation table, in Markdown, exactly as `docs/configuration.md` holds it.
pub fn docs_table() -> String {
    let mut s = String::from("| Variable | Values | Default | What it does |\n| --- | --- | --- | --- |\n");
    for v in VARS {
        let default = if v.default.is_empty() { "(unset)" } else { v.default };
        let _ = writeln!(s, "| `{}` | {} | `{}` | {} |", v.name, v.kind, default, v.description);
    }
    s
}

static CONFIG: OnceCell<(Config, Vec<String>)> = OnceCell::new();

impl Config {
    /// CLAYOUT_ANNOTATIONS=auto: annotations inferred from each program's source.
    pub fn annotations_auto(&self) -> bool {
        self.annotations.as_deref() == Some("auto")
    }

    /// The side file CLAYOUT_ANNOTATIONS names, unless it says `auto`.
    pub fn side_file(&self) -> Option<&str> {
        self.annotations.as_deref().filter(|a| *a != "auto")
    }

    /// Whether annotations are inferred from the source: under CLAYOUT_ANNOTATIONS=auto, and to
    /// be suggested (CLAYOUT_SUGGEST).
    pub fn infers(&self) -> bool {
        self.annotations_auto() || self.suggest.is_some()
    }
}

/// The process's configuration, read from the environment at the first call.
pub fn get() -> &'static Config {
    &CONFIG.get_or_init(|| Config::from_lookup(&|name| std::env::var(name).ok())).0
}

/// What was wrong with the environment's values (each replaced by its default). The log says
/// them once (`log::config_warnings`): the configuration sits below the log, which reads it.
pub fn warnings() -> &'static [String] {
    get();
    CONFIG.get().map(|c| c.1.as_slice()).unwrap_or_default()
}

/// Whether hooks do their work (false under CLAYOUT_DISABLE=1).
#[inline]
pub fn active() -> bool {
    !get().disable
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(vars: &[(&str, &str)]) -> (Config, Vec<String>) {
        let vars: Vec<(String, String)> = vars.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        Config::from_lookup(&move |n| vars.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()))
    }

    #[test]
    fn defaults() {
        let (c, w) = cfg(&[]);
        assert!(w.is_empty());
        assert!(!c.disable);
        assert_eq!(c.log, LogLevel::Warn);
        assert_eq!(c.stats, StatsOut::None);
        assert_eq!(c.tile, Tile(None));
        assert_eq!(c.policy, Policy::Auto);
        assert_eq!(c.cache_dir, CacheDir::Default);
    }

    #[test]
    fn policy_and_cache_dir() {
        let (c, w) = cfg(&[("CLAYOUT_POLICY", "never"), ("CLAYOUT_CACHE_DIR", "off")]);
        assert!(w.is_empty());
        assert_eq!((c.policy, c.cache_dir), (Policy::Never, CacheDir::Off));
        let (c, w) = cfg(&[("CLAYOUT_POLICY", "sometimes"), ("CLAYOUT_CACHE_DIR", "/tmp/x")]);
        assert_eq!(w.len(), 1);
        assert_eq!((c.policy, c.cache_dir), (Policy::Auto, CacheDir::Path("/tmp/x".into())));
    }

    /// The staged copy: on GPUs and accelerators only by default, everywhere or nowhere when
    /// asked; a bad value warns and keeps the default.
    #[test]
    fn staged_offer() {
        let offered = |v: &str| {
            let (c, w) = cfg(&[("CLAYOUT_STAGED", v)]);
            (c.staged.on(true), c.staged.on(false), w.len())
        };
        assert_eq!(offered(""), (true, false, 0));
        assert_eq!(offered("auto"), (true, false, 0));
        assert_eq!(offered("1"), (true, true, 0));
        assert_eq!(offered("0"), (false, false, 0));
        assert_eq!(offered("yes"), (true, false, 1));
    }

    #[test]
    fn values() {
        let (c, w) = cfg(&[
            ("CLAYOUT_DISABLE", "1"),
            ("CLAYOUT_LOG", "debug"),
            ("CLAYOUT_STATS", "/tmp/s.json"),
            ("CLAYOUT_TILE", "64"),
        ]);
        assert!(w.is_empty());
        assert!(c.disable);
        assert_eq!(c.log, LogLevel::Debug);
        assert_eq!(c.stats, StatsOut::Json("/tmp/s.json".into()));
        assert_eq!(c.tile, Tile(Some(64)));
        assert_eq!(cfg(&[("CLAYOUT_STATS", "1")]).0.stats, StatsOut::Summary);
    }

    #[test]
    fn bad_values_warn_and_fall_back() {
        let (c, w) = cfg(&[
            ("CLAYOUT_LOG", "loud"),
            ("CLAYOUT_TILE", "48"),
            ("CLAYOUT_DISABLE", "maybe"),
            ("CLAYOUT_STATS", "stats.txt"),
        ]);
        assert_eq!(c.log, LogLevel::Warn);
        assert_eq!(c.tile, Tile(None));
        assert!(!c.disable);
        assert_eq!(c.stats, StatsOut::None);
        assert_eq!(w.len(), 4);
        assert!(w[0].contains("CLAYOUT_DISABLE") && w[0].contains("maybe"));
        assert!(w.iter().any(|m| m.contains("CLAYOUT_LOG=\"loud\"") && m.contains("using warn")));
    }

    /// docs/configuration.md must carry exactly the table generated from `config_table!`.
    /// Run with CLAYOUT_UPDATE_DOCS=1 to rewrite it after adding a variable.
    #[test]
    fn docs_match_table() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/configuration.md");
        let doc = std::fs::read_to_string(path).expect("docs/configuration.md");
        let (begin, end) = ("<!-- BEGIN CONFIG TABLE -->\n", "<!-- END CONFIG TABLE -->");
        let a = doc.find(begin).expect("begin marker") + begin.len();
        let b = doc.find(end).expect("end marker");
        let want = docs_table();
        if std::env::var("CLAYOUT_UPDATE_DOCS").as_deref() == Ok("1") {
            std::fs::write(path, format!("{}{}{}", &doc[..a], want, &doc[b..])).unwrap();
            return;
        }
        assert_eq!(&doc[a..b], want, "docs/configuration.md is out of date: rerun with CLAYOUT_UPDATE_DOCS=1");
    }
}
