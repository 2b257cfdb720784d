//! The transparent mode's rewriter: a kernel written for AoS (`//DL: AoS: p[n]`) gets a private
//! copy that addresses the buffer in ASTA, so that the runtime can convert the buffer in place
//! and launch the copy instead. Pure text over the lexer's tokens, no OpenCL.
//!
//! - `access`: recognizing every use of a rewritten buffer and rewriting it.
//! - `emit`: the generated index and load/store functions.
//! - `funcs`: helper function definitions and macros of the rest of the program.
//! - `request`: a validated annotation to a [`RewriteRequest`].
//! - `stage`: the other copy, [`stage_kernel`]: the buffer stays AoS, each work-group stages
//!   its structures in local memory with coalesced accesses.
//!
//! What is not recognized refuses the whole kernel ([`Refusal`]); the runtime then leaves it as
//! the application wrote it.

mod access;
mod emit;
mod funcs;
mod request;
mod stage;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_stage;

/// The structure layouts a request carries, from the source layer.
pub use crate::clc::struct_layout::{probe_expressions, struct_layout, MemberLayout, StructLayout};
pub use request::request;
pub use stage::{stage_kernel, Staged, StagedParam};

use crate::clc::lex::line_col;
use crate::clc::signature::{kernels, AddrSpace};
use crate::clc::types::word_scalar;
use access::{Kind, Rewriter, Target};
use std::fmt;

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
    let Prepared { mut rw, def, targets, extra_args, .. } = prepare(src, req)?;
    let kernel = rw.function_copy(&def, &req.private_name, &targets)?;
    Ok(Rewritten { source: assemble(&rw, &def, "ASTA", &req.kernel, &kernel), extra_args })
}

/// A request checked against the kernel's signature: its definition and one target per
/// requested buffer, addressed in ASTA until the caller says otherwise.
struct Prepared<'s> {
    rw: Rewriter<'s>,
    def: funcs::FnDef,
    /// The kernel's line, for refusals about the kernel as a whole.
    line: u32,
    targets: Vec<(usize, Target)>,
    extra_args: Vec<ExtraArg>,
}

fn prepare<'s>(src: &'s str, req: &RewriteRequest) -> Result<Prepared<'s>, Refusal> {
    let rw = Rewriter::new(src);
    let mut sigs = kernels(src).into_iter().filter_map(Result::ok).filter(|k| k.name == req.kernel).peekable();
    // A prototype names the line; a kernel missing altogether has none (0).
    let first_line = sigs.peek().map_or(0, |k| rw.logical(k.line));
    let sig = sigs
        .find(|k| k.body.is_some())
        .ok_or_else(|| refusal(first_line, &req.kernel, "no readable definition of this kernel in the source"))?;
    let def = match funcs::find_function(src, &rw.toks, &req.kernel) {
        Some(Ok(d)) => d,
        Some(Err(e)) => return Err(refusal(rw.logical(sig.line), &req.kernel, e)),
        _ => return Err(refusal(rw.logical(sig.line), &req.kernel, "the kernel's definition is not understood")),
    };
    let line = rw.logical(sig.line);
    let mut targets = Vec::new();
    let mut extra_args = Vec::new();
    for (k, pr) in req.params.iter().enumerate() {
        let Some(p) = sig.params.get(pr.index).filter(|p| p.name == pr.name) else {
            return Err(refusal(line, &pr.name, format!("not parameter {} of kernel `{}`", pr.index, req.kernel)));
        };
        if targets.iter().any(|(n, _)| *n == pr.index) {
            return Err(refusal(line, &pr.name, "requested twice"));
        }
        let construct = p.span.of(src);
        if !p.pointer || p.space != AddrSpace::Global {
            return Err(refusal(line, construct, "only `__global` pointer parameters are rewritten"));
        }
        let l = &pr.layout;
        if l.words == 0 || l.members.is_empty() || !matches!(l.word_bytes, 4 | 8) {
            return Err(refusal(line, construct, "the layout has no words"));
        }
        let kind = match (word_scalar(&p.type_name), &pr.host) {
            (Some((_, size)), _) if size != l.word_bytes => {
                return Err(refusal(
                    line,
                    construct,
                    format!("`{}` words are not {}-byte words", p.type_name, l.word_bytes),
                ))
            }
            (Some(_), HostKind::Aos) => Kind::FlatAos,
            (Some(_), HostKind::Soa { extent }) => Kind::FlatSoa {
                extent: crate::clc::lex::lex(extent).iter().map(|t| t.text(extent).to_string()).collect(),
            },
            (None, _) if p.type_name != l.type_name => {
                return Err(refusal(
                    line,
                    construct,
                    format!("the parameter points to `{}`, the layout describes `{}`", p.type_name, l.type_name),
                ))
            }
            (None, HostKind::Aos) => Kind::Struct,
            (None, HostKind::Soa { .. }) => {
                return Err(refusal(line, construct, "an SoA host layout on a pointer to a structure"))
            }
        };
        let base = match kind {
            Kind::Struct => l.members[0].scalar.clone(),
            _ => word_scalar(&p.type_name).unwrap().0.name().to_string(),
        };
        targets.push((
            pr.index,
            Target {
                name: p.name.clone(),
                m: format!("clayout_M_{}", p.name),
                layout: l.clone(),
                base,
                is_const: p.is_const,
                kind,
                space: emit::Space::Asta,
            },
        ));
        extra_args.push(ExtraArg { param: pr.name.clone(), index: sig.params.len() + k, what: ExtraKind::StructCount });
    }
    Ok(Prepared { rw, def, line, targets, extra_args })
}

/// The whole program with copy `kernel` (a `what` copy of `name`), the helper copies and the
/// generated functions inserted after the original kernel, and the original's numbering
/// resumed after them.
fn assemble(rw: &Rewriter, def: &funcs::FnDef, what: &str, name: &str, kernel: &str) -> String {
    let src = rw.src;
    let insert_at = rw.insert_at.max(rw.toks[def.close].span.end);
    let end_line = rw.logical(line_col(src, insert_at).0);
    let mut out = String::with_capacity(src.len() * 2);
    out.push_str(&src[..insert_at]);
    out.push_str(&format!("\n/* clayout: {what} copy of kernel `{name}` */\n"));
    out.push_str(&rw.needs.text());
    for c in &rw.copies {
        out.push_str(c);
    }
    out.push_str(kernel);
    out.push_str(&format!("#line {end_line}\n"));
    out.push_str(&src[insert_at..]);
    out
}
