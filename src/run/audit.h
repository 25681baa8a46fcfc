/* run/audit.h — `fp4diag audit SOURCE QUANTIZED` (SPEC §11): each already-quantized tensor of
 * QUANTIZED (io/quantized.h) paired by name with its high-precision original in SOURCE, and
 * measured: the export against the source, fp4diag's own round-to-nearest re-quantization of
 * the source under the producer's scale rule, the share of codes that are not a nearest grid
 * point, the share of block-scale bytes the rule reproduces, and which layout hypothesis fits.
 * All sums in fp64; computing only (report/audit.c prints). */
#ifndef FP4_RUN_AUDIT_H
#define FP4_RUN_AUDIT_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "base/status.h"
#include "io/fingerprint.h"
#include "io/quantized.h"
#include "run/shard.h"

/* Sums of one comparison q(x) against x. */
typedef struct fp4_audit_sums {
    double xx, ee, xq; /* sum x^2, sum (x - q)^2, sum x q */
    int64_t n;
} fp4_audit_sums;

/* 10 log10(xx / ee) (status "ok"), or NAN with status "exact" (ee = 0) / "zero_signal"
 * (xx = 0); alpha = xq / xx (NAN when xx = 0). */
double fp4_audit_sqnr(const fp4_audit_sums *s, const char **status);
double fp4_audit_alpha(const fp4_audit_sums *s);

/* The bucket use of a 16-code histogram (SPEC §11): bucket_ratio_15 and bucket_ratio_8 as §5
 * defines them (num/metrics.h fp4_bucket_ratios: exp(entropy) / K over the 15 signed values,
 * ±0 merged, and over the 8 magnitudes) and max_frac, the share of the elements at codes ±6
 * (7 and 15, the grid's top). Each NAN for an empty histogram. */
typedef struct fp4_audit_buckets {
    double b15, b8, max_frac;
} fp4_audit_buckets;
fp4_audit_buckets fp4_audit_bucket_use(const int64_t hist[16]);

/* Byte differences stored - rule, counted in bins -8..+8 (index d + 8); beyond: the ends. */
#define FP4_AUDIT_DIFF_BINS 17

/* The E8M0 scale rules of MXFP4 (SPEC §11), each tried on every MXFP4 block: ModelOpt's float
 * ceil, compressed-tensors' power-of-two rounding, the OCP floor (gpt-oss, GGUF). */
enum { FP4_AUDIT_MX_MODELOPT = 0, FP4_AUDIT_MX_CT, FP4_AUDIT_MX_OCP, FP4_AUDIT_MX_RULES };
/* "modelopt ceil", "compressed-tensors pow2", "ocp floor"; the rule of producer p (MXFP4) */
const char *fp4_audit_mx_rule_name(int r);
int fp4_audit_mx_rule_of(fp4_qproducer p);

/* Layout hypotheses tried on every tensor. */
enum {
    FP4_AUDIT_H_DECLARED = 0,
    FP4_AUDIT_H_NIBBLE_SWAP,
    FP4_AUDIT_H_RECIPROCAL, /* NVFP4: the per-tensor scale applied the other way */
    FP4_AUDIT_H_SWIZZLE,    /* NVFP4 rank 2, rows a multiple of 128 and scale columns of 4,
                               where flat and swizzled scales have one shape: the other one */
    FP4_AUDIT_NH
};
/* "as declared", "nibble order swapped", "global scale reciprocal", "scales swizzled 128x4"
 * (or "scales flat" for a tensor declared swizzled: fp4_audit_hypothesis_label) */
const char *fp4_audit_hypothesis_name(int h);


