/* io/quantized.c — already-quantized checkpoints as logical tensors (see io/quantized.h and
 * SPEC §10). Layouts and decode orders follow the producers' own code: ModelOpt
 * (modelopt/torch/quantization/qtensor/nvfp4_tensor.py, mxfp4_tensor.py), compressed-tensors
 * (compressors/nvfp4, quantization/lifecycle/forward_helpers.py), transformers' gpt-oss
 * integration (integrations/mxfp4.py, convert_moe_packed_tensors), ggml's block types
 * (ggml-common.h block_mxfp4/block_nvfp4, ggml-quants.c dequantize_row_mxfp4/_nvfp4; gguf-py's
 * quants.py MXFP4/NVFP4 is its numpy mirror). */
#include <fnmatch.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "base/match.h"
#include "io/pario.h"
#include "io/mapguard.h"
#include "io/quantized.h"
#include "io/st_parse.h"
#include "io/widen_f8.h"

/* Longest tensor name grouped (longer ones are left as they are). */
#define FP4_NAME_MAX_Q 1024

const char *fp4_qformat_name(fp4_qformat f)
{
    switch (f) {
    case FP4_QF_NVFP4: return "nvfp4";
    case FP4_QF_MXFP4: return "mxfp4";
    }
    return NULL;
}

const char *fp4_qproducer_name(fp4_qproducer p)
{
    switch (p) {
    case FP4_QP_MODELOPT: return "modelopt";
    case FP4_QP_COMPRESSED_TENSORS: return "compressed-tensors";
    case FP4_QP_GPT_OSS: return "gpt-oss";
    case FP4_QP_GGUF: return "gguf";
    }
    return NULL;
}

float fp4_e2m1_value(unsigned code)
{
    static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    float v = mag[code & 7u];
    return (code & 8u) ? -v : v;
}

/* ---- scanning ------------------------------------------------------------------------------ */

typedef struct name_ix {
    const char *name;
    int i;
} name_ix;

static int name_ix_cmp(const void *a, const void *b)
{
    return strcmp(((const name_ix *)a)->name, ((const name_ix *)b)->name);
}

typedef struct scan_ctx {
    fp4_source *src;
    fp4_tensor_desc *all;
    int n;
    name_ix *sorted;
    bool *used; /* a member of some group */
} scan_ctx;

