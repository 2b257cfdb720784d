//! The on-disk cache end to end (docs/cache.md): tests/dl/dl_seq.c converts a buffer to ASTA and
//! back under the shim, so clayout builds two conversion programs and keeps their binaries as
//! `conv-*.bin` records. Whatever state the cache is in (empty, warm, damaged, stale, off,
//! unwritable), the program's output must be the plain run's, and the `cache` statistics must
//! say what happened.

mod common;

use common::*;
use serde_json::Value;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const MODE: &str = "launches";

fn dl_seq() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| build_c_in("tests/dl", "dl_seq"))
}

fn program(kernels: &str) -> Cmd {
    Cmd::new([dl_seq().as_os_str(), paths().root.join("tests/dl").join(kernels).as_os_str(), MODE.as_ref()])
}

/// The run without the shim, with the AoS kernels: what every shimmed run must print.
fn plain() -> &'static Output {
    static OUT: OnceLock<Output> = OnceLock::new();
    OUT.get_or_init(|| {
        let out = run(&program("particles_aos.cl"), TIMEOUT);
        assert_ok(&out);
        out
    })
}

/// Runs the ASTA kernels under the shim with the cache at `cache` (a path, `off`, or empty for
/// the default directory) and the extra environment; checks the output against the plain run.
fn shimmed(tag: &str, cache: impl Into<OsString>, env: &[(&str, OsString)]) -> (Output, Value) {
    let json = scratch(tag).join("stats.json");
    let mut cmd =
        program("particles_asta.cl").shimmed().env("CLAYOUT_STATS", json.as_os_str()).env("CLAYOUT_CACHE_DIR", cache);
    for (k, v) in env {
        cmd = cmd.env(k, v.clone());
    }
    let out = run(&cmd, TIMEOUT);
    assert_same(plain(), &out);
    let stats = read_stats(&json, &out);
    assert_eq!(stats["fallbacks"].as_array().map(Vec::len), Some(0), "{tag}: {stats:#}");
    (out, stats)
}

/// The `cache` statistics: hits, misses, writes, ignored_corrupt, ignored_stale.
fn counts(stats: &Value) -> [u64; 5] {
    ["hits", "misses", "writes", "ignored_corrupt", "ignored_stale"]
        .map(|k| stats["cache"][k].as_u64().unwrap_or_else(|| panic!("no cache.{k} in {stats:#}")))
}

fn records(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> =
        fs::read_dir(dir).map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default();
    v.retain(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("conv-") && n.ends_with(".bin")));
    v.sort();
    v
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A cache directory filled by one cold run, and its records.
fn warm_cache(tag: &str) -> (PathBuf, Vec<PathBuf>) {
    let dir = scratch(tag).join("cache");
    let (out, stats) = shimmed(tag, &dir, &[]);
    let files = records(&dir);
    let n = files.len() as u64;
    assert!(n >= 2, "{tag}: a conversion there and back builds two programs, cached {files:?}\n{}", out.show("cold"));
    assert_eq!(counts(&stats), [0, n, n, 0, 0], "{tag}: cold run\n{stats:#}");
    (dir, files)
}

/// A run on `dir` that finds every record whole: the rewritten files are good again.
fn assert_all_hit(tag: &str, dir: &Path, n: u64) {
    let (out, stats) = shimmed(tag, dir, &[]);
    assert_eq!(counts(&stats), [n, 0, 0, 0, 0], "{tag}: warm run\n{stats:#}\n{}", out.show("warm"));
}

fn lines_with<'a>(out: &'a Output, what: &str) -> Vec<&'a str> {
    out.shim_lines().into_iter().filter(|l| l.contains(what)).collect()
}

#[test]
fn first_run_writes_the_binaries_and_the_second_loads_them() {
    let (dir, files) = warm_cache("warm");
    let n = files.len() as u64;
    for f in &files {
        let (header, _) = read_record(f);
        assert!(header.starts_with("CLAYOUT-CACHE 1 ") && header.contains("; clayout "), "{}: {header}", f.display());
    }
    let (out, stats) = shimmed("warm2", &dir, &[]);
    assert_eq!(counts(&stats), [n, 0, 0, 0, 0], "{stats:#}");
    assert!(out.shim_lines().is_empty(), "{}", out.show("warm"));
    assert_eq!(records(&dir), files, "a warm run adds no record");
}

