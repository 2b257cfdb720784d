//! Shared by the end-to-end tests: where the shim is (built fresh for the test's profile), how
//! to run a program with and without it (clean environment, timeout, captured output), and how
//! to read its statistics. No mock: real programs, the real ICD loader, PoCL.
#![allow(dead_code)]

use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const TIMEOUT: Duration = Duration::from_secs(120);

// ---- paths ------------------------------------------------------------------------------------

pub struct Paths {
    /// `<target>/<profile>`
    pub profile_dir: PathBuf,
    /// `<target>/clayout-shim-tests`
    pub work: PathBuf,
    pub lib: PathBuf,
    pub root: PathBuf,
}

pub fn paths() -> &'static Paths {
    static P: OnceLock<Paths> = OnceLock::new();
    P.get_or_init(|| {
        let exe = std::env::current_exe().expect("current_exe");
        // <target>/<profile>/deps/shim-<hash>
        let deps = exe.parent().expect("exe dir");
        let profile_dir = if deps.file_name().map(|n| n == "deps").unwrap_or(false) {
            deps.parent().expect("profile dir").to_path_buf()
        } else {
            deps.to_path_buf()
        };
        let target = profile_dir.parent().expect("target dir").to_path_buf();
        let work = target.join("clayout-shim-tests");
        fs::create_dir_all(&work).expect("create work dir");
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        build_shim(&root, &target, &profile_dir);
        let lib = profile_dir.join("libclayout.so");
        assert!(
            lib.is_file(),
            "{} not found: the test looks for the shim beside its own deps/ directory (exe: {})",
            lib.display(),
            exe.display()
        );
        Paths { profile_dir, work, lib, root }
    })
}

