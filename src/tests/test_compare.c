/* test_compare.c — compare.c: matching by key, each threshold at and beyond its edge, null
 * SQNR and status changes, missing/added results, gemm paths, and the unreadable-report errors;
 * the direction (higher SQNR and bucket ratios, alpha closer to 1: improved) and the overall
 * judgement of which report is better. */
#include "testutil.h"

#include <math.h>

#include "report/compare.h"

/* A one-tensor sqnr report with two results whose metrics the test chooses. */
static char *mk(const char *cmd, const char *sqnr_a, const char *status_a, double alpha_a,
                double b15_a, const char *sqnr_b)
{
    char *s = malloc(4096);
    assert_non_null(s);
    snprintf(s, 4096,
             "{\"schema\":\"fp4diag.report/1\",\"command\":\"%s\",\"config\":{\"seed\":0},"
             "\"tensors\":[{\"name\":\"/blocks/0/fc1/weight\",\"results\":["
             "{\"format\":\"e2m1\",\"scale\":\"fp32\",\"block\":16,\"rht\":false,"
             "\"rounding\":\"rtne\",\"sqnr_db\":%s,\"sqnr_status\":\"%s\",\"alpha\":%.17g,"
             "\"bucket_ratio_15\":%.17g,\"bucket_ratio_8\":0.9},"
             "{\"format\":\"e2m1\",\"scale\":\"fp32\",\"block\":16,"
             "\"rht\":{\"size\":16,\"signs\":\"te\"},\"rounding\":\"rtne\",\"sqnr_db\":%s,"
             "\"sqnr_status\":\"ok\",\"alpha\":0.99,\"bucket_ratio_15\":0.8,"
             "\"bucket_ratio_8\":0.9}]}]}",
             cmd, sqnr_a, status_a, alpha_a, b15_a, sqnr_b);
    return s;
}

static fp4_compare_result run(const char *a, const char *b, const fp4_compare_opts *o,
                              fp4_status want)
{
    fp4_compare_result r;
    assert_int_equal(fp4_compare_texts(a, "BASE", b, "NEW", o, &r), want);
    return r;
}

static void test_identical_is_same(void **state)
{
    (void)state;
    char *a = mk("sqnr", "20.5", "ok", 0.99, 0.8, "21.0");
    fp4_compare_result r = run(a, a, NULL, FP4_OK);
    assert_int_equal(r.nrows, 2);
    assert_int_equal(r.nsame, 2);
    assert_int_equal(r.nregressed, 0);
    assert_string_equal(r.command, "sqnr");
    assert_string_equal(r.rows[0].variant, "e2m1/fp32/16/rht=off/rtne");
    assert_string_equal(r.rows[1].variant, "e2m1/fp32/16/rht=16:te/rtne");
    assert_string_equal(r.config_diff, "");
    fp4_compare_result_free(&r);
    free(a);
}

