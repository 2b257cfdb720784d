//! The transparent mode end to end: tests/dl/dl_seq.c runs each call sequence with the
//! unmodified AoS kernels of tests/dl/particles_aos.cl, annotated only by the side file
//! tests/dl/particles.dl (no device layout: the kernels are still written for AoS). Under the
//! shim the rewritten copies run on buffers converted to ASTA; every checksum must be the plain
//! run's, bit for bit, with the conversions the sequence calls for.

mod common;

use common::*;
use serde_json::Value;
use std::fs;

fn plain(mode: &str) -> Output {
    let out = run(&seq(mode), TIMEOUT);
    assert_ok(&out);
    out
}

/// `mode` under the shim with the side file and the extra environment.
fn transparent(mode: &str, env: &[(&str, &str)]) -> (Output, Value) {
    shimmed(seq(mode), mode, env)
}

/// `cmd` under clayout with the AoS kernels' side file and `env`, its statistics written in
/// the scratch directory `tag`: its output and statistics.
fn shimmed(cmd: Cmd, tag: &str, env: &[(&str, &str)]) -> (Output, Value) {
    let json = scratch(tag).join("stats.json");
    let mut cmd =
        cmd.shimmed().env("CLAYOUT_ANNOTATIONS", dl("particles.dl").as_os_str()).env("CLAYOUT_STATS", json.as_os_str());
    for (k, v) in env {
        cmd = cmd.env(k, v);
    }
    let out = run(&cmd, TIMEOUT);
    let stats = read_stats(&json, &out);
    (out, stats)
}

/// `cmd` under clayout (`shimmed`, as `tag` with `env`) against its plain run `base`: the same
/// output, and every conversion to ASTA undone by one back (every buffer ends read, in host
/// layout). Its statistics.
fn same_as_plain_all_undone(cmd: &Cmd, base: &Output, tag: &str, env: &[(&str, &str)]) -> Value {
    let (out, stats) = shimmed(cmd.clone(), tag, env);
    assert_same(base, &out);
    let (to_device, to_host) = conversions(&stats);
    assert_eq!(to_device, to_host, "{tag}: {stats:#}");
    stats
}

fn n(stats: &Value, path: &[&str]) -> u64 {
    path.iter().fold(stats, |v, k| &v[*k]).as_u64().unwrap_or_else(|| panic!("{path:?} missing in {stats:#}"))
}

fn conversions(stats: &Value) -> (u64, u64) {
    (n(stats, &["marshal", "to_device_layout"]), n(stats, &["marshal", "to_host_layout"]))
}

/// A process the application starts inherits LD_PRELOAD, and clayout with it. One that makes no
/// OpenCL call (`/bin/true` here; PoCL's linker, which PoCL starts for each kernel it links) says
/// nothing at exit: it warned once per side-file kernel that the annotation went unused, and
/// wrote the statistics file the application writes.
#[test]
fn a_child_process_without_opencl_says_nothing_at_exit() {
    let base = plain("spawn");
    let (out, stats) = transparent("spawn", &[]);
    assert_same(&base, &out);
    assert!(out.stdout.contains("child exit 3"), "{}", out.show("spawn"));
    assert!(!out.stderr.contains("annotation not used"), "{}", out.show("spawn"));
    assert_eq!(n(&stats, &["launches_rewritten"]), 1, "the application's statistics: {stats:#}");
}

