/* test_gemm.c — GEMM diagnostics (SPEC §6): hand-computed products per path, RHT cancelling in
 * the product, block-size independence, SR reproducibility, recipes, shapes, compounding. */
#include "testutil.h"

#include <math.h>

#include "run/gemm.h"

/* X 2x3, W 2x3 (N = 2, K = 3), dY 2x2, and their three products by hand:
 *   FPROP Y  = X Wᵀ  = [[-2, 4], [-2, 13]]            Σ² = 193
 *   DGRAD dX = dY W  = [[-1, -1, -1], [4, 2, 0]]      Σ² = 23
 *   WGRAD dW = dYᵀ X = [[1, 2, 3], [7, 8, 9]]         Σ² = 208 */
static const float hx[6] = {1, 2, 3, 4, 5, 6};
static const float hw[6] = {1, 0, -1, 2, 1, 0};
static const float hdy[4] = {1, -1, 0, 2};

static fp4_rht_signs te16;

static int setup(void **state)
{
    (void)state;
    return fp4_rht_signs_make("te", 16, &te16) == FP4_OK ? 0 : -1;
}

static void config_custom(fp4_gemm_config *gc, fp4_rht_scope rht, fp4_sr_scope sr, bool skip)
{
    fp4_gemm_config_default(gc);
    gc->recipe = FP4_RECIPE_CUSTOM;
    gc->rht_scope = rht;
    gc->sr_scope = sr;
    gc->signs = &te16;
    gc->test_skip_rounding = skip;
}

static void test_hand_product_all_paths(void **state)
{
    (void)state;
    fp4_gemm_config gc;
    config_custom(&gc, FP4_RHT_SCOPE_NONE, FP4_SR_SCOPE_NONE, true);
    fp4_gemm_operands ops = {hx, hw, hdy, 2, 2, 3};
    const double want_z2[3] = {193.0, 23.0, 208.0};
    const int64_t want_shape[3][3] = {{2, 2, 3}, {2, 3, 2}, {2, 3, 2}};
    for (int p = 0; p < FP4_GEMM_NPATHS; p++) {
        fp4_gemm_path_result r;
        assert_int_equal(fp4_gemm_path_run(&gc, (fp4_gemm_path)p, &ops, &r), FP4_OK);
        assert_true(fabs(r.sum_z2 - want_z2[p]) < 1e-12);
        assert_true(fabs(r.sum_zqz - want_z2[p]) < 1e-12);
        assert_int_equal(r.sqnr_status, FP4_SQNR_EXACT);
        assert_true(fabs(r.eta - 1.0) < 1e-15);
        assert_int_equal(r.rows, want_shape[p][0]);
        assert_int_equal(r.cols, want_shape[p][1]);
        assert_int_equal(r.contraction, want_shape[p][2]);
    }
}

/* A pinned quantized case, e2m1 recipe (FPROP: no RHT, RTNE, fp32 block scale):
 * X = [1, 2.2, 6] → amax 6, s = 1 → [1, 2, 6]; W = [1, 1, 1] exact. Y = 9.2, Ŷ = 9. */
