//! The copies of one application kernel object: the rewritten copy's and the staged copy's own
//! kernel objects (created at their first launch), given the application's arguments plus their
//! extra ones, and enqueued on buffers brought to the layout they address.

use super::super::access::{self, BufferNeed};
use super::super::dims::Enqueue;
use super::private::TransparentPlan;
pub use super::repeat::Which;
use crate::cl::{cmd, Kernel};
use crate::registry::{ArgValue, KernelInfo};
use crate::rewrite::{ExtraArg, ExtraKind};
use once_cell::sync::OnceCell;
use opencl_sys::*;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The copy of one application kernel object, with the arguments last given to it.
#[derive(Debug)]
pub struct PrivateKernel {
    kernel: Kernel,
    /// The program the kernel comes from stays while the kernel does.
    _program: Arc<super::private::PrivateProgram>,
    args: Mutex<SetArgs>,
    /// The ticket that last gave the copy its arguments again (`give_again`; 0: a full launch
    /// gave them since): its next repeats need not compare them.
    given_by: AtomicU64,
}

/// The arguments a copy was last given.
#[derive(Debug, Default)]
struct SetArgs {
    values: Vec<Option<ArgValue>>,
    /// The application's arguments they were taken from. The registry replaces its arguments
    /// rather than change them while this is held (`Arc::make_mut`): the same ones again were
    /// given already, and only the copy's extra arguments are compared.
    from: Option<crate::registry::Args>,
}

/// The copies of one application kernel object, each made at its first launch.
#[derive(Debug, Default)]
pub struct KernelCopies {
    /// The ASTA copy.
    pub rewritten: OnceCell<Result<PrivateKernel, String>>,
    /// The ASTA copy from the build for whole tiles only (`PrivateProgram::full_tiles`).
    pub rewritten_full: OnceCell<Result<PrivateKernel, String>>,
    /// The staged copy (local-memory staging, no conversion).
    pub staged: OnceCell<Result<PrivateKernel, String>>,
    /// Its launches' decisions (`stats::decision`), found at the first.
    decisions: OnceCell<crate::stats::KernelStats>,
    /// What its next launch must match to repeat the last one (`repeat`).
    pub repeat: super::repeat::Slot,
}

impl PrivateKernel {
    pub fn raw(&self) -> cl_kernel {
        self.kernel.raw()
    }

    /// The arguments the copy has now (its last launch's).
    pub fn args_now(&self) -> Vec<Option<ArgValue>> {
        self.args.lock().values.clone()
    }

    /// Gives the copy `values` again, those of ticket `token`'s launch, where another launch gave
    /// it others since (a launch that repeats one of two that trade buffers): only those that
    /// differ are set, and nothing is compared where that ticket gave them last.
    pub fn give_again(&self, values: &[Option<ArgValue>], token: u64) -> Result<(), String> {
        if self.given_by.load(Ordering::Relaxed) == token {
            return Ok(());
        }
        let mut set = self.args.lock();
        if set.values.len() != values.len() {
            set.values.resize(values.len(), None);
        }
        for (i, v) in values.iter().enumerate() {
            if set.values[i] == *v {
                continue;
            }
            let Some(v) = v else { return Err(format!("argument {i} of the copy is not set")) };
            // The application's arguments no longer say what the copy has: the next full
            // launch compares every one.
            set.from = None;
            if let Err(e) = cmd::set_arg(self.kernel.raw(), i as u32, arg_of(v)) {
                set.values.clear();
                return Err(format!("argument {i} of the copy was refused ({e})"));
            }
            set.values[i] = Some(v.clone());
        }
        self.given_by.store(token, Ordering::Relaxed);
        Ok(())
    }
}

impl KernelCopies {
    /// Copy `which`, once made.
    pub fn private(&self, which: Which) -> Option<&PrivateKernel> {
        let cell = match which {
            Which::Staged => &self.staged,
            Which::Asta => &self.rewritten,
            Which::AstaFull => &self.rewritten_full,
        };
        cell.get()?.as_ref().ok()
    }

    /// The decisions of the kernel object's launches, kernel `name`'s.
    pub fn decisions(&self, name: &str) -> &crate::stats::KernelStats {
        self.decisions.get_or_init(|| crate::stats::kernel_stats(name))
    }
}

fn create(info: &KernelInfo, plan: &TransparentPlan, private_name: &str, full: bool) -> Result<PrivateKernel, String> {
    if crate::fault::inject("kernel") {
        return Err("injected failure of the rewritten kernel's creation".into());
    }
    let program = match (&plan.program.full_tiles, full) {
        (Some(p), true) => p,
        _ => &plan.program.program,
    };
    let kernel = cmd::create_kernel(program.raw(), private_name)
        .map_err(|e| format!("the rewritten copy of {} could not be created ({e})", info.name))?;
    Ok(PrivateKernel {
        kernel,
        _program: plan.program.clone(),
        args: Mutex::new(SetArgs::default()),
        given_by: AtomicU64::new(0),
    })
}

/// The kernel object of a copy (created at its first launch, in `cell`; from the whole-tiles
/// build when `full`) and the application's arguments, every one of them set.
pub fn with_args<'a>(
    cell: &'a OnceCell<Result<PrivateKernel, String>>,
    info: &KernelInfo,
    plan: &TransparentPlan,
    name: &str,
    full: bool,
) -> Result<(&'a PrivateKernel, crate::registry::Args), String> {
    let private = cell.get_or_init(|| create(info, plan, name, full)).as_ref().map_err(|e| e.clone())?;
    let args = info.args.lock().clone();
    if args.iter().any(Option::is_none) {
        return Err("not every argument is set".into());
    }
    Ok((private, args))
}

