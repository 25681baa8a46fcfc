/* test_driver.c — the canonical row layout of a dataset for any block axis and the slab
 * transposition that produces it (known answers on small index tensors). */
#include "testutil.h"

#include "run/driver.h"

static void test_layout_last_axis(void **state)
{
    (void)state;
    int64_t dims[3] = {4, 3, 5};
    fp4_layout L;
    fp4_layout_of(dims, 3, 2, &L);
    assert_true(L.row_len == 5);
    assert_true(L.n_rows == 12);
    assert_int_equal(L.slab_dim, 0);
    assert_true(L.rows_per_index == 3);
    assert_true(L.outer_stride == 15);
}

static void test_layout_axis0(void **state)
{
    (void)state;
    int64_t dims[2] = {6, 10};
    fp4_layout L;
    fp4_layout_of(dims, 2, 0, &L);
    assert_true(L.row_len == 6);
    assert_true(L.n_rows == 10);
    assert_int_equal(L.slab_dim, 1);
    assert_true(L.rows_per_index == 1);
    assert_true(L.outer_stride == 6);
}

static void test_layout_rank01(void **state)
{
    (void)state;
    int64_t dims[1] = {100};
    fp4_layout L;
    fp4_layout_of(dims, 1, 0, &L);
    assert_true(L.row_len == 100 && L.n_rows == 1);
    fp4_layout_of(dims, 0, 0, &L);
    assert_true(L.row_len == 1 && L.n_rows == 1);
}

/* For every axis of a 2x3x4 tensor holding its own flat index, each canonical row must walk
 * along `axis` with the other coordinates fixed in row-major order, whichever slab split. */
static void test_slab_to_rows_all_axes(void **state)
{
    (void)state;
    int64_t dims[3] = {2, 3, 4};
    int64_t strides[3] = {12, 4, 1};
    float full[24];
    for (int i = 0; i < 24; i++) full[i] = (float)i;
    for (int axis = 0; axis < 3; axis++) {
        fp4_layout L;
        fp4_layout_of(dims, 3, axis, &L);
        int sd = L.slab_dim;
        for (int64_t cnt = 1; cnt <= dims[sd]; cnt++) {
            float rows[24];
            int64_t row = 0;
            for (int64_t start = 0; start < dims[sd]; start += cnt) {
                int64_t c = dims[sd] - start < cnt ? dims[sd] - start : cnt;
                /* the slab HDF5 would return: all of the other dims, [start, start+c) of sd */
                float slab[24];
                int64_t k = 0;
                int64_t sdims[3] = {dims[0], dims[1], dims[2]};
                sdims[sd] = c;
                for (int64_t a = 0; a < sdims[0]; a++)
                    for (int64_t b = 0; b < sdims[1]; b++)
                        for (int64_t d = 0; d < sdims[2]; d++) {
                            int64_t idx[3] = {a, b, d};
                            idx[sd] += start;
                            slab[k++] = full[idx[0] * 12 + idx[1] * 4 + idx[2]];
                        }
                fp4_slab_to_rows(slab, rows + row * L.row_len, dims, 3, axis, sd, c);
                row += c * L.rows_per_index;
            }
            assert_true(row == L.n_rows);
            /* expected: rows ordered by the other dims in row-major order */
            int others[2], no = 0;
            for (int d = 0; d < 3; d++)
                if (d != axis) others[no++] = d;
            int64_t r = 0;
            for (int64_t i = 0; i < dims[others[0]]; i++)
                for (int64_t j = 0; j < dims[others[1]]; j++, r++)
                    for (int64_t kk = 0; kk < dims[axis]; kk++) {
                        float want = (float)(i * strides[others[0]] + j * strides[others[1]] +
                                             kk * strides[axis]);
                        if (rows[r * L.row_len + kk] != want)
                            fail_msg("axis %d cnt %lld row %lld k %lld: %g != %g", axis,
                                     (long long)cnt, (long long)r, (long long)kk,
                                     rows[r * L.row_len + kk], want);
                    }
        }
    }
}

static void test_rht_delta(void **state)
{
    (void)state;
    fp4_metrics p, r;
    memset(&p, 0, sizeof p);
    memset(&r, 0, sizeof r);
    p.sqnr_db = 20.0;
    r.sqnr_db = 21.5;
    p.alpha = 0.98;
    r.alpha = 0.99;
    p.bucket_ratio_15 = 0.5;
    r.bucket_ratio_15 = 0.6;
    p.bucket_ratio_8 = 0.7;
    r.bucket_ratio_8 = 0.65;
    fp4_rht_delta d;
    fp4_rht_delta_compute(&p, &r, &d);
    assert_true(d.sqnr_ok);
    assert_double_abs(d.delta_sqnr_db, 1.5, 1e-12);
    assert_double_abs(d.delta_alpha, 0.01, 1e-12);
    assert_double_abs(d.delta_bucket_ratio_15, 0.1, 1e-12);
    assert_double_abs(d.delta_bucket_ratio_8, -0.05, 1e-12);
    r.sqnr_status = FP4_SQNR_EXACT;
    fp4_rht_delta_compute(&p, &r, &d);
    assert_false(d.sqnr_ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_last_axis), cmocka_unit_test(test_layout_axis0),
        cmocka_unit_test(test_layout_rank01),    cmocka_unit_test(test_slab_to_rows_all_axes),
        cmocka_unit_test(test_rht_delta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
