/* fp4diag.h — the public C API of fp4diag: the only header a program outside the project needs.
 *
 * What it does (docs/SPEC.md): quantize a tensor to a 4-bit grid under one or more
 * configurations (format x scale x block x RHT x rounding, SPEC §2-§3) and measure what the
 * rounding does to it (SQNR, alpha, delta, bucket ratios, histogram: SPEC §4-§5), exactly as
 * `fp4diag sqnr` does. The numbers and the JSON text are the command line's own: the CLI is a
 * program on this library. The contract of every call: docs/SPEC.md §12.
 *
 * Link: `pkg-config --cflags --libs fp4diag` (libfp4diag.so.0, or libfp4diag.a with
 * `pkg-config --static`). Only names starting with fp4d_ / FP4D_ are exported.
 *
 * Errors are values: every call that can fail returns an fp4d_status (FP4D_OK = 0) and records a
 * one-line message ("FILE: TENSOR: why", as the CLI prints it) that fp4d_last_error() returns on
 * the same thread. Out-parameters are set only on success (pointers to NULL otherwise).
 *
 * Threads: an analysis runs on worker threads of its own (the configuration's `--threads`).
 * Run one analysis (fp4d_analyze, fp4d_analyze_memory, fp4d_analyze_cuda) at a time per
 * process: the readers' thread counts, their memory bound and --allow-external are
 * process-wide settings that each analysis sets (and fp4d_analyze_cuda keeps one CUDA
 * backend). fp4d_config_parse is not reentrant either (getopt). The other calls may be
 * made from any thread, one call at a time per handle; results and configs are immutable.
 *
 * Typical use:
 *     fp4d_config *cfg; fp4d_input *in; fp4d_result *r;
 *     if (fp4d_config_parse("--format e2m1 --scale nvfp4 --rht both", &cfg) ||
 *         fp4d_open("model.safetensors", &in) ||
 *         fp4d_analyze(in, "model.layers.0.mlp.down_proj.weight", cfg, &r))
 *         fprintf(stderr, "%s\n", fp4d_last_error());
 */
#ifndef FP4DIAG_H
#define FP4DIAG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FP4D_VERSION_MAJOR 0
#define FP4D_VERSION_MINOR 1
#define FP4D_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH of this header; compare with fp4d_version_number(). */
#define FP4D_VERSION_NUMBER                                                                    \
    (FP4D_VERSION_MAJOR * 10000 + FP4D_VERSION_MINOR * 100 + FP4D_VERSION_PATCH)

/* Status of every call; the values equal the CLI's exit codes (SPEC §9). */
typedef enum fp4d_status {
    FP4D_OK = 0,
    FP4D_ERR_USAGE = 2,    /* a bad argument: NULL handle, unknown option, bad dtype/shape */
    FP4D_ERR_INPUT = 3,    /* input or data error: missing file, no such tensor, unreadable */
    FP4D_ERR_DEVICE = 4,   /* CUDA asked for but unavailable, or a CUDA call failed */
    FP4D_ERR_INTERNAL = 5  /* out of memory, or a bug */
} fp4d_status;

/* The library's version as "0.1.0" (static storage), and as a number like
 * FP4D_VERSION_NUMBER. */
const char *fp4d_version(void);
int fp4d_version_number(void);

/* The message of the latest failed call on this thread ("" when none): one line, no trailing
 * newline, valid until the next call of this library on this thread. */
const char *fp4d_last_error(void);

/* "ok", "usage_error", "input_error", "device_error", "internal_error" (as a report's errors
 * entries name them); "unknown" for another value. */
const char *fp4d_status_name(fp4d_status st);

/* ------------------------------------------------------------------ configuration */

/* A set of quantization configurations and how to run them, built from the CLI's own option
 * strings (SPEC §3, `fp4diag sqnr --help`): --format, --scale, --block, --axis, --rounding,
 * --sr-bits, --seed, --rht, --rht-size, --rht-signs, --mx-rule, --weight-2d, --threads,
 * --device, --mem-limit, --allow-external. The defaults are sqnr's: --format e2m1,e1m2,int4
 * --scale fp32 --block 16 --axis -1 --rounding rtne --rht off --device auto.
 * Options that are about the command line's output or selection (-o, --json, -q, -v, --shard,
 * --exclude, --all-tensors, --layers, --rank-by) and operands are FP4D_ERR_USAGE. */
typedef struct fp4d_config fp4d_config;

/* `options`: the options as one string, split at blanks ("--format nvfp4 --rht both";
 * no quoting; NULL or "" = the defaults). FP4D_ERR_USAGE with the CLI's message on an unknown
 * option or a bad value. Free with fp4d_config_free. */