static void test_sqnr_drop_threshold(void **state)
{
    (void)state;
    char *a = mk("sqnr", "20.5", "ok", 0.99, 0.8, "21.0");
    char *drop1 = mk("sqnr", "19.5", "ok", 0.99, 0.8, "21.0");
    char *edge = mk("sqnr", "20.45", "ok", 0.99, 0.8, "21.0");   /* drop = default 0.05 */
    char *rise = mk("sqnr", "25.0", "ok", 0.99, 0.8, "21.0");
    fp4_compare_result r = run(a, drop1, NULL, FP4_OK);
    assert_int_equal(r.nregressed, 1);
    assert_int_equal(r.rows[0].state, FP4_CMP_REGRESSED);
    assert_int_equal(r.rows[0].fails, FP4_CMP_FAIL_SQNR);
    assert_true(fabs(r.rows[0].sqnr[0] - r.rows[0].sqnr[1] - 1.0) < 1e-12);
    assert_int_equal(r.rows[1].state, FP4_CMP_SAME);
    fp4_compare_result_free(&r);
    fp4_compare_opts o = fp4_compare_opts_default();
    o.max_sqnr_drop_db = 1.0; /* equal to the drop: passes */
    r = run(a, drop1, &o, FP4_OK);
    assert_int_equal(r.nregressed, 0);
    assert_int_equal(r.nchanged, 1);
    fp4_compare_result_free(&r);
    o.max_sqnr_drop_db = 0.99;
    r = run(a, drop1, &o, FP4_OK);
    assert_int_equal(r.nregressed, 1);
    fp4_compare_result_free(&r);
    r = run(a, edge, NULL, FP4_OK);
    assert_int_equal(r.nregressed, 0);
    fp4_compare_result_free(&r);
    r = run(a, rise, NULL, FP4_OK); /* a rise never fails: an improvement */
    assert_int_equal(r.nregressed, 0);
    assert_int_equal(r.rows[0].state, FP4_CMP_IMPROVED);
    assert_int_equal(r.nimproved, 1);
    /* overall: no pooled rows, so the mean over both results: (+4.5 + 0) / 2, NEW better */
    assert_int_equal(r.npaired, 2);
    assert_int_equal(r.npooled, 0);
    assert_true(fabs(r.dsqnr_mean - 2.25) < 1e-12);
    assert_true(fabs(r.dsqnr_max - 4.5) < 1e-12 && r.dsqnr_min == 0.0);
    assert_int_equal(r.nup, 1);
    assert_int_equal(r.ndown, 0);
    assert_int_equal(r.better, 1);
    fp4_compare_result_free(&r);
    r = run(rise, a, NULL, FP4_OK); /* the other way: BASE better, one lower */
    assert_int_equal(r.better, -1);
    assert_int_equal(r.ndown, 1);
    fp4_compare_result_free(&r);
    r = run(a, edge, NULL, FP4_OK); /* mean -0.025 dB: within 0.05 dB, neither */
    assert_int_equal(r.better, 0);
    assert_int_equal(r.rows[0].state, FP4_CMP_CHANGED);
    fp4_compare_result_free(&r);
    free(a), free(drop1), free(edge), free(rise);
}

static void test_alpha_and_buckets(void **state)
{
    (void)state;
    char *a = mk("sqnr", "20.5", "ok", 0.99, 0.8, "21.0");
    char *up = mk("sqnr", "20.5", "ok", 0.995, 0.8, "21.0");   /* 0.005 closer to 1 */
    char *over = mk("sqnr", "20.5", "ok", 1.005, 0.8, "21.0"); /* as far from 1 as 0.995 */
    char *b15 = mk("sqnr", "20.5", "ok", 0.99, 0.75, "21.0");  /* B15 drop 0.05 */
    char *b15up = mk("sqnr", "20.5", "ok", 0.99, 0.95, "21.0");
    /* alpha closer to 1 is an improvement, never a regression */
    fp4_compare_result r = run(a, up, NULL, FP4_OK);
    assert_int_equal(r.rows[0].fails, 0);
    assert_int_equal(r.rows[0].state, FP4_CMP_IMPROVED);
    assert_int_equal(r.ncloser, 1);
    fp4_compare_result_free(&r);
    /* away from 1 by 0.005 > 0.001: a regression */
    r = run(up, a, NULL, FP4_OK);
    assert_int_equal(r.rows[0].fails, FP4_CMP_FAIL_ALPHA);
    assert_int_equal(r.nfarther, 1);
    fp4_compare_result_free(&r);
    /* past 1 by as much as below it: the same distance, neither better nor worse */
    r = run(up, over, NULL, FP4_OK);
    assert_int_equal(r.rows[0].fails, 0);
    assert_int_equal(r.rows[0].state, FP4_CMP_CHANGED);
    fp4_compare_result_free(&r);
    r = run(over, a, NULL, FP4_OK);
    assert_int_equal(r.rows[0].fails, FP4_CMP_FAIL_ALPHA);
    fp4_compare_result_free(&r);
    fp4_compare_opts o = fp4_compare_opts_default();
    o.max_alpha_change = 0.01;
    r = run(up, a, &o, FP4_OK);
    assert_int_equal(r.nregressed, 0);
    assert_int_equal(r.rows[0].state, FP4_CMP_CHANGED);
    fp4_compare_result_free(&r);
    r = run(a, b15, NULL, FP4_OK);
    assert_int_equal(r.rows[0].fails, FP4_CMP_FAIL_B15);
    fp4_compare_result_free(&r);
    o = fp4_compare_opts_default();
    o.max_bucket_drop = 0.06;
    r = run(a, b15, &o, FP4_OK);
    assert_int_equal(r.nregressed, 0);
    fp4_compare_result_free(&r);
    r = run(a, b15up, NULL, FP4_OK);
    assert_int_equal(r.nregressed, 0);
    assert_int_equal(r.rows[0].state, FP4_CMP_IMPROVED);
    fp4_compare_result_free(&r);
    free(a), free(up), free(over), free(b15), free(b15up);
}

