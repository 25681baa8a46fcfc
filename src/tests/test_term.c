/* test_term.c — tables that fit the terminal (base/term.h, SPEC §9 "Terminal output"): the
 * width from $COLUMNS (clamped, junk ignored, none on a file), the elision mark by locale,
 * names elided in the middle to exactly the columns asked (the layer number kept when the end
 * from it fits, a UTF-8 sequence never split), and text wrapped at spaces with the
 * continuation indent. */
#include "testutil.h"

#include "base/term.h"

static void set_locale_env(const char *lc_all)
{
    unsetenv("LC_CTYPE");
    unsetenv("LANG");
    if (lc_all) setenv("LC_ALL", lc_all, 1);
    else unsetenv("LC_ALL");
}

static void test_width(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    assert_non_null(f);
    unsetenv("COLUMNS");
    assert_int_equal(fp4_term_width(f), 0); /* a file: no width */
    setenv("COLUMNS", "80", 1);
    assert_int_equal(fp4_term_width(f), 80);
    setenv("COLUMNS", "12", 1);
    assert_int_equal(fp4_term_width(f), FP4_TERM_MIN_COLS);
    setenv("COLUMNS", "99999", 1);
    assert_int_equal(fp4_term_width(f), FP4_TERM_MAX_COLS);
    setenv("COLUMNS", "80x", 1); /* not a whole number: ignored */
    assert_int_equal(fp4_term_width(f), 0);
    setenv("COLUMNS", "-5", 1);
    assert_int_equal(fp4_term_width(f), 0);
    unsetenv("COLUMNS");
    fclose(f);
}

static void test_utf8_locale(void **state)
{
    (void)state;
    set_locale_env(NULL);
    assert_false(fp4_term_utf8());
    set_locale_env("C");
    assert_false(fp4_term_utf8());
    set_locale_env("en_US.UTF-8");
    assert_true(fp4_term_utf8());
    set_locale_env("C.utf8");
    assert_true(fp4_term_utf8());
    set_locale_env(NULL);
    setenv("LANG", "de_DE.UTF-8", 1);
    setenv("LC_CTYPE", "POSIX", 1); /* the first set wins */
    assert_false(fp4_term_utf8());
    set_locale_env(NULL);
}

static void test_elide(void **state)
{
    (void)state;
    const char *hf = "model.layers.31.self_attn.q_proj.weight"; /* 39 columns */
    set_locale_env("C");
    char *e = fp4_term_elide(hf, 39);
    assert_string_equal(e, hf); /* fits: unchanged */
    free(e);
    e = fp4_term_elide(hf, 30); /* "31.self_attn.q_proj.weight" (26) + "..." + 1 of head */
    assert_string_equal(e, "m...31.self_attn.q_proj.weight");
    assert_int_equal(fp4_term_columns(e), 30);
    free(e);
    e = fp4_term_elide(hf, 29); /* the layer part fits with no head */
    assert_string_equal(e, "...31.self_attn.q_proj.weight");
    assert_int_equal(fp4_term_columns(e), 29);
    free(e);
    e = fp4_term_elide(hf, 20); /* it does not fit: the number between marks, the module
                                   * (q_proj) rather than ".weight" when both do not fit */
    assert_string_equal(e, "...31..._attn.q_proj");
    assert_int_equal(fp4_term_columns(e), 20);
    free(e);
    e = fp4_term_elide(hf, 23); /* module and ".weight" fit: no sliver ("n") of self_attn */
    assert_string_equal(e, "...31...q_proj.weight");
    free(e);
    e = fp4_term_elide(hf, 16); /* "...31...q_proj", never "..._proj.weight" */
    assert_string_equal(e, "...31...q_proj");
    free(e);
    e = fp4_term_elide(hf, 13); /* no room for 6 of the end: 2/5 head, 3/5 tail of 10 */
    assert_string_equal(e, "mode...weight");
    assert_int_equal(fp4_term_columns(e), 13);
    free(e);
    /* MoE: the layer and the expert index both kept */
    e = fp4_term_elide("model.language_model.layers.31.block_sparse_moe.experts.7.w1.weight", 24);
    assert_string_equal(e, "...31...erts.7.w1.weight");
    assert_int_equal(fp4_term_columns(e), 24);
    free(e);
    /* three o_proj of different layers stay three names at the ranking's width */
    const char *op[] = {"model.layers.3.self_attn.o_proj.weight",
                        "model.layers.0.self_attn.o_proj.weight",
                        "model.layers.2.self_attn.o_proj.weight"};
    char *o[3];
    for (int i = 0; i < 3; i++) {
        o[i] = fp4_term_elide(op[i], 22);
        assert_true(fp4_term_columns(o[i]) <= 22);
    }
    assert_string_equal(o[0], "...3...o_proj.weight"); /* was "...3...n.o_proj.weight" */
    assert_string_not_equal(o[0], o[1]);
    assert_string_not_equal(o[1], o[2]);
    for (int i = 0; i < 3; i++) free(o[i]);
    set_locale_env("C.UTF-8");
    /* the audit's name column at 80 columns: layer and module, and an expert index kept
     * rather than ".weight" */
    e = fp4_term_elide("model.layers.0.self_attn.q_proj.weight", 18);
    assert_string_equal(e, "\xE2\x80\xA6" "0" "\xE2\x80\xA6" "q_proj.weight");
    free(e);
    e = fp4_term_elide("model.language_model.layers.3.block_sparse_moe.experts.1.w1.weight", 12);
    assert_string_equal(e, "\xE2\x80\xA6" "3" "\xE2\x80\xA6" "erts.1.w1");
    free(e);
    e = fp4_term_elide(hf, 28); /* "…" is one column: head 1 */
    assert_string_equal(e, "m\xE2\x80\xA6" "31.self_attn.q_proj.weight");
    assert_int_equal(fp4_term_columns(e), 28);
    free(e);
    /* a multi-byte name: never a split sequence; exactly the columns asked */
    const char *u = "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9";
    e = fp4_term_elide(u, 6);
    assert_int_equal(fp4_term_columns(e), 6);
    assert_string_equal(e, "\xC3\xA9\xC3\xA9\xE2\x80\xA6\xC3\xA9\xC3\xA9\xC3\xA9");
    free(e);
    set_locale_env(NULL);
}

static char *wrapped(const char *text, int width)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_non_null(m);
    fp4_term_write(m, text, width);
    fclose(m);
    return buf;
}

static void test_wrap(void **state)
{
    (void)state;
    set_locale_env("C");
    char *w = wrapped("  note: one two three four five\nshort\n", 16);
    assert_string_equal(w, "  note: one two\n    three four\n    five\nshort\n");
    free(w);
    w = wrapped("row  12.345  0.99\n", 0); /* no width: as it is */
    assert_string_equal(w, "row  12.345  0.99\n");
    free(w);
    w = wrapped("a 123456789012345678901234567890 b\n", 12); /* a word longer than the room */
    assert_string_equal(w, "a\n  12...67890\n  b\n");
    free(w);
    set_locale_env(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_width),
        cmocka_unit_test(test_utf8_locale),
        cmocka_unit_test(test_elide),
        cmocka_unit_test(test_wrap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
