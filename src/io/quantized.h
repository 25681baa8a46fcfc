/* io/quantized.h — already-quantized checkpoints (SPEC §10): the packed 4-bit codes, their
 * block scales and their per-tensor scale, stored as separate safetensors tensors by a
 * producer, recognised as ONE logical tensor named as the module's weight, and decoded to fp32
 * bit for bit in that producer's own order of fp32 operations.
 *
 * Producers and their tensors (per module <m>; "K" is the input dimension, the last one):
 *   modelopt NVFP4       <m>.weight U8 [..., K/2], <m>.weight_scale F8_E4M3 [..., K/16]
 *                        (flat; or the cuBLAS 128x4 swizzle, padded; or U8 1-D, the same
 *                        tiles flattened, as TensorRT-LLM's fp4_quantize writes them),
 *                        <m>.weight_scale_2 F32
 *                        0-d or [1] (multiplied), <m>.input_scale F32 (optional)
 *   modelopt MXFP4       <m>.weight U8 [..., K/2], <m>.weight_scale U8/F8_E8M0 [..., K/32]
 *   compressed-tensors   <m>.weight_packed U8 [..., K/2], <m>.weight_scale F8_E4M3 [..., K/16],
 *     NVFP4              <m>.weight_global_scale F32 [1] (divided), <m>.input_global_scale
 *   compressed-tensors   <m>.weight_packed U8 [..., K/2], <m>.weight_scale U8/F8_E8M0 [..., K/32]
 *     MXFP4
 *   gpt-oss MXFP4        <p>_blocks U8 [E, R, K/32, 16], <p>_scales U8 [E, R, K/32] (or
 *                        <p>.blocks, <p>.scales: openai/gpt-oss' own checkpoint,
 *                        block.N.mlp.mlp1_weight); logical tensor <p> [E, R, K] (gate/up rows
 *                        interleaved as stored)
 *   GGUF (ggml) MXFP4    one tensor of ggml type 39 [..., K] (io/gguf.c): per 32 elements a
 *                        block of 17 bytes, E8M0 e then qs[16]: low nibble of qs[j] element j,
 *                        high nibble element j + 16; no per-tensor scale (a <m>.scale sidecar
 *                        beside it is a member and the tensor's problem)
 *   GGUF (ggml) NVFP4    one tensor of ggml type 40 [..., K]: per 64 elements a block of 36
 *                        bytes, four UE4M3 sub-block scales d[4] then qs[32]: sub-block s in
 *                        qs[8s..8s+7], low nibbles its elements 0..7, high ones 8..15; an
 *                        optional per-tensor F32 sidecar <m>.scale (or <NAME>.scale) beside
 *                        <m>.weight, multiplied after the block decode (ggml_mul)
 * Every other producer puts element 2j of a row in the low nibble of byte j, 2j+1 in the
 * high one.
 * The tensors decide the format; the directory's hf_quant_config.json and config.json
 * (quantization_config) are read for the declared producer/format and the exclude list, and
 * a declaration the tensors contradict is a problem of each tensor concerned.
 * No cJSON type crosses this header. */
#ifndef FP4_IO_QUANTIZED_H
#define FP4_IO_QUANTIZED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "base/status.h"
#include "io/source.h"

typedef enum fp4_qformat { FP4_QF_NVFP4 = 1, FP4_QF_MXFP4 = 2 } fp4_qformat;

typedef enum fp4_qproducer {
    FP4_QP_MODELOPT = 1,
    FP4_QP_COMPRESSED_TENSORS = 2,
    FP4_QP_GPT_OSS = 3,
    FP4_QP_GGUF = 4 /* ggml's block types in a .gguf file (llama-quantize, convert_hf_to_gguf) */
} fp4_qproducer;

/* How the block scales are stored. */
typedef enum fp4_qscale_layout {
    FP4_QS_FLAT = 0,    /* [..., K/block] row-major */
    FP4_QS_SWIZZLED = 1, /* cuBLAS 2-D block-scaling layout, rows padded to 128, columns to 4 */
    FP4_QS_GGUF = 2      /* inside ggml's blocks, beside the codes (packed == scale: the one
                            tensor's bytes; see fp4_quant_code and fp4_quant_scale_index) */
} fp4_qscale_layout;

/* "nvfp4", "mxfp4"; "modelopt", "compressed-tensors", "gpt-oss", "gguf" (NULL for a bad
 * value). */
const char *fp4_qformat_name(fp4_qformat f);
const char *fp4_qproducer_name(fp4_qproducer p);

