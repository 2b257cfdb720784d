//! Which subscripts of a staged buffer provably name the work-item's own structure: the
//! global id itself (`get_global_id(0)`, through object-like macros and parentheses), or a
//! variable declared with it at the kernel's top level that nothing may change afterwards.

use crate::clc::lex::{lex, TokenKind};
use crate::clc::typedefs::TypeTable;
use crate::clc::types::is_type_word;
use crate::rewrite::funcs::{self, FnDef};
use crate::rewrite::source::{Refusal, Source, ASSIGN_OPS, R};
use std::collections::HashMap;

/// The integer types a global-id variable may have: the runtime launches only global sizes
/// that fit them.
const GID_TYPES: [&str; 5] = ["uint", "int", "size_t", "ulong", "long"];

/// Keywords after which an identifier is an expression, not a declarator.
const BEFORE_EXPR: [&str; 6] = ["return", "case", "sizeof", "else", "do", "goto"];

const QUALIFIERS: [&str; 18] = [
    "const",
    "volatile",
    "struct",
    "union",
    "enum",
    "unsigned",
    "signed",
    "static",
    "__private",
    "private",
    "__local",
    "local",
    "__global",
    "global",
    "__constant",
    "constant",
    "restrict",
    "__const",
];

/// What a subscript spells once its object-like macros are expanded and its outer parentheses
/// dropped.
enum Subscript {
    /// `get_global_id(0)`.
    GlobalId,
    /// One identifier.
    Var(String),
    Other,
}

/// Refuses unless the subscript `index` (tokens; none for `p->m`) of the staged access at
/// tokens `access` is the work-item's global id, directly or through one of `gid_vars`.
pub(in crate::rewrite) fn subscript_is_gid(
    code: &Source,
    gid_vars: &HashMap<String, Result<usize, Refusal>>,
    (first, end): (usize, usize),
    index: Option<(usize, usize)>,
    name: &str,
) -> R<()> {
    let not_gid = || {
        code.refuse(first, end, format!("the subscript of staged `{name}` is not provably the work-item's global id (`get_global_id(0)`, or a variable initialized with it at the kernel's top level and never changed): another structure may belong to another work-group"))
    };
    let Some((a, b)) = index else {
        return Err(not_gid());
    };
    let texts = (a..b).map(|k| code.text(k).to_string()).collect();
    match subscript(code, texts) {
        Subscript::GlobalId => Ok(()),
        Subscript::Var(v) => match gid_vars.get(&v) {
            Some(Ok(decl)) if *decl < a => Ok(()),
            Some(Err(why)) => Err(why.clone()),
            _ => Err(not_gid()),
        },
        Subscript::Other => Err(not_gid()),
    }
}

fn subscript(code: &Source, texts: Vec<String>) -> Subscript {
    let Some(mut t) = expand(code, texts, 0) else {
        return Subscript::Other;
    };
    while t.len() >= 2 && t[0] == "(" && t[t.len() - 1] == ")" && encloses(&t) {
        t = t[1..t.len() - 1].to_vec();
    }
    let zero = |s: &str| matches!(s, "0" | "0u" | "0U");
    match t.as_slice() {
        [f, o, z, c] if f == "get_global_id" && o == "(" && zero(z) && c == ")" => Subscript::GlobalId,
        [v] if v.starts_with(|c: char| c.is_alphabetic() || c == '_') => Subscript::Var(v.clone()),
        _ => Subscript::Other,
    }
}

/// Token texts with object-like macros expanded; none where a function-like macro (whose
/// expansion is not followed), deep nesting or a long expansion (no global id is long)
/// appears.
fn expand(code: &Source, texts: Vec<String>, depth: u32) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for t in texts {
        if out.len() > 64 {
            return None;
        }
        match code.macros.get(&t) {
            None => out.push(t),
            Some(m) if m.params.is_none() && depth < 16 => {
                let inner =
                    lex(&m.body).into_iter().filter(|k| !k.is_comment()).map(|k| k.text(&m.body).to_string()).collect();
                out.extend(expand(code, inner, depth + 1)?);
            }
            Some(_) => return None,
        }
    }
    Some(out)
}

/// The variables declared at the top level of the kernel's body as `[const] T i =
/// get_global_id(0);`, each with the token of its name, or the first construct that could
/// make it hold anything else.
pub(in crate::rewrite) fn gid_vars(code: &Source, def: &FnDef) -> HashMap<String, Result<usize, Refusal>> {
    let mut out = HashMap::new();
    let types = TypeTable::from_tokens(code.src, &code.toks);
    let (mut depth, mut start) = (0usize, def.open + 1);
    for j in def.open + 1..def.close {
        let t = code.toks[j];
        if t.kind == TokenKind::Directive && depth == 0 {
            start = j + 1;
        }
        if t.kind != TokenKind::Punct {
            continue;
        }
        match code.text(j) {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" => depth = depth.saturating_sub(1),
            "}" => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    start = j + 1;
                }
            }
            ";" if depth == 0 => {
                if let Some((name, at)) = gid_declaration(code, start, j) {
                    let misuse = gid_misuse(code, def, &types, &name, at);
                    out.insert(name, misuse.map(|()| at));
                }
                start = j + 1;
            }
            _ => {}
        }
    }
    out
}

/// `[const] T name = get_global_id(0)` at tokens `a..b`: the name and its token.
fn gid_declaration(code: &Source, a: usize, b: usize) -> Option<(String, usize)> {
    let a = a + code.is_word(a, "const") as usize;
    let name = a + 1;
    let ok = GID_TYPES.contains(&code.text(a))
        && code.toks.get(name)?.kind == TokenKind::Ident
        && !code.macros.contains_key(code.text(name))
        && code.is(name + 1, "=")
        && name + 2 < b;
    let texts = (name + 2..b).map(|k| code.text(k).to_string()).collect();
    (ok && matches!(subscript(code, texts), Subscript::GlobalId)).then(|| (code.text(name).to_string(), name))
}

