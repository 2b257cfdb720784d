//! Structure definitions in OpenCL C source: where a structure type is defined, through
//! typedefs and type-like macros, and what its member declarations are.
//!
//! clayout moves structures as S words of w bytes, so the members it supports are 4- or 8-byte
//! scalars, vectors or arrays of them, all of one word size. The runtime needs only that size
//! ([`word_size`]; S, padding included, comes from the compiler itself, by the runtime's probe);
//! the rewriter needs each member's place (`struct_layout`), which is stricter about what it
//! accepts: an array length it cannot read or an attribute that could move a member.

use super::lex::{is_attribute, lex, matching_bracket, Token, TokenKind};
use super::typedefs::{declarators, TypeTable};
use super::types::Builtin;

/// A structure definition found in the source.
pub struct StructDef {
    /// The name it was looked up by (`Cell`, `struct cell`).
    pub name: String,
    /// The tokens between the braces, preprocessor lines left out.
    pub body: Vec<Token>,
    /// The tokens after the closing brace up to the `;` (declarator names, attributes).
    pub trailer: Vec<Token>,
}

/// One member declaration: `const float4 a, b[3];`.
pub struct Member {
    /// A word type: a 4- or 8-byte scalar or a vector of one.
    pub ty: Builtin,
    pub declarators: Vec<MemberName>,
    /// Written with `__attribute__((...))`, which may change the members' alignment.
    pub attributes: bool,
    /// The declaration as written, for messages.
    pub shown: String,
}

/// One name of a member declaration, with its array length.
pub struct MemberName {
    pub name: String,
    /// 1 for a plain member, N for `name[N]` with a decimal N > 0; `None` for a length the
    /// source does not spell as a literal (`name[LEN]`, `name[2][3]`, `name[]`).
    pub count: Option<u32>,
    /// The declarator as written, for messages.
    pub shown: String,
}

/// Typedef chains longer than this are cycles.
const MAX_HOPS: usize = 8;

/// The definition of structure type `name` (`option_t`, `struct cell`, `Cell`), following
/// typedefs (`typedef struct cell Cell;`) and type-like macros one name at a time.
pub fn find(src: &str, name: &str) -> Result<StructDef, String> {
    let name = name.trim();
    let all: Vec<Token> = lex(src).into_iter().filter(|t| !t.is_comment()).collect();
    let types = TypeTable::from_tokens(src, &all);
    // Which branch of an `#if` the compiler sees is not known here: read both.
    let code: Vec<Token> = all.into_iter().filter(|t| t.kind != TokenKind::Directive).collect();
    let mut cur = name;
    for _ in 0..=MAX_HOPS {
        if let Some(def) = definition(src, &code, cur, name)? {
            return Ok(def);
        }
        match types.alias(cur) {
            Some(next) => cur = next,
            None => return Err(format!("no definition of structure `{name}` found in the program source")),
        }
    }
    Err(format!("typedef chain for `{name}` is too deep"))
}

/// The definition that `name` names directly, `struct tag {...}` for `struct tag`, `typedef
/// struct [tag] {...} name;` for a typedef name, as the definition of `asked`.
fn definition(src: &str, toks: &[Token], name: &str, asked: &str) -> Result<Option<StructDef>, String> {
    let (is_tag, ident) = match name.strip_prefix("struct") {
        Some(rest) if rest.starts_with(char::is_whitespace) => (true, rest.trim()),
        _ => (false, name),
    };
    let text = |i: usize| toks.get(i).map(|t| t.text(src)).unwrap_or("");
    for i in 0..toks.len() {
        if text(i) != "struct" {
            continue;
        }
        let tag = (toks.get(i + 1).map(|t| t.kind) == Some(TokenKind::Ident)).then(|| text(i + 1));
        let open = if tag.is_some() { i + 2 } else { i + 1 };
        if text(open) != "{" {
            continue;
        }
        let close = matching_bracket(src, toks, open)
            .ok_or_else(|| format!("unbalanced braces in the definition of `{asked}`"))?
            - 1;
        let end = (close + 1..toks.len()).find(|&k| text(k) == ";").unwrap_or(toks.len());
        let trailer = &toks[close + 1..end];
        let defines = if is_tag {
            tag == Some(ident)
        } else {
            // typedef struct [tag] { ... } Name;  (the typedef may not be the declaration's
            // first word: `typedef const struct {`, so look back a little)
            let typedef = (i.saturating_sub(2)..i).any(|k| text(k) == "typedef");
            typedef && declarators(src, trailer).iter().any(|d| d.plain && d.name == ident)
        };
        if defines {
            let (body, trailer) = (toks[open + 1..close].to_vec(), trailer.to_vec());
            return Ok(Some(StructDef { name: asked.to_string(), body, trailer }));
        }
    }
    Ok(None)
}

