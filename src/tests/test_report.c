/* test_report.c — the report writer (whole-or-absent files, direct writes to pipes and devices,
 * write errors) and the JSON of a hand-built run (identity fields, nulls with statuses,
 * rht_delta, compound shrinkage, errors); the verdict's margin over the best config with
 * other values and its tie order; fp4_json_same's two modes (objects by name, in order). */
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "cmd/options.h"
#include "report/report.h"
#include "base/version.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void test_write_new_and_replace(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/r.json", dir);
    assert_int_equal(fp4_output_write(path, "{\"a\": 1}\n", 9), FP4_OK);
    assert_string_equal(slurp(path), "{\"a\": 1}\n");
    assert_int_equal(count_entries(dir), 1);
    chmod(path, 0640);
    assert_int_equal(fp4_output_write(path, "{}\n", 3), FP4_OK);
    assert_string_equal(slurp(path), "{}\n");
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0640); /* the replaced file keeps its mode */
    assert_int_equal(count_entries(dir), 1);
    fp4t_rmtree(dir);
}

static void test_write_through_symlink(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    char target[4200], link[4200];
    snprintf(target, sizeof target, "%s/target.json", dir);
    snprintf(link, sizeof link, "%s/link.json", dir);
    assert_int_equal(fp4_output_write(target, "old\n", 4), FP4_OK);
    assert_int_equal(symlink(target, link), 0);
    assert_int_equal(fp4_output_write(link, "new\n", 4), FP4_OK);
    struct stat lb;
    assert_int_equal(lstat(link, &lb), 0);
    assert_true(S_ISLNK(lb.st_mode));
    assert_string_equal(slurp(target), "new\n");
    assert_int_equal(count_entries(dir), 2);
    fp4t_rmtree(dir);
}

static void test_write_missing_dir(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/no/such/dir/r.json", dir);
    fp4_error_clear();
    assert_int_equal(fp4_output_write(path, "{}\n", 3), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), path));
    assert_null(strchr(fp4_last_error(), '\n'));
    assert_int_equal(count_entries(dir), 0);
    fp4t_rmtree(dir);
}

/* /dev/full: ENOSPC on write; written directly, the device node must survive untouched. */
static void test_write_dev_full(void **state)
{
    (void)state;
    struct stat before, after;
    if (stat("/dev/full", &before) != 0 || !S_ISCHR(before.st_mode)) skip();
    fp4_error_clear();
    assert_int_equal(fp4_output_write("/dev/full", "{}\n", 3), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "/dev/full"));
    assert_int_equal(stat("/dev/full", &after), 0);
    assert_true(S_ISCHR(after.st_mode));
    assert_true(before.st_rdev == after.st_rdev);
    assert_true(before.st_ino == after.st_ino);
}

/* A FIFO is written directly (never replaced by a regular file). */
static void test_write_fifo(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/pipe", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    int rd = open(path, O_RDWR | O_NONBLOCK); /* a reader, so the writer's open succeeds */
    assert_true(rd >= 0);
    assert_int_equal(fp4_output_write(path, "{\"x\": 2}\n", 9), FP4_OK);
    char buf[64] = {0};
    ssize_t n = read(rd, buf, sizeof buf - 1);
    assert_int_equal(n, 9);
    assert_string_equal(buf, "{\"x\": 2}\n");
    close(rd);
    struct stat sb;
    assert_int_equal(lstat(path, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
    assert_int_equal(count_entries(dir), 1);
    fp4t_rmtree(dir);
}

/* ------------------------------------------------------------------ a hand-built run */

static void fake_metrics(fp4_metrics *m, double sqnr, double alpha)
{
    fp4_metrics_init(m);
    m->sqnr_db = sqnr;
    m->nmse = pow(10, -sqnr / 10);
    m->alpha = alpha;
    m->delta = 1 - alpha;
    m->bucket_ratio_15 = 0.5;
    m->bucket_ratio_8 = 0.75;
    m->mean_signed_error = -0.01;
    m->hist[1] = 10;
    m->hist[9] = 6;
    m->level_count[1] = 16;
    m->level_err_sum[1] = 0.8;
    m->elements = 16;
    m->blocks = 1;
    m->tensor_amax = 3.0f;
}

/* A bare nan/inf/NaN/Infinity token (not the inside of a string such as the key "nan"). */
static int has_bare_nonfinite(const char *text)
{
    const char *words[] = {"nan", "inf", "NaN", "Infinity"};
    for (size_t w = 0; w < 4; w++)
        for (const char *p = strstr(text, words[w]); p; p = strstr(p + 1, words[w]))
            if (p == text || (p[-1] != '"' && p[-1] != '_' && !(p[-1] >= 'a' && p[-1] <= 'z')))
                return 1;
    return 0;
}

static cJSON *item(const cJSON *o, const char *k)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!r) fail_msg("missing key %s", k);
    return (cJSON *)r;
}

