//! The transparent mode at run time (docs/annotations.md, "Transparent mode"). Kernels annotated
//! without a device layout (`//DL: AoS: p[n]`) get an ASTA copy from the rewriter when their
//! program is created. The copies are built in a private program; each launch then runs either
//! the copy, on buffers converted to ASTA, or the application's kernel, on buffers in host layout.
//!
//! Why a private program rather than the application's own: a program's source is fixed when
//! it is created, so if clayout fed the rewritten source to the application's program and that
//! failed to build, the application's `clBuildProgram` would fail where the real library would
//! not have. With a program of its own the application's program, source, binaries, kernel
//! list and build log stay exactly as it made them, and a copy that does not build or whose
//! structure layout the compiler contradicts costs one log line. The price is a second compile
//! of the program, paid right after the application's build.

use super::access::{self, BufferNeed, WaitList};
use super::cost::{self, Decision, Times, Variant};
use super::habits;
use super::launch::{Dims, Enqueue};
use super::measure;
use super::probe::{self, OwnedProgram};
use super::program::{first_device, with_tile, KernelPlan, ParamPlan};
use super::state::{BufferState, Current, DeviceLayout, Need};
use super::tune::Tuned;
use crate::annotation::KernelLayout;
use crate::config::LogLevel;
use crate::layout::Layout;
use crate::real::api;
use crate::registry::{self, ArgValue, KernelInfo, ProgramInfo};
use crate::rewrite::{self, ExtraArg, StructLayout};
use libc::c_void;
use once_cell::sync::OnceCell;
use opencl_sys::*;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// What the rewriter made of one program when it was created.
#[derive(Debug)]
pub struct Rewrites {
    /// The application's source with the copy of every rewritten kernel inserted.
    source: String,
    pub kernels: HashMap<String, Arc<RewrittenKernel>>,
    /// The private program and the application's build options it was built with: a program
    /// rebuilt with other options (other macros) needs its copies rebuilt too.
    private: Mutex<Option<(String, Result<Arc<PrivateProgram>, String>)>>,
}

#[derive(Debug)]
pub struct RewrittenKernel {
    pub private_name: String,
    /// The trailing `ulong` arguments of the copy: M of each rewritten buffer.
    pub extra_args: Vec<ExtraArg>,
    /// The layout the copy assumes for each rewritten parameter, by parameter name.
    pub layouts: HashMap<String, StructLayout>,
    /// Argument index of each rewritten parameter, by name.
    pub indices: HashMap<String, usize>,
    /// The host layout of each rewritten parameter, by name.
    pub hosts: HashMap<String, Layout>,
    /// What the cost model knows of this kernel.
    pub model: Mutex<Model>,
    /// The copy that stages its buffers through local memory, when the kernel touches only
    /// its own structures.
    pub staged: Option<StagedCopy>,
}

#[derive(Debug)]
pub struct StagedCopy {
    pub private_name: String,
    /// The trailing `ulong` arguments of the copy: the structures in each staged buffer.
    pub extra_args: Vec<ExtraArg>,
    /// Local memory each work-item needs, in bytes (S*w summed over the staged buffers).
    pub bytes_per_item: u64,
}

/// The cost model's record of one rewritten kernel.
#[derive(Debug, Default)]
pub struct Model {
    pub times: Times,
    /// Key of the kernel's times in the disk cache (device, program source, kernel), once the
    /// times were looked up there.
    disk_key: Option<Arc<str>>,
    /// The form the last launch ran in, so that the log says when it changes.
    last: Option<Variant>,
    /// Launches that could not be timed; past a few the model stops asking.
    untimed: u32,
}

impl Model {
    /// Takes the kernel's times and habits from the disk cache, under the key of the private
    /// program it runs from.
    fn load(&mut self, private_name: &str, program: &PrivateProgram) {
        let key: Arc<str> = format!(
            "{}|{}|{}",
            crate::diskcache::device_key(program.device as cl_device_id),
            private_name,
            program.source_hash
        )
        .into();
        if let Some(t) = crate::diskcache::get_json::<Times>("times", &key) {
            crate::log::debug(&format!("kernel copy {private_name}: times from the cache: {t:?}"));
            self.times = t;
        }
        habits::preload(&key);
        self.disk_key = Some(key);
    }
}

/// The program holding the copies, built with the application's options and the tile macro.
#[derive(Debug)]
pub struct PrivateProgram {
    program: OwnedProgram,
    pub tile: u32,
    /// Structure types whose layout the device compiler contradicted, and how.
    wrong_layouts: HashMap<String, String>,
    /// The device it was built and tuned for (a handle: devices outlive programs).
    device: usize,
    /// Hash of the source and options it was built from: the kernels' times in the disk cache
    /// belong to exactly this build.
    source_hash: u64,
    /// Conversion costs of each (S, w, host layout) of the copies, at the program's tile.
    rates: HashMap<(u32, u32, Layout), Tuned>,
    /// The largest work-group the staged copies' local memory holds (0: none can run).
    stage_wg: usize,
}

