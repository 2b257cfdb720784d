//! End-to-end tests of the LD_PRELOAD shim against the real OpenCL stack of this machine (the
//! ICD loader and whatever platform it finds, PoCL here): no mock.
//!
//! Each program runs without the shim (the baseline) and with `LD_PRELOAD=libclayout.so`, and
//! the two must print the same stdout and exit with the same code. The programs print
//! `calls NAME N` lines for the entry points whose number of calls they know; the shim's
//! `CLAYOUT_STATS` JSON must count exactly that many.
//!
//! Programs: tests/c/basic.c, tests/c/threads.c (built with `cc ... -lOpenCL`),
//! tests/rust-client (opencl3, statically linked symbols) and tests/python/pyopencl_smoke.py
//! (pyopencl's bundled loader). `CLAYOUT_REQUIRE_PYOPENCL=1` turns a missing pyopencl from a
//! skip into a failure.
//!
//! Paths come from the test executable: it lives in `<target>/<profile>/deps/`, the shim in
//! `<target>/<profile>/libclayout.so`; the C programs and the Rust client are built under
//! `<target>/clayout-shim-tests/`.

use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(120);

// ---- paths ------------------------------------------------------------------------------------

struct Paths {
    /// `<target>/<profile>`
    profile_dir: PathBuf,
    /// `<target>/clayout-shim-tests`
    work: PathBuf,
    lib: PathBuf,
    root: PathBuf,
}

fn paths() -> &'static Paths {
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
        Paths {
            profile_dir,
            work,
            lib,
            root,
        }
    })
}

/// `cargo test` builds the library as an rlib only: (re)build the cdylib of the same profile
/// into the same target directory, so the test never runs a stale libclayout.so.
/// `CLAYOUT_TEST_NO_BUILD=1` skips this (the library must then be there already).
fn build_shim(root: &Path, target: &Path, profile_dir: &Path) {
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
fn scratch(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = paths().work.join("run").join(format!(
        "{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

// ---- running programs ---------------------------------------------------------------------------

/// What to run: program and arguments, plus environment variables to set.
#[derive(Clone)]
struct Cmd {
    argv: Vec<OsString>,
    env: Vec<(String, OsString)>,
}

impl Cmd {
    fn new<S: Into<OsString>>(argv: impl IntoIterator<Item = S>) -> Cmd {
        Cmd {
            argv: argv.into_iter().map(Into::into).collect(),
            env: Vec::new(),
        }
    }
    fn env(mut self, k: &str, v: impl Into<OsString>) -> Cmd {
        self.env.push((k.to_string(), v.into()));
        self
    }
    /// The same command with the shim preloaded.
    fn shimmed(&self) -> Cmd {
        self.clone().env("LD_PRELOAD", paths().lib.as_os_str())
    }
    fn describe(&self) -> String {
        let mut s = String::new();
        for (k, v) in &self.env {
            let _ = write!(s, "{k}={} ", v.to_string_lossy());
        }
        let args: Vec<String> = self
            .argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        s + &args.join(" ")
    }
}

#[derive(Clone, Debug)]
struct Output {
    command: String,
    code: Option<i32>,
    timed_out: bool,
    stdout: String,
    stderr: String,
}

impl Output {
    fn show(&self, label: &str) -> String {
        format!(
            "---- {label}: {}\n  exit: {}{}\n  stdout:\n{}\n  stderr:\n{}\n",
            self.command,
            self.code
                .map(|c| c.to_string())
                .unwrap_or_else(|| "killed by a signal".into()),
            if self.timed_out {
                " (TIMED OUT, killed)"
            } else {
                ""
            },
            indent(&self.stdout),
            indent(&self.stderr)
        )
    }
    /// `calls NAME N` lines of the program's own output.
    fn expected_calls(&self) -> BTreeMap<String, u64> {
        self.stdout
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                match (it.next(), it.next(), it.next(), it.next()) {
                    (Some("calls"), Some(name), Some(n), None) => {
                        Some((name.to_string(), n.parse().ok()?))
                    }
                    _ => None,
                }
            })
            .collect()
    }
    /// stderr lines the shim wrote (`clayout: <level>: ...`).
    fn shim_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with("clayout:"))
            .collect()
    }
}

