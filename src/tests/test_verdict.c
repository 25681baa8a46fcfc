/* test_verdict.c — the verdict's computation (report/verdict.h) on made-up pooled and
 * per-tensor SQNRs: the ranking under each --rank-by with its tie-breaks, tensors without a
 * finite SQNR last, a long ranking in reverse order sorted, the winner and runner-up. */
#include "testutil.h"

#include <math.h>

#include "report/verdict.h"

#define NT 40

typedef struct fake {
    fp4_run run;
    fp4_run_config cfg;
    fp4_qconfig q[2];
    fp4_tensor_result tr[NT];
    fp4_metrics m[NT][2];
    fp4_metrics pooled[2];
} fake;

/* nt tensors, 2 configs (e2m1, int4 under fp32 scales): tensor t's SQNRs s0[t], s1[t]. */
static void make(fake *f, int nt, const double *s0, const double *s1, const double *d0,
                 fp4_rank_by by)
{
    memset(f, 0, sizeof *f);
    fp4_run_config_default(&f->cfg, "e2m1,int4", FP4_RHT_OFF);
    f->cfg.rank_by = by;
    assert_int_equal(fp4_run_config_finish(&f->cfg), FP4_OK);
    int n = 0;
    assert_int_equal(fp4_run_config_qconfigs(&f->cfg, f->q, 2, &n), FP4_OK);
    f->run.config = &f->cfg;
    f->run.cfgs = f->q;
    f->run.ncfg = 2;
    f->run.ntensors = nt;
    f->run.tensors = f->tr;
    f->run.pooled = f->pooled;
    for (int t = 0; t < nt; t++) {
        f->tr[t].metrics = f->m[t];
        f->m[t][0].sqnr_db = s0[t];
        f->m[t][1].sqnr_db = s1[t];
        f->m[t][0].delta = d0 ? d0[t] : 0;
        f->m[t][1].delta = 0;
        for (int c = 0; c < 2; c++)
            f->m[t][c].sqnr_status = isfinite(f->m[t][c].sqnr_db) ? FP4_SQNR_OK
                                                                   : FP4_SQNR_ZERO_SIGNAL;
    }
}

static void assert_order(const fake *f, const int *want)
{
    fp4_verdict_row *rows = fp4_verdict_rank(&f->run);
    assert_non_null(rows);
    for (int i = 0; i < f->run.ntensors; i++) assert_int_equal(rows[i].t, want[i]);
    free(rows);
}

static void test_rank_by_each_key(void **state)
{
    (void)state;
    /* t0: best 20 (e2m1), gap 5, delta 0.1; t1: best 15 (int4), gap 10, delta 0; t2: no
     * finite SQNR; t3: best 30 (e2m1), gap 5 (ties t0), delta -0.3 */
    const double s0[4] = {20, 5, NAN, 30}, s1[4] = {15, 15, NAN, 25};
    const double d0[4] = {0.1, 0.0, 0.0, -0.3};
    fake f;
    make(&f, 4, s0, s1, d0, FP4_RANK_GAP);
    /* gap: t1 (10) first; t0 and t3 tie at 5, broken by sqnr (lowest best first): t0 (20)
     * before t3 (30); t2 last */
    assert_order(&f, (const int[]){1, 0, 3, 2});
    fp4_verdict_row *rows = fp4_verdict_rank(&f.run);
    assert_non_null(rows);
    assert_true(rows[0].ok && rows[0].best == 1 && rows[0].worst == 0);
    assert_true(fabs(rows[0].gap_db - 10.0) <= 0);
    assert_false(rows[3].ok);
    free(rows);
    make(&f, 4, s0, s1, d0, FP4_RANK_SQNR); /* lowest best SQNR first: 15, 20, 30 */
    assert_order(&f, (const int[]){1, 0, 3, 2});
    make(&f, 4, s0, s1, d0, FP4_RANK_DELTA); /* largest |delta| of the best config first */
    assert_order(&f, (const int[]){3, 0, 1, 2});
}

/* Many rows given worst-first come out sorted, equal rows in tensor order. */
static void test_long_ranking(void **state)
{
    (void)state;
    double s0[NT], s1[NT];
    for (int t = 0; t < NT; t++) {
        s0[t] = 10 + (t / 2);  /* pairs of equal rows */
        s1[t] = 10;            /* gap = t / 2: largest last as given */
    }
    fake f;
    make(&f, NT, s0, s1, NULL, FP4_RANK_GAP);
    int want[NT];
    for (int i = 0; i < NT; i++) want[i] = NT - 2 - 2 * (i / 2) + (i % 2);
    assert_order(&f, want);
}

