//! The staged copy of a kernel: cooperative AoS access through local memory (Catanzaro, Keller
//! and Garland, PPoPP 2014). The buffer keeps its AoS layout; each work-group copies its
//! contiguous slice of structures into a `__local` array with coalesced word accesses (work-item
//! `lid` moves words `lid`, `lid + wg`, ...), the kernel's body reads and writes its own
//! structure there, and the slice goes back the same way after a barrier. Only a kernel whose
//! every access is to the work-item's own structure `p[get_global_id(0)]` can be staged: any
//! other structure may belong to another work-group's slice.
//!
//! The accesses themselves are the ASTA rewriter's, pointed at the local array
//! ([`Space::Local`]); this module adds what staging needs besides: proving each subscript is
//! the global id, refusing what could break the copy's barriers, turning `return` into a jump
//! to the write-back, and the prologue and epilogue.

use super::access::{Kind, Rewriter, Target, ASSIGN_OPS, NOT_CALLS};
use super::emit::Space;
use super::funcs::{self, FnDef};
use super::{assemble, prepare, refusal, ExtraArg, Prepared, Refusal, RewriteRequest};
use crate::clc::lex::{lex, TokenKind};
use crate::clc::typedefs::TypeTable;
use crate::clc::types::{is_type_word, word_type};
use std::collections::{HashMap, HashSet};

/// A staged buffer parameter of the copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedParam {
    /// The parameter's index in the kernel's signature.
    pub index: usize,
    pub name: String,
    /// Whether the copy writes the work-group's slice back: false when the parameter is
    /// `const` or the kernel never stores to it, so that the buffer is only read.
    pub writes_back: bool,
}

#[derive(Clone, Debug)]
pub struct Staged {
    /// The whole program: the original text unchanged, with the staged kernel and the generated
    /// functions inserted after the original kernel.
    pub source: String,
    /// One trailing `ulong` per staged buffer: M, its number of structures.
    pub extra_args: Vec<ExtraArg>,
    /// In the order of the request.
    pub params: Vec<StagedParam>,
}

/// What the rewriter needs to know while it rewrites a staged kernel's body.
pub(crate) struct StageCtx {
    /// Variables declared at the body's top level as `T i = get_global_id(0);`: the token of
    /// the name, or why the variable cannot be trusted to hold the global id.
    gid_vars: HashMap<String, Result<usize, Refusal>>,
    /// How many `return`s became jumps to the epilogue.
    returns: usize,
}

const END_LABEL: &str = "clayout_stage_end";

/// Builtins that synchronize or share work within a work-group or sub-group: around them, the
/// early-returning work-items that now wait at the copy's barrier, and the copy's own use of
/// local memory, would change what the kernel does.
fn synchronizes(name: &str) -> bool {
    name == "barrier"
        || name == "wait_group_events"
        || ["work_group_", "sub_group_", "async_work_group_"].iter().any(|p| name.starts_with(p))
}

/// The integer types a global-id variable may have: the runtime launches only global sizes
/// that fit them.
const GID_TYPES: [&str; 5] = ["uint", "int", "size_t", "ulong", "long"];

/// Keywords after which an identifier is an expression, not a declarator.
const BEFORE_EXPR: [&str; 6] = ["return", "case", "sizeof", "else", "do", "goto"];

const QUALIFIERS: [&str; 18] = [
    "const",
    "volatile",
    "struct",
    "union",
    "enum",
    "unsigned",
    "signed",
    "static",
    "__private",
    "private",
    "__local",
    "local",
    "__global",
    "global",
    "__constant",
    "constant",
    "restrict",
    "__const",
];

