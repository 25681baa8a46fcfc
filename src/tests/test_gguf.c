/* test_gguf.c — the GGUF reader (io/gguf_parse.c, io/gguf.c) and its 4-bit block types as
 * already-quantized tensors (io/quantized.c): header checks on files built here byte by byte
 * (versions, byte order, counts, strings, arrays, alignment, offsets, types), the values of
 * F32/F16/BF16 tensors, shapes reported row-major, and the MXFP4/NVFP4 decode of
 * testdata/gguf/model.gguf (scripts/make_gguf_testdata.py, written by gguf-py's GGUFWriter)
 * bit for bit against gguf-py's own dequantize (testdata/gguf/expected.safetensors) and
 * against values worked out by hand. */
#include "testutil.h"

#include "io/gguf_parse.h"
#include "io/quantized.h"
#include "io/source.h"

/* ---- a GGUF builder ---------------------------------------------------------------------- */

typedef struct gb {
    uint8_t *b;
    size_t n, cap;
} gb;

static void gb_put(gb *g, const void *p, size_t n)
{
    if (g->n + n > g->cap) {
        g->cap = (g->n + n) * 2 + 64;
        g->b = realloc(g->b, g->cap);
        assert_non_null(g->b);
    }
    memcpy(g->b + g->n, p, n);
    g->n += n;
}

static void gb_u32(gb *g, uint32_t v)
{
    uint8_t b[4];
    for (int i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8 * i));
    gb_put(g, b, 4);
}

static void gb_u64(gb *g, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
    gb_put(g, b, 8);
}

static void gb_str(gb *g, const char *s)
{
    gb_u64(g, strlen(s));
    gb_put(g, s, strlen(s));
}

static void gb_head(gb *g, uint32_t version, uint64_t nt, uint64_t nkv)
{
    gb_put(g, "GGUF", 4);
    gb_u32(g, version);
    gb_u64(g, nt);
    gb_u64(g, nkv);
}

/* A tensor info: n dims of ne, type, offset. */
static void gb_tensor(gb *g, const char *name, int nd, const uint64_t *ne, uint32_t type,
                      uint64_t off)
{
    gb_str(g, name);
    gb_u32(g, (uint32_t)nd);
    for (int i = 0; i < nd; i++) gb_u64(g, ne[i]);
    gb_u32(g, type);
    gb_u64(g, off);
}

static void gb_pad(gb *g, size_t align)
{
    static const uint8_t z[64] = {0};
    while (g->n % align) gb_put(g, z, 1);
}

/* Parse g's bytes; returns the status, the header in *h (free it when FP4_OK). */
static fp4_status parse(const gb *g, fp4_gguf_header *h)
{
    bool more = false;
    fp4_status st = fp4_gguf_parse("t.gguf", g->b, g->n, g->n, h, &more);
    assert_false(more);
    return st;
}

static void expect_error(const gb *g, const char *text)
{
    fp4_gguf_header h;
    fp4_status st = parse(g, &h);
    if (st == FP4_OK) fp4_gguf_header_free(&h);
    assert_int_equal(st, FP4_ERR_INPUT);
    if (!strstr(fp4_last_error(), text)) fail_msg("error \"%s\" lacks \"%s\"", fp4_last_error(), text);
    assert_non_null(strstr(fp4_last_error(), "t.gguf: "));
}

/* A small valid file: one kv of each kind, tensors a (F32 ne [3, 2]), b (F16 ne [2]), c (BF16
 * ne [2]) at alignment 32. */
