/* test_api.c — the public API (include/fp4diag.h): version, errors as values for bad
 * arguments, listing an input, analysis of a file's tensor, and of the same values from caller
 * memory (contiguous, transposed and padded strides: the same bits and JSON), known answers on
 * a tensor the grid holds exactly. */
#include <math.h>

#include "testutil.h"

#include "fp4diag.h"
#include "io/memsrc.h"
#include "io/source.h"

#define FILE_H5 FP4T_TESTDATA("gpt_ckpt_small.h5")
#define TENSOR "/blocks/0/fc1/weight" /* bf16 1024x256, deflate */

static void test_version(void **state)
{
    (void)state;
    assert_string_equal(fp4d_version(), "0.1.0");
    assert_int_equal(fp4d_version_number(), 100);
    assert_int_equal(FP4D_VERSION_NUMBER, fp4d_version_number());
    assert_string_equal(fp4d_status_name(FP4D_ERR_INPUT), "input_error");
    assert_string_equal(fp4d_status_name((fp4d_status)42), "unknown");
}

static void test_config_errors(void **state)
{
    (void)state;
    fp4d_config *c = (fp4d_config *)1;
    assert_int_equal(fp4d_config_parse("--bogus 3", &c), FP4D_ERR_USAGE);
    assert_null(c);
    assert_non_null(strstr(fp4d_last_error(), "bogus"));
    assert_int_equal(fp4d_config_parse("--format e9m9", &c), FP4D_ERR_USAGE);
    assert_int_equal(fp4d_config_parse("-o out.json", &c), FP4D_ERR_USAGE);
    assert_non_null(strstr(fp4d_last_error(), "-o"));
    assert_int_equal(fp4d_config_parse("--shard 0/2", &c), FP4D_ERR_USAGE);
    assert_non_null(strstr(fp4d_last_error(), "--shard"));
    assert_int_equal(fp4d_config_parse("model.h5", &c), FP4D_ERR_USAGE);
    assert_non_null(strstr(fp4d_last_error(), "model.h5"));
    assert_int_equal(fp4d_config_parse("--sr-bits 8", &c), FP4D_ERR_USAGE); /* needs sr */
    assert_int_equal(fp4d_config_parse(NULL, NULL), FP4D_ERR_USAGE);
    const char *bad[] = {"--format", NULL};
    assert_int_equal(fp4d_config_parse_argv(2, bad, &c), FP4D_ERR_USAGE);
    assert_null(c);
    /* the defaults: sqnr's three formats; --rht both doubles them */
    assert_int_equal(fp4d_config_parse(NULL, &c), FP4D_OK);
    assert_int_equal(fp4d_config_count(c), 3);
    fp4d_config_free(c);
    assert_int_equal(fp4d_config_parse("  --format nvfp4,int4\t--rht both ", &c), FP4D_OK);
    assert_int_equal(fp4d_config_count(c), 4);
    fp4d_config_free(c);
    const char *argv[] = {"--format", "e2m1", "--scale", "nvfp4"};
    assert_int_equal(fp4d_config_parse_argv(4, argv, &c), FP4D_OK);
    assert_int_equal(fp4d_config_count(c), 1);
    fp4d_config_free(c);
    fp4d_config_free(NULL);
    assert_int_equal(fp4d_config_count(NULL), 0);
}

static void test_open_errors(void **state)
{
    (void)state;
    fp4d_input *in = (fp4d_input *)1;
    assert_int_equal(fp4d_open("testdata/no-such-file.h5", &in), FP4D_ERR_INPUT);
    assert_null(in);
    assert_non_null(strstr(fp4d_last_error(), "no-such-file.h5"));
    assert_int_equal(fp4d_open("README.md", &in), FP4D_ERR_INPUT);
    assert_int_equal(fp4d_open(NULL, &in), FP4D_ERR_USAGE);
    assert_int_equal(fp4d_open(FILE_H5, NULL), FP4D_ERR_USAGE);
    fp4d_close(NULL);
}

static void test_list(void **state)
{
    (void)state;
    fp4d_input *in = NULL;
    assert_int_equal(fp4d_open(FILE_H5, &in), FP4D_OK);
    int n = fp4d_tensor_count(in), hit = 0;
    assert_true(n > 4);
    for (int i = 0; i < n; i++) {
        fp4d_tensor_info t;
        assert_int_equal(fp4d_tensor_get(in, i, &t), FP4D_OK);
        if (strcmp(t.name, TENSOR) != 0) continue;
        hit++;
        assert_string_equal(t.dtype, "bf16");
        assert_int_equal(t.rank, 2);
        assert_int_equal(t.shape[0], 1024);
        assert_int_equal(t.shape[1], 256);
        assert_int_equal(t.nelems, 1024 * 256);
        assert_string_equal(t.problem, "");
    }
    assert_int_equal(hit, 1);
    fp4d_tensor_info t;
    assert_int_equal(fp4d_tensor_get(in, n, &t), FP4D_ERR_USAGE);
    assert_int_equal(fp4d_tensor_get(in, -1, &t), FP4D_ERR_USAGE);
    fp4d_close(in);
}

