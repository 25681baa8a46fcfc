/* io/chunked.c — slabs of chunked tensors from their stored chunks: pread (bounds-checked),
 * decode on OpenMP worker threads (io/codec.c), place in order; fill values for chunks never
 * written. No format library is called here. */
#include "io/chunked.h"

#include <errno.h>
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/widen.h"

static int64_t g_memory;  /* decoding memory bound, bytes (0: none) */
static int g_threads;     /* 0: OpenMP's default */

void fp4_chunked_set_memory(int64_t bytes) { g_memory = bytes > 0 ? bytes : 0; }
int64_t fp4_chunked_memory(void) { return g_memory; }
void fp4_chunked_set_threads(int threads) { g_threads = threads > 0 ? threads : 0; }

static int ref_cmp(const void *a, const void *b)
{
    const fp4_chunk_ref *x = a, *y = b;
    return x->lin < y->lin ? -1 : x->lin > y->lin;
}

fp4_status fp4_chunked_prepare(fp4_chunked *c)
{
    if (c->rank < 1 || c->rank > FP4_CHUNKED_MAX_RANK)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: chunked rank %d is not read directly", c->file,
                         c->name, c->rank);
    if (c->elem_size < 1 || c->elem_size > sizeof c->fill)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: element size %zu is not read directly",
                         c->file, c->name, c->elem_size);
    if (!fp4_pipeline_supported(&c->pipeline))
        return fp4_error(FP4_ERR_INPUT, "%s: %s: a filter is not decoded here", c->file,
                         c->name);
    int64_t cells = 1;
    size_t cb = c->elem_size;
    for (int d = 0; d < c->rank; d++) {
        if (c->dims[d] < 0 || c->chunk[d] < 1)
            return fp4_error(FP4_ERR_INPUT, "%s: %s: bad chunk shape", c->file, c->name);
        c->grid[d] = c->dims[d] / c->chunk[d] + (c->dims[d] % c->chunk[d] != 0);
        if (c->grid[d] && cells > INT64_MAX / c->grid[d])
            return fp4_error(FP4_ERR_INPUT, "%s: %s: the chunk grid overflows 64 bits",
                             c->file, c->name);
        cells *= c->grid[d];
        if ((uint64_t)c->chunk[d] > SIZE_MAX / cb)
            return fp4_error(FP4_ERR_INPUT, "%s: %s: the chunk size overflows", c->file,
                             c->name);
        cb *= (size_t)c->chunk[d];
    }
    if (cb > (size_t)INT64_MAX / 4)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: the chunk size overflows", c->file, c->name);
    c->chunk_bytes = cb;
    c->fill_zero = c->fill_defined;
    for (size_t i = 0; i < c->elem_size && c->fill_zero; i++) c->fill_zero = c->fill[i] == 0;
    if (c->nrefs > 0) qsort(c->refs, (size_t)c->nrefs, sizeof *c->refs, ref_cmp);
    for (int64_t i = 0; i < c->nrefs; i++) {
        if (c->refs[i].lin < 0 || c->refs[i].lin >= cells)
            return fp4_error(FP4_ERR_INPUT, "%s: %s: a chunk lies outside the dataset's grid",
                             c->file, c->name);
        if (i && c->refs[i].lin == c->refs[i - 1].lin)
            return fp4_error(FP4_ERR_INPUT, "%s: %s: a chunk is listed twice", c->file,
                             c->name);
    }
    return FP4_OK;
}

size_t fp4_chunked_thread_bytes(const fp4_chunked *c)
{
    uint64_t maxs = 0;
    for (int64_t i = 0; i < c->nrefs; i++)
        if (c->refs[i].bytes > maxs) maxs = c->refs[i].bytes;
    /* stored bytes + the codec's scratch (at most two intermediate buffers when a checksum
     * precedes shuffle; one otherwise) + the decoded chunk when it cannot be decoded in place */
    uint64_t s = maxs + 3 * ((uint64_t)c->chunk_bytes + 64);
    return s > SIZE_MAX ? SIZE_MAX : (size_t)s;
}

