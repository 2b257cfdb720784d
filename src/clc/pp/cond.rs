//! `#if` and `#elif` expressions (C99 6.10.1): macros expanded with `defined` read before
//! expansion, identifiers left over are 0, then integer constant expression evaluation in
//! intmax_t/uintmax_t with the usual arithmetic conversions, wrapping and shifts as clang
//! computes them. clang's OpenCL mode makes intmax_t 128 bits wide (OpenCL reserves `long long`
//! for 128-bit integers) on every target and `true`/`false` keywords; a compiler that is not
//! clang may read the expression as plain C99 does (64 bits, `true` an identifier, so 0). The
//! expression is evaluated both ways: clang's value is taken, and a condition whose truth
//! differs between the two is unsure.
//!
//! A value that depends on a name the device compiler may predefine and the caller did not
//! give is *unsure*; `&&`, `||` and `?:` drop the doubt where the known side decides the
//! result, so `defined(X) || defined(__SPIR__)` with `X` defined is sure.

use std::rc::Rc;

use super::expand::{Expander, Query, State, VecBase};
use super::lex::{Kind, Loc, Tok};
use super::Fatal;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct V {
    /// The value's bits, truncated to the evaluation width; `unsigned` says how to read them.
    v: u128,
    unsigned: bool,
    unsure: bool,
}

impl V {
    fn truth(b: bool) -> V {
        V { v: u128::from(b), unsigned: false, unsure: false }
    }
}

enum Item {
    /// A literal (whose type depends on the width) or a signed value such as `defined X`;
    /// `keyword`: `true` or `false`, which plain C99 reads as 0.
    Num {
        v: u128,
        literal: bool,
        u_suffix: bool,
        unsure: bool,
        keyword: bool,
    },
    Op(Rc<str>),
}

/// Whether a subexpression's value is used: C99 6.5.13/14/15 evaluate only one side, and an
/// error (division by zero) on the side not evaluated is none; on a side that only an unsure
/// value decides, it makes the result unsure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Live {
    Yes,
    Maybe,
    No,
}

impl Live {
    fn and(self, other: Live) -> Live {
        match (self, other) {
            (Live::No, _) | (_, Live::No) => Live::No,
            (Live::Maybe, _) | (_, Live::Maybe) => Live::Maybe,
            _ => Live::Yes,
        }
    }
}

enum PErr {
    Syntax(String),
    Fatal(Fatal),
}

/// The value of the `#if` whose tokens (after the directive name) are `toks`; errors and
/// unsure reasons are recorded at `loc`. An expression in error is false, as in clang.
pub(crate) fn eval(st: &mut State, toks: Vec<Tok>, loc: Loc) -> Result<bool, Fatal> {
    let mut names: Vec<(Rc<str>, bool)> = Vec::new();
    let items = match lower(st, toks, loc, &mut names)? {
        Ok(items) => items,
        Err(msg) => {
            st.error(loc, msg);
            return Ok(false);
        }
    };
    if items.is_empty() {
        st.error(loc, "expected value in expression".into());
        return Ok(false);
    }
    let v = match evaluate(&items, Dialect::Clang, st.limits.max_nesting) {
        Ok(v) => v,
        Err(PErr::Syntax(msg)) => {
            st.error(loc, msg);
            return Ok(false);
        }
        Err(PErr::Fatal(f)) => return Err(f),
    };
    let c99 = evaluate(&items, Dialect::C99, st.limits.max_nesting);
    if !matches!(c99, Ok(n) if (n.v != 0) == (v.v != 0)) {
        st.unsure(
            loc,
            "the condition differs between clang's OpenCL C (128-bit intmax_t, 'true' is 1) and plain C99 \
             (64 bits, 'true' is 0)"
                .into(),
        );
    }
    if v.unsure {
        for (name, reserved) in names {
            st.unsure_name(&name, reserved, loc);
        }
    }
    Ok(v.v != 0)
}

/// How a device compiler may read an `#if`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dialect {
    Clang,
    C99,
}

