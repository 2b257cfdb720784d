//! The DL runtime end to end: tests/dl/dl_seq.c runs each call sequence plainly with its AoS
//! kernels (tests/dl/particles_aos.cl) and under the shim with their ASTA twins
//! (tests/dl/particles_asta.cl, annotated `-> ASTA`). Every checksum must be identical, bit for
//! bit, and the statistics must show exactly the conversions the sequence needs. clayout comes
//! in the way the including test crate's `ROUTE` says (tests/dl_runtime.rs: preloaded;
//! tests/layer_route.rs: as a loader layer).

use crate::common::*;
use serde_json::Value;
use std::fs;
use std::path::PathBuf;

fn kernels(name: &str) -> PathBuf {
    paths().root.join("tests/dl").join(name)
}

fn plain(mode: &str) -> Output {
    let out = run(&Cmd::new([dl_seq().as_os_str(), kernels("particles_aos.cl").as_os_str(), mode.as_ref()]), TIMEOUT);
    assert_ok(&out);
    out
}

/// Runs `mode` under the shim with `kernel_file` and the extra environment, and returns its
/// output and statistics.
fn shimmed(mode: &str, kernel_file: &std::path::Path, env: &[(&str, &str)]) -> (Output, Value) {
    let dir = scratch(mode);
    let json = dir.join("stats.json");
    let mut cmd = Cmd::new([dl_seq().as_os_str(), kernel_file.as_os_str(), mode.as_ref()])
        .under(crate::ROUTE)
        .env("CLAYOUT_STATS", json.as_os_str());
    for (k, v) in env {
        cmd = cmd.env(k, v);
    }
    let out = run(&cmd, TIMEOUT);
    let stats = read_stats_under(crate::ROUTE, &json, &out);
    (out, stats)
}

fn conversions(stats: &Value) -> (u64, u64) {
    (stats["marshal"]["to_device_layout"].as_u64().unwrap(), stats["marshal"]["to_host_layout"].as_u64().unwrap())
}

/// The sequence gives the plain run's results under the shim, with exactly `want` conversions
/// (to device layout, to host layout) and no fallback.
fn check(mode: &str, want: (u64, u64)) {
    let base = plain(mode);
    let (out, stats) = shimmed(mode, &kernels("particles_asta.cl"), &[]);
    assert_same(&base, &out);
    assert_eq!(
        conversions(&stats),
        want,
        "conversions (to device, to host) for {mode}\n{stats:#}\n{}",
        out.show("with shim")
    );
    // Every object clayout created for the context was released with it (checked at the
    // application's last clReleaseContext through the context's reference count).
    assert_eq!(
        (stats["contexts_released"].as_u64(), stats["contexts_left_referenced"].as_u64()),
        (Some(1), Some(0)),
        "{mode}: {stats:#}"
    );
    assert_eq!(stats["fallbacks"].as_array().map(|a| a.len()), Some(0), "fallbacks in {mode}: {stats:#}");
    assert!(stats["marshal"]["bytes"].as_u64().unwrap() > 0);
}

#[test]
fn write_launch_ten_times_read() {
    // One conversion to ASTA before the first launch, none for the nine others, one back.
    check("launches", (1, 1));
}

#[test]
fn map_and_unmap() {
    // A read map brings the buffer back, and so does an invalidating map: implementations keep
    // the old bytes wherever the host writes none, so they must be the host layout's.
    check("map", (3, 3));
}

#[test]
fn partial_read_and_write() {
    check("partial", (2, 2));
}

#[test]
fn copy_to_another_buffer() {
    check("copy", (2, 2));
}

#[test]
fn partial_and_whole_fill() {
    // The whole fill overwrites everything: no conversion back before it.
    check("fill", (3, 3));
}

#[test]
fn kernel_without_annotation_after_annotated_one() {
    check("mixed", (2, 2));
}

#[test]
fn two_queues_with_events() {
    check("twoqueues", (1, 1));
}

