//! What the rewriter needs to know about the rest of the program: where non-kernel functions
//! are defined (to rewrite private copies of helpers that receive a rewritten buffer) and what
//! the `#define`s mention (to refuse where a macro could change an access).

use crate::clc::lex::{lex, matching_bracket, Token, TokenKind};
use crate::clc::signature::{kernels, Param};
use std::collections::HashMap;

/// A function definition: token indices of its first token, its name, its body's braces.
pub(crate) struct FnDef {
    pub start: usize,
    pub name: usize,
    pub params: Vec<Param>,
    pub open: usize,
    pub close: usize,
    pub is_kernel: bool,
}

/// The definition of function `name` at file scope, if the source has one.
pub(crate) fn find_function(src: &str, toks: &[Token], name: &str) -> Option<Result<FnDef, String>> {
    let mut depth = 0usize;
    let mut start = 0usize;
    let mut found = None;
    let mut j = 0;
    while j < toks.len() {
        let t = toks[j];
        if t.kind == TokenKind::Directive && depth == 0 {
            start = j + 1;
        } else if t.is_punct(src, "{") {
            depth += 1;
        } else if t.is_punct(src, "}") {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                start = j + 1;
            }
        } else if depth == 0 && t.is_punct(src, ";") {
            start = j + 1;
        } else if depth == 0 && t.is_ident(src, name) && toks.get(j + 1).is_some_and(|n| n.is_punct(src, "(")) {
            let close = matching_bracket(src, toks, j + 1)?;
            let mut k = close;
            while toks.get(k).is_some_and(|t| t.text(src).starts_with("__attribute")) {
                k = matching_bracket(src, toks, k + 1)?;
            }
            if toks.get(k).is_some_and(|t| t.is_punct(src, "{")) {
                let end = matching_bracket(src, toks, k)?;
                if found.is_some() {
                    // Two definitions can only be alternatives of conditional compilation:
                    // which one the compiler sees is not known here.
                    return Some(Err(format!("`{name}` is defined more than once (in `#if` branches?)")));
                }
                found = Some((start, j, k, end - 1));
                j = end;
                continue;
            }
            j = k;
            continue;
        }
        j += 1;
    }
    found.map(|(start, name, open, close)| def(src, toks, start, name, open, close))
}

fn def(src: &str, toks: &[Token], start: usize, name: usize, open: usize, close: usize) -> Result<FnDef, String> {
    let is_kernel = toks[start..name].iter().any(|t| matches!(t.text(src), "__kernel" | "kernel"));
    // The parameter reader is the kernel signature's: present the header to it as a kernel.
    let a = toks[start].span.start;
    let b = toks[open].span.start;
    const PREFIX: &str = "__kernel ";
    let fake = format!("{PREFIX}{};", &src[a..b]);
    let sig = kernels(&fake).into_iter().next().ok_or("its declaration is not understood")?.map_err(|e| e.reason)?;
    let shift = |p: Param| {
        let mut p = p;
        p.span.start = p.span.start + a - PREFIX.len();
        p.span.end = p.span.end + a - PREFIX.len();
        p
    };
    Ok(FnDef { start, name, params: sig.params.into_iter().map(shift).collect(), open, close, is_kernel })
}

/// A `#define`: its parameters (function-like), the identifiers of its body and the body.
pub(crate) struct Macro {
    pub params: Option<Vec<String>>,
    pub idents: Vec<String>,
    pub body: String,
    pub line: u32,
}

pub(crate) fn macros(src: &str, toks: &[Token]) -> HashMap<String, Macro> {
    let mut out = HashMap::new();
    for t in toks.iter().filter(|t| t.kind == TokenKind::Directive) {
        let text = t.text(src);
        let rest = text[1..].trim_start();
        let Some(rest) = rest.strip_prefix("define") else {
            continue;
        };
        let inner = lex(rest);
        let Some(name) = inner.first().filter(|n| n.kind == TokenKind::Ident) else {
            continue;
        };
        let mut k = 1;
        // Function-like only when `(` touches the name.
        let params = if inner.get(1).is_some_and(|p| p.is_punct(rest, "(") && p.span.start == name.span.end) {
            let close = matching_bracket(rest, &inner, 1).unwrap_or(inner.len());
            let ps = inner[2..close.saturating_sub(1)]
                .iter()
                .filter(|p| p.kind == TokenKind::Ident)
                .map(|p| p.text(rest).to_string())
                .collect();
            k = close;
            Some(ps)
        } else {
            None
        };
        let body = &inner[k.min(inner.len())..];
        let idents = body.iter().filter(|p| p.kind == TokenKind::Ident).map(|p| p.text(rest).to_string()).collect();
        let body = body.first().map_or("", |b| &rest[b.span.start..]);
        out.insert(name.text(rest).to_string(), Macro { params, idents, body: body.to_string(), line: t.line });
    }
    out
}

/// Whether macro `name` can expand to text naming `target`, directly or through other macros.
pub(crate) fn mentions(macros: &HashMap<String, Macro>, name: &str, target: &str) -> bool {
    expansion_idents(macros, name).iter().any(|id| id == target)
}

/// Every identifier that macro `name` can expand to, through other macros too, but for its
/// own parameters' names.
pub(crate) fn expansion_idents(macros: &HashMap<String, Macro>, name: &str) -> Vec<String> {
    let mut seen = vec![name.to_string()];
    let mut stack = vec![name.to_string()];
    let mut out = Vec::new();
    while let Some(n) = stack.pop() {
        let Some(m) = macros.get(&n) else { continue };
        for id in &m.idents {
            let is_param = m.params.as_ref().is_some_and(|ps| ps.contains(id));
            if is_param {
                continue;
            }
            out.push(id.clone());
            if macros.contains_key(id) && !seen.contains(id) {
                seen.push(id.clone());
                stack.push(id.clone());
            }
        }
    }
    out
}
