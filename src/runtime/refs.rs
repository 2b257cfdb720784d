//! Reference counts as the application would see them without clayout. The specification calls
//! them "immediately stale" and fit only for finding leaks, which is exactly what programs use
//! them for: clayout's own references must not look like the application's leak. Before the
//! count is read, every reference clayout keeps only to order or time commands that have
//! completed is dropped; what clayout still holds (the objects it created in a context, events
//! of unfinished commands it waits on) is then taken off the answer.

use super::{buffers, order};
use once_cell::sync::Lazy;
use opencl_sys::*;
use parking_lot::Mutex;
use std::collections::HashMap;

/// Drops the references clayout keeps on completed commands.
fn settle() {
    super::cost::measure::harvest();
    order::forget_finished();
    buffers::forget_finished();
}

/// What clayout holds on `context`: one reference for each object it created there, and one
/// for each job that builds a program's copies, until it runs.
pub fn context(context: cl_context) -> u32 {
    settle();
    crate::cl::live_in(context) as u32
}

/// What clayout holds on the application's program `program`: the references of the jobs that
/// build its copies, until they run.
pub fn program(program: cl_program) -> u32 {
    settle();
    crate::cl::live_in(program) as u32
}

/// What clayout holds on the application's event `event`.
pub fn event(event: cl_event) -> u32 {
    settle();
    (order::holds(event) + buffers::holds(event) + super::cost::measure::holds(event)) as u32
}

/// What clayout holds on an application's queue: its events of commands there that it still
/// keeps (a conversion's links until the last completes, the last conversion a scratch waits
/// on), times what one event holds on its queue in this implementation (measured once per
/// device: some hold one reference, some none).
pub fn queue(queue: cl_command_queue) -> u32 {
    settle();
    let live = crate::cl::live_in(queue) as u32;
    if live == 0 {
        return 0;
    }
    live * per_event(queue)
}

/// References a new event holds on its queue: a marker's difference, on this queue.
fn per_event(queue: cl_command_queue) -> u32 {
    static MEASURED: Lazy<Mutex<HashMap<usize, u32>>> = Lazy::new(Default::default);
    let device = crate::cl::info::queue_device(queue).map_or(0, |d| d as usize);
    if let Some(n) = MEASURED.lock().get(&device) {
        return *n;
    }
    let count = || crate::cl::info::queue_refs(queue);
    let n = (|| {
        let before = count()?;
        let marker = crate::cl::cmd::marker(queue, &[]).ok()?;
        let after = count()?;
        drop(marker);
        Some(after.saturating_sub(before))
    })()
    .unwrap_or(0);
    MEASURED.lock().insert(device, n);
    n
}
