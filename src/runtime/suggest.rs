//! `CLAYOUT_SUGGEST=FILE` (`clayout-run --suggest FILE`): the annotations inferred for each
//! kernel, gathered while the program runs and appended to FILE at exit as a side file, each
//! kernel's lines under a comment that says whether the rewriter accepts it, its measured time
//! as written and the gain the cost model expects. Only what was measured is said: a kernel
//! never launched, or never timed, says so.

use crate::annotation::KernelInference;
use once_cell::sync::Lazy;
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};

/// Launches of a kernel timed as written; the first may carry one-time costs (a compiler that
/// builds at first launch), so the fastest is reported.
const TIMED: usize = 4;

#[derive(Debug)]
struct Entry {
    inference: KernelInference,
    verdict: Option<Result<(), String>>,
    /// The values each stride parameter had at the kernel's launches.
    strides: BTreeMap<String, BTreeSet<u64>>,
    times_ns: Vec<f64>,
    /// The cost model's times per structure (as written, ASTA) from earlier runs, if any.
    model: Option<(Option<f64>, Option<f64>)>,
}

/// Kernels in the order they were first proposed; the first program's proposal for a kernel
/// name is the one kept.
static ENTRIES: Lazy<Mutex<Vec<Entry>>> = Lazy::new(Default::default);

pub fn active() -> bool {
    crate::config::get().suggest.is_some()
}

fn with(kernel: &str, f: impl FnOnce(&mut Entry)) {
    if let Some(e) = ENTRIES.lock().iter_mut().find(|e| e.inference.kernel == kernel) {
        f(e);
    }
}

/// What the inference proposed for one kernel of a program being built.
pub fn proposed(inference: &KernelInference) {
    if !active() {
        return;
    }
    let mut all = ENTRIES.lock();
    if all.iter().all(|e| e.inference.kernel != inference.kernel) {
        all.push(Entry {
            inference: inference.clone(),
            verdict: None,
            strides: BTreeMap::new(),
            times_ns: Vec::new(),
            model: None,
        });
    }
}

/// Whether the kernel can use its annotation: rewritten (Ok), or why not.
pub fn verdict(kernel: &str, outcome: Result<(), String>) {
    if active() {
        with(kernel, |e| e.verdict = Some(outcome));
    }
}

/// The value stride parameter `param` had at a launch.
pub fn stride_seen(kernel: &str, param: &str, value: u64) {
    if active() {
        with(kernel, |e| {
            e.strides.entry(param.to_string()).or_default().insert(value);
        });
    }
}

/// Whether the next launch of `kernel` is to be timed.
pub fn wants_time(kernel: &str) -> bool {
    let mut want = false;
    if active() {
        with(kernel, |e| want = e.times_ns.len() < TIMED);
    }
    want
}

pub fn timed(kernel: &str, ns: f64) {
    with(kernel, |e| e.times_ns.push(ns));
}

/// The cost model's times per structure for the kernel, as it found them on disk.
pub fn model_times(kernel: &str, written: Option<f64>, asta: Option<f64>) {
    if active() {
        with(kernel, |e| e.model = Some((written, asta)));
    }
}

/// The text appended to the file: a header, then per kernel its comments and lines.
fn render() -> String {
    let all = ENTRIES.lock();
    let mut s = format!(
        "# clayout --suggest: {} kernel(s) with inferred annotations (pid {})\n",
        all.len(),
        std::process::id()
    );
    for e in all.iter() {
        s.push_str(&render_one(e));
    }
    s
}

fn render_one(e: &Entry) -> String {
    let k = &e.inference.kernel;
    let mut s = format!("\n# {k}: ");
    s.push_str(&match &e.verdict {
        Some(Ok(())) => "the rewriter accepts it".to_string(),
        Some(Err(why)) => format!("not usable: {why}"),
        None if e.inference.waits_for_launch() && e.strides.is_empty() => {
            "never launched, so its stride is not known and the rewriter was not asked".to_string()
        }
        None => {
            "the rewriter was not asked (CLAYOUT_REWRITE=0, or the program's preprocessing was not certain)".to_string()
        }
    });
    s.push('\n');
    s.push_str(&format!("#   as written: {}\n", time_text(&e.times_ns)));
    s.push_str(&format!("#   expected gain: {}\n", gain_text(e.model)));
    for p in &e.inference.proposals {
        s.push_str(&format!("#   {}: extent from {}\n", p.param, p.extent_from));
    }
    let value = |name: &str| {
        let seen = e.strides.get(name)?;
        (seen.len() == 1).then(|| *seen.iter().next().unwrap_or(&0))
    };
    match e.inference.lines(&value) {
        Ok(lines) if !matches!(e.verdict, Some(Err(_))) => {
            for l in lines {
                s.push_str(&l);
                s.push('\n');
            }
        }
        Ok(lines) => {
            // The runtime could not use it as it stands: kept as a comment to edit by hand.
            for l in lines {
                s.push_str(&format!("# {l}\n"));
            }
        }
        Err(why) => {
            let seen: Vec<String> =
                e.strides.iter().map(|(p, v)| format!("{p} = {}", join(v.iter().map(u64::to_string)))).collect();
            let had = if seen.is_empty() { String::new() } else { format!(" (launches had {})", seen.join("; ")) };
            s.push_str(&format!("#   no line: {why}, and no single value was seen{had}\n"));
        }
    }
    s
}

fn join(it: impl Iterator<Item = String>) -> String {
    it.collect::<Vec<_>>().join(", ")
}

fn time_text(ns: &[f64]) -> String {
    match ns.iter().copied().reduce(f64::min) {
        Some(best) => format!("{:.3} ms (fastest of {} timed launches)", best / 1e6, ns.len()),
        None => "not measured (clayout times only launches of kernels it rewrote)".to_string(),
    }
}

fn gain_text(model: Option<(Option<f64>, Option<f64>)>) -> String {
    match model {
        Some((Some(w), Some(a))) if a > 0.0 => format!(
            "{:.2}x for the kernel alone, conversions not counted (the cost model's times per structure from earlier runs on this device: {w:.3} ns as written, {a:.3} ns in ASTA)",
            w / a
        ),
        _ => "not known: no ASTA time measured on this device yet (under CLAYOUT_ANNOTATIONS=auto the cost model times both forms and keeps the faster)".to_string(),
    }
}

/// Appends the suggestions to the file CLAYOUT_SUGGEST names; at exit.
pub fn write_at_exit() {
    let Some(path) = crate::config::get().suggest.clone() else { return };
    use std::io::Write;
    let text = render();
    let r = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = r {
        crate::log::warn(&format!("CLAYOUT_SUGGEST={path} cannot be written ({e})"));
    }
}
