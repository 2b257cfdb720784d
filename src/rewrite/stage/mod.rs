//! The staged copy of a kernel: cooperative AoS access through local memory (Catanzaro, Keller
//! and Garland, PPoPP 2014). The buffer keeps its AoS layout; each work-group copies its
//! contiguous slice of structures into a `__local` array with coalesced word accesses (work-item
//! `lid` moves words `lid`, `lid + wg`, ...), the kernel's body reads and writes its own
//! structure there, and the slice goes back the same way after a barrier. Only a kernel whose
//! every access is to the work-item's own structure `p[get_global_id(0)]` can be staged: any
//! other structure may belong to another work-group's slice.
//!
//! The order of a slice's words in the buffer is chosen per launch ([`ExtraKind::AstaIn`],
//! [`ExtraKind::AstaOut`]): a slice of whole ASTA tiles that starts on a tile holds the same
//! words as its AoS bytes, tile by tile (word f of structure j at `f*T + j % T` of its tile), so
//! a launch that loads such slices in AoS order and stores them in ASTA order leaves the buffer
//! converted to ASTA: the conversion fused with the launch. The local copy is AoS either way;
//! the global side stays coalesced, the local side takes the permutation.
//!
//! The accesses themselves are the ASTA rewriter's, pointed at the local array
//! ([`Space::Local`]); the staged copy plugs into the rewriter's walk as a [`Policy`] that
//! proves each subscript is the global id (gid.rs), keeps the buffers to the kernel itself and
//! turns `return` into a jump to the write-back. This module adds the prologue and epilogue;
//! body.rs refuses what could break the copy's barriers.

mod body;
pub(super) mod gid;

use super::copy::{assemble, prepare, ExtraArg, ExtraKind, Prepared};
use super::emit::Space;
use super::request::RewriteRequest;
use super::source::{refusal, Refusal, Source, R};
use super::splice::Insertion;
use super::target::{Host, Target, View};
use super::walk::{Policy, Rewriter};
use crate::clc::types::word_type;
use std::collections::HashMap;

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
    /// What was inserted, and where in the program as read.
    pub insertion: Insertion,
    /// Trailing `ulong`s: M of each staged buffer (its number of structures), then for each
    /// staged buffer the order of its slices on load and on store ([`ExtraKind::AstaIn`],
    /// [`ExtraKind::AstaOut`]; 0 and 0 stage it in AoS, as the kernel as written sees it).
    pub extra_args: Vec<ExtraArg>,
    /// In the order of the request.
    pub params: Vec<StagedParam>,
}

const END_LABEL: &str = "clayout_stage_end";

/// Rewrites kernel `req.kernel` of program `src` into `req.private_name`, which stages the
/// requested AoS buffers of structures through local memory (see the module's documentation)
/// for work-groups of at most `CLAYOUT_STAGE_WG` work-items, and takes three extra trailing
/// `ulong` arguments per buffer (see [`Staged::extra_args`]). The program must be built with
/// `-D CLAYOUT_TILE` like an ASTA copy, since both share the index type and the tile.
pub fn stage_kernel(src: &str, req: &RewriteRequest) -> Result<Staged, Refusal> {
    stage_kernel_in(&Source::new(src), req)
}

