//! Which kernel each `//DL:` comment belongs to, and the side file's precedence over them.

use super::error::{error_in, AnnotationError, Origin};
use super::grammar::dl_comment_body;
use super::grammar::parse_annotation;
use super::side_file::SideEntry;
use super::validate::{validate, KernelLayout, PlacedAnnotation};
use crate::clc::lex::{lex, line_col, Span, Token, TokenKind};
use crate::clc::signature::{kernels_in, KernelSig, SigError};
use crate::clc::typedefs::TypeTable;

/// The outcome for one group of annotations: a kernel's checked layout, or why clayout leaves
/// it (or, for `kernel: None`, a stray annotation) alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelAnnotation {
    /// `None` when the annotation is followed by no kernel.
    pub kernel: Option<String>,
    pub origin: Origin,
    /// Line of the first annotation line.
    pub line: u32,
    pub layout: Result<KernelLayout, AnnotationError>,
}

/// The annotations written in a program's source.
pub fn annotations_in_source(src: &str) -> Vec<KernelAnnotation> {
    annotate_program(src, &[])
}

/// The annotations of a program: the side file's entries for a kernel of this program replace
/// all of that kernel's in-source annotations; entries for kernels it lacks are ignored, as
/// they may belong to another program.
pub fn annotate_program(src: &str, side: &[SideEntry]) -> Vec<KernelAnnotation> {
    let all = lex(src);
    let code: Vec<Token> = all.iter().copied().filter(|t| !t.is_comment()).collect();
    let kernels = kernels_in(src, &code);
    let types = TypeTable::from_tokens(src, &code);
    let overridden = |name: &str| side.iter().any(|e| e.kernel == name);

    // (position in the source, outcome), sorted at the end so that results follow the source.
    let mut out: Vec<(usize, KernelAnnotation)> = Vec::new();
    for group in dl_groups(src, &all) {
        let first = group.comments[0];
        let target = group.next.and_then(|at| kernels.iter().find(|k| decl_start(k) == at));
        let kernel = target.and_then(|k| k.as_ref().ok()).map(|k| k.name.clone());
        if kernel.as_deref().is_some_and(overridden) {
            continue;
        }
        let layout = source_layout(src, &group, target, &types);
        out.push((first.span.start, KernelAnnotation { kernel, origin: Origin::Source, line: first.line, layout }));
    }
    let sigs: Vec<&KernelSig> = kernels.iter().filter_map(|k| k.as_ref().ok()).collect();
    // A kernel declared before it is defined counts once, at its definition.
    let is_defined = |name: &str| sigs.iter().any(|s| s.name == name && s.body.is_some());
    let mut done: Vec<&str> = Vec::new();
    for sig in sigs.iter().filter(|s| s.body.is_some() || !is_defined(&s.name)) {
        if done.contains(&sig.name.as_str()) {
            continue;
        }
        done.push(&sig.name);
        let placed: Vec<PlacedAnnotation> =
            side.iter().filter(|e| e.kernel == sig.name).map(|e| e.annotation.clone()).collect();
        let Some(first) = placed.first() else {
            continue;
        };
        let line = first.line;
        let layout = validate(sig, &types, &placed);
        let kernel = Some(sig.name.clone());
        out.push((sig.decl_start, KernelAnnotation { kernel, origin: Origin::SideFile, line, layout }));
    }
    out.sort_by_key(|(at, _)| *at);
    out.into_iter().map(|(_, a)| a).collect()
}

fn decl_start(k: &Result<KernelSig, SigError>) -> usize {
    match k {
        Ok(sig) => sig.decl_start,
        Err(e) => e.decl_start,
    }
}

/// Consecutive `//DL:` comments, other comments and blank lines between them allowed, and the
/// offset of the first token after them.
struct Group {
    comments: Vec<Token>,
    next: Option<usize>,
}

fn dl_groups(src: &str, toks: &[Token]) -> Vec<Group> {
    let is_dl = |t: &Token| t.kind == TokenKind::LineComment && dl_comment_body(t.text(src)).is_some();
    let mut groups = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if !is_dl(&toks[i]) {
            i += 1;
            continue;
        }
        let mut comments = Vec::new();
        while i < toks.len() && toks[i].is_comment() {
            if is_dl(&toks[i]) {
                comments.push(toks[i]);
            }
            i += 1;
        }
        groups.push(Group { comments, next: toks.get(i).map(|t| t.span.start) });
    }
    groups
}

fn source_layout(
    src: &str,
    group: &Group,
    target: Option<&Result<KernelSig, SigError>>,
    types: &TypeTable,
) -> Result<KernelLayout, AnnotationError> {
    let mut placed = Vec::new();
    for c in &group.comments {
        let text = c.text(src);
        let (line, column) = line_col(src, c.span.start);
        let a = parse_annotation(text).map_err(|e| error_in(text, Origin::Source, line, column, e.span, e.reason))?;
        placed.push(PlacedAnnotation { annotation: a, text: text.to_string(), origin: Origin::Source, line, column });
    }
    let first = &placed[0];
    let whole = Span::new(0, first.text.len());
    match target {
        None => Err(first
            .error_at(whole, "annotation not followed by a kernel (only blank lines and comments may come between)")),
        Some(Err(e)) => Err(first
            .error_at(whole, format!("cannot read the signature of the kernel below (line {}): {}", e.line, e.reason))),
        Some(Ok(sig)) => validate(sig, types, &placed),
    }
}
