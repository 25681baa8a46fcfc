/* quant.c — the scalar reference quantizer (SPEC §2–§4): config names, checks and padding, the
 * per-unit engine (rotate, scale, round, decode, per-chunk fp64 sums) shared with the CPU
 * backend, and fp4_quantize_rows / fp4_amax_rows on top of it. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend_impl.h"
#include "common.h"
#include "metrics.h"
#include "quant.h"
#include "rht.h"

/* grouped RTNE kernel: blocks per group (lanes), largest block it takes */
#define GRP 8
_Static_assert(GRP * 255 < 65536, "onehot_flush sums GRP byte counters in 16-bit fields");
#define GRP_MAX_BLOCK 1024

/* ---- names ------------------------------------------------------------------------------- */
static const char *const scale_names[FP4_SCALE_COUNT] = {"fp32", "nvfp4", "mxfp4", "tensor"};

const char *fp4_scale_name(fp4_scale_mode m)
{
    return (int)m >= 0 && m < FP4_SCALE_COUNT ? scale_names[m] : "?";
}
const char *fp4_rounding_name(fp4_rounding r) { return r == FP4_ROUND_SR ? "sr" : "rtne"; }
const char *fp4_mx_rule_name(fp4_mx_rule r) { return r == FP4_MX_RCEIL ? "rceil" : "floor"; }

fp4_status fp4_scale_parse(const char *s, fp4_scale_mode *out)
{
    for (int i = 0; s && i < FP4_SCALE_COUNT; i++)
        if (strcmp(s, scale_names[i]) == 0) {
            *out = (fp4_scale_mode)i;
            return FP4_OK;
        }
    return fp4_error(FP4_ERR_USAGE, "unknown scale mode '%s' (known: fp32, nvfp4, mxfp4, tensor)",
                     s ? s : "");
}

fp4_status fp4_rounding_parse(const char *s, fp4_rounding *out)
{
    if (s && strcmp(s, "rtne") == 0) *out = FP4_ROUND_RTNE;
    else if (s && strcmp(s, "sr") == 0) *out = FP4_ROUND_SR;
    else return fp4_error(FP4_ERR_USAGE, "unknown rounding '%s' (known: rtne, sr)", s ? s : "");
    return FP4_OK;
}

fp4_status fp4_mx_rule_parse(const char *s, fp4_mx_rule *out)
{
    if (s && strcmp(s, "floor") == 0) *out = FP4_MX_FLOOR;
    else if (s && strcmp(s, "rceil") == 0) *out = FP4_MX_RCEIL;
    else return fp4_error(FP4_ERR_USAGE, "unknown mx rule '%s' (known: floor, rceil)", s ? s : "");
    return FP4_OK;
}

void fp4_qconfig_default(fp4_qconfig *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->format = (fp4_format){FP4_FMT_E2M1, 0};
    cfg->scale = FP4_SCALE_FP32;
    cfg->block = 16;
    cfg->rounding = FP4_ROUND_RTNE;
    cfg->sr_bits = 24;
    cfg->seed = 0;
    cfg->stream = 0;
    cfg->mx_rule = FP4_MX_FLOOR;
    cfg->weight_2d = false;
    cfg->rht = NULL;
}

static int is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

fp4_status fp4_qconfig_check(fp4_qconfig *cfg)
{
    const fp4_format_traits *t = fp4_format_traits_of(cfg->format.id);
    if (!t) return fp4_error(FP4_ERR_USAGE, "invalid format id %d", (int)cfg->format.id);
    if (cfg->format.max &&
        (cfg->format.id != FP4_FMT_E2M1 || cfg->format.max < 2 || cfg->format.max > 4))
        return fp4_error(FP4_ERR_USAGE, "format cap max=%d: only e2m1:max=2|3|4", cfg->format.max);
    switch (cfg->scale) {
    case FP4_SCALE_FP32:
        if (!is_pow2(cfg->block) || cfg->block < 2 || cfg->block > (1 << 20))
            return fp4_error(FP4_ERR_USAGE, "block %d: must be a power of two in 2..2^20",
                             cfg->block);
        break;
    case FP4_SCALE_NVFP4: cfg->block = 16; break;
    case FP4_SCALE_MXFP4: cfg->block = 32; break;
    case FP4_SCALE_TENSOR: cfg->block = 16; break;
    default: return fp4_error(FP4_ERR_USAGE, "invalid scale mode %d", (int)cfg->scale);
    }
    if (cfg->weight_2d && cfg->scale != FP4_SCALE_NVFP4)
        return fp4_error(FP4_ERR_USAGE, "--weight-2d needs --scale nvfp4");
    if (cfg->rounding != FP4_ROUND_RTNE && cfg->rounding != FP4_ROUND_SR)
        return fp4_error(FP4_ERR_USAGE, "invalid rounding %d", (int)cfg->rounding);
    if (cfg->sr_bits != 24 && cfg->sr_bits != 8)
        return fp4_error(FP4_ERR_USAGE, "sr bits %d: must be 24 or 8", cfg->sr_bits);
    if (cfg->mx_rule != FP4_MX_FLOOR && cfg->mx_rule != FP4_MX_RCEIL)
        return fp4_error(FP4_ERR_USAGE, "invalid mx rule %d", (int)cfg->mx_rule);
    if (cfg->rht && (!is_pow2(cfg->rht->n) || cfg->rht->n < 16 || cfg->rht->n > FP4_RHT_MAX))
        return fp4_error(FP4_ERR_USAGE, "rht size %d: must be a power of two in 16..256",
                         cfg->rht->n);
    return FP4_OK;
}

int64_t fp4_padded_len(const fp4_qconfig *cfg, int64_t row_len)
{
    int64_t g = cfg->block > 0 ? cfg->block : 16;
    if (cfg->rht && cfg->rht->n > g) g = cfg->rht->n;
    return (row_len + g - 1) / g * g;
}

bool fp4_needs_tensor_amax(const fp4_qconfig *cfg)
{
    return cfg->scale == FP4_SCALE_NVFP4 || cfg->scale == FP4_SCALE_TENSOR;
}

/* ---- plan ------------------------------------------------------------------------------- */
fp4_status fp4_qplan_make(const fp4_qconfig *cfg, float tensor_amax, int64_t row_len,
                          fp4_qplan *p)
{
    memset(p, 0, sizeof *p);
    p->cfg = *cfg;
    FP4_TRY(fp4_qconfig_check(&p->cfg));
    if (p->cfg.block != cfg->block)
        return fp4_error(FP4_ERR_USAGE, "config block %d: %s needs block %d (call "
                         "fp4_qconfig_check first)", cfg->block, fp4_scale_name(cfg->scale),
                         p->cfg.block);
    if (row_len < 0) return fp4_error(FP4_ERR_USAGE, "negative row length");
    p->grid = fp4c_grid_make((int)cfg->format.id, cfg->format.max);
    p->row_len = row_len;
    p->padded_len = fp4_padded_len(cfg, row_len);
    p->counted_len = cfg->rht ? (row_len + cfg->rht->n - 1) / cfg->rht->n * cfg->rht->n : row_len;
    p->block = cfg->block;
    p->nblk = (int)(p->padded_len / cfg->block);
    p->nchunk = (p->nblk + FP4_CHUNK_BLOCKS - 1) / FP4_CHUNK_BLOCKS;
    p->unit_rows = cfg->weight_2d ? 16 : 1;
    if (!fp4c_isfinite(tensor_amax) || tensor_amax < 0.0f) tensor_amax = 0.0f;
    p->tensor_amax = tensor_amax;
    const float gmax = p->grid.gmax;
    /* SPEC §3, Transformer Engine's fp32 operation order */
    float senc = tensor_amax == 0.0f ? 1.0f : (gmax * FP4C_E4M3_MAX) / tensor_amax;
    senc = fp4c_minf(senc, FP4C_FLT_MAX);
    p->nv_sdec = 1.0f / senc;
    p->nv_m = senc * p->grid.inv_gmax;
    p->ts = tensor_amax / gmax;
    return FP4_OK;
}

int64_t fp4_qplan_scratch_floats(const fp4_qplan *p)
{
    /* grouped path: T and W (GRP * block floats each), then the AVX-512 kernel's level
     * error terms (GRP * block' doubles) and indices (GRP * block' int32), block' = block
     * rounded up to 8, after 16 floats of alignment slack */
    const int64_t bp = ((int64_t)p->block + 7) / 8 * 8;
    return (int64_t)p->unit_rows * p->padded_len + p->nblk +
           (p->block <= GRP_MAX_BLOCK ? (int64_t)2 * GRP * p->block + 16 + 3 * GRP * bp : 0);
}

/* Block amax over finite values, the first index that attains it, and whether any value is
 * non-finite. */
static float block_amax(const float *v, int n, int *arg, int *nonfinite)
{
    float a = 0.0f;
    int k = 0, bad = 0;
    for (int j = 0; j < n; j++) {
        float x = fp4c_absf(v[j]);
        int fin = fp4c_isfinite(x);
        bad |= !fin;
        if (fin && x > a) {
            a = x;
            k = j;
        }
    }
    *arg = k;
    *nonfinite = bad;
    return a;
}

/* Per-block scale parameters (SPEC §3), from common.h so that the kernels compute the same. */
typedef fp4c_blk_par blk_par;

static inline void block_params(const fp4_qplan *p, float amax_b, float amax_s, blk_par *bp)
{
    *bp = fp4c_block_params((int)p->cfg.scale, &p->grid, p->ts, p->nv_m, p->nv_sdec,
                            p->cfg.mx_rule == FP4_MX_RCEIL, amax_b, amax_s);
}

/* One block of one row: v[0..B) values (rotated when RHT), jn of them counted in the metrics,
 * scale from amax_s (own amax, or the 16x16 tile amax with weight_2d). */
