//! Annotations inferred from a program's source, for `CLAYOUT_ANNOTATIONS=auto` and
//! `CLAYOUT_SUGGEST` (docs/annotations.md): every `__global` pointer to a structure is proposed
//! as `AoS`, and a flat scalar buffer as `AoS(S)` or `SoA(S)` when every one of its subscripts
//! shows the same stride. The extent is the bound the kernel checks its global id against
//! (`if (i >= n) return;`), else `auto`. A proposal only says what the source suggests; the
//! rewriter still decides whether the kernel can be rewritten, and the runtime still checks
//! every buffer at every launch, so a wrong guess costs speed, never results.
//!
//! A stride that is a scalar parameter (`p[i * K + k]`) is only known at launch: such a
//! proposal names the parameter, and the runtime fills in its value (and holds the kernel to it).

use super::grammar::parse_annotation;
use crate::clc::lex::{lex, matching_bracket, Token, TokenKind};
use crate::clc::signature::{kernels_in, AddrSpace, KernelSig};
use crate::clc::structs::const_int;
use crate::clc::typedefs::{TypeClass, TypeTable};
use crate::clc::types::IntType;

/// Words per element of a flat buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stride {
    Const(u64),
    /// The value of the kernel's integer scalar parameter `name` (argument `index`).
    Param {
        name: String,
        index: usize,
        int_type: IntType,
    },
}

/// How the host is proposed to lay a buffer out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Form {
    /// A pointer to a structure: `AoS`.
    Struct,
    /// A flat buffer, element `i`'s word `c` at `i*S + c`: `AoS(S)`.
    FlatAos(Stride),
    /// A flat buffer of S arrays of n words, word `c` of element `i` at `c*n + i`: `SoA(S)`.
    FlatSoa(Stride),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proposal {
    pub param: String,
    pub form: Form,
    /// The extent as the grammar writes it: an expression of scalar parameters, or `auto`.
    pub extent: String,
    /// Why this extent (or why `auto`), for the suggestion's comment.
    pub extent_from: String,
}

impl Proposal {
    /// The stride the proposal waits for, if it is a parameter's.
    pub fn stride_param(&self) -> Option<(&str, usize, IntType)> {
        match &self.form {
            Form::FlatAos(Stride::Param { name, index, int_type })
            | Form::FlatSoa(Stride::Param { name, index, int_type }) => Some((name, *index, *int_type)),
            _ => None,
        }
    }

    /// The host layout as the grammar writes it, a parameter's stride given by `value`; None
    /// while that value is unknown.
    pub fn host(&self, value: &dyn Fn(&str) -> Option<u64>) -> Option<String> {
        let s = |st: &Stride| match st {
            Stride::Const(s) => Some(*s),
            Stride::Param { name, .. } => value(name),
        };
        Some(match &self.form {
            Form::Struct => "AoS".to_string(),
            Form::FlatAos(st) => format!("AoS({})", s(st)?),
            Form::FlatSoa(st) => format!("SoA({})", s(st)?),
        })
    }
}

/// The proposals for one kernel, in parameter order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInference {
    pub kernel: String,
    pub proposals: Vec<Proposal>,
}

impl KernelInference {
    /// Side-file lines (`kernel: AoS: a[n], b[n]`), one per host layout; Err names a stride
    /// parameter whose value `value` does not know.
    pub fn lines(&self, value: &dyn Fn(&str) -> Option<u64>) -> Result<Vec<String>, String> {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for p in &self.proposals {
            let Some(host) = p.host(value) else {
                let name = p.stride_param().map(|s| s.0).unwrap_or("?");
                return Err(format!("the stride of `{}` is parameter `{name}`, known only at launch", p.param));
            };
            let item = format!("{}[{}]", p.param, p.extent);
            match groups.iter_mut().find(|(h, _)| *h == host) {
                Some((_, items)) => items.push(item),
                None => groups.push((host, vec![item])),
            }
        }
        Ok(groups.into_iter().map(|(h, items)| format!("{}: {h}: {}", self.kernel, items.join(", "))).collect())
    }

