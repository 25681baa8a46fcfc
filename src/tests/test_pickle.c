/* test_pickle.c — the strict torch.save pickle reader (io/pickle.c): a state dict as
 * torch.save writes it (protocol 2, its exact opcodes) gives each tensor's name, storage,
 * offset, size and stride; every truncation of it is an error, never a crash; refused globals
 * are named; opcodes outside the set, REDUCE/BUILD misuse, memo misuse, bad views refused. */
#include "testutil.h"

#include "io/pickle.h"

/* A growing byte buffer for hand-built pickles. */
typedef struct {
    uint8_t b[4096];
    size_t n;
} pb;

static void put(pb *p, const void *s, size_t n)
{
    assert_true(p->n + n <= sizeof p->b);
    memcpy(p->b + p->n, s, n);
    p->n += n;
}
static void op(pb *p, uint8_t c) { put(p, &c, 1); }
static void str(pb *p, const char *s) /* BINUNICODE */
{
    uint32_t l = (uint32_t)strlen(s);
    uint8_t h[5] = {'X', (uint8_t)l, (uint8_t)(l >> 8), (uint8_t)(l >> 16), (uint8_t)(l >> 24)};
    put(p, h, 5);
    put(p, s, l);
}
static void int1(pb *p, int v)
{
    uint8_t h[2] = {'K', (uint8_t)v};
    put(p, h, 2);
}
static void glob(pb *p, const char *m, const char *n)
{
    op(p, 'c');
    put(p, m, strlen(m));
    op(p, '\n');
    put(p, n, strlen(n));
    op(p, '\n');
}

/* _rebuild_tensor_v2((storage TYPE, KEY, numel), off, size, stride, False, OrderedDict()) */
static void tensor(pb *p, const char *type, const char *key, int numel, int off, int rank,
                   const int *size, const int *stride)
{
    glob(p, "torch._utils", "_rebuild_tensor_v2");
    op(p, '(');
    op(p, '(');
    str(p, "storage");
    glob(p, "torch", type);
    str(p, key);
    str(p, "cpu");
    int1(p, numel);
    op(p, 't');
    op(p, 'Q');
    int1(p, off);
    op(p, '(');
    for (int i = 0; i < rank; i++) int1(p, size[i]);
    op(p, 't');
    op(p, '(');
    for (int i = 0; i < rank; i++) int1(p, stride[i]);
    op(p, 't');
    op(p, 0x89);
    glob(p, "collections", "OrderedDict");
    op(p, ')');
    op(p, 'R');
    op(p, 't');
    op(p, 'R');
}

/* {"a.w": 2x3 FloatStorage '0' at 0, "b": 3 of the same storage at offset 3, "n": 5,
 *  "sub": {"t": HalfStorage '1' (4,)}} with _metadata set by BUILD */
static void state_dict(pb *p)
{
    p->n = 0;
    op(p, 0x80);
    op(p, 2);
    glob(p, "collections", "OrderedDict");
    uint8_t put0[2] = {'q', 0};
    put(p, put0, 2);
    op(p, ')');
    op(p, 'R');
    op(p, '(');
    str(p, "a.w");
    tensor(p, "FloatStorage", "0", 6, 0, 2, (int[]){2, 3}, (int[]){3, 1});
    str(p, "b");
    tensor(p, "FloatStorage", "0", 6, 3, 1, (int[]){3}, (int[]){1});
    str(p, "n");
    int1(p, 5);
    str(p, "sub");
    op(p, '}');
    str(p, "t");
    tensor(p, "HalfStorage", "1", 4, 0, 1, (int[]){4}, (int[]){1});
    op(p, 's');
    op(p, 'u');
    op(p, '}'); /* BUILD with {"_metadata": OrderedDict()} */
    str(p, "_metadata");
    uint8_t get0[2] = {'h', 0};
    put(p, get0, 2);
    op(p, ')');
    op(p, 'R');
    op(p, 's');
    op(p, 'b');
    op(p, '.');
}

