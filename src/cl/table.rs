//! The one table of exported OpenCL entry points: name, C signature, and whether clayout
//! observes the call (`hook`, routed through `crate::hooks`) or forwards it untouched (`fwd`).
//! Bootstrapped by tools/gen_api_table.py from cl.h; edited by hand since.
//!
//! `api_table!(m)` hands the whole table to macro `m`: `cl::api` makes the real library's
//! function pointers (`Api`) and the call index (`FnId`) from it, `exports` the C entry points.
//! The module that invokes it must have `opencl_sys::*` and `libc::{c_char, c_void, size_t}`
//! in scope: the table's types resolve where it is expanded.

macro_rules! api_table {
    ($m:ident) => {
        $m! {
            fwd clGetPlatformIDs(num_entries: cl_uint, platforms: *mut cl_platform_id, num_platforms: *mut cl_uint) -> cl_int;
            fwd clGetPlatformInfo(platform: cl_platform_id, param_name: cl_platform_info, param_value_size: size_t, param_value: *mut c_void, param_value_size_ret: *mut size_t) -> cl_int;
            fwd clGetDeviceIDs(platform: cl_platform_id, device_type: cl_device_type, num_entries: cl_uint, devices: *mut cl_device_id, num_devices: *mut cl_uint) -> cl_int;
            fwd clGetDeviceInfo(device: cl_device_id, param_name: cl_device_info, param_value_size: size_t, param_value: *mut c_void, param_value_size_ret: *mut size_t) -> cl_int;
            fwd clCreateSubDevices(in_device: cl_device_id, properties: *const cl_device_partition_property, num_devices: cl_uint, out_devices: *mut cl_device_id, num_devices_ret: *mut cl_uint) -> cl_int;
            fwd clRetainDevice(device: cl_device_id) -> cl_int;
            fwd clReleaseDevice(device: cl_device_id) -> cl_int;
            fwd clSetDefaultDeviceCommandQueue(context: cl_context, device: cl_device_id, command_queue: cl_command_queue) -> cl_int;
            fwd clGetDeviceAndHostTimer(device: cl_device_id, device_timestamp: *mut cl_ulong, host_timestamp: *mut cl_ulong) -> cl_int;
            fwd clGetHostTimer(device: cl_device_id, host_timestamp: *mut cl_ulong) -> cl_int;
            hook clCreateContext(properties: *const cl_context_properties, num_devices: cl_uint, devices: *const cl_device_id, pfn_notify: Option<unsafe extern "C" fn(errinfo: *const c_char, private_info: *const c_void, cb: size_t, user_data: *mut c_void)>, user_data: *mut c_void, errcode_ret: *mut cl_int) -> cl_context;
            hook clCreateContextFromType(properties: *const cl_context_properties, device_type: cl_device_type, pfn_notify: Option<unsafe extern "C" fn(errinfo: *const c_char, private_info: *const c_void, cb: size_t, user_data: *mut c_void)>, user_data: *mut c_void, errcode_ret: *mut cl_int) -> cl_context;
            hook clRetainContext(context: cl_context) -> cl_int;
            hook clReleaseContext(context: cl_context) -> cl_int;
            hook clGetContextInfo(context: cl_context, param_name: cl_context_info, param_value_size: size_t, param_value: *mut c_void, param_value_size_ret: *mut size_t) -> cl_int;
            fwd clSetContextDestructorCallback(context: cl_context, pfn_notify: Option<unsafe extern "C" fn(context: cl_context, user_data: *mut c_void)>, user_data: *mut c_void) -> cl_int;
            hook clCreateCommandQueueWithProperties(context: cl_context, device: cl_device_id, properties: *const cl_queue_properties, errcode_ret: *mut cl_int) -> cl_command_queue;
            hook clRetainCommandQueue(command_queue: cl_command_queue) -> cl_int;
            hook clReleaseCommandQueue(command_queue: cl_command_queue) -> cl_int;
            hook clGetCommandQueueInfo(command_queue: cl_command_queue, param_name: cl_command_queue_info, param_value_size: size_t, param_value: *mut c_void, param_value_size_ret: *mut size_t) -> cl_int;
            hook clCreateBuffer(context: cl_context, flags: cl_mem_flags, size: size_t, host_ptr: *mut c_void, errcode_ret: *mut cl_int) -> cl_mem;
            hook clCreateSubBuffer(buffer: cl_mem, flags: cl_mem_flags, buffer_create_type: cl_buffer_create_type, buffer_create_info: *const c_void, errcode_ret: *mut cl_int) -> cl_mem;
            hook clCreateImage(context: cl_context, flags: cl_mem_flags, image_format: *const cl_image_format, image_desc: *const cl_image_desc, host_ptr: *mut c_void, errcode_ret: *mut cl_int) -> cl_mem;
            fwd clCreatePipe(context: cl_context, flags: cl_mem_flags, pipe_packet_size: cl_uint, pipe_max_packets: cl_uint, properties: *const cl_pipe_properties, errcode_ret: *mut cl_int) -> cl_mem;
            hook clCreateBufferWithProperties(context: cl_context, properties: *const cl_mem_properties, flags: cl_mem_flags, size: size_t, host_ptr: *mut c_void, errcode_ret: *mut cl_int) -> cl_mem;
            hook clCreateImageWithProperties(context: cl_context, properties: *const cl_mem_properties, flags: cl_mem_flags, image_format: *const cl_image_format, image_desc: *const cl_image_desc, host_ptr: *mut c_void, errcode_ret: *mut cl_int) -> cl_mem;
            hook clRetainMemObject(memobj: cl_mem) -> cl_int;
            hook clReleaseMemObject(memobj: cl_mem) -> cl_int;
            fwd clGetSupportedImageFormats(context: cl_context, flags: cl_mem_flags, image_type: cl_mem_object_type, num_entries: cl_uint, image_formats: *mut cl_image_format, num_image_formats: *mut cl_uint) -> cl_int;
            fwd clGetMemObjectInfo(memobj: cl_mem, param_name: cl_mem_info, param_value_size: size_t, param_value: *mut c_void, param_value_size_ret: *mut size_t) -> cl_int;
            fwd clGetImageInfo(image: cl_mem, param_name: cl_image_info, param_value_size: size_t, param_value: *mut c_void, param_value_size_ret: *mut size_t) -> cl_int;
            fwd clGetPipeInfo(pipe: cl_mem, param_name: cl_pipe_info, param_value_size: size_t, param_value: *mut c_void, param_value_size_ret: *mut size_t) -> cl_int;
            hook clSetMemObjectDestructorCallback(memobj: cl_mem, pfn_notify: Option<unsafe extern "C" fn(memobj: cl_mem, user_data: *mut c_void)>, user_data: *mut c_void) -> cl_int;
            fwd clSVMAlloc(context: cl_context, flags: cl_svm_mem_flags, size: size_t, alignment: cl_uint) -> *mut c_void;
            fwd clSVMFree(context: cl_context, svm_pointer: *mut c_void) -> ();
            fwd clCreateSamplerWithProperties(context: cl_context, sampler_properties: *const cl_sampler_properties, errcode_ret: *mut cl_int) -> cl_sampler;
            fwd clRetainSampler(sampler: cl_sampler) -> cl_int;
            fwd clReleaseSampler(sampler: cl_sampler) -> cl_int;
            fwd clGetSamplerInfo(sampler: cl_sampler, param_name: cl_sampler_info, param_value_size: size_t, param_value: *mut c_void, param_value_size_ret: *mut size_t) -> cl_int;
            hook clCreateProgramWithSource(context: cl_context, count: cl_uint, strings: *mut *const c_char, lengths: *const size_t, errcode_ret: *mut cl_int) -> cl_program;
            hook clCreateProgramWithBinary(context: cl_context, num_devices: cl_uint, device_list: *const cl_device_id, lengths: *const size_t, binaries: *mut *const ::core::ffi::c_uchar, binary_status: *mut cl_int, errcode_ret: *mut cl_int) -> cl_program;
            hook clCreateProgramWithBuiltInKernels(context: cl_context, num_devices: cl_uint, device_list: *const cl_device_id, kernel_names: *const c_char, errcode_ret: *mut cl_int) -> cl_program;
            hook clCreateProgramWithIL(context: cl_context, il: *const c_void, length: size_t, errcode_ret: *mut cl_int) -> cl_program;
            hook clRetainProgram(program: cl_program) -> cl_int;
            hook clReleaseProgram(program: cl_program) -> cl_int;
            hook clBuildProgram(program: cl_program, num_devices: cl_uint, device_list: *const cl_device_id, options: *const c_char, pfn_notify: Option<unsafe extern "C" fn(program: cl_program, user_data: *mut c_void)>, user_data: *mut c_void) -> cl_int;
            hook clCompileProgram(program: cl_program, num_devices: cl_uint, device_list: *const cl_device_id, options: *const c_char, num_input_headers: cl_uint, input_headers: *const cl_program, header_include_names: *mut *const c_char, pfn_notify: Option<unsafe extern "C" fn(program: cl_program, user_data: *mut c_void)>, user_data: *mut c_void) -> cl_int;
            hook clLinkProgram(context: cl_context, num_devices: cl_uint, device_list: *const cl_device_id, options: *const c_char, num_input_programs: cl_uint, input_programs: *const cl_program, pfn_notify: Option<unsafe extern "C" fn(program: cl_program, user_data: *mut c_void)>, user_data: *mut c_void, errcode_ret: *mut cl_int) -> cl_program;
            fwd clSetProgramReleaseCallback(program: cl_program, pfn_notify: Option<unsafe extern "C" fn(program: cl_program, user_data: *mut c_void)>, user_data: *mut c_void) -> cl_int;
            fwd clSetProgramSpecializationConstant(program: cl_program, spec_id: cl_uint, spec_size: size_t, spec_value: *const c_void) -> cl_int;
            fwd clUnloadPlatformCompiler(platform: cl_platform_id) -> cl_int;
            hook clGetProgramInfo(program: cl_program, param_name: cl_program_info, param_value_size: size_t, param_value: *mut c_void, param_value_size_ret: *mut size_t) -> cl_int;
            fwd clGetProgramBuildInfo(program: cl_program, device: cl_device_id, param_name: cl_program_build_info, param_value_size: size_t, param_value: *mut c_void, param_value_size_ret: *mut size_t) -> cl_int;
            hook clCreateKernel(program: cl_program, kernel_name: *const c_char, errcode_ret: *mut cl_int) -> cl_kernel;
            hook clCreateKernelsInProgram(program: cl_program, num_kernels: cl_uint, kernels: *mut cl_kernel, num_kernels_ret: *mut cl_uint) -> cl_int;
            hook clCloneKernel(source_kernel: cl_kernel, errcode_ret: *mut cl_int) -> cl_kernel;
            hook clRetainKernel(kernel: cl_kernel) -> cl_int;
            hook clReleaseKernel(kernel: cl_kernel) -> cl_int;
            hook clSetKernelArg(kernel: cl_kernel, arg_index: cl_uint, arg_size: size_t, arg_value: *const c_void) -> cl_int;
            hook clSetKernelArgSVMPointer(kernel: cl_kernel, arg_index: cl_uint, arg_value: *const c_void) -> cl_int;
            fwd clSetKernelExecInfo(kernel: cl_kernel, param_name: cl_kernel_exec_info, param_value_size: size_t, param_value: *const c_void) -> cl_int;
            fwd clGetKernelInfo(kernel: cl_kernel, param_name: cl_kernel_info, param_value_size: size_t, param_value: *mut c_void, param_value_size_ret: *mut size_t) -> cl_int;
            fwd clGetKernelArgInfo(kernel: cl_kernel, arg_index: cl_uint, param_name: cl_kernel_arg_info, param_value_size: size_t, param_value: *mut c_void, param_value_size_ret: *mut size_t) -> cl_int;
            fwd clGetKernelWorkGroupInfo(kernel: cl_kernel, device: cl_device_id, param_name: cl_kernel_work_group_info, param_value_size: size_t, param_value: *mut c_void, param_value_size_ret: *mut size_t) -> cl_int;
            fwd clGetKernelSubGroupInfo(kernel: cl_kernel, device: cl_device_id, param_name: cl_kernel_sub_group_info, input_value_size: size_t, input_value: *const c_void, param_value_size: size_t, param_value: *mut c_void, param_value_size_ret: *mut size_t) -> cl_int;
            hook clWaitForEvents(num_events: cl_uint, event_list: *const cl_event) -> cl_int;
            hook clGetEventInfo(event: cl_event, param_name: cl_event_info, param_value_size: size_t, param_value: *mut c_void, param_value_size_ret: *mut size_t) -> cl_int;
            fwd clCreateUserEvent(context: cl_context, errcode_ret: *mut cl_int) -> cl_event;
            fwd clRetainEvent(event: cl_event) -> cl_int;
            fwd clReleaseEvent(event: cl_event) -> cl_int;
            fwd clSetUserEventStatus(event: cl_event, execution_status: cl_int) -> cl_int;
            hook clSetEventCallback(event: cl_event, command_exec_callback_type: cl_int, pfn_notify: Option<unsafe extern "C" fn(event: cl_event, event_command_status: cl_int, user_data: *mut c_void)>, user_data: *mut c_void) -> cl_int;
            hook clGetEventProfilingInfo(event: cl_event, param_name: cl_profiling_info, param_value_size: size_t, param_value: *mut c_void, param_value_size_ret: *mut size_t) -> cl_int;
            fwd clFlush(command_queue: cl_command_queue) -> cl_int;
            hook clFinish(command_queue: cl_command_queue) -> cl_int;
            hook clEnqueueReadBuffer(command_queue: cl_command_queue, buffer: cl_mem, blocking_read: cl_bool, offset: size_t, size: size_t, ptr: *mut c_void, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueReadBufferRect(command_queue: cl_command_queue, buffer: cl_mem, blocking_read: cl_bool, buffer_origin: *const size_t, host_origin: *const size_t, region: *const size_t, buffer_row_pitch: size_t, buffer_slice_pitch: size_t, host_row_pitch: size_t, host_slice_pitch: size_t, ptr: *mut c_void, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueWriteBuffer(command_queue: cl_command_queue, buffer: cl_mem, blocking_write: cl_bool, offset: size_t, size: size_t, ptr: *const c_void, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueWriteBufferRect(command_queue: cl_command_queue, buffer: cl_mem, blocking_write: cl_bool, buffer_origin: *const size_t, host_origin: *const size_t, region: *const size_t, buffer_row_pitch: size_t, buffer_slice_pitch: size_t, host_row_pitch: size_t, host_slice_pitch: size_t, ptr: *const c_void, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueFillBuffer(command_queue: cl_command_queue, buffer: cl_mem, pattern: *const c_void, pattern_size: size_t, offset: size_t, size: size_t, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueCopyBuffer(command_queue: cl_command_queue, src_buffer: cl_mem, dst_buffer: cl_mem, src_offset: size_t, dst_offset: size_t, size: size_t, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueCopyBufferRect(command_queue: cl_command_queue, src_buffer: cl_mem, dst_buffer: cl_mem, src_origin: *const size_t, dst_origin: *const size_t, region: *const size_t, src_row_pitch: size_t, src_slice_pitch: size_t, dst_row_pitch: size_t, dst_slice_pitch: size_t, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueReadImage(command_queue: cl_command_queue, image: cl_mem, blocking_read: cl_bool, origin: *const size_t, region: *const size_t, row_pitch: size_t, slice_pitch: size_t, ptr: *mut c_void, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueWriteImage(command_queue: cl_command_queue, image: cl_mem, blocking_write: cl_bool, origin: *const size_t, region: *const size_t, input_row_pitch: size_t, input_slice_pitch: size_t, ptr: *const c_void, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueFillImage(command_queue: cl_command_queue, image: cl_mem, fill_color: *const c_void, origin: *const size_t, region: *const size_t, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueCopyImage(command_queue: cl_command_queue, src_image: cl_mem, dst_image: cl_mem, src_origin: *const size_t, dst_origin: *const size_t, region: *const size_t, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueCopyImageToBuffer(command_queue: cl_command_queue, src_image: cl_mem, dst_buffer: cl_mem, src_origin: *const size_t, region: *const size_t, dst_offset: size_t, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueCopyBufferToImage(command_queue: cl_command_queue, src_buffer: cl_mem, dst_image: cl_mem, src_offset: size_t, dst_origin: *const size_t, region: *const size_t, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueMapBuffer(command_queue: cl_command_queue, buffer: cl_mem, blocking_map: cl_bool, map_flags: cl_map_flags, offset: size_t, size: size_t, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event, errcode_ret: *mut cl_int) -> *mut c_void;
            hook clEnqueueMapImage(command_queue: cl_command_queue, image: cl_mem, blocking_map: cl_bool, map_flags: cl_map_flags, origin: *const size_t, region: *const size_t, image_row_pitch: *mut size_t, image_slice_pitch: *mut size_t, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event, errcode_ret: *mut cl_int) -> *mut c_void;
            hook clEnqueueUnmapMemObject(command_queue: cl_command_queue, memobj: cl_mem, mapped_ptr: *mut c_void, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueMigrateMemObjects(command_queue: cl_command_queue, num_mem_objects: cl_uint, mem_objects: *const cl_mem, flags: cl_mem_migration_flags, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueNDRangeKernel(command_queue: cl_command_queue, kernel: cl_kernel, work_dim: cl_uint, global_work_offset: *const size_t, global_work_size: *const size_t, local_work_size: *const size_t, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueNativeKernel(command_queue: cl_command_queue, user_func: Option<unsafe extern "C" fn(arg1: *mut c_void)>, args: *mut c_void, cb_args: size_t, num_mem_objects: cl_uint, mem_list: *const cl_mem, args_mem_loc: *mut *const c_void, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueMarkerWithWaitList(command_queue: cl_command_queue, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueBarrierWithWaitList(command_queue: cl_command_queue, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueSVMFree(command_queue: cl_command_queue, num_svm_pointers: cl_uint, svm_pointers: *mut *mut c_void, pfn_free_func: Option<unsafe extern "C" fn(queue: cl_command_queue, num_svm_pointers: cl_uint, svm_pointers: *mut *mut c_void, user_data: *mut c_void)>, user_data: *mut c_void, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueSVMMemcpy(command_queue: cl_command_queue, blocking_copy: cl_bool, dst_ptr: *mut c_void, src_ptr: *const c_void, size: size_t, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueSVMMemFill(command_queue: cl_command_queue, svm_ptr: *mut c_void, pattern: *const c_void, pattern_size: size_t, size: size_t, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueSVMMap(command_queue: cl_command_queue, blocking_map: cl_bool, flags: cl_map_flags, svm_ptr: *mut c_void, size: size_t, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueSVMUnmap(command_queue: cl_command_queue, svm_ptr: *mut c_void, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clEnqueueSVMMigrateMem(command_queue: cl_command_queue, num_svm_pointers: cl_uint, svm_pointers: *mut *const c_void, sizes: *const size_t, flags: cl_mem_migration_flags, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            hook clGetExtensionFunctionAddressForPlatform(platform: cl_platform_id, func_name: *const c_char) -> *mut c_void;
            fwd clCreateImage2D(context: cl_context, flags: cl_mem_flags, image_format: *const cl_image_format, image_width: size_t, image_height: size_t, image_row_pitch: size_t, host_ptr: *mut c_void, errcode_ret: *mut cl_int) -> cl_mem;
            fwd clCreateImage3D(context: cl_context, flags: cl_mem_flags, image_format: *const cl_image_format, image_width: size_t, image_height: size_t, image_depth: size_t, image_row_pitch: size_t, image_slice_pitch: size_t, host_ptr: *mut c_void, errcode_ret: *mut cl_int) -> cl_mem;
            fwd clEnqueueMarker(command_queue: cl_command_queue, event: *mut cl_event) -> cl_int;
            hook clEnqueueWaitForEvents(command_queue: cl_command_queue, num_events: cl_uint, event_list: *const cl_event) -> cl_int;
            fwd clEnqueueBarrier(command_queue: cl_command_queue) -> cl_int;
            fwd clUnloadCompiler() -> cl_int;
            hook clGetExtensionFunctionAddress(func_name: *const c_char) -> *mut c_void;
            hook clCreateCommandQueue(context: cl_context, device: cl_device_id, properties: cl_command_queue_properties, errcode_ret: *mut cl_int) -> cl_command_queue;
            fwd clCreateSampler(context: cl_context, normalized_coords: cl_bool, addressing_mode: cl_addressing_mode, filter_mode: cl_filter_mode, errcode_ret: *mut cl_int) -> cl_sampler;
            hook clEnqueueTask(command_queue: cl_command_queue, kernel: cl_kernel, num_events_in_wait_list: cl_uint, event_wait_list: *const cl_event, event: *mut cl_event) -> cl_int;
            fwd clSetCommandQueueProperty(command_queue: cl_command_queue, properties: cl_command_queue_properties, enable: cl_bool, old_properties: *mut cl_command_queue_properties) -> cl_int;
        }
    };
}
pub(crate) use api_table;
