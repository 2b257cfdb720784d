//! The hostile suite (issue 21): small C programs in tests/hostile/, written the way other
//! people's host code is, each with several cases. Every case runs without clayout and under
//! it (with the program's side file of annotations, under `CLAYOUT_POLICY=always` so that the
//! buffers really sit in ASTA, and also under `auto` where its flags ask), and must print the
//! same standard output (every OpenCL return code, a checksum of every byte read back) and exit
//! with the same status, within its time limit.
//!
//! tests/hostile/KNOWN_BROKEN lists the cases that still differ, one per line:
//! `case  item  reason`. A listed case that differs passes; one that no longer differs fails
//! the test ("fixed: remove it from KNOWN_BROKEN"), so the list always tells the truth. The
//! `@auto` variant of a case shares its entry (whether the cost model converts depends on what
//! it has measured, so such a variant may differ or not).
//! The flags a case may carry are described at the top of tests/hostile/hostile.h.

mod common;

use common::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The programs of tests/hostile, one per class of case, and the side file of annotations each
/// runs with under clayout (kernels.c annotates its kernels in their source).
const PROGRAMS: [(&str, Option<&str>); 5] = [
    ("bytes", Some("particles.dl")),
    ("objects", Some("particles.dl")),
    ("events", Some("particles.dl")),
    ("loops", Some("particles.dl")),
    ("kernels", None),
];

/// A case's time limit when its flags give none: far above what any case takes without
/// clayout (well under a second each), so only a hang reaches it.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Cases run at once: the machine the suite is sized for has two cores; a third worker keeps
/// them busy while another waits out a hanging case's time limit.
const WORKERS: usize = 3;

#[derive(Clone, Debug, Default)]
struct Flags {
    auto: bool,
    policy: Option<String>,
    timeout: Option<Duration>,
    side: Option<String>,
    env: Vec<(String, String)>,
    stats: Option<String>,
    ulimit_as_mib: Option<u64>,
    rss_mib: Option<u64>,
    cache_off: bool,
}

fn parse_flags(text: &str) -> Flags {
    let mut f = Flags::default();
    for word in text.split_whitespace() {
        let (k, v) = word.split_once('=').unwrap_or((word, ""));
        match k {
            "auto" => f.auto = true,
            "policy" => f.policy = Some(v.to_string()),
            "timeout" => f.timeout = Some(Duration::from_secs(v.parse().expect("timeout=SECONDS"))),
            "side" => f.side = Some(v.to_string()),
            "env" => {
                let (ek, ev) = v.split_once('=').expect("env=K=V");
                f.env.push((ek.to_string(), ev.to_string()));
            }
            "stats" => f.stats = Some(v.to_string()),
            "ulimit_as" => f.ulimit_as_mib = Some(v.parse().expect("ulimit_as=MIB")),
            "rss" => f.rss_mib = Some(v.parse().expect("rss=MIB")),
            "cachedir" if v == "off" => f.cache_off = true,
            _ => panic!("unknown case flag {word:?}"),
        }
    }
    f
}

/// One run of one case: which program, which case, under which policy.
#[derive(Clone, Debug)]
struct Run {
    id: String,
    program: &'static str,
    side: Option<&'static str>,
    bin: PathBuf,
    case: String,
    policy: String,
    flags: Flags,
    /// `CLAYOUT_FAULT` for the shimmed run, through the fault-injection build: clayout's own
    /// calls at that site fail, and the case must still print what it prints without clayout.
    fault: Option<&'static str>,
}

#[derive(Debug)]
struct Verdict {
    id: String,
    plain: String,
    shim: String,
    /// None: identical. Some: what differs.
    diff: Option<String>,
    /// The case itself is unusable (its plain run failed or hung).
    bad_case: Option<String>,
    secs: f64,
}

fn known_broken() -> BTreeMap<String, (String, String)> {
    let path = paths().root.join("tests/hostile/KNOWN_BROKEN");
    let text = fs::read_to_string(&path).unwrap_or_default();
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut it = line.split_whitespace();
        let (case, item) = (it.next(), it.next());
        let reason = it.collect::<Vec<_>>().join(" ");
        match (case, item) {
            (Some(c), Some(i)) if !reason.is_empty() => {
                let r = reason.as_str();
                assert!(
                    out.insert(c.to_string(), (i.to_string(), r.to_string())).is_none(),
                    "KNOWN_BROKEN line {}: {c} listed twice",
                    n + 1
                );
            }
            _ => panic!("KNOWN_BROKEN line {}: want `case item reason`, got {line:?}", n + 1),
        }
    }
    out
}

