/* io/widen.c — stored words -> fp32 (f16, bf16, f32, f64, integers; either byte order) with the
 * bits HDF5's conversion gives. Built with -O3 (Makefile) so the plain loops vectorise; f16
 * takes F16C (8 halves per instruction) when the CPU has it. */
#include "io/widen.h"

#include "base/isa.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define WIDEN_X86 1
#endif

/* Elements per block of the in-place and unaligned paths (a block's words are copied to the
 * stack first: 8 KiB for 8-byte words). */
#define WIDEN_BLOCK 1024

bool fp4_widen_supported(fp4_stored s) { return s > FP4_STORED_OTHER && s < FP4_STORED_COUNT; }

static inline float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* HDF5's soft float conversion writes a NaN as its sign and every other bit set. */
#define WIDEN_NAN_BITS 0x7fffffffu

unsigned fp4_f16_bits_to_f32_bits(unsigned short h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, mag = h & 0x7fffu;
    /* The exponent and mantissa moved into fp32's places read as 2^-112 times the value, for
     * subnormal halves too (they become fp32 subnormals): one exact multiplication by 2^112. */
    uint32_t u = f32_bits(bits_f32(mag << 13) * 0x1p112f);
    if (mag >= 0x7c00u) u = mag > 0x7c00u ? WIDEN_NAN_BITS : 0x7f800000u;
    return u | sign;
}

static void widen_f16(const uint16_t *restrict s, float *restrict d, size_t n, bool swap)
{
    for (size_t i = 0; i < n; i++) {
        uint16_t h = swap ? __builtin_bswap16(s[i]) : s[i];
        d[i] = bits_f32(fp4_f16_bits_to_f32_bits(h));
    }
}

#ifdef WIDEN_X86
__attribute__((target("avx,f16c"))) static void widen_f16_f16c(const uint16_t *restrict s,
                                                                float *restrict d, size_t n)
{
    const __m256 ones = _mm256_castsi256_ps(_mm256_set1_epi32((int)WIDEN_NAN_BITS));
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 f = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(s + i)));
        __m256 nan = _mm256_cmp_ps(f, f, _CMP_UNORD_Q);
        _mm256_storeu_ps(d + i, _mm256_blendv_ps(f, _mm256_or_ps(f, ones), nan));
    }
    for (; i < n; i++) d[i] = bits_f32(fp4_f16_bits_to_f32_bits(s[i]));
}
#endif

bool fp4_widen_f16c(void)
{
#ifdef WIDEN_X86
    /* CPUID leaf 1: F16C (ECX bit 29), AVX (28), OSXSAVE (27); and the OS saves the YMM state
     * (XCR0 bits 1 and 2). By hand: not every compiler's __builtin_cpu_supports knows "f16c". */
    static int have = -1;
    if (have < 0) {
        unsigned a = 0, b = 0, c = 0, d = 0;
        const unsigned need = 1u << 27 | 1u << 28 | 1u << 29;
        have = 0;
        if (__get_cpuid(1, &a, &b, &c, &d) && (c & need) == need) {
            unsigned lo, hi;
            __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            have = (lo & 6u) == 6u;
        }
    }
    return have;
#else
    return false;
#endif
}

static void widen_bf16(const uint16_t *restrict s, float *restrict d, size_t n, bool swap)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t h = swap ? __builtin_bswap16(s[i]) : s[i];
        uint32_t u = h << 16;
        if ((h & 0x7fffu) > 0x7f80u) u |= WIDEN_NAN_BITS;
        d[i] = bits_f32(u);
    }
}

static void widen_f32(const uint32_t *restrict s, float *restrict d, size_t n, bool swap)
{
    for (size_t i = 0; i < n; i++) d[i] = bits_f32(swap ? __builtin_bswap32(s[i]) : s[i]);
}

static void widen_f64(const uint64_t *restrict s, float *restrict d, size_t n, bool swap)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t u = swap ? __builtin_bswap64(s[i]) : s[i];
        double x;
        memcpy(&x, &u, sizeof x);
        /* HDF5: beyond the largest float is infinity, even where rounding would give
         * FLT_MAX; NaN and the rest as the C conversion (round to nearest even) */
        d[i] = x > FLT_MAX ? INFINITY : x < -FLT_MAX ? -INFINITY : (float)x;
    }
}

#define WIDEN_INT(name, T, U, BSWAP)                                                          \
    static void name(const U *restrict s, float *restrict d, size_t n, bool swap)            \
    {                                                                                          \
        for (size_t i = 0; i < n; i++) {                                                       \
            U u = swap ? (U)BSWAP(s[i]) : s[i];                                                \
            d[i] = (float)(T)u;                                                                \
        }                                                                                      \
    }
#define WIDEN_NOSWAP(x) (x)
WIDEN_INT(widen_i8, int8_t, uint8_t, WIDEN_NOSWAP)
WIDEN_INT(widen_u8, uint8_t, uint8_t, WIDEN_NOSWAP)
WIDEN_INT(widen_i16, int16_t, uint16_t, __builtin_bswap16)
WIDEN_INT(widen_u16, uint16_t, uint16_t, __builtin_bswap16)
WIDEN_INT(widen_i32, int32_t, uint32_t, __builtin_bswap32)
WIDEN_INT(widen_u32, uint32_t, uint32_t, __builtin_bswap32)
WIDEN_INT(widen_i64, int64_t, uint64_t, __builtin_bswap64)
WIDEN_INT(widen_u64, uint64_t, uint64_t, __builtin_bswap64)

