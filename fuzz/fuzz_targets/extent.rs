//! Extent expressions: parsed from the first line of the input, evaluated with launch values
//! taken from the rest. Invariants: no panic; printing an extent and parsing it again gives the
//! same value (or the same refusal) under the same launch values; a value is never produced
//! where a term is unknown.
#![no_main]

use clayout::annotation::{parse_annotation, LaunchValues};
use libfuzzer_sys::fuzz_target;

fn take(bytes: &mut &[u8]) -> u64 {
    let n = bytes.len().min(8);
    let mut b = [0u8; 8];
    b[..n].copy_from_slice(&bytes[..n]);
    *bytes = &bytes[n..];
    // Small values most of the time, so that sums and products stay in range and get compared.
    let v = u64::from_le_bytes(b);
    if v & 1 == 0 {
        v >> 48
    } else {
        v
    }
}

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let Ok(expr) = std::str::from_utf8(&data[..split]) else { return };
    let mut rest = &data[split.min(data.len())..];
    let env = LaunchValues {
        global: vec![take(&mut rest), take(&mut rest), take(&mut rest)],
        local: if rest.first().is_some_and(|b| b & 1 == 1) {
            Some(vec![take(&mut rest), take(&mut rest), take(&mut rest)])
        } else {
            None
        },
        args: [("n".to_string(), take(&mut rest)), ("m".to_string(), take(&mut rest))].into(),
        auto_count: Some(take(&mut rest)),
    };
    let Ok(a) = parse_annotation(&format!("//DL: AoS: p[{expr}]")) else { return };
    for p in &a.params {
        let printed = p.extent.to_string();
        let again = parse_annotation(&format!("AoS: p[{printed}]"))
            .unwrap_or_else(|e| panic!("{expr:?} printed as {printed:?}: {}", e.reason));
        let first = p.extent.eval(&env);
        let second = again.params[0].extent.eval(&env);
        assert_eq!(first.is_ok(), second.is_ok(), "{expr:?} / {printed:?}: {first:?} {second:?}");
        if let (Ok(x), Ok(y)) = (&first, &second) {
            assert_eq!(x, y, "{expr:?} / {printed:?}");
        }
        if let Err(e) = &first {
            assert!(!e.reason.is_empty() && !e.reason.contains('\n'));
        }
        let empty = LaunchValues::default();
        if p.extent.eval(&empty).is_ok() {
            assert!(p.extent.args().is_empty(), "{printed:?} evaluated without its arguments");
        }
    }
});