typedef struct fp4_audit_tensor {
    char *name;                 /* the logical name (owned) */
    fp4_qtensor q;              /* a copy; its owned strings are this entry's */
    fp4_audit_sums export_, requant;
    fp4_audit_sums export_na, requant_na; /* the same over the non-amax entries: each block's
                                             entries but the first attaining its finite
                                             source amax (SPEC §5.1, §11) */
    fp4_audit_sums hyp[FP4_AUDIT_NH]; /* export under each hypothesis ([0] = export_) */
    bool hyp_tried[FP4_AUDIT_NH];
    int layout_fit;             /* hypothesis that fits: FP4_AUDIT_H_DECLARED when sane */
    int64_t histogram[16];      /* stored codes */
    int64_t rq_histogram[16];   /* the codes of our round-to-nearest requantization */
    int64_t nonnearest;         /* elements whose stored code is not a nearest grid point */
    int64_t scale_bytes, scale_match; /* block scales, and those the block rule gives from the
                                         source amax under the STORED per-tensor scale */
    int64_t diff[FP4_AUDIT_DIFF_BINS];
    int64_t zero_blocks;        /* blocks whose source values are all zero */
    int64_t src_nonzero;        /* source elements that are not ±0 (the table's flushed share) */
    int64_t flushed;            /* of those, the ones the export stores as ±0 (code 0 or 8) */
    int64_t rq_flushed;         /* of those, the ones our requantization gives ±0 */
    int64_t mx_rule_match[FP4_AUDIT_MX_RULES]; /* MXFP4: stored bytes each MX rule reproduces */
    int scale_rule_fit;         /* MXFP4 whose declared rule misses a byte: the other MX rule
                                   that reproduces every stored byte (FP4_AUDIT_MX_*), else -1 */
    int64_t e8m0_ff, e4m3_nan;  /* special scale bytes stored */
    float global_stored, global_rule; /* NVFP4: the stored per-tensor scale and the rule's */
    double group_amax;          /* the fused group's source amax the rule used */
    double tensor_amax;         /* this tensor's own source amax (NVFP4; -1 when not read):
                                   a per-tensor scale from it where the rule takes the group's
                                   is named so in the table's "global scale:" line */
    char group[64];             /* "qkv", "gate_up", "w13" or "" */
    char *group_key;            /* the module and group ("model.layers.0.self_attn.#qkv"; owned) */
    int group_shared;           /* NVFP4 in a group: 1 when every audited member stores the same
                                   per-tensor scale, 0 when not; -1 no group (or alone) */
    int source_transposed;      /* 1: the source stores the last two dims swapped (transformers'
                                   gpt-oss experts [E, K, R]), read transposed; the layout then
                                   ends ", source transposed" */
    int position;               /* in the selection (the selected quantized tensors in order) */
} fp4_audit_tensor;

/* Whether a layout hypothesis whose export SQNR is e (NAN with fp4_audit_sqnr's status
 * estatus) is sane against our own round-to-nearest's SQNR r (dB; NAN: nothing to compare
 * against): "exact", or a number at most 3 dB below r. A tensor is pooled when its declared
 * layout is sane; else the sane hypothesis of the highest SQNR fits (none: an errors entry). */
bool fp4_audit_sane(double e, const char *estatus, double r);

/* Whether an export is worse than fp4diag's round-to-nearest of its source (SPEC §11, the
 * table's REEXPORT): more than FP4_AUDIT_REEXPORT_NONNEAR of its `elements` codes are not a
 * nearest grid point (nonnearest / elements) and its SQNR (sums ex) is more than
 * FP4_AUDIT_REEXPORT_DB below the requantization's (sums rq): gain = export - requant dB below
 * -FP4_AUDIT_REEXPORT_DB, both statuses "ok"; an export "ok" against a requant "exact" counts
 * as below. False for anything else (an exact export, no signal, a non-finite sum). The audit
 * judges it for a tensor read as declared (a layout fault is named instead). */
#define FP4_AUDIT_REEXPORT_DB 1.0
#define FP4_AUDIT_REEXPORT_NONNEAR 0.01
bool fp4_audit_reexport(const fp4_audit_sums *ex, const fp4_audit_sums *rq, int64_t nonnearest,
                        int64_t elements);

/* The name of hypothesis h for tensor t (the swizzle one names the layout tried). */
const char *fp4_audit_hypothesis_label(const fp4_audit_tensor *t, int h);

