//! The `//DL:` annotation grammar (docs/annotations.md) and its recursive-descent parser.
//! Anything the parser is not sure of is an error with a one-line reason and a span; it never
//! guesses, because a wrong layout corrupts the application's data.

use super::error::SpanError;
use super::extent::{BinOp, Extent, ExtentKind};
use crate::clc::lex::{lex, one_line, Span, Token, TokenKind};
use crate::clc::types::scalar_size;
use std::fmt;

/// How the application's host buffer is laid out. `s` is the number of words per element and
/// `word` their size in bytes; `None` leaves them to the parameter's type (validation says
/// when that type cannot tell).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostLayout {
    /// Elements one after another, word `k` of element `i` at `i*s + k`.
    AoS { s: Option<u32>, word: Option<u32> },
    /// `s` arrays of n words each, word `k` of element `i` at `k*n + i`.
    SoA { s: Option<u32>, word: Option<u32> },
}

impl HostLayout {
    pub fn is_aos(self) -> bool {
        matches!(self, HostLayout::AoS { .. })
    }

    /// `(s, word)` as the annotation gives them.
    pub fn shape(self) -> (Option<u32>, Option<u32>) {
        match self {
            HostLayout::AoS { s, word } | HostLayout::SoA { s, word } => (s, word),
        }
    }

    fn name(self) -> &'static str {
        if self.is_aos() {
            "AoS"
        } else {
            "SoA"
        }
    }
}

/// The layout the kernel is written for, when the annotation names one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceLayout {
    /// `tile: None` means the kernel reads the tile from the `CLAYOUT_TILE` macro.
    Asta { tile: Option<u32> },
    /// The thesis's `AOS2ASTA_<struct>` name, kept as written; it means ASTA with the tile
    /// from the `CLAYOUT_TILE` macro.
    ThesisName(String),
}

impl DeviceLayout {
    /// The tile the annotation fixes, if any.
    pub fn tile(&self) -> Option<u32> {
        match self {
            DeviceLayout::Asta { tile } => *tile,
            DeviceLayout::ThesisName(_) => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnnotatedParam {
    pub name: String,
    pub span: Span,
    pub extent: Extent,
    /// Written `out NAME[extent]`: the kernel writes every word of each of the extent's
    /// structures before it reads any, so the buffer's old contents need no conversion.
    pub out: bool,
}

/// One `//DL:` line. Spans are byte offsets in the text given to `parse_annotation`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Annotation {
    pub host: HostLayout,
    pub host_span: Span,
    pub params: Vec<AnnotatedParam>,
    pub device: Option<DeviceLayout>,
    pub device_span: Option<Span>,
}

/// The largest tile the device layout accepts, as for `CLAYOUT_TILE`.
const MAX_TILE: u32 = 1024;
/// Deeper parentheses, or more operators, than any real extent needs: the bounds keep the
/// parser's and the evaluator's recursion shallow whatever the input.
const MAX_NESTING: u32 = 32;
const MAX_OPERATORS: u32 = 256;
const THESIS_PREFIX: &str = "AOS2ASTA_";

/// The body of a `//DL:` comment (`// DL:` too) and its byte offset inside the comment text.
pub fn dl_comment_body(comment: &str) -> Option<(usize, &str)> {
    let rest = comment.strip_prefix("//")?;
    let trimmed = rest.trim_start_matches([' ', '\t']);
    let body = trimmed.strip_prefix("DL:")?;
    Some((comment.len() - body.len(), body))
}

/// Parses one annotation: the text of a `//DL:` comment, with or without the `//DL:` prefix.
pub fn parse_annotation(text: &str) -> Result<Annotation, SpanError> {
    let body_start = match text.trim_start().strip_prefix("//") {
        Some(_) => {
            let lead = text.len() - text.trim_start().len();
            match dl_comment_body(&text[lead..]) {
                Some((off, _)) => lead + off,
                None => return Err(err(Span::new(lead, text.len()), "a comment that is not `//DL:`")),
            }
        }
        None => 0,
    };
    let body = &text[body_start..];
    let toks: Vec<Token> = lex(body)
        .into_iter()
        .filter(|t| !t.is_comment())
        .map(|t| Token { span: Span::new(t.span.start + body_start, t.span.end + body_start), ..t })
        .collect();
    Parser { text, toks, pos: 0, depth: 0, ops: 0 }.annotation()
}

/// Parses an extent alone (`nx * ny * nz`), as it reads between an annotation's brackets.
pub fn parse_extent(text: &str) -> Result<Extent, SpanError> {
    let toks: Vec<Token> = lex(text).into_iter().filter(|t| !t.is_comment()).collect();
    let mut p = Parser { text, toks, pos: 0, depth: 0, ops: 0 };
    let e = p.expr()?;
    if let Some(t) = p.peek() {
        return Err(err(t.span, format!("unexpected `{}` after the extent", p.text_of(t))));
    }
    Ok(e)
}

fn err(span: Span, reason: impl Into<String>) -> SpanError {
    SpanError { span, reason: one_line(&reason.into()) }
}

/// An integer literal: decimal or `0x` hexadecimal. Octal and suffixes are refused rather than
/// read in a way the writer may not have meant.
pub(crate) fn parse_int(s: &str) -> Result<u64, String> {
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None => (s, 10),
    };
    if radix == 10 && s.len() > 1 && s.starts_with('0') {
        return Err(format!("`{s}`: a leading 0 would be octal in C; write the number without it"));
    }
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(format!("`{s}` is not an integer (decimal or 0x hexadecimal, no suffix)"));
    }
    u64::from_str_radix(digits, radix).map_err(|_| format!("`{s}` is too large"))
}

