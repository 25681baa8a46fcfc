/* driver.c — stream each selected dataset through the backend, one tensor at a time, in slabs
 * bounded by --mem-limit; per-tensor failures become error entries (SPEC §8). */
#include "run/driver.h"
#include "run/recipe.h"

#include <fnmatch.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "run/reader.h"
#include "base/progress.h"
#include "base/trace.h"
#include "io/quantized.h"

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

/* Slabs are read by one reader thread per run (reader.h) in the order the analysis takes them.
 * Slabs of about SLAB_TARGET_BYTES stay in cache between the read and the analysis; their
 * buffers are reused (few page faults). Results do not depend on the split (SPEC §7), and the
 * analysis takes the same slabs in the same order whatever the reader does ahead of it. */
#define SLAB_TARGET_BYTES ((int64_t)8 << 20)
/* The least memory a tensor's smallest slab may take whatever --mem-limit says (a limit of a
 * few KiB still analyses small tensors, slab by slab). */
#define MIN_SLAB_FLOOR ((int64_t)64 << 20)
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

/* Decide how a tensor is read (see fp4_read_plan). A tensor that cannot be analysed gets err
 * and its message. */
static fp4_status plan_tensor(const fp4_run *run, fp4_source *src, const fp4_backend *be,
                              const fp4_tensor_desc *info, fp4_read_plan *P)
{
    const fp4_run_config *o = run->config;
    const char *file = run->file;
    memset(P, 0, sizeof *P);
    int rank = info->rank;
    int axis = o->axis;
    if (rank == 0) {
        axis = 0;
    } else {
        if (axis < 0) axis += rank;
        if (axis < 0 || axis >= rank) {
            P->err = fp4_error(FP4_ERR_INPUT, "%s: %s: --axis %d out of range for rank %d",
                               file, info->name, o->axis, rank);
            goto failed;
        }
    }
    P->axis = axis;
    fp4_layout_of(info->dims, rank, axis, &P->L);
    const fp4_layout L = P->L;

    /* The smallest read is one index along slab_dim (a whole rank-0/1 tensor: one row). It is
     * read even when it alone exceeds a small --mem-limit, up to MIN_SLAB_FLOOR; beyond both,
     * the tensor is an error entry (checked by division: huge declared shapes cannot
     * overflow, and nothing is allocated for them). */
    {
        const int64_t unit = rank == 0 ? 1 : rank == 1 ? info->dims[0] : L.outer_stride;
        const int64_t copies = rank >= 2 ? 3 : 2;
        const int64_t cap = o->mem_limit > MIN_SLAB_FLOOR ? o->mem_limit : MIN_SLAB_FLOOR;
        if (unit > cap / ((int64_t)sizeof(float) * copies)) {
            P->err = fp4_error(FP4_ERR_INPUT,
                               "%s: %s: the smallest slab (%lld values along the block axis) "
                               "does not fit --mem-limit %lld bytes; raise --mem-limit or "
                               "choose another --axis",
                               file, info->name, (long long)unit, (long long)o->mem_limit);
            goto failed;
        }
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
        if (any_weight_2d(run->cfgs, run->ncfg) && L.rows_per_index > 0) {
            int64_t g = 16 / gcd64(L.rows_per_index, 16);
            count_max = count_max / g * g;
            if (count_max < g) count_max = g;
        }
        if (count_max > total) count_max = total;
    }
    P->count_max = count_max ? count_max : 1;
    P->total = total;
    P->buf_elems = rank <= 1 ? (rank == 0 ? 1 : info->dims[0]) : count_max * L.outer_stride;
    P->need_transpose = rank >= 2 && axis != rank - 1;
    P->nbuf = total > count_max ? 2 : 1;
    P->reads = L.n_rows > 0 && L.row_len > 0;
    for (int c = 0; c < run->ncfg; c++) P->two_pass = P->two_pass || fp4_needs_tensor_amax(&run->cfgs[c]);
    /* One read per tensor: under a tensor amax (two passes) a tensor of several slabs whose
     * rows fit --mem-limit whole (with the two slab buffers a transposition needs) keeps the
     * rows of its first pass for the second, instead of reading and decoding it again. Slabs
     * that need no transposition are read straight into it. */
    if (P->nbuf == 2 && P->reads && P->two_pass) {
        const int64_t extra = P->need_transpose ? 2 * P->buf_elems : 0;
        P->keep = info->nelems <= (o->mem_limit / (int64_t)sizeof(float)) - extra;
    }
    P->read_passes = P->two_pass && P->nbuf == 2 && !P->keep ? 2 : 1;
    /* never-written zeros are accounted for, not read, when the rows are not kept (a slab of
       them is whole rows of 0.0, transposed or not); a one-slab tensor is read as it is */
    P->skip_zero = P->nbuf == 2 && P->reads && !P->keep;
    P->words = words_for(src, be, info, P->need_transpose);
    P->esz = (int64_t)fp4_read_elem_size(P->words);
    return FP4_OK;
failed:
    P->msg = strdup(fp4_last_error());
    if (!P->msg) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    return FP4_OK;
}

