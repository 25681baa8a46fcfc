/* x86.c — the x86-64 variants of the CPU engine: avx2 (AVX2 + FMA: the grouped kernel with
 * Markstein's corrected quotient) and avx512 (whole rows with mask registers: row_avx512).
 * Compiled per function with target attributes, chosen at run time (engine.c). */
#include "engine/engine_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define FP4_AVX2 FP4_TARGET_AVX2 /* base/isa.h */
#define FP4_AVX512 FP4_TARGET_AVX512
#define RNE_IMM (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC) /* explicit, not MXCSR */
FP4_AVX2 static void group_avx2(GROUP_ARGS) { group_body(GROUP_PASS, 1); }
/* The 8x8 tile of elements j0..j0+7 of the 8 blocks at v (block length B) transposed in
 * registers (unpack, shuffle, lane permute) instead of 64 strided scalar loads: c[i] holds
 * element j0 + i of blocks 0..7. Shared by load_avx2 and load_avx512. The loops here and over
 * c[] in the loaders are unrolled (pragma) so that the arrays live in registers: rolled, gcc
 * -O2 kept r, t, u and c on the stack, a store and a reload per step. */
FP4_AVX2 static inline __attribute__((always_inline)) void tile8_transpose(const float *v, int B,
                                                                            int j0, __m256 c[8])
{
    __m256 r[8], t[8], u[8];
#pragma GCC unroll 8
    for (int b = 0; b < 8; b++) r[b] = _mm256_loadu_ps(v + (int64_t)b * B + j0);
#pragma GCC unroll 8
    for (int b = 0; b < 8; b += 2) {
        t[b] = _mm256_unpacklo_ps(r[b], r[b + 1]);
        t[b + 1] = _mm256_unpackhi_ps(r[b], r[b + 1]);
    }
#pragma GCC unroll 8
    for (int h = 0; h < 8; h += 4) { /* rows h..h+3: columns (0|4), (1|5), (2|6), (3|7) */
        u[h] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
        u[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xEE);
        u[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
        u[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xEE);
    }
#pragma GCC unroll 8
    for (int i = 0; i < 4; i++) {
        c[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        c[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

/* group_load_body for block sizes that are multiples of 8, on AVX2: 8x8 tiles transposed in
 * registers (tile8_transpose) and the same column-order scan with vector masks. */
FP4_AVX2 static void load_avx2(LOAD_ARGS)
{
    if (B % 8) {
        group_load_body(LOAD_PASS);
        return;
    }
    const __m256 fmax = _mm256_set1_ps(FP4C_FLT_MAX);
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    __m256 a = _mm256_setzero_ps(), nf = a;
    __m256 k = a; /* int32 lanes, blended as floats (bit moves only) */
    for (int j0 = 0; j0 < B; j0 += 8) {
        __m256 c[8];
        tile8_transpose(v, B, j0, c);
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) {
            const int j = j0 + i;
            _mm256_storeu_ps(T + (int64_t)j * GRP, c[i]);
            const __m256 ax = _mm256_and_ps(c[i], absm);
            const __m256 fin = _mm256_cmp_ps(ax, fmax, _CMP_LE_OQ);
            const __m256 up = _mm256_and_ps(fin, _mm256_cmp_ps(ax, a, _CMP_GT_OQ));
            nf = _mm256_or_ps(nf, _mm256_cmp_ps(ax, fmax, _CMP_NLE_UQ)); /* = ~fin */
            a = _mm256_blendv_ps(a, ax, up);
            k = _mm256_blendv_ps(k, _mm256_castsi256_ps(_mm256_set1_epi32(j)), up);
        }
    }
    _mm256_storeu_ps(am, a);
    _mm256_storeu_si256((__m256i *)(void *)ak, _mm256_castps_si256(k));
    _mm256_storeu_si256((__m256i *)(void *)bad, _mm256_castps_si256(nf));
}
/* group_load_body for block sizes that are multiples of 8: 8x8 tiles transposed in registers
 * (tile8_transpose); the same T, and the same amax / first index / non-finite flags, from the
 * same column-order scan, with mask registers. */
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
        __m256 c[8];
        tile8_transpose(v, B, j0, c);
#pragma GCC unroll 8
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

/* the row's relative-error bin bytes (a multiple of GRP: the kernels add GRP at a time),
 * counted by fp4_rerr_count_bulk when full and at the row's end */
#define ROW_RERR_KB 4096
_Static_assert(ROW_RERR_KB % GRP == 0 && ROW_RERR_KB <= 4 * 65535, "fp4_rerr_count_bulk");

/* Four over Six's scale to 4 (SPEC §5.1, stats.c's fos_rtne_body) in the row kernels' own
 * element pass: per lane the parameters of the block's amax scaled to 4 (group_params_nv
 * with nv_m4; dv is 1 in every lane and the division by it is left out, as stats.c does) */
typedef struct fos4_lanes {
    float mul[GRP], d1[GRP], d2[GRP];
} fos4_lanes;

#define FOS4_PARAMS_BODY                                                                        \
    do {                                                                                        \
        float dv_[GRP];                                                                         \
        double se_[GRP];                                                                        \
        int32_t jn_[GRP], lv_[GRP], uf_[GRP];                                                   \
        uint8_t sb_[GRP];                                                                       \
        group_params_nv(p, am, bad, tile, nb, jnv, p->nv_m4, f->mul, dv_, f->d1, f->d2, se_,    \
                        jn_, lv_, uf_, sb_);                                                    \
    } while (0)
FP4_AVX2 __attribute__((flatten, noinline)) static void
fos4_params_avx2(const fp4_qplan *p, const float *am, const int32_t *bad, const float *tile,
                 int nb, const int *jnv, fos4_lanes *f)
{
    FOS4_PARAMS_BODY;
}
FP4_AVX512 __attribute__((flatten, noinline)) static void
fos4_params_avx512(const fp4_qplan *p, const float *am, const int32_t *bad, const float *tile,
                   int nb, const int *jnv, fos4_lanes *f)
{
    FOS4_PARAMS_BODY;
}
#undef FOS4_PARAMS_BODY

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
 * fos (e2m1 grid, nvfp4): also each block's Σ(x̂₄ − x)² over its counted entries into e4, x̂₄
 * quantized with the scale to 4 (f4) as stats.c's fos_rtne_body does: t = |x| · mul₄ clamped
 * to g_max (vminps: the same select), the e2m1 index in closed form and qcum[ix] (the values
 * of its midpoint compares and masked steps, as above), (q · d1₄) · d2₄ with x's sign, the
 * fp64 difference squared and added in a counted lane (merge-masked: +0.0 elsewhere).
 * The recipe statistics (SPEC §5.1, st_acc into so) in the same pass, as stats.c's
 * stats_rtne_body computes them from the same x, x̂ and lanes (the AVX2 kernel's way): Σx² by a
 * merge-masked fma (x² is exact in fp64: it rounds as s + x·x) and Σ(x̂ − x)² by a merge-masked
 * add of d², both over the counted entries other than the block's amax element; the max |d|
 * over the counted entries (vmaxpd of non-negative doubles, never NaN); the counted x != 0 and
 * of those x̂ == 0 as 32-bit lane counts; the relative-error bins (stats.c's arithmetic) as
 * bytes into kb (the row's, nk of them so far), counted in bulk when full.
 * E: GRP · B' doubles, IX: GRP · B' int32, B' = B rounded up to 8. */
FP4_AVX512 static inline __attribute__((always_inline)) void
group_avx512_body(GROUP_ARGS, double *E, int32_t *IX, const fos4_lanes *f4, double *e4,
                  st_acc *so, uint64_t *rh, uint8_t *kb, int *nkp, const int kind,
                  const int unit, const int fos)
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
    uint8_t nam[GRP_MAX_BLOCK]; /* the statistics' lanes: counted, not the block's amax */
    memcpy(nam, cm, (size_t)B);
    for (int b = 0; b < GRP; b++)
        if (ak[b] >= 0 && ak[b] < B) {
            lm[ak[b]] &= (uint8_t)~(1u << b);
            nam[ak[b]] &= (uint8_t)~(1u << b);
        }
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
    __m512d se4 = _mm512_setzero_pd();
    __m512d sx2n = se4, se2n = se4, mx = se4; /* the recipe statistics */
    __m256i nzv = _mm256_setzero_si256(), ufv = nzv;
    const __m256 zero_f = _mm256_setzero_ps();
    const __m256i rbias = _mm256_set1_epi32(FP4_RERR_BIAS), rtop = _mm256_set1_epi32(FP4_RERR_BINS - 1),
                  r128 = _mm256_set1_epi32(128);
    int nk = *nkp;
    const __m256 vmul4 = fos ? _mm256_loadu_ps(f4->mul) : one_f;
    const __m256 vd1_4 = fos ? _mm256_loadu_ps(f4->d1) : one_f;
    const __m256 vd2_4 = fos ? _mm256_loadu_ps(f4->d2) : one_f;
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
        const __m512d dd = _mm512_mul_pd(d, d);
        sx2 = _mm512_mask3_fmadd_pd(dx, dx, sx2, c);
        se2 = _mm512_mask_add_pd(se2, c, se2, dd);
        { /* the recipe statistics (stats_rtne_body) */
            const __mmask8 na = nam[j];
            sx2n = _mm512_mask3_fmadd_pd(dx, dx, sx2n, na);
            se2n = _mm512_mask_add_pd(se2n, na, se2n, dd);
            mx = _mm512_mask_max_pd(mx, c, mx, _mm512_abs_pd(d));
            const __mmask8 nzc = _mm256_mask_cmp_ps_mask(c, ax, zero_f, _CMP_NEQ_UQ);
            nzv = _mm256_mask_add_epi32(nzv, nzc, nzv, one32);
            ufv = _mm256_mask_add_epi32(ufv, _mm256_mask_cmp_ps_mask(nzc, xq, zero_f, _CMP_EQ_OQ),
                                        ufv, one32);
            /* the relative-error bin of an entry with x != 0: fp32 |x̂ − x| / |x| */
            const __m256 rr = _mm256_div_ps(
                _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(_mm256_sub_ps(xq, x)), absm)),
                _mm256_mask_blend_ps(nzc, one_f, ax));
            __m256i rk = _mm256_sub_epi32(_mm256_srli_epi32(_mm256_castps_si256(rr), 22), rbias);
            rk = _mm256_min_epi32(_mm256_max_epi32(rk, _mm256_setzero_si256()), rtop);
            rk = _mm256_mask_mov_epi32(r128, nzc, rk); /* 128: a lane that counts nothing */
            _mm_storel_epi64((__m128i *)(void *)(kb + nk), _mm256_cvtepi32_epi8(rk));
            nk += GRP;
            if (nk == ROW_RERR_KB) nk = fp4_rerr_count_bulk(rh, kb, nk);
        }
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
        if (fos) { /* Four over Six's scale to 4 (e2m1: fp4c_rtne_index_e2m1) */
            const __m256 tc4 = _mm256_min_ps(_mm256_mul_ps(ax, vmul4), gm);
            const __m256i lo4 = _mm256_cvttps_epi32(
                _mm256_roundscale_ps(_mm256_add_ps(tc4, tc4), RNE_IMM));
            __m256i u4 = _mm256_castps_si256(tc4);
            u4 = _mm256_add_epi32(u4, _mm256_add_epi32(
                                          _mm256_and_si256(_mm256_srli_epi32(u4, 22), one32),
                                          _mm256_set1_epi32(0x1FFFFF)));
            const __m256i hi4 = _mm256_sub_epi32(_mm256_srli_epi32(u4, 22), _mm256_set1_epi32(252));
            const __m256i ix4 =
                _mm256_mask_blend_epi32(_mm256_cmp_ps_mask(tc4, one_f, _CMP_LT_OQ), hi4, lo4);
            const __m256 xq4 = _mm256_castsi256_ps(_mm256_ternarylogic_epi32(
                absm,
                _mm256_castps_si256(
                    _mm256_mul_ps(_mm256_mul_ps(_mm256_permutexvar_ps(ix4, qcum), vd1_4), vd2_4)),
                _mm256_castps_si256(x), 0xCA));
            const __m512d d4 = _mm512_sub_pd(_mm512_cvtps_pd(xq4), dx);
            se4 = _mm512_mask_add_pd(se4, c, se4, _mm512_mul_pd(d4, d4));
        }
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
    if (fos) _mm512_storeu_pd(e4, se4);
    *nkp = nk;
    _mm512_storeu_pd(so->sx2, sx2n);
    _mm512_storeu_pd(so->se2, se2n);
    _mm512_storeu_pd(so->mx, mx);
    _mm512_storeu_si512(so->nz, _mm512_cvtepi32_epi64(nzv));
    _mm512_storeu_si512(so->uf, _mm512_cvtepi32_epi64(ufv));
}

/* group_params compiled for AVX-512 with every call inlined (flatten), nvfp4 in vectors
 * (group_params_nv): called from
 * row_avx512 with the upper register halves in use, baseline SSE code (block_params,
 * fp4c_block_params) would pay the AVX-SSE transition on every instruction — it made nvfp4,
 * mxfp4 and tensor scales 2.5-3x slower. */
FP4_AVX512 __attribute__((flatten, noinline)) static void
group_params_avx512(const fp4_qplan *p, const float *am, const int32_t *bad, const float *tile,
                    int nb, const int *jnv, float *mul, float *dv, float *d1, float *d2,
                    double *se, int32_t *jn, int32_t *lv, int32_t *uf, uint8_t *sb)
{
    if (p->cfg.scale == FP4_SCALE_NVFP4) /* in vectors */
        group_params_nv(p, am, bad, tile, nb, jnv, p->nv_m, mul, dv, d1, d2, se, jn, lv, uf, sb);
    else
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
                uint8_t *scales, fp4_metrics *pr, grp_cnt *n, float *Tb, float *W, double *bse,
                const int kind, const int fos)
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
    uint8_t kb[ROW_RERR_KB]; /* the row's relative-error bins (the recipe statistics) */
    int nk = 0;
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
        st_acc so;
        fos4_lanes f4;
        double e4[GRP];
        if (fos) fos4_params_avx512(p, am, bad, tamax ? tamax + k0 : NULL, nb, jnv, &f4);
        const __mmask8 counted_lanes =
            _mm256_cmpgt_epi32_mask(_mm256_loadu_si256((const __m256i *)(const void *)jn),
                                    _mm256_setzero_si256());
        const __mmask8 ones = _mm256_cmp_ps_mask(_mm256_loadu_ps(mul), one_f, _CMP_EQ_OQ) &
                              _mm256_cmp_ps_mask(_mm256_loadu_ps(d2), one_f, _CMP_EQ_OQ);
        if ((counted_lanes & (__mmask8)~ones) == 0) /* fp32 and tensor scales, as a rule */
            group_avx512_body(p, T, mul, dv, d1, d2, se, jn, lv, ak, &a, n, E, IX, &f4, e4, &so,
                              pr->rerr_hist, kb, &nk, kind, 1, fos);
        else
            group_avx512_body(p, T, mul, dv, d1, d2, se, jn, lv, ak, &a, n, E, IX, &f4, e4, &so,
                              pr->rerr_hist, kb, &nk, kind, 0, fos);
        fp4_stats_group_merge(p, am, sb, jn, &so, &pr[k0 / FP4_CHUNK_BLOCKS], pr);
        if (fos) /* the scale to 6 is the config's: its error is the kernel's Σ(x̂ − x)² */
            fp4_fos_group_merge(a.se2, e4, jn, &pr[k0 / FP4_CHUNK_BLOCKS]);
        if (bse) memcpy(bse + k0, a.se2, (size_t)nb * sizeof *bse);
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
    fp4_rerr_count_bulk(pr->rerr_hist, kb, nk);
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

/* fos: Four over Six in the kernel's pass (fp4_engine.row_fos; only on the e2m1 grid) */
FP4_AVX512 static void row_avx512(ROW_ARGS)
{
    if (fp4_row_fos_in_kernel(p)) {
        row_avx512_body(ROW_PASS, FP4C_GRID_E2M1, 1);
        return;
    }
    switch (p->grid.kind) {
    case FP4C_GRID_UNIFORM: row_avx512_body(ROW_PASS, FP4C_GRID_UNIFORM, 0); break;
    case FP4C_GRID_E2M1: row_avx512_body(ROW_PASS, FP4C_GRID_E2M1, 0); break;
    default: row_avx512_body(ROW_PASS, FP4C_GRID_GENERIC, 0); break;
    }
}

/* ---- avx2: whole rows --------------------------------------------------------------------
 * row_avx512's structure for AVX2 (8 lanes of fp32, the fp64 sums as two 4-lane halves): per
 * group of GRP blocks the grouped-row cache's copy (or a load), the block parameters, one
 * pass over the elements in fp32 (index, x̂, masks, counts, relative-error bins; x̂, q and the
 * masks stored; with fos Four over Six's x̂ at the scale to 4 too), one pass per half of the
 * lanes for the fp64 sums (the five and the statistics' three, and fos's Σ(x̂₄ − x)²: 8 or 9
 * accumulators, which stay in the 16 ymm registers; in the element loop all of them went to
 * the stack, a load and a store per element row), a count pass over the
 * stored indices by byte
 * compares (histogram and level counts as popcounts, exact), a second pass for the eight
 * level sums (one compare of the stored index per level), then the block-order merge
 * (group_merge). The same
 * numbers as group_body (every sum is the same sequence of the same fp64 operations), in form:
 *  - q read from qcum[ix] and the RTNE index in closed form per grid kind, as row_avx512
 *    (see group_avx512_body for why these are the same values);
 *  - a lane that does not count adds +0.0 (its operands are masked to +0.0 before the fused
 *    multiply-add: fma(+0, +0, s) = s), the identity on a sum that starts at +0.0;
 *  - dx², dq·dx and dq² are exact in fp64, so fma(dx, dx, s) rounds once as s + dx·dx does;
 *  - unit (mul and d2 are 1 in every counted lane): the two multiplications by 1 are left out.
 * E: GRP · B doubles, IX: GRP · B' int32, B' = B rounded up to 4; after them XQ, QV, CM, NAM
 * and XQ4. */
FP4_AVX2 static inline __attribute__((always_inline)) __m256i ext64(__m256i m, int h)
{
    return _mm256_cvtepi32_epi64(h ? _mm256_extracti128_si256(m, 1) : _mm256_castsi256_si128(m));
}

FP4_AVX2 static inline __attribute__((always_inline)) void
group_avx2_body(GROUP_ARGS, double *E, int32_t *IX, st_acc *so, uint64_t *rh, uint8_t *kb,
                int *nkp, const fos4_lanes *f4, double *e4, const int kind, const int unit,
                const int fos)
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
    const __m256i vjn = _mm256_loadu_si256((const __m256i *)(const void *)jn);
    const __m256i vlive = _mm256_sub_epi32(_mm256_setzero_si256(),
                                           _mm256_loadu_si256((const __m256i *)(const void *)lv));
    const __m256i vak = _mm256_loadu_si256((const __m256i *)(const void *)ak);
    const __m256i absm = _mm256_set1_epi32(0x7FFFFFFF), one32 = _mm256_set1_epi32(1);
    const __m256d absm64 = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
    const __m256d vse0 = _mm256_loadu_pd(se), vse1 = _mm256_loadu_pd(se + 4);
    const __m256d vrs0 = _mm256_div_pd(_mm256_set1_pd(1.0), vse0);
    const __m256d vrs1 = _mm256_div_pd(_mm256_set1_pd(1.0), vse1);
    __m256d sx2_0 = _mm256_setzero_pd(), se2_0 = sx2_0, sxqx_0 = sx2_0, sxq2_0 = sx2_0,
            serr_0 = sx2_0;
    __m256d sx2_1 = sx2_0, se2_1 = sx2_0, sxqx_1 = sx2_0, sxq2_1 = sx2_0, serr_1 = sx2_0;
    __m256i sat = _mm256_setzero_si256(), jv = _mm256_setzero_si256();
    /* the recipe statistics (st_acc), in the same pass */
    __m256d sx2n_0 = _mm256_setzero_pd(), se2n_0 = sx2n_0, mx_0 = sx2n_0;
    __m256d sx2n_1 = sx2n_0, se2n_1 = sx2n_0, mx_1 = sx2n_0;
    __m256i nzv = _mm256_setzero_si256(), ufv = nzv;
    const __m256 zero_f = _mm256_setzero_ps(), onef_r = _mm256_set1_ps(1.0f);
    const __m256i rbias = _mm256_set1_epi32(FP4_RERR_BIAS), rtop = _mm256_set1_epi32(FP4_RERR_BINS - 1),
                  r128 = _mm256_set1_epi32(128);
    int nk = *nkp; /* kb: the row's relative-error bins, counted in bulk (fp4_rerr_count) */
    uint8_t cm[GRP_MAX_BLOCK + 4], lm[GRP_MAX_BLOCK + 4], negb[GRP_MAX_BLOCK + 4];
    /* per element row, for the fp64 passes: x̂, q, the counted and the statistics lane masks
     * (GRP · B each, after IX in the scratch: fp4_qplan_scratch_floats) */
    float *const XQ = (float *)(void *)(IX + (int64_t)GRP * ((B + 7) & ~7));
    float *const QV = XQ + (int64_t)GRP * B;
    int32_t *const CM = (int32_t *)(void *)(QV + (int64_t)GRP * B);
    int32_t *const NAM = CM + (int64_t)GRP * B;
    float *const XQ4 = (float *)(void *)(NAM + (int64_t)GRP * B); /* fos: x̂ at the scale to 4 */
    const __m256 vmul4 = fos ? _mm256_loadu_ps(f4->mul) : one_f;
    const __m256 vd1_4 = fos ? _mm256_loadu_ps(f4->d1) : one_f;
    const __m256 vd2_4 = fos ? _mm256_loadu_ps(f4->d2) : one_f;
    for (int j = 0; j < B; j++) {
        const __m256 x = _mm256_loadu_ps(T + (int64_t)j * GRP);
        const __m256 ax = _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(x), absm));
        const __m256 t = _mm256_div_ps(unit ? ax : _mm256_mul_ps(ax, vmul), vdv);
        const __m256 tc = _mm256_min_ps(t, gm); /* t < g_max ? t : g_max, NaN -> g_max */
        __m256i ix;
        if (kind == FP4C_GRID_UNIFORM) { /* fp4c_rtne_index_uniform */
            ix = _mm256_cvttps_epi32(_mm256_round_ps(_mm256_mul_ps(tc, vinv), RNE_IMM));
        } else if (kind == FP4C_GRID_E2M1) { /* fp4c_rtne_index_e2m1 */
            const __m256i lo = _mm256_cvttps_epi32(_mm256_round_ps(_mm256_add_ps(tc, tc), RNE_IMM));
            __m256i u = _mm256_castps_si256(tc);
            u = _mm256_add_epi32(u, _mm256_add_epi32(
                                        _mm256_and_si256(_mm256_srli_epi32(u, 22), one32),
                                        _mm256_set1_epi32(0x1FFFFF)));
            const __m256i hi = _mm256_sub_epi32(_mm256_srli_epi32(u, 22), _mm256_set1_epi32(252));
            ix = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(hi),
                                                      _mm256_castsi256_ps(lo),
                                                      _mm256_cmp_ps(tc, one_f, _CMP_LT_OQ)));
        } else {
            ix = _mm256_setzero_si256();
            ix = _mm256_sub_epi32(ix, _mm256_castps_si256(_mm256_cmp_ps(tc, md[0], _CMP_GT_OQ)));
            ix = _mm256_sub_epi32(ix, _mm256_castps_si256(_mm256_cmp_ps(tc, md[1], _CMP_GE_OQ)));
            ix = _mm256_sub_epi32(ix, _mm256_castps_si256(_mm256_cmp_ps(tc, md[2], _CMP_GT_OQ)));
            ix = _mm256_sub_epi32(ix, _mm256_castps_si256(_mm256_cmp_ps(tc, md[3], _CMP_GE_OQ)));
            ix = _mm256_sub_epi32(ix, _mm256_castps_si256(_mm256_cmp_ps(tc, md[4], _CMP_GT_OQ)));
            ix = _mm256_sub_epi32(ix, _mm256_castps_si256(_mm256_cmp_ps(tc, md[5], _CMP_GE_OQ)));
            ix = _mm256_sub_epi32(ix, _mm256_castps_si256(_mm256_cmp_ps(tc, md[6], _CMP_GT_OQ)));
        }
        const __m256 q = _mm256_permutevar8x32_ps(qcum, ix);
        const __m256 y = unit ? _mm256_mul_ps(q, vd1) : _mm256_mul_ps(_mm256_mul_ps(q, vd1), vd2);
        /* |y| with x's sign */
        const __m256i xqi = _mm256_or_si256(_mm256_and_si256(_mm256_castps_si256(y), absm),
                                            _mm256_andnot_si256(absm, _mm256_castps_si256(x)));
        const __m256 xq = _mm256_castsi256_ps(xqi);
        const __m256i c = _mm256_cmpgt_epi32(vjn, jv);          /* counted */
        const __m256i s = _mm256_and_si256(c, vlive);           /* counted in a live block */
        const __m256i akj = _mm256_cmpeq_epi32(vak, jv);
        const __m256i l = _mm256_andnot_si256(akj, s); /* not the amax */
        const __m256i na = _mm256_andnot_si256(akj, c); /* counted, not the amax: statistics */
        /* statistics: counted with x != 0, and of those x̂ == 0 (|y| == 0) */
        const __m256i nzc =
            _mm256_andnot_si256(_mm256_castps_si256(_mm256_cmp_ps(ax, zero_f, _CMP_EQ_OQ)), c);
        nzv = _mm256_sub_epi32(nzv, nzc);
        ufv = _mm256_sub_epi32(
            ufv, _mm256_and_si256(nzc, _mm256_castps_si256(_mm256_cmp_ps(y, zero_f, _CMP_EQ_OQ))));
        sat = _mm256_sub_epi32(sat, _mm256_and_si256(_mm256_castps_si256(
                                                         _mm256_cmp_ps(t, gm, _CMP_GT_OQ)), s));
        { /* the relative-error bin of an entry with x != 0 (stats.c's: fp32 |x̂ − x| / |x|) */
            const __m256 rr = _mm256_div_ps(
                _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(_mm256_sub_ps(xq, x)), absm)),
                _mm256_blendv_ps(onef_r, ax, _mm256_castsi256_ps(nzc)));
            __m256i rk = _mm256_sub_epi32(_mm256_srli_epi32(_mm256_castps_si256(rr), 22), rbias);
            rk = _mm256_min_epi32(_mm256_max_epi32(rk, _mm256_setzero_si256()), rtop);
            rk = _mm256_or_si256(rk, _mm256_andnot_si256(nzc, r128));
            const __m128i w16 = _mm_packs_epi32(_mm256_castsi256_si128(rk),
                                                _mm256_extracti128_si256(rk, 1));
            _mm_storel_epi64((__m128i *)(void *)(kb + nk), _mm_packus_epi16(w16, w16));
            nk += GRP;
            if (nk == ROW_RERR_KB) nk = fp4_rerr_count_bulk(rh, kb, nk);
        }
        cm[j] = (uint8_t)_mm256_movemask_ps(_mm256_castsi256_ps(c));
        lm[j] = (uint8_t)_mm256_movemask_ps(_mm256_castsi256_ps(l));
        negb[j] = (uint8_t)_mm256_movemask_ps(x);
        _mm256_storeu_si256((__m256i *)(void *)(IX + (int64_t)j * GRP), ix);
        _mm256_storeu_ps(XQ + (int64_t)j * GRP, xq);
        _mm256_storeu_ps(QV + (int64_t)j * GRP, q);
        _mm256_storeu_si256((__m256i *)(void *)(CM + (int64_t)j * GRP), c);
        _mm256_storeu_si256((__m256i *)(void *)(NAM + (int64_t)j * GRP), na);
        if (fos) { /* Four over Six's x̂ at the scale to 4 (e2m1: fp4c_rtne_index_e2m1) */
            const __m256 tc4 = _mm256_min_ps(_mm256_mul_ps(ax, vmul4), gm);
            const __m256i lo4 =
                _mm256_cvttps_epi32(_mm256_round_ps(_mm256_add_ps(tc4, tc4), RNE_IMM));
            __m256i u4 = _mm256_castps_si256(tc4);
            u4 = _mm256_add_epi32(u4, _mm256_add_epi32(
                                          _mm256_and_si256(_mm256_srli_epi32(u4, 22), one32),
                                          _mm256_set1_epi32(0x1FFFFF)));
            const __m256i hi4 = _mm256_sub_epi32(_mm256_srli_epi32(u4, 22), _mm256_set1_epi32(252));
            const __m256i ix4 = _mm256_castps_si256(
                _mm256_blendv_ps(_mm256_castsi256_ps(hi4), _mm256_castsi256_ps(lo4),
                                 _mm256_cmp_ps(tc4, one_f, _CMP_LT_OQ)));
            const __m256 y4 = _mm256_mul_ps(
                _mm256_mul_ps(_mm256_permutevar8x32_ps(qcum, ix4), vd1_4), vd2_4);
            _mm256_storeu_si256(
                (__m256i *)(void *)(XQ4 + (int64_t)j * GRP),
                _mm256_or_si256(_mm256_and_si256(_mm256_castps_si256(y4), absm),
                                _mm256_andnot_si256(absm, _mm256_castps_si256(x))));
        }
        jv = _mm256_add_epi32(jv, one32);
    }
    /* The fp64 sums, one half of the lanes at a time (its 8 sums in registers), j in order:
     * the same operations on the same values as in the element loop */
