/* backend.c — the backend-neutral half of backend.h: open/close/name, device selection, and
 * the fp4_analysis_* protocol checks (slab order, amax pass, weight_2d slab sizes) around a
 * backend's vtable (backend_impl.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "backend/impl.h"
#include "io/widen.h"
#include "base/trace.h"

int fp4_cpu_count(void)
{
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    if (n < 1) {
        long m = sysconf(_SC_NPROCESSORS_ONLN);
        n = m > 0 && m < 1 << 20 ? (int)m : 1;
    }
    return n;
}

void fp4_threads_cap_default(void)
{
    const int n = fp4_cpu_count();
    if (omp_get_max_threads() > n) omp_set_num_threads(n);
}

static fp4_status backend_open(fp4_device dev, int threads, fp4_backend **out);

fp4_status fp4_backend_open(fp4_device dev, int threads, fp4_backend **out)
{
    fp4_status st = backend_open(dev, threads, out);
    if (st == FP4_OK) fp4_trace("backend open: %s, %d threads", (*out)->ops->name, (*out)->threads);
    return st;
}

/* Through the registry (registry.c) only: a named device opens its row's backend (or says the
 * build lacks it); auto tries the rows in order and returns the first that opens, else the
 * last one's error. */
static fp4_status backend_open(fp4_device dev, int threads, fp4_backend **out)
{
    *out = NULL;
    if (threads < 0) return fp4_error(FP4_ERR_USAGE, "threads %d: must be >= 0", threads);
    if (dev == FP4_DEVICE_AUTO) {
        fp4_status st = fp4_error(FP4_ERR_DEVICE, "no backend in this build");
        for (int i = 0; i < fp4_nbackends; i++) {
            if (!fp4_backends[i].open) continue;
            if (st != FP4_OK) fp4_error_clear(); /* an earlier row's failure is not reported */
            st = fp4_backends[i].open(threads, false, out);
            if (st == FP4_OK) return FP4_OK;
        }
        return st;
    }
    for (int i = 0; i < fp4_nbackends; i++)
        if (fp4_backends[i].dev == dev)
            return fp4_backends[i].open ? fp4_backends[i].open(threads, true, out)
                                        : fp4_error(FP4_ERR_DEVICE, "%s", fp4_backends[i].absent);
    return fp4_error(FP4_ERR_USAGE, "unknown device %d", (int)dev);
}

void fp4_backend_close(fp4_backend *be)
{
    if (!be) return;
    be->ops->close(be);
    fp4_trace("backend closed");
}

const char *fp4_backend_name(const fp4_backend *be) { return be ? be->ops->name : "none"; }

fp4_status fp4_analysis_begin(fp4_backend *be, const fp4_qconfig *cfgs, int ncfg,
                              int64_t n_rows, int64_t row_len, fp4_analysis **out)
{
    *out = NULL;
    if (!be || ncfg <= 0 || !cfgs || n_rows < 0 || row_len < 0)
        return fp4_error(FP4_ERR_USAGE, "analysis: bad arguments (%d configs, %lld x %lld)",
                         ncfg, (long long)n_rows, (long long)row_len);
    for (int c = 0; c < ncfg; c++) {
        fp4_qplan p; /* validates the config */
        FP4_TRY(fp4_qplan_make(&cfgs[c], 0.0f, row_len, &p));
    }
    fp4_analysis *an = calloc(1, sizeof *an);
    if (!an) return fp4_error(FP4_ERR_INTERNAL, "analysis: out of memory");
    an->be = be;
    an->cfgs = cfgs;
    an->ncfg = ncfg;
    an->n_rows = n_rows;
    an->row_len = row_len;
    for (int c = 0; c < ncfg; c++) an->needs_amax |= fp4_needs_tensor_amax(&cfgs[c]);
    fp4_status st = be->ops->begin(an);
    if (st != FP4_OK) {
        free(an);
        return st;
    }
    fp4_trace("tensor begin: %lld x %lld, %d configs", (long long)n_rows, (long long)row_len, ncfg);
    *out = an;
    return FP4_OK;
}

bool fp4_analysis_needs_amax(const fp4_analysis *an) { return an && an->needs_amax; }