#[test]
fn out_of_order_queue_with_events() {
    check("ooo", (1, 1));
}

#[test]
fn sub_buffer_access_brings_parent_back() {
    check("subbuf", (2, 2));
}

#[test]
fn use_host_ptr_buffer() {
    check("hostptr", (1, 1));
}

#[test]
fn soa_host_layout() {
    check("soa", (1, 1));
}

#[test]
fn several_annotated_arguments() {
    check("multi", (2, 2));
}

/// The ASTA kernels with their `//DL:` lines removed, annotated instead by a side file.
#[test]
fn side_file_annotations() {
    let dir = scratch("side");
    let src = fs::read_to_string(kernels("particles_asta.cl")).unwrap();
    let bare: String = src.lines().filter(|l| !l.trim_start().starts_with("//DL:")).map(|l| format!("{l}\n")).collect();
    let file = dir.join("bare_asta.cl");
    fs::write(&file, bare).unwrap();
    let side = dir.join("annotations.dl");
    fs::write(&side, "# kernel: annotation\nadvance: AoS: p[n] -> ASTA\nexchange //DL: AoS: a[n], b[n] -> ASTA\n")
        .unwrap();
    for (mode, want) in [("launches", (1, 1)), ("multi", (2, 2))] {
        let base = plain(mode);
        let (out, stats) = shimmed(mode, &file, &[("CLAYOUT_ANNOTATIONS", side.to_str().unwrap())]);
        assert_same(&base, &out);
        assert_eq!(conversions(&stats), want, "{mode} with the side file: {stats:#}");
    }
}

/// Malformed annotations on the AoS kernels: one warning each, the kernel runs as written, the
/// results stay the plain run's, and nothing is converted.
#[test]
fn malformed_annotations_change_nothing() {
    let bad = [
        "//DL: AoS: p[",
        "//DL: AoS p[n]",
        "//DL: AoS: q[n] -> ASTA",
        "//DL: AoS: p[n] -> ASTA(48)",
        "//DL: AoS: p[m] -> ASTA",
        "//DL: AoS: p[n / 0 +] -> ASTA",
        "//DL: FoS: p[n] -> ASTA",
        "//DL: AoS: dt[n] -> ASTA",
        "//DL: AoS: p[n], p[n] -> ASTA",
        "//DL:",
    ];
    let base = plain("launches");
    let src = fs::read_to_string(kernels("particles_aos.cl")).unwrap();
    let dir = scratch("malformed");
    for (i, ann) in bad.iter().enumerate() {
        let file = dir.join(format!("bad{i}.cl"));
        fs::write(&file, src.replace("__kernel void advance(", &format!("{ann}\n__kernel void advance("))).unwrap();
        let (out, stats) = shimmed("launches", &file, &[]);
        assert_same(&base, &out);
        assert_eq!(conversions(&stats), (0, 0), "{ann:?} converted something");
        let warnings: Vec<&str> = out.shim_lines().into_iter().filter(|l| l.contains("warn")).collect();
        assert_eq!(warnings.len(), 1, "{ann:?} should give exactly one warning, got {warnings:?}");
        assert!(!stats["fallbacks"].as_array().unwrap().is_empty(), "{ann:?}: the fallback is not in the stats");
    }
}

/// A kernel written for ASTA whose buffer cannot be converted (its extent exceeds the buffer)
/// must not run on the wrong layout: its launch fails as one that cannot run.
#[test]
fn asta_kernel_that_cannot_be_served_fails_its_launch() {
    let dir = scratch("toolarge");
    let src = fs::read_to_string(kernels("particles_asta.cl")).unwrap();
    let file = dir.join("big_extent.cl");
    fs::write(&file, src.replace("//DL: AoS: p[n] -> ASTA", "//DL: AoS: p[n * 2] -> ASTA")).unwrap();
    let (out, stats) = shimmed("launches", &file, &[]);
    assert!(
        out.stdout.contains("clEnqueueNDRangeKernel") && out.stdout.contains("-5"),
        "expected CL_OUT_OF_RESOURCES (-5)\n{}",
        out.show("with shim")
    );
    assert!(out.stderr.contains("more than the buffer"), "{}", out.show("with shim"));
    assert!(!stats["fallbacks"].as_array().unwrap().is_empty());
}

