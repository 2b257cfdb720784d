/* Reads of a buffer clayout keeps in ASTA, in the style of the GPU vendors' SDK samples: host
 * data staged in pinned memory (a CL_MEM_ALLOC_HOST_PTR buffer mapped once, as the NVIDIA
 * OpenCL best-practices guide has it), a time-step kernel on an array of 5-float bodies,
 * results read back into the pinned area every few steps. Clayout may read such a buffer in
 * chunks, each converted back beside the transfer of the one before (CLAYOUT_CHUNKED_READS);
 * every line printed must be the same with and without clayout.
 *   dl_chunked MODE [N] [EXTRA]
 * N bodies (default 4000), EXTRA bytes of the device buffer past them (default 0). MODE:
 *   pinned       blocking reads into the pinned area, three rounds of steps and reads
 *   malloc       the same into malloc'd memory
 *   nonblocking  a non-blocking read with an event, waited for with clWaitForEvents; the
 *                event's command type and status are printed
 *   ooo          an out-of-order queue, reads with events, one waiting for the other
 *   userevent    a read that waits for a user event set only after it is enqueued
 *   failedgate   a read gated by a user event set to an error: the read fails, the
 *                program goes on and reads again
 *   part         reads of the first half and of a middle window (not chunked: they take
 *                the ordinary path) between whole reads */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../include/pick_platform.h"
#include "../include/fnv.h"

#include "../include/check.h"

static const char *cSourceCL =
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "typedef struct { float px, py, pz, vel, mass; } Body;\n"
    "//DL: AoS: bodies[numBodies]\n"
    "__kernel void integrateBodies(__global Body *bodies, uint numBodies, float deltaTime) {\n"
    "  uint index = get_global_id(0);\n"
    "  if (index >= numBodies) return;\n"
    "  Body b = bodies[index];\n"
    "  b.px += b.vel * deltaTime;\n"
    "  b.py = b.py * 0.5f + b.px * deltaTime;\n"
    "  b.pz -= b.mass * deltaTime;\n"
    "  b.vel = b.vel * 0.99f + b.pz * deltaTime;\n"
    "  bodies[index] = b;\n"
    "}\n";

static cl_context cxGPUContext;
static cl_command_queue cqCommandQueue;
static cl_kernel ckIntegrate;
static cl_uint numBodies;

static void checksum(const char *label, const void *p, size_t bytes)
{
    printf("%s %zu %016llx\n", label, bytes, (unsigned long long)fnv(p, bytes));
}

static void steps(cl_mem dBodies, int count)
{
    float deltaTime = 0.016f;
    size_t szGlobal = numBodies;
    CHECK(clSetKernelArg(ckIntegrate, 0, sizeof(cl_mem), &dBodies));
    CHECK(clSetKernelArg(ckIntegrate, 1, sizeof(cl_uint), &numBodies));
    CHECK(clSetKernelArg(ckIntegrate, 2, sizeof(float), &deltaTime));
    for (int i = 0; i < count; i++)
        CHECK(clEnqueueNDRangeKernel(cqCommandQueue, ckIntegrate, 1, NULL, &szGlobal, NULL, 0, NULL, NULL));
}

