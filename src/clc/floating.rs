//! Whether a kernel computes with floating-point values: a conservative reading of the
//! preprocessed program, for the decisions whose only risk is floating-point rounding (a
//! compiler that may fuse `a*b+c` differently in a rewritten copy). A kernel is integer-only
//! when neither it nor any function it calls, directly or not, names a floating-point type
//! (scalar or vector, through a typedef, a structure or a file-scope variable too), a builtin
//! that takes or gives one, or writes a floating literal. Anything unclear counts as floating.

use super::lex::{is_attribute, lex, matching_bracket, Token, TokenKind};
use std::collections::{HashMap, HashSet};

/// Whether kernel (or function) `kernel` of preprocessed program `src` may compute with
/// floating-point values. True when its definition is not found.
pub fn uses_floating_point(src: &str, kernel: &str) -> bool {
    let toks: Vec<Token> = lex(src).into_iter().filter(|t| !t.is_comment() && t.kind != TokenKind::Directive).collect();
    let Some(items) = items(src, &toks) else { return true };
    // File-scope names whose declaration involves floating point, in source order: a name is
    // declared before it is used.
    let mut floating_names: HashSet<&str> = HashSet::new();
    let mut functions: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
    for item in &items {
        let range = &toks[item.start..item.end];
        match item.function {
            Some(name) => functions.entry(name.text(src)).or_default().push((item.start, item.end)),
            None => {
                if range.iter().any(|t| floating_token(src, *t) || floating_names.contains(t.text(src))) {
                    floating_names.extend(declared(src, range));
                }
            }
        }
    }
    let mut seen: HashSet<&str> = HashSet::from([kernel]);
    let mut work = vec![kernel];
    let mut found = false;
    while let Some(f) = work.pop() {
        for &(start, end) in functions.get(f).map(Vec::as_slice).unwrap_or(&[]) {
            found |= f == kernel;
            for t in &toks[start..end] {
                let text = t.text(src);
                if floating_token(src, *t) || floating_names.contains(text) {
                    return true;
                }
                if t.kind == TokenKind::Ident && functions.contains_key(text) && seen.insert(text) {
                    work.push(text);
                }
            }
        }
    }
    !found
}

/// One file-scope declaration or function definition: its tokens, and the function's name
/// token when it is a definition.
struct Item {
    start: usize,
    end: usize,
    function: Option<Token>,
}

/// The program's file-scope items; None when its brackets do not match (text that does not
/// compile, read as floating).
fn items(src: &str, toks: &[Token]) -> Option<Vec<Item>> {
    let mut items = Vec::new();
    let mut start = 0;
    let mut name: Option<Token> = None;
    let mut j = 0;
    while j < toks.len() {
        let t = toks[j];
        let text = t.text(src);
        if t.kind == TokenKind::Ident && is_attribute(text) {
            j = if toks.get(j + 1).is_some_and(|n| n.is_punct(src, "(")) {
                matching_bracket(src, toks, j + 1)?
            } else {
                j + 1
            };
            continue;
        }
        if t.is_punct(src, "(") {
            if name.is_none() && j > start && toks[j - 1].kind == TokenKind::Ident {
                name = Some(toks[j - 1]);
            }
            j = matching_bracket(src, toks, j)?;
            continue;
        }
        if t.is_punct(src, "[") {
            j = matching_bracket(src, toks, j)?;
            continue;
        }
        if t.is_punct(src, "{") {
            let close = matching_bracket(src, toks, j)?;
            // A body right after a parameter list (attributes skipped above) is a definition.
            let after_params = (start..j).rev().find(|&k| !is_attribute_part(src, toks, start, k));
            if name.is_some() && after_params.is_some_and(|k| toks[k].is_punct(src, ")")) {
                items.push(Item { start, end: close, function: name });
                start = close;
                name = None;
            }
            j = close;
            continue;
        }
        if t.is_punct(src, ";") {
            items.push(Item { start, end: j + 1, function: None });
            start = j + 1;
            name = None;
        }
        j += 1;
    }
    if start < toks.len() {
        items.push(Item { start, end: toks.len(), function: None });
    }
    Some(items)
}

/// Whether token `k` belongs to an `__attribute__((...))` that starts after `start`.
fn is_attribute_part(src: &str, toks: &[Token], start: usize, k: usize) -> bool {
    (start..=k).any(|a| {
        toks[a].kind == TokenKind::Ident
            && is_attribute(toks[a].text(src))
            && toks.get(a + 1).is_some_and(|n| n.is_punct(src, "("))
            && matching_bracket(src, toks, a + 1).is_some_and(|end| k < end)
    })
}

