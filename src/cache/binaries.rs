//! Programs clayout builds for itself (the conversion kernels and the transparent mode's private
//! programs), kept as device binaries in the on-disk cache so that a later run skips the
//! compiler. The binary is only ever a shortcut: whatever goes wrong with it, the program is
//! built from its source as without a cache.

use super::disk;
use crate::cl::build::{binary_of, from_binary, from_source, BuildError};
use crate::cl::Program;
use opencl_sys::*;
use std::time::Instant;

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
    if disk::dir().is_none() {
        return from_source(ctx, &[device], source, options);
    }
    // The source's hash stands for the source: a key holding several kilobytes of kernel text
    // would be written into every header.
    let key = format!("{}; options {options}; source {:016x}", disk::device_key(device), disk::fnv1a(source));
    // The times say what the cache saves on this driver (docs/cache.md).
    let start = Instant::now();
    let cached = disk::get_with(kind, &key, |binary| {
        from_binary(ctx, device, binary, options).map_err(|e| format!("the driver refused the binary ({e})"))
    });
    if let Some(p) = cached {
        crate::log::debug(&format!("clayout cache: {kind} program loaded as a binary in {:.1} ms", ms(start)));
        return Ok(p);
    }
    let p = from_source(ctx, &[device], source, options)?;
    let built = ms(start);
    match binary_of(p.raw(), device) {
        Ok(binary) => disk::put(kind, &key, &binary),
        Err(why) => crate::log::debug(&format!("clayout cache: no binary of {kind} to keep ({why})")),
    }
    crate::log::debug(&format!(
        "clayout cache: {kind} program built from source in {built:.1} ms, its binary fetched and kept in {:.1} ms",
        ms(start) - built
    ));
    Ok(p)
}
