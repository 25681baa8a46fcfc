/* quant.cu — the fused GPU pass: load a tile of chunks, RHT in place (fp64 butterfly), block
 * scales, quantization and fp64 statistics in one read of the input; plus the pass-1 amax and
 * the weight_2d tile amax. Level choice, codecs and Philox are common.h's (SPEC §2-§5, §7); the
 * per-block arithmetic mirrors fp4_ref_block_quant() in src/engine/ref.c operation for operation. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include <type_traits>

#include "base/common.h"
#include "kernels.h"

namespace {

constexpr int CHUNK_BLOCKS = FP4C_CHUNK_BLOCKS; /* common.h */

/* Per-launch constants derived once on the host. */
struct KP {
    fp4k_cfg c;
    int64_t cpr;       /* chunks per row */
    int64_t chunk_len; /* CHUNK_BLOCKS * block */
    int64_t nchunks;   /* in this launch */
    int64_t row0;      /* global index of the launch's first row */
    int64_t nblk;      /* blocks per row */
    double rs;         /* sqrt(rht_n), as rht.c computes it */
};

/* ---- RHT butterflies: common.h's order (stride 1, 2, 4, ...), then / sqrt(n) once --------- */

__device__ __forceinline__ float rht_out(double v, double rs, int n)
{
    /* powers of four: division by an exact power of two == multiplication by its inverse */
    if (n == 16) return (float)__dmul_rn(v, 0.25);
    if (n == 64) return (float)__dmul_rn(v, 0.125);
    if (n == 256) return (float)__dmul_rn(v, 0.0625);
    return (float)__ddiv_rn(v, rs);
}

/* One group of 16 held by one thread. */
__device__ __forceinline__ void rht16_thread(float *x, const float *sg)
{
    double v[16];
#pragma unroll
    for (int i = 0; i < 16; i++) v[i] = __dmul_rn((double)x[i], (double)sg[i]);
#pragma unroll
    for (int h = 1; h < 16; h <<= 1)
#pragma unroll
        for (int i = 0; i < 16; i++)
            if ((i & h) == 0) {
                double a = v[i], b = v[i + h];
                v[i] = __dadd_rn(a, b);
                v[i + h] = __dsub_rn(a, b);
            }
#pragma unroll
    for (int i = 0; i < 16; i++) x[i] = (float)__dmul_rn(v[i], 0.25);
}

/* One group of N >= 32 held by a warp: lane l holds elements l + 32 k, k < N/32. Same adds as
 * the serial butterfly: for stride h < 32 the partner is lane l ^ h. */
template <int N>
__device__ __forceinline__ void rht_warp(double (&v)[N / 32], int lane)
{
#pragma unroll
    for (int h = 1; h < 32; h <<= 1) {
#pragma unroll
        for (int k = 0; k < N / 32; k++) {
            double o = __shfl_xor_sync(0xffffffffu, v[k], h);
            v[k] = (lane & h) ? __dsub_rn(o, v[k]) : __dadd_rn(v[k], o);
        }
    }
#pragma unroll
    for (int hk = 1; hk < N / 32; hk <<= 1)
#pragma unroll
        for (int k = 0; k < N / 32; k++)
            if ((k & hk) == 0) {
                double a = v[k], b = v[k + hk];
                v[k] = __dadd_rn(a, b);
                v[k + hk] = __dsub_rn(a, b);
            }
}

/* ---- the fused kernel ---------------------------------------------------------------------- */

/* W: stage width in elements (>= block, >= RHTN, multiple of 64); T: threads = chunks per CTA.
 * Thread t owns chunk blockIdx.x * T + t and sums it sequentially, as the CPU does. */
/* The integer counters of one CTA of a fused kernel, flushed once (order-free, exact): warp sums
 * of each thread's 10 counters (one atomic per warp and counter), the warp max of the block
 * amax, then the 16 code counts and 8 level counts from shared memory — hist: 16 x nt per-thread
 * code counts (code k of thread t at hist[k * nt + t]); excl: 8 x nt counted elements left out
 * of the level statistics. Every thread calls it, after a barrier that publishes hist/excl. */
__device__ __forceinline__ void flush_counts(unsigned long long *counts, const uint32_t (&cv)[10],
                                             float amax_max, const uint32_t *hist,
                                             const uint32_t *excl, int nt, int tid)
{
    const int ci_idx[10] = {FP4K_C_ZERO, FP4K_C_NAN, FP4K_C_INF, FP4K_C_SATURATED,
                            FP4K_C_CLIPPED, FP4K_C_BLOCKS, FP4K_C_ZERO_BLOCKS,
                            FP4K_C_UNDERFLOW_BLOCKS, FP4K_C_NONFINITE_BLOCKS, FP4K_C_SIGNED_N};
#pragma unroll
    for (int i = 0; i < 10; i++) {
        const uint32_t v = __reduce_add_sync(0xffffffffu, cv[i]);
        if ((tid & 31) == 0 && v) atomicAdd(&counts[ci_idx[i]],
                                            (unsigned long long)v);
    }
    for (int o = 16; o > 0; o >>= 1)
        amax_max = fmaxf(amax_max, __shfl_xor_sync(0xffffffffu, amax_max, o));
    if ((tid & 31) == 0 && amax_max > 0.f)
        atomicMax(&counts[FP4K_C_AMAX],
                  (unsigned long long)__float_as_uint(amax_max));
    if (tid < 24) {
        unsigned long long sum = 0;
        if (tid < 16) {
            for (int t = 0; t < nt; t++) sum += hist[tid * nt + t];
            if (sum) atomicAdd(&counts[FP4K_C_HIST0 + tid], sum);
        } else {
            /* level counts: counted elements at the level minus those left out */
            const int lv = tid - 16;
            for (int t = 0; t < nt; t++)
                sum += (unsigned long long)hist[lv * nt + t] + hist[(lv + 8) * nt + t] -
                       excl[lv * nt + t];
            if (sum) atomicAdd(&counts[FP4K_C_LEVEL0 + lv], sum);
        }
    }
}

/* RTNE on a grid of kind GK (FP4C_GRID_*, common.h) for tc in [0, g_max] (clamped, finite):
 * the magnitude index ix, the level q (fp32) and a key for the level's fp64 value (rtne_qd).
 * Equal to fp4c_rtne_index and q[ix] for every such tc — checked exhaustively for every fp32 tc
 * in [0, g_max] of e2m1, e1m2 and int4 by kernels/bench/check_rtne.c, which runs these very
 * functions on the host.
 *  - UNIFORM (q_i = i * step, step a power of two): s = RN(tc + 2^23 * step). That sum lies in
 *    [2^23 step, 2^24 step), whose ulp is step, so RN rounds tc to the nearest multiple k * step,
 *    a tie to the even k (the sum's last mantissa bit is k's parity, 2^23 step having none):
 *    the same integer as fp4c_rtne_index_uniform's rne_int(tc / step). Then k = bits(s) & 7
 *    (2^23 step has a zero mantissa) and q = s - 2^23 step = k * step, exact (Sterbenz).
 *  - E2M1: c = 2^(max(E, 0) + 22), E = floor(log2 tc): the ulp of tc + c is 2^(E - 1) for tc >= 1
 *    (one mantissa bit of tc kept: levels 1, 1.5, 2, 3, 4, 6) and 0.5 below 1 (levels 0, 0.5, 1),
 *    ties to the even k = mantissa of s (k in 0..4; the even k is the even index, as in
 *    fp4c_rtne_index_e2m1). ix = k + 2 max(E, 0), with 2 max(E, 0) = (bits(c) >> 22) - 298;
 *    q = s - c, exact.
 *  - GENERIC: the midpoint chain on >= thresholds (th[i] = mid[i], nextup(mid[i]) for even i:
 *    tc > m <=> tc >= nextup(m)), q from the level table. */
struct RtneK {
    float cU;     /* UNIFORM: 2^23 * step */
    uint32_t qhi; /* UNIFORM: high word of 2^52 * step */
    double qK;    /* UNIFORM: (2^52 + bits(cU)) * step */
    float th[7];  /* GENERIC */
};

template <int GK>
__device__ __forceinline__ RtneK rtne_make(const fp4c_grid &g)
{
    RtneK k;
    k.cU = 0.f;
    k.qhi = 0;
    k.qK = 0.0;
    if (GK == FP4C_GRID_UNIFORM) {
        const double two52s = 4503599627370496.0 * (double)g.q[1];
        k.cU = __fmul_rn(8388608.0f, g.q[1]);
        k.qhi = (uint32_t)__double2hiint(two52s);
        k.qK = __dadd_rn(two52s, __dmul_rn((double)__float_as_uint(k.cU), (double)g.q[1]));
    }
#pragma unroll
    for (int i = 0; i < 7; i++)
        k.th[i] = GK != FP4C_GRID_GENERIC ? 0.f
                  : (i & 1)               ? g.mid[i]
                                          : __uint_as_float(__float_as_uint(g.mid[i]) + 1u);
    return k;
}

/* ix and q of tc; key: UNIFORM bits(s) (rtne_qd's input), else ix. */
template <int GK>
__device__ __forceinline__ int rtne_level(const RtneK &k, const float *s_q, float tc, float &q,
                                          uint32_t &key)
{
    if (GK == FP4C_GRID_UNIFORM) {
        const float s = __fadd_rn(tc, k.cU);
        q = __fsub_rn(s, k.cU);
        key = __float_as_uint(s);
        return (int)(key & 7u);
    } else if (GK == FP4C_GRID_E2M1) {
        const uint32_t cb = max(__float_as_uint(tc) & 0x7F800000u, 0x3F800000u) + 0x0B000000u;
        const float c = __uint_as_float(cb);
        const float s = __fadd_rn(tc, c);
        q = __fsub_rn(s, c);
        const int ix = (int)((__float_as_uint(s) & 7u) + (cb >> 22)) - 298;
        key = (uint32_t)ix;
        return ix;
    } else {
        int ix = 0;
#pragma unroll
        for (int i = 0; i < 7; i++) ix += tc >= k.th[i];
        q = s_q[ix];
        key = (uint32_t)ix;
        return ix;
    }
}

/* (double)q of rtne_level's level. UNIFORM: the double with high word hi(2^52 step) and low word
 * bits(s) is (2^52 + bits(s)) * step (ulp step in that binade); minus qK = (2^52 + bits(cU)) step
 * it is (bits(s) - bits(cU)) * step = k * step, exact — one fp64 add instead of a table load. */
template <int GK>
__device__ __forceinline__ double rtne_qd(const RtneK &k, const double *s_qd, uint32_t key)
{
    if (GK == FP4C_GRID_UNIFORM)
        return __dsub_rn(__hiloint2double((int)k.qhi, (int)key), k.qK);
    return s_qd[key];
}

