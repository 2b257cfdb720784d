//! Kernel signatures: the `__kernel` functions of an OpenCL C source, with their parameters
//! as written. Declarations are read token by token, so comments, newlines and attributes may
//! sit anywhere; macros are not expanded (a parameter type that is a macro keeps its name).

use super::lex::{is_attribute, lex, matching_bracket, one_line, Span, Token, TokenKind};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrSpace {
    Global,
    Constant,
    Local,
    Private,
}

impl fmt::Display for AddrSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddrSpace::Global => "__global",
            AddrSpace::Constant => "__constant",
            AddrSpace::Local => "__local",
            AddrSpace::Private => "__private",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub space: AddrSpace,
    /// A pointer or an array parameter (`float a[]`).
    pub pointer: bool,
    /// The pointee is const (`const float *p`, not `float *const p`).
    pub is_const: bool,
    /// The pointee type for a pointer, the type for a scalar, as written with qualifiers
    /// dropped: `struct cell`, `Cell`, `float4`, `unsigned int`.
    pub type_name: String,
    /// Byte span of the whole parameter in the source.
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSig {
    pub name: String,
    /// Line of the kernel's name.
    pub line: u32,
    pub params: Vec<Param>,
    /// Byte offset of the declaration's first token (attributes and `__kernel` included): where
    /// annotations above it end.
    pub decl_start: usize,
    /// Byte span of the body, braces included; `None` for a prototype.
    pub body: Option<Span>,
}

impl KernelSig {
    pub fn param(&self, name: &str) -> Option<(usize, &Param)> {
        self.params.iter().enumerate().find(|(_, p)| p.name == name)
    }
}

/// A kernel whose declaration could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SigError {
    pub decl_start: usize,
    pub line: u32,
    pub reason: String,
}

/// Every kernel declaration and definition of `src`, in source order.
pub fn kernels(src: &str) -> Vec<Result<KernelSig, SigError>> {
    let toks: Vec<Token> = lex(src).into_iter().filter(|t| !t.is_comment()).collect();
    kernels_in(src, &toks)
}

/// Like `kernels`, over tokens already lexed with the comments left out.
pub(crate) fn kernels_in(src: &str, toks: &[Token]) -> Vec<Result<KernelSig, SigError>> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut decl_start: Option<usize> = None;
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        let text = t.text(src);
        if t.kind == TokenKind::Directive && depth == 0 {
            decl_start = None;
        } else if t.is_punct(src, "{") {
            depth += 1;
        } else if t.is_punct(src, "}") {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                decl_start = None;
            }
        } else if depth == 0 && t.is_punct(src, ";") {
            decl_start = None;
        } else if depth == 0 {
            let start = *decl_start.get_or_insert(t.span.start);
            if t.kind == TokenKind::Ident && (text == "__kernel" || text == "kernel") {
                let mut h = Header { src, toks, pos: i + 1 };
                match h.kernel(start) {
                    Ok(sig) => out.push(Ok(sig)),
                    Err(reason) => {
                        out.push(Err(SigError { decl_start: start, line: t.line, reason: one_line(&reason) }))
                    }
                }
                // Resume at the body's `{` (or the `;`) so that brace counting stays right.
                i = h.pos.max(i + 1);
                continue;
            }
        }
        i += 1;
    }
    out
}

struct Header<'a> {
    src: &'a str,
    toks: &'a [Token],
    pos: usize,
}

