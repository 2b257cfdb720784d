//! Clayout's record of every application kernel object: the application's facts (name,
//! arguments), its program's record, the plan its annotation asks for (worked out at its first
//! launch) and its copies in the transparent mode.

use super::plan::PlanResult;
use super::program::{self, Program};
use super::transparent::KernelCopies;
use crate::registry::{Handle, KernelInfo, Table};
use once_cell::sync::{Lazy, OnceCell};
use std::sync::Arc;

#[derive(Debug)]
pub struct Kernel {
    pub facts: Arc<KernelInfo>,
    /// The program's record, which lives on in its kernels after the application released it.
    pub program: Option<Arc<Program>>,
    plan: OnceCell<PlanResult>,
    pub copies: KernelCopies,
}

impl Kernel {
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
    KERNELS.insert(h, Kernel { facts, program, plan: OnceCell::new(), copies: KernelCopies::default() });
}

pub fn released(h: Handle) {
    KERNELS.remove(h);
}