static void test_analyze_errors(void **state)
{
    (void)state;
    fp4d_input *in = NULL;
    fp4d_config *c = NULL;
    fp4d_result *r = (fp4d_result *)1;
    assert_int_equal(fp4d_open(FILE_H5, &in), FP4D_OK);
    assert_int_equal(fp4d_config_parse("--format e2m1", &c), FP4D_OK);
    assert_int_equal(fp4d_analyze(in, "/blocks/0", c, &r), FP4D_ERR_INPUT);
    assert_null(r);
    assert_non_null(strstr(fp4d_last_error(), "is a group"));
    assert_int_equal(fp4d_analyze(in, "/nothing/here", c, &r), FP4D_ERR_INPUT);
    assert_non_null(strstr(fp4d_last_error(), "/nothing/here"));
    assert_int_equal(fp4d_analyze(in, TENSOR, NULL, &r), FP4D_ERR_USAGE);
    assert_int_equal(fp4d_analyze(NULL, TENSOR, c, &r), FP4D_ERR_USAGE);
    assert_int_equal(fp4d_analyze(in, NULL, c, &r), FP4D_ERR_USAGE);
    fp4d_config_free(c);
    /* an axis the tensor does not have: that tensor's error, naming it */
    assert_int_equal(fp4d_config_parse("--format e2m1 --axis 5", &c), FP4D_OK);
    assert_int_not_equal(fp4d_analyze(in, TENSOR, c, &r), FP4D_OK);
    assert_null(r);
    assert_non_null(strstr(fp4d_last_error(), TENSOR));
    fp4d_config_free(c);
    /* the input stays usable after failures */
    assert_int_equal(fp4d_config_parse("--format int4", &c), FP4D_OK);
    assert_int_equal(fp4d_analyze(in, TENSOR, c, &r), FP4D_OK);
    fp4d_metrics m;
    assert_int_equal(fp4d_result_metrics(r, 1, &m), FP4D_ERR_USAGE);
    assert_int_equal(fp4d_result_metrics(r, -1, &m), FP4D_ERR_USAGE);
    assert_int_equal(fp4d_result_metrics(r, 0, &m), FP4D_OK);
    assert_string_equal(m.format, "int4");
    assert_true(isfinite(m.sqnr_db) && m.sqnr_db > 5 && m.sqnr_db < 40);
    assert_double_rel(m.delta, 1.0 - m.alpha, 1e-12);
    fp4d_result_free(r);
    fp4d_config_free(c);
    fp4d_close(in);
    /* an already-quantized tensor is never analysed (SPEC §10): refused as fp4d_read_f32
     * refuses it (FP4D_ERR_USAGE, its message), not "no tensor analysed" */
    assert_int_equal(fp4d_open("testdata/quantized/modelopt_nvfp4", &in), FP4D_OK);
    assert_int_equal(fp4d_config_parse("--format e2m1", &c), FP4D_OK);
    r = (fp4d_result *)1;
    assert_int_equal(fp4d_analyze(in, "model.layers.0.self_attn.q_proj.weight", c, &r),
                     FP4D_ERR_USAGE);
    assert_null(r);
    assert_non_null(strstr(fp4d_last_error(), "q_proj.weight: an already-quantized NVFP4 tensor "
                                              "(modelopt): its stored 4-bit codes"));
    assert_int_equal(fp4d_analyze(in, "model.layers.0.self_attn.q_proj.weight_scale", c, &r),
                     FP4D_ERR_USAGE);
    assert_non_null(strstr(fp4d_last_error(), "the block scales"));
    /* listed as `fp4diag ls` lists it: the logical tensor (dtype nvfp4, its logical shape),
     * its members (the scales) not at all */
    bool found = false;
    for (int i = 0; i < fp4d_tensor_count(in); i++) {
        fp4d_tensor_info t;
        assert_int_equal(fp4d_tensor_get(in, i, &t), FP4D_OK);
        assert_null(strstr(t.name, "weight_scale"));
        assert_null(strstr(t.name, "input_scale"));
        if (strcmp(t.name, "model.layers.0.self_attn.q_proj.weight") != 0) continue;
        found = true;
        assert_string_equal(t.dtype, "nvfp4");
        assert_int_equal(t.rank, 2);
        assert_int_equal(t.shape[0], 32);
        assert_int_equal(t.shape[1], 64);
    }
    assert_true(found);
    /* nor read as values: its packed codes are bytes 0..255, its scales E4M3 codes */
    float buf[2048];
    assert_int_equal(fp4d_read_f32(in, "model.layers.0.self_attn.q_proj.weight", buf, 2048),
                     FP4D_ERR_USAGE);
    assert_non_null(strstr(fp4d_last_error(), "q_proj.weight: an already-quantized NVFP4 tensor "
                                              "(modelopt): its stored 4-bit codes"));
    assert_non_null(strstr(fp4d_last_error(), "`fp4diag audit SOURCE QUANTIZED`"));
    assert_int_equal(fp4d_read_f32(in, "model.layers.0.self_attn.q_proj.weight_scale", buf, 128),
                     FP4D_ERR_USAGE);
    assert_non_null(strstr(fp4d_last_error(), "the block scales"));
    assert_int_equal(fp4d_read_f32(in, "model.layers.0.self_attn.q_proj.weight_scale_2", buf, 1),
                     FP4D_ERR_USAGE);
    assert_non_null(strstr(fp4d_last_error(), "the tensor scale"));
    assert_int_equal(fp4d_read_f32(in, "model.norm.weight", buf, 64), FP4D_OK);
    fp4d_close(in);
    /* compressed-tensors stores <m>.weight under no tensor of that name: the logical name is
     * still the quantized tensor, not "no such tensor" */
    assert_int_equal(fp4d_open("testdata/quantized/ct_nvfp4", &in), FP4D_OK);
    assert_int_equal(fp4d_read_f32(in, "model.layers.0.self_attn.q_proj.weight", buf, 2048),
                     FP4D_ERR_USAGE);
    assert_non_null(strstr(fp4d_last_error(), "q_proj.weight: an already-quantized NVFP4 tensor "
                                              "(compressed-tensors)"));
    /* and analysed the same way: refused as read refuses it, not "no such tensor" */
    r = (fp4d_result *)1;
    assert_int_equal(fp4d_analyze(in, "model.layers.0.self_attn.q_proj.weight", c, &r),
                     FP4D_ERR_USAGE);
    assert_null(r);
    assert_non_null(strstr(fp4d_last_error(), "q_proj.weight: an already-quantized NVFP4 tensor "
                                              "(compressed-tensors)"));
    fp4d_close(in);
    /* a tensor with a problem (its tensor scale missing): the refusal names the problem */
    assert_int_equal(fp4d_open("testdata/quantized/bad_partners", &in), FP4D_OK);
    assert_int_equal(fp4d_analyze(in, "model.layers.0.self_attn.q_proj.weight", c, &r),
                     FP4D_ERR_USAGE);
    assert_non_null(strstr(fp4d_last_error(), "(modelopt): its stored 4-bit codes"));
    assert_non_null(strstr(fp4d_last_error(), "; its problem: weight_scale_2 missing"));
    fp4d_config_free(c);
    fp4d_close(in);
}

