//! What a program's annotations ask of the runtime: found when the program is created, the
//! tile macro added when it is built, and per kernel, at its first launch, a plan that says
//! which arguments go to which layout with which structure size.

use crate::annotation::{
    annotate_program, parse_side_file, DeviceLayout, Extent, HostLayout, KernelLayout, ScalarArg, SideEntry, TILE_MACRO,
};
use crate::layout::Layout;
use crate::registry::{self, KernelInfo, ProgramInfo};
use once_cell::sync::OnceCell;
use opencl_sys::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::Arc;

/// The annotations of one program created from source.
#[derive(Debug)]
pub struct ProgramDl {
    /// Annotated kernels by name: their checked layout, or why clayout leaves them alone.
    pub kernels: HashMap<String, Result<KernelLayout, String>>,
    /// The tile the program was built with (`-D CLAYOUT_TILE=T`), once built.
    pub tile: Mutex<Option<u32>>,
    /// Build options as clayout passed them (the application's plus the tile macro).
    pub options: Mutex<String>,
    /// Structure sizes the device compiler reported, by type name.
    sizes: Mutex<HashMap<String, u64>>,
    /// The transparent mode's copies of the kernels annotated without a device layout.
    pub rewrites: Option<super::transparent::Rewrites>,
}

impl ProgramDl {
    fn marshals(&self) -> bool {
        self.kernels.values().any(|k| k.as_ref().map(|l| l.marshals()).unwrap_or(false))
    }
}

/// The side file named by CLAYOUT_ANNOTATIONS, read once; bad lines are reported once.
fn side_entries() -> &'static [SideEntry] {
    static SIDE: OnceCell<Vec<SideEntry>> = OnceCell::new();
    SIDE.get_or_init(|| {
        let Some(path) = crate::config::get().annotations.clone() else { return Vec::new() };
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let (entries, errors) = parse_side_file(&text);
                for e in errors {
                    crate::log::warn(&format!("CLAYOUT_ANNOTATIONS={path}: {e}; that line is ignored"));
                    crate::stats::fallback(&format!("annotation file {path}"), &e.to_string());
                }
                entries
            }
            Err(e) => {
                crate::log::warn(&format!("CLAYOUT_ANNOTATIONS={path} cannot be read ({e}); no side-file annotations"));
                Vec::new()
            }
        }
    })
}

/// Reads the annotations of a program's source (and the side file). None when nothing in it
/// is annotated. Every annotation clayout cannot use is reported here, once.
pub fn discover(source: &str) -> Option<Arc<ProgramDl>> {
    let found = annotate_program(source, side_entries());
    if found.is_empty() {
        return None;
    }
    super::order::annotated_program_created();
    let mut kernels = HashMap::new();
    for a in found {
        let outcome = a.layout.map_err(|e| e.to_string());
        match (&a.kernel, &outcome) {
            (Some(k), Err(why)) => {
                crate::log::warn(&format!("kernel {k}: annotation not used ({why}); the kernel runs as written"));
                crate::stats::fallback(&format!("kernel {k}"), why);
            }
            (None, Err(why)) => {
                crate::log::warn(&format!("annotation not used ({why})"));
                crate::stats::fallback("annotation", why);
            }
            _ => {}
        }
        if let Some(k) = a.kernel {
            kernels.insert(k, outcome);
        }
    }
    let rewrites = super::transparent::rewrite_program(source, &kernels);
    Some(Arc::new(ProgramDl {
        kernels,
        tile: Mutex::new(None),
        options: Mutex::new(String::new()),
        sizes: Mutex::new(HashMap::new()),
        rewrites,
    }))
}

/// The build options to pass instead of the application's, when the program has kernels that
/// marshal: the application's plus `-D CLAYOUT_TILE=T`, unless it defines that itself.
pub fn build_options(info: &ProgramInfo, options: Option<&str>, device: Option<cl_device_id>) -> Option<CString> {
    let dl = info.dl.as_ref()?;
    if !dl.marshals() {
        return None;
    }
    let (tile, opts) = with_tile(options.unwrap_or(""), device, None);
    *dl.tile.lock() = Some(tile);
    *dl.options.lock() = opts.clone();
    CString::new(opts).ok()
}

