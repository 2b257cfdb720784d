//! Which loaded object an address belongs to: clayout must never take one of its own entry
//! points for the next library's, or a call would loop back into itself.

use libc::c_void;
use once_cell::sync::OnceCell;
use std::ffi::CStr;

/// Base address and path of the object that contains `addr`.
fn object_of(addr: *const c_void) -> Option<(usize, String)> {
    // SAFETY: Dl_info is plain data; an all-zero value is a valid "nothing found".
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address and fills `info`.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 {
        return None;
    }
    let path = if info.dli_fname.is_null() {
        String::new()
    } else {
        // SAFETY: dladdr's file name is a NUL-terminated string owned by the dynamic linker.
        unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned()
    };
    Some((info.dli_fbase as usize, path))
}

/// Whether `p` lies inside clayout itself.
pub fn is_ours(p: *const c_void) -> bool {
    static OURS: OnceCell<Option<usize>> = OnceCell::new();
    let ours = *OURS.get_or_init(|| object_of(is_ours as *const c_void).map(|(base, _)| base));
    ours.is_some() && object_of(p).map(|(base, _)| base) == ours
}

/// The path of the object that contains `addr`, as the dynamic linker loaded it.
pub fn path_of(addr: *const c_void) -> Option<String> {
    object_of(addr).map(|(_, path)| path).filter(|p| !p.is_empty())
}

/// clayout's own path.
pub fn our_path() -> Option<String> {
    path_of(our_path as *const c_void)
}