static void block_quant(const fp4_qplan *p, const float *v, int jn, float amax_s, uint64_t idx0,
                        float *deq, uint8_t *codes, uint8_t *scale_out, fp4_metrics *m)
{
    const int B = p->block;
    const fp4c_grid *g = &p->grid;
    const float gmax = g->gmax;
    int amax_j, bad;
    const float amax_b = block_amax(v, B, &amax_j, &bad);
    if (p->cfg.scale != FP4_SCALE_NVFP4 || !p->cfg.weight_2d) amax_s = amax_b;

    if (bad) { /* flagged, excluded from every sum; values pass through unquantized */
        for (int j = 0; j < B; j++) {
            if (deq) deq[j] = v[j];
            if (codes) codes[j] = 0;
        }
        if (scale_out) *scale_out = 0;
        if (jn > 0) {
            m->blocks++;
            m->nonfinite_blocks++;
        }
        return;
    }

    blk_par bp;
    block_params(p, amax_b, amax_s, &bp);
    const float mul = bp.mul, div = bp.div, dec1 = bp.dec1, dec2 = bp.dec2;
    const double s_eff = bp.s_eff;
    const int live = bp.live, underflow = bp.underflow;
    const uint8_t sbyte = bp.sbyte;
    if (scale_out) *scale_out = sbyte;

    const int sr = p->cfg.rounding == FP4_ROUND_SR;
    /* Sums of one block start at 0 and run in element order (fp64); the block's sums are then
     * added to the chunk partial (quant.h). Tiles of TILE elements keep the rounding loop
     * vectorizable: q is built as a sum of the grid's steps over passed midpoints (exact). */
    enum { TILE = 64 };
    double sx2 = 0, se2 = 0, sxqx = 0, sxq2 = 0, serr = 0, lsum[8] = {0};
    uint64_t sat = 0, nerr = 0, lcnt[8] = {0}, hist[16] = {0};
    float st[7], md[7];
    for (int i = 0; i < 7; i++) {
        st[i] = g->q[i + 1] - g->q[i];
        md[i] = g->mid[i];
    }
    int32_t ix[TILE];
    float ta[TILE], qa[TILE], xqa[TILE];
    for (int j0 = 0; j0 < B; j0 += TILE) {
        const int nt = B - j0 < TILE ? B - j0 : TILE;
        const float *vv = v + j0;
        if (sr) {
            for (int j = 0; j < nt; j++) {
                const float t = (fp4c_absf(vv[j]) * mul) / div;
                const int k = fp4c_sr_index(g, fp4c_minf(t, gmax),
                                            fp4c_sr_uniform(p->cfg.seed, idx0 + (uint64_t)(j0 + j),
                                                            p->cfg.stream, p->cfg.sr_bits));
                ta[j] = t;
                ix[j] = k;
                qa[j] = g->q[k];
            }
        } else {
#pragma omp simd
            for (int j = 0; j < nt; j++) {
                const float t = (fabsf(vv[j]) * mul) / div;
                const float tc = fp4c_minf(t, gmax);
                /* RTNE: a tie at md[i] passes iff i is odd (fp4c_rtne_index) */
                const int p0 = tc > md[0], p1 = tc >= md[1], p2 = tc > md[2], p3 = tc >= md[3],
                          p4 = tc > md[4], p5 = tc >= md[5], p6 = tc > md[6];
                ta[j] = t;
                ix[j] = p0 + p1 + p2 + p3 + p4 + p5 + p6;
                qa[j] = (p0 ? st[0] : 0.0f) + (p1 ? st[1] : 0.0f) + (p2 ? st[2] : 0.0f) +
                        (p3 ? st[3] : 0.0f) + (p4 ? st[4] : 0.0f) + (p5 ? st[5] : 0.0f) +
                        (p6 ? st[6] : 0.0f);
            }
        }
#pragma omp simd
        for (int j = 0; j < nt; j++) xqa[j] = copysignf((qa[j] * dec1) * dec2, vv[j]);
        if (deq) memcpy(deq + j0, xqa, (size_t)nt * sizeof *xqa);
        if (codes)
            for (int j = 0; j < nt; j++)
                codes[j0 + j] = (uint8_t)(ix[j] | (int)((fp4c_f2u(vv[j]) >> 31) << 3));
        const int cn = jn - j0 < 0 ? 0 : (jn - j0 < nt ? jn - j0 : nt);
        for (int j = 0; j < cn; j++) {
            const double dx = vv[j], dq = xqa[j], d = dq - dx;
            sx2 += dx * dx;
            se2 += d * d;
            sxqx += dq * dx;
            sxq2 += dq * dq;
            sat += ta[j] > gmax;
            hist[ix[j] | (int)((fp4c_f2u(vv[j]) >> 31) << 3)]++;
        }
        if (live)
            for (int j = 0; j < cn; j++) {
                if (j0 + j == amax_j) continue;
                const double e = (double)qa[j] - (double)fp4c_absf(vv[j]) / s_eff;
                lcnt[ix[j]]++;
                lsum[ix[j]] += e;
                serr += e;
                nerr++;
            }
    }
    if (!live) sat = 0;
    for (int i = 0; i < 16; i++) m->hist[i] += hist[i];
    for (int i = 0; i < 8; i++) {
        m->level_count[i] += lcnt[i];
        m->level_err_sum[i] += lsum[i];
    }
    if (jn <= 0) return;
    m->blocks++;
    m->sum_x2 += sx2;
    m->sum_err2 += se2;
    m->sum_xqx += sxqx;
    m->sum_xq2 += sxq2;
    m->signed_err_sum += serr;
    m->signed_err_n += nerr;
    m->saturated += sat;
    if (p->cfg.scale == FP4_SCALE_MXFP4) m->clipped += sat;
    if (amax_b == 0.0f) m->zero_blocks++;
    if (underflow) m->scale_underflow_blocks++;
    if (amax_b > m->tensor_amax) m->tensor_amax = amax_b;
}

/* ---- grouped RTNE kernel ------------------------------------------------------------------
 * The same numbers as block_quant (RTNE, no deq/codes outputs), for GRP blocks at once: the
 * blocks are transposed into lanes (T[j * GRP + b] = element j of block b), so every per-block
 * fp64 sum still starts at 0 and runs over its block's elements in order — one SIMD lane per
 * block — and the block sums are then added to the chunk partial in block order. A lane adds
 * +0.0 for an entry it does not count, which leaves a sum unchanged (a sum that starts at +0.0
 * is never -0.0). Selects are bit masks, which give exactly the values of block_quant's
 * conditionals. Integer counts (histogram, level counts) are order-free; here they are kept
 * as one-hot bytes (1 << 8·index) per lane, flushed before a byte can overflow (the AVX-512
 * variant counts with popcounts instead). The level error
 * |x| / s_eff is the correctly rounded fp64 quotient in every variant: a division, or with FMA
 * Markstein's correction q1 = q0 + (|x| − q0·s)·r from r = RN(1/s), q0 = RN(|x|·r), which is
 * correctly rounded (Markstein 1990; r exact-rounded, q0 faithful, no under/overflow here). */
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));
typedef int64_t v8l __attribute__((vector_size(64)));
typedef uint64_t v8ul __attribute__((vector_size(64))); /* packed byte counters: wrap, no UB */

typedef struct grp_acc {
    double sx2[GRP], se2[GRP], sxqx[GRP], sxq2[GRP], serr[GRP], lsum[8][GRP];
} grp_acc;

/* Order-free integer counts of live lanes, kept across the groups of a row: one-hot byte
 * counters per lane (raw), flushed into the totals before a byte can overflow (group_body);
 * the AVX-512 kernel adds its popcounts to the totals directly. */
typedef struct grp_cnt {
    int64_t raw_pos[GRP], raw_neg[GRP], raw_lvl[GRP], sat[GRP];
    int64_t pos[8], neg[8], lvl[8];
    int since;
} grp_cnt;

#define vf_bits(m) ((v8f)(m))
#define vd_and(a, m) ((v8d)((v8l)(a) & (m)))

/* one-hot byte counters (8 lanes) -> per-level totals: the even and the odd bytes of every
 * lane are summed as 16-bit fields of one word (8 lanes x 255 < 2^16: no carry between
 * fields), then split into the 8 level totals */
static void onehot_flush(int64_t *raw, int64_t *out)
{
    const uint64_t m = 0x00FF00FF00FF00FFull;
    uint64_t ev = 0, od = 0;
    for (int b = 0; b < GRP; b++) {
        const uint64_t w = (uint64_t)raw[b];
        ev += w & m;
        od += (w >> 8) & m;
        raw[b] = 0;
    }
    for (int k = 0; k < 4; k++) {
        out[2 * k] += (int64_t)((ev >> (16 * k)) & 0xFFFF);
        out[2 * k + 1] += (int64_t)((od >> (16 * k)) & 0xFFFF);
    }
}

static void grp_cnt_flush(grp_cnt *n)
{
    onehot_flush(n->raw_pos, n->pos);
    onehot_flush(n->raw_neg, n->neg);
    onehot_flush(n->raw_lvl, n->lvl);
    n->since = 0;
}

