//! The entry points: prepare a conversion's kernels, enqueue a conversion, forget a context.
//! Each plans (`plan`), fetches the kernels (`programs`) and enqueues (`chain`); none lets a
//! panic out.

use super::device::{default_tile, facts};
use super::plan::{self, Tuning};
use super::{chain, programs, Converted, MarshalError};
use crate::cl::info;
use crate::layout::{Layout, Shape};
use opencl_sys::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The tuning conversions use: the defaults, unless the benchmark changed it.
fn tuning() -> Tuning {
    #[cfg(feature = "bench")]
    return super::bench::tuning();
    #[cfg(not(feature = "bench"))]
    Tuning::DEFAULT
}

fn panicked() -> MarshalError {
    MarshalError::Unsupported("internal error (panic) in clayout's marshaling".into())
}

/// Builds (and caches) the conversion kernels for structures of `s` words of `w` bytes and
/// tile `t` on `dev`, so that the first conversion does not pay for the compile. Conversions of
/// buffers at offset 0 use exactly these kernels.
pub fn prepare(ctx: cl_context, dev: cl_device_id, s: u32, t: u32, w: u32) -> Result<(), MarshalError> {
    catch_unwind(|| {
        let params = plan::params(&facts(dev), s, t, w, true, &tuning())?;
        programs::kernels(ctx, dev, params).map(drop)
    })
    .unwrap_or_else(|_| Err(panicked()))
}

/// Enqueues an in-place conversion of `buffer` (its first `shape.m*shape.s*shape.w` bytes,
/// starting at byte `offset` — 0 normally) from `from` to `to` on `queue`, after `wait`.
/// Never blocks except to build a program the first time. Never panics; every failure
/// returns Err and leaves the buffer bytes unchanged if the failure happened before
/// anything was enqueued.
///
/// AoS <-> SoA (and ASTA with one tile <-> ASTA with another) run as two steps through
/// ASTA with [`default_tile`] (or through AoS).
pub fn enqueue_conversion(
    queue: cl_command_queue,
    buffer: cl_mem,
    offset: u64,
    shape: Shape,
    from: Layout,
    to: Layout,
    wait: &[cl_event],
) -> Result<Converted, MarshalError> {
    catch_unwind(AssertUnwindSafe(|| enqueue(queue, buffer, offset, shape, from, to, wait)))
        .unwrap_or_else(|_| Err(panicked()))
}

fn enqueue(
    queue: cl_command_queue,
    buffer: cl_mem,
    offset: u64,
    shape: Shape,
    from: Layout,
    to: Layout,
    wait: &[cl_event],
) -> Result<Converted, MarshalError> {
    let (Some(ctx), Some(dev)) = (info::queue_context(queue), info::queue_device(queue)) else {
        return Err(MarshalError::Unsupported("the queue's context or device could not be queried".into()));
    };
    let conv = plan::conversion(&facts(dev), shape, from, to, offset, default_tile(dev), &tuning())?;
    // Every kernel is built (or fetched) before anything is enqueued.
    let kernels = conv
        .steps
        .iter()
        .map(|(_, params)| programs::kernels(ctx, dev, params.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let base = offset / shape.w as u64;
    let (events, bytes_moved) = chain::run(queue, ctx, buffer, base, shape, &conv, &kernels, wait)?;
    Ok(Converted { events, bytes_moved, scratch_bytes: conv.flags_bytes + conv.tail_bytes })
}

/// Releases everything cached for `ctx` (programs, scratch buffers). Call when the
/// application's context dies; later conversions in the same context rebuild.
pub fn release_context(ctx: cl_context) {
    programs::release(ctx);
    chain::release(ctx);
}