struct Parser<'a> {
    text: &'a str,
    toks: Vec<Token>,
    pos: usize,
    depth: u32,
    /// Operators in the current extent.
    ops: u32,
}

impl Parser<'_> {
    fn peek(&self) -> Option<Token> {
        self.toks.get(self.pos).copied()
    }

    fn peek_at(&self, n: usize) -> Option<Token> {
        self.toks.get(self.pos + n).copied()
    }

    fn text_of(&self, t: Token) -> &str {
        t.text(self.text)
    }

    /// Where an error about a missing token points: the next token, or the end of the text.
    fn here(&self) -> Span {
        match self.peek() {
            Some(t) => t.span,
            None => Span::new(self.text.len(), self.text.len()),
        }
    }

    fn found(&self) -> String {
        match self.peek() {
            Some(t) => format!("`{}`", self.text_of(t)),
            None => "the end".to_string(),
        }
    }

    fn at_punct(&self, p: &str) -> bool {
        self.peek().is_some_and(|t| t.is_punct(self.text, p))
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        let at = self.at_punct(p);
        if at {
            self.pos += 1;
        }
        at
    }

    fn expect_punct(&mut self, p: &str, what: &str) -> Result<Span, SpanError> {
        let span = self.here();
        if self.eat_punct(p) {
            Ok(span)
        } else {
            Err(err(span, format!("expected `{p}` {what}, found {}", self.found())))
        }
    }

    fn ident(&mut self) -> Option<(String, Span)> {
        let t = self.peek().filter(|t| t.kind == TokenKind::Ident)?;
        self.pos += 1;
        Some((self.text_of(t).to_string(), t.span))
    }

    fn int(&mut self, what: &str) -> Result<(u64, Span), SpanError> {
        match self.peek() {
            Some(t) if t.kind == TokenKind::Number => {
                self.pos += 1;
                parse_int(self.text_of(t)).map(|n| (n, t.span)).map_err(|r| err(t.span, r))
            }
            _ => Err(err(self.here(), format!("expected {what}, found {}", self.found()))),
        }
    }

    fn annotation(mut self) -> Result<Annotation, SpanError> {
        if self.peek().is_none() {
            return Err(err(self.here(), "empty annotation; expected e.g. `AoS: f[n]`"));
        }
        let (host, host_span) = self.host()?;
        if self.at_punct("->") {
            return Err(err(self.here(), "the device layout goes after the parameters: `AoS: f[n] -> ASTA`"));
        }
        self.expect_punct(":", "after the host layout")?;
        let mut params: Vec<AnnotatedParam> = Vec::new();
        loop {
            let p = self.param()?;
            if params.iter().any(|q| q.name == p.name) {
                return Err(err(p.span, format!("`{}` is annotated twice", p.name)));
            }
            params.push(p);
            if !self.eat_punct(",") {
                break;
            }
        }
        let (device, device_span) = match self.device(host)? {
            Some((d, s)) => (Some(d), Some(s)),
            None => (None, None),
        };
        if let Some(t) = self.peek() {
            return Err(err(t.span, format!("unexpected `{}` at the end of the annotation", self.text_of(t))));
        }
        Ok(Annotation { host, host_span, params, device, device_span })
    }

    fn host(&mut self) -> Result<(HostLayout, Span), SpanError> {
        let Some((name, span)) = self.ident() else {
            return Err(err(self.here(), format!("expected the host layout `AoS` or `SoA`, found {}", self.found())));
        };
        let aos = name.eq_ignore_ascii_case("AoS");
        if !aos && !name.eq_ignore_ascii_case("SoA") {
            return Err(err(span, format!("expected the host layout `AoS` or `SoA`, found `{name}`")));
        }
        let layout = |s, word| {
            if aos {
                HostLayout::AoS { s, word }
            } else {
                HostLayout::SoA { s, word }
            }
        };
        if !self.eat_punct("(") {
            return Ok((layout(None, None), span));
        }
        let (s, s_span) = self.int(&format!("the number of words S in `{name}(S)`"))?;
        let s = u32::try_from(s)
            .ok()
            .filter(|&s| s >= 1)
            .ok_or_else(|| err(s_span, format!("the number of words must be from 1 to {}, not {s}", u32::MAX)))?;
        let word = if self.eat_punct(",") { Some(self.word(&name)?) } else { None };
        let close = self.expect_punct(")", &format!("to close `{name}(`"))?;
        Ok((layout(Some(s), word), span.to(close)))
    }

    /// The word of `SoA(S, W)`: a byte count or a scalar type name.
    fn word(&mut self, layout: &str) -> Result<u32, SpanError> {
        let bad = |span, what: &str| {
            err(span, format!("word size must be 1, 2, 4 or 8 bytes or a scalar type such as `float`, not `{what}`"))
        };
        if let Some(t) = self.peek().filter(|t| t.kind == TokenKind::Ident) {
            self.pos += 1;
            let name = self.text_of(t);
            return scalar_size(name).ok_or_else(|| bad(t.span, name));
        }
        let (w, span) = self.int(&format!("the word size W in `{layout}(S, W)`"))?;
        match w {
            1 | 2 | 4 | 8 => Ok(w as u32),
            _ => Err(bad(span, &w.to_string())),
        }
    }

    fn param(&mut self) -> Result<AnnotatedParam, SpanError> {
        // `out` followed by a name is the flag; `out[n]` is a parameter named `out`.
        let out = matches!((self.peek(), self.peek_at(1)), (Some(a), Some(b))
            if a.kind == TokenKind::Ident && self.text_of(a) == "out" && b.kind == TokenKind::Ident);
        if out {
            self.pos += 1;
        }
        let Some((name, span)) = self.ident() else {
            return Err(err(self.here(), format!("expected a parameter name, found {}", self.found())));
        };
        let open = self.here();
        if !self.eat_punct("[") {
            return Err(err(open, format!("expected `[` and the extent after `{name}`, found {}", self.found())));
        }
        if self.at_punct("]") {
            return Err(err(
                self.here(),
                format!("empty extent; write `{name}[auto]` for buffer size / structure size"),
            ));
        }
        self.ops = 0;
        let extent = self.expr()?;
        self.expect_punct("]", &format!("to close the extent of `{name}`"))?;
        Ok(AnnotatedParam { name, span, extent, out })
    }

    /// What follows the parameters: `-> ASTA`, `-> ASTA(T)`, the thesis's `AOS2ASTA_<struct>`,
    /// or nothing.
    fn device(&mut self, host: HostLayout) -> Result<Option<(DeviceLayout, Span)>, SpanError> {
        if self.eat_punct("->") {
            let Some((name, span)) = self.ident() else {
                return Err(err(self.here(), format!("expected `ASTA` after `->`, found {}", self.found())));
            };
            if !name.eq_ignore_ascii_case("ASTA") {
                return Err(err(span, format!("unknown device layout `{name}`; clayout knows `ASTA` and `ASTA(T)`")));
            }
            if !self.eat_punct("(") {
                return Ok(Some((DeviceLayout::Asta { tile: None }, span)));
            }
            let (t, t_span) = self.int("the tile T in `ASTA(T)`")?;
            if !(t.is_power_of_two() && t <= u64::from(MAX_TILE)) {
                return Err(err(t_span, format!("the tile must be a power of two from 1 to {MAX_TILE}, not {t}")));
            }
            let close = self.expect_punct(")", "to close `ASTA(`")?;
            return Ok(Some((DeviceLayout::Asta { tile: Some(t as u32) }, span.to(close))));
        }
        let Some(t) = self.peek().filter(|t| t.kind == TokenKind::Ident) else {
            return Ok(None);
        };
        let name = self.text_of(t).to_string();
        if self.peek_at(1).is_some_and(|n| n.is_punct(self.text, "[")) {
            return Err(err(t.span, format!("expected `,` before the parameter `{name}`")));
        }
        let is_thesis = name.len() > THESIS_PREFIX.len()
            && name.get(..THESIS_PREFIX.len()).is_some_and(|p| p.eq_ignore_ascii_case(THESIS_PREFIX));
        if !is_thesis {
            return Err(err(t.span, format!("unexpected `{name}` after the parameters; a device layout is written `-> ASTA`, `-> ASTA(T)` or `AOS2ASTA_<struct>`")));
        }
        if !host.is_aos() {
            return Err(err(t.span, format!("`{name}` converts from AoS but the host layout is SoA")));
        }
        self.pos += 1;
        Ok(Some((DeviceLayout::ThesisName(name), t.span)))
    }

    fn expr(&mut self) -> Result<Extent, SpanError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(err(self.here(), format!("extent nested deeper than {MAX_NESTING} levels")));
        }
        let r = self.binary(1);
        self.depth -= 1;
        r
    }

    /// Left-associative binary operators of at least `min` precedence (1: + -, 2: * /).
    fn binary(&mut self, min: u8) -> Result<Extent, SpanError> {
        let mut lhs = if min == 1 { self.binary(2)? } else { self.atom()? };
        loop {
            let op = match self.peek().map(|t| self.text_of(t)) {
                Some("+") if min == 1 => BinOp::Add,
                Some("-") if min == 1 => BinOp::Sub,
                Some("*") if min == 2 => BinOp::Mul,
                Some("/") if min == 2 => BinOp::Div,
                _ => return Ok(lhs),
            };
            self.ops += 1;
            if self.ops > MAX_OPERATORS {
                return Err(err(self.here(), format!("extent with more than {MAX_OPERATORS} operators")));
            }
            self.pos += 1;
            let rhs = if min == 1 { self.binary(2)? } else { self.atom()? };
            let span = lhs.span.to(rhs.span);
            lhs = Extent { kind: ExtentKind::BinOp(op, Box::new(lhs), Box::new(rhs)), span };
        }
    }

    fn atom(&mut self) -> Result<Extent, SpanError> {
        let Some(t) = self.peek() else {
            return Err(err(self.here(), "the extent ends too early"));
        };
        let text = self.text_of(t).to_string();
        match t.kind {
            TokenKind::Number => {
                let (n, span) = self.int("a number")?;
                Ok(Extent { kind: ExtentKind::Int(n), span })
            }
            TokenKind::Punct if text == "(" => {
                self.pos += 1;
                let inner = self.expr()?;
                let close = self.expect_punct(")", "to close `(`")?;
                Ok(Extent { kind: inner.kind, span: t.span.to(close) })
            }
            TokenKind::Punct if text == "-" || text == "+" => {
                Err(err(t.span, format!("unary `{text}` is not allowed in an extent")))
            }
            TokenKind::Ident => {
                self.pos += 1;
                if text == "auto" {
                    return Ok(Extent { kind: ExtentKind::Auto, span: t.span });
                }
                if !self.at_punct("(") {
                    return Ok(Extent { kind: ExtentKind::Arg(text), span: t.span });
                }
                self.call(&text, t.span)
            }
            _ => Err(err(t.span, format!("expected a number, `global_size(d)`, `local_size(d)`, `num_groups(d)`, a scalar parameter or `auto`, found `{text}`"))),
        }
    }

    /// `global_size(d)` and friends, the OpenCL `get_` spellings too.
    fn call(&mut self, name: &str, name_span: Span) -> Result<Extent, SpanError> {
        let make: fn(u32) -> ExtentKind = match name.strip_prefix("get_").unwrap_or(name) {
            "global_size" => ExtentKind::GlobalSize,
            "local_size" => ExtentKind::LocalSize,
            "num_groups" => ExtentKind::NumGroups,
            _ => {
                return Err(err(
                    name_span,
                    format!("unknown function `{name}`; extents know global_size, local_size and num_groups"),
                ))
            }
        };
        self.pos += 1;
        let (d, d_span) = self.int(&format!("a dimension 0, 1 or 2 in `{name}(`"))?;
        if d > 2 {
            return Err(err(d_span, format!("dimension {d} out of range: OpenCL has dimensions 0, 1 and 2")));
        }
        let close = self.expect_punct(")", &format!("to close `{name}(`"))?;
        Ok(Extent { kind: make(d as u32), span: name_span.to(close) })
    }
}

impl fmt::Display for Annotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.host.name())?;
        match self.host.shape() {
            (None, _) => {}
            (Some(s), None) => write!(f, "({s})")?,
            (Some(s), Some(w)) => write!(f, "({s}, {w})")?,
        }
        f.write_str(":")?;
        for (i, p) in self.params.iter().enumerate() {
            let out = if p.out { "out " } else { "" };
            write!(f, "{} {out}{}[{}]", if i == 0 { "" } else { "," }, p.name, p.extent)?;
        }
        match &self.device {
            None => Ok(()),
            Some(DeviceLayout::Asta { tile: None }) => f.write_str(" -> ASTA"),
            Some(DeviceLayout::Asta { tile: Some(t) }) => write!(f, " -> ASTA({t})"),
            Some(DeviceLayout::ThesisName(n)) => write!(f, " {n}"),
        }
    }
}
