/* common.h — what the CPU engine and the CUDA kernels must share bit for bit (SPEC §2–§4): the
 * element grids, RTNE/SR level choice, the E4M3/E8M0 codecs, the Philox use and the fp64 RHT
 * butterfly. C11 `static inline`; `__host__ __device__` under nvcc. No libc calls beyond the
 * math builtins CUDA also has, no static tables (grids come from switches into local structs).
 *
 * Conventions pinned here (and cited by quant.h, rht.h):
 *  - 4-bit code = (sign << 3) | magnitude index; -0 gives the negative zero code 8.
 *  - RTNE: t clamped to g_max, then the nearest level; a midpoint tie goes to the level whose
 *    magnitude index is even (the even code).
 *  - SR: lo <= t <= hi adjacent levels, p = (t - lo) / (hi - lo) in fp32, up iff u < p.
 *    u from Philox4x32-10: key = (seed lo32, seed hi32), counter = (idx lo32, idx hi32, stream,
 *    0), u = (word0 >> 8) * 2^-24; with sr_bits 8, u = (word0 >> 24) * 2^-8. The element index
 *    idx = (global row) * padded_len + column, padded positions included (RHT makes them
 *    non-zero), so any thread count, slab split or device gives the same bits.
 *  - RHT signs seed:N: Philox key = (N lo32, N hi32), counter = (i, 0, FP4C_RHT_SIGN_STREAM, 0),
 *    s_i = -1 iff bit 0 of word0 is set. te signs: mask 0xD7E8 (bit i set <=> s_i = -1) for
 *    n = 16, tiled for n > 16: s_i = te16[i % 16].
 *  - E4M3: bias 7, max 448, subnormals m * 2^-9, RTNE, saturating; never the NaN code 0x7F/0xFF;
 *    NaN input encodes to 0. E8M0: 2^(b - 127); encoders clamp the exponent to [-127, 127], so
 *    byte 255 (NaN in OCP MX) is never produced; decoding 255 gives NaN. */
#ifndef FP4_COMMON_H
#define FP4_COMMON_H

#include <stdint.h>

#ifdef __CUDACC__
#ifndef R123_CUDA_DEVICE
#define R123_CUDA_DEVICE __host__ __device__
#endif
#define FP4_HD static inline __host__ __device__
#else
#include <math.h>
#define FP4_HD static inline
#endif

#include <Random123/philox.h>

#define FP4C_E4M3_MAX 448.0f
#define FP4C_FLT_MAX 3.402823466e+38f
#define FP4C_RHT_TE_MASK 0xD7E8u
#define FP4C_RHT_SIGN_STREAM 0xFFFFFFFFu

/* The fixed partition of SPEC §7: a chunk is up to FP4C_CHUNK_BLOCKS consecutive blocks of one
 * row; its fp64 partial sums are merged in (row, chunk) order by the CPU engine and the
 * kernels alike (quant.h FP4_CHUNK_BLOCKS, kernels/quant.cu). */
#define FP4C_CHUNK_BLOCKS 64

/* Format ids: the same values as fp4_format_id in format.h. */
#define FP4C_E2M1 0
#define FP4C_E1M2 1
#define FP4C_INT4 2
#define FP4C_E3M0 3

/* ---- bit casts -------------------------------------------------------------------------- */
FP4_HD uint32_t fp4c_f2u(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    union { float f; uint32_t u; } v;
    v.f = f;
    return v.u;
#endif
}

FP4_HD float fp4c_u2f(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    union { float f; uint32_t u; } v;
    v.u = u;
    return v.f;
#endif
}

/* NaN-agnostic min/max that compile to single instructions (fminf is a libm call on x86). */
FP4_HD float fp4c_minf(float a, float b) { return a < b ? a : b; }
FP4_HD float fp4c_maxf(float a, float b) { return a > b ? a : b; }
FP4_HD float fp4c_absf(float a) { return fp4c_u2f(fp4c_f2u(a) & 0x7FFFFFFFu); }
FP4_HD int fp4c_isfinite(float a) { return (fp4c_f2u(a) & 0x7F800000u) != 0x7F800000u; }
/* 2^e for e in [-149, 127], exact. */
FP4_HD float fp4c_exp2i(int e)
{
    if (e >= -126) return fp4c_u2f((uint32_t)(e + 127) << 23);
    return fp4c_u2f(1u << (e + 149));
}

