/* backend_cpu.c — the CPU (OpenMP) engine behind backend.h: a parallel pass-1 amax, then one
 * pass over each slab that feeds every config, on fp32 rows or on stored f16/bf16 words widened
 * a group at a time; per-chunk fp64 sums are kept and merged in (row, chunk) order, so results
 * equal fp4_quantize_rows for any thread count or slab split. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/impl.h"
#include "base/isa.h"
#include "base/trace.h"
#include "io/widen.h"

/* rows per work batch: bounds the per-chunk partials kept before the ordered merge (16M
 * elements: ~100 KiB of sums per config per 1M, and CPU_BATCH_SUMS_BYTES in all; few
 * barriers). Groups of 16 rows are handed out dynamically (each writes its own slots, so the
 * result does not depend on which thread runs it) so that a thread slowed by other jobs does
 * not hold the batch up. A batch is one parallel loop: 4M elements of rows of 4096 were 64
 * groups, and the last ones left most of 16 threads idle at its end (H100 host: 71-82% busy,
 * with the driver's 512-row slabs). */
#define CPU_BATCH_ELEMS (1 << 24)
#define CPU_BATCH_SUMS_BYTES ((int64_t)8 << 20)

/* The shared grouped-row cache (fp4_grpcache) is a transposed copy of up to 16 prepared rows
 * per thread. It is kept only while that copy is small (rows up to ~55K elements at block
 * 16): --mem-limit budgets the slabs, not this, it adds up over threads, and a 1-D tensor is
 * one row (a 128 MiB tensor would add 128 MiB). Longer rows load each group on the fly, per
 * config, as before. */
#define CPU_GRPCACHE_MAX_BYTES ((int64_t)4 << 20)

/* The amax pass works on pieces of about this many values: whole rows when they are shorter
 * (several rows a piece), else parts of a row that begin at a multiple of this (a multiple of
 * every RHT size, 16..256: a rotated group never straddles two pieces). A piece of stored
 * words is widened into a per-thread buffer of this size (64 KiB, in cache). */
#define CPU_AMAX_PIECE ((int64_t)1 << 14)

/* The per-thread buffers (and the batch sums) are the backend's, kept from tensor to tensor and
 * grown when a tensor needs more: a checkpoint of many small tensors allocates (and faults in)
 * them once, not once per tensor and thread. Kept only while they take at most this much in
 * all; a tensor that needs more frees them at its end, as before (what --mem-limit budgets,
 * the slabs, is not this, but the peak stays what one tensor needs). */
#define CPU_KEEP_BYTES ((int64_t)32 << 20)

/* One chunk's ordered sums: the engine's (fp4_fsums) and the recipe statistics' (fp4_ssums). */
typedef struct cpu_sums {
    fp4_fsums f;
    fp4_ssums s;
} cpu_sums;

typedef struct cpu_be {
    int T;
    float **scratch;      /* [T] scratch_cap floats each */
    fp4_metrics **upart;  /* [T] upart_cap each */
    float **prep;         /* [T] prep_cap floats each */
    fp4_grpcache **gc;    /* [T] for rows up to gc_P, blocks gc_bmin..gc_bmax; NULLs: none */
    float **wide;         /* [T] wide_cap floats each: stored words widened (wide_room) */
    int64_t scratch_cap, upart_cap, prep_cap, gc_P, wide_cap;
    int gc_bmin, gc_bmax;
    cpu_sums **sums;      /* [nsums] sums_cap[c] each */
    int64_t *sums_cap;
    int nsums;
} cpu_be;

typedef struct cpu_an {
    float *amax;        /* [ncfg] tensor amax as each config sees it */
    fp4_qplan *plans;   /* [ncfg], made at the first feed */
    bool planned;
    fp4_metrics *acc;   /* [ncfg] the ordered result */
    fp4_metrics *cnt;   /* [threads * ncfg] order-free integer counts per thread */
    float **scratch;    /* [threads] */
    fp4_metrics **upart; /* [threads] partials of one unit, max over configs */
    cpu_sums **sums;    /* [ncfg] batch_rows * nchunk */
    float **prep;       /* [threads] 16 rows x max padded_len: the prepared (padded, rotated)
                           rows shared by configs with the same rotation and padding */
    fp4_grpcache **gc;  /* [threads] the prepared rows in the grouped kernel's layout */
    bool use_gc;        /* false when rows are too long (CPU_GRPCACHE_MAX_BYTES): none used */
    int *order;         /* [ncfg] configs grouped by preparation key (rht, padded_len) */
    float **wide;       /* [threads] a group's (16 x row_len) or an amax piece's rows widened
                           from stored words (the backend's, grown by wide_room) */
    float *amax_loc;    /* [threads * ncfg] the amax pass's per-thread maxima */
    int *own;           /* [ncfg] the configs the amax pass computes (one per rotation) */
    int64_t batch_rows;
    fp4_metrics *zero16, *zero1; /* [ncfg] the counts 16 / 1 rows of zeros add (cpu_feed_zero) */
    bool zero_moves;    /* zeros moved an fp64 sum (never expected): zero rows are fed */
    /* FP4DIAG_TRACE (seconds; 0 when off): wall time of the amax and quantization passes'
     * parallel loops, the threads' busy time in them (summed over threads), and the serial
     * merge of each batch's sums */
    double t_amax, t_feed, t_busy, t_merge;
} cpu_an;

