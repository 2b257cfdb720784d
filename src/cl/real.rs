//! Finding the real OpenCL library behind our exports, once, and the switch to the next
//! layer's entry points when a loader loads clayout as a layer (`cl::layer`).
//!
//! Preloaded, the order is, first that provides `clGetPlatformIDs` wins, and every entry point
//! then comes from that one library (mixing loaders would hand one loader's objects to another):
//! 1. `CLAYOUT_OPENCL_LIBRARY`, when set: that file, opened privately.
//! 2. `dlsym(RTLD_NEXT)`: the loader the application linked, the usual LD_PRELOAD case.
//! 3. A loader already mapped into the process but invisible to RTLD_NEXT: pyopencl's wheel
//!    bundles its own `libOpenCL-*.so` and Python loads the extension with RTLD_LOCAL.
//! 4. `dlopen("libOpenCL.so.1")`, the system loader.
//!
//! An address inside clayout itself is never accepted, so an export can never forward to itself.
//!
//! Layered, `api()` answers with the entry points of the dispatch table the loader handed
//! clayout from the moment `attach` publishes them; `preloaded()` stays the library behind the
//! exports, which then only forward (see `cl::layer`).

use super::api::Api;
use super::object::is_ours;
use libc::{c_char, c_int, c_void};
use once_cell::sync::OnceCell;
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicPtr, Ordering};

static PRELOADED: OnceCell<Api> = OnceCell::new();
static SOURCE: OnceCell<String> = OnceCell::new();

/// The next layer's entry points while clayout is a loader layer; null before. Never freed: a
/// call in flight on another thread may still hold the previous one when a loader re-attaches.
static LAYERED: AtomicPtr<Layered> = AtomicPtr::new(std::ptr::null_mut());

struct Layered {
    api: Api,
    source: String,
}

/// The entry points clayout calls down to: the next layer's when a loader loaded clayout as a
/// layer, else the real library's, resolved at the first call, not at load time, so that a
/// loader mapped later (pyopencl's) is found.
pub fn api() -> &'static Api {
    match layered() {
        Some(l) => &l.api,
        None => preloaded(),
    }
}

/// The real library behind the preloaded exports, whatever the route.
pub fn preloaded() -> &'static Api {
    PRELOADED.get_or_init(|| {
        let (api, from) = resolve();
        let _ = SOURCE.set(from);
        api
    })
}

/// Where the entry points came from, for the log and the stats.
pub fn source() -> Option<&'static str> {
    match layered() {
        Some(l) => Some(l.source.as_str()),
        None => SOURCE.get().map(|s| s.as_str()),
    }
}

/// Whether a loader has loaded clayout as a layer (and not unloaded it since).
pub fn is_layered() -> bool {
    !LAYERED.load(Ordering::Acquire).is_null()
}

fn layered() -> Option<&'static Layered> {
    let p = LAYERED.load(Ordering::Acquire);
    // SAFETY: a non-null pointer comes from Box::leak in `attach` and is never freed.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// From now on `api()` answers with `api` (`source` says where it came from).
pub(crate) fn attach(api: Api, source: String) {
    let p = Box::leak(Box::new(Layered { api, source }));
    LAYERED.store(p, Ordering::Release);
}

fn resolve() -> (Api, String) {
    let probe = b"clGetPlatformIDs\0";
    if let Some(path) = crate::config::get().opencl_library.clone() {
        if let Some(h) = open(&path, 0) {
            if lookup(h, probe).is_some() {
                return (Api::resolve(&|n| lookup(h, n).unwrap_or(std::ptr::null_mut())), path);
            }
        }
        crate::log::warn(&format!(
            "CLAYOUT_OPENCL_LIBRARY={path} has no OpenCL entry points; looking for the loader as usual"
        ));
    }
    if lookup(libc::RTLD_NEXT, probe).is_some() {
        let api = Api::resolve(&|n| lookup(libc::RTLD_NEXT, n).unwrap_or(std::ptr::null_mut()));
        return (api, "RTLD_NEXT".to_string());
    }
    for path in mapped_loaders() {
        if let Some(h) = open(&path, libc::RTLD_NOLOAD) {
            if lookup(h, probe).is_some() {
                return (Api::resolve(&|n| lookup(h, n).unwrap_or(std::ptr::null_mut())), path);
            }
        }
    }
    for name in ["libOpenCL.so.1", "libOpenCL.so"] {
        if let Some(h) = open(name, 0) {
            if lookup(h, probe).is_some() {
                return (Api::resolve(&|n| lookup(h, n).unwrap_or(std::ptr::null_mut())), name.to_string());
            }
        }
    }
    crate::log::error("no OpenCL library found: every OpenCL call answers as an absent entry point");
    (Api::resolve(&|_| std::ptr::null_mut()), "none".to_string())
}

fn open(path: &str, extra: c_int) -> Option<*mut c_void> {
    let c = CString::new(path).ok()?;
    // SAFETY: plain dlopen of a path; RTLD_LOCAL keeps the loader's symbols out of the global
    // scope so that our exports stay the ones the application binds to.
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL | extra) };
    (!h.is_null()).then_some(h)
}

/// `dlsym`, refusing any address that lies inside clayout itself.
fn lookup(handle: *mut c_void, name: &[u8]) -> Option<*mut c_void> {
    // SAFETY: name is NUL-terminated (all callers pass literals ending in \0).
    let p = unsafe { libc::dlsym(handle, name.as_ptr() as *const c_char) };
    if p.is_null() || is_ours(p) {
        None
    } else {
        Some(p)
    }
}

/// Paths of OpenCL loaders already mapped into this process, other than clayout.
fn mapped_loaders() -> Vec<String> {
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        let out = &mut *(data as *mut Vec<String>);
        let name = (*info).dlpi_name;
        if !name.is_null() {
            if let Ok(path) = CStr::from_ptr(name).to_str() {
                let base = path.rsplit('/').next().unwrap_or(path);
                if base.starts_with("libOpenCL") && !out.iter().any(|p| p == path) {
                    out.push(path.to_string());
                }
            }
        }
        0
    }
    let mut out: Vec<String> = Vec::new();
    // SAFETY: the callback only reads the entries it is given.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut out as *mut Vec<String> as *mut c_void) };
    out
}

/// `name` (NUL-terminated) as exported by the already loaded object at `path`, never one of
/// clayout's own.
pub(crate) fn symbol_in(path: &str, name: &[u8]) -> Option<*mut c_void> {
    let h = open(path, libc::RTLD_NOLOAD)?;
    let p = lookup(h, name);
    // SAFETY: `h` came from a successful dlopen just above; closing it drops only that
    // reference (RTLD_NOLOAD: the object was loaded before and stays loaded).
    unsafe { libc::dlclose(h) };
    p
}
