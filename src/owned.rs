//! One reference to an OpenCL object clayout created for itself (a scratch buffer, a queue of
//! its own, a kernel of its programs), released when dropped, whatever path leaves the code
//! that made it.

use crate::real::api;
use opencl_sys::*;

macro_rules! owned {
    ($name:ident, $handle:ty, $release:ident) => {
        #[derive(Debug)]
        pub struct $name(pub $handle);

        impl Drop for $name {
            fn drop(&mut self) {
                // Null: the creation failed, and there is nothing to release.
                if !self.0.is_null() {
                    // SAFETY: the owner holds one reference, taken when the object was created.
                    unsafe { api().$release(self.0) };
                }
            }
        }
    };
}

owned!(OwnedKernel, cl_kernel, clReleaseKernel);
owned!(OwnedMem, cl_mem, clReleaseMemObject);
owned!(OwnedQueue, cl_command_queue, clReleaseCommandQueue);