/// The names a file-scope declaration gives: structure, union and enumeration tags, and the
/// declarators at its outer level (a typedef's name, a variable's).
fn declared<'s>(src: &'s str, range: &[Token]) -> Vec<&'s str> {
    let mut names = Vec::new();
    let mut depth = 0i32;
    for (i, t) in range.iter().enumerate() {
        let text = t.text(src);
        match text {
            "{" | "(" | "[" if t.kind == TokenKind::Punct => depth += 1,
            "}" | ")" | "]" if t.kind == TokenKind::Punct => depth -= 1,
            _ => {}
        }
        if t.kind != TokenKind::Ident {
            continue;
        }
        let prev = i.checked_sub(1).map(|p| range[p].text(src));
        if matches!(prev, Some("struct" | "union" | "enum")) {
            names.push(text);
            continue;
        }
        let next = range.get(i + 1).map(|n| n.text(src));
        if depth == 0 && (matches!(next, Some(";" | "," | "=" | "[")) || next.is_some_and(is_attribute)) {
            names.push(text);
        }
    }
    names
}

/// A token that by itself means floating point: a floating literal, a floating type
/// (`float`, `double4`, `half`), a builtin or constant whose name says it takes or gives one
/// (`convert_float`, `as_double`, `vload_half`, `read_imagef`, `MAXFLOAT`, `M_PI_F`,
/// `FLT_EPSILON`, `INFINITY`).
fn floating_token(src: &str, t: Token) -> bool {
    let text = t.text(src);
    match t.kind {
        TokenKind::Number => floating_literal(text),
        TokenKind::Ident => floating_name(text),
        _ => false,
    }
}

fn floating_literal(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    if lower.starts_with("0x") {
        return lower.contains('.') || lower.contains('p');
    }
    lower.contains('.') || lower.contains('e') || lower.ends_with('f') || lower.ends_with('h')
}

fn floating_name(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    ["float", "double", "half"].iter().any(|w| lower.contains(w))
        || ((lower.starts_with("read_image") || lower.starts_with("write_image"))
            && (lower.ends_with('f') || lower.ends_with('h')))
        || ["M_", "FLT_", "DBL_", "HUGE_VAL"].iter().any(|p| text.starts_with(p))
        || matches!(text, "INFINITY" | "NAN")
}

#[cfg(test)]
mod tests {
    use super::uses_floating_point as fp;

    #[test]
    fn integer_kernels_are_exempt() {
        let src = "typedef struct { int a; uint b; } P;\n\
                   int twice(int x) { return 2 * x; }\n\
                   __kernel void k(__global P *p, uint n) { uint i = get_global_id(0); if (i < n) p[i].a = twice(p[i].b) + 0x1f; }";
        assert!(!fp(src, "k"));
    }

    #[test]
    fn floating_types_literals_and_builtins() {
        for body in [
            "float x = p[i];",
            "float4 v;",
            "double d;",
            "half h;",
            "p[i] = p[i] * 3 / 2.;",
            "p[i] = 1e3;",
            "p[i] = 0x1p4;",
            "p[i] = convert_int(sqrt(convert_float(p[i])));",
            "p[i] = as_int(as_float(p[i]) * 2);",
            "p[i] = isnan(M_PI_F);",
            "p[i] = MAXFLOAT > 0;",
            "p[i] = FLT_EPSILON > 0;",
            "p[i] = isinf(INFINITY);",
            "p[i] = read_imagef(img, s, (int2)(0, 0)).x;",
        ] {
            let src = format!("__kernel void k(__global int *p) {{ size_t i = get_global_id(0); {body} }}");
            assert!(fp(&src, "k"), "{body}");
        }
    }

    #[test]
    fn through_typedefs_structures_globals_and_helpers() {
        let typedef = "typedef double real_t; typedef struct { real_t x; int n; } Cell;\n\
                       __kernel void k(__global Cell *c) { c[0].n += 1; }";
        assert!(fp(typedef, "k"), "a structure with a floating member through a typedef");
        let tagged = "struct P { float x; };\n__kernel void k(__global struct P *p) { }";
        assert!(fp(tagged, "k"));
        let global = "__constant float coef[2] = {1, 2};\n__kernel void k(__global int *p) { p[0] = coef[1]; }";
        assert!(fp(global, "k"));
        let helper = "int inner(int x) { return x * (int)0.5f; }\nint outer(int x) { return inner(x); }\n\
                      __kernel void k(__global int *p) { p[0] = outer(p[0]); }";
        assert!(fp(helper, "k"), "a helper's helper");
        let other = "float f(float x) { return x * x; }\n__kernel void fk(__global float *p) { p[0] = f(p[0]); }\n\
                     __kernel void ik(__global int *p) { p[0] += 1; }";
        assert!(fp(other, "fk"));
        assert!(!fp(other, "ik"), "another kernel's floating point does not count");
        let attr = "__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void k(__global int *p) \
                    __attribute__((vec_type_hint(int))) { p[0] = 1; }\n__kernel void g(__global float *q) { }";
        assert!(!fp(attr, "k"));
        assert!(fp(attr, "g"));
    }

    #[test]
    fn unclear_counts_as_floating() {
        assert!(fp("__kernel void k(__global int *p) { p[0] = 1; }", "missing"));
        assert!(fp("__kernel void k(__global int *p) { p[0] = 1; ", "k"));
    }
}
