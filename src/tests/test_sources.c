/* test_sources.c — the tensor sources behind io/source.h, one suite for HDF5, safetensors and
 * NumPy: open (by content, not by name), list and describe (names, dtype, shape, offsets),
 * slabs read as fp32 along either dimension against known values (from h5py and the files'
 * raw bytes, or written here), and the errors (missing file, not a tensor file, unknown
 * tensor, slab out of range). Inputs: testdata/gpt_ckpt_small.h5,
 * testdata/quantized/source/model.safetensors, and .npy files written here. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/source.h"

#define CKPT FP4T_TESTDATA("gpt_ckpt_small.h5")
#define ST FP4T_TESTDATA("quantized/source/model.safetensors")

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static const fp4_tensor_desc *find(const fp4_tensor_desc *list, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(list[i].name, name) == 0) return &list[i];
    fail_msg("%s not listed", name);
    return NULL;
}

/* slab [start, start + count) along dim read twice: whole, and one row or column at a time,
 * must agree bit for bit with the whole tensor read at once */
static void check_slabs(fp4_source *s, const fp4_tensor_desc *t)
{
    assert_int_equal(t->rank, 2);
    const int64_t R = t->dims[0], C = t->dims[1];
    float *all = malloc((size_t)(R * C) * sizeof *all);
    float *sl = malloc((size_t)(R > C ? R : C) * 3 * sizeof *sl);
    assert_true(all && sl);
    assert_int_equal(fp4_source_read_f32(s, t, 0, 0, R, all), FP4_OK);
    for (int64_t r = 0; r + 3 <= R; r += R / 4 > 0 ? R / 4 : 1) { /* 3 rows along dim 0 */
        assert_int_equal(fp4_source_read_f32(s, t, 0, r, 3, sl), FP4_OK);
        assert_memory_equal(sl, all + r * C, (size_t)(3 * C) * sizeof *sl);
    }
    for (int64_t c = 0; c + 3 <= C; c += C / 4 > 0 ? C / 4 : 1) { /* 3 columns along dim 1 */
        assert_int_equal(fp4_source_read_f32(s, t, 1, c, 3, sl), FP4_OK);
        for (int64_t r = 0; r < R; r++)
            for (int k = 0; k < 3; k++) assert_true(bits(sl[r * 3 + k]) == bits(all[r * C + c + k]));
    }
    free(all);
    free(sl);
}

static void test_hdf5(void **state)
{
    (void)state;
    fp4_source *s = NULL;
    assert_int_equal(fp4_source_open(CKPT, &s), FP4_OK);
    fp4_tensor_desc *list = NULL;
    int n = 0;
    assert_int_equal(fp4_source_select(s, NULL, 0, &list, &n), FP4_OK);
    assert_int_equal(n, 23); /* `fp4diag ls`: 23 datasets */
    const fp4_tensor_desc *w = find(list, n, "/blocks/0/fc1/weight");
    assert_int_equal(w->rank, 2);
    assert_int_equal(w->dims[0], 1024);
    assert_int_equal(w->dims[1], 256);
    assert_int_equal(w->nelems, 1024 * 256);
    assert_string_equal(w->dtype, "bf16");
    assert_int_equal(w->stored, FP4_STORED_BF16);
    assert_true(w->numeric && w->exact_fp32);
    assert_int_equal(w->chunk_rank, 2);
    assert_int_equal(w->chunk[0], 256);
    assert_string_equal(w->codec, "deflate(4)");
    assert_true(w->codec_available);
    assert_string_equal(w->problem, "");
    /* known values (h5py): row 1, columns 0..3, and row 1023, columns 252..255 */
    float row[256];
    assert_int_equal(fp4_source_read_f32(s, w, 0, 1, 1, row), FP4_OK);
    const float r1[4] = {0.0751953125f, 0.07568359375f, 0.0220947265625f, -0.10400390625f};
    for (int i = 0; i < 4; i++) assert_true(row[i] == r1[i]);
    assert_int_equal(fp4_source_read_f32(s, w, 0, 1023, 1, row), FP4_OK);
    const float r2[4] = {0.0250244140625f, 0.005157470703125f, 0.05078125f, -0.05859375f};
    for (int i = 0; i < 4; i++) assert_true(row[252 + i] == r2[i]);
    const fp4_tensor_desc *b = find(list, n, "/blocks/0/fc1/bias");
    assert_int_equal(b->rank, 1);
    assert_int_equal(b->dims[0], 1024);
    float bias[3];
    assert_int_equal(fp4_source_read_f32(s, b, 0, 0, 3, bias), FP4_OK);
    assert_true(bias[0] == -0.019287109375f && bias[1] == -0.0191650390625f &&
                bias[2] == -0.0157470703125f);
    check_slabs(s, w);
    /* describe by exact name, with or without the leading '/' */
    fp4_tensor_desc d;
    assert_int_equal(fp4_source_describe(s, "blocks/0/fc1/weight", &d), FP4_OK);
    assert_int_equal(d.dims[0], 1024);
    fp4_tensor_desc_free(&d);
    /* errors: a name that is not there, a group, a slab past the end */
    assert_int_equal(fp4_source_describe(s, "/blocks/0/nope", &d), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "/blocks/0/nope"));
    assert_int_equal(fp4_source_describe(s, "/blocks/0", &d), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "group"));
    float two[2 * 1024]; /* room for either slab asked for: the refusal is the source's */
    assert_int_not_equal(fp4_source_read_f32(s, w, 0, 1023, 2, two), FP4_OK);
    assert_int_not_equal(fp4_source_read_f32(s, w, 1, 255, 2, two), FP4_OK);
    const char *pat[] = {"/blocks/9"};
    fp4_tensor_desc *none = NULL;
    int nn = 0;
    assert_int_equal(fp4_source_select(s, pat, 1, &none, &nn), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "no such dataset or group"));
    /* a group selects what is below it */
    const char *grp[] = {"/blocks/0/fc1"};
    assert_int_equal(fp4_source_select(s, grp, 1, &none, &nn), FP4_OK);
    assert_int_equal(nn, 2);
    fp4_tensor_desc_free_list(none, nn);
    fp4_tensor_desc_free_list(list, n);
    fp4_source_close(s);
}

