/* test_mapguard.c — io/mapguard: a read of a mapped file that shrank meanwhile ends the guarded
 * call (false) instead of the process (SIGBUS), on the calling thread and on the read pool's
 * threads (fp4_raw_slab_mapped over pieces), while reads inside the file still return the
 * bytes; calls nest; a guard that faulted leaves the next call working. */
#include "testutil.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io/mapguard.h"
#include "io/pario.h"
#include "io/rawconv.h"

typedef struct touch_args {
    const volatile uint8_t *p;
    size_t n;
    unsigned sum;
} touch_args;

static void touch(void *ctx)
{
    touch_args *a = ctx;
    for (size_t i = 0; i < a->n; i += 4096) a->sum += a->p[i];
}

static void nested(void *ctx)
{
    touch_args *a = ctx;
    touch_args in = *a;
    a->sum = fp4_mapguard_call(touch, &in) ? 1 : 2; /* the inner call takes the fault */
}

static void test_shrunk_mapping(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/m.bin", dir);
    const size_t n = (size_t)16 << 20; /* 16 MiB: reads in pieces on the pool */
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    float *v = malloc(n);
    assert_non_null(v);
    for (size_t i = 0; i < n / 4; i++) v[i] = (float)(i % 1000) - 500.0f;
    assert_int_equal(write(fd, v, n), (ssize_t)n);
    const uint8_t *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    assert_true(m != MAP_FAILED);
    float *out = malloc(n);
    assert_non_null(out);
    const int64_t dims[2] = {1024, (int64_t)(n / 4 / 1024)};
    setenv("FP4DIAG_READ_THREADS", "4", 1);
    fp4_pario_set_threads(4);
    /* whole: the bytes */
    assert_true(fp4_raw_slab_mapped(m, FP4_RAW_F32, false, 2, dims, false, 0, 0, 1024, true, out));
    assert_memory_equal(out, v, n);
    /* cut to a quarter: reads past it fail, reads before it still work */
    assert_int_equal(ftruncate(fd, (off_t)(n / 4)), 0);
    assert_false(fp4_raw_slab_mapped(m, FP4_RAW_F32, false, 2, dims, false, 0, 0, 1024, true, out));
    assert_false(fp4_raw_slab_mapped(m, FP4_RAW_F32, false, 2, dims, false, 0, 512, 16, false, out));
    assert_false(fp4_raw_slab_mapped(m, FP4_RAW_F32, false, 2, dims, false, 1, 0, 8, true, out));
    assert_true(fp4_raw_slab_mapped(m, FP4_RAW_F32, false, 2, dims, false, 0, 0, 128, true, out));
    assert_memory_equal(out, v, n / 8);
    fp4_pario_set_threads(1);
    assert_false(fp4_raw_slab_mapped(m, FP4_RAW_F32, false, 2, dims, false, 0, 0, 1024, true, out));
    touch_args a = {m, n / 4, 0};
    assert_true(fp4_mapguard_call(touch, &a));
    a.n = n;
    assert_false(fp4_mapguard_call(touch, &a));
    assert_true(fp4_mapguard_call(nested, &a));
    assert_int_equal(a.sum, 2);
    a.n = n / 4;
    assert_true(fp4_mapguard_call(touch, &a));
    unsetenv("FP4DIAG_READ_THREADS");
    munmap((void *)m, n);
    close(fd);
    free(v);
    free(out);
    fp4t_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_shrunk_mapping)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