static void build_small(gb *g, uint32_t version)
{
    gb_head(g, version, 3, 4);
    gb_str(g, "general.architecture");
    gb_u32(g, FP4_GGUF_STRING);
    gb_str(g, "llama");
    gb_str(g, "x.i16");
    gb_u32(g, FP4_GGUF_I16);
    uint8_t i16[2] = {0x00, 0x80}; /* -32768 */
    gb_put(g, i16, 2);
    gb_str(g, "x.arr");
    gb_u32(g, FP4_GGUF_ARRAY);
    gb_u32(g, FP4_GGUF_ARRAY); /* an array of arrays of u8 */
    gb_u64(g, 2);
    for (int k = 0; k < 2; k++) {
        gb_u32(g, FP4_GGUF_U8);
        gb_u64(g, 2);
        uint8_t v[2] = {(uint8_t)(k * 2), (uint8_t)(k * 2 + 1)};
        gb_put(g, v, 2);
    }
    gb_str(g, "x.f64");
    gb_u32(g, FP4_GGUF_F64);
    double d = -0.25;
    gb_put(g, &d, 8);
    const uint64_t ne_a[2] = {3, 2}, ne_b[1] = {2};
    gb_tensor(g, "blk.0.a", 2, ne_a, FP4_GGML_F32, 0);
    gb_tensor(g, "blk.0.b", 1, ne_b, FP4_GGML_F16, 32);
    gb_tensor(g, "c", 1, ne_b, FP4_GGML_BF16, 64);
    gb_pad(g, 32);
    float fa[6] = {0, 1, 2, 3, 4, 5};
    gb_put(g, fa, sizeof fa);
    gb_pad(g, 32);
    uint8_t f16[4] = {0x00, 0x3C, 0x00, 0xC0}; /* 1.0, -2.0 */
    gb_put(g, f16, 4);
    gb_pad(g, 32);
    uint8_t bf16[4] = {0x80, 0x3F, 0x49, 0x40}; /* 1.0, 3.140625 */
    gb_put(g, bf16, 4);
}

static void test_parse_small(void **state)
{
    (void)state;
    for (uint32_t v = 2; v <= 3; v++) {
        gb g = {0};
        build_small(&g, v);
        fp4_gguf_header h;
        assert_int_equal(parse(&g, &h), FP4_OK);
        assert_int_equal(h.version, v);
        assert_int_equal(h.nkv, 4);
        assert_int_equal(h.n, 3);
        assert_int_equal(h.alignment, 32);
        assert_int_equal(h.data_start % 32, 0);
        assert_string_equal(fp4_gguf_find_kv(&h, "general.architecture")->text, "llama");
        assert_int_equal(fp4_gguf_find_kv(&h, "x.i16")->i, -32768);
        assert_string_equal(fp4_gguf_find_kv(&h, "x.i16")->text, "-32768");
        assert_string_equal(fp4_gguf_find_kv(&h, "x.arr")->text, "[[0, 1], [2, 3]]");
        assert_int_equal(fp4_gguf_find_kv(&h, "x.arr")->count, 2);
        assert_double_exact(fp4_gguf_find_kv(&h, "x.f64")->f, -0.25);
        assert_string_equal(h.t[0].name, "blk.0.a");
        assert_int_equal(h.t[0].ne[0], 3);
        assert_int_equal(h.t[0].nbytes, 24);
        assert_string_equal(h.t[0].problem, "");
        assert_null(fp4_gguf_find_kv(&h, "nope"));
        fp4_gguf_header_free(&h);
        free(g.b);
    }
}

/* Keys and strings are shown safely: control characters, NUL and bytes that are not UTF-8 as
 * \xNN; a long string cut at 512 bytes. */
static void test_metadata_text(void **state)
{
    (void)state;
    gb g = {0};
    gb_head(&g, 3, 0, 2);
    gb_str(&g, "k\xff");
    gb_u32(&g, FP4_GGUF_STRING);
    gb_u64(&g, 6);
    gb_put(&g, "a\nb\0\xc3(", 6);
    gb_str(&g, "long");
    gb_u32(&g, FP4_GGUF_STRING);
    char big[600];
    memset(big, 'x', sizeof big);
    gb_u64(&g, sizeof big);
    gb_put(&g, big, sizeof big);
    fp4_gguf_header h;
    assert_int_equal(parse(&g, &h), FP4_OK);
    assert_string_equal(h.kv[0].key, "k\\xFF");
    assert_string_equal(h.kv[0].text, "a\\x0Ab\\x00\\xC3(");
    assert_int_equal(strlen(h.kv[1].text), 512 + 3);
    assert_string_equal(h.kv[1].text + 512, "...");
    fp4_gguf_header_free(&h);
    free(g.b);
}

