/* arm.c — the aarch64 variant of the CPU engine (neon): whole rows in Advanced SIMD intrinsics
 * (row_neon: the loader as 4x4 register transposes, the kernel in two passes per half group),
 * with the FMA-corrected level quotient (aarch64 always has a fused multiply-add; see
 * group_body). Same bits as ref.c (test_engine, make check-aarch64). */
#include "engine/engine_impl.h"

#if defined(__aarch64__) && defined(__GNUC__)
#include <arm_neon.h>

static void group_neon(GROUP_ARGS) { group_body(GROUP_PASS, 1); }

static inline __attribute__((always_inline)) float32x4_t abs_bits(float32x4_t x)
{
    /* |x| by clearing the sign bit (a bit operation: NaN payloads kept, as group_body) */
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(0x80000000u)));
}

static inline __attribute__((always_inline)) float64x2_t and_f64(float64x2_t a, uint64x2_t m)
{
    return vreinterpretq_f64_u64(vandq_u64(vreinterpretq_u64_f64(a), m));
}

/* group_load_body for block sizes that are multiples of 4: per half of the lanes (blocks
 * 4h..4h+3) 4x4 tiles transposed in registers (trn1/trn2 on 32- then 64-bit elements), and
 * the same column-order scan for each lane's amax, its first index and the non-finite flag. */
static void load_neon(LOAD_ARGS)
{
    if (B % 4) {
        group_load_body(LOAD_PASS);
        return;
    }
    const float32x4_t fmax = vdupq_n_f32(FP4C_FLT_MAX);
    for (int h = 0; h < 2; h++) {
        const float *vh = v + (int64_t)4 * h * B;
        float32x4_t a = vdupq_n_f32(0.0f);
        uint32x4_t k = vdupq_n_u32(0), nf = vdupq_n_u32(0);
        for (int j0 = 0; j0 < B; j0 += 4) {
            const float32x4_t r0 = vld1q_f32(vh + j0), r1 = vld1q_f32(vh + B + j0);
            const float32x4_t r2 = vld1q_f32(vh + 2 * B + j0), r3 = vld1q_f32(vh + 3 * B + j0);
            const float64x2_t t0 = vreinterpretq_f64_f32(vtrn1q_f32(r0, r1));
            const float64x2_t t1 = vreinterpretq_f64_f32(vtrn2q_f32(r0, r1));
            const float64x2_t t2 = vreinterpretq_f64_f32(vtrn1q_f32(r2, r3));
            const float64x2_t t3 = vreinterpretq_f64_f32(vtrn2q_f32(r2, r3));
            float32x4_t c[4];
            c[0] = vreinterpretq_f32_f64(vtrn1q_f64(t0, t2)); /* element j0 of blocks 0..3 */
            c[1] = vreinterpretq_f32_f64(vtrn1q_f64(t1, t3));
            c[2] = vreinterpretq_f32_f64(vtrn2q_f64(t0, t2));
            c[3] = vreinterpretq_f32_f64(vtrn2q_f64(t1, t3));
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                const int j = j0 + i;
                vst1q_f32(T + (int64_t)j * GRP + 4 * h, c[i]);
                const float32x4_t ax = abs_bits(c[i]);
                const uint32x4_t fin = vcleq_f32(ax, fmax);
                const uint32x4_t up = vandq_u32(fin, vcgtq_f32(ax, a));
                nf = vornq_u32(nf, fin); /* nf | ~fin */
                a = vbslq_f32(up, ax, a);
                k = vbslq_u32(up, vdupq_n_u32((uint32_t)j), k);
            }
        }
        vst1q_f32(am + 4 * h, a);
        vst1q_s32(ak + 4 * h, vreinterpretq_s32_u32(k));
        vst1q_s32(bad + 4 * h, vreinterpretq_s32_u32(nf));
    }
}

