/* test_h5io.c — h5io: each test writes its own small HDF5 file with the C API in a temp dir,
 * then opens, selects, describes and reads it through h5io (type conversion to fp32, byte
 * orders, custom floats, chunked and filtered data, slabs, errors). */
#include "testutil.h"

#include <math.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "io/h5io.h"
#include "io/source.h"

/* --- fixture writing (tests may call HDF5 directly) ---------------------------------------- */

typedef struct fixture {
    char *dir;
    char file[4200];
    hid_t fid;
} fixture;

static void fx_create(fixture *fx)
{
    fp4_h5_set_verbose(false);
    fx->dir = fp4t_tmpdir();
    snprintf(fx->file, sizeof fx->file, "%s/t.h5", fx->dir);
    fx->fid = H5Fcreate(fx->file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(fx->fid >= 0);
}

/* Close the writer and open the file through h5io. */
static fp4_h5file *fx_reopen(fixture *fx)
{
    assert_true(H5Fclose(fx->fid) >= 0);
    fx->fid = -1;
    fp4_h5file *f = NULL;
    assert_int_equal(fp4_h5_open(fx->file, &f), FP4_OK);
    assert_string_equal(fp4_h5_filename(f), fx->file);
    return f;
}

static void fx_done(fixture *fx, fp4_h5file *f)
{
    fp4_h5_close(f);
    fp4t_rmtree(fx->dir);
}

/* A 16-bit (or other) float type: sign at spos, exponent esize bits at epos, mantissa msize
 * bits at 0 (h5py's recipe for float16). */
static hid_t mk_float(size_t size, size_t spos, size_t epos, size_t esize, size_t msize,
                      size_t bias, H5T_order_t order)
{
    hid_t t = H5Tcopy(H5T_IEEE_F32LE);
    assert_true(H5Tset_fields(t, spos, epos, esize, 0, msize) >= 0);
    assert_true(H5Tset_size(t, size) >= 0);
    assert_true(H5Tset_ebias(t, bias) >= 0);
    assert_true(H5Tset_order(t, order) >= 0);
    return t;
}

/* Write a dataset of `rank` dims whose file type is ftype, from memory type mtype. */
static void put(hid_t loc, const char *name, hid_t ftype, hid_t mtype, int rank,
                const hsize_t *dims, const hsize_t *chunk, bool shuffle, int deflate,
                const void *data)
{
    hid_t s = rank ? H5Screate_simple(rank, dims, NULL) : H5Screate(H5S_SCALAR);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (chunk) {
        assert_true(H5Pset_chunk(dcpl, rank, chunk) >= 0);
        if (shuffle) assert_true(H5Pset_shuffle(dcpl) >= 0);
        if (deflate >= 0) assert_true(H5Pset_deflate(dcpl, (unsigned)deflate) >= 0);
    }
    hid_t d = H5Dcreate2(loc, name, ftype, s, lcpl, dcpl, H5P_DEFAULT);
    assert_true(d >= 0);
    if (data) assert_true(H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Pclose(lcpl);
    H5Sclose(s);
}

static void put1(hid_t loc, const char *name, hid_t ftype, hid_t mtype, hsize_t n,
                 const void *data)
{
    put(loc, name, ftype, mtype, 1, &n, NULL, false, -1, data);
}

/* Bits of a float, to compare exactly (NaN, -0, subnormals). */
static uint32_t bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

/* --- types --------------------------------------------------------------------------------- */

static void test_f16_with_subnormal(void **state)
{
    (void)state;
    fixture fx;
    fx_create(&fx);
    hid_t t = mk_float(2, 15, 10, 5, 10, 15, H5T_ORDER_LE);
    const uint16_t raw[] = {0x3C00, 0x0001, 0x8400, 0x7BFF, 0xC000, 0x03FF};
    put1(fx.fid, "h", t, t, 6, raw);
    H5Tclose(t);
    fp4_h5file *f = fx_reopen(&fx);
    fp4_tensor_desc in;
    assert_int_equal(fp4_h5_info(f, "h", &in), FP4_OK);
    assert_string_equal(in.name, "/h");
    assert_string_equal(in.dtype, "f16");
    assert_string_equal(in.byte_order, "le");
    assert_true(in.numeric && in.exact_fp32);
    assert_int_equal(in.logical_bytes, 12);
    assert_string_equal(in.problem, "");
    fp4_tensor_desc_free(&in);
    float v[6];
    assert_int_equal(fp4_h5_read_all(f, "/h", v), FP4_OK);
    const float want[] = {1.0f, 0x1p-24f, -0x1p-14f, 65504.0f, -2.0f, 0x3FFp-24f};
    for (int i = 0; i < 6; i++) assert_int_equal(bits(v[i]), bits(want[i]));
    fx_done(&fx, f);
}

static void test_bf16_custom_type(void **state)
{
    (void)state;
    fixture fx;
    fx_create(&fx);
    /* The type of ../shared/data: sign bit 15, exponent 8 bits at 7, mantissa 7 bits, bias 127. */
    hid_t t = mk_float(2, 15, 7, 8, 7, 127, H5T_ORDER_LE);
    const uint16_t raw[] = {0x3F95, 0x3F80, 0xC040, 0x7F80, 0x0001, 0x8000, 0x7FC0};
    put1(fx.fid, "w", t, t, 7, raw);
    H5Tclose(t);
    fp4_h5file *f = fx_reopen(&fx);
    fp4_tensor_desc in;
    assert_int_equal(fp4_h5_info(f, "/w", &in), FP4_OK);
    assert_string_equal(in.dtype, "bf16");
    assert_true(in.exact_fp32);
    fp4_tensor_desc_free(&in);
    float v[7];
    assert_int_equal(fp4_h5_read_all(f, "/w", v), FP4_OK);
    assert_true(v[0] == 1.1640625f); /* not IEEE half, not bias-free */
    assert_true(v[1] == 1.0f);
    assert_true(v[2] == -3.0f);
    assert_true(isinf(v[3]) && v[3] > 0);
    assert_int_equal(bits(v[4]), 0x00010000u); /* the bf16 subnormal 2^-133, exact in fp32 */
    assert_int_equal(bits(v[5]), 0x80000000u); /* -0 stays -0 */
    assert_true(isnan(v[6]));
    fx_done(&fx, f);
}

static void test_big_endian_f32(void **state)
{
    (void)state;
    fixture fx;
    fx_create(&fx);
    const float d[] = {1, 2, 3};
    put1(fx.fid, "be", H5T_IEEE_F32BE, H5T_NATIVE_FLOAT, 3, d);
    fp4_h5file *f = fx_reopen(&fx);
    fp4_tensor_desc in;
    assert_int_equal(fp4_h5_info(f, "be", &in), FP4_OK);
    assert_string_equal(in.dtype, "f32");
    assert_string_equal(in.byte_order, "be");
    fp4_tensor_desc_free(&in);
    float v[3] = {0};
    assert_int_equal(fp4_h5_read_all(f, "be", v), FP4_OK);
    assert_true(v[0] == 1.0f && v[1] == 2.0f && v[2] == 3.0f);
    fx_done(&fx, f);
}

static void test_custom_exponent_bias(void **state)
{
    (void)state;
    fixture fx;
    fx_create(&fx);
    /* bf16 layout with bias 120: 0x3F80 (exponent field 127) is 2^7, not 1. Big-endian too. */
    hid_t t = mk_float(2, 15, 7, 8, 7, 120, H5T_ORDER_BE);
    hid_t tmem = mk_float(2, 15, 7, 8, 7, 120, H5T_ORDER_LE); /* the bits as this host holds them */
    const uint16_t raw[] = {0x3F80, 0x3FC0, 0xBC00};
    put1(fx.fid, "c", t, tmem, 3, raw);
    H5Tclose(t);
    H5Tclose(tmem);
    fp4_h5file *f = fx_reopen(&fx);
    fp4_tensor_desc in;
    assert_int_equal(fp4_h5_info(f, "c", &in), FP4_OK);
    assert_string_equal(in.dtype, "float(1,8,7,120)");
    assert_string_equal(in.byte_order, "be");
    assert_true(in.numeric);
    assert_false(in.exact_fp32); /* exponents up to 2^134 overflow fp32 */
    fp4_tensor_desc_free(&in);
    float v[3];
    assert_int_equal(fp4_h5_read_all(f, "c", v), FP4_OK);
    assert_true(v[0] == 128.0f);
    assert_true(v[1] == 192.0f);
    assert_true(v[2] == -1.0f); /* exponent field 120 = 2^0 */
    fx_done(&fx, f);
}

static void test_big_endian_i32_and_others(void **state)
{
    (void)state;
    fixture fx;
    fx_create(&fx);
    const int32_t d[] = {-5, 0, 7, 16777217, 2147483647};
    put1(fx.fid, "i", H5T_STD_I32BE, H5T_NATIVE_INT32, 5, d);
    const uint8_t u[] = {0, 1, 255};
    put1(fx.fid, "u", H5T_STD_U8LE, H5T_NATIVE_UINT8, 3, u);
    const double g[] = {0.1, -1e300, 2.5};
    put1(fx.fid, "g", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3, g);
    fp4_h5file *f = fx_reopen(&fx);
    fp4_tensor_desc in;
    assert_int_equal(fp4_h5_info(f, "i", &in), FP4_OK);
    assert_string_equal(in.dtype, "i32");
    assert_string_equal(in.byte_order, "be");
    assert_true(in.numeric && !in.exact_fp32);
    fp4_tensor_desc_free(&in);
    float v[5];
    assert_int_equal(fp4_h5_read_all(f, "i", v), FP4_OK);
    assert_true(v[0] == -5.0f && v[1] == 0.0f && v[2] == 7.0f);
    assert_true(v[3] == 16777216.0f); /* rounded to the nearest fp32 */
    assert_true(v[4] == 2147483648.0f);
    assert_int_equal(fp4_h5_info(f, "u", &in), FP4_OK);
    assert_string_equal(in.dtype, "u8");
    assert_string_equal(in.byte_order, "");
    assert_true(in.exact_fp32);
    fp4_tensor_desc_free(&in);
    assert_int_equal(fp4_h5_read_all(f, "u", v), FP4_OK);
    assert_true(v[0] == 0.0f && v[1] == 1.0f && v[2] == 255.0f);
    uint8_t b[3] = {9, 9, 9};
    assert_int_equal(fp4_h5_read_u8(f, "u", b), FP4_OK);
    assert_true(b[0] == 0 && b[1] == 1 && b[2] == 255);
    assert_int_equal(fp4_h5_read_u8(f, "g", b), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "not an integer type"));
    assert_int_equal(fp4_h5_info(f, "g", &in), FP4_OK);
    assert_string_equal(in.dtype, "f64");
    assert_false(in.exact_fp32);
    fp4_tensor_desc_free(&in);
    assert_int_equal(fp4_h5_read_all(f, "g", v), FP4_OK);
    assert_true(v[0] == 0.1f);
    assert_true(isinf(v[1]) && v[1] < 0); /* out of fp32 range: -inf, counted later as inf */
    assert_true(v[2] == 2.5f);
    fx_done(&fx, f);
}

/* --- chunked, filtered, slabs --------------------------------------------------------------- */

static void test_chunked_shuffle_deflate(void **state)
{
    (void)state;
    fixture fx;
    fx_create(&fx);
    float d[10];
    for (int i = 0; i < 10; i++) d[i] = (float)i;
    hsize_t n = 10, c = 4;
    put(fx.fid, "z", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, &n, &c, true, 6, d);
    fp4_h5file *f = fx_reopen(&fx);
    fp4_tensor_desc in;
    assert_int_equal(fp4_h5_info(f, "z", &in), FP4_OK);
    assert_string_equal(in.codec, "shuffle,deflate(6)");
    assert_true(in.codec_available);
    assert_int_equal(in.chunk_rank, 1);
    assert_int_equal(in.chunk[0], 4);
    assert_int_equal(in.logical_bytes, 40);
    assert_true(in.stored_bytes > 0);
    fp4_tensor_desc_free(&in);
    float v[10];
    memset(v, 0xff, sizeof v);
    assert_int_equal(fp4_h5_read_all(f, "z", v), FP4_OK);
    for (int i = 0; i < 10; i++) assert_true(v[i] == (float)i);
    float s[6];
    memset(s, 0xff, sizeof s);
    /* From a chunk boundary into the partial edge chunk [8, 10). */
    assert_int_equal(fp4_h5_read_slab(f, "z", 0, 4, 6, s), FP4_OK);
    for (int i = 0; i < 6; i++) assert_true(s[i] == (float)(4 + i));
    assert_int_equal(fp4_h5_read_slab(f, "z", 0, 9, 1, s), FP4_OK);
    assert_true(s[0] == 9.0f);
    assert_int_equal(fp4_h5_read_slab(f, "z", 0, 8, 3, s), FP4_ERR_USAGE);
    assert_int_equal(fp4_h5_read_slab(f, "z", 1, 0, 1, s), FP4_ERR_USAGE);
    assert_int_equal(fp4_h5_read_slab(f, "z", 0, -1, 1, s), FP4_ERR_USAGE);
    assert_int_equal(fp4_h5_read_slab(f, "z", 0, 10, 0, s), FP4_OK);
    fx_done(&fx, f);
}

static void test_row_slabs_equal_whole(void **state)
{
    (void)state;
    fixture fx;
    fx_create(&fx);
    enum { N = 130 };
    float *d = malloc(sizeof(float) * N * N);
    assert_non_null(d);
    for (int i = 0; i < N * N; i++) d[i] = (float)i * 0.5f - 3.0f;
    hsize_t dims[2] = {N, N}, ch[2] = {64, 64};
    put(fx.fid, "m", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dims, ch, false, 1, d);
    fp4_h5file *f = fx_reopen(&fx);
    float *whole = malloc(sizeof(float) * N * N), *rows = malloc(sizeof(float) * N * N);
    assert_non_null(whole);
    assert_non_null(rows);
    assert_int_equal(fp4_h5_read_all(f, "m", whole), FP4_OK);
    assert_memory_equal(whole, d, sizeof(float) * N * N);
    memset(rows, 0, sizeof(float) * N * N);
    for (int64_t r = 0; r < N; r += 17) {
        int64_t cnt = N - r < 17 ? N - r : 17;
        assert_int_equal(fp4_h5_read_slab(f, "m", 0, r, cnt, rows + r * N), FP4_OK);
    }
    assert_memory_equal(rows, whole, sizeof(float) * N * N);
    free(d);
    free(whole);
    free(rows);
    fx_done(&fx, f);
}

static void test_slab_along_columns(void **state)
{
    (void)state;
    fixture fx;
    fx_create(&fx);
    float d[12];
    for (int i = 0; i < 12; i++) d[i] = (float)i;
    hsize_t dims[2] = {3, 4}, ch[2] = {2, 3};
    put(fx.fid, "m", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dims, ch, true, 4, d);
    fp4_h5file *f = fx_reopen(&fx);
    float v[6] = {0};
    assert_int_equal(fp4_h5_read_slab(f, "m", 1, 1, 2, v), FP4_OK);
    const float want[] = {1, 2, 5, 6, 9, 10};
    for (int i = 0; i < 6; i++) assert_true(v[i] == want[i]);
    assert_int_equal(fp4_h5_read_slab(f, "m", 1, 3, 1, v), FP4_OK);
    assert_true(v[0] == 3 && v[1] == 7 && v[2] == 11);
    assert_int_equal(fp4_h5_read_slab(f, "m", 2, 0, 1, v), FP4_ERR_USAGE);
    fx_done(&fx, f);
}

static void test_scalar_and_empty(void **state)
{
    (void)state;
    fixture fx;
    fx_create(&fx);
    const double x = 2.5;
    put(fx.fid, "s", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, NULL, NULL, false, -1, &x);
    hsize_t dims[2] = {0, 5};
    put(fx.fid, "e", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dims, NULL, false, -1, NULL);
    fp4_h5file *f = fx_reopen(&fx);
    fp4_tensor_desc in;
    assert_int_equal(fp4_h5_info(f, "s", &in), FP4_OK);
    assert_int_equal(in.rank, 0);
    assert_int_equal(in.nelems, 1);
    fp4_tensor_desc_free(&in);
    float v[1] = {0};
    assert_int_equal(fp4_h5_read_all(f, "s", v), FP4_OK);
    assert_true(v[0] == 2.5f);
    v[0] = 0;
    assert_int_equal(fp4_h5_read_slab(f, "s", 0, 0, 1, v), FP4_OK);
    assert_true(v[0] == 2.5f);
    assert_int_equal(fp4_h5_read_slab(f, "s", 1, 0, 1, v), FP4_ERR_USAGE);
    assert_int_equal(fp4_h5_info(f, "e", &in), FP4_OK);
    assert_int_equal(in.rank, 2);
    assert_int_equal(in.nelems, 0);
    assert_int_equal(in.logical_bytes, 0);
    fp4_tensor_desc_free(&in);
    assert_int_equal(fp4_h5_read_all(f, "e", v), FP4_OK);
    assert_int_equal(fp4_h5_read_slab(f, "e", 1, 2, 3, v), FP4_OK);
    fx_done(&fx, f);
}

static void test_huge_declared_dims(void **state)
{
    (void)state;
    fixture fx;
    fx_create(&fx);
    /* 2^31 x 2^31 f32 = 2^64 bytes: nelems fits int64, bytes do not. Never allocated. */
    hsize_t dims[2] = {(hsize_t)1 << 31, (hsize_t)1 << 31}, ch[2] = {1024, 1024};
    put(fx.fid, "big", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dims, ch, false, -1, NULL);
    fp4_h5file *f = fx_reopen(&fx);
    fp4_tensor_desc in;
    assert_int_equal(fp4_h5_info(f, "big", &in), FP4_OK);
    assert_int_equal(in.logical_bytes, -1);
    assert_string_equal(in.problem, "size overflows 64 bits");
    fp4_tensor_desc_free(&in);
    float v[1];
    assert_int_equal(fp4_h5_read_slab(f, "big", 0, 0, 1, v), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "/big: size overflows"));
    fx_done(&fx, f);
}