static void test_null_sqnr_status(void **state)
{
    (void)state;
    char *a = mk("sqnr", "20.5", "ok", 0.99, 0.8, "21.0");
    char *zero = mk("sqnr", "null", "zero_signal", 0.99, 0.8, "21.0");
    char *exact = mk("sqnr", "null", "exact", 0.99, 0.8, "21.0");
    fp4_compare_result r = run(a, zero, NULL, FP4_OK);
    assert_int_equal(r.rows[0].fails, FP4_CMP_FAIL_STATUS);
    assert_true(isnan(r.rows[0].sqnr[1]));
    assert_string_equal(r.rows[0].status[1], "zero_signal");
    fp4_compare_result_free(&r);
    r = run(zero, a, NULL, FP4_OK);
    assert_int_equal(r.rows[0].fails, FP4_CMP_FAIL_STATUS);
    fp4_compare_result_free(&r);
    r = run(a, exact, NULL, FP4_OK); /* to +inf dB: not a drop, but shown */
    assert_int_equal(r.nregressed, 0);
    assert_int_equal(r.rows[0].state, FP4_CMP_CHANGED);
    fp4_compare_result_free(&r);
    r = run(exact, a, NULL, FP4_OK); /* from +inf dB to finite: a drop */
    assert_int_equal(r.rows[0].fails, FP4_CMP_FAIL_STATUS);
    fp4_compare_result_free(&r);
    r = run(zero, zero, NULL, FP4_OK);
    assert_int_equal(r.nsame, 2);
    fp4_compare_result_free(&r);
    free(a), free(zero), free(exact);
}

