"""pyopencl smoke test for clayout's shim (tests/shim.rs runs it with and without LD_PRELOAD).

pyopencl's PyPI wheel bundles its own ICD loader (pyopencl/.libs/libOpenCL-<hash>.so.*),
which its extension module links to; Python loads the extension with RTLD_LOCAL, so the
loader is not in the global scope where the shim's RTLD_NEXT lookup would find it.

Output is deterministic (values and checksums only), ending with "calls NAME N" lines for the
entry points whose number of calls this script fixes itself.
"""
import hashlib
import sys

import numpy as np
import pyopencl as cl

SRC = """
__kernel void poly(__global const float *x, __global float *y, const float a, const int n) {
    int i = get_global_id(0);
    if (i < n) y[i] = a * x[i] * x[i] + 2.0f * x[i] + 1.0f;
}
"""

N = 10000
ROUNDS = 5


def main():
    platforms = cl.get_platforms()
    devices = [d for p in platforms for d in p.get_devices()]
    if not devices:
        print("FAIL no OpenCL device")
        return 1
    ctx = cl.Context([devices[0]])
    queue = cl.CommandQueue(ctx)
    prog = cl.Program(ctx, SRC).build(options=["-cl-std=CL1.2"])
    knl = cl.Kernel(prog, "poly")

    x = (np.arange(N, dtype=np.float32) % 23) * np.float32(0.5)
    y = np.zeros_like(x)
    mf = cl.mem_flags
    bx = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    by = cl.Buffer(ctx, mf.WRITE_ONLY, y.nbytes)

    total = np.zeros_like(x)
    for r in range(ROUNDS):
        # set_arg one by one, so the number of clSetKernelArg calls is exact.
        knl.set_arg(0, bx)
        knl.set_arg(1, by)
        knl.set_arg(2, np.float32(r + 1))
        knl.set_arg(3, np.int32(N))
        cl.enqueue_nd_range_kernel(queue, knl, (N,), None)
        cl.enqueue_copy(queue, y, by)
        queue.finish()
        total += y

    expect = sum((np.float32(r + 1) * x * x + 2 * x + 1) for r in range(ROUNDS))
    print(f"y[0]={total[0]:.2f} y[1]={total[1]:.2f} y[{N - 1}]={total[N - 1]:.2f}")
    print(f"sum={float(total.sum(dtype=np.float64)):.2f}")
    print(f"sha256={hashlib.sha256(total.tobytes()).hexdigest()[:16]}")
    print(f"matches numpy: {bool(np.allclose(total, expect))}")
    print(f"calls clSetKernelArg {4 * ROUNDS}")
    print(f"calls clEnqueueNDRangeKernel {ROUNDS}")
    print("calls clCreateKernel 1")
    print("pyopencl: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
