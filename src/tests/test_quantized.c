/* test_quantized.c — io/quantized: decode known answers per producer (fp32 order, nibble
 * order, E8M0 extremes, zero blocks, the swizzled scale layout), grouping of the fixtures in
 * testdata/quantized/ (made by scripts/make_quantized_testdata.py) and their partner errors. */
#include <math.h>
#include <unistd.h>

#include "testutil.h"

#include "io/pario.h"
#include "io/quantized.h"
#include "io/source.h"

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void assert_same_float(float got, float want)
{
    if (bits(got) != bits(want))
        fail_msg("got %.9g (0x%08x), want %.9g (0x%08x)", (double)got, bits(got), (double)want,
                 bits(want));
}

/* A one-row tensor of K inputs for the decoder alone. */
static fp4_qtensor one_row(fp4_qformat f, fp4_qproducer p, int64_t K)
{
    fp4_qtensor q;
    memset(&q, 0, sizeof q);
    q.format = f;
    q.producer = p;
    q.block = f == FP4_QF_NVFP4 ? 16 : 32;
    q.rank = 2;
    q.dims[0] = 1;
    q.dims[1] = K;
    q.rows = 1;
    q.scale_cols = K / q.block;
    return q;
}

static void test_e2m1_table(void **state)
{
    (void)state;
    static const float want[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6,
                                   -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
    for (unsigned c = 0; c < 16; c++) assert_same_float(fp4_e2m1_value(c), want[c]);
    assert_true(signbit(fp4_e2m1_value(8))); /* code 8 is -0 */
}

/* Element 2j is the low nibble of byte j, 2j+1 the high one. */
static void test_nibble_order(void **state)
{
    (void)state;
    fp4_qtensor q = one_row(FP4_QF_MXFP4, FP4_QP_GPT_OSS, 32);
    uint8_t packed[16] = {0x71, 0xF2};
    uint8_t scale = 127; /* 2^0 */
    float out[32];
    fp4_quant_decode(&q, packed, &scale, 0.0f, 0, 1, out);
    assert_same_float(out[0], 0.5f);
    assert_same_float(out[1], 6.0f);
    assert_same_float(out[2], 1.0f);
    assert_same_float(out[3], -6.0f);
    for (int i = 4; i < 32; i++) assert_same_float(out[i], 0.0f);
}

/* ModelOpt multiplies the E4M3 value by weight_scale_2 first, then the code; compressed-tensors
 * divides by weight_global_scale. Known answers, and the two orders on random scales. */
static void test_nvfp4_orders(void **state)
{
    (void)state;
    fp4_qtensor mo = one_row(FP4_QF_NVFP4, FP4_QP_MODELOPT, 16);
    fp4_qtensor ct = one_row(FP4_QF_NVFP4, FP4_QP_COMPRESSED_TENSORS, 16);
    uint8_t packed[8] = {0x07}; /* element 0: code 7 (6.0), element 1: 0 */
    uint8_t sb = 0x7E;          /* 448 */
    float out[16];
    fp4_quant_decode(&mo, packed, &sb, 0.5f, 0, 1, out);
    assert_same_float(out[0], 1344.0f); /* 6 * (448 * 0.5) */
    fp4_quant_decode(&ct, packed, &sb, 2.0f, 0, 1, out);
    assert_same_float(out[0], 1344.0f); /* 6 * (448 / 2) */
    /* QUANTIZED.md case 6: ws2 = 0.01 vs global 100: 6 * (448 * 0.01f) and 6 * (448 / 100) */
    fp4_quant_decode(&mo, packed, &sb, 0.01f, 0, 1, out);
    assert_same_float(out[0], 6.0f * (448.0f * 0.01f));
    assert_true(fabsf(out[0] - 26.88f) <= 4e-6f && isfinite(out[0]));
    fp4_quant_decode(&ct, packed, &sb, 100.0f, 0, 1, out);
    assert_same_float(out[0], 6.0f * (448.0f / 100.0f));
    /* code 8: ModelOpt's NVFP4 table gives +0, compressed-tensors' sign times 0 gives -0 */
    packed[0] = 0x88;
    fp4_quant_decode(&mo, packed, &sb, 0.5f, 0, 1, out);
    assert_true(out[0] == 0.0f && !signbit(out[0]) && out[1] == 0.0f && !signbit(out[1]));
    fp4_quant_decode(&ct, packed, &sb, 2.0f, 0, 1, out);
    assert_true(out[0] == 0.0f && signbit(out[0]) && out[1] == 0.0f && signbit(out[1]));
    fp4_qtensor mx = one_row(FP4_QF_MXFP4, FP4_QP_MODELOPT, 32);
    uint8_t e8 = 127;
    uint8_t p32[16] = {0x88};
    float out32[32];
    fp4_quant_decode(&mx, p32, &e8, 0.0f, 0, 1, out32);
    assert_true(out32[0] == 0.0f && signbit(out32[0])); /* ModelOpt MXFP4: sign * 0 */
    packed[0] = 0x07;
    /* the product comes first: for some scales e*(g*6) differs from (e*g)*6 in the last ulp,
     * and the decode must give the latter */
    uint32_t seed = 12345;
    int differ = 0;
    for (int k = 0; k < 20000; k++) {
        seed = seed * 1664525u + 1013904223u;
        float g = 1e-4f + (float)(seed >> 8) * (1.0f / 16777216.0f) * 1e-2f;
        uint8_t b = (uint8_t)(0x08 + (seed % 0x76));
        packed[0] = 0x07;
        fp4_quant_decode(&mo, packed, &b, g, 0, 1, out);
        float e = 0;
        for (int i = 0; i < 0x7F; i++) { /* the E4M3 value by its definition */
            if (i == b) {
                int ex = (b >> 3) & 15, m = b & 7;
                e = ex ? ldexpf(1.0f + (float)m / 8.0f, ex - 7) : (float)m / 512.0f;
            }
        }
        volatile float s = e * g;
        volatile float want = 6.0f * s;
        assert_same_float(out[0], want);
        volatile float other = e * (g * 6.0f);
        differ += bits(other) != bits(want);
    }
    assert_true(differ > 0); /* the order is observable on these scales */
}

/* MXFP4: 2^(b-127) as an fp32 power; the extremes (QUANTIZED.md case 5, corrected: 6 x 2^127
 * overflows fp32). */
static void test_mxfp4_extremes(void **state)
{
    (void)state;
    fp4_qtensor q = one_row(FP4_QF_MXFP4, FP4_QP_GPT_OSS, 32);
    uint8_t packed[16] = {0};
    float out[32];
    uint8_t b;
    packed[0] = 0x17; /* 6.0, 0.5 */
    b = 254;          /* 2^127 */
    fp4_quant_decode(&q, packed, &b, 0, 0, 1, out);
    assert_true(isinf(out[0]) && out[0] > 0);  /* 6 x 2^127 > FLT_MAX */
    assert_same_float(out[1], ldexpf(1.0f, 126)); /* 0.5 x 2^127 */
    b = 0; /* 2^-127, a subnormal */
    fp4_quant_decode(&q, packed, &b, 0, 0, 1, out);
    assert_same_float(out[0], ldexpf(6.0f, -127));
    assert_same_float(out[1], ldexpf(1.0f, -128));
    assert_true(out[1] > 0.0f);
    b = 255; /* 2^128 = +inf as an fp32 power: code 2 -> inf, code 0 -> NaN */
    packed[0] = 0x02;
    fp4_quant_decode(&q, packed, &b, 0, 0, 1, out);
    assert_true(isinf(out[0]) && out[0] > 0);
    assert_true(isnan(out[1]));
    b = 130;
    packed[0] = 0xA5; /* element 0: code 5 (3), element 1: code 10 (-1) */
    fp4_quant_decode(&q, packed, &b, 0, 0, 1, out);
    assert_same_float(out[0], 24.0f);
    assert_same_float(out[1], -8.0f);
}

/* compressed-tensors' zero block: scale byte 0x20 (0.125), codes 0 -> zeros. */
static void test_ct_zero_block(void **state)
{
    (void)state;
    fp4_qtensor q = one_row(FP4_QF_NVFP4, FP4_QP_COMPRESSED_TENSORS, 16);
    uint8_t packed[8] = {0};
    uint8_t sb = 0x20;
    float out[16];
    fp4_quant_decode(&q, packed, &sb, 1020.0f, 0, 1, out);
    for (int i = 0; i < 16; i++) assert_same_float(out[i], 0.0f);
    packed[0] = 0x02; /* code 2 (1.0): 1 * (0.125 / 1020) */
    fp4_quant_decode(&q, packed, &sb, 1020.0f, 0, 1, out);
    assert_same_float(out[0], 0.125f / 1020.0f);
}

/* The cuBLAS 128x4 swizzle, built here the way ModelOpt's swizzle_nvfp4_scales does it:
 * pad to [Rp, Cp], view(nR,128,nC,4).permute(0,2,1,3).reshape(-1,4,32,4).transpose(1,2). */
static void test_swizzled_scales(void **state)
{
    (void)state;
    enum { R = 130, K = 80, C = K / 16, RP = 256, CP = 8 };
    fp4_qtensor flat, sw;
    memset(&flat, 0, sizeof flat);
    flat.format = FP4_QF_NVFP4;
    flat.producer = FP4_QP_MODELOPT;
    flat.block = 16;
    flat.rank = 2;
    flat.dims[0] = R;
    flat.dims[1] = K;
    flat.rows = R;
    flat.scale_cols = C;
    sw = flat;
    sw.scale_layout = FP4_QS_SWIZZLED;
    sw.scale_cols = CP;
    static uint8_t packed[R * K / 2], sflat[R * C], padded[RP][CP], swz[RP * CP];
    static float a[R * K], b[R * K];
    for (int i = 0; i < R * K / 2; i++) packed[i] = (uint8_t)(i * 37 + 11);
    memset(padded, 0, sizeof padded);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) padded[r][c] = sflat[r * C + c] = (uint8_t)(0x30 + (r * 7 + c * 3) % 40);
    /* [nR,128,nC,4] -> permute -> [nR,nC,128,4] -> reshape [nR*nC, 4, 32, 4] -> transpose(1,2):
     * out[t][j][i][k] = in[t][i][j][k] with t = (r1, c1), i*32+j = r0, k = c0 */
    int o = 0;
    for (int r1 = 0; r1 < RP / 128; r1++)
        for (int c1 = 0; c1 < CP / 4; c1++)
            for (int j = 0; j < 32; j++)
                for (int i = 0; i < 4; i++)
                    for (int k = 0; k < 4; k++) swz[o++] = padded[r1 * 128 + i * 32 + j][c1 * 4 + k];
    fp4_quant_decode(&flat, packed, sflat, 0.001f, 0, R, a);
    fp4_quant_decode(&sw, packed, swz, 0.001f, 0, R, b);
    assert_memory_equal(a, b, sizeof a);
    /* a row range reads the same rows */
    fp4_quant_decode(&sw, packed, swz, 0.001f, 129, 1, b);
    assert_memory_equal(a + 129 * K, b, K * sizeof(float));
}

