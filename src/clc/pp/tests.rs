//! The preprocessor against the examples of C99 6.10.3 and one test per directive and per
//! unsure case. Expansion results are compared token by token (white space between tokens
//! aside, string literals exact); line structure is compared as text where it is the point.

use std::collections::HashMap;

use super::*;

fn run_with(sources: &[&str], options: &str, predefined: &Predefined, headers: &[(&str, &str)]) -> Preprocessed {
    let map: HashMap<String, String> = headers.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
    let mut resolver = move |name: &str, _angled: bool, _includer: &str| {
        map.get(name).map(|text| Header { name: name.to_string(), text: text.clone() })
    };
    let input = Input {
        sources,
        main_name: "main.cl",
        options,
        predefined,
        resolver: &mut resolver,
        limits: Limits::default(),
    };
    preprocess(input).expect("within limits")
}

fn run(src: &str) -> Preprocessed {
    run_with(&[src], "", &Predefined::default(), &[])
}

/// The tokens of a text, `#line` markers left out.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lx = lex::Lexer::new(text);
    while let Some(line) = lx.next_line(false) {
        if line.toks.first().is_some_and(|t| t.is_hash()) && line.toks.get(1).is_some_and(|t| &*t.text == "line") {
            continue;
        }
        out.extend(line.toks.iter().map(|t| t.text.to_string()));
    }
    out
}

fn expands_to(src: &str, expected: &str) {
    let p = run(src);
    assert_eq!(tokens(&p.text), tokens(expected), "\n--- output ---\n{}", p.text);
    assert!(p.errors.is_empty(), "{:?}", p.errors);
}

fn non_blank(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.trim().is_empty()).collect()
}

// C99 6.10.3.3 EXAMPLE.
#[test]
fn c99_hash_hash() {
    expands_to(
        "#define hash_hash # ## #\n#define mkstr(a) # a\n#define in_between(a) mkstr(a)\n\
         #define join(c, d) in_between(c hash_hash d)\nchar p[] = join(x, y);\n",
        "char p[] = \"x ## y\";",
    );
}

// C99 6.10.3.4 EXAMPLE: GCC and clang give the first of the two allowed results.
#[test]
fn c99_rescan_f_2_9() {
    expands_to("#define f(a) a*g\n#define g(a) f(a)\nf(2)(9)\n", "2*9*g");
}

// C99 6.10.3.5 EXAMPLE 1.
#[test]
fn c99_tabsize() {
    expands_to("#define TABSIZE 100\nint table[TABSIZE];\n", "int table[100];");
}

const EXAMPLE3_DEFS: &str = "#define x 3\n#define f(a) f(x * (a))\n#undef x\n#define x 2\n#define g f\n\
    #define z z[0]\n#define h g(~\n#define m(a) a(w)\n#define w 0,1\n#define t(a) a\n#define p() int\n\
    #define q(x) x\n#define r(x,y) x ## y\n#define str(x) # x\n";

// C99 6.10.3.5 EXAMPLE 3.
#[test]
fn c99_example3() {
    let src = format!(
        "{EXAMPLE3_DEFS}f(y+1) + f(f(z)) % t(t(g)(0) + t)(1);\ng(x+(3,4)-w) | h 5) & m\n(f)^m(m);\n\
         p() i[q()] = {{ q(1), r(2,3), r(4,), r(,5), r(,) }};\nchar c[2][6] = {{ str(hello), str() }};\n"
    );
    expands_to(
        &src,
        "f(2 * (y+1)) + f(2 * (f(2 * (z[0])))) % f(2 * (0)) + t(1);\n\
         f(2 * (2+(3,4)-0,1)) | f(2 * (~ 5)) & f(2 * (0,1))^m(0,1);\n\
         int i[] = { 1, 23, 4, 5, };\nchar c[2][6] = { \"hello\", \"\" };",
    );
}

// C99 6.10.3.5 EXAMPLE 4, `#include xstr(INCFILE(2).h)` included.
#[test]
fn c99_example4_str_xstr() {
    let src = "#define str(s) # s\n#define xstr(s) str(s)\n\
        #define debug(s, t) printf(\"x\" # s \"= %d, x\" # t \"= %s\", \\\n x ## s, x ## t)\n\
        #define INCFILE(n) vers ## n\n#define glue(a, b) a ## b\n#define xglue(a, b) glue(a, b)\n\
        #define HIGHLOW \"hello\"\n#define LOW LOW \", world\"\n\
        debug(1, 2);\nfputs(str(strncmp(\"abc\\0d\", \"abc\", '\\4') // this goes away\n == 0) str(: @\\n), s);\n\
        #include xstr(INCFILE(2).h)\nglue(HIGH, LOW);\nxglue(HIGH, LOW)\n";
    let p = run_with(&[src], "", &Predefined::default(), &[("vers2.h", "included_vers2\n")]);
    assert_eq!(
        tokens(&p.text),
        tokens(
            "printf(\"x\" \"1\" \"= %d, x\" \"2\" \"= %s\", x1, x2);\n\
             fputs(\"strncmp(\\\"abc\\\\0d\\\", \\\"abc\\\", '\\\\4') == 0\" \": @\\n\", s);\n\
             included_vers2\n\"hello\";\n\"hello\" \", world\""
        ),
        "{}",
        p.text
    );
    assert_eq!(p.headers, ["vers2.h"]);
    assert!(p.is_exact(), "{:?} {:?}", p.unsure, p.errors);
}

