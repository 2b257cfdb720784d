//! Hashes clayout's own sources into `CLAYOUT_SOURCE_HASH`: what clayout's cache keeps of its
//! own work (the rewritten copies, `runtime::transparent::rewrite`) is valid only for the code
//! that made it, and the package's version does not change with that code.

use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let mut all = Vec::new();
    files(Path::new("src"), &mut all);
    all.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in &all {
        let bytes = std::fs::read(p).unwrap_or_default();
        for b in p.to_string_lossy().as_bytes().iter().chain(&[0u8]).chain(&bytes) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=CLAYOUT_SOURCE_HASH={h:016x}");
    println!("cargo:rerun-if-changed=src");
}
