//! Layout algebra: where word `s` of structure `i` lives in AoS, SoA and ASTA.
//!
//! A buffer holds `m` structures of `s` words of `w` bytes. Every layout is a permutation of
//! the same `m * s` words (no padding):
//! - AoS: word `s` of structure `i` at `i*S + s`;
//! - SoA (discrete arrays in one buffer): at `s*M + i`;
//! - ASTA with tile `T`: structure `i` of a full tile `t = i / T` (`t < M / T`) has word `s`
//!   at `(t*S + s)*T + i%T`; the last `r = M mod T` structures form a partial tile laid out
//!   as a mini SoA of width `r`: word `s` of structure `i` at `(M-r)*S + s*r + (i-(M-r))`.
//!
//! This module is the single source of truth for these formulas: the OpenCL C macros that
//! kernels use to address ASTA ([`asta_macros`]) are generated from here, and
//! [`permute_host`] is both the CPU reference of the tests and the runtime's host fallback.

/// The shape of a buffer of structures: `m` structures of `s` words of `w` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    pub m: u64,
    pub s: u32,
    pub w: u32,
}

impl Shape {
    pub fn new(m: u64, s: u32, w: u32) -> Shape {
        Shape { m, s, w }
    }
    /// Number of words, `m * s`.
    pub fn words(&self) -> u64 {
        self.m * self.s as u64
    }
    /// Number of bytes, `m * s * w`.
    pub fn bytes(&self) -> u64 {
        self.words() * self.w as u64
    }
}

/// A data layout of a buffer of structures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Layout {
    Aos,
    Soa,
    Asta { t: u32 },
}

impl Layout {
    /// Word index of word `s` of structure `i` (`i < m`, `s < shape.s`).
    #[inline]
    pub fn index(self, shape: Shape, i: u64, s: u64) -> u64 {
        match self {
            Layout::Aos => aos_index(i, s, shape.s as u64),
            Layout::Soa => soa_index(i, s, shape.m),
            Layout::Asta { t } => asta_index(i, s, shape.s as u64, t.max(1) as u64, shape.m),
        }
    }

    /// The layout as a canonical ASTA tile where it is one, for comparing layouts as
    /// permutations: AoS is ASTA with T = 1, SoA is ASTA with T >= M; with S = 1 every layout
    /// is the identity.
    pub fn canonical(self, shape: Shape) -> Layout {
        if shape.s <= 1 || shape.m <= 1 {
            return Layout::Aos;
        }
        match self {
            Layout::Asta { t } if t <= 1 => Layout::Aos,
            Layout::Asta { t } if t as u64 >= shape.m => Layout::Soa,
            l => l,
        }
    }

    /// Whether two layouts place every word at the same index for this shape.
    pub fn same_as(self, other: Layout, shape: Shape) -> bool {
        self.canonical(shape) == other.canonical(shape)
    }
}

/// AoS: `i*S + s`.
#[inline]
pub fn aos_index(i: u64, s: u64, ns: u64) -> u64 {
    i * ns + s
}

/// SoA: `s*M + i`.
#[inline]
pub fn soa_index(i: u64, s: u64, m: u64) -> u64 {
    s * m + i
}

/// ASTA with tile `t`: full tiles `(i/T*S + s)*T + i%T`, then the partial tile of `r = M%T`
/// structures as a mini SoA: `(M-r)*S + s*r + (i-(M-r))`.
#[inline]
pub fn asta_index(i: u64, s: u64, ns: u64, t: u64, m: u64) -> u64 {
    let full = m - m % t;
    if i < full {
        ((i / t) * ns + s) * t + i % t
    } else {
        let r = m - full;
        full * ns + s * r + (i - full)
    }
}