fn list_cases(program: &'static str, side: Option<&'static str>, bin: &Path, fault: Option<&'static str>) -> Vec<Run> {
    let out = run(&Cmd::new([bin.as_os_str(), "--list".as_ref()]), TIMEOUT);
    assert!(out.code == Some(0), "{program} --list failed\n{}", out.show("list"));
    let mut runs = Vec::new();
    for line in out.stdout.lines() {
        let (case, flags) = line.split_once('\t').unwrap_or((line, ""));
        let flags = parse_flags(flags);
        let policy = flags.policy.clone().unwrap_or_else(|| "always".into());
        let base = Run {
            id: case.to_string(),
            program,
            side,
            bin: bin.to_path_buf(),
            case: case.to_string(),
            policy,
            flags,
            fault,
        };
        if base.flags.auto {
            let mut auto = base.clone();
            auto.id = format!("{case}@auto");
            auto.policy = "auto".into();
            runs.push(base);
            runs.push(auto);
        } else {
            runs.push(base);
        }
    }
    runs
}

/// The command line of a case, with the address-space limit its flags ask for.
fn command(r: &Run, extra_env: &[(&str, OsString)]) -> Cmd {
    let mut cmd = match r.flags.ulimit_as_mib {
        Some(mib) => Cmd::new([
            OsString::from("sh"),
            "-c".into(),
            format!("ulimit -v {}; exec \"$0\" \"$@\"", mib * 1024).into(),
            r.bin.clone().into_os_string(),
            r.case.clone().into(),
        ]),
        None => Cmd::new([r.bin.as_os_str(), r.case.as_ref()]),
    };
    for (k, v) in &r.flags.env {
        cmd = cmd.env(k, v);
    }
    for (k, v) in extra_env {
        cmd = cmd.env(k, v.clone());
    }
    cmd
}

/// The side file of annotations the shimmed run gets.
fn side_file(r: &Run, dir: &Path) -> Option<PathBuf> {
    match r.flags.side.as_deref() {
        Some("none") => None,
        Some("zero") => Some(PathBuf::from("/dev/zero")),
        Some("dir") => Some(dir.to_path_buf()),
        Some("fifo") => {
            let fifo = dir.join("annotations.fifo");
            let ok = std::process::Command::new("mkfifo").arg(&fifo).status().map(|s| s.success()).unwrap_or(false);
            assert!(ok, "mkfifo {} failed", fifo.display());
            Some(fifo)
        }
        Some(other) => panic!("unknown side={other}"),
        None => r.side.map(|f| paths().root.join("tests/hostile").join(f)),
    }
}

fn shimmed(r: &Run, extra_env: &[(&str, OsString)]) -> (Output, Option<Value>) {
    let dir = scratch("hostile");
    let json = dir.join("stats.json");
    let mut env: Vec<(&str, OsString)> = extra_env.to_vec();
    env.push(("CLAYOUT_POLICY", r.policy.clone().into()));
    env.push(("CLAYOUT_STATS", json.clone().into_os_string()));
    if let Some(side) = side_file(r, &dir) {
        env.push(("CLAYOUT_ANNOTATIONS", side.into_os_string()));
    }
    if r.flags.cache_off {
        env.push(("CLAYOUT_CACHE_DIR", "off".into()));
    }
    let cmd = match r.fault {
        Some(site) => {
            env.push(("CLAYOUT_FAULT", site.into()));
            command(r, &env).shimmed_with(fault_lib())
        }
        None => command(r, &env).shimmed(),
    };
    let timeout = r.flags.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let (out, rss_kib) = match r.flags.rss_mib {
        Some(_) => run_measured(&cmd, timeout),
        None => (common::run(&cmd, timeout), None),
    };
    let mut stats: Option<Value> = fs::read_to_string(&json).ok().and_then(|t| serde_json::from_str(&t).ok());
    if let (Some(kib), Some(s)) = (rss_kib, stats.as_mut()) {
        s["hostile_max_rss_kib"] = kib.into();
    }
    let _ = fs::remove_dir_all(&dir);
    (out, stats)
}

