//! Translation phases 1 to 3 (C99 5.1.1.2): line splicing, then preprocessing tokens one
//! logical line at a time. Total over any input: an unterminated literal or comment becomes a
//! token of its own, never an error, because only the lines that survive conditional inclusion
//! may be judged (an apostrophe in a skipped `#if 0` block is fine).

use std::rc::Rc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Ident,
    /// A preprocessing number (C99 6.4.8): `1`, `0x1F`, `1.5e-3f`, `1..2`.
    Number,
    Char,
    Str,
    Punct,
    /// `<stdio.h>` or `"x.h"` right after `#include`.
    HeaderName,
    /// A character no other kind takes, or an unterminated literal up to the end of its line.
    Other,
    /// A `//DL:` or `/*DL: ... */` comment, kept verbatim for the annotation reader.
    Annotation,
    /// A directive line passed through to the compiler (`#pragma`, some `#undef`s).
    Directive,
    /// An empty operand of `##` (C99 6.10.3.3); never leaves the expander.
    Placemarker,
    Eof,
}

/// A presumed location: the file name (an index into the preprocessor's name table) and line
/// as `#line` leaves them, which is what a compiler reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Loc {
    pub file: u32,
    pub line: u32,
}

#[derive(Clone, Debug)]
pub(crate) struct Tok {
    pub kind: Kind,
    pub text: Rc<str>,
    pub loc: Loc,
    /// White space (or a comment) comes before it: stringizing and output spacing need it.
    pub space: bool,
    /// Blue paint (C99 6.10.3.4p2): met while its macro was being replaced, never expanded.
    pub painted: bool,
    /// Produced by a macro expansion: `loc` is where the outermost invocation starts.
    pub expanded: bool,
    /// The white space before it when it starts its line, so the output keeps indentation.
    pub indent: Indent,
}

/// Leading white space: `n` tabs or `n` spaces (mixed indentation is kept as its length).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Indent {
    pub tabs: bool,
    pub n: u16,
}

impl Tok {
    pub fn new(kind: Kind, text: &str, loc: Loc) -> Tok {
        Tok {
            kind,
            text: Rc::from(text),
            loc,
            space: false,
            painted: false,
            expanded: false,
            indent: Indent::default(),
        }
    }

    pub fn is_punct(&self, p: &str) -> bool {
        self.kind == Kind::Punct && &*self.text == p
    }

    /// `#`, or its digraph `%:`.
    pub fn is_hash(&self) -> bool {
        self.is_punct("#") || self.is_punct("%:")
    }

    pub fn is_hashhash(&self) -> bool {
        self.is_punct("##") || self.is_punct("%:%:")
    }

    /// Passed through to the output at its place, invisible to macro expansion.
    pub fn is_transparent(&self) -> bool {
        matches!(self.kind, Kind::Annotation | Kind::Directive)
    }
}

/// Source text after phase 2: line splices removed, every line ending made `\n`, with the
/// offsets where physical lines start so that a token can name its line.
struct Spliced {
    text: String,
    /// Offsets in `text` where physical lines 2, 3, ... start.
    line_starts: Vec<usize>,
}

impl Spliced {
    fn new(src: &str) -> Spliced {
        let b = src.as_bytes();
        let mut text = String::with_capacity(src.len());
        let mut line_starts = Vec::new();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'\\' => {
                    // clang and GCC accept white space between the backslash and the newline.
                    let mut j = i + 1;
                    while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                        j += 1;
                    }
                    if j < b.len() && (b[j] == b'\n' || b[j] == b'\r') {
                        i = j + newline_len(b, j);
                        line_starts.push(text.len());
                    } else {
                        text.push('\\');
                        i += 1;
                    }
                }
                b'\n' | b'\r' => {
                    i += newline_len(b, i);
                    text.push('\n');
                    line_starts.push(text.len());
                }
                _ => {
                    let start = i;
                    while i < b.len() && !matches!(b[i], b'\\' | b'\n' | b'\r') {
                        i += 1;
                    }
                    text.push_str(&src[start..i]);
                }
            }
        }
        Spliced { text, line_starts }
    }

    fn line_of(&self, offset: usize) -> u32 {
        clamp_u32(self.line_starts.partition_point(|&s| s <= offset) + 1)
    }

    /// The white space between the start of the physical line and `offset`, if that is all
    /// there is.
    fn indent_at(&self, offset: usize) -> Indent {
        let i = self.line_starts.partition_point(|&s| s <= offset);
        let start = if i == 0 { 0 } else { self.line_starts[i - 1] };
        let lead = self.text.get(start..offset).unwrap_or("");
        if !lead.bytes().all(|b| b == b' ' || b == b'\t') {
            return Indent::default();
        }
        Indent { tabs: lead.starts_with('\t'), n: u16::try_from(lead.len()).unwrap_or(u16::MAX) }
    }
}

