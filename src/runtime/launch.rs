//! Kernel launches: every buffer argument is brought to the layout the kernel's annotation
//! asks for (its device layout), or to its host layout when the kernel has no annotation for
//! it; the launch then waits for those conversions.

use super::access::{conflicting, prepare, user_wait, BufferNeed};
use super::program::KernelPlan;
use super::state::{DeviceLayout, Need};
use crate::annotation::LaunchValues;
use crate::layout::Shape;
use crate::registry::{self, key, ArgValue, KernelInfo};
use libc::size_t;
use opencl_sys::*;

/// The work sizes of a launch, as the extents see them.
pub struct Dims {
    pub global: Vec<u64>,
    pub local: Option<Vec<u64>>,
    /// `clEnqueueTask`, which takes no work sizes.
    pub task: bool,
}

/// Enqueues the launch itself: the kernel object to run, a 1-D work-group size replacing the
/// application's (None keeps it), and the complete wait list.
pub trait Enqueue: Fn(cl_kernel, Option<usize>, cl_uint, *const cl_event) -> cl_int {}
impl<F: Fn(cl_kernel, Option<usize>, cl_uint, *const cl_event) -> cl_int> Enqueue for F {}

impl Dims {
    /// # Safety
    /// `global` (and `local` when not null) must point to `work_dim` sizes, as OpenCL requires.
    pub unsafe fn new(work_dim: cl_uint, global: *const size_t, local: *const size_t) -> Dims {
        let read = |p: *const size_t| (0..work_dim.min(3) as usize).map(|d| *p.add(d) as u64).collect::<Vec<_>>();
        Dims {
            global: if global.is_null() { vec![] } else { read(global) },
            local: (!local.is_null()).then(|| read(local)),
            task: false,
        }
    }

    /// `clEnqueueTask`: one work-item in one group.
    pub fn task() -> Dims {
        Dims { global: vec![1], local: Some(vec![1]), task: true }
    }
}

/// Runs `enqueue(kernel, n, list)` after bringing the kernel's buffer arguments into the
/// layouts it needs. `enqueue` receives the kernel object to launch (the application's).
pub unsafe fn launch(
    queue: cl_command_queue,
    kernel: cl_kernel,
    dims: Dims,
    n: cl_uint,
    list: *const cl_event,
    enqueue: impl Enqueue,
) -> cl_int {
    if let Some(_fast) = super::order::fast() {
        return enqueue(kernel, None, n, list);
    }
    let Some(info) = registry::get().kernels.get(key(kernel)) else { return enqueue(kernel, None, n, list) };
    let plan = match crate::guard("kernel plan", || info.plan()) {
        Some(Ok(plan)) => plan,
        Some(Err(why)) => return cannot_run(&info, &why),
        None => return cannot_run(&info, "internal error while planning its conversions"),
    };
    let Some(user) = user_wait(n, list) else { return enqueue(kernel, None, n, list) };
    let needs = match crate::guard("launch plan", || needs(&info, plan.as_deref(), &dims)) {
        Some(Ok(needs)) => needs,
        Some(Err(why)) => return cannot_run(&info, &why),
        None => return cannot_run(&info, "internal error while planning its conversions"),
    };
    if let Some(t) = plan.as_ref().and_then(|p| p.transparent.as_ref()) {
        return super::transparent::launch(queue, kernel, &info, t, &needs, &dims, user, enqueue);
    }
    if let Some(why) = conflicting(&needs) {
        if needs.iter().any(|n| n.must) {
            return cannot_run(&info, &why);
        }
    }
    match crate::guard("launch conversions", || prepare(queue, &needs, user)) {
        Some(Ok(w)) => enqueue(kernel, None, w.len(), w.ptr()),
        Some(Err(e)) => e,
        None => CL_OUT_OF_RESOURCES,
    }
}

/// A kernel written for a device layout that clayout cannot give it: it cannot run on
/// host-layout data, so the launch fails as one that cannot run, never with wrong data.
fn cannot_run(info: &KernelInfo, why: &str) -> cl_int {
    let what = format!("kernel {}", info.name);
    crate::log::once(
        crate::config::LogLevel::Error,
        &format!("{what}: {why}"),
        &format!("{what}: {why}; its launches fail with CL_OUT_OF_RESOURCES"),
    );
    crate::stats::fallback(&what, why);
    CL_OUT_OF_RESOURCES
}

/// What every buffer argument of this launch needs.
fn needs(info: &KernelInfo, plan: Option<&KernelPlan>, dims: &Dims) -> Result<Vec<BufferNeed>, String> {
    let args = info.args.lock().clone();
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let Some(ArgValue::Mem(h)) = a else { continue };
        if *h == 0 {
            continue;
        }
        let param = plan.and_then(|p| p.params.iter().find(|q| q.index == i));
        let need = match param {
            None => BufferNeed { mem: *h as cl_mem, need: Need::Host, must: false },
            Some(p) => {
                let buffer = registry::get()
                    .buffers
                    .get(*h)
                    .ok_or_else(|| format!("argument {} is not a buffer clayout knows", p.name))?;
                let values = launch_values(plan.unwrap(), &args, dims, buffer.size as u64 / p.struct_bytes);
                let m = p.extent.eval(&values).map_err(|e| format!("extent of {}: {e}", p.name))?;
                let shape = Shape::new(m, p.words, p.word_bytes);
                if shape.bytes() > buffer.size as u64 {
                    return Err(format!(
                        "extent of {} is {m} structures ({} bytes), more than the buffer's {} bytes",
                        p.name,
                        shape.bytes(),
                        buffer.size
                    ));
                }
                BufferNeed {
                    mem: *h as cl_mem,
                    need: Need::Device(DeviceLayout { host: p.host, device: p.device, shape }),
                    must: p.must,
                }
            }
        };
        out.push(need);
    }
    Ok(out)
}

fn launch_values(plan: &KernelPlan, args: &[Option<ArgValue>], dims: &Dims, auto_count: u64) -> LaunchValues {
    let mut v = LaunchValues {
        global: dims.global.clone(),
        local: dims.local.clone(),
        auto_count: Some(auto_count),
        ..Default::default()
    };
    for a in &plan.scalars {
        if let Some(Some(ArgValue::Bytes(b))) = args.get(a.arg_index as usize) {
            if let Ok(x) = a.int_type.decode(b) {
                v.args.insert(a.name.clone(), x);
            }
        }
    }
    v
}
