/* test_backend.c — backend.h on the CPU engine: device selection, the analysis protocol, and
 * determinism (SPEC §7): results equal fp4_quantize_rows bit for bit for any thread count and
 * any slab split. */
#include "testutil.h"

#include <math.h>
#include <omp.h>

#include "backend/backend.h"
#include "backend/impl.h"
#include "io/widen.h"
#include "engine/engine.h"
#include "num/metrics.h"
#include "num/quant.h"
#include "num/rht.h"

enum { R = 200, L = 300, NCFG = 10 };
static float data[R * L];
static fp4_rht_signs sg16, sg64;
static fp4_qconfig cfgs[NCFG];

static int setup(void **state)
{
    (void)state;
    uint64_t s = 12345;
    for (int i = 0; i < R * L; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(s >> 11) / 9007199254740992.0;
        data[i] = (float)((u - 0.5) * (i % 97 == 0 ? 40.0 : 2.0));
    }
    data[17 * L + 5] = NAN;
    data[150 * L + 299] = -INFINITY;
    for (int j = 0; j < 40; j++) data[60 * L + j] = 0.0f;
    if (fp4_rht_signs_make("te", 16, &sg16) || fp4_rht_signs_make("seed:9", 64, &sg64)) return -1;
    for (int c = 0; c < NCFG; c++) fp4_qconfig_default(&cfgs[c]);
    cfgs[1].scale = FP4_SCALE_NVFP4;
    cfgs[1].weight_2d = true;
    cfgs[1].rht = &sg16;
    cfgs[2].scale = FP4_SCALE_MXFP4;
    cfgs[2].mx_rule = FP4_MX_RCEIL;
    cfgs[2].format.id = FP4_FMT_INT4;
    cfgs[3].scale = FP4_SCALE_TENSOR;
    cfgs[3].rht = &sg64;
    cfgs[4].rounding = FP4_ROUND_SR;
    cfgs[4].seed = 99;
    cfgs[4].stream = 3;
    cfgs[4].block = 64;
    cfgs[4].rht = &sg16;
    cfgs[5].format = (fp4_format){FP4_FMT_E2M1, 3};
    cfgs[5].scale = FP4_SCALE_NVFP4;
    cfgs[5].rounding = FP4_ROUND_SR;
    cfgs[5].sr_bits = 8;
    cfgs[6].format.id = FP4_FMT_E3M0;
    cfgs[6].block = 128;
    /* configs that share cfgs[0]'s and cfgs[1]'s prepared rows (backend_cpu.c's grouped-row
     * cache): block 8 then 16 again reloads the cache each way; weight_2d units of 16 rows */
    cfgs[7].format.id = FP4_FMT_INT4;
    cfgs[7].block = 8;
    cfgs[8].format.id = FP4_FMT_E1M2;
    cfgs[9].format.id = FP4_FMT_INT4;
    cfgs[9].scale = FP4_SCALE_NVFP4;
    cfgs[9].weight_2d = true;
    cfgs[9].rht = &sg16;
    for (int c = 0; c < NCFG; c++)
        if (fp4_qconfig_check(&cfgs[c]) != FP4_OK) return -1;
    return 0;
}

static void reference(fp4_metrics *ref)
{
    for (int c = 0; c < NCFG; c++) {
        float a = 0.0f;
        fp4_amax_rows(&cfgs[c], data, R, L, &a);
        fp4_metrics_init(&ref[c]);
        assert_int_equal(fp4_quantize_rows(&cfgs[c], a, data, 0, R, L, NULL, &ref[c]), FP4_OK);
        fp4_metrics_finish(&ref[c]);
    }
}

