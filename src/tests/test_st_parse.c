/* test_st_parse.c — the safetensors header and index parsers (io/st_parse.c): a well-formed
 * header as the reference writer lays it out, and each hostile header refused with its reason;
 * the exact F8_E4M3 / F8_E5M2 widening (io/widen_f8.c); stored words to fp32 and slabs in C and
 * Fortran order (io/rawconv.c). */
#include "testutil.h"

#include <math.h>

#include "base/common.h"
#include "io/rawconv.h"
#include "io/st_parse.h"
#include "io/widen_f8.h"

/* A safetensors image: 8-byte LE length (hlen_override when not 0), the JSON, data_len bytes
 * of data (value i & 0xFF). */
static uint8_t *st_image(const char *json, uint64_t data_len, uint64_t hlen_override,
                         uint64_t *size)
{
    size_t n = strlen(json);
    *size = 8 + n + data_len;
    uint8_t *b = malloc(*size);
    assert_non_null(b);
    uint64_t h = hlen_override ? hlen_override : n;
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(h >> (8 * i));
    memcpy(b + 8, json, n);
    for (uint64_t i = 0; i < data_len; i++) b[8 + n + i] = (uint8_t)i;
    return b;
}

/* Parse and expect failure with `want` in the detail. */
static void expect_bad(const char *json, uint64_t data_len, uint64_t hlen, const char *want)
{
    uint64_t size;
    uint8_t *b = st_image(json, data_len, hlen, &size);
    fp4_st_header h;
    fp4_error_clear();
    fp4_status st = fp4_st_parse("m.safetensors", b, size, &h);
    if (st != FP4_ERR_INPUT || !strstr(fp4_last_error(), want) ||
        strncmp(fp4_last_error(), "m.safetensors: ", 15) != 0)
        fail_msg("header %s: status %d, detail '%s', wanted '%s'", json, st, fp4_last_error(),
                 want);
    assert_null(h.t);
    free(b);
}

static void test_good_header(void **state)
{
    (void)state;
    /* The reference writer's order: data sorted, header padded with spaces. */
    const char *json =
        "{\"__metadata__\":{\"format\":\"pt\",\"note\":\"x\"},"
        "\"model.layers.1.w\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[16,28]},"
        "\"model.layers.0.w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
        "\"e\":{\"dtype\":\"F16\",\"shape\":[0,5],\"data_offsets\":[28,28]},"
        "\"b\":{\"dtype\":\"BOOL\",\"shape\":[],\"data_offsets\":[28,29]},"
        "\"f8\":{\"dtype\":\"F8_E4M3\",\"shape\":[3],\"data_offsets\":[29,32]},"
        "\"q\":{\"dtype\":\"X9\",\"shape\":[3],\"data_offsets\":[32,40]}}    ";
    uint64_t size;
    uint8_t *b = st_image(json, 40, 0, &size);
    fp4_st_header h;
    assert_int_equal(fp4_st_parse("m.safetensors", b, size, &h), FP4_OK);
    assert_int_equal(h.header_len, strlen(json));
    assert_int_equal(h.data_start, 8 + strlen(json));
    assert_int_equal(h.data_len, 40);
    assert_int_equal(h.n, 6);
    /* data order */
    assert_string_equal(h.t[0].name, "model.layers.0.w");
    assert_string_equal(h.t[1].name, "model.layers.1.w");
    assert_string_equal(h.t[2].name, "e");
    assert_string_equal(h.t[3].name, "b");
    assert_string_equal(h.t[4].name, "f8");
    assert_string_equal(h.t[5].name, "q");
    assert_int_equal(h.t[0].type, FP4_ST_F32);
    assert_int_equal(h.t[0].rank, 1);
    assert_int_equal(h.t[0].dims[0], 4);
    assert_int_equal(h.t[1].type, FP4_ST_BF16);
    assert_int_equal(h.t[1].nelems, 6);
    assert_int_equal(h.t[1].begin, 16);
    assert_int_equal(h.t[1].end, 28);
    assert_string_equal(h.t[1].problem, "");
    assert_int_equal(h.t[2].nelems, 0);
    assert_int_equal(h.t[3].rank, 0);
    assert_int_equal(h.t[3].nelems, 1);
    assert_non_null(strstr(h.t[3].problem, "BOOL"));
    assert_string_equal(h.t[4].problem, "");
    assert_int_equal(h.t[5].type, FP4_ST_UNKNOWN);
    assert_string_equal(h.t[5].dtype, "X9");
    assert_non_null(strstr(h.t[5].problem, "unknown stored type X9"));
    assert_int_equal(h.nmeta, 2);
    assert_string_equal(h.meta_keys[0], "format");
    assert_string_equal(h.meta_vals[0], "pt");
    fp4_st_header_free(&h);
    free(b);
}

