/* test_npy_parse.c — .npy headers (io/npy_parse.c) as numpy writes them (versions 1.0-3.0,
 * both byte orders, Fortran order, scalars), the types refused with their reason, hostile
 * headers, a header read from a prefix; the zip directory of .npz archives (stored members, zip64 end records, damage). */
#include "testutil.h"

#include "io/npy_parse.h"

/* An .npy image: magic, version, header length (2 or 4 bytes), the dict text padded to 64
 * as numpy pads, then data_len bytes. */
static uint8_t *npy_image(int major, const char *dict, uint64_t data_len, uint64_t *size)
{
    size_t pre = major == 1 ? 10 : 12, n = strlen(dict);
    size_t hlen = ((pre + n + 1 + 63) / 64) * 64 - pre;
    *size = pre + hlen + data_len;
    uint8_t *b = calloc(1, *size);
    assert_non_null(b);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (uint8_t)major;
    b[7] = 0;
    for (size_t i = 0; i < pre - 8; i++) b[8 + i] = (uint8_t)(hlen >> (8 * i));
    memset(b + pre, ' ', hlen);
    memcpy(b + pre, dict, n);
    b[pre + hlen - 1] = '\n';
    return b;
}

static void test_npy_good(void **state)
{
    (void)state;
    uint64_t size;
    fp4_npy_header h;
    uint8_t *b = npy_image(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 48,
                           &size);
    assert_int_equal(fp4_npy_parse("a.npy", b, size, &h), FP4_OK);
    assert_int_equal(h.major, 1);
    assert_int_equal(h.data_offset, 128);
    assert_string_equal(h.descr, "<f4");
    assert_int_equal(h.kind, 'f');
    assert_int_equal(h.itemsize, 4);
    assert_false(h.big_endian);
    assert_false(h.fortran_order);
    assert_int_equal(h.rank, 2);
    assert_int_equal(h.dims[0], 3);
    assert_int_equal(h.dims[1], 4);
    assert_int_equal(h.nelems, 12);
    assert_int_equal(h.data_bytes, 48);
    assert_string_equal(h.problem, "");
    free(b);
    b = npy_image(2, "{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3, 5)}", 60, &size);
    assert_int_equal(fp4_npy_parse("a.npy", b, size, &h), FP4_OK);
    assert_int_equal(h.major, 2);
    assert_true(h.big_endian);
    assert_true(h.fortran_order);
    assert_int_equal(h.kind, 'i');
    assert_int_equal(h.rank, 3);
    assert_int_equal(h.nelems, 30);
    free(b);
    b = npy_image(3, "{\"descr\": \"|u1\", \"shape\": (), \"fortran_order\": False}", 1, &size);
    assert_int_equal(fp4_npy_parse("a.npy", b, size, &h), FP4_OK);
    assert_int_equal(h.rank, 0);
    assert_int_equal(h.nelems, 1);
    assert_false(h.big_endian);
    free(b);
    b = npy_image(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (7,), }", 56, &size);
    assert_int_equal(fp4_npy_parse("a.npy", b, size, &h), FP4_OK);
    assert_int_equal(h.rank, 1);
    assert_int_equal(h.dims[0], 7);
    free(b);
    /* Python 2 longs, a zero-size dimension, trailing bytes after the data (numpy ignores them) */
    b = npy_image(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (0L, 5L), }", 9, &size);
    assert_int_equal(fp4_npy_parse("a.npy", b, size, &h), FP4_OK);
    assert_int_equal(h.nelems, 0);
    free(b);
}

static void expect_problem(const char *descr, const char *want)
{
    char dict[160];
    snprintf(dict, sizeof dict, "{'descr': %s, 'fortran_order': False, 'shape': (2,), }", descr);
    uint64_t size;
    uint8_t *b = npy_image(1, dict, 64, &size);
    fp4_npy_header h;
    fp4_status st = fp4_npy_parse("a.npy", b, size, &h);
    if (st != FP4_OK || !strstr(h.problem, want))
        fail_msg("descr %s: status %d (%s), problem '%s', wanted '%s'", descr, st,
                 fp4_last_error(), h.problem, want);
    free(b);
}

/* The header from a prefix of the .npy (a deflated member inflated only so far): the header
 * must lie inside the prefix, the data size is checked against the whole. */
static void test_npy_prefix(void **state)
{
    (void)state;
    uint64_t size;
    fp4_npy_header h;
    uint8_t *b = npy_image(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 48,
                           &size);
    assert_int_equal(size, 176);
    assert_int_equal(fp4_npy_parse_prefix("a.npy", b, 128, size, &h), FP4_OK); /* header only */
    assert_int_equal(h.data_offset, 128);
    assert_int_equal(h.data_bytes, 48);
    assert_int_equal(fp4_npy_parse_prefix("a.npy", b, 127, size, &h), FP4_ERR_INPUT); /* cut */
    assert_non_null(strstr(fp4_last_error(), "runs past the end"));
    assert_int_equal(fp4_npy_parse_prefix("a.npy", b, 128, size - 1, &h), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "data truncated"));
    assert_int_equal(fp4_npy_parse_prefix("a.npy", b, size + 100, size, &h), FP4_OK);
    free(b);
}