/* s with its first `from` replaced by `to` (the test's own fixtures: `from` is there). */
static char *edit(const char *s, const char *from, const char *to)
{
    const char *at = strstr(s, from);
    assert_non_null(at);
    char *t = malloc(strlen(s) + strlen(to) + 1);
    assert_non_null(t);
    sprintf(t, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
    return t;
}

/* A report holding numbers no run writes is invalid (FP4_ERR_INPUT naming it and the field),
 * never compared: a number past the double range (read as infinity), an SQNR null beside
 * status "ok" or a number beside another status, an unknown status, a "command" that is not
 * the run's (argv), counts that are not whole numbers in [0, 2^53]. */
#define B8 "\"bucket_ratio_8\":0.9"
static void test_forged_numbers(void **state)
{
    (void)state;
    char *a = mk("sqnr", "20.5", "ok", 0.99, 0.8, "21.0");
    char *bad[] = {
        mk("sqnr", "1e400", "ok", 0.99, 0.8, "21.0"),
        mk("sqnr", "20.5", "ok", 0.99, 0.8, "-1e400"),
        mk("sqnr", "null", "ok", 0.99, 0.8, "21.0"),
        mk("sqnr", "20.5", "exact", 0.99, 0.8, "21.0"),
        mk("sqnr", "null", "lost", 0.99, 0.8, "21.0"),
        edit(a, "\"alpha\":", "\"alpha\":1e999,\"x\":"),
        edit(a, "\"config\"", "\"argv\":[\"fp4diag\",\"bias\",\"m.h5\"],\"config\""),
        edit(a, "\"config\"", "\"argv\":[\"fp4diag\"],\"config\""),
        edit(a, B8, B8 ",\"counts\":{\"elements\":1e300}"),
        edit(a, B8, B8 ",\"counts\":{\"elements\":-5}"),
        edit(a, B8, B8 ",\"counts\":{\"elements\":8,\"nan\":0.5}"),
        edit(a, B8, B8 ",\"counts\":{\"nan\":0}"),
    };
    static const char *const why[] = {
        "out of the range of a double", "out of the range of a double", "beside sqnr_status",
        "beside sqnr_status", "sqnr_status", "out of the range of a double",
        "the run was 'bias'", "argv", "counts.elements", "counts.elements", "counts.nan",
        "without \"elements\"",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        fp4_compare_result r;
        assert_int_equal(fp4_compare_texts(a, "BASE", bad[i], "NEW", NULL, &r), FP4_ERR_INPUT);
        assert_non_null(strstr(fp4_last_error(), "NEW"));
        if (!strstr(fp4_last_error(), why[i])) fail_msg("case %zu: %s", i, fp4_last_error());
        fp4_compare_result_free(&r);
        free(bad[i]);
    }
    /* what a run writes passes: its own argv, whole counts */
    char *ok = edit(a, "\"config\"", "\"argv\":[\"fp4diag\",\"sqnr\",\"m.h5\"],\"config\"");
    char *ok2 = edit(ok, B8, B8 ",\"counts\":{\"elements\":9007199254740992,\"nan\":0}");
    fp4_compare_result r = run(a, ok2, NULL, FP4_OK);
    assert_int_equal(r.nsame, 2);
    fp4_compare_result_free(&r);
    free(ok), free(ok2), free(a);
}

static const char one_result[] =
    "{\"schema\":\"fp4diag.report/1\",\"command\":\"sqnr\",\"config\":{\"seed\":1},"
    "\"tensors\":[{\"name\":\"/blocks/0/fc1/weight\",\"results\":["
    "{\"format\":\"e2m1\",\"scale\":\"fp32\",\"block\":16,\"rht\":false,\"rounding\":\"rtne\","
    "\"sqnr_db\":20.5,\"sqnr_status\":\"ok\",\"alpha\":0.99,\"bucket_ratio_15\":0.8,"
    "\"bucket_ratio_8\":0.9}]},{\"name\":\"/extra\",\"results\":[]}],"
    "\"summary\":{\"results\":[{\"format\":\"e2m1\",\"scale\":\"fp32\",\"block\":16,"
    "\"rht\":false,\"rounding\":\"rtne\",\"sqnr_db\":20.5,\"alpha\":0.99}]}}";

static void test_missing_and_added(void **state)
{
    (void)state;
    char *two = mk("sqnr", "20.5", "ok", 0.99, 0.8, "21.0");
    fp4_compare_result r = run(two, one_result, NULL, FP4_OK);
    /* BASE's rht result is missing from NEW; NEW's summary result is added */
    assert_int_equal(r.nrows, 3);
    assert_int_equal(r.nmissing, 1);
    assert_int_equal(r.nregressed, 1);
    assert_int_equal(r.rows[1].fails, FP4_CMP_FAIL_MISSING);
    assert_int_equal(r.nadded, 1);
    assert_int_equal(r.rows[2].state, FP4_CMP_ADDED);
    assert_string_equal(r.rows[2].name, "(summary)");
    assert_string_equal(r.config_diff, "seed: 0 vs 1");
    fp4_compare_result_free(&r);
    r = run(one_result, two, NULL, FP4_OK); /* the summary result is missing now */
    assert_int_equal(r.nmissing, 1);
    assert_int_equal(r.nadded, 1);
    fp4_compare_result_free(&r);
    free(two);
}

static const char gemm_a[] =
    "{\"schema\":\"fp4diag.report/1\",\"command\":\"gemm\",\"layers\":["
    "{\"name\":\"/fc2\",\"recipe\":\"ufp4\",\"paths\":["
    "{\"path\":\"fprop\",\"sqnr_db\":17.0,\"sqnr_status\":\"ok\",\"eta\":0.99},"
    "{\"path\":\"wgrad\",\"sqnr_db\":16.0,\"sqnr_status\":\"ok\",\"eta\":0.98}]}]}";
static const char gemm_b[] =
    "{\"schema\":\"fp4diag.report/1\",\"command\":\"gemm\",\"layers\":["
    "{\"name\":\"/fc2\",\"recipe\":\"ufp4\",\"paths\":["
    "{\"path\":\"wgrad\",\"sqnr_db\":16.0,\"sqnr_status\":\"ok\",\"eta\":0.97},"
    "{\"path\":\"fprop\",\"sqnr_db\":16.0,\"sqnr_status\":\"ok\",\"eta\":0.99}]}]}";

static void test_gemm_paths(void **state)
{
    (void)state;
    fp4_compare_result r = run(gemm_a, gemm_b, NULL, FP4_OK);
    assert_string_equal(r.command, "gemm");
    assert_int_equal(r.nrows, 2);
    assert_string_equal(r.rows[0].variant, "ufp4/fprop");
    assert_int_equal(r.rows[0].fails, FP4_CMP_FAIL_SQNR);
    assert_int_equal(r.rows[1].fails, FP4_CMP_FAIL_ALPHA); /* eta 0.98 -> 0.97 */
    assert_true(isnan(r.rows[1].b15[0]));
    fp4_compare_result_free(&r);
}

static void test_grid_exact(void **state)
{
    (void)state;
    const char *a = "{\"schema\":\"fp4diag.report/1\",\"command\":\"grid\",\"grids\":["
                    "{\"format\":\"e2m1\",\"levels\":[{\"q\":0,\"analytic_bias\":-0.125}]},"
                    "{\"format\":\"int4\",\"levels\":[{\"q\":0,\"analytic_bias\":-0.25}]}]}";
    const char *b = "{\"schema\":\"fp4diag.report/1\",\"command\":\"grid\",\"grids\":["
                    "{\"format\":\"e2m1\",\"levels\":[{\"q\":0,\"analytic_bias\":-0.12}]},"
                    "{\"format\":\"int4\",\"levels\":[{\"q\":0,\"analytic_bias\":-0.25}]}]}";
    fp4_compare_result r = run(a, a, NULL, FP4_OK);
    assert_int_equal(r.nsame, 2);
    fp4_compare_result_free(&r);
    r = run(a, b, NULL, FP4_OK);
    assert_int_equal(r.nregressed, 1);
    assert_string_equal(r.rows[0].name, "e2m1");
    assert_int_equal(r.rows[0].fails, FP4_CMP_FAIL_GRID);
    assert_int_equal(r.rows[1].state, FP4_CMP_SAME);
    fp4_compare_result_free(&r);
}

static void test_input_file_noted(void **state)
{
    (void)state;
    const char *a = "{\"schema\":\"fp4diag.report/1\",\"command\":\"sqnr\",\"input\":{\"file\":"
                    "\"a.h5\"},\"config\":{\"seed\":0},\"tensors\":[]}";
    const char *b = "{\"schema\":\"fp4diag.report/1\",\"command\":\"sqnr\",\"input\":{\"file\":"
                    "\"b.h5\"},\"config\":{\"seed\":2},\"tensors\":[]}";
    fp4_compare_result r = run(a, b, NULL, FP4_OK);
    assert_string_equal(r.config_diff, "input: a.h5 vs b.h5; seed: 0 vs 2");
    assert_int_equal(r.nrows, 0);
    fp4_compare_result_free(&r);
}

static void test_unreadable_reports(void **state)
{
    (void)state;
    char *a = mk("sqnr", "20.5", "ok", 0.99, 0.8, "21.0");
    char *rht = mk("rht", "20.5", "ok", 0.99, 0.8, "21.0");
    const char *bad[] = {
        "garbage",
        "",
        "[1, 2]",
        "{\"schema\":\"fp4diag.report/1\",\"command\":\"sqnr\",\"tensors\":[]} trailing",
        "{\"schema\":\"other/1\",\"command\":\"sqnr\",\"tensors\":[]}",
        "{\"command\":\"sqnr\",\"tensors\":[]}",
        "{\"schema\":\"fp4diag.report/1\",\"tensors\":[]}",
        "{\"schema\":\"fp4diag.report/1\",\"command\":\"sqnr\"}",
        "{\"schema\":\"fp4diag.report/1\",\"command\":\"sqnr\",\"tensors\":[{\"name\":\"/a\","
        "\"results\":[{\"format\":\"e2m1\",\"scale\":\"fp32\",\"rht\":false,"
        "\"rounding\":\"rtne\"}]}]}", /* no block */
        "{\"schema\":\"fp4diag.report/1\",\"command\":\"sqnr\",\"tensors\":[{\"name\":\"/a\","
        "\"results\":[{\"format\":\"e2m1\",\"scale\":\"fp32\",\"block\":16,\"rht\":true,"
        "\"rounding\":\"rtne\"}]}]}", /* rht neither false nor an object */
        "{\"schema\":\"fp4diag.report/1\",\"command\":\"sqnr\",\"tensors\":[{\"name\":\"/a\","
        "\"results\":[{\"format\":\"e2m1\",\"scale\":\"fp32\",\"block\":16,\"rht\":false,"
        "\"rounding\":\"rtne\",\"sqnr_db\":\"20\"}]}]}", /* sqnr_db a string */
        "{\"schema\":\"fp4diag.report/1\",\"command\":\"sqnr\",\"tensors\":[{\"name\":\"/a\","
        "\"results\":[{\"format\":\"e2m1\",\"scale\":\"fp32\",\"block\":16,\"rht\":false,"
        "\"rounding\":\"rtne\"},{\"format\":\"e2m1\",\"scale\":\"fp32\",\"block\":16,"
        "\"rht\":false,\"rounding\":\"rtne\"}]}]}", /* the same key twice */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        fp4_compare_result r;
        assert_int_equal(fp4_compare_texts(a, "BASE", bad[i], "NEW", NULL, &r), FP4_ERR_INPUT);
        fp4_compare_result_free(&r);
        assert_int_equal(fp4_compare_texts(bad[i], "BASE", a, "NEW", NULL, &r), FP4_ERR_INPUT);
        assert_non_null(strstr(fp4_last_error(), "BASE"));
        fp4_compare_result_free(&r);
    }
    fp4_compare_result r;
    assert_int_equal(fp4_compare_texts(a, "BASE", gemm_a, "NEW", NULL, &r), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "not comparable"));
    fp4_compare_result_free(&r);
    /* an sqnr and an rht report hold the same result objects: compared by key, as "analysis" */
    r = run(a, rht, NULL, FP4_OK);
    assert_string_equal(r.command, "analysis");
    assert_int_equal(r.nrows, 2);
    assert_int_equal(r.nsame, 2);
    fp4_compare_result_free(&r);
    free(a), free(rht);
}