/* ---- grids (SPEC §2) --------------------------------------------------------------------- */
typedef struct fp4c_grid {
    float q[8];   /* magnitudes; unused tail entries (e2m1:max=M) repeat g_max */
    float mid[7]; /* mid[i] = (q[i] + q[i+1]) / 2; FLT_MAX past the last level */
    float gmax;
    float inv_gmax; /* fp32 1 / g_max (the nvfp4 multiplier of SPEC §3) */
    int n;          /* levels in use: 8, or 5..7 for e2m1:max=M */
    int emax;       /* floor(log2 g_max) */
    int kind;       /* FP4C_GRID_*: which closed form of the RTNE index applies */
    float inv_step; /* FP4C_GRID_UNIFORM: 1 / (q[1] - q[0]), a power of two; else 0 */
} fp4c_grid;

/* Grid kinds with a closed-form RTNE index equal to fp4c_rtne_index (SPEC §2 RTNE; test_format
 * pins the scalar forms below, test_quant the AVX-512 form, kernels/bench/check_rtne.c the CUDA one):
 * UNIFORM q_i = i * step (e1m2, int4), E2M1 the full e2m1 grid; GENERIC: the midpoint chain. */
enum { FP4C_GRID_GENERIC = 0, FP4C_GRID_UNIFORM = 1, FP4C_GRID_E2M1 = 2 };

/* Level i of the full grid `fid` (0 <= i < 8). */
FP4_HD float fp4c_level(int fid, int i)
{
    switch (fid) {
    case FP4C_E2M1:
        switch (i) {
        case 0: return 0.0f;
        case 1: return 0.5f;
        case 2: return 1.0f;
        case 3: return 1.5f;
        case 4: return 2.0f;
        case 5: return 3.0f;
        case 6: return 4.0f;
        default: return 6.0f;
        }
    case FP4C_E1M2: return 0.5f * (float)i;
    case FP4C_INT4: return (float)i;
    case FP4C_E3M0: return i == 0 ? 0.0f : fp4c_exp2i(i - 3);
    default: return 0.0f;
    }
}

/* Build the grid of format fid with cap `max` (0: full; e2m1 only: 2, 3 or 4). */
FP4_HD fp4c_grid fp4c_grid_make(int fid, int max)
{
    fp4c_grid g;
    int n = 8;
    for (int i = 0; i < 8; i++) g.q[i] = fp4c_level(fid, i);
    if (max > 0) {
        n = 0;
        while (n < 8 && g.q[n] <= (float)max) n++;
    }
    g.n = n;
    g.gmax = g.q[n - 1];
    for (int i = n; i < 8; i++) g.q[i] = g.gmax;
    for (int i = 0; i < 7; i++) g.mid[i] = i + 1 < n ? 0.5f * (g.q[i] + g.q[i + 1]) : FP4C_FLT_MAX;
    g.inv_gmax = 1.0f / g.gmax;
    int e = 0;
    while (fp4c_exp2i(e + 1) <= g.gmax) e++;
    g.emax = e;
    g.kind = n == 8 && (fid == FP4C_E1M2 || fid == FP4C_INT4) ? FP4C_GRID_UNIFORM
             : n == 8 && fid == FP4C_E2M1                    ? FP4C_GRID_E2M1
                                                             : FP4C_GRID_GENERIC;
    g.inv_step = g.kind == FP4C_GRID_UNIFORM ? 1.0f / g.q[1] : 0.0f;
    return g;
}

/* RTNE magnitude index of t >= 0 (t already clamped to g_max): nearest level, ties to the
 * even index. Branch-free: index = number of midpoints passed; a tie at mid[i] passes it iff
 * i is odd (then i + 1 is even). */
FP4_HD int fp4c_rtne_index(const fp4c_grid *g, float t)
{
    return (t > g->mid[0]) + (t >= g->mid[1]) + (t > g->mid[2]) + (t >= g->mid[3]) +
           (t > g->mid[4]) + (t >= g->mid[5]) + (t > g->mid[6]);
}

/* The integer nearest y (0 <= y < 2^22), ties to even: y + 2^23 rounds (RTNE, the default
 * mode; device code rounds to nearest too) to an integer, exactly undone by - 2^23. */
FP4_HD int fp4c_rne_int(float y) { return (int)((y + 8388608.0f) - 8388608.0f); }

