//! Accesses to the structures of a buffer of structures: a scalar member (`p[i].x`, an array
//! member's element `p[i].f[k]`) becomes its word, a vector member goes to vector.rs, and the
//! whole structure (`p[i]` read or assigned) is loaded or stored member by member.

use super::emit::{self, words_of};
use super::source::R;
use super::target::{Access, MemberAt, Target};
use super::value::Value;
use super::walk::{Policy, Rewriter};

impl<P: Policy> Rewriter<'_, P> {
    /// The access `a` to a structure, from token `k` after its subscript on.
    pub(super) fn member(&mut self, a: &Access, mut k: usize, hi: usize, ctx: &[Target]) -> R<(usize, String)> {
        let (first, addr, g, index) = (a.first, a.addr, &a.g, a.index.as_str());
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
            let store = |rhs: String| format!("{st}({name}, {index}, {m}, {rhs})");
            return self.value(
                a,
                k,
                hi,
                ctx,
                Value { what: "a whole structure", load, compound_ok: false, store: &store },
            );
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
        if mem.lanes > 1 {
            return self.vector_member(a, MemberAt { mem, end: k, offset: s, pure: elem_pure }, hi, ctx);
        }
        if addr && mem.count > 1 {
            return Err(self.refuse(first, k, "address of an array member's element: the callee could index from it, and the elements are not contiguous in ASTA"));
        }
        let p = words_of(space, &g.array(), &g.base, &mem.scalar, g.is_const);
        let w = emit::word(space, &p, index, &s, words, m);
        Ok((k, if addr { format!("&{w}") } else { w }))
    }
}
