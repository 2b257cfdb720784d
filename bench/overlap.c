/* overlap: can a kernel on one queue run while a transfer of another part of the same buffer
 * runs on a second queue? The question behind chunked reads and writes (issue 19, item 4):
 * clayout's conversion back to the host layout of one chunk would run while the chunk before
 * it is read, so that only the first chunk's conversion adds to the read. No clayout here.
 *
 * A buffer of BYTES bytes (default 640 MiB, the blackscholes sample's large size) from plain
 * malloc'd host memory, as legacy programs have it. A kernel that reads and writes every word
 * of its range (what an in-place conversion moves) stands for the conversion. Each line is the
 * median of REPS repetitions, in ms:
 *   read      blocking read of the whole buffer
 *   kernel    the kernel over the whole buffer
 *   serial    the kernel, then the read, on one queue (what clayout does today)
 *   chunked C the kernel in C chunks on a second queue, each chunk read on the first queue
 *             as soon as its kernel is done
 *   write, serialw, chunkedw C: the same for a write followed by the kernel
 * OVERLAP_SPLIT=1: the chunked lines without the kernel (the transfer split in C pieces alone).
 * OVERLAP_PINNED=1: the host memory is a mapped CL_MEM_ALLOC_HOST_PTR buffer (pinned), not malloc.
 * Usage: overlap [PLATFORM] [BYTES] [REPS] */
#include "../samples/common/sample.h"

static const char *src =
    "__kernel void touch(__global float *a, ulong off, ulong n, float s)\n"
    "{ ulong i = off + get_global_id(0); if (i < off + n) a[i] = a[i] * s; }\n";

static double median(double *v, int n)
{
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && v[b - 1] > v[b]; b--) { double t = v[b]; v[b] = v[b - 1]; v[b - 1] = t; }
    return v[n / 2];
}

static cl_event touch(cl_command_queue q, cl_kernel k, cl_mem buf, size_t off, size_t n, cl_uint nw, cl_event *w)
{
    cl_ulong o = off, m = n;
    float s = 1.0f;
    CHECK(clSetKernelArg(k, 0, sizeof buf, &buf));
    CHECK(clSetKernelArg(k, 1, sizeof o, &o));
    CHECK(clSetKernelArg(k, 2, sizeof m, &m));
    CHECK(clSetKernelArg(k, 3, sizeof s, &s));
    size_t local = 256, global = (n + local - 1) / local * local;
    cl_event ev;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, nw, w, &ev));
    return ev;
}

int main(int argc, char **argv)
{
    sample_cl s;
    sample_open(&s, argc > 1 ? argv[1] : NULL);
    size_t bytes = argc > 2 ? strtoull(argv[2], NULL, 10) : 671088640;
    int reps = argc > 3 ? atoi(argv[3]) : 7;
    size_t words = bytes / 4;
    cl_int err;
    cl_command_queue side = clCreateCommandQueue(s.context, s.device, 0, &err);
    CHECK(err);
    cl_program p = clCreateProgramWithSource(s.context, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(p, 1, &s.device, "", NULL, NULL));
    cl_kernel k = clCreateKernel(p, "touch", &err);
    CHECK(err);
    float *host;
    if (getenv("OVERLAP_PINNED")) {
        cl_mem pin = clCreateBuffer(s.context, CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &err);
        CHECK(err);
        host = clEnqueueMapBuffer(s.queue, pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL, NULL, &err);
        CHECK(err);
    } else {
        host = malloc(bytes);
    }
    for (size_t i = 0; i < words; i++) host[i] = (float)(i % 1000);
    cl_mem buf = clCreateBuffer(s.context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CHECK(err);
    CHECK(clEnqueueWriteBuffer(s.queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
    printf("device %s, %zu bytes, median of %d\n", s.device_name, bytes, reps);
    double *t = malloc(reps * sizeof *t);
    int chunks[] = {1, 4, 8, 16, 32};
    /* 0 read, 1 kernel, 2 serial, 3.. chunked; then the write side */
    for (int mode = 0; mode < 3 + 5 + 3 + 5; mode++) {
        int write = mode >= 8, m = write ? mode - 8 : mode;
        for (int r = 0; r < reps + 1; r++) {
            CHECK(clFinish(s.queue));
            CHECK(clFinish(side));
            double t0 = sample_now_ms();
            if (m == 0) {
                if (write) CHECK(clEnqueueWriteBuffer(s.queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
                else CHECK(clEnqueueReadBuffer(s.queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
            } else if (m == 1) {
                clReleaseEvent(touch(s.queue, k, buf, 0, words, 0, NULL));
                CHECK(clFinish(s.queue));
            } else if (m == 2) {
                if (write) {
                    CHECK(clEnqueueWriteBuffer(s.queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
                    clReleaseEvent(touch(s.queue, k, buf, 0, words, 0, NULL));
                    CHECK(clFinish(s.queue));
                } else {
                    clReleaseEvent(touch(s.queue, k, buf, 0, words, 0, NULL));
                    CHECK(clEnqueueReadBuffer(s.queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
                }
            } else {
                int c = chunks[m - 3], split = getenv("OVERLAP_SPLIT") != NULL;
                size_t per = (words + c - 1) / c;
                cl_event last = NULL;
                for (int i = 0; i < c; i++) {
                    size_t off = i * per, n = off + per > words ? words - off : per;
                    if (write) {
                        cl_event w;
                        CHECK(clEnqueueWriteBuffer(s.queue, buf, CL_FALSE, off * 4, n * 4, host + off, 0, NULL, &w));
                        CHECK(clFlush(s.queue));
                        cl_event e = split ? (clRetainEvent(w), w) : touch(side, k, buf, off, n, 1, &w);
                        CHECK(clFlush(side));
                        clReleaseEvent(w);
                        if (last) clReleaseEvent(last);
                        last = e;
                    } else {
                        cl_event e = split ? clCreateUserEvent(s.context, &err) : touch(side, k, buf, off, n, 0, NULL);
                        if (split) CHECK(clSetUserEventStatus(e, CL_COMPLETE));
                        CHECK(clFlush(side));
                        CHECK(clEnqueueReadBuffer(s.queue, buf, i == c - 1, off * 4, n * 4, host + off, 1, &e, NULL));
                        clReleaseEvent(e);
                    }
                }
                if (write) {
                    CHECK(clWaitForEvents(1, &last));
                    clReleaseEvent(last);
                }
                CHECK(clFinish(s.queue));
            }
            if (r) t[r - 1] = sample_now_ms() - t0;
        }
        const char *names[] = {"read", "kernel", "serial", "chunked"};
        if (m < 3)
            printf("%s%s %.3f\n", names[m], write && m != 1 ? "w" : "", median(t, reps));
        else
            printf("chunked%s %d %.3f\n", write ? "w" : "", chunks[m - 3], median(t, reps));
    }
    return 0;
}
