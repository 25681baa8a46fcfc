/* driver.c — stream each selected dataset through the backend, one tensor at a time, in slabs
 * bounded by --mem-limit; per-tensor failures become error entries (SPEC §8). */
#include "driver.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"

void fp4_layout_of(const int64_t *dims, int rank, int axis, fp4_layout *L)
{
    memset(L, 0, sizeof *L);
    if (rank == 0) {
        L->n_rows = 1;
        L->row_len = 1;
        L->outer_stride = 1;
        L->rows_per_index = 1;
        return;
    }
    int64_t nelems = 1;
    for (int d = 0; d < rank; d++) nelems *= dims[d];
    L->row_len = dims[axis];
    L->n_rows = L->row_len ? nelems / L->row_len : 0;
    if (rank == 1) {
        L->slab_dim = 0;
        L->rows_per_index = 0; /* one row, read whole */
        L->outer_stride = 1;
        return;
    }
    L->slab_dim = axis == 0 ? 1 : 0;
    L->outer_stride = dims[L->slab_dim] ? nelems / dims[L->slab_dim] : 0;
    L->rows_per_index = L->row_len ? L->outer_stride / L->row_len : 0;
}

void fp4_slab_to_rows(const float *slab, float *rows, const int64_t *dims, int rank, int axis,
                      int slab_dim, int64_t count)
{
    int64_t outer = 1, inner = 1, A = rank ? dims[axis] : 1;
    for (int d = 0; d < axis; d++) outer *= d == slab_dim ? count : dims[d];
    for (int d = axis + 1; d < rank; d++) inner *= d == slab_dim ? count : dims[d];
    if (inner == 1) {
        memcpy(rows, slab, (size_t)(outer * A) * sizeof *rows);
        return;
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < A; k++) {
            const float *src = slab + (o * A + k) * inner;
            float *dst = rows + o * inner * A + k;
            for (int64_t i = 0; i < inner; i++) dst[i * A] = src[i];
        }
}

void fp4_rht_delta_compute(const fp4_metrics *plain, const fp4_metrics *rotated,
                           fp4_rht_delta *d)
{
    d->sqnr_ok = plain->sqnr_status == FP4_SQNR_OK && rotated->sqnr_status == FP4_SQNR_OK &&
                 isfinite(plain->sqnr_db) && isfinite(rotated->sqnr_db);
    d->delta_sqnr_db = d->sqnr_ok ? rotated->sqnr_db - plain->sqnr_db : 0.0;
    d->delta_alpha = rotated->alpha - plain->alpha;
    d->delta_bucket_ratio_15 = rotated->bucket_ratio_15 - plain->bucket_ratio_15;
    d->delta_bucket_ratio_8 = rotated->bucket_ratio_8 - plain->bucket_ratio_8;
}

static char *xstrdup(const char *s)
{
    char *r = strdup(s ? s : "");
    return r;
}

