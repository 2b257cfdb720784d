//! Enqueue entry points that touch buffer bytes: each says what every buffer it touches needs
//! (`runtime::state::Need`) and lets the runtime order the command after any conversion.
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use crate::cl::api;
use crate::registry::key;
use crate::runtime::access::{blocking_host_access, host_access, Blocking, HostUse};
use crate::runtime::dims::{Dims, WorkSizes};
use crate::runtime::{buffers, chunked, convert, lane, launch, order, pinned};
use libc::{c_void, size_t};
use opencl_sys::*;

/// A blocking command that returns its status.
fn status<C: FnOnce(cl_uint, *const cl_event, cl_bool, *mut cl_event) -> cl_int>(
    blocking: cl_bool,
    event: *mut cl_event,
    call: C,
) -> Blocking<cl_int, C, fn(cl_int) -> cl_int> {
    Blocking { blocking, event, call, enqueued: |r| *r == CL_SUCCESS, failed: |e| e }
}

pub unsafe fn clEnqueueReadBuffer(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_read: cl_bool,
    offset: size_t,
    size: size_t,
    ptr: *mut c_void,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    let chunked = crate::guard("clEnqueueReadBuffer", || {
        chunked::read(command_queue, buffer, blocking_read, offset, size, ptr, n, list, event)
    });
    if let Some(Some(r)) = chunked {
        return r;
    }
    let call = |n, l, b, ev| api().clEnqueueReadBuffer(command_queue, buffer, b, offset, size, ptr, n, l, ev);
    blocking_host_access(command_queue, &[(buffer, HostUse::Host)], n, list, status(blocking_read, event, call))
}

pub unsafe fn clEnqueueReadBufferRect(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_read: cl_bool,
    buffer_origin: *const size_t,
    host_origin: *const size_t,
    region: *const size_t,
    buffer_row_pitch: size_t,
    buffer_slice_pitch: size_t,
    host_row_pitch: size_t,
    host_slice_pitch: size_t,
    ptr: *mut c_void,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    let call = |n, l, b, ev| {
        api().clEnqueueReadBufferRect(
            command_queue,
            buffer,
            b,
            buffer_origin,
            host_origin,
            region,
            buffer_row_pitch,
            buffer_slice_pitch,
            host_row_pitch,
            host_slice_pitch,
            ptr,
            n,
            l,
            ev,
        )
    };
    blocking_host_access(command_queue, &[(buffer, HostUse::Host)], n, list, status(blocking_read, event, call))
}

pub unsafe fn clEnqueueWriteBuffer(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_write: cl_bool,
    offset: size_t,
    size: size_t,
    ptr: *const c_void,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    let call = |n, l, b, ev| api().clEnqueueWriteBuffer(command_queue, buffer, b, offset, size, ptr, n, l, ev);
    let usage = HostUse::Write { offset, size };
    blocking_host_access(command_queue, &[(buffer, usage)], n, list, status(blocking_write, event, call))
}

pub unsafe fn clEnqueueWriteBufferRect(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_write: cl_bool,
    buffer_origin: *const size_t,
    host_origin: *const size_t,
    region: *const size_t,
    buffer_row_pitch: size_t,
    buffer_slice_pitch: size_t,
    host_row_pitch: size_t,
    host_slice_pitch: size_t,
    ptr: *const c_void,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    let call = |n, l, b, ev| {
        api().clEnqueueWriteBufferRect(
            command_queue,
            buffer,
            b,
            buffer_origin,
            host_origin,
            region,
            buffer_row_pitch,
            buffer_slice_pitch,
            host_row_pitch,
            host_slice_pitch,
            ptr,
            n,
            l,
            ev,
        )
    };
    blocking_host_access(command_queue, &[(buffer, HostUse::Host)], n, list, status(blocking_write, event, call))
}

