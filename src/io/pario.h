/* io/pario.h — large reads in pieces on several threads: how many threads a read may take,
 * pread of byte runs in pieces, and widening of stored words in pieces (the work of one
 * reader thread, which the analysis runs beside). */
#ifndef FP4_IO_PARIO_H
#define FP4_IO_PARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "io/source.h"

/* Reads smaller than this (bytes) stay on the calling thread: a team would cost more than it
 * saves (10,000 tiny tensors). Pieces are of FP4_PARIO_PIECE bytes. */
#define FP4_PARIO_MIN ((int64_t)2 << 20)
#define FP4_PARIO_PIECE ((int64_t)512 << 10)

/* The most threads a read can take (the pool's capacity): FP4DIAG_READ_THREADS's range is
 * [1, FP4_PARIO_MAX_THREADS] (cmd/env.c refuses any other value). */
#define FP4_PARIO_MAX_THREADS 64

/* The analysis' thread count (--threads; 0: OpenMP's default). A read takes at most
 * min(that, the CPUs this process may use, 4) threads, or FP4DIAG_READ_THREADS when set
 * (1: every read on the calling thread; at most FP4_PARIO_MAX_THREADS). Process-wide; set
 * before reading. */
void fp4_pario_set_threads(int threads);

/* Threads for a read of `bytes` (1 below FP4_PARIO_MIN). */
int fp4_pario_threads(int64_t bytes);

/* fn(ctx, k) for every k in [0, n) (pieces of one read, each touching its own bytes), on the
 * calling thread and up to nth - 1 pool threads (idle ones block, never spin); returns when
 * every piece is done. A call while another thread's is running runs alone. */
typedef void (*fp4_pario_fn)(void *ctx, int64_t k);
void fp4_pario_for(fp4_pario_fn fn, void *ctx, int64_t n, int nth);

/* pread every run (all of the same length `len`, runs[i].dst and .off given by
 * dst0 + i * dst_step and off0 + i * off_step) in pieces of FP4_PARIO_PIECE bytes on up to
 * fp4_pario_threads(total) threads; `swap` > 1: reverse the bytes of each word of that size
 * (big-endian data on a little-endian host) as each piece arrives (run lengths and steps are
 * multiples of it). A short read or a failure: FP4_ERR_INPUT "FILE: NAME: read failed at byte
 * N: why" for the first failing piece in file order (every piece before it is read). */
fp4_status fp4_pario_pread(int fd, const char *file, const char *name, unsigned char *dst0,
                           int64_t dst_step, int64_t off0, int64_t off_step, int64_t nruns,
                           int64_t len, int swap);

/* fp4_widen_inplace over n values in pieces on up to fp4_pario_threads threads, same bits:
 * the n stored words of s (at most 4 bytes each) lie in the last n * size bytes of buf's
 * 4n. Words of 4 bytes widen piece by piece in place; narrower words in rounds, each widening
 * the front of what is left into room that no word still unread occupies. False for a kind
 * fp4_widen_inplace refuses (nothing written). */
bool fp4_pario_widen_inplace(fp4_stored s, float *buf, size_t n);

#endif
