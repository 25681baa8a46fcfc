/* test_config.c — the run configuration without argv (run/config.h): defaults, resolution of
 * each format's scale and block, merged repeats, the conflicts it refuses, and the qconfig list
 * (formats x RHT modes) with the rotated configs pointing at the config's own signs. */
#include "testutil.h"

#include "run/config.h"

static void test_defaults_resolve(void **state)
{
    (void)state;
    fp4_run_config c;
    fp4_run_config_default(&c, NULL, FP4_RHT_OFF);
    assert_int_equal(c.nformats, 3);
    assert_int_equal(c.formats[0].id, FP4_FMT_E2M1);
    assert_int_equal(c.formats[1].id, FP4_FMT_E1M2);
    assert_int_equal(c.formats[2].id, FP4_FMT_INT4);
    assert_int_equal(c.fmt_scale[0], -1);
    assert_int_equal(c.block, 16);
    assert_int_equal(c.axis, -1);
    assert_true(c.mem_limit == FP4_DEFAULT_MEM_LIMIT);
    assert_int_equal(c.device, FP4_DEVICE_AUTO);
    assert_null(c.output);
    assert_int_equal(fp4_run_config_finish(&c), FP4_OK);
    for (int f = 0; f < 3; f++) assert_int_equal(c.fmt_scale[f], FP4_SCALE_FP32);
    fp4_qconfig q[8];
    int n = -1;
    assert_int_equal(fp4_run_config_qconfigs(&c, q, 8, &n), FP4_OK);
    assert_int_equal(n, 3);
    for (int i = 0; i < n; i++) {
        assert_int_equal(q[i].block, 16);
        assert_null(q[i].rht);
    }
    assert_int_equal(q[1].format.id, FP4_FMT_E1M2);
}

/* --format nvfp4,mxfp4,e2m1 with no block given: each scale's own block; rht both doubles
 * the list, plain before rotated, rotated configs use c.signs. */
static void test_named_scales_rht_both(void **state)
{
    (void)state;
    fp4_run_config c;
    fp4_run_config_default(&c, "e2m1,e2m1,e2m1", FP4_RHT_BOTH);
    c.fmt_scale[0] = FP4_SCALE_NVFP4;
    c.fmt_scale[1] = FP4_SCALE_MXFP4;
    assert_int_equal(fp4_run_config_finish(&c), FP4_OK);
    assert_int_equal(c.nformats, 3);
    assert_int_equal(c.block, 16);
    fp4_qconfig q[8];
    int n = 0;
    assert_int_equal(fp4_run_config_qconfigs(&c, q, 8, &n), FP4_OK);
    assert_int_equal(n, 6);
    const int scale[6] = {FP4_SCALE_NVFP4, FP4_SCALE_NVFP4, FP4_SCALE_MXFP4,
                          FP4_SCALE_MXFP4, FP4_SCALE_FP32,  FP4_SCALE_FP32};
    const int block[6] = {16, 16, 32, 32, 16, 16};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(q[i].scale, scale[i]);
        assert_int_equal(q[i].block, block[i]);
        if (i % 2) assert_ptr_equal(q[i].rht, &c.signs);
        else assert_null(q[i].rht);
    }
    /* the cap is a usage error, not an overrun */
    assert_int_equal(fp4_run_config_qconfigs(&c, q, 5, &n), FP4_ERR_USAGE);
}

static void test_repeats_merged_block_default(void **state)
{
    (void)state;
    fp4_run_config c;
    fp4_run_config_default(&c, "int4,int4,e1m2", FP4_RHT_ON);
    c.scale = FP4_SCALE_MXFP4; /* not given: the block follows the scale */
    assert_int_equal(fp4_run_config_finish(&c), FP4_OK);
    assert_int_equal(c.nformats, 2);
    assert_int_equal(c.formats[0].id, FP4_FMT_INT4);
    assert_int_equal(c.formats[1].id, FP4_FMT_E1M2);
    assert_int_equal(c.block, 32);
    fp4_qconfig q[4];
    int n = 0;
    assert_int_equal(fp4_run_config_qconfigs(&c, q, 4, &n), FP4_OK);
    assert_int_equal(n, 2);
    assert_ptr_equal(q[0].rht, &c.signs);
    assert_int_equal(q[0].block, 32);
}

static void test_conflicts(void **state)
{
    (void)state;
    fp4_run_config c;
    /* a format's own scale against another given scale */
    fp4_run_config_default(&c, "e2m1", FP4_RHT_OFF);
    c.fmt_scale[0] = FP4_SCALE_NVFP4;
    c.scale = FP4_SCALE_MXFP4;
    c.scale_given = true;
    assert_int_equal(fp4_run_config_finish(&c), FP4_ERR_USAGE);
    assert_non_null(strstr(fp4_last_error(), "conflicts with --scale mxfp4"));
    /* the same scale not given: the format's own wins */
    fp4_run_config_default(&c, "e2m1", FP4_RHT_OFF);
    c.fmt_scale[0] = FP4_SCALE_NVFP4;
    c.scale = FP4_SCALE_MXFP4;
    assert_int_equal(fp4_run_config_finish(&c), FP4_OK);
    /* a given block against a fixed-block scale */
    fp4_run_config_default(&c, "e2m1", FP4_RHT_OFF);
    c.scale = FP4_SCALE_NVFP4;
    c.scale_given = true;
    c.block = 32;
    c.block_given = true;
    assert_int_equal(fp4_run_config_finish(&c), FP4_ERR_USAGE);
    assert_non_null(strstr(fp4_last_error(), "--block 32 conflicts with --scale nvfp4"));
    /* weight_2d without nvfp4 scales */
    fp4_run_config_default(&c, "e2m1", FP4_RHT_OFF);
    c.weight_2d = true;
    assert_int_equal(fp4_run_config_finish(&c), FP4_ERR_USAGE);
    /* a bad sign spec */
    fp4_run_config_default(&c, "e2m1", FP4_RHT_ON);
    snprintf(c.rht_signs_spec, sizeof c.rht_signs_spec, "bogus");
    assert_int_equal(fp4_run_config_finish(&c), FP4_ERR_USAGE);
    fp4_error_clear();
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(fp4_rht_mode_name(FP4_RHT_BOTH), "both");
    assert_string_equal(fp4_rank_by_name(FP4_RANK_DELTA), "delta");
    assert_string_equal(fp4_rank_by_name(FP4_RANK_UNDERFLOW), "underflow");
    assert_string_equal(fp4_rank_by_name(FP4_RANK_SQNR_NONAMAX), "sqnr-nonamax");
    assert_string_equal(fp4_rank_by_name(FP4_RANK_MAXERR), "maxerr");
    assert_string_equal(fp4_device_name(FP4_DEVICE_CUDA), "cuda");
    assert_string_equal(fp4_rht_mode_name((fp4_rht_mode)7), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_resolve),
        cmocka_unit_test(test_named_scales_rht_both),
        cmocka_unit_test(test_repeats_merged_block_default),
        cmocka_unit_test(test_conflicts),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