/// Every sequence: the plain run's results, the same conversions as with hand-written ASTA
/// kernels (tests/dl_runtime.rs), and each launch of a rewritten kernel running its copy.
#[test]
fn every_call_sequence_with_rewritten_kernels() {
    let table = [
        ("launches", (1, 1)),
        ("map", (3, 3)),
        ("partial", (2, 2)),
        ("copy", (2, 2)),
        ("fill", (3, 3)),
        ("mixed", (2, 2)),
        ("twoqueues", (1, 1)),
        ("ooo", (1, 1)),
        ("subbuf", (2, 2)),
        ("soa", (1, 1)),
        ("multi", (2, 2)),
    ];
    for (mode, want) in table {
        let base = plain(mode);
        let (out, stats) = transparent(mode, &[]);
        assert_same(&base, &out);
        assert_eq!(conversions(&stats), want, "{mode}: conversions (to device, to host)\n{stats:#}");
        // advance, exchange and step_soa are rewritten; accumulate picks one of two buffers and is not.
        assert_eq!((n(&stats, &["rewritten_kernels"]), n(&stats, &["rewrite_refusals"])), (4, 1), "{mode}: {stats:#}");
        assert!(n(&stats, &["launches_rewritten"]) >= 1, "{mode}: no launch ran a rewritten copy\n{stats:#}");
        assert_eq!(n(&stats, &["launches_as_written"]), 0, "{mode}: {stats:#}");
        // Every object clayout created for the context (private program, copies, probes,
        // conversion kernels, scratch buffers, events) was released with it.
        assert_eq!(
            (n(&stats, &["contexts_released"]), n(&stats, &["contexts_left_referenced"])),
            (1, 0),
            "{mode}: {stats:#}"
        );
    }
}

/// The refused kernel is named with its construct and line, once, and runs as written.
#[test]
fn refusal_names_the_construct_and_line() {
    let (out, stats) = transparent("launches", &[]);
    let lines: Vec<&str> = out.shim_lines().into_iter().filter(|l| l.contains("not rewritten")).collect();
    assert_eq!(lines.len(), 1, "{}", out.show("with shim"));
    assert!(
        lines[0].contains("kernel accumulate") && lines[0].contains("line 61") && lines[0].contains("n ? shared : own"),
        "{}",
        lines[0]
    );
    let fallbacks = stats["fallbacks"].as_array().unwrap();
    assert!(fallbacks.iter().any(|f| f["object"] == "kernel accumulate"), "{stats:#}");
}

/// A buffer created with CL_MEM_USE_HOST_PTR is not converted (the application may read its
/// host memory directly): each launch runs the kernel as written, nothing is converted.
#[test]
fn use_host_ptr_buffer_runs_the_kernel_as_written() {
    let base = plain("hostptr");
    let (out, stats) = transparent("hostptr", &[]);
    assert_same(&base, &out);
    assert_eq!(conversions(&stats), (0, 0), "{stats:#}");
    assert_eq!(n(&stats, &["launches_rewritten"]), 0);
    assert!(n(&stats, &["launches_as_written"]) >= 1, "{stats:#}");
}

/// CLAYOUT_REWRITE=0 turns the mode off: nothing rewritten, nothing converted.
#[test]
fn rewrite_off() {
    let base = plain("multi");
    let (out, stats) = transparent("multi", &[("CLAYOUT_REWRITE", "0")]);
    assert_same(&base, &out);
    assert_eq!(conversions(&stats), (0, 0));
    assert_eq!(n(&stats, &["rewritten_kernels"]), 0);
}

/// CLAYOUT_DUMP_DIR receives the rewritten source: the copies, and in place of the
/// application's kernels (which nothing launches from it) a comment on as many lines.
#[test]
fn dump_dir_holds_the_rewritten_source() {
    let dir = scratch("dump").join("out");
    let (_, _) = transparent("launches", &[("CLAYOUT_DUMP_DIR", dir.to_str().unwrap())]);
    let files: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = fs::read_to_string(&files[0]).unwrap();
    for k in [
        "advance__clayout_asta",
        "exchange__clayout_asta",
        "step_soa__clayout_asta",
        "/* clayout: kernel advance as written is not in this program */",
        "/* clayout: kernel accumulate as written is not in this program */",
    ] {
        assert!(text.contains(k), "{k} missing from the dump");
    }
    assert!(!text.contains("__kernel void advance("));
    assert!(!text.contains("accumulate__clayout_asta"));
}