/* The chunk at linear index lin, or NULL when never written. */
static const fp4_chunk_ref *ref_find(const fp4_chunked *c, int64_t lin)
{
    int64_t lo = 0, hi = c->nrefs;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (c->refs[mid].lin < lin) lo = mid + 1;
        else hi = mid;
    }
    return lo < c->nrefs && c->refs[lo].lin == lin ? &c->refs[lo] : NULL;
}

static void coords_text(const fp4_chunked *c, const int64_t *cc, char *buf, size_t n)
{
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n - k, "chunk (");
    for (int d = 0; d < c->rank && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? "," : "",
                              (long long)(cc[d] * c->chunk[d]));
    if (k < n) snprintf(buf + k, n - k, ")");
}

typedef struct slab_geom {
    int dim;
    int64_t start, count;
    int64_t od[FP4_CHUNKED_MAX_RANK];      /* slab dims */
    int64_t ostride[FP4_CHUNKED_MAX_RANK]; /* slab strides in elements */
    int64_t cstride[FP4_CHUNKED_MAX_RANK]; /* chunk strides in elements */
} slab_geom;

/* The part of chunk cc inside the slab: element ranges [lo, hi) in dataset coordinates. */
static void chunk_box(const fp4_chunked *c, const slab_geom *g, const int64_t *cc, int64_t *lo,
                      int64_t *hi)
{
    for (int d = 0; d < c->rank; d++) {
        int64_t a = cc[d] * c->chunk[d], b = a + c->chunk[d];
        if (b > c->dims[d]) b = c->dims[d];
        if (d == g->dim) {
            if (a < g->start) a = g->start;
            if (b > g->start + g->count) b = g->start + g->count;
        }
        lo[d] = a;
        hi[d] = b;
    }
}

/* Copy the box [lo, hi) from a decoded chunk (origin co) into the slab, swapping bytes when
 * needed; src NULL: write the fill value. */
static void place(const fp4_chunked *c, const slab_geom *g, const unsigned char *src,
                  const int64_t *co, const int64_t *lo, const int64_t *hi, unsigned char *buf,
                  const unsigned char *fill)
{
    const int r = c->rank;
    const size_t es = c->elem_size;
    int64_t idx[FP4_CHUNKED_MAX_RANK];
    for (int d = 0; d < r; d++) idx[d] = lo[d];
    const size_t run = (size_t)(hi[r - 1] - lo[r - 1]);
    for (;;) {
        int64_t so = 0, doff = 0;
        for (int d = 0; d < r; d++) {
            so += (idx[d] - co[d]) * g->cstride[d];
            doff += (idx[d] - (d == g->dim ? g->start : 0)) * g->ostride[d];
        }
        unsigned char *dst = buf + (size_t)doff * es;
        if (src) {
            memcpy(dst, src + (size_t)so * es, run * es);
            if (c->swap) fp4_swap_words(dst, run, es);
        } else if (c->fill_zero) {
            memset(dst, 0, run * es);
        } else {
            for (size_t i = 0; i < run; i++) memcpy(dst + i * es, fill, es);
        }
        int d = r - 2;
        for (; d >= 0; d--) {
            if (++idx[d] < hi[d]) break;
            idx[d] = lo[d];
        }
        if (d < 0) break;
    }
}

typedef struct worker {
    fp4_codec *codec;
    unsigned char *raw, *dec;
    size_t raw_cap, dec_cap;
} worker;