static void test_safetensors(void **state)
{
    (void)state;
    fp4_source *s = NULL;
    assert_int_equal(fp4_source_open(ST, &s), FP4_OK);
    fp4_tensor_desc *list = NULL;
    int n = 0;
    assert_int_equal(fp4_source_select(s, NULL, 0, &list, &n), FP4_OK);
    assert_int_equal(n, 8); /* the header's 8 tensors (its __metadata__ is not one) */
    /* listing order is the file's: by data offset */
    assert_string_equal(list[0].name, "model.layers.0.self_attn.q_proj.weight");
    const fp4_tensor_desc *k = find(list, n, "model.layers.0.self_attn.k_proj.weight");
    assert_int_equal(k->rank, 2);
    assert_int_equal(k->dims[0], 16);
    assert_int_equal(k->dims[1], 64);
    assert_string_equal(k->dtype, "bf16");
    assert_int_equal(k->stored, FP4_STORED_BF16);
    assert_int_equal(k->logical_bytes, 2048);
    assert_int_equal(k->stored_bytes, 2048);
    assert_int_equal(k->file_offset, 4872); /* 8 + header + the tensor's data_offsets[0] */
    assert_int_equal(k->chunk_rank, 0);
    const fp4_tensor_desc *e = find(list, n, "model.layers.0.mlp.experts.gate_up_proj");
    assert_int_equal(e->rank, 3);
    assert_int_equal(e->dims[0], 2);
    assert_int_equal(e->dims[1], 8);
    assert_int_equal(e->dims[2], 64);
    /* known values (the file's bf16 words): row 5 columns 0..2, row 15 columns 61..63 */
    float row[64];
    assert_int_equal(fp4_source_read_f32(s, k, 0, 5, 1, row), FP4_OK);
    assert_true(row[0] == 0.001739501953125f && row[1] == 0.01422119140625f &&
                row[2] == -0.000946044921875f);
    assert_int_equal(fp4_source_read_f32(s, k, 0, 15, 1, row), FP4_OK);
    assert_true(row[61] == -0.00150299072265625f && row[62] == 0.051025390625f &&
                row[63] == 0.0021820068359375f);
    /* the stored words as the file holds them */
    uint16_t words[64];
    assert_int_equal(fp4_source_read_raw(s, k, 0, 5, 1, words), FP4_OK);
    assert_true(words[0] == (uint16_t)(bits(0.001739501953125f) >> 16));
    check_slabs(s, k);
    /* errors */
    fp4_tensor_desc d;
    assert_int_equal(fp4_source_describe(s, "model.nope", &d), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "model.nope"));
    float two[2 * 64];
    assert_int_not_equal(fp4_source_read_f32(s, k, 0, 15, 2, two), FP4_OK);
    fp4_tensor_desc_free_list(list, n);
    fp4_source_close(s);
}