fp4d_status fp4d_config_parse(const char *options, fp4d_config **out);
/* The same from argc separate strings (no splitting; argv[0] is an option, not a name). */
fp4d_status fp4d_config_parse_argv(int argc, const char *const *argv, fp4d_config **out);
void fp4d_config_free(fp4d_config *cfg);

/* The number of configurations it selects (formats in order; under --rht both each format's
 * plain config then its rotated one), in the order of every result. */
int fp4d_config_count(const fp4d_config *cfg);

/* ------------------------------------------------------------------ inputs */

/* An open input: any file or directory the CLI reads (HDF5, safetensors file, sharded
 * safetensors index or directory, PyTorch checkpoint, GGUF file, .npy, .npz; SPEC §8). */
typedef struct fp4d_input fp4d_input;

#define FP4D_MAX_RANK 8

/* One tensor of an input, described without reading its data. Strings are owned by the input
 * and valid until fp4d_close. */
typedef struct fp4d_tensor_info {
    const char *name;  /* full name as the format spells it: "/blocks/0/fc1/weight" (HDF5),
                          "model.layers.0.mlp.weight" (safetensors) */
    const char *dtype; /* "f32", "f16", "bf16", "f64", "i8".."u64", "float(s,e,m,bias)", or a
                          class name ("string", ...) for what cannot be analysed */
    int rank;          /* 0 for a scalar, <= FP4D_MAX_RANK */
    int64_t shape[FP4D_MAX_RANK];
    int64_t nelems;    /* product of shape (1 for a scalar) */
    const char *problem; /* "" when it can be read, else why not ("string class is not
                            supported", "filter blosc (32001) is not available") */
} fp4d_tensor_info;

/* Open `path` read-only. FP4D_ERR_INPUT "PATH: no such file", "PATH: not an HDF5, safetensors,
 * PyTorch, GGUF or NumPy file", ... Free with fp4d_close. */
fp4d_status fp4d_open(const char *path, fp4d_input **out);
void fp4d_close(fp4d_input *in);

/* Every tensor of the input in listing order, as `fp4diag ls` lists them: an already-quantized
 * NVFP4/MXFP4 tensor (SPEC §10) is one entry, its logical name, dtype "nvfp4"/"mxfp4" and
 * logical shape (its `problem` the tensor's); its members (packed codes, scales) are not
 * listed. */
int fp4d_tensor_count(const fp4d_input *in);
/* Tensor i (0 <= i < fp4d_tensor_count); FP4D_ERR_USAGE for an index out of range. */
fp4d_status fp4d_tensor_get(const fp4d_input *in, int i, fp4d_tensor_info *out);

/* Read the tensor named exactly `tensor` (leading '/' optional for HDF5) into out[0..n) as
 * fp32, in C order: the values an analysis of it quantizes (f16, bf16 and f32 exactly; wider
 * types and integers rounded to nearest fp32, as the analysis widens them). n must equal its
 * nelems (FP4D_ERR_USAGE "FILE: NAME: has N elements, the buffer M"). FP4D_ERR_INPUT as
 * fp4_analyze for a missing name, a group or the tensor's read error (its `problem`).
 * FP4D_ERR_USAGE for an already-quantized tensor by its logical name (as listed), a member of
 * one (packed 4-bit codes, block, tensor or input scales) or an FP8 weight or its scales:
 * stored bytes, not values; the message names it and `fp4diag audit SOURCE QUANTIZED`.
 * Symbol version FP4DIAG_0.1.1. */
fp4d_status fp4d_read_f32(fp4d_input *in, const char *tensor, float *out, int64_t n);

/* ------------------------------------------------------------------ analysis */

/* The result of analysing one tensor under every configuration of an fp4d_config. */
typedef struct fp4d_result fp4d_result;

/* Analyse the tensor named exactly `tensor` of an open input (leading '/' optional for HDF5)
 * under `cfg`: the numbers `fp4diag sqnr [OPTIONS] FILE TENSOR` reports for it, whatever its
 * rank or type (a name given exactly is always analysed, SPEC §8). FP4D_ERR_INPUT "FILE: NAME:
 * no such dataset", "... is a group, not a dataset", or the tensor's read error;
 * FP4D_ERR_USAGE for a configuration the tensor does not take (--axis out of range, ...);
 * FP4D_ERR_USAGE for an already-quantized NVFP4/MXFP4 tensor by its logical name or a member
 * of one, with fp4d_read_f32's message (an FP8 weight is analysed as stored, as `sqnr` does);
 * FP4D_ERR_DEVICE for --device cuda without a GPU. Free the result with fp4d_result_free. */