/* Another reading of a quantized tensor than the one declared (SPEC §11's layout check). */
typedef enum fp4_qreading {
    FP4_QREAD_NIBBLE_SWAP = 0, /* the two codes of a byte the other way round */
    FP4_QREAD_RECIPROCAL,      /* NVFP4: the per-tensor scale applied the other way */
    FP4_QREAD_OTHER_SCALES     /* the block scales flat where declared swizzled, or back */
} fp4_qreading;

/* `declared` (a fp4_qtensor.layout; `ct`: compressed-tensors' global direction, `flat`: its
 * scales are flat) as `audit` names the layout it measured under reading r (SPEC §11): the
 * part read otherwise replaced, the declared one in parentheses ("e4m3 scales swizzled 128x4
 * (declared flat)"); a layout without that part (ggml's blocks) gets ", read with NOTE"
 * appended. Written to out (n bytes, at most 2 x the layout's size needed; cut to fit). */
void fp4_qlayout_under(const char *declared, bool ct, bool flat, fp4_qreading r, char *out,
                       size_t n);

/* Whether `layout` is a fp4_qtensor.layout the reader writes for a tensor of `format` by
 * `producer` (its scale layout, 1-D or 2-D scales, per-tensor scale present or not), as is or
 * as fp4_qlayout_under names it under another reading; when so, *swizzled says whether the
 * declared layout's scales are swizzled (FP4_QS_SWIZZLED). For `merge`, which checks a part's
 * quant.layout (SPEC §11). */
bool fp4_qlayout_possible(fp4_qformat format, fp4_qproducer producer, const char *layout,
                          bool *swizzled);

/* One logical quantized tensor. */
typedef struct fp4_qtensor {
    char *name;               /* "model.layers.0.self_attn.q_proj.weight" (owned) */
    fp4_qformat format;
    fp4_qproducer producer;
    fp4_qscale_layout scale_layout;
    int block;                /* elements per block scale: 16 (NVFP4) or 32 (MXFP4) */
    int rank;                 /* of the logical tensor: the packed rank (gpt-oss: one less) */
    int64_t dims[FP4_MAX_RANK]; /* logical dims; the last is K (2 x the packed bytes per row) */
    int64_t rows;             /* product of every dim but the last */
    int64_t scale_cols;       /* block scales per row as stored (K / block for flat) */
    bool scale_1d;            /* swizzled scales stored 1-D as U8 (TensorRT-LLM's CUTLASS
                                 layout, ModelOpt try_tensorrt): the same tile order */
    char layout[192];         /* "nibble low=even, e4m3 scales flat, global multiplied" */
    char *packed, *scale, *global, *input_scale; /* member tensor names (owned; global and
                                                    input_scale NULL when absent) */
    char **also;              /* the tensors of this logical tensor's other spelling (owned),
                                 nalso of them: a second packed tensor and its partners under
                                 the same logical name, or a stored tensor that has the logical
                                 name itself. Members (fp4_qset_find, fp4_quant_member) that are
                                 never read: their presence is q's problem, "stored twice" */
    int nalso;
    int64_t stored_bytes;     /* the members' bytes together */
    char problem[320];        /* "" when the members are consistent; else what is wrong
                                 ("weight_scale_2 missing", "weight_scale is 4x8, expected
                                 4x16 (one E4M3 per 16 of 256 inputs)") */
} fp4_qtensor;

/* An FP8 weight export (ModelOpt FP8, compressed-tensors float-quantized, DeepSeek-style
 * weight_scale_inv): <m>.weight F8_E4M3 or F8_E5M2 with a floating-point <m>.weight_scale (or
 * <m>.weight_scale_inv) beside it. Not a 4-bit format: listed as what it is and never analysed
 * in the default selection, its scale never as a weight (SPEC §10). */
typedef struct fp4_fp8 {
    char *weight, *scale;     /* owned */
    char dtype[16];           /* "E4M3", "E5M2" */
    char scheme[64];          /* "per-tensor scale", "per-channel scales", "block scales 2x4" */
    char problem[320];        /* "" or what the config files declare of the module that these
                                 8-bit tensors contradict ("hf_quant_config.json
                                 quantization.quant_algo is \"NVFP4\" (a 4-bit float format),
                                 the tensors are FP8 E4M3 (per-tensor scale)"): the weight's
                                 problem, an errors entry (fp4_quant_fold) */
} fp4_fp8;

