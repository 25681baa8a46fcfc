/* metrics.h — the fp64 accumulators of SPEC §5 for one (tensor, config) pair, their ordered
 * merge, and the derived metrics (NMSE, SQNR, α, δ, bias, B15, B8). */
#ifndef FP4_METRICS_H
#define FP4_METRICS_H

#include <stdint.h>
#include <string.h>

#include "num/quant.h"

typedef enum fp4_sqnr_status {
    FP4_SQNR_OK = 0,
    FP4_SQNR_ZERO_SIGNAL, /* Σx² = 0: SQNR undefined, reported null with "zero_signal" */
    FP4_SQNR_EXACT,       /* x̂ == x: +∞, reported null with "exact" */
    FP4_SQNR_NONFINITE    /* gemm only: a NaN/Inf operand made the output sums non-finite;
                             reported null with "nonfinite" (the analysis commands exclude
                             non-finite blocks instead, SPEC §5) */
} fp4_sqnr_status;

/* Block amax histogram bins (SPEC §5.1): bin 0 holds amax 0, bin 1 + (bits >> 22) the others
 * (bits: the fp32 pattern of the amax: half-octave bins [2^e, 1.5·2^e), [1.5·2^e, 2^(e+1)),
 * subnormals in two bins); finite amax only, so the last bin used is 1 + (0x7F7FFFFF >> 22). */
#define FP4_AMAX_BINS 512
static inline int fp4_amax_bin(float a)
{
    uint32_t u;
    memcpy(&u, &a, sizeof u);
    return a > 0.0f ? 1 + (int)(u >> 22) : 0;
}
/* The lower edge of bin k (k >= 1): the float with bits (k - 1) << 22; bin 0: 0. */
static inline double fp4_amax_bin_low(int k)
{
    if (k <= 0) return 0.0;
    const uint32_t u = (uint32_t)(k - 1) << 22;
    float f;
    memcpy(&f, &u, sizeof f);
    return (double)f;
}

/* Relative-error histogram bins (SPEC §5.1): for a counted entry of a finite block with x != 0,
 * r = |x̂ − x| / |x| in fp32 (the fp32 difference, then the fp32 quotient: two IEEE operations,
 * the same bits on every backend); bits: r's fp32 pattern. Bin 0: r < 2^-40 (r = 0 included);
 * bin k in 1..126: the half-octave starting at fp4_rerr_bin_low(k), k = (bits >> 22) − 173;
 * bin 127: r >= 2^23 (+Inf included). Pure integer arithmetic on the bits. */
#define FP4_RERR_BINS 128
#define FP4_RERR_BIAS 173 /* (bits >> 22) of the fp32 2^-40 is 2 · (127 − 40) = 174: bin 1 */
static inline int fp4_rerr_bin_bits(uint32_t bits)
{
    const int k = (int)(bits >> 22) - FP4_RERR_BIAS;
    return k < 1 ? 0 : (k > FP4_RERR_BINS - 1 ? FP4_RERR_BINS - 1 : k);
}
/* The bin of r = ad / ax (ad = |x̂ − x| >= 0 and ax = |x| > 0, both fp32). */
static inline int fp4_rerr_bin(float ad, float ax)
{
    const float r = ad / ax;
    uint32_t u;
    memcpy(&u, &r, sizeof u);
    return fp4_rerr_bin_bits(u);
}
/* The lower edge of bin k: 0 for bin 0; else the fp32 with bits (k + 173) << 22
 * (2^-40, 1.5·2^-40, 2^-39, …, 2^23). */
static inline double fp4_rerr_bin_low(int k)
{
    if (k <= 0) return 0.0;
    const uint32_t u = (uint32_t)(k + FP4_RERR_BIAS) << 22;
    float f;
    memcpy(&f, &u, sizeof f);
    return (double)f;
}