/* Free the kept buffers (the arrays of pointers stay). */
static void keep_release(cpu_be *kb)
{
    for (int t = 0; t < kb->T; t++) {
        free(kb->scratch[t]);
        free(kb->upart[t]);
        free(kb->prep[t]);
        fp4_grpcache_free(kb->gc[t]);
        free(kb->wide[t]);
        kb->wide[t] = NULL;
        kb->scratch[t] = NULL;
        kb->upart[t] = NULL;
        kb->prep[t] = NULL;
        kb->gc[t] = NULL;
    }
    for (int c = 0; c < kb->nsums; c++) {
        free(kb->sums[c]);
        kb->sums[c] = NULL;
        kb->sums_cap[c] = 0;
    }
    kb->scratch_cap = kb->upart_cap = kb->prep_cap = kb->gc_P = kb->wide_cap = 0;
    kb->gc_bmin = kb->gc_bmax = 0;
}

static int64_t keep_bytes(const cpu_be *kb)
{
    int64_t b = (int64_t)kb->T * (kb->scratch_cap * (int64_t)sizeof(float) +
                                  kb->upart_cap * (int64_t)sizeof(fp4_metrics) +
                                  kb->prep_cap * (int64_t)sizeof(float) +
                                  kb->wide_cap * (int64_t)sizeof(float));
    if (kb->gc_P) b += (int64_t)kb->T * fp4_grpcache_bytes(16, kb->gc_P, kb->gc_bmin, kb->gc_bmax);
    for (int c = 0; c < kb->nsums; c++) b += kb->sums_cap[c] * (int64_t)sizeof(cpu_sums);
    return b;
}

static void cpu_close(fp4_backend *be)
{
    cpu_be *kb = be->impl;
    if (kb) {
        keep_release(kb);
        free(kb->scratch);
        free(kb->upart);
        free(kb->prep);
        free(kb->gc);
        free(kb->wide);
        free(kb->sums);
        free(kb->sums_cap);
        free(kb);
    }
    free(be);
}

static void cpu_abort(fp4_analysis *an)
{
    cpu_an *ca = an->impl;
    if (!ca) return;
    free(ca->amax_loc);
    free(ca->own);
    cpu_be *kb = an->be->impl;
    if (keep_bytes(kb) > CPU_KEEP_BYTES) keep_release(kb);
    free(ca->zero16);
    free(ca->zero1);
    free(ca->order);
    free(ca->amax);
    free(ca->plans);
    free(ca->acc);
    free(ca->cnt);
    free(ca);
    an->impl = NULL;
}

static fp4_status cpu_begin(fp4_analysis *an)
{
    const int n = an->ncfg, T = an->be->threads;
    cpu_an *ca = calloc(1, sizeof *ca);
    if (!ca) return fp4_error(FP4_ERR_INTERNAL, "cpu backend: out of memory");
    an->impl = ca;
    ca->amax = calloc((size_t)n, sizeof *ca->amax);
    ca->plans = calloc((size_t)n, sizeof *ca->plans);
    ca->acc = calloc((size_t)n, sizeof *ca->acc);
    ca->cnt = calloc((size_t)n * (size_t)T, sizeof *ca->cnt);
    ca->order = calloc((size_t)n, sizeof *ca->order);
    ca->amax_loc = calloc((size_t)n * (size_t)T, sizeof *ca->amax_loc);
    ca->own = calloc((size_t)n, sizeof *ca->own);
    cpu_be *kb = an->be->impl;
    const bool got = ca->amax && ca->plans && ca->acc && ca->cnt && ca->order && ca->amax_loc &&
                     ca->own;
    if (got && kb->nsums < n) {
        cpu_sums **s = realloc(kb->sums, (size_t)n * sizeof *s);
        if (s) kb->sums = s;
        int64_t *cap = s ? realloc(kb->sums_cap, (size_t)n * sizeof *cap) : NULL;
        if (cap) kb->sums_cap = cap;
        if (s && cap) {
            for (int c = kb->nsums; c < n; c++) {
                kb->sums[c] = NULL;
                kb->sums_cap[c] = 0;
            }
            kb->nsums = n;
        }
    }
    if (!got || kb->nsums < n) {
        cpu_abort(an);
        return fp4_error(FP4_ERR_INTERNAL, "cpu backend: out of memory");
    }
    /* the kept buffers, borrowed for this analysis (cpu_plan grows them) */
    ca->scratch = kb->scratch;
    ca->upart = kb->upart;
    ca->prep = kb->prep;
    ca->gc = kb->gc;
    ca->wide = kb->wide;
    ca->sums = kb->sums;
    return FP4_OK;
}