static void test_hand_quantized_fprop(void **state)
{
    (void)state;
    const float x[3] = {1.0f, 2.2f, 6.0f}, w[3] = {1, 1, 1};
    fp4_gemm_config gc;
    fp4_gemm_config_default(&gc);
    gc.recipe = FP4_RECIPE_E2M1;
    gc.signs = &te16;
    fp4_gemm_operands ops = {x, w, NULL, 1, 1, 3};
    fp4_gemm_path_result r;
    assert_int_equal(fp4_gemm_path_run(&gc, FP4_GEMM_FPROP, &ops, &r), FP4_OK);
    double y = 1.0 + (double)2.2f + 6.0;
    assert_false(r.rht);
    assert_true(fabs(r.sum_z2 - y * y) < 1e-9);
    assert_true(fabs(r.sum_err2 - (9.0 - y) * (9.0 - y)) < 1e-9);
    assert_int_equal(r.sqnr_status, FP4_SQNR_OK);
    assert_true(fabs(r.sqnr_db - 10.0 * log10(y * y / ((9.0 - y) * (9.0 - y)))) < 1e-9);
    assert_true(fabs(r.eta - 9.0 / y) < 1e-12);
    double x2 = 1.0 + (double)2.2f * (double)2.2f + 36.0;
    assert_true(fabs(r.alpha_a - (1.0 + 2.0 * (double)2.2f + 36.0) / x2) < 1e-12);
    assert_true(fabs(r.alpha_b - 1.0) < 1e-15);
    assert_true(fabs(r.alpha_product - r.alpha_a) < 1e-15);
    assert_int_equal(r.op[0].tensor, FP4_GEMM_X);
    assert_int_equal(r.op[1].tensor, FP4_GEMM_W);
    assert_int_equal(r.op[1].m.sqnr_status, FP4_SQNR_EXACT);
}

static float *rand_fill(int64_t n, uint32_t seed)
{
    float *v = malloc((size_t)n * sizeof *v);
    assert_non_null(v);
    uint32_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * (1.0f + (float)(i % 7));
    }
    return v;
}

/* Σ z² of each path by a naive triple loop, to check layouts on non-square shapes. */
static double naive_z2(fp4_gemm_path p, const float *x, const float *w, const float *dy,
                       int64_t m, int64_t n, int64_t k)
{
    double s = 0.0;
    if (p == FP4_GEMM_FPROP)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double z = 0;
                for (int64_t c = 0; c < k; c++) z += (double)x[i * k + c] * w[j * k + c];
                s += z * z;
            }
    else if (p == FP4_GEMM_DGRAD)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < k; j++) {
                double z = 0;
                for (int64_t c = 0; c < n; c++) z += (double)dy[i * n + c] * w[c * k + j];
                s += z * z;
            }
    else
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < k; j++) {
                double z = 0;
                for (int64_t c = 0; c < m; c++) z += (double)dy[c * n + i] * x[c * k + j];
                s += z * z;
            }
    return s;
}

/* With rounding bypassed but RHT (and padding: 50, 24 and 40 are not multiples of 16) kept on
 * both operands, the rotation cancels: Ẑ = Z to fp32 rounding of the rotated operands. */
static void test_rht_cancels_in_product(void **state)
{
    (void)state;
    const int64_t m = 40, n = 24, k = 50;
    float *x = rand_fill(m * k, 1), *w = rand_fill(n * k, 2), *dy = rand_fill(m * n, 3);
    fp4_gemm_config gc;
    config_custom(&gc, FP4_RHT_SCOPE_ALL, FP4_SR_SCOPE_NONE, true);
    gc.block_rows = 7;
    fp4_gemm_operands ops = {x, w, dy, m, n, k};
    for (int p = 0; p < FP4_GEMM_NPATHS; p++) {
        fp4_gemm_path_result r;
        assert_int_equal(fp4_gemm_path_run(&gc, (fp4_gemm_path)p, &ops, &r), FP4_OK);
        assert_true(r.rht);
        assert_int_equal(r.padded_contraction % 16, 0);
        assert_true(r.padded_contraction > r.contraction);
        double z2 = naive_z2((fp4_gemm_path)p, x, w, dy, m, n, k);
        assert_true(fabs(r.sum_z2 - z2) < 1e-10 * z2);
        /* relative error of the product: sqrt(Σerr²/Σz²) ≤ 1e-6 */
        assert_true(sqrt(r.sum_err2 / r.sum_z2) < 1e-6);
        assert_true(fabs(r.eta - 1.0) < 1e-6);
        /* the operands are rotated, not quantized: energies preserved */
        assert_true(fabs(r.alpha_a - 1.0) < 1e-12 && fabs(r.alpha_b - 1.0) < 1e-12);
    }
    free(x), free(w), free(dy);
}