static fp4_status add_error(fp4_run *run, int index, const char *tensor, fp4_status st,
                            const char *msg)
{
    fp4_tensor_error *e = realloc(run->errors, (size_t)(run->nerrors + 1) * sizeof *e);
    if (!e) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    run->errors = e;
    e[run->nerrors].index = index;
    e[run->nerrors].tensor = xstrdup(tensor);
    e[run->nerrors].status = st;
    e[run->nerrors].message = fp4_text_escape(msg, FP4_ESC_CONTROL, NULL); /* one line */
    if (!e[run->nerrors].tensor || !e[run->nerrors].message)
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    run->nerrors++;
    return FP4_OK;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Whether any config quantizes 16x16 tiles (slabs then hold multiples of 16 rows). */
static bool any_weight_2d(const fp4_qconfig *cfgs, int n)
{
    for (int i = 0; i < n; i++)
        if (cfgs[i].weight_2d) return true;
    return false;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Slabs are read by one reader thread (every source call of a pass is made from it; the main
 * thread makes none until it is joined) into two buffers, so slab k+1 is read while slab k is
 * analysed. Slabs of about SLAB_TARGET_BYTES stay in cache between the read and the analysis
 * and reuse the same pages (no page faults after the first two slabs). Results do not depend
 * on the split (SPEC §7). */
#define SLAB_TARGET_BYTES ((int64_t)8 << 20)
/* The least memory a tensor's smallest slab may take whatever --mem-limit says (a limit of a
 * few KiB still analyses small tensors, slab by slab). */
#define MIN_SLAB_FLOOR ((int64_t)64 << 20)

typedef struct slab_reader {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    fp4_source *src;
    const fp4_tensor_desc *t;
    int dim;
    int64_t total, count_max;
    int words;          /* 0: fp32 (fp4_source_read_f32); else the stored 16-bit words as
                           they are (fp4_source_read_raw), fp4_words of that kind */
    unsigned char *buf[2]; /* slab k in buf[k & 1], read once slab k - 2 is released */
    unsigned char *direct; /* when set, slab k is read straight to its place from direct on:
                              no buffer is reused, so the reader runs ahead of the analysis
                              (the first tensor's read overlaps the backend's start-up) */
    int64_t stride;     /* elements per index of dim (for direct) */
    int64_t nread;      /* slabs read (published under mu) */
    int64_t nreleased;  /* slabs the analysis is done with */
    bool skip_zero;     /* ask the source for slabs of never-written zeros: not read */
    int64_t *zb, *ze;   /* runs of such slabs [zb[i], ze[i]) in slab numbers, in order: the
                           reader appends (under mu), the analysis takes them from zhead */
    int64_t nz, zcap, zhead;
    bool stop;
    fp4_status st;     /* first read failure; its detail below (fp4_error is per thread) */
    char err[FP4_ERROR_MAX];
} slab_reader;

/* Bytes of one element as read: a stored 16-bit word, or fp32. */
static size_t elem_size(int words) { return words ? 2 : sizeof(float); }

static fp4_status read_slab(fp4_source *src, const fp4_tensor_desc *t, int dim, int64_t start,
                            int64_t cnt, int words, void *buf)
{
    return words ? fp4_source_read_raw(src, t, dim, start, cnt, buf)
                 : fp4_source_read_f32(src, t, dim, start, cnt, buf);
}

/* One slab of rows, fp32 or words, into the amax pass or the quantization pass. */
static fp4_status pass_rows(fp4_analysis *an, bool amax, const void *in, int words,
                            int64_t nrows)
{
    if (words)
        return amax ? fp4_analysis_amax_words(an, in, (fp4_words)words, nrows)
                    : fp4_analysis_feed_words(an, in, (fp4_words)words, nrows);
    return amax ? fp4_analysis_amax(an, in, nrows) : fp4_analysis_feed(an, in, nrows);
}

/* Whether to hand the backend t's stored words instead of fp32 (a backend that widens them
 * itself: the CUDA one uploads half the bytes), and of which kind: f16 and bf16 read raw,
 * rows that need no transposition. 0: fp32. */
static int words_for(fp4_source *src, const fp4_backend *be, const fp4_tensor_desc *t,
                     bool need_transpose)
{
    if (need_transpose || !fp4_source_widens(src, t)) return 0;
    const fp4_words w = t->stored == FP4_STORED_BF16  ? FP4_WORDS_BF16
                        : t->stored == FP4_STORED_F16 ? FP4_WORDS_F16
                                                      : (fp4_words)0;
    return w && fp4_backend_takes_words(be, w) ? (int)w : 0;
}

/* Where slab k goes. */
static unsigned char *slab_place(const slab_reader *sr, int64_t k)
{
    if (sr->direct)
        return sr->direct + (size_t)(k * sr->count_max * sr->stride) * elem_size(sr->words);
    return sr->buf[k & 1];
}

/* The end (a slab number) of the run of never-written zero slabs beginning at slab k, or 0
 * when slab k is not one. The run grows in doubling steps of whole slabs: a 4 TiB tensor with
 * 1 MiB stored is a few lookups. */
static int64_t zero_run(slab_reader *sr, int64_t k)
{
    const int64_t nslabs = (sr->total + sr->count_max - 1) / sr->count_max;
    const int64_t start = k * sr->count_max;
    const int64_t cnt = sr->total - start < sr->count_max ? sr->total - start : sr->count_max;
    if (!sr->skip_zero || !fp4_source_zero_fill(sr->src, sr->t, sr->dim, start, cnt)) return 0;
    int64_t end = k + 1;
    for (int64_t step = 1; end < nslabs;) {
        const int64_t m = nslabs - end < step ? nslabs - end : step;
        const int64_t s0 = end * sr->count_max;
        const int64_t s1 = end + m < nslabs ? (end + m) * sr->count_max : sr->total;
        if (fp4_source_zero_fill(sr->src, sr->t, sr->dim, s0, s1 - s0)) {
            end += m;
            step = step > nslabs ? step : 2 * step;
        } else if (step > 1) {
            step = 1;
        } else {
            break;
        }
    }
    return end;
}

static void *slab_reader_main(void *arg)
{
    slab_reader *sr = arg;
    for (int64_t k = 0; k * sr->count_max < sr->total;) {
        pthread_mutex_lock(&sr->mu);
        while (!sr->direct && k - sr->nreleased >= 2 && !sr->stop)
            pthread_cond_wait(&sr->cv, &sr->mu);
        const bool stop = sr->stop;
        pthread_mutex_unlock(&sr->mu);
        if (stop) break;
        const int64_t start = k * sr->count_max;
        const int64_t cnt = sr->total - start < sr->count_max ? sr->total - start : sr->count_max;
        fp4_error_clear();
        const int64_t zend = zero_run(sr, k);
        fp4_status st = zend ? FP4_OK
                             : read_slab(sr->src, sr->t, sr->dim, start, cnt, sr->words,
                                         slab_place(sr, k));
        pthread_mutex_lock(&sr->mu);
        if (zend && sr->nz == sr->zcap) {
            const int64_t cap = sr->zcap ? 2 * sr->zcap : 16;
            int64_t *b = realloc(sr->zb, (size_t)cap * sizeof *b);
            if (b) sr->zb = b;
            int64_t *e = b ? realloc(sr->ze, (size_t)cap * sizeof *e) : NULL;
            if (e) sr->ze = e;
            if (b && e) sr->zcap = cap;
            else st = fp4_error(FP4_ERR_INTERNAL, "%s: out of memory", sr->t->name);
        }
        if (zend && st == FP4_OK) {
            sr->zb[sr->nz] = k;
            sr->ze[sr->nz++] = zend;
        }
        if (st != FP4_OK) {
            sr->st = st;
            snprintf(sr->err, sizeof sr->err, "%s", fp4_last_error());
        }
        sr->nread = zend ? zend : k + 1;
        pthread_cond_broadcast(&sr->cv);
        pthread_mutex_unlock(&sr->mu);
        if (st != FP4_OK) break;
        k = zend ? zend : k + 1;
    }
    return NULL;
}

static fp4_status slab_reader_start(slab_reader *sr)
{
    sr->nread = sr->nreleased = 0;
    sr->stop = false;
    sr->st = FP4_OK;
    sr->err[0] = '\0';
    if (pthread_create(&sr->th, NULL, slab_reader_main, sr) != 0)
        return fp4_error(FP4_ERR_INTERNAL, "cannot start the reader thread");
    return FP4_OK;
}

/* Wait for slab k (slabs are waited for in order). A read failure is re-recorded on this
 * thread. *zend: the end of a run of never-written zero slabs beginning at k (nothing was
 * read for them), else 0. */
static fp4_status slab_reader_wait(slab_reader *sr, int64_t k, const unsigned char **buf,
                                   int64_t *cnt, int64_t *zend)
{
    pthread_mutex_lock(&sr->mu);
    while (sr->nread <= k && sr->st == FP4_OK) pthread_cond_wait(&sr->cv, &sr->mu);
    fp4_status st = sr->st;
    *zend = 0;
    if (sr->zhead < sr->nz && sr->zb[sr->zhead] == k) *zend = sr->ze[sr->zhead++];
    pthread_mutex_unlock(&sr->mu);
    if (st != FP4_OK) return fp4_error(st, "%s", sr->err);
    *buf = slab_place(sr, k);
    const int64_t start = k * sr->count_max;
    *cnt = sr->total - start < sr->count_max ? sr->total - start : sr->count_max;
    return FP4_OK;
}

static void slab_reader_release(slab_reader *sr, int64_t k)
{
    pthread_mutex_lock(&sr->mu);
    sr->nreleased = k + 1;
    pthread_cond_broadcast(&sr->cv);
    pthread_mutex_unlock(&sr->mu);
}

static void slab_reader_join(slab_reader *sr)
{
    pthread_mutex_lock(&sr->mu);
    sr->stop = true;
    pthread_cond_broadcast(&sr->cv);
    pthread_mutex_unlock(&sr->mu);
    pthread_join(sr->th, NULL);
    free(sr->zb);
    free(sr->ze);
    sr->zb = sr->ze = NULL;
}

/* The buffer of the kept rows (one read per tensor), kept from tensor to tensor while they
 * use one of a size --mem-limit allows them: no page faults each time, and registered once
 * with the backend (fp4_backend_host_register: the GPU copies straight from it). */
typedef struct kept_buf {
    unsigned char *p;
    size_t cap;
} kept_buf;

static void kept_buf_free(kept_buf *kb, fp4_backend *be)
{
    if (kb->p) fp4_backend_host_unregister(be, kb->p);
    free(kb->p);
    kb->p = NULL;
    kb->cap = 0;
}

/* A buffer of at least `need` bytes and at most `most` (the tensor's share of --mem-limit);
 * NULL when out of memory. */
static unsigned char *kept_buf_get(kept_buf *kb, fp4_backend *be, size_t need, size_t most)
{
    if (kb->p && kb->cap >= need && kb->cap <= most) return kb->p;
    kept_buf_free(kb, be);
    kb->p = malloc(need ? need : 1);
    if (!kb->p) return NULL;
    kb->cap = need;
    fp4_backend_host_register(be, kb->p, need ? need : 1);
    return kb->p;
}

/* Analyse one numeric tensor. Failures of this tensor only are returned as FP4_ERR_INPUT /
 * FP4_ERR_USAGE with the detail recorded; the caller turns them into error entries. */
static fp4_status analyse_tensor(fp4_run *run, fp4_backend *be, fp4_source *src,
                                 const fp4_tensor_desc *info, int tindex, fp4_tensor_result *tr,
                                 fp4_qconfig *cfgs, kept_buf *kb)
{
    const fp4_options *o = run->opt;
    const char *file = run->file;
    int rank = info->rank;
    int axis = o->axis;
    if (rank == 0) {
        axis = 0;
    } else {
        if (axis < 0) axis += rank;
        if (axis < 0 || axis >= rank)
            return fp4_error(FP4_ERR_INPUT, "%s: %s: --axis %d out of range for rank %d", file,
                             info->name, o->axis, rank);
    }
    fp4_layout L;
    fp4_layout_of(info->dims, rank, axis, &L);
    tr->axis = axis;
    tr->n_rows = L.n_rows;
    tr->row_len = L.row_len;

    for (int c = 0; c < run->ncfg; c++) {
        cfgs[c] = run->cfgs[c];
        cfgs[c].stream = (uint32_t)tindex; /* SR bits differ between tensors (SPEC §2) */
    }

    /* The smallest read is one index along slab_dim (a whole rank-0/1 tensor: one row). It is
     * read even when it alone exceeds a small --mem-limit, up to MIN_SLAB_FLOOR; beyond both,
     * the tensor is an error entry (checked by division: huge declared shapes cannot
     * overflow, and nothing is allocated for them). */
    {
        const int64_t unit = rank == 0 ? 1 : rank == 1 ? info->dims[0] : L.outer_stride;
        const int64_t copies = rank >= 2 ? 3 : 2;
        const int64_t cap = o->mem_limit > MIN_SLAB_FLOOR ? o->mem_limit : MIN_SLAB_FLOOR;
        if (unit > cap / ((int64_t)sizeof(float) * copies))
            return fp4_error(FP4_ERR_INPUT,
                             "%s: %s: the smallest slab (%lld values along the block axis) "
                             "does not fit --mem-limit %lld bytes; raise --mem-limit or choose "
                             "another --axis",
                             file, info->name, (long long)unit, (long long)o->mem_limit);
    }

    /* Slab size: indices along slab_dim per read, bounded by the memory limit (the slab and
     * its transposed copy), at least one index; multiples of 16 rows under weight_2d. */
    int64_t count_max, total;
    if (rank <= 1) {
        count_max = total = rank == 0 ? 1 : info->dims[0];
    } else {
        total = info->dims[L.slab_dim];
        /* two slab buffers and one transposed copy */
        int64_t per_index_bytes = L.outer_stride * (int64_t)sizeof(float) * 3;
        count_max = per_index_bytes ? o->mem_limit / per_index_bytes : total;
        int64_t target = L.outer_stride ? SLAB_TARGET_BYTES / (L.outer_stride * 4) : total;
        if (info->chunk_rank > L.slab_dim && info->chunk[L.slab_dim] > 0) {
            /* whole chunks per read: a chunk is then decoded once */
            const int64_t c = info->chunk[L.slab_dim];
            target = (target + c - 1) / c * c;
        }
        if (target < count_max) count_max = target;
        if (count_max < 1) count_max = 1;
        if (any_weight_2d(cfgs, run->ncfg) && L.rows_per_index > 0) {
            int64_t g = 16 / gcd64(L.rows_per_index, 16);
            count_max = count_max / g * g;
            if (count_max < g) count_max = g;
        }
        if (count_max > total) count_max = total;
    }
    int64_t buf_elems = rank <= 1 ? (rank == 0 ? 1 : info->dims[0]) : count_max * L.outer_stride;
    bool need_transpose = rank >= 2 && axis != rank - 1;
    const int words = words_for(src, be, info, need_transpose);
    const size_t esz = elem_size(words);
    unsigned char *slab[2] = {NULL, NULL}, *kept = NULL;
    float *rows = NULL;
    const int nbuf = total > count_max ? 2 : 1;
    fp4_analysis *an = NULL;
    fp4_status st = FP4_OK;
    slab_reader sr;
    bool reading = false;
    /* One read per tensor: under a tensor amax (two passes) a tensor of several slabs whose
     * rows fit --mem-limit whole (with the two slab buffers a transposition needs) keeps the
     * rows of its first pass for the second, instead of reading and decoding it again. Slabs
     * that need no transposition are read straight into it. */
    bool keep = false;
    if (nbuf == 2 && L.n_rows > 0 && L.row_len > 0) {
        bool two = false;
        for (int c = 0; c < run->ncfg; c++) two = two || fp4_needs_tensor_amax(&cfgs[c]);
        const int64_t extra = need_transpose ? 2 * buf_elems : 0;
        keep = two && info->nelems <= (o->mem_limit / (int64_t)sizeof(float)) - extra;
        if (keep) {
            const size_t most = (size_t)((o->mem_limit / (int64_t)sizeof(float) - extra) *
                                         (int64_t)sizeof(float));
            kept = kept_buf_get(kb, be, (size_t)info->nelems * esz, most);
        }
    }

    tr->metrics = calloc((size_t)run->ncfg, sizeof *tr->metrics);
    const bool slab_bufs = !keep || need_transpose;
    for (int i = 0; i < nbuf && slab_bufs; i++)
        slab[i] = malloc((size_t)(buf_elems ? buf_elems : 1) * esz);
    if (nbuf == 1) slab[1] = slab[0];
    rows = need_transpose && !keep ? malloc((size_t)(buf_elems ? buf_elems : 1) * sizeof *rows)
                                   : NULL;
    if (!keep) kept_buf_free(kb, be); /* this tensor's buffers stay within --mem-limit */
    if (!tr->metrics || (slab_bufs && (!slab[0] || !slab[1])) || (need_transpose && !keep && !rows) ||
        (keep && !kept)) {
        st = fp4_error(FP4_ERR_INPUT, "%s: %s: cannot allocate a slab of %lld values", file,
                       info->name, (long long)buf_elems);
        goto out;
    }
    st = fp4_analysis_begin(be, cfgs, run->ncfg, L.n_rows, L.row_len, &an);
    if (st != FP4_OK) goto out;

    int passes = fp4_analysis_needs_amax(an) ? 2 : 1;
    if (nbuf == 1 && L.n_rows > 0 && L.row_len > 0) {
        /* The whole tensor is one slab: read it here, once for both passes. A reader thread
         * would only add its start-up per tensor (10,000 small tensors: most of the run). */
        st = read_slab(src, info, L.slab_dim, 0, total, words, slab[0]);
        if (st != FP4_OK) goto out;
        const void *in = slab[0];
        if (need_transpose) {
            fp4_slab_to_rows((const float *)(void *)slab[0], rows, info->dims, rank, axis,
                             L.slab_dim, total);
            in = rows;
        }
        const int64_t nrows = rank <= 1 ? 1 : total * L.rows_per_index;
        run->bytes_read += (rank <= 1 ? buf_elems : total * L.outer_stride) *
                           (int64_t)sizeof(float);
        if (passes == 2) st = pass_rows(an, true, in, words, nrows);
        if (st == FP4_OK) st = pass_rows(an, false, in, words, nrows);
        if (st != FP4_OK) goto out;
        passes = 0;
    }
    for (int pass = 0; pass < passes && L.n_rows > 0 && L.row_len > 0; pass++) {
        bool amax_pass = passes == 2 && pass == 0;
        if (keep && pass == 1) {
            /* the second pass from the rows kept by the first, in the same slabs */
            for (int64_t k = 0; k * count_max < total && st == FP4_OK; k++) {
                const int64_t cnt = total - k * count_max < count_max ? total - k * count_max
                                                                        : count_max;
                st = pass_rows(an, false, kept + (size_t)(k * count_max * L.outer_stride) * esz,
                               words, cnt * L.rows_per_index);
            }
            if (st != FP4_OK) goto out;
            continue;
        }
        /* never-written zeros are accounted for, not read, when the rows are not kept (a
         * slab of them is whole rows of 0.0, transposed or not) */
        sr = (slab_reader){.src = src, .t = info, .dim = L.slab_dim, .total = total,
                           .count_max = count_max, .words = words, .buf = {slab[0], slab[1]},
                           .direct = keep && !need_transpose ? kept : NULL,
                           .stride = L.outer_stride, .skip_zero = !keep};
        pthread_mutex_init(&sr.mu, NULL);
        pthread_cond_init(&sr.cv, NULL);
        st = slab_reader_start(&sr);
        if (st != FP4_OK) {
            pthread_cond_destroy(&sr.cv);
            pthread_mutex_destroy(&sr.mu);
            goto out;
        }
        reading = true;
        for (int64_t k = 0; k * count_max < total; k++) {
            const unsigned char *buf = NULL;
            int64_t cnt = 0, zend = 0;
            st = slab_reader_wait(&sr, k, &buf, &cnt, &zend);
            if (st != FP4_OK) goto out;
            if (zend) { /* slabs k .. zend-1: zeros, not read */
                const int64_t last = zend * count_max < total ? zend * count_max : total;
                const int64_t nz = rank <= 1 ? 1 : (last - k * count_max) * L.rows_per_index;
                st = amax_pass ? fp4_analysis_amax_zero(an, nz) : fp4_analysis_feed_zero(an, nz);
                if (st != FP4_OK) goto out;
                k = zend - 1;
                slab_reader_release(&sr, k);
                continue;
            }
            int64_t nread = rank <= 1 ? buf_elems : cnt * L.outer_stride;
            run->bytes_read += nread * (int64_t)sizeof(float);
            /* kept: this slab's rows go to their place in the whole tensor's rows (words
             * never need the transposition) */
            float *const to = keep ? (float *)(void *)kept + k * count_max * L.outer_stride
                                   : rows;
            if (need_transpose)
                fp4_slab_to_rows((const float *)(const void *)buf, to, info->dims, rank, axis,
                                 L.slab_dim, cnt);
            int64_t nrows = rank <= 1 ? 1 : cnt * L.rows_per_index;
            const void *in = need_transpose ? (const void *)to : (const void *)buf;
            st = pass_rows(an, amax_pass, in, words, nrows);
            if (st != FP4_OK) goto out;
            slab_reader_release(&sr, k);
        }
        slab_reader_join(&sr);
        pthread_cond_destroy(&sr.cv);
        pthread_mutex_destroy(&sr.mu);
        reading = false;
    }
    st = fp4_analysis_end(an, tr->metrics);
    an = NULL;
out:
    if (reading) { /* a failure mid-pass: stop the reader before the source is used again */
        slab_reader_join(&sr);
        pthread_cond_destroy(&sr.cv);
        pthread_mutex_destroy(&sr.mu);
    }
    if (an) fp4_analysis_abort(an);
    free(rows);
    if (slab[1] != slab[0]) free(slab[1]);
    free(slab[0]);
    return st;
}

static void progress(const fp4_run *run, int i, int n, const char *name, bool done)
{
    if (run->opt->verbosity < 0 || !isatty(STDERR_FILENO)) return;
    if (done) fprintf(stderr, "\r\033[K");
    else {
        char *shown = fp4_text_escape(name, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
        fprintf(stderr, "\r\033[K[%d/%d] %s", i + 1, n, shown ? shown : "");
        free(shown);
    }
    fflush(stderr);
}

fp4_status fp4_run_pool(fp4_run *run)
{
    free(run->pairs);
    run->pairs = NULL;
    run->npairs = 0;
    if (!run->pooled) run->pooled = calloc((size_t)(run->ncfg ? run->ncfg : 1), sizeof *run->pooled);
    if (!run->pooled) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    for (int c = 0; c < run->ncfg; c++) {
        fp4_metrics_init(&run->pooled[c]);
        for (int t = 0; t < run->ntensors; t++)
            fp4_metrics_merge(&run->pooled[c], &run->tensors[t].metrics[c]);
        if (run->ntensors == 0) run->pooled[c].tensor_amax = 0;
        fp4_metrics_finish(&run->pooled[c]);
    }
    if (run->opt->rht == FP4_RHT_BOTH) {
        run->pairs = calloc((size_t)(run->ncfg ? run->ncfg : 1), sizeof *run->pairs);
        if (!run->pairs) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        for (int c = 0; c + 1 < run->ncfg; c += 2) {
            /* fp4_options_configs puts each plain config right before its rotated twin */
            fp4_rht_delta *d = &run->pairs[run->npairs++];
            d->plain = c;
            d->rotated = c + 1;
            fp4_rht_delta_compute(&run->pooled[c], &run->pooled[c + 1], d);
        }
    }
    return FP4_OK;
}

/* --shard: this share's positions in the selection (fp4_shard_assign by element count). */
static fp4_status shard_pick(fp4_run *run, const fp4_tensor_desc *infos, int n)
{
    int64_t *w = malloc((size_t)(n ? n : 1) * sizeof *w);
    int *owner = malloc((size_t)(n ? n : 1) * sizeof *owner);
    run->assigned = malloc((size_t)(n ? n : 1) * sizeof *run->assigned);
    fp4_status st = FP4_OK;
    if (!w || !owner || !run->assigned) st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
    for (int i = 0; st == FP4_OK && i < n; i++) w[i] = infos[i].nelems;
    if (st == FP4_OK) st = fp4_shard_assign(w, n, run->opt->shard.count, owner);
    for (int i = 0; st == FP4_OK && i < n; i++)
        if (owner[i] == run->opt->shard.index) run->assigned[run->nassigned++] = i;
    free(w);
    free(owner);
    return st;
}

fp4_status fp4_run_analysis(const fp4_options *opt, const char *file, const char *const *patterns,
                            int npatterns, fp4_run *run)
{
    memset(run, 0, sizeof *run);
    run->opt = opt;
    double t0 = now_seconds();
    fp4_source *src = NULL;
    fp4_backend *be = NULL;
    kept_buf kb = {NULL, 0};
    fp4_tensor_desc *infos = NULL;
    int ninfos = 0;
    fp4_qconfig *cfgs_t = NULL;
    fp4_status st;

    run->file = xstrdup(file);
    int cap = 2 * FP4_MAX_FORMATS;
    run->cfgs = calloc((size_t)cap, sizeof *run->cfgs);
    cfgs_t = calloc((size_t)cap, sizeof *cfgs_t);
    if (!run->file || !run->cfgs || !cfgs_t) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    st = fp4_options_configs(opt, run->cfgs, cap, &run->ncfg);
    if (st != FP4_OK) goto out;

    /* the backend first: CUDA starts on a thread of its own (backend_cuda.c) while the file
     * is opened, listed and its first tensor read */
    st = fp4_backend_open(opt->device, opt->threads, &be);
    if (st != FP4_OK) goto out;
    st = fp4_source_open(file, &src);
    if (st != FP4_OK) goto out;
    st = fp4_source_select(src, patterns, npatterns, &infos, &ninfos);
    if (st != FP4_OK) goto out;
    snprintf(run->device, sizeof run->device, "%s", fp4_backend_name(be));

    run->datasets = calloc((size_t)(ninfos ? ninfos : 1), sizeof *run->datasets);
    run->tensors = calloc((size_t)(ninfos ? ninfos : 1), sizeof *run->tensors);
    run->skipped = calloc((size_t)(ninfos ? ninfos : 1), sizeof *run->skipped);
    run->pooled = calloc((size_t)run->ncfg, sizeof *run->pooled);
    if (!run->datasets || !run->tensors || !run->skipped || !run->pooled) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    /* The default selection: what is left out is listed, not analysed (compacts infos). */
    int kept = 0;
    for (int i = 0; i < ninfos; i++) {
        char why[160];
        const char *reason = NULL;
        st = fp4_source_skip_reason(src, &infos[i], patterns, npatterns, opt->all_tensors,
                                    opt->exclude, opt->nexclude, why, sizeof why, &reason);
        if (st != FP4_OK) goto out;
        if (reason) {
            fp4_tensor_skip *sk = &run->skipped[run->nskipped];
            if (!(sk->reason = xstrdup(reason))) {
                st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
                goto out;
            }
            sk->info = infos[i];
            memset(&infos[i], 0, sizeof infos[i]);
            run->nskipped++;
        } else if (kept < i) {
            infos[kept++] = infos[i];
            memset(&infos[i], 0, sizeof infos[i]);
        } else {
            kept++;
        }
    }
    ninfos = kept; /* the entries after it are emptied (free is a no-op on them) */
    for (int i = 0; i < ninfos; i++) {
        run->datasets[i] = xstrdup(infos[i].name);
        if (!run->datasets[i]) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        run->ndatasets++;
    }
    if (opt->shard.count > 0) { /* this share only; SR streams keep the selection index */
        st = shard_pick(run, infos, ninfos);
        if (st != FP4_OK) goto out;
    }

    for (int k = 0; k < (run->assigned ? run->nassigned : ninfos); k++) {
        const int i = run->assigned ? run->assigned[k] : k;
        const fp4_tensor_desc *info = &infos[i];
        progress(run, i, ninfos, info->name, false);
        /* The source's verdicts: its `problem` when it has one (the class, a filter, a rank
         * over FP4_MAX_RANK, a pointer refused, storage never written...), which it says
         * best. fp4_error builds each message, so that a long name keeps the reason at its
         * end. */
        fp4_status bad = FP4_OK;
        if (info->problem[0] || info->nelems < 0)
            /* the dims must not reach the layout arithmetic */
            bad = fp4_error(FP4_ERR_INPUT, "%s: %s: %s", file, info->name,
                            info->problem[0] ? info->problem : "size overflows 64 bits");
        else if (!info->numeric)
            bad = fp4_error(FP4_ERR_INPUT, "%s: %s: not numeric (class %s)", file, info->name,
                            info->dtype);
        else if (!info->codec_available)
            bad = fp4_error(FP4_ERR_INPUT, "%s: %s: filter not available (%s)", file,
                            info->name, info->codec);
        if (bad != FP4_OK) {
            st = add_error(run, i, info->name, bad, fp4_last_error());
            if (st != FP4_OK) goto out;
            continue;
        }
        fp4_tensor_result *tr = &run->tensors[run->ntensors];
        memset(tr, 0, sizeof *tr);
        fp4_error_clear();
        fp4_status ts = analyse_tensor(run, be, src, info, i, tr, cfgs_t, &kb);
        if (ts == FP4_ERR_INPUT || ts == FP4_ERR_USAGE) {
            free(tr->metrics);
            tr->metrics = NULL;
            if (!fp4_last_error()[0])
                fp4_error(ts, "%s: %s: read failed", file, info->name);
            st = add_error(run, i, info->name, ts, fp4_last_error());
            if (st != FP4_OK) goto out;
            continue;
        }
        if (ts != FP4_OK) {
            free(tr->metrics);
            tr->metrics = NULL;
            st = ts;
            goto out;
        }
        /* Move the description into the result (the list keeps an emptied copy). */
        tr->index = i;
        tr->info = infos[i];
        memset(&infos[i], 0, sizeof infos[i]);
        run->ntensors++;
    }
    progress(run, 0, 0, "", true);
    st = fp4_run_pool(run);
out:
    progress(run, 0, 0, "", true);
    if (infos) fp4_tensor_desc_free_list(infos, ninfos);
    free(cfgs_t);
    if (be) kept_buf_free(&kb, be);
    free(kb.p); /* no backend: never registered */
    if (be) fp4_backend_close(be);
    if (src) fp4_source_close(src);
    run->seconds = now_seconds() - t0;
    return st;
}

void fp4_run_free(fp4_run *run)
{
    if (!run) return;
    free(run->file);
    free(run->cfgs);
    for (int i = 0; i < run->ndatasets; i++) free(run->datasets[i]);
    free(run->datasets);
    free(run->assigned);
    for (int i = 0; i < run->ntensors; i++) {
        fp4_tensor_desc_free(&run->tensors[i].info);
        free(run->tensors[i].metrics);
    }
    free(run->tensors);
    for (int i = 0; i < run->nskipped; i++) {
        fp4_tensor_desc_free(&run->skipped[i].info);
        free(run->skipped[i].reason);
    }
    free(run->skipped);
    for (int i = 0; i < run->nerrors; i++) {
        free(run->errors[i].tensor);
        free(run->errors[i].message);
    }
    free(run->errors);
    free(run->pooled);
    free(run->pairs);
    memset(run, 0, sizeof *run);
}