/// The copy of one application kernel object, with the arguments last given to it.
#[derive(Debug)]
pub struct PrivateKernel {
    handle: usize,
    _program: Arc<PrivateProgram>,
    args: Mutex<Vec<Option<ArgValue>>>,
}

impl Drop for PrivateKernel {
    fn drop(&mut self) {
        unsafe { api().clReleaseKernel(self.handle as cl_kernel) };
    }
}

/// Per-kernel part of a launch plan in the transparent mode.
#[derive(Debug)]
pub struct TransparentPlan {
    pub program: Arc<PrivateProgram>,
    pub kernel: Arc<RewrittenKernel>,
}

/// Rewrites every kernel of `source` annotated without a device layout, one after the other
/// into one source. None when the mode is off or nothing could be rewritten. Each refusal is
/// logged once with its construct and line, and counted.
pub fn rewrite_program(source: &str, kernels: &HashMap<String, Result<KernelLayout, String>>) -> Option<Rewrites> {
    if !crate::config::get().rewrite {
        return None;
    }
    let wanted: BTreeMap<&String, &KernelLayout> = kernels
        .iter()
        .filter_map(|(k, l)| Some((k, l.as_ref().ok()?)))
        .filter(|(_, l)| !l.marshals() && !l.params.is_empty())
        .collect();
    let mut current = source.to_string();
    let mut done = HashMap::new();
    for (name, layout) in wanted {
        let outcome =
            rewrite::request(source, layout).and_then(|(req, layouts)| match rewrite::rewrite_kernel(&current, &req) {
                Ok(out) => Ok((out, req, layouts)),
                Err(refusal) => Err(refusal.to_string()),
            });
        match outcome {
            Ok((out, req, layouts)) => {
                current = out.source;
                let staged = stage(&current, &req).map(|(source, copy)| {
                    current = source;
                    copy
                });
                crate::stats::rewritten_kernel();
                crate::log::info(&format!("kernel {name}: rewritten to ASTA addressing as {}", req.private_name));
                let indices = req.params.iter().map(|p| (p.name.clone(), p.index)).collect();
                let hosts = layout
                    .params
                    .iter()
                    .map(|p| (p.name.clone(), if p.host.is_aos() { Layout::Aos } else { Layout::Soa }))
                    .collect();
                done.insert(
                    name.clone(),
                    Arc::new(RewrittenKernel {
                        private_name: req.private_name,
                        extra_args: out.extra_args,
                        layouts,
                        indices,
                        hosts,
                        model: Mutex::new(Model::default()),
                        staged,
                    }),
                );
            }
            Err(why) => {
                crate::log::warn(&format!(
                    "kernel {name}: not rewritten ({why}); it runs as written, on host-layout buffers"
                ));
                crate::stats::rewrite_refused();
                crate::stats::fallback(&format!("kernel {name}"), &format!("not rewritten: {why}"));
            }
        }
    }
    if done.is_empty() {
        return None;
    }
    dump(&current, done.keys());
    Some(Rewrites { source: current, kernels: done, private: Mutex::new(None) })
}

/// The staged copy of a kernel the rewriter turned into an ASTA copy, if it qualifies (every
/// access of its buffers is to the work-item's own structure). A refusal costs nothing: the
/// kernel still has its other forms.
fn stage(current: &str, req: &rewrite::RewriteRequest) -> Option<(String, StagedCopy)> {
    let mut req = req.clone();
    req.private_name = format!("{}__clayout_staged", req.kernel);
    match rewrite::stage_kernel(current, &req) {
        Ok(st) => {
            crate::log::info(&format!("kernel {}: staged copy {}", req.kernel, req.private_name));
            let bytes_per_item = req.params.iter().map(|p| p.layout.words as u64 * p.layout.word_bytes as u64).sum();
            Some((st.source, StagedCopy { private_name: req.private_name, extra_args: st.extra_args, bytes_per_item }))
        }
        Err(why) => {
            crate::log::info(&format!("kernel {}: no staged copy ({why})", req.kernel));
            None
        }
    }
}

/// CLAYOUT_DUMP_DIR: one file per rewritten program.
fn dump<'a>(source: &str, kernels: impl Iterator<Item = &'a String>) {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let Some(dir) = crate::config::get().dump_dir.as_deref() else { return };
    let mut names: Vec<&str> = kernels.map(String::as_str).collect();
    names.sort();
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let path = std::path::Path::new(dir).join(format!("{}-{n}-{}.cl", std::process::id(), names.join("+")));
    if let Err(e) = std::fs::create_dir_all(dir).and_then(|_| std::fs::write(&path, source)) {
        crate::log::warn(&format!("CLAYOUT_DUMP_DIR={dir}: cannot write {} ({e})", path.display()));
    }
}

