/* test_term.c — tables that fit the terminal (base/term.h, SPEC §9 "Terminal output"): the
 * width from $COLUMNS (clamped, junk ignored, none on a file), the elision mark by locale,
 * names elided by whole components to at most the columns asked (the layer number kept when the end
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

/* Every component of elided name `e` (between marks and separators) is a whole component of
 * `s`: no cut inside a word. */
static void assert_whole_components(const char *s, const char *e)
{
    char *c = strdup(e);
    assert_non_null(c);
    for (char *p = c; *p; p++)
        if (*p == '\xE2' || *p == '\x80' || *p == '\xA6') *p = '.';
    for (char *t = strtok(c, "."); t; t = strtok(NULL, ".")) {
        char *pat = malloc(strlen(t) + 3);
        assert_non_null(pat);
        sprintf(pat, ".%s.", t);
        char *whole = malloc(strlen(s) + 3);
        assert_non_null(whole);
        sprintf(whole, ".%s.", s);
        if (!strstr(whole, pat)) fail_msg("\"%s\" cuts a component of \"%s\": %s", e, s, t);
        free(pat);
        free(whole);
    }
    free(c);
}

static char *elided(const char *s, int cols)
{
    char *e = fp4_term_elide(s, cols);
    assert_non_null(e);
    assert_true(fp4_term_columns(e) <= cols);
    return e;
}

static void test_elide(void **state)
{
    (void)state;
    const char *hf = "model.layers.31.self_attn.q_proj.weight"; /* 39 columns */
    set_locale_env("C");
    char *e = elided(hf, 39);
    assert_string_equal(e, hf); /* fits: unchanged */
    free(e);
    /* whole components dropped, one mark a run: the head first from the right ("layers",
     * then "model"), then the module kind, then the leaf; never a sliver of a word */
    e = elided(hf, 35);
    assert_string_equal(e, "model...31.self_attn.q_proj.weight");
    free(e);
    e = elided(hf, 30);
    assert_string_equal(e, "...31.self_attn.q_proj.weight");
    free(e);
    e = elided(hf, 28);
    assert_string_equal(e, "...31...q_proj.weight");
    free(e);
    e = elided(hf, 20); /* the module rather than ".weight" when both do not fit */
    assert_string_equal(e, "...31...q_proj");
    free(e);
    e = elided(hf, 16);
    assert_string_equal(e, "...31...q_proj");
    free(e);
    e = elided(hf, 13); /* not even that: 2/5 head, 3/5 tail of 10 characters */
    assert_string_equal(e, "mode...weight");
    assert_int_equal(fp4_term_columns(e), 13);
    free(e);
    /* MoE: the layer and the expert index both kept */
    e = elided("model.language_model.layers.31.block_sparse_moe.experts.7.w1.weight", 30);
    assert_string_equal(e, "...31...experts.7.w1.weight");
    free(e);
    e = elided("model.language_model.layers.31.block_sparse_moe.experts.7.w1.weight", 24);
    assert_string_equal(e, "...31...7.w1.weight");
    free(e);
    /* three o_proj of different layers stay three names at the ranking's width */
    const char *op[] = {"model.layers.3.self_attn.o_proj.weight",
                        "model.layers.0.self_attn.o_proj.weight",
                        "model.layers.2.self_attn.o_proj.weight"};
    char *o[3];
    for (int i = 0; i < 3; i++) o[i] = elided(op[i], 22);
    assert_string_equal(o[0], "...3...o_proj.weight");
    assert_string_not_equal(o[0], o[1]);
    assert_string_not_equal(o[1], o[2]);
    for (int i = 0; i < 3; i++) free(o[i]);
    set_locale_env("C.UTF-8");
    /* the audit's name column at 80 columns: layer, module and leaf, no part of a word
     * ("…0…lf_attn.q_proj.weight", "m…0.mlp.gate_proj.weight" were) */
    e = elided("model.layers.0.self_attn.q_proj.weight", 18);
    assert_string_equal(e, "\xE2\x80\xA6" "0" "\xE2\x80\xA6" "q_proj.weight");
    free(e);
    e = elided("model.layers.0.self_attn.q_proj.weight", 24);
    assert_string_equal(e, "\xE2\x80\xA6" "0" "\xE2\x80\xA6" "q_proj.weight");
    free(e);
    e = elided("model.layers.0.mlp.gate_proj.weight", 24);
    assert_string_equal(e, "\xE2\x80\xA6" "0.mlp.gate_proj.weight");
    free(e);
    e = elided("model.language_model.layers.3.block_sparse_moe.experts.1.w1.weight", 12);
    assert_string_equal(e, "\xE2\x80\xA6" "3" "\xE2\x80\xA6" "1.w1");
    free(e);
    e = elided(hf, 33); /* "…" is one column: the head "model" fits */
    assert_string_equal(e, "model\xE2\x80\xA6" "31.self_attn.q_proj.weight");
    free(e);
    e = elided("model.embed_tokens.weight.extra.name.weight", 24); /* no index */
    assert_string_equal(e, "\xE2\x80\xA6" "extra.name.weight");
    free(e);
    /* whole components at every width down to the character rule */
    const char *names[] = {hf, "model.layers.0.mlp.gate_proj.weight",
                           "model.language_model.layers.3.block_sparse_moe.experts.1.w1.weight",
                           "model.layers.12.self_attn.o_proj.weight_scale"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        for (int c = 12; c <= 60; c++) {
            e = elided(names[i], c);
            assert_whole_components(names[i], e);
            free(e);
        }
    /* a multi-byte name: never a split sequence; exactly the columns asked */
    const char *u = "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9";
    e = elided(u, 6);
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
    /* a row and its flag: joined when they fit (and with no width), else the row as it is
     * (never packed with single spaces) and the flag on a continuation line */
    w = wrapped("x   1.5   2.5" FP4_TERM_FLAG " KEEP\n", 20);
    assert_string_equal(w, "x   1.5   2.5 KEEP\n");
    free(w);
    w = wrapped("x   1.5   2.5" FP4_TERM_FLAG " KEEP\n", 0);
    assert_string_equal(w, "x   1.5   2.5 KEEP\n");
    free(w);
    w = wrapped("x   1.5   2.5" FP4_TERM_FLAG " LAYOUT\nnext\n", 16);
    assert_string_equal(w, "x   1.5   2.5\n  LAYOUT\nnext\n");
    free(w);
    w = wrapped("x   1.5   2.5" FP4_TERM_FLAG "  ! non-finite input: 1 NaN\n", 16);
    assert_string_equal(w, "x   1.5   2.5\n  ! non-finite\n    input: 1 NaN\n");
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