pub unsafe fn clEnqueueFillBuffer(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    pattern: *const c_void,
    pattern_size: size_t,
    offset: size_t,
    size: size_t,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    // Only a fill the specification allows counts as a write of its range: an implementation
    // may accept another one and fill less than `size` bytes (NVIDIA fills whole patterns only,
    // leaving the rest), so then the buffer comes back to its host layout first.
    let valid = !pattern.is_null()
        && pattern_size.is_power_of_two()
        && pattern_size <= 128
        && offset.is_multiple_of(pattern_size)
        && size.is_multiple_of(pattern_size);
    let usage = if valid { HostUse::Write { offset, size } } else { HostUse::Host };
    host_access(command_queue, &[(buffer, usage)], n, list, event, |n, l, ev| {
        api().clEnqueueFillBuffer(command_queue, buffer, pattern, pattern_size, offset, size, n, l, ev)
    })
}

pub unsafe fn clEnqueueCopyBuffer(
    command_queue: cl_command_queue,
    src_buffer: cl_mem,
    dst_buffer: cl_mem,
    src_offset: size_t,
    dst_offset: size_t,
    size: size_t,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    let needs = [(src_buffer, HostUse::Host), (dst_buffer, HostUse::Write { offset: dst_offset, size })];
    host_access(command_queue, &needs, n, list, event, |n, l, ev| {
        api().clEnqueueCopyBuffer(command_queue, src_buffer, dst_buffer, src_offset, dst_offset, size, n, l, ev)
    })
}

pub unsafe fn clEnqueueCopyBufferRect(
    command_queue: cl_command_queue,
    src_buffer: cl_mem,
    dst_buffer: cl_mem,
    src_origin: *const size_t,
    dst_origin: *const size_t,
    region: *const size_t,
    src_row_pitch: size_t,
    src_slice_pitch: size_t,
    dst_row_pitch: size_t,
    dst_slice_pitch: size_t,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    host_access(
        command_queue,
        &[(src_buffer, HostUse::Host), (dst_buffer, HostUse::Host)],
        n,
        list,
        event,
        |n, l, ev| {
            api().clEnqueueCopyBufferRect(
                command_queue,
                src_buffer,
                dst_buffer,
                src_origin,
                dst_origin,
                region,
                src_row_pitch,
                src_slice_pitch,
                dst_row_pitch,
                dst_slice_pitch,
                n,
                l,
                ev,
            )
        },
    )
}

pub unsafe fn clEnqueueCopyImageToBuffer(
    command_queue: cl_command_queue,
    src_image: cl_mem,
    dst_buffer: cl_mem,
    src_origin: *const size_t,
    region: *const size_t,
    dst_offset: size_t,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    host_access(command_queue, &[(dst_buffer, HostUse::Host)], n, list, event, |n, l, ev| {
        api().clEnqueueCopyImageToBuffer(command_queue, src_image, dst_buffer, src_origin, region, dst_offset, n, l, ev)
    })
}

pub unsafe fn clEnqueueCopyBufferToImage(
    command_queue: cl_command_queue,
    src_buffer: cl_mem,
    dst_image: cl_mem,
    src_offset: size_t,
    dst_origin: *const size_t,
    region: *const size_t,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    host_access(command_queue, &[(src_buffer, HostUse::Host)], n, list, event, |n, l, ev| {
        api().clEnqueueCopyBufferToImage(command_queue, src_buffer, dst_image, src_offset, dst_origin, region, n, l, ev)
    })
}

pub unsafe fn clEnqueueMapBuffer(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_map: cl_bool,
    map_flags: cl_map_flags,
    offset: size_t,
    size: size_t,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    crate::runtime::profiling::note_event(event);
    let call = |n, l, b, ev| {
        api().clEnqueueMapBuffer(command_queue, buffer, b, map_flags, offset, size, n, l, ev, errcode_ret)
    };
    mapped(command_queue, buffer, size, blocking_map, n, list, event, errcode_ret, call)
}

