//! One reference to an OpenCL object, released when dropped, whatever path leaves the code that
//! holds it: clayout's own kernels, buffers, queues and programs, the events of its commands,
//! and references it takes on the application's objects while it needs them.

use super::real::api;
use opencl_sys::*;

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident, $raw:ty, $retain:ident, $release:ident) => {
        $(#[$doc])*
        #[derive(Debug, PartialEq, Eq)]
        pub struct $name($raw);

        // SAFETY: OpenCL objects may be used, retained and released from any thread; the one
        // call that is not thread-safe on a shared object (clSetKernelArg on one kernel) is
        // serialized by the code that owns the kernel.
        unsafe impl Send for $name {}
        unsafe impl Sync for $name {}

        impl $name {
            /// Takes over a reference the caller holds (an object just created, or an event
            /// just returned by an enqueue). None for a null handle.
            pub fn from_raw(raw: $raw) -> Option<Self> {
                (!raw.is_null()).then(|| $name(raw))
            }

            /// A new reference to an object someone else holds (the application, the registry).
            /// None when the handle is null or the real library refuses the retain.
            pub fn retain(raw: $raw) -> Option<Self> {
                if raw.is_null() {
                    return None;
                }
                // SAFETY: the caller passes a live object (cl's contract); a failed retain is
                // answered, not relied upon.
                (unsafe { api().$retain(raw) } == CL_SUCCESS).then(|| $name(raw))
            }

            pub fn raw(&self) -> $raw {
                self.0
            }

            /// Hands the reference to the caller, who must release it.
            pub fn into_raw(self) -> $raw {
                let raw = self.0;
                std::mem::forget(self);
                raw
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: the handle holds exactly one reference, taken when it was made.
                unsafe { api().$release(self.0) };
            }
        }
    };
}

handle!(
    /// An event of a command clayout enqueued, or a reference it took on the application's.
    Event, cl_event, clRetainEvent, clReleaseEvent
);
handle!(
    /// A kernel of one of clayout's programs (conversion kernels, rewritten copies, probes).
    Kernel, cl_kernel, clRetainKernel, clReleaseKernel
);
handle!(
    /// A buffer clayout created for itself (scratch, probe results).
    Mem, cl_mem, clRetainMemObject, clReleaseMemObject
);
handle!(
    /// A queue clayout created for itself, or a reference it holds on an application's queue.
    Queue, cl_command_queue, clRetainCommandQueue, clReleaseCommandQueue
);
handle!(
    /// A program clayout built for itself.
    Program, cl_program, clRetainProgram, clReleaseProgram
);
handle!(
    /// A reference on an application's context, held while clayout's objects of it live.
    Context, cl_context, clRetainContext, clReleaseContext
);
