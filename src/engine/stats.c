/* stats.c — the recipe statistics of SPEC §5.1 (underflows, saturation share, max abs error,
 * the relative-error histogram, the SQNR of the non-amax entries), Four over Six and the error
 * split: a pass after the variant's kernel, shared by every CPU variant, that rebuilds ref.c's
 * x̂ bit for bit, GRP blocks at a time in lanes. The avx2 and avx512 row kernels compute the
 * statistics and Four over Six in their own pass instead (fp4_engine.row_stats, row_fos; the
 * same bits), and the reference path and the other variants run these. */
#include <math.h>
#include <string.h>

#include "engine/engine_impl.h"

typedef int64_t v4l __attribute__((vector_size(32)));
_Static_assert(GRP == 8, "the max runs in two halves of 4 lanes");

/* The per-lane inputs of one group: lane b is block b (GRP consecutive blocks of one row, all
 * in one chunk); a lane past the row, without counted entries or holding a non-finite value is
 * dead (cnt 0). */
typedef struct st_lanes {
    float mul[GRP], dv[GRP], d1[GRP], d2[GRP];
    int32_t ak[GRP], cnt[GRP];
    float am[GRP];   /* the block's amax */
    uint8_t sb[GRP]; /* its stored scale byte (nvfp4, mxfp4) */
} st_lanes;


typedef uint8_t v8b __attribute__((vector_size(8)));

/* |x̂| of one lane vector of |x| = ax under RTNE, in ref.c's operations and order: t =
 * (|x|·mul)/dv clamped to gmax, the level found by the grid's midpoints (st: the steps between
 * levels, md: the midpoints; ties to even by > and >= in turn), then (q·d1)·d2. Shared by the
 * statistics, Four over Six and error-split passes so that all three quantize as the engine does. */
static inline FP4_ISA_INLINE void rtne_mag(v8f *aq, const v8f *ax, const v8f *vmul, const v8f *vdv,
                                          const v8f *gm, const v8f st[7], const v8f md[7],
                                          const v8f *vd1, const v8f *vd2, const int div)
{
    const v8i absm = (v8i){0} + 0x7FFFFFFF;
    /* div 0: every lane's dv is 1, and y / 1 = y */
    const v8f t = div ? (*ax * *vmul) / *vdv : *ax * *vmul;
    const v8i lt = t < *gm;
    const v8f tc = vf_bits(((v8i)t & lt) | ((v8i)*gm & ~lt));
    const v8i p0 = tc > md[0], p1 = tc >= md[1], p2 = tc > md[2], p3 = tc >= md[3],
              p4 = tc > md[4], p5 = tc >= md[5], p6 = tc > md[6];
    const v8f q = vf_bits((v8i)st[0] & p0) + vf_bits((v8i)st[1] & p1) +
                  vf_bits((v8i)st[2] & p2) + vf_bits((v8i)st[3] & p3) +
                  vf_bits((v8i)st[4] & p4) + vf_bits((v8i)st[5] & p5) + vf_bits((v8i)st[6] & p6);
    *aq = vf_bits((v8i)((q * *vd1) * *vd2) & absm);
}

/* RTNE, GRP lanes in GCC vectors (the grouped kernel's arithmetic, engine_impl.h): each lane's
 * sums run over its block in element order, one independent chain per lane; a lane adds +0.0
 * for an entry it does not count, which leaves a sum that starts at +0.0 unchanged (x² and
 * (x̂ − x)² are >= 0: never -0.0). T: the group transposed (T[j * GRP + b] = entry j of
 * block b, engine_impl.h's layout). q is the sum of the grid's steps over passed midpoints, x̂
 * = (q · dec1) · dec2 with x's sign: ref.c's bits. Compiled for AVX-512, AVX2 and the
 * baseline (the same IEEE operations, no contraction: the same bits). */
