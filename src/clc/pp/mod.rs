//! The OpenCL C preprocessor: the program as the device compiler sees it, so that annotation
//! attachment, kernel signatures, structure definitions and the rewriter work on it. Pure: the
//! caller gives the sources, the build options, the device's predefined macros and a resolver
//! for `#include`, and gets the text back with `#line` markers (compiler messages still name
//! the user's files and lines), a line map, and every reason the result may differ from what
//! the device compiler does.
//!
//! Rules followed: C99 6.10 as clang applies it to OpenCL C (C99 mode, not GNU mode):
//! - phases 1-3 (`lex`): line splicing (a backslash, optional spaces, a newline), comments as
//!   one space, pp-tokens with digraphs; `//DL:` and `/*DL: ... */` comments (a comment whose
//!   body starts with `DL:` after optional spaces) stay in the output at their place, except
//!   inside directives;
//! - macros (`expand`): object-like and function-like, `#`, `##` with placemarkers,
//!   `__VA_ARGS__` and GNU named variadics, GNU `, ## __VA_ARGS__` (comma dropped only when the
//!   variable arguments are left out and the macro has a named parameter, as clang in C99
//!   mode), rescanning with blue paint, `#undef` and redefinition; a directive line or the end
//!   of a header between a function-like macro's name and `(` means no invocation, directives
//!   among the arguments act (clang); `__LINE__` (the line where the outermost invocation ends,
//!   or inside an argument where the argument's own expansion ends) and `__COUNTER__` (in
//!   clang's order: an argument is expanded once, when first used unstringized and unpasted);
//! - conditionals (`cond`): `#if/#ifdef/#ifndef/#elif/#elifdef/#elifndef/#else/#endif`, with
//!   `defined`, intmax/uintmax arithmetic and the usual conversions in 128 bits, `?:`,
//!   character constants, `true`/`false` as keywords (clang's OpenCL mode), other identifiers
//!   0; a condition whose truth differs when read as plain C99 (64 bits, `true` 0) is unsure;
//! - directives (`driver`): `#include` through [`IncludeResolver`] and `#pragma once`,
//!   `#line` and GNU line markers, `#error` (reported in `errors`), `#warning`, the null
//!   directive, `#pragma` passed through in place.
//!
//! The order of macro sources: the caller's predefined macros, then `-D`/`-U` in option order,
//! then the program. Several source strings are one text, as `clCreateProgramWithSource`
//! concatenates them.
//!
//! Unsure (reported, never guessed silently): a condition that depends on a name the device
//! compiler may predefine and the caller did not give (reserved names, `__` or `_` + capital,
//! unless the program itself defines the name somewhere, as include guards do, and the name
//! is not one compilers are known to predefine such as `__OPENCL_C_VERSION__` or `__SPIR__`;
//! the OpenCL C library macros such as `FLT_MAX` or `M_PI`; `cl_*`/`CL_*`/`CLK_*`); a
//! condition whose truth differs between clang's reading and plain C99's; a header the
//! resolver cannot find; `__FILE__`, `__DATE__`, `__TIME__` and the like (left for the
//! compiler); `#pragma` and
//! `_Pragma` other than `OPENCL EXTENSION`, `OPENCL FP_CONTRACT`, `unroll`, `nounroll`,
//! `clang/GCC diagnostic` and `once`, or a known one naming a program macro; `#include`,
//! `#define`, `#undef`, `#line`, `#pragma` or a file boundary inside a macro invocation's
//! arguments; a macro the device may also define reaching the output unexpanded; a `#` that
//! would start an output line; a character that starts no token (a stray backslash or `@`,
//! an unterminated literal, a universal character name) in the output; build options with
//! quotes (implementations split them differently) or `-cl-std=CLC++`.
//! `__cplusplus` and `__OPENCL_CPP_VERSION__` are simply undefined.
//!
//! Deliberately unsupported: `__VA_OPT__` (unsure), `#include_next` and `#import` (unsure,
//! read as `#include`), `#pragma push_macro`/`pop_macro` and other pragmas that act on the
//! preprocessor (unsure), universal character names in identifiers, `u8`/`u`/`U` literal
//! prefixes (OpenCL C is C99), `#assert`. A device macro whose definition uses a name the
//! program redefines (the program's definition is gone from the output) is not detected;
//! no device header does that with user names.
//!
//! Bounded: recursion depth ([`Limits::max_nesting`]), include depth, total work and output
//! size are limits that end preprocessing with a [`Fatal`] error, never a hang or a panic.
//!
//! No crate was used: the Rust C preprocessors found (rucc-pp, part of a whole compiler with
//! its own session, target and token crates and GCC's rules; ppx, a template preprocessor;
//! pp-rs, GLSL's; hemtt-preprocessor, Arma's; cpreprocess, which runs an external cpp) neither
//! follow clang's OpenCL rules exactly nor report what they cannot know about the device.

