//! The expression and statement structure the pointer forms need: where an expression of a
//! given precedence ends, what a cast looks like, where a statement ends. Pure questions
//! about the token stream, answered without rewriting anything.

use super::source::Source;
use crate::clc::lex::TokenKind;
use crate::clc::types::is_type_word;

/// C's binary operator precedence, loosest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Prec {
    Comma,
    Assign,
    Cond,
    OrOr,
    AndAnd,
    Or,
    Xor,
    And,
    Eq,
    Rel,
    Shift,
    Add,
    Mul,
}

/// Qualifiers and address spaces that may start or sit inside a type name.
pub(crate) const QUALIFIERS: [&str; 20] = [
    "const",
    "volatile",
    "restrict",
    "__const",
    "__restrict",
    "__restrict__",
    "static",
    "__private",
    "private",
    "__local",
    "local",
    "__global",
    "global",
    "__constant",
    "constant",
    "__generic",
    "generic",
    "unsigned",
    "signed",
    "register",
];

pub(crate) fn binary_prec(op: &str) -> Option<Prec> {
    Some(match op {
        "," => Prec::Comma,
        "=" | "+=" | "-=" | "*=" | "/=" | "%=" | "&=" | "|=" | "^=" | "<<=" | ">>=" => Prec::Assign,
        "?" => Prec::Cond,
        "||" => Prec::OrOr,
        "&&" => Prec::AndAnd,
        "|" => Prec::Or,
        "^" => Prec::Xor,
        "&" => Prec::And,
        "==" | "!=" => Prec::Eq,
        "<" | ">" | "<=" | ">=" => Prec::Rel,
        "<<" | ">>" => Prec::Shift,
        "+" | "-" => Prec::Add,
        "*" | "/" | "%" => Prec::Mul,
        _ => return None,
    })
}

fn tighter(p: Prec) -> Option<Prec> {
    use Prec::*;
    Some(match p {
        Comma => Assign,
        Assign => Cond,
        Cond => OrOr,
        OrOr => AndAnd,
        AndAnd => Or,
        Or => Xor,
        Xor => And,
        And => Eq,
        Eq => Rel,
        Rel => Shift,
        Shift => Add,
        Add => Mul,
        Mul => return None,
    })
}

