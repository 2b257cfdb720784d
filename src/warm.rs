//! Clayout's own machine code, read into the processor's caches beside the application's build, and
//! mapped into the process beside the creation of its first context (`map_code`).
//!
//! What clayout adds to a short run is its own time in the application's calls, not calls of
//! its own to the driver nor its threads (`bench/calltrace.c` on the H100, docs/results.md,
//! "Where a short run's time goes, call by call"): some thirty calls, each running clayout's
//! code for the first time in the process. The application's build, which comes before them,
//! leaves clayout's reading thread idle once the program is read; reading the library's code
//! there (one byte per cache line, 2.9 MB in 0.1-0.2 ms) puts it in the caches the application's
//! thread then reads it from, and maps its pages: clayout's time in a declined run's first
//! upload went from 42 to 20 us (median of eleven runs each).

use std::sync::atomic::{AtomicBool, Ordering};

/// The executable segment of the loaded object that holds this function: its start and length.
fn code_segment() -> Option<(usize, usize)> {
    let here = code_segment as *const () as usize;
    // SAFETY: all-zero is a valid Dl_info (null pointers), which dladdr fills in.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr reads the dynamic loader's tables for an address of ours.
    if unsafe { libc::dladdr(here as *const libc::c_void, &mut info) } == 0 || info.dli_fbase.is_null() {
        return None;
    }
    let base = info.dli_fbase as usize;
    // SAFETY: a loaded ELF object has its header mapped, readable, at its base.
    let header = unsafe { &*(base as *const libc::Elf64_Ehdr) };
    if header.e_ident[..4] != *b"\x7fELF" || header.e_phentsize as usize != std::mem::size_of::<libc::Elf64_Phdr>() {
        return None;
    }
    // SAFETY: its program headers are part of its first loaded segment, mapped with the header.
    let segments = unsafe {
        std::slice::from_raw_parts((base + header.e_phoff as usize) as *const libc::Elf64_Phdr, header.e_phnum as usize)
    };
    // The base is where the first loaded segment begins: addresses are offset from it by that
    // segment's own address, 0 for the usual shared object.
    let loads = || segments.iter().filter(|p| p.p_type == libc::PT_LOAD);
    let first = loads().map(|p| p.p_vaddr as usize).min()? & !(page_size() - 1);
    let bias = base.checked_sub(first)?;
    loads()
        .filter(|p| p.p_flags & libc::PF_X != 0)
        .map(|p| (bias + p.p_vaddr as usize, p.p_memsz as usize))
        .find(|&(start, len)| (start..start + len).contains(&here))
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 => n as usize,
        _ => 4096,
    }
}

/// How many bytes are read between two looks at `stop`.
const STRETCH: usize = 16 << 10;

/// Reads one byte of every cache line of clayout's code (`CLAYOUT_WARM`), until `stop` is set:
/// the application's build has returned, and its thread may already be running that code.
/// Returns how many bytes it went over.
pub fn code(stop: &AtomicBool) -> usize {
    if !crate::config::get().warm {
        return 0;
    }
    let Some((start, len)) = code_segment() else { return 0 };
    let began = std::time::Instant::now();
    let mut at = start;
    while at < start + len && !stop.load(Ordering::Relaxed) {
        let end = (at + STRETCH).min(start + len);
        read_every(at, end, 64);
        at = end;
    }
    let read = at - start;
    crate::log::debug_with(|| {
        format!(
            "clayout's code read into the caches beside the application's build: {} of {} KiB in {:.3} ms",
            read >> 10,
            len >> 10,
            began.elapsed().as_secs_f64() * 1e3
        )
    });
    read
}

/// Maps clayout's code into the process, on the helper's thread beside the application's first
/// context creation (`runtime::helper`). Without it the application's first call of each
/// stretch of clayout's code takes a page fault there; with no annotated program to read beside
/// a build (where `code` maps it too), a short run's calls on the H100 spent 60-83 us in
/// clayout, against 14-21 us with clayout a pure forwarder (`CLAYOUT_DISABLE=1`), and the
/// mapping took some 35 us of that away (docs/results.md, "What a layer costs a short run").
/// One byte of each page is read: the pages, not the caches, are what outlast the driver's work
/// until then. Returns how many bytes that spans.
pub fn map_code() -> usize {
    let Some((start, len)) = code_segment() else { return 0 };
    read_every(start, start + len, page_size());
    len
}

/// Reads one byte every `step` bytes from `from` to `to`, a stretch of clayout's executable
/// segment (`code_segment`).
fn read_every(from: usize, to: usize, step: usize) {
    let sum = (from..to).step_by(step).fold(0u8, |sum, at| {
        // SAFETY: inside the mapped, readable executable segment, as the callers found it.
        sum.wrapping_add(unsafe { std::ptr::read_volatile(at as *const u8) })
    });
    std::hint::black_box(sum);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_segment_found_holds_this_code() {
        let (start, len) = code_segment().expect("an executable segment");
        let here = the_segment_found_holds_this_code as *const () as usize;
        assert!((start..start + len).contains(&here));
        assert!(len >= STRETCH, "{len} bytes");
    }

    #[test]
    fn every_page_of_the_code_is_read() {
        assert_eq!(map_code(), code_segment().unwrap().1);
    }

    #[test]
    fn a_build_that_has_returned_stops_the_reading() {
        assert_eq!(code(&AtomicBool::new(true)), 0);
        let (_, len) = code_segment().unwrap();
        assert_eq!(code(&AtomicBool::new(false)), len);
    }
}