static void test_analysis_json(void **state)
{
    (void)state;
    fp4_options o;
    fp4_options_default(&o, "e2m1,int4", FP4_RHT_BOTH);
    char *av[] = {"rht", "--layers", "4", "f.h5", NULL};
    assert_int_equal(fp4_options_parse(&o, 4, av, NULL), FP4_OK);

    fp4_run run;
    memset(&run, 0, sizeof run);
    run.config = &o.cfg;
    run.file = "f.h5";
    fp4_qconfig cfgs[8];
    assert_int_equal(fp4_run_config_qconfigs(&o.cfg, cfgs, 8, &run.ncfg), FP4_OK);
    assert_int_equal(run.ncfg, 4);
    run.cfgs = cfgs;
    char *ds[] = {"/a", "/bad"};
    run.datasets = ds;
    run.ndatasets = 2;
    fp4_metrics tm[4], pooled[4];
    fake_metrics(&tm[0], 20.0, 0.98);
    fake_metrics(&tm[1], 21.0, 0.985);
    fake_metrics(&tm[2], 22.0, 0.99);
    fake_metrics(&tm[3], 0, 1.0);
    tm[3].sqnr_status = FP4_SQNR_EXACT;
    tm[3].sqnr_db = INFINITY;
    tm[3].nmse = 0;
    for (int i = 0; i < 4; i++) pooled[i] = tm[i];
    fp4_tensor_result tr;
    memset(&tr, 0, sizeof tr);
    tr.info.name = "/a";
    tr.info.rank = 2;
    tr.info.dims[0] = 4;
    tr.info.dims[1] = 4;
    snprintf(tr.info.dtype, sizeof tr.info.dtype, "bf16");
    tr.axis = 1;
    tr.metrics = tm;
    run.tensors = &tr;
    run.ntensors = 1;
    run.pooled = pooled;
    fp4_rht_delta pairs[2] = {{.plain = 0, .rotated = 1}, {.plain = 2, .rotated = 3}};
    run.pairs = pairs;
    run.npairs = 2;
    fp4_tensor_error err = {"/bad", FP4_ERR_INPUT, "f.h5: /bad: not numeric (class string)", 0};
    run.errors = &err;
    run.nerrors = 1;
    snprintf(run.device, sizeof run.device, "cpu");

    char *text = fp4_report_analysis_json("rht", 4, av, &run);
    assert_non_null(text);
    assert_false(has_bare_nonfinite(text));
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    assert_string_equal(item(root, "schema")->valuestring, "fp4diag.report/1");
    assert_string_equal(item(item(root, "tool"), "name")->valuestring, "fp4diag");
    assert_string_equal(item(root, "command")->valuestring, "rht");
    cJSON *argv = item(root, "argv");
    assert_int_equal(cJSON_GetArraySize(argv), 5);
    assert_string_equal(cJSON_GetArrayItem(argv, 0)->valuestring, "fp4diag");
    assert_string_equal(cJSON_GetArrayItem(argv, 1)->valuestring, "rht");
    cJSON *cfg = item(root, "config");
    assert_string_equal(item(cfg, "scale")->valuestring, "fp32");
    assert_string_equal(item(cfg, "rht")->valuestring, "both");
    assert_string_equal(item(cfg, "rht_signs")->valuestring, "te");
    assert_int_equal(item(cfg, "layers")->valueint, 4);
    assert_int_equal(item(cfg, "block")->valueint, 16);
    assert_int_equal(cJSON_GetArraySize(item(cfg, "formats")), 2);
    assert_int_equal(cJSON_GetArraySize(item(item(root, "input"), "datasets")), 2);

    cJSON *t0 = cJSON_GetArrayItem(item(root, "tensors"), 0);
    assert_string_equal(item(t0, "name")->valuestring, "/a");
    assert_string_equal(item(t0, "dtype")->valuestring, "bf16");
    assert_int_equal(item(t0, "axis")->valueint, 1);
    cJSON *res = item(t0, "results");
    assert_int_equal(cJSON_GetArraySize(res), 4);
    cJSON *r0 = cJSON_GetArrayItem(res, 0), *r1 = cJSON_GetArrayItem(res, 1);
    assert_string_equal(item(r0, "format")->valuestring, "e2m1");
    assert_true(cJSON_IsFalse(item(r0, "rht")));
    assert_int_equal(item(item(r1, "rht"), "size")->valueint, 16);
    assert_string_equal(item(item(r1, "rht"), "signs")->valuestring, "te");
    assert_double_abs(item(r0, "sqnr_db")->valuedouble, 20.0, 1e-12);
    assert_string_equal(item(r0, "sqnr_status")->valuestring, "ok");
    assert_int_equal(cJSON_GetArraySize(item(r0, "histogram")), 16);
    assert_int_equal(cJSON_GetArrayItem(item(r0, "histogram"), 9)->valueint, 6);
    cJSON *lv = item(r0, "levels");
    assert_int_equal(cJSON_GetArraySize(lv), 8);
    cJSON *l1 = cJSON_GetArrayItem(lv, 1);
    assert_double_exact(item(l1, "q")->valuedouble, 0.5);
    assert_int_equal(item(l1, "count")->valueint, 16);
    assert_double_abs(item(l1, "mean_error")->valuedouble, 0.05, 1e-12);
    assert_true(cJSON_IsNull(item(cJSON_GetArrayItem(lv, 0), "mean_error"))); /* count 0 */
    /* E2M1 level 4 (q = 2): analytic bias (0.25 - 0.5)/2 = -1/8 (SPEC §5) */
    assert_double_exact(item(cJSON_GetArrayItem(lv, 4), "analytic_bias")->valuedouble, -0.125);
    assert_int_equal(item(item(r0, "counts"), "elements")->valueint, 16);
    /* the exact result: null with its status */
    cJSON *r3 = cJSON_GetArrayItem(res, 3);
    assert_true(cJSON_IsNull(item(r3, "sqnr_db")));
    assert_string_equal(item(r3, "sqnr_status")->valuestring, "exact");

    cJSON *rd = item(t0, "rht_delta");
    assert_int_equal(cJSON_GetArraySize(rd), 2);
    cJSON *d0 = cJSON_GetArrayItem(rd, 0);
    assert_string_equal(item(d0, "format")->valuestring, "e2m1");
    assert_double_abs(item(d0, "delta_sqnr_db")->valuedouble, 1.0, 1e-12);
    assert_double_abs(item(d0, "delta_alpha")->valuedouble, 0.005, 1e-12);
    cJSON *d1 = cJSON_GetArrayItem(rd, 1);
    assert_true(cJSON_IsNull(item(d1, "delta_sqnr_db")));
    assert_string_equal(item(d1, "delta_sqnr_status")->valuestring, "exact");

    cJSON *sm = cJSON_GetArrayItem(item(item(root, "summary"), "results"), 0);
    assert_int_equal(item(sm, "tensors")->valueint, 1);
    cJSON *co = item(sm, "compound");
    assert_int_equal(item(co, "layers")->valueint, 4);
    assert_double_rel(item(co, "prod_one_minus_delta")->valuedouble, pow(0.98, 4), 1e-12);
    assert_double_rel(item(co, "exp_neg_sum_delta")->valuedouble, exp(-4 * 0.02), 1e-12);
    assert_int_equal(cJSON_GetArraySize(item(item(root, "summary"), "rht_delta")), 2);

    cJSON *e0 = cJSON_GetArrayItem(item(root, "errors"), 0);
    assert_string_equal(item(e0, "tensor")->valuestring, "/bad");
    assert_string_equal(item(e0, "status")->valuestring, "input_error");
    assert_non_null(item(item(root, "timing"), "seconds"));
    cJSON_Delete(root);
    free(text);
}

