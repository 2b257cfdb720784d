//! Calls: a rewritten buffer passed to a function of the program is followed into a private
//! copy of that function, rewritten for the buffer's layout (one per layout and parameter
//! position, shared by every caller); a buffer passed anywhere the rewriter cannot follow
//! refuses the kernel. Also the copies' headers, for the kernel's own copy too.

use super::emit::{self, Space};
use super::funcs::{self, FnDef};
use super::source::R;
use super::target::{Kind, Target};
use super::walk::{Policy, Rewriter};
use crate::clc::lex::{lex, TokenKind};
use crate::clc::signature::{AddrSpace, Param};
use crate::clc::types::word_scalar;

impl<P: Policy> Rewriter<'_, P> {
    /// A call: a target passed bare as an argument is followed into a private copy of the
    /// callee; atomics on a target refuse.
    pub(super) fn call(&mut self, j: usize, ctx: &[Target]) -> R<Option<(usize, String)>> {
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
        self.policy.pass(&self.code, (j, close + 1), &ctx[bare[0].1], name)?;
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
