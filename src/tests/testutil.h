/* testutil.h — what every cmocka suite shares: includes in cmocka's required order, a
 * per-test temporary directory (tests touch nothing outside the project and temp folders) and
 * the double-precision assertions (assert_double_*) that every float check uses. */
#ifndef FP4_TESTUTIL_H
#define FP4_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <inttypes.h>
#include <math.h>

/* A fresh temporary directory under $TMPDIR (or /tmp), created with mkdtemp; the caller owns
 * the string. Fails the test when it cannot be made. */
static inline char *fp4t_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/fp4diag-test-XXXXXX", base && *base ? base : "/tmp");
    char *d = mkdtemp(buf);
    assert_non_null(d);
    return strdup(d);
}

/* Remove a directory tree made by fp4t_tmpdir (only paths under it). */
static inline void fp4t_rmtree(char *dir)
{
    if (!dir) return;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", dir);
    free(dir);
}

/* Path of a file in the project's testdata/ (tests run from the project root). */
#define FP4T_TESTDATA(name) ("testdata/" name)

/* --- Double-precision assertions ---------------------------------------------------------
 * cmocka's assert_float_equal converts to float, passes NaN and +-Inf against any expected
 * value and cannot check tighter than about 1e-7 relative (issue 32): never use it (make check
 * fails if it reappears in src/tests/). Use these instead; each one
 *   - fails when either value is NaN or +-Inf (use assert_double_nan / assert_double_inf when a
 *     non-finite value is the expected answer), and when the tolerance itself is not finite
 *     and >= 0;
 *   - on failure prints the assertion, file:line, both values in full (%.17g) and the error
 *     it measured, then fails the running test (cmocka's _fail).
 * A float argument widens to double exactly, so float results can be checked too.
 *
 *   assert_double_exact(a, e)       a == e (+0 and -0 are equal; use signbit to pin a sign)
 *   assert_double_ulp(a, e, n)      a and e at most n doubles apart (n >= 0; +0/-0 are 0 apart)
 *   assert_double_rel(a, e, tol)    |a - e| <= tol * |e|   (e == 0 asks a == 0: use _abs)
 *   assert_double_abs(a, e, tol)    |a - e| <= tol
 *   assert_double_nan(a)            a is a NaN
 *   assert_double_inf(a, sign)      a is +Inf (sign > 0) or -Inf (sign < 0)
 *
 * The fp4t_check_double_* forms return 1 when the check holds, else 0 with the message in
 * msg (size n); the assertions are built on them (src/tests/test_testutil.c tests both). */

/* Ordered integer key of a double: keys of neighbouring doubles differ by one; +0 and -0 share 0. */
static inline int64_t fp4t_double_key(double x)
{
    int64_t i;
    memcpy(&i, &x, sizeof i);
    return i < 0 ? INT64_MIN - i : i;
}

/* How many doubles apart a and b are (both finite; the largest gap, -DBL_MAX to DBL_MAX, fits). */
static inline uint64_t fp4t_double_ulps(double a, double b)
{
    int64_t ka = fp4t_double_key(a), kb = fp4t_double_key(b);
    return ka > kb ? (uint64_t)ka - (uint64_t)kb : (uint64_t)kb - (uint64_t)ka;
}

/* The shared part: both values finite; else the message says which one is not. */
static inline int fp4t_check_finite2(double a, double e, const char *ea, const char *ee,
                                     const char *what, const char *file, int line,
                                     char *msg, size_t n)
{
    if (isfinite(a) && isfinite(e)) return 1;
    snprintf(msg, n,
             "%s:%d: %s(%s, %s) failed: %s is not finite\n"
             "    actual   %s = %.17g\n    expected %s = %.17g\n",
             file, line, what, ea, ee, isfinite(a) ? "the expected value" : "the actual value",
             ea, a, ee, e);
    return 0;
}

static inline int fp4t_check_double_exact(double a, double e, const char *ea, const char *ee,
                                          const char *file, int line, char *msg, size_t n)
{
    if (!fp4t_check_finite2(a, e, ea, ee, "assert_double_exact", file, line, msg, n)) return 0;
    if (a == e) return 1;
    snprintf(msg, n,
             "%s:%d: assert_double_exact(%s, %s) failed\n"
             "    actual   %s = %.17g\n    expected %s = %.17g\n    (%" PRIu64 " ulp apart)\n",
             file, line, ea, ee, ea, a, ee, e, fp4t_double_ulps(a, e));
    return 0;
}

static inline int fp4t_check_double_ulp(double a, double e, long long maxulp, const char *ea,
                                        const char *ee, const char *file, int line, char *msg,
                                        size_t n)
{
    if (maxulp < 0) {
        snprintf(msg, n, "%s:%d: assert_double_ulp(%s, %s, %lld): the ulp count is negative\n",
                 file, line, ea, ee, maxulp);
        return 0;
    }
    if (!fp4t_check_finite2(a, e, ea, ee, "assert_double_ulp", file, line, msg, n)) return 0;
    uint64_t d = fp4t_double_ulps(a, e);
    if (d <= (uint64_t)maxulp) return 1;
    snprintf(msg, n,
             "%s:%d: assert_double_ulp(%s, %s, %lld) failed\n"
             "    actual   %s = %.17g\n    expected %s = %.17g\n    (%" PRIu64 " ulp apart)\n",
             file, line, ea, ee, maxulp, ea, a, ee, e, d);
    return 0;
}