template <int W, int T, int RHTN>
__global__ void __launch_bounds__(T) k_quant(const KP p, const float *__restrict__ in,
                                             const float *__restrict__ signs,
                                             const float *__restrict__ tile_amax,
                                             double *__restrict__ part,
                                             unsigned long long *__restrict__ counts,
                                             uint8_t *__restrict__ codes,
                                             uint8_t *__restrict__ scales)
{
    constexpr int LD = W + 4; /* row pitch: float4 reads by consecutive threads hit all banks */
    __shared__ __align__(16) float tile[T * LD];
    __shared__ uint32_t hist[16 * T];
    __shared__ uint32_t excl[8 * T]; /* counted elements left out of the level statistics */
    __shared__ float sg[RHTN > 0 ? RHTN : 1];
    __shared__ float s_q[8];
    __shared__ fp4c_grid s_grid; /* SR indexes levels at run time: keep that off the stack */
    __shared__ int64_t s_in[T]; /* input offset of the chunk's first element */
    __shared__ int s_real[T];   /* elements of the chunk inside row_len */

    const int tid = threadIdx.x;
    const int64_t g = (int64_t)blockIdx.x * T + tid;
    const bool live_chunk = g < p.nchunks;
    const int64_t row = live_chunk ? g / p.cpr : 0;
    const int64_t col0 = (live_chunk ? g - row * p.cpr : 0) * p.chunk_len;
    const int len = live_chunk ? (int)min(p.chunk_len, p.c.padded_len - col0) : 0;
    s_in[tid] = row * p.c.row_len + col0;
    s_real[tid] = live_chunk ? (int)max((int64_t)0, min((int64_t)len, p.c.row_len - col0)) : 0;
#pragma unroll
    for (int i = 0; i < 16; i++) hist[i * T + tid] = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) excl[i * T + tid] = 0;
    double lerr_r[8] = {0, 0, 0, 0, 0, 0, 0, 0}; /* per-level chunk sums */
    uint64_t hp = 0, hn = 0; /* packed 8-bit histogram counters, flushed every <= 128 elements */
    if (tid == 0) s_grid = p.c.grid;
    if (tid < 8) {
        s_q[tid] = p.c.grid.q[tid];
    }
    if (RHTN > 0)
        for (int i = tid; i < RHTN; i += T) sg[i] = signs[i];

    const fp4c_grid gr = p.c.grid;
    const float gmax = gr.gmax;
    const RtneK rkq = rtne_make<FP4C_GRID_UNIFORM>(gr); /* zeros unless the grid is uniform */
    const int B = p.c.block;
    const bool vec = (p.c.row_len & 3) == 0;
    const bool sr = p.c.rounding != 0;
    const int nstages = (int)((p.chunk_len + W - 1) / W);
    const int64_t grow = p.row0 + row;
    double c_x2 = 0, c_err2 = 0, c_xqx = 0, c_xq2 = 0, c_serr = 0;
    uint32_t n_zero = 0, n_nan = 0, n_inf = 0, n_sat = 0, n_blk = 0, n_zb = 0, n_uf = 0,
             n_nf = 0, n_serr = 0;
    float amax_max = 0.f;

    for (int s = 0; s < nstages; s++) {
        __syncthreads();
        /* load the T x W tile; count zeros / NaN / Inf of the raw input on the way */
        if (vec) {
#pragma unroll 4
            for (int k = 0; k < W / 4; k++) {
                const int idx = k * T + tid;
                const int t = idx / (W / 4), j = (idx % (W / 4)) * 4;
                const int pos = s * W + j;
                float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
                if (pos < s_real[t]) {
                    v = __ldg((const float4 *)(in + s_in[t] + pos));
                    const uint32_t a0 = __float_as_uint(v.x) & 0x7FFFFFFFu,
                                   a1 = __float_as_uint(v.y) & 0x7FFFFFFFu,
                                   a2 = __float_as_uint(v.z) & 0x7FFFFFFFu,
                                   a3 = __float_as_uint(v.w) & 0x7FFFFFFFu;
                    n_zero += (a0 == 0) + (a1 == 0) + (a2 == 0) + (a3 == 0);
                    if (max(max(a0, a1), max(a2, a3)) >= 0x7F800000u) {
                        n_nan += (a0 > 0x7F800000u) + (a1 > 0x7F800000u) + (a2 > 0x7F800000u) +
                                 (a3 > 0x7F800000u);
                        n_inf += (a0 == 0x7F800000u) + (a1 == 0x7F800000u) +
                                 (a2 == 0x7F800000u) + (a3 == 0x7F800000u);
                    }
                }
                *(float4 *)&tile[t * LD + j] = v;
            }
        } else {
#pragma unroll 4
            for (int k = 0; k < W; k++) {
                const int idx = k * T + tid;
                const int t = idx / W, j = idx % W;
                const int pos = s * W + j;
                float v = 0.f;
                if (pos < s_real[t]) {
                    v = __ldg(in + s_in[t] + pos);
                    const uint32_t a = __float_as_uint(v) & 0x7FFFFFFFu;
                    n_zero += a == 0;
                    n_nan += a > 0x7F800000u;
                    n_inf += a == 0x7F800000u;
                }
                tile[t * LD + j] = v;
            }
        }
        __syncthreads();
        if (RHTN == 16) {
            /* each thread rotates its own segment */
            const int n = min(W, len - s * W);
            for (int q = 0; q < n; q += 16) {
                float x[16];
                float4 *src = (float4 *)&tile[tid * LD + q];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    float4 v = src[i];
                    x[4 * i] = v.x; x[4 * i + 1] = v.y; x[4 * i + 2] = v.z; x[4 * i + 3] = v.w;
                }
                rht16_thread(x, sg);
#pragma unroll
                for (int i = 0; i < 4; i++)
                    src[i] = make_float4(x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3]);
            }
        } else if (RHTN >= 32) {
            constexpr int NN = RHTN >= 32 ? RHTN : 32;
            const int lane = tid & 31, warp = tid >> 5;
            constexpr int GPS = W / NN; /* groups per segment */
            for (int gi = warp; gi < T * GPS; gi += T / 32) {
                const int t = gi / GPS, q = (gi % GPS) * NN;
                double v[NN / 32];
#pragma unroll
                for (int k = 0; k < NN / 32; k++)
                    v[k] = __dmul_rn((double)tile[t * LD + q + lane + 32 * k],
                                     (double)sg[lane + 32 * k]);
                rht_warp<NN>(v, lane);
#pragma unroll
                for (int k = 0; k < NN / 32; k++)
                    tile[t * LD + q + lane + 32 * k] = rht_out(v[k], p.rs, NN);
            }
            __syncthreads();
        }
        if (!live_chunk || s * W >= len) continue;

        /* this thread's chunk: blocks in order, elements in order (engine/ref.c fp4_ref_block_quant) */
        const int n = min(W, len - s * W);
        for (int b0 = 0; b0 < n; b0 += B) {
            const float *xb = &tile[tid * LD + b0];
            const int64_t col = col0 + s * W + b0; /* column of the block's first element */
            const int64_t bidx = col / B;
            int jn = (int)max((int64_t)0, min((int64_t)B, p.c.counted_len - col));
            /* block amax over all B values, first index attaining it, non-finite flag */
            float amax_b = 0.f;
            int amax_j = 0;
            bool bad = false;
            for (int j = 0; j < B; j += 4) {
                const float4 v = *(const float4 *)&xb[j];
                const float e4[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const float x = fp4c_absf(e4[i]);
                    const bool fin = fp4c_isfinite(x);
                    bad |= !fin;
                    if (fin && x > amax_b) {
                        amax_b = x;
                        amax_j = j + i;
                    }
                }
            }
            if (bad) {
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    hist[k * T + tid] += (uint32_t)(hp >> (8 * k)) & 255u;
                    hist[(k + 8) * T + tid] += (uint32_t)(hn >> (8 * k)) & 255u;
                }
                hp = hn = 0;
                if (codes)
                    for (int j = 0; j < B; j++) codes[row * p.c.padded_len + col + j] = 0;
                if (scales) scales[row * p.nblk + bidx] = 0;
                if (jn > 0) {
                    n_blk++;
                    n_nf++;
                }
                continue;
            }
            const float amax_s = p.c.weight_2d ? tile_amax[(row / 16) * p.nblk + bidx] : amax_b;
            /* the block's scale: common.h, the same function as the CPU's */
            const fp4c_blk_par bp = fp4c_block_params(p.c.scale, &gr, p.c.ts, p.c.nv_m, p.c.nv_sdec,
                                                      p.c.mx_rule == 1, amax_b, amax_s);
            const float mul = bp.mul;
            const float div = bp.div, dec1 = bp.dec1, dec2 = bp.dec2;
            const double s_eff = bp.s_eff;
            const uint8_t sbyte = bp.sbyte;
            const bool live = bp.live != 0, underflow = bp.underflow != 0;
            if (scales) scales[row * p.nblk + bidx] = sbyte;
            /* e = q - a / s_eff in fp64: correctly rounded reciprocal, then one exact-residual
             * correction (Markstein), the same quotient as the CPU's division */
            const double r_eff = live ? __drcp_rn(s_eff) : 0.0;
            double sx2 = 0, se2 = 0, sxqx = 0, sxq2 = 0, serr = 0;
            double lb[8] = {0, 0, 0, 0, 0, 0, 0, 0}; /* the block's per-level sums (CPU order) */
            uint32_t sat = 0, nerr = 0;
            int excl_lv = -1;
            const uint64_t idx0 = (uint64_t)grow * (uint64_t)p.c.padded_len + (uint64_t)col;
            for (int j4 = 0; j4 < B; j4 += 4) {
                const float4 v = *(const float4 *)&xb[j4];
                const float e4[4] = {v.x, v.y, v.z, v.w};
                uint32_t code4 = 0;
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int j = j4 + i;
                    const float x = e4[i];
                    const float a = fp4c_absf(x);
                    const float t = __fdiv_rn(__fmul_rn(a, mul), div);
                    const float tc = fp4c_minf(t, gmax);
                    int qi;
                    float q;
                    if (sr) {
                        qi = fp4c_sr_index(&s_grid, tc,
                                           fp4c_sr_uniform(p.c.seed, idx0 + (uint64_t)j,
                                                           p.c.stream, p.c.sr_bits));
                        q = s_q[qi];
                    } else if (gr.kind == FP4C_GRID_UNIFORM) {
                        uint32_t key; /* closed form (rtne_level); a launch-uniform branch */
                        qi = rtne_level<FP4C_GRID_UNIFORM>(rkq, s_q, tc, q, key);
                    } else if (gr.kind == FP4C_GRID_E2M1) {
                        uint32_t key;
                        qi = rtne_level<FP4C_GRID_E2M1>(rkq, s_q, tc, q, key);
                    } else {
                        /* fp4c_rtne_index, carrying the level along (no table lookup) */
                        qi = fp4c_rtne_index(&gr, tc);
                        q = gr.q[0];
                        q = tc > gr.mid[0] ? gr.q[1] : q;
                        q = tc >= gr.mid[1] ? gr.q[2] : q;
                        q = tc > gr.mid[2] ? gr.q[3] : q;
                        q = tc >= gr.mid[3] ? gr.q[4] : q;
                        q = tc > gr.mid[4] ? gr.q[5] : q;
                        q = tc >= gr.mid[5] ? gr.q[6] : q;
                        q = tc > gr.mid[6] ? gr.q[7] : q;
                    }
                    const float mag = __fmul_rn(__fmul_rn(q, dec1), dec2);
                    const uint32_t neg = __float_as_uint(x) >> 31;
                    const float xq = __uint_as_float(__float_as_uint(mag) | (neg << 31));
                    const int code = qi | (int)(neg << 3);
                    code4 |= (uint32_t)code << (8 * i);
                    if (j < jn) {
                        /* exact fp64 products of fp32 values as FMA (see k_qblk); not d * d */
                        const double dx = x, dq = xq, d = __dsub_rn(dq, dx);
                        sx2 = __fma_rn(dx, dx, sx2);
                        se2 = __dadd_rn(se2, __dmul_rn(d, d));
                        sxqx = __fma_rn(dq, dx, sxqx);
                        sxq2 = __fma_rn(dq, dq, sxq2);
                        sat += live && t > gmax;
                        const uint64_t inc = 1ull << (8 * qi);
                        if (neg) hn += inc;
                        else hp += inc;
                        if (!live) {
                            excl[qi * T + tid]++; /* rare: no level statistics at all */
                        } else if (j != amax_j) {
                            const double ad = fabs(dx);
                            const double q0 = __dmul_rn(ad, r_eff);
                            const double rem = __fma_rn(-q0, s_eff, ad);
                            const double quo = __fma_rn(rem, r_eff, q0);
                            const double e = __dsub_rn((double)q, quo);
#pragma unroll
                            for (int k = 0; k < 8; k++)
                                if (qi == k) lb[k] = __dadd_rn(lb[k], e);
                            serr = __dadd_rn(serr, e);
                            nerr++;
                        } else {
                            excl_lv = qi;
                        }
                    }
                }
                if (codes) {
                    uint8_t *cp = codes + row * p.c.padded_len + col + j4;
#pragma unroll
                    for (int i = 0; i < 4; i++) cp[i] = (uint8_t)(code4 >> (8 * i));
                }
            }
            if (excl_lv >= 0) excl[excl_lv * T + tid]++;
