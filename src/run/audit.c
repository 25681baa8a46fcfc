/* run/audit.c — the audit of an already-quantized checkpoint against its source (see
 * run/audit.h, SPEC §11). */
#include "run/audit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/common.h"
#include "base/progress.h"
#include "io/mapguard.h"
#include "io/pario.h"
#include "io/source.h"
#include "num/metrics.h"
#include "run/recipe.h"

/* Source elements read at a time (a slab along dim 0 holds at least one of its rows). */
#define AUDIT_SLAB_ELEMS (1 << 22)
#define FP4_AUDIT_ALIAS_MAX 512
/* A layout hypothesis is sane when its export SQNR is at most this far below our own
 * round-to-nearest re-quantization's (GPTQ-style exports sit at or above it). */
#define AUDIT_SANE_DB 3.0

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double fp4_audit_sqnr(const fp4_audit_sums *s, const char **status)
{
    if (!(s->xx > 0)) {
        *status = "zero_signal";
        return NAN;
    }
    if (!(s->ee > 0)) {
        *status = s->ee == 0 ? "exact" : "nonfinite";
        return NAN;
    }
    if (!isfinite(s->ee) || !isfinite(s->xx)) {
        *status = "nonfinite";
        return NAN;
    }
    *status = "ok";
    return 10.0 * log10(s->xx / s->ee);
}

double fp4_audit_alpha(const fp4_audit_sums *s)
{
    return s->xx > 0 && isfinite(s->xq) ? s->xq / s->xx : NAN;
}

bool fp4_audit_reexport(const fp4_audit_sums *ex, const fp4_audit_sums *rq, int64_t nonnearest,
                        int64_t elements)
{
    if (!(elements > 0 &&
          (double)nonnearest / (double)elements > FP4_AUDIT_REEXPORT_NONNEAR))
        return false;
    const char *es, *rs;
    const double e = fp4_audit_sqnr(ex, &es), r = fp4_audit_sqnr(rq, &rs);
    if (strcmp(es, "ok")) return false;
    if (!strcmp(rs, "exact")) return true;
    return !strcmp(rs, "ok") && e - r < -FP4_AUDIT_REEXPORT_DB;
}

fp4_audit_buckets fp4_audit_bucket_use(const int64_t hist[16])
{
    uint64_t h[16], n = 0;
    for (int c = 0; c < 16; c++) n += h[c] = (uint64_t)hist[c];
    fp4_audit_buckets b;
    fp4_bucket_ratios(h, &b.b15, &b.b8);
    b.max_frac = n ? (double)(h[7] + h[15]) / (double)n : NAN;
    return b;
}

const char *fp4_audit_mx_rule_name(int r)
{
    switch (r) {
    case FP4_AUDIT_MX_MODELOPT: return "modelopt ceil";
    case FP4_AUDIT_MX_CT: return "compressed-tensors pow2";
    case FP4_AUDIT_MX_OCP: return "ocp floor";
    }
    return "?";
}

int fp4_audit_mx_rule_of(fp4_qproducer p)
{
    return p == FP4_QP_MODELOPT ? FP4_AUDIT_MX_MODELOPT
           : p == FP4_QP_COMPRESSED_TENSORS ? FP4_AUDIT_MX_CT
                                            : FP4_AUDIT_MX_OCP; /* gpt-oss, GGUF */
}

const char *fp4_audit_hypothesis_name(int h)
{
    switch (h) {
    case FP4_AUDIT_H_DECLARED: return "as declared";
    case FP4_AUDIT_H_NIBBLE_SWAP: return "nibble order swapped";
    case FP4_AUDIT_H_RECIPROCAL: return "global scale reciprocal";
    case FP4_AUDIT_H_SWIZZLE: return "scales swizzled 128x4";
    }
    return "?";
}

const char *fp4_audit_hypothesis_label(const fp4_audit_tensor *t, int h)
{
    if (h == FP4_AUDIT_H_SWIZZLE && t->q.scale_layout == FP4_QS_SWIZZLED) return "scales flat";
    return fp4_audit_hypothesis_name(h);
}

static const float MAG[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

bool fp4_audit_is_nearest(float x, float v, float s)
{
    if (s == 0.0f || !isfinite(s) || !isfinite(x)) return true;
    const double xd = x, sd = s;
    const double err = fabs(xd - (double)v * sd);
    const double sg = xd < 0 ? -1.0 : 1.0;
    double best = INFINITY;
    for (int k = 0; k < 8; k++) { /* the grid points on x's side are the only candidates */
        double e = fabs(xd - sg * (double)MAG[k] * sd);
        if (e < best) best = e;
    }
    return !(err > best);
}

unsigned fp4_audit_e2m1_rtne(float t)
{
    if (t != t) return 0;
    static const float bound[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
    const float a = fabsf(t);
    unsigned idx = 0;
    for (unsigned k = 0; k < 7; k++) /* above a midpoint, or on it when the upper code is even */
        if (a > bound[k] || (a == bound[k] && (k + 1) % 2 == 0)) idx = k + 1;
    return idx | (t < 0 ? 8u : 0u);
}

static float bf16_round(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7F800000u) == 0x7F800000u) return x; /* inf, NaN */
    u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    memcpy(&x, &u, 4);
    return x;
}

float fp4_audit_global_rule(fp4_qproducer p, float group_amax)
{
    if (p == FP4_QP_GGUF) return 1.0f; /* llama-quantize writes no per-tensor scale */
    if (p == FP4_QP_COMPRESSED_TENSORS) {
        /* generate_gparam in the weight dtype: amax.reciprocal() * 2688, each step in bf16 */
        float g = bf16_round(2688.0f * bf16_round(1.0f / group_amax));
        return isfinite(g) && g > 0 ? g : 1.0f;
    }
    return group_amax / 2688.0f; /* ModelOpt get_weights_scaling_factor_2 */
}

static uint8_t clamp_byte(int b) { return (uint8_t)(b < 0 ? 0 : b > 254 ? 254 : b); }

/* ggml_fp32_to_ue4m3 (gguf-py quants.py NVFP4.fp32_to_ue4m3): clamped to [0, 448], the
 * mantissa cut to 3 bits rounding half up on the dropped bit, exponents from 15 on saturating
 * at 0x7E, subnormals (x * 512 + 0.5) truncated. */
static uint8_t ggml_ue4m3(float x)
{
    x = fminf(fmaxf(x, 0.0f), 448.0f);
    if (!(x > 0.0f)) return 0;
    uint32_t bits;
    memcpy(&bits, &x, 4);
    const int e = (int)((bits >> 23) & 0xFF) - 127 + 7;
    if (e <= 0) {
        int m = (int)(x * 512.0f + 0.5f);
        return (uint8_t)(m > 7 ? 7 : m < 1 ? 0 : m);
    }
    if (e >= 15) return 0x7E;
    int man = (int)((bits >> 20) & 7) + (int)((bits >> 19) & 1), ex = e;
    if (man > 7) man = 0, ex++;
    return ex >= 15 ? 0x7E : (uint8_t)((ex << 3) | man);
}

uint8_t fp4_audit_scale_rule(const fp4_qtensor *q, float amax, float global)
{
    if (q->format == FP4_QF_NVFP4 && q->producer == FP4_QP_GGUF)
        return ggml_ue4m3(amax / 6.0f * (1.0f / global)); /* quantize_row_nvfp4_ref */
    if (q->format == FP4_QF_NVFP4) {
        if (q->producer == FP4_QP_COMPRESSED_TENSORS) {
            uint8_t b = fp4c_e4m3_encode(global * bf16_round(amax / 6.0f));
            return b == 0 ? 0x20 : b; /* E4M3's eps 0.125 for a zero/underflowed scale */
        }
        const float den = 6.0f * global;
        float r = amax == 0.0f ? 1.0f : amax / den;
        r = fminf(fmaxf(r, 0x1p-9f), 448.0f);
        return fp4c_e4m3_encode(r);
    }
    if (!(amax > 0.0f) || !isfinite(amax)) return 0;
    switch (q->producer) {
    case FP4_QP_MODELOPT: /* mxfp4_tensor.py: ceil(max(log2(amax / 6), -127)) + 127 */
        return clamp_byte((int)ceilf(fmaxf(log2f(amax / 6.0f), -127.0f)) + 127);
    case FP4_QP_COMPRESSED_TENSORS: { /* mxfp_utils.py: round amax up to a power of two from
                                         1.75 * 2^e, then 127 + e - 2 */
        uint32_t u;
        memcpy(&u, &amax, 4);
        u = (u + (1u << 21)) & 0x7F800000u;
        return clamp_byte((int)(u >> 23) - 127 + 127 - 2);
    }
    default: /* OCP floor: 127 + floor(log2 amax) - emax(e2m1) */
        return clamp_byte(127 + fp4c_floor_log2(amax) - 2);
    }
}

void fp4_audit_group_key(const char *name, char *key, size_t cap, char *kind, size_t kcap)
{
    static const struct {
        const char *suffix, *kind;
    } g[] = {{".q_proj.weight", "qkv"},     {".k_proj.weight", "qkv"},
             {".v_proj.weight", "qkv"},     {".gate_proj.weight", "gate_up"},
             {".up_proj.weight", "gate_up"}, {".w1.weight", "w13"},
             {".w3.weight", "w13"}};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        size_t m = strlen(g[i].suffix);
        if (n > m && strcmp(name + n - m, g[i].suffix) == 0) {
            snprintf(key, cap, "%.*s#%s", (int)(n - m), name, g[i].kind);
            snprintf(kind, kcap, "%s", g[i].kind);
            return;
        }
    }
    snprintf(key, cap, "%s", name);
    kind[0] = '\0';
}

/* The next position of the selection, for the tensor `name` of shape dims[0..rank) (a->selnames
 * and a->selshapes record them). */
