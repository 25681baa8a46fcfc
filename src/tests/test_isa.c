/* test_isa.c — FP4DIAG_ISA's one decision (base/isa.c) reaches every CPU dispatch: under each
 * variant this CPU runs, the engine's quantizer, the RHT, the fp32 amax, the zero/NaN/Inf
 * counts and the f16 widening each run that variant's own code (fp4_isa_ran), with the known
 * answers and the plain C reference's bits. A variant this CPU lacks is skipped with a message
 * (avx512 on the 2-core AVX2 VM: it runs on the GPU host). The stored-words amax of the CPU
 * backend is covered by the CLI case isa_dispatch.sh. */
#include "testutil.h"

#include <math.h>

#include "base/common.h"
#include "base/isa.h"
#include "engine/engine.h"
#include "io/widen.h"
#include "num/metrics.h"
#include "num/quant.h"
#include "num/rht.h"

/* The code each dispatch runs under isa: x86 variants have their own; neon has its own
 * quantizer, the rest of its dispatches are the portable code (generic). */
static int want_for(fp4_isa isa, fp4_isa_site site)
{
    if (isa == FP4_ISA_NEON && site != FP4_ISA_SITE_QUANT) return FP4_ISA_GENERIC;
    return isa;
}

static void check_ran(fp4_isa isa, fp4_isa_site site)
{
    const int ran = fp4_isa_ran(site);
    if (ran != want_for(isa, site))
        fail_msg("FP4DIAG_ISA=%s: %s ran %s, want %s", fp4_isa_name(isa), fp4_isa_site_name(site),
                 ran < 0 ? "nothing" : fp4_isa_name((fp4_isa)ran),
                 fp4_isa_name((fp4_isa)want_for(isa, site)));
}

static void run_variant(fp4_isa isa)
{
    if (!fp4_isa_cpu_runs(isa)) {
        print_message("skip: this build or CPU does not run %s (x86 variants run on an x86 host "
                      "that has them, e.g. avx512 on the GPU machine; neon on aarch64)\n",
                      fp4_isa_name(isa));
        skip();
    }
    assert_true(fp4_isa_use(isa));
    assert_int_equal(fp4_isa_active(), isa);
    assert_int_equal(fp4_engine_isa(fp4_engine_active()), isa);
    fp4_isa_ran_reset();
    for (int s = 0; s < FP4_ISA_SITE_COUNT; s++) assert_int_equal(fp4_isa_ran((fp4_isa_site)s), -1);

    /* RHT: TE's signs on all ones (known answer), and 256 values against the plain C bits */
    fp4_rht_signs sg;
    assert_int_equal(fp4_rht_signs_make("te", 16, &sg), FP4_OK);
    float x[256], y[256], yref[256];
    for (int i = 0; i < 16; i++) x[i] = 1.0f;
    fp4_rht_forward(&sg, x, y, 16);
    const float y1[16] = {-1, 0, 1, 0, 1, 0, -1, 0, 1, 2, 1, 0, 1, 0, 1, -2};
    for (int i = 0; i < 16; i++) assert_true(y[i] == y1[i]);
    check_ran(isa, FP4_ISA_SITE_RHT);
    assert_int_equal(fp4_rht_signs_make("seed:5", 256, &sg), FP4_OK);
    for (int i = 0; i < 256; i++) x[i] = (float)((i * 37) % 101) / 7.0f - 6.0f;
    fp4_rht_forward(&sg, x, y, 256);
    assert_true(fp4_rht_forward_impl(FP4_RHT_IMPL_SCALAR, &sg, x, yref, 256));
    assert_memory_equal(y, yref, sizeof y);

    /* amax over finite values: NaN/Inf skipped, -FLT_MAX counted (known answer) */
    fp4_qconfig c;
    fp4_qconfig_default(&c);
    float a[67];
    for (int i = 0; i < 67; i++) a[i] = (i % 3 == 0) ? NAN : (i % 3 == 1) ? -INFINITY : 0.25f;
    a[40] = -6.5f;
    fp4_isa_ran_reset();
    assert_true(fp4_amax_row(&c, a, 67) == 6.5f);
    check_ran(isa, FP4_ISA_SITE_AMAX);
    assert_int_equal(fp4_isa_ran(FP4_ISA_SITE_RHT), -1); /* no RHT in this config */

    /* zero/NaN/Inf counts of the input (known answer) */
    float z[100];
    for (int i = 0; i < 100; i++) z[i] = i < 10 ? 0.0f : i < 13 ? -NAN : i < 20 ? INFINITY : 1.0f;
    z[50] = -0.0f;
    fp4_metrics m;
    fp4_metrics_init(&m);
    fp4_input_counts(z, 100, &m);
    assert_int_equal(m.zero, 11);
    assert_int_equal(m.nan, 3);
    assert_int_equal(m.inf, 7);
    check_ran(isa, FP4_ISA_SITE_COUNTS);

    /* the engine's quantizer (grouped RTNE kernel) on 4 rows of 256 */
    assert_int_equal(fp4_qconfig_check(&c), FP4_OK);
    float rows[4 * 256];
    for (int i = 0; i < 4 * 256; i++) rows[i] = (float)((i * 53) % 211) / 50.0f - 2.0f;
    float amax = 0.0f;
    fp4_amax_rows(&c, rows, 4, 256, &amax);
    fp4_metrics_init(&m);
    assert_int_equal(fp4_quantize_rows(&c, amax, rows, 0, 4, 256, NULL, &m), FP4_OK);
    check_ran(isa, FP4_ISA_SITE_QUANT);
    assert_int_equal(m.elements, 4 * 256);

    /* f16 widening: the x86 variants take F16C where the CPU has it, generic the loop */
    const uint16_t h[9] = {0x3c00, 0xc000, 0x7c00, 0xfc00, 0x0001, 0x8000, 0x7bff, 0x3555, 0x0};
    float w[9];
    assert_true(fp4_widen(FP4_STORED_F16, false, h, w, 9));
    assert_true(w[0] == 1.0f && w[1] == -2.0f && w[2] == INFINITY && w[3] == -INFINITY);
    assert_true(w[4] == 0x1p-24f && fp4c_f2u(w[5]) == 0x80000000u && w[6] == 65504.0f);
    assert_true(w[7] == 0x1.554p-2f && fp4c_f2u(w[8]) == 0u);
    const int wran = fp4_isa_ran(FP4_ISA_SITE_WIDEN_F16);
    const bool x86 = isa == FP4_ISA_AVX2 || isa == FP4_ISA_AVX512;
    assert_int_equal(wran, x86 && fp4_widen_f16c() ? (int)isa : FP4_ISA_GENERIC);
    fp4_isa_use(FP4_ISA_COUNT);
}