/* --- unsupported and missing --------------------------------------------------------------- */

static void test_string_dataset_is_unsupported(void **state)
{
    (void)state;
    fixture fx;
    fx_create(&fx);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 4);
    put1(fx.fid, "txt", t, t, 2, "abcdefgh");
    H5Tclose(t);
    hid_t ct = H5Tcreate(H5T_COMPOUND, 8);
    H5Tinsert(ct, "a", 0, H5T_NATIVE_FLOAT);
    H5Tinsert(ct, "b", 4, H5T_NATIVE_FLOAT);
    put1(fx.fid, "cmp", ct, ct, 1, (float[]){1, 2});
    H5Tclose(ct);
    fp4_h5file *f = fx_reopen(&fx);
    fp4_tensor_desc in;
    assert_int_equal(fp4_h5_info(f, "txt", &in), FP4_OK);
    assert_string_equal(in.dtype, "string");
    assert_false(in.numeric);
    assert_string_equal(in.problem, "string class is not supported");
    fp4_tensor_desc_free(&in);
    float v[2];
    fp4_error_clear();
    assert_int_equal(fp4_h5_read_all(f, "txt", v), FP4_ERR_INPUT);
    char want[4400];
    snprintf(want, sizeof want, "%s: /txt: string class is not supported", fx.file);
    assert_string_equal(fp4_last_error(), want);
    assert_int_equal(fp4_h5_read_all(f, "cmp", v), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "/cmp: compound class is not supported"));
    fx_done(&fx, f);
}

