/* test_metrics.c — SPEC §5: SQNR known answer and statuses, α/δ, fp64 sums (10^8 ones), zero
 * mean error for uniform t on every grid, level geometry and measured bias, bucket ratios,
 * compound shrinkage, and the Gaussian SQNR of the spec's sanity facts, with and without RHT. */
#include "testutil.h"

#include <math.h>

#include "backend/backend.h"
#include "engine/engine.h"
#include "num/metrics.h"
#include "num/quant.h"
#include "num/rht.h"

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static double urand(void)
{
    rs ^= rs >> 12;
    rs ^= rs << 25;
    rs ^= rs >> 27;
    return ((rs * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}
static float grand(void)
{
    double u = urand(), v = urand();
    if (u < 1e-300) u = 1e-300;
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

static void test_sqnr_known_and_statuses(void **state)
{
    (void)state;
    const float x[4] = {1, 2, 3, 4}, xq[4] = {1, 2, 3, 5}, z[4] = {0};
    fp4_sqnr_status st;
    /* 10 log10(Σx² / Σ(x̂-x)²) = 10 log10(30 / 1); wrong forms give other finite values:
     * -14.77 (sign), 34.01 (natural log), 15.91 (Σx̂² = 39 as the signal energy) */
    assert_double_rel(fp4_sqnr_db(x, xq, 4, &st), 14.771212547196624, 1e-15);
    assert_int_equal(st, FP4_SQNR_OK);
    assert_true(isinf(fp4_sqnr_db(x, x, 4, &st)));
    assert_int_equal(st, FP4_SQNR_EXACT);
    assert_true(isnan(fp4_sqnr_db(z, xq, 4, &st)));
    assert_int_equal(st, FP4_SQNR_ZERO_SIGNAL);
    fp4_metrics m;
    fp4_metrics_init(&m);
    m.sum_x2 = 30.0;
    m.sum_err2 = 1.0;
    m.sum_xqx = 34.0;
    m.sum_xq2 = 39.0; /* the same data: α = Σx̂x/Σx² = 34/30, the wrong Σx̂x/Σx̂² is 34/39 */
    fp4_metrics_finish(&m);
    assert_double_rel(m.sqnr_db, 14.771212547196624, 1e-15);
    assert_double_exact(m.nmse, 1.0 / 30.0);
    assert_double_exact(m.alpha, 34.0 / 30.0);
    assert_double_ulp(m.delta, -4.0 / 30.0, 2);
    m.sum_err2 = 0.0;
    fp4_metrics_finish(&m);
    assert_int_equal(m.sqnr_status, FP4_SQNR_EXACT);
    fp4_metrics_init(&m);
    fp4_metrics_finish(&m);
    assert_int_equal(m.sqnr_status, FP4_SQNR_ZERO_SIGNAL);
    /* an exactly representable tensor through the quantizer: status exact */
    fp4_qconfig c;
    fp4_qconfig_default(&c);
    float y[16] = {6, 4, -3, 2, 1.5f, 1, 0.5f, 0};
    fp4_metrics_init(&m);
    assert_int_equal(fp4_quantize_rows(&c, 0, y, 0, 1, 16, NULL, &m), FP4_OK);
    fp4_metrics_finish(&m);
    assert_int_equal(m.sqnr_status, FP4_SQNR_EXACT);
    assert_true(m.alpha == 1.0 && m.delta == 0.0);
}

/* 10^8 ones: Σx² is exact in fp64 (fp32 would stall at 2^24) */
static void test_sum_of_1e8_ones(void **state)
{
    (void)state;
    const int R = 1000, L = 1000;
    float *x = malloc(sizeof(float) * R * L);
    for (int i = 0; i < R * L; i++) x[i] = 1.0f;
    fp4_qconfig c;
    fp4_qconfig_default(&c);
    fp4_backend *be;
    fp4_analysis *an;
    fp4_metrics m;
    assert_int_equal(fp4_backend_open(FP4_DEVICE_CPU, 0, &be), FP4_OK);
    assert_int_equal(fp4_analysis_begin(be, &c, 1, 100 * R, L, &an), FP4_OK);
    for (int k = 0; k < 100; k++) assert_int_equal(fp4_analysis_feed(an, x, R), FP4_OK);
    assert_int_equal(fp4_analysis_end(an, &m), FP4_OK);
    fp4_backend_close(be);
    free(x);
    assert_true(m.sum_x2 == 1e8);
    assert_true(m.sum_xq2 == 1e8);
    assert_int_equal(m.elements, 100000000);
    assert_int_equal(m.padded, 100000 * 8);
    assert_int_equal(m.hist[7], 100000000);
    assert_int_equal(m.sqnr_status, FP4_SQNR_EXACT);
}

/* t uniform on [0, g_max] (stratified) gives zero mean signed error on every grid, and each
 * interior level's measured bias equals the analytic (l - r) / 2 */
static void test_uniform_t_zero_mean_error(void **state)
{
    (void)state;
    const int NB = 1 << 14, B = 16;
    float *x = malloc(sizeof(float) * NB * B);
    for (int f = 0; f < FP4_FMT_COUNT; f++) {
        fp4_format fmt = {(fp4_format_id)f, 0};
        fp4_level_geom geom[8];
        int n = fp4_level_geometry(fmt, geom);
        assert_int_equal(n, 8);
        const float gmax = (float)geom[7].q;
        const int64_t N = (int64_t)NB * (B - 1);
        for (int b = 0; b < NB; b++) {
            x[b * B] = gmax; /* s = amax / g_max = 1 exactly; this element is excluded */
            for (int j = 1; j < B; j++) {
                int64_t k = (int64_t)j - 1 + (int64_t)(B - 1) * b;
                x[b * B + j] = (float)(((double)k + 0.5) / (double)N * gmax);
            }
        }
        fp4_qconfig c;
        fp4_qconfig_default(&c);
        c.format = fmt;
        fp4_metrics m;
        fp4_metrics_init(&m);
        assert_int_equal(fp4_quantize_rows(&c, 0, x, 0, NB, B, NULL, &m), FP4_OK);
        fp4_metrics_finish(&m);
        assert_int_equal(m.signed_err_n, N);
        assert_true(fabs(m.mean_signed_error) < 1e-4 * gmax);
        for (int i = 1; i < 7; i++) {
            assert_true(m.level_count[i] > 0);
            assert_true(fabs(m.level_mean_error[i] - geom[i].analytic_bias) < 1e-3 * gmax);
        }
    }
    free(x);
}

static void test_level_geometry(void **state)
{
    (void)state;
    fp4_level_geom g[8];
    assert_int_equal(fp4_level_geometry((fp4_format){FP4_FMT_E2M1, 0}, g), 8);
    assert_true(g[0].left == 0.0 && g[0].right == 0.25);
    assert_true(g[7].right == 0.0 && g[7].left == 1.0);
    assert_true(g[4].q == 2.0 && g[4].analytic_bias == -0.125);
    assert_true(g[6].q == 4.0 && g[6].analytic_bias == -0.25);
    for (int i = 1; i < 7; i++)
        if (i != 4 && i != 6) assert_true(g[i].analytic_bias == 0.0);
    for (int f = FP4_FMT_E1M2; f <= FP4_FMT_INT4; f++) {
        assert_int_equal(fp4_level_geometry((fp4_format){(fp4_format_id)f, 0}, g), 8);
        for (int i = 1; i < 7; i++) assert_true(g[i].analytic_bias == 0.0);
    }
    assert_int_equal(fp4_level_geometry((fp4_format){FP4_FMT_E2M1, 3}, g), 6);
    assert_true(g[5].q == 3.0 && g[5].right == 0.0);
}

static void test_bucket_ratios_and_merge(void **state)
{
    (void)state;
    fp4_metrics m;
    fp4_metrics_init(&m);
    for (int i = 0; i < 16; i++) m.hist[i] = 10;
    m.sum_x2 = 1;
    fp4_metrics_finish(&m);
    assert_double_abs(m.bucket_ratio_8, 1.0, 1e-12);
    /* 15 values: ±0 merged holds 20, the others 10 each */
    double p0 = 20.0 / 160.0, p = 10.0 / 160.0;
    double h = -(p0 * log(p0) + 14 * p * log(p));
    assert_double_abs(m.bucket_ratio_15, exp(h) / 15.0, 1e-12);
    fp4_metrics_init(&m);
    m.hist[8] = 5;
    m.hist[0] = 5;
    m.sum_x2 = 1;
    fp4_metrics_finish(&m);
    assert_double_abs(m.bucket_ratio_15, 1.0 / 15.0, 1e-12);
    assert_double_abs(m.bucket_ratio_8, 1.0 / 8.0, 1e-12);
    fp4_metrics a, b;
    fp4_metrics_init(&a);
    fp4_metrics_init(&b);
    a.sum_x2 = 1.5;
    a.hist[3] = 2;
    a.nan = 1;
    a.tensor_amax = 2.0f;
    b.sum_x2 = 2.5;
    b.hist[3] = 3;
    b.zero_blocks = 4;
    b.tensor_amax = 3.0f;
    fp4_metrics_merge(&a, &b);
    assert_true(a.sum_x2 == 4.0);
    assert_int_equal(a.hist[3], 5);
    assert_int_equal(a.nan, 1);
    assert_int_equal(a.zero_blocks, 4);
    assert_true(a.tensor_amax == 3.0f);
}

static void test_compound_shrinkage(void **state)
{
    (void)state;
    const double d[3] = {0.1, 0.2, -0.05};
    double prod, expo;
    fp4_compound_shrinkage(d, 3, &prod, &expo);
    assert_double_abs(prod, 0.9 * 0.8 * 1.05, 1e-15);
    assert_double_abs(expo, exp(-0.25), 1e-15);
    fp4_compound_shrinkage(d, 0, &prod, &expo);
    assert_true(prod == 1.0 && expo == 1.0);
}

static double sqnr_of(const float *x, int64_t rows, int64_t len, fp4_format_id f,
                      const fp4_rht_signs *sg)
{
    fp4_qconfig c;
    fp4_qconfig_default(&c);
    c.format.id = f;
    c.rht = sg;
    fp4_metrics m;
    fp4_metrics_init(&m);
    assert_int_equal(fp4_quantize_rows(&c, 0, x, 0, rows, len, NULL, &m), FP4_OK);
    fp4_metrics_finish(&m);
    return m.sqnr_db;
}

/* SPEC §5 sanity facts: Gaussian ≈ 20.5 dB (e2m1) and ≈ 21.4 dB (int4) with fp32 block-16
 * scales, unchanged by RHT; U(-1, 1) ≈ 19.9 and 23.7 dB. */
static void test_gaussian_and_uniform_sqnr(void **state)
{
    (void)state;
    const int64_t R = 1024, L = 256;
    float *g = malloc(sizeof(float) * R * L), *u = malloc(sizeof(float) * R * L);
    for (int64_t i = 0; i < R * L; i++) {
        g[i] = grand();
        u[i] = (float)(2.0 * urand() - 1.0);
    }
    fp4_rht_signs te;
    assert_int_equal(fp4_rht_signs_make("te", 16, &te), FP4_OK);
    double ge = sqnr_of(g, R, L, FP4_FMT_E2M1, NULL), gi = sqnr_of(g, R, L, FP4_FMT_INT4, NULL);
    double ue = sqnr_of(u, R, L, FP4_FMT_E2M1, NULL), ui = sqnr_of(u, R, L, FP4_FMT_INT4, NULL);
    double gre = sqnr_of(g, R, L, FP4_FMT_E2M1, &te), gri = sqnr_of(g, R, L, FP4_FMT_INT4, &te);
    assert_true(fabs(ge - 20.5) < 0.2);
    assert_true(fabs(gi - 21.4) < 0.2);
    assert_true(fabs(ue - 19.9) < 0.2);
    assert_true(fabs(ui - 23.7) < 0.2);
    assert_true(fabs(gre - ge) < 0.1);
    assert_true(fabs(gri - gi) < 0.1);
    free(g);
    free(u);
}

/* The statistics' merge (SPEC §5.1): counts add, the max is a max, the ordered sums add in
 * merge order; finish derives the shares and the non-amax SQNR, and "not computed" when the
 * pass did not see every finite block. */
static void test_stats_merge_and_finish(void **state)
{
    (void)state;
    fp4_metrics a, b;
    fp4_metrics_init(&a);
    fp4_metrics_init(&b);
    a.blocks = 3, a.nonfinite_blocks = 1, a.st_blocks = 2;
    a.st_count = 32, a.st_nonzero = 30, a.underflows = 3, a.saturated = 2;
    a.max_abs_err = 0.5, a.sum_x2_na = 10.0, a.sum_err2_na = 0.1;
    b.blocks = 2, b.st_blocks = 2;
    b.st_count = 32, b.st_nonzero = 10, b.underflows = 1;
    b.max_abs_err = 0.25, b.sum_x2_na = 0.0, b.sum_err2_na = 0.0;
    fp4_metrics_merge(&a, &b);
    fp4_metrics_finish(&a);
    assert_true(a.stats_ok);
    assert_int_equal(a.st_count, 64);
    assert_int_equal(a.underflows, 4);
    assert_double_exact(a.max_abs_err, 0.5);
    assert_double_exact(a.underflows_pct, 100.0 * 4.0 / 64.0);
    assert_double_exact(a.underflow_share, 4.0 / 40.0);
    assert_double_exact(a.saturated_pct, 100.0 * 2.0 / 64.0);
    assert_double_exact(a.sqnr_na_db, 20.0); /* 10 log10(10 / 0.1) */
    assert_int_equal(a.sqnr_na_status, FP4_SQNR_OK);
    /* the ordered sums through fp4_ssums give merge's bits */
    fp4_metrics c;
    fp4_metrics_init(&c);
    fp4_ssums s;
    fp4_ssums_of(&a, &s);
    fp4_ssums_add(&c, &s);
    assert_double_exact(c.sum_x2_na, a.sum_x2_na);
    assert_double_exact(c.sum_err2_na, a.sum_err2_na);
    /* Four over Six: counts summed, the chosen error through fp4_ssums in merge order, the SQNR
     * over sum_x2; computed only when every finite block was evaluated */
    fp4_metrics f, f2;
    fp4_metrics_init(&f);
    fp4_metrics_init(&f2);
    f.blocks = 3, f.nonfinite_blocks = 1, f.fos_blocks = 2, f.fos_blocks4 = 1;
    f.sum_x2 = 100.0, f.sum_err2 = 2.0, f.fos_err2 = 0.5;
    f2.blocks = 1, f2.fos_blocks = 1, f2.fos_blocks4 = 1, f2.fos_err2 = 0.5, f2.sum_x2 = 0.0;
    fp4_metrics_merge(&f, &f2);
    fp4_metrics_finish(&f);
    assert_true(f.fos_ok);
    assert_int_equal(f.fos_blocks, 3);
    assert_int_equal(f.fos_blocks4, 2);
    assert_double_exact(f.fos_err2, 1.0);
    assert_double_exact(f.fos_sqnr_db, 20.0); /* 10 log10(100 / 1) */
    fp4_ssums_of(&f, &s);
    fp4_metrics_init(&c);
    fp4_ssums_add(&c, &s);
    assert_double_exact(c.fos_err2, 1.0);
    f.fos_err2 = 0.0;
    fp4_metrics_finish(&f);
    assert_double_inf(f.fos_sqnr_db, 1);
    /* the error split: block counts summed, its four sums through fp4_ssums */
    f.split_blocks = 2, f2.split_blocks = 1;
    f.split_flush = 1.0, f.split_scale = 2.0, f.split_grid = 3.0, f.split_cross = -0.5;
    fp4_ssums_of(&f, &s);
    fp4_metrics_init(&c);
    fp4_ssums_add(&c, &s);
    assert_double_exact(c.split_flush, 1.0);
    assert_double_exact(c.split_scale, 2.0);
    assert_double_exact(c.split_grid, 3.0);
    assert_double_exact(c.split_cross, -0.5);
    fp4_metrics_merge(&c, &f2);
    assert_int_equal(c.split_blocks, 1);
    fp4_metrics_finish(&f);
    assert_false(f.split_ok); /* 2 of 3 finite blocks */
    f.split_blocks = 3;
    fp4_metrics_finish(&f);
    assert_true(f.split_ok);
    f.blocks++; /* a block not evaluated (a backend without the pass) */
    fp4_metrics_finish(&f);
    assert_false(f.fos_ok);
    assert_double_nan(f.fos_sqnr_db);
    /* exact non-amax entries, then no signal, then a block not seen */
    b.sum_x2_na = 1.0;
    fp4_metrics_finish(&b);
    assert_int_equal(b.sqnr_na_status, FP4_SQNR_EXACT);
    assert_double_inf(b.sqnr_na_db, 1);
    b.sum_x2_na = 0.0;
    fp4_metrics_finish(&b);
    assert_int_equal(b.sqnr_na_status, FP4_SQNR_ZERO_SIGNAL);
    b.blocks = 3;
    fp4_metrics_finish(&b);
    assert_false(b.stats_ok);
    assert_double_nan(b.amax_p50); /* no block in the histogram */
    assert_double_nan(b.underflows_pct);
    assert_double_nan(b.saturated_pct);
    /* count deltas (zero rows repeated k times) */
    fp4_metrics d, before;
    fp4_metrics_init(&d);
    fp4_metrics_init(&before);
    a.hist_blocks = 10;
    a.amax_hist[0] = 5;
    a.amax_hist[fp4_amax_bin(7.0f)] = 4;
    a.amax_hist[fp4_amax_bin(1000.0f)] = 1;
    fp4_metrics_finish(&a); /* ranks 5, 9, 10 of 10: 0, [6, 8), [768, 1024) */
    assert_double_exact(a.amax_p50, 0.0);
    assert_double_exact(a.amax_p90, 6.0);
    assert_double_exact(a.amax_p99, 768.0);
    fp4_metrics_add_count_delta(&d, &a, &before, 3);
    assert_int_equal(d.amax_hist[0], 15);
    assert_int_equal(d.st_count, 192);
    assert_int_equal(d.underflows, 12);
    assert_double_exact(d.max_abs_err, 0.5);
}

/* Relative-error bins and percentiles (SPEC §5.1): known edges, the clamp at both ends,
 * ranks ceil(p·N/100) in integers, merge and count deltas, null when the histogram does not
 * cover every non-zero entry (a state written before it). */
static void test_rel_err_percentiles(void **state)
{
    (void)state;
    assert_int_equal(fp4_rerr_bin(0.0f, 1.0f), 0);
    assert_int_equal(fp4_rerr_bin(0x1.fffffep-41f, 1.0f), 0);
    assert_int_equal(fp4_rerr_bin(0x1p-40f, 1.0f), 1);
    assert_int_equal(fp4_rerr_bin(1.5f * 0x1p-40f, 1.0f), 2);
    assert_int_equal(fp4_rerr_bin(1.0f, 4.0f), 77);  /* 0.25: 1 + 2·38 */
    assert_int_equal(fp4_rerr_bin(3.0f, 3.0f), 81);  /* r = 1 exactly: a flushed value */
    assert_int_equal(fp4_rerr_bin(1.49f, 1.0f), 81);
    assert_int_equal(fp4_rerr_bin(1.5f, 1.0f), 82);
    assert_int_equal(fp4_rerr_bin(0x1.fffffep22f, 1.0f), 126);
    assert_int_equal(fp4_rerr_bin(0x1p23f, 1.0f), 127);
    assert_int_equal(fp4_rerr_bin(3e38f, 1e-38f), 127); /* +Inf: the last bin */
    /* the bin of the fp32 quotient, not of the exact one: this a / b is below 1.5 and
     * rounds to 1.5 (numpy float32 agrees) */
    assert_int_equal(fp4_rerr_bin(0x1.22450ep+1f, 0x1.8306bep+0f), 82);
    assert_double_exact(fp4_rerr_bin_low(0), 0.0);
    assert_double_exact(fp4_rerr_bin_low(1), 0x1p-40);
    assert_double_exact(fp4_rerr_bin_low(2), 1.5 * 0x1p-40);
    assert_double_exact(fp4_rerr_bin_low(77), 0.25);
    assert_double_exact(fp4_rerr_bin_low(81), 1.0);
    assert_double_exact(fp4_rerr_bin_low(127), 0x1p23);
    for (int k = 1; k < FP4_RERR_BINS; k++) /* each bin's lower edge falls in it */
        assert_int_equal(fp4_rerr_bin((float)fp4_rerr_bin_low(k), 1.0f), k);
    fp4_metrics a, b;
    fp4_metrics_init(&a);
    a.blocks = a.st_blocks = 1;
    a.hist_blocks = 1;
    a.st_nonzero = 20; /* 10 exact, 9 at 0.25, 1 flushed: ranks 10, 19, 20 */
    a.rerr_hist[0] = 10;
    a.rerr_hist[fp4_rerr_bin(1.0f, 4.0f)] = 9;
    a.rerr_hist[fp4_rerr_bin(1.0f, 1.0f)] = 1;
    fp4_metrics_finish(&a);
    assert_double_exact(a.rerr_p50, 0.0);
    assert_double_exact(a.rerr_p95, 0.25);
    assert_double_exact(a.rerr_p99, 1.0);
    fp4_metrics_init(&b);
    fp4_metrics_merge(&b, &a);
    fp4_metrics_merge(&b, &a);
    b.rerr_hist[0]++; /* 21 of 41 exact: rank 21 is bin 0; 95 %: rank 39 of 41 */
    b.st_nonzero++;
    fp4_metrics_finish(&b);
    assert_int_equal(b.rerr_hist[77], 18);
    assert_double_exact(b.rerr_p50, 0.0);
    assert_double_exact(b.rerr_p95, 0.25);
    assert_double_exact(b.rerr_p99, 1.0);
    fp4_metrics d, before;
    fp4_metrics_init(&d);
    fp4_metrics_init(&before);
    fp4_metrics_add_count_delta(&d, &a, &before, 3);
    assert_int_equal(d.rerr_hist[81], 3);
    b.st_nonzero++; /* the histogram misses an entry: null, never a guess */
    fp4_metrics_finish(&b);
    assert_double_nan(b.rerr_p50);
    assert_double_nan(b.rerr_p99);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sqnr_known_and_statuses),
        cmocka_unit_test(test_sum_of_1e8_ones),
        cmocka_unit_test(test_uniform_t_zero_mean_error),
        cmocka_unit_test(test_level_geometry),
        cmocka_unit_test(test_bucket_ratios_and_merge),
        cmocka_unit_test(test_stats_merge_and_finish),
        cmocka_unit_test(test_compound_shrinkage),
        cmocka_unit_test(test_rel_err_percentiles),
        cmocka_unit_test(test_gaussian_and_uniform_sqnr),
    };
    return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