/* A file cut short inside its data section: the tensors whose bytes are all there are read,
 * each one that runs past the end (by one byte, or wholly past it, or empty past it) is cut
 * with a problem naming its offsets and the bytes left; a gap is still refused. */
static void test_truncated_data(void **state)
{
    (void)state;
    const char *json = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]},"
                       "\"c\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]},"
                       "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[20,20]}}";
    const struct {
        uint64_t len;
        bool cut[4];
    } want[] = {{20, {0, 0, 0, 0}}, {19, {0, 0, 1, 1}}, {12, {0, 0, 1, 1}},
                {11, {0, 1, 1, 1}}, {0, {1, 1, 1, 1}}};
    for (size_t c = 0; c < sizeof want / sizeof *want; c++) {
        uint64_t size;
        uint8_t *b = st_image(json, want[c].len, 0, &size);
        fp4_st_header h;
        assert_int_equal(fp4_st_parse("m.safetensors", b, size, &h), FP4_OK);
        assert_int_equal(h.n, 4);
        assert_int_equal(h.data_len, want[c].len);
        for (int i = 0; i < 4; i++) {
            if (h.t[i].cut != want[c].cut[i] || (h.t[i].problem[0] != 0) != want[c].cut[i])
                fail_msg("data %llu bytes: %s cut %d problem '%s'", (unsigned long long)want[c].len,
                         h.t[i].name, h.t[i].cut, h.t[i].problem);
        }
        if (c == 1)
            assert_string_equal(h.t[2].problem, "data_offsets [12, 20] past the file's end "
                                                "(truncated to 19 data bytes)");
        fp4_st_header_free(&h);
        free(b);
    }
    /* a gap before the cut is the header's error still */
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
               6, 0, "belong to no tensor");
}

static void test_empty_and_tiny(void **state)
{
    (void)state;
    uint64_t size;
    uint8_t *b = st_image("{}", 0, 0, &size);
    fp4_st_header h;
    assert_int_equal(fp4_st_parse("m", b, size, &h), FP4_OK);
    assert_int_equal(h.n, 0);
    fp4_st_header_free(&h);
    free(b);
    uint8_t tiny[5] = {1, 0, 0, 0, 0};
    assert_int_equal(fp4_st_parse("m", tiny, sizeof tiny, &h), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "too short"));
}

/* A file cut inside its header (a shard's tensors then errors entries, SPEC §8): under 8
 * bytes, or a header length within the limit running past the end; never a length over the
 * limit, one that fits, or JSON text where the length belongs (an index). */
static void test_header_cut(void **state)
{
    (void)state;
    uint8_t len[8] = {100, 0, 0, 0, 0, 0, 0, 0};
    assert_true(fp4_st_header_cut(len, 5));
    assert_true(fp4_st_header_cut(len, 0));
    assert_true(fp4_st_header_cut(len, 107));
    assert_false(fp4_st_header_cut(len, 108));
    len[5] = 1; /* 2^40 + 100: over the 100 MB limit, not a cut */
    assert_false(fp4_st_header_cut(len, 64));
    const uint8_t json[8] = {'{', '"', 'w', 'e', 'i', 'g', 'h', 't'};
    assert_false(fp4_st_header_cut(json, 64));
    const uint8_t ws[8] = {' ', '\n', '{', '"', 'm', 'e', 't', 'a'};
    assert_false(fp4_st_header_cut(ws, 64));
}

