//! The conversion programs: kernels/marshal.cl built once per (context, device, tile, options)
//! through the binary cache, kept until the application releases the context; and the kernels
//! of one step, created from them for each conversion.

use super::defines;
use super::plan::{Params, Role};
use super::MarshalError;
use crate::cl::{self, cmd, Kernel, Program};
use once_cell::sync::{Lazy, OnceCell};
use opencl_sys::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

const SOURCE: &str = include_str!("../../kernels/marshal.cl");

#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    ctx: usize,
    dev: usize,
    /// The tile is compiled in through the prepended macros, not an option.
    tile: u32,
    options: String,
}

/// A program, or why it did not build (kept: a failed build is not retried).
type Slot = Arc<OnceCell<Result<Program, String>>>;
static PROGRAMS: Lazy<Mutex<HashMap<Key, Slot>>> = Lazy::new(|| Mutex::new(HashMap::new()));

fn build(ctx: cl_context, dev: cl_device_id, t: u32, options: &str) -> Result<Program, String> {
    if crate::fault::inject("build") {
        return Err("injected failure of a conversion kernel build".into());
    }
    let src = format!("{}\n{}", crate::layout::asta_macros(Some(t)), SOURCE);
    crate::cache::binaries::build(ctx, dev, src.as_bytes(), options, "conv").map_err(|e| e.to_string())
}

/// The kernels of one step, by role.
pub struct Kernels {
    pub params: Params,
    kernels: Vec<Kernel>,
}

impl Kernels {
    pub fn get(&self, role: Role) -> &Kernel {
        // Created in the order of `Role::ALL`, the order of declaration.
        &self.kernels[role as usize]
    }
}

/// The kernels of a step planned as `params` on `dev` of `ctx`, building the program the first
/// time (only callers of the same program wait for the build).
pub fn kernels(ctx: cl_context, dev: cl_device_id, params: Params) -> Result<Kernels, MarshalError> {
    let options = defines::options(&params);
    let key = Key { ctx: ctx as usize, dev: dev as usize, tile: params.t, options };
    let slot = PROGRAMS.lock().entry(key.clone()).or_default().clone();
    // The map lock is released here: a build only blocks callers of the same key.
    let built = match slot.get() {
        Some(r) => r,
        // A load only clayout's cache may answer (`cache_only`): a miss is not kept, since the
        // build that follows it may compile.
        None if crate::cache::binaries::only_cached() => match build(ctx, dev, key.tile, &key.options) {
            Ok(p) => slot.get_or_init(|| Ok(p)),
            Err(l) => return Err(MarshalError::Build(l)),
        },
        None => slot.get_or_init(|| build(ctx, dev, key.tile, &key.options)),
    };
    let program = match built {
        Ok(p) => p,
        Err(l) => return Err(MarshalError::Build(l.clone())),
    };
    let kernels = Role::ALL
        .iter()
        .map(|&role| {
            let (name, wg) = params.kernel(role);
            kernel(program, name, dev, wg)
        })
        .collect::<Result<_, _>>()?;
    Ok(Kernels { params, kernels })
}

/// Kernel `name` of `program`, refused when the device cannot run it in work-groups of
/// `need_wg` (its registers or local memory do not allow them).
fn kernel(program: &Program, name: &str, dev: cl_device_id, need_wg: u32) -> Result<Kernel, MarshalError> {
    let k = cmd::create_kernel(program.raw(), name)
        .map_err(|e| MarshalError::Build(format!("clCreateKernel({name}): {}", e.code)))?;
    let wg: usize = cl::info::kernel_work_group(k.raw(), dev, CL_KERNEL_WORK_GROUP_SIZE);
    if wg != 0 && wg < need_wg as usize {
        return Err(MarshalError::Resources(format!("{name}: work-group of {need_wg} wanted, {wg} possible")));
    }
    Ok(k)
}

/// Loads the kernels of every conversion program of `ctx` built so far (`cmd::warm_kernels`).
pub fn warm(ctx: cl_context) {
    let slots: Vec<Slot> =
        PROGRAMS.lock().iter().filter(|(k, _)| k.ctx == ctx as usize).map(|(_, s)| s.clone()).collect();
    for p in slots.iter().filter_map(|s| s.get()).filter_map(|r| r.as_ref().ok()) {
        let _ = cmd::warm_kernels(p.raw());
    }
}

/// Forgets the programs of `ctx` (each released once no conversion in progress holds it).
pub fn release(ctx: cl_context) {
    let gone: Vec<Slot> = PROGRAMS.lock().extract_if(|k, _| k.ctx == ctx as usize).map(|(_, s)| s).collect();
    // Released here, outside the lock.
    drop(gone);
}