fn newline_len(b: &[u8], i: usize) -> usize {
    if b[i] == b'\r' && b.get(i + 1) == Some(&b'\n') {
        2
    } else {
        1
    }
}

pub(crate) fn clamp_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// One logical line: its tokens (locations carry physical lines, file 0) and the physical line
/// that follows it, which `#line` needs.
pub(crate) struct Line {
    pub toks: Vec<Tok>,
    pub next_line: u32,
    /// Its length in the spliced text: the work of reading it.
    pub bytes: usize,
}

pub(crate) struct Lexer {
    sp: Spliced,
    pos: usize,
}

/// What starts at a position of spliced text.
enum Lexeme {
    Token(Kind, usize),
    /// A comment, up to `end`.
    Comment {
        end: usize,
    },
    Space(usize),
    Newline,
}

const PUNCT3: [&str; 3] = ["...", "<<=", ">>="];
const PUNCT2: [&str; 24] = [
    "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "*=", "/=", "%=", "+=", "-=", "&=", "^=", "|=",
    "##", "<:", ":>", "<%", "%>",
];
const PUNCT1: &[u8] = b"[](){}.&*+-~!/%<>^|?:;=,#";

impl Lexer {
    pub fn new(src: &str) -> Lexer {
        Lexer { sp: Spliced::new(src), pos: 0 }
    }

    /// The spliced text, for scans that only look for directive names.
    pub fn text(&self) -> &str {
        &self.sp.text
    }

    /// The next logical line. With `skipping` (a group not taken) only a directive's tokens
    /// are made: any other line comes back empty, for speed.
    pub fn next_line(&mut self, skipping: bool) -> Option<Line> {
        if self.pos >= self.sp.text.len() {
            return None;
        }
        let start = self.pos;
        let text = &self.sp.text;
        let mut toks: Vec<Tok> = Vec::new();
        let mut space = true;
        // At the start of a physical line: the next token's indentation is worth knowing.
        let mut fresh = true;
        let mut build = true;
        while self.pos < text.len() {
            let header = build && header_context(&toks);
            match scan(text, self.pos, header) {
                Lexeme::Newline => {
                    self.pos += 1;
                    break;
                }
                Lexeme::Space(end) => {
                    self.pos = end;
                    space = true;
                }
                Lexeme::Comment { end } => {
                    let body = &text[self.pos..end];
                    if build && is_annotation(body) {
                        let mut t = Tok::new(Kind::Annotation, body, self.loc());
                        t.space = true;
                        t.indent = if fresh { self.sp.indent_at(self.pos) } else { Indent::default() };
                        toks.push(t);
                    }
                    fresh = body.contains('\n');
                    self.pos = end;
                    space = true;
                }
                Lexeme::Token(kind, end) => {
                    if skipping && build && !toks.iter().any(|t| t.kind != Kind::Annotation) {
                        build = kind == Kind::Punct && matches!(&text[self.pos..end], "#" | "%:");
                        if !build {
                            toks.clear();
                        }
                    }
                    if build {
                        let mut t = Tok::new(kind, &text[self.pos..end], self.loc());
                        t.space = space;
                        t.indent = if fresh { self.sp.indent_at(self.pos) } else { Indent::default() };
                        toks.push(t);
                    }
                    self.pos = end;
                    space = false;
                    fresh = false;
                }
            }
        }
        Some(Line { toks, next_line: self.sp.line_of(self.pos), bytes: self.pos - start })
    }

    fn loc(&self) -> Loc {
        Loc { file: 0, line: self.sp.line_of(self.pos) }
    }
}

/// `# include` (or `include_next`, `import`) so far on the line: a header name may follow.
fn header_context(toks: &[Tok]) -> bool {
    let mut it = toks.iter().filter(|t| t.kind != Kind::Annotation);
    match (it.next(), it.next(), it.next()) {
        (Some(h), Some(d), None) => {
            h.is_hash() && d.kind == Kind::Ident && matches!(&*d.text, "include" | "include_next" | "import")
        }
        _ => false,
    }
}

/// A comment whose body starts with `DL:` after optional spaces and tabs.
pub(crate) fn is_annotation(comment: &str) -> bool {
    let body = comment.get(2..).unwrap_or("");
    body.trim_start_matches([' ', '\t']).starts_with("DL:")
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$' || !c.is_ascii()
}

fn is_ident_continue(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$' || !c.is_ascii()
}