/* The summary of a tensor large enough to be counted in several pieces on the pario pool
 * (io/pario.h; 2 MB and more) equals the element-by-element count (fp4_quant_code, the block
 * scales through fp4_quant_scale_index): NVFP4 flat and its swizzled twin, GGUF MXFP4 and
 * NVFP4 blocks (codes and scales in one buffer), pseudo-random bytes, every byte value. */
static void check_summary_naive(const fp4_qtensor *q, const uint8_t *pb, const uint8_t *sb,
                                float global)
{
    fp4_qsummary a;
    fp4_quant_summarize_bytes(q, pb, sb, global, &a);
    const int64_t K = q->dims[q->rank - 1], nb = K / q->block;
    int64_t hist[16] = {0}, zero = 0, nonfinite = 0, nan_bytes = 0, ff = 0;
    double lo = NAN, hi = NAN;
    for (int64_t r = 0; r < q->rows; r++) {
        for (int64_t k = 0; k < K; k++) hist[fp4_quant_code(q, pb, r, k)]++;
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t byte = sb[fp4_quant_scale_index(q, r, b)];
            const float v = fp4_quant_block_scale(q, byte, global);
            if (q->format == FP4_QF_NVFP4 && q->producer != FP4_QP_GGUF && (byte & 0x7F) == 0x7F)
                nan_bytes++;
            if (q->format == FP4_QF_MXFP4 && byte == 0xFF) ff++;
            if (!isfinite(v)) nonfinite++;
            else if (v == 0.0f) zero++;
            else {
                if (!(v >= lo)) lo = v;
                if (!(v <= hi)) hi = v;
            }
        }
    }
    for (int c = 0; c < 16; c++) assert_int_equal(a.histogram[c], hist[c]);
    assert_int_equal(a.scale_bytes, q->rows * nb);
    assert_int_equal(a.scale_zero, zero);
    assert_int_equal(a.scale_nonfinite, nonfinite);
    assert_int_equal(a.e4m3_nan, nan_bytes);
    assert_int_equal(a.e8m0_ff, ff);
    assert_true(a.scale_min == lo && a.scale_max == hi);
}

