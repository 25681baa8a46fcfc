/* cleanup.h — a report is whole or absent even when a signal ends the run (SPEC §9): the one
 * temporary output file in flight is removed by a signal handler, which then lets the signal
 * take its default effect. */
#ifndef FP4_CLEANUP_H
#define FP4_CLEANUP_H

#include "base/status.h"

/* Register `path` (a temporary file the caller has just created) for removal if SIGINT,
 * SIGTERM, SIGHUP, SIGQUIT, SIGPIPE or SIGXFSZ arrives before fp4_cleanup_unregister. The first
 * call installs the handlers (a signal that was ignored at that moment stays ignored). One path
 * at a time: a new registration replaces the old. The handler unlinks the path (async-signal-
 * safe), restores the default action and re-raises, so the exit status still says "killed by
 * SIGxxx". FP4_ERR_INTERNAL when the path is longer than PATH_MAX - 1 or sigaction fails
 * (nothing is registered then). */
fp4_status fp4_cleanup_register(const char *path);

/* mkstemp(tmpl) and fp4_cleanup_register of the name it made, with the handled signals
 * blocked in between, so no signal can leave the new file behind. Returns the descriptor, or
 * -1 with errno set by mkstemp (nothing created or registered then). How report.c writes a
 * regular -o FILE: fd = fp4_cleanup_mkstemp(tmp); write, fsync, close, rename (or unlink on
 * error); then fp4_cleanup_unregister(). */
int fp4_cleanup_mkstemp(char *tmpl);

/* Forget the registered path (call right after rename() or unlink() of the temporary file).
 * Safe to call when nothing is registered. */
void fp4_cleanup_unregister(void);

/* The path registered now, or NULL (for tests). */
const char *fp4_cleanup_registered(void);

#endif
