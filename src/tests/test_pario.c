/* test_pario.c — io/pario: reads in pieces on several threads give the bytes and the bits of
 * the one-thread path: pread of contiguous and strided runs (swapped words too), the first
 * failing piece named on a short file, and the widening in rounds for every stored width
 * (lengths that end mid-piece and mid-round). */
#include "testutil.h"

#include <fcntl.h>
#include <unistd.h>

#include "io/pario.h"
#include "io/widen.h"

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint32_t next32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static void test_threads(void **state)
{
    (void)state;
    setenv("FP4DIAG_READ_THREADS", "3", 1);
    fp4_pario_set_threads(1);
    assert_int_equal(fp4_pario_threads(FP4_PARIO_MIN - 1), 1);
    assert_int_equal(fp4_pario_threads(FP4_PARIO_MIN), 3);
    assert_int_equal(fp4_pario_threads((int64_t)1 << 40), 3);
    unsetenv("FP4DIAG_READ_THREADS");
    fp4_pario_set_threads(1);
    assert_int_equal(fp4_pario_threads((int64_t)1 << 40), 1);
    /* unset: min(--threads, CPUs, 16), and never more than the read's 512 KiB pieces */
    const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    const int cap = ncpu < 16 ? (int)ncpu : 16;
    fp4_pario_set_threads(64);
    assert_int_equal(fp4_pario_threads((int64_t)1 << 40), cap);
    assert_int_equal(fp4_pario_threads(FP4_PARIO_MIN), cap < 4 ? cap : 4);
    fp4_pario_set_threads(2);
    assert_int_equal(fp4_pario_threads((int64_t)1 << 40), cap < 2 ? cap : 2);
    fp4_pario_set_threads(1);
}

static void test_pread(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/f.bin", dir);
    const int64_t size = (int64_t)9 << 20; /* 9 MiB: pieces of 512 KiB, a tail */
    unsigned char *data = malloc((size_t)size);
    assert_non_null(data);
    for (int64_t i = 0; i < size; i++) data[i] = (unsigned char)next32();
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, (size_t)size), size);
    setenv("FP4DIAG_READ_THREADS", "4", 1);
    fp4_pario_set_threads(4);
    unsetenv("FP4DIAG_READ_THREADS");
    unsigned char *out = malloc((size_t)size);
    assert_non_null(out);
    /* one run from an odd offset */
    memset(out, 0, (size_t)size);
    assert_int_equal(fp4_pario_pread(fd, "f", "/x", out, 0, 3, 0, 1, size - 7, 0), FP4_OK);
    assert_memory_equal(out, data + 3, (size_t)(size - 7));
    /* strided runs (rows of a slab along dim 1), words of 4 bytes swapped */
    const int64_t nruns = 37, len = 200000, step = 240000;
    memset(out, 0, (size_t)size);
    assert_int_equal(fp4_pario_pread(fd, "f", "/x", out, len, 16, step, nruns, len, 4), FP4_OK);
    int64_t wrong = 0;
    for (int64_t r = 0; r < nruns; r++)
        for (int64_t i = 0; i < len; i++)
            wrong += out[r * len + i] != data[16 + r * step + (i / 4) * 4 + 3 - i % 4];
    assert_int_equal(wrong, 0);
    /* past the end: the first failing piece in file order is named */
    fp4_status st = fp4_pario_pread(fd, "f", "/x", out, 0, size - (int64_t)(3 << 20), 0, 1,
                                    (int64_t)4 << 20, 0);
    assert_int_equal(st, FP4_ERR_INPUT);
    assert_non_null(strstr(fp4_last_error(), "f: /x: read failed at byte 9437184"));
    fp4_error_clear();
    fp4_pario_set_threads(1);
    close(fd);
    free(out);
    free(data);
    fp4t_rmtree(dir);
}

/* widen n values of s in place, one thread and four, same bits */
static void check_widen(fp4_stored s, size_t n)
{
    const size_t w = (size_t)fp4_stored_size(s);
    float *a = malloc(n * 4), *b = malloc(n * 4);
    assert_non_null(a);
    assert_non_null(b);
    unsigned char *words = (unsigned char *)a + n * (4 - w);
    for (size_t i = 0; i < n * w; i++) words[i] = (unsigned char)next32();
    memcpy(b, a, n * 4);
    fp4_pario_set_threads(1);
    assert_true(fp4_pario_widen_inplace(s, a, n));
    setenv("FP4DIAG_READ_THREADS", "4", 1);
    fp4_pario_set_threads(4);
    unsetenv("FP4DIAG_READ_THREADS");
    assert_true(fp4_pario_widen_inplace(s, b, n));
    fp4_pario_set_threads(1);
    assert_memory_equal(a, b, n * 4);
    free(a);
    free(b);
}

static void test_widen(void **state)
{
    (void)state;
    const fp4_stored kinds[] = {FP4_STORED_F16, FP4_STORED_BF16, FP4_STORED_F32, FP4_STORED_I8,
                                FP4_STORED_U8,  FP4_STORED_I16,  FP4_STORED_U16, FP4_STORED_I32,
                                FP4_STORED_U32};
    const size_t ns[] = {5, (size_t)1 << 19, ((size_t)1 << 21) + 12345, (size_t)3 << 20};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++) check_widen(kinds[k], ns[j]);
    float x = 0;
    assert_false(fp4_pario_widen_inplace(FP4_STORED_F64, &x, 1));
    assert_false(fp4_pario_widen_inplace(FP4_STORED_OTHER, &x, 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_pread),
        cmocka_unit_test(test_widen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