fn evaluate(items: &[Item], dialect: Dialect, max_depth: usize) -> Result<V, PErr> {
    let bits = if dialect == Dialect::Clang { 128 } else { 64 };
    let mut p = Parser { items, pos: 0, depth: 0, max_depth, bits, dialect };
    let v = p.expr(Live::Yes)?;
    if p.pos != items.len() {
        return Err(PErr::Syntax("token is not a valid binary operator in a preprocessor subexpression".into()));
    }
    Ok(v)
}

/// Macro expansion and `defined`, down to values and operators.
fn lower(
    st: &mut State,
    toks: Vec<Tok>,
    loc: Loc,
    names: &mut Vec<(Rc<str>, bool)>,
) -> Result<Result<Vec<Item>, String>, Fatal> {
    let mut ex = Expander::new();
    let mut base = VecBase::new(toks, loc);
    let mut items = Vec::new();
    let mut held: Option<Tok> = None;
    loop {
        let t = match held.take() {
            Some(t) => t,
            None => ex.next(st, &mut base)?,
        };
        match t.kind {
            Kind::Eof => break,
            Kind::Ident if &*t.text == "defined" => {
                let mut u = ex.read(st, &mut base)?;
                let paren = u.is_punct("(");
                if paren {
                    u = ex.read(st, &mut base)?;
                }
                if u.kind != Kind::Ident {
                    return Ok(Err("macro name must be an identifier after 'defined'".into()));
                }
                if paren && !ex.read(st, &mut base)?.is_punct(")") {
                    return Ok(Err("missing ')' after 'defined'".into()));
                }
                let (v, unsure) = match st.query(&u.text) {
                    Query::Defined => (1, false),
                    Query::Undefined => (0, false),
                    Query::Unsure(reserved) => {
                        names.push((u.text.clone(), reserved));
                        (0, true)
                    }
                };
                items.push(Item::Num { v, literal: false, u_suffix: false, unsure, keyword: false });
            }
            // OpenCL C has `bool`, and clang makes `true` and `false` keywords in `#if` too.
            Kind::Ident if &*t.text == "true" || &*t.text == "false" => {
                let v = u128::from(&*t.text == "true");
                items.push(Item::Num { v, literal: false, u_suffix: false, unsure: false, keyword: true })
            }
            Kind::Ident => {
                let mut unsure = false;
                if let Query::Unsure(reserved) = st.query(&t.text) {
                    names.push((t.text.clone(), reserved));
                    unsure = true;
                    // A builtin such as `__has_include(<x.h>)`: its argument list goes with it.
                    let u = ex.next(st, &mut base)?;
                    if u.is_punct("(") {
                        skip_parens(st, &mut ex, &mut base)?;
                    } else {
                        held = Some(u);
                    }
                }
                items.push(Item::Num { v: 0, literal: false, u_suffix: false, unsure, keyword: false });
            }
            Kind::Number => match parse_int(&t.text) {
                Ok((v, u_suffix)) => {
                    items.push(Item::Num { v, literal: true, u_suffix, unsure: false, keyword: false })
                }
                Err(msg) => return Ok(Err(msg)),
            },
            Kind::Char => match parse_char(&t.text) {
                Ok(v) => items.push(Item::Num {
                    v: v as u128,
                    literal: false,
                    u_suffix: false,
                    unsure: false,
                    keyword: false,
                }),
                Err(msg) => return Ok(Err(msg)),
            },
            Kind::Punct => items.push(Item::Op(t.text.clone())),
            _ => return Ok(Err(format!("invalid token '{}' in preprocessor expression", t.text))),
        }
    }
    Ok(Ok(items))
}

fn skip_parens(st: &mut State, ex: &mut Expander, base: &mut VecBase) -> Result<(), Fatal> {
    let mut depth = 1usize;
    while depth > 0 {
        let w = ex.read(st, base)?;
        if w.kind == Kind::Eof {
            break;
        }
        if w.is_punct("(") {
            depth += 1;
        } else if w.is_punct(")") {
            depth -= 1;
        }
    }
    Ok(())
}