static void test_summary_pieces(void **state)
{
    (void)state;
    enum { R = 2100, K = 2048, C = K / 16, RP = 2176 };
    fp4_pario_set_threads(4);
    uint32_t x = 12345u;
    fp4_qtensor flat, sw, gm, gn;
    memset(&flat, 0, sizeof flat);
    flat.format = FP4_QF_NVFP4;
    flat.producer = FP4_QP_MODELOPT;
    flat.block = 16;
    flat.rank = 2;
    flat.dims[0] = R;
    flat.dims[1] = K;
    flat.rows = R;
    flat.scale_cols = C;
    flat.global = "w.weight_scale_2";
    sw = flat;
    sw.scale_layout = FP4_QS_SWIZZLED;
    uint8_t *packed = malloc((size_t)R * K / 2), *sflat = malloc((size_t)R * C);
    uint8_t *swz = malloc((size_t)RP * C);
    assert_non_null(packed);
    assert_non_null(sflat);
    assert_non_null(swz);
    for (int64_t i = 0; i < (int64_t)R * K / 2; i++) packed[i] = (uint8_t)((x = x * 1664525u + 1013904223u) >> 24);
    for (int64_t i = 0; i < (int64_t)R * C; i++) sflat[i] = (uint8_t)((x = x * 1664525u + 1013904223u) >> 24);
    memset(swz, 0x7F, (size_t)RP * C); /* the padding: never counted */
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++) swz[fp4_quant_scale_index(&sw, r, c)] = sflat[r * C + c];
    check_summary_naive(&flat, packed, sflat, 0.001f);
    check_summary_naive(&sw, packed, swz, 0.001f);
    /* GGUF: MXFP4 17-byte blocks of 32, NVFP4 36-byte blocks of 64 (4 sub-block scales) */
    memset(&gm, 0, sizeof gm);
    gm.format = FP4_QF_MXFP4;
    gm.producer = FP4_QP_GGUF;
    gm.scale_layout = FP4_QS_GGUF;
    gm.block = 32;
    gm.rank = 2;
    gm.dims[0] = R;
    gm.dims[1] = K;
    gm.rows = R;
    gm.scale_cols = K / 32;
    gn = gm;
    gn.format = FP4_QF_NVFP4;
    gn.block = 16;
    gn.scale_cols = K / 16;
    const size_t gbytes = (size_t)R * (K / 32) * 17 > (size_t)R * (K / 64) * 36
                              ? (size_t)R * (K / 32) * 17 : (size_t)R * (K / 64) * 36;
    uint8_t *g = malloc(gbytes);
    assert_non_null(g);
    for (size_t i = 0; i < gbytes; i++) g[i] = (uint8_t)((x = x * 1664525u + 1013904223u) >> 24);
    check_summary_naive(&gm, g, g, 1.0f);
    check_summary_naive(&gn, g, g, 0.5f);
    free(g);
    free(packed);
    free(sflat);
    free(swz);
    fp4_pario_set_threads(1);
}

