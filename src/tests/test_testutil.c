/* test_testutil.c — the suite's own double-precision assertions (testutil.h): each one passes
 * on values it should accept, and fails (shown in a child process running a one-test cmocka
 * group) on a wrong value, on NaN and +-Inf, and on a bad tolerance, printing both values in
 * full (%.17g) and file:line. */
#include "testutil.h"

#include <float.h>
#include <limits.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* --- Passing: each assertion accepts what it should --------------------------------------- */

static void test_pass_exact(void **state)
{
    (void)state;
    assert_double_exact(0.5, 0.5);
    assert_double_exact(0.0, -0.0);
    assert_double_exact(-DBL_MAX, -DBL_MAX);
    assert_double_exact(DBL_TRUE_MIN, DBL_TRUE_MIN);
    assert_double_exact(2.5f, 2.5); /* a float widens exactly */
    assert_double_exact(0.1f, (double)0.1f);
}

static void test_pass_ulp(void **state)
{
    (void)state;
    assert_double_ulp(1.0, 1.0, 0);
    assert_double_ulp(1.0, nextafter(1.0, 2.0), 1);
    assert_double_ulp(nextafter(1.0, 0.0), nextafter(1.0, 2.0), 2);
    assert_double_ulp(-0.0, 0.0, 0);
    assert_double_ulp(-DBL_TRUE_MIN, DBL_TRUE_MIN, 2);
    assert_double_ulp(0.1 + 0.2, 0.3, 1);
}

static void test_pass_rel_abs(void **state)
{
    (void)state;
    assert_double_rel(1.0 + 1e-12, 1.0, 1e-11);
    assert_double_rel(-3.0 * (1.0 + 1e-12), -3.0, 1e-11);
    assert_double_rel(0.0, 0.0, 0.0);
    assert_double_rel(7.0, 7.0, 0.0);
    assert_double_abs(1e-16, 0.0, 1e-15);
    assert_double_abs(-1e-16, 0.0, 1e-15);
    assert_double_abs(2.0, 2.0, 0.0);
}

static void test_pass_nan_inf(void **state)
{
    (void)state;
    assert_double_nan(NAN);
    assert_double_nan(-NAN);
    assert_double_nan(0.0 * (double)INFINITY);
    assert_double_inf(INFINITY, 1);
    assert_double_inf(-INFINITY, -1);
    assert_double_inf(DBL_MAX * 2.0, 1);
    assert_double_inf((float)INFINITY, 1);
}

/* The ulp distance itself: neighbours are 1 apart, across zero counts both sides. */
static void test_ulp_distance(void **state)
{
    (void)state;
    assert_true(fp4t_double_ulps(1.0, 1.0) == 0);
    assert_true(fp4t_double_ulps(1.0, nextafter(1.0, 2.0)) == 1);
    assert_true(fp4t_double_ulps(nextafter(1.0, 2.0), 1.0) == 1);
    assert_true(fp4t_double_ulps(-0.0, 0.0) == 0);
    assert_true(fp4t_double_ulps(-DBL_TRUE_MIN, DBL_TRUE_MIN) == 2);
    assert_true(fp4t_double_ulps(0.0, DBL_MIN) == (uint64_t)1 << 52);
    assert_true(fp4t_double_ulps(1.0, 2.0) == (uint64_t)1 << 52);
    assert_true(fp4t_double_ulps(-1.0, 1.0) == (uint64_t)0x3FF0000000000000 * 2);
}

