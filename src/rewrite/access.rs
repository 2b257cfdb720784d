//! Recognizing and rewriting accesses to a rewritten buffer, token by token. Every use of the
//! buffer's name in a function body must be one of the forms this module recognizes; anything
//! else refuses the kernel, since one access left in AoS terms would read the wrong words.

use super::emit::{self, component, words_of, Needs, Space};
use super::funcs::{self, matching, FnDef, Macro};
use super::Refusal;
use crate::clc::lex::{lex, one_line, Token, TokenKind};
use crate::clc::signature::{AddrSpace, Param};
use crate::clc::struct_layout::StructLayout;
use crate::clc::types::word_scalar;
use std::collections::{HashMap, HashSet};

#[derive(Clone, Debug)]
pub(crate) enum Kind {
    /// A pointer to the structure: `p[i].m`.
    Struct,
    /// A flat scalar pointer into AoS words: `p[i*S + s]`.
    FlatAos,
    /// A flat scalar pointer into SoA words, with the extent's tokens for `p[s*n + i]`.
    FlatSoa { extent: Vec<String> },
}

/// A buffer being rewritten, as one function sees it.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub name: String,
    /// The `ulong` parameter holding M in that function.
    pub m: String,
    pub layout: StructLayout,
    /// The scalar the rewritten parameter points to.
    pub base: String,
    pub is_const: bool,
    pub kind: Kind,
    /// Where its accesses point: the buffer, or (staged kernels only) a local copy.
    pub space: Space,
}

impl Target {
    /// The words an access reads: the buffer, or its local copy of `base` words.
    pub fn array(&self) -> String {
        match self.space {
            Space::Asta => self.name.clone(),
            Space::Local => format!("clayout_stage_{}", self.name),
        }
    }

    /// What a helper copy depends on, for naming it.
    fn descriptor(&self) -> String {
        let kind = match &self.kind {
            Kind::Struct => "struct",
            Kind::FlatAos => "aos",
            Kind::FlatSoa { .. } => "soa",
        };
        format!("{kind}:{}:{}:{}", self.layout.type_name, self.layout.words, self.layout.word_bytes)
    }
}

pub(super) const ASSIGN_OPS: [&str; 11] = ["=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="];
pub(super) const NOT_CALLS: [&str; 8] = ["if", "while", "for", "switch", "return", "sizeof", "__attribute__", "case"];
/// Builtins that neither write memory nor have side effects: an index using only these may be
/// evaluated twice.
const PURE_CALLS: [&str; 16] = [
    "get_global_id",
    "get_local_id",
    "get_group_id",
    "get_global_size",
    "get_local_size",
    "get_num_groups",
    "get_global_offset",
    "get_work_dim",
    "min",
    "max",
    "abs",
    "clamp",
    "mad24",
    "mul24",
    "select",
    "mad",
];

type R<T> = Result<T, Refusal>;

pub(crate) struct Rewriter<'s> {
    pub src: &'s str,
    pub toks: Vec<Token>,
    pub(super) macros: HashMap<String, Macro>,
    pub needs: Needs,
    /// Rewritten helper copies, callees before callers.
    pub copies: Vec<String>,
    done: HashSet<String>,
    in_progress: HashSet<String>,
    /// Byte offset after which every definition the copies rely on has been seen.
    pub insert_at: usize,
    /// `#line` directives of the source, (physical line of the directive, line it sets), so
    /// that a source rewritten before (with `#line`s of its own) maps back to the original.
    line_marks: Vec<(u32, u32)>,
    /// Names of the targets the rewritten code can store to.
    pub stored: HashSet<String>,
    /// The staged rewrite's state while it rewrites the kernel (see stage.rs).
    pub stage: Option<super::stage::StageCtx>,
}

impl<'s> Rewriter<'s> {
    pub fn new(src: &'s str) -> Self {
        let toks: Vec<Token> = lex(src).into_iter().filter(|t| !t.is_comment()).collect();
        let macros = funcs::macros(src, &toks);
        let line_marks = toks
            .iter()
            .filter(|t| t.kind == TokenKind::Directive)
            .filter_map(|t| {
                let rest = t.text(src)[1..].trim_start();
                let rest = rest.strip_prefix("line").unwrap_or(rest).trim_start();
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().ok().map(|n| (t.line, n))
            })
            .collect();
        Rewriter {
            line_marks,
            src,
            toks,
            macros,
            needs: Needs::default(),
            copies: Vec::new(),
            done: HashSet::new(),
            in_progress: HashSet::new(),
            insert_at: 0,
            stored: HashSet::new(),
            stage: None,
        }
    }

