//! The preprocessor's side of OpenCL build options (OpenCL 3.0 API 5.8.6), and the macros a
//! device compiler predefines from the device's facts (OpenCL C 3.0 6.12 and clang's
//! `InitPreprocessor.cpp`, with PoCL's additions where clang leaves them to the runtime).

/// A `-D` or `-U`, in command-line order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MacroOption {
    /// `name` may carry a parameter list (`-D'f(x)=x+1'`).
    Define {
        name: String,
        value: String,
    },
    Undef(String),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildOptions {
    pub macros: Vec<MacroOption>,
    /// `-I` directories, in order, for the caller's include resolver.
    pub include_dirs: Vec<String>,
    /// `-cl-fast-relaxed-math`: the compiler predefines `__FAST_RELAXED_MATH__`.
    pub fast_relaxed_math: bool,
    /// `-cl-std=CLx.y` as 100 * x + 10 * y.
    pub cl_std: Option<u32>,
    /// Every option except `-D`, `-U` and `-I`, which preprocessing has used up: what the
    /// compiler of the preprocessed text still needs (`-cl-std=` and the math flags included).
    pub compiler: Vec<String>,
    /// Options this parser does not know (they are in `compiler` too).
    pub unknown: Vec<String>,
    /// Why the options make preprocessing unsure, if they do.
    pub unsure: Vec<String>,
}

impl BuildOptions {
    /// `compiler` as one options string, words with white space or quotes quoted again.
    pub fn compiler_string(&self) -> String {
        let quote = |w: &String| {
            if w.is_empty() || w.contains(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '\\') {
                format!("\"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""))
            } else {
                w.clone()
            }
        };
        self.compiler.iter().map(quote).collect::<Vec<_>>().join(" ")
    }

    /// The first option that lets the compiler fuse floating-point operations as it sees fit
    /// (`a*b+c` into one `mad` or FMA, across statements too), on any device: where it does so
    /// then depends on the code around the arithmetic, not only on the source expressions.
    pub fn free_contraction(&self) -> Option<&str> {
        const FREE: [&str; 3] = ["-cl-mad-enable", "-cl-fast-relaxed-math", "-cl-unsafe-math-optimizations"];
        self.compiler.iter().map(String::as_str).find(|w| FREE.contains(w))
    }
}

/// Options that change nothing the preprocessor sees.
const KNOWN: &[&str] = &[
    "-cl-single-precision-constant",
    "-cl-denorms-are-zero",
    "-cl-fp32-correctly-rounded-divide-sqrt",
    "-cl-opt-disable",
    "-cl-mad-enable",
    "-cl-no-signed-zeros",
    "-cl-unsafe-math-optimizations",
    "-cl-finite-math-only",
    "-cl-uniform-work-group-size",
    "-cl-no-subgroup-ifp",
    "-cl-kernel-arg-info",
    "-cl-strict-aliasing",
    "-create-library",
    "-enable-link-options",
    "-w",
    "-Werror",
    "-g",
];

/// Splits an options string the way a shell would (clang's driver does the same): white
/// space separates words, quotes group and are removed, a backslash takes the next character.
/// The flag says whether the word had quotes or backslashes, which OpenCL implementations
/// do not all read alike.
fn split_words(s: &str) -> Vec<(String, bool)> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quoted = false;
    let mut quote: Option<char> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            } else if c == '\\' && q == '"' {
                cur.extend(chars.next());
            } else {
                cur.push(c);
            }
            continue;
        }
        if c.is_whitespace() {
            if in_word {
                words.push((std::mem::take(&mut cur), quoted));
                in_word = false;
                quoted = false;
            }
        } else if c == '"' || c == '\'' {
            quote = Some(c);
            in_word = true;
            quoted = true;
        } else if c == '\\' {
            cur.extend(chars.next());
            in_word = true;
            quoted = true;
        } else {
            cur.push(c);
            in_word = true;
        }
    }
    if in_word {
        words.push((cur, quoted));
    }
    words
}

