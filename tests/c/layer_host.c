/* Plays the loader's side of cl_loader_layers the way the current Khronos ICD loader does,
 * which this machine's ocl-icd does not: clInitLayerWithProperties with a property list, a
 * dispatch table shorter than clayout's, and clDeinitLayer. The driver's own dispatch table
 * (found through the real loader) is the target, cut to N entries and placed right before an
 * unreadable page, so that a layer reading past the entries it was given crashes.
 *   layer_host KERNELS.cl plain          the workload through the driver's table
 *   layer_host KERNELS.cl LAYER.so N     the same through LAYER.so's table over N entries
 * Prints the checksum of tests/dl's `advance` kernel run ten times over 1000 particles. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl_icd.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "../include/pick_platform.h"

typedef cl_int (*get_layer_info_fn)(cl_uint, size_t, void *, size_t *);
typedef cl_int (*init_layer_props_fn)(cl_uint, const struct _cl_icd_dispatch *, cl_uint *,
                                      const struct _cl_icd_dispatch **, const cl_properties *);
typedef cl_int (*deinit_layer_fn)(void);

#include "../include/check.h"
#include "../include/read_file.h"

typedef struct {
    float x, y, z, vx, vy;
} particle_t;

static uint64_t fnv(const void *data, size_t len)
{
    const unsigned char *b = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* The workload, every call through table `d`. */
static void workload(const struct _cl_icd_dispatch *d, cl_platform_id plat, const char *kernels)
{
    cl_uint n = 1000;
    cl_device_id dev;
    CHECK(d->clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_int err;
    cl_context ctx = d->clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = d->clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK(err);
    char *src = read_file(kernels);
    cl_program prog = d->clCreateProgramWithSource(ctx, 1, (const char **)&src, NULL, &err);
    CHECK(err);
    CHECK(d->clBuildProgram(prog, 1, &dev, "", NULL, NULL));
    cl_kernel k = d->clCreateKernel(prog, "advance", &err);
    CHECK(err);
    size_t bytes = n * sizeof(particle_t);
    particle_t *h = malloc(bytes);
    for (cl_uint i = 0; i < n; i++) {
        h[i].x = 1.0f + i * 0.5f;
        h[i].y = 1.0f - i * 0.25f;
        h[i].z = (float)(i % 13);
        h[i].vx = 1.0f / (i + 1);
        h[i].vy = (float)(i % 5) - 2.0f;
    }
    cl_mem b = d->clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CHECK(err);
    CHECK(d->clEnqueueWriteBuffer(q, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
    float dt = 0.01f;
    size_t g = (n + 63) / 64 * 64;
    for (int i = 0; i < 10; i++) {
        CHECK(d->clSetKernelArg(k, 0, sizeof b, &b));
        CHECK(d->clSetKernelArg(k, 1, sizeof n, &n));
        CHECK(d->clSetKernelArg(k, 2, sizeof dt, &dt));
        CHECK(d->clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    }
    CHECK(d->clEnqueueReadBuffer(q, b, CL_TRUE, 0, bytes, h, 0, NULL, NULL));
    printf("after 10 launches %016llx\n", (unsigned long long)fnv(h, bytes));
    CHECK(d->clReleaseMemObject(b));
    CHECK(d->clReleaseKernel(k));
    CHECK(d->clReleaseProgram(prog));
    CHECK(d->clReleaseCommandQueue(q));
    CHECK(d->clReleaseContext(ctx));
    free(h);
    free(src);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: layer_host KERNELS.cl plain | LAYER.so N\n");
        return 2;
    }
    cl_platform_id plat = pick_platform();
    if (!plat) {
        printf("no platform\n");
        return 1;
    }
    /* An ICD platform object starts with its driver's dispatch table. */
    const struct _cl_icd_dispatch *driver = *(const struct _cl_icd_dispatch **)plat;
    if (!strcmp(argv[2], "plain")) {
        workload(driver, plat, argv[1]);
        return 0;
    }
    if (argc < 4) {
        fprintf(stderr, "usage: layer_host KERNELS.cl LAYER.so N\n");
        return 2;
    }
    cl_uint entries = (cl_uint)atoi(argv[3]);

    /* The target: the driver's first `entries` slots, ending where an unreadable page starts. */
    long page = sysconf(_SC_PAGESIZE);
    size_t span = ((entries * sizeof(void *) + page - 1) / page + 1) * page;
    char *region = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED || mprotect(region + span - page, page, PROT_NONE)) {
        printf("mmap failed\n");
        return 1;
    }
    void **target = (void **)(region + span - page) - entries;
    memcpy(target, driver, entries * sizeof(void *));

    void *lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("dlopen %s failed: %s\n", argv[2], dlerror());
        return 1;
    }
    get_layer_info_fn info = (get_layer_info_fn)dlsym(lib, "clGetLayerInfo");
    init_layer_props_fn init = (init_layer_props_fn)dlsym(lib, "clInitLayerWithProperties");
    deinit_layer_fn deinit = (deinit_layer_fn)dlsym(lib, "clDeinitLayer");
    if (!info || !init || !deinit || !dlsym(lib, "clInitLayer")) {
        printf("a layer entry point is missing\n");
        return 1;
    }
    cl_uint version = 0;
    CHECK(info(0x4240 /* CL_LAYER_API_VERSION */, sizeof version, &version, NULL));
    if (version != 100) {
        printf("layer API version %u\n", version);
        return 1;
    }
    /* An unknown property: the layer must accept the list (it has nothing to do with it). */
    cl_properties props[] = {0x4299, 1, 0};
    cl_uint got = 0;
    const struct _cl_icd_dispatch *layer = NULL;
    CHECK(init(entries, (const struct _cl_icd_dispatch *)target, &got, &layer, props));
    if (!layer || got == 0 || got > entries) {
        printf("the layer returned %u entries for %u\n", got, entries);
        return 1;
    }
    /* What the loader does: the layer's slots, the target's where the layer left one empty. */
    void **effective = calloc(sizeof(struct _cl_icd_dispatch) / sizeof(void *), sizeof(void *));
    for (cl_uint i = 0; i < entries; i++)
        effective[i] = i < got && ((void *const *)layer)[i] ? ((void *const *)layer)[i] : target[i];
    workload((const struct _cl_icd_dispatch *)effective, plat, argv[1]);

    /* After clDeinitLayer, the loader's drivers may be gone: the layer must not call them. */
    CHECK(deinit());
    cl_uint ndev = 0;
    cl_int r = ((const struct _cl_icd_dispatch *)effective)->clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 0, NULL, &ndev);
    printf("after clDeinitLayer: clGetDeviceIDs answers %d\n", r);
    return 0;
}
