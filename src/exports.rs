//! The exported C entry points, one per line of the table (`cl::table`): `fwd` ones count and
//! forward, `hook` ones count and route through `crate::hooks`. The same bodies serve both
//! routes: the `#[no_mangle]` exports when preloaded, and `layer::*`, the entry points clayout
//! puts in a loader's dispatch table when loaded as a layer (`clInitLayer`, `cl::layer`).
//! Also what runs when the library is loaded and at exit.
#![allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]

use libc::{c_char, c_void, size_t};
use opencl_sys::cl_icd::cl_icd_dispatch;
use opencl_sys::cl_layer::{cl_layer_info, cl_layer_properties};
use opencl_sys::*;

macro_rules! define_exports {
    ($( $kind:ident $name:ident ( $($p:ident : $t:ty),* $(,)? ) -> $ret:ty ; )*) => {
        $(
            #[no_mangle]
            pub unsafe extern "C" fn $name($($p: $t),*) -> $ret {
                match crate::cl::layer::from_export() {
                    // Layered too: the loader's dispatch brings the call to `layer::$name`.
                    crate::cl::layer::FromExport::Forward(_scope) => crate::cl::preloaded().$name($($p),*),
                    crate::cl::layer::FromExport::Intercept(scope) => define_exports!(@body $kind $name scope.1, ( $($p),* )),
                }
            }
        )*

        /// The entry points of clayout's dispatch table as a loader layer.
        mod layer {
            use super::*;
            $(
                pub unsafe extern "C" fn $name($($p: $t),*) -> $ret {
                    if !crate::cl::layer::from_layer() {
                        // A preloaded export of this thread intercepts this call already.
                        return crate::cl::api().$name($($p),*);
                    }
                    define_exports!(@body $kind $name crate::cl::thread::this(), ( $($p),* ))
                }
            )*
        }

        /// `layer`'s entry points by name, for the dispatch table.
        fn layer_entries() -> Vec<(&'static str, *const c_void)> {
            vec![$( (stringify!($name), layer::$name as *const c_void), )*]
        }
    };

    (@body fwd $name:ident $this:expr, ( $($p:ident),* )) => {{
        $this.count(crate::cl::FnId::$name as usize);
        crate::cl::api().$name($($p),*)
    }};

    (@body hook $name:ident $this:expr, ( $($p:ident),* )) => {{
        $this.count(crate::cl::FnId::$name as usize);
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
    }};
}

crate::cl::table::api_table!(define_exports);

// ---- the loader-layer entry points (cl_loader_layers) ---------------------------------------
// Called by the loader with its own pointers; a panic answers as a failed call, so that the
// loader goes on without the layer.

#[no_mangle]
pub unsafe extern "C" fn clGetLayerInfo(
    param_name: cl_layer_info,
    param_value_size: size_t,
    param_value: *mut c_void,
    param_value_size_ret: *mut size_t,
) -> cl_int {
    crate::guard::guard("clGetLayerInfo", || {
        crate::cl::layer::info(param_name, param_value_size, param_value, param_value_size_ret)
    })
    .unwrap_or(CL_INVALID_VALUE)
}

#[no_mangle]
pub unsafe extern "C" fn clInitLayer(
    num_entries: cl_uint,
    target_dispatch: *const cl_icd_dispatch,
    num_entries_ret: *mut cl_uint,
    layer_dispatch_ret: *mut *const cl_icd_dispatch,
) -> cl_int {
    crate::guard::guard("clInitLayer", || {
        crate::cl::layer::init(
            num_entries,
            target_dispatch,
            num_entries_ret,
            layer_dispatch_ret,
            None,
            &layer_entries(),
        )
    })
    .unwrap_or(CL_INVALID_VALUE)
}

#[no_mangle]
pub unsafe extern "C" fn clInitLayerWithProperties(
    num_entries: cl_uint,
    target_dispatch: *const cl_icd_dispatch,
    num_entries_ret: *mut cl_uint,
    layer_dispatch_ret: *mut *const cl_icd_dispatch,
    properties: *const cl_layer_properties,
) -> cl_int {
    crate::guard::guard("clInitLayerWithProperties", || {
        let entries = layer_entries();
        crate::cl::layer::init(
            num_entries,
            target_dispatch,
            num_entries_ret,
            layer_dispatch_ret,
            Some(properties),
            &entries,
        )
    })
    .unwrap_or(CL_INVALID_VALUE)
}

#[no_mangle]
pub unsafe extern "C" fn clDeinitLayer() -> cl_int {
    crate::guard::guard("clDeinitLayer", crate::cl::layer::deinit).unwrap_or(CL_SUCCESS)
}

extern "C" fn at_exit() {
    // A process that made no OpenCL call only inherited LD_PRELOAD from the application (PoCL's
    // linker, a shell it started): it has nothing to say, and must not write the statistics
    // file the application writes, nor warn that the side file's kernels went unused (PoCL's
    // linker did so once per kernel it linked).
    if !crate::stats::any_calls() {
        return;
    }
    // A child forked after the application's calls owns none of what the parent measured and
    // holds, and has none of the threads (the driver's, clayout's) that the work below waits
    // for: the parent says and writes it all at its own exit.
    if crate::stats::forked_child() {
        return;
    }
    // This thread's express lanes add their last launches to the statistics.
    crate::guard::guard("lanes at exit", crate::runtime::lane::close_all);
    // What the untracked run's journal holds, before what it counts is written and said.
    crate::guard::guard("journal at exit", crate::runtime::untracked::drain_journal);
    // The last launches' times, for the cache and the statistics.
    crate::guard::guard("kernel times at exit", crate::runtime::cost::measure::harvest);
    crate::guard::guard("annotations at exit", crate::runtime::program::report_unattached);
    crate::guard::guard("epoch lengths at exit", crate::runtime::cost::lengths::write_at_exit);
    crate::guard::guard("copies' worth at exit", crate::runtime::cost::worth::write_at_exit);
    crate::guard::guard("kernel times records at exit", crate::runtime::cost::kernel::write_unwritten);
    crate::guard::guard("launch events at exit", crate::runtime::profiling::write_at_exit);
    // Every record of the run, written off the application's threads until now (the builds at
    // exit, waited for by the worker's own handler, registered later and so run before this).
    crate::guard::guard("on-disk cache at exit", crate::cache::disk::flush);
    if crate::runtime::suggest::active() {
        crate::guard::guard("suggestions at exit", crate::runtime::suggest::write_at_exit);
    }
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
            crate::stats::watch_forks();
        }
    });
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;
