/* test_fingerprint.c — io/fingerprint: the hash of a partial report's input files. Known
 * answers: a small file's print is XXH3-64 of its size (8 bytes, little-endian) and all of its
 * bytes, a large one's the same over the documented sample (head, 32 evenly spaced pieces,
 * tail), both computed here independently with the one-shot XXH3; one changed byte inside the
 * sample changes it, one outside does not (the documented limit); a directory input lists its
 * regular files sorted by path, a FIFO among them left out without waiting, an entry symlinked
 * outside the directory's tree never read (unless --allow-external). */
#include "testutil.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "io/fingerprint.h"
#include "io/source.h"

static void write_file(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static unsigned char *pattern(size_t n, uint32_t seed)
{
    unsigned char *b = malloc(n);
    assert_non_null(b);
    uint32_t x = seed;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        b[i] = (unsigned char)(x >> 24);
    }
    return b;
}

/* The documented print, from the bytes in memory: size LE, then the sample. */
static uint64_t expected(const unsigned char *b, size_t n, int64_t *hashed)
{
    size_t cap = 8 + (n <= FP4_PRINT_WHOLE ? n
                                           : 2 * (size_t)FP4_PRINT_END +
                                                 (size_t)FP4_PRINT_PIECES * FP4_PRINT_PIECE);
    unsigned char *s = malloc(cap);
    assert_non_null(s);
    for (int i = 0; i < 8; i++) s[i] = (unsigned char)((uint64_t)n >> (8 * i));
    size_t k = 8;
    if (n <= FP4_PRINT_WHOLE) {
        memcpy(s + k, b, n), k += n;
    } else {
        memcpy(s + k, b, FP4_PRINT_END), k += FP4_PRINT_END;
        size_t span = n - 2 * (size_t)FP4_PRINT_END - FP4_PRINT_PIECE;
        for (int p = 0; p < FP4_PRINT_PIECES; p++) {
            size_t off = FP4_PRINT_END + span / (FP4_PRINT_PIECES - 1) * (size_t)p;
            memcpy(s + k, b + off, FP4_PRINT_PIECE), k += FP4_PRINT_PIECE;
        }
        memcpy(s + k, b + n - FP4_PRINT_END, FP4_PRINT_END), k += FP4_PRINT_END;
    }
    assert_int_equal(k, cap);
    *hashed = (int64_t)(k - 8);
    uint64_t h = XXH3_64bits(s, k);
    free(s);
    return h;
}

static void check_file(const char *dir, size_t n, uint32_t seed)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/f%zu.bin", dir, n);
    unsigned char *b = pattern(n, seed);
    write_file(path, b, n);
    fp4_file_print p;
    assert_int_equal(fp4_fingerprint_file(path, &p), FP4_OK);
    int64_t hashed = 0;
    uint64_t want = expected(b, n, &hashed);
    assert_int_equal(p.size, (int64_t)n);
    assert_int_equal(p.hashed, hashed);
    assert_int_equal(fp4_fingerprint_hashed((int64_t)n), hashed);
    assert_true(p.xxh3 == want);
    assert_string_equal(p.path, path);
    free(p.path);
    free(b);
}

static void test_known_answers(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    const size_t sizes[] = {0, 1, 4095, (size_t)FP4_PRINT_WHOLE, (size_t)FP4_PRINT_WHOLE + 1,
                            (size_t)FP4_PRINT_WHOLE + 4097, 9u << 20, (40u << 20) + 12345};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) check_file(dir, sizes[i], 7 + (uint32_t)i);
    /* the empty file: XXH3 of eight zero bytes */
    unsigned char z[8] = {0};
    fp4_file_print p;
    char path[4200];
    snprintf(path, sizeof path, "%s/f0.bin", dir);
    assert_int_equal(fp4_fingerprint_file(path, &p), FP4_OK);
    assert_true(p.xxh3 == XXH3_64bits(z, 8));
    char hex[17];
    fp4_fingerprint_hex(0x0123456789abcdefull, hex);
    assert_string_equal(hex, "0123456789abcdef");
    free(p.path);
    fp4t_rmtree(dir);
}

