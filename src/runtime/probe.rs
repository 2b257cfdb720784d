//! clayout's own small programs on the application's context: building a source with given
//! options, and running a one-work-item probe kernel that writes `ulong`s (sizes and offsets as
//! the device compiler sees them).

use crate::cl::{self, cmd, Program};
use opencl_sys::*;

/// Builds `source` (program text as `clc::text` holds it) for every device of `ctx`. On failure, the reason with the first line of the
/// build log that says something. `fault_site` names the build for fault injection.
pub fn build(ctx: cl_context, source: &str, options: &str, fault_site: &str) -> Result<Program, String> {
    if crate::fault::inject(fault_site) {
        return Err("injected build failure".into());
    }
    cl::build::from_source(ctx, &[], &crate::clc::text::encode(source), options).map_err(|e| {
        if !e.log.is_empty() {
            crate::log::debug(&format!("build log of clayout's program:\n{}", e.log));
        }
        format!("build failed: {e}")
    })
}

/// Runs kernel `name(__global ulong *out)` of `program` once on `device` and returns `count`
/// values of `out`. Blocks until done, on a queue of its own.
pub fn run(
    ctx: cl_context,
    device: cl_device_id,
    program: &Program,
    name: &str,
    count: usize,
) -> Result<Vec<u64>, String> {
    if crate::fault::inject("probe") {
        return Err("injected failure of the probe".into());
    }
    let bytes = 8 * count.max(1);
    let k = cmd::create_kernel(program.raw(), name).map_err(|e| format!("probe kernel not created ({e})"))?;
    let buf =
        cmd::create_buffer(ctx, CL_MEM_WRITE_ONLY, bytes).map_err(|e| format!("probe buffer not created ({e})"))?;
    let q = cmd::create_queue(ctx, device, 0).map_err(|e| format!("probe queue not created ({e})"))?;
    cmd::set_arg(k.raw(), 0, cmd::Arg::Mem(buf.raw())).map_err(|e| format!("probe argument refused ({e})"))?;
    cmd::nd_range(q.raw(), k.raw(), &[1], Some(&[1]), &[]).map_err(|e| format!("probe kernel did not run ({e})"))?;
    let mut out = vec![0u8; bytes];
    cmd::read(q.raw(), buf.raw(), 0, &mut out, &[]).map_err(|e| format!("probe result not read ({e})"))?;
    Ok(out.chunks_exact(8).take(count).map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes"))).collect())
}