#pragma unroll
            for (int k = 0; k < 8; k++) lerr_r[k] = __dadd_rn(lerr_r[k], lb[k]);
            if (b0 + B >= n || ((b0 + B) & 127) == 0) {
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    hist[k * T + tid] += (uint32_t)(hp >> (8 * k)) & 255u;
                    hist[(k + 8) * T + tid] += (uint32_t)(hn >> (8 * k)) & 255u;
                }
                hp = hn = 0;
            }
            if (jn <= 0) continue;
            n_blk++;
            c_x2 = __dadd_rn(c_x2, sx2);
            c_err2 = __dadd_rn(c_err2, se2);
            c_xqx = __dadd_rn(c_xqx, sxqx);
            c_xq2 = __dadd_rn(c_xq2, sxq2);
            c_serr = __dadd_rn(c_serr, serr);
            n_serr += nerr;
            n_sat += sat;
            n_zb += amax_b == 0.f;
            n_uf += underflow;
            amax_max = fmaxf(amax_max, amax_b);
        }
    }

#pragma unroll
    for (int k = 0; k < 8; k++) {
        hist[k * T + tid] += (uint32_t)(hp >> (8 * k)) & 255u;
        hist[(k + 8) * T + tid] += (uint32_t)(hn >> (8 * k)) & 255u;
    }
    if (live_chunk) {
        double *o = part + g * FP4K_NSUMS;
        o[FP4K_S_X2] = c_x2;
        o[FP4K_S_ERR2] = c_err2;
        o[FP4K_S_XQX] = c_xqx;
        o[FP4K_S_XQ2] = c_xq2;
        o[FP4K_S_SIGNED] = c_serr;
#pragma unroll
        for (int i = 0; i < 8; i++) o[FP4K_S_LEVEL0 + i] = lerr_r[i];
    }
    /* integer counters: warp sums, one atomic per warp and counter (order-free, exact) */
    const uint32_t cv[10] = {n_zero, n_nan, n_inf, n_sat, p.c.scale == 2 ? n_sat : 0u,
                             n_blk, n_zb, n_uf, n_nf, n_serr};
    __syncthreads();
    flush_counts(counts, cv, amax_max, hist, excl, T, tid);
}

/* ---- the fused kernel, thread per block (block 16 or 32; RHT none or 16) -----------------
 * Thread t of a CTA of NT owns block (t % 64) of chunk (t / 64) of the current chunk group: it
 * loads its B contiguous values with float4 loads (adjacent lanes, adjacent blocks: coalesced),
 * rotates them in registers (RHT-16), and runs block_quant's arithmetic in element order. Its
 * block sums go to shared memory (the 8 per-level sums accumulate there directly); then lane f
 * of warp c adds field f of chunk c's 64 blocks in block order — the CPU's order (block sums
 * start at 0, then go into the chunk partial in block order). Integer counts: per-thread
 * registers / per-thread shared bins, folded once at the end (exact in any order). The CTA
 * walks chunk groups grid-stride (persistent grid). */

__device__ __forceinline__ float max_nan(float a, float b)
{
    float d;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
    return d;
}