/// Rewrites kernel `req.kernel` of program `src` into `req.private_name`, which stages the
/// requested AoS buffers of structures through local memory (see the module's documentation)
/// for work-groups of at most `CLAYOUT_STAGE_WG` work-items, and takes one extra trailing
/// `ulong` argument per buffer (see [`Staged::extra_args`]). The program must be built with
/// `-D CLAYOUT_TILE` like an ASTA copy, since both share the index type.
pub fn stage_kernel(src: &str, req: &RewriteRequest) -> Result<Staged, Refusal> {
    let Prepared { mut rw, def, line, mut targets, extra_args } = prepare(src, req)?;
    for (_, g) in &mut targets {
        let why = match g.kind {
            Kind::Struct => None,
            Kind::FlatAos => Some("a flat scalar pointer with an AoS(S) layout"),
            Kind::FlatSoa { .. } => Some("an SoA host layout"),
        };
        if let Some(why) = why {
            return Err(refusal(
                line,
                &g.name,
                format!("{why}: only an AoS buffer of structures (a pointer to the structure) is staged"),
            ));
        }
        g.space = Space::Local;
        g.base = word_type(g.layout.word_bytes).to_string();
    }
    rw.check_staged_body(&def)?;
    rw.stage = Some(StageCtx { gid_vars: rw.gid_vars(&def), returns: 0 });
    let ctx: Vec<Target> = targets.iter().map(|(_, g)| g.clone()).collect();
    let body = rw.expr(def.open, def.close + 1, &ctx)?;
    let returns = rw.stage.take().map_or(0, |s| s.returns);
    let params: Vec<StagedParam> = targets
        .iter()
        .map(|(index, g)| StagedParam {
            index: *index,
            name: g.name.clone(),
            writes_back: !g.is_const && rw.stored.contains(&g.name),
        })
        .collect();
    let mut kernel = rw.header(&def, &req.private_name, &targets);
    kernel.push_str("{\n");
    kernel.push_str(&prologue(&ctx));
    kernel.push_str(&format!("#line {}\n", rw.logical(rw.toks[def.open].line)));
    // The body without its braces: its top-level declarations (`__local` ones among them)
    // must stay at the kernel's outermost scope.
    let inner = &body[1..body.len() - 1];
    kernel.push_str(inner);
    if !inner.ends_with('\n') {
        kernel.push('\n');
    }
    kernel.push_str(&epilogue(&ctx, &params, returns > 0));
    kernel.push_str("}\n");
    let text = format!("#ifndef CLAYOUT_STAGE_WG\n#define CLAYOUT_STAGE_WG 64\n#endif\n{kernel}");
    Ok(Staged { source: assemble(&rw, &def, "staged", &req.kernel, &text), extra_args, params })
}

/// The local arrays, the work-group's slice of each buffer (`clayout_n_p` words from word
/// `clayout_at_p`) and its coalesced load. The slice starts at the group's first global id and
/// holds at most one structure per work-item, fewer in the group that reaches M, none in a
/// group past it; the comparison with M is made in `ulong` so that a large launch cannot wrap
/// a 32-bit index into a slice of the buffer.
fn prologue(targets: &[Target]) -> String {
    let mut out = String::from(
        "  const clayout_idx clayout_lid = get_local_id(0), clayout_wg = get_local_size(0);\n  const ulong clayout_first = get_global_id(0) - get_local_id(0);\n",
    );
    for g in targets {
        let (p, s, w) = (&g.name, g.layout.words, &g.base);
        let (n, at, m) = (format!("clayout_n_{p}"), format!("clayout_at_{p}"), &g.m);
        out.push_str(&format!(
            "  __local {w} {}[CLAYOUT_STAGE_WG * {s}];\n  const clayout_idx {n} = clayout_first < {m} ? (clayout_idx)min((ulong)clayout_wg, {m} - clayout_first) * {s} : 0;\n  const clayout_idx {at} = (clayout_idx)clayout_first * {s};\n",
            g.array()
        ));
        let from = format!("((const __global {w} *){p})[{at} + clayout_k]");
        out.push_str(&copy_loop(&n, &format!("{}[clayout_k]", g.array()), &from));
    }
    out.push_str("  barrier(CLK_LOCAL_MEM_FENCE);\n");
    out
}

