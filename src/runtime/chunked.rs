//! A read of a buffer in ASTA (from AoS), converted back and transferred chunk by chunk: the
//! conversion back is local to each tile of structures, so the buffer is converted in chunks of
//! whole tiles on a queue of clayout's, and each chunk is read on the application's queue as
//! soon as its conversion is done, while the next chunk converts. Only the first chunk's
//! conversion adds to the read, instead of the whole buffer's (issue 19, item 4).
//!
//! Taken only where it pays (`CLAYOUT_CHUNKED_READS`, docs/results.md): into pinned host memory
//! (`pinned`), for reads of the whole converted part of a buffer of 32 MiB or more. On the
//! H100 a transfer from pageable memory split in 4 to 32 pieces took 2 to 20 ms longer than in
//! one piece, against the 0.5 ms a conversion of 640 MiB costs; from pinned memory the pieces
//! cost nothing measurable and the conversion disappears behind the transfer.
//!
//! What the application sees: its read, split in several reads of the same buffer on its queue,
//! the last one's event given to it (a `CL_COMMAND_READ_BUFFER` that completes after all of
//! them; its profiling times are that last piece's). Every failure before the first chunk's
//! conversion is enqueued leaves everything as it was and the read takes the ordinary path.

use super::access::finish_blocking;
use super::buffers::{self, Buffer, BufferState};
use super::convert::{host_permute_at, last_pending, watch_failure};
use super::state::{Current, DeviceLayout, Step};
use super::{order, pinned, timing};
use crate::cl::{api, cmd, Event, Queue};
use crate::config::ChunkedReads;
use crate::layout::{Layout, Shape};
use crate::registry::key;
use crate::stats::{self, Direction};
use libc::c_void;
use once_cell::sync::Lazy;
use opencl_sys::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Under `auto`, the least converted bytes a read is chunked for, and about how many bytes
/// each chunk holds (between 2 and `AUTO_MAX_CHUNKS` chunks). On the H100 a kernel over 640 MiB
/// beside a read of it into pinned memory, split in 4, 8 and 16 chunks, took 12.32, 12.27 and
/// 12.25 ms against 12.73 ms one after the other (`bench/overlap.c`); each chunk also costs
/// clayout's host time to enqueue, so no more than 8.
const AUTO_MIN_BYTES: u64 = 32 << 20;
const AUTO_CHUNK_BYTES: u64 = 16 << 20;
const AUTO_MAX_CHUNKS: u64 = 8;

/// The byte ranges `[start, end)` that cover the first `prefix` bytes in about `count` chunks,
/// each (but the last) a whole number of `group`s, the bytes of one tile of structures.
pub fn chunks(prefix: u64, group: u64, count: u64) -> Vec<(u64, u64)> {
    if prefix == 0 || group == 0 || count == 0 {
        return Vec::new();
    }
    let per = prefix.div_ceil(group).div_ceil(count).max(1) * group;
    let mut out = Vec::new();
    let mut start = 0;
    while start < prefix {
        let end = (start + per).min(prefix);
        out.push((start, end));
        start = end;
    }
    out
}

/// How many chunks a read of `converted` bytes is split in under `mode`, if any (under `Auto`
/// the caller has checked that the read's host memory is pinned).
fn chunk_count(mode: ChunkedReads, converted: u64) -> Option<u64> {
    match mode {
        ChunkedReads::Off => None,
        ChunkedReads::Chunks(n) => Some(n as u64),
        ChunkedReads::Auto => {
            (converted >= AUTO_MIN_BYTES).then(|| (converted / AUTO_CHUNK_BYTES).clamp(2, AUTO_MAX_CHUNKS))
        }
    }
}

/// clayout's queue for the chunks' conversions, one per context and device, made on first use,
/// and whether it profiles: as the application's queues do where clayout turns profiling on
/// (`profiling::wanted`).
static SIDE: Lazy<Mutex<HashMap<(usize, usize), SideQueue>>> = Lazy::new(|| Mutex::new(HashMap::new()));

/// A side queue, and whether it profiles.
type SideQueue = (Queue, bool);

fn side_queue(ctx: cl_context, dev: cl_device_id) -> Option<(cl_command_queue, bool)> {
    let mut all = SIDE.lock();
    if let Some((q, profiling)) = all.get(&(ctx as usize, dev as usize)) {
        return Some((q.raw(), *profiling));
    }
    let profiling = super::profiling::wanted(dev);
    let q = cmd::create_queue(ctx, dev, if profiling { CL_QUEUE_PROFILING_ENABLE } else { 0 }).ok()?;
    let raw = q.raw();
    all.insert((ctx as usize, dev as usize), (q, profiling));
    Some((raw, profiling))
}

