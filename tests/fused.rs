//! Fused conversions on PoCL (docs/cost-model.md, "Fused conversions"): under
//! `CLAYOUT_POLICY=always`, a launch of a rewritten kernel with a staged copy, on buffers in
//! host layout that it covers in whole work-groups of whole tiles, converts them to ASTA as it
//! runs (tests/dl/dl_fused.c, kernels annotated in its source). Every run must print what the
//! run without clayout prints; the statistics must show the fused launch and one conversion
//! fewer than with `CLAYOUT_FUSE=0`, and no fusion where one of its conditions fails.

mod common;

use common::*;
use serde_json::Value;

fn dl_fused() -> &'static std::path::PathBuf {
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| build_c_in("tests/dl", "dl_fused"))
}

fn cmd(mode: &str, n: u32) -> Cmd {
    Cmd::new([dl_fused().as_os_str(), mode.as_ref(), n.to_string().as_ref()])
}

/// `mode` at `n` structures under clayout (tile 32, and `env`), checked against the plain run;
/// its statistics.
fn shimmed(mode: &str, n: u32, env: &[(&str, &str)]) -> Value {
    let base = run(&cmd(mode, n), TIMEOUT);
    assert_ok(&base);
    let json = scratch(&format!("fused-{mode}")).join("stats.json");
    let mut c = cmd(mode, n).shimmed().env("CLAYOUT_TILE", "32").env("CLAYOUT_STATS", json.as_os_str());
    for (k, v) in env {
        c = c.env(k, v);
    }
    let out = run(&c, TIMEOUT);
    assert_same(&base, &out);
    read_stats(&json, &out)
}

/// (conversions to ASTA, conversions back, conversions fused with a launch, launches in ASTA,
/// launches as written).
fn counts(s: &Value) -> (u64, u64, u64, u64, u64) {
    let n = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("missing count in {s:#}"));
    let m = &s["marshal"];
    (
        n(&m["to_device_layout"]),
        n(&m["to_host_layout"]),
        n(&m["fused"]),
        n(&s["launches_rewritten"]),
        n(&s["launches_as_written"]),
    )
}

/// The first launch after each write or read converts the buffers itself: a work-group size
/// the implementation picks (clayout's: 256 for 4096 structures, 32 for 4000) or the
/// application's (64); a buffer the kernel only reads (`const`) comes out in ASTA too, and back
/// at its read. The same runs with `CLAYOUT_FUSE=0` convert instead, exactly once more per
/// fused buffer.
#[test]
fn a_launch_converts_its_buffers_as_it_runs() {
    for (mode, n) in [("launches", 4096), ("launches", 4000), ("local64", 4096), ("const", 4096)] {
        let fused = shimmed(mode, n, &[]);
        let plain = shimmed(mode, n, &[("CLAYOUT_FUSE", "0")]);
        let (f, p) = (counts(&fused), counts(&plain));
        assert_eq!(f.2, 2, "{mode}: two fused conversions\n{fused:#}");
        assert_eq!((f.0, p.0, p.2), (0, 2, 0), "{mode}: fused {fused:#}\nnot fused {plain:#}");
        assert_eq!((f.1, f.3, f.4), (p.1, p.3, p.4), "{mode}: only the conversions differ\n{fused:#}\n{plain:#}");
        assert_eq!(f.4, 0, "{mode}: {fused:#}");
        assert!(fused["fallbacks"].as_array().unwrap().is_empty(), "{mode}: {fused:#}");
    }
}

/// Where a condition of the fusion fails, the launch converts first, as without it: the extent
/// not a multiple of the work-group size, a work-group not a multiple of the tile, one buffer
/// bound to two staged arguments, a launch that covers half the extent or starts at global id
/// 64, and (with two queues) a launch one of whose buffers is in ASTA already.
#[test]
fn launches_that_must_not_fuse_convert_first() {
    for (mode, n, env, want) in [
        ("local64", 4000, &[][..], (2, 2)),
        ("local64", 4096, &[("CLAYOUT_TILE", "128")][..], (2, 2)),
        ("alias", 4096, &[][..], (1, 1)),
        ("short", 4096, &[][..], (1, 1)),
        ("offset", 4096, &[][..], (1, 1)),
    ] {
        let s = shimmed(mode, n, env);
        let c = counts(&s);
        assert_eq!((c.0, c.1, c.2, c.4), (want.0, want.1, 0, 0), "{mode} {n} {env:?}: {s:#}");
    }
    // Two queues read `a` unordered: the first launch converts `a` and `b1` as it runs, the
    // second finds `a` in ASTA (it waits for the first) and converts `b2`.
    let s = shimmed("twoqueues", 4096, &[]);
    assert_eq!(counts(&s), (1, 3, 2, 6, 0), "{s:#}");
}

/// A launch waiting for a user event the application has not set may never run, and would
/// leave the bytes in AoS: it is not fused (nor converted: it runs as written); the launches
/// after it are.
#[test]
fn a_launch_waiting_for_the_application_is_not_fused() {
    let s = shimmed("user", 4096, &[]);
    assert_eq!(counts(&s), (0, 1, 1, 2, 1), "{s:#}");
    let s = shimmed("user", 4096, &[("CLAYOUT_FUSE", "0")]);
    assert_eq!(counts(&s), (1, 1, 0, 2, 1), "{s:#}");
}