/* One byte changed inside the sample changes the print; one outside it does not; the same
 * contents at another path print the same. */
static void test_changes(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    const size_t n = 24u << 20;
    unsigned char *b = pattern(n, 99);
    char a[4200], c[4200];
    snprintf(a, sizeof a, "%s/a.bin", dir);
    snprintf(c, sizeof c, "%s/c.bin", dir);
    write_file(a, b, n);
    write_file(c, b, n);
    fp4_file_print pa, pc;
    assert_int_equal(fp4_fingerprint_file(a, &pa), FP4_OK);
    assert_int_equal(fp4_fingerprint_file(c, &pc), FP4_OK);
    assert_true(pa.xxh3 == pc.xxh3);
    free(pc.path);
    const size_t in_head = 100, in_tail = n - 5, outside = FP4_PRINT_END + FP4_PRINT_PIECE + 17;
    const size_t at[3] = {in_head, in_tail, outside};
    const int seen[3] = {1, 1, 0};
    for (int k = 0; k < 3; k++) {
        b[at[k]] ^= 0x40;
        write_file(c, b, n);
        assert_int_equal(fp4_fingerprint_file(c, &pc), FP4_OK);
        assert_int_equal(pc.xxh3 != pa.xxh3, seen[k]);
        free(pc.path);
        b[at[k]] ^= 0x40;
    }
    /* a byte more: the size differs, so does the print */
    write_file(c, b, n - 1);
    assert_int_equal(fp4_fingerprint_file(c, &pc), FP4_OK);
    assert_true(pc.xxh3 != pa.xxh3);
    free(pc.path);
    free(pa.path);
    free(b);
    /* not a regular file: refused, not waited on */
    char fifo[4200];
    snprintf(fifo, sizeof fifo, "%s/pipe", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(fp4_fingerprint_file(fifo, &pc), FP4_ERR_INPUT);
    assert_int_equal(fp4_fingerprint_file(dir, &pc), FP4_ERR_INPUT);
    fp4t_rmtree(dir);
}

/* A directory input (a safetensors checkpoint's folder): its regular entries, sorted by path;
 * the FIFO beside them left out at once; an input given twice listed once. */
static void test_directory(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    const char hdr[] = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}";
    unsigned char st[8 + sizeof hdr - 1 + 16];
    uint64_t hl = sizeof hdr - 1;
    for (int i = 0; i < 8; i++) st[i] = (unsigned char)(hl >> (8 * i));
    memcpy(st + 8, hdr, hl);
    memset(st + 8 + hl, 0, 16);
    char path[4200];
    const char *names[] = {"b.safetensors", "a.safetensors", "notes.txt"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        write_file(path, i < 2 ? st : (const unsigned char *)"hello", i < 2 ? sizeof st : 5);
    }
    snprintf(path, sizeof path, "%s/c.safetensors", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    fp4_file_print *p = NULL;
    int n = 0;
    const char *inputs[2] = {dir, dir};
    assert_int_equal(fp4_fingerprint_inputs(inputs, 2, &p, &n), FP4_OK);
    assert_int_equal(n, 3);
    const char *want[] = {"a.safetensors", "b.safetensors", "notes.txt"};
    for (int i = 0; i < 3; i++) {
        const char *slash = strrchr(p[i].path, '/');
        assert_non_null(slash);
        assert_string_equal(slash + 1, want[i]);
    }
    assert_true(p[0].xxh3 == p[1].xxh3); /* the same contents */
    assert_int_equal(p[2].size, 5);
    fp4_fingerprint_free(p, n);
    fp4t_rmtree(dir);
}

/* A directory entry that is a symlink out of the input's tree is not read for the print (its
 * size and hash would publish a file the run never reads); one inside the tree is; with
 * --allow-external both are. */
static void test_outside_tree(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir(), *ext = fp4t_tmpdir();
    const char hdr[] = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}";
    unsigned char st[8 + sizeof hdr - 1 + 16];
    uint64_t hl = sizeof hdr - 1;
    for (int i = 0; i < 8; i++) st[i] = (unsigned char)(hl >> (8 * i));
    memcpy(st + 8, hdr, hl);
    memset(st + 8 + hl, 0, 16);
    char path[4200], target[4200];
    snprintf(path, sizeof path, "%s/a.safetensors", dir);
    write_file(path, st, sizeof st);
    snprintf(target, sizeof target, "%s/secret.txt", ext);
    write_file(target, (const unsigned char *)"secret", 6);
    snprintf(path, sizeof path, "%s/b_out.txt", dir);
    assert_int_equal(symlink(target, path), 0);
    snprintf(target, sizeof target, "%s/a.safetensors", dir);
    snprintf(path, sizeof path, "%s/c_in.txt", dir);
    assert_int_equal(symlink(target, path), 0);
    for (int allow = 0; allow < 2; allow++) {
        fp4_source_set_allow_external(allow);
        fp4_file_print *p = NULL;
        int n = 0;
        const char *inputs[1] = {dir};
        assert_int_equal(fp4_fingerprint_inputs(inputs, 1, &p, &n), FP4_OK);
        assert_int_equal(n, allow ? 3 : 2);
        assert_non_null(strstr(p[0].path, "a.safetensors"));
        assert_non_null(strstr(p[n - 1].path, "c_in.txt"));
        if (allow) {
            assert_non_null(strstr(p[1].path, "b_out.txt"));
            assert_int_equal(p[1].size, 6);
        }
        fp4_fingerprint_free(p, n);
    }
    fp4_source_set_allow_external(false);
    fp4t_rmtree(dir);
    fp4t_rmtree(ext);
}

