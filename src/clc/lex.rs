//! The lexer for OpenCL C, total over any input: every byte of the source lands in exactly one
//! token or in the whitespace between two, so a rewriter can splice text by span and keep the
//! rest of the program byte for byte. Every reader of OpenCL C in clayout (annotations,
//! signatures, typedefs and structures, the rewriter) works on these tokens.

/// What a token is; whitespace is not a token, its extent is the gap between two spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    Ident,
    /// A preprocessing number (`42`, `0x1F`, `1.5e-3f`); whether it is a valid literal is the
    /// reader's business.
    Number,
    Punct,
    Str,
    Char,
    LineComment,
    BlockComment,
    /// A whole preprocessor line, continuation lines and comments in it included.
    Directive,
    /// A character that starts no OpenCL C token, or a string, character literal or block
    /// comment that never ends (the token then runs to the end of its line or of the source).
    Invalid,
}

/// A byte range `start..end` of the text it was taken from, always on character boundaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }

    /// The text under the span; empty, not a panic, for a span that does not fit `text`.
    pub fn of(self, text: &str) -> &str {
        text.get(self.start..self.end).unwrap_or("")
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    pub span: Span,
    /// 1-based line of the token's first byte.
    pub line: u32,
}

impl Token {
    pub fn text(self, src: &str) -> &str {
        self.span.of(src)
    }

    /// Comments only: directives are significant because they end a declaration.
    pub fn is_comment(self) -> bool {
        matches!(self.kind, TokenKind::LineComment | TokenKind::BlockComment)
    }

    pub fn is_punct(self, src: &str, p: &str) -> bool {
        self.kind == TokenKind::Punct && self.text(src) == p
    }

    pub fn is_ident(self, src: &str, name: &str) -> bool {
        self.kind == TokenKind::Ident && self.text(src) == name
    }
}

/// 1-based line and column (in characters) of byte `offset` in `text`; an offset past the end
/// or inside a character counts as the position of the end.
pub fn line_col(text: &str, offset: usize) -> (u32, u32) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    (clamp_u32(line), clamp_u32(col))
}

fn clamp_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `s` on one line: a reason may quote source text that spans lines, but a log line must not.
pub fn one_line(s: &str) -> String {
    if s.contains(['\n', '\r']) {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    } else {
        s.to_string()
    }
}

const PUNCT3: [&str; 3] = ["<<=", ">>=", "..."];
const PUNCT2: [&str; 20] = [
    "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "^=", "|=",
    "##",
];
const PUNCT1: &[u8] = b"[](){}.&*+-~!/%<>^|?:;=,#";

pub fn lex(src: &str) -> Vec<Token> {
    // A program's build lexes the same few texts dozens of times (its source for each kernel's
    // signature, each copy, each staged form): 12 of the 23 million instructions clayout spent
    // on particles' build (callgrind, PoCL). The tokens depend on the text alone, so the last
    // texts of a size worth it are kept, with their tokens, per thread.
    if !(MEMO_MIN..=MEMO_MAX).contains(&src.len()) {
        return lex_text(src);
    }
    MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        if let Some(i) = memo.iter().position(|(text, _)| **text == *src) {
            let hit = memo.remove(i).expect("a position within the memo");
            let tokens = hit.1.clone();
            memo.push_front(hit);
            return tokens;
        }
        let tokens = lex_text(src);
        if memo.len() == MEMO_ENTRIES {
            memo.pop_back();
        }
        memo.push_front((src.into(), tokens.clone()));
        tokens
    })
}

/// Texts lexed again from memory: at most this many per thread, of these sizes (a short text
/// costs less to lex than to compare; the largest bound what the memo holds, a few MiB).
const MEMO_ENTRIES: usize = 4;
const MEMO_MIN: usize = 1024;
const MEMO_MAX: usize = 256 * 1024;

thread_local! {
    static MEMO: std::cell::RefCell<std::collections::VecDeque<(Box<str>, Vec<Token>)>> =
        const { std::cell::RefCell::new(std::collections::VecDeque::new()) };
}

fn lex_text(src: &str) -> Vec<Token> {
    Lexer { src: src.as_bytes(), text: src, pos: 0, line: 1, line_start: true, out: Vec::new() }.run()
}

