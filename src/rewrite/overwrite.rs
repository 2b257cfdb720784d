//! Which buffers a kernel provably overwrites before reading them, so that their old contents
//! need no conversion before a launch in ASTA: what an `out` annotation says, proved from the
//! source where its shape allows.
//!
//! A parameter `p` (an AoS buffer of structures) is overwritten when every mention of it in
//! the kernel is a plain store to the work-item's own structure, `p[G].m... = e;` or
//! `p[G] = e;` (G provably the global id, as the staged copy proves it, `e` not naming `p`),
//! and every path to a `return` or the end of the body stores every byte of that structure:
//! stores in sequence add their bytes, an `if` keeps what both branches store, a
//! `for (int k = 0; k < C; k++)` whose body stores `p[G].a[k]` stores all of `a` when `a` has
//! C elements, other loops count for nothing. A first statement `if (G >= B) return;` (or
//! `if (G < B) { ... }` around the rest) limits the proof to the work-items below `B`.
//!
//! The proof only ever answers "proved" or "not proved": what it does not recognize is not
//! proved, nothing is refused, and no input makes it panic.

use super::funcs::{expansion_idents, find_function, FnDef};
use super::request::{HostKind, RewriteRequest};
use super::source::{Refusal, Source};
use super::stage::gid;
use crate::annotation::{parse_extent, Extent, ScalarArg};
use crate::clc::lex::{lex, TokenKind};
use crate::clc::struct_layout::StructLayout;
use crate::clc::types::word_scalar;
use std::collections::HashMap;

/// A parameter the kernel provably overwrites.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Overwrite {
    /// The parameter's index in the kernel's signature.
    pub index: usize,
    pub name: String,
    /// Proved for the work-items whose global id 0 lies below this bound; `None`: for every
    /// work-item.
    pub bound: Option<Bound>,
}

/// The bound of a guard `if (G >= B) return;`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Bound {
    /// `B` as the kernel writes it, its object-like macros replaced by their numbers.
    pub text: String,
    pub extent: Extent,
    /// The kernel's integer parameters `B` reads.
    pub args: Vec<ScalarArg>,
}

/// Structures larger than this are not looked at (the proof keeps one flag per byte).
const MAX_BYTES: u32 = 1 << 16;
/// Statements nested deeper than this are not looked at.
const MAX_DEPTH: usize = 48;
/// Bodies with more control statements than this are not looked at: the statement reader
/// follows unbraced nesting by recursion.
const MAX_CONTROL: usize = 1000;
const CONTROL: [&str; 12] =
    ["return", "goto", "break", "continue", "if", "else", "for", "while", "do", "switch", "case", "default"];
const SYNC: [&str; 3] = ["barrier", "work_group_barrier", "sub_group_barrier"];

/// The parameters of `req` that kernel `req.kernel` of `src` provably overwrites (see the
/// module's documentation).
pub fn overwritten(src: &str, req: &RewriteRequest) -> Vec<Overwrite> {
    let code = Source::new(src);
    let Some(Ok(def)) = find_function(src, &code.toks, &req.kernel) else { return Vec::new() };
    if !def.is_kernel || def.close <= def.open || def.close >= code.toks.len() || !plain_body(&code, &def) {
        return Vec::new();
    }
    let gids = gid::gid_vars(&code, &def);
    let Some(entry) = entry(&code, &def, &gids) else { return Vec::new() };
    let mut out = Vec::new();
    for pr in &req.params {
        let Some(param) = def.params.get(pr.index).filter(|p| p.name == pr.name) else { continue };
        let l = &pr.layout;
        let pointee = code.types.resolve(&param.type_name);
        let same_struct = param.type_name == l.type_name || pointee == code.types.resolve(&l.type_name);
        let bytes = l.words.checked_mul(l.word_bytes).filter(|&b| b > 0 && b <= MAX_BYTES && b == l.bytes);
        if pr.host != HostKind::Aos
            || !param.pointer
            || param.is_const
            || word_scalar(pointee).is_some()
            || !same_struct
            || bytes.is_none()
            || macros_mention(&code, &def, &pr.name)
        {
            continue;
        }
        let mut prover =
            Prover { code: &code, gids: &gids, name: &pr.name, layout: l, loops: Vec::new(), stores: 0, depth: 0 };
        if prover.proves(&entry, &def) {
            out.push(Overwrite { index: pr.index, name: pr.name.clone(), bound: entry.bound.clone() });
        }
    }
    out
}

