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

#[derive(Debug, serde::Serialize, serde::Deserialize)]
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
    #[serde(skip)]
    pub rounding_noted: std::sync::atomic::AtomicBool,
    /// What the cost model knows of this kernel.
    #[serde(skip)]
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
    #[serde(skip)]
    pub speculate: std::sync::atomic::AtomicBool,
    /// The forms (a bit per `Variant`) launched in this process so far: a form's first launch is
    /// timed on the host for the statistics (`first_enqueue_us`), the others are not.
    #[serde(skip)]
    pub launched_forms: std::sync::atomic::AtomicU8,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
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
/// logged once with its construct and line, and counted. What the rewriter makes of a program
/// depends only on its text, the annotations and clayout's own code: it is kept in clayout's
/// cache, where a program's next runs find it instead of rewriting it again (on the H100's host
/// 4-6 ms for the particles sample, longer than the driver's build of it from its cache).
pub fn rewrite_program(source: &str, kernels: &HashMap<String, Result<KernelLayout, String>>) -> Option<Rewritten> {
    if !crate::config::get().rewrite {
        return None;
    }
    let wanted: BTreeMap<&String, &KernelLayout> = kernels
        .iter()
        .filter_map(|(k, l)| Some((k, l.as_ref().ok()?)))
        .filter(|(_, l)| !l.marshals() && !l.params.is_empty())
        .collect();
    if wanted.is_empty() {
        return None;
    }
    let asked = format!("{wanted:?}");
    let key = format!(
        "{}|{:016x}|{:016x}",
        env!("CLAYOUT_SOURCE_HASH"),
        crate::cache::disk::fnv1a(source.as_bytes()),
        crate::cache::disk::fnv1a(asked.as_bytes())
    );
    // The record names what it was made from in full: a hash that collides cannot hand a
    // program another's copies.
    let kept = crate::cache::disk::get_json::<Made>(RECORD, &key).filter(|m| m.from == source && m.asked == asked);
    let made = match kept {
        Some(made) => {
            crate::log::debug("the rewritten copies from clayout's cache: the program was rewritten before");
            made
        }
        None => {
            let made = make(source, &wanted, asked);
            // Its JSON made here, on a miss only; the file is written off this thread.
            crate::cache::disk::put_json(RECORD, &key, &made);
            made
        }
    };
    report(&made.kernels);
    let done: HashMap<String, Arc<RewrittenKernel>> = made
        .kernels
        .into_iter()
        .filter_map(|(name, outcome)| match outcome {
            Outcome::Rewritten { kernel, .. } => Some((name, Arc::from(kernel))),
            Outcome::Refused(_) => None,
        })
        .collect();
    if done.is_empty() {
        return None;
    }
    dump(&made.source, done.keys());
    Some(Rewritten { source: made.source, kernels: done })
}

/// The kind of clayout's cache records that keep the rewriter's output.
const RECORD: &str = "rewritten";

/// What the rewriter made of one program, as clayout's cache keeps it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Made {
    /// The program's text, and the annotations asked for (their debug form).
    from: String,
    asked: String,
    /// The text with every copy inserted.
    source: String,
    /// Every kernel asked for, in order.
    kernels: Vec<(String, Outcome)>,
}

#[derive(serde::Serialize, serde::Deserialize)]
enum Outcome {
    /// Its copies; `unstaged`: why it has no staged copy, if it has none.
    Rewritten { kernel: Box<RewrittenKernel>, unstaged: Option<String> },
    /// Why the rewriter refused it.
    Refused(String),
}

/// The rewriter's work on `source`, said nowhere yet (`report`). The program is read once,
/// every copy is made from it, and the copies go in at the end, each where it would have gone
/// had it been made in the program with the copies before it (the text is the same).
fn make(source: &str, wanted: &BTreeMap<&String, &KernelLayout>, asked: String) -> Made {
    let read = rewrite::Source::new(source);
    let mut insertions = Vec::new();
    let mut kernels = Vec::new();
    for (name, layout) in wanted {
        let outcome =
            rewrite::request(source, layout).and_then(|(req, layouts)| match rewrite::rewrite_kernel_in(&read, &req) {
                Ok(out) => Ok((out, req, layouts)),
                Err(refusal) => Err(refusal.to_string()),
            });
        let outcome = match outcome {
            Ok((out, req, layouts)) => {
                let overwritten = rewrite::overwritten(source, &req);
                insertions.push(out.insertion);
                let (staged, unstaged) = match stage(&read, source, &req) {
                    Ok((insertion, copy)) => {
                        insertions.push(insertion);
                        (Some(copy), None)
                    }
                    Err(why) => (None, Some(why)),
                };
                let indices = req.params.iter().map(|p| (p.name.clone(), p.index)).collect();
                let hosts = layout
                    .params
                    .iter()
                    .map(|p| (p.name.clone(), if p.host.is_aos() { Layout::Aos } else { Layout::Soa }))
                    .collect();
                let kernel = Box::new(RewrittenKernel {
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
                });
                Outcome::Rewritten { kernel, unstaged }
            }
            Err(why) => Outcome::Refused(why),
        };
        kernels.push(((*name).clone(), outcome));
    }
    // The kernels as written are left out of it (`rewrite::unlaunched_kernels`): clayout
    // launches only the copies from this program, and the driver would compile and load them all.
    let cuts = rewrite::unlaunched_kernels(&read, &insertions);
    Made { from: source.to_string(), asked, source: rewrite::splice_cutting(source, &insertions, &cuts), kernels }
}

/// Says what the rewriter made of each kernel, whether it just did or its cache kept it: the
/// same lines, verdicts and counts either way.
fn report(kernels: &[(String, Outcome)]) {
    for (name, outcome) in kernels {
        match outcome {
            Outcome::Rewritten { kernel, unstaged } => {
                match (&kernel.staged, unstaged) {
                    (Some(st), _) => {
                        crate::log::info_with(|| format!("kernel {name}: staged copy {}", st.private_name))
                    }
                    (None, Some(why)) => crate::log::info_with(|| format!("kernel {name}: no staged copy ({why})")),
                    (None, None) => {}
                }
                super::super::suggest::verdict(name, Ok(()));
                crate::stats::rewritten_kernel();
                crate::log::info_with(|| {
                    format!("kernel {name}: rewritten to ASTA addressing as {}", kernel.private_name)
                });
            }
            Outcome::Refused(why) => {
                super::super::suggest::verdict(name, Err(format!("the rewriter refuses it: {why}")));
                crate::log::warn(&format!(
                    "kernel {name}: not rewritten ({why}); it runs as written, on host-layout buffers"
                ));
                crate::stats::rewrite_refused();
                crate::stats::fallback(&format!("kernel {name}"), &format!("not rewritten: {why}"));
            }
        }
    }
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
/// access of its buffers is to the work-item's own structure), or why it does not. A refusal
/// costs nothing: the kernel still has its other forms.
fn stage(
    read: &rewrite::Source,
    original: &str,
    req: &rewrite::RewriteRequest,
) -> Result<(rewrite::Insertion, StagedCopy), String> {
    let mut req = req.clone();
    req.private_name = format!("{}__clayout_staged", req.kernel);
    let st = rewrite::stage_kernel_in(read, &req).map_err(|why| why.to_string())?;
    let bytes_per_item = req.params.iter().map(|p| p.layout.words as u64 * p.layout.word_bytes as u64).sum();
    let observes_groups = observes_groups(original);
    Ok((
        st.insertion,
        StagedCopy { private_name: req.private_name, extra_args: st.extra_args, bytes_per_item, observes_groups },
    ))
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
