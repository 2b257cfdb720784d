//! Member layouts of the structures a rewritten kernel addresses word by word, computed from
//! the source with OpenCL C's natural alignment, so that the rewriter knows which words make up
//! each member. The runtime checks the result against the device compiler with
//! [`probe_expressions`] before trusting it.

use super::structs::{find, word_bytes};
use super::types::word_scalar;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructLayout {
    pub type_name: String,
    /// S: words per structure, padding included.
    pub words: u32,
    /// w: bytes per word, 4 or 8.
    pub word_bytes: u32,
    pub members: Vec<MemberLayout>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberLayout {
    pub name: String,
    /// `float`, `int`, `uint`, `double`, `long` or `ulong`.
    pub scalar: String,
    /// 1 for a scalar; 2, 3, 4, 8 or 16 for a vector (a 3-vector occupies 4 words).
    pub lanes: u32,
    /// Array length; 1 when the member is not an array.
    pub count: u32,
    pub word_offset: u32,
}

impl MemberLayout {
    /// Words one element occupies: a 3-vector is padded to 4.
    pub fn stride(&self) -> u32 {
        if self.lanes == 3 {
            4
        } else {
            self.lanes
        }
    }

    /// The OpenCL C type of one element: `float`, `int4`.
    pub fn elem_type(&self) -> String {
        if self.lanes == 1 {
            self.scalar.clone()
        } else {
            format!("{}{}", self.scalar, self.lanes)
        }
    }
}

impl StructLayout {
    pub fn member(&self, name: &str) -> Option<&MemberLayout> {
        self.members.iter().find(|m| m.name == name)
    }

    /// A layout for a flat scalar buffer of `words` words per element (`AoS(S)`, `SoA(S)`
    /// annotations on a `float *`): one member `w` of `words` scalars.
    pub fn flat(scalar: &str, words: u32) -> Result<StructLayout, String> {
        let (scalar, size) = word_scalar(scalar)
            .map(|(s, n)| (s.name(), n))
            .ok_or_else(|| format!("`{scalar}` is not a 4- or 8-byte scalar"))?;
        Ok(StructLayout {
            type_name: scalar.to_string(),
            words,
            word_bytes: size,
            members: vec![MemberLayout {
                name: "w".into(),
                scalar: scalar.into(),
                lanes: 1,
                count: words,
                word_offset: 0,
            }],
        })
    }
}

/// The layout of structure type `type_name` (`Body`, `struct cell`) as the source defines it.
pub fn struct_layout(src: &str, type_name: &str) -> Result<StructLayout, String> {
    let def = find(src, type_name)?;
    if def.has_nested_definition(src) {
        return Err(format!("`{}` has a nested structure definition", def.name));
    }
    if def.has_attributes(src) {
        return Err(format!("`{}` has attributes that may change its layout", def.name));
    }
    let members = def.members(src)?;
    let w = word_bytes(&members)?;
    let mut out = Vec::new();
    let (mut offset, mut align) = (0u32, 1u32);
    for m in &members {
        if m.attributes {
            return Err(format!(
                "member `{}` is a nested structure, union, pointer, bit-field or has attributes",
                m.shown
            ));
        }
        let lanes = m.ty.lanes;
        let stride = if lanes == 3 { 4 } else { lanes };
        let elem_align = w * stride;
        for d in &m.declarators {
            let count =
                d.count.ok_or_else(|| format!("declarator `{}` in `{}` is not understood", d.shown, m.shown))?;
            offset = offset.div_ceil(elem_align) * elem_align;
            out.push(MemberLayout {
                name: d.name.clone(),
                scalar: m.ty.scalar.name().to_string(),
                lanes,
                count,
                word_offset: offset / w,
            });
            offset = count
                .checked_mul(elem_align)
                .and_then(|b| b.checked_add(offset))
                .ok_or("the structure is too large")?;
            align = align.max(elem_align);
        }
    }
    let size = offset.div_ceil(align) * align;
    Ok(StructLayout { type_name: def.name, words: size / w, word_bytes: w, members: out })
}

/// C expressions whose values the device compiler must agree with before the layout is used:
/// the structure's size and every member's offset, in bytes, the offsets measured on a private
/// variable `var` of the structure's type (plain C that every OpenCL compiler takes, where
/// `offsetof` builtins differ).
pub fn probe_expressions(layout: &StructLayout, var: &str) -> Vec<(String, u64)> {
    let t = &layout.type_name;
    let w = layout.word_bytes as u64;
    let mut v = vec![(format!("sizeof({t})"), layout.words as u64 * w)];
    for m in &layout.members {
        v.push((
            format!("(ulong)((__private char *)&{var}.{} - (__private char *)&{var})", m.name),
            m.word_offset as u64 * w,
        ));
    }
    v
}
