//! The plans of representative conversions, pinned: the programs' options, the kernels and the
//! commands. A change here changes what runs on every device; the expected values were those of
//! the code before the marshal module was split (and the PoCL runs traced identical).

use super::defines::options;
use super::device::Facts;
use super::plan::*;
use crate::layout::{Layout, Shape};

fn facts(local_mem: u64, max_wg: usize, simd: usize) -> Facts {
    Facts {
        local_mem,
        max_wg,
        simd,
        #[cfg(feature = "bench")]
        compute_units: 132,
    }
}

fn h100() -> Facts {
    facts(48 * 1024, 1024, 32)
}

fn amd() -> Facts {
    facts(64 * 1024, 256, 64)
}

/// 1 KiB of local memory and work-groups of 64: the smallest device.
fn small() -> Facts {
    facts(1024, 64, 32)
}

/// A program's options and its main kernels, or why there is none.
fn program(f: &Facts, s: u32, t: u32, w: u32, aligned16: bool) -> String {
    match params(f, s, t, w, aligned16, &Tuning::DEFAULT) {
        Ok(p) => format!("{} | {} {}", options(&p), p.kernel(Role::ToAsta).0, p.kernel(Role::P100).0),
        Err(e) => e.to_string(),
    }
}

#[test]
fn programs_pinned() {
    let cases: &[(Facts, u32, u32, u32, bool, &str)] = &[
        (h100(), 2, 32, 4, true, "-DWORD=uint -DS_=2u -DVEC=4 -DBS_ENABLED=1 -DBS_K=64u -DBS_L=256u -DPADW=32u -DP010_L=256u -DP010_BPW=1u -DP010_FW=67u -DP100_PV=4 -DP100_L=32u -DP100_SPEC=1 -DP100_RUN=0 | bs_aos_to_asta p100_wi"),
        (h100(), 5, 32, 8, true, "-DWORD=ulong -DWORD_IS_ULONG -DS_=5u -DVEC=2 -DBS_ENABLED=1 -DBS_K=12u -DBS_L=256u -DPADW=16u -DP010_L=256u -DP010_BPW=1u -DP010_FW=166u -DP100_PV=2 -DP100_L=32u -DP100_SPEC=1 -DP100_RUN=0 | bs_aos_to_asta p100_wi"),
        (h100(), 19, 32, 4, false, "-DWORD=uint -DS_=19u -DVEC=1 -DBS_ENABLED=1 -DBS_K=6u -DBS_L=256u -DPADW=32u -DP010_L=256u -DP010_BPW=1u -DP010_FW=628u -DP100_PV=1 -DP100_L=32u -DP100_SPEC=1 -DP100_RUN=0 | bs_aos_to_asta p100_wi"),
        (h100(), 33, 128, 8, true, "-DWORD=ulong -DWORD_IS_ULONG -DS_=33u -DVEC=2 -DBS_ENABLED=1 -DBS_K=1u -DBS_L=256u -DPADW=16u -DP010_L=256u -DP010_BPW=1u -DP010_FW=4357u -DP100_PV=2 -DP100_L=32u -DP100_SPEC=1 -DP100_RUN=3 | bs_aos_to_asta p100_wg"),
        (h100(), 32, 512, 4, true, "-DWORD=uint -DS_=32u -DVEC=4 -DBS_ENABLED=0 -DBS_K=1u -DBS_L=32u -DPADW=32u -DP010_L=256u -DP010_BPW=2u -DP010_FW=8449u -DP100_PV=4 -DP100_L=32u -DP100_SPEC=1 -DP100_RUN=3 | p010_aos_to_asta p100_wg"),
        (h100(), 7, 2, 4, true, "-DWORD=uint -DS_=7u -DVEC=2 -DBS_ENABLED=1 -DBS_K=292u -DBS_L=256u -DPADW=32u -DP010_L=256u -DP010_BPW=1u -DP010_FW=15u -DP100_PV=1 -DP100_L=2u -DP100_SPEC=1 -DP100_RUN=0 | bs_aos_to_asta p100_wi"),
        (amd(), 5, 64, 4, true, "-DWORD=uint -DS_=5u -DVEC=4 -DBS_ENABLED=1 -DBS_K=12u -DBS_L=256u -DPADW=32u -DP010_L=256u -DP010_BPW=1u -DP010_FW=331u -DP100_PV=4 -DP100_L=64u -DP100_SPEC=1 -DP100_RUN=0 | bs_aos_to_asta p100_wi"),
        (amd(), 64, 128, 8, true, "-DWORD=ulong -DWORD_IS_ULONG -DS_=64u -DVEC=2 -DBS_ENABLED=0 -DBS_K=1u -DBS_L=64u -DPADW=16u -DP010_L=256u -DP010_BPW=1u -DP010_FW=8449u -DP100_PV=2 -DP100_L=64u -DP100_SPEC=1 -DP100_RUN=3 | p010_aos_to_asta p100_wg"),
        (small(), 3, 16, 4, true, "-DWORD=uint -DS_=3u -DVEC=4 -DBS_ENABLED=1 -DBS_K=2u -DBS_L=32u -DPADW=32u -DP010_L=64u -DP010_BPW=1u -DP010_FW=50u -DP100_PV=4 -DP100_L=16u -DP100_SPEC=1 -DP100_RUN=0 | bs_aos_to_asta p100_wi"),
        (small(), 19, 32, 4, false, "-DWORD=uint -DS_=19u -DVEC=1 -DBS_ENABLED=0 -DBS_K=1u -DBS_L=32u -DPADW=32u -DP010_L=64u -DP010_BPW=8u -DP010_FW=79u -DP100_PV=1 -DP100_L=32u -DP100_SPEC=1 -DP100_RUN=0 | p010_aos_to_asta p100_wi"),
        (small(), 1, 1024, 8, false, "-DWORD=ulong -DWORD_IS_ULONG -DS_=1u -DVEC=1 -DBS_ENABLED=0 -DBS_K=1u -DBS_L=32u -DPADW=16u -DP010_L=64u -DP010_BPW=16u -DP010_FW=67u -DP100_PV=1 -DP100_L=32u -DP100_SPEC=1 -DP100_RUN=3 | p010_aos_to_asta p100_wg"),
        (small(), 33, 128, 8, true, "unsupported conversion: tile of 4224 words: PTTWAC 010 flags exceed local memory"),
        (h100(), 100_000, 65536, 4, true, "unsupported conversion: tile of 6553600000 words"),
    ];
    for (f, s, t, w, aligned, want) in cases {
        assert_eq!(program(f, *s, *t, *w, *aligned), *want, "S={s} T={t} w={w} aligned={aligned} on {f:?}");
    }
}

