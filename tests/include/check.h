/* CHECK(call): a test program's OpenCL call that must succeed; otherwise the program prints
 * where and what it returned, on stdout (which the tests compare), and exits with 1. Include it
 * after the OpenCL header. */
#ifndef CLAYOUT_TEST_CHECK_H
#define CLAYOUT_TEST_CHECK_H
#include <stdio.h>
#include <stdlib.h>

#define CHECK(x)                                                          \
    do {                                                                  \
        cl_int e_ = (x);                                                  \
        if (e_ != CL_SUCCESS) {                                           \
            printf("%s:%d: %s failed: %d\n", __FILE__, __LINE__, #x, e_); \
            exit(1);                                                      \
        }                                                                 \
    } while (0)

#endif