/// The tile a program built with the application's `options` uses, and the options that
/// define it: the application's own `-D CLAYOUT_TILE=T`, else CLAYOUT_TILE, else the device's.
pub fn with_tile(options: &str, device: Option<cl_device_id>, searched: Option<u32>) -> (u32, String) {
    match user_tile(options) {
        Some(t) => (t, options.to_string()),
        None => {
            let t = match (crate::config::get().tile.0, searched) {
                (Some(t), _) | (None, Some(t)) => t,
                (None, None) => device.map(crate::marshal::default_tile).unwrap_or(32),
            };
            (t, format!("{options} -D {TILE_MACRO}={t}"))
        }
    }
}

/// The tile the build options or CLAYOUT_TILE fix, if they do (then no tile is searched).
pub fn fixed_tile(options: &str) -> Option<u32> {
    user_tile(options).or(crate::config::get().tile.0)
}

fn user_tile(options: &str) -> Option<u32> {
    let at = options.find(&format!("{TILE_MACRO}="))? + TILE_MACRO.len() + 1;
    options[at..].split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// Right after a successful build: probes the structure sizes of the kernels written for a
/// device layout and builds their conversion kernels, so that none of that lands inside the
/// application's first (often timed) launch. Failures are left for the launch to report.
pub fn prepare_after_build(program: &ProgramInfo) {
    let Some(dl) = program.dl.as_ref() else { return };
    if let Some(rw) = dl.rewrites.as_ref() {
        let _ = rw.private(program);
    }
    if !dl.marshals() {
        return;
    }
    let Ok(device) = first_device(program) else { return };
    for layout in dl.kernels.values().filter_map(|k| k.as_ref().ok()).filter(|l| l.marshals()) {
        let Ok(plan) = plan_layout(program, dl, layout) else { continue };
        for p in &plan.params {
            if let Layout::Asta { t } = p.device {
                let _ = crate::marshal::prepare(program.context as cl_context, device, p.words, t, p.word_bytes);
            }
        }
    }
}

/// One buffer argument the kernel needs in a device layout.
#[derive(Debug, Clone)]
pub struct ParamPlan {
    pub index: usize,
    pub name: String,
    pub host: Layout,
    pub device: Layout,
    /// Words per structure and bytes per word.
    pub words: u32,
    pub word_bytes: u32,
    pub struct_bytes: u64,
    pub extent: Extent,
    /// The kernel is written for the device layout: it cannot run on host-layout data.
    pub must: bool,
}

#[derive(Debug)]
pub struct KernelPlan {
    pub params: Vec<ParamPlan>,
    pub scalars: Vec<ScalarArg>,
    /// A rewritten kernel: which copy to run when its buffers are in ASTA.
    pub transparent: Option<super::transparent::TransparentPlan>,
}

/// `Ok(None)`: the kernel needs nothing converted. `Err`: it is written for a device layout but
/// clayout cannot give it one, so it cannot run correctly.
pub type PlanResult = Result<Option<Arc<KernelPlan>>, String>;

impl KernelInfo {
    /// The kernel's plan, worked out at its first launch.
    pub fn plan(&self) -> PlanResult {
        self.plan.get_or_init(|| make_plan(self)).clone()
    }
}

fn make_plan(k: &KernelInfo) -> PlanResult {
    let Some(program) = k.program_info.as_ref() else { return Ok(None) };
    let Some(dl) = program.dl.as_ref() else { return Ok(None) };
    let layout = match dl.kernels.get(&k.name) {
        Some(Ok(layout)) => layout,
        Some(Err(why)) if crate::config::get().strict => {
            return Err(format!("CLAYOUT_STRICT=1 and its annotation is not usable ({why})"))
        }
        _ => return Ok(None),
    };
    if !layout.marshals() {
        // Written for the host layout: its rewritten copy, if the transparent mode made one,
        // else the kernel as written.
        let Some((rewrites, rewritten)) = dl.rewrites.as_ref().and_then(|r| Some((r, r.kernels.get(&k.name)?))) else {
            return Ok(None);
        };
        return match super::transparent::plan(program, rewrites, rewritten, layout) {
            Ok(p) => Ok(Some(Arc::new(p))),
            Err(why) => {
                crate::log::warn(&format!(
                    "kernel {}: its rewritten copy cannot be used ({why}); it runs as written",
                    k.name
                ));
                crate::stats::fallback(&format!("kernel {}", k.name), &why);
                Ok(None)
            }
        };
    }
    let plan = plan_layout(program, dl, layout).map_err(|why| format!("cannot prepare its annotated buffers: {why}"));
    match &plan {
        Ok(p) => crate::log::info(&format!(
            "kernel {}: {} buffer(s) in device layout: {}",
            k.name,
            p.params.len(),
            p.params
                .iter()
                .map(|q| format!("{} {:?}->{:?} S={} w={}", q.name, q.host, q.device, q.words, q.word_bytes))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Err(why) => crate::log::warn(&format!("kernel {}: {why}", k.name)),
    }
    plan.map(|p| Some(Arc::new(p)))
}

fn plan_layout(program: &ProgramInfo, dl: &ProgramDl, layout: &KernelLayout) -> Result<KernelPlan, String> {
    let mut params = Vec::new();
    for p in layout.params.iter() {
        let Some(device) = &p.device else { continue };
        let tile = match device {
            DeviceLayout::Asta { tile: Some(t) } => *t,
            _ => dl.tile.lock().ok_or("the program was not built through clayout, so its tile is unknown")?,
        };
        let (s, word) = match (p.s, p.word) {
            (Some(s), Some(w)) => (s, w),
            _ => {
                let w = match p.word {
                    Some(w) => w,
                    None => crate::clc::structs::word_size(&program.source(), &p.elem_type)
                        .map_err(|e| format!("{}: {e}", p.name))?,
                };
                let size = struct_size(program, dl, &p.elem_type)?;
                if size == 0 || size % w as u64 != 0 {
                    return Err(format!(
                        "{}: sizeof({}) = {size} is not a whole number of {w}-byte words",
                        p.name, p.elem_type
                    ));
                }
                ((size / w as u64) as u32, w)
            }
        };
        if word != 4 && word != 8 {
            return Err(format!("{}: words of {word} bytes are not supported (4 or 8)", p.name));
        }
        let host = match p.host {
            HostLayout::AoS { .. } => Layout::Aos,
            HostLayout::SoA { .. } => Layout::Soa,
        };
        params.push(ParamPlan {
            index: p.arg_index as usize,
            name: p.name.clone(),
            host,
            device: Layout::Asta { t: tile },
            words: s,
            word_bytes: word,
            struct_bytes: s as u64 * word as u64,
            extent: p.extent.clone(),
            must: true,
        });
    }
    Ok(KernelPlan { params, scalars: layout.scalar_args.clone(), transparent: None })
}

/// `sizeof(type_name)` as the device compiler sees it, from a probe kernel built with the
/// program's own source and options (so macros, typedefs, includes and packing count).
fn struct_size(program: &ProgramInfo, dl: &ProgramDl, type_name: &str) -> Result<u64, String> {
    if let Some(s) = dl.sizes.lock().get(type_name) {
        return Ok(*s);
    }
    let size = probe_size(program, &dl.options.lock().clone(), type_name)?;
    dl.sizes.lock().insert(type_name.to_string(), size);
    Ok(size)
}

fn probe_size(program: &ProgramInfo, options: &str, type_name: &str) -> Result<u64, String> {
    let ctx = program.context as cl_context;
    let device = first_device(program)?;
    let src = format!(
        "{}\n__kernel void clayout_probe_sizeof(__global ulong *out) {{ out[0] = sizeof({type_name}); }}\n",
        program.source()
    );
    let built = super::probe::build(ctx, device, &src, options, "probe")
        .map_err(|e| format!("probe of sizeof({type_name}): {e}"))?;
    let v = super::probe::run(ctx, device, built.0, "clayout_probe_sizeof", 1)?;
    Ok(v[0])
}

/// The first device of the program's context: where clayout's probes run.
pub fn first_device(program: &ProgramInfo) -> Result<cl_device_id, String> {
    registry::get()
        .contexts
        .get(program.context)
        .and_then(|c| c.devices.first().map(|d| *d as cl_device_id))
        .ok_or_else(|| "the program's context is unknown".to_string())
}