static inline FP4_ISA_INLINE int stats_rtne_body(const fp4_qplan *p, const float *T,
                                                 const st_lanes *ln, st_acc *o, uint64_t *rh)
{
    const int B = p->block;
    const fp4c_grid *g = &p->grid;
    v8f st[7], md[7];
    for (int i = 0; i < 7; i++) {
        const float s = g->q[i + 1] - g->q[i], m = g->mid[i];
        st[i] = (v8f){s, s, s, s, s, s, s, s};
        md[i] = (v8f){m, m, m, m, m, m, m, m};
    }
    const float gmax = g->gmax;
    const v8f gm = (v8f){gmax, gmax, gmax, gmax, gmax, gmax, gmax, gmax};
    v8f vmul, vdv, vd1, vd2;
    v8i vak, vcnt;
    memcpy(&vmul, ln->mul, sizeof vmul);
    memcpy(&vdv, ln->dv, sizeof vdv);
    memcpy(&vd1, ln->d1, sizeof vd1);
    memcpy(&vd2, ln->d2, sizeof vd2);
    memcpy(&vak, ln->ak, sizeof vak);
    memcpy(&vcnt, ln->cnt, sizeof vcnt);
    const v8i absm = (v8i){0} + 0x7FFFFFFF, sgnm = (v8i){0} + (int32_t)0x80000000u;
    const v8l absd = (v8l){0} + 0x7FFFFFFFFFFFFFFFll;
    const v8i onef = (v8i){0} + 0x3F800000, rtop = (v8i){0} + (FP4_RERR_BINS - 1);
    const v8f zf = {0};
    v8d sx2 = {0}, se2 = {0};
    v4l mlo = {0}, mhi = {0};
    v8i nz = {0}, uf = {0};
    uint8_t kb[GRP * 64]; /* the relative-error bins of the last entries, counted in bulk */
    int nk = 0;
    for (int j = 0; j < B; j++) {
        v8f x;
        memcpy(&x, T + (int64_t)j * GRP, sizeof x);
        const v8f ax = vf_bits((v8i)x & absm);
        v8f aq;
        rtne_mag(&aq, &ax, &vmul, &vdv, &gm, st, md, &vd1, &vd2, 1);
        const v8f xq = vf_bits((v8i)aq | ((v8i)x & sgnm));
        const v8i c = vcnt > j;
        const v8i na = c & (vak != j);
        const v8i nzc = c & (ax != zf);
        nz -= nzc;
        uf -= nzc & (aq == zf);
        const v8d dx = __builtin_convertvector(x, v8d), dq = __builtin_convertvector(xq, v8d);
        const v8d d = dq - dx;
        const v8l c64 = __builtin_convertvector(c, v8l), na64 = __builtin_convertvector(na, v8l);
        /* |d| of a counted entry, else +0, as bits: non-negative doubles order as their bits
         * do (an integer compare, which vectorizes where the double one did not) */
        const v8l adb = (v8l)d & absd & c64;
        v4l lo, hi; /* in halves of 4: a 64-bit compare AVX2 has (vpcmpgtq) */
        memcpy(&lo, &adb, sizeof lo);
        memcpy(&hi, (const char *)&adb + sizeof lo, sizeof hi);
        const v4l ulo = lo > mlo, uhi = hi > mhi;
        mlo = (lo & ulo) | (mlo & ~ulo);
        mhi = (hi & uhi) | (mhi & ~uhi);
        sx2 += vd_and(dx * dx, na64);
        se2 += vd_and(d * d, na64);
        /* the relative error fp32(|x̂ − x|) / |x| of the counted entries with x != 0 into its
         * bin (fp4_rerr_bin, in lanes: |x| replaced by 1 and 0 added elsewhere) */
        const v8f r = vf_bits((v8i)(xq - x) & absm) / vf_bits(((v8i)ax & nzc) | (onef & ~nzc));
        v8i rk = ((v8i)r >> 22) - FP4_RERR_BIAS;
        rk &= ~(rk < 1);
        const v8i top = rk > rtop;
        rk = (rk & ~top) | (rtop & top) | (~nzc & 128); /* 128: a lane that counts nothing */
        const v8b kb8 = __builtin_convertvector(rk, v8b);
        memcpy(kb + nk, &kb8, sizeof kb8);
        nk += GRP;
        if (nk == (int)sizeof kb) nk = fp4_rerr_count(rh, kb, nk);
    }
    fp4_rerr_count(rh, kb, nk);
    memcpy(o->sx2, &sx2, sizeof sx2);
    memcpy(o->se2, &se2, sizeof se2);
    memcpy(o->mx, &mlo, sizeof mlo);
    memcpy(o->mx + 4, &mhi, sizeof mhi);
    for (int b = 0; b < GRP; b++) {
        o->nz[b] = nz[b];
        o->uf[b] = uf[b];
    }
    return 0;
}
FP4_ISA_VARIANTS(FP4_ISA_SITE_QUANT, int, stats_rtne,
                 (const fp4_qplan *p, const float *T, const st_lanes *ln, st_acc *o,
                  uint64_t *rh),
                 (p, T, ln, o, rh))