static void test_memory_errors(void **state)
{
    (void)state;
    fp4d_config *c = NULL;
    fp4d_result *r = (fp4d_result *)1;
    assert_int_equal(fp4d_config_parse("--format e2m1", &c), FP4D_OK);
    float x[4] = {1, 2, 3, 4};
    int64_t shape[2] = {2, 2}, neg[2] = {2, -1};
    fp4d_tensor_view v = {.name = "w", .data = x, .dtype = FP4D_F32, .rank = 2, .shape = shape};
    v.dtype = (fp4d_dtype)99;
    assert_int_equal(fp4d_analyze_memory(&v, c, &r), FP4D_ERR_USAGE);
    assert_null(r);
    assert_non_null(strstr(fp4d_last_error(), "dtype"));
    v.dtype = FP4D_F32;
    v.shape = neg;
    assert_int_equal(fp4d_analyze_memory(&v, c, &r), FP4D_ERR_USAGE);
    assert_non_null(strstr(fp4d_last_error(), "negative"));
    v.shape = shape;
    v.rank = 9;
    assert_int_equal(fp4d_analyze_memory(&v, c, &r), FP4D_ERR_USAGE);
    v.rank = 2;
    v.data = NULL;
    assert_int_equal(fp4d_analyze_memory(&v, c, &r), FP4D_ERR_USAGE);
    v.data = x;
    assert_int_equal(fp4d_analyze_memory(NULL, c, &r), FP4D_ERR_USAGE);
    assert_int_equal(fp4d_analyze_memory(&v, NULL, &r), FP4D_ERR_USAGE);
#ifndef FP4_HAVE_CUDA
    v.memory = FP4D_MEM_CUDA;
    assert_int_equal(fp4d_analyze_memory(&v, c, &r), FP4D_ERR_DEVICE);
    v.memory = FP4D_MEM_HOST;
#endif
    assert_int_equal(fp4d_analyze_memory(&v, c, &r), FP4D_OK);
    fp4d_result_free(r);
    fp4d_config_free(c);
}

/* Shapes and strides past 64-bit offsets are refused with a message naming the dimension,
 * never wrapped into a small view (issue 26): an element count whose bytes overflow, an empty
 * shape whose other dimensions do (its C-order strides would), strides whose reach overflows
 * in elements or in bytes, either sign; the largest views that fit are taken. */
