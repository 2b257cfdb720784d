//! What the cost model needs to know about the device before the first launch, measured on a
//! scratch buffer of a fixed, small size (never the data's size) on a profiling-free queue of
//! clayout's own, once per (device, structure) and process, and kept on disk (`diskcache`) so
//! that later runs start tuned:
//!
//! - the tile: a short search over ASTA tiles, each scored by a kernel that streams every word
//!   of every structure in that tile's ASTA layout plus a conversion there and back shared over
//!   `EPOCH` launches;
//! - the conversions' cost per byte, each direction, at the chosen tile, and what a conversion
//!   costs whatever its size.
//!
//! A timing made while something else kept the device or the CPU busy reads too slow, and kept
//! on disk it would hold the model back for good (on PoCL under load, a conversion's fixed cost
//! of 0.48 ms against 35-55 us kept `auto` from ever converting). So a record is timed once
//! more, in a later run, on clayout's worker after the run has lasted a while (`confirm`), and
//! keeps the faster of the two.

use crate::cl::{cmd, info::device_scalar};
use crate::layout::{Layout, Shape};
use once_cell::sync::Lazy;
use opencl_sys::*;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::Instant;

/// The launches a conversion is shared over when tiles are compared.
const EPOCH: f64 = 30.0;
/// Tiles a search tries (those the device and structure allow).
const CANDIDATES: [u32; 4] = [32, 64, 128, 256];

/// What clayout learned about one (device, structure, host layout).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tuned {
    pub tile: u32,
    /// Device time of a conversion to ASTA and of one back, per byte of the buffer, in ns.
    pub to_ns_per_byte: f64,
    pub back_ns_per_byte: f64,
    /// What one conversion adds to a busy queue whatever its size, in ns: its enqueue and its
    /// launch. A conversion of a small buffer costs that rather than its bytes (particles at
    /// 64,000 on the H100: 3 us there and back by the bytes), and the model explored ASTA with
    /// conversions that one launch could not repay.
    #[serde(default)]
    pub fixed_ns: f64,
    /// Whether the tile came from a search (false: the configured or default tile).
    pub searched: bool,
    /// Timed a second time, in a later run, keeping the faster of each figure (`confirm`).
    #[serde(default)]
    pub confirmed: bool,
}

impl Tuned {
    /// Conversion of `bytes` to ASTA.
    pub fn to_ns(&self, bytes: u64) -> f64 {
        self.fixed_ns + self.to_ns_per_byte * bytes as f64
    }

    /// Conversion there and back of `bytes`.
    pub fn round_trip_ns(&self, bytes: u64) -> f64 {
        2.0 * self.fixed_ns + (self.to_ns_per_byte + self.back_ns_per_byte) * bytes as f64
    }