static inline __attribute__((always_inline)) void
group_body(const fp4_qplan *p, const float *T, const float *mul, const float *dv,
           const float *d1, const float *d2, const double *se, const int32_t *jn,
           const int32_t *lv, const int32_t *ak, grp_acc *a, grp_cnt *n, const int use_fma)
{
    const int B = p->block;
    const fp4c_grid *g = &p->grid;
    const float gmax = g->gmax;
    v8f st[7], md[7];
    for (int i = 0; i < 7; i++) {
        const float s = g->q[i + 1] - g->q[i], m = g->mid[i];
        st[i] = (v8f){s, s, s, s, s, s, s, s};
        md[i] = (v8f){m, m, m, m, m, m, m, m};
    }
    const v8f gm = (v8f){gmax, gmax, gmax, gmax, gmax, gmax, gmax, gmax};
    v8f vmul, vdv, vd1, vd2;
    v8i vjn, vlv, vak;
    v8d vse, vrs;
    memcpy(&vmul, mul, sizeof vmul);
    memcpy(&vdv, dv, sizeof vdv);
    memcpy(&vd1, d1, sizeof vd1);
    memcpy(&vd2, d2, sizeof vd2);
    memcpy(&vjn, jn, sizeof vjn);
    memcpy(&vlv, lv, sizeof vlv);
    memcpy(&vak, ak, sizeof vak);
    memcpy(&vse, se, sizeof vse);
    vrs = (v8d){1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0} / vse; /* RN(1/s), lane by lane */
    const v8i absm = (v8i){0} + 0x7FFFFFFF, sgnm = (v8i){0} + (int32_t)0x80000000u;
    v8d sx2 = {0}, se2 = {0}, sxqx = {0}, sxq2 = {0}, serr = {0};
    v8d ls0 = {0}, ls1 = {0}, ls2 = {0}, ls3 = {0}, ls4 = {0}, ls5 = {0}, ls6 = {0}, ls7 = {0};
    v8l sat;
    v8ul hpos, hneg, hl;
    memcpy(&sat, n->sat, sizeof sat);
    memcpy(&hpos, n->raw_pos, sizeof hpos);
    memcpy(&hneg, n->raw_neg, sizeof hneg);
    memcpy(&hl, n->raw_lvl, sizeof hl);
    int since = n->since;
    for (int j = 0; j < B; j++) {
        v8f x;
        memcpy(&x, T + (int64_t)j * GRP, sizeof x);
        const v8f ax = vf_bits((v8i)x & absm);
        const v8f t = (ax * vmul) / vdv;
        const v8i lt = t < gm;
        const v8f tc = vf_bits(((v8i)t & lt) | ((v8i)gm & ~lt));
        const v8i p0 = tc > md[0], p1 = tc >= md[1], p2 = tc > md[2], p3 = tc >= md[3],
                  p4 = tc > md[4], p5 = tc >= md[5], p6 = tc > md[6];
        const v8i ix = -(p0 + p1 + p2 + p3 + p4 + p5 + p6);
        const v8f q = vf_bits((v8i)st[0] & p0) + vf_bits((v8i)st[1] & p1) +
                      vf_bits((v8i)st[2] & p2) + vf_bits((v8i)st[3] & p3) +
                      vf_bits((v8i)st[4] & p4) + vf_bits((v8i)st[5] & p5) +
                      vf_bits((v8i)st[6] & p6);
        const v8f xq = vf_bits(((v8i)((q * vd1) * vd2) & absm) | ((v8i)x & sgnm));
        const v8i c = vjn > j;
        const v8i neg = (v8i)x >> 31;
        const v8l c64 = __builtin_convertvector(c, v8l);
        const v8d dx = __builtin_convertvector(x, v8d), dq = __builtin_convertvector(xq, v8d);
        const v8d d = dq - dx;
        sx2 += vd_and(dx * dx, c64);
        se2 += vd_and(d * d, c64);
        sxqx += vd_and(dq * dx, c64);
        sxq2 += vd_and(dq * dq, c64);
        sat -= __builtin_convertvector(c & -vlv & (t > gm), v8l); /* live blocks only */
        const v8l ix64 = __builtin_convertvector(ix, v8l);
        const v8ul oh = (v8ul){1, 1, 1, 1, 1, 1, 1, 1} << (v8ul)(ix64 * 8);
        hpos += oh & (v8ul)__builtin_convertvector(c & ~neg, v8l);
        hneg += oh & (v8ul)__builtin_convertvector(c & neg, v8l);
        const v8i l = c & -vlv & (vak != j);
        const v8l l64 = __builtin_convertvector(l, v8l);
        hl += oh & (v8ul)l64;
        const v8d dax = __builtin_convertvector(ax, v8d);
        v8d qt;
        if (use_fma) {
            const v8d q0 = dax * vrs;
            v8d r;
            for (int k = 0; k < GRP; k++) r[k] = __builtin_fma(-q0[k], vse[k], dax[k]);
            for (int k = 0; k < GRP; k++) qt[k] = __builtin_fma(r[k], vrs[k], q0[k]);
        } else qt = dax / vse;
        const v8d el = vd_and(__builtin_convertvector(q, v8d) - qt, l64);
        serr += el;
        ls0 += vd_and(el, ix64 == 0);
        ls1 += vd_and(el, ix64 == 1);
        ls2 += vd_and(el, ix64 == 2);
        ls3 += vd_and(el, ix64 == 3);
        ls4 += vd_and(el, ix64 == 4);
        ls5 += vd_and(el, ix64 == 5);
        ls6 += vd_and(el, ix64 == 6);
        ls7 += vd_and(el, ix64 == 7);
        if (++since == 255) {
            memcpy(n->raw_pos, &hpos, sizeof hpos);
            memcpy(n->raw_neg, &hneg, sizeof hneg);
            memcpy(n->raw_lvl, &hl, sizeof hl);
            grp_cnt_flush(n);
            hpos = hneg = hl = (v8ul){0};
            since = 0;
        }
    }
    memcpy(n->raw_pos, &hpos, sizeof hpos);
    memcpy(n->raw_neg, &hneg, sizeof hneg);
    memcpy(n->raw_lvl, &hl, sizeof hl);
    memcpy(n->sat, &sat, sizeof sat);
    n->since = since;
    memcpy(a->sx2, &sx2, sizeof sx2);
    memcpy(a->se2, &se2, sizeof se2);
    memcpy(a->sxqx, &sxqx, sizeof sxqx);
    memcpy(a->sxq2, &sxq2, sizeof sxq2);
    memcpy(a->serr, &serr, sizeof serr);
    memcpy(a->lsum[0], &ls0, sizeof ls0);
    memcpy(a->lsum[1], &ls1, sizeof ls1);
    memcpy(a->lsum[2], &ls2, sizeof ls2);
    memcpy(a->lsum[3], &ls3, sizeof ls3);
    memcpy(a->lsum[4], &ls4, sizeof ls4);
    memcpy(a->lsum[5], &ls5, sizeof ls5);
    memcpy(a->lsum[6], &ls6, sizeof ls6);
    memcpy(a->lsum[7], &ls7, sizeof ls7);
}

/* Transpose GRP full blocks (v, block length B) into T and find each lane's amax over finite
 * values, the first index attaining it, and whether the block holds a non-finite value. */
static inline __attribute__((always_inline)) void
group_load_body(const float *v, int B, float *T, float *am, int32_t *ak, int32_t *bad)
{
    const v8i absm = (v8i){0} + 0x7FFFFFFF;
    const v8f fmax = (v8f){0.0f} + FP4C_FLT_MAX;
    v8f a = {0};
    v8i k = {0}, nf = {0};
    for (int j = 0; j < B; j++) {
        const float *c = v + j;
        const v8f x = {c[0], c[B], c[2 * B], c[3 * B], c[4 * B], c[5 * B], c[6 * B], c[7 * B]};
        memcpy(T + (int64_t)j * GRP, &x, sizeof x);
        const v8f ax = vf_bits((v8i)x & absm);
        const v8i fin = ax <= fmax;
        const v8i up = fin & (ax > a);
        nf |= ~fin;
        a = vf_bits(((v8i)ax & up) | ((v8i)a & ~up));
        k = (((v8i){0} + j) & up) | (k & ~up);
    }
    memcpy(am, &a, sizeof a);
    memcpy(ak, &k, sizeof k);
    memcpy(bad, &nf, sizeof nf);
}

#define GROUP_ARGS                                                                              \
    const fp4_qplan *p, const float *T, const float *mul, const float *dv, const float *d1,    \
        const float *d2, const double *se, const int32_t *jn,                                  \
        const int32_t *lv, const int32_t *ak, grp_acc *a, grp_cnt *n
#define GROUP_PASS p, T, mul, dv, d1, d2, se, jn, lv, ak, a, n

#define LOAD_ARGS const float *v, int B, float *T, float *am, int32_t *ak, int32_t *bad
#define LOAD_PASS v, B, T, am, ak, bad
typedef void (*load_fn)(LOAD_ARGS);

/* The grouped kernel's input for nb <= GRP consecutive blocks of one row at v, through a load
 * variant: T (GRP * B floats, lane b = block b, lanes past nb zeros) and per lane the amax,
 * its first index and the non-finite flag. w: GRP * B floats of scratch for a partial group. */
static inline __attribute__((always_inline)) void group_load(load_fn load, int B, const float *v,
                                                             int nb, float *T, float *w,
                                                             float *am, int32_t *ak, int32_t *bad)
{
    if (nb < GRP) { /* a row's last, partial group: lanes past nb hold zeros */
        memcpy(w, v, (size_t)nb * (size_t)B * sizeof *w);
        memset(w + (int64_t)nb * B, 0, (size_t)(GRP - nb) * (size_t)B * sizeof *w);
        v = w;
    }
    load(v, B, T, am, ak, bad);
}

/* A group's kernel input: the transposed blocks and per lane the amax, its first index and
 * the non-finite flag. */
typedef struct grp_in {
    const float *T, *am;
    const int32_t *ak, *bad;
} grp_in;

/* The group of nb <= GRP blocks of one prepared row v (stride padded_len) starting at block
 * k0: jnv[GRP], each lane's counted entries (0 past nb), and its kernel input — from the
 * row's cached groups when row->T (fp4_grpcache), else loaded by `load` into Tb, amb, akb,
 * badb (W: a partial group's padding). Shared by the per-group path and row_avx512. */
static inline __attribute__((always_inline)) grp_in
group_at(const fp4_qplan *p, const float *v, const grp_in *row, int k0, int nb, load_fn load,
         float *Tb, float *W, float *amb, int32_t *akb, int32_t *badb, int *jnv)
{
    const int B = p->block;
    if ((int64_t)(k0 + GRP) * B <= p->counted_len)
        for (int b = 0; b < GRP; b++) jnv[b] = B;
    else
        for (int b = 0; b < GRP; b++) {
            const int64_t c = b < nb ? p->counted_len - (int64_t)(k0 + b) * B : 0;
            jnv[b] = (int)(c > B ? B : (c < 0 ? 0 : c));
        }
    if (row->T)
        return (grp_in){row->T + (int64_t)k0 * B, row->am + k0, row->ak + k0, row->bad + k0};
    group_load(load, B, v + (int64_t)k0 * B, nb, Tb, W, amb, akb, badb);
    return (grp_in){Tb, amb, akb, badb};
}

/* The kernel's inputs for one group, from fp4c_block_params per lane (scalar; any scale mode).
 * A lane past nb or holding a non-finite value is dead: jn 0, not live. */
static inline __attribute__((always_inline)) void
group_params(const fp4_qplan *p, const float *am, const int32_t *bad, const float *tile, int nb,
             const int *jnv, float *mul, float *dv, float *d1, float *d2, double *se,
             int32_t *jn, int32_t *lv, int32_t *uf, uint8_t *sb)
{
    for (int b = 0; b < GRP; b++) {
        blk_par bp;
        if (b < nb && !bad[b]) {
            const float amax_s =
                p->cfg.scale == FP4_SCALE_NVFP4 && p->cfg.weight_2d ? tile[b] : am[b];
            block_params(p, am[b], amax_s, &bp);
            jn[b] = jnv[b];
        } else {
            memset(&bp, 0, sizeof bp);
            bp.div = 1.0f;
            jn[b] = 0;
        }
        mul[b] = bp.mul;
        dv[b] = bp.div;
        d1[b] = bp.dec1;
        d2[b] = bp.dec2;
        se[b] = bp.live ? bp.s_eff : 1.0;
        lv[b] = bp.live;
        uf[b] = bp.underflow;
        sb[b] = bp.sbyte;
    }
}

