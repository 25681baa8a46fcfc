/* test_rht.c — the Random Hadamard Transform of SPEC §4: the known-answer vectors, the inverse
 * round trip, orthogonality at every size, sign vectors (te tiled, seed:N, none), and that
 * quantization metrics with RHT cover all n entries of each rotated group, and that the SIMD
 * variants of fp4_rht_forward give the plain C reference's bits. */
#include "testutil.h"

#include <math.h>

#include "base/common.h"
#include "engine/engine.h"
#include "num/metrics.h"
#include "num/quant.h"
#include "num/rht.h"

static void test_known_vectors(void **state)
{
    (void)state;
    fp4_rht_signs sg;
    assert_int_equal(fp4_rht_signs_make("te", 16, &sg), FP4_OK);
    const float s_want[16] = {1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1};
    for (int i = 0; i < 16; i++) assert_true(sg.s[i] == s_want[i]);
    assert_string_equal(sg.desc, "te");
    float x[16], y[16];
    for (int i = 0; i < 16; i++) x[i] = 1.0f;
    fp4_rht_forward(&sg, x, y, 16);
    const float y1[16] = {-1, 0, 1, 0, 1, 0, -1, 0, 1, 2, 1, 0, 1, 0, 1, -2};
    for (int i = 0; i < 16; i++) assert_true(y[i] == y1[i]);
    memset(x, 0, sizeof x);
    x[0] = 1.0f;
    fp4_rht_forward(&sg, x, y, 16);
    for (int i = 0; i < 16; i++) assert_true(y[i] == 0.25f);
    for (int i = 0; i < 16; i++) x[i] = (float)(i + 1);
    fp4_rht_forward(&sg, x, y, 16);
    const float y3[16] = {-15.5f, -7.5f, 7.5f, -0.5f, 7.5f, -0.5f, -15.5f, 8.5f,
                          8.5f,   16.5f, 1.5f, 1.5f,  1.5f, -2.5f, 10.5f, -17.5f};
    for (int i = 0; i < 16; i++) assert_true(y[i] == y3[i]);
    float z[16];
    fp4_rht_inverse(&sg, y, z, 16);
    for (int i = 0; i < 16; i++) assert_true(z[i] == x[i]);
    /* in place (x and y alias) */
    fp4_rht_forward(&sg, x, x, 16);
    for (int i = 0; i < 16; i++) assert_true(x[i] == y3[i]);
}

static void test_signs(void **state)
{
    (void)state;
    fp4_rht_signs a, b, c;
    assert_int_equal(fp4_rht_signs_make("te", 256, &a), FP4_OK);
    for (int i = 0; i < 256; i++) assert_true(a.s[i] == a.s[i % 16]);
    assert_int_equal(fp4_rht_signs_make("none", 64, &a), FP4_OK);
    for (int i = 0; i < 64; i++) assert_true(a.s[i] == 1.0f);
    assert_int_equal(fp4_rht_signs_make("seed:7", 128, &a), FP4_OK);
    assert_int_equal(fp4_rht_signs_make("seed:7", 128, &b), FP4_OK);
    assert_int_equal(fp4_rht_signs_make("seed:8", 128, &c), FP4_OK);
    assert_string_equal(a.desc, "seed:7");
    assert_memory_equal(a.s, b.s, sizeof a.s);
    int diff = 0, neg = 0;
    for (int i = 0; i < 128; i++) {
        diff += a.s[i] != c.s[i];
        neg += a.s[i] < 0;
        assert_true(a.s[i] == ((fp4c_philox_word0(7, (uint64_t)i, 0xFFFFFFFFu) & 1u) ? -1.0f
                                                                                   : 1.0f));
    }
    assert_true(diff > 20 && neg > 30 && neg < 98);
    const char *bad[] = {"tee", "seed:", "seed:x", "seed:-1", "seed:1x", ""};
    for (size_t i = 0; i < 5; i++) assert_int_equal(fp4_rht_signs_make(bad[i], 16, &a), FP4_ERR_USAGE);
    assert_int_equal(fp4_rht_signs_make("", 16, &a), FP4_OK); /* empty = default te */
    assert_int_equal(fp4_rht_signs_make("te", 8, &a), FP4_ERR_USAGE);
    assert_int_equal(fp4_rht_signs_make("te", 48, &a), FP4_ERR_USAGE);
    assert_int_equal(fp4_rht_signs_make("te", 512, &a), FP4_ERR_USAGE);
}