// C99 6.10.3.5 EXAMPLE 5: placemarkers.
#[test]
fn c99_example5_placemarkers() {
    expands_to(
        "#define t(x,y,z) x ## y ## z\nint j[] = { t(1,2,3), t(,4,5), t(6,,7), t(8,9,),\n\
         t(10,,), t(,11,), t(,,12), t(,,) };\n",
        "int j[] = { 123, 45, 67, 89,\n10, 11, 12, };",
    );
}

// C99 6.10.3.5 EXAMPLE 6: a redefinition that is the same is fine; a different one replaces.
#[test]
fn c99_example6_redefinition() {
    expands_to(
        "#define OBJ_LIKE (1-1)\n#define OBJ_LIKE /* white space */ (1-1) /* other */\n\
         #define FUNC_LIKE(a) ( a )\n#define FUNC_LIKE( a )( /* note the white space */ \\\n a /* other stuff */ )\n\
         OBJ_LIKE FUNC_LIKE(3)\n#define OBJ_LIKE (0)\nOBJ_LIKE\n",
        "(1-1) ( 3 ) (0)",
    );
}

// C99 6.10.3.5 EXAMPLE 7: variadic macros.
#[test]
fn c99_example7_variadic() {
    expands_to(
        "#define debug(...) fprintf(stderr, __VA_ARGS__)\n#define showlist(...) puts(#__VA_ARGS__)\n\
         #define report(test, ...) ((test)?puts(#test):\\\n printf(__VA_ARGS__))\n\
         debug(\"Flag\");\ndebug(\"X = %d\\n\", x);\nshowlist(The first, second, and third items.);\n\
         report(x>y, \"x is %d but y is %d\", x, y);\n",
        "fprintf(stderr, \"Flag\" );\nfprintf(stderr, \"X = %d\\n\", x );\n\
         puts( \"The first, second, and third items.\" );\n\
         ((x>y)?puts(\"x>y\"): printf(\"x is %d but y is %d\", x, y));",
    );
}

// C99 6.10.3.5 EXAMPLE 2 (white space in stringized arguments) and 6.10.3.2p2.
#[test]
fn stringizing_spacing_and_escapes() {
    expands_to(
        "#define s(x) #x\ns(  a   +\n  b  ) s(\"a\\n\") s('\"') s(a/* c */b) s()\n",
        "\"a + b\" \"\\\"a\\\\n\\\"\" \"'\\\"'\" \"a b\" \"\"",
    );
    // clang drops a backslash that would escape the closing quote.
    expands_to("#define s(x) #x\ns(a\\) s(\\\\)\n", "\"a\" \"\\\\\"");
}

#[test]
fn blue_paint_and_indirect_recursion() {
    expands_to("#define foo (4 + foo)\n#define bar(x) x\nbar(foo)\n", "(4 + foo)");
    expands_to("#define x (4 + y)\n#define y (2 * x)\nx y\n", "(4 + (2 * x)) (2 * (4 + y))");
    // A painted token stays painted after it leaves its expansion.
    expands_to("#define f(x) x\n#define g f(g)\ng\n", "g");
    expands_to("#define self self\n#define id(x) x\nid(self)\n", "self");
}

// GCC's manual: a directive inside an invocation takes effect for argument pre-expansion.
#[test]
fn directives_inside_arguments() {
    let p = run("#define f(x) x x\nf (1\n#undef f\n#define f 2\nf)\n");
    assert_eq!(tokens(&p.text), ["1", "2", "1", "2"]);
    assert!(!p.unsure.is_empty(), "an invocation over a directive is unsure");
}

// clang: a directive, or the end of a header, between a function-like macro's name and `(`
// means there is no invocation; within the arguments, directives act.
#[test]
fn a_directive_or_file_end_ends_the_search_for_the_parenthesis() {
    let p = run("#define f(x) [x]\nf\n#define y 1\n(y)\nf\n(2)\n");
    assert_eq!(tokens(&p.text), ["f", "(", "1", ")", "[", "2", "]"]);
    assert!(p.is_exact(), "{:?}", p.unsure);
    let p = run_with(&["#include \"h.h\"\n(1)\n"], "", &Predefined::default(), &[("h.h", "#define f(x) x\nf\n")]);
    assert_eq!(tokens(&p.text), ["f", "(", "1", ")"]);
    let p = run("#define f(x, y) x y\nf(1,\n#ifdef NOPE\n2\n#else\n3\n#endif\n)\n");
    assert_eq!(tokens(&p.text), ["1", "3"]);
    assert!(p.is_exact(), "{:?}", p.unsure);
}