/// No preprocessor conditional or odd token inside the body (only `#pragma` lines and line
/// markers), and no
/// macro used in it that could hide control flow, a statement or a barrier.
fn plain_body(code: &Source, def: &FnDef) -> bool {
    let control = (def.open + 1..def.close)
        .filter(|&j| matches!(code.text(j), "if" | "else" | "for" | "while" | "do" | "switch"))
        .count();
    if control > MAX_CONTROL {
        return false;
    }
    for j in def.open + 1..def.close {
        let t = code.toks[j];
        match t.kind {
            TokenKind::Directive if !harmless_directive(code.text(j)) => return false,
            TokenKind::Invalid => return false,
            TokenKind::Ident if code.is_macro(j) && !after_member(code, j) && !macro_plain(code, code.text(j)) => {
                return false
            }
            TokenKind::Ident if SYNC.contains(&code.text(j)) => return false,
            _ => {}
        }
    }
    true
}

/// A `#pragma` or a line marker (`#line 12`, `# 12 "file.cl"`, which a preprocessed source
/// holds): nothing that changes what the body does.
fn harmless_directive(text: &str) -> bool {
    let d = text.strip_prefix('#').unwrap_or("").trim_start();
    d.starts_with("pragma") || d.starts_with("line") || d.starts_with(|c: char| c.is_ascii_digit())
}

fn after_member(code: &Source, j: usize) -> bool {
    j > 0 && (code.is(j - 1, ".") || code.is(j - 1, "->"))
}

/// Whether macro `name`, and every macro it can expand to, expands to neither control flow,
/// `;`, braces nor a barrier.
fn macro_plain(code: &Source, name: &str) -> bool {
    let mut names = expansion_idents(&code.macros, name);
    names.push(name.to_string());
    for id in &names {
        if CONTROL.contains(&id.as_str()) || SYNC.contains(&id.as_str()) {
            return false;
        }
        let Some(m) = code.macros.get(id) else { continue };
        let toks = lex(&m.body);
        if toks.iter().any(|t| matches!(t.text(&m.body), ";" | "{" | "}") || t.kind == TokenKind::Directive) {
            return false;
        }
    }
    true
}

/// Whether a macro used in the body can expand to `name`.
fn macros_mention(code: &Source, def: &FnDef, name: &str) -> bool {
    (def.open + 1..def.close).any(|j| {
        code.is_macro(j) && !after_member(code, j) && {
            let s = code.text(j);
            s == name || expansion_idents(&code.macros, s).iter().any(|id| id == name)
        }
    })
}

/// Where the proof starts: the statements to walk in order, and the bound of a guard.
struct Entry {
    /// Token ranges walked one after the other.
    ranges: Vec<(usize, usize)>,
    bound: Option<Bound>,
}

/// The body after its global-id declarations and guard, if it starts with them.
fn entry(code: &Source, def: &FnDef, gids: &HashMap<String, Result<usize, Refusal>>) -> Option<Entry> {
    let (lo, hi) = (def.open + 1, def.close);
    let whole = Entry { ranges: vec![(lo, hi)], bound: None };
    let mut k = lo;
    loop {
        while k < hi && code.toks[k].kind == TokenKind::Directive {
            k += 1;
        }
        let e = code.statement_end(k, hi);
        if e <= k {
            return Some(whole);
        }
        let is_gid_decl = gids.values().any(|d| matches!(d, Ok(at) if (k..e).contains(at)));
        if !is_gid_decl {
            break;
        }
        k = e;
    }
    if !code.is_word(k, "if") || !code.is(k + 1, "(") {
        return Some(whole);
    }
    let Ok(c) = code.close_of(k + 1) else { return None };
    let then_end = code.statement_end(c + 1, hi);
    if code.is_word(then_end, "else") {
        return Some(whole);
    }
    let Some((above, bound)) = guard(code, def, gids, k, k + 2, c) else { return Some(whole) };
    let returns = code.is_word(c + 1, "return") && code.is(c + 2, ";") && then_end == c + 3
        || code.is(c + 1, "{") && code.is_word(c + 2, "return") && code.is(c + 3, ";") && code.is(c + 4, "}");
    match (above, returns) {
        // `if (G >= B) return;`
        (true, true) => Some(Entry { ranges: vec![(then_end, hi)], bound: Some(bound) }),
        // `if (G < B) S`: S, then the rest.
        (false, _) => Some(Entry { ranges: vec![(c + 1, then_end), (then_end, hi)], bound: Some(bound) }),
        _ => Some(whole),
    }
}

