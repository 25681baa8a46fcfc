/* test_reader.c — the reader pipeline (run/reader.h) on a small safetensors file whose values
 * are known (each element its flat index): every slab in order with its values, fp32 and stored
 * bf16 words, two read passes, kept rows read in place, an error-entry plan read not at all,
 * the next tensor read ahead while one is held, a budget far below a slab, a failing read
 * ending its tensor only (for kept rows, read several slabs at a time, at the group's first
 * slab), and a tensor given up half-way. */
#include "testutil.h"

#include <math.h>

#include "io/source.h"
#include "run/reader.h"

/* a: f32 [6, 4]; b: bf16 [3, 8]; c: f32 [5, 2] — values 0, 1, 2, ... in each */
static char *write_fixture(const char *dir)
{
    static const char hdr[] =
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[6,4],\"data_offsets\":[0,96]},"
        "\"b\":{\"dtype\":\"BF16\",\"shape\":[3,8],\"data_offsets\":[96,144]},"
        "\"c\":{\"dtype\":\"F32\",\"shape\":[5,2],\"data_offsets\":[144,184]}}";
    char *path = malloc(strlen(dir) + 32);
    assert_non_null(path);
    sprintf(path, "%s/t.safetensors", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    size_t hl = sizeof hdr - 1, pad = (8 - hl % 8) % 8;
    uint64_t n = hl + pad;
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(n >> (8 * i));
    assert_int_equal(fwrite(len, 1, 8, f), 8);
    assert_int_equal(fwrite(hdr, 1, hl, f), hl);
    for (size_t i = 0; i < pad; i++) fputc(' ', f);
    for (int i = 0; i < 24; i++) {
        float v = (float)i;
        assert_int_equal(fwrite(&v, 4, 1, f), 1);
    }
    for (int i = 0; i < 24; i++) {
        float v = (float)i;
        uint32_t u;
        memcpy(&u, &v, 4);
        uint16_t w = (uint16_t)(u >> 16); /* small integers are exact in bf16 */
        assert_int_equal(fwrite(&w, 2, 1, f), 1);
    }
    for (int i = 0; i < 10; i++) {
        float v = (float)i;
        assert_int_equal(fwrite(&v, 4, 1, f), 1);
    }
    assert_int_equal(fclose(f), 0);
    return path;
}

typedef struct fixture {
    char *dir, *path;
    fp4_source *src;
    fp4_tensor_desc *infos;
    int n;
    const fp4_tensor_desc *by[3]; /* a, b, c */
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    fx->dir = fp4t_tmpdir();
    fx->path = write_fixture(fx->dir);
    if (fp4_source_open(fx->path, &fx->src) != FP4_OK) return -1;
    if (fp4_source_select(fx->src, NULL, 0, &fx->infos, &fx->n) != FP4_OK || fx->n != 3)
        return -1;
    for (int i = 0; i < fx->n; i++) {
        const char *nm = fx->infos[i].name;
        const int w = nm[strlen(nm) - 1] - 'a';
        if (w < 0 || w > 2) return -1;
        fx->by[w] = &fx->infos[i];
    }
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    fp4_tensor_desc_free_list(fx->infos, fx->n);
    fp4_source_close(fx->src);
    free(fx->path);
    fp4t_rmtree(fx->dir);
    free(fx);
    return 0;
}

/* A plan of 2-D tensor t read in slabs of `count_max` rows (slab_dim 0, no transposition). */
static fp4_read_plan plan_rows(const fp4_tensor_desc *t, int64_t count_max, int words, int passes)
{
    fp4_read_plan P;
    memset(&P, 0, sizeof P);
    fp4_layout_of(t->dims, t->rank, t->rank - 1, &P.L);
    P.count_max = count_max;
    P.total = t->dims[0];
    P.buf_elems = count_max * P.L.outer_stride;
    P.reads = true;
    P.nbuf = P.total > count_max ? 2 : 1;
    P.read_passes = passes;
    P.words = words;
    P.esz = (int64_t)fp4_read_elem_size(words);
    return P;
}

/* The slab's values are its elements' flat indices, as fp32 or bf16 words. */
static void assert_slab_values(const fp4_ready_slab *s, const fp4_read_plan *P)
{
    const int64_t first = s->k * P->count_max * P->L.outer_stride;
    for (int64_t i = 0; i < s->cnt * P->L.outer_stride; i++) {
        float v;
        if (P->words) {
            uint16_t w;
            memcpy(&w, s->buf + 2 * i, 2);
            uint32_t u = (uint32_t)w << 16;
            memcpy(&v, &u, 4);
        } else {
            memcpy(&v, s->buf + 4 * i, 4);
        }
        assert_true(isfinite(v));
        assert_true(v == (float)(first + i));
    }
}

/* Take every slab of tensor seq: their (pass, k, cnt, last) in order and their values. */
static void take_all(fp4_reader *r, int seq, const fp4_read_plan *P)
{
    const int64_t nslabs = (P->total + P->count_max - 1) / P->count_max;
    for (int pass = 0; pass < P->read_passes; pass++)
        for (int64_t k = 0; k < nslabs; k++) {
            fp4_ready_slab s;
            assert_int_equal(fp4_reader_next(r, seq, &s), FP4_OK);
            assert_int_equal(s.seq, seq);
            assert_int_equal(s.pass, pass);
            assert_true(s.k == k);
            assert_true(s.cnt == (k + 1 < nslabs ? P->count_max : P->total - k * P->count_max));
            assert_true(s.last == (pass + 1 == P->read_passes && k + 1 == nslabs));
            assert_non_null(s.buf);
            assert_slab_values(&s, P);
            const bool own = s.own;
            fp4_reader_release(r, &s);
            assert_false(s.own);
            if (own) assert_null(s.buf); /* an own buffer went back to the reader */
        }
    fp4_reader_tensor_done(r, seq);
    fp4_reader_passed(r, seq);
}

static void test_slabs_in_order(void **state)
{
    fixture *fx = *state;
    const fp4_tensor_desc *order[4] = {fx->by[0], fx->by[1], fx->by[2], fx->by[0]};
    fp4_read_plan plans[4] = {plan_rows(fx->by[0], 4, 0, 1), /* 6 rows: slabs of 4 and 2 */
                              plan_rows(fx->by[1], 1, FP4_WORDS_BF16, 1), /* words, 3 slabs */
                              plan_rows(fx->by[2], 2, 0, 1), plan_rows(fx->by[0], 5, 0, 2)};
    plans[2].err = FP4_ERR_INPUT; /* an error entry: the reader reads none of it */
    fp4_reader *r = NULL;
    assert_int_equal(fp4_reader_start(fx->src, NULL, order, plans, 4, (int64_t)1 << 30, &r),
                     FP4_OK);
    take_all(r, 0, &plans[0]);
    take_all(r, 1, &plans[1]);
    fp4_reader_passed(r, 2);
    take_all(r, 3, &plans[3]); /* read twice: pass 0 then pass 1 */
    fp4_reader_join(r);
    fp4_reader_join(NULL);
}

/* Kept rows: slabs land in place in one buffer that holds the whole tensor; the next tensor's
 * kept rows are read while the first one's are still held (one tensor ahead). A budget of one
 * byte still completes: beyond it only while the analysis waits on an empty queue. */
static void test_kept_read_ahead_and_budget(void **state)
{
    fixture *fx = *state;
    for (int b = 0; b < 2; b++) {
        const int64_t budget = b ? 1 : (int64_t)1 << 30;
        const fp4_tensor_desc *order[2] = {fx->by[0], fx->by[2]};
        fp4_read_plan plans[2] = {plan_rows(fx->by[0], 2, 0, 1), plan_rows(fx->by[2], 2, 0, 1)};
        plans[0].keep = plans[1].keep = true;
        fp4_reader *r = NULL;
        assert_int_equal(fp4_reader_start(fx->src, NULL, order, plans, 2, budget, &r), FP4_OK);
        for (int64_t k = 0; k < 3; k++) {
            fp4_ready_slab s;
            assert_int_equal(fp4_reader_next(r, 0, &s), FP4_OK);
            assert_false(s.own);
            assert_ptr_equal(s.buf, fp4_reader_mem(r, 0)->kept + k * 2 * 4 * 4);
            assert_slab_values(&s, &plans[0]);
            fp4_reader_release(r, &s);
        }
        const float *kept = (const float *)(const void *)fp4_reader_mem(r, 0)->kept;
        for (int i = 0; i < 24; i++) assert_true(kept[i] == (float)i);
        if (!b) { /* tensor 1 comes while tensor 0 still holds its rows */
            fp4_ready_slab s;
            assert_int_equal(fp4_reader_next(r, 1, &s), FP4_OK);
            assert_non_null(fp4_reader_mem(r, 0)->kept);
            assert_non_null(fp4_reader_mem(r, 1)->kept);
            assert_slab_values(&s, &plans[1]);
            fp4_reader_release(r, &s);
            for (int k = 1; k < 3; k++) {
                assert_int_equal(fp4_reader_next(r, 1, &s), FP4_OK);
                fp4_reader_release(r, &s);
            }
            fp4_reader_tensor_done(r, 0);
            fp4_reader_passed(r, 0);
        } else {
            fp4_reader_tensor_done(r, 0);
            fp4_reader_passed(r, 0);
            take_all(r, 1, &plans[1]);
        }
        fp4_reader_join(r);
    }
}

/* A read that fails (a plan past the tensor's end) ends that tensor with its message and
 * FP4_ERR_INPUT as its last slab; the next tensor reads as ever. A tensor given up after its
 * first slab has its other slabs dropped. */
static void test_errors_and_skip(void **state)
{
    fixture *fx = *state;
    const fp4_tensor_desc *order[3] = {fx->by[0], fx->by[2], fx->by[0]};
    fp4_read_plan plans[3] = {plan_rows(fx->by[0], 4, 0, 1), plan_rows(fx->by[2], 1, 0, 1),
                              plan_rows(fx->by[0], 2, 0, 1)};
    plans[0].total = 9; /* rows 4..8 do not exist */
    fp4_reader *r = NULL;
    assert_int_equal(fp4_reader_start(fx->src, NULL, order, plans, 3, (int64_t)1 << 30, &r),
                     FP4_OK);
    fp4_ready_slab s;
    assert_int_equal(fp4_reader_next(r, 0, &s), FP4_OK);
    assert_false(s.last);
    fp4_reader_release(r, &s);
    fp4_status st = fp4_reader_next(r, 0, &s);
    assert_int_not_equal(st, FP4_OK);
    assert_true(s.last);
    assert_non_null(strstr(fp4_last_error(), "t.safetensors"));
    fp4_reader_release(r, &s);
    fp4_reader_tensor_done(r, 0);
    fp4_reader_passed(r, 0);
    /* tensor 1: give it up after its first of 5 slabs */
    assert_int_equal(fp4_reader_next(r, 1, &s), FP4_OK);
    bool last = s.last;
    fp4_reader_release(r, &s);
    fp4_reader_skip(r, 1, last);
    fp4_reader_tensor_done(r, 1);
    fp4_reader_passed(r, 1);
    take_all(r, 2, &plans[2]);
    fp4_reader_join(r);
    fp4_error_clear();
}

/* Kept rows read in place are read several slabs at a time (one read of up to 32 MiB, so
 * that a read takes every thread of the read pool): the slabs still come one by one, each at
 * its place with its values (test_kept_read_ahead_and_budget), and a read failing anywhere in
 * a group ends the tensor at the group's first slab (rows 4..8 of a do not exist: slab 0 of 4
 * rows, read alone, would have come first). */
static void test_kept_group_read(void **state)
{
    fixture *fx = *state;
    const fp4_tensor_desc *order[2] = {fx->by[0], fx->by[1]};
    fp4_read_plan plans[2] = {plan_rows(fx->by[0], 4, 0, 1),
                              plan_rows(fx->by[1], 1, FP4_WORDS_BF16, 1)};
    plans[0].total = 9;
    plans[0].keep = plans[1].keep = true;
    fp4_reader *r = NULL;
    assert_int_equal(fp4_reader_start(fx->src, NULL, order, plans, 2, (int64_t)1 << 30, &r),
                     FP4_OK);
    fp4_ready_slab s;
    assert_int_not_equal(fp4_reader_next(r, 0, &s), FP4_OK);
    assert_true(s.k == 0);
    assert_true(s.last);
    assert_non_null(strstr(fp4_last_error(), "t.safetensors"));
    fp4_reader_release(r, &s);
    fp4_reader_tensor_done(r, 0);
    fp4_reader_passed(r, 0);
    take_all(r, 1, &plans[1]); /* bf16 words, 3 slabs of one row in one read */
    fp4_reader_join(r);
    fp4_error_clear();
}

/* Out of order: the analysis asks for a tensor the reader is not at. */
static void test_out_of_order(void **state)
{
    fixture *fx = *state;
    const fp4_tensor_desc *order[2] = {fx->by[0], fx->by[2]};
    fp4_read_plan plans[2] = {plan_rows(fx->by[0], 6, 0, 1), plan_rows(fx->by[2], 5, 0, 1)};
    fp4_reader *r = NULL;
    assert_int_equal(fp4_reader_start(fx->src, NULL, order, plans, 2, (int64_t)1 << 30, &r),
                     FP4_OK);
    fp4_ready_slab s;
    assert_int_equal(fp4_reader_next(r, 1, &s), FP4_ERR_INTERNAL);
    fp4_reader_release(r, &s);
    fp4_reader_join(r);
    fp4_error_clear();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slabs_in_order),
        cmocka_unit_test(test_kept_read_ahead_and_budget),
        cmocka_unit_test(test_errors_and_skip),
        cmocka_unit_test(test_kept_group_read),
        cmocka_unit_test(test_out_of_order),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