/* Output-row blocking does not change the numbers (sums in a fixed order per row). */
static void test_block_rows_independent(void **state)
{
    (void)state;
    const int64_t m = 64, n = 48, k = 32;
    float *x = rand_fill(m * k, 4), *w = rand_fill(n * k, 5), *dy = rand_fill(m * n, 6);
    fp4_gemm_operands ops = {x, w, dy, m, n, k};
    fp4_gemm_config gc;
    config_custom(&gc, FP4_RHT_SCOPE_ALL, FP4_SR_SCOPE_DY, false);
    for (int p = 0; p < FP4_GEMM_NPATHS; p++) {
        fp4_gemm_path_result r1, r2;
        gc.block_rows = 256;
        assert_int_equal(fp4_gemm_path_run(&gc, (fp4_gemm_path)p, &ops, &r1), FP4_OK);
        gc.block_rows = 16;
        assert_int_equal(fp4_gemm_path_run(&gc, (fp4_gemm_path)p, &ops, &r2), FP4_OK);
        assert_true(fabs(r1.sum_err2 - r2.sum_err2) <= 1e-12 * r1.sum_err2);
        assert_true(fabs(r1.eta - r2.eta) < 1e-12);
        assert_true(fabs(r1.op[0].m.sum_err2 - r2.op[0].m.sum_err2) <=
                    1e-12 * r1.op[0].m.sum_err2);
        assert_int_equal(r1.sqnr_status, FP4_SQNR_OK);
        assert_true(r1.sqnr_db > 5.0 && r1.sqnr_db < 40.0);
    }
    free(x), free(w), free(dy);
}

/* SR (on dY in DGRAD and WGRAD): the same seed gives identical numbers, another seed differs. */
static void test_sr_reproducible(void **state)
{
    (void)state;
    const int64_t m = 48, n = 32, k = 32;
    float *x = rand_fill(m * k, 7), *w = rand_fill(n * k, 8), *dy = rand_fill(m * n, 9);
    fp4_gemm_operands ops = {x, w, dy, m, n, k};
    fp4_gemm_config gc;
    fp4_gemm_config_default(&gc); /* ufp4: SR on dY */
    gc.signs = &te16;
    const fp4_gemm_path sr_paths[2] = {FP4_GEMM_DGRAD, FP4_GEMM_WGRAD};
    for (int i = 0; i < 2; i++) {
        fp4_gemm_path_result a, b, c;
        gc.base.seed = 42;
        assert_int_equal(fp4_gemm_path_run(&gc, sr_paths[i], &ops, &a), FP4_OK);
        assert_int_equal(fp4_gemm_path_run(&gc, sr_paths[i], &ops, &b), FP4_OK);
        gc.base.seed = 43;
        assert_int_equal(fp4_gemm_path_run(&gc, sr_paths[i], &ops, &c), FP4_OK);
        assert_int_equal(a.op[0].cfg.rounding, FP4_ROUND_SR);
        assert_true(a.sum_err2 == b.sum_err2 && a.sum_zqz == b.sum_zqz);
        assert_true(a.op[0].m.sum_err2 == b.op[0].m.sum_err2);
        assert_true(a.sum_err2 != c.sum_err2);
        assert_true(a.op[0].m.sum_err2 != c.op[0].m.sum_err2);
        /* the RTNE operand does not depend on the seed */
        assert_true(a.op[1].m.sum_err2 == c.op[1].m.sum_err2);
    }
    free(x), free(w), free(dy);
}