/// A map of a buffer or of an image made from one: its bytes in host layout, and the buffer
/// kept there until the map is undone (counted from before the enqueue). Even an invalidating
/// map needs them there: implementations keep the old bytes wherever the host writes none
/// before the unmap. `len`: the bytes a buffer's map covers (0 for an image), noted when the
/// buffer's host memory is pinned, where a chunked read pays (runtime::pinned).
#[allow(clippy::too_many_arguments)]
unsafe fn mapped(
    command_queue: cl_command_queue,
    mem: cl_mem,
    len: usize,
    blocking_map: cl_bool,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
    errcode_ret: *mut cl_int,
    call: impl FnOnce(cl_uint, *const cl_event, cl_bool, *mut cl_event) -> *mut c_void,
) -> *mut c_void {
    let record = crate::guard("map", || buffers::get(key(mem))).flatten();
    if let Some(b) = &record {
        crate::guard("map", || convert::mapping(b));
    }
    let failed = move |e: cl_int| {
        if !errcode_ret.is_null() {
            *errcode_ret = e;
        }
        std::ptr::null_mut()
    };
    let p = blocking_host_access(
        command_queue,
        &[(mem, HostUse::Host)],
        n,
        list,
        Blocking { blocking: blocking_map, event, call, enqueued: |p: &*mut c_void| !p.is_null(), failed },
    );
    match (p.is_null(), &record) {
        (true, Some(b)) => drop(crate::guard("map", || convert::unmapped(b))),
        (false, Some(b)) => drop(crate::guard("map", || pinned::mapped(b.facts.flags, p, len))),
        _ => {}
    }
    p
}

pub unsafe fn clEnqueueUnmapMemObject(
    command_queue: cl_command_queue,
    memobj: cl_mem,
    mapped_ptr: *mut c_void,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    let r = api().clEnqueueUnmapMemObject(command_queue, memobj, mapped_ptr, n, list, event);
    if r == CL_SUCCESS {
        crate::guard("clEnqueueUnmapMemObject", || {
            pinned::unmapped(mapped_ptr);
            if let Some(b) = buffers::get(key(memobj)) {
                convert::unmapped(&b)
            }
        });
    }
    r
}

pub unsafe fn clEnqueueMigrateMemObjects(
    command_queue: cl_command_queue,
    num_mem_objects: cl_uint,
    mem_objects: *const cl_mem,
    flags: cl_mem_migration_flags,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    let to_host = flags & CL_MIGRATE_MEM_OBJECT_HOST != 0;
    if !to_host || mem_objects.is_null() {
        return api().clEnqueueMigrateMemObjects(command_queue, num_mem_objects, mem_objects, flags, n, list, event);
    }
    // Content left undefined by a migration is, in practice, the old bytes: they must be the
    // host layout's.
    let usage = HostUse::Host;
    let needs: Vec<(cl_mem, HostUse)> =
        std::slice::from_raw_parts(mem_objects, num_mem_objects as usize).iter().map(|m| (*m, usage)).collect();
    host_access(command_queue, &needs, n, list, event, |n, l, ev| {
        api().clEnqueueMigrateMemObjects(command_queue, num_mem_objects, mem_objects, flags, n, l, ev)
    })
}

pub unsafe fn clEnqueueNativeKernel(
    command_queue: cl_command_queue,
    user_func: Option<unsafe extern "C" fn(*mut c_void)>,
    args: *mut c_void,
    cb_args: size_t,
    num_mem_objects: cl_uint,
    mem_list: *const cl_mem,
    args_mem_loc: *mut *const c_void,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    let needs: Vec<(cl_mem, HostUse)> = if mem_list.is_null() {
        Vec::new()
    } else {
        std::slice::from_raw_parts(mem_list, num_mem_objects as usize).iter().map(|m| (*m, HostUse::Host)).collect()
    };
    host_access(command_queue, &needs, n, list, event, |n, l, ev| {
        api().clEnqueueNativeKernel(
            command_queue,
            user_func,
            args,
            cb_args,
            num_mem_objects,
            mem_list,
            args_mem_loc,
            n,
            l,
            ev,
        )
    })
}

