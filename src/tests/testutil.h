/* testutil.h — what every cmocka suite shares: includes in cmocka's required order and a
 * per-test temporary directory (tests touch nothing outside the project and temp folders). */
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

#endif
