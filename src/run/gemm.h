/* gemm.h — GEMM diagnostics (SPEC §6): the three training GEMMs (FPROP, DGRAD, WGRAD) of one
 * linear layer under a 4-bit recipe, against the fp64 product of the unquantized operands.
 * Library only: computes plain result structs, never prints (report.c writes the JSON). */
#ifndef FP4_GEMM_H
#define FP4_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "num/format.h"
#include "num/metrics.h"
#include "num/quant.h"
#include "num/rht.h"
#include "base/status.h"

/* The three GEMMs of a linear layer y = x wᵀ, operands X (M×K tokens×in), W (N×K out×in),
 * dY (M×N). Each path is computed as Z = A · Bᵀ where the rows of A and of B run along the
 * contraction axis (they are the quantization rows, blocks and RHT groups along them):
 *   FPROP  Y  = X Wᵀ   M×N, contract K:  A = X   (rows of X),   B = W   (rows of W)
 *   DGRAD  dX = dY W   M×K, contract N:  A = dY  (rows of dY),  B = Wᵀ  (columns of W)
 *   WGRAD  dW = dYᵀ X  N×K, contract M:  A = dYᵀ (columns of dY), B = Xᵀ (columns of X) */
typedef enum fp4_gemm_path {
    FP4_GEMM_FPROP = 0,
    FP4_GEMM_DGRAD,
    FP4_GEMM_WGRAD,
    FP4_GEMM_NPATHS
} fp4_gemm_path;

/* The operands, by tensor (not by role). */
typedef enum fp4_gemm_tensor { FP4_GEMM_X = 0, FP4_GEMM_W, FP4_GEMM_DY } fp4_gemm_tensor;

/* Recipes (SPEC §6):
 *   ufp4   e1m2 grid, RHT on all three paths, SR on dY only, RTNE elsewhere (the default);
 *   e2m1   e2m1 grid, RHT on WGRAD only, SR on dY (the paper's E2M1 baseline; with
 *          --scale nvfp4 --weight-2d it is the full NVFP4 training recipe: weight_2d applies to
 *          W only, X and dY keep 1×16 blocks);
 *   custom the configured format, rht_scope and sr_scope. */
typedef enum fp4_gemm_recipe {
    FP4_RECIPE_UFP4 = 0,
    FP4_RECIPE_E2M1,
    FP4_RECIPE_CUSTOM,
    FP4_RECIPE_NVFP4 /* the NVFP4 training recipe: e2m1 with nvfp4 scales (the command sets
                      * scale nvfp4 and weight_2d), RHT on WGRAD, SR on dY */
} fp4_gemm_recipe;

typedef enum fp4_rht_scope { FP4_RHT_SCOPE_NONE = 0, FP4_RHT_SCOPE_WGRAD, FP4_RHT_SCOPE_ALL } fp4_rht_scope;
typedef enum fp4_sr_scope { FP4_SR_SCOPE_NONE = 0, FP4_SR_SCOPE_DY, FP4_SR_SCOPE_ALL } fp4_sr_scope;

/* Names as the command line and reports spell them: "fprop" "dgrad" "wgrad"; "x" "w" "dy";
 * "ufp4" "e2m1" "custom"; "none" "wgrad" "all"; "none" "dy" "all". Parsers return
 * FP4_ERR_USAGE with a detail on an unknown name. */
const char *fp4_gemm_path_name(fp4_gemm_path p);
const char *fp4_gemm_tensor_name(fp4_gemm_tensor t);
const char *fp4_gemm_recipe_name(fp4_gemm_recipe r);
const char *fp4_rht_scope_name(fp4_rht_scope s);
const char *fp4_sr_scope_name(fp4_sr_scope s);
fp4_status fp4_gemm_path_parse(const char *s, fp4_gemm_path *out);
/* A comma list of paths or "all" into a mask (bit p set = path p selected). */
fp4_status fp4_gemm_path_parse_list(const char *s, unsigned *mask);
fp4_status fp4_gemm_recipe_parse(const char *s, fp4_gemm_recipe *out);
fp4_status fp4_rht_scope_parse(const char *s, fp4_rht_scope *out);
fp4_status fp4_sr_scope_parse(const char *s, fp4_sr_scope *out);

/* SR stream ids (the Philox counter word 2, SPEC §2): every (path, operand) pair gets its own
 *   stream = FP4_GEMM_STREAM_BASE + 4 * path + tensor      (path, tensor as the enums above)
 * so the SR bits of dY in DGRAD and in WGRAD are independent, and the same --seed reproduces
 * every path. The SR counter's element index is (row · padded_len + column) in the operand's
 * quantization layout (A or B rows as listed above). */
