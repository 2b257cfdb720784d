/* Objects that reach a buffer's bytes other than through the buffer: images made from it,
 * sub-buffers that outlive it, SVM pointers that replace it as a kernel argument, command
 * buffers that record commands on it; and what the application can see of clayout's own
 * objects: reference counts, queue properties, a rebuild with kernels attached, objects the
 * application leaks. Issue 21, items 2, 3, 4, 5, 19 and the two "Also" defects. */
#include "hostile.h"
#include <sys/wait.h>
#include <unistd.h>

static cl_mem used(void)
{
    start(0);
    cl_mem b = particles(1.0f);
    advance(b);
    return b;
}

static void after(cl_mem b)
{
    show("after", b, BYTES);
    advance(b);
    show("again", b, BYTES);
    clReleaseMemObject(b);
    finish();
}

/* ---- images made from a buffer (item 2) ---- */

#define PIXELS (BYTES / 16) /* RGBA float pixels */

static cl_mem image_of(cl_mem b, cl_int *err)
{
    cl_image_format fmt = {CL_RGBA, CL_FLOAT};
    cl_image_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.image_type = CL_MEM_OBJECT_IMAGE1D_BUFFER;
    desc.image_width = PIXELS;
    desc.mem_object = b;
    return clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, err);
}

static int images_supported(void)
{
    cl_bool images = CL_FALSE;
    clGetDeviceInfo(dev, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, NULL);
    if (!images)
        printf("skipped: no image support\n");
    return images;
}

static void read_image(cl_mem img, const char *what)
{
    size_t origin[3] = {0, 0, 0}, region[3] = {PIXELS, 1, 1};
    float *h = malloc(BYTES);
    memset(h, 0, BYTES);
    char label[64];
    snprintf(label, sizeof label, "%s read image", what);
    rc(label, clEnqueueReadImage(q, img, CL_TRUE, origin, region, 0, 0, h, 0, NULL, NULL));
    sum(what, h, BYTES);
    free(h);
}

static void image_after_launch(void)
{
    cl_mem b = used();
    if (!images_supported())
        return;
    cl_int err;
    cl_mem img = image_of(b, &err);
    rc("create image", err);
    if (img) {
        read_image(img, "image");
        clReleaseMemObject(img);
    }
    after(b);
}

static void image_before_launch(void)
{
    start(0);
    if (!images_supported())
        return;
    cl_mem b = particles(1.0f);
    cl_int err;
    cl_mem img = image_of(b, &err);
    rc("create image", err);
    advance(b);
    if (img) {
        read_image(img, "image");
        clReleaseMemObject(img);
    }
    after(b);
}

static void image_write(void)
{
    cl_mem b = used();
    if (!images_supported())
        return;
    cl_int err;
    cl_mem img = image_of(b, &err);
    rc("create image", err);
    if (img) {
        cl_float4 px[10];
        for (int i = 0; i < 10; i++)
            px[i] = (cl_float4){{(float)i, -1.0f, 2.0f, 0.5f * i}};
        size_t origin[3] = {100, 0, 0}, region[3] = {10, 1, 1};
        rc("write image", clEnqueueWriteImage(q, img, CL_TRUE, origin, region, 0, 0, px, 0, NULL, NULL));
        clReleaseMemObject(img);
    }
    after(b);
}

/* No case fills the image view (clEnqueueFillImage): PoCL 3.1 crashes there with or without
 * clayout, so the case could not judge anything. The write and map cases cover the entry. */

static void image_map(void)
{
    cl_mem b = used();
    if (!images_supported())
        return;
    cl_int err;
    cl_mem img = image_of(b, &err);
    rc("create image", err);
    if (img) {
        size_t origin[3] = {0, 0, 0}, region[3] = {PIXELS, 1, 1}, row = 0;
        void *m = clEnqueueMapImage(q, img, CL_TRUE, CL_MAP_READ, origin, region, &row, NULL, 0, NULL, NULL, &err);
        rc("map image", err);
        if (m) {
            sum("mapped image", m, BYTES);
            rc("unmap", clEnqueueUnmapMemObject(q, img, m, 0, NULL, NULL));
        }
        clReleaseMemObject(img);
    }
    after(b);
}

static const char *IMAGE_CL = "__kernel void from_image(__read_only image1d_buffer_t img, __global float4 *out, int n)\n"
                              "{\n"
                              "    int i = get_global_id(0);\n"
                              "    if (i < n)\n"
                              "        out[i] = read_imagef(img, i) * 2.0f;\n"
                              "}\n";

