//! One conversion's commands enqueued on the application's queue as a chain: each waits on the
//! one before, the first on the caller's wait list and on the last conversion that used the
//! context's scratch buffers, which live here (one pair per context, grown on demand).

use super::plan::{Arg, Command, Conversion};
use super::programs::Kernels;
use super::MarshalError;
use crate::cl::{cmd, Event, Mem};
use crate::layout::Shape;
use once_cell::sync::Lazy;
use opencl_sys::*;
use parking_lot::Mutex;
use std::collections::HashMap;

type Res<T> = Result<T, MarshalError>;

/// The scratch of one context.
#[derive(Default)]
struct Scratch {
    /// Done flags of the SoA <-> ASTA steps.
    flags: Option<Mem>,
    flags_bytes: u64,
    /// The partial tile's words.
    tail: Option<Mem>,
    tail_bytes: u64,
    /// The last command of the last conversion that used this scratch.
    last: Option<Event>,
}

static SCRATCH: Lazy<Mutex<HashMap<usize, Scratch>>> = Lazy::new(|| Mutex::new(HashMap::new()));

/// Makes `mem` at least `need` bytes (a power of two, 256 at least).
fn grow(ctx: cl_context, mem: &mut Option<Mem>, have: &mut u64, need: u64) -> Res<()> {
    if need <= *have && mem.is_some() {
        return Ok(());
    }
    if crate::fault::inject("scratch") {
        return Err(MarshalError::Resources("injected failure of a scratch buffer".into()));
    }
    let size = need.max(256).next_power_of_two();
    let m = cmd::create_buffer(ctx, CL_MEM_READ_WRITE, size as usize)
        .map_err(|e| MarshalError::Resources(format!("scratch buffer of {size} bytes: {}", e.code)))?;
    // Commands already enqueued hold the old buffer until they complete.
    *mem = Some(m);
    *have = size;
    Ok(())
}

/// Forgets the scratch of `ctx`.
pub fn release(ctx: cl_context) {
    let gone = SCRATCH.lock().remove(&(ctx as usize));
    // Released here, outside the lock.
    drop(gone);
}

/// The buffers a command's `Arg`s name.
struct Buffers {
    data: cl_mem,
    flags: cl_mem,
    tail: cl_mem,
}

struct Chain {
    queue: cl_command_queue,
    /// What the first command waits for.
    first_wait: Vec<cl_event>,
    /// Every command enqueued so far, in order. All stay referenced until the caller lets them
    /// go after the last completes: some implementations abort when a failure runs through a
    /// chain whose middle links were released.
    links: Vec<Event>,
}

impl Chain {
    fn started(&self) -> bool {
        !self.links.is_empty()
    }

    fn waits(&self) -> Vec<cl_event> {
        match self.links.last() {
            Some(e) => vec![e.raw()],
            None => self.first_wait.clone(),
        }
    }

    fn enqueue(&mut self, k: &Kernels, command: &Command, b: &Buffers) -> Res<()> {
        let ev = match command {
            Command::ZeroFlags { bytes } => {
                cmd::fill(self.queue, b.flags, &0u32.to_ne_bytes(), 0, *bytes as usize, &self.waits())
                    .map_err(|e| MarshalError::Enqueue(e.code, "clEnqueueFillBuffer(flags)".into()))?
            }
            Command::Launch { role, args, global } => {
                let (name, local) = k.params.kernel(*role);
                let kernel = k.get(*role).raw();
                for (i, a) in args.iter().enumerate() {
                    let r = match *a {
                        Arg::Data => cmd::set_arg(kernel, i as u32, cmd::Arg::Mem(b.data)),
                        Arg::Flags => cmd::set_arg(kernel, i as u32, cmd::Arg::Mem(b.flags)),
                        Arg::Tail => cmd::set_arg(kernel, i as u32, cmd::Arg::Mem(b.tail)),
                        Arg::U64(v) => cmd::set_arg(kernel, i as u32, cmd::Arg::u64(&v)),
                        Arg::U32(v) => cmd::set_arg(kernel, i as u32, cmd::Arg::u32(&v)),
                    };
                    r.map_err(|e| MarshalError::Enqueue(e.code, format!("clSetKernelArg({name}, {i})")))?;
                }
                let g = global.div_ceil(local as u64) * local as u64;
                let launched = cmd::nd_range(self.queue, kernel, &[g as usize], Some(&[local as usize]), &self.waits());
                let what = || format!("clEnqueueNDRangeKernel({name}, global {g}, local {local})");
                launched.map_err(|e| MarshalError::Enqueue(e.code, what()))?
            }
        };
        self.links.push(ev);
        Ok(())
    }

