//! clayout as an OpenCL loader layer (`cl_loader_layers`), beside the preloaded exports.
//!
//! A loader (the Khronos ICD loader, ocl-icd 2.3+) that finds clayout in `OPENCL_LAYERS` calls
//! `clInitLayer` (or `clInitLayerWithProperties`) with the dispatch table to call down through
//! (`target`) and takes back clayout's table, whose empty slots it fills from `target`. From
//! then on every call of the application reaches clayout through that table, however the
//! application found the loader's entry points (linked symbols, `dlopen` + `dlsym`).
//!
//! One code path behind both routes: the hooks and the exports' bodies are the same; only
//! `cl::api()` differs, the next library's symbols when preloaded, `target`'s slots once
//! layered (`attach`).
//!
//! Both routes in one process (LD_PRELOAD and OPENCL_LAYERS naming the same library) intercept
//! each call once. The application's first call goes through a preloaded export, which
//! intercepts it and calls the loader; the loader, initializing, loads the layers, so
//! `clInitLayer` may run in the middle of that call, and the loader then sends the call on to
//! clayout's table. A per-thread count of the exports intercepting a call on this thread tells
//! the table's entry point that this is the export's own call down (`from_layer`: pass it
//! through). Once layered, the exports only forward to the loader (`from_export`), whose
//! dispatch brings the call to the table, which intercepts it; a forward sets the count to
//! zero while it runs, so that a callback into the application that calls OpenCL again on the
//! same thread is intercepted as its own call.

use super::api::Api;
use super::dispatch;
use super::object::{our_path, path_of};
use super::real;
use super::thread::{this, ThisThread};
use libc::{c_void, size_t};
use opencl_sys::cl_icd::cl_icd_dispatch;
use opencl_sys::cl_layer::{
    cl_layer_api_version, cl_layer_info, cl_layer_properties, CL_LAYER_API_VERSION, CL_LAYER_API_VERSION_100,
    CL_LAYER_NAME, CL_LAYER_PROPERTIES_LIST_END,
};
use opencl_sys::{cl_int, cl_uint, CL_INVALID_VALUE, CL_SUCCESS};
use parking_lot::Mutex;

/// What `clGetLayerInfo(CL_LAYER_NAME)` answers.
const NAME: &str = concat!("clayout ", env!("CARGO_PKG_VERSION"), ": OpenCL arrays of structures in a faster layout");

/// A property list longer than this is taken as unterminated.
const MAX_PROPERTIES: usize = 64;

/// The loader clayout is a layer of (its target table), and whether it has let clayout go.
struct State {
    target: Option<usize>,
    detached: bool,
    /// Where calls go down to, for the log and the stats.
    source: String,
}

static STATE: Mutex<State> = Mutex::new(State { target: None, detached: false, source: String::new() });

/// `clGetLayerInfo`.
///
/// # Safety
/// `value` is null or points to `size` writable bytes; `size_ret` is null or writable.
pub unsafe fn info(param: cl_layer_info, size: size_t, value: *mut c_void, size_ret: *mut size_t) -> cl_int {
    let version: cl_layer_api_version = CL_LAYER_API_VERSION_100;
    let name = format!("{NAME}\0");
    let bytes: &[u8] = match param {
        CL_LAYER_API_VERSION => &version.to_ne_bytes(),
        CL_LAYER_NAME => name.as_bytes(),
        _ => return CL_INVALID_VALUE,
    };
    if !value.is_null() {
        if size < bytes.len() {
            return CL_INVALID_VALUE;
        }
        // SAFETY: the caller's buffer holds `size` >= bytes.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), value as *mut u8, bytes.len()) };
    }
    if !size_ret.is_null() {
        // SAFETY: the caller passed a writable size_t.
        unsafe { *size_ret = bytes.len() };
    }
    CL_SUCCESS
}