/* SR: the same lanes in scalar code (each entry's own draw, fp4c_sr_uniform), q = q[k]. */
static void stats_sr(const fp4_qplan *p, const float *v, uint64_t idx0, const st_lanes *ln,
                     st_acc *o, uint64_t *rh)
{
    const int B = p->block;
    const fp4c_grid *g = &p->grid;
    for (int b = 0; b < GRP; b++) {
        double sx2 = 0.0, se2 = 0.0, mx = 0.0;
        int64_t nz = 0, uf = 0;
        for (int j = 0; j < ln->cnt[b]; j++) {
            const float xv = v[(int64_t)b * B + j];
            const float tc = fp4c_minf((fabsf(xv) * ln->mul[b]) / ln->dv[b], g->gmax);
            const uint64_t idx = idx0 + (uint64_t)((int64_t)b * B + j);
            const int k = fp4c_sr_index(
                g, tc, fp4c_sr_uniform(p->cfg.seed, idx, p->cfg.stream, p->cfg.sr_bits));
            const float aq = fabsf((g->q[k] * ln->d1[b]) * ln->d2[b]);
            const float xq = copysignf(aq, xv);
            const double dx = xv, d = (double)xq - dx;
            mx = fabs(d) > mx ? fabs(d) : mx;
            nz += xv != 0.0f;
            if (xv != 0.0f) rh[fp4_rerr_bin(fabsf(xq - xv), fabsf(xv))]++;
            uf += xv != 0.0f && aq == 0.0f;
            if (j != ln->ak[b]) {
                sx2 += dx * dx;
                se2 += d * d;
            }
        }
        o->sx2[b] = sx2, o->se2[b] = se2, o->mx[b] = mx, o->nz[b] = nz, o->uf[b] = uf;
    }
}

void fp4_stats_group_merge(const fp4_qplan *p, const float *am, const uint8_t *sb,
                           const int32_t *cnt, const st_acc *o, fp4_metrics *m, fp4_metrics *m0)
{
    /* the block-scale histograms (exact counts) into the row's first chunk partial m0 */
    const int scaled = p->cfg.scale == FP4_SCALE_NVFP4 || p->cfg.scale == FP4_SCALE_MXFP4;
    for (int b = 0; b < GRP; b++) {
        if (cnt[b] <= 0) continue;
        m0->hist_blocks++;
        m0->amax_hist[fp4_amax_bin(am[b])]++;
        if (scaled && am[b] > 0.0f) m0->scale_hist[sb[b]]++;
    }
    double tx2 = m->sum_x2_na, te2 = m->sum_err2_na, tmx = m->max_abs_err;
    uint64_t tnz = 0, tuf = 0, nblk = 0, ncnt = 0;
    for (int b = 0; b < GRP; b++) {
        if (cnt[b] <= 0) continue;
        nblk++;
        ncnt += (uint64_t)cnt[b];
        tx2 += o->sx2[b];
        te2 += o->se2[b];
        tmx = o->mx[b] > tmx ? o->mx[b] : tmx;
        tnz += (uint64_t)o->nz[b];
        tuf += (uint64_t)o->uf[b];
    }
    m->sum_x2_na = tx2;
    m->sum_err2_na = te2;
    m->max_abs_err = tmx;
    m->st_blocks += nblk;
    m->st_count += ncnt;
    m->st_nonzero += tnz;
    m->underflows += tuf;
}

/* the lanes' statistics: a lane lives when it has counted entries (cnt > 0) */
static void stats_merge(const fp4_qplan *p, const st_lanes *ln, const st_acc *o, fp4_metrics *m,
                        fp4_metrics *m0)
{
    fp4_stats_group_merge(p, ln->am, ln->sb, ln->cnt, o, m, m0);
}

/* Any config (SR, any block size): nb <= GRP consecutive blocks of one row at v, jn[b]
 * counted entries each, tile amax per block with weight_2d (else NULL), SR index of the first
 * entry idx0; T: GRP * block floats of scratch (RTNE: the group transposed). */
