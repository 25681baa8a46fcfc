/* kernels.h — the extern "C" launchers of the CUDA kernels in kernels/: the only way C code reaches the GPU.
 * Fused RHT + scale + quantize + fp64 statistics per chunk (SPEC §2-§5, §7), the pass-1 amax,
 * the weight_2d tile amax, and an fp64 gemm through cuBLAS. All pointers are device pointers
 * unless named h_*; every launcher is asynchronous on `stream` and returns 0 or a cudaError_t. */
#ifndef FP4_KERNELS_H
#define FP4_KERNELS_H

#include <stdint.h>

#include "base/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-chunk fp64 partial sums, in this order (FP4K_NSUMS doubles per chunk). */
enum {
    FP4K_S_X2 = 0, FP4K_S_ERR2, FP4K_S_XQX, FP4K_S_XQ2, FP4K_S_SIGNED, FP4K_S_LEVEL0,
    FP4K_NSUMS = FP4K_S_LEVEL0 + 8
};

/* Exact integer counters, accumulated over all chunks of a launch (order-free). */
enum {
    FP4K_C_HIST0 = 0,                    /* 16: code histogram */
    FP4K_C_LEVEL0 = 16,                  /* 8: non-amax elements per magnitude level */
    FP4K_C_SIGNED_N = 24, FP4K_C_ELEMENTS, FP4K_C_PADDED, FP4K_C_ZERO, FP4K_C_NAN, FP4K_C_INF,
    FP4K_C_SATURATED, FP4K_C_CLIPPED, FP4K_C_BLOCKS, FP4K_C_ZERO_BLOCKS,
    FP4K_C_UNDERFLOW_BLOCKS, FP4K_C_NONFINITE_BLOCKS,
    FP4K_C_AMAX, /* float bits of the max block amax over counted blocks */
    FP4K_NCOUNTS
};

/* The recipe statistics (SPEC §5.1, fp4k_stats): per-chunk fp64 sums, in this order (fp4_ssums'
 * layout: FP4K_NTSUMS doubles per chunk), each chunk's block sums added in block order. */
enum {
    FP4K_T_X2NA = 0, FP4K_T_ERR2NA, FP4K_T_FOS,
    FP4K_T_SP_FLUSH, FP4K_T_SP_SCALE, FP4K_T_SP_GRID, FP4K_T_SP_CROSS, /* the error split */
    FP4K_NTSUMS
};

/* ... and its exact integer counters over all chunks of a launch (order-free). */
enum {
    FP4K_SC_BLOCKS = 0,  /* st_blocks */
    FP4K_SC_COUNT,       /* st_count */
    FP4K_SC_NONZERO,     /* st_nonzero */
    FP4K_SC_UNDERFLOWS,  /* underflows */
    FP4K_SC_FOS_BLOCKS, FP4K_SC_FOS_BLOCKS4,
    FP4K_SC_SPLIT_BLOCKS, /* split_blocks */
    FP4K_SC_HIST_BLOCKS, /* hist_blocks */
    FP4K_SC_MAXERR,      /* fp64 bits of max_abs_err (>= 0: orders as its bits) */
    FP4K_SC_SCALE0,      /* 256: scale_hist */
    FP4K_SC_AMAX0 = FP4K_SC_SCALE0 + 256, /* FP4_AMAX_BINS (metrics.h): amax_hist */
    FP4K_SC_RERR0 = FP4K_SC_AMAX0 + 512,  /* FP4_RERR_BINS (metrics.h): rerr_hist */
    FP4K_NSCOUNTS = FP4K_SC_RERR0 + 128
};

/* One configuration as the kernels see it: the numbers of a fp4_qplan (backend_impl.h), filled
 * by fp4k_cfg_from_plan in backend_cuda.c, so CPU and GPU derive them the same way. */
