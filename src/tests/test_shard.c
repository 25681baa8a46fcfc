/* test_shard.c — `--shard I/N`: parsing, the balanced deterministic split, and the exact
 * per-tensor state a partial report carries (hex floats round-trip every bit). */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "num/metrics.h"
#include "report/report.h"
#include "run/shard.h"

static void test_parse(void **state)
{
    (void)state;
    fp4_shard s;
    assert_int_equal(fp4_shard_parse("0/1", &s), FP4_OK);
    assert_int_equal(s.index, 0);
    assert_int_equal(s.count, 1);
    assert_int_equal(fp4_shard_parse("7/8", &s), FP4_OK);
    assert_int_equal(s.index, 7);
    assert_int_equal(s.count, 8);
    const char *bad[] = {"1/1", "8/8", "-1/2", "1", "1/", "/2", "a/2", "1/2x", "1/0", " 1/2",
                         "0/65537", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(fp4_shard_parse(bad[i], &s), FP4_ERR_USAGE);
}

/* Largest first, each to the least-loaded share (ties: lower share): a worked example. */
static void test_assign_known_answer(void **state)
{
    (void)state;
    /* weights (+1 each): 101, 51, 51, 31, 1, 21 -> order 0,1,2,3,5,4 */
    const int64_t w[6] = {100, 50, 50, 30, 0, 20};
    int owner[6];
    assert_int_equal(fp4_shard_assign(w, 6, 2, owner), FP4_OK);
    /* 0 -> s0 (101); 1 -> s1 (51); 2 -> s1 (102); 3 -> s0 (132); 5 -> s1 (123); 4 -> s1 */
    const int want[6] = {0, 1, 1, 0, 1, 1};
    for (int i = 0; i < 6; i++) assert_int_equal(owner[i], want[i]);
    assert_int_equal(fp4_shard_assign(w, 6, 3, owner), FP4_OK);
    /* 0 -> s0; 1 -> s1; 2 -> s2; 3 -> s1 (82); 5 -> s2 (72); 4 -> s2 (73) */
    const int want3[6] = {0, 1, 2, 1, 2, 2};
    for (int i = 0; i < 6; i++) assert_int_equal(owner[i], want3[i]);
    /* one share: everything in it */
    assert_int_equal(fp4_shard_assign(w, 6, 1, owner), FP4_OK);
    for (int i = 0; i < 6; i++) assert_int_equal(owner[i], 0);
}

/* Every item in exactly one share, loads within the largest item of each other, the same
 * answer twice, and more shares than items leaves the extra shares empty. */
static void test_assign_balanced(void **state)
{
    (void)state;
    enum { N = 500 };
    int64_t w[N], load[7];
    int a[N], b[N];
    uint64_t x = 88172645463325252ull;
    int64_t big = 0;
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        w[i] = (int64_t)(x % 100000);
        if (w[i] > big) big = w[i];
    }
    assert_int_equal(fp4_shard_assign(w, N, 7, a), FP4_OK);
    assert_int_equal(fp4_shard_assign(w, N, 7, b), FP4_OK);
    assert_memory_equal(a, b, sizeof a);
    memset(load, 0, sizeof load);
    for (int i = 0; i < N; i++) {
        assert_true(a[i] >= 0 && a[i] < 7);
        load[a[i]] += w[i] + 1;
    }
    int64_t lo = load[0], hi = load[0];
    for (int s = 1; s < 7; s++) lo = load[s] < lo ? load[s] : lo, hi = load[s] > hi ? load[s] : hi;
    assert_true(hi - lo <= big + 1);
    const int64_t w3[3] = {5, 5, 5};
    int o3[3];
    assert_int_equal(fp4_shard_assign(w3, 3, 5, o3), FP4_OK);
    assert_int_equal(o3[0], 0);
    assert_int_equal(o3[1], 1);
    assert_int_equal(o3[2], 2);
}