/* The verdict (report.c): the winner's margin is over the best config whose dequantized values
 * differ. e1m2 and int4 are one grid (SPEC §2): int4+rht is named beside the winner
 * e1m2+rht in same_values, and the margin is over e1m2 without RHT (0.4 dB), never 0 dB over
 * int4+rht. Ranking ties (one gap for all) are broken by the best SQNR, not by tensor order. */
static void test_verdict_margin_and_ties(void **state)
{
    (void)state;
    fp4_options o;
    fp4_options_default(&o, "e2m1,e1m2,int4", FP4_RHT_BOTH);
    char *av[] = {"rht", "f.h5", NULL};
    assert_int_equal(fp4_options_parse(&o, 2, av, NULL), FP4_OK);
    fp4_run run;
    memset(&run, 0, sizeof run);
    run.config = &o.cfg;
    run.file = "f.h5";
    fp4_qconfig cfgs[8];
    assert_int_equal(fp4_run_config_qconfigs(&o.cfg, cfgs, 8, &run.ncfg), FP4_OK);
    assert_int_equal(run.ncfg, 6);
    run.cfgs = cfgs;
    /* config order: e2m1, e2m1+rht, e1m2, e1m2+rht, int4, int4+rht */
    const fp4_format_id fid[6] = {FP4_FMT_E2M1, FP4_FMT_E2M1, FP4_FMT_E1M2,
                                  FP4_FMT_E1M2, FP4_FMT_INT4, FP4_FMT_INT4};
    for (int c = 0; c < 6; c++) {
        assert_int_equal(cfgs[c].format.id, fid[c]);
        assert_int_equal(cfgs[c].rht != NULL, c % 2);
    }
    const double pooled_db[6] = {20.0, 20.5, 21.0, 21.4, 21.0, 21.4};
    /* tensors: /a every config 22 dB (gap 0), /b every config 20 dB (gap 0), /c a gap of 2 */
    const double tens_db[3][6] = {{22, 22, 22, 22, 22, 22},
                                  {20, 20, 20, 20, 20, 20},
                                  {19, 20, 21, 21, 21, 21}};
    fp4_metrics tm[3][6], pooled[6];
    fp4_tensor_result tr[3];
    char *ds[] = {"/a", "/b", "/c"};
    memset(tr, 0, sizeof tr);
    for (int t = 0; t < 3; t++) {
        for (int c = 0; c < 6; c++) fake_metrics(&tm[t][c], tens_db[t][c], 0.99);
        tr[t].info.name = ds[t];
        tr[t].info.rank = 2;
        tr[t].info.dims[0] = tr[t].info.dims[1] = 4;
        snprintf(tr[t].info.dtype, sizeof tr[t].info.dtype, "f32");
        tr[t].axis = 1;
        tr[t].metrics = tm[t];
        tr[t].index = t;
    }
    for (int c = 0; c < 6; c++) fake_metrics(&pooled[c], pooled_db[c], 0.99);
    run.datasets = ds;
    run.ndatasets = 3;
    run.tensors = tr;
    run.ntensors = 3;
    run.pooled = pooled;
    snprintf(run.device, sizeof run.device, "cpu");

    char *text = fp4_report_analysis_json("rht", 2, av, &run);
    assert_non_null(text);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    cJSON *v = item(root, "verdict"), *w = item(v, "winner");
    assert_string_equal(item(w, "format")->valuestring, "e1m2");
    assert_true(cJSON_IsTrue(item(w, "rht")));
    assert_double_abs(item(w, "margin_db")->valuedouble, 0.4, 1e-12);
    cJSON *ru = item(w, "runner_up");
    assert_string_equal(item(ru, "format")->valuestring, "e1m2");
    assert_true(cJSON_IsFalse(item(ru, "rht")));
    assert_double_exact(item(ru, "sqnr_db")->valuedouble, 21.0);
    cJSON *same = item(w, "same_values");
    assert_int_equal(cJSON_GetArraySize(same), 1);
    assert_string_equal(item(cJSON_GetArrayItem(same, 0), "format")->valuestring, "int4");
    assert_true(cJSON_IsTrue(item(cJSON_GetArrayItem(same, 0), "rht")));
    cJSON *rk = item(v, "ranking");
    assert_int_equal(cJSON_GetArraySize(rk), 3);
    assert_string_equal(item(cJSON_GetArrayItem(rk, 0), "tensor")->valuestring, "/c");
    assert_string_equal(item(cJSON_GetArrayItem(rk, 1), "tensor")->valuestring, "/b");
    assert_string_equal(item(cJSON_GetArrayItem(rk, 2), "tensor")->valuestring, "/a");
    cJSON_Delete(root);
    free(text);

    /* the table says the same */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    fp4_report_table(f, "rht", &run);
    fclose(f);
    assert_non_null(strstr(buf, "winner: e1m2+rht (fp32 scales), +0.400 dB over e1m2 (fp32 "
                                "scales); int4+rht gives the same values (same grid)\n"));
    free(buf);

    /* only one grid under two names: no runner-up, no margin */
    fp4_options o2;
    fp4_options_default(&o2, "e1m2,int4", FP4_RHT_OFF);
    char *av2[] = {"sqnr", "f.h5", NULL};
    assert_int_equal(fp4_options_parse(&o2, 2, av2, NULL), FP4_OK);
    run.config = &o2.cfg;
    assert_int_equal(fp4_run_config_qconfigs(&o2.cfg, cfgs, 8, &run.ncfg), FP4_OK);
    assert_int_equal(run.ncfg, 2);
    for (int t = 0; t < 3; t++) tr[t].metrics = tm[t] + 2; /* the e1m2 pair: equal values */
    run.pooled = pooled + 2;
    pooled[3] = pooled[2];
    text = fp4_report_analysis_json("sqnr", 2, av2, &run);
    assert_non_null(text);
    root = cJSON_Parse(text);
    w = item(item(root, "verdict"), "winner");
    assert_string_equal(item(w, "format")->valuestring, "e1m2");
    assert_true(cJSON_IsNull(item(w, "margin_db")));
    assert_true(cJSON_IsNull(item(w, "runner_up")));
    assert_int_equal(cJSON_GetArraySize(item(w, "same_values")), 1);
    cJSON_Delete(root);
    free(text);
    /* the table names no contest: one distinct config, nothing to rank it against (issue 29) */
    f = open_memstream(&buf, &len);
    assert_non_null(f);
    fp4_report_table(f, "sqnr", &run);
    fclose(f);
    assert_non_null(strstr(buf, "  the only distinct config: e1m2 (fp32 scales); int4 gives the "
                                "same values (same grid); nothing to rank it against (give "
                                "--format a list to compare grids)\n"));
    assert_null(strstr(buf, "winner:"));
    free(buf);

    /* one config: "the only config", never a winner over nothing */
    fp4_options o3;
    fp4_options_default(&o3, "e1m2", FP4_RHT_OFF);
    assert_int_equal(fp4_options_parse(&o3, 2, av2, NULL), FP4_OK);
    run.config = &o3.cfg;
    assert_int_equal(fp4_run_config_qconfigs(&o3.cfg, cfgs, 8, &run.ncfg), FP4_OK);
    assert_int_equal(run.ncfg, 1);
    f = open_memstream(&buf, &len);
    assert_non_null(f);
    fp4_report_table(f, "sqnr", &run);
    fclose(f);
    assert_non_null(strstr(buf, "\n  the only config: e1m2 (fp32 scales); nothing to rank it "
                                "against (give --format a list to compare grids)\n"));
    assert_null(strstr(buf, "winner:"));
    assert_null(strstr(buf, "no other config"));
    free(buf);
}

