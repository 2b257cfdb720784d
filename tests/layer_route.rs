//! clayout as an OpenCL loader layer (OPENCL_LAYERS), through the real ICD loader of this
//! machine, on PoCL:
//! - the samples and DL-sequence suites (tests/suites/), exactly as tests/samples.rs and
//!   tests/dl_runtime.rs run them preloaded, with clayout loaded as a layer instead;
//! - a C program that dlopen()s libOpenCL.so.1 and calls through dlsym (tests/c/dlopen.c):
//!   preloaded, clayout sees none of its calls; as a layer, every one, with the conversions;
//! - the Rust client built with opencl3's default features (it dlopen()s the loader): as a
//!   layer (and opened in the loader's place through opencl3's OPENCL_DYLIB_PATH), the same
//!   statistics as the client built to link OpenCL has preloaded;
//! - both routes at once (LD_PRELOAD and OPENCL_LAYERS): each call intercepted once;
//! - `clayout-run --layer`.

mod common;

use common::*;
use std::ffi::OsString;
use std::fs;
use std::path::PathBuf;
use std::sync::OnceLock;

const ROUTE: Route = Route::Layer;

#[path = "suites/samples.rs"]
mod samples;

#[path = "suites/dl_runtime.rs"]
mod dl_runtime;

/// tests/c/dlopen.c, built without linking the loader.
fn dlopen_program() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| build_c_linking("tests/c", "dlopen", &["-ldl"]))
}

fn dlopen_cmd(kernels: &str) -> Cmd {
    Cmd::new([dlopen_program().as_os_str(), dl(kernels).as_os_str()])
}

fn conversions(stats: &serde_json::Value) -> (u64, u64) {
    let m = &stats["marshal"];
    (m["to_device_layout"].as_u64().unwrap_or(0), m["to_host_layout"].as_u64().unwrap_or(0))
}

/// Runs `cmd` under `route` with CLAYOUT_STATS, checks the output against `base`, the route
/// the statistics name, and every `calls` line of the program (`exact`: no other call either).
fn run_under(route: Route, tag: &str, cmd: &Cmd, base: &Output, exact: bool) -> (Output, serde_json::Value) {
    let json = scratch(tag).join("stats.json");
    let out = run(&cmd.under(route).env("CLAYOUT_STATS", json.as_os_str()), TIMEOUT);
    assert_same(base, &out);
    let stats = read_stats_under(route, &json, &out);
    check_calls(&out, &stats, exact);
    (out, stats)
}

#[test]
fn dlopen_program_is_reached_through_the_layer_only() {
    let base = run(&dlopen_cmd("particles_aos.cl"), TIMEOUT);
    assert_ok(&base);

    // Preloaded, clayout sees no call: dlsym on the loader's handle never finds it. It writes
    // no statistics (a process that made no OpenCL call through it) and says nothing.
    let json = scratch("dlopen-preload").join("stats.json");
    let out = run(&dlopen_cmd("particles_aos.cl").shimmed().env("CLAYOUT_STATS", json.as_os_str()), TIMEOUT);
    assert_same(&base, &out);
    assert!(!json.exists(), "LD_PRELOAD intercepted a dlopen()ing program?\n{}", out.show("preloaded"));
    assert!(out.shim_lines().is_empty(), "{}", out.show("preloaded"));

    // As a layer, with the kernel written for ASTA: clayout sees every call, converts the
    // buffer before the first launch and back before the read, and the bits are the plain
    // AoS program's.
    let (out, stats) = run_under(Route::Layer, "dlopen-layer", &dlopen_cmd("particles_asta.cl"), &base, true);
    assert_eq!(conversions(&stats), (1, 1), "{stats:#}\n{}", out.show("layer"));
    assert_eq!(stats["fallbacks"].as_array().map(|a| a.len()), Some(0), "{stats:#}");
    assert_eq!(
        (stats["contexts_released"].as_u64(), stats["contexts_left_referenced"].as_u64()),
        (Some(1), Some(0)),
        "{stats:#}"
    );
}

#[test]
fn rust_client_with_opencl3_default_features() {
    // The same program twice: linked (opencl3 "static", preloaded as in tests/shim.rs) and with
    // opencl3's default features ("dynamic": it dlopen()s the loader), in its own target dir.
    let linked = Cmd::new([build_rust_client("rust-client", &[])]);
    let dynamic =
        Cmd::new([build_rust_client("rust-client-dlopen", &["--no-default-features", "--features", "dlopen"])]);
    let base = run(&linked, TIMEOUT);
    assert_ok(&base);
    let dyn_base = run(&dynamic, TIMEOUT);
    assert_same(&base, &dyn_base);

    let (_, preloaded) = run_under(Route::Preload, "rust-linked", &linked, &base, false);
    let (out, layered) = run_under(Route::Layer, "rust-dlopen", &dynamic, &base, false);
    assert_eq!(
        stats_calls(&layered),
        stats_calls(&preloaded),
        "the dlopen()ing client as a layer must show the calls the linked one shows preloaded\n{}",
        out.show("layer")
    );
    for key in ["marshal", "fallbacks", "rewritten_kernels"] {
        assert_eq!(layered[key], preloaded[key], "{key}");
    }

    // Where no loader takes layers: opencl3 opens the library OPENCL_DYLIB_PATH names first,
    // and clayout, opened that way, finds the system loader behind it (docs/layers.md).
    let json = scratch("rust-dylib-path").join("stats.json");
    let out = run(
        &dynamic.clone().env("OPENCL_DYLIB_PATH", paths().lib.as_os_str()).env("CLAYOUT_STATS", json.as_os_str()),
        TIMEOUT,
    );
    assert_same(&base, &out);
    let opened = read_stats(&json, &out);
    assert_eq!(stats_calls(&opened), stats_calls(&preloaded), "{}", out.show("OPENCL_DYLIB_PATH"));
}