/* fp4c_rtne_index in closed form for the two grid kinds that have one; t in [0, g_max]
 * (clamped, finite). Uniform: the level nearest t / step, ties to the even index. E2M1: below
 * 1 the levels are k / 2 (k = 0, 1, 2: uniform); from 1 up they are the floats with one
 * mantissa bit, so t rounds to one mantissa bit, ties to even (bit pattern + 0x1FFFFF + the
 * kept bit, low 22 bits cleared: the even mantissa is the even index), and the index is
 * 2 + 2 * exponent + mantissa bit. Both equal the midpoint chain for every such t. */
FP4_HD int fp4c_rtne_index_uniform(const fp4c_grid *g, float t)
{
    return fp4c_rne_int(t * g->inv_step);
}

FP4_HD int fp4c_rtne_index_e2m1(float t)
{
    uint32_t u = fp4c_f2u(t);
    u += 0x1FFFFFu + ((u >> 22) & 1u);
    const int hi = 2 + 2 * ((int)(u >> 23) - 127) + (int)((u >> 22) & 1u);
    return t < 1.0f ? fp4c_rne_int(2.0f * t) : hi;
}

/* SR magnitude index of t >= 0 (clamped to g_max) given u in [0, 1). */
FP4_HD int fp4c_sr_index(const fp4c_grid *g, float t, float u)
{
    int lo = (t >= g->q[1]) + (t >= g->q[2]) + (t >= g->q[3]) + (t >= g->q[4]) +
             (t >= g->q[5]) + (t >= g->q[6]) + (t >= g->q[7]);
    if (lo >= g->n - 1) return g->n - 1;
    float ql = g->q[lo], qh = g->q[lo + 1];
    float p = (t - ql) / (qh - ql);
    return lo + (u < p);
}

/* ---- Philox (SPEC §2) --------------------------------------------------------------------- */
FP4_HD uint32_t fp4c_philox_word0(uint64_t seed, uint64_t idx, uint32_t stream)
{
    philox4x32_ctr_t c = {{(uint32_t)idx, (uint32_t)(idx >> 32), stream, 0u}};
    philox4x32_key_t k = {{(uint32_t)seed, (uint32_t)(seed >> 32)}};
    philox4x32_ctr_t r = philox4x32(c, k);
    return r.v[0];
}

/* The SR uniform of element idx: 24 bits (default) or 8 bits (sr_bits == 8). */
FP4_HD float fp4c_sr_uniform(uint64_t seed, uint64_t idx, uint32_t stream, int sr_bits)
{
    uint32_t w = fp4c_philox_word0(seed, idx, stream);
    if (sr_bits == 8) return (float)(w >> 24) * (1.0f / 256.0f);
    return (float)(w >> 8) * (1.0f / 16777216.0f);
}

/* ---- E4M3 (SPEC §3) ------------------------------------------------------------------------ */
/* Encode v >= 0 (sign ignored) RTNE with saturation to 448. */
FP4_HD uint8_t fp4c_e4m3_encode(float v)
{
    v = fp4c_absf(v);
    if (!(v == v)) return 0;
    if (!(v < FP4C_E4M3_MAX)) return 0x7E; /* 448, +Inf included */
    if (v < 0.015625f) {                   /* below 2^-6: subnormal step 2^-9 */
        /* v * 512 < 8 is exact; adding 2^23 rounds to an integer with RTNE */
        float r = (v * 512.0f + 8388608.0f) - 8388608.0f;
        return (uint8_t)(int)r; /* 8 == 2^-6 is also code 8 (exponent 1, mantissa 0) */
    }
    uint32_t b = fp4c_f2u(v);
    b += 0x7FFFFu + ((b >> 20) & 1u); /* RTNE to 3 mantissa bits */
    b &= ~0xFFFFFu;
    int e = (int)(b >> 23) - 127;       /* -6 .. 8 */
    uint32_t code = ((uint32_t)(e + 7) << 3) | ((b >> 20) & 7u);
    if (code > 0x7E) code = 0x7E;
    return (uint8_t)code;
}

/* Decode an E4M3 byte (sign bit honoured; 0x7F/0xFF decode as NaN though never produced). */
FP4_HD float fp4c_e4m3_decode(uint8_t c)
{
    uint32_t e = (c >> 3) & 15u, m = c & 7u;
    float v;
    if ((c & 0x7F) == 0x7F) v = fp4c_u2f(0x7FC00000u);
    else if (e == 0) v = (float)m * (1.0f / 512.0f);
    else v = fp4c_u2f(((e - 7u + 127u) << 23) | (m << 20));
    return (c & 0x80) ? -v : v;
}