/// Converts `bytes` (exactly `shape.bytes()` long, or longer: only the first `shape.bytes()`
/// are touched) from layout `from` to layout `to` on the host. Exact for every shape; uses a
/// temporary copy of the data. Panics only if `bytes` is too short or `w` is 0.
pub fn permute_host(bytes: &mut [u8], shape: Shape, from: Layout, to: Layout) {
    let n = shape.bytes() as usize;
    assert!(bytes.len() >= n, "permute_host: buffer shorter than the shape");
    assert!(shape.w > 0);
    if from.same_as(to, shape) || n == 0 {
        return;
    }
    let src = bytes[..n].to_vec();
    let dst = &mut bytes[..n];
    let (m, ns, w) = (shape.m, shape.s as u64, shape.w as usize);
    match w {
        4 => permute_words::<4>(&src, dst, shape, from, to),
        8 => permute_words::<8>(&src, dst, shape, from, to),
        _ => {
            for i in 0..m {
                for s in 0..ns {
                    let a = from.index(shape, i, s) as usize * w;
                    let b = to.index(shape, i, s) as usize * w;
                    dst[b..b + w].copy_from_slice(&src[a..a + w]);
                }
            }
        }
    }
}

fn permute_words<const W: usize>(src: &[u8], dst: &mut [u8], shape: Shape, from: Layout, to: Layout) {
    let (m, ns) = (shape.m, shape.s as u64);
    for i in 0..m {
        for s in 0..ns {
            let a = from.index(shape, i, s) as usize * W;
            let b = to.index(shape, i, s) as usize * W;
            let word: [u8; W] = src[a..a + W].try_into().unwrap();
            dst[b..b + W].copy_from_slice(&word);
        }
    }
}