/// `cargo test` builds the library as an rlib only: (re)build the cdylib of the same profile
/// into the same target directory, so the test never runs a stale libclayout.so.
/// `CLAYOUT_TEST_NO_BUILD=1` skips this (the library must then be there already).
pub fn build_shim(root: &Path, target: &Path, profile_dir: &Path) {
    if std::env::var("CLAYOUT_TEST_NO_BUILD").as_deref() == Ok("1") {
        return;
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut c = Command::new(cargo);
    c.args(["build", "--lib", "--quiet", "--manifest-path"])
        .arg(root.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target);
    match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => {}
        Some("release") => {
            c.arg("--release");
        }
        Some(other) => {
            c.args(["--profile", other]);
        }
    }
    let out = c.output().expect("cannot run cargo to build the shim");
    assert!(
        out.status.success(),
        "building libclayout.so failed ({c:?}):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A fresh scratch directory for one test run.
pub fn scratch(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d =
        paths().work.join("run").join(format!("{tag}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

// ---- running programs ---------------------------------------------------------------------------

/// How clayout gets into a program: preloaded (LD_PRELOAD), loaded by the ICD loader as a
/// layer (OPENCL_LAYERS), or both at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    Preload,
    Layer,
    Both,
}

/// What to run: program and arguments, plus environment variables to set.
#[derive(Clone)]
pub struct Cmd {
    pub argv: Vec<OsString>,
    pub env: Vec<(String, OsString)>,
}

impl Cmd {
    pub fn new<S: Into<OsString>>(argv: impl IntoIterator<Item = S>) -> Cmd {
        Cmd { argv: argv.into_iter().map(Into::into).collect(), env: Vec::new() }
    }
    pub fn env(mut self, k: &str, v: impl Into<OsString>) -> Cmd {
        self.env.push((k.to_string(), v.into()));
        self
    }
    /// The same command with the shim preloaded.
    pub fn shimmed(&self) -> Cmd {
        self.under(Route::Preload)
    }
    /// The same command with the shim loaded by the ICD loader as a layer (OPENCL_LAYERS).
    pub fn layered(&self) -> Cmd {
        self.under(Route::Layer)
    }
    /// The same command under clayout, the way `route` says.
    pub fn under(&self, route: Route) -> Cmd {
        let lib = paths().lib.as_os_str();
        match route {
            Route::Preload => self.clone().env("LD_PRELOAD", lib),
            Route::Layer => self.clone().env("OPENCL_LAYERS", lib),
            Route::Both => self.clone().env("LD_PRELOAD", lib).env("OPENCL_LAYERS", lib),
        }
    }
    pub fn describe(&self) -> String {
        let mut s = String::new();
        for (k, v) in &self.env {
            let _ = write!(s, "{k}={} ", v.to_string_lossy());
        }
        let args: Vec<String> = self.argv.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        s + &args.join(" ")
    }
}

#[derive(Clone, Debug)]
pub struct Output {
    pub command: String,
    pub code: Option<i32>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn show(&self, label: &str) -> String {
        format!(
            "---- {label}: {}\n  exit: {}{}\n  stdout:\n{}\n  stderr:\n{}\n",
            self.command,
            self.code.map(|c| c.to_string()).unwrap_or_else(|| "killed by a signal".into()),
            if self.timed_out { " (TIMED OUT, killed)" } else { "" },
            indent(&self.stdout),
            indent(&self.stderr)
        )
    }
    /// `calls NAME N` lines of the program's own output.
    pub fn expected_calls(&self) -> BTreeMap<String, u64> {
        self.stdout
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                match (it.next(), it.next(), it.next(), it.next()) {
                    (Some("calls"), Some(name), Some(n), None) => Some((name.to_string(), n.parse().ok()?)),
                    _ => None,
                }
            })
            .collect()
    }
    /// stderr lines the shim wrote (`clayout: <level>: ...`).
    pub fn shim_lines(&self) -> Vec<&str> {
        self.stderr.lines().filter(|l| l.starts_with("clayout:")).collect()
    }
}

pub fn indent(s: &str) -> String {
    if s.is_empty() {
        return "    (empty)".into();
    }
    s.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}

/// Runs `cmd` with a clean clayout environment (no inherited CLAYOUT_*, LD_PRELOAD or loader
/// layers), stdout and stderr to files, killing it after `timeout`.
pub fn run(cmd: &Cmd, timeout: Duration) -> Output {
    let dir = scratch("out");
    let (out_path, err_path) = (dir.join("stdout"), dir.join("stderr"));
    let mut c = Command::new(&cmd.argv[0]);
    c.args(&cmd.argv[1..])
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out_path).unwrap())
        .stderr(fs::File::create(&err_path).unwrap());
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("CLAYOUT_") || k == "LD_PRELOAD" || k == "OPENCL_LAYERS" || k == "OPENCL_LAYER_PATH" {
            c.env_remove(&*k);
        }
    }
    // The mechanics tests want every convertible launch converted: a test of the cost model
    // sets CLAYOUT_POLICY itself, and finds the copies built without the wait that keeps a
    // short run from paying for them (CLAYOUT_BUILD_AFTER; a test of that wait sets it).
    // clayout's on-disk cache goes under the target directory, not the user's home; shared by
    // every test, so most runs load the conversion kernels as binaries. A test that sets its
    // own CLAYOUT_CACHE_DIR overrides this.
    c.env("CLAYOUT_POLICY", "always").env("CLAYOUT_CACHE_DIR", paths().work.join("cache"));
    c.env("CLAYOUT_BUILD_AFTER", "wait");
    // The test machine's device is a CPU, where the policies do not offer the staged copies by
    // default: the tests want them run (a test of that default sets CLAYOUT_STAGED itself).
    c.env("CLAYOUT_STAGED", "1");
    for (k, v) in &cmd.env {
        c.env(k, v);
    }
    let start = Instant::now();
    let mut child = c.spawn().unwrap_or_else(|e| panic!("cannot start {}: {e}", cmd.describe()));
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > timeout {
            timed_out = true;
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = Output {
        command: cmd.describe(),
        code: status.code(),
        timed_out,
        stdout: String::from_utf8_lossy(&fs::read(&out_path).unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&fs::read(&err_path).unwrap()).into_owned(),
    };
    let _ = fs::remove_dir_all(&dir);
    out
}

