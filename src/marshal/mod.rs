//! In-place layout conversions on the device: AoS <-> ASTA and SoA <-> ASTA (and, in two
//! steps through ASTA, AoS <-> SoA and ASTA(T1) <-> ASTA(T2)).
//!
//! # Algorithms (kernels/marshal.cl)
//! - AoS <-> ASTA: every full tile is an independent T x S <-> S x T transposition of T*S
//!   contiguous words ("010" transposition). Fast path `bs_*`: several whole tiles per
//!   work-group staged through padded local memory, contiguous vector reads and writes.
//!   Tiles too big for local memory: PTTWAC 010 (`p010_*`, one work-group per tile, done
//!   bits in local memory with spreading and padding).
//! - SoA <-> ASTA: with `M = Q*T + r`, the first `Q*T` words of every SoA row are `Q`
//!   super-elements of `T` words, so for `r = 0` SoA is the `S x Q` array of super-elements
//!   and ASTA its `Q x S` transpose: a "100" transposition by PTTWAC (`p100_wi`: one
//!   work-item per super-element, or the warp-centric `p100_wg`) with one done bit per
//!   super-element in a scratch buffer.
//! - The partial tile (`r = M mod T > 0`) exactly, with a scratch of `r*S <= (T-1)*S` words:
//!   * AoS <-> ASTA: the last `r*S` words are AoS `r x S` in one layout and the mini SoA
//!     `S x r` in the other; copy them to the scratch and copy back transposed.
//!   * SoA -> ASTA: (1) gather the `S` row tails (`r` words each, at `s*M + Q*T`) to the
//!     scratch: that is already the ASTA tail order `s*r + j`. (2) Compact: for s = 1..S-1 in
//!     increasing order, move row s's `Q*T` body from `s*M` down to `s*Q*T`. The move is a
//!     rotation of the range `[s*Q*T, s*M + Q*T)` (holes, whose words are saved or already
//!     moved, followed by the body): reverse the whole range, then reverse its first `Q*T`
//!     words. Each reversal is perfectly parallel (one work-item swaps one pair, pairs are
//!     disjoint), and the range of row s touches only words of rows < s that were already
//!     moved out (they now end at `s*Q*T`), its own tail hole (saved), and its own body; rows
//!     > s start at `(s+1)*M >= s*M + Q*T`. Afterwards the buffer starts with the `S x Q`
//!     super-element array. (3) PTTWAC 100 on it. (4) Copy the scratch to `[Q*T*S, M*S)`.
//!   * ASTA -> SoA: the exact inverse: save the tail, PTTWAC 100 `Q x S -> S x Q`, expand
//!     rows s = S-1..1 in decreasing order (reverse `[s*Q*T, s*M+Q*T)`, then its last `Q*T`
//!     words; rows < s are still packed below `s*Q*T`, rows > s already moved above
//!     `(s+1)*M`), scatter the saved tails to `s*M + Q*T`.
//!   The compaction/expansion costs O(S*M) word moves in 2(S-1) launches; it only runs when
//!   `r > 0`. The fast path (`r = 0`) is just the PTTWAC 100.
//!
//! # Memory
//! Per context, one scratch pair (cached, grown on demand, freed by [`release_context`]):
//! done flags of one bit per moved super-element (`ceil(Q*S/32)` 32-bit words, only for
//! SoA <-> ASTA) and the tail words (`r*S*w` bytes, only when `r > 0`). Conversions in one
//! context are serialized on this scratch through events. [`Converted::scratch_bytes`] is
//! what a conversion needed. No buffer of the data's size is ever allocated.
//!
//! # Tuning
//! Work-group shapes come from device queries; the few free choices are in [`Tuning`], which
//! only the benchmark changes ([`set_tuning`]): clayout reads no environment variable for them.

use crate::cl::api;
use crate::cl::Kernel;
use crate::layout::{Layout, Shape};
use libc::{c_void, size_t};
use once_cell::sync::{Lazy, OnceCell};
use opencl_sys::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::CString;
use std::fmt;
use std::ptr;
use std::sync::Arc;

const SOURCE: &str = include_str!("../../kernels/marshal.cl");

/// The result of an enqueued conversion.
#[derive(Debug)]
pub struct Converted {
    /// Completes when the conversion is done; the caller releases it.
    pub event: cl_event,
    /// Bytes read plus bytes written by all the kernels of the conversion.
    pub bytes_moved: u64,
    /// Extra device memory the conversion needed (done flags + tail words), in bytes.
    pub scratch_bytes: u64,
}

#[derive(Debug, Clone)]
pub enum MarshalError {
    Build(String),
    Resources(String),
    Enqueue(cl_int, String),
    Unsupported(String),
    /// A later step of a multi-step conversion failed after earlier steps were enqueued: the
    /// buffer's bytes are in neither layout.
    Partial(Box<MarshalError>),
}

impl MarshalError {
    /// Whether the buffer was left untouched (nothing was enqueued).
    pub fn untouched(&self) -> bool {
        !matches!(self, MarshalError::Partial(_))
    }
}