/* Analyse one numeric tensor (position seq of the reader's order) from the slabs the reader
 * hands over. Failures of this tensor only are returned as FP4_ERR_INPUT / FP4_ERR_USAGE with
 * the detail recorded; the caller turns them into error entries. */
static fp4_status analyse_tensor(fp4_run *run, fp4_backend *be, fp4_reader *r, int seq,
                                 const fp4_read_plan *P, const fp4_tensor_desc *info, int tindex,
                                 fp4_tensor_result *tr, fp4_qconfig *cfgs)
{
    if (P->err != FP4_OK) return fp4_error(P->err, "%s", P->msg ? P->msg : "");
    const fp4_layout L = P->L;
    const int rank = info->rank;
    tr->axis = P->axis;
    tr->n_rows = L.n_rows;
    tr->row_len = L.row_len;
    for (int c = 0; c < run->ncfg; c++) {
        cfgs[c] = run->cfgs[c];
        cfgs[c].stream = (uint32_t)tindex; /* SR bits differ between tensors (SPEC §2) */
    }
    fp4_analysis *an = NULL;
    fp4_status st = FP4_OK;
    bool seen_last = !P->reads; /* no slab of this tensor is coming (any more) */
    fp4_ready_slab s = {0};
    tr->metrics = calloc((size_t)run->ncfg, sizeof *tr->metrics);
    if (!tr->metrics) {
        st = fp4_error(FP4_ERR_INPUT, "%s: %s: cannot allocate a slab of %lld values", run->file,
                       info->name, (long long)P->buf_elems);
        goto out;
    }
    st = fp4_analysis_begin(be, cfgs, run->ncfg, L.n_rows, L.row_len, &an);
    if (st != FP4_OK) goto out;
    const int passes = P->two_pass ? 2 : 1;
    for (int pass = 0; pass < passes && P->reads; pass++) {
        const bool amax_pass = passes == 2 && pass == 0;
        if (pass == 1 && (P->nbuf == 1 || P->keep)) {
            if (P->nbuf == 1) break; /* both passes were made on the one slab */
            /* the second pass from the rows kept by the first, in the same slabs for a
             * backend that pins (CUDA finds the rows its amax pass left on the device by
             * them); in one call on the CPU, whose parallel loops are per call: slabs of 512
             * rows gave 32 groups of 16 rows to 16 threads, 71-82% of them busy on the H100
             * host. The sums are merged in row order whatever the calls (SPEC §7). */
            const unsigned char *kept = fp4_reader_mem(r, seq)->kept;
            const int64_t per = fp4_backend_pins_host(be) ? P->count_max : P->total;
            for (int64_t k = 0; k * per < P->total && st == FP4_OK; k++) {
                const int64_t cnt = P->total - k * per < per ? P->total - k * per : per;
                st = pass_rows(an, false, kept + k * per * L.outer_stride * P->esz, P->words,
                               cnt * L.rows_per_index);
            }
            if (st != FP4_OK) goto out;
            continue;
        }
        for (int64_t k = 0; k * P->count_max < P->total; k++) {
            st = fp4_reader_next(r, seq, &s);
            seen_last = seen_last || s.last || st != FP4_OK;
            if (st != FP4_OK) goto out;
            if (s.zend) { /* slabs k .. zend-1: zeros, not read */
                const int64_t end = s.zend * P->count_max < P->total ? s.zend * P->count_max
                                                                       : P->total;
                const int64_t nz = rank <= 1 ? 1 : (end - k * P->count_max) * L.rows_per_index;
                st = amax_pass ? fp4_analysis_amax_zero(an, nz) : fp4_analysis_feed_zero(an, nz);
                if (st != FP4_OK) goto out;
                k = s.zend - 1;
                continue;
            }
            const int64_t cnt = s.cnt;
            if (P->keep && k == 0) fp4_reader_register_kept(r, seq);
            run->bytes_read += (rank <= 1 ? P->buf_elems : cnt * L.outer_stride) *
                               (int64_t)sizeof(float);
            /* kept: this slab's rows go to their place in the whole tensor's rows (words
             * never need the transposition) */
            const fp4_tensor_mem *m = fp4_reader_mem(r, seq);
            float *const to =
                P->keep ? (float *)(void *)m->kept + k * P->count_max * L.outer_stride : m->rows;
            if (P->need_transpose)
                fp4_slab_to_rows((const float *)(const void *)s.buf, to, info->dims, rank,
                                 P->axis, L.slab_dim, cnt);
            const int64_t nrows = rank <= 1 ? 1 : cnt * L.rows_per_index;
            const void *in = P->need_transpose ? (const void *)to : (const void *)s.buf;
            if (P->nbuf == 1 && passes == 2) { /* one slab: both passes on it */
                st = pass_rows(an, true, in, P->words, nrows);
                if (st == FP4_OK) st = pass_rows(an, false, in, P->words, nrows);
            } else {
                st = pass_rows(an, amax_pass, in, P->words, nrows);
            }
            fp4_reader_release(r, &s);
            if (st != FP4_OK) goto out;
        }
    }
    st = fp4_analysis_end(an, tr->metrics);
    an = NULL;
out:
    fp4_reader_release(r, &s);
    if (an) fp4_analysis_abort(an);
    if (!seen_last) {
        /* keep this tensor's detail over the dropped slabs */
        char *keep_msg = strdup(fp4_last_error());
        fp4_reader_skip(r, seq, seen_last);
        if (keep_msg && st != FP4_OK) fp4_error(st, "%s", keep_msg);
        free(keep_msg);
    }
    if (P->reads) fp4_reader_tensor_done(r, seq);
    return st;
}

