//! The driver: files and their conditional stacks, directives (C99 6.10.1 to 6.10.7), and the
//! main loop that writes what the expander produces. The file reader is the expander's base,
//! so directives run in source order even while a macro invocation reads its arguments across
//! lines, as in clang.

use std::collections::{HashSet, VecDeque};
use std::rc::Rc;

use super::cond;
use super::expand::{parse_define, Base, Expander, Query, State, VecBase};
use super::lex::{Kind, Lexer, Line, Loc, Tok};
use super::options::{parse_build_options, MacroOption};
use super::output::Writer;
use super::{Fatal, IncludeResolver, Input, LineMap, MacroDef, MacroOrigin, Preprocessed};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CondState {
    /// This group is being read.
    Active,
    /// No group taken yet: a later `#elif` or `#else` may be.
    Pending,
    /// A group was taken, or the whole conditional sits in a skipped group.
    Done,
}

struct Cond {
    state: CondState,
    seen_else: bool,
    loc: Loc,
}

struct FileState {
    lexer: Lexer,
    /// The resolved name: what `#pragma once` and the resolver know it by.
    name: Rc<str>,
    presumed: u32,
    /// Presumed line = physical line + delta (`#line`).
    delta: i64,
    conds: Vec<Cond>,
    pending: VecDeque<Tok>,
    /// A directive line met while a `(` was looked for, to run at the next read.
    held: Option<Line>,
}

impl FileState {
    fn loc(&self, physical: u32) -> Loc {
        let line = (i64::from(physical) + self.delta).clamp(0, i64::from(u32::MAX)) as u32;
        Loc { file: self.presumed, line }
    }

    fn skipping(&self) -> bool {
        self.conds.last().is_some_and(|c| c.state != CondState::Active)
    }
}

struct Directive {
    loc: Loc,
    /// The directive's name, empty if it is not an identifier.
    name: Rc<str>,
    args: Vec<Tok>,
}

pub(crate) struct Files<'r> {
    stack: Vec<FileState>,
    resolver: &'r mut dyn IncludeResolver,
    once: HashSet<Rc<str>>,
    /// Files whose `#define` names are in `State::defined_somewhere` already.
    scanned: HashSet<Rc<str>>,
    headers: Vec<String>,
    last: Loc,
}

/// The names `#define` lines of `text` name, taken or not: a reserved name the program defines
/// somewhere is its own (include guards), not one the device compiler would predefine.
fn defined_names(text: &str, into: &mut HashSet<String>) {
    for line in text.lines() {
        let l = line.trim_start();
        let Some(rest) = l.strip_prefix('#').or_else(|| l.strip_prefix("%:")) else { continue };
        let Some(rest) = rest.trim_start().strip_prefix("define") else { continue };
        if !rest.starts_with([' ', '\t']) {
            continue;
        }
        let rest = rest.trim_start();
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$')).unwrap_or(rest.len());
        if end > 0 {
            into.insert(rest[..end].to_string());
        }
    }
}