pub unsafe fn clEnqueueNDRangeKernel(
    command_queue: cl_command_queue,
    kernel: cl_kernel,
    work_dim: cl_uint,
    global_work_offset: *const size_t,
    global_work_size: *const size_t,
    local_work_size: *const size_t,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let sizes =
        WorkSizes::Range { work_dim, offset: global_work_offset, global: global_work_size, local: local_work_size };
    let enqueue = |k, local: Option<usize>, n, l, ev| {
        // The staged copy may need a work-group size of its own (one its local memory holds).
        let own = local.map(|x| [x]);
        let local_work_size = own.as_ref().map_or(local_work_size, |a| a.as_ptr());
        api().clEnqueueNDRangeKernel(
            command_queue,
            k,
            work_dim,
            global_work_offset,
            global_work_size,
            local_work_size,
            n,
            l,
            ev,
        )
    };
    crate::runtime::cost::pace::app_launched();
    if !event.is_null() {
        crate::runtime::profiling::event_asked();
    }
    // With the application's event, if it asked one: the lane's launch is a stretch's member,
    // as the full path's would be (`access::WaitList::run`).
    if n == 0 {
        if let Some(r) =
            lane::again(command_queue, kernel, &sizes, |k, local| enqueue(k, local, 0, std::ptr::null(), event))
        {
            return r;
        }
    }
    launch::launch(command_queue, kernel, sizes.dims(), n, list, event, enqueue)
}

pub unsafe fn clEnqueueTask(
    command_queue: cl_command_queue,
    kernel: cl_kernel,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    if !event.is_null() {
        crate::runtime::profiling::event_asked();
    }
    if n == 0 {
        if let Some(r) = lane::again(command_queue, kernel, &WorkSizes::Task, |k, _| {
            api().clEnqueueTask(command_queue, k, 0, std::ptr::null(), event)
        }) {
            return r;
        }
    }
    launch::launch(command_queue, kernel, Dims::task(), n, list, event, |k, _, n, l, ev| {
        api().clEnqueueTask(command_queue, k, n, l, ev)
    })
}

// ---- enqueues that touch no tracked buffer but may hold up their queue ---------------------

pub unsafe fn clEnqueueMarkerWithWaitList(
    command_queue: cl_command_queue,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    order::forwarded(command_queue, n, list, event, false, |ev| {
        api().clEnqueueMarkerWithWaitList(command_queue, n, list, ev)
    })
}

pub unsafe fn clEnqueueBarrierWithWaitList(
    command_queue: cl_command_queue,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    order::forwarded(command_queue, n, list, event, true, |ev| {
        api().clEnqueueBarrierWithWaitList(command_queue, n, list, ev)
    })
}

pub unsafe fn clEnqueueWaitForEvents(
    command_queue: cl_command_queue,
    num_events: cl_uint,
    event_list: *const cl_event,
) -> cl_int {
    // No event to see its end: the queue's next commands count as not free until one of them
    // is seen to complete.
    order::forwarded(command_queue, num_events, event_list, std::ptr::null_mut(), true, |_| {
        api().clEnqueueWaitForEvents(command_queue, num_events, event_list)
    })
}

pub unsafe fn clEnqueueSVMFree(
    command_queue: cl_command_queue,
    num_svm_pointers: cl_uint,
    svm_pointers: *mut *mut c_void,
    pfn_free_func: Option<unsafe extern "C" fn(cl_command_queue, cl_uint, *mut *mut c_void, *mut c_void)>,
    user_data: *mut c_void,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    order::forwarded(command_queue, n, list, event, false, |ev| {
        api().clEnqueueSVMFree(command_queue, num_svm_pointers, svm_pointers, pfn_free_func, user_data, n, list, ev)
    })
}

pub unsafe fn clEnqueueSVMMemcpy(
    command_queue: cl_command_queue,
    blocking_copy: cl_bool,
    dst_ptr: *mut c_void,
    src_ptr: *const c_void,
    size: size_t,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    if blocking_copy != CL_FALSE {
        crate::runtime::cost::pace::app_waited();
    }
    order::forwarded(command_queue, n, list, event, false, |ev| {
        api().clEnqueueSVMMemcpy(command_queue, blocking_copy, dst_ptr, src_ptr, size, n, list, ev)
    })
}

pub unsafe fn clEnqueueSVMMemFill(
    command_queue: cl_command_queue,
    svm_ptr: *mut c_void,
    pattern: *const c_void,
    pattern_size: size_t,
    size: size_t,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    order::forwarded(command_queue, n, list, event, false, |ev| {
        api().clEnqueueSVMMemFill(command_queue, svm_ptr, pattern, pattern_size, size, n, list, ev)
    })
}

