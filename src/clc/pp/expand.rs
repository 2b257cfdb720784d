//! Macro definitions and their replacement (C99 6.10.3), the way GCC and clang do it: each
//! expansion is a context on a stack, its macro disabled while the context is there; an
//! identifier met while its macro is disabled is painted and never expanded again. A context
//! is popped only when a read goes past its end, so a function-like macro whose name ends one
//! expansion can take its arguments from what follows (C99 6.10.3.4 EXAMPLE, `f(2)(9)`).
//! Arguments are fully expanded on their own before substitution, once each, lazily: that fixes
//! the order in which `__COUNTER__` counts.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::lex::{Kind, Loc, Tok};
use super::{Diag, Fatal, Limits, MacroOrigin};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Builtin {
    Line,
    Counter,
    /// `__FILE__`, `__DATE__` and the like: left for the device compiler to expand, and unsure.
    Unknowable(&'static str),
}

pub(crate) const BUILTINS: [(&str, Builtin); 9] = [
    ("__LINE__", Builtin::Line),
    ("__COUNTER__", Builtin::Counter),
    ("__FILE__", Builtin::Unknowable("the device compiler's name for a source string is not knowable")),
    ("__BASE_FILE__", Builtin::Unknowable("the device compiler's name for a source string is not knowable")),
    ("__FILE_NAME__", Builtin::Unknowable("the device compiler's name for a source string is not knowable")),
    ("__INCLUDE_LEVEL__", Builtin::Unknowable("the include depth changes once headers are inlined")),
    ("__DATE__", Builtin::Unknowable("the date of the device compilation is not knowable")),
    ("__TIME__", Builtin::Unknowable("the time of the device compilation is not knowable")),
    ("__TIMESTAMP__", Builtin::Unknowable("the time of the device compilation is not knowable")),
];

pub(crate) struct BodyTok {
    pub tok: Tok,
    /// A parameter, replaced by its argument.
    pub param: Option<usize>,
    /// The `##` operator.
    pub paste: bool,
    /// `#` applied to this parameter; the parameter token that follows is skipped.
    pub stringize: Option<usize>,
}

pub(crate) struct Macro {
    pub name: Rc<str>,
    pub params: Vec<Rc<str>>,
    pub function_like: bool,
    pub variadic: bool,
    pub body: Vec<BodyTok>,
    pub builtin: Option<Builtin>,
    pub loc: Loc,
    pub origin: MacroOrigin,
}

/// `#define` from the tokens after `define`. Errors are the ones clang reports.
pub(crate) fn parse_define(toks: &[Tok], loc: Loc, origin: MacroOrigin) -> Result<Macro, String> {
    let Some(name) = toks.first() else { return Err("macro name missing".into()) };
    if name.kind != Kind::Ident {
        return Err("macro name must be an identifier".into());
    }
    if &*name.text == "defined" {
        return Err("'defined' cannot be used as a macro name".into());
    }
    let mut i = 1;
    let mut params: Vec<Rc<str>> = Vec::new();
    let mut variadic = false;
    let function_like = toks.get(1).is_some_and(|t| t.is_punct("(") && !t.space);
    if function_like {
        i = 2;
        if toks.get(2).is_some_and(|t| t.is_punct(")")) {
            i = 3;
        } else {
            loop {
                let Some(t) = toks.get(i) else { return Err("missing ')' in macro parameter list".into()) };
                i += 1;
                if t.is_punct("...") {
                    variadic = true;
                    params.push(Rc::from("__VA_ARGS__"));
                    close_after_ellipsis(toks, &mut i)?;
                    break;
                }
                if t.kind != Kind::Ident {
                    return Err("invalid token in macro parameter list".into());
                }
                if &*t.text == "__VA_ARGS__" {
                    return Err("__VA_ARGS__ can only appear in the expansion of a variadic macro".into());
                }
                if params.contains(&t.text) {
                    return Err(format!("duplicate macro parameter name '{}'", t.text));
                }
                params.push(t.text.clone());
                let Some(n) = toks.get(i) else { return Err("missing ')' in macro parameter list".into()) };
                i += 1;
                if n.is_punct("...") {
                    // GNU named variadic parameter: `#define f(args...)`.
                    variadic = true;
                    close_after_ellipsis(toks, &mut i)?;
                    break;
                }
                if n.is_punct(")") {
                    break;
                }
                if !n.is_punct(",") {
                    return Err("expected comma in macro parameter list".into());
                }
            }
        }
    }
    let mut body: Vec<BodyTok> = Vec::new();
    let rest = toks.get(i..).unwrap_or(&[]);
    let mut j = 0;
    while j < rest.len() {
        let mut tok = rest[j].clone();
        if body.is_empty() {
            tok.space = false;
        }
        let param =
            if function_like && tok.kind == Kind::Ident { params.iter().position(|p| *p == tok.text) } else { None };
        if function_like && tok.is_hash() {
            let next = rest.get(j + 1);
            match next.and_then(|n| if n.kind == Kind::Ident { params.iter().position(|p| *p == n.text) } else { None })
            {
                Some(p) => {
                    body.push(BodyTok { tok, param: None, paste: false, stringize: Some(p) });
                    j += 2;
                    continue;
                }
                None => return Err("'#' is not followed by a macro parameter".into()),
            }
        }
        let paste = tok.is_hashhash();
        body.push(BodyTok { tok, param, paste, stringize: None });
        j += 1;
    }
    if body.first().is_some_and(|b| b.paste) || body.last().is_some_and(|b| b.paste) {
        return Err("'##' cannot appear at either end of a macro expansion".into());
    }
    Ok(Macro { name: name.text.clone(), params, function_like, variadic, body, builtin: None, loc, origin })
}

fn close_after_ellipsis(toks: &[Tok], i: &mut usize) -> Result<(), String> {
    if !toks.get(*i).is_some_and(|t| t.is_punct(")")) {
        return Err("missing ')' after '...' in macro parameter list".into());
    }
    *i += 1;
    Ok(())
}

/// Everything the expander, the conditional evaluator and the driver share.
pub(crate) struct State {
    pub macros: HashMap<Rc<str>, Rc<Macro>>,
    disabled: HashMap<Rc<str>, u32>,
    pub counter: u64,
    /// Presumed line of the last token read from a file: `__LINE__` (the end of the outermost
    /// expansion, as clang and GCC have it).
    pub cur_line: u32,
    /// Presumed file names; `Loc::file` indexes this.
    pub names: Vec<Rc<str>>,
    pub unsure: Vec<Diag>,
    pub errors: Vec<Diag>,
    pub warnings: Vec<Diag>,
    seen: HashSet<(u32, u32, String)>,
    /// Names the program (source or options) has defined or undefined: from then on our table
    /// says all there is, whatever the device compiler predefined.
    pub touched: HashSet<Rc<str>>,
    /// Names the caller knows the device compiler leaves undefined.
    pub known_undefined: HashSet<String>,
    /// Names the caller predefined from the device's facts.
    pub predefined: HashSet<String>,
    /// Every name some `#define` line of some file read names, taken or not, and every `-D`.
    pub defined_somewhere: HashSet<String>,
    /// Reserved names asked about before the program defined them: unsure at the end unless
    /// the program defines them somewhere (an include guard such as `__UTILS_H__`).
    pub pending_reserved: Vec<(Rc<str>, Loc, String)>,
    /// Counts file entries and exits, so that an invocation crossing one is noticed.
    pub boundary: u64,
    /// Above 0 while a macro invocation's arguments (or its `(`) are being read from a file.
    pub collecting: u32,
    /// While the `(` after a function-like macro's name is looked for: as in clang, a
    /// directive line or the end of a file says there is none.
    pub seeking_paren: bool,
    arg_depth: usize,
    work: u64,
    pub limits: Limits,
}

/// What `#if` knows about whether a name is defined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Query {
    Defined,
    Undefined,
    /// Undefined here, but the device compiler may define it; `true` when the name is reserved
    /// but not one compilers are known to define, so that the program defining it somewhere
    /// makes it the program's own (an include guard such as `__UTILS_H__`).
    Unsure(bool),
}

