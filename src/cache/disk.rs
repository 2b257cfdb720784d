//! The on-disk cache: durable records, one file each, under `CLAYOUT_CACHE_DIR` (docs/cache.md).
//!
//! A record only ever saves time, so nothing here is an error of the host program: a file that
//! cannot be read, written or trusted is a miss, logged, and whatever it would have saved is
//! redone.
//!
//! File `{kind}-{fnv1a(key):016x}.bin`: one header line
//! `CLAYOUT-CACHE <format> <payload length> <payload fnv1a, 16 hex> <key as a JSON string>`,
//! then the payload. The name holds only a hash of the key, so the header keeps the whole key to
//! tell a collision (or a file copied from elsewhere) from the record asked for.

use crate::cl::info::{device_platform, device_string, platform_string};
use crate::config::{self, CacheDir};
use crate::stats::{self, CacheEvent};
use once_cell::sync::Lazy;
use opencl_sys::*;
use parking_lot::Mutex;
use serde::{de::DeserializeOwned, Serialize};
use std::collections::HashMap;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

const MAGIC: &str = "CLAYOUT-CACHE";
/// Bumped when the file layout changes; files of another format are stale, not corrupt.
pub const FORMAT: u32 = 1;
/// A first line longer than this is not a header of ours: the file is not read further.
const MAX_HEADER: usize = 64 * 1024;

/// 64-bit FNV-1a: file names from keys, payload checksums, source hashes in keys. It only has to
/// catch accidents (truncation, a flipped byte), not an adversary who can write the directory.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_on(0xcbf2_9ce4_8422_2325, bytes)
}

