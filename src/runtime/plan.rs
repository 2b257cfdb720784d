//! What a kernel's annotation asks of each launch: which buffer arguments go to which layout,
//! with which structure size and extent, and for a rewritten kernel which copy runs on them.
//! Worked out once per kernel (`kernels`), read at every launch (`launch`).

use super::dims::Dims;
use crate::annotation::{Extent, ExtentEnv, ScalarArg};
use crate::layout::Layout;
use std::sync::Arc;

/// One buffer argument the kernel needs in a device layout.
#[derive(Debug, Clone)]
pub struct ParamPlan {
    pub index: usize,
    pub name: String,
    pub host: Layout,
    pub device: Layout,
    /// Words per structure and bytes per word.
    pub words: u32,
    pub word_bytes: u32,
    pub struct_bytes: u64,
    pub extent: Extent,
    /// The kernel is written for the device layout: it cannot run on host-layout data.
    pub must: bool,
    /// Annotated `out`: the launch overwrites the extent's structures before reading them.
    pub out: bool,
    /// Proved from the kernel's source: the launch overwrites the structures of the work-items
    /// below a bound before reading them (`rewrite::overwritten`).
    pub proven_out: Option<ProvenOut>,
}

/// A parameter the kernel provably overwrites, for the work-items whose global id 0 lies
/// below `bound` (every work-item when `None`).
#[derive(Debug, Clone)]
pub struct ProvenOut {
    pub bound: Option<Extent>,
}

impl ProvenOut {
    /// Whether a launch of work sizes `dims` overwrites the first `m` structures, with the
    /// bound evaluated in `env`: its global ids start at 0 and reach `m`, and the bound, at
    /// least `m`, fits the 32-bit comparison a kernel may make (with every argument it names
    /// positive, no partial product of the kernel's own arithmetic exceeds it).
    pub fn covers(&self, dims: &Dims, env: &dyn ExtentEnv, m: u64) -> bool {
        if dims.offset || dims.global.first().is_none_or(|&g| g < m) {
            return false;
        }
        let Some(b) = &self.bound else { return true };
        let positive = b.args().iter().all(|(name, _)| env.arg(name).is_some_and(|v| v >= 1));
        positive && b.eval(env).is_ok_and(|v| v >= m && v < 1 << 31)
    }
}

#[derive(Debug)]
pub struct KernelPlan {
    pub params: Vec<ParamPlan>,
    pub scalars: Vec<ScalarArg>,
    /// A rewritten kernel: which copy to run when its buffers are in ASTA.
    pub transparent: Option<super::transparent::TransparentPlan>,
    /// Scalar arguments whose values the plan assumed (an inferred stride): a launch with
    /// another value runs the kernel as written, its buffers in host layout.
    pub fixed: Vec<(ScalarArg, u64)>,
}

/// `Ok(None)`: the kernel needs nothing converted. `Err`: it is written for a device layout but
/// clayout cannot give it one, so it cannot run correctly.
pub type PlanResult = Result<Option<Arc<KernelPlan>>, String>;
