/* rht.c — Random Hadamard Transform (SPEC §4): sign vectors (te, seed:N, none) and the
 * blocked transform, fp64 butterfly in common.h's fixed order, rounded once to fp32. */
#include "num/rht.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "base/isa.h"

static int is_pow2_in(int n) { return n >= 16 && n <= FP4_RHT_MAX && (n & (n - 1)) == 0; }

fp4_status fp4_rht_signs_make(const char *spec, int n, fp4_rht_signs *out)
{
    if (!is_pow2_in(n))
        return fp4_error(FP4_ERR_USAGE, "rht size %d: must be a power of two in 16..256", n);
    if (!spec || !*spec) spec = "te";
    memset(out, 0, sizeof *out);
    out->n = n;
    if (strcmp(spec, "te") == 0) {
        /* TE's 16-vector, tiled for n > 16: s[i] = te16[i % 16] */
        for (int i = 0; i < n; i++) out->s[i] = (FP4C_RHT_TE_MASK >> (i % 16)) & 1u ? -1.0f : 1.0f;
        snprintf(out->desc, sizeof out->desc, "te");
    } else if (strcmp(spec, "none") == 0) {
        for (int i = 0; i < n; i++) out->s[i] = 1.0f;
        snprintf(out->desc, sizeof out->desc, "none");
    } else if (strncmp(spec, "seed:", 5) == 0) {
        const char *num = spec + 5;
        char *end = NULL;
        errno = 0;
        unsigned long long seed = strtoull(num, &end, 10);
        if (!*num || *num == '-' || *num == '+' || errno || !end || *end)
            return fp4_error(FP4_ERR_USAGE, "rht signs '%s': seed:N needs a decimal N", spec);
        for (int i = 0; i < n; i++)
            out->s[i] = fp4c_philox_word0(seed, (uint64_t)i, FP4C_RHT_SIGN_STREAM) & 1u ? -1.0f
                                                                                         : 1.0f;
        snprintf(out->desc, sizeof out->desc, "seed:%llu", seed);
    } else {
        return fp4_error(FP4_ERR_USAGE, "rht signs '%s': expected te, seed:N or none", spec);
    }
    return FP4_OK;
}

/* The reference: per group, d[i] = (double)x[i] * (double)s[i]; fp4c_fwht_f64 (stages
 * h = 1, 2, 4, ..., n/2; d[j] = a + b, d[j + h] = a - b with a = d[j], b = d[j + h], j the lower
 * index); y[i] = (float)(d[i] / sqrt(n)). The SIMD variants below perform, for every output,
 * exactly this sequence of fp64 operations with the same operands in the same operand order
 * (only the order in which independent butterflies of one stage run differs), so they give
 * the same bits, NaN signs and payloads included (test_rht pins this with memcmp). */
static void fwd_scalar(const fp4_rht_signs *sg, const float *x, float *y, int64_t len)
{
    const int n = sg->n;
    const double rs = sqrt((double)n);
    double d[FP4_RHT_MAX];
    for (int64_t g = 0; g + n <= len; g += n) {
        for (int i = 0; i < n; i++) d[i] = (double)x[g + i] * (double)sg->s[i];
        fp4c_fwht_f64(d, n);
        for (int i = 0; i < n; i++) y[g + i] = (float)(d[i] / rs);
    }
}

#ifdef FP4_ISA_X86
#include <immintrin.h>
#define RHT_HAVE_DISPATCH 1
/* No "fma" in either target: the butterflies have nothing to contract, and without FMA the
 * compiler could not fuse the sign product into the first stage's add even if asked to
 * (-ffp-contract; the build's -std=c11 keeps contraction off anyway). */
#define RHT_AVX2 __attribute__((target("avx2")))
#define RHT_AVX512 __attribute__((target("avx512f,avx512dq,avx2")))
#define RHT_INLINE static inline __attribute__((always_inline))