/* Provenance (SPEC §9): SOURCE_DATE_EPOCH gives the time (UTC, whole seconds); a malformed
 * value falls back to the clock; the version, the build and each input file's size and
 * fingerprint as given. */
static void test_provenance_json(void **state)
{
    (void)state;
    const char *old = getenv("SOURCE_DATE_EPOCH");
    char *saved = old ? strdup(old) : NULL;
    fp4_file_print p[2] = {{(char *)"a.safetensors", 10, 0x0123456789abcdefULL, 10},
                           {(char *)"b.safetensors", 5 << 20, 0xfULL, 3 << 20}};
    setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
    cJSON *o = fp4_report_provenance_json(p, 2);
    assert_non_null(o);
    assert_string_equal(item(o, "time")->valuestring, "2023-11-14T22:13:20Z");
    assert_string_equal(item(o, "version")->valuestring, FP4DIAG_VERSION);
#ifdef FP4_HAVE_CUDA
    assert_true(cJSON_IsTrue(item(item(o, "build"), "cuda")));
#else
    assert_true(cJSON_IsFalse(item(item(o, "build"), "cuda")));
#endif
    assert_non_null(item(item(o, "build"), "isa")->valuestring);
    cJSON *in = item(o, "inputs");
    assert_int_equal(cJSON_GetArraySize(in), 2);
    assert_string_equal(item(cJSON_GetArrayItem(in, 0), "xxh3")->valuestring, "0123456789abcdef");
    assert_string_equal(item(cJSON_GetArrayItem(in, 1), "xxh3")->valuestring, "000000000000000f");
    assert_double_exact(item(cJSON_GetArrayItem(in, 1), "size")->valuedouble, 5 << 20);
    assert_double_exact(item(cJSON_GetArrayItem(in, 1), "hashed")->valuedouble, 3 << 20);
    cJSON_Delete(o);
    setenv("SOURCE_DATE_EPOCH", "0", 1);
    o = fp4_report_provenance_json(NULL, 0);
    assert_string_equal(item(o, "time")->valuestring, "1970-01-01T00:00:00Z");
    assert_int_equal(cJSON_GetArraySize(item(o, "inputs")), 0);
    cJSON_Delete(o);
    /* not whole seconds in ASCII digits (a sign, spaces, another base, past 9999): the clock
     * (a year after 2020, never 1970) */
    static const char *const bad[] = {"12abc", " 5", "+5", "-0", "5 ", "0x10", "1e9", "-1",
                                      "253402300800", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("SOURCE_DATE_EPOCH", bad[i], 1);
        o = fp4_report_provenance_json(NULL, 0);
        assert_true(strncmp(item(o, "time")->valuestring, "20", 2) == 0);
        assert_int_equal((int)strlen(item(o, "time")->valuestring), 20);
        cJSON_Delete(o);
    }
    setenv("SOURCE_DATE_EPOCH", "253402300799", 1);
    o = fp4_report_provenance_json(NULL, 0);
    assert_string_equal(item(o, "time")->valuestring, "9999-12-31T23:59:59Z");
    cJSON_Delete(o);
    if (saved) setenv("SOURCE_DATE_EPOCH", saved, 1), free(saved);
    else unsetenv("SOURCE_DATE_EPOCH");
}

