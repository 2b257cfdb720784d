//! A pointer into a buffer being rewritten, as one function of the copy sees it: the buffer's
//! layout, where its words now live, what the pointer points to (the structure, one scalar or
//! vector type of the buffer's bytes) and its offset from the buffer's start; and what the
//! access forms hand each other about one access through it.
//!
//! Every pointer derived from a rewritten buffer (the parameter itself, `q = p + i`,
//! `&p[i].x`, `(__global float *)p`, a helper's parameter) is followed as the buffer and an
//! integer offset, in units of what it points to, from the start of the buffer as the kernel
//! as written sees it (the AoS byte stream). The copy keeps that offset in an integer variable
//! where the kernel keeps a pointer, so that pointer arithmetic, comparisons and `?:` keep their
//! text; only the accesses through it are rewritten.

use super::emit::Space;
use crate::clc::struct_layout::{MemberLayout, StructLayout};
use crate::clc::types::Scalar;
use std::collections::HashMap;

/// How the application lays the buffer out on the host, which the copy's index arithmetic
/// maps to ASTA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Host {
    /// Structures one after another: word k of the byte stream is word k % S of structure
    /// k / S.
    Aos,
    /// A flat scalar buffer in SoA words, with the extent's tokens for `p[s*n + i]`.
    Soa { extent: Vec<String> },
}

/// What a followed pointer points to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum View {
    /// The buffer's structure: offsets count structures.
    Struct,
    /// A scalar (`float`, `uchar`, `double`) of the buffer's bytes: offsets count scalars.
    Scalar(String),
    /// A vector (`float2`, `float4`): offsets count its scalars, elements are `stride()`
    /// scalars apart.
    Vector(String, u32),
}

impl View {
    /// The scalar a scalar or vector view counts in.
    pub fn scalar(&self) -> Option<&str> {
        match self {
            View::Struct => None,
            View::Scalar(s) | View::Vector(s, _) => Some(s),
        }
    }

    /// Bytes of the scalar the offsets count (0 for a structure view).
    pub fn scalar_bytes(&self) -> u32 {
        self.scalar().and_then(Scalar::parse).and_then(Scalar::size).unwrap_or(0)
    }

    /// The type as the kernel spells it: the structure's, `float`, `float4`.
    pub fn type_name(&self, layout: &StructLayout) -> String {
        match self {
            View::Struct => layout.type_name.clone(),
            View::Scalar(s) => s.clone(),
            View::Vector(s, n) => format!("{s}{n}"),
        }
    }

    /// Offset units per element: 1, or a vector's lanes (4 for a 3-vector).
    pub fn stride(&self) -> u32 {
        match self {
            View::Vector(_, 3) => 4,
            View::Vector(_, n) => *n,
            _ => 1,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Target {
    /// The name the function's source gives this pointer.
    pub name: String,
    /// The buffer's words in the copy: the rewritten parameter of this function.
    pub buffer: String,
    /// The `ulong` parameter holding M in that function.
    pub m: String,
    pub layout: StructLayout,
    /// The scalar the rewritten parameter points to.
    pub base: String,
    pub is_const: bool,
    pub host: Host,
    pub view: View,
    /// Where its accesses point: the buffer, or (staged kernels only) a local copy.
    pub space: Space,
    /// The variable holding its offset in the copy; `None` while it is the buffer's start.
    pub off: Option<String>,
    /// A parameter of the function (rather than a local variable of the kernel's).
    pub param: bool,
}

impl Target {
    /// The words an access reads: the buffer, or its local copy of `base` words.
    pub fn array(&self) -> String {
        match self.space {
            Space::Asta => self.buffer.clone(),
            Space::Local => format!("clayout_stage_{}", self.buffer),
        }
    }

    /// What a helper copy depends on, for naming it.
    pub fn descriptor(&self) -> String {
        let host = match &self.host {
            Host::Aos => "aos",
            Host::Soa { .. } => "soa",
        };
        let view = match &self.view {
            View::Struct => "struct".to_string(),
            v => v.type_name(&self.layout),
        };
        format!(
            "{host}:{view}:{}:{}:{}:{}:{}",
            self.layout.type_name,
            self.layout.words,
            self.layout.word_bytes,
            self.base,
            self.off.is_some()
        )
    }

    /// The offset's integer type in the copy: the index type, or `ulong` where it counts
    /// scalars narrower than a word (their count may pass 2^32 where the words' does not).
    pub fn off_type(&self) -> &'static str {
        off_type(&self.view, self.layout.word_bytes)
    }
}

pub(crate) fn off_type(view: &View, word_bytes: u32) -> &'static str {
    match view.scalar_bytes() {
        t if t > 0 && t < word_bytes => "ulong",
        _ => "clayout_idx",
    }
}

/// The names a function's body can reach buffers by: its parameters for the whole body, and
/// followed local pointers from their declaration to the end of their scope. A local of the
/// same name that the rewriter does not follow hides them within its own scope.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ctx {
    pub targets: Vec<Target>,
    /// (name, first token, end token, the target it names there: `None` for a local that is
    /// not followed)
    pub scopes: Vec<(String, usize, usize, Option<usize>)>,
    /// Declarations of followed locals, by their first token.
    pub decls: HashMap<usize, Decl>,
}

/// One declarator of a followed local: its name's token, its initializer's tokens, the target
/// it declares.
pub(crate) type Declared = (usize, Option<(usize, usize)>, usize);

/// A declaration of followed local pointers, rewritten as one of their offsets.
#[derive(Clone, Debug)]
pub(crate) struct Decl {
    /// The offsets' type.
    pub ty: &'static str,
    pub declarators: Vec<Declared>,
    /// The declaration's `;`.
    pub end: usize,
}

impl Ctx {
    /// The target a name at token `j` refers to, if any.
    pub fn lookup(&self, name: &str, j: usize) -> Option<usize> {
        self.scopes
            .iter()
            .filter(|(n, a, b, _)| n == name && *a <= j && j < *b)
            .max_by_key(|(_, a, _, _)| *a)
            .and_then(|s| s.3)
    }
}

/// An access to one structure or element through a target, its index already rewritten.
pub(crate) struct Access {
    /// Its first token: the `*`, the `(` of `(p + e)->`, or the pointer itself.
    pub first: usize,
    pub g: Target,
    /// The structure's index (structure views) or the element's offset in the view's units,
    /// as the rewritten code computes it.
    pub index: String,
    /// Whether evaluating the subscript twice is the same as once.
    pub pure: bool,
}

/// A member of the structure an access reaches: its tokens end before `end`, its scalars start
/// at `offset` (in units of its scalar, for a builtin member; a sum for an array's element).
pub(crate) struct MemberAt {
    pub mem: MemberLayout,
    pub end: usize,
    pub offset: String,
    /// Whether evaluating the element's subscript twice is the same as once.
    pub pure: bool,
}