/* fp4_quant_summarize_bytes: a swizzled tensor summarises as its flat twin (the padding,
 * 0x7F here, never counted), the histogram is fp4_quant_code's element by element, min and max
 * those of the decoded scales; MXFP4 known answers for E8M0 0xFF and 0x00. */
static void test_summary(void **state)
{
    (void)state;
    enum { R = 130, K = 80, C = K / 16, RP = 256, CP = 8 };
    fp4_qtensor flat, sw;
    memset(&flat, 0, sizeof flat);
    flat.format = FP4_QF_NVFP4;
    flat.producer = FP4_QP_MODELOPT;
    flat.block = 16;
    flat.rank = 2;
    flat.dims[0] = R;
    flat.dims[1] = K;
    flat.rows = R;
    flat.scale_cols = C;
    flat.global = "w.weight_scale_2";
    sw = flat;
    sw.scale_layout = FP4_QS_SWIZZLED;
    sw.scale_cols = CP;
    static uint8_t packed[R * K / 2], sflat[R * C], padded[RP][CP], swz[RP * CP];
    for (int i = 0; i < R * K / 2; i++) packed[i] = (uint8_t)(i * 37 + 11);
    memset(padded, 0x7F, sizeof padded);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++)
            padded[r][c] = sflat[r * C + c] = (uint8_t)((r * 7 + c * 3) % 60);
    int o = 0;
    for (int r1 = 0; r1 < RP / 128; r1++)
        for (int c1 = 0; c1 < CP / 4; c1++)
            for (int j = 0; j < 32; j++)
                for (int i = 0; i < 4; i++)
                    for (int k = 0; k < 4; k++) swz[o++] = padded[r1 * 128 + i * 32 + j][c1 * 4 + k];
    fp4_qsummary a, b;
    fp4_quant_summarize_bytes(&flat, packed, sflat, 0.001f, &a);
    fp4_quant_summarize_bytes(&sw, packed, swz, 0.001f, &b);
    int64_t hist[16] = {0}, zero = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (int r = 0; r < R; r++) {
        for (int k = 0; k < K; k++) hist[fp4_quant_code(&flat, packed, r, k)]++;
        for (int c = 0; c < C; c++) {
            const float s = fp4_quant_block_scale(&flat, sflat[r * C + c], 0.001f);
            if (s == 0.0f) zero++;
            else {
                lo = s < lo ? s : lo;
                hi = s > hi ? s : hi;
            }
        }
    }
    for (int c = 0; c < 16; c++) {
        assert_int_equal(a.histogram[c], hist[c]);
        assert_int_equal(b.histogram[c], hist[c]);
    }
    assert_true(zero > 0);
    const fp4_qsummary *v[2] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        assert_string_equal(v[i]->format, "nvfp4");
        assert_string_equal(v[i]->producer, "modelopt");
        assert_int_equal(v[i]->block, 16);
        assert_int_equal(v[i]->scale_bytes, R * C);
        assert_int_equal(v[i]->e4m3_nan, 0);
        assert_int_equal(v[i]->e8m0_ff, 0);
        assert_int_equal(v[i]->scale_zero, zero);
        assert_int_equal(v[i]->scale_nonfinite, 0);
        assert_true(v[i]->scale_min == lo && v[i]->scale_max == hi);
        assert_true(v[i]->tensor_scale == (double)0.001f);
    }
    /* MXFP4, one row of two blocks: E8M0 0xFF (2^128: inf) and 0x00 (2^-127); codes 0 and 8 */
    fp4_qtensor mx;
    memset(&mx, 0, sizeof mx);
    mx.format = FP4_QF_MXFP4;
    mx.producer = FP4_QP_COMPRESSED_TENSORS;
    mx.block = 32;
    mx.rank = 2;
    mx.dims[0] = 1;
    mx.dims[1] = 64;
    mx.rows = 1;
    mx.scale_cols = 2;
    uint8_t mp[32], ms[2] = {0xFF, 0x00};
    memset(mp, 0x80, sizeof mp);
    fp4_quant_summarize_bytes(&mx, mp, ms, 1.0f, &a);
    assert_int_equal(a.histogram[0], 32);
    assert_int_equal(a.histogram[8], 32);
    assert_int_equal(a.scale_bytes, 2);
    assert_int_equal(a.e8m0_ff, 1);
    assert_int_equal(a.e4m3_nan, 0);
    assert_int_equal(a.scale_nonfinite, 1);
    assert_int_equal(a.scale_zero, 0);
    assert_true(a.scale_min == ldexp(1.0, -127) && a.scale_max == ldexp(1.0, -127));
    assert_true(isnan(a.tensor_scale));
}