typedef struct fp4k_cfg {
    fp4c_grid grid;      /* common.h: levels, midpoints, g_max, emax */
    int scale;           /* fp4_scale_mode */
    int block;           /* elements per block */
    int rounding;        /* fp4_rounding */
    int sr_bits;
    uint64_t seed;
    uint32_t stream;
    int mx_rule;         /* fp4_mx_rule */
    int weight_2d;
    int rht_n;           /* 0: no RHT; else 16..256 */
    float ts;            /* tensor: amax_t / g_max */
    float nv_sdec, nv_m; /* nvfp4: S_dec, S_enc * (1 / g_max) */
    int64_t row_len;     /* input row length */
    int64_t padded_len;  /* fp4_padded_len */
    int64_t counted_len; /* entries per row that count in the metrics */
    float nv_m4;         /* nvfp4: S_enc * 0.25, Four over Six's scale to 4 (SPEC §5.1) */
    int fos;             /* fp4_fos_applies: fp4k_stats evaluates Four over Six */
    int split;           /* fp4_split_applies: fp4k_stats evaluates the error split */
    float tensor_amax;   /* the plan's tensor amax (the split's amax_s under tensor scales) */
} fp4k_cfg;

/* Whether the fused kernel handles cfg (block <= 256, rht_n <= 64 * block); the backend runs
 * any other config through the host reference. */
int fp4k_cfg_supported(const fp4k_cfg *cfg);

/* Number of chunks (FP4_CHUNK_BLOCKS blocks of one row) in n_rows rows under cfg. */
int64_t fp4k_nchunks(const fp4k_cfg *cfg, int64_t n_rows);

/* Fused pass 2 over rows [0, n_rows) of `in` (row stride cfg->row_len, fp32), the global index
 * of its first row being row0. Writes FP4K_NSUMS doubles per chunk to part (chunk order =
 * (row, chunk)) and adds the FP4K_NCOUNTS counters into counts (uint64, pre-zeroed by the
 * caller). signs: rht_n floats (+1/-1), NULL without RHT. tile_amax: with weight_2d, the
 * output of fp4k_tile_amax for these rows, else NULL. codes/scales: optional outputs (NULL to
 * skip): codes n_rows x padded_len bytes, scales n_rows x (padded_len/block) bytes. */
int fp4k_quantize(const fp4k_cfg *cfg, const float *in, int64_t row0, int64_t n_rows,
                  const float *signs, const float *tile_amax, double *part, uint64_t *counts,
                  uint8_t *codes, uint8_t *scales, void *stream);

/* The recipe statistics of SPEC §5.1 over the same rows as fp4k_quantize (same arguments), the
 * CPU's bits (engine/stats.c): per block from the same x̂, each block's fp64 sums from +0 in
 * element order, then per chunk in block order: FP4K_NTSUMS doubles per chunk to spart, the
 * FP4K_NSCOUNTS counters added into scounts (uint64, pre-zeroed by the caller). rot: with RHT,
 * n_rows x padded_len floats of scratch (the rotated rows are written there first), else
 * unused (NULL). */
int fp4k_stats(const fp4k_cfg *cfg, const float *in, int64_t row0, int64_t n_rows,
               const float *signs, const float *tile_amax, float *rot, double *spart,
               uint64_t *scounts, void *stream);

/* fp4k_stats's kernel for every config (on != 0) instead of its register-resident variant for
 * RTNE, block 16 or 32 and RHT none or 16 (the same numbers): for make bench-gpu's comparison
 * and the GPU parity suite, which runs both. Not thread-safe; set it before any launch. */
void fp4k_stats_generic(int on);

/* Per-chunk partials added into running sums on the device (SPEC §7's order): for each entry,
 * for each field f < nsums, acc[f] = (...((acc[f] + part[0 * nsums + f]) + part[1 * nsums + f])
 * ...) + part[(nch - 1) * nsums + f] in IEEE fp64 round-to-nearest, chunk by chunk: the bits
 * of metrics.h fp4_fsums_add / fp4_ssums_add applied on the host in chunk order. part: nch x
 * nsums doubles (fp4k_quantize's or fp4k_stats's output), acc: nsums doubles, both device
 * pointers; an entry with nch <= 0 adds nothing. Entries must not share an acc. list is a
 * host array of n entries (passed by value in the launches, FP4K_OSUM_MAX a launch). */
typedef struct fp4k_osum {
    const double *part;
    double *acc;
    int64_t nch;
    int nsums;
} fp4k_osum;
#define FP4K_OSUM_MAX 32
int fp4k_ordered_sums(const fp4k_osum *list, int n, void *stream);

/* Pass 1: fold the amax of finite |values| of rows (after the RHT of size rht_n with `signs`
 * when rht_n > 0) into *amax (a float on the device, start it at 0). */