#[test]
fn both_routes_intercept_each_call_once() {
    // Exact counts of every entry point: a call intercepted twice would count twice.
    let basic = Cmd::new([build_c("basic")]);
    let base = run(&basic, TIMEOUT);
    assert_ok(&base);
    run_under(Route::Both, "both-basic", &basic, &base, true);

    // A conversion made once, not once per route.
    let plain = run(&seq("launches"), TIMEOUT);
    assert_ok(&plain);
    let cmd = Cmd::new([dl_seq().as_os_str(), dl("particles_asta.cl").as_os_str(), "launches".as_ref()]);
    let json = scratch("both-seq").join("stats.json");
    let out = run(&cmd.under(Route::Both).env("CLAYOUT_STATS", json.as_os_str()), TIMEOUT);
    assert_same(&plain, &out);
    let stats = read_stats_under(Route::Both, &json, &out);
    assert_eq!(conversions(&stats), (1, 1), "{stats:#}");

    // Many threads calling at once while the routes switch.
    let threads = build_c("threads");
    let cmd = Cmd::new([threads.into_os_string(), "100".into()]);
    let base = run(&cmd, TIMEOUT);
    assert_ok(&base);
    run_under(Route::Both, "both-threads", &cmd, &base, true);
}

#[test]
fn launcher_sets_up_the_layer() {
    let launcher = paths().root.join("ld_preload/clayout-run");
    let base = run(&dlopen_cmd("particles_aos.cl"), TIMEOUT);
    assert_ok(&base);
    for (flags, route) in [(&["--layer"][..], Route::Layer), (&["--layer", "--preload"][..], Route::Both)] {
        let json = scratch("launcher-layer").join("stats.json");
        let mut argv: Vec<OsString> = vec![launcher.clone().into()];
        argv.extend(flags.iter().map(OsString::from));
        argv.push(format!("--stats={}", json.display()).into());
        argv.push("--".into());
        argv.extend(dlopen_cmd("particles_asta.cl").argv);
        // CLAYOUT_LIB points the launcher at the library under test.
        let out = run(&Cmd::new(argv).env("CLAYOUT_LIB", paths().lib.as_os_str()), TIMEOUT);
        assert_same(&base, &out);
        let stats = read_stats_under(route, &json, &out);
        check_calls(&out, &stats, true);
        assert_eq!(conversions(&stats), (1, 1), "{flags:?}: {stats:#}");
        let _ = fs::remove_file(&json);
    }
}

/// The loader's side as the current Khronos loader plays it (ocl-icd 2.3.1 here calls only
/// clInitLayer): clInitLayerWithProperties with a property list, a target table of fewer
/// entries than clayout knows (ending at an unreadable page), then clDeinitLayer, after which
/// clayout must answer instead of calling into a driver that may be gone.
#[test]
fn khronos_style_init_with_properties_short_table_and_deinit() {
    let bin = build_c_linking("tests/c", "layer_host", &["-lOpenCL", "-ldl"]);
    let checksum = |o: &Output| o.stdout.lines().find(|l| l.starts_with("after 10 launches")).map(str::to_string);
    let plain = run(&Cmd::new([bin.as_os_str(), dl("particles_aos.cl").as_os_str(), "plain".as_ref()]), TIMEOUT);
    assert_ok(&plain);
    // 124 entries: up to OpenCL 2.0's clCreateCommandQueueWithProperties, short of the SVM
    // block and of OpenCL 2.1 to 3.0.
    let json = scratch("layer-host").join("stats.json");
    let cmd = Cmd::new([bin.as_os_str(), dl("particles_asta.cl").as_os_str(), paths().lib.as_os_str(), "124".as_ref()])
        .env("CLAYOUT_STATS", json.as_os_str());
    let out = run(&cmd, TIMEOUT);
    assert!(out.code == Some(0) && checksum(&out).is_some(), "{}", out.show("layer host"));
    assert_eq!(checksum(&out), checksum(&plain), "{}{}", plain.show("plain"), out.show("layer host"));
    assert!(
        out.stdout.contains("after clDeinitLayer: clGetDeviceIDs answers -59"),
        "after clDeinitLayer a call must answer CL_INVALID_OPERATION\n{}",
        out.show("layer host")
    );
    let stats = read_stats_under(Route::Layer, &json, &out);
    assert!(stats["real_library"].as_str().unwrap_or("").contains("(124 dispatch entries)"), "{stats:#}");
    assert_eq!(conversions(&stats), (1, 1), "{stats:#}");
}