/// `clInitLayer` and `clInitLayerWithProperties` (`properties`: Some for the latter).
/// `entries` are clayout's entry points for its table's lines, by name: the slots of those the
/// loader's table has are filled with them, every other slot is left empty for the loader to
/// fill from `target`. `target` is read only within the `num_entries` slots the loader passed.
///
/// # Safety
/// As `clInitLayer`: `target` points to `num_entries` function pointers that stay valid until
/// `deinit`; the two result pointers are writable.
pub unsafe fn init(
    num_entries: cl_uint,
    target: *const cl_icd_dispatch,
    num_entries_ret: *mut cl_uint,
    layer_dispatch_ret: *mut *const cl_icd_dispatch,
    properties: Option<*const cl_layer_properties>,
    entries: &[(&'static str, *const c_void)],
) -> cl_int {
    if target.is_null() || num_entries_ret.is_null() || layer_dispatch_ret.is_null() || num_entries == 0 {
        return CL_INVALID_VALUE;
    }
    if let Some(p) = properties {
        // SAFETY: the loader's property list is null or terminated (bounded walk).
        unsafe { read_properties(p) };
    }
    let slots = (num_entries as usize).min(dispatch::LEN);
    // Handed to the loader, which keeps the pointer: leaked, and written only before that.
    let table: &'static mut [*const c_void] = Box::leak(vec![std::ptr::null(); dispatch::LEN].into_boxed_slice());
    let target_slots = target as *const *mut c_void;
    // SAFETY: slot 0 exists (num_entries > 0).
    let loader = path_of(unsafe { *target_slots } as *const c_void).unwrap_or_else(|| "the loader".to_string());

    let mut state = STATE.lock();
    if state.target.is_some_and(|t| t != target as usize) && !state.detached {
        // One process, two loaders (a program's own and pyopencl's bundled one): clayout calls
        // down through one table only, and `clDeinitLayer` does not say which loader calls it.
        // Refused, the second loader goes on without clayout and never calls it again.
        drop(state);
        crate::log::warn(&format!(
            "a second OpenCL loader ({loader}) loaded clayout as a layer: refused, calls through it are not intercepted"
        ));
        return CL_INVALID_VALUE;
    }
    let filled = if crate::config::get().disable {
        crate::log::debug("CLAYOUT_DISABLE=1: the layer passes every call through untouched");
        0
    } else {
        let fallback = |name: &[u8]| real::symbol_in(&loader, name).unwrap_or(std::ptr::null_mut());
        // SAFETY: `target` holds num_entries readable slots (the caller's contract).
        let api = unsafe { Api::from_dispatch(target_slots, num_entries as usize, &fallback) };
        let mut n = 0;
        for (name, f) in entries {
            if let Some(s) = dispatch::slot(name).filter(|s| *s < slots) {
                table[s] = *f;
                n += 1;
            }
        }
        pin();
        state.source = format!("loader layer of {loader} ({num_entries} dispatch entries)");
        real::attach(api, state.source.clone());
        state.target = Some(target as usize);
        state.detached = false;
        n
    };
    drop(state);
    crate::log::debug_with(|| {
        format!(
        "loaded as a loader layer by {loader}: its dispatch table has {num_entries} entries, clayout knows {}, intercepts {filled}",
        dispatch::LEN
    )
    });
    // SAFETY: both result pointers were checked non-null; the caller's contract makes them writable.
    unsafe {
        *num_entries_ret = slots as cl_uint;
        *layer_dispatch_ret = table.as_ptr() as *const cl_icd_dispatch;
    }
    CL_SUCCESS
}

/// `clDeinitLayer`: the loader is letting go of its layers (it is being unloaded; its drivers
/// go next). Calls down through `target` would then reach freed code, so from here on they
/// answer as absent entry points; a loader that loads clayout again re-attaches it.
pub fn deinit() -> cl_int {
    let mut state = STATE.lock();
    if state.target.is_some() && !state.detached {
        real::attach(Api::absent(), format!("{}, unloaded by it", state.source));
        state.detached = true;
        crate::log::debug("the loader unloaded its layers: clayout's calls down answer as absent entry points");
    }
    CL_SUCCESS
}

/// The loader dlcloses a layer when it fails or unloads; clayout keeps a thread and exit
/// handlers, so its code must stay mapped: make the library undeletable.
fn pin() {
    let Some(path) = our_path() else { return };
    let Ok(c) = std::ffi::CString::new(path) else { return };
    // SAFETY: RTLD_NOLOAD only finds clayout, already loaded; RTLD_NODELETE keeps it mapped
    // for the rest of the process. The reference taken is deliberately never closed.
    unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD | libc::RTLD_NODELETE) };
}

/// Properties of `clInitLayerWithProperties`: none changes what clayout does (it tears down at
/// exit either way, and `clDeinitLayer` is safe to call or not), so each is only logged.
///
/// # Safety
/// `p` is null or a list of (name, value) pairs ended by CL_LAYER_PROPERTIES_LIST_END.
unsafe fn read_properties(p: *const cl_layer_properties) {
    if p.is_null() {
        return;
    }
    for i in 0..MAX_PROPERTIES {
        // SAFETY: within the list, which ends at its terminator (checked before reading on).
        let name = unsafe { *p.add(2 * i) };
        if name == CL_LAYER_PROPERTIES_LIST_END {
            return;
        }
        // SAFETY: a property name is followed by its value.
        let value = unsafe { *p.add(2 * i + 1) };
        crate::log::debug_with(|| format!("layer property {name:#x} = {value:#x} ignored"));
    }
}