/// A conversion's steps and commands, one line each.
fn render(f: &Facts, shape: Shape, from: Layout, to: Layout, offset: u64) -> Vec<String> {
    let conv = match conversion(f, shape, from, to, offset, 32, &Tuning::DEFAULT) {
        Ok(c) => c,
        Err(e) => return vec![e.to_string()],
    };
    let mut out = vec![format!("scratch flags {} tail {}", conv.flags_bytes, conv.tail_bytes)];
    for (step, p) in &conv.steps {
        let c = commands(*step, p, shape, offset / shape.w as u64);
        out.push(format!("{step:?} moves {}", c.bytes));
        for cmd in &c.list {
            out.push(match cmd {
                Command::ZeroFlags { bytes } => format!("  zero flags {bytes}"),
                Command::Launch { role, args, global } => {
                    let (name, local) = p.kernel(*role);
                    let args: Vec<String> = args
                        .iter()
                        .map(|a| match a {
                            Arg::Data => "data".into(),
                            Arg::Flags => "flags".into(),
                            Arg::Tail => "tail".into(),
                            Arg::U64(v) => v.to_string(),
                            Arg::U32(v) => format!("{v}u"),
                        })
                        .collect();
                    format!("  {name} {global}/{local} {}", args.join(" "))
                }
            });
        }
    }
    out
}

#[test]
fn aos_to_asta_with_a_partial_tile() {
    // Q = 2 full tiles in one BS work-group, then the r = 3 tail words through the scratch.
    assert_eq!(
        render(&h100(), Shape::new(67, 3, 4), Layout::Aos, Layout::Asta { t: 32 }, 0),
        [
            "scratch flags 0 tail 36",
            "AosToAsta(32) moves 1680",
            "  bs_aos_to_asta 256/256 data 0 2u",
            "  copy_rows 9/256 tail 0 data 192 1 9 0 0",
            "  copy_transpose 9/256 data 192 tail 0 3 3",
        ]
    );
}

#[test]
fn soa_to_asta_compacts_the_rows_then_transposes() {
    assert_eq!(
        render(&h100(), Shape::new(67, 3, 4), Layout::Soa, Layout::Asta { t: 32 }, 0),
        [
            "scratch flags 4 tail 36",
            "SoaToAsta(32) moves 3804",
            "  copy_rows 9/256 tail 0 data 64 3 3 3 67",
            "  reverse_range 33/256 data 64 67",
            "  reverse_range 32/256 data 64 64",
            "  reverse_range 35/256 data 128 70",
            "  reverse_range 32/256 data 128 64",
            "  zero flags 4",
            "  p100_wi 6/128 data 0 flags 3u 2u 0u",
            "  copy_rows 9/256 data 192 tail 0 1 9 0 0",
        ]
    );
}

#[test]
fn asta_to_soa_is_the_inverse() {
    assert_eq!(
        render(&h100(), Shape::new(67, 3, 4), Layout::Asta { t: 32 }, Layout::Soa, 0),
        [
            "scratch flags 4 tail 36",
            "AstaToSoa(32) moves 3804",
            "  copy_rows 9/256 tail 0 data 192 1 9 0 0",
            "  zero flags 4",
            "  p100_wi 6/128 data 0 flags 2u 3u 0u",
            "  reverse_range 35/256 data 128 70",
            "  reverse_range 32/256 data 134 64",
            "  reverse_range 33/256 data 64 67",
            "  reverse_range 32/256 data 67 64",
            "  copy_rows 9/256 data 64 tail 0 3 3 67 3",
        ]
    );
}

