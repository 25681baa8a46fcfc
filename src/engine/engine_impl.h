/* engine_impl.h — inside the CPU engine only: the grouped RTNE kernel's layout (GRP blocks
 * transposed into SIMD lanes), its portable body and loaders (GCC vectors, instantiated by
 * each variant with its own target), the per-lane block parameters, the variant record and
 * the scalar reference block quantizer of ref.c. */
#ifndef FP4_ENGINE_IMPL_H
#define FP4_ENGINE_IMPL_H

#include <string.h>

#include "engine/engine.h"

/* grouped RTNE kernel: blocks per group (lanes), largest block it takes */
#define GRP 8
_Static_assert(GRP * 255 < 65536, "onehot_flush sums GRP byte counters in 16-bit fields");
_Static_assert(FP4_CHUNK_BLOCKS % GRP == 0, "a group never straddles two chunks");
#define GRP_MAX_BLOCK 1024

/* Per-block scale parameters (SPEC §3), from common.h so that the kernels compute the same. */
typedef fp4c_blk_par blk_par;

static inline void block_params(const fp4_qplan *p, float amax_b, float amax_s, blk_par *bp)
{
    *bp = fp4c_block_params((int)p->cfg.scale, &p->grid, p->ts, p->nv_m, p->nv_sdec,
                            p->cfg.mx_rule == FP4_MX_RCEIL, amax_b, amax_s);
}

/* Block amax over finite values, the first index that attains it, and whether any value is
 * non-finite (ref.c and stats.c). */
static inline float fp4_block_amax(const float *v, int n, int *arg, int *nonfinite)
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

/* stats.c: the recipe statistics (SPEC §5.1) of one prepared row v (padded_len entries,
 * rotated when RHT) into its chunk partials pr (row-major, nchunk): the same blocks, scale
 * amax (tamax: the 16x16 tile amax per block with weight_2d, else NULL) and SR element index
 * (rowidx + j) as fp4_ref_block_quant, the same x̂ bits. Counts exact, the max order-free; each
 * block's fp64 sums start at 0 and run in element order, then go to its chunk partial in
 * block order. w: GRP * block floats of scratch. Every variant calls this one function (its
 * loop compiled per instruction set, the same bits), so they give the same statistics. */
void fp4_row_stats(const fp4_qplan *p, const float *v, const float *tamax, uint64_t rowidx,
                   float *w, fp4_metrics *pr);

/* ref.c: one block of one row, the scalar reference (SPEC §2–§5): v[0..B) values (rotated
 * when RHT), jn of them counted in the metrics, scale from amax_s (own amax, or the 16x16 tile
 * amax with weight_2d), SR element index idx0 + j; outputs may be NULL; sums added to the
 * chunk partial m in the documented order. Every variant gives its bits. */
void fp4_ref_block_quant(const fp4_qplan *p, const float *v, int jn, float amax_s, uint64_t idx0,
                         float *deq, uint8_t *codes, uint8_t *scale_out, fp4_metrics *m);

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

/* The recipe statistics (SPEC §5.1) of one group, lane b = block b: over the block's counted
 * entries other than its amax element (first index), Σx² and Σ(x̂ − x)² in fp64, each from
 * +0.0 in element order; over all its counted entries the max |x̂ − x| (fp64 of the fp32
 * values), the entries with x != 0 (nz) and of those the ones with x̂ == 0 (uf). A lane without
 * counted entries (past the row, or a non-finite block) holds zeros. Filled by stats.c's pass
 * (fp4_row_stats, fp4_row_stats_grouped) or, in the same loop as its kernel's sums, by a
 * variant's row kernel (fp4_engine.row_stats); merged by fp4_stats_group_merge. */
typedef struct st_acc {
    double sx2[GRP], se2[GRP], mx[GRP];
    int64_t nz[GRP], uf[GRP];
} st_acc;

/* stats.c: one group's statistics o into the chunk partial m (the block sums in block order;
 * the max and the counts are order-free) and its block-scale histograms into the row's first
 * chunk partial m0, over the lanes with counted entries: cnt[b] > 0, the counted entries of a
 * finite block (0 past the row or for a non-finite block: the kernels' jn); am[b]: the block's
 * amax, sb[b]: its stored scale byte (block_params' sbyte). */
void fp4_stats_group_merge(const fp4_qplan *p, const float *am, const uint8_t *sb,
                           const int32_t *cnt, const st_acc *o, fp4_metrics *m, fp4_metrics *m0);