    /// Whether some stride is a parameter's, known only at launch.
    pub fn waits_for_launch(&self) -> bool {
        self.proposals.iter().any(|p| p.stride_param().is_some())
    }
}

/// Proposals for every kernel defined in `src` (the program as the compiler sees it) that has
/// at least one; a kernel whose signature cannot be read is left out.
pub fn infer(src: &str) -> Vec<KernelInference> {
    let code: Vec<Token> = lex(src).into_iter().filter(|t| !t.is_comment()).collect();
    let types = TypeTable::from_tokens(src, &code);
    let mut out: Vec<KernelInference> = Vec::new();
    for sig in kernels_in(src, &code).into_iter().filter_map(Result::ok) {
        let Some(body) = sig.body else { continue };
        if out.iter().any(|k| k.kernel == sig.name) {
            continue;
        }
        let toks: Vec<Token> =
            code.iter().copied().filter(|t| t.span.start > body.start && t.span.end < body.end).collect();
        let b = Body { src, t: &toks, sig: &sig, types: &types };
        let proposals = b.proposals();
        if !proposals.is_empty() {
            out.push(KernelInference { kernel: sig.name.clone(), proposals });
        }
    }
    out
}

/// One kernel's body (the tokens inside its braces) and what it reads about it.
struct Body<'a> {
    src: &'a str,
    t: &'a [Token],
    sig: &'a KernelSig,
    types: &'a TypeTable,
}

const ASSIGN: &[&str] = &["=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^=", "++", "--"];
/// Operators that end the `+`-separated sum a subscript is read as.
const NOT_IN_SUM: &[&str] = &[
    "?", ":", "=", ",", "<<", ">>", "&", "|", "^", "<", ">", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=",
    "/=", "%=", "<<=", ">>=", "&=", "|=", "^=", "++", "--",
];

/// A global id's name and, when the kernel checks it, its bound: the extent's text and the
/// tokens of the parameters it names.
type Bounded = (String, Option<(String, Vec<usize>)>);

/// A subscript's shape with respect to the global id.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Shape {
    /// `g*S + c`, S as written.
    Aos(String),
    /// `c*n + g`, n the global id's bound and c a loop counter bounded by S, as written.
    Soa(String),
    /// `g` alone.
    Unit,
    Other,
}

