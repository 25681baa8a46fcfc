/* engine.h — the CPU engine (SPEC §2–§5, §7): plans, the per-unit quantizer that writes
 * per-chunk fp64 partials, the shared grouped-row cache, and the table of instruction-set
 * variants (generic, avx2, avx512, neon) that all give the scalar reference's (ref.c) bits. */
#ifndef FP4_ENGINE_H
#define FP4_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/common.h"
#include "base/isa.h"
#include "num/metrics.h"
#include "num/quant.h"
#include "base/status.h"

/* ---- variants ---------------------------------------------------------------------------
 * One row per instruction set (fp4_isa, base/isa.h, which also decides which one runs). Every
 * variant gives ref.c's bits exactly, for every config (SPEC §7; test_engine loops over every
 * variant the CPU runs); they differ in speed only. */
typedef struct fp4_engine fp4_engine;

/* The variant for isa, or NULL when this build does not compile it or this CPU lacks its
 * instructions (fp4_isa_cpu_runs). */
const fp4_engine *fp4_engine_get(fp4_isa isa);
fp4_isa fp4_engine_isa(const fp4_engine *e);

/* The variant the engine runs: fp4_isa_active()'s (fp4_isa_use, else FP4DIAG_ISA, else the
 * widest this CPU runs), generic where this build has no engine for it. Never NULL. */
const fp4_engine *fp4_engine_active(void);
/* Run every later dispatch on e's instruction set, the RHT and amax passes too (fp4_isa_use;
 * NULL: back to the choice above). Process-wide; for tests and benchmarks, not while another
 * thread is inside the engine. */
void fp4_engine_use(const fp4_engine *e);

/* Everything derived once per (config, tensor): the grid, the row geometry and the
 * tensor-level scales of SPEC §3. */
typedef struct fp4_qplan {
    fp4_qconfig cfg;
    fp4c_grid grid;
    int64_t row_len, padded_len, counted_len; /* counted_len: entries per row in the metrics */
    int block, nblk, nchunk, unit_rows;       /* per row; unit_rows 16 with weight_2d, else 1 */
    float tensor_amax;
    float nv_sdec, nv_m; /* nvfp4: S_dec and m = S_enc * (1 / g_max) */
    float nv_m4;         /* nvfp4: S_enc * 0.25, Four over Six's scale-to-4 m (SPEC §5.1) */
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

/* Prepared rows in the layout of the grouped RTNE kernel (engine_impl.h): each row's blocks in groups
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
 * of the rows (backend_cpu.c). Each runs on the active variant (fp4_engine_active):
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

/* ---- whole tensors on the active variant (the scalar reference's numbers) ----------------- */
/* Optional outputs of fp4_quantize_rows; any pointer may be NULL.
 *   deq:    n_rows x padded_len fp32, dequantized (in the rotated domain when cfg->rht)
 *   codes:  n_rows x padded_len, one 4-bit code per byte, (sign << 3) | magnitude code
 *   scales: n_rows x (padded_len / block) block-scale bytes (E4M3 for nvfp4, E8M0 for mxfp4,
 *           0 for fp32/tensor) */
typedef struct fp4_qout {
    float *deq;
    uint8_t *codes;
    uint8_t *scales;
} fp4_qout;

/* Rotate (if cfg->rht), scale, round and decode n_rows rows of row_len fp32
 * values (in, row stride row_len) on the active variant, with the scalar reference's (ref.c)
 * bits. row0 is the global index of the first row: SR counters use
 * element index (row0 + r) * padded_len + j. tensor_amax is the amax of the whole (rotated)
 * tensor when fp4_needs_tensor_amax(cfg), else ignored. With weight_2d, n_rows must be a
 * multiple of 16 except for the tensor's last rows. Accumulates into *m when non-NULL.
 * Determinism (SPEC §7): the fixed partition is the chunk = up to FP4_CHUNK_BLOCKS consecutive
 * blocks of one row. Each fp64 sum of a block (Σx², Σ(x̂−x)², Σx̂x, Σx̂², the signed error and
 * the per-level error sums) starts at 0 and runs over the block's elements in order; block
 * sums are added to the chunk partial (starting at 0) in block order; chunk partials are
 * merged into *m in (row, chunk) order (fp4_metrics_merge). Integer counts are exact. Units
 * (rows, or 16-row tile rows with weight_2d) run on OpenMP threads (omp_get_max_threads());
 * the result is the same for any thread count and any split of the rows into calls made in
 * order, and the GPU reproduces it.
 * Errors: FP4_ERR_USAGE for an invalid (or unchecked) config; FP4_ERR_INTERNAL out of memory. */
fp4_status fp4_quantize_rows(const fp4_qconfig *cfg, float tensor_amax, const float *in,
                             int64_t row0, int64_t n_rows, int64_t row_len, fp4_qout *out,
                             fp4_metrics *m);

/* Tensor amax of rows as cfg sees them (after RHT when cfg->rht): max |v| over finite values,
 * folded into *amax (start it at 0). */
void fp4_amax_rows(const fp4_qconfig *cfg, const float *in, int64_t n_rows, int64_t row_len,
                   float *amax);

/* Max |v| over finite values of one row as cfg sees it (rotated when cfg->rht). */
float fp4_amax_row(const fp4_qconfig *cfg, const float *row, int64_t row_len);


#endif