/* Key fields that differ are named in config_diff; --ignore-key pairs results across them. */
static void test_ignore_key(void **state)
{
    (void)state;
    char *a = mk("sqnr", "20.5", "ok", 0.99, 0.8, "21.0");
    char *b = mk("sqnr", "20.5", "ok", 0.99, 0.8, "21.0");
    /* b: scale nvfp4 in its results and config; formats differ in the config too */
    char *p;
    while ((p = strstr(b, "\"fp32\""))) memcpy(p, "\"mx04\"", 6);
    char *cb = strstr(b, "\"config\":{\"seed\":0}");
    assert_non_null(cb);
    char *b2 = malloc(strlen(b) + 128), *a2 = malloc(strlen(a) + 128);
    snprintf(b2, strlen(b) + 128, "%.*s\"config\":{\"seed\":0,\"scale\":\"mx04\","
             "\"formats\":[\"int4\"]}%s", (int)(cb - b), b, cb + strlen("\"config\":{\"seed\":0}"));
    cb = strstr(a, "\"config\":{\"seed\":0}");
    snprintf(a2, strlen(a) + 128, "%.*s\"config\":{\"seed\":0,\"scale\":\"fp32\","
             "\"formats\":[\"e2m1\"]}%s", (int)(cb - a), a, cb + strlen("\"config\":{\"seed\":0}"));
    fp4_compare_result r = run(a2, b2, NULL, FP4_OK);
    assert_int_equal(r.nmissing, 2);
    assert_int_equal(r.nadded, 2);
    assert_non_null(strstr(r.config_diff, "scale: \"fp32\" vs \"mx04\""));
    assert_non_null(strstr(r.config_diff, "formats: [\"e2m1\"] vs [\"int4\"]"));
    assert_int_equal(r.key_diff, FP4_CMP_KEY_SCALE | FP4_CMP_KEY_FORMAT);
    assert_int_equal(r.pair_keys, FP4_CMP_KEY_SCALE); /* the results differ in scale alone */
    fp4_compare_result_free(&r);
    fp4_compare_opts o = fp4_compare_opts_default();
    assert_int_equal(fp4_compare_ignore_parse("scale", &o.ignore), FP4_OK);
    r = run(a2, b2, &o, FP4_OK);
    assert_int_equal(r.nrows, 2);
    assert_int_equal(r.nsame, 2);
    assert_string_equal(r.rows[0].variant, "e2m1/*/16/rht=off/rtne");
    assert_int_equal(r.key_diff, FP4_CMP_KEY_FORMAT);
    fp4_compare_result_free(&r);
    unsigned bits = 0;
    assert_int_equal(fp4_compare_ignore_parse("recipe,block", &bits), FP4_OK);
    assert_int_equal(bits, FP4_CMP_KEY_RECIPE | FP4_CMP_KEY_BLOCK);
    assert_int_equal(fp4_compare_ignore_parse("scale,bogus", &bits), FP4_ERR_USAGE);
    assert_int_equal(fp4_compare_ignore_parse("", &bits), FP4_ERR_USAGE);
    free(a), free(b), free(a2), free(b2);
}