/* A --shard run's check once it has read: the same files with the same prints pass; one
 * changed, gone or new is refused, named. */
static void test_recheck(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    const char hdr[] = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}";
    unsigned char st[8 + sizeof hdr - 1 + 16];
    uint64_t hl = sizeof hdr - 1;
    for (int i = 0; i < 8; i++) st[i] = (unsigned char)(hl >> (8 * i));
    memcpy(st + 8, hdr, hl);
    memset(st + 8 + hl, 0, 16);
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/a.safetensors", dir);
    snprintf(b, sizeof b, "%s/b.safetensors", dir);
    write_file(a, st, sizeof st);
    write_file(b, st, sizeof st);
    fp4_file_print *p = NULL;
    int n = 0;
    const char *inputs[1] = {dir};
    assert_int_equal(fp4_fingerprint_inputs(inputs, 1, &p, &n), FP4_OK);
    assert_int_equal(n, 2);
    assert_int_equal(fp4_fingerprint_recheck(inputs, 1, p, n), FP4_OK);
    st[sizeof st - 1] = 1; /* one value of b changes */
    write_file(b, st, sizeof st);
    assert_int_equal(fp4_fingerprint_recheck(inputs, 1, p, n), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "b.safetensors: changed while it was read"));
    st[sizeof st - 1] = 0;
    write_file(b, st, sizeof st);
    assert_int_equal(fp4_fingerprint_recheck(inputs, 1, p, n), FP4_OK);
    assert_int_equal(unlink(a), 0);
    assert_int_equal(fp4_fingerprint_recheck(inputs, 1, p, n), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "a.safetensors: gone"));
    write_file(a, st, sizeof st);
    snprintf(b, sizeof b, "%s/c.safetensors", dir);
    write_file(b, st, sizeof st);
    assert_int_equal(fp4_fingerprint_recheck(inputs, 1, p, n), FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "c.safetensors: appeared"));
    fp4_error_clear();
    fp4_fingerprint_free(p, n);
    fp4t_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_changes),
        cmocka_unit_test(test_directory),
        cmocka_unit_test(test_outside_tree),
        cmocka_unit_test(test_recheck),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