struct Parser<'a> {
    items: &'a [Item],
    pos: usize,
    depth: usize,
    max_depth: usize,
    /// The width of intmax_t.
    bits: u32,
    dialect: Dialect,
}

fn binary_prec(op: &str) -> Option<u8> {
    Some(match op {
        "*" | "/" | "%" => 10,
        "+" | "-" => 9,
        "<<" | ">>" => 8,
        "<" | ">" | "<=" | ">=" => 7,
        "==" | "!=" => 6,
        "&" => 5,
        "^" => 4,
        "|" => 3,
        "&&" => 2,
        "||" => 1,
        _ => return None,
    })
}

impl Parser<'_> {
    fn mask(&self) -> u128 {
        u128::MAX >> (128 - self.bits)
    }

    /// `x` as a signed value of the evaluation width.
    fn signed(&self, x: u128) -> i128 {
        let shift = 128 - self.bits;
        ((x << shift) as i128) >> shift
    }

    fn value(&self, v: u128, unsigned: bool, unsure: bool) -> V {
        V { v: v & self.mask(), unsigned, unsure }
    }

    fn peek_op(&self) -> Option<&str> {
        match self.items.get(self.pos) {
            Some(Item::Op(o)) => Some(o),
            _ => None,
        }
    }

    fn expect(&mut self, op: &str, msg: &str) -> Result<(), PErr> {
        if self.peek_op() == Some(op) {
            self.pos += 1;
            Ok(())
        } else {
            Err(PErr::Syntax(msg.into()))
        }
    }

    fn enter(&mut self) -> Result<(), PErr> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(PErr::Fatal(Fatal::TooDeep("#if expression")));
        }
        Ok(())
    }

    /// expression: conditional-expression (`,` conditional-expression)*
    fn expr(&mut self, live: Live) -> Result<V, PErr> {
        let mut v = self.conditional(live)?;
        while self.peek_op() == Some(",") {
            self.pos += 1;
            v = self.conditional(live)?;
        }
        Ok(v)
    }

    fn conditional(&mut self, live: Live) -> Result<V, PErr> {
        let c = self.binary(1, live)?;
        if self.peek_op() != Some("?") {
            return Ok(c);
        }
        self.pos += 1;
        let (lt, lf) = if c.unsure {
            (live.and(Live::Maybe), live.and(Live::Maybe))
        } else if c.v != 0 {
            (live, Live::No)
        } else {
            (Live::No, live)
        };
        self.enter()?;
        let a = self.expr(lt)?;
        self.expect(":", "expected ':' in conditional expression")?;
        let b = self.conditional(lf)?;
        self.depth -= 1;
        let unsigned = a.unsigned || b.unsigned;
        let chosen = if c.v != 0 { a } else { b };
        let unsure = if c.unsure { !(a.v == b.v && !a.unsure && !b.unsure) } else { chosen.unsure };
        Ok(V { v: chosen.v, unsigned, unsure })
    }

    fn binary(&mut self, min_prec: u8, live: Live) -> Result<V, PErr> {
        let mut lhs = self.unary(live)?;
        while let Some((op, prec)) = self.peek_op().and_then(|op| Some((Rc::<str>::from(op), binary_prec(op)?))) {
            if prec < min_prec {
                break;
            }
            self.pos += 1;
            // Recursion here is bounded by the number of precedence levels.
            lhs = match &*op {
                "&&" | "||" => {
                    let decides = if &*op == "&&" { lhs.v == 0 } else { lhs.v != 0 };
                    let rlive = if lhs.unsure {
                        live.and(Live::Maybe)
                    } else if decides {
                        Live::No
                    } else {
                        live
                    };
                    let rhs = self.binary(prec + 1, rlive)?;
                    logic(&op, lhs, rhs)
                }
                _ => {
                    let rhs = self.binary(prec + 1, live)?;
                    self.arith(&op, lhs, rhs, live)?
                }
            };
        }
        Ok(lhs)
    }

    fn unary(&mut self, live: Live) -> Result<V, PErr> {
        self.enter()?;
        let v = match self.items.get(self.pos) {
            None => return Err(PErr::Syntax("expected value in expression".into())),
            Some(&Item::Num { v, literal, u_suffix, unsure, keyword }) => {
                self.pos += 1;
                let v = if keyword && self.dialect == Dialect::C99 { 0 } else { v };
                if literal && v > self.mask() {
                    return Err(PErr::Syntax(
                        "integer literal is too large to be represented in any integer type".into(),
                    ));
                }
                // A literal too large for intmax_t is uintmax_t (clang warns).
                let unsigned = u_suffix || (literal && v > self.mask() >> 1);
                self.value(v, unsigned, unsure)
            }
            Some(Item::Op(op)) => {
                let op = op.clone();
                self.pos += 1;
                match &*op {
                    "(" => {
                        let v = self.expr(live)?;
                        self.expect(")", "expected ')' in preprocessor expression")?;
                        v
                    }
                    "+" => self.unary(live)?,
                    "-" => {
                        let v = self.unary(live)?;
                        self.value(0u128.wrapping_sub(v.v), v.unsigned, v.unsure)
                    }
                    "~" => {
                        let v = self.unary(live)?;
                        self.value(!v.v, v.unsigned, v.unsure)
                    }
                    "!" => {
                        let v = self.unary(live)?;
                        V { unsure: v.unsure, ..V::truth(v.v == 0) }
                    }
                    _ => {
                        return Err(PErr::Syntax(format!("invalid token '{op}' at start of a preprocessor expression")))
                    }
                }
            }
        };
        self.depth -= 1;
        Ok(v)
    }
}