static void test_winner_runner(void **state)
{
    (void)state;
    const double s0[1] = {20}, s1[1] = {15};
    fake f;
    make(&f, 1, s0, s1, NULL, FP4_RANK_GAP);
    f.pooled[0].sqnr_db = 18;
    f.pooled[1].sqnr_db = 19.5;
    int runner = -2;
    assert_int_equal(fp4_verdict_winner(&f.run, &runner), 1);
    assert_int_equal(runner, 0);
    assert_false(fp4_verdict_same(&f.run, 1, 1));
    f.pooled[0].sqnr_status = f.pooled[1].sqnr_status = FP4_SQNR_ZERO_SIGNAL;
    assert_int_equal(fp4_verdict_winner(&f.run, &runner), -1);
    assert_int_equal(runner, -1);
    assert_true(fp4_verdict_sqnr_ok(&f.m[0][0]));
    f.m[0][0].sqnr_db = INFINITY;
    assert_false(fp4_verdict_sqnr_ok(&f.m[0][0]));
    f.run.ntensors = 0;
    assert_null(fp4_verdict_rank(&f.run));
}

/* The tie: w - r < 0.05 dB is a tie, 0.05 dB and more a win; none without a runner-up. */
static void test_tie(void **state)
{
    (void)state;
    static fake f;
    double s0[1] = {20}, s1[1] = {20};
    make(&f, 1, s0, s1, NULL, FP4_RANK_GAP);
    f.pooled[0].sqnr_db = 20.04;
    f.pooled[1].sqnr_db = 20.0;
    assert_true(fp4_verdict_tie(&f.run, 0, 1));
    f.pooled[0].sqnr_db = 20.0625; /* 0.0625 > 0.05, exact in binary */
    assert_false(fp4_verdict_tie(&f.run, 0, 1));
    assert_false(fp4_verdict_tie(&f.run, 0, -1));
    f.pooled[1].sqnr_db = NAN;
    assert_false(fp4_verdict_tie(&f.run, 0, 1));
}

/* The flushed share: (hist[0] + hist[8] - zero) / (elements - zero), clamped; NaN without a
 * non-zero input. */
static void test_flushed_share(void **state)
{
    (void)state;
    fp4_metrics m;
    memset(&m, 0, sizeof m);
    m.elements = 100;
    m.zero = 20;
    m.hist[0] = 25;
    m.hist[8] = 15; /* 40 coded 0, 20 of them zero inputs: 20 of 80 flushed */
    assert_double_exact(fp4_flushed_share(&m), 0.25);
    m.hist[0] = 5;
    m.hist[8] = 0; /* fewer zero codes than zero inputs (a non-finite block): 0 */
    assert_double_exact(fp4_flushed_share(&m), 0.0);
    m.zero = 100;
    assert_double_nan(fp4_flushed_share(&m));
}

/* The keep ranking on 6 tensors: flushed shares 0.06 x 4, 0.90, 0.06 and SQNRs 20 x 5, 14:
 * median flushed 0.06, MAD 0 -> floor 0.005: z_f(t4) = 0.6745 * 0.84 / 0.005 = 113.316;
 * median SQNR 20, MAD 0 -> floor 0.1 dB: z_s(t5) = 0.6745 * 6 / 0.1 = 40.47. Kept t4 (by
 * flushed), t5 (by SQNR), in that order; pooled sums with them exact. */