/* ---- E8M0 (SPEC §3) ------------------------------------------------------------------------ */
FP4_HD float fp4c_e8m0_decode(uint8_t b)
{
    if (b == 255) return fp4c_u2f(0x7FC00000u);
    return fp4c_exp2i((int)b - 127);
}

/* floor(log2 v) for finite v > 0 (subnormals included). */
FP4_HD int fp4c_floor_log2(float v)
{
    uint32_t b = fp4c_f2u(v) & 0x7FFFFFFFu;
    int e = (int)(b >> 23);
    if (e > 0) return e - 127;
    int k = -127; /* subnormal: find the top set bit of the mantissa */
    uint32_t m = b;
    while (m < 0x400000u) {
        m <<= 1;
        k--;
    }
    return k;
}

/* ceil(log2 v) for finite v > 0. */
FP4_HD int fp4c_ceil_log2(float v)
{
    int f = fp4c_floor_log2(v);
    return fp4c_exp2i(f < -149 ? -149 : f) == v ? f : f + 1;
}

/* MX shared exponent of a block with amax a (finite, >= 0): floor rule
 * floor(log2 a) - emax, or rceil ceil(log2(a / g_max)) (fp32 division); clamped to
 * [-127, 127]; a == 0 gives -127. Returns the E8M0 byte (exponent + 127). */
FP4_HD uint8_t fp4c_e8m0_block(float a, const fp4c_grid *g, int rceil)
{
    int e;
    if (!(a > 0.0f)) e = -127;
    else if (rceil) {
        float r = a / g->gmax;
        e = r > 0.0f ? fp4c_ceil_log2(r) : -127;
    } else e = fp4c_floor_log2(a) - g->emax;
    if (e < -127) e = -127;
    if (e > 127) e = 127;
    return (uint8_t)(e + 127);
}

/* ---- Block scale parameters (SPEC §3) ------------------------------------------------------ */
/* One block's scale under a scale mode, written once for the CPU (engine/ref.c) and the kernels
 * (kernels/quant.cu): t = (|x| · mul) / div; x̂ = (q · dec1) · dec2; s_eff the decode scale the
 * level statistics normalize by; live: the block quantizes; underflow: a non-zero block whose
 * scale is 0 (counted in scale_underflow_blocks); sbyte: the stored scale byte (E4M3 for
 * nvfp4, E8M0 for mxfp4, else 0). scale: 0 fp32, 1 nvfp4, 2 mxfp4, 3 tensor (fp4_scale_mode).
 * amax_b: the block's own amax; amax_s: the amax its scale comes from (amax_b, or the 16x16
 * tile amax with --weight-2d). ts = amax_t / g_max (tensor); nv_m = S_enc · (1/g_max) and
 * nv_sdec = S_dec (nvfp4, Transformer Engine's fp32 order). */
typedef struct fp4c_blk_par {
    float mul, div, dec1, dec2;
    double s_eff;
    int live, underflow;
    uint8_t sbyte;
} fp4c_blk_par;

