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
//!
//! The journal: the first of those launches, and the host accesses among them, are not counted
//! in the application's call but noted in a journal that is replayed later (`drain_journal`):
//! when a launch it does not take comes, before commands become tracked, when the application
//! releases a buffer, kernel, program or context, and at exit. A launch it takes runs as
//! written on the fast path, as an untracked one does, and what the replay counts is what the
//! launch would have counted: its buffers' epochs (with the arguments it was launched with) and
//! what it forgoes. What needs the launch itself is left to the launches it does not take
//! (`Program::journal_takes`): it takes at most [`JOURNAL_LAUNCHES`] in the process, and of a
//! program's only those that together forgo less than what the copies' load costs, so that
//! the launch that buys them is counted in its call; the repeats' tickets and lanes start after
//! it. Where the model would time a kernel as written (its time unsettled at the launch's
//! size), it takes the launch only on a queue that profiles, and times it by its event
//! (`launch::journal_timing`): what the timing is of is worked out when it is counted.
//!
//! Why: on the H200 a declined particles run of two iterations spent 15-20 us of clayout's own
//! time in its first launch and 3.5-8 us in each other kernel's first, nearly all of it code met
//! for the first time in the process (a repeat took 0.6-1.5), and 3.5-7 us in its last read,
//! most of it ending its buffers' epochs: in a run of one millisecond, more than the 2 % issue
//! 17 allows (docs/results.md, "The journal of a declined run": 59 us of clayout's own time in
//! the run's calls before, 30 with the journal). A run of a few launches now pays for them
//! where it releases its objects or exits, and a long run at its 33rd launch.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};

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
        // Counted before the tracked commands are (no untracked one is in flight any more).
        drain_journal();
        if ANY.load(Ordering::Acquire) {
            crate::log::debug_with(|| format!("commands are tracked from now on: {why}"));
        }
    }
}

/// A host access to `mems` on the fast path while epochs are counted there (`counting`): each
/// buffer's epoch ends, as on the tracked path, in the journal while it is open.
pub fn host_sees(mems: impl Iterator<Item = opencl_sys::cl_mem>) {
    let keys: smallvec::SmallVec<[crate::registry::Handle; 2]> = mems.map(crate::registry::key).collect();
    let Err(refused) = note(Noted::Host(keys)) else { return };
    drain_journal();
    refused.replay();
}

/// Ends the epochs of the buffers of handles `keys`.
fn epochs_end(keys: &[crate::registry::Handle]) {
    for &h in keys {
        if let Some(b) = super::buffers::get(h) {
            b.bytes_owner().lock().cost().host_access();
        }
    }
}

/// The most launches the journal takes (the module's comment): particles' three kernels over
/// eight iterations, the stress sequence's short runs.
pub const JOURNAL_LAUNCHES: u32 = 32;

/// The most host accesses it takes besides, so that a loop of reads between few launches does
/// not grow it without end.
const JOURNAL_HOST: u32 = 96;

/// One entry of the journal: a launch's count, made by the launch path (`launch::journaled`),
/// or a host access's end of its buffers' epochs.
pub enum Noted {
    Launch(Box<dyn FnOnce() + Send>),
    Host(smallvec::SmallVec<[crate::registry::Handle; 2]>),
}

impl Noted {
    /// What the call noted it for would have done: done now.
    pub fn replay(self) {
        match self {
            Noted::Launch(count) => count(),
            Noted::Host(keys) => epochs_end(&keys),
        }
    }
}

static JOURNAL: parking_lot::Mutex<Vec<Noted>> = parking_lot::const_mutex(Vec::new());

/// The entries the journal holds now, and the launches and host accesses it ever took: it
/// takes none once those reach their bounds, for the rest of the process.
static NOTED: AtomicU32 = AtomicU32::new(0);
static LAUNCHES: AtomicU32 = AtomicU32::new(0);
static HOST: AtomicU32 = AtomicU32::new(0);

/// Held while a drain replays, so that a drain that finds the journal empty (a launch to be
/// counted in its call, the exit) does not go on before what another drain took is counted.
static REPLAY: parking_lot::Mutex<()> = parking_lot::const_mutex(());

/// Whether the journal may take a launch now (it may still refuse it, `note`); where it may
/// not, the caller drains it before counting the launch in its call.
pub fn journal_open() -> bool {
    LAUNCHES.load(Ordering::Acquire) < JOURNAL_LAUNCHES && !crate::fault::inject("no-journal")
}

/// Notes `what` in the journal; handed back where the journal takes no more of its kind, for
/// the caller to drain the journal and then replay it.
pub fn note(what: Noted) -> Result<(), Noted> {
    if crate::fault::inject("no-journal") {
        return Err(what);
    }
    let (count, bound) = match what {
        Noted::Launch(_) => (&LAUNCHES, JOURNAL_LAUNCHES),
        Noted::Host(_) => (&HOST, JOURNAL_HOST),
    };
    let mut j = JOURNAL.lock();
    if count.load(Ordering::Acquire) >= bound {
        return Err(what);
    }
    count.fetch_add(1, Ordering::AcqRel);
    j.push(what);
    NOTED.store(j.len() as u32, Ordering::Release);
    Ok(())
}

/// Counts what the journal holds, in order, on the calling thread.
pub fn drain_journal() {
    if NOTED.load(Ordering::Acquire) == 0 && !REPLAY.is_locked() {
        return;
    }
    let _replaying = REPLAY.lock();
    let noted = {
        let mut j = JOURNAL.lock();
        NOTED.store(0, Ordering::Release);
        std::mem::take(&mut *j)
    };
    if !noted.is_empty() {
        crate::log::debug_with(|| format!("the untracked run's journal counted: {} entries", noted.len()));
    }
    for n in noted {
        crate::guard("journal", || n.replay());
    }
}
