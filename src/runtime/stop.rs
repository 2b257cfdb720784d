//! The process-wide stop: once something makes conversions unsafe for the rest of the process
//! (an extension entry point that can touch buffers behind clayout's back, calls that could not
//! be ordered), no buffer is converted to a device layout again. Buffers already converted still
//! come back when the application reads them; kernels written for a device layout then fail to
//! launch.

use parking_lot::Mutex;

static STOPPED: Mutex<Option<String>> = Mutex::new(None);

/// Stops all further conversions to device layouts, saying why once.
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
