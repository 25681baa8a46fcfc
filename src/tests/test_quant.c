/* test_quant.c — the scalar reference quantizer (SPEC §2–§3): E4M3/E8M0 codecs, the NVFP4
 * worked example and two-level scale, block underflow, MXFP4 floor vs rceil, zero and
 * non-finite blocks, Philox known answers, SR statistics, e1m2 == int4, weight_2d, and
 * independence from the slab split. */
#include "testutil.h"

#include <omp.h>

#include <math.h>

#include "base/common.h"
#include "engine/engine.h"
#include "num/metrics.h"
#include "num/quant.h"
#include "num/rht.h"

/* deterministic Gaussian (xorshift64* + Box–Muller), test-local */
static uint64_t rng_state = 88172645463325252ull;
static double urand(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return ((rng_state * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}
static float grand(void)
{
    double u = urand(), v = urand();
    if (u < 1e-300) u = 1e-300;
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

static fp4_qconfig mkcfg(fp4_format_id f, fp4_scale_mode s)
{
    fp4_qconfig c;
    fp4_qconfig_default(&c);
    c.format = (fp4_format){f, 0};
    c.scale = s;
    assert_int_equal(fp4_qconfig_check(&c), FP4_OK);
    return c;
}

static float amax_of(const fp4_qconfig *c, const float *x, int64_t rows, int64_t len)
{
    float a = 0.0f;
    fp4_amax_rows(c, x, rows, len, &a);
    return a;
}

static void test_e4m3_cases(void **state)
{
    (void)state;
    assert_true(fp4c_e4m3_decode(fp4c_e4m3_encode(13.44f)) == 13.0f);
    assert_true(fp4c_e4m3_decode(fp4c_e4m3_encode(17.0f)) == 16.0f);
    assert_true(fp4c_e4m3_decode(fp4c_e4m3_encode(19.0f)) == 20.0f);
    assert_true(fp4c_e4m3_decode(fp4c_e4m3_encode(447.9f)) == 448.0f);
    assert_true(fp4c_e4m3_decode(fp4c_e4m3_encode(460.0f)) == 448.0f);
    assert_true(fp4c_e4m3_decode(fp4c_e4m3_encode(0.0029f)) == ldexpf(1.0f, -9));
    assert_int_equal(fp4c_e4m3_encode(INFINITY), 0x7E);
    assert_true(fp4c_e4m3_decode(fp4c_e4m3_encode(INFINITY)) == 448.0f);
    assert_int_equal(fp4c_e4m3_encode(1e30f), 0x7E);
    assert_int_equal(fp4c_e4m3_encode(NAN), 0);
    assert_int_equal(fp4c_e4m3_encode(0.0f), 0);
    assert_int_equal(fp4c_e4m3_encode(ldexpf(1.0f, -10)), 0);      /* tie to even: 0 */
    assert_int_equal(fp4c_e4m3_encode(ldexpf(1.5f, -9)), 2);       /* tie to even: 2 */
    assert_int_equal(fp4c_e4m3_encode(ldexpf(1.0f, -6)), 8);
    assert_true(fp4c_e4m3_decode(0x7E) == 448.0f);
    assert_true(fp4c_e4m3_decode(0x08) == ldexpf(1.0f, -6));
    assert_true(fp4c_e4m3_decode(0x01) == ldexpf(1.0f, -9));
    /* every non-NaN code round-trips; encode never yields the NaN code */
    for (int c = 0; c < 0x7F; c++) {
        float v = fp4c_e4m3_decode((uint8_t)c);
        assert_int_equal(fp4c_e4m3_encode(v), c);
        assert_int_not_equal(fp4c_e4m3_encode(nextafterf(v, 1e9f)), 0x7F);
    }
    /* exhaustive RTNE check against a brute-force nearest-even search on a sweep */
    for (float v = 0.0f; v < 500.0f; v = v * 1.0003f + 1e-6f) {
        int best = 0;
        double bd = 1e30;
        for (int c = 0; c < 0x7F; c++) {
            double d = fabs((double)fp4c_e4m3_decode((uint8_t)c) - v);
            if (d < bd || (d == bd && (c & 1) == 0)) {
                bd = d;
                best = c;
            }
        }
        if (v > 448.0f) best = 0x7E;
        assert_int_equal(fp4c_e4m3_encode(v), best);
    }
}

static void test_e8m0(void **state)
{
    (void)state;
    assert_true(fp4c_e8m0_decode(0) == ldexpf(1.0f, -127));
    assert_true(fp4c_e8m0_decode(127) == 1.0f);
    assert_true(fp4c_e8m0_decode(134) == 128.0f);
    assert_true(fp4c_e8m0_decode(254) == ldexpf(1.0f, 127));
    assert_true(isnan(fp4c_e8m0_decode(255)));
    fp4c_grid g = fp4c_grid_make(FP4C_E2M1, 0);
    assert_int_equal(fp4c_e8m0_block(2.7f, &g, 0), 126);
    assert_int_equal(fp4c_e8m0_block(3.0001f, &g, 0), 126);
    assert_int_equal(fp4c_e8m0_block(3.0001f, &g, 1), 127);
    assert_int_equal(fp4c_e8m0_block(7.0f, &g, 0), 127);
    assert_int_equal(fp4c_e8m0_block(7.0f, &g, 1), 128);
    assert_int_equal(fp4c_e8m0_block(6.0f, &g, 1), 127);
    assert_int_equal(fp4c_e8m0_block(0.0f, &g, 0), 0);
    assert_int_equal(fp4c_e8m0_block(1e-45f, &g, 0), 0);       /* clamped to -127 */
    assert_int_equal(fp4c_e8m0_block(3.4e38f, &g, 0), 127 + 125);
    assert_int_equal(fp4c_e8m0_block(3.4e38f, &g, 1), 127 + 126);
    assert_int_equal(fp4c_e8m0_block(1.99999988f, &g, 0), 125);
    for (int e = -149; e < 128; e++) {
        assert_int_equal(fp4c_floor_log2(ldexpf(1.0f, e)), e);
        if (e < 127 && e > -149) assert_int_equal(fp4c_floor_log2(ldexpf(1.5f, e)), e);
        assert_int_equal(fp4c_ceil_log2(ldexpf(1.0f, e)), e);
    }
}

static void test_nvfp4_worked_example(void **state)
{
    (void)state;
    fp4_qconfig c = mkcfg(FP4_FMT_E2M1, FP4_SCALE_NVFP4);
    float x[16] = {3.0f, 1.0f, 0.3f, -2.2f};
    float deq[16];
    uint8_t codes[16], sc[1];
    fp4_qout out = {deq, codes, sc};
    assert_int_equal(fp4_quantize_rows(&c, 100.0f, x, 0, 1, 16, &out, NULL), FP4_OK);
    assert_int_equal(sc[0], fp4c_e4m3_encode(13.0f));
    assert_true(fp4c_e4m3_decode(sc[0]) == 13.0f);
    assert_int_equal(codes[0], 7);
    assert_int_equal(codes[1], 4);
    assert_int_equal(codes[2], 1);
    assert_int_equal(codes[3], 8 | 6);
    assert_double_abs(deq[0], 2.901786f, 2e-6);
    assert_double_abs(deq[1], 0.967262f, 2e-6);
    assert_double_abs(deq[2], 0.241815f, 2e-6);
    assert_double_abs(deq[3], -1.934524f, 2e-6);
    /* the encode factor of SPEC §3 */
    float sdec = 1.0f / (2688.0f / 100.0f);
    assert_double_abs(1.0f / (13.0f * sdec), 2.0676923f, 1e-6);
}

static void test_nvfp4_two_level_and_underflow(void **state)
{
    (void)state;
    fp4_qconfig c = mkcfg(FP4_FMT_E2M1, FP4_SCALE_NVFP4);
    float x[32] = {0};
    x[0] = 6000.0f; /* [6000, 0 x15]: two-level scale decodes 6000 exactly */
    float deq[32];
    uint8_t sc[2];
    fp4_qout out = {deq, NULL, sc};
    assert_int_equal(fp4_quantize_rows(&c, amax_of(&c, x, 1, 16), x, 0, 1, 16, &out, NULL),
                     FP4_OK);
    /* 6000 within fp32 rounding of S_dec (TE's order gives 5999.9995, one ulp) */
    assert_double_abs(deq[0], 6000.0f, 6000.0f * 2e-7);
    /* a single-level E4M3 scale would saturate at 448: 6 * 448 = 2688 */
    assert_true(6.0f * fp4c_e4m3_decode(fp4c_e4m3_encode(6000.0f / 6.0f)) == 2688.0f);

    /* tensor amax 1000, block [0.001, 0...] underflows, decodes to 0 and is counted */
    float y[32] = {0};
    y[0] = 1000.0f;
    y[16] = 0.001f;
    y[17] = -0.0005f;
    fp4_metrics m;
    fp4_metrics_init(&m);
    assert_int_equal(fp4_quantize_rows(&c, 1000.0f, y, 0, 1, 32, &out, &m), FP4_OK);
    assert_double_abs(deq[0], 1000.0f, 1e-3);
    assert_int_equal(sc[1], 0);
    for (int j = 16; j < 32; j++) assert_true(deq[j] == 0.0f);
    assert_true(signbit(deq[17]));
    assert_int_equal(m.scale_underflow_blocks, 1);
    assert_int_equal(m.zero_blocks, 0);
    assert_int_equal(m.blocks, 2);
    fp4_metrics_finish(&m);
    assert_false(isnan(m.sqnr_db));
}

static void test_mxfp4_rules(void **state)
{
    (void)state;
    fp4_qconfig c = mkcfg(FP4_FMT_E2M1, FP4_SCALE_MXFP4);
    assert_int_equal(c.block, 32);
    float x[32] = {0}, deq[32];
    uint8_t sc[1];
    fp4_qout out = {deq, NULL, sc};
    fp4_metrics m;
    x[0] = 3.0001f;
    assert_int_equal(fp4_quantize_rows(&c, 0, x, 0, 1, 32, &out, NULL), FP4_OK);
    assert_true(fp4c_e8m0_decode(sc[0]) == 0.5f);
    assert_true(deq[0] == 3.0f);
    c.mx_rule = FP4_MX_RCEIL;
    assert_int_equal(fp4_quantize_rows(&c, 0, x, 0, 1, 32, &out, NULL), FP4_OK);
    assert_true(fp4c_e8m0_decode(sc[0]) == 1.0f);
    x[0] = 7.0f;
    c.mx_rule = FP4_MX_FLOOR;
    fp4_metrics_init(&m);
    assert_int_equal(fp4_quantize_rows(&c, 0, x, 0, 1, 32, &out, &m), FP4_OK);
    assert_true(fp4c_e8m0_decode(sc[0]) == 1.0f);
    assert_true(deq[0] == 6.0f); /* 7 clips to 6 */
    assert_int_equal(m.clipped, 1);
    assert_int_equal(m.saturated, 1);
    c.mx_rule = FP4_MX_RCEIL;
    fp4_metrics_init(&m);
    assert_int_equal(fp4_quantize_rows(&c, 0, x, 0, 1, 32, &out, &m), FP4_OK);
    assert_true(fp4c_e8m0_decode(sc[0]) == 2.0f);
    assert_true(deq[0] == 8.0f); /* 3.5 ties to the even code: 4 */
    assert_int_equal(m.clipped, 0);
    c.mx_rule = FP4_MX_FLOOR;
    x[0] = 2.7f;
    assert_int_equal(fp4_quantize_rows(&c, 0, x, 0, 1, 32, &out, NULL), FP4_OK);
    assert_int_equal(sc[0], 126);
    x[0] = 1.99999988f;
    assert_int_equal(fp4_quantize_rows(&c, 0, x, 0, 1, 32, &out, NULL), FP4_OK);
    assert_int_equal(sc[0], 125);
    assert_true(deq[0] == 1.5f);
}

static void test_zero_block_all_modes(void **state)
{
    (void)state;
    for (int s = 0; s < FP4_SCALE_COUNT; s++) {
        fp4_qconfig c = mkcfg(FP4_FMT_E2M1, (fp4_scale_mode)s);
        float x[64] = {0}, deq[64];
        x[3] = -0.0f;
        uint8_t codes[64];
        fp4_qout out = {deq, codes, NULL};
        fp4_metrics m;
        fp4_metrics_init(&m);
        assert_int_equal(fp4_quantize_rows(&c, 0.0f, x, 0, 1, 64, &out, &m), FP4_OK);
        for (int j = 0; j < 64; j++) {
            assert_true(deq[j] == 0.0f);
            assert_false(isnan(deq[j]));
        }
        assert_int_equal(codes[3], 8);
        assert_int_equal(m.zero_blocks, m.blocks);
        assert_int_equal(m.zero, 64);
        assert_int_equal(m.scale_underflow_blocks, 0);
        fp4_metrics_finish(&m);
        assert_int_equal(m.sqnr_status, FP4_SQNR_ZERO_SIGNAL);
    }
}

static void test_nonfinite_block_isolated(void **state)
{
    (void)state;
    for (int s = 0; s < FP4_SCALE_COUNT; s++)
        for (int kind = 0; kind < 2; kind++) {
            fp4_qconfig c = mkcfg(FP4_FMT_E2M1, (fp4_scale_mode)s);
            const int B = c.block;
            float x[128], deq[128], ref[128];
            for (int j = 0; j < 128; j++) x[j] = grand();
            x[B] = 9.0f; /* second block holds the finite amax */
            x[3] = kind ? -INFINITY : NAN;
            fp4_metrics m, mr;
            fp4_metrics_init(&m);
            fp4_metrics_init(&mr);
            fp4_qout out = {deq, NULL, NULL}, outr = {ref, NULL, NULL};
            float a = amax_of(&c, x, 1, 128);
            assert_true(a == 9.0f); /* amax ignores non-finite values */
            assert_int_equal(fp4_quantize_rows(&c, a, x, 0, 1, 128, &out, &m), FP4_OK);
            /* reference: the same row without its first block */
            assert_int_equal(fp4_quantize_rows(&c, a, x + B, 0, 1, 128 - B, &outr, &mr), FP4_OK);
            for (int j = B; j < 128; j++) assert_true(deq[j] == ref[j - B]);
            assert_int_equal(m.nan, kind ? 0 : 1);
            assert_int_equal(m.inf, kind ? 1 : 0);
            assert_int_equal(m.nonfinite_blocks, 1);
            assert_int_equal(m.blocks, 128 / B);
            assert_true(m.sum_x2 == mr.sum_x2);
            assert_true(m.sum_err2 == mr.sum_err2);
            fp4_metrics_finish(&m);
            assert_false(isnan(m.sqnr_db));
            uint64_t h = 0;
            for (int i = 0; i < 16; i++) h += m.hist[i];
            assert_int_equal(h, 128 - B);
        }
}

static void test_philox_known_answers(void **state)
{
    (void)state;
    philox4x32_ctr_t c0 = {{0, 0, 0, 0}}, c1 = {{~0u, ~0u, ~0u, ~0u}};
    philox4x32_key_t k0 = {{0, 0}}, k1 = {{~0u, ~0u}};
    philox4x32_ctr_t r0 = philox4x32(c0, k0), r1 = philox4x32(c1, k1);
    assert_int_equal(r0.v[0], 0x6627e8d5u);
    assert_int_equal(r0.v[1], 0xe169c58du);
    assert_int_equal(r0.v[2], 0xbc57ac4cu);
    assert_int_equal(r0.v[3], 0x9b00dbd8u);
    assert_int_equal(r1.v[0], 0x408f276du);
    assert_int_equal(r1.v[1], 0x41c83b0eu);
    assert_int_equal(r1.v[2], 0xa20bc7c6u);
    assert_int_equal(r1.v[3], 0x6d5451fdu);
    assert_int_equal(fp4c_philox_word0(0, 0, 0), 0x6627e8d5u);
    assert_int_equal(fp4c_philox_word0(~0ull, ~0ull, ~0u) == 0x408f276du ? 0 : 1, 1);
    /* the counter layout: (idx lo, idx hi, stream, 0), key (seed lo, seed hi) */
    philox4x32_ctr_t c2 = {{0x89abcdefu, 0x01234567u, 5u, 0u}};
    philox4x32_key_t k2 = {{0xdeadbeefu, 0x0badf00du}};
    assert_int_equal(fp4c_philox_word0(0x0badf00ddeadbeefull, 0x0123456789abcdefull, 5u),
                     philox4x32(c2, k2).v[0]);
    uint32_t w = fp4c_philox_word0(7, 11, 3);
    assert_true(fp4c_sr_uniform(7, 11, 3, 24) == (float)(w >> 8) * 0x1p-24f);
    assert_true(fp4c_sr_uniform(7, 11, 3, 8) == (float)(w >> 24) * 0x1p-8f);
}

/* n_rows blocks [6, v x15] (fp32 scale 1), SR; returns the dequantized values of the v's */
static float *sr_run(float v, int rows, int bits, uint64_t seed)
{
    fp4_qconfig c = mkcfg(FP4_FMT_E2M1, FP4_SCALE_FP32);
    c.rounding = FP4_ROUND_SR;
    c.sr_bits = bits;
    c.seed = seed;
    c.stream = 9;
    float *x = malloc(sizeof(float) * 16 * (size_t)rows);
    float *deq = malloc(sizeof(float) * 16 * (size_t)rows);
    for (int r = 0; r < rows; r++) {
        x[r * 16] = 6.0f;
        for (int j = 1; j < 16; j++) x[r * 16 + j] = v;
    }
    fp4_qout out = {deq, NULL, NULL};
    assert_int_equal(fp4_quantize_rows(&c, 0, x, 0, rows, 16, &out, NULL), FP4_OK);
    free(x);
    return deq;
}

static void test_sr_statistics(void **state)
{
    (void)state;
    const int rows = 66667; /* 1,000,005 draws */
    const double n = rows * 15.0;
    float *d = sr_run(2.5f, rows, 24, 42);
    double sum = 0;
    for (int r = 0; r < rows; r++)
        for (int j = 1; j < 16; j++) {
            float q = d[r * 16 + j];
            assert_true(q == 2.0f || q == 3.0f);
            sum += q;
        }
    assert_true(fabs(sum / n - 2.5) < 3 * 0.5 / sqrt(n));
    free(d);
    d = sr_run(5.0f, rows, 24, 43);
    double n6 = 0;
    for (int r = 0; r < rows; r++)
        for (int j = 1; j < 16; j++) {
            float q = d[r * 16 + j];
            assert_true(q == 4.0f || q == 6.0f);
            n6 += q == 6.0f;
        }
    assert_true(fabs(n6 / n - 0.5) < 3 * 0.5 / sqrt(n));
    free(d);
    /* a level stays that level, for every level and both bit widths */
    const float lv[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
    for (int i = 0; i < 8; i++)
        for (int bits = 8; bits <= 24; bits += 16) {
            d = sr_run(lv[i], 100, bits, 1);
            for (int k = 0; k < 1600; k++) assert_true(d[k] == (k % 16 ? lv[i] : 6.0f));
            free(d);
        }
    /* 8-bit SR: 1 + 0.5/256 rounds up exactly when the top byte of word0 is 0 */
    const int r8 = 20000;
    d = sr_run(1.0f + 0.5f / 256.0f, r8, 8, 77);
    double up = 0;
    for (int r = 0; r < r8; r++)
        for (int j = 1; j < 16; j++) {
            int want = (fp4c_philox_word0(77, (uint64_t)r * 16 + (uint64_t)j, 9) >> 24) == 0;
            float q = d[r * 16 + j];
            assert_true(q == (want ? 1.5f : 1.0f));
            up += want;
        }
    double n8 = r8 * 15.0, p = 1.0 / 256.0;
    assert_true(fabs(up / n8 - p) < 3 * sqrt(p * (1 - p) / n8));
    free(d);
}

/* e1m2 and int4 are the same grid up to 2: identical dequantized values and codes */
static void test_e1m2_equals_int4(void **state)
{
    (void)state;
    const int R = 32, L = 100;
    float *x = malloc(sizeof(float) * R * L);
    for (int i = 0; i < R * L; i++) x[i] = grand() * (i % 37 == 0 ? 30.0f : 1.0f);
    fp4_rht_signs sg;
    assert_int_equal(fp4_rht_signs_make("te", 32, &sg), FP4_OK);
    for (int s = 0; s < FP4_SCALE_COUNT; s++)
        for (int v = 0; v < 8; v++) {
            fp4_qconfig a = mkcfg(FP4_FMT_E1M2, (fp4_scale_mode)s);
            a.rounding = v & 1 ? FP4_ROUND_SR : FP4_ROUND_RTNE;
            a.mx_rule = v & 2 ? FP4_MX_RCEIL : FP4_MX_FLOOR;
            a.rht = v & 4 ? &sg : NULL;
            a.weight_2d = s == FP4_SCALE_NVFP4 && (v & 2);
            fp4_qconfig b = a;
            b.format.id = FP4_FMT_INT4;
            int64_t P = fp4_padded_len(&a, L);
            float *da = malloc(sizeof(float) * R * P), *db = malloc(sizeof(float) * R * P);
            uint8_t *ca = malloc((size_t)(R * P)), *cb = malloc((size_t)(R * P));
            fp4_qout oa = {da, ca, NULL}, ob = {db, cb, NULL};
            assert_int_equal(fp4_quantize_rows(&a, amax_of(&a, x, R, L), x, 0, R, L, &oa, NULL),
                             FP4_OK);
            assert_int_equal(fp4_quantize_rows(&b, amax_of(&b, x, R, L), x, 0, R, L, &ob, NULL),
                             FP4_OK);
            assert_memory_equal(da, db, sizeof(float) * (size_t)(R * P));
            assert_memory_equal(ca, cb, (size_t)(R * P));
            /* the verdict's "same values" predicate says so; a changed RHT, grid or scale not */
            assert_true(fp4_qconfig_same_values(&a, &b) && fp4_qconfig_same_values(&b, &a));
            fp4_qconfig c = b;
            c.rht = a.rht ? NULL : &sg;
            assert_false(fp4_qconfig_same_values(&a, &c));
            c = b;
            c.format.id = FP4_FMT_E2M1;
            assert_false(fp4_qconfig_same_values(&a, &c));
            c = b;
            c.scale = (fp4_scale_mode)((s + 1) % FP4_SCALE_COUNT);
            assert_false(fp4_qconfig_same_values(&a, &c));
            free(da);
            free(db);
            free(ca);
            free(cb);
        }
    free(x);
}

static void test_weight_2d_tiles(void **state)
{
    (void)state;
    fp4_qconfig c = mkcfg(FP4_FMT_E2M1, FP4_SCALE_NVFP4);
    c.weight_2d = true;
    assert_int_equal(fp4_qconfig_check(&c), FP4_OK);
    const int R = 40, L = 48; /* last tile row holds 8 rows */
    float x[40 * 48];
    for (int i = 0; i < R * L; i++) x[i] = grand();
    x[5 * L + 20] = 50.0f; /* tile (0, 1) */
    float a = amax_of(&c, x, R, L);
    uint8_t sc[40 * 3];
    fp4_qout out = {NULL, NULL, sc};
    assert_int_equal(fp4_quantize_rows(&c, a, x, 0, R, L, &out, NULL), FP4_OK);
    float sdec = 1.0f / (2688.0f / a), mm = (2688.0f / a) * (1.0f / 6.0f);
    for (int tr = 0; tr < 3; tr++)
        for (int tc = 0; tc < 3; tc++) {
            float ta = 0;
            for (int r = tr * 16; r < R && r < tr * 16 + 16; r++)
                for (int j = tc * 16; j < tc * 16 + 16; j++) ta = fmaxf(ta, fabsf(x[r * L + j]));
            uint8_t want = fp4c_e4m3_encode(fminf(ta * mm, 448.0f));
            for (int r = tr * 16; r < R && r < tr * 16 + 16; r++)
                assert_int_equal(sc[r * 3 + tc], want);
        }
    assert_int_equal(sc[0 * 3 + 1], fp4c_e4m3_encode(fminf(50.0f * mm, 448.0f)));
    (void)sdec;
    /* weight_2d needs nvfp4 */
    fp4_qconfig bad = mkcfg(FP4_FMT_E2M1, FP4_SCALE_FP32);
    bad.weight_2d = true;
    assert_int_equal(fp4_qconfig_check(&bad), FP4_ERR_USAGE);
    assert_int_equal(fp4_quantize_rows(&bad, 0, x, 0, 1, L, &out, NULL), FP4_ERR_USAGE);
}

static void test_config_checks(void **state)
{
    (void)state;
    fp4_qconfig c;
    fp4_qconfig_default(&c);
    assert_int_equal(c.block, 16);
    assert_int_equal(c.sr_bits, 24);
    c.block = 24;
    assert_int_equal(fp4_qconfig_check(&c), FP4_ERR_USAGE);
    c.block = 1;
    assert_int_equal(fp4_qconfig_check(&c), FP4_ERR_USAGE);
    c.block = 64;
    assert_int_equal(fp4_qconfig_check(&c), FP4_OK);
    c.sr_bits = 12;
    assert_int_equal(fp4_qconfig_check(&c), FP4_ERR_USAGE);
    c.sr_bits = 8;
    c.scale = FP4_SCALE_MXFP4;
    c.block = 16;
    assert_int_equal(fp4_qconfig_check(&c), FP4_OK);
    assert_int_equal(c.block, 32);
    fp4_scale_mode sm;
    fp4_rounding rr;
    fp4_mx_rule mr;
    for (int s = 0; s < FP4_SCALE_COUNT; s++) {
        assert_int_equal(fp4_scale_parse(fp4_scale_name((fp4_scale_mode)s), &sm), FP4_OK);
        assert_int_equal(sm, s);
    }
    assert_int_equal(fp4_scale_parse("fp16", &sm), FP4_ERR_USAGE);
    assert_int_equal(fp4_rounding_parse("sr", &rr), FP4_OK);
    assert_int_equal(rr, FP4_ROUND_SR);
    assert_int_equal(fp4_rounding_parse("rtn", &rr), FP4_ERR_USAGE);
    assert_int_equal(fp4_mx_rule_parse("rceil", &mr), FP4_OK);
    assert_int_equal(mr, FP4_MX_RCEIL);
    assert_int_equal(fp4_mx_rule_parse("ceil", &mr), FP4_ERR_USAGE);
    fp4_rht_signs sg;
    assert_int_equal(fp4_rht_signs_make("te", 64, &sg), FP4_OK);
    fp4_qconfig_default(&c);
    c.rht = &sg;
    assert_int_equal(fp4_padded_len(&c, 100), 128);
    assert_int_equal(fp4_padded_len(&c, 128), 128);
    c.rht = NULL;
    assert_int_equal(fp4_padded_len(&c, 100), 112);
    assert_true(fp4_needs_tensor_amax(&(fp4_qconfig){.scale = FP4_SCALE_NVFP4}));
    assert_false(fp4_needs_tensor_amax(&(fp4_qconfig){.scale = FP4_SCALE_MXFP4}));
}

/* The same rows in one call or in slabs give the same bits (SR and RHT included). */
static void test_slab_split_invariance(void **state)
{
    (void)state;
    const int R = 48, L = 70;
    float x[48 * 70];
    for (int i = 0; i < R * L; i++) x[i] = grand();
    fp4_rht_signs sg;
    assert_int_equal(fp4_rht_signs_make("seed:5", 16, &sg), FP4_OK);
    fp4_qconfig c = mkcfg(FP4_FMT_E2M1, FP4_SCALE_NVFP4);
    c.rounding = FP4_ROUND_SR;
    c.weight_2d = true;
    c.rht = &sg;
    c.seed = 1234;
    int64_t P = fp4_padded_len(&c, L);
    float a = amax_of(&c, x, R, L);
    float *d1 = calloc((size_t)(R * P), sizeof(float)), *d2 = calloc((size_t)(R * P), sizeof(float));
    fp4_metrics m1, m2;
    fp4_metrics_init(&m1);
    fp4_metrics_init(&m2);
    fp4_qout o1 = {d1, NULL, NULL};
    assert_int_equal(fp4_quantize_rows(&c, a, x, 0, R, L, &o1, &m1), FP4_OK);
    for (int r0 = 0; r0 < R; r0 += 16) {
        fp4_qout o2 = {d2 + r0 * P, NULL, NULL};
        assert_int_equal(fp4_quantize_rows(&c, a, x + r0 * L, r0, 16, L, &o2, &m2), FP4_OK);
    }
    assert_memory_equal(d1, d2, sizeof(float) * (size_t)(R * P));
    assert_memory_equal(&m1, &m2, sizeof m1);
    assert_int_equal(m1.elements, R * L);
    assert_int_equal(m1.padded, R * (P - L));
    free(d1);
    free(d2);
}

/* The SIMD group kernel (taken when no deq/codes output is asked for) and the scalar
 * block_quant (taken when they are) give the same bits in every metric, for every grid kind
 * (closed-form RTNE index: e2m1, e1m2, int4; midpoint chain: e3m0, e2m1:max=3), every scale
 * mode, RHT off/on, block sizes 4 (no 8x8 transpose), 8, 16, 32, 64, and rows that end in a
 * partial group. Blocks hold ±g_max first (fp32 scale 1, so t = |x| exactly) and then levels,
 * exact midpoints (the RTNE ties), their float neighbours and Gaussian values; one row holds a
 * NaN block, one an all-zero block. */
static void test_simd_kernel_equals_scalar(void **state)
{
    (void)state;
    const fp4_format fmts[5] = {{FP4_FMT_E2M1, 0}, {FP4_FMT_E1M2, 0}, {FP4_FMT_INT4, 0},
                                {FP4_FMT_E3M0, 0}, {FP4_FMT_E2M1, 3}};
    /* 2: fewer elements than one 8x8 tile; 256 and 1024 (GRP_MAX_BLOCK): one block per row
     * and partial groups, the AVX-512 kernel's largest level-term scratch */
    const int blocks[8] = {2, 4, 8, 16, 32, 64, 256, 1024};
    fp4_rht_signs sg;
    assert_int_equal(fp4_rht_signs_make("te", 16, &sg), FP4_OK);
    const int R = 12, L = 200;
    float *x = malloc(sizeof(float) * R * L);
    int checked = 0;
    for (int f = 0; f < 5; f++) {
        const fp4c_grid g = fp4c_grid_make((int)fmts[f].id, fmts[f].max);
        for (int i = 0; i < R * L; i++) {
            const int j = i % 16, pick = (int)(urand() * 5.0);
            const int lv = (int)(urand() * (g.n - 1));
            float v = pick == 0 ? g.q[lv]
                      : pick == 1 ? g.mid[lv]
                      : pick == 2 ? nextafterf(g.mid[lv], 0.0f)
                      : pick == 3 ? nextafterf(g.mid[lv], 100.0f)
                                  : (float)(grand() * g.gmax / 3.0);
            if (j == 0) v = g.gmax;
            x[i] = urand() < 0.5 ? -v : v;
        }
        for (int j = 0; j < 16; j++) x[3 * L + 32 + j] = 0.0f;
        x[5 * L + 70] = NAN;
        for (int s = 0; s < FP4_SCALE_COUNT; s++)
            for (int b = 0; b < 8; b++)
                for (int r = 0; r < 2; r++) {
                    fp4_qconfig c;
                    fp4_qconfig_default(&c);
                    c.format = fmts[f];
                    c.scale = (fp4_scale_mode)s;
                    c.block = blocks[b];
                    c.rht = r ? &sg : NULL;
                    if (fp4_qconfig_check(&c) != FP4_OK || c.block != blocks[b]) continue;
                    const int64_t P = fp4_padded_len(&c, L);
                    float *deq = malloc(sizeof(float) * (size_t)(R * P));
                    uint8_t *codes = malloc((size_t)(R * P));
                    const float a = amax_of(&c, x, R, L);
                    fp4_metrics m1, m2;
                    fp4_metrics_init(&m1);
                    fp4_metrics_init(&m2);
                    fp4_qout o = {deq, codes, NULL};
                    assert_int_equal(fp4_quantize_rows(&c, a, x, 0, R, L, NULL, &m1), FP4_OK);
                    assert_int_equal(fp4_quantize_rows(&c, a, x, 0, R, L, &o, &m2), FP4_OK);
                    if (memcmp(&m1, &m2, sizeof m1) != 0)
                        fail_msg("%s scale %d block %d rht %d: SIMD and scalar metrics differ "
                                 "(SQNR sums %a / %a, hist[1] %llu / %llu)",
                                 f == 4 ? "e2m1:max=3" : fp4_format_traits_of(fmts[f].id)->name,
                                 s, blocks[b], r, m1.sum_err2, m2.sum_err2,
                                 (unsigned long long)m1.hist[1], (unsigned long long)m2.hist[1]);
                    checked++;
                    free(deq);
                    free(codes);
                }
    }
    assert_true(checked >= 5 * (8 * 2 + 3 * 2)); /* fp32 x 8 blocks, nvfp4/mxfp4/tensor x 1 */
    free(x);
}

/* fp4_quantize_rows runs its units on OpenMP threads in batches: outputs and every metric
 * (fp64 sums included) are the same bits for 1, 2 and 3 threads, over several batches (9000
 * rows of one chunk: 3 batches of at most 4096 units) and with weight_2d tile units + SR + RHT. */
static void run_threads(const fp4_qconfig *c, const float *x, int R, int L, int threads,
                        float *deq, uint8_t *codes, uint8_t *scales, fp4_metrics *m)
{
    omp_set_num_threads(threads);
    fp4_metrics_init(m);
    fp4_qout o = {deq, codes, scales};
    assert_int_equal(fp4_quantize_rows(c, amax_of(c, x, R, L), x, 0, R, L, &o, m), FP4_OK);
}

static void test_thread_count_invariance(void **state)
{
    (void)state;
    const int saved = omp_get_max_threads();
    fp4_rht_signs sg;
    assert_int_equal(fp4_rht_signs_make("seed:5", 16, &sg), FP4_OK);
    for (int k = 0; k < 2; k++) {
        const int R = k ? 9000 : 96, L = 70;
        fp4_qconfig c = mkcfg(FP4_FMT_E2M1, k ? FP4_SCALE_FP32 : FP4_SCALE_NVFP4);
        if (!k) {
            c.rounding = FP4_ROUND_SR;
            c.weight_2d = true;
            c.rht = &sg;
            c.seed = 99;
        }
        const int64_t P = fp4_padded_len(&c, L), nb = P / c.block;
        float *x = malloc(sizeof(float) * (size_t)(R * L));
        for (int i = 0; i < R * L; i++) x[i] = grand();
        float *d[3];
        uint8_t *cd[3], *sc[3];
        fp4_metrics m[3];
        for (int t = 0; t < 3; t++) {
            d[t] = calloc((size_t)(R * P), sizeof(float));
            cd[t] = calloc((size_t)(R * P), 1);
            sc[t] = calloc((size_t)(R * nb), 1);
            run_threads(&c, x, R, L, t + 1, d[t], cd[t], sc[t], &m[t]);
        }
        for (int t = 1; t < 3; t++) {
            assert_memory_equal(d[0], d[t], sizeof(float) * (size_t)(R * P));
            assert_memory_equal(cd[0], cd[t], (size_t)(R * P));
            assert_memory_equal(sc[0], sc[t], (size_t)(R * nb));
            assert_memory_equal(&m[0], &m[t], sizeof m[0]);
        }
        assert_int_equal(m[0].elements, (uint64_t)R * L);
        for (int t = 0; t < 3; t++) free(d[t]), free(cd[t]), free(sc[t]);
        free(x);
    }
    omp_set_num_threads(saved);
}

/* --- Single points pinned twice, from independent data (issue 32) ------------------------ */

/* MXFP4 rceil on blocks whose amax / g_max is a power of two: X = amax / g_max exactly
 * (ceil(log2) of a power of two is itself; floor + 1 would double X). e2m1: 12 / 6 = 2;
 * e3m0 (g_max 16): 0.5 / 16 = 2^-5. */
static void test_mxfp4_rceil_power_of_two(void **state)
{
    (void)state;
    const fp4c_grid ge = fp4c_grid_make(FP4C_E2M1, 0), g3 = fp4c_grid_make(FP4C_E3M0, 0);
    assert_true(g3.gmax == 16.0f);
    assert_int_equal(fp4c_e8m0_block(12.0f, &ge, 1), 127 + 1);
    assert_int_equal(fp4c_e8m0_block(0.5f, &g3, 1), 127 - 5);
    assert_int_equal(fp4c_e8m0_block(6.0f, &ge, 1), 127);
    assert_int_equal(fp4c_e8m0_block(ldexpf(6.0f, -100), &ge, 1), 127 - 100);
    float x[32] = {0}, deq[32];
    uint8_t sc[1], codes[32];
    fp4_qout out = {deq, codes, sc};
    /* e2m1: [12, 1, -7, 0...]: X = 2; 1 -> t 0.5 (level 1), -7 -> t 3.5, a tie: even 4 -> -8 */
    fp4_qconfig c = mkcfg(FP4_FMT_E2M1, FP4_SCALE_MXFP4);
    c.mx_rule = FP4_MX_RCEIL;
    x[0] = 12.0f;
    x[1] = 1.0f;
    x[2] = -7.0f;
    assert_int_equal(fp4_quantize_rows(&c, 0, x, 0, 1, 32, &out, NULL), FP4_OK);
    assert_int_equal(sc[0], 128);
    assert_double_exact(deq[0], 12.0);
    assert_double_exact(deq[1], 1.0);
    assert_double_exact(deq[2], -8.0);
    assert_int_equal(codes[1], 1);
    /* e3m0: [0.5, 2^-7, 0...]: X = 2^-5; 2^-7 -> t 0.25 (level 1) */
    c = mkcfg(FP4_FMT_E3M0, FP4_SCALE_MXFP4);
    c.mx_rule = FP4_MX_RCEIL;
    memset(x, 0, sizeof x);
    x[0] = 0.5f;
    x[1] = ldexpf(1.0f, -7);
    assert_int_equal(fp4_quantize_rows(&c, 0, x, 0, 1, 32, &out, NULL), FP4_OK);
    assert_int_equal(sc[0], 127 - 5);
    assert_double_exact(deq[0], 0.5);
    assert_double_exact(deq[1], ldexp(1.0, -7));
}

/* NVFP4 tensor scale in TE's fp32 order, S_enc = (g_max * 448) / amax_t, S_dec = 1 / S_enc, on
 * two tensor amaxes where g_max * (448 / amax_t) rounds differently. */
static void test_nvfp4_tensor_scale_order(void **state)
{
    (void)state;
    fp4_qconfig c = mkcfg(FP4_FMT_E2M1, FP4_SCALE_NVFP4);
    const float amax_t[2] = {0x1.00007p+0f, 0x1.000104p+5f};
    const float senc[2] = {0x1.4fff6ep+11f, 0x1.4ffeaap+6f};
    const float sdec[2] = {0x1.86190cp-12f, 0x1.8619eep-7f};
    for (int k = 0; k < 2; k++) {
        const float a = amax_t[k];
        /* the data is where the orders differ */
        assert_true(6.0f * (448.0f / a) != senc[k]);
        assert_true(1.0f / (6.0f * (448.0f / a)) != sdec[k]);
        fp4_qplan p;
        assert_int_equal(fp4_qplan_make(&c, a, 16, &p), FP4_OK);
        assert_double_exact(p.nv_sdec, sdec[k]);
        assert_double_exact(p.nv_m, senc[k] * (1.0f / 6.0f));
        /* and through the quantizer: [a, 0...]: e = E4M3(a * m), x̂ = (6 * e) * S_dec */
        float x[16] = {0}, deq[16];
        uint8_t sc[1];
        fp4_qout out = {deq, NULL, sc};
        x[0] = a;
        assert_int_equal(fp4_quantize_rows(&c, a, x, 0, 1, 16, &out, NULL), FP4_OK);
        assert_int_equal(sc[0], fp4c_e4m3_encode(a * (senc[k] * (1.0f / 6.0f))));
        assert_double_exact(deq[0], (6.0f * fp4c_e4m3_decode(sc[0])) * sdec[k]);
    }
}

/* NVFP4 block multiplier 1 / (e * S_dec) in that fp32 order (not (1 / e) / S_dec), twice. */
static void test_nvfp4_block_multiplier_order(void **state)
{
    (void)state;
    fp4_qconfig c = mkcfg(FP4_FMT_E2M1, FP4_SCALE_NVFP4);
    const float at[2] = {100.0f, 1000.0f}, ab[2] = {0x1.652516p+0f, 0x1p-2f};
    const float ef[2] = {6.5f, 0.109375f}, mul[2] = {0x1.08aa24p+2f, 0x1.89374ap+4f};
    for (int k = 0; k < 2; k++) {
        fp4_qplan p;
        assert_int_equal(fp4_qplan_make(&c, at[k], 16, &p), FP4_OK);
        const fp4c_blk_par b = fp4c_block_params(1, &p.grid, p.ts, p.nv_m, p.nv_sdec, 0, ab[k],
                                                 ab[k]);
        assert_double_exact(fp4c_e4m3_decode(b.sbyte), ef[k]);
        assert_true((1.0f / ef[k]) / p.nv_sdec != mul[k]); /* the orders differ here */
        assert_double_exact(b.mul, mul[k]);
        assert_double_exact(b.s_eff, (double)(ef[k] * p.nv_sdec));
    }
}

/* E4M3 ties to even at two normal exponents and in the subnormals (step 2^-9). */
static void test_e4m3_ties(void **state)
{
    (void)state;
    /* [0.5, 1): step 2^-4 */
    assert_double_exact(fp4c_e4m3_decode(fp4c_e4m3_encode(0.53125f)), 0.5);
    assert_double_exact(fp4c_e4m3_decode(fp4c_e4m3_encode(0.59375f)), 0.625);
    /* [128, 256): step 16 */
    assert_double_exact(fp4c_e4m3_decode(fp4c_e4m3_encode(200.0f)), 192.0);
    assert_double_exact(fp4c_e4m3_decode(fp4c_e4m3_encode(232.0f)), 224.0); /* m 6, not 7 */
    /* subnormals: k + 1/2 steps go to the even k */
    assert_int_equal(fp4c_e4m3_encode(ldexpf(2.5f, -9)), 2);
    assert_int_equal(fp4c_e4m3_encode(ldexpf(3.5f, -9)), 4);
    assert_int_equal(fp4c_e4m3_encode(ldexpf(7.5f, -9)), 8); /* up to 2^-6, code 8 */
    assert_int_equal(fp4c_e4m3_encode(ldexpf(0.5f, -9)), 0);
}

/* E8M0 floor rule, X = 2^(floor(log2 amax) - emax), on amaxes that are not powers of two. */
static void test_e8m0_floor_known(void **state)
{
    (void)state;
    const fp4c_grid ge = fp4c_grid_make(FP4C_E2M1, 0), gi = fp4c_grid_make(FP4C_INT4, 0);
    assert_int_equal(ge.emax, 2);
    assert_int_equal(gi.emax, 2);
    assert_int_equal(fp4c_e8m0_block(5.9f, &ge, 0), 127);      /* 2 - 2 */
    assert_int_equal(fp4c_e8m0_block(47.9f, &ge, 0), 130);     /* 5 - 2 */
    assert_int_equal(fp4c_e8m0_block(0.1f, &ge, 0), 121);      /* -4 - 2 */
    assert_int_equal(fp4c_e8m0_block(100.0f, &gi, 0), 131);    /* 6 - 2 */
    /* through the quantizer: [47.9, 9, 0...] -> X = 8: 47.9/8 = 5.99 -> 6 -> 48; 9/8 -> 1 -> 8 */
    fp4_qconfig c = mkcfg(FP4_FMT_E2M1, FP4_SCALE_MXFP4);
    float x[32] = {47.9f, 9.0f}, deq[32];
    uint8_t sc[1];
    fp4_qout out = {deq, NULL, sc};
    assert_int_equal(fp4_quantize_rows(&c, 0, x, 0, 1, 32, &out, NULL), FP4_OK);
    assert_int_equal(sc[0], 130);
    assert_double_exact(deq[0], 48.0);
    assert_double_exact(deq[1], 8.0);
}

/* The E2M1 grid by value, and one level (1.5) through the quantizer (fp32 scale 1). */
static void test_e2m1_grid_values(void **state)
{
    (void)state;
    const float want[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    for (int i = 0; i < 8; i++) assert_double_exact(fp4c_level(FP4C_E2M1, i), want[i]);
    fp4_qconfig c = mkcfg(FP4_FMT_E2M1, FP4_SCALE_FP32);
    float x[16] = {6.0f, 1.5f, 1.3f, 1.2f, -1.7f, 1.76f}, deq[16];
    uint8_t codes[16];
    fp4_qout out = {deq, codes, NULL};
    assert_int_equal(fp4_quantize_rows(&c, 0, x, 0, 1, 16, &out, NULL), FP4_OK);
    assert_double_exact(deq[1], 1.5);
    assert_double_exact(deq[2], 1.5);
    assert_double_exact(deq[3], 1.0);
    assert_double_exact(deq[4], -1.5);
    assert_double_exact(deq[5], 2.0);
    assert_int_equal(codes[1], 3);
    assert_int_equal(codes[4], 8 | 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e4m3_cases),
        cmocka_unit_test(test_e8m0),
        cmocka_unit_test(test_nvfp4_worked_example),
        cmocka_unit_test(test_nvfp4_two_level_and_underflow),
        cmocka_unit_test(test_mxfp4_rules),
        cmocka_unit_test(test_zero_block_all_modes),
        cmocka_unit_test(test_nonfinite_block_isolated),
        cmocka_unit_test(test_philox_known_answers),
        cmocka_unit_test(test_sr_statistics),
        cmocka_unit_test(test_e1m2_equals_int4),
        cmocka_unit_test(test_weight_2d_tiles),
        cmocka_unit_test(test_config_checks),
        cmocka_unit_test(test_slab_split_invariance),
        cmocka_unit_test(test_thread_count_invariance),
        cmocka_unit_test(test_simd_kernel_equals_scalar),
        cmocka_unit_test(test_mxfp4_rceil_power_of_two),
        cmocka_unit_test(test_nvfp4_tensor_scale_order),
        cmocka_unit_test(test_nvfp4_block_multiplier_order),
        cmocka_unit_test(test_e4m3_ties),
        cmocka_unit_test(test_e8m0_floor_known),
        cmocka_unit_test(test_e2m1_grid_values),
    };
    return cmocka_run_group_tests_name("quant", tests, NULL, NULL);
}