/* The check forms: 1 on pass with msg untouched, 0 with the message on failure. */
static void test_check_forms(void **state)
{
    (void)state;
    char msg[FP4T_MSG_SIZE] = "untouched";
    assert_int_equal(fp4t_check_double_exact(1.0, 1.0, "a", "b", "f.c", 1, msg, sizeof msg), 1);
    assert_string_equal(msg, "untouched");
    assert_int_equal(fp4t_check_double_exact(1.0, 2.0, "a", "b", "f.c", 7, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "f.c:7: assert_double_exact(a, b) failed"));
    assert_non_null(strstr(msg, "a = 1\n"));
    assert_non_null(strstr(msg, "b = 2\n"));
    assert_int_equal(fp4t_check_double_tol(NAN, NAN, 1.0, 1, "a", "b", "f.c", 3, msg, sizeof msg),
                     0);
    assert_non_null(strstr(msg, "the actual value is not finite"));
    assert_int_equal(fp4t_check_double_tol(1.0, INFINITY, 1.0, 0, "a", "b", "f.c", 3, msg,
                                           sizeof msg), 0);
    assert_non_null(strstr(msg, "the expected value is not finite"));
    assert_int_equal(fp4t_check_double_nan(NAN, "a", "f.c", 1, msg, sizeof msg), 1);
    assert_int_equal(fp4t_check_double_inf(-INFINITY, 1, "a", "f.c", 1, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "expected +inf"));
}

/* --- Failing: each case below must fail its test --------------------------------------------
 * Each runs as the one test of a cmocka group in a forked child (so the failure stops only
 * the child); the parent asks for a non-zero exit, cmocka's FAILED line, and the needles in
 * what the child printed. */

static void f_exact_sum(void **s) { (void)s; assert_double_exact(0.1 + 0.2, 0.3); }
static void f_exact_nan(void **s) { (void)s; assert_double_exact(NAN, NAN); }
static void f_exact_inf(void **s) { (void)s; assert_double_exact(INFINITY, INFINITY); }
static void f_exact_signed_inf(void **s) { (void)s; assert_double_exact(-INFINITY, 1.0); }
static void f_ulp_one(void **s) { (void)s; assert_double_ulp(nextafter(1.0, 2.0), 1.0, 0); }
static void f_ulp_four(void **s) { (void)s; assert_double_ulp(1.0 + 4 * DBL_EPSILON, 1.0, 3); }
static void f_ulp_nan(void **s) { (void)s; assert_double_ulp(NAN, 1.0, 1000); }
static void f_ulp_inf(void **s) { (void)s; assert_double_ulp(DBL_MAX, INFINITY, LLONG_MAX); }
static void f_ulp_negative(void **s) { (void)s; assert_double_ulp(1.0, 1.0, -1); }
static void f_rel_tight(void **s) { (void)s; assert_double_rel(1.0 + 1e-12, 1.0, 1e-13); }
static void f_rel_nan(void **s) { (void)s; assert_double_rel((float)NAN, 2.5, 1e300); }
static void f_rel_inf(void **s) { (void)s; assert_double_rel(INFINITY, 1e308, 1e300); }
static void f_rel_zero(void **s) { (void)s; assert_double_rel(1e-300, 0.0, 0.5); }
static void f_rel_tol_nan(void **s) { (void)s; assert_double_rel(1.0, 1.0, NAN); }
static void f_rel_tol_neg(void **s) { (void)s; assert_double_rel(1.0, 1.0, -1e-9); }
static void f_abs_off(void **s) { (void)s; assert_double_abs(1e-15, 0.0, 1e-16); }
static void f_abs_inf(void **s) { (void)s; assert_double_abs(-INFINITY, -INFINITY, 1.0); }
static void f_abs_tol_inf(void **s) { (void)s; assert_double_abs(1.0, 2.0, INFINITY); }
static void f_nan_finite(void **s) { (void)s; assert_double_nan(1.0); }
static void f_nan_inf(void **s) { (void)s; assert_double_nan(INFINITY); }
static void f_inf_sign(void **s) { (void)s; assert_double_inf(INFINITY, -1); }
static void f_inf_finite(void **s) { (void)s; assert_double_inf(DBL_MAX, 1); }
static void f_inf_nan(void **s) { (void)s; assert_double_inf(NAN, 1); }
static void f_inf_sign0(void **s) { (void)s; assert_double_inf(INFINITY, 0); }

struct fcase {
    const char *name;
    CMUnitTestFunction fn;
    const char *needle[3]; /* what the child must print (NULL: none) */
};

