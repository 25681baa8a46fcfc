/* config.h — the run configuration: everything an analysis or gemm run needs (the qconfig
 * grid of formats x scales x RHT modes, the run's resources, the selection, how the report is
 * shown), apart from how it was asked for. The program (cmd/options.c) fills one from argv; a
 * library caller fills one directly. Every layer below the program takes this struct, never
 * argv (SPEC §4 names the options each field comes from). */
#ifndef FP4_RUN_CONFIG_H
#define FP4_RUN_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "base/status.h"
#include "num/format.h"
#include "num/quant.h"
#include "num/rht.h"
#include "run/shard.h"

#define FP4_MAX_FORMATS 16
#define FP4_DEFAULT_FORMATS "e2m1,e1m2,int4"
#define FP4_DEFAULT_MEM_LIMIT ((int64_t)1 << 30)

#define FP4_MAX_EXCLUDE 32

/* How the verdict ranks tensors (gemm: layers). gap: largest best-minus-worst SQNR gap first;
 * sqnr: lowest best SQNR first; delta: largest |delta| of the best config first. */
/* --emit-exclude formats: a ModelOpt exclude_modules JSON, an llm-compressor ignore: YAML */
enum { FP4_EMIT_MODELOPT = 1, FP4_EMIT_LLM_COMPRESSOR = 2 };

/* --rank-by (SPEC §9): gap, sqnr, delta; the recipe statistics of SPEC §5.1 of each tensor's
 * best config: underflow (underflows_pct), sqnr-nonamax, maxerr (max_abs_err / tensor_amax),
 * relerr (rel_err_percentiles.p99).
 * Analysis commands only: gemm takes the first three. */
typedef enum fp4_rank_by {
    FP4_RANK_GAP = 0, FP4_RANK_SQNR, FP4_RANK_DELTA, FP4_RANK_UNDERFLOW, FP4_RANK_SQNR_NONAMAX,
    FP4_RANK_MAXERR, FP4_RANK_RELERR
} fp4_rank_by;
#define FP4_RANK_COUNT (FP4_RANK_RELERR + 1)

/* RHT mode: off (default for sqnr/bias/buckets), on, or both (each format with and without). */
typedef enum fp4_rht_mode { FP4_RHT_OFF = 0, FP4_RHT_ON, FP4_RHT_BOTH } fp4_rht_mode;

