//! The application's callbacks that the driver runs when a command reaches a state, or when a
//! buffer goes: on a thread of the driver's, and possibly before that thread may go on with the
//! commands queued after (PoCL runs an event's callbacks before the commands that wait for the
//! event are released). A callback may call OpenCL there, and so clayout. Were clayout's thread
//! blocked in a call that waits for those commands while it holds a lock the callback needs, the
//! two would wait for each other for ever, where without clayout the call would have returned:
//! so while any such callback is registered and has not returned, clayout holds no lock across
//! a blocking call (`quiet`). Each one is counted through a trampoline of clayout's that calls
//! the application's function with its own arguments.

use libc::c_void;
use opencl_sys::*;
use parking_lot::{RwLock, RwLockReadGuard};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Callbacks registered and not yet returned.
static PENDING: AtomicUsize = AtomicUsize::new(0);

/// Held for reading across each blocking call made with locks held; a registration takes it for
/// writing to count its callback, so that no callback can start while such a call is in flight.
static QUIET: RwLock<()> = RwLock::new(());

/// While the guard lives, no callback of the application's is registered, running or can start:
/// a blocking call made meanwhile cannot wait for one. None while any is pending.
pub fn quiet() -> Option<RwLockReadGuard<'static, ()>> {
    let guard = QUIET.read();
    (PENDING.load(Ordering::Acquire) == 0).then_some(guard)
}

/// A callback counted before its registration (after every blocking call made quiet has
/// returned), and not the lock held across the registration: a driver may run the callback
/// inside it, where the event has already reached the state.
fn counted() {
    let _barrier = QUIET.write();
    PENDING.fetch_add(1, Ordering::AcqRel);
}

fn returned() {
    PENDING.fetch_sub(1, Ordering::AcqRel);
}

type EventNotify = unsafe extern "C" fn(cl_event, cl_int, *mut c_void);
type MemNotify = unsafe extern "C" fn(cl_mem, *mut c_void);

/// The application's function and its argument, handed to a trampoline.
struct Call<F> {
    notify: F,
    user_data: *mut c_void,
}

/// Registers the application's `notify` through `register` (the real library's call), counted
/// until it returns. `notify` None: the real library's answer (`CL_INVALID_VALUE`).
///
/// # Safety
/// `register` must be the real registration, which calls the trampoline at most once.
unsafe fn through<F, T>(
    notify: Option<F>,
    user_data: *mut c_void,
    trampoline: T,
    register: impl FnOnce(Option<T>, *mut c_void) -> cl_int,
) -> cl_int {
    let Some(notify) = notify else { return register(None, user_data) };
    counted();
    let call = Box::into_raw(Box::new(Call { notify, user_data }));
    let r = register(Some(trampoline), call.cast());
    if r != CL_SUCCESS {
        // SAFETY: refused, so the trampoline will never see it.
        drop(unsafe { Box::from_raw(call) });
        returned();
    }
    r
}

/// `clSetEventCallback` through the count.
///
/// # Safety
/// As for `clSetEventCallback`; `register` is the real one.
pub unsafe fn event(
    notify: Option<EventNotify>,
    user_data: *mut c_void,
    register: impl FnOnce(Option<EventNotify>, *mut c_void) -> cl_int,
) -> cl_int {
    unsafe extern "C" fn trampoline(event: cl_event, status: cl_int, data: *mut c_void) {
        // SAFETY: made by `through`, and the driver calls an event's callback once.
        let call = unsafe { Box::from_raw(data.cast::<Call<EventNotify>>()) };
        unsafe { (call.notify)(event, status, call.user_data) };
        returned();
    }
    unsafe { through(notify, user_data, trampoline as EventNotify, register) }
}

/// `clSetMemObjectDestructorCallback` through the count (a driver may run it later, on its
/// own thread, once the buffer's last command is done).
///
/// # Safety
/// As for `clSetMemObjectDestructorCallback`; `register` is the real one.
pub unsafe fn mem_destructor(
    notify: Option<MemNotify>,
    user_data: *mut c_void,
    register: impl FnOnce(Option<MemNotify>, *mut c_void) -> cl_int,
) -> cl_int {
    unsafe extern "C" fn trampoline(mem: cl_mem, data: *mut c_void) {
        // SAFETY: made by `through`, and the driver calls a destructor callback once.
        let call = unsafe { Box::from_raw(data.cast::<Call<MemNotify>>()) };
        unsafe { (call.notify)(mem, call.user_data) };
        returned();
    }
    unsafe { through(notify, user_data, trampoline as MemNotify, register) }
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn app(_: cl_event, status: cl_int, data: *mut c_void) {
        // SAFETY: the tests pass a pointer to their counter.
        unsafe { *data.cast::<i32>() += status + 1 };
    }

    /// A refused registration counts nothing; an accepted one counts until the application's
    /// function returns, whether the driver calls it later or inside the registration, and the
    /// function gets its own argument and the status.
    #[test]
    fn a_callback_counts_from_its_registration_until_it_returns() {
        let mut ran = 0i32;
        let data = (&mut ran as *mut i32).cast::<c_void>();
        let refused = unsafe { event(Some(app), data, |_, _| CL_INVALID_VALUE) };
        assert_eq!(refused, CL_INVALID_VALUE);
        assert!(quiet().is_some());
        let none = unsafe { event(None, data, |f, _| if f.is_none() { CL_INVALID_VALUE } else { CL_SUCCESS }) };
        assert_eq!(none, CL_INVALID_VALUE);
        assert!(quiet().is_some());

        let mut held = None;
        let later = unsafe {
            event(Some(app), data, |f, d| {
                held = f.map(|f| (f, d));
                CL_SUCCESS
            })
        };
        assert_eq!(later, CL_SUCCESS);
        assert!(quiet().is_none(), "pending until it has run");
        let (f, d) = held.expect("the trampoline was registered");
        unsafe { f(std::ptr::null_mut(), CL_COMPLETE, d) };
        assert_eq!(ran, 1);
        assert!(quiet().is_some());

        let inside = unsafe {
            event(Some(app), data, |f, d| {
                assert!(quiet().is_none(), "counted before the registration");
                f.expect("the trampoline")(std::ptr::null_mut(), CL_COMPLETE, d);
                CL_SUCCESS
            })
        };
        assert_eq!(inside, CL_SUCCESS);
        assert_eq!(ran, 2);
        assert!(quiet().is_some());
    }
}