/* Byte counters: for each 16 bytes of codes[0..nbytes) (nbytes a multiple of 16), one compare
 * per code value 0..NC-1, the lanes that match counted in byte accumulators and summed into
 * tot[] before a byte can wrap (exact integers). */
static inline __attribute__((always_inline)) void count_codes(const uint8_t *codes, int nbytes,
                                                              const int NC, uint64_t *tot)
{
    uint8x16_t acc[16];
    for (int k = 0; k < NC; k++) acc[k] = vdupq_n_u8(0);
    int since = 0;
    for (int i = 0; i < nbytes; i += 16) {
        const uint8x16_t b = vld1q_u8(codes + i);
#pragma GCC unroll 16
        for (int k = 0; k < NC; k++) acc[k] = vsubq_u8(acc[k], vceqq_u8(b, vdupq_n_u8((uint8_t)k)));
        if (++since == 255 || i + 16 >= nbytes) {
#pragma GCC unroll 16
            for (int k = 0; k < NC; k++) {
                tot[k] += vaddlvq_u8(acc[k]);
                acc[k] = vdupq_n_u8(0);
            }
            since = 0;
        }
    }
}

/* group_body on Advanced SIMD: the same numbers (every sum is the same sequence of the same
 * fp64 operations, lane by lane), in form:
 *  - one half of the lanes (4 blocks) at a time: the fp32 steps on one register, the fp64
 *    sums on two;
 *  - x̂'s magnitude q read from qcum[ix] by a byte table lookup (tbl), qcum[k] = ((st0 + st1)
 *    + …) + st(k-1) in fp32, the value group_body's sum of masked steps takes (the threshold
 *    tests are monotone, see group_avx512_body);
 *  - a lane that does not count adds +0.0 (its operands masked to +0.0 before the fused
 *    multiply-add: fma(+0, +0, s) = s), the identity on a sum that starts at +0.0; dx², dq·dx
 *    and dq² are exact in fp64, so fma(dx, dx, s) rounds once as s + dx·dx does; d² keeps
 *    its own rounding;
 *  - the level error sums in a second pass over the stored terms (E), j in order, with the
 *    level's lanes from the stored index (IX: ix where the element counts in the level
 *    statistics, else 8); the code histogram and level counts from stored code bytes by byte
 *    compares (exact);
 *  - unit (mul and d2 are 1 in every counted lane): the two multiplications by 1 left out.
 * E: GRP · B doubles, IX: GRP · B uint32. */