#define FP4_GEMM_STREAM_BASE 0x474D0000u /* "GM" */

typedef struct fp4_gemm_config {
    fp4_gemm_recipe recipe;
    fp4_format format;       /* custom only (ufp4 forces e1m2, e2m1 forces e2m1) */
    fp4_rht_scope rht_scope; /* custom only */
    fp4_sr_scope sr_scope;   /* custom only */
    fp4_qconfig base;        /* scale, block, sr_bits, seed, mx_rule, weight_2d (W only); its
                                format, rounding, stream and rht are set per operand */
    const fp4_rht_signs *signs; /* the run's sign vector; required when a path uses RHT */
    int64_t block_rows;      /* output rows per block (bounds memory); 0 = 256. With weight_2d a
                                multiple of 16 */
    bool test_skip_rounding; /* test hook: keep padding and RHT, skip scaling and rounding, so
                                the "quantized" product must equal the reference */
    struct fp4_dgemm *products; /* where the fp64 products run (gemm_blas.h, borrowed); NULL:
                                   CBLAS on the CPU */
} fp4_gemm_config;

/* Defaults: ufp4, e2m1 (custom), rht_scope none, sr_scope dy, fp4_qconfig_default base, no
 * signs, 256 rows per block. */
void fp4_gemm_config_default(fp4_gemm_config *gc);

/* Whether a path uses RHT under this config, and the resolved quantization config of one
 * operand of one path (format, scale, rounding, stream, rht, weight_2d on W only).
 * FP4_ERR_USAGE when the path needs RHT and gc->signs is NULL, or the config is invalid. */
bool fp4_gemm_path_rht(const fp4_gemm_config *gc, fp4_gemm_path p);
fp4_status fp4_gemm_operand_config(const fp4_gemm_config *gc, fp4_gemm_path p,
                                   fp4_gemm_tensor t, fp4_qconfig *out);

/* The operands of one layer: fp32 row-major, X m×k, W n×k, dY m×n (borrowed). A path only
 * reads the two it needs (FPROP: x, w; DGRAD: dy, w; WGRAD: dy, x); the others may be NULL. */
typedef struct fp4_gemm_operands {
    const float *x, *w, *dy;
    int64_t m, n, k;
} fp4_gemm_operands;

/* Shapes of X, W, dY (rank and dims as read) into m, n, k. Any dims may be given as NULL /
 * rank 0 when that tensor is absent (not needed by the selected paths), but at least the ones
 * given must agree: X (M×K), W (N×K), dY (M×N). FP4_ERR_INPUT "x is 1024x256 but w is
 * 512x1024 (in-features K differ)" on a mismatch, naming both shapes; a tensor that is not
 * 2-D is an error too. */
fp4_status fp4_gemm_shapes_check(const int64_t *xdims, int xrank, const int64_t *wdims,
                                 int wrank, const int64_t *dydims, int dyrank, int64_t *m,
                                 int64_t *n, int64_t *k);

/* The two operands of a path: A and B of Z = A · Bᵀ, which tensor each is, and their shapes
 * in quantization layout (rows × contraction). */
typedef struct fp4_gemm_path_shape {
    fp4_gemm_tensor a, b;
    bool a_transposed, b_transposed; /* quantization rows are the stored tensor's columns */
    int64_t rows, cols, contraction; /* output rows×cols, contraction length */
} fp4_gemm_path_shape;
void fp4_gemm_path_shape_of(fp4_gemm_path p, int64_t m, int64_t n, int64_t k,
                            fp4_gemm_path_shape *out);

typedef struct fp4_gemm_operand_result {
    fp4_gemm_tensor tensor; /* FP4_GEMM_X / W / DY */
    char role;              /* 'a' or 'b' */
    bool transposed;
    fp4_qconfig cfg;        /* as quantized (cfg.rht points at the config's signs) */
    fp4_metrics m;          /* finished; in the rotated domain when cfg.rht (SPEC §4) */
} fp4_gemm_operand_result;

typedef struct fp4_gemm_path_result {
    fp4_gemm_path path;
    int64_t rows, cols, contraction; /* output shape, contraction length K (unpadded) */
    int64_t padded_contraction;      /* K padded to the block / RHT size */
    bool rht;
    /* fp64 sums over the output, Z the reference, Ẑ the quantized product */
    double sum_z2, sum_err2, sum_zqz, sum_zq2;
    double sqnr_db;                  /* 10 log10(Σz² / Σ(ẑ−z)²); NAN unless status ok */
    fp4_sqnr_status sqnr_status;     /* zero_signal when Σz² = 0, exact when Σ(ẑ−z)² = 0 */
    double eta;                      /* ⟨Ẑ, Z⟩ / ⟨Z, Z⟩ (NAN when zero_signal) */
    double alpha_a, alpha_b, alpha_product; /* operand attenuations and α_A·α_B */
    fp4_gemm_operand_result op[2];   /* [0] = A, [1] = B */
} fp4_gemm_path_result;

