//! Checking a kernel's annotations against its signature, and what the runtime needs from the
//! result: per buffer argument its layouts, shape and extent, per scalar argument that extents
//! read its index and integer type.

use super::error::{error_in, AnnotationError, Origin};
use super::extent::Extent;
use super::grammar::{Annotation, DeviceLayout, HostLayout};
use crate::clc::lex::Span;
use crate::clc::signature::{AddrSpace, KernelSig};
use crate::clc::typedefs::{TypeClass, TypeTable};
use crate::clc::types::IntType;

/// An annotation with the text it was parsed from and where that text starts, so that errors
/// found after parsing can still point at a line and column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacedAnnotation {
    pub annotation: Annotation,
    pub text: String,
    pub origin: Origin,
    pub line: u32,
    /// 1-based column of `text`'s first character.
    pub column: u32,
}

impl PlacedAnnotation {
    pub fn error_at(&self, span: Span, reason: impl Into<String>) -> AnnotationError {
        error_in(&self.text, self.origin, self.line, self.column, span, reason)
    }
}

/// One annotated buffer argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutParam {
    pub arg_index: u32,
    pub name: String,
    /// The pointee type as written, and what it resolves to.
    pub elem_type: String,
    pub elem_class: TypeClass,
    pub host: HostLayout,
    /// Words per element and bytes per word: from the annotation, else from a scalar element
    /// type; `None` only for a structure type, whose definition gives them.
    pub s: Option<u32>,
    pub word: Option<u32>,
    pub extent: Extent,
    /// `None`: the kernel is written for the host layout and runs unchanged.
    pub device: Option<DeviceLayout>,
    /// Annotated `out`: the kernel writes every word of the extent's structures before it
    /// reads any of them.
    pub out: bool,
}

/// A scalar argument that some extent reads.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScalarArg {
    pub arg_index: u32,
    pub name: String,
    pub int_type: IntType,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelLayout {
    pub kernel: String,
    pub params: Vec<LayoutParam>,
    pub scalar_args: Vec<ScalarArg>,
}

impl KernelLayout {
    /// Whether some buffer is declared in a device layout, i.e. clayout must marshal.
    pub fn marshals(&self) -> bool {
        self.params.iter().any(|p| p.device.is_some())
    }
}

/// Checks the annotations of one kernel together: every named buffer must be a `__global`
/// pointer parameter, annotated once; every argument an extent reads an integer scalar.
pub fn validate(
    sig: &KernelSig,
    types: &TypeTable,
    anns: &[PlacedAnnotation],
) -> Result<KernelLayout, AnnotationError> {
    let mut out = KernelLayout { kernel: sig.name.clone(), params: Vec::new(), scalar_args: Vec::new() };
    let k = &sig.name;
    for placed in anns {
        let a = &placed.annotation;
        for p in &a.params {
            let fail = |reason: String| placed.error_at(p.span, reason);
            let Some((index, param)) = sig.param(&p.name) else {
                return Err(fail(format!("`{}` is not a parameter of kernel `{k}`", p.name)));
            };
            if !param.pointer {
                return Err(fail(format!("`{}` is a scalar, not a __global pointer", p.name)));
            }
            if param.space != AddrSpace::Global {
                return Err(fail(format!(
                    "`{}` is a {} pointer; only __global buffers have a layout",
                    p.name, param.space
                )));
            }
            if out.params.iter().any(|q| q.name == p.name) {
                return Err(fail(format!("`{}` is annotated twice for kernel `{k}`", p.name)));
            }
            if p.out && param.is_const {
                return Err(fail(format!(
                    "`{}` is annotated `out` but points to const: the kernel cannot write it",
                    p.name
                )));
            }
            let class = types.classify(&param.type_name);
            let (s, word) = shape(a.host, class, &param.type_name).map_err(|r| placed.error_at(a.host_span, r))?;
            for (name, span) in p.extent.args() {
                let arg = scalar_arg(sig, types, name).map_err(|r| placed.error_at(span, r))?;
                if !out.scalar_args.iter().any(|x| x.name == arg.name) {
                    out.scalar_args.push(arg);
                }
            }
            out.params.push(LayoutParam {
                arg_index: index as u32,
                name: p.name.clone(),
                elem_type: param.type_name.clone(),
                elem_class: class,
                host: a.host,
                s,
                word,
                extent: p.extent.clone(),
                device: a.device.clone(),
                out: p.out,
            });
        }
    }
    Ok(out)
}

/// Words per element and word size, from the annotation or the element type.
fn shape(host: HostLayout, class: TypeClass, ty: &str) -> Result<(Option<u32>, Option<u32>), String> {
    let name = if host.is_aos() { "AoS" } else { "SoA" };
    match (host.shape(), class) {
        (given, TypeClass::Struct) => Ok(given),
        ((Some(s), Some(w)), _) => Ok((Some(s), Some(w))),
        ((Some(s), None), TypeClass::Scalar(w)) => Ok((Some(s), Some(w))),
        ((None, _), TypeClass::Scalar(_)) => Err(format!(
            "the buffer's elements are `{ty}`, not a structure: write {name}(S) with the number of words per element"
        )),
        _ => Err(format!("cannot tell the word size of `{ty}`: write {name}(S, W) with W in bytes")),
    }
}

fn scalar_arg(sig: &KernelSig, types: &TypeTable, name: &str) -> Result<ScalarArg, String> {
    let Some((index, param)) = sig.param(name) else {
        return Err(format!("`{name}` is not a parameter of kernel `{}`", sig.name));
    };
    if param.pointer {
        return Err(format!("`{name}` is a pointer, not an integer scalar"));
    }
    match types.int_type(&param.type_name) {
        Some(int_type) => Ok(ScalarArg { arg_index: index as u32, name: name.to_string(), int_type }),
        None => Err(format!("`{name}` has type `{}`, not an integer type", param.type_name)),
    }
}