/// What the rewriter made of a program is kept in clayout's cache: a second run with the same
/// cache takes the copies from there (it says so), dumps the same text, says the same of each
/// kernel (the refusal included), and prints the plain run's results.
#[test]
fn a_second_run_takes_the_rewritten_copies_from_the_cache() {
    let base = plain("launches");
    let cache = scratch("rewritten-cache").join("cache");
    let runs: Vec<(Output, Value, String)> = (0..2)
        .map(|i| {
            let dump = scratch("rewritten-cache").join(format!("dump{i}"));
            let env = [
                ("CLAYOUT_CACHE_DIR", cache.to_str().unwrap()),
                ("CLAYOUT_DUMP_DIR", dump.to_str().unwrap()),
                ("CLAYOUT_LOG", "debug"),
            ];
            let (out, stats) = transparent("launches", &env);
            assert_same(&base, &out);
            let files: Vec<_> = fs::read_dir(&dump).unwrap().map(|e| e.unwrap().path()).collect();
            assert_eq!(files.len(), 1, "{files:?}");
            (out, stats, fs::read_to_string(&files[0]).unwrap())
        })
        .collect();
    let from_cache =
        |out: &Output| out.shim_lines().iter().any(|l| l.contains("rewritten copies from clayout's cache"));
    assert!(!from_cache(&runs[0].0), "{}", runs[0].0.show("first run"));
    assert!(from_cache(&runs[1].0), "{}", runs[1].0.show("second run"));
    assert_eq!(runs[0].2, runs[1].2, "the dumps differ");
    // What each kernel got: its copies, its staged copy, or the rewriter's refusal.
    let said = |out: &Output| -> Vec<String> {
        out.shim_lines()
            .iter()
            .filter(|l| l.contains(": kernel ") && !l.starts_with("clayout: debug:"))
            .map(|l| l.to_string())
            .collect()
    };
    assert_eq!(said(&runs[0].0), said(&runs[1].0));
    assert!(said(&runs[1].0).iter().any(|l| l.contains("not rewritten")), "{}", runs[1].0.show("second run"));
    for key in ["rewritten_kernels", "rewrite_refusals", "fallbacks"] {
        assert_eq!(runs[0].1[key], runs[1].1[key], "{key}");
    }
}

/// Eight host threads, 500 rounds each, every round a rewritten kernel reading a shared buffer
/// (`gather`, so the shared buffer is converted to ASTA), one that runs as written on both
/// buffers (`accumulate`, so it comes back to the host layout) and another rewritten one
/// (`advance`), with reads every ten rounds: the shared buffer keeps changing layout while the
/// other threads' kernels use it. The results must be the plain run's; every conversion to ASTA
/// is undone by exactly one conversion back (all buffers end in host layout: they are read);
/// every launch of a rewritten kernel runs its copy (`accumulate`, refused by the rewriter, is
/// an ordinary launch and not counted).
#[test]
fn threads_with_rewritten_kernels_on_a_shared_buffer() {
    let (threads, rounds) = (8u64, 500u64);
    let cmd = dl_threads(threads, rounds, "gather");
    let base = run(&cmd, TIMEOUT);
    assert_ok(&base);
    for attempt in 0..2 {
        let stats = same_as_plain_all_undone(&cmd, &base, "threads", &[]);
        assert!(conversions(&stats).0 >= threads * rounds, "attempt {attempt}: {stats:#}");
        assert_eq!(n(&stats, &["launches_rewritten"]), 2 * threads * rounds, "attempt {attempt}: {stats:#}");
        assert_eq!(n(&stats, &["launches_as_written"]), 0, "attempt {attempt}: {stats:#}");
        assert!(stats["fallbacks"].as_array().unwrap().iter().all(|f| f["object"] == "kernel accumulate"), "{stats:#}");
    }
}

/// The same eight threads with every kernel's arguments set once (`dl_threads repeat`), under
/// `never` (nothing converted by the policy, kernels timed in their host-layout forms) and
/// `auto`: once a kernel's decision is kept, a launch like its kernel object's last repeats it
/// (`transparent::repeat`) while the other threads' launches lock and use the shared buffer, and
/// each thread's reads of its own buffer (on its queue, with an event of clayout's) make the
/// next launch take the full path. The results are the plain run's, and launches repeat.
#[test]
fn threads_repeating_their_launches_on_a_shared_buffer() {
    let cmd = dl_threads(8, 200, "repeat");
    let base = run(&cmd, TIMEOUT);
    assert_ok(&base);
    for policy in ["never", "auto"] {
        let env = [("CLAYOUT_POLICY", policy), ("CLAYOUT_BUILD_AFTER", "wait")];
        let stats = same_as_plain_all_undone(&cmd, &base, &format!("threads-repeat-{policy}"), &env);
        if policy == "never" {
            assert!(n(&stats, &["launches_repeated"]) > 0, "{stats:#}");
        }
    }
}