static void test_keep(void **state)
{
    (void)state;
    static fake f;
    double s0[6] = {20, 20, 20, 20, 20, 14}, s1[6] = {19, 19, 19, 19, 19, 13};
    make(&f, 6, s0, s1, NULL, FP4_RANK_GAP);
    for (int t = 0; t < 6; t++) {
        fp4_metrics *m = &f.m[t][0];
        m->elements = 100;
        m->zero = 0;
        m->hist[0] = t == 4 ? 90 : 6;
        m->sum_x2 = 100;
        m->sum_err2 = 1;
    }
    f.pooled[0].sqnr_db = 20;
    f.pooled[1].sqnr_db = 19;
    f.pooled[0].sqnr_status = f.pooled[1].sqnr_status = FP4_SQNR_OK;
    fp4_keep k;
    assert_int_equal(fp4_verdict_keep(&f.run, &k), FP4_OK);
    assert_int_equal(k.cfg, 0);
    assert_int_equal(k.n, 6);
    assert_int_equal(k.nkeep, 2);
    assert_int_equal(k.rows[0].t, 4);
    assert_true(k.rows[0].by == FP4_KEEP_BY_FLUSHED && k.rows[0].keep);
    assert_double_rel(k.rows[0].score, 0.6745 * 0.84 / 0.005, 1e-12);
    assert_int_equal(k.rows[1].t, 5);
    assert_true(k.rows[1].by == FP4_KEEP_BY_SQNR && k.rows[1].keep);
    assert_double_rel(k.rows[1].score, 0.6745 * 6 / 0.1, 1e-12);
    assert_false(k.rows[2].keep);
    assert_int_equal(k.rows[2].t, 0); /* ties (score 0): tensor order */
    assert_double_exact(k.median_flushed, 0.06);
    assert_double_exact(k.median_sqnr_db, 20);
    /* pooled: 600 / 6 -> 600 / 4 with t4, t5 exact; flushed 120/600 -> 24/600 */
    assert_double_rel(k.pooled_sqnr_db, 20.0, 1e-12);
    assert_double_rel(k.pooled_sqnr_kept_db, 10.0 * log10(150.0), 1e-12);
    assert_double_rel(k.pooled_flushed, 120.0 / 600, 1e-12);
    assert_double_rel(k.pooled_flushed_kept, 24.0 / 600, 1e-12);
    fp4_keep_free(&k);
    /* the recipe format judges when the run has it (plain E2M1 RTNE under NVFP4 scales, else
     * MXFP4), even with a lower pooled SQNR; without one, the best plain config */
    assert_false(k.recipe);
    fp4_keep_free(&k);
    f.q[1].format.id = FP4_FMT_E2M1;
    f.q[1].scale = FP4_SCALE_NVFP4;
    assert_int_equal(fp4_verdict_keep(&f.run, &k), FP4_OK);
    assert_int_equal(k.cfg, 1);
    assert_true(k.recipe);
    fp4_keep_free(&k);
    f.q[1].scale = FP4_SCALE_MXFP4;
    assert_int_equal(fp4_verdict_keep(&f.run, &k), FP4_OK);
    assert_int_equal(k.cfg, 1);
    assert_true(k.recipe);
    fp4_keep_free(&k);
    f.q[1].rounding = FP4_ROUND_SR; /* not what recipes write */
    assert_int_equal(fp4_verdict_keep(&f.run, &k), FP4_OK);
    assert_int_equal(k.cfg, 0);
    assert_false(k.recipe);
    f.q[1].rounding = FP4_ROUND_RTNE;
    f.q[1].format.max = 4; /* e2m1:max=4: an ablation, not the recipe grid */
    fp4_keep_free(&k);
    assert_int_equal(fp4_verdict_keep(&f.run, &k), FP4_OK);
    assert_int_equal(k.cfg, 0);
    fp4_keep_free(&k);
    f.q[1] = f.q[0];
    f.q[1].format.id = FP4_FMT_INT4;
    /* fewer than 4 tensors: nothing kept */
    f.run.ntensors = 3;
    f.m[0][0].hist[0] = 100;
    assert_int_equal(fp4_verdict_keep(&f.run, &k), FP4_OK);
    assert_int_equal(k.nkeep, 0);
    fp4_keep_free(&k);
}

/* The recipe-statistics keys (SPEC §5.1): each tensor's best config's statistic; a tensor
 * whose statistics were not computed (stats_ok 0: NaN key) after those that have one. */
