//! Multi-word values (a whole structure, a whole vector member, a scalar spanning two words):
//! loaded by a generated function where read, stored by one where assigned, compound
//! assignments spelled out, `x++` as `x += 1` where its value is not used.

use super::source::{ASSIGN_OPS, R};
use super::target::{Access, Ctx};
use super::walk::{Policy, Rewriter};
use crate::clc::lex::TokenKind;

/// How to read and write one multi-word value.
pub(super) struct Value<'f> {
    /// What the value is, for refusals: `a whole structure`.
    pub what: &'static str,
    /// The expression that loads it.
    pub load: String,
    /// Whether `+=` and the like may evaluate the access twice (its subscripts are pure).
    pub compound_ok: bool,
    /// The expression that stores a right-hand side and yields it.
    pub store: &'f dyn Fn(String) -> String,
}

impl<P: Policy> Rewriter<'_, P> {
    /// Value `v` reached by access `a` at tokens `a.first..k`: loaded where read, stored where
    /// assigned.
    pub(super) fn value(&mut self, a: &Access, k: usize, hi: usize, ctx: &Ctx, v: Value) -> R<(usize, String)> {
        let Value { what, load, compound_ok, store } = v;
        let first = a.first;
        // `++x` is `x += 1`; `x++` too where its value is not used.
        if first > 0 && (self.is(first - 1, "++") || self.is(first - 1, "--")) {
            return Err(self.refuse(first - 1, k, format!("++/-- before {what}: write `+= 1`")));
        }
        let op = self.text(k);
        let is_op = self.toks.get(k).is_some_and(|t| t.kind == TokenKind::Punct);
        if is_op && (op == "++" || op == "--") {
            if !compound_ok || !self.discarded(first, k + 1) {
                return Err(self.refuse(
                    first,
                    k + 1,
                    format!("++/-- on {what} whose value is used or whose subscripts may have side effects"),
                ));
            }
            self.stored.insert(a.g.buffer.clone());
            return Ok((k + 1, store(format!("{load} {} 1", &op[..1]))));
        }
        if is_op && ASSIGN_OPS.contains(&op) {
            let end = self.assign_end(k + 1, hi);
            if end == k + 1 {
                return Err(self.refuse(first, k + 1, "assignment without a right-hand side"));
            }
            let rhs = self.expr(k + 1, end, ctx)?;
            let rhs = rhs.trim();
            self.stored.insert(a.g.buffer.clone());
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

    /// Whether the expression at tokens `first..end` is a statement of its own (or the last
    /// clause of a `for`), so that its value is not used.
    fn discarded(&self, first: usize, end: usize) -> bool {
        let before = first == 0 || matches!(self.text(first - 1), ";" | "{" | "}" | ")" | "else" | "do");
        let for_clause = self.is(end, ")") && {
            let open = (0..first).rev().find(|&k| self.is(k, "(") && self.close_of(k).is_ok_and(|c| c == end));
            open.is_some_and(|o| o > 0 && self.is_word(o - 1, "for")) && self.is(first - 1, ";")
        };
        (before && self.is(end, ";")) || for_clause
    }

    /// End of the assignment expression starting at `from`: the first `,` `;` `:` or closing
    /// bracket at its own level.
    pub(super) fn assign_end(&self, from: usize, hi: usize) -> usize {
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
}