/* The fixtures: one logical tensor per module, decoded bit for bit as the numpy writer's own
 * decode (testdata/quantized/expected/). */
static void check_fixture_prefixed(const char *dir, const char *expected, const char *prefix,
                                   int nq, fp4_qformat f, fp4_qproducer p)
{
    fp4_source *s = NULL, *e = NULL;
    fp4_qset qs;
    assert_int_equal(fp4_source_open(dir, &s), FP4_OK);
    assert_int_equal(fp4_source_open(expected, &e), FP4_OK);
    assert_int_equal(fp4_quant_scan(s, &qs), FP4_OK);
    assert_int_equal(qs.n, nq);
    for (int i = 0; i < qs.n; i++) {
        const fp4_qtensor *q = &qs.t[i];
        if (q->problem[0]) fail_msg("%s: %s", q->name, q->problem);
        assert_int_equal(q->format, f);
        assert_int_equal(q->producer, p);
        fp4_tensor_desc d;
        char ename[512];
        snprintf(ename, sizeof ename, "%s%s", prefix, q->name);
        assert_int_equal(fp4_source_describe(e, ename, &d), FP4_OK);
        assert_int_equal(d.nelems, q->rows * q->dims[q->rank - 1]);
        float *want = malloc((size_t)d.nelems * sizeof *want);
        float *got = malloc((size_t)d.nelems * sizeof *got);
        assert_non_null(want);
        assert_non_null(got);
        assert_int_equal(fp4_source_read_f32(e, &d, 0, 0, d.dims[0], want), FP4_OK);
        assert_int_equal(fp4_quant_read(s, q, 0, q->rows, got), FP4_OK);
        for (int64_t k = 0; k < d.nelems; k++) {
            if (bits(got[k]) != bits(want[k]))
                fail_msg("%s: element %lld: %.9g, expected %.9g", q->name, (long long)k,
                         (double)got[k], (double)want[k]);
        }
        /* every member names this tensor */
        assert_int_equal(fp4_qset_find(&qs, q->packed), i);
        assert_int_equal(fp4_qset_find(&qs, q->scale), i);
        if (q->global) assert_int_equal(fp4_qset_find(&qs, q->global), i);
        free(want);
        free(got);
        fp4_tensor_desc_free(&d);
    }
    assert_int_equal(fp4_qset_find(&qs, "lm_head.weight"), -1);
    fp4_qset_free(&qs);
    fp4_source_close(s);
    fp4_source_close(e);
}