static fp4_status select_next(fp4_audit *a, const char *name, int rank, const int64_t *dims,
                              int *at)
{
    char **v = realloc(a->selnames, (size_t)(a->selected + 1) * sizeof *v);
    if (v) a->selnames = v;
    fp4_shard_shape *sh = v ? realloc(a->selshapes, (size_t)(a->selected + 1) * sizeof *sh) : NULL;
    if (!sh) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    a->selshapes = sh;
    sh += a->selected;
    memset(sh, 0, sizeof *sh);
    sh->rank = rank < 0 ? 0 : rank < FP4_MAX_RANK ? rank : FP4_MAX_RANK;
    memcpy(sh->dims, dims, (size_t)sh->rank * sizeof *dims);
    if (!(v[a->selected] = strdup(name))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    *at = a->selected++;
    return FP4_OK;
}

static fp4_status add_error(fp4_audit *a, const char *tensor, fp4_status st, const char *msg,
                            int position)
{
    fp4_audit_error *e = realloc(a->errors, (size_t)(a->nerrors + 1) * sizeof *e);
    if (!e) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    a->errors = e;
    e = &a->errors[a->nerrors];
    e->tensor = strdup(tensor);
    e->message = strdup(msg);
    e->status = st;
    e->position = position;
    if (!e->tensor || !e->message) {
        free(e->tensor);
        free(e->message);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    a->nerrors++;
    return FP4_OK;
}

/* The source tensor of q: same name (a gpt-oss expert tensor: or its other name, gptoss_alias),
 * and the same shape, or for gpt-oss experts (rank 3) the
 * last two dims swapped, as transformers stores them ([E, K, R] for the export's [E, R, K]:
 * gate_up_proj [E, H, 2I], down_proj [E, I, H]; the dequantized tensor transposed, gate/up
 * columns interleaved as the export's rows). *transposed: 0 as stored, 1 transposed, 2 either
 * (a gpt-oss tensor with R = K: the caller decides against the export). */
/* The other name of a gpt-oss expert tensor (SPEC §10.1): openai/gpt-oss' own checkpoint
 * "block.N.mlp.mlp1_weight" / "mlp2_weight" is transformers' "model.layers.N.mlp.experts.
 * gate_up_proj" / "down_proj" (the same [E, R, K] rows, gate/up interleaved), and back. False
 * when `name` is neither. */
static bool gptoss_alias(const char *name, char *out, size_t cap)
{
    static const char *const orig[2] = {"mlp1_weight", "mlp2_weight"};
    static const char *const hf[2] = {"gate_up_proj", "down_proj"};
    unsigned layer;
    int n = 0;
    char leaf[32];
    if (sscanf(name, "block.%u.mlp.%31[a-z0-9_]%n", &layer, leaf, &n) == 2 && !name[n]) {
        for (int i = 0; i < 2; i++)
            if (strcmp(leaf, orig[i]) == 0)
                return snprintf(out, cap, "model.layers.%u.mlp.experts.%s", layer, hf[i]) <
                       (int)cap;
    }
    n = 0;
    if (sscanf(name, "model.layers.%u.mlp.experts.%31[a-z_]%n", &layer, leaf, &n) == 2 &&
        !name[n]) {
        for (int i = 0; i < 2; i++)
            if (strcmp(leaf, hf[i]) == 0)
                return snprintf(out, cap, "block.%u.mlp.%s", layer, orig[i]) < (int)cap;
    }
    return false;
}

/* The source of one quantized tensor: one tensor (n = 1, rows from `off` on along dim 0), or
 * two rank-2 tensors concatenated along dim 0 (n = 2; SPEC §11: a fused export, separate
 * source). */
typedef struct src_pair {
    fp4_tensor_desc d[2];
    int n;
    int64_t off;
    const char *note; /* the layout note of a fused/split pairing, or NULL */
} src_pair;

static void pair_free(src_pair *p)
{
    fp4_tensor_desc_free(&p->d[0]);
    fp4_tensor_desc_free(&p->d[1]);
}

/* Rows [s, s + c) (dim 0) of the paired source as fp32, into buf. */
static fp4_status pair_read(fp4_source *src, const src_pair *p, int64_t s, int64_t c, float *buf)
{
    if (p->n == 1) return fp4_source_read_f32(src, &p->d[0], 0, p->off + s, c, buf);
    const int64_t r0 = p->d[0].dims[0], K = p->d[0].dims[1];
    if (s < r0) {
        const int64_t a = c < r0 - s ? c : r0 - s;
        FP4_TRY(fp4_source_read_f32(src, &p->d[0], 0, s, a, buf));
        buf += a * K;
        s += a;
        c -= a;
    }
    return c > 0 ? fp4_source_read_f32(src, &p->d[1], 0, s - r0, c, buf) : FP4_OK;
}

/* A described rank-2 numeric tensor `name` with `cols` columns (and no problem). */
static bool describe_2d(fp4_source *src, const char *name, int64_t cols, fp4_tensor_desc *d)
{
    if (fp4_source_describe(src, name, d) != FP4_OK) return false;
    if (d->rank == 2 && d->dims[1] == cols && d->numeric && !d->problem[0]) return true;
    fp4_tensor_desc_free(d);
    memset(d, 0, sizeof *d);
    return false;
}

/* Gate and up projections fused in one and separate in the other (SPEC §11): the fused
 * <m>.gate_up_proj.weight [2I, K] is <m>.gate_proj.weight [I, K] then <m>.up_proj.weight
 * [I, K] along dim 0 (Phi-3's gate_up_proj, vLLM's merged column order). Rank 2 only. True
 * when q pairs so (p filled). */
static bool pair_gate_up(fp4_source *src, const fp4_qtensor *q, src_pair *p)
{
    static const char fused[] = "gate_up_proj.weight", gate[] = "gate_proj.weight",
                      up[] = "up_proj.weight";
    if (q->rank != 2) return false;
    const size_t n = strlen(q->name);
    char a[FP4_AUDIT_ALIAS_MAX], b[FP4_AUDIT_ALIAS_MAX];
    const int64_t R = q->dims[0], K = q->dims[1];
    if (n > strlen(fused) && n < sizeof a &&
        strcmp(q->name + n - strlen(fused), fused) == 0 && q->name[n - strlen(fused) - 1] == '.') {
        const int m = (int)(n - strlen(fused));
        snprintf(a, sizeof a, "%.*s%s", m, q->name, gate);
        snprintf(b, sizeof b, "%.*s%s", m, q->name, up);
        if (!describe_2d(src, a, K, &p->d[0])) return false;
        if (!describe_2d(src, b, K, &p->d[1]) || p->d[0].dims[0] + p->d[1].dims[0] != R ||
            strcmp(p->d[0].dtype, p->d[1].dtype) != 0) {
            pair_free(p);
            memset(p, 0, sizeof *p);
            return false;
        }
        p->n = 2;
        p->note = ", source gate_proj+up_proj";
        return true;
    }
    for (int w = 0; w < 2; w++) {
        const char *leaf = w ? up : gate;
        const size_t l = strlen(leaf);
        if (n <= l || n - l + strlen(fused) >= sizeof a || q->name[n - l - 1] != '.' ||
            strcmp(q->name + n - l, leaf) != 0)
            continue;
        snprintf(a, sizeof a, "%.*s%s", (int)(n - l), q->name, fused);
        if (!describe_2d(src, a, K, &p->d[0])) return false;
        if (p->d[0].dims[0] != 2 * R) {
            pair_free(p);
            memset(p, 0, sizeof *p);
            return false;
        }
        p->n = 1;
        p->off = w ? R : 0;
        p->note = w ? ", source gate_up_proj 2nd half" : ", source gate_up_proj 1st half";
        return true;
    }
    return false;
}

static fp4_status pair_source(fp4_source *src, const char *quantized, const fp4_qtensor *q,
                              src_pair *p, char *why, size_t cap, int *transposed)
{
    why[0] = '\0';
    *transposed = 0;
    memset(p, 0, sizeof *p);
    p->n = 1;
    fp4_tensor_desc *d = &p->d[0];
    fp4_status st = fp4_source_describe(src, q->name, d);
    char alias[FP4_AUDIT_ALIAS_MAX];
    if (st != FP4_OK && q->producer == FP4_QP_GPT_OSS &&
        gptoss_alias(q->name, alias, sizeof alias))
        st = fp4_source_describe(src, alias, d);
    if (st != FP4_OK && pair_gate_up(src, q, p)) return FP4_OK;
    p->n = 1;
    if (st != FP4_OK) {
        if (q->producer == FP4_QP_GPT_OSS && gptoss_alias(q->name, alias, sizeof alias))
            snprintf(why, cap, "%s: %s: no such tensor in the source (nor %s)",
                     fp4_source_file(src), q->name, alias);
        else
            snprintf(why, cap, "%s: %s: no such tensor in the source", fp4_source_file(src),
                     q->name);
        return FP4_OK;
    }
    bool same = d->rank == q->rank;
    for (int i = 0; same && i < q->rank; i++) same = d->dims[i] == q->dims[i];
    const bool gptoss = q->producer == FP4_QP_GPT_OSS && q->rank == 3 && d->rank == 3;
    bool swapped = gptoss && d->dims[0] == q->dims[0] && d->dims[1] == q->dims[2] &&
                   d->dims[2] == q->dims[1];
    if (d->problem[0] || !d->numeric) {
        snprintf(why, cap, "%s: %s: %s", fp4_source_file(src), q->name,
                 d->problem[0] ? d->problem : "not numeric");
    } else if (same || swapped) {
        *transposed = same && swapped ? 2 : swapped ? 1 : 0;
    } else {
        char a[96] = "", b[96] = "";
        size_t ka = 0, kb = 0;
        for (int i = 0; i < d->rank && ka < sizeof a; i++)
            ka += (size_t)snprintf(a + ka, sizeof a - ka, "%s%lld", i ? "x" : "",
                                   (long long)d->dims[i]);
        for (int i = 0; i < q->rank && kb < sizeof b; i++)
            kb += (size_t)snprintf(b + kb, sizeof b - kb, "%s%lld", i ? "x" : "",
                                   (long long)q->dims[i]);
        snprintf(why, cap, "%s: %s: shape %s in the source, %s in the quantized checkpoint %s%s",
                 fp4_source_file(src), q->name, a, b, quantized,
                 q->producer == FP4_QP_GPT_OSS ? " (nor its last two dims swapped, as "
                                                 "transformers stores gpt-oss experts)"
                                               : "");
    }
    return FP4_OK;
}

/* c slabs of [K][R] floats in x (a transposed source as read) to [R][K], through tmp. */
static void transpose_slabs(float *x, float *tmp, int64_t c, int64_t R, int64_t K)
{
    for (int64_t e = 0; e < c; e++) {
        const float *in = x + e * R * K;
        for (int64_t k = 0; k < K; k++)
            for (int64_t r = 0; r < R; r++) tmp[r * K + k] = in[k * R + r];
        memcpy(x + e * R * K, tmp, (size_t)(R * K) * sizeof *x);
    }
}

/* Rows of q per index of dim 0, and slab size along dim 0. */
static void slab_plan(const fp4_qtensor *q, int64_t *rows_per, int64_t *count)
{
    if (q->rank == 1) {
        *rows_per = 1;
        *count = q->dims[0]; /* one row: the whole tensor at once */
        return;
    }
    *rows_per = q->dims[0] > 0 ? q->rows / q->dims[0] : 0; /* empty: refused before (below) */
    const int64_t per = *rows_per * q->dims[q->rank - 1];
    int64_t c = per > 0 ? AUDIT_SLAB_ELEMS / per : 1;
    *count = c < 1 ? 1 : c;
}

/* The amax of n0 indices along dim 0 of the paired source, `per` elements each, over its
 * finite values, and in *nonfinite the count of its NaN/Inf values. Reads slabs into a buffer
 * of its own, sized for this tensor (a fused member with a problem of its own is not in the
 * run's slab size). */
static fp4_status source_amax(fp4_source *src, const src_pair *d, int64_t n0, int64_t per,
                              float *amax, int64_t *nonfinite)
{
    *amax = 0.0f;
    *nonfinite = 0;
    if (n0 <= 0 || per <= 0) return FP4_OK; /* no elements */
    int64_t count = per > 1 ? AUDIT_SLAB_ELEMS / per : n0; /* rank 1: at once, as slab_plan */
    if (count < 1) count = 1;
    if (count > n0) count = n0;
    float *buf = malloc((size_t)(count * per + 2) * sizeof *buf);
    if (!buf) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    float m = 0.0f;
    int64_t bad = 0;
    fp4_status st = FP4_OK;
    for (int64_t s = 0; s < n0; s += count) {
        const int64_t c = n0 - s < count ? n0 - s : count;
        if ((st = pair_read(src, d, s, c, buf)) != FP4_OK) break;
        for (int64_t i = 0; i < c * per; i++) {
            const float a = fabsf(buf[i]);
            if (!isfinite(a)) bad++;
            else if (a > m) m = a;
        }
    }
    free(buf);
    *amax = m;
    *nonfinite = bad;
    return st;
}

/* The source amax of fused-group member q for the group's per-tensor scale rule (SPEC §11):
 * over the source tensor paired with q, or, when q has a problem of its own (its shape is not
 * to be trusted) and does not pair, over the whole source tensor of its name. *why (cap bytes)
 * says why there is none (no readable source, non-finite values), else "". */
static fp4_status member_amax(fp4_source *src, const char *quantized, const fp4_qtensor *q,
                              float *amax, int64_t *bytes, char *why, size_t cap)
{
    src_pair d;
    int tr; /* the amax does not depend on the orientation */
    int64_t bad = 0;
    bool read = false;
    *amax = -1.0f;
    fp4_status st = pair_source(src, quantized, q, &d, why, cap, &tr);
    if (st == FP4_OK && !why[0]) {
        int64_t rows_per, count;
        slab_plan(q, &rows_per, &count);
        const int64_t per = q->rank == 1 ? 1 : rows_per * q->dims[q->rank - 1];
        st = source_amax(src, &d, q->dims[0], per, amax, &bad);
        read = true;
    } else if (st == FP4_OK && q->problem[0]) {
        pair_free(&d);
        memset(&d, 0, sizeof d);
        d.n = 1;
        const fp4_status ds = fp4_source_describe(src, q->name, &d.d[0]);
        if (ds == FP4_ERR_INTERNAL) {
            st = ds;
        } else if (ds != FP4_OK) {
            fp4_error_clear(); /* why: pair_source's */
        } else if (!d.d[0].problem[0] && d.d[0].numeric && d.d[0].rank >= 1 &&
                   d.d[0].nelems >= 0) {
            const int64_t n0 = d.d[0].dims[0];
            why[0] = '\0';
            st = source_amax(src, &d, n0, n0 > 0 ? d.d[0].nelems / n0 : 0, amax, &bad);
            read = true;
        }
    }
    for (int k = 0; read && k < d.n && k < 2; k++)
        if (d.d[k].nelems > 0) *bytes += d.d[k].nelems * fp4_stored_size(d.d[k].stored);
    if (st == FP4_OK && read && bad > 0) {
        snprintf(why, cap, "%s: %s: %lld non-finite value%s (NaN/Inf) in the source",
                 fp4_source_file(src), d.n == 1 ? d.d[0].name : q->name, (long long)bad,
                 bad == 1 ? "" : "s");
        *amax = -1.0f;
    }
    pair_free(&d);
    return st;
}

/* The fp64 sums of one segment (common.h: FP4C_AUDIT_SEG entries of a row, from +0) added to
 * the tensor's, segments in (row, segment) order: the GPU's per-segment sums merge the same
 * way (fp4_backend_audit_sums), so the two give the same bits. */
static void seg_add(fp4_audit_sums *s, const double *p)
{
    s->xx += p[0];
    s->ee += p[1];
    s->xq += p[2];
}

/* The sums of nr rows of K entries of x against q, q's entry k of a row read at k ^ flip
 * (flip 1: the nibble order swapped, elements 2j and 2j+1 exchanged; K is even). */
static void sums_add(fp4_audit_sums *s, const float *x, const float *q, int64_t nr, int64_t K,
                     int flip)
{
    for (int64_t r = 0; r < nr; r++)
        for (int64_t k0 = 0; k0 < K; k0 += FP4C_AUDIT_SEG) {
            const int64_t k1 = k0 + FP4C_AUDIT_SEG < K ? k0 + FP4C_AUDIT_SEG : K;
            double p[3] = {0.0, 0.0, 0.0};
            for (int64_t k = k0; k < k1; k++) fp4c_audit_acc(p, x[r * K + k], q[r * K + (k ^ flip)]);
            seg_add(s, p);
        }
    s->n += nr * K;
}

/* sums_add over the non-amax entries of each block of `block` entries: each block's entries
 * but the first attaining its amax over the finite |x| (index 0 in a block of zeros), as the
 * recipe statistics' sqnr_nonamax (SPEC §5.1, engine_impl.h fp4_block_amax). */
static void sums_add_nonamax(fp4_audit_sums *s, const float *x, const float *q, int64_t nr,
                             int64_t K, int block)
{
    for (int64_t r = 0; r < nr; r++)
        for (int64_t k0 = 0; k0 < K; k0 += FP4C_AUDIT_SEG) {
            const int64_t k1 = k0 + FP4C_AUDIT_SEG < K ? k0 + FP4C_AUDIT_SEG : K;
            double p[3] = {0.0, 0.0, 0.0};
            for (int64_t b0 = r * K + k0; b0 + block <= r * K + k1; b0 += block) {
                float a = 0.0f;
                int k = 0;
                for (int j = 0; j < block; j++) {
                    const float v = fabsf(x[b0 + j]);
                    if (isfinite(v) && v > a) a = v, k = j;
                }
                for (int j = 0; j < block; j++)
                    if (j != k) fp4c_audit_acc(p, x[b0 + j], q[b0 + j]);
                s->n += block - 1;
            }
            seg_add(s, p);
        }
}

static void sums_merge(fp4_audit_sums *a, const fp4_audit_sums *b)
{
    a->xx += b->xx;
    a->ee += b->ee;
    a->xq += b->xq;
    a->n += b->n;
}

/* The integer counts of a run of rows (order-free: pieces merge in any order). */
typedef struct piece_counts {
    int64_t histogram[16], rq_histogram[16], nonnearest, scale_bytes, scale_match;
    int64_t diff[FP4_AUDIT_DIFF_BINS], zero_blocks, e8m0_ff, e4m3_nan, src_nonzero, flushed;
    int64_t rq_flushed;
    int64_t mx_rule_match[FP4_AUDIT_MX_RULES];
} piece_counts;

/* One slab of a tensor, cut into pieces of rows for the read pool (io/pario.h): each piece
 * decodes its rows under every hypothesis tried and requantizes them into the slab's buffers,
 * and counts into its own piece_counts; the fp64 sums are then taken on the calling thread,
 * element by element in row-major order, so that the numbers do not depend on the threads. */
typedef struct slab_work {
    const fp4_qtensor *q, *recip, *other;
    const fp4_qtensor *dq; /* the layout the numbers are taken under: q, or the hypothesis
                              that fits (its scale layout, its global direction); q's rules */
    int flip;              /* 1: under the nibble order swapped (dq's codes k ^ 1) */
    const uint8_t *packed, *scales;
    float global, grule;
    bool nv, gguf, try_recip, try_swz;
    int64_t r0, K, nb, rows_per_piece, nr;
    const float *x;
    float *dec, *rec, *swz, *rq;
    piece_counts *pc;
    int faulted; /* a piece touched a page of the export the file no longer holds */
} slab_work;

static void slab_piece_run(const slab_work *w, int64_t k)
{
    const fp4_qtensor *q = w->q;
    const int64_t a = k * w->rows_per_piece;
    const int64_t nr = w->nr - a < w->rows_per_piece ? w->nr - a : w->rows_per_piece;
    const int64_t K = w->K, off = a * K;
    piece_counts *c = &w->pc[k];
    memset(c, 0, sizeof *c);
    if (w->dec) {
        fp4_quant_decode(w->dq, w->packed, w->scales, w->global, w->r0 + a, nr, w->dec + off);
        for (int64_t e = 0; w->flip && e < nr * K; e += 2) { /* K is even */
            const float v = w->dec[off + e];
            w->dec[off + e] = w->dec[off + e + 1];
            w->dec[off + e + 1] = v;
        }
    }
    if (w->try_recip && w->rec)
        fp4_quant_decode(w->recip, w->packed, w->scales, w->global, w->r0 + a, nr, w->rec + off);
    if (w->try_swz && w->swz)
        fp4_quant_decode(w->other, w->packed, w->scales, w->global, w->r0 + a, nr, w->swz + off);
    /* codes, scales and the requantization, block by block */
    for (int64_t r = a; r < a + nr; r++) {
        const int64_t row = w->r0 + r;
        const float *xr = w->x + r * K;
        float *rq = w->rq + r * K;
        for (int64_t b = 0; b < w->nb; b++) {
            const uint8_t sb = w->scales[fp4_quant_scale_index(w->dq, row, b)];
            const float s = fp4_quant_block_scale(w->dq, sb, w->global);
            if (w->nv && !w->gguf && (sb & 0x7F) == 0x7F) c->e4m3_nan++; /* ggml: 0 and 240 */
            if (!w->nv && sb == 0xFF) c->e8m0_ff++;
            float amax = 0.0f;
            for (int64_t j = 0; j < q->block; j++) {
                const int64_t kk = b * q->block + j;
                const unsigned code = fp4_quant_code(w->dq, w->packed, row, kk ^ w->flip);
                c->histogram[code]++;
                c->nonnearest += !fp4_audit_is_nearest(xr[kk], fp4_e2m1_value(code), s);
                if (xr[kk] != 0.0f) { /* NaN counts as non-zero, as the analyses' flushed share */
                    c->src_nonzero++;
                    c->flushed += (code & 7u) == 0;
                }
                const float av = fabsf(xr[kk]);
                if (av > amax && isfinite(av)) amax = av;
            }
            if (amax == 0.0f) c->zero_blocks++;
            if (!w->nv) { /* which MX rule the stored byte follows */
                static const fp4_qproducer by[FP4_AUDIT_MX_RULES] = {
                    FP4_QP_MODELOPT, FP4_QP_COMPRESSED_TENSORS, FP4_QP_GPT_OSS};
                fp4_qtensor o = *q;
                for (int m = 0; m < FP4_AUDIT_MX_RULES; m++) {
                    o.producer = by[m];
                    c->mx_rule_match[m] += fp4_audit_scale_rule(&o, amax, 1.0f) == sb;
                }
            }
            /* the stored byte against the block rule given the STORED per-tensor scale (what
             * the producer's block rule takes; a per-tensor scale other than the rule's is the
             * global scale's own finding, said once: SPEC §11) */
            const uint8_t as_stored = fp4_audit_scale_rule(q, amax, w->global);
            const int diff = (int)sb - (int)as_stored;
            c->scale_bytes++;
            c->scale_match += diff == 0;
            c->diff[(diff < -8 ? -8 : diff > 8 ? 8 : diff) + 8]++;
            /* our requantization: the rule's per-tensor scale, then its block byte */
            const uint8_t want = fp4_audit_scale_rule(q, amax, w->grule);
            const float sr = fp4_quant_block_scale(q, want, w->grule);
            for (int64_t j = 0; j < q->block; j++) {
                const int64_t kk = b * q->block + j;
                /* the producer's fp32 quotient, rounded to nearest (ties to even) */
                const unsigned code = sr == 0.0f ? 0u : fp4_audit_e2m1_rtne(xr[kk] / sr);
                c->rq_histogram[code]++;
                c->rq_flushed += xr[kk] != 0.0f && (code & 7u) == 0;
                rq[kk] = fp4_e2m1_value(code) * sr;
            }
        }
    }
}

typedef struct slab_piece_args {
    const slab_work *w;
    int64_t k;
} slab_piece_args;

static void slab_piece_guarded(void *ctx)
{
    const slab_piece_args *a = ctx;
    slab_piece_run(a->w, a->k);
}

/* Piece k of a slab: its reads of the export's mapping under io/mapguard.h, on the thread
 * that runs it (a pool thread); a page the file no longer holds sets w->faulted. */
static void slab_piece(void *ctx, int64_t k)
{
    slab_work *w = ctx;
    slab_piece_args a = {w, k};
    if (!fp4_mapguard_call(slab_piece_guarded, &a))
        __atomic_store_n(&w->faulted, 1, __ATOMIC_RELAXED);
}

/* fp4_quant_decode of the export's bytes (its mapping) under io/mapguard.h. */
typedef struct decode_args {
    const fp4_qtensor *q;
    const uint8_t *packed, *scales;
    float global;
    int64_t row0, nrows;
    float *out;
} decode_args;

static void decode_run(void *ctx)
{
    const decode_args *a = ctx;
    fp4_quant_decode(a->q, a->packed, a->scales, a->global, a->row0, a->nrows, a->out);
}

/* n bytes of the export's mapping copied into `to` under io/mapguard.h. */
typedef struct copy_args {
    void *to;
    const uint8_t *from;
    size_t n;
} copy_args;

static void copy_run(void *ctx)
{
    const copy_args *a = ctx;
    memcpy(a->to, a->from, a->n);
}

static fp4_status shrank(fp4_source *qsrc, const fp4_qtensor *q)
{
    return fp4_error(FP4_ERR_INPUT, "%s: %s: the file shrank while it was read (truncated)",
                     fp4_source_file(qsrc), q->name);
}

static void (*audit_test_hook)(void *ctx, const char *tensor); /* fp4_audit_set_test_hook */
static void *audit_test_ctx;

void fp4_audit_set_test_hook(void (*fn)(void *ctx, const char *tensor), void *ctx)
{
    audit_test_hook = fn;
    audit_test_ctx = ctx;
}

static void counts_merge(fp4_audit_tensor *t, const piece_counts *c)
{
    for (int k = 0; k < 16; k++) {
        t->histogram[k] += c->histogram[k];
        t->rq_histogram[k] += c->rq_histogram[k];
    }
    for (int k = 0; k < FP4_AUDIT_DIFF_BINS; k++) t->diff[k] += c->diff[k];
    for (int m = 0; m < FP4_AUDIT_MX_RULES; m++) t->mx_rule_match[m] += c->mx_rule_match[m];
    t->nonnearest += c->nonnearest;
    t->scale_bytes += c->scale_bytes;
    t->scale_match += c->scale_match;
    t->zero_blocks += c->zero_blocks;
    t->src_nonzero += c->src_nonzero;
    t->flushed += c->flushed;
    t->rq_flushed += c->rq_flushed;
    t->e8m0_ff += c->e8m0_ff;
    t->e4m3_nan += c->e4m3_nan;
}

/* The buffers of a slab (maxel floats each): the source, the export as declared, the other
 * global-scale direction, the other scale layout, our requantization. */
typedef struct audit_bufs {
    float *x, *dec, *rec, *swz, *rq;
    fp4_backend *be;  /* a backend that audits (fp4_backend_audits) or NULL: the CPU */
    int64_t tensor;   /* the tensor's number in the run (fp4_audit_slab.tensor) */
} audit_bufs;

/* Pieces of at least this many elements (a piece is whole rows). */
#define AUDIT_PIECE_ELEMS (1 << 16)

/* q read under layout hypothesis h (FP4_AUDIT_H_*) for its decode, codes and scale bytes:
 * its scale layout or its per-tensor scale's direction the other one (the nibble order is
 * slab_work.flip). */
static fp4_qtensor hypothesis_qtensor(const fp4_qtensor *q, int h)
{
    fp4_qtensor o = *q;
    if (h == FP4_AUDIT_H_RECIPROCAL)
        o.producer = q->producer == FP4_QP_COMPRESSED_TENSORS ? FP4_QP_MODELOPT
                                                              : FP4_QP_COMPRESSED_TENSORS;
    if (h == FP4_AUDIT_H_SWIZZLE)
        o.scale_layout = q->scale_layout == FP4_QS_FLAT ? FP4_QS_SWIZZLED : FP4_QS_FLAT;
    return o;
}

/* One tensor: every measure over the slabs of its rows, under layout hypothesis `as`
 * (FP4_AUDIT_H_DECLARED: as declared, every hypothesis tried, on the device when there is
 * one; another: that one alone, on the CPU, into t->hyp[FP4_AUDIT_H_DECLARED], the tensor's
 * measures once it fits, SPEC §11). */
static fp4_status audit_tensor(fp4_source *src, fp4_source *qsrc, const src_pair *d,
                               fp4_audit_tensor *t, float group_amax, const audit_bufs *bu,
                               int as)
{
    const fp4_qtensor *q = &t->q;
    float *x = bu->x, *dec = bu->dec;
    const uint8_t *packed = NULL, *scales = NULL;
    float global = 1.0f;
    int64_t np = 0, ns = 0;
    FP4_TRY(fp4_quant_bytes_n(qsrc, q, &packed, &np, &scales, &ns, &global));
    if (audit_test_hook) audit_test_hook(audit_test_ctx, q->name);
    const bool nv = q->format == FP4_QF_NVFP4;
    const float grule = nv ? fp4_audit_global_rule(q->producer, group_amax) : 1.0f;
    t->global_stored = global;
    t->global_rule = grule;
    t->group_amax = group_amax;
    /* the other direction of the global scale; the other scale layout, where both have one
     * shape */
    const fp4_qtensor recip = hypothesis_qtensor(q, FP4_AUDIT_H_RECIPROCAL);
    const fp4_qtensor other = hypothesis_qtensor(q, FP4_AUDIT_H_SWIZZLE);
    const fp4_qtensor dq = hypothesis_qtensor(q, as);
    const bool first = as == FP4_AUDIT_H_DECLARED;
    t->hyp_tried[FP4_AUDIT_H_DECLARED] = true;
    t->hyp_tried[FP4_AUDIT_H_NIBBLE_SWAP] = first;
    /* ggml's blocks hold their own scales and no global one: neither alternative exists */
    const bool gguf = q->scale_layout == FP4_QS_GGUF;
    t->hyp_tried[FP4_AUDIT_H_RECIPROCAL] = first && nv && !gguf;
    t->hyp_tried[FP4_AUDIT_H_SWIZZLE] = first && nv && !gguf && q->rank == 2 &&
                                        q->rows % 128 == 0 && q->scale_cols % 4 == 0;
    const fp4_backend *be = first ? bu->be : NULL; /* a hypothesis alone: the CPU */
    /* on a device the stored bytes are handed to the backend's upload, which no guard can
     * leave: a copy of them (np + ns bytes, in host memory while the tensor is audited) taken
     * under io/mapguard.h, read by every step below in place of the mapping */
    uint8_t *own = NULL;
    if (be) {
        const bool one = scales == packed && ns == np; /* ggml: the scales inside the blocks */
        own = malloc((size_t)(one ? np : np + ns) + 1);
        if (!own) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        copy_args cp = {own, packed, (size_t)np}, cs = {own + np, scales, (size_t)ns};
        if (!fp4_mapguard_call(copy_run, &cp) || (!one && !fp4_mapguard_call(copy_run, &cs))) {
            free(own);
            return shrank(qsrc, q);
        }
        packed = own;
        scales = one ? own : own + np;
    }

    int64_t rows_per, count;
    slab_plan(q, &rows_per, &count);
    const int64_t K = q->dims[q->rank - 1], nb = K / q->block;
    if (t->source_transposed == 2) {
        /* gpt-oss R = K: the orientation whose first expert the export matches better */
        fp4_status os = pair_read(src, d, 0, 1, x);
        decode_args da = {q, packed, scales, global, 0, rows_per, dec};
        if (os == FP4_OK && !fp4_mapguard_call(decode_run, &da)) os = shrank(qsrc, q);
        if (os != FP4_OK) {
            free(own);
            return os;
        }
        double e0 = 0.0, e1 = 0.0;
        for (int64_t r = 0; r < rows_per; r++)
            for (int64_t k = 0; k < K; k++) {
                const double a = (double)x[r * K + k] - dec[r * K + k];
                const double b = (double)x[k * rows_per + r] - dec[r * K + k];
                e0 += a * a;
                e1 += b * b;
            }
        t->source_transposed = e1 < e0;
    }
    if (t->source_transposed && first) {
        size_t l = strlen(t->q.layout);
        snprintf(t->q.layout + l, sizeof t->q.layout - l, ", source transposed");
    }
    /* on a device (bu->be): the decodes and their sums there, from the stored bytes */
    fp4c_qdec qd[3];
    double *seg = NULL;
    const int64_t seg_row = (K + FP4C_AUDIT_SEG - 1) / FP4C_AUDIT_SEG;
    if (be) {
        fp4_quant_qdec(q, &qd[0]);
        fp4_quant_qdec(&recip, &qd[1]);
        fp4_quant_qdec(&other, &qd[2]);
        const int64_t maxr = q->rank == 1 ? 1 : count * rows_per;
        seg = malloc((size_t)(maxr * seg_row * FP4C_AS_N) * sizeof *seg);
        if (!seg) {
            free(own);
            return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        }
    }
    slab_work w = {.q = q, .recip = &recip, .other = &other, .dq = &dq,
                   .flip = as == FP4_AUDIT_H_NIBBLE_SWAP, .packed = packed,
                   .scales = scales, .global = global, .grule = grule, .nv = nv,
                   .gguf = gguf, .try_recip = t->hyp_tried[FP4_AUDIT_H_RECIPROCAL],
                   .try_swz = t->hyp_tried[FP4_AUDIT_H_SWIZZLE], .K = K, .nb = nb, .x = x,
                   .dec = be ? NULL : dec, .rec = be ? NULL : bu->rec,
                   .swz = be ? NULL : bu->swz, .rq = bu->rq};
    fp4_status st = FP4_OK;
    int64_t nonfinite = 0; /* NaN/Inf in the source: an errors entry, no number (SPEC §11) */
    for (int64_t s0 = 0; s0 < q->dims[0]; s0 += count) {
        const int64_t c = q->dims[0] - s0 < count ? q->dims[0] - s0 : count;
        const int64_t r0 = q->rank == 1 ? 0 : s0 * rows_per;
        const int64_t nr = q->rank == 1 ? 1 : c * rows_per;
        const int64_t n = nr * K;
        if ((st = pair_read(src, d, s0, c, x)) != FP4_OK) break;
        for (int64_t i = 0; i < n; i++) nonfinite += !isfinite(x[i]);
        if (t->source_transposed) transpose_slabs(x, bu->rq, c, rows_per, K);
        if (be) {
            const fp4_audit_slab sl = {
                .dec = {&qd[0], w.try_recip ? &qd[1] : NULL, w.try_swz ? &qd[2] : NULL},
                .tensor = bu->tensor, .packed = packed, .scales = scales,
                .packed_bytes = np, .scale_bytes = ns, .global = global, .row0 = r0,
                .nrows = nr, .x = x, .seg = seg};
            if ((st = fp4_backend_audit_sums(bu->be, &sl)) != FP4_OK) break;
        }
        /* the pieces on the read pool's threads (their decodes and counts), then the sums */
        const int nth = fp4_pario_threads(n * (int64_t)sizeof(float));
        int64_t per = (AUDIT_PIECE_ELEMS + K - 1) / K;
        if (nth > 1 && per * nth * 4 > nr) per = (nr + (int64_t)nth * 4 - 1) / ((int64_t)nth * 4);
        if (per < 1) per = 1;
        const int64_t npieces = (nr + per - 1) / per;
        piece_counts *pc = malloc((size_t)npieces * sizeof *pc);
        if (!pc) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            break;
        }
        w.r0 = r0;
        w.nr = nr;
        w.rows_per_piece = per;
        w.pc = pc;
        if (nth > 1 && npieces > 1)
            fp4_pario_for(slab_piece, &w, npieces, nth);
        else
            for (int64_t k = 0; k < npieces; k++) slab_piece(&w, k);
        if (__atomic_load_n(&w.faulted, __ATOMIC_RELAXED)) { /* counts, decodes not whole */
            free(pc);
            st = shrank(qsrc, q);
            break;
        }
        for (int64_t k = 0; k < npieces; k++) counts_merge(t, &pc[k]);
        free(pc);
        if (be) { /* the device's per-segment sums, in the CPU's order */
            for (int64_t g = 0; g < nr * seg_row; g++) {
                const double *p = seg + g * FP4C_AS_N;
                seg_add(&t->hyp[FP4_AUDIT_H_DECLARED], p + FP4C_AS_DECL);
                seg_add(&t->hyp[FP4_AUDIT_H_NIBBLE_SWAP], p + FP4C_AS_SWAP);
                if (w.try_recip) seg_add(&t->hyp[FP4_AUDIT_H_RECIPROCAL], p + FP4C_AS_RECIP);
                if (w.try_swz) seg_add(&t->hyp[FP4_AUDIT_H_SWIZZLE], p + FP4C_AS_SWZ);
                seg_add(&t->export_na, p + FP4C_AS_NA);
            }
            t->hyp[FP4_AUDIT_H_DECLARED].n += n;
            t->hyp[FP4_AUDIT_H_NIBBLE_SWAP].n += n;
            if (w.try_recip) t->hyp[FP4_AUDIT_H_RECIPROCAL].n += n;
            if (w.try_swz) t->hyp[FP4_AUDIT_H_SWIZZLE].n += n;
            t->export_na.n += n / q->block * (q->block - 1);
        } else {
            sums_add(&t->hyp[FP4_AUDIT_H_DECLARED], x, dec, nr, K, 0);
            if (first) sums_add(&t->hyp[FP4_AUDIT_H_NIBBLE_SWAP], x, dec, nr, K, 1);
            if (w.try_recip) sums_add(&t->hyp[FP4_AUDIT_H_RECIPROCAL], x, bu->rec, nr, K, 0);
            if (w.try_swz) sums_add(&t->hyp[FP4_AUDIT_H_SWIZZLE], x, bu->swz, nr, K, 0);
            sums_add_nonamax(&t->export_na, x, dec, nr, K, q->block);
        }
        sums_add(&t->requant, x, bu->rq, nr, K, 0);
        sums_add_nonamax(&t->requant_na, x, bu->rq, nr, K, q->block);
    }
    free(seg);
    free(own);
    if (st != FP4_OK) return st;
    if (nonfinite > 0)
        return fp4_error(FP4_ERR_INPUT,
                         "%s: %s: %lld non-finite value%s (NaN/Inf) in the source: nothing to "
                         "measure the export against",
                         fp4_source_file(src), d->n == 1 ? d->d[0].name : q->name,
                         (long long)nonfinite,
                         nonfinite == 1 ? "" : "s");
    t->export_ = t->hyp[FP4_AUDIT_H_DECLARED];
    /* a declared rule that misses a byte: another MX rule that gives every one, named */
    t->scale_rule_fit = -1;
    if (!nv && t->scale_match < t->scale_bytes)
        for (int m = 0; m < FP4_AUDIT_MX_RULES && t->scale_rule_fit < 0; m++)
            if (m != fp4_audit_mx_rule_of(q->producer) && t->mx_rule_match[m] == t->scale_bytes)
                t->scale_rule_fit = m;
    return FP4_OK;
}

bool fp4_audit_sane(double e, const char *estatus, double r)
{
    if (strcmp(estatus, "exact") == 0) return true;
    if (isnan(e)) return false;
    if (isnan(r)) return true; /* nothing to compare against */
    return e >= r - AUDIT_SANE_DB;
}

static bool sane(const fp4_audit_sums *h, const fp4_audit_sums *rq)
{
    const char *st, *rs;
    double e = fp4_audit_sqnr(h, &st);
    return fp4_audit_sane(e, st, fp4_audit_sqnr(rq, &rs));
}

/* Which layout makes the export sane, judged against our own requantization: as declared
 * when sane, else the sane hypothesis of the highest SQNR, else -1. */
static int layout_fit_of(const fp4_audit_tensor *t)
{
    if (sane(&t->hyp[FP4_AUDIT_H_DECLARED], &t->requant)) return FP4_AUDIT_H_DECLARED;
    const char *s1;
    double best = -INFINITY;
    int fit = -1;
    for (int h = 1; h < FP4_AUDIT_NH; h++) {
        double v = t->hyp_tried[h] ? fp4_audit_sqnr(&t->hyp[h], &s1) : NAN;
        if (t->hyp_tried[h] && sane(&t->hyp[h], &t->requant) && !(v <= best)) {
            best = isnan(v) ? INFINITY : v;
            fit = h;
        }
    }
    return fit;
}

/* The layout of a tensor measured under hypothesis h (SPEC §11): the part of its declared
 * layout that was read otherwise replaced by what was read, the declared one in parentheses
 * ("e4m3 scales swizzled 128x4 (declared flat)"); a layout without that part (ggml's blocks)
 * gets the reading appended. */
static void layout_note(fp4_audit_tensor *t, int h)
{
    const fp4_qtensor *q = &t->q;
    const fp4_qreading r = h == FP4_AUDIT_H_NIBBLE_SWAP  ? FP4_QREAD_NIBBLE_SWAP
                           : h == FP4_AUDIT_H_RECIPROCAL ? FP4_QREAD_RECIPROCAL
                                                         : FP4_QREAD_OTHER_SCALES;
    char is[2 * sizeof t->q.layout];
    fp4_qlayout_under(q->layout, q->producer == FP4_QP_COMPRESSED_TENSORS,
                      q->scale_layout == FP4_QS_FLAT, r, is, sizeof is);
    memcpy(t->q.layout, is, sizeof t->q.layout - 1); /* at most 96 + 64: it fits */
    t->q.layout[sizeof t->q.layout - 1] = '\0';
}

/* The measures of t again, under the hypothesis that fits (t->layout_fit, not the declared
 * layout: SPEC §11): every count, sum and the requantization, the hypotheses' SQNRs kept as
 * the first pass found them. The export's sums are those the first pass took for that
 * hypothesis, bit for bit (FP4_ERR_INTERNAL if not: never a number of another reading). */
static fp4_status audit_as_fit(fp4_source *src, fp4_source *qsrc, const src_pair *d,
                               fp4_audit_tensor *t, float group_amax, const audit_bufs *bu)
{
    fp4_audit_sums hyp[FP4_AUDIT_NH];
    bool tried[FP4_AUDIT_NH];
    memcpy(hyp, t->hyp, sizeof hyp);
    memcpy(tried, t->hyp_tried, sizeof tried);
    memset(t->hyp, 0, sizeof t->hyp);
    memset(&t->export_, 0, sizeof t->export_);
    memset(&t->requant, 0, sizeof t->requant);
    memset(&t->export_na, 0, sizeof t->export_na);
    memset(&t->requant_na, 0, sizeof t->requant_na);
    memset(t->histogram, 0, sizeof t->histogram);
    memset(t->rq_histogram, 0, sizeof t->rq_histogram);
    memset(t->diff, 0, sizeof t->diff);
    memset(t->mx_rule_match, 0, sizeof t->mx_rule_match);
    t->nonnearest = t->scale_bytes = t->scale_match = t->zero_blocks = 0;
    t->src_nonzero = t->flushed = t->e8m0_ff = t->e4m3_nan = 0;
    const int h = t->layout_fit;
    FP4_TRY(audit_tensor(src, qsrc, d, t, group_amax, bu, h));
    const fp4_audit_sums *e = &t->export_, *f = &hyp[h];
    if (memcmp(&e->xx, &f->xx, sizeof e->xx) || memcmp(&e->ee, &f->ee, sizeof e->ee) ||
        memcmp(&e->xq, &f->xq, sizeof e->xq) || e->n != f->n)
        return fp4_error(FP4_ERR_INTERNAL, "%s: the export read with %s is not the reading "
                                           "that fitted",
                         t->name, fp4_audit_hypothesis_label(t, h));
    memcpy(t->hyp, hyp, sizeof hyp);
    memcpy(t->hyp_tried, tried, sizeof tried);
    layout_note(t, h);
    return FP4_OK;
}

/* A float tensor (as io/source.c's desc_is_float): integers and classes are not. */
static bool desc_float(const fp4_tensor_desc *d)
{
    switch (d->stored) {
    case FP4_STORED_F16:
    case FP4_STORED_BF16:
    case FP4_STORED_F32:
    case FP4_STORED_F64: return true;
    case FP4_STORED_OTHER: return d->numeric && (d->dtype[0] == 'f' || !strncmp(d->dtype, "bf", 2));
    default: return false;
    }
}

static int skip_by_name(const void *pa, const void *pb)
{
    return strcmp(((const fp4_audit_skip *)pa)->name, ((const fp4_audit_skip *)pb)->name);
}

static int str_cmp(const void *pa, const void *pb)
{
    return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* A skipped entry for d with `reason` and `format` ("" for none), appended to a->skipped. */
static fp4_status add_skip(fp4_audit *a, const fp4_tensor_desc *d, const char *format,
                           const char *reason)
{
    fp4_audit_skip *v = realloc(a->skipped, (size_t)(a->nskipped + 1) * sizeof *v);
    if (!v) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    a->skipped = v;
    v = &a->skipped[a->nskipped];
    memset(v, 0, sizeof *v);
    if (!(v->name = strdup(d->name))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    a->nskipped++;
    v->rank = d->rank < 0 ? 0 : d->rank > FP4_MAX_RANK ? FP4_MAX_RANK : d->rank;
    memcpy(v->dims, d->dims, sizeof v->dims);
    snprintf(v->dtype, sizeof v->dtype, "%s", d->dtype);
    snprintf(v->format, sizeof v->format, "%s", format);
    snprintf(v->reason, sizeof v->reason, "%s", reason);
    return FP4_OK;
}

/* SOURCE's tensors selected by pat that QUANTIZED neither holds under that name (qnames, n of
 * them, sorted) nor pairs with any of its quantized tensors (another name: a gpt-oss alias,
 * gate/up fused on one side): skipped, "in SOURCE only". */
static fp4_status source_only(fp4_source *src, const fp4_qset *qs, const char *const *qnames,
                              int nq, char *const *pat, int npatterns, const char *quantized,
                              fp4_audit *a)
{
    fp4_tensor_desc *all = NULL;
    int n = 0, nu = 0;
    FP4_TRY(fp4_source_select(src, NULL, 0, &all, &n));
    char **used = calloc(2 * (size_t)qs->n + 1, sizeof *used);
    fp4_status st = used ? FP4_OK : fp4_error(FP4_ERR_INTERNAL, "out of memory");
    for (int i = 0; st == FP4_OK && i < qs->n; i++) {
        src_pair d;
        char why[600];
        int tr;
        st = pair_source(src, quantized, &qs->t[i], &d, why, sizeof why, &tr);
        for (int k = 0; st == FP4_OK && k < 2; k++)
            if (d.d[k].name && !(used[nu++] = strdup(d.d[k].name)))
                st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        pair_free(&d);
    }
    fp4_error_clear(); /* a name SOURCE lacks, as described: the run's errors say so */
    if (st == FP4_OK) qsort(used, (size_t)nu, sizeof *used, str_cmp);
    for (int i = 0; st == FP4_OK && i < n; i++) {
        const char *nm = all[i].name;
        if (bsearch(&nm, qnames, (size_t)nq, sizeof *qnames, str_cmp) ||
            bsearch(&nm, used, (size_t)nu, sizeof *used, str_cmp))
            continue;
        bool hit = npatterns == 0;
        for (int k = 0; k < npatterns && !hit; k++) hit = fp4_select_matches(pat[k], nm, "./");
        if (hit)
            st = add_skip(a, &all[i], "", "in SOURCE only: QUANTIZED has no tensor of this name");
    }
    for (int i = 0; used && i < nu; i++) free(used[i]);
    free(used);
    fp4_tensor_desc_free_list(all, n);
    return st;
}

/* Every selected tensor of QUANTIZED that no quantized tensor of qs holds (SPEC §11): one that
 * cannot be described (a problem other than a known GGUF block type it does not read: an
 * unknown type id, data out of bounds) an errors entry at the next position of the selection
 * (this share's when `errors_here`), the rest a->skipped with its reason, by name. */
static fp4_status audit_coverage(fp4_source *src, fp4_source *qsrc, const fp4_qset *qs,
                                 char *const *pat, int npatterns, const char *quantized,
                                 bool errors_here, fp4_audit *a)
{
    fp4_tensor_desc *all = NULL;
    int n = 0;
    FP4_TRY(fp4_source_select(qsrc, NULL, 0, &all, &n));
    const char **qnames = calloc((size_t)n + 1, sizeof *qnames);
    fp4_status st = qnames ? FP4_OK : fp4_error(FP4_ERR_INTERNAL, "out of memory");
    const bool gguf = strcmp(fp4_source_format(qsrc)->name, "gguf") == 0;
    for (int i = 0; i < n && st == FP4_OK; i++) {
        const fp4_tensor_desc *d = &all[i];
        if (fp4_qset_find(qs, d->name) >= 0) continue; /* audited, or its errors entry */
        bool hit = npatterns == 0;
        for (int k = 0; k < npatterns && !hit; k++) hit = fp4_select_matches(pat[k], d->name, "./");
        if (!hit) continue;
        char reason[320] = "", format[48] = "";
        const int fp8 = fp4_quant_fp8_role(qs, d->name, reason, sizeof reason);
        const bool gguf_blocks = gguf && d->problem[0] && strncmp(d->dtype, "ggml type ", 10) &&
                                 !strncmp(d->problem, "ggml type ", 10) &&
                                 strstr(d->problem, " is not read");
        if (fp8 == 1) {
            const bool e5 = strstr(d->dtype, "e5m2") != NULL;
            snprintf(reason, sizeof reason, "FP8 (%s) export: audit covers 4-bit formats",
                     e5 ? "E5M2" : "E4M3");
            snprintf(format, sizeof format, "%s", e5 ? "fp8_e5m2" : "fp8_e4m3");
        } else if (fp8 > 1) { /* its scale or input scale: the reason says whose */
        } else if (gguf_blocks) {
            snprintf(reason, sizeof reason,
                     "GGUF %s blocks: audit covers the 4-bit float types mxfp4 and nvfp4",
                     d->dtype);
            snprintf(format, sizeof format, "%s", d->dtype);
        } else if (d->problem[0]) { /* cannot even be described: the file is invalid there */
            char why[600];
            snprintf(why, sizeof why, "%s: %s: %s", quantized, d->name, d->problem);
            int at;
            if ((st = select_next(a, d->name, d->rank, d->dims, &at)) != FP4_OK) break;
            if (!errors_here) continue;
            int *as = realloc(a->assigned, (size_t)(a->nassigned + 2) * sizeof *as);
            if (!as) {
                st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
                break;
            }
            a->assigned = as;
            a->assigned[a->nassigned++] = at;
            st = add_error(a, d->name, FP4_ERR_INPUT, why, at);
            continue;
        } else if (!d->numeric) {
            snprintf(reason, sizeof reason, "not numeric (%s)", d->dtype);
        } else if (!desc_float(d)) {
            snprintf(reason, sizeof reason, "integer (%s)", d->dtype);
        } else {
            snprintf(reason, sizeof reason, "not quantized (%s)", d->dtype);
        }
        st = add_skip(a, d, format, reason);
    }
    for (int i = 0; qnames && i < n; i++) qnames[i] = all[i].name;
    if (st == FP4_OK) {
        qsort(qnames, (size_t)n, sizeof *qnames, str_cmp);
        st = source_only(src, qs, qnames, n, pat, npatterns, quantized, a);
    }
    free(qnames);
    fp4_tensor_desc_free_list(all, n);
    if (st == FP4_OK && a->nskipped > 1)
        qsort(a->skipped, (size_t)a->nskipped, sizeof *a->skipped, skip_by_name);
    return st;
}

/* A SELECT pattern as the sources normalise one (io/source.c select_normalize): without its
 * leading '/' and its trailing separators ("model.layers.0." selects what "model.layers.0"
 * does, as in ls and sqnr). */
static char *norm_pattern(const char *p)
{
    while (*p == '/') p++;
    char *d = strdup(p);
    size_t n = d ? strlen(d) : 0;
    while (n > 0 && (d[n - 1] == '.' || d[n - 1] == '/')) d[--n] = '\0';
    return d;
}

/* "NVFP4 modelopt": what a quantized tensor is, for the operands' messages. */
static void q_kind(const fp4_qtensor *q, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s %s", q->format == FP4_QF_NVFP4 ? "NVFP4" : "MXFP4",
             fp4_qproducer_name(q->producer));
}

/* The operands in their roles (SPEC §11): SOURCE a quantized export itself (it holds, as a
 * quantized tensor, one that QUANTIZED quantizes: `audit Q Q`, or two exports of one model),
 * or QUANTIZED holding no 4-bit tensor where SOURCE does (the two swapped) — usage errors
 * (FP4_ERR_USAGE) saying which, never "no such tensor" or shape errors per tensor. */
static fp4_status operands_check(fp4_source *src, const char *source, const char *quantized,
                                 const fp4_qset *qs)
{
    fp4_qset sq = {0};
    fp4_status st = fp4_quant_scan(src, &sq);
    if (st != FP4_OK) { /* a SOURCE tensor it cannot describe: the pairing says so, as before */
        fp4_qset_free(&sq);
        if (st == FP4_ERR_INTERNAL) return st;
        fp4_error_clear();
        return FP4_OK;
    }
    char kind[64];
    if (qs->n == 0 && sq.n > 0) {
        q_kind(&sq.t[0], kind, sizeof kind);
        st = fp4_error(FP4_ERR_USAGE,
                       "QUANTIZED %s holds no 4-bit tensor but SOURCE %s does (%s): SOURCE and "
                       "QUANTIZED swapped? (fp4diag audit SOURCE QUANTIZED: the high-precision "
                       "checkpoint first)",
                       quantized, source, kind);
    }
    for (int i = 0; st == FP4_OK && i < qs->n; i++) {
        int j = -1;
        for (int k = 0; j < 0 && k < sq.n; k++)
            if (!strcmp(sq.t[k].name, qs->t[i].name)) j = k;
        if (j < 0) j = fp4_qset_find(&sq, qs->t[i].packed);
        if (j < 0) continue;
        q_kind(&sq.t[j], kind, sizeof kind);
        st = fp4_error(FP4_ERR_USAGE,
                       "SOURCE %s is itself a quantized export (%s: %s): give the "
                       "high-precision checkpoint first (fp4diag audit SOURCE QUANTIZED)",
                       source, kind, sq.t[j].name);
    }
    fp4_qset_free(&sq);
    return st;
}

static int audit_progress = -1; /* fp4_audit_set_progress: off for library callers */

void fp4_audit_set_progress(int verbosity) { audit_progress = verbosity; }

static fp4_device audit_device = FP4_DEVICE_CPU; /* fp4_audit_set_device */

void fp4_audit_set_device(fp4_device dev) { audit_device = dev; }

fp4_status fp4_audit_run(const char *source, const char *quantized, const char *const *patterns,
                         int npatterns, fp4_audit *a)
{
    fp4_shard all = {0, 0};
    return fp4_audit_run_shard(source, quantized, patterns, npatterns, all, a);
}


/* What a SELECT pattern that matches no quantized tensor does name (SPEC §11), as the
 * analyses say it: the tensors of QUANTIZED it names, stored in high precision (and kept so by
 * the checkpoint's own exclude list, when that is why), else the quantized tensor it is a
 * typo of; "" when neither. */
static void audit_no_match_hint(fp4_source *qsrc, const fp4_qset *qs, const char *pattern,
                                char *hint, size_t cap)
{
    hint[0] = '\0';
    fp4_tensor_desc *hits = NULL;
    int nh = 0;
    bool unmatched = false;
    const char *pats[1] = {pattern};
    if (fp4_source_select_some(qsrc, pats, 1, &hits, &nh, &unmatched) != FP4_OK) {
        fp4_error_clear();
        nh = 0;
        hits = NULL;
    }
    if (nh > 0) {
        const char *why = NULL;
        for (int e = 0; e < qs->nexclude && !why; e++)
            if (fp4_recipe_exclude_matches(qs->exclude[e], hits[0].name)) why = qs->exclude[e];
        if (why)
            snprintf(hint, cap, "; %s%s is kept in high precision (%s) by %s: %s", hits[0].name,
                     nh > 1 ? " (and others it names)" : "", hits[0].dtype, qs->exclude_from,
                     why);
        else
            snprintf(hint, cap, "; it names %d tensor%s stored in high precision (%s: %s), "
                                "not quantized", nh, nh == 1 ? "" : "s", hits[0].name,
                     hits[0].dtype);
    } else {
        char **names = calloc((size_t)qs->n + 1, sizeof *names);
        for (int i = 0; names && i < qs->n; i++) names[i] = qs->t[i].name;
        const char *near = names ? fp4_source_nearest_name(pattern, names, qs->n) : NULL;
        if (near)
            snprintf(hint, cap, "; did you mean %s? ('fp4diag ls %s' lists them)", near,
                     fp4_source_file(qsrc));
        free(names);
    }
    fp4_tensor_desc_free_list(hits, nh);
}

fp4_status fp4_audit_run_shard(const char *source, const char *quantized,
                               const char *const *patterns, int npatterns, fp4_shard shard,
                               fp4_audit *a)
{
    memset(a, 0, sizeof *a);
    a->shard = shard;
    FP4_TRY(fp4_select_check(patterns, npatterns)); /* '' is no "every tensor" */
    int *pos = NULL, *gowner = NULL;
    int64_t *gw = NULL;
    bool *mine = NULL, *need = NULL;
    double t0 = now_seconds();
    fp4_progress pm;
    bool progress_on = false;
    int64_t bytes_done = 0;
    fp4_source *src = NULL, *qsrc = NULL;
    fp4_backend *be = NULL;
    fp4_qset qs = {0};
    bool *sel = NULL;
    float *amax = NULL, *x = NULL, *dec = NULL, *alt = NULL, *rec = NULL, *swz = NULL;
    char **pat = NULL, **keys = NULL, **kinds = NULL, **abad = NULL;
    fp4_status st;
    a->source = strdup(source);
    a->quantized = strdup(quantized);
    if (!a->source || !a->quantized) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    { /* the provenance, and what every share reads the same, before anything is opened
       * (a --shard run checks it again once every tensor is read) */
        const char *inputs[2] = {source, quantized};
        st = fp4_fingerprint_inputs(inputs, 2, &a->prints, &a->nprints);
        if (st != FP4_OK && shard.count > 0) goto out;
        if (st != FP4_OK) fp4_error_clear(), st = FP4_OK;
    }
    snprintf(a->device, sizeof a->device, "cpu");
    if (audit_device != FP4_DEVICE_CPU) { /* CUDA asked and absent: the run's error */
        if ((st = fp4_backend_open(audit_device, 1, &be)) != FP4_OK) goto out;
        if (!fp4_backend_audits(be)) { /* auto without a GPU: the CPU */
            fp4_backend_close(be);
            be = NULL;
        }
        if (be) snprintf(a->device, sizeof a->device, "cuda");
    }
    st = fp4_source_open(quantized, &qsrc);
    if (st == FP4_OK) st = fp4_source_open(source, &src);
    if (st == FP4_OK) st = fp4_quant_scan(qsrc, &qs);
    if (st == FP4_OK) st = operands_check(src, source, quantized, &qs);
    if (st != FP4_OK) goto out;
    snprintf(a->declared, sizeof a->declared, "%s", qs.declared);
    if (qs.n == 0) {
        st = fp4_error(FP4_ERR_INPUT,
                       "%s: no already-quantized tensor (NVFP4/MXFP4: ModelOpt, "
                       "compressed-tensors, gpt-oss, GGUF) in it",
                       quantized);
        goto out;
    }
    sel = calloc((size_t)qs.n, sizeof *sel);
    amax = calloc((size_t)qs.n, sizeof *amax);
    abad = calloc((size_t)qs.n, sizeof *abad);
    pat = calloc((size_t)npatterns + 1, sizeof *pat);
    if (!sel || !amax || !abad || !pat) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (int k = 0; k < npatterns; k++) {
        if (!(pat[k] = norm_pattern(patterns[k]))) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        bool any = false;
        for (int i = 0; i < qs.n; i++) { /* its logical name or a member's, as ls and sqnr */
            bool hit = fp4_select_matches(pat[k], qs.t[i].name, "./");
            const char *m;
            for (int j = 0; !hit && (m = fp4_quant_member(&qs.t[i], j)); j++)
                hit = fp4_select_matches(pat[k], m, "./");
            if (hit) sel[i] = any = true;
        }
        if (!any) {
            char hint[768];
            audit_no_match_hint(qsrc, &qs, patterns[k], hint, sizeof hint);
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: no quantized tensor matches%s", quantized,
                           patterns[k], hint);
            goto out;
        }
    }
    if (npatterns == 0)
        for (int i = 0; i < qs.n; i++) sel[i] = true;

    /* A tensor with no elements (a dim 0: 0xK, Kx0) has nothing to measure: an errors entry
     * (SPEC §11), never a division by its zero dims. */
    for (int i = 0; i < qs.n; i++) {
        fp4_qtensor *q = &qs.t[i];
        bool empty = false;
        for (int d = 0; d < q->rank; d++) empty = empty || q->dims[d] == 0;
        if (q->problem[0] || !empty) continue;
        char shape[96] = "";
        size_t at = 0;
        for (int d = 0; d < q->rank && at < sizeof shape - 24; d++)
            at += (size_t)snprintf(shape + at, sizeof shape - at, "%s%lld", d ? "x" : "",
                                   (long long)q->dims[d]);
        snprintf(q->problem, sizeof q->problem, "no elements (shape %s): nothing to audit",
                 shape);
    }
    int64_t maxel = 1;
    for (int i = 0; i < qs.n; i++) {
        if (qs.t[i].problem[0] || qs.t[i].rank < 1) continue;
        int64_t rows_per, count;
        slab_plan(&qs.t[i], &rows_per, &count);
        int64_t n = qs.t[i].rank == 1 ? qs.t[i].dims[0]
                                      : count * rows_per * qs.t[i].dims[qs.t[i].rank - 1];
        if (n > maxel) maxel = n;
    }
    maxel += 2; /* room for the odd element of a pair */
    x = malloc((size_t)maxel * sizeof *x);
    dec = malloc((size_t)maxel * sizeof *dec);
    alt = malloc((size_t)maxel * sizeof *alt);
    rec = malloc((size_t)maxel * sizeof *rec);
    swz = malloc((size_t)maxel * sizeof *swz);
    a->t = calloc((size_t)qs.n, sizeof *a->t);
    if (!x || !dec || !alt || !rec || !swz || !a->t) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory (%lld elements a slab)",
                       (long long)maxel);
        goto out;
    }

    /* the fused groups' source amax: every member paired, selected or not */
    keys = calloc((size_t)qs.n, sizeof *keys);
    kinds = calloc((size_t)qs.n, sizeof *kinds);
    if (!keys || !kinds) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (int i = 0; i < qs.n; i++) {
        char key[1200], kind[32];
        fp4_audit_group_key(qs.t[i].name, key, sizeof key, kind, sizeof kind);
        keys[i] = strdup(key);
        kinds[i] = strdup(kind);
        if (!keys[i] || !kinds[i]) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        amax[i] = -1.0f; /* not measured */
    }
    /* positions in the selection, and this share's: whole fused groups, by element count */
    pos = calloc((size_t)qs.n + 1, sizeof *pos);
    mine = calloc((size_t)qs.n + 1, sizeof *mine);
    gowner = calloc((size_t)qs.n + 1, sizeof *gowner);
    gw = calloc((size_t)qs.n + 1, sizeof *gw);
    a->assigned = calloc((size_t)qs.n + 1, sizeof *a->assigned);
    if (!pos || !mine || !gowner || !gw || !a->assigned) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    {
        int ng = 0;
        for (int i = 0; i < qs.n; i++) {
            if (!sel[i]) continue;
            st = select_next(a, qs.t[i].name, qs.t[i].rank, qs.t[i].dims, &pos[i]);
            if (st != FP4_OK) goto out;
            int g = 0; /* the group of i: the first selected tensor with its key */
            while (g < i && !(sel[g] && !strcmp(keys[g], keys[i]))) g++;
            if (g == i) gowner[i] = ng++; /* a new group's number, for now */
            else gowner[i] = gowner[g];
            gw[gowner[i]] += qs.t[i].problem[0] ? 0 : qs.t[i].rows * qs.t[i].dims[qs.t[i].rank - 1];
        }
        int *owner = calloc((size_t)ng + 1, sizeof *owner);
        if (!owner) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        st = fp4_shard_assign(gw, ng, shard.count, owner);
        for (int i = 0; st == FP4_OK && i < qs.n; i++) {
            mine[i] = sel[i] && (shard.count <= 0 || owner[gowner[i]] == shard.index);
            if (mine[i]) a->assigned[a->nassigned++] = pos[i];
        }
        free(owner);
        if (st != FP4_OK) goto out;
    }
    /* the members whose source amax this share's NVFP4 tensors need (a member with a problem
     * still counts: the rule is about the source), each read once; metered as units of their
     * own ahead of the tensors (on a large checkpoint this first pass reads a good part of the
     * source) */
    need = calloc((size_t)qs.n + 1, sizeof *need);
    if (!need) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    int namax = 0, nmine = 0, k_unit = 0;
    for (int i = 0; i < qs.n; i++) {
        nmine += mine[i];
        if (!mine[i] || qs.t[i].problem[0] || qs.t[i].format != FP4_QF_NVFP4) continue;
        for (int j = 0; j < qs.n; j++)
            if (!need[j] && !strcmp(keys[i], keys[j])) need[j] = true, namax++;
    }
    fp4_progress_start(&pm, audit_progress, namax + nmine, 0);
    fp4_progress_share(&pm, shard.index, shard.count);
    progress_on = true;
    for (int j = 0; j < qs.n; j++) {
        if (!need[j]) continue;
        char label[1100], why[600];
        snprintf(label, sizeof label, "%s (group amax)", qs.t[j].name);
        fp4_progress_step(&pm, k_unit++, label, bytes_done);
        st = member_amax(src, quantized, &qs.t[j], &amax[j], &bytes_done, why, sizeof why);
        if (st != FP4_OK) goto out;
        if (why[0] && !(abad[j] = strdup(why))) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
    }

    for (int i = 0; i < qs.n; i++) {
        if (!mine[i]) continue;
        const fp4_qtensor *q = &qs.t[i];
        fp4_progress_step(&pm, k_unit++, q->name, bytes_done);
        char why[600];
        if (q->problem[0]) {
            snprintf(why, sizeof why, "%s: %s: %s", quantized, q->name, q->problem);
            if ((st = add_error(a, q->name, FP4_ERR_INPUT, why, pos[i])) != FP4_OK) goto out;
            continue;
        }
        float in_scale; /* not in the decode; a NaN, Inf, 0 or negative one: a broken export */
        if ((st = fp4_quant_input_scale(qsrc, q, &in_scale)) != FP4_OK) {
            if (st != FP4_ERR_INPUT) goto out;
            if ((st = add_error(a, q->name, FP4_ERR_INPUT, fp4_last_error(), pos[i])) != FP4_OK)
                goto out;
            continue;
        }
        src_pair d;
        int transposed = 0;
        st = pair_source(src, quantized, q, &d, why, sizeof why, &transposed);
        if (st != FP4_OK) {
            pair_free(&d);
            goto out;
        }
        if (why[0]) {
            pair_free(&d);
            if ((st = add_error(a, q->name, FP4_ERR_INPUT, why, pos[i])) != FP4_OK) goto out;
            continue;
        }
        /* a fused member whose source amax is unknown leaves the group's rule unknown: an
         * errors entry naming it, never a scale from the other members alone (SPEC §11) */
        int broken = -1;
        for (int j = 0; q->format == FP4_QF_NVFP4 && j < qs.n && broken < 0; j++)
            if (j != i && abad[j] && strcmp(keys[i], keys[j]) == 0) broken = j;
        if (broken >= 0) {
            char msg[1800];
            pair_free(&d);
            snprintf(msg, sizeof msg,
                     "%s: %s: the per-tensor scale of its fused group (%s) cannot be re-derived: "
                     "member %s has no source amax (%s)",
                     quantized, q->name, kinds[i], qs.t[broken].name, abad[broken]);
            if ((st = add_error(a, q->name, FP4_ERR_INPUT, msg, pos[i])) != FP4_OK) goto out;
            continue;
        }
        float gam = 0.0f;
        for (int j = 0; j < qs.n; j++)
            if (amax[j] > gam && strcmp(keys[i], keys[j]) == 0) gam = amax[j];
        fp4_audit_tensor *t = &a->t[a->n];
        memset(t, 0, sizeof *t);
        t->q = *q;
        t->q.name = strdup(q->name);
        t->q.packed = strdup(q->packed);
        t->q.scale = strdup(q->scale);
        t->q.global = q->global ? strdup(q->global) : NULL;
        t->q.input_scale = q->input_scale ? strdup(q->input_scale) : NULL;
        t->q.also = NULL; /* the set's (a tensor stored twice is an error, never audited) */
        t->q.nalso = 0;
        t->name = t->q.name;
        snprintf(t->group, sizeof t->group, "%s", kinds[i]);
        t->group_key = strdup(keys[i]);
        t->group_shared = -1;
        t->scale_rule_fit = -1;
        t->tensor_amax = amax[i];
        t->source_transposed = transposed;
        if (d.note) { /* gate/up fused on one side only (pair_gate_up) */
            size_t l = strlen(t->q.layout);
            snprintf(t->q.layout + l, sizeof t->q.layout - l, "%s", d.note);
        } else if (strcmp(d.d[0].name, q->name) != 0) { /* its other name (gptoss_alias) */
            size_t l = strlen(t->q.layout);
            snprintf(t->q.layout + l, sizeof t->q.layout - l, ", source as %s names it",
                     strncmp(d.d[0].name, "block.", 6) == 0 ? "gpt-oss" : "transformers");
        }
        t->position = pos[i];
        if (!t->group_key) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        a->n++;
        for (int k = 0; k < d.n && k < 2; k++)
            if (d.d[k].nelems > 0) bytes_done += d.d[k].nelems * fp4_stored_size(d.d[k].stored);
        const audit_bufs bu = {x, dec, rec, swz, alt, be, a->n};
        fp4_status ts = audit_tensor(src, qsrc, &d, t, gam, &bu, FP4_AUDIT_H_DECLARED);
        if (ts == FP4_OK && (t->layout_fit = layout_fit_of(t)) > FP4_AUDIT_H_DECLARED)
            ts = audit_as_fit(src, qsrc, &d, t, gam, &bu);
        pair_free(&d);
        if (ts == FP4_ERR_INTERNAL || ts == FP4_ERR_DEVICE) { /* the run's, not the tensor's */
            st = ts;
            goto out;
        }
        if (ts != FP4_OK) { /* this tensor only */
            if ((st = add_error(a, q->name, ts, fp4_last_error(), pos[i])) != FP4_OK) goto out;
            t->layout_fit = -1;
            continue;
        }
        if (t->layout_fit < 0) {
            const char *s1;
            size_t k = (size_t)snprintf(why, sizeof why,
                                        "%s: %s: no layout makes the export sane against the "
                                        "source: SQNR",
                                        quantized, q->name);
            for (int h = 0; h < FP4_AUDIT_NH && k < sizeof why; h++) {
                if (!t->hyp_tried[h]) continue;
                k += (size_t)snprintf(why + k, sizeof why - k, "%s %.3f dB %s",
                                      h ? "," : "", fp4_audit_sqnr(&t->hyp[h], &s1),
                                      fp4_audit_hypothesis_label(t, h));
            }
            if (k < sizeof why)
                k += (size_t)snprintf(why + k, sizeof why - k,
                                      "; our round-to-nearest gives %.3f dB",
                                      fp4_audit_sqnr(&t->requant, &s1));
            /* the special scale bytes that make a decode inf or NaN, named */
            if (t->e8m0_ff && k < sizeof why)
                k += (size_t)snprintf(why + k, sizeof why - k,
                                      "; %lld block scale%s E8M0 0xFF (NaN in OCP MX, 2^128 as "
                                      "gpt-oss decodes it)",
                                      (long long)t->e8m0_ff, t->e8m0_ff == 1 ? " is" : "s are");
            if (t->e4m3_nan && k < sizeof why)
                snprintf(why + k, sizeof why - k, "; %lld block scale%s an E4M3 NaN byte",
                         (long long)t->e4m3_nan, t->e4m3_nan == 1 ? " is" : "s are");
            if ((st = add_error(a, q->name, FP4_ERR_INPUT, why, pos[i])) != FP4_OK) goto out;
            continue;
        }
        if (t->layout_fit == FP4_AUDIT_H_DECLARED) { /* the pool: tensors read as declared */
            sums_merge(&a->pooled_export, &t->export_);
            sums_merge(&a->pooled_requant, &t->requant);
            sums_merge(&a->pooled_export_na, &t->export_na);
            sums_merge(&a->pooled_requant_na, &t->requant_na);
            a->pooled_nonnearest += t->nonnearest;
            a->pooled_elements += t->export_.n;
            a->pooled_scale_bytes += t->scale_bytes;
            a->pooled_scale_match += t->scale_match;
            for (int c = 0; c < 16; c++) {
                a->pooled_histogram[c] += t->histogram[c];
                a->pooled_rq_histogram[c] += t->rq_histogram[c];
            }
        }
    }
    fp4_progress_finish(&pm, bytes_done);
    /* the rest of QUANTIZED: errors entries after the quantized tensors' positions (share 0
     * holds them), the skipped list in every share alike */
    if ((st = audit_coverage(src, qsrc, &qs, pat, npatterns, quantized,
                             shard.count <= 0 || shard.index == 0, a)) != FP4_OK)
        goto out;
    if (shard.count > 0) { /* the files read are those the fingerprint describes */
        const char *inputs[2] = {source, quantized};
        if ((st = fp4_fingerprint_recheck(inputs, 2, a->prints, a->nprints)) != FP4_OK) goto out;
    }
    /* fused partners sharing one per-tensor scale (as ModelOpt and llm-compressor export) */
    for (int i = 0; i < a->n; i++) {
        fp4_audit_tensor *t = &a->t[i];
        if (t->layout_fit < 0 || t->q.format != FP4_QF_NVFP4 || !t->group[0]) continue;
        int members = 0, same = 1;
        for (int j = 0; j < a->n; j++) {
            const fp4_audit_tensor *u = &a->t[j];
            if (u->layout_fit < 0 || u->q.format != FP4_QF_NVFP4 || !u->group_key ||
                strcmp(u->group_key, t->group_key) != 0)
                continue;
            members++;
            same &= u->global_stored == t->global_stored;
        }
        t->group_shared = members > 1 ? same : -1;
    }
    st = FP4_OK;
