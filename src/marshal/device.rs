//! What a conversion plan needs to know about a device (local memory, work-group limits, the
//! coalescing width), asked once per device, and the tile clayout uses on it.

use crate::cl::info::{device_scalar, device_string};
use once_cell::sync::Lazy;
use opencl_sys::*;
use parking_lot::Mutex;
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facts {
    /// Bytes of local memory a work-group may use (at least 1 KiB is assumed).
    pub local_mem: u64,
    pub max_wg: usize,
    /// Warp / wavefront width used for group sizes: 32 NVIDIA, 64 AMD, 32 otherwise.
    pub simd: usize,
    /// Sizes the persistent PTTWAC 100 variant, which only the benchmark selects.
    #[cfg(feature = "bench")]
    pub compute_units: u32,
}

/// The coalescing width of a vendor's devices.
fn simd_width(vendor: &str) -> usize {
    let v = vendor.to_ascii_lowercase();
    if v.contains("nvidia") {
        32
    } else if v.contains("advanced micro devices") || v.contains("amd") {
        64
    } else {
        32
    }
}

/// Whether the compiler of `device` may fuse floating-point operations across statements
/// (OpenCL's default `FP_CONTRACT ON` allows it) depending on the code around them. Asked
/// once per build of a rewritten program. NVIDIA's compiler (ptxas) contracts `a*b+c` into FMA
/// across statements, and whether it does depends on the surrounding code; clang-based
/// compilers contract within one expression only (`llvm.fmuladd`) unless the build's options
/// free it (`BuildOptions::free_contraction`).
pub fn compiler_fuses_across_statements(device: cl_device_id) -> bool {
    crate::cl::info::is_nvidia(device)
}

static FACTS: Lazy<Mutex<HashMap<usize, Facts>>> = Lazy::new(|| Mutex::new(HashMap::new()));

/// The facts of `device`, asked the first time. A query the library does not answer counts as
/// the smallest device (1 KiB of local memory, work-groups of 1), for which every plan is safe.
pub fn facts(device: cl_device_id) -> Facts {
    if let Some(f) = FACTS.lock().get(&(device as usize)) {
        return f.clone();
    }
    let f = Facts {
        local_mem: device_scalar::<cl_ulong>(device, CL_DEVICE_LOCAL_MEM_SIZE).max(1024),
        max_wg: device_scalar::<usize>(device, CL_DEVICE_MAX_WORK_GROUP_SIZE).max(1),
        simd: simd_width(&device_string(device, CL_DEVICE_VENDOR)),
        #[cfg(feature = "bench")]
        compute_units: device_scalar::<cl_uint>(device, CL_DEVICE_MAX_COMPUTE_UNITS).max(1),
    };
    FACTS.lock().insert(device as usize, f.clone());
    f
}

/// The tile clayout uses on this device: `CLAYOUT_TILE` when set, else the memory-coalescing
/// unit (32 on NVIDIA, 64 on AMD wavefronts, 32 elsewhere, PoCL included).
pub fn default_tile(device: cl_device_id) -> u32 {
    if let Some(t) = crate::config::get().tile.0 {
        return t.max(1);
    }
    facts(device).simd as u32
}

#[cfg(test)]
mod tests {
    use super::simd_width;
    use crate::cl::info::names_nvidia as fuses_across_statements;

    #[test]
    fn compilers_that_fuse_across_statements() {
        assert!(fuses_across_statements("NVIDIA Corporation", "NVIDIA CUDA"));
        assert!(fuses_across_statements("", "NVIDIA CUDA"), "the platform's name alone");
        assert!(!fuses_across_statements("AuthenticAMD", "Portable Computing Language"));
        assert!(!fuses_across_statements("Intel(R) Corporation", "Intel(R) OpenCL"));
        assert!(!fuses_across_statements("", ""));
    }

    #[test]
    fn coalescing_width_by_vendor() {
        assert_eq!(simd_width("NVIDIA Corporation"), 32);
        assert_eq!(simd_width("Advanced Micro Devices, Inc."), 64);
        assert_eq!(simd_width("AMD"), 64);
        assert_eq!(simd_width("Intel(R) Corporation"), 32);
        assert_eq!(simd_width(""), 32);
    }
}