/// Names the OpenCL C headers of the device compiler define (OpenCL C 3.0, 6.15 and 6.13.2),
/// plus PoCL's own: asking about one the caller did not give is unsure.
const LIBRARY_MACROS: &[&str] = &[
    "CHAR_BIT",
    "CHAR_MAX",
    "CHAR_MIN",
    "INT_MAX",
    "INT_MIN",
    "LONG_MAX",
    "LONG_MIN",
    "SCHAR_MAX",
    "SCHAR_MIN",
    "SHRT_MAX",
    "SHRT_MIN",
    "UCHAR_MAX",
    "USHRT_MAX",
    "UINT_MAX",
    "ULONG_MAX",
    "MAXFLOAT",
    "HUGE_VALF",
    "HUGE_VAL",
    "INFINITY",
    "NAN",
    "FP_ILOGB0",
    "FP_ILOGBNAN",
    "FP_FAST_FMA",
    "FP_FAST_FMAF",
    "FP_FAST_FMA_HALF",
    "NULL",
    "ATOMIC_VAR_INIT",
    "ATOMIC_FLAG_INIT",
    "kernel_exec",
    "inline",
    "CL_DEVICE_MAX_GLOBAL_VARIABLE_SIZE",
    "POCL_DEVICE_ADDRESS_BITS",
];
const LIBRARY_PREFIXES: &[&str] = &["FLT_", "DBL_", "HALF_", "M_", "CLK_", "CL_", "cl_", "__opencl_c_"];

