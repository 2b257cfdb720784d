//! The shape of one launch as clayout sees it (its work sizes), and how the launch itself is
//! enqueued once its buffers are ready.

use libc::size_t;
use opencl_sys::*;

/// The work sizes of a launch, as the extents see them.
pub struct Dims {
    pub global: Vec<u64>,
    pub local: Option<Vec<u64>>,
    /// `clEnqueueTask`, which takes no work sizes.
    pub task: bool,
    /// The launch gives a global work offset other than zero: its global ids do not start at 0.
    pub offset: bool,
}

impl Dims {
    /// # Safety
    /// `global`, `local` and `offset` (each when not null) must point to `work_dim` sizes, as
    /// OpenCL requires.
    pub unsafe fn new(work_dim: cl_uint, offset: *const size_t, global: *const size_t, local: *const size_t) -> Dims {
        let read = |p: *const size_t| (0..work_dim.min(3) as usize).map(|d| *p.add(d) as u64).collect::<Vec<_>>();
        Dims {
            global: if global.is_null() { vec![] } else { read(global) },
            local: (!local.is_null()).then(|| read(local)),
            task: false,
            offset: !offset.is_null() && read(offset).iter().any(|&o| o != 0),
        }
    }

    /// `clEnqueueTask`: one work-item in one group.
    pub fn task() -> Dims {
        Dims { global: vec![1], local: Some(vec![1]), task: true, offset: false }
    }
}

/// Enqueues the launch itself: the kernel object to run, a 1-D work-group size replacing the
/// application's (None keeps it), the complete wait list, and the event pointer to pass.
pub trait Enqueue: Fn(cl_kernel, Option<usize>, cl_uint, *const cl_event, *mut cl_event) -> cl_int {}
impl<F: Fn(cl_kernel, Option<usize>, cl_uint, *const cl_event, *mut cl_event) -> cl_int> Enqueue for F {}