/* The stored form of words of kind w (0: fp32 rows, nothing to widen). */
static fp4_stored words_stored(fp4_words w)
{
    return w == FP4_WORDS_BF16 ? FP4_STORED_BF16 : FP4_STORED_F16;
}

/* Per-thread buffers for k widened floats (the backend's, grown when needed). */
static fp4_status wide_room(fp4_analysis *an, int64_t k)
{
    cpu_be *kb = an->be->impl;
    if (k <= kb->wide_cap) return FP4_OK;
    for (int t = 0; t < an->be->threads; t++) {
        free(kb->wide[t]);
        kb->wide[t] = malloc((size_t)k * sizeof(float) + 1);
        if (!kb->wide[t]) {
            kb->wide_cap = 0;
            return fp4_error(FP4_ERR_INTERNAL, "cpu backend: out of memory (%lld values)",
                             (long long)k);
        }
    }
    kb->wide_cap = k;
    return FP4_OK;
}

/* Max |v| over the finite values of n stored words of kind w, as the fp32 their widening
 * gives: on the words themselves, since widening (exact, monotonic) keeps the order of finite
 * magnitudes; NaN and infinities skipped, -0 as +0 (fp4_amax_row's rule, its bits). Compiled
 * for AVX-512, AVX2 and the baseline, each exact, run by FP4DIAG_ISA's choice
 * (FP4_ISA_SITE_WORDS_MAX). */
static inline FP4_ISA_INLINE float words_amax_body(int w, const uint16_t *x, int64_t n)
{
    const uint16_t lim = w == FP4_WORDS_BF16 ? 0x7f80u : 0x7c00u; /* the infinity's bits */
    uint16_t m = 0;
#pragma omp simd reduction(max : m)
    for (int64_t j = 0; j < n; j++) {
        const uint16_t u = x[j] & 0x7fffu;
        const uint16_t f = u < lim ? u : 0u;
        m = f > m ? f : m;
    }
    return fp4c_u2f(w == FP4_WORDS_BF16 ? (uint32_t)m << 16 : fp4_f16_bits_to_f32_bits(m));
}
FP4_ISA_VARIANTS(FP4_ISA_SITE_WORDS_MAX, float, words_amax,
                 (int w, const uint16_t *x, int64_t n), (w, x, n))

/* The amax pass on fp32 rows (w == 0) or stored words of kind w: pieces of rows
 * (CPU_AMAX_PIECE) run in parallel, a piece of words widened once for every config. A tensor
 * amax is a max over finite |v| (rotated groups of whole rows): exact, so neither the pieces
 * nor the threads change a bit of it. Configs with the same rotation share one amax. */
