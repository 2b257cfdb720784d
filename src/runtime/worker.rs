//! Clayout's own thread, where it builds what it needs (rewritten programs, probes, conversion
//! kernels) off the application's calls: a build can take seconds on a cold driver, and the
//! application's first launches run as written meanwhile, or wait where they cannot.

use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// The end of one job, shared by whoever waits for it.
#[derive(Debug, Default)]
struct Done {
    done: Mutex<bool>,
    cv: Condvar,
}

/// A job submitted to the worker.
#[derive(Clone, Debug)]
pub struct Ticket(Arc<Done>);

impl Ticket {
    pub fn is_done(&self) -> bool {
        *self.0.done.lock()
    }

    /// Blocks until the job has run (or was dropped because the worker could not start).
    pub fn wait(&self) {
        let mut d = self.0.done.lock();
        while !*d {
            self.0.cv.wait(&mut d);
        }
    }

    /// A ticket whose job has already run.
    pub fn done() -> Ticket {
        Ticket(Arc::new(Done { done: Mutex::new(true), cv: Condvar::new() }))
    }

    fn finish(&self) {
        *self.0.done.lock() = true;
        self.0.cv.notify_all();
    }
}

type Job = Box<dyn FnOnce() + Send>;

struct Worker {
    jobs: Mutex<VecDeque<(Job, Ticket)>>,
    wake: mpsc::SyncSender<()>,
}

fn worker() -> Option<&'static Worker> {
    static W: once_cell::sync::OnceCell<Option<Worker>> = once_cell::sync::OnceCell::new();
    W.get_or_init(|| {
        let (tx, rx) = mpsc::sync_channel::<()>(1024);
        let spawned = std::thread::Builder::new().name("clayout-worker".into()).spawn(move || {
            while rx.recv().is_ok() {
                loop {
                    let next = worker().and_then(|w| w.jobs.lock().pop_front());
                    let Some((job, ticket)) = next else { break };
                    crate::guard("background build", job);
                    ticket.finish();
                }
            }
        });
        match spawned {
            Ok(_) => Some(Worker { jobs: Mutex::new(VecDeque::new()), wake: tx }),
            Err(e) => {
                crate::log::warn(&format!(
                    "clayout's build thread could not start ({e}); its builds run in the calls that need them"
                ));
                None
            }
        }
    })
    .as_ref()
}

/// Runs `job` on the worker, in submission order. Without a worker (the thread could not be
/// started) it runs now, in the caller.
pub fn submit(job: impl FnOnce() + Send + 'static) -> Ticket {
    let ticket = Ticket(Arc::new(Done::default()));
    match worker() {
        Some(w) => {
            w.jobs.lock().push_back((Box::new(job), ticket.clone()));
            let _ = w.wake.try_send(());
        }
        None => {
            crate::guard("build", job);
            ticket.finish();
        }
    }
    ticket
}

/// Waits for `ticket` at most `limit`; whether it is done.
pub fn wait_for(ticket: &Ticket, limit: Duration) -> bool {
    let mut d = ticket.0.done.lock();
    if !*d {
        ticket.0.cv.wait_for(&mut d, limit);
    }
    *d
}

/// Waits, at most `limit`, until every job submitted so far has run (an application's context
/// is going: what clayout builds for it must be done before its references are counted).
pub fn drain(limit: Duration) {
    let last = submit(|| ());
    wait_for(&last, limit);
}
