//! Accesses to the structures of a buffer of structures. The members an access names are read
//! first ([`Path`], through nested structures and array subscripts); then a scalar member
//! becomes its word (or its place inside a word, or its words, as it fits the buffer's words),
//! a vector member goes to vector.rs, a nested structure and the whole structure are loaded and
//! stored through generated functions.

use super::emit::{self, fit, unit_lvalue, words_of, Fit};
use super::ptr::{ENode, Path, Ptr};
use super::source::R;
use super::target::{Access, Ctx, MemberAt, Target, View};
use super::value::Value;
use super::walk::{Policy, Rewriter};
use crate::clc::lex::TokenKind;
use crate::clc::struct_layout::StructLayout;
use crate::clc::types::word_type;

/// Where a path's last member starts in its structure, in bytes: a constant and terms
/// `(subscript tokens, bytes per step)`.
struct Offset {
    bytes: u32,
    terms: Vec<((usize, usize), u32)>,
}

impl<P: Policy> Rewriter<'_, P> {
    /// The members named from token `k` on (`.m` or `->m`, then `.m` and `[e]`), in `layout`.
    pub(super) fn member_path(&self, layout: &StructLayout, mut k: usize, hi: usize) -> R<Path> {
        let mut steps = Vec::new();
        if !(self.is(k, ".") || self.is(k, "->")) {
            return Ok(Path { steps, end: k });
        }
        let first = k;
        let mut cur = layout;
        loop {
            if !self.toks.get(k + 1).is_some_and(|t| t.kind == TokenKind::Ident) {
                return Err(self.refuse(first, k + 1, "a member access without a member name"));
            }
            let name = self.text(k + 1);
            let Some(mem) = cur.member(name).cloned() else {
                let ty = if cur.type_name.is_empty() { "the nested structure" } else { &cur.type_name };
                return Err(self.refuse(first, k + 2, format!("`{ty}` has no member `{name}`")));
            };
            k += 2;
            let mut subs = Vec::new();
            while subs.len() < mem.dims.len() && k < hi && self.is(k, "[") {
                let close = self.close_of(k)?;
                if close == k + 1 {
                    return Err(self.refuse(first, close + 1, "empty subscript"));
                }
                subs.push((k + 1, close));
                k = close + 1;
            }
            if !subs.is_empty() && subs.len() < mem.dims.len() {
                return Err(self.refuse(first, k, "an array member given fewer subscripts than it has dimensions"));
            }
            let decay = !mem.dims.is_empty() && subs.is_empty();
            let nested = mem.nested.is_some();
            steps.push((mem, subs));
            if !decay && nested && self.is(k, ".") {
                cur = steps.last().unwrap().0.nested.as_deref().unwrap();
                continue;
            }
            return Ok(Path { steps, end: k });
        }
    }

    /// The byte offset of the path's last member (its element, for a subscripted array).
    fn path_offset(&self, path: &Path) -> Offset {
        let mut off = Offset { bytes: 0, terms: Vec::new() };
        for (m, subs) in &path.steps {
            off.bytes += m.byte_offset;
            for (d, &range) in subs.iter().enumerate() {
                off.terms.push((range, m.dim_stride(d) * m.elem_bytes));
            }
        }
        off
    }

    /// An offset in units of `unit` bytes: its text, and its value when it is a constant.
    fn offset_text(&mut self, off: &Offset, unit: u32, ctx: &Ctx) -> R<(String, Option<u32>, bool)> {
        let mut text = (off.bytes / unit).to_string();
        let mut pure = true;
        for &((a, b), step) in &off.terms {
            pure &= self.pure(a, b);
            let e = self.expr(a, b, ctx)?;
            text.push_str(&format!(" + ({}) * {}", e.trim(), step / unit));
        }
        let constant = off.terms.is_empty().then_some(off.bytes / unit);
        Ok((text, constant, pure))
    }

    /// The structure index and view-less target of element `e` (a structure view's), after
    /// asking the policy about its subscript.
    pub(super) fn elem_index(&mut self, e: &ENode, addr: bool, ctx: &Ctx) -> R<(Target, String, bool)> {
        let p = self.emit_ptr(&e.ptr, ctx)?;
        let g = p.target(ctx);
        let span = (e.first, e.end);
        let pure = self.pure(e.first, e.k);
        if let View::Struct = g.view {
            let index_tokens = match (&p.simple, e.sub) {
                (Some(None), s) => Some(s),
                (Some(Some(r)), None) => Some(Some(*r)),
                _ => None,
            };
            let chosen = match index_tokens {
                Some(tokens) => self.policy.structure_index(&self.code, span, addr, tokens, &g)?,
                None => {
                    self.policy.derived(&self.code, span, &g)?;
                    None
                }
            };
            if let Some(text) = chosen {
                return Ok((g, text, pure));
            }
        } else {
            self.policy.derived(&self.code, span, &g)?;
        }
        let stride = g.view.stride();
        let sub = match e.sub {
            Some((a, b)) => Some(self.expr(a, b, ctx)?.trim().to_string()),
            None => None,
        };
        let sub = sub.map(|s| if stride > 1 { format!("({s}) * {stride}") } else { s });
        let index = match (&p.off, sub) {
            (None, Some(s)) => format!("({s})"),
            (None, None) => "0".to_string(),
            (Some(o), Some(s)) => format!("({o} + ({s}))"),
            (Some(o), None) => parens(o),
        };
        Ok((g, index, pure))
    }

    /// The pointer `&E` (or an array member's first element, `E` decaying).
    pub(super) fn elem_address(&mut self, e: &ENode, ctx: &Ctx) -> R<Ptr> {
        let (g, index, _) = self.elem_index(e, true, ctx)?;
        let t = self.ptr_target(&e.ptr, ctx);
        let Some(path) = &e.path else {
            return Ok(Ptr { t, view: g.view.clone(), off: Some(index), simple: None });
        };
        let Some(m) = path.last() else {
            return Ok(Ptr { t, view: View::Struct, off: Some(index), simple: None });
        };
        let Some(view) = path.view() else {
            return Err(self.refuse(e.first, e.end, format!("a pointer to nested structure member `{}`: the rewriter follows pointers to the buffer's structure and to scalars and vectors", m.name)));
        };
        let unit = m.scalar_bytes();
        let (units, _, _) = self.offset_text(&self.path_offset(path), unit, ctx)?;
        let k = g.layout.words * g.layout.word_bytes / unit;
        let ty = super::target::off_type(&view, g.layout.word_bytes);
        Ok(Ptr { t, view, off: Some(format!("({ty}){index} * {k} + {units}")), simple: None })
    }

    /// The target a pointer value derives from.
    fn ptr_target(&self, n: &super::ptr::PNode, ctx: &Ctx) -> usize {
        self.node_info(n, ctx).0
    }

    /// The access `a` to a structure, whose members are `path`.
    pub(super) fn member(&mut self, a: &Access, path: &Path, hi: usize, ctx: &Ctx) -> R<(usize, String)> {
        let (first, g, index) = (a.first, &a.g, a.index.as_str());
        let (words, m, space) = (g.layout.words, g.m.as_str(), g.space);
        let k = path.end;
        let Some(mem) = path.last().cloned() else {
            if self.is(k, "[") {
                return Err(self.refuse(first, k + 1, "subscript of a whole structure"));
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
        };
        if path.decays() {
            return Err(self.refuse(
                first,
                k,
                "an array member used without a subscript where the rewriter does not follow the pointer it makes",
            ));
        }
        let off = self.path_offset(path);
        if let Some(nested) = &mem.nested {
            if nested.type_name.is_empty() {
                return Err(self.refuse(
                    first,
                    k,
                    format!("a whole nested structure `{}` whose type has no name", mem.name),
                ));
            }
            let (text, constant, elem_pure) = self.offset_text(&off, 1, ctx)?;
            let text = if constant.is_some() { text } else { format!("(clayout_idx)({text})") };
            let (ld, st) = self.needs.nested(space, nested, g.layout.word_bytes);
            let wt = word_type(g.layout.word_bytes);
            let (lp, sp) =
                (words_of(space, &g.array(), &g.base, wt, true), words_of(space, &g.array(), &g.base, wt, false));
            let load = format!("{ld}({lp}, {index}, {text}, {words}, {m})");
            let store = |rhs: String| format!("{st}({sp}, {index}, {text}, {words}, {m}, {rhs})");
            let what = "a whole nested structure";
            return self.value(a, k, hi, ctx, Value { what, load, compound_ok: a.pure && elem_pure, store: &store });
        }
        let unit = mem.scalar_bytes();
        let (units, constant, elem_pure) = self.offset_text(&off, unit, ctx)?;
        if mem.lanes > 1 {
            return self.vector_member(a, MemberAt { mem, end: k, offset: units, pure: elem_pure }, hi, ctx);
        }
        let f = fit(unit, g.layout.word_bytes);
        if let Fit::Split(_) = f {
            return self.split_scalar(a, (&mem.scalar, f), &units, k, hi, ctx, a.pure && elem_pure);
        }
        let p = words_of(space, &g.array(), &g.base, &mem.scalar, g.is_const);
        Ok((k, unit_lvalue(space, &p, index, &units, constant, f, &words.to_string(), m)))
    }

    /// A scalar spanning several words (a `double` in 4-byte words): loaded and stored through
    /// generated functions.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn split_scalar(
        &mut self,
        a: &Access,
        (scalar, f): (&str, Fit),
        units: &str,
        k: usize,
        hi: usize,
        ctx: &Ctx,
        pure: bool,
    ) -> R<(usize, String)> {
        let g = &a.g;
        let (w, words, m, space) = (g.layout.word_bytes, g.layout.words, g.m.clone(), g.space);
        let (ld, st) = self.needs.lanes(emit::Addr::Struct(space), scalar, 1, f, w);
        let (lp, sp) = self.flat_ptrs(g, word_type(w));
        let index = &a.index;
        let load = format!("{ld}({lp}, {index}, {units}, {words}, {m})");
        let store = |rhs: String| format!("{st}({sp}, {index}, {units}, {words}, {m}, ({scalar}){rhs})");
        self.value(a, k, hi, ctx, Value { what: "a member spanning two words", load, compound_ok: pure, store: &store })
    }
}

/// `s` in parentheses, unless one pair already encloses all of it.
pub(crate) fn parens(s: &str) -> String {
    let b = s.as_bytes();
    if b.first() == Some(&b'(') {
        let mut depth = 0usize;
        for (k, &c) in b.iter().enumerate() {
            match c {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        if k == b.len() - 1 {
                            return s.to_string();
                        }
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    format!("({s})")
}
