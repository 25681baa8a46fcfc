/* fuzzutil.h — what the libFuzzer targets share: the input bytes as a file on disk (HDF5 reads
 * files by name) and as an argv (NUL- or newline-separated words). Built only by clang with
 * -fsanitize=fuzzer (`make fuzz-ci`); never part of libfp4.a. */
#ifndef FP4_FUZZUTIL_H
#define FP4_FUZZUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One scratch directory per fuzzing process (removed at exit), under $TMPDIR or /tmp. */
static char fz_dir[4096];

static void fz_cleanup(void)
{
    if (!fz_dir[0]) return;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", fz_dir);
    if (system(cmd) != 0) fprintf(stderr, "fuzz: could not remove %s\n", fz_dir);
}

static const char *fz_scratch(void)
{
    if (fz_dir[0]) return fz_dir;
    const char *base = getenv("TMPDIR");
    snprintf(fz_dir, sizeof fz_dir, "%s/fp4diag-fuzz-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(fz_dir)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(fz_cleanup);
    return fz_dir;
}

/* Write data to DIR/name (replacing it) and return the path (static storage). */
static const char *fz_write_file(const char *name, const uint8_t *data, size_t size)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/%s", fz_scratch(), name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror("fuzz: write input file");
        abort();
    }
    return path;
}

#endif
