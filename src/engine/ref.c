/* ref.c — the scalar reference of the CPU engine (SPEC §2–§5, §7): one block's amax, scale,
 * rounding (RTNE, SR), decoded values, codes and fp64 sums in the documented order. The
 * source of truth every variant (and the GPU) reproduces bit for bit; it also serves SR and
 * the deq/codes outputs. */
#include <math.h>
#include <string.h>

#include "engine/engine_impl.h"

/* One block of one row: v[0..B) values (rotated when RHT), jn of them counted in the metrics,
 * scale from amax_s (own amax, or the 16x16 tile amax with weight_2d). */
void fp4_ref_block_quant(const fp4_qplan *p, const float *v, int jn, float amax_s, uint64_t idx0,
                         float *deq, uint8_t *codes, uint8_t *scale_out, fp4_metrics *m)
{
    const int B = p->block;
    const fp4c_grid *g = &p->grid;
    const float gmax = g->gmax;
    int amax_j, bad;
    const float amax_b = fp4_block_amax(v, B, &amax_j, &bad);
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