fp4d_status fp4d_analyze(fp4d_input *in, const char *tensor, const fp4d_config *cfg,
                         fp4d_result **out);

/* Element types of caller memory. */
typedef enum fp4d_dtype { FP4D_F32 = 1, FP4D_F16 = 2, FP4D_BF16 = 3 } fp4d_dtype;

/* Where caller memory lives. FP4D_MEM_CUDA: a CUDA device pointer (only in a library built
 * with CUDA; otherwise FP4D_ERR_DEVICE), analysed on its GPU where it lies (fp4d_analyze_cuda;
 * under --device cpu copied to the host first). */
typedef enum fp4d_memory { FP4D_MEM_HOST = 0, FP4D_MEM_CUDA = 1 } fp4d_memory;

/* A tensor in the caller's memory. Elements are in host byte order (IEEE binary32, binary16,
 * or bfloat16 words). Element (i0, ..., i{rank-1}) is at
 * data + (i0 * strides[0] + ... ) * element size bytes; strides are in elements (not bytes) and
 * may be negative or zero; strides == NULL means C order (row-major, contiguous). The memory is
 * only read, during the call. */
typedef struct fp4d_tensor_view {
    const char *name;       /* the name in results and messages (NULL: "tensor") */
    const void *data;
    fp4d_dtype dtype;
    int rank;               /* 0..FP4D_MAX_RANK (0: one scalar) */
    const int64_t *shape;   /* rank entries, each >= 0 (may be NULL when rank is 0) */
    const int64_t *strides; /* rank entries in elements, or NULL for C order */
    fp4d_memory memory;
} fp4d_tensor_view;

/* Analyse caller memory under `cfg`: the same numbers as fp4d_analyze on a file holding the
 * same values with that shape (the input is named "memory" in messages: "memory: NAME: why").
 * FP4D_ERR_USAGE for a NULL data pointer with elements, an unknown dtype, a negative dimension,
 * a rank over FP4D_MAX_RANK, a shape whose element count (the product of its non-zero
 * dimensions) at 8 bytes an element does not fit int64, or strides that reach a byte offset
 * (sum of (shape[d] - 1) * strides[d] over the negative or the positive terms, times the element
 * size) outside int64 — refused with a message naming the dimension, never wrapped. Strides
 * may alias (zero: one element seen along that dimension many times, as a broadcast) or run
 * backwards (negative: data points at the element of index 0, the others below it); each
 * element is read as the view addresses it. */
fp4d_status fp4d_analyze_memory(const fp4d_tensor_view *view, const fp4d_config *cfg,
                                fp4d_result **out);

/* Analyse a tensor in CUDA device memory (view->memory FP4D_MEM_CUDA: a device or managed
 * pointer, any GPU; shape, strides and checks as fp4d_analyze_memory) where it lies, with
 * every operation on the GPU ordered on `stream` (a cudaStream_t passed as void *; NULL = the
 * legacy default stream): it reads the tensor after the work queued there before the call,
 * with no synchronisation of the device or of other streams; the call returns (blocking the
 * host) once its own results are back, and the memory may be changed from then on. The
 * numbers are the CPU's for the same values, bit for bit (SPEC §7, §12). Rows along the block
 * axis in C order are read in place (16-byte aligned fp32) or widened from where they lie
 * (f16, bf16); a strided view, another --axis or an unaligned pointer is gathered into rows
 * by a kernel on `stream`, slab by slab (about 8 MiB of device memory per slab, kept). Nothing
 * is copied to the host, except for a configuration the kernels do not cover (--block 2 or
 * over 256, an RHT size outside 16..256): the host reference quantizes its rows, copied slab
 * by slab. Under --device cpu the tensor is copied to the host on `stream` and analysed
 * there. SPEC §12. The device's CUDA objects (stream, buffers)
 * are made at the first call and kept for the next ones (one GPU at a time; the current
 * device of the calling thread is left as it was). FP4D_ERR_USAGE as fp4d_analyze_memory,
 * and for host memory or a pointer that is not CUDA memory; FP4D_ERR_DEVICE when the library
 * lacks CUDA, or a CUDA call fails (then with its message, and the kept objects are made
 * again at the next call). Symbol version FP4DIAG_0.1.3. */
fp4d_status fp4d_analyze_cuda(const fp4d_tensor_view *view, const fp4d_config *cfg,
                              void *stream, fp4d_result **out);

void fp4d_result_free(fp4d_result *r);