/// Beginnings of the names OpenCL compilers predefine (OpenCL C 3.0 6.12, clang, GCC-style
/// target macros, vendors): a program defining one of these too, as a fallback for compilers
/// without it (`#ifndef __OPENCL_C_VERSION__` / `#define __OPENCL_C_VERSION__ 100`), does not
/// make it the program's own.
const DEVICE_PREFIXES: &[&str] = &[
    "__OPENCL",
    "__opencl",
    "__ENDIAN",
    "__IMAGE",
    "__FAST",
    "__EMBEDDED",
    "__ROUNDING",
    "__kernel",
    "__SPIR",
    "__spir",
    "__clang",
    "__llvm",
    "__GNUC",
    "__STDC",
    "__SIZEOF",
    "__FINITE",
    "__OPTIMIZE",
    "__NV",
    "__nv",
    "__PTX",
    "__CUDA",
    "__AMD",
    "__amd",
    "__gfx",
    "__GFX",
    "__R600",
    "__INTEL",
    "__Intel",
    "__intel",
    "__ALTERA",
    "__FPGA",
    "__GPU",
    "__CPU",
    "__APPLE",
    "__MESA",
    "__POCL",
    "__x86",
    "__i386",
    "__i686",
    "__arm",
    "__ARM",
    "__aarch64",
    "__riscv",
    "__ORDER",
    "__BYTE_ORDER",
    "__LITTLE_ENDIAN",
    "__BIG_ENDIAN",
    "__LP64",
    "__ILP32",
    "__linux",
    "__unix",
    "__ELF",
    "__VERSION__",
    "__has_",
    "__is_identifier",
    "__CHAR",
    "__INT",
    "__UINT",
    "__LONG",
    "__SCHAR",
    "__SHRT",
    "__WCHAR",
    "__FLT",
    "__DBL",
    "__LDBL",
    "__PTRDIFF",
    "__SIZE",
    "__USER_LABEL",
    "__ATOMIC",
    "__MEMORY_SCOPE",
    "__ELF__",
    "__PIC",
    "__pic",
    "__PIE",
    "__pie",
    "__NO_",
    "__GCC",
    "__FP_",
    "__CL_",
];

pub(crate) fn is_reserved(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() >= 2 && b[0] == b'_' && (b[1] == b'_' || b[1].is_ascii_uppercase())
}

