//! What the rewriter is asked to do ([`RewriteRequest`]), and the request made from a validated
//! annotation: the layout of each annotated buffer (from the structure's definition in the
//! source, or flat words for a scalar pointer) and how the host lays it out.

use crate::annotation::{ExtentKind, HostLayout, KernelLayout};
use crate::clc::struct_layout::{struct_layout, StructLayout};
use crate::clc::structs::Program;
use crate::clc::typedefs::TypeClass;
use std::collections::HashMap;

/// How the application lays out a buffer on the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostKind {
    Aos,
    /// Discrete arrays in one buffer, word `s` of element `i` at `s*n + i`. `extent` is the
    /// extent as the kernel itself spells it (`n`, `get_global_size(0)`), so that subscripts
    /// written `p[c*n + i]` take the direct path; empty when the kernel has no such name (every
    /// subscript then takes the general, still exact, path).
    Soa {
        extent: String,
    },
}

#[derive(Clone, Debug)]
pub struct ParamRewrite {
    /// The parameter's index in the kernel's signature.
    pub index: usize,
    pub name: String,
    /// The structure the buffer holds; for a flat scalar pointer (`__global float *p` with
    /// `AoS(S)` or `SoA(S)`), [`StructLayout::flat`].
    pub layout: StructLayout,
    pub host: HostKind,
}

#[derive(Clone, Debug)]
pub struct RewriteRequest {
    pub kernel: String,
    /// Name of the rewritten copy, e.g. `advance__clayout_asta`.
    pub private_name: String,
    pub params: Vec<ParamRewrite>,
}

/// The rewriter's request for one kernel, and the layout of each buffer.
pub fn request(source: &str, layout: &KernelLayout) -> Result<(RewriteRequest, HashMap<String, StructLayout>), String> {
    let mut params = Vec::new();
    let mut layouts = HashMap::new();
    let prog = Program::new(source);
    for p in &layout.params {
        let l = match p.elem_class {
            TypeClass::Scalar(_) => {
                let s = p
                    .s
                    .ok_or_else(|| format!("{}: the annotation does not say how many words make an element", p.name))?;
                // `real_t` is the scalar its typedef names.
                StructLayout::flat(prog.resolve(&p.elem_type).map_err(|e| format!("{}: {e}", p.name))?, s)?
            }
            _ => struct_layout(source, &p.elem_type).map_err(|e| format!("{}: {e}", p.name))?,
        };
        if p.s.is_some_and(|s| s != l.words) || p.word.is_some_and(|w| w != l.word_bytes) {
            return Err(format!(
                "{}: the annotation's ({:?}, {:?}) words do not match `{}` ({} words of {} bytes)",
                p.name, p.s, p.word, p.elem_type, l.words, l.word_bytes
            ));
        }
        let host = match p.host {
            HostLayout::AoS { .. } => HostKind::Aos,
            HostLayout::SoA { .. } => HostKind::Soa { extent: spelling(&p.extent.kind) },
        };
        layouts.insert(p.name.clone(), l.clone());
        params.push(ParamRewrite { index: p.arg_index as usize, name: p.name.clone(), layout: l, host });
    }
    Ok((
        RewriteRequest {
            kernel: layout.kernel.clone(),
            private_name: format!("{}__clayout_asta", layout.kernel),
            params,
        },
        layouts,
    ))
}

/// The extent as the kernel itself would write it, for the rewriter's direct SoA subscripts.
fn spelling(e: &ExtentKind) -> String {
    match e {
        ExtentKind::Arg(n) => n.clone(),
        ExtentKind::GlobalSize(d) => format!("get_global_size({d})"),
        _ => String::new(),
    }
}