impl fmt::Display for MarshalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MarshalError::Build(l) => write!(f, "building the marshaling kernels failed: {l}"),
            MarshalError::Resources(m) => write!(f, "not enough device resources: {m}"),
            MarshalError::Enqueue(e, m) => write!(f, "enqueue failed ({e}): {m}"),
            MarshalError::Unsupported(m) => write!(f, "unsupported conversion: {m}"),
            MarshalError::Partial(e) => write!(f, "{e}, after part of the conversion was enqueued"),
        }
    }
}

impl std::error::Error for MarshalError {}

type Res<T> = Result<T, MarshalError>;

// ------------------------------------------------------------------------------------------
// Device queries
// ------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct DevInfo {
    local_mem: u64,
    max_wg: usize,
    /// Warp / wavefront width used for group sizes: 32 NVIDIA, 64 AMD, 32 otherwise.
    simd: usize,
    compute_units: u32,
}

static DEVINFO: Lazy<Mutex<HashMap<usize, DevInfo>>> = Lazy::new(|| Mutex::new(HashMap::new()));

unsafe fn dev_string(d: cl_device_id, what: cl_device_info) -> String {
    crate::cl::info::info_string(|n, v, r| api().clGetDeviceInfo(d, what, n, v, r))
}

fn dev_info(d: cl_device_id) -> DevInfo {
    if let Some(i) = DEVINFO.lock().get(&(d as usize)) {
        return i.clone();
    }
    // SAFETY: plain device queries on a device handle the caller holds.
    let info = unsafe {
        let vendor = dev_string(d, CL_DEVICE_VENDOR);
        let local_mem: cl_ulong = crate::cl::info::device_scalar(d, CL_DEVICE_LOCAL_MEM_SIZE);
        let max_wg: size_t = crate::cl::info::device_scalar(d, CL_DEVICE_MAX_WORK_GROUP_SIZE);
        let compute_units: cl_uint = crate::cl::info::device_scalar(d, CL_DEVICE_MAX_COMPUTE_UNITS);
        let v = vendor.to_ascii_lowercase();
        let simd = if v.contains("nvidia") {
            32
        } else if v.contains("advanced micro devices") || v.contains("amd") {
            64
        } else {
            32
        };
        DevInfo { local_mem: local_mem.max(1024), max_wg: max_wg.max(1), simd, compute_units: compute_units.max(1) }
    };
    DEVINFO.lock().insert(d as usize, info.clone());
    info
}

/// The tile clayout uses on this device: `CLAYOUT_TILE` when set, else the memory-coalescing
/// unit (32 on NVIDIA, 64 on AMD wavefronts, 32 elsewhere, PoCL included).
pub fn default_tile(device: cl_device_id) -> u32 {
    if let Some(t) = crate::config::get().tile.0 {
        return t.max(1);
    }
    dev_info(device).simd as u32
}

// ------------------------------------------------------------------------------------------
// Programs: cached per (context, device, options), options encode variant, S, T, w.
// ------------------------------------------------------------------------------------------

#[derive(Clone, PartialEq, Eq, Hash)]
struct ProgKey {
    ctx: usize,
    dev: usize,
    opts: String,
}

struct Prog(cl_program);
// SAFETY: OpenCL program objects are thread-safe handles.
unsafe impl Send for Prog {}
unsafe impl Sync for Prog {}

type ProgSlot = Arc<OnceCell<Result<Prog, String>>>;
static PROGRAMS: Lazy<Mutex<HashMap<ProgKey, ProgSlot>>> = Lazy::new(|| Mutex::new(HashMap::new()));

fn program(ctx: cl_context, dev: cl_device_id, t: u32, opts: &str) -> Res<cl_program> {
    let key = ProgKey { ctx: ctx as usize, dev: dev as usize, opts: opts.to_string() };
    let slot = PROGRAMS.lock().entry(key).or_default().clone();
    // The map lock is released here: a build only blocks callers of the same key.
    let r = slot.get_or_init(|| unsafe { build(ctx, dev, t, opts) });
    match r {
        Ok(p) => Ok(p.0),
        Err(l) => Err(MarshalError::Build(l.clone())),
    }
}

unsafe fn build(ctx: cl_context, dev: cl_device_id, t: u32, opts: &str) -> Result<Prog, String> {
    if crate::fault::inject("build") {
        return Err("injected failure of a conversion kernel build".into());
    }
    let src = format!("{}\n{}", crate::layout::asta_macros(Some(t)), SOURCE);
    crate::cache::binaries::build(ctx, dev, &src, opts, "conv").map(|p| Prog(p.into_raw())).map_err(|e| e.to_string())
}

fn kernel(prog: cl_program, name: &str, dev: cl_device_id, need_wg: usize) -> Res<Kernel> {
    let cname = CString::new(name).unwrap();
    let mut err: cl_int = 0;
    // SAFETY: valid program handle; the name is NUL-terminated.
    let k = unsafe { api().clCreateKernel(prog, cname.as_ptr(), &mut err) };
    if k.is_null() || err != CL_SUCCESS {
        return Err(MarshalError::Build(format!("clCreateKernel({name}): {err}")));
    }
    let Some(k) = Kernel::from_raw(k) else {
        return Err(MarshalError::Build(format!("clCreateKernel({name}): no kernel")));
    };
    let mut wg: size_t = 0;
    // SAFETY: plain query.
    unsafe {
        api().clGetKernelWorkGroupInfo(
            k.raw(),
            dev,
            CL_KERNEL_WORK_GROUP_SIZE,
            std::mem::size_of::<size_t>(),
            &mut wg as *mut size_t as *mut c_void,
            ptr::null_mut(),
        );
    }
    if wg != 0 && wg < need_wg {
        return Err(MarshalError::Resources(format!("{name}: work-group of {need_wg} wanted, {wg} possible")));
    }
    Ok(k)
}