template <int B, int RHTN, int GK, int NT, int KB>
__global__ void __launch_bounds__(NT, 4) k_qblk(const KP p, const float *__restrict__ in,
                                              const float *__restrict__ signs,
                                              const float *__restrict__ tile_amax,
                                              double *__restrict__ part,
                                              unsigned long long *__restrict__ counts,
                                              uint8_t *__restrict__ codes,
                                              uint8_t *__restrict__ scales)
{
    constexpr int NB = NT * KB;            /* blocks per group: KB per thread */
    constexpr int CPC = NB / CHUNK_BLOCKS; /* chunks per group */
    constexpr int SP = NB + 1;             /* pitch: the reducer's lanes hit distinct banks */
    __shared__ double s_sum[FP4K_NSUMS * SP];
    __shared__ uint32_t s_cnt[24 * NT]; /* [code][thread] histogram, then [level][thread] left out */
    __shared__ float s_q[8];
    __shared__ double s_qd[8];
    __shared__ fp4c_grid s_grid;

    const int tid = threadIdx.x;
#pragma unroll
    for (int i = 0; i < 24; i++) s_cnt[i * NT + tid] = 0;
    if (tid == 0) s_grid = p.c.grid;
    if (tid < 8) {
        s_q[tid] = p.c.grid.q[tid];
        s_qd[tid] = (double)p.c.grid.q[tid];
    }
    uint32_t sb[RHTN > 0 ? 16 : 1];
#pragma unroll
    for (int i = 0; i < (RHTN > 0 ? 16 : 1); i++)
        sb[i] = RHTN > 0 && signs[i] < 0.f ? 0x80000000u : 0u;

    const fp4c_grid gr = p.c.grid;
    const float gmax = gr.gmax;
    const RtneK rk = rtne_make<GK>(gr);
    const bool vec = (p.c.row_len & 3) == 0;
    const bool sr = p.c.rounding != 0;
    const int64_t ngroups = (p.nchunks + CPC - 1) / CPC;
    uint32_t n_zero = 0, n_nan = 0, n_inf = 0, n_sat = 0, n_blk = 0, n_zb = 0, n_uf = 0,
             n_nf = 0, n_serr = 0;
    float amax_max = 0.f;
    uint32_t *hist = s_cnt + tid, *excl = s_cnt + 16 * NT + tid;
    __syncthreads();

    for (int64_t gi = blockIdx.x; gi < ngroups; gi += gridDim.x) {
#pragma unroll 1
      for (int kk = 0; kk < KB; kk++) {
        const int slot = kk * NT + tid; /* adjacent threads, adjacent blocks */
        const int ci = slot / CHUNK_BLOCKS, kb = slot % CHUNK_BLOCKS;
        double *lsum = s_sum + FP4K_S_LEVEL0 * SP + slot;
        const int64_t ch = gi * CPC + ci;
        const bool cv = ch < p.nchunks;
        const int64_t row = cv ? ch / p.cpr : 0;
        const int64_t blk = (cv ? ch - row * p.cpr : 0) * CHUNK_BLOCKS + kb;
        double sx2 = 0, se2 = 0, sxqx = 0, sxq2 = 0, serr = 0;
#pragma unroll
        for (int i = 0; i < 8; i++) lsum[i * SP] = 0.0;
        if (cv && blk < p.nblk) {
            const int64_t col = blk * B;
            const float *src = in + row * p.c.row_len + col;
            const int real = (int)max((int64_t)0, min((int64_t)B, p.c.row_len - col));
            float x[B];
            if (vec && real == B) {
#pragma unroll
                for (int i = 0; i < B / 4; i++) {
                    const float4 v = __ldg((const float4 *)src + i);
                    x[4 * i] = v.x; x[4 * i + 1] = v.y; x[4 * i + 2] = v.z; x[4 * i + 3] = v.w;
                }
            } else {
#pragma unroll
                for (int j = 0; j < B; j++) x[j] = j < real ? __ldg(src + j) : 0.f;
            }
            /* raw input counts: zeros, NaN, Inf of the real elements (rare paths) */
            float mn = fp4c_absf(x[0]), mx = mn;
#pragma unroll
            for (int j = 1; j < B; j++) {
                mn = fminf(mn, fp4c_absf(x[j]));
                mx = max_nan(mx, fp4c_absf(x[j]));
            }
            if (mn == 0.f || !(mx < __int_as_float(0x7F800000))) {
#pragma unroll
                for (int j = 0; j < B; j++) {
                    const uint32_t a = __float_as_uint(x[j]) & 0x7FFFFFFFu;
                    if (j < real) {
                        n_zero += a == 0;
                        n_nan += a > 0x7F800000u;
                        n_inf += a == 0x7F800000u;
                    }
                }
            }
            if (RHTN == 16) {
#pragma unroll
                for (int g0 = 0; g0 < B; g0 += 16) {
                    double v[16];
#pragma unroll
                    for (int i = 0; i < 16; i++)
                        v[i] = (double)__uint_as_float(__float_as_uint(x[g0 + i]) ^ sb[i]);
#pragma unroll
                    for (int h = 1; h < 16; h <<= 1)
#pragma unroll
                        for (int i = 0; i < 16; i++)
                            if ((i & h) == 0) {
                                const double a = v[i], b = v[i + h];
                                v[i] = __dadd_rn(a, b);
                                v[i + h] = __dsub_rn(a, b);
                            }
#pragma unroll
                    for (int i = 0; i < 16; i++) x[g0 + i] = (float)__dmul_rn(v[i], 0.25);
                }
                mx = fp4c_absf(x[0]);
#pragma unroll
                for (int j = 1; j < B; j++) mx = max_nan(mx, fp4c_absf(x[j]));
            }
            /* block amax (NaN or Inf: the block is flagged), first index attaining it */
            const bool bad = !(mx < __int_as_float(0x7F800000));
            const float amax_b = mx;
            int amax_j = 0;
#pragma unroll
            for (int j = B - 1; j > 0; j--) amax_j = fp4c_absf(x[j]) == amax_b ? j : amax_j;
            const int jn = (int)max((int64_t)0, min((int64_t)B, p.c.counted_len - col));
            uint8_t *cp = codes ? codes + row * p.c.padded_len + col : nullptr;
            if (bad) {
                if (cp)
#pragma unroll
                    for (int i = 0; i < B / 16; i++) ((uint4 *)cp)[i] = make_uint4(0, 0, 0, 0);
                if (scales) scales[row * p.nblk + blk] = 0;
                if (jn > 0) {
                    n_blk++;
                    n_nf++;
                }
            } else {
                const float amax_s =
                    p.c.weight_2d ? tile_amax[(row / 16) * p.nblk + blk] : amax_b;
                /* the block's scale: common.h, the same function as the CPU's */
                const fp4c_blk_par bp = fp4c_block_params(p.c.scale, &gr, p.c.ts, p.c.nv_m, p.c.nv_sdec,
                                                          p.c.mx_rule == 1, amax_b, amax_s);
                const float mul = bp.mul;
                const float div = bp.div, dec1 = bp.dec1, dec2 = bp.dec2;
                const double s_eff = bp.s_eff;
                const uint8_t sbyte = bp.sbyte;
                const bool live = bp.live != 0, underflow = bp.underflow != 0;
                if (scales) scales[row * p.nblk + blk] = sbyte;
                /* t = (a * mul) / div, IEEE. div == 1: t = a * mul. Else, for RTNE, with mul == 1
                 * and 2^-60 <= div <= 2^126, a <= 32 div: Markstein's quotient from the correctly
                 * rounded reciprocal is the correctly rounded a / div whenever a / div >= 2^-40
                 * (and stays < 2^-39, below every midpoint, otherwise); any other block: __fdiv_rn */
                const bool one = div == 1.f;
                const bool fast = one || (!sr && mul == 1.f && div >= 0x1p-60f &&
                                          div <= 0x1p126f && amax_b <= 32.f * div);
                const float rdiv = one ? 1.f : __frcp_rn(div);
                const double r_eff = live ? __drcp_rn(s_eff) : 0.0;
                const uint64_t idx0 =
                    (uint64_t)(p.row0 + row) * (uint64_t)p.c.padded_len + (uint64_t)col;
                uint32_t sat = 0;
                int qi_amax = 0;
                uint32_t cw[B / 4];
                /* the element loop in three variants (MODE), the same numbers in each:
                 *  M_DIV: RTNE, live, all B counted, mul == 1, dec2 == 1 and the fast quotient
                 *         (fp32 and tensor scales): t by Markstein, x^ = q * dec1 (x * 1 == x);
                 *  M_MUL: RTNE, live, all B counted, div == 1 (nvfp4, mxfp4): t = a * mul;
                 *  M_ANY: every case, as block_quant has it.
                 * The fast variants have no per-element branch. */
                constexpr int M_ANY = 0, M_DIV = 1, M_MUL = 2;
                auto elems = [&](auto mode_c) {
                    constexpr int MODE = decltype(mode_c)::value;
                    constexpr bool FAST = MODE != M_ANY;
                    /* t = (a * mul) / div as the CPU rounds it */
                    auto tval = [&](float a) -> float {
                        if (MODE == M_MUL) return __fmul_rn(a, mul);
                        const float a1 = MODE == M_DIV ? a : __fmul_rn(a, mul);
                        if (MODE == M_DIV || fast) {
                            const float q0 = __fmul_rn(a1, rdiv);
                            const float rem = __fmaf_rn(-q0, div, a1);
                            return (MODE != M_DIV && one) ? a1 : __fmaf_rn(rem, rdiv, q0);
                        }
                        return __fdiv_rn(a1, div);
                    };
#pragma unroll
                    for (int j = 0; j < B; j++) {
                        const float xv = x[j];
                        const float t = tval(fp4c_absf(xv));
                        /* == fp4c_minf(t, gmax) for every t (NaN: gmax both; gmax > 0) */
                        const float tc = fminf(t, gmax);
                        int qi;
                        float q;
                        uint32_t qkey;
                        if (!FAST && sr) {
                            qi = fp4c_sr_index(&s_grid, tc,
                                               fp4c_sr_uniform(p.c.seed, idx0 + (uint64_t)j,
                                                               p.c.stream, p.c.sr_bits));
                            q = s_q[qi];
                            qkey = (uint32_t)qi;
                        } else {
                            qi = rtne_level<GK>(rk, s_q, tc, q, qkey);
                        }
                        const float mag =
                            MODE == M_DIV ? __fmul_rn(q, dec1) : __fmul_rn(__fmul_rn(q, dec1), dec2);
                        const uint32_t neg = __float_as_uint(xv) & 0x80000000u;
                        const float xq = __uint_as_float(__float_as_uint(mag) | neg);
                        const uint32_t code = (uint32_t)qi | (neg >> 28);
                        if ((j & 3) == 0) cw[j / 4] = code;
                        else cw[j / 4] |= code << (8 * (j & 3));
                        if (!FAST) qi_amax = j == amax_j ? qi : qi_amax;
                        if (FAST || j < jn) {
                            /* dx, dq are fp32 values: dx * dx, dq * dx, dq * dq have at most
                             * 48 significant bits and lie in [2^-298, 2^256], so they are exact
                             * in fp64, and fma(a, b, s) == s + RN(a * b) bit for bit (also for
                             * Inf / NaN operands). Not for se2: d = dq - dx may carry 53 bits,
                             * d * d is rounded, so it stays a product and an add. */
                            const double dx = xv, dq = xq, d = __dsub_rn(dq, dx);
                            sx2 = __fma_rn(dx, dx, sx2);
                            se2 = __dadd_rn(se2, __dmul_rn(d, d));
                            sxqx = __fma_rn(dq, dx, sxqx);
                            sxq2 = __fma_rn(dq, dq, sxq2);
                            sat += t > gmax;
                            atomicAdd(&hist[code * NT], 1u);
                            if (FAST || live) {
                                /* e = q - a / s_eff in fp64 (Markstein from the correctly
                                 * rounded reciprocal: the CPU's quotient). The block's amax
                                 * element is left out through m = 0: fma(e, m, s) is s + e for
                                 * m = 1 and s + (+-0) == s for m = 0 (e is finite; these sums
                                 * start at +0 and are never -0). No branch: a C `if` becomes a
                                 * divergent branch per element, and predicated PTX adds come
                                 * out of ptxas as 4 selects; m costs a select and a move */
                                const double ad = fabs(dx);
                                const double q0 = __dmul_rn(ad, r_eff);
                                const double rem = __fma_rn(-q0, s_eff, ad);
                                const double quo = __fma_rn(rem, r_eff, q0);
                                const double qd = (!FAST && sr) ? s_qd[qi]
                                                                : rtne_qd<GK>(rk, s_qd, qkey);
                                const double e = __dsub_rn(qd, quo);
                                const double m = j == amax_j ? 0.0 : 1.0;
                                lsum[qi * SP] = __fma_rn(e, m, lsum[qi * SP]);
                                serr = __fma_rn(e, m, serr);
                            }
                        }
                    }
                    if (FAST) {
                        /* the amax element's level, once: |x[amax_j]| == amax_b bit for bit,
                         * so the same operations give the same index */
                        float q;
                        uint32_t qkey;
                        qi_amax = rtne_level<GK>(rk, s_q, fminf(tval(amax_b), gmax), q, qkey);
                    }
                };
                const bool hot = !sr && live && jn == B;
                if (hot && one) elems(std::integral_constant<int, M_MUL>{});
                else if (hot && fast && mul == 1.f && dec2 == 1.f)
                    elems(std::integral_constant<int, M_DIV>{});
                else elems(std::integral_constant<int, M_ANY>{});
                if (cp)
#pragma unroll
                    for (int i = 0; i < B / 16; i++)
                        ((uint4 *)cp)[i] =
                            make_uint4(cw[4 * i], cw[4 * i + 1], cw[4 * i + 2], cw[4 * i + 3]);
                if (jn > 0) {
                    if (live) {
                        if (amax_j < jn) excl[qi_amax * NT]++;
                        n_serr += (uint32_t)(jn - (amax_j < jn));
                        n_sat += sat;
                    } else {
                        /* no level statistics at all: every counted element is left out */
#pragma unroll
                        for (int j = 0; j < B; j++)
                            if (j < jn) excl[((cw[j / 4] >> (8 * (j & 3))) & 7u) * NT]++;
                    }
                    n_blk++;
                    n_zb += amax_b == 0.f;
                    n_uf += underflow;
                    amax_max = fmaxf(amax_max, amax_b);
                } else {
                    sx2 = se2 = sxqx = sxq2 = serr = 0.0;
                }
            }
        }
        s_sum[FP4K_S_X2 * SP + slot] = sx2;
        s_sum[FP4K_S_ERR2 * SP + slot] = se2;
        s_sum[FP4K_S_XQX * SP + slot] = sxqx;
        s_sum[FP4K_S_XQ2 * SP + slot] = sxq2;
        s_sum[FP4K_S_SIGNED * SP + slot] = serr;
      }
        __syncthreads();
        for (int c = tid; c < CPC * FP4K_NSUMS; c += NT) {
            const int w = c / FP4K_NSUMS, l = c % FP4K_NSUMS;
            const int64_t chr = gi * CPC + w;
            if (chr < p.nchunks) {
                const double *sp = s_sum + l * SP + w * CHUNK_BLOCKS;
                double acc = 0.0;
#pragma unroll 16
                for (int b = 0; b < CHUNK_BLOCKS; b++) acc = __dadd_rn(acc, sp[b]);
                part[chr * FP4K_NSUMS + l] = acc;
            }
        }
        __syncthreads();
    }

    /* integer counters: warp sums, one atomic per warp and counter (order-free, exact) */
    const uint32_t cv[10] = {n_zero, n_nan, n_inf, n_sat, p.c.scale == 2 ? n_sat : 0u,
                             n_blk, n_zb, n_uf, n_nf, n_serr};
    flush_counts(counts, cv, amax_max, s_cnt, s_cnt + 16 * NT, NT, tid);
}