static void run(fp4_backend *be, int64_t slab, fp4_metrics *out)
{
    fp4_analysis *an;
    assert_int_equal(fp4_analysis_begin(be, cfgs, NCFG, R, L, &an), FP4_OK);
    assert_true(fp4_analysis_needs_amax(an));
    for (int64_t r = 0; r < R; r += slab)
        assert_int_equal(fp4_analysis_amax(an, data + r * L, r + slab <= R ? slab : R - r), FP4_OK);
    for (int64_t r = 0; r < R; r += slab)
        assert_int_equal(fp4_analysis_feed(an, data + r * L, r + slab <= R ? slab : R - r), FP4_OK);
    assert_int_equal(fp4_analysis_end(an, out), FP4_OK);
}

static void test_open_devices(void **state)
{
    (void)state;
    fp4_backend *be = NULL;
    assert_int_equal(fp4_backend_open(FP4_DEVICE_CPU, 2, &be), FP4_OK);
    assert_string_equal(fp4_backend_name(be), "cpu");
    fp4_error(FP4_ERR_INPUT, "f.h5: /nope: no such dataset or group");
    fp4_backend_close(be);
    assert_string_equal(fp4_last_error(), "f.h5: /nope: no such dataset or group");
    fp4_error_clear();
    const fp4_status cuda = fp4_backend_open(FP4_DEVICE_CUDA, 0, &be);
    if (cuda == FP4_OK) {
        /* a CUDA build on a machine with a GPU: cuda opens, and auto picks it; closing it
         * keeps the error a failed run set before (the message the program prints) */
        assert_string_equal(fp4_backend_name(be), "cuda");
        fp4_error(FP4_ERR_INPUT, "f.h5: /nope: no such dataset or group");
        fp4_backend_close(be);
        assert_string_equal(fp4_last_error(), "f.h5: /nope: no such dataset or group");
        fp4_error_clear();
        assert_int_equal(fp4_backend_open(FP4_DEVICE_AUTO, 0, &be), FP4_OK);
        assert_string_equal(fp4_backend_name(be), "cuda");
        fp4_backend_close(be);
    } else {
        /* no CUDA backend or no GPU: cuda is a device error naming CUDA, auto is the CPU */
        assert_int_equal(cuda, FP4_ERR_DEVICE);
        assert_null(be);
        assert_non_null(strstr(fp4_last_error(), "CUDA"));
        assert_int_equal(fp4_backend_open(FP4_DEVICE_AUTO, 0, &be), FP4_OK);
        assert_string_equal(fp4_backend_name(be), "cpu");
        fp4_backend_close(be);
    }
    assert_int_equal(fp4_backend_open((fp4_device)7, 0, &be), FP4_ERR_USAGE);
    assert_null(be);
    assert_int_equal(fp4_backend_open(FP4_DEVICE_CPU, -1, &be), FP4_ERR_USAGE);
}

/* The registry (registry.c) names every device once, auto's order ends with the CPU (which
 * always opens), and a row a build lacks carries the message a named request gets. */
static void test_registry(void **state)
{
    (void)state;
    int cpu = 0, cuda = 0;
    for (int i = 0; i < fp4_nbackends; i++) {
        const fp4_backend_entry *e = &fp4_backends[i];
        assert_true(e->dev == FP4_DEVICE_CPU || e->dev == FP4_DEVICE_CUDA);
        cpu += e->dev == FP4_DEVICE_CPU;
        cuda += e->dev == FP4_DEVICE_CUDA;
        assert_true(e->open || (e->absent && *e->absent));
    }
    assert_int_equal(cpu, 1);
    assert_int_equal(cuda, 1);
    assert_int_equal(fp4_backends[fp4_nbackends - 1].dev, FP4_DEVICE_CPU);
    assert_non_null(fp4_backends[fp4_nbackends - 1].open);
#ifndef FP4_HAVE_CUDA_BACKEND
    assert_null(fp4_backends[0].open);
    fp4_backend *be = NULL;
    assert_int_equal(fp4_backend_open(FP4_DEVICE_CUDA, 0, &be), FP4_ERR_DEVICE);
    assert_string_equal(fp4_last_error(), fp4_backends[0].absent);
#endif
}

