//! The program of copies: each copy inserted where it goes in the program as it was read
//! ([`splice`]), and the application's kernels left out of it ([`splice_cutting`]). Nothing
//! launches them from there (clayout creates only the copies in it), but a driver compiles and
//! loads every kernel of a program, and a load waits for the device on NVIDIA: particles'
//! private program loaded from the driver's cache in 2.8-3.5 ms on the H100 with its three
//! kernels as written, 2.7-3.1 without them (docs/data/h100-loadpar-37b.txt); a program of many
//! kernels, few of them annotated, carried all of them.
//!
//! A kernel is left out only where that cannot change what the rest of the program means: its
//! definition is read from the text itself (not made by a macro), holds no preprocessor line
//! (which could define or end something the rest relies on), no insertion falls inside it, and
//! its name appears nowhere else in the program, a directive included (a prototype, a call, a
//! macro naming it). Nothing is left out of a program that pastes tokens (`##`), which can make
//! a name the text never spells. The definition's lines stay, blank but for a comment, so that
//! the compiler's line numbers do not move.

use super::source::Source;
use crate::clc::lex::TokenKind;
use std::collections::HashMap;
use std::ops::Range;

/// Text to insert into the program as it was read, at byte `at`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Insertion {
    pub at: usize,
    pub text: String,
}

/// Program `src` with `insertions` made, in the order given: where two go at the same byte,
/// the later one comes first, as if each had been made in the program with the earlier ones
/// (a kernel's staged copy before its ASTA copy).
pub fn splice(src: &str, insertions: &[Insertion]) -> String {
    splice_cutting(src, insertions, &[])
}

/// A kernel definition left out: its byte range in the program as it was read, and its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    pub range: Range<usize>,
    pub name: String,
}

impl Cut {
    /// What stands in its place: a comment, then as many line ends as the definition had.
    fn stand_in(&self, src: &str) -> String {
        let lines = src[self.range.clone()].matches('\n').count();
        format!("/* clayout: kernel {} as written is not in this program */{}", self.name, "\n".repeat(lines))
    }
}

/// The kernel definitions of `read` that the program with `insertions` made can go without.
pub(crate) fn unlaunched_kernels(read: &Source, insertions: &[Insertion]) -> Vec<Cut> {
    let src = read.src;
    let directives: Vec<&str> =
        read.toks.iter().filter(|t| t.kind == TokenKind::Directive).map(|t| t.text(src)).collect();
    if directives.iter().any(|d| d.contains("##")) {
        return Vec::new();
    }
    let sigs: Vec<_> = read.signatures().iter().filter_map(|s| s.as_ref().ok()).collect();
    let mut defs: Vec<Cut> = sigs
        .iter()
        .filter_map(|sig| Some(Cut { range: sig.decl_start..sig.body?.end, name: sig.name.clone() }))
        .collect();
    // How often each name appears among the program's identifiers: once, inside its
    // definition, or the kernel stays.
    let mut seen: HashMap<&str, usize> = sigs.iter().map(|sig| (sig.name.as_str(), 0)).collect();
    for t in read.toks.iter().filter(|t| t.kind == TokenKind::Ident) {
        if let Some(n) = seen.get_mut(t.text(src)) {
            *n += 1;
        }
    }
    let inside = |r: &Range<usize>, at: usize| r.start < at && at < r.end;
    // The tokens are in the text's order: a definition's are found from where it starts.
    let toks: &[crate::clc::lex::Token] = &read.toks;
    let tokens_of = |r: &Range<usize>| {
        let (start, end) = (r.start, r.end);
        toks[toks.partition_point(|t| t.span.start < start)..].iter().take_while(move |t| t.span.start < end)
    };
    defs.retain(|c| {
        seen.get(c.name.as_str()) == Some(&1)
            && !directives.iter().any(|d| names_word(d, &c.name))
            && !insertions.iter().any(|i| inside(&c.range, i.at))
            && !tokens_of(&c.range).any(|t| t.kind == TokenKind::Directive || t.kind == TokenKind::Invalid)
    });
    defs
}

/// Whether `text` holds `word` as a whole identifier.
fn names_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(ident) && !text[at + word.len()..].chars().next().is_some_and(ident)
    })
}

