/* engine.c — the CPU engine's variants table and dispatch (runtime CPU features, the
 * FP4DIAG_ISA override), the grouped-row cache, row preparation, input counts, the per-unit
 * quantizer that routes each row to a variant's kernel or ref.c, and fp4_quantize_rows /
 * fp4_amax_rows (engine.h) on top of it. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_impl.h"

/* ---- variants (which one runs: base/isa.c) ----------------------------------------------- */
/* The variant compiled for isa, whether or not this CPU runs it (NULL: not compiled). */
static const fp4_engine *engine_of(fp4_isa isa)
{
    const fp4_engine *e = NULL;
    switch (isa) {
    case FP4_ISA_GENERIC: e = &fp4_engine_generic; break;
    case FP4_ISA_AVX2:
    case FP4_ISA_AVX512: e = fp4_engine_x86(isa); break;
    case FP4_ISA_NEON: e = fp4_engine_arm(isa); break;
    default: return NULL;
    }
    return e;
}

const fp4_engine *fp4_engine_get(fp4_isa isa)
{
    const fp4_engine *e = engine_of(isa);
    return e && fp4_isa_cpu_runs(isa) ? e : NULL;
}

fp4_isa fp4_engine_isa(const fp4_engine *e) { return e->isa; }

/* fp4_isa_active() is one this CPU runs: no second feature test here (called per group) */
const fp4_engine *fp4_engine_active(void)
{
    const fp4_engine *e = engine_of(fp4_isa_active());
    return e ? e : &fp4_engine_generic;
}

void fp4_engine_use(const fp4_engine *e) { fp4_isa_use(e ? e->isa : FP4_ISA_COUNT); }

/* nb <= GRP consecutive blocks of one row (all in one chunk), loaded by group_load into T,
 * am, ak, bad; jn[b] counted entries each, tile amax per block when weight_2d (else NULL);
 * accumulates into the chunk partial m in block order like nb calls of block_quant; bse (may
 * be NULL): the blocks' Σ(x̂ − x)² (ROW_ARGS). */
static void group_quant(const fp4_qplan *p, const float *T, const float *am, const int32_t *ak,
                        const int32_t *bad, int nb, const int *jnv, const float *tile,
                        uint8_t *scale_out, fp4_metrics *m, grp_cnt *n, double *bse)
{
    const fp4_engine *kern = fp4_engine_active();
    float mul[GRP], dv[GRP], d1[GRP], d2[GRP];
    double se[GRP];
    int32_t jn[GRP], lv[GRP], uf[GRP];
    uint8_t sb[GRP];
    if (p->cfg.scale == FP4_SCALE_FP32)
        group_params_fp32(p, am, bad, nb, jnv, mul, dv, d1, d2, se, jn, lv, uf, sb);
    else
        group_params(p, am, bad, tile, nb, jnv, mul, dv, d1, d2, se, jn, lv, uf, sb);
    grp_acc a;
    kern->body(p, T, mul, dv, d1, d2, se, jn, lv, ak, &a, n);
    if (bse) memcpy(bse, a.se2, (size_t)nb * sizeof *bse);
    group_merge(&a, am, bad, nb, jnv, uf, sb, scale_out, m);
}

/* a row of nblk blocks takes ceil(nblk / GRP) groups of GRP * B floats, and GRP lanes of
 * am/ak/bad per group */
static int64_t grpcache_row_T(int64_t max_padded_len, int max_block)
{
    return max_padded_len + (int64_t)(GRP - 1) * max_block;
}
static int64_t grpcache_row_g(int64_t max_padded_len, int min_block)
{
    return (max_padded_len / min_block + GRP - 1) / GRP * GRP;
}

int64_t fp4_grpcache_bytes(int rows, int64_t max_padded_len, int min_block, int max_block)
{
    if (rows < 1 || min_block < 1 || max_block < min_block) return 0;
    return (int64_t)rows * (grpcache_row_T(max_padded_len, max_block) * (int64_t)sizeof(float) +
                            grpcache_row_g(max_padded_len, min_block) * 12);
}

