/* quant.c — the scalar reference quantizer (SPEC §2–§4): config names, checks and padding, the
 * per-unit engine (rotate, scale, round, decode, per-chunk fp64 sums) shared with the CPU
 * backend, and fp4_quantize_rows / fp4_amax_rows on top of it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend_impl.h"
#include "common.h"
#include "metrics.h"
#include "quant.h"
#include "rht.h"

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
    return (int64_t)p->unit_rows * p->padded_len + p->nblk;
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

    /* t = (|x| * mul) / div; x̂ = (q * dec1) * dec2; s_eff: the decode scale for bias */
    float mul = 1.0f, div = 1.0f, dec1 = 0.0f, dec2 = 1.0f;
    double s_eff = 0.0;
    uint8_t sbyte = 0;
    int live = 0, underflow = 0;
    switch (p->cfg.scale) {
    case FP4_SCALE_FP32: {
        float s = amax_s / gmax;
        if (s > 0.0f) {
            div = s;
            dec1 = s;
            s_eff = s;
            live = 1;
        } else underflow = amax_s > 0.0f;
        break;
    }
    case FP4_SCALE_TENSOR:
        if (p->ts > 0.0f && amax_b > 0.0f) {
            div = p->ts;
            dec1 = p->ts;
            s_eff = p->ts;
            live = 1;
        } else underflow = amax_b > 0.0f;
        break;
    case FP4_SCALE_NVFP4: {
        /* TE's order throughout, also for e == 0: enc = FLT_MAX then saturates every non-zero
         * x to ±g_max — TE's codes — while the decode q · 0 · S_dec is 0 */
        uint8_t e = fp4c_e4m3_encode(fp4c_minf(amax_s * p->nv_m, FP4C_E4M3_MAX));
        float ef = fp4c_e4m3_decode(e);
        sbyte = e;
        mul = fp4c_minf(1.0f / (ef * p->nv_sdec), FP4C_FLT_MAX);
        dec1 = ef;
        dec2 = p->nv_sdec;
        s_eff = (double)(ef * p->nv_sdec);
        live = amax_b > 0.0f && s_eff > 0.0;
        underflow = amax_b > 0.0f && !live;
        break;
    }
    case FP4_SCALE_MXFP4: {
        sbyte = fp4c_e8m0_block(amax_b, g, p->cfg.mx_rule == FP4_MX_RCEIL);
        float X = fp4c_e8m0_decode(sbyte);
        if (amax_b > 0.0f) {
            mul = 1.0f / X; /* exact: X is a power of two in [2^-127, 2^127] */
            dec1 = X;
            s_eff = X;
            live = 1;
        }
        break;
    }
    default: break;
    }
    /* zero or underflowed block: every x̂ is ±0 (fp32/tensor/mxfp4: every t is 0 too) */
    if (!live && p->cfg.scale != FP4_SCALE_NVFP4) mul = 0.0f;
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

void fp4_qplan_unit(const fp4_qplan *p, const float *in, int64_t grow, int nr, float *scratch,
                    float *deq, uint8_t *codes, uint8_t *scales, fp4_metrics *partials)
{
    const int64_t L = p->row_len, P = p->padded_len;
    const int B = p->block, nblk = p->nblk, nchunk = p->nchunk;
    float *tamax = scratch + (int64_t)p->unit_rows * P;
    for (int i = 0; i < nr * nchunk; i++) fp4_metrics_init(&partials[i]);

    for (int r = 0; r < nr; r++) {
        const float *x = in + (int64_t)r * L;
        float *v = scratch + (int64_t)r * P;
        fp4_metrics *pr = partials + (int64_t)r * nchunk;
        memcpy(v, x, (size_t)L * sizeof *v);
        memset(v + L, 0, (size_t)(P - L) * sizeof *v);
        if (p->cfg.rht) fp4_rht_forward(p->cfg.rht, v, v, P);
        /* input counts: real elements, pads, zeros, NaN, ±Inf (before any rotation) */
        for (int k = 0; k < nblk; k++) {
            fp4_metrics *pm = &pr[k / FP4_CHUNK_BLOCKS];
            const int64_t b0 = (int64_t)k * B;
            int real = (int)(L - b0 < 0 ? 0 : (L - b0 < B ? L - b0 : B));
            uint64_t z = 0, nn = 0, ni = 0;
            for (int j = 0; j < real; j++) {
                const uint32_t u = fp4c_f2u(x[b0 + j]) & 0x7FFFFFFFu;
                z += u == 0;
                nn += u > 0x7F800000u;
                ni += u == 0x7F800000u;
            }
            pm->elements += (uint64_t)real;
            pm->padded += (uint64_t)(B - real);
            pm->zero += z;
            pm->nan += nn;
            pm->inf += ni;
        }
    }
    if (p->cfg.weight_2d) {
        for (int k = 0; k < nblk; k++) {
            float a = 0.0f;
            for (int r = 0; r < nr; r++) {
                const float *v = scratch + (int64_t)r * P + (int64_t)k * B;
                for (int j = 0; j < B; j++) {
                    float y = fp4c_absf(v[j]);
                    if (fp4c_isfinite(y)) a = fp4c_maxf(a, y);
                }
            }
            tamax[k] = a;
        }
    }
    for (int r = 0; r < nr; r++) {
        const float *v = scratch + (int64_t)r * P;
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
    float *scratch = malloc((size_t)fp4_qplan_scratch_floats(&p) * sizeof *scratch + 1);
    fp4_metrics *part = malloc((size_t)p.unit_rows * (size_t)p.nchunk * sizeof *part + 1);
    if (!scratch || !part) {
        free(scratch);
        free(part);
        return fp4_error(FP4_ERR_INTERNAL, "quantize: out of memory");
    }
    for (int64_t r = 0; r < n_rows; r += p.unit_rows) {
        int nr = (int)(n_rows - r < p.unit_rows ? n_rows - r : p.unit_rows);
        fp4_qplan_unit(&p, in + r * row_len, row0 + r, nr, scratch,
                       out && out->deq ? out->deq + r * p.padded_len : NULL,
                       out && out->codes ? out->codes + r * p.padded_len : NULL,
                       out && out->scales ? out->scales + r * p.nblk : NULL, part);
        if (m)
            for (int i = 0; i < nr * p.nchunk; i++) fp4_metrics_merge(m, &part[i]);
    }
    if (m && fp4_needs_tensor_amax(cfg) && p.tensor_amax > m->tensor_amax)
        m->tensor_amax = p.tensor_amax;
    free(scratch);
    free(part);
    return FP4_OK;
}