static void test_unavailable_filter_is_named(void **state)
{
    (void)state;
    fixture fx;
    fx_create(&fx);
    /* An optional filter that is not registered is skipped on write but stays in the
     * pipeline, which is what a file compressed with a plugin we lack looks like. */
    hsize_t n = 8, c = 4;
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &c);
    H5Pset_deflate(dcpl, 1);
    herr_t ok = H5Pset_filter(dcpl, 32001, H5Z_FLAG_OPTIONAL, 0, NULL);
    hid_t d = ok >= 0 ? H5Dcreate2(fx.fid, "blosc", H5T_IEEE_F32LE, s, H5P_DEFAULT, dcpl,
                                   H5P_DEFAULT)
                      : -1;
    H5Pclose(dcpl);
    H5Sclose(s);
    if (d < 0) {
        fx_done(&fx, fx_reopen(&fx));
        skip();
    }
    float z[8] = {0};
    H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, z);
    H5Dclose(d);
    fp4_h5file *f = fx_reopen(&fx);
    fp4_tensor_desc in;
    assert_int_equal(fp4_h5_info(f, "blosc", &in), FP4_OK);
    assert_false(in.codec_available);
    assert_true(in.numeric);
    assert_non_null(strstr(in.codec, "deflate(1),"));
    assert_non_null(strstr(in.codec, "(#32001)"));
    assert_non_null(strstr(in.problem, "(#32001) is not available"));
    fp4_tensor_desc_free(&in);
    float v[8];
    assert_int_equal(fp4_h5_read_all(f, "blosc", v), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "/blosc: filter "));
    fx_done(&fx, f);
}