impl Body<'_> {
    fn text(&self, i: usize) -> &str {
        self.t[i].text(self.src)
    }

    fn punct(&self, i: usize, p: &str) -> bool {
        self.t.get(i).is_some_and(|t| t.is_punct(self.src, p))
    }

    fn ident(&self, i: usize, name: &str) -> bool {
        self.t.get(i).is_some_and(|t| t.is_ident(self.src, name))
    }

    /// Uses of `name` as a variable (not as a member after `.` or `->`).
    fn uses(&self, name: &str) -> Vec<usize> {
        (0..self.t.len())
            .filter(|&i| self.ident(i, name) && !(i > 0 && (self.punct(i - 1, ".") || self.punct(i - 1, "->"))))
            .collect()
    }

    /// How many times `name` is assigned, incremented or has its address taken.
    fn writes(&self, name: &str) -> usize {
        self.uses(name)
            .into_iter()
            .filter(|&i| {
                let after = self.t.get(i + 1).is_some_and(|t| ASSIGN.iter().any(|a| t.is_punct(self.src, a)));
                let before = i > 0 && (self.punct(i - 1, "++") || self.punct(i - 1, "--") || self.punct(i - 1, "&"));
                after || before
            })
            .count()
    }

    /// An integer scalar parameter the body never changes.
    fn fixed_int_param(&self, name: &str) -> Option<(usize, IntType)> {
        let (index, p) = self.sig.param(name)?;
        if p.pointer || self.writes(name) != 0 {
            return None;
        }
        Some((index, self.types.int_type(&p.type_name)?))
    }

    /// The variables declared as `T g = get_global_id(0);` (a cast allowed) and never changed.
    fn global_ids(&self) -> Vec<String> {
        let mut out = Vec::new();
        for i in 0..self.t.len() {
            if !(self.ident(i, "get_global_id") && self.punct(i + 1, "(") && self.punct(i + 3, ")")) {
                continue;
            }
            if self.t.get(i + 2).map(|t| t.text(self.src)) != Some("0") {
                continue;
            }
            // Casts and parentheses around it: `(int)get_global_id(0)`, `((int)get_global_id(0))`.
            let (mut j, mut opens) = (i, 0);
            loop {
                if j > 0 && self.punct(j - 1, ")") {
                    let Some(open) = (0..j - 1).rev().find(|&k| self.punct(k, "(")) else { break };
                    if open + 1 == j - 1 || !(open + 1..j - 1).all(|k| self.t[k].kind == TokenKind::Ident) {
                        break;
                    }
                    j = open;
                } else if j > 0 && self.punct(j - 1, "(") {
                    opens += 1;
                    j -= 1;
                } else {
                    break;
                }
            }
            if !(i + 4..i + 4 + opens).all(|k| self.punct(k, ")")) {
                continue;
            }
            if !(self.punct(i + 4 + opens, ";") || self.punct(i + 4 + opens, ",")) {
                continue;
            }
            if j < 3 || !self.punct(j - 1, "=") || self.t[j - 2].kind != TokenKind::Ident {
                continue;
            }
            if !(self.t[j - 3].kind == TokenKind::Ident || self.punct(j - 3, ",")) {
                continue;
            }
            let name = self.text(j - 2).to_string();
            if self.writes(&name) == 1 && !out.contains(&name) {
                out.push(name);
            }
        }
        out
    }

    /// The bound the kernel checks `g` against: `if (g >= E)` or `if (g < E)` (either way
    /// round), with E made of parameters it never changes, integers and `+ - * /`.
    fn bound(&self, g: &str) -> Option<(String, Vec<usize>)> {
        for i in 0..self.t.len() {
            if !(self.ident(i, "if") && self.punct(i + 1, "(")) {
                continue;
            }
            let close = matching_bracket(self.src, self.t, i + 1)? - 1;
            let (lo, hi) = (i + 2, close);
            if hi < lo + 3 {
                continue;
            }
            let e = if self.ident(lo, g) && (self.punct(lo + 1, ">=") || self.punct(lo + 1, "<")) {
                lo + 2..hi
            } else if self.ident(hi - 1, g) && (self.punct(hi - 2, "<=") || self.punct(hi - 2, ">")) {
                lo..hi - 2
            } else {
                continue;
            };
            if let Some(found) = self.extent_expr(e) {
                return Some(found);
            }
        }
        None
    }

    /// The grammar's text of tokens `r` when they are an extent: parameters the body never
    /// changes, integers, `+ - * /` and parentheses.
    fn extent_expr(&self, r: std::ops::Range<usize>) -> Option<(String, Vec<usize>)> {
        let mut text = String::new();
        let mut idents = Vec::new();
        for k in r {
            let s = self.text(k);
            match self.t[k].kind {
                TokenKind::Ident => {
                    self.fixed_int_param(s)?;
                    idents.push(k);
                    text.push_str(s);
                }
                TokenKind::Number => text.push_str(s),
                TokenKind::Punct if matches!(s, "+" | "-" | "*" | "/") => {
                    text.push(' ');
                    text.push_str(s);
                    text.push(' ');
                }
                TokenKind::Punct if matches!(s, "(" | ")") => text.push_str(s),
                _ => return None,
            }
        }
        parse_annotation(&format!("AoS: p[{text}]")).ok()?;
        Some((text, idents))
    }

    /// Every subscript of `name` (the tokens inside its brackets); None when it is also used
    /// some other way (passed on, offset, dereferenced), which the inference does not follow.
    fn subscripts(&self, name: &str) -> Option<Vec<std::ops::Range<usize>>> {
        let mut out = Vec::new();
        for i in self.uses(name) {
            // `(p)[k]`, as macros write it, too.
            let open = if self.punct(i + 1, "[") {
                i + 1
            } else if i > 0 && self.punct(i - 1, "(") && self.punct(i + 1, ")") && self.punct(i + 2, "[") {
                i + 2
            } else {
                return None;
            };
            let end = matching_bracket(self.src, self.t, open)?;
            out.push(open + 1..end - 1);
        }
        Some(out)
    }

    /// The bound S of a loop counter `c`: `for (... c = 0; c < S; ...)`, S an integer or a
    /// parameter the body never changes.
    fn loop_bound(&self, c: &str) -> Option<String> {
        (0..self.t.len()).find_map(|i| {
            let ok = self.ident(i, c)
                && self.punct(i + 1, "=")
                && self.t.get(i + 2).map(|t| t.text(self.src)) == Some("0")
                && self.punct(i + 3, ";")
                && self.ident(i + 4, c)
                && self.punct(i + 5, "<")
                && self.punct(i + 7, ";");
            if !ok {
                return None;
            }
            let s = self.text(i + 6);
            match self.t[i + 6].kind {
                TokenKind::Number => Some(s.to_string()),
                TokenKind::Ident => self.fixed_int_param(s).map(|_| s.to_string()),
                _ => None,
            }
        })
    }

    /// What one subscript says about the stride, `g` the global id and `n` its bound.
    fn shape(&self, r: std::ops::Range<usize>, g: &str, n: Option<&str>) -> Shape {
        let mut terms: Vec<std::ops::Range<usize>> = Vec::new();
        let (mut depth, mut start) = (0i32, r.start);
        for k in r.clone() {
            let s = if self.t[k].kind == TokenKind::Punct { self.text(k) } else { "" };
            match s {
                "(" | "[" => depth += 1,
                ")" | "]" => depth -= 1,
                "+" if depth == 0 => {
                    terms.push(start..k);
                    start = k + 1;
                }
                _ if depth == 0 && NOT_IN_SUM.contains(&s) => return Shape::Other,
                _ => {}
            }
        }
        terms.push(start..r.end);
        let (mut aos, mut unit, mut soa, mut rest) = (Vec::new(), 0, Vec::new(), 0);
        for t in &terms {
            let has_g = t.clone().any(|k| self.ident(k, g));
            let product = t.len() == 3 && self.punct(t.start + 1, "*");
            if has_g {
                match self.g_term(self.unparen(t.clone()), g) {
                    Some(None) => unit += 1,
                    Some(Some(s)) => aos.push(Some(s)),
                    None => return Shape::Other,
                }
            } else if let (true, Some(n)) = (product, n) {
                let (a, b) = (t.start, t.start + 2);
                let counter = if self.ident(b, n) {
                    Some(a)
                } else if self.ident(a, n) {
                    Some(b)
                } else {
                    None
                };
                match counter.filter(|&c| self.t[c].kind == TokenKind::Ident) {
                    Some(c) => soa.push(self.loop_bound(self.text(c))),
                    None => rest += 1,
                }
            } else {
                if t.is_empty() {
                    return Shape::Other;
                }
                rest += 1;
            }
        }
        match (aos.as_slice(), unit, soa.as_slice(), rest) {
            // A product `c*n` beside `g*S` is one more constant term.
            ([Some(s)], 0, _, _) => Shape::Aos(s.clone()),
            ([], 1, [Some(s)], 0) => Shape::Soa(s.clone()),
            ([], 1, [], 0) => Shape::Unit,
            _ => Shape::Other,
        }
    }

    /// `r` without parentheses around all of it.
    fn unparen(&self, mut r: std::ops::Range<usize>) -> std::ops::Range<usize> {
        while r.len() >= 2 && self.punct(r.start, "(") && matching_bracket(self.src, self.t, r.start) == Some(r.end) {
            r = r.start + 1..r.end - 1;
        }
        r
    }

    /// A term of a subscript that involves the global id `g`: `Some(None)` for `g` itself,
    /// `Some(Some(S))` for `g*S` or `S*g` (S an integer, an integer constant expression, or a
    /// parameter the body never changes, as its text), None for anything else.
    fn g_term(&self, r: std::ops::Range<usize>, g: &str) -> Option<Option<String>> {
        if r.len() == 1 && self.ident(r.start, g) {
            return Some(None);
        }
        let mut depth = 0i32;
        let mut stars = Vec::new();
        for k in r.clone() {
            match self.t[k].text(self.src) {
                "(" | "[" if self.t[k].kind == TokenKind::Punct => depth += 1,
                ")" | "]" if self.t[k].kind == TokenKind::Punct => depth -= 1,
                "*" if depth == 0 && self.t[k].kind == TokenKind::Punct => stars.push(k),
                _ => {}
            }
        }
        let [star] = stars[..] else { return None };
        let (a, b) = (self.unparen(r.start..star), self.unparen(star + 1..r.end));
        let is_g = |x: &std::ops::Range<usize>| x.len() == 1 && self.ident(x.start, g);
        let other = if is_g(&a) {
            b
        } else if is_g(&b) {
            a
        } else {
            return None;
        };
        if other.len() == 1 && self.t[other.start].kind == TokenKind::Ident {
            let name = self.text(other.start);
            return self.fixed_int_param(name).map(|_| Some(name.to_string()));
        }
        let v = const_int(self.src, &self.t[other])?;
        (v > 0).then(|| Some(v.to_string()))
    }

    fn stride(&self, s: &str) -> Option<Stride> {
        match s.parse::<u64>() {
            Ok(v) => Some(Stride::Const(v)),
            Err(_) => {
                let (index, int_type) = self.fixed_int_param(s)?;
                Some(Stride::Param { name: s.to_string(), index, int_type })
            }
        }
    }

    fn proposals(&self) -> Vec<Proposal> {
        let gids = self.global_ids();
        let bounded: Vec<Bounded> = gids.iter().map(|g| (g.clone(), self.bound(g))).collect();
        let mut out = Vec::new();
        for p in &self.sig.params {
            if !p.pointer || p.space != AddrSpace::Global {
                continue;
            }
            let class = self.types.classify(&p.type_name);
            let subs = self.subscripts(&p.name);
            match class {
                TypeClass::Struct => {
                    // The bound of a global id the buffer is subscripted with, else `auto`.
                    let by = bounded.iter().find(|(g, b)| {
                        b.is_some()
                            && subs.as_ref().is_some_and(|s| s.iter().any(|r| r.len() == 1 && self.ident(r.start, g)))
                    });
                    let (extent, extent_from) = match by {
                        Some((g, Some((e, _)))) => (e.clone(), format!("the bound of `{g}`")),
                        _ => ("auto".to_string(), "no bound of the global id found".to_string()),
                    };
                    out.push(Proposal { param: p.name.clone(), form: Form::Struct, extent, extent_from });
                }
                TypeClass::Scalar(_) => {
                    let Some(subs) = subs.filter(|s| !s.is_empty()) else { continue };
                    if let Some(found) = self.flat(&subs, &bounded) {
                        out.push(Proposal { param: p.name.clone(), ..found });
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// A flat buffer's proposal: every subscript the same `AoS` or `SoA` shape of one global id.
    fn flat(&self, subs: &[std::ops::Range<usize>], bounded: &[Bounded]) -> Option<Proposal> {
        for (g, b) in bounded {
            let n = b.as_ref().filter(|(_, ids)| ids.len() == 1).map(|(e, _)| e.as_str());
            let shapes: Vec<Shape> = subs.iter().map(|r| self.shape(r.clone(), g, n)).collect();
            let first = shapes[0].clone();
            if shapes.iter().any(|s| *s != first) {
                continue;
            }
            let (extent, extent_from) = match b {
                Some((e, _)) => (e.clone(), format!("the bound of `{g}`")),
                None => ("auto".to_string(), "no bound of the global id found".to_string()),
            };
            let form = match first {
                Shape::Aos(s) => Form::FlatAos(self.stride(&s)?),
                Shape::Soa(s) if b.is_some() => Form::FlatSoa(self.stride(&s)?),
                _ => continue,
            };
            if matches!(form, Form::FlatAos(Stride::Const(0 | 1)) | Form::FlatSoa(Stride::Const(0 | 1))) {
                continue;
            }
            return Some(Proposal { param: String::new(), form, extent, extent_from });
        }
        None
    }
}