impl Rewrites {
    /// The private program, built the first time it is asked for after each build of the
    /// application's program (right after that build, or at the first launch), with the
    /// options of that build.
    pub fn private(&self, program: &ProgramInfo) -> Result<Arc<PrivateProgram>, String> {
        let options = program.build_options.lock().clone().unwrap_or_default();
        let mut slot = self.private.lock();
        if let Some((built_with, result)) = slot.as_ref() {
            if *built_with == options {
                return result.clone();
            }
        }
        let built = build_private(&self.source, &self.kernels, program, &options).map(Arc::new);
        if let Err(why) = &built {
            crate::log::warn(&format!(
                "the rewritten kernels of a program cannot be used ({why}); they run as written"
            ));
            crate::stats::fallback("rewritten program", why);
        }
        *slot = Some((options, built.clone()));
        built
    }
}

fn build_private(
    source: &str,
    kernels: &HashMap<String, Arc<RewrittenKernel>>,
    program: &ProgramInfo,
    user: &str,
) -> Result<PrivateProgram, String> {
    let ctx = program.context as cl_context;
    let device = first_device(program)?;
    // Every (S, w, host layout) of the copies; the largest structure picks the tile.
    let mut shapes: Vec<(u32, u32, Layout)> = kernels
        .values()
        .flat_map(|k| {
            k.layouts.iter().map(|(p, l)| (l.words, l.word_bytes, k.hosts.get(p).copied().unwrap_or(Layout::Aos)))
        })
        .collect();
    shapes.sort_by_key(|&(s, w, h)| (std::cmp::Reverse(s * w), s, w, h == Layout::Soa));
    shapes.dedup();
    let fixed = super::program::fixed_tile(user);
    let searched = match (fixed, shapes.first()) {
        (None, Some(&(s, w, h))) => {
            super::tune::tuned(ctx, device, s, w, h, None).filter(|t| t.searched).map(|t| t.tile)
        }
        _ => None,
    };
    let (tile, options) = with_tile(user, Some(device), searched);
    // 32-bit index arithmetic in the copies; launches on bigger buffers run as written.
    let stage_wg = stage_capacity(device, kernels);
    let options = format!("{options} -D {INDEX32_MACRO} -D {STAGE_WG_MACRO}={}", stage_wg.max(1));
    // One probe kernel, in the same build, checks every structure layout the copies assume.
    let mut types: BTreeMap<&str, &StructLayout> = BTreeMap::new();
    for k in kernels.values() {
        for l in k
            .layouts
            .values()
            .filter(|l| l.members.len() > 1 || l.members[0].name != "w" || l.type_name != l.members[0].scalar)
        {
            types.insert(&l.type_name, l);
        }
    }
    let mut probe_src = String::from("\n__kernel void clayout_probe_layout(__global ulong *out) {\n");
    let mut expected = Vec::new();
    for (t, l) in &types {
        probe_src.push_str(&format!("  {{ {t} clayout_v;\n"));
        for (expr, want) in rewrite::probe_expressions(l, "clayout_v") {
            probe_src.push_str(&format!("    out[{}] = {expr};\n", expected.len()));
            expected.push((t.to_string(), expr, want));
        }
        probe_src.push_str("  }\n");
    }
    probe_src.push_str("}\n");
    let built = build_cached(ctx, device, &format!("{source}{probe_src}"), &options)
        .map_err(|e| format!("the rewritten program: {e}"))?;
    let got = probe::run(ctx, device, built.0, "clayout_probe_layout", expected.len())
        .map_err(|e| format!("the structure layout probe: {e}"))?;
    let mut wrong_layouts = HashMap::new();
    for ((t, expr, want), got) in expected.into_iter().zip(got) {
        if want != got && !wrong_layouts.contains_key(&t) {
            wrong_layouts.insert(t, format!("the device compiler says {expr} = {got}, clayout computed {want}"));
        }
    }
    // The conversion kernels these buffers will need, built now rather than in the first
    // launch, and what they cost. A failure here is only logged: the conversion will retry,
    // and fall back then.
    let mut rates = HashMap::new();
    for (s, w, h) in shapes {
        if let Err(e) = crate::marshal::prepare(ctx, device, s, tile, w) {
            crate::log::debug(&format!("conversion kernels for S={s} w={w} T={tile} not built ahead: {e}"));
        }
        if crate::config::get().policy == crate::config::Policy::Auto {
            if let Some(t) = super::tune::tuned(ctx, device, s, w, h, Some(tile)) {
                rates.insert((s, w, h), t);
            }
        }
    }
    crate::log::info(&format!("built the rewritten copies of {} kernel(s) with tile {tile}", kernels.len()));
    let source_hash = crate::diskcache::fnv1a(format!("{source}\n{options}").as_bytes());
    let private =
        PrivateProgram { program: built, tile, wrong_layouts, device: device as usize, source_hash, rates, stage_wg };
    // What earlier runs measured, read now rather than in the application's first launch.
    for k in kernels.values() {
        k.model.lock().load(&k.private_name, &private);
    }
    Ok(private)
}

