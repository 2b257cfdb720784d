//! Member layouts of the structures a rewritten kernel addresses word by word, computed from
//! the source with OpenCL C's natural alignment, so that the rewriter knows which bytes make up
//! each member. The runtime checks the result against the device compiler with
//! [`probe_expressions`] before trusting it.
//!
//! A structure is moved as S words of w bytes (w = 4 or 8, see
//! [`word_of_sizes`](super::structs::word_of_sizes)): a scalar member of w bytes is one word; a
//! smaller one (a `char`, a `short`, the lanes of a `uchar4`) lies inside one word, which the
//! conversions move as a whole, so it keeps its byte offset inside that word; a larger one (a
//! `double` in 4-byte words) spans consecutive words of the same structure. Nested structures
//! and arrays of them are members like any other, their own members at offsets from theirs.

use super::structs::{word_of_sizes, MemberType, Program, StructDef, MAX_NESTING};
use super::types::{word_scalar, Builtin, Scalar};

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StructLayout {
    pub type_name: String,
    /// S: words per structure, padding included.
    pub words: u32,
    /// w: bytes per word, 4 or 8.
    pub word_bytes: u32,
    /// Bytes of one structure: `words * word_bytes` for the buffer's structure; a structure
    /// nested in another may be smaller than a whole number of the outer structure's words.
    pub bytes: u32,
    pub members: Vec<MemberLayout>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MemberLayout {
    pub name: String,
    /// The scalar of a builtin member (`float`, `uchar`, `double`); empty for a structure.
    pub scalar: String,
    /// 1 for a scalar; 2, 3, 4, 8 or 16 for a vector (a 3-vector occupies 4 lanes).
    pub lanes: u32,
    /// Array dimensions, outermost first; empty when the member is not an array.
    pub dims: Vec<u32>,
    /// Elements: the product of the dimensions, 1 when the member is not an array.
    pub count: u32,
    /// Bytes from the start of the enclosing structure.
    pub byte_offset: u32,
    /// `byte_offset / word_bytes`: the word the member starts in.
    pub word_offset: u32,
    /// Bytes of one element (a 3-vector counts its fourth lane).
    pub elem_bytes: u32,
    /// A member of structure type: that structure's layout, offsets from this member's start.
    pub nested: Option<Box<StructLayout>>,
}

impl MemberLayout {
    /// Bytes of one scalar lane (0 for a structure member).
    pub fn scalar_bytes(&self) -> u32 {
        Scalar::parse(&self.scalar).and_then(Scalar::size).unwrap_or(0)
    }

    /// The OpenCL C type of one element: `float`, `int4`, or the structure's type name.
    pub fn elem_type(&self) -> String {
        match &self.nested {
            Some(n) => n.type_name.clone(),
            None if self.lanes == 1 => self.scalar.clone(),
            None => format!("{}{}", self.scalar, self.lanes),
        }
    }

    /// Elements per step of dimension `d` (the product of the dimensions after it).
    pub fn dim_stride(&self, d: usize) -> u32 {
        self.dims[d + 1..].iter().product()
    }
}

impl StructLayout {
    pub fn member(&self, name: &str) -> Option<&MemberLayout> {
        self.members.iter().find(|m| m.name == name)
    }

    /// A layout for a flat scalar buffer of `words` words per element (`AoS(S)`, `SoA(S)`
    /// annotations on a `float *`): one member `w` of `words` scalars. `scalar` is a builtin
    /// name as the source resolves it (through its typedefs).
    pub fn flat(scalar: &str, words: u32) -> Result<StructLayout, String> {
        let (scalar, size) = word_scalar(scalar)
            .map(|(s, n)| (s.name(), n))
            .ok_or_else(|| format!("`{scalar}` is not a 4- or 8-byte scalar"))?;
        Ok(StructLayout {
            type_name: scalar.to_string(),
            words,
            word_bytes: size,
            bytes: words * size,
            members: vec![MemberLayout {
                name: "w".into(),
                scalar: scalar.into(),
                lanes: 1,
                dims: vec![words],
                count: words,
                byte_offset: 0,
                word_offset: 0,
                elem_bytes: size,
                nested: None,
            }],
        })
    }

    /// Every leaf (builtin) member with the path that reaches it from a structure variable
    /// (`pos.x`, `f[0].v`, `a[0]`: arrays at their first element) and its byte offset; then,
    /// for each array, its last element, whose offset checks the element size.
    pub fn paths(&self) -> Vec<(String, u32)> {
        let mut out = Vec::new();
        paths_into(self, "", 0, &mut out);
        out
    }
}

fn paths_into(l: &StructLayout, prefix: &str, base: u32, out: &mut Vec<(String, u32)>) {
    for m in &l.members {
        let first: String = m.dims.iter().map(|_| "[0]").collect();
        let path = format!("{prefix}{}{first}", m.name);
        match &m.nested {
            Some(n) => paths_into(n, &format!("{path}."), base + m.byte_offset, out),
            None => out.push((path, base + m.byte_offset)),
        }
        if m.count > 1 {
            let last: String = m.dims.iter().map(|d| format!("[{}]", d - 1)).collect();
            out.push((format!("{prefix}{}{last}", m.name), base + m.byte_offset + (m.count - 1) * m.elem_bytes));
        }
    }
}

/// The layout of structure type `type_name` (`Body`, `struct cell`) as the source defines it.
pub fn struct_layout(src: &str, type_name: &str) -> Result<StructLayout, String> {
    let prog = Program::new(src);
    let def = prog.find(type_name)?;
    let mut sizes = Vec::new();
    let mut laid = lay(&prog, &def, 0, &mut sizes)?;
    let w = word_of_sizes(sizes).ok_or("the structure has no members")?;
    if laid.bytes % w != 0 {
        return Err(format!(
            "`{}` is {} bytes, not a whole number of {w}-byte words: its members are too narrow for the conversions, which move 4- and 8-byte words",
            def.name, laid.bytes
        ));
    }
    laid.type_name = def.name;
    set_words(&mut laid, w);
    laid.words = laid.bytes / w;
    Ok(laid)
}

fn set_words(l: &mut StructLayout, w: u32) {
    l.word_bytes = w;
    l.words = l.bytes / w;
    for m in &mut l.members {
        m.word_offset = m.byte_offset / w;
        if let Some(n) = &mut m.nested {
            set_words(n, w);
        }
    }
}

/// The layout of `def` with offsets in bytes (words not yet known), pushing the size of every
/// scalar lane it holds onto `sizes`.
fn lay(prog: &Program, def: &StructDef, depth: usize, sizes: &mut Vec<u32>) -> Result<StructLayout, String> {
    if depth > MAX_NESTING {
        return Err(format!("structures nested more than {MAX_NESTING} deep in `{}`", def.name));
    }
    if def.has_attributes(prog.src) {
        return Err(format!("`{}` has attributes that may change its layout", def.name));
    }
    let mut out = Vec::new();
    let (mut offset, mut align) = (0u32, 1u32);
    for m in def.members(prog)? {
        if m.attributes {
            return Err(format!("member `{}` has attributes that may change its layout", m.shown));
        }
        // (scalar, lanes, element bytes, alignment, nested layout)
        let (scalar, lanes, elem_bytes, elem_align, nested) = match &m.ty {
            MemberType::Builtin(b) => {
                let size = builtin_size(*b)?;
                sizes.push(b.scalar.size().unwrap_or(0));
                (b.scalar.name().to_string(), b.lanes, size, size, None)
            }
            MemberType::Named(n) => {
                let inner = prog.find(n)?;
                let mut l = lay(prog, &inner, depth + 1, sizes)?;
                l.type_name = n.clone();
                (String::new(), 1, l.bytes, struct_align(&l), Some(Box::new(l)))
            }
            MemberType::Inline(d) => {
                // A structure without a name of its own: its members are reached, but the copy
                // cannot spell its type (a whole load of it is refused there).
                let l = lay(prog, d, depth + 1, sizes)?;
                (
                    String::new(),
                    1,
                    l.bytes,
                    struct_align(&l),
                    Some(Box::new(StructLayout { type_name: String::new(), ..l })),
                )
            }
        };
        for d in &m.declarators {
            let dims =
                d.dims.clone().ok_or_else(|| format!("declarator `{}` in `{}` is not understood", d.shown, m.shown))?;
            let count = dims.iter().try_fold(1u32, |a, &n| a.checked_mul(n)).ok_or("the structure is too large")?;
            offset = offset.div_ceil(elem_align) * elem_align;
            out.push(MemberLayout {
                name: d.name.clone(),
                scalar: scalar.clone(),
                lanes,
                dims,
                count,
                byte_offset: offset,
                word_offset: 0,
                elem_bytes,
                nested: nested.clone(),
            });
            offset = count
                .checked_mul(elem_bytes)
                .and_then(|b| b.checked_add(offset))
                .ok_or("the structure is too large")?;
            align = align.max(elem_align);
        }
    }
    if out.is_empty() {
        return Err("the structure has no members".into());
    }
    let bytes = offset.div_ceil(align) * align;
    Ok(StructLayout { type_name: def.name.clone(), words: 0, word_bytes: 0, bytes, members: out })
}

/// Bytes (and alignment) of a builtin: a 3-vector takes four lanes.
fn builtin_size(b: Builtin) -> Result<u32, String> {
    let s = b.scalar.size().ok_or_else(|| format!("`{}` has no fixed size", b.scalar.name()))?;
    Ok(s * if b.lanes == 3 { 4 } else { b.lanes })
}

/// A structure's alignment: its largest member's.
fn struct_align(l: &StructLayout) -> u32 {
    l.members
        .iter()
        .map(|m| match &m.nested {
            Some(n) => struct_align(n),
            None => m.elem_bytes,
        })
        .max()
        .unwrap_or(1)
}

/// C expressions whose values the device compiler must agree with before the layout is used:
/// the structure's size, every nested structure's, and the offset of every leaf member (arrays
/// at their first and last element), in bytes, measured on a private variable `var` of the
/// structure's type (plain C that every OpenCL compiler takes, where `offsetof` builtins
/// differ).
pub fn probe_expressions(layout: &StructLayout, var: &str) -> Vec<(String, u64)> {
    let t = &layout.type_name;
    let mut v = vec![(format!("sizeof({t})"), layout.bytes as u64)];
    let mut nested = Vec::new();
    nested_sizes(layout, &mut nested);
    for (name, bytes) in nested {
        if !v.iter().any(|(e, _)| *e == format!("sizeof({name})")) {
            v.push((format!("sizeof({name})"), bytes as u64));
        }
    }
    for (path, off) in layout.paths() {
        v.push((format!("(ulong)((__private char *)&{var}.{path} - (__private char *)&{var})"), off as u64));
    }
    v
}

fn nested_sizes(l: &StructLayout, out: &mut Vec<(String, u32)>) {
    for m in &l.members {
        if let Some(n) = &m.nested {
            if !n.type_name.is_empty() {
                out.push((n.type_name.clone(), n.bytes));
            }
            nested_sizes(n, out);
        }
    }
}