static void test_refused_headers(void **state)
{
    (void)state;
    gb g = {0};
    gb_put(&g, "GGUX\3\0\0\0", 8);
    gb_u64(&g, 0);
    gb_u64(&g, 0);
    expect_error(&g, "not a GGUF file");
    g.n = 0;
    gb_head(&g, 1, 0, 0);
    expect_error(&g, "GGUF version 1 is not read");
    g.n = 0;
    gb_head(&g, 4, 0, 0);
    expect_error(&g, "GGUF version 4 is not read");
    g.n = 0;
    gb_put(&g, "GGUF\0\0\0\3", 8); /* version 3, big-endian */
    gb_u64(&g, 0);
    gb_u64(&g, 0);
    expect_error(&g, "big-endian GGUF");
    g.n = 0;
    gb_head(&g, 3, 0, (uint64_t)1 << 40);
    expect_error(&g, "metadata entries cannot fit");
    g.n = 0;
    gb_head(&g, 3, (uint64_t)1 << 40, 0);
    expect_error(&g, "tensors cannot fit");
    g.n = 0;
    gb_head(&g, 3, 0, 1); /* a key longer than the file */
    gb_u64(&g, 1000);
    gb_u64(&g, 0);
    gb_u64(&g, 0);
    expect_error(&g, "runs past the end of the file");
    g.n = 0;
    gb_head(&g, 3, 0, 1); /* an empty key */
    gb_str(&g, "");
    gb_u32(&g, FP4_GGUF_U8);
    gb_put(&g, "\0", 1);
    expect_error(&g, "1 to 65535 allowed");
    g.n = 0;
    gb_head(&g, 3, 0, 1); /* an unknown value type */
    gb_str(&g, "k");
    gb_u32(&g, 13);
    gb_u64(&g, 0);
    expect_error(&g, "unknown metadata value type 13");
    g.n = 0;
    gb_head(&g, 3, 0, 1); /* an array claiming more elements than the file holds */
    gb_str(&g, "k");
    gb_u32(&g, FP4_GGUF_ARRAY);
    gb_u32(&g, FP4_GGUF_U32);
    gb_u64(&g, (uint64_t)1 << 60);
    expect_error(&g, "cannot fit in the file");
    g.n = 0;
    gb_head(&g, 3, 0, 1); /* arrays nested 5 deep */
    gb_str(&g, "k");
    gb_u32(&g, FP4_GGUF_ARRAY);
    for (int i = 0; i < 5; i++) {
        gb_u32(&g, FP4_GGUF_ARRAY);
        gb_u64(&g, 1);
    }
    gb_u64(&g, 0);
    gb_u64(&g, 0);
    expect_error(&g, "arrays nested deeper than 4");
    g.n = 0;
    gb_head(&g, 3, 0, 2); /* a duplicate key */
    for (int i = 0; i < 2; i++) {
        gb_str(&g, "k");
        gb_u32(&g, FP4_GGUF_BOOL);
        gb_put(&g, "\1", 1);
    }
    expect_error(&g, "metadata key k appears twice");
    g.n = 0;
    gb_head(&g, 3, 0, 1); /* alignment 48 */
    gb_str(&g, "general.alignment");
    gb_u32(&g, FP4_GGUF_U32);
    gb_u32(&g, 48);
    expect_error(&g, "general.alignment is u32 48, expected a u32 power of two");
    g.n = 0;
    gb_head(&g, 3, 0, 1); /* alignment of the wrong type */
    gb_str(&g, "general.alignment");
    gb_u32(&g, FP4_GGUF_U64);
    gb_u64(&g, 64);
    expect_error(&g, "general.alignment is u64 64");
    g.n = 0;
    const uint64_t ne5[5] = {1, 1, 1, 1, 1};
    gb_head(&g, 3, 1, 0); /* five dimensions */
    gb_tensor(&g, "t", 5, ne5, FP4_GGML_F32, 0);
    gb_pad(&g, 32);
    gb_put(&g, "\0\0\0\0", 4);
    expect_error(&g, "t: n_dims 5 (1 to 4 allowed)");
    g.n = 0;
    gb_head(&g, 3, 2, 0); /* a duplicate tensor */
    gb_tensor(&g, "t", 1, ne5, FP4_GGML_F32, 0);
    gb_tensor(&g, "t", 1, ne5, FP4_GGML_F32, 32);
    gb_pad(&g, 32);
    gb_put(&g, "\0\0\0\0", 4);
    expect_error(&g, "tensor t appears twice");
    g.n = 0;
    gb_head(&g, 3, 1, 0); /* a tensor whose data section lies past the end */
    gb_tensor(&g, "t", 1, ne5, FP4_GGML_F32, 0);
    expect_error(&g, "begins past the end of the file");
    free(g.b);
}