static void test_generic(void **state) { (void)state; run_variant(FP4_ISA_GENERIC); }
static void test_avx2(void **state) { (void)state; run_variant(FP4_ISA_AVX2); }
static void test_avx512(void **state) { (void)state; run_variant(FP4_ISA_AVX512); }
static void test_neon(void **state) { (void)state; run_variant(FP4_ISA_NEON); }

/* names, parsing (the unknown value escaped), fp4_isa_use's refusals and reset */
static void test_names_and_use(void **state)
{
    (void)state;
    for (int v = 0; v < FP4_ISA_COUNT; v++) {
        fp4_isa back;
        assert_int_equal(fp4_isa_parse(fp4_isa_name((fp4_isa)v), &back), FP4_OK);
        assert_int_equal(back, v);
    }
    fp4_isa back;
    assert_int_equal(fp4_isa_parse("avx2\033[31m", &back), FP4_ERR_USAGE);
    assert_non_null(strstr(fp4_last_error(), "avx2\\x1B[31m"));
    assert_int_equal(fp4_isa_parse(NULL, &back), FP4_ERR_USAGE);
    assert_string_equal(fp4_isa_name(FP4_ISA_COUNT), "?");
    assert_string_equal(fp4_isa_site_name(FP4_ISA_SITE_RHT), "rht");
    assert_string_equal(fp4_isa_site_name(FP4_ISA_SITE_COUNT), "?");
    assert_true(fp4_isa_cpu_runs(FP4_ISA_GENERIC));
    const fp4_isa def = fp4_isa_active();
    assert_true(fp4_isa_cpu_runs(def));
    for (int v = 0; v < FP4_ISA_COUNT; v++)
        if (!fp4_isa_cpu_runs((fp4_isa)v)) {
            assert_false(fp4_isa_use((fp4_isa)v)); /* refused, nothing changed */
            assert_int_equal(fp4_isa_active(), def);
        }
    assert_true(fp4_isa_use(FP4_ISA_GENERIC));
    assert_int_equal(fp4_isa_active(), FP4_ISA_GENERIC);
    fp4_engine_use(NULL); /* the engine's reset is the ISA's */
    assert_int_equal(fp4_isa_active(), def);
    fp4_engine_use(fp4_engine_get(FP4_ISA_GENERIC));
    assert_int_equal(fp4_isa_active(), FP4_ISA_GENERIC);
    assert_true(fp4_isa_use(FP4_ISA_COUNT));
    assert_int_equal(fp4_isa_active(), def);
    assert_int_equal(fp4_isa_init(), FP4_OK); /* the test runs without FP4DIAG_ISA or valid */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_use), cmocka_unit_test(test_generic),
        cmocka_unit_test(test_avx2),          cmocka_unit_test(test_avx512),
        cmocka_unit_test(test_neon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
