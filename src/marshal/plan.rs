//! Which kernels a conversion takes, compiled how, and launched with which arguments and sizes:
//! a pure function of the device's facts, the shape, the two layouts, the offset and the
//! tuning. The chain (`chain.rs`) only carries the commands out; `tests.rs` pins the plans.

use super::device::Facts;
use super::MarshalError;
use crate::layout::{Layout, Shape};

type Res<T> = Result<T, MarshalError>;

/// One in-place conversion through one tile `T`; a conversion is one or two steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    AosToAsta(u32),
    AstaToAos(u32),
    SoaToAsta(u32),
    AstaToSoa(u32),
}

impl Step {
    pub fn tile(self) -> u32 {
        match self {
            Step::AosToAsta(t) | Step::AstaToAos(t) | Step::SoaToAsta(t) | Step::AstaToSoa(t) => t,
        }
    }

    /// Whether the step transposes super-elements (PTTWAC 100, with done flags).
    fn soa(self) -> bool {
        matches!(self, Step::SoaToAsta(_) | Step::AstaToSoa(_))
    }
}

/// The steps from `from` to `to`, through ASTA with the device's tile `dflt` where neither
/// layout is ASTA.
pub fn steps(shape: Shape, from: Layout, to: Layout, dflt: u32) -> Vec<Step> {
    let f = from.canonical(shape);
    let t = to.canonical(shape);
    if f == t {
        return vec![];
    }
    // AoS <-> SoA go through ASTA with the device tile; when that ASTA already is SoA (M <= T)
    // the first step does everything.
    let via = dflt.max(2);
    match (f, t) {
        (Layout::Aos, Layout::Asta { t }) => vec![Step::AosToAsta(t)],
        (Layout::Asta { t }, Layout::Aos) => vec![Step::AstaToAos(t)],
        (Layout::Soa, Layout::Asta { t }) => vec![Step::SoaToAsta(t)],
        (Layout::Asta { t }, Layout::Soa) => vec![Step::AstaToSoa(t)],
        (Layout::Aos, Layout::Soa) => {
            if (via as u64) >= shape.m {
                vec![Step::AosToAsta(via)]
            } else {
                vec![Step::AosToAsta(via), Step::AstaToSoa(via)]
            }
        }
        (Layout::Soa, Layout::Aos) => {
            if (via as u64) >= shape.m {
                vec![Step::AstaToAos(via)]
            } else {
                vec![Step::SoaToAsta(via), Step::AstaToAos(via)]
            }
        }
        (Layout::Asta { t: a }, Layout::Asta { t: b }) => {
            vec![Step::AstaToAos(a), Step::AosToAsta(b)]
        }
        _ => vec![],
    }
}

// ------------------------------------------------------------------------------------------
// Tuning: the free choices
// ------------------------------------------------------------------------------------------

/// Which PTTWAC 100 kernel SoA <-> ASTA uses (the benchmark's choice; clayout takes `Auto`).
#[cfg(feature = "bench")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum P100Kernel {
    /// One work-item per cycle start when a super-element is at most 256 bytes, else one
    /// work-group per super-element.
    Auto,
    WorkItem,
    /// The volatile-access twin of the work-item kernel.
    WorkItemVolatile,
    /// The work-item kernel with persistent work-items that take the starts in turn
    /// ([`Tuning::p100_per_cu`] per compute unit).
    Persistent,
    WorkGroup,
}

/// The free choices of the conversion kernels. `Tuning::DEFAULT`, what measured best on an
/// H100 (docs/performance.md), is the only tuning of clayout's default build; the benchmark
/// (feature `bench`) sets others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// Bytes of data per work-group of the barrier-synchronized AoS <-> ASTA kernel.
    pub bs_bytes: u64,
    /// Its work-group size.
    pub bs_l: u32,
    #[cfg(feature = "bench")]
    pub p100: P100Kernel,
    /// Work-group size of the work-item PTTWAC 100 kernel.
    pub p100_l: u32,
    /// Read the next super-element while claiming it (else claim first: no wasted read, but
    /// two serialized latencies per hop, ~10% of copy on an H100).
    pub p100_spec: bool,
    /// Work-items per compute unit of the persistent PTTWAC 100 kernel.
    #[cfg(feature = "bench")]
    pub p100_per_cu: u32,
    /// Use 16-byte vector accesses where alignment allows.
    pub vectors: bool,
}

