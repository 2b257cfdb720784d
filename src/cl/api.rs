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

            /// Where entry point `id` goes (null when the real library lacks it).
            pub fn address(&self, id: FnId) -> *const c_void {
                match id {
                    $( FnId::$name => self.$name.map_or(std::ptr::null(), |f| f as *const c_void), )*
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

impl Api {
    /// The entry points behind a loader layer: slot `s` of the dispatch table `target` for each
    /// entry point whose slot lies among the `entries` the loader passed, `fallback` (a lookup
    /// by symbol, like `resolve`'s) for the others, which the loader cannot route through a
    /// layer. A slot holding an address inside clayout counts as empty: calling it would loop.
    ///
    /// # Safety
    /// `target` points to at least `entries` readable function pointers.
    pub(crate) unsafe fn from_dispatch(
        target: *const *mut c_void,
        entries: usize,
        fallback: &dyn Fn(&[u8]) -> *mut c_void,
    ) -> Api {
        Api::resolve(&|name| {
            let field = std::str::from_utf8(&name[..name.len() - 1]).unwrap_or("");
            match super::dispatch::slot(field) {
                Some(s) if s < entries => {
                    // SAFETY: s < entries, which the caller guarantees readable.
                    let p = unsafe { *target.add(s) };
                    if super::object::is_ours(p) {
                        std::ptr::null_mut()
                    } else {
                        p
                    }
                }
                _ => fallback(name),
            }
        })
    }

    /// An `Api` without any entry point: every call answers as an absent one.
    pub(crate) fn absent() -> Api {
        Api::resolve(&|_| std::ptr::null_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_dispatch_takes_the_slots_the_loader_passed_and_looks_up_the_others() {
        // Fake addresses, never called: slot s holds 0x1000 * (s + 1).
        let table: Vec<*mut c_void> =
            (0..crate::cl::dispatch::LEN).map(|s| (0x1000 * (s + 1)) as *mut c_void).collect();
        let asked = std::cell::RefCell::new(Vec::new());
        let fallback = |name: &[u8]| {
            asked.borrow_mut().push(String::from_utf8_lossy(&name[..name.len() - 1]).into_owned());
            0x42 as *mut c_void
        };
        // A loader whose table stops before OpenCL 2.0 (slot 123).
        // SAFETY: the table holds LEN >= 100 readable slots.
        let api = unsafe { Api::from_dispatch(table.as_ptr(), 100, &fallback) };
        assert_eq!(api.address(FnId::clGetPlatformIDs) as usize, 0x1000);
        assert_eq!(api.address(FnId::clCreateBuffer) as usize, 0x1000 * 15);
        assert_eq!(api.address(FnId::clCreateCommandQueueWithProperties) as usize, 0x42);
        assert!(asked.borrow().iter().any(|n| n == "clCreateCommandQueueWithProperties"));
        assert!(!asked.borrow().iter().any(|n| n == "clCreateBuffer"));
        assert!(Api::absent().address(FnId::clCreateBuffer).is_null());
    }
}