/// A guard's condition at tokens `a..b` (the `if` at `at`): whether it holds above the bound
/// (`G >= B`, `B <= G`) or below it (`G < B`, `B > G`), and the bound.
fn guard(
    code: &Source,
    def: &FnDef,
    gids: &HashMap<String, Result<usize, Refusal>>,
    at: usize,
    a: usize,
    b: usize,
) -> Option<(bool, Bound)> {
    let ops: Vec<usize> = (a..b).filter(|&k| ["<", ">", "<=", ">="].iter().any(|p| code.is(k, p))).collect();
    let [op] = ops[..] else { return None };
    let is_gid = |x: usize, y: usize| match y.checked_sub(x)? {
        1 => gids.get(code.text(x)).and_then(|d| d.as_ref().ok()).is_some_and(|&d| d < at).then_some(()),
        4 => (code.is_word(x, "get_global_id")
            && code.is(x + 1, "(")
            && matches!(code.text(x + 2), "0" | "0u" | "0U")
            && code.is(x + 3, ")"))
        .then_some(()),
        _ => None,
    };
    let (above, bound) = match code.text(op) {
        ">=" if is_gid(a, op).is_some() => (true, (op + 1, b)),
        "<" if is_gid(a, op).is_some() => (false, (op + 1, b)),
        "<=" if is_gid(op + 1, b).is_some() => (true, (a, op)),
        ">" if is_gid(op + 1, b).is_some() => (false, (a, op)),
        _ => return None,
    };
    bound_of(code, def, bound).map(|bd| (above, bd))
}

/// The bound at tokens `a..b`: integer parameters, positive integer literals, `*`, `+` and
/// parentheses only, so that with every value positive no partial result exceeds the whole.
fn bound_of(code: &Source, def: &FnDef, (a, b): (usize, usize)) -> Option<Bound> {
    let mut words = Vec::new();
    let mut args: Vec<ScalarArg> = Vec::new();
    for k in a..b {
        let t = code.toks.get(k)?;
        let s = code.text(k);
        match t.kind {
            TokenKind::Punct if matches!(s, "*" | "+" | "(" | ")") => words.push(s.to_string()),
            TokenKind::Number => words.push(positive(s)?.to_string()),
            TokenKind::Ident if code.is_macro(k) => words.push(positive(&literal_macro(code, s)?)?.to_string()),
            TokenKind::Ident => {
                let (index, p) = def.params.iter().enumerate().find(|(_, p)| p.name == s)?;
                let int_type = code.types.int_type(&p.type_name).filter(|_| !p.pointer)?;
                if !args.iter().any(|x| x.name == s) {
                    args.push(ScalarArg { arg_index: index as u32, name: s.to_string(), int_type });
                }
                words.push(s.to_string());
            }
            _ => return None,
        }
    }
    let text = words.join(" ");
    let extent = parse_extent(&text).ok()?;
    Some(Bound { text, extent, args })
}

/// A C integer literal above zero.
fn positive(s: &str) -> Option<u64> {
    literal(s).filter(|&v| v > 0)
}

/// A C integer literal: decimal or hexadecimal, `u`/`l` suffixes; octal (a leading 0) is not
/// read.
fn literal(s: &str) -> Option<u64> {
    let digits = s.trim_end_matches(['u', 'U', 'l', 'L']);
    match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None if digits == "0" => Some(0),
        None if digits.starts_with('0') => None,
        None => digits.parse().ok(),
    }
}

