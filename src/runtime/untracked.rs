//! A declined run left untracked: where the first annotated program's copies are declined at its
//! build (`cost::worth`), held back until the run has forgone their load (`program::buys_copies`)
//! or has lasted as long as the application's build, its launches run as written on buffers in
//! host layout, and nothing needs ordering against a conversion until one can happen. So the
//! commands stay on the fast path (`order::fast`), as before any annotated program, until the
//! copies are bought or built, or something else needs them tracked; each of the program's
//! launches is still counted in its buffers' epochs, and each host access still ends them
//! (`cost::buffer`), so that the run teaches its length as a tracked one does.
//!
//! Why: on the H100 a declined particles run of one or two iterations spent 112-137 us of
//! clayout's own time in its calls, most of it the tracked runtime's code running for the first
//! time in the process; an experiment that tracked nothing spent 29-33 us (docs/cost-model.md).
//!
//! The handover (`hand_over`) is the one of a first annotated program created after untracked
//! commands: the fast path's enqueues in flight are let finish, a marker on every queue stands
//! for everything enqueued so far, and every buffer is taken to hold data. It comes at a
//! program's build when its copies are not declined, at the launch that buys them, that the
//! model wants timed, that finds them built or that completes an inferred stride, and at the
//! reading of any other annotated program.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Set, never cleared, once a program's run is left untracked: from then on, until commands are
/// tracked, launches and host accesses look their records up to count epochs.
static ANY: AtomicBool = AtomicBool::new(false);

/// Whether launches and host accesses count epochs outside the tracked runtime: a program's run
/// was left untracked, and commands are not tracked yet.
pub fn counting() -> bool {
    ANY.load(Ordering::Acquire) && !super::order::tracking()
}

/// Where a program stands: tracked as every annotated program was (or not annotated), its
/// verdict to come, or its run untracked.
#[derive(Debug, Default)]
pub struct Mark(AtomicU8);

const TRACKED: u8 = 0;
const PENDING: u8 = 1;
const UNTRACKED: u8 = 2;

impl Mark {
    pub fn untracked(&self) -> bool {
        self.0.load(Ordering::Acquire) == UNTRACKED
    }

    pub fn pending(&self) -> bool {
        self.0.load(Ordering::Acquire) == PENDING
    }
}

/// Whether a program read now may be left untracked until its verdict: its kernels all run as
/// written without clayout (none written for a device layout), the verdict is `auto`'s, and
/// nothing is tracked yet (once something is, every command is).
pub fn may_defer(marshals: bool) -> bool {
    let cfg = crate::config::get();
    !marshals
        && cfg.policy == crate::config::Policy::Auto
        && cfg.build_after != crate::config::BuildAfter::Wait
        && !super::order::tracking()
        && !super::suggest::active()
        && !crate::fault::inject("tracked")
}

/// A program's annotations were read and its tracking deferred (`may_defer`): its build's
/// verdict says what becomes of it (`settle`).
pub fn defer(mark: &Mark) {
    mark.0.store(PENDING, Ordering::Release);
}

/// After the verdict on the build of the program `program` marks: its run stays untracked
/// (`stays`: its copies declined) or, if it was waiting for this, commands are tracked from now
/// on.
pub fn settle(program: &Mark, stays: bool) {
    let mark = &program.0;
    if stays && !super::order::tracking() {
        if mark.compare_exchange(PENDING, UNTRACKED, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            ANY.store(true, Ordering::Release);
            crate::log::debug("the program's launches run untracked until its copies are bought");
        }
        return;
    }
    if mark.load(Ordering::Acquire) != TRACKED {
        hand_over(program, "its copies were not declined at its build");
    }
}

/// Commands are tracked from now on, those of the program `program` marks among them (`why` is
/// logged).
pub fn hand_over(program: &Mark, why: &str) {
    program.0.store(TRACKED, Ordering::Release);
    start(why);
}

/// Commands are tracked from now on: the handover of the module's comment, made once.
pub fn start(why: &str) {
    if super::order::annotated_program_created() {
        // What the untracked commands before wrote is not known: every buffer may hold data.
        super::buffers::all_defined();
        if ANY.load(Ordering::Acquire) {
            crate::log::debug_with(|| format!("commands are tracked from now on: {why}"));
        }
    }
}

/// A host access to `mems` on the fast path while epochs are counted there (`counting`): each
/// buffer's epoch ends, as on the tracked path.
pub fn host_sees(mems: impl Iterator<Item = opencl_sys::cl_mem>) {
    for m in mems {
        if let Some(b) = super::buffers::get(crate::registry::key(m)) {
            b.bytes_owner().lock().cost().host_access();
        }
    }
}