/* FP4DIAG_TRACE: a pass's first slab and its end (2: every slab). */
static void trace_progress(const fp4_analysis *an, bool amax, int64_t nrows)
{
    if (!fp4_trace_on()) return;
    const int64_t done = amax ? an->rows_amax : an->rows_fed;
    static int level = -1;
    if (level < 0) {
        const char *e = getenv("FP4DIAG_TRACE");
        level = e ? atoi(e) : 1;
    }
    if (done == an->n_rows || done == nrows || level > 1)
        fp4_trace("%s: %lld of %lld rows%s", amax ? "amax" : "feed", (long long)done,
                  (long long)an->n_rows, done == an->n_rows ? " (pass done)" : "");
}

static fp4_status amax_check(const fp4_analysis *an, int64_t nrows)
{
    if (an->rows_fed > 0 || nrows < 0 || an->rows_amax + nrows > an->n_rows)
        return fp4_error(FP4_ERR_USAGE, "analysis: amax slab out of order");
    return FP4_OK;
}

static fp4_status feed_check(const fp4_analysis *an, int64_t nrows)
{
    if (an->needs_amax && an->rows_amax != an->n_rows)
        return fp4_error(FP4_ERR_USAGE, "analysis: feed before the amax pass covered all rows");
    if (nrows < 0 || an->rows_fed + nrows > an->n_rows)
        return fp4_error(FP4_ERR_USAGE, "analysis: more rows fed than the tensor has");
    if (an->rows_fed % 16 != 0)
        for (int c = 0; c < an->ncfg; c++)
            if (an->cfgs[c].weight_2d)
                return fp4_error(FP4_ERR_USAGE,
                                 "analysis: weight_2d needs slabs of a multiple of 16 rows");
    return FP4_OK;
}

static fp4_status words_widen(const fp4_analysis *an, const void *words, fp4_words w,
                              int64_t nrows, float **out);

/* One pass (the amax pass when amax, else the feed) on nrows rows of fp32 (w == 0) or stored
 * words of kind w: checked, given to the backend as they are when it takes them, else widened
 * here first; the rows counted and traced. */
static fp4_status pass_rows(fp4_analysis *an, bool amax, const void *rows, int w, int64_t nrows)
{
    if (amax && !an->needs_amax) return FP4_OK;
    FP4_TRY(amax ? amax_check(an, nrows) : feed_check(an, nrows));
    fp4_status (*const op)(fp4_analysis *, const void *, int, int64_t) =
        amax ? an->be->ops->amax : an->be->ops->feed;
    if (!w || fp4_backend_takes_words(an->be, (fp4_words)w)) {
        FP4_TRY(op(an, rows, w, nrows));
    } else {
        float *f = NULL;
        FP4_TRY(words_widen(an, rows, (fp4_words)w, nrows, &f));
        const fp4_status st = op(an, f, 0, nrows);
        free(f);
        FP4_TRY(st);
    }
    if (amax) an->rows_amax += nrows;
    else an->rows_fed += nrows;
    trace_progress(an, amax, nrows);
    return FP4_OK;
}

fp4_status fp4_analysis_amax(fp4_analysis *an, const float *rows, int64_t nrows)
{
    return pass_rows(an, true, rows, 0, nrows);
}

fp4_status fp4_analysis_feed(fp4_analysis *an, const float *rows, int64_t nrows)
{
    return pass_rows(an, false, rows, 0, nrows);
}

fp4_status fp4_analysis_amax_zero(fp4_analysis *an, int64_t nrows)
{
    if (!an->needs_amax) return FP4_OK;
    FP4_TRY(amax_check(an, nrows));
    an->rows_amax += nrows; /* |0| leaves every amax (>= 0, after any rotation) as it is */
    trace_progress(an, true, nrows);
    return FP4_OK;
}

/* Rows of zeros fed from one zero buffer of about 1M values (whole groups of 16 rows). */
#define ZERO_FEED_ELEMS ((int64_t)1 << 20)

fp4_status fp4_analysis_feed_zero(fp4_analysis *an, int64_t nrows)
{
    FP4_TRY(feed_check(an, nrows));
    if (an->be->ops->feed_zero) {
        FP4_TRY(an->be->ops->feed_zero(an, nrows));
        an->rows_fed += nrows;
        trace_progress(an, false, nrows);
        return FP4_OK;
    }
    int64_t per = an->row_len ? ZERO_FEED_ELEMS / an->row_len : nrows;
    per = per < 16 ? 16 : per / 16 * 16;
    if (per > nrows) per = nrows;
    float *z = calloc((size_t)(per * an->row_len) + 1, sizeof *z);
    if (!z) return fp4_error(FP4_ERR_INTERNAL, "analysis: out of memory");
    fp4_status st = FP4_OK;
    for (int64_t done = 0; done < nrows && st == FP4_OK;) {
        const int64_t n = nrows - done < per ? nrows - done : per;
        st = an->be->ops->feed(an, z, 0, n);
        if (st == FP4_OK) an->rows_fed += n;
        done += n;
    }
    free(z);
    return st;
}