/* The relative-error bins kb[0..n) (SPEC §5.1, fp4_rerr_bin; a byte >= 128 counts nothing)
 * into rh, apart from the vector loops that compute them (a bin's store inside the loop
 * would keep clearing its speculative loads). Returns 0, the entries left in kb. */
static inline int fp4_rerr_count(uint64_t *rh, const uint8_t *kb, int n)
{
    for (int i = 0; i < n; i++) rh[kb[i] & 127] += (uint64_t)((kb[i] >> 7) ^ 1);
    return 0;
}

/* fp4_rerr_count for buffers of thousands of entries (n <= 4 · 65535): four sets of 16-bit
 * counters take the entries in turn, then are added into rh. The entries of a tensor crowd
 * into a few bins, and with one set each increment of a bin waits for the last one's store
 * (store-to-load forwarding, ~5 cycles an entry). Exact integer counts: the same totals; the
 * sets' clearing and adding (2 KiB, 128 bins) are paid once per call. */
static inline int fp4_rerr_count_bulk(uint64_t *rh, const uint8_t *kb, int n)
{
    uint16_t c[4][256]; /* indexed by the whole byte: bins 128..255 are never read */
    memset(c, 0, sizeof c);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        c[0][kb[i]]++;
        c[1][kb[i + 1]]++;
        c[2][kb[i + 2]]++;
        c[3][kb[i + 3]]++;
    }
    for (; i < n; i++) c[0][kb[i]]++;
    for (int k = 0; k < FP4_RERR_BINS; k++)
        rh[k] += (uint64_t)c[0][k] + (uint64_t)c[1][k] + (uint64_t)c[2][k] + (uint64_t)c[3][k];
    return 0;
}

#define vf_bits(m) ((v8f)(m))
#define vd_and(a, m) ((v8d)((v8l)(a) & (m)))

/* one-hot byte counters (8 lanes) -> per-level totals: the even and the odd bytes of every
 * lane are summed as 16-bit fields of one word (8 lanes x 255 < 2^16: no carry between
 * fields), then split into the 8 level totals */
static inline void onehot_flush(int64_t *raw, int64_t *out)
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

static inline void grp_cnt_flush(grp_cnt *n)
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

/* fp4c_block_params' fp32 case for one group, lane by lane in a loop the compiler vectorizes
 * (the same IEEE quotient); a lane that is past nb or non-finite is dead (jn 0). */
static inline __attribute__((always_inline)) void
group_params_fp32(const fp4_qplan *p, const float *am, const int32_t *bad, int nb,
                  const int *jnv, float *mul, float *dv, float *d1, float *d2, double *se,
                  int32_t *jn, int32_t *lv, int32_t *uf, uint8_t *sb)
{
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
}

/* fp4c_block_params' nvfp4 case (SPEC §3) for the GRP lanes at once, in GCC vectors compiled
 * by each variant: the same fp32 operations in the same order, lane by lane. v = amax_s · m
 * then fp4c_minf(v, 448) (v < 448 ? v : 448); its E4M3 byte as fp4c_e4m3_encode (NaN 0, not
 * below 448 0x7E, below 2^-6 the subnormal step by adding and taking off 2^23, else RTNE of
 * the bits to 3 mantissa bits, at most 0x7E); ef its value as fp4c_e4m3_decode (codes <= 0x7E:
 * never NaN); mul = fp4c_minf(1 / (ef · S_dec), FLT_MAX); s_eff = (double)(ef · S_dec);
 * live: amax_b > 0 and s_eff > 0; underflow: amax_b > 0 and not live. m: p->nv_m (the
 * config's scale to g_max) or p->nv_m4 (Four over Six's scale to 4). Outputs as group_params
 * (div is 1 in every lane); a lane past nb or non-finite is dead (mul 0, d1 d2 0, se 1, jn 0,
 * not live, no underflow, sbyte 0). test_engine compares it with fp4c_block_params. */
