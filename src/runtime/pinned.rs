//! Which host memory is pinned: the maps of buffers created with `CL_MEM_ALLOC_HOST_PTR`, the
//! way OpenCL programs get page-locked memory (NVIDIA's guides recommend it for fast
//! transfers). Only a transfer to or from such memory runs at the bus's speed when split in
//! pieces; a transfer from pageable memory goes through the driver's staging and loses more by
//! being split than a conversion costs (`chunked`).

use opencl_sys::{cl_mem_flags, CL_MEM_ALLOC_HOST_PTR};
use parking_lot::Mutex;

/// The live maps of such buffers: (start address, length). A map can be made twice at the same
/// address; each unmap takes one entry away. Made at compile time: a short run's first read
/// looks here, and a lazy static's first look ran its initialisation there.
static MAPS: Mutex<Vec<(usize, usize)>> = parking_lot::const_mutex(Vec::new());

/// A map of `len` bytes at `ptr` of a buffer created with `flags` succeeded.
pub fn mapped(flags: cl_mem_flags, ptr: *mut libc::c_void, len: usize) {
    if flags & CL_MEM_ALLOC_HOST_PTR != 0 && !ptr.is_null() && len > 0 {
        MAPS.lock().push((ptr as usize, len));
    }
}

/// The map at `ptr` was undone.
pub fn unmapped(ptr: *mut libc::c_void) {
    let mut maps = MAPS.lock();
    if let Some(i) = maps.iter().position(|&(start, _)| start == ptr as usize) {
        maps.swap_remove(i);
    }
}

/// Whether the `len` bytes at `ptr` lie inside one live map of pinned memory.
pub fn covers(ptr: *const libc::c_void, len: usize) -> bool {
    let (p, end) = (ptr as usize, (ptr as usize).saturating_add(len));
    MAPS.lock().iter().any(|&(start, n)| p >= start && end <= start + n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_maps_of_host_allocated_buffers_count_and_only_while_mapped() {
        let base = 0x7000_0000usize as *mut libc::c_void;
        mapped(0, base, 4096);
        assert!(!covers(base, 16), "a map of an ordinary buffer is not pinned memory");
        mapped(CL_MEM_ALLOC_HOST_PTR, base, 4096);
        assert!(covers(base, 4096));
        assert!(covers((base as usize + 100) as *const _, 100));
        assert!(!covers((base as usize + 4000) as *const _, 200), "past the map's end");
        unmapped(base);
        assert!(!covers(base, 16));
    }
}
