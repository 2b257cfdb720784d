//! The OpenCL C text the rewriter generates besides the spliced accesses: the ASTA index
//! functions, vector and whole-structure load/store functions, and rewritten parameters. Words
//! are addressed in one of two [`Space`]s: the buffer in ASTA, or a work-group's structures
//! staged in local memory; the generated functions of both share their signatures, so that an
//! access is spelled the same way whichever space it reads.
//! Every generated definition is guarded by `#ifndef CLAYOUT_HAVE_<name>` so that rewriting
//! several kernels of one program, one after the other, defines each function once.

use crate::clc::struct_layout::{MemberLayout, StructLayout};
use crate::clc::types::word_type;
use std::collections::BTreeMap;
use std::fmt;

/// Word index functions. Functions rather than macros so that each argument (which may have
/// side effects, `p[i++].x`) is evaluated exactly once. The index type is `ulong` unless the
/// program is built with `-D CLAYOUT_INDEX32`, which the runtime does for every launch whose
/// buffers hold fewer than 2^32 words: GPUs do 32-bit integer arithmetic in one instruction
/// where 64-bit takes several. Subscripts that go negative on the way (`p[s*n + i - 1]`) stay
/// exact in either width, since the arithmetic is modular and the final index is in range.
/// The offsets of followed pointers are `clayout_idx` too, for the same reason: a pointer may
/// go below its buffer's start only on the way to an index (`pz[-1]`), and the sum is exact.
const INDEX_FUNCTIONS: &str = "\
#ifndef CLAYOUT_HAVE_INDEX
#define CLAYOUT_HAVE_INDEX
#ifndef CLAYOUT_TILE
#error \"clayout: a rewritten kernel needs -D CLAYOUT_TILE=<tile>\"
#endif
#ifdef CLAYOUT_INDEX32
typedef uint clayout_idx;
typedef int clayout_sidx;
#else
typedef ulong clayout_idx;
typedef long clayout_sidx;
#endif
/* ASTA word index of word s of structure i (S words per structure, M structures). */
/* With CLAYOUT_FULL_TILES (a build used only when every M is a multiple of the tile) there is
   no narrower last tile: the words of a structure lie at constant distances, as in the kernel as
   written, and the device compiler schedules and rounds the kernel's arithmetic as it does
   there (NVIDIA's does not always otherwise). */
clayout_idx clayout_asta(clayout_idx i, clayout_idx s, clayout_idx S, clayout_idx M) {
  const clayout_idx T = (clayout_idx)(CLAYOUT_TILE);
#ifdef CLAYOUT_FULL_TILES
  return (i / T * S + s) * T + i % T;
#else
  /* Branch-free: a tile's words are T apart, the last tile's M % T apart (min, not a branch at
     each access: with one, NVIDIA's compiler rounds some kernels' arithmetic differently). */
  const clayout_idx first = i / T * T;
  return first * S + i % T + s * min(T, max(M, first) - first);
#endif
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
/* Scalars narrower than a word, r to a word: scalar u of structure i, and scalar x of the
   byte stream, counted in such scalars (ulong: their count may pass 2^32). */
ulong clayout_asta_part(clayout_idx i, ulong u, clayout_idx S, clayout_idx M, uint r) {
  return (ulong)clayout_asta(i, (clayout_idx)(u / r), S, M) * r + u % r;
}
ulong clayout_aos_part(ulong x, clayout_idx S, clayout_idx M, uint r) {
  const ulong per = (ulong)S * r;
  return clayout_asta_part((clayout_idx)(x / per), x % per, S, M, r);
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

/// How a scalar of t bytes sits in words of w bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Fit {
    /// One word.
    Word,
    /// Inside one word, r of them to a word: the word moves as a whole, so the scalar keeps its
    /// place in it.
    Part(u32),
    /// Across r consecutive words of one structure.
    Split(u32),
}

pub(crate) fn fit(t: u32, w: u32) -> Fit {
    match t {
        _ if t == w || t == 0 => Fit::Word,
        _ if t < w => Fit::Part(w / t),
        _ => Fit::Split(t / w),
    }
}

impl Fit {
    /// Distinguishes the generated functions of each fit and word size.
    fn suffix(self, w: u32) -> String {
        match self {
            Fit::Word => String::new(),
            Fit::Part(_) => format!("_p{w}"),
            Fit::Split(_) => format!("_s{w}"),
        }
    }
}

/// The lvalue of scalar unit `u` (counted in the scalar's size) of structure `i`, in words `p`
/// already cast to the scalar, for a scalar that fits a word (`Word` or `Part`); `u_const` when
/// `u` is a known number.
#[allow(clippy::too_many_arguments)]
pub(crate) fn unit_lvalue(
    space: Space,
    p: &str,
    i: &str,
    u: &str,
    u_const: Option<u32>,
    f: Fit,
    s: &str,
    m: &str,
) -> String {
    match (f, u_const, space) {
        (Fit::Part(r), Some(c), _) => {
            format!("{p}[(ulong)({}) * {r} + {}]", space.index(i, &(c / r).to_string(), s, m), c % r)
        }
        (Fit::Part(r), None, Space::Asta) => format!("{p}[clayout_asta_part({i}, {u}, {s}, {m}, {r})]"),
        (Fit::Part(r), None, Space::Local) => format!("{p}[(ulong)({i}) * {s} * {r} + ({u})]"),
        _ => format!("{p}[{}]", space.index(i, u, s, m)),
    }
}

/// The lvalue of scalar `x` of the byte stream (counted in the scalar's size) of a buffer in
/// host layout SoA (`soa`) or AoS, in words `p` already cast to the scalar, for a scalar that fits a word.
pub(crate) fn flat_lvalue(soa: bool, p: &str, x: &str, f: Fit, s: &str, m: &str) -> String {
    match (f, soa) {
        (Fit::Part(r), _) => format!("{p}[clayout_aos_part({x}, {s}, {m}, {r})]"),
        (_, true) => format!("{p}[clayout_soa_flat({x}, {s}, {m})]"),
        _ => format!("{p}[clayout_aos_flat({x}, {s}, {m})]"),
    }
}

/// How generated lane functions address their values.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Addr {
    /// `(p, i, s, S, M)`: units from `s` of structure `i`.
    Struct(Space),
    /// `(p, x, S, M)`: units from `x` of the byte stream, AoS or SoA.
    Flat(bool),
}

