/* mixedlayout: what lbm's launches would cost if each grid argument could be addressed in its
 * own layout (issue 19, item 2: per-argument layouts), and if its last launch wrote the host
 * layout itself (item 3: a conversion back fused into a launch). No clayout here: the sample's
 * hand-written ASTA kernel (samples/lbm/lbm_asta.cl) with one of its two addressing macros
 * replaced by AoS addressing, against the kernel as written and the ASTA kernel, and a copy of
 * one grid (what a conversion of it moves: clayout's conversions run at 92-99 % of copy
 * bandwidth, docs/performance.md).
 *
 * Per-argument layouts pay for lbm only if the first launch reading its source grid in AoS and
 * writing its destination in ASTA costs less than the ASTA launch plus the source grid's
 * conversion; a fused conversion back pays only if a last launch reading ASTA and writing AoS
 * costs less than the ASTA launch plus the destination grid's conversion back.
 *
 * Device time of each launch from its profiling information, median of REPS, in ms:
 *   aos            lbm_aos.cl, both grids AoS (the program as written)
 *   asta           lbm_asta.cl, both grids ASTA (what clayout runs once both are converted)
 *   src-aos        source grid read in AoS, destination written in ASTA
 *   dst-aos        source grid read in ASTA, destination written in AoS
 *   copy           clEnqueueCopyBuffer of one grid
 * Usage: mixedlayout [PLATFORM] [LBM_DIR] [NX NY NZ] [REPS] [TILE] */
#include "../samples/common/sample.h"

#define NQ 19

static double median(double *v, int n)
{
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && v[b - 1] > v[b]; b--) { double t = v[b]; v[b] = v[b - 1]; v[b - 1] = t; }
    return v[n / 2];
}

/* text with the line that starts with `prefix` replaced by `line` (both without newline). */
static char *replace_line(const char *text, const char *prefix, const char *line)
{
    const char *at = strstr(text, prefix);
    if (!at) { fprintf(stderr, "no line starting with %s\n", prefix); exit(1); }
    const char *end = strchr(at, '\n');
    if (!end) end = at + strlen(at);
    size_t head = at - text, size = head + strlen(line) + strlen(end) + 1;
    char *out = malloc(size);
    memcpy(out, text, head);
    strcpy(out + head, line);
    strcat(out, end);
    return out;
}

static cl_kernel kernel_from(sample_cl *s, const char *text, const char *options)
{
    cl_int err;
    cl_program p = clCreateProgramWithSource(s->context, 1, &text, NULL, &err);
    CHECK(err);
    if (clBuildProgram(p, 1, &s->device, options, NULL, NULL) != CL_SUCCESS) {
        char log[8192] = "";
        clGetProgramBuildInfo(p, s->device, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        fprintf(stderr, "build failed:\n%s\n", log);
        exit(1);
    }
    return sample_kernel(p, "lbm_stream_collide");
}

static double time_event(cl_event ev)
{
    cl_ulong a, b;
    CHECK(clWaitForEvents(1, &ev));
    CHECK(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof a, &a, NULL));
    CHECK(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof b, &b, NULL));
    clReleaseEvent(ev);
    return (b - a) / 1e6;
}

int main(int argc, char **argv)
{
    sample_cl s;
    sample_open(&s, argc > 1 ? argv[1] : NULL);
    const char *dir = argc > 2 ? argv[2] : "samples/lbm";
    cl_uint nx = argc > 5 ? atoi(argv[3]) : 192, ny = argc > 5 ? atoi(argv[4]) : 192, nz = argc > 5 ? atoi(argv[5]) : 128;
    int reps = argc > 6 ? atoi(argv[6]) : 21;
    int tile = argc > 7 ? atoi(argv[7]) : 32;
    char path[4096], options[64];
    snprintf(path, sizeof path, "%s/lbm_aos.cl", dir);
    char *aos = sample_read_file(path);
    snprintf(path, sizeof path, "%s/lbm_asta.cl", dir);
    char *asta = sample_read_file(path);
    snprintf(options, sizeof options, "-D CLAYOUT_TILE=%d", tile);
    char *src_aos = replace_line(asta, "#define SRC(c, k)", "#define SRC(c, k) ws[(c) * 19 + (k)]");
    char *dst_aos = replace_line(asta, "#define DST(c, k)", "#define DST(c, k) wd[(c) * 19 + (k)]");
    struct { const char *name, *text, *options; } v[] = {
        { "aos", aos, "" }, { "asta", asta, options }, { "src-aos", src_aos, options }, { "dst-aos", dst_aos, options },
    };

    size_t n = (size_t)nx * ny * nz, bytes = n * NQ * sizeof(float);
    float *grid = malloc(bytes);
    cl_uint *flags = malloc(n * sizeof *flags);
    for (size_t i = 0; i < n; i++) {
        size_t x = i % nx, y = i / nx % ny, z = i / nx / ny;
        flags[i] = z == nz - 1 ? 2 : (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1) ? 1 : 0;
        for (int k = 0; k < NQ; k++) grid[i * NQ + k] = k == 0 ? 1.0f / 3 : k < 7 ? 1.0f / 18 : 1.0f / 36;
    }
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(s.context, s.device, CL_QUEUE_PROFILING_ENABLE, &err);
    CHECK(err);
    cl_mem g[2] = { sample_buffer(&s, bytes), sample_buffer(&s, bytes) };
    cl_mem fl = sample_buffer(&s, n * sizeof *flags);
    CHECK(clEnqueueWriteBuffer(q, g[0], CL_TRUE, 0, bytes, grid, 0, NULL, NULL));
    CHECK(clEnqueueWriteBuffer(q, g[1], CL_TRUE, 0, bytes, grid, 0, NULL, NULL));
    CHECK(clEnqueueWriteBuffer(q, fl, CL_TRUE, 0, n * sizeof *flags, flags, 0, NULL, NULL));
    float omega = 1.0f / 0.6f, lid_u = 0.05f;
    printf("device %s, %ux%ux%u cells (%zu bytes a grid), tile %d, median of %d\n", s.device_name, nx, ny, nz, bytes, tile, reps);
    double *t = malloc(reps * sizeof *t);
    size_t local = 128, global = (n + local - 1) / local * local;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        cl_kernel k = kernel_from(&s, v[i].text, v[i].options);
        ARG(k, 2, fl);
        ARG(k, 3, nx);
        ARG(k, 4, ny);
        ARG(k, 5, nz);
        ARG(k, 6, omega);
        ARG(k, 7, lid_u);
        /* The same source and destination every time: the values do not matter to the time,
         * and a grid read in the other layout holds whatever the last launch left there. */
        ARG(k, 0, g[0]);
        ARG(k, 1, g[1]);
        for (int r = 0; r < reps + 3; r++) {
            cl_event ev;
            CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, &ev));
            double ms = time_event(ev);
            if (r >= 3) t[r - 3] = ms;
        }
        printf("%-8s %.4f ms\n", v[i].name, median(t, reps));
        clReleaseKernel(k);
    }
    for (int r = 0; r < reps + 3; r++) {
        cl_event ev;
        CHECK(clEnqueueCopyBuffer(q, g[0], g[1], 0, 0, bytes, 0, NULL, &ev));
        double ms = time_event(ev);
        if (r >= 3) t[r - 3] = ms;
    }
    printf("%-8s %.4f ms\n", "copy", median(t, reps));
    return 0;
}