pub(crate) fn is_library(name: &str) -> bool {
    LIBRARY_MACROS.contains(&name) || LIBRARY_PREFIXES.iter().any(|p| name.starts_with(p))
}

impl State {
    pub fn new(limits: Limits, main: &str) -> State {
        let mut st = State {
            macros: HashMap::new(),
            disabled: HashMap::new(),
            counter: 0,
            cur_line: 1,
            names: vec![Rc::from(main)],
            unsure: Vec::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
            seen: HashSet::new(),
            touched: HashSet::new(),
            known_undefined: ["__cplusplus", "__OPENCL_CPP_VERSION__", "__cplusplus_cli", "__embedded_cplusplus"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            predefined: HashSet::new(),
            defined_somewhere: HashSet::new(),
            pending_reserved: Vec::new(),
            boundary: 0,
            collecting: 0,
            seeking_paren: false,
            arg_depth: 0,
            work: 0,
            limits,
        };
        let loc = Loc { file: st.name_id("<built-in>"), line: 0 };
        for (name, b) in BUILTINS {
            let m = Macro {
                name: Rc::from(name),
                params: Vec::new(),
                function_like: false,
                variadic: false,
                body: Vec::new(),
                builtin: Some(b),
                loc,
                origin: MacroOrigin::Predefined,
            };
            st.macros.insert(m.name.clone(), Rc::new(m));
        }
        st
    }

    pub fn name_id(&mut self, name: &str) -> u32 {
        if let Some(i) = self.names.iter().position(|n| &**n == name) {
            return super::lex::clamp_u32(i);
        }
        self.names.push(Rc::from(name));
        super::lex::clamp_u32(self.names.len() - 1)
    }

    fn diag(&mut self, loc: Loc, message: String) -> Option<Diag> {
        // A message may quote source text or options that span lines; a log line must not.
        let message = if message.contains(['\n', '\r']) {
            message.split_whitespace().collect::<Vec<_>>().join(" ")
        } else {
            message
        };
        if !self.seen.insert((loc.file, loc.line, message.clone())) {
            return None;
        }
        let file = self.names.get(loc.file as usize).map_or_else(String::new, |n| n.to_string());
        Some(Diag { file, line: loc.line, message })
    }

    pub fn unsure(&mut self, loc: Loc, message: String) {
        if let Some(d) = self.diag(loc, message) {
            self.unsure.push(d);
        }
    }

    pub fn error(&mut self, loc: Loc, message: String) {
        if let Some(d) = self.diag(loc, message) {
            self.errors.push(d);
        }
    }

    pub fn warning(&mut self, loc: Loc, message: String) {
        if let Some(d) = self.diag(loc, message) {
            self.warnings.push(d);
        }
    }

    /// Counts work against the limit, so that no input can make the preprocessor run away.
    pub fn charge(&mut self, n: usize) -> Result<(), Fatal> {
        self.work = self.work.saturating_add(n as u64);
        if self.work > self.limits.max_work {
            return Err(Fatal::TooMuchWork);
        }
        Ok(())
    }

    pub fn is_disabled(&self, name: &str) -> bool {
        self.disabled.get(name).is_some_and(|&n| n > 0)
    }

    fn disable(&mut self, name: &Rc<str>) {
        *self.disabled.entry(name.clone()).or_insert(0) += 1;
    }

    fn enable(&mut self, name: &str) {
        if let Some(n) = self.disabled.get_mut(name) {
            *n = n.saturating_sub(1);
        }
    }

    pub fn define(&mut self, m: Macro) {
        self.touched.insert(m.name.clone());
        self.macros.insert(m.name.clone(), Rc::new(m));
    }

    pub fn undef(&mut self, name: &Rc<str>) {
        self.touched.insert(name.clone());
        self.macros.remove(name);
    }

    pub fn query(&self, name: &str) -> Query {
        if self.macros.contains_key(name) {
            Query::Defined
        } else if self.touched.contains(name) || self.known_undefined.contains(name) {
            Query::Undefined
        } else if is_library(name) {
            Query::Unsure(false)
        } else if is_reserved(name) {
            Query::Unsure(!DEVICE_PREFIXES.iter().any(|p| name.starts_with(p)))
        } else {
            Query::Undefined
        }
    }

    /// Records why a query answered `Unsure` mattered.
    pub fn unsure_name(&mut self, name: &Rc<str>, filterable: bool, loc: Loc) {
        let msg = format!(
            "the condition depends on '{name}', which the device compiler may predefine and the build does not say"
        );
        if filterable {
            self.pending_reserved.push((name.clone(), loc, msg));
        } else {
            self.unsure(loc, msg);
        }
    }

    /// A name the device compiler may define as a macro of its own: a `#undef` of it must
    /// reach the compiler, and it must not reach the compiler unexpanded where we did not
    /// expand it for a reason the compiler will not see.
    pub fn device_may_define(&self, name: &str) -> bool {
        is_reserved(name) || is_library(name) || self.predefined.contains(name)
    }

    /// Turns the pending reserved-name queries into unsure reasons, except for names the
    /// program defines itself somewhere.
    pub fn finish(&mut self) {
        for (name, loc, msg) in std::mem::take(&mut self.pending_reserved) {
            if !self.defined_somewhere.contains(&*name) {
                self.unsure(loc, msg);
            }
        }
    }
}

/// Where the expander reads tokens that no context holds: a file (which runs directives as it
/// goes) or one directive's tokens.
pub(crate) trait Base {
    /// The next token, `Eof` at the end (and on every call after).
    fn next(&mut self, st: &mut State) -> Result<Tok, Fatal>;
}

pub(crate) struct VecBase {
    toks: Vec<Tok>,
    pos: usize,
    eof: Tok,
}

impl VecBase {
    pub fn new(toks: Vec<Tok>, loc: Loc) -> VecBase {
        VecBase { toks, pos: 0, eof: Tok::new(Kind::Eof, "", loc) }
    }
}

impl Base for VecBase {
    fn next(&mut self, st: &mut State) -> Result<Tok, Fatal> {
        let t = self.toks.get(self.pos).cloned().unwrap_or_else(|| self.eof.clone());
        self.pos += 1;
        // clang: `__LINE__` expanded in an argument is where the expansion around it ends in
        // the argument as written, or, for tokens that came out of an expansion, where that
        // expansion ends (the line the caller's reading has reached).
        if !t.expanded && t.kind != Kind::Eof {
            st.cur_line = t.loc.line;
        }
        Ok(t)
    }
}

/// A macro invocation's arguments, and the annotations and directives met among them.
type Invocation = (Vec<Vec<Tok>>, Vec<Tok>);

struct Ctx {
    toks: Vec<Tok>,
    pos: usize,
    /// The macro this context replaces, disabled while the context is on the stack; `None` for
    /// tokens read ahead and given back.
    macro_name: Option<Rc<str>>,
}

pub(crate) struct Expander {
    ctx: Vec<Ctx>,
    /// Where the outermost expansion in progress was invoked: every token it produces is put
    /// on that line, as a compiler's `-E` does.
    invocation: Loc,
}

impl Expander {
    pub fn new() -> Expander {
        Expander { ctx: Vec::new(), invocation: Loc::default() }
    }

