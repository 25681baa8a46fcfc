/* test_options.c — the shared option parser: defaults, every option, positional mixing, errors,
 * sizes, the formats x RHT config list, and the extension hook gemm uses. */
#include "testutil.h"

#include "cmd/options.h"

#define ARGV(...) ((char *[]){__VA_ARGS__, NULL})
#define ARGC(...) ((int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)))
#define PARSE(o, ...) fp4_options_parse((o), ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), NULL)

static void test_defaults(void **state)
{
    (void)state;
    fp4_options o;
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    assert_int_equal(PARSE(&o, "sqnr", "ckpt.h5"), FP4_OK);
    assert_int_equal(o.cfg.nformats, 3);
    assert_int_equal(o.cfg.formats[0].id, FP4_FMT_E2M1);
    assert_int_equal(o.cfg.formats[1].id, FP4_FMT_E1M2);
    assert_int_equal(o.cfg.formats[2].id, FP4_FMT_INT4);
    assert_int_equal(o.cfg.scale, FP4_SCALE_FP32);
    assert_int_equal(o.cfg.block, 16);
    assert_int_equal(o.cfg.axis, -1);
    assert_int_equal(o.cfg.rounding, FP4_ROUND_RTNE);
    assert_int_equal(o.cfg.sr_bits, 24);
    assert_int_equal(o.cfg.rht, FP4_RHT_OFF);
    assert_int_equal(o.cfg.rht_size, 16);
    assert_string_equal(o.cfg.rht_signs_spec, "te");
    assert_int_equal(o.cfg.device, FP4_DEVICE_AUTO);
    assert_true(o.cfg.mem_limit == (int64_t)1 << 30);
    assert_int_equal(o.cfg.layers, 0);
    assert_null(o.cfg.output);
    assert_int_equal(o.cfg.verbosity, 0);
    assert_false(o.help);
    assert_int_equal(o.nargs, 1);
    assert_string_equal(o.args[0], "ckpt.h5");
}

static void test_every_option(void **state)
{
    (void)state;
    fp4_options o;
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    assert_int_equal(PARSE(&o, "sqnr", "--format", "e1m2,e3m0", "--scale", "fp32", "--block",
                           "32", "--axis", "0", "--rounding", "sr", "--seed", "12345",
                           "--rht", "on", "--rht-size", "64", "--rht-signs", "seed:7",
                           "--sr-bits", "8", "--threads", "3", "--device", "cpu",
                           "-o", "out.json", "--mem-limit", "512M", "--layers", "12", "-v",
                           "f.h5"),
                     FP4_OK);
    assert_int_equal(o.cfg.nformats, 2);
    assert_int_equal(o.cfg.formats[0].id, FP4_FMT_E1M2);
    assert_int_equal(o.cfg.formats[1].id, FP4_FMT_E3M0);
    assert_int_equal(o.cfg.block, 32);
    assert_int_equal(o.cfg.axis, 0);
    assert_int_equal(o.cfg.rounding, FP4_ROUND_SR);
    assert_true(o.cfg.seed == 12345u);
    assert_int_equal(o.cfg.rht, FP4_RHT_ON);
    assert_int_equal(o.cfg.rht_size, 64);
    assert_int_equal(o.cfg.signs.n, 64);
    assert_string_equal(o.cfg.rht_signs_spec, "seed:7");
    assert_int_equal(o.cfg.sr_bits, 8);
    assert_int_equal(o.cfg.threads, 3);
    assert_int_equal(o.cfg.device, FP4_DEVICE_CPU);
    assert_string_equal(o.cfg.output, "out.json");
    assert_true(o.cfg.mem_limit == (int64_t)512 << 20);
    assert_int_equal(o.cfg.layers, 12);
    assert_int_equal(o.cfg.verbosity, 1);
    assert_int_equal(o.nargs, 1);
}

static void test_scale_modes_and_mx(void **state)
{
    (void)state;
    fp4_options o;
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    assert_int_equal(PARSE(&o, "sqnr", "--scale", "mxfp4", "--mx-rule", "rceil", "f"), FP4_OK);
    assert_int_equal(o.cfg.scale, FP4_SCALE_MXFP4);
    assert_int_equal(o.cfg.block, 32); /* mxfp4 blocks are 32 when --block is not given */
    assert_int_equal(o.cfg.mx_rule, FP4_MX_RCEIL);
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    assert_int_equal(PARSE(&o, "sqnr", "--scale=nvfp4", "--weight-2d", "--format=e2m1", "f"),
                     FP4_OK);
    assert_int_equal(o.cfg.scale, FP4_SCALE_NVFP4);
    assert_true(o.cfg.weight_2d);
    assert_int_equal(o.cfg.block, 16);
    /* weight_2d is nvfp4 only (fp4_qconfig_check) */
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    assert_int_equal(PARSE(&o, "sqnr", "--weight-2d", "f"), FP4_ERR_USAGE);
}