/* A whole report (SPEC §12): the JSON text `fp4diag COMMAND ARGV...` writes with -o, for
 * COMMAND "sqnr", "bias", "buckets", "rht" (schema fp4diag.report/1, SPEC §9) or "audit"
 * (fp4diag.audit/1, SPEC §11). argv[0..argc) are the arguments after the command, options
 * and operands as the CLI takes them (sqnr: [OPTIONS] FILE [SELECT...], every option of the
 * command including selection, --shard and --rank-by; audit: SOURCE QUANTIZED [SELECT...]);
 * the report's "argv" is "fp4diag", COMMAND, then argv. Options about the program's output
 * (-o, --json, -q, -v, --help) are FP4D_ERR_USAGE. The report is returned (FP4D_OK) when
 * some tensors failed, with them in its "errors" (where the CLI writes it and exits 3);
 * otherwise the status and message the CLI exits with when it writes no report (missing
 * file, nothing selected, a bad option). *json: malloc'd, free it with fp4d_free. One at a
 * time per process, as fp4d_analyze. Symbol version FP4DIAG_0.1.1. */
fp4d_status fp4d_report(const char *command, int argc, const char *const *argv, char **json);

/* Free what a call of this library malloc'd for the caller (fp4d_report's text); NULL is a
 * no-op. Symbol version FP4DIAG_0.1.1. */
void fp4d_free(void *p);

/* Whether 4-bit recipes keep the tensor `name` in high precision (SPEC §9 "Default
 * selection": one rule table after NVIDIA ModelOpt's default disabled quantizers and
 * llm-compressor's ignore list; "/" or "." separators, case-insensitive): 1 when a rule
 * matches, with *kind ("output head", "MoE router", "embedding", "norm", "bias", ...) and
 * *glob set to the first matching rule's (static strings; either pointer may be NULL); 0 for
 * a tensor recipes quantize (*kind and *glob NULL); -1 for a NULL name. A module's weight is
 * "MODULE.weight" ("lm_head.weight": 1, "output head"). Symbol version FP4DIAG_0.1.2. */
int fp4d_recipe_keeps(const char *name, const char **kind, const char **glob);

/* The tensor's entry of the report's "tensors" array (SPEC §9, schema fp4diag.report/1) as the
 * CLI writes it with -o, at top level: the same bytes as the entry in `fp4diag sqnr -o R FILE
 * TENSOR` under the same options, less the two tabs of indentation that nesting gives every
 * line there, and ending in a newline. Owned by the result. */
const char *fp4d_result_json(const fp4d_result *r);

/* The tensor's name, dtype and shape, as fp4d_tensor_info (strings owned by the result;
 * problem is ""), and the block axis its rows were taken along (non-negative). */
fp4d_status fp4d_result_tensor(const fp4d_result *r, fp4d_tensor_info *out, int *axis);

/* Per configuration: the common fields of the JSON's "results" entries (SPEC §4-§5). NaN where
 * the JSON has null. */
typedef struct fp4d_metrics {
    char format[32];       /* "e2m1", "e1m2", "int4", "e3m0", "e2m1:max=6" ... */
    char scale[16];        /* "fp32", "nvfp4", "mxfp4", "tensor" */
    int block;             /* elements per block */
    int rht;               /* RHT group size, 0 when not rotated */
    char rounding[8];      /* "rtne", "sr" */
    double sqnr_db;        /* 10 log10(sum x^2 / sum err^2); NaN unless sqnr_status is "ok" */
    char sqnr_status[16];  /* "ok", "exact" (no error), "zero_signal", "nonfinite" */
    double nmse;           /* sum err^2 / sum x^2 */
    double alpha;          /* least-squares gain sum(xq x) / sum(xq^2), SPEC §5 */
    double delta;          /* 1 - alpha */
    double mean_signed_error;
    double bucket_ratio_15, bucket_ratio_8;
    double tensor_amax;
    uint64_t elements, zero, nan, inf, saturated, clipped, blocks;
} fp4d_metrics;

/* Configurations in the result (= fp4d_config_count of its config). */
int fp4d_result_count(const fp4d_result *r);
/* Configuration i's metrics; FP4D_ERR_USAGE for an index out of range. */
fp4d_status fp4d_result_metrics(const fp4d_result *r, int i, fp4d_metrics *out);

/* Configuration i's two fp64 sums that nmse and sqnr_db are computed from (SPEC §4-§5), exactly
 * as accumulated over the counted elements (finite, not padding; for an RHT configuration, of
 * the rotated values): *sum_x2 = sum x^2, *sum_err2 = sum (xq - x)^2. Either pointer may be
 * NULL. For Transformer Engine's `mse` (sum_err2 / elements). FP4D_ERR_USAGE for an index out
 * of range. Symbol version FP4DIAG_0.1.1. */
fp4d_status fp4d_result_sums(const fp4d_result *r, int i, double *sum_x2, double *sum_err2);

#ifdef __cplusplus
}
#endif
#endif