typedef struct fp4_run_config {
    /* --- the quantization configs (SPEC §4) --- */
    fp4_format formats[FP4_MAX_FORMATS]; /* --format LIST|all (nvfp4/mxfp4: e2m1 here) */
    int nformats;
    int fmt_scale[FP4_MAX_FORMATS]; /* each format's scale mode (fp4_scale_mode), -1 = take
                                     * `scale`; nvfp4 and mxfp4 name theirs; resolved by
                                     * fp4_run_config_finish (repeated format+scale pairs
                                     * merged) */
    fp4_scale_mode scale;  /* --scale fp32|nvfp4|mxfp4|tensor (default fp32) */
    bool scale_given;      /* scale was chosen by the caller (a format naming another scale
                            * is then a conflict) */
    int block;             /* --block N, elements per block (default 16; nvfp4 16, mxfp4 32
                            * when not given) */
    bool block_given;      /* block was chosen by the caller */
    int axis;              /* --axis A: block axis, negative counts from the end (default -1) */
    fp4_rounding rounding; /* --rounding rtne|sr */
    int sr_bits;           /* --sr-bits 24|8 */
    uint64_t seed;         /* --seed N */
    fp4_rht_mode rht;      /* --rht off|on|both */
    int rht_size;          /* --rht-size N, power of two 16..256 (default 16) */
    char rht_signs_spec[48]; /* --rht-signs te|seed:N|none (default te) */
    fp4_rht_signs signs;   /* the run's sign vector, made from the two above by
                            * fp4_run_config_finish */
    fp4_mx_rule mx_rule;   /* --mx-rule floor|rceil */
    bool weight_2d;        /* --weight-2d (nvfp4 only) */
    bool error_split;      /* --error-split: the error split of SPEC §5.1 (RTNE; its own pass) */

    /* --- resources --- */
    int threads;           /* --threads N (0 = all cores) */
    fp4_device device;     /* --device cpu|cuda|auto (default auto) */
    int64_t mem_limit;     /* --mem-limit, bytes (default 1 GiB) */

    /* --- the selection --- */
    fp4_shard shard;       /* --shard I/N: share I of N of the selection (count 0: all) */
    bool allow_external;   /* --allow-external: read files the input names outside its
                              directory tree (HDF5 external links, external raw storage and
                              virtual-dataset sources; safetensors shards and directory entries
                              that resolve outside), still only regular files */
    bool all_tensors;      /* --all-tensors: every numeric tensor, whatever its rank or type
                              (implies all_weights) */
    bool all_weights;      /* --all-weights: also the weights recipes keep in high precision
                              (run/recipe.h: embeddings, lm_head, norms, MoE routers, biases,
                              the checkpoint's own exclude list) */
    const char *exclude[FP4_MAX_EXCLUDE]; /* --exclude GLOB (borrowed strings) */
    int nexclude;

    /* --- the report and how it is shown --- */
    int layers;            /* --layers K: also the compound shrinkage over K layers; 0 = none */
    fp4_rank_by rank_by;   /* --rank-by gap|sqnr|delta: order of the verdict's ranking */
    const char *output;    /* -o FILE (borrowed); NULL = stdout */
    int emit_exclude;      /* --emit-exclude FORMAT:FILE: 0 none, FP4_EMIT_MODELOPT,
                              FP4_EMIT_LLM_COMPRESSOR (SPEC §9 "Keep in high precision") */
    const char *emit_exclude_path; /* its FILE (borrowed, into argv) */
    bool json;             /* --json: the JSON report on stdout even when it is a terminal */
    int verbosity;         /* -q: -1, default 0, -v: +1 per -v (-vv: HDF5 error stack too) */
} fp4_run_config;

/* Defaults: formats from `formats` (a --format list; NULL = FP4_DEFAULT_FORMATS), scale fp32,
 * block 16, axis -1, rtne, sr_bits 24, seed 0, rht `rht`, rht_size 16, signs te, floor,
 * threads 0, device auto, stdout, mem_limit 1 GiB, no layers, no shard, rank by gap. */
void fp4_run_config_default(fp4_run_config *c, const char *formats, fp4_rht_mode rht);

/* Resolve a filled config (after the caller's changes to the defaults): make the RHT sign
 * vector from rht_signs_spec and rht_size; give each format its scale (fmt_scale -1 takes
 * `scale`) and merge repeated (format, scale) pairs; pick the block when !block_given (16,
 * nvfp4 16, mxfp4 32); check every config of fp4_run_config_qconfigs. FP4_ERR_USAGE with a
 * one-line detail (named as the CLI options) for a conflict: a format's own scale against a
 * given other scale, a block against a fixed-block scale, --block with --scale tensor,
 * --weight-2d without nvfp4 scales, a bad sign spec. */
fp4_status fp4_run_config_finish(fp4_run_config *c);

/* The qconfigs the config selects: for each format in order, the plain config (rht off|both)
 * then the rotated one (rht on|both). Returns the count (<= cap) in *count, writing
 * out[0..count); each passes fp4_qconfig_check. cfg.rht points into c->signs, so *c must
 * outlive the qconfigs. FP4_ERR_USAGE with a detail for an inconsistent combination, or when
 * more than cap configs would be made. */
fp4_status fp4_run_config_qconfigs(const fp4_run_config *c, fp4_qconfig *out, int cap,
                                   int *count);

/* Names as reports spell them: "off", "on", "both"; "gap", "sqnr", "delta"; "cpu", "cuda",
 * "auto" ("?" for a value out of range). */
const char *fp4_rht_mode_name(fp4_rht_mode m);
const char *fp4_rank_by_name(fp4_rank_by r);
const char *fp4_device_name(fp4_device d);

#endif