out:
    if (progress_on) fp4_progress_end(&pm);
    a->seconds = now_seconds() - t0;
    for (int k = 0; pat && k < npatterns; k++) free(pat[k]);
    free(pat);
    for (int i = 0; keys && i < qs.n; i++) free(keys[i]);
    for (int i = 0; kinds && i < qs.n; i++) free(kinds[i]);
    free(keys);
    free(kinds);
    free(sel);
    free(pos);
    free(mine);
    free(need);
    free(gowner);
    free(gw);
    free(amax);
    for (int i = 0; abad && i < qs.n; i++) free(abad[i]);
    free(abad);
    free(x);
    free(dec);
    free(alt);
    free(rec);
    free(swz);
    fp4_qset_free(&qs);
    fp4_source_close(src);
    fp4_source_close(qsrc);
    if (be) fp4_backend_close(be);
    return st;
}

void fp4_audit_free(fp4_audit *a)
{
    for (int i = 0; i < a->n; i++) {
        fp4_qtensor *q = &a->t[i].q;
        free(q->name);
        free(q->packed);
        free(q->scale);
        free(q->global);
        free(q->input_scale);
        free(a->t[i].group_key);
    }
    free(a->t);
    for (int i = 0; i < a->nerrors; i++) {
        free(a->errors[i].tensor);
        free(a->errors[i].message);
    }
    free(a->errors);
    for (int i = 0; i < a->nskipped; i++) free(a->skipped[i].name);
    free(a->skipped);
    free(a->source);
    free(a->quantized);
    free(a->assigned);
    for (int i = 0; a->selnames && i < a->selected; i++) free(a->selnames[i]);
    free(a->selnames);
    free(a->selshapes);
    fp4_fingerprint_free(a->prints, a->nprints);
    memset(a, 0, sizeof *a);
}
