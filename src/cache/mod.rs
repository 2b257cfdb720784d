//! What clayout keeps across runs (docs/cache.md): `disk`, one checked file per record, keyed by
//! text and by device, written off the application's threads (`writer`); `binaries`, clayout's
//! own programs built through it as device binaries.

pub mod binaries;
pub mod disk;
mod writer;

/// A fresh directory under the system's temporary one for a test of this module, named by
/// `tag` (unique across the module's tests) and the process.
#[cfg(test)]
fn test_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("clayout-cache-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}