/// The private program, from the on-disk cache's binary when its context has one device (the
/// binary is for one device; a program for several is built from source for all of them).
fn build_cached(ctx: cl_context, device: cl_device_id, source: &str, options: &str) -> Result<OwnedProgram, String> {
    let devices = registry::get().contexts.get(registry::key(ctx)).map_or(0, |c| c.devices.len());
    if devices != 1 {
        return probe::build(ctx, device, source, options, "build");
    }
    if crate::fault::inject("build") {
        return Err("injected build failure".into());
    }
    crate::binaries::build(ctx, device, source, options, "private").map(OwnedProgram).map_err(|e| {
        // The build log's first error says enough in the one line this ends up in.
        let first =
            e.lines().map(str::trim).find(|l| l.contains("error")).unwrap_or_else(|| e.lines().next().unwrap_or(""));
        first.to_string()
    })
}

/// Selects the copies' 32-bit index arithmetic (see the rewriter's generated index functions).
const INDEX32_MACRO: &str = "CLAYOUT_INDEX32";
/// The work-group capacity of the staged copies' local arrays.
const STAGE_WG_MACRO: &str = "CLAYOUT_STAGE_WG";
/// Fewer work-items than this per group would not make the staged loads coalesce.
const STAGE_WG_MIN: usize = 32;

/// The largest power-of-two work-group, at most 256, whose staged slices fit in half the
/// device's local memory for every staged copy (the other half is left to the kernel's own
/// `__local` arrays); 0 when fewer than `STAGE_WG_MIN` fit.
fn stage_capacity(device: cl_device_id, kernels: &HashMap<String, Arc<RewrittenKernel>>) -> usize {
    let Some(need) = kernels.values().filter_map(|k| k.staged.as_ref()).map(|s| s.bytes_per_item).max() else {
        return 0;
    };
    let local: cl_ulong = unsafe { crate::real::device_scalar(device, CL_DEVICE_LOCAL_MEM_SIZE) };
    let fits = (local / 2 / need.max(1)).min(256) as usize;
    let cap = if fits == 0 { 0 } else { 1 << fits.ilog2() };
    if cap < STAGE_WG_MIN {
        0
    } else {
        cap
    }
}

/// The launch plan of a rewritten kernel: its buffers to ASTA with the private program's tile,
/// each one optional (`must: false`): the kernel as written can always run instead.
pub fn plan(
    program: &ProgramInfo,
    rewrites: &Rewrites,
    rewritten: &Arc<RewrittenKernel>,
    layout: &KernelLayout,
) -> Result<KernelPlan, String> {
    let private = rewrites.private(program)?;
    let mut params = Vec::new();
    for p in &layout.params {
        let l = rewritten.layouts.get(&p.name).ok_or_else(|| format!("{} was not rewritten", p.name))?;
        if let Some(why) = private.wrong_layouts.get(&l.type_name) {
            return Err(format!("{}: {why}", p.name));
        }
        params.push(ParamPlan {
            index: p.arg_index as usize,
            name: p.name.clone(),
            host: if p.host.is_aos() { Layout::Aos } else { Layout::Soa },
            device: Layout::Asta { t: private.tile },
            words: l.words,
            word_bytes: l.word_bytes,
            struct_bytes: l.words as u64 * l.word_bytes as u64,
            extent: p.extent.clone(),
            must: false,
        });
    }
    Ok(KernelPlan {
        params,
        scalars: layout.scalar_args.clone(),
        transparent: Some(TransparentPlan { program: private, kernel: rewritten.clone() }),
    })
}

