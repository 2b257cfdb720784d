//! Clayout's record of every application kernel object: the application's facts (name,
//! arguments), its program's record, the plan its annotation asks for (worked out at its first
//! launch) and its copies in the transparent mode.

use super::plan::PlanResult;
use super::program::{self, Program};
use super::transparent::KernelCopies;
use crate::registry::{Handle, KernelInfo, Table};
use once_cell::sync::{Lazy, OnceCell};
use std::sync::Arc;

/// A rewritten kernel and the plan of its launches while its copies are built.
pub type Building = (Arc<super::transparent::rewrite::RewrittenKernel>, Arc<super::plan::KernelPlan>);

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
        self.building
            .get_or_init(|| program::building_plan(&self.facts, self.program.as_ref()?).map(|(k, p)| (k, Arc::new(p))))
            .as_ref()
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

/// Runs `f` on the kernel's record without taking a reference to it (a launch that repeats the
/// last, where the reference's two atomic updates show): the table's shard stays locked for
/// reading meanwhile, so `f` must not create or release a kernel.
pub fn with<R>(h: Handle, f: impl FnOnce(&Kernel) -> R) -> Option<R> {
    KERNELS.with(h, f)
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