/* Every quantized tensor of a source. */
typedef struct fp4_qset {
    fp4_qtensor *t;
    int n;
    fp4_fp8 *fp8;             /* the FP8 weights (safetensors), nfp8 of them */
    int nfp8;
    char fp8_producer[32];    /* the declared producer ("modelopt", "compressed-tensors") or
                                 "" when the config files name none */
    char declared[160];       /* what the config files declare: "hf_quant_config.json: modelopt
                                 NVFP4", or "" when none */
    char **exclude;           /* the checkpoint's own exclude list, as written (patterns,
                                 globs or "re:" regexes; owned), nexclude of them: from
                                 hf_quant_config.json when it has one, else config.json */
    int nexclude;
    char exclude_from[64];    /* where: "hf_quant_config.json exclude_modules",
                                 "config.json ignore", "" when none */
} fp4_qset;

/* Find the quantized tensors of `src` (safetensors and GGUF; any other format gets an empty
 * set). GGUF: every tensor of ggml type mxfp4/nvfp4 is one quantized tensor (its problem the
 * source's, if any), with its .scale / .input_scale sidecars as members. Safetensors:
 * lists and describes every tensor, groups partners by name, checks each group's shapes and
 * dtypes, then reads the config files beside the checkpoint (FILE's directory, or FILE when it
 * is a directory) and marks each tensor the declaration contradicts (another producer or
 * format, a quant_algo / format that names no 4-bit float format, a group_size or a
 * config_groups weights scheme that is not the tensors', a module the exclude list names; SPEC
 * §10) with a problem. A compressed-tensors <m>.weight_shape other than the packed shape x 2,
 * and a GGUF .scale sidecar beside an MXFP4 tensor, are problems of the tensor too. A config
 * file that cannot be parsed is a problem of every quantized tensor. One logical tensor stored
 * twice (two packed tensors under one logical name: gpt-oss' <p>_blocks and <p>.blocks,
 * ModelOpt's <m>.weight beside compressed-tensors' <m>.weight_packed; or a stored tensor named
 * as the logical tensor beside the packed one) is one entry of the set, the first in listing
 * order, with the other spelling's tensors in `also` and the problem "stored twice: A (...)
 * and B (...) ..." (A and B named after the module: "gate_up_proj_blocks"): never two entries,
 * never one read in place of the other. The exclude list itself is kept in
 * out->exclude (the run leaves what it names out of the default selection, run/recipe.h). FP4_ERR_INTERNAL only when out of memory;
 * errors describing a tensor propagate. */
fp4_status fp4_quant_scan(fp4_source *src, fp4_qset *out);
void fp4_qset_free(fp4_qset *qs);

/* The quantized tensor `name` is a member of (packed codes, block scales, global or input
 * scale), or -1. */
int fp4_qset_find(const fp4_qset *qs, const char *name);

/* The name of member k of q (k = 0, 1, ...: its packed codes, block scales, per-tensor scale,
 * input scale, the absent ones skipped, then its `also` tensors), NULL past the last. A selection pattern matching any
 * of them selects q, in every command (SPEC §10). */
const char *fp4_quant_member(const fp4_qtensor *q, int k);

/* Fold a described list (selection order, as fp4_source_select gives it) into logical
 * tensors: the first member of each quantized tensor in the list becomes one descriptor named
 * as the logical tensor (its logical dims, dtype "nvfp4"/"mxfp4", not numeric, stored_bytes of
 * every member, `problem` the tensor's problem), its other members are removed (freed), the
 * rest is unchanged, except that an FP8 weight (fp4_fp8) with a problem takes it. (*qidx)[i]
 * is the fp4_qset index of entry i or -1 (malloc'd, *n + 1 entries). FP4_ERR_INTERNAL only
 * when out of memory. */
fp4_status fp4_quant_fold(const fp4_qset *qs, fp4_tensor_desc *list, int *n, int **qidx);

/* The selection patterns with every one naming a logical tensor stored under other names
 * (compressed-tensors' <m>.weight, gpt-oss' <p>; a leading '/' allowed) replaced by its packed
 * member's name, so that fp4_source_select finds it (the fold then names it back). *out is a
 * malloc'd array of n + 1 pointers into `patterns` or qs (free it alone). FP4_ERR_INTERNAL only
 * when out of memory. */
fp4_status fp4_quant_patterns(const fp4_qset *qs, const char *const *patterns, int n,
                              const char ***out);

