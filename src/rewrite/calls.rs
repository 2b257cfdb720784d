//! Calls that receive a pointer into a rewritten buffer. A function of the program is followed
//! into a private copy, rewritten for the buffer's layout and the pointer's type (one per
//! layout, type and parameter position, shared by every caller), which receives the buffer,
//! its M and, for a pointer that is not the buffer's start, its offset. Builtins that read or
//! write through a pointer are rewritten where the pointer's words allow: `vloadn`/`vstoren`
//! lane by lane, atomics and `fract`-like builtins on the one word they touch. A pointer
//! passed anywhere else refuses the kernel. Also the copies' headers, for the kernel's own copy
//! too.

use super::emit::{self, fit, flat_lvalue, words_of, Addr, Fit, Space};
use super::funcs::{self, FnDef};
use super::ptr::{PNode, Ptr};
use super::source::R;
use super::target::{Access, Ctx, Host, Target, View};
use super::walk::{Policy, Rewriter};
use crate::clc::lex::{lex, TokenKind};
use crate::clc::signature::{AddrSpace, Param};
use crate::clc::types::word_type;

/// Builtins whose last argument is a pointer to one object they write (besides their result).
const POINTER_BUILTINS: [&str; 6] = ["fract", "modf", "sincos", "frexp", "lgamma_r", "remquo"];

