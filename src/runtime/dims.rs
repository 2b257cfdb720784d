//! The shape of one launch as clayout sees it (its work sizes), and how the launch itself is
//! enqueued once its buffers are ready.

use libc::size_t;
use opencl_sys::*;

/// Up to three work sizes, kept in place: every launch makes these, and allocates nothing for
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    v: [u64; 3],
    n: u8,
}

impl Sizes {
    pub fn of(s: &[u64]) -> Sizes {
        let mut v = [0; 3];
        let n = s.len().min(3);
        v[..n].copy_from_slice(&s[..n]);
        Sizes { v, n: n as u8 }
    }
}

impl std::ops::Deref for Sizes {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        &self.v[..self.n as usize]
    }
}

/// The work sizes of a launch, as the extents see them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    pub global: Sizes,
    pub local: Option<Sizes>,
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
        let read = |p: *const size_t| {
            let mut v = [0u64; 3];
            let n = work_dim.min(3) as usize;
            for (d, x) in v.iter_mut().enumerate().take(n) {
                *x = *p.add(d) as u64;
            }
            Sizes { v, n: n as u8 }
        };
        Dims {
            global: if global.is_null() { Sizes::of(&[]) } else { read(global) },
            local: (!local.is_null()).then(|| read(local)),
            task: false,
            offset: !offset.is_null() && read(offset).iter().any(|&o| o != 0),
        }
    }

    /// `clEnqueueTask`: one work-item in one group.
    pub fn task() -> Dims {
        Dims { global: Sizes::of(&[1]), local: Some(Sizes::of(&[1])), task: true, offset: false }
    }
}

/// Enqueues the launch itself: the kernel object to run, a 1-D work-group size replacing the
/// application's (None keeps it), the complete wait list, and the event pointer to pass.
pub trait Enqueue: Fn(cl_kernel, Option<usize>, cl_uint, *const cl_event, *mut cl_event) -> cl_int {}
impl<F: Fn(cl_kernel, Option<usize>, cl_uint, *const cl_event, *mut cl_event) -> cl_int> Enqueue for F {}