static void test_state_dict(void **state)
{
    (void)state;
    pb p;
    state_dict(&p);
    fp4_pkl_tensor *t;
    int n;
    assert_int_equal(fp4_pickle_state_dict("x.pt", p.b, p.n, &t, &n), FP4_OK);
    assert_int_equal(n, 3);
    assert_string_equal(t[0].name, "a.w");
    assert_string_equal(t[0].storage_key, "0");
    assert_string_equal(t[0].storage_type, "FloatStorage");
    assert_string_equal(t[0].location, "cpu");
    assert_int_equal(t[0].storage_numel, 6);
    assert_int_equal(t[0].rank, 2);
    assert_int_equal(t[0].size[0], 2);
    assert_int_equal(t[0].size[1], 3);
    assert_int_equal(t[0].stride[0], 3);
    assert_int_equal(t[0].stride[1], 1);
    assert_int_equal(t[0].offset, 0);
    assert_string_equal(t[1].name, "b");
    assert_int_equal(t[1].offset, 3);
    assert_int_equal(t[1].rank, 1);
    assert_string_equal(t[2].name, "sub.t");
    assert_string_equal(t[2].storage_type, "HalfStorage");
    assert_string_equal(t[2].storage_key, "1");
    fp4_pkl_free(t, n);
}

/* Every prefix of the stream is an error (no STOP, or STOP missing its value), never a crash. */
static void test_truncated(void **state)
{
    (void)state;
    pb p;
    state_dict(&p);
    for (size_t k = 0; k < p.n; k++) {
        uint8_t *cut = malloc(k ? k : 1); /* exactly k bytes: ASan sees a read past */
        memcpy(cut, p.b, k);
        fp4_pkl_tensor *t = NULL;
        int n = -1;
        assert_int_equal(fp4_pickle_state_dict("x.pt", cut, k, &t, &n), FP4_ERR_INPUT);
        assert_null(t);
        free(cut);
    }
}

static void expect_bad(const pb *p, const char *want)
{
    fp4_pkl_tensor *t = NULL;
    int n = 0;
    assert_int_equal(fp4_pickle_state_dict("x.pt", p->b, p->n, &t, &n), FP4_ERR_INPUT);
    if (!strstr(fp4_last_error(), want)) fail_msg("'%s' lacks '%s'", fp4_last_error(), want);
    assert_non_null(strstr(fp4_last_error(), "x.pt: "));
    assert_null(t);
}

static void test_refused(void **state)
{
    (void)state;
    pb p = {.n = 0};
    op(&p, 0x80);
    op(&p, 2);
    glob(&p, "os", "system");
    str(&p, "touch /tmp/x");
    op(&p, 0x85);
    op(&p, 'R');
    op(&p, '.');
    expect_bad(&p, "pickle global os.system refused");
    /* a global on the stack via STACK_GLOBAL (protocol 4) */
    p.n = 0;
    op(&p, 0x80);
    op(&p, 4);
    str(&p, "builtins");
    str(&p, "eval");
    op(&p, 0x93);
    op(&p, '.');
    expect_bad(&p, "pickle global builtins.eval refused");
    /* torch names that are not storages or dtypes */
    p.n = 0;
    op(&p, 0x80);
    op(&p, 2);
    glob(&p, "torch", "load");
    op(&p, '.');
    expect_bad(&p, "pickle global torch.load refused");
    p.n = 0;
    op(&p, 0x80);
    op(&p, 2);
    glob(&p, "torch._utils", "_rebuild_from_type_v2");
    op(&p, '.');
    expect_bad(&p, "pickle global torch._utils._rebuild_from_type_v2 refused");
    /* opcodes outside the set */
    const uint8_t others[] = {'i', 'o', 0x81, 0x92, 'P', 'S', 'V', 'I', 'd', '0', '2', 'g', 0x82};
    for (size_t i = 0; i < sizeof others; i++) {
        p.n = 0;
        op(&p, 0x80);
        op(&p, 2);
        op(&p, others[i]);
        op(&p, '.');
        expect_bad(&p, "refused");
    }
    p.n = 0;
    op(&p, 0x80);
    op(&p, 2);
    op(&p, 0x81); /* NEWOBJ */
    expect_bad(&p, "opcode 0x81 (NEWOBJ) refused at byte 2");
    /* REDUCE of a storage class; OrderedDict with arguments; BUILD on a tensor-less list */
    p.n = 0;
    op(&p, 0x80);
    op(&p, 2);
    glob(&p, "torch", "FloatStorage");
    op(&p, ')');
    op(&p, 'R');
    op(&p, '.');
    expect_bad(&p, "REDUCE of a storage class or dtype refused");
    p.n = 0;
    op(&p, 0x80);
    op(&p, 2);
    glob(&p, "collections", "OrderedDict");
    int1(&p, 1);
    op(&p, 0x85);
    op(&p, 'R');
    op(&p, '.');
    expect_bad(&p, "OrderedDict with arguments refused");
    p.n = 0;
    op(&p, 0x80);
    op(&p, 2);
    op(&p, ']');
    op(&p, '}');
    op(&p, 'b');
    op(&p, '.');
    expect_bad(&p, "BUILD on something other than an OrderedDict refused");
    /* memo misuse, stack misuse, not a dict */
    p.n = 0;
    op(&p, 0x80);
    op(&p, 2);
    uint8_t get9[2] = {'h', 9};
    put(&p, get9, 2);
    op(&p, '.');
    expect_bad(&p, "memo get of an index never put");
    p.n = 0;
    op(&p, 0x80);
    op(&p, 2);
    op(&p, 's');
    op(&p, '.');
    expect_bad(&p, "SETITEM");
    p.n = 0;
    op(&p, 0x80);
    op(&p, 2);
    op(&p, ']');
    op(&p, '.');
    expect_bad(&p, "holds no dict of tensors");
    p.n = 0;
    op(&p, 0x80);
    op(&p, 2);
    op(&p, '}');
    op(&p, '}');
    op(&p, '.');
    expect_bad(&p, "STOP without exactly one value");
    p.n = 0;
    op(&p, 0x80);
    op(&p, 9);
    expect_bad(&p, "pickle protocol not 2 to 5");
}

