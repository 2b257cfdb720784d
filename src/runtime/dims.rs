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

/// A launch's work sizes as the application passed them: read into [`Dims`], or compared with
/// a launch's in place (the express lane, `lane`, where every instruction shows).
#[derive(Clone, Copy)]
pub enum WorkSizes {
    Range { work_dim: cl_uint, offset: *const size_t, global: *const size_t, local: *const size_t },
    Task,
}

impl WorkSizes {
    /// # Safety
    /// Each pointer, when not null, must point to `work_dim` sizes, as OpenCL requires.
    pub unsafe fn dims(&self) -> Dims {
        match *self {
            WorkSizes::Range { work_dim, offset, global, local } => Dims::new(work_dim, offset, global, local),
            WorkSizes::Task => Dims::task(),
        }
    }

    /// Whether these are the work sizes `d`.
    ///
    /// # Safety
    /// As for [`WorkSizes::dims`].
    #[inline]
    pub unsafe fn is(&self, d: &Dims) -> bool {
        let WorkSizes::Range { work_dim, offset, global, local } = *self else { return d.task };
        let n = work_dim as usize;
        if d.task || n == 0 || n > 3 || d.global.n as usize != n || global.is_null() {
            return false;
        }
        // Every launch of the express lane comes here: read as plain loops over at most three.
        let same = |p: *const size_t, s: &Sizes| {
            let mut i = 0;
            while i < n {
                if *p.add(i) as u64 != s.v[i] {
                    return false;
                }
                i += 1;
            }
            true
        };
        let local_same = match &d.local {
            None => local.is_null(),
            Some(l) => !local.is_null() && l.n as usize == n && same(local, l),
        };
        if !local_same || !same(global, &d.global) {
            return false;
        }
        let mut offset_set = false;
        if !offset.is_null() {
            for i in 0..n {
                offset_set |= *offset.add(i) != 0;
            }
        }
        offset_set == d.offset
    }
}

impl Dims {
    /// # Safety
    /// `global`, `local` and `offset` (each when not null) must point to `work_dim` sizes, as
    /// OpenCL requires.
    pub unsafe fn new(work_dim: cl_uint, offset: *const size_t, global: *const size_t, local: *const size_t) -> Dims {
        let n = work_dim.min(3) as usize;
        let read = |p: *const size_t| {
            let mut v = [0u64; 3];
            for (d, x) in v.iter_mut().enumerate().take(n) {
                *x = *p.add(d) as u64;
            }
            Sizes { v, n: n as u8 }
        };
        Dims {
            global: if global.is_null() { Sizes::of(&[]) } else { read(global) },
            local: (!local.is_null()).then(|| read(local)),
            task: false,
            offset: !offset.is_null() && (0..n).any(|d| *offset.add(d) != 0),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_sizes_are_the_dims_they_read() {
        let sizes: [&[usize]; 4] = [&[64], &[64, 8], &[64, 8, 2], &[8, 64]];
        let locals: [Option<&[usize]>; 3] = [None, Some(&[16]), Some(&[16, 8])];
        let offsets: [Option<&[usize]>; 3] = [None, Some(&[0, 0, 0]), Some(&[0, 4, 0])];
        let ptr = |s: Option<&[usize]>| s.map_or(std::ptr::null(), |s| s.as_ptr());
        let mut all = Vec::new();
        for g in sizes {
            for l in locals.iter().filter(|l| l.is_none_or(|l| l.len() == g.len())) {
                for o in offsets {
                    let o = o.map(|o| &o[..g.len()]);
                    all.push(WorkSizes::Range {
                        work_dim: g.len() as cl_uint,
                        offset: ptr(o),
                        global: g.as_ptr(),
                        local: ptr(*l),
                    });
                }
            }
        }
        all.push(WorkSizes::Task);
        for a in &all {
            // SAFETY: every pointer above points to `work_dim` sizes.
            let da = unsafe { a.dims() };
            for b in &all {
                let db = unsafe { b.dims() };
                assert_eq!(unsafe { b.is(&da) }, da == db, "{da:?} against {db:?}");
            }
        }
    }
}