/// The one number an object-like macro expands to (through other such macros).
fn literal_macro(code: &Source, name: &str) -> Option<String> {
    let mut name = name.to_string();
    for _ in 0..16 {
        let m = code.macros.get(&name).filter(|m| m.params.is_none())?;
        let toks: Vec<_> = lex(&m.body).into_iter().filter(|t| !t.is_comment()).collect();
        let mut texts: Vec<&str> = toks.iter().map(|t| t.text(&m.body)).collect();
        while texts.len() >= 3 && texts[0] == "(" && texts[texts.len() - 1] == ")" {
            texts = texts[1..texts.len() - 1].to_vec();
        }
        match texts[..] {
            [one] if one.starts_with(|c: char| c.is_ascii_digit()) => return Some(one.to_string()),
            [one] if code.macros.contains_key(one) => name = one.to_string(),
            _ => return None,
        }
    }
    None
}

/// The bytes every path so far has stored to the work-item's structure; `None` where no path
/// arrives.
#[derive(Clone, Debug)]
struct Stored {
    bytes: Vec<bool>,
    /// Stores through a loop variable, resolved when the loop ends.
    each: Vec<Each>,
}

/// For every value `e` of `var` below `count`: the byte ranges shifted by `e * stride`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Each {
    var: String,
    stride: u32,
    count: u32,
    ranges: Vec<(u32, u32)>,
}

type State = Option<Stored>;

fn meet(a: State, b: State) -> State {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(mut a), Some(b)) => {
            for (x, y) in a.bytes.iter_mut().zip(&b.bytes) {
                *x &= *y;
            }
            a.each.retain(|e| b.each.contains(e));
            Some(a)
        }
    }
}

/// What a loop around a statement is.
enum Loop {
    /// `for (int k = 0; k < C; k++)` whose body runs C times through: its variable.
    Whole(String),
    Other,
}

/// Not proved.
struct No;

type P<T> = Result<T, No>;

struct Prover<'c, 's> {
    code: &'c Source<'s>,
    gids: &'c HashMap<String, Result<usize, Refusal>>,
    name: &'c str,
    layout: &'c StructLayout,
    loops: Vec<Loop>,
    /// Mentions of the parameter recognized as stores.
    stores: usize,
    depth: usize,
}

impl Prover<'_, '_> {
    fn proves(&mut self, entry: &Entry, def: &FnDef) -> bool {
        let mentions = (def.open + 1..def.close)
            .filter(|&j| self.code.is_word(j, self.name) && !after_member(self.code, j))
            .count();
        if mentions == 0 {
            return false;
        }
        let bytes = (self.layout.words * self.layout.word_bytes) as usize;
        let mut st = Some(Stored { bytes: vec![false; bytes], each: Vec::new() });
        for &(a, b) in &entry.ranges {
            match self.seq(a, b, st) {
                Ok(s) => st = s,
                Err(No) => return false,
            }
        }
        self.stores == mentions && whole(&st)
    }

    /// The statements of tokens `a..b`, in order.
    fn seq(&mut self, a: usize, b: usize, mut st: State) -> P<State> {
        let mut k = a;
        while k < b {
            if self.code.toks.get(k).is_some_and(|t| t.kind == TokenKind::Directive) {
                k += 1;
                continue;
            }
            let e = self.code.statement_end(k, b);
            if e <= k {
                return Err(No);
            }
            st = self.statement(k, e, st)?;
            k = e;
        }
        Ok(st)
    }

    /// The statement of tokens `k..end`.
    fn statement(&mut self, k: usize, end: usize, st: State) -> P<State> {
        if self.depth >= MAX_DEPTH {
            return Err(No);
        }
        self.depth += 1;
        let r = self.statement_in(k, end, st);
        self.depth -= 1;
        r
    }

