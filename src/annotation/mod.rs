//! `//DL:` annotations: the comments that tell clayout how a kernel's buffers are laid out on
//! the host and which layout the kernel is written for (docs/annotations.md). Pure text
//! processing, no OpenCL: the runtime feeds it program sources, the side file and launch values.
//!
//! - `grammar`: one annotation line to an `Annotation`.
//! - `extent`: extent expressions and their checked evaluation.
//! - `validate`: annotations against a kernel's signature, giving a `KernelLayout`.
//! - `attach`: which kernel each `//DL:` comment belongs to; side-file precedence.
//! - `side_file`: the `CLAYOUT_ANNOTATIONS` file.
//! - `infer`: annotations proposed from the source (`CLAYOUT_ANNOTATIONS=auto`, `CLAYOUT_SUGGEST`).
//! - `error`: the layer's errors, at a span of an annotation or placed in the source.
//!
//! The OpenCL C it reads (tokens, kernel signatures, typedefs) comes from `crate::clc`.

pub mod attach;
pub mod error;
pub mod extent;
pub mod grammar;
pub mod infer;
pub mod side_file;
pub mod validate;

#[cfg(test)]
mod tests;

pub use attach::{annotate_program, annotations_in_source, KernelAnnotation};
pub use error::{AnnotationError, Origin, SpanError};
pub use extent::{BinOp, Extent, ExtentEnv, ExtentKind, LaunchValues};
pub use grammar::{parse_annotation, parse_extent, AnnotatedParam, Annotation, DeviceLayout, HostLayout};
pub use infer::{infer, KernelInference, Proposal};
pub use side_file::{parse_side_file, uncommented_lines, SideEntry};
pub use validate::{validate, KernelLayout, LayoutParam, PlacedAnnotation, ScalarArg};

/// Name of the macro clayout defines when it builds a program, for kernels annotated `-> ASTA`
/// (or with a thesis `AOS2ASTA_` name) that take the tile from the build.
pub const TILE_MACRO: &str = "CLAYOUT_TILE";
