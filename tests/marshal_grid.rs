//! Every conversion direction against the host reference permutation, over the grid of shapes
//! of the marshaling issue, plus round trips, offsets and randomized shapes.

mod marshal_support;

use clayout::layout::{permute_host, Layout, Shape};
use marshal_support::*;

// ------------------------------------------------------------------------------------------
// The grid
// ------------------------------------------------------------------------------------------

const PRIME_M: u64 = 100_003;

/// M values for a tile T: {1, 2, T-1, T, T+1, 2T+3} (deduplicated, > 0).
fn ms(t: u64) -> Vec<u64> {
    let mut v: Vec<u64> = vec![1, 2, t.saturating_sub(1), t, t + 1, 2 * t + 3];
    v.retain(|&m| m > 0);
    v.sort();
    v.dedup();
    v
}

/// The large prime M runs only for this subset of (S, T, w) to keep the suite fast on two
/// CPU cores: every T >= 16 appears, with odd, even and large S, both word sizes.
fn prime_subset(s: u32, t: u32, w: u32) -> bool {
    matches!((s, t, w), (3, 16, 4) | (5, 32, 8) | (32, 32, 4) | (33, 64, 4) | (2, 128, 8) | (19, 32, 4))
}

/// AoS -> ASTA -> SoA -> ASTA -> AoS on one buffer, every step checked against the host
/// reference, and the final step back to the identity.
fn round_trip(cl: &Cl, shape: Shape, t: u32, offset: usize) {
    let asta = Layout::Asta { t };
    let start = filled(shape, Layout::Aos);
    let b = upload(cl, &start, offset);
    let mut cur = start.clone();
    let mut from = Layout::Aos;
    for to in [asta, Layout::Soa, asta, Layout::Aos] {
        let c = convert(cl, &b, offset, shape, from, to);
        permute_host(&mut cur, shape, from, to);
        check(cl, &b, offset, &cur, &format!("{shape:?} T={t} {from:?} -> {to:?} (offset {offset})"));
        // One done bit per T-word super-element plus at most one tile of tail words (T = 1 is
        // AoS, whose AoS <-> SoA steps go through the device tile, 32 on PoCL).
        let te = if t <= 1 { 32 } else { t as u64 };
        let bound = (shape.m / te * shape.s as u64).div_ceil(32) * 4 + te.max(32) * shape.s as u64 * shape.w as u64;
        assert!(c.scratch_bytes <= bound, "scratch {} > {bound}", c.scratch_bytes);
        from = to;
    }
    assert_eq!(cur, start);
}

fn grid(w: u32) {
    let Some(cl) = cl() else {
        eprintln!("no OpenCL platform: marshal grid skipped");
        return;
    };
    let t0 = std::time::Instant::now();
    let mut n = 0;
    for t in [1u32, 2, 16, 32, 64, 128] {
        for s in [1u32, 2, 3, 5, 19, 32, 33] {
            let mut mlist = ms(t as u64);
            if prime_subset(s, t, w) {
                mlist.push(PRIME_M);
            }
            for m in mlist {
                round_trip(cl, Shape::new(m, s, w), t, 0);
                n += 1;
            }
        }
    }
    eprintln!("w={w}: {n} shapes x 4 directions in {:.1?}", t0.elapsed());
}

#[test]
fn grid_w4() {
    grid(4);
}

#[test]
fn grid_w8() {
    grid(8);
}

/// AoS <-> SoA (two steps through ASTA), ASTA(T1) <-> ASTA(T2), identities, and buffers
/// that start at an offset (16: vector path; 8 or 4: scalar path).
#[test]
fn other_pairs_and_offsets() {
    let Some(cl) = cl() else { return };
    for &(m, s, w) in &[(1u64, 3u32, 4u32), (31, 5, 4), (32, 2, 8), (100, 19, 4), (1000, 33, 8), (777, 4, 4)] {
        let sh = Shape::new(m, s, w);
        for (from, to) in [
            (Layout::Aos, Layout::Soa),
            (Layout::Soa, Layout::Aos),
            (Layout::Asta { t: 16 }, Layout::Asta { t: 64 }),
            (Layout::Asta { t: 1 }, Layout::Aos),
            (Layout::Soa, Layout::Soa),
        ] {
            check_conversion(cl, sh, from, to, 0);
        }
        for off in [16usize, 8, 4] {
            if off % w as usize == 0 {
                round_trip(cl, sh, 32, off);
            }
        }
    }
}

/// Randomized shapes and pairs (deterministic xorshift), checked against the host reference.
#[test]
fn randomized() {
    let Some(cl) = cl() else { return };
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let tiles = [2u32, 4, 8, 16, 32, 64, 128];
    for _ in 0..24 {
        let t = tiles[next(tiles.len() as u64) as usize];
        let big = next(4) == 0;
        let m = 1 + next(if big { 20_000 } else { 600 });
        let s = 1 + next(40) as u32;
        let w = if next(2) == 0 { 4 } else { 8 };
        let ls = [Layout::Aos, Layout::Soa, Layout::Asta { t }];
        let from = ls[next(3) as usize];
        let to = ls[next(3) as usize];
        check_conversion(cl, Shape::new(m, s, w), from, to, 0);
    }
}