static void test_missing_dataset(void **state)
{
    (void)state;
    fixture fx;
    fx_create(&fx);
    put1(fx.fid, "g/x", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, (float[]){1});
    fp4_h5file *f = fx_reopen(&fx);
    float v[1];
    char want[4400];
    assert_int_equal(fp4_h5_read_all(f, "/nope", v), FP4_ERR_INPUT);
    snprintf(want, sizeof want, "%s: /nope: no such dataset", fx.file);
    assert_string_equal(fp4_last_error(), want);
    assert_int_equal(fp4_h5_read_slab(f, "/no/such/deep", 0, 0, 1, v), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "/no/such/deep: no such dataset"));
    fp4_tensor_desc in;
    assert_int_equal(fp4_h5_info(f, "/g", &in), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "/g: is a group, not a dataset"));
    assert_int_equal(fp4_h5_read_all(f, "g/x", v), FP4_OK); /* still usable after errors */
    assert_true(v[0] == 1.0f);
    double a = 0;
    assert_int_equal(fp4_h5_read_attr_double(f, "/g/x", "amax", &a), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "no attribute 'amax'"));
    fx_done(&fx, f);
}

static void test_attr_double(void **state)
{
    (void)state;
    fixture fx;
    fx_create(&fx);
    put1(fx.fid, "g/x", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, (float[]){1});
    hid_t g = H5Gopen2(fx.fid, "g", H5P_DEFAULT);
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(g, "tensor_amax", H5T_IEEE_F32BE, s, H5P_DEFAULT, H5P_DEFAULT);
    float amax = 3.25f;
    H5Awrite(a, H5T_NATIVE_FLOAT, &amax);
    H5Aclose(a);
    H5Sclose(s);
    H5Gclose(g);
    fp4_h5file *f = fx_reopen(&fx);
    double v = 0;
    assert_int_equal(fp4_h5_read_attr_double(f, "g", "tensor_amax", &v), FP4_OK);
    assert_true(v == 3.25);
    fx_done(&fx, f);
}

