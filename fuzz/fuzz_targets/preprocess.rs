//! The OpenCL C preprocessor on arbitrary text. The input is the build options, the program and
//! headers `h1.h`, `h2.h`, ... separated by NUL bytes (a input without NUL is the program
//! alone). Invariants: no panic, no hang (limits end runaway expansion with an error); every
//! output line is in the line map; diagnostics are one line; a program preprocessed without
//! doubt or error preprocesses again to the same text (the output's tokens re-lex as written,
//! its `#line` markers and passed-through directives reproduce themselves).
#![no_main]

use clayout::clc::pp::{
    parse_build_options, predefined_macros, preprocess, DeviceFacts, Header, Input, Limits, Predefined, Preprocessed,
};
use libfuzzer_sys::fuzz_target;

const LIMITS: Limits = Limits { max_output_bytes: 1 << 22, max_work: 500_000, max_include_depth: 40, max_nesting: 32 };

fn run(source: &str, options: &str, predefined: &Predefined, headers: &[&str]) -> Option<Preprocessed> {
    let mut resolver = |name: &str, _angled: bool, _includer: &str| {
        let i: usize = name.strip_prefix('h')?.strip_suffix(".h")?.parse().ok()?;
        let text = headers.get(i.checked_sub(1)?)?;
        Some(Header { name: name.to_string(), text: text.to_string() })
    };
    let input = Input {
        sources: &[source],
        main_name: "main.cl",
        options,
        predefined,
        resolver: &mut resolver,
        limits: LIMITS,
    };
    preprocess(input).ok()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let parts: Vec<&str> = text.split('\0').collect();
    let (options, source, headers) = match parts.as_slice() {
        [source] => ("", *source, &[][..]),
        [options, source, headers @ ..] => (*options, *source, headers),
        [] => return,
    };
    let facts = DeviceFacts {
        version: (3, 0),
        default_c_version: Some((1, 2)),
        extensions: "cl_khr_fp64 cl_khr_int64_base_atomics".into(),
        little_endian: true,
        image_support: true,
        ..Default::default()
    };
    let predefined = predefined_macros(&facts, &parse_build_options(options));
    let Some(p) = run(source, options, &predefined, headers) else { return };
    assert_eq!(p.line_map.len(), p.text.lines().count(), "every output line is mapped");
    for d in p.unsure.iter().chain(&p.errors).chain(&p.warnings) {
        assert!(!d.message.is_empty() && !d.message.contains('\n'), "{d:?}");
    }
    // The built-ins left for the compiler would be expanded the second time.
    let builtins = ["__FILE__", "__DATE__", "__TIME__", "__BASE_FILE__", "__FILE_NAME__", "__TIMESTAMP__"];
    if !p.is_exact() || builtins.iter().any(|b| p.text.contains(b)) {
        return;
    }
    let again = run(&p.text, "", &Predefined::default(), &[]).expect("the output preprocesses within the limits");
    assert!(again.is_exact(), "the output is not exact: {:?} {:?}\n{}", again.unsure, again.errors, p.text);
    assert_eq!(again.text, p.text, "preprocessing the output changes it");
});