fn logic(op: &str, a: V, b: V) -> V {
    let and = op == "&&";
    let (at, bt) = (a.v != 0, b.v != 0);
    let value = if and { at && bt } else { at || bt };
    // The side that is known and decides alone makes the result sure.
    let decided_by = |x: V| !x.unsure && (if and { x.v == 0 } else { x.v != 0 });
    let unsure = if decided_by(a) {
        false
    } else if a.unsure {
        !decided_by(b)
    } else {
        b.unsure
    };
    V { unsure, ..V::truth(value) }
}

impl Parser<'_> {
    fn arith(&self, op: &str, a: V, b: V, live: Live) -> Result<V, PErr> {
        let mut unsure = a.unsure || b.unsure;
        let bits = u128::from(self.bits);
        if matches!(op, "<<" | ">>") {
            // The shift amount takes no part in the usual conversions: the result has the type
            // of the left operand. clang: `<<` by the width or more is 0, `>>` by it is by
            // width - 1 (a negative amount counts as a huge one).
            let v = if op == "<<" {
                if b.v >= bits {
                    0
                } else {
                    a.v << b.v
                }
            } else {
                let amount = b.v.min(bits - 1);
                if a.unsigned {
                    a.v >> amount
                } else {
                    (self.signed(a.v) >> amount) as u128
                }
            };
            return Ok(self.value(v, a.unsigned, unsure));
        }
        let unsigned = a.unsigned || b.unsigned;
        let (x, y) = (a.v, b.v);
        let (sx, sy) = (self.signed(x), self.signed(y));
        let v = match op {
            "*" => x.wrapping_mul(y),
            "+" => x.wrapping_add(y),
            "-" => x.wrapping_sub(y),
            "/" | "%" if y == 0 => match live {
                Live::Yes => return Err(PErr::Syntax(format!("{} by zero in preprocessor expression", div_name(op)))),
                Live::Maybe => {
                    unsure = true;
                    0
                }
                Live::No => 0,
            },
            "/" if unsigned => x / y,
            "/" => sx.wrapping_div(sy) as u128,
            "%" if unsigned => x % y,
            "%" => sx.wrapping_rem(sy) as u128,
            "<" | ">" | "<=" | ">=" => {
                let ord = if unsigned { x.cmp(&y) } else { sx.cmp(&sy) };
                let r = match op {
                    "<" => ord.is_lt(),
                    ">" => ord.is_gt(),
                    "<=" => ord.is_le(),
                    _ => ord.is_ge(),
                };
                return Ok(V { unsure, ..V::truth(r) });
            }
            "==" => return Ok(V { unsure, ..V::truth(x == y) }),
            "!=" => return Ok(V { unsure, ..V::truth(x != y) }),
            "&" => x & y,
            "^" => x ^ y,
            "|" => x | y,
            _ => return Err(PErr::Syntax(format!("invalid operator '{op}' in preprocessor expression"))),
        };
        Ok(self.value(v, unsigned, unsure))
    }
}

