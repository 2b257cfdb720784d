//! Vector members of a structure (`p[i].v`, `p[i].v.y`): a component is one word; the whole
//! vector is loaded and stored through generated functions, since its lanes are not contiguous
//! in ASTA.

use super::emit::{self, component, words_of};
use super::source::R;
use super::target::{Access, MemberAt, Target};
use super::value::Value;
use super::walk::{Policy, Rewriter};
use crate::clc::lex::TokenKind;

impl<P: Policy> Rewriter<'_, P> {
    /// The vector member `at` of the structure that access `a` reaches, or one of its
    /// components.
    pub(super) fn vector_member(&mut self, a: &Access, at: MemberAt, hi: usize, ctx: &[Target]) -> R<(usize, String)> {
        let (first, addr, g, index) = (a.first, a.addr, &a.g, a.index.as_str());
        let (words, m, space) = (g.layout.words, g.m.as_str(), g.space);
        let MemberAt { mem, end: k, offset: s, pure: elem_pure } = at;
        let array = g.array();
        let words_ptr = |is_const: bool| words_of(space, &array, &g.base, &mem.scalar, is_const);
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
        let ty = mem.elem_type();
        // The explicit conversion keeps assignment's scalar-to-vector widening (`v = 0.0f`).
        let store = |rhs: String| format!("{st}({sp}, {index}, {s}, {words}, {m}, ({ty}){rhs})");
        let value = Value { what: "a whole vector member", load, compound_ok: a.pure && elem_pure, store: &store };
        self.value(a, k, hi, ctx, value)
    }
}
