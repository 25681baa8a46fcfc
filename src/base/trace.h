/* trace.h — the developer trace: with FP4DIAG_TRACE=1 in the environment, timestamped phase
 * lines on stderr (process start, backend open, source open, per tensor: begin, amax and feed
 * done, end; the report written), for finding fixed costs where no profiler runs. Off: one
 * branch per call. Format and phases: docs/trace.md. */
#ifndef FP4_TRACE_H
#define FP4_TRACE_H

#include <stdbool.h>

/* Whether FP4DIAG_TRACE is set to a value other than "" or "0" (read once). */
bool fp4_trace_on(void);

/* Take the time all trace lines count from (fp4diag calls it before any library's
 * constructor runs, main.c); without it, the first trace call's time. */
void fp4_trace_start(void);

/* Seconds since the trace's start (fp4_trace_start) when the trace is on, else 0 (one
 * branch): for per-phase durations summed where a phase recurs (reads, waits, merges), printed
 * by a later fp4_trace line. */
double fp4_trace_clock(void);

/* One line "fp4diag trace +S.SSSSSS s [TID] TEXT" on stderr when the trace is on: S seconds
 * since fp4_trace_start, TID the calling thread (the process id for the main thread). */
void fp4_trace(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

#endif
