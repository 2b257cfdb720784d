//! The preprocessed text. Each output line stands for one presumed (file, line); where the
//! next token's location is not the next line of the same file a `#line N "file"` marker (C99
//! 6.10.4, which every OpenCL compiler reads) says so, and short gaps are filled with blank
//! lines instead, so that a program without headers keeps its line numbers and needs no marker.
//! A marker names its file only when the file changes, so the main source keeps whatever name
//! the device compiler gives it until a header has been entered.

use std::rc::Rc;

use super::lex::{would_merge, Indent, Kind, Loc, Tok};
use super::Fatal;

/// Up to this many lines ahead are reached with blank lines rather than a marker.
const MAX_GAP: u32 = 8;

pub(crate) struct Writer {
    out: String,
    max_bytes: usize,
    cur_file: u32,
    cur_line: u32,
    at_line_start: bool,
    /// After a `//` comment: anything more on this line would be commented out.
    must_break: bool,
    prev: Option<Rc<str>>,
    /// (file, line) of every finished output line.
    lines: Vec<(u32, u32)>,
    /// Where a `#` token starts an output line: the compiler would read a directive there.
    pub hash_at_line_start: Vec<Loc>,
}

impl Writer {
    pub fn new(max_bytes: usize) -> Writer {
        Writer {
            out: String::new(),
            max_bytes,
            cur_file: 0,
            cur_line: 1,
            at_line_start: true,
            must_break: false,
            prev: None,
            lines: Vec::new(),
            hash_at_line_start: Vec::new(),
        }
    }

    fn newline(&mut self) {
        self.out.push('\n');
        self.lines.push((self.cur_file, self.cur_line));
        self.cur_line = self.cur_line.saturating_add(1);
        self.at_line_start = true;
        self.must_break = false;
        self.prev = None;
    }

    /// Moves to a line that maps to `loc` (its start if `own_line`).
    fn goto(&mut self, loc: Loc, names: &[Rc<str>], own_line: bool) {
        let same = loc.file == self.cur_file;
        if same && !self.must_break {
            let here = loc.line == self.cur_line && (self.at_line_start || !own_line);
            // Behind the current line (an annotation read ahead was written first): stay.
            let behind = loc.line < self.cur_line && !own_line;
            if here || behind {
                return;
            }
        }
        if same && loc.line > self.cur_line && loc.line - self.cur_line <= MAX_GAP {
            while self.cur_line < loc.line {
                self.newline();
            }
            return;
        }
        if !self.at_line_start {
            self.newline();
        }
        self.out.push_str(&format!("#line {}", loc.line));
        if !same {
            let name = names.get(loc.file as usize).map_or("", |n| n);
            self.out.push_str(" \"");
            for c in name.chars() {
                if c == '"' || c == '\\' {
                    self.out.push('\\');
                }
                if c == '\n' {
                    self.out.push_str("\\n");
                } else {
                    self.out.push(c);
                }
            }
            self.out.push('"');
        }
        self.out.push('\n');
        self.lines.push((self.cur_file, self.cur_line));
        self.cur_file = loc.file;
        self.cur_line = loc.line;
        self.at_line_start = true;
        self.must_break = false;
        self.prev = None;
    }

    fn indent(&mut self, indent: Indent) {
        let c = if indent.tabs { '\t' } else { ' ' };
        self.out.extend(std::iter::repeat_n(c, usize::from(indent.n)));
    }

    fn check(&self) -> Result<(), Fatal> {
        if self.out.len() > self.max_bytes {
            return Err(Fatal::OutputTooLarge(self.max_bytes));
        }
        Ok(())
    }

    pub fn token(&mut self, t: &Tok, names: &[Rc<str>]) -> Result<(), Fatal> {
        self.goto(t.loc, names, false);
        if self.at_line_start {
            if t.is_hash() {
                self.hash_at_line_start.push(t.loc);
            }
            self.indent(t.indent);
        } else if t.space || self.prev.as_ref().is_some_and(|p| would_merge(p, &t.text)) {
            self.out.push(' ');
        }
        self.out.push_str(&t.text);
        self.at_line_start = false;
        self.prev = Some(t.text.clone());
        self.check()
    }

    /// A `//DL:` or `/*DL: */` comment, verbatim.
    pub fn annotation(&mut self, t: &Tok, names: &[Rc<str>]) -> Result<(), Fatal> {
        debug_assert_eq!(t.kind, Kind::Annotation);
        self.goto(t.loc, names, false);
        if self.at_line_start {
            self.indent(t.indent);
        } else {
            self.out.push(' ');
        }
        let mut parts = t.text.split('\n');
        if let Some(first) = parts.next() {
            self.out.push_str(first);
        }
        for part in parts {
            // A block comment over several lines: it moves the output down as the source.
            self.newline();
            self.out.push_str(part);
        }
        // An unterminated block comment runs to the end of the text, newline included.
        self.at_line_start = t.text.ends_with('\n');
        self.prev = None;
        self.must_break = t.text.starts_with("//") && !self.at_line_start;
        self.check()
    }

    /// A directive line for the compiler, on a line of its own.
    pub fn directive(&mut self, t: &Tok, names: &[Rc<str>]) -> Result<(), Fatal> {
        self.goto(t.loc, names, true);
        self.out.push_str(&t.text);
        self.newline();
        self.check()
    }

    pub fn finish(mut self) -> (String, Vec<(u32, u32)>) {
        if !self.at_line_start {
            self.newline();
        }
        (self.out, self.lines)
    }
}