static void test_equals_reference_any_threads_any_slab(void **state)
{
    (void)state;
    fp4_metrics ref[NCFG], got[NCFG];
    reference(ref);
    assert_true(ref[0].nan == 1 && ref[0].inf == 1 && ref[0].nonfinite_blocks == 2);
    const int threads[] = {1, 2, 3};
    const int64_t slabs[] = {R, 16, 48, 64};
    for (int t = 0; t < 3; t++)
        for (int s = 0; s < 4; s++) {
            fp4_backend *be;
            assert_int_equal(fp4_backend_open(FP4_DEVICE_CPU, threads[t], &be), FP4_OK);
            run(be, slabs[s], got);
            for (int c = 0; c < NCFG; c++) assert_memory_equal(&got[c], &ref[c], sizeof ref[c]);
            fp4_backend_close(be);
        }
}

static void test_omp_set_num_threads(void **state)
{
    (void)state;
    fp4_metrics m1[NCFG], m2[NCFG];
    fp4_backend *be;
    omp_set_num_threads(1);
    assert_int_equal(fp4_backend_open(FP4_DEVICE_CPU, 0, &be), FP4_OK);
    run(be, 32, m1);
    fp4_backend_close(be);
    omp_set_num_threads(2);
    assert_int_equal(fp4_backend_open(FP4_DEVICE_CPU, 0, &be), FP4_OK);
    run(be, 32, m2);
    fp4_backend_close(be);
    for (int c = 0; c < NCFG; c++) assert_memory_equal(&m1[c], &m2[c], sizeof m1[c]);
    assert_true(m1[0].sqnr_db > 15.0 && m1[0].sqnr_db < 25.0);
}

/* Many short rows: the CPU backend caps the rows per batch so that a batch's per-chunk sums
 * stay small (rows of 16 values have one chunk each); 100000 rows x 3 configs span several
 * batches, whose sums must merge to fp4_quantize_rows' bits. */
static void test_many_short_rows_span_batches(void **state)
{
    (void)state;
    enum { SR = 100000, SL = 16, SC = 3 };
    float *x = malloc(sizeof(float) * SR * SL);
    assert_non_null(x);
    uint64_t s = 777;
    for (int i = 0; i < SR * SL; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)(((double)(s >> 11) / 9007199254740992.0 - 0.5) * (i % 61 == 0 ? 30.0 : 2.0));
    }
    fp4_qconfig c[SC];
    for (int k = 0; k < SC; k++) fp4_qconfig_default(&c[k]);
    c[1].format.id = FP4_FMT_INT4;
    c[1].rht = &sg16;
    c[2].scale = FP4_SCALE_NVFP4;
    for (int k = 0; k < SC; k++) assert_int_equal(fp4_qconfig_check(&c[k]), FP4_OK);
    fp4_metrics ref[SC], got[SC];
    for (int k = 0; k < SC; k++) {
        float a = 0.0f;
        fp4_amax_rows(&c[k], x, SR, SL, &a);
        fp4_metrics_init(&ref[k]);
        assert_int_equal(fp4_quantize_rows(&c[k], a, x, 0, SR, SL, NULL, &ref[k]), FP4_OK);
        fp4_metrics_finish(&ref[k]);
    }
    fp4_backend *be;
    assert_int_equal(fp4_backend_open(FP4_DEVICE_CPU, 2, &be), FP4_OK);
    fp4_analysis *an;
    assert_int_equal(fp4_analysis_begin(be, c, SC, SR, SL, &an), FP4_OK);
    assert_int_equal(fp4_analysis_amax(an, x, SR), FP4_OK);
    assert_int_equal(fp4_analysis_feed(an, x, SR), FP4_OK);
    assert_int_equal(fp4_analysis_end(an, got), FP4_OK);
    for (int k = 0; k < SC; k++) assert_memory_equal(&got[k], &ref[k], sizeof ref[k]);
    fp4_backend_close(be);
    free(x);
}