bool fp4_backend_pins_host(const fp4_backend *be) { return be && be->ops->host_register; }

void fp4_backend_host_register(fp4_backend *be, void *p, size_t bytes)
{
    if (be && p && be->ops->host_register) be->ops->host_register(be, p, bytes);
}

void fp4_backend_host_unregister(fp4_backend *be, void *p)
{
    if (be && p && be->ops->host_unregister) be->ops->host_unregister(be, p);
}

bool fp4_backend_takes_words(const fp4_backend *be, fp4_words w)
{
    return be && be->ops->takes_words && be->ops->takes_words(be, w);
}

/* Words a backend does not take itself: widened here (io/widen.c) into fp32 rows. */
static fp4_status words_widen(const fp4_analysis *an, const void *words, fp4_words w,
                              int64_t nrows, float **out)
{
    const size_t n = (size_t)nrows * (size_t)an->row_len;
    float *f = malloc(n ? n * sizeof *f : 1);
    if (!f) return fp4_error(FP4_ERR_INTERNAL, "analysis: out of memory (%zu values)", n);
    fp4_widen(w == FP4_WORDS_BF16 ? FP4_STORED_BF16 : FP4_STORED_F16, false, words, f, n);
    *out = f;
    return FP4_OK;
}

static fp4_status words_kind(fp4_words w)
{
    if (w != FP4_WORDS_F16 && w != FP4_WORDS_BF16)
        return fp4_error(FP4_ERR_USAGE, "analysis: unknown word kind %d", (int)w);
    return FP4_OK;
}

fp4_status fp4_analysis_amax_words(fp4_analysis *an, const void *words, fp4_words w,
                                   int64_t nrows)
{
    FP4_TRY(words_kind(w));
    return pass_rows(an, true, words, (int)w, nrows);
}

fp4_status fp4_analysis_feed_words(fp4_analysis *an, const void *words, fp4_words w,
                                   int64_t nrows)
{
    FP4_TRY(words_kind(w));
    return pass_rows(an, false, words, (int)w, nrows);
}

fp4_status fp4_analysis_device(fp4_analysis *an, const fp4_device_view *v, int64_t *host_bytes)
{
    if (host_bytes) *host_bytes = 0;
    if (!an->be->ops->device)
        return fp4_error(FP4_ERR_DEVICE, "the %s backend does not read device memory",
                         an->be->ops->name);
    if (an->rows_amax != 0 || an->rows_fed != 0)
        return fp4_error(FP4_ERR_USAGE, "analysis: a device tensor after rows were fed");
    FP4_TRY(an->be->ops->device(an, v, host_bytes));
    if (an->rows_fed != an->n_rows)
        return fp4_error(FP4_ERR_INTERNAL, "analysis: %lld of %lld device rows fed",
                         (long long)an->rows_fed, (long long)an->n_rows);
    trace_progress(an, false, an->n_rows);
    return FP4_OK;
}

fp4_status fp4_analysis_end(fp4_analysis *an, fp4_metrics *out)
{
    fp4_status st;
    if (an->rows_fed != an->n_rows)
        st = fp4_error(FP4_ERR_USAGE, "analysis: %lld of %lld rows fed",
                       (long long)an->rows_fed, (long long)an->n_rows);
    else st = an->be->ops->end(an, out);
    if (st == FP4_OK)
        for (int c = 0; c < an->ncfg; c++) fp4_metrics_finish(&out[c]);
    an->be->ops->abort(an);
    free(an);
    fp4_trace("tensor end");
    return st;
}

void fp4_analysis_abort(fp4_analysis *an)
{
    if (!an) return;
    an->be->ops->abort(an);
    free(an);
}

bool fp4_backend_audits(const fp4_backend *be) { return be && be->ops->audit_sums; }

fp4_status fp4_backend_audit_sums(fp4_backend *be, const fp4_audit_slab *slab)
{
    if (!fp4_backend_audits(be))
        return fp4_error(FP4_ERR_USAGE, "the %s backend does not audit on its device",
                         fp4_backend_name(be));
    return be->ops->audit_sums(be, slab);
}