static void test_tensor_problems(void **state)
{
    (void)state;
    gb g = {0};
    const uint64_t ne4[1] = {4}, ne40[1] = {40}, ne32[1] = {32}, ne8[1] = {8};
    gb_head(&g, 3, 6, 0);
    gb_tensor(&g, "ok", 1, ne4, FP4_GGML_F32, 0);          /* 16 bytes at 0 */
    gb_tensor(&g, "misaligned", 1, ne4, FP4_GGML_F32, 16); /* not a multiple of 32 */
    gb_tensor(&g, "unknown", 1, ne4, 99, 32);
    gb_tensor(&g, "partial", 1, ne40, FP4_GGML_Q4_0, 32);  /* 40 is not whole 32-blocks */
    gb_tensor(&g, "overlap", 1, ne8, FP4_GGML_F32, 0);     /* over "ok" */
    gb_tensor(&g, "past", 1, ne32, FP4_GGML_F32, 64);      /* 128 bytes from 64: past the end */
    gb_pad(&g, 32);
    uint8_t data[96] = {0};
    gb_put(&g, data, sizeof data);
    fp4_gguf_header h;
    assert_int_equal(parse(&g, &h), FP4_OK);
    assert_string_equal(h.t[0].problem, "");
    assert_string_equal(h.t[1].problem, "data offset 16 is not a multiple of the alignment 32");
    assert_string_equal(h.t[2].problem, "unknown ggml type 99");
    assert_string_equal(h.t[3].problem, "ne[0] = 40 is not a whole number of 32-element q4_0 blocks");
    assert_string_equal(h.t[4].problem, "data overlaps ok's");
    assert_non_null(strstr(h.t[5].problem, "lies past the end of the file (96 bytes of data): truncated"));
    fp4_gguf_header_free(&h);
    free(g.b);
}

/* Every prefix of a valid file: an error or a header, never a read outside the bytes (the
 * sanitizer build checks that); need_more exactly when the bytes end before the file does. */
static void test_truncations(void **state)
{
    (void)state;
    gb g = {0};
    build_small(&g, 3);
    for (size_t n = 0; n <= g.n; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, g.b, n);
        fp4_gguf_header h;
        bool more = false;
        fp4_status st = fp4_gguf_parse("t.gguf", copy, n, n, &h, &more);
        assert_false(more);
        if (st == FP4_OK) {
            /* the header is whole: the tensors whose data is cut say so */
            assert_true(n >= h.data_start);
            fp4_gguf_header_free(&h);
        } else {
            assert_int_equal(st, FP4_ERR_INPUT);
        }
        /* the same prefix given as the first bytes of the whole file: more is asked for, or
         * the parse succeeds on the bytes given */
        st = fp4_gguf_parse("t.gguf", copy, n, g.n, &h, &more);
        if (st == FP4_OK) fp4_gguf_header_free(&h);
        else assert_true(more);
        free(copy);
    }
    free(g.b);
}

static char *write_tmp(const char *dir, const char *name, const gb *g)
{
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(g->b, 1, g->n, f), g->n);
    fclose(f);
    return p;
}