/* The final scaling: d / sqrt(n), or d * (1/sqrt(n)) where that is the same operation. For
 * n = 16, 64, 256 sqrt(n) = 4, 8, 16 exactly (sqrt is correctly rounded and these are
 * representable), and 1/sqrt(n) = 2^-2, 2^-3, 2^-4 exactly; d / 2^k and d * 2^-k are then
 * the correctly rounded value of the same real number for every finite d (subnormal results
 * included, same rounding mode), the same ±0 and ±Inf, and for a NaN d both return d's NaN
 * quieted (sign and payload kept). So the multiply is bit-identical to the division there;
 * for n = 32, 128 sqrt(n) is irrational and the division stays. */
static int rht_scale_is_pow2(int n) { return n == 16 || n == 64 || n == 256; }

/* a + b with a as the first source operand. Commutative for numbers, but when both are NaN
 * x86 returns the first source's NaN, and the compiler feels free to swap the operands of an
 * add intrinsic (it did, here): asm pins the reference's order, so NaN payloads and signs
 * match too. (Subtraction cannot be swapped; x * s and d * 2^-k have one operand that is
 * never NaN, so their order does not matter.) */
RHT_AVX512 RHT_INLINE __m512d add512(__m512d a, __m512d b)
{
    __m512d r;
    __asm__("vaddpd %2, %1, %0" : "=v"(r) : "v"(a), "v"(b));
    return r;
}
RHT_AVX2 RHT_INLINE __m256d add256(__m256d a, __m256d b)
{
    __m256d r;
    __asm__("vaddpd %2, %1, %0" : "=x"(r) : "x"(a), "x"(b));
    return r;
}

/* One stage with stride h < vector width inside one vector u (lanes j), t = u with lanes j
 * and j ^ h swapped, up = the lanes with bit h set: a lane with the bit clear gets
 * u[j] + u[j | h] = a + b (t's lane holds b), a lane with it set gets t - u =
 * u[j & ~h] - u[j] = a - b: the reference's operands in the reference's order. */
RHT_AVX512 RHT_INLINE __m512d bf512(__m512d u, __m512d t, __mmask8 up)
{
    return _mm512_mask_sub_pd(add512(u, t), up, t, u);
}

/* The stages between the NV vectors of v (W doubles each: stages W..NV*W/2), written once for
 * both widths: butterfly q of stride h pairs vectors j and j + h, a + b (ADD, the operand
 * order pinned) into j and a - b (SUB) into j + h, the reference's operands. */
#define RHT_STAGES_BETWEEN(v, NV, VT, ADD, SUB)                                                 \
    _Pragma("GCC unroll 8") for (int h = 1; h < (NV); h <<= 1)                                  \
        _Pragma("GCC unroll 32") for (int q = 0; q < (NV) / 2; q++) {                           \
            const int j = 2 * (q & ~(h - 1)) + (q & (h - 1));                                   \
            const VT a = v[j], b = v[j + h];                                                    \
            v[j] = ADD(a, b);                                                                   \
            v[j + h] = SUB(a, b);                                                               \
        }

/* 8 values of x times their signs s as doubles, with stages 1, 2, 4 inside the vector. */
RHT_AVX512 RHT_INLINE __m512d load_bf512(const float *x, __m512d s)
{
    __m512d u = _mm512_mul_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x)), s);
    u = bf512(u, _mm512_permute_pd(u, 0x55), 0xAA);             /* h = 1 */
    u = bf512(u, _mm512_permutex_pd(u, 0x4E), 0xCC);            /* h = 2 */
    return bf512(u, _mm512_shuffle_f64x2(u, u, 0x4E), 0xF0);    /* h = 4 */
}

/* One group of N (compile-time) elements, in registers: 8 doubles per vector; stages 1, 2, 4
 * inside each vector, then stages 8..N/2 between vectors (the same a + b, a - b). s: the N
 * signs as doubles; k: 1/sqrt(N) when mul, else sqrt(N). Reads all of x before writing y. */