static void group_plain(GROUP_ARGS) { group_body(GROUP_PASS, 0); }
static void load_plain(LOAD_ARGS) { group_load_body(LOAD_PASS); }
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define FP4_HAVE_DISPATCH 1
#define FP4_AVX2 __attribute__((target("avx2,fma")))
#define FP4_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))
#define RNE_IMM (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC) /* explicit, not MXCSR */
FP4_AVX2 static void group_avx2(GROUP_ARGS) { group_body(GROUP_PASS, 1); }
FP4_AVX2 static void load_avx2(LOAD_ARGS) { group_load_body(LOAD_PASS); }
/* group_load_body for block sizes that are multiples of 8: 8x8 tiles transposed in registers
 * (unpack, shuffle, lane permute) instead of 64 strided scalar loads; the same T, and the
 * same amax / first index / non-finite flags, from the same column-order scan. */
FP4_AVX512 static void load_avx512(LOAD_ARGS)
{
    if (B % 8) {
        group_load_body(LOAD_PASS);
        return;
    }
    const __m256 fmax = _mm256_set1_ps(FP4C_FLT_MAX);
    const __m256i absm = _mm256_set1_epi32(0x7FFFFFFF);
    __m256 a = _mm256_setzero_ps();
    __m256i k = _mm256_setzero_si256();
    __mmask8 nf = 0;
    for (int j0 = 0; j0 < B; j0 += 8) {
        __m256 r[8], t[8], u[8], c[8];
        for (int b = 0; b < 8; b++) r[b] = _mm256_loadu_ps(v + (int64_t)b * B + j0);
        for (int b = 0; b < 8; b += 2) {
            t[b] = _mm256_unpacklo_ps(r[b], r[b + 1]);
            t[b + 1] = _mm256_unpackhi_ps(r[b], r[b + 1]);
        }
        for (int h = 0; h < 8; h += 4) { /* rows h..h+3: columns (0|4), (1|5), (2|6), (3|7) */
            u[h] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
            u[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xEE);
            u[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
            u[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xEE);
        }
        for (int i = 0; i < 4; i++) {
            c[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
            c[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
        }
        for (int i = 0; i < 8; i++) {
            const int j = j0 + i;
            _mm256_storeu_ps(T + (int64_t)j * GRP, c[i]);
            const __m256 ax = _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(c[i]), absm));
            const __mmask8 fin = _mm256_cmp_ps_mask(ax, fmax, _CMP_LE_OQ);
            const __mmask8 up = fin & _mm256_cmp_ps_mask(ax, a, _CMP_GT_OQ);
            nf |= (__mmask8)~fin;
            a = _mm256_mask_blend_ps(up, a, ax);
            k = _mm256_mask_blend_epi32(up, k, _mm256_set1_epi32(j));
        }
    }
    _mm256_storeu_ps(am, a);
    _mm256_storeu_si256((__m256i *)(void *)ak, k);
    _mm256_storeu_si256((__m256i *)(void *)bad, _mm256_movm_epi32(nf));
}

/* An 8-bit lane mask loaded from memory straight into a mask register (kmovb k, m8: a load
 * port); the compiler would go through a general register and a shuffle-port kmovb. */
FP4_AVX512 static inline __attribute__((always_inline)) __mmask8 kload8(const uint8_t *m)
{
    __mmask8 k;
    __asm__("kmovb %1, %0" : "=k"(k) : "m"(*m));
    return k;
}

/* and stored from a mask register straight to memory (kmovb m8, k: a store) */
FP4_AVX512 static inline __attribute__((always_inline)) void kstore8(uint8_t *m, __mmask8 k)
{
    __asm__("kmovb %1, %0" : "=m"(*m) : "k"(k));
}

/* group_body written for AVX-512 masks: the same numbers (every sum is the same sequence of
 * the same fp64 operations; a masked-off lane skips an add where group_body adds +0.0, which
 * is the identity on a sum that starts at +0.0). Differences in form only:
 *  - x̂'s magnitude q is read from qcum[ix], qcum[k] = ((st0 + st1) + …) + st(k-1) in fp32,
 *    the value group_body's sum of masked steps takes: the threshold tests p0..p6 are
 *    monotone (mid[] is increasing up to the FLT_MAX entries, which tc <= g_max never
 *    reaches), so p_i holds exactly for i < ix and the masked steps past ix add +0.0;
 *  - sums use mask registers (merge-masked adds) instead of and-masks, and the clamp is
 *    vminps (t < g_max ? t : g_max, as group_body's select);
 *  - the level error sums run in a second pass over the block's stored terms (E) in element
 *    order, with per-level masks from byte compares of the stored indices (IX); the code
 *    histogram and level counts are popcounts of the same masks (exact integers);
 *  - unit (mul and d2 are 1 in every counted lane): the two multiplications by 1 are left
 *    out (x · 1 = x exactly).
 * E: GRP · B' doubles, IX: GRP · B' int32, B' = B rounded up to 8. */
FP4_AVX512 static inline __attribute__((always_inline)) void
group_avx512_body(GROUP_ARGS, double *E, int32_t *IX, const int kind, const int unit)
{
    const int B = p->block;
    const fp4c_grid *g = &p->grid;
    float qc[8];
    qc[0] = 0.0f;
    for (int k = 1; k < 8; k++) qc[k] = qc[k - 1] + (g->q[k] - g->q[k - 1]);
    const __m256 qcum = _mm256_loadu_ps(qc);
    __m256 md[7];
    for (int i = 0; i < 7; i++) md[i] = _mm256_set1_ps(g->mid[i]);
    const __m256 gm = _mm256_set1_ps(g->gmax);
    const __m256 vinv = _mm256_set1_ps(g->inv_step), one_f = _mm256_set1_ps(1.0f);
    const __m256 vmul = _mm256_loadu_ps(mul), vdv = _mm256_loadu_ps(dv);
    const __m256 vd1 = _mm256_loadu_ps(d1), vd2 = _mm256_loadu_ps(d2);
    /* per-element lane masks, built once per group instead of per element: cm[j] counted
     * (j < jn), sm[j] counted in a live block, lm[j] that and not the block's amax element */
    uint8_t cm[GRP_MAX_BLOCK], sm[GRP_MAX_BLOCK], lm[GRP_MAX_BLOCK];
    unsigned live = 0, full = 1;
    for (int b = 0; b < GRP; b++) {
        live |= (unsigned)(lv[b] != 0) << b;
        full &= jn[b] >= B;
    }
    if (full) {
        memset(cm, 0xFF, (size_t)B);
        memset(sm, (int)live, (size_t)B);
    } else
        for (int j = 0; j < B; j++) {
            unsigned c = 0;
            for (int b = 0; b < GRP; b++) c |= (unsigned)(jn[b] > j) << b;
            cm[j] = (uint8_t)c;
            sm[j] = (uint8_t)(c & live);
        }
    memcpy(lm, sm, (size_t)B);
    for (int b = 0; b < GRP; b++)
        if (ak[b] >= 0 && ak[b] < B) lm[ak[b]] &= (uint8_t)~(1u << b);
    const __m512d vse = _mm512_loadu_pd(se), vrs = _mm512_div_pd(_mm512_set1_pd(1.0), vse);
    const __m256i absm = _mm256_set1_epi32(0x7FFFFFFF), one32 = _mm256_set1_epi32(1);
    double qc64[8];
    for (int k = 0; k < 8; k++) qc64[k] = (double)qc[k];
    const __m512d qcum64 = _mm512_loadu_pd(qc64);
    __m512d sx2 = _mm512_setzero_pd(), se2 = sx2, sxqx = sx2, sxq2 = sx2, serr = sx2;
    __m512d ls0 = sx2, ls1 = sx2, ls2 = sx2, ls3 = sx2, ls4 = sx2, ls5 = sx2, ls6 = sx2,
            ls7 = sx2; /* named: an array would live on the stack */
    __m256i sat = _mm256_setzero_si256();
    uint8_t negb[GRP_MAX_BLOCK]; /* per element: the lanes whose x has the sign bit */
    for (int j = 0; j < B; j++) {
        const __m256 x = _mm256_loadu_ps(T + (int64_t)j * GRP);
        const __m256 ax = _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(x), absm));
        /* unit: mul and d2 are 1 in every counted lane, and x · 1 = x */
        const __m256 t = _mm256_div_ps(unit ? ax : _mm256_mul_ps(ax, vmul), vdv);
        const __m256 tc = _mm256_min_ps(t, gm);
        __m256i ix;
        if (kind == FP4C_GRID_UNIFORM) { /* fp4c_rtne_index_uniform */
            ix = _mm256_cvttps_epi32(_mm256_roundscale_ps(_mm256_mul_ps(tc, vinv), RNE_IMM));
        } else if (kind == FP4C_GRID_E2M1) { /* fp4c_rtne_index_e2m1: (u >> 22) is
                                                 (exponent << 1) | mantissa bit */
            const __m256i lo = _mm256_cvttps_epi32(
                _mm256_roundscale_ps(_mm256_add_ps(tc, tc), RNE_IMM)); /* 2t: exact */
            __m256i u = _mm256_castps_si256(tc);
            u = _mm256_add_epi32(u, _mm256_add_epi32(
                                        _mm256_and_si256(_mm256_srli_epi32(u, 22), one32),
                                        _mm256_set1_epi32(0x1FFFFF)));
            const __m256i hi = _mm256_sub_epi32(_mm256_srli_epi32(u, 22), _mm256_set1_epi32(252));
            ix = _mm256_mask_blend_epi32(_mm256_cmp_ps_mask(tc, one_f, _CMP_LT_OQ), hi, lo);
        } else {
            ix = _mm256_setzero_si256();
            ix = _mm256_mask_add_epi32(ix, _mm256_cmp_ps_mask(tc, md[0], _CMP_GT_OQ), ix, one32);
            ix = _mm256_mask_add_epi32(ix, _mm256_cmp_ps_mask(tc, md[1], _CMP_GE_OQ), ix, one32);
            ix = _mm256_mask_add_epi32(ix, _mm256_cmp_ps_mask(tc, md[2], _CMP_GT_OQ), ix, one32);
            ix = _mm256_mask_add_epi32(ix, _mm256_cmp_ps_mask(tc, md[3], _CMP_GE_OQ), ix, one32);
            ix = _mm256_mask_add_epi32(ix, _mm256_cmp_ps_mask(tc, md[4], _CMP_GT_OQ), ix, one32);
            ix = _mm256_mask_add_epi32(ix, _mm256_cmp_ps_mask(tc, md[5], _CMP_GE_OQ), ix, one32);
            ix = _mm256_mask_add_epi32(ix, _mm256_cmp_ps_mask(tc, md[6], _CMP_GT_OQ), ix, one32);
        }
        const __m256 q = _mm256_permutexvar_ps(ix, qcum);
        const __m512i ix64 = _mm512_cvtepu32_epi64(ix);
        /* |(q * d1) * d2| with x's sign: bits (x & sign) | (y & ~sign) */
        const __m256 xq = _mm256_castsi256_ps(_mm256_ternarylogic_epi32(
            absm,
            _mm256_castps_si256(unit ? _mm256_mul_ps(q, vd1)
                                     : _mm256_mul_ps(_mm256_mul_ps(q, vd1), vd2)),
            _mm256_castps_si256(x), 0xCA));
        const __mmask8 c = cm[j];
        const __mmask8 neg = _mm256_movepi32_mask(_mm256_castps_si256(x));
        const __m512d dx = _mm512_cvtps_pd(x), dq = _mm512_cvtps_pd(xq);
        const __m512d d = _mm512_sub_pd(dq, dx);
        /* dx², dq·dx and dq² are exact in fp64 (fp32 operands: 48 significant bits, no
         * under- or overflow), so the fused multiply-add rounds once, as mul-then-add does;
         * d = dq − dx can carry 53 bits, so d² keeps its own rounding */
        sx2 = _mm512_mask3_fmadd_pd(dx, dx, sx2, c);
        se2 = _mm512_mask_add_pd(se2, c, se2, _mm512_mul_pd(d, d));
        sxqx = _mm512_mask3_fmadd_pd(dq, dx, sxqx, c);
        sxq2 = _mm512_mask3_fmadd_pd(dq, dq, sxq2, c);
        sat = _mm256_mask_add_epi32(sat, _mm256_mask_cmp_ps_mask(sm[j], t, gm, _CMP_GT_OQ),
                                    sat, one32);
        kstore8(&negb[j], neg); /* the code histogram: with the level masks, below */
        const __mmask8 l = lm[j];
        const __m512d dax = _mm512_abs_pd(dx); /* = (double)|x| */
        const __m512d q0 = _mm512_mul_pd(dax, vrs);
        const __m512d r = _mm512_fnmadd_pd(q0, vse, dax);
        const __m512d qt = _mm512_fmadd_pd(r, vrs, q0);
        const __m512d el = _mm512_sub_pd(_mm512_permutexvar_pd(ix64, qcum64), qt); /* (double)q */
        serr = _mm512_mask_add_pd(serr, l, serr, el);
        _mm512_storeu_pd(E + (int64_t)j * GRP, el); /* level sums: second pass */
        _mm256_storeu_si256((__m256i *)(void *)(IX + (int64_t)j * GRP), ix);
    }
    /* Level error sums, second pass: lane b adds element j's term to level ix's sum, j in
     * order (the first pass's order). The level masks come from one byte compare per level
     * and 8 elements — the indices of elements j0..j0+7 packed as bytes [j][lane], compared
     * under lm's bits — stored and read back per element as 8-bit masks, instead of 8
     * compares per element on the shuffle port. */
    uint8_t lk[8][GRP_MAX_BLOCK];
    const int Bp = (B + 7) & ~7;
    for (int j = B; j < Bp; j++) { /* B = 4: the padding elements count nowhere */
        cm[j] = lm[j] = negb[j] = 0;
        _mm256_storeu_si256((__m256i *)(void *)(IX + (int64_t)j * GRP), _mm256_setzero_si256());
    }
    /* The histogram too: per level, the counted elements (mask kc) and of those the negative
     * ones, and the level-statistics elements kl = kc & lm (lm is within cm), as popcounts
     * (exact; no per-lane byte counters to flush) */
    uint64_t tot[8] = {0}, ng[8] = {0}, nl[8] = {0};
    for (int j0 = 0; j0 < Bp; j0 += 8) {
        const int32_t *ixp = IX + (int64_t)j0 * GRP;
        __m512i by = _mm512_castsi128_si512(_mm512_cvtepi32_epi8(_mm512_loadu_si512(ixp)));
        by = _mm512_inserti32x4(by, _mm512_cvtepi32_epi8(_mm512_loadu_si512(ixp + 16)), 1);
        by = _mm512_inserti32x4(by, _mm512_cvtepi32_epi8(_mm512_loadu_si512(ixp + 32)), 2);
        by = _mm512_inserti32x4(by, _mm512_cvtepi32_epi8(_mm512_loadu_si512(ixp + 48)), 3);
        uint64_t c64, l64, n64;
        memcpy(&c64, cm + j0, sizeof c64);
        memcpy(&l64, lm + j0, sizeof l64);
        memcpy(&n64, negb + j0, sizeof n64);
        __m512i lvl = _mm512_setzero_si512();
        for (int i = 0; i < 8; i++) {
            const uint64_t kc = _mm512_mask_cmpeq_epi8_mask(c64, by, lvl), kl = kc & l64;
            memcpy(&lk[i][j0], &kl, sizeof kl);
            tot[i] += (uint64_t)__builtin_popcountll(kc);
            ng[i] += (uint64_t)__builtin_popcountll(kc & n64);
            nl[i] += (uint64_t)__builtin_popcountll(kl);
            lvl = _mm512_add_epi8(lvl, _mm512_set1_epi8(1));
        }
    }
    for (int i = 0; i < 8; i++) {
        n->pos[i] += (int64_t)(tot[i] - ng[i]);
        n->neg[i] += (int64_t)ng[i];
        n->lvl[i] += (int64_t)nl[i];
    }
    for (int j = 0; j < B; j++) {
        const __m512d el = _mm512_loadu_pd(E + (int64_t)j * GRP);
        ls0 = _mm512_mask_add_pd(ls0, kload8(&lk[0][j]), ls0, el);
        ls1 = _mm512_mask_add_pd(ls1, kload8(&lk[1][j]), ls1, el);
        ls2 = _mm512_mask_add_pd(ls2, kload8(&lk[2][j]), ls2, el);
        ls3 = _mm512_mask_add_pd(ls3, kload8(&lk[3][j]), ls3, el);
        ls4 = _mm512_mask_add_pd(ls4, kload8(&lk[4][j]), ls4, el);
        ls5 = _mm512_mask_add_pd(ls5, kload8(&lk[5][j]), ls5, el);
        ls6 = _mm512_mask_add_pd(ls6, kload8(&lk[6][j]), ls6, el);
        ls7 = _mm512_mask_add_pd(ls7, kload8(&lk[7][j]), ls7, el);
    }
    /* n->sat is int64 per lane */
    _mm512_storeu_si512(n->sat, _mm512_add_epi64(_mm512_loadu_si512(n->sat),
                                                 _mm512_cvtepi32_epi64(sat)));
    _mm512_storeu_pd(a->sx2, sx2);
    _mm512_storeu_pd(a->se2, se2);
    _mm512_storeu_pd(a->sxqx, sxqx);
    _mm512_storeu_pd(a->sxq2, sxq2);
    _mm512_storeu_pd(a->serr, serr);
    _mm512_storeu_pd(a->lsum[0], ls0);
    _mm512_storeu_pd(a->lsum[1], ls1);
    _mm512_storeu_pd(a->lsum[2], ls2);
    _mm512_storeu_pd(a->lsum[3], ls3);
    _mm512_storeu_pd(a->lsum[4], ls4);
    _mm512_storeu_pd(a->lsum[5], ls5);
    _mm512_storeu_pd(a->lsum[6], ls6);
    _mm512_storeu_pd(a->lsum[7], ls7);
}

