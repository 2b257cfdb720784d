//! The application's last release of a context: clayout's own objects of it go first (its
//! programs and scratch buffers hold the context too), then a check that nothing of clayout's
//! is left holding it.

use crate::cl::info::context_refs;
use crate::registry::{self, key};
use opencl_sys::*;

/// Before the application's last release of `context` reaches the real library.
pub fn releasing(context: cl_context) {
    // A build clayout's worker runs for a program of this context holds the context.
    super::worker::drain(std::time::Duration::from_secs(60));
    crate::marshal::release_context(context);
    super::order::forget_finished();
    check_references(context);
}

/// After clayout released its own objects of the context, its reference count must be 1 (the
/// release about to happen), unless the application itself still holds an object of the
/// context. Anything else is an object clayout created and did not release: logged and counted
/// (`contexts_left_referenced`).
fn check_references(context: cl_context) {
    // An implementation may still hold the context for commands whose completion it has not
    // processed yet (PoCL does for a few milliseconds): give it up to 100 ms, only when needed.
    let Some(mut refs) = context_refs(context) else { return };
    for _ in 0..20 {
        if refs <= 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
        refs = context_refs(context).unwrap_or(refs);
    }
    let c = key(context);
    let reg = registry::get();
    let app_objects = reg.buffers.snapshot().iter().filter(|(_, b)| b.context == c).count()
        + reg.queues.snapshot().iter().filter(|(_, q)| q.context == c).count()
        + reg.programs.snapshot().iter().filter(|(_, p)| p.context == c).count();
    let left = refs > 1 && app_objects == 0;
    if left {
        crate::log::warn(&format!(
            "context {c:#x}: {} reference(s) left after clayout released its own objects of it",
            refs - 1
        ));
    }
    crate::stats::context_released(left);
}
