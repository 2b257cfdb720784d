/* timecost: what timing one launch costs a program that does not profile its queue (issue 17:
 * the cost model times a few launches of each kernel, and on a 30-launch run each such launch
 * was measured to cost some 0.2 ms on the H100). No clayout here.
 *
 * A run of LAUNCHES launches of a kernel that streams WORDS floats, clFinish at the end; every
 * EVERY-th launch is timed in one of these ways, and the line gives the run's wall time and
 * what each timed launch added to it, against the same run with nothing timed (median of REPS
 * runs each):
 *   none      nothing timed
 *   markers   a marker before the launch, flushed and polled until complete, then one after
 *             (what clayout does: runtime::cost::measure)
 *   event     the marker before, then the launch's own event polled (no marker after)
 *   finish    clFinish before and after the launch
 *   wait      a marker before and the launch's own event, each waited for by clWaitForEvents
 * Usage: timecost [PLATFORM] [WORDS] [LAUNCHES] [EVERY] [REPS] */
#include "../samples/common/sample.h"
#include <sched.h>

static const char *src = "__kernel void stream(__global float *a, uint n)\n"
                         "{ uint i = get_global_id(0); if (i < n) a[i] = a[i] * 0.5f + 1.0f; }\n";

static double median(double *v, int n)
{
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && v[b - 1] > v[b]; b--) { double t = v[b]; v[b] = v[b - 1]; v[b - 1] = t; }
    return v[n / 2];
}

static void poll(cl_event ev)
{
    cl_int st;
    do {
        CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
        if (st > CL_COMPLETE) sched_yield();
    } while (st > CL_COMPLETE);
}

static void marker_polled(cl_command_queue q)
{
    cl_event m;
    CHECK(clEnqueueMarkerWithWaitList(q, 0, NULL, &m));
    CHECK(clFlush(q));
    poll(m);
    clReleaseEvent(m);
}

int main(int argc, char **argv)
{
    sample_cl s;
    sample_open(&s, argc > 1 ? argv[1] : NULL);
    cl_uint n = argc > 2 ? atoi(argv[2]) : 1 << 20;
    int launches = argc > 3 ? atoi(argv[3]) : 200, every = argc > 4 ? atoi(argv[4]) : 10;
    int reps = argc > 5 ? atoi(argv[5]) : 7;
    cl_int err;
    cl_program p = clCreateProgramWithSource(s.context, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(p, 1, &s.device, "", NULL, NULL));
    cl_kernel k = sample_kernel(p, "stream");
    cl_mem a = sample_buffer(&s, (size_t)n * 4);
    float zero = 0;
    CHECK(clEnqueueFillBuffer(s.queue, a, &zero, 4, 0, (size_t)n * 4, 0, NULL, NULL));
    ARG(k, 0, a);
    ARG(k, 1, n);
    size_t local = 256, global = ((size_t)n + local - 1) / local * local;
    const char *names[] = { "none", "markers", "event", "finish", "wait" };
    double base = 0, *t = malloc(reps * sizeof *t);
    int timed = launches / every;
    printf("device %s, %u words, %d launches, %d of them timed, median of %d runs\n", s.device_name, n, launches, timed, reps);
    for (int mode = 0; mode < 5; mode++) {
        for (int r = 0; r < reps + 1; r++) {
            CHECK(clFinish(s.queue));
            double t0 = sample_now_ms();
            for (int i = 0; i < launches; i++) {
                int timing = mode > 0 && i % every == every - 1;
                cl_event ev = NULL;
                if (timing) {
                    if (mode == 3) CHECK(clFinish(s.queue));
                    else if (mode == 4) {
                        cl_event m;
                        CHECK(clEnqueueMarkerWithWaitList(s.queue, 0, NULL, &m));
                        CHECK(clWaitForEvents(1, &m));
                        clReleaseEvent(m);
                    } else marker_polled(s.queue);
                }
                CHECK(clEnqueueNDRangeKernel(s.queue, k, 1, NULL, &global, &local, 0, NULL, timing && mode != 3 ? &ev : NULL));
                if (timing) {
                    if (mode == 1) marker_polled(s.queue);
                    else if (mode == 2) { CHECK(clFlush(s.queue)); poll(ev); }
                    else if (mode == 3) CHECK(clFinish(s.queue));
                    else CHECK(clWaitForEvents(1, &ev));
                    if (ev) clReleaseEvent(ev);
                }
            }
            CHECK(clFinish(s.queue));
            if (r > 0) t[r - 1] = sample_now_ms() - t0;
        }
        double m = median(t, reps);
        if (mode == 0) base = m;
        printf("%-8s %9.3f ms  %8.1f us per timed launch\n", names[mode], m, mode ? (m - base) * 1000 / timed : 0.0);
    }
    return 0;
}