/* The role of tensor `name` in an FP8 export of qs: 1 its weight, 2 its scale, 3 its module's
 * input (activation) scale `<m>.input_scale`, 0 none; buf (when not 0) says what it is: "FP8
 * E4M3 weight (modelopt; per-tensor scale in weight_scale): quantized already, in 8 bits, not a
 * 4-bit format fp4diag measures", "the scale of the FP8 E4M3 .weight beside it (modelopt;
 * per-tensor scale)", "the input (activation) scale of the FP8 E4M3 .weight beside it
 * (modelopt)". */
int fp4_quant_fp8_role(const fp4_qset *qs, const char *name, char *buf, size_t n);

/* The skip reason of a quantized tensor in the analysis commands:
 * "already quantized (NVFP4, modelopt): audit needs the source". */
void fp4_quant_skip_reason(const fp4_qtensor *q, char *buf, size_t n);

/* What the analysis commands report of a quantized tensor they leave to `audit` (SPEC §10;
 * the report's skipped entry `quant`): its format, producer, layout and block, the histogram
 * of its 4-bit codes, and statistics of its decoded block scales. */
typedef struct fp4_qsummary {
    char format[8];           /* "nvfp4", "mxfp4" */
    char producer[24];        /* "modelopt", ... (fp4_qproducer_name) */
    char layout[192];         /* fp4_qtensor.layout */
    int block;                /* elements per block scale */
    int64_t histogram[16];    /* elements per code (bit 3 the sign), every element once */
    int64_t scale_bytes;      /* block scales: rows * K / block (swizzle padding not counted) */
    int64_t e8m0_ff;          /* MXFP4 scale bytes 0xFF (OCP: NaN) */
    int64_t e4m3_nan;         /* NVFP4 E4M3 bytes 0x7F/0xFF (NaN; not GGUF's UE4M3) */
    int64_t scale_zero;       /* block scales decoding to 0 (fp4_quant_block_scale) */
    int64_t scale_nonfinite;  /* ... to inf or NaN */
    double scale_min, scale_max; /* of the finite non-zero decoded block scales (per-tensor
                                    scale applied, as decoded); NaN when there is none */
    double tensor_scale;      /* the NVFP4 per-tensor scale as stored (ModelOpt's weight_scale_2,
                                 compressed-tensors' weight_global_scale, a GGUF .scale
                                 sidecar); NaN when the tensor has none */
} fp4_qsummary;

/* Summarise q from src's bytes (fp4_quant_bytes: its errors, FP4_ERR_INPUT naming the file
 * and tensor; *out is then zeroed). Reads every packed byte and block scale once, under
 * io/mapguard.h: FP4_ERR_INPUT "FILE: NAME: the file shrank while it was read (truncated)"
 * when the file lost pages it held. */
fp4_status fp4_quant_summarize(fp4_source *src, const fp4_qtensor *q, fp4_qsummary *out);

/* The same from q's bytes as fp4_quant_bytes gives them (packed codes, block scales as
 * stored, the per-tensor scale; global is the per-tensor scale applied, reported only when
 * q->global names one). The bytes are counted in pieces of about 1 MiB on up to
 * fp4_pario_threads threads (io/pario.h; the calling thread alone below 2 MiB): the counts
 * are integers, the same whatever the threads. No error: the caller checked the sizes. */
void fp4_quant_summarize_bytes(const fp4_qtensor *q, const uint8_t *packed,
                               const uint8_t *scales, float global, fp4_qsummary *out);

/* The E2M1 value of a 4-bit code (bit 3 sign): 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives
 * (code 8 is -0). */
float fp4_e2m1_value(unsigned code);

/* Where the block scale of logical row r, block c lies in the stored scale bytes (flat:
 * r * scale_cols + c; swizzled: the cuBLAS 128x4 tile layout; GGUF: the e byte of MXFP4
 * block g = r * scale_cols + c at 17 g, the d[g % 4] byte of NVFP4 block g / 4 at
 * 36 (g / 4) + g % 4, in the one tensor's bytes). */
int64_t fp4_quant_scale_index(const fp4_qtensor *q, int64_t r, int64_t c);

/* The 4-bit code (bit 3 sign) of element k of logical row r, from the packed bytes as
 * fp4_quant_bytes gives them (every layout: flat nibble pairs, or ggml's blocks). */
unsigned fp4_quant_code(const fp4_qtensor *q, const uint8_t *packed, int64_t r, int64_t k);

/* The decoded fp32 scale of block-scale byte b in the producer's order (see
 * fp4_quant_decode): e4m3(b) * global (modelopt), e4m3(b) / global (compressed-tensors),
 * ue4m3(b) * global (GGUF NVFP4: 0x00 and 0x7F are 0, the sign bit is not read),
 * 2^(b - 127) for MXFP4 (255: +inf). */