static void test_grid_json(void **state)
{
    (void)state;
    fp4_format f[2] = {{FP4_FMT_E2M1, 0}, {FP4_FMT_INT4, 0}};
    char *av[] = {"grid", NULL};
    char *text = fp4_report_grid_json(1, av, f, 2);
    assert_non_null(text);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    assert_string_equal(item(root, "command")->valuestring, "grid");
    cJSON *g0 = cJSON_GetArrayItem(item(root, "grids"), 0);
    assert_string_equal(item(g0, "format")->valuestring, "e2m1");
    assert_double_exact(item(g0, "g_max")->valuedouble, 6);
    cJSON *lv = item(g0, "levels");
    assert_int_equal(cJSON_GetArraySize(lv), 8);
    /* E2M1 bins (SPEC §2): [1.75, 2.5] -> 2, (2.5, 3.5) -> 3, [3.5, 5] -> 4 */
    cJSON *l4 = cJSON_GetArrayItem(lv, 4), *l5 = cJSON_GetArrayItem(lv, 5);
    assert_double_exact(item(l4, "bin_lo")->valuedouble, 1.75);
    assert_double_exact(item(l4, "bin_hi")->valuedouble, 2.5);
    assert_true(cJSON_IsTrue(item(l4, "bin_lo_closed")));
    assert_true(cJSON_IsFalse(item(l5, "bin_lo_closed")));
    assert_double_exact(item(cJSON_GetArrayItem(lv, 6), "analytic_bias")->valuedouble, -0.25);
    assert_double_abs(item(g0, "uniform_mean_error")->valuedouble, 0, 1e-15);
    cJSON *g1 = cJSON_GetArrayItem(item(root, "grids"), 1);
    assert_double_exact(item(g1, "max_interior_bias")->valuedouble, 0);
    assert_double_abs(item(g1, "uniform_mean_error")->valuedouble, 0, 1e-15);
    cJSON_Delete(root);
    free(text);
}