fn div_name(op: &str) -> &'static str {
    if op == "/" {
        "division"
    } else {
        "remainder"
    }
}

/// An integer constant (C99 6.4.4.1) as `#if` reads it: its value and whether it has a `u`.
fn parse_int(text: &str) -> Result<(u128, bool), String> {
    let suffix_len = text.bytes().rev().take_while(|b| matches!(b, b'u' | b'U' | b'l' | b'L')).count();
    let (digits, suffix) = text.split_at(text.len() - suffix_len);
    let s = suffix.to_ascii_lowercase();
    if !matches!(s.as_str(), "" | "u" | "l" | "ul" | "lu" | "ll" | "ull" | "llu") {
        return Err(format!("invalid suffix '{suffix}' on integer constant"));
    }
    let (radix, body) = if let Some(h) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        (16, h)
    } else if let Some(b) = digits.strip_prefix("0b").or_else(|| digits.strip_prefix("0B")) {
        (2, b)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    let float = digits.contains('.')
        || (radix == 10 && digits.contains(['e', 'E']))
        || (radix == 16 && digits.contains(['p', 'P']));
    if float {
        return Err("floating point literal in preprocessor expression".into());
    }
    if body.is_empty() {
        return Err(format!("invalid integer constant '{text}'"));
    }
    let mut value: u128 = 0;
    for c in body.chars() {
        let d = c.to_digit(radix).ok_or_else(|| format!("invalid digit '{c}' in integer constant '{text}'"))?;
        value = value
            .checked_mul(u128::from(radix))
            .and_then(|v| v.checked_add(u128::from(d)))
            .ok_or_else(|| "integer literal is too large to be represented in any integer type".to_string())?;
    }
    Ok((value, s.contains('u')))
}

