//! The ASTA copy of a kernel: the buffer itself, converted in place to ASTA, addressed word by
//! word wherever the kernel and the helper functions it passes the buffer to reach it.

use super::copy::{assemble, prepare, ExtraArg, Prepared};
use super::request::RewriteRequest;
use super::source::{Refusal, Source};
use super::splice::Insertion;
use super::walk::{Asta, Rewriter};

#[derive(Clone, Debug)]
pub struct Rewritten {
    /// The whole program: the original text unchanged, with the rewritten kernel, the helper
    /// copies it calls and the generated functions inserted after the original kernel.
    pub source: String,
    /// What was inserted, and where in the program as read.
    pub insertion: Insertion,
    pub extra_args: Vec<ExtraArg>,
}

/// Rewrites kernel `req.kernel` of program `src` into `req.private_name`, which addresses the
/// requested buffers in ASTA with tile `CLAYOUT_TILE` and takes one extra trailing `ulong`
/// argument per buffer (see [`Rewritten::extra_args`]).
pub fn rewrite_kernel(src: &str, req: &RewriteRequest) -> Result<Rewritten, Refusal> {
    rewrite_kernel_in(&Source::new(src), req)
}

/// [`rewrite_kernel`] in a program already read.
pub(crate) fn rewrite_kernel_in(read: &Source, req: &RewriteRequest) -> Result<Rewritten, Refusal> {
    let Prepared { code, def, targets, extra_args, .. } = prepare(read, req)?;
    let mut rw = Rewriter::new(code, Asta);
    let kernel = rw.function_copy(&def, &req.private_name, &targets)?;
    let (source, insertion) = assemble(&rw, &def, "ASTA", &req.kernel, &kernel);
    Ok(Rewritten { source, insertion, extra_args })
}