/* Rows of zeros given as fp4_analysis_amax_zero/feed_zero (never-written storage: the CPU
 * backend counts them without analysing them) give fp4_quantize_rows' bits on the same rows
 * written out, for every config family (SR, RHT, weight_2d, mxfp4, tensor scale), runs of
 * zeros in the middle and at the end (a weight_2d tail under 16 rows), short and unaligned
 * runs without weight_2d, several runs per tensor (counts measured once), 1 and 3 threads. */
static void zero_rows_case(const fp4_qconfig *cf, int nc, const int64_t (*runs)[2], int nruns,
                           int64_t slab)
{
    float *x = malloc(sizeof data);
    assert_non_null(x);
    memcpy(x, data, sizeof data);
    for (int k = 0; k < nruns; k++)
        memset(x + runs[k][0] * L, 0, (size_t)(runs[k][1] - runs[k][0]) * L * sizeof *x);
    fp4_metrics ref[NCFG], got[NCFG];
    for (int c = 0; c < nc; c++) {
        float a = 0.0f;
        fp4_amax_rows(&cf[c], x, R, L, &a);
        fp4_metrics_init(&ref[c]);
        assert_int_equal(fp4_quantize_rows(&cf[c], a, x, 0, R, L, NULL, &ref[c]), FP4_OK);
        fp4_metrics_finish(&ref[c]);
    }
    for (int th = 1; th <= 3; th += 2) {
        fp4_backend *be;
        fp4_analysis *an;
        assert_int_equal(fp4_backend_open(FP4_DEVICE_CPU, th, &be), FP4_OK);
        assert_int_equal(fp4_analysis_begin(be, cf, nc, R, L, &an), FP4_OK);
        for (int pass = fp4_analysis_needs_amax(an) ? 0 : 1; pass < 2; pass++) {
            for (int64_t r = 0; r < R;) {
                int k = 0;
                while (k < nruns && !(runs[k][0] <= r && r < runs[k][1])) k++;
                int64_t n;
                fp4_status st;
                if (k < nruns) { /* a run of zeros: given without values, in slabs */
                    n = runs[k][1] - r < slab ? runs[k][1] - r : slab;
                    st = pass ? fp4_analysis_feed_zero(an, n) : fp4_analysis_amax_zero(an, n);
                } else {
                    n = 1;
                    while (r + n < R && n < slab) {
                        int z = 0;
                        for (int j = 0; j < nruns; j++) z |= runs[j][0] == r + n;
                        if (z) break;
                        n++;
                    }
                    st = pass ? fp4_analysis_feed(an, x + r * L, n)
                              : fp4_analysis_amax(an, x + r * L, n);
                }
                assert_int_equal(st, FP4_OK);
                r += n;
            }
        }
        assert_int_equal(fp4_analysis_end(an, got), FP4_OK);
        for (int c = 0; c < nc; c++) assert_memory_equal(&got[c], &ref[c], sizeof ref[c]);
        fp4_backend_close(be);
    }
    free(x);
}

/* Stored 16-bit words (fp4_analysis_amax_words / feed_words: the CPU backend widens each row
 * group itself) give fp4_quantize_rows' bits on the fp32 rows io/widen.c makes of them: bf16
 * and f16 with NaN payloads of both signs, infinities, subnormals (also a tensor of nothing
 * else, whose amax is one) and -0, every config family
 * (RHT, weight_2d, SR, mxfp4, tensor scale), 1-3 threads, slabs of 16, 48 and all rows, a run
 * of zero rows given as amax_zero/feed_zero, and rows longer than the amax pass's piece (one
 * row split between threads). */
