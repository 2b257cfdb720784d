//! A buffer being rewritten, as one function of the copy sees it (its name there, its layout,
//! how the kernel addresses it and where its words now live), and what the access forms hand
//! each other about one access to it.

use super::emit::Space;
use crate::clc::struct_layout::{MemberLayout, StructLayout};

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

/// An access to one structure of a target, its subscript already rewritten.
pub(crate) struct Access {
    /// Its first token: the `&`, the `(` of `(p + e)->`, or the target itself.
    pub first: usize,
    /// Taken as an address: `&p[i].m`.
    pub addr: bool,
    pub g: Target,
    /// The structure's index, as the rewritten code computes it.
    pub index: String,
    /// Whether evaluating the subscript twice is the same as once.
    pub pure: bool,
}

/// A member of the structure an access reaches: its tokens end before `end`, its words start
/// at word `offset` of the structure (a sum for an array member's element).
pub(crate) struct MemberAt {
    pub mem: MemberLayout,
    pub end: usize,
    pub offset: String,
    /// Whether evaluating the element's subscript twice is the same as once.
    pub pure: bool,
}
