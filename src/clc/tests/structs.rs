//! The structure finder and the word size of structures, as the runtime asks it.

use crate::clc::structs::*;

#[test]
fn typedef_of_anonymous_struct() {
    let src = "typedef struct { float spot, strike; float years; float call, put; } option_t;\n__kernel void k(__global option_t *o) {}";
    assert_eq!(word_size(src, "option_t"), Ok(4));
}

#[test]
fn tagged_struct_vectors_and_arrays() {
    let src = "// cell\nstruct cell { double f[19]; double2 v; };\ntypedef struct cell Cell;";
    assert_eq!(word_size(src, "struct cell"), Ok(8));
    assert_eq!(word_size(src, "Cell"), Ok(8));
}

#[test]
fn unsigned_spellings() {
    let src = "typedef struct p { unsigned int a; uint b; int4 c; unsigned d; } P;";
    assert_eq!(word_size(src, "P"), Ok(4));
}

#[test]
fn mixed_sizes_and_nested_structures() {
    // The greatest common size, at least 4 (narrower members share a word).
    assert_eq!(word_size("typedef struct { float a; double b; } M;", "M"), Ok(4));
    assert_eq!(word_size("typedef struct { char a; } C;", "C"), Ok(4));
    assert_eq!(word_size("typedef struct { float x; uchar4 c; } S;", "S"), Ok(4));
    assert_eq!(word_size("struct v { double x, y; };\ntypedef struct { struct v a, b; long n; } N;", "N"), Ok(8));
}

#[test]
fn refusals_carry_reasons() {
    assert!(word_size("typedef struct { struct q x; } N;", "N").unwrap_err().contains("no definition"));
    assert!(word_size("typedef struct { float *p; } Q;", "Q").is_err());
    assert!(word_size("", "Nope").unwrap_err().contains("no definition"));
    assert!(word_size("typedef struct { float a", "X").is_err());
}

#[test]
fn the_word_size_reads_what_the_layout_reads() {
    // Array lengths the source spells with a macro and attributes that only align: the
    // compiler's sizeof gives S, so the word size needs neither.
    let src = "#define N 19\ntypedef struct { double f[N]; double2 v __attribute__((aligned(16))); } C;";
    assert_eq!(word_size(src, "C"), Ok(8));
    assert_eq!(word_size("struct t { __const float a; __attribute__((aligned(8))) float b; };", "struct t"), Ok(4));
    // Members narrower than a word share one, however they are spelled.
    for m in ["unsigned char c", "signed char c", "unsigned short s"] {
        let src = format!("typedef struct {{ {m}; float x; }} T;");
        assert_eq!(word_size(&src, "T"), Ok(4), "{m}");
    }
    assert!(word_size("typedef struct { long long a; } T;", "T").is_err());
}

#[test]
fn definitions_are_found_through_typedefs_and_macros() {
    let src = "struct body { float x, y; };\ntypedef struct body Body;\ntypedef Body Alias;\n\
               #define Particle struct body\ntypedef struct { double d; } D, *DPtr;\ntypedef D D2;";
    for name in ["struct body", "Body", "Alias", "Particle", "D2"] {
        assert!(word_size(src, name).is_ok(), "{name}");
    }
    // A pointer typedef names no structure.
    assert!(word_size(src, "DPtr").unwrap_err().contains("no definition"));
    let cycle = "#define A B\n#define B A\n";
    assert!(word_size(cycle, "A").unwrap_err().contains("too deep"));
}