#[test]
fn gnu_comma_pasting_as_clang_in_c99_mode() {
    expands_to(
        "#define P(fmt, ...) printf(fmt, ## __VA_ARGS__)\nP(\"a\"); P(\"b\",); P(\"c\", 1, 2);\n",
        "printf(\"a\"); printf(\"b\",); printf(\"c\", 1, 2);",
    );
    expands_to("#define Q(...) f(0, ## __VA_ARGS__)\nQ() Q(1)\n", "f(0,) f(0,1)");
    expands_to("#define N(args...) g(args)\nN(1, 2) N()\n", "g(1, 2) g()");
}

#[test]
fn pasting_makes_new_tokens_and_rejects_invalid_ones() {
    expands_to("#define cat(a, b) a ## b\ncat(x, 1) cat(+, =) cat(1, e) cat(., 5)\n", "x1 += 1e .5");
    let p = run("#define cat(a, b) a ## b\ncat(+, -)\n");
    assert_eq!(p.errors.len(), 1, "{:?}", p.errors);
    assert_eq!(tokens(&p.text), ["+", "-"]);
    // A pasted name is a macro name like any other.
    expands_to("#define cat(a, b) a ## b\n#define xy 42\ncat(x, y)\n", "42");
}

#[test]
fn arguments_are_expanded_before_substitution_but_not_for_hash_or_paste() {
    expands_to(
        "#define V 1\n#define s(x) #x\n#define xs(x) s(x)\n#define c(x) x ## V\ns(V) xs(V) c(V)\n",
        "\"V\" \"1\" VV",
    );
    expands_to("#define f(x) (x)\n#define g(x) f\ng(0)(1) f (2)\n", "(1) (2)");
    expands_to("#define f(x) x\nf\n+\n", "f +");
}

#[test]
fn argument_count_errors() {
    for src in
        ["#define f(a,b) a\nf(1)\n", "#define f(a) a\nf(1,2)\n", "#define f() 1\nf(1)\n", "#define f(a) a\nf(1\n"]
    {
        let p = run(src);
        assert_eq!(p.errors.len(), 1, "{src}: {:?}", p.errors);
    }
    expands_to("#define f() 1\n#define g(a) [a]\nf() g() g(())\n", "1 [] [()]");
}

#[test]
fn define_errors() {
    for src in [
        "#define\n",
        "#define 3 x\n",
        "#define defined\n",
        "#define f(a,a) a\n",
        "#define f(a b\n",
        "#define f(x) #y\n",
        "#define f(x) ## x\n",
        "#define o x ##\n",
        "#define f(__VA_ARGS__) 1\n",
        "#define f(... x) 1\n",
    ] {
        let p = run(src);
        assert_eq!(p.errors.len(), 1, "{src}: {:?}", p.errors);
    }
    // `#` in an object-like macro is an ordinary token.
    expands_to("#define H # x\n[H]\n", "[# x]");
}

#[test]
fn object_like_needs_no_space_before_its_body() {
    expands_to("#define X+1\n#define Y (2)\nX Y\n", "+1 (2)");
}

#[test]
fn undef_and_redefinition() {
    expands_to("#define A 1\nA\n#undef A\nA\n#define A 2\nA\n", "1 A 2");
}

#[test]
fn conditionals() {
    let src = "#define A 2\n\
        #if A == 2\nyes1\n#else\nno\n#endif\n\
        #ifdef A\nyes2\n#endif\n#ifndef A\nno\n#endif\n\
        #if 0\nno\n#elif A > 1\nyes3\n#elif 1\nno\n#else\nno\n#endif\n\
        #if 0\n#if 1\nno\n#else\nno\n#endif\n#elif 0\nno\n#else\nyes4\n#endif\n\
        #ifdef B\nno\n#elifdef A\nyes5\n#endif\n#ifdef B\nno\n#elifndef B\nyes6\n#endif\n\
        #if defined A && defined(A) && !defined B\nyes7\n#endif\n\
        #if 0\n#garbage 'unterminated\n#else\nyes8\n#endif\n";
    expands_to(src, "yes1 yes2 yes3 yes4 yes5 yes6 yes7 yes8");
}

#[test]
fn conditional_structure_errors() {
    for src in [
        "#else\n",
        "#endif\n",
        "#elif 1\n",
        "#if 1\n",
        "#if 1\n#else\n#else\n#endif\n",
        "#if 1\n#else\n#elif 1\n#endif\n",
    ] {
        let p = run(src);
        assert_eq!(p.errors.len(), 1, "{src}: {:?}", p.errors);
    }
}

