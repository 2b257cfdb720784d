//! What a kernel to be staged cannot contain: work-group synchronization anywhere it reaches
//! (its own barriers and early-returning work-items would not agree with the copy's), `goto`
//! and labels (the copy adds a jump of its own), and macros hiding `return` or `goto` (a hidden
//! `return` would skip the copy's barrier).

use crate::clc::lex::TokenKind;
use crate::rewrite::funcs::{self, FnDef};
use crate::rewrite::source::{Source, NOT_CALLS, R};
use std::collections::HashSet;

/// Builtins that synchronize or share work within a work-group or sub-group: around them, the
/// early-returning work-items that now wait at the copy's barrier, and the copy's own use of
/// local memory, would change what the kernel does.
fn synchronizes(name: &str) -> bool {
    name == "barrier"
        || name == "wait_group_events"
        || ["work_group_", "sub_group_", "async_work_group_"].iter().any(|p| name.starts_with(p))
}

/// What the staged copy cannot keep: work-group synchronization anywhere the kernel reaches
/// (its own barriers and early-returning work-items would not agree with the copy's),
/// `goto` and labels (the copy adds a jump of its own), and macros hiding `return` or `goto`
/// (a hidden `return` would skip the copy's barrier).
pub(super) fn check(code: &Source, def: &FnDef) -> R<()> {
    let mut seen = HashSet::new();
    for j in def.open + 1..def.close {
        let t = code.toks[j];
        if t.kind != TokenKind::Ident || code.is(j - 1, ".") || code.is(j - 1, "->") {
            continue;
        }
        let s = code.text(j);
        if s == "goto" {
            return Err(code.refuse(j, j + 2, "`goto` in a kernel to be staged: the staged copy jumps to its own epilogue and does not follow other jumps"));
        }
        let statement_start = code.toks[j - 1].kind == TokenKind::Directive
            || [";", "{", "}"].iter().any(|p| code.is(j - 1, p))
            || matches!(code.text(j - 1), "else" | "do");
        if code.is(j + 1, ":") && statement_start && s != "default" {
            return Err(code.refuse(j, j + 2, "a label in a kernel to be staged: the staged copy jumps to its own epilogue and does not follow other jumps"));
        }
        if code.macros.contains_key(s) {
            let idents = funcs::expansion_idents(&code.macros, s);
            if let Some(k) = idents.iter().find(|k| *k == "return" || *k == "goto") {
                let line = code.logical(code.macros[s].line);
                return Err(code.refuse(j, j + 1, format!("macro `{s}` (defined on line {line}) expands to `{k}`, which would skip the staged copy's barrier")));
            }
        }
        let call = code.is(j + 1, "(") && !NOT_CALLS.contains(&s);
        if call || code.macros.contains_key(s) {
            if let Some(f) = reaches_sync(code, s, &mut seen) {
                let via = if f == s { String::new() } else { format!(", reached through `{s}`") };
                return Err(code.refuse(j, j + 1, format!("work-group synchronization (`{f}`{via}) in a kernel to be staged: the staged copy's own barriers need every work-item, and the local memory is the copy's")));
            }
        }
    }
    Ok(())
}

/// The synchronizing builtin that identifier `name` (a call or a macro) can reach through
/// macros and the program's function definitions, if any.
fn reaches_sync(code: &Source, name: &str, seen: &mut HashSet<String>) -> Option<String> {
    if synchronizes(name) {
        return Some(name.to_string());
    }
    if !seen.insert(name.to_string()) {
        return None;
    }
    if code.macros.contains_key(name) {
        let idents = funcs::expansion_idents(&code.macros, name);
        return idents.iter().find_map(|id| reaches_sync(code, id, seen));
    }
    let Some(Ok(def)) = funcs::find_function(code.src, &code.toks, name) else {
        return None;
    };
    (def.open + 1..def.close)
        .filter(|&k| code.toks[k].kind == TokenKind::Ident)
        .filter(|&k| code.is(k + 1, "(") || code.macros.contains_key(code.text(k)))
        .find_map(|k| reaches_sync(code, code.text(k), seen))
}