impl Tuning {
    pub const DEFAULT: Tuning = Tuning {
        bs_bytes: 16384,
        bs_l: 256,
        #[cfg(feature = "bench")]
        p100: P100Kernel::Auto,
        p100_l: 128,
        p100_spec: true,
        #[cfg(feature = "bench")]
        p100_per_cu: 2048,
        vectors: true,
    };
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning::DEFAULT
    }
}

// ------------------------------------------------------------------------------------------
// Kernel parameters: what one conversion program is compiled with
// ------------------------------------------------------------------------------------------

/// The PTTWAC 100 kernel a program runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum P100Run {
    /// One work-item per start super-element (p100_wi).
    PerStart,
    /// p100_wi with volatile accesses (p100_wiv).
    #[cfg(feature = "bench")]
    PerStartVolatile,
    /// At most `items` persistent work-items that take the starts in turn (p100_wp).
    #[cfg(feature = "bench")]
    Persistent { items: u64 },
    /// One work-group per start super-element (p100_wg).
    PerGroup,
}

/// Kernel parameters for one (device, S, T, w, alignment): the `-D` values of the program
/// (`defines.rs`) and the work-group sizes of its launches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    pub s: u32,
    pub t: u32,
    pub w: u32,
    /// Words per vector access of the BS kernels.
    pub vec: u32,
    pub bs_k: u32,
    pub bs_l: u32,
    /// Whether a tile fits the BS kernel (else PTTWAC 010).
    pub use_bs: bool,
    pub p010_l: u32,
    pub p010_bpw: u32,
    pub p010_fw: u32,
    pub p100_pv: u32,
    pub p100: P100Run,
    /// Work-group size of the work-item kernels (p100_wi, p100_wiv, p100_wp).
    pub p100_wi_l: u32,
    /// p100_wi reads the next super-element while claiming it (see [`Tuning::p100_spec`]).
    pub p100_spec: bool,
    /// Work-group size of p100_wg (compiled in as P100_L whichever kernel runs).
    pub p100_wg_l: u32,
    pub helper_l: u32,
}

/// The kernels of a conversion program, by what they do in a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// AoS -> ASTA of the full tiles: the BS kernel or PTTWAC 010 (`Params::use_bs`).
    ToAsta,
    ToAos,
    P100,
    CopyRows,
    CopyTranspose,
    Reverse,
}

impl Role {
    pub const ALL: [Role; 6] =
        [Role::ToAsta, Role::ToAos, Role::P100, Role::CopyRows, Role::CopyTranspose, Role::Reverse];
}

impl Params {
    /// The kernel function playing `role`, and the work-group size it is launched with.
    pub fn kernel(&self, role: Role) -> (&'static str, u32) {
        match role {
            Role::ToAsta if self.use_bs => ("bs_aos_to_asta", self.bs_l),
            Role::ToAsta => ("p010_aos_to_asta", self.p010_l),
            Role::ToAos if self.use_bs => ("bs_asta_to_aos", self.bs_l),
            Role::ToAos => ("p010_asta_to_aos", self.p010_l),
            Role::P100 => (self.p100_name(), self.p100_local()),
            Role::CopyRows => ("copy_rows", self.helper_l),
            Role::CopyTranspose => ("copy_transpose", self.helper_l),
            Role::Reverse => ("reverse_range", self.helper_l),
        }
    }

    pub fn p100_name(&self) -> &'static str {
        match self.p100 {
            P100Run::PerStart => "p100_wi",
            #[cfg(feature = "bench")]
            P100Run::PerStartVolatile => "p100_wiv",
            #[cfg(feature = "bench")]
            P100Run::Persistent { .. } => "p100_wp",
            P100Run::PerGroup => "p100_wg",
        }
    }

    fn p100_local(&self) -> u32 {
        match self.p100 {
            P100Run::PerGroup => self.p100_wg_l,
            _ => self.p100_wi_l,
        }
    }

    /// Work-items to launch for `n` super-elements.
    fn p100_global(&self, n: u64) -> u64 {
        match self.p100 {
            P100Run::PerStart => n,
            #[cfg(feature = "bench")]
            P100Run::PerStartVolatile => n,
            #[cfg(feature = "bench")]
            P100Run::Persistent { items } => n.min(items),
            P100Run::PerGroup => n * self.p100_wg_l as u64,
        }
    }

    /// The local-memory padding period of the BS kernels, in words: one pad word each.
    pub fn padw(&self) -> u32 {
        padw(self.w)
    }
}