#[test]
fn unbalanced_conditional_in_header_is_an_error() {
    let p = run_with(&["#include \"h.h\"\n#endif\n"], "", &Predefined::default(), &[("h.h", "#if 1\n")]);
    assert_eq!(p.errors.len(), 2, "{:?}", p.errors);
}

#[test]
fn elif_after_a_taken_group_is_not_evaluated() {
    let p = run("#if 1\na\n#elif 1/0\nb\n#elif defined(__SPIR__)\nc\n#endif\n");
    assert_eq!(tokens(&p.text), ["a"]);
    assert!(p.is_exact(), "{:?} {:?}", p.errors, p.unsure);
}

#[test]
fn defined_produced_by_a_macro_is_evaluated_like_clang() {
    expands_to("#define A\n#define D(x) defined(x)\n#if D(B) || defined A\nyes\n#endif\n", "yes");
}

#[test]
fn error_and_warning_directives() {
    let p = run("#if 0\n#error not this\n#endif\n#warning careful\n#error stop here\nx\n");
    assert_eq!(p.errors.len(), 1);
    assert_eq!(p.errors[0].message, "#error stop here");
    assert_eq!(p.errors[0].line, 5);
    assert_eq!(p.warnings.len(), 1);
    assert_eq!(p.warnings[0].message, "#warning careful");
    assert_eq!(tokens(&p.text), ["x"]);
}

#[test]
fn null_directive_ident_and_invalid_directives() {
    let p = run("#\n# /* comment */\n#ident \"x\"\na\n");
    assert!(p.is_exact());
    assert_eq!(tokens(&p.text), ["a"]);
    assert_eq!(run("#foo\n").errors.len(), 1);
    assert!(run("#if 0\n#foo\n#endif\n").is_exact());
}

#[test]
fn line_directive_and_line_macro() {
    let p = run("a __LINE__\n#line 100\nb __LINE__\n#define L __LINE__\n#line 7 \"other.cl\"\nc L\n");
    assert_eq!(tokens(&p.text), ["a", "1", "b", "100", "c", "7"]);
    assert!(p.text.contains("#line 7 \"other.cl\""), "{}", p.text);
    assert_eq!(p.line_map.lookup(1), Some(("main.cl", 1)));
    let last = p.text.lines().position(|l| l.starts_with('c')).expect("c") + 1;
    assert_eq!(p.line_map.lookup(last), Some(("other.cl", 7)));
    // GNU line marker.
    let p = run("# 40 \"g.cl\" 1\nx __LINE__\n");
    assert_eq!(tokens(&p.text), ["x", "40"]);
    assert_eq!(run("#line x\n").errors.len(), 1);
}

#[test]
fn line_macro_is_the_end_of_a_multiline_invocation() {
    expands_to("#define f(x) x __LINE__\nf(a\n)\n", "a 3");
    // In an argument, as clang: where the argument's own expansion ends.
    expands_to("#define g(x) x\n#define L __LINE__\ng(\n__LINE__ L\n)\n", "4 4");
    expands_to("#define g(x) x\n#define k(y) g(__LINE__) y\nk(1\n)\n", "4 1");
    let p = run("#define f(x, y) x __LINE__\nf(a,\n\n)");
    assert_eq!(tokens(&p.text), ["a", "4"]);
}

#[test]
fn counter_in_clang_order() {
    expands_to(
        "__COUNTER__ __COUNTER__\n#define twice(x) x x\n#define unused(x) 0\n#define s(x) #x\n\
         twice(__COUNTER__) unused(__COUNTER__) s(__COUNTER__) __COUNTER__\n",
        "0 1 2 2 0 \"__COUNTER__\" 3",
    );
}

#[test]
fn extern_c_guard_is_skipped() {
    let src = "#ifdef __cplusplus\nextern \"C\" {\n#endif\n//DL: p : S=4\n__kernel void k(__global float *p) {}\n\
               #ifdef __cplusplus\n}\n#endif\n";
    let p = run(src);
    assert!(p.is_exact(), "{:?}", p.unsure);
    assert_eq!(non_blank(&p.text), ["//DL: p : S=4", "__kernel void k(__global float *p) {}"]);
    assert_eq!(p.text.lines().position(|l| l.starts_with("__kernel")), Some(4), "line numbers kept:\n{}", p.text);
}

#[test]
fn annotations_stay_and_other_comments_go() {
    let src =
        "/* licence */\n// DL: a : S=2\n/*DL: b : S=3 */ int x; // trailing\n#define M 1 //DL: in a directive\nM\n";
    let p = run(src);
    assert_eq!(p.text, "\n// DL: a : S=2\n/*DL: b : S=3 */ int x;\n\n1\n");
}

#[test]
fn annotation_inside_arguments_comes_after_the_expansion() {
    let p = run("#define f(x) x\nf(1, //DL: q\n)\n");
    assert_eq!(p.errors.len(), 1);
    let p = run("#define f(x) [x]\nf(1 //DL: q\n)\nnext\n");
    assert_eq!(tokens(&p.text), ["[", "1", "]", "//DL: q", "next"], "{}", p.text);
    assert!(p.text.contains("//DL: q\n"), "a line comment ends its line:\n{}", p.text);
}

