//! The live OpenCL objects the application holds, with the facts clayout needs about them
//! (application facts only: what clayout does with an object lives in `runtime`, keyed by the
//! same handles).
//!
//! Each table maps a handle to its facts and to the reference count the application's own
//! retains and releases give it; the record goes when that count reaches zero. Facts are
//! `Arc`s, so a kernel keeps its program's facts after the program's record is gone (the real
//! program lives on too, retained by the kernel). Locks are held only for map operations,
//! never across a call into the real library.

use crate::cl::HandleMap;
use libc::c_void;
use opencl_sys::*;
use parking_lot::{Mutex, RwLock};
use std::sync::Arc;

/// A handle as a map key (OpenCL handles are opaque pointers).
pub type Handle = usize;

#[inline]
pub fn key<T>(p: *mut T) -> Handle {
    p as usize
}

struct Entry<T> {
    refs: u32,
    info: Arc<T>,
}

/// Shards per table: threads working on different objects take different locks, so that
/// `clSetKernelArg` from several threads does not bounce one lock's cache line between cores.
const SHARDS: usize = 16;

/// One kind of object: handle -> (application reference count, facts).
pub struct Table<T> {
    shards: [RwLock<HandleMap<Entry<T>>>; SHARDS],
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Table { shards: std::array::from_fn(|_| RwLock::new(HandleMap::default())) }
    }
}

impl<T> Table<T> {
    #[inline]
    fn shard(&self, h: Handle) -> &RwLock<HandleMap<Entry<T>>> {
        // Handles are heap pointers: the low bits are alignment, the next ones vary.
        &self.shards[(h >> 4) % SHARDS]
    }

    /// A newly created object (count 1). A handle the driver reuses replaces the old record.
    pub fn insert(&self, h: Handle, info: T) -> Arc<T> {
        let info = Arc::new(info);
        self.shard(h).write().insert(h, Entry { refs: 1, info: info.clone() });
        info
    }

    pub fn get(&self, h: Handle) -> Option<Arc<T>> {
        self.shard(h).read().get(&h).map(|e| e.info.clone())
    }

    /// Runs `f` on the facts of `h` without taking a reference to them. The shard stays locked
    /// for reading while `f` runs, so `f` must be short and must not look this table up again:
    /// a second read waits behind a writer waiting for the first, which never leaves.
    pub fn with<R>(&self, h: Handle, f: impl FnOnce(&T) -> R) -> Option<R> {
        self.shard(h).read().get(&h).map(|e| f(&e.info))
    }

    pub fn contains(&self, h: Handle) -> bool {
        self.shard(h).read().contains_key(&h)
    }

    pub fn retain(&self, h: Handle) {
        if let Some(e) = self.shard(h).write().get_mut(&h) {
            e.refs += 1;
        }
    }

    /// One release by the application; returns the facts when that was the last reference.
    pub fn release(&self, h: Handle) -> Option<Arc<T>> {
        let mut map = self.shard(h).write();
        let e = map.get_mut(&h)?;
        e.refs = e.refs.saturating_sub(1);
        if e.refs == 0 {
            map.remove(&h).map(|e| e.info)
        } else {
            None
        }
    }

    /// One release by the application, with the real release `f` run under the table's write
    /// lock, so that [`Table::retain_where`] never retains an object `f` has just destroyed.
    /// `f` says whether it succeeded; only then is the reference dropped.
    pub fn release_with(&self, h: Handle, f: impl FnOnce() -> bool) -> bool {
        let mut map = self.shard(h).write();
        if !f() {
            return false;
        }
        if let Some(e) = map.get_mut(&h) {
            e.refs = e.refs.saturating_sub(1);
            if e.refs == 0 {
                map.remove(&h);
            }
        }
        true
    }

    /// Calls `retain` on every live record `pred` accepts, under the table's read lock (see
    /// [`Table::release_with`]), and returns their handles.
    pub fn retain_where(&self, pred: impl Fn(&T) -> bool, mut retain: impl FnMut(Handle)) -> Vec<Handle> {
        let mut out = Vec::new();
        for shard in &self.shards {
            for (h, e) in shard.read().iter() {
                if pred(&e.info) {
                    retain(*h);
                    out.push(*h);
                }
            }
        }
        out
    }