// ------------------------------------------------------------------------------------------
// Scratch per context
// ------------------------------------------------------------------------------------------

struct Scratch {
    flags: cl_mem,
    flags_bytes: u64,
    tail: cl_mem,
    tail_bytes: u64,
    /// The last event of the last conversion that used this scratch (retained), or null.
    last: cl_event,
}
// SAFETY: OpenCL handles are thread-safe.
unsafe impl Send for Scratch {}

static SCRATCH: Lazy<Mutex<HashMap<usize, Scratch>>> = Lazy::new(|| Mutex::new(HashMap::new()));

unsafe fn grow(ctx: cl_context, mem: &mut cl_mem, have: &mut u64, need: u64) -> Res<()> {
    if need <= *have && !mem.is_null() {
        return Ok(());
    }
    if crate::fault::inject("scratch") {
        return Err(MarshalError::Resources("injected failure of a scratch buffer".into()));
    }
    let size = need.max(256).next_power_of_two();
    let mut err: cl_int = 0;
    let m = api().clCreateBuffer(ctx, CL_MEM_READ_WRITE, size as size_t, ptr::null_mut(), &mut err);
    if m.is_null() || err != CL_SUCCESS {
        return Err(MarshalError::Resources(format!("scratch buffer of {size} bytes: {err}")));
    }
    if !mem.is_null() {
        // Commands already enqueued keep the old buffer alive until they complete.
        api().clReleaseMemObject(*mem);
    }
    *mem = m;
    *have = size;
    Ok(())
}

/// Releases everything cached for `ctx` (programs, scratch buffers). Call when the
/// application's context dies; later conversions in the same context rebuild.
pub fn release_context(ctx: cl_context) {
    let progs: Vec<ProgSlot> = {
        let mut map = PROGRAMS.lock();
        let keys: Vec<ProgKey> = map.keys().filter(|k| k.ctx == ctx as usize).cloned().collect();
        keys.into_iter().filter_map(|k| map.remove(&k)).collect()
    };
    for slot in progs {
        if let Some(Ok(p)) = slot.get() {
            // SAFETY: the cache owned this reference.
            unsafe {
                api().clReleaseProgram(p.0);
            }
        }
    }
    if let Some(s) = SCRATCH.lock().remove(&(ctx as usize)) {
        // SAFETY: the cache owned these references.
        unsafe {
            if !s.flags.is_null() {
                api().clReleaseMemObject(s.flags);
            }
            if !s.tail.is_null() {
                api().clReleaseMemObject(s.tail);
            }
            if !s.last.is_null() {
                api().clReleaseEvent(s.last);
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// Planning
// ------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    AosToAsta(u32),
    AstaToAos(u32),
    SoaToAsta(u32),
    AstaToSoa(u32),
}

fn steps(shape: Shape, from: Layout, to: Layout, dflt: u32) -> Vec<Step> {
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

/// Kernel parameters for one (device, S, T, w, alignment).
#[derive(Clone, Debug)]
struct Plan {
    s: u32,
    t: u32,
    w: u32,
    vec: u32,
    bs_k: u32,
    bs_l: u32,
    /// Whether a tile fits the BS kernel (else PTTWAC 010).
    use_bs: bool,
    p010_l: u32,
    p010_bpw: u32,
    p010_fw: u32,
    p100_pv: u32,
    p100: P100Run,
    /// Work-group size of the work-item kernels (p100_wi, p100_wiv, p100_wp).
    p100_wi_l: u32,
    /// p100_wi reads the next super-element while claiming it (see [`Tuning::p100_spec`]).
    p100_spec: bool,
    /// Work-group size of p100_wg (compiled in as P100_L whichever kernel runs).
    p100_wg_l: u32,
    helper_l: u32,
}

/// The PTTWAC 100 kernel a plan runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum P100Run {
    /// One work-item per start super-element (p100_wi, or its volatile twin p100_wiv).
    PerStart { volatile: bool },
    /// At most `items` persistent work-items that take the starts in turn (p100_wp).
    Persistent { items: u64 },
    /// One work-group per start super-element (p100_wg).
    PerGroup,
}

impl Plan {
    fn p100_name(&self) -> &'static str {
        match self.p100 {
            P100Run::PerStart { volatile: false } => "p100_wi",
            P100Run::PerStart { volatile: true } => "p100_wiv",
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
            P100Run::PerStart { .. } => n,
            P100Run::Persistent { items } => n.min(items),
            P100Run::PerGroup => n * self.p100_wg_l as u64,
        }
    }
}

/// Which PTTWAC 100 kernel SoA <-> ASTA uses.
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

/// The free choices of the conversion kernels; the defaults are what measured best on an H100
/// (docs/performance.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// Bytes of data per work-group of the barrier-synchronized AoS <-> ASTA kernel.
    pub bs_bytes: u64,
    /// Its work-group size.
    pub bs_l: u32,
    pub p100: P100Kernel,
    /// Work-group size of the work-item PTTWAC 100 kernel.
    pub p100_l: u32,
    /// Read the next super-element while claiming it (else claim first: no wasted read, but
    /// two serialized latencies per hop, ~10% of copy on an H100).
    pub p100_spec: bool,
    /// Work-items per compute unit of the persistent PTTWAC 100 kernel.
    pub p100_per_cu: u32,
    /// Use 16-byte vector accesses where alignment allows.
    pub vectors: bool,
}

impl Tuning {
    const DEFAULT: Tuning = Tuning {
        bs_bytes: 16384,
        bs_l: 256,
        p100: P100Kernel::Auto,
        p100_l: 128,
        p100_spec: true,
        p100_per_cu: 2048,
        vectors: true,
    };
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning::DEFAULT
    }
}

