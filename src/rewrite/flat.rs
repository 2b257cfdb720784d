//! Flat scalar buffers holding S words per element (`__global float *p` annotated `AoS(S)` or
//! `SoA(S)`): a subscript is a word of some element, found in ASTA by the generated
//! `clayout_aos_flat` / `clayout_soa_flat`, or directly when an SoA subscript is written
//! `s*n + i` with the kernel's own extent.

use super::source::R;
use super::target::{Access, Kind, Target};
use super::walk::{Policy, Rewriter};
use crate::clc::lex::TokenKind;

impl<P: Policy> Rewriter<'_, P> {
    /// The access `a` to a flat buffer, whose subscript (tokens `index`) ends before `k`.
    pub(super) fn flat(
        &mut self,
        a: &Access,
        k: usize,
        index: Option<(usize, usize)>,
        ctx: &[Target],
    ) -> R<(usize, String)> {
        if a.addr {
            return Err(self.refuse(a.first, k, "address of a word of a flat buffer: the callee could index from it, and neighbouring words are not contiguous in ASTA"));
        }
        let Some((lo, hi)) = index else {
            return Err(self.refuse(a.first, k + 1, "`->` on a flat buffer"));
        };
        let idx = self.flat_index(&a.g, lo, hi, &a.index, ctx)?;
        Ok((k, format!("{}[{idx}]", a.g.name)))
    }

    /// The word index of flat subscript `a..b` (rewritten as `index`).
    fn flat_index(&mut self, g: &Target, a: usize, b: usize, index: &str, ctx: &[Target]) -> R<String> {
        let (s, m) = (g.layout.words, &g.m);
        let extent = match &g.kind {
            Kind::FlatAos => return Ok(format!("clayout_aos_flat({index}, {s}, {m})")),
            Kind::FlatSoa { extent } => extent.clone(),
            Kind::Struct => unreachable!(),
        };
        let general = format!("clayout_soa_flat({index}, {s}, {m})");
        if extent.is_empty() {
            return Ok(general);
        }
        // Split at the additive operators of the subscript's own level; anything of lower
        // precedence there (`?:`, shifts, comparisons) leaves only the general form.
        let mut terms: Vec<(bool, usize, usize)> = Vec::new();
        let (mut depth, mut start, mut neg) = (0usize, a, false);
        for k in a..b {
            let t = self.toks[k];
            if t.kind != TokenKind::Punct {
                continue;
            }
            match t.text(self.src) {
                "(" | "[" => depth += 1,
                ")" | "]" => depth = depth.saturating_sub(1),
                op @ ("+" | "-") if depth == 0 && k > a && !self.unary(k) => {
                    terms.push((neg, start, k));
                    start = k + 1;
                    neg = op == "-";
                }
                "*" | "/" | "%" | "+" | "-" | "~" | "!" | "." | "->" => {}
                _ if depth == 0 => return Ok(general),
                _ => {}
            }
        }
        terms.push((neg, start, b));
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
        Ok(format!("clayout_soa_at(({}), {c}, {s}, {m})", i.trim()))
    }
}
