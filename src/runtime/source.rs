//! The program as the device compiler sees it: the application's source strings preprocessed
//! with the build's options, the device's predefined macros and its headers (the build's `-I`
//! directories, the working directory, the headers given to `clCompileProgram`). Annotation
//! attachment, kernel signatures, structures and the rewriter all read this text; clayout's
//! private program is built from it (with `#line` markers, so compiler messages still name the
//! user's files and lines).
//!
//! Where preprocessing cannot be sure it gives what the device compiler sees (a header it cannot
//! find, `__FILE__`, a pragma it does not know, a macro the device may define that the build
//! does not say), the reason is kept, and no kernel of that build is rewritten.

use crate::cl::info::{device_scalar, device_string};
use crate::clc::pp::{self, DeviceFacts, Header};
use once_cell::sync::Lazy;
use opencl_sys::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The name the program's own text goes by in markers and diagnostics.
pub const MAIN_NAME: &str = "<program>";

/// A header given by name to `clCompileProgram` (its include name and text).
pub type GivenHeader = (String, String);

/// One build's view of a program.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The preprocessed text, or the application's own text where preprocessing is unsure.
    pub text: String,
    /// The options the compiler of `text` needs (the build's, less what preprocessing used).
    pub compiler_options: String,
    /// Why `text` may not be what the device compiler sees, if it may not (one line).
    pub unsure: Option<String>,
}

/// What a device's compiler predefines, as far as its facts tell (asked once per device), but
/// its default OpenCL C version, which takes a build to learn (`with_c_version`).
fn facts(device: cl_device_id) -> DeviceFacts {
    static FACTS: Lazy<Mutex<HashMap<usize, DeviceFacts>>> = Lazy::new(Default::default);
    if let Some(f) = FACTS.lock().get(&(device as usize)) {
        return f.clone();
    }
    let single: cl_device_fp_config = device_scalar(device, CL_DEVICE_SINGLE_FP_CONFIG);
    let double: cl_device_fp_config = device_scalar(device, CL_DEVICE_DOUBLE_FP_CONFIG);
    let image: cl_bool = device_scalar(device, CL_DEVICE_IMAGE_SUPPORT);
    let little: cl_bool = device_scalar(device, CL_DEVICE_ENDIAN_LITTLE);
    let f = DeviceFacts {
        version: pp::parse_cl_version(&device_string(device, CL_DEVICE_VERSION)).unwrap_or((1, 2)),
        default_c_version: None,
        extensions: device_string(device, CL_DEVICE_EXTENSIONS),
        features: String::new(),
        image_support: image != CL_FALSE,
        little_endian: little != CL_FALSE,
        fma_double: double & CL_FP_FMA != 0,
        fma_float: single & CL_FP_FMA != 0,
        embedded_profile: device_string(device, CL_DEVICE_PROFILE).contains("EMBEDDED"),
    };
    FACTS.lock().insert(device as usize, f.clone());
    f
}

/// Headers as the device compiler finds them: the headers given to `clCompileProgram` by
/// include name, then `"..."` next to the including file (the program's own text counts as
/// in the working directory), then the `-I` directories in order.
struct Resolver<'a> {
    given: &'a [GivenHeader],
    dirs: Vec<PathBuf>,
}

/// The most of a header clayout reads: a path that names something endless must not hang the
/// build.
const HEADER_LIMIT: u64 = 16 << 20;

impl pp::IncludeResolver for Resolver<'_> {
    fn resolve(&mut self, name: &str, angled: bool, includer: &str) -> Option<Header> {
        if let Some((n, text)) = self.given.iter().find(|(n, _)| n == name) {
            return Some(Header { name: n.clone(), text: text.clone() });
        }
        let mut places = Vec::new();
        if !angled {
            let here =
                if includer == MAIN_NAME { PathBuf::from(".") } else { Path::new(includer).parent()?.to_path_buf() };
            places.push(here);
        }
        places.extend(self.dirs.iter().cloned());
        places.iter().find_map(|dir| {
            let path = dir.join(name);
            let text = read_header(&path)?;
            Some(Header { name: path.to_string_lossy().into_owned(), text })
        })
    }
}

fn read_header(path: &Path) -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open(path).ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    f.take(HEADER_LIMIT + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > HEADER_LIMIT {
        return None;
    }
    crate::clc::text::decode(&bytes)
}

/// The program `sources` as the device compiler sees it when built with `options` for `device`
/// (`headers`: those given to `clCompileProgram`).
pub fn see(sources: &[String], options: &str, device: Option<cl_device_id>, headers: &[GivenHeader]) -> Seen {
    let Some(device) = device else {
        return Seen {
            text: sources.concat(),
            compiler_options: options.to_string(),
            unsure: Some("the program's device is unknown".into()),
        };
    };
    let seen = see_with(sources, options, &facts(device), headers);
    // The default OpenCL C version is asked of the compiler only when the program depends on it.
    match &seen.unsure {
        Some(why) if why.contains("__OPENCL_C_VERSION__") => {
            let facts = DeviceFacts { default_c_version: super::probe::default_c_version(device), ..facts(device) };
            see_with(sources, options, &facts, headers)
        }
        _ => seen,
    }
}

fn see_with(sources: &[String], options: &str, facts: &DeviceFacts, headers: &[GivenHeader]) -> Seen {
    let plain = |why: String| Seen { text: sources.concat(), compiler_options: options.to_string(), unsure: Some(why) };
    let parsed = pp::parse_build_options(options);
    let predefined = pp::predefined_macros(facts, &parsed);
    let mut resolver = Resolver { given: headers, dirs: parsed.include_dirs.iter().map(PathBuf::from).collect() };
    let strs: Vec<&str> = sources.iter().map(String::as_str).collect();
    let input = pp::Input {
        sources: &strs,
        main_name: MAIN_NAME,
        options,
        predefined: &predefined,
        resolver: &mut resolver,
        limits: pp::Limits::default(),
    };
    match pp::preprocess(input) {
        Ok(p) => match p.unsure.first().or(p.errors.first()) {
            // The text is then only what clayout reads annotations from, as before it could
            // preprocess: the application's own.
            Some(d) => plain(d.to_string()),
            None => Seen { text: p.text, compiler_options: p.compiler_options, unsure: None },
        },
        Err(f) => plain(format!("preprocessing gave up ({f:?})")),
    }
}