static void test_hostile_headers(void **state)
{
    (void)state;
    const char *ok1 = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    expect_bad(ok1, 4, (uint64_t)1 << 63, "exceeds the 100 MB limit");
    expect_bad(ok1, 4, 100000001, "exceeds the 100 MB limit");
    expect_bad(ok1, 4, strlen(ok1) + 5, "runs past the end of the file");
    expect_bad("{\"a\":", 0, 0, "not valid JSON");
    expect_bad("not json", 0, 0, "not a JSON object");
    expect_bad("[1,2]", 0, 0, "not a JSON object");
    expect_bad("{\"a\":1} x", 0, 0, "bytes after its JSON object");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[2,6]}}",
               6, 0, "overlap");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
               8, 0, "overlap");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
               12, 0, "belong to no tensor");
    expect_bad(ok1, 8, 0, "belong to no tensor");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, 0,
               "end before they begin");
    /* the bounds exactly: an end one byte before the begin */
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,3]}}", 4, 0,
               "[4, 3] end before they begin");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,7]}}",
               8, 0, "b: data_offsets [8, 7] end before they begin");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],"
               "\"data_offsets\":[0,4]}}",
               4, 0, "overflows 64 bits");
    expect_bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[1125899906842624,4096],"
               "\"data_offsets\":[0,4]}}",
               4, 0, "overflows 64 bits");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, 0,
               "hold 4 bytes; 2 elements of F32 take 8");
    expect_bad("{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2, 0,
               "not a whole number of bytes");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
               8, 0, "tensor name a appears twice");
    /* a field twice in one entry (issue 26): cJSON reads the first, another reader the last */
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"I32\",\"shape\":[1],"
               "\"data_offsets\":[0,4]}}",
               4, 0, "header: a: key dtype appears twice");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],"
               "\"data_offsets\":[4,8]}}",
               8, 0, "header: a: key data_offsets appears twice");
    expect_bad("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
               4, 0, "__metadata__: key k appears twice");
    expect_bad("{\"__metadata__\":{},\"__metadata__\":{}}", 0, 0, "__metadata__ appears twice");
    expect_bad("{\"a\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, 0,
               "not valid UTF-8");
    expect_bad("{\"a\xc0\x80\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, 0,
               "not valid UTF-8"); /* overlong NUL */
    expect_bad("{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, 0,
               "NUL");
    expect_bad("{\"a\\ud800\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, 0,
               "not valid JSON"); /* a lone surrogate */
    expect_bad("{\"a\tb\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, 0,
               "control character");
    expect_bad("{\"__metadata__\":{\"k\":1}}", 0, 0, "value is not a string");
    { /* JSON text where the length should be (an index): named so, not a header size */
        const char *ix = "{\"weight_map\": {\"w\": \"x.safetensors\"}}";
        const char *ws = " \n\t{\"a\":1}";
        for (int k = 0; k < 2; k++) {
            const char *t = k ? ws : ix;
            fp4_error_clear();
            fp4_st_header h;
            assert_int_equal(fp4_st_parse("m.safetensors", (const uint8_t *)t, strlen(t), &h),
                             FP4_ERR_INPUT);
            assert_string_equal(fp4_last_error(), "m.safetensors is not a safetensors file (it "
                                                  "looks like JSON: an index?)");
        }
    }
    expect_bad("{\"__metadata__\":[\"k\"]}", 0, 0, "__metadata__ is not a JSON object");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, 0,
               "a: shape holds -1: not a plain decimal integer");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[9007199254740994],\"data_offsets\":[0,4]}}", 4, 0,
               "hold 4 bytes; 9007199254740994 elements of F32 take 36028797018963976");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, 0,
               "a: shape holds 1.5: not a plain decimal integer");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, 0,
               "not [begin, end]");
    expect_bad("{\"a\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, 0,
               "\"dtype\" missing");
    expect_bad("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, 0, "\"dtype\" missing");
    expect_bad("{\"a\":[1]}", 0, 0, "not a JSON object");
}