fp4_grpcache *fp4_grpcache_new(int rows, int64_t max_padded_len, int min_block, int max_block)
{
    if (rows < 1 || min_block < 1 || max_block < min_block) return NULL;
    fp4_grpcache *gc = calloc(1, sizeof *gc);
    if (!gc) return NULL;
    gc->rows = rows;
    gc->row_T = grpcache_row_T(max_padded_len, max_block);
    gc->row_g = grpcache_row_g(max_padded_len, min_block);
    gc->T = malloc((size_t)(rows * gc->row_T) * sizeof *gc->T + 1);
    gc->am = malloc((size_t)(rows * gc->row_g) * sizeof *gc->am + 1);
    gc->ak = malloc((size_t)(rows * gc->row_g) * sizeof *gc->ak + 1);
    gc->bad = malloc((size_t)(rows * gc->row_g) * sizeof *gc->bad + 1);
    gc->block = calloc((size_t)rows, sizeof *gc->block);
    if (!gc->T || !gc->am || !gc->ak || !gc->bad || !gc->block) {
        fp4_grpcache_free(gc);
        return NULL;
    }
    return gc;
}

void fp4_grpcache_free(fp4_grpcache *gc)
{
    if (!gc) return;
    free(gc->T);
    free(gc->am);
    free(gc->ak);
    free(gc->bad);
    free(gc->block);
    free(gc);
}

void fp4_grpcache_reset(fp4_grpcache *gc)
{
    if (gc) memset(gc->block, 0, (size_t)gc->rows * sizeof *gc->block);
}

void fp4_qplan_prep(const fp4_qplan *p, const float *in, int nr, float *v)
{
    const int64_t L = p->row_len, P = p->padded_len;
    for (int r = 0; r < nr; r++) {
        float *vr = v + (int64_t)r * P;
        const float *ir = in + (int64_t)r * L;
        /* the whole RHT groups are rotated straight from the input (no copy); the rest, the
         * last partial group and the padding, is copied, zero-padded and rotated in place */
        const int64_t whole = p->cfg.rht ? L / p->cfg.rht->n * p->cfg.rht->n : 0;
        if (whole > 0) fp4_rht_forward(p->cfg.rht, ir, vr, whole);
        memcpy(vr + whole, ir + whole, (size_t)(L - whole) * sizeof *vr);
        memset(vr + L, 0, (size_t)(P - L) * sizeof *vr);
        if (p->cfg.rht && P > whole) fp4_rht_forward(p->cfg.rht, vr + whole, vr + whole, P - whole);
    }
}

/* 32-bit counters over pieces of 2^20 elements vectorize twice as wide as 64-bit ones;
 * compiled for AVX-512, AVX2 and the baseline (the counts are exact in every variant), run by
 * FP4DIAG_ISA's choice (FP4_ISA_SITE_COUNTS). */
typedef struct in_counts {
    uint64_t zero, nan, inf;
} in_counts;

static inline FP4_ISA_INLINE in_counts input_counts_body(const float *x, int64_t n)
{
    in_counts c = {0, 0, 0};
    for (int64_t j0 = 0; j0 < n; j0 += (int64_t)1 << 20) {
        const int64_t e = n - j0 < ((int64_t)1 << 20) ? n - j0 : ((int64_t)1 << 20);
        const float *y = x + j0;
        uint32_t z = 0, nn = 0, ni = 0;
#pragma omp simd reduction(+ : z, nn, ni)
        for (int64_t j = 0; j < e; j++) {
            const uint32_t u = fp4c_f2u(y[j]) & 0x7FFFFFFFu;
            z += u == 0;
            nn += u > 0x7F800000u;
            ni += u == 0x7F800000u;
        }
        c.zero += z;
        c.nan += nn;
        c.inf += ni;
    }
    return c;
}
FP4_ISA_VARIANTS(FP4_ISA_SITE_COUNTS, in_counts, input_counts, (const float *x, int64_t n),
                 (x, n))

void fp4_input_counts(const float *x, int64_t n, fp4_metrics *m)
{
    const in_counts c = input_counts(x, n);
    m->zero += c.zero;
    m->nan += c.nan;
    m->inf += c.inf;
}

void fp4_qplan_unit(const fp4_qplan *p, const float *in, int64_t grow, int nr, float *scratch,
                    float *deq, uint8_t *codes, uint8_t *scales, fp4_metrics *partials)
{
    for (int i = 0; i < nr * p->nchunk; i++) fp4_metrics_init(&partials[i]);
    fp4_qplan_prep(p, in, nr, scratch);
    for (int r = 0; r < nr; r++)
        fp4_input_counts(in + (int64_t)r * p->row_len, p->row_len, &partials[r * p->nchunk]);
    fp4_qplan_unit_prepared(p, scratch, grow, nr, scratch, deq, codes, scales, partials, NULL,
                            0);
}

