//! Structure layouts from source text.

use crate::clc::struct_layout::*;

fn m(l: &StructLayout, name: &str) -> (String, u32, u32, u32) {
    let x = l.member(name).unwrap();
    (x.scalar.clone(), x.lanes, x.count, x.word_offset)
}

#[test]
fn scalars_only() {
    let l = struct_layout("typedef struct { float x, y, z; int id; } Body;", "Body").unwrap();
    assert_eq!((l.words, l.word_bytes, l.bytes), (4, 4, 16));
    assert_eq!(m(&l, "id"), ("int".into(), 1, 1, 3));
}

#[test]
fn vectors_align_to_their_size_and_three_is_four() {
    let src = "struct p { float m; float4 pos; float3 vel; float t; };";
    let l = struct_layout(src, "struct p").unwrap();
    assert_eq!(m(&l, "pos"), ("float".into(), 4, 1, 4));
    assert_eq!(m(&l, "vel"), ("float".into(), 3, 1, 8));
    assert_eq!(l.member("vel").unwrap().elem_bytes, 16);
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
fn array_lengths_are_constant_expressions_of_any_dimension() {
    let src = "typedef struct { float f[(19)]; float g[3 * 3]; int h[2][3]; uint k[0x4u]; } A;";
    let l = struct_layout(src, "A").unwrap();
    assert_eq!(l.member("f").unwrap().count, 19);
    assert_eq!(l.member("g").unwrap().count, 9);
    let h = l.member("h").unwrap();
    assert_eq!((h.dims.clone(), h.count, h.word_offset, h.dim_stride(0)), (vec![2, 3], 6, 28, 3));
    assert_eq!(l.member("k").unwrap().count, 4);
    assert_eq!(l.words, 19 + 9 + 6 + 4);
}

#[test]
fn mixed_sizes_take_the_greatest_common_word() {
    // int + double: 4-byte words, a double spans two.
    let src = "typedef struct { int type; int flags; double x, y, z; double q; double energy; } Site;";
    let l = struct_layout(src, "Site").unwrap();
    assert_eq!((l.word_bytes, l.words, l.bytes), (4, 12, 48));
    assert_eq!((l.member("x").unwrap().byte_offset, l.member("x").unwrap().word_offset), (8, 2));
    // float + uchar4: the four bytes share a word.
    let l = struct_layout("typedef struct { float x, y, z; uchar4 color; } Splat;", "Splat").unwrap();
    assert_eq!((l.word_bytes, l.words), (4, 4));
    assert_eq!(l.member("color").unwrap().byte_offset, 12);
    // float + uchar + uchar[3]: bytes inside the second word.
    let l = struct_layout("typedef struct { float w; uchar flags; uchar pad[3]; } W;", "W").unwrap();
    assert_eq!((l.word_bytes, l.words), (4, 2));
    assert_eq!(l.member("pad").unwrap().byte_offset, 5);
    // Four bytes: one word; short + float.
    let l = struct_layout("typedef struct { uchar r, g, b, a; } rgba_t;", "rgba_t").unwrap();
    assert_eq!((l.word_bytes, l.words), (4, 1));
    let l = struct_layout("typedef struct { short s; float f; half h; } H;", "H").unwrap();
    assert_eq!((l.word_bytes, l.words, l.member("h").unwrap().byte_offset), (4, 3, 8));
    // Doubles only stay 8-byte words.
    let l = struct_layout("typedef struct { double a; long b; } D;", "D").unwrap();
    assert_eq!((l.word_bytes, l.words), (8, 2));
}

#[test]
fn nested_structures_and_arrays_of_them_are_flattened() {
    let src = "typedef struct { float x, y, z; } vec3_t;\n\
               typedef struct { vec3_t v[3]; float area; float n[2]; } Tri;\n\
               struct inner { double d; int k; };\n\
               typedef struct { int a; struct inner in; } Outer;";
    let l = struct_layout(src, "Tri").unwrap();
    assert_eq!((l.word_bytes, l.words), (4, 12));
    let v = l.member("v").unwrap();
    assert_eq!((v.count, v.elem_bytes, v.scalar.as_str()), (3, 12, ""));
    let n = v.nested.as_ref().unwrap();
    assert_eq!((n.type_name.as_str(), n.bytes, n.member("z").unwrap().byte_offset), ("vec3_t", 12, 8));
    assert_eq!(l.member("area").unwrap().word_offset, 9);
    let paths = l.paths();
    assert!(paths.contains(&("v[0].z".to_string(), 8)), "{paths:?}");
    assert!(paths.contains(&("v[2]".to_string(), 24)), "{paths:?}");
    assert!(paths.contains(&("n[1]".to_string(), 44)), "{paths:?}");
    // A nested structure aligns to its largest member: 8 bytes for `struct inner`.
    let l = struct_layout(src, "Outer").unwrap();
    assert_eq!((l.word_bytes, l.bytes), (4, 24));
    assert_eq!(l.member("in").unwrap().byte_offset, 8);
    // Defined inside: reached, but nameless.
    let l = struct_layout("typedef struct { struct { float u, v; } uv; int id; } T;", "T").unwrap();
    let uv = l.member("uv").unwrap().nested.as_ref().unwrap();
    assert_eq!((uv.type_name.as_str(), l.words), ("", 3));
}

#[test]
fn member_types_through_typedef_and_macro_chains() {
    let src = "#define real float\ntypedef real real_t;\ntypedef real_t scalar;\n#define VEC float4\n\
               typedef struct { scalar a, b; real c; VEC d; } V;";
    let l = struct_layout(src, "V").unwrap();
    assert_eq!(m(&l, "b"), ("float".into(), 1, 1, 1));
    assert_eq!(m(&l, "d"), ("float".into(), 4, 1, 4));
}

#[test]
fn a_type_macro_defined_in_two_branches_is_not_guessed() {
    // Before preprocessing, which `#define` the compiler sees is not known.
    let src =
        "#ifdef USE_DOUBLE\n#define real double\n#else\n#define real float\n#endif\ntypedef struct { real a, b; } O;";
    assert!(struct_layout(src, "O").unwrap_err().contains("`real` is `#define`d more than once"));
    let src = "#ifdef A\n#define Item struct a\n#else\n#define Item struct b\n#endif\nstruct a { float x; };";
    assert!(struct_layout(src, "Item").unwrap_err().contains("`Item` is `#define`d more than once"));
    // The same definition twice is one.
    let src = "#define real float\n#define real float\ntypedef struct { real a; } O;";
    assert!(struct_layout(src, "O").is_ok());
}

#[test]
fn refusals() {
    let e = |src: &str, t: &str| struct_layout(src, t).unwrap_err();
    assert!(e("typedef struct { uchar r, g, b; } C;", "C").contains("not a whole number of 4-byte words"));
    assert!(e("typedef struct { struct q x; } N;", "N").contains("no definition of structure `struct q`"));
    assert!(e("typedef struct { float *p; } P;", "P").contains("pointer"));
    assert!(e("typedef struct { union { float a; int b; } u; } U;", "U").contains("union"));
    assert!(e("typedef struct { float a : 3; } B;", "B").contains("bit-field"));
    assert!(e("typedef struct { float a[N]; } H;", "H").contains("declarator"));
    assert!(e("typedef struct { float a[]; } H;", "H").contains("declarator"));
    assert!(e("typedef struct { float a; } __attribute__((packed)) K;", "K").contains("attributes"));
    assert!(e("typedef struct { float a __attribute__((aligned(16))); } K;", "K").contains("attributes"));
    assert!(e("typedef struct { size_t n; } Z;", "Z").contains("not a builtin type of a fixed size"));
    assert!(e("typedef struct { Mystery m; } Y;", "Y").contains("`Mystery`"));
    assert!(e("", "Nope").contains("no definition"));
    assert!(e("typedef struct { } E;", "E").contains("no members"));
    assert!(e("struct a { struct a *next; };", "struct a").contains("pointer"));
    // Two definitions that differ (in `#if` branches): which one the compiler sees is unknown.
    let two =
        "#ifdef A\ntypedef struct { int a; float w; } item;\n#else\ntypedef struct { float a; float w; } item;\n#endif";
    assert!(e(two, "item").contains("defined more than once"));
    let same = "#ifdef A\ntypedef struct { float a; } item;\n#else\ntypedef struct { float a; } item;\n#endif";
    assert!(struct_layout(same, "item").is_ok());
}

#[test]
fn probes_measure_offsets_and_nested_sizes_on_a_variable() {
    let l = struct_layout("typedef struct { float4 p; float m; } B;", "B").unwrap();
    let p = probe_expressions(&l, "v");
    assert_eq!(p[0], ("sizeof(B)".to_string(), 32));
    assert_eq!(p[1], ("(ulong)((__private char *)&v.p - (__private char *)&v)".to_string(), 0));
    assert_eq!(p[2], ("(ulong)((__private char *)&v.m - (__private char *)&v)".to_string(), 16));
    let src = "typedef struct { float x, y, z; } vec3_t;\ntypedef struct { vec3_t v[3]; uchar c[2]; } Tri;";
    let p = probe_expressions(&struct_layout(src, "Tri").unwrap(), "v");
    assert!(p.contains(&("sizeof(vec3_t)".to_string(), 12)), "{p:?}");
    assert!(p.contains(&("(ulong)((__private char *)&v.v[2] - (__private char *)&v)".to_string(), 24)), "{p:?}");
    assert!(p.contains(&("(ulong)((__private char *)&v.v[0].y - (__private char *)&v)".to_string(), 4)), "{p:?}");
    assert!(p.contains(&("(ulong)((__private char *)&v.c[1] - (__private char *)&v)".to_string(), 37)), "{p:?}");
}

#[test]
fn flat_layouts() {
    let l = StructLayout::flat("unsigned int", 5).unwrap();
    assert_eq!((l.words, l.word_bytes, l.members[0].count), (5, 4, 5));
    assert!(StructLayout::flat("half", 2).is_err());
}