impl Header<'_> {
    fn peek(&self) -> Option<Token> {
        self.toks.get(self.pos).copied()
    }

    fn text(&self, t: Token) -> &str {
        t.text(self.src)
    }

    /// Index just past the bracket that closes the one at `open`.
    fn matching(&self, open: usize) -> Result<usize, String> {
        matching_bracket(self.src, self.toks, open).ok_or_else(|| "unbalanced brackets".to_string())
    }

    /// Skips `__attribute__((...))` at the current position, if there is one.
    fn skip_attribute(&mut self) -> Result<bool, String> {
        match self.peek() {
            Some(t) if t.kind == TokenKind::Ident && is_attribute(self.text(t)) => {
                let open = self.pos + 1;
                if !self.toks.get(open).is_some_and(|t| t.is_punct(self.src, "(")) {
                    return Err("`__attribute__` without `((...))`".to_string());
                }
                self.pos = self.matching(open)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// From just after `__kernel` to the body's `{` or the prototype's `;`.
    fn kernel(&mut self, decl_start: usize) -> Result<KernelSig, String> {
        let mut last_ident: Option<Token> = None;
        loop {
            if self.skip_attribute()? {
                continue;
            }
            let Some(t) = self.peek() else {
                return Err("the source ends inside the kernel's declaration".to_string());
            };
            if t.is_punct(self.src, "(") {
                break;
            }
            if t.kind != TokenKind::Ident {
                return Err(format!("unexpected `{}` in the kernel's declaration", self.text(t)));
            }
            last_ident = Some(t);
            self.pos += 1;
        }
        let Some(name_tok) = last_ident else {
            return Err("kernel without a name".to_string());
        };
        let open = self.pos;
        let close = self.matching(open)? - 1;
        let params = self.params(open + 1, close)?;
        self.pos = close + 1;
        while self.skip_attribute()? {}
        let body = match self.peek() {
            Some(t) if t.is_punct(self.src, "{") => {
                let end = self.matching(self.pos)?;
                Some(Span::new(t.span.start, self.toks[end - 1].span.end))
            }
            Some(t) if t.is_punct(self.src, ";") => None,
            Some(t) => return Err(format!("unexpected `{}` after the kernel's parameters", self.text(t))),
            None => return Err("the source ends after the kernel's parameters".to_string()),
        };
        Ok(KernelSig { name: self.text(name_tok).to_string(), line: name_tok.line, params, decl_start, body })
    }

    /// The parameters between token indices `from` and `to` (the parentheses excluded).
    fn params(&self, from: usize, to: usize) -> Result<Vec<Param>, String> {
        let mut groups: Vec<(usize, usize)> = Vec::new();
        let (mut depth, mut start) = (0usize, from);
        for j in from..to {
            let t = self.toks[j];
            match (t.kind, t.text(self.src)) {
                (TokenKind::Punct, "(" | "[" | "{") => depth += 1,
                (TokenKind::Punct, ")" | "]" | "}") => depth = depth.saturating_sub(1),
                (TokenKind::Punct, ",") if depth == 0 => {
                    groups.push((start, j));
                    start = j + 1;
                }
                _ => {}
            }
        }
        groups.push((start, to));
        if let [(a, b)] = groups[..] {
            if a == b || (b == a + 1 && self.toks[a].is_ident(self.src, "void")) {
                return Ok(Vec::new());
            }
        }
        let mut params: Vec<Param> = Vec::new();
        for (n, &(a, b)) in groups.iter().enumerate() {
            let p = self.param(a, b).map_err(|r| format!("parameter {}: {r}", n + 1))?;
            if params.iter().any(|q| q.name == p.name) {
                return Err(format!("parameter `{}` appears twice", p.name));
            }
            params.push(p);
        }
        Ok(params)
    }

    fn param(&self, from: usize, to: usize) -> Result<Param, String> {
        if from == to {
            return Err("empty".to_string());
        }
        let span = Span::new(self.toks[from].span.start, self.toks[to - 1].span.end);
        let mut space: Option<AddrSpace> = None;
        let (mut pointer, mut is_const, mut after_star) = (false, false, false);
        let mut words: Vec<String> = Vec::new();
        // How many words preceded the last `*`: all but the name must.
        let mut words_at_star: Option<usize> = None;
        let mut j = from;
        while j < to {
            let t = self.toks[j];
            let text = self.text(t);
            j += 1;
            if t.kind == TokenKind::Punct {
                match text {
                    "*" => {
                        pointer = true;
                        after_star = true;
                        words_at_star = Some(words.len());
                    }
                    // An array parameter decays to a pointer; only after the name.
                    "[" if !words.is_empty() => {
                        pointer = true;
                        j = self.matching(j - 1)?.min(to);
                    }
                    _ => return Err(format!("unexpected `{text}`")),
                }
                continue;
            }
            if t.kind != TokenKind::Ident {
                return Err(format!("unexpected `{text}`"));
            }
            let this_space = match text {
                "__global" | "global" => Some(AddrSpace::Global),
                "__constant" | "constant" => Some(AddrSpace::Constant),
                "__local" | "local" => Some(AddrSpace::Local),
                "__private" | "private" => Some(AddrSpace::Private),
                _ => None,
            };
            if let Some(s) = this_space {
                if space.is_some_and(|old| old != s) {
                    return Err("two address spaces".to_string());
                }
                space = Some(s);
                continue;
            }
            match text {
                "const" | "__const" => is_const |= !after_star,
                "volatile" | "__volatile" | "restrict" | "__restrict" | "__restrict__" | "__read_only"
                | "read_only" | "__write_only" | "write_only" | "__read_write" | "read_write" => {}
                s if is_attribute(s) => {
                    if !self.toks.get(j).is_some_and(|t| t.is_punct(self.src, "(")) {
                        return Err("`__attribute__` without `((...))`".to_string());
                    }
                    j = self.matching(j)?.min(to);
                }
                "struct" | "union" | "enum" => {
                    let tag = self.toks[j..to].first().filter(|t| t.kind == TokenKind::Ident);
                    let Some(tag) = tag else {
                        return Err(format!("`{text}` without a tag"));
                    };
                    words.push(format!("{text} {}", self.text(*tag)));
                    j += 1;
                }
                _ => words.push(text.to_string()),
            }
        }
        let Some(name) = words.pop() else {
            return Err("no name".to_string());
        };
        if words.is_empty() || name.contains(' ') {
            return Err(format!("cannot tell the type from the name in `{}`", span.of(self.src)));
        }
        // The name must follow every `*`: `float p *` is not a declaration.
        if words_at_star.is_some_and(|k| k > words.len()) {
            return Err(format!("misplaced `*` in `{}`", span.of(self.src)));
        }
        let space = space.unwrap_or(AddrSpace::Private);
        Ok(Param { name, space, pointer, is_const, type_name: words.join(" "), span })
    }
}