/* H_n / sqrt(n) with signs is orthogonal: the images of the basis vectors are orthonormal
 * (within fp32 rounding), energy is preserved, and inverse(forward(x)) == x. */
static void test_orthogonality_every_size(void **state)
{
    (void)state;
    static float basis[256][256];
    for (int n = 16; n <= 256; n *= 2) {
        const char *specs[] = {"te", "seed:3", "none"};
        for (int k = 0; k < 3; k++) {
            fp4_rht_signs sg;
            assert_int_equal(fp4_rht_signs_make(specs[k], n, &sg), FP4_OK);
            for (int i = 0; i < n; i++) {
                float e[256] = {0};
                e[i] = 1.0f;
                fp4_rht_forward(&sg, e, basis[i], n);
            }
            for (int i = 0; i < n; i++)
                for (int j = i; j < n; j += (n / 16)) {
                    double d = 0;
                    for (int t = 0; t < n; t++) d += (double)basis[i][t] * basis[j][t];
                    assert_true(fabs(d - (i == j ? 1.0 : 0.0)) < 1e-6);
                }
            float x[512], y[512], z[512];
            double ex = 0, ey = 0;
            for (int i = 0; i < 2 * n; i++) x[i] = sinf((float)i * 1.7f + (float)n) * 3.0f;
            fp4_rht_forward(&sg, x, y, 2 * n);
            fp4_rht_inverse(&sg, y, z, 2 * n);
            for (int i = 0; i < 2 * n; i++) {
                ex += (double)x[i] * x[i];
                ey += (double)y[i] * y[i];
                assert_true(fabsf(z[i] - x[i]) <= 1e-6f * 3.0f);
            }
            assert_true(fabs(ex - ey) / ex < 1e-6);
        }
    }
}

/* With RHT, metrics count all n entries of every group that holds a real element. */
static void test_rht_metrics_domain(void **state)
{
    (void)state;
    fp4_rht_signs sg;
    assert_int_equal(fp4_rht_signs_make("te", 32, &sg), FP4_OK);
    fp4_qconfig c;
    fp4_qconfig_default(&c);
    c.block = 16;
    c.rht = &sg;
    float x[2 * 20];
    for (int i = 0; i < 40; i++) x[i] = (float)(i % 7) - 3.0f;
    fp4_metrics m;
    fp4_metrics_init(&m);
    float deq[2 * 32];
    fp4_qout out = {deq, NULL, NULL};
    assert_int_equal(fp4_quantize_rows(&c, 0, x, 0, 2, 20, &out, &m), FP4_OK);
    uint64_t h = 0;
    for (int i = 0; i < 16; i++) h += m.hist[i];
    assert_int_equal(h, 64);         /* 2 rows x one group of 32 */
    assert_int_equal(m.elements, 40); /* real inputs */
    assert_int_equal(m.padded, 24);
    /* energy of the rotated padded group equals the input energy */
    double e = 0;
    for (int i = 0; i < 40; i++) e += (double)x[i] * x[i];
    assert_true(fabs(m.sum_x2 - e) / e < 1e-6);
    /* the dequantized output lives in the rotated domain: inverse brings it back near x */
    float back[64];
    fp4_rht_inverse(&sg, deq, back, 64);
    float xr[40];
    for (int r = 0; r < 2; r++) memcpy(xr + r * 20, back + r * 32, 20 * sizeof(float));
    fp4_metrics_finish(&m);
    assert_true(m.sqnr_db > 10.0);
    /* orthogonality: the error energy is the same in both domains (pads hold some of it) */
    fp4_sqnr_status st;
    assert_true(fp4_sqnr_db(x, xr, 40, &st) >= m.sqnr_db - 1e-3);
    assert_int_equal(st, FP4_SQNR_OK);
}

/* Random floats that exercise every path of the butterfly: ordinary values, ±0, subnormals,
 * huge values (group sums overflow fp32 on the way back), ±Inf, and NaNs of both signs with
 * assorted payloads (so that a swapped operand order would show in the output's NaN bits). */
