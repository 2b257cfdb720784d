//! Buffers proved overwritten from the kernel's source (docs/annotations.md, "`out`"), on
//! PoCL: tests/dl/dl_outproof.c ping-pongs two AoS grids through a heat-diffusion kernel that
//! writes every member of its cell of the second grid and never reads it. Under
//! `CLAYOUT_POLICY=always` the second grid's old contents are not converted when the launch's
//! work-items cover its cells; a launch over fewer work-items, or from a global offset, leaves
//! cells unwritten and converts it. Every run prints what the run without clayout prints.

mod common;

use common::*;
use serde_json::Value;

fn dl_outproof() -> &'static std::path::PathBuf {
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| build_c_in("tests/dl", "dl_outproof"))
}

/// `mode` under clayout (always ASTA, tile 32), checked against the plain run: its
/// statistics and its log.
fn shimmed(mode: &str) -> (Value, Output) {
    let cmd = Cmd::new([dl_outproof().as_os_str(), mode.as_ref()]);
    let base = run(&cmd, TIMEOUT);
    assert_ok(&base);
    let json = scratch(&format!("outproof-{mode}")).join("stats.json");
    let c = cmd
        .shimmed()
        .env("CLAYOUT_TILE", "32")
        .env("CLAYOUT_POLICY", "always")
        .env("CLAYOUT_LOG", "debug")
        .env("CLAYOUT_STATS", json.as_os_str());
    let out = run(&c, TIMEOUT);
    assert_same(&base, &out);
    (read_stats(&json, &out), out)
}

/// (conversions to ASTA, conversions back, launches in ASTA, launches as written).
fn counts(s: &Value) -> (u64, u64, u64, u64) {
    let n = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("missing count in {s:#}"));
    let m = &s["marshal"];
    (n(&m["to_device_layout"]), n(&m["to_host_layout"]), n(&s["launches_rewritten"]), n(&s["launches_as_written"]))
}

const SAID: &str = "next is written whole before it is read (proved from the source)";

/// Four launches over the grid rounded up to whole groups: only the first grid is converted
/// (the second is overwritten by the first launch), and both come back at their reads.
#[test]
fn a_grid_the_kernel_overwrites_is_not_converted() {
    let (s, out) = shimmed("steps");
    assert_eq!(counts(&s), (1, 2, 4, 0), "{s:#}\n{}", out.show("clayout"));
    assert!(out.stderr.contains(SAID), "{}", out.show("clayout"));
    assert!(s["fallbacks"].as_array().unwrap().is_empty(), "{s:#}");
}

/// A launch over fewer work-items than cells, or from global id 64, leaves some cells of the
/// second grid as they were: it is converted, and the untouched cells read back unchanged.
#[test]
fn launches_that_leave_cells_unwritten_convert_the_grid() {
    for mode in ["short", "offset"] {
        let (s, out) = shimmed(mode);
        assert_eq!(counts(&s), (2, 2, 1, 0), "{mode}: {s:#}\n{}", out.show("clayout"));
        assert!(!out.stderr.contains(SAID), "{mode}: {}", out.show("clayout"));
    }
}
