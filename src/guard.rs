//! The panic net around clayout's own bookkeeping: a panic in clayout's logic must never cross
//! the C boundary nor change what the application gets back.

/// Runs `f`, catching any panic; a failure is logged once and the caller carries on with the
/// plain OpenCL path (None).
pub fn guard<R>(what: &str, f: impl FnOnce() -> R) -> Option<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(_) => {
            crate::log::panic_fallback(what);
            None
        }
    }
}