#define AVX2_HALF(h, sx2, se2, sxqx, sxq2, serr, vse, vrs, sx2n, se2n, mx, se4)                 \
    do {                                                                                        \
        const __m256d live64 = _mm256_castsi256_pd(ext64(vlive, h));                            \
        for (int j = 0; j < B; j++) {                                                           \
            const int64_t o = (int64_t)j * GRP + 4 * (h);                                       \
            const __m256d dx = _mm256_cvtps_pd(_mm_loadu_ps(T + o));                            \
            const __m256d dq = _mm256_cvtps_pd(_mm_loadu_ps(XQ + o));                           \
            const __m256d c64 = _mm256_castsi256_pd(                                            \
                _mm256_cvtepi32_epi64(_mm_loadu_si128((const __m128i *)(const void *)(CM + o)))); \
            const __m256d na64 = _mm256_castsi256_pd(                                           \
                _mm256_cvtepi32_epi64(_mm_loadu_si128((const __m128i *)(const void *)(NAM + o)))); \
            const __m256d l64 = _mm256_and_pd(na64, live64); /* l = c & live & !amax */         \
            const __m256d dxc = _mm256_and_pd(dx, c64), dqc = _mm256_and_pd(dq, c64);           \
            const __m256d d = _mm256_sub_pd(dqc, dxc);                                          \
            sx2 = _mm256_fmadd_pd(dxc, dxc, sx2);                                               \
            se2 = _mm256_add_pd(se2, _mm256_mul_pd(d, d));                                      \
            sxqx = _mm256_fmadd_pd(dqc, dxc, sxqx);                                             \
            sxq2 = _mm256_fmadd_pd(dqc, dqc, sxq2);                                             \
            const __m256d dax = _mm256_and_pd(dx, absm64); /* = (double)|x| */                  \
            const __m256d q0 = _mm256_mul_pd(dax, vrs);                                         \
            const __m256d r = _mm256_fnmadd_pd(q0, vse, dax);                                   \
            const __m256d qt = _mm256_fmadd_pd(r, vrs, q0);                                     \
            const __m256d el =                                                                  \
                _mm256_and_pd(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(QV + o)), qt), l64);   \
            serr = _mm256_add_pd(serr, el);                                                     \
            _mm256_storeu_pd(E + o, el);                                                        \
            const __m256d dxn = _mm256_and_pd(dx, na64), dn = _mm256_and_pd(d, na64);           \
            sx2n = _mm256_fmadd_pd(dxn, dxn, sx2n);                                             \
            se2n = _mm256_add_pd(se2n, _mm256_mul_pd(dn, dn));                                  \
            mx = _mm256_max_pd(mx, _mm256_and_pd(d, absm64));                                   \
            if (fos) { /* stats.c's fos_rtne_body: (x̂₄ − x)² in a counted lane, else +0.0 */   \
                const __m256d d4 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(XQ4 + o)), dx);   \
                se4 = _mm256_add_pd(se4, _mm256_and_pd(_mm256_mul_pd(d4, d4), c64));            \
            }                                                                                   \
        }                                                                                       \
    } while (0)
    __m256d se4_0 = _mm256_setzero_pd(), se4_1 = se4_0;
    AVX2_HALF(0, sx2_0, se2_0, sxqx_0, sxq2_0, serr_0, vse0, vrs0, sx2n_0, se2n_0, mx_0, se4_0);
    AVX2_HALF(1, sx2_1, se2_1, sxqx_1, sxq2_1, serr_1, vse1, vrs1, sx2n_1, se2n_1, mx_1, se4_1);