static int grow(unsigned char **p, size_t *cap, size_t n)
{
    if (*cap >= n) return 0;
    unsigned char *q = realloc(*p, n ? n : 1);
    if (!q) return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* Read and place chunk cc. On error: the status, with the detail in msg. */
static fp4_status do_chunk(const fp4_chunked *c, const slab_geom *g, const int64_t *cc,
                           unsigned char *buf, worker *w, char *msg, size_t msgn)
{
    int64_t lo[FP4_CHUNKED_MAX_RANK], hi[FP4_CHUNKED_MAX_RANK], co[FP4_CHUNKED_MAX_RANK];
    int64_t lin = 0;
    for (int d = 0; d < c->rank; d++) {
        co[d] = cc[d] * c->chunk[d];
        lin = lin * c->grid[d] + cc[d];
    }
    chunk_box(c, g, cc, lo, hi);
    for (int d = 0; d < c->rank; d++)
        if (lo[d] >= hi[d]) return FP4_OK;
    char where[200];
    const fp4_chunk_ref *ref = ref_find(c, lin);
    if (!ref || ref->bytes == 0) {
        if (!c->fill_defined) {
            coords_text(c, cc, where, sizeof where);
            snprintf(msg, msgn,
                     "%s: %s: %s was never written and the dataset defines no fill value",
                     c->file, c->name, where);
            return FP4_ERR_INPUT;
        }
        unsigned char fill[16];
        memcpy(fill, c->fill, c->elem_size);
        if (c->swap) fp4_swap_words(fill, 1, c->elem_size);
        place(c, g, NULL, co, lo, hi, buf, fill);
        return FP4_OK;
    }
    if (ref->addr > (uint64_t)c->file_size || ref->bytes > (uint64_t)c->file_size - ref->addr) {
        coords_text(c, cc, where, sizeof where);
        snprintf(msg, msgn,
                 "%s: %s: %s points outside the file (%llu bytes at offset %llu; the file has "
                 "%lld bytes): the file is truncated or corrupt",
                 c->file, c->name, where, (unsigned long long)ref->bytes,
                 (unsigned long long)ref->addr, (long long)c->file_size);
        return FP4_ERR_INPUT;
    }
    if (grow(&w->raw, &w->raw_cap, (size_t)ref->bytes) != 0) {
        snprintf(msg, msgn, "%s: %s: out of memory for a stored chunk of %llu bytes", c->file,
                 c->name, (unsigned long long)ref->bytes);
        return FP4_ERR_INTERNAL;
    }
    size_t got = 0;
    while (got < ref->bytes) {
        ssize_t k = pread(c->fd, w->raw + got, (size_t)ref->bytes - got,
                          (off_t)(ref->addr + got));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            coords_text(c, cc, where, sizeof where);
            snprintf(msg, msgn, "%s: %s: %s: %s", c->file, c->name, where,
                     k < 0 ? strerror(errno) : "the file ends inside the chunk (truncated)");
            return FP4_ERR_INPUT;
        }
        got += (size_t)k;
    }
    /* A chunk that fills a contiguous run of the slab whole (only the slab's first dimension
     * is split by chunks) is decoded straight into place. */
    bool direct = true;
    int64_t first = 0;
    for (int d = 0; d < c->rank && direct; d++) {
        if (d == 0) {
            direct = lo[0] == co[0] && hi[0] == co[0] + c->chunk[0];
            first = lo[0] - (g->dim == 0 ? g->start : 0);
        } else {
            direct = co[d] == 0 && c->chunk[d] == g->od[d] && c->chunk[d] == c->dims[d];
        }
    }
    unsigned char *dst;
    if (direct) {
        dst = buf + (size_t)(first * g->ostride[0]) * c->elem_size;
    } else {
        if (grow(&w->dec, &w->dec_cap, c->chunk_bytes) != 0) {
            snprintf(msg, msgn, "%s: %s: out of memory for a chunk of %zu bytes", c->file,
                     c->name, c->chunk_bytes);
            return FP4_ERR_INTERNAL;
        }
        dst = w->dec;
    }
    coords_text(c, cc, where, sizeof where);
    char full[1200];
    snprintf(full, sizeof full, "%s: %s: %s", c->file, c->name, where);
    fp4_status st = fp4_chunk_decode(w->codec, &c->pipeline, ref->mask, w->raw,
                                     (size_t)ref->bytes, dst, c->chunk_bytes, full);
    if (st != FP4_OK) {
        snprintf(msg, msgn, "%s", fp4_last_error());
        return st;
    }
    if (direct) {
        if (c->swap) fp4_swap_words(dst, c->chunk_bytes / c->elem_size, c->elem_size);
    } else {
        place(c, g, dst, co, lo, hi, buf, NULL);
    }
    return FP4_OK;
}