float fp4_quant_block_scale(const fp4_qtensor *q, uint8_t b, float global);

/* Decode `nrows` logical rows starting at row `row0` of q to fp32, row-major (nrows * K
 * floats), from the whole tensor's packed bytes (rows * K/2), block-scale bytes (as stored,
 * swizzled included) and global scale (ignored by MXFP4), in the producer's own order:
 *   modelopt NVFP4           s = e4m3(b) * global; w = e2m1(c) * s
 *   compressed-tensors NVFP4 s = e4m3(b) / global; w = e2m1(c) * s
 *   MXFP4 (safetensors)      w = e2m1(c) * 2^(b - 127), computed as fp32 multiplication by
 *                            the fp32 power (byte 255: 2^128 = +inf, code 0 then NaN, as
 *                            torch.ldexp gives)
 *   GGUF MXFP4               w = kv(c) * 2^(b - 128) (ggml's dequantize_row_mxfp4: doubled
 *                            E2M1 integers kv times ggml_e8m0_to_fp32_half; byte 255 is
 *                            2^127, finite)
 *   GGUF NVFP4               w = (kv(c) * ue4m3(d) / 2) * global (dequantize_row_nvfp4, then
 *                            the sidecar's ggml_mul; global 1 without a sidecar)
 * Code 8 decodes as -0, except in ModelOpt NVFP4 (+0, its table's entry 8) and GGUF (+0:
 * ggml's int8 kvalues).
 * E4M3 byte 0x7F/0xFF decodes as NaN. No error: the caller checked the shapes (fp4_quant_scan). */
void fp4_quant_decode(const fp4_qtensor *q, const uint8_t *packed, const uint8_t *scales,
                      float global, int64_t row0, int64_t nrows, float *out);

/* q's decode as base/common.h fp4c_qdec holds it (the tables of its producer's own decoder,
 * the operation with the per-tensor scale, the layout of codes and scales): fp4c_qdec_value
 * then gives fp4_quant_decode's bits for every element, on the host and the device (SPEC §11,
 * audit --device cuda). */
void fp4_quant_qdec(const fp4_qtensor *q, fp4c_qdec *out);

/* The activation (input) scale of q: its `input_scale` (ModelOpt, GGUF sidecar) or
 * `input_global_scale` (compressed-tensors) member, a one-value F32 (fp4_quant_scan checked
 * dtype and shape). Not used by the weight decode; audit checks it (SPEC §11). FP4_OK with
 * *out = the value, or NAN when q has none; FP4_ERR_INPUT "FILE: TENSOR: MEMBER is V,
 * expected finite and > 0 ..." when it cannot be read or is NaN, ±Inf, zero or negative
 * (*out then NAN). */
fp4_status fp4_quant_input_scale(fp4_source *src, const fp4_qtensor *q, float *out);

/* fp4_quant_bytes, and the sizes of the packed and the block-scale bytes (the same bytes and
 * size for GGUF, whose blocks hold both). */
fp4_status fp4_quant_bytes_n(fp4_source *src, const fp4_qtensor *q, const uint8_t **packed,
                             int64_t *packed_bytes, const uint8_t **scales,
                             int64_t *scale_bytes, float *global);

/* The stored bytes of q's members inside src's mapping (valid until the source closes): the
 * packed codes (rows * K/2 bytes), the block-scale bytes as stored (flat or swizzled) and the
 * per-tensor scale (1.0 for MXFP4). FP4_ERR_INPUT "FILE: NAME: <problem>" for a tensor with a
 * problem, members whose bytes the source cannot give or whose sizes disagree with q, and an
 * NVFP4 per-tensor scale that is not finite and > 0. */
fp4_status fp4_quant_bytes(fp4_source *src, const fp4_qtensor *q, const uint8_t **packed,
                           const uint8_t **scales, float *global);

/* Read the members of q from src and decode rows [row0, row0 + nrows) (see fp4_quant_decode)
 * into out (nrows x K floats). FP4_ERR_INPUT "FILE: NAME: <problem>" for a tensor with a
 * problem or a member whose bytes the source cannot give; the global scale must be finite and
 * > 0 for NVFP4. The decode reads the mapping under io/mapguard.h: FP4_ERR_INPUT "FILE: NAME:
 * the file shrank while it was read (truncated)" (out then partly written) when the file lost
 * pages it held. */
fp4_status fp4_quant_read(fp4_source *src, const fp4_qtensor *q, int64_t row0, int64_t nrows,
                          float *out);

#endif
