/* quant.cu — the fused GPU pass: load a tile of chunks, RHT in place (fp64 butterfly), block
 * scales, quantization and fp64 statistics in one read of the input; plus the pass-1 amax and
 * the weight_2d tile amax. Per-element and per-block arithmetic is common.h's (SPEC §2-§5, §7). */
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels.h"
#include "kdev.cuh"

namespace {

constexpr int CHUNK_BLOCKS = FP4K_CHUNK_BLOCKS;

/* Per-launch constants derived once on the host. */
struct KP {
    fp4k_cfg c;
    kdev_grid grid;    /* levels, g_max, emax */
    kdev_scale sc;     /* tensor-level scale constants */
    int64_t cpr;       /* chunks per row */
    int64_t chunk_len; /* CHUNK_BLOCKS * block */
    int64_t nchunks;   /* in this launch */
    int64_t row0;
    int64_t nrows;
    int64_t nblk_row;  /* padded_len / block */
};

/* ---- RHT butterflies (the fixed order of rht.c: h = 1, 2, 4, ...) ------------------------ */

/* One group of 16 held by one thread. */
__device__ __forceinline__ void rht16_thread(float *x, const float *sg)
{
    double v[16];
#pragma unroll
    for (int i = 0; i < 16; i++) v[i] = kdev_rht_in(x[i], sg[i]);
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
    for (int i = 0; i < 16; i++) x[i] = kdev_rht_out(v[i], 16);
}

/* One group of N >= 32 held by a warp: lane l holds elements l + 32 k, k < N/32. */
template <int N>
__device__ __forceinline__ void rht_warp(double (&v)[N / 32], int lane)
{
#pragma unroll
    for (int h = 1; h < 32 && h < N; h <<= 1) {
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

template <int T>
struct Acc {
    double x2, err2, xqx, xq2, sgn;
    uint32_t elements, padded, zero, nan, inf, sat, clip, blocks, zblocks, ufblocks, nfblocks;
};

/* W: stage width in elements (>= block, >= RHTN, multiple of 64); T: threads = chunks per CTA. */
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
    __shared__ uint32_t excl[8 * T];
    __shared__ double lerr[8 * T];
    __shared__ float sg[RHTN > 0 ? RHTN : 1];
    __shared__ int64_t s_in[T];  /* input offset of the chunk's first element */
    __shared__ int s_len[T];     /* chunk length (elements, padded) */
    __shared__ int s_real[T];    /* elements of the chunk inside row_len */

    const int tid = threadIdx.x;
    const int64_t g = (int64_t)blockIdx.x * T + tid;
    const bool live = g < p.nchunks;
    const int64_t row = live ? g / p.cpr : 0;
    const int64_t ci = live ? g - row * p.cpr : 0;
    const int64_t col0 = ci * p.chunk_len;
    const int len = live ? (int)min(p.chunk_len, p.c.padded_len - col0) : 0;
    const int real = live ? (int)max((int64_t)0, min((int64_t)len, p.c.row_len - col0)) : 0;
    s_in[tid] = row * p.c.row_len + col0;
    s_len[tid] = len;
    s_real[tid] = real;
#pragma unroll
    for (int i = 0; i < 16; i++) hist[i * T + tid] = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        excl[i * T + tid] = 0;
        lerr[i * T + tid] = 0.0;
    }
    if (RHTN > 0)
        for (int i = tid; i < RHTN; i += T) sg[i] = signs[i];

    Acc<T> a = {};
    const int block = p.c.block;
    const bool vec = (p.c.row_len & 3) == 0;
    const int nstages = (int)((p.chunk_len + W - 1) / W);
    const int64_t grow = p.row0 + row; /* global row: SR counters, weight_2d tiles */

    for (int s = 0; s < nstages; s++) {
        __syncthreads();
        /* load the T x W tile: consecutive threads read consecutive addresses of one chunk */
        if (vec) {
#pragma unroll 4
            for (int k = 0; k < W / 4; k++) {
                int idx = k * T + tid;
                int t = idx / (W / 4), j = (idx % (W / 4)) * 4;
                int pos = s * W + j;
                float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
                if (pos < s_real[t]) v = __ldg((const float4 *)(in + s_in[t] + pos));
                *(float4 *)&tile[t * LD + j] = v;
            }
        } else {
#pragma unroll 4
            for (int k = 0; k < W; k++) {
                int idx = k * T + tid;
                int t = idx / W, j = idx % W;
                int pos = s * W + j;
                tile[t * LD + j] = pos < s_real[t] ? __ldg(in + s_in[t] + pos) : 0.f;
            }
        }
        if (RHTN == 16) {
            /* each thread rotates its own segment: no barrier needed before processing */
            __syncthreads();
            int n = min(W, len - s * W);
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
            __syncthreads();
            const int lane = tid & 31, warp = tid >> 5;
            constexpr int GPS = W / (RHTN >= 32 ? RHTN : 32); /* groups per segment */
            for (int gi = warp; gi < T * GPS; gi += T / 32) {
                int t = gi / GPS, q = (gi % GPS) * RHTN;
                if (s * W + q >= s_len[t]) continue;
                double v[RHTN >= 32 ? RHTN / 32 : 1];
#pragma unroll
                for (int k = 0; k < RHTN / 32; k++)
                    v[k] = kdev_rht_in(tile[t * LD + q + lane + 32 * k], sg[lane + 32 * k]);
                rht_warp<RHTN >= 32 ? RHTN : 32>(v, lane);
#pragma unroll
                for (int k = 0; k < RHTN / 32; k++)
                    tile[t * LD + q + lane + 32 * k] = kdev_rht_out(v[k], RHTN);
            }
        }
        __syncthreads();
        if (!live || s * W >= len) continue;

        /* this thread's chunk, blocks in order, elements in order */
        const int n = min(W, len - s * W);
        for (int b0 = 0; b0 < n; b0 += block) {
            const float *xb = &tile[tid * LD + b0];
            const int col = (int)(col0 + s * W + b0); /* column of the block's first element */
            const int64_t bidx = (col0 + s * W + b0) / block;
            /* elements of the block that count: all with RHT, those inside row_len without */
            const int nreal = RHTN > 0 ? block : max(0, min(block, (int)(p.c.row_len - col)));
            kdev_block_stats bs;
            kdev_block_scan(xb, block, nreal, &bs);
            float tamax = 0.f;
            if (p.c.weight_2d) tamax = tile_amax[(grow / 16 - p.row0 / 16) * p.nblk_row + bidx];
            kdev_block_scale bsc;
            kdev_scale_block(&p.grid, &p.sc, &p.c, &bs, tamax, &bsc);
            if (scales) scales[row * p.nblk_row + bidx] = bsc.byte;
            a.blocks++;
            a.zblocks += bs.all_zero;
            a.ufblocks += bsc.underflow;
            a.nfblocks += bs.nonfinite > 0;
            a.nan += bs.nan;
            a.inf += bs.inf;
            a.padded += block - nreal;
            const int64_t e0 = grow * p.c.padded_len + col;
            for (int e = 0; e < block; e++) {
                if (e >= nreal) {
                    if (codes) codes[row * p.c.padded_len + col + e] = 0;
                    continue;
                }
                float x = xb[e];
                if (!isfinite(x)) {
                    if (codes) codes[row * p.c.padded_len + col + e] = 0;
                    continue;
                }
                kdev_elem r;
                kdev_quantize_elem(&p.grid, &p.c, &bsc, x, (uint64_t)(e0 + e), &r);
                if (codes) codes[row * p.c.padded_len + col + e] = (uint8_t)r.code;
                double xd = (double)x, qd = (double)r.deq;
                double d = __dsub_rn(qd, xd);
                a.x2 = __dadd_rn(a.x2, __dmul_rn(xd, xd));
                a.err2 = __dadd_rn(a.err2, __dmul_rn(d, d));
                a.xqx = __dadd_rn(a.xqx, __dmul_rn(qd, xd));
                a.xq2 = __dadd_rn(a.xq2, __dmul_rn(qd, qd));
                a.elements++;
                a.zero += x == 0.f;
                a.sat += r.saturated;
                a.clip += r.clipped;
                hist[r.code * T + tid]++;
                if (e == bs.amax_pos) {
                    excl[(r.code & 7) * T + tid]++;
                } else {
                    double se = __dsub_rn((double)r.level, (double)r.t);
                    a.sgn = __dadd_rn(a.sgn, se);
                    lerr[(r.code & 7) * T + tid] = __dadd_rn(lerr[(r.code & 7) * T + tid], se);
                }
            }
        }
    }

    if (live) {
        double *o = part + g * FP4K_NSUMS;
        o[FP4K_S_X2] = a.x2;
        o[FP4K_S_ERR2] = a.err2;
        o[FP4K_S_XQX] = a.xqx;
        o[FP4K_S_XQ2] = a.xq2;
        o[FP4K_S_SIGNED] = a.sgn;
#pragma unroll
        for (int i = 0; i < 8; i++) o[FP4K_S_LEVEL0 + i] = lerr[i * T + tid];
    }
    /* integer counters: warp sums, one atomic per warp and counter */
    uint32_t cv[11] = {a.elements, a.padded, a.zero, a.nan, a.inf, a.sat, a.clip,
                       a.blocks, a.zblocks, a.ufblocks, a.nfblocks};
    const int ci_idx[11] = {FP4K_C_ELEMENTS, FP4K_C_PADDED, FP4K_C_ZERO, FP4K_C_NAN, FP4K_C_INF,
                            FP4K_C_SATURATED, FP4K_C_CLIPPED, FP4K_C_BLOCKS, FP4K_C_ZERO_BLOCKS,
                            FP4K_C_UNDERFLOW_BLOCKS, FP4K_C_NONFINITE_BLOCKS};
#pragma unroll
    for (int i = 0; i < 11; i++) {
        uint32_t v = cv[i];
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if ((tid & 31) == 0 && v) atomicAdd(&counts[ci_idx[i]], (unsigned long long)v);
    }
    __syncthreads();
    if (tid < 24) {
        unsigned long long sum = 0, ex = 0;
        const uint32_t *h = tid < 16 ? &hist[tid * T] : &excl[(tid - 16) * T];
        for (int t = 0; t < T; t++) sum += h[t];
        if (tid < 16) {
            if (sum) atomicAdd(&counts[FP4K_C_HIST0 + tid], sum);
        } else {
            int lv = tid - 16;
            for (int t = 0; t < T; t++) ex += hist[lv * T + t] + hist[(lv + 8) * T + t];
            /* non-amax elements at level lv = all at lv minus the excluded amax elements */
            unsigned long long nonamax = ex - sum;
            if (nonamax) {
                atomicAdd(&counts[FP4K_C_LEVEL0 + lv], nonamax);
                atomicAdd(&counts[FP4K_C_SIGNED_N], nonamax);
            }
        }
    }
}

/* ---- pass 1: amax and the weight_2d tile amax --------------------------------------------- */

__device__ __forceinline__ void atomic_max_pos(float *addr, float v)
{
    /* non-negative floats order like their bit patterns */
    if (v > 0.f) atomicMax((unsigned int *)addr, __float_as_uint(v));
}

__device__ __forceinline__ float fin_abs(float v) { return isfinite(v) ? fabsf(v) : 0.f; }

/* Rotated value loader: group gr of row r (padded), RHT of size N, per thread (N <= 16). */
template <int N>
__global__ void k_amax_thread(const float *__restrict__ in, int64_t nrows, int64_t row_len,
                              int64_t padded_len, const float *__restrict__ signs,
                              float *amax, float *tile_amax, int64_t row0)
{
    const int64_t gpr = padded_len / 16; /* 16-wide groups per row */
    const int64_t ngroups = nrows * gpr;
    float m = 0.f;
    for (int64_t gi = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; gi < ngroups;
         gi += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = gi / gpr, c = (gi - r * gpr) * 16;
        float x[16];
#pragma unroll
        for (int i = 0; i < 16; i++) x[i] = c + i < row_len ? in[r * row_len + c + i] : 0.f;
        if (N == 16) {
            float sgl[16];
#pragma unroll
            for (int i = 0; i < 16; i++) sgl[i] = signs[i];
            rht16_thread(x, sgl);
        }
        float bm = 0.f;
#pragma unroll
        for (int i = 0; i < 16; i++) bm = fmaxf(bm, fin_abs(x[i]));
        if (tile_amax)
            atomic_max_pos(&tile_amax[((row0 + r) / 16 - row0 / 16) * gpr + c / 16], bm);
        m = fmaxf(m, bm);
    }
    if (amax) {
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        if ((threadIdx.x & 31) == 0) atomic_max_pos(amax, m);
    }
}

template <int N>
__global__ void k_amax_warp(const float *__restrict__ in, int64_t nrows, int64_t row_len,
                            int64_t padded_len, const float *__restrict__ signs, float *amax,
                            float *tile_amax, int64_t row0)
{
    const int lane = threadIdx.x & 31;
    const int64_t gpr = padded_len / N;
    const int64_t ngroups = nrows * gpr;
    const int64_t nwarps = (int64_t)gridDim.x * blockDim.x / 32;
    float m = 0.f;
    for (int64_t gi = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; gi < ngroups;
         gi += nwarps) {
        int64_t r = gi / gpr, c = (gi - r * gpr) * N;
        double v[N / 32];
#pragma unroll
        for (int k = 0; k < N / 32; k++) {
            int64_t col = c + lane + 32 * k;
            v[k] = kdev_rht_in(col < row_len ? in[r * row_len + col] : 0.f, signs[lane + 32 * k]);
        }
        rht_warp<N>(v, lane);
#pragma unroll
        for (int k = 0; k < N / 32; k++) {
            float y = fin_abs(kdev_rht_out(v[k], N));
            m = fmaxf(m, y);
            if (tile_amax) {
                /* 16-column block of element lane + 32k: reduce over its 16 lanes */
                float t = y;
                for (int o = 8; o > 0; o >>= 1) t = fmaxf(t, __shfl_xor_sync(0xffffffffu, t, o));
                if ((lane & 15) == 0)
                    atomic_max_pos(&tile_amax[((row0 + r) / 16 - row0 / 16) * (padded_len / 16) +
                                              (c + lane + 32 * k) / 16],
                                   t);
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
                const float *signs, float *amax, float *tile_amax, int64_t row0, cudaStream_t st)
{
    const int th = 256;
    switch (rht_n) {
    case 0:
        k_amax_thread<0><<<grid_for(n_rows * (padded_len / 16), th), th, 0, st>>>(
            in, n_rows, row_len, padded_len, signs, amax, tile_amax, row0);
        break;
    case 16:
        k_amax_thread<16><<<grid_for(n_rows * (padded_len / 16), th), th, 0, st>>>(
            in, n_rows, row_len, padded_len, signs, amax, tile_amax, row0);
        break;
#define AW(N)                                                                                  \
    case N:                                                                                    \
        k_amax_warp<N><<<grid_for(n_rows * (padded_len / N) * 32, th), th, 0, st>>>(          \
            in, n_rows, row_len, padded_len, signs, amax, tile_amax, row0);                    \
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
    int64_t nb = (p.nchunks + T - 1) / T;
    k_quant<W, T, R><<<(unsigned)nb, T, 0, st>>>(p, in, signs, tile_amax, part,
                                                  (unsigned long long *)counts, codes, scales);
}

} // namespace

extern "C" int fp4k_cfg_supported(const fp4k_cfg *cfg)
{
    int b = cfg->block;
    if (b < 2 || b > 256 || (b & (b - 1))) return 0;
    if (cfg->rht_n && (cfg->rht_n < 16 || cfg->rht_n > 256 || cfg->rht_n > CHUNK_BLOCKS * b))
        return 0;
    if (cfg->weight_2d && b != 16) return 0;
    return 1;
}

extern "C" int64_t fp4k_nchunks(const fp4k_cfg *cfg, int64_t n_rows)
{
    int64_t nblk = cfg->padded_len / cfg->block;
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
    kdev_grid_make(cfg, &p.grid);
    kdev_scale_make(cfg, &p.grid, &p.sc);
    p.nblk_row = cfg->padded_len / cfg->block;
    p.cpr = (p.nblk_row + CHUNK_BLOCKS - 1) / CHUNK_BLOCKS;
    p.chunk_len = (int64_t)CHUNK_BLOCKS * cfg->block;
    p.nchunks = n_rows * p.cpr;
    p.row0 = row0;
    p.nrows = n_rows;
    cudaStream_t st = (cudaStream_t)stream;
    int w = cfg->block > cfg->rht_n ? cfg->block : cfg->rht_n;
    if (w < 64) w = 64;
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

extern "C" int fp4k_amax(const float *in, int64_t n_rows, int64_t row_len, int64_t padded_len,
                         int rht_n, const float *signs, float *amax, void *stream)
{
    if (n_rows <= 0) return 0;
    return amax_common(in, n_rows, row_len, padded_len, rht_n, signs, amax, NULL, 0,
                       (cudaStream_t)stream);
}

extern "C" int fp4k_tile_amax(const float *in, int64_t n_rows, int64_t row_len,
                              int64_t padded_len, int rht_n, const float *signs,
                              float *tile_amax, void *stream)
{
    if (n_rows <= 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
    int64_t nt = ((n_rows + 15) / 16) * (padded_len / 16);
    cudaError_t e = cudaMemsetAsync(tile_amax, 0, (size_t)nt * sizeof(float), st);
    if (e != cudaSuccess) return (int)e;
    return amax_common(in, n_rows, row_len, padded_len, rht_n, signs, NULL, tile_amax, 0, st);
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