template <int B, int R, int GK>
int launch_blk(const KP &p, const float *in, const float *signs, const float *tile_amax,
               double *part, uint64_t *counts, uint8_t *codes, uint8_t *scales, cudaStream_t st)
{
    constexpr int NT = 128, KB = 2;
    static int per_sm = 0, sms = 0;
    if (!per_sm) {
        int dev = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cudaError_t e =
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_qblk<B, R, GK, NT, KB>, NT, 0);
        if (e != cudaSuccess) return (int)e;
        if (per_sm < 1) per_sm = 1;
    }
    constexpr int CPC = NT * KB / CHUNK_BLOCKS;
    const int64_t ngroups = (p.nchunks + CPC - 1) / CPC;
    const int64_t cap = (int64_t)per_sm * sms;
    const unsigned grid = (unsigned)(ngroups < cap ? ngroups : cap);
    k_qblk<B, R, GK, NT, KB><<<grid, NT, 0, st>>>(p, in, signs, tile_amax, part,
                                          (unsigned long long *)counts, codes, scales);
    return 0;
}

/* ---- pass 1: amax and the weight_2d tile amax --------------------------------------------- */

__device__ __forceinline__ void atomic_max_pos(float *addr, float v)
{
    /* non-negative floats order like their bit patterns */
    if (v > 0.f) atomicMax((unsigned int *)addr, __float_as_uint(v));
}

__device__ __forceinline__ float fin_abs(float v)
{
    return fp4c_isfinite(v) ? fp4c_absf(v) : 0.f;
}

/* Thread per 16 consecutive (padded) columns; RHT-16 or none. */
template <int N>
__global__ void k_amax_thread(const float *__restrict__ in, int64_t nrows, int64_t row_len,
                              int64_t padded_len, const float *__restrict__ signs, float *amax,
                              float *tile_amax)
{
    const int64_t gpr = padded_len / 16;
    const int64_t ngroups = nrows * gpr;
    float sgl[16];
#pragma unroll
    for (int i = 0; i < 16; i++) sgl[i] = N == 16 ? signs[i] : 1.f;
    float m = 0.f;
    for (int64_t gi = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; gi < ngroups;
         gi += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = gi / gpr, c = (gi - r * gpr) * 16;
        float x[16];
#pragma unroll
        for (int i = 0; i < 16; i++) x[i] = c + i < row_len ? in[r * row_len + c + i] : 0.f;
        if (N == 16) rht16_thread(x, sgl);
        float bm = 0.f;
#pragma unroll
        for (int i = 0; i < 16; i++) bm = fp4c_maxf(bm, fin_abs(x[i]));
        if (tile_amax) atomic_max_pos(&tile_amax[(r / 16) * gpr + c / 16], bm);
        m = fp4c_maxf(m, bm);
    }
    if (amax) {
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        if ((threadIdx.x & 31) == 0) atomic_max_pos(amax, m);
    }
}

/* Warp per RHT group of N >= 32. */
template <int N>
__global__ void k_amax_warp(const float *__restrict__ in, int64_t nrows, int64_t row_len,
                            int64_t padded_len, const float *__restrict__ signs, double rs,
                            float *amax, float *tile_amax)
{
    const int lane = threadIdx.x & 31;
    const int64_t gpr = padded_len / N;
    const int64_t ngroups = nrows * gpr;
    const int64_t nwarps = (int64_t)gridDim.x * blockDim.x / 32;
    float m = 0.f;
    for (int64_t gi = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; gi < ngroups;
         gi += nwarps) {
        const int64_t r = gi / gpr, c = (gi - r * gpr) * N;
        double v[N / 32];
#pragma unroll
        for (int k = 0; k < N / 32; k++) {
            const int64_t col = c + lane + 32 * k;
            v[k] = __dmul_rn((double)(col < row_len ? in[r * row_len + col] : 0.f),
                             (double)signs[lane + 32 * k]);
        }
        rht_warp<N>(v, lane);
#pragma unroll
        for (int k = 0; k < N / 32; k++) {
            const float y = fin_abs(rht_out(v[k], rs, N));
            m = fp4c_maxf(m, y);
            if (tile_amax) {
                float t = y; /* 16-column block of element lane + 32k: its 16 lanes */
                for (int o = 8; o > 0; o >>= 1) t = fmaxf(t, __shfl_xor_sync(0xffffffffu, t, o));
                if ((lane & 15) == 0)
                    atomic_max_pos(&tile_amax[(r / 16) * (padded_len / 16) + (c + lane + 32 * k) / 16], t);
            }
        }
    }
    if (amax) {
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (lane == 0) atomic_max_pos(amax, m);
    }
}

int grid_for(int64_t work, int threads)
{
    int dev = 0, sms = 132;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    int64_t b = (work + threads - 1) / threads;
    int64_t cap = (int64_t)sms * 16;
    return (int)(b < 1 ? 1 : b > cap ? cap : b);
}