static void check_fixture(const char *dir, const char *expected, int nq, fp4_qformat f,
                          fp4_qproducer p)
{
    check_fixture_prefixed(dir, expected, "", nq, f, p);
}

/* Checkpoints written by the producers' own code (scripts/make_producer_testdata.py: ModelOpt's
 * export_hf_checkpoint, compressed-tensors' compressors; gpt-oss experts decoded by
 * transformers), decoded bit for bit as the producers' own dequantize functions decode them
 * (producer/expected.safetensors, "<fixture>/<name>"). */
static void test_fixture_producers(void **state)
{
    (void)state;
    const char *P = "testdata/quantized/producer";
    char dir[256], exp[256];
    snprintf(exp, sizeof exp, "%s/expected.safetensors", P);
    snprintf(dir, sizeof dir, "%s/modelopt_nvfp4", P);
    check_fixture_prefixed(dir, exp, "modelopt_nvfp4/", 7, FP4_QF_NVFP4, FP4_QP_MODELOPT);
    snprintf(dir, sizeof dir, "%s/ct_nvfp4", P);
    check_fixture_prefixed(dir, exp, "ct_nvfp4/", 7, FP4_QF_NVFP4, FP4_QP_COMPRESSED_TENSORS);
    snprintf(dir, sizeof dir, "%s/ct_mxfp4", P);
    check_fixture_prefixed(dir, exp, "ct_mxfp4/", 7, FP4_QF_MXFP4, FP4_QP_COMPRESSED_TENSORS);
    /* gpt-oss experts as transformers' convert_moe_packed_tensors decodes them (fp32) */
    snprintf(dir, sizeof dir, "%s/gptoss_mxfp4", P);
    check_fixture_prefixed(dir, exp, "gptoss_mxfp4/", 2, FP4_QF_MXFP4, FP4_QP_GPT_OSS);
}

static void test_fixture_modelopt(void **state)
{
    (void)state;
    check_fixture("testdata/quantized/modelopt_nvfp4",
                  "testdata/quantized/expected/modelopt_nvfp4.safetensors", 4, FP4_QF_NVFP4,
                  FP4_QP_MODELOPT);
}

static void test_fixture_ct(void **state)
{
    (void)state;
    check_fixture("testdata/quantized/ct_nvfp4",
                  "testdata/quantized/expected/ct_nvfp4.safetensors", 4, FP4_QF_NVFP4,
                  FP4_QP_COMPRESSED_TENSORS);
    check_fixture("testdata/quantized/ct_mxfp4",
                  "testdata/quantized/expected/ct_mxfp4.safetensors", 4, FP4_QF_MXFP4,
                  FP4_QP_COMPRESSED_TENSORS);
}

/* ModelOpt MXFP4 (the numpy writer following mxfp4_tensor.py: float ceil E8M0 rule, exact
 * midpoints toward zero, an exact 0 as code 8): decoded as MXFP4QTensor.dequantize, code 8 -0 */
static void test_fixture_modelopt_mx(void **state)
{
    (void)state;
    check_fixture("testdata/quantized/modelopt_mxfp4",
                  "testdata/quantized/expected/modelopt_mxfp4.safetensors", 4, FP4_QF_MXFP4,
                  FP4_QP_MODELOPT);
}

static void test_fixture_gptoss(void **state)
{
    (void)state;
    check_fixture("testdata/quantized/gptoss_mxfp4",
                  "testdata/quantized/expected/gptoss_mxfp4.safetensors", 1, FP4_QF_MXFP4,
                  FP4_QP_GPT_OSS);
}

static const fp4_qtensor *by_name(const fp4_qset *qs, const char *name)
{
    for (int i = 0; i < qs->n; i++)
        if (!strcmp(qs->t[i].name, name)) return &qs->t[i];
    fail_msg("no quantized tensor %s", name);
    return NULL;
}