    /// The next token with macros expanded.
    pub fn next(&mut self, st: &mut State, base: &mut dyn Base) -> Result<Tok, Fatal> {
        loop {
            let mut t = self.read(st, base)?;
            if t.kind != Kind::Ident || t.painted {
                return Ok(t);
            }
            if st.is_disabled(&t.text) {
                t.painted = true;
                return Ok(t);
            }
            let Some(m) = st.macros.get(&t.text).cloned() else { return Ok(t) };
            match m.builtin {
                Some(Builtin::Line) => return Ok(number(&t, u64::from(st.cur_line))),
                Some(Builtin::Counter) => {
                    let n = st.counter;
                    st.counter += 1;
                    return Ok(number(&t, n));
                }
                Some(Builtin::Unknowable(why)) => {
                    st.unsure(t.loc, format!("{}: {why}", t.text));
                    t.painted = true;
                    return Ok(t);
                }
                None => {}
            }
            if !m.function_like {
                let toks = self.substitute(st, &m, &[], false, &t)?;
                self.push_expansion(st, &m, toks, &t)?;
                continue;
            }
            let boundary = st.boundary;
            st.collecting += 1;
            let invoked = self.invocation_args(st, base, &m, &t);
            st.collecting -= 1;
            let Some((args, deferred)) = invoked? else { return Ok(t) };
            if st.boundary != boundary {
                st.unsure(t.loc, format!("the invocation of '{}' spans the start or end of a file", m.name));
            }
            let Some((args, va_elided)) = check_arg_count(st, &m, &t, args) else {
                continue;
            };
            let toks = self.substitute(st, &m, &args, va_elided && m.params.len() >= 2, &t)?;
            if !deferred.is_empty() {
                self.ctx.push(Ctx { toks: deferred, pos: 0, macro_name: None });
            }
            self.push_expansion(st, &m, toks, &t)?;
        }
    }