static void test_npy_problems(void **state)
{
    (void)state;
    expect_problem("'<V2'", "ml_dtypes");
    expect_problem("'|O'", "object array");
    expect_problem("'|b1'", "booleans");
    expect_problem("'<c8'", "complex");
    expect_problem("'<U3'", "strings");
    expect_problem("'<M8[ns]'", "dates");
    expect_problem("'<f16'", "float width");
    expect_problem("[('a', '<f4'), ('b', '<i4')]", "structured");
}

static void expect_bad(int major, const char *dict, uint64_t data_len, const char *want)
{
    uint64_t size;
    uint8_t *b = npy_image(major, dict, data_len, &size);
    fp4_npy_header h;
    fp4_error_clear();
    fp4_status st = fp4_npy_parse("a.npy", b, size, &h);
    if (st != FP4_ERR_INPUT || !strstr(fp4_last_error(), want))
        fail_msg("%s: status %d, '%s', wanted '%s'", dict, st, fp4_last_error(), want);
    free(b);
}

static void test_npy_hostile(void **state)
{
    (void)state;
    expect_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 47, "truncated");
    expect_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-3, 4), }", 48, "is not");
    expect_bad(1, "{'descr': '<f4', 'fortran_order': False}", 48, "lacks 'shape'");
    expect_bad(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", 4, "is not");
    expect_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 4,
               "unexpected or repeated key 'x'");
    expect_bad(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4,
               "unexpected or repeated key 'descr'");
    expect_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1)}", 4,
               "more than 8");
    expect_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}",
               4, "overflows");
    expect_bad(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,)}", 4,
               "overflows");
    expect_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
               4, "is not");
    expect_bad(1, "{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}", 4, "is not");
    expect_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk", 4, "is not");
    expect_bad(3, "{'descr': '<f4\xff', 'fortran_order': False, 'shape': (1,)}", 4, "UTF-8");
    /* header length beyond the file; unknown version; no magic */
    uint64_t size;
    uint8_t *b = npy_image(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4, &size);
    fp4_npy_header h;
    b[8] = 0xFF;
    b[9] = 0xFF;
    assert_int_equal(fp4_npy_parse("a.npy", b, size, &h), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "runs past the end"));
    b[6] = 4;
    assert_int_equal(fp4_npy_parse("a.npy", b, size, &h), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "version 4.0"));
    b[0] = 'x';
    assert_int_equal(fp4_npy_parse("a.npy", b, size, &h), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "magic"));
    assert_int_equal(fp4_npy_parse("a.npy", b, 7, &h), FP4_ERR_INPUT);
    free(b);
}

/* ---- zip ---- */

static void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, v & 0xFFFF), put16(p + 2, v >> 16); }
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)v), put32(p + 4, (uint32_t)(v >> 32)); }

/* A stored-only zip of members name[i] with len[i] bytes each; zip64 end records when asked. */
static uint8_t *zip_image(int n, const char *const *name, const uint32_t *len, bool zip64,
                          uint64_t *size)
{
    uint8_t *b = calloc(1, 65536);
    assert_non_null(b);
    uint64_t p = 0, lho[8];
    for (int i = 0; i < n; i++) {
        size_t nl = strlen(name[i]);
        lho[i] = p;
        put32(b + p, 0x04034b50), put16(b + p + 4, 20), put16(b + p + 8, 0);
        put32(b + p + 18, len[i]), put32(b + p + 22, len[i]);
        put16(b + p + 26, (unsigned)nl), put16(b + p + 28, 0);
        memcpy(b + p + 30, name[i], nl);
        p += 30 + nl;
        memset(b + p, 0x40 + i, len[i]);
        p += len[i];
    }
    uint64_t cd = p;
    for (int i = 0; i < n; i++) {
        size_t nl = strlen(name[i]);
        put32(b + p, 0x02014b50), put16(b + p + 10, 0);
        put32(b + p + 20, len[i]), put32(b + p + 24, len[i]);
        put16(b + p + 28, (unsigned)nl);
        put32(b + p + 42, (uint32_t)lho[i]);
        memcpy(b + p + 46, name[i], nl);
        p += 46 + nl;
    }
    uint64_t cdsize = p - cd;
    if (zip64) {
        uint64_t z = p;
        put32(b + p, 0x06064b50), put64(b + p + 4, 44);
        put64(b + p + 24, (uint64_t)n), put64(b + p + 32, (uint64_t)n);
        put64(b + p + 40, cdsize), put64(b + p + 48, cd);
        p += 56;
        put32(b + p, 0x07064b50), put64(b + p + 8, z), put32(b + p + 16, 1);
        p += 20;
    }
    put32(b + p, 0x06054b50);
    put16(b + p + 8, zip64 ? 0xFFFF : (unsigned)n), put16(b + p + 10, zip64 ? 0xFFFF : (unsigned)n);
    put32(b + p + 12, zip64 ? 0xFFFFFFFF : (uint32_t)cdsize);
    put32(b + p + 16, zip64 ? 0xFFFFFFFF : (uint32_t)cd);
    p += 22;
    *size = p;
    return b;
}

