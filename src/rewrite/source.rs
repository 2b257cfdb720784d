//! The program as the rewriter reads it: its tokens (comments left out), its macros, and the
//! map from physical lines to the lines the compiler reports. Every question an access form or
//! a copy's policy asks about the text goes through here, and every [`Refusal`] is made here.

use super::funcs::{self, Macro};
use crate::clc::lex::{lex, matching_bracket, one_line, Token, TokenKind};
use crate::clc::signature::{kernels_in, KernelSig, SigError};
use crate::clc::typedefs::TypeTable;
use once_cell::sync::OnceCell;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

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

pub(crate) fn refusal(line: u32, construct: &str, reason: impl Into<String>) -> Refusal {
    Refusal { line, construct: construct.to_string(), reason: reason.into() }
}

pub(crate) type R<T> = Result<T, Refusal>;

pub(crate) const ASSIGN_OPS: [&str; 11] = ["=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="];
/// Identifiers followed by `(` that are not calls.
pub(crate) const NOT_CALLS: [&str; 8] = ["if", "while", "for", "switch", "return", "sizeof", "__attribute__", "case"];
/// Builtins that neither write memory nor have side effects: an index using only these may be
/// evaluated twice.
const PURE_CALLS: [&str; 16] = [
    "get_global_id",
    "get_local_id",
    "get_group_id",
    "get_global_size",
    "get_local_size",
    "get_num_groups",
    "get_global_offset",
    "get_work_dim",
    "min",
    "max",
    "abs",
    "clamp",
    "mad24",
    "mul24",
    "select",
    "mad",
];

/// Read once per program and shared by every copy made of it (a clone shares what was read).
/// Each copy read the program again before, in the text with the copies before it: six times
/// for particles' three kernels, and clayout's first reading of it took 17.8 million
/// instructions on PoCL (callgrind), 7.5 million read once.
#[derive(Clone)]
pub(crate) struct Source<'s> {
    pub src: &'s str,
    pub toks: Arc<Vec<Token>>,
    pub macros: Arc<HashMap<String, Macro>>,
    /// The program's type names (typedefs and type-like macros).
    pub types: Arc<TypeTable>,
    /// `#line` directives and linemarkers (`# 12 "file.cl"`) of the source: (physical line of
    /// the directive, line it sets, file it names or inherits), so that a preprocessed source,
    /// or one rewritten before (with `#line`s of its own), maps back to the original files.
    line_marks: Arc<Vec<(u32, u32, Option<String>)>>,
    /// The kernels' signatures, read at the first copy that asks.
    sigs: Arc<OnceCell<Vec<Result<KernelSig, SigError>>>>,
}

impl<'s> Source<'s> {
    pub fn new(src: &'s str) -> Self {
        let toks: Vec<Token> = lex(src).into_iter().filter(|t| !t.is_comment()).collect();
        let macros = Arc::new(funcs::macros(src, &toks));
        let types = Arc::new(TypeTable::from_tokens(src, &toks));
        let mut line_marks: Vec<(u32, u32, Option<String>)> = Vec::new();
        for t in toks.iter().filter(|t| t.kind == TokenKind::Directive) {
            let rest = t.text(src)[1..].trim_start();
            let rest = rest.strip_prefix("line").unwrap_or(rest).trim_start();
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let Ok(n) = digits.parse() else { continue };
            let after = rest[digits.len()..].trim_start();
            // A file name is a string literal; without one the file stays the one before.
            let file = after
                .strip_prefix('"')
                .and_then(|f| f.find('"').map(|e| f[..e].to_string()))
                .or_else(|| line_marks.last().and_then(|m| m.2.clone()));
            line_marks.push((t.line, n, file));
        }
        Source { src, toks: Arc::new(toks), macros, types, line_marks: Arc::new(line_marks), sigs: Arc::default() }
    }

    /// The signatures of the program's kernels (`clc::signature`).
    pub fn signatures(&self) -> &[Result<KernelSig, SigError>] {
        self.sigs.get_or_init(|| kernels_in(self.src, &self.toks))
    }

    /// The line the compiler reports for physical line `phys` of the source.
    pub fn logical(&self, phys: u32) -> u32 {
        match self.line_marks.iter().rev().find(|(at, _, _)| *at < phys) {
            Some(&(at, n, _)) => n.saturating_add(phys - at - 1),
            None => phys,
        }
    }