static void test_recipes_resolve(void **state)
{
    (void)state;
    fp4_gemm_config gc;
    fp4_gemm_config_default(&gc);
    assert_int_equal(gc.recipe, FP4_RECIPE_UFP4);
    gc.signs = &te16;
    gc.base.scale = FP4_SCALE_NVFP4;
    gc.base.weight_2d = true;
    uint32_t streams[FP4_GEMM_NPATHS * 3];
    int ns = 0;
    for (int r = 0; r < 2; r++) {
        gc.recipe = r == 0 ? FP4_RECIPE_UFP4 : FP4_RECIPE_E2M1;
        for (int p = 0; p < FP4_GEMM_NPATHS; p++)
            for (int t = 0; t < 3; t++) {
                fp4_qconfig q;
                assert_int_equal(fp4_gemm_operand_config(&gc, (fp4_gemm_path)p,
                                                         (fp4_gemm_tensor)t, &q), FP4_OK);
                assert_int_equal(q.format.id, r == 0 ? FP4_FMT_E1M2 : FP4_FMT_E2M1);
                assert_int_equal(q.rounding, t == FP4_GEMM_DY ? FP4_ROUND_SR : FP4_ROUND_RTNE);
                bool want_rht = r == 0 || p == FP4_GEMM_WGRAD;
                assert_int_equal(q.rht != NULL, want_rht);
                assert_int_equal(q.weight_2d, t == FP4_GEMM_W);
                if (r == 0) streams[ns++] = q.stream;
            }
    }
    for (int i = 0; i < ns; i++)
        for (int j = i + 1; j < ns; j++) assert_true(streams[i] != streams[j]);
    /* custom: --sr all, --rht-scope none */
    gc.recipe = FP4_RECIPE_CUSTOM;
    gc.base.weight_2d = false;
    gc.format = (fp4_format){FP4_FMT_INT4, 0};
    gc.sr_scope = FP4_SR_SCOPE_ALL;
    gc.rht_scope = FP4_RHT_SCOPE_NONE;
    fp4_qconfig q;
    assert_int_equal(fp4_gemm_operand_config(&gc, FP4_GEMM_FPROP, FP4_GEMM_X, &q), FP4_OK);
    assert_int_equal(q.format.id, FP4_FMT_INT4);
    assert_int_equal(q.rounding, FP4_ROUND_SR);
    assert_null(q.rht);
    /* a path that needs RHT without signs is a usage error */
    fp4_gemm_config_default(&gc);
    assert_int_equal(fp4_gemm_operand_config(&gc, FP4_GEMM_FPROP, FP4_GEMM_X, &q),
                     FP4_ERR_USAGE);
}

static void test_path_shapes(void **state)
{
    (void)state;
    const int64_t m = 5, n = 3, k = 4;
    fp4_gemm_path_shape s;
    fp4_gemm_path_shape_of(FP4_GEMM_FPROP, m, n, k, &s);
    assert_true(s.rows == m && s.cols == n && s.contraction == k);
    assert_true(s.a == FP4_GEMM_X && s.b == FP4_GEMM_W && !s.a_transposed && !s.b_transposed);
    fp4_gemm_path_shape_of(FP4_GEMM_DGRAD, m, n, k, &s);
    assert_true(s.rows == m && s.cols == k && s.contraction == n);
    assert_true(s.a == FP4_GEMM_DY && s.b == FP4_GEMM_W && !s.a_transposed && s.b_transposed);
    fp4_gemm_path_shape_of(FP4_GEMM_WGRAD, m, n, k, &s);
    assert_true(s.rows == n && s.cols == k && s.contraction == m);
    assert_true(s.a == FP4_GEMM_DY && s.b == FP4_GEMM_X && s.a_transposed && s.b_transposed);
}

static void test_shapes_check(void **state)
{
    (void)state;
    int64_t xd[2] = {1024, 256}, wd[2] = {512, 256}, dyd[2] = {1024, 512}, m, n, k;
    assert_int_equal(fp4_gemm_shapes_check(xd, 2, wd, 2, dyd, 2, &m, &n, &k), FP4_OK);
    assert_true(m == 1024 && n == 512 && k == 256);
    int64_t wbad[2] = {512, 1024};
    fp4_error_clear();
    assert_int_equal(fp4_gemm_shapes_check(xd, 2, wbad, 2, dyd, 2, &m, &n, &k), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "1024x256"));
    assert_non_null(strstr(fp4_last_error(), "512x1024"));
    int64_t dybad[2] = {1000, 512};
    assert_int_equal(fp4_gemm_shapes_check(xd, 2, wd, 2, dybad, 2, &m, &n, &k), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "1000x512"));
    assert_int_equal(fp4_gemm_shapes_check(xd, 1, wd, 2, NULL, 0, &m, &n, &k), FP4_ERR_INPUT);
    /* dY absent: only FPROP is possible, M and K from X, N from W */
    assert_int_equal(fp4_gemm_shapes_check(xd, 2, wd, 2, NULL, 0, &m, &n, &k), FP4_OK);
    assert_true(m == 1024 && n == 512 && k == 256);
}