/// [`fnv1a`] of the bytes hashed into `h` followed by `bytes`: a long text hashed once, and the
/// short parts after it as often as they change.
pub fn fnv1a_on(h: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(h, |h, &b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The cache directory, or None when the cache is off or no home directory is known. It may not
/// exist yet: [`put`] creates it.
pub fn dir() -> Option<PathBuf> {
    // Worked out once: every record's path starts here, and a short run's first launches look
    // up a dozen records (the environment's lock and scan, a copy of the setting, each time).
    static DIR: Lazy<Option<PathBuf>> =
        Lazy::new(|| dir_from(&config::get().cache_dir, &|name| std::env::var_os(name)));
    DIR.clone()
}

fn dir_from(setting: &CacheDir, env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    // The XDG base directory spec says relative values are invalid and must be ignored.
    let absolute = |name: &str| env(name).map(PathBuf::from).filter(|p| p.is_absolute());
    match setting {
        CacheDir::Off => None,
        CacheDir::Path(p) => Some(PathBuf::from(p)),
        CacheDir::Default => absolute("XDG_CACHE_HOME")
            .map(|x| x.join("clayout"))
            .or_else(|| absolute("HOME").map(|h| h.join(".cache").join("clayout"))),
    }
}

fn file_name(kind: &str, key: &str) -> String {
    format!("{kind}-{:016x}.bin", fnv1a(key.as_bytes()))
}

/// Where the record `kind`/`key` lives (whether or not it exists), when the cache is on.
pub fn path(kind: &str, key: &str) -> Option<PathBuf> {
    Some(dir()?.join(file_name(kind, key)))
}

/// What a device computes and how: the platform (name and version), the device's name and
/// vendor, the driver and OpenCL versions, and clayout's own version. Keys built on it make a new
/// driver or a new clayout miss instead of loading what an older one left.
pub fn device_key(device: cl_device_id) -> String {
    static KEYS: Lazy<Mutex<HashMap<usize, String>>> = Lazy::new(Default::default);
    if let Some(k) = KEYS.lock().get(&(device as usize)) {
        return k.clone();
    }
    let dev = |what: cl_device_info| device_string(device, what);
    let plat = |what: cl_platform_info| device_platform(device).map(|p| platform_string(p, what)).unwrap_or_default();
    let key = format!(
        "platform {} {}; device {}; vendor {}; driver {}; {}; clayout {}",
        plat(CL_PLATFORM_NAME),
        plat(CL_PLATFORM_VERSION),
        dev(CL_DEVICE_NAME),
        dev(CL_DEVICE_VENDOR),
        dev(CL_DRIVER_VERSION),
        dev(CL_DEVICE_VERSION),
        env!("CARGO_PKG_VERSION")
    );
    KEYS.lock().insert(device as usize, key.clone());
    key
}

/// The payload of record `kind`/`key`, or None (a miss, or a file ignored and logged).
pub fn get(kind: &str, key: &str) -> Option<Vec<u8>> {
    get_with(kind, key, |payload| Ok(payload.to_vec()))
}

/// The record `kind`/`key` read as JSON; a record that no longer parses as `T` (a type that
/// changed) is stale.
pub fn get_json<T: DeserializeOwned>(kind: &str, key: &str) -> Option<T> {
    get_with(kind, key, |payload| {
        serde_json::from_slice(payload).map_err(|e| format!("the record does not parse: {e}"))
    })
}

/// The record `kind`/`key` as `accept` makes it usable. A record that reads back whole but that
/// `accept` refuses (a driver that no longer takes a binary) is logged and counted as stale,
/// never as a hit, so that each look-up counts once: hit, miss, corrupt or stale.
pub fn get_with<T>(kind: &str, key: &str, accept: impl FnOnce(&[u8]) -> Result<T, String>) -> Option<T> {
    let path = path(kind, key)?;
    crate::guard("on-disk cache", || match super::writer::pending(&path) {
        Some(bytes) => accept_record(&path, &bytes, key, accept),
        None => read_record(&path, key, accept),
    })
    .flatten()
}

/// Stores `payload` as record `kind`/`key`, replacing any earlier one. The file is written off
/// the calling thread (`super::writer`); failures are logged at debug level and otherwise
/// ignored.
pub fn put(kind: &str, key: &str, payload: &[u8]) {
    if let Some(dir) = dir() {
        super::writer::submit(dir.join(file_name(kind, key)), encode(key, payload));
    }
}

/// Gets ready to write records off the application's threads (`super::writer::start`).
pub fn start_writer() {
    if dir().is_some() {
        super::writer::start();
    }
}

/// Writes the records handed over and not yet written, now (at exit).
pub fn flush() {
    super::writer::flush();
}

/// Stores `value` as JSON in record `kind`/`key` (see [`put`]).
pub fn put_json<T: Serialize>(kind: &str, key: &str, value: &T) {
    match serde_json::to_vec(value) {
        Ok(json) => put(kind, key, &json),
        Err(e) => crate::log::debug_with(|| format!("clayout cache: cannot encode record {kind} as JSON ({e})")),
    }
}

/// [`put_json`] of `value`, with its JSON and its file's name made off the calling thread
/// (`super::writer::submit_later`): for records that change inside the application's calls.
pub fn put_json_later<T: Serialize + Send + 'static>(kind: &'static str, key: std::sync::Arc<str>, value: T) {
    if config::get().cache_dir == CacheDir::Off {
        return;
    }
    super::writer::submit_later(Box::new(move || put_json(kind, &key, &value)));
}

/// Why a file that exists was not used.
#[derive(Debug, PartialEq, Eq)]
enum Ignored {
    /// Damaged: not a record, cut short, or its payload changed since it was written.
    Corrupt(String),
    /// Whole, but written for another key or by another format.
    Stale(String),
}

fn read_record<T>(path: &Path, key: &str, accept: impl FnOnce(&[u8]) -> Result<T, String>) -> Option<T> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            // A missing file is the ordinary first run; anything else (permissions, a cache
            // path under a regular file) is worth a word to whoever looks for it.
            if e.kind() != io::ErrorKind::NotFound {
                crate::log::debug_with(|| format!("clayout cache: cannot read {} ({e})", path.display()));
            }
            stats::cache(CacheEvent::Miss);
            return None;
        }
    };
    accept_record(path, &bytes, key, accept)
}

/// The record in `bytes` (the file `path`, read or still to be written) as `accept` makes it.
fn accept_record<T>(
    path: &Path,
    bytes: &[u8],
    key: &str,
    accept: impl FnOnce(&[u8]) -> Result<T, String>,
) -> Option<T> {
    let why = match decode(bytes, key).and_then(|p| accept(p).map_err(Ignored::Stale)) {
        Ok(v) => {
            stats::cache(CacheEvent::Hit);
            return Some(v);
        }
        Err(why) => why,
    };
    match why {
        Ignored::Corrupt(why) => {
            stats::cache(CacheEvent::Corrupt);
            crate::log::warn(&format!("clayout cache: ignoring corrupt file {} ({why})", path.display()));
        }
        Ignored::Stale(why) => {
            stats::cache(CacheEvent::Stale);
            crate::log::info_with(|| format!("clayout cache: ignoring stale file {} ({why})", path.display()));
        }
    }
    None
}

