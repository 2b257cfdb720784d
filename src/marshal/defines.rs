//! The `-D` names of kernels/marshal.cl, in one table: a program's build options are made
//! from it, and the kernel source's header comment lists it. The tests below keep the header,
//! the table and the macros the source reads in step, so that adding a parameter is one row
//! here (and the kernel code that reads it).

use super::plan::Params;

/// One `-D` option of the conversion programs.
pub struct Define {
    pub name: &'static str,
    /// What the kernel source reads it as: the header comment of kernels/marshal.cl, which
    /// only the test that keeps that comment in step reads from here.
    #[cfg_attr(not(test), allow(dead_code))]
    pub meaning: &'static str,
    /// Its value for a program; None leaves it undefined, `Some("")` defines it bare.
    value: fn(&Params) -> Option<String>,
}

fn u(v: u32) -> Option<String> {
    Some(format!("{v}u"))
}

fn flag(b: bool) -> Option<String> {
    Some(if b { "1" } else { "0" }.into())
}

/// Every `-D` option of kernels/marshal.cl, in the order of the build options.
pub const DEFINES: &[Define] = &[
    Define {
        name: "WORD",
        meaning: "uint or ulong (the word, w = 4 or 8 bytes)",
        value: |p| Some(if p.w == 8 { "ulong" } else { "uint" }.into()),
    },
    Define {
        name: "WORD_IS_ULONG",
        meaning: "defined (bare) when WORD is ulong",
        value: |p| (p.w == 8).then(String::new),
    },
    Define { name: "S_", meaning: "words per structure", value: |p| u(p.s) },
    Define {
        name: "VEC",
        meaning: "words per vector access of the BS kernels (1, 2 or 4; 16 bytes when > 1)",
        value: |p| Some(p.vec.to_string()),
    },
    Define {
        name: "BS_ENABLED",
        meaning: "1 to compile the BS kernels (0 when a tile does not fit local memory)",
        value: |p| flag(p.use_bs),
    },
    Define { name: "BS_K", meaning: "tiles per work-group of the BS kernels", value: |p| u(p.bs_k) },
    Define { name: "BS_L", meaning: "work-group size of the BS kernels", value: |p| u(p.bs_l) },
    Define {
        name: "PADW",
        meaning: "local-memory padding period of the BS kernels, in words (one pad word each)",
        value: |p| u(p.padw()),
    },
    Define { name: "P010_L", meaning: "work-group size of the PTTWAC 010 kernels", value: |p| u(p.p010_l) },
    Define {
        name: "P010_BPW",
        meaning: "flag bits per local 32-bit word (32 / spreading factor) of PTTWAC 010",
        value: |p| u(p.p010_bpw),
    },
    Define { name: "P010_FW", meaning: "local flag words of PTTWAC 010 (padding included)", value: |p| u(p.p010_fw) },
    Define {
        name: "P100_PV",
        meaning: "words per vector access of the work-item PTTWAC 100 kernels (1, 2 or 4)",
        value: |p| Some(p.p100_pv.to_string()),
    },
    Define {
        name: "P100_L",
        meaning: "work-group size of the warp-centric PTTWAC 100 kernel",
        value: |p| u(p.p100_wg_l),
    },
    Define {
        name: "P100_SPEC",
        meaning: "1: p100_wi reads the next super-element while claiming it; 0: after",
        value: |p| flag(p.p100_spec),
    },
    Define {
        name: "P100_RUN",
        meaning: "the one PTTWAC 100 kernel compiled: 0 p100_wi, 1 p100_wiv, 2 p100_wp, 3 p100_wg",
        value: |p| Some(p100_run(p).to_string()),
    },
];

/// `P100_RUN` of a program: which PTTWAC 100 kernel it holds. One only, as the PTTWAC 010
/// kernels only where the BS kernels cannot run: on NVIDIA a program from the driver's cache
/// loaded in 2.2-2.4 ms with the kernels a plan launches against 2.9-3.2 ms with all eleven
/// (docs/cost-model.md).
fn p100_run(p: &Params) -> u32 {
    use super::plan::P100Run;
    match p.p100 {
        P100Run::PerStart => 0,
        #[cfg(feature = "bench")]
        P100Run::PerStartVolatile => 1,
        #[cfg(feature = "bench")]
        P100Run::Persistent { .. } => 2,
        P100Run::PerGroup => 3,
    }
}