/// The preprocessor's reading of an OpenCL build options string.
pub fn parse_build_options(options: &str) -> BuildOptions {
    let words = split_words(options);
    let mut o = BuildOptions::default();
    let mut i = 0;
    while i < words.len() {
        let (w, quoted) = &words[i];
        i += 1;
        let flag = ["-D", "-U", "-I"].into_iter().find(|f| w.starts_with(f));
        if let Some(flag) = flag {
            let (arg, arg_quoted) = if w.len() > 2 {
                (w[2..].to_string(), *quoted)
            } else if let Some((a, q)) = words.get(i) {
                i += 1;
                (a.clone(), *q)
            } else {
                o.unsure.push(format!("build option {flag} has no argument"));
                continue;
            };
            match flag {
                "-I" => o.include_dirs.push(arg),
                _ => {
                    if arg_quoted {
                        o.unsure.push(format!(
                            "build option {flag}{arg} has quotes or backslashes, which OpenCL implementations split differently"
                        ));
                    }
                    if flag == "-U" {
                        o.macros.push(MacroOption::Undef(arg));
                    } else {
                        let (name, value) = match arg.split_once('=') {
                            Some((n, v)) => (n.to_string(), v.to_string()),
                            None => (arg, "1".to_string()),
                        };
                        o.macros.push(MacroOption::Define { name, value });
                    }
                }
            }
            continue;
        }
        o.compiler.push(w.clone());
        if w == "-cl-fast-relaxed-math" {
            o.fast_relaxed_math = true;
        } else if let Some(std) = w.strip_prefix("-cl-std=") {
            match std.to_ascii_uppercase().as_str() {
                "CL1.0" => o.cl_std = Some(100),
                "CL1.1" => o.cl_std = Some(110),
                "CL1.2" => o.cl_std = Some(120),
                "CL2.0" => o.cl_std = Some(200),
                "CL3.0" => o.cl_std = Some(300),
                s if s.starts_with("CLC++") => {
                    o.unsure.push(format!("{w}: C++ for OpenCL is preprocessed as C++, which is not supported"))
                }
                _ => o.unsure.push(format!("{w}: unknown OpenCL C version")),
            }
        } else if !KNOWN.contains(&w.as_str()) {
            o.unknown.push(w.clone());
        }
    }
    o
}

/// What the preprocessor needs to know about a device to predefine its compiler's macros.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceFacts {
    /// `CL_DEVICE_VERSION`: (3, 0) for "OpenCL 3.0 ...".
    pub version: (u32, u32),
    /// The OpenCL C version the device compiler uses when the options give no `-cl-std`.
    /// Implementations differ (the specification says the highest 1.x; PoCL takes the highest
    /// the device has), so `None` unless measured: `__OPENCL_C_VERSION__` is then not
    /// predefined, and a condition on it is unsure.
    pub default_c_version: Option<(u32, u32)>,
    /// `CL_DEVICE_EXTENSIONS`, space-separated.
    pub extensions: String,
    /// `CL_DEVICE_OPENCL_C_FEATURES` names, space-separated; predefined for OpenCL C 3.0.
    pub features: String,
    pub image_support: bool,
    pub little_endian: bool,
    /// `CL_FP_FMA` in `CL_DEVICE_DOUBLE_FP_CONFIG`: `FP_FAST_FMA`.
    pub fma_double: bool,
    /// `CL_FP_FMA` in `CL_DEVICE_SINGLE_FP_CONFIG`: `FP_FAST_FMAF`.
    pub fma_float: bool,
    /// `CL_DEVICE_PROFILE` is "EMBEDDED_PROFILE".
    pub embedded_profile: bool,
}

/// The device compiler's macros as far as the facts tell, and the names they tell are not
/// defined (which `#ifdef` may then answer without doubt).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Predefined {
    pub defines: Vec<(String, String)>,
    pub undefined: Vec<String>,
}