static void test_memory_overflow(void **state)
{
    (void)state;
    fp4d_config *c = NULL;
    fp4d_result *r = (fp4d_result *)1;
    assert_int_equal(fp4d_config_parse("--format e2m1", &c), FP4D_OK);
    float x[32] = {0};
    for (int i = 0; i < 32; i++) x[i] = (float)(i - 10) / 8;
    const int64_t big = (int64_t)1 << 31, max = INT64_MAX;
    struct {
        int rank;
        int64_t shape[3], strides[3];
        bool given;
        const char *what;
    } bad[] = {
        {3, {big, big, 4}, {0}, false, "overflows 64 bits (dimension 1"},
        {2, {max, 2}, {0}, false, "overflows 64 bits (dimension 0"},
        {2, {2, max / 8 + 1}, {0}, false, "overflows 64 bits (dimension 1"},
        {3, {0, (int64_t)1 << 40, (int64_t)1 << 40}, {0}, false, "overflows 64 bits"},
        {2, {3, 16}, {max / 2 + 1, 1}, true, "strides reach beyond 64-bit offsets (dimension 0"},
        {2, {3, 16}, {INT64_MIN / 2 - 1, 1}, true, "strides reach beyond 64-bit offsets (dimension 0"},
        {2, {2, 16}, {max / 2, 1}, true, "beyond 64-bit byte offsets"},
        {2, {2, 16}, {INT64_MIN, 1}, true, "beyond 64-bit byte offsets"},
        {2, {2, 16}, {max - 14, 1}, true, "beyond 64-bit offsets (dimension 1"},
        {2, {2, 16}, {-(max / 4), -(max / 4)}, true, "beyond 64-bit offsets (dimension 1"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        fp4d_tensor_view v = {.name = "w", .data = x, .dtype = FP4D_F32, .rank = bad[k].rank,
                              .shape = bad[k].shape,
                              .strides = bad[k].given ? bad[k].strides : NULL};
        r = (fp4d_result *)1;
        assert_int_equal(fp4d_analyze_memory(&v, c, &r), FP4D_ERR_USAGE);
        assert_null(r);
        if (!strstr(fp4d_last_error(), bad[k].what) || !strstr(fp4d_last_error(), "memory: w: "))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", k, fp4d_last_error(), bad[k].what);
    }
    /* an empty view reaches no element: any strides are taken */
    int64_t es[2] = {0, 16}, est[2] = {max, INT64_MIN};
    fp4d_tensor_view e = {.name = "w", .data = x, .dtype = FP4D_F32, .rank = 2, .shape = es,
                          .strides = est};
    assert_int_not_equal(fp4d_analyze_memory(&e, c, &r), FP4D_ERR_USAGE);
    fp4d_result_free(r);
    r = NULL;
    /* the bound itself, checked (never read): the last byte of the farthest element at
     * offset INT64_MAX - 3 .. INT64_MAX is taken, one element further is not */
    int64_t two[2] = {2, 1}, in[2] = {max / 4 - 1, 0}, out[2] = {max / 4, 0}, n = -1;
    assert_int_equal(fp4_memory_view_check("memory", "w", FP4_STORED_F32, 2, two, in, x, &n),
                     FP4_OK);
    assert_int_equal(n, 2);
    assert_int_equal(fp4_memory_view_check("memory", "w", FP4_STORED_F32, 2, two, out, x, &n),
                     FP4_ERR_USAGE);
    in[0] = -(max / 4), out[0] = INT64_MIN / 4 - 1; /* downwards: INT64_MIN is a byte offset */
    assert_int_equal(fp4_memory_view_check("memory", "w", FP4_STORED_F32, 2, two, in, x, &n),
                     FP4_OK);
    assert_int_equal(fp4_memory_view_check("memory", "w", FP4_STORED_F32, 2, two, out, x, &n),
                     FP4_ERR_USAGE);
    fp4_error_clear();
    fp4d_config_free(c);
}

static void assert_same_result(const fp4d_result *a, const fp4d_result *b);

/* Aliasing and backward strides, per the header: a zero stride repeats one row (the same
 * result as the rows copied out), negative strides walk down from data (the same result as
 * the values stored forwards), bit for bit. */
static void test_memory_strides_alias(void **state)
{
    (void)state;
    fp4d_config *c = NULL;
    fp4d_result *ra = NULL, *rb = NULL;
    assert_int_equal(fp4d_config_parse("--format nvfp4,e2m1", &c), FP4D_OK);
    enum { R = 4, C = 32 };
    float fwd[R][C], rev[R * C], rows[R][C], row[C];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) fwd[i][j] = (float)((i * 37 + j * 11) % 29 - 14) / 7.0f;
    for (int k = 0; k < R * C; k++) rev[R * C - 1 - k] = (&fwd[0][0])[k];
    int64_t shape[2] = {R, C};
    fp4d_tensor_view a = {.name = "w", .data = fwd, .dtype = FP4D_F32, .rank = 2, .shape = shape};
    assert_int_equal(fp4d_analyze_memory(&a, c, &ra), FP4D_OK);
    int64_t back[2] = {-C, -1};
    fp4d_tensor_view b = {.name = "w", .data = &rev[R * C - 1], .dtype = FP4D_F32, .rank = 2,
                          .shape = shape, .strides = back};
    assert_int_equal(fp4d_analyze_memory(&b, c, &rb), FP4D_OK);
    assert_same_result(ra, rb);
    fp4d_result_free(ra);
    fp4d_result_free(rb);
    /* a broadcast row (stride 0 along rows) against the row written out R times */
    for (int j = 0; j < C; j++) row[j] = fwd[1][j];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) rows[i][j] = row[j];
    int64_t bcast[2] = {0, 1};
    a.data = rows;
    b.data = row;
    b.strides = bcast;
    assert_int_equal(fp4d_analyze_memory(&a, c, &ra), FP4D_OK);
    assert_int_equal(fp4d_analyze_memory(&b, c, &rb), FP4D_OK);
    assert_same_result(ra, rb);
    fp4d_result_free(ra);
    fp4d_result_free(rb);
    fp4d_config_free(c);
}

/* Known answers: one block of 16 values on the e2m1 grid with amax 6 (fp32 scale 1): every
 * value is kept exactly, so SQNR is "exact" (null), nmse 0, alpha 1, delta 0. */
