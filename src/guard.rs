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

/// Runs `f` with this thread's `flag` set, and clears it after, also when `f` unwinds (a panic
/// that `guard` catches must not leave the thread marked).
pub fn with_flag<R>(flag: &'static std::thread::LocalKey<std::cell::Cell<bool>>, f: impl FnOnce() -> R) -> R {
    struct Reset(&'static std::thread::LocalKey<std::cell::Cell<bool>>);
    impl Drop for Reset {
        fn drop(&mut self) {
            self.0.with(|c| c.set(false));
        }
    }
    flag.with(|c| c.set(true));
    let _reset = Reset(flag);
    f()
}