static void image_kernel(void)
{
    cl_mem b = used();
    if (!images_supported())
        return;
    cl_int err;
    cl_mem img = image_of(b, &err);
    rc("create image", err);
    cl_program p = build(IMAGE_CL, "");
    cl_kernel k = kernel(p, "from_image");
    cl_mem out = buffer(CL_MEM_READ_WRITE, BYTES, NULL);
    int n = PIXELS;
    size_t g = PIXELS;
    clSetKernelArg(k, 0, sizeof img, &img);
    clSetKernelArg(k, 1, sizeof out, &out);
    clSetKernelArg(k, 2, sizeof n, &n);
    rc("from_image", clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    show("out", out, BYTES);
    clReleaseMemObject(out);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseMemObject(img);
    after(b);
}

/* A plain image copied into part of the buffer, and part of the buffer into an image: the
 * buffer side of these is observed. */
static void image_copies(void)
{
    cl_mem b = used();
    if (!images_supported())
        return;
    cl_int err;
    cl_image_format fmt = {CL_RGBA, CL_FLOAT};
    cl_image_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.image_type = CL_MEM_OBJECT_IMAGE1D;
    desc.image_width = 64;
    cl_mem img = clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
    need("create an image", err);
    size_t origin[3] = {0, 0, 0}, region[3] = {64, 1, 1};
    rc("buffer to image", clEnqueueCopyBufferToImage(q, b, img, 160, origin, region, 0, NULL, NULL));
    float h[256];
    rc("read image", clEnqueueReadImage(q, img, CL_TRUE, origin, region, 0, 0, h, 0, NULL, NULL));
    sum("image", h, sizeof h);
    advance(b);
    size_t part[3] = {16, 1, 1};
    rc("image to buffer", clEnqueueCopyImageToBuffer(q, img, b, origin, part, 320, 0, NULL, NULL));
    clReleaseMemObject(img);
    after(b);
}

/* A 2-D image over the buffer needs cl_khr_image2d_from_buffer (or OpenCL 3.0's feature). */
static void image2d_from_buffer(void)
{
    cl_mem b = used();
    cl_uint pitch_align = 0;
    clGetDeviceInfo(dev, CL_DEVICE_IMAGE_PITCH_ALIGNMENT, sizeof pitch_align, &pitch_align, NULL);
    if (pitch_align == 0) {
        printf("skipped: no 2-D images from buffers\n");
        clReleaseMemObject(b);
        finish();
        return;
    }
    cl_image_format fmt = {CL_RGBA, CL_FLOAT};
    cl_image_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.image_type = CL_MEM_OBJECT_IMAGE2D;
    desc.image_width = 25;
    desc.image_height = PIXELS / 25;
    desc.mem_object = b;
    cl_int err;
    cl_mem img = clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
    rc("create 2-D image", err);
    if (img) {
        size_t origin[3] = {0, 0, 0}, region[3] = {25, PIXELS / 25, 1};
        float *h = malloc(BYTES);
        rc("read image", clEnqueueReadImage(q, img, CL_TRUE, origin, region, 0, 0, h, 0, NULL, NULL));
        sum("image", h, BYTES);
        free(h);
        clReleaseMemObject(img);
    }
    after(b);
}

/* ---- sub-buffers (item 3 and neighbours) ---- */

static cl_mem sub_of(cl_mem b, size_t origin, size_t size)
{
    cl_buffer_region r = {origin, size};
    cl_int err;
    cl_mem s = clCreateSubBuffer(b, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    rc("create sub-buffer", err);
    return s;
}

static size_t base_align(void)
{
    cl_uint bits = 1024;
    clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, NULL);
    return bits / 8;
}

/* The application lets go of the parent while a sub-buffer lives, and reads the sub-buffer. */
static void subbuf_release_parent(void)
{
    start(0);
    cl_mem b = particles(1.0f);
    size_t off = base_align();
    cl_mem s = sub_of(b, off, BYTES - off);
    advance(b);
    rc("release parent", clReleaseMemObject(b));
    if (s) {
        show("sub-buffer", s, BYTES - off);
        clReleaseMemObject(s);
    }
    finish();
}

/* The same, with the sub-buffer created after the launch and written through before reading. */
static void subbuf_release_parent_write(void)
{
    cl_mem b = used();
    cl_mem s = sub_of(b, 0, BYTES / 2);
    rc("release parent", clReleaseMemObject(b));
    if (s) {
        float f = 1.5f;
        rc("fill", clEnqueueFillBuffer(q, s, &f, sizeof f, 0, 64, 0, NULL, NULL));
        show("sub-buffer", s, BYTES / 2);
        clReleaseMemObject(s);
    }
    finish();
}

static void subbuf_read(void)
{
    cl_mem b = used();
    size_t off = base_align();
    cl_mem s = sub_of(b, off, 2 * off);
    if (s) {
        show("sub-buffer", s, 2 * off);
        advance(b);
        float f = -4.0f;
        rc("fill sub", clEnqueueFillBuffer(q, s, &f, sizeof f, 0, 2 * off, 0, NULL, NULL));
        clReleaseMemObject(s);
    }
    after(b);
}

static void subbuf_map(void)
{
    cl_mem b = used();
    cl_mem s = sub_of(b, 0, BYTES / 2);
    if (s) {
        cl_int err;
        unsigned char *m = clEnqueueMapBuffer(q, s, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, 400, 0, NULL, NULL, &err);
        rc("map sub", err);
        advance(b); /* the parent is mapped through its sub-buffer */
        rc("finish", clFinish(q));
        if (m) {
            sum("mapped", m, 400);
            m[5] ^= 0x55;
            rc("unmap", clEnqueueUnmapMemObject(q, s, m, 0, NULL, NULL));
        }
        clReleaseMemObject(s);
    }
    after(b);
}

/* The annotated kernel on a sub-buffer: it cannot be converted (its bytes are its parent's). */
static void subbuf_kernel(void)
{
    cl_mem b = used();
    cl_mem s = sub_of(b, 0, BYTES / 2);
    if (s) {
        cl_uint n = N / 2;
        float dt = 0.5f;
        size_t g = GLOBAL / 2;
        clSetKernelArg(k_advance, 0, sizeof s, &s);
        clSetKernelArg(k_advance, 1, sizeof n, &n);
        clSetKernelArg(k_advance, 2, sizeof dt, &dt);
        rc("advance sub", clEnqueueNDRangeKernel(q, k_advance, 1, NULL, &g, NULL, 0, NULL, NULL));
        show("sub", s, BYTES / 2);
        clReleaseMemObject(s);
    }
    after(b);
}

/* The application keeps its own extra reference to the parent, releases it twice. */
static void subbuf_retained_parent(void)
{
    cl_mem b = used();
    rc("retain", clRetainMemObject(b));
    cl_mem s = sub_of(b, 0, BYTES / 2);
    rc("release", clReleaseMemObject(b));
    advance(b);
    if (s) {
        show("sub", s, BYTES / 2);
        clReleaseMemObject(s);
    }
    after(b);
}

/* ---- SVM pointers replacing a buffer argument (item 4) ---- */

static void *svm_buffer(void)
{
    cl_device_svm_capabilities caps = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_SVM_CAPABILITIES, sizeof caps, &caps, NULL) != CL_SUCCESS ||
        !(caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER)) {
        printf("skipped: no coarse-grained SVM\n");
        return NULL;
    }
    particle *s = clSVMAlloc(ctx, CL_MEM_READ_WRITE, BYTES, 0);
    if (!s) {
        printf("skipped: clSVMAlloc failed\n");
        return NULL;
    }
    rc("svm map", clEnqueueSVMMap(q, CL_TRUE, CL_MAP_WRITE, s, BYTES, 0, NULL, NULL));
    fill(s, N, 5.0f);
    rc("svm unmap", clEnqueueSVMUnmap(q, s, 0, NULL, NULL));
    return s;
}

