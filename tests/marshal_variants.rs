//! The tuning variants of the SoA <-> ASTA kernels that are not clayout's default on this
//! device, checked against the host reference. Their own test binary: the tuning is
//! process-wide, and the grid's binary must run the defaults. The tuning exists only in the
//! benchmark's build: `cargo test --features bench --test marshal_variants` (Cargo.toml's
//! required-features skips this test without it).

mod marshal_support;

use clayout::layout::{Layout, Shape};
use clayout::marshal::{set_tuning, P100Kernel, Tuning};
use marshal_support::*;

/// Odd S gives a few long cycles, powers of two many short ones; the prime M leaves a tail.
const SHAPES: &[(u64, u32, u32)] =
    &[(64, 2, 4), (3 * 32 + 1, 3, 4), (4096, 5, 4), (100_003, 5, 8), (20_000, 19, 4), (8192, 32, 4), (777, 33, 8)];

fn both_directions(cl: &Cl) {
    for &(m, s, w) in SHAPES {
        let sh = Shape::new(m, s, w);
        let tiles: &[u32] = if s == 5 && w == 4 { &[16, 32] } else { &[32] };
        for &t in tiles {
            let asta = Layout::Asta { t };
            check_conversion(cl, sh, Layout::Soa, asta, 0);
            check_conversion(cl, sh, asta, Layout::Soa, 0);
        }
    }
}

/// Persistent work-items: with one work-item per compute unit each takes thousands of starts
/// in turn (the many-starts-per-item path); with the default count each takes a few.
#[test]
fn persistent_pttwac_100() {
    let Some(cl) = cl() else { return };
    for per_cu in [1u32, 2048] {
        set_tuning(Tuning { p100: P100Kernel::Persistent, p100_per_cu: per_cu, p100_l: 32, ..Tuning::default() });
        both_directions(cl);
    }
    set_tuning(Tuning::default());
}
