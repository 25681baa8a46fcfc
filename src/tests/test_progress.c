/* test_progress.c — the progress line (base/progress.h, SPEC §9 "Terminal output"): the mode
 * from -q/-v, stderr and $TERM; bytes in 1024-based units; the line's known answers (units,
 * bytes of the total, rate and time left once a second has passed, by bytes or by units); a
 * redrawn line that fits the width with the name elided; off a terminal, sparse lines on a
 * stub clock (none in a short run, the first after the delay, at most one per interval, the
 * final line), the shard's prefix. */
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
    assert_int_equal(fp4_progress_mode_for(0, false, "xterm"), FP4_PROGRESS_SPARSE);
    assert_int_equal(fp4_progress_mode_for(0, false, NULL), FP4_PROGRESS_SPARSE);
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
                        "[4/12] 90.0 MiB read 1.0 MiB/s ETA 4:30 L3");
    assert_string_equal(fp4_progress_format(l, sizeof l, 0, 1, 0, 0, 0.0, "/proj", 0),
                        "[1/1] 0 B read /proj"); /* not "0 B/proj", a fraction's look */
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
    assert_string_equal(l, "[11/30] 1.0 MiB/3.0 MiB 512.0 KiB/s ETA 0:04 ...31...7.w1.weight");
    /* the layer number kept (SPEC §9) */
    fp4_progress_format(l, sizeof l, 10, 30, 1 << 20, 3 << 20, 2.0, name, 50);
    assert_string_equal(l, "[11/30] 1.0 MiB/3.0 MiB 512.0 KiB/s ETA 0:04"); /* no room */
    fp4_progress_format(l, sizeof l, 10, 30, 1 << 20, 3 << 20, 2.0, name, 40);
    assert_string_equal(l, "[11/30] 1.0 MiB/3.0 MiB ...31...7.w1"); /* no rate; the expert kept */
    fp4_progress_format(l, sizeof l, 0, 1, 0, 0, 0.0, "short", 80); /* fits: as it is */
    assert_string_equal(l, "[1/1] 0 B read short");
    unsetenv("LC_ALL");
}

static double stub_now;
static double stub_clock(void) { return stub_now; }

/* A meter off a terminal on the stub clock, its lines into a temporary file. */
static void sparse_start(fp4_progress *p, FILE *f, int n, int64_t total)
{
    unsetenv("FP4DIAG_PROGRESS_EVERY");
    fp4_progress_start(p, 0, n, total);
    p->mode = fp4_progress_mode_for(0, false, "xterm");
    p->out = f;
    p->clock = stub_clock;
    p->t0 = stub_now = 100.0;
}

static char *slurp(FILE *f)
{
    static char buf[4096];
    fflush(f);
    rewind(f);
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    buf[k] = '\0';
    return buf;
}

static void test_due(void **state)
{
    (void)state;
    assert_false(fp4_progress_due(4.9, -1, 5, 10));
    assert_true(fp4_progress_due(5.0, -1, 5, 10));
    assert_false(fp4_progress_due(14.9, 5.0, 5, 10));
    assert_true(fp4_progress_due(15.0, 5.0, 5, 10));
    assert_true(fp4_progress_due(0.0, -1, 0, 0));
    assert_true(fp4_progress_due(0.0, 0.0, 0, 0));
}

static void test_end_line(void **state)
{
    (void)state;
    char l[256];
    const int64_t MiB = 1024 * 1024;
    assert_string_equal(fp4_progress_format_end(l, sizeof l, 30, 3 * MiB, 3 * MiB, 0.4),
                        "[30/30] 3.0 MiB/3.0 MiB done in 0:00");
    assert_string_equal(fp4_progress_format_end(l, sizeof l, 30, 3 * MiB, 3 * MiB, 75.0),
                        "[30/30] 3.0 MiB/3.0 MiB done in 1:15, 41.0 KiB/s");
    assert_string_equal(fp4_progress_format_end(l, sizeof l, 4, 8 * MiB, 0, 2.0),
                        "[4/4] 8.0 MiB read, done in 0:02, 4.0 MiB/s");
}

