//! The layering of docs/architecture.md, checked: every `crate::` and `super::` path in src/
//! must point to a module of the same layer or a lower one, and no modules may import each
//! other in a loop (at any level: the layers, the files of a directory). The checker reads the
//! sources as text, so a new module joins the check by existing; a new top-level module must
//! be given a layer in `LAYERS`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, from the bottom: a module may import its own layer and the ones below.
const LAYERS: &[&[&str]] = &[
    &["config", "log", "fault", "guard", "warm"],
    &["cl"],
    &["registry"],
    &["stats"],
    &["cache"],
    &["clc", "structdef"],
    &["layout"],
    &["annotation"],
    &["rewrite"],
    &["marshal"],
    &["runtime"],
    &["hooks"],
    &["exports"],
];

fn layer_of(top: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&top))
}

/// A module path, `["runtime", "cost", "tune"]`.
type ModPath = Vec<String>;

/// One import: which module names which.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Edge {
    from: ModPath,
    to: ModPath,
    /// Where, for the failure message.
    at: String,
}

/// The module a source file defines: `runtime/cost/mod.rs` -> runtime::cost.
fn module_of(rel: &Path) -> ModPath {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// The source with comments, string and character literals blanked, so that only code is read.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if b[i] == b'"' || (b[i] == b'r' && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))) {
            // A string or raw string: skip to its end.
            if b[i] == b'r' {
                let mut hashes = 0;
                let mut j = i + 1;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push(b[i] as char);
                    i += 1;
                    continue;
                }
                let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
                j += 1;
                while j < b.len() && !b[j..].starts_with(&close) {
                    j += 1;
                }
                i = j + close.len();
            } else {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            out.push_str("\"\"");
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            out.push_str("' '");
            i += 3;
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            let mut j = i + 2;
            while j < b.len() && b[j] != b'\'' {
                j += 1;
            }
            out.push_str("' '");
            i = j + 1;
        } else {
            let c = src[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The lower-case path segments after `at` (`a::b::C` gives `a`, `b`), and brace groups
/// `{a, b::c}` expanded, each as its own path.
fn paths_after(code: &str, at: usize) -> Vec<Vec<String>> {
    let rest = &code[at..];
    if let Some(inner) = rest.strip_prefix('{') {
        // A group: split at top-level commas up to the matching brace.
        let mut depth = 0;
        let mut items = Vec::new();
        let mut start = 0;
        for (k, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    items.push(&inner[start..k]);
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(&inner[start..k]);
                    start = k + 1;
                }
                _ => {}
            }
        }
        let base = at + 1;
        let mut out = Vec::new();
        for item in items {
            let trimmed = item.trim_start();
            let offset = base + (item.as_ptr() as usize - inner.as_ptr() as usize) + (item.len() - trimmed.len());
            out.extend(paths_after(code, offset));
        }
        return out;
    }
    let mut segs = Vec::new();
    let mut k = 0;
    loop {
        let seg: String = rest[k..].chars().take_while(|c| is_ident(*c)).collect();
        if seg.is_empty() || seg.chars().next().unwrap().is_ascii_uppercase() || seg == "self" {
            break;
        }
        k += seg.len();
        segs.push(seg);
        if rest[k..].starts_with("::{") {
            let groups = paths_after(code, at + k + 2);
            return groups.into_iter().map(|g| segs.iter().cloned().chain(g).collect()).collect();
        }
        if !rest[k..].starts_with("::") {
            break;
        }
        k += 2;
    }
    vec![segs]
}

/// Every module path a file refers to through `crate::` or `super::`.
fn references(module: &ModPath, code: &str) -> Vec<ModPath> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("crate::").map(|p| p + from) {
        from = p + 7;
        if p > 0 && is_ident(code[..p].chars().last().unwrap()) {
            continue;
        }
        out.extend(paths_after(code, p + 7));
    }
    from = 0;
    while let Some(p) = code[from..].find("super::").map(|p| p + from) {
        from = p + 7;
        if p > 0 && (is_ident(code[..p].chars().last().unwrap()) || code[..p].ends_with("::")) {
            continue;
        }
        // Count the chain of `super::`.
        let mut ups = 1;
        let mut q = p + 7;
        while code[q..].starts_with("super::") {
            ups += 1;
            q += 7;
        }
        from = q;
        // In module a::b (file a/b.rs or a/b/mod.rs alike), `super` is a.
        let Some(keep) = module.len().checked_sub(ups) else { continue };
        for tail in paths_after(code, q) {
            let mut full: ModPath = module[..keep].to_vec();
            full.extend(tail);
            out.push(full);
        }
    }
    out.retain(|p| !p.is_empty());
    out
}

/// Every import edge between modules of src/ (the binaries under src/bin are other crates).
fn edges(src: &Path) -> Vec<Edge> {
    let mut files = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "bin") {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|e| e == "rs") {
                files.push(p);
            }
        }
    }
    let mut out = Vec::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap();
        let module = module_of(rel);
        let code = code_only(&fs::read_to_string(&f).unwrap());
        for to in references(&module, &code) {
            out.push(Edge { from: module.clone(), to, at: rel.display().to_string() });
        }
    }
    out.sort();
    out.dedup();
    out
}

