//! The rewriter's part of the transparent mode: every kernel of a program annotated without a
//! device layout gets its ASTA copy (and, where it qualifies, its staged copy) in one source,
//! made when the program is created. Refusals are logged once, with their construct and line.

use super::super::cost::KernelModel;
use crate::annotation::KernelLayout;
use crate::layout::Layout;
use crate::rewrite::{self, ExtraArg, StructLayout};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// What the rewriter made of one program when it was created.
#[derive(Debug)]
pub struct Rewritten {
    /// The application's source with the copy of every rewritten kernel inserted.
    pub source: String,
    pub kernels: HashMap<String, Arc<RewrittenKernel>>,
}

#[derive(Debug)]
pub struct RewrittenKernel {
    pub private_name: String,
    /// The trailing `ulong` arguments of the copy: M of each rewritten buffer.
    pub extra_args: Vec<ExtraArg>,
    /// The layout the copy assumes for each rewritten parameter, by parameter name. These three
    /// are read at every launch, a few entries each: ordered maps compare a few short names where
    /// hash maps hashed each name with SipHash (about 170 instructions a lookup, six lookups a
    /// launch of a staged copy).
    pub layouts: BTreeMap<String, StructLayout>,
    /// Argument index of each rewritten parameter, by name.
    pub indices: BTreeMap<String, usize>,
    /// The host layout of each rewritten parameter, by name.
    pub hosts: BTreeMap<String, Layout>,
    /// The kernel, or a function it calls, computes with floating-point values
    /// (`clc::floating`): its results may depend on where the compiler fuses operations.
    pub floating: bool,
    /// `floating` kept a launch from its ASTA copy, and that was said (transparent::launch).
    pub rounding_noted: std::sync::atomic::AtomicBool,
    /// What the cost model knows of this kernel.
    pub model: Mutex<KernelModel>,
    /// The copy that stages its buffers through local memory, when the kernel touches only
    /// its own structures.
    pub staged: Option<StagedCopy>,
    /// The parameters the kernel provably overwrites before reading them (`rewrite::overwritten`).
    pub overwritten: Vec<rewrite::Overwrite>,
    /// Its next launch may be enqueued before clayout's launch path looks at it
    /// (runtime::speculate): set when its copies are ready under `auto` and the last run's first
    /// launch of it ran as written; taken by the first launch after (the run's first, unless
    /// launches ran as written while the copies were loaded).
    pub speculate: std::sync::atomic::AtomicBool,
    /// The forms (a bit per `Variant`) launched in this process so far: a form's first launch is
    /// timed on the host for the statistics (`first_enqueue_us`), the others are not.
    pub launched_forms: std::sync::atomic::AtomicU8,
}

#[derive(Debug)]
pub struct StagedCopy {
    pub private_name: String,
    /// The trailing `ulong` arguments of the copy: the structures in each staged buffer.
    pub extra_args: Vec<ExtraArg>,
    /// Local memory each work-item needs, in bytes (S*w summed over the staged buffers).
    pub bytes_per_item: u64,
    /// The program observes its work-groups (their sizes, ids, barriers, local memory): then
    /// the copy, which picks a work-group size of its own when the application gives none,
    /// would see other values than the kernel as written.
    pub observes_groups: bool,
}

/// Rewrites every kernel of `source` annotated without a device layout, one after the other
/// into one source. None when the mode is off or nothing could be rewritten. Each refusal is
/// logged once with its construct and line, and counted.
pub fn rewrite_program(source: &str, kernels: &HashMap<String, Result<KernelLayout, String>>) -> Option<Rewritten> {
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
                let overwritten = rewrite::overwritten(source, &req);
                current = out.source;
                let staged = stage(&current, source, &req).map(|(source, copy)| {
                    current = source;
                    copy
                });
                super::super::suggest::verdict(name, Ok(()));
                crate::stats::rewritten_kernel();
                crate::log::info_with(|| {
                    format!("kernel {name}: rewritten to ASTA addressing as {}", req.private_name)
                });
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
                        layouts: layouts.into_iter().collect(),
                        indices,
                        hosts,
                        floating: crate::clc::floating::uses_floating_point(source, name),
                        rounding_noted: Default::default(),
                        model: Mutex::new(KernelModel::default()),
                        staged,
                        overwritten,
                        speculate: Default::default(),
                        launched_forms: Default::default(),
                    }),
                );
            }
            Err(why) => {
                super::super::suggest::verdict(name, Err(format!("the rewriter refuses it: {why}")));
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
    Some(Rewritten { source: current, kernels: done })
}

/// Says, for every kernel that would have been rewritten, why none is: `why` holds for the
/// whole program. Counted as refusals, like the rewriter's own.
pub fn refuse_all(kernels: &HashMap<String, Result<KernelLayout, String>>, why: &str) {
    if !crate::config::get().rewrite {
        return;
    }
    let wanted = kernels.iter().filter(|(_, l)| l.as_ref().is_ok_and(|l| !l.marshals() && !l.params.is_empty()));
    for (name, _) in wanted {
        super::super::suggest::verdict(name, Err(format!("not rewritten: {why}")));
        crate::log::warn(&format!("kernel {name}: not rewritten ({why}); it runs as written, on host-layout buffers"));
        crate::stats::rewrite_refused();
        crate::stats::fallback(&format!("kernel {name}"), &format!("not rewritten: {why}"));
    }
}

/// The staged copy of a kernel the rewriter turned into an ASTA copy, if it qualifies (every
/// access of its buffers is to the work-item's own structure). A refusal costs nothing: the
/// kernel still has its other forms.
fn stage(current: &str, original: &str, req: &rewrite::RewriteRequest) -> Option<(String, StagedCopy)> {
    let mut req = req.clone();
    req.private_name = format!("{}__clayout_staged", req.kernel);
    match rewrite::stage_kernel(current, &req) {
        Ok(st) => {
            crate::log::info_with(|| format!("kernel {}: staged copy {}", req.kernel, req.private_name));
            let bytes_per_item = req.params.iter().map(|p| p.layout.words as u64 * p.layout.word_bytes as u64).sum();
            let observes_groups = observes_groups(original);
            Some((
                st.source,
                StagedCopy {
                    private_name: req.private_name,
                    extra_args: st.extra_args,
                    bytes_per_item,
                    observes_groups,
                },
            ))
        }
        Err(why) => {
            crate::log::info_with(|| format!("kernel {}: no staged copy ({why})", req.kernel));
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

/// Whether any code of `source` can tell the work-group size the launch runs with: the
/// work-group builtins, barriers, work-group and sub-group functions, local memory. Every
/// function counts, not only the kernel: helpers see the same geometry.
fn observes_groups(source: &str) -> bool {
    const BUILTINS: [&str; 8] = [
        "get_local_id",
        "get_local_size",
        "get_enqueued_local_size",
        "get_group_id",
        "get_num_groups",
        "get_local_linear_id",
        "barrier",
        "work_group_barrier",
    ];
    crate::clc::lex::lex(source).iter().filter(|t| t.kind == crate::clc::lex::TokenKind::Ident).any(|t| {
        let s = t.text(source);
        BUILTINS.contains(&s)
            || s.starts_with("work_group_")
            || s.starts_with("sub_group_")
            || s.starts_with("get_sub_group")
            || matches!(s, "__local" | "local")
    })
}

impl super::super::cost::pace::Paced for RewrittenKernel {
    fn model(&self) -> &parking_lot::Mutex<super::super::cost::KernelModel> {
        &self.model
    }
}
