use crate::annotation::extent::{BinOp, ExtentKind};
use crate::annotation::*;

fn ok(text: &str) -> Annotation {
    parse_annotation(text).unwrap_or_else(|e| panic!("{text:?}: {}", e.reason))
}

/// The reason and the text under the error's span.
fn bad(text: &str) -> (String, String) {
    match parse_annotation(text) {
        Ok(a) => panic!("{text:?} parsed as {a}"),
        Err(e) => (e.reason.clone(), e.span.of(text).to_string()),
    }
}

#[test]
fn thesis_form() {
    let a = ok("//DL: AoS: f[global_size(0)]");
    assert_eq!(a.host, HostLayout::AoS { s: None, word: None });
    assert_eq!(a.params.len(), 1);
    assert_eq!(a.params[0].name, "f");
    assert_eq!(a.params[0].extent.kind, ExtentKind::GlobalSize(0));
    assert_eq!(a.device, None);
    let a = ok("//DL: AoS: f[global_size(0)] AOS2ASTA_foo");
    assert_eq!(a.device, Some(DeviceLayout::ThesisName("AOS2ASTA_foo".into())));
    assert_eq!(a.device.as_ref().and_then(DeviceLayout::tile), None);
    assert_eq!(a.to_string(), "AoS: f[global_size(0)] AOS2ASTA_foo");
}

#[test]
fn prefix_is_optional_and_spans_are_in_the_given_text() {
    let text = "  // DL:  AoS: cells[n]";
    let a = ok(text);
    assert_eq!(a.params[0].span.of(text), "cells");
    assert_eq!(a.params[0].extent.span.of(text), "n");
    assert_eq!(a.host_span.of(text), "AoS");
    assert_eq!(ok("AoS: cells[n]").to_string(), ok("//DL:AoS: cells[n]").to_string());
}

#[test]
fn device_layouts() {
    assert_eq!(ok("AoS: f[n] -> ASTA").device, Some(DeviceLayout::Asta { tile: None }));
    assert_eq!(ok("AoS: f[n] -> ASTA(32)").device, Some(DeviceLayout::Asta { tile: Some(32) }));
    assert_eq!(ok("AoS: f[n]->asta(1)").device, Some(DeviceLayout::Asta { tile: Some(1) }));
    assert_eq!(ok("SoA(4): f[n] -> ASTA(1024)").device, Some(DeviceLayout::Asta { tile: Some(1024) }));
    let text = "AoS: f[n] -> ASTA(64)";
    assert_eq!(ok(text).device_span.unwrap().of(text), "ASTA(64)");
    assert_eq!(ok("aos: f[n] aos2asta_cell").device, Some(DeviceLayout::ThesisName("aos2asta_cell".into())));
}

#[test]
fn host_layouts() {
    assert_eq!(ok("SoA(5): p[n]").host, HostLayout::SoA { s: Some(5), word: None });
    assert_eq!(ok("SoA(5, 8): p[n]").host, HostLayout::SoA { s: Some(5), word: Some(8) });
    assert_eq!(ok("SoA(3, double): p[n]").host, HostLayout::SoA { s: Some(3), word: Some(8) });
    assert_eq!(ok("SoA(3, ushort): p[n]").host, HostLayout::SoA { s: Some(3), word: Some(2) });
    assert_eq!(ok("SoA: p[n]").host, HostLayout::SoA { s: None, word: None });
    assert_eq!(ok("AoS(4): p[n]").host, HostLayout::AoS { s: Some(4), word: None });
    assert_eq!(ok("AoS(4, 4): p[n]").host, HostLayout::AoS { s: Some(4), word: Some(4) });
    assert_eq!(ok("soa(0x10): p[n]").host, HostLayout::SoA { s: Some(16), word: None });
    assert_eq!(ok("SoA(5, 8): p[n]").to_string(), "SoA(5, 8): p[n]");
}

#[test]
fn several_parameters_and_expressions() {
    let a = ok("//DL: AoS: a[n], b[2*n + 1], c[(global_size(0) - 1) / local_size(0)], d[auto], e[num_groups(1)*64]");
    let names: Vec<&str> = a.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "d", "e"]);
    assert_eq!(a.params[3].extent.kind, ExtentKind::Auto);
    match &a.params[1].extent.kind {
        ExtentKind::BinOp(BinOp::Add, l, r) => {
            assert!(matches!(&l.kind, ExtentKind::BinOp(BinOp::Mul, ..)));
            assert_eq!(r.kind, ExtentKind::Int(1));
        }
        k => panic!("{k:?}"),
    }
    assert_eq!(
        a.to_string(),
        "AoS: a[n], b[2 * n + 1], c[(global_size(0) - 1) / local_size(0)], d[auto], e[num_groups(1) * 64]"
    );
    // Left associativity, and Display keeps the parentheses that matter.
    assert_eq!(ok("AoS: f[a - b - c]").to_string(), "AoS: f[a - b - c]");
    assert_eq!(ok("AoS: f[a - (b - c)]").to_string(), "AoS: f[a - (b - c)]");
    assert_eq!(ok("AoS: f[a * (b / c)]").to_string(), "AoS: f[a * (b / c)]");
    assert_eq!(ok("AoS: f[((n))]").to_string(), "AoS: f[n]");
    assert_eq!(ok("AoS: f[get_global_size(2)]").params[0].extent.kind, ExtentKind::GlobalSize(2));
    assert_eq!(ok("AoS: f[0x20]").params[0].extent.kind, ExtentKind::Int(32));
    assert_eq!(ok("AoS: f[n] // trailing note").params.len(), 1);
}