int amax_common(const float *in, int64_t n_rows, int64_t row_len, int64_t padded_len, int rht_n,
                const float *signs, float *amax, float *tile_amax, cudaStream_t st)
{
    const int th = 256;
    const double rs = sqrt((double)(rht_n > 0 ? rht_n : 1));
    switch (rht_n) {
    case 0:
        k_amax_thread<0><<<grid_for(n_rows * (padded_len / 16), th), th, 0, st>>>(
            in, n_rows, row_len, padded_len, signs, amax, tile_amax);
        break;
    case 16:
        k_amax_thread<16><<<grid_for(n_rows * (padded_len / 16), th), th, 0, st>>>(
            in, n_rows, row_len, padded_len, signs, amax, tile_amax);
        break;
#define AW(N)                                                                                  \
    case N:                                                                                    \
        k_amax_warp<N><<<grid_for(n_rows * (padded_len / N) * 32, th), th, 0, st>>>(          \
            in, n_rows, row_len, padded_len, signs, rs, amax, tile_amax);                      \
        break;
        AW(32) AW(64) AW(128) AW(256)
#undef AW
    default:
        return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

template <int W, int T, int R>
void launch(const KP &p, const float *in, const float *signs, const float *tile_amax,
            double *part, uint64_t *counts, uint8_t *codes, uint8_t *scales, cudaStream_t st)
{
    const int64_t nb = (p.nchunks + T - 1) / T;
    k_quant<W, T, R><<<(unsigned)nb, T, 0, st>>>(p, in, signs, tile_amax, part,
                                                  (unsigned long long *)counts, codes, scales);
}

/* ---- the recipe statistics (SPEC §5.1): engine/stats.c's pass on the device --------------- */

/* The rotated rows (fp4_qplan_prep's bits: zero-padded to padded_len, then the RHT of each
 * group, as the amax kernels rotate them) into out (n_rows x padded_len). */
__global__ void k_rot16(const float *__restrict__ in, int64_t nrows, int64_t row_len,
                        int64_t padded_len, const float *__restrict__ signs,
                        float *__restrict__ out)
{
    const int64_t gpr = padded_len / 16;
    const int64_t ngroups = nrows * gpr;
    float sgl[16];
#pragma unroll
    for (int i = 0; i < 16; i++) sgl[i] = signs[i];
    for (int64_t gi = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; gi < ngroups;
         gi += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = gi / gpr, c = (gi - r * gpr) * 16;
        float x[16];
#pragma unroll
        for (int i = 0; i < 16; i++) x[i] = c + i < row_len ? in[r * row_len + c + i] : 0.f;
        rht16_thread(x, sgl);
#pragma unroll
        for (int i = 0; i < 16; i++) out[r * padded_len + c + i] = x[i];
    }
}

template <int N>
__global__ void k_rot_warp(const float *__restrict__ in, int64_t nrows, int64_t row_len,
                           int64_t padded_len, const float *__restrict__ signs, double rs,
                           float *__restrict__ out)
{
    const int lane = threadIdx.x & 31;
    const int64_t gpr = padded_len / N;
    const int64_t ngroups = nrows * gpr;
    const int64_t nwarps = (int64_t)gridDim.x * blockDim.x / 32;
    for (int64_t gi = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; gi < ngroups;
         gi += nwarps) {
        const int64_t r = gi / gpr, c = (gi - r * gpr) * N;
        double v[N / 32];
#pragma unroll
        for (int k = 0; k < N / 32; k++) {
            const int64_t col = c + lane + 32 * k;
            v[k] = __dmul_rn((double)(col < row_len ? in[r * row_len + col] : 0.f),
                             (double)signs[lane + 32 * k]);
        }
        rht_warp<N>(v, lane);
#pragma unroll
        for (int k = 0; k < N / 32; k++) out[r * padded_len + c + lane + 32 * k] = rht_out(v[k], rs, N);
    }
}

/* x̂ of one value under the block parameters bp: stats.c's bits (t = (|x| · mul) / div, IEEE,
 * clamped to g_max; the RTNE or SR level; (q · dec1) · dec2 with x's sign); aq: |x̂|. */
__device__ __forceinline__ float st_xq(const fp4c_grid *g, const KP &p, const fp4c_blk_par &bp,
                                       float x, uint64_t idx, float &aq)
{
    const float tc = fp4c_minf(__fdiv_rn(__fmul_rn(fp4c_absf(x), bp.mul), bp.div), g->gmax);
    const int k = p.c.rounding != 0
                      ? fp4c_sr_index(g, tc, fp4c_sr_uniform(p.c.seed, idx, p.c.stream, p.c.sr_bits))
                      : fp4c_rtne_index(g, tc);
    aq = fp4c_absf(__fmul_rn(__fmul_rn(g->q[k], bp.dec1), bp.dec2));
    return __uint_as_float(__float_as_uint(aq) | (__float_as_uint(x) & 0x80000000u));
}

/* The error split's x̃ (SPEC §5.1; stats.c split_rtne_body's fp64 lane arithmetic): |x| · rs
 * clamped to g_max, its level by the midpoint chain in fp64 (ties to the even code), the level
 * as the sum of the grid's fp32 steps in order, times ss, with x's sign. */
__device__ __forceinline__ double st_xt(const fp4c_grid *g, float x, double rs, double ss)
{
    const double gm = (double)g->gmax;
    const double ts = __dmul_rn((double)fp4c_absf(x), rs);
    const double tc = ts < gm ? ts : gm;
    double q = 0.0;
#pragma unroll
    for (int i = 0; i < 7; i++) {
        const bool up = (i & 1) ? tc >= (double)g->mid[i] : tc > (double)g->mid[i];
        const double st = (double)__fsub_rn(g->q[i + 1], g->q[i]);
        q = i == 0 ? (up ? st : 0.0) : __dadd_rn(q, up ? st : 0.0);
    }
    const double a = __dmul_rn(q, ss);
    return __longlong_as_double(__double_as_longlong(a) |
                                (__float_as_int(x) < 0 ? (long long)0x8000000000000000ull : 0ll));
}

/* One warp's counts of key (>= 0; -1: none) into c[key], one atomic per distinct key. Every
 * lane of the warp calls it. */
__device__ __forceinline__ void warp_bin_add(unsigned long long *c, int key)
{
    const unsigned same = __match_any_sync(0xffffffffu, key);
    if (key >= 0 && (threadIdx.x & 31) == __ffs(same) - 1)
        atomicAdd(&c[key], (unsigned long long)__popc(same));
}

/* Thread per block, two chunks per CTA (ST_NT threads): the block's statistics as
 * engine/stats.c computes them (group_stats / stats_rtne_body / stats_sr, fos_group,
 * split_group), each
 * block sum from +0 in element order over its counted entries; then thread f of the CTA adds
 * field f % FP4K_NTSUMS of chunk f / FP4K_NTSUMS over its 64 blocks in block order (a block
 * without counted entries holds +0: the CPU skips it, the same sum). Integer counts, the
 * histograms and the max are order-free. in: the input rows (row_len apart), or with RHT the
 * rotated rows (rot, padded_len apart). */
constexpr int ST_NT = 2 * CHUNK_BLOCKS;
/* The end of k_stats and k_stats_blk, every thread of the CTA: the block sums into s_sum, the
 * bins and counts (order-free), then thread f adds field f % FP4K_NTSUMS of chunk f /
 * FP4K_NTSUMS over its 64 blocks in block order. */
__device__ __forceinline__ void stats_flush(int tid, double sx2, double se2, double fos,
                                            double sp_fl, double sp_sc, double sp_gr,
                                            double sp_cr, int abin, int sbin, uint32_t n_blk,
                                            uint32_t n_cnt, uint32_t n_nz, uint32_t n_uf,
                                            uint32_t n_fos, uint32_t n_fos4, uint32_t n_sp,
                                            double mx, double *s_sum, unsigned *s_rh,
                                            int64_t nchunks, double *__restrict__ spart,
                                            unsigned long long *__restrict__ sc)
{
    s_sum[FP4K_T_X2NA * ST_NT + tid] = sx2;
    s_sum[FP4K_T_ERR2NA * ST_NT + tid] = se2;
    s_sum[FP4K_T_FOS * ST_NT + tid] = fos;
    s_sum[FP4K_T_SP_FLUSH * ST_NT + tid] = sp_fl;
    s_sum[FP4K_T_SP_SCALE * ST_NT + tid] = sp_sc;
    s_sum[FP4K_T_SP_GRID * ST_NT + tid] = sp_gr;
    s_sum[FP4K_T_SP_CROSS * ST_NT + tid] = sp_cr;
    warp_bin_add(sc + FP4K_SC_AMAX0, abin);
    warp_bin_add(sc + FP4K_SC_SCALE0, sbin);
    const uint32_t cv[7] = {n_blk, n_cnt, n_nz, n_uf, n_fos, n_fos4, n_sp};
    const int ci[7] = {FP4K_SC_BLOCKS, FP4K_SC_COUNT, FP4K_SC_NONZERO, FP4K_SC_UNDERFLOWS,
                       FP4K_SC_FOS_BLOCKS, FP4K_SC_FOS_BLOCKS4, FP4K_SC_SPLIT_BLOCKS};
#pragma unroll
    for (int i = 0; i < 7; i++) {
        const uint32_t v = __reduce_add_sync(0xffffffffu, cv[i]);
        if ((tid & 31) == 0 && v) {
            atomicAdd(&sc[ci[i]], (unsigned long long)v);
            if (i == 0) atomicAdd(&sc[FP4K_SC_HIST_BLOCKS], (unsigned long long)v);
        }
    }
    /* the max |x̂ − x|: non-negative doubles order as their bits */
    unsigned long long mb = (unsigned long long)__double_as_longlong(mx);
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long ob = __shfl_xor_sync(0xffffffffu, mb, o);
        mb = ob > mb ? ob : mb;
    }
    if ((tid & 31) == 0 && mb) atomicMax(&sc[FP4K_SC_MAXERR], mb);
    __syncthreads();
    if (tid < 2 * FP4K_NTSUMS) {
        const int w = tid / FP4K_NTSUMS, l = tid % FP4K_NTSUMS;
        const int64_t c = (int64_t)blockIdx.x * 2 + w;
        if (c < nchunks) {
            const double *sp = s_sum + l * ST_NT + w * CHUNK_BLOCKS;
            double acc = 0.0;
            for (int b = 0; b < CHUNK_BLOCKS; b++) acc = __dadd_rn(acc, sp[b]);
            spart[c * FP4K_NTSUMS + l] = acc;
        }
    }
    for (int i = tid; i < 128; i += ST_NT)
        if (s_rh[i]) atomicAdd(&sc[FP4K_SC_RERR0 + i], (unsigned long long)s_rh[i]);
}

__global__ void __launch_bounds__(ST_NT) k_stats(const KP p, const float *__restrict__ in,
                                                 const float *__restrict__ rot,
                                                 const float *__restrict__ tile_amax,
                                                 double *__restrict__ spart,
                                                 unsigned long long *__restrict__ sc)
{
    __shared__ double s_sum[FP4K_NTSUMS * ST_NT];
    __shared__ unsigned s_rh[128];
    __shared__ fp4c_grid s_grid;
    const int tid = threadIdx.x;
    if (tid == 0) s_grid = p.c.grid;
    for (int i = tid; i < 128; i += ST_NT) s_rh[i] = 0;
    __syncthreads();
    const fp4c_grid *g = &s_grid;
    const int B = p.c.block;
    const int64_t ch = (int64_t)blockIdx.x * 2 + tid / CHUNK_BLOCKS;
    const int kb = tid % CHUNK_BLOCKS;
    double sx2 = 0.0, se2 = 0.0, fos = 0.0, mx = 0.0;
    double sp_fl = 0.0, sp_sc = 0.0, sp_gr = 0.0, sp_cr = 0.0;
    uint32_t n_blk = 0, n_cnt = 0, n_nz = 0, n_uf = 0, n_fos = 0, n_fos4 = 0, n_sp = 0;
    int abin = -1, sbin = -1;
    const int64_t row = ch < p.nchunks ? ch / p.cpr : 0;
    const int64_t blk = (ch < p.nchunks ? ch - row * p.cpr : 0) * CHUNK_BLOCKS + kb;
    if (ch < p.nchunks && blk < p.nblk) {
        const int64_t col = blk * B;
        const float *src = rot ? rot + row * p.c.padded_len + col : in + row * p.c.row_len + col;
        const int real =
            rot ? B : (int)max((int64_t)0, min((int64_t)B, p.c.row_len - col));
        /* fp4_block_amax: the amax over finite values, its first index, the non-finite flag */
        float amax = 0.f;
        int ak = 0;
        bool bad = false;
        for (int j = 0; j < B; j++) {
            const float a = fp4c_absf(j < real ? src[j] : 0.f);
            const bool fin = fp4c_isfinite(a);
            bad |= !fin;
            if (fin && a > amax) {
                amax = a;
                ak = j;
            }
        }
        const int jn = (int)max((int64_t)0, min((int64_t)B, p.c.counted_len - col));
        if (!bad && jn > 0) {
            const float amax_s = p.c.scale == 1 && p.c.weight_2d
                                     ? tile_amax[(row / 16) * p.nblk + blk]
                                     : amax;
            const fp4c_blk_par bp = fp4c_block_params(p.c.scale, g, p.c.ts, p.c.nv_m,
                                                      p.c.nv_sdec, p.c.mx_rule == 1, amax, amax_s);
            const fp4c_blk_par b4 = fp4c_block_params(p.c.scale, g, p.c.ts, p.c.nv_m4,
                                                      p.c.nv_sdec, p.c.mx_rule == 1, amax, amax_s);
            const uint64_t idx0 =
                (uint64_t)(p.row0 + row) * (uint64_t)p.c.padded_len + (uint64_t)col;
            double e6 = 0.0, e4 = 0.0;
            /* the error split's unrounded scale s* = amax_s / g_max and its inverse (fp64) */
            const float as = p.c.scale == 3 ? p.c.tensor_amax : amax_s;
            const double gmd = (double)g->gmax;
            const double sp_rs = as > 0.f ? gmd / (double)as : 0.0;
            const double sp_ss = as > 0.f ? (double)as / gmd : 0.0;
            for (int j = 0; j < jn; j++) {
                const float x = j < real ? src[j] : 0.f;
                float aq;
                const float xq = st_xq(g, p, bp, x, idx0 + (uint64_t)j, aq);
                const double dx = x, d = __dsub_rn((double)xq, dx);
                const double dd = __dmul_rn(d, d);
                mx = fmax(mx, fabs(d));
                if (j != ak) {
                    sx2 = __dadd_rn(sx2, __dmul_rn(dx, dx));
                    se2 = __dadd_rn(se2, dd);
                }
                if (x != 0.f) {
                    n_nz++;
                    n_uf += aq == 0.f;
                    /* fp4_rerr_bin: r = fp32(|x̂ − x|) / |x|, binned on its bits */
                    const float r = __fdiv_rn(fp4c_absf(__fsub_rn(xq, x)), fp4c_absf(x));
                    int k = (int)(__float_as_uint(r) >> 22) - 173;
                    k = k < 1 ? 0 : (k > 127 ? 127 : k);
                    atomicAdd(&s_rh[k], 1u);
                }
                if (p.c.split) {
                    /* flushed (x != 0, x̂ == 0): x²; the others their three terms */
                    if (x != 0.f && aq == 0.f) {
                        sp_fl = __dadd_rn(sp_fl, __dmul_rn(dx, dx));
                    } else {
                        const double xt = st_xt(g, x, sp_rs, sp_ss);
                        const double a = __dsub_rn((double)xq, xt), b = __dsub_rn(xt, dx);
                        sp_sc = __dadd_rn(sp_sc, __dmul_rn(a, a));
                        sp_gr = __dadd_rn(sp_gr, __dmul_rn(b, b));
                        sp_cr = __dadd_rn(sp_cr, __dmul_rn(a, b));
                    }
                }
                if (p.c.fos) {
                    e6 = __dadd_rn(e6, dd);
                    float aq4;
                    const float xq4 = st_xq(g, p, b4, x, 0, aq4);
                    const double d4 = __dsub_rn((double)xq4, dx);
                    e4 = __dadd_rn(e4, __dmul_rn(d4, d4));
                }
            }
            n_blk = 1;
            n_cnt = (uint32_t)jn;
            if (p.c.fos) {
                const bool four = e4 < e6;
                n_fos = 1;
                n_fos4 = four;
                fos = four ? e4 : e6;
            }
            n_sp = p.c.split ? 1u : 0u;
            /* fp4_amax_bin; the stored scale byte of a non-zero nvfp4 / mxfp4 block */
            abin = amax > 0.f ? 1 + (int)(__float_as_uint(amax) >> 22) : 0;
            if ((p.c.scale == 1 || p.c.scale == 2) && amax > 0.f) sbin = bp.sbyte;
        }
    }
    stats_flush(tid, sx2, se2, fos, sp_fl, sp_sc, sp_gr, sp_cr, abin, sbin, n_blk, n_cnt, n_nz,
                n_uf, n_fos, n_fos4, n_sp, mx, s_sum, s_rh, p.nchunks, spart, sc);
}

/* k_stats for the common recipes, the same numbers: RTNE, block B = 16 or 32, RHT none or 16
 * (RHTN). Per thread one block as k_stats, the CTA's shape and the chunk reduction the same, so
 * every sum adds the same terms in the same order; what differs is how a term is reached:
 *  - the block in registers (B / 4 float4 loads when the row is float4-aligned, as k_qblk), read
 *    once; with RHT-16 the zero-padded groups rotated there by rht16_thread, k_rot16's own
 *    function (no rotated rows written to and read back from d_rot);
 *  - t = (|x| mul) / div: a * mul when div == 1 (x / 1 == x in IEEE arithmetic, for every x),
 *    else k_qblk's Markstein quotient under k_qblk's guard, else __fdiv_rn (st_t);
 *  - the level by rtne_level<GK> (checked equal to fp4c_rtne_index for every fp32 tc in
 *    [0, g_max], kernels/bench/check_rtne.c), tc = fminf(t, g_max) == fp4c_minf(t, g_max);
 *  - the error split's level value as the prefix sums of the grid's steps (s_pre), made by the
 *    same chain of adds st_xt performs: the midpoints passed are always a prefix (the midpoints
 *    in use strictly increase, the unused ones are FLT_MAX > tc), and the adds of +0.0 it does
 *    past them leave a value >= +0 unchanged. */
struct StT {
    float mul, div, rdiv;
    bool one, fast;
};

__device__ __forceinline__ StT st_t_make(const fp4c_blk_par &bp, float amax_b)
{
    StT t;
    t.mul = bp.mul;
    t.div = bp.div;
    t.one = bp.div == 1.f;
    t.fast = !t.one && bp.mul == 1.f && bp.div >= 0x1p-60f && bp.div <= 0x1p126f &&
             amax_b <= 32.f * bp.div;
    t.rdiv = t.fast ? __frcp_rn(bp.div) : 1.f;
    return t;
}

/* (a * mul) / div as st_xq rounds it, a = |x| of the block (a <= amax_b) */
__device__ __forceinline__ float st_t(const StT &t, float a)
{
    if (t.one) return __fmul_rn(a, t.mul);
    if (t.fast) {
        const float q0 = __fmul_rn(a, t.rdiv);
        const float rem = __fmaf_rn(-q0, t.div, a);
        return __fmaf_rn(rem, t.rdiv, q0);
    }
    return __fdiv_rn(__fmul_rn(a, t.mul), t.div);
}

/* st_xq's x̂ and |x̂| for RTNE */
template <int GK>
__device__ __forceinline__ float st_xq_rtne(const RtneK &rk, const float *s_q, float gmax,
                                            const StT &t, const fp4c_blk_par &bp, float x,
                                            float &aq)
{
    float q;
    uint32_t key;
    rtne_level<GK>(rk, s_q, fminf(st_t(t, fp4c_absf(x)), gmax), q, key);
    aq = fp4c_absf(__fmul_rn(__fmul_rn(q, bp.dec1), bp.dec2));
    return __uint_as_float(__float_as_uint(aq) | (__float_as_uint(x) & 0x80000000u));
}

/* st_xt with the level value from the prefix sums s_pre */
__device__ __forceinline__ double st_xt_pre(const double *mid, const double *s_pre, double gm,
                                            float x, double rs, double ss)
{
    const double ts = __dmul_rn((double)fp4c_absf(x), rs);
    const double tc = ts < gm ? ts : gm;
    int k = 0;
#pragma unroll
    for (int i = 0; i < 7; i++) k += (i & 1) ? tc >= mid[i] : tc > mid[i];
    const double a = __dmul_rn(s_pre[k], ss);
    return __longlong_as_double(__double_as_longlong(a) |
                                (__float_as_int(x) < 0 ? (long long)0x8000000000000000ull : 0ll));
}

template <int B, int RHTN, int GK>
__global__ void __launch_bounds__(ST_NT) k_stats_blk(const KP p, const float *__restrict__ in,
                                                     const float *__restrict__ signs,
                                                     const float *__restrict__ tile_amax,
                                                     double *__restrict__ spart,
                                                     unsigned long long *__restrict__ sc)
{
    __shared__ double s_sum[FP4K_NTSUMS * ST_NT];
    __shared__ unsigned s_rh[128];
    __shared__ float s_q[8];
    __shared__ double s_mid[7], s_pre[8];
    __shared__ fp4c_grid s_grid; /* fp4c_block_params reads it through a pointer */
    const int tid = threadIdx.x;
    for (int i = tid; i < 128; i += ST_NT) s_rh[i] = 0;
    const fp4c_grid &g = p.c.grid;
    if (tid == 0) s_grid = g;
    if (tid < 8) s_q[tid] = g.q[tid];
    if (tid < 7) s_mid[tid] = (double)g.mid[tid];
    if (tid == 0) {
        /* st_xt's chain: q = st_0, then q + st_i, i = 1 .. 6 */
        double q = 0.0;
        s_pre[0] = 0.0;
        for (int i = 0; i < 7; i++) {
            const double st = (double)__fsub_rn(g.q[i + 1], g.q[i]);
            q = i == 0 ? st : __dadd_rn(q, st);
            s_pre[i + 1] = q;
        }
    }
    __syncthreads();
    const RtneK rk = rtne_make<GK>(g);
    const float gmax = g.gmax;
    const double gmd = (double)gmax;
    const int64_t ch = (int64_t)blockIdx.x * 2 + tid / CHUNK_BLOCKS;
    const int kb = tid % CHUNK_BLOCKS;
    double sx2 = 0.0, se2 = 0.0, fos = 0.0, mx = 0.0;
    double sp_fl = 0.0, sp_sc = 0.0, sp_gr = 0.0, sp_cr = 0.0;
    uint32_t n_blk = 0, n_cnt = 0, n_nz = 0, n_uf = 0, n_fos = 0, n_fos4 = 0, n_sp = 0;
    int abin = -1, sbin = -1;
    const int64_t row = ch < p.nchunks ? ch / p.cpr : 0;
    const int64_t blk = (ch < p.nchunks ? ch - row * p.cpr : 0) * CHUNK_BLOCKS + kb;
    if (ch < p.nchunks && blk < p.nblk) {
        const int64_t col = blk * B;
        const float *src = in + row * p.c.row_len + col;
        const int real = (int)max((int64_t)0, min((int64_t)B, p.c.row_len - col));
        float x[B];
        if ((p.c.row_len & 3) == 0 && real == B) {
#pragma unroll
            for (int i = 0; i < B / 4; i++) {
                const float4 v = __ldg((const float4 *)src + i);
                x[4 * i] = v.x; x[4 * i + 1] = v.y; x[4 * i + 2] = v.z; x[4 * i + 3] = v.w;
            }
        } else {
#pragma unroll
            for (int j = 0; j < B; j++) x[j] = j < real ? __ldg(src + j) : 0.f;
        }
        if (RHTN == 16) {
            float sgl[16];
#pragma unroll
            for (int i = 0; i < 16; i++) sgl[i] = signs[i];
#pragma unroll
            for (int g0 = 0; g0 < B; g0 += 16) rht16_thread(x + g0, sgl);
        }
        /* fp4_block_amax: the amax over finite values, its first index, the non-finite flag
         * (x[j] is +0 past the row's end: k_stats reads 0.f there; with RHT every j counts) */
        float amax = 0.f;
        int ak = 0;
        bool bad = false;
#pragma unroll
        for (int j = 0; j < B; j++) {
            const float a = fp4c_absf(x[j]);
            const bool fin = fp4c_isfinite(a);
            bad |= !fin;
            if (fin && a > amax) {
                amax = a;
                ak = j;
            }
        }
        const int jn = (int)max((int64_t)0, min((int64_t)B, p.c.counted_len - col));
        if (!bad && jn > 0) {
            const float amax_s = p.c.scale == 1 && p.c.weight_2d
                                     ? tile_amax[(row / 16) * p.nblk + blk]
                                     : amax;
            const fp4c_blk_par bp = fp4c_block_params(p.c.scale, &s_grid, p.c.ts, p.c.nv_m,
                                                      p.c.nv_sdec, p.c.mx_rule == 1, amax, amax_s);
            const fp4c_blk_par b4 = fp4c_block_params(p.c.scale, &s_grid, p.c.ts, p.c.nv_m4,
                                                      p.c.nv_sdec, p.c.mx_rule == 1, amax, amax_s);
            const StT t6 = st_t_make(bp, amax), t4 = st_t_make(b4, amax);
            double e6 = 0.0, e4 = 0.0;
            const float as = p.c.scale == 3 ? p.c.tensor_amax : amax_s;
            const double sp_rs = as > 0.f ? gmd / (double)as : 0.0;
            const double sp_ss = as > 0.f ? (double)as / gmd : 0.0;
#pragma unroll
            for (int j = 0; j < B; j++) {
                if (j >= jn) continue;
                const float xv = x[j];
                float aq;
                const float xq = st_xq_rtne<GK>(rk, s_q, gmax, t6, bp, xv, aq);
                const double dx = xv, d = __dsub_rn((double)xq, dx);
                const double dd = __dmul_rn(d, d);
                mx = fmax(mx, fabs(d));
                if (j != ak) {
                    sx2 = __dadd_rn(sx2, __dmul_rn(dx, dx));
                    se2 = __dadd_rn(se2, dd);
                }
                if (xv != 0.f) {
                    n_nz++;
                    n_uf += aq == 0.f;
                    const float r = __fdiv_rn(fp4c_absf(__fsub_rn(xq, xv)), fp4c_absf(xv));
                    int k = (int)(__float_as_uint(r) >> 22) - 173;
                    k = k < 1 ? 0 : (k > 127 ? 127 : k);
                    atomicAdd(&s_rh[k], 1u);
                }
                if (p.c.split) {
                    if (xv != 0.f && aq == 0.f) {
                        sp_fl = __dadd_rn(sp_fl, __dmul_rn(dx, dx));
                    } else {
                        const double xt = st_xt_pre(s_mid, s_pre, gmd, xv, sp_rs, sp_ss);
                        const double a = __dsub_rn((double)xq, xt), b = __dsub_rn(xt, dx);
                        sp_sc = __dadd_rn(sp_sc, __dmul_rn(a, a));
                        sp_gr = __dadd_rn(sp_gr, __dmul_rn(b, b));
                        sp_cr = __dadd_rn(sp_cr, __dmul_rn(a, b));
                    }
                }
                if (p.c.fos) {
                    e6 = __dadd_rn(e6, dd);
                    float aq4;
                    const float xq4 = st_xq_rtne<GK>(rk, s_q, gmax, t4, b4, xv, aq4);
                    const double d4 = __dsub_rn((double)xq4, dx);
                    e4 = __dadd_rn(e4, __dmul_rn(d4, d4));
                }
            }
            n_blk = 1;
            n_cnt = (uint32_t)jn;
            if (p.c.fos) {
                const bool four = e4 < e6;
                n_fos = 1;
                n_fos4 = four;
                fos = four ? e4 : e6;
            }
            n_sp = p.c.split ? 1u : 0u;
            abin = amax > 0.f ? 1 + (int)(__float_as_uint(amax) >> 22) : 0;
            if ((p.c.scale == 1 || p.c.scale == 2) && amax > 0.f) sbin = bp.sbyte;
        }
    }
    stats_flush(tid, sx2, se2, fos, sp_fl, sp_sc, sp_gr, sp_cr, abin, sbin, n_blk, n_cnt, n_nz,
                n_uf, n_fos, n_fos4, n_sp, mx, s_sum, s_rh, p.nchunks, spart, sc);
}

KP make_kp(const fp4k_cfg *cfg, int64_t row0, int64_t n_rows)
{
    KP p;
    p.c = *cfg;
    p.nblk = cfg->padded_len / cfg->block;
    p.cpr = (p.nblk + CHUNK_BLOCKS - 1) / CHUNK_BLOCKS;
    p.chunk_len = (int64_t)CHUNK_BLOCKS * cfg->block;
    p.nchunks = n_rows * p.cpr;
    p.row0 = row0;
    p.rs = sqrt((double)(cfg->rht_n > 0 ? cfg->rht_n : 1));
    return p;
}

} // namespace

