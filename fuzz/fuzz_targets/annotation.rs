//! The annotation grammar, the side file, the signature reader and the attachment of
//! annotations to kernels, on arbitrary text. Invariants: no panic; every refusal is one
//! non-empty line; an annotation that parses prints as text that parses to the same annotation.
#![no_main]

use clayout::annotation::{annotate_program, parse_annotation, parse_side_file};
use clayout::clc::kernels;
use libfuzzer_sys::fuzz_target;

fn one_line(reason: &str) {
    assert!(!reason.is_empty() && !reason.contains('\n'), "refusal {reason:?}");
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for line in text.lines() {
        match parse_annotation(line) {
            Err(e) => one_line(&e.reason),
            Ok(a) => {
                let printed = a.to_string();
                let again = parse_annotation(&printed)
                    .unwrap_or_else(|e| panic!("{line:?} printed as {printed:?}, which does not parse: {}", e.reason));
                assert_eq!(again.to_string(), printed, "{line:?}");
                assert_eq!(again.params.len(), a.params.len());
                assert_eq!(again.device, a.device);
            }
        }
    }
    for k in kernels(text) {
        if let Err(e) = k {
            one_line(&e.reason);
        }
    }
    let (side, errors) = parse_side_file(text);
    for e in &errors {
        one_line(&e.reason);
    }
    for a in annotate_program(text, &side) {
        match a.layout {
            Err(e) => one_line(&e.to_string()),
            Ok(l) => {
                for p in &l.params {
                    let _ = p.extent.to_string();
                }
            }
        }
    }
});