#undef AVX2_HALF
    if (fos) {
        _mm256_storeu_pd(e4, se4_0);
        _mm256_storeu_pd(e4 + 4, se4_1);
    }
    /* Counts and level masks, 4 elements at a time: the indices of elements j0..j0+3 packed as
     * bytes [j][lane] (32 bytes), one byte compare per level; bit 8j + b of a mask is lane b
     * of element j0 + j, as in the stored cm / lm / negb bytes. */
    const int Bp = (B + 3) & ~3;
    for (int j = B; j < Bp; j++) { /* B = 2: the padding elements count nowhere */
        cm[j] = lm[j] = negb[j] = 0;
        _mm256_storeu_si256((__m256i *)(void *)(IX + (int64_t)j * GRP), _mm256_setzero_si256());
    }
    uint64_t tot[8] = {0}, ng[8] = {0}, nl[8] = {0};
    const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int j0 = 0; j0 < Bp; j0 += 4) {
        const __m256i *ip = (const __m256i *)(const void *)(IX + (int64_t)j0 * GRP);
        const __m256i ab = _mm256_packs_epi32(_mm256_loadu_si256(ip), _mm256_loadu_si256(ip + 1));
        const __m256i cd = _mm256_packs_epi32(_mm256_loadu_si256(ip + 2), _mm256_loadu_si256(ip + 3));
        const __m256i by = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(ab, cd), perm);
        uint32_t c32, l32, n32;
        memcpy(&c32, cm + j0, sizeof c32);
        memcpy(&l32, lm + j0, sizeof l32);
        memcpy(&n32, negb + j0, sizeof n32);
        for (int i = 0; i < 8; i++) {
            const uint32_t eq = (uint32_t)_mm256_movemask_epi8(
                _mm256_cmpeq_epi8(by, _mm256_set1_epi8((char)i)));
            const uint32_t kc = eq & c32, kl = kc & l32;
            tot[i] += (uint64_t)__builtin_popcount(kc);
            ng[i] += (uint64_t)__builtin_popcount(kc & n32);
            nl[i] += (uint64_t)__builtin_popcount(kl);
        }
    }
    for (int i = 0; i < 8; i++) {
        n->pos[i] += (int64_t)(tot[i] - ng[i]);
        n->neg[i] += (int64_t)ng[i];
        n->lvl[i] += (int64_t)nl[i];
    }
    /* Level error sums, second pass, one half of the lanes at a time (8 accumulators): lane b
     * adds element j's term to level ix's sum, j in order (the first pass's order). E holds
     * the terms already masked to the level statistics' lanes (+0.0 elsewhere, the identity
     * on these sums, as group_body adds), so a level's lanes are one compare of the stored
     * index with the level. */
    for (int h = 0; h < 2; h++) {
        __m256d ls0 = _mm256_setzero_pd(), ls1 = ls0, ls2 = ls0, ls3 = ls0, ls4 = ls0, ls5 = ls0,
                ls6 = ls0, ls7 = ls0;
        const int sh = 4 * h;
        for (int j = 0; j < B; j++) {
            const __m256d el = _mm256_loadu_pd(E + (int64_t)j * GRP + sh);
            const __m256i ix64 = _mm256_cvtepi32_epi64(
                _mm_loadu_si128((const __m128i *)(const void *)(IX + (int64_t)j * GRP + sh)));
#define LVL(i, ls)                                                                              \
    ls = _mm256_add_pd(                                                                         \
        ls, _mm256_and_pd(el, _mm256_castsi256_pd(_mm256_cmpeq_epi64(ix64, _mm256_set1_epi64x(i)))))
            LVL(0, ls0);
            LVL(1, ls1);
            LVL(2, ls2);
            LVL(3, ls3);
            LVL(4, ls4);
            LVL(5, ls5);
            LVL(6, ls6);
            LVL(7, ls7);
#undef LVL
        }
        _mm256_storeu_pd(a->lsum[0] + sh, ls0);
        _mm256_storeu_pd(a->lsum[1] + sh, ls1);
        _mm256_storeu_pd(a->lsum[2] + sh, ls2);
        _mm256_storeu_pd(a->lsum[3] + sh, ls3);
        _mm256_storeu_pd(a->lsum[4] + sh, ls4);
        _mm256_storeu_pd(a->lsum[5] + sh, ls5);
        _mm256_storeu_pd(a->lsum[6] + sh, ls6);
        _mm256_storeu_pd(a->lsum[7] + sh, ls7);
    }
    int32_t sv[GRP];
    _mm256_storeu_si256((__m256i *)(void *)sv, sat);
    for (int b = 0; b < GRP; b++) n->sat[b] += sv[b];
    _mm256_storeu_pd(a->sx2, sx2_0);
    _mm256_storeu_pd(a->sx2 + 4, sx2_1);
    _mm256_storeu_pd(a->se2, se2_0);
    _mm256_storeu_pd(a->se2 + 4, se2_1);
    _mm256_storeu_pd(a->sxqx, sxqx_0);
    _mm256_storeu_pd(a->sxqx + 4, sxqx_1);
    _mm256_storeu_pd(a->sxq2, sxq2_0);
    _mm256_storeu_pd(a->sxq2 + 4, sxq2_1);
    _mm256_storeu_pd(a->serr, serr_0);
    _mm256_storeu_pd(a->serr + 4, serr_1);
    *nkp = nk;
    _mm256_storeu_pd(so->sx2, sx2n_0);
    _mm256_storeu_pd(so->sx2 + 4, sx2n_1);
    _mm256_storeu_pd(so->se2, se2n_0);
    _mm256_storeu_pd(so->se2 + 4, se2n_1);
    _mm256_storeu_pd(so->mx, mx_0);
    _mm256_storeu_pd(so->mx + 4, mx_1);
    _mm256_storeu_si256((__m256i *)(void *)so->nz, ext64(nzv, 0));
    _mm256_storeu_si256((__m256i *)(void *)(so->nz + 4), ext64(nzv, 1));
    _mm256_storeu_si256((__m256i *)(void *)so->uf, ext64(ufv, 0));
    _mm256_storeu_si256((__m256i *)(void *)(so->uf + 4), ext64(ufv, 1));
}

