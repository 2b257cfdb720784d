//! Chunked reads on PoCL (CLAYOUT_CHUNKED_READS, docs/results.md "Conversions beside
//! transfers"): a read of a buffer in ASTA, converted back and read chunk by chunk, must give
//! the application what the run without clayout reads, whatever its queue, wait list and
//! events; under `auto` only reads into pinned memory are chunked. tests/dl/dl_chunked.c runs
//! the host sequences under `CLAYOUT_POLICY=always`.

mod common;

use common::*;
use serde_json::Value;

fn dl_chunked() -> &'static std::path::PathBuf {
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| build_c_in("tests/dl", "dl_chunked"))
}

fn cmd(mode: &str, n: u32, extra: u32) -> Cmd {
    Cmd::new([dl_chunked().as_os_str(), mode.as_ref(), n.to_string().as_ref(), extra.to_string().as_ref()])
}

/// `mode` under clayout (`lib`, `always`, tile 32, `env`), checked line for line against the
/// plain run; its statistics.
fn shimmed_with(lib: Option<&std::path::Path>, mode: &str, n: u32, extra: u32, env: &[(&str, &str)]) -> Value {
    let base = run(&cmd(mode, n, extra), TIMEOUT);
    assert_ok(&base);
    let tag = format!("chunked-{mode}-{n}-{}", env.iter().map(|(k, v)| format!("{k}{v}")).collect::<String>());
    let json = scratch(&tag).join("stats.json");
    let c = match lib {
        Some(l) => cmd(mode, n, extra).shimmed_with(l),
        None => cmd(mode, n, extra).shimmed(),
    };
    let mut c = c.env("CLAYOUT_POLICY", "always").env("CLAYOUT_TILE", "32").env("CLAYOUT_STATS", json.as_os_str());
    for (k, v) in env {
        c = c.env(k, v);
    }
    let out = run(&c, TIMEOUT);
    assert_same(&base, &out);
    read_stats(&json, &out)
}

fn shimmed(mode: &str, n: u32, extra: u32, env: &[(&str, &str)]) -> Value {
    shimmed_with(None, mode, n, extra, env)
}

fn chunked_reads(s: &Value) -> u64 {
    s["marshal"]["chunked_reads"].as_u64().unwrap_or_else(|| panic!("no chunked_reads in {s:#}"))
}

fn to_host(s: &Value) -> u64 {
    s["marshal"]["to_host_layout"].as_u64().unwrap_or_else(|| panic!("no to_host_layout in {s:#}"))
}

/// Every host sequence, each read forced into 4 chunks: 4000 bodies (not a whole number of
/// tiles: the last chunk holds the partial tile), with and without bytes past the annotated
/// structures. A read whose gate fails ends as it does without clayout (PoCL aborted the
/// process when a piece the failure ran through had been released: the pieces are kept until
/// the last completes). Every whole read of the converted buffer is chunked and counts as one
/// conversion back; reads of a part take the ordinary path.
#[test]
fn every_sequence_reads_what_it_reads_without_clayout() {
    let modes = [("pinned", 3), ("malloc", 3), ("nonblocking", 2), ("ooo", 2), ("userevent", 1), ("failedgate", 2)];
    for (mode, whole_reads) in modes {
        for extra in [0, 52] {
            let s = shimmed(mode, 4000, extra, &[("CLAYOUT_CHUNKED_READS", "4")]);
            assert_eq!(chunked_reads(&s), whole_reads, "{mode}, {extra} bytes past the bodies: {s:#}");
            assert_eq!(to_host(&s), whole_reads, "{mode}: one conversion back per read: {s:#}");
        }
    }
    let s = shimmed("part", 4000, 0, &[("CLAYOUT_CHUNKED_READS", "4")]);
    assert_eq!(chunked_reads(&s), 1, "only the whole read is chunked: {s:#}");
    assert_eq!(to_host(&s), 3, "{s:#}");
}

/// Under `auto` (the default) a read is chunked only into pinned memory and only from 32 MiB
/// converted: 2^21 bodies of 20 bytes are 40 MiB.
#[test]
fn auto_chunks_only_big_reads_into_pinned_memory() {
    let big = 1 << 21;
    assert_eq!(chunked_reads(&shimmed("pinned", big, 0, &[])), 3);
    assert_eq!(chunked_reads(&shimmed("malloc", big, 0, &[])), 0, "malloc'd memory is pageable");
    assert_eq!(chunked_reads(&shimmed("pinned", 4000, 0, &[])), 0, "too small to pay");
    assert_eq!(chunked_reads(&shimmed("pinned", big, 0, &[("CLAYOUT_CHUNKED_READS", "0")])), 0);
}

/// A chunk's conversion that fails after the first: the rest of the buffer comes back in one
/// piece, here on the host (the fault also fails the rest's device conversion), and the read
/// still gets the right bytes. A failure of the first chunk's conversion leaves the read to
/// the ordinary path, which falls back on the host too.
#[test]
fn a_chunk_that_fails_brings_the_rest_back_another_way() {
    let lib = fault_lib();
    for fault in ["chunk", "conversion"] {
        for mode in ["pinned", "ooo"] {
            let s = shimmed_with(Some(lib), mode, 4000, 0, &[("CLAYOUT_CHUNKED_READS", "4"), ("CLAYOUT_FAULT", fault)]);
            let fallbacks = s["fallbacks"].as_array().map_or(0, Vec::len);
            assert!(fallbacks > 0, "{fault}, {mode}: the host fallback is reported: {s:#}");
            let chunked = chunked_reads(&s);
            if fault == "chunk" {
                assert!(chunked > 0, "{mode}: {s:#}");
            } else {
                assert_eq!(chunked, 0, "{mode}: {s:#}");
            }
        }
    }
}