int fp4k_amax(const float *in, int64_t n_rows, int64_t row_len, int64_t padded_len, int rht_n,
              const float *signs, float *amax, void *stream);

/* weight_2d: amax of each 16x16 tile (16 rows x 16 columns, after the RHT) of n_rows rows;
 * tile_amax holds ceil(n_rows/16) x (padded_len/16) floats. */
int fp4k_tile_amax(const float *in, int64_t n_rows, int64_t row_len, int64_t padded_len,
                   int rht_n, const float *signs, float *tile_amax, void *stream);

/* Stored 16-bit float words -> fp32: n words at `words` (IEEE f16, or bf16 when bf16 != 0;
 * host byte order) into out[0..n), with the bits io/widen.c gives (exact; a NaN keeps its sign
 * and has every other bit set). Both pointers 16-byte aligned (cudaErrorInvalidValue else). */
int fp4k_widen16(const void *words, int bf16, float *out, int64_t n, void *stream);

/* A tensor in device memory, any strides (in elements, any sign), gathered into its canonical
 * rows along `axis` (run/driver.h fp4_layout_of: rows of dims[axis] elements, numbered by the
 * other dimensions in row-major order; rank 0: one row of one element): rows row0 ..
 * row0 + nrows of it, element words of esz bytes (4: fp32, 2: f16/bf16) copied as they are
 * to out (row-major, nrows x dims[axis] words). rank <= FP4K_MAX_RANK; data need not be
 * aligned (byte reads then). */
#define FP4K_MAX_RANK 8
int fp4k_gather(const void *data, int esz, int rank, const int64_t *dims, const int64_t *strides,
                int axis, int64_t row0, int64_t nrows, void *out, void *stream);

/* Already-quantized exports (SPEC §11, audit --device cuda), from their stored bytes: `dec`
 * points to fp4c_qdec structs in device memory (base/common.h), packed and scales to the
 * whole tensor's stored bytes on the device (GGUF: both the one tensor's bytes), global is the
 * per-tensor scale, K the elements per row (dec->K, known to the host). fp4k_qdecode writes logical rows [row0, row0 + nrows) decoded, row-major,
 * to out (nrows x K floats): fp4c_qdec_value's bits, those of io/quantized.c
 * fp4_quant_decode. */
int fp4k_qdecode(const fp4c_qdec *dec, int64_t K, const uint8_t *packed, const uint8_t *scales,
                 float global, int64_t row0, int64_t nrows, float *out, void *stream);

/* The audit's export sums of rows [row0, row0 + nrows) against the source values x (nrows x K
 * floats, row-major), decoded on the fly: per segment (FP4C_AUDIT_SEG elements of a row, in
 * (row, segment) order) FP4C_AS_N doubles to seg, each from +0 in element order (common.h
 * FP4C_AS_*). dec[0] is the declared decode (FP4C_AS_DECL, _SWAP, _NA; block amax over the
 * finite |x| as run/audit.c), dec[1] the other global-scale direction (FP4C_AS_RECIP) and
 * dec[2] the other scale layout (FP4C_AS_SWZ), each taken only when its use_* is non-zero
 * (else those sums are 0). */
int fp4k_audit_sums(const fp4c_qdec *dec, int64_t K, int use_recip, int use_swz,
                    const uint8_t *packed,
                    const uint8_t *scales, float global, int64_t row0, int64_t nrows,
                    const float *x, double *seg, void *stream);

/* C (m x n, row-major) = A (m x k, row-major) * B (n x k, row-major)^T in fp64, cuBLAS dgemm.
 * handle: a cublasHandle_t made by fp4k_blas_create, which loads cuBLAS (dlopen of
 * libcublas.so.<major>) at its first call and returns -1 with fp4k_blas_last_error() set when
 * it cannot (not linked: other runs start without it). */
int fp4k_blas_create(void **handle);
const char *fp4k_blas_last_error(void);
void fp4k_blas_destroy(void *handle);
int fp4k_dgemm_abt(void *handle, const double *a, const double *b, double *c, int64_t m,
                   int64_t n, int64_t k, void *stream);

/* Device count (0 when none or no driver) and a one-line description of device 0. */
int fp4k_device_count(void);
void fp4k_device_name(char *buf, int n);
const char *fp4k_error_string(int err);

#ifdef __cplusplus
}
#endif

#endif