/// The major and minor version in a version string: "OpenCL 3.0 CUDA" and "OpenCL C 1.2 " give
/// (3, 0) and (1, 2).
pub fn parse_cl_version(s: &str) -> Option<(u32, u32)> {
    s.split_whitespace().find_map(|w| {
        let (major, minor) = w.split_once('.')?;
        let minor: String = minor.chars().take_while(char::is_ascii_digit).collect();
        Some((major.parse().ok()?, minor.parse().ok()?))
    })
}

fn version_number((major, minor): (u32, u32)) -> u32 {
    major.saturating_mul(100).saturating_add(minor.saturating_mul(10))
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The macros an OpenCL device compiler predefines, computed from the device's facts and the
/// build options: values as clang (and PoCL, which passes some of them as `-D`) give them.
pub fn predefined_macros(facts: &DeviceFacts, opts: &BuildOptions) -> Predefined {
    let mut p = Predefined::default();
    let flag = |p: &mut Predefined, name: &str, on: bool| {
        if on {
            p.defines.push((name.to_string(), "1".to_string()));
        } else {
            p.undefined.push(name.to_string());
        }
    };
    p.defines.push(("__OPENCL_VERSION__".into(), version_number(facts.version).to_string()));
    let c_version = opts.cl_std.or(facts.default_c_version.map(version_number));
    if let Some(v) = c_version {
        p.defines.push(("__OPENCL_C_VERSION__".into(), v.to_string()));
    }
    for (name, v) in [
        ("CL_VERSION_1_0", 100),
        ("CL_VERSION_1_1", 110),
        ("CL_VERSION_1_2", 120),
        ("CL_VERSION_2_0", 200),
        ("CL_VERSION_3_0", 300),
    ] {
        p.defines.push((name.into(), v.to_string()));
    }
    flag(&mut p, "__ENDIAN_LITTLE__", facts.little_endian);
    flag(&mut p, "__IMAGE_SUPPORT__", facts.image_support);
    flag(&mut p, "__EMBEDDED_PROFILE__", facts.embedded_profile);
    flag(&mut p, "__FAST_RELAXED_MATH__", opts.fast_relaxed_math);
    flag(&mut p, "FP_FAST_FMA", facts.fma_double);
    flag(&mut p, "FP_FAST_FMAF", facts.fma_float);
    let mut names: Vec<&str> = facts.extensions.split_whitespace().filter(|e| is_identifier(e)).collect();
    if c_version.is_some_and(|v| v >= 300) {
        names.extend(facts.features.split_whitespace().filter(|e| is_identifier(e)));
    }
    for name in names {
        if !p.defines.iter().any(|(n, _)| n == name) {
            p.defines.push((name.to_string(), "1".to_string()));
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn define(name: &str, value: &str) -> MacroOption {
        MacroOption::Define { name: name.into(), value: value.into() }
    }

    #[test]
    fn defines_undefines_and_include_dirs() {
        let o = parse_build_options("-D A -DB -DC=3 -D D=4 -UE -U F -I inc -Idir2 -Dg(x)=x+1 -cl-mad-enable");
        assert_eq!(
            o.macros,
            [
                define("A", "1"),
                define("B", "1"),
                define("C", "3"),
                define("D", "4"),
                MacroOption::Undef("E".into()),
                MacroOption::Undef("F".into()),
                define("g(x)", "x+1"),
            ]
        );
        assert_eq!(o.include_dirs, ["inc", "dir2"]);
        assert_eq!(o.compiler, ["-cl-mad-enable"]);
        assert!(o.unknown.is_empty() && o.unsure.is_empty());
    }

    #[test]
    fn quoted_values_are_read_and_flagged() {
        let o = parse_build_options(r#"-D "N=a b" -DS=\"x\" -I "my dir""#);
        assert_eq!(o.macros, [define("N", "a b"), define("S", "\"x\"")]);
        assert_eq!(o.include_dirs, ["my dir"]);
        assert_eq!(o.unsure.len(), 2, "{:?}", o.unsure);
    }

    #[test]
    fn flags_that_change_predefined_macros() {
        let o = parse_build_options("-cl-fast-relaxed-math -cl-std=CL2.0 -cl-nv-verbose -D");
        assert!(o.fast_relaxed_math);
        assert_eq!(o.cl_std, Some(200));
        assert_eq!(o.compiler, ["-cl-fast-relaxed-math", "-cl-std=CL2.0", "-cl-nv-verbose"]);
        assert_eq!(o.unknown, ["-cl-nv-verbose"]);
        assert_eq!(o.unsure.len(), 1);
        assert_eq!(parse_build_options("-cl-std=cl1.2").cl_std, Some(120));
        assert_eq!(parse_build_options("-cl-std=CL3.0").cl_std, Some(300));
        assert_eq!(parse_build_options("-cl-std=CLC++").unsure.len(), 1);
        assert_eq!(parse_build_options("-cl-std=CL9.9").unsure.len(), 1);
        let q = BuildOptions { compiler: vec!["-a".into(), "b c".into()], ..Default::default() };
        assert_eq!(q.compiler_string(), "-a \"b c\"");
    }

    fn value<'a>(p: &'a Predefined, name: &str) -> Option<&'a str> {
        p.defines.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    #[test]
    fn predefined_from_facts() {
        let facts = DeviceFacts {
            version: (1, 2),
            default_c_version: Some((1, 2)),
            extensions: "cl_khr_fp64 cl_khr_int64_base_atomics ".into(),
            features: "__opencl_c_fp64".into(),
            image_support: true,
            little_endian: true,
            fma_double: false,
            fma_float: true,
            embedded_profile: false,
        };
        let p = predefined_macros(&facts, &BuildOptions::default());
        assert_eq!(value(&p, "__OPENCL_VERSION__"), Some("120"));
        assert_eq!(value(&p, "__OPENCL_C_VERSION__"), Some("120"));
        assert_eq!(value(&p, "CL_VERSION_1_0"), Some("100"));
        assert_eq!(value(&p, "CL_VERSION_1_2"), Some("120"));
        assert_eq!(value(&p, "CL_VERSION_3_0"), Some("300"));
        assert_eq!(value(&p, "__ENDIAN_LITTLE__"), Some("1"));
        assert_eq!(value(&p, "__IMAGE_SUPPORT__"), Some("1"));
        assert_eq!(value(&p, "FP_FAST_FMAF"), Some("1"));
        assert_eq!(value(&p, "cl_khr_fp64"), Some("1"));
        assert_eq!(value(&p, "cl_khr_int64_base_atomics"), Some("1"));
        assert_eq!(value(&p, "__opencl_c_fp64"), None, "features only for OpenCL C 3.0");
        for name in ["FP_FAST_FMA", "__FAST_RELAXED_MATH__", "__EMBEDDED_PROFILE__"] {
            assert!(p.undefined.iter().any(|n| n == name), "{name}");
        }
        let fast = parse_build_options("-cl-fast-relaxed-math -cl-std=CL3.0");
        let p = predefined_macros(&DeviceFacts { version: (3, 0), ..facts.clone() }, &fast);
        assert_eq!(value(&p, "__FAST_RELAXED_MATH__"), Some("1"));
        assert_eq!(value(&p, "__OPENCL_VERSION__"), Some("300"));
        assert_eq!(value(&p, "__OPENCL_C_VERSION__"), Some("300"));
        assert_eq!(value(&p, "__opencl_c_fp64"), Some("1"));
        let unknown = predefined_macros(&DeviceFacts { default_c_version: None, ..facts }, &BuildOptions::default());
        assert_eq!(value(&unknown, "__OPENCL_C_VERSION__"), None);
        assert!(!unknown.undefined.iter().any(|n| n == "__OPENCL_C_VERSION__"));
    }

    #[test]
    fn version_strings() {
        assert_eq!(parse_cl_version("OpenCL 3.0 CUDA 12.4.131"), Some((3, 0)));
        assert_eq!(parse_cl_version("OpenCL C 1.2 "), Some((1, 2)));
        assert_eq!(parse_cl_version("OpenCL 3.0 PoCL 6.0+debian"), Some((3, 0)));
        assert_eq!(parse_cl_version("nothing"), None);
    }
}
