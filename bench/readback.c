/* readback: what a read of a buffer that clayout keeps in ASTA costs, against the same read
 * without clayout (docs/results.md, "Conversions beside transfers"). N bodies of 5 floats
 * (default 2^25, 640 MiB, the blackscholes sample's large size); each round launches one time
 * step (under CLAYOUT_POLICY=always it leaves the buffer in ASTA) and then reads the whole
 * buffer, blocking, into pinned memory (a mapped CL_MEM_ALLOC_HOST_PTR buffer) or, with
 * READBACK_MALLOC=1, into malloc'd memory. Prints the median over ROUNDS of the read alone
 * (from its enqueue to its return: under clayout the conversion back is in it) and a checksum.
 * Usage: readback [PLATFORM] [N] [ROUNDS] */
#include "../samples/common/sample.h"

static const char *src =
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "typedef struct { float px, py, pz, vel, mass; } Body;\n"
    "//DL: AoS: bodies[numBodies]\n"
    "__kernel void integrateBodies(__global Body *bodies, uint numBodies, float deltaTime) {\n"
    "  uint index = get_global_id(0);\n"
    "  if (index >= numBodies) return;\n"
    "  Body b = bodies[index];\n"
    "  b.px += b.vel * deltaTime;\n"
    "  b.vel = b.vel * 0.99f + b.px * deltaTime;\n"
    "  bodies[index] = b;\n"
    "}\n";

int main(int argc, char **argv)
{
    sample_cl s;
    sample_open(&s, argc > 1 ? argv[1] : NULL);
    cl_uint n = argc > 2 ? (cl_uint)strtoul(argv[2], NULL, 10) : 33554432u;
    int rounds = argc > 3 ? atoi(argv[3]) : 9;
    size_t bytes = (size_t)n * 20;
    cl_int err;
    cl_program p = clCreateProgramWithSource(s.context, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(p, 1, &s.device, "", NULL, NULL));
    cl_kernel k = clCreateKernel(p, "integrateBodies", &err);
    CHECK(err);
    float *host;
    cl_mem pinned = NULL;
    const char *use_malloc = getenv("READBACK_MALLOC");
    if (use_malloc && *use_malloc && strcmp(use_malloc, "0")) {
        host = malloc(bytes);
    } else {
        pinned = clCreateBuffer(s.context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &err);
        CHECK(err);
        host = clEnqueueMapBuffer(s.queue, pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL, NULL, &err);
        CHECK(err);
    }
    for (size_t i = 0; i < bytes / 4; i++) host[i] = (float)(i % 113) * 0.125f;
    cl_mem buf = clCreateBuffer(s.context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CHECK(err);
    CHECK(clEnqueueWriteBuffer(s.queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
    float dt = 0.016f;
    CHECK(clSetKernelArg(k, 0, sizeof buf, &buf));
    CHECK(clSetKernelArg(k, 1, sizeof n, &n));
    CHECK(clSetKernelArg(k, 2, sizeof dt, &dt));
    size_t global = n, local = 256;
    global = (global + local - 1) / local * local;
    double *t = malloc(rounds * sizeof *t);
    uint64_t sum = 0xcbf29ce484222325ull;
    for (int r = 0; r < rounds + 1; r++) {
        CHECK(clEnqueueNDRangeKernel(s.queue, k, 1, NULL, &global, &local, 0, NULL, NULL));
        CHECK(clFinish(s.queue));
        double t0 = sample_now_ms();
        CHECK(clEnqueueReadBuffer(s.queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
        if (r) t[r - 1] = sample_now_ms() - t0;
        sum = sample_fnv(host, bytes, sum);
    }
    for (int a = 1; a < rounds; a++)
        for (int b = a; b > 0 && t[b - 1] > t[b]; b--) { double x = t[b]; t[b] = t[b - 1]; t[b - 1] = x; }
    printf("%s read_ms median %.3f min %.3f max %.3f checksum %016llx\n", pinned ? "pinned" : "malloc",
           t[rounds / 2], t[0], t[rounds - 1], (unsigned long long)sum);
    return 0;
}
