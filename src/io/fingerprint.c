/* io/fingerprint.c — size and sampled XXH3 of each input file for partial reports (see
 * fingerprint.h). Reads with pread on a descriptor opened O_NONBLOCK: a FIFO or device named
 * by a directory entry is seen by fstat and left out, never waited on. */
#include "io/fingerprint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "io/source.h"

static fp4_status hash_range(int fd, const char *path, XXH3_state_t *h, unsigned char *buf,
                             int64_t off, int64_t len, int64_t *hashed)
{
    while (len > 0) {
        size_t want = len > FP4_PRINT_END ? FP4_PRINT_END : (size_t)len;
        ssize_t k = pread(fd, buf, want, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0)
            return fp4_error(FP4_ERR_INPUT, "%s: read error while taking its fingerprint: %s",
                             path, k < 0 ? strerror(errno) : "file shorter than its size");
        XXH3_64bits_update(h, buf, (size_t)k);
        off += k;
        len -= k;
        *hashed += k;
    }
    return FP4_OK;
}

static fp4_status print_fd(int fd, const char *path, int64_t size, fp4_file_print *out)
{
    XXH3_state_t *h = XXH3_createState();
    unsigned char *buf = malloc(FP4_PRINT_END);
    if (!h || !buf) {
        XXH3_freeState(h);
        free(buf);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    XXH3_64bits_reset(h);
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)((uint64_t)size >> (8 * i));
    XXH3_64bits_update(h, le, sizeof le);
    int64_t hashed = 0;
    fp4_status st;
    if (size <= FP4_PRINT_WHOLE) {
        st = hash_range(fd, path, h, buf, 0, size, &hashed);
    } else {
        st = hash_range(fd, path, h, buf, 0, FP4_PRINT_END, &hashed);
        /* pieces evenly spaced over [END, size - END - PIECE], in file order */
        const int64_t lo = FP4_PRINT_END, span = size - 2 * FP4_PRINT_END - FP4_PRINT_PIECE;
        for (int k = 0; st == FP4_OK && k < FP4_PRINT_PIECES; k++) {
            int64_t off = lo + (span > 0 ? span / (FP4_PRINT_PIECES - 1) * k : 0);
            st = hash_range(fd, path, h, buf, off, FP4_PRINT_PIECE, &hashed);
        }
        if (st == FP4_OK)
            st = hash_range(fd, path, h, buf, size - FP4_PRINT_END, FP4_PRINT_END, &hashed);
    }
    if (st == FP4_OK) {
        out->size = size;
        out->xxh3 = XXH3_64bits_digest(h);
        out->hashed = hashed;
    }
    XXH3_freeState(h);
    free(buf);
    return st;
}

/* Open without waiting (O_NONBLOCK: a FIFO opens at once) and say whether it is a regular
 * file; -1 with errno when it cannot be opened. */
static int open_regular(const char *path, struct stat *sb, int *regular)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return -1;
    if (fstat(fd, sb) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    *regular = S_ISREG(sb->st_mode);
    return fd;
}

fp4_status fp4_fingerprint_file(const char *path, fp4_file_print *out)
{
    memset(out, 0, sizeof *out);
    struct stat sb;
    int regular = 0;
    int fd = open_regular(path, &sb, &regular);
    if (fd < 0) return fp4_error(FP4_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
    fp4_status st = regular ? print_fd(fd, path, (int64_t)sb.st_size, out)
                            : fp4_error(FP4_ERR_INPUT, "%s: not a regular file", path);
    close(fd);
    if (st == FP4_OK && !(out->path = strdup(path)))
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
    return st;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

fp4_status fp4_fingerprint_inputs(const char *const *inputs, int ninputs, fp4_file_print **out,
                                  int *n)
{
    *out = NULL;
    *n = 0;
    char **files = NULL;
    int nf = 0;
    fp4_status st = FP4_OK;
    for (int j = 0; st == FP4_OK && j < ninputs; j++) {
        char **more = NULL;
        int nm = 0;
        if (!inputs[j] || (st = fp4_source_input_files(inputs[j], &more, &nm)) != FP4_OK) continue;
        char **all = realloc(files, (size_t)(nf + nm + 1) * sizeof *all);
        if (!all) {
            fp4_source_files_free(more, nm);
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            break;
        }
        files = all;
        memcpy(files + nf, more, (size_t)nm * sizeof *more);
        nf += nm;
        free(more);
    }
    if (nf > 0) qsort(files, (size_t)nf, sizeof *files, by_path);
    fp4_file_print *p = st == FP4_OK ? calloc((size_t)(nf ? nf : 1), sizeof *p) : NULL;
    if (st == FP4_OK && !p) st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
    int k = 0;
    for (int i = 0; st == FP4_OK && i < nf; i++) {
        if (k > 0 && !strcmp(files[i], p[k - 1].path)) continue; /* named twice */
        struct stat sb;
        int regular = 0;
        int fd = open_regular(files[i], &sb, &regular);
        if (fd < 0) continue; /* not readable here: reading it says why, if it is read */
        if (regular) {
            st = print_fd(fd, files[i], (int64_t)sb.st_size, &p[k]);
            if (st == FP4_OK) {
                p[k].path = files[i];
                files[i] = NULL;
                k++;
            }
        }
        close(fd);
    }
    fp4_source_files_free(files, nf);
    if (st != FP4_OK) {
        fp4_fingerprint_free(p, k);
        return st;
    }
    *out = p;
    *n = k;
    return FP4_OK;
}

fp4_status fp4_fingerprint_input(const char *input, fp4_file_print **out, int *n)
{
    return fp4_fingerprint_inputs(&input, 1, out, n);
}

void fp4_fingerprint_free(fp4_file_print *p, int n)
{
    for (int i = 0; p && i < n; i++) free(p[i].path);
    free(p);
}

void fp4_fingerprint_hex(uint64_t h, char buf[17])
{
    snprintf(buf, 17, "%016llx", (unsigned long long)h);
}