    /// The next token without expansion (for the operand of `defined`).
    pub fn read(&mut self, st: &mut State, base: &mut dyn Base) -> Result<Tok, Fatal> {
        while let Some(c) = self.ctx.last_mut() {
            if let Some(t) = c.toks.get(c.pos) {
                let mut t = t.clone();
                c.pos += 1;
                if c.macro_name.is_some() {
                    t.loc = self.invocation;
                    t.expanded = true;
                }
                return Ok(t);
            }
            if let Some(name) = self.ctx.pop().and_then(|c| c.macro_name) {
                st.enable(&name);
            }
        }
        base.next(st)
    }

    pub fn unread(&mut self, toks: Vec<Tok>) {
        if !toks.is_empty() {
            self.ctx.push(Ctx { toks, pos: 0, macro_name: None });
        }
    }

    /// After a function-like macro's name: its arguments if `(` follows, with annotations and
    /// passed-through directives met on the way (put after the expansion); `None` if it is
    /// not an invocation, with what was read ahead given back.
    fn invocation_args(
        &mut self,
        st: &mut State,
        base: &mut dyn Base,
        m: &Macro,
        name: &Tok,
    ) -> Result<Option<Invocation>, Fatal> {
        let mut deferred = Vec::new();
        loop {
            st.seeking_paren = true;
            let u = self.read(st, base);
            st.seeking_paren = false;
            let u = u?;
            if u.is_transparent() {
                deferred.push(u);
                continue;
            }
            if u.is_punct("(") {
                break;
            }
            if u.kind != Kind::Eof {
                deferred.push(u);
            }
            self.unread(deferred);
            return Ok(None);
        }
        let mut args: Vec<Vec<Tok>> = vec![Vec::new()];
        let mut depth = 0usize;
        loop {
            let mut u = self.read(st, base)?;
            st.charge(1)?;
            match u.kind {
                Kind::Eof => {
                    st.error(name.loc, format!("unterminated argument list invoking macro '{}'", m.name));
                    return Ok(None);
                }
                Kind::Annotation | Kind::Directive => {
                    deferred.push(u);
                    continue;
                }
                Kind::Ident if st.is_disabled(&u.text) => u.painted = true,
                _ => {}
            }
            if u.is_punct("(") {
                depth += 1;
            } else if u.is_punct(")") {
                if depth == 0 {
                    break;
                }
                depth -= 1;
            } else if u.is_punct(",") && depth == 0 && !(m.variadic && args.len() == m.params.len()) {
                args.push(Vec::new());
                continue;
            }
            if let Some(a) = args.last_mut() {
                a.push(u);
            }
        }
        Ok(Some((args, deferred)))
    }