fn indent(s: &str) -> String {
    if s.is_empty() {
        return "    (empty)".into();
    }
    s.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `cmd` with a clean clayout environment (no inherited CLAYOUT_* or LD_PRELOAD), stdout
/// and stderr to files, killing it after `timeout`.
fn run(cmd: &Cmd, timeout: Duration) -> Output {
    let dir = scratch("out");
    let (out_path, err_path) = (dir.join("stdout"), dir.join("stderr"));
    let mut c = Command::new(&cmd.argv[0]);
    c.args(&cmd.argv[1..])
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out_path).unwrap())
        .stderr(fs::File::create(&err_path).unwrap());
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("CLAYOUT_") || k == "LD_PRELOAD" {
            c.env_remove(&*k);
        }
    }
    for (k, v) in &cmd.env {
        c.env(k, v);
    }
    let start = Instant::now();
    let mut child = c
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", cmd.describe()));
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
fn assert_same(base: &Output, shim: &Output) {
    if base.stdout != shim.stdout || base.code != shim.code || shim.timed_out {
        let first_diff = base
            .stdout
            .lines()
            .zip(shim.stdout.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .map(|(i, (a, b))| {
                format!(
                    "stdout line {} differs: without shim {a:?}, with shim {b:?}",
                    i + 1
                )
            })
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

fn assert_ok(base: &Output) {
    assert!(
        base.code == Some(0) && !base.timed_out,
        "the program fails even without the shim, so the test cannot judge the shim\n{}",
        base.show("without shim")
    );
}

/// Says that a test was skipped, on the real stderr (libtest captures print! and eprint! of a
/// passing test, so the line would otherwise never be seen).
fn skipped(test: &str, why: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

// ---- statistics ---------------------------------------------------------------------------------

fn read_stats(path: &Path, shim: &Output) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "CLAYOUT_STATS={} was not written ({e})\n{}",
            path.display(),
            shim.show("with shim")
        )
    });
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "CLAYOUT_STATS={} is not JSON ({e}):\n{text}\n{}",
            path.display(),
            shim.show("with shim")
        )
    });
    for key in [
        "version",
        "real_library",
        "intercepted_calls",
        "calls",
        "marshal",
        "fallbacks",
        "rewritten_kernels",
    ] {
        assert!(v.get(key).is_some(), "stats JSON lacks \"{key}\":\n{text}");
    }
    let calls = v["calls"]
        .as_object()
        .unwrap_or_else(|| panic!("\"calls\" is not an object:\n{text}"));
    let sum: u64 = calls
        .values()
        .map(|c| c.as_u64().expect("call counts are integers"))
        .sum();
    assert_eq!(
        v["intercepted_calls"].as_u64(),
        Some(sum),
        "intercepted_calls is not the sum of calls:\n{text}"
    );
    let real = v["real_library"].as_str().unwrap_or("");
    assert!(
        !real.is_empty() && real != "none",
        "the shim found no real OpenCL library (real_library={real:?})\n{text}"
    );
    v
}

fn stats_calls(v: &Value) -> BTreeMap<String, u64> {
    v["calls"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, c)| (k.clone(), c.as_u64().unwrap()))
        .collect()
}

/// Every `calls NAME N` line of the program must match the stats; with `exact`, the stats must
/// also count no entry point the program did not list.
fn check_calls(program: &Output, stats: &Value, exact: bool) {
    let want = program.expected_calls();
    assert!(
        !want.is_empty(),
        "the program printed no `calls` lines\n{}",
        program.show("with shim")
    );
    let got = stats_calls(stats);
    let mut problems = String::new();
    for (name, n) in &want {
        let g = got.get(name).copied().unwrap_or(0);
        if g != *n {
            let _ = writeln!(
                problems,
                "  {name}: the program made {n} calls, the shim counted {g}"
            );
        }
    }
    if exact {
        for (name, g) in &got {
            if !want.contains_key(name) {
                let _ = writeln!(
                    problems,
                    "  {name}: the program made no call, the shim counted {g}"
                );
            }
        }
    }
    assert!(
        problems.is_empty(),
        "call counts differ:\n{problems}stats calls: {got:?}\n{}",
        program.show("with shim")
    );
}

/// Runs `cmd` under the shim with CLAYOUT_STATS=<json>, compares with `base`, checks the stats.
fn run_with_stats(tag: &str, cmd: &Cmd, base: &Output, exact: bool) -> (Output, Value) {
    let dir = scratch(tag);
    let json = dir.join("stats.json");
    let shim = run(
        &cmd.shimmed().env("CLAYOUT_STATS", json.as_os_str()),
        TIMEOUT,
    );
    assert_same(base, &shim);
    let stats = read_stats(&json, &shim);
    check_calls(&shim, &stats, exact);
    // Kept when a check fails (for a look at the file), removed otherwise.
    let _ = fs::remove_dir_all(&dir);
    (shim, stats)
}

// ---- building the programs ----------------------------------------------------------------------