static void show_svm(const char *what, void *s)
{
    rc("svm map", clEnqueueSVMMap(q, CL_TRUE, CL_MAP_READ, s, BYTES, 0, NULL, NULL));
    sum(what, s, BYTES);
    rc("svm unmap", clEnqueueSVMUnmap(q, s, 0, NULL, NULL));
    rc("finish", clFinish(q));
}

static void svm_replaces_buffer(void)
{
    cl_mem b = used();
    void *s = svm_buffer();
    if (!s) {
        clReleaseMemObject(b);
        finish();
        return;
    }
    /* The same kernel object, its buffer argument now an SVM pointer. */
    rc("svm arg", clSetKernelArgSVMPointer(k_advance, 0, s));
    size_t g = GLOBAL;
    rc("advance svm", clEnqueueNDRangeKernel(q, k_advance, 1, NULL, &g, NULL, 0, NULL, NULL));
    rc("advance svm", clEnqueueNDRangeKernel(q, k_advance, 1, NULL, &g, NULL, 0, NULL, NULL));
    show_svm("svm", s);
    show("buffer", b, BYTES);
    clSVMFree(ctx, s);
    after(b);
}

static void svm_then_buffer(void)
{
    start(0);
    void *s = svm_buffer();
    cl_mem b = particles(1.0f);
    if (s) {
        cl_uint n = N;
        float dt = 0.01f;
        size_t g = GLOBAL;
        rc("svm arg", clSetKernelArgSVMPointer(k_advance, 0, s));
        clSetKernelArg(k_advance, 1, sizeof n, &n);
        clSetKernelArg(k_advance, 2, sizeof dt, &dt);
        rc("advance svm", clEnqueueNDRangeKernel(q, k_advance, 1, NULL, &g, NULL, 0, NULL, NULL));
        show_svm("svm", s);
    }
    advance(b);
    if (s)
        clSVMFree(ctx, s);
    after(b);
}

/* ---- command buffers (item 5) ---- */