/// The first use of global-id variable `name` (declared at token `decl`) in the kernel that
/// could change its value or give the name to another variable.
fn gid_misuse(code: &Source, def: &FnDef, types: &TypeTable, name: &str, decl: usize) -> R<()> {
    let mut macro_args: Vec<(usize, usize, &str)> = Vec::new();
    for j in def.open + 1..def.close {
        let t = code.toks[j];
        if t.kind != TokenKind::Ident || code.is(j - 1, ".") || code.is(j - 1, "->") {
            continue;
        }
        let s = code.text(j);
        if let Some(m) = code.macros.get(s) {
            if m.params.is_some() && code.is(j + 1, "(") {
                if let Ok(close) = code.close_of(j + 1) {
                    macro_args.push((j + 1, close, s));
                }
            }
            if funcs::mentions(&code.macros, s, name) {
                let line = code.logical(m.line);
                return Err(code.refuse(j, j + 1, format!("macro `{s}` (defined on line {line}) mentions global-id variable `{name}`: its expansion could change it")));
            }
            continue;
        }
        if s != name || j == decl {
            continue;
        }
        let op = |k: usize| {
            code.toks.get(k).is_some_and(|t| {
                t.kind == TokenKind::Punct
                    && (ASSIGN_OPS.contains(&t.text(code.src)) || matches!(t.text(code.src), "++" | "--"))
            })
        };
        // Inside a subscript, a macro's expansion cannot make the name an operand of its
        // own assignment.
        let bare_arg = macro_args.iter().find(|&&(a, b, _)| {
            a < j && j < b && {
                let opens = (a..j).filter(|&k| code.is(k, "[")).count();
                opens == (a..j).filter(|&k| code.is(k, "]")).count()
            }
        });
        let why = if declarator(code, def, types, j) {
            Some("is declared again (shadowed)")
        } else if op(j + 1) || code.is(j - 1, "++") || code.is(j - 1, "--") {
            Some("is assigned or incremented")
        } else if code.is(j - 1, "&") && code.unary(j - 1) {
            Some("has its address taken")
        } else if let Some(&(_, _, m)) = bare_arg {
            return Err(code.refuse(
                j,
                j + 1,
                format!("global-id variable `{name}` is passed to macro `{m}`, whose expansion could change it"),
            ));
        } else {
            None
        };
        if let Some(why) = why {
            let from = j - ["&", "++", "--"].iter().any(|p| code.is(j - 1, p)) as usize;
            let to = (j + 1..def.close)
                .find(|&k| [";", ")", ","].iter().any(|p| code.is(k, p)))
                .unwrap_or(def.close)
                .min(j + 6);
            return Err(code.refuse(
                from,
                to,
                format!("global-id variable `{name}` {why}: its value may no longer be the global id"),
            ));
        }
    }
    Ok(())
}

/// Whether the identifier at `j` is being declared: after a type or qualifier (`uint i`),
/// after a `*` that follows a type (`float *i`), or after a `,` in a declaration
/// (`uint k, i`).
fn declarator(code: &Source, def: &FnDef, types: &TypeTable, j: usize) -> bool {
    let prev = code.toks[j - 1];
    match prev.kind {
        TokenKind::Ident => !BEFORE_EXPR.contains(&code.text(j - 1)),
        TokenKind::Punct if code.is(j - 1, "*") => {
            code.is(j - 2, "*")
                || code.toks[j - 2].kind == TokenKind::Ident && is_type(code, types, j - 2)
                || code.is(j - 2, ",") && declaration_statement(code, def, types, j)
        }
        TokenKind::Punct if code.is(j - 1, ",") => declaration_statement(code, def, types, j),
        _ => false,
    }
}

/// Whether token `j` lies at the outer level of a statement (or a `for`'s first clause)
/// that starts with a type.
fn declaration_statement(code: &Source, def: &FnDef, types: &TypeTable, j: usize) -> bool {
    let mut depth = 0usize;
    let mut k = j;
    while k > def.open + 1 {
        k -= 1;
        if code.toks[k].kind != TokenKind::Punct {
            continue;
        }
        match code.text(k) {
            ")" | "]" | "}" => depth += 1,
            "(" | "[" | "{" if depth > 0 => depth -= 1,
            "(" if k > 0 && code.is_word(k - 1, "for") => return is_type(code, types, k + 1),
            "(" | "[" => return false,
            "{" => return is_type(code, types, k + 1),
            ";" if depth == 0 => return is_type(code, types, k + 1),
            _ => {}
        }
    }
    is_type(code, types, def.open + 1)
}

/// Whether the identifier at `j` names a type or a qualifier: a builtin scalar or vector
/// type, one of the program's `types`, a structure tag.
fn is_type(code: &Source, types: &TypeTable, j: usize) -> bool {
    let Some(t) = code.toks.get(j).filter(|t| t.kind == TokenKind::Ident) else {
        return false;
    };
    let s = t.text(code.src);
    if QUALIFIERS.contains(&s) || is_type_word(s) {
        return true;
    }
    if j > 0 && matches!(code.text(j - 1), "struct" | "union" | "enum") {
        return true;
    }
    types.is_typedef(s)
}

/// Whether the first `(` of `t` closes at its last token.
fn encloses(t: &[String]) -> bool {
    let mut depth = 0usize;
    for (k, s) in t.iter().enumerate() {
        match s.as_str() {
            "(" => depth += 1,
            ")" => {
                depth -= 1;
                if depth == 0 {
                    return k == t.len() - 1;
                }
            }
            _ => {}
        }
    }
    false
}