/* group_params compiled for AVX2 with every call inlined (see group_params_avx512) */
FP4_AVX2 __attribute__((flatten, noinline)) static void
group_params_avx2(const fp4_qplan *p, const float *am, const int32_t *bad, const float *tile,
                  int nb, const int *jnv, float *mul, float *dv, float *d1, float *d2,
                  double *se, int32_t *jn, int32_t *lv, int32_t *uf, uint8_t *sb)
{
    if (p->cfg.scale == FP4_SCALE_NVFP4) /* in vectors */
        group_params_nv(p, am, bad, tile, nb, jnv, p->nv_m, mul, dv, d1, d2, se, jn, lv, uf, sb);
    else
        group_params(p, am, bad, tile, nb, jnv, mul, dv, d1, d2, se, jn, lv, uf, sb);
}

/* One row on AVX2: per group the cached or loaded blocks, the parameters, the kernel and the
 * block-order merge into the chunk partial (group_merge, as group_quant). */
FP4_AVX2 static inline __attribute__((always_inline)) void
row_avx2_body(const fp4_qplan *p, const float *v, const grp_in *row, const float *tamax,
              uint8_t *scales, fp4_metrics *pr, grp_cnt *n, float *Tb, float *W, double *bse,
              const int kind, const int fos)
{
    const int B = p->block, nblk = p->nblk;
    double *E = (double *)(void *)(((uintptr_t)(W + (int64_t)GRP * B) + 63) & ~(uintptr_t)63);
    int32_t *IX = (int32_t *)(void *)(E + (int64_t)GRP * ((B + 7) & ~7));
    uint8_t kb[ROW_RERR_KB]; /* the row's relative-error bins, counted when full and at the end */
    int nk = 0;
    for (int k0 = 0; k0 < nblk; k0 += GRP) {
        ROW_GROUP_SETUP(load_avx2, group_params_avx2);
        grp_acc a;
        st_acc so;
        fos4_lanes f4;
        double e4[GRP];
        if (fos) fos4_params_avx2(p, gi.am, gi.bad, tamax ? tamax + k0 : NULL, nb, jnv, &f4);
        if (unit)
            group_avx2_body(p, gi.T, mul, dv, d1, d2, se, jn, lv, gi.ak, &a, n, E, IX, &so,
                            pr->rerr_hist, kb, &nk, &f4, e4, kind, 1, fos);
        else
            group_avx2_body(p, gi.T, mul, dv, d1, d2, se, jn, lv, gi.ak, &a, n, E, IX, &so,
                            pr->rerr_hist, kb, &nk, &f4, e4, kind, 0, fos);
        if (fos) /* the scale to 6 is the config's: its error is the kernel's Σ(x̂ − x)² */
            fp4_fos_group_merge(a.se2, e4, jn, &pr[k0 / FP4_CHUNK_BLOCKS]);
        if (bse) memcpy(bse + k0, a.se2, (size_t)nb * sizeof *bse);
        group_merge(&a, gi.am, gi.bad, nb, jnv, uf, sb, scales ? scales + k0 : NULL,
                    &pr[k0 / FP4_CHUNK_BLOCKS]);
        fp4_stats_group_merge(p, gi.am, sb, jn, &so, &pr[k0 / FP4_CHUNK_BLOCKS], pr);
    }
    fp4_rerr_count_bulk(pr->rerr_hist, kb, nk);
}