struct cmdbuf_fns {
    clCreateCommandBufferKHR_fn create;
    clCommandNDRangeKernelKHR_fn ndrange;
    clCommandCopyBufferKHR_fn copy;
    clCommandFillBufferKHR_fn fill;
    clFinalizeCommandBufferKHR_fn finalize;
    clEnqueueCommandBufferKHR_fn enqueue;
    clReleaseCommandBufferKHR_fn release;
};

static int cmdbuf_fns(struct cmdbuf_fns *f)
{
    char ext[4096] = "";
    clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, sizeof ext, ext, NULL);
    if (!strstr(ext, "cl_khr_command_buffer")) {
        printf("skipped: no cl_khr_command_buffer\n");
        return 0;
    }
#define GET(field, name) f->field = (name##_fn)clGetExtensionFunctionAddressForPlatform(plat, #name)
    GET(create, clCreateCommandBufferKHR);
    GET(ndrange, clCommandNDRangeKernelKHR);
    GET(copy, clCommandCopyBufferKHR);
    GET(fill, clCommandFillBufferKHR);
    GET(finalize, clFinalizeCommandBufferKHR);
    GET(enqueue, clEnqueueCommandBufferKHR);
    GET(release, clReleaseCommandBufferKHR);
#undef GET
    if (!f->create || !f->ndrange || !f->copy || !f->fill || !f->finalize || !f->enqueue || !f->release) {
        printf("skipped: command buffer entry points missing\n");
        return 0;
    }
    return 1;
}

/* Records `what` (0: the kernel on b, 1: a copy of b into c, 2: a fill of part of b), runs it
 * twice. */
static void cmdbuf(int what, int fetch_first)
{
    struct cmdbuf_fns f;
    start(0);
    if (fetch_first && !cmdbuf_fns(&f)) {
        finish();
        return;
    }
    cl_mem b = particles(1.0f);
    advance(b);
    if (!fetch_first && !cmdbuf_fns(&f)) {
        clReleaseMemObject(b);
        finish();
        return;
    }
    cl_mem c = buffer(CL_MEM_READ_WRITE, BYTES, NULL);
    cl_int err;
    cl_command_buffer_khr cb = f.create(1, &q, NULL, &err);
    rc("create command buffer", err);
    if (!cb) {
        clReleaseMemObject(c);
        after(b);
        return;
    }
    size_t g = GLOBAL;
    float pattern = 7.0f;
    if (what == 0)
        rc("record kernel", f.ndrange(cb, NULL, NULL, k_advance, 1, NULL, &g, NULL, 0, NULL, NULL, NULL));
    else if (what == 1)
        rc("record copy", f.copy(cb, NULL, b, c, 0, 0, BYTES, 0, NULL, NULL, NULL));
    else
        rc("record fill", f.fill(cb, NULL, b, &pattern, sizeof pattern, 100, 800, 0, NULL, NULL, NULL));
    rc("finalize", f.finalize(cb));
    for (int i = 0; i < 2; i++) {
        cl_event e;
        rc("enqueue command buffer", f.enqueue(0, NULL, cb, 0, NULL, &e));
        rc("wait", clWaitForEvents(1, &e));
        clReleaseEvent(e);
    }
    if (what == 1)
        show("copy", c, BYTES);
    rc("release command buffer", f.release(cb));
    clReleaseMemObject(c);
    after(b);
}

static void cmdbuf_kernel(void)
{
    cmdbuf(0, 0);
}
static void cmdbuf_copy(void)
{
    cmdbuf(1, 0);
}
static void cmdbuf_fill(void)
{
    cmdbuf(2, 0);
}
static void cmdbuf_fetched_first(void)
{
    cmdbuf(0, 1);
}

/* ---- what the application sees of clayout's objects (item 19) ---- */

/* A reference count once it has settled: PoCL lets a completed command's references go a
 * moment after its event completes, in the plain run as under clayout, so a count read at once
 * can be one higher in either. The count is read until it stays the same for 20 ms (at most 1 s). */
static cl_uint refs(cl_int (*get)(void *, cl_uint, size_t, void *, size_t *), void *obj, cl_uint param)
{
    cl_uint n = 0, last = 0;
    for (int i = 0, stable = 0; i < 1000 && stable < 20; i++) {
        get(obj, param, sizeof n, &n, NULL);
        stable = (i > 0 && n == last) ? stable + 1 : 0;
        last = n;
        usleep(1000);
    }
    return n;
}

#define REFS(fn, obj, param) refs((cl_int(*)(void *, cl_uint, size_t, void *, size_t *))fn, obj, param)