fn padw(w: u32) -> u32 {
    if w == 8 {
        16
    } else {
        32
    }
}

fn pad_words(j: u64, w: u32) -> u64 {
    j + j / padw(w) as u64
}

/// The parameters of structures of `s` words of `w` bytes in tiles of `t` on a device with
/// `facts`; `aligned16` when the data starts on a 16-byte boundary (vector accesses).
pub fn params(facts: &Facts, s: u32, t: u32, w: u32, aligned16: bool, tune: &Tuning) -> Res<Params> {
    let ts = t as u64 * s as u64;
    if ts >= u32::MAX as u64 / 2 {
        return Err(MarshalError::Unsupported(format!("tile of {ts} words")));
    }
    let maxwg = facts.max_wg.min(1024) as u32;
    let budget = facts.local_mem.min(48 * 1024).saturating_sub(512);
    let aligned16 = aligned16 && tune.vectors;
    let per16 = 16 / w;
    let vec = if aligned16 && ts.is_multiple_of(per16 as u64) {
        per16
    } else if aligned16 && w == 4 && ts.is_multiple_of(2) {
        2
    } else {
        1
    };
    let tile_local = (pad_words(ts, w) + 1) * w as u64;
    let use_bs = tile_local <= budget;
    let (mut bs_k, mut bs_l) = (1u32, facts.simd.min(maxwg as usize) as u32);
    if use_bs {
        let target = tune.bs_bytes.max(1);
        let mut k = (target / (ts * w as u64)).max(1);
        while k > 1 && (pad_words(k * ts, w) + 1) * w as u64 > budget {
            k -= 1;
        }
        bs_k = k as u32;
        let nv = (k * ts / vec as u64) as u32;
        let simd = facts.simd as u32;
        bs_l = tune.bs_l.min(nv.div_ceil(simd) * simd).min(maxwg).max(1);
    }
    // PTTWAC 010: spreading factor as large as local memory allows (at most 32, i.e. one flag
    // per word), one padding word per 32 flag words.
    let mut bpw = 1u32;
    loop {
        let words = ts.div_ceil(bpw as u64);
        let with_padding = words + words / 32 + 1;
        if with_padding <= budget / 4 {
            break;
        }
        if bpw == 32 {
            break;
        }
        bpw *= 2;
    }
    let fwords = ts.div_ceil(bpw as u64);
    let p010_fw = fwords + fwords / 32 + 1;
    if !use_bs && p010_fw > budget / 4 {
        return Err(MarshalError::Unsupported(format!("tile of {ts} words: PTTWAC 010 flags exceed local memory")));
    }
    Ok(Params {
        s,
        t,
        w,
        vec,
        bs_k,
        bs_l,
        use_bs,
        p010_l: 256.min(maxwg),
        p010_bpw: bpw,
        p010_fw: p010_fw as u32,
        p100_pv: if aligned16 && t.is_multiple_of(per16) { per16 } else { 1 },
        p100: p100_run(facts, t, w, tune),
        p100_wi_l: tune.p100_l.min(maxwg).max(1),
        p100_spec: tune.p100_spec,
        p100_wg_l: (t.min(facts.simd as u32)).min(maxwg).max(1),
        helper_l: 256.min(maxwg),
    })
}

/// One work-item per start while a super-element fits in a few registers (256 bytes), else a
/// work-group per start.
fn p100_auto(t: u32, w: u32) -> P100Run {
    if t as u64 * w as u64 <= 256 {
        P100Run::PerStart
    } else {
        P100Run::PerGroup
    }
}

#[cfg(not(feature = "bench"))]
fn p100_run(_: &Facts, t: u32, w: u32, _: &Tuning) -> P100Run {
    p100_auto(t, w)
}

