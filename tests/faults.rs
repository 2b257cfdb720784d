//! Injected faults (the `fault-injection` build, `CLAYOUT_FAULT=site`): each OpenCL call clayout
//! makes on its own behalf fails in turn. The application must get the results it gets without
//! clayout, its own calls the same return codes; where no correct path is left (a kernel
//! written for ASTA whose structure cannot be probed), its launch fails with
//! CL_OUT_OF_RESOURCES instead of running on the wrong layout.

mod common;

use common::*;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::OnceLock;

fn dl_seq() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| build_c_in("tests/dl", "dl_seq"))
}

fn cmd(kernels: &str, mode: &str) -> Cmd {
    Cmd::new([dl_seq().as_os_str(), paths().root.join("tests/dl").join(kernels).as_os_str(), mode.as_ref()])
}

fn faulty(mode: &str, site: &str) -> (Output, Value) {
    let dir = scratch(site);
    let json = dir.join("stats.json");
    let out = run(
        &cmd("particles_asta.cl", mode)
            .shimmed_with(fault_lib())
            .env("CLAYOUT_FAULT", site)
            .env("CLAYOUT_STATS", json.as_os_str()),
        TIMEOUT,
    );
    let stats = read_stats(&json, &out);
    (out, stats)
}

/// Device conversions that fail fall back to the host permutation: same results, and the
/// fallback is in the statistics.
#[test]
fn failed_device_conversions_fall_back_to_the_host() {
    for mode in ["launches", "map", "soa", "multi"] {
        let base = run(&cmd("particles_aos.cl", mode), TIMEOUT);
        assert_ok(&base);
        for site in ["build", "scratch", "enqueue", "conversion"] {
            let (out, stats) = faulty(mode, site);
            assert_same(&base, &out);
            let fallbacks = stats["fallbacks"].as_array().unwrap();
            // The scratch buffer is only needed by SoA conversions (done flags).
            if site != "scratch" || mode == "soa" {
                assert!(!fallbacks.is_empty(), "{mode} with {site}: no fallback recorded\n{stats:#}");
            }
        }
    }
}

/// Without its structure's size, a kernel written for ASTA cannot be served: its launch fails
/// with CL_OUT_OF_RESOURCES (-5), nothing is converted, and other calls are unaffected.
#[test]
fn failed_probe_fails_the_asta_launch() {
    let (out, stats) = faulty("launches", "probe");
    assert!(out.stdout.contains("clEnqueueNDRangeKernel") && out.stdout.contains("-5"), "{}", out.show("with faults"));
    assert_eq!(stats["marshal"]["to_device_layout"].as_u64(), Some(0));
}

/// dl_seq's sequence `mode` on the unmodified AoS kernels in the transparent mode under `policy`,
/// with clayout's calls at fault site `site` failing: the plain run's results (`base`), and the
/// statistics.
fn faulted(base: &Output, mode: &str, site: &str, policy: &str) -> Value {
    let json = scratch(&format!("{policy}-{site}")).join("stats.json");
    let out = run(
        &cmd("particles_aos.cl", mode)
            .shimmed_with(fault_lib())
            .env("CLAYOUT_FAULT", site)
            .env("CLAYOUT_POLICY", policy)
            .env("CLAYOUT_ANNOTATIONS", paths().root.join("tests/dl/particles.dl").as_os_str())
            .env("CLAYOUT_STATS", json.as_os_str()),
        TIMEOUT,
    );
    assert_same(base, &out);
    read_stats(&json, &out)
}

/// The transparent mode's own calls failing in turn (its private program's build, the layout
/// probe, the copy's creation, arguments and launch, the conversions): the unmodified AoS kernels
/// run as written, or their copies on correctly converted buffers, with the plain run's results.
#[test]
fn transparent_mode_faults_leave_results_unchanged() {
    for mode in ["launches", "multi", "soa", "twoqueues", "map"] {
        let base = run(&cmd("particles_aos.cl", mode), TIMEOUT);
        assert_ok(&base);
        for site in ["build", "probe", "kernel", "conversion", "marker", "wait", "all"] {
            let stats = faulted(&base, mode, site, "always");
            // A failed marker or wait has a slower safe path that still runs the copies.
            if !["conversion", "marker", "wait"].contains(&site) {
                assert_eq!(stats["launches_rewritten"].as_u64(), Some(0), "{mode} with {site}: {stats:#}");
                assert!(
                    stats["launches_as_written"].as_u64().unwrap() >= 1 || site != "kernel",
                    "{mode} with {site}: {stats:#}"
                );
            }
        }
    }
}

/// The same under the policies that run the staged copies (never, auto): a failed build, copy
/// creation or launch leaves the kernels as written, with the plain run's results.
#[test]
fn staged_copies_faults_leave_results_unchanged() {
    for mode in ["launches", "multi"] {
        let base = run(&cmd("particles_aos.cl", mode), TIMEOUT);
        assert_ok(&base);
        for policy in ["never", "auto"] {
            for site in ["build", "kernel", "all"] {
                let stats = faulted(&base, mode, site, policy);
                assert_eq!(stats["launches_rewritten"].as_u64(), Some(0), "{mode} {policy} {site}: {stats:#}");
                let staged = stats["policy"]["kernels"]["advance"]["launches"]["staged"].as_u64().unwrap_or(0);
                assert_eq!(staged, 0, "{mode} {policy} {site}: a staged copy ran\n{stats:#}");
            }
        }
    }
}