    /// Runs `retain(h)` if `h` is listed, under the lock its release takes (`release_with`), so
    /// that the object cannot go meanwhile.
    pub fn retain_if_present(&self, h: Handle, retain: impl FnOnce(Handle)) {
        let map = self.shard(h).read();
        if map.contains_key(&h) {
            retain(h);
        }
    }

    /// Forgets `h` whatever its count (for tables that follow another table's lifetimes).
    pub fn remove(&self, h: Handle) -> Option<Arc<T>> {
        self.shard(h).write().remove(&h).map(|e| e.info)
    }

    pub fn refs(&self, h: Handle) -> Option<u32> {
        self.shard(h).read().get(&h).map(|e| e.refs)
    }

    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.read().len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every live record, for reports and checks.
    pub fn snapshot(&self) -> Vec<(Handle, Arc<T>)> {
        self.shards
            .iter()
            .flat_map(|s| s.read().iter().map(|(h, e)| (*h, e.info.clone())).collect::<Vec<_>>())
            .collect()
    }
}

#[derive(Debug)]
pub struct ContextInfo {
    pub devices: Vec<Handle>,
}

#[derive(Debug)]
pub struct QueueInfo {
    pub context: Handle,
    pub device: Handle,
    pub out_of_order: bool,
    pub profiling: bool,
    /// CLAYOUT_PROFILE turned profiling on where the application did not (hidden from queries).
    pub profiling_added: bool,
    /// The property list the application gave `clCreateCommandQueueWithProperties`, with its 0.
    pub app_properties: Vec<cl_queue_properties>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProgramOrigin {
    Source,
    Binary,
    Il,
    BuiltIn,
    Linked,
}

#[derive(Debug)]
pub struct ProgramInfo {
    pub context: Handle,
    pub origin: ProgramOrigin,
    /// The source strings exactly as the application gave them (empty unless `Source`).
    pub sources: Vec<String>,
    /// Options of the last build, compile or link.
    pub build_options: Mutex<Option<String>>,
}

impl ProgramInfo {
    pub fn source(&self) -> String {
        self.sources.concat()
    }
}

/// A kernel's arguments as last set, shared with the launches that read them (a launch takes
/// the list, not a copy of it); setting an argument while a launch holds the list copies it
/// first.
pub type Args = std::sync::Arc<Vec<Option<ArgValue>>>;

/// A kernel argument as last set by `clSetKernelArg`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgValue {
    /// A buffer clayout tracks (or a null `cl_mem`, as 0).
    Mem(Handle),
    /// `__local` space of this many bytes.
    Local(usize),
    /// A shared virtual memory pointer (`clSetKernelArgSVMPointer`).
    Svm(usize),
    /// Anything else: the bytes as given.
    Bytes(ArgBytes),
}

/// The bytes of a kernel argument, kept inline up to 16 (every OpenCL scalar and vector up to
/// `long2`/`double2`): a kernel's scalars set before each launch allocated one vector each, some
/// 190 instructions of a `clSetKernelArg`'s 880 on PoCL.
pub type ArgBytes = smallvec::SmallVec<[u8; 16]>;

#[derive(Debug)]
pub struct KernelInfo {
    pub name: String,
    pub program: Handle,
    pub args: Mutex<Args>,
    /// The application gave one of its arguments an SVM pointer at some time (or the kernel it
    /// was cloned from had): implementations differ in what such a kernel's arguments are
    /// afterwards (NVIDIA refuses its launch once a buffer replaces the pointer), which only
    /// the kernel itself can tell, so it runs as written from then on.
    pub svm_seen: std::sync::atomic::AtomicBool,
    /// Arguments set so far (`set_arg`): a launch that repeats the last tells that none was
    /// set since without the list's lock.
    pub args_set: std::sync::atomic::AtomicU64,
    /// `mems_changed()` when each of the first `STAMPED` arguments was last set (`u64::MAX`:
    /// never, or before the record was made), written under `args`' lock.
    pub stamps: [std::sync::atomic::AtomicU64; STAMPED],
    /// `args_set` just after each of the first `STAMPED` arguments was last set (0: never since
    /// the record was made), written under `args`' lock: a lane whose list was the kernel's at
    /// count `n` still has argument `i`'s value where this is at most `n`, whatever else was set
    /// since (a loop that swaps two buffers sets one argument and sets the others again).
    pub set_at: [std::sync::atomic::AtomicU64; STAMPED],
}