/// CLAYOUT_PROFILE=1 turns profiling on for the application's queues, so conversions are timed;
/// without it they are not (clayout leaves the application's queues as they are).
#[test]
fn conversion_time_only_with_profiling() {
    let base = plain("launches");
    let (out, stats) = shimmed("launches", &kernels("particles_asta.cl"), &[("CLAYOUT_PROFILE", "1")]);
    assert_same(&base, &out);
    assert!(stats["marshal"]["device_ns"].as_u64().unwrap() > 0, "{stats:#}");
    let (_, stats) = shimmed("launches", &kernels("particles_asta.cl"), &[]);
    assert_eq!(stats["marshal"]["device_ns"].as_u64(), Some(0));
}

/// CLAYOUT_STRICT=1 turns a fallback (here: an annotation clayout cannot use) into a failure.
#[test]
fn strict_mode_fails_instead_of_falling_back() {
    let dir = scratch("strict");
    let src = fs::read_to_string(kernels("particles_aos.cl")).unwrap();
    let file = dir.join("bad.cl");
    fs::write(&file, src.replace("__kernel void advance(", "//DL: AoS: p[n] -> ASTA(48)\n__kernel void advance("))
        .unwrap();
    let (out, _) = shimmed("launches", &file, &[("CLAYOUT_STRICT", "1")]);
    assert!(out.stdout.contains("clEnqueueNDRangeKernel") && out.stdout.contains("-5"), "{}", out.show("with shim"));
    let (out, _) = shimmed("launches", &file, &[]);
    assert_same(&plain("launches"), &out);
}

/// Six host threads, each with its own queue and buffer, all reading one shared annotated
/// buffer, reading back every ten rounds: identical results every time, and exactly the
/// conversions the reads call for (each thread's buffer goes back and forth ten times, the
/// shared one once), so none is lost or doubled.
#[test]
fn threads_share_a_converted_buffer() {
    let bin = build_c_in("tests/dl", "dl_threads");
    let args = |k: &str| Cmd::new([bin.as_os_str(), kernels(k).as_os_str(), "6".as_ref(), "100".as_ref()]);
    let base = run(&args("particles_aos.cl"), TIMEOUT);
    assert_ok(&base);
    for round in 0..3 {
        let dir = scratch("threads");
        let json = dir.join("stats.json");
        let out = run(&args("particles_asta.cl").under(crate::ROUTE).env("CLAYOUT_STATS", json.as_os_str()), TIMEOUT);
        assert_same(&base, &out);
        let stats = read_stats_under(crate::ROUTE, &json, &out);
        assert_eq!(conversions(&stats), (61, 61), "round {round}: {stats:#}");
    }
}

/// Programs built for OpenCL C 2.0 and 3.0: the structure probe and the tile macro go through
/// the application's own options, results stay identical.
#[test]
fn programs_built_with_newer_opencl_c() {
    for std in ["-cl-std=CL2.0", "-cl-std=CL3.0"] {
        let base = run(
            &Cmd::new([dl_seq().as_os_str(), kernels("particles_aos.cl").as_os_str(), "launches".as_ref()])
                .env("DL_BUILD_OPTIONS", std),
            TIMEOUT,
        );
        if base.code != Some(0) {
            eprintln!("SKIPPED {std}: the platform does not build it\n{}", base.show("plain"));
            continue;
        }
        let (out, stats) = shimmed("launches", &kernels("particles_asta.cl"), &[("DL_BUILD_OPTIONS", std)]);
        assert_same(&base, &out);
        assert_eq!(conversions(&stats), (1, 1), "{std}");
    }
}