    /// The line the compiler reports for physical line `phys` of the source.
    pub fn logical(&self, phys: u32) -> u32 {
        match self.line_marks.iter().rev().find(|(at, _)| *at < phys) {
            Some(&(at, n)) => n.saturating_add(phys - at - 1),
            None => phys,
        }
    }

    pub(super) fn text(&self, j: usize) -> &'s str {
        self.toks.get(j).map_or("", |t| t.text(self.src))
    }

    pub(super) fn is(&self, j: usize, p: &str) -> bool {
        self.toks.get(j).is_some_and(|t| t.kind == TokenKind::Punct && t.text(self.src) == p)
    }

    pub(super) fn close_of(&self, open: usize) -> R<usize> {
        matching(self.src, &self.toks, open)
            .map(|e| e - 1)
            .ok_or_else(|| self.refuse(open, open + 1, "unbalanced brackets"))
    }

    /// A refusal quoting tokens `a..b`.
    pub fn refuse(&self, a: usize, b: usize, reason: impl Into<String>) -> Refusal {
        let a = a.min(self.toks.len().saturating_sub(1));
        let b = b.clamp(a + 1, self.toks.len());
        let mut construct = one_line(&self.src[self.toks[a].span.start..self.toks[b - 1].span.end]);
        if construct.chars().count() > 80 {
            construct = construct.chars().take(77).collect::<String>() + "...";
        }
        Refusal { line: self.logical(self.toks[a].line), construct, reason: reason.into() }
    }

    fn target_at(&self, j: usize, ctx: &[Target]) -> Option<usize> {
        let t = self.toks.get(j)?;
        if t.kind != TokenKind::Ident || (j > 0 && (self.is(j - 1, ".") || self.is(j - 1, "->"))) {
            return None;
        }
        ctx.iter().position(|g| g.name == t.text(self.src))
    }

    fn is_macro(&self, j: usize) -> bool {
        self.toks.get(j).is_some_and(|t| t.kind == TokenKind::Ident) && self.macros.contains_key(self.text(j))
    }

    /// Whether the `&`, `*`, `+` or `-` at `j` is a unary operator.
    pub(super) fn unary(&self, j: usize) -> bool {
        if j == 0 {
            return true;
        }
        let p = self.toks[j - 1];
        match p.kind {
            TokenKind::Ident => matches!(p.text(self.src), "return" | "case" | "sizeof"),
            TokenKind::Number | TokenKind::Str | TokenKind::Char => false,
            TokenKind::Punct => !matches!(p.text(self.src), ")" | "]" | "++" | "--"),
            _ => true,
        }
    }

    /// The text of tokens `lo..hi` (and what lies between them) with every access to a target
    /// rewritten.
    pub fn expr(&mut self, lo: usize, hi: usize, ctx: &[Target]) -> R<String> {
        if lo >= hi {
            return Ok(String::new());
        }
        let src = self.src;
        let mut out = String::new();
        let mut cursor = self.toks[lo].span.start;
        let mut j = lo;
        while j < hi {
            match self.at(j, hi, ctx)? {
                Some((end, text)) => {
                    let (a, b) = (self.toks[j].span.start, self.toks[end - 1].span.end);
                    out.push_str(&src[cursor..a]);
                    out.push_str(&text);
                    // Keep the line count so that later lines keep their numbers.
                    out.extend(std::iter::repeat_n('\n', src[a..b].matches('\n').count()));
                    cursor = b;
                    j = end;
                }
                None => j += 1,
            }
        }
        out.push_str(&src[cursor..self.toks[hi - 1].span.end]);
        Ok(out)
    }

    /// A replacement for the tokens from `j` to the returned end, if one starts at `j`.
    fn at(&mut self, j: usize, hi: usize, ctx: &[Target]) -> R<Option<(usize, String)>> {
        let t = self.toks[j];
        let s = self.text(j);
        let member = j > 0 && (self.is(j - 1, ".") || self.is(j - 1, "->"));
        if t.kind == TokenKind::Ident && !member && self.macros.contains_key(s) {
            if let Some(g) = ctx.iter().find(|g| funcs::mentions(&self.macros, s, &g.name)) {
                let line = self.logical(self.macros[s].line);
                return Err(self.refuse(
                    j,
                    j + 1,
                    format!(
                        "macro `{s}` (defined on line {line}) mentions `{}`: its expansion could change an access",
                        g.name
                    ),
                ));
            }
        }
        if t.kind == TokenKind::Ident && s == "sizeof" {
            return self.sizeof(j, ctx);
        }
        if t.kind == TokenKind::Ident && s == "return" && self.stage.is_some() {
            return self.staged_return(j).map(Some);
        }
        if t.kind == TokenKind::Ident && !member && self.is(j + 1, "(") && !NOT_CALLS.contains(&s) {
            return self.call(j, ctx);
        }
        if self.is(j, "&") && self.unary(j) && self.target_at(j + 1, ctx).is_some() {
            return self.access(j, hi, ctx).map(Some);
        }
        if self.is(j, "*") && self.unary(j) && self.target_at(j + 1, ctx).is_some() {
            return Err(self.refuse(j, j + 2, "dereference of the whole buffer pointer (write `p[0]`)"));
        }
        if self.is(j, "(") && self.target_at(j + 1, ctx).is_some() && self.is(j + 2, "+") {
            return self.access(j, hi, ctx).map(Some);
        }
        if self.target_at(j, ctx).is_some() {
            return self.access(j, hi, ctx).map(Some);
        }
        Ok(None)
    }

    /// `sizeof(*p)`, `sizeof *p`, `sizeof(p[e])`: the element type, which the rewrite changes
    /// from the structure to a word, so it is spelled out. `sizeof(p)` stays.
    fn sizeof(&mut self, j: usize, ctx: &[Target]) -> R<Option<(usize, String)>> {
        let mut k = j + 1;
        let paren = self.is(k, "(");
        k += paren as usize;
        let deref = self.is(k, "*");
        k += deref as usize;
        let Some(ti) = self.target_at(k, ctx) else {
            return Ok(None);
        };
        let mut e = k + 1;
        if !deref {
            if self.is(e, "[") {
                e = self.close_of(e)? + 1;
            } else if paren && self.is(e, ")") {
                return Ok(Some((e + 1, self.src[self.toks[j].span.start..self.toks[e].span.end].to_string())));
            } else {
                return Ok(None);
            }
        }
        if paren {
            if !self.is(e, ")") {
                return Ok(None);
            }
            e += 1;
        } else if self.is(e, ".") || self.is(e, "->") || self.is(e, "[") {
            return Ok(None);
        }
        let g = &ctx[ti];
        let ty = match g.kind {
            Kind::Struct => g.layout.type_name.clone(),
            _ => g.base.clone(),
        };
        Ok(Some((e, format!("sizeof({ty})"))))
    }

    /// A call: a target passed bare as an argument is followed into a private copy of the
    /// callee; atomics on a target refuse.
    fn call(&mut self, j: usize, ctx: &[Target]) -> R<Option<(usize, String)>> {
        let name = self.text(j);
        let close = self.close_of(j + 1)?;
        let mut args = Vec::new();
        let (mut depth, mut start) = (0usize, j + 2);
        for k in j + 2..close {
            match self.text(k) {
                "(" | "[" | "{" if self.toks[k].kind == TokenKind::Punct => depth += 1,
                ")" | "]" | "}" if self.toks[k].kind == TokenKind::Punct => depth -= 1,
                "," if depth == 0 && self.toks[k].kind == TokenKind::Punct => {
                    args.push((start, k));
                    start = k + 1;
                }
                _ => {}
            }
        }
        if start < close || !args.is_empty() {
            args.push((start, close));
        }
        let inside = (j + 2..close).find(|&k| self.target_at(k, ctx).is_some());
        if let Some(k) = inside.filter(|_| name.starts_with("atomic_") || name.starts_with("atom_")) {
            let g = &ctx[self.target_at(k, ctx).unwrap()].name;
            return Err(self.refuse(
                j,
                close + 1,
                format!("atomic operation on `{g}`: the rewriter does not rewrite atomics on a rewritten buffer"),
            ));
        }
        let bare: Vec<(usize, usize)> = args
            .iter()
            .enumerate()
            .filter(|(_, &(a, b))| b == a + 1)
            .filter_map(|(n, &(a, _))| self.target_at(a, ctx).map(|ti| (n, ti)))
            .collect();
        if bare.is_empty() {
            return Ok(None);
        }
        let g = ctx[bare[0].1].name.clone();
        if ctx[bare[0].1].space == Space::Local {
            return Err(self.refuse(j, close + 1, format!("`{g}` is passed to `{name}`: a staged buffer is only read through its work-item's own structure, in the kernel itself")));
        }
        if self.macros.contains_key(name) {
            return Err(self.refuse(
                j,
                close + 1,
                format!("`{g}` is passed to macro `{name}`, whose expansion the rewriter does not follow"),
            ));
        }
        let def = match funcs::find_function(self.src, &self.toks, name) {
            None => {
                return Err(self.refuse(j, close + 1, format!("`{g}` is passed to `{name}`, which the program source does not define (a builtin or an external function)")))
            }
            Some(Err(e)) => return Err(self.refuse(j, close + 1, format!("`{g}` is passed to `{name}`, whose declaration is not understood: {e}"))),
            Some(Ok(d)) if d.is_kernel => {
                return Err(self.refuse(j, close + 1, format!("`{g}` is passed to kernel `{name}` called as a function")))
            }
            Some(Ok(d)) => d,
        };
        let mut callee_targets = Vec::new();
        for &(n, ti) in &bare {
            let Some(p) = def.params.get(n) else {
                return Err(self.refuse(j, close + 1, format!("`{name}` has no parameter {}", n + 1)));
            };
            let g = &ctx[ti];
            let same_type = match g.kind {
                Kind::Struct => p.type_name == g.layout.type_name,
                _ => word_scalar(&p.type_name).is_some_and(|(s, _)| s.name() == g.base),
            };
            if !p.pointer || p.space != AddrSpace::Global || !same_type {
                return Err(self.refuse(
                    j,
                    close + 1,
                    format!(
                        "`{}` is passed to parameter `{}` of `{name}`, which is not a `__global {}*`",
                        g.name, p.name, g.layout.type_name
                    ),
                ));
            }
            let kind = match &g.kind {
                // The extent's name means nothing inside the callee.
                Kind::FlatSoa { .. } => Kind::FlatSoa { extent: Vec::new() },
                k => k.clone(),
            };
            callee_targets.push((
                n,
                Target {
                    name: p.name.clone(),
                    m: format!("clayout_M_{}", p.name),
                    is_const: p.is_const,
                    kind,
                    ..g.clone()
                },
            ));
        }
        let key = callee_targets.iter().map(|(n, g)| format!("{n}={}", g.descriptor())).collect::<Vec<_>>().join(",");
        let copy = format!("clayout_{name}_{:08x}", emit::fnv(&format!("{name}({key})")));
        if self.in_progress.contains(&copy) {
            return Err(self.refuse(j, close + 1, format!("recursive call of `{name}`")));
        }
        if !self.done.contains(&copy) {
            self.in_progress.insert(copy.clone());
            let text = self.function_copy(&def, &copy, &callee_targets)?;
            self.in_progress.remove(&copy);
            self.done.insert(copy.clone());
            self.copies.push(emit::guarded(&copy, &text));
            self.insert_at = self.insert_at.max(self.toks[def.close].span.end);
        }
        let mut parts = Vec::new();
        for (n, &(a, b)) in args.iter().enumerate() {
            match bare.iter().find(|(m, _)| *m == n) {
                Some(&(_, ti)) => parts.push(ctx[ti].name.clone()),
                None => parts.push(self.expr(a, b, ctx)?.trim().to_string()),
            }
        }
        for &(_, ti) in &bare {
            parts.push(ctx[ti].m.clone());
        }
        Ok(Some((close + 1, format!("{copy}({})", parts.join(", ")))))
    }

    /// A copy of function `def` named `new_name`, with `targets` (parameter index, target)
    /// rewritten and a trailing `ulong` M parameter for each.
    pub fn function_copy(&mut self, def: &FnDef, new_name: &str, targets: &[(usize, Target)]) -> R<String> {
        let mut out = self.header(def, new_name, targets);
        let ctx: Vec<Target> = targets.iter().map(|(_, g)| g.clone()).collect();
        out.push_str(&self.expr(def.open, def.close + 1, &ctx)?);
        out.push('\n');
        Ok(out)
    }

    /// The copy's `#line` and header, up to its body's `{`. A staged buffer keeps its
    /// parameter: only the copy's prologue and epilogue address it, word by word.
    pub fn header(&self, def: &FnDef, new_name: &str, targets: &[(usize, Target)]) -> String {
        let src = self.src;
        let mut edits: Vec<(usize, usize, String)> =
            vec![(self.toks[def.name].span.start, self.toks[def.name].span.end, new_name.to_string())];
        for (n, g) in targets {
            let p = &def.params[*n];
            if matches!(g.kind, Kind::Struct) && g.space == Space::Asta {
                edits.push((p.span.start, p.span.end, param_text(src, p, &g.base)));
            }
        }
        let last = def.params.last().map_or(self.toks[def.open].span.start, |p| p.span.end);
        let extra: String = targets.iter().map(|(_, g)| format!(", ulong {}", g.m)).collect();
        edits.push((last, last, extra));
        edits.sort_by_key(|e| (e.0, e.1));
        let mut out = format!("#line {}\n", self.logical(self.toks[def.start].line));
        let mut cursor = self.toks[def.start].span.start;
        for (a, b, text) in edits {
            out.push_str(&src[cursor..a]);
            out.push_str(&text);
            cursor = b;
        }
        out.push_str(&src[cursor..self.toks[def.open].span.start]);
        out
    }

    /// An access starting at `first` (`&`, the `(` of `(p + e)->`, or the target itself).
    fn access(&mut self, first: usize, hi: usize, ctx: &[Target]) -> R<(usize, String)> {
        let addr = self.is(first, "&");
        let j = first + addr as usize;
        let arrow_form = self.is(j, "(");
        let (ti, index, mut k) = if arrow_form {
            let close = self.close_of(j)?;
            if !self.is(close + 1, "->") {
                return Err(self.refuse(j, close + 1, "pointer arithmetic the rewriter cannot follow"));
            }
            (self.target_at(j + 1, ctx).unwrap(), Some((j + 3, close)), close + 1)
        } else {
            let ti = self.target_at(j, ctx).unwrap();
            if self.is(j + 1, "[") {
                let close = self.close_of(j + 1)?;
                (ti, Some((j + 2, close)), close + 1)
            } else if self.is(j + 1, "->") {
                (ti, None, j + 1)
            } else {
                return Err(self.bare_use(j, &ctx[ti].name));
            }
        };
        if index.is_some_and(|(a, b)| a >= b) {
            return Err(self.refuse(first, k, "empty subscript"));
        }
        let g = ctx[ti].clone();
        let index_text = match index {
            // The subscript is the work-item's own structure, which sits at its local id.
            _ if g.space == Space::Local => {
                if addr {
                    return Err(self.refuse(
                        first,
                        k,
                        format!("address of a word of staged `{}`: it would point to the local copy", g.name),
                    ));
                }
                self.staged_subscript(first, k, index, &g.name)?;
                "clayout_lid".to_string()
            }
            Some((a, b)) => format!("({})", self.expr(a, b, ctx)?.trim()),
            None => "0".to_string(),
        };
        let pure = index.is_none_or(|(a, b)| self.pure(a, b));
        let (end, text) = match g.kind {
            Kind::Struct => self.struct_access(first, addr, k, hi, ctx, &g, &index_text, pure)?,
            _ => {
                if addr {
                    return Err(self.refuse(first, k, "address of a word of a flat buffer: the callee could index from it, and neighbouring words are not contiguous in ASTA"));
                }
                if index.is_none() {
                    return Err(self.refuse(first, k + 1, "`->` on a flat buffer"));
                }
                let (a, b) = index.unwrap();
                let idx = self.flat_index(&g, a, b, &index_text, ctx)?;
                (k, format!("{}[{idx}]", g.name))
            }
        };
        let incdec = |j: usize| self.is(j, "++") || self.is(j, "--");
        let assigned =
            self.toks.get(end).is_some_and(|t| t.kind == TokenKind::Punct && ASSIGN_OPS.contains(&t.text(self.src)));
        if addr || assigned || incdec(end) || (first > 0 && incdec(first - 1)) {
            self.stored.insert(g.name.clone());
        }
        k = end;
        if self.toks[first..(k + 1).min(self.toks.len())].iter().any(|t| t.kind == TokenKind::Directive) {
            return Err(self.refuse(first, k, "a preprocessor directive inside an access"));
        }
        if self.is_macro(k) || (first > 0 && self.is_macro(first - 1)) {
            return Err(self.refuse(first, k + 1, "a macro next to an access could change its meaning"));
        }
        Ok((k, text))
    }

    #[allow(clippy::too_many_arguments)]
    fn struct_access(
        &mut self,
        first: usize,
        addr: bool,
        mut k: usize,
        hi: usize,
        ctx: &[Target],
        g: &Target,
        index: &str,
        pure: bool,
    ) -> R<(usize, String)> {
        let (words, m, space) = (g.layout.words, g.m.as_str(), g.space);
        if !(self.is(k, ".") || self.is(k, "->")) {
            if self.is(k, "[") {
                return Err(self.refuse(first, k + 1, "subscript of a whole structure"));
            }
            if addr {
                return Err(self.refuse(
                    first,
                    k,
                    "address of a whole structure: its words are not contiguous in ASTA",
                ));
            }
            let (ld, st) = self.needs.structure(space, &g.layout, &g.base);
            let name = g.array();
            let load = format!("{ld}({name}, {index}, {m})");
            let idx = index.to_string();
            let mm = m.to_string();
            return self.value(first, k, hi, ctx, &g.name, "a whole structure", load, false, &|rhs| {
                format!("{st}({name}, {idx}, {mm}, {rhs})")
            });
        }
        let mname = self.text(k + 1);
        let Some(mem) = g.layout.member(mname).cloned() else {
            return Err(self.refuse(first, k + 2, format!("`{}` has no member `{mname}`", g.layout.type_name)));
        };
        k += 2;
        let mut s = mem.word_offset.to_string();
        let mut elem_pure = true;
        if mem.count > 1 {
            if !self.is(k, "[") {
                return Err(self.refuse(
                    first,
                    k,
                    "an array member used without a subscript (its elements are not contiguous in ASTA)",
                ));
            }
            let close = self.close_of(k)?;
            if close == k + 1 {
                return Err(self.refuse(first, close + 1, "empty subscript"));
            }
            elem_pure = self.pure(k + 1, close);
            let e = self.expr(k + 1, close, ctx)?;
            s = format!("{} + ({}) * {}", mem.word_offset, e.trim(), mem.stride());
            k = close + 1;
        }
        let array = g.array();
        let words_ptr = |is_const: bool| words_of(space, &array, &g.base, &mem.scalar, is_const);
        if mem.lanes == 1 {
            if addr && mem.count > 1 {
                return Err(self.refuse(first, k, "address of an array member's element: the callee could index from it, and the elements are not contiguous in ASTA"));
            }
            let w = emit::word(space, &words_ptr(g.is_const), index, &s, words, m);
            return Ok((k, if addr { format!("&{w}") } else { w }));
        }
        // A vector member, or one of its components.
        if self.is(k, ".") && self.toks.get(k + 1).is_some_and(|t| t.kind == TokenKind::Ident) {
            let sel = self.text(k + 1);
            if let Some(lane) = component(sel) {
                if lane >= mem.lanes {
                    return Err(self.refuse(first, k + 2, format!("component `.{sel}` of a {}", mem.elem_type())));
                }
                if addr {
                    return Err(self.refuse(first, k + 2, "address of a vector component"));
                }
                let s = format!("{s} + {lane}");
                return Ok((k + 2, emit::word(space, &words_ptr(g.is_const), index, &s, words, m)));
            }
        }
        if addr {
            return Err(self.refuse(first, k, "address of a vector member: its lanes are not contiguous in ASTA"));
        }
        if self.is(k, "[") {
            return Err(self.refuse(first, k + 1, "subscript of a vector member (write `.sN`)"));
        }
        let (ld, st) = self.needs.vector(space, &mem.scalar, mem.lanes);
        let load = format!("{ld}({}, {index}, {s}, {words}, {m})", words_ptr(true));
        let sp = words_ptr(false);
        let (idx, mm, ty) = (index.to_string(), m.to_string(), mem.elem_type());
        // The explicit conversion keeps assignment's scalar-to-vector widening (`v = 0.0f`).
        self.value(first, k, hi, ctx, &g.name, "a whole vector member", load, pure && elem_pure, &|rhs| {
            format!("{st}({sp}, {idx}, {s}, {words}, {mm}, ({ty}){rhs})")
        })
    }

    /// A multi-word value at tokens `first..k`: loaded where read, stored where assigned.
    #[allow(clippy::too_many_arguments)]
    fn value(
        &mut self,
        first: usize,
        k: usize,
        hi: usize,
        ctx: &[Target],
        target: &str,
        what: &str,
        load: String,
        compound_ok: bool,
        store: &dyn Fn(String) -> String,
    ) -> R<(usize, String)> {
        if first > 0 && (self.is(first - 1, "++") || self.is(first - 1, "--")) {
            return Err(self.refuse(first - 1, k, format!("++/-- on {what}")));
        }
        let op = self.text(k);
        let is_op = self.toks.get(k).is_some_and(|t| t.kind == TokenKind::Punct);
        if is_op && (op == "++" || op == "--") {
            return Err(self.refuse(first, k + 1, format!("++/-- on {what}")));
        }
        if is_op && ASSIGN_OPS.contains(&op) {
            let end = self.assign_end(k + 1, hi);
            if end == k + 1 {
                return Err(self.refuse(first, k + 1, "assignment without a right-hand side"));
            }
            let rhs = self.expr(k + 1, end, ctx)?;
            let rhs = rhs.trim();
            self.stored.insert(target.to_string());
            if op == "=" {
                return Ok((end, store(format!("({rhs})"))));
            }
            if !compound_ok {
                return Err(self.refuse(
                    first,
                    end,
                    format!("compound assignment to {what} whose subscripts may have side effects"),
                ));
            }
            let bin = &op[..op.len() - 1];
            return Ok((end, store(format!("{load} {bin} ({rhs})"))));
        }
        // A swizzle (`.xy`, `.lo`) of the loaded value may be read, not written.
        if self.is(k, ".") {
            let after = self.text(k + 2);
            let assigned = self.toks.get(k + 2).is_some_and(|t| t.kind == TokenKind::Punct)
                && (ASSIGN_OPS.contains(&after) || after == "++" || after == "--");
            if assigned {
                return Err(self.refuse(first, k + 3, format!("store through `.{}` of {what}", self.text(k + 1))));
            }
        }
        Ok((k, load))
    }

    /// End of the assignment expression starting at `from`: the first `,` `;` `:` or closing
    /// bracket at its own level.
    fn assign_end(&self, from: usize, hi: usize) -> usize {
        let (mut depth, mut questions) = (0usize, 0usize);
        for k in from..hi {
            if self.toks[k].kind != TokenKind::Punct {
                continue;
            }
            match self.text(k) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" if depth == 0 => return k,
                ")" | "]" | "}" => depth -= 1,
                "," | ";" if depth == 0 => return k,
                "?" if depth == 0 => questions += 1,
                ":" if depth == 0 && questions == 0 => return k,
                ":" if depth == 0 => questions -= 1,
                _ => {}
            }
        }
        hi
    }

    /// Whether evaluating tokens `a..b` twice is the same as once.
    fn pure(&self, a: usize, b: usize) -> bool {
        (a..b).all(|k| {
            let t = self.toks[k];
            let s = t.text(self.src);
            match t.kind {
                TokenKind::Punct => !(ASSIGN_OPS.contains(&s) || s == "++" || s == "--"),
                TokenKind::Ident if self.is(k + 1, "(") => {
                    PURE_CALLS.contains(&s) || s.starts_with("convert_") || s.starts_with("as_")
                }
                TokenKind::Ident => !self.macros.contains_key(s),
                TokenKind::Directive | TokenKind::Invalid => false,
                _ => true,
            }
        })
    }

    /// The word index of flat subscript `a..b` (rewritten as `index`).
    fn flat_index(&mut self, g: &Target, a: usize, b: usize, index: &str, ctx: &[Target]) -> R<String> {
        let (s, m) = (g.layout.words, &g.m);
        let extent = match &g.kind {
            Kind::FlatAos => return Ok(format!("clayout_aos_flat({index}, {s}, {m})")),
            Kind::FlatSoa { extent } => extent.clone(),
            Kind::Struct => unreachable!(),
        };
        let general = format!("clayout_soa_flat({index}, {s}, {m})");
        if extent.is_empty() {
            return Ok(general);
        }
        // Split at the additive operators of the subscript's own level; anything of lower
        // precedence there (`?:`, shifts, comparisons) leaves only the general form.
        let mut terms: Vec<(bool, usize, usize)> = Vec::new();
        let (mut depth, mut start, mut neg) = (0usize, a, false);
        for k in a..b {
            let t = self.toks[k];
            if t.kind != TokenKind::Punct {
                continue;
            }
            match t.text(self.src) {
                "(" | "[" => depth += 1,
                ")" | "]" => depth = depth.saturating_sub(1),
                op @ ("+" | "-") if depth == 0 && k > a && !self.unary(k) => {
                    terms.push((neg, start, k));
                    start = k + 1;
                    neg = op == "-";
                }
                "*" | "/" | "%" | "+" | "-" | "~" | "!" | "." | "->" => {}
                _ if depth == 0 => return Ok(general),
                _ => {}
            }
        }
        terms.push((neg, start, b));
        let texts = |k0: usize, k1: usize| -> Vec<&str> { (k0..k1).map(|k| self.text(k)).collect() };
        let word_of = |t: &[&str]| -> Option<u32> {
            let lit = |x: &str| {
                let x = x.trim_end_matches(['u', 'U', 'l', 'L']);
                (x == "0" || !x.starts_with('0')).then(|| x.parse::<u32>().ok()).flatten()
            };
            let n = extent.len();
            if t.len() == n && t == extent.as_slice() {
                return Some(1);
            }
            if t.len() == n + 2 && t[..n] == extent[..] && t[n] == "*" {
                return lit(t[n + 1]);
            }
            if t.len() == n + 2 && t[2..] == extent[..] && t[1] == "*" {
                return lit(t[0]);
            }
            None
        };
        let found = terms.iter().position(|&(neg, k0, k1)| !neg && word_of(&texts(k0, k1)).is_some_and(|c| c < s));
        let Some(f) = found else {
            return Ok(general);
        };
        let c = word_of(&texts(terms[f].1, terms[f].2)).unwrap();
        let mut i = String::new();
        for (n, &(neg, k0, k1)) in terms.iter().enumerate() {
            if n == f {
                continue;
            }
            let t = self.expr(k0, k1, ctx)?;
            if neg {
                i.push_str(" - ");
            } else if !i.is_empty() {
                i.push_str(" + ");
            }
            i.push_str(t.trim());
        }
        if i.is_empty() {
            i.push('0');
        }
        Ok(format!("clayout_soa_at(({}), {c}, {s}, {m})", i.trim()))
    }

    /// Why a bare use of the buffer's name refuses.
    fn bare_use(&self, j: usize, name: &str) -> Refusal {
        let prev = if j > 0 { self.text(j - 1) } else { "" };
        let next = self.text(j + 1);
        let reason = if next == "=" {
            format!("`{name}` is reassigned (or shadowed by a local declaration)")
        } else if matches!(next, "+" | "-" | "+=" | "-=" | "++" | "--") || matches!(prev, "+" | "-" | "++" | "--") {
            format!("pointer arithmetic on `{name}` that the rewriter cannot follow")
        } else if prev == ")" {
            format!("a cast of `{name}` to another type")
        } else if prev == "=" || prev == "return" {
            format!("the address `{name}` is assigned to another variable, stored or returned")
        } else {
            format!(
                "`{name}` is used as a value (compared, converted or passed on) where the rewriter cannot follow it"
            )
        };
        let mut from = j;
        if prev == ")" {
            // Quote the cast from its `(`.
            let mut depth = 0usize;
            for k in (0..j).rev() {
                match self.text(k) {
                    ")" => depth += 1,
                    "(" => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    from = k;
                    break;
                }
            }
        }
        let to = (j + 1..j + 3).find(|&k| self.is(k, ";") || self.is(k, ")")).unwrap_or(j + 3);
        self.refuse(from, to, reason)
    }
}

/// A rewritten buffer parameter: the same address space and qualifiers, pointing to `base`.
pub(crate) fn param_text(src: &str, p: &Param, base: &str) -> String {
    let text = p.span.of(src);
    let toks = lex(text);
    let (mut after_star, mut restrict, mut const_ptr, mut volatile) = (false, false, false, false);
    for t in &toks {
        match t.text(text) {
            "*" => after_star = true,
            "restrict" | "__restrict" | "__restrict__" => restrict = true,
            "const" | "__const" if after_star => const_ptr = true,
            "volatile" | "__volatile" if !after_star => volatile = true,
            _ => {}
        }
    }
    format!(
        "__global {}{}{base} *{}{}{}",
        if p.is_const { "const " } else { "" },
        if volatile { "volatile " } else { "" },
        if restrict { "restrict " } else { "" },
        if const_ptr { "const " } else { "" },
        p.name
    )
}