#[cfg(feature = "bench")]
fn p100_run(facts: &Facts, t: u32, w: u32, tune: &Tuning) -> P100Run {
    match tune.p100 {
        P100Kernel::Auto => p100_auto(t, w),
        P100Kernel::WorkItem => P100Run::PerStart,
        P100Kernel::WorkItemVolatile => P100Run::PerStartVolatile,
        P100Kernel::Persistent => {
            P100Run::Persistent { items: facts.compute_units as u64 * tune.p100_per_cu.max(1) as u64 }
        }
        P100Kernel::WorkGroup => P100Run::PerGroup,
    }
}

// ------------------------------------------------------------------------------------------
// Conversions: steps, scratch and commands
// ------------------------------------------------------------------------------------------

/// A whole conversion: its steps with their programs' parameters, and the scratch it needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conversion {
    pub steps: Vec<(Step, Params)>,
    /// Bytes of done flags (one bit per super-element of a SoA <-> ASTA step).
    pub flags_bytes: u64,
    /// Bytes of the partial tile's words.
    pub tail_bytes: u64,
}

/// Plans the conversion of the `shape` at byte `offset` of a buffer from `from` to `to`.
pub fn conversion(
    facts: &Facts,
    shape: Shape,
    from: Layout,
    to: Layout,
    offset: u64,
    dflt: u32,
    tune: &Tuning,
) -> Res<Conversion> {
    if shape.w != 4 && shape.w != 8 {
        return Err(MarshalError::Unsupported(format!("word size {} (4 or 8 only)", shape.w)));
    }
    if !offset.is_multiple_of(shape.w as u64) {
        return Err(MarshalError::Unsupported(format!(
            "offset {offset} is not a multiple of the word size {}",
            shape.w
        )));
    }
    let aligned16 = offset.is_multiple_of(16);
    let (mut flags_bytes, mut tail_bytes) = (0u64, 0u64);
    let mut planned = Vec::new();
    for step in steps(shape, from, to, dflt) {
        let t = step.tile() as u64;
        let (q, r) = (shape.m / t, shape.m % t);
        if q * shape.s as u64 > u32::MAX as u64 || q > u32::MAX as u64 {
            return Err(MarshalError::Unsupported("more than 2^32 super-elements".into()));
        }
        if step.soa() {
            flags_bytes = flags_bytes.max(flag_bytes(q * shape.s as u64));
        }
        tail_bytes = tail_bytes.max(r * shape.s as u64 * shape.w as u64);
        planned.push((step, params(facts, shape.s, step.tile(), shape.w, aligned16, tune)?));
    }
    Ok(Conversion { steps: planned, flags_bytes, tail_bytes })
}

/// Bytes of done flags for `n` super-elements: one bit each, in 32-bit words.
fn flag_bytes(n: u64) -> u64 {
    n.div_ceil(32) * 4
}

/// A kernel argument: one of the three buffers of a conversion, or a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    /// The application's buffer being converted.
    Data,
    /// The done flags of the scratch.
    Flags,
    /// The tail words of the scratch.
    Tail,
    U64(u64),
    U32(u32),
}

/// One command of a step, in queue order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Zeroes the first `bytes` of the done flags.
    ZeroFlags { bytes: u64 },
    /// Launches the kernel of `role` over `global` work-items (rounded up to a multiple of the
    /// role's work-group size).
    Launch { role: Role, args: Vec<Arg>, global: u64 },
}

/// The commands of one step, and the bytes they read plus write.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Commands {
    pub list: Vec<Command>,
    pub bytes: u64,
}

impl Commands {
    fn launch(&mut self, role: Role, args: Vec<Arg>, global: u64) {
        if global > 0 {
            self.list.push(Command::Launch { role, args, global });
        }
    }

    /// `dst[doff + row*dstride + j] = src[soff + row*sstride + j]` for `rows` rows of `len`.
    #[allow(clippy::too_many_arguments)]
    fn copy_rows(&mut self, dst: Arg, doff: u64, src: Arg, soff: u64, rows: u64, len: u64, dstride: u64, sstride: u64) {
        use Arg::U64;
        let args = vec![dst, U64(doff), src, U64(soff), U64(rows), U64(len), U64(dstride), U64(sstride)];
        self.launch(Role::CopyRows, args, rows * len);
    }

    /// Reverses `len` words of the data from word `start`.
    fn reverse(&mut self, start: u64, len: u64, w: u64) {
        if len < 2 {
            return;
        }
        self.launch(Role::Reverse, vec![Arg::Data, Arg::U64(start), Arg::U64(len)], len / 2);
        self.bytes += 2 * len * w;
    }

