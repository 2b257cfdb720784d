//! The shapes in which a function reaches a rewritten buffer: `p[i]`, `p->m`, `&p[i]...`,
//! `(p + i)->m`. Each is taken apart into the structure it names ([`Access`]) and handed to the
//! form for the buffer's kind: structure members (member.rs) or flat words (flat.rs). Any
//! other use of the buffer's name refuses the kernel, since one access left in AoS terms would
//! read the wrong words.

use super::source::{Refusal, R};
use super::target::{Access, Kind, Target};
use super::walk::{Policy, Rewriter};
use crate::clc::lex::TokenKind;

impl<P: Policy> Rewriter<'_, P> {
    /// An access to a target starting at `j`, if one does.
    pub(super) fn access_at(&mut self, j: usize, hi: usize, ctx: &[Target]) -> R<Option<(usize, String)>> {
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

    /// An access starting at `first` (`&`, the `(` of `(p + e)->`, or the target itself).
    fn access(&mut self, first: usize, hi: usize, ctx: &[Target]) -> R<(usize, String)> {
        let addr = self.is(first, "&");
        let j = first + addr as usize;
        let arrow_form = self.is(j, "(");
        let (ti, index, k) = if arrow_form {
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
        let index_text = match self.policy.structure_index(&self.code, (first, k), addr, index, &g)? {
            Some(text) => text,
            None => match index {
                Some((a, b)) => format!("({})", self.expr(a, b, ctx)?.trim()),
                None => "0".to_string(),
            },
        };
        let pure = index.is_none_or(|(a, b)| self.pure(a, b));
        let access = Access { first, addr, g, index: index_text, pure };
        let (end, text) = match access.g.kind {
            Kind::Struct => self.member(&access, k, hi, ctx)?,
            _ => self.flat(&access, k, index, ctx)?,
        };
        let incdec = |j: usize| self.is(j, "++") || self.is(j, "--");
        if addr || self.is_assign(end) || incdec(end) || (first > 0 && incdec(first - 1)) {
            self.stored.insert(access.g.name.clone());
        }
        if self.toks[first..(end + 1).min(self.toks.len())].iter().any(|t| t.kind == TokenKind::Directive) {
            return Err(self.refuse(first, end, "a preprocessor directive inside an access"));
        }
        if self.is_macro(end) || (first > 0 && self.is_macro(first - 1)) {
            return Err(self.refuse(first, end + 1, "a macro next to an access could change its meaning"));
        }
        Ok((end, text))
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
