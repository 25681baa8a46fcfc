/* test_status.c — errors as values: the detail recorded by fp4_error and the exit-code values. */
#include "testutil.h"

#include "status.h"

static void test_error_records_detail(void **state)
{
    (void)state;
    fp4_error_clear();
    assert_string_equal(fp4_last_error(), "");
    fp4_status st = fp4_error(FP4_ERR_INPUT, "%s: %s: not found", "a.h5", "/x");
    assert_int_equal(st, FP4_ERR_INPUT);
    assert_string_equal(fp4_last_error(), "a.h5: /x: not found");
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
    };
    return cmocka_run_group_tests_name("status", tests, NULL, NULL);
}