static void test_rank_by_statistics(void **state)
{
    (void)state;
    /* best configs: t0 e2m1 (20), t1 int4 (15), t2 e2m1 (30), t3 e2m1 (25) */
    const double s0[4] = {20, 5, 30, 25}, s1[4] = {15, 15, 25, 20};
    const double uf[4] = {1.0, 7.0, 3.0, 0.5}, na[4] = {12.0, 18.0, 9.0, 15.0};
    const double mx[4] = {0.5, 0.25, 0.1, 0.75}; /* max_abs_err, tensor amax 2: halved */
    static fake f;
    for (int k = 0; k < 3; k++) {
        const fp4_rank_by by = k == 0 ? FP4_RANK_UNDERFLOW
                               : k == 1 ? FP4_RANK_SQNR_NONAMAX
                                        : FP4_RANK_MAXERR;
        make(&f, 4, s0, s1, NULL, by);
        for (int t = 0; t < 4; t++) {
            const int b = t == 1; /* the best config */
            fp4_metrics *m = &f.m[t][b];
            m->stats_ok = t != 3 || k != 0; /* t3 not computed under underflow */
            m->underflows_pct = uf[t];
            m->sqnr_na_db = na[t];
            m->sqnr_na_status = FP4_SQNR_OK;
            m->max_abs_err = mx[t];
            m->tensor_amax = 2.0f;
            /* the other config's statistics must not count */
            f.m[t][!b].stats_ok = 1;
            f.m[t][!b].underflows_pct = 100.0;
            f.m[t][!b].sqnr_na_db = -50.0;
            f.m[t][!b].sqnr_na_status = FP4_SQNR_OK;
            f.m[t][!b].max_abs_err = 100.0;
            f.m[t][!b].tensor_amax = 2.0f;
        }
        if (k == 0) assert_order(&f, (const int[]){1, 2, 0, 3});      /* 7, 3, 1, n/a */
        else if (k == 1) assert_order(&f, (const int[]){2, 0, 3, 1}); /* 9, 12, 15, 18 */
        else assert_order(&f, (const int[]){3, 0, 1, 2});             /* .75 .5 .25 .1 */
        fp4_verdict_row *rows = fp4_verdict_rank(&f.run);
        assert_non_null(rows);
        if (k == 2) assert_double_exact(rows[0].maxerr_rel, 0.375);
        if (k == 0) assert_double_nan(rows[3].underflows_pct);
        free(rows);
    }
}

/* The third z-score: the non-amax SQNR (SPEC §5.1) of 6 tensors, 15 x 5 and 11, where the
 * flushed shares (0.06) and SQNRs (20, t5 the *highest*: 26) flag nothing: median 15, MAD 0
 * -> floor 0.1 dB: z_a(t5) = 0.6745 * 4 / 0.1 = 26.98; kept by "sqnr_nonamax". A tensor whose
 * statistics were not computed (stats_ok 0) or whose non-amax SQNR is not finite has z_a 0
 * and is left out of the median. Ties between z-scores go to flushed, then SQNR. */
