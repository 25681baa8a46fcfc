/* backend_impl.h — internals shared by quant.c, backend.c and the backends: the per-unit
 * quantization engine (one row, or one 16-row tile row for weight_2d) that writes per-chunk
 * fp64 partials, and the backend vtable a CUDA backend plugs into. Not a public interface. */
#ifndef FP4_BACKEND_IMPL_H
#define FP4_BACKEND_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "common.h"
#include "metrics.h"
#include "quant.h"

/* Everything derived once per (config, tensor): the grid, the row geometry and the
 * tensor-level scales of SPEC §3. */
typedef struct fp4_qplan {
    fp4_qconfig cfg;
    fp4c_grid grid;
    int64_t row_len, padded_len, counted_len; /* counted_len: entries per row in the metrics */
    int block, nblk, nchunk, unit_rows;       /* per row; unit_rows 16 with weight_2d, else 1 */
    float tensor_amax;
    float nv_sdec, nv_m; /* nvfp4: S_dec and m = S_enc * (1 / g_max) */
    float ts;            /* tensor: amax_t / g_max */
} fp4_qplan;

/* Validate cfg (a copy is checked; its block must already be the checked one) and derive the
 * plan. FP4_ERR_USAGE on an invalid config. */
fp4_status fp4_qplan_make(const fp4_qconfig *cfg, float tensor_amax, int64_t row_len,
                          fp4_qplan *p);

/* Floats of scratch one unit needs. */
int64_t fp4_qplan_scratch_floats(const fp4_qplan *p);

/* Quantize nr (<= unit_rows) rows starting at global row grow, read from in (stride
 * row_len). Outputs (any may be NULL) at the unit's first row, row strides padded_len and nblk.
 * partials[nr * nchunk] are initialised here and receive the per-chunk sums (row-major). */
void fp4_qplan_unit(const fp4_qplan *p, const float *in, int64_t grow, int nr, float *scratch,
                    float *deq, uint8_t *codes, uint8_t *scales, fp4_metrics *partials);

/* Prepared rows in the layout of the grouped RTNE kernel (quant.c): each row's blocks in groups
 * of 8 transposed into lanes, with each block's amax over finite values, the first index
 * attaining it and a non-finite flag. Built once per row and block size by the first config
 * that needs it and read by every later config of the same preparation and block size; the
 * same bits as loading each group on the fly (the kernel reads nothing else of the rows).
 *   fp4_grpcache_bytes: the memory fp4_grpcache_new takes for these sizes, in bytes (0:
 *     invalid sizes).
 * Determinism (SPEC §7): the cache changes no bit of any result, only who loads a group.
 *   fp4_grpcache_new: room for `rows` rows of up to max_padded_len floats, blocks of
 *     min_block..max_block; NULL when out of memory or the sizes are invalid.
 *   fp4_grpcache_reset: the prepared rows changed (a new row group or preparation). */
typedef struct fp4_grpcache {
    int rows;
    int64_t row_T, row_g; /* floats of T, and lanes of am/ak/bad, per row */
    float *T, *am;
    int32_t *ak, *bad;
    int *block;           /* [rows] block size a row is loaded for; 0: not loaded */
} fp4_grpcache;
int64_t fp4_grpcache_bytes(int rows, int64_t max_padded_len, int min_block, int max_block);
fp4_grpcache *fp4_grpcache_new(int rows, int64_t max_padded_len, int min_block, int max_block);
void fp4_grpcache_free(fp4_grpcache *gc);
void fp4_grpcache_reset(fp4_grpcache *gc);

/* fp4_qplan_unit in parts, so that configs with the same rotation share one prepared copy
 * of the rows (backend_cpu.c):
 *   fp4_qplan_prep: rows zero-padded to padded_len and rotated when cfg->rht, into v
 *     (nr x padded_len); configs with equal rht and padded_len prepare the same bits.
 *   fp4_input_counts: zero/nan/inf counts of n input values added to *m (integer, order-free).
 *   fp4_qplan_unit_prepared: fp4_qplan_unit on prepared rows vin (stride padded_len) without
 *     the zero/nan/inf counts and without initialising partials (the caller zeroes them);
 *     adds elements/padded. scratch as for fp4_qplan_unit (its first rows are not read).
 *     gc (may be NULL): the shared grouped rows, vin's first row being gc's row gc_row. */

void fp4_qplan_prep(const fp4_qplan *p, const float *in, int nr, float *v);
void fp4_input_counts(const float *x, int64_t n, fp4_metrics *m);
void fp4_qplan_unit_prepared(const fp4_qplan *p, const float *vin, int64_t grow, int nr,
                             float *scratch, float *deq, uint8_t *codes, uint8_t *scales,
                             fp4_metrics *partials, fp4_grpcache *gc, int gc_row);

/* Max |v| over finite values of one row as cfg sees it (rotated when cfg->rht). */
float fp4_amax_row(const fp4_qconfig *cfg, const float *row, int64_t row_len);

/* ---- the backend vtable ------------------------------------------------------------------ */
typedef struct fp4_backend_ops {
    const char *name;
    void (*close)(fp4_backend *be);
    /* an->be, cfgs, ncfg, n_rows, row_len and needs_amax are set before begin is called */
    fp4_status (*begin)(fp4_analysis *an);
    fp4_status (*amax)(fp4_analysis *an, const float *rows, int64_t nrows);
    fp4_status (*feed)(fp4_analysis *an, const float *rows, int64_t nrows);
    fp4_status (*end)(fp4_analysis *an, fp4_metrics *out); /* unfinished metrics */
    void (*abort)(fp4_analysis *an);                       /* free an->impl */
} fp4_backend_ops;

struct fp4_backend {
    const fp4_backend_ops *ops;
    int threads; /* resolved, >= 1 */
    void *impl;
};

struct fp4_analysis {
    fp4_backend *be;
    const fp4_qconfig *cfgs;
    int ncfg;
    int64_t n_rows, row_len;
    int64_t rows_amax, rows_fed; /* progress, for order checks */
    bool needs_amax;
    void *impl;
};

/* The CPU (OpenMP) engine of backend_cpu.c. */
fp4_status fp4_cpu_backend_open(int threads, fp4_backend **out);

#ifdef FP4_HAVE_CUDA_BACKEND
/* The CUDA engine (kernels/), when a build provides it: FP4_ERR_DEVICE "CUDA requested but
 * ..." when no GPU or driver is usable. */
fp4_status fp4_cuda_backend_open(fp4_backend **out);
/* A plan as the kernels see it (kernels.h fp4k_cfg); rht_n 0 without RHT. */
struct fp4k_cfg;
void fp4_cuda_cfg_of(const fp4_qplan *p, struct fp4k_cfg *out);
#endif

#endif
