/* test_widen.c — io/widen: our widening of stored words against HDF5's own conversion to
 * H5T_NATIVE_FLOAT (the reference: what every report was computed from before). All 65,536
 * patterns of bf16 and f16 in both byte orders; edge values and random patterns of f32, f64
 * and every integer class in both orders (f64 big-endian: see check_random); the in-place and
 * unaligned paths. */
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>

#include <hdf5.h>

#include "io/widen.h"

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* a custom float type of HDF5 (h5py's recipe), in byte order `be` */
static hid_t mk_float(size_t size, size_t spos, size_t epos, size_t esize, size_t msize,
                      size_t bias, bool be)
{
    hid_t t = H5Tcopy(H5T_IEEE_F32LE);
    assert_true(H5Tset_fields(t, spos, epos, esize, 0, msize) >= 0);
    assert_true(H5Tset_size(t, size) >= 0);
    assert_true(H5Tset_ebias(t, bias) >= 0);
    assert_true(H5Tset_order(t, be ? H5T_ORDER_BE : H5T_ORDER_LE) >= 0);
    return t;
}

static hid_t file_type(fp4_stored s, bool be)
{
    switch (s) {
    case FP4_STORED_F16: return mk_float(2, 15, 10, 5, 10, 15, be);
    case FP4_STORED_BF16: return mk_float(2, 15, 7, 8, 7, 127, be);
    case FP4_STORED_F32: return H5Tcopy(be ? H5T_IEEE_F32BE : H5T_IEEE_F32LE);
    case FP4_STORED_F64: return H5Tcopy(be ? H5T_IEEE_F64BE : H5T_IEEE_F64LE);
    case FP4_STORED_I8: return H5Tcopy(H5T_STD_I8LE);
    case FP4_STORED_U8: return H5Tcopy(H5T_STD_U8LE);
    case FP4_STORED_I16: return H5Tcopy(be ? H5T_STD_I16BE : H5T_STD_I16LE);
    case FP4_STORED_U16: return H5Tcopy(be ? H5T_STD_U16BE : H5T_STD_U16LE);
    case FP4_STORED_I32: return H5Tcopy(be ? H5T_STD_I32BE : H5T_STD_I32LE);
    case FP4_STORED_U32: return H5Tcopy(be ? H5T_STD_U32BE : H5T_STD_U32LE);
    case FP4_STORED_I64: return H5Tcopy(be ? H5T_STD_I64BE : H5T_STD_I64LE);
    case FP4_STORED_U64: return H5Tcopy(be ? H5T_STD_U64BE : H5T_STD_U64LE);
    default: return -1;
    }
}

/* n words of type s (bytes in file order `be`) widened by HDF5 (file type -> native float),
 * by us straight from file order, by us after HDF5's byte-order conversion to host order (the
 * raw read), and in place: all four equal bit for bit, a NaN up to its payload (same sign). */
static void check_words(fp4_stored s, bool be, const unsigned char *words, size_t n)
{
    const size_t w = (size_t)fp4_stored_size(s);
    const size_t cap = n * (w > 4 ? w : 4);
    unsigned char *ref = malloc(cap), *host = malloc(cap);
    float *ours = malloc(n * sizeof *ours), *ours2 = malloc(n * sizeof *ours2);
    float *inpl = malloc(n * sizeof *inpl + 1);
    assert_non_null(ref);
    assert_non_null(host);
    assert_non_null(ours);
    assert_non_null(ours2);
    assert_non_null(inpl);
    hid_t ft = file_type(s, be);
    assert_true(ft >= 0);
    memcpy(ref, words, n * w);
    assert_true(H5Tconvert(ft, H5T_NATIVE_FLOAT, n, ref, NULL, H5P_DEFAULT) >= 0);
    const bool swap = be && w > 1; /* this test runs on little-endian hosts */
    assert_true(fp4_widen(s, swap, words, ours, n));
    hid_t mt = H5Tcopy(ft);
    if (w > 1) assert_true(H5Tset_order(mt, H5T_ORDER_LE) >= 0);
    memcpy(host, words, n * w);
    assert_true(H5Tconvert(ft, mt, n, host, NULL, H5P_DEFAULT) >= 0);
    assert_true(fp4_widen(s, false, host, ours2, n));
    if (w <= 4) {
        memcpy((unsigned char *)inpl + n * (4 - w), host, n * w);
        assert_true(fp4_widen_inplace(s, false, inpl, n));
    } else {
        assert_false(fp4_widen_inplace(s, false, inpl, n));
        memcpy(inpl, ours2, n * sizeof *inpl);
    }
    const float *r = (const float *)(const void *)ref;
    for (size_t i = 0; i < n; i++) {
        const float got[3] = {ours[i], ours2[i], inpl[i]};
        for (int k = 0; k < 3; k++) {
            if (isnan(r[i])) {
                if (!isnan(got[k]) || signbit(got[k]) != signbit(r[i]))
                    fail_msg("type %d be %d word %zu path %d: %08x, HDF5 %08x", (int)s, be, i, k,
                             bits(got[k]), bits(r[i]));
            } else if (bits(got[k]) != bits(r[i])) {
                fail_msg("type %d be %d word %zu path %d: %08x (%a), HDF5 %08x (%a)", (int)s, be,
                         i, k, bits(got[k]), (double)got[k], bits(r[i]), (double)r[i]);
            }
        }
    }
    H5Tclose(mt);
    H5Tclose(ft);
    free(ref);
    free(host);
    free(ours);
    free(ours2);
    free(inpl);
}

/* Every 16-bit pattern, in file byte order be. */
static void check_all16(fp4_stored s, bool be)
{
    unsigned char *words = malloc(65536 * 2);
    assert_non_null(words);
    for (unsigned v = 0; v < 65536; v++) {
        words[2 * v + (be ? 1 : 0)] = (unsigned char)(v & 0xff);
        words[2 * v + (be ? 0 : 1)] = (unsigned char)(v >> 8);
    }
    check_words(s, be, words, 65536);
    /* the same words at an odd address (the unaligned path) */
    unsigned char *odd = malloc(65536 * 2 + 1);
    assert_non_null(odd);
    memcpy(odd + 1, words, 65536 * 2);
    float *a = malloc(65536 * sizeof *a), *b = malloc(65536 * sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    assert_true(fp4_widen(s, be, words, a, 65536));
    assert_true(fp4_widen(s, be, odd + 1, b, 65536));
    assert_memory_equal(a, b, 65536 * sizeof *a);
    free(a);
    free(b);
    free(odd);
    free(words);
}

static void test_bf16_all_patterns(void **state)
{
    (void)state;
    check_all16(FP4_STORED_BF16, false);
    check_all16(FP4_STORED_BF16, true);
}

static void test_f16_all_patterns(void **state)
{
    (void)state;
    check_all16(FP4_STORED_F16, false);
    check_all16(FP4_STORED_F16, true);
    /* the portable path gives the F16C path's bits */
    for (unsigned v = 0; v < 65536; v++) {
        uint16_t h = (uint16_t)v;
        float f;
        assert_true(fp4_widen(FP4_STORED_F16, false, &h, &f, 1)); /* one word: the tail loop */
        assert_int_equal(bits(f), fp4_f16_bits_to_f32_bits(h));
    }
}

/* xorshift64: reproducible random words */
static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Random words plus the edges of each class, in both byte orders. */
static void check_random(fp4_stored s)
{
    const size_t w = (size_t)fp4_stored_size(s), n = 200000;
    unsigned char *le = malloc(n * w), *be = malloc(n * w);
    assert_non_null(le);
    assert_non_null(be);
    uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)s;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = rng_next(&x);
        if (s == FP4_STORED_F64 && i % 4 == 1) {
            /* near fp32's range ends and rounding ties */
            static const double edge[] = {FLT_MAX, 0x1.fffffefffffffp127, 0x1.ffffffp127,
                                          0x1.fffffe8p127, 0x1p-149, 0x1p-150, 0x1.8p-150,
                                          0x1.000001p0, 0x1.0000011p0, 0x1.000003p0,
                                          -0x1.fffffefffffffp127, 1e300, -1e-300, 0.0};
            double d = edge[(v >> 8) % (sizeof edge / sizeof edge[0])];
            if (v & 1) d = -d;
            memcpy(&v, &d, sizeof v);
        } else if (s == FP4_STORED_F64 && i % 4 == 2) {
            /* values near fp32 magnitudes: exponent within fp32's range, random mantissa */
            v = (v & 0x800fffffffffffffull) | ((uint64_t)(1023 - 160 + (v >> 52) % 300) << 52);
        } else if (w >= 4 && i % 4 == 3) {
            /* integers around 2^24 .. 2^63: the rounding of the integer conversions */
            v >>= (v & 63);
        }
        for (size_t b = 0; b < w; b++) {
            le[i * w + b] = (unsigned char)(v >> (8 * b));
            be[i * w + (w - 1 - b)] = (unsigned char)(v >> (8 * b));
        }
    }
    check_words(s, false, le, n);
    if (s == FP4_STORED_F64) {
        /* HDF5's soft conversion of big-endian f64 rounds subnormal results differently from
         * its native (little-endian) path: h5io keeps HDF5's conversion for that layout
         * (FP4_STORED_OTHER). Ours gives the little-endian answer in both orders. */
        float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        assert_non_null(a);
        assert_non_null(b);
        assert_true(fp4_widen(s, false, le, a, n));
        assert_true(fp4_widen(s, true, be, b, n));
        assert_memory_equal(a, b, n * sizeof *a);
        free(a);
        free(b);
    } else if (w > 1) {
        check_words(s, true, be, n);
    }
    free(le);
    free(be);
}

static void test_other_types(void **state)
{
    (void)state;
    const fp4_stored all[] = {FP4_STORED_F32, FP4_STORED_F64, FP4_STORED_I8,  FP4_STORED_U8,
                              FP4_STORED_I16, FP4_STORED_U16, FP4_STORED_I32, FP4_STORED_U32,
                              FP4_STORED_I64, FP4_STORED_U64};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) check_random(all[i]);
}

static void test_other_is_refused(void **state)
{
    (void)state;
    float f[2] = {1, 2};
    uint16_t h = 0;
    assert_false(fp4_widen_supported(FP4_STORED_OTHER));
    assert_false(fp4_widen(FP4_STORED_OTHER, false, &h, f, 1));
    assert_false(fp4_widen_inplace(FP4_STORED_OTHER, false, f, 1));
    assert_true(f[0] == 1 && f[1] == 2);
}

int main(void)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_all_patterns),
        cmocka_unit_test(test_f16_all_patterns),
        cmocka_unit_test(test_other_types),
        cmocka_unit_test(test_other_is_refused),
    };
    return cmocka_run_group_tests_name("widen", tests, NULL, NULL);
}