typedef struct fp4_audit_error {
    char *tensor, *message;
    fp4_status status;
    int position;               /* the tensor's position in the selection */
} fp4_audit_error;

/* A tensor of QUANTIZED that is selected and neither audited nor an errors entry (SPEC §11,
 * "skipped"): a high-precision tensor, an integer or other non-float one, another quantized
 * format (FP8 weights and their scales, GGUF block types other than mxfp4/nvfp4). The members
 * of an audited logical tensor (block scales, per-tensor and input scales) are never listed.
 * A selected tensor of SOURCE that QUANTIZED neither holds nor pairs with under another name
 * (gpt-oss alias, gate/up half) is listed too, "in SOURCE only". */
typedef struct fp4_audit_skip {
    char *name;                 /* as QUANTIZED spells it (owned) */
    int rank;
    int64_t dims[FP4_MAX_RANK];
    char dtype[48];             /* as stored ("bf16", "q4_K", "f8_e4m3") */
    char format[48];            /* the quantization format it is stored in ("fp8_e4m3",
                                   "q4_K"), or "" for a tensor in high precision */
    char reason[320];           /* "FP8 (E4M3) export: audit covers 4-bit formats", ... */
} fp4_audit_skip;

typedef struct fp4_audit {
    char *source, *quantized;
    char declared[160];
    fp4_audit_tensor *t;        /* in QUANTIZED's listing order */
    int n;
    fp4_audit_sums pooled_export, pooled_requant;
    fp4_audit_sums pooled_export_na, pooled_requant_na; /* non-amax */
    int64_t pooled_nonnearest, pooled_elements, pooled_scale_bytes, pooled_scale_match;
    int64_t pooled_histogram[16], pooled_rq_histogram[16]; /* export and requant codes */
    fp4_audit_error *errors;
    int nerrors;
    fp4_audit_skip *skipped;    /* by name (strcmp); in every share of a --shard run alike */
    int nskipped;
    char device[8];             /* where the export's sums ran: "cpu" or "cuda" */
    double seconds;
    /* --shard I/N (count 0: the whole selection): `selected` quantized tensors were selected,
     * this share took the positions assigned[0..nassigned) (whole fused groups: q/k/v, gate/up
     * stay together, so their checks are the single run's); prints: the fingerprint of both
     * inputs, taken before any tensor is read (SPEC §9, partial reports) */
    fp4_shard shard;
    int selected, nassigned;
    int *assigned;
    char **selnames;            /* [selected]: the name at each selection position (as the
                                   tensors' "name" and the errors' "tensor" spell it; owned),
                                   which a --shard part records (shard.names) for merge */
    fp4_shard_shape *selshapes; /* [selected]: the shape at each selection position (the
                                   tensors' "shape"; dtype unused), as described before the
                                   split: a --shard part records them (shard.shapes) */
    fp4_file_print *prints;
    int nprints;
} fp4_audit;

/* Run the audit of every quantized tensor of `quantized` selected by patterns (the selection
 * grammar on logical names; none = all) against `source`. Per-tensor failures (no partner in
 * SOURCE, shapes differing, a quantized tensor with a problem, no layout hypothesis sane, a
 * tensor of QUANTIZED that cannot be described: an unknown GGUF type id, data out of bounds)
 * are error entries, positioned after the quantized tensors' (share 0 of a --shard run holds
 * them); every other selected tensor of QUANTIZED not audited is in out->skipped; FP4_ERR_INPUT for a file that cannot be opened, a pattern that selects no
 * quantized tensor, or a QUANTIZED holding none. */
fp4_status fp4_audit_run(const char *source, const char *quantized, const char *const *patterns,
                         int npatterns, fp4_audit *out);

/* The same for share `shard` of the selection (count 0: all of it; see fp4_audit.shard). The
 * split: fp4_shard_assign over the fused groups of the selection by element count. */
