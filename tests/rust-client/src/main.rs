//! A small Rust OpenCL client for clayout's shim tests (tests/shim.rs runs it with and without
//! LD_PRELOAD=libclayout.so). It calls OpenCL through opencl3 built with its "static" feature,
//! i.e. through symbols linked from libOpenCL, which is what LD_PRELOAD interposes.
//!
//! Output is deterministic: values and checksums, then one `calls NAME N` line for each entry
//! point whose number of calls this program knows exactly (the harness compares them with the
//! shim's statistics).

use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::context::Context;
use opencl3::device::{get_all_devices, Device, CL_DEVICE_TYPE_ALL};
use opencl3::kernel::{ExecuteKernel, Kernel};
use opencl3::memory::{Buffer, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE};
use opencl3::program::Program;
use opencl3::types::{cl_float, cl_int, CL_BLOCKING, CL_NON_BLOCKING};
use std::ptr;

const SOURCE: &str = r#"
__kernel void saxpy(__global float *z, __global const float *x, __global const float *y, float a, int round) {
    size_t i = get_global_id(0);
    z[i] = a * x[i] + y[i] + (float)round;
}
__kernel void accumulate(__global float *acc, __global const float *z) {
    size_t i = get_global_id(0);
    acc[i] += z[i];
}
"#;

const N: usize = 4096;
const ROUNDS: i32 = 25;

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| (h ^ *b as u64).wrapping_mul(0x100000001b3))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let device_id = *get_all_devices(CL_DEVICE_TYPE_ALL)?.first().ok_or("no OpenCL device")?;
    let device = Device::new(device_id);
    println!("device type cpu: {}", device.dev_type()? & opencl3::device::CL_DEVICE_TYPE_CPU != 0);

    let context = Context::from_device(&device)?;
    let queue = CommandQueue::create_default_with_properties(&context, CL_QUEUE_PROFILING_ENABLE, 0)?;
    let program = Program::create_and_build_from_source(&context, SOURCE, "-cl-std=CL1.2")
        .map_err(|log| format!("build failed: {log}"))?;
    let saxpy = Kernel::create(&program, "saxpy")?;
    let accumulate = Kernel::create(&program, "accumulate")?;
    println!("kernel: {} args {}", saxpy.function_name()?, saxpy.num_args()?);

    let xs: Vec<cl_float> = (0..N).map(|i| (i % 13) as cl_float).collect();
    let ys: Vec<cl_float> = (0..N).map(|i| (i % 7) as cl_float * 0.5).collect();
    let zeros: Vec<cl_float> = vec![0.0; N];

    let mut x = unsafe { Buffer::<cl_float>::create(&context, CL_MEM_READ_ONLY, N, ptr::null_mut())? };
    let mut y = unsafe { Buffer::<cl_float>::create(&context, CL_MEM_READ_ONLY, N, ptr::null_mut())? };
    let z = unsafe { Buffer::<cl_float>::create(&context, CL_MEM_READ_WRITE, N, ptr::null_mut())? };
    let mut acc = unsafe { Buffer::<cl_float>::create(&context, CL_MEM_READ_WRITE, N, ptr::null_mut())? };
    unsafe {
        queue.enqueue_write_buffer(&mut x, CL_BLOCKING, 0, &xs, &[])?;
        queue.enqueue_write_buffer(&mut y, CL_BLOCKING, 0, &ys, &[])?;
        queue.enqueue_write_buffer(&mut acc, CL_BLOCKING, 0, &zeros, &[])?;
    }

    let a: cl_float = 3.0;
    let mut set_args = 0u64;
    let mut launches = 0u64;
    for round in 0..ROUNDS {
        let r: cl_int = round;
        unsafe {
            ExecuteKernel::new(&saxpy)
                .set_arg(&z)
                .set_arg(&x)
                .set_arg(&y)
                .set_arg(&a)
                .set_arg(&r)
                .set_global_work_size(N)
                .enqueue_nd_range(&queue)?;
            ExecuteKernel::new(&accumulate)
                .set_arg(&acc)
                .set_arg(&z)
                .set_global_work_size(N)
                .enqueue_nd_range(&queue)?;
        }
        set_args += 7;
        launches += 2;
    }
    queue.finish()?;

    let mut out = vec![0.0 as cl_float; N];
    let read = unsafe { queue.enqueue_read_buffer(&acc, CL_NON_BLOCKING, 0, &mut out, &[])? };
    read.wait()?;
    let sum: f64 = out.iter().map(|v| *v as f64).sum();
    let bytes: Vec<u8> = out.iter().flat_map(|v| v.to_le_bytes()).collect();
    println!("acc[0]={:.2} acc[1]={:.2} acc[{}]={:.2}", out[0], out[1], N - 1, out[N - 1]);
    println!("sum={sum:.2} fnv={:016x}", fnv1a(&bytes));

    // Entry points whose number of calls is fixed by the code above.
    println!("calls clCreateKernel 2");
    println!("calls clCreateBuffer 4");
    println!("calls clEnqueueWriteBuffer 3");
    println!("calls clSetKernelArg {set_args}");
    println!("calls clEnqueueNDRangeKernel {launches}");
    println!("calls clEnqueueReadBuffer 1");
    println!("calls clCreateCommandQueueWithProperties 1");
    println!("calls clCreateProgramWithSource 1");
    println!("calls clBuildProgram 1");
    println!("rust-client: ok");
    Ok(())
}