/// The generated functions one rewrite needs, emitted in dependency order.
#[derive(Default)]
pub(crate) struct Needs {
    /// (addressing, scalar, lanes, fit, word bytes)
    lanes: BTreeMap<(Addr, String, u32, Fit, u32), String>,
    nested: BTreeMap<String, String>,
    structs: BTreeMap<(Space, String), String>,
    /// Other functions by name (swizzle stores), after the lane functions.
    extra: BTreeMap<String, String>,
}

impl Needs {
    /// Load and store functions of `lanes` lanes (1: the scalar itself) of `scalar` at
    /// consecutive units, each lane fitting words of `w` bytes as `f` says.
    pub fn lanes(&mut self, addr: Addr, scalar: &str, lanes: u32, f: Fit, w: u32) -> (String, String) {
        // Whole-word lanes do not depend on the word size.
        let w = if f == Fit::Word { 0 } else { w };
        let key = (addr.clone(), scalar.to_string(), lanes, f, w);
        let name = lanes_name(&addr, scalar, lanes, f, w);
        self.lanes.entry(key).or_insert_with(|| lanes_functions(&addr, scalar, lanes, f, w, &name));
        ld_st(&name)
    }

    /// Names of the load and store functions of whole structures of `layout`, whose words are
    /// addressed as `base` words in `space`: every word, padding included, as the device
    /// compiler copies a structure.
    pub fn structure(&mut self, space: Space, layout: &StructLayout, base: &str) -> (String, String) {
        let tn = format!("{}{}", space.tag(), sanitize(&layout.type_name));
        self.structs.entry((space, tn.clone())).or_insert_with(|| struct_functions(space, layout, base, &tn));
        ld_st(&tn)
    }

    /// Load and store functions of a structure `nested` that is a member of a structure of
    /// `words` words of `w` bytes, at byte offset `b` (an argument) of structure `i`: member
    /// by member. Their words argument is the word type's.
    pub fn nested(&mut self, space: Space, nested: &StructLayout, w: u32) -> (String, String) {
        let name = format!("{}{}_at{w}", space.tag(), sanitize(&nested.type_name));
        if !self.nested.contains_key(&name) {
            let text = nested_functions(self, space, nested, w, &name);
            self.nested.insert(name.clone(), text);
        }
        ld_st(&name)
    }

    /// A function of its own, defined once under `name`.
    pub fn extra(&mut self, name: &str, text: String) {
        self.extra.entry(name.to_string()).or_insert(text);
    }

