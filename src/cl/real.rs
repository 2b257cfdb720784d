//! Finding the real OpenCL library behind our exports, once.
//!
//! Order, first that provides `clGetPlatformIDs` wins, and every entry point then comes from
//! that one library (mixing loaders would hand one loader's objects to another):
//! 1. `CLAYOUT_OPENCL_LIBRARY`, when set: that file, opened privately.
//! 2. `dlsym(RTLD_NEXT)`: the loader the application linked, the usual LD_PRELOAD case.
//! 3. A loader already mapped into the process but invisible to RTLD_NEXT: pyopencl's wheel
//!    bundles its own `libOpenCL-*.so` and Python loads the extension with RTLD_LOCAL.
//! 4. `dlopen("libOpenCL.so.1")`, the system loader.
//!
//! An address inside clayout itself is never accepted, so an export can never forward to itself.

use super::api::Api;
use libc::{c_char, c_int, c_void};
use once_cell::sync::OnceCell;
use std::ffi::{CStr, CString};

static API: OnceCell<Api> = OnceCell::new();
static SOURCE: OnceCell<String> = OnceCell::new();

/// The real entry points. Resolved at the first call, not at load time, so that a loader
/// mapped later (pyopencl's) is found.
pub fn api() -> &'static Api {
    API.get_or_init(|| {
        let (api, from) = resolve();
        let _ = SOURCE.set(from);
        api
    })
}

/// Where the real entry points came from, for the log and the stats.
pub fn source() -> Option<&'static str> {
    SOURCE.get().map(|s| s.as_str())
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

fn object_base(addr: *const c_void) -> Option<usize> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 {
        return None;
    }
    Some(info.dli_fbase as usize)
}

fn is_ours(p: *mut c_void) -> bool {
    static OURS: OnceCell<Option<usize>> = OnceCell::new();
    let ours = *OURS.get_or_init(|| object_base(is_ours as *const c_void));
    ours.is_some() && object_base(p) == ours
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
