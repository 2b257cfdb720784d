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
use clayout::annotation::{parse_side_file, HostLayout, LaunchValues};
use std::collections::BTreeMap;
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
    let side = paths().root.join("samples").join(sample).join(format!("{sample}.dl"));
    let env: Vec<(&str, std::ffi::OsString)> =
        if transparent { vec![("CLAYOUT_ANNOTATIONS", side.into())] } else { Vec::new() };
    run_variant_env(sample, args, extra, clayout, &env)
}

/// Runs one variant with `env` set (under clayout when `clayout`).
fn run_variant_env(
    sample: &str,
    args: &[&str],
    extra: &[&str],
    clayout: bool,
    env: &[(&str, std::ffi::OsString)],
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
    for (k, v) in env {
        cmd = cmd.env(k, v.clone());
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
    let side = paths().root.join("samples").join(sample).join(format!("{sample}.dl"));
    check_annotated(sample, args, extra, side.into());
}

/// The same without the side file, every annotation inferred (CLAYOUT_ANNOTATIONS=auto).
fn check_auto(sample: &str, args: &[&str], extra: &[&str]) {
    check_annotated(sample, args, extra, "auto".into());
}

fn check_annotated(sample: &str, args: &[&str], extra: &[&str], annotations: std::ffi::OsString) {
    let (plain, _) = run_variant(sample, args, extra, false);
    let (out, stats) = run_variant_env(sample, args, extra, true, &[("CLAYOUT_ANNOTATIONS", annotations)]);
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

/// What `clayout-run --suggest` writes for the sample's runs (`extras`: their extra arguments),
/// parsed: per kernel and parameter, its host layout and extent.
fn suggested(
    sample: &str,
    args: &[&str],
    extras: &[&[&str]],
) -> BTreeMap<(String, String), (HostLayout, clayout::annotation::Extent)> {
    let mut all = String::new();
    for extra in extras {
        let file = scratch(&format!("{sample}-suggest")).join("suggest.dl");
        let env = [("CLAYOUT_SUGGEST", file.clone().into()), ("CLAYOUT_POLICY", "never".into())];
        let (plain, _) = run_variant(sample, args, extra, false);
        let (out, _) = run_variant_env(sample, args, extra, true, &env);
        assert_eq!(checksum(&out), checksum(&plain), "{sample} {extra:?}: --suggest changed the results");
        all += &std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{sample}: no suggestion file: {e}"));
    }
    by_param(&all, &format!("{sample}: suggestion\n{all}"))
}

fn by_param(text: &str, what: &str) -> BTreeMap<(String, String), (HostLayout, clayout::annotation::Extent)> {
    let (entries, errors) = parse_side_file(text);
    assert!(errors.is_empty(), "{what}: {errors:?}");
    let mut out = BTreeMap::new();
    for e in entries {
        for p in &e.annotation.annotation.params {
            let key = (e.kernel.clone(), p.name.clone());
            let old = out.insert(key.clone(), (e.annotation.annotation.host, p.extent.clone()));
            assert!(old.is_none(), "{what}: {key:?} annotated twice");
        }
    }
    out
}

/// `--suggest` on the sample writes annotations equivalent to its side file: the same kernels,
/// parameters and host layouts, and extents that evaluate the same.
fn check_suggest(sample: &str, args: &[&str], extras: &[&[&str]]) {
    let got = suggested(sample, args, extras);
    let path = paths().root.join("samples").join(sample).join(format!("{sample}.dl"));
    let want = by_param(&std::fs::read_to_string(&path).unwrap(), &path.display().to_string());
    assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "{sample}: kernels and parameters");
    for (key, (host, extent)) in &want {
        let (got_host, got_extent) = &got[key];
        assert_eq!(got_host, host, "{sample} {key:?}: host layout");
        // Every name either extent reads gets a value of its own.
        let mut values = LaunchValues { global: vec![4096], auto_count: Some(777), ..Default::default() };
        for (i, (name, _)) in extent.args().into_iter().chain(got_extent.args()).enumerate() {
            values.args.entry(name.to_string()).or_insert(3 + 7 * i as u64);
        }
        assert_eq!(got_extent.eval(&values), extent.eval(&values), "{sample} {key:?}: extents {got_extent} / {extent}");
    }
}

#[test]
fn samples_under_inferred_annotations() {
    // Whole tiles: blackscholes is built with -cl-fast-relaxed-math, so on buffers that are not
    // its launches run as written (tests/transparent.rs, `fused_*`).
    check_auto("blackscholes", &["-n", "1024"], &[]);
    check_auto("lbm", &["-x", "13", "-y", "10", "-z", "7"], &[]);
    check_auto("particles", &["-n", "1000"], &[]);
    check_auto("spmv-ell", &["-n", "1000", "-k", "32"], &[]);
    check_auto("spmv-ell", &["-n", "1000", "-k", "32"], &["--soa"]);
}

/// An inferred stride (spmv-ell's `K`) is remembered from one run to the next; a run whose
/// launches have another value runs them as written (same results), and the run after it
/// uses its copy for the new value.
#[test]
fn inferred_stride_held_to_its_value() {
    let cache = scratch("spmv-stride-cache");
    let env = [("CLAYOUT_ANNOTATIONS", "auto".into()), ("CLAYOUT_CACHE_DIR", cache.into())];
    for (k, rewritten) in [("32", true), ("32", true), ("16", false), ("16", true)] {
        let args = ["-n", "1000", "-k", k];
        let (plain, _) = run_variant("spmv-ell", &args, &[], false);
        let (out, stats) = run_variant_env("spmv-ell", &args, &[], true, &env);
        let stats = stats.unwrap();
        assert_eq!(checksum(&out), checksum(&plain), "K = {k}: results differ\nstats: {stats}");
        let in_asta = stats["launches_rewritten"].as_u64().unwrap_or(0);
        assert_eq!(in_asta > 0, rewritten, "K = {k}: launches in ASTA: {in_asta}\nstats: {stats}");
    }
}

#[test]
fn suggestions_match_the_side_files() {
    check_suggest("blackscholes", &["-n", "1000"], &[&[]]);
    check_suggest("lbm", &["-x", "13", "-y", "10", "-z", "7"], &[&[]]);
    check_suggest("particles", &["-n", "1000"], &[&[]]);
    check_suggest("spmv-ell", &["-n", "1000", "-k", "32"], &[&[], &["--soa"]]);
}

#[test]
fn blackscholes_variants_agree() {
    check_sample("blackscholes", &["-n", "1000"], &[&["--asta"]]);
    // Whole tiles: see samples_under_inferred_annotations.
    check_transparent("blackscholes", &["-n", "1024"], &[]);
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

/// lbm's destination grid is overwritten (the kernel writes every population of every cell
/// before reading any): clayout proves it from the kernel's source with the plain side file,
/// as `out` in the side file says it, so its old contents are not converted either way: one
/// conversion to ASTA instead of two, and the same bits, under `always` and under `auto`.
#[test]
fn lbm_destination_annotated_out_needs_no_conversion() {
    let args = ["-x", "13", "-y", "10", "-z", "7"];
    let side = scratch("lbm-out").join("lbm.dl");
    std::fs::write(&side, "lbm_stream_collide: AoS: src[nx * ny * nz], out dst[nx * ny * nz]\n").unwrap();
    let (plain, _) = run_variant("lbm", &args, &[], false);
    let mut conversions = Vec::new();
    for annotations in [paths().root.join("samples/lbm/lbm.dl"), side] {
        for policy in ["always", "auto"] {
            let env = [
                ("CLAYOUT_ANNOTATIONS", annotations.clone().into()),
                ("CLAYOUT_POLICY", policy.into()),
                ("CLAYOUT_LOG", "debug".into()),
            ];
            let (out, stats) = run_variant_env("lbm", &args, &[], true, &env);
            let stats = stats.unwrap();
            assert_eq!(
                checksum(&out),
                checksum(&plain),
                "{policy}\n{}{}stats: {stats}",
                plain.show("plain"),
                out.show("clayout")
            );
            let said = out.stderr.contains("dst is written whole before it is read (proved from the source)");
            assert_eq!(said, annotations.ends_with("samples/lbm/lbm.dl"), "{}", out.show("clayout"));
            if policy == "always" {
                let m = &stats["marshal"];
                conversions.push((m["to_device_layout"].as_u64(), m["to_host_layout"].as_u64()));
            }
        }
    }
    assert_eq!(conversions, [(Some(1), Some(1)), (Some(1), Some(1))]);
}

/// The ASTA copy comes from the build without a narrower last tile when every buffer holds
/// whole tiles (1024 particles), from the general build otherwise (1000): the same bits both
/// ways.
#[test]
fn whole_tiles_take_the_copy_without_the_last_tile_branch() {
    for (n, form) in [("1024", "whole tiles only"), ("1000", "a narrower last tile")] {
        let args = ["-n", n];
        let (plain, _) = run_variant("particles", &args, &[], false);
        let side = paths().root.join("samples/particles/particles.dl");
        let env = [
            ("CLAYOUT_ANNOTATIONS", side.into()),
            ("CLAYOUT_POLICY", "always".into()),
            ("CLAYOUT_TILE", "32".into()),
            ("CLAYOUT_LOG", "debug".into()),
        ];
        let (out, _) = run_variant_env("particles", &args, &[], true, &env);
        assert_eq!(checksum(&out), checksum(&plain), "n = {n}\n{}{}", plain.show("plain"), out.show("clayout"));
        assert!(out.stderr.contains(&format!("ASTA copy built for {form}")), "n = {n}\n{}", out.show("clayout"));
    }
}