fp4_status fp4_audit_run_shard(const char *source, const char *quantized,
                               const char *const *patterns, int npatterns, fp4_shard shard,
                               fp4_audit *out);
void fp4_audit_free(fp4_audit *a);

/* The progress line of the next runs (base/progress.h, SPEC §9): verbosity as the commands
 * take it (-q: -1, default 0, -v: 1+); off until set (library callers see nothing). One unit
 * per source tensor whose amax an NVFP4 fused group's scale rule needs ("NAME (group amax)",
 * the first pass), then one per quantized tensor this run (share) audits, with the source bytes
 * read so far (no total: the source's sizes are known as each tensor is paired) and the time
 * left by units. */
void fp4_audit_set_progress(int verbosity);

/* The device of the next runs (SPEC §11, --device): FP4_DEVICE_CPU (the default), CUDA or
 * AUTO (CUDA when a GPU is present). With CUDA the export's decodes and their fp64 sums run
 * on the GPU from the stored bytes (backend.h fp4_backend_audit_sums); every number of the
 * report is the same bit for bit. A run asked for CUDA without one fails with FP4_ERR_DEVICE. */
void fp4_audit_set_device(fp4_device dev);

/* Tests only: fn(ctx, NAME) is called as each quantized tensor NAME's audit pass begins, its
 * export's bytes located (fp4_quant_bytes_n: the per-tensor scale already copied) and none of
 * its packed codes or block scales read yet, so a test can cut the file there; NULL: none. A
 * tensor whose export loses pages it held while they are read (the orientation decode, the
 * slabs' decodes and counts, the copy a device upload takes) is the errors entry "QUANTIZED:
 * NAME: the file shrank while it was read (truncated)" (io/mapguard.h, SPEC §8). */
void fp4_audit_set_test_hook(void (*fn)(void *ctx, const char *tensor), void *ctx);

/* --- the rules, exposed for tests ---------------------------------------------------------- */

/* Whether stored value v*s is a nearest grid point of x (fp64; ties count as nearest, beyond
 * the grid the end point is nearest, s = 0 makes every code nearest). */
bool fp4_audit_is_nearest(float x, float v, float s);

/* The E2M1 code of fp32 quotient t, round to nearest with ties to the even code, saturating at
 * 6 (NaN: 0); the sign in bit 3 (+0 for 0). */
unsigned fp4_audit_e2m1_rtne(float t);

/* The producer's per-tensor scale from the fused group's amax (NVFP4): ModelOpt
 * fp32(amax / 2688); compressed-tensors bf16(2688 * bf16(1 / amax)) (1.0 when not finite);
 * GGUF 1.0 (llama-quantize writes none). */
float fp4_audit_global_rule(fp4_qproducer p, float group_amax);

/* The fused group a quantized weight belongs to (its producer shares one per-tensor scale in
 * it): key "MODULE#KIND" and kind "qkv" (q/k/v_proj), "gate_up" (gate/up_proj) or "w13"
 * (w1/w3), from the name's last two components; a weight of no group: key the name, kind "".
 * Both truncated to their capacities. */
void fp4_audit_group_key(const char *name, char *key, size_t cap, char *kind, size_t kcap);

/* The producer's block-scale byte from the block's amax (given the per-tensor scale for
 * NVFP4): ModelOpt e4m3(clamp(amax / fp32(6 * global), 2^-9, 448)), zero blocks 1.0;
 * compressed-tensors e4m3(fp32(global * bf16(amax / 6))), byte 0 -> 0x20; MXFP4: ModelOpt
 * ceil(max(log2(amax / 6), -127)) + 127, compressed-tensors its power-of-two rounding,
 * gpt-oss and GGUF the OCP floor rule 127 + floor(log2 amax) - 2; GGUF NVFP4
 * ggml_fp32_to_ue4m3(amax / 6 / global) (mantissa rounded half up, saturating at 0x7E). */
uint8_t fp4_audit_scale_rule(const fp4_qtensor *q, float block_amax, float global);

#endif