    /// The record timed again as `again` (at its tile): each figure the faster of the two.
    pub fn confirmed_by(self, again: &Tuned) -> Tuned {
        Tuned {
            to_ns_per_byte: self.to_ns_per_byte.min(again.to_ns_per_byte),
            back_ns_per_byte: self.back_ns_per_byte.min(again.back_ns_per_byte),
            fixed_ns: self.fixed_ns.min(again.fixed_ns),
            confirmed: true,
            ..self
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    device: usize,
    s: u32,
    w: u32,
    host: Layout,
    fixed_tile: Option<u32>,
}

static TUNED: Lazy<Mutex<HashMap<Key, Option<Tuned>>>> = Lazy::new(|| Mutex::new(HashMap::new()));

/// The scratch size: big enough that a GPU runs at bandwidth, small next to its memory; a CPU
/// device gets a smaller one, still large enough that its timings are not mostly noise.
fn scratch_bytes(dev: cl_device_id) -> u64 {
    let (ty, max_alloc, global): (cl_device_type, cl_ulong, cl_ulong) = (
        device_scalar(dev, CL_DEVICE_TYPE),
        device_scalar(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE),
        device_scalar(dev, CL_DEVICE_GLOBAL_MEM_SIZE),
    );
    let want: u64 = if ty & CL_DEVICE_TYPE_CPU != 0 { 16 << 20 } else { 256 << 20 };
    want.min(max_alloc / 4).min(global / 16).max(1 << 16)
}

/// The tiles the conversion kernels and copies may take on `dev`.
pub fn candidates(dev: cl_device_id) -> Vec<u32> {
    let default = crate::marshal::default_tile(dev);
    let mut v: Vec<u32> = CANDIDATES.iter().copied().chain([default]).collect();
    v.sort();
    v.dedup();
    v
}

fn is_gpu(dev: cl_device_id) -> bool {
    let ty: cl_device_type = device_scalar(dev, CL_DEVICE_TYPE);
    ty & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR) != 0
}

/// The tuning for structures of `s` words of `w` bytes kept in `host` layout: `fixed_tile`
/// when the tile is configured, else the best tile of a search (on GPUs; other devices take
/// the default). Measured once per process, from the disk cache when it has it. None when
/// nothing could be measured (the cost model then does not convert).
pub fn tuned(
    ctx: cl_context,
    dev: cl_device_id,
    s: u32,
    w: u32,
    host: Layout,
    fixed_tile: Option<u32>,
) -> Option<Tuned> {
    let key = Key { device: dev as usize, s, w, host, fixed_tile };
    if let Some(t) = TUNED.lock().get(&key) {
        return *t;
    }
    let disk_key = disk_key(dev, s, w, host, fixed_tile);
    let found = from_disk(dev, s, w, host, fixed_tile);
    let found = match found.filter(|t| !t.confirmed) {
        // CLAYOUT_BUILD_AFTER=wait does all of clayout's work before the first launch.
        Some(t) if crate::config::get().build_after == crate::config::BuildAfter::Wait => {
            confirm(ctx, dev, (s, w, host), &disk_key, t).or(found)
        }
        Some(t) => {
            confirm_later(ctx, dev, (s, w, host), &disk_key, t);
            found
        }
        None => found,
    };
    let found = found.or_else(|| {
        let t = crate::guard("tuning", || measure(ctx, dev, s, w, host, fixed_tile)).flatten();
        if super::super::worker::cancelled() && t.is_none_or(|t| t.searched) {
            // Stopped part-way (its context or the process is going): a search may have skipped
            // tiles, so nothing is kept. The conversions of one tile, timed to the end, are kept:
            // otherwise a program whose runs all ended during that timing (the lbm demo on PoCL,
            // 0.1 s runs) timed them again in every run and never kept them, and never converted.
            return None;
        }
        match &t {
            Some(t) => {
                crate::log::info_with(|| {
                    format!(
                        "tuned S={s} w={w} {host:?}: tile {}{}, conversions {:.1} GB/s to ASTA, {:.1} GB/s back",
                        t.tile,
                        if t.searched { " (searched)" } else { "" },
                        1.0 / t.to_ns_per_byte,
                        1.0 / t.back_ns_per_byte
                    )
                });
                crate::cache::disk::put_json("tune", &disk_key, t);
            }
            None => crate::log::warn(&format!(
                "conversions of S={s} w={w} could not be timed; the cost model will not convert such buffers"
            )),
        }
        t
    });
    if found.is_none() && super::super::worker::cancelled() {
        return None;
    }
    let mut all = TUNED.lock();
    if let Some(t) = found.filter(|_| fixed_tile.is_none()) {
        // The search measured its tile's conversions too: asking for that tile is answered.
        all.insert(Key { fixed_tile: Some(t.tile), ..key.clone() }, Some(t));
    }
    all.insert(key, found);
    found
}

/// Times the conversions of the record `t` (read from disk at `key`) again at its tile, on the
/// worker once the run has lasted a minute (or as CLAYOUT_BUILD_AFTER says), for the runs after
/// this one (`confirm`). Dropped if the run ends first: a later run tries again.
fn confirm_later(ctx: cl_context, dev: cl_device_id, shape: (u32, u32, Layout), key: &str, t: Tuned) {
    // Once per record and process.
    static ASKED: Lazy<Mutex<std::collections::HashSet<String>>> = Lazy::new(Default::default);
    let key = key.to_string();
    if !ASKED.lock().insert(key.clone()) {
        return;
    }
    // Counted on the context, so that its reference count, asked meanwhile, does not show the
    // job's (`runtime::refs`).
    let Some(held) = crate::cl::Context::retained_in(ctx, ctx) else { return };
    let hold = crate::config::get().build_after.hold(std::time::Duration::from_secs(60));
    let not_before = (!hold.is_zero()).then(|| Instant::now() + hold);
    let (ctx_key, dev_key) = (ctx as usize, dev as usize);
    super::super::worker::submit_after(ctx_key, not_before, move || {
        let _held = held;
        confirm(ctx_key as cl_context, dev_key as cl_device_id, shape, &key, t);
    });
}

/// The record `t`, kept on disk at `key`, timed again at its tile: each figure the faster of the
/// two, kept and returned. None when nothing could be timed, or the job was asked to stop.
fn confirm(ctx: cl_context, dev: cl_device_id, (s, w, host): (u32, u32, Layout), key: &str, t: Tuned) -> Option<Tuned> {
    let again = crate::guard("tuning again", || search(ctx, dev, s, w, host, &[t.tile])).flatten();
    if super::super::worker::cancelled() {
        return None;
    }
    let Some(again) = again else {
        crate::log::debug_with(|| format!("tuning S={s} w={w} {host:?} again: nothing could be timed"));
        return None;
    };
    let kept = t.confirmed_by(&again);
    crate::log::debug_with(|| {
        format!(
            "tuned S={s} w={w} {host:?} again: {:.1} us a conversion whatever its size (was {:.1})",
            kept.fixed_ns / 1e3,
            t.fixed_ns / 1e3
        )
    });
    crate::cache::disk::put_json("tune", key, &kept);
    Some(kept)
}

/// "fixed": conversion times as a busy queue sees them, with the cost of a conversion whatever
/// its size (records before "added" timed them alone, "added" had no fixed cost).
fn disk_key(dev: cl_device_id, s: u32, w: u32, host: Layout, fixed_tile: Option<u32>) -> String {
    format!("fixed|{}|S={s}|w={w}|host={host:?}|tile={fixed_tile:?}", crate::cache::disk::device_key(dev))
}

/// What this process or the disk cache already holds for these structures, never measured:
/// None when nothing is recorded, Some(None) when this process could not measure them.
fn recorded(dev: cl_device_id, s: u32, w: u32, host: Layout, fixed_tile: Option<u32>) -> Option<Option<Tuned>> {
    let key = Key { device: dev as usize, s, w, host, fixed_tile };
    if let Some(t) = TUNED.lock().get(&key) {
        return Some(*t);
    }
    from_disk(dev, s, w, host, fixed_tile).map(Some)
}

/// The cache's record for these structures, or for a fixed tile the search's record when it
/// chose that tile: the search timed that tile's conversions too. (Without it, a run after the
/// search found nothing recorded for the tile it was to use, could not load its copies inside
/// the application's build, and timed the conversions while the application ran: lbm on an
/// H100 ran 30 launches as written, and took the conversions for 8 times dearer than they are.)
fn from_disk(dev: cl_device_id, s: u32, w: u32, host: Layout, fixed_tile: Option<u32>) -> Option<Tuned> {
    let get = |tile| crate::cache::disk::get_json::<Tuned>("tune", &disk_key(dev, s, w, host, tile));
    get(fixed_tile).or_else(|| get(None).filter(|t| t.searched && Some(t.tile) == fixed_tile))
}

/// `t` with each direction's cost the lowest this process or the cache holds for these
/// structures at any tile (the search's record included): a conversion costs about the same
/// per byte at every tile, and one timed while the application kept the device busy (a build
/// ahead, or a search, on clayout's worker) can read several times too slow (lbm on an H100:
/// 5.5 ps per byte at tile 64, against 0.7 timed alone), which holds the model back from
/// converting where it pays.
pub fn with_best_rates(dev: cl_device_id, s: u32, w: u32, host: Layout, t: Tuned) -> Tuned {
    let mut best = t;
    for tile in candidates(dev).into_iter().map(Some).chain([None]) {
        if let Some(Some(o)) = recorded(dev, s, w, host, tile) {
            best.to_ns_per_byte = best.to_ns_per_byte.min(o.to_ns_per_byte);
            best.back_ns_per_byte = best.back_ns_per_byte.min(o.back_ns_per_byte);
            best.fixed_ns = best.fixed_ns.min(o.fixed_ns);
        }
    }
    best
}

/// Whether the tuning for these structures is known without measuring (this process or the
/// disk cache).
pub fn known(dev: cl_device_id, s: u32, w: u32, host: Layout, fixed_tile: Option<u32>) -> bool {
    recorded(dev, s, w, host, fixed_tile).flatten().is_some()
}

/// The tile a search found for these structures on `dev`, if one was made in this process or
/// an earlier run (never measured here); whether a search is still to be made.
pub fn searched_tile(dev: cl_device_id, s: u32, w: u32, host: Layout) -> (Option<u32>, bool) {
    match recorded(dev, s, w, host, None) {
        Some(t) => (t.filter(|t| t.searched).map(|t| t.tile), false),
        None => (None, is_gpu(dev)),
    }
}

fn measure(ctx: cl_context, dev: cl_device_id, s: u32, w: u32, host: Layout, fixed_tile: Option<u32>) -> Option<Tuned> {
    let tiles: Vec<u32> = match fixed_tile {
        Some(t) => vec![t],
        None if is_gpu(dev) => candidates(dev),
        None => vec![crate::marshal::default_tile(dev)],
    };
    search(ctx, dev, s, w, host, &tiles)
}

/// Times conversions (and, with more than one tile, the streaming kernel) for each of `tiles`
/// on a scratch buffer, and returns the best tile with its conversion costs.
pub fn search(ctx: cl_context, dev: cl_device_id, s: u32, w: u32, host: Layout, tiles: &[u32]) -> Option<Tuned> {
    let q = cmd::create_queue(ctx, dev, 0).ok()?;
    let bytes = scratch_bytes(dev);
    let m = bytes / (s as u64 * w as u64);
    let shape = Shape::new(m, s, w);
    let mem = cmd::create_buffer(ctx, CL_MEM_READ_WRITE, shape.bytes() as usize).ok()?;
    let (q, mem) = (q.raw(), mem);
    // Its pages touched once by a fill before anything is timed: on PoCL, the first conversion's
    // work-groups faulted them in on both cores at once, and the run that measured paid 0.4-0.5 s
    // more (particles at 4,096, 2 cores of a virtual machine, where `perf` put most of it in the
    // kernel's page-fault path behind a spin lock). On a GPU the fill is a fraction of one
    // conversion. A failed fill changes nothing: the timings are made as before.
    let _ = cmd::fill(q, mem.raw(), &[0u8; 4], 0, shape.bytes() as usize, &[]);
    let _ = cmd::finish(q);
    // Measured once, at the first tile: it is the enqueue and launch of a kernel, not its work.
    let mut fixed: Option<f64> = None;
    let mut best: Option<(f64, Tuned)> = None;
    for &t in tiles {
        if super::super::worker::cancelled() {
            return None;
        }
        let Some((to, back)) = there_and_back(q, mem.raw(), shape, host, t) else { continue };
        let stream = if tiles.len() > 1 { stream_time(ctx, q, mem.raw(), shape, t) } else { Some(0.0) };
        let Some(stream) = stream else { continue };
        if fixed.is_none() {
            // CLAYOUT_FAULT=tile-timing (the fault-injection build) fixes what a conversion
            // costs whatever its size, as it fixes the kernels' times (`kernel::injected_ns`): a
            // test of the choice of tile must not hang on a conversion timed while the CPU was
            // busy with others (0.48 ms once, against 35-55 us, kept the model from converting
            // for good).
            let injected = crate::fault::inject("tile-timing").then_some(10_000.0);
            fixed = Some(injected.or_else(|| fixed_time(ctx, q, s, w, host, t)).unwrap_or(0.0));
        }
        let score = stream + (to + back) / EPOCH;
        let b = shape.bytes() as f64;
        let tuned = Tuned {
            tile: t,
            to_ns_per_byte: to.max(1.0) / b,
            back_ns_per_byte: back.max(1.0) / b,
            fixed_ns: fixed.unwrap_or(0.0),
            searched: tiles.len() > 1,
            confirmed: false,
        };
        crate::log::debug_with(|| {
            format!(
            "tile {t} for S={s} w={w}: stream {:.3} ms, to ASTA {:.3} ms, back {:.3} ms, {:.1} us a conversion whatever its size",
            stream / 1e6,
            to / 1e6,
            back / 1e6,
            tuned.fixed_ns / 1e3
        )
        });
        // A tile must beat the smaller ones by 2 % to be taken: below that it is noise.
        if best.as_ref().is_none_or(|(sc, _)| score < sc * 0.98) {
            best = Some((score, tuned));
        }
    }
    best.map(|(_, t)| t)
}

/// What a conversion adds to a busy queue whatever its size: that of a conversion of 64 KiB
/// there and back (at least one tile), shared by two, where the bytes cost next to nothing.
fn fixed_time(ctx: cl_context, q: cl_command_queue, s: u32, w: u32, host: Layout, t: u32) -> Option<f64> {
    let m = ((64u64 << 10) / (s as u64 * w as u64)).max(t as u64);
    let shape = Shape::new(m, s, w);
    let mem = cmd::create_buffer(ctx, CL_MEM_READ_WRITE, shape.bytes() as usize).ok()?;
    let (to, back) = there_and_back(q, mem.raw(), shape, host, t)?;
    Some((to + back) / 2.0)
}

/// What a conversion of `mem` (`shape`, in `host` layout) to ASTA with tile `t` and one back add
/// to a busy queue (`time_added`).
fn there_and_back(q: cl_command_queue, mem: cl_mem, shape: Shape, host: Layout, t: u32) -> Option<(f64, f64)> {
    let asta = Layout::Asta { t };
    // Repeating a conversion permutes whatever the scratch holds: the same work each time.
    let to = time_added(q, || convert(q, mem, shape, host, asta))?;
    let back = time_added(q, || convert(q, mem, shape, asta, host))?;
    Some((to, back))
}

fn convert(q: cl_command_queue, mem: cl_mem, shape: Shape, from: Layout, to: Layout) -> bool {
    // The event is released at once: the caller waits on the queue.
    crate::marshal::enqueue_conversion(q, mem, 0, shape, from, to, &[]).is_ok()
}

/// The fastest of three runs of `enqueue` on `q`, host-timed from a drained queue to its end;
/// the first run is a warm-up.
fn time(q: cl_command_queue, enqueue: impl Fn() -> bool) -> Option<f64> {
    if cmd::finish(q).is_err() || !enqueue() || cmd::finish(q).is_err() {
        return None;
    }
    batch(q, &enqueue, 1, 3)
}

/// The fastest of `reps` host-timed batches of `n` back-to-back runs of `enqueue`.
fn batch(q: cl_command_queue, enqueue: &impl Fn() -> bool, n: u32, reps: u32) -> Option<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t0 = Instant::now();
        if !(0..n).all(|_| enqueue()) || cmd::finish(q).is_err() {
            return None;
        }
        best = best.min(t0.elapsed().as_nanos() as f64);
    }
    Some(best)
}