#[test]
fn includes_get_line_markers_and_the_main_file_keeps_its_lines() {
    let headers = [("a.h", "#pragma once\nint a;\n#include \"b.h\"\nint a2;\n"), ("b.h", "int b;\n")];
    let src = "#include \"a.h\"\n#include <a.h>\nint m;\n";
    let p = run_with(&[src], "", &Predefined::default(), &headers);
    assert!(p.is_exact(), "{:?} {:?}", p.unsure, p.errors);
    assert_eq!(
        p.text,
        "#line 2 \"a.h\"\nint a;\n#line 1 \"b.h\"\nint b;\n#line 4 \"a.h\"\nint a2;\n#line 3 \"main.cl\"\nint m;\n"
    );
    assert_eq!(p.headers, ["a.h", "b.h"]);
    let find = |s: &str| p.text.lines().position(|l| l == s).expect(s) + 1;
    assert_eq!(p.line_map.lookup(find("int a;")), Some(("a.h", 2)));
    assert_eq!(p.line_map.lookup(find("int b;")), Some(("b.h", 1)));
    assert_eq!(p.line_map.lookup(find("int a2;")), Some(("a.h", 4)));
    assert_eq!(p.line_map.lookup(find("int m;")), Some(("main.cl", 3)));
}

#[test]
fn include_guards_with_reserved_names_are_the_programs_own() {
    let headers = [("u.h", "#ifndef __UTILS_H__\n#define __UTILS_H__\n#define real float\n#endif\n")];
    let p = run_with(&["#include \"u.h\"\n#include \"u.h\"\nreal x;\n"], "", &Predefined::default(), &headers);
    assert!(p.is_exact(), "{:?}", p.unsure);
    assert_eq!(tokens(&p.text), ["float", "x", ";"]);
}

// A fallback for compilers without a standard macro is not an include guard.
#[test]
fn a_program_defining_a_device_name_does_not_make_it_its_own() {
    let p = run("#ifndef __OPENCL_C_VERSION__\n#define __OPENCL_C_VERSION__ 100\n#endif\n");
    assert_eq!(p.unsure.len(), 1, "{:?}", p.unsure);
    let p = run("#ifndef _MY_GUARD\n#define _MY_GUARD\n#endif\n");
    assert!(p.is_exact(), "{:?}", p.unsure);
}

#[test]
fn undefining_options_reach_the_compiler_for_device_names() {
    let p = run_with(
        &["__SPIR__ MINE\n#ifdef __SPIR__\n#endif\n"],
        "-U__SPIR__ -UMINE -DX=1 -w",
        &Predefined::default(),
        &[],
    );
    assert!(p.is_exact(), "{:?}", p.unsure);
    assert_eq!(p.compiler_options, "-w -U__SPIR__");
}

#[test]
fn include_through_macros_and_resolver_arguments() {
    let mut seen = Vec::new();
    let mut resolver = |name: &str, angled: bool, includer: &str| {
        seen.push((name.to_string(), angled, includer.to_string()));
        Some(Header {
            name: format!("dir/{name}"),
            text: if name == "x.h" { "#include \"y.h\"\n".into() } else { String::new() },
        })
    };
    let src = "#define H <x.h>\n#define Q \"q.h\"\n#include H\n#include Q\n";
    let predefined = Predefined::default();
    let input = Input {
        sources: &[src],
        main_name: "main.cl",
        options: "",
        predefined: &predefined,
        resolver: &mut resolver,
        limits: Limits::default(),
    };
    let p = preprocess(input).expect("ok");
    assert!(p.is_exact());
    assert_eq!(
        seen,
        [
            ("x.h".to_string(), true, "main.cl".to_string()),
            ("y.h".to_string(), false, "dir/x.h".to_string()),
            ("q.h".to_string(), false, "main.cl".to_string())
        ]
    );
}

#[test]
fn missing_header_is_unsure_and_an_error_only_where_taken() {
    let p = run("#include \"none.h\"\nx\n");
    assert_eq!(p.errors.len(), 1);
    assert_eq!(p.unsure.len(), 1);
    assert_eq!(p.unsure[0].line, 1);
    assert!(run("#if 0\n#include \"none.h\"\n#endif\n").is_exact());
    assert_eq!(run("#include\n").errors.len(), 1);
}

#[test]
fn recursive_include_stops_at_the_depth_limit() {
    let p = run_with(&["#include \"r.h\"\n"], "", &Predefined::default(), &[("r.h", "#include \"r.h\"\nr\n")]);
    assert_eq!(p.errors.len(), 1, "{:?}", p.errors);
    assert_eq!(tokens(&p.text).len(), 199);
}