impl Source<'_> {
    fn punct(&self, k: usize) -> Option<&str> {
        self.toks.get(k).filter(|t| t.kind == TokenKind::Punct).map(|t| t.text(self.src))
    }

    /// Whether identifier token `k` names a type or a qualifier: a builtin type, one of the
    /// program's typedefs, a tag after `struct`.
    pub fn is_type_at(&self, k: usize) -> bool {
        let Some(t) = self.toks.get(k).filter(|t| t.kind == TokenKind::Ident) else {
            return false;
        };
        let s = t.text(self.src);
        QUALIFIERS.contains(&s)
            || is_type_word(s)
            || matches!(s, "struct" | "union" | "enum" | "long" | "short" | "int" | "char")
            || (k > 0 && matches!(self.text(k - 1), "struct" | "union" | "enum"))
            || self.types.is_typedef(s)
            || self.types.alias(s).is_some()
    }

    /// The closing `)` of a cast `( type-name )` opening at `open`, if it is one: qualifiers,
    /// type words and `*`s only, at least one type word.
    pub fn cast_at(&self, open: usize) -> Option<usize> {
        if !self.is(open, "(") {
            return None;
        }
        let mut k = open + 1;
        let mut typed = false;
        while k < self.toks.len() {
            if self.is(k, ")") {
                return (typed && k > open + 1).then_some(k);
            }
            if self.is(k, "*") {
                k += 1;
                continue;
            }
            if !self.is_type_at(k) {
                return None;
            }
            typed |= !QUALIFIERS.contains(&self.text(k)) || matches!(self.text(k), "unsigned" | "signed");
            k += 1;
        }
        None
    }

    /// The end of the expression starting at `j` whose binary operators all bind at least as
    /// tightly as `min` (an assignment-expression for `Prec::Assign`); `j` itself when none
    /// starts there. Never past `hi`.
    pub fn skip_expr(&self, j: usize, hi: usize, min: Prec) -> usize {
        let mut k = self.skip_unary(j, hi);
        if k == j {
            return j;
        }
        while k < hi {
            let Some(op) = self.punct(k) else { break };
            let Some(p) = binary_prec(op) else { break };
            if p < min {
                break;
            }
            let next = match p {
                Prec::Cond => {
                    let mid = self.skip_expr(k + 1, hi, Prec::Comma);
                    if !self.is(mid, ":") {
                        return k;
                    }
                    self.skip_expr(mid + 1, hi, Prec::Cond)
                }
                Prec::Assign => self.skip_expr(k + 1, hi, Prec::Assign),
                _ => self.skip_expr(k + 1, hi, tighter(p).unwrap_or(Prec::Mul)),
            };
            if next == k + 1 {
                return k;
            }
            k = next;
        }
        k.min(hi)
    }

    /// The end of the unary expression (cast included) starting at `j`.
    pub fn skip_unary(&self, j: usize, hi: usize) -> usize {
        if j >= hi {
            return j;
        }
        if let Some(op) = self.punct(j) {
            if matches!(op, "+" | "-" | "!" | "~" | "*" | "&" | "++" | "--") {
                let e = self.skip_unary(j + 1, hi);
                return if e == j + 1 { j } else { e };
            }
            if op == "(" {
                if let Some(close) = self.cast_at(j) {
                    // A cast, or a vector literal `(float4)(...)`.
                    let e = self.skip_unary(close + 1, hi);
                    return if e == close + 1 { j } else { e };
                }
            }
        }
        if self.is_word(j, "sizeof") {
            if self.is(j + 1, "(") && self.cast_at(j + 1).is_some() {
                return self.cast_at(j + 1).map_or(j, |c| c + 1);
            }
            let e = self.skip_unary(j + 1, hi);
            return if e == j + 1 { j } else { e };
        }
        self.skip_postfix(j, hi)
    }

    /// The end of the postfix expression starting at `j`: a primary and its `[..]`, `(..)`,
    /// `.m`, `->m`, `++`, `--`.
    pub fn skip_postfix(&self, j: usize, hi: usize) -> usize {
        let Some(t) = self.toks.get(j) else { return j };
        let mut k = match t.kind {
            TokenKind::Ident if !matches!(t.text(self.src), "return" | "case" | "else" | "do") => j + 1,
            TokenKind::Number | TokenKind::Char => j + 1,
            TokenKind::Str => {
                let mut e = j + 1;
                while self.toks.get(e).is_some_and(|t| t.kind == TokenKind::Str) {
                    e += 1;
                }
                e
            }
            TokenKind::Punct if self.is(j, "(") => match self.close_of(j) {
                Ok(c) => c + 1,
                Err(_) => return j,
            },
            _ => return j,
        };
        while k < hi {
            if self.is(k, "[") || self.is(k, "(") {
                match self.close_of(k) {
                    Ok(c) => k = c + 1,
                    Err(_) => return k,
                }
            } else if (self.is(k, ".") || self.is(k, "->"))
                && self.toks.get(k + 1).is_some_and(|t| t.kind == TokenKind::Ident)
            {
                k += 2;
            } else if self.is(k, "++") || self.is(k, "--") {
                k += 1;
            } else {
                break;
            }
        }
        k.min(hi)
    }

    /// The token after the statement starting at `k` (a block, a control statement with its
    /// body, or an expression or declaration up to its `;`), never past `hi`.
    pub fn statement_end(&self, k: usize, hi: usize) -> usize {
        if k >= hi {
            return hi;
        }
        if self.is(k, "{") {
            return self.close_of(k).map_or(hi, |c| c + 1);
        }
        let head = |k: usize| -> usize {
            // `for (...)`, `while (...)`, `if (...)`, `switch (...)`: the body after the head.
            if self.is(k + 1, "(") {
                self.close_of(k + 1).map_or(hi, |c| c + 1)
            } else {
                hi
            }
        };
        match self.text(k) {
            "if" => {
                let end = self.statement_end(head(k), hi);
                if self.is_word(end, "else") {
                    self.statement_end(end + 1, hi)
                } else {
                    end
                }
            }
            "for" | "while" | "switch" => self.statement_end(head(k), hi),
            "do" => {
                let body = self.statement_end(k + 1, hi);
                // while ( ... ) ;
                let after = head(body);
                (after + self.is(after, ";") as usize).min(hi)
            }
            _ => {
                let mut depth = 0usize;
                for e in k..hi {
                    match self.punct(e) {
                        Some("(" | "[" | "{") => depth += 1,
                        Some(")" | "]" | "}") if depth == 0 => return e,
                        Some(")" | "]" | "}") => depth -= 1,
                        Some(";") if depth == 0 => return e + 1,
                        _ => {}
                    }
                }
                hi
            }
        }
    }
}