static TUNING: parking_lot::RwLock<Tuning> = parking_lot::RwLock::new(Tuning::DEFAULT);

/// Changes the tuning for conversions enqueued from now on (the benchmark's sweep).
pub fn set_tuning(t: Tuning) {
    *TUNING.write() = t;
}

pub fn tuning() -> Tuning {
    *TUNING.read()
}

fn pad_words(j: u64, w: u32) -> u64 {
    let padw = if w == 8 { 16 } else { 32 };
    j + j / padw
}

fn plan(di: &DevInfo, s: u32, t: u32, w: u32, aligned16: bool) -> Res<Plan> {
    let ts = t as u64 * s as u64;
    if ts >= u32::MAX as u64 / 2 {
        return Err(MarshalError::Unsupported(format!("tile of {ts} words")));
    }
    let maxwg = di.max_wg.min(1024) as u32;
    let budget = di.local_mem.min(48 * 1024).saturating_sub(512);
    let tune = tuning();
    let aligned16 = aligned16 && tune.vectors;
    let per16 = 16 / w;
    let vec = if aligned16 && ts % per16 as u64 == 0 {
        per16
    } else if aligned16 && w == 4 && ts % 2 == 0 {
        2
    } else {
        1
    };
    let tile_local = (pad_words(ts, w) + 1) * w as u64;
    let use_bs = tile_local <= budget;
    let (mut bs_k, mut bs_l) = (1u32, di.simd.min(maxwg as usize) as u32);
    if use_bs {
        let target = tune.bs_bytes.max(1);
        let mut k = (target / (ts * w as u64)).max(1);
        while k > 1 && (pad_words(k * ts, w) + 1) * w as u64 > budget {
            k -= 1;
        }
        bs_k = k as u32;
        let nv = (k * ts / vec as u64) as u32;
        let want = tune.bs_l;
        let simd = di.simd as u32;
        let l = want.min(nv.div_ceil(simd) * simd).min(maxwg).max(1);
        bs_l = l;
    }
    // PTTWAC 010: spreading factor as large as local memory allows (at most 32, i.e. one flag
    // per word), one padding word per 32 flag words.
    let mut bpw = 1u32;
    loop {
        let words = ts.div_ceil(bpw as u64);
        if words + words / 32 + 1 <= budget / 4 {
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
    let p100_pv = if aligned16 && t % per16 == 0 { per16 } else { 1 };
    let p100 = match tune.p100 {
        P100Kernel::WorkGroup => P100Run::PerGroup,
        P100Kernel::WorkItem => P100Run::PerStart { volatile: false },
        P100Kernel::WorkItemVolatile => P100Run::PerStart { volatile: true },
        P100Kernel::Persistent => {
            P100Run::Persistent { items: di.compute_units as u64 * tune.p100_per_cu.max(1) as u64 }
        }
        P100Kernel::Auto if t as u64 * w as u64 <= 256 => P100Run::PerStart { volatile: false },
        P100Kernel::Auto => P100Run::PerGroup,
    };
    Ok(Plan {
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
        p100_pv,
        p100,
        p100_wi_l: tune.p100_l.min(maxwg).max(1),
        p100_spec: tune.p100_spec,
        p100_wg_l: (t.min(di.simd as u32)).min(maxwg).max(1),
        helper_l: 256.min(maxwg),
    })
}

impl Plan {
    fn options(&self) -> String {
        let word = if self.w == 8 { "ulong -DWORD_IS_ULONG" } else { "uint" };
        format!(
            "-DWORD={word} -DS_={}u -DVEC={} -DBS_ENABLED={} -DBS_K={}u -DBS_L={}u -DPADW={}u -DP010_L={}u -DP010_BPW={}u -DP010_FW={}u -DP100_PV={} -DP100_L={}u -DP100_SPEC={}",
            self.s,
            self.vec,
            self.use_bs as u32,
            self.bs_k,
            self.bs_l,
            if self.w == 8 { 16 } else { 32 },
            self.p010_l,
            self.p010_bpw,
            self.p010_fw,
            self.p100_pv,
            self.p100_wg_l,
            self.p100_spec as u32,
        ) + &format!(" -DCLAYOUT_T={}", self.t)
    }
}

// ------------------------------------------------------------------------------------------
// Enqueueing
// ------------------------------------------------------------------------------------------

/// A chain of commands on one queue: each waits on the previous one.
struct Chain {
    queue: cl_command_queue,
    prev: cl_event,
    first_wait: Vec<cl_event>,
    started: bool,
    bytes: u64,
}

impl Chain {
    fn waits(&self) -> Vec<cl_event> {
        if self.started {
            if self.prev.is_null() {
                vec![]
            } else {
                vec![self.prev]
            }
        } else {
            self.first_wait.clone()
        }
    }
    fn advance(&mut self, ev: cl_event) {
        if !self.prev.is_null() {
            // SAFETY: we own the reference of the previous link.
            unsafe {
                api().clReleaseEvent(self.prev);
            }
        }
        self.prev = ev;
        self.started = true;
    }

    fn launch(&mut self, k: &Kernel, args: &[Arg], global: u64, local: u32, name: &str) -> Res<()> {
        if global == 0 {
            return Ok(());
        }
        for (i, a) in args.iter().enumerate() {
            // SAFETY: arguments match the kernel signature (sizes by construction).
            let e = unsafe {
                match a {
                    Arg::Mem(m) => api().clSetKernelArg(
                        k.raw(),
                        i as cl_uint,
                        std::mem::size_of::<cl_mem>(),
                        m as *const cl_mem as *const c_void,
                    ),
                    Arg::U64(v) => api().clSetKernelArg(k.raw(), i as cl_uint, 8, v as *const u64 as *const c_void),
                    Arg::U32(v) => api().clSetKernelArg(k.raw(), i as cl_uint, 4, v as *const u32 as *const c_void),
                }
            };
            if e != CL_SUCCESS {
                return Err(MarshalError::Enqueue(e, format!("clSetKernelArg({name}, {i})")));
            }
        }
        let l = local as u64;
        let g = global.div_ceil(l) * l;
        let gs = [g as size_t];
        let ls = [local as size_t];
        let w = self.waits();
        let mut ev: cl_event = ptr::null_mut();
        // SAFETY: valid queue and kernel, wait list alive for the call.
        let e = unsafe {
            api().clEnqueueNDRangeKernel(
                self.queue,
                k.raw(),
                1,
                ptr::null(),
                gs.as_ptr(),
                ls.as_ptr(),
                w.len() as cl_uint,
                if w.is_empty() { ptr::null() } else { w.as_ptr() },
                &mut ev,
            )
        };
        if e != CL_SUCCESS {
            return Err(MarshalError::Enqueue(e, format!("clEnqueueNDRangeKernel({name}, global {g}, local {local})")));
        }
        self.advance(ev);
        Ok(())
    }

    fn fill_zero(&mut self, mem: cl_mem, bytes: u64) -> Res<()> {
        let pat: u32 = 0;
        let w = self.waits();
        let mut ev: cl_event = ptr::null_mut();
        let size = bytes.div_ceil(4) * 4;
        // SAFETY: valid queue and buffer, size within the buffer.
        let e = unsafe {
            api().clEnqueueFillBuffer(
                self.queue,
                mem,
                &pat as *const u32 as *const c_void,
                4,
                0,
                size as size_t,
                w.len() as cl_uint,
                if w.is_empty() { ptr::null() } else { w.as_ptr() },
                &mut ev,
            )
        };
        if e != CL_SUCCESS {
            return Err(MarshalError::Enqueue(e, "clEnqueueFillBuffer(flags)".into()));
        }
        self.bytes += size;
        self.advance(ev);
        Ok(())
    }

    fn marker(&mut self) -> Res<()> {
        let w = self.waits();
        let mut ev: cl_event = ptr::null_mut();
        // SAFETY: valid queue.
        let e = unsafe {
            api().clEnqueueMarkerWithWaitList(
                self.queue,
                w.len() as cl_uint,
                if w.is_empty() { ptr::null() } else { w.as_ptr() },
                &mut ev,
            )
        };
        if e != CL_SUCCESS {
            return Err(MarshalError::Enqueue(e, "clEnqueueMarkerWithWaitList".into()));
        }
        self.advance(ev);
        Ok(())
    }
}

enum Arg {
    Mem(cl_mem),
    U64(u64),
    U32(u32),
}

struct Kernels {
    plan: Plan,
    /// AoS -> ASTA and ASTA -> AoS: the BS kernels or the PTTWAC 010 ones (plan.use_bs).
    to_asta: Kernel,
    to_aos: Kernel,
    p100: Kernel,
    copy_rows: Kernel,
    copy_transpose: Kernel,
    reverse: Kernel,
}

fn kernels(ctx: cl_context, dev: cl_device_id, di: &DevInfo, s: u32, t: u32, w: u32, aligned16: bool) -> Res<Kernels> {
    let plan = plan(di, s, t, w, aligned16)?;
    let prog = program(ctx, dev, t, &plan.options())?;
    let p = &plan;
    Ok(Kernels {
        to_asta: if p.use_bs {
            kernel(prog, "bs_aos_to_asta", dev, p.bs_l as usize)?
        } else {
            kernel(prog, "p010_aos_to_asta", dev, p.p010_l as usize)?
        },
        to_aos: if p.use_bs {
            kernel(prog, "bs_asta_to_aos", dev, p.bs_l as usize)?
        } else {
            kernel(prog, "p010_asta_to_aos", dev, p.p010_l as usize)?
        },
        p100: kernel(prog, p.p100_name(), dev, p.p100_local() as usize)?,
        copy_rows: kernel(prog, "copy_rows", dev, p.helper_l as usize)?,
        copy_transpose: kernel(prog, "copy_transpose", dev, p.helper_l as usize)?,
        reverse: kernel(prog, "reverse_range", dev, p.helper_l as usize)?,
        plan,
    })
}

/// Builds (and caches) the conversion kernels for structures of `s` words of `w` bytes and
/// tile `t` on `dev`, so that the first conversion does not pay for the compile. Conversions of
/// buffers at offset 0 use exactly these kernels.
pub fn prepare(ctx: cl_context, dev: cl_device_id, s: u32, t: u32, w: u32) -> Result<(), MarshalError> {
    match std::panic::catch_unwind(|| kernels(ctx, dev, &dev_info(dev), s, t, w, true).map(drop)) {
        Ok(r) => r,
        Err(_) => Err(MarshalError::Unsupported("internal error (panic) in clayout's marshaling".into())),
    }
}

/// Enqueues an in-place conversion of `buffer` (its first `shape.m*shape.s*shape.w` bytes,
/// starting at byte `offset` — 0 normally) from `from` to `to` on `queue`, after `wait`.
/// Never blocks except to build a program the first time. Never panics; every failure
/// returns Err and leaves the buffer bytes unchanged if the failure happened before
/// anything was enqueued.
///
/// AoS <-> SoA (and ASTA with one tile <-> ASTA with another) run as two steps through
/// ASTA with [`default_tile`] (or through AoS).
pub fn enqueue_conversion(
    queue: cl_command_queue,
    buffer: cl_mem,
    offset: u64,
    shape: Shape,
    from: Layout,
    to: Layout,
    wait: &[cl_event],
) -> Result<Converted, MarshalError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        enqueue_inner(queue, buffer, offset, shape, from, to, wait)
    })) {
        Ok(r) => r,
        Err(_) => Err(MarshalError::Unsupported("internal error (panic) in clayout's marshaling".into())),
    }
}