static void test_memory_exact(void **state)
{
    (void)state;
    float x[2][16];
    const float grid[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
    for (int i = 0; i < 16; i++) x[0][i] = (i & 1 ? -1 : 1) * grid[i % 8], x[1][i] = grid[i / 2];
    x[0][7] = 6;
    int64_t shape[2] = {2, 16};
    fp4d_tensor_view v = {.name = "exact", .data = x, .dtype = FP4D_F32, .rank = 2, .shape = shape};
    fp4d_config *c = NULL;
    fp4d_result *r = NULL;
    assert_int_equal(fp4d_config_parse("--format e2m1 --scale fp32 --block 16", &c), FP4D_OK);
    assert_int_equal(fp4d_analyze_memory(&v, c, &r), FP4D_OK);
    fp4d_metrics m;
    assert_int_equal(fp4d_result_metrics(r, 0, &m), FP4D_OK);
    assert_string_equal(m.sqnr_status, "exact");
    assert_double_nan(m.sqnr_db);
    assert_double_exact(m.nmse, 0.0);
    assert_double_exact(m.alpha, 1.0);
    assert_double_exact(m.delta, 0.0);
    assert_int_equal(m.elements, 32);
    assert_double_exact(m.tensor_amax, 6.0);
    assert_string_equal(m.format, "e2m1");
    assert_string_equal(m.scale, "fp32");
    assert_int_equal(m.block, 16);
    assert_int_equal(m.rht, 0);
    fp4d_tensor_info t;
    int axis = -1;
    assert_int_equal(fp4d_result_tensor(r, &t, &axis), FP4D_OK);
    assert_string_equal(t.name, "exact");
    assert_string_equal(t.dtype, "f32");
    assert_int_equal(axis, 1);
    assert_non_null(strstr(fp4d_result_json(r), "\"sqnr_status\":\t\"exact\""));
    fp4d_result_free(r);
    /* one value off the grid: a finite SQNR */
    x[1][3] = 1.2f;
    assert_int_equal(fp4d_analyze_memory(&v, c, &r), FP4D_OK);
    assert_int_equal(fp4d_result_metrics(r, 0, &m), FP4D_OK);
    assert_string_equal(m.sqnr_status, "ok");
    assert_true(isfinite(m.sqnr_db) && m.sqnr_db > 20);
    fp4d_result_free(r);
    fp4d_config_free(c);
}

/* The same values as f32, f16 and bf16 words (each exact in all three: k/64, |k| < 128): the
 * same metrics bit for bit; a rank-1 tensor and a scalar are analysed too (a tensor given by
 * name always runs, whatever its rank). */
static void test_memory_dtypes(void **state)
{
    (void)state;
    enum { R = 8, C = 64 };
    float f[R * C];
    uint16_t h[R * C], b[R * C];
    for (int i = 0; i < R * C; i++) {
        int k = (i * 37 + 11) % 255 - 127;
        f[i] = (float)k / 64.0f;
        uint32_t u;
        memcpy(&u, &f[i], sizeof u);
        b[i] = (uint16_t)(u >> 16); /* exact: 7 significant bits at most */
        /* binary16: sign, exponent e + 15, 10-bit mantissa (normal values only here) */
        if (k == 0) {
            h[i] = 0;
        } else {
            int e = (int)((u >> 23) & 0xff) - 127;
            h[i] = (uint16_t)(((u >> 16) & 0x8000) | (uint32_t)(e + 15) << 10 | ((u >> 13) & 0x3ff));
        }
    }
    int64_t shape[2] = {R, C};
    fp4d_config *c = NULL;
    fp4d_result *rf = NULL, *rh = NULL, *rb = NULL;
    assert_int_equal(fp4d_config_parse("--format e2m1,int4 --scale nvfp4", &c), FP4D_OK);
    fp4d_tensor_view v = {.name = "x", .data = f, .dtype = FP4D_F32, .rank = 2, .shape = shape};
    assert_int_equal(fp4d_analyze_memory(&v, c, &rf), FP4D_OK);
    v.data = h;
    v.dtype = FP4D_F16;
    assert_int_equal(fp4d_analyze_memory(&v, c, &rh), FP4D_OK);
    v.data = b;
    v.dtype = FP4D_BF16;
    assert_int_equal(fp4d_analyze_memory(&v, c, &rb), FP4D_OK);
    for (int i = 0; i < fp4d_result_count(rf); i++) {
        fp4d_metrics mf, mh, mb;
        assert_int_equal(fp4d_result_metrics(rf, i, &mf), FP4D_OK);
        assert_int_equal(fp4d_result_metrics(rh, i, &mh), FP4D_OK);
        assert_int_equal(fp4d_result_metrics(rb, i, &mb), FP4D_OK);
        assert_true(isfinite(mf.sqnr_db));
        assert_memory_equal(&mf, &mh, sizeof mf);
        assert_memory_equal(&mf, &mb, sizeof mf);
        assert_double_exact(mf.tensor_amax, 127.0 / 64.0);
    }
    fp4d_tensor_info t;
    assert_int_equal(fp4d_result_tensor(rh, &t, NULL), FP4D_OK);
    assert_string_equal(t.dtype, "f16");
    fp4d_result_free(rf);
    fp4d_result_free(rh);
    fp4d_result_free(rb);
    /* rank 1 and rank 0 */
    int64_t n = C;
    fp4d_tensor_view v1 = {.name = "bias", .data = f, .dtype = FP4D_F32, .rank = 1, .shape = &n};
    assert_int_equal(fp4d_analyze_memory(&v1, c, &rf), FP4D_OK);
    fp4d_metrics m;
    assert_int_equal(fp4d_result_metrics(rf, 0, &m), FP4D_OK);
    assert_int_equal(m.elements, C);
    fp4d_result_free(rf);
    fp4d_tensor_view v0 = {.name = "scale", .data = &f[3], .dtype = FP4D_F32, .rank = 0};
    assert_int_equal(fp4d_analyze_memory(&v0, c, &rf), FP4D_OK);
    assert_int_equal(fp4d_result_metrics(rf, 0, &m), FP4D_OK);
    assert_int_equal(m.elements, 1);
    assert_double_exact(m.tensor_amax, fabs(f[3]));
    fp4d_result_free(rf);
    fp4d_config_free(c);
}

static void assert_same_result(const fp4d_result *a, const fp4d_result *b)
{
    assert_int_equal(fp4d_result_count(a), fp4d_result_count(b));
    for (int i = 0; i < fp4d_result_count(a); i++) {
        fp4d_metrics x, y;
        assert_int_equal(fp4d_result_metrics(a, i, &x), FP4D_OK);
        assert_int_equal(fp4d_result_metrics(b, i, &y), FP4D_OK);
        assert_true(isfinite(x.sqnr_db) && isfinite(x.alpha));
        assert_memory_equal(&x, &y, sizeof x); /* every bit, NaNs included */
    }
    assert_string_equal(fp4d_result_json(a), fp4d_result_json(b));
}

/* The file's tensor, and its stored bf16 words from memory (contiguous, transposed, padded
 * rows): the same bits and the same JSON. */
static void test_memory_equals_file(void **state)
{
    (void)state;
    fp4_source *s = NULL;
    fp4_tensor_desc d;
    memset(&d, 0, sizeof d);
    assert_int_equal(fp4_source_open(FILE_H5, &s), FP4_OK);
    assert_int_equal(fp4_source_describe(s, TENSOR, &d), FP4_OK);
    assert_int_equal(d.stored, FP4_STORED_BF16);
    const int64_t R = d.dims[0], C = d.dims[1];
    uint16_t *w = malloc((size_t)(R * C) * sizeof *w);
    assert_non_null(w);
    assert_int_equal(fp4_source_read_raw(s, &d, 0, 0, R, w), FP4_OK);
    fp4_tensor_desc_free(&d);
    fp4_source_close(s);

    fp4d_config *c = NULL;
    fp4d_input *in = NULL;
    fp4d_result *rf = NULL, *rm = NULL;
    assert_int_equal(fp4d_config_parse("--format nvfp4,e1m2,int4 --rht both --threads 2", &c),
                     FP4D_OK);
    assert_int_equal(fp4d_open(FILE_H5, &in), FP4D_OK);
    assert_int_equal(fp4d_analyze(in, TENSOR, c, &rf), FP4D_OK);
    assert_int_equal(fp4d_result_count(rf), 6);

    int64_t shape[2] = {R, C};
    fp4d_tensor_view v = {.name = TENSOR, .data = w, .dtype = FP4D_BF16, .rank = 2, .shape = shape};
    assert_int_equal(fp4d_analyze_memory(&v, c, &rm), FP4D_OK);
    assert_same_result(rf, rm);
    fp4d_result_free(rm);

    /* transposed storage: t[j][i] = w[i][j], viewed with strides (1, R) */
    uint16_t *t = malloc((size_t)(R * C) * sizeof *t);
    assert_non_null(t);
    for (int64_t i = 0; i < R; i++)
        for (int64_t j = 0; j < C; j++) t[j * R + i] = w[i * C + j];
    int64_t tstrides[2] = {1, R};
    v.data = t;
    v.strides = tstrides;
    assert_int_equal(fp4d_analyze_memory(&v, c, &rm), FP4D_OK);
    assert_same_result(rf, rm);
    fp4d_result_free(rm);

    /* padded rows (stride C + 7) whose padding holds NaN words the view never reaches */
    const int64_t P = C + 7;
    uint16_t *p = malloc((size_t)(R * P) * sizeof *p);
    assert_non_null(p);
    for (int64_t i = 0; i < R; i++)
        for (int64_t j = 0; j < P; j++) p[i * P + j] = j < C ? w[i * C + j] : 0x7fc0;
    int64_t pstrides[2] = {P, 1};
    v.data = p;
    v.strides = pstrides;
    assert_int_equal(fp4d_analyze_memory(&v, c, &rm), FP4D_OK);
    assert_same_result(rf, rm);
    fp4d_result_free(rm);

    /* a different value somewhere: no longer the same bits (the comparison can fail) */
    p[5 * P + 3] ^= 0x0040;
    assert_int_equal(fp4d_analyze_memory(&v, c, &rm), FP4D_OK);
    fp4d_metrics a, b;
    assert_int_equal(fp4d_result_metrics(rf, 0, &a), FP4D_OK);
    assert_int_equal(fp4d_result_metrics(rm, 0, &b), FP4D_OK);
    assert_true(memcmp(&a, &b, sizeof a) != 0);
    fp4d_result_free(rm);

    free(p);
    free(t);
    free(w);
    fp4d_result_free(rf);
    fp4d_close(in);
    fp4d_config_free(c);
}

/* fp4d_read_f32: the tensor's values in C order, exactly the bf16 words widened (a known
 * answer: the raw words shifted into fp32), the analysis of those values from memory equal to
 * the file's; errors for a wrong count, a missing name and a group. */
static void test_read_f32(void **state)
{
    (void)state;
    fp4_source *s = NULL;
    fp4_tensor_desc d;
    memset(&d, 0, sizeof d);
    assert_int_equal(fp4_source_open(FILE_H5, &s), FP4_OK);
    assert_int_equal(fp4_source_describe(s, TENSOR, &d), FP4_OK);
    const int64_t n = d.nelems;
    uint16_t *w = malloc((size_t)n * sizeof *w);
    assert_non_null(w);
    assert_int_equal(fp4_source_read_raw(s, &d, 0, 0, d.dims[0], w), FP4_OK);
    fp4_tensor_desc_free(&d);
    fp4_source_close(s);

    fp4d_input *in = NULL;
    assert_int_equal(fp4d_open(FILE_H5, &in), FP4D_OK);
    float *v = malloc((size_t)n * sizeof *v);
    assert_non_null(v);
    assert_int_equal(fp4d_read_f32(in, TENSOR, v, n), FP4D_OK);
    int64_t nonzero = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t bits = (uint32_t)w[i] << 16, got;
        memcpy(&got, &v[i], sizeof got);
        if (got != bits) fail_msg("element %lld: 0x%08x, want 0x%08x", (long long)i, got, bits);
        nonzero += v[i] != 0.0f;
    }
    assert_true(nonzero > n / 2);
    /* the values read, analysed from memory as f32: the file's numbers */
    fp4d_config *c = NULL;
    fp4d_result *rf = NULL, *rm = NULL;
    assert_int_equal(fp4d_config_parse("--format nvfp4 --rht both", &c), FP4D_OK);
    assert_int_equal(fp4d_analyze(in, TENSOR, c, &rf), FP4D_OK);
    int64_t shape[2] = {1024, 256};
    fp4d_tensor_view view = {.name = TENSOR, .data = v, .dtype = FP4D_F32, .rank = 2,
                             .shape = shape};
    assert_int_equal(fp4d_analyze_memory(&view, c, &rm), FP4D_OK);
    for (int i = 0; i < fp4d_result_count(rf); i++) {
        fp4d_metrics a, b;
        assert_int_equal(fp4d_result_metrics(rf, i, &a), FP4D_OK);
        assert_int_equal(fp4d_result_metrics(rm, i, &b), FP4D_OK);
        assert_double_exact(a.sqnr_db, b.sqnr_db);
        assert_double_exact(a.alpha, b.alpha);
    }
    fp4d_result_free(rf);
    fp4d_result_free(rm);
    fp4d_config_free(c);
    assert_int_equal(fp4d_read_f32(in, TENSOR, v, n - 1), FP4D_ERR_USAGE);
    assert_non_null(strstr(fp4d_last_error(), "262144 elements, the buffer 262143"));
    assert_int_equal(fp4d_read_f32(in, "/nothing/here", v, n), FP4D_ERR_INPUT);
    assert_int_equal(fp4d_read_f32(in, "/blocks/0", v, n), FP4D_ERR_INPUT);
    assert_int_equal(fp4d_read_f32(in, NULL, v, n), FP4D_ERR_USAGE);
    assert_int_equal(fp4d_read_f32(NULL, TENSOR, v, n), FP4D_ERR_USAGE);
    fp4d_close(in);
    free(v);
    free(w);
}