static void test_keep_nonamax(void **state)
{
    (void)state;
    static fake f;
    double s0[6] = {20, 20, 20, 20, 20, 26}, s1[6] = {19, 19, 19, 19, 19, 25};
    make(&f, 6, s0, s1, NULL, FP4_RANK_GAP);
    const double na[6] = {15, 15, 15, 15, 15, 11};
    for (int t = 0; t < 6; t++) {
        fp4_metrics *m = &f.m[t][0];
        m->elements = 100;
        m->hist[0] = 6;
        m->sum_x2 = 100;
        m->sum_err2 = 1;
        m->stats_ok = 1;
        m->sqnr_na_db = na[t];
        m->sqnr_na_status = FP4_SQNR_OK;
    }
    f.pooled[0].sqnr_db = 20;
    f.pooled[1].sqnr_db = 19;
    f.pooled[0].sqnr_status = f.pooled[1].sqnr_status = FP4_SQNR_OK;
    fp4_keep k;
    assert_int_equal(fp4_verdict_keep(&f.run, &k), FP4_OK);
    assert_int_equal(k.nkeep, 1);
    assert_int_equal(k.rows[0].t, 5);
    assert_int_equal(k.rows[0].by, FP4_KEEP_BY_SQNR_NONAMAX);
    assert_string_equal(fp4_keep_by_name(k.rows[0].by), "sqnr_nonamax");
    assert_double_rel(k.rows[0].score, 0.6745 * 4 / 0.1, 1e-12);
    assert_double_rel(k.rows[0].z_sqnr_na, 0.6745 * 4 / 0.1, 1e-12);
    assert_double_exact(k.rows[0].sqnr_na_db, 11);
    assert_double_exact(k.median_sqnr_na_db, 15);
    assert_double_exact(k.mad_sqnr_na_db, 0);
    /* the MAD above its floor: 15, 15.5, 16, 16, 16.5, 11 -> median 15.75, |dev| .75 .25 .25
     * .25 .75 4.75 -> MAD 0.5: z_a(t5) = 0.6745 * 4.75 / 0.5 */
    const double na2[6] = {15, 15.5, 16, 16, 16.5, 11};
    for (int t = 0; t < 6; t++) f.m[t][0].sqnr_na_db = na2[t];
    fp4_keep_free(&k);
    assert_int_equal(fp4_verdict_keep(&f.run, &k), FP4_OK);
    assert_double_exact(k.median_sqnr_na_db, 15.75);
    assert_double_exact(k.mad_sqnr_na_db, 0.5);
    assert_int_equal(k.rows[0].t, 5);
    assert_double_rel(k.rows[0].score, 0.6745 * 4.75 / 0.5, 1e-12);
    fp4_keep_free(&k);
    /* not computed (stats_ok 0) or not finite: z_a 0, left out of the median */
    for (int t = 0; t < 6; t++) f.m[t][0].sqnr_na_db = na[t];
    f.m[5][0].stats_ok = 0;
    f.m[4][0].sqnr_na_status = FP4_SQNR_EXACT;
    f.m[3][0].sqnr_na_db = 3; /* the median of 15, 15, 15, 3: 15 */
    assert_int_equal(fp4_verdict_keep(&f.run, &k), FP4_OK);
    assert_int_equal(k.nkeep, 1);
    assert_int_equal(k.rows[0].t, 3);
    assert_double_exact(k.median_sqnr_na_db, 15);
    for (int i = 0; i < 6; i++)
        if (k.rows[i].t == 5 || k.rows[i].t == 4) {
            assert_double_exact(k.rows[i].z_sqnr_na, 0);
            assert_double_nan(k.rows[i].sqnr_na_db);
        }
    fp4_keep_free(&k);
    /* both z_f and z_a above the threshold, z_a the larger: the score is z_a, `by` flushed */
    for (int t = 0; t < 6; t++) {
        f.m[t][0].stats_ok = 1;
        f.m[t][0].sqnr_na_status = FP4_SQNR_OK;
        f.m[t][0].sqnr_na_db = na[t];
    }
    f.m[5][0].hist[0] = 10; /* flushed 0.10: z_f = 0.6745 * 0.04 / 0.005 = 5.396 */
    assert_int_equal(fp4_verdict_keep(&f.run, &k), FP4_OK);
    assert_int_equal(k.rows[0].t, 5);
    assert_int_equal(k.rows[0].by, FP4_KEEP_BY_FLUSHED);
    assert_double_rel(k.rows[0].z_flushed, 0.6745 * 0.04 / 0.005, 1e-12);
    assert_double_rel(k.rows[0].score, 0.6745 * 4 / 0.1, 1e-12);
    fp4_keep_free(&k);
    f.m[5][0].hist[0] = 6;
    /* ties between z-scores: flushed first, then SQNR (all z 0 here) */
    for (int t = 0; t < 6; t++) f.m[t][0].stats_ok = 0;
    assert_int_equal(fp4_verdict_keep(&f.run, &k), FP4_OK);
    for (int i = 0; i < 6; i++)
        if (k.rows[i].t != 5) assert_int_equal(k.rows[i].by, FP4_KEEP_BY_FLUSHED);
    fp4_keep_free(&k);
}

/* A gap ranking where every gap is equal ranks by the keep score (fp4_verdict_by_keep): the
 * keep case of test_keep with both configs' SQNRs equal (every gap 0) puts the kept t4 (z
 * 113.3) and t5 (z 40.5) first, the rest by the tie-breaks (SQNR, then tensor order); the
 * rows carry the keep score and whether kept. One unequal gap, or --rank-by sqnr: no fallback. */
