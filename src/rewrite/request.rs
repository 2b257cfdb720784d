//! From a validated annotation to the rewriter's request: the layout of each annotated buffer
//! (from the structure's definition in the source, or flat words for a scalar pointer) and how
//! the host lays it out.

use super::{struct_layout, HostKind, ParamRewrite, RewriteRequest, StructLayout};
use crate::annotation::{ExtentKind, HostLayout, KernelLayout};
use crate::clc::typedefs::TypeClass;
use std::collections::HashMap;

/// The rewriter's request for one kernel, and the layout of each buffer.
pub fn request(source: &str, layout: &KernelLayout) -> Result<(RewriteRequest, HashMap<String, StructLayout>), String> {
    let mut params = Vec::new();
    let mut layouts = HashMap::new();
    for p in &layout.params {
        let l = match p.elem_class {
            TypeClass::Scalar(_) => {
                let s = p
                    .s
                    .ok_or_else(|| format!("{}: the annotation does not say how many words make an element", p.name))?;
                StructLayout::flat(&p.elem_type, s)?
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
