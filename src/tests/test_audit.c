/* test_audit.c — run/audit's rules: the exact nearest-code judgement, RTNE to E2M1, each
 * producer's per-tensor and block-scale rules (known answers from ../shared/QUANTIZED.md),
 * and the audit of the fixtures (round-to-nearest exports: every scale byte reproduced; a
 * swapped nibble order named). */
#include <math.h>
#include <unistd.h>

#include "testutil.h"

#include "report/audit.h"
#include "run/audit.h"

static fp4_qtensor qt(fp4_qformat f, fp4_qproducer p)
{
    fp4_qtensor q;
    memset(&q, 0, sizeof q);
    q.format = f;
    q.producer = p;
    q.block = f == FP4_QF_NVFP4 ? 16 : 32;
    return q;
}

static void test_is_nearest(void **state)
{
    (void)state;
    /* x = 1.2 s: nearest 1.0, not 1.5 */
    assert_true(fp4_audit_is_nearest(1.2f, 1.0f, 1.0f));
    assert_false(fp4_audit_is_nearest(1.2f, 1.5f, 1.0f));
    assert_false(fp4_audit_is_nearest(1.2f, 2.0f, 1.0f));
    /* an exact tie is nearest for either neighbour */
    assert_true(fp4_audit_is_nearest(1.25f, 1.0f, 1.0f));
    assert_true(fp4_audit_is_nearest(1.25f, 1.5f, 1.0f));
    assert_true(fp4_audit_is_nearest(-2.5f, -2.0f, 1.0f));
    assert_true(fp4_audit_is_nearest(-2.5f, -3.0f, 1.0f));
    /* beyond the grid: the end point */
    assert_true(fp4_audit_is_nearest(100.0f, 6.0f, 1.0f));
    assert_false(fp4_audit_is_nearest(100.0f, 4.0f, 1.0f));
    /* the wrong sign is never nearest of a nonzero x; zero is nearest of a tiny x */
    assert_false(fp4_audit_is_nearest(0.6f, -0.5f, 1.0f));
    assert_true(fp4_audit_is_nearest(0.1f, -0.0f, 1.0f));
    /* s = 0: every code nearest */
    assert_true(fp4_audit_is_nearest(3.0f, 6.0f, 0.0f));
    /* judged in fp64 with the scale: x = 0.7499999 s is nearer 0.5 s */
    assert_false(fp4_audit_is_nearest(0.7499999f * 0.1f, 1.0f, 0.1f));
}