/* fp4_json_print is cJSON_Print byte for byte (nested objects and arrays in root's member
 * arrays, strings with escaped line breaks and tabs, numbers that need 17 digits, empty
 * objects, scalars beside them) and leaves the tree as it was. */
static void test_json_print_equals_cjson(void **state)
{
    (void)state;
    const char *doc =
        "{\"command\": \"sqnr\", \"tensors\": [{\"name\": \"a\\nb\\t\", \"x\": 0.1,"
        " \"m\": {\"d\": [1, {\"e\": [2.5e-300, -0.0, 1e300]}], \"f\": {}}},"
        " {\"name\": \"q\", \"h\": [[1, 2], [3, [4, {}]]], \"t\": true, \"n\": null},"
        " 7, \"s\", [], {}, [1, [2, {\"z\": 0.30000000000000004}]]],"
        " \"errors\": [{\"tensor\": \"b\", \"message\": \"line\\nbreak\"}],"
        " \"pooled\": {\"k\": [{\"v\": 1}]}, \"notes\": []}";
    cJSON *root = cJSON_Parse(doc);
    assert_non_null(root);
    char *want = cJSON_Print(root);
    char *got = fp4_json_print(root);
    assert_non_null(want);
    assert_non_null(got);
    assert_string_equal(got, want);
    char *again = cJSON_Print(root); /* the tree is unchanged */
    assert_string_equal(again, want);
    /* one element: printed as one */
    cJSON *one = cJSON_Parse("{\"tensors\": [{\"a\": [1, {\"b\": 2}]}]}");
    char *w1 = cJSON_Print(one), *g1 = fp4_json_print(one);
    assert_string_equal(g1, w1);
    cJSON_free(want);
    cJSON_free(got);
    cJSON_free(again);
    cJSON_free(w1);
    cJSON_free(g1);
    cJSON_Delete(one);
    cJSON_Delete(root);
}

