//! Writes the on-disk cache's records off the application's threads.
//!
//! Records change inside the application's calls: a blocking read ends a buffer's epoch and
//! records its length, a buffer released in ASTA records a habit. Writing the file there (a
//! temporary file, written and renamed) left the application waiting behind the disk: three
//! records in one read took 0.5 ms of a 0.9 ms run of particles on PoCL. A record is therefore
//! only handed over here; one thread of clayout's writes it (looking for records by itself while
//! they come, so that handing one over wakes no thread: `POLL`), and the exit (or anyone who
//! calls [`flush`]) writes what is still pending. A record handed over and not yet written is what
//! this process reads back ([`pending`]), so deferring a write never makes a read stale.
//!
//! A process killed before its exit loses what was still pending, as it would lose the records
//! written at exit: the cache only ever saves time, and the next run measures again.

use crate::stats::{self, CacheEvent};
use once_cell::sync::Lazy;
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

/// A record waiting to be written: its file's bytes, and a serial that tells a newer version of
/// the same file from the one being written.
struct Record {
    bytes: Arc<Vec<u8>>,
    serial: u64,
}

/// A record still to be made: its bytes and file name, made on the writing thread.
type Later = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Pending {
    records: HashMap<PathBuf, Record>,
    /// Records handed over to be made (`submit_later`), in the order they were.
    later: Vec<Later>,
    serial: u64,
    /// Whether the writing thread was started (or could not be: then `flush` writes).
    started: bool,
    /// Whether the writing thread waits to be woken (`run`): else it looks again within `POLL`
    /// by itself, and a record handed over wakes nobody.
    idle: bool,
}

static PENDING: Lazy<Mutex<Pending>> = Lazy::new(Default::default);
static WORK: Condvar = Condvar::new();
/// Held while records are written, by the thread or by `flush`: a file is never written by two
/// at once, and an older version never lands after a newer one.
static WRITING: Mutex<()> = Mutex::new(());

/// How long the thread lets records gather before writing them: a burst of launches and reads
/// changes the same few records many times, and each version would otherwise be a file.
const GATHER: Duration = Duration::from_millis(20);

/// How often the thread looks for records by itself while the application hands some over. A
/// record handed over inside an application's call then costs no wake of the thread: on the
/// H200 the wake took 4-18 us of a blocking read that ended a short run's epochs, where the
/// whole of clayout's time in such a run is some 100 us (docs/results.md, "The cache's writer
/// woken no more"). A run shorter than this never has the thread write: its exit does.
const POLL: Duration = Duration::from_millis(100);

/// Looks in a row that find nothing after which the thread waits to be woken: an application
/// that hands nothing over for a while costs no wake-ups.
const IDLE_AFTER: u32 = 10;

/// Hands the file `path` (its whole bytes) to the writer; a newer version replaces one not yet
/// written.
pub fn submit(path: PathBuf, bytes: Vec<u8>) {
    if forked() {
        write_file(&path, &bytes);
        return;
    }
    let mut p = PENDING.lock();
    p.serial += 1;
    let serial = p.serial;
    p.records.insert(path, Record { bytes: Arc::new(bytes), serial });
    start_locked(&mut p);
    wake(p);
}

/// Wakes the writing thread where it waits to be woken (`Pending::idle`), read under the lock
/// the thread sets it under, so that no record is left waiting for a look that never comes.
fn wake(p: parking_lot::MutexGuard<'_, Pending>) {
    let idle = p.idle;
    drop(p);
    if idle {
        WORK.notify_one();
    }
}

/// Hands over `make`, which makes a record and submits it ([`submit`]), to be run on the writing
/// thread. A record changes inside the application's calls: a blocking read that ends an epoch
/// records its length, and the record's JSON and the hash of its key (some 400 bytes) took 53,000
/// of the 136,000 instructions clayout added to a one-launch run of particles on PoCL
/// (callgrind). Whoever reads a record makes those pending first ([`pending`]).
pub fn submit_later(make: Later) {
    if forked() {
        make();
        return;
    }
    let mut p = PENDING.lock();
    p.later.push(make);
    start_locked(&mut p);
    wake(p);
}

/// Held while records handed over are made, so that a reader who finds none left to make also
/// finds those being made submitted.
static MAKING: Mutex<()> = Mutex::new(());

/// Makes the records handed over to be made, on this thread, in the order they were.
fn make_later() {
    let _m = MAKING.lock();
    loop {
        let later = std::mem::take(&mut PENDING.lock().later);
        if later.is_empty() {
            return;
        }
        for make in later {
            crate::guard::guard("on-disk cache record", make);
        }
    }
}

/// Starts the writing thread ahead of the first record, where a thread's start (some 50 us) is
/// no application call's: a record first changes inside one (a blocking read ending an epoch).
pub fn start() {
    start_locked(&mut PENDING.lock());
}

fn start_locked(p: &mut Pending) {
    if !p.started {
        p.started = true;
        let spawned = std::thread::Builder::new().name("clayout-cache".into()).spawn(run);
        if let Err(e) = spawned {
            crate::log::debug_with(|| format!("clayout cache: no writer thread ({e}); records are written at exit"));
        }
    }
}

/// The bytes of `path` as last handed over and not yet written, if any.
pub fn pending(path: &Path) -> Option<Arc<Vec<u8>>> {
    if forked() {
        return None;
    }
    make_later();
    PENDING.lock().records.get(path).map(|r| r.bytes.clone())
}