static void reference_counts(void)
{
    cl_mem b = used();
    cl_event e;
    rc("advance", advance_on(q, b, 0, NULL, &e));
    rc("finish", clFinish(q));
    printf("context refs %u\n", REFS(clGetContextInfo, ctx, CL_CONTEXT_REFERENCE_COUNT));
    printf("queue refs %u\n", REFS(clGetCommandQueueInfo, q, CL_QUEUE_REFERENCE_COUNT));
    printf("program refs %u\n", REFS(clGetProgramInfo, prog, CL_PROGRAM_REFERENCE_COUNT));
    printf("kernel refs %u\n", REFS(clGetKernelInfo, k_advance, CL_KERNEL_REFERENCE_COUNT));
    printf("buffer refs %u\n", REFS(clGetMemObjectInfo, b, CL_MEM_REFERENCE_COUNT));
    printf("event refs %u\n", REFS(clGetEventInfo, e, CL_EVENT_REFERENCE_COUNT));
    show("buffer", b, BYTES);
    printf("buffer refs after read %u\n", REFS(clGetMemObjectInfo, b, CL_MEM_REFERENCE_COUNT));
    printf("context refs after read %u\n", REFS(clGetContextInfo, ctx, CL_CONTEXT_REFERENCE_COUNT));
    clReleaseEvent(e);
    after(b);
}

static void queue_properties(void)
{
    start(0);
    cl_command_queue_properties props = 99;
    rc("properties", clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL));
    printf("queue properties %llu\n", (unsigned long long)props);
    cl_queue_properties list[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
    cl_int err;
    cl_command_queue q2 = clCreateCommandQueueWithProperties(ctx, dev, list, &err);
    rc("queue with properties", err);
    cl_queue_properties got[8] = {0};
    size_t size = 0;
    rc("properties array", clGetCommandQueueInfo(q2, CL_QUEUE_PROPERTIES_ARRAY, sizeof got, got, &size));
    printf("properties array %zu bytes:", size);
    for (size_t i = 0; i < size / sizeof got[0]; i++)
        printf(" %llu", (unsigned long long)got[i]);
    printf("\n");
    rc("properties", clGetCommandQueueInfo(q2, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL));
    printf("queue 2 properties %llu\n", (unsigned long long)props);
    cl_mem b = particles(1.0f);
    cl_event e;
    rc("advance", advance_on(q, b, 0, NULL, &e));
    rc("wait", clWaitForEvents(1, &e));
    cl_ulong t = 0;
    rc("profiling info", clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t, &t, NULL));
    clReleaseEvent(e);
    clReleaseCommandQueue(q2);
    after(b);
}

static void CL_CALLBACK built(cl_program p, void *data);

/* clBuildProgram again once kernels exist: the real library refuses. */
static void rebuild_with_kernels(void)
{
    cl_mem b = used();
    rc("rebuild", clBuildProgram(prog, 1, &dev, "", NULL, NULL));
    rc("rebuild with options", clBuildProgram(prog, 1, &dev, "-DUNUSED=1", NULL, NULL));
    rc("rebuild with callback", clBuildProgram(prog, 1, &dev, "", built, NULL));
    after(b);
}

static void rebuild_unannotated(void)
{
    open_device(0);
    cl_program p = build(IMAGE_CL, "");
    cl_kernel k = kernel(p, "from_image");
    rc("rebuild", clBuildProgram(p, 1, &dev, "", NULL, NULL));
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
}

/* A program whose kernel is written for ASTA (annotated `-> ASTA`): clayout adds the tile
 * macro to its build options, and a rebuild must still be refused once a kernel exists. */
static const char *ASTA_CL = "#ifndef CLAYOUT_TILE\n"
                             "#define CLAYOUT_TILE 32\n"
                             "#endif\n"
                             "typedef struct { float x, y, z, vx, vy; } particle;\n"
                             "//DL: AoS: p[n] -> ASTA\n"
                             "__kernel void drift(__global particle *p, uint n)\n"
                             "{ uint i = get_global_id(0); if (i < n) p[i].x += (float)CLAYOUT_TILE; }\n";

static void CL_CALLBACK built(cl_program p, void *data)
{
    (void)p;
    (void)data;
}

static void rebuild_asta_kernel(void)
{
    open_device(0);
    cl_program p = build(ASTA_CL, "");
    cl_kernel k = kernel(p, "drift");
    rc("rebuild", clBuildProgram(p, 1, &dev, "", NULL, NULL));
    rc("rebuild with callback", clBuildProgram(p, 1, &dev, "", built, NULL));
    rc("rebuild for all devices", clBuildProgram(p, 0, NULL, NULL, NULL, NULL));
    rc("compile", clCompileProgram(p, 0, NULL, "", 0, NULL, NULL, NULL, NULL));
    clReleaseKernel(k);
    rc("rebuild without kernels", clBuildProgram(p, 1, &dev, "", NULL, NULL));
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
}

/* ---- objects the application leaks (the second "Also": not clayout's) ---- */