fn build_c(name: &str) -> PathBuf {
    let src = paths().root.join("tests/c").join(format!("{name}.c"));
    let bin_dir = paths().work.join("c");
    fs::create_dir_all(&bin_dir).unwrap();
    let bin = bin_dir.join(name);
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args([
            "-O1",
            "-Wall",
            "-pthread",
            "-DCL_TARGET_OPENCL_VERSION=300",
            "-o",
        ])
        .arg(&bin)
        .arg(&src)
        .arg("-lOpenCL")
        .output()
        .expect("cannot run cc");
    assert!(
        out.status.success(),
        "cc failed for {}:\n{}{}",
        src.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    bin
}

/// A program built once, with its baseline output (run once without the shim).
struct Program {
    cmd: Cmd,
    base: Output,
}

fn c_program(name: &'static str) -> &'static Program {
    static PROGRAMS: Mutex<BTreeMap<&'static str, &'static Program>> = Mutex::new(BTreeMap::new());
    let mut map = PROGRAMS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = map.get(name) {
        return p;
    }
    let cmd = Cmd::new([build_c(name)]);
    let base = run(&cmd, TIMEOUT);
    assert_ok(&base);
    let p: &'static Program = Box::leak(Box::new(Program { cmd, base }));
    map.insert(name, p);
    p
}

fn basic() -> &'static Program {
    c_program("basic")
}

// ---- the C programs -----------------------------------------------------------------------------

#[test]
fn basic_same_output_and_exact_counts() {
    let p = basic();
    let (_, stats) = run_with_stats("basic", &p.cmd, &p.base, true);
    // The program's own count of clSetKernelArg, checked by name for the report.
    let want = p.base.expected_calls();
    assert_eq!(
        stats_calls(&stats).get("clSetKernelArg"),
        want.get("clSetKernelArg")
    );
    assert!(want.get("clSetKernelArg").copied().unwrap_or(0) >= 10);
}

#[test]
fn basic_stats_summary_on_stderr() {
    let p = basic();
    let shim = run(&p.cmd.shimmed().env("CLAYOUT_STATS", "1"), TIMEOUT);
    assert_same(&p.base, &shim);
    let total: u64 = p.base.expected_calls().values().sum();
    assert!(
        shim.stderr.contains("statistics") && shim.stderr.contains(&total.to_string()),
        "CLAYOUT_STATS=1 printed no summary with the {total} calls the program made\n{}",
        shim.show("with shim")
    );
}

#[test]
fn disable_is_pure_forwarding() {
    let p = basic();
    let dir = scratch("disable");
    let json = dir.join("stats.json");
    let shim = run(
        &p.cmd
            .shimmed()
            .env("CLAYOUT_DISABLE", "1")
            .env("CLAYOUT_STATS", json.as_os_str()),
        TIMEOUT,
    );
    assert_same(&p.base, &shim);
    assert!(
        !json.exists(),
        "CLAYOUT_DISABLE=1 still wrote {}\n{}",
        json.display(),
        shim.show("with shim")
    );
    assert!(
        shim.shim_lines().is_empty(),
        "CLAYOUT_DISABLE=1 still logged\n{}",
        shim.show("with shim")
    );
}

#[test]
fn bad_log_level_warns_once() {
    let p = basic();
    let shim = run(&p.cmd.shimmed().env("CLAYOUT_LOG", "loud"), TIMEOUT);
    assert_same(&p.base, &shim);
    let lines = shim.shim_lines();
    assert!(
        lines.len() == 1 && lines[0].contains("CLAYOUT_LOG") && lines[0].contains("loud"),
        "CLAYOUT_LOG=loud must give exactly one warning line naming the variable, got {lines:?}\n{}",
        shim.show("with shim")
    );
}

#[test]
fn log_file_receives_the_warning() {
    let p = basic();
    let dir = scratch("logfile");
    let log = dir.join("clayout.log");
    let shim = run(
        &p.cmd
            .shimmed()
            .env("CLAYOUT_LOG", "loud")
            .env("CLAYOUT_LOG_FILE", log.as_os_str()),
        TIMEOUT,
    );
    assert_same(&p.base, &shim);
    assert!(
        shim.shim_lines().is_empty(),
        "with CLAYOUT_LOG_FILE the shim still wrote to stderr\n{}",
        shim.show("with shim")
    );
    let text = fs::read_to_string(&log).unwrap_or_else(|e| {
        panic!(
            "{} not written ({e})\n{}",
            log.display(),
            shim.show("with shim")
        )
    });
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("CLAYOUT_LOG")).collect();
    assert!(
        lines.len() == 1 && lines[0].contains("loud"),
        "log file should hold one warning about CLAYOUT_LOG:\n{text}"
    );
}

