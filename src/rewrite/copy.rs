//! What every copy of a kernel shares: the request checked against the kernel's signature,
//! with one [`Target`] per buffer ([`prepare`]), and the program with the copy inserted after
//! the original kernel ([`assemble`]).

use super::emit::Space;
use super::funcs::{find_function, FnDef};
use super::request::{HostKind, RewriteRequest};
use super::source::{refusal, Refusal, Source};
use super::splice::{splice, Insertion};
use super::target::{Host, Target, View};
use super::walk::Rewriter;
use crate::clc::lex::{lex, line_col};
use crate::clc::signature::AddrSpace;
use crate::clc::types::{word_scalar, word_type, Scalar};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ExtraKind {
    /// M, the number of structures in the buffer, as a `ulong`.
    StructCount,
    /// The staged copy's order of a buffer's work-group slices, as a `ulong`: the slices that
    /// lie wholly below this many structures are loaded from the buffer in ASTA order (0:
    /// every slice in AoS order, as the kernel as written reads them).
    AstaIn,
    /// The same for the order in which the slices are stored back.
    AstaOut,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExtraArg {
    pub param: String,
    /// Argument index in the rewritten kernel.
    pub index: usize,
    pub what: ExtraKind,
}

/// A request checked against the kernel's signature: its definition and one target per
/// requested buffer, addressed in ASTA until the caller says otherwise.
pub(super) struct Prepared<'s> {
    pub code: Source<'s>,
    pub def: FnDef,
    /// The kernel's line, for refusals about the kernel as a whole.
    pub line: u32,
    pub targets: Vec<(usize, Target)>,
    pub extra_args: Vec<ExtraArg>,
}

pub(super) fn prepare<'s>(read: &Source<'s>, req: &RewriteRequest) -> Result<Prepared<'s>, Refusal> {
    let (src, code) = (read.src, read.clone());
    let mut sigs = read.signatures().iter().filter_map(|k| k.as_ref().ok()).filter(|k| k.name == req.kernel).peekable();
    // A prototype names the line; a kernel missing altogether has none (0).
    let first_line = sigs.peek().map_or(0, |k| code.logical(k.line));
    let sig = sigs
        .find(|k| k.body.is_some())
        .ok_or_else(|| refusal(first_line, &req.kernel, "no readable definition of this kernel in the source"))?;
    let def = match find_function(src, &code.toks, &req.kernel) {
        Some(Ok(d)) => d,
        Some(Err(e)) => return Err(refusal(code.logical(sig.line), &req.kernel, e)),
        _ => return Err(refusal(code.logical(sig.line), &req.kernel, "the kernel's definition is not understood")),
    };
    let line = code.logical(sig.line);
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
        // The pointee as the source's typedefs resolve it (`real_t` is `double`).
        let pointee = code.types.resolve(&p.type_name).to_string();
        let same_struct = p.type_name == l.type_name || pointee == code.types.resolve(&l.type_name);
        let (view, host) = match (word_scalar(&pointee), &pr.host) {
            (Some((_, size)), _) if size != l.word_bytes => {
                return Err(refusal(
                    line,
                    construct,
                    format!("`{}` words are not {}-byte words", p.type_name, l.word_bytes),
                ))
            }
            (Some((s, _)), HostKind::Aos) => (View::Scalar(s.name().to_string()), Host::Aos),
            (Some((s, _)), HostKind::Soa { extent }) => (
                View::Scalar(s.name().to_string()),
                Host::Soa { extent: lex(extent).iter().map(|t| t.text(extent).to_string()).collect() },
            ),
            (None, _) if !same_struct => {
                return Err(refusal(
                    line,
                    construct,
                    format!("the parameter points to `{}`, the layout describes `{}`", p.type_name, l.type_name),
                ))
            }
            (None, HostKind::Aos) => (View::Struct, Host::Aos),
            (None, HostKind::Soa { .. }) => {
                return Err(refusal(line, construct, "an SoA host layout on a pointer to a structure"))
            }
        };
        let base = match &view {
            View::Struct => {
                let first = &l.members[0].scalar;
                let size = Scalar::parse(first).and_then(Scalar::size);
                if size == Some(l.word_bytes) {
                    first.clone()
                } else {
                    word_type(l.word_bytes).to_string()
                }
            }
            View::Scalar(s) | View::Vector(s, _) => s.clone(),
        };
        targets.push((
            pr.index,
            Target {
                name: p.name.clone(),
                buffer: p.name.clone(),
                m: format!("clayout_M_{}", p.name),
                layout: l.clone(),
                base,
                is_const: p.is_const,
                host,
                view,
                space: Space::Asta,
                off: None,
                param: true,
            },
        ));
        extra_args.push(ExtraArg { param: pr.name.clone(), index: sig.params.len() + k, what: ExtraKind::StructCount });
    }
    Ok(Prepared { code, def, line, targets, extra_args })
}

/// Copy `kernel` (a `what` copy of `name`), the helper copies and the generated functions, to
/// go after the original kernel (or the last helper they rely on), and the original's numbering
/// resumed after them; and the whole program with them.
pub(super) fn assemble<P>(rw: &Rewriter<P>, def: &FnDef, what: &str, name: &str, kernel: &str) -> (String, Insertion) {
    let src = rw.src;
    let at = rw.insert_at.max(rw.toks[def.close].span.end);
    let mut text = format!("\n/* clayout: {what} copy of kernel `{name}` */\n");
    text.push_str(&rw.needs.text());
    for c in &rw.copies {
        text.push_str(c);
    }
    text.push_str(kernel);
    text.push_str(&rw.line_directive(line_col(src, at).0));
    let insertion = Insertion { at, text };
    (splice(src, std::slice::from_ref(&insertion)), insertion)
}