/* --- selection ----------------------------------------------------------------------------- */

static void select_expect(fp4_source *f, const char *const *pats, int np, const char *want)
{
    fp4_tensor_desc *ds = NULL;
    int n = -1;
    assert_int_equal(fp4_source_select(f, pats, np, &ds, &n), FP4_OK);
    char got[1024] = "";
    for (int i = 0; i < n; i++) {
        strcat(got, i ? " " : "");
        strcat(got, ds[i].name);
    }
    assert_string_equal(got, want);
    fp4_tensor_desc_free_list(ds, n);
}

static void test_select(void **state)
{
    (void)state;
    fixture fx;
    fx_create(&fx);
    const float one = 1;
    const char *names[] = {"b/x", "a/y", "a/x", "b/c/x", "s", "b/fc1/weight", "a/fc1/weight"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        put1(fx.fid, names[i], H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, &one);
    H5Gclose(H5Gcreate2(fx.fid, "empty", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    fp4_h5file *h = fx_reopen(&fx);
    fp4_source *f = NULL;
    assert_int_equal(fp4_source_open(fx.file, &f), FP4_OK);
    assert_string_equal(fp4_source_format(f)->name, "hdf5");
    select_expect(f, NULL, 0, "/a/fc1/weight /a/x /a/y /b/c/x /b/fc1/weight /b/x /s");
    select_expect(f, (const char *[]){"/*/x"}, 1, "/a/x /b/x"); /* '*' stops at '/' */
    select_expect(f, (const char *[]){"/*/fc1/weight"}, 1, "/a/fc1/weight /b/fc1/weight");
    select_expect(f, (const char *[]){"/b"}, 1, "/b/c/x /b/fc1/weight /b/x");
    select_expect(f, (const char *[]){"b/"}, 1, "/b/c/x /b/fc1/weight /b/x");
    select_expect(f, (const char *[]){"a/y"}, 1, "/a/y");
    select_expect(f, (const char *[]){"/a/x", "/a", "/s"}, 3, "/a/fc1/weight /a/x /a/y /s");
    select_expect(f, (const char *[]){"/"}, 1,
                  "/a/fc1/weight /a/x /a/y /b/c/x /b/fc1/weight /b/x /s");
    select_expect(f, (const char *[]){"/empty"}, 1, "");
    select_expect(f, (const char *[]){"/?/[xy]"}, 1, "/a/x /a/y /b/x");
    fp4_tensor_desc *ds = NULL;
    int n = 0;
    assert_int_equal(fp4_source_select(f, (const char *[]){"/a", "/zzz"}, 2, &ds, &n), FP4_ERR_INPUT);
    assert_null(ds);
    char want[4400];
    snprintf(want, sizeof want, "%s: /zzz: no such dataset or group", fx.file);
    assert_string_equal(fp4_last_error(), want);
    assert_int_equal(fp4_source_select(f, (const char *[]){"/a/x/y"}, 1, &ds, &n), FP4_ERR_INPUT);
    assert_int_equal(fp4_source_select(f, (const char *[]){"/*/z"}, 1, &ds, &n), FP4_ERR_INPUT);
    fp4_source_close(f);
    fx_done(&fx, h);
}

/* The grammar with '.' as a further separator (formats naming tensors "model.layers.0.w"). */
static void test_select_dot_separators(void **state)
{
    (void)state;
    const char *seps = "/.";
    assert_true(fp4_select_matches("model.layers.0.w", "model.layers.0.w", seps));
    assert_true(fp4_select_matches("model.layers", "model.layers.0.w", seps));
    assert_false(fp4_select_matches("model.lay", "model.layers.0.w", seps));
    assert_true(fp4_select_matches("model.layers.*.w", "model.layers.12.w", seps));
    assert_true(fp4_select_matches("model.*", "model.layers.12.w", seps)); /* group below */
    assert_false(fp4_select_matches("*.w", "model.layers.12.w", seps));  /* '*' stops at '.' */
    assert_true(fp4_select_matches("*.w", "model.layers.12.w", "/"));    /* '.' is plain */
    assert_true(fp4_select_matches("", "anything", seps));
}

/* --- opening ------------------------------------------------------------------------------- */

static void test_open_errors(void **state)
{
    (void)state;
    fp4_h5_set_verbose(false);
    char *dir = fp4t_tmpdir();
    char p[4200], want[4400];
    fp4_h5file *f = NULL;
    snprintf(p, sizeof p, "%s/missing.h5", dir);
    assert_int_equal(fp4_h5_open(p, &f), FP4_ERR_INPUT);
    assert_null(f);
    snprintf(want, sizeof want, "%s: no such file", p);
    assert_string_equal(fp4_last_error(), want);
    assert_int_equal(fp4_h5_open(dir, &f), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), ": is a directory, not an HDF5, safetensors, PyTorch, GGUF or NumPy checkpoint"));
    snprintf(p, sizeof p, "%s/garbage.h5", dir);
    FILE *g = fopen(p, "wb");
    assert_non_null(g);
    for (int i = 0; i < 4096; i++) fputc(i * 7 & 0xff, g);
    fclose(g);
    assert_int_equal(fp4_h5_open(p, &f), FP4_ERR_INPUT);
    snprintf(want, sizeof want, "%s: not an HDF5, safetensors, PyTorch, GGUF or NumPy file", p);
    assert_string_equal(fp4_last_error(), want);
    snprintf(p, sizeof p, "%s/empty.h5", dir);
    g = fopen(p, "wb");
    assert_non_null(g);
    fclose(g);
    assert_int_equal(fp4_h5_open(p, &f), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "not an HDF5, safetensors, PyTorch, GGUF or NumPy file"));
    fp4t_rmtree(dir);
}