/// Releases clayout's queues of `ctx` (the application is releasing it for the last time).
pub fn release_context(ctx: cl_context) {
    let gone: Vec<SideQueue> = {
        let mut all = SIDE.lock();
        let keys: Vec<_> = all.keys().filter(|k| k.0 == ctx as usize).copied().collect();
        keys.iter().filter_map(|k| all.remove(k)).collect()
    };
    drop(gone);
}

/// `clEnqueueReadBuffer` of `size` bytes at `offset` of `mem` into `ptr`, chunked where that
/// pays; `None` when the read is not one to chunk (the caller takes the ordinary path, nothing
/// having changed), otherwise the call's result.
///
/// # Safety
/// As for `clEnqueueReadBuffer` with these arguments.
#[allow(clippy::too_many_arguments)]
pub unsafe fn read(
    queue: cl_command_queue,
    mem: cl_mem,
    blocking: cl_bool,
    offset: usize,
    size: usize,
    ptr: *mut c_void,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> Option<cl_int> {
    let mode = crate::config::get().chunked_reads;
    // Most reads go to pageable memory: they are told apart before anything is looked up.
    let wanted = match mode {
        ChunkedReads::Off => false,
        ChunkedReads::Chunks(_) => true,
        ChunkedReads::Auto => pinned::covers(ptr, size),
    };
    if !wanted || offset != 0 || ptr.is_null() {
        return None;
    }
    if order::fast(n).is_some() {
        // No annotated program yet: no buffer is in a device layout.
        return None;
    }
    let user = order::user_wait(n, list)?;
    let (context, device, in_order) =
        crate::registry::get().queues.with(key(queue), |q| (q.context, q.device, !q.out_of_order))?;
    let buffer = buffers::get(key(mem))?;
    if buffer.parent.is_some() || buffer.facts.context != context || size > buffer.facts.size {
        return None;
    }
    let mut st = buffer.lock();
    st.settle(&buffer);
    let Current::Device(d) = st.current else { return None };
    let (Layout::Aos, Layout::Asta { t }) = (d.host, d.device) else { return None };
    let prefix = d.shape.bytes();
    if (size as u64) < prefix {
        return None;
    }
    let count = chunk_count(mode, prefix)?;
    let group = t as u64 * d.shape.s as u64 * d.shape.w as u64;
    let ranges = chunks(prefix, group, count);
    if ranges.len() < 2 {
        return None;
    }
    let (side, profiling) = side_queue(context as cl_context, device as cl_device_id)?;
    let mut conv = Chunks::new((side, profiling), &buffer, &mut st, &ranges, d, user);
    let last = ranges.len() - 1;
    let mut earlier: Vec<Event> = Vec::new();
    let mut own_last: Option<Event> = None;
    let mut last_event: cl_event = std::ptr::null_mut();
    // Each chunk is read as soon as its conversion is enqueued, so that the first transfer starts
    // after one chunk's conversion, not after clayout has enqueued them all.
    for (i, &(a, b)) in ranges.iter().enumerate() {
        let done = match conv.next(i, &mut st) {
            Ok(ev) => ev,
            Err(Stop::Untouched) => return None,
            Err(Stop::Lost) => {
                // Later commands still wait for what was enqueued.
                conv.finish(&mut st);
                return Some(CL_OUT_OF_RESOURCES);
            }
        };
        let end = if i == last { size as u64 } else { b };
        let mut wait = user.to_vec();
        wait.push(done);
        if i == last && !in_order {
            // On an out-of-order queue the application's event must still stand for the whole read.
            wait.extend(earlier.iter().map(Event::raw));
        }
        let free = order::free(queue, &wait);
        if !free {
            order::close(queue);
        }
        let mut own: cl_event = std::ptr::null_mut();
        let ev = if i == last && !event.is_null() { event } else { &mut own as *mut cl_event };
        let dst = (ptr as *mut u8).add(a as usize) as *mut c_void;
        let r = api().clEnqueueReadBuffer(
            queue,
            mem,
            CL_FALSE,
            a as usize,
            (end - a) as usize,
            dst,
            wait.len() as cl_uint,
            wait.as_ptr(),
            ev,
        );
        if r != CL_SUCCESS {
            // The state already says host layout; the chunks not converted yet come back now, so
            // that it stays true (the reads enqueued so far still run).
            for j in i + 1..ranges.len() {
                if conv.next(j, &mut st).is_err() {
                    break;
                }
            }
            conv.finish(&mut st);
            keep(queue, earlier);
            return Some(r);
        }
        order::noted(queue, in_order, false, *ev, free);
        st.users.record(queue, in_order, *ev, free);
        if i == last {
            last_event = *ev;
            own_last = Event::from_raw(own);
        } else {
            earlier.extend(Event::from_raw(own));
        }
    }
    conv.finish(&mut st);
    stats::chunked_read();
    crate::log::debug_with(|| {
        format!(
            "buffer {:#x}: read in {} chunks, each converted back to AoS beside the transfer of the one before",
            buffer.handle,
            ranges.len()
        )
    });
    drop(st);
    earlier.extend(Event::retain(last_event));
    keep(queue, earlier);
    if blocking == CL_FALSE {
        return Some(CL_SUCCESS);
    }
    Some(finish_blocking(queue, CL_SUCCESS, last_event, own_last, |e| e))
}

/// Keeps the pieces of a read referenced until the last of them completes: some
/// implementations abort when a failure (a gate in the wait list set to an error) runs through
/// commands already released.
fn keep(queue: cl_command_queue, pieces: Vec<Event>) {
    if !pieces.is_empty() {
        drop(timing::hold_on(queue, pieces, false));
    }
}

/// Why the chunks' conversions stopped.
enum Stop {
    /// The first chunk's conversion could not be enqueued: nothing changed, the read takes the
    /// ordinary path.
    Untouched,
    /// A later one failed and neither a conversion nor the host fallback could bring the rest
    /// back: the contents are lost (as the ordinary path says when a conversion fails halfway)
    /// and the read fails.
    Lost,
}

/// The conversions of a chunked read, enqueued one chunk at a time on `side`.
struct Chunks<'a> {
    side: cl_command_queue,
    buffer: &'a Arc<Buffer>,
    ranges: &'a [(u64, u64)],
    /// The buffer's device layout before the read.
    from: DeviceLayout,
    /// What the next conversion waits for: the buffer's unfinished users for the first, the
    /// previous conversion after it.
    wait: Vec<cl_event>,
    /// The last conversion enqueued (each one's commands are kept by `timing` until done).
    last: Option<Event>,
    /// Whether `last` brought back the whole rest of the buffer after a chunk's conversion
    /// failed: the chunks after it wait for it.
    rest: bool,
    bytes: u64,
    profiling: bool,
}

