//! The DL runtime (thesis chapter 5.5): keeps every buffer's layout, converts buffers into the
//! layout an annotated kernel needs before it runs, and back before the host can see them.
//!
//! - `state`: the per-buffer state machine (pure);
//! - `convert`: carrying out a plan on a queue, with the host fallback;
//! - `access`: host-visible accesses; `launch`: kernel launches;
//! - `order`: conversions ordered against the application's commands on every queue and thread;
//! - `program`: annotations found at program creation, build options, structure probing;
//! - `probe`: clayout's own small programs (structure probes);
//! - `transparent`: rewritten kernels, their private program, and which kernel each launch runs;
//! - `timing`: device time of conversions on profiling queues;
//! - `cost`: the cost model that picks, per launch, the form a rewritten kernel runs in (pure);
//! - `measure`: timing a launch for it; `tune`: the tile search and conversion costs per device;
//! - `habits`: whether the buffers a kernel converts come back to host layout, across runs.

pub mod access;
pub mod convert;
pub mod cost;
pub mod habits;
pub mod launch;
pub mod measure;
pub mod order;
pub mod probe;
pub mod program;
pub mod state;
pub mod timing;
pub mod transparent;
pub mod tune;

use crate::registry::BufferInfo;

/// The application's last reference to a buffer is gone.
pub fn buffer_released(info: &BufferInfo) {
    convert::forget(info);
}

/// At the application's last release of a context, after clayout released its own objects
/// of it: the context's reference count must then be 1 (the release about to happen), unless
/// the application itself still holds an object of the context. Anything else is an object
/// clayout created and did not release: logged and counted (`contexts_left_referenced`).
pub fn check_context_references(context: opencl_sys::cl_context) {
    use crate::registry::{self, key};
    let count = || {
        let mut refs: opencl_sys::cl_uint = 0;
        let r = unsafe {
            crate::real::api().clGetContextInfo(
                context,
                opencl_sys::CL_CONTEXT_REFERENCE_COUNT,
                std::mem::size_of::<opencl_sys::cl_uint>(),
                &mut refs as *mut _ as *mut libc::c_void,
                std::ptr::null_mut(),
            )
        };
        (r == opencl_sys::CL_SUCCESS).then_some(refs)
    };
    // An implementation may still hold the context for commands whose completion it has not
    // processed yet (PoCL does for a few milliseconds): give it up to 100 ms, only when needed.
    let mut refs = match count() {
        Some(n) => n,
        None => return,
    };
    for _ in 0..20 {
        if refs <= 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
        refs = count().unwrap_or(refs);
    }
    let c = key(context);
    let reg = registry::get();
    let app_objects = reg.buffers.snapshot().iter().filter(|(_, b)| b.context == c).count()
        + reg.queues.snapshot().iter().filter(|(_, q)| q.context == c).count()
        + reg.programs.snapshot().iter().filter(|(_, p)| p.context == c).count();
    let left = refs > 1 && app_objects == 0;
    if left {
        crate::log::warn(&format!(
            "context {c:#x}: {} reference(s) left after clayout released its own objects of it",
            refs - 1
        ));
    }
    crate::stats::context_released(left);
}

/// Why clayout no longer converts any buffer to a device layout, once something made
/// conversions unsafe for the rest of the process.
static STOPPED: parking_lot::Mutex<Option<String>> = parking_lot::Mutex::new(None);

/// Stops all further conversions to device layouts (buffers already converted still come back
/// when the application reads them). Kernels written for a device layout then fail to launch.
pub fn stop_converting(why: &str) {
    let mut s = STOPPED.lock();
    if s.is_none() {
        crate::log::warn(&format!("{why}; clayout converts no more buffers"));
        crate::stats::fallback("process", why);
        *s = Some(why.to_string());
    }
}

/// The reason conversions were stopped, if they were.
pub fn stopped() -> Option<String> {
    STOPPED.lock().clone()
}

/// Whether an extension entry point of this name can access buffer contents: enqueue calls,
/// command buffers, interop acquire/release, SVM and unified shared memory. Queries, sub-group
/// and ICD bookkeeping entry points cannot.
pub fn extension_touches_buffers(name: &str) -> bool {
    ["Enqueue", "CommandBuffer", "Command", "SVM", "Mem", "Acquire", "Release", "Import"]
        .iter()
        .any(|w| name.contains(w))
        && !["Get", "Info"].iter().all(|w| name.contains(w))
}

#[cfg(test)]
mod tests {
    use super::extension_touches_buffers as touches;

    #[test]
    fn extensions_that_can_touch_buffers() {
        for n in [
            "clEnqueueAcquireGLObjects",
            "clCommandNDRangeKernelKHR",
            "clCreateCommandBufferKHR",
            "clEnqueueMemcpyINTEL",
            "clSVMAllocARM",
            "clImportMemoryARM",
        ] {
            assert!(touches(n), "{n}");
        }
        for n in
            ["clIcdGetPlatformIDsKHR", "clGetKernelSubGroupInfoKHR", "clGetMemAllocInfoINTEL", "clTerminateContextKHR"]
        {
            assert!(!touches(n), "{n}");
        }
    }
}
