//! The transparent mode's rewriter: a kernel written for AoS (`//DL: AoS: p[n]`) gets a private
//! copy that addresses the buffer in ASTA, so that the runtime can convert the buffer in place
//! and launch the copy instead. Pure text over the lexer's tokens, no OpenCL.
//!
//! - `request`: a validated annotation to a [`RewriteRequest`].
//! - `copy`: what every copy shares: the request checked against the kernel, one `Target` per
//!   buffer (`target`), and the program with the copy inserted.
//! - `source`: the program's tokens, macros and line map; refusals.
//! - `walk`: the walk over a function body that offers each token to the access forms, and the
//!   `Policy` through which a kind of copy changes it.
//! - the access forms: `access` (the shapes that reach a buffer), `member`, `vector`, `flat`,
//!   `value` (multi-word loads and stores), `sizeof`, `calls` (calls and helper copies).
//! - `emit`: the generated index and load/store functions.
//! - `funcs`: helper function definitions and macros of the rest of the program.
//! - `stage`: the other copy, [`stage_kernel`]: the buffer stays AoS, each work-group stages
//!   its structures in local memory with coalesced accesses; a `Policy` of the walk.
//!
//! What is not recognized refuses the whole kernel ([`Refusal`]); the runtime then leaves it as
//! the application wrote it.

mod access;
mod calls;
mod copy;

mod emit;
mod flat;
mod funcs;
mod member;
mod request;
mod sizeof;
mod source;
mod stage;
mod target;
mod value;
mod vector;
mod walk;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_stage;

/// The structure layouts a request carries, from the source layer.
pub use crate::clc::struct_layout::{probe_expressions, struct_layout, MemberLayout, StructLayout};
pub use request::request;
pub use stage::{stage_kernel, Staged, StagedParam};

use copy::{assemble, prepare, Prepared};
use std::fmt;
use walk::{Asta, Rewriter};

/// How the application lays out a buffer on the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostKind {
    Aos,
    /// Discrete arrays in one buffer, word `s` of element `i` at `s*n + i`. `extent` is the
    /// extent as the kernel itself spells it (`n`, `get_global_size(0)`), so that subscripts
    /// written `p[c*n + i]` take the direct path; empty when the kernel has no such name (every
    /// subscript then takes the general, still exact, path).
    Soa {
        extent: String,
    },
}

#[derive(Clone, Debug)]
pub struct ParamRewrite {
    /// The parameter's index in the kernel's signature.
    pub index: usize,
    pub name: String,
    /// The structure the buffer holds; for a flat scalar pointer (`__global float *p` with
    /// `AoS(S)` or `SoA(S)`), [`StructLayout::flat`].
    pub layout: StructLayout,
    pub host: HostKind,
}

#[derive(Clone, Debug)]
pub struct RewriteRequest {
    pub kernel: String,
    /// Name of the rewritten copy, e.g. `advance__clayout_asta`.
    pub private_name: String,
    pub params: Vec<ParamRewrite>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtraKind {
    /// M, the number of structures in the buffer, as a `ulong`.
    StructCount,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtraArg {
    pub param: String,
    /// Argument index in the rewritten kernel.
    pub index: usize,
    pub what: ExtraKind,
}

#[derive(Clone, Debug)]
pub struct Rewritten {
    /// The whole program: the original text unchanged, with the rewritten kernel, the helper
    /// copies it calls and the generated functions inserted after the original kernel.
    pub source: String,
    pub extra_args: Vec<ExtraArg>,
}

/// Why a kernel is left as written: the construct and its source line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub line: u32,
    pub construct: String,
    pub reason: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: `{}`: {}", self.line, self.construct, self.reason)
    }
}

fn refusal(line: u32, construct: &str, reason: impl Into<String>) -> Refusal {
    Refusal { line, construct: construct.to_string(), reason: reason.into() }
}

/// Rewrites kernel `req.kernel` of program `src` into `req.private_name`, which addresses the
/// requested buffers in ASTA with tile `CLAYOUT_TILE` and takes one extra trailing `ulong`
/// argument per buffer (see [`Rewritten::extra_args`]).
pub fn rewrite_kernel(src: &str, req: &RewriteRequest) -> Result<Rewritten, Refusal> {
    let Prepared { code, def, targets, extra_args, .. } = prepare(src, req)?;
    let mut rw = Rewriter::new(code, Asta);
    let kernel = rw.function_copy(&def, &req.private_name, &targets)?;
    Ok(Rewritten { source: assemble(&rw, &def, "ASTA", &req.kernel, &kernel), extra_args })
}