RHT_AVX512 RHT_INLINE void grp512(const float *x, float *y, const __m512d *s, int N, int mul,
                                  __m512d k)
{
    __m512d v[FP4_RHT_MAX / 8];
#pragma GCC unroll 32
    for (int c = 0; c < N / 8; c++) v[c] = load_bf512(x + 8 * c, s[c]);
    RHT_STAGES_BETWEEN(v, N / 8, __m512d, add512, _mm512_sub_pd);
#pragma GCC unroll 32
    for (int c = 0; c < N / 8; c++) {
        const __m512d r = mul ? _mm512_mul_pd(v[c], k) : _mm512_div_pd(v[c], k);
        _mm256_storeu_ps(y + 8 * c, _mm512_cvtpd_ps(r));
    }
}

/* n = 32, 128: the divisions (vdivpd, ~16 cycles per 8 doubles, the bottleneck) of a group
 * are issued between the next group's loads and in-vector stages instead of in one burst at
 * the end, so the divider and the other units overlap. pend: the previous group's butterfly
 * outputs (not yet divided), written to yprev (disjoint from the group read now, also in
 * place); the same operations on the same values as grp512. */
RHT_AVX512 RHT_INLINE void grp512_div(const float *x, const __m512d *s, int N, __m512d k,
                                      __m512d *pend, float *yprev)
{
    __m512d v[FP4_RHT_MAX / 8];
#pragma GCC unroll 32
    for (int c = 0; c < N / 8; c++) {
        v[c] = load_bf512(x + 8 * c, s[c]);
        if (yprev) _mm256_storeu_ps(yprev + 8 * c, _mm512_cvtpd_ps(_mm512_div_pd(pend[c], k)));
    }
    RHT_STAGES_BETWEEN(v, N / 8, __m512d, add512, _mm512_sub_pd);
#pragma GCC unroll 32
    for (int c = 0; c < N / 8; c++) pend[c] = v[c];
}

#define RHT_LOOP512(N, MUL)                                                                     \
    for (int64_t g = 0; g + (N) <= len; g += (N)) grp512(x + g, y + g, s, (N), (MUL), k)
#define RHT_LOOP512_DIV(N)                                                                      \
    do {                                                                                        \
        __m512d pend[(N) / 8];                                                                  \
        int64_t g = 0;                                                                          \
        for (; g + (N) <= len; g += (N))                                                        \
            grp512_div(x + g, s, (N), k, pend, g ? y + g - (N) : NULL);                         \
        if (g)                                                                                  \
            for (int c = 0; c < (N) / 8; c++)                                                   \
                _mm256_storeu_ps(y + g - (N) + 8 * c,                                           \
                                 _mm512_cvtpd_ps(_mm512_div_pd(pend[c], k)));                   \
    } while (0)

RHT_AVX512 static void fwd_avx512(const fp4_rht_signs *sg, const float *x, float *y, int64_t len)
{
    const int n = sg->n;
    __m512d s[FP4_RHT_MAX / 8];
    for (int c = 0; c < n / 8; c++) s[c] = _mm512_cvtps_pd(_mm256_loadu_ps(sg->s + 8 * c));
    const int mul = rht_scale_is_pow2(n);
    const __m512d k = _mm512_set1_pd(mul ? 1.0 / sqrt((double)n) : sqrt((double)n));
    switch (n) {
    case 16: RHT_LOOP512(16, 1); break;
    case 32: RHT_LOOP512_DIV(32); break;
    case 64: RHT_LOOP512(64, 1); break;
    case 128: RHT_LOOP512_DIV(128); break;
    case 256: RHT_LOOP512(256, 1); break;
    default: fwd_scalar(sg, x, y, len); break;
    }
}

/* AVX2: 4 doubles per vector; stages 1, 2 inside a vector (blend instead of a mask, the same
 * operands as bf512), stages 4..N/2 between vectors. */
#define BF256(u, t, up) _mm256_blend_pd(add256(u, t), _mm256_sub_pd(t, u), up)

