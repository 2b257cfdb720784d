/* Shared helpers for the clayout shim test programs (the .c files beside it).
 *
 * Every OpenCL call a program wants the harness to check goes through CL(fn, args...), which
 * counts it by name before calling it. At the end the program prints one line
 *     calls <name> <count>
 * per counted entry point; tests/shim.rs compares those lines with the "calls" table of the
 * shim's CLAYOUT_STATS JSON. Output is deterministic: values and checksums only, never
 * pointers or timings. */
#ifndef CLAYOUT_TEST_COMMON_H
#define CLAYOUT_TEST_COMMON_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#include <CL/cl.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COUNTED 96

struct call_count {
    const char *name;
    atomic_long n;
};
static struct call_count g_counts[MAX_COUNTED];
static atomic_int g_ncounts;
static atomic_flag g_count_lock = ATOMIC_FLAG_INIT;

/* Thread-safe: the table only grows, under a spin lock; counts are atomic. */
static void count_call(const char *name) {
    int n = atomic_load(&g_ncounts);
    for (int i = 0; i < n; i++)
        if (strcmp(g_counts[i].name, name) == 0) {
            atomic_fetch_add(&g_counts[i].n, 1);
            return;
        }
    while (atomic_flag_test_and_set(&g_count_lock)) {
    }
    n = atomic_load(&g_ncounts);
    int i;
    for (i = 0; i < n; i++)
        if (strcmp(g_counts[i].name, name) == 0)
            break;
    if (i == n) {
        if (n == MAX_COUNTED) {
            fprintf(stderr, "too many counted entry points\n");
            exit(3);
        }
        g_counts[n].name = name;
        atomic_store(&g_counts[n].n, 0);
        atomic_store(&g_ncounts, n + 1);
    }
    atomic_fetch_add(&g_counts[i].n, 1);
    atomic_flag_clear(&g_count_lock);
}

#define CL(fn, ...) (count_call(#fn), fn(__VA_ARGS__))

static int cmp_counts(const void *a, const void *b) {
    return strcmp(((const struct call_count *)a)->name, ((const struct call_count *)b)->name);
}

static void print_counts(void) {
    int n = atomic_load(&g_ncounts);
    qsort(g_counts, (size_t)n, sizeof g_counts[0], cmp_counts);
    for (int i = 0; i < n; i++)
        printf("calls %s %ld\n", g_counts[i].name, atomic_load(&g_counts[i].n));
}

static const char *cl_err_name(cl_int e) {
    switch (e) {
    case CL_SUCCESS: return "CL_SUCCESS";
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_MISALIGNED_SUB_BUFFER_OFFSET: return "CL_MISALIGNED_SUB_BUFFER_OFFSET";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_DEVICE: return "CL_INVALID_DEVICE";
    case CL_INVALID_CONTEXT: return "CL_INVALID_CONTEXT";
    case CL_INVALID_QUEUE_PROPERTIES: return "CL_INVALID_QUEUE_PROPERTIES";
    case CL_INVALID_COMMAND_QUEUE: return "CL_INVALID_COMMAND_QUEUE";
    case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_IMAGE_FORMAT_DESCRIPTOR: return "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR";
    case CL_INVALID_PROGRAM: return "CL_INVALID_PROGRAM";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL: return "CL_INVALID_KERNEL";
    case CL_INVALID_ARG_INDEX: return "CL_INVALID_ARG_INDEX";
    case CL_INVALID_ARG_VALUE: return "CL_INVALID_ARG_VALUE";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_EVENT: return "CL_INVALID_EVENT";
    case CL_INVALID_OPERATION: return "CL_INVALID_OPERATION";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    default: {
        static _Thread_local char other[32];
        snprintf(other, sizeof other, "error %d", e);
        return other;
    }
    }
}

#define CHECK(what, err)                                                                          \
    do {                                                                                          \
        cl_int e_ = (err);                                                                        \
        if (e_ != CL_SUCCESS) {                                                                   \
            printf("FAIL %s: %d %s (line %d)\n", what, e_, cl_err_name(e_), __LINE__);          \
            fflush(stdout);                                                                       \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

/* FNV-1a over bytes: a deterministic checksum to print. */
static uint64_t fnv1a(const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    return h;
}

#endif