/// Writes every pending record now, on this thread (at exit: the writer thread may never get
/// to them). Waits at most a second for a write in progress. Not in a forked child
/// ([`forked`]): the parent writes its own records.
pub fn flush() {
    if forked() {
        return;
    }
    make_later();
    if let Some(_w) = WRITING.try_lock_for(Duration::from_secs(1)) {
        write_all();
    }
}

/// Whether this is a child forked after the application's calls (so perhaps after the writer
/// started): no writer thread runs here, and the locks may have been copied held. Such a child
/// writes its records itself, on its own thread, and leaves the parent's pending ones to the
/// parent.
fn forked() -> bool {
    crate::stats::forked_child()
}

fn run() {
    // Started ahead of the first record, by a run that will likely hand some over: looking.
    let mut empty = 0;
    loop {
        {
            let mut p = PENDING.lock();
            while p.records.is_empty() && p.later.is_empty() {
                if empty >= IDLE_AFTER {
                    p.idle = true;
                    WORK.wait(&mut p);
                    p.idle = false;
                } else if WORK.wait_for(&mut p, POLL).timed_out() {
                    empty += 1;
                }
            }
        }
        empty = 0;
        std::thread::sleep(GATHER);
        make_later();
        let _w = WRITING.lock();
        crate::guard::guard("on-disk cache writer", write_all);
    }
}

/// Writes the pending records one by one, each removed once written unless a newer version
/// came meanwhile. Called with `WRITING` held.
fn write_all() {
    loop {
        let next = PENDING.lock().records.iter().next().map(|(path, r)| (path.clone(), r.bytes.clone(), r.serial));
        let Some((path, bytes, serial)) = next else { return };
        write_file(&path, &bytes);
        let mut p = PENDING.lock();
        if p.records.get(&path).is_some_and(|r| r.serial == serial) {
            p.records.remove(&path);
        }
    }
}

/// Writes one record's file; a failure is logged at debug level and otherwise ignored.
pub(super) fn write_file(path: &Path, bytes: &[u8]) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else { return };
    match write_atomic(dir, &name.to_string_lossy(), bytes) {
        Ok(()) => stats::cache(CacheEvent::Write),
        Err(e) => crate::log::debug_with(|| format!("clayout cache: cannot write {} ({e})", path.display())),
    }
}

/// Writes `bytes` to `dir/name` through a temporary file renamed over it, so that a reader (in
/// any process) sees the old file or the new one, never part of one. No fsync: a file a crash
/// leaves short fails its checksum and is rebuilt.
fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), SERIAL.fetch_add(1, Relaxed)));
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| fs::rename(&tmp, dir.join(name)));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_handed_over_reads_back_before_it_is_written_and_lands_at_the_flush() {
        let d = crate::cache::test_dir("writer-flush");
        let path = d.join("a.bin");
        submit(path.clone(), b"one".to_vec());
        submit(path.clone(), b"two".to_vec());
        // Written by the thread or still pending: either way this process sees the newer one.
        let seen = pending(&path).map(|b| b.to_vec()).or_else(|| fs::read(&path).ok());
        assert_eq!(seen.as_deref(), Some(&b"two"[..]));
        flush();
        assert_eq!(pending(&path), None, "nothing is left pending after a flush");
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_record_to_be_made_reads_back_before_the_thread_makes_it() {
        let d = crate::cache::test_dir("writer-later");
        let path = d.join("c.bin");
        submit(path.clone(), b"old".to_vec());
        let p = path.clone();
        submit_later(Box::new(move || submit(p, b"made later".to_vec())));
        // Made in the order handed over: the newest lands last.
        let p = path.clone();
        submit_later(Box::new(move || submit(p, b"made last".to_vec())));
        let seen = pending(&path).map(|b| b.to_vec()).or_else(|| fs::read(&path).ok());
        assert_eq!(seen.as_deref(), Some(&b"made last"[..]));
        flush();
        assert_eq!(fs::read(&path).unwrap(), b"made last");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn the_thread_writes_what_it_is_handed_without_a_flush() {
        let d = crate::cache::test_dir("writer-thread");
        let path = d.join("b.bin");
        submit(path.clone(), b"written by the thread".to_vec());
        let start = std::time::Instant::now();
        while pending(&path).is_some() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(fs::read(&path).unwrap(), b"written by the thread");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_record_handed_over_after_the_thread_went_idle_is_written_without_a_flush() {
        let d = crate::cache::test_dir("writer-idle");
        let written = |path: &Path| {
            let start = std::time::Instant::now();
            while pending(path).is_some() && start.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(5));
            }
            fs::read(path).ok()
        };
        let first = d.join("first.bin");
        submit(first.clone(), b"while looking".to_vec());
        assert_eq!(written(&first).as_deref(), Some(&b"while looking"[..]));
        // Long enough for the thread to stop looking by itself, unless other tests hand it
        // records meanwhile: either way the next record must land.
        std::thread::sleep(POLL * (IDLE_AFTER + 2));
        let second = d.join("second.bin");
        let p = second.clone();
        submit_later(Box::new(move || submit(p, b"after idling".to_vec())));
        assert_eq!(written(&second).as_deref(), Some(&b"after idling"[..]));
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_file_that_cannot_be_written_is_dropped_not_retried_forever() {
        let d = crate::cache::test_dir("writer-unwritable");
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("a-file"), b"not a directory").unwrap();
        let path = d.join("a-file").join("c.bin");
        submit(path.clone(), b"nowhere".to_vec());
        flush();
        assert_eq!(pending(&path), None);
        assert!(fs::read(&path).is_err());
        let _ = fs::remove_dir_all(&d);
    }
}