/* group_params compiled for AVX-512 with every call inlined (flatten): called from
 * row_avx512 with the upper register halves in use, baseline SSE code (block_params,
 * fp4c_block_params) would pay the AVX-SSE transition on every instruction — it made nvfp4,
 * mxfp4 and tensor scales 2.5-3x slower. */
FP4_AVX512 __attribute__((flatten, noinline)) static void
group_params_avx512(const fp4_qplan *p, const float *am, const int32_t *bad, const float *tile,
                    int nb, const int *jnv, float *mul, float *dv, float *d1, float *d2,
                    double *se, int32_t *jn, int32_t *lv, int32_t *uf, uint8_t *sb)
{
    group_params(p, am, bad, tile, nb, jnv, mul, dv, d1, d2, se, jn, lv, uf, sb);
}

/* 8x8 transpose of doubles: c_b[i] = r_i[b]. Named registers (a macro, not arrays): with
 * arrays the compiler keeps the intermediate rows on the stack. */
#define TRANSPOSE8_PD(r0, r1, r2, r3, r4, r5, r6, r7, c0, c1, c2, c3, c4, c5, c6, c7)          \
    do {                                                                                        \
        const __m512i ia_ = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);                        \
        const __m512i ib_ = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);                      \
        const __m512i ic_ = _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11);                        \
        const __m512i id_ = _mm512_setr_epi64(4, 5, 6, 7, 12, 13, 14, 15);                      \
        const __m512d t0_ = _mm512_unpacklo_pd(r0, r1), t1_ = _mm512_unpackhi_pd(r0, r1);       \
        const __m512d t2_ = _mm512_unpacklo_pd(r2, r3), t3_ = _mm512_unpackhi_pd(r2, r3);       \
        const __m512d t4_ = _mm512_unpacklo_pd(r4, r5), t5_ = _mm512_unpackhi_pd(r4, r5);       \
        const __m512d t6_ = _mm512_unpacklo_pd(r6, r7), t7_ = _mm512_unpackhi_pd(r6, r7);       \
        const __m512d u0_ = _mm512_permutex2var_pd(t0_, ia_, t2_);                              \
        const __m512d u1_ = _mm512_permutex2var_pd(t1_, ia_, t3_);                              \
        const __m512d u2_ = _mm512_permutex2var_pd(t0_, ib_, t2_);                              \
        const __m512d u3_ = _mm512_permutex2var_pd(t1_, ib_, t3_);                              \
        const __m512d u4_ = _mm512_permutex2var_pd(t4_, ia_, t6_);                              \
        const __m512d u5_ = _mm512_permutex2var_pd(t5_, ia_, t7_);                              \
        const __m512d u6_ = _mm512_permutex2var_pd(t4_, ib_, t6_);                              \
        const __m512d u7_ = _mm512_permutex2var_pd(t5_, ib_, t7_);                              \
        c0 = _mm512_permutex2var_pd(u0_, ic_, u4_);                                             \
        c4 = _mm512_permutex2var_pd(u0_, id_, u4_);                                             \
        c1 = _mm512_permutex2var_pd(u1_, ic_, u5_);                                             \
        c5 = _mm512_permutex2var_pd(u1_, id_, u5_);                                             \
        c2 = _mm512_permutex2var_pd(u2_, ic_, u6_);                                             \
        c6 = _mm512_permutex2var_pd(u2_, id_, u6_);                                             \
        c3 = _mm512_permutex2var_pd(u3_, ic_, u7_);                                             \
        c7 = _mm512_permutex2var_pd(u3_, id_, u7_);                                             \
    } while (0)