static void test_zip_list(void **state)
{
    (void)state;
    const char *names[] = {"a.npy", "b/c.npy"};
    const uint32_t lens[] = {10, 3};
    for (int z64 = 0; z64 < 2; z64++) {
        uint64_t size;
        uint8_t *b = zip_image(2, names, lens, z64, &size);
        assert_true(fp4_zip_probe(b, size));
        fp4_zip_member *m;
        int n;
        assert_int_equal(fp4_zip_list("x.npz", b, size, &m, &n), FP4_OK);
        assert_int_equal(n, 2);
        assert_string_equal(m[0].name, "a.npy");
        assert_int_equal(m[0].method, 0);
        assert_int_equal(m[0].usize, 10);
        assert_int_equal(m[0].data_offset, 35);
        assert_int_equal(b[m[0].data_offset], 0x40);
        assert_string_equal(m[1].name, "b/c.npy");
        assert_int_equal(b[m[1].data_offset], 0x41);
        assert_int_equal(m[1].data_offset + 3, 35 + 10 + 37 + 3);
        fp4_zip_free(m, n);
        free(b);
    }
}

static void expect_zip_bad(uint8_t *b, uint64_t size, const char *want)
{
    fp4_zip_member *m;
    int n;
    fp4_error_clear();
    fp4_status st = fp4_zip_list("x.npz", b, size, &m, &n);
    if (st != FP4_ERR_INPUT || !strstr(fp4_last_error(), want))
        fail_msg("zip: status %d, '%s', wanted '%s'", st, fp4_last_error(), want);
    /* nothing left to free (the partial list, published while it is built, is taken back) */
    assert_null(m);
    assert_int_equal(n, 0);
}

static void test_zip_hostile(void **state)
{
    (void)state;
    const char *names[] = {"a.npy", "a.npy"};
    const uint32_t lens[] = {10, 3};
    uint64_t size;
    uint8_t *b = zip_image(2, names, lens, false, &size);
    expect_zip_bad(b, size, "appears twice");
    free(b);
    b = zip_image(1, names, lens, false, &size);
    uint8_t *e = b + size - 22;
    expect_zip_bad(b, size - 1, "not found");
    put32(e + 16, 5000); /* central directory offset past the end */
    expect_zip_bad(b, size, "outside the file");
    put32(e + 16, 45);
    put16(e + 10, 200), put16(e + 8, 200); /* more entries than the directory holds */
    expect_zip_bad(b, size, "too small");
    put16(e + 10, 1), put16(e + 8, 1);
    put16(e + 4, 1); /* disk 1 */
    expect_zip_bad(b, size, "multi-disk");
    put16(e + 4, 0);
    put32(b + 45 + 42, 7); /* local header offset to junk */
    expect_zip_bad(b, size, "local header missing");
    put32(b + 45 + 42, 0);
    put32(b + 45 + 20, 1000), put32(b + 45 + 24, 1000); /* member past the end */
    expect_zip_bad(b, size, "runs past the end");
    put32(b + 45 + 20, 10), put32(b + 45 + 24, 11);
    expect_zip_bad(b, size, "sizes 10 != 11");
    put32(b + 45 + 24, 10);
    b[45 + 46] = 0xFF; /* name not UTF-8 */
    expect_zip_bad(b, size, "not UTF-8");
    b[45 + 46] = 'a';
    put16(b + 45 + 10, 12); /* bzip2: a member problem, not an archive error */
    fp4_zip_member *m;
    int n;
    assert_int_equal(fp4_zip_list("x.npz", b, size, &m, &n), FP4_OK);
    assert_non_null(strstr(m[0].problem, "method 12"));
    fp4_zip_free(m, n);
    free(b);
    b = zip_image(1, names, lens, true, &size);
    put64(b + size - 22 - 20 + 8, 1u << 20); /* zip64 record offset past the end */
    expect_zip_bad(b, size, "zip64 end-of-directory record");
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_npy_good),   cmocka_unit_test(test_npy_problems),
        cmocka_unit_test(test_npy_hostile), cmocka_unit_test(test_zip_list),
        cmocka_unit_test(test_zip_hostile), cmocka_unit_test(test_npy_prefix),
    };
    return cmocka_run_group_tests_name("npy_parse", tests, NULL, NULL);
}