#[test]
fn aos_to_soa_goes_through_the_device_tile() {
    // At a word offset not on 16 bytes: no vectors; the arguments count words from it.
    assert_eq!(
        render(&h100(), Shape::new(1000, 5, 8), Layout::Aos, Layout::Soa, 8),
        [
            "scratch flags 20 tail 320",
            "AosToAsta(32) moves 80640",
            "  bs_aos_to_asta 768/256 data 1 31u",
            "  copy_rows 40/256 tail 0 data 4961 1 40 0 0",
            "  copy_transpose 40/256 data 4961 tail 0 8 5",
            "AstaToSoa(32) moves 208916",
            "  copy_rows 40/256 tail 0 data 4961 1 40 0 0",
            "  zero flags 20",
            "  p100_wi 155/128 data 1 flags 31u 5u 0u",
            "  reverse_range 512/256 data 3969 1024",
            "  reverse_range 496/256 data 4001 992",
            "  reverse_range 508/256 data 2977 1016",
            "  reverse_range 496/256 data 3001 992",
            "  reverse_range 504/256 data 1985 1008",
            "  reverse_range 496/256 data 2001 992",
            "  reverse_range 500/256 data 993 1000",
            "  reverse_range 496/256 data 1001 992",
            "  copy_rows 40/256 data 993 tail 0 5 8 1000 8",
        ]
    );
}

#[test]
fn short_arrays_and_tile_changes() {
    // M <= T: the ASTA of the device tile already is SoA, one step does it.
    assert_eq!(
        render(&h100(), Shape::new(20, 2, 4), Layout::Aos, Layout::Soa, 0),
        [
            "scratch flags 0 tail 160",
            "AosToAsta(32) moves 640",
            "  copy_rows 40/256 tail 0 data 0 1 40 0 0",
            "  copy_transpose 40/256 data 0 tail 0 20 2",
        ]
    );
    // ASTA(T1) -> ASTA(T2) through AoS; big super-elements take the work-group PTTWAC 010.
    assert_eq!(
        render(&small(), Shape::new(64, 33, 4), Layout::Asta { t: 16 }, Layout::Asta { t: 32 }, 0),
        [
            "scratch flags 0 tail 0",
            "AstaToAos(16) moves 16896",
            "  p010_asta_to_aos 256/64 data 0 0u",
            "AosToAsta(32) moves 16896",
            "  p010_aos_to_asta 128/64 data 0 0u",
        ]
    );
    // The same layout for this shape: nothing to do (the chain enqueues a marker).
    assert_eq!(
        render(&h100(), Shape::new(64, 3, 4), Layout::Aos, Layout::Asta { t: 1 }, 0),
        ["scratch flags 0 tail 0"]
    );
}

#[test]
fn refused_conversions() {
    let f = h100();
    let (aos, asta) = (Layout::Aos, Layout::Asta { t: 32 });
    assert_eq!(render(&f, Shape::new(64, 3, 2), aos, asta, 0), ["unsupported conversion: word size 2 (4 or 8 only)"]);
    assert_eq!(
        render(&f, Shape::new(64, 3, 8), aos, asta, 4),
        ["unsupported conversion: offset 4 is not a multiple of the word size 8"]
    );
    assert_eq!(
        render(&f, Shape::new(1 << 38, 64, 4), Layout::Soa, asta, 0),
        ["unsupported conversion: more than 2^32 super-elements"]
    );
}

/// Every launch of every plan names a kernel of kernels/marshal.cl, with work to do.
#[test]
fn launches_name_real_kernels() {
    let src = include_str!("../../kernels/marshal.cl");
    let defined =
        |name: &str| [format!("void {name}("), format!("_KERNEL({name},")].iter().any(|d| src.contains(d.as_str()));
    for f in [h100(), amd(), small()] {
        for (m, s, w) in [(67u64, 3u32, 4u32), (1000, 5, 8), (33, 33, 4), (4099, 19, 8)] {
            let shape = Shape::new(m, s, w);
            for t in [2u32, 16, 32, 128] {
                let asta = Layout::Asta { t };
                for (from, to) in [(Layout::Aos, asta), (asta, Layout::Aos), (Layout::Soa, asta), (asta, Layout::Soa)] {
                    let Ok(conv) = conversion(&f, shape, from, to, 0, 32, &Tuning::DEFAULT) else { continue };
                    for (step, p) in &conv.steps {
                        for role in Role::ALL {
                            let name = p.kernel(role).0;
                            assert!(defined(name), "{name} is not a kernel of kernels/marshal.cl");
                        }
                        for c in commands(*step, p, shape, 0).list {
                            if let Command::Launch { global, .. } = c {
                                assert!(global > 0, "{step:?} of {shape:?}: an empty launch");
                            }
                        }
                    }
                }
            }
        }
    }
}