static void assert_problem(const fp4_qset *qs, const char *name, const char *part)
{
    const fp4_qtensor *q = by_name(qs, name);
    if (!strstr(q->problem, part)) fail_msg("%s: problem '%s' lacks '%s'", name, q->problem, part);
}

static void test_partner_errors(void **state)
{
    (void)state;
    fp4_source *s = NULL;
    fp4_qset qs;
    assert_int_equal(fp4_source_open("testdata/quantized/bad_partners", &s), FP4_OK);
    assert_int_equal(fp4_quant_scan(s, &qs), FP4_OK);
    assert_int_equal(qs.n, 4);
    assert_problem(&qs, "model.layers.0.self_attn.q_proj.weight", "weight_scale_2 missing");
    assert_problem(&qs, "model.layers.0.self_attn.k_proj.weight",
                   "weight_scale is 16x8, expected 16x4");
    assert_problem(&qs, "model.layers.0.mlp.up_proj.weight_scale", "no packed u8 codes");
    assert_string_equal(by_name(&qs, "model.layers.0.self_attn.v_proj.weight")->problem, "");
    /* a tensor with a problem is not decoded */
    float buf[64 * 16];
    assert_int_equal(fp4_quant_read(s, by_name(&qs, "model.layers.0.self_attn.q_proj.weight"),
                                    0, 1, buf),
                     FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "weight_scale_2 missing"));

    /* fold: one entry per logical tensor, members gone, the rest in place */
    fp4_tensor_desc *list = NULL;
    int n = 0, *qidx = NULL;
    assert_int_equal(fp4_source_select(s, NULL, 0, &list, &n), FP4_OK);
    assert_int_equal(n, 10);
    assert_int_equal(fp4_quant_fold(&qs, list, &n, &qidx), FP4_OK);
    assert_int_equal(n, 5);
    int plain = 0;
    for (int i = 0; i < n; i++) {
        if (qidx[i] < 0) {
            assert_string_equal(list[i].name, "lm_head.weight");
            plain++;
            continue;
        }
        assert_string_equal(list[i].name, qs.t[qidx[i]].name);
        assert_false(list[i].numeric);
        assert_string_equal(list[i].dtype, "nvfp4");
        assert_string_equal(list[i].problem, qs.t[qidx[i]].problem);
    }
    assert_int_equal(plain, 1);
    free(qidx);
    fp4_tensor_desc_free_list(list, n);
    fp4_qset_free(&qs);
    fp4_source_close(s);
}

/* The config declares, the tensors decide: a contradiction is each tensor's problem. */
static void test_config_contradictions(void **state)
{
    (void)state;
    fp4_source *s = NULL;
    fp4_qset qs;
    assert_int_equal(fp4_source_open("testdata/quantized/bad_config/model.safetensors", &s),
                     FP4_OK);
    assert_int_equal(fp4_quant_scan(s, &qs), FP4_OK);
    assert_int_equal(qs.n, 4);
    for (int i = 0; i < qs.n; i++)
        assert_non_null(strstr(qs.t[i].problem, "config.json declares compressed-tensors"));
    fp4_qset_free(&qs);
    fp4_source_close(s);

    assert_int_equal(fp4_source_open("testdata/quantized/bad_exclude", &s), FP4_OK);
    assert_int_equal(fp4_quant_scan(s, &qs), FP4_OK);
    assert_int_equal(qs.n, 4);
    assert_problem(&qs, "model.layers.0.mlp.down_proj.weight",
                   "hf_quant_config.json exclude_modules names model.layers.0.mlp.down_proj");
    assert_string_equal(by_name(&qs, "model.layers.0.self_attn.q_proj.weight")->problem, "");
    fp4_qset_free(&qs);
    fp4_source_close(s);

    /* the declared format is read */
    assert_int_equal(fp4_source_open("testdata/quantized/modelopt_nvfp4", &s), FP4_OK);
    assert_int_equal(fp4_quant_scan(s, &qs), FP4_OK);
    assert_string_equal(qs.declared, "hf_quant_config.json: modelopt W4A16_NVFP4");
    fp4_qset_free(&qs);
    fp4_source_close(s);
}

/* A checkpoint cut short by another process after it was opened (its mapping then holds
 * fewer pages): the per-tensor scale and the input scale are copied, the packed codes and block
 * scales decoded (fp4_quant_read) and summarised (fp4_quant_summarize) under io/mapguard.h, so
 * each read is an error saying the file shrank and naming the member or tensor, never SIGBUS. */