static void group_stats(const fp4_qplan *p, const float *v, int nb, const int *jn,
                        const float *tile, uint64_t idx0, float *T, fp4_metrics *m,
                        fp4_metrics *m0)
{
    const int B = p->block;
    st_lanes ln;
    for (int b = 0; b < GRP; b++) {
        int a = 0, bad = 1;
        float amax_b = 0.0f;
        if (b < nb && jn[b] > 0) amax_b = fp4_block_amax(v + (int64_t)b * B, B, &a, &bad);
        blk_par bp = {1.0f, 1.0f, 0.0f, 1.0f, 0.0, 0, 0, 0};
        if (!bad) {
            const float amax_s =
                p->cfg.scale == FP4_SCALE_NVFP4 && p->cfg.weight_2d ? tile[b] : amax_b;
            block_params(p, amax_b, amax_s, &bp);
        }
        ln.mul[b] = bp.mul, ln.dv[b] = bp.div, ln.d1[b] = bp.dec1, ln.d2[b] = bp.dec2;
        ln.ak[b] = a;
        ln.cnt[b] = bad ? 0 : jn[b];
        ln.am[b] = amax_b;
        ln.sb[b] = bp.sbyte;
    }
    st_acc o;
    if (p->cfg.rounding == FP4_ROUND_SR) stats_sr(p, v, idx0, &ln, &o, m0->rerr_hist);
    else {
        for (int j = 0; j < B; j++) /* lanes past nb: zeros */
            for (int b = 0; b < GRP; b++) T[(int64_t)j * GRP + b] = b < nb ? v[(int64_t)b * B + j] : 0.0f;
        stats_rtne(p, T, &ln, &o, m0->rerr_hist);
    }
    stats_merge(p, &ln, &o, m, m0);
}

/* The grouped path's inputs (RTNE, block <= GRP_MAX_BLOCK): the group as the kernel read it
 * (gi: transposed blocks, per-lane amax, its first index, the non-finite flag) and the
 * kernel's per-lane parameters (group_params / group_params_fp32: the same block_params). */
static void group_stats_grouped(const fp4_qplan *p, const grp_in *gi, int nb, const int *jnv,
                                const float *tile, fp4_metrics *m, fp4_metrics *m0)
{
    float dv[GRP], mul[GRP], d1[GRP], d2[GRP];
    double se[GRP];
    int32_t jn[GRP], lv[GRP], uf[GRP];
    uint8_t sb[GRP];
    if (p->cfg.scale == FP4_SCALE_FP32)
        group_params_fp32(p, gi->am, gi->bad, nb, jnv, mul, dv, d1, d2, se, jn, lv, uf, sb);
    else
        group_params(p, gi->am, gi->bad, tile, nb, jnv, mul, dv, d1, d2, se, jn, lv, uf, sb);
    st_lanes ln;
    for (int b = 0; b < GRP; b++) { /* jn: the counted entries of a finite block, else 0 */
        ln.mul[b] = mul[b], ln.dv[b] = dv[b], ln.d1[b] = d1[b], ln.d2[b] = d2[b];
        ln.ak[b] = gi->ak[b];
        ln.cnt[b] = jn[b];
        ln.am[b] = gi->am[b];
        ln.sb[b] = sb[b];
    }
    st_acc o;
    stats_rtne(p, gi->T, &ln, &o, m0->rerr_hist);
    stats_merge(p, &ln, &o, m, m0);
}

void fp4_row_stats_grouped(const fp4_qplan *p, const float *v, const grp_in *row,
                           const float *tamax, load_fn load, float *Tb, float *W,
                           fp4_metrics *pr)
{
    const int nblk = p->nblk;
    for (int k0 = 0; k0 < nblk; k0 += GRP) { /* GRP divides FP4_CHUNK_BLOCKS */
        const int nb = nblk - k0 < GRP ? nblk - k0 : GRP;
        int jnv[GRP];
        float amb[GRP];
        int32_t akb[GRP], badb[GRP];
        const grp_in gi = group_at(p, v, row, k0, nb, load, Tb, W, amb, akb, badb, jnv);
        group_stats_grouped(p, &gi, nb, jnv, tamax ? tamax + k0 : NULL,
                            &pr[k0 / FP4_CHUNK_BLOCKS], pr);
    }
}

void fp4_row_stats(const fp4_qplan *p, const float *v, const float *tamax, uint64_t rowidx,
                   float *w, fp4_metrics *pr)
{
    const int B = p->block, nblk = p->nblk;
    for (int k0 = 0; k0 < nblk; k0 += GRP) { /* GRP divides FP4_CHUNK_BLOCKS */
        const int nb = nblk - k0 < GRP ? nblk - k0 : GRP;
        int jn[GRP];
        for (int b = 0; b < GRP; b++) {
            int64_t c = b < nb ? p->counted_len - (int64_t)(k0 + b) * B : 0;
            jn[b] = (int)(c > B ? B : (c < 0 ? 0 : c));
        }
        group_stats(p, v + (int64_t)k0 * B, nb, jn, tamax ? tamax + k0 : NULL,
                    rowidx + (uint64_t)((int64_t)k0 * B), w, &pr[k0 / FP4_CHUNK_BLOCKS], pr);
    }
}