typedef struct fp4_metrics {
    /* raw sums (fp64) over counted elements, in the domain of SPEC §4 */
    double sum_x2;        /* Σ x²              */
    double sum_err2;      /* Σ (x̂ − x)²        */
    double sum_xqx;       /* Σ x̂ x             */
    double sum_xq2;       /* Σ x̂²              */
    double signed_err_sum;  /* Σ (ρ(t) − t) over non-amax elements, normalized units */
    uint64_t signed_err_n;
    uint64_t level_count[8];     /* elements that rounded to magnitude level i (non-amax;
                                    zero and underflowed blocks skipped, see quant.h) */
    double level_err_sum[8];     /* Σ (ρ(t) − t) of those elements */
    uint64_t hist[16];           /* 4-bit code histogram, all counted elements */
    /* counts (definitions in quant.h: elements/padded/zero/nan/inf are of the input; clipped
     * is mxfp4 saturation; blocks counts blocks holding counted entries) */
    uint64_t elements, padded, zero, nan, inf, saturated, clipped;
    uint64_t blocks, zero_blocks, scale_underflow_blocks, nonfinite_blocks;
    float tensor_amax; /* merged as a max */
    /* derived by fp4_metrics_finish */
    double nmse, sqnr_db, alpha, delta, mean_signed_error, bucket_ratio_15, bucket_ratio_8;
    double level_mean_error[8]; /* level_err_sum / level_count (0 where the count is 0) */
    fp4_sqnr_status sqnr_status;

    /* Recipe statistics (SPEC §5.1), from one pass per block that every CPU variant shares
     * (engine/stats.c; on CUDA the same operations in kernels/quant.cu k_stats), over the
     * counted entries of finite blocks (non-finite blocks are excluded as above). Raw: */
    uint64_t st_blocks;   /* finite blocks with counted entries the pass saw; compared with
                             blocks - nonfinite_blocks to tell "not computed" (a backend that
                             lacks the pass) from zero */
    uint64_t st_count;    /* counted entries of finite blocks */
    uint64_t st_nonzero;  /* of them, x != 0 */
    uint64_t underflows;  /* of them, x != 0 with x̂ == 0 (Transformer Engine's underflows_num) */
    double max_abs_err;   /* max |x̂ − x| (fp64 of the fp32 values); merged as a max */
    double sum_x2_na;     /* Σ x² over entries that are not their block's amax (first index) */
    double sum_err2_na;   /* Σ (x̂ − x)² over the same entries */
    /* derived by fp4_metrics_finish (NaN where undefined or not computed) */
    double underflows_pct;   /* 100 · underflows / st_count (TE's underflows%) */
    double underflow_share;  /* underflows / st_nonzero: share of non-zero inputs flushed */
    double saturated_pct;    /* 100 · saturated / st_count */
    double sqnr_na_db;       /* 10 log10(sum_x2_na / sum_err2_na); status as sqnr_db */
    fp4_sqnr_status sqnr_na_status;
    int stats_ok;            /* 1: the statistics above were computed for every block */
    /* Four over Six (SPEC §5.1; nvfp4 + e2m1 + RTNE only, fp4_fos_applies): per finite block
     * with counted entries, the error of the config's x̂ (scale to 6) and of the block scaled
     * to 4 instead, each Σ(x̂ − x)² over the block's counted entries in fp64 from +0.0 in
     * element order; the lower one chosen (4 only when strictly lower). Raw: */
    uint64_t fos_blocks;     /* blocks evaluated (compared with blocks - nonfinite_blocks) */
    uint64_t fos_blocks4;    /* of them, the blocks for which scale-to-4 is strictly lower */
    double fos_err2;         /* Σ over blocks of the chosen error, in block order (as sum_err2) */
    /* derived by fp4_metrics_finish (NaN where not computed, or Σx² = 0; +Inf: fos_err2 0) */
    double fos_sqnr_db;      /* 10 log10(sum_x2 / fos_err2) */
    int fos_ok;              /* 1: every finite block with counted entries was evaluated */
    /* The error split (SPEC §5.1; RTNE only, fp4_split_applies): with x̃ the entry rounded on
     * the grid at the unrounded scale s* = amax_s / g_max, over the counted entries of finite
     * blocks, Σ(x̂ − x)² = split_flush + split_scale + split_grid + 2 · split_cross exactly in
     * real arithmetic. Each a per-block fp64 sum from +0.0 in element order, added in block
     * order (as sum_err2). Raw: */
    uint64_t split_blocks;   /* blocks evaluated (compared with blocks - nonfinite_blocks) */
    double split_flush;      /* Σ x² over the entries flushed to zero (x != 0, x̂ == 0) */
    double split_scale;      /* Σ (x̂ − x̃)² over the others */
    double split_grid;       /* Σ (x̃ − x)² over the others */
    double split_cross;      /* Σ (x̂ − x̃)(x̃ − x) over the others */
    int split_ok;            /* derived: every finite block with counted entries evaluated */

    /* Block-scale statistics (SPEC §5.1), exact counts over the finite blocks with counted
     * entries; kept in a row's first chunk partial (order-free). hist_blocks: the blocks
     * counted in amax_hist (0: both histograms empty, skipped by the merge). */
    uint64_t hist_blocks;
    uint64_t scale_hist[256];           /* stored scale byte of each non-zero block
                                           (E4M3 for nvfp4, E8M0 for mxfp4; else none) */
    uint64_t amax_hist[FP4_AMAX_BINS];  /* block amax, bin fp4_amax_bin */
    uint64_t rerr_hist[FP4_RERR_BINS];  /* r = |x̂ − x| / |x| of the entries with x != 0,
                                           bin fp4_rerr_bin (sums to st_nonzero) */
    /* derived by fp4_metrics_finish */
    double amax_p50, amax_p90, amax_p99; /* block amax percentiles: the lower edge of the bin
                                            holding the ceil(p·N)-th smallest (NaN: no block) */
    double rerr_p50, rerr_p95, rerr_p99; /* relative-error percentiles, the same rule over the
                                            st_nonzero entries of rerr_hist (NaN: none, or the
                                            statistics not computed) */
} fp4_metrics;

/* Zero every field. */
void fp4_metrics_init(fp4_metrics *m);