/// Four host threads repeat their launches on a shared buffer (`dl_threads churn`) while the
/// main thread creates and releases kernel objects of the same program without pause, and each
/// opening of an express lane for a copy waits 20 ms first (CLAYOUT_FAULT=slow-lane-give): the
/// kernels' records are made and go while launches repeat and open their lanes. A repeated
/// launch once held its kernel table's lock (a shard's, for reading) across the whole launch,
/// and the lane's opening looked the kernel up again: behind a release waiting for the lock,
/// that second read waited for ever. The results are the plain run's, under both policies.
#[test]
fn kernels_made_and_released_while_launches_open_their_lanes() {
    let cmd = dl_threads(4, 30, "churn");
    let base = run(&cmd, TIMEOUT);
    assert_ok(&base);
    for policy in ["always", "auto"] {
        let shimmed = cmd
            .clone()
            .shimmed_with(fault_lib())
            .env("CLAYOUT_ANNOTATIONS", dl("particles.dl").as_os_str())
            .env("CLAYOUT_POLICY", policy)
            .env("CLAYOUT_FAULT", "slow-lane-give");
        assert_same(&base, &run(&shimmed, TIMEOUT));
    }
}

/// Four host threads whose every `advance` launch asks its event, whose completion callback
/// launches `gather` from the shared buffer on the thread's queue, from the driver's thread,
/// while the threads read that shared buffer now and then (`dl_threads callbacks`). A blocking
/// read whose commands completed without the application's help was passed through with its
/// buffer locked until it returned; PoCL runs an event's callbacks before it releases the
/// commands after the event, so the callback waited for the lock and the read for the
/// callback: the run hung in 10 of 12 runs (`MODES=callbacks scripts/threads-stress.sh 3`).
/// The results are the plain run's, under `always` and `auto`.
#[test]
fn callbacks_launch_while_threads_block_in_reads() {
    let cmd = dl_threads(4, 20, "callbacks");
    let base = run(&cmd, TIMEOUT);
    assert_ok(&base);
    for policy in ["always", "auto"] {
        same_as_plain_all_undone(&cmd, &base, &format!("threads-callbacks-{policy}"), &[("CLAYOUT_POLICY", policy)]);
    }
}

/// Six host threads that each build a program of their own from the same source, all at once
/// (`dl_threads build`), then run the `gather` rounds on their buffers and a shared one: one
/// build's reading may run on clayout's helper thread while the others get threads of their own
/// (`runtime::helper`). Under `always` and `auto` the results are the plain run's, every
/// conversion is undone, and under `always` every launch of a rewritten kernel runs its copy.
#[test]
fn threads_building_their_own_programs_at_once() {
    let (threads, rounds) = (6u64, 30u64);
    let cmd = dl_threads(threads, rounds, "build");
    let base = run(&cmd, TIMEOUT);
    assert_ok(&base);
    for policy in ["always", "auto"] {
        let env = [("CLAYOUT_POLICY", policy)];
        let stats = same_as_plain_all_undone(&cmd, &base, &format!("threads-build-{policy}"), &env);
        if policy == "always" {
            assert_eq!(n(&stats, &["launches_rewritten"]), 2 * threads * rounds, "{stats:#}");
        }
    }
}

/// A buffer mapped for reading stays readable through the map while kernels read it: it is
/// not converted while mapped (the kernel runs as written), and is once unmapped.
#[test]
fn mapped_buffer_is_not_converted_while_mapped() {
    let base = plain("mapread");
    let (out, stats) = transparent("mapread", &[]);
    assert_same(&base, &out);
    assert_eq!(n(&stats, &["launches_as_written"]), 2, "{stats:#}");
    assert_eq!(n(&stats, &["launches_rewritten"]), 1, "{stats:#}");
}