#[test]
fn launcher_runs_the_program() {
    let launcher = paths().root.join("ld_preload/clayout-run");
    let executable = fs::metadata(&launcher).map(|m| {
        use std::os::unix::fs::PermissionsExt;
        m.is_file() && m.permissions().mode() & 0o111 != 0
    });
    if executable.ok() != Some(true) {
        skipped(
            "launcher_runs_the_program",
            &format!("{} is missing or not executable", launcher.display()),
        );
        return;
    }
    let p = basic();
    let dir = scratch("launcher");
    let json = dir.join("stats.json");
    let mut argv: Vec<OsString> = vec![
        launcher.clone().into(),
        format!("--stats={}", json.display()).into(),
        "--log".into(),
        "warn".into(),
        "--".into(),
    ];
    argv.extend(p.cmd.argv.iter().cloned());
    // CLAYOUT_LIB points the launcher at the library under test, not at the checkout's build.
    let cmd = Cmd::new(argv).env("CLAYOUT_LIB", paths().lib.as_os_str());
    let out = run(&cmd, TIMEOUT);
    assert_same(&p.base, &out);
    let stats = read_stats(&json, &out);
    check_calls(&out, &stats, true);

    let mut argv: Vec<OsString> = vec![launcher.into(), "--disable".into(), "--".into()];
    argv.extend(p.cmd.argv.iter().cloned());
    let out = run(
        &Cmd::new(argv).env("CLAYOUT_LIB", paths().lib.as_os_str()),
        TIMEOUT,
    );
    assert_same(&p.base, &out);
}

#[test]
fn threads_same_output_three_times() {
    let p = c_program("threads");
    // The program's own watchdog (argument, seconds) fires before the harness's timeout.
    let cmd = Cmd::new([p.cmd.argv[0].clone(), "100".into()]);
    for i in 0..3 {
        let (_, stats) = run_with_stats(&format!("threads{i}"), &cmd, &p.base, true);
        let calls = stats_calls(&stats);
        assert!(
            calls.get("clSetKernelArg").copied().unwrap_or(0) > 10_000,
            "run {i}: {calls:?}"
        );
    }
}

// ---- Rust client --------------------------------------------------------------------------------

#[test]
fn rust_client_same_output_and_counts() {
    let manifest = paths().root.join("tests/rust-client/Cargo.toml");
    let target = paths().work.join("rust-client");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(&cargo)
        .args(["build", "--quiet", "--manifest-path"])
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("cannot run cargo");
    assert!(
        out.status.success(),
        "building {} failed:\n{}{}",
        manifest.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = target.join("debug/clayout-rust-client");
    let cmd = Cmd::new([bin]);
    let base = run(&cmd, TIMEOUT);
    assert_ok(&base);
    let (_, stats) = run_with_stats("rust-client", &cmd, &base, false);
    assert_eq!(
        stats["real_library"].as_str(),
        Some("RTLD_NEXT"),
        "a linked client's loader is the next object"
    );
}

// ---- pyopencl -----------------------------------------------------------------------------------

#[test]
fn pyopencl_same_output_and_counts() {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = Command::new(&python)
        .args(["-c", "import pyopencl, numpy"])
        .output();
    let importable = matches!(&probe, Ok(o) if o.status.success());
    if !importable {
        let why = match &probe {
            Ok(o) => String::from_utf8_lossy(&o.stderr)
                .trim()
                .lines()
                .last()
                .unwrap_or("")
                .to_string(),
            Err(e) => e.to_string(),
        };
        if std::env::var("CLAYOUT_REQUIRE_PYOPENCL").as_deref() == Ok("1") {
            panic!("CLAYOUT_REQUIRE_PYOPENCL=1 but `{python} -c 'import pyopencl, numpy'` fails: {why}");
        }
        skipped(
            "pyopencl_same_output_and_counts",
            &format!("pyopencl is not importable ({why}); `pip install pyopencl numpy` to run it"),
        );
        return;
    }
    let script = paths().root.join("tests/python/pyopencl_smoke.py");
    let cmd = Cmd::new([OsString::from(&python), script.into()]);
    let base = run(&cmd, TIMEOUT);
    assert_ok(&base);
    let (shim, stats) = run_with_stats("pyopencl", &cmd, &base, false);
    // pyopencl from PyPI carries its own loader (pyopencl/.libs/libOpenCL-*.so), loaded
    // RTLD_LOCAL; the shim must have forwarded to a loader that is really mapped.
    let real = stats["real_library"].as_str().unwrap_or("");
    println!("pyopencl: the shim forwarded to {real}");
    assert!(
        real.contains("libOpenCL") || real == "RTLD_NEXT",
        "unexpected real_library {real:?}\n{}",
        shim.show("with shim")
    );
}

/// Keeps `paths().profile_dir` used (the shim's own directory is where the library is).
#[test]
fn shim_library_is_a_shared_object() {
    let p = paths();
    assert!(p.lib.starts_with(&p.profile_dir));
    let head = fs::read(&p.lib).unwrap();
    assert_eq!(
        &head[..4],
        b"\x7fELF",
        "{} is not an ELF file",
        p.lib.display()
    );
}