FP4_HD fp4c_blk_par fp4c_block_params(int scale, const fp4c_grid *g, float ts, float nv_m,
                                      float nv_sdec, int mx_rceil, float amax_b, float amax_s)
{
    fp4c_blk_par b;
    b.mul = 1.0f;
    b.div = 1.0f;
    b.dec1 = 0.0f;
    b.dec2 = 1.0f;
    b.s_eff = 0.0;
    b.live = 0;
    b.underflow = 0;
    b.sbyte = 0;
    switch (scale) {
    case 0: { /* fp32: s_b = amax_b / g_max */
        const float s = amax_s / g->gmax;
        if (s > 0.0f) {
            b.div = s;
            b.dec1 = s;
            b.s_eff = s;
            b.live = 1;
        } else b.underflow = amax_s > 0.0f;
        break;
    }
    case 3: /* tensor: s = amax_t / g_max */
        if (ts > 0.0f && amax_b > 0.0f) {
            b.div = ts;
            b.dec1 = ts;
            b.s_eff = ts;
            b.live = 1;
        } else b.underflow = amax_b > 0.0f;
        break;
    case 1: { /* nvfp4: TE's order throughout, also for e == 0: enc = FLT_MAX then saturates
                 every non-zero x to ±g_max — TE's codes — while the decode q · 0 · S_dec is 0 */
        const uint8_t e = fp4c_e4m3_encode(fp4c_minf(amax_s * nv_m, FP4C_E4M3_MAX));
        const float ef = fp4c_e4m3_decode(e);
        b.sbyte = e;
        b.mul = fp4c_minf(1.0f / (ef * nv_sdec), FP4C_FLT_MAX);
        b.dec1 = ef;
        b.dec2 = nv_sdec;
        b.s_eff = (double)(ef * nv_sdec);
        b.live = amax_b > 0.0f && b.s_eff > 0.0;
        b.underflow = amax_b > 0.0f && !b.live;
        break;
    }
    default: { /* mxfp4: E8M0 power of two */
        b.sbyte = fp4c_e8m0_block(amax_b, g, mx_rceil);
        const float X = fp4c_e8m0_decode(b.sbyte);
        if (amax_b > 0.0f) {
            b.mul = 1.0f / X; /* exact: X is a power of two in [2^-127, 2^127] */
            b.dec1 = X;
            b.s_eff = X;
            b.live = 1;
        }
        break;
    }
    }
    /* zero or underflowed block: every x̂ is ±0 (fp32/tensor/mxfp4: every t is 0 too) */
    if (!b.live && scale != 1) b.mul = 0.0f;
    return b;
}

/* ---- RHT butterfly (SPEC §4) --------------------------------------------------------------- */
/* In-place d = d · H_n (Sylvester), fp64, this fixed order: stride 1, 2, 4, …; within a stride,
 * pairs in ascending index. */
FP4_HD void fp4c_fwht_f64(double *d, int n)
{
    for (int h = 1; h < n; h <<= 1)
        for (int i = 0; i < n; i += h << 1)
            for (int j = i; j < i + h; j++) {
                double a = d[j], b = d[j + h];
                d[j] = a + b;
                d[j + h] = a - b;
            }
}

/* ---- decoding a stored NVFP4/MXFP4 export (SPEC §10, §11; io/quantized.c) ------------------
 * One element of an already-quantized tensor from its stored bytes, the same on the host and
 * the device: the byte-to-scale and code-to-value tables come from io/quantized.c
 * (fp4_quant_qdec, the producers' own decoders), the one or two fp32 operations after them
 * are written with the round-to-nearest intrinsics on the device, so no contraction or
 * approximate division can enter. */
#define FP4C_QOP_MUL 0  /* v = value[c] * (scale[b] * global)   ModelOpt NVFP4 */
#define FP4C_QOP_DIV 1  /* v = value[c] * (scale[b] / global)   compressed-tensors NVFP4 */
#define FP4C_QOP_NONE 2 /* v = value[c] * scale[b]              MXFP4, GGUF MXFP4 */
#define FP4C_QOP_POST 3 /* v = (value[c] * scale[b]) * global   GGUF NVFP4 (then its sidecar) */
#define FP4C_QL_FLAT 0    /* codes: nibble pairs (low = even); scales [rows][scale_cols] */
#define FP4C_QL_SWZ 1     /* codes as flat; scales in the cuBLAS 128x4 tile layout */
#define FP4C_QL_GGUF_MX 2 /* ggml type 39 blocks: e, qs[16]; j low, j + 16 high */
#define FP4C_QL_GGUF_NV 3 /* ggml type 40 blocks: d[4], qs[32]; sub-block s in qs[8s..] */

typedef struct fp4c_qdec {
    float scale[256]; /* the decoded block-scale byte before the per-tensor scale */
    float value[16];  /* the decoded 4-bit code (ModelOpt NVFP4, GGUF: code 8 is +0) */
    int op;           /* FP4C_QOP_* */
    int layout;       /* FP4C_QL_* */
    int block;        /* elements per block scale (16, 32) */
    int pad_;
    int64_t K;          /* elements per logical row */
    int64_t scale_cols; /* block scales per row as stored */
} fp4c_qdec;

#ifdef __CUDA_ARCH__
#define FP4C_FMUL(a, b) __fmul_rn((a), (b))
#define FP4C_FDIV(a, b) __fdiv_rn((a), (b))
#define FP4C_DMUL(a, b) __dmul_rn((a), (b))
#define FP4C_DADD(a, b) __dadd_rn((a), (b))
#define FP4C_DSUB(a, b) __dsub_rn((a), (b))
#else
#define FP4C_FMUL(a, b) ((a) * (b))
#define FP4C_FDIV(a, b) ((a) / (b))
#define FP4C_DMUL(a, b) ((a) * (b))
#define FP4C_DADD(a, b) ((a) + (b))
#define FP4C_DSUB(a, b) ((a) - (b))
#endif

