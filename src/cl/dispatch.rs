//! The loader's dispatch table (`struct _cl_icd_dispatch` of `CL/cl_icd.h`): an array of
//! function pointers whose order is fixed by the ICD ABI. A loader hands a layer the table to
//! call down through, and takes back the layer's own table of the same shape.
//!
//! The slots are named here by field, with their positions taken from opencl-sys's copy of the
//! structure, so that a misspelt or unknown name cannot compile and the order is never typed
//! twice. An entry point of clayout's table (`cl::table`) that is not a field has no slot: the
//! loader cannot route it through a layer, and `cl::layer` looks it up by symbol instead.

use libc::c_void;
use opencl_sys::cl_icd::cl_icd_dispatch;
use std::mem::{offset_of, size_of};

/// Number of slots in the dispatch table clayout knows (OpenCL 3.1's, the last one reserved
/// when opencl-sys is built without 3.1).
pub const LEN: usize = size_of::<cl_icd_dispatch>() / size_of::<*const c_void>();

macro_rules! slots {
    ($($field:ident)*) => {
        /// The slot of entry point `name` in the dispatch table, if it has one.
        pub fn slot(name: &str) -> Option<usize> {
            match name {
                $( stringify!($field) => Some(offset_of!(cl_icd_dispatch, $field) / size_of::<*const c_void>()), )*
                _ => None,
            }
        }

        /// Every named slot, for the tests.
        #[cfg(test)]
        const NAMES: &[&str] = &[$(stringify!($field)),*];
    };
}