struct Lexer<'a> {
    src: &'a [u8],
    text: &'a str,
    pos: usize,
    line: u32,
    /// Only spaces and tabs since the last newline: a `#` here starts a directive.
    line_start: bool,
    out: Vec<Token>,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> u8 {
        self.src.get(self.pos + ahead).copied().unwrap_or(0)
    }

    fn run(mut self) -> Vec<Token> {
        while self.pos < self.src.len() {
            let c = self.peek(0);
            match c {
                b'\n' => {
                    self.bump(1);
                    self.line_start = true;
                }
                b' ' | b'\t' | b'\r' | 0x0b | 0x0c => self.bump(1),
                b'\\' if self.splice_len() > 0 => {
                    let n = self.splice_len();
                    self.bump(n);
                }
                _ => {
                    let start = self.pos;
                    let line = self.line;
                    let kind = self.token(c);
                    self.line_start = false;
                    self.out.push(Token { kind, span: Span::new(start, self.pos), line });
                }
            }
        }
        self.out
    }

    /// Advances over `n` bytes, counting the newlines among them.
    fn bump(&mut self, n: usize) {
        let end = (self.pos + n).min(self.src.len());
        let newlines = self.src[self.pos..end].iter().filter(|&&b| b == b'\n').count();
        self.line = self.line.saturating_add(clamp_u32(newlines));
        self.pos = end;
    }

    /// Length of a backslash-newline line splice at the current position, 0 if there is none.
    fn splice_len(&self) -> usize {
        match (self.peek(1), self.peek(2)) {
            (b'\n', _) => 2,
            (b'\r', b'\n') => 3,
            _ => 0,
        }
    }

    fn token(&mut self, c: u8) -> TokenKind {
        match c {
            b'#' if self.line_start => self.directive(),
            b'/' if self.peek(1) == b'/' => {
                self.line_comment();
                TokenKind::LineComment
            }
            b'/' if self.peek(1) == b'*' => self.block_comment(),
            b'"' | b'\'' => self.quoted(c),
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                self.bump_while(|b| b.is_ascii_alphanumeric() || b == b'_');
                TokenKind::Ident
            }
            b'0'..=b'9' => self.number(),
            b'.' if self.peek(1).is_ascii_digit() => self.number(),
            _ if c.is_ascii() => self.punct(),
            _ => {
                // Skip the whole character so that spans stay on character boundaries.
                let len = self.text[self.pos..].chars().next().map_or(1, char::len_utf8);
                self.bump(len);
                TokenKind::Invalid
            }
        }
    }

    fn bump_while(&mut self, f: impl Fn(u8) -> bool) {
        while self.pos < self.src.len() && f(self.src[self.pos]) {
            self.pos += 1;
        }
    }

    fn line_comment(&mut self) {
        self.bump_while(|b| b != b'\n');
    }

    fn block_comment(&mut self) -> TokenKind {
        match self.text[self.pos + 2..].find("*/") {
            Some(i) => {
                self.bump(2 + i + 2);
                TokenKind::BlockComment
            }
            None => {
                self.bump(self.src.len() - self.pos);
                TokenKind::Invalid
            }
        }
    }

    /// A string or character literal; one that meets the end of its line unclosed is Invalid.
    fn quoted(&mut self, quote: u8) -> TokenKind {
        let mut i = self.pos + 1;
        while i < self.src.len() {
            match self.src[i] {
                b'\\' => i += 2,
                b'\n' => break,
                b if b == quote => {
                    self.bump(i + 1 - self.pos);
                    return if quote == b'"' { TokenKind::Str } else { TokenKind::Char };
                }
                _ => i += 1,
            }
        }
        // Unclosed: stop before the newline (or at the end), a character boundary either way.
        let end = i.min(self.src.len());
        self.bump(end - self.pos);
        TokenKind::Invalid
    }

    fn number(&mut self) -> TokenKind {
        self.pos += 1;
        while self.pos < self.src.len() {
            let b = self.src[self.pos];
            let exp_sign = matches!(b, b'+' | b'-') && matches!(self.src[self.pos - 1], b'e' | b'E' | b'p' | b'P');
            if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || exp_sign {
                self.pos += 1;
            } else {
                break;
            }
        }
        TokenKind::Number
    }

    fn punct(&mut self) -> TokenKind {
        let c = self.peek(0);
        // Compared byte by byte, and only where the first byte matches: a `starts_with` per
        // candidate made lexing most of the 39 million instructions a build of particles' copies
        // took (callgrind, PoCL), and sources are lexed dozens of times per build.
        let rest = &self.src[self.pos..];
        let matches = |p: &&&str| {
            let p = p.as_bytes();
            p[0] == c && rest.len() >= p.len() && p[1..].iter().zip(&rest[1..]).all(|(a, b)| a == b)
        };
        if let Some(p) = PUNCT3.iter().chain(PUNCT2.iter()).find(matches) {
            self.bump(p.len());
            return TokenKind::Punct;
        }
        self.bump(1);
        if PUNCT1.contains(&c) {
            TokenKind::Punct
        } else {
            TokenKind::Invalid
        }
    }

    /// A preprocessor line runs to the first newline that is neither spliced nor inside a block
    /// comment or a literal.
    fn directive(&mut self) -> TokenKind {
        let mut i = self.pos + 1;
        while i < self.src.len() {
            match self.src[i] {
                b'\n' => break,
                b'\\' if matches!(self.src.get(i + 1), Some(b'\n')) => i += 2,
                b'\\' if self.src.get(i + 1..i + 3) == Some(b"\r\n") => i += 3,
                b'/' if self.src.get(i + 1) == Some(&b'*') => {
                    i = match self.text[i + 2..].find("*/") {
                        Some(j) => i + 2 + j + 2,
                        None => self.src.len(),
                    };
                }
                b'/' if self.src.get(i + 1) == Some(&b'/') => {
                    while i < self.src.len() && self.src[i] != b'\n' {
                        i += 1;
                    }
                }
                q @ (b'"' | b'\'') => {
                    i += 1;
                    while i < self.src.len() && self.src[i] != q && self.src[i] != b'\n' {
                        i += if self.src[i] == b'\\' { 2 } else { 1 };
                    }
                    if i < self.src.len() && self.src[i] == q {
                        i += 1;
                    }
                }
                _ => i += 1,
            }
        }
        // A trailing backslash may have stepped past the end; a newline ends the directive and
        // is left for the main loop.
        let mut end = i.min(self.src.len());
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        self.bump(end - self.pos);
        TokenKind::Directive
    }
}