fn scan(text: &str, pos: usize, header: bool) -> Lexeme {
    let rest = &text[pos..];
    let b = rest.as_bytes();
    let c = b[0];
    match c {
        b'\n' => return Lexeme::Newline,
        b' ' | b'\t' | 0x0b | 0x0c => {
            let n = b.iter().take_while(|&&x| matches!(x, b' ' | b'\t' | 0x0b | 0x0c)).count();
            return Lexeme::Space(pos + n);
        }
        b'/' if b.get(1) == Some(&b'/') => {
            let n = rest.find('\n').unwrap_or(rest.len());
            return Lexeme::Comment { end: pos + n };
        }
        b'/' if b.get(1) == Some(&b'*') => {
            let n = rest[2..].find("*/").map_or(rest.len(), |i| i + 4);
            return Lexeme::Comment { end: pos + n };
        }
        _ => {}
    }
    if header && (c == b'<' || c == b'"') {
        let close = if c == b'<' { '>' } else { '"' };
        let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
        if let Some(i) = line[1..].find(close) {
            return Lexeme::Token(Kind::HeaderName, pos + i + 2);
        }
    }
    let (kind, len) = token_at(rest);
    Lexeme::Token(kind, pos + len)
}

/// The kind and byte length of the token at the start of `s` (not white space, not a comment).
fn token_at(s: &str) -> (Kind, usize) {
    let b = s.as_bytes();
    let c = b[0];
    if c == b'L' && matches!(b.get(1), Some(b'\'') | Some(b'"')) {
        let (kind, n) = quoted(&s[1..]);
        return (kind, n + 1);
    }
    if c == b'\'' || c == b'"' {
        return quoted(s);
    }
    if c.is_ascii_digit() || (c == b'.' && b.get(1).is_some_and(u8::is_ascii_digit)) {
        return (Kind::Number, number_len(b));
    }
    let first = s.chars().next().unwrap_or(' ');
    if is_ident_start(first) {
        let n = s.find(|ch: char| !is_ident_continue(ch)).unwrap_or(s.len());
        return (Kind::Ident, n);
    }
    if s.starts_with("%:%:") {
        return (Kind::Punct, 4);
    }
    if PUNCT3.iter().any(|p| s.starts_with(p)) {
        return (Kind::Punct, 3);
    }
    if PUNCT2.iter().any(|p| s.starts_with(p)) || s.starts_with("%:") {
        return (Kind::Punct, 2);
    }
    if PUNCT1.contains(&c) {
        return (Kind::Punct, 1);
    }
    (Kind::Other, first.len_utf8())
}

/// A character constant or string literal; one that meets the end of its line first is
/// `Other` up to there (clang makes it an unknown token).
fn quoted(s: &str) -> (Kind, usize) {
    let b = s.as_bytes();
    let q = b[0];
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            b'\\' if i + 1 < b.len() && b[i + 1] != b'\n' => i += 2,
            b'\n' => break,
            x if x == q => {
                let kind = if q == b'"' { Kind::Str } else { Kind::Char };
                return (kind, i + 1);
            }
            _ => i += 1,
        }
    }
    // `i` stops only on a newline or the end, so it is on a character boundary.
    (Kind::Other, i)
}

fn number_len(b: &[u8]) -> usize {
    let mut i = 1;
    while i < b.len() {
        let c = b[i];
        let sign = matches!(c, b'+' | b'-') && matches!(b[i - 1], b'e' | b'E' | b'p' | b'P');
        if !(sign || c.is_ascii_alphanumeric() || c == b'_' || c == b'.') {
            break;
        }
        i += 1;
    }
    i
}

/// The kind of `s` if it is exactly one preprocessing token, which is what `##` must produce.
pub(crate) fn single_token(s: &str) -> Option<Kind> {
    if s.is_empty() || s.contains('\n') {
        return None;
    }
    match scan(s, 0, false) {
        Lexeme::Token(kind, end) if end == s.len() && kind != Kind::Other => Some(kind),
        Lexeme::Token(Kind::Other, end) if end == s.len() && !s.starts_with(['\'', '"']) => Some(Kind::Other),
        _ => None,
    }
}