/* The raw state round-trips bit for bit, including values a decimal print would round. */
static void test_raw_roundtrip(void **state)
{
    (void)state;
    fp4_metrics m, r;
    fp4_metrics_init(&m);
    m.sum_x2 = 0.1 + 0.2;
    m.sum_err2 = nextafter(1.0, 2.0);
    m.sum_xqx = -1e-310; /* subnormal */
    m.sum_xq2 = 1.7976931348623157e308;
    m.signed_err_sum = -0.0;
    for (int i = 0; i < 8; i++) m.level_err_sum[i] = 1.0 / (i + 3), m.level_count[i] = 3u * i;
    for (int i = 0; i < 16; i++) m.hist[i] = 1000u + i;
    m.signed_err_n = 12345;
    m.elements = 9007199254740991ull;
    m.nonfinite_blocks = 2;
    m.tensor_amax = 3.1415927f;
    m.st_blocks = 7;
    m.st_count = 9007199254740993ull; /* beyond 2^53: kept exact */
    m.st_nonzero = 5;
    m.underflows = 4;
    m.max_abs_err = 0.1;
    m.sum_x2_na = 1.0 / 3.0;
    m.sum_err2_na = 4.9e-324;
    m.hist_blocks = 9;
    m.amax_hist[0] = 2;
    m.amax_hist[FP4_AMAX_BINS - 3] = 7;
    m.scale_hist[0x7E] = 9007199254740993ull;
    m.rerr_hist[0] = 1;
    m.rerr_hist[81] = 3;
    m.rerr_hist[FP4_RERR_BINS - 1] = 9007199254740995ull;
    m.fos_blocks = 9007199254740997ull;
    m.fos_blocks4 = 3;
    m.fos_err2 = 1.0 / 7.0;
    m.split_blocks = 11;
    m.split_flush = 0.25, m.split_scale = 1.0 / 3.0, m.split_grid = 5e-324, m.split_cross = -0.125;
    cJSON *o = fp4_metrics_raw_json(&m);
    assert_non_null(o);
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    cJSON *back = cJSON_Parse(t);
    free(t);
    assert_true(fp4_metrics_raw_parse(back, &r));
    assert_memory_equal(&m, &r, sizeof m);
    /* Four over Six: blocks4 above blocks refused; absent (a state written before it): none
     * evaluated */
    cJSON *fo = cJSON_GetObjectItem(cJSON_GetObjectItem(back, "stats"), "fos");
    assert_non_null(fo);
    cJSON_ReplaceItemInArray(cJSON_GetObjectItem(fo, "counts"), 1,
                             cJSON_CreateString("9007199254740998"));
    assert_false(fp4_metrics_raw_parse(back, &r));
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(back, "stats"), "fos");
    assert_true(fp4_metrics_raw_parse(back, &r));
    assert_int_equal(r.fos_blocks, 0);
    assert_int_equal(r.fos_blocks4, 0);
    /* the split: a sum missing refused; absent: none evaluated */
    cJSON *sp = cJSON_GetObjectItem(cJSON_GetObjectItem(back, "stats"), "split");
    assert_non_null(sp);
    cJSON_DeleteItemFromArray(cJSON_GetObjectItem(sp, "sums"), 3);
    assert_false(fp4_metrics_raw_parse(back, &r));
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(back, "stats"), "split");
    assert_true(fp4_metrics_raw_parse(back, &r));
    assert_int_equal(r.split_blocks, 0);
    /* a state written before the statistics (no "stats"): parsed, statistics not computed */
    cJSON *st = cJSON_DetachItemFromObject(back, "stats");
    assert_non_null(st);
    assert_true(fp4_metrics_raw_parse(back, &r));
    assert_int_equal(r.st_blocks, 0);
    fp4_metrics_finish(&r);
    assert_false(r.stats_ok);
    /* a damaged statistics object is refused */
    cJSON_DeleteItemFromArray(cJSON_GetObjectItem(st, "counts"), 0);
    cJSON_AddItemToObject(back, "stats", st);
    assert_false(fp4_metrics_raw_parse(back, &r));
    /* a damaged object is refused */
    cJSON_DeleteItemFromArray(cJSON_GetObjectItem(back, "sums"), 0);
    assert_false(fp4_metrics_raw_parse(back, &r));
    cJSON_Delete(back);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_assign_known_answer),
        cmocka_unit_test(test_assign_balanced),
        cmocka_unit_test(test_raw_roundtrip),
    };
    return cmocka_run_group_tests_name("shard", tests, NULL, NULL);
}