/// `__attribute__` (or `__attribute`), whose parenthesized arguments every reader skips.
pub fn is_attribute(word: &str) -> bool {
    word == "__attribute__" || word == "__attribute"
}

/// Index just past the bracket that closes the one at token `open`; `None` when the end comes
/// first or a bracket is closed by one of another kind (`{ ( }`). Such text does not compile,
/// and guessing where a body ends would let a rewrite land inside it.
pub fn matching_bracket(src: &str, toks: &[Token], open: usize) -> Option<usize> {
    let mut stack: Vec<&str> = Vec::new();
    for (j, t) in toks.iter().enumerate().skip(open) {
        if t.kind != TokenKind::Punct {
            continue;
        }
        match t.text(src) {
            "(" => stack.push(")"),
            "[" => stack.push("]"),
            "{" => stack.push("}"),
            close @ (")" | "]" | "}") => {
                if stack.pop() != Some(close) {
                    return None;
                }
                if stack.is_empty() {
                    return Some(j + 1);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(TokenKind, String, u32)> {
        lex(src).into_iter().map(|t| (t.kind, t.text(src).to_string(), t.line)).collect()
    }

    #[test]
    fn basic_tokens_with_lines() {
        use TokenKind::*;
        let src = "__kernel void f(__global float *a,\n int n) { a[0] += 1.5e-3f; }";
        let k = kinds(src);
        assert_eq!(k[0], (Ident, "__kernel".into(), 1));
        assert!(k.contains(&(Punct, "+=".into(), 2)));
        assert!(k.contains(&(Number, "1.5e-3f".into(), 2)));
        assert!(k.contains(&(Ident, "n".into(), 2)));
    }

    #[test]
    fn comments_directives_and_literals() {
        use TokenKind::*;
        let src = "#define X(a) \\\n  (a /* c\n */ + 1)\n//DL: AoS: f[n]\n/* b */ 'x' \"s\\\"t\" # x";
        let k = kinds(src);
        assert_eq!(k[0].0, Directive);
        assert_eq!(k[0].1, "#define X(a) \\\n  (a /* c\n */ + 1)");
        assert_eq!(k[1], (LineComment, "//DL: AoS: f[n]".into(), 4));
        assert_eq!(k[2], (BlockComment, "/* b */".into(), 5));
        assert_eq!(k[3], (Char, "'x'".into(), 5));
        assert_eq!(k[4], (Str, "\"s\\\"t\"".into(), 5));
        // `#` not at the start of a line is punctuation (stringizing in a macro body).
        assert_eq!(k[5], (Punct, "#".into(), 5));
    }

    #[test]
    fn unterminated_and_invalid() {
        use TokenKind::*;
        let k = kinds("a \"open\nb /* never");
        assert_eq!(k[1], (Invalid, "\"open".into(), 1));
        assert_eq!(k[2], (Ident, "b".into(), 2));
        assert_eq!(k[3], (Invalid, "/* never".into(), 2));
        let k = kinds("x @ é $");
        assert_eq!(k.iter().filter(|t| t.0 == Invalid).count(), 3);
    }

    #[test]
    fn spans_cover_everything_but_whitespace() {
        let src = "kernel void k(global int*p){p[0]=1;}\n# pragma x\r\n'\\";
        let toks = lex(src);
        let mut last = 0;
        for t in &toks {
            assert!(src[last..t.span.start].chars().all(char::is_whitespace));
            last = t.span.end;
        }
        assert!(src[last..].trim().is_empty());
    }

    #[test]
    fn positions() {
        assert_eq!(line_col("ab\ncdé f", 7), (2, 4));
        assert_eq!(line_col("ab", 99), (1, 3));
        assert_eq!(line_col("é", 1), (1, 1));
    }
}
