/* read_file(path): a test program's whole input file (an OpenCL C source), NUL-terminated, on
 * the heap; a file that cannot be read ends the program with 1, printing why on stdout (which
 * the tests compare). */
#ifndef CLAYOUT_TEST_READ_FILE_H
#define CLAYOUT_TEST_READ_FILE_H
#include <stdio.h>
#include <stdlib.h>

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = calloc(len + 1, 1);
    if (fread(s, 1, len, f) != (size_t)len)
        exit(1);
    fclose(f);
    return s;
}

#endif