/* fp4d_report: the whole report of `fp4diag sqnr ARGS` (its argv recorded as given, its
 * tensor entry the one fp4d_analyze writes), errors as the CLI's, fp4d_free. */
static void test_report(void **state)
{
    (void)state;
    const char *args[] = {"--format", "nvfp4", FILE_H5, TENSOR};
    char *json = (char *)1;
    assert_int_equal(fp4d_report("sqnr", 4, args, &json), FP4D_OK);
    assert_non_null(json);
    assert_non_null(strstr(json, "\"schema\":\t\"fp4diag.report/1\""));
    assert_non_null(strstr(json, "\"fp4diag\", \"sqnr\", \"--format\", \"nvfp4\""));
    fp4d_config *c = NULL;
    fp4d_input *in = NULL;
    fp4d_result *r = NULL;
    assert_int_equal(fp4d_config_parse("--format nvfp4", &c), FP4D_OK);
    assert_int_equal(fp4d_open(FILE_H5, &in), FP4D_OK);
    assert_int_equal(fp4d_analyze(in, TENSOR, c, &r), FP4D_OK);
    /* the entry's second line (its name) appears in the report, nested two tabs deeper */
    const char *entry = fp4d_result_json(r);
    assert_true(strncmp(entry, "{\n", 2) == 0);
    const char *nl = strchr(entry + 2, '\n');
    assert_non_null(nl);
    char head[256];
    snprintf(head, sizeof head, "\n\t\t%.*s", (int)(nl - entry - 1), entry + 2);
    assert_non_null(strstr(head, TENSOR));
    assert_non_null(strstr(json, head));
    fp4d_result_free(r);
    fp4d_close(in);
    fp4d_config_free(c);
    fp4d_free(json);
    fp4d_free(NULL);

    const char *rht_on[] = {"--rht", "on", FILE_H5};
    assert_int_equal(fp4d_report("rht", 3, rht_on, &json), FP4D_ERR_USAGE);
    assert_null(json);
    assert_non_null(strstr(fp4d_last_error(), "--rht must be both"));
    const char *out[] = {"-o", "/tmp/x.json", FILE_H5};
    assert_int_equal(fp4d_report("sqnr", 3, out, &json), FP4D_ERR_USAGE);
    assert_non_null(strstr(fp4d_last_error(), "-o does not apply"));
    const char *none[] = {FILE_H5, "/no/such/*"};
    assert_int_equal(fp4d_report("sqnr", 2, none, &json), FP4D_ERR_INPUT);
    const char *emit[] = {"--emit-exclude", "modelopt:/tmp/never-written.json", FILE_H5};
    assert_int_equal(fp4d_report("sqnr", 3, emit, &json), FP4D_ERR_USAGE);
    assert_non_null(strstr(fp4d_last_error(), "--emit-exclude does not apply"));
    const char *missing[] = {"testdata/no-such-file.h5"};
    assert_int_equal(fp4d_report("sqnr", 1, missing, &json), FP4D_ERR_INPUT);
    assert_non_null(strstr(fp4d_last_error(), "no-such-file.h5"));
    assert_int_equal(fp4d_report("sqnr", 0, NULL, &json), FP4D_ERR_USAGE);
    assert_non_null(strstr(fp4d_last_error(), "missing FILE"));
    assert_int_equal(fp4d_report("gemm", 1, missing, &json), FP4D_ERR_USAGE);
    assert_int_equal(fp4d_report("audit", 1, missing, &json), FP4D_ERR_USAGE);
    assert_int_equal(fp4d_report("sqnr", 1, missing, NULL), FP4D_ERR_USAGE);
    /* a report with an errors entry is still a report: an axis one tensor lacks */
    const char *axis[] = {"--format", "e2m1", "--axis", "2", "--all-tensors", FILE_H5,
                          "/blocks/0/fc1"};
    assert_int_equal(fp4d_report("sqnr", 7, axis, &json), FP4D_OK);
    assert_non_null(strstr(json, "\"errors\":\t[{"));
    fp4d_free(json);
}