/* Header numbers as the reference reader (serde, u64) takes them: plain decimal integers, read
 * exactly (cJSON's double made 2^53 + 1 into 2^53 and took 3.2e1 and -0.0 as integers); the
 * message names the file, the tensor, the key and the text. Strings holding digits, escaped
 * quotes and numbers elsewhere keep the numbers in step with their text. */
static void test_header_numbers(void **state)
{
    (void)state;
    const struct {
        const char *shape, *off, *want;
    } bad[] = {
        {"[3.2e1]", "[0,128]", "a: shape holds 3.2e1: not a plain decimal integer"},
        {"[32E0]", "[0,128]", "a: shape holds 32E0: not a plain"},
        {"[-0.0]", "[0,0]", "a: shape holds -0.0: not a plain"},
        {"[-0]", "[0,0]", "a: shape holds -0: not a plain"},
        {"[1,2.0]", "[0,8]", "a: shape holds 2.0: not a plain"},
        {"[9223372036854775808,0]", "[0,0]", "a: shape holds 9223372036854775808: over 2^63 - 1"},
        {"[1]", "[0.0,4]", "a: data_offsets hold 0.0: not a plain"},
        {"[1]", "[0,4e0]", "a: data_offsets hold 4e0: not a plain"},
        {"[0]", "[0,18446744073709551616]", "a: data_offsets hold 18446744073709551616: over 2^64 - 1"},
        {"[\"1\"]", "[0,4]", "a: shape holds a value: not a number"},
    };
    char json[512];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(json, sizeof json, "{\"__metadata__\":{\"n\":\"1.5e3 \\\" -2\"},"
                 "\"z\\\"9\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":[7.5,{\"y\":-3}]},"
                 "\"a\":{\"dtype\":\"F32\",\"shape\":%s,\"data_offsets\":%s}}", bad[i].shape,
                 bad[i].off);
        /* a's number is refused before its offsets are checked against z's */
        expect_bad(json, 4, 0, bad[i].want);
    }
    /* exact: 2^53 + 1 stays 2^53 + 1 (a tensor of no elements), beside numbers elsewhere */
    const char *ok = "{\"__metadata__\":{\"n\":\"1.5e3 \\\" -2\"},"
                     "\"e\":{\"dtype\":\"F32\",\"shape\":[9007199254740993,0],\"data_offsets\":[0,0],"
                     "\"x\":[7.5,-3]},"
                     "\"w\":{\"dtype\":\"F32\",\"shape\":[9223372036854775807,0],\"data_offsets\":[0,0]},"
                     "\"v\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    uint64_t size;
    uint8_t *b = st_image(ok, 8, 0, &size);
    fp4_st_header h;
    assert_int_equal(fp4_st_parse("m.safetensors", b, size, &h), FP4_OK);
    assert_int_equal(h.n, 3);
    for (int i = 0; i < 3; i++) {
        if (strcmp(h.t[i].name, "e") == 0) assert_true(h.t[i].dims[0] == 9007199254740993LL);
        if (strcmp(h.t[i].name, "w") == 0) assert_true(h.t[i].dims[0] == INT64_MAX);
        if (strcmp(h.t[i].name, "v") == 0) assert_true(h.t[i].dims[0] == 2 && h.t[i].end == 8);
    }
    fp4_st_header_free(&h);
    free(b);
}

/* The NUL byte in the raw header (not escaped): refused, not a silently shortened name. */
static void test_raw_nul(void **state)
{
    (void)state;
    char json[] = "{\"aXb\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    uint64_t size;
    uint8_t *b = st_image(json, 4, 0, &size);
    b[8 + 3] = 0;
    fp4_st_header h;
    assert_int_equal(fp4_st_parse("m", b, size, &h), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "NUL"));
    free(b);
}

static void test_rank_beyond_max(void **state)
{
    (void)state;
    const char *json = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],"
                       "\"data_offsets\":[0,4]}}";
    uint64_t size;
    uint8_t *b = st_image(json, 4, 0, &size);
    fp4_st_header h;
    assert_int_equal(fp4_st_parse("m", b, size, &h), FP4_OK);
    assert_int_equal(h.t[0].rank, 9);
    assert_non_null(strstr(h.t[0].problem, "rank 9"));
    fp4_st_header_free(&h);
    free(b);
}