/// A program created from the binary of the application's own program passes through: its
/// kernels run as written, on buffers brought back to host layout, after a launch of the
/// source program's rewritten kernel converted the buffer to ASTA.
#[test]
fn program_from_binary_runs_as_written() {
    let base = plain("binary");
    let (out, stats) = transparent("binary", &[]);
    assert_same(&base, &out);
    assert_eq!(conversions(&stats), (1, 1), "{stats:#}");
    assert_eq!(n(&stats, &["launches_rewritten"]), 1, "{stats:#}");
}

/// exit() from the main thread while eight workers are enqueueing rewritten kernels and
/// conversions: the process ends with the application's status, no crash and no hang, and the
/// statistics are written.
#[test]
fn exit_while_threads_enqueue() {
    for attempt in 0..3 {
        let (out, stats) = shimmed(dl_threads(8, 100_000, "exit"), "exit", &[]);
        assert_eq!(out.code, Some(0), "attempt {attempt}\n{}", out.show("with shim"));
        assert!(out.stdout.contains("exit while enqueueing"), "{}", out.show("with shim"));
        assert!(n(&stats, &["launches_rewritten"]) > 0, "{stats:#}");
    }
}

/// A program of one floating-point and one integer-only kernel, built with `-cl-mad-enable`
/// (which lets any compiler fuse `a*b+c` where the code around it allows), run by the corpus
/// driver at `n` structures plain and under the shim with `CLAYOUT_POLICY=always`.
fn fused_program(n: u32) -> (Output, Output, Value) {
    fused_program_with(n, true, &[])
}

/// `fused_program`, with the integer-only kernel or without, under the shim with `env` added.
fn fused_program_with(n: u32, integer: bool, env: &[(&str, &std::ffi::OsStr)]) -> (Output, Output, Value) {
    static DRIVER: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let driver = DRIVER.get_or_init(|| build_c_linking("tests/corpus", "driver", &["-lOpenCL", "-lm"]));
    let dir = scratch("fused");
    let churn = "//DL: AoS: q[n]\n\
         __kernel void churn(__global Q *q, int n, int a) {\n\
           int i = get_global_id(0); if (i >= n) return;\n\
           Q v = q[i];\n\
           v.x = v.x * a + v.y; v.y ^= v.z; v.z += v.w * 3; v.w = v.x - v.z;\n\
           q[i] = v;\n\
         }\n";
    fs::write(
        dir.join("k.cl"),
        format!(
            "typedef struct {{ float x, y, z, w; }} P;\n\
             typedef struct {{ int x, y, z, w; }} Q;\n\
             //DL: AoS: p[n]\n\
             __kernel void axpy(__global P *p, int n, float a) {{\n\
               int i = get_global_id(0); if (i >= n) return;\n\
               P q = p[i];\n\
               q.x = q.x * a + q.y; q.y = q.y * q.z + a; q.z = q.z * q.w + q.x; q.w = q.w * a + q.z;\n\
               p[i] = q;\n\
             }}\n{}",
            if integer { churn } else { "" }
        ),
    )
    .unwrap();
    let (b, churn_kernel, churn_step) = match integer {
        true => (
            "buffer b N i(0,1000)*4\n",
            "kernel churn\n  arg buf b\n  arg int N\n  arg int 5\n  global N\n",
            "step churn\n",
        ),
        false => ("", "", ""),
    };
    fs::write(
        dir.join("fused.spec"),
        format!(
            "let N = {n}\nsource k.cl\noptions -cl-mad-enable\nbuffer a N f(0,1)*4\n{b}\
             kernel axpy\n  arg buf a\n  arg int N\n  arg float 0.75\n  global N\n{churn_kernel}\
             iters 3\nstep axpy\n{churn_step}read a\n{}",
            if integer { "read b\n" } else { "" }
        ),
    )
    .unwrap();
    let cmd = Cmd::new([driver.as_os_str(), dir.join("fused.spec").as_os_str()]);
    let base = run(&cmd, TIMEOUT);
    assert_ok(&base);
    let json = dir.join("stats.json");
    let mut shimmed = cmd.shimmed().env("CLAYOUT_STATS", json.as_os_str()).env("CLAYOUT_LOG", "info");
    for (k, v) in env {
        shimmed = shimmed.env(k, v);
    }
    let out = run(&shimmed, TIMEOUT);
    let stats = read_stats(&json, &out);
    (base, out, stats)
}

