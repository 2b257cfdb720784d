//! What a kernel's annotation asks of each launch: which buffer arguments go to which layout,
//! with which structure size and extent, and for a rewritten kernel which copy runs on them.
//! Worked out once per kernel (`kernels`), read at every launch (`launch`).

use crate::annotation::{Extent, ScalarArg};
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