    /// PTTWAC 100: the A x B array of T-word super-elements at word `base` becomes B x A.
    fn p100(&mut self, p: &Params, base: u64, a: u32, b: u32) {
        let n = a as u64 * b as u64;
        let bytes = flag_bytes(n);
        self.list.push(Command::ZeroFlags { bytes });
        self.bytes += bytes;
        // The last argument is the `zero` of the FOLD address dependency (kernels/marshal.cl).
        let args = vec![Arg::Data, Arg::U64(base), Arg::Flags, Arg::U32(a), Arg::U32(b), Arg::U32(0)];
        self.launch(Role::P100, args, p.p100_global(n));
    }
}

/// The commands of `step` (planned as `p`) on the `shape` at word `base` of the data. The
/// algorithms are in the module documentation of `marshal`.
pub fn commands(step: Step, p: &Params, shape: Shape, base: u64) -> Commands {
    use Arg::{Data, Tail};
    let mut c = Commands::default();
    let (m, s, w) = (shape.m, shape.s as u64, shape.w as u64);
    let t = p.t as u64;
    let (q, r) = (m / t, m % t);
    let qt = q * t;
    let full = qt * s; // words in full tiles
    match step {
        Step::AosToAsta(_) | Step::AstaToAos(_) => {
            let role = if matches!(step, Step::AosToAsta(_)) { Role::ToAsta } else { Role::ToAos };
            if q > 0 {
                if p.use_bs {
                    let groups = q.div_ceil(p.bs_k as u64);
                    c.launch(role, vec![Data, Arg::U64(base), Arg::U32(q as u32)], groups * p.bs_l as u64);
                } else {
                    c.launch(role, vec![Data, Arg::U64(base), Arg::U32(0)], q * p.p010_l as u64);
                }
                c.bytes += 2 * full * w;
            }
            if r > 0 {
                let n = r * s;
                // tail -> scratch (straight), then back transposed: AoS r x S <-> mini SoA S x r
                c.copy_rows(Tail, 0, Data, base + full, 1, n, 0, 0);
                let (rr, cc) = if role == Role::ToAsta { (r, s) } else { (s, r) };
                let args = vec![Data, Arg::U64(base + full), Tail, Arg::U64(0), Arg::U64(rr), Arg::U64(cc)];
                c.launch(Role::CopyTranspose, args, n);
                c.bytes += 4 * n * w;
            }
        }
        Step::SoaToAsta(_) => {
            if r > 0 {
                // (1) gather the row tails: scratch[s*r + j] = data[s*M + QT + j]
                c.copy_rows(Tail, 0, Data, base + qt, s, r, r, m);
                c.bytes += 2 * s * r * w;
                if q > 0 {
                    // (2) compaction, rows in increasing order
                    for row in 1..s {
                        let a = row * qt;
                        let len = row * m + qt - a;
                        c.reverse(base + a, len, w);
                        c.reverse(base + a, qt, w);
                    }
                }
            }
            if q > 1 && s > 1 {
                c.p100(p, base, s as u32, q as u32);
                c.bytes += 2 * full * w;
            }
            if r > 0 {
                // (4) the tail, already in mini-SoA order, after the full tiles
                c.copy_rows(Data, base + full, Tail, 0, 1, s * r, 0, 0);
                c.bytes += 2 * s * r * w;
            }
        }
        Step::AstaToSoa(_) => {
            if r > 0 {
                c.copy_rows(Tail, 0, Data, base + full, 1, s * r, 0, 0);
                c.bytes += 2 * s * r * w;
            }
            if q > 1 && s > 1 {
                c.p100(p, base, q as u32, s as u32);
                c.bytes += 2 * full * w;
            }
            if r > 0 {
                if q > 0 {
                    for row in (1..s).rev() {
                        let a = row * qt;
                        let len = row * m + qt - a;
                        c.reverse(base + a, len, w);
                        c.reverse(base + row * m, qt, w);
                    }
                }
                // scatter: data[s*M + QT + j] = scratch[s*r + j]
                c.copy_rows(Data, base + qt, Tail, 0, s, r, m, r);
                c.bytes += 2 * s * r * w;
            }
        }
    }
    c
}
