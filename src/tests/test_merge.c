/* test_merge.c — the one pooling order of a report (fp4_run_pool, SPEC §7) and the merge of
 * shares (fp4_merge_reports, SPEC §9): partial reports given in any order merge to the report
 * of one process, bit for bit outside "timing". */
#include "testutil.h"

#include <cJSON.h>

#include "cmd/options.h"
#include "report/merge.h"
#include "report/report.h"
#include "run/driver.h"

/* --- fp4_run_pool: fp64 sums merged in selection order ------------------------------------ */

/* Three tensors whose Σx² are 1, 1, 2^53: in selection order (1 + 1) + 2^53 = 2^53 + 2
 * exactly; any other order loses a 1 (2^53 + 1 rounds to 2^53, ties to even): 2^53 + 1 is
 * not a double, so the two results differ. Σ(x̂-x)² and Σx̂x the same way, reversed. */
static void test_pool_selection_order(void **state)
{
    (void)state;
    const double big = 9007199254740992.0; /* 2^53 */
    const double x2[3] = {1.0, 1.0, big}, e2[3] = {big, 1.0, 1.0};
    fp4_run_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.rht = FP4_RHT_OFF;
    fp4_metrics m[3][1];
    fp4_tensor_result tr[3];
    memset(tr, 0, sizeof tr);
    for (int t = 0; t < 3; t++) {
        fp4_metrics_init(&m[t][0]);
        m[t][0].sum_x2 = x2[t];
        m[t][0].sum_err2 = e2[t];
        m[t][0].sum_xqx = x2[t];
        m[t][0].sum_xq2 = e2[t];
        m[t][0].elements = 16;
        m[t][0].tensor_amax = (float)(t + 1);
        tr[t].metrics = m[t];
        tr[t].index = t;
    }
    fp4_run run;
    memset(&run, 0, sizeof run);
    run.config = &cfg;
    run.ncfg = 1;
    run.tensors = tr;
    run.ntensors = 3;
    assert_int_equal(fp4_run_pool(&run), FP4_OK);
    const fp4_metrics *p = &run.pooled[0];
    assert_double_exact(p->sum_x2, big + 2.0);      /* (1 + 1) + 2^53 */
    assert_double_exact(p->sum_err2, big);          /* (2^53 + 1) + 1: each 1 lost */
    assert_double_exact(p->sum_xqx, big + 2.0);
    assert_double_exact(p->sum_xq2, big);
    assert_true(p->elements == 48);
    assert_true(p->tensor_amax == 3.0f);
    /* finished from those sums: NMSE = 2^53 / (2^53 + 2), α = 1 */
    assert_double_exact(p->nmse, big / (big + 2.0));
    assert_double_exact(p->alpha, 1.0);
    free(run.pooled);
    free(run.pairs);
}

/* --- fp4_merge_reports: shares in any order ----------------------------------------------- */

#define CKPT FP4T_TESTDATA("gpt_ckpt_small.h5")

/* The JSON report of `sqnr CKPT --format e2m1,int4 --rounding sr --seed 5 [--shard SHARD]`,
 * computed in this process (fp4_run_analysis + fp4_report_analysis_json). */
static char *report_of(const char *shard)
{
    char *argv[] = {"sqnr", CKPT, "--format", "e2m1,int4", "--rounding", "sr", "--seed", "5",
                    "--shard", (char *)shard, NULL};
    const int argc = shard ? 10 : 8;
    fp4_options o;
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    char **args = fp4_argv_dup(argc, argv);
    assert_non_null(args);
    assert_int_equal(fp4_options_parse(&o, argc, args, NULL), FP4_OK);
    assert_int_equal(o.nargs, 1);
    fp4_run run;
    memset(&run, 0, sizeof run);
    assert_int_equal(fp4_run_analysis(&o.cfg, o.args[0], NULL, 0, &run), FP4_OK);
    assert_int_equal(run.nerrors, 0);
    char *text = fp4_report_analysis_json("sqnr", argc, argv, &run);
    assert_non_null(text);
    fp4_run_free(&run);
    free(args);
    return text;
}