#[test]
fn corrupt_files_are_ignored_and_rewritten() {
    let (dir, files) = warm_cache("corrupt");
    let n = files.len() as u64;
    for (damage, how) in [("truncated", 0), ("flipped", 1)] {
        for f in &files {
            let (header, mut payload) = read_record(f);
            if how == 0 {
                payload.truncate(payload.len() / 2);
            } else {
                let mid = payload.len() / 2;
                payload[mid] ^= 0x01;
            }
            write_record(f, &header, &payload);
        }
        let (out, stats) = shimmed(damage, &dir, &[]);
        assert_eq!(counts(&stats), [0, 0, n, n, 0], "{damage}: {stats:#}");
        let warned = lines_with(&out, "ignoring corrupt file");
        assert_eq!(warned.len() as u64, n, "{damage}: one warning per file\n{}", out.show("damaged"));
        assert!(
            warned
                .iter()
                .all(|l| l.starts_with("clayout: warn:") && files.iter().any(|f| l.contains(f.to_str().unwrap()))),
            "{warned:?}"
        );
        assert_all_hit(damage, &dir, n);
    }
}

#[test]
fn stale_files_are_ignored_and_rewritten() {
    let (dir, files) = warm_cache("stale");
    let n = files.len() as u64;
    let info = [("CLAYOUT_LOG", OsString::from("info"))];
    // Written by another clayout: the key in the header differs, the file is otherwise whole
    // (the checksum covers the payload only).
    for f in &files {
        let (header, payload) = read_record(f);
        write_record(f, &header.replace("; clayout ", "; clayout 0.0.0-older "), &payload);
    }
    let (out, stats) = shimmed("stale-key", &dir, &info);
    assert_eq!(counts(&stats), [0, 0, n, 0, n], "{stats:#}");
    assert_eq!(lines_with(&out, "ignoring stale file").len() as u64, n, "{}", out.show("stale key"));
    assert_all_hit("stale-key", &dir, n);
    // A whole record under another record's name (as a hash collision would leave it).
    let contents: Vec<Vec<u8>> = files.iter().map(|f| fs::read(f).unwrap()).collect();
    for (i, f) in files.iter().enumerate() {
        fs::write(f, &contents[(i + 1) % files.len()]).unwrap();
    }
    let (out, stats) = shimmed("stale-name", &dir, &info);
    assert_eq!(counts(&stats), [0, 0, n, 0, n], "{stats:#}");
    let lines = lines_with(&out, "ignoring stale file");
    assert!(
        lines.len() as u64 == n && lines.iter().all(|l| l.contains("written for another key")),
        "{}",
        out.show("swapped")
    );
    assert_all_hit("stale-name", &dir, n);
}

/// PoCL keeps its own compiler cache under the same home directories; pointing it at where it
/// already is keeps these runs from compiling everything cold.
fn pocl_cache() -> Option<(&'static str, OsString)> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(("POCL_CACHE_DIR", base.join("pocl").into_os_string()))
}

/// Runs with HOME and XDG_CACHE_HOME in a fresh directory, which it returns.
fn with_homes(tag: &str, cache: &str, xdg: bool) -> (PathBuf, Value) {
    let root = scratch(tag).join("homes");
    let (home, xdg_dir) = (root.join("home"), root.join("xdg"));
    fs::create_dir_all(&home).unwrap();
    let mut env = vec![
        ("HOME", home.into_os_string()),
        ("XDG_CACHE_HOME", if xdg { xdg_dir.into_os_string() } else { OsString::new() }),
    ];
    env.extend(pocl_cache());
    let (_, stats) = shimmed(tag, cache, &env);
    (root, stats)
}

#[test]
fn off_writes_nothing() {
    let (root, stats) = with_homes("off", "off", true);
    assert_eq!(counts(&stats), [0; 5], "{stats:#}");
    assert_eq!(files_under(&root), Vec::<PathBuf>::new());
}

