//! The `CLAYOUT_ANNOTATIONS` side file: annotations for kernels whose source is built into
//! the application, one per line, each line starting with the kernel's name.

use super::error::{error_in, AnnotationError, Origin};
use super::grammar::{dl_comment_body, parse_annotation};
use super::validate::PlacedAnnotation;
use crate::clc::lex::Span;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SideEntry {
    pub kernel: String,
    pub annotation: PlacedAnnotation,
}

/// Reads a side file: `kernel: AoS: f[n]` or `kernel //DL: AoS: f[n]` per line, `#` starting a
/// comment, blank lines ignored. A bad line is reported and skipped; the others still count.
pub fn parse_side_file(text: &str) -> (Vec<SideEntry>, Vec<AnnotationError>) {
    let (mut entries, mut errors) = (Vec::new(), Vec::new());
    for (n, line) in uncommented_lines(text).enumerate() {
        let line_no = u32::try_from(n + 1).unwrap_or(u32::MAX);
        if line.trim().is_empty() {
            continue;
        }
        match side_line(line, line_no) {
            Ok(e) => entries.push(e),
            Err(e) => errors.push(e),
        }
    }
    (entries, errors)
}

/// A side file's lines, each without its comment: `#` appears nowhere in the grammar, so it can
/// only start one.
pub fn uncommented_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(|l| l.split('#').next().unwrap_or(""))
}

fn side_line(line: &str, line_no: u32) -> Result<SideEntry, AnnotationError> {
    let fail = |at: usize, reason: String| error_in(line, Origin::SideFile, line_no, 1, Span::new(at, at), reason);
    let lead = line.len() - line.trim_start().len();
    let rest = &line[lead..];
    let name_len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
    let kernel = &rest[..name_len];
    if kernel.is_empty() || kernel.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(fail(lead, "expected a kernel name at the start of the line".to_string()));
    }
    let after = &rest[name_len..];
    let gap = after.len() - after.trim_start().len();
    let after_start = lead + name_len + gap;
    let after = &line[after_start..];
    let body_start = if let Some(stripped) = after.strip_prefix(':') {
        line.len() - stripped.len()
    } else if let Some((off, _)) = dl_comment_body(after) {
        after_start + off
    } else {
        let reason = format!("expected `:` or `//DL:` after the kernel name `{kernel}`");
        return Err(fail(after_start, reason));
    };
    let body = &line[body_start..];
    let column = u32::try_from(line[..body_start].chars().count() + 1).unwrap_or(u32::MAX);
    let annotation =
        parse_annotation(body).map_err(|e| error_in(body, Origin::SideFile, line_no, column, e.span, e.reason))?;
    let placed =
        PlacedAnnotation { annotation, text: body.to_string(), origin: Origin::SideFile, line: line_no, column };
    Ok(SideEntry { kernel: kernel.to_string(), annotation: placed })
}