/// The arguments whose value set again can be told unchanged (`KernelInfo::stamps`).
pub const STAMPED: usize = 32;

impl KernelInfo {
    pub fn unstamped() -> [std::sync::atomic::AtomicU64; STAMPED] {
        std::array::from_fn(|_| u64::MAX.into())
    }

    pub fn never_set() -> [std::sync::atomic::AtomicU64; STAMPED] {
        std::array::from_fn(|_| 0.into())
    }

    /// Whether argument `i` was not set after the list had been set `n` times (`set_at`).
    pub fn unset_since(&self, i: usize, n: u64) -> bool {
        self.set_at.get(i).is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed) <= n)
    }

    /// Whether argument `i` of `args` (this kernel's list, as it is now) has the value `value`
    /// of `size` bytes already, with no buffer created or released since it was set (the same
    /// handle may then name another buffer, or none).
    ///
    /// # Safety
    /// As for [`arg_value`].
    pub unsafe fn has(&self, args: &[Option<ArgValue>], i: usize, size: usize, value: *const c_void) -> bool {
        self.stamps.get(i).is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed) == mems_changed())
            && args.get(i).is_some_and(|a| a.as_ref().is_some_and(|a| a.is_raw(size, value)))
    }
}

/// Buffers the application created or released for the last time so far.
static MEMS_CHANGED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The application created a buffer (maybe at the handle of one it released), or released one
/// for the last time: the same bytes set as an argument may now name another buffer, or none.
/// Called once the buffers' table shows the change, and read before a value is told
/// (`arg_value`), so that a value told before the change carries an older count.
pub fn mem_changed() {
    MEMS_CHANGED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

pub fn mems_changed() -> u64 {
    MEMS_CHANGED.load(std::sync::atomic::Ordering::Relaxed)
}

impl KernelInfo {
    /// The arguments as last set, and how many were set by then.
    pub fn args_now(&self) -> (Args, u64) {
        let args = self.args.lock();
        (args.clone(), self.args_set.load(std::sync::atomic::Ordering::Relaxed))
    }
}

#[derive(Debug)]
pub struct BufferInfo {
    pub context: Handle,
    pub size: usize,
    pub flags: cl_mem_flags,
    /// Parent buffer and (origin, size) for a sub-buffer.
    pub parent: Option<(Handle, usize, usize)>,
}

#[derive(Default)]
pub struct Registry {
    pub contexts: Table<ContextInfo>,
    pub queues: Table<QueueInfo>,
    pub programs: Table<ProgramInfo>,
    pub kernels: Table<KernelInfo>,
    pub buffers: Table<BufferInfo>,
}

impl Registry {
    /// The first device of a context: where clayout's probes and its own programs run.
    pub fn first_device(&self, context: Handle) -> Option<cl_device_id> {
        self.contexts.get(context).and_then(|c| c.devices.first().map(|d| *d as cl_device_id))
    }
}

pub fn get() -> &'static Registry {
    static R: once_cell::sync::Lazy<Registry> = once_cell::sync::Lazy::new(Registry::default);
    &R
}