static uint64_t rht_rng = 0x2545F4914F6CDD1Dull;
static uint32_t rht_next(void)
{
    rht_rng ^= rht_rng << 13;
    rht_rng ^= rht_rng >> 7;
    rht_rng ^= rht_rng << 17;
    return (uint32_t)(rht_rng >> 32);
}
static float rht_special(void)
{
    const uint32_t r = rht_next();
    switch (r % 12) {
    case 0: return 0.0f;
    case 1: return -0.0f;
    case 2: return fp4c_u2f(r & 0x807FFFFFu);                /* subnormal or ±0 */
    case 3: return fp4c_u2f((r & 0x80000000u) | 0x7F800000u); /* ±Inf */
    case 4: return fp4c_u2f((r & 0x803FFFFFu) | 0x7FC00000u); /* quiet NaN, either sign */
    case 5: return fp4c_u2f((r & 0x801FFFFFu) | 0x7F800001u); /* signalling NaN */
    case 6: return fp4c_u2f((r & 0x80000000u) | 0x7F7FFFFFu); /* ±FLT_MAX */
    case 7: return fp4c_u2f((r & 0x807FFFFFu) | 0x7E000000u); /* huge */
    default: return fp4c_u2f(r);                              /* any bit pattern */
    }
}
static void rht_fill(float *x, int n, int ngroups)
{
    for (int g = 0; g < ngroups; g++) {
        const uint32_t mode = rht_next() % 4; /* 0,1: finite; 2: a few specials; 3: many */
        for (int i = 0; i < n; i++) {
            float v = (float)((int32_t)rht_next()) * 0x1p-28f;
            if (mode == 1) v *= fp4c_u2f((rht_next() % 200 + 20) << 23); /* wide exponents */
            if ((mode == 2 && rht_next() % 64 == 0) || (mode == 3 && rht_next() % 3 == 0))
                v = rht_special();
            x[(int64_t)g * n + i] = v;
        }
    }
}

/* Every SIMD variant this CPU runs, and the dispatch, give exactly the plain C reference's
 * bits (memcmp), out of place and in place, for every size, sign vector and several lengths
 * (a trailing partial group stays unwritten). */
static void test_simd_bit_identical(void **state)
{
    (void)state;
    enum { G = 9 };
    static float x[G * 256 + 256], ref[G * 256 + 256], got[G * 256 + 256];
    const fp4_rht_impl impls[] = {FP4_RHT_IMPL_AUTO, FP4_RHT_IMPL_AVX2, FP4_RHT_IMPL_AVX512};
    int ran = 0;
    for (int n = 16; n <= 256; n *= 2) {
        const char *specs[] = {"te", "seed:5", "none"};
        for (int k = 0; k < 3; k++) {
            fp4_rht_signs sg;
            assert_int_equal(fp4_rht_signs_make(specs[k], n, &sg), FP4_OK);
            for (int rep = 0; rep < 40; rep++) {
                const int ng = 1 + rep % G;
                const int64_t len = (int64_t)ng * n + (rep % 5 == 4 ? n / 2 : 0);
                rht_fill(x, n, ng + 1);
                memset(ref, 0x5A, sizeof ref);
                assert_true(fp4_rht_forward_impl(FP4_RHT_IMPL_SCALAR, &sg, x, ref, len));
                for (size_t v = 0; v < sizeof impls / sizeof *impls; v++) {
                    memset(got, 0x5A, sizeof got);
                    if (!fp4_rht_forward_impl(impls[v], &sg, x, got, len)) continue;
                    ran++;
                    if (memcmp(got, ref, sizeof got) != 0) {
                        for (int64_t i = 0; i < (int64_t)(sizeof got / sizeof *got); i++)
                            if (fp4c_f2u(got[i]) != fp4c_f2u(ref[i])) {
                                print_error("impl %d n %d signs %s len %lld: y[%lld] = %08x, "
                                            "reference %08x\n", (int)impls[v], n, specs[k],
                                            (long long)len, (long long)i, fp4c_f2u(got[i]),
                                            fp4c_f2u(ref[i]));
                                break;
                            }
                        fail();
                    }
                    /* in place */
                    memcpy(got, x, sizeof got);
                    const int64_t whole = len / n * n; /* past it: unwritten */
                    memcpy(got + whole, ref + whole, sizeof got - (size_t)whole * sizeof *got);
                    assert_true(fp4_rht_forward_impl(impls[v], &sg, got, got, len));
                    assert_memory_equal(got, ref, sizeof got);
                }
            }
        }
    }
    assert_true(ran >= 5 * 3 * 40); /* the dispatch at least */
    assert_false(fp4_rht_forward_impl((fp4_rht_impl)99, NULL, NULL, NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_vectors),
        cmocka_unit_test(test_signs),
        cmocka_unit_test(test_orthogonality_every_size),
        cmocka_unit_test(test_rht_metrics_domain),
        cmocka_unit_test(test_simd_bit_identical),
    };
    return cmocka_run_group_tests_name("rht", tests, NULL, NULL);
}