    pub fn text(&self) -> String {
        let mut s = String::from(INDEX_FUNCTIONS);
        let all = self.lanes.values().chain(self.extra.values()).chain(self.nested.values());
        for text in all.chain(self.structs.values()) {
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

pub(crate) const LANES: [&str; 16] =
    ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "sa", "sb", "sc", "sd", "se", "sf"];

fn lanes_name(addr: &Addr, scalar: &str, lanes: u32, f: Fit, w: u32) -> String {
    let n = if lanes == 1 { String::new() } else { lanes.to_string() };
    let prefix = match addr {
        Addr::Struct(space) => space.tag().to_string(),
        Addr::Flat(false) => "f_".to_string(),
        Addr::Flat(true) => "soa_".to_string(),
    };
    format!("{prefix}{scalar}{n}{}", f.suffix(w))
}

/// Lane functions: `ld(p, <address>)` returns the value, `st(p, <address>, v)` stores and
/// returns it. Lane k is at unit `s + k` (`x + k`); a split lane's words are consecutive.
fn lanes_functions(addr: &Addr, scalar: &str, lanes: u32, f: Fit, w: u32, name: &str) -> String {
    let ty = if lanes == 1 { scalar.to_string() } else { format!("{scalar}{lanes}") };
    let (ld, st) = ld_st(name);
    let (q, params, at) = match addr {
        Addr::Struct(space) => (space.qualifier(), "clayout_idx i, clayout_idx s, clayout_idx S, clayout_idx M", "s"),
        Addr::Flat(_) => ("__global", "ulong x, clayout_idx S, clayout_idx M", "x"),
    };
    let wt = word_type(w.max(4));
    // The pointer's scalar: the lane's, or the word's for a split lane.
    let ptr = if matches!(f, Fit::Split(_)) { wt } else { scalar };
    // The lvalue of word or part `u` (an expression in units).
    let lvalue = |u: &str| -> String {
        match addr {
            Addr::Struct(space) => unit_lvalue(*space, "p", "i", u, None, f, "S", "M"),
            Addr::Flat(soa) => flat_lvalue(*soa, "p", u, f, "S", "M"),
        }
    };
    let lane = |k: u32| if lanes == 1 { String::new() } else { format!(".{}", LANES[k as usize]) };
    let mut load = Vec::new();
    let mut store = String::new();
    for k in 0..lanes {
        let u = if k == 0 { at.to_string() } else { format!("{at} + {k}") };
        match f {
            Fit::Split(r) => {
                let words: Vec<String> = (0..r).map(|j| lvalue(&format!("({u}) * {r} + {j}"))).collect();
                load.push(format!("as_{scalar}(({wt}{r})({}))", words.join(", ")));
                store.push_str(&format!("  {{ const {wt}{r} t = as_{wt}{r}(v{}); ", lane(k)));
                for (j, wd) in words.iter().enumerate() {
                    store.push_str(&format!("{wd} = t.{}; ", LANES[j]));
                }
                store.push_str("}\n");
            }
            _ => {
                let lv = lvalue(&u);
                load.push(lv.clone());
                store.push_str(&format!("  {lv} = v{};\n", lane(k)));
            }
        }
    }
    let value = if lanes == 1 { load[0].clone() } else { format!("({ty})({})", load.join(", ")) };
    let mut body = format!("{ty} {ld}(const {q} {ptr} *p, {params}) {{\n  return {value};\n}}\n");
    body.push_str(&format!("{ty} {st}({q} {ptr} *p, {params}, {ty} v) {{\n{store}  return v;\n}}\n"));
    guarded(name, &body)
}

/// Whole structures as the device compiler copies them: every word, padding included,
/// through a union of the structure and its words.
fn struct_functions(space: Space, layout: &StructLayout, base: &str, tn: &str) -> String {
    let (ld, st) = ld_st(tn);
    let t = &layout.type_name;
    let s = layout.words;
    let q = space.qualifier();
    let wt = word_type(layout.word_bytes);
    let union = format!("  union {{ {t} v; {wt} w[{s}]; }} u;\n");
    let mut load = format!("{t} {ld}(const {q} {base} *p, clayout_idx i, clayout_idx M) {{\n{union}");
    let mut store = format!("{t} {st}({q} {base} *p, clayout_idx i, clayout_idx M, {t} v) {{\n{union}  u.v = v;\n");
    let (lp, sp) = (words_of(space, "p", base, wt, true), words_of(space, "p", base, wt, false));
    for k in 0..s {
        load.push_str(&format!("  u.w[{k}] = {};\n", word(space, &lp, "i", &k.to_string(), s, "M")));
        store.push_str(&format!("  {} = u.w[{k}];\n", word(space, &sp, "i", &k.to_string(), s, "M")));
    }
    load.push_str("  return u.v;\n}\n");
    store.push_str("  return v;\n}\n");
    guarded(tn, &(load + &store))
}

/// Every scalar or vector element of a structure, each array element on its own: the path
/// from a variable (`a[1]`, `pos.x`, `f[2].v`), the member, and its byte offset.
pub(crate) fn leaves(l: &StructLayout) -> Vec<(String, MemberLayout, u32)> {
    let mut out = Vec::new();
    leaves_into(l, "", 0, &mut out);
    out
}

fn leaves_into(l: &StructLayout, prefix: &str, base: u32, out: &mut Vec<(String, MemberLayout, u32)>) {
    for m in &l.members {
        for e in 0..m.count {
            let mut idx = String::new();
            let mut rest = e;
            for d in (0..m.dims.len()).rev() {
                idx = format!("[{}]{idx}", rest % m.dims[d]);
                rest /= m.dims[d];
            }
            let path = format!("{prefix}{}{idx}", m.name);
            let off = base + m.byte_offset + e * m.elem_bytes;
            match &m.nested {
                Some(n) => leaves_into(n, &format!("{path}."), off, out),
                None => out.push((path, m.clone(), off)),
            }
        }
    }
}

/// A nested structure's load and store, member by member, at byte offset `b` of structure
/// `i` (structures of S words of w bytes).
fn nested_functions(needs: &mut Needs, space: Space, nested: &StructLayout, w: u32, name: &str) -> String {
    let (ld, st) = ld_st(name);
    let t = &nested.type_name;
    let q = space.qualifier();
    let wt = word_type(w);
    let params = "clayout_idx i, clayout_idx b, clayout_idx S, clayout_idx M";
    let mut load = format!("{t} {ld}(const {q} {wt} *p, {params}) {{\n  {t} v;\n");
    let mut store = format!("{t} {st}({q} {wt} *p, {params}, {t} v) {{\n");
    for (path, m, off) in leaves(nested) {
        let sb = m.scalar_bytes();
        let f = fit(sb, w);
        let u = format!("(b + {off}) / {sb}");
        if m.lanes == 1 && !matches!(f, Fit::Split(_)) {
            let (lp, sp) = (words_of(space, "p", wt, &m.scalar, true), words_of(space, "p", wt, &m.scalar, false));
            let lv = |p: &str| unit_lvalue(space, p, "i", &u, None, f, "S", "M");
            load.push_str(&format!("  v.{path} = {};\n", lv(&lp)));
            store.push_str(&format!("  {} = v.{path};\n", lv(&sp)));
        } else {
            let (vld, vst) = needs.lanes(Addr::Struct(space), &m.scalar, m.lanes, f, w);
            let ptr = if matches!(f, Fit::Split(_)) { wt.to_string() } else { m.scalar.clone() };
            let (lp, sp) = (words_of(space, "p", wt, &ptr, true), words_of(space, "p", wt, &ptr, false));
            load.push_str(&format!("  v.{path} = {vld}({lp}, i, {u}, S, M);\n"));
            store.push_str(&format!("  {vst}({sp}, i, {u}, S, M, v.{path});\n"));
        }
    }
    load.push_str("  return v;\n}\n");
    store.push_str("  return v;\n}\n");
    guarded(name, &(load + &store))
}

/// The lanes a selector names on a vector of `lanes` lanes: `x`, `xyz`, `s012`, `lo`, `hi`,
/// `even`, `odd`; `None` for what is not a selector of that vector.
pub(crate) fn swizzle(sel: &str, lanes: u32) -> Option<Vec<u32>> {
    let n = if lanes == 3 { 4 } else { lanes };
    let half: Vec<u32> = (0..n / 2).collect();
    let out: Vec<u32> = match sel {
        "lo" => half,
        "hi" => half.iter().map(|k| k + n / 2).collect(),
        "even" => (0..n / 2).map(|k| 2 * k).collect(),
        "odd" => (0..n / 2).map(|k| 2 * k + 1).collect(),
        _ => {
            if let Some(rest) = sel.strip_prefix('s').or_else(|| sel.strip_prefix('S')) {
                rest.chars().map(|c| c.to_digit(16)).collect::<Option<Vec<u32>>>()?
            } else {
                sel.chars()
                    .map(|c| match c {
                        'x' => Some(0),
                        'y' => Some(1),
                        'z' => Some(2),
                        'w' => Some(3),
                        _ => None,
                    })
                    .collect::<Option<Vec<u32>>>()?
            }
        }
    };
    (!out.is_empty() && out.iter().all(|&l| l < lanes) && matches!(out.len(), 1 | 2 | 3 | 4 | 8 | 16)).then_some(out)
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