/* The report without "timing" (a part's seconds and bytes differ from one process's) and
 * without "provenance" (its time: a part's run may fall in another second). */
static cJSON *untimed(const char *text)
{
    cJSON *r = cJSON_Parse(text);
    assert_non_null(r);
    assert_non_null(cJSON_GetObjectItemCaseSensitive(r, "timing"));
    cJSON_DeleteItemFromObjectCaseSensitive(r, "timing");
    cJSON_DeleteItemFromObjectCaseSensitive(r, "provenance");
    return r;
}

static void test_merge_shares_in_any_order(void **state)
{
    (void)state;
    char *one = report_of(NULL);
    cJSON *want = untimed(one);
    /* the single run's tensors: the default selection's 5 weights, in walk order */
    const cJSON *wt = cJSON_GetObjectItemCaseSensitive(want, "tensors");
    assert_int_equal(cJSON_GetArraySize(wt), 5);
    char *parts[3];
    const char *shares[3] = {"0/3", "1/3", "2/3"};
    for (int i = 0; i < 3; i++) parts[i] = report_of(shares[i]);
    /* every order of the three parts */
    static const int perm[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                   {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (int k = 0; k < 6; k++) {
        const char *texts[3], *names[3];
        for (int i = 0; i < 3; i++) {
            texts[i] = parts[perm[k][i]];
            names[i] = shares[perm[k][i]];
        }
        fp4_merge_result res;
        memset(&res, 0, sizeof res);
        fp4_status st = fp4_merge_reports(texts, names, 3, NULL, NULL,
                                          fp4_options_config_of_argv, &res);
        if (st != FP4_OK) print_error("order %d: %s\n", k, fp4_last_error());
        assert_int_equal(st, FP4_OK);
        assert_int_equal(res.nerrors, 0);
        assert_int_equal(res.nunits, 5);
        cJSON *got = untimed(res.text);
        if (!cJSON_Compare(got, want, true)) {
            char *g = cJSON_Print(cJSON_GetObjectItemCaseSensitive(got, "summary"));
            print_error("order {%d,%d,%d}: the merged report differs from one process's; "
                        "merged summary:\n%s\n", perm[k][0], perm[k][1], perm[k][2], g);
            free(g);
            fail();
        }
        /* the pooled SQNR bit for bit (cJSON_Compare allows a tolerance for numbers) */
        const cJSON *gs = cJSON_GetArrayItem(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(got, "summary"),
                                             "results"), 0);
        const cJSON *ws = cJSON_GetArrayItem(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(want, "summary"),
                                             "results"), 0);
        assert_double_exact(cJSON_GetObjectItemCaseSensitive(gs, "sqnr_db")->valuedouble,
                            cJSON_GetObjectItemCaseSensitive(ws, "sqnr_db")->valuedouble);
        cJSON *a = cJSON_GetObjectItemCaseSensitive(got, "tensors");
        for (int t = 0; t < 5; t++)
            assert_string_equal(
                cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(a, t), "name")->valuestring,
                cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(wt, t), "name")->valuestring);
        cJSON_Delete(got);
        free(res.text);
    }
    /* a share given twice is refused, whatever the order */
    const char *twice[3] = {parts[2], parts[0], parts[2]}, *tn[3] = {"2/3", "0/3", "2/3 again"};
    fp4_merge_result res;
    memset(&res, 0, sizeof res);
    assert_int_equal(fp4_merge_reports(twice, tn, 3, NULL, NULL, fp4_options_config_of_argv, &res),
                     FP4_ERR_INPUT);
    free(res.text);
    for (int i = 0; i < 3; i++) free(parts[i]);
    cJSON_Delete(want);
    free(one);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_selection_order),
        cmocka_unit_test(test_merge_shares_in_any_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