static inline __attribute__((always_inline)) void
group_neon_body(GROUP_ARGS, double *E, uint32_t *IX, const int unit)
{
    const int B = p->block;
    const fp4c_grid *g = &p->grid;
    float qc[8];
    qc[0] = 0.0f;
    for (int k = 1; k < 8; k++) qc[k] = qc[k - 1] + (g->q[k] - g->q[k - 1]);
    uint8x16x2_t qtab;
    qtab.val[0] = vreinterpretq_u8_f32(vld1q_f32(qc));
    qtab.val[1] = vreinterpretq_u8_f32(vld1q_f32(qc + 4));
    float32x4_t md[7];
    for (int i = 0; i < 7; i++) md[i] = vdupq_n_f32(g->mid[i]);
    const float32x4_t gm = vdupq_n_f32(g->gmax);
    const uint32x4_t sgn = vdupq_n_u32(0x80000000u), eight = vdupq_n_u32(8), ff = vdupq_n_u32(0xFF);
    const uint32x4_t byte_off = vdupq_n_u32(0x03020100u), byte_mul = vdupq_n_u32(0x04040404u);
    const uint64x2_t absm64 = vdupq_n_u64(0x7FFFFFFFFFFFFFFFull);
    const float64x2_t one = vdupq_n_f64(1.0);
    /* per element and lane: the histogram code (ix | sign << 3) where counted, else 0xFF, and
     * the level index where the element counts in the level statistics, else 8 */
    uint8_t hc[GRP * GRP_MAX_BLOCK] __attribute__((aligned(16)));
    uint8_t lc[GRP * GRP_MAX_BLOCK] __attribute__((aligned(16)));
    for (int h = 0; h < 2; h++) {
        const int o = 4 * h;
        const float32x4_t vmul = vld1q_f32(mul + o), vdv = vld1q_f32(dv + o);
        const float32x4_t vd1 = vld1q_f32(d1 + o), vd2 = vld1q_f32(d2 + o);
        const int32x4_t vjn = vld1q_s32(jn + o), vak = vld1q_s32(ak + o);
        const uint32x4_t vlive = vtstq_s32(vld1q_s32(lv + o), vld1q_s32(lv + o));
        const float64x2_t se0 = vld1q_f64(se + o), se1 = vld1q_f64(se + o + 2);
        const float64x2_t rs0 = vdivq_f64(one, se0), rs1 = vdivq_f64(one, se1); /* RN(1/s) */
        const float64x2_t z = vdupq_n_f64(0.0);
        float64x2_t sx2_0 = z, se2_0 = z, sxqx_0 = z, sxq2_0 = z, serr_0 = z;
        float64x2_t sx2_1 = z, se2_1 = z, sxqx_1 = z, sxq2_1 = z, serr_1 = z;
        uint32x4_t sat = vdupq_n_u32(0);
        int32x4_t jv = vdupq_n_s32(0);
        for (int j = 0; j < B; j++) {
            const int64_t e = (int64_t)j * GRP + o;
            const float32x4_t x = vld1q_f32(T + e);
            const float32x4_t ax = abs_bits(x);
            const float32x4_t t = vdivq_f32(unit ? ax : vmulq_f32(ax, vmul), vdv);
            const float32x4_t tc = vbslq_f32(vcltq_f32(t, gm), t, gm); /* NaN -> g_max */
            /* RTNE: a tie at md[i] passes iff i is odd (fp4c_rtne_index); a passed test is
             * all ones, so subtracting it counts it */
            uint32x4_t ix = vdupq_n_u32(0);
            ix = vsubq_u32(ix, vcgtq_f32(tc, md[0]));
            ix = vsubq_u32(ix, vcgeq_f32(tc, md[1]));
            ix = vsubq_u32(ix, vcgtq_f32(tc, md[2]));
            ix = vsubq_u32(ix, vcgeq_f32(tc, md[3]));
            ix = vsubq_u32(ix, vcgtq_f32(tc, md[4]));
            ix = vsubq_u32(ix, vcgeq_f32(tc, md[5]));
            ix = vsubq_u32(ix, vcgtq_f32(tc, md[6]));
            /* q = qcum[ix]: bytes 4 ix .. 4 ix + 3 of the table in each lane */
            const float32x4_t q = vreinterpretq_f32_u8(
                vqtbl2q_u8(qtab, vreinterpretq_u8_u32(vmlaq_u32(byte_off, ix, byte_mul))));
            const float32x4_t y = unit ? vmulq_f32(q, vd1) : vmulq_f32(vmulq_f32(q, vd1), vd2);
            const float32x4_t xq = vbslq_f32(sgn, x, y); /* |y| with x's sign (y >= 0) */
            const uint32x4_t c = vcgtq_s32(vjn, jv);                  /* counted */
            const uint32x4_t s = vandq_u32(c, vlive);                 /* in a live block */
            const uint32x4_t l = vbicq_u32(s, vceqq_s32(vak, jv));    /* not the amax */
            sat = vsubq_u32(sat, vandq_u32(s, vcgtq_f32(t, gm)));
            const uint32x4_t neg8 = vandq_u32(vshrq_n_u32(vreinterpretq_u32_f32(x), 28), eight);
            const uint32x4_t hcode = vbslq_u32(c, vorrq_u32(ix, neg8), ff);
            const uint32x4_t lix = vbslq_u32(l, ix, eight);
            const uint8x8_t hb = vmovn_u16(vcombine_u16(vmovn_u32(hcode), vmovn_u32(hcode)));
            const uint8x8_t lb = vmovn_u16(vcombine_u16(vmovn_u32(lix), vmovn_u32(lix)));
            vst1_lane_u32((uint32_t *)(void *)(hc + e), vreinterpret_u32_u8(hb), 0);
            vst1_lane_u32((uint32_t *)(void *)(lc + e), vreinterpret_u32_u8(lb), 0);
            vst1q_u32(IX + e, lix);
            const uint64x2_t c0 = vreinterpretq_u64_s64(vmovl_s32(vget_low_s32(vreinterpretq_s32_u32(c))));
            const uint64x2_t c1 = vreinterpretq_u64_s64(vmovl_high_s32(vreinterpretq_s32_u32(c)));
            const uint64x2_t l0 = vreinterpretq_u64_s64(vmovl_s32(vget_low_s32(vreinterpretq_s32_u32(l))));
            const uint64x2_t l1 = vreinterpretq_u64_s64(vmovl_high_s32(vreinterpretq_s32_u32(l)));
#define NEON_PAIR(k, cm, lm, dx, dq, dqf, sx2, se2, sxqx, sxq2, serr, vse, vrs)                  \
    do {                                                                                        \
        const float64x2_t dxc = and_f64(dx, cm), dqc = and_f64(dq, cm);                         \
        const float64x2_t d = vsubq_f64(dqc, dxc);                                              \
        sx2 = vfmaq_f64(sx2, dxc, dxc);                                                         \
        se2 = vaddq_f64(se2, vmulq_f64(d, d));                                                  \
        sxqx = vfmaq_f64(sxqx, dqc, dxc);                                                       \
        sxq2 = vfmaq_f64(sxq2, dqc, dqc);                                                       \
        const float64x2_t dax = and_f64(dx, absm64); /* = (double)|x| */                       \
        const float64x2_t q0 = vmulq_f64(dax, vrs);                                             \
        const float64x2_t r = vfmsq_f64(dax, q0, vse); /* dax - q0 * s, one rounding */        \
        const float64x2_t qt = vfmaq_f64(q0, r, vrs);  /* q0 + r * (1/s), one rounding */      \
        const float64x2_t el = vsubq_f64(dqf, qt);                                              \
        serr = vaddq_f64(serr, and_f64(el, lm));                                                \
        vst1q_f64(E + e + 2 * (k), el);                                                         \
    } while (0)
            NEON_PAIR(0, c0, l0, vcvt_f64_f32(vget_low_f32(x)), vcvt_f64_f32(vget_low_f32(xq)),
                      vcvt_f64_f32(vget_low_f32(q)), sx2_0, se2_0, sxqx_0, sxq2_0, serr_0, se0,
                      rs0);
            NEON_PAIR(1, c1, l1, vcvt_high_f64_f32(x), vcvt_high_f64_f32(xq),
                      vcvt_high_f64_f32(q), sx2_1, se2_1, sxqx_1, sxq2_1, serr_1, se1, rs1);
#undef NEON_PAIR
            jv = vaddq_s32(jv, vdupq_n_s32(1));
        }
        uint32_t sv[4];
        vst1q_u32(sv, sat);
        for (int b = 0; b < 4; b++) n->sat[o + b] += (int64_t)sv[b];
        vst1q_f64(a->sx2 + o, sx2_0);
        vst1q_f64(a->sx2 + o + 2, sx2_1);
        vst1q_f64(a->se2 + o, se2_0);
        vst1q_f64(a->se2 + o + 2, se2_1);
        vst1q_f64(a->sxqx + o, sxqx_0);
        vst1q_f64(a->sxqx + o + 2, sxqx_1);
        vst1q_f64(a->sxq2 + o, sxq2_0);
        vst1q_f64(a->sxq2 + o + 2, sxq2_1);
        vst1q_f64(a->serr + o, serr_0);
        vst1q_f64(a->serr + o + 2, serr_1);
        /* level error sums, second pass: lane b adds element j's term to level ix's sum, j in
         * order (the first pass's order) */
        float64x2_t ls[8][2];
        for (int i = 0; i < 8; i++) ls[i][0] = ls[i][1] = z;
        for (int j = 0; j < B; j++) {
            const int64_t e = (int64_t)j * GRP + o;
            const float64x2_t el0 = vld1q_f64(E + e), el1 = vld1q_f64(E + e + 2);
            const uint32x4_t iv = vld1q_u32(IX + e);
            const uint64x2_t i0 = vmovl_u32(vget_low_u32(iv)), i1 = vmovl_high_u32(iv);
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++) {
                const uint64x2_t lvl = vdupq_n_u64((uint64_t)i);
                ls[i][0] = vaddq_f64(ls[i][0], and_f64(el0, vceqq_u64(i0, lvl)));
                ls[i][1] = vaddq_f64(ls[i][1], and_f64(el1, vceqq_u64(i1, lvl)));
            }
        }
        for (int i = 0; i < 8; i++) {
            vst1q_f64(a->lsum[i] + o, ls[i][0]);
            vst1q_f64(a->lsum[i] + o + 2, ls[i][1]);
        }
    }
    /* the code histogram and the level counts (exact integers, order-free) */
    uint64_t hist[16] = {0}, lvl[8] = {0};
    count_codes(hc, GRP * B, 16, hist); /* GRP * B: a multiple of 16 (B a power of two >= 2) */
    count_codes(lc, GRP * B, 8, lvl);
    for (int i = 0; i < 8; i++) {
        n->pos[i] += (int64_t)hist[i];
        n->neg[i] += (int64_t)hist[8 + i];
        n->lvl[i] += (int64_t)lvl[i];
    }
}

