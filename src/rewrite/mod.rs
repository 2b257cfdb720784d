//! The transparent mode's rewriter: a kernel written for AoS (`//DL: AoS: p[n]`) gets a private
//! copy that addresses the buffer in ASTA, so that the runtime can convert the buffer in place
//! and launch the copy instead. Pure text over the lexer's tokens, no OpenCL.
//!
//! - `request`: what the rewriter is asked ([`RewriteRequest`]), made from a validated annotation.
//! - `asta`: the ASTA copy, [`rewrite_kernel`].
//! - `stage`: the other copy, [`stage_kernel`]: the buffer stays AoS, each work-group stages
//!   its structures in local memory with coalesced accesses; it plugs into the walk as a
//!   `Policy`.
//! - `copy`: what both copies share: the request checked against the kernel, one `Target` per
//!   buffer (`target`), and the program with the copy inserted (`splice`).
//! - `walk`: the walk over a function body that offers each token to the access forms, and the
//!   `Policy` through which a kind of copy changes it.
//! - `target`: a pointer into a rewritten buffer (the parameter or one derived from it) as the
//!   copy follows it: the buffer, what it points to, its offset; `locals`: which local
//!   pointers of a body are followed; `ptr`: the shapes of pointer values and elements;
//!   `syntax`: where expressions and statements end.
//! - `source`: the program's tokens, macros and line map; refusals.
//! - the access forms: `access` (where the walk meets a followed pointer), `member`, `vector`,
//!   `flat`, `value` (multi-word loads and stores), `sizeof`, `calls` (calls, helper copies,
//!   `vloadn`/`vstoren`, atomics).
//! - `emit`: the generated index and load/store functions.
//! - `funcs`: helper function definitions and macros of the rest of the program.
//! - `overwrite`: which buffers a kernel provably overwrites before reading them
//!   ([`overwritten`]), so that their old contents need no conversion.
//! - `splice`: the program with the copies inserted ([`splice`]) and the application's kernels
//!   left out of it, since it launches none of them ([`splice_cutting`]).
//!
//! Structures and their layouts come from `crate::clc`.
//!
//! What is not recognized refuses the whole kernel ([`Refusal`]); the runtime then leaves it as
//! the application wrote it.

mod access;
mod asta;
mod calls;
mod copy;
mod emit;
mod flat;
mod funcs;
mod locals;
mod member;
mod overwrite;
mod ptr;
mod request;
mod sizeof;
mod source;
mod splice;
mod stage;
mod syntax;
mod target;
mod value;
mod vector;
mod walk;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_overwrite;
#[cfg(test)]
mod tests_ptr;
#[cfg(test)]
mod tests_stage;

/// The structure layouts a request carries, from the source layer.
pub use crate::clc::struct_layout::{probe_expressions, struct_layout, MemberLayout, StructLayout};
pub(crate) use asta::rewrite_kernel_in;
pub use asta::{rewrite_kernel, Rewritten};
pub use copy::{ExtraArg, ExtraKind};
pub use overwrite::{overwritten, Bound, Overwrite};
pub use request::{request, HostKind, ParamRewrite, RewriteRequest};
pub use source::Refusal;
pub(crate) use source::Source;
pub(crate) use splice::unlaunched_kernels;
pub use splice::{splice, splice_cutting, Cut, Insertion};
pub(crate) use stage::stage_kernel_in;
pub use stage::{stage_kernel, Staged, StagedParam};