static fp4_status cpu_amax_any(fp4_analysis *an, const void *rows, int w, int64_t nrows)
{
    cpu_an *ca = an->impl;
    const int n = an->ncfg, T = an->be->threads;
    const int64_t L = an->row_len;
    if (nrows <= 0 || L <= 0) return FP4_OK;
    int *own = ca->own, nown = 0; /* the configs that compute an amax of their own */
    for (int c = 0; c < n; c++) {
        const fp4_qconfig *cfg = &an->cfgs[c];
        if (!fp4_needs_tensor_amax(cfg)) continue;
        bool same = false;
        for (int d = 0; d < c && !same; d++)
            same = fp4_needs_tensor_amax(&an->cfgs[d]) && an->cfgs[d].rht == cfg->rht;
        if (same) continue;
        own[nown++] = c;
    }
    if (!nown) return FP4_OK;
    /* pieces: R whole rows each (rows up to CPU_AMAX_PIECE), or ppr parts of each row */
    const int64_t R = L <= CPU_AMAX_PIECE ? CPU_AMAX_PIECE / L : 1;
    const int64_t ppr = L <= CPU_AMAX_PIECE ? 1 : (L + CPU_AMAX_PIECE - 1) / CPU_AMAX_PIECE;
    const int64_t npieces = L <= CPU_AMAX_PIECE ? (nrows + R - 1) / R : nrows * ppr;
    if (w) FP4_TRY(wide_room(an, L <= CPU_AMAX_PIECE ? R * L : CPU_AMAX_PIECE));
    for (int i = 0; i < T * nown; i++) ca->amax_loc[i] = 0.0f;
    const fp4_stored ws = words_stored((fp4_words)w);
    const double ta = fp4_trace_clock();
/* a small slab: no team to wake */
#pragma omp parallel for schedule(dynamic, 4) num_threads(T) if (npieces > 1 && nrows * L > 65536)
    for (int64_t q = 0; q < npieces; q++) {
        const int t = omp_get_thread_num();
        int64_t off, len, nr; /* first value, values per row, rows */
        if (L <= CPU_AMAX_PIECE) {
            off = q * R * L;
            nr = nrows - q * R < R ? nrows - q * R : R;
            len = L;
        } else {
            const int64_t j0 = q % ppr * CPU_AMAX_PIECE;
            off = q / ppr * L + j0;
            nr = 1;
            len = L - j0 < CPU_AMAX_PIECE ? L - j0 : CPU_AMAX_PIECE;
        }
        const float *v = w ? NULL : (const float *)rows + off;
        float *loc = ca->amax_loc + (size_t)t * (size_t)nown;
        for (int k = 0; k < nown; k++) {
            const fp4_qconfig *cfg = &an->cfgs[own[k]];
            float a;
            if (!cfg->rht) { /* the piece's values in one run, words without widening */
                a = w ? words_amax(w, (const uint16_t *)rows + off, nr * len)
                      : fp4_amax_row(cfg, v, nr * len);
            } else {
                if (!v) { /* rotated values need the floats: widened once per piece */
                    fp4_widen(ws, false, (const uint16_t *)rows + off, ca->wide[t],
                              (size_t)(nr * len));
                    v = ca->wide[t];
                }
                a = 0.0f;
                for (int64_t r = 0; r < nr; r++) {
                    const float b = fp4_amax_row(cfg, v + r * len, len);
                    if (b > a) a = b;
                }
            }
            if (a > loc[k]) loc[k] = a;
        }
    }
    ca->t_amax += fp4_trace_clock() - ta;
    for (int k = 0; k < nown; k++)
        for (int t = 0; t < T; t++) {
            const float a = ca->amax_loc[(size_t)t * (size_t)nown + (size_t)k];
            if (a > ca->amax[own[k]]) ca->amax[own[k]] = a;
        }
    for (int c = 0; c < n; c++) { /* the configs that share an amax */
        if (!fp4_needs_tensor_amax(&an->cfgs[c])) continue;
        for (int d = 0; d < c; d++)
            if (fp4_needs_tensor_amax(&an->cfgs[d]) && an->cfgs[d].rht == an->cfgs[c].rht) {
                ca->amax[c] = ca->amax[d];
                break;
            }
    }
    return FP4_OK;
}

/* Whether two plans prepare (pad, rotate) rows to the same bits. */
static bool same_prep(const fp4_qplan *a, const fp4_qplan *b)
{
    if (a->padded_len != b->padded_len) return false;
    if (!a->cfg.rht || !b->cfg.rht) return !a->cfg.rht && !b->cfg.rht;
    return a->cfg.rht == b->cfg.rht ||
           (a->cfg.rht->n == b->cfg.rht->n &&
            memcmp(a->cfg.rht->s, b->cfg.rht->s, (size_t)a->cfg.rht->n * sizeof(float)) == 0);
}