/* dst += src, field by field (counts exact, sums fp64 in this one order). */
void fp4_metrics_merge(fp4_metrics *dst, const fp4_metrics *src);

/* The order-sensitive fp64 sums of one chunk partial. fp4_metrics_merge adds each of these
 * fields in merge order, so adding chunk sums in (row, chunk) order with fp4_fsums_add gives the
 * same bits as merging whole partials; the integer counts (and the amax, a max) are exact and
 * may be folded in any order (fp4_metrics_merge_counts). Backends keep only these per chunk.
 * The field order is kernels.h's FP4K_S_* order (static assertions in metrics.c): the GPU
 * writes its chunk sums as FP4K_NSUMS doubles in that order. */
typedef struct fp4_fsums {
    double x2, err2, xqx, xq2, serr, lerr[8];
} fp4_fsums;

static inline void fp4_fsums_of(const fp4_metrics *m, fp4_fsums *s)
{
    s->x2 = m->sum_x2;
    s->err2 = m->sum_err2;
    s->xqx = m->sum_xqx;
    s->xq2 = m->sum_xq2;
    s->serr = m->signed_err_sum;
    for (int i = 0; i < 8; i++) s->lerr[i] = m->level_err_sum[i];
}

static inline void fp4_fsums_add(fp4_metrics *m, const fp4_fsums *s)
{
    m->sum_x2 += s->x2;
    m->sum_err2 += s->err2;
    m->sum_xqx += s->xqx;
    m->sum_xq2 += s->xq2;
    m->signed_err_sum += s->serr;
    for (int i = 0; i < 8; i++) m->level_err_sum[i] += s->lerr[i];
}

/* The ordered fp64 sums of the recipe statistics (SPEC §5.1), kept per chunk like fp4_fsums;
 * fp4_metrics_merge adds them in merge order. The field order is kernels.h's FP4K_T_* order
 * (static assertions in backend/cuda.c): fp4k_stats writes its chunk sums in that order. */
typedef struct fp4_ssums {
    double x2_na, err2_na, fos_err2, sp_flush, sp_scale, sp_grid, sp_cross;
} fp4_ssums;

static inline void fp4_ssums_of(const fp4_metrics *m, fp4_ssums *s)
{
    s->x2_na = m->sum_x2_na;
    s->err2_na = m->sum_err2_na;
    s->fos_err2 = m->fos_err2;
    s->sp_flush = m->split_flush;
    s->sp_scale = m->split_scale;
    s->sp_grid = m->split_grid;
    s->sp_cross = m->split_cross;
}

static inline void fp4_ssums_add(fp4_metrics *m, const fp4_ssums *s)
{
    m->sum_x2_na += s->x2_na;
    m->sum_err2_na += s->err2_na;
    m->fos_err2 += s->fos_err2;
    m->split_flush += s->sp_flush;
    m->split_scale += s->sp_scale;
    m->split_grid += s->sp_grid;
    m->split_cross += s->sp_cross;
}

/* dst += src for the integer counts and the amax only (order-free). */
void fp4_metrics_merge_counts(fp4_metrics *dst, const fp4_metrics *src);

/* dst += k * (after - before) for the integer counts only (after >= before field by field:
 * the counts some rows added, repeated k times). */
void fp4_metrics_add_count_delta(fp4_metrics *dst, const fp4_metrics *after,
                                 const fp4_metrics *before, uint64_t k);

/* The bucket ratios of a 16-code histogram (SPEC §5, bucket utilization): with p_i the share of
 * the elements in bucket i, exp(-sum p_i ln p_i) / K; b15 over the 15 signed values (codes 0
 * and 8, ±0, merged), b8 over the 8 magnitudes. NAN for an empty histogram. */
void fp4_bucket_ratios(const uint64_t hist[16], double *b15, double *b8);

/* Compute the derived fields from the raw sums. Σx² = 0: status zero_signal, nmse/sqnr/alpha/
 * delta NaN; Σ(x̂−x)² = 0 < Σx²: status exact, sqnr +Inf. Undefined means/ratios are NaN
 * (mean_signed_error with no samples, bucket ratios of an empty histogram). */
void fp4_metrics_finish(fp4_metrics *m);

/* Per-level geometry (SPEC §5) of a grid: half-widths left/right, analytic conditional bias
 * (ℓ − r)/2, in normalized units. Returns the number of levels. */
typedef struct fp4_level_geom { double q, left, right, analytic_bias; } fp4_level_geom;
int fp4_level_geometry(fp4_format f, fp4_level_geom geom[8]);

/* SQNR in dB of x̂ against x (fp64 sums): 10 log10(Σx² / Σ(x̂−x)²); status as above. */
double fp4_sqnr_db(const float *x, const float *xq, int64_t n, fp4_sqnr_status *st);

/* Over K layers with per-layer shrinkage δ_k: Π(1 − δ_k) and exp(−Σ δ_k). */
void fp4_compound_shrinkage(const double *delta, int k, double *prod, double *expo);

#endif