/* ---- Four over Six (SPEC §5.1) --------------------------------------------------------------
 * Per finite block with counted entries (nvfp4 + e2m1 + RTNE: fp4_fos_applies), the error of
 * the config's x̂ (the block's amax scaled to 6: block_params) and of the same block scaled to
 * 4 instead: the E4M3 byte of min(amax_s · (S_enc · 0.25), 448) under the same tensor scale
 * (block_params with nv_m4 for nv_m), then the same RTNE on the e2m1 grid (values up to 6 can
 * still occur where the byte rounded down). Both errors Σ(x̂ − x)² over the block's counted
 * entries, fp64 from +0.0 in element order (lanes as stats_rtne_body: a lane adds +0.0 for an
 * entry it does not count). */
static inline FP4_ISA_INLINE int fos_rtne_body(const fp4_qplan *p, const float *T,
                                               const float *am, const int32_t *bad, int nb,
                                               const int *jnv, const float *tile, int32_t *cnt,
                                               double *e6, double *e4, const int six)
{
    /* the lanes' parameters for the scale to 6 ([0], the config's) and to 4 ([1]), in vectors
     * (group_params_nv: block_params' bits); div is 1 in every lane, so t = |x| · mul (the
     * division by 1 is exact and left out); a lane without counted entries adds +0.0. six 0:
     * e6 is not computed (the row kernel's sums give it) */
    float mul[2][GRP], dv[GRP], d1[2][GRP], d2[2][GRP];
    double se[GRP];
    int32_t jn[GRP], lv[GRP], uf[GRP];
    uint8_t sb[GRP];
    if (six)
        group_params_nv(p, am, bad, tile, nb, jnv, p->nv_m, mul[0], dv, d1[0], d2[0], se, jn, lv,
                        uf, sb);
    group_params_nv(p, am, bad, tile, nb, jnv, p->nv_m4, mul[1], dv, d1[1], d2[1], se, jn, lv,
                    uf, sb);
    memcpy(cnt, jn, sizeof jn);
    const int B = p->block;
    const fp4c_grid *g = &p->grid;
    v8f st[7], md[7];
    for (int i = 0; i < 7; i++) {
        const float s = g->q[i + 1] - g->q[i], m = g->mid[i];
        st[i] = (v8f){s, s, s, s, s, s, s, s};
        md[i] = (v8f){m, m, m, m, m, m, m, m};
    }
    const float gmax = g->gmax;
    const v8f gm = (v8f){gmax, gmax, gmax, gmax, gmax, gmax, gmax, gmax};
    const v8f one = gm * 0.0f + 1.0f;
    v8f vmul[2], vd1[2], vd2[2];
    v8i vcnt;
    for (int k = !six; k < 2; k++) {
        memcpy(&vmul[k], mul[k], sizeof vmul[k]);
        memcpy(&vd1[k], d1[k], sizeof vd1[k]);
        memcpy(&vd2[k], d2[k], sizeof vd2[k]);
    }
    memcpy(&vcnt, jn, sizeof vcnt);
    const v8i absm = (v8i){0} + 0x7FFFFFFF, sgnm = (v8i){0} + (int32_t)0x80000000u;
    v8d se6 = {0}, se4 = {0};
    for (int j = 0; j < B; j++) {
        v8f x;
        memcpy(&x, T + (int64_t)j * GRP, sizeof x);
        const v8f ax = vf_bits((v8i)x & absm);
        const v8i c = vcnt > j;
        const v8l c64 = __builtin_convertvector(c, v8l);
        const v8d dx = __builtin_convertvector(x, v8d);
        v8f aq4;
        if (six) {
            v8f aq6;
            rtne_mag(&aq6, &ax, &vmul[0], &one, &gm, st, md, &vd1[0], &vd2[0], 0);
            const v8d d6 = __builtin_convertvector(vf_bits((v8i)aq6 | ((v8i)x & sgnm)), v8d) - dx;
            se6 += vd_and(d6 * d6, c64);
        }
        rtne_mag(&aq4, &ax, &vmul[1], &one, &gm, st, md, &vd1[1], &vd2[1], 0);
        const v8d d4 = __builtin_convertvector(vf_bits((v8i)aq4 | ((v8i)x & sgnm)), v8d) - dx;
        se4 += vd_and(d4 * d4, c64);
    }
    if (six) memcpy(e6, &se6, sizeof se6);
    memcpy(e4, &se4, sizeof se4);
    return 0;
}
/* both scales, and the scale to 4 alone (e6 from the row kernel) */
static inline FP4_ISA_INLINE int fos64_rtne_body(const fp4_qplan *p, const float *T,
                                                 const float *am, const int32_t *bad, int nb,
                                                 const int *jnv, const float *tile, int32_t *cnt,
                                                 double *e6, double *e4)
{
    return fos_rtne_body(p, T, am, bad, nb, jnv, tile, cnt, e6, e4, 1);
}
FP4_ISA_VARIANTS(FP4_ISA_SITE_QUANT, int, fos64_rtne,
                 (const fp4_qplan *p, const float *T, const float *am, const int32_t *bad, int nb,
                  const int *jnv, const float *tile, int32_t *cnt, double *e6, double *e4),
                 (p, T, am, bad, nb, jnv, tile, cnt, e6, e4))