/// Where every work-item ends, whether it fell off the body or returned: the write-back of
/// each buffer the kernel can store to, after every work-item is done with the local copies.
fn epilogue(targets: &[Target], params: &[StagedParam], label: bool) -> String {
    let mut out = String::new();
    if label {
        out.push_str(&format!("{END_LABEL}: ;\n"));
    }
    if params.iter().any(|p| p.writes_back) {
        out.push_str("  barrier(CLK_LOCAL_MEM_FENCE);\n");
    }
    for (g, _) in targets.iter().zip(params).filter(|(_, p)| p.writes_back) {
        let (p, w) = (&g.name, &g.base);
        let to = format!("((__global {w} *){p})[clayout_at_{p} + clayout_k]");
        let from = format!("{}[clayout_k]", g.array());
        out.push_str(&copy_loop(&format!("clayout_n_{p}"), &to, &from));
    }
    out
}

/// `to = from` for word `clayout_k` of `n`, consecutive work-items on consecutive words.
fn copy_loop(n: &str, to: &str, from: &str) -> String {
    format!(
        "  for (clayout_idx clayout_k = clayout_lid; clayout_k < {n}; clayout_k += clayout_wg)\n    {to} = {from};\n"
    )
}

/// What a subscript spells once its object-like macros are expanded and its outer parentheses
/// dropped.
enum Subscript {
    /// `get_global_id(0)`.
    GlobalId,
    /// One identifier.
    Var(String),
    Other,
}

type R<T> = Result<T, Refusal>;

