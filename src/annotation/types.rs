//! The type names a program defines for itself, so that validation can see through
//! `typedef uint idx_t;`, `typedef struct {...} Cell;` and `#define REAL float`.

use crate::clc::lex::{Token, TokenKind};
use crate::clc::types::{int_type, scalar_size, Builtin, IntType};
use std::collections::HashMap;

/// What a parameter's element type is, as far as the layout is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeClass {
    /// A builtin scalar of this many bytes.
    Scalar(u32),
    Vector,
    Struct,
    /// A name the source does not define (a macro with arguments, a header's type...).
    Unknown,
}

#[derive(Clone, Debug, Default)]
pub struct TypeTable {
    aliases: HashMap<String, String>,
}

/// Alias chains longer than this are cycles (`#define A B` / `#define B A`).
const MAX_ALIAS_HOPS: usize = 16;

impl TypeTable {
    /// Reads the file-scope typedefs and object-like `#define`s of tokens lexed from `src`
    /// (comments left out).
    pub fn from_tokens(src: &str, toks: &[Token]) -> TypeTable {
        let mut table = TypeTable::default();
        let mut depth = 0usize;
        let mut i = 0;
        while i < toks.len() {
            let t = toks[i];
            i += 1;
            match (t.kind, t.text(src)) {
                (TokenKind::Punct, "{") => depth += 1,
                (TokenKind::Punct, "}") => depth = depth.saturating_sub(1),
                (TokenKind::Directive, text) => table.define(text),
                (TokenKind::Ident, "typedef") if depth == 0 => i = table.typedef(src, toks, i),
                _ => {}
            }
        }
        table
    }

    /// The type a name stands for after following aliases; the name itself if it is none.
    pub fn resolve<'a>(&'a self, name: &'a str) -> &'a str {
        let mut cur = name;
        for _ in 0..MAX_ALIAS_HOPS {
            match self.aliases.get(cur) {
                Some(next) => cur = next,
                None => return cur,
            }
        }
        cur
    }

    pub fn int_type(&self, name: &str) -> Option<IntType> {
        int_type(self.resolve(name))
    }

    pub fn classify(&self, name: &str) -> TypeClass {
        let r = self.resolve(name);
        if r.starts_with("struct ") || r.starts_with("union ") {
            TypeClass::Struct
        } else if let Some(n) = scalar_size(r) {
            TypeClass::Scalar(n)
        } else if Builtin::parse(r).is_some_and(|b| b.lanes > 1) {
            TypeClass::Vector
        } else {
            TypeClass::Unknown
        }
    }

    /// `#define NAME words`, where the words could be a type; anything else is not a type alias.
    fn define(&mut self, directive: &str) {
        let rest = directive.trim_start_matches('#').trim_start();
        let Some(rest) = rest.strip_prefix("define") else {
            return;
        };
        if !rest.starts_with([' ', '\t']) {
            return;
        }
        let rest = rest.trim_start();
        let name_len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let (name, value) = rest.split_at(name_len);
        if name.is_empty() || value.starts_with('(') {
            return;
        }
        let words: Vec<&str> = value.split_whitespace().collect();
        let is_word = |w: &str| {
            w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !w.starts_with(|c: char| c.is_ascii_digit())
        };
        if !words.is_empty() && words.iter().all(|w| is_word(w)) {
            self.aliases.insert(name.to_string(), words.join(" "));
        }
    }

    /// Reads the typedef whose body starts at token `i`; returns the index after its `;`.
    fn typedef(&mut self, src: &str, toks: &[Token], i: usize) -> usize {
        let mut depth = 0usize;
        let mut end = i;
        while end < toks.len() {
            match toks[end].text(src) {
                "{" => depth += 1,
                "}" => depth = depth.saturating_sub(1),
                ";" if depth == 0 => break,
                _ => {}
            }
            end += 1;
        }
        let body = &toks[i..end];
        let text = |t: &Token| t.text(src).to_string();
        if let Some(close) = body.iter().rposition(|t| t.is_punct(src, "}")) {
            // typedef struct [tag] {...} Name[, Other];
            let kw = body.first().map(text).unwrap_or_default();
            if kw == "struct" || kw == "union" {
                let tag = body.get(1).filter(|t| t.kind == TokenKind::Ident).map(text);
                let names = &body[close + 1..];
                let plain = |k: usize| k == 0 || !names[k - 1].is_punct(src, "*");
                let mut first_name: Option<String> = None;
                for (k, t) in names.iter().enumerate() {
                    if t.kind == TokenKind::Ident && plain(k) {
                        let n = text(t);
                        let tag = tag.clone().or_else(|| first_name.clone()).unwrap_or_else(|| n.clone());
                        first_name.get_or_insert_with(|| n.clone());
                        self.aliases.insert(n, format!("{kw} {tag}"));
                    }
                }
            }
        } else if body.len() >= 2 && body.iter().all(|t| t.kind == TokenKind::Ident) {
            let words: Vec<String> = body.iter().map(text).filter(|w| w != "const" && w != "volatile").collect();
            if let Some((name, ty)) = words.split_last() {
                if !ty.is_empty() {
                    self.aliases.insert(name.clone(), ty.join(" "));
                }
            }
        }
        end + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clc::lex::lex;

    fn table(src: &str) -> TypeTable {
        let toks: Vec<Token> = lex(src).into_iter().filter(|t| !t.is_comment()).collect();
        TypeTable::from_tokens(src, &toks)
    }

    #[test]
    fn typedefs_and_defines() {
        let t = table(
            "#define REAL float\n#define SQ(x) ((x)*(x))\n#define N 64\n\
             typedef unsigned int idx_t;\ntypedef idx_t count_t;\n\
             typedef struct { float x, y; } Cell, *CellPtr;\n\
             typedef struct particle { float4 p; } Particle;\ntypedef float *fptr;\n\
             void f() { typedef int local_t; }\n#define A B\n#define B A\n",
        );
        assert_eq!(t.classify("REAL"), TypeClass::Scalar(4));
        assert_eq!(t.classify("Cell"), TypeClass::Struct);
        assert_eq!(t.classify("CellPtr"), TypeClass::Unknown);
        assert_eq!(t.resolve("Particle"), "struct particle");
        assert_eq!(t.classify("struct particle"), TypeClass::Struct);
        assert_eq!(t.classify("float4"), TypeClass::Vector);
        assert_eq!(t.classify("fptr"), TypeClass::Unknown);
        assert_eq!(t.classify("local_t"), TypeClass::Unknown);
        assert_eq!(t.classify("SQ"), TypeClass::Unknown);
        assert_eq!(t.classify("N"), TypeClass::Unknown);
        assert_eq!(t.int_type("count_t"), int_type("uint"));
        assert_eq!(t.classify("A"), TypeClass::Unknown);
    }
}