    fn push_expansion(&mut self, st: &mut State, m: &Macro, mut toks: Vec<Tok>, name: &Tok) -> Result<(), Fatal> {
        if !self.ctx.iter().any(|c| c.macro_name.is_some()) {
            self.invocation = name.loc;
        }
        for t in &mut toks {
            t.indent = Default::default();
        }
        if let Some(first) = toks.first_mut() {
            first.space = name.space;
            first.indent = name.indent;
        }
        // The context stack is no recursion, and every push is charged: the work limit bounds it.
        st.charge(toks.len() + 1)?;
        st.disable(&m.name);
        self.ctx.push(Ctx { toks, pos: 0, macro_name: Some(m.name.clone()) });
        Ok(())
    }

    /// C99 6.10.3.1 to 6.10.3.3: the replacement list with arguments substituted, `#` and `##`
    /// applied. `elide_comma`: the GNU `, ## __VA_ARGS__` drops its comma (clang, C99 mode:
    /// only when the variable arguments were left out and the macro has a named parameter).
    fn substitute(
        &mut self,
        st: &mut State,
        m: &Macro,
        args: &[Vec<Tok>],
        elide_comma: bool,
        name: &Tok,
    ) -> Result<Vec<Tok>, Fatal> {
        let body = &m.body;
        let mut out: Vec<Tok> = Vec::with_capacity(body.len());
        let mut expanded: Vec<Option<Vec<Tok>>> = vec![None; args.len()];
        let va = if m.variadic { m.params.len().checked_sub(1) } else { None };
        let mut i = 0;
        while i < body.len() {
            let b = &body[i];
            if b.tok.kind == Kind::Ident && &*b.tok.text == "__VA_OPT__" {
                st.unsure(name.loc, "__VA_OPT__ is not supported".into());
            }
            if b.paste {
                i += 1;
                let Some(rb) = body.get(i) else { break };
                let mut rhs: Vec<Tok> = match (rb.stringize, rb.param) {
                    (Some(p), _) => vec![stringize(&rb.tok, args.get(p).map_or(&[][..], |a| a))],
                    (None, Some(p)) => args.get(p).cloned().unwrap_or_default(),
                    (None, None) => vec![rb.tok.clone()],
                };
                i += 1;
                if let Some(first) = rhs.first_mut() {
                    first.space = rb.tok.space;
                }
                if rb.param.is_some() && rb.param == va && out.last().is_some_and(|t| t.is_punct(",")) {
                    // `, ## __VA_ARGS__`: never a paste.
                    if rhs.is_empty() && elide_comma {
                        out.pop();
                    }
                    out.extend(rhs);
                    continue;
                }
                let lhs = out.pop().filter(|t| t.kind != Kind::Placemarker);
                match lhs {
                    None if rhs.is_empty() => out.push(Tok::new(Kind::Placemarker, "", b.tok.loc)),
                    None => out.extend(rhs),
                    Some(l) if rhs.is_empty() => out.push(l),
                    Some(l) => {
                        let mut rest = rhs.into_iter();
                        let r = rest.next().unwrap_or_else(|| l.clone());
                        match paste(&l, &r) {
                            Some(p) => out.push(p),
                            None => {
                                st.error(
                                    name.loc,
                                    format!("pasting formed '{}{}', an invalid preprocessing token", l.text, r.text),
                                );
                                out.push(l);
                                out.push(r);
                            }
                        }
                        out.extend(rest);
                    }
                }
                continue;
            }
            if let Some(p) = b.stringize {
                let mut s = stringize(&b.tok, args.get(p).map_or(&[][..], |a| a));
                s.space = b.tok.space;
                out.push(s);
                i += 1;
                continue;
            }
            if let Some(p) = b.param {
                let before_paste = body.get(i + 1).is_some_and(|n| n.paste);
                let mut toks = if before_paste {
                    let raw = args.get(p).cloned().unwrap_or_default();
                    if raw.is_empty() {
                        vec![Tok::new(Kind::Placemarker, "", b.tok.loc)]
                    } else {
                        raw
                    }
                } else {
                    if expanded[p].is_none() {
                        expanded[p] = Some(self.expand_arg(st, args.get(p).map_or(&[][..], |a| a))?);
                    }
                    expanded[p].clone().unwrap_or_default()
                };
                if let Some(first) = toks.first_mut() {
                    first.space = b.tok.space;
                }
                st.charge(toks.len())?;
                out.extend(toks);
                i += 1;
                continue;
            }
            out.push(b.tok.clone());
            i += 1;
        }
        out.retain(|t| t.kind != Kind::Placemarker);
        Ok(out)
    }