/* fp4_json_same in compare's mode (objects by name) and merge's (in order): a pair equal by
 * name in another order is the same only by name, at any depth; arrays are in order in both;
 * numbers are compared as doubles exactly in both (1e999 reads as inf and equals only inf; -0
 * is not 0; one double away differs, which cJSON_Compare would take as equal). */
static bool same_text(const char *x, const char *y, bool by_name)
{
    cJSON *a = cJSON_Parse(x), *b = cJSON_Parse(y);
    assert_non_null(a);
    assert_non_null(b);
    bool r = fp4_json_same(a, b, by_name);
    assert_true(fp4_json_same(b, a, by_name) == r); /* symmetric */
    cJSON_Delete(a);
    cJSON_Delete(b);
    return r;
}

static void test_json_same(void **state)
{
    (void)state;
    static const struct {
        const char *a, *b;
        bool by_name, in_order;
    } cases[] = {
        {"{\"x\": 1, \"y\": [1, {\"p\": 2}]}", "{\"x\": 1, \"y\": [1, {\"p\": 2}]}", true, true},
        /* members reordered at the top, and inside an array's object */
        {"{\"x\": 1, \"y\": 2}", "{\"y\": 2, \"x\": 1}", true, false},
        {"{\"x\": 1, \"y\": [1, {\"p\": 2, \"q\": 3}]}",
         "{\"x\": 1, \"y\": [1, {\"q\": 3, \"p\": 2}]}", true, false},
        {"{\"o\": {\"p\": 2, \"q\": 3}}", "{\"o\": {\"q\": 3, \"p\": 2}}", true, false},
        /* a member more, another name, another value */
        {"{\"x\": 1}", "{\"x\": 1, \"y\": 2}", false, false},
        {"{\"x\": 1}", "{\"z\": 1}", false, false},
        {"{\"x\": 1, \"y\": 2}", "{\"y\": 3, \"x\": 1}", false, false},
        /* arrays in order in both modes */
        {"[1, 2]", "[2, 1]", false, false},
        {"[1, 2]", "[1, 2, 3]", false, false},
        {"[]", "[]", true, true},
        {"{}", "{}", true, true},
        /* numbers as doubles, exactly */
        {"{\"block\": 1e999}", "{\"block\": 1}", false, false},
        {"{\"block\": 1e999}", "{\"block\": 1.7976931348623157e308}", false, false},
        {"{\"block\": 1e999}", "{\"block\": 1e999}", true, true},
        {"{\"block\": 1e999}", "{\"block\": -1e999}", false, false},
        {"{\"seed\": -0}", "{\"seed\": 0}", false, false},
        {"[-0.0]", "[0]", false, false},
        {"1", "1.0000000000000002", false, false},
        {"16", "1.6e1", true, true},
        /* types and the rest */
        {"1", "\"1\"", false, false},
        {"\"a\"", "\"a\"", true, true},
        {"\"a\"", "\"a \"", false, false},
        {"null", "null", true, true},
        {"true", "false", false, false},
        {"[null]", "[false]", false, false},
        {"{\"x\": []}", "{\"x\": {}}", false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const bool n = same_text(cases[i].a, cases[i].b, true);
        const bool o = same_text(cases[i].a, cases[i].b, false);
        if (n != cases[i].by_name || o != cases[i].in_order)
            fail_msg("%s vs %s: by name %d (want %d), in order %d (want %d)", cases[i].a,
                     cases[i].b, n, cases[i].by_name, o, cases[i].in_order);
    }
    cJSON *o = cJSON_Parse("{}");
    assert_true(fp4_json_same(NULL, NULL, true) && fp4_json_same(NULL, NULL, false));
    assert_false(fp4_json_same(o, NULL, true) || fp4_json_same(NULL, o, false));
    cJSON_Delete(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_new_and_replace), cmocka_unit_test(test_write_through_symlink),
        cmocka_unit_test(test_write_missing_dir),     cmocka_unit_test(test_write_dev_full),
        cmocka_unit_test(test_write_fifo),            cmocka_unit_test(test_analysis_json),
        cmocka_unit_test(test_grid_json),             cmocka_unit_test(test_provenance_json),
        cmocka_unit_test(test_verdict_margin_and_ties), cmocka_unit_test(test_json_print_equals_cjson),
        cmocka_unit_test(test_json_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
