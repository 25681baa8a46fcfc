/* progress.h — the progress line of long commands on stderr (SPEC §9 "Terminal output"):
 * units done of N (tensors; gemm: layers), the bytes done of the total, the rate and the time
 * left, then the unit's name. Redrawn in place on a terminal; one plain line per unit under
 * TERM=dumb (or no TERM) and, with -v, when stderr is not a terminal (each fitting $COLUMNS
 * or the terminal's width when there is one); off a terminal without
 * -v, plain lines only once the run has lasted a while, then at most one per interval, and a
 * final line; nothing with -q. */
#ifndef FP4_PROGRESS_H
#define FP4_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    FP4_PROGRESS_OFF,    /* -q, or stderr not a terminal without -v */
    FP4_PROGRESS_REDRAW, /* a terminal: one line, "\r" and erase-line before each */
    FP4_PROGRESS_LINES,  /* TERM=dumb / no TERM, or -v off a terminal: a plain line per unit */
    FP4_PROGRESS_SPARSE, /* off a terminal without -v: a plain line once the run has lasted
                          * `delay` seconds, then at most one each `every` seconds, and a final
                          * line when any was shown (short runs stay silent) */
} fp4_progress_mode;

/* FP4_PROGRESS_SPARSE's timing: the first line after FP4_PROGRESS_DELAY seconds, then one at
 * most every FP4_PROGRESS_EVERY seconds; $FP4DIAG_PROGRESS_EVERY (seconds, a decimal >= 0)
 * sets both (0: a line before every unit, and the final line). */
#define FP4_PROGRESS_DELAY 5.0
#define FP4_PROGRESS_EVERY 10.0

/* The mode for a run of `verbosity` (-q: -1, default 0, -v: 1+), with stderr a terminal or
 * not, under $TERM `term` (NULL: unset). Pure. */
fp4_progress_mode fp4_progress_mode_for(int verbosity, bool stderr_tty, const char *term);

/* "1023 B", "1.0 KiB", "3.5 MiB", ... (1024-based, one decimal from KiB up) into buf. */
void fp4_progress_bytes(char *buf, size_t size, double bytes);

/* The line, without "\r" or newline, into buf (truncated to size): "[I/N] DONE/TOTAL NAME"
 * (total <= 0: "[I/N] DONE read NAME"), with " RATE/s ETA M:SS" after the bytes once `elapsed`
 * seconds >= 1 and done > 0. I is i + 1 (i: the unit about to start, 0-based). The time left
 * is (total - done) / rate when total > 0, else elapsed / i * (n - i) by units. `width` > 0:
 * the name is elided in the middle (base/term.h) so that the line has at most width - 1
 * columns (a redrawn line never wraps); the name is then left out below 8 columns, and the
 * rate and time left when even they do not fit. Returns buf. */
char *fp4_progress_format(char *buf, size_t size, int i, int n, int64_t done, int64_t total,
                          double elapsed, const char *name, int width);

/* The final line of a sparse meter into buf: "[N/N] DONE/TOTAL done in M:SS" (total <= 0:
 * "[N/N] DONE read, done in M:SS"), then ", RATE/s" once `elapsed` >= 1 and done > 0. */
char *fp4_progress_format_end(char *buf, size_t size, int n, int64_t done, int64_t total,
                              double elapsed);

/* Whether a sparse meter shows a line `elapsed` seconds into its run, the last shown at
 * `last` (< 0: none yet): elapsed >= delay, and elapsed - last >= every once one was shown.
 * Pure. */
bool fp4_progress_due(double elapsed, double last, double delay, double every);

/* One meter: fp4_progress_start, fp4_progress_step before each unit, fp4_progress_finish after
 * the last (the final line of a sparse meter), fp4_progress_end (once or more; clears a redrawn
 * line, and on an error path ends the meter without a final line). */
typedef struct fp4_progress {
    fp4_progress_mode mode;
    int n;         /* units */
    int64_t total; /* bytes of all units (0: unknown) */
    double t0;     /* clock seconds at start */
    bool drawn;    /* a redrawn line is on the screen */
    double delay, every; /* FP4_PROGRESS_SPARSE's timing ($FP4DIAG_PROGRESS_EVERY) */
    double last;   /* clock seconds of the last sparse line (< 0: none shown) */
    int share, shares; /* --shard I/N (or the MPI rank): each line opens "shard I/N " */
    FILE *out;     /* stderr */
    double (*clock)(void); /* CLOCK_MONOTONIC seconds; a test stubs it */
} fp4_progress;

/* Start a meter of `n` units and `total` bytes for a run of `verbosity` (the mode from stderr
 * and $TERM, fp4_progress_mode_for). */
void fp4_progress_start(fp4_progress *p, int verbosity, int n, int64_t total);

/* The share this run is (`count` > 0: --shard index/count, or the MPI rank of count ranks):
 * each line then opens "shard INDEX/COUNT ", so that lines of several processes in one log
 * tell apart. count <= 0: none. */
void fp4_progress_share(fp4_progress *p, int index, int count);

/* Unit i (0-based) of `name` starts, `done` bytes read before it. The name is escaped
 * (control characters, invalid UTF-8) before it is shown. */
void fp4_progress_step(fp4_progress *p, int i, const char *name, int64_t done);

/* The run is over, `done` bytes read: a sparse meter that showed a line, or whose run lasted
 * its delay, shows the final line (fp4_progress_format_end); then as fp4_progress_end. */
void fp4_progress_finish(fp4_progress *p, int64_t done);

/* Clear a redrawn line; the meter shows nothing more. */
void fp4_progress_end(fp4_progress *p);

#endif
