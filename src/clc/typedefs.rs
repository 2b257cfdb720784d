//! The type names a program defines for itself: `typedef uint idx_t;`, `typedef struct {...}
//! Cell;`, `typedef struct cell Cell;` and type-like object macros (`#define REAL float`). One
//! scan serves validation (what a parameter's type is), the structure finder (which definition
//! a name stands for) and the staged rewrite (which identifiers start a declaration).

use super::lex::{is_attribute, Token, TokenKind};
use super::types::{int_type, scalar_size, Builtin, IntType};
use std::collections::{HashMap, HashSet};

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
    /// File-scope typedefs and object-like macros that name a type: name -> type as written
    /// (`unsigned int`, `struct cell`, another alias).
    aliases: HashMap<String, String>,
    /// Every name a typedef declares, at any scope, whether or not it is an alias the table
    /// can follow (`typedef float *fptr;`).
    declared: HashSet<String>,
}

/// Alias chains longer than this are cycles (`#define A B` / `#define B A`).
const MAX_ALIAS_HOPS: usize = 16;

impl TypeTable {
    /// Reads the typedefs and object-like `#define`s of tokens lexed from `src` (comments left
    /// out).
    pub fn from_tokens(src: &str, toks: &[Token]) -> TypeTable {
        let mut table = TypeTable::default();
        let mut depth = 0usize;
        for (i, t) in toks.iter().enumerate() {
            match (t.kind, t.text(src)) {
                (TokenKind::Punct, "{") => depth += 1,
                (TokenKind::Punct, "}") => depth = depth.saturating_sub(1),
                (TokenKind::Directive, text) => table.define(text),
                (TokenKind::Ident, "typedef") => table.typedef(src, &toks[i + 1..], depth == 0),
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

    /// What `name` stands for, one alias deep.
    pub fn alias(&self, name: &str) -> Option<&str> {
        self.aliases.get(name).map(String::as_str)
    }

    /// Whether some typedef of the program declares `name`.
    pub fn is_typedef(&self, name: &str) -> bool {
        self.declared.contains(name)
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

    /// The typedef whose tokens follow `typedef` in `rest`, up to its `;`. Only file-scope
    /// typedefs become aliases: a block-scope one is not visible to a kernel's parameters.
    fn typedef(&mut self, src: &str, rest: &[Token], file_scope: bool) {
        let mut depth = 0usize;
        let end = rest
            .iter()
            .position(|t| {
                match t.text(src) {
                    "{" => depth += 1,
                    "}" => depth = depth.saturating_sub(1),
                    ";" => return depth == 0,
                    _ => {}
                }
                false
            })
            .unwrap_or(rest.len());
        let body = &rest[..end];
        let text = |t: &Token| t.text(src).to_string();
        if let Some(close) = body.iter().rposition(|t| t.is_punct(src, "}")) {
            // typedef struct [tag] {...} Name[, *Ptr, Other];
            let names = declarators(src, &body[close + 1..]);
            self.declared.extend(names.iter().map(|d| d.name.clone()));
            let kw = body.first().map(text).unwrap_or_default();
            if file_scope && (kw == "struct" || kw == "union") {
                let tag = body.get(1).filter(|t| t.kind == TokenKind::Ident && !is_attribute(t.text(src))).map(text);
                let plain: Vec<&Declarator> = names.iter().filter(|d| d.plain).collect();
                // An anonymous structure takes its first name as its tag.
                if let Some(tag) = tag.or_else(|| plain.first().map(|d| d.name.clone())) {
                    for d in plain {
                        self.aliases.insert(d.name.clone(), format!("{kw} {tag}"));
                    }
                }
            }
            return;
        }
        let names = declarators(src, body);
        self.declared.extend(names.iter().map(|d| d.name.clone()));
        if file_scope && body.len() >= 2 && body.iter().all(|t| t.kind == TokenKind::Ident) {
            let words: Vec<String> = body.iter().map(text).filter(|w| w != "const" && w != "volatile").collect();
            if let Some((name, ty)) = words.split_last() {
                if !ty.is_empty() {
                    self.aliases.insert(name.clone(), ty.join(" "));
                }
            }
        }
    }
}

/// A name a declaration declares.
pub(crate) struct Declarator {
    pub name: String,
    /// Declared as the type itself: no `*`, array or function part.
    pub plain: bool,
}

/// The names declared by the comma-separated declarators in `toks` (`A, *PA, B[4]`, the tokens
/// after a structure's closing brace or a whole typedef's body): in each, the last identifier
/// outside brackets, `__attribute__((...))` skipped.
pub(crate) fn declarators(src: &str, toks: &[Token]) -> Vec<Declarator> {
    let mut out = Vec::new();
    let (mut depth, mut name, mut plain) = (0usize, None::<&str>, true);
    let mut finish = |name: &mut Option<&str>, plain: &mut bool| {
        if let Some(n) = name.take() {
            out.push(Declarator { name: n.to_string(), plain: *plain });
        }
        *plain = true;
    };
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        let s = t.text(src);
        i += 1;
        match (t.kind, s) {
            (TokenKind::Ident, _) if depth == 0 && is_attribute(s) => {
                // Skip the attribute's parenthesized arguments.
                let mut d = 0usize;
                while i < toks.len() {
                    match toks[i].text(src) {
                        "(" => d += 1,
                        ")" => d = d.saturating_sub(1),
                        _ => {}
                    }
                    i += 1;
                    if d == 0 {
                        break;
                    }
                }
            }
            (TokenKind::Ident, _) if depth == 0 => name = Some(s),
            (TokenKind::Punct, "(" | "[") => {
                depth += 1;
                plain = false;
            }
            (TokenKind::Punct, ")" | "]") => depth = depth.saturating_sub(1),
            (TokenKind::Punct, "*") => plain = false,
            (TokenKind::Punct, ",") if depth == 0 => finish(&mut name, &mut plain),
            _ => {}
        }
    }
    finish(&mut name, &mut plain);
    out
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

    #[test]
    fn every_declared_name_and_attributes() {
        let t = table(
            "typedef struct { float x; } __attribute__((aligned(8))) Cell, *CellPtr;\n\
             typedef float *fptr, vec3[3];\nvoid f() { typedef int local_t; }\n",
        );
        for name in ["Cell", "CellPtr", "fptr", "vec3", "local_t"] {
            assert!(t.is_typedef(name), "{name}");
        }
        assert!(!t.is_typedef("aligned") && !t.is_typedef("float") && !t.is_typedef("x"));
        assert_eq!(t.resolve("Cell"), "struct Cell");
        assert_eq!(t.alias("CellPtr"), None);
    }
}
