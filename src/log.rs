//! One-line log messages, `clayout: <level>: <message>`, to stderr or `CLAYOUT_LOG_FILE`.

use crate::config::{self, LogLevel};
use once_cell::sync::OnceCell;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::fs::File;
use std::io::Write;

static FILE: OnceCell<Option<Mutex<File>>> = OnceCell::new();

#[inline]
pub fn enabled(level: LogLevel) -> bool {
    level != LogLevel::Off && level <= config::get().log
}

pub fn write(level: LogLevel, msg: &str) {
    if !enabled(level) {
        return;
    }
    config_warnings();
    emit(level, msg);
}

/// Writes one line, the level already checked.
fn emit(level: LogLevel, msg: &str) {
    let line = format!("clayout: {}: {}\n", label(level), msg);
    let file = FILE.get_or_init(|| {
        let path = config::get().log_file.as_ref()?;
        match std::fs::OpenOptions::new().create(true).append(true).open(path) {
            Ok(f) => Some(Mutex::new(f)),
            Err(e) => {
                let _ = std::io::stderr().write_all(
                    format!(
                        "clayout: warn: CLAYOUT_LOG_FILE={path:?} cannot be opened ({e}); logging to stderr instead\n"
                    )
                    .as_bytes(),
                );
                None
            }
        }
    });
    match file {
        Some(f) => {
            let _ = f.lock().write_all(line.as_bytes());
        }
        None => {
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
    }
}

fn label(level: LogLevel) -> &'static str {
    match level {
        LogLevel::Off => "off",
        LogLevel::Error => "error",
        LogLevel::Warn => "warn",
        LogLevel::Info => "info",
        LogLevel::Debug => "debug",
        LogLevel::Trace => "trace",
    }
}

pub fn error(msg: &str) {
    write(LogLevel::Error, msg)
}
pub fn warn(msg: &str) {
    write(LogLevel::Warn, msg)
}
pub fn info(msg: &str) {
    write(LogLevel::Info, msg)
}
pub fn debug(msg: &str) {
    write(LogLevel::Debug, msg)
}

/// `info`, with the message made only where the level is on: most are made with `format!`,
/// and the level is off by default. Made eagerly, one debug line of the cached times (the
/// `Debug` form of every size class's figures) was a sixth of the instructions clayout added
/// to the first launches of a run made while the copies were built (PoCL, callgrind).
pub fn info_with(msg: impl FnOnce() -> String) {
    if enabled(LogLevel::Info) {
        write(LogLevel::Info, &msg())
    }
}

/// `debug`, with the message made only where the level is on (`info_with`).
pub fn debug_with(msg: impl FnOnce() -> String) {
    if enabled(LogLevel::Debug) {
        write(LogLevel::Debug, &msg())
    }
}

/// Logs `msg` only the first time `key` is seen, so a condition hit in a loop says so once.
pub fn once(level: LogLevel, key: &str, msg: &str) {
    static SEEN: OnceCell<Mutex<HashSet<String>>> = OnceCell::new();
    if !enabled(level) {
        return;
    }
    if SEEN.get_or_init(Default::default).lock().insert(key.to_string()) {
        write(level, msg);
    }
}

pub fn missing_entry_point(name: &str) {
    once(
        LogLevel::Warn,
        name,
        &format!("{name} is not provided by the real OpenCL library; answering as the loader would"),
    );
}

pub fn panic_fallback(name: &str) {
    once(LogLevel::Error, name, &format!("internal error in the {name} hook; the call was forwarded untouched"));
}

/// Says what was wrong with the environment's `CLAYOUT_*` values, once per process: at load time,
/// or before the first other message, whichever comes first.
pub fn config_warnings() {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        if enabled(LogLevel::Warn) {
            for w in config::warnings() {
                emit(LogLevel::Warn, w);
            }
        }
    });
}
