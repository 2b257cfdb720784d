//! The OpenCL C source layer: reading the program text as the device compiler would, for the
//! annotation layer, the rewriter and the runtime. Pure text processing, no OpenCL.
//!
//! - `pp`: the preprocessor: the program as the device compiler sees it (macros expanded,
//!   conditionals resolved with the build's options, headers included, `#line` markers kept).
//! - `lex`: the lexer (tokens with byte spans and lines), shared by every reader below.
//! - `floating`: whether a kernel, with the functions it calls, computes with floating point.
//! - `signature`: the kernels of a source and their parameters.
//! - `types`: the builtin scalar and vector types and the spellings that name them.
//! - `typedefs`: the type names a program defines (typedefs, type-like macros).
//! - `structs`: structure definitions and their member declarations; the word size.
//! - `struct_layout`: where each member of a structure lies, in words.
//! - `text`: program bytes that are not all UTF-8, kept byte for byte.

pub mod floating;
pub mod lex;
pub mod pp;
pub mod signature;
pub mod struct_layout;
pub mod structs;
pub mod text;
pub mod typedefs;
pub mod types;

#[cfg(test)]
mod tests;

pub use lex::Span;
pub use signature::{kernels, AddrSpace, KernelSig, Param, SigError};
