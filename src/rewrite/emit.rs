//! The OpenCL C text the rewriter generates besides the spliced accesses: the ASTA index
//! functions, vector and whole-structure load/store functions, and rewritten parameters. Words
//! are addressed in one of two [`Space`]s: the buffer in ASTA, or a work-group's structures
//! staged in local memory; the generated functions of both share their signatures, so that an
//! access is spelled the same way whichever space it reads.
//! Every generated definition is guarded by `#ifndef CLAYOUT_HAVE_<name>` so that rewriting
//! several kernels of one program, one after the other, defines each function once.

use crate::clc::struct_layout::{MemberLayout, StructLayout};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Word index functions. Functions rather than macros so that each argument (which may have
/// side effects, `p[i++].x`) is evaluated exactly once. The index type is `ulong` unless the
/// program is built with `-D CLAYOUT_INDEX32`, which the runtime does for every launch whose
/// buffers hold fewer than 2^32 words: GPUs do 32-bit integer arithmetic in one instruction
/// where 64-bit takes several. Subscripts that go negative on the way (`p[s*n + i - 1]`) stay
/// exact in either width, since the arithmetic is modular and the final index is in range.
const INDEX_FUNCTIONS: &str = "\
#ifndef CLAYOUT_HAVE_INDEX
#define CLAYOUT_HAVE_INDEX
#ifndef CLAYOUT_TILE
#error \"clayout: a rewritten kernel needs -D CLAYOUT_TILE=<tile>\"
#endif
#ifdef CLAYOUT_INDEX32
typedef uint clayout_idx;
#else
typedef ulong clayout_idx;
#endif
/* ASTA word index of word s of structure i (S words per structure, M structures). */
clayout_idx clayout_asta(clayout_idx i, clayout_idx s, clayout_idx S, clayout_idx M) {
  const clayout_idx T = (clayout_idx)(CLAYOUT_TILE);
  const clayout_idx full = M - M % T;
  return i < full ? (i / T * S + s) * T + i % T : full * S + s * (M - full) + (i - full);
}
/* A flat AoS subscript k (word k % S of structure k / S). */
clayout_idx clayout_aos_flat(clayout_idx k, clayout_idx S, clayout_idx M) {
  return clayout_asta(k / S, k % S, S, M);
}
/* A flat SoA subscript k (word k / M of structure k % M). */
clayout_idx clayout_soa_flat(clayout_idx k, clayout_idx S, clayout_idx M) {
  return clayout_asta(k % M, k / M, S, M);
}
/* A flat SoA subscript written s*M + i: direct when i lies in [0, M), exact otherwise. */
clayout_idx clayout_soa_at(clayout_idx i, clayout_idx s, clayout_idx S, clayout_idx M) {
  return i < M ? clayout_asta(i, s, S, M) : clayout_soa_flat(s * M + i, S, M);
}
#endif
";

/// Where the words of a rewritten access live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Space {
    /// The `__global` buffer in ASTA: word s of structure i at `clayout_asta(i, s, S, M)`.
    Asta,
    /// A `__local` array holding the work-group's structures in AoS: word s of the group's
    /// structure i at `i*S + s`. M is passed along but not needed.
    Local,
}

impl Space {
    pub fn qualifier(self) -> &'static str {
        match self {
            Space::Asta => "__global",
            Space::Local => "__local",
        }
    }

    /// The index of word `s` of structure `i`; `s` may be a sum, `i` is one operand.
    pub fn index(self, i: &str, s: &str, words: impl fmt::Display, m: &str) -> String {
        match self {
            Space::Asta => format!("clayout_asta({i}, {s}, {words}, {m})"),
            Space::Local => format!("{i} * {words} + {s}"),
        }
    }

    /// Distinguishes the generated functions of the two spaces, which take differently
    /// qualified pointers.
    fn tag(self) -> &'static str {
        match self {
            Space::Asta => "",
            Space::Local => "local_",
        }
    }
}

/// The generated functions one rewrite needs, emitted in dependency order.
#[derive(Default)]
pub(crate) struct Needs {
    vectors: BTreeSet<(Space, String, u32)>,
    structs: BTreeMap<(Space, String), String>,
}

impl Needs {
    pub fn vector(&mut self, space: Space, scalar: &str, lanes: u32) -> (String, String) {
        self.vectors.insert((space, scalar.to_string(), lanes));
        ld_st(&format!("{}{scalar}{lanes}", space.tag()))
    }

    /// Names of the load and store functions of whole structures of `layout`, whose words are
    /// addressed as `base` words in `space`.
    pub fn structure(&mut self, space: Space, layout: &StructLayout, base: &str) -> (String, String) {
        let tn = format!("{}{}", space.tag(), sanitize(&layout.type_name));
        if !self.structs.contains_key(&(space, tn.clone())) {
            for m in layout.members.iter().filter(|m| m.lanes > 1) {
                self.vector(space, &m.scalar, m.lanes);
            }
            let text = struct_functions(space, layout, base, &tn);
            self.structs.insert((space, tn.clone()), text);
        }
        ld_st(&tn)
    }