/// Asserts that `shim` printed and exited exactly like `base`.
pub fn assert_same(base: &Output, shim: &Output) {
    if base.stdout != shim.stdout || base.code != shim.code || shim.timed_out {
        let first_diff = base
            .stdout
            .lines()
            .zip(shim.stdout.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .map(|(i, (a, b))| format!("stdout line {} differs: without shim {a:?}, with shim {b:?}", i + 1))
            .unwrap_or_else(|| "stdout lengths differ".into());
        panic!(
            "the shim changed the program's behaviour ({first_diff}, exit {:?} vs {:?})\n{}{}",
            base.code,
            shim.code,
            base.show("without shim"),
            shim.show("with shim")
        );
    }
}

pub fn assert_ok(base: &Output) {
    assert!(
        base.code == Some(0) && !base.timed_out,
        "the program fails even without the shim, so the test cannot judge the shim\n{}",
        base.show("without shim")
    );
}

/// Says that a test was skipped, on the real stderr (libtest captures print! and eprint! of a
/// passing test, so the line would otherwise never be seen).
pub fn skipped(test: &str, why: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

// ---- statistics ---------------------------------------------------------------------------------

pub fn read_stats(path: &Path, shim: &Output) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| {
        panic!("CLAYOUT_STATS={} was not written ({e})\n{}", path.display(), shim.show("with shim"))
    });
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!("CLAYOUT_STATS={} is not JSON ({e}):\n{text}\n{}", path.display(), shim.show("with shim"))
    });
    for key in ["version", "real_library", "intercepted_calls", "calls", "marshal", "fallbacks", "rewritten_kernels"] {
        assert!(v.get(key).is_some(), "stats JSON lacks \"{key}\":\n{text}");
    }
    let calls = v["calls"].as_object().unwrap_or_else(|| panic!("\"calls\" is not an object:\n{text}"));
    let sum: u64 = calls.values().map(|c| c.as_u64().expect("call counts are integers")).sum();
    assert_eq!(v["intercepted_calls"].as_u64(), Some(sum), "intercepted_calls is not the sum of calls:\n{text}");
    let real = v["real_library"].as_str().unwrap_or("");
    assert!(
        !real.is_empty() && real != "none",
        "the shim found no real OpenCL library (real_library={real:?})\n{text}"
    );
    v
}

/// `read_stats`, and the statistics must say that clayout came in by `route`: a layer names
/// the loader that loaded it, the preloaded library the one it forwards to.
pub fn read_stats_under(route: Route, path: &Path, shim: &Output) -> Value {
    let v = read_stats(path, shim);
    let real = v["real_library"].as_str().unwrap_or("");
    assert_eq!(
        real.starts_with("loader layer"),
        route != Route::Preload,
        "clayout ran {route:?} but its statistics say real_library={real:?}\n{}",
        shim.show("with shim")
    );
    v
}

pub fn stats_calls(v: &Value) -> BTreeMap<String, u64> {
    v["calls"].as_object().unwrap().iter().map(|(k, c)| (k.clone(), c.as_u64().unwrap())).collect()
}

/// Every `calls NAME N` line of the program must match the stats; with `exact`, the stats must
/// also count no entry point the program did not list.
pub fn check_calls(program: &Output, stats: &Value, exact: bool) {
    let want = program.expected_calls();
    assert!(!want.is_empty(), "the program printed no `calls` lines\n{}", program.show("with shim"));
    let got = stats_calls(stats);
    let mut problems = String::new();
    for (name, n) in &want {
        let g = got.get(name).copied().unwrap_or(0);
        if g != *n {
            let _ = writeln!(problems, "  {name}: the program made {n} calls, the shim counted {g}");
        }
    }
    if exact {
        for (name, g) in &got {
            if !want.contains_key(name) {
                let _ = writeln!(problems, "  {name}: the program made no call, the shim counted {g}");
            }
        }
    }
    assert!(problems.is_empty(), "call counts differ:\n{problems}stats calls: {got:?}\n{}", program.show("with shim"));
}

// ---- building the programs ----------------------------------------------------------------------

pub fn build_c(name: &str) -> PathBuf {
    build_c_in("tests/c", name)
}

/// Builds `<dir>/<name>.c` (relative to the repository) with `-lOpenCL` under the work directory.
pub fn build_c_in(dir: &str, name: &str) -> PathBuf {
    build_c_linking(dir, name, &["-lOpenCL"])
}

/// Builds `<dir>/<name>.c` (relative to the repository) under the work directory, linked with
/// `libs` (none for a program that opens the loader itself).
pub fn build_c_linking(dir: &str, name: &str, libs: &[&str]) -> PathBuf {
    build_c_as(dir, name, name, libs)
}