static inline FP4_ISA_INLINE int fos4_rtne_body(const fp4_qplan *p, const float *T,
                                                const float *am, const int32_t *bad, int nb,
                                                const int *jnv, const float *tile, int32_t *cnt,
                                                double *e4)
{
    return fos_rtne_body(p, T, am, bad, nb, jnv, tile, cnt, NULL, e4, 0);
}
FP4_ISA_VARIANTS(FP4_ISA_SITE_QUANT, int, fos4_rtne,
                 (const fp4_qplan *p, const float *T, const float *am, const int32_t *bad, int nb,
                  const int *jnv, const float *tile, int32_t *cnt, double *e4),
                 (p, T, am, bad, nb, jnv, tile, cnt, e4))

/* One group: nb <= GRP blocks transposed in T (lanes past nb zeros), each block's amax am[b]
 * over finite values and non-finite flag bad[b], jnv[b] counted entries, the tile amax per
 * block with weight_2d (else NULL), bse: the blocks' Σ(x̂ − x)² from the row kernel (the
 * scale to 6's error) or NULL; the blocks' choices into the chunk partial m in block order. */
static void fos_group(const fp4_qplan *p, const float *T, const float *am, const int32_t *bad,
                      int nb, const int *jnv, const float *tile, const double *bse,
                      fp4_metrics *m)
{
    double e6[GRP], e4[GRP];
    int32_t cnt[GRP];
    if (bse) {
        fos4_rtne(p, T, am, bad, nb, jnv, tile, cnt, e4);
        for (int b = 0; b < GRP; b++) e6[b] = b < nb ? bse[b] : 0.0;
    } else
        fos64_rtne(p, T, am, bad, nb, jnv, tile, cnt, e6, e4);
    fp4_fos_group_merge(e6, e4, cnt, m);
}

/* ---- the error split (SPEC §5.1) --------------------------------------------------------------
 * Per finite block with counted entries (RTNE), each entry's x̂ as the config gives it (the
 * lane arithmetic of stats_rtne_body) and x̃: |x| · r* (fp64, r* = g_max / amax_s) clamped to
 * g_max, rounded on the grid (RTNE, ties to the even code, fp64 compares with the grid's
 * midpoints), times s* = amax_s / g_max (fp64), with x's sign; amax_s the amax the config's
 * scale is computed from (the block's, the 16x16 tile's with weight_2d, the tensor's for
 * tensor scales); r* = s* = 0 where amax_s is 0. Entries with x != 0 and x̂ == 0 add x² to
 * the flushed sum, the others (x̂ − x̃)², (x̃ − x)² and (x̂ − x̃)(x̃ − x), fp64 from +0.0 in
 * element order. */
typedef struct split_lanes {
    float mul[GRP], dv[GRP], d1[GRP], d2[GRP];
    double rs[GRP], ss[GRP];
    int32_t cnt[GRP];
} split_lanes;

typedef struct split_out {
    double fl[GRP], sc[GRP], gr[GRP], cr[GRP];
} split_out;

