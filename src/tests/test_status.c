/* test_status.c — errors as values: the detail recorded by fp4_error and the exit-code values. */
#include "testutil.h"

#include "base/status.h"

static void test_error_records_detail(void **state)
{
    (void)state;
    fp4_error_clear();
    assert_string_equal(fp4_last_error(), "");
    fp4_status st = fp4_error(FP4_ERR_INPUT, "%s: %s: not found", "a.h5", "/x");
    assert_int_equal(st, FP4_ERR_INPUT);
    assert_string_equal(fp4_last_error(), "a.h5: /x: not found");
}

static void test_long_detail_keeps_its_reason(void **state)
{
    (void)state;
    char name[6001];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    fp4_error(FP4_ERR_INPUT, "%s: /d: no such dataset", name);
    const char *e = fp4_last_error();
    const size_t n = strlen(e);
    assert_true(n == FP4_ERROR_MAX - 1);
    assert_string_equal(e + n - strlen(": /d: no such dataset"), ": /d: no such dataset");
    assert_non_null(strstr(e, " [...] "));
    assert_int_equal(strncmp(e, name, 1024), 0);
}

static void check_escape(const char *in, int flags, const char *want, bool want_changed)
{
    bool changed = !want_changed;
    char *got = fp4_text_escape(in, flags, &changed);
    assert_non_null(got);
    assert_string_equal(got, want);
    assert_int_equal(changed, want_changed);
    free(got);
}

static void test_text_escape(void **state)
{
    (void)state;
    const int both = FP4_ESC_CONTROL | FP4_ESC_UTF8;
    check_escape("/blocks/0/w", both, "/blocks/0/w", false);
    check_escape("/\xc3\xbcn\xc3\xaf" "code", both, "/\xc3\xbcn\xc3\xaf" "code", false); /* valid */
    check_escape("a\nb\x1b[31m", both, "a\\x0Ab\\x1B[31m", true);
    check_escape("a\nb", FP4_ESC_UTF8, "a\nb", false); /* controls kept for JSON */
    check_escape("bad\xff\xfe", FP4_ESC_UTF8, "bad\\xFF\\xFE", true);
    check_escape("bad\xff", FP4_ESC_CONTROL, "bad\xff", false);
    check_escape("c1\xc2\x9b.", both, "c1\\xC2\\x9B.", true);         /* C1 CSI */
    check_escape("\xc2\xa0", both, "\xc2\xa0", false);                   /* U+00A0 */
    check_escape("\xc0\xaf", both, "\\xC0\\xAF", true);                /* overlong '/' */
    check_escape("\xed\xa0\x80", both, "\\xED\\xA0\\x80", true);     /* surrogate */
    check_escape("\xf4\x90\x80\x80", both, "\\xF4\\x90\\x80\\x80", true); /* > U+10FFFF */
    check_escape("\xe2\x82", both, "\\xE2\\x82", true);                /* cut short */
    check_escape("\xf0\x9f\x98\x80", both, "\xf0\x9f\x98\x80", false); /* U+1F600 */
}

static void test_exit_codes_match_spec(void **state)
{
    (void)state; /* SPEC §9: 0 ok; 1 compare; 2 usage; 3 input; 4 device; 5 internal */
    assert_int_equal(FP4_OK, 0);
    assert_int_equal(FP4_ERR_THRESHOLD, 1);
    assert_int_equal(FP4_ERR_USAGE, 2);
    assert_int_equal(FP4_ERR_INPUT, 3);
    assert_int_equal(FP4_ERR_DEVICE, 4);
    assert_int_equal(FP4_ERR_INTERNAL, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_records_detail),
        cmocka_unit_test(test_exit_codes_match_spec),
        cmocka_unit_test(test_long_detail_keeps_its_reason),
        cmocka_unit_test(test_text_escape),
    };
    return cmocka_run_group_tests_name("status", tests, NULL, NULL);
}
