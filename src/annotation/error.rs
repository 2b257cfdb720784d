//! The annotation layer's errors: a reason at a span of one annotation's text ([`SpanError`],
//! from parsing it or from evaluating one of its extents at launch), and a reason placed at a
//! line and column of the kernel source or the side file ([`AnnotationError`]): what the
//! runtime logs when it leaves a kernel alone.

use crate::clc::lex::{line_col, one_line, Span};
use std::fmt;

/// A reason at a span of one annotation's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanError {
    pub span: Span,
    pub reason: String,
}

impl fmt::Display for SpanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// Where an annotation was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Source,
    SideFile,
    /// Proposed by `infer` from the source (`CLAYOUT_ANNOTATIONS=auto`, `CLAYOUT_SUGGEST`).
    Inferred,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Source => "kernel source",
            Origin::SideFile => "CLAYOUT_ANNOTATIONS",
            Origin::Inferred => "inferred annotation",
        })
    }
}

/// Why clayout leaves a kernel alone; the runtime logs it once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnnotationError {
    pub origin: Origin,
    pub line: u32,
    pub column: u32,
    pub reason: String,
}

impl fmt::Display for AnnotationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} line {}, column {}: {}", self.origin, self.line, self.column, self.reason)
    }
}

/// An [`AnnotationError`] at `span` of annotation `text`, which starts at `line` and `column` of
/// its origin.
pub(crate) fn error_in(
    text: &str,
    origin: Origin,
    line: u32,
    column: u32,
    span: Span,
    reason: impl Into<String>,
) -> AnnotationError {
    let (l, c) = line_col(text, span.start);
    let column = if l == 1 { column.saturating_add(c - 1) } else { c };
    AnnotationError { origin, line: line.saturating_add(l - 1), column, reason: one_line(&reason.into()) }
}