static inline FP4_ISA_INLINE int split_rtne_body(const fp4_qplan *p, const float *T,
                                                 const split_lanes *ln, split_out *o)
{
    const int B = p->block;
    const fp4c_grid *g = &p->grid;
    v8f st[7], md[7];
    v8d sd[7], mdd[7];
    for (int i = 0; i < 7; i++) {
        const float s = g->q[i + 1] - g->q[i], m = g->mid[i];
        st[i] = (v8f){s, s, s, s, s, s, s, s};
        md[i] = (v8f){m, m, m, m, m, m, m, m};
        sd[i] = (v8d){0} + (double)s;
        mdd[i] = (v8d){0} + (double)m;
    }
    const float gmax = g->gmax;
    const v8f gm = (v8f){gmax, gmax, gmax, gmax, gmax, gmax, gmax, gmax};
    const v8d gmd = (v8d){0} + (double)gmax;
    v8f vmul, vdv, vd1, vd2;
    v8d vrs, vss;
    v8i vcnt;
    memcpy(&vmul, ln->mul, sizeof vmul);
    memcpy(&vdv, ln->dv, sizeof vdv);
    memcpy(&vd1, ln->d1, sizeof vd1);
    memcpy(&vd2, ln->d2, sizeof vd2);
    memcpy(&vrs, ln->rs, sizeof vrs);
    memcpy(&vss, ln->ss, sizeof vss);
    memcpy(&vcnt, ln->cnt, sizeof vcnt);
    const v8i absm = (v8i){0} + 0x7FFFFFFF, sgnm = (v8i){0} + (int32_t)0x80000000u;
    const v8l sgnd = (v8l){0} + (int64_t)0x8000000000000000ull;
    const v8f zf = {0};
    v8d fl = {0}, sc = {0}, gr = {0}, cr = {0};
    for (int j = 0; j < B; j++) {
        v8f x;
        memcpy(&x, T + (int64_t)j * GRP, sizeof x);
        const v8f ax = vf_bits((v8i)x & absm);
        v8f aq;
        rtne_mag(&aq, &ax, &vmul, &vdv, &gm, st, md, &vd1, &vd2, 1);
        const v8f xq = vf_bits((v8i)aq | ((v8i)x & sgnm));
        const v8i c = vcnt > j;
        const v8i f = c & (ax != zf) & (aq == zf);
        const v8l f64 = __builtin_convertvector(f, v8l), k64 = __builtin_convertvector(c & ~f, v8l);
        const v8d dx = __builtin_convertvector(x, v8d), dq = __builtin_convertvector(xq, v8d);
        const v8d dax = __builtin_convertvector(ax, v8d);
        const v8d ts = dax * vrs;
        const v8l lt2 = ts < gmd;
        const v8d tcs = (v8d)(((v8l)ts & lt2) | ((v8l)gmd & ~lt2));
        const v8l r0 = tcs > mdd[0], r1 = tcs >= mdd[1], r2 = tcs > mdd[2], r3 = tcs >= mdd[3],
                  r4 = tcs > mdd[4], r5 = tcs >= mdd[5], r6 = tcs > mdd[6];
        const v8d qs = vd_and(sd[0], r0) + vd_and(sd[1], r1) + vd_and(sd[2], r2) +
                       vd_and(sd[3], r3) + vd_and(sd[4], r4) + vd_and(sd[5], r5) +
                       vd_and(sd[6], r6);
        const v8d xt = (v8d)((v8l)(qs * vss) | ((v8l)dx & sgnd));
        const v8d a = dq - xt, b = xt - dx;
        fl += vd_and(dx * dx, f64);
        sc += vd_and(a * a, k64);
        gr += vd_and(b * b, k64);
        cr += vd_and(a * b, k64);
    }
    memcpy(o->fl, &fl, sizeof fl);
    memcpy(o->sc, &sc, sizeof sc);
    memcpy(o->gr, &gr, sizeof gr);
    memcpy(o->cr, &cr, sizeof cr);
    return 0;
}
FP4_ISA_VARIANTS(FP4_ISA_SITE_QUANT, int, split_rtne,
                 (const fp4_qplan *p, const float *T, const split_lanes *ln, split_out *o),
                 (p, T, ln, o))