fn encode(key: &str, payload: &[u8]) -> Vec<u8> {
    // JSON quoting keeps any key on the one header line.
    let quoted = serde_json::to_string(key).unwrap_or_default();
    let mut out = format!("{MAGIC} {FORMAT} {} {:016x} {quoted}\n", payload.len(), fnv1a(payload)).into_bytes();
    out.extend_from_slice(payload);
    out
}

/// The payload of a record file, checked whole and against `key`.
fn decode<'a>(bytes: &'a [u8], key: &str) -> Result<&'a [u8], Ignored> {
    let corrupt = |why: &str| Ignored::Corrupt(why.to_string());
    let nl = bytes.iter().take(MAX_HEADER).position(|&b| b == b'\n').ok_or_else(|| corrupt("no header line"))?;
    let header = std::str::from_utf8(&bytes[..nl]).map_err(|_| corrupt("the header is not text"))?;
    let payload = &bytes[nl + 1..];
    let mut fields = header.splitn(5, ' ');
    if fields.next() != Some(MAGIC) {
        return Err(corrupt("not a clayout cache file"));
    }
    let format: u32 = fields.next().and_then(|v| v.parse().ok()).ok_or_else(|| corrupt("no format version"))?;
    // Checked before the other fields: another format may lay them out differently.
    if format != FORMAT {
        return Err(Ignored::Stale(format!("format {format}, this clayout reads format {FORMAT}")));
    }
    let len: usize = fields.next().and_then(|v| v.parse().ok()).ok_or_else(|| corrupt("no payload length"))?;
    let sum = fields.next().and_then(|v| u64::from_str_radix(v, 16).ok()).ok_or_else(|| corrupt("no checksum"))?;
    let quoted = fields.next().unwrap_or("");
    let stored: String = serde_json::from_str(quoted).map_err(|_| corrupt("no key"))?;
    if payload.len() < len {
        return Err(Ignored::Corrupt(format!("truncated: {} of {len} payload bytes", payload.len())));
    }
    if payload.len() > len {
        return Err(Ignored::Corrupt(format!("{} payload bytes, the header says {len}", payload.len())));
    }
    if fnv1a(payload) != sum {
        return Err(corrupt("payload checksum mismatch"));
    }
    if stored != key {
        return Err(Ignored::Stale(format!("written for another key: {quoted}")));
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_goes_on_where_it_stopped() {
        let (a, b) = (b"__kernel void k() {}\n".as_slice(), b" -D X=1".as_slice());
        assert_eq!(fnv1a_on(fnv1a(a), b), fnv1a(&[a, b].concat()));
    }

    const KEY: &str = "platform P 1.0; device D; options -DS=5";

    /// A record written to a fresh directory, and its path.
    fn written(tag: &str, payload: &[u8]) -> PathBuf {
        let dir = crate::cache::test_dir(tag);
        let name = file_name("conv", KEY);
        crate::cache::writer::write_file(&dir.join(&name), &encode(KEY, payload));
        dir.join(name)
    }

    fn read(path: &Path, key: &str) -> Option<Vec<u8>> {
        read_record(path, key, |p| Ok(p.to_vec()))
    }

    fn payload_start(bytes: &[u8]) -> usize {
        bytes.iter().position(|&b| b == b'\n').unwrap() + 1
    }

    #[test]
    fn round_trip() {
        let payload: Vec<u8> = (0..=255u8).chain([b'\n', 0, b' ']).collect();
        let path = written("round", &payload);
        assert_eq!(read(&path, KEY), Some(payload));
        assert_eq!(decode(&encode("k", b""), "k"), Ok(&b""[..]));
        // No temporary file is left beside the record.
        assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
        let _ = fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn keys_with_newlines_stay_on_the_header_line() {
        let key = "line 1\nline 2 \"quoted\"";
        assert_eq!(decode(&encode(key, b"x"), key), Ok(&b"x"[..]));
    }

    #[test]
    fn missing_file_is_a_plain_miss() {
        assert_eq!(read(&crate::cache::test_dir("missing").join("conv-0.bin"), KEY), None);
    }

    #[test]
    fn truncated_file_is_corrupt() {
        let record = encode(KEY, b"some payload bytes");
        let cut = &record[..record.len() - 3];
        assert!(matches!(decode(cut, KEY), Err(Ignored::Corrupt(w)) if w.starts_with("truncated")));
        // Cut inside the header line.
        assert_eq!(decode(&record[..10], KEY), Err(Ignored::Corrupt("no header line".into())));
        assert_eq!(decode(b"", KEY), Err(Ignored::Corrupt("no header line".into())));
        let path = written("trunc", b"some payload bytes");
        fs::write(&path, cut).unwrap();
        assert_eq!(read(&path, KEY), None);
        let _ = fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn flipped_payload_byte_is_corrupt() {
        let mut record = encode(KEY, b"some payload bytes");
        let at = payload_start(&record) + 5;
        record[at] ^= 0x20;
        assert_eq!(decode(&record, KEY), Err(Ignored::Corrupt("payload checksum mismatch".into())));
    }

    #[test]
    fn damaged_header_is_corrupt() {
        let record = encode(KEY, b"abc");
        let mut bad_magic = record.clone();
        bad_magic[0] = b'X';
        assert_eq!(decode(&bad_magic, KEY), Err(Ignored::Corrupt("not a clayout cache file".into())));
        let longer: Vec<u8> = record.iter().copied().chain(*b"extra").collect();
        assert!(matches!(decode(&longer, KEY), Err(Ignored::Corrupt(w)) if w.contains("the header says 3")));
        assert!(matches!(decode(b"CLAYOUT-CACHE 1 3 zz \"k\"\nabc", "k"), Err(Ignored::Corrupt(_))));
    }

    #[test]
    fn other_key_in_a_valid_file_is_stale() {
        let record = encode("another device", b"abc");
        assert!(matches!(decode(&record, KEY), Err(Ignored::Stale(w)) if w.contains("another device")));
        // The same bytes under the name of another key, as a hash collision would leave them.
        let path = written("stale", b"abc");
        fs::write(&path, &record).unwrap();
        assert_eq!(read(&path, KEY), None);
        let _ = fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn other_format_version_is_stale() {
        let record = String::from_utf8(encode(KEY, b"abc")).unwrap();
        let other = record.replacen(&format!("{MAGIC} {FORMAT} "), &format!("{MAGIC} {} ", FORMAT + 1), 1);
        assert!(matches!(decode(other.as_bytes(), KEY), Err(Ignored::Stale(w)) if w.starts_with("format 2")));
        // A future format may lay its header out otherwise: still stale, not corrupt.
        assert!(matches!(decode(b"CLAYOUT-CACHE 9 whatever\n", KEY), Err(Ignored::Stale(_))));
    }

    #[test]
    fn refused_payload_is_stale_and_json_records_round_trip() {
        let path = written("json", &serde_json::to_vec(&[32u32, 64]).unwrap());
        let back: Option<Vec<u32>> = read_record(&path, KEY, |p| serde_json::from_slice(p).map_err(|e| e.to_string()));
        assert_eq!(back, Some(vec![32, 64]));
        let other: Option<String> = read_record(&path, KEY, |p| serde_json::from_slice(p).map_err(|e| e.to_string()));
        assert_eq!(other, None);
        let _ = fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn unwritable_directory_is_ignored() {
        let dir = crate::cache::test_dir("unwritable");
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a-file");
        fs::write(&file, b"not a directory").unwrap();
        let under = file.join("cache");
        crate::cache::writer::write_file(&under.join("conv-0.bin"), &encode(KEY, b"abc"));
        assert_eq!(read(&under.join("conv-0.bin"), KEY), None);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn directory_from_the_setting_and_environment() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |n: &str| vars.iter().find(|(k, _)| *k == n).map(|(_, v)| OsString::from(v))
        };
        let both = env(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")]);
        assert_eq!(dir_from(&CacheDir::Default, &both), Some(PathBuf::from("/x/clayout")));
        let relative_xdg = env(&[("XDG_CACHE_HOME", "rel"), ("HOME", "/h")]);
        assert_eq!(dir_from(&CacheDir::Default, &relative_xdg), Some(PathBuf::from("/h/.cache/clayout")));
        assert_eq!(dir_from(&CacheDir::Default, &env(&[])), None);
        assert_eq!(dir_from(&CacheDir::Off, &both), None);
        assert_eq!(dir_from(&CacheDir::Path("/c".into()), &both), Some(PathBuf::from("/c")));
    }
}