typedef uint32_t v8u __attribute__((vector_size(32)));
static inline __attribute__((always_inline)) void
group_params_nv(const fp4_qplan *p, const float *am, const int32_t *bad, const float *tile,
                int nb, const int *jnv, float m, float *mul, float *dv, float *d1, float *d2,
                double *se, int32_t *jn, int32_t *lv, int32_t *uf, uint8_t *sb)
{
    v8f amb, ams;
    v8i vbad, vjn;
    memcpy(&amb, am, sizeof amb);
    if (p->cfg.weight_2d) /* the tile amax: nb entries */
        for (int k = 0; k < GRP; k++) ams[k] = k < nb ? tile[k] : 0.0f;
    else
        ams = amb;
    memcpy(&vbad, bad, sizeof vbad);
    memcpy(&vjn, jnv, sizeof vjn);
    const v8i lane = {0, 1, 2, 3, 4, 5, 6, 7};
    const v8i ok = (lane < nb) & (vbad == 0);
    const v8f zf = {0}, e4max = zf + FP4C_E4M3_MAX, fmax = zf + FP4C_FLT_MAX;
    const v8f sdec = zf + p->nv_sdec;
    /* fp4c_minf(amax_s * m, 448) */
    const v8f pr = ams * (zf + m);
    const v8i plt = pr < e4max;
    const v8f v = vf_bits(((v8i)pr & plt) | ((v8i)e4max & ~plt));
    /* fp4c_e4m3_encode(v) */
    const v8f av = vf_bits((v8i)v & 0x7FFFFFFF);
    const v8i isnan = av != av, big = ~(av < e4max) & ~isnan, sub = av < 0.015625f;
    const v8f avs = vf_bits((v8i)av & sub); /* the subnormal step's lanes (no out-of-range
                                               conversion in the others) */
    const v8i csub = __builtin_convertvector((avs * 512.0f + 8388608.0f) - 8388608.0f, v8i);
    v8u b = (v8u)av;
    b += 0x7FFFFu + ((b >> 20) & 1u);
    b &= ~0xFFFFFu;
    v8i cn = ((((v8i)(b >> 23) - 127) + 7) << 3) | (v8i)((b >> 20) & 7u);
    cn = (v8i)((cn & (cn <= 0x7E)) | (0x7E & (cn > 0x7E)));
    const v8i code = (0x7E & big) | (csub & sub) | (cn & ~sub & ~big & ~isnan);
    /* fp4c_e4m3_decode(code) */
    const v8i ce = (code >> 3) & 15, cm = code & 7;
    const v8f dsub = __builtin_convertvector(cm, v8f) * (1.0f / 512.0f);
    const v8f dnorm = vf_bits(((ce - 7 + 127) << 23) | (cm << 20));
    const v8i e0 = ce == 0;
    const v8f ef = vf_bits(((v8i)dsub & e0) | ((v8i)dnorm & ~e0));
    const v8f s = ef * sdec;
    const v8f r = (zf + 1.0f) / s;
    const v8i rlt = r < fmax;
    const v8f vmul = vf_bits(((v8i)r & rlt) | ((v8i)fmax & ~rlt));
    const v8i pos = amb > zf;
    const v8i live = ok & pos & (s > zf);
    const v8i ufl = ok & pos & ~live;
    const v8f vd1 = vf_bits((v8i)ef & ok), vd2 = vf_bits((v8i)sdec & ok);
    const v8f vm = vf_bits((v8i)vmul & ok);
    memcpy(mul, &vm, sizeof vm);
    memcpy(d1, &vd1, sizeof vd1);
    memcpy(d2, &vd2, sizeof vd2);
    const v8d sd = __builtin_convertvector(s, v8d);
    const v8l live64 = __builtin_convertvector(live, v8l);
    const v8d vse = (v8d)(((v8l)sd & live64) | ((v8l)((v8d){0} + 1.0) & ~live64));
    memcpy(se, &vse, sizeof vse);
    const v8i vj = vjn & ok, vl = live & 1, vu = ufl & 1;
    memcpy(jn, &vj, sizeof vj);
    memcpy(lv, &vl, sizeof vl);
    memcpy(uf, &vu, sizeof vu);
    for (int k = 0; k < GRP; k++) {
        dv[k] = 1.0f;
        sb[k] = (uint8_t)(code[k] & ok[k]);
    }
}

#define NV_ARGS                                                                                 \
    const fp4_qplan *p, const float *am, const int32_t *bad, const float *tile, int nb,         \
        const int *jnv, float m, float *mul, float *dv, float *d1, float *d2, double *se,       \
        int32_t *jn, int32_t *lv, int32_t *uf, uint8_t *sb
#define NV_PASS p, am, bad, tile, nb, jnv, m, mul, dv, d1, d2, se, jn, lv, uf, sb
typedef void (*nv_fn)(NV_ARGS);