    /// A `#line` directive that gives the text after it the line (and file) that physical
    /// line `phys` has.
    pub fn line_directive(&self, phys: u32) -> String {
        let file = self.line_marks.iter().rev().find(|(at, _, _)| *at < phys).and_then(|m| m.2.as_deref());
        match file {
            Some(f) => format!("#line {} \"{f}\"\n", self.logical(phys)),
            None => format!("#line {}\n", self.logical(phys)),
        }
    }

    pub fn text(&self, j: usize) -> &'s str {
        self.toks.get(j).map_or("", |t| t.text(self.src))
    }

    /// Whether token `j` is punctuator `p`.
    pub fn is(&self, j: usize, p: &str) -> bool {
        self.toks.get(j).is_some_and(|t| t.kind == TokenKind::Punct && t.text(self.src) == p)
    }

    /// Whether token `j` is identifier `w`.
    pub fn is_word(&self, j: usize, w: &str) -> bool {
        self.toks.get(j).is_some_and(|t| t.kind == TokenKind::Ident && t.text(self.src) == w)
    }

    /// Whether token `j` is an identifier the program `#define`s.
    pub fn is_macro(&self, j: usize) -> bool {
        self.toks.get(j).is_some_and(|t| t.kind == TokenKind::Ident) && self.macros.contains_key(self.text(j))
    }

    /// The bracket that closes the one at `open`.
    pub fn close_of(&self, open: usize) -> R<usize> {
        matching_bracket(self.src, &self.toks, open)
            .map(|e| e - 1)
            .ok_or_else(|| self.refuse(open, open + 1, "unbalanced brackets"))
    }

    /// A refusal quoting tokens `a..b`.
    pub fn refuse(&self, a: usize, b: usize, reason: impl Into<String>) -> Refusal {
        let a = a.min(self.toks.len().saturating_sub(1));
        let b = b.clamp(a + 1, self.toks.len());
        let mut construct = one_line(&self.src[self.toks[a].span.start..self.toks[b - 1].span.end]);
        if construct.chars().count() > 80 {
            construct = construct.chars().take(77).collect::<String>() + "...";
        }
        Refusal { line: self.logical(self.toks[a].line), construct, reason: reason.into() }
    }

    /// Whether the `&`, `*`, `+` or `-` at `j` is a unary operator.
    pub fn unary(&self, j: usize) -> bool {
        if j == 0 {
            return true;
        }
        let p = self.toks[j - 1];
        match p.kind {
            TokenKind::Ident => matches!(p.text(self.src), "return" | "case" | "sizeof"),
            TokenKind::Number | TokenKind::Str | TokenKind::Char => false,
            // After a cast's `)` an operator is unary: `(ulong)&x`.
            TokenKind::Punct if p.text(self.src) == ")" => {
                self.open_of(j - 1).is_some_and(|o| self.cast_at(o) == Some(j - 1))
            }
            TokenKind::Punct => !matches!(p.text(self.src), "]" | "++" | "--"),
            _ => true,
        }
    }

    /// The `(` that the `)` at `close` closes.
    pub fn open_of(&self, close: usize) -> Option<usize> {
        let mut depth = 0usize;
        for k in (0..=close).rev() {
            if self.toks[k].kind != TokenKind::Punct {
                continue;
            }
            match self.text(k) {
                ")" | "]" | "}" => depth += 1,
                "(" | "[" | "{" => {
                    depth -= 1;
                    if depth == 0 {
                        return self.is(k, "(").then_some(k);
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// Whether evaluating tokens `a..b` twice is the same as once.
    pub fn pure(&self, a: usize, b: usize) -> bool {
        (a..b).all(|k| {
            let t = self.toks[k];
            let s = t.text(self.src);
            match t.kind {
                TokenKind::Punct => !(ASSIGN_OPS.contains(&s) || s == "++" || s == "--"),
                TokenKind::Ident if self.is(k + 1, "(") => {
                    PURE_CALLS.contains(&s) || s.starts_with("convert_") || s.starts_with("as_")
                }
                TokenKind::Ident => !self.macros.contains_key(s),
                TokenKind::Directive | TokenKind::Invalid => false,
                _ => true,
            }
        })
    }

    /// Whether token `k` is an assignment operator.
    pub fn is_assign(&self, k: usize) -> bool {
        self.toks.get(k).is_some_and(|t| t.kind == TokenKind::Punct && ASSIGN_OPS.contains(&t.text(self.src)))
    }
}