/// What one more run of `enqueue` adds to a queue that is already busy, as a conversion before a
/// launch does: batches of one and of three, the difference shared by two. A single run
/// host-timed also counts the submission and the wait for its end (tens of microseconds on a
/// GPU, as much as a whole conversion of a small buffer), which a conversion between other
/// commands does not pay.
fn time_added(q: cl_command_queue, enqueue: impl Fn() -> bool) -> Option<f64> {
    let one = time(q, &enqueue)?;
    let three = batch(q, &enqueue, 3, 2)?;
    // Never below half a run timed alone: noise must not make conversions look free.
    Some(((three - one) / 2.0).max(one / 2.0))
}

/// Time of a kernel that reads and rewrites every word of every structure in ASTA with tile `t`:
/// what a kernel touching all its members would see in that layout.
fn stream_time(ctx: cl_context, q: cl_command_queue, mem: cl_mem, shape: Shape, t: u32) -> Option<f64> {
    let word = if shape.w == 8 { "ulong" } else { "uint" };
    let src = format!(
        "{}\n__kernel void clayout_tune_stream(__global {word} *p, ulong M) {{\n  ulong i = get_global_id(0);\n  if (i >= M) return;\n  for (uint s = 0; s < {S}u; s++) {{\n    ulong k = CLAYOUT_ASTA_INDEX(i, s, {S}u, CLAYOUT_TILE, M);\n    p[k] = p[k] * 3 + 1;\n  }}\n}}\n",
        crate::layout::asta_macros(Some(t)),
        S = shape.s
    );
    let prog = super::super::probe::build(ctx, &src, "", "build").ok()?;
    let k = cmd::create_kernel(prog.raw(), "clayout_tune_stream").ok()?;
    let m: u64 = shape.m;
    cmd::set_arg(k.raw(), 0, cmd::Arg::Mem(mem)).ok()?;
    cmd::set_arg(k.raw(), 1, cmd::Arg::u64(&m)).ok()?;
    let local: usize = 128;
    let global = (shape.m as usize).div_ceil(local) * local;
    time(q, || cmd::nd_range(q, k.raw(), &[global], Some(&[local]), &[]).is_ok())
}
