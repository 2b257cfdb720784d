//! Extents: how many structures a buffer holds, as an expression over the launch and the
//! kernel's scalar arguments, and its checked evaluation.

use super::error::SpanError;
use crate::clc::lex::Span;
use std::collections::HashMap;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
}

impl BinOp {
    fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
        }
    }

    fn precedence(self) -> u8 {
        match self {
            BinOp::Add | BinOp::Sub => 1,
            BinOp::Mul | BinOp::Div => 2,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ExtentKind {
    Int(u64),
    GlobalSize(u32),
    LocalSize(u32),
    NumGroups(u32),
    /// The value of the kernel's scalar parameter of this name.
    Arg(String),
    /// The buffer's size divided by the size of one structure.
    Auto,
    BinOp(BinOp, Box<Extent>, Box<Extent>),
}

/// An extent expression; `span` locates it in the annotation text for error messages.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Extent {
    pub kind: ExtentKind,
    pub span: Span,
}

/// What an extent may read at launch time. `None` means the value is not known; evaluation
/// then fails with a reason naming it.
pub trait ExtentEnv {
    fn global_size(&self, dim: u32) -> Option<u64>;
    /// `None` when the application passed a NULL local work size.
    fn local_size(&self, dim: u32) -> Option<u64>;
    /// Defaults to ceil(global / local), as `get_num_groups` counts a partial last group.
    fn num_groups(&self, dim: u32) -> Option<u64> {
        let (g, l) = (self.global_size(dim)?, self.local_size(dim)?);
        if l == 0 {
            None
        } else {
            Some(g.div_ceil(l))
        }
    }
    /// The value of an integer scalar argument, already decoded (see `IntType::decode`).
    fn arg(&self, name: &str) -> Option<u64>;
    /// Buffer size / structure size, for `auto`.
    fn auto_count(&self) -> Option<u64>;
}

/// A plain `ExtentEnv`: what the runtime knows at `clEnqueueNDRangeKernel`.
#[derive(Clone, Debug, Default)]
pub struct LaunchValues {
    /// One entry per dimension up to `work_dim`.
    pub global: Vec<u64>,
    /// `None` for a NULL local work size.
    pub local: Option<Vec<u64>>,
    pub args: HashMap<String, u64>,
    pub auto_count: Option<u64>,
}

impl ExtentEnv for LaunchValues {
    fn global_size(&self, dim: u32) -> Option<u64> {
        self.global.get(dim as usize).copied()
    }
    fn local_size(&self, dim: u32) -> Option<u64> {
        self.local.as_ref()?.get(dim as usize).copied()
    }
    fn arg(&self, name: &str) -> Option<u64> {
        self.args.get(name).copied()
    }
    fn auto_count(&self) -> Option<u64> {
        self.auto_count
    }
}

impl Extent {
    /// The extent's value. Intermediate results may be negative (`(n - 1) * 2 + 2`) but must
    /// stay within 64 bits; division truncates toward zero as in C; the result must be >= 0.
    pub fn eval(&self, env: &dyn ExtentEnv) -> Result<u64, SpanError> {
        let v = self.eval_signed(env)?;
        u64::try_from(v).map_err(|_| self.error(format!("`{self}` is negative ({v})")))
    }

    fn eval_signed(&self, env: &dyn ExtentEnv) -> Result<i128, SpanError> {
        // The reason is only written when the value is missing: this runs at every launch.
        let known = |v: Option<u64>, what: &dyn Fn() -> String| -> Result<i128, SpanError> {
            v.map(i128::from).ok_or_else(|| self.error(what()))
        };
        let v = match &self.kind {
            ExtentKind::Int(n) => i128::from(*n),
            ExtentKind::GlobalSize(d) => {
                known(env.global_size(*d), &|| format!("global_size({d}) unknown (work_dim is {d} or less)"))?
            }
            ExtentKind::LocalSize(_) => {
                let d = self.dim();
                known(env.local_size(d), &|| local_unknown(env, d, "local_size"))?
            }
            ExtentKind::NumGroups(_) => {
                let d = self.dim();
                known(env.num_groups(d), &|| local_unknown(env, d, "num_groups"))?
            }
            ExtentKind::Arg(name) => known(env.arg(name), &|| format!("argument `{name}` has no value"))?,
            ExtentKind::Auto => known(env.auto_count(), &|| "auto unknown (no buffer size)".to_string())?,
            ExtentKind::BinOp(op, a, b) => {
                let (x, y) = (a.eval_signed(env)?, b.eval_signed(env)?);
                let r = match op {
                    BinOp::Add => x.checked_add(y),
                    BinOp::Sub => x.checked_sub(y),
                    BinOp::Mul => x.checked_mul(y),
                    BinOp::Div if y == 0 => return Err(self.error(format!("division by zero in `{self}`"))),
                    BinOp::Div => x.checked_div(y),
                };
                r.ok_or_else(|| self.overflow())?
            }
        };
        if v.unsigned_abs() > u128::from(u64::MAX) {
            return Err(self.overflow());
        }
        Ok(v)
    }

    fn dim(&self) -> u32 {
        match self.kind {
            ExtentKind::GlobalSize(d) | ExtentKind::LocalSize(d) | ExtentKind::NumGroups(d) => d,
            _ => 0,
        }
    }

    fn error(&self, reason: String) -> SpanError {
        SpanError { span: self.span, reason }
    }

    fn overflow(&self) -> SpanError {
        self.error(format!("`{self}` overflows 64 bits"))
    }

    /// Every scalar argument the extent reads, each with its span, in order of appearance.
    pub fn args(&self) -> Vec<(&str, Span)> {
        let mut out = Vec::new();
        self.walk(&mut |e| {
            if let ExtentKind::Arg(n) = &e.kind {
                out.push((n.as_str(), e.span));
            }
        });
        out
    }

    fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Extent)) {
        f(self);
        if let ExtentKind::BinOp(_, a, b) = &self.kind {
            a.walk(f);
            b.walk(f);
        }
    }
}

fn local_unknown(env: &dyn ExtentEnv, d: u32, what: &str) -> String {
    if env.global_size(d).is_none() {
        format!("{what}({d}) unknown (work_dim is {d} or less)")
    } else {
        "local_size unknown (NULL local work size)".to_string()
    }
}

/// The canonical text, with only the parentheses precedence needs.
impl fmt::Display for Extent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ExtentKind::Int(n) => write!(f, "{n}"),
            ExtentKind::GlobalSize(d) => write!(f, "global_size({d})"),
            ExtentKind::LocalSize(d) => write!(f, "local_size({d})"),
            ExtentKind::NumGroups(d) => write!(f, "num_groups({d})"),
            ExtentKind::Arg(n) => f.write_str(n),
            ExtentKind::Auto => f.write_str("auto"),
            ExtentKind::BinOp(op, a, b) => {
                let p = op.precedence();
                let paren = |e: &Extent, right: bool| match &e.kind {
                    // A right operand at equal precedence keeps its parentheses: a-(b-c) and
                    // a*(b/c) differ from a-b-c and a*b/c.
                    ExtentKind::BinOp(o, ..) => o.precedence() < p || (right && o.precedence() == p),
                    _ => false,
                };
                let side = |f: &mut fmt::Formatter<'_>, e: &Extent, right: bool| {
                    if paren(e, right) {
                        write!(f, "({e})")
                    } else {
                        write!(f, "{e}")
                    }
                };
                side(f, a, false)?;
                write!(f, " {} ", op.symbol())?;
                side(f, b, true)
            }
        }
    }
}
