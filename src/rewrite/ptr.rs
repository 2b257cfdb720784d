//! Pointers derived from a rewritten buffer. Their shapes are read first, without rewriting
//! anything ([`PNode`] for pointer values, [`ENode`] for the elements reached through them),
//! so that a form can be told from another before any text is produced; then each is emitted:
//! a pointer value as its offset (an integer of the copy, see target.rs), an element as the
//! access forms rewrite it (access.rs).
//!
//! Pointer values: a followed name, `(P)`, `(T *)P`, `P + e`, `P - e`, `c ? P : Q` (one
//! buffer), `&E`, an array member without its subscripts, `q++`, `--q`. Elements: `P[e]`,
//! `P->m`, `*P`, `(E).m`, each with the members that follow.

use super::source::R;
use super::syntax::{Prec, QUALIFIERS};
use super::target::{off_type, Ctx, Target, View};
use super::walk::{Policy, Rewriter};
use crate::clc::lex::TokenKind;
use crate::clc::struct_layout::MemberLayout;
use crate::clc::types::{Builtin, Scalar};

/// The members an access to a structure names: `.pos.x`, `->f[k].v`, `.a` (an array without
/// its subscripts: a pointer to its first element), or none (the whole structure).
#[derive(Clone, Debug)]
pub(crate) struct Path {
    /// Each member with the subscripts given to it, outermost first.
    pub steps: Vec<(MemberLayout, Vec<(usize, usize)>)>,
    /// The token after the last member (or its last subscript).
    pub end: usize,
}

impl Path {
    /// The last member, if any.
    pub fn last(&self) -> Option<&MemberLayout> {
        self.steps.last().map(|(m, _)| m)
    }

    /// An array member named without its subscripts.
    pub fn decays(&self) -> bool {
        self.steps.last().is_some_and(|(m, subs)| !m.dims.is_empty() && subs.is_empty())
    }

    /// What a pointer to the last member (or to its first element) points to: `None` for the
    /// whole structure and for a nested structure.
    pub fn view(&self) -> Option<View> {
        let m = self.last()?;
        if m.nested.is_some() {
            return None;
        }
        Some(if m.lanes == 1 { View::Scalar(m.scalar.clone()) } else { View::Vector(m.scalar.clone(), m.lanes) })
    }
}

/// A pointer, the tokens of its subscript (if any) and where its members start.
type Pointed = (PNode, Option<(usize, usize)>, usize);

/// The shape of a pointer value.
#[derive(Clone, Debug)]
pub(crate) enum PNode {
    /// A followed name: target `t`.
    Name {
        t: usize,
    },
    Paren(Box<PNode>),
    /// `(type *)inner`, the cast spanning tokens `open..=close`.
    Cast {
        open: usize,
        close: usize,
        view: View,
        inner: Box<PNode>,
    },
    /// `base + a - b ...`: each term (negated, first token, end); `int_first` for `a + base`.
    Add {
        base: Box<PNode>,
        terms: Vec<(bool, usize, usize)>,
        int_first: bool,
    },
    /// `cond ? a : b`.
    Cond {
        cond: (usize, usize),
        a: Box<PNode>,
        b: Box<PNode>,
    },
    /// `&E`.
    Addr(Box<ENode>),
    /// An array member without its subscripts: a pointer to its first element.
    Decay(Box<ENode>),
    /// `q++`, `++q`, `q--`, `--q` on a variable named at token `tok`.
    IncDec {
        tok: usize,
        t: usize,
        inc: bool,
        pre: bool,
    },
}

/// The shape of an element reached through a pointer.
#[derive(Clone, Debug)]
pub(crate) struct ENode {
    pub ptr: PNode,
    /// The element's first token: the pointer's, `*`, or the `(` around an element.
    pub first: usize,
    /// The subscript's tokens (`P[e]`); `None` for `P->`, `*P`.
    pub sub: Option<(usize, usize)>,
    /// Where the members start: after `]`, at `->`, after `*P` or after `(E)`.
    pub k: usize,
    /// For a structure view: the members reached and where they end.
    pub path: Option<Path>,
    /// Where the element's tokens end (before any assignment or operator after it).
    pub end: usize,
}

/// A pointer value as the copy computes it.
#[derive(Clone, Debug)]
pub(crate) struct Ptr {
    /// The target it derives from (its buffer, layout, M).
    pub t: usize,
    pub view: View,
    /// Its offset in the view's units; `None` for the buffer's start.
    pub off: Option<String>,
    /// `p` or `p + e` on a parameter still at the buffer's start, with the tokens of `e`: what
    /// the staged copy can check. `None` for anything derived further.
    pub simple: Option<Option<(usize, usize)>>,
}