#[test]
fn several_sources_are_one_text() {
    let p = run_with(&["#define A 1\nint a = A", "; int b = A;\n"], "", &Predefined::default(), &[]);
    assert_eq!(tokens(&p.text), ["int", "a", "=", "1", ";", "int", "b", "=", "1", ";"]);
}

#[test]
fn options_come_before_the_source_in_order() {
    let p = run_with(&["A B C F(2)\n"], "-DA -DB=2 -DC=x -UC -D F(x)=x+1", &Predefined::default(), &[]);
    assert_eq!(tokens(&p.text), ["1", "2", "C", "2", "+", "1"]);
    assert!(p.is_exact());
    let opts = p.macros.iter().filter(|m| m.origin == MacroOrigin::Option).map(|m| m.name.as_str()).collect::<Vec<_>>();
    assert_eq!(opts, ["A", "B", "F"]);
}

#[test]
fn predefined_macros_and_known_undefined_names() {
    let facts = DeviceFacts {
        version: (3, 0),
        default_c_version: Some((1, 2)),
        extensions: "cl_khr_fp64".into(),
        image_support: false,
        little_endian: true,
        ..Default::default()
    };
    let opts = parse_build_options("-cl-fast-relaxed-math");
    let pre = predefined_macros(&facts, &opts);
    let src = "#if __OPENCL_VERSION__ >= CL_VERSION_3_0 && __OPENCL_C_VERSION__ == 120\nv\n#endif\n\
        #ifdef cl_khr_fp64\nd\n#endif\n#ifdef __IMAGE_SUPPORT__\ni\n#endif\n#ifdef __FAST_RELAXED_MATH__\nf\n#endif\n\
        #if defined(__ENDIAN_LITTLE__) && !defined(__EMBEDDED_PROFILE__)\nl\n#endif\n";
    let p = run_with(&[src], "-cl-fast-relaxed-math", &pre, &[]);
    assert!(p.is_exact(), "{:?}", p.unsure);
    assert_eq!(tokens(&p.text), ["v", "d", "f", "l"]);
    assert_eq!(p.compiler_options, "-cl-fast-relaxed-math");
    assert!(p.macros.iter().any(|m| m.name == "cl_khr_fp64" && m.origin == MacroOrigin::Predefined));
}

#[test]
fn unsure_device_names_in_conditions() {
    for (src, unsure) in [
        ("#ifdef __NV_CL_C_VERSION\n#endif\n", true),
        ("#if __clang__\n#endif\n", true),
        ("#if defined(__SPIR__) || 1\n#endif\n", false),
        ("#ifndef M_PI\n#define M_PI 3.14\n#endif\n", true),
        ("#ifdef cl_khr_fp16\n#endif\n", true),
        ("#ifdef __OPENCL_C_VERSION__\n#endif\n", true),
        ("#ifdef __cplusplus\n#endif\n", false),
        ("#ifdef MY_OWN_FLAG\n#endif\n", false),
        ("#undef __SPIR__\n#ifdef __SPIR__\n#endif\n", false),
        ("#if 0\n#ifdef __SPIR__\n#endif\n#endif\n", false),
    ] {
        let p = run(src);
        assert_eq!(!p.unsure.is_empty(), unsure, "{src}: {:?}", p.unsure);
        assert!(p.errors.is_empty(), "{src}: {:?}", p.errors);
    }
    let p = run("\n#ifdef __SPIR__\n#endif\n");
    assert_eq!((p.unsure[0].file.as_str(), p.unsure[0].line), ("main.cl", 2));
    assert!(p.unsure[0].message.contains("__SPIR__"));
}

#[test]
fn unsure_builtins_are_left_for_the_compiler() {
    for name in ["__FILE__", "__DATE__", "__TIME__"] {
        let p = run(&format!("x {name}\n"));
        assert_eq!(p.unsure.len(), 1, "{name}");
        assert_eq!(tokens(&p.text), ["x", name]);
    }
    assert!(run("#ifdef __FILE__\n#endif\n").is_exact());
}