/* Bad views and storage ids: rank mismatch, path-like keys refuse the file. */
static void test_bad_tensors(void **state)
{
    (void)state;
    pb p = {.n = 0};
    const char *want[] = {"size and stride differ in rank", "storage key with characters",
                          "storage key holding '..'"};
    for (int c = 0; c < 3; c++) {
        p.n = 0;
        op(&p, 0x80);
        op(&p, 2);
        op(&p, '}');
        str(&p, "w");
        if (c == 0) tensor(&p, "FloatStorage", "0", 6, 0, 2, (int[]){2, 3}, (int[]){3, 1});
        else if (c == 1) tensor(&p, "FloatStorage", "../x", 6, 0, 1, (int[]){6}, (int[]){1});
        else tensor(&p, "FloatStorage", "a..b", 6, 0, 1, (int[]){6}, (int[]){1});
        op(&p, 's');
        op(&p, '.');
        if (c == 0) { /* rewrite the stride tuple (3, 1) as (3,): drop its "K\x01" */
            uint8_t *s = NULL;
            for (size_t i = 0; i + 5 < p.n; i++)
                if (memcmp(p.b + i, "K\x03K\x01t", 5) == 0) s = p.b + i;
            assert_non_null(s);
            memmove(s + 2, s + 4, (size_t)(p.b + p.n - (s + 4)));
            p.n -= 2;
        }
        expect_bad(&p, want[c]);
    }
}

/* A negative offset or stride (torch.save writes neither) is that view's problem: the file's
 * other tensors are listed as usual. */
static void test_negative_view(void **state)
{
    (void)state;
    pb p = {.n = 0};
    op(&p, 0x80);
    op(&p, 2);
    op(&p, '}');
    op(&p, '(');
    str(&p, "off");
    tensor(&p, "FloatStorage", "0", 6, 0, 1, (int[]){6}, (int[]){1});
    str(&p, "good");
    tensor(&p, "FloatStorage", "0", 6, 0, 2, (int[]){2, 3}, (int[]){3, 1});
    str(&p, "stride");
    tensor(&p, "FloatStorage", "0", 6, 0, 2, (int[]){3, 2}, (int[]){1, 2});
    op(&p, 'u');
    op(&p, '.');
    /* off's offset K 0 (after BINPERSID) -> J -1; stride's (1, 2) -> (1, -2) */
    uint8_t *q = memchr(p.b, 'Q', p.n);
    assert_non_null(q);
    memmove(q + 6, q + 3, (size_t)(p.b + p.n - (q + 3)));
    p.n += 3;
    memcpy(q + 1, "J\xff\xff\xff\xff", 5);
    uint8_t *s = NULL;
    for (size_t i = 0; i + 5 <= p.n; i++)
        if (memcmp(p.b + i, "K\x01K\x02t", 5) == 0) s = p.b + i;
    assert_non_null(s);
    memmove(s + 7, s + 4, (size_t)(p.b + p.n - (s + 4)));
    p.n += 3;
    memcpy(s + 2, "J\xfe\xff\xff\xff", 5);
    fp4_pkl_tensor *t = NULL;
    int n = 0;
    assert_int_equal(fp4_pickle_state_dict("x.pt", p.b, p.n, &t, &n), FP4_OK);
    assert_int_equal(n, 3);
    for (int i = 0; i < n; i++) {
        if (!strcmp(t[i].name, "good")) {
            assert_string_equal(t[i].problem, "");
        } else if (!strcmp(t[i].name, "off")) {
            assert_string_equal(t[i].problem,
                                "a view at storage offset -1: a negative offset is not read");
        } else {
            assert_string_equal(t[i].name, "stride");
            assert_string_equal(t[i].problem,
                                "a view with strides (1, -2): a negative stride is not read");
        }
    }
    fp4_pkl_free(t, n);
}