impl Ptr {
    /// The offset, `0` of its type for the buffer's start.
    pub fn value(&self, ctx: &Ctx) -> String {
        let g = &ctx.targets[self.t];
        self.off.clone().unwrap_or_else(|| format!("({})0", off_type(&self.view, g.layout.word_bytes)))
    }

    /// The target it derives from, seen through its view.
    pub fn target(&self, ctx: &Ctx) -> Target {
        Target { view: self.view.clone(), ..ctx.targets[self.t].clone() }
    }
}

impl<P: Policy> Rewriter<'_, P> {
    // ---- shapes ------------------------------------------------------------------------

    /// The followed target named at token `j`, unless it is a member name.
    pub(super) fn target_at(&self, j: usize, ctx: &Ctx) -> Option<usize> {
        let t = self.toks.get(j)?;
        if t.kind != TokenKind::Ident || (j > 0 && (self.is(j - 1, ".") || self.is(j - 1, "->"))) {
            return None;
        }
        ctx.lookup(t.text(self.src), j)
    }

    /// A pointer value starting at `j` (an assignment-expression without assignment), if one
    /// does, with its end.
    pub(super) fn p_expr(&self, j: usize, hi: usize, ctx: &Ctx) -> R<Option<(usize, PNode)>> {
        let e = self.skip_expr(j, hi, Prec::OrOr);
        if e > j && self.is(e, "?") {
            let mid = self.skip_expr(e + 1, hi, Prec::Comma);
            if !self.is(mid, ":") {
                return Ok(None);
            }
            let end = self.skip_expr(mid + 1, hi, Prec::Cond);
            let a = self.p_expr(e + 1, mid, ctx)?.filter(|(x, _)| *x == mid);
            let b = self.p_expr(mid + 1, end, ctx)?.filter(|(x, _)| *x == end);
            return match (a, b) {
                (Some((_, a)), Some((_, b))) => {
                    let ((ta, va), (tb, vb)) = (self.node_info(&a, ctx), self.node_info(&b, ctx));
                    if ctx.targets[ta].buffer != ctx.targets[tb].buffer {
                        return Err(self.refuse(j, end, format!("pointers into `{}` and `{}` merged in one expression: which buffer it points to is known only at run time", ctx.targets[ta].buffer, ctx.targets[tb].buffer)));
                    }
                    if va != vb {
                        return Err(self.refuse(j, end, "pointers of two types merged in one expression"));
                    }
                    Ok(Some((end, PNode::Cond { cond: (j, e), a: Box::new(a), b: Box::new(b) })))
                }
                (Some((_, a)), None) | (None, Some((_, a))) => {
                    let g = &ctx.targets[self.node_info(&a, ctx).0].buffer;
                    Err(self.refuse(j, end, format!("a pointer into `{g}` merged with another pointer in one expression: which buffer it points to is known only at run time")))
                }
                (None, None) => Ok(None),
            };
        }
        self.p_add(j, hi, ctx)
    }

    /// `P`, `P + e`, `P - e`... (stopping before `- Q`, a difference of pointers).
    pub(super) fn p_add(&self, j: usize, hi: usize, ctx: &Ctx) -> R<Option<(usize, PNode)>> {
        let mut terms = Vec::new();
        let mut int_first = false;
        let (mut k, base) = match self.p_unary(j, hi, ctx)? {
            Some(b) => b,
            None => {
                // `i + p`: the integer first.
                let e = self.skip_expr(j, hi, Prec::Mul);
                if e == j || !self.is(e, "+") {
                    return Ok(None);
                }
                let Some(b) = self.p_unary(e + 1, hi, ctx)? else {
                    return Ok(None);
                };
                terms.push((false, j, e));
                int_first = true;
                b
            }
        };
        while k < hi && (self.is(k, "+") || self.is(k, "-")) {
            let e = self.skip_expr(k + 1, hi, Prec::Mul);
            if e == k + 1 || self.p_unary(k + 1, hi, ctx)?.is_some_and(|(x, _)| x == e) {
                break;
            }
            terms.push((self.is(k, "-"), k + 1, e));
            k = e;
        }
        if terms.is_empty() {
            return Ok(Some((k, base)));
        }
        Ok(Some((k, PNode::Add { base: Box::new(base), terms, int_first })))
    }

    /// A unary pointer value starting at `j`.
    pub(super) fn p_unary(&self, j: usize, hi: usize, ctx: &Ctx) -> R<Option<(usize, PNode)>> {
        if j >= hi {
            return Ok(None);
        }
        if self.is(j, "&") && self.unary(j) {
            let Some(e) = self.e_postfix(j + 1, hi, ctx)? else {
                return Ok(None);
            };
            if self.is(e.end, ".") || self.is(e.end, "[") {
                return Err(self.refuse(
                    j,
                    e.end + 2,
                    "address of a vector component or of a subscript the rewriter does not follow",
                ));
            }
            return Ok(Some((e.end, PNode::Addr(Box::new(e)))));
        }
        if (self.is(j, "++") || self.is(j, "--")) && !self.is(j + 2, "[") && !self.is(j + 2, "->") {
            if let Some(t) = self.target_at(j + 1, ctx) {
                return Ok(Some((j + 2, PNode::IncDec { tok: j + 1, t, inc: self.is(j, "++"), pre: true })));
            }
            return Ok(None);
        }
        if self.is(j, "(") {
            if let Some(close) = self.cast_at(j) {
                let Some((end, inner)) = self.p_unary(close + 1, hi, ctx)? else {
                    return Ok(None);
                };
                let (t, _) = self.node_info(&inner, ctx);
                let g = &ctx.targets[t];
                let view = self.cast_view(j, close, g).map_err(|why| self.refuse(j, end, why))?;
                return Ok(Some((end, PNode::Cast { open: j, close, view, inner: Box::new(inner) })));
            }
            let close = self.close_of(j)?;
            if close >= hi || self.is(close + 1, "[") || self.is(close + 1, "->") {
                return Ok(None);
            }
            return Ok(self
                .p_expr(j + 1, close, ctx)?
                .filter(|(e, _)| *e == close)
                .map(|(_, n)| (close + 1, PNode::Paren(Box::new(n)))));
        }
        let Some(t) = self.target_at(j, ctx) else {
            return Ok(None);
        };
        if self.is(j + 1, "[") || self.is(j + 1, "->") {
            let Some(e) = self.e_postfix(j, hi, ctx)? else {
                return Ok(None);
            };
            let decays = e.path.as_ref().is_some_and(|p| p.decays());
            return Ok(decays.then(|| (e.end, PNode::Decay(Box::new(e)))));
        }
        if self.is(j + 1, "++") || self.is(j + 1, "--") {
            return Ok(Some((j + 2, PNode::IncDec { tok: j, t, inc: self.is(j + 1, "++"), pre: false })));
        }
        Ok(Some((j + 1, PNode::Name { t })))
    }

    /// An element starting at `j`: `P[e]`, `P->`, `*P`, `(E)` followed by members.
    pub(super) fn e_postfix(&self, j: usize, hi: usize, ctx: &Ctx) -> R<Option<ENode>> {
        if j >= hi {
            return Ok(None);
        }
        let (ptr, sub, k) = if self.is(j, "*") && self.unary(j) {
            let Some((end, p)) = self.p_unary(j + 1, hi, ctx)? else {
                return Ok(None);
            };
            (p, None, end)
        } else if self.is(j, "(") && self.cast_at(j).is_none() {
            let close = self.close_of(j)?;
            if close >= hi {
                return Ok(None);
            }
            if self.is(close + 1, "[") || self.is(close + 1, "->") {
                let Some((_, p)) = self.p_expr(j + 1, close, ctx)?.filter(|(e, _)| *e == close) else {
                    return Ok(None);
                };
                self.subscript_or_arrow(PNode::Paren(Box::new(p)), close + 1)?
            } else if self.is(close + 1, ".") {
                // `(p[i]).x`, as macros write it: the members continue after the parenthesis.
                let Some(inner) = self.e_postfix(j + 1, close, ctx)?.filter(|e| e.end == close) else {
                    return Ok(None);
                };
                if inner.path.as_ref().is_some_and(|p| !p.steps.is_empty()) {
                    return Ok(None);
                }
                (inner.ptr, inner.sub, close + 1)
            } else {
                return Ok(None);
            }
        } else if let Some(t) = self.target_at(j, ctx) {
            if !(self.is(j + 1, "[") || self.is(j + 1, "->")) {
                return Ok(None);
            }
            self.subscript_or_arrow(PNode::Name { t }, j + 1)?
        } else {
            return Ok(None);
        };
        let (t, view) = self.node_info(&ptr, ctx);
        let (path, end) = match view {
            View::Struct => {
                let p = self.member_path(&ctx.targets[t].layout, k, hi)?;
                let end = p.end;
                (Some(p), end)
            }
            _ if self.is(k, "->") => {
                let v = view.type_name(&ctx.targets[t].layout);
                return Err(self.refuse(j, k + 2, format!("`->` on a pointer to `{v}`")));
            }
            _ => (None, k),
        };
        Ok(Some(ENode { ptr, first: j, sub, k, path, end }))
    }

    /// `[e]` or `->` at `k` after a pointer.
    fn subscript_or_arrow(&self, p: PNode, k: usize) -> R<Pointed> {
        if self.is(k, "[") {
            let close = self.close_of(k)?;
            if close == k + 1 {
                return Err(self.refuse(k - 1, close + 1, "empty subscript"));
            }
            Ok((p, Some((k + 1, close)), close + 1))
        } else {
            Ok((p, None, k))
        }
    }

    /// The target and view of a pointer value.
    pub(super) fn node_info(&self, n: &PNode, ctx: &Ctx) -> (usize, View) {
        match n {
            PNode::Name { t, .. } | PNode::IncDec { t, .. } => (*t, ctx.targets[*t].view.clone()),
            PNode::Paren(i) | PNode::Add { base: i, .. } | PNode::Cond { a: i, .. } => self.node_info(i, ctx),
            PNode::Cast { view, inner, .. } => (self.node_info(inner, ctx).0, view.clone()),
            PNode::Addr(e) | PNode::Decay(e) => {
                let (t, v) = self.node_info(&e.ptr, ctx);
                match &e.path {
                    Some(p) => (t, p.view().unwrap_or(View::Struct)),
                    None => (t, v),
                }
            }
        }
    }

    /// What a pointer type names, for a pointer into `g`: the view, or why it is not one.
    fn cast_view(&self, open: usize, close: usize, g: &Target) -> Result<View, String> {
        let stars = (open + 1..close).filter(|&k| self.is(k, "*")).count();
        let words: Vec<&str> = (open + 1..close)
            .filter(|&k| !self.is(k, "*"))
            .map(|k| self.text(k))
            .filter(|w| !QUALIFIERS.contains(w) || matches!(*w, "unsigned" | "signed"))
            .collect();
        let ty = words.join(" ");
        if stars == 0 {
            return Err(format!(
                "a pointer into `{}` converted to `{ty}`: an address the copy does not have",
                g.buffer
            ));
        }
        if stars > 1 {
            return Err(format!("a pointer into `{}` converted to a pointer to a pointer", g.buffer));
        }
        self.view_of(&ty, g).ok_or_else(|| {
            format!(
                "a pointer into `{}` cast to `{ty} *`, which is not its structure or a builtin scalar or vector",
                g.buffer
            )
        })
    }

    /// The view a pointer to `ty` has into `g`'s buffer.
    pub(super) fn view_of(&self, ty: &str, g: &Target) -> Option<View> {
        let ty = ty.trim();
        let r = self.types.resolve(ty);
        let layout_type = &g.layout.type_name;
        let same_struct = ty == layout_type || r == self.types.resolve(layout_type);
        // A flat buffer's layout is one array member `w` named after its scalar.
        let flat = g.layout.members.len() == 1
            && g.layout.members[0].name == "w"
            && g.layout.type_name == g.layout.members[0].scalar;
        if same_struct && !flat {
            return Some(View::Struct);
        }
        let b = Builtin::parse(r).filter(|b| b.scalar.size().is_some())?;
        Some(if b.lanes == 1 {
            View::Scalar(b.scalar.name().to_string())
        } else {
            View::Vector(b.scalar.name().to_string(), b.lanes)
        })
    }

    // ---- emission ----------------------------------------------------------------------

    /// The copy's offset for pointer value `n`.
    pub(super) fn emit_ptr(&mut self, n: &PNode, ctx: &Ctx) -> R<Ptr> {
        match n {
            PNode::Name { t } => {
                let g = &ctx.targets[*t];
                let simple = (g.param && g.off.is_none()).then_some(None);
                Ok(Ptr { t: *t, view: g.view.clone(), off: g.off.clone(), simple })
            }
            PNode::Paren(inner) => {
                let p = self.emit_ptr(inner, ctx)?;
                Ok(Ptr { off: p.off.map(|o| format!("({o})")), ..p })
            }
            PNode::Cast { open, close, view, inner } => {
                let p = self.emit_ptr(inner, ctx)?;
                self.policy.derived(&self.code, (*open, *close + 1), &ctx.targets[p.t])?;
                self.convert(p, view, ctx, (*open, *close + 1))
            }
            PNode::Add { base, terms, int_first } => {
                let p = self.emit_ptr(base, ctx)?;
                let stride = p.view.stride();
                let simple = match p.simple {
                    Some(None) if !terms[0].0 && !*int_first => Some(Some((terms[0].1, terms[terms.len() - 1].2))),
                    _ => None,
                };
                let mut off = p.off.clone();
                for &(neg, a, b) in terms {
                    let text = self.expr(a, b, ctx)?;
                    let text = text.trim();
                    let scaled = if stride > 1 { format!("({text}) * {stride}") } else { text.to_string() };
                    off = Some(match (off, neg) {
                        (None, false) => scaled,
                        (None, true) => format!("-{scaled}"),
                        (Some(o), false) => format!("{o} + {scaled}"),
                        (Some(o), true) => format!("{o} - {scaled}"),
                    });
                }
                if simple.is_none() {
                    let (a, b) = (terms[0].1, terms[terms.len() - 1].2);
                    self.policy.derived(&self.code, (a, b), &ctx.targets[p.t])?;
                }
                Ok(Ptr { off, simple, ..p })
            }
            PNode::Cond { cond, a, b } => {
                let c = self.expr(cond.0, cond.1, ctx)?;
                let (a, b) = (self.emit_ptr(a, ctx)?, self.emit_ptr(b, ctx)?);
                self.policy.derived(&self.code, *cond, &ctx.targets[a.t])?;
                let off = format!("({}) ? ({}) : ({})", c.trim(), a.value(ctx), b.value(ctx));
                Ok(Ptr { off: Some(off), simple: None, ..a })
            }
            PNode::IncDec { tok, t, inc, pre } => {
                let g = &ctx.targets[*t];
                let Some(var) = g.off.clone() else {
                    return Err(self.refuse(*tok, *tok + 1, format!("`{}` has no offset variable", g.name)));
                };
                self.policy.derived(&self.code, (*tok, *tok + 1), g)?;
                let s = g.view.stride();
                let op = if *inc { "+" } else { "-" };
                let text = match (s, pre) {
                    (1, true) => format!("{op}{op}{var}"),
                    (1, false) => format!("{var}{op}{op}"),
                    (_, true) => format!("({var} {op}= {s})"),
                    (_, false) => format!("(({var} {op}= {s}) {} {s})", if *inc { "-" } else { "+" }),
                };
                Ok(Ptr { t: *t, view: g.view.clone(), off: Some(text), simple: None })
            }
            PNode::Addr(e) | PNode::Decay(e) => self.elem_address(e, ctx),
        }
    }

    /// Pointer `p` seen as `to`.
    fn convert(&self, p: Ptr, to: &View, ctx: &Ctx, (a, b): (usize, usize)) -> R<Ptr> {
        if p.view == *to {
            return Ok(p);
        }
        let g = &ctx.targets[p.t];
        let size = |v: &View| v.scalar().and_then(Scalar::parse).and_then(Scalar::size);
        let ty = off_type(to, g.layout.word_bytes);
        let scaled = |k: u32| p.off.as_ref().map(|o| if k == 1 { o.clone() } else { format!("({ty})({o}) * {k}") });
        match (&p.view, to) {
            (View::Struct, _) => {
                let t = size(to).unwrap_or(0);
                let sw = g.layout.words * g.layout.word_bytes;
                if t == 0 || !sw.is_multiple_of(t) {
                    return Err(self.refuse(
                        a,
                        b,
                        format!(
                            "a pointer to `{}` cast to `{} *`: its structures are not a whole number of them",
                            g.layout.type_name,
                            to.type_name(&g.layout)
                        ),
                    ));
                }
                Ok(Ptr { view: to.clone(), off: scaled(sw / t), simple: None, ..p })
            }
            (_, View::Struct) => Err(self.refuse(
                a,
                b,
                format!(
                    "a pointer to `{}` cast back to the structure `{}`: where its structures begin is not followed",
                    p.view.type_name(&g.layout),
                    g.layout.type_name
                ),
            )),
            _ => {
                let (from, t) = (size(&p.view).unwrap_or(0), size(to).unwrap_or(0));
                if t == 0 || from == 0 || from < t || !from.is_multiple_of(t) {
                    return Err(self.refuse(
                        a,
                        b,
                        format!(
                            "a pointer to `{}` cast to `{} *`, a wider type: its alignment is not followed",
                            p.view.type_name(&g.layout),
                            to.type_name(&g.layout)
                        ),
                    ));
                }
                Ok(Ptr { view: to.clone(), off: scaled(from / t), simple: None, ..p })
            }
        }
    }
}