static void words_case(int64_t WR, int64_t WL, const fp4_qconfig *cf, int nc, fp4_words kind,
                       uint64_t seed, bool tiny)
{
    const size_t nv = (size_t)(WR * WL);
    uint16_t *w = malloc(nv * sizeof *w);
    float *x = malloc(nv * sizeof *x);
    fp4_metrics *ref = calloc((size_t)nc, sizeof *ref), *got = calloc((size_t)nc, sizeof *got);
    assert_true(w && x && ref && got);
    const bool bf = kind == FP4_WORDS_BF16;
    for (size_t i = 0; i < nv; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        const uint32_t r = (uint32_t)(seed >> 32);
        /* exponents around 1.0, some tiny (subnormal) and some large */
        const uint32_t e = r % 64 < 3 || tiny ? 0 : (bf ? 120 : 10) + (r >> 8) % 12;
        w[i] = bf ? (uint16_t)((r & 0x8000u) | e << 7 | ((r >> 16) & 0x7fu))
                  : (uint16_t)((r & 0x8000u) | e << 10 | ((r >> 16) & 0x3ffu));
    }
    const uint16_t sb[] = {0x7f80, 0xff80, 0x7f81, 0xffc0, 0x7fff, 0x0001, 0x8001, 0x007f, 0x8000,
                           0x7f7f, 0xff7f};
    const uint16_t sh[] = {0x7c00, 0xfc00, 0x7c01, 0xfe00, 0x7fff, 0x0001, 0x8001, 0x03ff, 0x8000,
                           0x7bff, 0xfbff};
    /* long rows: the largest value in a row's third amax piece, where a piece that began off
     * a rotation group's boundary would change the rotated amax; tiny: every finite value
     * subnormal (the specials' largest finite values left out of both) */
    const bool big = WR > 2 && WL > 32868;
    for (int k = 0; k < (big || tiny ? 9 : 11); k++)
        w[((size_t)(3 + 7 * k) * 131u) % nv] = bf ? sb[k] : sh[k];
    if (big) w[2 * WL + 32868] = bf ? 0x4600 : 0x7000; /* 8192 */
    const bool zrun = WR >= 48; /* rows 32..47: zeros, given without values when slab is 16 */
    if (zrun) memset(w + 32 * WL, 0, (size_t)(16 * WL) * sizeof *w);
    assert_true(fp4_widen(bf ? FP4_STORED_BF16 : FP4_STORED_F16, false, w, x, nv));
    for (int c = 0; c < nc; c++) {
        float a = 0.0f;
        fp4_amax_rows(&cf[c], x, WR, WL, &a);
        fp4_metrics_init(&ref[c]);
        assert_int_equal(fp4_quantize_rows(&cf[c], a, x, 0, WR, WL, NULL, &ref[c]), FP4_OK);
        fp4_metrics_finish(&ref[c]);
    }
    const int64_t slabs[] = {WR, 16, 48};
    for (int th = 1; th <= 3; th++)
        for (int si = 0; si < 3; si++) {
            const int64_t slab = slabs[si];
            fp4_backend *be;
            fp4_analysis *an;
            assert_int_equal(fp4_backend_open(FP4_DEVICE_CPU, th, &be), FP4_OK);
            if (!getenv("FP4DIAG_CPU_WORDS")) assert_true(fp4_backend_takes_words(be, kind));
            assert_int_equal(fp4_analysis_begin(be, cf, nc, WR, WL, &an), FP4_OK);
            for (int pass = 0; pass < 2; pass++)
                for (int64_t r = 0; r < WR; r += slab) {
                    const int64_t n = WR - r < slab ? WR - r : slab;
                    fp4_status st;
                    if (zrun && slab == 16 && r == 32)
                        st = pass ? fp4_analysis_feed_zero(an, n) : fp4_analysis_amax_zero(an, n);
                    else
                        st = pass ? fp4_analysis_feed_words(an, w + r * WL, kind, n)
                                  : fp4_analysis_amax_words(an, w + r * WL, kind, n);
                    assert_int_equal(st, FP4_OK);
                }
            assert_int_equal(fp4_analysis_end(an, got), FP4_OK);
            for (int c = 0; c < nc; c++)
                if (memcmp(&got[c], &ref[c], sizeof ref[c]) != 0)
                    fail_msg("%s words, config %d, %d threads, slab %lld: not fp32's bits",
                             bf ? "bf16" : "f16", c, th, (long long)slab);
            fp4_backend_close(be);
        }
    assert_true(ref[0].nan > 0 && ref[0].inf > 0);
    free(w);
    free(x);
    free(ref);
    free(got);
}