static void print_event(const char *label, cl_event ev)
{
    cl_command_type type = 0;
    cl_int status = 1;
    CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL));
    CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
    printf("%s type %s status %d\n", label, type == CL_COMMAND_READ_BUFFER ? "READ_BUFFER" : "other", status);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "pinned";
    numBodies = argc > 2 ? (cl_uint)strtoul(argv[2], NULL, 10) : 4000;
    size_t extra = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;
    size_t memSize = (size_t)numBodies * 5 * sizeof(float) + extra;
    cl_int ciErrNum;
    cl_device_id cdDevice;
    CHECK(clGetDeviceIDs(pick_platform(), CL_DEVICE_TYPE_ALL, 1, &cdDevice, NULL));
    cxGPUContext = clCreateContext(NULL, 1, &cdDevice, NULL, NULL, &ciErrNum);
    CHECK(ciErrNum);
    int ooo = !strcmp(mode, "ooo");
    cqCommandQueue = clCreateCommandQueue(cxGPUContext, cdDevice, ooo ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0,
                                          &ciErrNum);
    CHECK(ciErrNum);
    cl_program cpProgram = clCreateProgramWithSource(cxGPUContext, 1, &cSourceCL, NULL, &ciErrNum);
    CHECK(ciErrNum);
    CHECK(clBuildProgram(cpProgram, 0, NULL, NULL, NULL, NULL));
    ckIntegrate = clCreateKernel(cpProgram, "integrateBodies", &ciErrNum);
    CHECK(ciErrNum);

    /* Pinned staging area, mapped once for the whole run. */
    cl_mem cmPinned = NULL;
    float *hBodies;
    if (!strcmp(mode, "malloc")) {
        hBodies = malloc(memSize);
    } else {
        cmPinned = clCreateBuffer(cxGPUContext, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, memSize, NULL, &ciErrNum);
        CHECK(ciErrNum);
        hBodies = clEnqueueMapBuffer(cqCommandQueue, cmPinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, memSize, 0,
                                     NULL, NULL, &ciErrNum);
        CHECK(ciErrNum);
    }
    for (size_t i = 0; i < memSize / sizeof(float); i++)
        hBodies[i] = (float)(i % 113) * 0.125f - (float)(i % 7);
    cl_mem dBodies = clCreateBuffer(cxGPUContext, CL_MEM_READ_WRITE, memSize, NULL, &ciErrNum);
    CHECK(ciErrNum);
    CHECK(clEnqueueWriteBuffer(cqCommandQueue, dBodies, CL_TRUE, 0, memSize, hBodies, 0, NULL, NULL));

    if (!strcmp(mode, "pinned") || !strcmp(mode, "malloc")) {
        for (int round = 0; round < 3; round++) {
            steps(dBodies, 2);
            memset(hBodies, 0, memSize);
            CHECK(clEnqueueReadBuffer(cqCommandQueue, dBodies, CL_TRUE, 0, memSize, hBodies, 0, NULL, NULL));
            checksum("round", hBodies, memSize);
        }
    } else if (!strcmp(mode, "nonblocking")) {
        steps(dBodies, 3);
        cl_event evRead;
        memset(hBodies, 0, memSize);
        CHECK(clEnqueueReadBuffer(cqCommandQueue, dBodies, CL_FALSE, 0, memSize, hBodies, 0, NULL, &evRead));
        CHECK(clFlush(cqCommandQueue));
        CHECK(clWaitForEvents(1, &evRead));
        print_event("read", evRead);
        CHECK(clReleaseEvent(evRead));
        checksum("nonblocking", hBodies, memSize);
        steps(dBodies, 1);
        CHECK(clEnqueueReadBuffer(cqCommandQueue, dBodies, CL_TRUE, 0, memSize, hBodies, 0, NULL, NULL));
        checksum("again", hBodies, memSize);
    } else if (ooo) {
        /* Out of order: each command names what it waits for. */
        float deltaTime = 0.016f;
        size_t szGlobal = numBodies;
        cl_event evStep, evRead, evStep2, evRead2;
        CHECK(clSetKernelArg(ckIntegrate, 0, sizeof(cl_mem), &dBodies));
        CHECK(clSetKernelArg(ckIntegrate, 1, sizeof(cl_uint), &numBodies));
        CHECK(clSetKernelArg(ckIntegrate, 2, sizeof(float), &deltaTime));
        CHECK(clEnqueueNDRangeKernel(cqCommandQueue, ckIntegrate, 1, NULL, &szGlobal, NULL, 0, NULL, &evStep));
        CHECK(clEnqueueReadBuffer(cqCommandQueue, dBodies, CL_FALSE, 0, memSize, hBodies, 1, &evStep, &evRead));
        CHECK(clEnqueueNDRangeKernel(cqCommandQueue, ckIntegrate, 1, NULL, &szGlobal, NULL, 1, &evRead, &evStep2));
        CHECK(clWaitForEvents(1, &evRead));
        print_event("read", evRead);
        checksum("first", hBodies, memSize);
        float *second = malloc(memSize);
        CHECK(clEnqueueReadBuffer(cqCommandQueue, dBodies, CL_FALSE, 0, memSize, second, 1, &evStep2, &evRead2));
        CHECK(clWaitForEvents(1, &evRead2));
        checksum("second", second, memSize);
        free(second);
        clReleaseEvent(evStep);
        clReleaseEvent(evRead);
        clReleaseEvent(evStep2);
        clReleaseEvent(evRead2);
    } else if (!strcmp(mode, "userevent")) {
        steps(dBodies, 2);
        cl_event evGate = clCreateUserEvent(cxGPUContext, &ciErrNum);
        CHECK(ciErrNum);
        cl_event evRead;
        memset(hBodies, 0, memSize);
        CHECK(clEnqueueReadBuffer(cqCommandQueue, dBodies, CL_FALSE, 0, memSize, hBodies, 1, &evGate, &evRead));
        CHECK(clFlush(cqCommandQueue));
        cl_int status = 0;
        CHECK(clGetEventInfo(evRead, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
        printf("gated read finished before its gate: %s\n", status == CL_COMPLETE ? "yes" : "no");
        CHECK(clSetUserEventStatus(evGate, CL_COMPLETE));
        CHECK(clWaitForEvents(1, &evRead));
        print_event("read", evRead);
        checksum("gated", hBodies, memSize);
        clReleaseEvent(evRead);
        clReleaseEvent(evGate);
    } else if (!strcmp(mode, "failedgate")) {
        steps(dBodies, 2);
        /* PoCL 3.1 may still run a read whose gate fails at the moment a command it waits for
         * ends: it then aborts on an assertion, or the read writes its bytes late, over what
         * was read after it (seen once in a thousand runs without clayout, on a loaded CPU).
         * So nothing is in flight when the gate fails (clayout's conversions of the read have
         * 20 ms to end), and the failed read goes where nothing is checked, never freed. */
        CHECK(clFinish(cqCommandQueue));
        void *hScratch = malloc(memSize);
        cl_event evGate = clCreateUserEvent(cxGPUContext, &ciErrNum);
        CHECK(ciErrNum);
        cl_event evRead;
        CHECK(clEnqueueReadBuffer(cqCommandQueue, dBodies, CL_FALSE, 0, memSize, hScratch, 1, &evGate, &evRead));
        CHECK(clFlush(cqCommandQueue));
        struct timespec settle = {0, 20 * 1000 * 1000};
        nanosleep(&settle, NULL);
        CHECK(clSetUserEventStatus(evGate, -1));
        cl_int waited = clWaitForEvents(1, &evRead);
        cl_int status = 0;
        CHECK(clGetEventInfo(evRead, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
        printf("gated read: wait %s, status %s\n", waited == CL_SUCCESS ? "ok" : "failed",
               status < 0 ? "an error" : "not an error");
        clReleaseEvent(evRead);
        clReleaseEvent(evGate);
        CHECK(clFinish(cqCommandQueue));
        steps(dBodies, 1);
        memset(hBodies, 0, memSize);
        CHECK(clEnqueueReadBuffer(cqCommandQueue, dBodies, CL_TRUE, 0, memSize, hBodies, 0, NULL, NULL));
        checksum("after", hBodies, memSize);
    } else if (!strcmp(mode, "part")) {
        steps(dBodies, 2);
        CHECK(clEnqueueReadBuffer(cqCommandQueue, dBodies, CL_TRUE, 0, memSize / 2, hBodies, 0, NULL, NULL));
        checksum("half", hBodies, memSize / 2);
        steps(dBodies, 1);
        size_t at = memSize / 3 / 4 * 4;
        CHECK(clEnqueueReadBuffer(cqCommandQueue, dBodies, CL_TRUE, at, memSize / 4, hBodies, 0, NULL, NULL));
        checksum("window", hBodies, memSize / 4);
        steps(dBodies, 1);
        CHECK(clEnqueueReadBuffer(cqCommandQueue, dBodies, CL_TRUE, 0, memSize, hBodies, 0, NULL, NULL));
        checksum("whole", hBodies, memSize);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }

    CHECK(clFinish(cqCommandQueue));
    if (cmPinned) {
        CHECK(clEnqueueUnmapMemObject(cqCommandQueue, cmPinned, hBodies, 0, NULL, NULL));
        CHECK(clFinish(cqCommandQueue));
        clReleaseMemObject(cmPinned);
    } else {
        free(hBodies);
    }
    clReleaseMemObject(dBodies);
    clReleaseKernel(ckIntegrate);
    clReleaseProgram(cpProgram);
    clReleaseCommandQueue(cqCommandQueue);
    clReleaseContext(cxGPUContext);
    printf("done\n");
    return 0;
}