/// Classifies the bytes given to `clSetKernelArg`.
///
/// # Safety
/// `value` must be readable for `size` bytes when it is not null, as the OpenCL API requires.
pub unsafe fn arg_value(reg: &Registry, size: usize, value: *const c_void) -> ArgValue {
    if value.is_null() {
        return ArgValue::Local(size);
    }
    if size == std::mem::size_of::<cl_mem>() {
        let h = *(value as *const Handle);
        if h == 0 || reg.buffers.contains(h) {
            return ArgValue::Mem(h);
        }
    }
    ArgValue::Bytes(ArgBytes::from_slice(std::slice::from_raw_parts(value as *const u8, size)))
}

impl ArgValue {
    /// Whether `value` (`size` bytes, as `clSetKernelArg` takes it) is this value, bytes for
    /// bytes, without reading it into an `ArgValue` (which allocates, and looks a pointer-sized
    /// value up among the buffers). A buffer's handle is the same buffer only while no buffer
    /// was created or released since it was set (`mems_changed`): the caller checks that.
    ///
    /// # Safety
    /// As for [`arg_value`].
    pub unsafe fn is_raw(&self, size: usize, value: *const c_void) -> bool {
        match self {
            ArgValue::Local(n) => value.is_null() && *n == size,
            ArgValue::Mem(h) => {
                !value.is_null() && size == std::mem::size_of::<cl_mem>() && *(value as *const Handle) == *h
            }
            ArgValue::Bytes(b) => {
                !value.is_null() && b.len() == size && std::slice::from_raw_parts(value as *const u8, size) == &b[..]
            }
            ArgValue::Svm(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_its_bytes_as_set() {
        let f = 1.5f32;
        let h: Handle = 0x1000;
        let p = |v: &dyn std::any::Any| v as *const dyn std::any::Any as *const c_void;
        // SAFETY: each pointer points to as many bytes as the size passed with it.
        unsafe {
            assert!(ArgValue::Bytes(ArgBytes::from_slice(&f.to_ne_bytes())).is_raw(4, p(&f)));
            assert!(!ArgValue::Bytes(ArgBytes::from_slice(&2.5f32.to_ne_bytes())).is_raw(4, p(&f)));
            assert!(!ArgValue::Bytes(ArgBytes::from_slice(&f.to_ne_bytes())).is_raw(2, p(&f)));
            assert!(ArgValue::Mem(h).is_raw(8, p(&h)));
            assert!(!ArgValue::Mem(h + 16).is_raw(8, p(&h)));
            assert!(ArgValue::Local(64).is_raw(64, std::ptr::null()));
            assert!(!ArgValue::Local(64).is_raw(32, std::ptr::null()));
            assert!(!ArgValue::Svm(h).is_raw(8, p(&h)));
        }
    }

    #[test]
    fn refcounts_follow_retain_and_release() {
        let t: Table<u32> = Table::default();
        t.insert(7, 42);
        t.retain(7);
        assert_eq!(t.refs(7), Some(2));
        assert!(t.release(7).is_none());
        assert_eq!(*t.release(7).unwrap(), 42);
        assert!(t.get(7).is_none());
        assert!(t.release(7).is_none(), "release of an unknown handle is ignored");
    }

    #[test]
    fn reused_handle_replaces_record() {
        let t: Table<&str> = Table::default();
        t.insert(1, "old");
        t.insert(1, "new");
        assert_eq!(*t.get(1).unwrap(), "new");
        assert_eq!(t.refs(1), Some(1));
    }

    #[test]
    fn kernel_args_are_classified() {
        let reg = Registry::default();
        reg.buffers.insert(0x1000, BufferInfo { context: 1, size: 64, flags: 0, parent: None });
        let mem: Handle = 0x1000;
        let v = unsafe { arg_value(&reg, 8, &mem as *const Handle as *const c_void) };
        assert_eq!(v, ArgValue::Mem(0x1000));
        let n: u64 = 0x2000;
        let v = unsafe { arg_value(&reg, 8, &n as *const u64 as *const c_void) };
        assert_eq!(v, ArgValue::Bytes(ArgBytes::from_slice(&0x2000u64.to_ne_bytes())));
        assert_eq!(unsafe { arg_value(&reg, 256, std::ptr::null()) }, ArgValue::Local(256));
    }
}