static void test_real_checkpoint_subset(void **state)
{
    (void)state;
    fp4_h5file *f = NULL;
    fp4_source *src = NULL;
    struct stat st;
    if (stat(FP4T_TESTDATA("gpt_ckpt_small.h5"), &st) != 0) skip();
    assert_int_equal(fp4_h5_open(FP4T_TESTDATA("gpt_ckpt_small.h5"), &f), FP4_OK);
    assert_int_equal(fp4_source_open(FP4T_TESTDATA("gpt_ckpt_small.h5"), &src), FP4_OK);
    fp4_tensor_desc *ds = NULL;
    int n = 0;
    assert_int_equal(fp4_source_select(src, (const char *[]){"/blocks/*/proj/weight"}, 1, &ds, &n),
                     FP4_OK);
    assert_int_equal(n, 2);
    assert_string_equal(ds[0].name, "/blocks/0/proj/weight");
    assert_string_equal(ds[0].dtype, "bf16");
    assert_string_equal(ds[0].codec, "deflate(4)");
    assert_int_equal(ds[0].dims[0], 256);
    float *whole = malloc(sizeof(float) * 256 * 256), *slab = malloc(sizeof(float) * 256 * 100);
    assert_non_null(whole);
    assert_non_null(slab);
    assert_int_equal(fp4_h5_read_all(f, ds[0].name, whole), FP4_OK);
    /* bf16 widened: the low 16 bits of every fp32 are zero, values are plausible weights. */
    double ss = 0;
    for (int i = 0; i < 256 * 256; i++) {
        assert_int_equal(bits(whole[i]) & 0xffffu, 0);
        ss += (double)whole[i] * whole[i];
    }
    double rms = sqrt(ss / (256.0 * 256.0));
    assert_true(rms > 1e-3 && rms < 1.0);
    assert_int_equal(fp4_h5_read_slab(f, ds[0].name, 1, 100, 100, slab), FP4_OK);
    for (int r = 0; r < 256; r++)
        for (int c = 0; c < 100; c++) assert_true(slab[r * 100 + c] == whole[r * 256 + 100 + c]);
    free(whole);
    free(slab);
    fp4_tensor_desc_free_list(ds, n);
    fp4_source_close(src);
    fp4_h5_close(f);
}


/* --- reads through the source: our widening against HDF5's conversion ------------------------ */

/* Every stored layout, 2-D and chunked/filtered or contiguous: fp4_source_read_f32 (raw words
 * widened by io/widen.c, or HDF5's conversion for layouts we do not widen) gives the bits of
 * fp4_h5_read_slab (HDF5's conversion), whole and in slabs along either dimension. */
