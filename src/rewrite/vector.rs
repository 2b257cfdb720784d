//! Vector members of a structure (`p[i].v`, `p[i].v.y`, `p[i].v.xyz`). A vector that fits in
//! one word (a `uchar4` in 4-byte words) is that word, read and written as the vector itself;
//! a wider one is spread over words, lane by lane: a component is its lane's word (or its place
//! in a word, or its words), the whole vector and a swizzle of it are loaded and stored through
//! generated functions.

use super::emit::{self, fit, swizzle, unit_lvalue, words_of, Fit, LANES};
use super::source::{ASSIGN_OPS, R};
use super::target::{Access, Ctx, MemberAt};
use super::value::Value;
use super::walk::{Policy, Rewriter};
use crate::clc::lex::TokenKind;
use crate::clc::types::word_type;

impl<P: Policy> Rewriter<'_, P> {
    /// The vector member `at` of the structure that access `a` reaches, or a selection of its
    /// lanes.
    pub(super) fn vector_member(&mut self, a: &Access, at: MemberAt, hi: usize, ctx: &Ctx) -> R<(usize, String)> {
        let (first, g, index) = (a.first, &a.g, a.index.as_str());
        let (words, m, space, w) = (g.layout.words, g.m.as_str(), g.space, g.layout.word_bytes);
        let MemberAt { mem, end: k, offset: s, pure: elem_pure } = at;
        let t = mem.scalar_bytes();
        let stride = if mem.lanes == 3 { 4 } else { mem.lanes };
        let ty = mem.elem_type();
        if self.is(k, "[") {
            return Err(self.refuse(first, k + 1, "subscript of a vector member (write `.sN`)"));
        }
        // A vector within one word: that word, as the vector type.
        if t * stride <= w {
            let f = fit(t * stride, w);
            let constant = s.parse::<u32>().ok().map(|c| c / stride);
            let u = match constant {
                Some(c) => c.to_string(),
                None => format!("({s}) / {stride}"),
            };
            let p = words_of(space, &g.array(), &g.base, &ty, g.is_const);
            return Ok((k, unit_lvalue(space, &p, index, &u, constant, f, &words.to_string(), m)));
        }
        let f = fit(t, w);
        let array = g.array();
        let ptr_scalar = if matches!(f, Fit::Split(_)) { word_type(w).to_string() } else { mem.scalar.clone() };
        let words_ptr = |is_const: bool| words_of(space, &array, &g.base, &ptr_scalar, is_const);
        if self.is(k, ".") && self.toks.get(k + 1).is_some_and(|t| t.kind == TokenKind::Ident) {
            let sel = self.text(k + 1);
            let Some(lanes) = swizzle(sel, mem.lanes) else {
                return Err(self.refuse(first, k + 2, format!("component `.{sel}` of a {ty}")));
            };
            if lanes.len() == 1 {
                let lane_s = format!("{s} + {}", lanes[0]);
                if let Fit::Split(_) = f {
                    let pure = a.pure && elem_pure;
                    return self.split_scalar(a, (&mem.scalar, f), &lane_s, k + 2, hi, ctx, pure);
                }
                let constant = s.parse::<u32>().ok().map(|c| c + lanes[0]);
                let p = words_of(space, &array, &g.base, &mem.scalar, g.is_const);
                return Ok((k + 2, unit_lvalue(space, &p, index, &lane_s, constant, f, &words.to_string(), m)));
            }
            if self.is_assign(k + 2) {
                return self.swizzle_store(a, (&mem.scalar, mem.lanes, f), (&s, elem_pure), &lanes, k, hi, ctx);
            }
        }
        let (ld, st) = self.needs.lanes(emit::Addr::Struct(space), &mem.scalar, mem.lanes, f, w);
        let load = format!("{ld}({}, {index}, {s}, {words}, {m})", words_ptr(true));
        let sp = words_ptr(false);
        // The explicit conversion keeps assignment's scalar-to-vector widening (`v = 0.0f`).
        let store = |rhs: String| format!("{st}({sp}, {index}, {s}, {words}, {m}, ({ty}){rhs})");
        let value = Value { what: "a whole vector member", load, compound_ok: a.pure && elem_pure, store: &store };
        self.value(a, k, hi, ctx, value)
    }

    /// `p[i].v.xyz = e` (or `op=`): the selected lanes stored one by one, the others untouched.
    #[allow(clippy::too_many_arguments)]
    fn swizzle_store(
        &mut self,
        a: &Access,
        (scalar, lanes, f): (&str, u32, Fit),
        (s, elem_pure): (&str, bool),
        sel: &[u32],
        k: usize,
        hi: usize,
        ctx: &Ctx,
    ) -> R<(usize, String)> {
        let g = &a.g;
        let (words, m, space, w) = (g.layout.words, g.m.as_str(), g.space, g.layout.word_bytes);
        let name = format!(
            "{}sw_{scalar}{lanes}_{}{}",
            if space == emit::Space::Local { "local_" } else { "" },
            sel.iter().map(|l| LANES[*l as usize]).collect::<Vec<_>>().join(""),
            match f {
                Fit::Word => String::new(),
                Fit::Part(_) => format!("_p{w}"),
                Fit::Split(_) => format!("_s{w}"),
            }
        );
        let n = sel.len();
        let part_ty = format!("{scalar}{n}");
        let wt = word_type(w);
        let ptr = if matches!(f, Fit::Split(_)) { wt } else { scalar };
        let q = space.qualifier();
        let mut body = format!(
            "{part_ty} clayout_{name}({q} {ptr} *p, clayout_idx i, clayout_idx s, clayout_idx S, clayout_idx M, {part_ty} v) {{\n"
        );
        for (j, lane) in sel.iter().enumerate() {
            let u = format!("s + {lane}");
            match f {
                Fit::Split(r) => {
                    body.push_str(&format!("  {{ const {wt}{r} t = as_{wt}{r}(v.{}); ", LANES[j]));
                    for x in 0..r {
                        let wd = unit_lvalue(space, "p", "i", &format!("({u}) * {r} + {x}"), None, Fit::Word, "S", "M");
                        body.push_str(&format!("{wd} = t.{}; ", LANES[x as usize]));
                    }
                    body.push_str("}\n");
                }
                _ => {
                    let lv = unit_lvalue(space, "p", "i", &u, None, f, "S", "M");
                    body.push_str(&format!("  {lv} = v.{};\n", LANES[j]));
                }
            }
        }
        body.push_str("  return v;\n}\n");
        self.needs.extra(&format!("clayout_{name}"), emit::guarded(&format!("clayout_{name}"), &body));
        let op = self.text(k + 2).to_string();
        let end = self.assign_end(k + 3, hi);
        let rhs = self.expr(k + 3, end, ctx)?;
        let rhs = rhs.trim();
        self.stored.insert(g.buffer.clone());
        let index = &a.index;
        let sp = words_of(space, &g.array(), &g.base, ptr, false);
        let call = |v: String| format!("clayout_{name}({sp}, {index}, {s}, {words}, {m}, ({part_ty})({v}))");
        if op == "=" {
            return Ok((end, call(rhs.to_string())));
        }
        if !(a.pure && elem_pure) {
            return Err(self.refuse(
                a.first,
                end,
                "compound assignment to a swizzle whose subscripts may have side effects",
            ));
        }
        let (ld, _) = self.needs.lanes(emit::Addr::Struct(space), scalar, lanes, f, w);
        let lp = words_of(space, &g.array(), &g.base, ptr, true);
        let sel_text = self.text(k + 1);
        let bin = &op[..op.len() - 1];
        debug_assert!(ASSIGN_OPS.contains(&op.as_str()));
        Ok((end, call(format!("{ld}({lp}, {index}, {s}, {words}, {m}).{sel_text} {bin} ({rhs})"))))
    }
}
