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
fn refusals_carry_reasons() {
    assert!(word_size("typedef struct { float a; double b; } M;", "M").unwrap_err().contains("mix"));
    assert!(word_size("typedef struct { char a; } C;", "C").unwrap_err().contains("char"));
    assert!(word_size("typedef struct { struct q x; } N;", "N").unwrap_err().contains("nested"));
    assert!(word_size("typedef struct { float *p; } Q;", "Q").is_err());
    assert!(word_size("", "Nope").unwrap_err().contains("no definition"));
    assert!(word_size("typedef struct { float a", "X").is_err());
}
