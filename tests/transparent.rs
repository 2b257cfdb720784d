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
    let json = scratch(mode).join("stats.json");
    let mut cmd = seq(mode)
        .shimmed()
        .env("CLAYOUT_ANNOTATIONS", dl("particles.dl").as_os_str())
        .env("CLAYOUT_STATS", json.as_os_str());
    for (k, v) in env {
        cmd = cmd.env(k, v);
    }
    let out = run(&cmd, TIMEOUT);
    let stats = read_stats(&json, &out);
    (out, stats)
}

fn n(stats: &Value, path: &[&str]) -> u64 {
    path.iter().fold(stats, |v, k| &v[*k]).as_u64().unwrap_or_else(|| panic!("{path:?} missing in {stats:#}"))
}

fn conversions(stats: &Value) -> (u64, u64) {
    (n(stats, &["marshal", "to_device_layout"]), n(stats, &["marshal", "to_host_layout"]))
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

/// CLAYOUT_DUMP_DIR receives the rewritten source: the application's kernels untouched, the
/// copies after them.
#[test]
fn dump_dir_holds_the_rewritten_source() {
    let dir = scratch("dump").join("out");
    let (_, _) = transparent("launches", &[("CLAYOUT_DUMP_DIR", dir.to_str().unwrap())]);
    let files: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = fs::read_to_string(&files[0]).unwrap();
    for k in ["advance__clayout_asta", "exchange__clayout_asta", "step_soa__clayout_asta", "__kernel void advance("] {
        assert!(text.contains(k), "{k} missing from the dump");
    }
    assert!(!text.contains("accumulate__clayout_asta"));
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
    let bin = build_c_in("tests/dl", "dl_threads");
    let (threads, rounds) = (8u64, 500u64);
    let cmd = Cmd::new([
        bin.as_os_str(),
        dl("particles_aos.cl").as_os_str(),
        threads.to_string().as_ref(),
        rounds.to_string().as_ref(),
        "gather".as_ref(),
    ]);
    let base = run(&cmd, TIMEOUT);
    assert_ok(&base);
    for attempt in 0..2 {
        let json = scratch("threads").join("stats.json");
        let out = run(
            &cmd.clone()
                .shimmed()
                .env("CLAYOUT_ANNOTATIONS", dl("particles.dl").as_os_str())
                .env("CLAYOUT_STATS", json.as_os_str()),
            TIMEOUT,
        );
        assert_same(&base, &out);
        let stats = read_stats(&json, &out);
        let (to_device, to_host) = conversions(&stats);
        assert_eq!(to_device, to_host, "attempt {attempt}: {stats:#}");
        assert!(to_device >= threads * rounds, "attempt {attempt}: {stats:#}");
        assert_eq!(n(&stats, &["launches_rewritten"]), 2 * threads * rounds, "attempt {attempt}: {stats:#}");
        assert_eq!(n(&stats, &["launches_as_written"]), 0, "attempt {attempt}: {stats:#}");
        assert!(stats["fallbacks"].as_array().unwrap().iter().all(|f| f["object"] == "kernel accumulate"), "{stats:#}");
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
    let bin = build_c_in("tests/dl", "dl_threads");
    for attempt in 0..3 {
        let json = scratch("exit").join("stats.json");
        let cmd = Cmd::new([
            bin.as_os_str(),
            dl("particles_aos.cl").as_os_str(),
            "8".as_ref(),
            "100000".as_ref(),
            "exit".as_ref(),
        ]);
        let out = run(
            &cmd.shimmed()
                .env("CLAYOUT_ANNOTATIONS", dl("particles.dl").as_os_str())
                .env("CLAYOUT_STATS", json.as_os_str()),
            TIMEOUT,
        );
        assert_eq!(out.code, Some(0), "attempt {attempt}\n{}", out.show("with shim"));
        assert!(out.stdout.contains("exit while enqueueing"), "{}", out.show("with shim"));
        let stats = read_stats(&json, &out);
        assert!(n(&stats, &["launches_rewritten"]) > 0, "{stats:#}");
    }
}