impl StructDef {
    /// The member declarations, each of a word type. Array lengths and attributes are read
    /// but not judged: that is for the caller.
    pub fn members(&self, src: &str) -> Result<Vec<Member>, String> {
        let mut out = Vec::new();
        for decl in self.body.split(|t| t.is_punct(src, ";")) {
            if !decl.is_empty() {
                out.push(member(src, decl)?);
            }
        }
        Ok(out)
    }

    /// Whether a structure is defined inside this one.
    pub fn has_nested_definition(&self, src: &str) -> bool {
        self.body.iter().any(|t| t.is_punct(src, "{"))
    }

    /// Whether attributes after the closing brace (`__attribute__((packed))`) may change the
    /// layout.
    pub fn has_attributes(&self, src: &str) -> bool {
        self.trailer.iter().any(|t| t.text(src).starts_with("__attribute"))
    }
}

fn shown(src: &str, toks: &[Token]) -> String {
    toks.iter().map(|t| t.text(src)).collect::<Vec<_>>().join(" ")
}

fn member(src: &str, decl: &[Token]) -> Result<Member, String> {
    let shown_decl = shown(src, decl);
    let refused = |t: &Token| matches!(t.text(src), "struct" | "union" | "enum" | "{" | "*" | ":");
    if decl.iter().any(refused) {
        return Err(format!(
            "member `{shown_decl}` is a nested structure, union, pointer, bit-field or has attributes"
        ));
    }
    let (toks, attributes) = without_attributes(src, decl);
    let (ty, rest) =
        split_type(src, &toks).ok_or_else(|| format!("member declaration `{shown_decl}` is not understood"))?;
    let ty = Builtin::parse(&ty)
        .filter(|b| b.scalar.word_bytes().is_some())
        .ok_or_else(|| format!("member type `{ty}` is not a 4- or 8-byte scalar or vector"))?;
    let mut declarators = Vec::new();
    for d in rest.split(|t| t.is_punct(src, ",")) {
        let shown = shown(src, d);
        let name =
            member_name(src, d).ok_or_else(|| format!("declarator `{shown}` in `{shown_decl}` is not understood"))?;
        declarators.push(MemberName { name: name.0, count: name.1, shown });
    }
    Ok(Member { ty, declarators, attributes, shown: shown_decl })
}

/// The tokens with every `__attribute__((...))` taken out, and whether there was one.
fn without_attributes(src: &str, decl: &[Token]) -> (Vec<Token>, bool) {
    let mut out = Vec::new();
    let mut found = false;
    let mut i = 0;
    while i < decl.len() {
        if is_attribute(decl[i].text(src)) {
            found = true;
            i = match decl.get(i + 1) {
                Some(t) if t.is_punct(src, "(") => matching_bracket(src, decl, i + 1).unwrap_or(decl.len()),
                _ => i + 1,
            };
            continue;
        }
        out.push(decl[i]);
        i += 1;
    }
    (out, found)
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
        let type_word = matches!(s, "unsigned" | "signed" | "char" | "short" | "long" | "int") || words.is_empty();
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

/// `name` (count 1) or `name[...]`: the count when it is a decimal N > 0, else `None`.
fn member_name(src: &str, d: &[Token]) -> Option<(String, Option<u32>)> {
    let name = d.first().filter(|t| t.kind == TokenKind::Ident)?.text(src).to_string();
    if d.len() == 1 {
        return Some((name, Some(1)));
    }
    if !(d[1].is_punct(src, "[") && d[d.len() - 1].is_punct(src, "]")) {
        return None;
    }
    let literal = || {
        let n = d[2].text(src).trim_end_matches(['u', 'U']);
        if n.starts_with('0') {
            return None;
        }
        n.parse().ok().filter(|&n| n > 0)
    };
    Some((name, if d.len() == 4 { literal() } else { None }))
}

/// The bytes of the words every member shares.
pub fn word_bytes(members: &[Member]) -> Result<u32, String> {
    let mut word: Option<u32> = None;
    for m in members {
        let size = m.ty.scalar.word_bytes().unwrap_or(0);
        match word {
            None => word = Some(size),
            Some(w) if w != size => return Err("members mix 4-byte and 8-byte types".into()),
            _ => {}
        }
    }
    word.ok_or_else(|| "the structure has no members".into())
}

/// The word size of the members of structure type `type_name` (as written in a kernel
/// parameter: `option_t`, `struct cell`, `Cell`), or the reason it is not supported.
pub fn word_size(src: &str, type_name: &str) -> Result<u32, String> {
    word_bytes(&find(src, type_name)?.members(src)?)
}
