//! The transparent mode's rewriter on arbitrary program text, the way the runtime drives it:
//! every kernel annotated without a device layout is rewritten in turn, each rewrite applied to
//! the previous one's output. Invariants: no panic; a refusal names a construct's line and
//! gives a one-line reason; a rewritten program still holds every kernel it held, and its
//! copy is a kernel the signature reader accepts, with the original parameters plus one per
//! rewritten buffer. Each kernel is staged too (`stage_kernel`, not chained), under the same
//! invariants, with one flag per staged buffer. The proof that a kernel overwrites a buffer
//! (`overwritten`) runs on each kernel too: no panic, and only requested parameters proved.
#![no_main]

use clayout::annotation::annotations_in_source;
use clayout::clc::kernels;
use clayout::rewrite::{overwritten, request, rewrite_kernel, stage_kernel, Refusal, RewriteRequest};
use libfuzzer_sys::fuzz_target;

fn check_refusal(r: &Refusal) {
    assert!(!r.reason.is_empty() && !r.reason.contains('\n'), "{r:?}");
    assert!(r.line >= 1, "{r:?}");
}

/// `out` holds every kernel `before` held, and a copy named `copy` taking `extra` more
/// arguments than `kernel`.
fn check_copy(before: &str, out: &str, kernel: &str, copy: &str, extra: usize) {
    let original = kernels(before).into_iter().flatten().find(|k| k.name == kernel).expect("the kernel it rewrote");
    let copy = kernels(out)
        .into_iter()
        .flatten()
        .find(|k| k.name == copy)
        .unwrap_or_else(|| panic!("no kernel {copy} in the rewritten source"));
    assert_eq!(copy.params.len(), original.params.len() + extra);
    let names = |s: &str| -> Vec<String> { kernels(s).into_iter().flatten().map(|k| k.name).collect() };
    let after = names(out);
    assert!(names(before).iter().all(|k| after.contains(k)), "a kernel of the program was lost");
}

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else { return };
    let mut current = source.to_string();
    for a in annotations_in_source(source) {
        let Ok(layout) = a.layout else { continue };
        if layout.marshals() || layout.params.is_empty() {
            continue;
        }
        let Ok((req, _)) = request(source, &layout) else { continue };
        for o in overwritten(source, &req) {
            assert!(req.params.iter().any(|p| p.index == o.index && p.name == o.name), "{o:?}");
        }
        let staged_req = RewriteRequest { private_name: format!("{}__clayout_staged", req.kernel), ..req.clone() };
        match stage_kernel(&current, &staged_req) {
            Err(r) => check_refusal(&r),
            Ok(out) => {
                check_copy(&current, &out.source, &req.kernel, &staged_req.private_name, out.extra_args.len());
                assert_eq!(out.params.len(), req.params.len());
            }
        }
        match rewrite_kernel(&current, &req) {
            Err(r) => check_refusal(&r),
            Ok(out) => {
                check_copy(&current, &out.source, &req.kernel, &req.private_name, out.extra_args.len());
                current = out.source;
            }
        }
    }
});