static void test_rank_by_keep(void **state)
{
    (void)state;
    static fake f;
    double s0[6] = {20, 20, 20, 20, 20, 14};
    make(&f, 6, s0, s0, NULL, FP4_RANK_GAP);
    for (int t = 0; t < 6; t++) {
        for (int c = 0; c < 2; c++) {
            fp4_metrics *m = &f.m[t][c];
            m->elements = 100;
            m->hist[0] = t == 4 ? 90 : 6;
            m->sum_x2 = 100;
            m->sum_err2 = 1;
        }
    }
    f.pooled[0].sqnr_db = f.pooled[1].sqnr_db = 20;
    f.pooled[0].sqnr_status = f.pooled[1].sqnr_status = FP4_SQNR_OK;
    assert_true(fp4_verdict_by_keep(&f.run));
    fp4_verdict_row *rows = fp4_verdict_rank(&f.run);
    assert_non_null(rows);
    const int want[6] = {4, 5, 0, 1, 2, 3};
    for (int i = 0; i < 6; i++) assert_int_equal(rows[i].t, want[i]);
    assert_double_rel(rows[0].keep_score, 0.6745 * 0.84 / 0.005, 1e-12);
    assert_true(rows[0].kept && rows[1].kept && !rows[2].kept);
    free(rows);
    /* every gap equal but not 0: still the keep score */
    for (int t = 0; t < 6; t++) f.m[t][1].sqnr_db = s0[t] - 1;
    assert_true(fp4_verdict_by_keep(&f.run));
    /* one unequal gap: by gap (t0 first: gap 2) */
    f.m[0][1].sqnr_db = 18;
    assert_false(fp4_verdict_by_keep(&f.run));
    rows = fp4_verdict_rank(&f.run);
    assert_non_null(rows);
    assert_int_equal(rows[0].t, 0);
    free(rows);
    /* another --rank-by: never the keep score */
    f.m[0][1].sqnr_db = 19;
    f.cfg.rank_by = FP4_RANK_SQNR;
    assert_false(fp4_verdict_by_keep(&f.run));
    rows = fp4_verdict_rank(&f.run);
    assert_non_null(rows);
    assert_int_equal(rows[0].t, 5); /* lowest best SQNR */
    free(rows);
}

/* Fused partners (SPEC §9): a kept q_proj brings k_proj and v_proj (in group order), up_proj
 * brings gate_proj, experts.N.w1 brings w3 when the run has it; o_proj and w2 are alone; a
 * partner the run lacks is not invented; nothing twice. */
static void test_fused_partners(void **state)
{
    (void)state;
    static fake f;
    double s0[7] = {20, 20, 20, 20, 20, 20, 20};
    make(&f, 7, s0, s0, NULL, FP4_RANK_GAP);
    const char *names[7] = {"model.layers.0.self_attn.q_proj.weight",
                            "model.layers.0.self_attn.k_proj.weight",
                            "model.layers.0.self_attn.v_proj.weight",
                            "model.layers.0.self_attn.o_proj.weight",
                            "model.layers.0.mlp.up_proj.weight",
                            "model.layers.0.block_sparse_moe.experts.3.w1.weight",
                            "model.layers.0.block_sparse_moe.experts.3.w3.weight"};
    for (int t = 0; t < 7; t++) f.tr[t].info.name = (char *)names[t];
    char **l = NULL;
    int n = 0;
    assert_true(fp4_verdict_fused(&f.run, "model.layers.0.self_attn.v_proj.weight", &l, &n));
    assert_int_equal(n, 3);
    assert_string_equal(l[0], "model.layers.0.self_attn.q_proj");
    assert_string_equal(l[1], "model.layers.0.self_attn.k_proj");
    assert_string_equal(l[2], "model.layers.0.self_attn.v_proj");
    assert_true(fp4_verdict_fused(&f.run, "model.layers.0.self_attn.q_proj.weight", &l, &n));
    assert_int_equal(n, 3); /* nothing twice */
    assert_true(fp4_verdict_fused(&f.run, "model.layers.0.self_attn.o_proj.weight", &l, &n));
    assert_int_equal(n, 4);
    assert_string_equal(l[3], "model.layers.0.self_attn.o_proj");
    /* up_proj: its gate_proj is not in the run, not invented */
    assert_true(fp4_verdict_fused(&f.run, "model.layers.0.mlp.up_proj.weight", &l, &n));
    assert_int_equal(n, 5);
    assert_string_equal(l[4], "model.layers.0.mlp.up_proj");
    assert_true(fp4_verdict_fused(&f.run, "model.layers.0.block_sparse_moe.experts.3.w3.weight",
                                  &l, &n));
    assert_int_equal(n, 7);
    assert_string_equal(l[5], "model.layers.0.block_sparse_moe.experts.3.w1");
    assert_string_equal(l[6], "model.layers.0.block_sparse_moe.experts.3.w3");
    for (int i = 0; i < n; i++) free(l[i]);
    free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_by_each_key),
        cmocka_unit_test(test_rank_by_statistics),
        cmocka_unit_test(test_long_ranking),
        cmocka_unit_test(test_winner_runner),
        cmocka_unit_test(test_tie),
        cmocka_unit_test(test_flushed_share),
        cmocka_unit_test(test_keep),
        cmocka_unit_test(test_keep_nonamax),
        cmocka_unit_test(test_rank_by_keep),
        cmocka_unit_test(test_fused_partners),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