/// `common::run`, also measuring the peak resident memory of the process (wait4's rusage).
fn run_measured(cmd: &Cmd, timeout: Duration) -> (Output, Option<u64>) {
    let dir = scratch("measured");
    let (out_path, err_path) = (dir.join("stdout"), dir.join("stderr"));
    let mut c = std::process::Command::new(&cmd.argv[0]);
    c.args(&cmd.argv[1..])
        .stdin(std::process::Stdio::null())
        .stdout(fs::File::create(&out_path).unwrap())
        .stderr(fs::File::create(&err_path).unwrap());
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("CLAYOUT_") || k == "LD_PRELOAD" {
            c.env_remove(&*k);
        }
    }
    c.env("CLAYOUT_POLICY", "always").env("CLAYOUT_CACHE_DIR", paths().work.join("cache"));
    // As tests/common's `run`: the staged copies run on the test machine's CPU device too.
    c.env("CLAYOUT_STAGED", "1");
    for (k, v) in &cmd.env {
        c.env(k, v);
    }
    let child = c.spawn().unwrap_or_else(|e| panic!("cannot start {}: {e}", cmd.describe()));
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    let mut timed_out = false;
    let (status, rss) = loop {
        let mut status: libc::c_int = 0;
        // SAFETY: a zeroed rusage is a valid out-parameter; the pid is our own child, reaped
        // here and never by `child` (which is dropped without waiting).
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break (status, Some(usage.ru_maxrss as u64));
        }
        if r < 0 {
            break (-1, None);
        }
        if start.elapsed() > timeout && !timed_out {
            timed_out = true;
            // SAFETY: signalling our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    drop(child);
    let code = (libc::WIFEXITED(status)).then(|| libc::WEXITSTATUS(status));
    let out = Output {
        command: cmd.describe(),
        code,
        timed_out,
        stdout: String::from_utf8_lossy(&fs::read(&out_path).unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&fs::read(&err_path).unwrap()).into_owned(),
    };
    let _ = fs::remove_dir_all(&dir);
    (out, rss)
}

fn summary(o: &Output) -> String {
    if o.timed_out {
        return "TIMED OUT".into();
    }
    match o.code {
        Some(c) => format!("exit {c}, {} lines", o.stdout.lines().count()),
        None => "killed by a signal".into(),
    }
}