static void test_names_parse(void **state)
{
    (void)state;
    unsigned mask;
    assert_int_equal(fp4_gemm_path_parse_list("all", &mask), FP4_OK);
    assert_int_equal(mask, 7u);
    assert_int_equal(fp4_gemm_path_parse_list("wgrad,fprop", &mask), FP4_OK);
    assert_int_equal(mask, 5u);
    assert_int_equal(fp4_gemm_path_parse_list("fprop,", &mask), FP4_ERR_USAGE);
    assert_int_equal(fp4_gemm_path_parse_list("bprop", &mask), FP4_ERR_USAGE);
    fp4_gemm_recipe r;
    assert_int_equal(fp4_gemm_recipe_parse("e2m1", &r), FP4_OK);
    assert_int_equal(r, FP4_RECIPE_E2M1);
    assert_int_equal(fp4_gemm_recipe_parse("nvfp4", &r), FP4_OK);
    assert_int_equal(r, FP4_RECIPE_NVFP4);
    assert_int_equal(fp4_gemm_recipe_parse("mxfp4", &r), FP4_ERR_USAGE);
    assert_string_equal(fp4_gemm_path_name(FP4_GEMM_DGRAD), "dgrad");
    assert_string_equal(fp4_gemm_tensor_name(FP4_GEMM_DY), "dy");
}

static void test_compound(void **state)
{
    (void)state;
    const double eta[2] = {0.9, 0.8};
    double prod, ex;
    fp4_gemm_compound(eta, 2, 0, &prod, &ex);
    assert_true(fabs(prod - 0.72) < 1e-15);
    assert_true(fabs(ex - exp(-0.3)) < 1e-15);
    fp4_gemm_compound(eta, 1, 4, &prod, &ex);
    assert_true(fabs(prod - pow(0.9, 4)) < 1e-15);
    assert_true(fabs(ex - exp(-0.4)) < 1e-14);
}

static void test_zero_signal(void **state)
{
    (void)state;
    const float x[32] = {0}, w[32] = {0};
    fp4_gemm_config gc;
    fp4_gemm_config_default(&gc);
    gc.signs = &te16;
    fp4_gemm_operands ops = {x, w, NULL, 2, 2, 16};
    fp4_gemm_path_result r;
    assert_int_equal(fp4_gemm_path_run(&gc, FP4_GEMM_FPROP, &ops, &r), FP4_OK);
    assert_int_equal(r.sqnr_status, FP4_SQNR_ZERO_SIGNAL);
    assert_true(isnan(r.sqnr_db) && isnan(r.eta));
    /* DGRAD needs dY */
    fp4_error_clear();
    assert_int_equal(fp4_gemm_path_run(&gc, FP4_GEMM_DGRAD, &ops, &r), FP4_ERR_INPUT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_product_all_paths),
        cmocka_unit_test(test_hand_quantized_fprop),
        cmocka_unit_test(test_rht_cancels_in_product),
        cmocka_unit_test(test_block_rows_independent),
        cmocka_unit_test(test_sr_reproducible),
        cmocka_unit_test(test_recipes_resolve),
        cmocka_unit_test(test_path_shapes),
        cmocka_unit_test(test_shapes_check),
        cmocka_unit_test(test_names_parse),
        cmocka_unit_test(test_compound),
        cmocka_unit_test(test_zero_signal),
    };
    return cmocka_run_group_tests_name("gemm", tests, setup, NULL);
}