static fp4_status cpu_plan(fp4_analysis *an)
{
    cpu_an *ca = an->impl;
    const int n = an->ncfg, T = an->be->threads;
    int64_t scratch = 0, upart = 0, P = 1;
    int bmin = 0, bmax = 0;
    for (int c = 0; c < n; c++) {
        FP4_TRY(fp4_qplan_make(&an->cfgs[c], ca->amax[c], an->row_len, &ca->plans[c]));
        const fp4_qplan *p = &ca->plans[c];
        if (fp4_qplan_scratch_floats(p) > scratch) scratch = fp4_qplan_scratch_floats(p);
        if ((int64_t)p->unit_rows * p->nchunk > upart) upart = (int64_t)p->unit_rows * p->nchunk;
        if (p->padded_len > P) P = p->padded_len;
        if (!bmin || p->block < bmin) bmin = p->block;
        if (p->block > bmax) bmax = p->block;
    }
    int64_t br = CPU_BATCH_ELEMS / P;
    /* the batch's per-chunk sums, [rows x chunks] per config, stay under CPU_BATCH_SUMS_BYTES:
     * short rows have one chunk each (rows of 16: 4M elements would keep 262144 sums per
     * config, 27 MiB each, outside what --mem-limit budgets). The result does not depend on
     * the batch size: sums are merged in (row, chunk) order across batches. */
    int64_t per_row = 0;
    for (int c = 0; c < n; c++) per_row += (int64_t)ca->plans[c].nchunk * (int64_t)sizeof(cpu_sums);
    if (per_row > 0 && br > CPU_BATCH_SUMS_BYTES / per_row) br = CPU_BATCH_SUMS_BYTES / per_row;
    /* and no larger than the tensor: a small tensor allocates small sums (10,000 tiny tensors
     * allocated 8 MiB each, most of their time under ASan) */
    if (br > an->n_rows) br = an->n_rows;
    br = (br + 15) / 16 * 16;
    if (br < 16) br = 16;
    ca->batch_rows = br;
    /* the kept per-thread buffers, grown to this tensor's needs (a buffer is replaced, not
     * realloc'd: nothing in it is kept) */
    cpu_be *kb = an->be->impl;
    const bool cache = fp4_grpcache_bytes(16, P, bmin, bmax) <= CPU_GRPCACHE_MAX_BYTES;
    /* a cache made for longer rows and a wider range of blocks serves these rows too (as it
     * serves configs of shorter padded rows within one tensor) */
    const bool gc_fits = kb->gc_P >= P && kb->gc_bmin <= bmin && kb->gc_bmax >= bmax;
    const bool grow_s = scratch > kb->scratch_cap, grow_u = upart > kb->upart_cap,
               grow_p = 16 * P > kb->prep_cap, grow_g = cache && !gc_fits;
    for (int t = 0; t < T; t++) {
        if (grow_s) {
            free(kb->scratch[t]);
            kb->scratch[t] = malloc((size_t)scratch * sizeof(float) + 1);
        }
        if (grow_u) {
            free(kb->upart[t]);
            kb->upart[t] = malloc((size_t)upart * sizeof(fp4_metrics) + 1);
        }
        if (grow_p) {
            free(kb->prep[t]);
            kb->prep[t] = malloc((size_t)(16 * P) * sizeof(float) + 1);
        }
        if (grow_g) {
            fp4_grpcache_free(kb->gc[t]);
            kb->gc[t] = fp4_grpcache_new(16, P, bmin, bmax);
        }
    }
    if (grow_s) kb->scratch_cap = scratch;
    if (grow_u) kb->upart_cap = upart;
    if (grow_p) kb->prep_cap = 16 * P;
    if (grow_g) {
        kb->gc_P = P;
        kb->gc_bmin = bmin;
        kb->gc_bmax = bmax;
    }
    for (int t = 0; t < T; t++)
        if (!kb->scratch[t] || !kb->upart[t] || !kb->prep[t] || (cache && !kb->gc[t])) {
            keep_release(kb); /* caps and buffers agree again */
            return fp4_error(FP4_ERR_INTERNAL, "cpu backend: out of memory");
        }
    /* rows too long for a cache: none (the kept one, if any, is left for later tensors) */
    ca->use_gc = cache;
    for (int c = 0; c < n; c++) {
        const int64_t need = br * ca->plans[c].nchunk;
        if (need > kb->sums_cap[c]) {
            free(kb->sums[c]);
            kb->sums[c] = malloc((size_t)need * sizeof(cpu_sums) + 1);
            kb->sums_cap[c] = kb->sums[c] ? need : 0;
            if (!kb->sums[c]) return fp4_error(FP4_ERR_INTERNAL, "cpu backend: out of memory");
        }
    }
    /* configs grouped by preparation key, first appearance order (results do not depend on
     * the order configs are computed in: each config's sums keep their own order) */
    int k = 0;
    for (int c = 0; c < n; c++) {
        bool seen = false;
        for (int d = 0; d < c && !seen; d++) seen = same_prep(&ca->plans[c], &ca->plans[d]);
        if (seen) continue;
        for (int d = c; d < n; d++)
            if (same_prep(&ca->plans[c], &ca->plans[d])) ca->order[k++] = d;
    }
    ca->planned = true;
    return FP4_OK;
}

