//! How one launch of a rewritten kernel that the cost model asked to time is timed, around its
//! enqueue and with no lock held (`cost::measure`): on a queue that profiles, by its own event,
//! read later; where the application drained the queue for it and waits next, by that wait;
//! otherwise with markers, the one before enqueued with the launch itself.

use super::super::cost::{measure, SizeClass, Variant};
use super::super::dims::Enqueue;
use super::rewrite::RewrittenKernel;
use crate::config::LogLevel;
use opencl_sys::*;
use std::cell::Cell;
use std::sync::Arc;
use std::time::Instant;

/// What a launch decided to be timed needs for its timing.
pub struct Timed {
    queue: cl_command_queue,
    by_event: bool,
    app_wait: bool,
    by_markers: bool,
    timer: Cell<Option<measure::Timer>>,
    /// clayout's own event for a launch timed by its event that the application asked none of.
    own: OwnEvent,
    /// The launch's event, once it is enqueued.
    launched: Cell<cl_event>,
    /// When the launch's enqueue began (its arguments and the enqueue itself; for a launch that
    /// converts its buffers first, the enqueue alone), and when the launch itself was enqueued.
    enqueuing: Cell<Option<Instant>>,
    converts: bool,
    enqueued: Cell<Option<Instant>>,
    /// When the launch's form began to be enqueued: after the model's decision (the same for
    /// every form), before its buffers' conversions, its arguments and its enqueue. The clock is
    /// read only for a launch that is timed: three reads a launch were some 100 ns of the 2 us
    /// clayout adds to each on the H100.
    host_start: Option<Instant>,
}

impl Timed {
    /// The timing of a launch on `queue` that waits for `user`, when `measure` asks for it;
    /// `more_coming`: the kernel's history says more launches follow before the host sees its
    /// buffers, so the application's next wait would not be this launch's; `converts`: the
    /// launch converts buffers first, which that wait would hold too (with markers, the one
    /// before goes in after the conversions, and the launch alone is timed); `host_start`: when
    /// the form's enqueue began (`Timed::host_start`), read where `measure`.
    pub fn new(
        queue: cl_command_queue,
        measure: bool,
        more_coming: bool,
        converts: bool,
        user: &[cl_event],
        host_start: Option<Instant>,
    ) -> Timed {
        // On a queue that profiles, the launch's own event says its time later: nothing waits.
        let by_event = measure && measure::profiles(queue);
        // Or by the application's own clFinish, when it drained the queue for this launch and
        // no other launch is expected before it waits again (the next would take the time).
        let app_wait = measure && !by_event && !more_coming && !converts && user.is_empty() && measure::app_wait(queue);
        // Otherwise markers, and only when nothing in the queue waits for the application (a
        // user event it sets later would stall the wait).
        let by_markers = measure && !by_event && !app_wait && super::super::order::free(queue, user);
        Timed {
            queue,
            by_event,
            app_wait,
            by_markers,
            timer: Cell::new(None),
            own: OwnEvent(std::ptr::null_mut()),
            launched: Cell::new(std::ptr::null_mut()),
            enqueuing: Cell::new(host_start),
            converts,
            enqueued: Cell::new(None),
            host_start,
        }
    }

    /// The timing of a launch on `queue` that waits for `user`, with markers only, when `on`.
    pub fn markers(queue: cl_command_queue, on: bool, user: &[cl_event]) -> Timed {
        let mut t = Timed::new(queue, false, false, false, user, None);
        t.by_markers = on && super::super::order::free(queue, user);
        if t.by_markers {
            t.enqueuing.set(Some(Instant::now()));
        }
        t
    }

    /// The time of a launch timed with markers, once it completed (None when it did not run,
    /// `ok` false, or could not be timed): its device time and the host time of its enqueue,
    /// which the device waited for when the launch came after the queue had drained. So a
    /// form with more to enqueue is the slower where launches take a few microseconds, as it
    /// was when the timing drained the queue before the enqueue (the host time of the whole
    /// launch, model and timing included, made every form of particles at 262,144 on the H100
    /// look bound by the host, and the kernels as written the fastest).
    pub fn stop(&self, ok: bool) -> Option<f64> {
        let t = self.timer.take()?;
        let enqueue_ns = match (self.enqueued.get(), self.enqueuing.get()) {
            (Some(at), Some(from)) => at.duration_since(from).as_nanos() as f64,
            _ => 0.0,
        };
        let device = if ok { measure::stop(self.queue, t) } else { None };
        device.map(|d| d + enqueue_ns)
    }

    /// The event the launch is enqueued with: the application's, or one of clayout's when the
    /// launch is timed by its event and the application asked none (otherwise a free launch
    /// gets none: `order::Stretch`).
    pub fn event(&mut self, event: *mut cl_event) -> *mut cl_event {
        if (self.by_event || self.app_wait) && event.is_null() {
            &mut self.own.0 as *mut cl_event
        } else {
            event
        }
    }