/// Whether writing `b` right after `a` with no space between would lex differently.
pub(crate) fn would_merge(a: &str, b: &str) -> bool {
    if a.is_empty() || b.is_empty() {
        return false;
    }
    let joined = format!("{a}{b}");
    match scan(&joined, 0, false) {
        Lexeme::Token(_, end) => end != a.len(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(src: &str) -> Vec<Vec<(Kind, String, u32)>> {
        let mut lx = Lexer::new(src);
        let mut out = Vec::new();
        while let Some(l) = lx.next_line(false) {
            out.push(l.toks.iter().map(|t| (t.kind, t.text.to_string(), t.loc.line)).collect());
        }
        out
    }

    #[test]
    fn splices_join_lines_and_keep_physical_line_numbers() {
        let l = lines("#define A \\\n  1\nx\\  \ny z\r\nw\rv");
        assert_eq!(l.len(), 4);
        assert_eq!(l[0].iter().map(|t| t.1.as_str()).collect::<Vec<_>>(), ["#", "define", "A", "1"]);
        assert_eq!(l[0][3].2, 2);
        assert_eq!(l[1][0], (Kind::Ident, "xy".into(), 3));
        assert_eq!(l[1][1].2, 4);
        assert_eq!(l[2][0].2, 5);
        assert_eq!(l[3][0].2, 6);
    }

    #[test]
    fn comments_are_space_and_block_comments_continue_the_line() {
        let l = lines("a/* x\n y */b // c\nd");
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].iter().map(|t| t.1.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(l[0][1].2, 2);
    }

    #[test]
    fn annotations_are_kept() {
        let l = lines("//DL: a\n/* DL: b */ x // plain\n");
        assert_eq!(l[0][0].0, Kind::Annotation);
        assert_eq!(l[0][0].1, "//DL: a");
        assert_eq!(l[1][0].1, "/* DL: b */");
        assert_eq!(l[1].len(), 2);
    }

    #[test]
    fn tokens() {
        let l = lines("x+=1.5e+3f ...a->b L'c' \"s\\\"t\" 0x1p-3 %:%: <: .5 @ 'open");
        let kinds: Vec<_> = l[0].iter().map(|t| (t.0, t.1.as_str())).collect();
        assert_eq!(
            kinds,
            [
                (Kind::Ident, "x"),
                (Kind::Punct, "+="),
                (Kind::Number, "1.5e+3f"),
                (Kind::Punct, "..."),
                (Kind::Ident, "a"),
                (Kind::Punct, "->"),
                (Kind::Ident, "b"),
                (Kind::Char, "L'c'"),
                (Kind::Str, "\"s\\\"t\""),
                (Kind::Number, "0x1p-3"),
                (Kind::Punct, "%:%:"),
                (Kind::Punct, "<:"),
                (Kind::Number, ".5"),
                (Kind::Other, "@"),
                (Kind::Other, "'open"),
            ]
        );
    }

    #[test]
    fn header_names_only_after_include() {
        let l = lines("#include <a b.h>\n# include \"c\\d.h\"\nx <a.h>");
        assert_eq!(l[0][2], (Kind::HeaderName, "<a b.h>".into(), 1));
        assert_eq!(l[1][2].1, "\"c\\d.h\"");
        assert_eq!(l[2][1].1, "<");
    }

    #[test]
    fn pp_numbers_take_dots_and_letters() {
        let l = lines("1.5e+3f...a 0x1e+1 1..2");
        let texts: Vec<_> = l[0].iter().map(|t| t.1.as_str()).collect();
        assert_eq!(texts, ["1.5e+3f...a", "0x1e+1", "1..2"]);
    }

    #[test]
    fn skipped_lines_make_tokens_only_for_directives() {
        let mut lx = Lexer::new("a b\n  # if x\n/*DL: c */ d\n");
        assert!(lx.next_line(true).is_some_and(|l| l.toks.is_empty()));
        assert_eq!(lx.next_line(true).map(|l| l.toks.len()), Some(3));
        assert!(lx.next_line(true).is_some_and(|l| l.toks.is_empty()));
    }

    #[test]
    fn indentation_of_line_starts() {
        let l = Lexer::new("  a b\n\t\tc /* x\n */ d\n").next_line(false).map(|l| l.toks).unwrap_or_default();
        assert_eq!(l[0].indent, Indent { tabs: false, n: 2 });
        assert_eq!(l[1].indent, Indent::default());
        let mut lx = Lexer::new("  a b\n\t\tc /* x\n */ d\n");
        lx.next_line(false);
        let l = lx.next_line(false).map(|l| l.toks).unwrap_or_default();
        assert_eq!(l[0].indent, Indent { tabs: true, n: 2 });
        assert_eq!(l[1].indent, Indent::default(), "after a comment, not at the start of its line");
    }

    #[test]
    fn pasting_and_merging() {
        assert_eq!(single_token("ab"), Some(Kind::Ident));
        assert_eq!(single_token("+="), Some(Kind::Punct));
        assert_eq!(single_token("//"), None);
        assert_eq!(single_token("+-"), None);
        assert_eq!(single_token("1e"), Some(Kind::Number));
        assert!(would_merge("+", "+"));
        assert!(would_merge("/", "/"));
        assert!(would_merge("a", "1"));
        assert!(!would_merge("a", "+"));
        assert!(!would_merge("(", "("));
    }

    #[test]
    fn any_text_lexes() {
        for s in ["\\", "'", "\"", "/*", "a\\", "\u{e9}t\u{e9}", "\u{0}", "#include <", "#include \""] {
            let _ = lines(s);
        }
    }
}