/* Odd dict keys (issue 26): each key that cannot name a tensor is one entry with a problem
 * and no storage, the good tensors beside it listed as usual; a key set twice is listed twice
 * (the source refuses the name); nothing aborts the file. */
static void bin_str(pb *p, const void *s, uint32_t l) /* BINUNICODE of raw bytes */
{
    uint8_t h[5] = {'X', (uint8_t)l, (uint8_t)(l >> 8), (uint8_t)(l >> 16), (uint8_t)(l >> 24)};
    put(p, h, 5);
    put(p, s, l);
}

static void one_tensor(pb *p, const char *key)
{
    tensor(p, "FloatStorage", key, 4, 0, 1, (int[]){4}, (int[]){1});
}

static void test_odd_keys(void **state)
{
    (void)state;
    pb p = {.n = 0};
    op(&p, 0x80);
    op(&p, 2);
    op(&p, '}');
    op(&p, '(');
    str(&p, "good");          /* 0: fine */
    one_tensor(&p, "0");
    op(&p, 'G');              /* 1: a float key */
    put(&p, "\x3f\xf8\0\0\0\0\0\0", 8);
    one_tensor(&p, "1");
    op(&p, 'N');              /* 2: None */
    one_tensor(&p, "2");
    int1(&p, 7);              /* 3: a tuple key over a dict holding a tensor */
    op(&p, 0x85);
    op(&p, '}');
    str(&p, "in");
    one_tensor(&p, "3");
    op(&p, 's');
    bin_str(&p, "a\0b", 3);   /* 4: a NUL */
    one_tensor(&p, "4");
    str(&p, "esc\x1b[2J");    /* 5: a terminal escape */
    one_tensor(&p, "5");
    bin_str(&p, "c\xc2\x85", 3); /* 6: a C1 control (U+0085) */
    one_tensor(&p, "6");
    bin_str(&p, "s\xed\xa0\x80", 4); /* 7: a lone surrogate (not UTF-8) */
    one_tensor(&p, "7");
    str(&p, "");              /* 8: empty */
    one_tensor(&p, "8");
    str(&p, "good");          /* 9: set twice */
    one_tensor(&p, "9");
    op(&p, 0x88);             /* 10: a bool key over a number: nothing lost, nothing listed */
    int1(&p, 3);
    op(&p, 'N');              /* 11: None over a dict without tensors: nothing listed */
    op(&p, '}');
    op(&p, 'u');
    op(&p, '.');
    fp4_pkl_tensor *t = NULL;
    int n = 0;
    assert_int_equal(fp4_pickle_state_dict("x.pt", p.b, p.n, &t, &n), FP4_OK);
    const struct { const char *name, *problem; } want[] = {
        {"good", ""},
        {"[key 1: a float]", "its dict key is a float, not a tensor name"},
        {"[key 2: None]", "its dict key is None, not a tensor name"},
        {"[key 3: a tuple]", "its dict key is a tuple"},
        {"a\\x00b", "its dict key holds control characters (shown as \\xNN): not read"},
        {"esc\\x1B[2J", "control characters"},
        {"c\\xC2\\x85", "control characters"},
        {"s\\xED\\xA0\\x80", "bytes that are not valid UTF-8"},
        {"[key 8: empty]", "its dict key is an empty string"},
        {"good", ""},
    };
    assert_int_equal(n, 10);
    for (int i = 0; i < n; i++) {
        if (strcmp(t[i].name, want[i].name) != 0 || !strstr(t[i].problem, want[i].problem))
            fail_msg("entry %d: '%s' '%s', wanted '%s' '%s'", i, t[i].name, t[i].problem,
                     want[i].name, want[i].problem);
        if (i == 0 || i == 9) {
            assert_string_equal(t[i].storage_type, "FloatStorage");
        } else {
            assert_string_equal(t[i].storage_key, "");
            assert_string_equal(t[i].storage_type, "");
        }
    }
    fp4_pkl_free(t, n);

    /* dicts nested 40 deep: one entry for the part below 32, the tensor beside it kept */
    p.n = 0;
    op(&p, 0x80);
    op(&p, 2);
    op(&p, '}');
    str(&p, "top");
    one_tensor(&p, "0");
    op(&p, 's');
    str(&p, "d");
    for (int i = 0; i < 40; i++) {
        op(&p, '}');
        str(&p, "d");
    }
    one_tensor(&p, "1");
    for (int i = 0; i < 41; i++) op(&p, 's');
    op(&p, '.');
    assert_int_equal(fp4_pickle_state_dict("x.pt", p.b, p.n, &t, &n), FP4_OK);
    assert_int_equal(n, 2);
    assert_string_equal(t[0].name, "top");
    assert_string_equal(t[0].problem, "");
    assert_non_null(strstr(t[1].problem, "nested deeper than 32"));
    assert_int_equal(strlen(t[1].name), 33 * 2 - 1); /* "d.d. ... d": 33 keys */
    fp4_pkl_free(t, n);
}

