/* cmd/env.h — the FP4DIAG_* environment variables, checked once before a command runs. */
#ifndef FP4_CMD_ENV_H
#define FP4_CMD_ENV_H

#include "base/status.h"

/* Checks every FP4DIAG_* variable fp4diag reads against what the code can hold (man page,
 * ENVIRONMENT): FP4DIAG_READ_THREADS a decimal integer in [1, FP4_PARIO_MAX_THREADS];
 * FP4DIAG_ISA one of generic, avx2, avx512, neon (whether this CPU runs it is the engine's
 * warning); FP4DIAG_TRACE empty, 0, 1 or 2; FP4DIAG_CPU_WORDS empty, 0 or 1;
 * FP4DIAG_PROGRESS_EVERY seconds, digits with at most one '.' (at most 9 digits). Unset or empty
 * variables pass. Returns FP4_OK, or FP4_ERR_USAGE with a one-line message naming the variable and its
 * value escaped (control characters and bytes that are not UTF-8 as \xNN). */
fp4_status fp4_env_check(void);

#endif