/* The quantization pass on fp32 rows (w == 0) or stored words of kind w: a group of 16 rows
 * of words is widened (io/widen.c, the bits the reader's fp32 would have) into the thread's
 * buffer, in cache, and then runs exactly the fp32 code. */
static fp4_status cpu_feed_any(fp4_analysis *an, const void *rows, int w, int64_t nrows)
{
    cpu_an *ca = an->impl;
    if (!ca->planned) FP4_TRY(cpu_plan(an));
    const int n = an->ncfg, T = an->be->threads;
    const int64_t L = an->row_len;
    const fp4_stored ws = words_stored((fp4_words)w);
    if (w) FP4_TRY(wide_room(an, (nrows < 16 ? nrows : 16) * L));
    for (int64_t b0 = 0; b0 < nrows; b0 += ca->batch_rows) {
        const int64_t bn = nrows - b0 < ca->batch_rows ? nrows - b0 : ca->batch_rows;
        const int64_t ngroups = (bn + 15) / 16;
        const double tf = fp4_trace_clock();
/* one group: no team to wake (a per-tensor cost for many small tensors) */
#pragma omp parallel for schedule(dynamic, 1) num_threads(T) if (ngroups > 1)
        for (int64_t g = 0; g < ngroups; g++) {
            const double tg = fp4_trace_clock();
            const int t = omp_get_thread_num();
            fp4_grpcache *const gct = ca->use_gc ? ca->gc[t] : NULL;
            const int64_t r0 = g * 16; /* within the batch */
            const int gr = (int)(r0 + 16 <= bn ? 16 : bn - r0);
            const float *in = (const float *)rows + (b0 + r0) * L;
            if (w) {
                fp4_widen(ws, false, (const uint16_t *)rows + (b0 + r0) * L, ca->wide[t],
                          (size_t)(gr * L));
                in = ca->wide[t];
            }
            /* input counts once per row, shared by every config */
            fp4_metrics ic;
            fp4_metrics_init(&ic);
            for (int r = 0; r < gr; r++) fp4_input_counts(in + (int64_t)r * L, L, &ic);
            const fp4_qplan *prev = NULL;
            const float *v = NULL;
            for (int oc = 0; oc < n; oc++) {
                const int c = ca->order[oc];
                const fp4_qplan *p = &ca->plans[c];
                const int64_t P = p->padded_len;
                fp4_metrics *cnt = &ca->cnt[(size_t)t * (size_t)n + (size_t)c];
                cnt->zero += ic.zero;
                cnt->nan += ic.nan;
                cnt->inf += ic.inf;
                if (!prev || !same_prep(prev, p)) { /* pad and rotate once per key */
                    fp4_grpcache_reset(gct);
                    if (!p->cfg.rht && P == L) v = in; /* already the prepared rows */
                    else {
                        fp4_qplan_prep(p, in, gr, ca->prep[t]);
                        v = ca->prep[t];
                    }
                    prev = p;
                }
                for (int u = 0; u < gr; u += p->unit_rows) {
                    const int nr = gr - u < p->unit_rows ? gr - u : p->unit_rows;
                    const int64_t rb = r0 + u; /* row within the batch */
                    fp4_metrics *part = ca->upart[t];
                    for (int i = 0; i < nr * p->nchunk; i++) fp4_metrics_init(&part[i]);
                    fp4_qplan_unit_prepared(p, v + (int64_t)u * P, an->rows_fed + b0 + rb, nr,
                                            ca->scratch[t], NULL, NULL, NULL, part, gct, u);
                    for (int i = 0; i < nr * p->nchunk; i++) {
                        cpu_sums *cs = &ca->sums[c][rb * p->nchunk + i];
                        fp4_fsums_of(&part[i], &cs->f);
                        fp4_ssums_of(&part[i], &cs->s);
                        fp4_metrics_merge_counts(cnt, &part[i]);
                    }
                }
            }
            if (tg > 0.0) {
                const double d = fp4_trace_clock() - tg;
#pragma omp atomic
                ca->t_busy += d;
            }
        }
        const double tm = fp4_trace_clock();
        ca->t_feed += tm - tf;
        /* each config's chunk sums added in (row, chunk) order, the configs on threads of their
         * own (a config's order, so its bits, do not change): six analyses' merge took 0.4 s of
         * an 11 s run on 16 threads when it ran on one (H100 host) */
        const int mt = T < n ? T : n;
#pragma omp parallel for schedule(static, 1) num_threads(mt) if (mt > 1 && bn * ca->plans[0].nchunk >= 1024)
        for (int c = 0; c < n; c++) {
            const int64_t k = bn * ca->plans[c].nchunk;
            for (int64_t i = 0; i < k; i++) {
                fp4_fsums_add(&ca->acc[c], &ca->sums[c][i].f);
                fp4_ssums_add(&ca->acc[c], &ca->sums[c][i].s);
            }
        }
        ca->t_merge += fp4_trace_clock() - tm;
    }
    return FP4_OK;
}