extern "C" int fp4k_cfg_supported(const fp4k_cfg *cfg)
{
    const int b = cfg->block;
    if (b < 4 || b > 256 || (b & (b - 1))) return 0;
    if (cfg->rht_n && (cfg->rht_n < 16 || cfg->rht_n > 256 || (cfg->rht_n & (cfg->rht_n - 1)) ||
                       cfg->rht_n > CHUNK_BLOCKS * b))
        return 0;
    if (cfg->weight_2d && b != 16) return 0;
    return 1;
}

extern "C" int64_t fp4k_nchunks(const fp4k_cfg *cfg, int64_t n_rows)
{
    const int64_t nblk = cfg->padded_len / cfg->block;
    return n_rows * ((nblk + CHUNK_BLOCKS - 1) / CHUNK_BLOCKS);
}

extern "C" int fp4k_quantize(const fp4k_cfg *cfg, const float *in, int64_t row0, int64_t n_rows,
                             const float *signs, const float *tile_amax, double *part,
                             uint64_t *counts, uint8_t *codes, uint8_t *scales, void *stream)
{
    if (!fp4k_cfg_supported(cfg)) return (int)cudaErrorInvalidValue;
    if (n_rows <= 0) return 0;
    KP p;
    p.c = *cfg;
    p.nblk = cfg->padded_len / cfg->block;
    p.cpr = (p.nblk + CHUNK_BLOCKS - 1) / CHUNK_BLOCKS;
    p.chunk_len = (int64_t)CHUNK_BLOCKS * cfg->block;
    p.nchunks = n_rows * p.cpr;
    p.row0 = row0;
    p.rs = sqrt((double)(cfg->rht_n > 0 ? cfg->rht_n : 1));
    cudaStream_t st = (cudaStream_t)stream;
    int w = cfg->block > cfg->rht_n ? cfg->block : cfg->rht_n;
    if (w < 64) w = 64;
    if ((cfg->block == 16 || cfg->block == 32) && (cfg->rht_n == 0 || cfg->rht_n == 16)) {
        /* grid kind (common.h): the closed-form RTNE variants carry no midpoint chain */
        const int gk = cfg->grid.kind;
        int e;
#define LB(BB, RR, GG)                                                                         \
    launch_blk<BB, RR, GG>(p, in, signs, tile_amax, part, counts, codes, scales, st)
#define LBG(BB, RR)                                                                            \
    (gk == FP4C_GRID_UNIFORM ? LB(BB, RR, FP4C_GRID_UNIFORM)                                   \
     : gk == FP4C_GRID_E2M1  ? LB(BB, RR, FP4C_GRID_E2M1)                                      \
                             : LB(BB, RR, FP4C_GRID_GENERIC))
        if (cfg->block == 16) e = cfg->rht_n ? LBG(16, 16) : LBG(16, 0);
        else e = cfg->rht_n ? LBG(32, 16) : LBG(32, 0);
#undef LBG
#undef LB
        if (e) return e;
        return (int)cudaGetLastError();
    }
#define L(W, T, R) launch<W, T, R>(p, in, signs, tile_amax, part, counts, codes, scales, st)
    if (w == 64) {
        switch (cfg->rht_n) {
        case 0: L(64, 64, 0); break;
        case 16: L(64, 64, 16); break;
        case 32: L(64, 64, 32); break;
        default: L(64, 64, 64); break;
        }
    } else if (w == 128) {
        switch (cfg->rht_n) {
        case 0: L(128, 32, 0); break;
        case 16: L(128, 32, 16); break;
        case 32: L(128, 32, 32); break;
        case 64: L(128, 32, 64); break;
        default: L(128, 32, 128); break;
        }
    } else {
        switch (cfg->rht_n) {
        case 0: L(256, 32, 0); break;
        case 16: L(256, 32, 16); break;
        case 32: L(256, 32, 32); break;
        case 64: L(256, 32, 64); break;
        case 128: L(256, 32, 128); break;
        default: L(256, 32, 256); break;
        }
    }
#undef L
    return (int)cudaGetLastError();
}