    fn statement_in(&mut self, k: usize, end: usize, st: State) -> P<State> {
        let code = self.code;
        if code.is(k, "{") {
            if end < k + 2 || !code.is(end - 1, "}") {
                return Err(No);
            }
            return self.seq(k + 1, end - 1, st);
        }
        if code.is(k, ";") {
            return Ok(st);
        }
        let word = match code.toks.get(k) {
            Some(t) if t.kind == TokenKind::Ident => code.text(k),
            _ => "",
        };
        if !word.is_empty() && code.is(k + 1, ":") {
            // A label, which a jump may reach.
            return Err(No);
        }
        match word {
            "if" => {
                let c = self.head(k, end)?;
                let then_end = code.statement_end(c + 1, end);
                let yes = self.statement(c + 1, then_end, st.clone())?;
                let no = if code.is_word(then_end, "else") { self.statement(then_end + 1, end, st)? } else { st };
                Ok(meet(yes, no))
            }
            "for" => {
                let c = self.head(k, end)?;
                match self.whole_loop(k + 2, c, c + 1, end) {
                    Some((var, count)) => self.whole(var, count, c + 1, end, st),
                    None => self.other_loop(c + 1, end, st),
                }
            }
            "while" => {
                let c = self.head(k, end)?;
                self.other_loop(c + 1, end, st)
            }
            "do" => {
                let body_end = code.statement_end(k + 1, end);
                self.other_loop(k + 1, body_end, st)
            }
            "return" if code.is(k + 1, ";") && self.loops.is_empty() => {
                if !whole(&st) {
                    return Err(No);
                }
                Ok(None)
            }
            "break" | "continue" => match self.loops.last() {
                Some(Loop::Other) => Ok(None),
                _ => Err(No),
            },
            "return" | "goto" | "switch" | "case" | "default" | "else" => Err(No),
            _ if word == self.name => self.store(k, end, st),
            _ => Ok(st),
        }
    }

    /// The `)` closing the head of the control statement at `k`.
    fn head(&self, k: usize, end: usize) -> P<usize> {
        if !self.code.is(k + 1, "(") {
            return Err(No);
        }
        self.code.close_of(k + 1).ok().filter(|&c| c < end).ok_or(No)
    }

    /// A loop whose body may run any number of times: what it stores counts for nothing.
    fn other_loop(&mut self, a: usize, b: usize, st: State) -> P<State> {
        self.loops.push(Loop::Other);
        let body = self.statement(a, b, st.clone());
        self.loops.pop();
        body?;
        Ok(st)
    }

    /// `for (T k = 0; k < C; k++)` with head tokens `a..c` and body `body..end`, when the
    /// body runs C times through: no jump out of it or to its next round, `k` never changed,
    /// declared again or named by a macro. Its variable and C.
    fn whole_loop(&self, a: usize, c: usize, body: usize, end: usize) -> Option<(String, u32)> {
        let code = self.code;
        let t: Vec<&str> = (a..c).map(|k| code.text(k)).collect();
        let typed = |s: &str| matches!(s, "int" | "uint" | "long" | "ulong" | "size_t");
        let (decl, rest) = match t[..] {
            ["unsigned", "int", ..] => (2, &t[2..]),
            [ty, ..] if typed(ty) => (1, &t[1..]),
            _ => return None,
        };
        let var = code.toks.get(a + decl).filter(|t| t.kind == TokenKind::Ident)?;
        let var = var.text(code.src);
        if code.macros.contains_key(var) || var == self.name || self.gids.contains_key(var) {
            return None;
        }
        let bound = match rest {
            [v, "=", "0", ";", v2, "<", n, ";", v3, "++"] | [v, "=", "0", ";", v2, "<", n, ";", "++", v3]
                if *v == var && *v2 == var && *v3 == var =>
            {
                n
            }
            _ => return None,
        };
        let count = match code.toks.get(a + decl + 6) {
            Some(t) if t.kind == TokenKind::Number => positive(bound),
            Some(t) if t.kind == TokenKind::Ident => positive(&literal_macro(code, bound)?),
            _ => None,
        }?;
        let count = u32::try_from(count).ok()?;
        for k in body..end {
            let s = code.text(k);
            let tok = code.toks[k];
            if tok.kind == TokenKind::Ident && matches!(s, "break" | "continue" | "return" | "goto") {
                return None;
            }
            if code.is_macro(k) && expansion_idents(&code.macros, s).iter().any(|id| id == var) {
                return None;
            }
            if tok.kind != TokenKind::Ident || s != var || after_member(code, k) {
                continue;
            }
            let changed = code.is_assign(k + 1)
                || code.is(k + 1, "++")
                || code.is(k + 1, "--")
                || code.is(k - 1, "++")
                || code.is(k - 1, "--")
                || (code.is(k - 1, "&") && code.unary(k - 1));
            if changed || self.declares(k, body) {
                return None;
            }
        }
        Some((var.to_string(), count))
    }