static void test_sparse(void **state)
{
    (void)state;
    const int64_t MiB = 1024 * 1024;
    fp4_progress p;
    FILE *f = tmpfile();
    assert_non_null(f);
    /* a short run (4 s): silent, no final line */
    sparse_start(&p, f, 4, 4 * MiB);
    for (int i = 0; i < 4; i++) stub_now = 100.0 + i, fp4_progress_step(&p, i, "t", i * MiB);
    stub_now = 104.0;
    fp4_progress_finish(&p, 4 * MiB);
    assert_string_equal(slurp(f), "");
    /* a unit every 3 s over 30 units: lines at 6 s (the first at or after 5 s), 16 s (10 s
     * later), 27 s, 39 s ... then the final line; never two within 10 s */
    f = freopen(NULL, "w+", f);
    assert_non_null(f);
    sparse_start(&p, f, 30, 30 * MiB);
    for (int i = 0; i < 30; i++) stub_now = 100.0 + 3 * i, fp4_progress_step(&p, i, "t", i * MiB);
    stub_now = 190.0;
    fp4_progress_finish(&p, 30 * MiB);
    assert_string_equal(slurp(f), "[3/30] 2.0 MiB/30.0 MiB 341.3 KiB/s ETA 1:24 t\n"
                                  "[7/30] 6.0 MiB/30.0 MiB 341.3 KiB/s ETA 1:12 t\n"
                                  "[11/30] 10.0 MiB/30.0 MiB 341.3 KiB/s ETA 1:00 t\n"
                                  "[15/30] 14.0 MiB/30.0 MiB 341.3 KiB/s ETA 0:48 t\n"
                                  "[19/30] 18.0 MiB/30.0 MiB 341.3 KiB/s ETA 0:36 t\n"
                                  "[23/30] 22.0 MiB/30.0 MiB 341.3 KiB/s ETA 0:24 t\n"
                                  "[27/30] 26.0 MiB/30.0 MiB 341.3 KiB/s ETA 0:12 t\n"
                                  "[30/30] 30.0 MiB/30.0 MiB done in 1:30, 341.3 KiB/s\n");
    /* one long unit: nothing before it, the final line once the run lasted the delay; a
     * shard's lines open with it */
    f = freopen(NULL, "w+", f);
    assert_non_null(f);
    sparse_start(&p, f, 1, 0);
    fp4_progress_share(&p, 2, 4);
    fp4_progress_step(&p, 0, "L0", 0);
    stub_now = 150.0;
    fp4_progress_finish(&p, MiB);
    assert_string_equal(slurp(f), "shard 2/4 [1/1] 1.0 MiB read, done in 0:50, 20.5 KiB/s\n");
    /* an error path ends the meter without a final line */
    f = freopen(NULL, "w+", f);
    assert_non_null(f);
    sparse_start(&p, f, 2, 0);
    stub_now = 160.0;
    fp4_progress_end(&p);
    fp4_progress_finish(&p, MiB);
    assert_string_equal(slurp(f), "");
    /* $FP4DIAG_PROGRESS_EVERY=0: a line before every unit and the final line */
    f = freopen(NULL, "w+", f);
    assert_non_null(f);
    sparse_start(&p, f, 2, 2048);
    setenv("FP4DIAG_PROGRESS_EVERY", "0", 1);
    fp4_progress_start(&p, 0, 2, 2048);
    unsetenv("FP4DIAG_PROGRESS_EVERY");
    p.mode = FP4_PROGRESS_SPARSE, p.out = f, p.clock = stub_clock, p.t0 = stub_now = 0.0;
    fp4_progress_step(&p, 0, "a", 0);
    fp4_progress_step(&p, 1, "b", 1024);
    fp4_progress_finish(&p, 2048);
    assert_string_equal(slurp(f), "[1/2] 0 B/2.0 KiB a\n[2/2] 1.0 KiB/2.0 KiB b\n"
                                  "[2/2] 2.0 KiB/2.0 KiB done in 0:00\n");
    /* a malformed value keeps the defaults */
    setenv("FP4DIAG_PROGRESS_EVERY", "soon", 1);
    fp4_progress_start(&p, 0, 2, 2048);
    unsetenv("FP4DIAG_PROGRESS_EVERY");
    assert_true(p.delay == FP4_PROGRESS_DELAY && p.every == FP4_PROGRESS_EVERY);
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mode),
        cmocka_unit_test(test_bytes),
        cmocka_unit_test(test_line),
        cmocka_unit_test(test_width),
        cmocka_unit_test(test_due),
        cmocka_unit_test(test_end_line),
        cmocka_unit_test(test_sparse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
