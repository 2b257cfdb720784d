//! A buffer being rewritten, as one function of the copy sees it: its name there, its layout,
//! how the kernel addresses it and where its words now live.

use super::emit::Space;
use crate::clc::struct_layout::StructLayout;

#[derive(Clone, Debug)]
pub(crate) enum Kind {
    /// A pointer to the structure: `p[i].m`.
    Struct,
    /// A flat scalar pointer into AoS words: `p[i*S + s]`.
    FlatAos,
    /// A flat scalar pointer into SoA words, with the extent's tokens for `p[s*n + i]`.
    FlatSoa { extent: Vec<String> },
}

#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub name: String,
    /// The `ulong` parameter holding M in that function.
    pub m: String,
    pub layout: StructLayout,
    /// The scalar the rewritten parameter points to.
    pub base: String,
    pub is_const: bool,
    pub kind: Kind,
    /// Where its accesses point: the buffer, or (staged kernels only) a local copy.
    pub space: Space,
}

impl Target {
    /// The words an access reads: the buffer, or its local copy of `base` words.
    pub fn array(&self) -> String {
        match self.space {
            Space::Asta => self.name.clone(),
            Space::Local => format!("clayout_stage_{}", self.name),
        }
    }

    /// What a helper copy depends on, for naming it.
    pub fn descriptor(&self) -> String {
        let kind = match &self.kind {
            Kind::Struct => "struct",
            Kind::FlatAos => "aos",
            Kind::FlatSoa { .. } => "soa",
        };
        format!("{kind}:{}:{}:{}", self.layout.type_name, self.layout.words, self.layout.word_bytes)
    }
}