/* A chunk partial's 13 order-sensitive sums from the merge vectors: S1 = (Σx², Σ(x̂−x)², Σx̂x,
 * Σx̂², signed error, level sums 0..2), S2 = (level sums 3..7, unused). */
FP4_AVX512 static inline __attribute__((always_inline)) void chunk_sums_store(fp4_metrics *m,
                                                                             __m512d S1,
                                                                             __m512d S2)
{
    double s1[8], s2[8];
    _mm512_storeu_pd(s1, S1);
    _mm512_storeu_pd(s2, S2);
    m->sum_x2 = s1[0], m->sum_err2 = s1[1], m->sum_xqx = s1[2], m->sum_xq2 = s1[3];
    m->signed_err_sum = s1[4];
    for (int i = 0; i < 3; i++) m->level_err_sum[i] = s1[5 + i];
    for (int i = 0; i < 5; i++) m->level_err_sum[3 + i] = s2[i];
}

/* One row of the grouped path on AVX-512: per group of GRP blocks the load (or the shared
 * cache's copy), the block parameters (fp32 in vector form; other modes per lane), the kernel,
 * and the block-order merge of the 13 block sums into the chunk partial, as vectors over the
 * sums (the 8x8 transposes turn lane b into column b: S = (((S + a_0) + a_1) + … ) + a_7, the
 * scalar order). The row's counts and amax (order-free) go to its first chunk partial. */
FP4_AVX512 static inline __attribute__((always_inline)) void
row_avx512_body(const fp4_qplan *p, const float *v, const grp_in *row, const float *tamax,
                uint8_t *scales, fp4_metrics *pr, grp_cnt *n, float *Tb, float *W, const int kind)
{
    const int B = p->block, nblk = p->nblk;
    const int fp32 = p->cfg.scale == FP4_SCALE_FP32;
    /* the kernel's level terms and indices, after W in the scratch (fp4_qplan_scratch_floats) */
    double *E = (double *)(void *)(((uintptr_t)(W + (int64_t)GRP * B) + 63) & ~(uintptr_t)63);
    int32_t *IX = (int32_t *)(void *)(E + (int64_t)GRP * ((B + 7) & ~7));
    const __m256 vgmax = _mm256_set1_ps(p->grid.gmax), zero_f = _mm256_setzero_ps();
    const __m256 one_f = _mm256_set1_ps(1.0f);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    uint64_t nblocks = 0, nbad = 0, nzero = 0, nuf = 0;
    __m256 tam = _mm256_setzero_ps();
    int chunk = -1;
    __m512d S1 = _mm512_setzero_pd(), S2 = S1;
    for (int k0 = 0; k0 < nblk; k0 += GRP) {
        const int nb = nblk - k0 < GRP ? nblk - k0 : GRP;
        if (k0 / FP4_CHUNK_BLOCKS != chunk) { /* GRP divides FP4_CHUNK_BLOCKS */
            if (chunk >= 0) chunk_sums_store(&pr[chunk], S1, S2);
            chunk = k0 / FP4_CHUNK_BLOCKS;
            const fp4_metrics *m = &pr[chunk];
            S1 = _mm512_setr_pd(m->sum_x2, m->sum_err2, m->sum_xqx, m->sum_xq2,
                                m->signed_err_sum, m->level_err_sum[0], m->level_err_sum[1],
                                m->level_err_sum[2]);
            S2 = _mm512_setr_pd(m->level_err_sum[3], m->level_err_sum[4], m->level_err_sum[5],
                                m->level_err_sum[6], m->level_err_sum[7], 0.0, 0.0, 0.0);
        }
        int jnv[GRP];
        float amb[GRP];
        int32_t akb[GRP], badb[GRP];
        const grp_in gi = group_at(p, v, row, k0, nb, load_avx512, Tb, W, amb, akb, badb, jnv);
        const float *T = gi.T, *am = gi.am;
        const int32_t *ak = gi.ak, *bad = gi.bad;
        float mul[GRP], dv[GRP], d1[GRP], d2[GRP];
        double se[GRP];
        int32_t jn[GRP], lv[GRP], uf[GRP];
        uint8_t sb[GRP];
        const __m256 vam = _mm256_loadu_ps(am);
        const __mmask8 okm = _mm256_cmplt_epi32_mask(lane, _mm256_set1_epi32(nb)) &
                             _mm256_testn_epi32_mask(_mm256_loadu_si256((const __m256i *)(const void *)bad),
                                                     _mm256_set1_epi32(-1));
        if (fp32) { /* fp4c_block_params' fp32 case: s = amax / g_max, the same IEEE quotient */
            const __m256 sv = _mm256_div_ps(vam, vgmax);
            const __mmask8 live = okm & _mm256_cmp_ps_mask(sv, zero_f, _CMP_GT_OQ);
            _mm256_storeu_ps(mul, _mm256_maskz_mov_ps(live, one_f));
            _mm256_storeu_ps(dv, _mm256_mask_blend_ps(live, one_f, sv));
            _mm256_storeu_ps(d1, _mm256_maskz_mov_ps(live, sv));
            _mm256_storeu_ps(d2, one_f);
            _mm512_storeu_pd(se, _mm512_mask_blend_pd(live, _mm512_set1_pd(1.0), _mm512_cvtps_pd(sv)));
            _mm256_storeu_si256((__m256i *)(void *)lv, _mm256_maskz_mov_epi32(live, _mm256_set1_epi32(1)));
            const __mmask8 ufm = okm & (__mmask8)~live & _mm256_cmp_ps_mask(vam, zero_f, _CMP_GT_OQ);
            _mm256_storeu_si256((__m256i *)(void *)uf, _mm256_maskz_mov_epi32(ufm, _mm256_set1_epi32(1)));
            _mm256_storeu_si256((__m256i *)(void *)jn, _mm256_maskz_loadu_epi32(okm, jnv));
            memset(sb, 0, sizeof sb);
        } else
            group_params_avx512(p, am, bad, tamax ? tamax + k0 : NULL, nb, jnv, mul, dv, d1, d2,
                                se, jn, lv, uf, sb);
        grp_acc a;
        const __mmask8 counted_lanes =
            _mm256_cmpgt_epi32_mask(_mm256_loadu_si256((const __m256i *)(const void *)jn),
                                    _mm256_setzero_si256());
        const __mmask8 ones = _mm256_cmp_ps_mask(_mm256_loadu_ps(mul), one_f, _CMP_EQ_OQ) &
                              _mm256_cmp_ps_mask(_mm256_loadu_ps(d2), one_f, _CMP_EQ_OQ);
        if ((counted_lanes & (__mmask8)~ones) == 0) /* fp32 and tensor scales, as a rule */
            group_avx512_body(p, T, mul, dv, d1, d2, se, jn, lv, ak, &a, n, E, IX, kind, 1);
        else
            group_avx512_body(p, T, mul, dv, d1, d2, se, jn, lv, ak, &a, n, E, IX, kind, 0);
        __m512d c0, c1, c2, c3, c4, c5, c6, c7;
        TRANSPOSE8_PD(_mm512_loadu_pd(a.sx2), _mm512_loadu_pd(a.se2), _mm512_loadu_pd(a.sxqx),
                      _mm512_loadu_pd(a.sxq2), _mm512_loadu_pd(a.serr),
                      _mm512_loadu_pd(a.lsum[0]), _mm512_loadu_pd(a.lsum[1]),
                      _mm512_loadu_pd(a.lsum[2]), c0, c1, c2, c3, c4, c5, c6, c7);
        S1 = _mm512_add_pd(_mm512_add_pd(_mm512_add_pd(_mm512_add_pd(S1, c0), c1), c2), c3);
        S1 = _mm512_add_pd(_mm512_add_pd(_mm512_add_pd(_mm512_add_pd(S1, c4), c5), c6), c7);
        const __m512d z = _mm512_setzero_pd();
        TRANSPOSE8_PD(_mm512_loadu_pd(a.lsum[3]), _mm512_loadu_pd(a.lsum[4]),
                      _mm512_loadu_pd(a.lsum[5]), _mm512_loadu_pd(a.lsum[6]),
                      _mm512_loadu_pd(a.lsum[7]), z, z, z, c0, c1, c2, c3, c4, c5, c6, c7);
        S2 = _mm512_add_pd(_mm512_add_pd(_mm512_add_pd(_mm512_add_pd(S2, c0), c1), c2), c3);
        S2 = _mm512_add_pd(_mm512_add_pd(_mm512_add_pd(_mm512_add_pd(S2, c4), c5), c6), c7);
        /* counts: blocks holding counted entries; of those the non-finite, zero and
         * underflowed ones; the amax over the finite ones */
        const __mmask8 cnt = _mm256_cmpgt_epi32_mask(_mm256_loadu_si256((const __m256i *)(const void *)jnv),
                                                     _mm256_setzero_si256()) &
                             _mm256_cmplt_epi32_mask(lane, _mm256_set1_epi32(nb));
        const __mmask8 fin = cnt & okm;
        nblocks += (uint64_t)__builtin_popcount(cnt);
        nbad += (uint64_t)__builtin_popcount(cnt & (__mmask8)~okm);
        nzero += (uint64_t)__builtin_popcount(fin & _mm256_cmp_ps_mask(vam, zero_f, _CMP_EQ_OQ));
        nuf += (uint64_t)__builtin_popcount(
            fin & _mm256_test_epi32_mask(_mm256_loadu_si256((const __m256i *)(const void *)uf),
                                         _mm256_set1_epi32(-1)));
        tam = _mm256_mask_max_ps(tam, fin, tam, vam);
        if (scales)
            for (int b = 0; b < nb; b++) scales[k0 + b] = bad[b] ? 0 : sb[b];
    }
    if (chunk >= 0) chunk_sums_store(&pr[chunk], S1, S2);
    float tv[8];
    _mm256_storeu_ps(tv, tam);
    float t = pr->tensor_amax;
    for (int b = 0; b < GRP; b++) t = tv[b] > t ? tv[b] : t;
    pr->tensor_amax = t;
    pr->blocks += nblocks;
    pr->nonfinite_blocks += nbad;
    pr->zero_blocks += nzero;
    pr->scale_underflow_blocks += nuf;
}

#define ROW_ARGS                                                                                \
    const fp4_qplan *p, const float *v, const grp_in *row, const float *tamax, uint8_t *scales, \
        fp4_metrics *pr, grp_cnt *n, float *Tb, float *W