static void copy_file(const char *from, const char *dir, const char *name)
{
    char to[4200], cmd[8600];
    snprintf(to, sizeof to, "%s/%s", dir, name);
    snprintf(cmd, sizeof cmd, "cp -- '%s' '%s'", from, to);
    assert_int_equal(system(cmd), 0);
}

static void test_scalars_shrunk(void **state)
{
    (void)state;
    char *d = fp4t_tmpdir();
    copy_file("testdata/quantized/producer/modelopt_nvfp4/model.safetensors", d,
              "model.safetensors");
    copy_file("testdata/quantized/producer/modelopt_nvfp4/hf_quant_config.json", d,
              "hf_quant_config.json");
    fp4_source *s = NULL;
    fp4_qset qs;
    assert_int_equal(fp4_source_open(d, &s), FP4_OK);
    assert_int_equal(fp4_quant_scan(s, &qs), FP4_OK);
    const int i = fp4_qset_find(&qs, "model.layers.0.self_attn.k_proj.weight");
    assert_true(i >= 0);
    const fp4_qtensor *q = &qs.t[i];
    assert_string_equal(q->problem, "");
    assert_non_null(q->global);
    assert_non_null(q->input_scale);
    char f[4200];
    snprintf(f, sizeof f, "%s/model.safetensors", d);
    /* first the block scales and packed codes gone (bytes 11920..32656; the scalars, bytes
     * 3288..3344, stay in the first page): decode and summary say so, never SIGBUS */
    assert_int_equal(truncate(f, 4096), 0);
    float rows[2 * 64];
    assert_int_equal(fp4_quant_read(s, q, 0, 2, rows), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "model.layers.0.self_attn.k_proj.weight: the file "
                                             "shrank while it was read (truncated)"));
    fp4_qsummary sum;
    assert_int_equal(fp4_quant_summarize(s, q, &sum), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "model.layers.0.self_attn.k_proj.weight: the file "
                                             "shrank while it was read (truncated)"));
    assert_int_equal(sum.scale_bytes, 0);
    assert_int_equal(truncate(f, 0), 0);
    const uint8_t *pb = NULL, *sb = NULL;
    int64_t np = 0, ns = 0;
    float g = 0.0f, v = 0.0f;
    assert_int_equal(fp4_quant_bytes_n(s, q, &pb, &np, &sb, &ns, &g), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "k_proj.weight_scale_2: the file shrank while it "
                                             "was read (truncated)"));
    assert_int_equal(fp4_quant_input_scale(s, q, &v), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "k_proj.input_scale: the file shrank while it "
                                             "was read (truncated)"));
    assert_true(isnan(v));
    fp4_qset_free(&qs);
    fp4_source_close(s);
    fp4t_rmtree(d);
}

/* Unquantized checkpoints and other formats: nothing found. */
static void test_plain_sources(void **state)
{
    (void)state;
    fp4_source *s = NULL;
    fp4_qset qs;
    assert_int_equal(fp4_source_open("testdata/quantized/source", &s), FP4_OK);
    assert_int_equal(fp4_quant_scan(s, &qs), FP4_OK);
    assert_int_equal(qs.n, 0);
    fp4_qset_free(&qs);
    fp4_source_close(s);
    assert_int_equal(fp4_source_open("testdata/gpt_ckpt_small.h5", &s), FP4_OK);
    assert_int_equal(fp4_quant_scan(s, &qs), FP4_OK);
    assert_int_equal(qs.n, 0);
    fp4_qset_free(&qs);
    fp4_source_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* first: cmocka sets its own SIGBUS action for each test and restores the one before
         * after it, so io/mapguard.h's (installed once, at its first use) stands only in the
         * test that first maps a file */
        cmocka_unit_test(test_scalars_shrunk),
        cmocka_unit_test(test_e2m1_table),
        cmocka_unit_test(test_nibble_order),
        cmocka_unit_test(test_nvfp4_orders),
        cmocka_unit_test(test_mxfp4_extremes),
        cmocka_unit_test(test_ct_zero_block),
        cmocka_unit_test(test_swizzled_scales),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_summary_pieces),
        cmocka_unit_test(test_fixture_modelopt),
        cmocka_unit_test(test_fixture_producers),
        cmocka_unit_test(test_fixture_ct),
        cmocka_unit_test(test_fixture_gptoss), cmocka_unit_test(test_fixture_modelopt_mx),
        cmocka_unit_test(test_partner_errors),
        cmocka_unit_test(test_config_contradictions),
        cmocka_unit_test(test_plain_sources),
    };
    return cmocka_run_group_tests_name("quantized", tests, NULL, NULL);
}