void fp4_qplan_unit_prepared(const fp4_qplan *p, const float *vin, int64_t grow, int nr,
                             float *scratch, float *deq, uint8_t *codes, uint8_t *scales,
                             fp4_metrics *partials, fp4_grpcache *gc, int gc_row)
{
    const int64_t L = p->row_len, P = p->padded_len;
    const int B = p->block, nblk = p->nblk, nchunk = p->nchunk;
    float *tamax = scratch + (int64_t)p->unit_rows * P;
    /* the integer input counts are order-free: a row's go to its first chunk partial */
    for (int r = 0; r < nr; r++) {
        partials[r * nchunk].elements += (uint64_t)L;
        partials[r * nchunk].padded += (uint64_t)(P - L);
    }
    if (p->cfg.weight_2d) {
        for (int k = 0; k < nblk; k++) {
            float a = 0.0f;
            for (int r = 0; r < nr; r++) {
                const float *v = vin + (int64_t)r * P + (int64_t)k * B;
                for (int j = 0; j < B; j++) {
                    float y = fp4c_absf(v[j]);
                    if (fp4c_isfinite(y)) a = fp4c_maxf(a, y);
                }
            }
            tamax[k] = a;
        }
    }
    const bool grouped = p->cfg.rounding == FP4_ROUND_RTNE && !deq && !codes &&
                         B <= GRP_MAX_BLOCK;
    const int xs = fp4_row_extra_what(p);
    const fp4_engine *kern = fp4_engine_active();
    /* the grouped path's share: Four over Six in the row kernel's own pass (row_fos), else in
     * stats.c's */
    const int xg = xs & ~(kern->row && kern->row_fos && fp4_row_fos_in_kernel(p) ? FP4_XS_FOS : 0);
    float *T = tamax + nblk, *W = T + (int64_t)GRP * B;
    /* the kernel's per-block Σ(x̂ − x)² for Four over Six (its scale-to-6 error): nblk doubles
     * before the last GRP * B floats of scratch (fp4_qplan_scratch_floats) */
    float *SW = scratch + fp4_qplan_scratch_floats(p) - (int64_t)GRP * B;
    double *bse = xg & FP4_XS_FOS ? (double *)(void *)(((uintptr_t)(SW - 2 * (int64_t)nblk - 2) +
                                                         7) & ~(uintptr_t)7)
                                  : NULL;
    const int64_t ngrp = (nblk + GRP - 1) / GRP;
    for (int r = 0; grouped && r < nr; r++) {
        const float *v = vin + (int64_t)r * P;
        fp4_metrics *pr = partials + (int64_t)r * nchunk;
        /* the row's groups from the shared cache (loaded there by the first config of this
         * preparation and block size), else loaded here one group at a time */
        fp4_isa_note(FP4_ISA_SITE_QUANT, kern->isa);
        grp_in row = {NULL, NULL, NULL, NULL};
        if (gc) {
            const int gr = gc_row + r;
            float *rT = gc->T + (int64_t)gr * gc->row_T;
            float *ram = gc->am + (int64_t)gr * gc->row_g;
            int32_t *rak = gc->ak + (int64_t)gr * gc->row_g;
            int32_t *rbad = gc->bad + (int64_t)gr * gc->row_g;
            if (gc->block[gr] != B) {
                for (int64_t g = 0; g < ngrp; g++) {
                    const int k0 = (int)(g * GRP), nb = nblk - k0 < GRP ? nblk - k0 : GRP;
                    group_load(kern->load, B, v + (int64_t)k0 * B, nb, rT + g * GRP * B, W,
                               ram + g * GRP, rak + g * GRP, rbad + g * GRP);
                }
                gc->block[gr] = B;
            }
            row = (grp_in){rT, ram, rak, rbad};
        }
        grp_cnt n;
        memset(&n, 0, sizeof n);
        if (kern->row)
            kern->row(p, v, &row, p->cfg.weight_2d ? tamax : NULL,
                      scales ? scales + (int64_t)r * nblk : NULL, pr, &n, T, W, bse);
        for (int k0 = 0; !kern->row && k0 < nblk; k0 += GRP) { /* GRP divides FP4_CHUNK_BLOCKS */
            const int nb = nblk - k0 < GRP ? nblk - k0 : GRP;
            int jn[GRP];
            float am[GRP];
            int32_t ak[GRP], bad[GRP];
            const grp_in gi = group_at(p, v, &row, k0, nb, kern->load, T, W, am, ak, bad, jn);
            group_quant(p, gi.T, gi.am, gi.ak, gi.bad, nb, jn,
                        p->cfg.weight_2d ? tamax + k0 : NULL,
                        scales ? scales + (int64_t)r * nblk + k0 : NULL,
                        &pr[k0 / FP4_CHUNK_BLOCKS], &n, bse ? bse + k0 : NULL);
        }
        /* the row's integer counts (order-free) go to its first chunk partial */
        grp_cnt_flush(&n);
        uint64_t sat = 0;
        for (int b = 0; b < GRP; b++) sat += (uint64_t)n.sat[b];
        for (int k = 0; k < 8; k++) {
            pr->hist[k] += (uint64_t)n.pos[k];
            pr->hist[8 + k] += (uint64_t)n.neg[k];
            pr->level_count[k] += (uint64_t)n.lvl[k];
            pr->signed_err_n += (uint64_t)n.lvl[k];
        }
        pr->saturated += sat;
        if (p->cfg.scale == FP4_SCALE_MXFP4) pr->clipped += sat;
        /* the recipe statistics (SPEC §5.1): computed by the row kernel, or else one pass that
         * the other variants share, over the groups as the kernel read them */
        if (!(kern->row && kern->row_stats))
            fp4_row_stats_grouped(p, v, &row, p->cfg.weight_2d ? tamax : NULL, kern->load, T, W,
                                  pr);
        if (xg) /* Four over Six, the error split (SPEC §5.1) */
            fp4_row_extra_grouped(p, v, &row, p->cfg.weight_2d ? tamax : NULL, kern->load, T, W,
                                  pr, xg, bse);
    }
    for (int r = 0; !grouped && r < nr; r++) {
        const float *v = vin + (int64_t)r * P;
        fp4_metrics *pr = partials + (int64_t)r * nchunk;
        const uint64_t rowidx = (uint64_t)(grow + r) * (uint64_t)P;
        for (int k = 0; k < nblk; k++) {
            const int64_t b0 = (int64_t)k * B;
            int64_t jn = p->counted_len - b0;
            if (jn > B) jn = B;
            if (jn < 0) jn = 0;
            fp4_ref_block_quant(p, v + b0, (int)jn, p->cfg.weight_2d ? tamax[k] : 0.0f,
                        rowidx + (uint64_t)b0, deq ? deq + (int64_t)r * P + b0 : NULL,
                        codes ? codes + (int64_t)r * P + b0 : NULL,
                        scales ? scales + (int64_t)r * nblk + k : NULL,
                        &pr[k / FP4_CHUNK_BLOCKS]);
        }
    }
    /* the recipe statistics (SPEC §5.1) of the reference path: one pass that every variant
     * shares; its scratch is SW, the last GRP * B floats of scratch */
    for (int r = 0; !grouped && r < nr; r++) {
        fp4_row_stats(p, vin + (int64_t)r * P, p->cfg.weight_2d ? tamax : NULL,
                      (uint64_t)(grow + r) * (uint64_t)P, SW, partials + (int64_t)r * nchunk);
        if (xs)
            fp4_row_extra(p, vin + (int64_t)r * P, p->cfg.weight_2d ? tamax : NULL, SW,
                          partials + (int64_t)r * nchunk, xs);
    }
}