/// Program `src` with `insertions` made, in the order given (where two go at the same byte, the
/// later one comes first: `splice`), and the definitions of `cuts` left out. No insertion may
/// fall inside a cut (`unlaunched_kernels` leaves such kernels in).
pub fn splice_cutting(src: &str, insertions: &[Insertion], cuts: &[Cut]) -> String {
    let mut order: Vec<usize> = (0..insertions.len()).collect();
    order.sort_by_key(|&i| (insertions[i].at, std::cmp::Reverse(i)));
    let mut cuts: Vec<&Cut> = cuts.iter().collect();
    cuts.sort_by_key(|c| c.range.start);
    let mut out = String::with_capacity(src.len() + insertions.iter().map(|i| i.text.len()).sum::<usize>());
    let mut cursor = 0;
    let mut next = cuts.into_iter().peekable();
    let mut cut_upto = |out: &mut String, cursor: &mut usize, at: usize| {
        while let Some(c) = next.next_if(|c| c.range.end <= at) {
            out.push_str(&src[*cursor..c.range.start]);
            out.push_str(&c.stand_in(src));
            *cursor = c.range.end;
        }
    };
    for i in order {
        let ins = &insertions[i];
        cut_upto(&mut out, &mut cursor, ins.at);
        out.push_str(&src[cursor..ins.at]);
        out.push_str(&ins.text);
        cursor = ins.at;
    }
    cut_upto(&mut out, &mut cursor, src.len());
    out.push_str(&src[cursor..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(src: &str, insertions: &[Insertion]) -> (Vec<String>, String) {
        let read = Source::new(src);
        let cuts = unlaunched_kernels(&read, insertions);
        (cuts.iter().map(|c| c.name.clone()).collect(), splice_cutting(src, insertions, &cuts))
    }

    const TWO: &str = "float half_of(float x) { return x * 0.5f; }\n\
                       __attribute__((reqd_work_group_size(64, 1, 1)))\n\
                       __kernel void a(__global float *p) {\n  p[get_global_id(0)] = half_of(1.0f);\n}\n\
                       __kernel void b(__global float *q) { q[0] = 2.0f; }\n";

    #[test]
    fn kernels_nothing_names_are_left_out_with_their_attributes_and_lines() {
        let copy =
            Insertion { at: TWO.find("}\n__kernel void b").unwrap() + 1, text: "\n__kernel void a__c() {}\n".into() };
        let (names, out) = cut(TWO, std::slice::from_ref(&copy));
        assert_eq!(names, ["a", "b"]);
        assert_eq!(
            out,
            "float half_of(float x) { return x * 0.5f; }\n\
             /* clayout: kernel a as written is not in this program */\n\n\n\n\
             __kernel void a__c() {}\n\
             \n/* clayout: kernel b as written is not in this program */\n"
        );
        assert_eq!(out.matches('\n').count(), TWO.matches('\n').count() + copy.text.matches('\n').count());
        assert!(!out.contains("reqd_work_group_size"), "the attribute goes with its kernel");
    }

    #[test]
    fn a_kernel_named_elsewhere_stays() {
        for (other, why) in [
            ("__kernel void a(__global float *p);\n", "a prototype"),
            ("void call(__global float *p) { a(p); }\n", "a call"),
            ("#define FIRST a\n", "a macro"),
        ] {
            let src = format!("{other}{TWO}");
            let (names, out) = cut(&src, &[]);
            assert_eq!(names, ["b"], "{why}");
            assert!(out.contains("__kernel void a(__global float *p) {"), "{why}");
        }
        let (names, _) = cut(&format!("#define NAME(x) k_##x\n{TWO}"), &[]);
        assert!(names.is_empty(), "a program that pastes tokens keeps every kernel");
    }

    #[test]
    fn a_kernel_with_a_preprocessor_line_or_an_insertion_inside_stays() {
        let src = "__kernel void a(__global float *p) {\n#define TWICE 2.0f\n  p[0] = TWICE;\n}\n\
                   float more(void) { return TWICE; }\n\
                   __kernel void b(__global float *q) { q[0] = more(); }\n";
        let (names, _) = cut(src, &[]);
        assert_eq!(names, ["b"]);
        let inside = Insertion { at: src.find("q[0]").unwrap(), text: "/* x */".into() };
        let (names, out) = cut(src, &[inside]);
        assert!(names.is_empty());
        assert!(out.contains("/* x */q[0]"));
    }

    #[test]
    fn a_kernel_inside_a_conditional_goes_and_the_conditional_stays() {
        let src = "#ifdef WIDE\n__kernel void w(__global double *p) { p[0] = 1.0; }\n#else\n\
                   __kernel void n(__global float *p) { p[0] = 1.0f; }\n#endif\n";
        let (names, out) = cut(src, &[]);
        assert_eq!(names, ["w", "n"]);
        assert_eq!(
            out,
            "#ifdef WIDE\n/* clayout: kernel w as written is not in this program */\n#else\n\
             /* clayout: kernel n as written is not in this program */\n#endif\n"
        );
    }

    #[test]
    fn words_are_whole_identifiers() {
        assert!(names_word("#define X a", "a"));
        assert!(names_word("#define X f(a)", "a"));
        assert!(!names_word("#define ab 1", "a"));
        assert!(!names_word("#define X b_a", "a"));
    }
}