/* One group (as fos_group): the split's block sums into the chunk partial m in block order. */
static void split_group(const fp4_qplan *p, const float *T, const float *am, const int32_t *bad,
                        int nb, const int *jnv, const float *tile, fp4_metrics *m)
{
    split_lanes ln;
    double se[GRP];
    int32_t jn[GRP], lv[GRP], uf[GRP];
    uint8_t sb[GRP];
    if (p->cfg.scale == FP4_SCALE_FP32)
        group_params_fp32(p, am, bad, nb, jnv, ln.mul, ln.dv, ln.d1, ln.d2, se, jn, lv, uf, sb);
    else
        group_params(p, am, bad, tile, nb, jnv, ln.mul, ln.dv, ln.d1, ln.d2, se, jn, lv, uf, sb);
    const double gmax = p->grid.gmax;
    for (int b = 0; b < GRP; b++) {
        const float as = p->cfg.scale == FP4_SCALE_TENSOR                       ? p->tensor_amax
                         : p->cfg.scale == FP4_SCALE_NVFP4 && p->cfg.weight_2d ? tile[b]
                                                                                : am[b];
        const int ok = jn[b] > 0 && as > 0.0f;
        ln.rs[b] = ok ? gmax / (double)as : 0.0;
        ln.ss[b] = ok ? (double)as / gmax : 0.0;
        ln.cnt[b] = jn[b] > 0 ? jn[b] : 0;
    }
    split_out o;
    split_rtne(p, T, &ln, &o);
    double fl = m->split_flush, sc = m->split_scale, gr = m->split_grid, cr = m->split_cross;
    uint64_t n = 0;
    for (int b = 0; b < GRP; b++) {
        if (ln.cnt[b] <= 0) continue;
        n++;
        fl += o.fl[b];
        sc += o.sc[b];
        gr += o.gr[b];
        cr += o.cr[b];
    }
    m->split_flush = fl, m->split_scale = sc, m->split_grid = gr, m->split_cross = cr;
    m->split_blocks += n;
}

static void extra_group(const fp4_qplan *p, const float *T, const float *am, const int32_t *bad,
                        int nb, const int *jnv, const float *tile, const double *bse,
                        fp4_metrics *m, int what)
{
    if (what & FP4_XS_FOS) fos_group(p, T, am, bad, nb, jnv, tile, bse, m);
    if (what & FP4_XS_SPLIT) split_group(p, T, am, bad, nb, jnv, tile, m);
}

int fp4_row_extra_what(const fp4_qplan *p)
{
    return (fp4_fos_applies(&p->cfg) ? FP4_XS_FOS : 0) |
           (fp4_split_applies(&p->cfg) ? FP4_XS_SPLIT : 0);
}

void fp4_row_extra_grouped(const fp4_qplan *p, const float *v, const grp_in *row,
                           const float *tamax, load_fn load, float *Tb, float *W, fp4_metrics *pr,
                           int what, const double *bse)
{
    const int nblk = p->nblk;
    for (int k0 = 0; k0 < nblk; k0 += GRP) { /* GRP divides FP4_CHUNK_BLOCKS */
        const int nb = nblk - k0 < GRP ? nblk - k0 : GRP;
        int jnv[GRP];
        float amb[GRP];
        int32_t akb[GRP], badb[GRP];
        const grp_in gi = group_at(p, v, row, k0, nb, load, Tb, W, amb, akb, badb, jnv);
        extra_group(p, gi.T, gi.am, gi.bad, nb, jnv, tamax ? tamax + k0 : NULL,
                    bse ? bse + k0 : NULL, &pr[k0 / FP4_CHUNK_BLOCKS], what);
    }
}

void fp4_row_extra(const fp4_qplan *p, const float *v, const float *tamax, float *w,
                   fp4_metrics *pr, int what)
{
    const int B = p->block, nblk = p->nblk;
    for (int k0 = 0; k0 < nblk; k0 += GRP) {
        const int nb = nblk - k0 < GRP ? nblk - k0 : GRP;
        int jn[GRP];
        float am[GRP];
        int32_t bad[GRP];
        for (int b = 0; b < GRP; b++) {
            const int64_t c = b < nb ? p->counted_len - (int64_t)(k0 + b) * B : 0;
            jn[b] = (int)(c > B ? B : (c < 0 ? 0 : c));
            int a = 0, nf = 0;
            am[b] = b < nb ? fp4_block_amax(v + (int64_t)(k0 + b) * B, B, &a, &nf) : 0.0f;
            bad[b] = b < nb ? nf : 0;
        }
        for (int j = 0; j < B; j++) /* lanes past nb: zeros */
            for (int b = 0; b < GRP; b++)
                w[(int64_t)j * GRP + b] = b < nb ? v[(int64_t)(k0 + b) * B + j] : 0.0f;
        extra_group(p, w, am, bad, nb, jn, tamax ? tamax + k0 : NULL, NULL,
                    &pr[k0 / FP4_CHUNK_BLOCKS], what);
    }
}