static void leak(int what)
{
    cl_mem b = used();
    show("buffer", b, BYTES);
    cl_int err;
    cl_event e = NULL;
    cl_kernel k = NULL;
    cl_sampler s = NULL;
    cl_mem img = NULL;
    switch (what) {
    case 0:
        rc("advance", advance_on(q, b, 0, NULL, &e));
        rc("wait", clWaitForEvents(1, &e));
        break;
    case 1:
        k = kernel(prog, "words");
        break;
    case 2:
        e = clCreateUserEvent(ctx, &err);
        rc("user event", err);
        rc("complete", clSetUserEventStatus(e, CL_COMPLETE));
        break;
    case 3:
        s = clCreateSampler(ctx, CL_FALSE, CL_ADDRESS_CLAMP, CL_FILTER_NEAREST, &err);
        rc("sampler", err);
        break;
    case 4: {
        cl_image_format fmt = {CL_RGBA, CL_FLOAT};
        cl_image_desc desc;
        memset(&desc, 0, sizeof desc);
        desc.image_type = CL_MEM_OBJECT_IMAGE1D;
        desc.image_width = 16;
        img = clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
        rc("image", err);
        break;
    }
    }
    /* Everything else released; the one object above is not. */
    (void)k;
    (void)s;
    (void)img;
    clReleaseMemObject(b);
    finish();
    printf("released all but one\n");
}

static void leak_event(void)
{
    leak(0);
}
static void leak_kernel(void)
{
    leak(1);
}
static void leak_user_event(void)
{
    leak(2);
}
static void leak_sampler(void)
{
    leak(3);
}
static void leak_image(void)
{
    leak(4);
}

static void no_leak(void)
{
    leak(-1);
}

/* ---- conversion time (the first "Also"): the harness runs it at two sizes ---- */

static void marshal_time(void)
{
    const char *env = getenv("HOSTILE_N");
    size_t n = env ? (size_t)atol(env) : N;
    start(0);
    particle *h = malloc(n * sizeof(particle));
    fill(h, n, 1.0f);
    cl_mem b = buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(particle), h);
    cl_uint count = (cl_uint)n;
    float dt = 0.01f;
    size_t g = (n + 63) / 64 * 64;
    clSetKernelArg(k_advance, 0, sizeof b, &b);
    clSetKernelArg(k_advance, 1, sizeof count, &count);
    clSetKernelArg(k_advance, 2, sizeof dt, &dt);
    rc("advance", clEnqueueNDRangeKernel(q, k_advance, 1, NULL, &g, NULL, 0, NULL, NULL));
    rc("read", clEnqueueReadBuffer(q, b, CL_TRUE, 0, n * sizeof(particle), h, 0, NULL, NULL));
    sum("particles", h, n * sizeof(particle));
    free(h);
    clReleaseMemObject(b);
    finish();
}