fn enqueue_inner(
    queue: cl_command_queue,
    buffer: cl_mem,
    offset: u64,
    shape: Shape,
    from: Layout,
    to: Layout,
    wait: &[cl_event],
) -> Res<Converted> {
    if shape.w != 4 && shape.w != 8 {
        return Err(MarshalError::Unsupported(format!("word size {} (4 or 8 only)", shape.w)));
    }
    if offset % shape.w as u64 != 0 {
        return Err(MarshalError::Unsupported(format!(
            "offset {offset} is not a multiple of the word size {}",
            shape.w
        )));
    }
    let (mut ctx, mut dev): (cl_context, cl_device_id) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: plain queries on the caller's queue.
    unsafe {
        let e1 = api().clGetCommandQueueInfo(
            queue,
            CL_QUEUE_CONTEXT,
            std::mem::size_of::<cl_context>(),
            &mut ctx as *mut cl_context as *mut c_void,
            ptr::null_mut(),
        );
        let e2 = api().clGetCommandQueueInfo(
            queue,
            CL_QUEUE_DEVICE,
            std::mem::size_of::<cl_device_id>(),
            &mut dev as *mut cl_device_id as *mut c_void,
            ptr::null_mut(),
        );
        if e1 != CL_SUCCESS || e2 != CL_SUCCESS {
            return Err(MarshalError::Enqueue(if e1 != CL_SUCCESS { e1 } else { e2 }, "clGetCommandQueueInfo".into()));
        }
    }
    let di = dev_info(dev);
    let steps = steps(shape, from, to, default_tile(dev));
    let aligned16 = offset % 16 == 0;
    // Build (or fetch) everything before enqueueing anything.
    let mut ks = Vec::new();
    let mut flags_need = 0u64;
    let mut tail_need = 0u64;
    for st in &steps {
        let t = match *st {
            Step::AosToAsta(t) | Step::AstaToAos(t) | Step::SoaToAsta(t) | Step::AstaToSoa(t) => t,
        };
        let (q, r) = (shape.m / t as u64, shape.m % t as u64);
        if q * shape.s as u64 > u32::MAX as u64 || q > u32::MAX as u64 {
            return Err(MarshalError::Unsupported("more than 2^32 super-elements".into()));
        }
        if matches!(st, Step::SoaToAsta(_) | Step::AstaToSoa(_)) {
            flags_need = flags_need.max((q * shape.s as u64).div_ceil(32) * 4);
        }
        tail_need = tail_need.max(r * shape.s as u64 * shape.w as u64);
        ks.push(kernels(ctx, dev, &di, shape.s, t, shape.w, aligned16)?);
    }
    let mut map = SCRATCH.lock();
    let sc = map.entry(ctx as usize).or_insert(Scratch {
        flags: ptr::null_mut(),
        flags_bytes: 0,
        tail: ptr::null_mut(),
        tail_bytes: 0,
        last: ptr::null_mut(),
    });
    // SAFETY: context handle from the queue.
    unsafe {
        grow(ctx, &mut sc.flags, &mut sc.flags_bytes, flags_need.max(4))?;
        grow(ctx, &mut sc.tail, &mut sc.tail_bytes, tail_need.max(8))?;
    }
    let mut first_wait: Vec<cl_event> = wait.to_vec();
    if !sc.last.is_null() {
        first_wait.push(sc.last);
    }
    let mut chain = Chain { queue, prev: ptr::null_mut(), first_wait, started: false, bytes: 0 };
    let mut result = Ok(());
    for (st, k) in steps.iter().zip(ks.iter()) {
        result =
            enqueue_step(&mut chain, k, *st, buffer, offset / shape.w as u64, shape, sc.flags, sc.tail, flags_need);
        if result.is_err() {
            break;
        }
    }
    if result.is_ok() && !chain.started {
        result = chain.marker();
    }
    // Whatever was enqueued, the scratch is busy until the last enqueued command is done.
    if chain.started {
        // SAFETY: retaining the event we hand on to the next user of the scratch.
        unsafe {
            api().clRetainEvent(chain.prev);
            if !sc.last.is_null() {
                api().clReleaseEvent(sc.last);
            }
        }
        sc.last = chain.prev;
    }
    drop(map);
    // SAFETY: plain flush so that cross-queue waits on our event cannot stall.
    unsafe {
        api().clFlush(queue);
    }
    match result {
        Ok(()) => Ok(Converted { event: chain.prev, bytes_moved: chain.bytes, scratch_bytes: flags_need + tail_need }),
        Err(e) => {
            if chain.started {
                // SAFETY: releasing our own reference of the last link.
                unsafe {
                    api().clReleaseEvent(chain.prev);
                }
                return Err(MarshalError::Partial(Box::new(e)));
            }
            Err(e)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn enqueue_step(
    ch: &mut Chain,
    k: &Kernels,
    st: Step,
    buf: cl_mem,
    base: u64,
    shape: Shape,
    flags: cl_mem,
    tail: cl_mem,
    flags_bytes: u64,
) -> Res<()> {
    if !ch.started && crate::fault::inject("enqueue") {
        return Err(MarshalError::Enqueue(CL_OUT_OF_RESOURCES, "injected failure of a conversion enqueue".into()));
    }
    let p = &k.plan;
    let (m, s, w) = (shape.m, shape.s as u64, shape.w as u64);
    let t = p.t as u64;
    let (q, r) = (m / t, m % t);
    let full = q * t * s; // words in full tiles
    let hl = p.helper_l;
    match st {
        Step::AosToAsta(_) | Step::AstaToAos(_) => {
            let to = matches!(st, Step::AosToAsta(_));
            if q > 0 {
                if p.use_bs {
                    let groups = q.div_ceil(p.bs_k as u64);
                    let kk = if to { &k.to_asta } else { &k.to_aos };
                    ch.launch(
                        kk,
                        &[Arg::Mem(buf), Arg::U64(base), Arg::U32(q as u32)],
                        groups * p.bs_l as u64,
                        p.bs_l,
                        "bs",
                    )?;
                } else {
                    let kk = if to { &k.to_asta } else { &k.to_aos };
                    ch.launch(
                        kk,
                        &[Arg::Mem(buf), Arg::U64(base), Arg::U32(0)],
                        q * p.p010_l as u64,
                        p.p010_l,
                        "p010",
                    )?;
                }
                ch.bytes += 2 * full * w;
            }
            if r > 0 {
                let n = r * s;
                // tail -> scratch (straight), then back transposed: AoS r x S <-> mini SoA S x r
                ch.launch(
                    &k.copy_rows,
                    &[
                        Arg::Mem(tail),
                        Arg::U64(0),
                        Arg::Mem(buf),
                        Arg::U64(base + full),
                        Arg::U64(1),
                        Arg::U64(n),
                        Arg::U64(0),
                        Arg::U64(0),
                    ],
                    n,
                    hl,
                    "copy_rows",
                )?;
                let (rr, cc) = if to { (r, s) } else { (s, r) };
                ch.launch(
                    &k.copy_transpose,
                    &[Arg::Mem(buf), Arg::U64(base + full), Arg::Mem(tail), Arg::U64(0), Arg::U64(rr), Arg::U64(cc)],
                    n,
                    hl,
                    "copy_transpose",
                )?;
                ch.bytes += 4 * n * w;
            }
        }
        Step::SoaToAsta(_) => {
            let qt = q * t;
            if r > 0 {
                // (1) gather the row tails: scratch[s*r + j] = data[s*M + QT + j]
                ch.launch(
                    &k.copy_rows,
                    &[
                        Arg::Mem(tail),
                        Arg::U64(0),
                        Arg::Mem(buf),
                        Arg::U64(base + qt),
                        Arg::U64(s),
                        Arg::U64(r),
                        Arg::U64(r),
                        Arg::U64(m),
                    ],
                    s * r,
                    hl,
                    "copy_rows",
                )?;
                ch.bytes += 2 * s * r * w;
                if q > 0 {
                    // (2) compaction, rows in increasing order
                    for row in 1..s {
                        let a = row * qt;
                        let len = row * m + qt - a;
                        reverse(ch, k, buf, base + a, len, hl)?;
                        reverse(ch, k, buf, base + a, qt, hl)?;
                    }
                }
            }
            if q > 1 && s > 1 {
                p100(ch, k, buf, base, flags, flags_bytes, s as u32, q as u32)?;
                ch.bytes += 2 * full * w;
            }
            if r > 0 {
                // (4) the tail, already in mini-SoA order, after the full tiles
                ch.launch(
                    &k.copy_rows,
                    &[
                        Arg::Mem(buf),
                        Arg::U64(base + full),
                        Arg::Mem(tail),
                        Arg::U64(0),
                        Arg::U64(1),
                        Arg::U64(s * r),
                        Arg::U64(0),
                        Arg::U64(0),
                    ],
                    s * r,
                    hl,
                    "copy_rows",
                )?;
                ch.bytes += 2 * s * r * w;
            }
        }
        Step::AstaToSoa(_) => {
            let qt = q * t;
            if r > 0 {
                ch.launch(
                    &k.copy_rows,
                    &[
                        Arg::Mem(tail),
                        Arg::U64(0),
                        Arg::Mem(buf),
                        Arg::U64(base + full),
                        Arg::U64(1),
                        Arg::U64(s * r),
                        Arg::U64(0),
                        Arg::U64(0),
                    ],
                    s * r,
                    hl,
                    "copy_rows",
                )?;
                ch.bytes += 2 * s * r * w;
            }
            if q > 1 && s > 1 {
                p100(ch, k, buf, base, flags, flags_bytes, q as u32, s as u32)?;
                ch.bytes += 2 * full * w;
            }
            if r > 0 {
                if q > 0 {
                    for row in (1..s).rev() {
                        let a = row * qt;
                        let len = row * m + qt - a;
                        reverse(ch, k, buf, base + a, len, hl)?;
                        reverse(ch, k, buf, base + row * m, qt, hl)?;
                    }
                }
                // scatter: data[s*M + QT + j] = scratch[s*r + j]
                ch.launch(
                    &k.copy_rows,
                    &[
                        Arg::Mem(buf),
                        Arg::U64(base + qt),
                        Arg::Mem(tail),
                        Arg::U64(0),
                        Arg::U64(s),
                        Arg::U64(r),
                        Arg::U64(m),
                        Arg::U64(r),
                    ],
                    s * r,
                    hl,
                    "copy_rows",
                )?;
                ch.bytes += 2 * s * r * w;
            }
        }
    }
    Ok(())
}

fn reverse(ch: &mut Chain, k: &Kernels, buf: cl_mem, start: u64, len: u64, hl: u32) -> Res<()> {
    if len < 2 {
        return Ok(());
    }
    ch.launch(&k.reverse, &[Arg::Mem(buf), Arg::U64(start), Arg::U64(len)], len / 2, hl, "reverse_range")?;
    ch.bytes += 2 * len * k.plan.w as u64;
    Ok(())
}

/// PTTWAC 100: the A x B array of T-word super-elements at word `base` becomes B x A.
#[allow(clippy::too_many_arguments)]
fn p100(
    ch: &mut Chain,
    k: &Kernels,
    buf: cl_mem,
    base: u64,
    flags: cl_mem,
    flags_bytes: u64,
    a: u32,
    b: u32,
) -> Res<()> {
    let p = &k.plan;
    let n = a as u64 * b as u64;
    ch.fill_zero(flags, flags_bytes.min(n.div_ceil(32) * 4))?;
    // The last argument is the `zero` of the FOLD address dependency (kernels/marshal.cl).
    let args = [Arg::Mem(buf), Arg::U64(base), Arg::Mem(flags), Arg::U32(a), Arg::U32(b), Arg::U32(0)];
    ch.launch(&k.p100, &args, p.p100_global(n), p.p100_local(), p.p100_name())
}

/// Names the kernels a conversion of this shape would use on this device (for the logs and
/// the benchmark).
pub fn describe(device: cl_device_id, shape: Shape, from: Layout, to: Layout, offset: u64) -> String {
    let di = dev_info(device);
    let mut out = Vec::new();
    for st in steps(shape, from, to, default_tile(device)) {
        let t = match st {
            Step::AosToAsta(t) | Step::AstaToAos(t) | Step::SoaToAsta(t) | Step::AstaToSoa(t) => t,
        };
        match plan(&di, shape.s, t, shape.w, offset % 16 == 0) {
            Ok(p) => {
                let kind = match st {
                    Step::AosToAsta(_) | Step::AstaToAos(_) => {
                        if p.use_bs {
                            format!("bs(K={},L={},vec={})", p.bs_k, p.bs_l, p.vec)
                        } else {
                            format!("p010(L={},bpw={})", p.p010_l, p.p010_bpw)
                        }
                    }
                    _ => match p.p100 {
                        P100Run::PerStart { .. } => format!("{}(L={},pv={})", p.p100_name(), p.p100_wi_l, p.p100_pv),
                        P100Run::Persistent { items } => {
                            format!("p100_wp(L={},pv={},G={items})", p.p100_wi_l, p.p100_pv)
                        }
                        P100Run::PerGroup => format!("p100_wg(L={})", p.p100_wg_l),
                    },
                };
                out.push(format!("{st:?}:{kind}"));
            }
            Err(e) => out.push(format!("{st:?}:{e}")),
        }
    }
    out.join(" + ")
}
