//! The application's last release of a context: clayout's own objects of it go first (its
//! programs and scratch buffers hold the context too), then a check that nothing of clayout's
//! is left holding it.

use crate::registry::key;
use opencl_sys::*;

/// Before the application's last release of `context` reaches the real library.
pub fn releasing(context: cl_context) {
    // A build clayout's worker runs for a program of this context holds the context; one that
    // has not started is not needed any more.
    super::worker::settle(Some(crate::registry::key(context)), std::time::Duration::from_secs(60));
    crate::marshal::release_context(context);
    super::chunked::release_context(context);
    super::cost::measure::harvest();
    super::cost::measure::forget_app_wait();
    super::cost::kernel::write_unwritten();
    super::order::forget_finished();
    check_references(context);
}

/// After clayout released its own objects of the context, none of them may be alive: what
/// clayout still holds then is logged and counted (`contexts_left_referenced`). The objects the
/// application holds or leaks (events, kernels, samplers, images) are its own business.
fn check_references(context: cl_context) {
    let c = key(context);
    // clayout's copies of a program live as long as the application's program or kernels do.
    let app_code =
        crate::registry::get().programs.snapshot().iter().any(|(_, p)| p.context == c) || super::kernels::any_in(c);
    let left = if app_code { 0 } else { crate::cl::live_in(context) };
    if left > 0 {
        crate::log::warn(&format!(
            "context {:#x}: {left} object(s) of clayout's left after it released its own objects of it",
            key(context)
        ));
    }
    crate::stats::context_released(left > 0);
}