slots! {
    clGetPlatformIDs clGetPlatformInfo clGetDeviceIDs clGetDeviceInfo clCreateContext
    clCreateContextFromType clRetainContext clReleaseContext clGetContextInfo clCreateCommandQueue
    clRetainCommandQueue clReleaseCommandQueue clGetCommandQueueInfo clSetCommandQueueProperty
    clCreateBuffer clCreateImage2D clCreateImage3D clRetainMemObject clReleaseMemObject
    clGetSupportedImageFormats clGetMemObjectInfo clGetImageInfo clCreateSampler clRetainSampler
    clReleaseSampler clGetSamplerInfo clCreateProgramWithSource clCreateProgramWithBinary
    clRetainProgram clReleaseProgram clBuildProgram clUnloadCompiler clGetProgramInfo
    clGetProgramBuildInfo clCreateKernel clCreateKernelsInProgram clRetainKernel clReleaseKernel
    clSetKernelArg clGetKernelInfo clGetKernelWorkGroupInfo clWaitForEvents clGetEventInfo
    clRetainEvent clReleaseEvent clGetEventProfilingInfo clFlush clFinish clEnqueueReadBuffer
    clEnqueueWriteBuffer clEnqueueCopyBuffer clEnqueueReadImage clEnqueueWriteImage
    clEnqueueCopyImage clEnqueueCopyImageToBuffer clEnqueueCopyBufferToImage clEnqueueMapBuffer
    clEnqueueMapImage clEnqueueUnmapMemObject clEnqueueNDRangeKernel clEnqueueTask
    clEnqueueNativeKernel clEnqueueMarker clEnqueueWaitForEvents clEnqueueBarrier
    clGetExtensionFunctionAddress clCreateFromGLBuffer clCreateFromGLTexture2D
    clCreateFromGLTexture3D clCreateFromGLRenderbuffer clGetGLObjectInfo clGetGLTextureInfo
    clEnqueueAcquireGLObjects clEnqueueReleaseGLObjects clGetGLContextInfoKHR
    clGetDeviceIDsFromD3D10KHR clCreateFromD3D10BufferKHR clCreateFromD3D10Texture2DKHR
    clCreateFromD3D10Texture3DKHR clEnqueueAcquireD3D10ObjectsKHR clEnqueueReleaseD3D10ObjectsKHR
    clSetEventCallback clCreateSubBuffer clSetMemObjectDestructorCallback clCreateUserEvent
    clSetUserEventStatus clEnqueueReadBufferRect clEnqueueWriteBufferRect clEnqueueCopyBufferRect
    clCreateSubDevicesEXT clRetainDeviceEXT clReleaseDeviceEXT clCreateEventFromGLsyncKHR
    clCreateSubDevices clRetainDevice clReleaseDevice clCreateImage
    clCreateProgramWithBuiltInKernels clCompileProgram clLinkProgram clUnloadPlatformCompiler
    clGetKernelArgInfo clEnqueueFillBuffer clEnqueueFillImage clEnqueueMigrateMemObjects
    clEnqueueMarkerWithWaitList clEnqueueBarrierWithWaitList
    clGetExtensionFunctionAddressForPlatform clCreateFromGLTexture clGetDeviceIDsFromD3D11KHR
    clCreateFromD3D11BufferKHR clCreateFromD3D11Texture2DKHR clCreateFromD3D11Texture3DKHR
    clCreateFromDX9MediaSurfaceKHR clEnqueueAcquireD3D11ObjectsKHR clEnqueueReleaseD3D11ObjectsKHR
    clGetDeviceIDsFromDX9MediaAdapterKHR clEnqueueAcquireDX9MediaSurfacesKHR
    clEnqueueReleaseDX9MediaSurfacesKHR clCreateFromEGLImageKHR clEnqueueAcquireEGLObjectsKHR
    clEnqueueReleaseEGLObjectsKHR clCreateEventFromEGLSyncKHR clCreateCommandQueueWithProperties
    clCreatePipe clGetPipeInfo clSVMAlloc clSVMFree clEnqueueSVMFree clEnqueueSVMMemcpy
    clEnqueueSVMMemFill clEnqueueSVMMap clEnqueueSVMUnmap clCreateSamplerWithProperties
    clSetKernelArgSVMPointer clSetKernelExecInfo clGetKernelSubGroupInfoKHR clCloneKernel
    clCreateProgramWithIL clEnqueueSVMMigrateMem clGetDeviceAndHostTimer clGetHostTimer
    clGetKernelSubGroupInfo clSetDefaultDeviceCommandQueue clSetProgramReleaseCallback
    clSetProgramSpecializationConstant clCreateBufferWithProperties clCreateImageWithProperties
    clSetContextDestructorCallback clGetKernelSuggestedLocalWorkSize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_follow_the_icd_abi() {
        // Positions every loader agrees on, as offsetof() gives them with the system's
        // CL/cl_icd.h: the first, the 1.0 block, the 1.2, 2.0 and 3.0 blocks.
        assert_eq!(slot("clGetPlatformIDs"), Some(0));
        assert_eq!(slot("clCreateBuffer"), Some(14));
        assert_eq!(slot("clEnqueueNDRangeKernel"), Some(59));
        assert_eq!(slot("clGetExtensionFunctionAddress"), Some(65));
        assert_eq!(slot("clCreateSubDevices"), Some(93));
        assert_eq!(slot("clCreateCommandQueueWithProperties"), Some(123));
        assert_eq!(slot("clSetContextDestructorCallback"), Some(148));
        assert_eq!(slot("clNotAnEntryPoint"), None);
    }

    #[test]
    fn every_slot_is_named_once() {
        assert_eq!(LEN, 150);
        let mut seen = [false; LEN];
        for name in NAMES {
            let s = slot(name).unwrap();
            assert!(!seen[s], "{name} shares slot {s}");
            seen[s] = true;
        }
        assert!(seen.iter().all(|s| *s), "unnamed slots: {:?}", (0..LEN).filter(|i| !seen[*i]).collect::<Vec<_>>());
    }

    #[test]
    fn every_entry_point_of_the_table_has_a_slot() {
        // Not a requirement (an entry point without a slot is looked up by symbol), but today
        // none lacks one; a new line of the table without a slot should be a conscious choice.
        let missing: Vec<&str> = crate::cl::FN_NAMES.iter().copied().filter(|n| slot(n).is_none()).collect();
        assert!(missing.is_empty(), "{missing:?}");
    }
}
