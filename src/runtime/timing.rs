//! Device time of conversions, read from event profiling when the queue has it: clayout never
//! turns profiling on for an application's queue unless CLAYOUT_PROFILE=1 asks.

use crate::real::api;
use crate::registry;
use libc::c_void;
use opencl_sys::*;

extern "C" fn on_complete(ev: cl_event, status: cl_int, _user: *mut c_void) {
    crate::guard("conversion timing", || {
        if status == CL_COMPLETE {
            let (mut start, mut end): (cl_ulong, cl_ulong) = (0, 0);
            let n = std::mem::size_of::<cl_ulong>();
            let ok = unsafe {
                api().clGetEventProfilingInfo(
                    ev,
                    CL_PROFILING_COMMAND_START,
                    n,
                    &mut start as *mut _ as *mut c_void,
                    std::ptr::null_mut(),
                ) == CL_SUCCESS
                    && api().clGetEventProfilingInfo(
                        ev,
                        CL_PROFILING_COMMAND_END,
                        n,
                        &mut end as *mut _ as *mut c_void,
                        std::ptr::null_mut(),
                    ) == CL_SUCCESS
            };
            if ok && end >= start {
                crate::stats::marshal_time(end - start);
            }
        }
        unsafe { api().clReleaseEvent(ev) };
    });
}

/// Adds the device time of `ev` to the statistics once it completes, if `queue` profiles.
pub fn time_event(queue: cl_command_queue, ev: cl_event) {
    let profiling = registry::get().queues.get(registry::key(queue)).map(|q| q.profiling).unwrap_or(false);
    if !profiling {
        return;
    }
    unsafe {
        api().clRetainEvent(ev);
        if api().clSetEventCallback(ev, CL_COMPLETE, Some(on_complete), std::ptr::null_mut()) != CL_SUCCESS {
            api().clReleaseEvent(ev);
        }
    }
}