/// Runs one launch of a rewritten kernel in the form the policy (the cost model, under `auto`)
/// picks: its ASTA copy on converted buffers, its staged copy or the application's kernel on
/// host-layout buffers. Whatever keeps a copy from running falls back to the kernel as written.
/// A launch the model asked to time is timed here, around the enqueue, with no lock held.
///
/// # Safety
/// As for the enqueue call `enqueue` wraps.
#[allow(clippy::too_many_arguments)]
pub unsafe fn launch(
    queue: cl_command_queue,
    kernel: cl_kernel,
    info: &KernelInfo,
    plan: &TransparentPlan,
    needs: &[BufferNeed],
    dims: &Dims,
    user: &[cl_event],
    enqueue: impl Enqueue,
) -> cl_int {
    let staged_local = staged_local(plan, dims);
    let decision =
        crate::guard("cost model", || decide(info, plan, needs, staged_local.is_some())).unwrap_or_else(|| Decision {
            variant: Variant::Written,
            measure: false,
            reason: "internal error in the cost model".into(),
        });
    let timer = if decision.measure && measure::wait_list_complete(user) { measure::start(queue) } else { None };
    let attempt = match decision.variant {
        Variant::Asta => {
            Some(crate::guard("transparent launch", || try_copy(queue, info, plan, needs, user, &enqueue)))
        }
        Variant::Staged => Some(crate::guard("staged launch", || {
            try_staged(queue, info, plan, needs, user, staged_local.unwrap_or(0), &enqueue)
        })),
        Variant::Written => None,
    };
    let (ran, r) = match attempt.map(|a| a.unwrap_or_else(|| Err("internal error".into()))) {
        None => (Variant::Written, as_written(queue, kernel, needs, user, &enqueue)),
        Some(Ok(r)) => (decision.variant, r),
        Some(Err(why)) => {
            let what = format!("kernel {} ({} copy)", info.name, decision.variant.name());
            crate::log::once(
                LogLevel::Info,
                &format!("{what}: {why}"),
                &format!("{what}: runs as written on host-layout buffers ({why})"),
            );
            (Variant::Written, as_written(queue, kernel, needs, user, &enqueue))
        }
    };
    crate::stats::transparent_launch(ran == Variant::Asta);
    crate::stats::decision(&info.name, ran, &decision.reason);
    if let Some(t) = timer {
        let ns = if r == CL_SUCCESS && ran == decision.variant { measure::stop(queue, t) } else { None };
        crate::guard("cost model", || record(&info.name, plan, needs, ran, ns));
    }
    r
}

/// The first rewritten buffer's structure count: the unit of the model's times.
fn structures(needs: &[BufferNeed]) -> Option<f64> {
    needs.iter().find_map(|n| match n.need {
        Need::Device(d) => Some(d.shape.m as f64),
        _ => None,
    })
}

/// Asks the cost model which form this launch runs in, and keeps each buffer's count of what
/// its launches would have cost as written.
fn decide(info: &KernelInfo, plan: &TransparentPlan, needs: &[BufferNeed], staged_ok: bool) -> Decision {
    let policy = crate::config::get().policy;
    if policy == crate::config::Policy::Always || (policy == crate::config::Policy::Never && !staged_ok) {
        // Nothing to measure: the policy alone decides. Whether the buffers can be converted is
        // checked once, by the ASTA copy's launch, which falls back to the kernel as written.
        let l = cost::Launch {
            policy,
            staged_ok: false,
            asta_ok: true,
            in_asta: false,
            sent_back: false,
            m: 0.0,
            times: Times::default(),
            convert_ns: 0.0,
            epoch_written_ns: 0.0,
            asta_balance_ns: 0.0,
        };
        let d = cost::decide(&l);
        if d.variant == Variant::Asta {
            mark_converted_by(plan.kernel.model.lock().disk_key.as_ref(), needs);
        }
        return d;
    }
    let asta_block = asta_blocker(needs);
    let mut model = plan.kernel.model.lock();
    if model.disk_key.is_none() {
        model.load(&plan.kernel.private_name, &plan.program);
    }
    let m = structures(needs).unwrap_or(1.0);
    let mut in_asta = true;
    let mut sent_back = false;
    let mut epoch: f64 = 0.0;
    let mut balance = f64::INFINITY;
    let mut convert_ns = 0.0;
    let mut buffers = Vec::new();
    for (arg, n, d) in device_needs(needs) {
        let Some(b) = registry::get().buffers.get(registry::key(n.mem)) else { continue };
        let mut st = b.state.lock();
        st.reuse.epoch_ns += model.times.written.unwrap_or(0.0) * m;
        epoch = epoch.max(st.reuse.epoch_ns);
        balance = balance.min(st.reuse.asta_gain_ns);
        sent_back |= st.reuse.sent_back;
        buffers.push((b.clone(), arg, matches!(st.current, Current::Device(_))));
        if st.current != Current::Device(d) {
            in_asta = false;
            let back = model.disk_key.as_ref().is_none_or(|k| habits::may_come_back(k, arg));
            convert_ns += match plan.program.rates.get(&(d.shape.s, d.shape.w, d.host)) {
                Some(t) if back => t.round_trip_ns(d.shape.bytes()),
                Some(t) => t.to_ns_per_byte * d.shape.bytes() as f64,
                None => f64::INFINITY,
            };
        }
    }
    let l = cost::Launch {
        policy,
        staged_ok,
        asta_ok: asta_block.is_none(),
        in_asta,
        sent_back,
        m,
        times: model.times,
        convert_ns,
        epoch_written_ns: epoch,
        asta_balance_ns: if balance.is_finite() { balance } else { 0.0 },
    };
    let mut d = cost::decide(&l);
    let gain = l.asta_gain_ns().filter(|_| d.variant == Variant::Asta);
    for (b, arg, converted) in &buffers {
        let mut st = b.state.lock();
        if let (Variant::Asta, Some(kernel)) = (d.variant, &model.disk_key) {
            note_converter(&mut st, kernel, *arg);
        }
        if let Some(g) = gain {
            st.reuse.asta_gain_ns += g;
        } else if d.variant != Variant::Asta && *converted {
            // This launch brings the buffer back: until the host accesses it, converting it
            // again would only start another round trip.
            st.reuse.sent_back = true;
        }
    }
    if d.measure && model.untimed >= 3 {
        d.measure = false;
    }
    if model.last != Some(d.variant) || d.measure {
        crate::log::debug(&format!("kernel {}: runs {} ({})", info.name, d.variant.name(), d.reason));
    }
    model.last = Some(d.variant);
    d
}

