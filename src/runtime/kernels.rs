//! Clayout's record of every application kernel object: the application's facts (name,
//! arguments), its program's record, the plan its annotation asks for (worked out at its first
//! launch) and its copies in the transparent mode.

use super::plan::PlanResult;
use super::program::{self, Program};
use super::transparent::KernelCopies;
use crate::registry::{Handle, KernelInfo, Table};
use once_cell::sync::{Lazy, OnceCell};
use std::sync::Arc;

pub use super::program::Building;

#[derive(Debug)]
pub struct Kernel {
    pub handle: Handle,
    pub facts: Arc<KernelInfo>,
    /// The program's record, which lives on in its kernels after the application released it.
    pub program: Option<Arc<Program>>,
    plan: OnceCell<PlanResult>,
    /// The plan its launches as written are timed under while its copies are built
    /// (`program::building_plan`), worked out once.
    building: OnceCell<Option<Building>>,
    pub copies: KernelCopies,
    /// The kernel's argument count, asked once.
    num_args: OnceCell<u32>,
    /// What its next launches repeat while its program's run is left untracked, the latest
    /// first: two, where its launches alternate between two bindings (a loop that swaps two
    /// buffers).
    pub untracked: parking_lot::Mutex<smallvec::SmallVec<[Arc<UntrackedTicket>; 2]>>,
}

/// A launch of a run left untracked (`runtime::untracked`) that the next launches of its kernel
/// object repeat (`launch::untracked_launch`) while the copies stay held back, the launch's
/// work-items are of its size bucket and the same buffers are bound at the rewritten
/// parameters: they count the same epochs without looking the program's copies up again.
#[derive(Debug)]
pub struct UntrackedTicket {
    pub rewritten: Arc<super::transparent::rewrite::RewrittenKernel>,
    /// The copies' times key and the launch's size bucket, as `cost::lengths` counts them.
    pub key: Arc<str>,
    pub items: u8,
    /// The rewritten parameters' argument indices, in order, and the handles bound there.
    pub indices: super::access::Few<usize>,
    pub bound: super::access::Few<Handle>,
    /// The buffers counted, each once, with their converted argument.
    pub converted: super::access::Few<(Handle, u32)>,
    /// The application's buffer creations and releases by then (`registry::mems_changed`):
    /// after another, the same handle may name another buffer, of another size class.
    pub mems: u64,
    /// The copies' build, held back: the ticket holds until it ends.
    pub build: super::worker::Ticket,
}

impl Kernel {
    /// Whether the application has set every argument of the kernel.
    pub fn all_args_set(&self) -> bool {
        let n = *self.num_args.get_or_init(|| crate::cl::info::kernel_num_args(self.handle as opencl_sys::cl_kernel));
        let args = self.facts.args.lock();
        (0..n as usize).all(|i| args.get(i).is_some_and(Option::is_some))
    }

    /// The plan its launches as written are timed under while its copies are built, with the
    /// rewritten kernel whose model they teach.
    pub fn building_plan(&self) -> Option<&Building> {
        self.building.get_or_init(|| program::building_plan(&self.facts, self.program.as_ref()?)).as_ref()
    }

    /// Whether its plan was worked out (its copies were ready, or it needs none).
    pub fn has_plan(&self) -> bool {
        self.plan.get().is_some()
    }

    /// What the kernel's annotation asks at each launch, worked out once. None while what it
    /// needs is being prepared and `wait` is false.
    pub fn plan(&self, wait: bool) -> Option<PlanResult> {
        if let Some(p) = self.plan.get() {
            return Some(p.clone());
        }
        let p = program::make_plan(&self.facts, self.program.as_ref(), wait)?;
        Some(self.plan.get_or_init(|| p).clone())
    }
}

static KERNELS: Lazy<Table<Kernel>> = Lazy::new(Table::default);

pub fn get(h: Handle) -> Option<Arc<Kernel>> {
    KERNELS.get(h)
}

/// A kernel object the application created (or cloned) from `program`.
pub fn created(h: Handle, facts: Arc<KernelInfo>) {
    let program = program::get(facts.program);
    // Made here when nothing needs waiting for, so that the application's first launch, whose
    // every microsecond shows in a short run, does not make it.
    let plan = OnceCell::new();
    if let Some(p) = crate::guard("kernel plan", || program::early_plan(&facts, program.as_ref())).flatten() {
        let _ = plan.set(p);
    }
    // A handle the driver reuses: the old record goes as on its release (`released`).
    let old = KERNELS.remove(h);
    super::world::kernel_records_changed();
    if old.is_some() {
        super::world::changed();
    }
    drop(old);
    KERNELS.insert(
        h,
        Kernel {
            handle: h,
            facts,
            program,
            plan,
            building: OnceCell::new(),
            copies: KernelCopies::default(),
            num_args: OnceCell::new(),
            untracked: Default::default(),
        },
    );
}

/// The application set argument `index` of kernel `h`: an inferred annotation waiting for a
/// stride may be completed now (`program::stride_set`).
pub fn arg_set(h: Handle, index: u32) {
    if !crate::config::get().infers() {
        return;
    }
    let Some(k) = get(h) else { return };
    if let Some(p) = &k.program {
        program::stride_set(p, &k.facts, index);
    }
}

pub fn released(h: Handle) {
    let gone = KERNELS.remove(h);
    // Before the record (and its copies' kernel objects) can go: no lane enqueues them after.
    super::world::kernel_records_changed();
    super::world::changed();
    drop(gone);
}

/// Whether the application still holds a kernel of a program of `context`.
pub fn any_in(context: Handle) -> bool {
    KERNELS.snapshot().iter().any(|(_, k)| k.program.as_ref().is_some_and(|p| p.facts.context == context))
}
