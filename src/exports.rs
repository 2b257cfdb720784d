//! The exported C entry points. Every OpenCL function of `cl.h` is declared once, in
//! `api_table.rs`; this macro turns that table into
//! - `FnId`/`FN_NAMES`: a dense index per entry point, for the call counters,
//! - `Api`: the real library's function pointers, resolved once by `real.rs`,
//! - one `#[no_mangle]` export per entry point: `fwd` ones count and forward, `hook` ones count
//!   and route through `crate::hooks`, which keeps the registry and (later) marshals.
#![allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]

use libc::{c_char, c_void, size_t};
use opencl_sys::*;

/// What an entry point the real library lacks returns: an application linked against a
/// loader without that symbol would not have run at all, so the closest honest answer is the
/// error the ICD loader itself gives for an unsupported call.
pub trait Missing {
    fn missing(name: &str) -> Self;
}
impl Missing for cl_int {
    fn missing(name: &str) -> Self {
        crate::log::missing_entry_point(name);
        CL_INVALID_OPERATION
    }
}
impl Missing for *mut c_void {
    fn missing(name: &str) -> Self {
        crate::log::missing_entry_point(name);
        std::ptr::null_mut()
    }
}
impl Missing for () {
    fn missing(name: &str) {
        crate::log::missing_entry_point(name);
    }
}

macro_rules! cl_api {
    ($( $kind:ident $name:ident ( $($p:ident : $t:ty),* $(,)? ) -> $ret:ty ; )*) => {
        /// Dense index of an exported entry point (the order of `api_table.rs`).
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        pub enum FnId { $($name),* }

        pub const FN_NAMES: &[&str] = &[$(stringify!($name)),*];
        pub const FN_COUNT: usize = FN_NAMES.len();
        /// Whether the entry point is observed (`hook`) rather than forwarded untouched.
        pub const FN_HOOKED: &[bool] = &[$(cl_api!(@is_hook $kind)),*];

        /// The real library's entry points. Fields stay private: callers use the methods, which
        /// answer like a loader would when the real library lacks the symbol.
        pub struct Api {
            $( $name: Option<unsafe extern "C" fn($($t),*) -> $ret>, )*
        }

        impl Api {
            /// `lookup` maps a NUL-terminated symbol name to its address (null when absent).
            pub(crate) fn resolve(lookup: &dyn Fn(&[u8]) -> *mut c_void) -> Api {
                Api {
                    $( $name: {
                        let p = lookup(concat!(stringify!($name), "\0").as_bytes());
                        // SAFETY: the symbol has exactly this C signature in every conforming
                        // OpenCL library; a null pointer becomes None.
                        unsafe { std::mem::transmute::<*mut c_void, Option<unsafe extern "C" fn($($t),*) -> $ret>>(p) }
                    }, )*
                }
            }

            /// Whether the real library provides the entry point `id`.
            pub fn has(&self, id: FnId) -> bool {
                match id { $( FnId::$name => self.$name.is_some(), )* }
            }

            $(
                #[inline]
                pub unsafe fn $name(&self, $($p: $t),*) -> $ret {
                    match self.$name {
                        Some(f) => f($($p),*),
                        None => <$ret as Missing>::missing(stringify!($name)),
                    }
                }
            )*
        }

        $( cl_api!(@export $kind $name ( $($p : $t),* ) -> $ret); )*
    };

    (@is_hook hook) => { true };
    (@is_hook fwd) => { false };

    (@export fwd $name:ident ( $($p:ident : $t:ty),* ) -> $ret:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($p: $t),*) -> $ret {
            crate::stats::count(FnId::$name);
            crate::real::api().$name($($p),*)
        }
    };

    (@export hook $name:ident ( $($p:ident : $t:ty),* ) -> $ret:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($p: $t),*) -> $ret {
            crate::stats::count(FnId::$name);
            if !crate::config::active() {
                return crate::real::api().$name($($p),*);
            }
            // Hooks guard their own bookkeeping (crate::guard) so that a panic after the real
            // call cannot repeat it; this outer net only catches a panic before that call, and
            // then the application gets the plain forward.
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| crate::hooks::$name($($p),*))) {
                Ok(r) => r,
                Err(_) => {
                    crate::log::panic_fallback(stringify!($name));
                    crate::real::api().$name($($p),*)
                }
            }
        }
    };
}

include!("api_table.rs");