/* rel != 0: |a - e| <= tol * |e|; rel == 0: |a - e| <= tol. */
static inline int fp4t_check_double_tol(double a, double e, double tol, int rel,
                                        const char *ea, const char *ee, const char *file,
                                        int line, char *msg, size_t n)
{
    const char *what = rel ? "assert_double_rel" : "assert_double_abs";
    if (!(isfinite(tol) && tol >= 0)) {
        snprintf(msg, n, "%s:%d: %s(%s, %s, %.17g): the tolerance is not finite and >= 0\n",
                 file, line, what, ea, ee, tol);
        return 0;
    }
    if (!fp4t_check_finite2(a, e, ea, ee, what, file, line, msg, n)) return 0;
    double err = fabs(a - e), bound = rel ? tol * fabs(e) : tol;
    if (err <= bound) return 1;
    snprintf(msg, n,
             "%s:%d: %s(%s, %s, %.17g) failed\n"
             "    actual   %s = %.17g\n    expected %s = %.17g\n"
             "    (|actual - expected| = %.17g, allowed %.17g)\n",
             file, line, what, ea, ee, tol, ea, a, ee, e, err, bound);
    return 0;
}

static inline int fp4t_check_double_nan(double a, const char *ea, const char *file, int line,
                                        char *msg, size_t n)
{
    if (isnan(a)) return 1;
    snprintf(msg, n, "%s:%d: assert_double_nan(%s) failed\n    actual   %s = %.17g\n", file,
             line, ea, ea, a);
    return 0;
}

static inline int fp4t_check_double_inf(double a, int sign, const char *ea, const char *file,
                                        int line, char *msg, size_t n)
{
    if (sign != 0 && isinf(a) && (a > 0) == (sign > 0)) return 1;
    snprintf(msg, n,
             "%s:%d: assert_double_inf(%s, %d) failed\n    actual   %s = %.17g\n"
             "    expected %s\n",
             file, line, ea, sign, ea, a, sign > 0 ? "+inf" : sign < 0 ? "-inf" : "(sign 0: invalid)");
    return 0;
}

/* Fail the running test with msg (cmocka's print_error + _fail: the test stops here). */
static inline void fp4t_fail_with(int ok, const char *msg, const char *file, int line)
{
    if (ok) return;
    print_error("%s", msg);
    _fail(file, line);
}

#define FP4T_MSG_SIZE 1024

static inline void fp4t_assert_double_exact(double a, double e, const char *ea, const char *ee,
                                            const char *file, int line)
{
    char msg[FP4T_MSG_SIZE];
    fp4t_fail_with(fp4t_check_double_exact(a, e, ea, ee, file, line, msg, sizeof msg), msg,
                   file, line);
}

static inline void fp4t_assert_double_ulp(double a, double e, long long maxulp, const char *ea,
                                          const char *ee, const char *file, int line)
{
    char msg[FP4T_MSG_SIZE];
    fp4t_fail_with(fp4t_check_double_ulp(a, e, maxulp, ea, ee, file, line, msg, sizeof msg),
                   msg, file, line);
}

static inline void fp4t_assert_double_tol(double a, double e, double tol, int rel,
                                          const char *ea, const char *ee, const char *file,
                                          int line)
{
    char msg[FP4T_MSG_SIZE];
    fp4t_fail_with(fp4t_check_double_tol(a, e, tol, rel, ea, ee, file, line, msg, sizeof msg),
                   msg, file, line);
}

static inline void fp4t_assert_double_nan(double a, const char *ea, const char *file, int line)
{
    char msg[FP4T_MSG_SIZE];
    fp4t_fail_with(fp4t_check_double_nan(a, ea, file, line, msg, sizeof msg), msg, file, line);
}

static inline void fp4t_assert_double_inf(double a, int sign, const char *ea, const char *file,
                                          int line)
{
    char msg[FP4T_MSG_SIZE];
    fp4t_fail_with(fp4t_check_double_inf(a, sign, ea, file, line, msg, sizeof msg), msg, file,
                   line);
}

#define assert_double_exact(a, e) \
    fp4t_assert_double_exact((a), (e), #a, #e, __FILE__, __LINE__)
#define assert_double_ulp(a, e, n) \
    fp4t_assert_double_ulp((a), (e), (n), #a, #e, __FILE__, __LINE__)
#define assert_double_rel(a, e, tol) \
    fp4t_assert_double_tol((a), (e), (tol), 1, #a, #e, __FILE__, __LINE__)
#define assert_double_abs(a, e, tol) \
    fp4t_assert_double_tol((a), (e), (tol), 0, #a, #e, __FILE__, __LINE__)
#define assert_double_nan(a) fp4t_assert_double_nan((a), #a, __FILE__, __LINE__)
#define assert_double_inf(a, sign) fp4t_assert_double_inf((a), (sign), #a, __FILE__, __LINE__)

#endif