impl Rewriter<'_> {
    /// `return;` in the staged kernel: a jump to the epilogue, so that every work-item reaches
    /// the barrier before the write-back.
    pub(super) fn staged_return(&mut self, j: usize) -> R<(usize, String)> {
        if !self.is(j + 1, ";") {
            return Err(self.refuse(j, j + 2, "`return` with a value in a kernel"));
        }
        if let Some(s) = self.stage.as_mut() {
            s.returns += 1;
        }
        Ok((j + 1, format!("goto {END_LABEL}")))
    }

    /// Refuses unless the subscript `index` (tokens; none for `p->m`) of the staged access at
    /// `first..end` is the work-item's global id.
    pub(super) fn staged_subscript(
        &self,
        first: usize,
        end: usize,
        index: Option<(usize, usize)>,
        name: &str,
    ) -> R<()> {
        let not_gid = || {
            self.refuse(first, end, format!("the subscript of staged `{name}` is not provably the work-item's global id (`get_global_id(0)`, or a variable initialized with it at the kernel's top level and never changed): another structure may belong to another work-group"))
        };
        let Some((a, b)) = index else {
            return Err(not_gid());
        };
        let texts = (a..b).map(|k| self.text(k).to_string()).collect();
        match self.subscript(texts) {
            Subscript::GlobalId => Ok(()),
            Subscript::Var(v) => match self.stage.as_ref().and_then(|s| s.gid_vars.get(&v)) {
                Some(Ok(decl)) if *decl < a => Ok(()),
                Some(Err(why)) => Err(why.clone()),
                _ => Err(not_gid()),
            },
            Subscript::Other => Err(not_gid()),
        }
    }

    fn subscript(&self, texts: Vec<String>) -> Subscript {
        let Some(mut t) = self.expand(texts, 0) else {
            return Subscript::Other;
        };
        while t.len() >= 2 && t[0] == "(" && t[t.len() - 1] == ")" && encloses(&t) {
            t = t[1..t.len() - 1].to_vec();
        }
        let zero = |s: &str| matches!(s, "0" | "0u" | "0U");
        match t.as_slice() {
            [f, o, z, c] if f == "get_global_id" && o == "(" && zero(z) && c == ")" => Subscript::GlobalId,
            [v] if v.starts_with(|c: char| c.is_alphabetic() || c == '_') => Subscript::Var(v.clone()),
            _ => Subscript::Other,
        }
    }

    /// Token texts with object-like macros expanded; none where a function-like macro (whose
    /// expansion is not followed), deep nesting or a long expansion (no global id is long)
    /// appears.
    fn expand(&self, texts: Vec<String>, depth: u32) -> Option<Vec<String>> {
        let mut out = Vec::new();
        for t in texts {
            if out.len() > 64 {
                return None;
            }
            match self.macros.get(&t) {
                None => out.push(t),
                Some(m) if m.params.is_none() && depth < 16 => {
                    let inner = lex(&m.body)
                        .into_iter()
                        .filter(|k| !k.is_comment())
                        .map(|k| k.text(&m.body).to_string())
                        .collect();
                    out.extend(self.expand(inner, depth + 1)?);
                }
                Some(_) => return None,
            }
        }
        Some(out)
    }

    /// What the staged copy cannot keep: work-group synchronization anywhere the kernel reaches
    /// (its own barriers and early-returning work-items would not agree with the copy's),
    /// `goto` and labels (the copy adds a jump of its own), and macros hiding `return` or `goto`
    /// (a hidden `return` would skip the copy's barrier).
    fn check_staged_body(&self, def: &FnDef) -> R<()> {
        let mut seen = HashSet::new();
        for j in def.open + 1..def.close {
            let t = self.toks[j];
            if t.kind != TokenKind::Ident || self.is(j - 1, ".") || self.is(j - 1, "->") {
                continue;
            }
            let s = self.text(j);
            if s == "goto" {
                return Err(self.refuse(j, j + 2, "`goto` in a kernel to be staged: the staged copy jumps to its own epilogue and does not follow other jumps"));
            }
            let statement_start = self.toks[j - 1].kind == TokenKind::Directive
                || [";", "{", "}"].iter().any(|p| self.is(j - 1, p))
                || matches!(self.text(j - 1), "else" | "do");
            if self.is(j + 1, ":") && statement_start && s != "default" {
                return Err(self.refuse(j, j + 2, "a label in a kernel to be staged: the staged copy jumps to its own epilogue and does not follow other jumps"));
            }
            if self.macros.contains_key(s) {
                let idents = funcs::expansion_idents(&self.macros, s);
                if let Some(k) = idents.iter().find(|k| *k == "return" || *k == "goto") {
                    let line = self.logical(self.macros[s].line);
                    return Err(self.refuse(j, j + 1, format!("macro `{s}` (defined on line {line}) expands to `{k}`, which would skip the staged copy's barrier")));
                }
            }
            let call = self.is(j + 1, "(") && !NOT_CALLS.contains(&s);
            if call || self.macros.contains_key(s) {
                if let Some(f) = self.reaches_sync(s, &mut seen) {
                    let via = if f == s { String::new() } else { format!(", reached through `{s}`") };
                    return Err(self.refuse(j, j + 1, format!("work-group synchronization (`{f}`{via}) in a kernel to be staged: the staged copy's own barriers need every work-item, and the local memory is the copy's")));
                }
            }
        }
        Ok(())
    }

    /// The synchronizing builtin that identifier `name` (a call or a macro) can reach through
    /// macros and the program's function definitions, if any.
    fn reaches_sync(&self, name: &str, seen: &mut HashSet<String>) -> Option<String> {
        if synchronizes(name) {
            return Some(name.to_string());
        }
        if !seen.insert(name.to_string()) {
            return None;
        }
        if self.macros.contains_key(name) {
            let idents = funcs::expansion_idents(&self.macros, name);
            return idents.iter().find_map(|id| self.reaches_sync(id, seen));
        }
        let Some(Ok(def)) = funcs::find_function(self.src, &self.toks, name) else {
            return None;
        };
        (def.open + 1..def.close)
            .filter(|&k| self.toks[k].kind == TokenKind::Ident)
            .filter(|&k| self.is(k + 1, "(") || self.macros.contains_key(self.text(k)))
            .find_map(|k| self.reaches_sync(self.text(k), seen))
    }

    /// The variables declared at the top level of the kernel's body as `[const] T i =
    /// get_global_id(0);`, each with the token of its name, or the first construct that could
    /// make it hold anything else.
    fn gid_vars(&self, def: &FnDef) -> HashMap<String, Result<usize, Refusal>> {
        let mut out = HashMap::new();
        let types = TypeTable::from_tokens(self.src, &self.toks);
        let (mut depth, mut start) = (0usize, def.open + 1);
        for j in def.open + 1..def.close {
            let t = self.toks[j];
            if t.kind == TokenKind::Directive && depth == 0 {
                start = j + 1;
            }
            if t.kind != TokenKind::Punct {
                continue;
            }
            match self.text(j) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" => depth = depth.saturating_sub(1),
                "}" => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        start = j + 1;
                    }
                }
                ";" if depth == 0 => {
                    if let Some((name, at)) = self.gid_declaration(start, j) {
                        let misuse = self.gid_misuse(def, &types, &name, at);
                        out.insert(name, misuse.map(|()| at));
                    }
                    start = j + 1;
                }
                _ => {}
            }
        }
        out
    }

    /// `[const] T name = get_global_id(0)` at tokens `a..b`: the name and its token.
    fn gid_declaration(&self, a: usize, b: usize) -> Option<(String, usize)> {
        let a = a + self.is_word(a, "const") as usize;
        let name = a + 1;
        let ok = GID_TYPES.contains(&self.text(a))
            && self.toks.get(name)?.kind == TokenKind::Ident
            && !self.macros.contains_key(self.text(name))
            && self.is(name + 1, "=")
            && name + 2 < b;
        let texts = (name + 2..b).map(|k| self.text(k).to_string()).collect();
        (ok && matches!(self.subscript(texts), Subscript::GlobalId)).then(|| (self.text(name).to_string(), name))
    }

    fn is_word(&self, j: usize, w: &str) -> bool {
        self.toks.get(j).is_some_and(|t| t.kind == TokenKind::Ident && t.text(self.src) == w)
    }

    /// The first use of global-id variable `name` (declared at token `decl`) in the kernel that
    /// could change its value or give the name to another variable.
    fn gid_misuse(&self, def: &FnDef, types: &TypeTable, name: &str, decl: usize) -> R<()> {
        let mut macro_args: Vec<(usize, usize, &str)> = Vec::new();
        for j in def.open + 1..def.close {
            let t = self.toks[j];
            if t.kind != TokenKind::Ident || self.is(j - 1, ".") || self.is(j - 1, "->") {
                continue;
            }
            let s = self.text(j);
            if let Some(m) = self.macros.get(s) {
                if m.params.is_some() && self.is(j + 1, "(") {
                    if let Ok(close) = self.close_of(j + 1) {
                        macro_args.push((j + 1, close, s));
                    }
                }
                if funcs::mentions(&self.macros, s, name) {
                    let line = self.logical(m.line);
                    return Err(self.refuse(j, j + 1, format!("macro `{s}` (defined on line {line}) mentions global-id variable `{name}`: its expansion could change it")));
                }
                continue;
            }
            if s != name || j == decl {
                continue;
            }
            let op = |k: usize| {
                self.toks.get(k).is_some_and(|t| {
                    t.kind == TokenKind::Punct
                        && (ASSIGN_OPS.contains(&t.text(self.src)) || matches!(t.text(self.src), "++" | "--"))
                })
            };
            // Inside a subscript, a macro's expansion cannot make the name an operand of its
            // own assignment.
            let bare_arg = macro_args.iter().find(|&&(a, b, _)| {
                a < j && j < b && {
                    let opens = (a..j).filter(|&k| self.is(k, "[")).count();
                    opens == (a..j).filter(|&k| self.is(k, "]")).count()
                }
            });
            let why = if self.declarator(def, types, j) {
                Some("is declared again (shadowed)")
            } else if op(j + 1) || self.is(j - 1, "++") || self.is(j - 1, "--") {
                Some("is assigned or incremented")
            } else if self.is(j - 1, "&") && self.unary(j - 1) {
                Some("has its address taken")
            } else if let Some(&(_, _, m)) = bare_arg {
                return Err(self.refuse(
                    j,
                    j + 1,
                    format!("global-id variable `{name}` is passed to macro `{m}`, whose expansion could change it"),
                ));
            } else {
                None
            };
            if let Some(why) = why {
                let from = j - ["&", "++", "--"].iter().any(|p| self.is(j - 1, p)) as usize;
                let to = (j + 1..def.close)
                    .find(|&k| [";", ")", ","].iter().any(|p| self.is(k, p)))
                    .unwrap_or(def.close)
                    .min(j + 6);
                return Err(self.refuse(
                    from,
                    to,
                    format!("global-id variable `{name}` {why}: its value may no longer be the global id"),
                ));
            }
        }
        Ok(())
    }

    /// Whether the identifier at `j` is being declared: after a type or qualifier (`uint i`),
    /// after a `*` that follows a type (`float *i`), or after a `,` in a declaration
    /// (`uint k, i`).
    fn declarator(&self, def: &FnDef, types: &TypeTable, j: usize) -> bool {
        let prev = self.toks[j - 1];
        match prev.kind {
            TokenKind::Ident => !BEFORE_EXPR.contains(&self.text(j - 1)),
            TokenKind::Punct if self.is(j - 1, "*") => {
                self.is(j - 2, "*")
                    || self.toks[j - 2].kind == TokenKind::Ident && self.is_type(types, j - 2)
                    || self.is(j - 2, ",") && self.declaration_statement(def, types, j)
            }
            TokenKind::Punct if self.is(j - 1, ",") => self.declaration_statement(def, types, j),
            _ => false,
        }
    }

    /// Whether token `j` lies at the outer level of a statement (or a `for`'s first clause)
    /// that starts with a type.
    fn declaration_statement(&self, def: &FnDef, types: &TypeTable, j: usize) -> bool {
        let mut depth = 0usize;
        let mut k = j;
        while k > def.open + 1 {
            k -= 1;
            if self.toks[k].kind != TokenKind::Punct {
                continue;
            }
            match self.text(k) {
                ")" | "]" | "}" => depth += 1,
                "(" | "[" | "{" if depth > 0 => depth -= 1,
                "(" if k > 0 && self.is_word(k - 1, "for") => return self.is_type(types, k + 1),
                "(" | "[" => return false,
                "{" => return self.is_type(types, k + 1),
                ";" if depth == 0 => return self.is_type(types, k + 1),
                _ => {}
            }
        }
        self.is_type(types, def.open + 1)
    }

    /// Whether the identifier at `j` names a type or a qualifier: a builtin scalar or vector
    /// type, one of the program's `types`, a structure tag.
    fn is_type(&self, types: &TypeTable, j: usize) -> bool {
        let Some(t) = self.toks.get(j).filter(|t| t.kind == TokenKind::Ident) else {
            return false;
        };
        let s = t.text(self.src);
        if QUALIFIERS.contains(&s) || is_type_word(s) {
            return true;
        }
        if j > 0 && matches!(self.text(j - 1), "struct" | "union" | "enum") {
            return true;
        }
        types.is_typedef(s)
    }
}

/// Whether the first `(` of `t` closes at its last token.
fn encloses(t: &[String]) -> bool {
    let mut depth = 0usize;
    for (k, s) in t.iter().enumerate() {
        match s.as_str() {
            "(" => depth += 1,
            ")" => {
                depth -= 1;
                if depth == 0 {
                    return k == t.len() - 1;
                }
            }
            _ => {}
        }
    }
    false
}