/* Rows of zeros (never-written storage). A block of zeros quantizes to zeros whatever its
 * place, scale, rotation or rounding (SR included), so every fp64 sum gains +0 (x + 0 == x:
 * nothing to add) and the counts are the same for each row: those of 16 zero rows (a tile
 * group under weight_2d) and of one, measured once per tensor by cpu_feed_any on zero rows that
 * belong to the run, then multiplied. Should zeros ever move a sum, every zero row is fed. */
static fp4_status cpu_zero_rows(fp4_analysis *an, int64_t k, fp4_metrics *delta)
{
    cpu_an *ca = an->impl;
    const int n = an->ncfg, T = an->be->threads;
    float *z = calloc((size_t)(k * an->row_len) + 1, sizeof *z);
    fp4_metrics *before = calloc((size_t)n, sizeof *before);
    fp4_fsums *s0 = calloc((size_t)n, sizeof *s0);
    fp4_status st = FP4_OK;
    if (!z || !before || !s0) st = fp4_error(FP4_ERR_INTERNAL, "cpu backend: out of memory");
    for (int c = 0; st == FP4_OK && c < n; c++) {
        fp4_metrics_init(&before[c]);
        for (int t = 0; t < T; t++)
            fp4_metrics_merge_counts(&before[c], &ca->cnt[(size_t)t * (size_t)n + (size_t)c]);
        fp4_fsums_of(&ca->acc[c], &s0[c]);
    }
    if (st == FP4_OK) st = cpu_feed_any(an, z, 0, k);
    for (int c = 0; st == FP4_OK && delta && c < n; c++) {
        fp4_fsums s1;
        fp4_fsums_of(&ca->acc[c], &s1);
        if (memcmp(&s1, &s0[c], sizeof s1) != 0) ca->zero_moves = true;
        fp4_metrics after;
        fp4_metrics_init(&after);
        for (int t = 0; t < T; t++)
            fp4_metrics_merge_counts(&after, &ca->cnt[(size_t)t * (size_t)n + (size_t)c]);
        fp4_metrics_init(&delta[c]);
        fp4_metrics_add_count_delta(&delta[c], &after, &before[c], 1);
    }
    free(z);
    free(before);
    free(s0);
    return st;
}

static fp4_status cpu_feed_zero(fp4_analysis *an, int64_t nrows)
{
    cpu_an *ca = an->impl;
    if (!ca->planned) FP4_TRY(cpu_plan(an));
    const int n = an->ncfg;
    bool two_d = false;
    for (int c = 0; c < n; c++) two_d = two_d || an->cfgs[c].weight_2d;
    const int64_t row0 = an->rows_fed;
    int64_t left = nrows;
    if (left >= 16 && !ca->zero_moves) { /* whole groups of 16 (rows_fed is 16-aligned) */
        if (!ca->zero16) {
            if (!(ca->zero16 = calloc((size_t)n, sizeof *ca->zero16)))
                return fp4_error(FP4_ERR_INTERNAL, "cpu backend: out of memory");
            FP4_TRY(cpu_zero_rows(an, 16, ca->zero16));
            left -= 16;
            an->rows_fed += 16; /* cpu_feed_any places rows from rows_fed */
        }
        if (!ca->zero_moves) {
            const int64_t q = left / 16;
            for (int c = 0; c < n; c++)
                fp4_metrics_add_count_delta(&ca->cnt[c], &ca->zero16[c],
                                            &(fp4_metrics){0}, (uint64_t)q);
            left -= q * 16;
        }
    }
    if (left > 0 && !two_d && !ca->zero_moves) { /* single rows: every row alike */
        if (!ca->zero1) {
            if (!(ca->zero1 = calloc((size_t)n, sizeof *ca->zero1))) {
                an->rows_fed = row0;
                return fp4_error(FP4_ERR_INTERNAL, "cpu backend: out of memory");
            }
            fp4_status st = cpu_zero_rows(an, 1, ca->zero1);
            if (st != FP4_OK) {
                an->rows_fed = row0;
                return st;
            }
            left -= 1;
            an->rows_fed += 1;
        }
        if (!ca->zero_moves) {
            for (int c = 0; c < n; c++)
                fp4_metrics_add_count_delta(&ca->cnt[c], &ca->zero1[c], &(fp4_metrics){0},
                                            (uint64_t)left);
            left = 0;
        }
    }
    /* the rest fed: a weight_2d tail of under 16 rows (the tensor's end), or every zero row
     * should zeros ever move a sum; in pieces of whole 16-row groups */
    an->rows_fed = row0 + (nrows - left);
    fp4_status st = FP4_OK;
    while (left > 0 && st == FP4_OK) {
        int64_t per = an->row_len ? ((int64_t)1 << 20) / an->row_len / 16 * 16 : left;
        if (per < 16) per = 16;
        const int64_t k = left < per ? left : per;
        st = cpu_zero_rows(an, k, NULL);
        an->rows_fed += k;
        left -= k;
    }
    an->rows_fed = row0; /* backend.c adds nrows */
    return st;
}

