use crate::annotation::*;
use crate::clc::types::decode_int_arg;
use crate::clc::Span;

fn extent(text: &str) -> Extent {
    let a = parse_annotation(&format!("AoS: f[{text}]")).unwrap_or_else(|e| panic!("{text}: {}", e.reason));
    a.params[0].extent.clone()
}

fn env() -> LaunchValues {
    LaunchValues {
        global: vec![1024, 8],
        local: Some(vec![64, 3]),
        args: [("n".to_string(), 100), ("zero".to_string(), 0), ("big".to_string(), u64::MAX)].into(),
        auto_count: Some(77),
    }
}

fn eval(text: &str) -> Result<u64, String> {
    extent(text).eval(&env()).map_err(|e| e.reason)
}

#[test]
fn values() {
    assert_eq!(eval("global_size(0)"), Ok(1024));
    assert_eq!(eval("global_size(1) * local_size(0)"), Ok(512));
    assert_eq!(eval("num_groups(0)"), Ok(16));
    assert_eq!(eval("num_groups(1)"), Ok(3), "a partial last group counts");
    assert_eq!(eval("n * 2 + 1"), Ok(201));
    assert_eq!(eval("(n - 1) / 3"), Ok(33));
    assert_eq!(eval("n - 101 + 2"), Ok(1), "intermediates may be negative");
    assert_eq!(eval("auto"), Ok(77));
    assert_eq!(eval("big"), Ok(u64::MAX));
    assert_eq!(eval("big / 2 * 2 + 1"), Ok(u64::MAX));
    assert_eq!(eval("0"), Ok(0));
    assert_eq!(eval("(0 - 7) / 2 + 4"), Ok(1), "division truncates toward zero as in C");
}

#[test]
fn errors_never_panics() {
    let cases = [
        ("n / zero", "division by zero in `n / zero`"),
        ("n / (n - 100)", "division by zero"),
        ("big + 1", "`big + 1` overflows 64 bits"),
        ("big * big", "overflows 64 bits"),
        ("zero - big - big", "overflows 64 bits"),
        ("n - 101", "`n - 101` is negative (-1)"),
        ("missing", "argument `missing` has no value"),
        ("global_size(2)", "global_size(2) unknown (work_dim is 2 or less)"),
        ("local_size(2)", "local_size(2) unknown (work_dim is 2 or less)"),
    ];
    for (text, reason) in cases {
        let e = eval(text).unwrap_err();
        assert!(e.contains(reason), "{text}: {e}");
    }
    let no_local = LaunchValues { local: None, auto_count: None, ..env() };
    for text in ["local_size(0)", "num_groups(0) * 2"] {
        let e = extent(text).eval(&no_local).unwrap_err();
        assert_eq!(e.reason, "local_size unknown (NULL local work size)");
    }
    assert_eq!(extent("auto").eval(&no_local).unwrap_err().reason, "auto unknown (no buffer size)");
    let local_zero = LaunchValues { local: Some(vec![0]), ..env() };
    assert!(extent("num_groups(0)").eval(&local_zero).is_err());
}

#[test]
fn error_spans_locate_the_failing_subexpression() {
    let text = "AoS: f[n + (n / zero)]";
    let a = parse_annotation(text).unwrap();
    let e = a.params[0].extent.eval(&env()).unwrap_err();
    assert_eq!(e.span.of(text), "(n / zero)");
    let e = extent("n + missing").eval(&env()).unwrap_err();
    assert_eq!(e.span, Span::new(11, 18));
    assert_eq!(extent("n * 2 + missing * 3").args().iter().map(|a| a.0).collect::<Vec<_>>(), ["n", "missing"]);
}

#[test]
fn decoding_then_evaluating_a_scalar_argument() {
    let n = decode_int_arg("unsigned long", &4096u64.to_ne_bytes()).unwrap();
    let env = LaunchValues { args: [("n".to_string(), n)].into(), ..LaunchValues::default() };
    assert_eq!(extent("n / 4").eval(&env), Ok(1024));
}