    /// `enqueue`, timed: with markers, the one before is enqueued right before the launch,
    /// after whatever the launch needed enqueued first (its conversions); by its event, the
    /// event is kept.
    pub fn wrap<'a>(&'a self, enqueue: impl Enqueue + 'a) -> impl Enqueue + 'a {
        move |k, local, n, l, ev: *mut cl_event| {
            let timed = self.by_event || self.app_wait || self.by_markers;
            if self.converts && timed {
                // The conversions' enqueue is not the launch's: it is counted from here.
                self.enqueuing.set(Some(Instant::now()));
            }
            if self.by_markers {
                // SAFETY: `l` holds `n` events, as the launch's own enqueue requires.
                let wait = unsafe { super::super::order::user_wait(n, l) }.unwrap_or_default();
                // The conversions enqueued for the launch since `new` may wait for a command of
                // another queue that waits for the application: then the markers would too, and
                // the launch is not timed.
                if super::super::order::free(self.queue, wait) {
                    self.timer.set(measure::start(self.queue, wait));
                }
            }
            let r = enqueue(k, local, n, l, ev);
            if timed {
                self.enqueued.set(Some(Instant::now()));
            }
            if (self.by_event || self.app_wait) && r == CL_SUCCESS && !ev.is_null() {
                // SAFETY: the enqueue succeeded, so it wrote the launch's event there.
                self.launched.set(unsafe { *ev });
            }
            r
        }
    }

    /// Records the launch's time in `kernel`'s model, once it is known, when the launch ran
    /// (`ran`, in the form asked for: `ok`) and could be timed.
    #[allow(clippy::too_many_arguments)]
    pub fn finish(self, ok: bool, kernel: &Arc<RewrittenKernel>, name: &str, class: SizeClass, ran: Variant, m: f64) {
        if self.by_markers {
            let ns = self.stop(ok);
            crate::guard("cost model", || kernel.model.lock().record(name, class, ran, ns, m));
            return;
        }
        let launched = self.launched.get();
        if !(self.by_event || self.app_wait) || !ok || launched.is_null() {
            return;
        }
        let (k, owned) = (kernel.clone(), name.to_string());
        // A launch timed by the application's wait costs the longer of its time to that wait
        // and the host time of its enqueue, counted from the form's start to its enqueue's
        // end: the model's decision before it is every form's.
        // One timed by its event costs its device time alone. Its enqueue's host time is not
        // what an untimed launch of the form costs: it asked for an event (some 7 us more on NVIDIA
        // on a queue that profiles), and a form's first launches in a process run on a cold
        // CPU. Counted, it made every form of particles' kernels at 262,144 on the H100 cost
        // 15-20 us (their device times: 5-17 us, bench/launchtrace.c), so that ASTA measured
        // "no faster" on a tie, sent the buffers back and kept them there in later runs, where
        // 1000 launches in ASTA ran 28 % faster (scripts/policy-stress.sh). What the host adds
        // to a form at steady state is a fraction of a microsecond (docs/results.md, paired
        // launches); a program bound by the host is told by its waits (`hidden`).
        let host_ns = match (self.by_event, self.enqueued.get(), self.host_start) {
            (false, Some(at), Some(from)) => at.duration_since(from).as_nanos() as f64,
            _ => 0.0,
        };
        let record = recorder(k, owned, class, ran, m, host_ns);
        // Counted before it is kept, since another thread's harvest may record it at once.
        crate::guard("cost model", || kernel.model.lock().in_flight += 1);
        let kept = if self.by_event {
            measure::by_event(self.queue, launched, record)
        } else {
            let k = kernel.clone();
            let missed = Box::new(move || crate::guard("cost model", || k.model.lock().wait_missed()).unwrap_or(()));
            let enqueuing = self.enqueuing.get().unwrap_or_else(Instant::now);
            measure::after_app_wait(self.queue, launched, enqueuing, record, missed)
        };
        if !kept {
            crate::guard("cost model", || dropped(kernel));
        } else if self.app_wait && crate::log::enabled(LogLevel::Debug) {
            let what = format!("kernel {name}: a launch timed by the application's own clFinish");
            crate::log::once(LogLevel::Debug, &what, &what);
        }
    }
}

/// What records a launch's device time (ns, or None where it could not be had) in `kernel`'s
/// model, as a timing of form `ran` of kernel `name` at `class` with `m` structures: never less
/// than `host_ns`, the host time it cost where that counts (`Timed::finish`).
fn recorder(
    kernel: Arc<RewrittenKernel>,
    name: String,
    class: SizeClass,
    ran: Variant,
    m: f64,
    host_ns: f64,
) -> measure::Record {
    Box::new(move |ns| {
        let ns = ns.map(|device| device.max(host_ns));
        crate::guard("cost model", || {
            let mut model = kernel.model.lock();
            model.in_flight = model.in_flight.saturating_sub(1);
            model.record(&name, class, ran, ns, m);
        });
    })
}

/// Times a launch as written of `kernel`'s copies (`name`: the application's kernel) at `class`,
/// `m` structures, by its event `event`, held (on a queue that profiles), with the timing
/// already counted in flight in the model: for a launch the untracked run's journal took
/// (`launch::journal_timed`).
pub fn by_kept_event(event: crate::cl::Event, (kernel, name): (&Arc<RewrittenKernel>, &str), class: SizeClass, m: f64) {
    let record = recorder(kernel.clone(), name.to_string(), class, Variant::Written, m, 0.0);
    if !measure::by_held_event(event, record) {
        dropped(kernel);
    }
}

/// A timing counted in flight in `kernel`'s model that will not be had.
pub fn dropped(kernel: &RewrittenKernel) {
    let mut model = kernel.model.lock();
    model.in_flight = model.in_flight.saturating_sub(1);
}

/// Releases clayout's own event of a timed launch, once whatever times it holds its reference.
struct OwnEvent(cl_event);

impl Drop for OwnEvent {
    fn drop(&mut self) {
        drop(crate::cl::Event::from_raw(self.0));
    }
}
