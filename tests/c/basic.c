/* basic.c: a single-threaded tour of the OpenCL API, for the clayout shim tests.
 *
 * Build: cc -O1 -o basic basic.c -lOpenCL   (CL_TARGET_OPENCL_VERSION=300 is set in common.h)
 *
 * Prints deterministic values and checksums, then one "calls NAME N" line per entry point it
 * called (see common.h). Exit code 0 on success, 1 on an unexpected OpenCL error, 2 when a
 * callback never came. Uses the deprecated clCreateCommandQueue, clEnqueueTask,
 * clCreateImage2D, clCreateSampler and clGetExtensionFunctionAddress on purpose. */
#include "common.h"

#include <time.h>

static const char *SRC_MAIN =
    "#ifndef SCALE\n"
    "#error SCALE must come from the build options\n"
    "#endif\n"
    "__kernel void saxpy(__global const float *x, __global float *y, float a, int n) {\n"
    "    int i = get_global_id(0);\n"
    "    if (i < n) y[i] = a * x[i] + y[i] + SCALE;\n"
    "}\n"
    "__kernel void group_sum(__global const int *in, __global int *out, __local int *tmp) {\n"
    "    int l = get_local_id(0), ls = get_local_size(0);\n"
    "    tmp[l] = in[get_global_id(0)];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (int s = ls / 2; s > 0; s >>= 1) {\n"
    "        if (l < s) tmp[l] += tmp[l + s];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (l == 0) out[get_group_id(0)] = tmp[0];\n"
    "}\n";

/* A second source string of the same program, NUL-terminated (length 0 in the lengths array). */
static const char *SRC_MORE =
    "__kernel void serial_sum(__global const int *in, int n, __global long *out) {\n"
    "    long s = 0;\n"
    "    for (int i = 0; i < n; i++) s += (long)in[i] * (i + 1);\n"
    "    out[0] = s;\n"
    "}\n"
    "__kernel void add_one(__global int *buf) { buf[get_global_id(0)] += 1; }\n";

static const char *SRC_IMAGE =
    "__kernel void image_sum(__read_only image2d_t img, __global float *out) {\n"
    "    const sampler_t s = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST;\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    float4 p = read_imagef(img, s, (int2)(x, y));\n"
    "    out[y * get_global_size(0) + x] = p.x + 2.0f * p.y + 3.0f * p.z + 4.0f * p.w;\n"
    "}\n";

static const char *SRC_BROKEN = "__kernel void broken(__global int *p) { p[0] = undefined_name; }\n";

static atomic_int g_build_notified;
static atomic_int g_event_cb_status = -100;
static atomic_int g_event_cb_calls;
static atomic_int g_user_event_cb_calls;
static atomic_int g_mem_destroyed;
static atomic_int g_mem_destroyed_order;
static atomic_int g_ctx_errors;

static void CL_CALLBACK on_build(cl_program p, void *user) {
    (void)p;
    atomic_fetch_add(&g_build_notified, *(int *)user);
}

static void CL_CALLBACK on_event(cl_event e, cl_int status, void *user) {
    (void)e;
    (void)user;
    atomic_store(&g_event_cb_status, status);
    atomic_fetch_add(&g_event_cb_calls, 1);
}

static void CL_CALLBACK on_user_event(cl_event e, cl_int status, void *user) {
    (void)e;
    (void)status;
    (void)user;
    atomic_fetch_add(&g_user_event_cb_calls, 1);
}

static void CL_CALLBACK on_mem_destroyed(cl_mem m, void *user) {
    (void)m;
    /* Destructor callbacks run last-registered first: record the order seen. */
    int tag = *(int *)user;
    atomic_store(&g_mem_destroyed_order, atomic_load(&g_mem_destroyed_order) * 10 + tag);
    atomic_fetch_add(&g_mem_destroyed, 1);
}

static void CL_CALLBACK on_ctx_error(const char *errinfo, const void *pi, size_t cb, void *user) {
    (void)errinfo;
    (void)pi;
    (void)cb;
    (void)user;
    atomic_fetch_add(&g_ctx_errors, 1);
}

