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

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::process::Command;
use std::sync::Mutex;

/// Runs `cmd` under the shim with CLAYOUT_STATS=<json>, compares with `base`, checks the stats.
fn run_with_stats(tag: &str, cmd: &Cmd, base: &Output, exact: bool) -> (Output, Value) {
    let dir = scratch(tag);
    let json = dir.join("stats.json");
    let shim = run(&cmd.shimmed().env("CLAYOUT_STATS", json.as_os_str()), TIMEOUT);
    assert_same(base, &shim);
    let stats = read_stats(&json, &shim);
    check_calls(&shim, &stats, exact);
    // Kept when a check fails (for a look at the file), removed otherwise.
    let _ = fs::remove_dir_all(&dir);
    (shim, stats)
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
    assert_eq!(stats_calls(&stats).get("clSetKernelArg"), want.get("clSetKernelArg"));
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
    let shim = run(&p.cmd.shimmed().env("CLAYOUT_DISABLE", "1").env("CLAYOUT_STATS", json.as_os_str()), TIMEOUT);
    assert_same(&p.base, &shim);
    assert!(!json.exists(), "CLAYOUT_DISABLE=1 still wrote {}\n{}", json.display(), shim.show("with shim"));
    assert!(shim.shim_lines().is_empty(), "CLAYOUT_DISABLE=1 still logged\n{}", shim.show("with shim"));
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
    let shim = run(&p.cmd.shimmed().env("CLAYOUT_LOG", "loud").env("CLAYOUT_LOG_FILE", log.as_os_str()), TIMEOUT);
    assert_same(&p.base, &shim);
    assert!(
        shim.shim_lines().is_empty(),
        "with CLAYOUT_LOG_FILE the shim still wrote to stderr\n{}",
        shim.show("with shim")
    );
    let text = fs::read_to_string(&log)
        .unwrap_or_else(|e| panic!("{} not written ({e})\n{}", log.display(), shim.show("with shim")));
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
        skipped("launcher_runs_the_program", &format!("{} is missing or not executable", launcher.display()));
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
    let out = run(&Cmd::new(argv).env("CLAYOUT_LIB", paths().lib.as_os_str()), TIMEOUT);
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
        assert!(calls.get("clSetKernelArg").copied().unwrap_or(0) > 10_000, "run {i}: {calls:?}");
    }
}

// ---- Rust client --------------------------------------------------------------------------------

#[test]
fn rust_client_same_output_and_counts() {
    let bin = build_rust_client("rust-client", &[]);
    let cmd = Cmd::new([bin]);
    let base = run(&cmd, TIMEOUT);
    assert_ok(&base);
    let (_, stats) = run_with_stats("rust-client", &cmd, &base, false);
    assert_eq!(stats["real_library"].as_str(), Some("RTLD_NEXT"), "a linked client's loader is the next object");
}

// ---- pyopencl -----------------------------------------------------------------------------------

#[test]
fn pyopencl_same_output_and_counts() {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = Command::new(&python).args(["-c", "import pyopencl, numpy"]).output();
    let importable = matches!(&probe, Ok(o) if o.status.success());
    if !importable {
        let why = match &probe {
            Ok(o) => String::from_utf8_lossy(&o.stderr).trim().lines().last().unwrap_or("").to_string(),
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
/// exit() from a worker thread while the main thread blocks: the statistics are still written,
/// with every call the program made.
#[test]
fn stats_written_when_another_thread_exits() {
    let p = c_program("exit_thread");
    run_with_stats("exit-thread", &p.cmd, &p.base, true);
}

#[test]
fn shim_library_is_a_shared_object() {
    let p = paths();
    assert!(p.lib.starts_with(&p.profile_dir));
    let head = fs::read(&p.lib).unwrap();
    assert_eq!(&head[..4], b"\x7fELF", "{} is not an ELF file", p.lib.display());
}

/// A machine whose loader finds no platform (an empty vendor directory): the program gets the
/// loader's own answer, the same exit and output as without clayout.
#[test]
fn no_platform_same_answer() {
    let empty = scratch("no-platform").join("vendors");
    fs::create_dir_all(&empty).unwrap();
    let cmd = basic().cmd.clone().env("OCL_ICD_VENDORS", empty.as_os_str()).env("OCL_ICD_FILENAMES", "");
    let base = run(&cmd, TIMEOUT);
    assert!(base.code != Some(0) || base.stdout.contains("platforms>=1: no"), "{}", base.show("plain"));
    let out = run(&cmd.shimmed().env("CLAYOUT_STATS", "1"), TIMEOUT);
    assert_same(&base, &out);
}

/// Programs that never call OpenCL (a shell, coreutils) run under the shim exactly as without
/// it: nothing is resolved or opened until the first OpenCL call.
#[test]
fn programs_without_opencl_run_unchanged() {
    let cmd = Cmd::new(["/bin/sh", "-c", "echo one; ls / >/dev/null && echo two; exit 3"]);
    let base = run(&cmd, TIMEOUT);
    assert_eq!(base.code, Some(3));
    let out = run(&cmd.shimmed().env("CLAYOUT_STATS", "1").env("CLAYOUT_LOG", "debug"), TIMEOUT);
    assert_same(&base, &out);
}