static void test_e2m1_rtne(void **state)
{
    (void)state;
    static const struct { float t; unsigned code; } k[] = {
        {0.0f, 0},   {0.25f, 0}, {0.2500001f, 1}, {0.75f, 2}, {0.7499999f, 1}, {1.25f, 2},
        {1.75f, 4},  {2.5f, 4},  {2.5000002f, 5}, {3.5f, 6}, {5.0f, 6},        {5.0000005f, 7},
        {100.0f, 7}, {-0.75f, 10}, {-6.0f, 15},   {-0.1f, 8}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (fp4_audit_e2m1_rtne(k[i].t) != k[i].code)
            fail_msg("%.9g -> %u, want %u", (double)k[i].t, fp4_audit_e2m1_rtne(k[i].t), k[i].code);
    assert_int_equal(fp4_audit_e2m1_rtne(NAN), 0);
}

static void test_global_rules(void **state)
{
    (void)state;
    /* ModelOpt: fp32(amax / 2688) */
    assert_double_exact(fp4_audit_global_rule(FP4_QP_MODELOPT, 2.640625f), 2.640625f / 2688.0f);
    /* compressed-tensors in bf16: 1/2.640625 -> 0.37890625, x 2688 = 1018.5 -> 1020 */
    assert_double_exact(fp4_audit_global_rule(FP4_QP_COMPRESSED_TENSORS, 2.640625f), 1020.0);
    /* an all-zero group: 1/0 is not finite, replaced by 1.0 */
    assert_double_exact(fp4_audit_global_rule(FP4_QP_COMPRESSED_TENSORS, 0.0f), 1.0);
}

static void test_block_rules(void **state)
{
    (void)state;
    fp4_qtensor mo = qt(FP4_QF_NVFP4, FP4_QP_MODELOPT), ct = qt(FP4_QF_NVFP4, FP4_QP_COMPRESSED_TENSORS);
    /* ModelOpt: zero block -> 1.0 (0x38); amax / (6 g) = 448 -> 0x7E; tiny -> clamp 2^-9 (0x01) */
    assert_int_equal(fp4_audit_scale_rule(&mo, 0.0f, 0.01f), 0x38);
    assert_int_equal(fp4_audit_scale_rule(&mo, 448.0f * 6.0f * 0.01f, 0.01f), 0x7E);
    assert_int_equal(fp4_audit_scale_rule(&mo, 1e-12f, 0.01f), 0x01);
    assert_int_equal(fp4_audit_scale_rule(&mo, 6.0f * 0.5f, 0.5f), 0x38); /* ratio 1.0 */
    /* compressed-tensors: zero block -> 0x20 (0.125); g * bf16(amax / 6) */
    assert_int_equal(fp4_audit_scale_rule(&ct, 0.0f, 1020.0f), 0x20);
    assert_int_equal(fp4_audit_scale_rule(&ct, 6.0f, 2.0f), 0x40); /* 2.0: e=8, m=0 */
    /* MX, compressed-tensors (QUANTIZED.md case 2): 1.75 * 2^e -> 127+e+1-2, 1.74 * 2^e ->
     * 127+e-2; OCP floor (gpt-oss): 127+e-2 for both */
    fp4_qtensor cm = qt(FP4_QF_MXFP4, FP4_QP_COMPRESSED_TENSORS), go = qt(FP4_QF_MXFP4, FP4_QP_GPT_OSS);
    fp4_qtensor mm = qt(FP4_QF_MXFP4, FP4_QP_MODELOPT);
    for (int e = -10; e <= 10; e += 5) {
        assert_int_equal(fp4_audit_scale_rule(&cm, ldexpf(1.75f, e), 1), 127 + e + 1 - 2);
        assert_int_equal(fp4_audit_scale_rule(&cm, ldexpf(1.74f, e), 1), 127 + e - 2);
        assert_int_equal(fp4_audit_scale_rule(&go, ldexpf(1.75f, e), 1), 127 + e - 2);
        assert_int_equal(fp4_audit_scale_rule(&go, ldexpf(1.74f, e), 1), 127 + e - 2);
    }
    /* ModelOpt MX: ceil(log2(amax / 6)) + 127: amax 6 -> 127, 6.01 -> 128, 12 -> 128 */
    assert_int_equal(fp4_audit_scale_rule(&mm, 6.0f, 1), 127);
    assert_int_equal(fp4_audit_scale_rule(&mm, 6.01f, 1), 128);
    assert_int_equal(fp4_audit_scale_rule(&mm, 12.0f, 1), 128);
    assert_int_equal(fp4_audit_scale_rule(&mm, 0.0f, 1), 0);
}

static void test_sqnr(void **state)
{
    (void)state;
    fp4_audit_sums s = {100.0, 1.0, 99.0, 4};
    const char *st;
    assert_double_rel(fp4_audit_sqnr(&s, &st), 20.0, 1e-15);
    assert_string_equal(st, "ok");
    assert_double_rel(fp4_audit_alpha(&s), 0.99, 1e-15);
    s.ee = 0;
    assert_true(isnan(fp4_audit_sqnr(&s, &st)));
    assert_string_equal(st, "exact");
    s.xx = 0;
    assert_true(isnan(fp4_audit_sqnr(&s, &st)));
    assert_string_equal(st, "zero_signal");
}

/* The table's order and flushed share (issue 29): five tensors, four alike (20.0..20.3 dB, 1 %
 * flushed) and one whose small values were flushed (30 dB, 30 %): by SQNR it would come last;
 * the keep score (z_f = 0.6745 * 0.29 / 0.005 = 39.1) puts it first, marked KEEP; then z_s
 * (median 20.2 dB, MAD 0.1 dB): 20.0 (1.349), 20.1 (0.6745), then 20.2 and 20.3 (score 0, by
 * SQNR). Three tensors: lowest SQNR first, no score. */
static void table_of(const fp4_audit *a, char **buf, size_t *len)
{
    FILE *f = open_memstream(buf, len);
    assert_non_null(f);
    fp4_report_audit_table(f, a);
    fclose(f);
}

static void test_table_rank(void **state)
{
    (void)state;
    fp4_audit_tensor t[5];
    memset(t, 0, sizeof t);
    char *names[5] = {"/a", "/b", "/c", "/d", "/e"};
    const double ee[5] = {1.0, 0.977237220955810, 0.954992586021436, 0.933254300796991, 0.1};
    for (int i = 0; i < 5; i++) {
        t[i].name = names[i];
        t[i].q = qt(FP4_QF_NVFP4, FP4_QP_MODELOPT);
        t[i].layout_fit = FP4_AUDIT_H_DECLARED;
        t[i].export_ = (fp4_audit_sums){100.0, ee[i], 99.0, 1000};
        t[i].requant = t[i].export_;
        t[i].src_nonzero = 1000;
        t[i].flushed = i == 4 ? 300 : 10;
        t[i].scale_bytes = t[i].scale_match = 1;
    }
    fp4_audit a;
    memset(&a, 0, sizeof a);
    a.t = t;
    a.n = 5;
    a.pooled_export = a.pooled_requant = (fp4_audit_sums){500.0, 4.0, 495.0, 5000};
    char *buf = NULL;
    size_t len = 0;
    table_of(&a, &buf, &len);
    const char *rows[5] = {"\n/e ", "\n/a ", "\n/b ", "\n/c ", "\n/d "};
    const char *prev = buf;
    for (int i = 0; i < 5; i++) {
        const char *r = strstr(buf, rows[i]);
        assert_non_null(r);
        assert_true(r > prev - 1);
        prev = r;
    }
    /* /e: 30 dB, flushed 30 %, KEEP; /a: 1 % and no KEEP */
    assert_non_null(strstr(buf, "   30.000  0.99000   30.0000  "));
    assert_non_null(strstr(buf, "   20.000  0.99000    1.0000  "));
    const char *e = strstr(buf, "\n/e ");
    const char *eol = strchr(e + 1, '\n');
    assert_true(eol - e > 16 && !strncmp(eol - 16, "  KEEP (flushed)", 16));
    assert_int_equal((int)(strstr(buf, "KEEP") - buf), (int)(eol - 14 - buf));
    assert_null(strstr(eol, "  KEEP ("));
    /* the pooled flushed share: 340 of 5000 */
    assert_non_null(strstr(buf, "(pooled, 5 tensors)"));
    assert_non_null(strstr(buf, "    6.8000  "));
    assert_non_null(strstr(buf, "rows: most outlying first by the verdict's keep score"));
    free(buf);

    a.n = 3; /* /a /b /c: fewer than 4, by SQNR */
    t[0].export_.ee = 0.9; /* /a 20.458 dB: last */
    table_of(&a, &buf, &len);
    const char *pb = strstr(buf, "\n/b "), *pc = strstr(buf, "\n/c "), *pa = strstr(buf, "\n/a ");
    assert_true(pb && pc && pa && pb < pc && pc < pa);
    assert_null(strstr(buf, "KEEP"));
    assert_non_null(strstr(buf, "rows: lowest export SQNR first"));
    free(buf);
}

/* The keep score's third z (issue 27, SPEC §9): five tensors of one SQNR (20 dB) and flushed
 * share (1 %), non-amax SQNRs 18.0, 18.1, 18.2, 14.0 and 18.3 dB (median 18.1, MAD 0.1): /d's
 * z_a = 0.6745 * 4.1 / 0.1 = 27.7 puts it first, KEEP by its non-amax SQNR alone (z_f = z_s = 0
 * for all); the others' z_a at most 0.6745. Without z_a, no KEEP at all. */
static void test_table_keep_nonamax(void **state)
{
    (void)state;
    fp4_audit_tensor t[5];
    memset(t, 0, sizeof t);
    char *names[5] = {"/a", "/b", "/c", "/d", "/e"};
    /* sum x^2 = 100: ee = 100 / 10^(dB / 10) */
    const double na_ee[5] = {1.584893192461113, 1.548816618912481, 1.513561248436208,
                             3.981071705534972, 1.479108388168207};
    for (int i = 0; i < 5; i++) {
        t[i].name = names[i];
        t[i].q = qt(FP4_QF_NVFP4, FP4_QP_MODELOPT);
        t[i].layout_fit = FP4_AUDIT_H_DECLARED;
        t[i].export_ = (fp4_audit_sums){100.0, 1.0, 99.0, 1000};
        t[i].export_na = (fp4_audit_sums){100.0, na_ee[i], 99.0, 900};
        t[i].requant = t[i].export_;
        t[i].requant_na = t[i].export_na;
        t[i].src_nonzero = 1000;
        t[i].flushed = 10;
        t[i].scale_bytes = t[i].scale_match = 1;
    }
    fp4_audit a;
    memset(&a, 0, sizeof a);
    a.t = t;
    a.n = 5;
    a.pooled_export = a.pooled_requant = (fp4_audit_sums){500.0, 5.0, 495.0, 5000};
    char *buf = NULL;
    size_t len = 0;
    table_of(&a, &buf, &len);
    const char *d = strstr(buf, "\n/d ");
    assert_non_null(d);
    assert_ptr_equal(strchr(buf, '\n'), d); /* the first row */
    const char *eol = strchr(d + 1, '\n');
    assert_true(eol - d > 17 && !strncmp(eol - 17, "  KEEP (non-amax)", 17));
    assert_null(strstr(eol, "KEEP ("));
    free(buf);
}

/* The re-export rule (SPEC §11): over 1 % of the codes not nearest and the export's SQNR more
 * than 1 dB below the requantization's (an exact requant: below); else false. */
static void test_reexport_rule(void **state)
{
    (void)state;
    const fp4_audit_sums rq = {100.0, 1.0, 99.0, 1000};          /* 20 dB */
    fp4_audit_sums ex = {100.0, 1.5848931924611134, 99.0, 1000}; /* 18 dB: gain -2 */
    assert_true(fp4_audit_reexport(&ex, &rq, 11, 1000));
    assert_false(fp4_audit_reexport(&ex, &rq, 10, 1000)); /* 1 %: not over */
    assert_false(fp4_audit_reexport(&ex, &rq, 0, 0));
    ex.ee = 1.2; /* gain -0.79 dB */
    assert_false(fp4_audit_reexport(&ex, &rq, 500, 1000));
    ex.ee = 1.3; /* gain -1.14 dB */
    assert_true(fp4_audit_reexport(&ex, &rq, 500, 1000));
    fp4_audit_sums exact = rq;
    exact.ee = 0;
    assert_true(fp4_audit_reexport(&ex, &exact, 500, 1000));  /* ok vs exact: below */
    assert_false(fp4_audit_reexport(&exact, &rq, 500, 1000)); /* an exact export */
    fp4_audit_sums zero = {0, 0, 0, 1000};
    assert_false(fp4_audit_reexport(&zero, &zero, 500, 1000));
}

/* REEXPORT in the table: five tensors of 20 dB, 1 % flushed, non-amax 18 dB; /d's export is
 * 2 dB worse than its requant with 5 % not nearest: REEXPORT, listed first, and not KEEP (its
 * export SQNR would give z_s = 13.5, but the score judges its requant, typical); /e likewise,
 * and its requant flushes 30 % (z_f = 39.1): "REEXPORT KEEP (flushed)". */
static void test_table_reexport(void **state)
{
    (void)state;
    fp4_audit_tensor t[5];
    memset(t, 0, sizeof t);
    char *names[5] = {"/a", "/b", "/c", "/d", "/e"};
    for (int i = 0; i < 5; i++) {
        t[i].name = names[i];
        t[i].q = qt(FP4_QF_NVFP4, FP4_QP_MODELOPT);
        t[i].layout_fit = FP4_AUDIT_H_DECLARED;
        t[i].requant = (fp4_audit_sums){100.0, 1.0, 99.0, 1000};
        t[i].export_ = t[i].requant;
        t[i].requant_na = (fp4_audit_sums){100.0, 1.5848931924611134, 99.0, 900};
        t[i].export_na = t[i].requant_na;
        t[i].src_nonzero = 1000;
        t[i].flushed = t[i].rq_flushed = 10;
        t[i].scale_bytes = t[i].scale_match = 1;
    }
    for (int i = 3; i < 5; i++) {
        t[i].export_.ee = 1.5848931924611134; /* 18 dB */
        t[i].nonnearest = 50;
    }
    t[4].rq_flushed = 300;
    fp4_audit a;
    memset(&a, 0, sizeof a);
    a.t = t;
    a.n = 5;
    a.pooled_export = a.pooled_requant = (fp4_audit_sums){500.0, 5.0, 495.0, 5000};
    char *buf = NULL;
    size_t len = 0;
    table_of(&a, &buf, &len);
    const char *e = strstr(buf, "\n/e "), *d = strstr(buf, "\n/d "), *aa = strstr(buf, "\n/a ");
    assert_true(e && d && aa);
    assert_ptr_equal(strchr(buf, '\n'), e); /* REEXPORT first, then by score */
    assert_ptr_equal(strchr(e + 1, '\n'), d);
    const char *eol = strchr(e + 1, '\n');
    assert_true(eol - e > 25 && !strncmp(eol - 25, "  REEXPORT KEEP (flushed)", 25));
    eol = strchr(d + 1, '\n');
    assert_true(eol - d > 10 && !strncmp(eol - 10, "  REEXPORT", 10));
    assert_null(strstr(eol, "KEEP (")); /* no other row kept */
    assert_non_null(strstr(buf, "\nREEXPORT: the export is worse than round-to-nearest"));
    assert_non_null(strstr(buf, "\nre-export: /d: the export (18.000 dB) is worse than fp4diag's "
                                "round-to-nearest of its source (20.000 dB, gain -2.000 dB) and "
                                "5.00% of its codes are not nearest: re-export it with "
                                "round-to-nearest\n"));
    free(buf);
    /* none flagged: no legend line */
    t[3].nonnearest = t[4].nonnearest = 0;
    table_of(&a, &buf, &len);
    assert_null(strstr(buf, "REEXPORT"));
    assert_null(strstr(buf, "re-export"));
    free(buf);
}

/* Bucket use of a code histogram: known answers (SPEC §5's B15/B8 and the share at ±6). */
static void test_bucket_use(void **state)
{
    (void)state;
    int64_t h[16] = {0};
    fp4_audit_buckets b = fp4_audit_bucket_use(h); /* empty: undefined */
    assert_true(isnan(b.b15) && isnan(b.b8) && isnan(b.max_frac));
    h[7] = 5; /* every element at +6: one bucket of 15, of 8 */
    b = fp4_audit_bucket_use(h);
    assert_double_rel(b.b15, 1.0 / 15.0, 1e-15);
    assert_double_rel(b.b8, 1.0 / 8.0, 1e-15);
    assert_double_exact(b.max_frac, 1.0);
    /* one element at each of the 15 signed values (code 8, -0, empty): B15 = 1; magnitudes
     * 1/15 at 0, 2/15 at the other seven */
    for (int c = 0; c < 16; c++) h[c] = c == 8 ? 0 : 1;
    b = fp4_audit_bucket_use(h);
    assert_double_rel(b.b15, 1.0, 1e-15);
    const double p1 = 1.0 / 15.0, p2 = 2.0 / 15.0;
    assert_double_rel(b.b8, exp(-(p1 * log(p1) + 7.0 * p2 * log(p2))) / 8.0, 1e-15);
    assert_double_exact(b.max_frac, 2.0 / 15.0);
    /* ±0 merged in B15 but -0 counted apart in the histogram: codes 0 and 8 one bucket */
    memset(h, 0, sizeof h);
    h[0] = h[8] = 3;
    b = fp4_audit_bucket_use(h);
    assert_double_rel(b.b15, 1.0 / 15.0, 1e-15);
    assert_double_exact(b.max_frac, 0.0);
}

/* The round-to-nearest fixtures reproduce every scale byte and the export equals our RTN;
 * the swapped-nibble fixture is named. */
static void test_fixtures(void **state)
{
    (void)state;
    static const char *rtn[] = {"modelopt_nvfp4", "ct_nvfp4", "ct_mxfp4", "gptoss_mxfp4"};
    for (size_t k = 0; k < sizeof rtn / sizeof rtn[0]; k++) {
        char path[256];
        snprintf(path, sizeof path, "testdata/quantized/%s", rtn[k]);
        fp4_audit a;
        assert_int_equal(fp4_audit_run("testdata/quantized/source", path, NULL, 0, &a), FP4_OK);
        assert_int_equal(a.nerrors, 0);
        assert_true(a.n >= 1);
        for (int i = 0; i < a.n; i++) {
            const fp4_audit_tensor *t = &a.t[i];
            assert_int_equal(t->layout_fit, FP4_AUDIT_H_DECLARED);
            assert_int_equal(t->scale_match, t->scale_bytes);
            assert_true(t->scale_bytes > 0);
            assert_double_exact(t->export_.ee, t->requant.ee); /* the export is our RTN */
            assert_true(t->nonnearest * 100 <= t->export_.n); /* under 1 % (near-ties) */
            if (t->q.format == FP4_QF_NVFP4) assert_double_exact(t->global_stored, t->global_rule);
            assert_int_equal(t->group_shared, t->group[0] && t->q.format == FP4_QF_NVFP4 ? 1 : -1);
            assert_false(t->hyp_tried[FP4_AUDIT_H_SWIZZLE]); /* 16..32 rows: one layout only */
            /* our requantization uses every code as the export does, each element counted */
            int64_t n = 0;
            for (int c = 0; c < 16; c++) {
                assert_int_equal(t->rq_histogram[c], t->histogram[c]);
                n += t->rq_histogram[c];
            }
            assert_int_equal(n, t->export_.n);
        }
        for (int c = 0; c < 16; c++) { /* the pool: the sum of the pooled tensors' */
            int64_t e = 0, r = 0;
            for (int i = 0; i < a.n; i++) e += a.t[i].histogram[c], r += a.t[i].rq_histogram[c];
            assert_int_equal(a.pooled_histogram[c], e);
            assert_int_equal(a.pooled_rq_histogram[c], r);
        }
        fp4_audit_free(&a);
    }
    /* ModelOpt MXFP4: its float ceil E8M0 rule reproduced, every code a nearest grid point
     * (its exact midpoints toward zero are ties), the SQNR our round-to-nearest-even's */
    fp4_audit a;
    assert_int_equal(fp4_audit_run("testdata/quantized/source", "testdata/quantized/modelopt_mxfp4",
                                   NULL, 0, &a),
                     FP4_OK);
    assert_int_equal(a.nerrors, 0);
    assert_int_equal(a.n, 4);
    bool tie = false;
    for (int i = 0; i < a.n; i++) {
        const fp4_audit_tensor *t = &a.t[i];
        assert_int_equal(t->q.format, FP4_QF_MXFP4);
        assert_int_equal(t->q.producer, FP4_QP_MODELOPT);
        assert_int_equal(t->layout_fit, FP4_AUDIT_H_DECLARED);
        assert_int_equal(t->scale_match, t->scale_bytes);
        assert_int_equal(t->mx_rule_match[FP4_AUDIT_MX_MODELOPT], t->scale_bytes);
        assert_int_equal(t->scale_rule_fit, -1);
        assert_int_equal(t->nonnearest, 0);
        assert_double_exact(t->export_.ee, t->requant.ee);
        tie = tie || t->export_.xq != t->requant.xq;
    }
    assert_true(tie);
    fp4_audit_free(&a);
    /* the same made with the OCP floor rule, declared ModelOpt: that rule named */
    assert_int_equal(fp4_audit_run("testdata/quantized/source", "testdata/quantized/bad_mx_rule",
                                   NULL, 0, &a),
                     FP4_OK);
    assert_int_equal(a.n, 4);
    for (int i = 0; i < a.n; i++) {
        const fp4_audit_tensor *t = &a.t[i];
        assert_true(t->scale_match < t->scale_bytes);
        assert_int_equal(t->mx_rule_match[FP4_AUDIT_MX_OCP], t->scale_bytes);
        assert_int_equal(t->scale_rule_fit, FP4_AUDIT_MX_OCP);
        assert_int_equal(t->diff[7] + t->diff[8], t->scale_bytes); /* one below, or equal */
    }
    fp4_audit_free(&a);
    const char *sel[] = {"model.layers.0.mlp"};
    assert_int_equal(fp4_audit_run("testdata/quantized/source", "testdata/quantized/bad_nibble",
                                   sel, 1, &a),
                     FP4_OK);
    assert_int_equal(a.n, 1);
    assert_int_equal(a.t[0].layout_fit, FP4_AUDIT_H_NIBBLE_SWAP);
    /* measured under the swapped order that fits (issue 27): a round-to-nearest export, its
     * numbers our requantization's; the declared reading's SQNR kept apart */
    assert_true(a.t[0].nonnearest * 100 < a.t[0].export_.n);
    assert_int_equal(a.t[0].scale_match, a.t[0].scale_bytes);
    assert_double_exact(a.t[0].export_.ee, a.t[0].requant.ee);
    assert_double_exact(a.t[0].export_.ee, a.t[0].hyp[FP4_AUDIT_H_NIBBLE_SWAP].ee);
    assert_true(a.t[0].hyp[FP4_AUDIT_H_DECLARED].ee > 10 * a.t[0].export_.ee);
    assert_non_null(strstr(a.t[0].q.layout, "nibble low=odd (declared low=even)"));
    fp4_audit_free(&a);
    /* swizzled scales in the flat shape: the other scale layout fits */
    assert_int_equal(fp4_audit_run("testdata/quantized/source", "testdata/quantized/bad_swizzle",
                                   NULL, 0, &a),
                     FP4_OK);
    assert_int_equal(a.n, 1);
    assert_true(a.t[0].hyp_tried[FP4_AUDIT_H_SWIZZLE]);
    assert_int_equal(a.t[0].layout_fit, FP4_AUDIT_H_SWIZZLE);
    assert_string_equal(fp4_audit_hypothesis_label(&a.t[0], a.t[0].layout_fit),
                        "scales swizzled 128x4");
    /* its numbers under the swizzled reading: every scale byte the rule's (issue 27) */
    assert_int_equal(a.t[0].scale_match, a.t[0].scale_bytes);
    assert_double_exact(a.t[0].export_.ee, a.t[0].hyp[FP4_AUDIT_H_SWIZZLE].ee);
    assert_double_exact(a.t[0].export_.xq, a.t[0].hyp[FP4_AUDIT_H_SWIZZLE].xq);
    assert_true(a.t[0].hyp[FP4_AUDIT_H_DECLARED].ee > 2 * a.t[0].export_.ee);
    assert_string_equal(a.t[0].q.layout, "nibble low=even, e4m3 scales swizzled 128x4 (declared "
                                         "flat), global multiplied");
    assert_int_equal(a.pooled_elements, 0);
    fp4_audit_free(&a);
    /* k_proj with a global scale of its own: the qkv group does not share one, its scale
     * bytes and global differ from the rule, the others still match */
    assert_int_equal(fp4_audit_run("testdata/quantized/source", "testdata/quantized/bad_fused",
                                   NULL, 0, &a),
                     FP4_OK);
    assert_int_equal(a.n, 4);
    for (int i = 0; i < a.n; i++) {
        const fp4_audit_tensor *t = &a.t[i];
        bool k = strstr(t->name, "k_proj") != NULL, qkv = strstr(t->name, "_proj.weight") &&
                                                          !strstr(t->name, "down_proj");
        assert_int_equal(t->group_shared, qkv ? 0 : -1);
        assert_int_equal(t->layout_fit, FP4_AUDIT_H_DECLARED);
        if (k) { /* its block bytes are its own global scale's: judged under the stored one,
                  * every one the rule's (issue 27); the global scale alone differs, and it is
                  * the rule's from k_proj's own amax */
            assert_int_equal(t->scale_match, t->scale_bytes);
            assert_true(t->global_stored != t->global_rule);
            assert_true(t->tensor_amax < t->group_amax);
            assert_double_exact(t->global_stored,
                                fp4_audit_global_rule(t->q.producer, (float)t->tensor_amax));
        } else {
            assert_int_equal(t->scale_match, t->scale_bytes);
            assert_double_exact(t->global_stored, t->global_rule);
        }
    }
    fp4_audit_free(&a);
    /* q_proj and k_proj are errors entries (missing weight_scale_2, a scale of the wrong
     * shape), yet their source still counts in the qkv amax: v_proj's global scale is the rule's */
    assert_int_equal(fp4_audit_run("testdata/quantized/source", "testdata/quantized/bad_partners",
                                   NULL, 0, &a),
                     FP4_OK);
    assert_int_equal(a.nerrors, 3);
    assert_int_equal(a.n, 1);
    assert_string_equal(a.t[0].name, "model.layers.0.self_attn.v_proj.weight");
    assert_double_exact(a.t[0].global_stored, a.t[0].global_rule);
    assert_int_equal(a.t[0].scale_match, a.t[0].scale_bytes);
    fp4_audit_free(&a);
    /* a pattern selecting no quantized tensor; a checkpoint holding none */
    const char *none[] = {"lm_head.weight"};
    assert_int_equal(fp4_audit_run("testdata/quantized/source",
                                   "testdata/quantized/modelopt_nvfp4", none, 1, &a),
                     FP4_ERR_INPUT);
    fp4_audit_free(&a);
    assert_int_equal(fp4_audit_run("testdata/quantized/source", "testdata/quantized/source",
                                   NULL, 0, &a),
                     FP4_ERR_INPUT);
    fp4_audit_free(&a);
    /* the operands in the wrong roles (issue 27): an export as SOURCE, the two swapped */
    assert_int_equal(fp4_audit_run("testdata/quantized/modelopt_nvfp4",
                                   "testdata/quantized/modelopt_nvfp4", NULL, 0, &a),
                     FP4_ERR_USAGE);
    assert_non_null(strstr(fp4_last_error(), "is itself a quantized export (NVFP4 modelopt"));
    fp4_audit_free(&a);
    assert_int_equal(fp4_audit_run("testdata/quantized/modelopt_nvfp4",
                                   "testdata/quantized/source", NULL, 0, &a),
                     FP4_ERR_USAGE);
    assert_non_null(strstr(fp4_last_error(), "SOURCE and QUANTIZED swapped?"));
    fp4_audit_free(&a);
}

/* The export cut short by another process while the audit reads it (fp4_audit_set_test_hook:
 * cut as tensor `name`'s pass begins, its per-tensor scale copied, nothing else of it read):
 * every read of its packed codes and block scales is under io/mapguard.h, so the tensor is an
 * errors entry saying the file shrank, never SIGBUS, and the tensors the file still holds are
 * audited as before. */
typedef struct cut_at {
    const char *name;
    char file[4200];
    off_t size;
    int fired;
} cut_at;

static void cut_hook(void *ctx, const char *tensor)
{
    cut_at *c = ctx;
    if (strcmp(tensor, c->name) != 0) return;
    assert_int_equal(truncate(c->file, c->size), 0);
    c->fired++;
}

static void copy_into(const char *from, const char *dir, const char *name)
{
    char cmd[8600];
    snprintf(cmd, sizeof cmd, "cp -- '%s' '%s/%s'", from, dir, name);
    assert_int_equal(system(cmd), 0);
}

static const fp4_audit_error *error_of(const fp4_audit *a, const char *tensor)
{
    for (int i = 0; i < a->nerrors; i++)
        if (strcmp(a->errors[i].tensor, tensor) == 0) return &a->errors[i];
    return NULL;
}

static void expect_shrank(const fp4_audit *a, const char *tensor)
{
    const fp4_audit_error *e = error_of(a, tensor);
    assert_non_null(e);
    assert_int_equal(e->status, FP4_ERR_INPUT);
    char want[512];
    snprintf(want, sizeof want, "%s: the file shrank while it was read (truncated)", tensor);
    if (!strstr(e->message, want)) fail_msg("%s: %s", tensor, e->message);
}

/* ModelOpt NVFP4 (q, k, v in the first page; down_proj's codes and scales from byte 3716 on:
 * its codes past 4096 and its scales are gone), on `dev`: the other three as the whole file
 * gives them, bit for bit. */
static void shrunk_modelopt(fp4_device dev)
{
    static const char dn[] = "model.layers.0.mlp.down_proj.weight";
    fp4_audit_set_device(dev);
    fp4_audit ref;
    assert_int_equal(fp4_audit_run("testdata/quantized/source", "testdata/quantized/modelopt_nvfp4",
                                   NULL, 0, &ref),
                     FP4_OK);
    assert_int_equal(ref.nerrors, 0);
    assert_int_equal(ref.n, 4);
    char *d = fp4t_tmpdir();
    copy_into("testdata/quantized/modelopt_nvfp4/model.safetensors", d, "model.safetensors");
    copy_into("testdata/quantized/modelopt_nvfp4/hf_quant_config.json", d, "hf_quant_config.json");
    cut_at c = {.name = dn, .size = 4096};
    snprintf(c.file, sizeof c.file, "%s/model.safetensors", d);
    fp4_audit_set_test_hook(cut_hook, &c);
    fp4_audit a;
    assert_int_equal(fp4_audit_run("testdata/quantized/source", d, NULL, 0, &a), FP4_OK);
    fp4_audit_set_test_hook(NULL, NULL);
    assert_int_equal(c.fired, 1);
    assert_int_equal(a.nerrors, 1);
    expect_shrank(&a, dn);
    int audited = 0;
    for (int i = 0; i < a.n; i++) {
        const fp4_audit_tensor *t = &a.t[i];
        if (strcmp(t->name, dn) == 0) {
            assert_int_equal(t->layout_fit, -1);
            continue;
        }
        const fp4_audit_tensor *r = NULL;
        for (int j = 0; j < ref.n; j++)
            if (strcmp(ref.t[j].name, t->name) == 0) r = &ref.t[j];
        assert_non_null(r);
        assert_int_equal(t->layout_fit, FP4_AUDIT_H_DECLARED);
        assert_int_equal(t->scale_match, r->scale_match);
        assert_int_equal(t->scale_bytes, r->scale_bytes);
        assert_int_equal(t->nonnearest, r->nonnearest);
        assert_memory_equal(t->histogram, r->histogram, sizeof t->histogram);
        assert_memory_equal(&t->export_, &r->export_, sizeof t->export_);
        assert_memory_equal(&t->requant, &r->requant, sizeof t->requant);
        audited++;
    }
    assert_int_equal(audited, 3);
    assert_string_equal(a.device, ref.device);
    fp4_audit_free(&a);
    fp4_audit_free(&ref);
    fp4_audit_set_device(FP4_DEVICE_CPU);
    fp4t_rmtree(d);
}

static void test_shrunk(void **state)
{
    (void)state;
    shrunk_modelopt(FP4_DEVICE_CPU);
    /* gpt-oss' square down_proj ([E, R, K], R = K = 64) against transformers' [E, K, R]: its
     * orientation is chosen from the first expert's decode, the first read of its codes (from
     * byte 36788 on; the file cut to 36864) */
    static const char dn[] = "model.layers.0.mlp.experts.down_proj";
    char *d = fp4t_tmpdir();
    copy_into("testdata/quantized/producer/gptoss_mxfp4/model.safetensors", d,
              "model.safetensors");
    copy_into("testdata/quantized/producer/gptoss_mxfp4/config.json", d, "config.json");
    cut_at c = {.name = dn, .size = 36864};
    snprintf(c.file, sizeof c.file, "%s/model.safetensors", d);
    fp4_audit_set_test_hook(cut_hook, &c);
    fp4_audit a;
    const char *sel[] = {dn};
    assert_int_equal(fp4_audit_run("testdata/quantized/producer/gptoss_source", d, sel, 1, &a),
                     FP4_OK);
    fp4_audit_set_test_hook(NULL, NULL);
    assert_int_equal(c.fired, 1);
    assert_int_equal(a.nerrors, 1);
    expect_shrank(&a, dn);
    fp4_audit_free(&a);
    fp4t_rmtree(d);
    /* on a GPU the stored bytes are copied under the guard before their upload */
    fp4_backend *be = NULL;
    const bool gpu = fp4_backend_open(FP4_DEVICE_CUDA, 1, &be) == FP4_OK && fp4_backend_audits(be);
    if (be) fp4_backend_close(be);
    fp4_error_clear();
    if (gpu) shrunk_modelopt(FP4_DEVICE_CUDA);
    else print_message("[ SKIP     ] no CUDA GPU here: the device audit of a shrunk file not run\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* first: cmocka resets SIGBUS's action after each test, so io/mapguard's handler,
         * installed once, stands only in the first test that maps a file */
        cmocka_unit_test(test_shrunk),
        cmocka_unit_test(test_is_nearest),   cmocka_unit_test(test_e2m1_rtne),
        cmocka_unit_test(test_global_rules), cmocka_unit_test(test_block_rules),
        cmocka_unit_test(test_sqnr),
        cmocka_unit_test(test_table_rank),
        cmocka_unit_test(test_table_keep_nonamax),
        cmocka_unit_test(test_reexport_rule),
        cmocka_unit_test(test_table_reexport),
        cmocka_unit_test(test_fixtures),
        cmocka_unit_test(test_bucket_use),
    };
    return cmocka_run_group_tests_name("audit", tests, NULL, NULL);
}