/* Waits up to 10 s for *flag to reach want; exits 2 (deterministically reported) otherwise. */
static void wait_for(atomic_int *flag, int want, const char *what) {
    for (int i = 0; i < 10000; i++) {
        if (atomic_load(flag) >= want)
            return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    printf("FAIL callback never came: %s\n", what);
    fflush(stdout);
    exit(2);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(void) {
    cl_int err;
    setvbuf(stdout, NULL, _IOLBF, 0); /* a crash still leaves the lines printed so far */

    /* ---- platforms and devices ---------------------------------------------------------- */
    cl_uint nplat = 0;
    CHECK("clGetPlatformIDs(count)", CL(clGetPlatformIDs, 0, NULL, &nplat));
    printf("platforms>=1: %s\n", nplat >= 1 ? "yes" : "no");
    cl_platform_id plats[16];
    if (nplat > 16)
        nplat = 16;
    CHECK("clGetPlatformIDs", CL(clGetPlatformIDs, nplat, plats, NULL));

    cl_platform_id plat = NULL;
    cl_device_id dev = NULL;
    for (cl_uint i = 0; i < nplat && !dev; i++) {
        cl_uint nd = 0;
        if (CL(clGetDeviceIDs, plats[i], CL_DEVICE_TYPE_ALL, 1, &dev, &nd) == CL_SUCCESS && nd > 0)
            plat = plats[i];
        else
            dev = NULL;
    }
    if (!dev) {
        printf("FAIL no OpenCL device\n");
        return 1;
    }
    char buf[1024];
    CHECK("clGetPlatformInfo(PROFILE)", CL(clGetPlatformInfo, plat, CL_PLATFORM_PROFILE, sizeof buf, buf, NULL));
    printf("platform profile: %s\n", buf);
    size_t sz = 0;
    CHECK("clGetPlatformInfo(VERSION size)", CL(clGetPlatformInfo, plat, CL_PLATFORM_VERSION, 0, NULL, &sz));
    printf("platform version string: %s\n", sz > 7 ? "present" : "short");

    cl_device_type dtype = 0;
    CHECK("clGetDeviceInfo(TYPE)", CL(clGetDeviceInfo, dev, CL_DEVICE_TYPE, sizeof dtype, &dtype, NULL));
    printf("device type: %s\n", (dtype & CL_DEVICE_TYPE_CPU) ? "CPU" : (dtype & CL_DEVICE_TYPE_GPU) ? "GPU" : "other");
    cl_bool has_images = CL_FALSE;
    CHECK("clGetDeviceInfo(IMAGE_SUPPORT)", CL(clGetDeviceInfo, dev, CL_DEVICE_IMAGE_SUPPORT, sizeof has_images, &has_images, NULL));
    cl_uint align_bits = 0;
    CHECK("clGetDeviceInfo(MEM_BASE_ADDR_ALIGN)", CL(clGetDeviceInfo, dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL));
    cl_command_queue_properties host_qprops = 0;
    CHECK("clGetDeviceInfo(QUEUE_ON_HOST_PROPERTIES)",
          CL(clGetDeviceInfo, dev, CL_DEVICE_QUEUE_ON_HOST_PROPERTIES, sizeof host_qprops, &host_qprops, NULL));
    size_t max_wg = 0;
    CHECK("clGetDeviceInfo(MAX_WORK_GROUP_SIZE)", CL(clGetDeviceInfo, dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_wg, &max_wg, NULL));
    printf("max work-group size >= 64: %s\n", max_wg >= 64 ? "yes" : "no");

    /* ---- context and queues ------------------------------------------------------------- */
    cl_context_properties cprops[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0};
    cl_context ctx = CL(clCreateContext, cprops, 1, &dev, on_ctx_error, NULL, &err);
    CHECK("clCreateContext", err);
    cl_uint ctx_ndev = 0;
    CHECK("clGetContextInfo", CL(clGetContextInfo, ctx, CL_CONTEXT_NUM_DEVICES, sizeof ctx_ndev, &ctx_ndev, NULL));
    printf("context devices: %u\n", ctx_ndev);

    cl_command_queue q1 = CL(clCreateCommandQueue, ctx, dev, 0, &err);
    CHECK("clCreateCommandQueue", err);
    cl_command_queue_properties want = CL_QUEUE_PROFILING_ENABLE;
    if (host_qprops & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
        want |= CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
    cl_queue_properties qprops[] = {CL_QUEUE_PROPERTIES, (cl_queue_properties)want, 0};
    cl_command_queue q2 = CL(clCreateCommandQueueWithProperties, ctx, dev, qprops, &err);
    CHECK("clCreateCommandQueueWithProperties", err);
    cl_command_queue_properties got = 0;
    CHECK("clGetCommandQueueInfo", CL(clGetCommandQueueInfo, q2, CL_QUEUE_PROPERTIES, sizeof got, &got, NULL));
    printf("queue2 profiling: %s, out-of-order: %s\n", (got & CL_QUEUE_PROFILING_ENABLE) ? "yes" : "no",
           (got & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) ? "yes" : "no");

    /* ---- programs ----------------------------------------------------------------------- */
    const char *srcs[2] = {SRC_MAIN, SRC_MORE};
    size_t lens[2] = {strlen(SRC_MAIN), 0};
    cl_program prog = CL(clCreateProgramWithSource, ctx, 2, srcs, lens, &err);
    CHECK("clCreateProgramWithSource", err);
    static int build_tag = 1;
    err = CL(clBuildProgram, prog, 1, &dev, "-DSCALE=0.5f -cl-mad-enable", on_build, &build_tag);
    CHECK("clBuildProgram", err);
    wait_for(&g_build_notified, 1, "build notification");
    cl_build_status bstat = 0;
    CHECK("clGetProgramBuildInfo", CL(clGetProgramBuildInfo, prog, dev, CL_PROGRAM_BUILD_STATUS, sizeof bstat, &bstat, NULL));
    printf("build status: %s, notified: %d\n", bstat == CL_BUILD_SUCCESS ? "success" : "other", atomic_load(&g_build_notified));
    CHECK("clGetProgramBuildInfo(OPTIONS)", CL(clGetProgramBuildInfo, prog, dev, CL_PROGRAM_BUILD_OPTIONS, sizeof buf, buf, NULL));
    printf("build options: %s\n", buf);

    cl_program broken = CL(clCreateProgramWithSource, ctx, 1, &SRC_BROKEN, NULL, &err);
    CHECK("clCreateProgramWithSource(broken)", err);
    err = CL(clBuildProgram, broken, 1, &dev, "", NULL, NULL);
    printf("broken program builds: %s\n", cl_err_name(err));
    CHECK("clReleaseProgram(broken)", CL(clReleaseProgram, broken));

    /* ---- kernels ------------------------------------------------------------------------ */
    cl_kernel saxpy = CL(clCreateKernel, prog, "saxpy", &err);
    CHECK("clCreateKernel(saxpy)", err);
    cl_kernel none = CL(clCreateKernel, prog, "no_such_kernel", &err);
    printf("unknown kernel: %s, null: %s\n", cl_err_name(err), none ? "no" : "yes");

    cl_uint nk = 0;
    CHECK("clCreateKernelsInProgram(count)", CL(clCreateKernelsInProgram, prog, 0, NULL, &nk));
    printf("kernels in program: %u\n", nk);
    cl_kernel all[8];
    if (nk > 8)
        nk = 8;
    CHECK("clCreateKernelsInProgram", CL(clCreateKernelsInProgram, prog, nk, all, NULL));
    char *names[8];
    cl_kernel group_sum = NULL, serial_sum = NULL, add_one = NULL;
    for (cl_uint i = 0; i < nk; i++) {
        char nm[64];
        CHECK("clGetKernelInfo(FUNCTION_NAME)", CL(clGetKernelInfo, all[i], CL_KERNEL_FUNCTION_NAME, sizeof nm, nm, NULL));
        names[i] = strdup(nm);
        if (!strcmp(nm, "group_sum"))
            group_sum = all[i];
        else if (!strcmp(nm, "serial_sum"))
            serial_sum = all[i];
        else if (!strcmp(nm, "add_one"))
            add_one = all[i];
        else
            CHECK("clReleaseKernel(extra)", CL(clReleaseKernel, all[i]));
    }
    qsort(names, nk, sizeof names[0], cmp_str);
    printf("kernel names:");
    for (cl_uint i = 0; i < nk; i++) {
        printf(" %s", names[i]);
        free(names[i]);
    }
    printf("\n");
    if (!group_sum || !serial_sum || !add_one) {
        printf("FAIL kernels missing\n");
        return 1;
    }
    cl_uint nargs = 0;
    CHECK("clGetKernelInfo(NUM_ARGS)", CL(clGetKernelInfo, saxpy, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL));
    printf("saxpy args: %u\n", nargs);

    /* ---- saxpy: buffers and scalars, NDRange on the in-order queue ------------------------ */
    enum { N = 1000 };
    float x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i % 17);
        y[i] = (float)(i % 5);
    }
    cl_mem bx = CL(clCreateBuffer, ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof x, x, &err);
    CHECK("clCreateBuffer(x)", err);
    cl_mem by = CL(clCreateBuffer, ctx, CL_MEM_READ_WRITE, sizeof y, NULL, &err);
    CHECK("clCreateBuffer(y)", err);
    CHECK("clEnqueueWriteBuffer(y)", CL(clEnqueueWriteBuffer, q1, by, CL_TRUE, 0, sizeof y, y, 0, NULL, NULL));
    float a = 2.0f;
    int n = N;
    CHECK("setarg saxpy 0", CL(clSetKernelArg, saxpy, 0, sizeof(cl_mem), &bx));
    CHECK("setarg saxpy 1", CL(clSetKernelArg, saxpy, 1, sizeof(cl_mem), &by));
    CHECK("setarg saxpy 2", CL(clSetKernelArg, saxpy, 2, sizeof a, &a));
    CHECK("setarg saxpy 3", CL(clSetKernelArg, saxpy, 3, sizeof n, &n));
    err = CL(clSetKernelArg, saxpy, 9, sizeof n, &n);
    printf("bad arg index: %s\n", cl_err_name(err));
    err = CL(clSetKernelArg, saxpy, 2, 1, &a);
    printf("bad arg size: %s\n", cl_err_name(err));
    size_t gsz = 1024, lsz = 64;
    CHECK("saxpy launch", CL(clEnqueueNDRangeKernel, q1, saxpy, 1, NULL, &gsz, NULL, 0, NULL, NULL));
    CHECK("clFinish(q1)", CL(clFinish, q1));
    float yout[N];
    CHECK("read y", CL(clEnqueueReadBuffer, q1, by, CL_TRUE, 0, sizeof yout, yout, 0, NULL, NULL));
    double ysum = 0;
    for (int i = 0; i < N; i++)
        ysum += yout[i];
    printf("saxpy: y[0]=%.2f y[1]=%.2f y[999]=%.2f sum=%.2f fnv=%016llx\n", yout[0], yout[1], yout[999], ysum,
           (unsigned long long)fnv1a(yout, sizeof yout));

    /* clCloneKernel copies the arguments already set: run the clone without setting any. */
    cl_kernel clone = CL(clCloneKernel, saxpy, &err);
    if (err == CL_SUCCESS && clone) {
        CHECK("clone launch", CL(clEnqueueNDRangeKernel, q1, clone, 1, NULL, &gsz, NULL, 0, NULL, NULL));
        CHECK("read y (clone)", CL(clEnqueueReadBuffer, q1, by, CL_TRUE, 0, sizeof yout, yout, 0, NULL, NULL));
        printf("clone: y[1]=%.2f fnv=%016llx\n", yout[1], (unsigned long long)fnv1a(yout, sizeof yout));
        CHECK("clReleaseKernel(clone)", CL(clReleaseKernel, clone));
    } else {
        printf("clone: %s\n", cl_err_name(err));
    }

    /* ---- group_sum: __local argument, out-of-order profiling queue, event callback ------- */
    enum { M = 1024 };
    int in[M];
    for (int i = 0; i < M; i++)
        in[i] = (i * 7919) % 1000 - 500;
    cl_mem bin = CL(clCreateBuffer, ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof in, in, &err);
    CHECK("clCreateBuffer(in)", err);
    cl_mem bgs = CL(clCreateBuffer, ctx, CL_MEM_WRITE_ONLY, (M / 64) * sizeof(int), NULL, &err);
    CHECK("clCreateBuffer(group sums)", err);
    CHECK("setarg group_sum 0", CL(clSetKernelArg, group_sum, 0, sizeof(cl_mem), &bin));
    CHECK("setarg group_sum 1", CL(clSetKernelArg, group_sum, 1, sizeof(cl_mem), &bgs));
    CHECK("setarg group_sum 2 (local)", CL(clSetKernelArg, group_sum, 2, lsz * sizeof(int), NULL));
    size_t gsz2 = M;
    cl_event ev_gs = NULL;
    CHECK("group_sum launch", CL(clEnqueueNDRangeKernel, q2, group_sum, 1, NULL, &gsz2, &lsz, 0, NULL, &ev_gs));
    CHECK("clSetEventCallback", CL(clSetEventCallback, ev_gs, CL_COMPLETE, on_event, NULL));
    CHECK("clWaitForEvents", CL(clWaitForEvents, 1, &ev_gs));
    wait_for(&g_event_cb_calls, 1, "event callback");
    cl_int evstat = 0;
    CHECK("clGetEventInfo", CL(clGetEventInfo, ev_gs, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof evstat, &evstat, NULL));
    cl_ulong t_start = 0, t_end = 0;
    CHECK("profiling start", CL(clGetEventProfilingInfo, ev_gs, CL_PROFILING_COMMAND_START, sizeof t_start, &t_start, NULL));
    CHECK("profiling end", CL(clGetEventProfilingInfo, ev_gs, CL_PROFILING_COMMAND_END, sizeof t_end, &t_end, NULL));
    printf("event: status=%d callback status=%d calls=%d profiling ordered: %s\n", evstat, atomic_load(&g_event_cb_status),
           atomic_load(&g_event_cb_calls), t_end >= t_start ? "yes" : "no");
    int gs[M / 64];
    cl_event ev_read = NULL;
    CHECK("read group sums", CL(clEnqueueReadBuffer, q2, bgs, CL_FALSE, 0, sizeof gs, gs, 1, &ev_gs, &ev_read));
    CHECK("clWaitForEvents(read)", CL(clWaitForEvents, 1, &ev_read));
    long total = 0, want_total = 0;
    for (int i = 0; i < M / 64; i++)
        total += gs[i];
    for (int i = 0; i < M; i++)
        want_total += in[i];
    printf("group_sum: g[0]=%d g[15]=%d total=%ld matches host: %s\n", gs[0], gs[15], total, total == want_total ? "yes" : "no");

    /* ---- serial_sum: clEnqueueTask (deprecated) ------------------------------------------ */
    cl_mem blong = CL(clCreateBuffer, ctx, CL_MEM_WRITE_ONLY, sizeof(cl_long), NULL, &err);
    CHECK("clCreateBuffer(long)", err);
    int m = M;
    CHECK("setarg serial_sum 0", CL(clSetKernelArg, serial_sum, 0, sizeof(cl_mem), &bin));
    CHECK("setarg serial_sum 1", CL(clSetKernelArg, serial_sum, 1, sizeof m, &m));
    CHECK("setarg serial_sum 2", CL(clSetKernelArg, serial_sum, 2, sizeof(cl_mem), &blong));
    CHECK("clEnqueueTask", CL(clEnqueueTask, q1, serial_sum, 0, NULL, NULL));
    cl_long ssum = 0;
    CHECK("read serial sum", CL(clEnqueueReadBuffer, q1, blong, CL_TRUE, 0, sizeof ssum, &ssum, 0, NULL, NULL));
    long long want_ssum = 0;
    for (int i = 0; i < M; i++)
        want_ssum += (long long)in[i] * (i + 1);
    printf("task: serial_sum=%lld matches host: %s\n", (long long)ssum, ssum == want_ssum ? "yes" : "no");

    /* ---- copy, fill, map/unmap ----------------------------------------------------------- */
    cl_mem bcopy = CL(clCreateBuffer, ctx, CL_MEM_READ_WRITE, sizeof in, NULL, &err);
    CHECK("clCreateBuffer(copy)", err);
    CHECK("clEnqueueCopyBuffer", CL(clEnqueueCopyBuffer, q1, bin, bcopy, 0, 0, sizeof in, 0, NULL, NULL));
    int pattern = 7;
    CHECK("clEnqueueFillBuffer", CL(clEnqueueFillBuffer, q1, bcopy, &pattern, sizeof pattern, 256 * sizeof(int), 256 * sizeof(int), 0, NULL, NULL));
    int *mapped = (int *)CL(clEnqueueMapBuffer, q1, bcopy, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, sizeof in, 0, NULL, NULL, &err);
    CHECK("clEnqueueMapBuffer", err);
    printf("copy+fill: [0]=%d [256]=%d [511]=%d [512]=%d fnv=%016llx\n", mapped[0], mapped[256], mapped[511], mapped[512],
           (unsigned long long)fnv1a(mapped, sizeof in));
    for (int i = 0; i < M; i++)
        mapped[i] = i;
    CHECK("clEnqueueUnmapMemObject", CL(clEnqueueUnmapMemObject, q1, bcopy, mapped, 0, NULL, NULL));
    int back[M];
    CHECK("read after unmap", CL(clEnqueueReadBuffer, q1, bcopy, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL));
    printf("map write-back: [1000]=%d fnv=%016llx\n", back[1000], (unsigned long long)fnv1a(back, sizeof back));

    /* ---- sub-buffer ---------------------------------------------------------------------- */
    size_t align = align_bits / 8 ? align_bits / 8 : 128;
    size_t origin_ints = align >= sizeof(int) ? align / sizeof(int) : 1;
    if (origin_ints < 64)
        origin_ints = ((64 + origin_ints - 1) / origin_ints) * origin_ints;
    cl_buffer_region region = {origin_ints * sizeof(int), 128 * sizeof(int)};
    cl_mem sub = CL(clCreateSubBuffer, bcopy, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    if (err == CL_SUCCESS) {
        CHECK("setarg add_one (sub)", CL(clSetKernelArg, add_one, 0, sizeof(cl_mem), &sub));
        size_t g = 128;
        CHECK("add_one on sub-buffer", CL(clEnqueueNDRangeKernel, q1, add_one, 1, NULL, &g, NULL, 0, NULL, NULL));
        CHECK("read parent", CL(clEnqueueReadBuffer, q1, bcopy, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL));
        long changed = 0;
        for (int i = 0; i < M; i++)
            changed += back[i] != i;
        printf("sub-buffer: changed=%ld fnv=%016llx\n", changed, (unsigned long long)fnv1a(back, sizeof back));
        size_t subsize = 0;
        CHECK("clGetMemObjectInfo(SIZE)", CL(clGetMemObjectInfo, sub, CL_MEM_SIZE, sizeof subsize, &subsize, NULL));
        printf("sub-buffer size: %zu\n", subsize);
        CHECK("clReleaseMemObject(sub)", CL(clReleaseMemObject, sub));
    } else {
        printf("sub-buffer: %s\n", cl_err_name(err));
    }

    /* ---- CL_MEM_USE_HOST_PTR ------------------------------------------------------------- */
    int *host = (int *)aligned_alloc(4096, 4096 * sizeof(int));
    for (int i = 0; i < 4096; i++)
        host[i] = 3 * i;
    cl_mem bhost = CL(clCreateBuffer, ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, 4096 * sizeof(int), host, &err);
    CHECK("clCreateBuffer(USE_HOST_PTR)", err);
    CHECK("setarg add_one (host)", CL(clSetKernelArg, add_one, 0, sizeof(cl_mem), &bhost));
    size_t g4096 = 4096;
    CHECK("add_one on host buffer", CL(clEnqueueNDRangeKernel, q1, add_one, 1, NULL, &g4096, NULL, 0, NULL, NULL));
    int *hm = (int *)CL(clEnqueueMapBuffer, q1, bhost, CL_TRUE, CL_MAP_READ, 0, 4096 * sizeof(int), 0, NULL, NULL, &err);
    CHECK("map host buffer", err);
    printf("use_host_ptr: mapped[4095]=%d host[4095]=%d fnv=%016llx\n", hm[4095], host[4095],
           (unsigned long long)fnv1a(host, 4096 * sizeof(int)));
    CHECK("unmap host buffer", CL(clEnqueueUnmapMemObject, q1, bhost, hm, 0, NULL, NULL));
    CHECK("clFinish", CL(clFinish, q1));

    /* ---- image (deprecated clCreateImage2D) and sampler ----------------------------------- */
    if (has_images) {
        cl_program iprog = CL(clCreateProgramWithSource, ctx, 1, &SRC_IMAGE, NULL, &err);
        CHECK("clCreateProgramWithSource(image)", err);
        CHECK("clBuildProgram(image)", CL(clBuildProgram, iprog, 1, &dev, NULL, NULL, NULL));
        cl_kernel isum = CL(clCreateKernel, iprog, "image_sum", &err);
        CHECK("clCreateKernel(image_sum)", err);
        enum { W = 8, H = 4 };
        float pix[W * H * 4];
        for (int i = 0; i < W * H * 4; i++)
            pix[i] = (float)((i * 3) % 11) * 0.25f;
        cl_image_format fmt = {CL_RGBA, CL_FLOAT};
        cl_mem img = CL(clCreateImage2D, ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, &fmt, W, H, 0, pix, &err);
        CHECK("clCreateImage2D", err);
        size_t iw = 0;
        CHECK("clGetImageInfo", CL(clGetImageInfo, img, CL_IMAGE_WIDTH, sizeof iw, &iw, NULL));
        float pix_back[W * H * 4];
        size_t org[3] = {0, 0, 0}, reg3[3] = {W, H, 1};
        CHECK("clEnqueueReadImage", CL(clEnqueueReadImage, q1, img, CL_TRUE, org, reg3, 0, 0, pix_back, 0, NULL, NULL));
        cl_mem bimg = CL(clCreateBuffer, ctx, CL_MEM_WRITE_ONLY, W * H * sizeof(float), NULL, &err);
        CHECK("clCreateBuffer(image out)", err);
        CHECK("setarg image_sum 0", CL(clSetKernelArg, isum, 0, sizeof(cl_mem), &img));
        CHECK("setarg image_sum 1", CL(clSetKernelArg, isum, 1, sizeof(cl_mem), &bimg));
        size_t g2[2] = {W, H};
        CHECK("image_sum launch", CL(clEnqueueNDRangeKernel, q1, isum, 2, NULL, g2, NULL, 0, NULL, NULL));
        float isout[W * H];
        CHECK("read image sums", CL(clEnqueueReadBuffer, q1, bimg, CL_TRUE, 0, sizeof isout, isout, 0, NULL, NULL));
        double is = 0;
        for (int i = 0; i < W * H; i++)
            is += isout[i];
        printf("image: width=%zu roundtrip equal: %s sum=%.2f fnv=%016llx\n", iw, memcmp(pix, pix_back, sizeof pix) ? "no" : "yes", is,
               (unsigned long long)fnv1a(isout, sizeof isout));
        cl_sampler smp = CL(clCreateSampler, ctx, CL_FALSE, CL_ADDRESS_CLAMP_TO_EDGE, CL_FILTER_NEAREST, &err);
        CHECK("clCreateSampler", err);
        CHECK("clRetainSampler", CL(clRetainSampler, smp));
        cl_uint src = 0;
        CHECK("clGetSamplerInfo", CL(clGetSamplerInfo, smp, CL_SAMPLER_REFERENCE_COUNT, sizeof src, &src, NULL));
        printf("sampler refcount after retain: %u\n", src);
        CHECK("clReleaseSampler", CL(clReleaseSampler, smp));
        CHECK("clReleaseSampler", CL(clReleaseSampler, smp));
        CHECK("clReleaseMemObject(bimg)", CL(clReleaseMemObject, bimg));
        CHECK("clReleaseMemObject(img)", CL(clReleaseMemObject, img));
        CHECK("clReleaseKernel(isum)", CL(clReleaseKernel, isum));
        CHECK("clReleaseProgram(iprog)", CL(clReleaseProgram, iprog));
    } else {
        printf("no images\n");
    }

    /* ---- user events, markers ------------------------------------------------------------- */
    cl_event uev = CL(clCreateUserEvent, ctx, &err);
    CHECK("clCreateUserEvent", err);
    CHECK("clSetEventCallback(user)", CL(clSetEventCallback, uev, CL_COMPLETE, on_user_event, NULL));
    int gated[4] = {11, 22, 33, 44};
    cl_event ev_w = NULL;
    CHECK("gated write", CL(clEnqueueWriteBuffer, q1, bcopy, CL_FALSE, 0, sizeof gated, gated, 1, &uev, &ev_w));
    cl_int wst = 0;
    CHECK("clGetEventInfo(gated)", CL(clGetEventInfo, ev_w, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof wst, &wst, NULL));
    printf("gated write before user event: %s\n", wst == CL_COMPLETE ? "complete" : "pending");
    CHECK("clSetUserEventStatus", CL(clSetUserEventStatus, uev, CL_COMPLETE));
    cl_event ev_mark = NULL;
    CHECK("clEnqueueMarkerWithWaitList", CL(clEnqueueMarkerWithWaitList, q1, 1, &ev_w, &ev_mark));
    CHECK("clWaitForEvents(marker)", CL(clWaitForEvents, 1, &ev_mark));
    wait_for(&g_user_event_cb_calls, 1, "user event callback");
    CHECK("read gated", CL(clEnqueueReadBuffer, q1, bcopy, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL));
    printf("gated write after user event: [0]=%d [3]=%d [4]=%d user callbacks=%d\n", back[0], back[3], back[4],
           atomic_load(&g_user_event_cb_calls));
    CHECK("clRetainEvent", CL(clRetainEvent, ev_w));
    cl_uint erc = 0;
    CHECK("clGetEventInfo(REFCOUNT)", CL(clGetEventInfo, ev_w, CL_EVENT_REFERENCE_COUNT, sizeof erc, &erc, NULL));
    printf("event refcount after retain >= 2: %s\n", erc >= 2 ? "yes" : "no");
    CHECK("clReleaseEvent", CL(clReleaseEvent, ev_w));
    CHECK("clReleaseEvent", CL(clReleaseEvent, ev_w));
    CHECK("clReleaseEvent", CL(clReleaseEvent, ev_mark));
    CHECK("clReleaseEvent", CL(clReleaseEvent, uev));
    CHECK("clReleaseEvent", CL(clReleaseEvent, ev_gs));
    CHECK("clReleaseEvent", CL(clReleaseEvent, ev_read));

    /* ---- retains and releases of every kind ----------------------------------------------- */
    CHECK("clRetainDevice", CL(clRetainDevice, dev));
    CHECK("clReleaseDevice", CL(clReleaseDevice, dev));
    CHECK("clRetainContext", CL(clRetainContext, ctx));
    CHECK("clReleaseContext", CL(clReleaseContext, ctx));
    CHECK("clRetainCommandQueue", CL(clRetainCommandQueue, q2));
    CHECK("clReleaseCommandQueue", CL(clReleaseCommandQueue, q2));
    CHECK("clRetainProgram", CL(clRetainProgram, prog));
    CHECK("clReleaseProgram", CL(clReleaseProgram, prog));
    CHECK("clRetainKernel", CL(clRetainKernel, saxpy));
    cl_uint krc = 0;
    CHECK("clGetKernelInfo(REFCOUNT)", CL(clGetKernelInfo, saxpy, CL_KERNEL_REFERENCE_COUNT, sizeof krc, &krc, NULL));
    printf("kernel refcount after retain: %u\n", krc);
    CHECK("clReleaseKernel", CL(clReleaseKernel, saxpy));
    CHECK("clRetainMemObject", CL(clRetainMemObject, bx));
    cl_uint mrc = 0;
    CHECK("clGetMemObjectInfo(REFCOUNT)", CL(clGetMemObjectInfo, bx, CL_MEM_REFERENCE_COUNT, sizeof mrc, &mrc, NULL));
    printf("buffer refcount after retain: %u\n", mrc);
    CHECK("clReleaseMemObject", CL(clReleaseMemObject, bx));

    /* ---- memory object destructor callbacks ---------------------------------------------- */
    static int tag1 = 1, tag2 = 2;
    CHECK("clSetMemObjectDestructorCallback", CL(clSetMemObjectDestructorCallback, bx, on_mem_destroyed, &tag1));
    CHECK("clSetMemObjectDestructorCallback", CL(clSetMemObjectDestructorCallback, bx, on_mem_destroyed, &tag2));
    CHECK("clReleaseMemObject(bx)", CL(clReleaseMemObject, bx));
    wait_for(&g_mem_destroyed, 2, "memory object destructor");
    printf("destructor callbacks: %d order=%d\n", atomic_load(&g_mem_destroyed), atomic_load(&g_mem_destroyed_order));

    /* ---- extension entry points ----------------------------------------------------------- */
    void *fp = CL(clGetExtensionFunctionAddressForPlatform, plat, "clIcdGetPlatformIDsKHR");
    printf("extension clIcdGetPlatformIDsKHR: %s\n", fp ? "found" : "missing");
    fp = CL(clGetExtensionFunctionAddressForPlatform, plat, "clNoSuchFunctionCLAYOUT");
    printf("extension clNoSuchFunctionCLAYOUT: %s\n", fp ? "found" : "missing");
    fp = CL(clGetExtensionFunctionAddress, "clNoSuchFunctionCLAYOUT");
    printf("extension (deprecated lookup) clNoSuchFunctionCLAYOUT: %s\n", fp ? "found" : "missing");

    /* ---- error paths: the shim must hand back the real library's error, never crash -------
     * (Left out because PoCL 3.1 itself crashes on them: clEnqueueNDRangeKernel with a NULL
     * global size aborts, with num_events_in_wait_list=1 and a NULL list segfaults, and
     * clEnqueueNDRangeKernel / clEnqueueTask with a NULL kernel segfault.) */
    {
        size_t g16 = 16, l3 = 3;
        cl_mem null_mem = NULL;
        printf("err NDRange work_dim 0: %d\n", CL(clEnqueueNDRangeKernel, q1, saxpy, 0, NULL, &g16, NULL, 0, NULL, NULL));
        printf("err NDRange queue NULL: %s\n", cl_err_name(CL(clEnqueueNDRangeKernel, NULL, saxpy, 1, NULL, &g16, NULL, 0, NULL, NULL)));
        err = CL(clEnqueueNDRangeKernel, q1, saxpy, 1, NULL, &g16, &l3, 0, NULL, NULL);
        printf("err NDRange local 3 of 16: %d\n", err);
        printf("err SetKernelArg kernel NULL: %s\n", cl_err_name(CL(clSetKernelArg, NULL, 0, sizeof(cl_mem), &bx)));
        printf("err SetKernelArg NULL buffer value: %s\n", cl_err_name(CL(clSetKernelArg, add_one, 0, sizeof(cl_mem), &null_mem)));
        printf("err ReadBuffer buffer NULL: %s\n", cl_err_name(CL(clEnqueueReadBuffer, q1, NULL, CL_TRUE, 0, 4, back, 0, NULL, NULL)));
        printf("err ReadBuffer out of range: %s\n", cl_err_name(CL(clEnqueueReadBuffer, q1, by, CL_TRUE, 0, 1 << 20, back, 0, NULL, NULL)));
        printf("err WriteBuffer ptr NULL: %s\n", cl_err_name(CL(clEnqueueWriteBuffer, q1, by, CL_TRUE, 0, 4, NULL, 0, NULL, NULL)));
        void *mp = CL(clEnqueueMapBuffer, q1, NULL, CL_TRUE, CL_MAP_READ, 0, 4, 0, NULL, NULL, &err);
        printf("err MapBuffer buffer NULL: %s null=%s\n", cl_err_name(err), mp ? "no" : "yes");
        printf("err Unmap ptr NULL: %s\n", cl_err_name(CL(clEnqueueUnmapMemObject, q1, by, NULL, 0, NULL, NULL)));
        printf("err CopyBuffer src NULL: %s\n", cl_err_name(CL(clEnqueueCopyBuffer, q1, NULL, by, 0, 0, 4, 0, NULL, NULL)));
        printf("err FillBuffer pattern NULL: %s\n", cl_err_name(CL(clEnqueueFillBuffer, q1, by, NULL, 4, 0, 4, 0, NULL, NULL)));
        cl_mem migr[1] = {NULL};
        printf("err Migrate NULL object: %s\n", cl_err_name(CL(clEnqueueMigrateMemObjects, q1, 1, migr, CL_MIGRATE_MEM_OBJECT_HOST, 0, NULL, NULL)));
        printf("err Migrate list NULL: %s\n", cl_err_name(CL(clEnqueueMigrateMemObjects, q1, 1, NULL, CL_MIGRATE_MEM_OBJECT_HOST, 0, NULL, NULL)));
        cl_mem m0 = CL(clCreateBuffer, ctx, CL_MEM_READ_WRITE, 0, NULL, &err);
        printf("err CreateBuffer size 0: %s null=%s\n", cl_err_name(err), m0 ? "no" : "yes");
        m0 = CL(clCreateBuffer, ctx, CL_MEM_USE_HOST_PTR, 64, NULL, &err);
        printf("err CreateBuffer USE_HOST_PTR without ptr: %s null=%s\n", cl_err_name(err), m0 ? "no" : "yes");
        m0 = CL(clCreateSubBuffer, by, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, NULL, &err);
        printf("err CreateSubBuffer info NULL: %s null=%s\n", cl_err_name(err), m0 ? "no" : "yes");
        cl_buffer_region odd = {4, 16};
        m0 = CL(clCreateSubBuffer, by, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &odd, &err);
        printf("err CreateSubBuffer misaligned: %s null=%s\n", cl_err_name(err), m0 ? "no" : "yes");
        cl_kernel ks[1];
        printf("err CreateKernelsInProgram too few: %s\n", cl_err_name(CL(clCreateKernelsInProgram, prog, 1, ks, NULL)));
        cl_kernel kn = CL(clCreateKernel, prog, NULL, &err);
        printf("err CreateKernel name NULL: %s null=%s\n", cl_err_name(err), kn ? "no" : "yes");
        printf("err ReleaseMemObject NULL: %s\n", cl_err_name(CL(clReleaseMemObject, NULL)));
        printf("err RetainKernel NULL: %s\n", cl_err_name(CL(clRetainKernel, NULL)));
        printf("err ReleaseProgram NULL: %s\n", cl_err_name(CL(clReleaseProgram, NULL)));
        printf("err ReleaseCommandQueue NULL: %s\n", cl_err_name(CL(clReleaseCommandQueue, NULL)));
        printf("err ReleaseContext NULL: %s\n", cl_err_name(CL(clReleaseContext, NULL)));
        printf("err WaitForEvents none: %s\n", cl_err_name(CL(clWaitForEvents, 0, NULL)));
        printf("err BuildProgram NULL: %s\n", cl_err_name(CL(clBuildProgram, NULL, 0, NULL, NULL, NULL, NULL)));
        cl_command_queue qn = CL(clCreateCommandQueueWithProperties, NULL, dev, NULL, &err);
        printf("err CreateCommandQueueWithProperties context NULL: %s null=%s\n", cl_err_name(err), qn ? "no" : "yes");
        cl_queue_properties badq[] = {CL_QUEUE_PROPERTIES, (cl_queue_properties)0xF0000, 0};
        qn = CL(clCreateCommandQueueWithProperties, ctx, dev, badq, &err);
        printf("err CreateCommandQueueWithProperties bad bits: %s null=%s\n", cl_err_name(err), qn ? "no" : "yes");
        cl_context cn = CL(clCreateContext, NULL, 0, NULL, NULL, NULL, &err);
        printf("err CreateContext no devices: %s null=%s\n", cl_err_name(err), cn ? "no" : "yes");
        cl_program pn = CL(clCreateProgramWithSource, ctx, 0, NULL, NULL, &err);
        printf("err CreateProgramWithSource none: %s null=%s\n", cl_err_name(err), pn ? "no" : "yes");
        CHECK("clFinish after error paths", CL(clFinish, q1));
    }

    /* ---- teardown ------------------------------------------------------------------------- */
    CHECK("clFinish(q2)", CL(clFinish, q2));
    cl_mem rel[] = {by, bin, bgs, blong, bcopy, bhost};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++)
        CHECK("clReleaseMemObject", CL(clReleaseMemObject, rel[i]));
    free(host);
    CHECK("clReleaseKernel", CL(clReleaseKernel, saxpy));
    CHECK("clReleaseKernel", CL(clReleaseKernel, group_sum));
    CHECK("clReleaseKernel", CL(clReleaseKernel, serial_sum));
    CHECK("clReleaseKernel", CL(clReleaseKernel, add_one));
    CHECK("clReleaseProgram", CL(clReleaseProgram, prog));
    CHECK("clReleaseCommandQueue", CL(clReleaseCommandQueue, q1));
    CHECK("clReleaseCommandQueue", CL(clReleaseCommandQueue, q2));
    CHECK("clReleaseContext", CL(clReleaseContext, ctx));
    printf("context errors reported: %d\n", atomic_load(&g_ctx_errors));
    print_counts();
    printf("basic: ok\n");
    return 0;
}
