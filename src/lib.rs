//! clayout: an LD_PRELOAD shim that keeps OpenCL applications' arrays of structures in the
//! layout their kernels access fastest. See docs/architecture.md for the module map.

pub mod annotation;
pub mod binaries;
pub mod clc;
pub mod config;
pub mod diskcache;
pub mod exports;
pub mod fault;
mod hooks;
pub mod layout;
pub mod log;
pub mod marshal;
pub mod owned;
pub mod real;
pub mod registry;
pub mod rewrite;
pub mod runtime;
pub mod stats;
pub mod structdef;

/// Runs clayout's own bookkeeping, catching any panic so that it never crosses the C
/// boundary; a failure is logged once and the caller carries on with the plain OpenCL path.
pub fn guard<R>(what: &str, f: impl FnOnce() -> R) -> Option<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(_) => {
            log::panic_fallback(what);
            None
        }
    }
}

extern "C" fn at_exit() {
    guard("statistics at exit", stats::write_at_exit);
}

/// Load-time set-up: read the configuration (so a bad value is reported up front) and arrange
/// for the statistics to be written at exit, whichever thread calls exit().
extern "C" fn on_load() {
    guard("load", || {
        let cfg = config::get();
        if !cfg.disable && cfg.stats != config::StatsOut::None {
            // SAFETY: registering a plain extern "C" fn with no captured state.
            unsafe { libc::atexit(at_exit) };
        }
    });
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;