/// OpenCL C macro text for kernels that address these layouts, generated from the formulas
/// above. Defines:
/// - `CLAYOUT_TILE`: the tile `t` (only when `tile` is `Some`);
/// - `CLAYOUT_AOS_INDEX(i, s, S)`: `i*S + s`;
/// - `CLAYOUT_SOA_INDEX(i, s, M)`: `s*M + i`;
/// - `CLAYOUT_ASTA_FULL(M, T)`: number of structures in full tiles, `M - M%T`;
/// - `CLAYOUT_ASTA_INDEX(i, s, S, T, M)`: the ASTA word index of word `s` of structure `i`,
///   partial tail included;
/// - `CLAYOUT_ASTA_INDEX_FULL(i, s, S, T)`: the same for a structure of a full tile (cheaper:
///   no test, no `M`).
///
/// All arguments are evaluated in `ulong` arithmetic; every macro parenthesizes its
/// arguments, and `i`, `T`, `M` may be evaluated more than once (pass plain values).
pub fn asta_macros(tile: Option<u32>) -> String {
    let mut s = String::new();
    s.push_str("/* generated by clayout::layout::asta_macros */\n");
    if let Some(t) = tile {
        s.push_str(&format!("#define CLAYOUT_TILE {}u\n", t.max(1)));
    }
    s.push_str(
        "#define CLAYOUT_AOS_INDEX(i, s, S) ((ulong)(i) * (ulong)(S) + (ulong)(s))\n\
         #define CLAYOUT_SOA_INDEX(i, s, M) ((ulong)(s) * (ulong)(M) + (ulong)(i))\n\
         #define CLAYOUT_ASTA_FULL(M, T) ((ulong)(M) - (ulong)(M) % (ulong)(T))\n\
         #define CLAYOUT_ASTA_INDEX_FULL(i, s, S, T) \\\n  \
         ((((ulong)(i) / (ulong)(T)) * (ulong)(S) + (ulong)(s)) * (ulong)(T) + (ulong)(i) % (ulong)(T))\n\
         #define CLAYOUT_ASTA_INDEX(i, s, S, T, M) \\\n  \
         ((ulong)(i) < CLAYOUT_ASTA_FULL(M, T) \\\n   \
         ? CLAYOUT_ASTA_INDEX_FULL(i, s, S, T) \\\n   \
         : CLAYOUT_ASTA_FULL(M, T) * (ulong)(S) + (ulong)(s) * ((ulong)(M) % (ulong)(T)) \\\n     \
         + ((ulong)(i) - CLAYOUT_ASTA_FULL(M, T)))\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layouts() -> Vec<Layout> {
        let mut v = vec![Layout::Aos, Layout::Soa];
        for t in [1, 2, 3, 16, 32, 64, 128] {
            v.push(Layout::Asta { t });
        }
        v
    }

    fn shapes() -> Vec<Shape> {
        let mut v = vec![];
        for m in [0u64, 1, 2, 3, 15, 16, 17, 31, 32, 33, 67, 131, 1009] {
            for s in [1u32, 2, 3, 5, 19, 32, 33] {
                v.push(Shape::new(m, s, 4));
            }
        }
        v
    }

    #[test]
    fn every_layout_is_a_bijection() {
        for sh in shapes() {
            for l in layouts() {
                let n = sh.words() as usize;
                let mut seen = vec![false; n];
                for i in 0..sh.m {
                    for s in 0..sh.s as u64 {
                        let k = l.index(sh, i, s) as usize;
                        assert!(k < n, "{l:?} {sh:?} ({i},{s}) -> {k}");
                        assert!(!seen[k], "{l:?} {sh:?} ({i},{s}) -> {k} twice");
                        seen[k] = true;
                    }
                }
            }
        }
    }

    #[test]
    fn asta_special_cases() {
        let sh = Shape::new(37, 5, 4);
        for i in 0..sh.m {
            for s in 0..5 {
                assert_eq!(Layout::Asta { t: 1 }.index(sh, i, s), Layout::Aos.index(sh, i, s));
                assert_eq!(Layout::Asta { t: 64 }.index(sh, i, s), Layout::Soa.index(sh, i, s));
            }
        }
        // Full tile example: M=8, S=2, T=4, structure 5 word 1: tile 1 -> (1*2+1)*4+1 = 13.
        assert_eq!(asta_index(5, 1, 2, 4, 8), 13);
        // Partial tail: M=10, S=2, T=4: r=2, structure 9 word 1 -> 8*2 + 1*2 + 1 = 19.
        assert_eq!(asta_index(9, 1, 2, 4, 10), 19);
        assert!(Layout::Asta { t: 1 }.same_as(Layout::Aos, sh));
        assert!(Layout::Asta { t: 37 }.same_as(Layout::Soa, sh));
        assert!(!Layout::Asta { t: 4 }.same_as(Layout::Soa, sh));
    }

    fn filled(sh: Shape, l: Layout) -> Vec<u8> {
        // Word at the index of (i, s) in layout l holds its AoS index i*S+s.
        let w = sh.w as usize;
        let mut v = vec![0u8; sh.bytes() as usize];
        for i in 0..sh.m {
            for s in 0..sh.s as u64 {
                let k = l.index(sh, i, s) as usize;
                let val = i * sh.s as u64 + s;
                v[k * w..k * w + w].copy_from_slice(&val.to_le_bytes()[..w]);
            }
        }
        v
    }

    #[test]
    fn permute_host_agrees_with_the_formulas() {
        for sh0 in shapes() {
            for w in [4u32, 8, 3] {
                let sh = Shape { w, ..sh0 };
                if sh.m > 200 && w == 3 {
                    continue;
                }
                for from in layouts() {
                    for to in [Layout::Aos, Layout::Soa, Layout::Asta { t: 16 }, Layout::Asta { t: 3 }] {
                        let mut b = filled(sh, from);
                        permute_host(&mut b, sh, from, to);
                        assert_eq!(b, filled(sh, to), "{sh:?} {from:?} -> {to:?}");
                        permute_host(&mut b, sh, to, from);
                        assert_eq!(b, filled(sh, from), "{sh:?} {to:?} -> {from:?} back");
                    }
                }
            }
        }
    }

    #[test]
    fn macros_mention_every_name() {
        let m = asta_macros(Some(32));
        for name in [
            "CLAYOUT_TILE 32u",
            "CLAYOUT_AOS_INDEX(i, s, S)",
            "CLAYOUT_SOA_INDEX(i, s, M)",
            "CLAYOUT_ASTA_INDEX(i, s, S, T, M)",
            "CLAYOUT_ASTA_INDEX_FULL(i, s, S, T)",
        ] {
            assert!(m.contains(name), "{name}");
        }
        assert!(!asta_macros(None).contains("CLAYOUT_TILE"));
        // Every line but the last of a macro ends with a continuation.
        for line in m.lines() {
            assert!(!line.ends_with(' '));
        }
    }
}