/// [`stage_kernel`] in a program already read.
pub(crate) fn stage_kernel_in(read: &Source, req: &RewriteRequest) -> Result<Staged, Refusal> {
    let Prepared { code, def, line, mut targets, mut extra_args } = prepare(read, req)?;
    for (_, g) in &mut targets {
        let why = match (&g.view, &g.host) {
            (View::Struct, _) => None,
            (_, Host::Aos) => Some("a flat scalar pointer with an AoS(S) layout"),
            (_, Host::Soa { .. }) => Some("an SoA host layout"),
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
    body::check(&code, &def)?;
    let policy = Stage { gid_vars: gid::gid_vars(&code, &def), returns: 0 };
    let mut rw = Rewriter::new(code, policy);
    let ctx = rw.scan(&def, targets.iter().map(|(_, g)| g.clone()).collect())?.ctx;
    let body = rw.expr(def.open, def.close + 1, &ctx)?;
    let returns = rw.policy.returns;
    let params: Vec<StagedParam> = targets
        .iter()
        .map(|(index, g)| StagedParam {
            index: *index,
            name: g.name.clone(),
            writes_back: !g.is_const && rw.stored.contains(&g.name),
        })
        .collect();
    let first = extra_args.last().map_or(0, |e| e.index + 1);
    let mut more = String::new();
    for (k, (_, g)) in targets.iter().enumerate() {
        for (j, what) in [ExtraKind::AstaIn, ExtraKind::AstaOut].into_iter().enumerate() {
            extra_args.push(ExtraArg { param: g.name.clone(), index: first + 2 * k + j, what });
        }
        more.push_str(&format!(", ulong {}, ulong {}", asta_in(g), asta_out(g)));
    }
    let mut kernel = rw.header(&def, &req.private_name, &targets, &more);
    kernel.push_str("{\n");
    kernel.push_str(&prologue(&ctx.targets));
    kernel.push_str(&rw.line_directive(rw.toks[def.open].line));
    // The body without its braces: its top-level declarations (`__local` ones among them)
    // must stay at the kernel's outermost scope.
    let inner = &body[1..body.len() - 1];
    kernel.push_str(inner);
    if !inner.ends_with('\n') {
        kernel.push('\n');
    }
    kernel.push_str(&epilogue(&ctx.targets, &params, returns > 0));
    kernel.push_str("}\n");
    let text = format!("#ifndef CLAYOUT_STAGE_WG\n#define CLAYOUT_STAGE_WG 64\n#endif\n{STAGE_ASTA}{kernel}");
    let (source, insertion) = assemble(&rw, &def, "staged", &req.kernel, &text);
    Ok(Staged { source, insertion, extra_args, params })
}

/// Where word `k` of a work-group's slice in ASTA order lies in the local AoS copy: the slice
/// holds whole tiles of `CLAYOUT_TILE` structures of `S` words, word `f` of structure `j` at
/// `(j / T * S + f) * T + j % T`, so `k` is word `k / T % S` of structure
/// `k / T / S * T + k % T`.
const STAGE_ASTA: &str = "#ifndef CLAYOUT_STAGE_ASTA
#define CLAYOUT_STAGE_ASTA(k, S) (((k) / CLAYOUT_TILE / (S) * CLAYOUT_TILE + (k) % CLAYOUT_TILE) * (S) + (k) / CLAYOUT_TILE % (S))
#endif
";

fn asta_in(g: &Target) -> String {
    format!("clayout_asta_in_{}", g.name)
}

fn asta_out(g: &Target) -> String {
    format!("clayout_asta_out_{}", g.name)
}

/// The local arrays, the work-group's slice of each buffer (`clayout_n_p` words from word
/// `clayout_at_p`), the order of the slice on load and store (`clayout_ia_p`, `clayout_oa_p`:
/// ASTA when the whole slice of a full group lies below the count the launch gives) and its
/// coalesced load. The slice starts at the group's first global id and holds at most one
/// structure per work-item, fewer in the group that reaches M, none in a group past it; the
/// comparisons are made in `ulong` so that a large launch cannot wrap a 32-bit index into a
/// slice of the buffer.
fn prologue(targets: &[Target]) -> String {
    let mut out = String::from(
        "  const clayout_idx clayout_lid = get_local_id(0), clayout_wg = get_local_size(0);\n  const ulong clayout_first = get_global_id(0) - get_local_id(0);\n",
    );
    for g in targets {
        let (p, s, w) = (&g.name, g.layout.words, &g.base);
        let (n, at, m) = (format!("clayout_n_{p}"), format!("clayout_at_{p}"), &g.m);
        out.push_str(&format!(
            "  __local {w} {}[CLAYOUT_STAGE_WG * {s}];\n  const clayout_idx {n} = clayout_first < {m} ? (clayout_idx)min((ulong)clayout_wg, {m} - clayout_first) * {s} : 0;\n  const clayout_idx {at} = (clayout_idx)clayout_first * {s};\n  const int clayout_ia_{p} = clayout_first + clayout_wg <= min({}, {m}), clayout_oa_{p} = clayout_first + clayout_wg <= min({}, {m});\n",
            g.array(),
            asta_in(g),
            asta_out(g),
        ));
        let from = format!("((const __global {w} *){p})[{at} + clayout_k]");
        out.push_str(&ordered(g, &format!("clayout_ia_{p}"), |local| (local, from.clone())));
    }
    out.push_str("  barrier(CLK_LOCAL_MEM_FENCE);\n");
    out
}

/// Where every work-item ends, whether it fell off the body or returned: the write-back of
/// each buffer the kernel can store to, after every work-item is done with the local copies,
/// and of each buffer only read whose slice goes back in another order than it came (a
/// conversion fused with the launch; no barrier: the body only read its local copy).
fn epilogue(targets: &[Target], params: &[StagedParam], label: bool) -> String {
    let mut out = String::new();
    if label {
        out.push_str(&format!("{END_LABEL}: ;\n"));
    }
    if params.iter().any(|p| p.writes_back) {
        out.push_str("  barrier(CLK_LOCAL_MEM_FENCE);\n");
    }
    for (g, param) in targets.iter().zip(params) {
        let (p, w) = (&g.name, &g.base);
        let to = format!("((__global {w} *){p})[clayout_at_{p} + clayout_k]");
        let store = ordered(g, &format!("clayout_oa_{p}"), |local| (to.clone(), local));
        if param.writes_back {
            out.push_str(&store);
        } else {
            out.push_str(&format!("  if (clayout_oa_{p} != clayout_ia_{p}) {{\n{}  }}\n", indent(&store)));
        }
    }
    out
}

/// The copy of a slice between the buffer and the local array, in ASTA order when `asta`
/// (a variable) holds, else in AoS order: `assign(local word)` gives (to, from) for word
/// `clayout_k` of the slice, consecutive work-items on consecutive words of the buffer.
fn ordered(g: &Target, asta: &str, assign: impl Fn(String) -> (String, String)) -> String {
    let (n, s, local) = (format!("clayout_n_{}", g.name), g.layout.words, g.array());
    let (at, af) = assign(format!("{local}[CLAYOUT_STAGE_ASTA(clayout_k, {s})]"));
    let (to, from) = assign(format!("{local}[clayout_k]"));
    format!("  if ({asta})\n{}  else\n{}", indent(&copy_loop(&n, &at, &af)), indent(&copy_loop(&n, &to, &from)))
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// `to = from` for word `clayout_k` of `n`, consecutive work-items on consecutive words.
fn copy_loop(n: &str, to: &str, from: &str) -> String {
    format!(
        "  for (clayout_idx clayout_k = clayout_lid; clayout_k < {n}; clayout_k += clayout_wg)\n    {to} = {from};\n"
    )
}

/// The staged copy's hooks in the rewriter's walk.
struct Stage {
    /// Variables declared at the body's top level as `T i = get_global_id(0);`: the token of
    /// the name, or why the variable cannot be trusted to hold the global id.
    gid_vars: HashMap<String, Result<usize, Refusal>>,
    /// How many `return`s became jumps to the epilogue.
    returns: usize,
}

impl Policy for Stage {
    /// `return;` in the staged kernel: a jump to the epilogue, so that every work-item reaches
    /// the barrier before the write-back.
    fn statement(&mut self, code: &Source, j: usize) -> R<Option<(usize, String)>> {
        if !code.is_word(j, "return") {
            return Ok(None);
        }
        if !code.is(j + 1, ";") {
            return Err(code.refuse(j, j + 2, "`return` with a value in a kernel"));
        }
        self.returns += 1;
        Ok(Some((j + 1, format!("goto {END_LABEL}"))))
    }

    /// The work-item's own structure, which sits at its local id, once the subscript is proven
    /// to be the global id.
    fn structure_index(
        &mut self,
        code: &Source,
        (first, end): (usize, usize),
        addr: bool,
        index: Option<(usize, usize)>,
        g: &Target,
    ) -> R<Option<String>> {
        if addr {
            return Err(code.refuse(
                first,
                end,
                format!("address of a word of staged `{}`: it would point to the local copy", g.name),
            ));
        }
        gid::subscript_is_gid(code, &self.gid_vars, (first, end), index, &g.name)?;
        Ok(Some("clayout_lid".to_string()))
    }

    fn pass(&mut self, code: &Source, (j, end): (usize, usize), g: &Target, callee: &str) -> R<()> {
        Err(code.refuse(j, end, format!("`{}` is passed to `{callee}`: a staged buffer is only read through its work-item's own structure, in the kernel itself", g.name)))
    }

    fn derived(&mut self, code: &Source, (a, b): (usize, usize), g: &Target) -> R<()> {
        Err(code.refuse(a, b, format!("a pointer derived from staged `{}`: a staged buffer is only read through its work-item's own structure", g.buffer)))
    }
}
