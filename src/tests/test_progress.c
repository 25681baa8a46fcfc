/* test_progress.c — the progress line (base/progress.h, SPEC §9 "Terminal output"): the mode
 * from -q/-v, stderr and $TERM; bytes in 1024-based units; the line's known answers (units,
 * bytes of the total, rate and time left once a second has passed, by bytes or by units); a
 * redrawn line that fits the width with the name elided. */
#include "testutil.h"

#include "base/progress.h"
#include "base/term.h"

static void test_mode(void **state)
{
    (void)state;
    assert_int_equal(fp4_progress_mode_for(-1, true, "xterm"), FP4_PROGRESS_OFF);
    assert_int_equal(fp4_progress_mode_for(0, true, "xterm"), FP4_PROGRESS_REDRAW);
    assert_int_equal(fp4_progress_mode_for(0, true, "dumb"), FP4_PROGRESS_LINES);
    assert_int_equal(fp4_progress_mode_for(0, true, NULL), FP4_PROGRESS_LINES);
    assert_int_equal(fp4_progress_mode_for(0, true, ""), FP4_PROGRESS_LINES);
    assert_int_equal(fp4_progress_mode_for(0, false, "xterm"), FP4_PROGRESS_OFF);
    assert_int_equal(fp4_progress_mode_for(1, false, "xterm"), FP4_PROGRESS_LINES);
    assert_int_equal(fp4_progress_mode_for(-1, false, "xterm"), FP4_PROGRESS_OFF);
}

static void test_bytes(void **state)
{
    (void)state;
    char b[32];
    fp4_progress_bytes(b, sizeof b, 0);
    assert_string_equal(b, "0 B");
    fp4_progress_bytes(b, sizeof b, 1023);
    assert_string_equal(b, "1023 B");
    fp4_progress_bytes(b, sizeof b, 1024);
    assert_string_equal(b, "1.0 KiB");
    fp4_progress_bytes(b, sizeof b, 1536);
    assert_string_equal(b, "1.5 KiB");
    fp4_progress_bytes(b, sizeof b, 3.0 * 1024 * 1024 * 1024);
    assert_string_equal(b, "3.0 GiB");
}

static void test_line(void **state)
{
    (void)state;
    char l[256];
    const int64_t MiB = 1024 * 1024;
    /* the start: no rate before a second has passed or before any byte */
    assert_string_equal(fp4_progress_format(l, sizeof l, 0, 30, 0, 3 * MiB, 0.0, "a.w", 0),
                        "[1/30] 0 B/3.0 MiB a.w");
    assert_string_equal(fp4_progress_format(l, sizeof l, 3, 30, MiB, 3 * MiB, 0.5, "a.w", 0),
                        "[4/30] 1.0 MiB/3.0 MiB a.w");
    /* 1 MiB in 2 s: 512 KiB/s; 2 MiB left: 4 s */
    assert_string_equal(fp4_progress_format(l, sizeof l, 10, 30, MiB, 3 * MiB, 2.0, "b", 0),
                        "[11/30] 1.0 MiB/3.0 MiB 512.0 KiB/s ETA 0:04 b");
    /* no total (gemm): the time left by units, 3 of 12 done in 90 s: 9 * 30 s = 4:30 */
    assert_string_equal(fp4_progress_format(l, sizeof l, 3, 12, 90 * MiB, 0, 90.0, "L3", 0),
                        "[4/12] 90.0 MiB 1.0 MiB/s ETA 4:30 L3");
    /* more done than the total said (never a negative time left) */
    assert_string_equal(fp4_progress_format(l, sizeof l, 1, 2, 4 * MiB, 3 * MiB, 1.0, "", 0),
                        "[2/2] 4.0 MiB/3.0 MiB 4.0 MiB/s ETA 0:00");
}

static void test_width(void **state)
{
    (void)state;
    setenv("LC_ALL", "C", 1);
    char l[512];
    const char *name = "model.language_model.layers.31.block_sparse_moe.experts.7.w1.weight";
    for (int w = 40; w <= 120; w += 5) { /* never wider than width - 1 */
        fp4_progress_format(l, sizeof l, 10, 30, 1 << 20, 3 << 20, 2.0, name, w);
        assert_true((int)strlen(l) <= w - 1);
    }
    fp4_progress_format(l, sizeof l, 10, 30, 1 << 20, 3 << 20, 2.0, name, 70);
    assert_string_equal(l, "[11/30] 1.0 MiB/3.0 MiB 512.0 KiB/s ETA 0:04 ...31...erts.7.w1.weight");
    /* the layer number kept (SPEC §9) */
    fp4_progress_format(l, sizeof l, 10, 30, 1 << 20, 3 << 20, 2.0, name, 50);
    assert_string_equal(l, "[11/30] 1.0 MiB/3.0 MiB 512.0 KiB/s ETA 0:04"); /* no room */
    fp4_progress_format(l, sizeof l, 10, 30, 1 << 20, 3 << 20, 2.0, name, 40);
    assert_string_equal(l, "[11/30] 1.0 MiB/3.0 MiB ...31....weight"); /* no rate */
    fp4_progress_format(l, sizeof l, 0, 1, 0, 0, 0.0, "short", 80); /* fits: as it is */
    assert_string_equal(l, "[1/1] 0 B short");
    unsetenv("LC_ALL");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mode),
        cmocka_unit_test(test_bytes),
        cmocka_unit_test(test_line),
        cmocka_unit_test(test_width),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