pub unsafe fn clEnqueueSVMMap(
    command_queue: cl_command_queue,
    blocking_map: cl_bool,
    flags: cl_map_flags,
    svm_ptr: *mut c_void,
    size: size_t,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    if blocking_map != CL_FALSE {
        crate::runtime::cost::pace::app_waited();
    }
    order::forwarded(command_queue, n, list, event, false, |ev| {
        api().clEnqueueSVMMap(command_queue, blocking_map, flags, svm_ptr, size, n, list, ev)
    })
}

pub unsafe fn clEnqueueSVMUnmap(
    command_queue: cl_command_queue,
    svm_ptr: *mut c_void,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    order::forwarded(command_queue, n, list, event, false, |ev| {
        api().clEnqueueSVMUnmap(command_queue, svm_ptr, n, list, ev)
    })
}

pub unsafe fn clEnqueueSVMMigrateMem(
    command_queue: cl_command_queue,
    num_svm_pointers: cl_uint,
    svm_pointers: *mut *const c_void,
    sizes: *const size_t,
    flags: cl_mem_migration_flags,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    order::forwarded(command_queue, n, list, event, false, |ev| {
        api().clEnqueueSVMMigrateMem(command_queue, num_svm_pointers, svm_pointers, sizes, flags, n, list, ev)
    })
}

// ---- images: an image made from a buffer shows the buffer's bytes --------------------------

pub unsafe fn clEnqueueReadImage(
    command_queue: cl_command_queue,
    image: cl_mem,
    blocking_read: cl_bool,
    origin: *const size_t,
    region: *const size_t,
    row_pitch: size_t,
    slice_pitch: size_t,
    ptr: *mut c_void,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    let call = |n, l, b, ev| {
        api().clEnqueueReadImage(command_queue, image, b, origin, region, row_pitch, slice_pitch, ptr, n, l, ev)
    };
    blocking_host_access(command_queue, &[(image, HostUse::Host)], n, list, status(blocking_read, event, call))
}

pub unsafe fn clEnqueueWriteImage(
    command_queue: cl_command_queue,
    image: cl_mem,
    blocking_write: cl_bool,
    origin: *const size_t,
    region: *const size_t,
    input_row_pitch: size_t,
    input_slice_pitch: size_t,
    ptr: *const c_void,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    let call = |n, l, b, ev| {
        api().clEnqueueWriteImage(
            command_queue,
            image,
            b,
            origin,
            region,
            input_row_pitch,
            input_slice_pitch,
            ptr,
            n,
            l,
            ev,
        )
    };
    blocking_host_access(command_queue, &[(image, HostUse::Host)], n, list, status(blocking_write, event, call))
}

pub unsafe fn clEnqueueFillImage(
    command_queue: cl_command_queue,
    image: cl_mem,
    fill_color: *const c_void,
    origin: *const size_t,
    region: *const size_t,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    host_access(command_queue, &[(image, HostUse::Host)], n, list, event, |n, l, ev| {
        api().clEnqueueFillImage(command_queue, image, fill_color, origin, region, n, l, ev)
    })
}

pub unsafe fn clEnqueueCopyImage(
    command_queue: cl_command_queue,
    src_image: cl_mem,
    dst_image: cl_mem,
    src_origin: *const size_t,
    dst_origin: *const size_t,
    region: *const size_t,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    crate::runtime::profiling::note_event(event);
    host_access(command_queue, &[(src_image, HostUse::Host), (dst_image, HostUse::Host)], n, list, event, |n, l, ev| {
        api().clEnqueueCopyImage(command_queue, src_image, dst_image, src_origin, dst_origin, region, n, l, ev)
    })
}

pub unsafe fn clEnqueueMapImage(
    command_queue: cl_command_queue,
    image: cl_mem,
    blocking_map: cl_bool,
    map_flags: cl_map_flags,
    origin: *const size_t,
    region: *const size_t,
    image_row_pitch: *mut size_t,
    image_slice_pitch: *mut size_t,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    crate::runtime::profiling::note_event(event);
    let call = |n, l, b, ev| {
        api().clEnqueueMapImage(
            command_queue,
            image,
            b,
            map_flags,
            origin,
            region,
            image_row_pitch,
            image_slice_pitch,
            n,
            l,
            ev,
            errcode_ret,
        )
    };
    mapped(command_queue, image, 0, blocking_map, n, list, event, errcode_ret, call)
}
