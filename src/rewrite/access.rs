//! Where the walk meets a followed pointer: a declaration of followed locals, an element
//! reached through a pointer (`p[i].m`, `q->m`, `*q`, `(p + i)->m`, `((p)[i]).m`), an
//! assignment to a followed pointer, or a pointer value in one of the places the copy can keep
//! it as an integer (a comparison or difference with a pointer into the same buffer, `q++;` as
//! a statement). Any other use of a followed pointer refuses the kernel, since one access left
//! in AoS terms would read the wrong words.

use super::ptr::{PNode, Ptr};
use super::source::{Refusal, R};
use super::target::{Access, Ctx, Decl};
use super::walk::{Policy, Rewriter};
use crate::clc::lex::TokenKind;

impl<P: Policy> Rewriter<'_, P> {
    /// A form starting at `j` that reaches a followed pointer, if one does.
    pub(super) fn access_at(&mut self, j: usize, hi: usize, ctx: &Ctx) -> R<Option<(usize, String)>> {
        if let Some(d) = ctx.decls.get(&j) {
            return self.declaration(d, ctx).map(Some);
        }
        if !self.may_reach(j, ctx) {
            return Ok(None);
        }
        if let Some(e) = self.e_postfix(j, hi, ctx)? {
            if !e.path.as_ref().is_some_and(|p| p.decays()) {
                return self.element(&e, hi, ctx).map(Some);
            }
        }
        if let Some(t) = self.target_at(j, ctx) {
            if self.is_assign(j + 1) {
                return self.assign_pointer(j, t, hi, ctx).map(Some);
            }
        }
        if let Some((end, n)) = self.p_expr(j, hi, ctx)? {
            return self.pointer_value(j, end, &n, hi, ctx).map(Some);
        }
        if let Some(t) = self.target_at(j, ctx) {
            return Err(self.bare_use(j, &ctx.targets[t].name));
        }
        Ok(None)
    }

    /// Whether the tokens from `j` can start a form reaching a followed pointer: a followed
    /// name there, or right after a unary operator, or inside the parenthesis opening there.
    fn may_reach(&self, j: usize, ctx: &Ctx) -> bool {
        let named = |k: usize| self.target_at(k, ctx).is_some();
        if named(j) {
            return true;
        }
        let Some(t) = self.toks.get(j).filter(|t| t.kind == TokenKind::Punct) else {
            return false;
        };
        match t.text(self.src) {
            "&" | "*" | "++" | "--" if self.unary(j) => self.may_reach(j + 1, ctx),
            "(" => match self.cast_at(j) {
                Some(close) => self.may_reach(close + 1, ctx),
                None => self.close_of(j).is_ok_and(|c| (j + 1..c).any(named)),
            },
            _ => false,
        }
    }

    /// An element through a pointer, rewritten with whatever reads or writes it.
    fn element(&mut self, e: &super::ptr::ENode, hi: usize, ctx: &Ctx) -> R<(usize, String)> {
        let (g, index, pure) = self.elem_index(e, false, ctx)?;
        let access = Access { first: e.first, g, index, pure };
        let (end, text) = match &e.path {
            Some(path) => self.member(&access, path, hi, ctx)?,
            None => self.view_elem(&access, e, hi, ctx)?,
        };
        let first = e.first;
        let incdec = |j: usize| self.is(j, "++") || self.is(j, "--");
        if self.is_assign(end) || incdec(end) || (first > 0 && incdec(first - 1)) {
            self.stored.insert(access.g.buffer.clone());
        }
        if self.toks[first..(end + 1).min(self.toks.len())].iter().any(|t| t.kind == TokenKind::Directive) {
            return Err(self.refuse(first, end, "a preprocessor directive inside an access"));
        }
        if self.is_macro(end) || (first > 0 && self.is_macro(first - 1)) {
            return Err(self.refuse(first, end + 1, "a macro next to an access could change its meaning"));
        }
        Ok((end, text))
    }

    /// A declaration of followed local pointers: one of their offsets, initialized with the
    /// offsets of their initializers.
    fn declaration(&mut self, d: &Decl, ctx: &Ctx) -> R<(usize, String)> {
        let mut parts = Vec::new();
        for &(name, init, t) in &d.declarators {
            self.policy.derived(&self.code, (name, init.map_or(name + 1, |i| i.1)), &ctx.targets[t])?;
            let mut text = self.text(name).to_string();
            if let Some((a, b)) = init {
                let p = self.full_pointer((a, b), (name, b), t, ctx)?;
                text.push_str(&format!(" = {}", p.value(ctx)));
            }
            parts.push(text);
        }
        Ok((d.end, format!("{} {}", d.ty, parts.join(", "))))
    }

    /// The pointer value spanning exactly tokens `a..b`, into the buffer of target `t` with
    /// its view, or the refusal quoting tokens `span`.
    pub(super) fn full_pointer(&mut self, (a, b): (usize, usize), span: (usize, usize), t: usize, ctx: &Ctx) -> R<Ptr> {
        let g = &ctx.targets[t];
        let Some((_, n)) = self.p_expr(a, b, ctx)?.filter(|(e, _)| *e == b) else {
            return Err(self.refuse(
                span.0,
                span.1,
                format!("`{}` is given a value that is not a pointer into `{}` the rewriter follows", g.name, g.buffer),
            ));
        };
        let (from, view) = self.node_info(&n, ctx);
        if ctx.targets[from].buffer != g.buffer {
            return Err(self.refuse(
                a,
                b,
                format!(
                    "`{}` points into `{}` and also into `{}`: which buffer is known only at run time",
                    g.name, g.buffer, ctx.targets[from].buffer
                ),
            ));
        }
        if view != g.view {
            return Err(self.refuse(
                a,
                b,
                format!(
                    "`{}` (a pointer to `{}`) is given a pointer to `{}`",
                    g.name,
                    g.view.type_name(&g.layout),
                    view.type_name(&g.layout)
                ),
            ));
        }
        self.emit_ptr(&n, ctx)
    }

    /// `q = P`, `q += e`, `q -= e` on a followed pointer: its offset variable.
    fn assign_pointer(&mut self, j: usize, t: usize, hi: usize, ctx: &Ctx) -> R<(usize, String)> {
        let g = ctx.targets[t].clone();
        let op = self.text(j + 1);
        let end = self.assign_end(j + 2, hi);
        if end == j + 2 {
            return Err(self.refuse(j, j + 2, "assignment without a right-hand side"));
        }
        let Some(var) = g.off.clone() else {
            return Err(self.refuse(
                j,
                end,
                format!("`{}` is assigned, and the rewriter has no variable for its offset", g.name),
            ));
        };
        self.policy.derived(&self.code, (j, end), &g)?;
        let text = match op {
            "=" => format!("{var} = {}", self.full_pointer((j + 2, end), (j, end), t, ctx)?.value(ctx)),
            "+=" | "-=" => {
                let rhs = self.expr(j + 2, end, ctx)?;
                let s = g.view.stride();
                let rhs = if s > 1 { format!("({}) * {s}", rhs.trim()) } else { rhs.trim().to_string() };
                format!("{var} {op} {rhs}")
            }
            _ => return Err(self.refuse(j, end, format!("`{}` {op} ...: arithmetic on a pointer", g.name))),
        };
        if self.is(end, ")") && (self.is(end + 1, "->") || self.is(end + 1, "[") || self.is(end + 1, ".")) {
            return Err(self.refuse(
                j,
                end + 2,
                format!("the value of an assignment to `{}` used as a pointer", g.name),
            ));
        }
        Ok((end, text))
    }

    /// A pointer value at tokens `j..end` where the walk met it: compared with or subtracted
    /// from a pointer into the same buffer, or incremented as a statement of its own.
    fn pointer_value(&mut self, j: usize, end: usize, n: &PNode, hi: usize, ctx: &Ctx) -> R<(usize, String)> {
        let op = self.text(end);
        let is_op = self.toks.get(end).is_some_and(|t| t.kind == TokenKind::Punct);
        let (t, view) = self.node_info(n, ctx);
        let buffer = ctx.targets[t].buffer.clone();
        if is_op && matches!(op, "==" | "!=" | "<" | ">" | "<=" | ">=" | "-") {
            let rhs = if op == "-" { self.p_unary(end + 1, hi, ctx)? } else { self.p_add(end + 1, hi, ctx)? };
            match rhs {
                Some((rend, r)) => {
                    let (rt, rview) = self.node_info(&r, ctx);
                    if ctx.targets[rt].buffer != buffer || rview != view {
                        return Err(self.refuse(j, rend, format!("pointers into `{buffer}` and `{}` compared or subtracted: the rewriter follows them only within one buffer and type", ctx.targets[rt].buffer)));
                    }
                    let (l, r) = (self.emit_ptr(n, ctx)?, self.emit_ptr(&r, ctx)?);
                    self.policy.derived(&self.code, (j, rend), &ctx.targets[t])?;
                    let (lv, rv) = (l.value(ctx), r.value(ctx));
                    let text = if op == "-" {
                        let signed = if l.target(ctx).off_type() == "ulong" { "long" } else { "clayout_sidx" };
                        let s = view.stride();
                        let scale = if s > 1 { format!(" / {s}") } else { String::new() };
                        format!("((ptrdiff_t)(({signed})(({lv}) - ({rv})){scale}))")
                    } else {
                        format!("{lv} {op} {rv}")
                    };
                    return Ok((rend, text));
                }
                None if op != "-" => {
                    return Err(self.refuse(j, end + 2, format!("a pointer into `{buffer}` compared with something that is not a pointer into it (another buffer, an integer, NULL)")))
                }
                None => {}
            }
        }
        if let PNode::IncDec { .. } = n {
            let prev = if j > 0 { self.text(j - 1) } else { ";" };
            if matches!(prev, ";" | "{" | "}" | ")" | ",") && matches!(op, ";" | ")" | ",") {
                let p = self.emit_ptr(n, ctx)?;
                return Ok((end, p.value(ctx)));
            }
        }
        Err(self.pointer_context(j, end, &buffer))
    }

    /// Why a pointer value at tokens `j..end` cannot be followed where it stands.
    fn pointer_context(&self, j: usize, end: usize, buffer: &str) -> Refusal {
        let prev = if j > 0 { self.text(j - 1) } else { "" };
        let next = self.text(end);
        let reason = match (prev, next) {
            ("return", _) => format!("a pointer into `{buffer}` returned from a function: the caller's copy would get an address the rewriter does not follow"),
            ("=", _) => format!("a pointer into `{buffer}` stored where the rewriter does not follow it (memory, a structure, an untracked variable)"),
            ("{", _) | (",", _) if self.in_braces(j) => format!("a pointer into `{buffer}` stored into an array or structure initializer"),
            (")", _) => format!("a pointer into `{buffer}` converted to another type"),
            ("?", _) | (":", _) => format!("a pointer into `{buffer}` chosen by `?:` where the rewriter does not follow the result"),
            (_, "&&" | "||" | "?") | ("!" | "&&" | "||", _) => format!("a pointer into `{buffer}` used as a truth value"),
            _ => format!("a pointer into `{buffer}` used as a value where the rewriter cannot follow it"),
        };
        self.refuse(j, end.max(j + 1), reason)
    }

    /// Whether token `j` lies inside braces that are not a block (an initializer list).
    fn in_braces(&self, j: usize) -> bool {
        let mut depth = 0usize;
        for k in (0..j).rev() {
            match self.text(k) {
                "}" | ")" | "]" if self.toks[k].kind == TokenKind::Punct => depth += 1,
                "(" | "[" if self.toks[k].kind == TokenKind::Punct && depth > 0 => depth -= 1,
                "{" if self.toks[k].kind == TokenKind::Punct => {
                    if depth > 0 {
                        depth -= 1;
                    } else {
                        return k > 0 && self.is(k - 1, "=");
                    }
                }
                _ => {}
            }
        }
        false
    }

    /// Why a bare use of a followed name refuses.
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