/* A NumPy .npy (format 1.0) of shape rows x cols of little-endian float32 or float16 words. */
static void write_npy(const char *path, const char *descr, int rows, int cols, const void *data,
                      size_t bytes)
{
    char hdr[128];
    int len = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }",
                       descr, rows, cols);
    const int total = (10 + len + 1 + 63) / 64 * 64; /* header padded to 64 with spaces, '\n' */
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    fwrite(magic, 1, 8, f);
    const uint16_t hl = (uint16_t)(total - 10);
    const unsigned char hlb[2] = {(unsigned char)(hl & 0xff), (unsigned char)(hl >> 8)};
    fwrite(hlb, 1, 2, f);
    fwrite(hdr, 1, (size_t)len, f);
    for (int i = 10 + len; i < total - 1; i++) fputc(' ', f);
    fputc('\n', f);
    fwrite(data, 1, bytes, f);
    assert_int_equal(fclose(f), 0);
}

static void test_numpy(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    char p32[4200], p16[4200], bad[4200];
    snprintf(p32, sizeof p32, "%s/x.npy", dir);
    snprintf(p16, sizeof p16, "%s/h.data", dir); /* no .npy ending: opened by its content */
    snprintf(bad, sizeof bad, "%s/bad.npy", dir);
    enum { R = 6, C = 10 };
    float x[R * C];
    for (int i = 0; i < R * C; i++) x[i] = (float)i * 0.5f - 7.0f;
    x[13] = NAN;
    x[14] = -INFINITY;
    write_npy(p32, "<f4", R, C, x, sizeof x);
    uint16_t h[R * C];
    for (int i = 0; i < R * C; i++) h[i] = (uint16_t)(0x3c00 + i); /* 1.0 + i * 2^-10 */
    write_npy(p16, "<f2", R, C, h, sizeof h);

    fp4_source *s = NULL;
    assert_int_equal(fp4_source_open(p32, &s), FP4_OK);
    fp4_tensor_desc *list = NULL;
    int n = 0;
    assert_int_equal(fp4_source_select(s, NULL, 0, &list, &n), FP4_OK);
    assert_int_equal(n, 1);
    assert_int_equal(list[0].rank, 2);
    assert_int_equal(list[0].dims[0], R);
    assert_int_equal(list[0].dims[1], C);
    assert_string_equal(list[0].dtype, "f32");
    assert_string_equal(list[0].byte_order, "le");
    float got[R * C];
    assert_int_equal(fp4_source_read_f32(s, &list[0], 0, 0, R, got), FP4_OK);
    assert_memory_equal(got, x, sizeof x); /* NaN and -Inf bit for bit */
    assert_int_equal(fp4_source_read_f32(s, &list[0], 1, 3, 2, got), FP4_OK); /* columns 3, 4 */
    for (int r = 0; r < R; r++)
        for (int k = 0; k < 2; k++)
            assert_true(bits(got[r * 2 + k]) == bits(x[r * C + 3 + k]));
    assert_int_not_equal(fp4_source_read_f32(s, &list[0], 0, 5, 2, got), FP4_OK);
    fp4_tensor_desc_free_list(list, n);
    fp4_source_close(s);

    assert_int_equal(fp4_source_open(p16, &s), FP4_OK);
    assert_int_equal(fp4_source_select(s, NULL, 0, &list, &n), FP4_OK);
    assert_int_equal(n, 1);
    assert_string_equal(list[0].dtype, "f16");
    assert_int_equal(list[0].stored, FP4_STORED_F16);
    assert_int_equal(fp4_source_read_f32(s, &list[0], 0, 2, 1, got), FP4_OK);
    for (int c = 0; c < C; c++) assert_true(got[c] == 1.0f + (float)(2 * C + c) * 0x1p-10f);
    fp4_tensor_desc_free_list(list, n);
    fp4_source_close(s);

    /* a .npy whose header is cut off, a missing file, a file no source claims */
    FILE *f = fopen(bad, "wb");
    assert_non_null(f);
    fwrite("\x93NUMPY\x01\x00\x76\x00{'descr': '<f4'", 1, 25, f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(fp4_source_open(bad, &s), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "bad.npy"));
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/none.npy", dir);
    assert_int_equal(fp4_source_open(missing, &s), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "none.npy"));
    char txt[4200];
    snprintf(txt, sizeof txt, "%s/readme.txt", dir);
    f = fopen(txt, "wb");
    assert_non_null(f);
    fputs("not a tensor file\n", f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(fp4_source_open(txt, &s), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "readme.txt"));
    fp4t_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hdf5),
        cmocka_unit_test(test_safetensors),
        cmocka_unit_test(test_numpy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
