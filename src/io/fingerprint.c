/* io/fingerprint.c — size and sampled XXH3 of each input file for partial reports (see
 * fingerprint.h). Reads with pread on a descriptor of fp4_open_regular: a FIFO or device named
 * by a directory entry is seen by stat and left out, never opened or waited on. */
#include "io/fingerprint.h"

#include <errno.h>
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

int64_t fp4_fingerprint_hashed(int64_t size)
{
    return size <= FP4_PRINT_WHOLE
               ? size
               : 2 * (int64_t)FP4_PRINT_END + (int64_t)FP4_PRINT_PIECES * FP4_PRINT_PIECE;
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

fp4_status fp4_fingerprint_file(const char *path, fp4_file_print *out)
{
    memset(out, 0, sizeof *out);
    struct stat sb;
    const char *why;
    /* only a regular file is opened (stat first: no FIFO waited on, no device opened) */
    int fd = fp4_open_regular(path, &sb, &why);
    if (fd < 0) return fp4_error(FP4_ERR_INPUT, "%s: cannot open: %s", path, why);
    fp4_status st = print_fd(fd, path, (int64_t)sb.st_size, out);
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
        /* what the input names beyond itself (a directory's entries, an index's shards) that
         * resolves outside its tree is not read (SPEC §8), not even to be hashed */
        char *root = fp4_source_allow_external() ? NULL : fp4_source_tree(inputs[j]);
        int kept = nm > 0 ? 1 : 0;
        for (int i = 1; i < nm; i++) {
            if (root && fp4_source_outside_tree(more[i], root)) free(more[i]);
            else more[kept++] = more[i];
        }
        nm = kept;
        free(root);
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
        const char *why;
        /* not a regular file (a directory, FIFO or device: never opened) or not readable
         * here: left out (reading it says why, if it is read) */
        int fd = fp4_open_regular(files[i], &sb, &why);
        if (fd < 0) continue;
        st = print_fd(fd, files[i], (int64_t)sb.st_size, &p[k]);
        if (st == FP4_OK) {
            p[k].path = files[i];
            files[i] = NULL;
            k++;
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

fp4_status fp4_fingerprint_recheck(const char *const *inputs, int ninputs,
                                   const fp4_file_print *p, int n)
{
    fp4_file_print *q = NULL;
    int m = 0;
    FP4_TRY(fp4_fingerprint_inputs(inputs, ninputs, &q, &m));
    fp4_status st = FP4_OK;
    for (int i = 0, j = 0; st == FP4_OK && (i < n || j < m);) {
        const int c = i >= n ? 1 : j >= m ? -1 : strcmp(p[i].path, q[j].path);
        if (c < 0)
            st = fp4_error(FP4_ERR_INPUT, "%s: gone while the input was read (it was there "
                           "when its fingerprint was taken)", p[i].path);
        else if (c > 0)
            st = fp4_error(FP4_ERR_INPUT, "%s: appeared while the input was read (not there "
                           "when its fingerprint was taken)", q[j].path);
        else if (p[i].size != q[j].size || p[i].xxh3 != q[j].xxh3)
            st = fp4_error(FP4_ERR_INPUT, "%s: changed while it was read (size or contents "
                           "differ from its fingerprint taken before)", p[i].path);
        else
            i++, j++;
    }
    fp4_fingerprint_free(q, m);
    return st;
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