/// A character constant (C99 6.4.4.4) with clang's values: `char` is signed, a multi-character
/// constant is an `int` built from its bytes, a wide one is the value of its last character.
fn parse_char(text: &str) -> Result<i128, String> {
    let (wide, quoted) = match text.strip_prefix('L') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let body = quoted.strip_prefix('\'').and_then(|b| b.strip_suffix('\'')).unwrap_or("");
    let mut values: Vec<u32> = Vec::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            if wide {
                values.push(u32::from(c));
            } else {
                let mut buf = [0u8; 4];
                values.extend(c.encode_utf8(&mut buf).bytes().map(u32::from));
            }
            continue;
        }
        let Some(e) = chars.next() else { break };
        let v = match e {
            'n' => 10,
            't' => 9,
            'r' => 13,
            'a' => 7,
            'b' => 8,
            'f' => 12,
            'v' => 11,
            'e' | 'E' => 27,
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                v
            }
            'x' => {
                let mut v: u32 = 0;
                while let Some(d) = chars.peek().and_then(|c| c.to_digit(16)) {
                    v = v.wrapping_mul(16).wrapping_add(d);
                    chars.next();
                }
                v
            }
            other => u32::from(other),
        };
        values.push(if wide { v } else { v & 0xff });
    }
    let Some(&last) = values.last() else { return Err("empty character constant".into()) };
    Ok(if wide {
        i128::from(last as i32)
    } else if values.len() == 1 {
        i128::from(last as u8 as i8)
    } else {
        i128::from(values.iter().fold(0u32, |acc, &b| (acc << 8) | b) as i32)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> (bool, bool) {
        let mut st = State::new(super::super::Limits::default(), "t.cl");
        let mut lx = super::super::lex::Lexer::new(text);
        let toks = lx.next_line(false).map(|l| l.toks).unwrap_or_default();
        let v = eval(&mut st, toks, Loc::default()).expect("no fatal");
        st.finish();
        (v, st.errors.is_empty() && st.unsure.is_empty())
    }

    fn is(text: &str, expected: bool) {
        assert_eq!(value(text), (expected, true), "{text}");
    }

    #[test]
    fn arithmetic_in_intmax() {
        is("1 + 2 * 3 == 7", true);
        is("(1 + 2) * 3 == 9", true);
        is("-1 < 0", true);
        is("-1 < 0u", false);
        is("18446744073709551615 > 0", true);
        is("-8 >> 1 == -4", true);
        is("-8 >> 100 == -1", true);
        is("7 / -2 == -3 && 7 % -2 == 1", true);
        is("~0 == -1 && !5 == 0 && !0", true);
        is("(2 || 1 / 0) && (0 && 1 / 0) == 0", true);
        is("1 ? 2 : 1 / 0", true);
        is("(0 ? 1u : -1) > 0", true);
        is("(1, 0)", false);
        is("010 == 8 && 0x10 == 16 && 0b11 == 3 && 10L == 10 && 3ull == 3", true);
        is("'a' == 97 && '\\n' == 10 && '\\377' == -1 && '\\x41' == 65 && 'ab' == 24930", true);
        is("L'\\xff' == 255", true);
        is("undefined_name == 0", true);
        is("true || !false", true);
    }

    #[test]
    fn clang_reads_128_bits_and_true_and_a_difference_from_c99_is_unsure() {
        for (text, v128) in [
            ("0xFFFFFFFFFFFFFFFF == -1", false),
            ("9223372036854775807 + 1 < 0", false),
            ("-9223372036854775807 - 1 == 0x8000000000000000", false),
            ("1 << 63 < 0", false),
            ("1u << 64 == 0", false),
            ("1 << 127 < 0", true),
            ("340282366920938463463374607431768211455 == -1", true),
            ("true", true),
            ("!false && true", true),
        ] {
            assert_eq!(value(text), (v128, false), "{text}");
        }
        is("-9223372036854775807 - 1 < 0", true);
        is("0x7fffffffffffffff > 0", true);
    }

    #[test]
    fn errors_make_the_condition_false() {
        for text in [
            "",
            "1 +",
            "(1",
            "1 / 0",
            "1 2",
            "1.0",
            "\"s\"",
            "1 = 1",
            "defined",
            "defined(",
            "08",
            "1 ? 2",
            "340282366920938463463374607431768211456",
        ] {
            let (v, clean) = value(text);
            assert!(!v && !clean, "{text}");
        }
    }

    #[test]
    fn unsure_names_matter_only_where_they_decide() {
        assert_eq!(value("defined(__SPIR__)"), (false, false));
        assert_eq!(value("__NV_CL_C_VERSION >= 120"), (false, false));
        assert_eq!(value("1 || defined(__SPIR__)"), (true, true));
        assert_eq!(value("defined __SPIR__ && 0"), (false, true));
        assert_eq!(value("defined(__SPIR__) ? 1 : 1"), (true, true));
        assert_eq!(value("defined(__SPIR__) ? 1 : 2"), (true, false));
        assert_eq!(value("__has_include(<x.h>) || 0"), (false, false));
        assert_eq!(value("defined(M_PI)"), (false, false));
        assert_eq!(value("defined(__cplusplus)"), (false, true));
        assert_eq!(value("defined(X) || defined(_my_name)"), (false, true));
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let deep = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
        let mut st = State::new(super::super::Limits::default(), "t.cl");
        let toks = super::super::lex::Lexer::new(&deep).next_line(false).map(|l| l.toks).unwrap_or_default();
        assert!(eval(&mut st, toks, Loc::default()).is_err());
        let unary = format!("{}1", "- ".repeat(5000));
        let toks = super::super::lex::Lexer::new(&unary).next_line(false).map(|l| l.toks).unwrap_or_default();
        assert!(eval(&mut st, toks, Loc::default()).is_err());
    }
}