static void test_positionals_mix(void **state)
{
    (void)state;
    fp4_options o;
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    assert_int_equal(PARSE(&o, "sqnr", "f.h5", "--format", "int4", "/a", "-q", "/b/*"), FP4_OK);
    assert_int_equal(o.nargs, 3);
    assert_string_equal(o.args[0], "f.h5");
    assert_string_equal(o.args[1], "/a");
    assert_string_equal(o.args[2], "/b/*");
    assert_int_equal(o.cfg.verbosity, -1);
    assert_int_equal(o.cfg.nformats, 1);
    /* "--" ends the options */
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    assert_int_equal(PARSE(&o, "sqnr", "--", "-weird.h5"), FP4_OK);
    assert_int_equal(o.nargs, 1);
    assert_string_equal(o.args[0], "-weird.h5");
}

static void test_errors(void **state)
{
    (void)state;
    fp4_options o;
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    assert_int_equal(PARSE(&o, "sqnr", "--bogus", "f"), FP4_ERR_USAGE);
    assert_non_null(strstr(fp4_last_error(), "--bogus"));
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    assert_int_equal(PARSE(&o, "sqnr", "-x", "f"), FP4_ERR_USAGE);
    assert_non_null(strstr(fp4_last_error(), "-x"));
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    assert_int_equal(PARSE(&o, "sqnr", "f", "--format"), FP4_ERR_USAGE);
    assert_non_null(strstr(fp4_last_error(), "--format"));
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    assert_int_equal(PARSE(&o, "sqnr", "f", "-o"), FP4_ERR_USAGE);
    const char *bad[][2] = {
        {"--format", "e9m9"}, {"--scale", "fp16"}, {"--block", "x"},   {"--block", "1"},
        {"--axis", "9"},      {"--rounding", "up"}, {"--seed", "-1"},  {"--rht", "yes"},
        {"--rht-size", "24"}, {"--rht-size", "512"}, {"--rht-signs", "bogus"},
        {"--mx-rule", "ceil"}, {"--sr-bits", "16"}, {"--threads", "-2"}, {"--device", "tpu"},
        {"--mem-limit", "lots"}, {"--mem-limit", "0"}, {"--layers", "0"}, {"--format", ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fp4_options_default(&o, NULL, FP4_RHT_OFF);
        char *av[] = {"sqnr", (char *)bad[i][0], (char *)bad[i][1], "f", NULL};
        fp4_error_clear();
        fp4_status st = fp4_options_parse(&o, 4, av, NULL);
        if (st != FP4_ERR_USAGE) fail_msg("%s %s: status %d", bad[i][0], bad[i][1], st);
        assert_true(fp4_last_error()[0] != '\0');
    }
}

static void test_help(void **state)
{
    (void)state;
    fp4_options o;
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    assert_int_equal(PARSE(&o, "sqnr", "--help"), FP4_OK);
    assert_true(o.help);
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    assert_int_equal(PARSE(&o, "sqnr", "-h"), FP4_OK);
    assert_true(o.help);
}

static void test_parse_size(void **state)
{
    (void)state;
    int64_t v = 0;
    assert_int_equal(fp4_parse_size("1073741824", &v), FP4_OK);
    assert_true(v == 1073741824);
    assert_int_equal(fp4_parse_size("512M", &v), FP4_OK);
    assert_true(v == 536870912);
    assert_int_equal(fp4_parse_size("512m", &v), FP4_OK);
    assert_true(v == 536870912);
    assert_int_equal(fp4_parse_size("1G", &v), FP4_OK);
    assert_true(v == 1073741824);
    assert_int_equal(fp4_parse_size("2GiB", &v), FP4_OK);
    assert_true(v == 2147483648LL);
    assert_int_equal(fp4_parse_size("64K", &v), FP4_OK);
    assert_true(v == 65536);
    assert_int_equal(fp4_parse_size("1.5G", &v), FP4_OK);
    assert_true(v == 1610612736LL);
    assert_int_equal(fp4_parse_size("100B", &v), FP4_OK);
    assert_true(v == 100);
    const char *bad[] = {"", "abc", "12X", "0", "-5", "1GG", "M", "1e30G"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (fp4_parse_size(bad[i], &v) != FP4_ERR_USAGE) fail_msg("'%s' accepted", bad[i]);
}

static void test_configs(void **state)
{
    (void)state;
    fp4_options o;
    fp4_qconfig c[32];
    int n = 0;
    fp4_options_default(&o, NULL, FP4_RHT_BOTH);
    assert_int_equal(PARSE(&o, "rht", "--rounding", "sr", "--seed", "9", "f"), FP4_OK);
    assert_int_equal(fp4_run_config_qconfigs(&o.cfg, c, 32, &n), FP4_OK);
    assert_int_equal(n, 6);
    for (int i = 0; i < n; i++) {
        assert_int_equal(c[i].format.id, o.cfg.formats[i / 2].id);
        if (i % 2 == 0) assert_null(c[i].rht);
        else {
            assert_ptr_equal(c[i].rht, &o.cfg.signs);
            assert_int_equal(c[i].rht->n, 16);
        }
        assert_int_equal(c[i].scale, FP4_SCALE_FP32);
        assert_int_equal(c[i].block, 16);
        assert_int_equal(c[i].rounding, FP4_ROUND_SR);
        assert_true(c[i].seed == 9);
    }
    /* too small a buffer is an error, not an overflow */
    assert_int_equal(fp4_run_config_qconfigs(&o.cfg, c, 5, &n), FP4_ERR_USAGE);

    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    assert_int_equal(PARSE(&o, "sqnr", "--format", "all", "f"), FP4_OK);
    assert_int_equal(fp4_run_config_qconfigs(&o.cfg, c, 32, &n), FP4_OK);
    assert_int_equal(n, 4);
    for (int i = 0; i < n; i++) assert_null(c[i].rht);

    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    assert_int_equal(PARSE(&o, "sqnr", "--rht", "on", "--format", "int4", "f"), FP4_OK);
    assert_int_equal(fp4_run_config_qconfigs(&o.cfg, c, 32, &n), FP4_OK);
    assert_int_equal(n, 1);
    assert_non_null(c[0].rht);
}

static fp4_status ext_handle(void *ctx, int val, const char *arg)
{
    if (val == 1000) {
        if (strcmp(arg, "ufp4") && strcmp(arg, "e2m1"))
            return fp4_error(FP4_ERR_USAGE, "--recipe: '%s'", arg);
        snprintf((char *)ctx, 16, "%s", arg);
        return FP4_OK;
    }
    return fp4_error(FP4_ERR_INTERNAL, "unexpected %d", val);
}

static void test_extension(void **state)
{
    (void)state;
    static const struct option extra[] = {{"recipe", required_argument, NULL, 1000},
                                          {NULL, 0, NULL, 0}};
    char recipe[16] = "";
    fp4_options_ext ext = {extra, ext_handle, recipe};
    fp4_options o;
    fp4_options_default(&o, "e1m2", FP4_RHT_OFF);
    char *av[] = {"gemm", "--recipe", "ufp4", "--threads", "2", "g.h5", NULL};
    assert_int_equal(fp4_options_parse(&o, 6, av, &ext), FP4_OK);
    assert_string_equal(recipe, "ufp4");
    assert_int_equal(o.cfg.threads, 2);
    assert_int_equal(o.cfg.nformats, 1);
    assert_int_equal(o.cfg.formats[0].id, FP4_FMT_E1M2);
    char *av2[] = {"gemm", "--recipe", "bogus", "g.h5", NULL};
    fp4_options_default(&o, "e1m2", FP4_RHT_OFF);
    assert_int_equal(fp4_options_parse(&o, 4, av2, &ext), FP4_ERR_USAGE);
    /* without the extension the option is unknown */
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    assert_int_equal(fp4_options_parse(&o, 4, av2, NULL), FP4_ERR_USAGE);
    assert_non_null(strstr(fp4_last_error(), "--recipe"));
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(fp4_rht_mode_name(FP4_RHT_OFF), "off");
    assert_string_equal(fp4_rht_mode_name(FP4_RHT_ON), "on");
    assert_string_equal(fp4_rht_mode_name(FP4_RHT_BOTH), "both");
    assert_string_equal(fp4_device_name(FP4_DEVICE_CPU), "cpu");
    assert_string_equal(fp4_device_name(FP4_DEVICE_CUDA), "cuda");
    assert_string_equal(fp4_device_name(FP4_DEVICE_AUTO), "auto");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),     cmocka_unit_test(test_every_option),
        cmocka_unit_test(test_scale_modes_and_mx), cmocka_unit_test(test_positionals_mix),
        cmocka_unit_test(test_errors),       cmocka_unit_test(test_help),
        cmocka_unit_test(test_parse_size),   cmocka_unit_test(test_configs),
        cmocka_unit_test(test_extension),    cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