#[test]
fn malformed_annotations_give_reasons_at_the_right_place() {
    let cases: &[(&str, &str, &str)] = &[
        ("", "empty annotation", ""),
        ("//DL:", "empty annotation", ""),
        ("// not dl", "not `//DL:`", "// not dl"),
        ("f[n]", "expected the host layout", "f"),
        ("AoS f[n]", "expected `:` after the host layout", "f"),
        ("AoS:", "expected a parameter name", ""),
        ("AoS: f", "expected `[`", ""),
        ("AoS: f[]", "empty extent; write `f[auto]`", "]"),
        ("AoS: f[n", "expected `]`", ""),
        ("AoS: f[n]]", "unexpected `]`", "]"),
        ("AoS: f[n] g[n]", "expected `,` before the parameter `g`", "g"),
        ("AoS: f[n],", "expected a parameter name", ""),
        ("AoS: f[n], f[m]", "`f` is annotated twice", "f"),
        ("AoS: f[-n]", "unary `-`", "-"),
        ("AoS: f[n +]", "expected a number, `global_size(d)`", "]"),
        ("AoS: f[n +", "the extent ends too early", ""),
        ("AoS: f[n * * 2]", "expected a number", "*"),
        ("AoS: f[global_size(3)]", "dimension 3 out of range", "3"),
        ("AoS: f[global_size(n)]", "expected a dimension", "n"),
        ("AoS: f[global_size 0]", "expected `]`", "0"),
        ("AoS: f[sizeof(n)]", "unknown function `sizeof`", "sizeof"),
        ("AoS: f[1.5]", "not an integer", "1.5"),
        ("AoS: f[10u]", "not an integer", "10u"),
        ("AoS: f[010]", "leading 0", "010"),
        ("AoS: f[99999999999999999999]", "too large", "99999999999999999999"),
        ("AoS: f[(n]", "expected `)`", "]"),
        ("AoS: f[n] -> SOA", "unknown device layout `SOA`", "SOA"),
        ("AoS: f[n] -> ASTA(48)", "power of two", "48"),
        ("AoS: f[n] -> ASTA(2048)", "power of two", "2048"),
        ("AoS: f[n] -> ASTA(0)", "power of two", "0"),
        ("AoS: f[n] -> ASTA(32", "expected `)`", ""),
        ("AoS: f[n] -> ", "expected `ASTA` after `->`", ""),
        ("AoS -> ASTA: f[n]", "goes after the parameters", "->"),
        ("AoS: f[n] AOS2SOA_foo", "unexpected `AOS2SOA_foo`", "AOS2SOA_foo"),
        ("AoS: f[n] AOS2ASTA_", "unexpected `AOS2ASTA_`", "AOS2ASTA_"),
        ("SoA(3): f[n] AOS2ASTA_foo", "host layout is SoA", "AOS2ASTA_foo"),
        ("AoS: f[n] AOS2ASTA_foo bar", "unexpected `bar` at the end", "bar"),
        ("SoA(0): p[n]", "from 1 to", "0"),
        ("SoA(): p[n]", "number of words S", ")"),
        ("SoA(3, 3): p[n]", "word size must be", "3"),
        ("SoA(3, float4): p[n]", "word size must be", "float4"),
        ("SoA(5000000000): p[n]", "from 1 to", "5000000000"),
        ("SoA(3 p[n]", "expected `)`", "p"),
        ("SoA: p[n] x 5", "unexpected `x`", "x"),
        ("AoS: f[\"n\"]", "expected a number", "\"n\""),
        ("AoS: f[n] @", "unexpected `@`", "@"),
        ("AoS: é[n]", "expected a parameter name", "é"),
    ];
    let mut wrong = Vec::new();
    for (text, reason, under) in cases {
        let (r, u) = bad(text);
        if !r.contains(reason) || &u != under || r.contains('\n') {
            wrong.push(format!("{text:?}: got {r:?} at {u:?}, want {reason:?} at {under:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn nesting_is_bounded() {
    let deep = format!("AoS: f[{}n{}]", "(".repeat(10_000), ")".repeat(10_000));
    assert!(bad(&deep).0.contains("nested deeper"));
    let ok_depth = format!("AoS: f[{}n{}]", "(".repeat(20), ")".repeat(20));
    assert_eq!(ok(&ok_depth).to_string(), "AoS: f[n]");
    // Long operator chains would make deep trees just the same.
    let long = format!("AoS: f[{}1]", "1 + ".repeat(10_000));
    assert!(bad(&long).0.contains("more than 256 operators"));
    let fine = format!("AoS: f[{}1]", "1 + ".repeat(200));
    assert!(parse_annotation(&fine).is_ok());
}

#[test]
fn dl_comment_bodies() {
    use crate::annotation::grammar::dl_comment_body;
    assert_eq!(dl_comment_body("//DL: AoS: f[n]"), Some((5, " AoS: f[n]")));
    assert_eq!(dl_comment_body("// DL:x"), Some((6, "x")));
    assert_eq!(dl_comment_body("// dl: x"), None);
}

#[test]
fn out_marks_a_parameter_the_kernel_overwrites() {
    let a = ok("//DL: AoS: src[n], out dst[n]");
    assert_eq!((a.params[0].name.as_str(), a.params[0].out), ("src", false));
    assert_eq!((a.params[1].name.as_str(), a.params[1].out), ("dst", true));
    assert_eq!(a.to_string(), "AoS: src[n], out dst[n]");
    // A parameter named `out` is a name, not the flag.
    let a = ok("//DL: AoS: out[n] -> ASTA");
    assert_eq!((a.params[0].name.as_str(), a.params[0].out), ("out", false));
    let a = ok("//DL: AoS: out out[n]");
    assert_eq!((a.params[0].name.as_str(), a.params[0].out), ("out", true));
    assert!(bad("//DL: AoS: out").0.contains("expected `[`"));
}