static void test_source_values(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    gb g = {0};
    build_small(&g, 2);
    char *p = write_tmp(dir, "small.gguf", &g);
    fp4_source *s = NULL;
    assert_int_equal(fp4_source_open(p, &s), FP4_OK);
    assert_string_equal(fp4_source_format(s)->name, "gguf");
    fp4_tensor_desc *ds = NULL;
    int n = 0;
    assert_int_equal(fp4_source_select(s, NULL, 0, &ds, &n), FP4_OK);
    assert_int_equal(n, 3);
    /* ne [3, 2] is the row-major shape 2x3 */
    assert_string_equal(ds[0].name, "blk.0.a");
    assert_int_equal(ds[0].rank, 2);
    assert_int_equal(ds[0].dims[0], 2);
    assert_int_equal(ds[0].dims[1], 3);
    assert_string_equal(ds[0].dtype, "f32");
    assert_true(ds[0].numeric);
    float row[3];
    assert_int_equal(fp4_source_read_f32(s, &ds[0], 0, 1, 1, row), FP4_OK);
    assert_double_exact(row[0], 3.0);
    assert_double_exact(row[2], 5.0);
    float col[2];
    assert_int_equal(fp4_source_read_f32(s, &ds[0], 1, 2, 1, col), FP4_OK);
    assert_double_exact(col[0], 2.0);
    assert_double_exact(col[1], 5.0);
    assert_int_equal(fp4_source_read_f32(s, &ds[0], 0, 2, 1, row), FP4_ERR_USAGE);
    float two[2];
    assert_string_equal(ds[1].dtype, "f16");
    assert_int_equal(fp4_source_read_f32(s, &ds[1], 0, 0, 2, two), FP4_OK);
    assert_double_exact(two[0], 1.0);
    assert_double_exact(two[1], -2.0);
    assert_string_equal(ds[2].dtype, "bf16");
    assert_int_equal(fp4_source_read_f32(s, &ds[2], 0, 0, 2, two), FP4_OK);
    assert_double_exact(two[0], 1.0);
    assert_double_exact(two[1], 3.140625);
    /* a group by prefix, metadata in the file's order */
    fp4_tensor_desc d;
    assert_int_equal(fp4_source_describe(s, "blk.0", &d), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "is a group"));
    fp4_tensor_desc_free(&d);
    char **k = NULL, **v = NULL;
    int nm = 0;
    assert_int_equal(fp4_source_metadata(s, &k, &v, &nm), FP4_OK);
    assert_int_equal(nm, 4);
    assert_string_equal(k[3], "x.f64");
    assert_string_equal(v[3], "-0.25");
    fp4_source_metadata_free(k, v, nm);
    fp4_tensor_desc_free_list(ds, n);
    fp4_source_close(s);
    free(p);

    /* a file cut inside its data: the tensors it cuts are errors, the others read */
    g.n -= 2;
    p = write_tmp(dir, "cut.gguf", &g);
    assert_int_equal(fp4_source_open(p, &s), FP4_OK);
    assert_int_equal(fp4_source_select(s, NULL, 0, &ds, &n), FP4_OK);
    assert_string_equal(ds[0].problem, "");
    assert_non_null(strstr(ds[2].problem, "truncated"));
    assert_int_equal(fp4_source_read_f32(s, &ds[2], 0, 0, 2, two), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "cut.gguf: c: data [64, 68) lies past the end"));
    fp4_tensor_desc_free_list(ds, n);
    fp4_source_close(s);
    free(p);
    free(g.b);
    fp4t_rmtree(dir);
}

