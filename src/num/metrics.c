/* metrics.c — the fp64 accumulators of SPEC §5: ordered merge, derived metrics (NMSE, SQNR,
 * α, δ, mean signed error, B15, B8), level geometry, and compound shrinkage. */
#include "num/metrics.h"

#include <math.h>
#include <string.h>

void fp4_metrics_init(fp4_metrics *m) { memset(m, 0, sizeof *m); }

void fp4_metrics_merge(fp4_metrics *dst, const fp4_metrics *src)
{
    fp4_fsums s;
    fp4_fsums_of(src, &s);
    fp4_fsums_add(dst, &s);
    fp4_ssums ss;
    fp4_ssums_of(src, &ss);
    fp4_ssums_add(dst, &ss);
    fp4_metrics_merge_counts(dst, src);
}

void fp4_metrics_merge_counts(fp4_metrics *dst, const fp4_metrics *src)
{
    dst->signed_err_n += src->signed_err_n;
    for (int i = 0; i < 8; i++) dst->level_count[i] += src->level_count[i];
    for (int i = 0; i < 16; i++) dst->hist[i] += src->hist[i];
    dst->elements += src->elements;
    dst->padded += src->padded;
    dst->zero += src->zero;
    dst->nan += src->nan;
    dst->inf += src->inf;
    dst->saturated += src->saturated;
    dst->clipped += src->clipped;
    dst->blocks += src->blocks;
    dst->zero_blocks += src->zero_blocks;
    dst->scale_underflow_blocks += src->scale_underflow_blocks;
    dst->nonfinite_blocks += src->nonfinite_blocks;
    if (src->tensor_amax > dst->tensor_amax) dst->tensor_amax = src->tensor_amax;
    dst->st_blocks += src->st_blocks;
    dst->st_count += src->st_count;
    dst->st_nonzero += src->st_nonzero;
    dst->underflows += src->underflows;
    dst->fos_blocks += src->fos_blocks;
    dst->fos_blocks4 += src->fos_blocks4;
    dst->split_blocks += src->split_blocks;
    if (src->max_abs_err > dst->max_abs_err) dst->max_abs_err = src->max_abs_err;
    if (src->hist_blocks) { /* most partials hold none (a row's first chunk holds its row's) */
        dst->hist_blocks += src->hist_blocks;
        for (int i = 0; i < 256; i++) dst->scale_hist[i] += src->scale_hist[i];
        for (int i = 0; i < FP4_AMAX_BINS; i++) dst->amax_hist[i] += src->amax_hist[i];
        for (int i = 0; i < FP4_RERR_BINS; i++) dst->rerr_hist[i] += src->rerr_hist[i];
    }
}

void fp4_metrics_add_count_delta(fp4_metrics *dst, const fp4_metrics *after,
                                 const fp4_metrics *before, uint64_t k)
{
#define D(f) dst->f += k * (after->f - before->f)
    D(signed_err_n);
    for (int i = 0; i < 8; i++) D(level_count[i]);
    for (int i = 0; i < 16; i++) D(hist[i]);
    D(elements);
    D(padded);
    D(zero);
    D(nan);
    D(inf);
    D(saturated);
    D(clipped);
    D(blocks);
    D(zero_blocks);
    D(scale_underflow_blocks);
    D(nonfinite_blocks);
    D(st_blocks);
    D(st_count);
    D(st_nonzero);
    D(underflows);
    D(fos_blocks);
    D(fos_blocks4);
    D(split_blocks);
    D(hist_blocks);
    for (int i = 0; i < 256; i++) D(scale_hist[i]);
    for (int i = 0; i < FP4_AMAX_BINS; i++) D(amax_hist[i]);
    for (int i = 0; i < FP4_RERR_BINS; i++) D(rerr_hist[i]);
#undef D
    /* a max: the rows added k times have the same max */
    if (after->max_abs_err > dst->max_abs_err) dst->max_abs_err = after->max_abs_err;
}

/* exp(entropy) / K of counts c[0..k) */
static double bucket_ratio(const uint64_t *c, int k)
{
    uint64_t tot = 0;
    for (int i = 0; i < k; i++) tot += c[i];
    if (!tot) return NAN;
    double h = 0.0;
    for (int i = 0; i < k; i++)
        if (c[i]) {
            double p = (double)c[i] / (double)tot;
            h -= p * log(p);
        }
    return exp(h) / k;
}

void fp4_bucket_ratios(const uint64_t hist[16], double *b15, double *b8)
{
    uint64_t c15[15], c8[8];
    c15[0] = hist[0] + hist[8]; /* ±0 merged */
    for (int i = 1; i < 8; i++) {
        c15[i] = hist[i];
        c15[7 + i] = hist[8 + i];
    }
    for (int i = 0; i < 8; i++) c8[i] = hist[i] + hist[8 + i];
    *b15 = bucket_ratio(c15, 15);
    *b8 = bucket_ratio(c8, 8);
}

