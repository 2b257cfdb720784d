/* fnv(data, len): the 64-bit FNV-1a hash of a buffer's bytes, which the test programs print so
 * that the tests compare a run under clayout with the plain run bit for bit. */
#ifndef CLAYOUT_TEST_FNV_H
#define CLAYOUT_TEST_FNV_H
#include <stddef.h>
#include <stdint.h>

static inline uint64_t fnv(const void *data, size_t len)
{
    const unsigned char *b = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

#endif