/* One row on NEON: per group the cached or loaded blocks, the parameters, the kernel and the
 * block-order merge into the chunk partial (group_merge, as group_quant). */
static void row_neon(ROW_ARGS)
{
    const int B = p->block, nblk = p->nblk;
    /* the kernel's level terms and indices, after W in the scratch (fp4_qplan_scratch_floats) */
    double *E = (double *)(void *)(((uintptr_t)(W + (int64_t)GRP * B) + 63) & ~(uintptr_t)63);
    uint32_t *IX = (uint32_t *)(void *)(E + (int64_t)GRP * ((B + 7) & ~7));
    for (int k0 = 0; k0 < nblk; k0 += GRP) {
        ROW_GROUP_SETUP(load_neon, group_params);
        grp_acc a;
        if (unit)
            group_neon_body(p, gi.T, mul, dv, d1, d2, se, jn, lv, gi.ak, &a, n, E, IX, 1);
        else
            group_neon_body(p, gi.T, mul, dv, d1, d2, se, jn, lv, gi.ak, &a, n, E, IX, 0);
        if (bse) memcpy(bse + k0, a.se2, (size_t)nb * sizeof *bse);
        group_merge(&a, gi.am, gi.bad, nb, jnv, uf, sb, scales ? scales + k0 : NULL,
                    &pr[k0 / FP4_CHUNK_BLOCKS]);
    }
}

/* group_params_nv as this variant compiles it (fp4_engine.nv_params: the tests) */
static void nv_params_neon(NV_ARGS) { group_params_nv(NV_PASS); }

static const fp4_engine neon = {FP4_ISA_NEON, group_neon, load_neon, row_neon, 0, nv_params_neon, 0};

const fp4_engine *fp4_engine_arm(fp4_isa isa) { return isa == FP4_ISA_NEON ? &neon : NULL; }
#else
const fp4_engine *fp4_engine_arm(fp4_isa isa)
{
    (void)isa;
    return NULL;
}
#endif