/// The buffers of `needs` that are to be converted for a device layout, each with its place
/// among the kernel's converted arguments (the key of its habits).
fn device_needs(needs: &[BufferNeed]) -> impl Iterator<Item = (u32, &BufferNeed, DeviceLayout)> {
    (0u32..)
        .zip(needs.iter().filter_map(|n| match n.need {
            Need::Device(d) => Some((n, d)),
            _ => None,
        }))
        .map(|(arg, (n, d))| (arg, n, d))
}

/// Notes in each buffer this launch converts which kernel argument converted it, so that what
/// becomes of it is learnt (`habits`).
fn mark_converted_by(kernel: Option<&Arc<str>>, needs: &[BufferNeed]) {
    let Some(kernel) = kernel else { return };
    for (arg, n, _) in device_needs(needs) {
        if let Some(b) = registry::get().buffers.get(registry::key(n.mem)) {
            note_converter(&mut b.state.lock(), kernel, arg);
        }
    }
}

/// The buffer, if this launch converts it, was converted by `kernel`'s argument `arg`.
fn note_converter(st: &mut BufferState, kernel: &Arc<str>, arg: u32) {
    if !matches!(st.current, Current::Device(_)) {
        st.converted_by = Some(habits::ConvertedBy { kernel: kernel.clone(), arg });
    }
}

/// Keeps a launch's measured time (or counts that it could not be timed).
fn record(name: &str, plan: &TransparentPlan, needs: &[BufferNeed], ran: Variant, ns: Option<f64>) {
    let mut model = plan.kernel.model.lock();
    let Some(ns) = ns else {
        model.untimed += 1;
        return;
    };
    let m = structures(needs).unwrap_or(1.0);
    model.times.record(ran, ns / m);
    crate::stats::kernel_time(name, ran, ns);
    if let Some(key) = &model.disk_key {
        crate::diskcache::put_json("times", key, &model.times);
    }
}

/// The application's kernel, every buffer in host layout: the path that is always correct.
unsafe fn as_written(
    queue: cl_command_queue,
    kernel: cl_kernel,
    needs: &[BufferNeed],
    user: &[cl_event],
    enqueue: &impl Enqueue,
) -> cl_int {
    let host = host_needs(needs);
    match crate::guard("launch conversions", || access::prepare(queue, &host, user)) {
        Some(Ok(w)) => enqueue(kernel, None, w.len(), w.ptr()),
        Some(Err(e)) => e,
        None => CL_OUT_OF_RESOURCES,
    }
}

/// `needs` with every buffer in its host layout.
fn host_needs(needs: &[BufferNeed]) -> Vec<BufferNeed> {
    needs
        .iter()
        .map(|n| BufferNeed {
            mem: n.mem,
            need: if matches!(n.need, Need::Device(_)) { Need::Host } else { n.need },
            must: false,
        })
        .collect()
}

/// Why the ASTA copy cannot run this launch, decided before converting anything, so that one
/// unconvertible buffer does not cost the others a round trip.
fn asta_blocker(needs: &[BufferNeed]) -> Option<String> {
    for n in needs.iter().filter(|n| matches!(n.need, Need::Device(_))) {
        let Some(b) = registry::get().buffers.get(registry::key(n.mem)) else {
            return Some("a buffer argument is not one clayout knows".into());
        };
        if b.flags & CL_MEM_USE_HOST_PTR != 0 {
            return Some(
                "a buffer was created with CL_MEM_USE_HOST_PTR, whose host memory the application may read directly"
                    .into(),
            );
        }
        if let Need::Device(d) = n.need {
            if d.shape.m.saturating_mul(d.shape.s as u64) > u32::MAX as u64 {
                return Some(format!(
                    "a buffer holds {} structures of {} words, past the copy's 32-bit index arithmetic",
                    d.shape.m, d.shape.s
                ));
            }
        }
        let refused = super::convert::stays_host(&b, &b.state.lock());
        if let Some(why) = refused {
            return Some(format!("a buffer stays in host layout: {why}"));
        }
    }
    access::conflicting(needs)
}