static const fp4_tensor_desc *find_desc(const scan_ctx *c, const char *name, int *idx)
{
    name_ix key = {name, -1};
    const name_ix *h = bsearch(&key, c->sorted, (size_t)c->n, sizeof *c->sorted, name_ix_cmp);
    if (idx) *idx = h ? h->i : -1;
    return h ? &c->all[h->i] : NULL;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static bool is_dtype(const fp4_tensor_desc *d, const char *dt)
{
    return d && strcasecmp(d->dtype, dt) == 0;
}

static bool is_e8m0(const fp4_tensor_desc *d) { return is_dtype(d, "u8") || is_dtype(d, "F8_E8M0"); }

static void dims_text(char *buf, size_t cap, int rank, const int64_t *dims)
{
    size_t k = 0;
    buf[0] = '\0';
    if (rank == 0) snprintf(buf, cap, "scalar");
    for (int i = 0; i < rank && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? "x" : "", (long long)dims[i]);
}

/* snprintf that may cut its text (names are long; a cut message still names the tensor). */
__attribute__((format(printf, 3, 4))) static void say(char *buf, size_t cap, const char *fmt,
                                                      ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

/* Set a problem (the first one wins; later ones are dropped). */
__attribute__((format(printf, 2, 3))) static void problem(fp4_qtensor *q, const char *fmt, ...)
{
    if (q->problem[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q->problem, sizeof q->problem, fmt, ap);
    va_end(ap);
}

/* n bytes of a member's mapping copied into `to` under io/mapguard.h: false (nothing to use)
 * when the file shrank while they were read, never SIGBUS. Every scalar a member holds (a
 * per-tensor or input scale, a weight_shape) is read so. */
typedef struct map_copy {
    void *to;
    const uint8_t *from;
    size_t n;
} map_copy;

static void map_copy_run(void *ctx)
{
    map_copy *c = ctx;
    memcpy(c->to, c->from, c->n);
}

static bool map_copy_guarded(void *to, const uint8_t *from, size_t n)
{
    map_copy c = {to, from, n};
    return fp4_mapguard_call(map_copy_run, &c);
}

static fp4_status add_q(fp4_qset *qs, int *cap, fp4_qtensor **out)
{
    if (qs->n == *cap) {
        int nc = *cap ? 2 * *cap : 16;
        fp4_qtensor *t = realloc(qs->t, (size_t)nc * sizeof *t);
        if (!t) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        qs->t = t;
        *cap = nc;
    }
    *out = &qs->t[qs->n++];
    memset(*out, 0, sizeof **out);
    return FP4_OK;
}

/* Mark member `name` used and count its bytes; returns its descriptor or NULL. */
static const fp4_tensor_desc *member(scan_ctx *c, fp4_qtensor *q, const char *name)
{
    int idx;
    const fp4_tensor_desc *d = find_desc(c, name, &idx);
    if (d) {
        c->used[idx] = true;
        q->stored_bytes += d->stored_bytes;
        /* a member whose bytes the source cannot give for what it is (a file cut short
         * before its end: "data_offsets [A, B] past the file's end ...") says so, first */
        if (d->problem[0] && !fp4_source_bytes(c->src, d)) {
            if (strcmp(d->name, q->name) == 0) problem(q, "%s", d->problem);
            else problem(q, "%s: %s", d->name, d->problem);
        }
    }
    return d;
}

/* A per-tensor scale (ModelOpt weight_scale_2 / input_scale, compressed-tensors' global
 * scales, a GGUF sidecar): F32 holding exactly one value, whatever its shape (exporters
 * write 0-d or [1]; [1, 1] holds the same one value, which loaders broadcast alike). */
static void check_scalar(fp4_qtensor *q, const fp4_tensor_desc *d, const char *role)
{
    char sh[64];
    if (!is_dtype(d, "f32")) {
        problem(q, "%s is %s, expected f32", role, d->dtype);
        return;
    }
    if (d->nelems != 1) {
        dims_text(sh, sizeof sh, d->rank, d->dims);
        if (d->nelems < 0)
            problem(q, "%s (shape %s) holds more values than 64 bits count, expected one (a "
                       "per-tensor scale)", d->name, sh);
        else
            problem(q, "%s holds %lld values (shape %s), expected one (a per-tensor scale)",
                    d->name, (long long)d->nelems, sh);
    }
}

static const char *short_role(const char *member_name)
{
    const char *dot = strrchr(member_name, '.');
    return dot ? dot + 1 : member_name;
}

/* The checks every packed tensor gets: packed U8 of rank >= 1 with K = 2 x its last dim, and
 * block scales [..., K/block] (flat) or, for ModelOpt NVFP4 of rank 2, the swizzled shape. */
static void check_packed(fp4_qtensor *q, const fp4_tensor_desc *p, const fp4_tensor_desc *s)
{
    char a[96], b[96], kb[32];
    const char *pr = short_role(q->packed), *sr = q->scale ? short_role(q->scale) : "scale";
    if (!is_dtype(p, "u8")) {
        problem(q, "%s is %s, expected u8 (two 4-bit codes a byte)", pr, p->dtype);
        return;
    }
    if (p->rank < 1 || p->rank > FP4_MAX_RANK - 1) {
        problem(q, "%s has rank %s, expected 1 or more", pr, p->rank < 1 ? "0" : "> 7");
        return;
    }
    q->rank = p->rank;
    memcpy(q->dims, p->dims, sizeof q->dims);
    q->dims[q->rank - 1] = 2 * p->dims[p->rank - 1];
    q->rows = 1;
    for (int i = 0; i < q->rank - 1; i++) q->rows *= q->dims[i];
    int64_t K = q->dims[q->rank - 1];
    if (!s) return; /* the missing scale is named by the caller */
    if (K % q->block != 0) {
        say(kb, sizeof kb, "%lld", (long long)K);
        problem(q, "%s inputs per row are not a whole number of %s-element blocks", kb,
                q->block == 16 ? "16" : "32");
        return;
    }
    int64_t want[FP4_MAX_RANK];
    memcpy(want, q->dims, sizeof want);
    want[q->rank - 1] = K / q->block;
    bool flat = s->rank == q->rank;
    for (int i = 0; flat && i < q->rank; i++) flat = s->dims[i] == want[i];
    if (flat) {
        q->scale_cols = K / q->block;
        q->scale_layout = FP4_QS_FLAT;
        return;
    }
    if (q->producer == FP4_QP_MODELOPT && q->format == FP4_QF_NVFP4 && q->rank == 2 &&
        s->rank == 2 && s->dims[0] == (q->dims[0] + 127) / 128 * 128 &&
        s->dims[1] == (K / 16 + 3) / 4 * 4) {
        q->scale_cols = s->dims[1];
        q->scale_layout = FP4_QS_SWIZZLED;
        return;
    }
    /* TensorRT-LLM's fp4_quantize (ModelOpt try_tensorrt): 1-D U8 scales in the CUTLASS
     * layout, the same 128x4 tiles flattened ([ceil(R/128), ceil(K/16/4), 32, 4, 4];
     * tensorrt_llm cutlass_fp4_scale_to_modelopt_fp4_scale) */
    if (q->producer == FP4_QP_MODELOPT && q->format == FP4_QF_NVFP4 && q->rank == 2 &&
        s->rank == 1 && is_dtype(s, "u8") &&
        s->dims[0] == (q->dims[0] + 127) / 128 * 128 * ((K / 16 + 3) / 4 * 4)) {
        q->scale_cols = (K / 16 + 3) / 4 * 4;
        q->scale_layout = FP4_QS_SWIZZLED;
        q->scale_1d = true;
        return;
    }
    dims_text(a, sizeof a, s->rank, s->dims);
    dims_text(b, sizeof b, q->rank, want);
    char why[240];
    say(why, sizeof why, "%s, expected %s (one %s scale per %d of %lld inputs)", a, b,
             q->format == FP4_QF_NVFP4 ? "E4M3" : "E8M0", q->block, (long long)K);
    if (q->producer == FP4_QP_MODELOPT && q->format == FP4_QF_NVFP4 && q->rank == 2 &&
        s->rank == 1) {
        size_t l = strlen(why);
        say(why + l, sizeof why - l, " or, 1-D as TensorRT-LLM lays them out, %lld",
            (long long)((q->dims[0] + 127) / 128 * 128 * ((K / 16 + 3) / 4 * 4)));
    }
    problem(q, "%s is %s", sr, why);
}

static void set_layout(fp4_qtensor *q)
{
    if (q->scale_layout == FP4_QS_GGUF) {
        say(q->layout, sizeof q->layout, "%s",
            q->format == FP4_QF_MXFP4
                ? "ggml blocks: e8m0 + 16 bytes, nibble low=j high=j+16"
                : q->global ? "ggml blocks: 4 ue4m3 + 32 bytes, nibble low=j high=j+8, "
                              "global multiplied after"
                            : "ggml blocks: 4 ue4m3 + 32 bytes, nibble low=j high=j+8");
        return;
    }
    const char *g = q->format == FP4_QF_MXFP4                  ? ""
                    : q->producer == FP4_QP_COMPRESSED_TENSORS ? ", global divided"
                                                               : ", global multiplied";
    say(q->layout, sizeof q->layout, "nibble low=even, %s scales %s%s",
             q->format == FP4_QF_NVFP4 ? "e4m3" : "e8m0",
             q->scale_1d                        ? "1-D cutlass 128x4"
             : q->scale_layout == FP4_QS_SWIZZLED ? "swizzled 128x4"
                                                  : "flat",
             g);
}

void fp4_qlayout_under(const char *declared, bool ct, bool flat, fp4_qreading r, char *out,
                       size_t n)
{
    const char *from, *to, *note;
    switch (r) {
    case FP4_QREAD_NIBBLE_SWAP:
        from = "nibble low=even";
        to = "nibble low=odd";
        note = "nibble order swapped";
        break;
    case FP4_QREAD_RECIPROCAL:
        from = ct ? "global divided" : "global multiplied";
        to = ct ? "global multiplied" : "global divided";
        note = to;
        break;
    default:
        from = flat ? "scales flat" : "scales swizzled 128x4";
        to = flat ? "scales swizzled 128x4" : "scales flat";
        note = to;
    }
    const char *at = strstr(declared, from);
    if (at)
        snprintf(out, n, "%.*s%s (declared %s)%s", (int)(at - declared), declared, to,
                 from + (strncmp(from, "scales ", 7) ? strcspn(from, " ") + 1 : 7),
                 at + strlen(from));
    else
        snprintf(out, n, "%s, read with %s", declared, note);
}

bool fp4_qlayout_possible(fp4_qformat format, fp4_qproducer producer, const char *layout,
                          bool *swizzled)
{
    static char global[] = "g";
    for (int sl = FP4_QS_FLAT; sl <= FP4_QS_GGUF; sl++)
        for (int one_d = 0; one_d < 2; one_d++)
            for (int gl = 0; gl < 2; gl++) {
                if ((sl == FP4_QS_GGUF) != (producer == FP4_QP_GGUF) ||
                    (one_d && sl != FP4_QS_SWIZZLED))
                    continue;
                fp4_qtensor q;
                memset(&q, 0, sizeof q);
                q.format = format, q.producer = producer, q.scale_layout = (fp4_qscale_layout)sl;
                q.scale_1d = one_d, q.global = gl ? global : NULL;
                set_layout(&q);
                bool same = !strcmp(q.layout, layout);
                for (int r = FP4_QREAD_NIBBLE_SWAP; r <= FP4_QREAD_OTHER_SCALES && !same; r++) {
                    char under[2 * sizeof q.layout];
                    fp4_qlayout_under(q.layout, producer == FP4_QP_COMPRESSED_TENSORS,
                                      sl == FP4_QS_FLAT, (fp4_qreading)r, under, sizeof under);
                    under[sizeof q.layout - 1] = '\0'; /* as the tensor's layout holds it */
                    same = !strcmp(under, layout);
                }
                if (same) {
                    *swizzled = sl == FP4_QS_SWIZZLED;
                    return true;
                }
            }
    return false;
}

/* The other scale tensors of module <m> (SPEC §10): every <m>.LEAF not a member of q whose
 * leaf names a scale. Recognised and left alone (they scale activations or the KV cache, not
 * the weight): k_scale, v_scale, output_scale (ModelOpt and compressed-tensors' KV-cache
 * scales), input_scale / input_global_scale. Refused by name, a problem of q: pre_quant_scale
 * (AWQ / SmoothQuant: the codes quantize the weight times it), the other producer's weight
 * scales (weight_scale_2 beside weight_packed, weight_global_scale beside ModelOpt's weight),
 * and any other leaf with "scale" in it (weight_scale_3, smooth_scale, ...). */
static void check_scale_names(const scan_ctx *c, fp4_qtensor *q, const char *module)
{
    static const char *const benign[] = {"k_scale", "v_scale", "output_scale", "input_scale",
                                         "input_global_scale"};
    const size_t ml = strlen(module);
    int lo = 0, hi = c->n; /* the first name >= "<m>." */
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        const int k = strncmp(c->sorted[mid].name, module, ml);
        if (k < 0 || (k == 0 && c->sorted[mid].name[ml] < '.')) lo = mid + 1;
        else hi = mid;
    }
    for (int i = lo; i < c->n; i++) {
        const char *nm = c->sorted[i].name;
        if (strncmp(nm, module, ml) != 0 || nm[ml] != '.') break;
        const char *leaf = nm + ml + 1;
        if (c->used[c->sorted[i].i] || strchr(leaf, '.')) continue;
        if (!strstr(leaf, "scale")) continue;
        bool ok = false;
        for (size_t b = 0; !ok && b < sizeof benign / sizeof *benign; b++)
            ok = strcmp(leaf, benign[b]) == 0;
        if (ok) continue;
        if (strcmp(leaf, "pre_quant_scale") == 0)
            problem(q, "%s: the codes quantize the weight times this per-input scale (AWQ / "
                       "SmoothQuant), which fp4diag does not divide out", nm);
        else if (strcmp(leaf, "weight_scale_2") == 0 || strcmp(leaf, "weight_global_scale") == 0)
            problem(q, "%s: a per-tensor scale as %s names it, beside %s tensors", nm,
                    leaf[7] == 's' ? "modelopt" : "compressed-tensors",
                    fp4_qproducer_name(q->producer));
        else
            problem(q, "%s: a scale no producer fp4diag reads writes beside %s (not applied)",
                    nm, q->packed);
        return;
    }
}

/* compressed-tensors' <m>.weight_shape (the unpacked shape, i64 or i32 [rank]), when there
 * is one: it must be the shape the packed codes hold (their last dim x 2; the block scales
 * were checked against that). Not a member: listed as the tensor it is. */
static void check_weight_shape(const scan_ctx *c, fp4_qtensor *q, const fp4_tensor_desc *p,
                               const char *module)
{
    char nm[FP4_NAME_MAX_Q], a[96], b[96], pk[96];
    say(nm, sizeof nm, "%s.weight_shape", module);
    const fp4_tensor_desc *d = find_desc(c, nm, NULL);
    if (!d || q->problem[0] || q->rank < 1) return;
    const bool i64 = is_dtype(d, "i64"), i32 = is_dtype(d, "i32");
    dims_text(b, sizeof b, q->rank, q->dims);
    dims_text(pk, sizeof pk, p->rank, p->dims);
    if ((!i64 && !i32) || d->rank != 1 || d->dims[0] != q->rank) {
        dims_text(a, sizeof a, d->rank, d->dims);
        problem(q, "%s is %s %s, expected i64 [%d] (the shape %s that %s, u8 %s, holds)", nm,
                d->dtype, a, q->rank, b, p->name, pk);
        return;
    }
    const uint8_t *by = fp4_source_bytes(c->src, d);
    if (!by || d->stored_bytes != d->dims[0] * (i64 ? 8 : 4)) {
        problem(q, "%s: its bytes cannot be read", nm);
        return;
    }
    uint8_t raw[8 * FP4_MAX_RANK]; /* d->dims[0] == q->rank < FP4_MAX_RANK */
    if (!map_copy_guarded(raw, by, (size_t)d->stored_bytes)) {
        problem(q, "%s: the file shrank while it was read (truncated)", nm);
        return;
    }
    int64_t v[FP4_MAX_RANK];
    bool same = true;
    for (int i = 0; i < q->rank; i++) {
        if (i64) {
            memcpy(&v[i], raw + 8 * i, 8); /* little-endian, as every host we build on */
        } else {
            int32_t w;
            memcpy(&w, raw + 4 * i, 4);
            v[i] = w;
        }
        same = same && v[i] == q->dims[i];
    }
    if (same) return;
    size_t k = 0;
    a[0] = '\0';
    for (int i = 0; i < q->rank && k < sizeof a; i++)
        k += (size_t)snprintf(a + k, sizeof a - k, "%s%lld", i ? "x" : "", (long long)v[i]);
    problem(q, "%s is %s, but %s (u8 %s, two codes a byte) holds %s", nm, a, p->name, pk, b);
}

/* ModelOpt (<m>.weight) and compressed-tensors (<m>.weight_packed) groups. */
static fp4_status group_linear(scan_ctx *c, fp4_qset *qs, int *cap, const fp4_tensor_desc *p,
                               fp4_qproducer prod, const char *module)
{
    char nm[4][FP4_NAME_MAX_Q];
    const char *sfx[4];
    if (prod == FP4_QP_MODELOPT) {
        sfx[0] = ".weight_scale", sfx[1] = ".weight_scale_2", sfx[2] = ".input_scale";
    } else {
        sfx[0] = ".weight_scale", sfx[1] = ".weight_global_scale", sfx[2] = ".input_global_scale";
    }
    for (int i = 0; i < 3; i++) say(nm[i], sizeof nm[i], "%s%s", module, sfx[i]);
    say(nm[3], sizeof nm[3], "%s.weight", module);
    const fp4_tensor_desc *s = find_desc(c, nm[0], NULL);
    const fp4_tensor_desc *g = find_desc(c, nm[1], NULL);
    if (prod == FP4_QP_MODELOPT && !s && !g) return FP4_OK; /* a plain u8 weight */
    fp4_qtensor *q;
    FP4_TRY(add_q(qs, cap, &q));
    q->producer = prod;
    q->name = strdup(nm[3]);
    q->packed = strdup(p->name);
    if (!q->name || !q->packed) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    member(c, q, p->name);
    /* U8 block scales are E8M0 (MXFP4), except a ModelOpt 1-D U8 tensor beside a
     * weight_scale_2: TensorRT-LLM's CUTLASS-layout E4M3 bytes (NVFP4) */
    const bool cutlass = prod == FP4_QP_MODELOPT && s && g && is_dtype(s, "u8") && s->rank == 1;
    q->format = s && is_dtype(s, "f8_e4m3") ? FP4_QF_NVFP4
                : cutlass                   ? FP4_QF_NVFP4
                : s && is_e8m0(s)           ? FP4_QF_MXFP4
                : g                         ? FP4_QF_NVFP4
                                            : FP4_QF_MXFP4;
    q->block = q->format == FP4_QF_NVFP4 ? 16 : 32;
    if (s) {
        member(c, q, s->name);
        if (!(q->scale = strdup(s->name))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    if (g) {
        member(c, q, g->name);
        if (!(q->global = strdup(g->name))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    const fp4_tensor_desc *in = find_desc(c, nm[2], NULL);
    if (in) {
        member(c, q, in->name);
        if (!(q->input_scale = strdup(in->name)))
            return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    check_packed(q, p, s);
    if (prod == FP4_QP_COMPRESSED_TENSORS) check_weight_shape(c, q, p, module);
    check_scale_names(c, q, module);
    if (!s)
        problem(q, "%s missing (the block scales of %s)", short_role(nm[0]), p->name);
    else if (!is_dtype(s, "f8_e4m3") && !is_e8m0(s))
        problem(q, "%s is %s, expected f8_e4m3 (NVFP4) or u8/F8_E8M0 (MXFP4)",
                short_role(nm[0]), s->dtype);

    if (q->format == FP4_QF_NVFP4 && !g)
        problem(q, "%s missing (the per-tensor scale of NVFP4)", short_role(nm[1]));
    if (q->format == FP4_QF_MXFP4 && g)
        problem(q, "%s beside E8M0 block scales (MXFP4 has no per-tensor scale)",
                short_role(nm[1]));
    if (g && q->format == FP4_QF_NVFP4) check_scalar(q, g, short_role(nm[1]));
    if (in) check_scalar(q, in, short_role(nm[2]));
    set_layout(q);
    return FP4_OK;
}

/* gpt-oss: <p>_blocks U8 [..., G, 16] and <p>_scales U8 [..., G] (transformers' names), or
 * <p>.blocks and <p>.scales (openai/gpt-oss' own checkpoint, gpt_oss/torch/weights.py);
 * `sep` is "_" or ".". */
static fp4_status group_gptoss(scan_ctx *c, fp4_qset *qs, int *cap, const fp4_tensor_desc *b,
                               const char *prefix, const char *sep)
{
    char sn[FP4_NAME_MAX_Q];
    say(sn, sizeof sn, "%s%sscales", prefix, sep);
    const fp4_tensor_desc *s = find_desc(c, sn, NULL);
    fp4_qtensor *q;
    FP4_TRY(add_q(qs, cap, &q));
    q->producer = FP4_QP_GPT_OSS;
    q->format = FP4_QF_MXFP4;
    q->block = 32;
    q->name = strdup(prefix);
    q->packed = strdup(b->name);
    if (!q->name || !q->packed) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    member(c, q, b->name);
    if (s) {
        member(c, q, s->name);
        if (!(q->scale = strdup(s->name))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    char a[96], w[96];
    if (!is_dtype(b, "u8") || b->rank < 2 || b->dims[b->rank - 1] != 16) {
        dims_text(a, sizeof a, b->rank, b->dims);
        problem(q, "%s is %s %s, expected u8 [..., K/32, 16]", short_role(b->name), b->dtype, a);
    } else {
        q->rank = b->rank - 1;
        memcpy(q->dims, b->dims, sizeof q->dims);
        q->dims[q->rank - 1] = b->dims[b->rank - 2] * 32;
        q->dims[q->rank] = 0;
        q->rows = 1;
        for (int i = 0; i < q->rank - 1; i++) q->rows *= q->dims[i];
        q->scale_cols = b->dims[b->rank - 2];
    }
    if (!s) {
        problem(q, "%s missing (the E8M0 block scales of %s)", short_role(sn), b->name);
    } else if (!q->problem[0]) {
        bool ok = is_e8m0(s) && s->rank == b->rank - 1;
        for (int i = 0; ok && i < s->rank; i++) ok = s->dims[i] == b->dims[i];
        if (!ok) {
            dims_text(a, sizeof a, s->rank, s->dims);
            dims_text(w, sizeof w, b->rank - 1, b->dims);
            char why[200];
            say(why, sizeof why, "%s %s, expected u8 %s (one E8M0 per 32-element block)",
                     s->dtype, a, w);
            problem(q, "%s is %s", short_role(sn), why);
        }
    }
    set_layout(q);
    return FP4_OK;
}

/* ---- config files -------------------------------------------------------------------------- */

typedef struct decl {
    char file[32];          /* "hf_quant_config.json", "config.json" */
    int producer;           /* fp4_qproducer, 0 when not declared */
    int format;             /* fp4_qformat, 0 when any / not known */
    char what[96];          /* "modelopt NVFP4" */
    char **exclude;
    int nexclude;
    char exclude_key[32];   /* "exclude_modules", "ignore", "modules_to_not_convert" */
    char bad[200];          /* the file cannot be used: why */
    /* ModelOpt MIXED_PRECISION: quantized_layers {module: {quant_algo, group_size}}, each
     * module's own declaration (nlayers 0 when the file has none) */
    int nlayers;
    char **layer;           /* module names */
    char **layer_algo;      /* "NVFP4", "FP8", ... ("" when missing) */
    const cJSON **layer_group; /* its group_size as written (in doc), NULL when absent */
    cJSON *doc;             /* the parsed file, kept for the checks against the tensors */
    const cJSON *q;         /* its quantization object (in doc) */
    char qkey[24];          /* that object's key: "quantization", "quantization_config" */
} decl;

static void decl_free(decl *d)
{
    for (int i = 0; i < d->nexclude; i++) free(d->exclude[i]);
    free(d->exclude);
    for (int i = 0; i < d->nlayers; i++) {
        free(d->layer[i]);
        free(d->layer_algo[i]);
    }
    free(d->layer);
    free(d->layer_algo);
    free(d->layer_group);
    cJSON_Delete(d->doc);
    memset(d, 0, sizeof *d);
}

/* A sidecar file's bytes (hf_quant_config.json, config.json), NUL-terminated; *len its size.
 * NULL with why[0] == '\0' when the file is absent; NULL with `why` set when it is there but
 * cannot be taken: not a regular file (a FIFO is refused before any open, never waited on:
 * fp4_open_regular), outside the checkpoint's tree `root` without --allow-external (symlinks
 * resolved, as for shards), unreadable, or over 64 MiB (config files are small). */
#define SIDECAR_MAX (64u << 20)
static char *slurp_small(const char *path, const char *root, size_t *len, char *why, size_t cap)
{
    why[0] = '\0';
    struct stat sb;
    if (lstat(path, &sb) != 0) return NULL; /* absent */
    if (!fp4_source_allow_external() && fp4_source_outside_tree(path, root)) {
        say(why, cap, "outside the checkpoint's directory (a symlink; --allow-external reads it)");
        return NULL;
    }
    const char *reason = NULL;
    const int fd = fp4_open_regular(path, &sb, &reason);
    if (fd < 0) {
        say(why, cap, "%s", reason ? reason : "cannot be opened");
        return NULL;
    }
    if (sb.st_size > (off_t)SIDECAR_MAX) {
        close(fd);
        say(why, cap, "%lld bytes, over the 64 MiB a configuration file may have",
            (long long)sb.st_size);
        return NULL;
    }
    char *buf = malloc((size_t)sb.st_size + 1);
    if (!buf) {
        close(fd);
        say(why, cap, "out of memory");
        return NULL;
    }
    size_t n = 0;
    while (n < (size_t)sb.st_size) {
        const ssize_t r = read(fd, buf + n, (size_t)sb.st_size - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            say(why, cap, "%s", strerror(errno));
            break;
        }
        if (r == 0) {
            say(why, cap, "shorter than its size (%lld bytes): changed while read",
                (long long)sb.st_size);
            break;
        }
        n += (size_t)r;
    }
    close(fd);
    if (why[0]) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static int format_from_text(const char *s)
{
    if (!s) return 0;
    char up[64];
    size_t i = 0;
    for (; s[i] && i + 1 < sizeof up; i++) up[i] = (char)(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 32 : s[i]);
    up[i] = '\0';
    if (strstr(up, "NVFP4")) return FP4_QF_NVFP4;
    if (strstr(up, "MXFP4")) return FP4_QF_MXFP4;
    return 0;
}

/* The most patterns an exclude list may hold: each is matched against every tensor's name
 * (a 64 MiB config of 300,000 "re:" patterns took 18 s on a 6-tensor checkpoint). */
#define FP4_EXCLUDE_MAX 65536

static void decl_excludes(decl *d, const cJSON *arr, const char *key)
{
    if (!arr || cJSON_IsNull(arr)) return;
    if (!cJSON_IsArray(arr)) { /* a string would be one pattern to one reader, chars to another */
        say(d->bad, sizeof d->bad, "%s: %s is not a list of names", d->file, key);
        return;
    }
    int n = cJSON_GetArraySize(arr);
    if (n > FP4_EXCLUDE_MAX) {
        say(d->bad, sizeof d->bad, "%s: %s holds %d patterns, over the %d read", d->file, key,
            n, FP4_EXCLUDE_MAX);
        return;
    }
    d->exclude = calloc((size_t)n + 1, sizeof *d->exclude);
    if (!d->exclude) return;
    say(d->exclude_key, sizeof d->exclude_key, "%s", key);
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        if (!cJSON_IsString(it)) {
            say(d->bad, sizeof d->bad, "%s: %s[%d] is not a name (a string)", d->file, key,
                d->nexclude);
            return;
        }
        if (!strncmp(it->valuestring, "re:", 3)) { /* refused here, not matched as nothing */
            char why[120];
            fp4_re *re = fp4_re_compile(it->valuestring + 3, why, sizeof why);
            if (!re) {
                say(d->bad, sizeof d->bad, "%s: %s[%d]: the expression is refused: %s", d->file,
                    key, d->nexclude, why);
                return;
            }
            fp4_re_free(re);
        }
        if ((d->exclude[d->nexclude] = strdup(it->valuestring))) d->nexclude++;
    }
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ModelOpt's quantized_layers (a MIXED_PRECISION export: one quant_algo per module). */
static void decl_layers(decl *d, const cJSON *obj)
{
    if (!obj || cJSON_IsNull(obj)) return;
    if (!cJSON_IsObject(obj)) {
        say(d->bad, sizeof d->bad, "%s: quantized_layers is not an object", d->file);
        return;
    }
    int n = cJSON_GetArraySize(obj);
    d->layer = calloc((size_t)n + 1, sizeof *d->layer);
    d->layer_algo = calloc((size_t)n + 1, sizeof *d->layer_algo);
    d->layer_group = calloc((size_t)n + 1, sizeof *d->layer_group);
    if (!d->layer || !d->layer_algo || !d->layer_group) return;
    const cJSON *it;
    cJSON_ArrayForEach(it, obj) {
        if (!it->string) continue;
        const char *algo = jstr(it, "quant_algo");
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(it, "group_size");
        char *name = strdup(it->string), *a = strdup(algo ? algo : "");
        if (!name || !a) {
            free(name);
            free(a);
            return;
        }
        d->layer[d->nlayers] = name;
        d->layer_algo[d->nlayers] = a;
        d->layer_group[d->nlayers] = g && !cJSON_IsNull(g) ? g : NULL;
        d->nlayers++;
    }
}

/* hf_quant_config.json (ModelOpt). Returns false when the file is absent. */
static bool read_hf_quant(const char *dir, const char *root, decl *d)
{
    char path[4096];
    size_t len = 0;
    say(path, sizeof path, "%s/hf_quant_config.json", dir);
    char why[160];
    char *txt = slurp_small(path, root, &len, why, sizeof why);
    if (!txt && !why[0]) return false;
    say(d->file, sizeof d->file, "hf_quant_config.json");
    if (!txt) {
        say(d->bad, sizeof d->bad, "hf_quant_config.json: %s", why);
        return true;
    }
    cJSON *j = NULL;
    const fp4_status pst = fp4_json_parse_object("hf_quant_config.json", "JSON", txt, len, &j);
    free(txt);
    if (pst != FP4_OK) {
        say(d->bad, sizeof d->bad, "%s", fp4_last_error());
        fp4_error_clear();
        return true;
    }
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(j, "quantization");
    if (!cJSON_IsObject(q)) {
        say(d->bad, sizeof d->bad, "hf_quant_config.json: no \"quantization\" object");
        cJSON_Delete(j);
        return true;
    }
    const char *algo = jstr(q, "quant_algo");
    d->producer = FP4_QP_MODELOPT;
    d->format = format_from_text(algo);
    say(d->what, sizeof d->what, "modelopt %s", algo ? algo : "(no quant_algo)");
    decl_excludes(d, cJSON_GetObjectItemCaseSensitive(q, "exclude_modules"), "exclude_modules");
    decl_layers(d, cJSON_GetObjectItemCaseSensitive(q, "quantized_layers"));
    d->doc = j; /* the checks against the tensors read it (apply_decl) */
    d->q = q;
    say(d->qkey, sizeof d->qkey, "quantization");
    return true;
}

/* config.json's quantization_config. Returns false when absent or without one. */
static bool read_config_json(const char *dir, const char *root, decl *d)
{
    char path[4096];
    size_t len = 0;
    say(path, sizeof path, "%s/config.json", dir);
    char why[160];
    char *txt = slurp_small(path, root, &len, why, sizeof why);
    if (!txt && !why[0]) return false;
    if (!txt) {
        say(d->file, sizeof d->file, "config.json");
        say(d->bad, sizeof d->bad, "config.json: %s", why);
        return true;
    }
    cJSON *j = NULL;
    const fp4_status pst = fp4_json_parse_object("config.json", "JSON", txt, len, &j);
    free(txt);
    say(d->file, sizeof d->file, "config.json");
    if (pst != FP4_OK) {
        say(d->bad, sizeof d->bad, "%s", fp4_last_error());
        fp4_error_clear();
        return true;
    }
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(j, "quantization_config");
    if (!cJSON_IsObject(q)) {
        cJSON_Delete(j);
        return false;
    }
    const char *m = jstr(q, "quant_method");
    if (m && !strcmp(m, "modelopt")) {
        d->producer = FP4_QP_MODELOPT;
        d->format = format_from_text(jstr(q, "quant_algo"));
        say(d->what, sizeof d->what, "modelopt %s",
                 jstr(q, "quant_algo") ? jstr(q, "quant_algo") : "(no quant_algo)");
        decl_excludes(d, cJSON_GetObjectItemCaseSensitive(q, "ignore"), "ignore");
        decl_layers(d, cJSON_GetObjectItemCaseSensitive(q, "quantized_layers"));
    } else if (m && !strcmp(m, "compressed-tensors")) {
        d->producer = FP4_QP_COMPRESSED_TENSORS;
        const char *f = jstr(q, "format");
        d->format = format_from_text(f); /* "mixed-precision": any */
        say(d->what, sizeof d->what, "compressed-tensors %s", f ? f : "(no format)");
        decl_excludes(d, cJSON_GetObjectItemCaseSensitive(q, "ignore"), "ignore");
    } else if (m && !strcmp(m, "mxfp4")) {
        d->producer = FP4_QP_GPT_OSS;
        d->format = FP4_QF_MXFP4;
        say(d->what, sizeof d->what, "mxfp4 (gpt-oss)");
        decl_excludes(d, cJSON_GetObjectItemCaseSensitive(q, "modules_to_not_convert"),
                      "modules_to_not_convert");
    } else {
        /* another method (fp8, gptq, awq, ...): it declares no 4-bit float format */
        d->producer = -1;
        say(d->what, sizeof d->what, "quant_method %s", m ? m : "(none)");
    }
    d->doc = j; /* the checks against the tensors read it (apply_decl) */
    d->q = q;
    say(d->qkey, sizeof d->qkey, "quantization_config");
    return true;
}

/* Whether exclude pattern `pat` names module `mod` (exact, a glob, or compressed-tensors'
 * "re:" expression as Python's re.match: anchored at the start only, base/match.h). */
static bool exclude_matches(const char *pat, const char *mod)
{
    if (!strncmp(pat, "re:", 3)) return fp4_regex_match(pat + 3, mod);
    return !strcmp(pat, mod) || fnmatch(pat, mod, 0) == 0;
}

/* The JSON text of v for a message, cut with "..." to fit cap. */
static void json_text(const cJSON *v, char *buf, size_t cap)
{
    char *t = cJSON_PrintUnformatted(v);
    say(buf, cap, "%s", t ? t : "?");
    if (t && strlen(t) >= cap && cap > 4) memcpy(buf + cap - 4, "...", 4);
    cJSON_free(t);
}

/* Whether v is the JSON number `want` exactly (16 and 16.0 alike). */
static bool json_is_int(const cJSON *v, int want)
{
    return cJSON_IsNumber(v) && v->valuedouble == (double)want;
}

/* The first key of d's quantization object that contradicts q's tensors (SPEC §10 "The config
 * files"), as "FILE KEY is VALUE (WHY), the tensors are FOUND" in why; false when none. Read:
 * the declared algorithm (modelopt quant_algo; compressed-tensors format) must name a 4-bit
 * float format (or mixed precision); modelopt's top-level group_size must be q's block; when
 * the file declares one 4-bit float format, every config_groups.*.weights must be that
 * scheme: num_bits 4, type "float", group_size q's block, strategy "tensor_group" (NVFP4) or
 * "group" (MXFP4), and a group's own format (compressed-tensors) must name q's format. Keys
 * absent or null are not checked. */
static bool decl_contradicts(const decl *d, const fp4_qtensor *q, const char *found, char *why,
                             size_t cap)
{
    if (!d->q || (d->producer != FP4_QP_MODELOPT && d->producer != FP4_QP_COMPRESSED_TENSORS))
        return false;
    const bool mo = d->producer == FP4_QP_MODELOPT;
    const char *fmt = q->format == FP4_QF_NVFP4 ? "NVFP4" : "MXFP4";
    char v[64];
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(d->q, mo ? "quant_algo" : "format");
    bool mixed = false;
    if (a && !cJSON_IsNull(a)) {
        json_text(a, v, sizeof v);
        if (!cJSON_IsString(a)) {
            say(why, cap, "%s %s.%s is %s (not a name), the tensors are %s", d->file, d->qkey,
                a->string, v, found);
            return true;
        }
        mixed = !strcmp(a->valuestring, mo ? "MIXED_PRECISION" : "mixed-precision");
        if (!mixed && format_from_text(a->valuestring) == 0) {
            say(why, cap, "%s %s.%s is %s (not a 4-bit float format), the tensors are %s",
                d->file, d->qkey, a->string, v, found);
            return true;
        }
    }
    const cJSON *g = mo ? cJSON_GetObjectItemCaseSensitive(d->q, "group_size") : NULL;
    if (!mixed && g && !cJSON_IsNull(g) && !json_is_int(g, q->block)) {
        json_text(g, v, sizeof v);
        say(why, cap, "%s %s.group_size is %s (%s has one block scale per %d inputs), the "
                      "tensors are %s",
            d->file, d->qkey, v, fmt, q->block, found);
        return true;
    }
    if (!d->format) return false; /* mixed precision or none: groups are not matched to modules */
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(d->q, "config_groups");
    if (!groups || cJSON_IsNull(groups)) return false;
    if (!cJSON_IsObject(groups)) {
        say(why, cap, "%s %s.config_groups is not an object, the tensors are %s", d->file,
            d->qkey, found);
        return true;
    }
    const cJSON *grp;
    cJSON_ArrayForEach(grp, groups) {
        const cJSON *w = cJSON_IsObject(grp) ? cJSON_GetObjectItemCaseSensitive(grp, "weights")
                                             : grp;
        /* compressed-tensors writes the group's own format too */
        const cJSON *gf = cJSON_IsObject(grp) ? cJSON_GetObjectItemCaseSensitive(grp, "format")
                                              : NULL;
        if (gf && !cJSON_IsNull(gf) &&
            !(cJSON_IsString(gf) && format_from_text(gf->valuestring) == (int)q->format)) {
            json_text(gf, v, sizeof v);
            say(why, cap, "%s %s.config_groups.%s.format is %s (expected %s), the tensors are %s",
                d->file, d->qkey, grp->string ? grp->string : "?", v,
                q->format == FP4_QF_NVFP4 ? "\"nvfp4-pack-quantized\""
                                          : "\"mxfp4-pack-quantized\"",
                found);
            return true;
        }
        if (!w || cJSON_IsNull(w)) continue;
        const char *key = NULL, *want = NULL;
        const cJSON *x = NULL;
        if (!cJSON_IsObject(w)) {
            key = "", want = "not an object";
            x = w;
        }
        static const char *const keys[4] = {"num_bits", "type", "group_size", "strategy"};
        for (int k = 0; !key && k < 4; k++) {
            x = cJSON_GetObjectItemCaseSensitive(w, keys[k]);
            if (!x || cJSON_IsNull(x)) continue;
            const char *s = cJSON_IsString(x) ? x->valuestring : NULL;
            const char *st = q->format == FP4_QF_NVFP4 ? "tensor_group" : "group";
            bool ok = k == 0   ? json_is_int(x, 4)
                      : k == 1 ? s && !strcmp(s, "float")
                      : k == 2 ? json_is_int(x, q->block)
                               : s && !strcmp(s, st);
            if (ok) continue;
            key = keys[k];
            want = k == 0   ? "expected 4"
                   : k == 1 ? "expected \"float\""
                   : k == 2 ? (q->block == 16 ? "expected 16" : "expected 32")
                            : (q->format == FP4_QF_NVFP4 ? "expected \"tensor_group\""
                                                         : "expected \"group\"");
        }
        if (!key) continue;
        json_text(x, v, sizeof v);
        say(why, cap, "%s %s.config_groups.%s%s%s%s is %s (%s), the tensors are %s", d->file,
            d->qkey, grp->string ? grp->string : "?", cJSON_IsObject(grp) ? ".weights" : "",
            key[0] ? "." : "", key, v, want, found);
        return true;
    }
    return false;
}

static void apply_decl(fp4_qset *qs, const decl *d)
{
    for (int i = 0; i < qs->n; i++) {
        fp4_qtensor *q = &qs->t[i];
        if (q->problem[0]) continue;
        char found[160];
        say(found, sizeof found, "%s %s", fp4_qproducer_name(q->producer),
                 q->format == FP4_QF_NVFP4 ? "NVFP4" : "MXFP4");
        if (d->bad[0]) {
            problem(q, "%s", d->bad);
            continue;
        }
        if (d->producer != 0 && (d->producer != (int)q->producer ||
                                 (d->format && d->format != (int)q->format))) {
            char a[200];
            say(a, sizeof a, "%s declares %s", d->file, d->what);
            problem(q, "%s, the tensors are %s", a, found);
            continue;
        }
        char why[320];
        if (decl_contradicts(d, q, found, why, sizeof why)) {
            problem(q, "%s", why);
            continue;
        }
        char mod[FP4_NAME_MAX_Q];
        say(mod, sizeof mod, "%s", q->name);
        if (ends_with(mod, ".weight")) mod[strlen(mod) - 7] = '\0';
        bool excluded = false;
        for (int k = 0; k < d->nexclude && !excluded; k++) {
            if (exclude_matches(d->exclude[k], mod)) {
                char a[200];
                say(a, sizeof a, "%s %s", d->file, d->exclude_key);
                problem(q, "stored packed, but %s names %s", a, d->exclude[k]);
                excluded = true;
            }
        }
        if (excluded || d->nlayers == 0) continue;
        /* MIXED_PRECISION: the module's own quant_algo and group size */
        int k = 0;
        while (k < d->nlayers && strcmp(d->layer[k], mod) != 0) k++;
        if (k == d->nlayers) {
            problem(q, "stored packed, but %s quantized_layers (%s) does not list %s", d->file,
                    d->what, mod);
        } else if (format_from_text(d->layer_algo[k]) != (int)q->format) {
            problem(q, "%s quantized_layers declares %s %s, the tensors are %s", d->file, mod,
                    d->layer_algo[k][0] ? d->layer_algo[k] : "(no quant_algo)", found);
        } else if (d->layer_group[k] && !json_is_int(d->layer_group[k], q->block)) {
            const cJSON *g = d->layer_group[k];
            char v[64];
            json_text(g, v, sizeof v);
            const bool pos = cJSON_IsNumber(g) && g->valuedouble >= 1 &&
                             g->valuedouble <= 1e15 && floor(g->valuedouble) == g->valuedouble;
            problem(q, "%s quantized_layers declares %s group_size %s%s, the tensors have one "
                       "block scale per %d",
                    d->file, mod, v, pos ? "" : " (not a positive integer)", q->block);
        }
    }
}

/* The reverse: FP8 weights where d declares a 4-bit float format for their module (the
 * file's one format, or the module's quantized_layers entry) contradict it. */
static void apply_decl_fp8(fp4_qset *qs, const decl *d)
{
    if (d->bad[0] || d->producer <= 0) return;
    for (int i = 0; i < qs->nfp8; i++) {
        fp4_fp8 *v = &qs->fp8[i];
        if (v->problem[0]) continue;
        char found[96], mod[FP4_NAME_MAX_Q];
        say(found, sizeof found, "FP8 %s (%s)", v->dtype, v->scheme);
        say(mod, sizeof mod, "%s", v->weight);
        if (ends_with(mod, ".weight")) mod[strlen(mod) - 7] = '\0';
        if (d->format) {
            const char *key = d->producer == FP4_QP_MODELOPT             ? "quant_algo"
                              : d->producer == FP4_QP_COMPRESSED_TENSORS ? "format"
                                                                         : "quant_method";
            const cJSON *a = d->q ? cJSON_GetObjectItemCaseSensitive(d->q, key) : NULL;
            char t[64];
            if (a) json_text(a, t, sizeof t);
            else say(t, sizeof t, "%s", d->what);
            say(v->problem, sizeof v->problem, "%s %s.%s is %s (a 4-bit float format), the "
                                               "tensors are %s",
                d->file, d->qkey, key, t, found);
            continue;
        }
        for (int k = 0; k < d->nlayers; k++) {
            if (strcmp(d->layer[k], mod) != 0) continue;
            if (format_from_text(d->layer_algo[k]))
                say(v->problem, sizeof v->problem, "%s quantized_layers declares %s %s, the "
                                                   "tensors are %s",
                    d->file, mod, d->layer_algo[k], found);
            break;
        }
    }
}

static void source_dir(const char *file, char *dir, size_t cap)
{
    struct stat st;
    if (stat(file, &st) == 0 && S_ISDIR(st.st_mode)) {
        say(dir, cap, "%s", file);
        return;
    }
    const char *sl = strrchr(file, '/');
    if (!sl)
        say(dir, cap, ".");
    else if (sl == file)
        say(dir, cap, "/");
    else
        say(dir, cap, "%.*s", (int)(sl - file), file);
}

static fp4_status take_also(scan_ctx *c, fp4_qtensor *q, char **name);

/* A GGUF sidecar (per-tensor scale): F32 with one value; NULL when absent. Both spellings
 * beside one weight (blk.N.<t>.scale and blk.N.<t>.weight.scale): which one a loader applies
 * is not known, so neither is: both are members (the second in `also`, never analysed as a
 * weight) and q's problem names both. */
static fp4_status gguf_sidecar(scan_ctx *c, fp4_qtensor *q, const char *suffix, char **out)
{
    char nm[FP4_NAME_MAX_Q];
    const fp4_tensor_desc *d = NULL, *d2;
    if (ends_with(q->name, ".weight")) { /* blk.N.<t>.scale beside blk.N.<t>.weight */
        say(nm, sizeof nm, "%.*s%s", (int)(strlen(q->name) - 7), q->name, suffix);
        d = find_desc(c, nm, NULL);
    }
    say(nm, sizeof nm, "%s%s", q->name, suffix); /* blk.N.<t>.weight.scale */
    d2 = find_desc(c, nm, NULL);
    if (!d) d = d2, d2 = NULL;
    if (!d) return FP4_OK;
    member(c, q, d->name);
    if (!(*out = strdup(d->name))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    if (d2 && d2 != d) {
        char *second = strdup(d2->name);
        if (!second) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        problem(q, "two %s sidecars, %s and %s: which one a loader applies is ambiguous; "
                   "neither is read",
                suffix + 1, d->name, d2->name);
        FP4_TRY(take_also(c, q, &second));
        free(second);
    }
    check_scalar(q, d, suffix + 1);
    return FP4_OK;
}

/* GGUF: each tensor of ggml type mxfp4 or nvfp4 is one quantized tensor. */
static fp4_status scan_gguf(scan_ctx *c, fp4_qset *qs)
{
    int cap = 0;
    for (int i = 0; i < c->n; i++) {
        const fp4_tensor_desc *d = &c->all[i];
        const bool mx = is_dtype(d, "mxfp4"), nv = is_dtype(d, "nvfp4");
        if (!mx && !nv) continue;
        fp4_qtensor *q;
        FP4_TRY(add_q(qs, &cap, &q));
        q->producer = FP4_QP_GGUF;
        q->format = mx ? FP4_QF_MXFP4 : FP4_QF_NVFP4;
        q->scale_layout = FP4_QS_GGUF;
        q->block = mx ? 32 : 16;
        q->name = strdup(d->name);
        q->packed = strdup(d->name);
        q->scale = strdup(d->name);
        if (!q->name || !q->packed || !q->scale) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        member(c, q, d->name);
        q->rank = d->rank;
        memcpy(q->dims, d->dims, sizeof q->dims);
        q->rows = d->nelems >= 0 ? 1 : 0; /* an overflowing shape has a problem (below) */
        for (int r = 0; q->rows > 0 && r < q->rank - 1; r++) q->rows *= q->dims[r];
        /* the reader checked ne[0] is whole blocks (32 or 64 elements) */
        q->scale_cols = q->rank >= 1 ? q->dims[q->rank - 1] / q->block : 0;
        if (d->problem[0]) say(q->problem, sizeof q->problem, "%s", d->problem);
        if (nv) {
            FP4_TRY(gguf_sidecar(c, q, ".scale", &q->global));
            FP4_TRY(gguf_sidecar(c, q, ".input_scale", &q->input_scale));
        } else { /* a per-tensor scale beside MXFP4: ggml's dequantize_row_mxfp4 reads none */
            FP4_TRY(gguf_sidecar(c, q, ".scale", &q->global));
            if (q->global)
                problem(q, "%s: a per-tensor scale beside an MXFP4 tensor (ggml type 39 has "
                           "none: its E8M0 block scales are the whole scale; a .scale sidecar "
                           "is NVFP4's), not applied",
                        q->global);
        }
        set_layout(q);
    }
    return FP4_OK;
}

/* ---- one logical tensor stored twice ------------------------------------------------------- */

typedef struct q_ix {
    const char *name;
    int i;
} q_ix;

static int q_ix_cmp(const void *a, const void *b)
{
    const q_ix *x = a, *y = b;
    const int k = strcmp(x->name, y->name);
    return k ? k : (x->i > y->i) - (x->i < y->i);
}

static const char *upper_format(const fp4_qtensor *q)
{
    return q->format == FP4_QF_NVFP4 ? "NVFP4" : "MXFP4";
}

/* A member's name after its module's ("gate_up_proj_blocks", "weight_packed"): the problem
 * is shown after the logical tensor's full name, and a listing's problem holds 160 bytes. */
static const char *after_module(const char *logical, const char *member)
{
    const char *dot = strrchr(logical, '.');
    const size_t ml = dot ? (size_t)(dot - logical) + 1 : 0;
    return strncmp(member, logical, ml) == 0 ? member + ml : member;
}

static bool is_member(const fp4_qtensor *q, const char *name)
{
    const char *m;
    for (int k = 0; (m = fp4_quant_member(q, k)); k++)
        if (!strcmp(m, name)) return true;
    return false;
}

/* Take `*name` (owned) into q->also, counting its bytes, unless q has it already (a block scale
 * both spellings share): then it is freed. *name is NULL after. */
static fp4_status take_also(scan_ctx *c, fp4_qtensor *q, char **name)
{
    if (!*name) return FP4_OK;
    if (is_member(q, *name)) {
        free(*name);
        *name = NULL;
        return FP4_OK;
    }
    char **a = realloc(q->also, (size_t)(q->nalso + 1) * sizeof *a);
    if (!a) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    q->also = a;
    int idx;
    const fp4_tensor_desc *d = find_desc(c, *name, &idx);
    if (d) {
        c->used[idx] = true;
        q->stored_bytes += d->stored_bytes;
    }
    q->also[q->nalso++] = *name;
    *name = NULL;
    return FP4_OK;
}

/* One logical tensor stored twice (SPEC §10): two packed groups under one logical name
 * (gpt-oss' <p>_blocks beside <p>.blocks; ModelOpt's <m>.weight beside compressed-tensors'
 * <m>.weight_packed, which may share one weight_scale), or a group whose logical name is a
 * stored tensor that none of the groups claims (a bf16 <m>.weight beside <m>.weight_packed).
 * The first group in listing order stays, with the other spelling's tensors as its `also`
 * members and a problem naming both, whatever problem it had (this one is first to fix); the
 * other group leaves the set. Neither is read, so neither is analysed or audited. */
/* The strings one entry of a set owns (its names, its other spelling's tensors). */
static void qtensor_free(fp4_qtensor *q)
{
    free(q->name);
    free(q->packed);
    free(q->scale);
    free(q->global);
    free(q->input_scale);
    for (int k = 0; k < q->nalso; k++) free(q->also[k]);
    free(q->also);
}

static fp4_status merge_twins(scan_ctx *c, fp4_qset *qs)
{
    if (qs->n == 0) return FP4_OK;
    q_ix *ix = calloc((size_t)qs->n, sizeof *ix);
    bool *gone = calloc((size_t)qs->n, sizeof *gone);
    fp4_status st = FP4_OK;
    if (!ix || !gone) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (int i = 0; i < qs->n; i++) ix[i] = (q_ix){qs->t[i].name, i};
    qsort(ix, (size_t)qs->n, sizeof *ix, q_ix_cmp);
    for (int a = 0; st == FP4_OK && a < qs->n;) {
        int b = a + 1;
        while (b < qs->n && !strcmp(ix[b].name, ix[a].name)) b++;
        fp4_qtensor *k = &qs->t[ix[a].i]; /* the first in listing order */
        for (int j = a + 1; st == FP4_OK && j < b; j++) {
            fp4_qtensor *o = &qs->t[ix[j].i];
            if (j == a + 1)
                say(k->problem, sizeof k->problem,
                    "stored twice: %s (%s %s) and %s (%s %s) are one logical tensor; neither "
                    "is read",
                    after_module(k->name, k->packed), fp4_qproducer_name(k->producer),
                    upper_format(k), after_module(k->name, o->packed),
                    fp4_qproducer_name(o->producer), upper_format(o));
            char **m[4] = {&o->packed, &o->scale, &o->global, &o->input_scale};
            for (int r = 0; st == FP4_OK && r < 4; r++) st = take_also(c, k, m[r]);
            gone[ix[j].i] = true;
        }
        a = b;
    }
    /* a stored tensor under the logical name that no group claims */
    for (int i = 0; st == FP4_OK && i < qs->n; i++) {
        fp4_qtensor *q = &qs->t[i];
        int idx;
        const fp4_tensor_desc *d;
        if (gone[i] || is_member(q, q->name) || !(d = find_desc(c, q->name, &idx)) ||
            c->used[idx])
            continue;
        char dt[sizeof d->dtype];
        say(dt, sizeof dt, "%s", d->dtype);
        char *nm = strdup(d->name);
        if (!nm) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            break;
        }
        say(q->problem, sizeof q->problem,
            "stored twice: %s (%s %s) and the %s tensor %s are one logical tensor; neither is "
            "read",
            after_module(q->name, q->packed), fp4_qproducer_name(q->producer), upper_format(q),
            dt, after_module(q->name, q->name));
        st = take_also(c, q, &nm);
        free(nm);
    }
    /* the groups merged into another leave the set */
    int w = 0;
    for (int i = 0; i < qs->n; i++) {
        if (!gone[i]) {
            if (w < i) qs->t[w] = qs->t[i];
            w++;
            continue;
        }
        qtensor_free(&qs->t[i]);
    }
    qs->n = w;
out:
    free(ix);
    free(gone);
    return st;
}

fp4_status fp4_quant_scan(fp4_source *src, fp4_qset *out)
{
    memset(out, 0, sizeof *out);
    const char *fmt = fp4_source_format(src)->name;
    const bool gguf = strcmp(fmt, "gguf") == 0;
    if (strcmp(fmt, "safetensors") != 0 && !gguf) return FP4_OK;
    scan_ctx c = {0};
    c.src = src;
    fp4_status st = fp4_source_select(src, NULL, 0, &c.all, &c.n);
    if (st != FP4_OK) return st;
    int cap = 0;
    c.sorted = calloc((size_t)c.n + 1, sizeof *c.sorted);
    c.used = calloc((size_t)c.n + 1, sizeof *c.used);
    if (!c.sorted || !c.used) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (int i = 0; i < c.n; i++) c.sorted[i] = (name_ix){c.all[i].name, i};
    qsort(c.sorted, (size_t)c.n, sizeof *c.sorted, name_ix_cmp);
    if (gguf) { /* the ggml type says it all; no config files beside a .gguf */
        st = scan_gguf(&c, out);
        goto out;
    }

    for (int i = 0; st == FP4_OK && i < c.n; i++) {
        const fp4_tensor_desc *d = &c.all[i];
        char base[FP4_NAME_MAX_Q];
        if (strlen(d->name) >= sizeof base) continue;
        say(base, sizeof base, "%s", d->name);
        if (ends_with(d->name, ".weight_packed")) {
            base[strlen(base) - strlen(".weight_packed")] = '\0';
            st = group_linear(&c, out, &cap, d, FP4_QP_COMPRESSED_TENSORS, base);
        } else if (ends_with(d->name, ".weight") && is_dtype(d, "u8")) {
            base[strlen(base) - strlen(".weight")] = '\0';
            st = group_linear(&c, out, &cap, d, FP4_QP_MODELOPT, base);
        } else if (ends_with(d->name, "_blocks") && is_dtype(d, "u8")) {
            base[strlen(base) - strlen("_blocks")] = '\0';
            st = group_gptoss(&c, out, &cap, d, base, "_");
        } else if (ends_with(d->name, ".blocks") && is_dtype(d, "u8")) {
            base[strlen(base) - strlen(".blocks")] = '\0';
            st = group_gptoss(&c, out, &cap, d, base, ".");
        }
    }
    if (st == FP4_OK) st = merge_twins(&c, out); /* one logical tensor, one entry */
    /* block scales with no packed partner: an error, never a weight to analyse */
    for (int i = 0; st == FP4_OK && i < c.n; i++) {
        const fp4_tensor_desc *d = &c.all[i];
        if (c.used[i] || d->rank < 1) continue;
        bool e4 = ends_with(d->name, ".weight_scale") && (is_dtype(d, "f8_e4m3") || is_e8m0(d));
        bool gs = (ends_with(d->name, "_scales") || ends_with(d->name, ".scales")) && is_e8m0(d);
        if (!e4 && !gs) continue;
        fp4_qtensor *q;
        st = add_q(out, &cap, &q);
        if (st != FP4_OK) break;
        q->producer = gs ? FP4_QP_GPT_OSS : FP4_QP_MODELOPT;
        q->format = is_dtype(d, "f8_e4m3") ? FP4_QF_NVFP4 : FP4_QF_MXFP4;
        q->block = q->format == FP4_QF_NVFP4 ? 16 : 32;
        q->name = strdup(d->name);
        q->scale = strdup(d->name);
        q->packed = strdup(d->name);
        if (!q->name || !q->scale || !q->packed) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            break;
        }
        q->rank = d->rank;
        memcpy(q->dims, d->dims, sizeof q->dims);
        q->stored_bytes = d->stored_bytes;
        c.used[i] = true;
        problem(q, "block scales (%s) with no packed u8 codes beside them (%s)", d->dtype,
                gs ? "<p>_blocks or <p>.blocks" : "<m>.weight or <m>.weight_packed");
        set_layout(q);
    }
    if (st != FP4_OK) goto out;
    /* FP8 weights with their scale beside them: what they are, never analysed as 4-bit
     * candidates, their scale never as a weight */
    for (int i = 0; st == FP4_OK && i < c.n; i++) {
        const fp4_tensor_desc *d = &c.all[i];
        if (c.used[i] || d->rank < 2 || !ends_with(d->name, ".weight") ||
            !(is_dtype(d, "f8_e4m3") || is_dtype(d, "f8_e5m2")))
            continue;
        static const char *const sfx[2] = {"_scale", "_scale_inv"};
        const fp4_tensor_desc *sd = NULL;
        int si = -1;
        for (int k = 0; k < 2 && !sd; k++) {
            char sn[FP4_NAME_MAX_Q + 16];
            say(sn, sizeof sn, "%s%s", d->name, sfx[k]);
            sd = find_desc(&c, sn, &si);
            if (sd && (c.used[si] || !(is_dtype(sd, "f32") || is_dtype(sd, "bf16") ||
                                       is_dtype(sd, "f16"))))
                sd = NULL;
        }
        if (!sd) continue;
        fp4_fp8 *v = realloc(out->fp8, (size_t)(out->nfp8 + 1) * sizeof *v);
        if (!v) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            break;
        }
        out->fp8 = v;
        v = &out->fp8[out->nfp8];
        memset(v, 0, sizeof *v);
        v->weight = strdup(d->name);
        v->scale = strdup(sd->name);
        if (!v->weight || !v->scale) {
            free(v->weight);
            free(v->scale);
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            break;
        }
        out->nfp8++;
        say(v->dtype, sizeof v->dtype, "%s", is_dtype(d, "f8_e4m3") ? "E4M3" : "E5M2");
        int64_t sn = 1;
        for (int k = 0; k < sd->rank; k++) sn *= sd->dims[k];
        if (sn == 1) {
            say(v->scheme, sizeof v->scheme, "per-tensor scale");
        } else if (sd->rank == d->rank && sd->dims[0] == d->dims[0] && sn == d->dims[0]) {
            say(v->scheme, sizeof v->scheme, "per-channel scales");
        } else {
            char sh[48];
            dims_text(sh, sizeof sh, sd->rank, sd->dims);
            say(v->scheme, sizeof v->scheme, "block scales %s", sh);
        }
    }
    if (st != FP4_OK) goto out;

    /* the declarations: checked against the tensors, never trusted over them */
    char dir[4096];
    source_dir(fp4_source_file(src), dir, sizeof dir);
    decl hf = {0}, cj = {0};
    char *root = fp4_source_tree(fp4_source_file(src));
    bool has_hf = read_hf_quant(dir, root, &hf), has_cj = read_config_json(dir, root, &cj);
    free(root);
    if (has_hf) apply_decl(out, &hf);
    if (has_cj && cj.producer != -1) apply_decl(out, &cj);
    if (has_hf) apply_decl_fp8(out, &hf);
    if (has_cj) apply_decl_fp8(out, &cj);
    if (has_hf && has_cj && cj.producer > 0 && hf.producer != cj.producer && !hf.bad[0] &&
        !cj.bad[0]) {
        for (int i = 0; i < out->n; i++)
            problem(&out->t[i], "hf_quant_config.json declares %s, config.json %s", hf.what,
                    cj.what);
    }
    decl *ex = has_hf && !hf.bad[0] && hf.nexclude > 0   ? &hf
               : has_cj && !cj.bad[0] && cj.nexclude > 0 ? &cj
                                                           : NULL;
    if (ex) { /* handed over: the run honours it for the tensors in high precision */
        out->exclude = ex->exclude;
        out->nexclude = ex->nexclude;
        say(out->exclude_from, sizeof out->exclude_from, "%s %s", ex->file, ex->exclude_key);
        ex->exclude = NULL;
        ex->nexclude = 0;
    }
    {
        const int dp = has_hf && !hf.bad[0] && hf.producer > 0   ? hf.producer
                       : has_cj && !cj.bad[0] && cj.producer > 0 ? cj.producer
                                                                 : 0;
        const char *pn = dp > 0 ? fp4_qproducer_name((fp4_qproducer)dp) : NULL;
        say(out->fp8_producer, sizeof out->fp8_producer, "%s", pn ? pn : "");
    }
    if (has_hf && !hf.bad[0])
        say(out->declared, sizeof out->declared, "hf_quant_config.json: %s", hf.what);
    else if (has_cj && !cj.bad[0] && cj.producer > 0)
        say(out->declared, sizeof out->declared, "config.json: %s", cj.what);
    /* a declared 4-bit checkpoint whose tensors hold none is no error here: `ls` shows what
     * is stored */
    decl_free(&hf);
    decl_free(&cj);
out:
    if (st != FP4_OK) fp4_qset_free(out);
    free(c.sorted);
    free(c.used);
    fp4_tensor_desc_free_list(c.all, c.n);
    return st;
}

void fp4_qset_free(fp4_qset *qs)
{
    for (int i = 0; i < qs->n; i++) {
        qtensor_free(&qs->t[i]);
    }
    free(qs->t);
    for (int i = 0; i < qs->nfp8; i++) {
        free(qs->fp8[i].weight);
        free(qs->fp8[i].scale);
    }
    free(qs->fp8);
    for (int i = 0; i < qs->nexclude; i++) free(qs->exclude[i]);
    free(qs->exclude);
    memset(qs, 0, sizeof *qs);
}

int fp4_qset_find(const fp4_qset *qs, const char *name)
{
    for (int i = 0; i < qs->n; i++) {
        const char *m;
        for (int k = 0; (m = fp4_quant_member(&qs->t[i], k)); k++)
            if (!strcmp(m, name)) return i;
    }
    return -1;
}

const char *fp4_quant_member(const fp4_qtensor *q, int k)
{
    const char *const m[4] = {q->packed, q->scale, q->global, q->input_scale};
    for (int i = 0; i < 4; i++)
        if (m[i] && k-- == 0) return m[i];
    return k < q->nalso ? q->also[k] : NULL;
}

fp4_status fp4_quant_fold(const fp4_qset *qs, fp4_tensor_desc *list, int *n, int **qidx)
{
    int *ix = calloc((size_t)*n + 1, sizeof *ix);
    bool *seen = calloc((size_t)qs->n + 1, sizeof *seen);
    if (!ix || !seen) {
        free(ix);
        free(seen);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    int k = 0;
    for (int i = 0; i < *n; i++) {
        int q = qs->n ? fp4_qset_find(qs, list[i].name) : -1;
        for (int f = 0; q < 0 && f < qs->nfp8 && !list[i].problem[0]; f++)
            if (qs->fp8[f].problem[0] && !strcmp(qs->fp8[f].weight, list[i].name))
                say(list[i].problem, sizeof list[i].problem, "%s", qs->fp8[f].problem);
        if (q >= 0 && seen[q]) { /* a later member: folded into the first */
            fp4_tensor_desc_free(&list[i]);
            continue;
        }
        if (q >= 0) {
            const fp4_qtensor *t = &qs->t[q];
            fp4_tensor_desc *d = &list[i];
            char *nm = strdup(t->name);
            if (!nm) {
                free(ix);
                free(seen);
                return fp4_error(FP4_ERR_INTERNAL, "out of memory");
            }
            free(d->name);
            d->name = nm;
            d->rank = t->rank;
            memcpy(d->dims, t->dims, sizeof d->dims);
            d->nelems = 1; /* -1 on overflow (a hostile GGUF shape: the tensor has a problem) */
            for (int r = 0; r < t->rank && d->nelems >= 0; r++)
                d->nelems = t->dims[r] < 0 || (t->dims[r] > 0 && d->nelems > INT64_MAX / t->dims[r])
                                ? -1 : d->nelems * t->dims[r];
            say(d->dtype, sizeof d->dtype, "%s", fp4_qformat_name(t->format));
            d->byte_order[0] = '\0';
            d->stored = FP4_STORED_OTHER;
            d->numeric = false;
            d->exact_fp32 = false;
            d->logical_bytes = d->nelems < 0 ? -1 : d->nelems / 2;
            d->stored_bytes = t->stored_bytes;
            d->file_offset = -1;
            say(d->problem, sizeof d->problem, "%s", t->problem);
            seen[q] = true;
        }
        ix[k] = q;
        if (k < i) {
            list[k] = list[i];
            memset(&list[i], 0, sizeof list[i]);
        }
        k++;
    }
    *n = k;
    free(seen);
    *qidx = ix;
    return FP4_OK;
}

fp4_status fp4_quant_patterns(const fp4_qset *qs, const char *const *patterns, int n,
                              const char ***out)
{
    const char **p = calloc((size_t)n + 1, sizeof *p);
    if (!p) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    for (int i = 0; i < n; i++) {
        p[i] = patterns[i];
        const char *name = patterns[i];
        while (*name == '/') name++;
        for (int k = 0; k < qs->n; k++) {
            const fp4_qtensor *q = &qs->t[k];
            if (q->packed && strcmp(q->name, q->packed) != 0 && strcmp(q->name, name) == 0) {
                p[i] = q->packed;
                break;
            }
        }
    }
    *out = p;
    return FP4_OK;
}

int fp4_quant_fp8_role(const fp4_qset *qs, const char *name, char *buf, size_t n)
{
    for (int i = 0; i < qs->nfp8; i++) {
        const fp4_fp8 *v = &qs->fp8[i];
        const bool w = strcmp(name, v->weight) == 0;
        const char *p = qs->fp8_producer[0] ? qs->fp8_producer : "producer not declared";
        /* the module's activation scale: <m>.input_scale beside <m>.weight (as an NVFP4
         * module's is read into its logical tensor, it is never a stray scalar) */
        const size_t mlen = strlen(v->weight) >= 7 ? strlen(v->weight) - 7 : 0;
        if (!w && mlen > 0 && !strcmp(v->weight + mlen, ".weight") &&
            !strncmp(name, v->weight, mlen) && !strcmp(name + mlen, ".input_scale")) {
            if (buf)
                say(buf, n, "the input (activation) scale of the FP8 %s .weight beside it (%s)",
                    v->dtype, p);
            return 3;
        }
        if (!w && strcmp(name, v->scale) != 0) continue;
        const char *leaf = strrchr(v->scale, '.'); /* weight_scale, weight_scale_inv */
        if (buf && w)
            say(buf, n, "FP8 %s weight (%s; %s in %s): quantized already, in 8 bits, not a "
                        "4-bit format fp4diag measures",
                v->dtype, p, v->scheme, leaf ? leaf + 1 : v->scale);
        else if (buf)
            say(buf, n, "the scale of the FP8 %s .weight beside it (%s; %s)", v->dtype, p,
                v->scheme);
        return w ? 1 : 2;
    }
    if (buf && n) buf[0] = '\0';
    return 0;
}

void fp4_quant_skip_reason(const fp4_qtensor *q, char *buf, size_t n)
{
    say(buf, n, "already quantized (%s, %s): audit needs the source",
             q->format == FP4_QF_NVFP4 ? "NVFP4" : "MXFP4", fp4_qproducer_name(q->producer));
}

/* ---- decoding ------------------------------------------------------------------------------ */

int64_t fp4_quant_scale_index(const fp4_qtensor *q, int64_t r, int64_t c)
{
    if (q->scale_layout == FP4_QS_FLAT) return r * q->scale_cols + c;
    if (q->scale_layout == FP4_QS_GGUF) {
        const int64_t g = r * q->scale_cols + c;
        return q->format == FP4_QF_MXFP4 ? g * 17 : (g / 4) * 36 + g % 4;
    }
    /* cuBLAS block-scaling layout: 128x4 tiles of 512 bytes, inside a tile row r0 = a*32 + b
     * goes to byte b*16 + a*4 + c0 */
    int64_t nC = q->scale_cols / 4, r1 = r / 128, r0 = r % 128, c1 = c / 4, c0 = c % 4;
    return ((r1 * nC + c1) * 32 + (r0 % 32)) * 16 + (r0 / 32) * 4 + c0;
}

unsigned fp4_quant_code(const fp4_qtensor *q, const uint8_t *packed, int64_t r, int64_t k)
{
    const int64_t K = q->dims[q->rank - 1];
    if (q->scale_layout != FP4_QS_GGUF) return (packed[r * (K / 2) + k / 2] >> ((k & 1) * 4)) & 15u;
    const int64_t g = r * q->scale_cols + k / q->block; /* the block (sub-block) index */
    const int64_t j = k % q->block;
    if (q->format == FP4_QF_MXFP4) /* e, qs[16]: low nibble j, high nibble j + 16 */
        return (packed[g * 17 + 1 + j % 16] >> (j < 16 ? 0 : 4)) & 15u;
    /* d[4], qs[32]: sub-block s = g % 4 in qs[8s..8s+7], low nibble j, high nibble j + 8 */
    return (packed[(g / 4) * 36 + 4 + (g % 4) * 8 + j % 8] >> (j < 8 ? 0 : 4)) & 15u;
}

/* ggml_ue4m3_to_fp32 without its halving: 0x00 and 0x7F are 0, the exponent field masked
 * (bit 7 not read), subnormals m * 2^-9. */
static float ue4m3_value(uint8_t x)
{
    if (x == 0 || x == 0x7F) return 0.0f;
    const int e = (x >> 3) & 0xF, m = x & 7;
    return e == 0 ? ldexpf((float)m, -9) : ldexpf(1.0f + (float)m / 8.0f, e - 7);
}

/* ggml_e8m0_to_fp32_half: 2^(e - 128) as bits (subnormal for e < 2; e = 255 is 2^127). */
static float e8m0_half(uint8_t e)
{
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* ggml's doubled E2M1 values (kvalues_mxfp4, int8: code 8 is +0, not -0). */
static float kvalue(unsigned code)
{
    static const float kv[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
    return kv[code & 15u];
}

float fp4_quant_block_scale(const fp4_qtensor *q, uint8_t b, float global)
{
    if (q->scale_layout == FP4_QS_GGUF && q->format == FP4_QF_NVFP4)
        return ue4m3_value(b) * global;
    if (q->format == FP4_QF_NVFP4) {
        float e = fp4_f8e4m3_to_f32(b);
        /* the producers' own fp32 operation: ModelOpt multiplies by weight_scale_2,
         * compressed-tensors divides by weight_global_scale */
        return q->producer == FP4_QP_COMPRESSED_TENSORS ? e / global : e * global;
    }
    /* 2^(b-127) as an fp32 power (torch.ldexp = x * pow(2, e)): 2^-127 is a subnormal,
     * exact; 2^128 overflows to +inf */
    return b == 255 ? INFINITY : ldexpf(1.0f, (int)b - 127);
}

/* ggml's dequantize_row_mxfp4 / _nvfp4 (the products kv * half-scale are exact), then the
 * sidecar's ggml_mul. */
static void decode_gguf(const fp4_qtensor *q, const uint8_t *blocks, float global, int64_t row0,
                        int64_t nrows, float *out)
{
    const int64_t K = q->dims[q->rank - 1];
    if (q->format == FP4_QF_MXFP4) { /* 17 bytes: e, qs[16]; element j low, j + 16 high */
        const int64_t nb = K / 32;
        for (int64_t r = 0; r < nrows; r++) {
            const uint8_t *blk = blocks + (row0 + r) * nb * 17;
            float *o = out + r * K;
            for (int64_t b = 0; b < nb; b++, blk += 17, o += 32) {
                const float d = e8m0_half(blk[0]);
                for (int j = 0; j < 16; j++) {
                    o[j] = kvalue(blk[1 + j] & 15u) * d;
                    o[j + 16] = kvalue(blk[1 + j] >> 4) * d;
                }
            }
        }
        return;
    }
    /* NVFP4, 36 bytes: d[4], qs[32]; sub-block s in qs[8s..8s+7], element j low, j + 8 high;
     * the product kv * d is exact, then the sidecar's multiplication rounds once */
    const int64_t nb = K / 64;
    for (int64_t r = 0; r < nrows; r++) {
        const uint8_t *blk = blocks + (row0 + r) * nb * 36;
        float *o = out + r * K;
        for (int64_t b = 0; b < nb; b++, blk += 36) {
            for (int s = 0; s < 4; s++, o += 16) {
                const float d = ue4m3_value(blk[s]) * 0.5f;
                const uint8_t *qs = blk + 4 + 8 * s;
                for (int j = 0; j < 8; j++) {
                    o[j] = (kvalue(qs[j] & 15u) * d) * global;
                    o[j + 8] = (kvalue(qs[j] >> 4) * d) * global;
                }
            }
        }
    }
}

void fp4_quant_decode(const fp4_qtensor *q, const uint8_t *packed, const uint8_t *scales,
                      float global, int64_t row0, int64_t nrows, float *out)
{
    if (q->scale_layout == FP4_QS_GGUF) {
        decode_gguf(q, packed, global, row0, nrows, out);
        return;
    }
    const int64_t K = q->dims[q->rank - 1], nb = K / q->block;
    /* ModelOpt's NVFP4 dequantize looks the codes up in a 16-entry table whose entry 8 is +0
     * (nvfp4_tensor.py e2m1_values); every other producer's decoder (compressed-tensors,
     * ModelOpt MXFP4, gpt-oss) applies the sign to 0 and gives -0 */
    float lut[16];
    for (unsigned c = 0; c < 16; c++) lut[c] = fp4_e2m1_value(c);
    if (q->format == FP4_QF_NVFP4 && q->producer == FP4_QP_MODELOPT) lut[8] = 0.0f;
    for (int64_t r = 0; r < nrows; r++) {
        const uint8_t *pr = packed + (row0 + r) * (K / 2);
        float *o = out + r * K;
        for (int64_t b = 0; b < nb; b++) {
            uint8_t sb = scales[fp4_quant_scale_index(q, row0 + r, b)];
            float s = fp4_quant_block_scale(q, sb, global);
            for (int64_t j = 0; j < q->block; j += 2) {
                uint8_t byte = pr[(b * q->block + j) / 2];
                o[b * q->block + j] = lut[byte & 15u] * s;
                o[b * q->block + j + 1] = lut[byte >> 4] * s;
            }
        }
    }
}

void fp4_quant_qdec(const fp4_qtensor *q, fp4c_qdec *d)
{
    memset(d, 0, sizeof *d);
    d->block = q->block;
    d->K = q->dims[q->rank - 1];
    d->scale_cols = q->scale_cols;
    if (q->scale_layout == FP4_QS_GGUF) {
        const bool mx = q->format == FP4_QF_MXFP4;
        d->layout = mx ? FP4C_QL_GGUF_MX : FP4C_QL_GGUF_NV;
        d->op = mx ? FP4C_QOP_NONE : FP4C_QOP_POST;
        for (unsigned c = 0; c < 16; c++) d->value[c] = kvalue(c);
        for (int b = 0; b < 256; b++) /* decode_gguf's d: both products exact */
            d->scale[b] = mx ? e8m0_half((uint8_t)b) : ue4m3_value((uint8_t)b) * 0.5f;
        return;
    }
    d->layout = q->scale_layout == FP4_QS_SWIZZLED ? FP4C_QL_SWZ : FP4C_QL_FLAT;
    for (unsigned c = 0; c < 16; c++) d->value[c] = fp4_e2m1_value(c);
    if (q->format == FP4_QF_NVFP4) {
        d->op = q->producer == FP4_QP_COMPRESSED_TENSORS ? FP4C_QOP_DIV : FP4C_QOP_MUL;
        if (q->producer == FP4_QP_MODELOPT) d->value[8] = 0.0f; /* as fp4_quant_decode */
        for (int b = 0; b < 256; b++) d->scale[b] = fp4_f8e4m3_to_f32((uint8_t)b);
    } else {
        d->op = FP4C_QOP_NONE;
        for (int b = 0; b < 256; b++) d->scale[b] = fp4_quant_block_scale(q, (uint8_t)b, 1.0f);
    }
}

fp4_status fp4_quant_bytes(fp4_source *src, const fp4_qtensor *q, const uint8_t **packed,
                           const uint8_t **scales, float *global_out)
{
    int64_t np, ns;
    return fp4_quant_bytes_n(src, q, packed, &np, scales, &ns, global_out);
}

fp4_status fp4_quant_bytes_n(fp4_source *src, const fp4_qtensor *q, const uint8_t **packed,
                             int64_t *packed_bytes, const uint8_t **scales,
                             int64_t *scale_bytes, float *global_out)
{
    const char *file = fp4_source_file(src);
    if (q->problem[0]) return fp4_error(FP4_ERR_INPUT, "%s: %s: %s", file, q->name, q->problem);
    fp4_tensor_desc p = {0}, s = {0}, g = {0};
    fp4_status st = fp4_source_describe(src, q->packed, &p);
    if (st == FP4_OK) st = fp4_source_describe(src, q->scale, &s);
    if (st == FP4_OK && q->global) st = fp4_source_describe(src, q->global, &g);
    if (st != FP4_OK) goto out;
    const uint8_t *pb = fp4_source_bytes(src, &p), *sb = fp4_source_bytes(src, &s);
    const uint8_t *gb = q->global ? fp4_source_bytes(src, &g) : NULL;
    int64_t K = q->dims[q->rank - 1];
    int64_t want_s = q->scale_1d                         ? s.dims[0]
                     : q->scale_layout == FP4_QS_SWIZZLED ? s.dims[0] * s.dims[1]
                                                          : q->rows * q->scale_cols;
    int64_t want_p = q->rows * (K / 2);
    if (q->scale_layout == FP4_QS_GGUF) /* one tensor of 17-byte / 36-byte blocks */
        want_p = want_s = q->format == FP4_QF_MXFP4 ? q->rows * (K / 32) * 17
                                                    : q->rows * (K / 64) * 36;
    if (!pb || !sb || (q->global && !gb) || p.stored_bytes != want_p ||
        s.stored_bytes != want_s || (q->global && g.stored_bytes != 4)) {
        st = fp4_error(FP4_ERR_INPUT, "%s: %s: the packed codes or scales cannot be read", file,
                       q->name);
        goto out;
    }
    float global = 1.0f;
    /* safetensors and GGUF (as read) are little-endian, as every host we build on */
    if (gb && !map_copy_guarded(&global, gb, 4)) {
        st = fp4_error(FP4_ERR_INPUT, "%s: %s: %s: the file shrank while it was read "
                       "(truncated)", file, q->name, q->global);
        goto out;
    }
    if (q->format == FP4_QF_NVFP4 && !(global > 0.0f && isfinite(global))) {
        st = fp4_error(FP4_ERR_INPUT, "%s: %s: %s is %g, expected finite and > 0", file,
                       q->name, q->global, (double)global);
        goto out;
    }
    *packed = pb;
    *scales = sb;
    *packed_bytes = want_p;
    *scale_bytes = want_s;
    *global_out = global;
out:
    fp4_tensor_desc_free(&p);
    fp4_tensor_desc_free(&s);
    fp4_tensor_desc_free(&g);
    return st;
}

fp4_status fp4_quant_input_scale(fp4_source *src, const fp4_qtensor *q, float *out)
{
    *out = NAN;
    if (!q->input_scale) return FP4_OK;
    const char *file = fp4_source_file(src);
    fp4_tensor_desc g = {0};
    fp4_status st = fp4_source_describe(src, q->input_scale, &g);
    if (st != FP4_OK) return st;
    const uint8_t *gb = fp4_source_bytes(src, &g);
    float v = NAN;
    if (!gb || g.stored_bytes != 4) {
        st = fp4_error(FP4_ERR_INPUT, "%s: %s: %s cannot be read", file, q->name,
                       q->input_scale);
    } else if (!map_copy_guarded(&v, gb, 4)) { /* little-endian, as fp4_quant_bytes_n's */
        st = fp4_error(FP4_ERR_INPUT, "%s: %s: %s: the file shrank while it was read "
                       "(truncated)", file, q->name, q->input_scale);
    } else {
        if (!(v > 0.0f && isfinite(v)))
            st = fp4_error(FP4_ERR_INPUT,
                           "%s: %s: %s is %g, expected finite and > 0 (the activation scale: "
                           "a broken export)",
                           file, q->name, q->input_scale, (double)v);
        else
            *out = v;
    }
    fp4_tensor_desc_free(&g);
    return st;
}

static bool summarize_bytes(const fp4_qtensor *q, const uint8_t *pb, const uint8_t *sb,
                            float global, fp4_qsummary *out, bool guarded);

fp4_status fp4_quant_summarize(fp4_source *src, const fp4_qtensor *q, fp4_qsummary *out)
{
    memset(out, 0, sizeof *out);
    const uint8_t *pb = NULL, *sb = NULL;
    float global = 1.0f;
    FP4_TRY(fp4_quant_bytes(src, q, &pb, &sb, &global));
    if (!summarize_bytes(q, pb, sb, global, out, true))
        return fp4_error(FP4_ERR_INPUT, "%s: %s: the file shrank while it was read (truncated)",
                         fp4_source_file(src), q->name);
    return FP4_OK;
}

/* The summary's byte counts in pieces (io/pario.h): piece k < ncode counts code bytes, the
 * others block-scale bytes, each into its own 256 counters (count + 256 k); the sums over the
 * pieces are the same integers whatever thread counted which piece. Flat code bytes and flat
 * scales are cut into byte ranges, ggml's blocks into block ranges, swizzled scales into row
 * ranges (their padding never read). */
enum { QSUM_PIECE = 1 << 20 }; /* bytes (about) per piece */
typedef struct qsum_job {
    const fp4_qtensor *q;
    const uint8_t *pb, *sb;
    int64_t ncode, code_units, code_step; /* pieces, units (bytes or ggml blocks), per piece */
    int64_t scale_units, scale_step;      /* bytes (flat) or rows (other layouts) */
    int64_t *count;                       /* (pieces) x 256 */
    bool guarded; /* each piece under its own fp4_mapguard_call (it may run on a pool thread) */
    int faulted;  /* a guarded piece touched a page the file no longer holds */
} qsum_job;

/* c[b] += occurrences of byte b in p[0..n): four interleaved counters (repeated bytes do not
 * serialise on one counter), n < 2^32. */
static void count_bytes(const uint8_t *p, int64_t n, int64_t *c)
{
    uint32_t h[4][256];
    memset(h, 0, sizeof h);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        h[0][p[i]]++;
        h[1][p[i + 1]]++;
        h[2][p[i + 2]]++;
        h[3][p[i + 3]]++;
    }
    for (; i < n; i++) h[0][p[i]]++;
    for (int v = 0; v < 256; v++) c[v] += (int64_t)h[0][v] + h[1][v] + h[2][v] + h[3][v];
}

static void qsum_piece_run(const qsum_job *j, int64_t k)
{
    const fp4_qtensor *q = j->q;
    int64_t *c = j->count + 256 * k;
    const bool nv = q->format == FP4_QF_NVFP4;
    if (k < j->ncode) {
        const int64_t u0 = k * j->code_step;
        const int64_t u1 = u0 + j->code_step < j->code_units ? u0 + j->code_step : j->code_units;
        if (q->scale_layout != FP4_QS_GGUF) {
            count_bytes(j->pb + u0, u1 - u0, c);
        } else { /* ggml blocks: MXFP4 e + qs[16] (17 bytes), NVFP4 d[4] + qs[32] (36) */
            const int64_t bytes = nv ? 36 : 17, head = nv ? 4 : 1;
            for (int64_t g = u0; g < u1; g++)
                for (int64_t i = head; i < bytes; i++) c[j->pb[g * bytes + i]]++;
        }
        return;
    }
    const int64_t u0 = (k - j->ncode) * j->scale_step;
    const int64_t u1 = u0 + j->scale_step < j->scale_units ? u0 + j->scale_step : j->scale_units;
    if (q->scale_layout == FP4_QS_FLAT) {
        count_bytes(j->sb + u0, u1 - u0, c);
    } else { /* swizzled (padding left out) or inside ggml's blocks */
        const int64_t nb = q->dims[q->rank - 1] / q->block;
        for (int64_t r = u0; r < u1; r++)
            for (int64_t b = 0; b < nb; b++) c[j->sb[fp4_quant_scale_index(q, r, b)]]++;
    }
}

typedef struct qsum_piece_args {
    const qsum_job *j;
    int64_t k;
} qsum_piece_args;

static void qsum_piece_guarded(void *ctx)
{
    const qsum_piece_args *a = ctx;
    qsum_piece_run(a->j, a->k);
}

static void qsum_piece(void *ctx, int64_t k)
{
    qsum_job *j = ctx;
    qsum_piece_args a = {j, k};
    if (!j->guarded) qsum_piece_run(j, k);
    else if (!fp4_mapguard_call(qsum_piece_guarded, &a))
        __atomic_store_n(&j->faulted, 1, __ATOMIC_RELAXED);
}

/* fp4_quant_summarize_bytes; guarded: every piece read under io/mapguard.h, false (and *out
 * zeroed) when one touched a page the file no longer holds. */
static bool summarize_bytes(const fp4_qtensor *q, const uint8_t *pb, const uint8_t *sb,
                            float global, fp4_qsummary *out, bool guarded)
{
    memset(out, 0, sizeof *out);
    snprintf(out->format, sizeof out->format, "%s", fp4_qformat_name(q->format));
    snprintf(out->producer, sizeof out->producer, "%s", fp4_qproducer_name(q->producer));
    snprintf(out->layout, sizeof out->layout, "%s", q->layout);
    out->block = q->block;
    out->tensor_scale = q->global ? (double)global : NAN;
    out->scale_min = out->scale_max = NAN;
    const bool nv = q->format == FP4_QF_NVFP4, gguf = q->scale_layout == FP4_QS_GGUF;
    const int64_t K = q->dims[q->rank - 1], nb = K / q->block;
    /* Both from byte counts: every nibble of the code bytes is one element's code (flat
     * pairs, gpt-oss blocks, ggml's qs[]), and a block scale depends on its byte alone. */
    qsum_job j = {.q = q, .pb = pb, .sb = sb, .guarded = guarded};
    const int64_t gbytes = nv ? 36 : 17; /* one ggml block */
    j.code_units = gguf ? q->rows * (K / (nv ? 64 : 32)) : q->rows * (K / 2);
    j.code_step = gguf ? QSUM_PIECE / gbytes : QSUM_PIECE;
    j.scale_units = q->scale_layout == FP4_QS_FLAT ? q->rows * nb : q->rows;
    j.scale_step = q->scale_layout == FP4_QS_FLAT ? QSUM_PIECE
                   : nb > 0 && nb < QSUM_PIECE ? QSUM_PIECE / nb : 1;
    j.ncode = (j.code_units + j.code_step - 1) / j.code_step;
    const int64_t npieces = j.ncode + (j.scale_units + j.scale_step - 1) / j.scale_step;
    const int64_t bytes = gguf ? j.code_units * gbytes : j.code_units + q->rows * nb;
    int64_t cb[256] = {0}, sc[256] = {0};
    j.count = npieces > 0 ? calloc((size_t)npieces * 256, sizeof *j.count) : NULL;
    if (j.count) {
        fp4_pario_for(qsum_piece, &j, npieces, fp4_pario_threads(bytes));
        for (int64_t k = 0; k < npieces; k++)
            for (int v = 0; v < 256; v++) (k < j.ncode ? cb : sc)[v] += j.count[256 * k + v];
        free(j.count);
    } else { /* out of memory (or nothing to count): one piece of each on this thread */
        int64_t two[512] = {0};
        j.count = two;
        j.code_step = j.code_units > 0 ? j.code_units : 1;
        j.ncode = 1;
        j.scale_step = j.scale_units > 0 ? j.scale_units : 1;
        qsum_piece(&j, 0);
        qsum_piece(&j, 1);
        memcpy(cb, two, sizeof cb);
        memcpy(sc, two + 256, sizeof sc);
    }
    if (__atomic_load_n(&j.faulted, __ATOMIC_RELAXED)) {
        memset(out, 0, sizeof *out);
        return false;
    }
    for (int v = 0; v < 256; v++) {
        out->histogram[v & 15] += cb[v];
        out->histogram[v >> 4] += cb[v];
        if (sc[v] == 0) continue;
        const uint8_t byte = (uint8_t)v;
        const float s = fp4_quant_block_scale(q, byte, global);
        out->scale_bytes += sc[v];
        if (nv && !gguf && (byte & 0x7F) == 0x7F) out->e4m3_nan += sc[v];
        if (!nv && byte == 0xFF) out->e8m0_ff += sc[v];
        if (!isfinite(s)) out->scale_nonfinite += sc[v];
        else if (s == 0.0f) out->scale_zero += sc[v];
        else {
            if (!(s >= out->scale_min)) out->scale_min = s; /* NaN at first: taken */
            if (!(s <= out->scale_max)) out->scale_max = s;
        }
    }
    return true;
}

void fp4_quant_summarize_bytes(const fp4_qtensor *q, const uint8_t *pb, const uint8_t *sb,
                               float global, fp4_qsummary *out)
{
    summarize_bytes(q, pb, sb, global, out, false);
}

/* fp4_quant_decode under io/mapguard.h (its bytes are the file's mapping). */
typedef struct quant_decode_args {
    const fp4_qtensor *q;
    const uint8_t *packed, *scales;
    float global;
    int64_t row0, nrows;
    float *out;
} quant_decode_args;

static void quant_decode_run(void *ctx)
{
    const quant_decode_args *a = ctx;
    fp4_quant_decode(a->q, a->packed, a->scales, a->global, a->row0, a->nrows, a->out);
}

fp4_status fp4_quant_read(fp4_source *src, const fp4_qtensor *q, int64_t row0, int64_t nrows,
                          float *out)
{
    const char *file = fp4_source_file(src);
    if (q->problem[0]) return fp4_error(FP4_ERR_INPUT, "%s: %s: %s", file, q->name, q->problem);
    if (row0 < 0 || nrows < 0 || row0 + nrows > q->rows)
        return fp4_error(FP4_ERR_USAGE, "%s: %s: rows %lld..%lld outside 0..%lld", file, q->name,
                         (long long)row0, (long long)(row0 + nrows), (long long)q->rows);
    const uint8_t *pb = NULL, *sb = NULL;
    float global = 1.0f;
    FP4_TRY(fp4_quant_bytes(src, q, &pb, &sb, &global));
    quant_decode_args a = {q, pb, sb, global, row0, nrows, out};
    if (!fp4_mapguard_call(quant_decode_run, &a)) /* out's rows are then not all decoded */
        return fp4_error(FP4_ERR_INPUT, "%s: %s: the file shrank while it was read (truncated)",
                         file, q->name);
    return FP4_OK;
}