impl<P: Policy> Rewriter<'_, P> {
    /// A call one of whose arguments is a pointer into a followed buffer.
    pub(super) fn call(&mut self, j: usize, ctx: &Ctx) -> R<Option<(usize, String)>> {
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
        let mut pointers: Vec<(usize, PNode)> = Vec::new();
        for (n, &(a, b)) in args.iter().enumerate() {
            if !(a..b).any(|k| self.target_at(k, ctx).is_some()) {
                continue;
            }
            if let Some((_, node)) = self.p_expr(a, b, ctx)?.filter(|(e, _)| *e == b) {
                pointers.push((n, node));
            }
        }
        if pointers.is_empty() {
            return Ok(None);
        }
        let first_g = ctx.targets[self.node_info(&pointers[0].1, ctx).0].clone();
        self.policy.pass(&self.code, (j, close + 1), &first_g, name)?;
        let g = first_g.buffer.clone();
        if name.starts_with("atomic_") || name.starts_with("atom_") || POINTER_BUILTINS.contains(&name) {
            return self.one_object(j, close, &args, &pointers, ctx).map(Some);
        }
        if let Some(n) = vector_io(name) {
            return self.vector_io(j, close, &args, &pointers, n, ctx).map(Some);
        }
        if self.macros.contains_key(name) {
            return Err(self.refuse(
                j,
                close + 1,
                format!("`{g}` is passed to macro `{name}`, whose expansion the rewriter does not follow"),
            ));
        }
        let returns_pointer =
            (1..self.toks.len()).any(|k| self.is_word(k, name) && self.is(k + 1, "(") && self.is(k - 1, "*"));
        if returns_pointer {
            return Err(self.refuse(j, close + 1, format!("`{g}` is passed to `{name}`, which returns a pointer: the rewriter does not follow a pointer out of a function")));
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
        let mut emitted: Vec<(usize, Ptr)> = Vec::new();
        let mut callee_targets = Vec::new();
        for (n, node) in &pointers {
            let Some(p) = def.params.get(*n) else {
                return Err(self.refuse(j, close + 1, format!("`{name}` has no parameter {}", n + 1)));
            };
            let (t, view) = self.node_info(node, ctx);
            let g = &ctx.targets[t];
            let pview = (p.pointer && p.space == AddrSpace::Global).then(|| self.view_of(&p.type_name, g)).flatten();
            if pview.as_ref() != Some(&view) {
                return Err(self.refuse(
                    j,
                    close + 1,
                    format!(
                        "a pointer to `{}` into `{}` is passed to parameter `{}` of `{name}`, which is not a `__global {} *`",
                        view.type_name(&g.layout),
                        g.buffer,
                        p.name,
                        view.type_name(&g.layout)
                    ),
                ));
            }
            let ptr = self.emit_ptr(node, ctx)?;
            let host = match &g.host {
                // The extent's name means nothing inside the callee.
                Host::Soa { .. } => Host::Soa { extent: Vec::new() },
                h => h.clone(),
            };
            let base = match view {
                View::Struct => g.base.clone(),
                _ => self.types.resolve(&p.type_name).to_string(),
            };
            callee_targets.push((
                *n,
                Target {
                    name: p.name.clone(),
                    buffer: p.name.clone(),
                    m: format!("clayout_M_{}", p.name),
                    is_const: p.is_const,
                    host,
                    view,
                    base,
                    off: ptr.off.as_ref().map(|_| format!("clayout_o_{}", p.name)),
                    param: true,
                    ..g.clone()
                },
            ));
            emitted.push((*n, ptr));
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
            match emitted.iter().find(|(m, _)| *m == n) {
                Some((_, p)) => parts.push(ctx.targets[p.t].buffer.clone()),
                None => parts.push(self.expr(a, b, ctx)?.trim().to_string()),
            }
        }
        for (_, p) in &emitted {
            parts.push(ctx.targets[p.t].m.clone());
            if let Some(o) = &p.off {
                parts.push(o.clone());
            }
        }
        Ok(Some((close + 1, format!("{copy}({})", parts.join(", ")))))
    }

    /// An atomic or `fract`-like builtin on one object: the word it touches, by address. Only
    /// a scalar that fits a word has one (an atomic needs a whole word).
    fn one_object(
        &mut self,
        j: usize,
        close: usize,
        args: &[(usize, usize)],
        pointers: &[(usize, PNode)],
        ctx: &Ctx,
    ) -> R<(usize, String)> {
        let name = self.text(j).to_string();
        let atomic = !POINTER_BUILTINS.contains(&name.as_str());
        let which = if atomic { 0 } else { args.len() - 1 };
        if pointers.len() != 1 || pointers[0].0 != which {
            return Err(self.refuse(
                j,
                close + 1,
                format!("a pointer into a rewritten buffer passed to `{name}` in a place the rewriter does not follow"),
            ));
        }
        let ptr = self.emit_ptr(&pointers[0].1, ctx)?;
        let g = ptr.target(ctx);
        let scalar = match &g.view {
            View::Scalar(s) => s.clone(),
            v => {
                let ty = v.type_name(&g.layout);
                return Err(self.refuse(
                    j,
                    close + 1,
                    format!("`{name}` on a `{ty}` of a rewritten buffer, whose words are not contiguous in ASTA"),
                ));
            }
        };
        let f = fit(g.view.scalar_bytes(), g.layout.word_bytes);
        if matches!(f, Fit::Split(_)) || (atomic && f != Fit::Word) {
            return Err(self.refuse(
                j,
                close + 1,
                format!("`{name}` on a `{scalar}` that does not fill one word of its buffer"),
            ));
        }
        let lv = match &pointers[0].1 {
            // `&p[i].count`: the member's word, found from the structure's index directly.
            PNode::Addr(e) if e.path.as_ref().is_some_and(|p| !p.steps.is_empty() && !p.decays()) => {
                let (g, index, pure) = self.elem_index(e, true, ctx)?;
                let access = Access { first: e.first, g, index, pure };
                self.member(&access, e.path.as_ref().unwrap(), e.end, ctx)?.1
            }
            _ => {
                let p = words_of(g.space, &g.array(), &g.base, &scalar, g.is_const);
                let x = ptr.value(ctx);
                flat_lvalue(matches!(g.host, Host::Soa { .. }), &p, &x, f, &g.layout.words.to_string(), &g.m)
            }
        };
        self.stored.insert(g.buffer.clone());
        let mut parts = Vec::new();
        for (n, &(a, b)) in args.iter().enumerate() {
            if n == which {
                parts.push(format!("&{lv}"));
            } else {
                parts.push(self.expr(a, b, ctx)?.trim().to_string());
            }
        }
        Ok((close + 1, format!("{name}({})", parts.join(", "))))
    }

    /// `vloadn(k, P)` and `vstoren(v, k, P)` on a pointer to scalars of a rewritten buffer:
    /// lanes `k*n ...` of the byte stream, each in its word.
    fn vector_io(
        &mut self,
        j: usize,
        close: usize,
        args: &[(usize, usize)],
        pointers: &[(usize, PNode)],
        n: u32,
        ctx: &Ctx,
    ) -> R<(usize, String)> {
        let name = self.text(j).to_string();
        let store = name.starts_with("vstore");
        let which = if store { 2 } else { 1 };
        if args.len() != which + 1 || pointers.len() != 1 || pointers[0].0 != which {
            return Err(self.refuse(
                j,
                close + 1,
                format!("a pointer into a rewritten buffer passed to `{name}` in a place the rewriter does not follow"),
            ));
        }
        let ptr = self.emit_ptr(&pointers[0].1, ctx)?;
        let g = ptr.target(ctx);
        let View::Scalar(scalar) = g.view.clone() else {
            let ty = g.view.type_name(&g.layout);
            return Err(self.refuse(j, close + 1, format!("`{name}` on a pointer to `{ty}`")));
        };
        let w = g.layout.word_bytes;
        let f = fit(g.view.scalar_bytes(), w);
        if matches!(g.host, Host::Soa { .. }) && f != Fit::Word {
            return Err(self.refuse(
                j,
                close + 1,
                format!("`{name}` on `{scalar}`s of SoA buffer `{}`, whose words are not of that size", g.buffer),
            ));
        }
        let soa = matches!(g.host, Host::Soa { .. });
        let (ld, st) = self.needs.lanes(Addr::Flat(soa), &scalar, n, f, w);
        let ptr_scalar = if matches!(f, Fit::Split(_)) { word_type(w) } else { scalar.as_str() };
        let p = words_of(g.space, &g.array(), &g.base, ptr_scalar, !store);
        let (ka, kb) = args[which - 1];
        let k = self.expr(ka, kb, ctx)?;
        let x = match &ptr.off {
            Some(o) => format!("{o} + (ulong)({}) * {n}", k.trim()),
            None => format!("(ulong)({}) * {n}", k.trim()),
        };
        let (s, m) = (g.layout.words, g.m.clone());
        if store {
            self.stored.insert(g.buffer.clone());
            let (va, vb) = args[0];
            let v = self.expr(va, vb, ctx)?;
            Ok((close + 1, format!("{st}({p}, {x}, {s}, {m}, {})", v.trim())))
        } else {
            Ok((close + 1, format!("{ld}({p}, {x}, {s}, {m})")))
        }
    }

    /// A copy of function `def` named `new_name`, with `targets` (parameter index, target)
    /// rewritten and trailing parameters for each: its M, and its offset when it has one.
    pub fn function_copy(&mut self, def: &FnDef, new_name: &str, targets: &[(usize, Target)]) -> R<String> {
        let mut out = self.header(def, new_name, targets, "");
        let scan = self.scan(def, targets.iter().map(|(_, g)| g.clone()).collect())?;
        let body = self.expr(def.open, def.close + 1, &scan.ctx)?;
        out.push('{');
        out.push_str(&scan.prologue);
        out.push_str(&body[1..]);
        out.push('\n');
        Ok(out)
    }

    /// The copy's `#line` and header, up to its body's `{`, with `more` (parameter text after
    /// a comma) after the trailing parameters. A staged buffer keeps its parameter: only the
    /// copy's prologue and epilogue address it, word by word.
    pub fn header(&self, def: &FnDef, new_name: &str, targets: &[(usize, Target)], more: &str) -> String {
        let src = self.src;
        let mut edits: Vec<(usize, usize, String)> =
            vec![(self.toks[def.name].span.start, self.toks[def.name].span.end, new_name.to_string())];
        for (n, g) in targets {
            let p = &def.params[*n];
            if g.view == View::Struct && g.space == Space::Asta {
                edits.push((p.span.start, p.span.end, param_text(src, p, &g.base)));
            }
        }
        let last = def.params.last().map_or(self.toks[def.open].span.start, |p| p.span.end);
        let mut extra: String = targets
            .iter()
            .map(|(_, g)| match &g.off {
                Some(o) => format!(", ulong {}, {} {o}", g.m, g.off_type()),
                None => format!(", ulong {}", g.m),
            })
            .collect();
        extra.push_str(more);
        edits.push((last, last, extra));
        edits.sort_by_key(|e| (e.0, e.1));
        let mut out = self.line_directive(self.toks[def.start].line);
        let mut cursor = self.toks[def.start].span.start;
        for (a, b, text) in edits {
            out.push_str(&src[cursor..a]);
            out.push_str(&text);
            cursor = b;
        }
        out.push_str(&src[cursor..self.toks[def.open].span.start]);
        out
    }
}

/// `vloadn`/`vstoren`: n.
fn vector_io(name: &str) -> Option<u32> {
    let n = name.strip_prefix("vload").or_else(|| name.strip_prefix("vstore"))?;
    n.parse().ok().filter(|n| matches!(n, 2 | 3 | 4 | 8 | 16))
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
