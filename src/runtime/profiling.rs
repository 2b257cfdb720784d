//! Whether the application's queues profile: learnt from the program's earlier runs.
//!
//! The cost model times a launch best from its event's profiling information: the device's own
//! start and end, read later, with nothing waited for. Without it a launch is timed with markers
//! waited for by the host, and for a kernel of a few microseconds that time is mostly the
//! markers' latency: particles at 262,144 on the H100 (kernels of 6-9 us) measured its ASTA
//! copies 15 % slower than the kernels as written, one launch each, where 1000 launches in ASTA
//! ran 30 % faster, so `auto` kept the kernels as written (docs/cost-model.md, "Short launches
//! timed from their events").
//!
//! A queue that profiles costs nothing more for a launch that asks for no event; one that asks
//! for an event costs some 6 us more on NVIDIA (docs/cost-model.md). So clayout turns profiling
//! on, hidden from the application's queries, on a GPU's or accelerator's queues where the
//! program's earlier runs asked for events (of launches, or of other commands, which may cost
//! more too) no more than once per hundred launches, and never again once a run asked for
//! more. `CLAYOUT_PROFILE=1` turns it on everywhere, `0` nowhere.

use crate::cl::FnId;
use crate::config::Switch;
use once_cell::sync::Lazy;
use opencl_sys::*;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// At most this many events asked per launch, in a run, for its queues to profile.
const EVENTS_PER_LAUNCH: f64 = 0.01;

/// The application's commands that asked for an event, in this run (set against its launches).
static WITH_EVENT: AtomicU64 = AtomicU64::new(0);
/// A queue was created where the history decides (`CLAYOUT_PROFILE=auto`, a GPU): only such a
/// program's runs are recorded, and others leave nothing in the cache.
static CONSULTED: AtomicBool = AtomicBool::new(false);

/// What the program's earlier runs asked of their commands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// Runs recorded, their launches, and the events their commands asked for.
    pub runs: u64,
    pub launches: u64,
    pub with_event: u64,
    /// Some run asked for more than `EVENTS_PER_LAUNCH` events per launch.
    pub eventful: bool,
}

impl History {
    /// Whether its queues may profile: runs recorded, every one asking for few events.
    pub fn profiles(&self) -> bool {
        self.launches > 0 && !self.eventful
    }

    /// The history with a run of `launches` whose commands asked for `with_event` events.
    pub fn with_run(self, launches: u64, with_event: u64) -> History {
        History {
            runs: self.runs + 1,
            launches: self.launches + launches,
            with_event: self.with_event + with_event,
            eventful: self.eventful || with_event as f64 > EVENTS_PER_LAUNCH * launches as f64,
        }
    }
}

/// The program, as its executable's path: the record's key.
fn program() -> Option<String> {
    std::env::current_exe().ok().map(|p| p.to_string_lossy().into_owned())
}

/// The earlier runs' history, read once.
static HISTORY: Lazy<History> =
    Lazy::new(|| program().and_then(|p| crate::cache::disk::get_json::<History>("events", &p)).unwrap_or_default());

/// Whether a queue created now on `device` is to profile where the application did not ask it to.
pub fn wanted(device: cl_device_id) -> bool {
    match crate::config::get().profile {
        Switch::On => true,
        Switch::Off => false,
        // The fault-injection build's `profile-any-device` lets a test on a CPU device see it.
        Switch::Auto => {
            let eligible = gpu_like(device) || crate::fault::inject("profile-any-device");
            if eligible {
                CONSULTED.store(true, Relaxed);
            }
            eligible && HISTORY.profiles()
        }
    }
}

fn gpu_like(device: cl_device_id) -> bool {
    let ty: cl_device_type = crate::cl::info::device_scalar(device, CL_DEVICE_TYPE);
    ty & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR) != 0
}

/// A launch of the application asked for an event.
pub fn event_asked() {
    WITH_EVENT.fetch_add(1, Relaxed);
}

/// Another command of the application, with `event` its event pointer: one that asks for an
/// event may cost more on a queue that profiles too, so it counts as a launch that asks.
pub fn note_event(event: *mut opencl_sys::cl_event) {
    if !event.is_null() {
        event_asked();
    }
}

/// This run's launches added to the program's history (at exit).
pub fn write_at_exit() {
    let launches =
        crate::stats::calls(FnId::clEnqueueNDRangeKernel as usize) + crate::stats::calls(FnId::clEnqueueTask as usize);
    if launches == 0 || !CONSULTED.load(Relaxed) {
        return;
    }
    if let Some(p) = program() {
        crate::cache::disk::put_json("events", &p, &HISTORY.with_run(launches, WITH_EVENT.load(Relaxed)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_profile_after_runs_that_asked_for_few_events() {
        let none = History::default();
        assert!(!none.profiles(), "nothing known: as the application asked");
        let quiet = none.with_run(1000, 10);
        assert!(quiet.profiles(), "{quiet:?}");
        assert_eq!((quiet.runs, quiet.launches, quiet.with_event), (1, 1000, 10));
        let loud = quiet.with_run(1000, 11);
        assert!(!loud.profiles(), "a run with more than one event in a hundred launches: {loud:?}");
        assert!(!loud.with_run(1_000_000, 0).profiles(), "never again");
        assert!(!none.with_run(1, 1).profiles());
    }
}