void fp4_metrics_finish(fp4_metrics *m)
{
    if (m->sum_x2 > 0.0) {
        m->nmse = m->sum_err2 / m->sum_x2;
        m->alpha = m->sum_xqx / m->sum_x2;
        m->delta = 1.0 - m->alpha;
        if (m->sum_err2 == 0.0) {
            m->sqnr_status = FP4_SQNR_EXACT;
            m->sqnr_db = INFINITY;
        } else {
            m->sqnr_status = FP4_SQNR_OK;
            m->sqnr_db = -10.0 * log10(m->nmse);
        }
    } else {
        m->sqnr_status = FP4_SQNR_ZERO_SIGNAL;
        m->nmse = m->alpha = m->delta = m->sqnr_db = NAN;
    }
    m->mean_signed_error = m->signed_err_n ? m->signed_err_sum / (double)m->signed_err_n : NAN;
    for (int i = 0; i < 8; i++)
        m->level_mean_error[i] =
            m->level_count[i] ? m->level_err_sum[i] / (double)m->level_count[i] : 0.0;
    fp4_bucket_ratios(m->hist, &m->bucket_ratio_15, &m->bucket_ratio_8);

    /* block-scale statistics (SPEC §5.1) */
    const double pq[3] = {0.50, 0.90, 0.99};
    double *pv[3] = {&m->amax_p50, &m->amax_p90, &m->amax_p99};
    for (int k = 0; k < 3; k++) {
        *pv[k] = NAN;
        if (!m->hist_blocks) continue;
        /* the ceil(p·N)-th smallest (1-based; N·p in fp64 is exact for these p and N < 2^50) */
        uint64_t rank = (uint64_t)ceil(pq[k] * (double)m->hist_blocks), c = 0;
        if (rank < 1) rank = 1;
        for (int i = 0; i < FP4_AMAX_BINS; i++) {
            c += m->amax_hist[i];
            if (c >= rank) {
                *pv[k] = fp4_amax_bin_low(i);
                break;
            }
        }
    }
    /* recipe statistics (SPEC §5.1): computed when the pass saw every finite block */
    m->stats_ok = m->st_blocks == m->blocks - m->nonfinite_blocks;
    /* relative-error percentiles: the lower edge of the bin holding the ceil(p·N)-th smallest
     * of the N = st_nonzero relative errors (NaN where none, or not computed) */
    const uint64_t rq[3] = {50, 95, 99};
    double *rv[3] = {&m->rerr_p50, &m->rerr_p95, &m->rerr_p99};
    uint64_t rn = 0;
    for (int i = 0; i < FP4_RERR_BINS; i++) rn += m->rerr_hist[i];
    for (int k = 0; k < 3; k++) {
        *rv[k] = NAN;
        if (!m->stats_ok || !rn || rn != m->st_nonzero) continue;
        uint64_t rank = (rq[k] * rn + 99) / 100, c = 0; /* ceil(p·N / 100), in integers */
        if (rank < 1) rank = 1;
        for (int i = 0; i < FP4_RERR_BINS; i++) {
            c += m->rerr_hist[i];
            if (c >= rank) {
                *rv[k] = fp4_rerr_bin_low(i);
                break;
            }
        }
    }
    /* Four over Six: computed when every finite block with counted entries was evaluated */
    m->fos_ok = m->fos_blocks == m->blocks - m->nonfinite_blocks;
    m->fos_sqnr_db = NAN;
    if (m->fos_ok && m->sum_x2 > 0.0)
        m->fos_sqnr_db = m->fos_err2 == 0.0 ? INFINITY : 10.0 * log10(m->sum_x2 / m->fos_err2);
    m->split_ok = m->split_blocks == m->blocks - m->nonfinite_blocks;
    const double cnt = (double)m->st_count, nz = (double)m->st_nonzero;
    m->underflows_pct = m->stats_ok && m->st_count ? 100.0 * (double)m->underflows / cnt : NAN;
    m->underflow_share = m->stats_ok && m->st_nonzero ? (double)m->underflows / nz : NAN;
    m->saturated_pct = m->stats_ok && m->st_count ? 100.0 * (double)m->saturated / cnt : NAN;
    if (!m->stats_ok || !(m->sum_x2_na > 0.0)) {
        m->sqnr_na_status = FP4_SQNR_ZERO_SIGNAL;
        m->sqnr_na_db = NAN;
    } else if (m->sum_err2_na == 0.0) {
        m->sqnr_na_status = FP4_SQNR_EXACT;
        m->sqnr_na_db = INFINITY;
    } else {
        m->sqnr_na_status = FP4_SQNR_OK;
        m->sqnr_na_db = 10.0 * log10(m->sum_x2_na / m->sum_err2_na);
    }
}

int fp4_level_geometry(fp4_format f, fp4_level_geom geom[8])
{
    float lv[8], gmax;
    int n = fp4_format_levels(f, lv, &gmax);
    for (int i = 0; i < n; i++) {
        double l = i > 0 ? ((double)lv[i] - lv[i - 1]) / 2.0 : 0.0;
        double r = i + 1 < n ? ((double)lv[i + 1] - lv[i]) / 2.0 : 0.0;
        geom[i] = (fp4_level_geom){lv[i], l, r, (l - r) / 2.0};
    }
    return n;
}

double fp4_sqnr_db(const float *x, const float *xq, int64_t n, fp4_sqnr_status *st)
{
    double sx = 0.0, se = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)xq[i] - (double)x[i];
        sx += (double)x[i] * (double)x[i];
        se += d * d;
    }
    fp4_sqnr_status s = FP4_SQNR_OK;
    double r;
    if (!(sx > 0.0)) {
        s = FP4_SQNR_ZERO_SIGNAL;
        r = NAN;
    } else if (se == 0.0) {
        s = FP4_SQNR_EXACT;
        r = INFINITY;
    } else r = 10.0 * log10(sx / se);
    if (st) *st = s;
    return r;
}

void fp4_compound_shrinkage(const double *delta, int k, double *prod, double *expo)
{
    double p = 1.0, s = 0.0;
    for (int i = 0; i < k; i++) {
        p *= 1.0 - delta[i];
        s += delta[i];
    }
    if (prod) *prod = p;
    if (expo) *expo = exp(-s);
}