/* The fixture: types listed by name, 4-bit tensors grouped, decode bit for bit. */
static void test_fixture_decode(void **state)
{
    (void)state;
    fp4_source *s = NULL, *e = NULL;
    assert_int_equal(fp4_source_open(FP4T_TESTDATA("gguf/model.gguf"), &s), FP4_OK);
    assert_int_equal(fp4_source_open(FP4T_TESTDATA("gguf/expected.safetensors"), &e), FP4_OK);
    fp4_tensor_desc d;
    assert_int_equal(fp4_source_describe(s, "blk.0.ffn_up.weight", &d), FP4_OK);
    assert_string_equal(d.dtype, "q8_0");
    assert_false(d.numeric);
    assert_non_null(strstr(d.problem, "ggml type q8_0 is not read"));
    fp4_tensor_desc_free(&d);
    assert_int_equal(fp4_source_describe(s, "blk.0.attn_v.weight", &d), FP4_OK);
    assert_string_equal(d.dtype, "bf16");
    assert_int_equal(d.dims[0], 32);
    assert_int_equal(d.dims[1], 128);
    fp4_tensor_desc_free(&d);

    fp4_qset qs;
    assert_int_equal(fp4_quant_scan(s, &qs), FP4_OK);
    assert_int_equal(qs.n, 4);
    const char *names[4] = {"blk.0.ffn_down.weight", "blk.0.ffn_gate.weight", "special.mxfp4",
                            "special.nvfp4"};
    for (int i = 0; i < 4; i++) {
        const fp4_qtensor *q = &qs.t[i];
        assert_string_equal(q->name, names[i]);
        assert_string_equal(q->problem, "");
        assert_int_equal(q->producer, FP4_QP_GGUF);
        assert_int_equal(q->format, i % 2 == 0 ? FP4_QF_MXFP4 : FP4_QF_NVFP4);
        assert_int_equal(q->scale_layout, FP4_QS_GGUF);
        const int64_t nel = q->rows * q->dims[q->rank - 1];
        float *got = malloc((size_t)nel * sizeof *got), *want = malloc((size_t)nel * sizeof *want);
        assert_int_equal(fp4_quant_read(s, q, 0, q->rows, got), FP4_OK);
        fp4_tensor_desc x;
        assert_int_equal(fp4_source_describe(e, q->name, &x), FP4_OK);
        assert_int_equal(x.nelems, nel);
        assert_int_equal(fp4_source_read_f32(e, &x, 0, 0, x.dims[0], want), FP4_OK);
        if (memcmp(got, want, (size_t)nel * sizeof *got) != 0)
            fail_msg("%s: decode differs from gguf-py's dequantize", q->name);
        if (i == 2) { /* special.mxfp4: E8M0 0, 1 | 127, 254; element j code j, j+16 15-j */
            assert_double_exact(got[3], ldexp(1.5, -127));      /* kv 3 * 2^-128 */
            assert_double_exact(got[16], -ldexp(6.0, -127));    /* code 15 */
            assert_double_exact(got[32 + 1], ldexp(0.5, -126)); /* e = 1 */
            assert_double_exact(got[64 + 5], 3.0);              /* e = 127 */
            assert_double_exact(got[64 + 16], -6.0);
            assert_double_exact(got[96 + 1], ldexp(1.0, 126));  /* e = 254: 1 * 2^126 */
            assert_double_inf(got[96 + 7], 1);                  /* 12 * 2^126 overflows */
        }
        if (i == 3) { /* special.nvfp4: d 00 01 7E 7F | 80 FF 38 08 */
            for (int k = 0; k < 16; k++) assert_double_exact(got[k], 0.0);
            assert_false(signbit(got[15])); /* code 8: ggml's int8 kvalue 0, so +0 */
            assert_true(signbit(got[8]));   /* code 15: -12 * 0 = -0 */
            assert_double_exact(got[17], -ldexp(1.0, -10)); /* 0x01 = 2^-9, code 9 */
            assert_double_exact(got[40], -2688.0);          /* 0x7E = 448, code 15 */
            for (int k = 48; k < 64; k++) assert_double_exact(got[k], 0.0); /* 0x7F */
            for (int k = 64; k < 80; k++) assert_double_exact(got[k], 0.0); /* 0x80 */
            assert_double_exact(got[64 + 16 + 7], -2880.0); /* 0xFF = 480, code 15 */
            assert_double_exact(got[64 + 16 + 8], 2880.0);  /* code 7 */
            assert_double_exact(got[64 + 32 + 2], 1.0);     /* 0x38 = 1 */
            assert_double_exact(got[64 + 48 + 1], -ldexp(1.0, -7)); /* 0x08 = 2^-6, code 9 */
        }
        /* rows decoded from the middle agree with the whole */
        if (q->rows > 2) {
            assert_int_equal(fp4_quant_read(s, q, 1, 1, want), FP4_OK);
            assert_memory_equal(want, got + q->dims[q->rank - 1],
                                (size_t)q->dims[q->rank - 1] * sizeof *got);
        }
        fp4_tensor_desc_free(&x);
        free(got);
        free(want);
    }
    /* codes and scale bytes as the audit reads them */
    const uint8_t *pb, *sb;
    float global;
    assert_int_equal(fp4_quant_bytes(s, &qs.t[3], &pb, &sb, &global), FP4_OK);
    assert_double_exact(global, 1.0);
    assert_int_equal(sb[fp4_quant_scale_index(&qs.t[3], 0, 2)], 0x7E);
    assert_int_equal(sb[fp4_quant_scale_index(&qs.t[3], 1, 1)], 0xFF);
    assert_int_equal(fp4_quant_code(&qs.t[3], pb, 1, 16 + 8), 7);
    assert_int_equal(fp4_quant_code(&qs.t[3], pb, 0, 40), 15);
    assert_int_equal(fp4_quant_bytes(s, &qs.t[2], &pb, &sb, &global), FP4_OK);
    assert_int_equal(sb[fp4_quant_scale_index(&qs.t[2], 1, 1)], 254);
    assert_int_equal(fp4_quant_code(&qs.t[2], pb, 0, 16), 15);
    assert_int_equal(fp4_quant_code(&qs.t[2], pb, 0, 3), 3);
    char why[160];
    fp4_quant_skip_reason(&qs.t[0], why, sizeof why);
    assert_string_equal(why, "already quantized (MXFP4, gguf): audit needs the source");
    fp4_qset_free(&qs);
    fp4_source_close(s);
    fp4_source_close(e);
}