/* Run one path: quantize A and B along the contraction axis (same RHT on both; for nvfp4 and
 * tensor scales the operand's tensor amax is taken first, in the rotated domain), compute the
 * reference Z = A·Bᵀ with dgemm (gc->products: CBLAS or cuBLAS) on fp64 copies of the
 * unquantized operands and the quantized Ẑ = Â_rot·B̂_rotᵀ (padded length) with dgemm on fp64
 * copies of the dequantized operands, in blocks of gc->block_rows output rows, and accumulate the output sums in fp64 in
 * row-major order. Memory: B twice in fp64 plus O(block_rows · (cols + contraction)).
 * Errors: FP4_ERR_USAGE for an invalid config, FP4_ERR_INPUT for a missing operand,
 * FP4_ERR_INTERNAL when out of memory, FP4_ERR_DEVICE on a CUDA error. */
fp4_status fp4_gemm_path_run(const fp4_gemm_config *gc, fp4_gemm_path p,
                             const fp4_gemm_operands *ops, fp4_gemm_path_result *out);

/* SQNR and gain from a path's exact output sums Σz², Σ(ẑ−z)², Σẑz (SPEC §6), the one formula of
 * a layer's path, the pooled summary and `merge`'s check of a partial report: nonfinite when a
 * sum is not finite, zero_signal when Σz² = 0 (both: *sqnr_db and *eta NAN); else
 * *eta = Σẑz / Σz² and, when Σ(ẑ−z)² = 0, exact (*sqnr_db NAN), otherwise ok with
 * *sqnr_db = 10 log10(Σz² / Σ(ẑ−z)²). */
void fp4_gemm_sums_finish(double z2, double err2, double zqz, fp4_sqnr_status *status,
                          double *sqnr_db, double *eta);

/* Compound gain over layers (SPEC §5, §6) for one path: given per-layer gains eta[0..n), over
 * `layers` layers (cycling through the n measured ones: layer i uses eta[i mod n]; layers = n
 * when 0): *prod_eta = Π η_i and *exp_neg_sum_delta = exp(−Σ (1 − η_i)). */
void fp4_gemm_compound(const double *eta, int n, int layers, double *prod_eta,
                       double *exp_neg_sum_delta);

/* One layer of a gemm run, as the command assembles it and report_gemm.c prints it. */
typedef struct fp4_gemm_layer {
    char *name;                    /* the group ("/fc2"); by --x/--w/--dy their shared group or
                                      "--x/--w/--dy" (owned) */
    char *src[3];                  /* "FILE:/dataset" of x, w, dy; NULL when not read (owned) */
    char dtype[3][48];             /* on-disk dtype of each ("bf16", "f32", …) */
    int64_t m, n, k;
    unsigned paths;                /* bit p set: res[p] holds path p */
    fp4_gemm_path_result res[FP4_GEMM_NPATHS];
} fp4_gemm_layer;

/* Pooled over layers, per path: SQNR 10 log10(ΣΣz² / ΣΣerr²), η = ΣΣẑz / ΣΣz², and the
 * compound gain over `layers` layers (fp4_gemm_compound of the per-layer η; 0 = the layers
 * given). */
typedef struct fp4_gemm_pooled {
    fp4_gemm_path path;
    int nlayers;
    double sum_z2, sum_err2, sum_zqz;
    double sqnr_db;
    fp4_sqnr_status sqnr_status;
    double eta;
    int compound_layers;
    double prod_eta, exp_neg_sum_delta;
} fp4_gemm_pooled;

/* Bytes of memory a run may take: the smaller of physical memory and the address-space and
 * data limits (ulimit -v, ulimit -d). Operands and working buffers larger than this are
 * refused with FP4_ERR_INPUT before anything is allocated. */
int64_t fp4_gemm_memory_cap(void);

/* a * b and a + b for non-negative sizes; false when the result would not fit in 63 bits. */
bool fp4_size_mul(int64_t a, int64_t b, int64_t *out);
bool fp4_size_add(int64_t a, int64_t b, int64_t *out);

/* Pool path p over the layers that hold it, in order. FP4_ERR_INTERNAL when out of memory. */
fp4_status fp4_gemm_pool(const fp4_gemm_layer *layers, int nlayers, fp4_gemm_path p,
                         int compound_layers, fp4_gemm_pooled *out);

#endif