/* fp4d_result_sums, a known answer: one block of e2m1 under an fp32 scale, amax 6 (scale 1),
 * fifteen 0.125s that round to 0: sum x^2 = 36 + 15/64, sum err^2 = 15/64, exactly. */
static void test_result_sums(void **state)
{
    (void)state;
    float x[16];
    x[0] = 6.0f;
    for (int i = 1; i < 16; i++) x[i] = 0.125f;
    int64_t shape[1] = {16};
    fp4d_tensor_view v = {.name = "k", .data = x, .dtype = FP4D_F32, .rank = 1, .shape = shape};
    fp4d_config *c = NULL;
    fp4d_result *r = NULL;
    assert_int_equal(fp4d_config_parse("--format e2m1,int4 --block 16", &c), FP4D_OK);
    assert_int_equal(fp4d_analyze_memory(&v, c, &r), FP4D_OK);
    double x2 = -1, e2 = -1;
    assert_int_equal(fp4d_result_sums(r, 0, &x2, &e2), FP4D_OK);
    assert_double_exact(x2, 36.0 + 15.0 / 64.0);
    assert_double_exact(e2, 15.0 / 64.0);
    fp4d_metrics m;
    assert_int_equal(fp4d_result_metrics(r, 0, &m), FP4D_OK);
    assert_double_exact(m.nmse, e2 / x2);
    /* int4 (levels 0..7, scale 6/7): 0.125 * 7/6 = 0.1458 rounds to 0 too */
    assert_int_equal(fp4d_result_sums(r, 1, NULL, &e2), FP4D_OK);
    assert_double_exact(e2, 15.0 / 64.0);
    assert_int_equal(fp4d_result_sums(r, 2, &x2, &e2), FP4D_ERR_USAGE);
    assert_int_equal(fp4d_result_sums(r, -1, &x2, &e2), FP4D_ERR_USAGE);
    assert_int_equal(fp4d_result_sums(NULL, 0, &x2, &e2), FP4D_ERR_USAGE);
    fp4d_result_free(r);
    fp4d_config_free(c);
}