static void test_dtype_table(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int bits;
        bool readable;
    } want[] = {{"F32", 32, true},     {"F16", 16, true},      {"BF16", 16, true},
                {"F64", 64, true},     {"F8_E4M3", 8, true},   {"F8_E5M2", 8, true},
                {"I8", 8, true},       {"U8", 8, true},        {"I16", 16, true},
                {"U16", 16, true},     {"I32", 32, true},      {"U32", 32, true},
                {"I64", 64, true},     {"U64", 64, true},      {"BOOL", 8, false},
                {"F8_E8M0", 8, false}, {"F4", 4, false},       {"F6_E2M3", 6, false},
                {"F6_E3M2", 6, false}, {"C64", 64, false},     {"f32", 0, false}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        fp4_st_dtype t = fp4_st_dtype_from_name(want[i].name);
        assert_int_equal(fp4_st_dtype_bits(t), want[i].bits);
        assert_int_equal(fp4_st_dtype_readable(t), want[i].readable);
    }
}

static void test_index(void **state)
{
    (void)state;
    const char *j = "{\"metadata\":{\"total_size\":123},\"weight_map\":{"
                    "\"b\":\"model-00002-of-00002.safetensors\","
                    "\"a\":\"model-00001-of-00002.safetensors\","
                    "\"c\":\"model-00002-of-00002.safetensors\"}}\n";
    fp4_st_index ix;
    assert_int_equal(fp4_st_index_parse("i.json", j, strlen(j), &ix), FP4_OK);
    assert_int_equal(ix.n, 3);
    assert_int_equal(ix.nshards, 2);
    assert_string_equal(ix.names[0], "b");
    assert_string_equal(ix.names[1], "a");
    assert_string_equal(ix.shards[ix.shard[0]], "model-00002-of-00002.safetensors");
    assert_string_equal(ix.shards[ix.shard[1]], "model-00001-of-00002.safetensors");
    assert_int_equal(ix.shard[2], ix.shard[0]);
    fp4_st_index_free(&ix);
    static const struct {
        const char *json, *want;
    } bad[] = {
        {"{\"metadata\":{}}", "no \"weight_map\""},
        {"{\"weight_map\":{\"a\":\"x\",\"a\":\"y\"}}", "tensor a appears twice"},
        {"{\"weight_map\":{\"a\":\"../x.safetensors\"}}", "not a file beside the index"},
        {"{\"weight_map\":{\"a\":\"/etc/x\"}}", "not a file beside the index"},
        {"{\"weight_map\":{\"a\":\"\"}}", "not a file beside the index"},
        {"{\"weight_map\":{\"a\":3}}", "shard is not a string"},
        {"{\"weight_map\":{\"a\":\"x\\u0000y\"}}", "NUL"},
        {"[]", "not a JSON object"},
        {"{\"weight_map\":", "not valid JSON"},
        /* a key twice anywhere (issue 26): first and last readings would differ */
        {"{\"weight_map\":{\"a\":\"x\"},\"weight_map\":{\"b\":\"y\"}}",
         "index: key weight_map appears twice"},
        {"{\"metadata\":{\"total_size\":1,\"total_size\":2},\"weight_map\":{\"a\":\"x\"}}",
         "index: metadata: key total_size appears twice"},
        {"{\"metadata\":{\"m\":[{\"k\":1,\"k\":2}]},\"weight_map\":{\"a\":\"x\"}}",
         "index: m: key k appears twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fp4_error_clear();
        fp4_status st = fp4_st_index_parse("i.json", bad[i].json, strlen(bad[i].json), &ix);
        if (st != FP4_ERR_INPUT || !strstr(fp4_last_error(), bad[i].want))
            fail_msg("index %s: status %d, '%s', wanted '%s'", bad[i].json, st,
                     fp4_last_error(), bad[i].want);
    }
}

static void test_utf8(void **state)
{
    (void)state;
    assert_true(fp4_utf8_valid((const uint8_t *)"ok \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14));
    assert_false(fp4_utf8_valid((const uint8_t *)"\xed\xa0\x80", 3));     /* surrogate */
    assert_false(fp4_utf8_valid((const uint8_t *)"\xe0\x80\xaf", 3));     /* overlong */
    assert_false(fp4_utf8_valid((const uint8_t *)"\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
    assert_false(fp4_utf8_valid((const uint8_t *)"\xc3", 1));             /* truncated */
    assert_false(fp4_utf8_valid((const uint8_t *)"\x80", 1));
}

/* F8 widening: every code against an independent construction (value = (-1)^s 2^(e-bias)
 * (1 + m/2^M), subnormals m 2^(1-bias-M)), and the known anchors. */
static double f8_ref(uint8_t b, int ebits, int mbits, int bias)
{
    int s = b >> 7, e = (b >> mbits) & ((1 << ebits) - 1), m = b & ((1 << mbits) - 1);
    double v = e == 0 ? ldexp((double)m, 1 - bias - mbits)
                      : ldexp(1.0 + (double)m / (1 << mbits), e - bias);
    return s ? -v : v;
}

static void test_f8_widen(void **state)
{
    (void)state;
    for (int b = 0; b < 256; b++) {
        float a = fp4_f8e4m3_to_f32((uint8_t)b);
        if ((b & 0x7F) == 0x7F) {
            assert_true(isnan(a));
        } else {
            assert_true((double)a == f8_ref((uint8_t)b, 4, 3, 7));
            assert_true(a == fp4c_e4m3_decode((uint8_t)b));
            assert_int_equal(signbit(a) != 0, (b & 0x80) != 0);
        }
        float c = fp4_f8e5m2_to_f32((uint8_t)b);
        int e = (b >> 2) & 31;
        if (e == 31) {
            if (b & 3) assert_true(isnan(c));
            else assert_true(isinf(c) && (c < 0) == ((b & 0x80) != 0));
        } else {
            assert_true((double)c == f8_ref((uint8_t)b, 5, 2, 15));
            assert_int_equal(signbit(c) != 0, (b & 0x80) != 0);
        }
    }
    assert_true(fp4_f8e4m3_to_f32(0x7E) == 448.0f);
    assert_true(fp4_f8e4m3_to_f32(0x01) == 0x1p-9f);
    assert_true(fp4_f8e4m3_to_f32(0x38) == 1.0f);
    assert_true(fp4_f8e5m2_to_f32(0x7B) == 57344.0f);
    assert_true(fp4_f8e5m2_to_f32(0x01) == 0x1p-16f);
    assert_true(fp4_f8e5m2_to_f32(0x3C) == 1.0f);
    uint8_t src[3] = {0x38, 0xB8, 0x00};
    float dst[3];
    fp4_widen_f8e4m3(src, 3, dst);
    assert_true(dst[0] == 1.0f && dst[1] == -1.0f && dst[2] == 0.0f);
    fp4_widen_f8e5m2(src, 3, dst);
    assert_true(dst[0] == 0.5f && dst[1] == -0.5f && dst[2] == 0.0f);
}

/* Every f16 code against (-1)^s 2^(e-15) (1 + m/1024), subnormals m 2^-24; bf16 as the top half
 * of an fp32; both byte orders; integers as values; unaligned sources. */
static void test_rawconv_words(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        uint8_t le[3] = {0, (uint8_t)h, (uint8_t)(h >> 8)}, be[2] = {(uint8_t)(h >> 8), (uint8_t)h};
        float a, b;
        fp4_raw_to_f32(FP4_RAW_F16, false, le + 1, 2, 1, &a); /* odd address */
        fp4_raw_to_f32(FP4_RAW_F16, true, be, 2, 1, &b);
        int e = (h >> 10) & 31, m = h & 1023;
        if (e == 31) {
            assert_true(m ? isnan(a) : isinf(a));
        } else {
            double want = e ? ldexp(1.0 + m / 1024.0, e - 15) : ldexp((double)m, -24);
            if (h & 0x8000) want = -want;
            assert_true((double)a == want);
            assert_int_equal(signbit(a) != 0, (h & 0x8000) != 0);
        }
        assert_memory_equal(&a, &b, sizeof a);
        uint32_t u = h << 16;
        float c, want;
        memcpy(&want, &u, sizeof want);
        fp4_raw_to_f32(FP4_RAW_BF16, false, le + 1, 2, 1, &c);
        assert_memory_equal(&c, &want, sizeof c);
    }
    const uint8_t i16be[4] = {0xFF, 0xFE, 0x01, 0x00}; /* -2, 256 */
    float v[2];
    fp4_raw_to_f32(FP4_RAW_I16, true, i16be, 2, 2, v);
    assert_true(v[0] == -2.0f && v[1] == 256.0f);
    fp4_raw_to_f32(FP4_RAW_U16, true, i16be, 2, 2, v);
    assert_true(v[0] == 65534.0f && v[1] == 256.0f);
    const uint8_t u64[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    fp4_raw_to_f32(FP4_RAW_U64, false, u64, 8, 1, v);
    assert_true(v[0] == 18446744073709551616.0f);
    fp4_raw_to_f32(FP4_RAW_I64, false, u64, 8, 1, v);
    assert_true(v[0] == -1.0f);
    double d = 0.1;
    uint8_t db[8];
    memcpy(db, &d, 8);
    fp4_raw_to_f32(FP4_RAW_F64, false, db, 8, 1, v);
    assert_true(v[0] == 0.1f);
    assert_true(fp4_raw_exact(FP4_RAW_BF16) && !fp4_raw_exact(FP4_RAW_F64) &&
                !fp4_raw_exact(FP4_RAW_I32) && fp4_raw_exact(FP4_RAW_I16));
}

/* A 2x3x4 tensor: slabs along each dimension equal the row-major sub-array, whether stored in C
 * order or in Fortran order (numpy's fortran_order: column-major), as values and as words. */
static void test_rawconv_slabs(void **state)
{
    (void)state;
    const int64_t dims[3] = {2, 3, 4};
    float c[24], f[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                float v = (float)(100 * i + 10 * j + k);
                c[(i * 3 + j) * 4 + k] = v;
                f[i + 2 * (j + 3 * k)] = v;
            }
    for (int dim = 0; dim < 3; dim++)
        for (int64_t start = 0; start < dims[dim]; start++)
            for (int64_t count = 1; start + count <= dims[dim]; count++) {
                float want[24], got[24];
                int n = 0;
                for (int i = 0; i < 2; i++)
                    for (int j = 0; j < 3; j++)
                        for (int k = 0; k < 4; k++) {
                            int idx[3] = {i, j, k};
                            if (idx[dim] >= start && idx[dim] < start + count)
                                want[n++] = c[(i * 3 + j) * 4 + k];
                        }
                for (int fo = 0; fo < 2; fo++)
                    for (int raw = 0; raw < 2; raw++) {
                        memset(got, 0xFF, sizeof got);
                        fp4_raw_slab((const uint8_t *)(fo ? f : c), FP4_RAW_F32, false, 3, dims,
                                     fo, dim, start, count, raw, got);
                        assert_memory_equal(got, want, (size_t)n * sizeof *got);
                    }
            }
    /* big-endian words come back in host order */
    const uint8_t be[4] = {0x3F, 0x80, 0x00, 0x00};
    uint8_t w[4];
    const int64_t one = 1;
    fp4_raw_slab(be, FP4_RAW_F32, true, 1, &one, false, 0, 0, 1, true, w);
    float x;
    memcpy(&x, w, 4);
    assert_true(x == 1.0f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_header),    cmocka_unit_test(test_empty_and_tiny),
        cmocka_unit_test(test_header_cut), cmocka_unit_test(test_truncated_data),
        cmocka_unit_test(test_header_numbers),
        cmocka_unit_test(test_hostile_headers), cmocka_unit_test(test_raw_nul),
        cmocka_unit_test(test_rank_beyond_max), cmocka_unit_test(test_dtype_table),
        cmocka_unit_test(test_index),          cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_f8_widen),       cmocka_unit_test(test_rawconv_words),
        cmocka_unit_test(test_rawconv_slabs),
    };
    return cmocka_run_group_tests_name("st_parse", tests, NULL, NULL);
}