impl<'a> Chunks<'a> {
    fn new(
        (side, profiling): (cl_command_queue, bool),
        buffer: &'a Arc<Buffer>,
        st: &mut BufferState,
        ranges: &'a [(u64, u64)],
        from: DeviceLayout,
        user: &[cl_event],
    ) -> Chunks<'a> {
        let (mut wait, _) = st.users.unfinished(side, false, user);
        wait.extend(last_pending(st));
        Chunks { side, buffer, ranges, from, wait, last: None, rest: false, bytes: 0, profiling }
    }

    fn shape(&self, a: u64, b: u64) -> Shape {
        let (s, w) = (self.from.shape.s, self.from.shape.w);
        Shape::new((b - a) / (s as u64 * w as u64), s, w)
    }

    /// Chunk `i`'s conversion (enqueued now, unless the rest of the buffer came back in one
    /// piece already): the event its read waits for. The first one moves the state to host
    /// layout; the lock on it is held until every chunk's conversion is enqueued, so nothing
    /// sees the state before that is true.
    fn next(&mut self, i: usize, st: &mut BufferState) -> Result<cl_event, Stop> {
        if let (true, Some(rest)) = (self.rest, &self.last) {
            return Ok(rest.raw());
        }
        let (a, b) = self.ranges[i];
        let enqueued = if i > 0 && crate::fault::inject("chunk") {
            Err("injected failure of a chunk's conversion".to_string())
        } else {
            self.convert(a, self.shape(a, b))
        };
        let ev = match enqueued {
            Ok((ev, moved)) => {
                self.bytes += moved;
                ev
            }
            Err(_) if i == 0 => return Err(Stop::Untouched),
            Err(reason) => self.rest(i, st, reason)?,
        };
        if i == 0 {
            // The host sees the buffer now: the cost model's count of launches on it starts over.
            st.cost().host_access();
            st.users.clear();
            st.conversions += 1;
            st.before = Current::Device(self.from);
            st.current = Current::Host;
            st.cost().came_back();
        }
        order::noted(self.side, true, false, ev.raw(), order::free(self.side, &self.wait));
        self.wait = vec![ev.raw()];
        let raw = ev.raw();
        self.last = Some(ev);
        Ok(raw)
    }

    /// After chunk `i`'s conversion failed: the rest of the buffer back in one piece.
    fn rest(&mut self, i: usize, st: &mut BufferState, reason: String) -> Result<Event, Stop> {
        let a = self.ranges[i].0;
        let shape = self.shape(a, self.from.shape.bytes());
        match self.rest_to_host(a, shape) {
            Ok((ev, moved)) => {
                self.bytes += moved;
                self.rest = true;
                Ok(ev)
            }
            Err(why) => {
                st.pinned = Some(format!("a chunked conversion failed halfway: {reason}"));
                let what = format!("buffer {:#x}", self.buffer.handle);
                let lost = format!("{reason}; the rest of the buffer could not be brought back ({why}): its contents are lost, the read fails with CL_OUT_OF_RESOURCES");
                crate::log::error(&format!("{what}: {lost}"));
                stats::fallback(&what, &lost);
                Err(Stop::Lost)
            }
        }
    }

    /// The `shape` at byte `at` back from ASTA to AoS, after `self.wait`: its last event and
    /// the bytes it moved.
    fn convert(&self, at: u64, shape: Shape) -> Result<(Event, u64), String> {
        if crate::fault::inject("conversion") || crate::fault::inject("conversion-back") {
            return Err("injected failure of a conversion".into());
        }
        let (from, to) = (self.from.device, self.from.host);
        let done = crate::marshal::enqueue_conversion(self.side, self.buffer.mem(), at, shape, from, to, &self.wait)
            .map_err(|e| e.to_string())?;
        let moved = done.bytes_moved;
        let ev = timing::hold_on(self.side, done.events, self.profiling)
            .ok_or("the conversion's event could not be kept")?;
        Ok((ev, moved))
    }

    /// The rest of the buffer from byte `at` back to AoS in one conversion, or on the host.
    fn rest_to_host(&self, at: u64, shape: Shape) -> Result<(Event, u64), String> {
        let device =
            if crate::fault::inject("chunk") { Err("injected failure".to_string()) } else { self.convert(at, shape) };
        device.or_else(|_| {
            let step = Step { shape, from: self.from.device, to: self.from.host, to_host: true };
            host_permute_at(self.side, self.buffer, at as usize, step, &self.wait).map(|ev| (ev, 0))
        })
    }

    /// Every chunk's conversion is enqueued: later commands wait for the last one, and should it
    /// fail on the device the state goes back.
    fn finish(self, st: &mut BufferState) {
        let Some(last) = &self.last else { return };
        watch_failure(self.side, self.buffer, st.conversions, last);
        st.last_event = Event::retained_in(last.raw(), self.side);
        stats::marshal(Direction::ToHost, self.bytes, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::chunks;

    #[test]
    fn chunks_are_whole_tiles_and_cover_the_prefix() {
        // 100 tiles of 640 bytes in 8 chunks: 13 tiles each, the last one shorter.
        let c = chunks(64_000, 640, 8);
        assert_eq!(c.first(), Some(&(0, 13 * 640)));
        assert_eq!(c.last().map(|r| r.1), Some(64_000));
        assert!(c.windows(2).all(|p| p[0].1 == p[1].0));
        assert!(c.iter().all(|&(a, _)| a % 640 == 0));
        assert!(c.len() <= 8);
        // A partial tile at the end stays in the last chunk.
        let c = chunks(64_000 + 100, 640, 4);
        assert_eq!(c.last().map(|r| r.1), Some(64_100));
        assert!(c.iter().rev().skip(1).all(|&(a, b)| (b - a) % 640 == 0));
        // Fewer tiles than chunks: one tile each.
        assert_eq!(chunks(3 * 640, 640, 8).len(), 3);
        assert_eq!(chunks(100, 640, 8), vec![(0, 100)]);
        assert!(chunks(0, 640, 8).is_empty());
    }
}