/* Nothing pairs (an NVFP4 and an MXFP4 report: scale and block differ): pair_keys names the
 * exact key fields to leave out, computed from the results, whatever was ignored already
 * (issue 29); 0 once something pairs or when no tensor is shared; gemm: the recipe. */
static void test_pair_keys(void **state)
{
    (void)state;
    char *a = mk("sqnr", "20.5", "ok", 0.99, 0.8, "21.0");
    char *b = mk("sqnr", "20.5", "ok", 0.99, 0.8, "21.0");
    char *p;
    while ((p = strstr(b, "\"fp32\""))) memcpy(p, "\"mx04\"", 6);
    while ((p = strstr(b, "\"block\":16"))) memcpy(p, "\"block\":32", 10);
    fp4_compare_result r = run(a, b, NULL, FP4_OK);
    assert_int_equal(r.nmissing, 2);
    assert_int_equal(r.pair_keys, FP4_CMP_KEY_SCALE | FP4_CMP_KEY_BLOCK);
    char list[64];
    fp4_compare_keys_list(r.pair_keys, list, sizeof list);
    assert_string_equal(list, "scale,block");
    fp4_compare_result_free(&r);
    fp4_compare_opts o = fp4_compare_opts_default();
    o.ignore = FP4_CMP_KEY_SCALE; /* not enough: still the whole list */
    r = run(a, b, &o, FP4_OK);
    assert_int_equal(r.nmissing, 2);
    assert_int_equal(r.pair_keys, FP4_CMP_KEY_SCALE | FP4_CMP_KEY_BLOCK);
    fp4_compare_result_free(&r);
    o.ignore = FP4_CMP_KEY_SCALE | FP4_CMP_KEY_BLOCK;
    r = run(a, b, &o, FP4_OK);
    assert_int_equal(r.nmissing, 0);
    assert_int_equal(r.pair_keys, 0);
    fp4_compare_result_free(&r);
    /* some pair: no suggestion */
    r = run(a, one_result, NULL, FP4_OK);
    assert_int_equal(r.pair_keys, 0);
    fp4_compare_result_free(&r);
    /* no tensor in common: nothing would pair */
    while ((p = strstr(b, "/blocks/0/"))) memcpy(p, "/blocks/1/", 10);
    r = run(a, b, NULL, FP4_OK);
    assert_int_equal(r.nmissing, 2);
    assert_int_equal(r.pair_keys, 0);
    fp4_compare_result_free(&r);
    /* gemm: two recipes */
    char *g = strdup(gemm_b);
    p = strstr(g, "ufp4");
    memcpy(p, "nvfp", 4);
    r = run(gemm_a, g, NULL, FP4_OK);
    assert_int_equal(r.pair_keys, FP4_CMP_KEY_RECIPE);
    fp4_compare_result_free(&r);
    fp4_compare_keys_list(FP4_CMP_KEY_FORMAT | FP4_CMP_KEY_RHT | FP4_CMP_KEY_ROUNDING |
                              FP4_CMP_KEY_RECIPE, list, sizeof list);
    assert_string_equal(list, "format,rht,rounding,recipe");
    fp4_compare_keys_list(0, list, sizeof list);
    assert_string_equal(list, "");
    free(a), free(b), free(g);
}

