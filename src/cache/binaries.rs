//! Programs clayout builds for itself (the conversion kernels and the transparent mode's private
//! programs), kept as device binaries in the on-disk cache so that a later run skips the
//! compiler. The binary is only ever a shortcut: whatever goes wrong with it, the program is
//! built from its source as without a cache.

use super::disk;
use crate::cl::build::{binary_of, from_binary, from_source, BuildError};
use crate::cl::Program;
use opencl_sys::*;
use std::time::Instant;

thread_local! {
    /// Set while a job may only load programs from the cache (`cache_only`).
    static CACHE_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The build log of a program `build` did not make because it was not in the cache while
/// `cache_only` held.
pub const NOT_CACHED: &str = "not in clayout's cache, and only cached programs were to be loaded";

/// Runs `f` with builds limited to programs the cache holds: a build that would compile fails
/// with `NOT_CACHED` instead (a caller that can only afford loads tries this first).
pub fn cache_only<T>(f: impl FnOnce() -> T) -> T {
    crate::guard::with_flag(&CACHE_ONLY, f)
}

/// Whether `cache_only` holds on this thread.
pub fn only_cached() -> bool {
    CACHE_ONLY.with(|c| c.get())
}

fn not_cached() -> BuildError {
    BuildError { error: crate::cl::Error::new("clBuildProgram", CL_BUILD_PROGRAM_FAILURE), log: NOT_CACHED.into() }
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// `source` built with `options` for `device` of `ctx`, from the binary of record `kind` when
/// the cache has one that this driver accepts, else from source (and then cached).
pub fn build(
    ctx: cl_context,
    device: cl_device_id,
    source: &[u8],
    options: &str,
    kind: &str,
) -> Result<Program, BuildError> {
    if disk::dir().is_none() || binaries_break(device) {
        return if only_cached() { Err(not_cached()) } else { from_source(ctx, &[device], source, options) };
    }
    // The source's hash stands for the source: a key holding several kilobytes of kernel text
    // would be written into every header.
    let key = format!("{}; options {options}; source {:016x}", disk::device_key(device), disk::fnv1a(source));
    // The times say what the cache saves on this driver (docs/cache.md).
    let start = Instant::now();
    if rebuilds_from_its_cache(device) && disk::path(kind, &key).is_some_and(|p| p.exists()) {
        // Built here before, so the driver's own cache holds it: a build from source is a
        // look-up there, where loading the binary would compile it again.
        let p = from_source(ctx, &[device], source, options)?;
        crate::log::debug_with(|| {
            format!(
                "clayout cache: {kind} program built again from source in {:.1} ms (from the driver's own cache)",
                ms(start)
            )
        });
        return Ok(p);
    }
    let cached = disk::get_with(kind, &key, |binary| {
        from_binary(ctx, device, binary, options).map_err(|e| format!("the driver refused the binary ({e})"))
    });
    if let Some(p) = cached {
        crate::log::debug_with(|| format!("clayout cache: {kind} program loaded as a binary in {:.1} ms", ms(start)));
        return Ok(p);
    }
    if only_cached() {
        return Err(not_cached());
    }
    let p = from_source(ctx, &[device], source, options)?;
    let built = ms(start);
    match binary_of(p.raw(), device) {
        Ok(binary) => disk::put(kind, &key, &binary),
        Err(why) => crate::log::debug_with(|| format!("clayout cache: no binary of {kind} to keep ({why})")),
    }
    crate::log::debug_with(|| {
        format!(
            "clayout cache: {kind} program built from source in {built:.1} ms, its binary fetched and kept in {:.1} ms",
            ms(start) - built
        )
    });
    Ok(p)
}

/// Whether handing `device`'s driver a program binary can abort the process: PoCL with its
/// kernel cache off (`POCL_KERNEL_CACHE=0`) links a program made from a binary in a directory
/// named after the binary, which another process loading the same binary from clayout's cache
/// at the same time removes or rewrites; PoCL then reports "Final linking of kernel ... failed"
/// and aborts (tests/hostile's cases four at a time, with their runs without clayout: 5 and 6 of 20 runs sharing a cache aborted,
/// none with the cache off). The binaries are neither loaded nor kept there: every build is
/// from source, as PoCL itself is then asked to do.
fn binaries_break(device: cl_device_id) -> bool {
    std::env::var_os("POCL_KERNEL_CACHE").is_some_and(|v| v == "0") && crate::cl::info::is_pocl(device)
}

/// Whether `device`'s driver keeps a compile cache of its own that answers a build of a source
/// it compiled before faster than it loads that program's binary. NVIDIA's does: the binary it
/// returns is PTX, which it compiles again at every load (40-42 ms for a sample's rewritten
/// copies on an H200), while a source build it has seen is answered from its cache in 4-5 ms
/// (`scripts/device/buildload.sh`). Not when `CUDA_CACHE_DISABLE=1` turns that cache off.
fn rebuilds_from_its_cache(device: cl_device_id) -> bool {
    if crate::fault::inject("driver-cache") {
        return true;
    }
    crate::cl::info::is_nvidia(device) && std::env::var_os("CUDA_CACHE_DISABLE").is_none_or(|v| v != "1")
}