    fn marker(&mut self) -> Res<()> {
        let ev = cmd::marker(self.queue, &self.waits())
            .map_err(|e| MarshalError::Enqueue(e.code, "clEnqueueMarkerWithWaitList".into()))?;
        self.links.push(ev);
        Ok(())
    }
}

/// Enqueues the steps of `conv` (with their `kernels`) on the `shape` at word `base` of `data`,
/// after `wait`, and returns the events of its commands in order (the last completes when the
/// conversion does) and the bytes moved. Conversions in
/// one context are serialized on its scratch. On an error after the first command, the
/// commands enqueued still run and the error is `Partial`.
#[allow(clippy::too_many_arguments)]
pub fn run(
    queue: cl_command_queue,
    ctx: cl_context,
    data: cl_mem,
    base: u64,
    shape: Shape,
    conv: &Conversion,
    kernels: &[Kernels],
    wait: &[cl_event],
) -> Res<(Vec<Event>, u64)> {
    let mut map = SCRATCH.lock();
    let sc = map.entry(ctx as usize).or_default();
    grow(ctx, &mut sc.flags, &mut sc.flags_bytes, conv.flags_bytes.max(4))?;
    grow(ctx, &mut sc.tail, &mut sc.tail_bytes, conv.tail_bytes.max(8))?;
    let raw = |m: &Option<Mem>| m.as_ref().map_or(std::ptr::null_mut(), Mem::raw);
    let buffers = Buffers { data, flags: raw(&sc.flags), tail: raw(&sc.tail) };
    let mut first_wait = wait.to_vec();
    first_wait.extend(sc.last.as_ref().map(Event::raw));
    let mut chain = Chain { queue, first_wait, links: Vec::new() };
    let mut bytes = 0;
    let mut result = Ok(());
    'steps: for ((step, params), k) in conv.steps.iter().zip(kernels) {
        if !chain.started() && crate::fault::inject("enqueue") {
            result = Err(MarshalError::Enqueue(CL_OUT_OF_RESOURCES, "injected failure of a conversion enqueue".into()));
            break;
        }
        let commands = super::plan::commands(*step, params, shape, base);
        for c in &commands.list {
            result = chain.enqueue(k, c, &buffers);
            if result.is_err() {
                break 'steps;
            }
        }
        bytes += commands.bytes;
    }
    if result.is_ok() && !chain.started() {
        result = chain.marker();
    }
    // Whatever was enqueued, the scratch is busy until the last enqueued command is done.
    if let Some(last) = chain.links.last() {
        sc.last = Event::retained_in(last.raw(), queue);
        if sc.last.is_none() {
            // Without a reference the next conversion could not wait for this one.
            let _ = cmd::wait(&[last.raw()]);
        }
    }
    drop(map);
    // Flushed so that a wait on the event from another queue cannot stall.
    let _ = cmd::flush(queue);
    match (result, chain.links.is_empty()) {
        (Ok(()), false) => Ok((chain.links, bytes)),
        (Err(e), false) => Err(MarshalError::Partial(Box::new(e))),
        (Err(e), true) => Err(e),
        // Not reached: a chain that succeeded enqueued at least its marker.
        (Ok(()), true) => Err(MarshalError::Enqueue(CL_OUT_OF_RESOURCES, "no command was enqueued".into())),
    }
}
