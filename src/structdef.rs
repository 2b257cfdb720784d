//! Structure definitions in OpenCL C source: which word size a structure's members share.
//!
//! clayout moves structures as S words of w bytes, so it supports structures whose members
//! are all 4-byte or all 8-byte scalars, or vectors or arrays of them. The member list comes
//! from the source; the size (and so S, padding included) comes from the compiler itself, by
//! the runtime's probe.

use crate::clc::lex::{lex, Token, TokenKind};
use crate::clc::types::Builtin;

/// The word size of the members of structure type `type_name` (as written in a kernel
/// parameter: `option_t`, `struct cell`, `Cell`), or the reason it is not supported.
pub fn word_size(src: &str, type_name: &str) -> Result<u32, String> {
    let toks = code_tokens(src);
    let def = find_definition(src, &toks, type_name)?;
    member_word_size(src, def.body)
}

/// Element size of a member type name, for the types clayout can move as words.
pub fn element_size(ty: &str) -> Option<u32> {
    Builtin::parse(ty)?.scalar.word_bytes()
}

/// The source's tokens with comments and directives removed, as the finders below expect them.
pub(crate) fn code_tokens(src: &str) -> Vec<Token> {
    lex(src).into_iter().filter(|t| !t.is_comment() && t.kind != TokenKind::Directive).collect()
}

/// A structure definition found in the source.
pub(crate) struct Definition<'t> {
    /// The tokens between the braces.
    pub body: &'t [Token],
    /// The tokens after the closing brace up to the `;` (declarator names, attributes).
    pub trailer: &'t [Token],
}

/// The definition of structure type `name` (`Cell`, `struct cell`), following one level of
/// `typedef struct tag Name;` at a time.
pub(crate) fn find_definition<'t>(src: &str, toks: &'t [Token], name: &str) -> Result<Definition<'t>, String> {
    find_body(src, toks, name.trim(), 0)
}

fn find_body<'t>(src: &str, toks: &'t [Token], name: &str, depth: u32) -> Result<Definition<'t>, String> {
    if depth > 8 {
        return Err(format!("typedef chain for `{name}` is too deep"));
    }
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
        let close = matching_brace(src, toks, open)
            .ok_or_else(|| format!("unbalanced braces in the definition of `{name}`"))?;
        let end = (close + 1..toks.len()).find(|&k| text(k) == ";").unwrap_or(toks.len());
        let def = Definition { body: &toks[open + 1..close], trailer: &toks[close + 1..end] };
        let defines = if is_tag {
            tag == Some(ident)
        } else {
            // typedef struct [tag] { ... } Name;  (the typedef may not be the declaration's
            // first word: `typedef struct __attribute__((...)) {`, so look back a little)
            let typedef = (i.saturating_sub(2)..i).any(|k| text(k) == "typedef");
            typedef && typedef_names(src, def.trailer).contains(&ident)
        };
        if defines {
            return Ok(def);
        }
    }
    if !is_tag {
        // typedef struct tag Name;
        for i in 0..toks.len().saturating_sub(4) {
            if text(i) == "typedef" && text(i + 1) == "struct" && text(i + 3) == ident && text(i + 4) == ";" {
                return find_body(src, toks, &format!("struct {}", text(i + 2)), depth + 1);
            }
        }
    }
    Err(format!("no definition of structure `{name}` found in the program source"))
}

/// Names declared by `typedef struct {...} A, B;`, from the tokens after the closing brace.
fn typedef_names<'s>(src: &'s str, trailer: &[Token]) -> Vec<&'s str> {
    trailer
        .iter()
        .filter(|t| t.kind == TokenKind::Ident)
        .map(|t| t.text(src))
        .filter(|s| !s.starts_with("__") && *s != "aligned" && *s != "packed")
        .collect()
}

fn matching_brace(src: &str, toks: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match t.text(src) {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

fn member_word_size(src: &str, body: &[Token]) -> Result<u32, String> {
    let mut word: Option<u32> = None;
    for decl in body.split(|t| t.text(src) == ";") {
        let words: Vec<&str> = decl.iter().map(|t| t.text(src)).collect();
        if words.is_empty() {
            continue;
        }
        if words.iter().any(|w| *w == "struct" || *w == "union" || *w == "{" || *w == "*") {
            return Err("a member is a nested structure, a union or a pointer".into());
        }
        if words.contains(&":") {
            return Err("a member is a bit-field".into());
        }
        let ty =
            member_type(&words).ok_or_else(|| format!("member declaration `{}` is not understood", words.join(" ")))?;
        let size =
            element_size(&ty).ok_or_else(|| format!("member type `{ty}` is not a 4- or 8-byte scalar or vector"))?;
        match word {
            None => word = Some(size),
            Some(w) if w != size => return Err("members mix 4-byte and 8-byte types".into()),
            _ => {}
        }
    }
    word.ok_or_else(|| "the structure has no members".into())
}

/// The canonical type name of a member declaration (`unsigned int a, b[4]` -> `uint`).
fn member_type(words: &[&str]) -> Option<String> {
    let quals = ["const", "volatile", "__attribute__", "signed"];
    let mut it = words.iter().copied().filter(|w| !quals.contains(w)).peekable();
    let first = it.next()?;
    let ty = if first == "unsigned" {
        match it.peek().copied() {
            Some("int") | Some("long") => format!("u{}", it.next()?),
            _ => "uint".to_string(),
        }
    } else {
        first.to_string()
    };
    // At least one declarator must follow.
    it.next().filter(|w| w.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_'))?;
    Some(ty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typedef_of_anonymous_struct() {
        let src = "typedef struct { float spot, strike; float years; float call, put; } option_t;\n__kernel void k(__global option_t *o) {}";
        assert_eq!(word_size(src, "option_t"), Ok(4));
    }

    #[test]
    fn tagged_struct_vectors_and_arrays() {
        let src = "// cell\nstruct cell { double f[19]; double2 v; };\ntypedef struct cell Cell;";
        assert_eq!(word_size(src, "struct cell"), Ok(8));
        assert_eq!(word_size(src, "Cell"), Ok(8));
    }

    #[test]
    fn unsigned_spellings() {
        let src = "typedef struct p { unsigned int a; uint b; int4 c; unsigned d; } P;";
        assert_eq!(word_size(src, "P"), Ok(4));
    }

    #[test]
    fn refusals_carry_reasons() {
        assert!(word_size("typedef struct { float a; double b; } M;", "M").unwrap_err().contains("mix"));
        assert!(word_size("typedef struct { char a; } C;", "C").unwrap_err().contains("char"));
        assert!(word_size("typedef struct { struct q x; } N;", "N").unwrap_err().contains("nested"));
        assert!(word_size("typedef struct { float *p; } Q;", "Q").is_err());
        assert!(word_size("", "Nope").unwrap_err().contains("no definition"));
        assert!(word_size("typedef struct { float a", "X").is_err());
    }

    #[test]
    fn element_sizes() {
        assert_eq!(element_size("float4"), Some(4));
        assert_eq!(element_size("ulong16"), Some(8));
        assert_eq!(element_size("float5"), None);
        assert_eq!(element_size("half"), None);
    }
}