/// Converts the buffers and enqueues the copy; Err says why the kernel as written must run
/// instead (the buffers may then be in ASTA: `as_written` brings them back).
unsafe fn try_copy(
    queue: cl_command_queue,
    info: &KernelInfo,
    plan: &TransparentPlan,
    needs: &[BufferNeed],
    user: &[cl_event],
    enqueue: &impl Enqueue,
) -> Result<cl_int, String> {
    if let Some(why) = asta_blocker(needs) {
        return Err(why);
    }
    let (private, args) = copy_with_args(&info.private, info, plan, &plan.kernel.private_name)?;
    let m_of = |_: &str, mem: usize| {
        needs.iter().find_map(|n| match n.need {
            Need::Device(d) if registry::key(n.mem) == mem => Some(d.shape.m),
            _ => None,
        })
    };
    enqueue_copy(queue, private, &args, plan, needs, user, (&plan.kernel.extra_args, m_of), None, "rewritten", enqueue)
}

/// The kernel object of a copy (created at its first launch, in `cell`) and the application's
/// arguments, every one of them set.
fn copy_with_args<'a>(
    cell: &'a OnceCell<Result<PrivateKernel, String>>,
    info: &KernelInfo,
    plan: &TransparentPlan,
    name: &str,
) -> Result<(&'a PrivateKernel, Vec<Option<ArgValue>>), String> {
    let private = cell.get_or_init(|| create_private(info, plan, name)).as_ref().map_err(|e| e.clone())?;
    let args = info.args.lock().clone();
    if args.iter().any(Option::is_none) {
        return Err("not every argument is set".into());
    }
    Ok((private, args))
}

/// Brings the buffers to `needs`, gives copy `private` the application's arguments and its
/// extra ones (`extra`: the extra arguments and the structure count of each buffer), and
/// enqueues it with work-group size `local` (None: the application's). `what` names the copy
/// in the reasons.
#[allow(clippy::too_many_arguments)]
unsafe fn enqueue_copy(
    queue: cl_command_queue,
    private: &PrivateKernel,
    args: &[Option<ArgValue>],
    plan: &TransparentPlan,
    needs: &[BufferNeed],
    user: &[cl_event],
    extra: (&[ExtraArg], impl Fn(&str, usize) -> Option<u64>),
    local: Option<usize>,
    what: &str,
    enqueue: &impl Enqueue,
) -> Result<cl_int, String> {
    let wait: WaitList = access::try_prepare(queue, needs, user).map_err(|f| f.reason)?;
    let mut set = private.args.lock();
    set_args(private.handle as cl_kernel, &mut set, args, plan, extra.0, extra.1)?;
    if crate::fault::inject("kernel") {
        return Err(format!("injected failure of the {what} kernel's launch"));
    }
    let r = enqueue(private.handle as cl_kernel, local, wait.len(), wait.ptr());
    if r != CL_SUCCESS {
        return Err(format!("the {what} copy could not be enqueued ({r})"));
    }
    Ok(r)
}

/// The work-group size the staged copy runs this launch with, if it can run it: a 1-D launch
/// whose global size fits the copy's index variables, with the application's work-group size
/// if it gave one the staged slices fit, else the largest power of two they fit that divides
/// the global size.
fn staged_local(plan: &TransparentPlan, dims: &Dims) -> Option<usize> {
    plan.kernel.staged.as_ref()?;
    let cap = plan.program.stage_wg as u64;
    if dims.task || dims.global.len() != 1 || cap == 0 || dims.global[0] > i32::MAX as u64 {
        return None;
    }
    let local = match &dims.local {
        Some(l) => l[0],
        None => (0..=cap.ilog2()).rev().map(|k| 1u64 << k).find(|l| dims.global[0] % l == 0)?,
    };
    (local <= cap && local as usize >= STAGE_WG_MIN).then_some(local as usize)
}

