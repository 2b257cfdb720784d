//! The rewriter's walk over a function body: every token is offered to the access forms in a
//! fixed order, and the first that recognizes it replaces it (and what follows) with its
//! rewritten text; the rest of the body is kept byte for byte, line count included.
//!
//! Where the forms live: `sizeof.rs`, `calls.rs` (calls and helper copies), `access.rs` (the
//! shapes `p[i]`, `p->m`, `&p[i]`, `(p + i)->m` and bare uses), which hands the access to
//! `member.rs` (structure members), `vector.rs` (vector members), `flat.rs` (flat
//! subscripts); `value.rs` loads and stores multi-word values. A new form is one file with a
//! method returning `R<Option<(end, text)>>`, and one line in [`Rewriter::at`].
//!
//! What differs between the kind of copy being made is a [`Policy`] the walk consults: the
//! ASTA copy takes every default ([`Asta`]); the staged copy (stage.rs) plugs in its own.

use super::emit::Needs;
use super::funcs;
use super::source::{Source, NOT_CALLS, R};
use super::target::{Ctx, Target};
use crate::clc::lex::TokenKind;
use std::collections::HashSet;
use std::ops::Deref;

/// The hooks through which a kind of copy changes the walk. Each receives the program's
/// [`Source`] to read tokens and word its refusals; the defaults are the ASTA copy's.
pub(crate) trait Policy {
    /// A replacement for the tokens from identifier `j` on, tried before every access form
    /// (the staged copy turns `return;` into a jump to its epilogue).
    fn statement(&mut self, _code: &Source, _j: usize) -> R<Option<(usize, String)>> {
        Ok(None)
    }

    /// The structure index of an access to `g` spanning tokens `access` (first, end), taken as
    /// an address when `addr`, whose subscript is tokens `index` (`None` for `p->m`); `None`
    /// rewrites the subscript as written.
    fn structure_index(
        &mut self,
        _code: &Source,
        _access: (usize, usize),
        _addr: bool,
        _index: Option<(usize, usize)>,
        _g: &Target,
    ) -> R<Option<String>> {
        Ok(None)
    }

    /// Whether `g` may be passed to function `callee` by the call spanning tokens `call`
    /// (first, end), which the rewriter would follow into a private copy of the callee.
    fn pass(&mut self, _code: &Source, _call: (usize, usize), _g: &Target, _callee: &str) -> R<()> {
        Ok(())
    }

    /// Whether an access may go through pointer `g` derived from a buffer by anything but a
    /// subscript of the parameter itself (`q = p + i`, `p++`, a cast, `&p[i].x`), at tokens
    /// `span`.
    fn derived(&mut self, _code: &Source, _span: (usize, usize), _g: &Target) -> R<()> {
        Ok(())
    }
}

/// The ASTA copy: the buffer itself, addressed in ASTA, everywhere the kernel reaches it.
pub(crate) struct Asta;

impl Policy for Asta {}

pub(crate) struct Rewriter<'s, P> {
    pub code: Source<'s>,
    pub policy: P,
    pub needs: Needs,
    /// Rewritten helper copies, callees before callers.
    pub copies: Vec<String>,
    pub(super) done: HashSet<String>,
    pub(super) in_progress: HashSet<String>,
    /// Byte offset after which every definition the copies rely on has been seen.
    pub insert_at: usize,
    /// Names of the targets the rewritten code can store to.
    pub stored: HashSet<String>,
}

/// The forms read the program through the rewriter: `self.is(k, "[")`, `self.refuse(...)`.
impl<'s, P> Deref for Rewriter<'s, P> {
    type Target = Source<'s>;

    fn deref(&self) -> &Source<'s> {
        &self.code
    }
}

impl<'s, P: Policy> Rewriter<'s, P> {
    pub fn new(code: Source<'s>, policy: P) -> Self {
        Rewriter {
            code,
            policy,
            needs: Needs::default(),
            copies: Vec::new(),
            done: HashSet::new(),
            in_progress: HashSet::new(),
            insert_at: 0,
            stored: HashSet::new(),
        }
    }

    /// The text of tokens `lo..hi` (and what lies between them) with every access to a target
    /// rewritten.
    pub fn expr(&mut self, lo: usize, hi: usize, ctx: &Ctx) -> R<String> {
        if lo >= hi {
            return Ok(String::new());
        }
        let src = self.src;
        let mut out = String::new();
        let mut cursor = self.toks[lo].span.start;
        let mut j = lo;
        while j < hi {
            match self.at(j, hi, ctx)? {
                Some((end, text)) => {
                    let (a, b) = (self.toks[j].span.start, self.toks[end - 1].span.end);
                    out.push_str(&src[cursor..a]);
                    out.push_str(&text);
                    // Keep the line count so that later lines keep their numbers.
                    out.extend(std::iter::repeat_n('\n', src[a..b].matches('\n').count()));
                    cursor = b;
                    j = end;
                }
                None => j += 1,
            }
        }
        out.push_str(&src[cursor..self.toks[hi - 1].span.end]);
        Ok(out)
    }

    /// A replacement for the tokens from `j` to the returned end, if one starts at `j`.
    fn at(&mut self, j: usize, hi: usize, ctx: &Ctx) -> R<Option<(usize, String)>> {
        let t = self.toks[j];
        let s = self.text(j);
        let member = j > 0 && (self.is(j - 1, ".") || self.is(j - 1, "->"));
        if t.kind == TokenKind::Ident && !member && self.macros.contains_key(s) {
            if let Some(g) = ctx.targets.iter().find(|g| funcs::mentions(&self.macros, s, &g.name)) {
                let line = self.logical(self.macros[s].line);
                return Err(self.refuse(
                    j,
                    j + 1,
                    format!(
                        "macro `{s}` (defined on line {line}) mentions `{}`: its expansion could change an access",
                        g.name
                    ),
                ));
            }
        }
        if t.kind == TokenKind::Ident && s == "sizeof" {
            return self.sizeof(j, ctx);
        }
        if t.kind == TokenKind::Ident {
            if let Some(r) = self.policy.statement(&self.code, j)? {
                return Ok(Some(r));
            }
        }
        if t.kind == TokenKind::Ident
            && !member
            && self.is(j + 1, "(")
            && !NOT_CALLS.contains(&s)
            && !ctx.decls.contains_key(&j)
        {
            return self.call(j, ctx);
        }
        self.access_at(j, hi, ctx)
    }
}