/* One storage key named by persistent ids of two classes or two element counts: torch.load
 * builds the storage from the key's first id in the stream and reuses it, so a later id that
 * disagrees would give numbers no loader gives: that tensor has a problem naming the key, both
 * and the tensor read through the first id; the agreeing ones are read. */
static void test_key_two_ways(void **state)
{
    (void)state;
    pb p = {.n = 0};
    op(&p, 0x80);
    op(&p, 2);
    op(&p, '}');
    op(&p, '(');
    op(&p, 'N'); /* a key naming no tensor: its storage '5' (Half) comes first in the stream */
    tensor(&p, "HalfStorage", "5", 8, 0, 1, (int[]){8}, (int[]){1});
    str(&p, "a");
    tensor(&p, "FloatStorage", "0", 8, 0, 1, (int[]){8}, (int[]){1});
    str(&p, "b");
    tensor(&p, "HalfStorage", "0", 16, 0, 1, (int[]){16}, (int[]){1});
    str(&p, "c");
    tensor(&p, "FloatStorage", "0", 8, 4, 1, (int[]){4}, (int[]){1});
    str(&p, "d");
    tensor(&p, "FloatStorage", "0", 4, 0, 1, (int[]){4}, (int[]){1});
    str(&p, "x");
    tensor(&p, "FloatStorage", "5", 4, 0, 1, (int[]){4}, (int[]){1});
    op(&p, 'u');
    op(&p, '.');
    fp4_pkl_tensor *t = NULL;
    int n = 0;
    assert_int_equal(fp4_pickle_state_dict("x.pt", p.b, p.n, &t, &n), FP4_OK);
    assert_int_equal(n, 6);
    assert_string_equal(t[1].name, "a");
    assert_string_equal(t[1].problem, "");
    assert_string_equal(t[2].name, "b");
    assert_string_equal(t[2].problem, "storage key 0: torch.HalfStorage of 16 elements here, "
                                      "torch.FloatStorage of 8 for a (torch.load uses the "
                                      "first): not read");
    assert_string_equal(t[3].problem, "");
    assert_non_null(strstr(t[4].problem, "torch.FloatStorage of 4 elements here, "
                                         "torch.FloatStorage of 8 for a"));
    assert_string_equal(t[5].name, "x");
    assert_non_null(strstr(t[5].problem, "storage key 5: torch.FloatStorage of 4 elements "
                                         "here, torch.HalfStorage of 8 in its first persistent "
                                         "id (torch.load"));
    fp4_pkl_free(t, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_dict), cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_refused), cmocka_unit_test(test_bad_tensors),
        cmocka_unit_test(test_negative_view),
        cmocka_unit_test(test_odd_keys), cmocka_unit_test(test_key_two_ways),
    };
    return cmocka_run_group_tests_name("pickle", tests, NULL, NULL);
}
