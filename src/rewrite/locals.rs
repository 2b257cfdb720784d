//! Before a function's body is rewritten: which of its local pointers point into a rewritten
//! buffer (each becomes an offset variable of the copy, see target.rs), where each name means
//! what, and which buffer parameters the body moves (`p += k`, `p++`: the copy gives them an
//! offset variable, declared at the start of the body).
//!
//! A local is followed when a value assigned to it (its initializer, `q = ...`) is a pointer
//! into a followed buffer; every value assigned to it must then point into that one buffer,
//! with the local's type: a pointer merged from two buffers, or from a buffer and anything
//! else (`0`, another pointer), refuses the kernel.

use super::funcs::FnDef;
use super::source::R;
use super::syntax::QUALIFIERS;
use super::target::{off_type, Ctx, Decl, Target};
use super::walk::{Policy, Rewriter};
use crate::clc::lex::TokenKind;
use std::collections::HashSet;

/// A declaration statement of a function body.
struct Declaration {
    /// Its first token.
    first: usize,
    /// The pointee type of its pointers, as written (qualifiers left out).
    ty: String,
    declarators: Vec<Declarator>,
    /// Its `;`.
    end: usize,
}

struct Declarator {
    name: usize,
    /// A plain pointer (`*q`): not an array of pointers, not a function.
    pointer: bool,
    /// Any other pointer-like declarator (`*a[2]`, `(*f)(...)`).
    other: bool,
    init: Option<(usize, usize)>,
    /// The end of the name's scope.
    scope_end: usize,
}

/// What the body needs before it is rewritten.
pub(super) struct Scan {
    pub ctx: Ctx,
    /// Declarations of the parameters' offset variables, for the start of the body.
    pub prologue: String,
}

