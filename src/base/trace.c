/* trace.c — the developer trace of trace.h (FP4DIAG_TRACE=1): phase timestamps on stderr. */
#define _GNU_SOURCE /* syscall(SYS_gettid) */
#include "base/trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int g_on = -1;
static struct timespec g_t0;
static int g_t0_set;

bool fp4_trace_on(void)
{
    int on = __atomic_load_n(&g_on, __ATOMIC_RELAXED);
    if (on < 0) { /* threads that race here store the same value */
        const char *e = getenv("FP4DIAG_TRACE");
        on = e && e[0] && strcmp(e, "0") != 0;
        __atomic_store_n(&g_on, on, __ATOMIC_RELAXED);
    }
    return on;
}

void fp4_trace_start(void)
{
    clock_gettime(CLOCK_MONOTONIC, &g_t0);
    g_t0_set = 1;
}

double fp4_trace_clock(void)
{
    if (!fp4_trace_on()) return 0.0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - g_t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - g_t0.tv_nsec);
}

void fp4_trace(const char *fmt, ...)
{
    if (!fp4_trace_on()) return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!g_t0_set) { /* first caller; a race between two first callers moves t0 by ns */
        g_t0 = now;
        g_t0_set = 1;
    }
    const double s = (double)(now.tv_sec - g_t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - g_t0.tv_nsec);
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    /* one write per line: lines of several threads do not interleave */
    fprintf(stderr, "fp4diag trace +%.6f s [%ld] %s\n", s, (long)syscall(SYS_gettid), text);
}
