/* reexec.h — running fp4diag again with one more environment variable, for settings a library
 * reads only when it is loaded (OpenBLAS's core type, libgomp's wait policy): process policy,
 * the program's alone (no layer below cmd/ starts a process). */
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

/* fp4diag's default for OpenMP's idle threads: OMP_WAIT_POLICY=passive, i.e. an idle thread
 * sleeps at once instead of spinning (libgomp's default spins 300000 rounds, milliseconds, at
 * every end of a parallel region, on cores the reader thread and the widening need). On the
 * 16-core H200 host, 16 threads, 1 GiB as f32 / bf16, one analysis: 0.63 / 0.45 s wall with
 * libgomp's default, 0.50 / 0.35 s passive, 0.46 / 0.40 s with GOMP_SPINCOUNT=1000; six
 * analyses on bf16: 0.88, 0.77, 0.91 s. User time (f32 one, bf16 one, bf16 six): 9.0, 6.4,
 * 13.2 s with libgomp's default, 1.8, 1.8, 8.1 s passive.
 * libgomp reads its variables once, when it is loaded, so this sets the variable and executes
 * the program again (reexec.h), which costs a process start (~10 ms): done only when the user
 * set neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT, the run uses more than one CPU thread
 * (threads), it was not started by mpirun (MPI is up by now), and `input` (a file, or a
 * directory's files) holds at least 128 MiB. Returns when nothing is done. */
void fp4_omp_wait_default(const char *input, int threads);

/* For commands that run BLAS, first thing in main: when OpenBLAS picked a generic fallback
 * core on a CPU with AVX2 or AVX-512 (run/gemm_blas.h fp4_dgemm_openblas_core_wanted), set
 * OPENBLAS_CORETYPE to the right one and execute the program again with the same argv;
 * otherwise, or when the second start is declined (fp4_reexec_with), nothing changes. */
void fp4_reexec_openblas_core(char **argv);

#endif
