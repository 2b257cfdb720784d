//! Structure layouts from source text.

use crate::clc::struct_layout::*;

fn m(l: &StructLayout, name: &str) -> (String, u32, u32, u32) {
    let x = l.member(name).unwrap();
    (x.scalar.clone(), x.lanes, x.count, x.word_offset)
}

#[test]
fn scalars_only() {
    let l = struct_layout("typedef struct { float x, y, z; int id; } Body;", "Body").unwrap();
    assert_eq!((l.words, l.word_bytes), (4, 4));
    assert_eq!(m(&l, "id"), ("int".into(), 1, 1, 3));
}

#[test]
fn vectors_align_to_their_size_and_three_is_four() {
    let src = "struct p { float m; float4 pos; float3 vel; float t; };";
    let l = struct_layout(src, "struct p").unwrap();
    assert_eq!(m(&l, "pos"), ("float".into(), 4, 1, 4));
    assert_eq!(m(&l, "vel"), ("float".into(), 3, 1, 8));
    assert_eq!(m(&l, "t").3, 12);
    // Size rounded up to the largest alignment (16 bytes).
    assert_eq!(l.words, 16);
}

#[test]
fn arrays_typedef_of_tag_and_unsigned_spellings() {
    let src = "struct cell { double f[19]; double2 v; long n; };\ntypedef struct cell Cell;";
    let l = struct_layout(src, "Cell").unwrap();
    assert_eq!(l.word_bytes, 8);
    assert_eq!(m(&l, "f"), ("double".into(), 1, 19, 0));
    assert_eq!(m(&l, "v"), ("double".into(), 2, 1, 20));
    assert_eq!(m(&l, "n"), ("long".into(), 1, 1, 22));
    assert_eq!(l.words, 24);
    let l = struct_layout("typedef struct q { unsigned int a; unsigned b; uint2 c[2]; } Q;", "Q").unwrap();
    assert_eq!(m(&l, "b"), ("uint".into(), 1, 1, 1));
    assert_eq!(m(&l, "c"), ("uint".into(), 2, 2, 2));
    assert_eq!(l.words, 6);
}

#[test]
fn refusals() {
    let e = |src: &str, t: &str| struct_layout(src, t).unwrap_err();
    assert!(e("typedef struct { float a; double b; } M;", "M").contains("mix"));
    assert!(e("typedef struct { char a; } C;", "C").contains("char"));
    assert!(e("typedef struct { struct q x; } N;", "N").contains("nested"));
    assert!(e("typedef struct { float *p; } P;", "P").contains("pointer"));
    assert!(e("typedef struct { float a : 3; } B;", "B").contains("bit-field"));
    assert!(e("typedef struct { float a[0x10]; } H;", "H").contains("declarator"));
    assert!(e("typedef struct { float a; } __attribute__((packed)) K;", "K").contains("attributes"));
    assert!(e("", "Nope").contains("no definition"));
    assert!(e("typedef struct { } E;", "E").contains("no members"));
}

#[test]
fn probes_measure_offsets_on_a_variable() {
    let l = struct_layout("typedef struct { float4 p; float m; } B;", "B").unwrap();
    let p = probe_expressions(&l, "v");
    assert_eq!(p[0], ("sizeof(B)".to_string(), 32));
    assert_eq!(p[1], ("(ulong)((__private char *)&v.p - (__private char *)&v)".to_string(), 0));
    assert_eq!(p[2], ("(ulong)((__private char *)&v.m - (__private char *)&v)".to_string(), 16));
}

#[test]
fn flat_layouts() {
    let l = StructLayout::flat("unsigned int", 5).unwrap();
    assert_eq!((l.words, l.word_bytes, l.members[0].count), (5, 4, 5));
    assert!(StructLayout::flat("half", 2).is_err());
}
