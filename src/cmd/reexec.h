/* reexec.h — running fp4diag again with one more environment variable, for settings a library
 * reads only when it is loaded (OpenBLAS's core type, libgomp's wait policy). */
#ifndef FP4_REEXEC_H
#define FP4_REEXEC_H

#include <stdbool.h>

/* main.c records its argv here; fp4_reexec_with uses it. Tests record nothing: no re-exec. */
void fp4_reexec_set_argv(char **argv);

/* Set var=value (overwriting) and execv("/proc/self/exe", argv), argv being what main recorded
 * (or the given one when not NULL). Returns only when nothing was done: no argv recorded, not
 * Linux/x86-64 with GCC, the program started through its loader (ld.so fp4diag ...: the exec
 * would run the loader) or under valgrind (/proc/self/exe is then not this program), or the
 * exec failed (then var is unset again). */
void fp4_reexec_with(char **argv, const char *var, const char *value);

#endif
