//! `sizeof` applied to a rewritten buffer's element: the element type changes from the
//! structure to a word, so the original type is spelled out.

use super::source::R;
use super::target::Ctx;
use super::walk::{Policy, Rewriter};

impl<P: Policy> Rewriter<'_, P> {
    /// `sizeof(*p)`, `sizeof *p`, `sizeof(p[e])`: the element type, which the rewrite changes
    /// from the structure to a word, so it is spelled out. `sizeof(p)` stays (a followed local's is
    /// a pointer's).
    pub(super) fn sizeof(&mut self, j: usize, ctx: &Ctx) -> R<Option<(usize, String)>> {
        let mut k = j + 1;
        let paren = self.is(k, "(");
        k += paren as usize;
        let deref = self.is(k, "*");
        k += deref as usize;
        let Some(ti) = self.target_at(k, ctx) else {
            return Ok(None);
        };
        let mut e = k + 1;
        if !deref {
            if self.is(e, "[") {
                e = self.close_of(e)? + 1;
            } else if paren && self.is(e, ")") {
                // A followed local is an integer in the copy: its size is a pointer's.
                if !ctx.targets[ti].param {
                    return Ok(Some((e + 1, "sizeof(__global char *)".to_string())));
                }
                return Ok(Some((e + 1, self.src[self.toks[j].span.start..self.toks[e].span.end].to_string())));
            } else {
                return Ok(None);
            }
        }
        if paren {
            if !self.is(e, ")") {
                return Ok(None);
            }
            e += 1;
        } else if self.is(e, ".") || self.is(e, "->") || self.is(e, "[") {
            return Ok(None);
        }
        let g = &ctx.targets[ti];
        let ty = g.view.type_name(&g.layout);
        Ok(Some((e, format!("sizeof({ty})"))))
    }
}