/* A group's kernel sums a and per-lane flags into the chunk partial m: the block-order merge of
 * the 13 fp64 sums, the block counts, the amax and the scale bytes (scale_out may be NULL). */
static inline __attribute__((always_inline)) void
group_merge(const grp_acc *ap, const float *am, const int32_t *bad, int nb, const int *jnv,
            const int32_t *uf, const uint8_t *sb, uint8_t *scale_out, fp4_metrics *m)
{
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
        l0 += ap->lsum[0][b];
        l1 += ap->lsum[1][b];
        l2 += ap->lsum[2][b];
        l3 += ap->lsum[3][b];
        l4 += ap->lsum[4][b];
        l5 += ap->lsum[5][b];
        l6 += ap->lsum[6][b];
        l7 += ap->lsum[7][b];
        sx2 += ap->sx2[b];
        se2 += ap->se2[b];
        sxqx += ap->sxqx[b];
        sxq2 += ap->sxq2[b];
        serr += ap->serr[b];
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

/* Four over Six (SPEC §5.1) of one group into the chunk partial m, blocks in order: per lane
 * with counted entries (cnt[b] > 0: the kernels' jn), the block's error of the scale to 6
 * (e6: the config's Σ(x̂ − x)², grp_acc.se2) and of the scale to 4 (e4), the smaller one
 * (the 6 on a tie) added to fos_err2 (stats.c's pass and the row kernels that compute e4
 * themselves, fp4_engine.row_fos: the same additions in the same order). */
static inline __attribute__((always_inline)) void fp4_fos_group_merge(const double *e6,
                                                                      const double *e4,
                                                                      const int32_t *cnt,
                                                                      fp4_metrics *m)
{
    double te = m->fos_err2;
    uint64_t nf = 0, n4 = 0;
    for (int b = 0; b < GRP; b++) {
        if (cnt[b] <= 0) continue;
        const int four = e4[b] < e6[b];
        nf++;
        n4 += (uint64_t)four;
        te += four ? e4[b] : e6[b];
    }
    m->fos_err2 = te;
    m->fos_blocks += nf;
    m->fos_blocks4 += n4;
}

/* Whether a row kernel with fp4_engine.row_fos computes Four over Six for p itself: where it
 * applies (fp4_fos_applies, which implies the e2m1 grid; the kernels' scale-to-4 pass is
 * written for it, so the grid is checked here too) */
static inline int fp4_row_fos_in_kernel(const fp4_qplan *p)
{
    return fp4_fos_applies(&p->cfg) && p->grid.kind == FP4C_GRID_E2M1;
}

typedef void (*group_fn)(GROUP_ARGS);
/* a whole row of groups (the chunk partials pr of the row, counts into n); Tb, W: scratch;
 * bse (NULL: not wanted): each block's Σ(x̂ − x)² over its counted entries (grp_acc.se2, the
 * sum the kernel adds to the chunk partial), nblk doubles, for Four over Six's scale to 6 */
#define ROW_ARGS                                                                                \
    const fp4_qplan *p, const float *v, const grp_in *row, const float *tamax, uint8_t *scales, \
        fp4_metrics *pr, grp_cnt *n, float *Tb, float *W, double *bse
#define ROW_PASS p, v, row, tamax, scales, pr, n, Tb, W, bse
typedef void (*row_fn)(ROW_ARGS);

/* The lane set-up of a whole-row kernel (row_neon, row_avx2_body) for the group of blocks
 * from k0: nb blocks, loaded by LOAD or taken from the row's cache (group_at: gi, with jnv,
 * amb, akb, badb), the per-lane parameters (group_params_fp32 for fp32 scales, else PARAMS:
 * group_params or a variant's compiled copy of it) and `unit` (every counted lane has
 * mul == d2 == 1). Declares those names in the loop body; expects p, v, row, k0, nblk, Tb, W
 * and tamax. A macro, so that each variant compiles it under its own target. */
#define ROW_GROUP_SETUP(LOAD, PARAMS)                                                           \
    const int nb = nblk - k0 < GRP ? nblk - k0 : GRP;                                           \
    int jnv[GRP];                                                                               \
    float amb[GRP];                                                                             \
    int32_t akb[GRP], badb[GRP];                                                                \
    const grp_in gi = group_at(p, v, row, k0, nb, LOAD, Tb, W, amb, akb, badb, jnv);            \
    float mul[GRP], dv[GRP], d1[GRP], d2[GRP];                                                  \
    double se[GRP];                                                                             \
    int32_t jn[GRP], lv[GRP], uf[GRP];                                                          \
    uint8_t sb[GRP];                                                                            \
    if (p->cfg.scale == FP4_SCALE_FP32)                                                         \
        group_params_fp32(p, gi.am, gi.bad, nb, jnv, mul, dv, d1, d2, se, jn, lv, uf, sb);      \
    else                                                                                        \
        PARAMS(p, gi.am, gi.bad, tamax ? tamax + k0 : NULL, nb, jnv, mul, dv, d1, d2, se, jn,   \
               lv, uf, sb);                                                                     \
    int unit = 1;                                                                               \
    for (int b = 0; b < GRP; b++) unit &= jn[b] <= 0 || (mul[b] == 1.0f && d2[b] == 1.0f)

/* stats.c: fp4_row_stats for the grouped path (RTNE, block <= GRP_MAX_BLOCK), from the groups
 * as the kernel reads them (row: the row's cached groups, else loaded by `load` into Tb, W)
 * and the kernel's per-lane parameters: the same statistics, without a second amax scan. */
void fp4_row_stats_grouped(const fp4_qplan *p, const float *v, const grp_in *row,
                           const float *tamax, load_fn load, float *Tb, float *W,
                           fp4_metrics *pr);

/* stats.c: the statistics of SPEC §5.1 that run as their own pass after the row kernel, on
 * the groups the kernel read: Four over Six (FP4_XS_FOS: fos_blocks, fos_blocks4, fos_err2;
 * where fp4_fos_applies) and the error split (FP4_XS_SPLIT: split_*; where fp4_split_applies).
 * fp4_row_extra_what: the set for p's config (0: none). One prepared row into its chunk
 * partials pr; each block's sums fp64 from +0.0 in element order, added in block order:
 *   fp4_row_extra_grouped: from the row's groups as the grouped kernel reads them (row: the
 *     cached groups, else loaded by `load` into Tb, W: scratch as fp4_row_stats_grouped);
 *     bse: the row kernel's per-block Σ(x̂ − x)² (ROW_ARGS), Four over Six's error of the
 *     scale to 6 (the config's x̂: the same sum, bit for bit), or NULL: computed here;
 *   fp4_row_extra: from v itself (any block size), w: GRP * block floats of scratch.
 * The same bits on every variant (lane loops compiled per instruction set, no contraction). */
enum { FP4_XS_FOS = 1, FP4_XS_SPLIT = 2 };
int fp4_row_extra_what(const fp4_qplan *p);
void fp4_row_extra_grouped(const fp4_qplan *p, const float *v, const grp_in *row,
                           const float *tamax, load_fn load, float *Tb, float *W, fp4_metrics *pr,
                           int what, const double *bse);
void fp4_row_extra(const fp4_qplan *p, const float *v, const float *tamax, float *w,
                   fp4_metrics *pr, int what);

/* One variant: the per-group body (group_quant), the group loader and the whole-row kernel
 * (or NULL: group by group). row_stats: the row kernel also computes the recipe statistics
 * of its groups (st_acc, fp4_stats_group_merge) in its own pass over the elements, so that
 * stats.c's second pass (fp4_row_stats_grouped) is skipped; the same bits either way.
 * Whether this CPU runs it, and which one runs, base/isa.c decides; the RHT follows the same
 * choice (fp4_rht_forward). */
struct fp4_engine {
    fp4_isa isa;
    group_fn body;
    load_fn load;
    row_fn row;
    int row_stats;
    nv_fn nv_params; /* group_params_nv as this variant compiles it (for the tests; NULL: none) */
    /* the row kernel also computes Four over Six (FP4_XS_FOS) in its own pass over the
     * elements (fp4_fos_group_merge), so that stats.c's pass leaves it out; the same bits */
    int row_fos;
};

/* The variants each file compiles: generic.c always; arch/x86.c (avx2, avx512) on x86-64
 * GCC/Clang builds, arch/arm.c (neon) on aarch64 builds; NULL where not compiled. */
extern const fp4_engine fp4_engine_generic;
const fp4_engine *fp4_engine_x86(fp4_isa isa);
const fp4_engine *fp4_engine_arm(fp4_isa isa);

#endif