static void test_words_equal_fp32(void **state)
{
    (void)state;
    words_case(R, L, cfgs, NCFG, FP4_WORDS_BF16, 5, false);
    words_case(R, L, cfgs, NCFG, FP4_WORDS_F16, 6, false);
    words_case(R, L, cfgs, NCFG, FP4_WORDS_BF16, 9, true);
    words_case(R, L, cfgs, NCFG, FP4_WORDS_F16, 10, true);
    /* rows of 40000: three amax pieces per row (16384, 16384, 7232) */
    const fp4_qconfig lc[] = {cfgs[0], cfgs[1], cfgs[3], cfgs[5], cfgs[9]};
    words_case(5, 40000, lc, 5, FP4_WORDS_BF16, 7, false);
    words_case(5, 40000, lc, 5, FP4_WORDS_F16, 8, false);
}

static void test_zero_rows(void **state)
{
    (void)state;
    /* every config (weight_2d among them): runs and slabs of whole 16-row groups, a tail */
    const int64_t aligned[][2] = {{32, 96}, {112, 128}, {144, 200}};
    zero_rows_case(cfgs, NCFG, aligned, 3, 48);
    zero_rows_case(cfgs, NCFG, aligned, 3, 16);
    /* no weight_2d: short and unaligned runs, odd slabs */
    fp4_qconfig flat[NCFG];
    int nf = 0;
    for (int c = 0; c < NCFG; c++)
        if (!cfgs[c].weight_2d) flat[nf++] = cfgs[c];
    const int64_t odd[][2] = {{0, 5}, {33, 70}, {71, 72}, {101, 150}, {190, 200}};
    zero_rows_case(flat, nf, odd, 5, 7);
    zero_rows_case(flat, nf, odd, 5, 200);
}

static void test_protocol_errors(void **state)
{
    (void)state;
    fp4_backend *be;
    fp4_analysis *an;
    fp4_metrics out[NCFG];
    assert_int_equal(fp4_backend_open(FP4_DEVICE_CPU, 2, &be), FP4_OK);
    /* feeding before the amax pass */
    assert_int_equal(fp4_analysis_begin(be, cfgs, NCFG, R, L, &an), FP4_OK);
    assert_int_equal(fp4_analysis_feed(an, data, 16), FP4_ERR_USAGE);
    fp4_analysis_abort(an);
    /* weight_2d: a slab of 10 rows followed by more */
    assert_int_equal(fp4_analysis_begin(be, cfgs, NCFG, R, L, &an), FP4_OK);
    assert_int_equal(fp4_analysis_amax(an, data, R), FP4_OK);
    assert_int_equal(fp4_analysis_feed(an, data, 10), FP4_OK);
    assert_int_equal(fp4_analysis_feed(an, data + 10 * L, 16), FP4_ERR_USAGE);
    fp4_analysis_abort(an);
    /* ending early */
    assert_int_equal(fp4_analysis_begin(be, cfgs, 1, R, L, &an), FP4_OK);
    assert_false(fp4_analysis_needs_amax(an));
    assert_int_equal(fp4_analysis_feed(an, data, 16), FP4_OK);
    assert_int_equal(fp4_analysis_end(an, out), FP4_ERR_USAGE);
    /* an invalid config */
    fp4_qconfig bad = cfgs[0];
    bad.block = 3;
    assert_int_equal(fp4_analysis_begin(be, &bad, 1, R, L, &an), FP4_ERR_USAGE);
    assert_null(an);
    fp4_backend_close(be);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_devices),
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_equals_reference_any_threads_any_slab),
        cmocka_unit_test(test_omp_set_num_threads),
        cmocka_unit_test(test_many_short_rows_span_batches),
        cmocka_unit_test(test_zero_rows),
        cmocka_unit_test(test_words_equal_fp32),
        cmocka_unit_test(test_protocol_errors),
    };
    return cmocka_run_group_tests_name("backend", tests, setup, NULL);
}
