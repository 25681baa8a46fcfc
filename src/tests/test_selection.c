/* test_selection.c — the analysis commands' default selection (fp4_source_skip_reason, SPEC §8):
 * floating-point tensors of rank >= 2 are analysed, rank 0 and 1 are left out with their
 * reason, a tensor named exactly is analysed whatever its rank, --all-tensors takes every
 * tensor, --exclude takes tensors out in every case. */
#include "testutil.h"

#include "io/source.h"

#define CKPT FP4T_TESTDATA("gpt_ckpt_small.h5")

/* The reason fp4_source_skip_reason gives for t (NULL: analysed), copied into out. */
static const char *reason_of(fp4_source *s, const fp4_tensor_desc *t, const char *pattern,
                             bool all, const char *exclude, char *out, size_t n)
{
    const char *pats[1] = {pattern}, *exc[1] = {exclude};
    const char *why = NULL;
    char buf[256];
    assert_int_equal(fp4_source_skip_reason(s, t, pattern ? pats : NULL, pattern ? 1 : 0, all,
                                            exclude ? exc : NULL, exclude ? 1 : 0, buf,
                                            sizeof buf, &why),
                     FP4_OK);
    if (!why) return NULL;
    snprintf(out, n, "%s", why);
    return out;
}

static const fp4_tensor_desc *find(const fp4_tensor_desc *all, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(all[i].name, name)) return &all[i];
    fail_msg("%s not listed", name);
    return NULL;
}

static void test_default_selection_rank_rule(void **state)
{
    (void)state;
    fp4_source *s = NULL;
    assert_int_equal(fp4_source_open(CKPT, &s), FP4_OK);
    fp4_tensor_desc *all = NULL;
    int n = 0;
    assert_int_equal(fp4_source_select(s, NULL, 0, &all, &n), FP4_OK);
    assert_int_equal(n, 23);
    char r[256];
    /* every tensor of the file: f32, rank 2 analysed, rank 1 left out as "rank 1" */
    int analysed = 0;
    for (int i = 0; i < n; i++) {
        const char *why = reason_of(s, &all[i], NULL, false, NULL, r, sizeof r);
        if (all[i].rank >= 2) {
            assert_null(why);
            analysed++;
        } else {
            assert_int_equal(all[i].rank, 1);
            assert_non_null(why);
            assert_string_equal(why, "rank 1");
        }
    }
    assert_int_equal(analysed, 5);
    const fp4_tensor_desc *w = find(all, n, "/blocks/0/fc1/weight");
    const fp4_tensor_desc *b = find(all, n, "/blocks/0/fc1/bias");
    assert_int_equal(w->rank, 2);
    assert_int_equal(b->rank, 1);
    assert_null(reason_of(s, w, NULL, false, NULL, r, sizeof r));
    assert_string_equal(reason_of(s, b, NULL, false, NULL, r, sizeof r), "rank 1");

    /* the same rule on ranks this file lacks: 0 (scalar) out, 3 and 4 in */
    fp4_tensor_desc t = *b;
    t.rank = 0;
    assert_string_equal(reason_of(s, &t, NULL, false, NULL, r, sizeof r), "rank 0 (scalar)");
    t.rank = 3;
    assert_null(reason_of(s, &t, NULL, false, NULL, r, sizeof r));
    t.rank = 4;
    assert_null(reason_of(s, &t, NULL, false, NULL, r, sizeof r));

    /* named exactly: analysed whatever its rank; a group naming it is not exact */
    assert_null(reason_of(s, b, "/blocks/0/fc1/bias", false, NULL, r, sizeof r));
    assert_null(reason_of(s, b, "blocks/0/fc1/bias", false, NULL, r, sizeof r));
    assert_string_equal(reason_of(s, b, "/blocks/0/fc1", false, NULL, r, sizeof r), "rank 1");
    t.rank = 0;
    assert_null(reason_of(s, &t, "/blocks/0/fc1/bias", false, NULL, r, sizeof r));
    /* --all-tensors: rank 1 and 0 analysed */
    assert_null(reason_of(s, b, NULL, true, NULL, r, sizeof r));
    assert_null(reason_of(s, &t, NULL, true, NULL, r, sizeof r));
    /* --exclude wins in every case, rank 2 included */
    assert_non_null(reason_of(s, w, NULL, false, "/blocks/0/fc1", r, sizeof r));
    assert_non_null(strstr(r, "excluded by --exclude"));
    assert_non_null(reason_of(s, w, "/blocks/0/fc1/weight", true, "/blocks/0/fc1/weight", r,
                              sizeof r));

    fp4_tensor_desc_free_list(all, n);
    fp4_source_close(s);
}

/* An empty pattern is a usage error naming it, never "every tensor" (SPEC §8 "Operands"):
 * checked alone and by fp4_source_select, which lists nothing then. */
static void test_empty_pattern_refused(void **state)
{
    (void)state;
    const char *ok[2] = {"/blocks/0", "x"}, *second[2] = {"/blocks/0", ""}, *first[1] = {""};
    assert_int_equal(fp4_select_check(ok, 2), FP4_OK);
    assert_int_equal(fp4_select_check(NULL, 0), FP4_OK);
    assert_int_equal(fp4_select_check(second, 2), FP4_ERR_USAGE);
    assert_non_null(strstr(fp4_last_error(), "selection pattern 2 is empty ('')"));
    fp4_error_clear();
    fp4_source *s = NULL;
    assert_int_equal(fp4_source_open(CKPT, &s), FP4_OK);
    fp4_tensor_desc *all = NULL;
    int n = -1;
    assert_int_equal(fp4_source_select(s, first, 1, &all, &n), FP4_ERR_USAGE);
    assert_null(all);
    assert_int_equal(n, 0);
    assert_non_null(strstr(fp4_last_error(), "selection pattern 1 is empty"));
    fp4_error_clear();
    bool unmatched[2] = {false, false};
    assert_int_equal(fp4_source_select_some(s, second, 2, &all, &n, unmatched), FP4_ERR_USAGE);
    assert_null(all);
    fp4_error_clear();
    /* "/" is the root group, as before: every tensor */
    const char *root[1] = {"/"};
    assert_int_equal(fp4_source_select(s, root, 1, &all, &n), FP4_OK);
    assert_int_equal(n, 23);
    fp4_tensor_desc_free_list(all, n);
    fp4_source_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_selection_rank_rule),
        cmocka_unit_test(test_empty_pattern_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
