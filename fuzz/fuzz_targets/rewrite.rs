//! The transparent mode's rewriter on arbitrary program text, the way the runtime drives it:
//! every kernel annotated without a device layout is rewritten in turn, each rewrite applied to
//! the previous one's output. Invariants: no panic; a refusal names a construct's line and
//! gives a one-line reason; a rewritten program still holds every kernel it held, and its
//! copy is a kernel the signature reader accepts, with the original parameters plus one per
//! rewritten buffer.
#![no_main]

use clayout::annotation::{annotations_in_source, kernels};
use clayout::rewrite::{request, rewrite_kernel};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else { return };
    let mut current = source.to_string();
    for a in annotations_in_source(source) {
        let Ok(layout) = a.layout else { continue };
        if layout.marshals() || layout.params.is_empty() {
            continue;
        }
        let Ok((req, _)) = request(source, &layout) else { continue };
        match rewrite_kernel(&current, &req) {
            Err(r) => {
                assert!(!r.reason.is_empty() && !r.reason.contains('\n'), "{r:?}");
                assert!(r.line >= 1, "{r:?}");
            }
            Ok(out) => {
                let original = kernels(&current).into_iter().flatten().find(|k| k.name == layout.kernel).expect("the kernel it rewrote");
                let copy = kernels(&out.source)
                    .into_iter()
                    .flatten()
                    .find(|k| k.name == req.private_name)
                    .unwrap_or_else(|| panic!("no kernel {} in the rewritten source", req.private_name));
                assert_eq!(copy.params.len(), original.params.len() + out.extra_args.len());
                let before: Vec<String> = kernels(&current).into_iter().flatten().map(|k| k.name).collect();
                let after: Vec<String> = kernels(&out.source).into_iter().flatten().map(|k| k.name).collect();
                assert!(before.iter().all(|k| after.contains(k)), "a kernel of the program was lost");
                current = out.source;
            }
        }
    }
});