/* The progress line (base/progress.h, SPEC §9): the k-th of the nseq tensors this run
 * analyses, the logical bytes of those before it of their total. */
static void progress(fp4_progress *pm, int k, const fp4_tensor_desc *info, int64_t done)
{
    fp4_trace("tensor %d/%d: %s", k + 1, pm->n, info->name);
    fp4_progress_step(pm, k, info->name, done);
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
    if (run->config->rht == FP4_RHT_BOTH) {
        run->pairs = calloc((size_t)(run->ncfg ? run->ncfg : 1), sizeof *run->pairs);
        if (!run->pairs) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        for (int c = 0; c + 1 < run->ncfg; c += 2) {
            /* fp4_run_config_qconfigs puts each plain config right before its rotated twin */
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
    if (st == FP4_OK) st = fp4_shard_assign(w, n, run->config->shard.count, owner);
    for (int i = 0; st == FP4_OK && i < n; i++)
        if (owner[i] == run->config->shard.index) run->assigned[run->nassigned++] = i;
    free(w);
    free(owner);
    return st;
}

static fp4_status run_analysis(const fp4_run_config *opt, const char *file, fp4_source *given,
                               const char *const *patterns, int npatterns, fp4_run *run);

/* Append one warning line (printf-style) to run->warnings. */
static fp4_status add_warning(fp4_run *run, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static fp4_status add_warning(fp4_run *run, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char **w = realloc(run->warnings, ((size_t)run->nwarnings + 1) * sizeof *w);
    if (!w) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    run->warnings = w;
    if (!(w[run->nwarnings] = fp4_text_escape(line, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL)))
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    run->nwarnings++;
    return FP4_OK;
}

/* Why a run has no tensor to analyse (every selected one skipped, or none selected). */
static fp4_status nothing_to_analyse(const fp4_run *run, const char *file)
{
    if (run->nskipped == 0)
        return fp4_error(FP4_ERR_INPUT, "%s: no tensor to analyse: the selection holds no tensor",
                         file);
    int excluded = 0;
    for (int i = 0; i < run->nskipped; i++)
        excluded += strncmp(run->skipped[i].reason, "excluded by --exclude", 21) == 0;
    if (excluded == run->nskipped)
        return fp4_error(FP4_ERR_INPUT, "%s: no tensor to analyse: --exclude left out all %d "
                         "selected", file, run->nskipped);
    const fp4_tensor_skip *k = &run->skipped[0];
    for (int i = 0; i < run->nskipped; i++)
        if (strncmp(run->skipped[i].reason, "excluded by --exclude", 21) != 0) {
            k = &run->skipped[i];
            break;
        }
    const bool kept = strncmp(k->reason, "kept in high precision", 22) == 0;
    return fp4_error(FP4_ERR_INPUT, "%s: no tensor to analyse: the %d selected are not what "
                     "4-bit recipes quantize (%s: %s%s); name a tensor exactly or add "
                     "%s", file, run->nskipped, k->info.name, k->reason,
                     run->nskipped > 1 ? ", ..." : "", kept ? "--all-weights" : "--all-tensors");
}

/* fp4_source_select_some over pats[0..n): a pattern that matches nothing is a warning naming
 * orig[j] (as the user wrote it) while another one selects; when none selects, the error of
 * fp4_source_select. */
static fp4_status select_warn(fp4_run *run, fp4_source *src, const char *file,
                              const char *const *pats, const char *const *orig, int n,
                              fp4_tensor_desc **infos, int *ninfos)
{
    bool *unmatched = calloc((size_t)n + 1, sizeof *unmatched);
    if (!unmatched) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    fp4_status st = fp4_source_select_some(src, pats, n, infos, ninfos, unmatched);
    int nun = 0;
    for (int j = 0; j < n; j++) nun += unmatched[j];
    if (st == FP4_OK && nun > 0 && nun == n) {
        fp4_tensor_desc_free_list(*infos, *ninfos);
        *infos = NULL;
        *ninfos = 0;
        st = fp4_source_select(src, pats, n, infos, ninfos); /* its error */
        if (st == FP4_OK) /* cannot happen: the same patterns */
            st = fp4_error(FP4_ERR_INPUT, "%s: no pattern matches", file);
    }
    for (int j = 0; st == FP4_OK && j < n; j++)
        if (unmatched[j])
            st = add_warning(run, "%s: %s: no such %s (selects nothing; the other selections "
                             "run)", file, orig[j], fp4_source_what(src));
    free(unmatched);
    return st;
}

/* The default selection's second half (SPEC §9 "Default selection"): a tensor the
 * checkpoint's own exclude list names, or one a recipe rule (run/recipe.h) keeps in high
 * precision, is left out with the rule that matched; a tensor named exactly, a tensor with a
 * problem (an error entry), --all-tensors and --all-weights keep it. */
/* An FP8 export's weight or its scale (io/quantized.h fp4_fp8): what it is, not analysed
 * (SPEC §10), unless --all-tensors or an exact name asks for it. */
static void fp8_reason(const fp4_source *src, const fp4_qset *qset, const fp4_run_config *opt,
                       const fp4_tensor_desc *t, const char *const *patterns, int npatterns,
                       char *why, size_t n, const char **reason)
{
    if (opt->all_tensors || qset->nfp8 == 0 || t->problem[0]) return; /* its error entry */
    for (int j = 0; j < npatterns; j++)
        if (fp4_source_names_exactly(src, patterns[j], t->name)) return;
    if (fp4_quant_fp8_role(qset, t->name, why, n)) *reason = why;
}

static void recipe_reason(const fp4_source *src, const fp4_qset *qset, const fp4_run_config *opt,
                          const fp4_tensor_desc *t, const char *const *patterns, int npatterns,
                          char *why, size_t n, const char **reason)
{
    if (opt->all_tensors || opt->all_weights || t->problem[0]) return;
    for (int j = 0; j < npatterns; j++)
        if (fp4_source_names_exactly(src, patterns[j], t->name)) return;
    for (int k = 0; k < qset->nexclude; k++)
        if (fp4_recipe_exclude_matches(qset->exclude[k], t->name)) {
            snprintf(why, n, "kept in high precision by %s: %s", qset->exclude_from,
                     qset->exclude[k]);
            *reason = why;
            return;
        }
    const fp4_recipe_rule *r = fp4_recipe_keeps(t->name);
    if (r) {
        snprintf(why, n, "kept in high precision by recipe: %s (%s)", r->kind, r->glob);
        *reason = why;
    }
}

/* The tensors reading the same numbers (io/source.h `view`, equal and non-empty): group[i] is
 * the first index of i's view in infos[0..n) (i itself when alone or without one); at[] is
 * -1 throughout. Sorted, not compared pairwise: a pickle may name one storage 20,000 times. */
typedef struct view_ix {
    const char *view;
    int i;
} view_ix;

static int cmp_view(const void *a, const void *b)
{
    const view_ix *x = a, *y = b;
    const int c = strcmp(x->view, y->view);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

static void view_groups(const fp4_tensor_desc *infos, int n, int *group, int *at)
{
    for (int i = 0; i < n; i++) {
        group[i] = i;
        at[i] = -1;
    }
    view_ix *ord = malloc(((size_t)n + 1) * sizeof *ord);
    if (!ord) return; /* no grouping: every tensor analysed, as before */
    int m = 0;
    for (int i = 0; i < n; i++)
        if (infos[i].view[0]) ord[m++] = (view_ix){infos[i].view, i};
    qsort(ord, (size_t)m, sizeof *ord, cmp_view);
    for (int i = 1; i < m; i++)
        if (strcmp(ord[i].view, ord[i - 1].view) == 0) group[ord[i].i] = group[ord[i - 1].i];
    free(ord);
}

fp4_status fp4_run_analysis(const fp4_run_config *opt, const char *file,
                            const char *const *patterns, int npatterns, fp4_run *run)
{
    return run_analysis(opt, file, NULL, patterns, npatterns, run);
}

fp4_status fp4_run_analysis_source(const fp4_run_config *opt, fp4_source *src,
                                   const char *const *patterns, int npatterns, fp4_run *run)
{
    return run_analysis(opt, fp4_source_file(src), src, patterns, npatterns, run);
}

static fp4_status run_analysis(const fp4_run_config *opt, const char *file, fp4_source *given,
                               const char *const *patterns, int npatterns, fp4_run *run)
{
    memset(run, 0, sizeof *run);
    run->config = opt;
    FP4_TRY(fp4_select_check(patterns, npatterns)); /* '' is no "every tensor" */
    double t0 = now_seconds();
    fp4_source *src = NULL;
    fp4_backend *be = NULL;
    fp4_tensor_desc *infos = NULL;
    int ninfos = 0;
    fp4_qset qset = {0};
    int *qidx = NULL;
    int *group = NULL, *at = NULL; /* the views' groups (view_groups) */
    fp4_qconfig *cfgs_t = NULL;
    fp4_status st;
    int nseq = 0;
    fp4_progress pm;
    memset(&pm, 0, sizeof pm); /* off until started */
    fp4_read_plan *plans = NULL;
    const fp4_tensor_desc **order = NULL;
    fp4_reader *reader = NULL;

    run->file = xstrdup(file);
    int cap = 2 * FP4_MAX_FORMATS;
    run->cfgs = calloc((size_t)cap, sizeof *run->cfgs);
    cfgs_t = calloc((size_t)cap, sizeof *cfgs_t);
    if (!run->file || !run->cfgs || !cfgs_t) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    st = fp4_run_config_qconfigs(opt, run->cfgs, cap, &run->ncfg);
    if (st != FP4_OK) goto out;

    /* the backend first: CUDA starts on a thread of its own (backend_cuda.c) while the file
     * is opened, listed and its first tensor read */
    st = fp4_backend_open(opt->device, opt->threads, &be);
    if (st != FP4_OK) goto out;
    snprintf(run->device, sizeof run->device, "%s", fp4_backend_name(be));
    /* the input files' sizes and sampled contents, before anything is opened: every report's
     * provenance, and what every share of a --shard run reads the same (there a file that
     * cannot be read is an error, and the files are checked again once read: a change while
     * they were open is refused; otherwise it is left out of the provenance and its tensors
     * say why) */
    st = fp4_fingerprint_input(file, &run->prints, &run->nprints);
    if (st != FP4_OK && opt->shard.count > 0) goto out;
    if (st != FP4_OK) {
        fp4_error_clear();
        st = FP4_OK;
    }
    if (given) src = given;
    else st = fp4_source_open(file, &src);
    if (st != FP4_OK) goto out;
    /* Already-quantized tensors (io/quantized.h): the packed codes, block scales and tensor
     * scale become one entry, in the default selection but never analysed as a weight
     * (skipped with its codes and scales summary, or an error entry when its partners are
     * inconsistent); no scale tensor is analysed as a weight. A pattern may name one by its
     * logical name. */
    st = fp4_quant_scan(src, &qset);
    if (st == FP4_OK) {
        const char **pats = NULL;
        st = fp4_quant_patterns(&qset, patterns, npatterns, &pats);
        if (st == FP4_OK)
            st = select_warn(run, src, file, pats, patterns, npatterns, &infos, &ninfos);
        free(pats);
    }
    if (st == FP4_OK && (qset.n > 0 || qset.nfp8 > 0))
        st = fp4_quant_fold(&qset, infos, &ninfos, &qidx);
    if (st != FP4_OK) goto out;
    for (int j = 0; j < opt->nexclude; j++) {
        bool any = false;
        st = fp4_source_pattern_hits(src, opt->exclude[j], infos, ninfos, &any);
        /* a pattern written as ModelOpt writes them ('*' crossing dots: '*embed*') for what
         * recipes keep anyway: say so, with the rule */
        const fp4_recipe_rule *rr = NULL;
        const char *rn = NULL;
        for (int i = 0; st == FP4_OK && !any && !rr && i < ninfos; i++) {
            const char *nm = infos[i].name, *pt = opt->exclude[j];
            if (!nm || opt->all_tensors || opt->all_weights) continue;
            if (fnmatch(pt + (*pt == '/'), nm + (*nm == '/'), 0) == 0 &&
                (rr = fp4_recipe_keeps(nm)))
                rn = nm;
        }
        if (st == FP4_OK && !any && rr)
            st = add_warning(run, "%s: --exclude %s matches no selected tensor: %s is already "
                                  "kept in high precision by recipe rule %s (%s) ('*' in a "
                                  "pattern does not cross '.')",
                             file, opt->exclude[j], rn, rr->kind, rr->glob);
        else if (st == FP4_OK && !any)
            st = add_warning(run, "%s: --exclude %s matches no selected tensor", file,
                             opt->exclude[j]);
        if (st != FP4_OK) goto out;
    }

    run->datasets = calloc((size_t)(ninfos ? ninfos : 1), sizeof *run->datasets);
    run->tensors = calloc((size_t)(ninfos ? ninfos : 1), sizeof *run->tensors);
    run->skipped = calloc((size_t)(ninfos ? ninfos : 1), sizeof *run->skipped);
    run->pooled = calloc((size_t)run->ncfg, sizeof *run->pooled);
    if (!run->datasets || !run->tensors || !run->skipped || !run->pooled) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    /* One storage viewed under several names (tied weights): the views that read the same
     * numbers (io/source.h `view`) are one group; the first kept is analysed, the others are
     * skipped as "same data as NAME" (a file of N views of one storage would otherwise cost
     * N analyses for N pickle entries). group[i]: the first index of i's view; at[g]: where
     * the group's analysed tensor lies in the compacted infos, -1 before it is kept. */
    group = malloc(((size_t)ninfos + 1) * sizeof *group);
    at = malloc(((size_t)ninfos + 1) * sizeof *at);
    if (!group || !at) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    view_groups(infos, ninfos, group, at);
    /* The default selection: what is left out is listed, not analysed (compacts infos). */
    int kept = 0;
    for (int i = 0; i < ninfos; i++) {
        char why[160];
        const char *reason = NULL;
        fp4_qsummary *qsum = NULL;
        if (qidx && qidx[i] >= 0) {
            /* --exclude leaves it out like any tensor; a quantized tensor with a problem
             * stays: its problem is its error entry; so does one whose bytes cannot be
             * summarised (what is wrong its problem) */
            st = fp4_source_skip_reason(src, &infos[i], NULL, 0, true, opt->exclude,
                                        opt->nexclude, why, sizeof why, &reason);
            if (st != FP4_OK) goto out;
            if (!reason && !infos[i].problem[0]) {
                if (!(qsum = malloc(sizeof *qsum))) {
                    st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
                    goto out;
                }
                st = fp4_quant_summarize(src, &qset.t[qidx[i]], qsum);
                if (st == FP4_ERR_INTERNAL) {
                    free(qsum);
                    goto out;
                }
                if (st != FP4_OK) { /* "FILE: NAME: what", the entry's message adds both */
                    const char *m = fp4_last_error(), *f = fp4_source_file(src);
                    const char *nm = qset.t[qidx[i]].name;
                    if (!strncmp(m, f, strlen(f)) && !strncmp(m + strlen(f), ": ", 2) &&
                        !strncmp(m + strlen(f) + 2, nm, strlen(nm)) &&
                        !strncmp(m + strlen(f) + 2 + strlen(nm), ": ", 2))
                        m += strlen(f) + 2 + strlen(nm) + 2;
                    snprintf(infos[i].problem, sizeof infos[i].problem, "%s", m);
                    fp4_error_clear();
                    st = FP4_OK;
                    free(qsum);
                    qsum = NULL;
                } else {
                    fp4_quant_skip_reason(&qset.t[qidx[i]], why, sizeof why);
                    reason = why;
                }
            }
        } else {
            /* an FP8 export's weight or scale says so, a scalar scale included */
            fp8_reason(src, &qset, opt, &infos[i], patterns, npatterns, why, sizeof why,
                       &reason);
            if (!reason)
                st = fp4_source_skip_reason(src, &infos[i], patterns, npatterns,
                                            opt->all_tensors, opt->exclude, opt->nexclude, why,
                                            sizeof why, &reason);
            if (st != FP4_OK) goto out;
            if (!reason) recipe_reason(src, &qset, opt, &infos[i], patterns, npatterns, why,
                                       sizeof why, &reason);
            if (!reason && infos[i].view[0] && !infos[i].problem[0]) {
                int *g = &at[group[i]];
                if (*g >= 0) {
                    snprintf(why, sizeof why, "same data as %s (one storage under two names: "
                             "analysed once)", infos[*g].name);
                    reason = why;
                } else {
                    *g = kept; /* where it goes below */
                }
            }
        }
        if (reason) {
            fp4_tensor_skip *sk = &run->skipped[run->nskipped];
            if (!(sk->reason = xstrdup(reason))) {
                free(qsum);
                st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
                goto out;
            }
            sk->quant = qsum;
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
    /* The quantized tensors are what the recipe quantized: reported with their summary
     * (SPEC §10), a run of them alone is a report (its verdict empty), not "nothing to
     * analyse". */
    int nquant = 0;
    for (int i = 0; i < run->nskipped; i++) nquant += run->skipped[i].quant != NULL;
    if (ninfos == 0 && nquant == 0) {
        st = nothing_to_analyse(run, file);
        goto out;
    }
    for (int i = 0; i < ninfos; i++) {
        run->datasets[i] = xstrdup(infos[i].name);
        if (!run->datasets[i]) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        run->ndatasets++;
    }
    if (opt->shard.count > 0) { /* this share only; SR streams keep the selection index */
        if (!(run->shapes = calloc((size_t)(ninfos ? ninfos : 1), sizeof *run->shapes))) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        for (int i = 0; i < ninfos; i++) { /* what every share describes alike */
            fp4_shard_shape *sh = &run->shapes[i];
            sh->rank = infos[i].rank;
            memcpy(sh->dims, infos[i].dims, sizeof sh->dims);
            snprintf(sh->dtype, sizeof sh->dtype, "%s", infos[i].dtype);
        }
        st = shard_pick(run, infos, ninfos);
        if (st != FP4_OK) goto out;
    }

    /* Every tensor's plan (or the reason it is an error entry), then the reader over those
     * to analyse. */
    nseq = run->assigned ? run->nassigned : ninfos;
    plans = calloc((size_t)(nseq ? nseq : 1), sizeof *plans);
    order = calloc((size_t)(nseq ? nseq : 1), sizeof *order);
    if (!plans || !order) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (int k = 0; k < nseq; k++) {
        const fp4_tensor_desc *info = &infos[run->assigned ? run->assigned[k] : k];
        order[k] = info;
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
            plans[k].err = bad;
            if (!(plans[k].msg = strdup(fp4_last_error()))) {
                st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
                goto out;
            }
            continue;
        }
        st = plan_tensor(run, src, be, info, &plans[k]);
        if (st != FP4_OK) goto out;
    }
    fp4_error_clear();
    int64_t total = 0, done = 0; /* logical bytes of the tensors analysed, and of those begun */
    for (int k = 0; k < nseq; k++) {
        const int64_t b = infos[run->assigned ? run->assigned[k] : k].logical_bytes;
        if (b > 0) total += b;
    }
    fp4_progress_start(&pm, run->config->verbosity, nseq, total);
    fp4_progress_share(&pm, opt->shard.index, opt->shard.count);
    if (nseq > 0) {
        st = fp4_reader_start(src, be, order, plans, nseq, opt->mem_limit, &reader);
        if (st != FP4_OK) goto out;
    }
    for (int k = 0; k < nseq; k++) {
        const int i = run->assigned ? run->assigned[k] : k;
        const fp4_tensor_desc *info = &infos[i];
        progress(&pm, k, info, done);
        if (info->logical_bytes > 0) done += info->logical_bytes;
        fp4_tensor_result *tr = &run->tensors[run->ntensors];
        memset(tr, 0, sizeof *tr);
        fp4_error_clear();
        fp4_status ts = analyse_tensor(run, be, reader, k, &plans[k], info, i, tr, cfgs_t);
        fp4_reader_passed(reader, k);
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
    fp4_reader_join(reader);
    reader = NULL;
    fp4_progress_finish(&pm, done);
    if (opt->shard.count > 0 &&
        (st = fp4_fingerprint_recheck(&file, 1, run->prints, run->nprints)) != FP4_OK)
        goto out;
    st = fp4_run_pool(run);
out:
    fp4_reader_join(reader); /* before the source closes */
    for (int k = 0; plans && k < nseq; k++) free(plans[k].msg);
    free(plans);
    free(order);
    fp4_progress_end(&pm);
    if (infos) fp4_tensor_desc_free_list(infos, ninfos);
    free(qidx);
    free(group);
    free(at);
    fp4_qset_free(&qset);
    free(cfgs_t);
    if (be) fp4_backend_close(be);
    if (src && src != given) fp4_source_close(src);
    run->seconds = now_seconds() - t0;
    return st;
}

fp4_status fp4_run_analysis_device(const fp4_run_config *opt, fp4_source *src, fp4_backend *be,
                                   const void *data, const int64_t *strides, void *stream,
                                   int64_t *host_bytes, fp4_run *run)
{
    memset(run, 0, sizeof *run);
    if (host_bytes) *host_bytes = 0;
    run->config = opt;
    const double t0 = now_seconds();
    const char *file = fp4_source_file(src);
    fp4_tensor_desc *infos = NULL;
    int ninfos = 0;
    fp4_qconfig *cfgs_t = NULL;
    fp4_analysis *an = NULL;
    const int cap = 2 * FP4_MAX_FORMATS;
    run->file = xstrdup(file);
    run->cfgs = calloc((size_t)cap, sizeof *run->cfgs);
    cfgs_t = calloc((size_t)cap, sizeof *cfgs_t);
    fp4_status st = FP4_OK;
    if (!run->file || !run->cfgs || !cfgs_t) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    if ((st = fp4_run_config_qconfigs(opt, run->cfgs, cap, &run->ncfg)) != FP4_OK) goto out;
    snprintf(run->device, sizeof run->device, "%s", fp4_backend_name(be));
    if ((st = fp4_source_select(src, NULL, 0, &infos, &ninfos)) != FP4_OK) goto out;
    run->datasets = calloc(1, sizeof *run->datasets);
    run->tensors = calloc(1, sizeof *run->tensors);
    if (ninfos != 1 || !run->datasets || !run->tensors ||
        !(run->datasets[0] = xstrdup(infos[0].name))) {
        st = fp4_error(FP4_ERR_INTERNAL, ninfos != 1 ? "device source of %d tensors"
                                                     : "out of memory", ninfos);
        goto out;
    }
    run->ndatasets = 1;
    const fp4_tensor_desc *info = &infos[0];
    const int rank = info->rank;
    int axis = rank == 0 ? 0 : opt->axis < 0 ? opt->axis + rank : opt->axis;
    if (rank > 0 && (axis < 0 || axis >= rank)) { /* as plan_tensor: the tensor's error */
        fp4_error(FP4_ERR_INPUT, "%s: %s: --axis %d out of range for rank %d", file,
                  info->name, opt->axis, rank);
        st = add_error(run, 0, info->name, FP4_ERR_INPUT, fp4_last_error());
        if (st == FP4_OK) st = fp4_run_pool(run);
        goto out;
    }
    fp4_layout L;
    fp4_layout_of(info->dims, rank, axis, &L);
    fp4_device_view v = {.data = data, .rank = rank, .axis = axis, .stream = stream};
    v.w = info->stored == FP4_STORED_BF16 ? FP4_WORDS_BF16
          : info->stored == FP4_STORED_F16 ? FP4_WORDS_F16
                                           : 0;
    int64_t step = 1; /* C-order strides (within int64: the view was checked) */
    for (int d = rank - 1; d >= 0; d--) {
        v.dims[d] = info->dims[d];
        v.strides[d] = strides ? strides[d] : step;
        step *= info->dims[d] ? info->dims[d] : 1;
    }
    for (int c = 0; c < run->ncfg; c++) {
        cfgs_t[c] = run->cfgs[c];
        cfgs_t[c].stream = 0; /* the tensor's index in the selection, as the driver's */
    }
    fp4_tensor_result *tr = &run->tensors[0];
    tr->axis = axis;
    tr->n_rows = L.n_rows;
    tr->row_len = L.row_len;
    if (!(tr->metrics = calloc((size_t)run->ncfg, sizeof *tr->metrics))) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    st = fp4_analysis_begin(be, cfgs_t, run->ncfg, L.n_rows, L.row_len, &an);
    if (st == FP4_OK) st = fp4_analysis_device(an, &v, host_bytes);
    if (st == FP4_OK) {
        st = fp4_analysis_end(an, tr->metrics);
        an = NULL;
    }
    if (st != FP4_OK) {
        free(tr->metrics);
        tr->metrics = NULL;
        goto out;
    }
    tr->index = 0;
    tr->info = infos[0];
    memset(&infos[0], 0, sizeof infos[0]);
    run->ntensors = 1;
    st = fp4_run_pool(run);
out:
    if (an) fp4_analysis_abort(an);
    if (infos) fp4_tensor_desc_free_list(infos, ninfos);
    free(cfgs_t);
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
    free(run->shapes);
    fp4_fingerprint_free(run->prints, run->nprints);
    for (int i = 0; i < run->ntensors; i++) {
        fp4_tensor_desc_free(&run->tensors[i].info);
        free(run->tensors[i].metrics);
    }
    free(run->tensors);
    for (int i = 0; i < run->nskipped; i++) {
        fp4_tensor_desc_free(&run->skipped[i].info);
        free(run->skipped[i].reason);
        free(run->skipped[i].quant);
    }
    free(run->skipped);
    for (int i = 0; i < run->nerrors; i++) {
        free(run->errors[i].tensor);
        free(run->errors[i].message);
    }
    free(run->errors);
    free(run->pooled);
    free(run->pairs);
    for (int i = 0; i < run->nwarnings; i++) free(run->warnings[i]);
    free(run->warnings);
    memset(run, 0, sizeof *run);
}