fp4_status fp4_chunked_read(const fp4_chunked *c, int dim, int64_t start, int64_t count,
                            void *buf_)
{
    unsigned char *buf = buf_;
    if (dim < 0 || dim >= c->rank || start < 0 || count < 0 || start > c->dims[dim] ||
        count > c->dims[dim] - start)
        return fp4_error(FP4_ERR_USAGE, "%s: %s: slab [%lld, +%lld) along dimension %d is out "
                         "of range", c->file, c->name, (long long)start, (long long)count, dim);
    if (count == 0) return FP4_OK;
    slab_geom g = {.dim = dim, .start = start, .count = count};
    for (int d = 0; d < c->rank; d++) {
        g.od[d] = d == dim ? count : c->dims[d];
        if (g.od[d] == 0) return FP4_OK;
    }
    g.ostride[c->rank - 1] = g.cstride[c->rank - 1] = 1;
    for (int d = c->rank - 2; d >= 0; d--) {
        g.ostride[d] = g.ostride[d + 1] * g.od[d + 1];
        g.cstride[d] = g.cstride[d + 1] * c->chunk[d + 1];
    }
    /* The chunks meeting the slab: the grid box with [first, last] along dim. */
    int64_t clo[FP4_CHUNKED_MAX_RANK], cn[FP4_CHUNKED_MAX_RANK];
    int64_t total = 1;
    for (int d = 0; d < c->rank; d++) {
        clo[d] = d == dim ? start / c->chunk[d] : 0;
        int64_t chi = d == dim ? (start + count - 1) / c->chunk[d] : c->grid[d] - 1;
        cn[d] = chi - clo[d] + 1;
        total *= cn[d]; /* <= the slab's elements: no overflow */
    }
    size_t per = fp4_chunked_thread_bytes(c);
    int nth = g_threads ? g_threads : omp_get_max_threads();
    /* never more threads than CPUs, whatever OMP_NUM_THREADS says on this (reader) thread */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu >= 1 && nth > ncpu) nth = (int)ncpu;
    if (g_memory) {
        if (per > (size_t)g_memory) {
            char where[200];
            coords_text(c, clo, where, sizeof where);
            return fp4_error(FP4_ERR_INPUT,
                             "%s: %s: %s: decoding a chunk of %zu bytes needs %zu bytes of "
                             "working memory, more than the half of --mem-limit kept for "
                             "decoding (%lld bytes; the other half holds the slabs; a chunk "
                             "is decoded whole); raise --mem-limit",
                             c->file, c->name, where, c->chunk_bytes, per, (long long)g_memory);
        }
        int64_t fit = g_memory / (int64_t)per;
        if (fit < nth) nth = (int)(fit < 1 ? 1 : fit);
    }
    if (total < nth) nth = (int)total;
    if (nth < 1) nth = 1;

    /* Errors: the failing chunk first in grid order is reported, whatever the thread count
     * (every chunk before it is still done; those after it are skipped). */
    fp4_status st = FP4_OK;
    int64_t bad = INT64_MAX;
    char msg[1200] = "";
#pragma omp parallel num_threads(nth)
    {
        worker w = {0};
        char lmsg[1200];
        if (fp4_codec_new(&w.codec) != FP4_OK) {
#pragma omp critical(fp4_chunked_err)
            if (bad > -1) {
                bad = -1;
                st = FP4_ERR_INTERNAL;
                snprintf(msg, sizeof msg, "%s: %s: out of memory (chunk decoder)", c->file,
                         c->name);
            }
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t k = 0; k < total; k++) {
            int64_t b;
#pragma omp atomic read
            b = bad;
            if (k > b || !w.codec) continue;
            int64_t cc[FP4_CHUNKED_MAX_RANK], rem = k;
            for (int d = c->rank - 1; d >= 0; d--) {
                cc[d] = clo[d] + rem % cn[d];
                rem /= cn[d];
            }
            fp4_status s = do_chunk(c, &g, cc, buf, &w, lmsg, sizeof lmsg);
            if (s != FP4_OK) {
#pragma omp critical(fp4_chunked_err)
                if (k < bad) {
                    st = s;
                    snprintf(msg, sizeof msg, "%s", lmsg);
#pragma omp atomic write
                    bad = k;
                }
            }
        }
        fp4_codec_free(w.codec);
        free(w.raw);
        free(w.dec);
    }
    if (st != FP4_OK) return fp4_error(st, "%s", msg);
    return FP4_OK;
}