#define FC(f, a, b, c) { #f, f, { a, b, c } }
static const struct fcase fcases[] = {
    FC(f_exact_sum, "0.30000000000000004", "0.29999999999999999", "1 ulp apart"),
    FC(f_exact_nan, "the actual value is not finite", "= nan", NULL),
    FC(f_exact_inf, "the actual value is not finite", "= inf", NULL),
    FC(f_exact_signed_inf, "= -inf", "the actual value is not finite", NULL),
    FC(f_ulp_one, "1.0000000000000002", "1 ulp apart", NULL),
    FC(f_ulp_four, "1.0000000000000009", "4 ulp apart", NULL),
    FC(f_ulp_nan, "= nan", "not finite", NULL),
    FC(f_ulp_inf, "the expected value is not finite", "1.7976931348623157e+308", NULL),
    FC(f_ulp_negative, "the ulp count is negative", NULL, NULL),
    FC(f_rel_tight, "= 1.0000000000010001", "allowed 1e-13)", NULL),
    FC(f_rel_nan, "= nan", "= 2.5", NULL),
    FC(f_rel_inf, "= inf", "= 1e+308", NULL),
    FC(f_rel_zero, "1e-300 = 1e-300", "expected 0.0 = 0\n", "allowed 0)"),
    FC(f_rel_tol_nan, "the tolerance is not finite", NULL, NULL),
    FC(f_rel_tol_neg, "the tolerance is not finite", NULL, NULL),
    FC(f_abs_off, "assert_double_abs(1e-15, 0.0, 9.9999999999999998e-17) failed",
       "= 1.0000000000000001e-15", NULL),
    FC(f_abs_inf, "= -inf", "not finite", NULL),
    FC(f_abs_tol_inf, "the tolerance is not finite", NULL, NULL),
    FC(f_nan_finite, "assert_double_nan(1.0) failed", "= 1\n", NULL),
    FC(f_nan_inf, "= inf", NULL, NULL),
    FC(f_inf_sign, "expected -inf", "= inf", NULL),
    FC(f_inf_finite, "1.7976931348623157e+308", "expected +inf", NULL),
    FC(f_inf_nan, "= nan", NULL, NULL),
    FC(f_inf_sign0, "sign 0: invalid", NULL, NULL),
};

/* Run c as a one-test group in a child; return its exit status and what it printed. */
static int run_in_child(const struct fcase *c, char *out, size_t n)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[1]);
        const struct CMUnitTest one[] = { { c->name, c->fn, NULL, NULL, NULL } };
        int rc = _cmocka_run_group_tests(c->name, one, 1, NULL, NULL);
        fflush(stdout);
        fflush(stderr);
        _exit(rc == 0 ? 0 : 10 + (rc > 100 ? 100 : rc));
    }
    close(fd[1]);
    size_t got = 0;
    ssize_t r;
    while ((r = read(fd[0], out + got, n - 1 - got)) > 0) {
        got += (size_t)r;
        if (got == n - 1) break;
    }
    out[got] = '\0';
    close(fd[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void test_each_failure(void **state)
{
    (void)state;
    static char out[16384];
    int bad = 0;
    for (size_t i = 0; i < sizeof fcases / sizeof fcases[0]; i++) {
        const struct fcase *c = &fcases[i];
        int rc = run_in_child(c, out, sizeof out);
        const char *why = NULL;
        char missing[256];
        if (rc == 0) why = "the assertion passed";
        else if (!strstr(out, "[  FAILED  ] 1 test")) why = "no cmocka FAILED line";
        else if (!strstr(out, "test_testutil.c:")) why = "no file:line";
        for (int k = 0; !why && k < 3; k++)
            if (c->needle[k] && !strstr(out, c->needle[k])) {
                snprintf(missing, sizeof missing, "no \"%s\"", c->needle[k]);
                why = missing;
            }
        if (why) {
            bad++;
            print_message("%s: %s (exit %d); the child printed:\n", c->name, why, rc);
            for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
                print_message("    | %s\n", line);
        }
    }
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pass_exact),
        cmocka_unit_test(test_pass_ulp),
        cmocka_unit_test(test_pass_rel_abs),
        cmocka_unit_test(test_pass_nan_inf),
        cmocka_unit_test(test_ulp_distance),
        cmocka_unit_test(test_check_forms),
        cmocka_unit_test(test_each_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