/// What a copy takes besides the application's arguments: its extra arguments, the structure
/// count to pass for each rewritten parameter given the buffer bound to it, and for the staged
/// copy the order of each parameter's slices (`ExtraKind::AstaIn`, `AstaOut`: the structures
/// below which they are loaded and stored in ASTA order; a parameter not listed is staged in
/// AoS both ways).
pub struct Extra<'a, F: Fn(&str, usize) -> Option<u64>> {
    pub args: &'a [ExtraArg],
    pub m_of: F,
    pub orders: &'a [(String, (u64, u64))],
}

/// Brings the buffers to `needs` (their device layouts taken as `devices` says), gives copy
/// `private` the application's arguments and its extra ones, and enqueues it with work-group
/// size `local` (None: the application's). `what` names the copy in the reasons.
#[allow(clippy::too_many_arguments)]
pub fn enqueue<F: Fn(&str, usize) -> Option<u64>>(
    queue: cl_command_queue,
    private: &PrivateKernel,
    args: &crate::registry::Args,
    plan: &TransparentPlan,
    (needs, devices): (&[BufferNeed], access::Devices),
    (user, event): (&[cl_event], *mut cl_event),
    extra: Extra<F>,
    local: Option<usize>,
    what: &str,
    enqueue: &impl Enqueue,
) -> Result<cl_int, String> {
    let wait = access::try_prepare_as(queue, needs, devices, user).map_err(|f| f.reason)?;
    let mut set = private.args.lock();
    private.given_by.store(0, Ordering::Relaxed);
    let ready = set_args(private.kernel.raw(), &mut set, args, plan, &extra).and_then(|()| {
        if crate::fault::inject("kernel") {
            return Err(format!("injected failure of the {what} kernel's launch"));
        }
        Ok(())
    });
    if let Err(why) = ready {
        // Not enqueued: the states changed for it go back.
        wait.failed();
        return Err(why);
    }
    let r = wait.run(queue, event, |n, l, ev| enqueue(private.kernel.raw(), local, n, l, ev), |r| *r == CL_SUCCESS);
    if r != CL_SUCCESS {
        return Err(format!("the {what} copy could not be enqueued ({r})"));
    }
    Ok(r)
}

/// Gives the copy the application's arguments (only those that changed since its last launch)
/// and the extra ones: M of each rewritten buffer, the staged slices' orders.
fn set_args<F: Fn(&str, usize) -> Option<u64>>(
    k: cl_kernel,
    set_args: &mut SetArgs,
    args: &crate::registry::Args,
    plan: &TransparentPlan,
    extra: &Extra<F>,
) -> Result<(), String> {
    let given = set_args.from.as_ref().is_some_and(|from| Arc::ptr_eq(from, args));
    let set = &mut set_args.values;
    // Every launch comes here: what is already set is compared in place, and only a value that
    // changed is copied.
    let mut extras: access::Few<(usize, [u8; 8])> = access::Few::new();
    for e in extra.args {
        let mem = match plan.kernel.indices.get(&e.param).and_then(|&i| args.get(i)) {
            Some(Some(ArgValue::Mem(h))) => *h,
            _ => return Err(format!("{} is not a buffer argument", e.param)),
        };
        let order = || extra.orders.iter().find(|(p, _)| *p == e.param).map_or((0, 0), |(_, o)| *o);
        let v = match e.what {
            ExtraKind::StructCount => {
                (extra.m_of)(&e.param, mem).ok_or_else(|| format!("no extent for {}", e.param))?
            }
            ExtraKind::AstaIn => order().0,
            ExtraKind::AstaOut => order().1,
        };
        extras.push((e.index, v.to_ne_bytes()));
    }
    let len = extras.iter().map(|(i, _)| i + 1).fold(args.len(), usize::max);
    set.resize(len, None);
    for i in 0..len {
        // An extra argument's place wins over the application's argument of that index.
        let extra = extras.iter().rev().find(|(j, _)| *j == i).map(|(_, b)| b);
        if extra.is_none() && given {
            continue;
        }
        let same = match (extra, &set[i]) {
            (Some(b), Some(ArgValue::Bytes(s))) => s.as_slice() == b.as_slice(),
            (Some(_), _) => false,
            (None, s) => s.as_ref() == args.get(i).and_then(Option::as_ref),
        };
        if same {
            continue;
        }
        let v = match (extra, args.get(i)) {
            (Some(b), _) => ArgValue::Bytes(crate::registry::ArgBytes::from_slice(b)),
            (None, Some(Some(v))) => v.clone(),
            (None, _) => return Err(format!("argument {i} of the copy is not set")),
        };
        if let Err(e) = cmd::set_arg(k, i as u32, arg_of(&v)) {
            set.clear();
            set_args.from = None;
            return Err(format!("argument {i} of the rewritten copy was refused ({e})"));
        }
        set[i] = Some(v);
    }
    set_args.from = Some(args.clone());
    Ok(())
}

/// An argument as the copy's kernel object takes it.
fn arg_of(v: &ArgValue) -> cmd::Arg<'_> {
    match v {
        ArgValue::Mem(h) => cmd::Arg::Mem(*h as cl_mem),
        ArgValue::Local(n) => cmd::Arg::Local(*n),
        ArgValue::Bytes(b) => cmd::Arg::Bytes(b),
        ArgValue::Svm(p) => cmd::Arg::Svm(*p as *const libc::c_void),
    }
}