/* fp4d_recipe_keeps: the default selection's rule table (SPEC §9), known answers */
static void test_recipe_keeps(void **state)
{
    (void)state;
    const char *kind = "x", *glob = "x";
    assert_int_equal(fp4d_recipe_keeps("lm_head.weight", &kind, &glob), 1);
    assert_string_equal(kind, "output head");
    assert_string_equal(glob, "*lm_head*");
    assert_int_equal(fp4d_recipe_keeps("/model/layers/3/mlp/gate/weight", &kind, NULL), 1);
    assert_string_equal(kind, "MoE router");
    assert_int_equal(fp4d_recipe_keeps("model.embed_tokens.weight", &kind, NULL), 1);
    assert_string_equal(kind, "embedding");
    assert_int_equal(fp4d_recipe_keeps("Model.Layers.0.Input_LayerNorm.weight", &kind, NULL), 1);
    assert_string_equal(kind, "norm");
    assert_int_equal(fp4d_recipe_keeps("model.layers.0.mlp.down_proj.weight", &kind, &glob), 0);
    assert_null(kind);
    assert_null(glob);
    assert_int_equal(fp4d_recipe_keeps("model.layers.0.mlp.gate_proj.weight", NULL, NULL), 0);
    assert_int_equal(fp4d_recipe_keeps(NULL, &kind, &glob), -1);
    assert_null(kind);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_open_errors),    cmocka_unit_test(test_list),
        cmocka_unit_test(test_analyze_errors), cmocka_unit_test(test_memory_errors),
        cmocka_unit_test(test_memory_exact),   cmocka_unit_test(test_memory_dtypes),
        cmocka_unit_test(test_memory_equals_file),
        cmocka_unit_test(test_memory_overflow), cmocka_unit_test(test_memory_strides_alias),
        cmocka_unit_test(test_read_f32),       cmocka_unit_test(test_report),
        cmocka_unit_test(test_result_sums),    cmocka_unit_test(test_recipe_keeps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