RHT_AVX2 RHT_INLINE void grp256(const float *x, float *y, const __m256d *s, int N, int mul,
                                __m256d k)
{
    __m256d v[FP4_RHT_MAX / 4];
#pragma GCC unroll 64
    for (int c = 0; c < N / 4; c++) {
        __m256d u = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + 4 * c)), s[c]);
        u = BF256(u, _mm256_permute_pd(u, 0x5), 0xA);                /* h = 1 */
        v[c] = BF256(u, _mm256_permute2f128_pd(u, u, 0x01), 0xC);   /* h = 2 */
    }
    RHT_STAGES_BETWEEN(v, N / 4, __m256d, add256, _mm256_sub_pd);
#pragma GCC unroll 64
    for (int c = 0; c < N / 4; c++) {
        const __m256d r = mul ? _mm256_mul_pd(v[c], k) : _mm256_div_pd(v[c], k);
        _mm_storeu_ps(y + 4 * c, _mm256_cvtpd_ps(r));
    }
}

#define RHT_LOOP256(N, MUL)                                                                     \
    for (int64_t g = 0; g + (N) <= len; g += (N)) grp256(x + g, y + g, s, (N), (MUL), k)

RHT_AVX2 static void fwd_avx2(const fp4_rht_signs *sg, const float *x, float *y, int64_t len)
{
    const int n = sg->n;
    __m256d s[FP4_RHT_MAX / 4];
    for (int c = 0; c < n / 4; c++) s[c] = _mm256_cvtps_pd(_mm_loadu_ps(sg->s + 4 * c));
    const int mul = rht_scale_is_pow2(n);
    const __m256d k = _mm256_set1_pd(mul ? 1.0 / sqrt((double)n) : sqrt((double)n));
    switch (n) {
    case 16: RHT_LOOP256(16, 1); break;
    case 32: RHT_LOOP256(32, 0); break;
    case 64: RHT_LOOP256(64, 1); break;
    case 128: RHT_LOOP256(128, 0); break;
    case 256: RHT_LOOP256(256, 1); break;
    default: fwd_scalar(sg, x, y, len); break;
    }
}

#endif

bool fp4_rht_forward_impl(fp4_rht_impl impl, const fp4_rht_signs *sg, const float *x, float *y,
                          int64_t len)
{
    if (impl == FP4_RHT_IMPL_AUTO) {
        const fp4_isa isa = fp4_isa_dispatch(FP4_ISA_SITE_RHT);
        impl = isa == FP4_ISA_AVX512 ? FP4_RHT_IMPL_AVX512
               : isa == FP4_ISA_AVX2 ? FP4_RHT_IMPL_AVX2
                                     : FP4_RHT_IMPL_SCALAR;
    }
    switch (impl) {
    case FP4_RHT_IMPL_SCALAR: fwd_scalar(sg, x, y, len); return true;
#ifdef RHT_HAVE_DISPATCH
    case FP4_RHT_IMPL_AVX2:
        if (!fp4_isa_cpu_runs(FP4_ISA_AVX2)) return false;
        fwd_avx2(sg, x, y, len);
        return true;
    case FP4_RHT_IMPL_AVX512:
        if (!fp4_isa_cpu_runs(FP4_ISA_AVX512)) return false;
        fwd_avx512(sg, x, y, len);
        return true;
#endif
    default: return false;
    }
}

void fp4_rht_forward(const fp4_rht_signs *sg, const float *x, float *y, int64_t len)
{
    fp4_rht_forward_impl(FP4_RHT_IMPL_AUTO, sg, x, y, len);
}

void fp4_rht_inverse(const fp4_rht_signs *sg, const float *y, float *x, int64_t len)
{
    const int n = sg->n;
    const double rs = sqrt((double)n);
    double d[FP4_RHT_MAX];
    for (int64_t g = 0; g + n <= len; g += n) {
        for (int i = 0; i < n; i++) d[i] = (double)y[g + i];
        fp4c_fwht_f64(d, n);
        for (int i = 0; i < n; i++) x[g + i] = (float)(d[i] / rs * (double)sg->s[i]);
    }
}