fn first_difference(base: &Output, shim: &Output) -> Option<String> {
    if shim.timed_out {
        return Some(format!(
            "hangs under clayout (killed after its time limit); last line {:?}",
            shim.stdout.lines().last().unwrap_or("")
        ));
    }
    if base.stdout != shim.stdout {
        let line = base
            .stdout
            .lines()
            .zip(shim.stdout.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .map(|(i, (a, b))| format!("line {}: {a:?} without clayout, {b:?} with", i + 1))
            .unwrap_or_else(|| {
                format!(
                    "{} lines without clayout, {} with (exit {:?} vs {:?})",
                    base.stdout.lines().count(),
                    shim.stdout.lines().count(),
                    base.code,
                    shim.code
                )
            });
        return Some(line);
    }
    if base.code != shim.code {
        return Some(format!("exit {:?} without clayout, {:?} with", base.code, shim.code));
    }
    None
}

/// The statistics checks a case's flags ask for; Some says what is wrong.
fn stats_check(r: &Run, shim: &Output, stats: Option<&Value>) -> Option<String> {
    if let Some(limit) = r.flags.rss_mib {
        let kib = stats.and_then(|s| s["hostile_max_rss_kib"].as_u64());
        match kib {
            Some(k) if k / 1024 > limit => {
                return Some(format!("peaks at {} MiB of resident memory under clayout (limit {limit} MiB)", k / 1024))
            }
            None => return Some("no statistics or no memory measure".into()),
            _ => {}
        }
    }
    match r.flags.stats.as_deref() {
        None => None,
        Some("no_leak") => {
            let Some(s) = stats else { return Some("no statistics written".into()) };
            let left = s["contexts_left_referenced"].as_u64();
            if left != Some(0) || shim.stderr.contains("reference(s) left") {
                Some(format!(
                    "an object the application leaked is blamed on clayout (contexts_left_referenced {left:?}): {}",
                    shim.stderr.lines().find(|l| l.contains("reference(s) left")).unwrap_or("")
                ))
            } else {
                None
            }
        }
        Some("device_ns") => {
            // The same program converting a buffer one structure larger must not report a
            // conversion time orders of magnitude smaller.
            let mut ns = Vec::new();
            for n in ["1048576", "1048577"] {
                let (out, stats) = shimmed(r, &[("HOSTILE_N", n.into()), ("CLAYOUT_PROFILE", "1".into())]);
                if out.code != Some(0) || out.timed_out {
                    return Some(format!("HOSTILE_N={n} failed: {}", summary(&out)));
                }
                ns.push(stats.and_then(|s| s["marshal"]["device_ns"].as_u64()).unwrap_or(0));
            }
            if ns[0] == 0 || ns[1] * 4 < ns[0] {
                Some(format!("marshal.device_ns is {} ns for 1048576 structures but {} ns for 1048577", ns[0], ns[1]))
            } else {
                None
            }
        }
        Some(other) => Some(format!("unknown stats check {other}")),
    }
}

fn judge(r: &Run, plain: &Output) -> Verdict {
    let start = Instant::now();
    let (shim, stats) = shimmed(r, &[]);
    // Under a fault the statistics tell a fallback, not what the case checks them for.
    let diff = first_difference(plain, &shim)
        .or_else(|| r.fault.map_or_else(|| stats_check(r, &shim, stats.as_ref()), |_| None));
    Verdict {
        id: r.id.clone(),
        plain: summary(plain),
        shim: summary(&shim),
        diff,
        bad_case: None,
        secs: start.elapsed().as_secs_f64(),
    }
}

fn plain_run(r: &Run) -> Result<Output, String> {
    let out = common::run(&command(r, &[]), r.flags.timeout.unwrap_or(DEFAULT_TIMEOUT));
    if out.timed_out || out.code != Some(0) {
        return Err(format!("without clayout: {}\n{}", summary(&out), out.show("plain")));
    }
    Ok(out)
}

/// Every case, twice: with the cases' 1000 particles, and with 1024 (`-DN=1024`), which fill
/// whole work-groups of whole tiles, so that the launches under `always` fuse their conversions
/// into the staged copy (transparent::fused) instead of converting first. The two passes run one
/// after the other: at once, the cases' time limits would measure the machine's load.
#[test]
fn hostile_programs_behave_the_same_under_clayout() {
    let mut failures = Vec::new();
    for (suffix, defines) in [("", &[][..]), ("-n1024", &["-DN=1024"][..])] {
        let (table, failed) = suite(suffix, defines, None);
        let _ = std::io::stderr().write_all(table.as_bytes());
        failures.extend(failed.into_iter().map(|f| format!("{f}{}", if suffix.is_empty() { "" } else { " (N=1024)" })));
    }
    assert!(failures.is_empty(), "hostile suite:\n{}", failures.join("\n"));
}

/// Every case again where every conversion back to the host's layout fails (the fault-injection
/// build, `CLAYOUT_FAULT=conversion-back`): the buffers reach ASTA as before, and each one that
/// goes back (before a read, a map, a copy, a fill, a launch of a kernel as written, a release)
/// goes back through the host fallback, or the application gets an OpenCL error where no
/// correct path is left. Every case must still print what it prints without clayout. Every other
/// site of `CLAYOUT_FAULT` was run over the suite by hand (`scripts/hostile-faults.sh`,
/// docs/reliability.md).
#[test]
fn hostile_programs_behave_the_same_when_conversions_back_fail() {
    let (table, failed) = suite("", &[], Some("conversion-back"));
    let _ = std::io::stderr().write_all(table.as_bytes());
    assert!(failed.is_empty(), "hostile suite, conversions back failing:\n{}", failed.join("\n"));
}

/// Runs every case of the programs built with `defines` (named with `suffix`), the shimmed runs
/// with clayout's calls at the `fault` site failing; the table of verdicts, and the failures.
fn suite(suffix: &str, defines: &[&str], fault: Option<&'static str>) -> (String, Vec<String>) {
    let suite_start = Instant::now();
    let mut runs = Vec::new();
    for (program, side) in PROGRAMS {
        let args: Vec<&str> = defines.iter().copied().chain(["-lOpenCL"]).collect();
        let bin = build_c_as("tests/hostile", program, &format!("{program}{suffix}"), &args);
        runs.extend(list_cases(program, side, &bin, fault));
    }
    let known = known_broken();
    let ids: BTreeSet<&str> = runs.iter().filter(|r| !r.id.contains('@')).map(|r| r.id.as_str()).collect();
    let unknown: Vec<&String> = known.keys().filter(|k| !ids.contains(k.as_str())).collect();
    assert!(unknown.is_empty(), "KNOWN_BROKEN names cases that do not exist: {unknown:?}");

    // Plain runs once per case (the policy does not matter without clayout), shared by its
    // variants; cases in order (the cheap host-side programs first, which compile the shared
    // particles program once), on WORKERS threads.
    let queue = Arc::new(Mutex::new(runs.clone().into_iter().enumerate().collect::<VecDeque<_>>()));
    let plains: Arc<Mutex<BTreeMap<String, Result<Output, String>>>> = Default::default();
    let verdicts: Arc<Mutex<Vec<(usize, Verdict)>>> = Default::default();
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (queue, plains, verdicts) = (queue.clone(), plains.clone(), verdicts.clone());
            std::thread::spawn(move || loop {
                let next = queue.lock().unwrap().pop_front();
                let Some((i, r)) = next else { break };
                let key = format!("{}/{}", r.program, r.case);
                let cached = plains.lock().unwrap().get(&key).cloned();
                let plain = cached.unwrap_or_else(|| {
                    let p = plain_run(&r);
                    plains.lock().unwrap().insert(key, p.clone());
                    p
                });
                let v = match plain {
                    Ok(p) => judge(&r, &p),
                    Err(why) => Verdict {
                        id: r.id.clone(),
                        plain: "FAILS".into(),
                        shim: "-".into(),
                        diff: None,
                        bad_case: Some(why),
                        secs: 0.0,
                    },
                };
                verdicts.lock().unwrap().push((i, v));
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a worker panicked");
    }
    let mut verdicts = Arc::try_unwrap(verdicts).unwrap().into_inner().unwrap();
    verdicts.sort_by_key(|(i, _)| *i);

    let mut table = String::new();
    let mut failures = Vec::new();
    let (mut same, mut broken) = (0, 0);
    let _ = writeln!(table, "{:<44} {:<22} {:<22} verdict", "case", "without clayout", "with clayout");
    for (_, v) in &verdicts {
        // A variant under the cost model (`@auto`) converts only when the model decides to,
        // which depends on the times it has measured: it shares its base case's entry, may
        // differ where the base case is known broken, and is never reported fixed.
        // Likewise every case of a pass under a fault, where the defect's path may not be taken.
        let (base, variant) = v.id.split_once('@').map_or((v.id.as_str(), fault.is_some()), |(b, _)| (b, true));
        let listed = known.get(base);
        let verdict = match (&v.bad_case, &v.diff, listed) {
            (None, None, Some(_)) if variant => {
                same += 1;
                "same (the model did not convert, or the base case's defect does not show here)".to_string()
            }
            (Some(why), _, _) => {
                failures.push(format!("{}: the case itself fails: {why}", v.id));
                "BAD CASE".to_string()
            }
            (None, None, None) => {
                same += 1;
                "same".to_string()
            }
            (None, None, Some((item, _))) => {
                failures.push(format!("{}: fixed: remove it from KNOWN_BROKEN (item {item})", v.id));
                format!("FIXED (item {item}): remove it from KNOWN_BROKEN")
            }
            (None, Some(d), Some((item, _))) => {
                broken += 1;
                format!("known broken, item {item}: {d}")
            }
            (None, Some(d), None) => {
                failures.push(format!("{}: {d}", v.id));
                format!("DIFFERS: {d}")
            }
        };
        let _ = writeln!(table, "{:<44} {:<22} {:<22} {verdict} ({:.1} s)", v.id, v.plain, v.shim, v.secs);
    }
    let _ = writeln!(
        table,
        "{} cases{suffix}{}: {same} the same, {broken} known broken, {} failing; {:.0} s",
        verdicts.len(),
        fault.map(|f| format!(" (CLAYOUT_FAULT={f})")).unwrap_or_default(),
        failures.len(),
        suite_start.elapsed().as_secs_f64()
    );
    (table, failures)
}