static int g_stats_generic; /* fp4k_stats_generic */

extern "C" void fp4k_stats_generic(int on) { g_stats_generic = on != 0; }

extern "C" int fp4k_stats(const fp4k_cfg *cfg, const float *in, int64_t row0, int64_t n_rows,
                          const float *signs, const float *tile_amax, float *rot, double *spart,
                          uint64_t *scounts, void *stream)
{
    if (!fp4k_cfg_supported(cfg) || (cfg->rht_n && !rot)) return (int)cudaErrorInvalidValue;
    if (n_rows <= 0) return 0;
    const KP p = make_kp(cfg, row0, n_rows);
    cudaStream_t st = (cudaStream_t)stream;
    const int64_t nb = (p.nchunks + 1) / 2;
    if (!g_stats_generic && cfg->rounding == 0 && (cfg->block == 16 || cfg->block == 32) &&
        (cfg->rht_n == 0 || cfg->rht_n == 16)) {
        const int gk = cfg->grid.kind;
#define SB(BB, RR, GG)                                                                         \
    k_stats_blk<BB, RR, GG><<<(unsigned)nb, ST_NT, 0, st>>>(p, in, signs, tile_amax, spart,   \
                                                            (unsigned long long *)scounts)
#define SBG(BB, RR)                                                                            \
    (gk == FP4C_GRID_UNIFORM ? SB(BB, RR, FP4C_GRID_UNIFORM)                                   \
     : gk == FP4C_GRID_E2M1  ? SB(BB, RR, FP4C_GRID_E2M1)                                      \
                             : SB(BB, RR, FP4C_GRID_GENERIC))
        if (cfg->block == 16) {
            if (cfg->rht_n) SBG(16, 16);
            else SBG(16, 0);
        } else {
            if (cfg->rht_n) SBG(32, 16);
            else SBG(32, 0);
        }
#undef SBG
#undef SB
        return (int)cudaGetLastError();
    }
    const int th = 256;
    const int64_t P = cfg->padded_len;
    switch (cfg->rht_n) {
    case 0: break;
    case 16:
        k_rot16<<<grid_for(n_rows * (P / 16), th), th, 0, st>>>(in, n_rows, cfg->row_len, P,
                                                                signs, rot);
        break;
#define RW(N)                                                                                  \
    case N:                                                                                    \
        k_rot_warp<N><<<grid_for(n_rows * (P / N) * 32, th), th, 0, st>>>(                    \
            in, n_rows, cfg->row_len, P, signs, p.rs, rot);                                    \
        break;
        RW(32) RW(64) RW(128) RW(256)
#undef RW
    default:
        return (int)cudaErrorInvalidValue;
    }
    k_stats<<<(unsigned)nb, ST_NT, 0, st>>>(p, in, cfg->rht_n ? rot : nullptr, tile_amax, spart,
                                           (unsigned long long *)scounts);
    return (int)cudaGetLastError();
}

extern "C" int fp4k_amax(const float *in, int64_t n_rows, int64_t row_len, int64_t padded_len,
                         int rht_n, const float *signs, float *amax, void *stream)
{
    if (n_rows <= 0) return 0;
    return amax_common(in, n_rows, row_len, padded_len, rht_n, signs, amax, NULL,
                       (cudaStream_t)stream);
}

extern "C" int fp4k_tile_amax(const float *in, int64_t n_rows, int64_t row_len,
                              int64_t padded_len, int rht_n, const float *signs,
                              float *tile_amax, void *stream)
{
    if (n_rows <= 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
    const int64_t nt = ((n_rows + 15) / 16) * (padded_len / 16);
    cudaError_t e = cudaMemsetAsync(tile_amax, 0, (size_t)nt * sizeof(float), st);
    if (e != cudaSuccess) return (int)e;
    return amax_common(in, n_rows, row_len, padded_len, rht_n, signs, NULL, tile_amax, st);
}

extern "C" int fp4k_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

extern "C" void fp4k_device_name(char *buf, int n)
{
    cudaDeviceProp pr;
    if (n <= 0) return;
    buf[0] = 0;
    if (cudaGetDeviceProperties(&pr, 0) != cudaSuccess) return;
    snprintf(buf, (size_t)n, "%s (sm_%d%d, %d SMs, %.0f GiB)", pr.name, pr.major, pr.minor,
             pr.multiProcessorCount, pr.totalGlobalMem / 1073741824.0);
}

extern "C" const char *fp4k_error_string(int err) { return cudaGetErrorString((cudaError_t)err); }