static void test_source_reads_equal_hdf5(void **state)
{
    (void)state;
    fixture fx;
    fx_create(&fx);
    enum { R = 24, C = 40 };
    const hsize_t dims[2] = {R, C}, chunk[2] = {8, 16};
    static uint64_t words[R * C];
    uint64_t x = 0x243f6a8885a308d3ull;
    for (int i = 0; i < R * C; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        words[i] = x;
    }
    /* mostly plausible values: random exponents near 1 for the floats */
    static uint16_t h16[R * C], b16[R * C];
    static float f32[R * C];
    static double f64[R * C];
    for (int i = 0; i < R * C; i++) {
        h16[i] = (uint16_t)(i % 7 ? (words[i] & 0x83ffu) | (uint16_t)(0x3000u + (words[i] >> 20) % 0x1400u)
                                  : words[i]);
        b16[i] = (uint16_t)(i % 7 ? (words[i] & 0x807fu) | (uint16_t)(0x3c00u + ((words[i] >> 20) % 0x80u << 7))
                                  : words[i]);
        f32[i] = (float)((double)(int64_t)words[i] * 0x1p-60);
        f64[i] = ldexp((double)(int64_t)words[i], i % 3 ? -63 + i % 50 - 25 : -63 - 140);
    }
    hid_t f16le = mk_float(2, 15, 10, 5, 10, 15, H5T_ORDER_LE);
    hid_t f16be = mk_float(2, 15, 10, 5, 10, 15, H5T_ORDER_BE);
    hid_t bfle = mk_float(2, 15, 7, 8, 7, 127, H5T_ORDER_LE);
    hid_t bfbe = mk_float(2, 15, 7, 8, 7, 127, H5T_ORDER_BE);
    hid_t odd = mk_float(2, 15, 7, 8, 7, 120, H5T_ORDER_LE);
    struct {
        const char *name;
        hid_t ft, mt;
        const void *data;
        bool ours;
    } ds[] = {
        {"f16", f16le, f16le, h16, true},
        {"f16be", f16be, f16le, h16, true},
        {"bf16", bfle, bfle, b16, true},
        {"bf16be", bfbe, bfle, b16, true},
        {"custom", odd, odd, b16, false},
        {"f32be", H5T_IEEE_F32BE, H5T_NATIVE_FLOAT, f32, true},
        {"f64", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, f64, true},
        {"f64be", H5T_IEEE_F64BE, H5T_NATIVE_DOUBLE, f64, false},
        {"i8", H5T_STD_I8LE, H5T_NATIVE_INT8, words, true},
        {"u16be", H5T_STD_U16BE, H5T_NATIVE_UINT16, words, true},
        {"i32", H5T_STD_I32LE, H5T_NATIVE_INT32, words, true},
        {"u64be", H5T_STD_U64BE, H5T_NATIVE_UINT64, words, true},
    };
    const int nds = (int)(sizeof ds / sizeof ds[0]);
    for (int i = 0; i < nds; i++) {
        char name[64];
        snprintf(name, sizeof name, "plain/%s", ds[i].name);
        put(fx.fid, name, ds[i].ft, ds[i].mt, 2, dims, NULL, false, -1, ds[i].data);
        snprintf(name, sizeof name, "gz/%s", ds[i].name);
        put(fx.fid, name, ds[i].ft, ds[i].mt, 2, dims, chunk, true, 3, ds[i].data);
    }
    H5Tclose(f16le);
    H5Tclose(f16be);
    H5Tclose(bfle);
    H5Tclose(bfbe);
    H5Tclose(odd);
    fp4_h5file *h = fx_reopen(&fx);
    fp4_source *src = NULL;
    assert_int_equal(fp4_source_open(fx.file, &src), FP4_OK);
    fp4_tensor_desc *list = NULL;
    int n = 0;
    assert_int_equal(fp4_source_select(src, NULL, 0, &list, &n), FP4_OK);
    assert_int_equal(n, 2 * nds);
    static float ref[R * C], got[R * C];
    for (int k = 0; k < n; k++) {
        const fp4_tensor_desc *t = &list[k];
        const char *leaf = strrchr(t->name, '/') + 1;
        bool ours = false;
        for (int i = 0; i < nds; i++)
            if (strcmp(ds[i].name, leaf) == 0) ours = ds[i].ours;
        if (fp4_source_widens(src, t) != ours) fail_msg("%s: widens %d", t->name, !ours);
        assert_int_equal(fp4_h5_read_all(h, t->name, ref), FP4_OK);
        memset(got, 0xA5, sizeof got);
        assert_int_equal(fp4_source_read_f32(src, t, 0, 0, R, got), FP4_OK);
        for (int e = 0; e < R * C; e++)
            if (bits(got[e]) != bits(ref[e]))
                fail_msg("%s [%d]: %08x, HDF5 %08x", t->name, e, bits(got[e]), bits(ref[e]));
        /* slabs along dimension 1 (columns 7..25) and 0 (rows 5..17) */
        assert_int_equal(fp4_source_read_f32(src, t, 1, 7, 19, got), FP4_OK);
        for (int r = 0; r < R; r++)
            for (int c = 0; c < 19; c++)
                assert_int_equal(bits(got[r * 19 + c]), bits(ref[r * C + 7 + c]));
        assert_int_equal(fp4_source_read_f32(src, t, 0, 5, 13, got), FP4_OK);
        assert_memory_equal(got, ref + 5 * C, 13 * C * sizeof(float));
        /* a slab outside the shape is a usage error, nothing written */
        got[0] = 1.5f;
        assert_int_equal(fp4_source_read_f32(src, t, 0, R - 1, 2, got), FP4_ERR_USAGE);
        assert_true(got[0] == 1.5f);
    }
    fp4_tensor_desc_free_list(list, n);
    fp4_source_close(src);
    fx_done(&fx, h);
}