/// Builds `<dir>/<name>.c` as the program `bin_name` under the work directory, with `args` (the
/// libraries to link, and any other compiler argument, such as a `-D`) after the source.
pub fn build_c_as(dir: &str, name: &str, bin_name: &str, args: &[&str]) -> PathBuf {
    let src = paths().root.join(dir).join(format!("{name}.c"));
    let bin_dir = paths().work.join(dir.replace('/', "-"));
    fs::create_dir_all(&bin_dir).unwrap();
    let bin = bin_dir.join(bin_name);
    // Built aside and renamed into place: tests running side by side build the same program,
    // and one may be starting it while another writes it (EACCES, ETXTBSY).
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let aside = bin_dir.join(format!(".{bin_name}.{}.{n}", std::process::id()));
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-O1", "-Wall", "-pthread", "-DCL_TARGET_OPENCL_VERSION=300", "-o"])
        .arg(&aside)
        .arg(&src)
        .args(args)
        .output()
        .expect("cannot run cc");
    assert!(
        out.status.success(),
        "cc failed for {}:\n{}{}",
        src.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    fs::rename(&aside, &bin).unwrap();
    bin
}

/// tests/rust-client built with the extra cargo arguments `args` into
/// `<work>/<target_name>` (one target directory per way of building it), and its path.
pub fn build_rust_client(target_name: &str, args: &[&str]) -> PathBuf {
    let manifest = paths().root.join("tests/rust-client/Cargo.toml");
    let target = paths().work.join(target_name);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(&cargo)
        .args(["build", "--quiet", "--manifest-path"])
        .arg(&manifest)
        .args(args)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("cannot run cargo");
    assert!(
        out.status.success(),
        "building {} {args:?} failed:\n{}{}",
        manifest.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    target.join("debug/clayout-rust-client")
}

/// libclayout.so built with the `fault-injection` feature, in its own target directory under
/// the test's (so the ordinary build stays as it is).
pub fn fault_lib() -> &'static PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let target = paths().profile_dir.parent().unwrap().join("fault-injection");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = Command::new(cargo)
            .args(["build", "--lib", "--quiet", "--features", "fault-injection", "--manifest-path"])
            .arg(paths().root.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .expect("cannot run cargo");
        assert!(
            out.status.success(),
            "building the fault-injection library failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        target.join("debug").join("libclayout.so")
    })
}

impl Cmd {
    /// The same command with a given build of the shim preloaded.
    pub fn shimmed_with(&self, lib: &Path) -> Cmd {
        self.clone().env("LD_PRELOAD", lib.as_os_str())
    }
}

/// tests/dl/dl_seq.c, built once per test binary: it runs the call sequences of the DL runtime's
/// tests with the kernels file it is given.
pub fn dl_seq() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| build_c_in("tests/dl", "dl_seq"))
}

/// `dl_threads` on the AoS kernels: `threads` threads of `rounds` rounds in `mode`.
pub fn dl_threads(threads: u64, rounds: u64, mode: &str) -> Cmd {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    let bin = BIN.get_or_init(|| build_c_in("tests/dl", "dl_threads"));
    Cmd::new([
        bin.as_os_str(),
        dl("particles_aos.cl").as_os_str(),
        threads.to_string().as_ref(),
        rounds.to_string().as_ref(),
        mode.as_ref(),
    ])
}

/// A file of tests/dl.
pub fn dl(name: &str) -> PathBuf {
    paths().root.join("tests/dl").join(name)
}

/// dl_seq running call sequence `mode` with the unmodified AoS kernels (particles_aos.cl).
pub fn seq(mode: &str) -> Cmd {
    Cmd::new([dl_seq().as_os_str(), dl("particles_aos.cl").as_os_str(), mode.as_ref()])
}

/// A clayout cache record file's header line (without its newline) and its payload.
pub fn read_record(f: &Path) -> (String, Vec<u8>) {
    let bytes = fs::read(f).unwrap();
    let end = bytes.iter().position(|&b| b == b'\n').unwrap_or_else(|| panic!("{}: no header line", f.display()));
    (String::from_utf8(bytes[..end].to_vec()).expect("a text header"), bytes[end + 1..].to_vec())
}

pub fn write_record(f: &Path, header: &str, payload: &[u8]) {
    fs::write(f, [header.as_bytes(), b"\n", payload].concat()).unwrap();
}

/// Rewrites record `f` with `payload`, under its own key and a header that checks out: a record
/// clayout reads back whole.
pub fn replace_payload(f: &Path, payload: &[u8]) {
    let (header, _) = read_record(f);
    let key = header.splitn(5, ' ').nth(4).unwrap().to_string();
    let header = format!("CLAYOUT-CACHE 1 {} {:016x} {key}", payload.len(), clayout::cache::disk::fnv1a(payload));
    write_record(f, &header, payload);
}