// ---- which route intercepts a call ------------------------------------------------------------

fn depth() -> u32 {
    this().depth()
}

/// Restores this thread's count when a call of an export ends, unwinding included; and the
/// thread's block, for the call to count itself in.
pub struct Scope(u32, pub &'static ThisThread);

impl Drop for Scope {
    fn drop(&mut self) {
        self.1.set_depth(self.0);
    }
}

/// What a preloaded export does with a call.
pub enum FromExport {
    /// clayout is a layer of the loader: forward to the loader, whose dispatch brings the call
    /// to clayout's table.
    Forward(Scope),
    /// Intercept it here.
    Intercept(Scope),
}

#[inline]
pub fn from_export() -> FromExport {
    let t = this();
    let saved = t.depth();
    if real::is_layered() {
        t.set_depth(0);
        FromExport::Forward(Scope(saved, t))
    } else {
        t.set_depth(saved + 1);
        FromExport::Intercept(Scope(saved, t))
    }
}

/// Whether a call that reached clayout's layer table is intercepted there: not when a
/// preloaded export on this thread intercepts it already (its own call down, through the
/// loader, during which the loader loaded its layers).
pub fn from_layer() -> bool {
    depth() == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_info_answers_the_version_and_the_name() {
        // SAFETY (every call below): each buffer is as large as the size passed with it.
        let mut v: cl_layer_api_version = 0;
        let mut n = 0;
        let r = unsafe { info(CL_LAYER_API_VERSION, 4, &mut v as *mut _ as *mut c_void, &mut n) };
        assert_eq!((r, v, n), (CL_SUCCESS, CL_LAYER_API_VERSION_100, 4));
        let r = unsafe { info(CL_LAYER_API_VERSION, 2, &mut v as *mut _ as *mut c_void, std::ptr::null_mut()) };
        assert_eq!(r, CL_INVALID_VALUE);
        let mut size = 0;
        assert_eq!(unsafe { info(CL_LAYER_NAME, 0, std::ptr::null_mut(), &mut size) }, CL_SUCCESS);
        let mut buf = vec![0u8; size];
        assert_eq!(unsafe { info(CL_LAYER_NAME, size, buf.as_mut_ptr() as *mut c_void, std::ptr::null_mut()) }, 0);
        assert!(buf.starts_with(b"clayout ") && buf.ends_with(b"\0"));
        assert_eq!(unsafe { info(0x4299, 0, std::ptr::null_mut(), &mut size) }, CL_INVALID_VALUE);
    }

    #[test]
    fn a_thread_passes_through_only_its_exports_own_calls() {
        // Not layered in unit tests: an export intercepts, and while it does, the layer table
        // passes calls of this thread through; afterwards it intercepts them again.
        assert!(from_layer());
        {
            let FromExport::Intercept(_outer) = from_export() else { panic!("not layered") };
            assert!(!from_layer());
            {
                let FromExport::Intercept(_inner) = from_export() else { panic!() };
                assert!(!from_layer());
            }
            assert!(!from_layer());
            // Another thread is unaffected.
            assert!(std::thread::spawn(from_layer).join().unwrap());
        }
        assert!(from_layer());
    }

    #[test]
    fn init_rejects_missing_pointers() {
        let table = [std::ptr::null::<c_void>(); 4];
        let mut n = 0;
        let mut out = std::ptr::null();
        let t = table.as_ptr() as *const cl_icd_dispatch;
        // SAFETY (every call below): each call has a null pointer or a zero count, which init
        // rejects before reading or writing anything.
        assert_eq!(unsafe { init(4, std::ptr::null(), &mut n, &mut out, None, &[]) }, CL_INVALID_VALUE);
        assert_eq!(unsafe { init(4, t, std::ptr::null_mut(), &mut out, None, &[]) }, CL_INVALID_VALUE);
        assert_eq!(unsafe { init(4, t, &mut n, std::ptr::null_mut(), None, &[]) }, CL_INVALID_VALUE);
        assert_eq!(unsafe { init(0, t, &mut n, &mut out, None, &[]) }, CL_INVALID_VALUE);
        assert!(out.is_null());
    }
}
