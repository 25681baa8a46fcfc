/* cmd/env.c — the FP4DIAG_* environment variables checked before a command runs: a value the
 * code cannot hold is a usage error (exit 2), never a crash or a silent fallback. */
#include "cmd/env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "base/isa.h"
#include "io/pario.h"

/* The value shown in a message: escaped (terminal escapes, newlines, bytes that are not
 * UTF-8), and cut to 64 characters. */
static fp4_status env_bad(const char *var, const char *val, const char *want)
{
    char cut[68];
    const size_t n = strlen(val);
    snprintf(cut, sizeof cut, "%.64s%s", val, n > 64 ? "..." : "");
    char *esc = fp4_text_escape(cut, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
    const fp4_status st = fp4_error(FP4_ERR_USAGE, "%s='%s': %s", var, esc ? esc : "?", want);
    free(esc);
    return st;
}

static bool env_one_of(const char *val, const char *const *ok, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(val, ok[i]) == 0) return true;
    return false;
}

fp4_status fp4_env_check(void)
{
    const char *e = getenv("FP4DIAG_READ_THREADS");
    if (e && *e) {
        /* digits only (no sign, space or base prefix), at most 3 of them before the range */
        bool ok = strlen(e) <= 3;
        for (const char *p = e; ok && *p; p++) ok = *p >= '0' && *p <= '9';
        const long v = ok ? strtol(e, NULL, 10) : 0;
        if (!ok || v < 1 || v > FP4_PARIO_MAX_THREADS) {
            char want[64];
            snprintf(want, sizeof want, "want an integer from 1 to %d", FP4_PARIO_MAX_THREADS);
            return env_bad("FP4DIAG_READ_THREADS", e, want);
        }
    }
    e = getenv("FP4DIAG_PROGRESS_EVERY");
    if (e && *e) { /* seconds: digits and at most one '.', no sign, exponent or space */
        int digits = 0, dots = 0;
        bool ok = true;
        for (const char *p = e; ok && *p; p++) {
            if (*p >= '0' && *p <= '9') digits++;
            else if (*p == '.') dots++;
            else ok = false;
        }
        if (!ok || digits == 0 || digits > 9 || dots > 1)
            return env_bad("FP4DIAG_PROGRESS_EVERY", e,
                           "want seconds, a decimal number of at most 9 digits (10, 0.5)");
    }
    FP4_TRY(fp4_isa_init()); /* FP4DIAG_ISA: read once, for every dispatch (base/isa.c) */
    static const char *const trace_ok[] = {"", "0", "1", "2"};
    e = getenv("FP4DIAG_TRACE");
    if (e && !env_one_of(e, trace_ok, 4)) return env_bad("FP4DIAG_TRACE", e, "want 0, 1 or 2");
    static const char *const words_ok[] = {"", "0", "1"};
    e = getenv("FP4DIAG_CPU_WORDS");
    if (e && !env_one_of(e, words_ok, 3)) return env_bad("FP4DIAG_CPU_WORDS", e, "want 0 or 1");
    return FP4_OK;
}
