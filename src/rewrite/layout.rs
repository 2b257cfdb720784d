//! Member layouts of the structures a rewritten kernel addresses word by word, computed from
//! the source with OpenCL C's natural alignment, so that the rewriter knows which words make up
//! each member. The runtime checks the result against the device compiler with
//! [`probe_expressions`] before trusting it.

use crate::clc::lex::{Token, TokenKind};
use crate::clc::types::{word_scalar, Builtin};
use crate::structdef::{code_tokens, find_definition};

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
        let (scalar, size) =
            canonical_scalar(scalar).ok_or_else(|| format!("`{scalar}` is not a 4- or 8-byte scalar"))?;
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
    let toks = code_tokens(src);
    let def = find_definition(src, &toks, type_name)?;
    if def.body.iter().any(|t| t.is_punct(src, "{")) {
        return Err(format!("`{}` has a nested structure definition", type_name.trim()));
    }
    if def.trailer.iter().any(|t| t.text(src).starts_with("__attribute")) {
        return Err(format!("`{}` has attributes that may change its layout", type_name.trim()));
    }
    let body = def.body;
    let mut members = Vec::new();
    let (mut offset, mut align, mut word) = (0u32, 1u32, None::<u32>);
    for decl in body.split(|t| t.is_punct(src, ";")) {
        if decl.is_empty() {
            continue;
        }
        let text = |t: &Token| t.text(src).to_string();
        let shown = decl.iter().map(text).collect::<Vec<_>>().join(" ");
        if decl.iter().any(|t| {
            matches!(t.text(src), "struct" | "union" | "enum" | "{" | "*" | ":" | "__attribute__" | "__attribute")
        }) {
            return Err(format!("member `{shown}` is a nested structure, union, pointer, bit-field or has attributes"));
        }
        let (ty, declarators) =
            split_type(src, decl).ok_or_else(|| format!("member declaration `{shown}` is not understood"))?;
        let (scalar, lanes) =
            parse_type(&ty).ok_or_else(|| format!("member type `{ty}` is not a 4- or 8-byte scalar or vector"))?;
        let (_, size) = canonical_scalar(scalar).expect("parse_type returns canonical scalars");
        match word {
            None => word = Some(size),
            Some(w) if w != size => return Err("members mix 4-byte and 8-byte types".into()),
            _ => {}
        }
        let stride = if lanes == 3 { 4 } else { lanes };
        let elem_align = size * stride;
        for d in declarators.split(|t| t.is_punct(src, ",")) {
            let (name, count) = parse_declarator(src, d).ok_or_else(|| {
                format!(
                    "declarator `{}` in `{shown}` is not understood",
                    d.iter().map(text).collect::<Vec<_>>().join(" ")
                )
            })?;
            offset = offset.div_ceil(elem_align) * elem_align;
            members.push(MemberLayout { name, scalar: scalar.to_string(), lanes, count, word_offset: offset / size });
            offset = count
                .checked_mul(elem_align)
                .and_then(|b| b.checked_add(offset))
                .ok_or("the structure is too large")?;
            align = align.max(elem_align);
        }
    }
    let w = word.ok_or("the structure has no members")?;
    let size = offset.div_ceil(align) * align;
    Ok(StructLayout { type_name: type_name.trim().to_string(), words: size / w, word_bytes: w, members })
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

/// `float`, `unsigned int`... to the canonical OpenCL name and its size.
pub(crate) fn canonical_scalar(s: &str) -> Option<(&'static str, u32)> {
    word_scalar(s).map(|(s, n)| (s.name(), n))
}

/// A member type to its canonical scalar and lane count: `float4` -> (`float`, 4).
fn parse_type(ty: &str) -> Option<(&'static str, u32)> {
    let b = Builtin::parse(ty)?;
    b.scalar.word_bytes()?;
    Some((b.scalar.name(), b.lanes))
}

/// Splits `const unsigned int a, b[4]` into the type (`unsigned int`) and the declarators.
fn split_type<'t>(src: &str, decl: &'t [Token]) -> Option<(String, &'t [Token])> {
    let mut words = Vec::new();
    let mut i = 0;
    while i < decl.len() {
        let t = decl[i];
        let s = t.text(src);
        if t.kind != TokenKind::Ident {
            break;
        }
        if matches!(s, "const" | "volatile" | "__const") {
            i += 1;
            continue;
        }
        let type_word = matches!(s, "unsigned" | "signed" | "long" | "int") || words.is_empty();
        if !type_word {
            break;
        }
        words.push(s);
        i += 1;
    }
    if words.is_empty() || i >= decl.len() {
        return None;
    }
    Some((words.join(" "), &decl[i..]))
}

/// `name` or `name[N]` with a decimal N > 0.
fn parse_declarator(src: &str, d: &[Token]) -> Option<(String, u32)> {
    let name = d.first().filter(|t| t.kind == TokenKind::Ident)?.text(src).to_string();
    match d.len() {
        1 => Some((name, 1)),
        4 if d[1].is_punct(src, "[") && d[3].is_punct(src, "]") => {
            let n = d[2].text(src);
            let n = n.trim_end_matches(['u', 'U']);
            if n.starts_with('0') {
                return None;
            }
            n.parse().ok().filter(|&n| n > 0).map(|n| (name, n))
        }
        _ => None,
    }
}