/* Raw reads of contiguous datasets bypass HDF5 (pread at H5Dget_offset): a file with a user
 * block (data offsets count from the file's start) reads as HDF5 reads it. */
static void test_direct_read_with_userblock(void **state)
{
    (void)state;
    fp4_h5_set_verbose(false);
    char *dir = fp4t_tmpdir();
    char file[4200];
    snprintf(file, sizeof file, "%s/ub.h5", dir);
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    assert_true(H5Pset_userblock(fcpl, 1024) >= 0);
    hid_t fid = H5Fcreate(file, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
    assert_true(fid >= 0);
    H5Pclose(fcpl);
    uint16_t v[3 * 50];
    for (int i = 0; i < 150; i++) v[i] = (uint16_t)(0x3c00 + 37 * i);
    hid_t bf = mk_float(2, 15, 7, 8, 7, 127, H5T_ORDER_LE);
    const hsize_t dims[2] = {3, 50};
    put(fid, "w", bf, bf, 2, dims, NULL, false, -1, v);
    H5Tclose(bf);
    assert_true(H5Fclose(fid) >= 0);
    fp4_h5file *h = NULL;
    assert_int_equal(fp4_h5_open(file, &h), FP4_OK);
    fp4_source *src = NULL;
    assert_int_equal(fp4_source_open(file, &src), FP4_OK);
    fp4_tensor_desc t;
    assert_int_equal(fp4_source_describe(src, "w", &t), FP4_OK);
    float ref[150], got[150];
    assert_int_equal(fp4_h5_read_all(h, "w", ref), FP4_OK);
    assert_int_equal(fp4_source_read_f32(src, &t, 0, 0, 3, got), FP4_OK);
    assert_memory_equal(got, ref, sizeof ref);
    assert_true(ref[0] == 0x1p-7f);
    fp4_tensor_desc_free(&t);
    fp4_source_close(src);
    fp4_h5_close(h);
    fp4t_rmtree(dir);
}

/* A contiguous dataset whose data is cut off by a truncated file: an error for that tensor,
 * never zeros. HDF5 itself refuses to open a file shorter than its superblock says; with the
 * superblock's end-of-file address lowered to match (a consistent-looking truncated file),
 * HDF5 opens it and the direct read must find the data missing. */
static void test_truncated_contiguous_is_error(void **state)
{
    (void)state;
    fp4_h5_set_verbose(false);
    char *dir = fp4t_tmpdir();
    char file[4200];
    snprintf(file, sizeof file, "%s/cut.h5", dir);
    hid_t fid = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(fid >= 0);
    static float v[64 * 64];
    for (int i = 0; i < 64 * 64; i++) v[i] = 1.0f + (float)i;
    const hsize_t dims[2] = {64, 64};
    put(fid, "w", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dims, NULL, false, -1, v);
    assert_true(H5Fclose(fid) >= 0);
    struct stat sb;
    assert_int_equal(stat(file, &sb), 0);
    const off_t cut = sb.st_size - 4096; /* half the data */
    assert_int_equal(truncate(file, cut), 0);
    /* superblock v0: the end-of-file address at byte 40 (little-endian, 8 bytes) */
    FILE *fp = fopen(file, "r+b");
    assert_non_null(fp);
    unsigned char eof[8];
    for (int i = 0; i < 8; i++) eof[i] = (unsigned char)((uint64_t)cut >> (8 * i));
    assert_int_equal(fseek(fp, 40, SEEK_SET), 0);
    assert_int_equal(fwrite(eof, 1, 8, fp), 8);
    assert_int_equal(fclose(fp), 0);
    fp4_source *src = NULL;
    if (fp4_source_open(file, &src) == FP4_OK) {
        fp4_tensor_desc t;
        assert_int_equal(fp4_source_describe(src, "w", &t), FP4_OK);
        static float got[64 * 64];
        memset(got, 0, sizeof got);
        fp4_error_clear();
        assert_int_equal(fp4_source_read_f32(src, &t, 0, 0, 64, got), FP4_ERR_INPUT);
        assert_non_null(strstr(fp4_last_error(), "truncated"));
        assert_non_null(strstr(fp4_last_error(), "/w"));
        fp4_tensor_desc_free(&t);
        fp4_source_close(src);
    }
    fp4t_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_with_subnormal),
        cmocka_unit_test(test_bf16_custom_type),
        cmocka_unit_test(test_big_endian_f32),
        cmocka_unit_test(test_custom_exponent_bias),
        cmocka_unit_test(test_big_endian_i32_and_others),
        cmocka_unit_test(test_chunked_shuffle_deflate),
        cmocka_unit_test(test_row_slabs_equal_whole),
        cmocka_unit_test(test_slab_along_columns),
        cmocka_unit_test(test_scalar_and_empty),
        cmocka_unit_test(test_huge_declared_dims),
        cmocka_unit_test(test_string_dataset_is_unsupported),
        cmocka_unit_test(test_unavailable_filter_is_named),
        cmocka_unit_test(test_missing_dataset),
        cmocka_unit_test(test_attr_double),
        cmocka_unit_test(test_select),
        cmocka_unit_test(test_select_dot_separators),
        cmocka_unit_test(test_source_reads_equal_hdf5),
        cmocka_unit_test(test_direct_read_with_userblock),
        cmocka_unit_test(test_truncated_contiguous_is_error),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_real_checkpoint_subset),
    };
    return cmocka_run_group_tests_name("h5io", tests, NULL, NULL);
}
