//! Garbage in, errors out: random and mutated inputs to every parser, which must return (an
//! error or not) rather than panic. Deterministic, so a failure reproduces.

use crate::annotation::*;
use crate::clc::kernels;
use crate::clc::lex::lex;
use crate::clc::types::decode_int_arg;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*: small, deterministic, good enough to shuffle fragments.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const FRAGMENTS: &[&str] = &[
    "//DL:",
    "// DL:",
    "AoS",
    "SoA",
    "ASTA",
    "AOS2ASTA_x",
    "auto",
    ":",
    ",",
    "[",
    "]",
    "(",
    ")",
    "->",
    "-",
    "+",
    "*",
    "/",
    "0",
    "1",
    "32",
    "0x",
    "0xFFFFFFFFFFFFFFFF",
    "99999999999999999999999",
    "global_size",
    "local_size",
    "num_groups",
    "get_global_size",
    "n",
    "f",
    " ",
    "\n",
    "\t",
    "\r\n",
    "#",
    "\"",
    "'",
    "\\",
    "/*",
    "*/",
    "é",
    "\u{0}",
    "__kernel",
    "kernel",
    "void",
    "k",
    "__global",
    "__local",
    "float",
    "struct",
    "int",
    "{",
    "}",
    ";",
    "__attribute__",
    "((",
    "))",
    "typedef",
    "#define",
    "const",
    "restrict",
    "[]",
    "double",
    "uint",
    "x",
    "SoA(3, 8)",
    "@",
];

const SEEDS: &[&str] = &[
    "//DL: AoS: f[global_size(0)] AOS2ASTA_foo\n__kernel void k(__global struct foo *f) {}\n",
    "//DL: SoA(3, double): p[n * 2 + auto] -> ASTA(32)\n__kernel void k(__global double *p, uint n) {}\n",
    "typedef struct { float a; } C;\n//DL: AoS: a[(n - 1) / local_size(0)], b[num_groups(1)]\n\
     kernel __attribute__((x(1))) void k(global C *a, global C *b, const int n) { { } }\n",
    "k: AoS: f[n] -> ASTA\nj //DL: SoA(2): g[auto]\n# comment\n",
];

fn random_text(rng: &mut Rng) -> String {
    let mut s = String::new();
    for _ in 0..rng.below(40) {
        s.push_str(FRAGMENTS[rng.below(FRAGMENTS.len())]);
    }
    s
}

/// A seed with a few bytes deleted, duplicated or replaced by fragments, cut at char boundaries.
fn mutated(rng: &mut Rng) -> String {
    let mut s = SEEDS[rng.below(SEEDS.len())].to_string();
    for _ in 0..1 + rng.below(4) {
        let mut at = rng.below(s.len() + 1);
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        let mut end = (at + rng.below(6)).min(s.len());
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        match rng.below(3) {
            0 => s.replace_range(at..end, ""),
            1 => s.insert_str(at, FRAGMENTS[rng.below(FRAGMENTS.len())]),
            _ => {
                let piece = s[at..end].to_string();
                s.insert_str(at, &piece);
            }
        }
    }
    s
}

fn exercise(text: &str, rng: &mut Rng) {
    let toks = lex(text);
    for t in &toks {
        assert!(text.get(t.span.start..t.span.end).is_some(), "span off a char boundary");
    }
    for k in kernels(text) {
        if let Err(e) = k {
            assert!(!e.reason.contains('\n'), "{:?}", e.reason);
        }
    }
    let (side, errors) = parse_side_file(text);
    for e in errors {
        assert!(!e.reason.contains('\n'), "{:?}", e.reason);
    }
    for a in annotate_program(text, &side) {
        if let Err(e) = &a.layout {
            assert!(!e.to_string().contains('\n'), "{e}");
        }
        if let Ok(l) = a.layout {
            for p in &l.params {
                let _ = p.extent.to_string();
            }
        }
    }
    for line in text.lines() {
        let parsed = parse_annotation(line);
        if let Err(e) = &parsed {
            assert!(!e.reason.contains('\n'), "{:?}", e.reason);
        }
        if let Ok(a) = parsed {
            let _ = a.to_string();
            let env = LaunchValues {
                global: vec![rng.next() >> rng.below(64), 1 + rng.below(9) as u64],
                local: if rng.below(2) == 0 { None } else { Some(vec![rng.next() % 3, 7]) },
                args: [("n".to_string(), rng.next() >> rng.below(64))].into(),
                auto_count: Some(rng.next()),
            };
            for p in &a.params {
                let _ = p.extent.eval(&env);
            }
        }
    }
}

#[test]
fn no_panic_on_garbage() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..3000 {
        let text = random_text(&mut rng);
        exercise(&text, &mut rng);
    }
    for _ in 0..3000 {
        let text = mutated(&mut rng);
        exercise(&text, &mut rng);
    }
    for seed in SEEDS {
        exercise(seed, &mut rng);
        for cut in 0..seed.len() {
            if seed.is_char_boundary(cut) {
                exercise(&seed[..cut], &mut rng);
            }
        }
    }
}

#[test]
fn no_panic_on_raw_bytes() {
    let mut rng = Rng(42);
    for _ in 0..2000 {
        let bytes: Vec<u8> = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        exercise(&text, &mut rng);
        let _ = decode_int_arg(["int", "char", "size_t", "ulong", "Foo"][rng.below(5)], &bytes[..bytes.len().min(9)]);
    }
}
