/* quant.h — one quantization configuration (format, scale mode, block, rounding, RHT) and the
 * conventions of the quantizer (SPEC §2–§4); the quantizer itself is the CPU engine's
 * (engine/engine.h: fp4_quantize_rows). The CPU backend, the GPU kernels' parity tests and the
 * gemm command all go through these definitions. */
#ifndef FP4_QUANT_H
#define FP4_QUANT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/common.h"
#include "num/format.h"
#include "num/rht.h"
#include "base/status.h"

typedef enum fp4_scale_mode {
    FP4_SCALE_FP32 = 0, /* s_b = amax_b / g_max, fp32 (default; block from --block) */
    FP4_SCALE_NVFP4,    /* E4M3 block scale under an fp32 tensor scale, block 16 (TE order) */
    FP4_SCALE_MXFP4,    /* E8M0 power-of-two block scale, block 32 */
    FP4_SCALE_TENSOR,   /* one scale amax_t / g_max for the whole tensor */
    FP4_SCALE_COUNT
} fp4_scale_mode;

typedef enum fp4_rounding { FP4_ROUND_RTNE = 0, FP4_ROUND_SR } fp4_rounding;
typedef enum fp4_mx_rule { FP4_MX_FLOOR = 0, FP4_MX_RCEIL } fp4_mx_rule;

/* Everything that changes a number. Canonical layout: a tensor is seen as n_rows rows of
 * row_len elements, blocks (and RHT groups) running along a row; a row is zero-padded to
 * padded_len = fp4_padded_len(cfg, row_len). */
typedef struct fp4_qconfig {
    fp4_format format;
    fp4_scale_mode scale;
    int block;               /* elements per block: fp32 any power of two 2..2^20 (default
                                16), nvfp4 16, mxfp4 32; tensor: the padding/chunk granule,
                                set to 16 by fp4_qconfig_check */
    fp4_rounding rounding;
    int sr_bits;             /* 24 (full, default) or 8 (hardware-like) */
    uint64_t seed;           /* Philox key for SR (SPEC §2) */
    uint32_t stream;         /* Philox counter word 2: separates tensors and operands */
    fp4_mx_rule mx_rule;
    bool weight_2d;          /* nvfp4 only: one scale per 16x16 tile (16 rows x 16 columns) */
    const fp4_rht_signs *rht; /* NULL: no RHT; else the run's sign vector, size rht->n */
    bool error_split;        /* --error-split: also compute the error split (SPEC §5.1); off:
                                no pass, no field (does not change any value) */
} fp4_qconfig;

/* Names as reports spell them: "fp32", "nvfp4", "mxfp4", "tensor"; "rtne", "sr";
 * "floor", "rceil". Parsers return FP4_ERR_USAGE on an unknown name. */
const char *fp4_scale_name(fp4_scale_mode m);
const char *fp4_rounding_name(fp4_rounding r);
const char *fp4_mx_rule_name(fp4_mx_rule r);
fp4_status fp4_scale_parse(const char *s, fp4_scale_mode *out);
fp4_status fp4_rounding_parse(const char *s, fp4_rounding *out);
fp4_status fp4_mx_rule_parse(const char *s, fp4_mx_rule *out);

/* Fill defaults: e2m1, fp32, block 16, rtne, sr_bits 24, seed 0, stream 0, floor, no RHT. */
void fp4_qconfig_default(fp4_qconfig *cfg);

/* Check a config for consistency (block size for the scale mode, weight_2d only with nvfp4,
 * RHT size a power of two 16..256, e2m1:max only with amax-based modes). FP4_ERR_USAGE with a
 * detail otherwise. Sets cfg->block to the mode's fixed size for nvfp4/mxfp4 (and 16 for
 * tensor). fp4_quantize_rows and the backends require a checked config. */
fp4_status fp4_qconfig_check(fp4_qconfig *cfg);

/* row_len rounded up to a multiple of the block and of the RHT size. */
int64_t fp4_padded_len(const fp4_qconfig *cfg, int64_t row_len);

/* Whether a and b give identical dequantized values for every input (SPEC §2): the same grid
 * up to a power of two (fp4_format_same_grid: e1m2 and int4), and the same scale mode, block,
 * rounding (SR bits, seed and stream), MX rule, weight_2d and RHT (off on both, or the same
 * size and signs). A config is the same as itself. */
bool fp4_qconfig_same_values(const fp4_qconfig *a, const fp4_qconfig *b);

/* Whether this config needs the tensor amax (nvfp4, tensor) before pass 2. */
bool fp4_needs_tensor_amax(const fp4_qconfig *cfg);

/* Whether the Four over Six statistics (SPEC §5.1) apply to cfg: nvfp4 scales on the full
 * e2m1 grid (g_max 6) with RTNE; elsewhere they are null. */
bool fp4_fos_applies(const fp4_qconfig *cfg);

/* Whether the error split (SPEC §5.1) is computed for cfg: asked for (cfg->error_split) and
 * RTNE (any grid and scale); asked for under SR it is null. */
bool fp4_split_applies(const fp4_qconfig *cfg);

#define FP4_CHUNK_BLOCKS FP4C_CHUNK_BLOCKS /* common.h: shared with the kernels */

/* Conventions (SPEC §2–§5; the bit-level ones are pinned in common.h):
 *  - Codes: (sign << 3) | magnitude index; -0 gives code 8 (SPEC §2). TE's reference writes
 *    code 0 for an input of exactly -0.0; that is the one known difference from its codes.
 *  - SR element index: (row0 + r) * padded_len + j, pads included; Philox counter
 *    (idx lo, idx hi, cfg->stream, 0), key (seed lo, seed hi).
 *  - RHT: the zero-padded row is rotated group by group (size rht->n); te signs are tiled
 *    for n > 16 (s[i] = te16[i % 16]); outputs (deq, codes) are in the rotated domain.
 *  - Scales: fp32 s_b = amax_b / g_max, t = |x| / s_b; tensor s = amax_t / g_max; nvfp4 in
 *    TE's order (SPEC §3), an E4M3 block scale of 0 (underflow) keeps TE's codes (±g_max for
 *    non-zero x) but decodes to ±0; mxfp4 E8M0 (floor or rceil), t = |x| * 2^-e exactly.
 *    fp32/tensor with a scale that underflows to 0 while amax_b > 0: block decodes to ±0,
 *    counted as scale underflow.
 *  - Counted entries: without RHT the row_len real elements of each row; with RHT all n
 *    entries of every group holding a real element (fully padded groups/blocks are skipped).
 *    Sums, histogram, saturated and level statistics run over counted entries of finite
 *    blocks. Counts `elements` (real inputs), `padded` (padded_len - row_len per row), `zero`,
 *    `nan`, `inf` are of the input values before rotation.
 *  - A block holding a NaN/±Inf (after rotation, when RHT) is counted in nonfinite_blocks and
 *    excluded from every sum, the histogram and the levels; its outputs pass the values
 *    through unquantized (deq = value, code 0, scale byte 0). Amax ignores non-finite values.
 *  - Level statistics skip zero blocks and underflowed blocks, and each block's amax element
 *    (first occurrence of the largest |v|); normalized t = |x| / s with s the effective decode
 *    scale (fp32 s_b, tensor s, nvfp4 e * S_dec, mxfp4 2^e); error = q - t in fp64.
 *  - saturated: t > g_max before clamping (live blocks); clipped: the same, mxfp4 only.
 *  - metrics tensor_amax: the tensor amax given (nvfp4/tensor) or the largest block amax. */

#endif