impl Files<'_> {
    fn enter(&mut self, st: &mut State, name: Rc<str>, text: &str) {
        let lexer = Lexer::new(text);
        if self.scanned.insert(name.clone()) {
            defined_names(lexer.text(), &mut st.defined_somewhere);
        }
        let presumed = st.name_id(&name);
        self.stack.push(FileState {
            lexer,
            name,
            presumed,
            delta: 0,
            conds: Vec::new(),
            pending: VecDeque::new(),
            held: None,
        });
        st.boundary += 1;
    }

    fn top(&mut self) -> Option<&mut FileState> {
        self.stack.last_mut()
    }

    fn skipping(&self) -> bool {
        self.stack.last().is_some_and(FileState::skipping)
    }

    fn directive(&mut self, st: &mut State, toks: Vec<Tok>, next_line: u32) -> Result<(), Fatal> {
        let loc = toks[0].loc;
        let Some(name_tok) = toks.get(1) else { return Ok(()) };
        let name: Rc<str> = if name_tok.kind == Kind::Ident { name_tok.text.clone() } else { Rc::from("") };
        let d = Directive { loc, name, args: toks.get(2..).unwrap_or(&[]).to_vec() };
        if self.conditional(st, &d)? || self.skipping() {
            return Ok(());
        }
        let name = &*d.name;
        if st.collecting > 0 && matches!(name, "define" | "undef" | "line") {
            // GCC and clang agree on these, but the standard leaves them undefined.
            st.unsure(loc, format!("#{name} inside a macro invocation's arguments"));
        }
        match name {
            "define" => match parse_define(&d.args, loc, MacroOrigin::Source) {
                Ok(m) => st.define(m),
                Err(e) => st.error(loc, e),
            },
            "undef" => match d.args.first() {
                Some(n) if n.kind == Kind::Ident => {
                    st.undef(&n.text);
                    if st.device_may_define(&n.text) {
                        // The compiler may have its own definition: it must see the #undef.
                        self.emit(Tok::new(Kind::Directive, &format!("#undef {}", n.text), loc));
                    }
                }
                _ => st.error(loc, "macro name must be an identifier".into()),
            },
            "include" | "include_next" | "import" => self.include(st, name, d.args, loc)?,
            "line" => {
                let toks = expand_all(st, d.args, loc)?;
                self.line(st, &toks, next_line, loc);
            }
            "error" => st.error(loc, format!("#error {}", spell(&d.args))),
            "warning" => st.warning(loc, format!("#warning {}", spell(&d.args))),
            "pragma" => self.pragma(st, d.args, loc)?,
            "ident" | "sccs" => {}
            _ if toks[1].kind == Kind::Number => {
                // A GNU line marker, `# 33 "file" 1`, which clang reads in every mode.
                self.line(st, &toks[1..], next_line, loc);
            }
            _ => st.error(loc, format!("invalid preprocessing directive #{}", toks[1].text)),
        }
        Ok(())
    }

    /// The conditional directives, which act in skipped groups too; false for any other.
    fn conditional(&mut self, st: &mut State, d: &Directive) -> Result<bool, Fatal> {
        let (name, loc) = (&*d.name, d.loc);
        match name {
            "if" | "ifdef" | "ifndef" => {
                let state = if self.skipping() {
                    CondState::Done
                } else if self.condition(st, name, d.args.clone(), loc)? {
                    CondState::Active
                } else {
                    CondState::Pending
                };
                if let Some(f) = self.top() {
                    f.conds.push(Cond { state, seen_else: false, loc });
                }
            }
            "elif" | "elifdef" | "elifndef" => {
                let Some(c) = self.top().and_then(|f| f.conds.last_mut()) else {
                    st.error(loc, format!("#{name} without #if"));
                    return Ok(true);
                };
                if c.seen_else {
                    st.error(loc, format!("#{name} after #else"));
                }
                let state = c.state;
                let next = match state {
                    CondState::Active | CondState::Done => CondState::Done,
                    CondState::Pending if self.condition(st, &name[2..], d.args.clone(), loc)? => CondState::Active,
                    CondState::Pending => CondState::Pending,
                };
                if let Some(c) = self.top().and_then(|f| f.conds.last_mut()) {
                    c.state = next;
                }
            }
            "else" => {
                let Some(c) = self.top().and_then(|f| f.conds.last_mut()) else {
                    st.error(loc, "#else without #if".into());
                    return Ok(true);
                };
                if c.seen_else {
                    st.error(loc, "#else after #else".into());
                }
                c.seen_else = true;
                c.state = match c.state {
                    CondState::Pending => CondState::Active,
                    _ => CondState::Done,
                };
            }
            "endif" => {
                if self.top().and_then(|f| f.conds.pop()).is_none() {
                    st.error(loc, "#endif without #if".into());
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// `#if` (`directive` "if"), `#ifdef` or `#ifndef` on `args`.
    fn condition(&mut self, st: &mut State, directive: &str, args: Vec<Tok>, loc: Loc) -> Result<bool, Fatal> {
        if directive == "if" {
            return cond::eval(st, args, loc);
        }
        let Some(n) = args.first() else {
            st.error(loc, "macro name missing".into());
            return Ok(false);
        };
        if n.kind != Kind::Ident {
            st.error(loc, "macro name must be an identifier".into());
            return Ok(false);
        }
        let defined = match st.query(&n.text) {
            Query::Defined => true,
            Query::Undefined => false,
            Query::Unsure(reserved) => {
                st.unsure_name(&n.text, reserved, loc);
                false
            }
        };
        Ok(defined == (directive == "ifdef"))
    }

    fn emit(&mut self, t: Tok) {
        if let Some(f) = self.top() {
            f.pending.push_back(t);
        }
    }

    fn include(&mut self, st: &mut State, directive: &str, args: Vec<Tok>, loc: Loc) -> Result<(), Fatal> {
        if st.collecting > 0 {
            st.unsure(loc, "#include inside a macro invocation's arguments".into());
        }
        if directive != "include" {
            st.unsure(loc, format!("#{directive} is not supported; read as #include"));
        }
        let Some((name, angled)) = header_name(st, args, loc)? else { return Ok(()) };
        if self.stack.len() >= st.limits.max_include_depth {
            st.error(loc, "#include nested too deeply".into());
            return Ok(());
        }
        let includer = self.stack.last().map_or_else(|| Rc::from(""), |f| f.name.clone());
        match self.resolver.resolve(&name, angled, &includer) {
            None => {
                st.error(loc, format!("'{name}' file not found"));
                st.unsure(loc, format!("cannot find header '{name}'"));
            }
            Some(h) => {
                let resolved: Rc<str> = Rc::from(h.name.as_str());
                if self.once.contains(&resolved) {
                    return Ok(());
                }
                if !self.headers.contains(&h.name) {
                    self.headers.push(h.name.clone());
                }
                st.charge(h.text.len() / 4 + 1)?;
                self.enter(st, resolved, &h.text);
            }
        }
        Ok(())
    }

    /// `#line digits ["file"]` (already expanded), or a GNU line marker.
    fn line(&mut self, st: &mut State, toks: &[Tok], next_line: u32, loc: Loc) {
        let number = toks.first().filter(|t| t.kind == Kind::Number && t.text.bytes().all(|b| b.is_ascii_digit()));
        let Some(n) = number.and_then(|t| t.text.parse::<u64>().ok()) else {
            st.error(loc, "#line directive requires a simple digit sequence".into());
            return;
        };
        let file = match toks.get(1) {
            None => None,
            Some(t) if t.kind == Kind::Str => Some(unescape(&t.text[1..t.text.len() - 1])),
            Some(_) => {
                st.error(loc, "invalid filename for #line directive".into());
                return;
            }
        };
        let presumed = file.map(|f| st.name_id(&f));
        if let Some(f) = self.top() {
            f.delta = n.min(u64::from(u32::MAX)) as i64 - i64::from(next_line);
            if let Some(p) = presumed {
                f.presumed = p;
            }
        }
    }

    fn pragma(&mut self, st: &mut State, args: Vec<Tok>, loc: Loc) -> Result<(), Fatal> {
        let words: Vec<&str> = args.iter().map(|t| &*t.text).collect();
        if words.first() == Some(&"once") {
            if let Some(f) = self.stack.last() {
                self.once.insert(f.name.clone());
            }
            return Ok(());
        }
        if st.collecting > 0 {
            st.unsure(loc, "#pragma inside a macro invocation's arguments".into());
        }
        let text = match classify_pragma(&words) {
            Pragma::Unroll => {
                // clang expands macros in the unroll count; the compiler will not see ours.
                let count = expand_all(st, args[1..].to_vec(), loc)?;
                let count = spell(&count);
                if count.is_empty() {
                    format!("#pragma {}", args[0].text)
                } else {
                    format!("#pragma {} {count}", args[0].text)
                }
            }
            Pragma::Known => {
                for t in &args {
                    if program_macro(st, t) {
                        st.unsure(loc, format!("#pragma {} names the program's macro '{}'", spell(&args), t.text));
                    }
                }
                format!("#pragma {}", spell(&args))
            }
            Pragma::Unknown => {
                st.unsure(loc, format!("#pragma {} is not known to leave the program unchanged", spell(&args)));
                format!("#pragma {}", spell(&args))
            }
        };
        self.emit(Tok::new(Kind::Directive, text.trim_end(), loc));
        Ok(())
    }
}

fn program_macro(st: &State, t: &Tok) -> bool {
    t.kind == Kind::Ident && st.macros.get(&t.text).is_some_and(|m| m.origin != MacroOrigin::Predefined)
}

enum Pragma {
    Unroll,
    Known,
    Unknown,
}

/// Pragmas known not to change what the program computes, besides where they stand.
fn classify_pragma(words: &[&str]) -> Pragma {
    match words {
        [] => Pragma::Known,
        ["unroll", ..] | ["nounroll", ..] => Pragma::Unroll,
        ["OPENCL", "EXTENSION", ..] | ["OPENCL", "FP_CONTRACT", ..] => Pragma::Known,
        ["clang", "diagnostic", ..] | ["GCC", "diagnostic", ..] => Pragma::Known,
        _ => Pragma::Unknown,
    }
}

/// The contents of a string literal's body with `\\` and `\"` undone (`#line`, `_Pragma`).
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    out
}

/// Tokens as text, one space where there was white space.
fn spell(toks: &[Tok]) -> String {
    let mut s = String::new();
    for (i, t) in toks.iter().enumerate() {
        if i > 0 && t.space {
            s.push(' ');
        }
        s.push_str(&t.text);
    }
    s
}

fn expand_all(st: &mut State, toks: Vec<Tok>, loc: Loc) -> Result<Vec<Tok>, Fatal> {
    let mut ex = Expander::new();
    let mut base = VecBase::new(toks, loc);
    let mut out = Vec::new();
    loop {
        let t = ex.next(st, &mut base)?;
        if t.kind == Kind::Eof {
            return Ok(out);
        }
        out.push(t);
    }
}

/// The header name of `#include` (C99 6.10.2): a header-name token, or macros that expand to
/// a string literal or to `<` ... `>`.
fn header_name(st: &mut State, args: Vec<Tok>, loc: Loc) -> Result<Option<(String, bool)>, Fatal> {
    if let Some(t) = args.first().filter(|t| t.kind == Kind::HeaderName) {
        let inner = t.text[1..t.text.len() - 1].to_string();
        return Ok(Some((inner, t.text.starts_with('<'))));
    }
    let toks = expand_all(st, args, loc)?;
    match toks.first() {
        Some(t) if t.kind == Kind::Str && !t.text.starts_with('L') => {
            Ok(Some((t.text[1..t.text.len() - 1].to_string(), false)))
        }
        Some(t) if t.is_punct("<") => match toks.iter().position(|t| t.is_punct(">")) {
            Some(end) => Ok(Some((spell(&toks[1..end]), true))),
            None => {
                st.error(loc, "expected '>' in #include".into());
                Ok(None)
            }
        },
        _ => {
            st.error(loc, "expected \"FILENAME\" or <FILENAME>".into());
            Ok(None)
        }
    }
}

impl Base for Files<'_> {
    fn next(&mut self, st: &mut State) -> Result<Tok, Fatal> {
        loop {
            let Some(f) = self.stack.last_mut() else {
                return Ok(Tok::new(Kind::Eof, "", self.last));
            };
            if let Some(t) = f.pending.pop_front() {
                st.cur_line = t.loc.line;
                self.last = t.loc;
                return Ok(t);
            }
            let stop = Tok::new(Kind::Eof, "", self.last);
            let skipping = f.skipping();
            let Some(line) = f.held.take().or_else(|| f.lexer.next_line(skipping)) else {
                for c in std::mem::take(&mut f.conds) {
                    st.error(c.loc, "unterminated conditional directive".into());
                }
                self.stack.pop();
                st.boundary += 1;
                if st.seeking_paren {
                    return Ok(stop);
                }
                continue;
            };
            let is_directive = line.toks.iter().find(|t| t.kind != Kind::Annotation).is_some_and(Tok::is_hash);
            if is_directive && st.seeking_paren {
                f.held = Some(line);
                return Ok(stop);
            }
            st.charge(line.toks.len() + line.bytes / 8 + 1)?;
            let mut toks = line.toks;
            for t in &mut toks {
                t.loc = f.loc(t.loc.line);
            }
            if is_directive {
                toks.retain(|t| t.kind != Kind::Annotation);
                let next_line = line.next_line;
                self.directive(st, toks, next_line)?;
                continue;
            }
            if !skipping {
                f.pending.extend(toks);
            }
        }
    }
}

pub(crate) fn run(input: Input<'_>) -> Result<Preprocessed, Fatal> {
    let opts = parse_build_options(input.options);
    let mut st = State::new(input.limits, input.main_name);
    st.known_undefined.extend(input.predefined.undefined.iter().cloned());
    let builtin = Loc { file: st.name_id("<built-in>"), line: 0 };
    for (name, value) in &input.predefined.defines {
        st.predefined.insert(name_part(name).to_string());
        define_text(&mut st, name, value, builtin, MacroOrigin::Predefined);
    }
    let cmd = Loc { file: st.name_id("<command line>"), line: 0 };
    for why in &opts.unsure {
        st.unsure(cmd, why.clone());
    }
    for m in &opts.macros {
        match m {
            MacroOption::Define { name, value } => {
                st.defined_somewhere.insert(name_part(name).to_string());
                define_text(&mut st, name, value, cmd, MacroOrigin::Option);
            }
            MacroOption::Undef(name) => st.undef(&Rc::from(name.as_str())),
        }
    }
    let text: String = input.sources.concat();
    let mut files = Files {
        stack: Vec::new(),
        resolver: input.resolver,
        once: HashSet::new(),
        scanned: HashSet::new(),
        headers: Vec::new(),
        last: Loc::default(),
    };
    let main: Rc<str> = Rc::from(input.main_name);
    files.enter(&mut st, main, &text);
    let mut ex = Expander::new();
    let mut w = Writer::new(input.limits.max_output_bytes);
    loop {
        let t = ex.next(&mut st, &mut files)?;
        match t.kind {
            Kind::Eof => break,
            Kind::Annotation => w.annotation(&t, &st.names)?,
            Kind::Directive => w.directive(&t, &st.names)?,
            _ => {
                if t.kind == Kind::Ident {
                    check_output_ident(&mut st, &mut ex, &mut files, &t)?;
                }
                if t.kind == Kind::Other {
                    // A stray character or unterminated literal fails to compile; a backslash
                    // may start a universal character name, which is not supported, and one
                    // that ends an output line would splice it with the next.
                    st.unsure(t.loc, format!("'{}' starts no OpenCL C token", t.text));
                }
                w.token(&t, &st.names)?;
            }
        }
    }
    for loc in std::mem::take(&mut w.hash_at_line_start) {
        st.unsure(loc, "a '#' token starts an output line, where the compiler would read a directive".into());
    }
    let (text, lines) = w.finish();
    // The compiler may define a name an option undefines: it must see the option too.
    let mut compiler = opts.clone();
    for m in &opts.macros {
        if let MacroOption::Undef(name) = m {
            if st.device_may_define(name) {
                compiler.compiler.push(format!("-U{name}"));
            }
        }
    }
    finish(st, files, compiler.compiler_string(), text, lines)
}

fn finish(
    mut st: State,
    files: Files<'_>,
    compiler_options: String,
    text: String,
    lines: Vec<(u32, u32)>,
) -> Result<Preprocessed, Fatal> {
    st.finish();
    let names: Vec<String> = st.names.iter().map(|n| n.to_string()).collect();
    let mut macros: Vec<MacroDef> = st
        .macros
        .values()
        .filter(|m| m.builtin.is_none())
        .map(|m| MacroDef {
            name: m.name.to_string(),
            file: names.get(m.loc.file as usize).cloned().unwrap_or_default(),
            line: m.loc.line,
            function_like: m.function_like,
            origin: m.origin,
        })
        .collect();
    macros.sort_by(|a, b| (a.origin, &a.file, a.line, &a.name).cmp(&(b.origin, &b.file, b.line, &b.name)));
    Ok(Preprocessed {
        text,
        line_map: LineMap { names, lines },
        unsure: st.unsure,
        errors: st.errors,
        warnings: st.warnings,
        macros,
        headers: files.headers,
        compiler_options,
    })
}

/// Checks an identifier about to be written: `_Pragma` operators, and macros of ours that the
/// compiler would expand with its own definition.
fn check_output_ident(st: &mut State, ex: &mut Expander, files: &mut Files<'_>, t: &Tok) -> Result<(), Fatal> {
    if &*t.text == "_Pragma" {
        let mut follow = Vec::new();
        for _ in 0..3 {
            let u = ex.next(st, files)?;
            let stop = u.kind == Kind::Eof || u.is_transparent();
            follow.push(u);
            if stop {
                break;
            }
        }
        let text = match &follow[..] {
            [o, s, c] if o.is_punct("(") && s.kind == Kind::Str && c.is_punct(")") => {
                Some(unescape(&s.text[1..s.text.len() - 1]))
            }
            _ => None,
        };
        match text {
            Some(text) => {
                let toks = Lexer::new(&text).next_line(false).map(|l| l.toks).unwrap_or_default();
                let words: Vec<&str> = toks.iter().map(|t| &*t.text).collect();
                if matches!(classify_pragma(&words), Pragma::Unknown) || toks.iter().any(|x| program_macro(st, x)) {
                    st.unsure(t.loc, format!("_Pragma(\"{text}\") is not known to leave the program unchanged"));
                }
            }
            None => st.unsure(t.loc, "_Pragma without a string literal".into()),
        }
        ex.unread(follow);
        return Ok(());
    }
    // A name still defined here was not expanded: painted, or function-like without arguments.
    if st.macros.get(&t.text).is_some_and(|m| m.builtin.is_none()) && st.device_may_define(&t.text) {
        st.unsure(
            t.loc,
            format!(
                "'{}' stays unexpanded here, and the device compiler may expand it with its own definition",
                t.text
            ),
        );
    }
    Ok(())
}

/// The name in a `-D` name part that may carry a parameter list.
fn name_part(name: &str) -> &str {
    name.split('(').next().unwrap_or(name)
}

/// A macro from the caller or the options, as if `#define name value` were written.
fn define_text(st: &mut State, name: &str, value: &str, loc: Loc, origin: MacroOrigin) {
    let line = format!("{name} {value}");
    let mut toks = Lexer::new(&line).next_line(false).map(|l| l.toks).unwrap_or_default();
    for t in &mut toks {
        t.loc = loc;
    }
    match parse_define(&toks, loc, origin) {
        Ok(m) => st.define(m),
        Err(e) => st.error(loc, format!("-D{name}={value}: {e}")),
    }
}
