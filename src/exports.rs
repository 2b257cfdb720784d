//! The exported C entry points, one per line of the table (`cl::table`): `fwd` ones count and
//! forward, `hook` ones count and route through `crate::hooks`. Also what runs when the library
//! is loaded and at exit.
#![allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]

use libc::{c_char, c_void, size_t};
use opencl_sys::*;

macro_rules! define_exports {
    ($( $kind:ident $name:ident ( $($p:ident : $t:ty),* $(,)? ) -> $ret:ty ; )*) => {
        $( define_exports!(@export $kind $name ( $($p : $t),* ) -> $ret); )*
    };

    (@export fwd $name:ident ( $($p:ident : $t:ty),* ) -> $ret:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($p: $t),*) -> $ret {
            crate::stats::count(crate::cl::FnId::$name);
            crate::cl::api().$name($($p),*)
        }
    };

    (@export hook $name:ident ( $($p:ident : $t:ty),* ) -> $ret:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($p: $t),*) -> $ret {
            crate::stats::count(crate::cl::FnId::$name);
            if !crate::config::active() {
                return crate::cl::api().$name($($p),*);
            }
            // Hooks guard their own bookkeeping (crate::guard) so that a panic after the real
            // call cannot repeat it; this outer net only catches a panic before that call, and
            // then the application gets the plain forward.
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| crate::hooks::$name($($p),*))) {
                Ok(r) => r,
                Err(_) => {
                    crate::log::panic_fallback(stringify!($name));
                    crate::cl::api().$name($($p),*)
                }
            }
        }
    };
}

crate::cl::table::api_table!(define_exports);

extern "C" fn at_exit() {
    crate::guard::guard("annotations at exit", crate::runtime::program::report_unattached);
    if crate::config::get().stats != crate::config::StatsOut::None {
        crate::guard::guard("statistics at exit", crate::stats::write_at_exit);
    }
}

/// Load-time set-up: read the configuration (so that a bad value is reported up front) and
/// arrange for what is said at exit (annotations never used, the statistics), whichever thread
/// calls exit().
extern "C" fn on_load() {
    crate::guard::guard("load", || {
        let cfg = crate::config::get();
        crate::log::config_warnings();
        if !cfg.disable {
            // SAFETY: registering a plain extern "C" fn with no captured state.
            unsafe { libc::atexit(at_exit) };
        }
    });
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;