/// What is wrong with a set of edges: imports against the layers, and loops among the
/// children of each module (two files of one directory, two layers' modules).
fn violations(edges: &[Edge]) -> Vec<String> {
    let mut bad = Vec::new();
    for e in edges {
        let (Some(from), Some(to)) = (e.from.first(), e.to.first()) else { continue };
        match (layer_of(from), layer_of(to)) {
            (Some(a), Some(b)) if b > a => {
                bad.push(format!("{} ({}) imports {} from a higher layer", e.from.join("::"), e.at, e.to.join("::")))
            }
            (None, _) => bad.push(format!("module {from} ({}) has no layer in tests/layers.rs", e.at)),
            (_, None) if !["std", "core", "alloc"].contains(&to.as_str()) => {
                bad.push(format!("{} ({}) imports {}, which has no layer", e.from.join("::"), e.at, e.to.join("::")))
            }
            _ => {}
        }
    }
    // Loops: at each parent, the graph among its children.
    let mut graphs: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for e in edges {
        let common = e.from.iter().zip(&e.to).take_while(|(a, b)| a == b).count();
        if common >= e.from.len() || common >= e.to.len() {
            // A module naming its own child, or a child naming its parent's items: the parent's
            // items are the child's context (a `mod.rs` holds only `pub mod` lines and
            // re-exports in this crate).
            continue;
        }
        let parent = e.from[..common].to_vec();
        graphs.entry(parent).or_default().entry(e.from[common].clone()).or_default().insert(e.to[common].clone());
    }
    for (parent, g) in &graphs {
        for cycle in cycles(g) {
            let at = if parent.is_empty() { "crate".to_string() } else { parent.join("::") };
            bad.push(format!("in {at}: {} import each other in a loop", cycle.join(" -> ")));
        }
    }
    bad
}

/// The loops of a directed graph, one per strongly connected component of more than one node.
fn cycles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let nodes: BTreeSet<&String> = g.keys().chain(g.values().flatten()).collect();
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for m in g.get(&n).into_iter().flatten() {
                if seen.insert(m.clone()) {
                    todo.push(m.clone());
                }
            }
        }
        seen
    };
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for n in &nodes {
        if done.contains(*n) {
            continue;
        }
        let r = reach(n);
        if !r.contains(*n) {
            continue;
        }
        let comp: Vec<String> =
            nodes.iter().filter(|m| r.contains(**m) && reach(m).contains(*n)).map(|m| (*m).clone()).collect();
        done.extend(comp.iter().cloned());
        out.push(comp);
    }
    out
}

fn src_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn every_import_goes_down_the_layers_and_nothing_loops() {
    let edges = edges(&src_dir());
    assert!(edges.len() > 100, "the checker found only {} imports: it reads the sources wrong", edges.len());
    let bad = violations(&edges);
    assert!(bad.is_empty(), "layering broken (docs/architecture.md):\n  {}", bad.join("\n  "));
}

#[test]
fn the_checker_sees_an_upward_import_and_a_loop() {
    let e = |from: &str, to: &str| Edge {
        from: from.split("::").map(String::from).collect(),
        to: to.split("::").map(String::from).collect(),
        at: "test".into(),
    };
    assert!(violations(&[e("registry", "runtime::state")]).iter().any(|v| v.contains("higher layer")));
    assert!(violations(&[e("runtime::launch", "registry")]).is_empty());
    let looped = violations(&[e("runtime::convert", "runtime::order"), e("runtime::order", "runtime::convert")]);
    assert!(looped.iter().any(|v| v.contains("convert -> order")), "{looped:?}");
    let three = violations(&[e("a::x", "a::y"), e("a::y", "a::z"), e("a::z", "a::x::f")]);
    assert!(three.iter().any(|v| v.contains("loop")), "{three:?}");
}

#[test]
fn paths_are_read_as_rust_reads_them() {
    let m: ModPath = vec!["runtime".into(), "cost".into(), "tune".into()];
    let refs = references(&m, &code_only("use super::super::probe; use crate::{cl::{cmd, Event}, layout::Shape}; // crate::hooks\nlet s = \"crate::exports\";"));
    assert!(refs.contains(&vec!["runtime".into(), "probe".into()]), "{refs:?}");
    assert!(refs.contains(&vec!["cl".into(), "cmd".into()]), "{refs:?}");
    assert!(refs.contains(&vec!["layout".into()]), "{refs:?}");
    assert!(!refs.iter().any(|r| r[0] == "hooks" || r[0] == "exports"), "comments and strings are not code: {refs:?}");
    let mod_rs: ModPath = vec!["runtime".into(), "cost".into()];
    assert_eq!(references(&mod_rs, "use super::state::Current;"), vec![vec!["runtime".to_string(), "state".into()]]);
}
