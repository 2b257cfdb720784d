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
            crate::log::debug_with(|| format!("build log of clayout's program:\n{}", e.log));
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

/// `run`, its answer kept in clayout's cache under `key` (the probe's program: its device,
/// text and build options): the same compiler lays out the same structures the same way, and
/// the probe otherwise launched a kernel and waited for it in every load of the copies (0.3-0.6
/// ms inside the application's build on the H100).
pub fn run_cached(
    ctx: cl_context,
    device: cl_device_id,
    program: &Program,
    name: &str,
    count: usize,
    key: &str,
) -> Result<Vec<u64>, String> {
    if crate::fault::inject("probe") {
        return Err("injected failure of the probe".into());
    }
    if let Some(v) = crate::cache::disk::get_json::<Vec<u64>>("probe", key).filter(|v| v.len() == count) {
        return Ok(v);
    }
    let v = run(ctx, device, program, name, count)?;
    crate::cache::disk::put_json("probe", key, &v);
    Ok(v)
}

/// The OpenCL C version the device compiler uses when the build options give no `-cl-std`
/// (implementations differ: the specification says the highest 1.x, PoCL takes the device's
/// highest): asked of the compiler once per device and kept in the disk cache. None when the
/// compiler does not say (it predefines no `__OPENCL_C_VERSION__`, or the probe fails).
pub fn default_c_version(device: cl_device_id) -> Option<(u32, u32)> {
    let key = format!("cversion|{}", crate::cache::disk::device_key(device));
    if let Some(v) = crate::cache::disk::get_json::<Option<(u32, u32)>>("probe", &key) {
        return v;
    }
    let asked = crate::guard("OpenCL C version probe", || {
        let ctx = cmd::create_context(&[device]).ok()?;
        let src = "__kernel void clayout_probe_version(__global ulong *out) { out[0] = __OPENCL_C_VERSION__; }\n";
        let built = build(ctx.raw(), src, "", "probe").ok()?;
        let v = run(ctx.raw(), device, &built, "clayout_probe_version", 1).ok()?[0];
        Some(((v / 100) as u32, ((v % 100) / 10) as u32))
    })
    .flatten();
    crate::cache::disk::put_json("probe", &key, &asked);
    asked
}