#define ROW_PASS p, v, row, tamax, scales, pr, n, Tb, W
FP4_AVX512 static void row_avx512(ROW_ARGS)
{
    switch (p->grid.kind) {
    case FP4C_GRID_UNIFORM: row_avx512_body(ROW_PASS, FP4C_GRID_UNIFORM); break;
    case FP4C_GRID_E2M1: row_avx512_body(ROW_PASS, FP4C_GRID_E2M1); break;
    default: row_avx512_body(ROW_PASS, FP4C_GRID_GENERIC); break;
    }
}
#endif
typedef void (*group_fn)(GROUP_ARGS);
typedef void (*row_fn)(const fp4_qplan *p, const float *v, const grp_in *row,
                       const float *tamax, uint8_t *scales, fp4_metrics *pr, grp_cnt *n,
                       float *Tb, float *W);
typedef struct group_kernels {
    group_fn body;
    load_fn load;
    row_fn row; /* a whole row of groups, or NULL: group by group through group_quant */
} group_kernels;

/* The widest variant this CPU runs (all give the same bits), chosen once. */
static const group_kernels *group_choose(void)
{
    static const group_kernels plain = {group_plain, load_plain, NULL};
#ifdef FP4_HAVE_DISPATCH
    static const group_kernels avx2 = {group_avx2, load_avx2, NULL};
    /* avx512 runs whole rows (row_avx512); its per-group body is never called */
    static const group_kernels avx512 = {group_avx2, load_avx512, row_avx512};
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
        return &avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &avx2;
#endif
    return &plain;
}

static const group_kernels *group_pick(void)
{
    static const group_kernels *kern; /* every thread would store the same pointer */
    const group_kernels *k = __atomic_load_n(&kern, __ATOMIC_RELAXED);
    if (!k) {
        k = group_choose();
        __atomic_store_n(&kern, k, __ATOMIC_RELAXED);
    }
    return k;
}

/* nb <= GRP consecutive blocks of one row (all in one chunk), loaded by group_load into T,
 * am, ak, bad; jn[b] counted entries each, tile amax per block when weight_2d (else NULL);
 * accumulates into the chunk partial m in block order like nb calls of block_quant. */
static void group_quant(const fp4_qplan *p, const float *T, const float *am, const int32_t *ak,
                        const int32_t *bad, int nb, const int *jnv, const float *tile,
                        uint8_t *scale_out, fp4_metrics *m, grp_cnt *n)
{
    const group_kernels *kern = group_pick();
    float mul[GRP], dv[GRP], d1[GRP], d2[GRP];
    double se[GRP];
    int32_t jn[GRP], lv[GRP], uf[GRP];
    uint8_t sb[GRP];
    if (p->cfg.scale == FP4_SCALE_FP32) {
        /* fp4c_block_params' fp32 case, lane by lane in a loop the compiler vectorizes (the
         * same IEEE quotient); a lane that is past nb or non-finite is dead (jn 0) */
        const float gmax = p->grid.gmax;
        for (int b = 0; b < GRP; b++) {
            const int ok = b < nb && !bad[b];
            const float s = am[b] / gmax;
            const int live = ok && s > 0.0f;
            mul[b] = live ? 1.0f : 0.0f;
            dv[b] = live ? s : 1.0f;
            d1[b] = live ? s : 0.0f;
            d2[b] = 1.0f;
            se[b] = live ? (double)s : 1.0;
            lv[b] = live;
            uf[b] = ok && !live && am[b] > 0.0f;
            jn[b] = ok ? jnv[b] : 0;
            sb[b] = 0;
        }
    } else
        group_params(p, am, bad, tile, nb, jnv, mul, dv, d1, d2, se, jn, lv, uf, sb);
    grp_acc a;
    kern->body(p, T, mul, dv, d1, d2, se, jn, lv, ak, &a, n);
    /* block sums into the chunk partial in block order; the partial's sums are held in
     * locals (registers) across the blocks: the same additions in the same order. Every lane
     * is added: a lane with no counted entry (past nb, non-finite, or padding) holds +0.0 in
     * every sum, and adding +0.0 leaves a sum that starts at +0.0 unchanged (it is never
     * -0.0), so this is block_quant's sequence of additions */
    double l0 = m->level_err_sum[0], l1 = m->level_err_sum[1], l2 = m->level_err_sum[2],
           l3 = m->level_err_sum[3], l4 = m->level_err_sum[4], l5 = m->level_err_sum[5],
           l6 = m->level_err_sum[6], l7 = m->level_err_sum[7];
    double sx2 = m->sum_x2, se2 = m->sum_err2, sxqx = m->sum_xqx, sxq2 = m->sum_xq2,
           serr = m->signed_err_sum;
    for (int b = 0; b < GRP; b++) {
        l0 += a.lsum[0][b];
        l1 += a.lsum[1][b];
        l2 += a.lsum[2][b];
        l3 += a.lsum[3][b];
        l4 += a.lsum[4][b];
        l5 += a.lsum[5][b];
        l6 += a.lsum[6][b];
        l7 += a.lsum[7][b];
        sx2 += a.sx2[b];
        se2 += a.se2[b];
        sxqx += a.sxqx[b];
        sxq2 += a.sxq2[b];
        serr += a.serr[b];
    }
    uint64_t nblocks = 0, nbad = 0, nzero = 0, nuf = 0;
    float tam = m->tensor_amax;
    for (int b = 0; b < nb; b++) {
        const int cnt = jnv[b] > 0, fin = !bad[b];
        nblocks += (uint64_t)cnt;
        nbad += (uint64_t)(cnt & !fin);
        nzero += (uint64_t)(cnt & fin & (am[b] == 0.0f));
        nuf += (uint64_t)(cnt & fin & (uf[b] != 0));
        if (cnt & fin) tam = am[b] > tam ? am[b] : tam;
        if (scale_out) scale_out[b] = fin ? sb[b] : 0;
    }
    m->blocks += nblocks;
    m->nonfinite_blocks += nbad;
    m->zero_blocks += nzero;
    m->scale_underflow_blocks += nuf;
    m->tensor_amax = tam;
    m->level_err_sum[0] = l0;
    m->level_err_sum[1] = l1;
    m->level_err_sum[2] = l2;
    m->level_err_sum[3] = l3;
    m->level_err_sum[4] = l4;
    m->level_err_sum[5] = l5;
    m->level_err_sum[6] = l6;
    m->level_err_sum[7] = l7;
    m->sum_x2 = sx2;
    m->sum_err2 = se2;
    m->sum_xqx = sxqx;
    m->sum_xq2 = sxq2;
    m->signed_err_sum = serr;
}

/* a row of nblk blocks takes ceil(nblk / GRP) groups of GRP * B floats, and GRP lanes of
 * am/ak/bad per group */
static int64_t grpcache_row_T(int64_t max_padded_len, int max_block)
{
    return max_padded_len + (int64_t)(GRP - 1) * max_block;
}
static int64_t grpcache_row_g(int64_t max_padded_len, int min_block)
{
    return (max_padded_len / min_block + GRP - 1) / GRP * GRP;
}

int64_t fp4_grpcache_bytes(int rows, int64_t max_padded_len, int min_block, int max_block)
{
    if (rows < 1 || min_block < 1 || max_block < min_block) return 0;
    return (int64_t)rows * (grpcache_row_T(max_padded_len, max_block) * (int64_t)sizeof(float) +
                            grpcache_row_g(max_padded_len, min_block) * 12);
}

fp4_grpcache *fp4_grpcache_new(int rows, int64_t max_padded_len, int min_block, int max_block)
{
    if (rows < 1 || min_block < 1 || max_block < min_block) return NULL;
    fp4_grpcache *gc = calloc(1, sizeof *gc);
    if (!gc) return NULL;
    gc->rows = rows;
    gc->row_T = grpcache_row_T(max_padded_len, max_block);
    gc->row_g = grpcache_row_g(max_padded_len, min_block);
    gc->T = malloc((size_t)(rows * gc->row_T) * sizeof *gc->T + 1);
    gc->am = malloc((size_t)(rows * gc->row_g) * sizeof *gc->am + 1);
    gc->ak = malloc((size_t)(rows * gc->row_g) * sizeof *gc->ak + 1);
    gc->bad = malloc((size_t)(rows * gc->row_g) * sizeof *gc->bad + 1);
    gc->block = calloc((size_t)rows, sizeof *gc->block);
    if (!gc->T || !gc->am || !gc->ak || !gc->bad || !gc->block) {
        fp4_grpcache_free(gc);
        return NULL;
    }
    return gc;
}

void fp4_grpcache_free(fp4_grpcache *gc)
{
    if (!gc) return;
    free(gc->T);
    free(gc->am);
    free(gc->ak);
    free(gc->bad);
    free(gc->block);
    free(gc);
}

void fp4_grpcache_reset(fp4_grpcache *gc)
{
    if (gc) memset(gc->block, 0, (size_t)gc->rows * sizeof *gc->block);
}

void fp4_qplan_prep(const fp4_qplan *p, const float *in, int nr, float *v)
{
    const int64_t L = p->row_len, P = p->padded_len;
    for (int r = 0; r < nr; r++) {
        float *vr = v + (int64_t)r * P;
        const float *ir = in + (int64_t)r * L;
        /* the whole RHT groups are rotated straight from the input (no copy); the rest, the
         * last partial group and the padding, is copied, zero-padded and rotated in place */
        const int64_t whole = p->cfg.rht ? L / p->cfg.rht->n * p->cfg.rht->n : 0;
        if (whole > 0) fp4_rht_forward(p->cfg.rht, ir, vr, whole);
        memcpy(vr + whole, ir + whole, (size_t)(L - whole) * sizeof *vr);
        memset(vr + L, 0, (size_t)(P - L) * sizeof *vr);
        if (p->cfg.rht && P > whole) fp4_rht_forward(p->cfg.rht, vr + whole, vr + whole, P - whole);
    }
}