/* An NVFP4 tensor with a per-tensor sidecar: it is a member, multiplied after the block. */
static void test_nvfp4_sidecar(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    gb g = {0};
    const uint64_t ne[2] = {64, 1}, one[1] = {1};
    gb_head(&g, 3, 2, 0);
    gb_tensor(&g, "blk.0.w.weight", 2, ne, FP4_GGML_NVFP4, 0);
    gb_tensor(&g, "blk.0.w.scale", 1, one, FP4_GGML_F32, 64);
    gb_pad(&g, 32);
    uint8_t blk[64] = {0x38, 0x40, 0x30, 0x00};  /* 1.0, 2.0, 0.5, 0 */
    for (int j = 0; j < 32; j++) blk[4 + j] = 0x71; /* low code 1 (0.5), high code 7 (6) */
    gb_put(&g, blk, sizeof blk);
    float sc = 0.1f;
    gb_put(&g, &sc, 4);
    char *p = write_tmp(dir, "side.gguf", &g);
    fp4_source *s = NULL;
    assert_int_equal(fp4_source_open(p, &s), FP4_OK);
    fp4_qset qs;
    assert_int_equal(fp4_quant_scan(s, &qs), FP4_OK);
    assert_int_equal(qs.n, 1);
    assert_string_equal(qs.t[0].problem, "");
    assert_string_equal(qs.t[0].global, "blk.0.w.scale");
    assert_int_equal(fp4_qset_find(&qs, "blk.0.w.scale"), 0);
    float out[64];
    assert_int_equal(fp4_quant_read(s, &qs.t[0], 0, 1, out), FP4_OK);
    assert_double_exact(out[0], (double)(0.5f * 0.1f));       /* (1 * 0.5) * 0.1 */
    assert_double_exact(out[8], (double)(6.0f * 0.1f));
    assert_double_exact(out[16 + 8], (double)(12.0f * 0.1f)); /* (6 * 2) * 0.1 in fp32 */
    assert_double_exact(out[32], (double)(0.25f * 0.1f));
    assert_double_exact(out[63], 0.0);
    fp4_qset_free(&qs);
    fp4_source_close(s);
    free(p);
    free(g.b);
    fp4t_rmtree(dir);
}

/* A per-tensor .scale sidecar beside an MXFP4 tensor: ggml type 39 has no per-tensor scale
 * (dequantize_row_mxfp4 reads none), so the sidecar contradicts the tensor: its problem, never
 * a scale silently left unapplied; the tensor's bytes are not given out. */
static void test_mxfp4_sidecar(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    gb g = {0};
    const uint64_t ne[2] = {32, 1}, one[1] = {1};
    gb_head(&g, 3, 2, 0);
    gb_tensor(&g, "blk.0.m.weight", 2, ne, FP4_GGML_MXFP4, 0);
    gb_tensor(&g, "blk.0.m.scale", 1, one, FP4_GGML_F32, 32);
    gb_pad(&g, 32);
    uint8_t blk[32] = {127}; /* e = 2^0, then qs[16] */
    for (int j = 0; j < 16; j++) blk[1 + j] = 0x71;
    gb_put(&g, blk, sizeof blk);
    float sc = 0.5f;
    gb_put(&g, &sc, 4);
    char *p = write_tmp(dir, "mxside.gguf", &g);
    fp4_source *s = NULL;
    assert_int_equal(fp4_source_open(p, &s), FP4_OK);
    fp4_qset qs;
    assert_int_equal(fp4_quant_scan(s, &qs), FP4_OK);
    assert_int_equal(qs.n, 1);
    assert_string_equal(qs.t[0].global, "blk.0.m.scale");
    assert_int_equal(fp4_qset_find(&qs, "blk.0.m.scale"), 0);
    assert_non_null(strstr(qs.t[0].problem, "blk.0.m.scale: a per-tensor scale beside an MXFP4 "
                                            "tensor (ggml type 39 has none"));
    float out[32];
    assert_int_equal(fp4_quant_read(s, &qs.t[0], 0, 1, out), FP4_ERR_INPUT);
    fp4_error_clear();
    fp4_qset_free(&qs);
    fp4_source_close(s);
    free(p);
    free(g.b);
    fp4t_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_small),
        cmocka_unit_test(test_metadata_text),
        cmocka_unit_test(test_refused_headers),
        cmocka_unit_test(test_tensor_problems),
        cmocka_unit_test(test_truncations),
        cmocka_unit_test(test_source_values),
        cmocka_unit_test(test_fixture_decode),
        cmocka_unit_test(test_nvfp4_sidecar),
        cmocka_unit_test(test_mxfp4_sidecar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