#[test]
fn pragmas_pass_through_in_place() {
    let src = "#define N 4\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\nfor(;;)\n#pragma unroll N\nx\n\
               #pragma nounroll\n#pragma OPENCL FP_CONTRACT ON\n#pragma once\n";
    let p = run(src);
    assert!(p.is_exact(), "{:?}", p.unsure);
    assert_eq!(
        p.text,
        "\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\nfor(;;)\n#pragma unroll 4\nx\n#pragma nounroll\n#pragma OPENCL FP_CONTRACT ON\n"
    );
    for src in ["#pragma pack(1)\n", "#pragma STDC FP_CONTRACT ON\n", "#pragma push_macro(\"X\")\n"] {
        let p = run(src);
        assert_eq!(p.unsure.len(), 1, "{src}");
        assert!(p.text.contains(src.trim_end()), "{}", p.text);
    }
    let p = run("#define enable disable\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
    assert_eq!(p.unsure.len(), 1);
}

#[test]
fn pragma_operator() {
    assert!(run("_Pragma(\"unroll\") x\n").is_exact());
    assert!(run("#define U _Pragma(\"OPENCL EXTENSION cl_khr_fp64 : enable\")\nU\n").is_exact());
    let p = run("_Pragma(\"pack(1)\") x\n");
    assert_eq!(p.unsure.len(), 1);
    assert_eq!(tokens(&p.text), ["_Pragma", "(", "\"pack(1)\"", ")", "x"]);
}

#[test]
fn undef_of_a_device_macro_reaches_the_compiler() {
    let p = run("#undef M_PI_F\n#undef MINE\nx\n");
    assert_eq!(p.text, "#undef M_PI_F\n\nx\n");
}

#[test]
fn self_referential_device_macro_left_unexpanded_is_unsure() {
    let p = run("#define FLT_MAX FLT_MAX\nFLT_MAX\n");
    assert_eq!(p.unsure.len(), 1, "{:?}", p.unsure);
}

#[test]
fn characters_that_start_no_token_are_unsure() {
    for src in ["S\\", "int caf\\u00e9;\n", "a @ b\n", "'open\n"] {
        assert_eq!(run(src).unsure.len(), 1, "{src:?}");
    }
    assert!(run("#if 0\n'open @\n#endif\n").is_exact());
}

#[test]
fn va_opt_is_unsure() {
    let p = run("#define F(a, ...) f(a __VA_OPT__(,) __VA_ARGS__)\nF(1)\n");
    assert_eq!(p.unsure.len(), 1);
}

#[test]
fn hash_starting_an_output_line_is_unsure() {
    let p = run("#define E\nE # define X\n");
    assert_eq!(p.unsure.len(), 1, "{}", p.text);
}

#[test]
fn invocation_across_a_file_boundary_is_unsure() {
    let p = run_with(&["#include \"h.h\"\n1)\n"], "", &Predefined::default(), &[("h.h", "#define f(x) x\nf(\n")]);
    assert!(!p.unsure.is_empty());
    assert_eq!(tokens(&p.text), ["1"]);
}

#[test]
fn diagnostics_are_one_line() {
    let p = run_with(&["x\n"], "'-cl-std=a\nb' \"-DX=1\n2\"", &Predefined::default(), &[]);
    assert_eq!(p.unsure.len(), 2, "{:?}", p.unsure);
    assert!(p.unsure.iter().all(|d| !d.message.contains('\n')), "{:?}", p.unsure);
}

#[test]
fn quoted_options_are_unsure() {
    let p = run_with(&["S\n"], "-DS=\\\"x\\\"", &Predefined::default(), &[]);
    assert_eq!(tokens(&p.text), ["\"x\""]);
    assert_eq!(p.unsure.len(), 1);
    assert_eq!(p.unsure[0].file, "<command line>");
}

#[test]
fn blank_lines_keep_lines_and_long_gaps_get_a_marker() {
    let p = run(&format!("a\n{}b\n#if 0\n{}#endif\nc\n", "\n".repeat(3), "x\n".repeat(20)));
    assert_eq!(p.text, "a\n\n\n\nb\n#line 28\nc\n");
    assert_eq!(p.line_map.lookup(5), Some(("main.cl", 5)));
    assert_eq!(p.line_map.lookup(7), Some(("main.cl", 28)));
}

#[test]
fn output_spacing_never_merges_tokens() {
    expands_to("#define P +\n#define M -1\nP+ -M\n", "+ + - -1");
    let p = run("#define P +\n#define D /\nP+ D/x -M\n");
    assert!(p.text.contains("+ +") && p.text.contains("/ /x"), "{}", p.text);
}

#[test]
fn multiline_invocation_lands_on_its_first_line() {
    // What follows the invocation keeps its own line, so the line map stays exact.
    let p = run("#define f(a, b) a + b\nint x = f(1,\n  2);\nint y;\n");
    assert_eq!(p.text, "\nint x = 1 + 2\n;\nint y;\n");
}

#[test]
fn indentation_is_kept() {
    let p = run("#define A 1\n#define B(x) x\n    int x = A;\n\t\tB(y);\n  //DL: a\n  A /* c */ z\n");
    assert_eq!(p.text, "\n\n    int x = 1;\n\t\ty;\n  //DL: a\n  1 z\n");
}

#[test]
fn macro_table_names_definitions() {
    let p = run("#define A 1\n#define F(x) x\n#undef A\n#define B\n");
    let names: Vec<_> = p.macros.iter().map(|m| (m.name.as_str(), m.line, m.function_like)).collect();
    assert_eq!(names, [("F", 2, true), ("B", 4, false)]);
}

fn limited(src: &str, limits: Limits) -> Result<Preprocessed, Fatal> {
    let predefined = Predefined::default();
    let mut r = NoIncludes;
    preprocess(Input {
        sources: &[src],
        main_name: "m",
        options: "",
        predefined: &predefined,
        resolver: &mut r,
        limits,
    })
}

#[test]
fn runaway_inputs_hit_limits() {
    let mut bomb = String::from("#define A0 x\n");
    for i in 1..40 {
        bomb.push_str(&format!("#define A{i} A{} A{}\n", i - 1, i - 1));
    }
    bomb.push_str("A39\n");
    let quick = Limits { max_work: 1_000_000, ..Limits::default() };
    assert_eq!(limited(&bomb, quick), Err(Fatal::TooMuchWork));
    let small = Limits { max_output_bytes: 100, ..Limits::default() };
    assert_eq!(limited(&"x ".repeat(100), small), Err(Fatal::OutputTooLarge(100)));
    let deep = format!("#define f(x) x\n{}1{}\n", "f(".repeat(1000), ")".repeat(1000));
    assert_eq!(limited(&deep, Limits::default()), Err(Fatal::TooDeep("macro arguments")));
    let nested = format!("#if {}1{}\n#endif\n", "(".repeat(1000), ")".repeat(1000));
    assert_eq!(limited(&nested, Limits::default()), Err(Fatal::TooDeep("#if expression")));
}

#[test]
fn output_preprocesses_to_itself() {
    for src in [
        "/*DL: unterminated\nx\n",
        "a\n\n\n\n\n\n\n\n\n\n\n\nb\n#line 5 \"x.cl\"\nc\n#line 1\nd\n",
        "#define P +\n#define D /\nP+ D/x -P -1 P\n+\n",
        "#pragma unroll 4\n#undef M_PI\n//DL: a\nx /*DL: b\nc */ y // z\n",
        "#define f(x) x\nf(1,\n2)\nnext\n",
    ] {
        let p = run(src);
        let again = run(&p.text);
        assert_eq!(again.text, p.text, "{src:?}");
    }
}

// The host may call clBuildProgram on a thread with a small stack: the deepest recursion the
// limits allow must fit in 256 KiB (in a debug build, whose frames are the largest).
#[test]
fn the_deepest_allowed_nesting_fits_a_small_stack() {
    let n = Limits::default().max_nesting;
    let args = format!("#define f(x) (x)\n{}1{}\n", "f(".repeat(n - 1), ")".repeat(n - 1));
    let parens = format!("#if {}1{}\nyes\n#endif\n", "(".repeat(n - 1), ")".repeat(n - 1));
    let unary = format!("#if {}1\nyes\n#endif\n", "- ".repeat(n - 2));
    let handle = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || [args, parens, unary].iter().map(|src| run(src).errors.len()).collect::<Vec<_>>())
        .expect("thread");
    assert_eq!(handle.join().expect("no stack overflow"), [0, 0, 0]);
}

