/* progress.h — the progress line of long commands on stderr (SPEC §9 "Terminal output"):
 * units done of N (tensors; gemm: layers), the bytes done of the total, the rate and the time
 * left, then the unit's name. Redrawn in place on a terminal; one plain line per unit under
 * TERM=dumb (or no TERM) and, with -v, when stderr is not a terminal; nothing otherwise or
 * with -q. */
#ifndef FP4_PROGRESS_H
#define FP4_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    FP4_PROGRESS_OFF,    /* -q, or stderr not a terminal without -v */
    FP4_PROGRESS_REDRAW, /* a terminal: one line, "\r" and erase-line before each */
    FP4_PROGRESS_LINES,  /* TERM=dumb / no TERM, or -v off a terminal: a plain line per unit */
} fp4_progress_mode;

/* The mode for a run of `verbosity` (-q: -1, default 0, -v: 1+), with stderr a terminal or
 * not, under $TERM `term` (NULL: unset). Pure. */
fp4_progress_mode fp4_progress_mode_for(int verbosity, bool stderr_tty, const char *term);

/* "1023 B", "1.0 KiB", "3.5 MiB", ... (1024-based, one decimal from KiB up) into buf. */
void fp4_progress_bytes(char *buf, size_t size, double bytes);

/* The line, without "\r" or newline, into buf (truncated to size): "[I/N] DONE/TOTAL NAME"
 * (total <= 0: "[I/N] DONE NAME"), with " RATE/s ETA M:SS" after the bytes once `elapsed`
 * seconds >= 1 and done > 0. I is i + 1 (i: the unit about to start, 0-based). The time left
 * is (total - done) / rate when total > 0, else elapsed / i * (n - i) by units. `width` > 0:
 * the name is elided in the middle (base/term.h) so that the line has at most width - 1
 * columns (a redrawn line never wraps); the name is then left out below 8 columns, and the
 * rate and time left when even they do not fit. Returns buf. */
char *fp4_progress_format(char *buf, size_t size, int i, int n, int64_t done, int64_t total,
                          double elapsed, const char *name, int width);

/* One meter: fp4_progress_start, fp4_progress_step before each unit, fp4_progress_end (once
 * or more; clears a redrawn line). */
typedef struct fp4_progress {
    fp4_progress_mode mode;
    int n;         /* units */
    int64_t total; /* bytes of all units (0: unknown) */
    double t0;     /* CLOCK_MONOTONIC seconds at start */
    bool drawn;    /* a redrawn line is on the screen */
} fp4_progress;

/* Start a meter of `n` units and `total` bytes for a run of `verbosity` (the mode from stderr
 * and $TERM, fp4_progress_mode_for). */
void fp4_progress_start(fp4_progress *p, int verbosity, int n, int64_t total);

/* Unit i (0-based) of `name` starts, `done` bytes read before it. The name is escaped
 * (control characters, invalid UTF-8) before it is shown. */
void fp4_progress_step(fp4_progress *p, int i, const char *name, int64_t done);

/* Clear a redrawn line; the meter shows nothing more. */
void fp4_progress_end(fp4_progress *p);

#endif