    /// Whether the identifier at `k` (inside a loop body starting at `body`) may be declared
    /// there: after a type or another identifier, after `*` after a type, or after a `,`
    /// outside any call or subscript.
    fn declares(&self, k: usize, body: usize) -> bool {
        let code = self.code;
        let prev = k - 1;
        if code.toks[prev].kind == TokenKind::Ident {
            return true;
        }
        if code.is(prev, "*") && prev > 0 && (code.is_type_at(prev - 1) || code.is(prev - 1, "*")) {
            return true;
        }
        if !code.is(prev, ",") {
            return false;
        }
        // The innermost bracket around the `,`: a call's or a subscript's is fine, a `for`'s
        // head or a statement's is not.
        let mut depth = 0usize;
        let mut j = prev;
        while j > body {
            j -= 1;
            match code.text(j) {
                ")" | "]" | "}" if code.toks[j].kind == TokenKind::Punct => depth += 1,
                "(" | "[" if code.toks[j].kind == TokenKind::Punct && depth == 0 => {
                    return j > 0 && code.is_word(j - 1, "for");
                }
                "(" | "[" | "{" if code.toks[j].kind == TokenKind::Punct => {
                    if depth == 0 {
                        return true;
                    }
                    depth -= 1;
                }
                ";" if depth == 0 => return true,
                _ => {}
            }
        }
        true
    }

    /// The body `a..b` of a loop that runs `count` times through with variable `var`.
    fn whole(&mut self, var: String, count: u32, a: usize, b: usize, st: State) -> P<State> {
        self.loops.push(Loop::Whole(var.clone()));
        let body = self.statement(a, b, st.clone());
        self.loops.pop();
        let Some(mut after) = body? else { return Ok(st) };
        if count == 0 {
            return Ok(st);
        }
        let each = std::mem::take(&mut after.each);
        for e in each {
            if e.var != var {
                after.each.push(e);
            } else if e.count == count {
                for n in 0..e.count {
                    for &(lo, hi) in &e.ranges {
                        let shift = n.checked_mul(e.stride).ok_or(No)?;
                        let (lo, hi) = (lo.checked_add(shift).ok_or(No)?, hi.checked_add(shift).ok_or(No)?);
                        mark(&mut after.bytes, lo, hi)?;
                    }
                }
            }
        }
        Ok(Some(after))
    }

    /// `p[G]... = e;` at tokens `k..end`.
    fn store(&mut self, k: usize, end: usize, st: State) -> P<State> {
        let code = self.code;
        if !code.is(k + 1, "[") || end < 1 || !code.is(end - 1, ";") {
            return Err(No);
        }
        let c = code.close_of(k + 1).map_err(|_| No)?;
        if c >= end {
            return Err(No);
        }
        gid::subscript_is_gid(code, self.gids, (k, c + 1), Some((k + 2, c)), self.name).map_err(|_| No)?;
        let mut j = c + 1;
        let (ranges, each) = if code.is(j, "=") {
            (vec![(0, self.layout.words * self.layout.word_bytes)], None)
        } else {
            let (ranges, each, next) = self.member_path(j, end)?;
            j = next;
            (ranges, each)
        };
        if !code.is(j, "=") {
            return Err(No);
        }
        if (j + 1..end).any(|q| code.is_word(q, self.name) && !after_member(code, q)) || j + 1 >= end - 1 {
            return Err(No);
        }
        self.stores += 1;
        let Some(mut s) = st else { return Ok(None) };
        match each {
            None => {
                for (lo, hi) in ranges {
                    mark(&mut s.bytes, lo, hi)?;
                }
            }
            Some((var, stride, count)) => {
                let e = Each { var, stride, count, ranges };
                if !s.each.contains(&e) {
                    s.each.push(e);
                }
            }
        }
        Ok(Some(s))
    }