/* Max |x| over the finite values of x[0..n) as fp32 bits, folded into a (bits of a finite
 * |value|, >= 0): on the bits, since |x| of finite floats orders as its bits do; NaN and
 * infinities (bits >= 0x7F800000 once the sign is cleared) are skipped, -0 counts as +0. An
 * unsigned max vectorises (the float compare with its NaN test did not); compiled for AVX-512,
 * AVX2 and the baseline, each exact, run by FP4DIAG_ISA's choice (FP4_ISA_SITE_AMAX). */
static inline FP4_ISA_INLINE uint32_t amax_finite_bits_body(const float *x, int64_t n,
                                                            uint32_t a)
{
#pragma omp simd reduction(max : a)
    for (int64_t j = 0; j < n; j++) {
        const uint32_t u = fp4c_f2u(x[j]) & 0x7FFFFFFFu;
        const uint32_t m = u < 0x7F800000u ? u : 0u;
        a = m > a ? m : a;
    }
    return a;
}
FP4_ISA_VARIANTS(FP4_ISA_SITE_AMAX, uint32_t, amax_finite_bits,
                 (const float *x, int64_t n, uint32_t a), (x, n, a))

float fp4_amax_row(const fp4_qconfig *cfg, const float *row, int64_t row_len)
{
    if (!cfg->rht) return fp4c_u2f(amax_finite_bits(row, row_len, 0u));
    const int n = cfg->rht->n;
    float buf[FP4_RHT_MAX];
    uint32_t a = 0u;
    for (int64_t g0 = 0; g0 < row_len; g0 += n) {
        int64_t c = row_len - g0 < n ? row_len - g0 : n;
        memcpy(buf, row + g0, (size_t)c * sizeof *buf);
        for (int64_t j = c; j < n; j++) buf[j] = 0.0f;
        fp4_rht_forward(cfg->rht, buf, buf, n);
        a = amax_finite_bits(buf, n, a);
    }
    return fp4c_u2f(a);
}