/* src aligned to the word size. */
static void widen_aligned(fp4_stored st, bool swap, const void *src, float *dst, size_t n)
{
    switch (st) {
    case FP4_STORED_F16: {
        /* F16C is the avx2 and avx512 variants' code (FP4DIAG_ISA, base/isa.h); generic, and
         * words in the other byte order, take the portable loop */
        const fp4_isa isa = fp4_isa_active();
#ifdef WIDEN_X86
        if (!swap && (isa == FP4_ISA_AVX2 || isa == FP4_ISA_AVX512) && fp4_widen_f16c()) {
            fp4_isa_note(FP4_ISA_SITE_WIDEN_F16, isa);
            widen_f16_f16c(src, dst, n);
            break;
        }
#endif
        (void)isa;
        fp4_isa_note(FP4_ISA_SITE_WIDEN_F16, FP4_ISA_GENERIC);
        widen_f16(src, dst, n, swap);
        break;
    }
    case FP4_STORED_BF16: widen_bf16(src, dst, n, swap); break;
    case FP4_STORED_F32: widen_f32(src, dst, n, swap); break;
    case FP4_STORED_F64: widen_f64(src, dst, n, swap); break;
    case FP4_STORED_I8: widen_i8(src, dst, n, swap); break;
    case FP4_STORED_U8: widen_u8(src, dst, n, swap); break;
    case FP4_STORED_I16: widen_i16(src, dst, n, swap); break;
    case FP4_STORED_U16: widen_u16(src, dst, n, swap); break;
    case FP4_STORED_I32: widen_i32(src, dst, n, swap); break;
    case FP4_STORED_U32: widen_u32(src, dst, n, swap); break;
    case FP4_STORED_I64: widen_i64(src, dst, n, swap); break;
    case FP4_STORED_U64: widen_u64(src, dst, n, swap); break;
    default: break;
    }
}

bool fp4_widen(fp4_stored s, bool swap, const void *src, float *dst, size_t n)
{
    if (!fp4_widen_supported(s)) return false;
    const size_t w = (size_t)fp4_stored_size(s);
    if ((uintptr_t)src % w == 0) {
        widen_aligned(s, swap, src, dst, n);
        return true;
    }
    _Alignas(64) unsigned char tmp[WIDEN_BLOCK * 8];
    for (size_t i = 0; i < n; i += WIDEN_BLOCK) {
        const size_t k = n - i < WIDEN_BLOCK ? n - i : WIDEN_BLOCK;
        memcpy(tmp, (const unsigned char *)src + i * w, k * w);
        widen_aligned(s, swap, tmp, dst + i, k);
    }
    return true;
}

bool fp4_widen_inplace(fp4_stored s, bool swap, float *buf, size_t n)
{
    if (!fp4_widen_supported(s)) return false;
    const size_t w = (size_t)fp4_stored_size(s);
    if (w > sizeof(float)) return false;
    if (s == FP4_STORED_F32 && !swap) return true; /* the words are the floats */
    const unsigned char *raw = (const unsigned char *)buf + n * (sizeof(float) - w);
    /* Block i's words are copied out before its floats are written; its floats end at byte
     * 4 * (i + k) <= the start of the next block's words, n * (4 - w) + w * (i + k). */
    _Alignas(64) unsigned char tmp[WIDEN_BLOCK * 4];
    for (size_t i = 0; i < n; i += WIDEN_BLOCK) {
        const size_t k = n - i < WIDEN_BLOCK ? n - i : WIDEN_BLOCK;
        memcpy(tmp, raw + i * w, k * w);
        widen_aligned(s, swap, tmp, buf + i, k);
    }
    return true;
}

void fp4_swap_words(void *p, size_t nwords, size_t es)
{
    unsigned char *b = p;
    switch (es) {
    case 2:
        for (size_t i = 0; i < nwords; i++) {
            uint16_t v;
            memcpy(&v, b + 2 * i, 2);
            v = __builtin_bswap16(v);
            memcpy(b + 2 * i, &v, 2);
        }
        return;
    case 4:
        for (size_t i = 0; i < nwords; i++) {
            uint32_t v;
            memcpy(&v, b + 4 * i, 4);
            v = __builtin_bswap32(v);
            memcpy(b + 4 * i, &v, 4);
        }
        return;
    case 8:
        for (size_t i = 0; i < nwords; i++) {
            uint64_t v;
            memcpy(&v, b + 8 * i, 8);
            v = __builtin_bswap64(v);
            memcpy(b + 8 * i, &v, 8);
        }
        return;
    default:
        for (size_t i = 0; i < nwords; i++, b += es)
            for (size_t lo = 0, hi = es ? es - 1 : 0; lo < hi; lo++, hi--) {
                const unsigned char t = b[lo];
                b[lo] = b[hi];
                b[hi] = t;
            }
    }
}