/* fos: Four over Six in the kernel's pass (fp4_engine.row_fos), as row_avx512 */
FP4_AVX2 static void row_avx2(ROW_ARGS)
{
    if (fp4_row_fos_in_kernel(p)) {
        row_avx2_body(ROW_PASS, FP4C_GRID_E2M1, 1);
        return;
    }
    switch (p->grid.kind) {
    case FP4C_GRID_UNIFORM: row_avx2_body(ROW_PASS, FP4C_GRID_UNIFORM, 0); break;
    case FP4C_GRID_E2M1: row_avx2_body(ROW_PASS, FP4C_GRID_E2M1, 0); break;
    default: row_avx2_body(ROW_PASS, FP4C_GRID_GENERIC, 0); break;
    }
}

/* group_params_nv as each variant compiles it (fp4_engine.nv_params) */
FP4_AVX2 static void nv_params_avx2(NV_ARGS) { group_params_nv(NV_PASS); }
FP4_AVX512 static void nv_params_avx512(NV_ARGS) { group_params_nv(NV_PASS); }

/* which of them this CPU runs: fp4_isa_cpu_runs (base/isa.c) */
static const fp4_engine avx2 = {FP4_ISA_AVX2, group_avx2, load_avx2, row_avx2, 1, nv_params_avx2,
                                1};
/* avx512 runs whole rows (row_avx512); its per-group body is never called */
static const fp4_engine avx512 = {FP4_ISA_AVX512, group_avx2, load_avx512, row_avx512, 1,
                                  nv_params_avx512, 1};

const fp4_engine *fp4_engine_x86(fp4_isa isa)
{
    return isa == FP4_ISA_AVX2 ? &avx2 : isa == FP4_ISA_AVX512 ? &avx512 : NULL;
}
#else
const fp4_engine *fp4_engine_x86(fp4_isa isa)
{
    (void)isa;
    return NULL;
}
#endif