static void test_files(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    char p[4200], q[4200];
    snprintf(p, sizeof p, "%s/a.json", dir);
    snprintf(q, sizeof q, "%s/absent.json", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(gemm_a, f);
    fclose(f);
    fp4_compare_result r;
    assert_int_equal(fp4_compare_files(p, p, NULL, &r), FP4_OK);
    assert_int_equal(r.nsame, 2);
    fp4_compare_result_free(&r);
    assert_int_equal(fp4_compare_files(p, q, NULL, &r), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "absent.json"));
    fp4_compare_result_free(&r);
    assert_int_equal(fp4_compare_files("-", "-", NULL, &r), FP4_ERR_INPUT);
    fp4_compare_result_free(&r);
    fp4t_rmtree(dir);
}

/* fp4_report_parse_cost: values counted as cJSON allocates them (objects, arrays, keys,
 * strings with escaped quotes, numbers, literals), whitespace and separators free; the text's
 * bytes added. */
static void test_parse_cost(void **state)
{
    (void)state;
    const struct {
        const char *text;
        int64_t values;
    } cases[] = {
        {"", 0},
        {"1", 1},
        {"[]", 1},
        {"{\"a\":[1,2,\"x\\\"y\"],\"b\":true}", 8},
        {"{\n\t\"a\":\t[1, -2.5e3, null],\n\t\"b\":\t\"]\\\\\"\n}", 8},
        {"[1,1,1,1,1,1,1,1,1,1]", 11},
        {"\"unterminated", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t len = strlen(cases[i].text);
        assert_int_equal(fp4_report_parse_cost(cases[i].text, len),
                         cases[i].values * FP4_REPORT_VALUE_BYTES + (int64_t)len);
    }
}

/* A report file costing more than the budget left is refused and not kept; the budget falls
 * by each report's cost. */
static void test_read_budget(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/r.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("[1,2,3]", f); /* 4 values, 7 bytes */
    assert_int_equal(fclose(f), 0);
    const int64_t cost = 4 * FP4_REPORT_VALUE_BYTES + 7;
    int64_t budget = 2 * cost;
    char *t = NULL;
    assert_int_equal(fp4_report_file_read_budget(path, &budget, &t), FP4_OK);
    assert_string_equal(t, "[1,2,3]");
    free(t);
    assert_int_equal(budget, cost);
    assert_int_equal(fp4_report_file_read_budget(path, &budget, &t), FP4_OK);
    free(t);
    assert_int_equal(budget, 0);
    assert_int_equal(fp4_report_file_read_budget(path, &budget, &t), FP4_ERR_INPUT);
    assert_null(t);
    assert_int_equal(budget, 0);
    fp4t_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identical_is_same),  cmocka_unit_test(test_sqnr_drop_threshold),
        cmocka_unit_test(test_alpha_and_buckets),  cmocka_unit_test(test_null_sqnr_status),
        cmocka_unit_test(test_forged_numbers),
        cmocka_unit_test(test_missing_and_added),  cmocka_unit_test(test_gemm_paths),
        cmocka_unit_test(test_unreadable_reports), cmocka_unit_test(test_files),
        cmocka_unit_test(test_ignore_key),
        cmocka_unit_test(test_pair_keys),
        cmocka_unit_test(test_parse_cost),         cmocka_unit_test(test_read_budget),
        cmocka_unit_test(test_grid_exact),         cmocka_unit_test(test_input_file_noted),
    };
    return cmocka_run_group_tests_name("compare", tests, NULL, NULL);
}