    pub fn text(&self) -> String {
        let mut s = String::from(INDEX_FUNCTIONS);
        for (space, scalar, lanes) in &self.vectors {
            s.push_str(&vector_functions(*space, scalar, *lanes));
        }
        for text in self.structs.values() {
            s.push_str(text);
        }
        s
    }
}

/// The load and store functions of values named `name` (`float4`, `local_Body`).
fn ld_st(name: &str) -> (String, String) {
    (format!("clayout_ld_{name}"), format!("clayout_st_{name}"))
}

/// `struct cell` -> `struct_cell`: a type name as part of an identifier.
pub(crate) fn sanitize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join("_")
}

pub(crate) fn guarded(name: &str, body: &str) -> String {
    format!("#ifndef CLAYOUT_HAVE_{name}\n#define CLAYOUT_HAVE_{name}\n{body}#endif\n")
}

/// The words `p` of `space` as a pointer to `scalar` words (they are declared as `base` words).
pub(crate) fn words_of(space: Space, p: &str, base: &str, scalar: &str, is_const: bool) -> String {
    if scalar == base {
        p.to_string()
    } else {
        let c = if is_const { "const " } else { "" };
        format!("(({c}{} {scalar} *){p})", space.qualifier())
    }
}

/// Word `s` of structure `i` of words `p` (already a pointer to the right scalar): an lvalue.
pub(crate) fn word(space: Space, p: &str, i: &str, s: &str, words: u32, m: &str) -> String {
    format!("{p}[{}]", space.index(i, s, words, m))
}

const LANES: [&str; 16] =
    ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "sa", "sb", "sc", "sd", "se", "sf"];

fn vector_functions(space: Space, scalar: &str, lanes: u32) -> String {
    let ty = format!("{scalar}{lanes}");
    let name = format!("{}{ty}", space.tag());
    let (ld, st) = ld_st(&name);
    let q = space.qualifier();
    let words: Vec<String> =
        (0..lanes).map(|k| format!("p[{}]", space.index("i", &format!("s + {k}"), "S", "M"))).collect();
    let mut body = format!(
        "{ty} {ld}(const {q} {scalar} *p, clayout_idx i, clayout_idx s, clayout_idx S, clayout_idx M) {{\n  return ({ty})({});\n}}\n",
        words.join(", ")
    );
    body.push_str(&format!(
        "{ty} {st}({q} {scalar} *p, clayout_idx i, clayout_idx s, clayout_idx S, clayout_idx M, {ty} v) {{\n"
    ));
    for (k, w) in words.iter().enumerate() {
        body.push_str(&format!("  {w} = v.{};\n", LANES[k]));
    }
    body.push_str("  return v;\n}\n");
    guarded(&name, &body)
}

fn struct_functions(space: Space, layout: &StructLayout, base: &str, tn: &str) -> String {
    let (ld, st) = ld_st(tn);
    let t = &layout.type_name;
    let s = layout.words;
    let q = space.qualifier();
    let mut load = format!("{t} {ld}(const {q} {base} *p, clayout_idx i, clayout_idx M) {{\n  {t} v;\n");
    let mut store = format!("{t} {st}({q} {base} *p, clayout_idx i, clayout_idx M, {t} v) {{\n");
    for m in &layout.members {
        for (field, off) in elements(m) {
            let (lp, sp) = (words_of(space, "p", base, &m.scalar, true), words_of(space, "p", base, &m.scalar, false));
            if m.lanes == 1 {
                load.push_str(&format!("  v.{field} = {};\n", word(space, &lp, "i", &off.to_string(), s, "M")));
                store.push_str(&format!("  {} = v.{field};\n", word(space, &sp, "i", &off.to_string(), s, "M")));
            } else {
                let (vld, vst) = ld_st(&format!("{}{}", space.tag(), m.elem_type()));
                load.push_str(&format!("  v.{field} = {vld}({lp}, i, {off}, {s}, M);\n"));
                store.push_str(&format!("  {vst}({sp}, i, {off}, {s}, M, v.{field});\n"));
            }
        }
    }
    load.push_str("  return v;\n}\n");
    store.push_str("  return v;\n}\n");
    guarded(tn, &(load + &store))
}

/// Each element of a member with its word offset: `a` or `a[0]`, `a[1]`...
fn elements(m: &MemberLayout) -> Vec<(String, u32)> {
    if m.count == 1 {
        vec![(m.name.clone(), m.word_offset)]
    } else {
        (0..m.count).map(|k| (format!("{}[{k}]", m.name), m.word_offset + k * m.stride())).collect()
    }
}

/// The lane a single-component selector names (`x`, `s3`, `sA`), if it is one.
pub(crate) fn component(sel: &str) -> Option<u32> {
    match sel {
        "x" => return Some(0),
        "y" => return Some(1),
        "z" => return Some(2),
        "w" => return Some(3),
        _ => {}
    }
    let rest = sel.strip_prefix('s').or_else(|| sel.strip_prefix('S'))?;
    if rest.len() != 1 {
        return None;
    }
    rest.chars().next()?.to_digit(16)
}

/// Stable FNV-1a hash, for names of rewritten helper copies that must agree across rewrites.
pub(crate) fn fnv(s: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}
