//! The sample applications (samples/) at a tiny size, 2 iterations: the plain AoS program, its
//! hand-written SoA peer and its hand-written ASTA kernel under clayout must print the same
//! checksum (identical bits), and clayout must have converted to ASTA for the ASTA run
//! (`marshal.to_device_layout >= 1` in its statistics). The unmodified AoS program under clayout
//! with the sample's side file (the transparent mode) must print the same checksum too. The sizes are not multiples of the tile,
//! so the ASTA layout's partial last tile is exercised too.
//!
//! The samples are built with `make -C samples OUT=<target>/samples`; the shim is
//! `<target>/<profile>/libclayout.so`, built fresh by tests/common (as for tests/shim.rs), and
//! comes in the way the including test crate's `ROUTE` says (tests/samples.rs: preloaded;
//! tests/layer_route.rs: as a loader layer). Every run is killed after 60 s. `CLAYOUT_TEST_PLATFORM=NAME` picks the OpenCL platform (default:
//! the first one).

use crate::common::*;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// `<target>/samples`, built once.
fn samples_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let target = paths().profile_dir.parent().expect("target dir").to_path_buf();
        let out = target.join("samples");
        let res = Command::new("make")
            .arg("-s")
            .arg("-C")
            .arg(paths().root.join("samples"))
            .arg(format!("OUT={}", out.display()))
            .output()
            .expect("cannot run make");
        assert!(
            res.status.success(),
            "make -C samples failed:\n{}{}",
            String::from_utf8_lossy(&res.stdout),
            String::from_utf8_lossy(&res.stderr)
        );
        out
    })
}

fn checksum(out: &Output) -> Option<&str> {
    out.stdout.lines().find_map(|l| l.strip_prefix("checksum: ")).and_then(|l| l.split_whitespace().next())
}

/// Runs one variant; `clayout` runs it under the shim with statistics, returned as JSON;
/// `transparent` also gives the shim the sample's side file of annotations.
fn run_variant(sample: &str, args: &[&str], extra: &[&str], clayout: bool) -> (Output, Option<serde_json::Value>) {
    run_variant_with(sample, args, extra, clayout, false)
}

fn run_variant_with(
    sample: &str,
    args: &[&str],
    extra: &[&str],
    clayout: bool,
    transparent: bool,
) -> (Output, Option<serde_json::Value>) {
    let bin = samples_dir().join(sample).join(sample);
    let mut argv: Vec<std::ffi::OsString> = vec![bin.into()];
    argv.extend(args.iter().chain(extra).map(|a| a.into()));
    argv.extend(["-i".into(), "2".into()]);
    if let Ok(p) = std::env::var("CLAYOUT_TEST_PLATFORM") {
        argv.extend(["--platform".into(), p.into()]);
    }
    let mut cmd = Cmd::new(argv);
    let json = scratch(sample).join("stats.json");
    if clayout {
        cmd = cmd.under(crate::ROUTE).env("CLAYOUT_STATS", json.as_os_str());
    }
    if transparent {
        cmd = cmd.env(
            "CLAYOUT_ANNOTATIONS",
            paths().root.join("samples").join(sample).join(format!("{sample}.dl")).as_os_str(),
        );
    }
    let out = run(&cmd, RUN_TIMEOUT);
    assert!(
        out.code == Some(0) && !out.timed_out && checksum(&out).is_some(),
        "{sample} {extra:?} failed{}\n{}",
        if clayout { " under clayout" } else { "" },
        out.show(if clayout { "with clayout" } else { "plain" })
    );
    let stats = clayout.then(|| read_stats_under(crate::ROUTE, &json, &out));
    (out, stats)
}

/// The unmodified AoS program (or with `extra`) under clayout with its side file: the
/// transparent mode rewrites its kernels, converts, and must compute the same bits.
fn check_transparent(sample: &str, args: &[&str], extra: &[&str]) {
    let (plain, _) = run_variant(sample, args, extra, false);
    let (out, stats) = run_variant_with(sample, args, extra, true, true);
    let stats = stats.unwrap();
    assert_eq!(
        checksum(&out),
        checksum(&plain),
        "{sample} {extra:?}: the transparent mode changed the results\n{}{}stats: {stats}",
        plain.show("plain"),
        out.show("transparent")
    );
    for key in ["rewritten_kernels", "launches_rewritten"] {
        assert!(
            stats[key].as_u64().unwrap_or(0) >= 1,
            "{sample} {extra:?}: {key} is 0\nstats: {stats}\n{}",
            out.show("transparent")
        );
    }
    assert_eq!(stats["launches_as_written"].as_u64(), Some(0), "{sample} {extra:?}: stats: {stats}");
    assert_eq!(
        stats["fallbacks"].as_array().map(|a| a.len()),
        Some(0),
        "{sample} {extra:?}: clayout fell back\nstats: {stats}"
    );
}

fn check_sample(sample: &str, args: &[&str], asta_variants: &[&[&str]]) {
    let (aos, _) = run_variant(sample, args, &[], false);
    let (soa, _) = run_variant(sample, args, &["--soa"], false);
    let want = checksum(&aos).unwrap().to_string();
    assert_eq!(
        checksum(&soa),
        Some(want.as_str()),
        "{sample}: the SoA peer computes different bits from the AoS program\n{}{}",
        aos.show("aos"),
        soa.show("soa")
    );
    for extra in asta_variants {
        let (asta, stats) = run_variant(sample, args, extra, true);
        let stats = stats.unwrap();
        assert_eq!(
            checksum(&asta),
            Some(want.as_str()),
            "{sample} {extra:?}: the ASTA kernel under clayout computes different bits from the AoS program\n{}{}stats: {stats}",
            aos.show("aos"),
            asta.show("asta under clayout")
        );
        let to_device = stats["marshal"]["to_device_layout"].as_u64().unwrap_or(0);
        assert!(
            to_device >= 1,
            "{sample} {extra:?}: clayout converted nothing to ASTA (to_device_layout = {to_device})\nstats: {stats}\n{}",
            asta.show("asta under clayout")
        );
        let fallbacks = stats["fallbacks"].as_array().map(|a| a.len()).unwrap_or(0);
        assert_eq!(fallbacks, 0, "{sample} {extra:?}: clayout fell back\nstats: {stats}");
    }
}

#[test]
fn blackscholes_variants_agree() {
    check_sample("blackscholes", &["-n", "1000"], &[&["--asta"]]);
    check_transparent("blackscholes", &["-n", "1000"], &[]);
}

#[test]
fn lbm_variants_agree() {
    check_sample("lbm", &["-x", "13", "-y", "10", "-z", "7"], &[&["--asta"]]);
    check_transparent("lbm", &["-x", "13", "-y", "10", "-z", "7"], &[]);
}

#[test]
fn particles_variants_agree() {
    check_sample("particles", &["-n", "1000"], &[&["--asta"]]);
    check_transparent("particles", &["-n", "1000"], &[]);
}

#[test]
fn spmv_ell_variants_agree() {
    // Row-major host layout (AoS(32) -> ASTA) and column-major (SoA(32) -> ASTA).
    check_sample("spmv-ell", &["-n", "1000", "-k", "32"], &[&["--asta"], &["--asta", "--soa"]]);
    check_transparent("spmv-ell", &["-n", "1000", "-k", "32"], &[]);
    check_transparent("spmv-ell", &["-n", "1000", "-k", "32"], &["--soa"]);
}