/// Enqueues the staged copy with the buffers in host layout; Err says why the kernel as
/// written must run instead.
unsafe fn try_staged(
    queue: cl_command_queue,
    info: &KernelInfo,
    plan: &TransparentPlan,
    needs: &[BufferNeed],
    user: &[cl_event],
    local: usize,
    enqueue: &impl Enqueue,
) -> Result<cl_int, String> {
    let copy = plan.kernel.staged.as_ref().ok_or("no staged copy")?;
    let (private, args) = copy_with_args(&info.staged, info, plan, &copy.private_name)?;
    // The write-back of a staged slice would overwrite what the kernel wrote to the same bytes
    // through another argument.
    let whose = |h: usize| super::convert::whose_bytes(h as cl_mem).map_or(h, |(w, _)| w);
    let mems: Vec<(usize, usize)> = args
        .iter()
        .enumerate()
        .filter_map(|(i, a)| match a {
            Some(ArgValue::Mem(h)) if *h != 0 => Some((i, whose(*h))),
            _ => None,
        })
        .collect();
    for &i in plan.kernel.indices.values() {
        if let Some(&(_, b)) = mems.iter().find(|(j, _)| *j == i) {
            if mems.iter().any(|&(j, c)| j != i && c == b) {
                return Err("a staged buffer is also passed for another argument".into());
            }
        }
    }
    // Its slice offsets are word indices in the copy's 32-bit index arithmetic.
    for (param, &i) in &plan.kernel.indices {
        let (Some(Some(ArgValue::Mem(h))), Some(l)) = (args.get(i), plan.kernel.layouts.get(param)) else { continue };
        if registry::get().buffers.get(*h).is_some_and(|b| b.size as u64 / l.word_bytes.max(1) as u64 > u32::MAX as u64)
        {
            return Err(format!("{param} holds 2^32 words or more, past the copy's 32-bit index arithmetic"));
        }
    }
    // The copy's slices may cover whole buffers: their layout never changes, so the extent
    // does not matter, and a work-item the annotation's extent leaves out still finds its
    // structure where the kernel as written would.
    let m_of = |param: &str, mem: usize| {
        let l = plan.kernel.layouts.get(param)?;
        let b = registry::get().buffers.get(mem)?;
        Some(b.size as u64 / (l.words as u64 * l.word_bytes as u64).max(1))
    };
    enqueue_copy(
        queue,
        private,
        &args,
        plan,
        &host_needs(needs),
        user,
        (&copy.extra_args, m_of),
        Some(local),
        "staged",
        enqueue,
    )
}

fn create_private(info: &KernelInfo, plan: &TransparentPlan, private_name: &str) -> Result<PrivateKernel, String> {
    if crate::fault::inject("kernel") {
        return Err("injected failure of the rewritten kernel's creation".into());
    }
    let name = CString::new(private_name).map_err(|_| "bad kernel name")?;
    let mut err = CL_SUCCESS;
    let k = unsafe { api().clCreateKernel(plan.program.program.0, name.as_ptr(), &mut err) };
    if k.is_null() {
        return Err(format!("the rewritten copy of {} could not be created ({err})", info.name));
    }
    Ok(PrivateKernel { handle: k as usize, _program: plan.program.clone(), args: Mutex::new(Vec::new()) })
}

/// Gives the copy the application's arguments (only those that changed since its last launch)
/// and M of each rewritten buffer.
/// `m_of(param, buffer)` gives the structure count passed for a rewritten parameter.
fn set_args(
    k: cl_kernel,
    set: &mut Vec<Option<ArgValue>>,
    args: &[Option<ArgValue>],
    plan: &TransparentPlan,
    extra: &[ExtraArg],
    m_of: impl Fn(&str, usize) -> Option<u64>,
) -> Result<(), String> {
    let mut want: Vec<Option<ArgValue>> = args.to_vec();
    for e in extra {
        let index = want.len().max(e.index + 1);
        want.resize(index, None);
        let mem = match plan.kernel.indices.get(&e.param).and_then(|&i| args.get(i)) {
            Some(Some(ArgValue::Mem(h))) => *h,
            _ => return Err(format!("{} is not a buffer argument", e.param)),
        };
        let m = m_of(&e.param, mem).ok_or_else(|| format!("no extent for {}", e.param))?;
        want[e.index] = Some(ArgValue::Bytes(m.to_ne_bytes().to_vec()));
    }
    set.resize(want.len(), None);
    for (i, v) in want.iter().enumerate() {
        if set[i] == *v {
            continue;
        }
        let Some(v) = v else { return Err(format!("argument {i} of the copy is not set")) };
        let (size, ptr): (usize, *const c_void) = match v {
            ArgValue::Mem(h) => (std::mem::size_of::<cl_mem>(), h as *const usize as *const c_void),
            ArgValue::Local(n) => (*n, std::ptr::null()),
            ArgValue::Bytes(b) => (b.len(), b.as_ptr() as *const c_void),
        };
        let r = unsafe { api().clSetKernelArg(k, i as cl_uint, size, ptr) };
        if r != CL_SUCCESS {
            set.clear();
            return Err(format!("argument {i} of the rewritten copy was refused ({r})"));
        }
        set[i] = Some(v.clone());
    }
    Ok(())
}