    /// The members and subscripts from token `j` of a store to the work-item's structure: the
    /// byte ranges stored (with a loop variable at 0), the loop variable with its stride and
    /// element count if one subscript is one, and the token after the path.
    #[allow(clippy::type_complexity)]
    fn member_path(&self, mut j: usize, end: usize) -> P<(Vec<(u32, u32)>, Option<(String, u32, u32)>, usize)> {
        let code = self.code;
        let mut cur: &StructLayout = self.layout;
        let mut base = 0u32;
        let mut each = None;
        loop {
            if !code.is(j, ".") || code.toks.get(j + 1).is_none_or(|t| t.kind != TokenKind::Ident) {
                return Err(No);
            }
            let m = cur.member(code.text(j + 1)).ok_or(No)?;
            j += 2;
            let mut off = base.checked_add(m.byte_offset).ok_or(No)?;
            for (d, &dim) in m.dims.iter().enumerate() {
                if !code.is(j, "[") {
                    return Err(No);
                }
                let close = code.close_of(j).map_err(|_| No)?;
                if close >= end {
                    return Err(No);
                }
                let step = m.dim_stride(d).checked_mul(m.elem_bytes).ok_or(No)?;
                match self.index(j + 1, close) {
                    Some(Index::Number(n)) if n < dim as u64 => {
                        off = off.checked_add((n as u32).checked_mul(step).ok_or(No)?).ok_or(No)?;
                    }
                    Some(Index::Var(v)) if each.is_none() => each = Some((v, step, dim)),
                    _ => return Err(No),
                }
                j = close + 1;
            }
            match &m.nested {
                Some(n) if code.is(j, ".") => {
                    cur = n;
                    base = off;
                }
                Some(n) => {
                    let mut ranges = Vec::new();
                    leaves(n, off, &mut ranges)?;
                    return Ok((ranges, each, j));
                }
                None => {
                    let lane = m.scalar_bytes();
                    if lane == 0 {
                        return Err(No);
                    }
                    let range = if code.is(j, ".") && m.lanes > 1 {
                        let l = lane_index(code.text(j + 1)).filter(|&l| l < m.lanes).ok_or(No)?;
                        j += 2;
                        (off + l * lane, off + (l + 1) * lane)
                    } else {
                        (off, off + stored_lanes(m.lanes) * lane)
                    };
                    return Ok((vec![range], each, j));
                }
            }
        }
    }

    /// A subscript at tokens `a..b`: a number, or the variable of a loop around it that runs
    /// through.
    fn index(&self, a: usize, b: usize) -> Option<Index> {
        if b != a + 1 {
            return None;
        }
        let code = self.code;
        let s = code.text(a);
        match code.toks.get(a)?.kind {
            TokenKind::Number => literal(s).map(Index::Number),
            TokenKind::Ident if code.is_macro(a) => literal(&literal_macro(code, s)?).map(Index::Number),
            TokenKind::Ident if self.loops.iter().any(|l| matches!(l, Loop::Whole(v) if v == s)) => {
                Some(Index::Var(s.to_string()))
            }
            _ => None,
        }
    }
}

enum Index {
    Number(u64),
    Var(String),
}

/// Lanes a store of a vector of `lanes` writes for sure: a 3-vector's fourth is padding.
fn stored_lanes(lanes: u32) -> u32 {
    if lanes == 3 {
        3
    } else {
        lanes
    }
}

/// `.x` .. `.w`, `.s0` .. `.sF`: one lane.
fn lane_index(s: &str) -> Option<u32> {
    match s {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        "w" => Some(3),
        _ => {
            let d = s.strip_prefix('s').or_else(|| s.strip_prefix('S'))?;
            let mut c = d.chars();
            let v = c.next()?.to_digit(16)?;
            c.next().is_none().then_some(v)
        }
    }
}

/// The bytes of every builtin member of nested structure `n` at `base` (a nested structure is
/// stored member by member: its padding is not written).
fn leaves(n: &StructLayout, base: u32, out: &mut Vec<(u32, u32)>) -> P<()> {
    for m in &n.members {
        for e in 0..m.count {
            let at =
                base.checked_add(m.byte_offset).and_then(|b| b.checked_add(e.checked_mul(m.elem_bytes)?)).ok_or(No)?;
            match &m.nested {
                Some(inner) => leaves(inner, at, out)?,
                None => out.push((at, at + stored_lanes(m.lanes) * m.scalar_bytes())),
            }
            if out.len() > MAX_BYTES as usize {
                return Err(No);
            }
        }
    }
    Ok(())
}

fn mark(bytes: &mut [bool], lo: u32, hi: u32) -> P<()> {
    let r = bytes.get_mut(lo as usize..hi as usize).ok_or(No)?;
    r.iter_mut().for_each(|b| *b = true);
    Ok(())
}

/// Whether every byte of the structure is stored (or no path arrives).
fn whole(st: &State) -> bool {
    st.as_ref().is_none_or(|s| s.bytes.iter().all(|&b| b))
}