/// The build options of the program planned as `p`.
pub fn options(p: &Params) -> String {
    let mut out = Vec::new();
    for d in DEFINES {
        match (d.value)(p) {
            None => {}
            Some(v) if v.is_empty() => out.push(format!("-D{}", d.name)),
            Some(v) => out.push(format!("-D{}={v}", d.name)),
        }
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The table as the header comment of kernels/marshal.cl lists it, one ` *   NAME  meaning`
    /// line each.
    fn header() -> String {
        let width = DEFINES.iter().map(|d| d.name.len()).max().unwrap_or(0);
        DEFINES.iter().map(|d| format!(" *   {:width$} {}\n", d.name, d.meaning)).collect()
    }

    const CL_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/marshal.cl");
    /// The header line after which the table is listed, up to the first line that is not a row.
    const INTRO: &str = "(src/marshal/defines.rs; a unit test keeps the two equal):\n";

    /// The header comment of kernels/marshal.cl must list exactly the table. Run with
    /// CLAYOUT_UPDATE_DOCS=1 to rewrite it after changing the table.
    #[test]
    fn header_lists_the_table() {
        let src = std::fs::read_to_string(CL_PATH).expect("kernels/marshal.cl");
        let a = src.find(INTRO).expect("the header's introduction of the -D table") + INTRO.len();
        let len: usize = src[a..].split_inclusive('\n').take_while(|l| l.starts_with(" *   ")).map(str::len).sum();
        let want = header();
        if std::env::var("CLAYOUT_UPDATE_DOCS").as_deref() == Ok("1") {
            std::fs::write(CL_PATH, format!("{}{}{}", &src[..a], want, &src[a + len..])).unwrap();
            return;
        }
        assert_eq!(
            &src[a..a + len],
            want,
            "kernels/marshal.cl's header is out of date: rerun with CLAYOUT_UPDATE_DOCS=1"
        );
    }

    /// The source without its comments and string literals.
    fn code(src: &str) -> String {
        let (mut out, mut rest) = (String::new(), src);
        while let Some(c) = rest.chars().next() {
            let skip = if rest.starts_with("/*") {
                rest.find("*/").map_or(rest.len(), |e| e + 2)
            } else if rest.starts_with("//") {
                rest.find('\n').unwrap_or(rest.len())
            } else if c == '"' {
                rest[1..].find('"').map_or(rest.len(), |e| e + 2)
            } else {
                out.push(c);
                rest = &rest[c.len_utf8()..];
                continue;
            };
            out.push(' ');
            rest = &rest[skip..];
        }
        out
    }

    fn tokens(code: &str) -> Vec<&str> {
        code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|t| !t.is_empty()).collect()
    }

    fn is_macro_like(t: &str) -> bool {
        t.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && t.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    }

    /// The names a source defines for itself: macros (`#define X`), the parameters of
    /// function-like macros, and variables declared after a type (`uint A`).
    fn defined_in(code: &str) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for line in code.lines() {
            let l = line.trim_start().trim_start_matches('#').trim_start();
            let Some(def) = l.strip_prefix("define") else { continue };
            let def = def.trim_start();
            let name_end = def.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(def.len());
            names.insert(def[..name_end].to_string());
            if let Some(params) = def[name_end..].strip_prefix('(') {
                let params = &params[..params.find(')').unwrap_or(params.len())];
                names.extend(tokens(params).into_iter().map(str::to_string));
            }
        }
        // A declaration is a type and a name with only blanks between (`uint A`, not the cast
        // `(uint)S_`), outside directives (`#define VT WORD`).
        const TYPES: &[&str] = &["uint", "ulong", "int", "bool", "WORD", "VT", "PT"];
        for line in code.lines().filter(|l| !l.trim_start().starts_with('#')) {
            let words: Vec<&str> = line.split_whitespace().collect();
            for pair in words.windows(2) {
                let ty = tokens(pair[0]).last().copied().filter(|t| pair[0].ends_with(t));
                if ty.is_some_and(|t| TYPES.contains(&t)) {
                    names.extend(tokens(pair[1]).first().map(|n| n.to_string()));
                }
            }
        }
        names
    }

    /// Every macro-like name kernels/marshal.cl reads without defining it is in the table,
    /// and every name of the table is read there: a `-D` the kernels ignore, or a macro the
    /// host never passes, fails here rather than on a device.
    #[test]
    fn table_is_what_the_kernels_read() {
        let src = std::fs::read_to_string(CL_PATH).expect("kernels/marshal.cl");
        let code = code(&src);
        let mut known = defined_in(&code);
        // Prepended by the host before the source.
        known.extend(defined_in(&crate::layout::asta_macros(Some(32))));
        let read: BTreeSet<&str> = tokens(&code)
            .into_iter()
            .filter(|t| is_macro_like(t) && !known.contains(*t) && !t.starts_with("CLK_"))
            .collect();
        let table: BTreeSet<&str> = DEFINES.iter().map(|d| d.name).collect();
        assert_eq!(read, table, "macros kernels/marshal.cl reads (left) against the -D table (right)");
    }

    #[test]
    fn scanner_sees_comments_defines_and_declarations() {
        let c = code("a /* B */ c // D\n\"E\" f / g");
        assert_eq!(tokens(&c), ["a", "c", "f", "g"]);
        let d = defined_in("#define X(NAME, q) NAME\n#  define Y uint Z\nvoid k(uint A) { return (uint)B; }");
        assert_eq!(d, ["A", "NAME", "X", "Y", "q"].into_iter().map(String::from).collect());
    }
}