mod cond;
mod driver;
mod expand;
mod lex;
mod options;
mod output;
#[cfg(test)]
mod tests;

use std::fmt;

pub use options::{
    parse_build_options, parse_cl_version, predefined_macros, BuildOptions, DeviceFacts, MacroOption, Predefined,
};

/// A header found by the resolver: the name it goes by (in `#line` markers and diagnostics,
/// and as the includer of its own headers) and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub name: String,
    pub text: String,
}

/// Finds `#include`d headers: the build's `-I` directories, the program's directory, the
/// headers given to `clCompileProgram` are the caller's business.
pub trait IncludeResolver {
    /// `name` as written between the delimiters; `angled` for `<...>`; `includer` is the
    /// resolved name of the including file (the main name for the program itself).
    fn resolve(&mut self, name: &str, angled: bool, includer: &str) -> Option<Header>;
}

impl<F: FnMut(&str, bool, &str) -> Option<Header>> IncludeResolver for F {
    fn resolve(&mut self, name: &str, angled: bool, includer: &str) -> Option<Header> {
        self(name, angled, includer)
    }
}

/// A resolver that finds nothing.
pub struct NoIncludes;

impl IncludeResolver for NoIncludes {
    fn resolve(&mut self, _: &str, _: bool, _: &str) -> Option<Header> {
        None
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_output_bytes: usize,
    /// Tokens lexed and produced by expansion, all told.
    pub max_work: u64,
    pub max_include_depth: usize,
    /// Depth of macro invocations nested in arguments and of `#if` parentheses: each level is
    /// recursion, and the default fits a 256 KiB stack (the host's thread may have little).
    pub max_nesting: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_output_bytes: 64 << 20, max_work: 20_000_000, max_include_depth: 200, max_nesting: 32 }
    }
}

pub struct Input<'a> {
    /// The program's source strings, concatenated as the device compiler does.
    pub sources: &'a [&'a str],
    /// The name of the program text in markers and diagnostics.
    pub main_name: &'a str,
    /// The build options string (`-D`, `-U`, `-I` and the flags that change predefined macros
    /// are read from it).
    pub options: &'a str,
    /// From [`predefined_macros`].
    pub predefined: &'a Predefined,
    pub resolver: &'a mut dyn IncludeResolver,
    pub limits: Limits,
}

/// A message at a presumed location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diag {
    pub file: String,
    pub line: u32,
    pub message: String,
}

impl fmt::Display for Diag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MacroOrigin {
    Predefined,
    Option,
    Source,
}

/// A macro defined when preprocessing ended, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MacroDef {
    pub name: String,
    pub file: String,
    pub line: u32,
    pub function_like: bool,
    pub origin: MacroOrigin,
}

/// Output line (1-based) to presumed (file, line), as a compiler reading the output sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineMap {
    names: Vec<String>,
    lines: Vec<(u32, u32)>,
}

impl LineMap {
    pub fn lookup(&self, out_line: usize) -> Option<(&str, u32)> {
        let &(file, line) = self.lines.get(out_line.checked_sub(1)?)?;
        Some((self.names.get(file as usize).map_or("", String::as_str), line))
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preprocessed {
    pub text: String,
    pub line_map: LineMap,
    /// Why the text may not be what the device compiler sees.
    pub unsure: Vec<Diag>,
    /// `#error`s hit and preprocessing errors the device compiler would report too.
    pub errors: Vec<Diag>,
    /// `#warning`s hit.
    pub warnings: Vec<Diag>,
    /// The macro table at the end, built-ins left out.
    pub macros: Vec<MacroDef>,
    /// Headers read, by resolved name, in the order first read.
    pub headers: Vec<String>,
    /// The build options the compiler of `text` still needs.
    pub compiler_options: String,
}

impl Preprocessed {
    /// Nothing unsure and nothing in error: `text` is the program the device compiler sees.
    pub fn is_exact(&self) -> bool {
        self.unsure.is_empty() && self.errors.is_empty()
    }
}

/// Preprocessing gave up on a limit; the text is incomplete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fatal {
    OutputTooLarge(usize),
    TooMuchWork,
    TooDeep(&'static str),
}

impl fmt::Display for Fatal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fatal::OutputTooLarge(n) => write!(f, "preprocessed text larger than {n} bytes"),
            Fatal::TooMuchWork => write!(f, "preprocessing takes too much work (runaway macro expansion or includes)"),
            Fatal::TooDeep(what) => write!(f, "{what} nested too deeply"),
        }
    }
}

impl std::error::Error for Fatal {}

pub fn preprocess(input: Input<'_>) -> Result<Preprocessed, Fatal> {
    driver::run(input)
}