/* 32-bit counters over pieces of 2^20 elements vectorize twice as wide as 64-bit ones;
 * compiled for AVX-512, AVX2 and the baseline (the counts are exact in every variant). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void fp4_input_counts(const float *x, int64_t n, fp4_metrics *m)
{
    for (int64_t j0 = 0; j0 < n; j0 += (int64_t)1 << 20) {
        const int64_t e = n - j0 < ((int64_t)1 << 20) ? n - j0 : ((int64_t)1 << 20);
        const float *y = x + j0;
        uint32_t z = 0, nn = 0, ni = 0;
#pragma omp simd reduction(+ : z, nn, ni)
        for (int64_t j = 0; j < e; j++) {
            const uint32_t u = fp4c_f2u(y[j]) & 0x7FFFFFFFu;
            z += u == 0;
            nn += u > 0x7F800000u;
            ni += u == 0x7F800000u;
        }
        m->zero += z;
        m->nan += nn;
        m->inf += ni;
    }
}

void fp4_qplan_unit(const fp4_qplan *p, const float *in, int64_t grow, int nr, float *scratch,
                    float *deq, uint8_t *codes, uint8_t *scales, fp4_metrics *partials)
{
    for (int i = 0; i < nr * p->nchunk; i++) fp4_metrics_init(&partials[i]);
    fp4_qplan_prep(p, in, nr, scratch);
    for (int r = 0; r < nr; r++)
        fp4_input_counts(in + (int64_t)r * p->row_len, p->row_len, &partials[r * p->nchunk]);
    fp4_qplan_unit_prepared(p, scratch, grow, nr, scratch, deq, codes, scales, partials, NULL,
                            0);
}

void fp4_qplan_unit_prepared(const fp4_qplan *p, const float *vin, int64_t grow, int nr,
                             float *scratch, float *deq, uint8_t *codes, uint8_t *scales,
                             fp4_metrics *partials, fp4_grpcache *gc, int gc_row)
{
    const int64_t L = p->row_len, P = p->padded_len;
    const int B = p->block, nblk = p->nblk, nchunk = p->nchunk;
    float *tamax = scratch + (int64_t)p->unit_rows * P;
    /* the integer input counts are order-free: a row's go to its first chunk partial */
    for (int r = 0; r < nr; r++) {
        partials[r * nchunk].elements += (uint64_t)L;
        partials[r * nchunk].padded += (uint64_t)(P - L);
    }
    if (p->cfg.weight_2d) {
        for (int k = 0; k < nblk; k++) {
            float a = 0.0f;
            for (int r = 0; r < nr; r++) {
                const float *v = vin + (int64_t)r * P + (int64_t)k * B;
                for (int j = 0; j < B; j++) {
                    float y = fp4c_absf(v[j]);
                    if (fp4c_isfinite(y)) a = fp4c_maxf(a, y);
                }
            }
            tamax[k] = a;
        }
    }
    const bool grouped = p->cfg.rounding == FP4_ROUND_RTNE && !deq && !codes &&
                         B <= GRP_MAX_BLOCK;
    float *T = tamax + nblk, *W = T + (int64_t)GRP * B;
    const int64_t ngrp = (nblk + GRP - 1) / GRP;
    for (int r = 0; grouped && r < nr; r++) {
        const float *v = vin + (int64_t)r * P;
        fp4_metrics *pr = partials + (int64_t)r * nchunk;
        /* the row's groups from the shared cache (loaded there by the first config of this
         * preparation and block size), else loaded here one group at a time */
        const group_kernels *kern = group_pick();
        grp_in row = {NULL, NULL, NULL, NULL};
        if (gc) {
            const int gr = gc_row + r;
            float *rT = gc->T + (int64_t)gr * gc->row_T;
            float *ram = gc->am + (int64_t)gr * gc->row_g;
            int32_t *rak = gc->ak + (int64_t)gr * gc->row_g;
            int32_t *rbad = gc->bad + (int64_t)gr * gc->row_g;
            if (gc->block[gr] != B) {
                for (int64_t g = 0; g < ngrp; g++) {
                    const int k0 = (int)(g * GRP), nb = nblk - k0 < GRP ? nblk - k0 : GRP;
                    group_load(kern->load, B, v + (int64_t)k0 * B, nb, rT + g * GRP * B, W,
                               ram + g * GRP, rak + g * GRP, rbad + g * GRP);
                }
                gc->block[gr] = B;
            }
            row = (grp_in){rT, ram, rak, rbad};
        }
        grp_cnt n;
        memset(&n, 0, sizeof n);
        if (kern->row)
            kern->row(p, v, &row, p->cfg.weight_2d ? tamax : NULL,
                      scales ? scales + (int64_t)r * nblk : NULL, pr, &n, T, W);
        for (int k0 = 0; !kern->row && k0 < nblk; k0 += GRP) { /* GRP divides FP4_CHUNK_BLOCKS */
            const int nb = nblk - k0 < GRP ? nblk - k0 : GRP;
            int jn[GRP];
            float am[GRP];
            int32_t ak[GRP], bad[GRP];
            const grp_in gi = group_at(p, v, &row, k0, nb, kern->load, T, W, am, ak, bad, jn);
            group_quant(p, gi.T, gi.am, gi.ak, gi.bad, nb, jn,
                        p->cfg.weight_2d ? tamax + k0 : NULL,
                        scales ? scales + (int64_t)r * nblk + k0 : NULL,
                        &pr[k0 / FP4_CHUNK_BLOCKS], &n);
        }
        /* the row's integer counts (order-free) go to its first chunk partial */
        grp_cnt_flush(&n);
        uint64_t sat = 0;
        for (int b = 0; b < GRP; b++) sat += (uint64_t)n.sat[b];
        for (int k = 0; k < 8; k++) {
            pr->hist[k] += (uint64_t)n.pos[k];
            pr->hist[8 + k] += (uint64_t)n.neg[k];
            pr->level_count[k] += (uint64_t)n.lvl[k];
            pr->signed_err_n += (uint64_t)n.lvl[k];
        }
        pr->saturated += sat;
        if (p->cfg.scale == FP4_SCALE_MXFP4) pr->clipped += sat;
    }
    for (int r = 0; !grouped && r < nr; r++) {
        const float *v = vin + (int64_t)r * P;
        fp4_metrics *pr = partials + (int64_t)r * nchunk;
        const uint64_t rowidx = (uint64_t)(grow + r) * (uint64_t)P;
        for (int k = 0; k < nblk; k++) {
            const int64_t b0 = (int64_t)k * B;
            int64_t jn = p->counted_len - b0;
            if (jn > B) jn = B;
            if (jn < 0) jn = 0;
            block_quant(p, v + b0, (int)jn, p->cfg.weight_2d ? tamax[k] : 0.0f,
                        rowidx + (uint64_t)b0, deq ? deq + (int64_t)r * P + b0 : NULL,
                        codes ? codes + (int64_t)r * P + b0 : NULL,
                        scales ? scales + (int64_t)r * nblk + k : NULL,
                        &pr[k / FP4_CHUNK_BLOCKS]);
        }
    }
}

float fp4_amax_row(const fp4_qconfig *cfg, const float *row, int64_t row_len)
{
    float a = 0.0f;
    if (!cfg->rht) {
        for (int64_t j = 0; j < row_len; j++) {
            float y = fp4c_absf(row[j]);
            if (fp4c_isfinite(y)) a = fp4c_maxf(a, y);
        }
        return a;
    }
    const int n = cfg->rht->n;
    float buf[FP4_RHT_MAX];
    for (int64_t g0 = 0; g0 < row_len; g0 += n) {
        int64_t c = row_len - g0 < n ? row_len - g0 : n;
        memcpy(buf, row + g0, (size_t)c * sizeof *buf);
        for (int64_t j = c; j < n; j++) buf[j] = 0.0f;
        fp4_rht_forward(cfg->rht, buf, buf, n);
        for (int j = 0; j < n; j++) {
            float y = fp4c_absf(buf[j]);
            if (fp4c_isfinite(y)) a = fp4c_maxf(a, y);
        }
    }
    return a;
}

void fp4_amax_rows(const fp4_qconfig *cfg, const float *in, int64_t n_rows, int64_t row_len,
                   float *amax)
{
    for (int64_t r = 0; r < n_rows; r++) {
        float a = fp4_amax_row(cfg, in + r * row_len, row_len);
        if (a > *amax) *amax = a;
    }
}

fp4_status fp4_quantize_rows(const fp4_qconfig *cfg, float tensor_amax, const float *in,
                             int64_t row0, int64_t n_rows, int64_t row_len, fp4_qout *out,
                             struct fp4_metrics *m)
{
    fp4_qplan p;
    FP4_TRY(fp4_qplan_make(cfg, tensor_amax, row_len, &p));
    if (n_rows <= 0) return FP4_OK;
    /* Units (a row, or a 16-row tile row with weight_2d) run in parallel in batches; each writes
     * its own chunk partials, merged into *m in (row, chunk) order after the batch, so the
     * result does not depend on the thread count. A batch keeps at most QR_BATCH partials. */
    enum { QR_BATCH = 4096 };
    const int64_t U = p.unit_rows, per_unit = U * p.nchunk;
    const int64_t nunits = (n_rows + U - 1) / U;
    int64_t bu = QR_BATCH / per_unit;
    if (bu < 1) bu = 1;
    if (bu > nunits) bu = nunits;
    int T = bu > 1 ? omp_get_max_threads() : 1; /* one scratch per thread: no more than units */
    if (T > bu) T = (int)bu;
    if (T < 1) T = 1;
    float **scratch = calloc((size_t)T, sizeof *scratch);
    fp4_metrics *part = malloc((size_t)(bu * per_unit) * sizeof *part + 1);
    bool oom = !scratch || !part;
    for (int t = 0; !oom && t < T; t++) {
        scratch[t] = malloc((size_t)fp4_qplan_scratch_floats(&p) * sizeof(float) + 1);
        oom = !scratch[t];
    }
    for (int64_t u0 = 0; !oom && u0 < nunits; u0 += bu) {
        const int64_t nu = nunits - u0 < bu ? nunits - u0 : bu;
#pragma omp parallel for schedule(dynamic, 1) num_threads(T) if (nu > 1)
        for (int64_t k = 0; k < nu; k++) {
            const int64_t r = (u0 + k) * U;
            const int nr = (int)(n_rows - r < U ? n_rows - r : U);
            fp4_qplan_unit(&p, in + r * row_len, row0 + r, nr, scratch[omp_get_thread_num()],
                           out && out->deq ? out->deq + r * p.padded_len : NULL,
                           out && out->codes ? out->codes + r * p.padded_len : NULL,
                           out && out->scales ? out->scales + r * p.nblk : NULL,
                           part + k * per_unit);
        }
        for (int64_t k = 0; m && k < nu; k++) {
            const int64_t r = (u0 + k) * U;
            const int64_t nr = n_rows - r < U ? n_rows - r : U;
            for (int64_t i = 0; i < nr * p.nchunk; i++) fp4_metrics_merge(m, &part[k * per_unit + i]);
        }
    }
    if (!oom && m && fp4_needs_tensor_amax(cfg) && p.tensor_amax > m->tensor_amax)
        m->tensor_amax = p.tensor_amax;
    for (int t = 0; scratch && t < T; t++) free(scratch[t]);
    free(scratch);
    free(part);
    return oom ? fp4_error(FP4_ERR_INTERNAL, "quantize: out of memory") : FP4_OK;
}
