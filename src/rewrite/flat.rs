//! Elements reached through a pointer to a scalar or vector of a buffer's bytes: a flat buffer
//! holding S words per element (`__global float *p` annotated `AoS(S)` or `SoA(S)`), or a
//! pointer derived from a buffer of structures (`&p[i].x`, `(__global float *)p`, an array
//! member). An element is found in ASTA from its offset in the byte stream by the generated
//! `clayout_aos_flat` / `clayout_soa_flat` (or directly, when an SoA subscript is written
//! `s*n + i` with the kernel's own extent); a vector element, lane by lane.

use super::emit::{self, fit, flat_lvalue, swizzle, words_of, Fit};
use super::ptr::ENode;
use super::source::R;
use super::target::{Access, Ctx, Host, Target, View};
use super::value::Value;
use super::walk::{Policy, Rewriter};
use crate::clc::lex::TokenKind;
use crate::clc::types::word_type;

impl<P: Policy> Rewriter<'_, P> {
    /// The access `a` to an element of a scalar or vector view, `e` its shape.
    pub(super) fn view_elem(&mut self, a: &Access, e: &ENode, hi: usize, ctx: &Ctx) -> R<(usize, String)> {
        let g = &a.g;
        let k = e.end;
        let scalar = g.view.scalar().unwrap_or("").to_string();
        let t = g.view.scalar_bytes();
        let f = fit(t, g.layout.word_bytes);
        if matches!(g.host, Host::Soa { .. }) && f != Fit::Word {
            return Err(self.refuse(
                a.first,
                k,
                format!("a pointer to `{scalar}` into SoA buffer `{}`, whose words are not of that size", g.buffer),
            ));
        }
        match &g.view {
            View::Vector(_, lanes) => self.vector_elem(a, (&scalar, *lanes, f), k, hi, ctx),
            _ if matches!(f, Fit::Split(_)) => self.flat_split(a, &scalar, f, &a.index.clone(), k, hi, ctx, a.pure),
            _ => {
                let p = words_of(g.space, &g.array(), &g.base, &scalar, g.is_const);
                Ok((
                    k,
                    match self.soa_direct(a, e, ctx)? {
                        Some(index) => format!("{p}[{index}]"),
                        None => flat_lvalue(
                            matches!(g.host, Host::Soa { .. }),
                            &p,
                            &a.index,
                            f,
                            &g.layout.words.to_string(),
                            &g.m,
                        ),
                    },
                ))
            }
        }
    }

    /// A scalar spanning words, at scalar `x` of the byte stream.
    #[allow(clippy::too_many_arguments)]
    fn flat_split(
        &mut self,
        a: &Access,
        scalar: &str,
        f: Fit,
        x: &str,
        k: usize,
        hi: usize,
        ctx: &Ctx,
        pure: bool,
    ) -> R<(usize, String)> {
        let g = &a.g;
        let w = g.layout.word_bytes;
        let (ld, st) = self.needs.lanes(emit::Addr::Flat(false), scalar, 1, f, w);
        let (lp, sp) = self.flat_ptrs(g, word_type(w));
        let (s, m) = (g.layout.words, &g.m);
        let load = format!("{ld}({lp}, {x}, {s}, {m})");
        let store = |rhs: String| format!("{st}({sp}, {x}, {s}, {m}, ({scalar}){rhs})");
        self.value(a, k, hi, ctx, Value { what: "a scalar spanning two words", load, compound_ok: pure, store: &store })
    }

    /// The words of `g` as pointers to `scalar`, to read and to write.
    pub(super) fn flat_ptrs(&self, g: &Target, scalar: &str) -> (String, String) {
        (words_of(g.space, &g.array(), &g.base, scalar, true), words_of(g.space, &g.array(), &g.base, scalar, false))
    }

    /// An element of a vector view (`*(__global float2 *)&p[i].y`, `v[k]`), or one lane of it.
    fn vector_elem(
        &mut self,
        a: &Access,
        (scalar, lanes, f): (&str, u32, Fit),
        k: usize,
        hi: usize,
        ctx: &Ctx,
    ) -> R<(usize, String)> {
        let g = &a.g;
        let (s, m, w) = (g.layout.words, g.m.clone(), g.layout.word_bytes);
        let x = a.index.clone();
        let soa = matches!(g.host, Host::Soa { .. });
        if self.is(k, ".") && self.toks.get(k + 1).is_some_and(|t| t.kind == TokenKind::Ident) {
            let sel = self.text(k + 1);
            match swizzle(sel, lanes) {
                Some(l) if l.len() == 1 => {
                    let lane_x = format!("{x} + {}", l[0]);
                    if matches!(f, Fit::Split(_)) {
                        return self.flat_split(a, scalar, f, &lane_x, k + 2, hi, ctx, a.pure);
                    }
                    let p = words_of(g.space, &g.array(), &g.base, scalar, g.is_const);
                    return Ok((
                        k + 2,
                        flat_lvalue(matches!(g.host, Host::Soa { .. }), &p, &lane_x, f, &s.to_string(), &m),
                    ));
                }
                Some(_) if self.is_assign(k + 2) => {
                    return Err(self.refuse(
                        a.first,
                        k + 3,
                        format!("store through `.{sel}` of a vector reached through a pointer"),
                    ))
                }
                Some(_) => {}
                None => return Err(self.refuse(a.first, k + 2, format!("component `.{sel}` of a {scalar}{lanes}"))),
            }
        }
        let ptr = if matches!(f, Fit::Split(_)) { word_type(w) } else { scalar };
        let (ld, st) = self.needs.lanes(emit::Addr::Flat(soa), scalar, lanes, f, w);
        let (lp, sp) = self.flat_ptrs(g, ptr);
        let ty = format!("{scalar}{lanes}");
        let load = format!("{ld}({lp}, {x}, {s}, {m})");
        let store = |rhs: String| format!("{st}({sp}, {x}, {s}, {m}, ({ty}){rhs})");
        self.value(
            a,
            k,
            hi,
            ctx,
            Value { what: "a vector reached through a pointer", load, compound_ok: a.pure, store: &store },
        )
    }

    /// The direct ASTA index of an SoA subscript written `s*n + i` on the buffer itself, if
    /// element `e` is one.
    fn soa_direct(&mut self, a: &Access, e: &ENode, ctx: &Ctx) -> R<Option<String>> {
        let g = &a.g;
        let (s, m) = (g.layout.words, &g.m);
        let extent = match &g.host {
            Host::Soa { extent } if g.off.is_none() && g.param => extent.clone(),
            _ => return Ok(None),
        };
        let general = None;
        let direct = matches!(e.ptr, super::ptr::PNode::Name { .. });
        let Some((lo, hi)) = e.sub.filter(|_| direct && !extent.is_empty()) else {
            return Ok(general);
        };
        // Split at the additive operators of the subscript's own level; anything of lower
        // precedence there (`?:`, shifts, comparisons) leaves only the general form.
        let mut terms: Vec<(bool, usize, usize)> = Vec::new();
        let (mut depth, mut start, mut neg) = (0usize, lo, false);
        for k in lo..hi {
            let t = self.toks[k];
            if t.kind != TokenKind::Punct {
                continue;
            }
            match t.text(self.src) {
                "(" | "[" => depth += 1,
                ")" | "]" => depth = depth.saturating_sub(1),
                op @ ("+" | "-") if depth == 0 && k > lo && !self.unary(k) => {
                    terms.push((neg, start, k));
                    start = k + 1;
                    neg = op == "-";
                }
                "*" | "/" | "%" | "+" | "-" | "~" | "!" | "." | "->" => {}
                _ if depth == 0 => return Ok(general),
                _ => {}
            }
        }
        terms.push((neg, start, hi));
        let texts = |k0: usize, k1: usize| -> Vec<&str> { (k0..k1).map(|k| self.text(k)).collect() };
        let word_of = |t: &[&str]| -> Option<u32> {
            let lit = |x: &str| {
                let x = x.trim_end_matches(['u', 'U', 'l', 'L']);
                (x == "0" || !x.starts_with('0')).then(|| x.parse::<u32>().ok()).flatten()
            };
            let n = extent.len();
            if t.len() == n && t == extent.as_slice() {
                return Some(1);
            }
            if t.len() == n + 2 && t[..n] == extent[..] && t[n] == "*" {
                return lit(t[n + 1]);
            }
            if t.len() == n + 2 && t[2..] == extent[..] && t[1] == "*" {
                return lit(t[0]);
            }
            None
        };
        let found = terms.iter().position(|&(neg, k0, k1)| !neg && word_of(&texts(k0, k1)).is_some_and(|c| c < s));
        let Some(f) = found else {
            return Ok(general);
        };
        let c = word_of(&texts(terms[f].1, terms[f].2)).unwrap();
        let mut i = String::new();
        for (n, &(neg, k0, k1)) in terms.iter().enumerate() {
            if n == f {
                continue;
            }
            let t = self.expr(k0, k1, ctx)?;
            if neg {
                i.push_str(" - ");
            } else if !i.is_empty() {
                i.push_str(" + ");
            }
            i.push_str(t.trim());
        }
        if i.is_empty() {
            i.push('0');
        }
        Ok(Some(format!("clayout_soa_at(({}), {c}, {s}, {m})", i.trim())))
    }
}