#[test]
fn default_directory_is_under_the_user_cache() {
    let (root, stats) = with_homes("xdg", "", true);
    assert!(counts(&stats)[2] >= 2, "{stats:#}");
    assert_eq!(records(&root.join("xdg/clayout")).len() as u64, counts(&stats)[2]);
    // A relative or empty XDG_CACHE_HOME is ignored, as its specification says.
    let (root, stats) = with_homes("home", "", false);
    assert_eq!(records(&root.join("home/.cache/clayout")).len() as u64, counts(&stats)[2]);
}

#[test]
fn unwritable_directory_changes_nothing() {
    let dir = scratch("unwritable");
    let file = dir.join("a-file");
    fs::write(&file, "a regular file, so nothing can be created under it\n").unwrap();
    let (out, stats) = shimmed("unwritable", file.join("cache"), &[]);
    let [hits, misses, writes, corrupt, stale] = counts(&stats);
    assert!(misses >= 2 && [hits, writes, corrupt, stale] == [0; 4], "{stats:#}");
    assert!(
        out.shim_lines().is_empty(),
        "failures to write the cache are debug-level only\n{}",
        out.show("unwritable")
    );
}

/// A whole record whose binary the driver refuses (as a driver update that kept its version
/// string might): ignored as stale, the program built from source, the record replaced.
#[test]
fn refused_binary_is_rebuilt_from_source() {
    let (dir, files) = warm_cache("refused");
    let n = files.len() as u64;
    let payload = b"not a binary any driver takes".repeat(10);
    for f in &files {
        replace_payload(f, &payload);
    }
    let (out, stats) = shimmed("refused", &dir, &[("CLAYOUT_LOG", OsString::from("info"))]);
    assert_eq!(counts(&stats), [0, 0, n, 0, n], "{stats:#}");
    let lines = lines_with(&out, "ignoring stale file");
    assert!(lines.len() as u64 == n && lines.iter().all(|l| l.contains("binary")), "{}", out.show("refused"));
    assert_all_hit("refused", &dir, n);
}

/// A driver that keeps a compile cache of its own (NVIDIA's; here PoCL's stands in for it,
/// through `CLAYOUT_FAULT=driver-cache`): a program clayout built before is built again from
/// source, which that cache answers, rather than loaded from clayout's binary. The results are
/// the same, and the records are neither read nor replaced.
#[test]
fn a_driver_with_its_own_cache_builds_again_what_clayout_built_before() {
    let (dir, files) = warm_cache("driver-cache");
    let before: Vec<Vec<u8>> = files.iter().map(|f| fs::read(f).unwrap()).collect();
    let json = scratch("driver-cache-warm").join("stats.json");
    let cmd = program("particles_asta.cl")
        .shimmed_with(fault_lib())
        .env("CLAYOUT_FAULT", "driver-cache")
        .env("CLAYOUT_LOG", "debug")
        .env("CLAYOUT_STATS", json.as_os_str())
        .env("CLAYOUT_CACHE_DIR", &dir);
    let out = run(&cmd, TIMEOUT);
    assert_same(plain(), &out);
    let stats = read_stats(&json, &out);
    assert_eq!(counts(&stats), [0; 5], "{stats:#}");
    let rebuilt = lines_with(&out, "program built again from source");
    assert_eq!(rebuilt.len(), files.len(), "{}", out.show("driver cache"));
    let after: Vec<Vec<u8>> = files.iter().map(|f| fs::read(f).unwrap()).collect();
    assert!(before == after, "the records were rewritten");
}

/// PoCL with its kernel cache off aborts ("Final linking of kernel ... failed") when two
/// processes load the same program binary at once, as processes sharing clayout's cache do; so
/// under `POCL_KERNEL_CACHE=0` clayout neither loads nor keeps binaries on PoCL, even with a
/// warm cache: every program is built from source, and the results are the same.
#[test]
fn pocl_without_its_kernel_cache_gets_no_binary() {
    let (dir, files) = warm_cache("pocl-nocache");
    let (_, stats) = shimmed("pocl-nocache2", &dir, &[("POCL_KERNEL_CACHE", "0".into())]);
    assert_eq!(counts(&stats)[0], 0, "no binary loaded: {stats:#}");
    assert_eq!(counts(&stats)[2], 0, "no binary kept: {stats:#}");
    assert_eq!(records(&dir), files);
}