static fp4_status cpu_end(fp4_analysis *an, fp4_metrics *out)
{
    cpu_an *ca = an->impl;
    const int n = an->ncfg, T = an->be->threads;
    for (int c = 0; c < n; c++) {
        out[c] = ca->acc[c];
        for (int t = 0; t < T; t++)
            fp4_metrics_merge_counts(&out[c], &ca->cnt[(size_t)t * (size_t)n + (size_t)c]);
        if (fp4_needs_tensor_amax(&an->cfgs[c]) && ca->amax[c] > out[c].tensor_amax)
            out[c].tensor_amax = ca->amax[c];
    }
    fp4_trace("cpu: amax loops %.4f s, quantization loops %.4f s (threads busy %.2f of %d), "
              "merge %.4f s, batch %lld rows",
              ca->t_amax, ca->t_feed, ca->t_feed > 0 ? ca->t_busy / ca->t_feed : 0.0, T,
              ca->t_merge, (long long)ca->batch_rows);
    return FP4_OK;
}

/* The CPU takes stored f16 and bf16 words (half the bytes read, kept and faulted in) and
 * widens them itself, a group at a time (cpu_feed_any, cpu_amax_any). FP4DIAG_CPU_WORDS=0
 * makes it take fp32 widened by the reader instead: a test hook that compares both paths on
 * one file. */
static bool cpu_takes_words(const fp4_backend *be, fp4_words w)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("FP4DIAG_CPU_WORDS");
        on = !(e && strcmp(e, "0") == 0);
    }
    return on && (w == FP4_WORDS_F16 || w == FP4_WORDS_BF16);
}

static const fp4_backend_ops cpu_ops = {
    .name = "cpu",
    .close = cpu_close,
    .begin = cpu_begin,
    .amax = cpu_amax_any,
    .feed = cpu_feed_any,
    .feed_zero = cpu_feed_zero,
    .end = cpu_end,
    .abort = cpu_abort,
    .takes_words = cpu_takes_words,
};

fp4_status fp4_cpu_backend_open(int threads, fp4_backend **out)
{
    fp4_backend *be = calloc(1, sizeof *be);
    if (!be) return fp4_error(FP4_ERR_INTERNAL, "cpu backend: out of memory");
    be->ops = &cpu_ops;
    be->threads = threads > 0 ? threads : omp_get_max_threads();
    if (be->threads < 1) be->threads = 1;
    cpu_be *kb = calloc(1, sizeof *kb);
    const size_t T = (size_t)be->threads;
    if (kb) {
        kb->T = be->threads;
        kb->scratch = calloc(T, sizeof *kb->scratch);
        kb->upart = calloc(T, sizeof *kb->upart);
        kb->prep = calloc(T, sizeof *kb->prep);
        kb->gc = calloc(T, sizeof *kb->gc);
        kb->wide = calloc(T, sizeof *kb->wide);
    }
    be->impl = kb;
    if (!kb || !kb->scratch || !kb->upart || !kb->prep || !kb->gc || !kb->wide) {
        cpu_close(be);
        return fp4_error(FP4_ERR_INTERNAL, "cpu backend: out of memory");
    }
    *out = be;
    return FP4_OK;
}