fn launches_in(stats: &Value, kernel: &str, form: &str) -> u64 {
    stats["policy"]["kernels"][kernel]["launches"][form].as_u64().unwrap_or(0)
}

/// Where the device compiler may fuse floating-point operations differently in a copy and every
/// rewritten kernel computes in floating point, every launch in ASTA is on whole tiles: the
/// copies are built once, for whole tiles only (one program less to compile and to load in each
/// run), and serve every form: the ASTA copy on whole tiles, the kernel as written elsewhere,
/// the staged copy (the same code in either build; here converting the buffer on its first
/// launch), each with the bytes of the program without clayout.
#[test]
fn floating_point_copies_that_may_fuse_are_built_once() {
    let cache = scratch("fused-once").join("cache");
    let programs = || {
        fs::read_dir(&cache).map_or(0, |d| {
            d.filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("private-")).count()
        })
    };
    let env = |policy: &'static str| {
        [("CLAYOUT_CACHE_DIR", cache.as_os_str()), ("CLAYOUT_POLICY", std::ffi::OsStr::new(policy))]
    };
    let (base, out, stats) = fused_program_with(1024, false, &env("always"));
    assert_same(&base, &out);
    assert_eq!(launches_in(&stats, "axpy", "asta"), 3, "whole tiles: {stats:#}");
    // Its first launch ran as the staged copy converting its buffer (a fused conversion).
    assert_eq!(stats["marshal"]["fused"], 1, "{stats:#}");
    assert_eq!(programs(), 1, "one program of copies in {}", cache.display());
    let (base, out, stats) = fused_program_with(1000, false, &env("always"));
    assert_same(&base, &out);
    assert_eq!(launches_in(&stats, "axpy", "written"), 3, "{stats:#}");
    for n in [1000, 1024] {
        let (base, out, _) = fused_program_with(n, false, &env("never"));
        assert_same(&base, &out);
    }
    assert_eq!(programs(), 1, "one program of copies in {}", cache.display());
}

/// Where the device compiler may fuse floating-point operations differently in a copy (here
/// `-cl-mad-enable`), a launch of a floating-point kernel that needs the index for a narrower
/// last tile runs as written, with one line and a fallback saying why; on whole tiles it runs
/// its ASTA copy, and an integer-only kernel runs it at any size.
#[test]
fn fused_floating_point_with_a_narrower_last_tile_runs_as_written() {
    let (base, out, stats) = fused_program(1000);
    assert_same(&base, &out);
    assert_eq!(launches_in(&stats, "axpy", "asta"), 0, "{stats:#}");
    assert_eq!(launches_in(&stats, "axpy", "written"), 3, "{stats:#}");
    assert_eq!(launches_in(&stats, "churn", "asta"), 3, "integer-only: {stats:#}");
    let reasons = stats["policy"]["kernels"]["axpy"]["reasons"].to_string();
    assert!(reasons.contains("1000 structures are not a multiple of the tile"), "{reasons}");
    assert!(reasons.contains("-cl-mad-enable"), "{reasons}");
    let fallbacks = stats["fallbacks"].as_array().unwrap();
    assert_eq!(fallbacks.iter().filter(|f| f["object"] == "kernel axpy").count(), 1, "{stats:#}");
    assert!(!fallbacks.iter().any(|f| f["object"] == "kernel churn"), "{stats:#}");
    let said: Vec<&str> = out.shim_lines().into_iter().filter(|l| l.contains("not a multiple of the tile")).collect();
    assert_eq!(said.len(), 1, "one line per kernel\n{}", out.show("with shim"));
    assert!(said[0].contains("kernel axpy:") && said[0].contains("it runs as written"), "{}", said[0]);
    // Only `b` went to ASTA and back.
    assert_eq!(conversions(&stats), (1, 1), "{stats:#}");

    let (base, out, stats) = fused_program(1024);
    assert_same(&base, &out);
    assert_eq!(launches_in(&stats, "axpy", "asta"), 3, "whole tiles: {stats:#}");
    assert_eq!(launches_in(&stats, "churn", "asta"), 3, "{stats:#}");
    assert!(!out.shim_lines().iter().any(|l| l.contains("not a multiple of the tile")), "{}", out.show("with shim"));
}