    /// An argument fully macro-replaced as if it were the rest of the file (C99 6.10.3.1).
    fn expand_arg(&mut self, st: &mut State, arg: &[Tok]) -> Result<Vec<Tok>, Fatal> {
        if st.arg_depth >= st.limits.max_nesting {
            return Err(Fatal::TooDeep("macro arguments"));
        }
        st.arg_depth += 1;
        let line = st.cur_line;
        let loc = arg.first().map_or(self.invocation, |t| t.loc);
        let mut base = VecBase::new(arg.to_vec(), loc);
        let mut sub = Expander { ctx: Vec::new(), invocation: self.invocation };
        let mut out = Vec::new();
        let result = loop {
            match sub.next(st, &mut base) {
                Ok(t) if t.kind == Kind::Eof => break Ok(out),
                Ok(t) => out.push(t),
                Err(e) => break Err(e),
            }
        };
        st.arg_depth -= 1;
        st.cur_line = line;
        result
    }
}

/// The argument count rules of C99 6.10.3p4 with clang's leniency for left-out variable
/// arguments: the arguments and whether the variable ones were left out, or `None` (after an
/// error) if the rules are broken.
fn check_arg_count(st: &mut State, m: &Macro, name: &Tok, mut args: Vec<Vec<Tok>>) -> Option<(Vec<Vec<Tok>>, bool)> {
    let n = m.params.len();
    if n == 0 {
        if args.len() == 1 && args[0].is_empty() {
            return Some((Vec::new(), false));
        }
        st.error(name.loc, format!("too many arguments provided to function-like macro invocation '{}'", m.name));
        return None;
    }
    if args.len() == n {
        // `f()` for a variadic macro of one parameter leaves its variable arguments out.
        let elided = m.variadic && n == 1 && args[0].is_empty();
        return Some((args, elided));
    }
    if m.variadic && args.len() + 1 == n {
        args.push(Vec::new());
        return Some((args, true));
    }
    let what = if args.len() < n { "few" } else { "many" };
    st.error(name.loc, format!("too {what} arguments provided to function-like macro invocation '{}'", m.name));
    None
}

fn number(at: &Tok, n: u64) -> Tok {
    let mut t = Tok::new(Kind::Number, &n.to_string(), at.loc);
    t.space = at.space;
    t
}

/// `#` (C99 6.10.3.2): the argument's spelling as a string literal, white space between
/// tokens made one space, `"` and `\` escaped inside string and character literals.
fn stringize(hash: &Tok, arg: &[Tok]) -> Tok {
    let mut s = String::from("\"");
    for (i, t) in arg.iter().enumerate() {
        if i > 0 && t.space {
            s.push(' ');
        }
        let literal =
            matches!(t.kind, Kind::Str | Kind::Char) || (t.kind == Kind::Other && t.text.starts_with(['\'', '"', 'L']));
        if literal {
            for c in t.text.chars() {
                if c == '"' || c == '\\' {
                    s.push('\\');
                }
                s.push(c);
            }
        } else {
            s.push_str(&t.text);
        }
    }
    // clang drops an unescaped backslash at the end, which would escape the closing quote.
    if s.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1 {
        s.pop();
    }
    s.push('"');
    Tok::new(Kind::Str, &s, hash.loc)
}

/// `##` (C99 6.10.3.3): one token, or `None` if the spellings do not make exactly one.
fn paste(l: &Tok, r: &Tok) -> Option<Tok> {
    let text = format!("{}{}", l.text, r.text);
    let kind = super::lex::single_token(&text)?;
    let mut t = Tok::new(kind, &text, l.loc);
    t.space = l.space;
    Some(t)
}