void fp4_amax_rows(const fp4_qconfig *cfg, const float *in, int64_t n_rows, int64_t row_len,
                   float *amax)
{
    for (int64_t r = 0; r < n_rows; r++) {
        float a = fp4_amax_row(cfg, in + r * row_len, row_len);
        if (a > *amax) *amax = a;
    }
}

fp4_status fp4_quantize_rows(const fp4_qconfig *cfg, float tensor_amax, const float *in,
                             int64_t row0, int64_t n_rows, int64_t row_len, fp4_qout *out,
                             struct fp4_metrics *m)
{
    fp4_qplan p;
    FP4_TRY(fp4_qplan_make(cfg, tensor_amax, row_len, &p));
    if (n_rows <= 0) return FP4_OK;
    /* Units (a row, or a 16-row tile row with weight_2d) run in parallel in batches; each writes
     * its own chunk partials, merged into *m in (row, chunk) order after the batch, so the
     * result does not depend on the thread count. A batch keeps at most QR_BATCH partials. */
    enum { QR_BATCH = 4096 };
    const int64_t U = p.unit_rows, per_unit = U * p.nchunk;
    const int64_t nunits = (n_rows + U - 1) / U;
    int64_t bu = QR_BATCH / per_unit;
    if (bu < 1) bu = 1;
    if (bu > nunits) bu = nunits;
    int T = bu > 1 ? omp_get_max_threads() : 1; /* one scratch per thread: no more than units */
    if (T > bu) T = (int)bu;
    if (T < 1) T = 1;
    float **scratch = calloc((size_t)T, sizeof *scratch);
    fp4_metrics *part = malloc((size_t)(bu * per_unit) * sizeof *part + 1);
    bool oom = !scratch || !part;
    for (int t = 0; !oom && t < T; t++) {
        scratch[t] = malloc((size_t)fp4_qplan_scratch_floats(&p) * sizeof(float) + 1);
        oom = !scratch[t];
    }
    for (int64_t u0 = 0; !oom && u0 < nunits; u0 += bu) {
        const int64_t nu = nunits - u0 < bu ? nunits - u0 : bu;
#pragma omp parallel for schedule(dynamic, 1) num_threads(T) if (nu > 1)
        for (int64_t k = 0; k < nu; k++) {
            const int64_t r = (u0 + k) * U;
            const int nr = (int)(n_rows - r < U ? n_rows - r : U);
            fp4_qplan_unit(&p, in + r * row_len, row0 + r, nr, scratch[omp_get_thread_num()],
                           out && out->deq ? out->deq + r * p.padded_len : NULL,
                           out && out->codes ? out->codes + r * p.padded_len : NULL,
                           out && out->scales ? out->scales + r * p.nblk : NULL,
                           part + k * per_unit);
        }
        for (int64_t k = 0; m && k < nu; k++) {
            const int64_t r = (u0 + k) * U;
            const int64_t nr = n_rows - r < U ? n_rows - r : U;
            for (int64_t i = 0; i < nr * p.nchunk; i++) fp4_metrics_merge(m, &part[k * per_unit + i]);
        }
    }
    if (!oom && m && fp4_needs_tensor_amax(cfg) && p.tensor_amax > m->tensor_amax)
        m->tensor_amax = p.tensor_amax;
    for (int t = 0; scratch && t < T; t++) free(scratch[t]);
    free(scratch);
    free(part);
    return oom ? fp4_error(FP4_ERR_INTERNAL, "quantize: out of memory") : FP4_OK;
}