#[test]
fn long_chains_of_macros_are_no_nesting() {
    let mut src = String::new();
    for i in 0..500 {
        src.push_str(&format!("#define A{i} A{}\n#define F{i}(x) F{}(x)\n", i + 1, i + 1));
    }
    src.push_str("#define A500 end\n#define F500(x) [x]\nA0 F0(1)\n");
    let p = run(&src);
    assert_eq!(tokens(&p.text), ["end", "[", "1", "]"]);
}

#[test]
fn odd_input_never_panics() {
    for src in [
        "#define f(x) #x\nf(\"\\)\n",
        "#define f(x) x\nf(",
        "#include <",
        "#if '\n#endif",
        "a\\",
        "#line 4294967296\n",
        "#line 0\nx __LINE__\n",
        "#define a(x) b(x\n#define b(x) a(x\na(1))))\n",
        "_Pragma",
        "_Pragma(",
        "#define E(...) __VA_ARGS__ ## x\nE()\n",
        "#define G(x, ...) x ## __VA_ARGS__\nG(,)\n",
        "/*DL: a\nb */ x\n",
        "%:define X 1\nX\n",
        "\u{feff}#define X 1\nX\n",
        "#if 1 ? 2\n#endif\n",
        "#if (\n#endif\n",
        "#if 9223372036854775808 / -1\n#endif\n",
        "#if -9223372036854775807-1 / -1 || -9223372036854775807-1 % -1\n#endif\n",
    ] {
        let _ = run(src);
    }
}

#[test]
fn options_that_free_contraction() {
    assert_eq!(parse_build_options("-DX=1 -cl-std=CL1.2").free_contraction(), None);
    assert_eq!(parse_build_options("-cl-denorms-are-zero -cl-mad-enable").free_contraction(), Some("-cl-mad-enable"));
    assert_eq!(parse_build_options("-I. -cl-fast-relaxed-math").free_contraction(), Some("-cl-fast-relaxed-math"));
    assert_eq!(
        parse_build_options("-cl-unsafe-math-optimizations").free_contraction(),
        Some("-cl-unsafe-math-optimizations")
    );
    // A macro's value is not an option.
    assert_eq!(parse_build_options("-D F=-cl-mad-enable").free_contraction(), None);
}