impl<P: Policy> Rewriter<'_, P> {
    /// The names of function `def`'s body, given its followed parameters.
    pub(super) fn scan(&self, def: &FnDef, params: Vec<Target>) -> R<Scan> {
        let (open, close) = (def.open, def.close);
        let decls = self.declarations(open, close);
        let mut ctx = Ctx::default();
        for (i, g) in params.into_iter().enumerate() {
            ctx.scopes.push((g.name.clone(), open, close + 1, Some(i)));
            ctx.targets.push(g);
        }
        let param_names: HashSet<String> = ctx.targets.iter().map(|g| g.name.clone()).collect();
        for d in &decls {
            for x in &d.declarators {
                let name = self.text(x.name);
                if param_names.contains(name) {
                    return Err(self.refuse(x.name, x.name + 1, format!("`{name}` is shadowed by a local declaration: the rewriter does not follow two meanings of one name")));
                }
                ctx.scopes.push((name.to_string(), x.name, x.scope_end, None));
            }
        }
        // Follow locals until no more become followed.
        let mut followed: Vec<Option<usize>> = decls.iter().flat_map(|d| d.declarators.iter().map(|_| None)).collect();
        loop {
            let mut changed = false;
            let mut n = 0;
            for d in &decls {
                for x in &d.declarators {
                    let slot = n;
                    n += 1;
                    if followed[slot].is_some() || !(x.pointer || x.other) {
                        continue;
                    }
                    let Some(from) = self.assigned_from(x, &ctx)? else { continue };
                    let base = ctx.targets[from].clone();
                    if !x.pointer {
                        let why = if x.other {
                            "stored into an array of pointers (or a pointer to a function)"
                        } else {
                            "stored into a variable that is not a pointer"
                        };
                        return Err(self.refuse(
                            x.name,
                            x.name + 1,
                            format!("a pointer into `{}` {why}: the rewriter does not follow it there", base.buffer),
                        ));
                    }
                    let Some(view) = self.view_of(&d.ty, &base) else {
                        return Err(self.refuse(
                            x.name,
                            x.name + 1,
                            format!(
                                "`{}` points to `{}`, which is neither `{}`'s structure nor a builtin scalar or vector",
                                self.text(x.name),
                                d.ty,
                                base.buffer
                            ),
                        ));
                    };
                    let name = self.text(x.name).to_string();
                    // `const Body *q` (not `Body *const q`): what it points to is not written.
                    let star = (d.first..x.name).find(|&k| self.is(k, "*")).unwrap_or(x.name);
                    let is_const =
                        base.is_const || (d.first..star).any(|k| matches!(self.text(k), "const" | "__const"));
                    let t = ctx.targets.len();
                    ctx.targets.push(Target {
                        name: name.clone(),
                        view,
                        off: Some(name),
                        param: false,
                        is_const,
                        ..base
                    });
                    let scope = ctx.scopes.iter_mut().find(|s| s.1 == x.name).expect("every declarator has a scope");
                    scope.3 = Some(t);
                    followed[slot] = Some(t);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        // Declarations of followed locals become declarations of their offsets.
        let mut n = 0;
        for d in &decls {
            let marks: Vec<Option<usize>> = d
                .declarators
                .iter()
                .map(|_| {
                    n += 1;
                    followed[n - 1]
                })
                .collect();
            if marks.iter().all(Option::is_none) {
                continue;
            }
            if marks.iter().any(Option::is_none) {
                return Err(self.refuse(
                    d.first,
                    d.end,
                    "a declaration of pointers the rewriter follows together with other names: declare them apart",
                ));
            }
            let ts: Vec<usize> = marks.into_iter().flatten().collect();
            let g = &ctx.targets[ts[0]];
            let ty = off_type(&g.view, g.layout.word_bytes);
            let declarators = d.declarators.iter().zip(&ts).map(|(x, &t)| (x.name, x.init, t)).collect();
            ctx.decls.insert(d.first, Decl { ty, declarators, end: d.end });
        }
        // Parameters the body moves get an offset variable.
        let mut prologue = String::new();
        for t in 0..ctx.targets.len() {
            let g = &ctx.targets[t];
            if !g.param || g.off.is_some() || !self.moves(t, &ctx, open, close) {
                continue;
            }
            let var = format!("clayout_o_{}", g.name);
            prologue.push_str(&format!(" {} {var} = 0;", g.off_type()));
            ctx.targets[t].off = Some(var);
        }
        Ok(Scan { ctx, prologue })
    }

    /// The target every value assigned to local `x` points into, if one does; a refusal when
    /// they point into different buffers, or only some of them into one.
    fn assigned_from(&self, x: &Declarator, ctx: &Ctx) -> R<Option<usize>> {
        let name = self.text(x.name);
        let mut ranges: Vec<(usize, usize)> = x.init.into_iter().collect();
        for k in x.name + 1..x.scope_end {
            let resolves = self.text(k) == name
                && self.toks[k].kind == TokenKind::Ident
                && !(self.is(k - 1, ".") || self.is(k - 1, "->"))
                && ctx
                    .scopes
                    .iter()
                    .filter(|s| s.0 == name && s.1 <= k && k < s.2)
                    .max_by_key(|s| s.1)
                    .is_some_and(|s| s.1 == x.name);
            let deref = self.is(k - 1, "*") && self.unary(k - 1);
            if resolves && !deref && self.is(k + 1, "=") {
                ranges.push((k + 2, self.assign_end(k + 2, x.scope_end)));
            }
        }
        let mut found: Option<usize> = None;
        let mut plain = None;
        for &(a, b) in &ranges {
            let t = match self.p_expr(a, b, ctx) {
                Ok(Some((e, n))) if e == b => Some(self.node_info(&n, ctx).0),
                // Not a whole pointer value: refused where it is rewritten, if it names a
                // followed pointer outside subscripts and not as an element.
                _ => self.pointer_mention(a, b, ctx),
            };
            match (t, found) {
                (None, _) => plain = Some((a, b)),
                (Some(t), None) => found = Some(t),
                (Some(t), Some(f)) if ctx.targets[t].buffer != ctx.targets[f].buffer => {
                    return Err(self.refuse(
                        a,
                        b,
                        format!(
                            "`{name}` points into `{}` and into `{}`: which buffer is known only at run time",
                            ctx.targets[f].buffer, ctx.targets[t].buffer
                        ),
                    ));
                }
                _ => {}
            }
        }
        if let (Some(f), Some((a, b))) = (found, plain) {
            return Err(self.refuse(a, b, format!("`{name}` points into `{}` and is also given a value that does not: which it holds is known only at run time", ctx.targets[f].buffer)));
        }
        Ok(found)
    }

    /// A followed name in tokens `a..b` that may give them a pointer value: not inside a
    /// subscript, not the pointer of an element (unless its address is taken).
    fn pointer_mention(&self, a: usize, b: usize, ctx: &Ctx) -> Option<usize> {
        let mut depth = 0usize;
        for k in a..b {
            match self.text(k) {
                "[" => depth += 1,
                "]" => depth = depth.saturating_sub(1),
                _ => {}
            }
            let Some(t) = self.target_at(k, ctx).filter(|_| depth == 0) else { continue };
            let element = self.is(k + 1, "[") || self.is(k + 1, "->");
            if !element || (k > a && self.is(k - 1, "&")) {
                return Some(t);
            }
        }
        None
    }

    /// Whether the body assigns, increments or decrements parameter target `t`.
    fn moves(&self, t: usize, ctx: &Ctx, open: usize, close: usize) -> bool {
        (open + 1..close).any(|k| {
            self.target_at(k, ctx) == Some(t)
                && !(self.is(k - 1, "*") && self.unary(k - 1))
                && (self.is_assign(k + 1)
                    || self.is(k + 1, "++")
                    || self.is(k + 1, "--")
                    || ((self.is(k - 1, "++") || self.is(k - 1, "--"))
                        && !(self.is(k + 1, "[") || self.is(k + 1, "->") || self.is(k + 1, "."))))
        })
    }

    /// The declaration statements of the body between braces `open` and `close`.
    fn declarations(&self, open: usize, close: usize) -> Vec<Declaration> {
        let mut out = Vec::new();
        let mut blocks = vec![close];
        let mut k = open + 1;
        while k < close {
            if self.is(k, "{") {
                blocks.push(self.close_of(k).unwrap_or(close));
            } else if self.is(k, "}") {
                blocks.pop();
            }
            let prev = self.text(k - 1);
            let for_init = self.is(k - 1, "(") && self.is_word(k.saturating_sub(2), "for");
            let start = matches!(prev, ";" | "{" | "}") && self.toks[k - 1].kind == TokenKind::Punct
                || for_init
                || self.toks[k - 1].kind == TokenKind::Directive;
            if start && self.is_type_at(k) && !self.is(k + 1, "(") && !self.is(k + 1, ":") {
                let scope_end =
                    if for_init { self.statement_end(k - 2, close) } else { *blocks.last().unwrap_or(&close) };
                if let Some(d) = self.declaration_at(k, close, scope_end) {
                    k = d.end + 1;
                    out.push(d);
                    continue;
                }
            }
            k += 1;
        }
        out
    }

    /// The declaration starting at `k`, if one does.
    fn declaration_at(&self, k: usize, hi: usize, scope_end: usize) -> Option<Declaration> {
        let mut j = k;
        let mut words = Vec::new();
        while j < hi && self.is_type_at(j) {
            // A type name directly followed by the declarator's name: the name is not a type
            // word (`float x`), unless the type is written as several words.
            let s = self.text(j);
            if !QUALIFIERS.contains(&s) || matches!(s, "unsigned" | "signed") {
                words.push(s);
            }
            if self.toks.get(j + 1).is_some_and(|t| t.kind == TokenKind::Ident) && !self.is_type_at(j + 1) {
                j += 1;
                break;
            }
            j += 1;
        }
        if words.is_empty() {
            return None;
        }
        let ty = words.iter().filter(|w| !matches!(**w, "struct" | "union" | "enum")).copied().collect::<Vec<_>>();
        let ty = if words.first() == Some(&"struct") { format!("struct {}", ty.join(" ")) } else { ty.join(" ") };
        let mut declarators = Vec::new();
        let mut a = j;
        let mut depth = 0usize;
        let mut e = j;
        while e < hi {
            let t = self.toks[e];
            if t.kind == TokenKind::Punct {
                match t.text(self.src) {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" | "}" if depth == 0 => return None,
                    ")" | "]" | "}" => depth -= 1,
                    "," | ";" if depth == 0 => {
                        declarators.push(self.declarator(a, e, scope_end)?);
                        a = e + 1;
                        if self.is(e, ";") {
                            return Some(Declaration { first: k, ty, declarators, end: e });
                        }
                    }
                    _ => {}
                }
            }
            e += 1;
        }
        None
    }

    /// One declarator at tokens `a..b`: `*name = init`, `name[4]`, `(*f)(int)`.
    fn declarator(&self, a: usize, b: usize, scope_end: usize) -> Option<Declarator> {
        let eq = (a..b).find(|&k| self.is(k, "="));
        let head_end = eq.unwrap_or(b);
        let name =
            (a..head_end).find(|&k| self.toks[k].kind == TokenKind::Ident && !QUALIFIERS.contains(&self.text(k)))?;
        let stars = (a..name).filter(|&k| self.is(k, "*")).count();
        let other = (a..head_end).any(|k| self.is(k, "(") || self.is(k, "["));
        Some(Declarator {
            name,
            pointer: stars == 1 && !other,
            other: stars > 0 && (other || stars > 1),
            init: eq.map(|e| (e + 1, b)),
            scope_end,
        })
    }
}