/* Forks a child that calls exit() at once, waits for it and prints its exit status. */
static void fork_a_child_that_exits(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        exit(0);
    int status = -1;
    waitpid(pid, &status, 0);
    printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* A child forked after clayout started its threads (the cache's writer among them), which
 * exits at once through exit(): its exit handlers, clayout's included, must neither hang on a
 * thread that is not there nor write what the parent still holds; the parent goes on. */
static void fork_child_exits(void)
{
    start(0);
    cl_mem b = particles(1.0f);
    advance(b);
    show("b", b, BYTES); /* the read ends the buffer's epoch: a record is handed to the writer */
    fork_a_child_that_exits();
    advance(b);
    show("b again", b, BYTES);
    clReleaseMemObject(b);
    finish();
}

/* The same, forked while clayout's worker builds a program the application just built (its
 * rewritten copies): the child has no worker, so its exit must not wait for that build. */
static void fork_child_exits_mid_build(void)
{
    start(0);
    cl_program again = build(PARTICLES_CL, "-DAGAIN=1");
    fork_a_child_that_exits();
    cl_mem b = particles(1.0f);
    advance(b);
    show("b", b, BYTES);
    clReleaseMemObject(b);
    clReleaseProgram(again);
    finish();
}

/* ---- several contexts on one device ---------------------------------------------------- */

/* One context's world: its queue, the particles program and `advance`, one buffer. */
struct world {
    cl_context ctx;
    cl_command_queue q;
    cl_program prog;
    cl_kernel advance;
    cl_mem b;
};

static struct world world_open(float seed)
{
    struct world w;
    cl_int err;
    w.ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    need("create a context", err);
    w.q = clCreateCommandQueue(w.ctx, dev, 0, &err);
    need("create a queue", err);
    w.prog = clCreateProgramWithSource(w.ctx, 1, &PARTICLES_CL, NULL, &err);
    need("create the program", err);
    need("build", clBuildProgram(w.prog, 1, &dev, "", NULL, NULL));
    w.advance = clCreateKernel(w.prog, "advance", &err);
    need("advance", err);
    particle *h = malloc(BYTES);
    fill(h, N, seed);
    w.b = clCreateBuffer(w.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, BYTES, h, &err);
    need("create a buffer", err);
    free(h);
    return w;
}

static void world_step(struct world *w, const char *what)
{
    cl_uint n = N;
    float dt = 0.01f;
    size_t g = GLOBAL;
    clSetKernelArg(w->advance, 0, sizeof w->b, &w->b);
    clSetKernelArg(w->advance, 1, sizeof n, &n);
    clSetKernelArg(w->advance, 2, sizeof dt, &dt);
    rc(what, clEnqueueNDRangeKernel(w->q, w->advance, 1, NULL, &g, NULL, 0, NULL, NULL));
}

static void world_close(struct world *w, const char *what)
{
    show_on(w->q, what, w->b, 0, BYTES);
    clReleaseMemObject(w->b);
    clReleaseKernel(w->advance);
    clReleaseProgram(w->prog);
    clReleaseCommandQueue(w->q);
    clReleaseContext(w->ctx);
}

/* An application with a context per part of its work on one device (or per library it links):
 * the same annotated program built in each, launches and reads interleaved, the first context
 * released whole mid-run, a third made after it. Whatever clayout keeps per context (its
 * conversion kernels, scratch buffers, copies) must never serve another. */
static void contexts_interleaved(void)
{
    plat = pick_platform();
    if (!plat) {
        printf("no platform\n");
        return;
    }
    need("get a device", clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    struct world one = world_open(1.0f), two = world_open(2.0f);
    for (int i = 0; i < 3; i++) {
        world_step(&one, "one");
        world_step(&two, "two");
    }
    show_on(one.q, "one midway", one.b, 0, BYTES);
    world_step(&one, "one");
    world_close(&one, "one at its end");
    struct world three = world_open(3.0f);
    for (int i = 0; i < 3; i++) {
        world_step(&three, "three");
        world_step(&two, "two");
    }
    world_close(&two, "two at its end");
    world_close(&three, "three at its end");
}

/* ---- OpenCL from the application's exit handlers ----------------------------------------- */

/* A program that saves its results from an exit handler (or a C++ global's destructor), which
 * runs after clayout's worker's handler (registered at the worker's start, inside the run's
 * first annotated build) and before the OpenCL implementation's (registered when it was set
 * up): the handler reads a buffer the run left in ASTA, launches on it again and reads it
 * again. (A build in such a handler crashes PoCL 3.1 with or without clayout.) */
static cl_mem at_exit_b;

static void save_at_exit(void)
{
    show("b at exit", at_exit_b, BYTES);
    rc("advance at exit", advance_on(q, at_exit_b, 0, NULL, NULL));
    show("b at exit again", at_exit_b, BYTES);
    clReleaseMemObject(at_exit_b);
    finish();
}

static void exit_handler_reads_back(void)
{
    open_device(0);
    atexit(save_at_exit);
    prog = build(PARTICLES_CL, "");
    k_advance = kernel(prog, "advance");
    k_pair = kernel(prog, "pair");
    k_words = kernel(prog, "words");
    at_exit_b = particles(1.0f);
    advance(at_exit_b);
    advance(at_exit_b);
    rc("finish", clFinish(q));
}

/* ---- callbacks that call OpenCL: a destructor's, a build's --------------------------------- */

/* Waits up to two seconds for *flag to be set by a callback the driver may run on a thread of
 * its own, later than the call that caused it. */
static int waited_for(int *flag)
{
    for (int i = 0; i < 2000 && !__atomic_load_n(flag, __ATOMIC_ACQUIRE); i++)
        usleep(1000);
    return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

static cl_mem tied;
static int tied_released;

static void CL_CALLBACK release_tied(cl_mem m, void *data)
{
    (void)m;
    (void)data;
    clReleaseMemObject(tied);
    __atomic_store_n(&tied_released, 1, __ATOMIC_RELEASE);
}

/* A buffer whose destructor callback releases another one (a staging buffer whose life an
 * application ties to its main buffer's), both launched on, so in ASTA under clayout, when the
 * first goes; then a new buffer at work. Whatever clayout's release of the first holds, the
 * callback's release of the second, inside it on PoCL, must not need. */
static void destructor_releases_another(void)
{
    start(0);
    cl_mem a = particles(1.0f);
    tied = particles(2.0f);
    advance(a);
    advance(tied);
    show("a", a, BYTES);
    advance(a);
    rc("destructor callback", clSetMemObjectDestructorCallback(a, release_tied, NULL));
    rc("finish", clFinish(q));
    rc("release a", clReleaseMemObject(a));
    printf("the callback released the other: %d\n", waited_for(&tied_released));
    cl_mem c = particles(3.0f);
    advance(c);
    show("c", c, BYTES);
    clReleaseMemObject(c);
    finish();
}

static int context_gone;

static void CL_CALLBACK context_destroyed(cl_context c, void *data)
{
    (void)c;
    (void)data;
    __atomic_store_n(&context_gone, 1, __ATOMIC_RELEASE);
}

/* A program that waits for its context's destructor callback once it has released everything
 * (to free what the context used, or to know the device is free again): the context must go
 * when the application's last reference does, whatever clayout made on it (its programs,
 * queues, scratch buffers) for the launches and conversions before. Then a second context is
 * made and used the same way. */
static void context_destructor_callback(void)
{
    for (int round = 0; round < 2; round++) {
        context_gone = 0;
        start(0);
        cl_mem b = particles(1.0f);
        advance(b);
        advance(b);
        show("b", b, BYTES);
        advance(b);
        rc("finish", clFinish(q));
        rc("destructor callback", clSetContextDestructorCallback(ctx, context_destroyed, NULL));
        clReleaseMemObject(b);
        finish();
        printf("round %d: the context went: %d\n", round, waited_for(&context_gone));
    }
}

static cl_kernel made_in_build;
static cl_int made_code = 1;
static int build_notified;

static void CL_CALLBACK make_kernel_when_built(cl_program p, void *data)
{
    (void)data;
    made_in_build = clCreateKernel(p, "advance", &made_code);
    __atomic_store_n(&build_notified, 1, __ATOMIC_RELEASE);
}

/* A build with a callback that creates the program's kernel (hosts that build asynchronously
 * and go on when told): the callback may run inside the build call (PoCL) or after it, before
 * clayout has read the program at all, or while it does. The kernel then runs as any other. */
static void kernel_made_in_build_callback(void)
{
    open_device(0);
    cl_int err;
    prog = clCreateProgramWithSource(ctx, 1, &PARTICLES_CL, NULL, &err);
    need("create the program", err);
    rc("build", clBuildProgram(prog, 1, &dev, "", make_kernel_when_built, NULL));
    printf("notified: %d, kernel: %d\n", waited_for(&build_notified), made_code);
    if (made_code != CL_SUCCESS)
        return;
    k_advance = made_in_build;
    k_pair = kernel(prog, "pair");
    k_words = kernel(prog, "words");
    cl_mem b = particles(1.0f);
    advance(b);
    advance(b);
    show("b", b, BYTES);
    clReleaseMemObject(b);
    finish();
}

CASES({"image1d-buffer-after-launch", image_after_launch, ""},
      {"image1d-buffer-before-launch", image_before_launch, ""}, {"image1d-buffer-write", image_write, ""},
      {"image1d-buffer-map", image_map, ""},
      {"image1d-buffer-kernel", image_kernel, ""}, {"image-copies", image_copies, ""},
      {"image2d-from-buffer", image2d_from_buffer, ""}, {"subbuf-release-parent", subbuf_release_parent, ""},
      {"subbuf-release-parent-write", subbuf_release_parent_write, ""}, {"subbuf-read", subbuf_read, ""},
      {"subbuf-map", subbuf_map, ""}, {"subbuf-kernel", subbuf_kernel, ""},
      {"subbuf-retained-parent", subbuf_retained_parent, ""}, {"svm-replaces-buffer", svm_replaces_buffer, ""},
      {"svm-then-buffer", svm_then_buffer, ""}, {"cmdbuf-kernel", cmdbuf_kernel, ""},
      {"cmdbuf-copy", cmdbuf_copy, ""}, {"cmdbuf-fill", cmdbuf_fill, ""},
      {"cmdbuf-fetched-first", cmdbuf_fetched_first, ""}, {"reference-counts", reference_counts, ""},
      /* The copies' build held back: its job holds the context and the program meanwhile. */
      {"reference-counts-held-build", reference_counts, "policy=auto env=CLAYOUT_BUILD_AFTER=60000"},
      {"queue-properties-profile", queue_properties, "env=CLAYOUT_PROFILE=1"},
      {"queue-properties", queue_properties, ""}, {"rebuild-with-kernels", rebuild_with_kernels, ""},
      {"rebuild-unannotated", rebuild_unannotated, ""},
      {"rebuild-asta-kernel", rebuild_asta_kernel, ""}, {"leak-event", leak_event, "stats=no_leak"},
      {"leak-kernel", leak_kernel, "stats=no_leak"}, {"leak-user-event", leak_user_event, "stats=no_leak"},
      {"leak-sampler", leak_sampler, "stats=no_leak"}, {"leak-image", leak_image, "stats=no_leak"},
      {"leak-nothing", no_leak, "stats=no_leak"}, {"marshal-time", marshal_time, "stats=device_ns timeout=60"},
      {"destructor-releases-another", destructor_releases_another, "auto timeout=20"},
      {"kernel-made-in-build-callback", kernel_made_in_build_callback, "auto timeout=20"},
      {"context-destructor-callback", context_destructor_callback, "auto timeout=20"},
      {"exit-handler-reads-back", exit_handler_reads_back, "auto timeout=20"},
      {"contexts-interleaved", contexts_interleaved, "auto timeout=30"},
      {"fork-child-exits", fork_child_exits, "auto timeout=20"},
      {"fork-child-exits-mid-build", fork_child_exits_mid_build, "auto timeout=20"})