/* Where the block scale of logical row r, block c lies in the stored scale bytes (GGUF: in the
 * one tensor's bytes), as io/quantized.c fp4_quant_scale_index. */
FP4_HD int64_t fp4c_qdec_scale_index(const fp4c_qdec *d, int64_t r, int64_t c)
{
    if (d->layout == FP4C_QL_FLAT) return r * d->scale_cols + c;
    if (d->layout == FP4C_QL_GGUF_MX) return (r * d->scale_cols + c) * 17;
    if (d->layout == FP4C_QL_GGUF_NV) {
        const int64_t g = r * d->scale_cols + c;
        return (g / 4) * 36 + g % 4;
    }
    const int64_t nC = d->scale_cols / 4, r1 = r / 128, r0 = r % 128, c1 = c / 4, c0 = c % 4;
    return ((r1 * nC + c1) * 32 + (r0 % 32)) * 16 + (r0 / 32) * 4 + c0;
}

/* The 4-bit code of element k of logical row r (io/quantized.c fp4_quant_code). */
FP4_HD unsigned fp4c_qdec_code(const fp4c_qdec *d, const uint8_t *packed, int64_t r, int64_t k)
{
    if (d->layout == FP4C_QL_FLAT || d->layout == FP4C_QL_SWZ)
        return (packed[r * (d->K / 2) + k / 2] >> ((k & 1) * 4)) & 15u;
    const int64_t g = r * d->scale_cols + k / d->block, j = k % d->block;
    if (d->layout == FP4C_QL_GGUF_MX)
        return (packed[g * 17 + 1 + j % 16] >> (j < 16 ? 0 : 4)) & 15u;
    return (packed[(g / 4) * 36 + 4 + (g % 4) * 8 + j % 8] >> (j < 8 ? 0 : 4)) & 15u;
}

/* The decoded fp32 value of element k of logical row r: fp4_quant_decode's bits (SPEC §10). */
FP4_HD float fp4c_qdec_value(const fp4c_qdec *d, const uint8_t *packed, const uint8_t *scales,
                             float global, int64_t r, int64_t k)
{
    const float s = d->scale[scales[fp4c_qdec_scale_index(d, r, k / d->block)]];
    const float v = d->value[fp4c_qdec_code(d, packed, r, k)];
    switch (d->op) {
    case FP4C_QOP_MUL: return FP4C_FMUL(v, FP4C_FMUL(s, global));
    case FP4C_QOP_DIV: return FP4C_FMUL(v, FP4C_FDIV(s, global));
    case FP4C_QOP_POST: return FP4C_FMUL(FP4C_FMUL(v, s), global);
    default: return FP4C_FMUL(v, s);
    }
}

/* The audit's fp64 sums (SPEC §11), taken per segment: FP4C_AUDIT_SEG consecutive elements of
 * one row (its last segment shorter), each segment's sums from +0 in element order, then the
 * segments added in (row, segment) order by the caller, on the CPU and the GPU alike. Per
 * segment FP4C_AS_N doubles: for each measure xx = sum x^2, ee = sum (x - q)^2, xq = sum x q. */
#define FP4C_AUDIT_SEG 256
enum {
    FP4C_AS_DECL = 0,   /* the export as declared */
    FP4C_AS_SWAP = 3,   /* the declared decode, elements 2j and 2j+1 exchanged */
    FP4C_AS_RECIP = 6,  /* the other direction of the global scale */
    FP4C_AS_SWZ = 9,    /* the other scale layout */
    FP4C_AS_NA = 12,    /* the declared decode over each block's non-amax entries */
    FP4C_AS_N = 15
};

/* Add x against q into s[0..3) (xx, ee, xq), as every audit sum does. */
FP4_HD void fp4c_audit_acc(double *s, float x, float q)
{
    const double xd = x, qd = q, e = FP4C_DSUB(xd, qd);
    s[0] = FP4C_DADD(s[0], FP4C_DMUL(xd, xd));
    s[1] = FP4C_DADD(s[1], FP4C_DMUL(e, e));
    s[2] = FP4C_DADD(s[2], FP4C_DMUL(xd, qd));
}

#endif
