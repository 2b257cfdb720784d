//! The real library's entry points as function pointers (`Api`), and a dense index of every
//! entry point (`FnId`) for the call counters, both made from the one table (`cl::table`).
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

macro_rules! define_api {
    ($( $kind:ident $name:ident ( $($p:ident : $t:ty),* $(,)? ) -> $ret:ty ; )*) => {
        /// Dense index of an exported entry point (the order of the table).
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        pub enum FnId { $($name),* }

        pub const FN_NAMES: &[&str] = &[$(stringify!($name)),*];
        pub const FN_COUNT: usize = FN_NAMES.len();

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

            $(
                /// # Safety
                /// As for the OpenCL function of this name.
                #[inline]
                pub unsafe fn $name(&self, $($p: $t),*) -> $ret {
                    match self.$name {
                        Some(f) => f($($p),*),
                        None => <$ret as Missing>::missing(stringify!($name)),
                    }
                }
            )*
        }
    };
}

super::table::api_table!(define_api);
