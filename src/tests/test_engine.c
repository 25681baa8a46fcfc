/* test_engine.c — the CPU engine's variants (engine/engine.h): every variant this CPU runs
 * gives the scalar reference's (ref.c) bits in every metric, through fp4_quantize_rows and
 * through the CPU backend (shared grouped-row cache, threads), on ties, subnormals, NaN/Inf,
 * zero blocks, every grid, scale mode, block size and RHT size (SPEC §7); the table and the
 * FP4DIAG_ISA names. */
#include "testutil.h"

#include <float.h>
#include <math.h>

#include "backend/backend.h"
#include "base/common.h"
#include "engine/engine.h"
#include "engine/engine_impl.h" /* fp4_engine.nv_params, group_params */
#include "num/metrics.h"
#include "num/quant.h"
#include "num/rht.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static double urand(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}
static float grand(void)
{
    double u = urand(), v = urand();
    if (u < 1e-300) u = 1e-300;
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

/* Rows for grid g: every 16 elements start with ±g_max (fp32 scale 1: t = |x| exactly), then
 * levels, exact midpoints (RTNE ties), their float neighbours, Gaussians and -0.0; regions of
 * subnormals, of values whose fp32 scale underflows, near FLT_MAX, an all-zero run of 64, and
 * single NaN, +Inf and -Inf values. */
static void fill_rows(const fp4c_grid *g, float *x, int R, int L)
{
    for (int i = 0; i < R * L; i++) {
        const int pick = (int)(urand() * 6.0), lv = (int)(urand() * (g->n - 1));
        float v = pick == 0   ? g->q[lv]
                  : pick == 1 ? g->mid[lv]
                  : pick == 2 ? nextafterf(g->mid[lv], 0.0f)
                  : pick == 3 ? nextafterf(g->mid[lv], 100.0f)
                  : pick == 4 ? -0.0f
                              : (float)(grand() * g->gmax / 3.0);
        if (i % 16 == 0) v = g->gmax;
        x[i] = urand() < 0.5 ? -v : v;
    }
    for (int j = 0; j < 64; j++) x[1 * L + 128 + j] = 0.0f;
    for (int j = 0; j < 96; j++) x[2 * L + 200 + j] *= 1e-40f; /* subnormal */
    for (int j = 0; j < 48; j++) x[3 * L + 300 + j] *= 1e-44f; /* scale underflow */
    for (int j = 0; j < 40; j++) x[4 * L + 17 + j] *= 5e37f;   /* near FLT_MAX */
    x[5 * L + 70] = NAN;
    x[6 * L + 3] = INFINITY;
    x[7 * L + L - 1] = -INFINITY;
    x[8 * L + 500] = -NAN;
}

enum { NFMT = 7, MAXCFG = 128 };
static const fp4_format fmts[NFMT] = {{FP4_FMT_E2M1, 0}, {FP4_FMT_E1M2, 0}, {FP4_FMT_INT4, 0},
                                      {FP4_FMT_E3M0, 0}, {FP4_FMT_E2M1, 2}, {FP4_FMT_E2M1, 3},
                                      {FP4_FMT_E2M1, 4}};

/* Every scale mode (fp32 at every block size the grouped kernel takes and one it does not,
 * nvfp4 with and without weight_2d, mxfp4 floor and rceil, tensor) x every RHT size. */
static int make_cfgs(fp4_format f, fp4_rht_signs *sg, fp4_qconfig *out)
{
    static const int blocks[] = {2, 4, 8, 16, 32, 64, 128, 256, 1024, 2048};
    int n = 0;
    for (int r = 0; r < 6; r++) {
        const fp4_rht_signs *rh = r ? &sg[r - 1] : NULL;
        for (int s = 0; s < 16; s++) {
            fp4_qconfig c;
            fp4_qconfig_default(&c);
            c.format = f;
            c.rht = rh;
            if (s < 10) {
                if (r > 1 && s != 3) continue; /* every block without RHT and with RHT-16 */
                c.block = blocks[s];
            } else if (s == 10 || s == 11) {
                c.scale = FP4_SCALE_NVFP4;
                c.weight_2d = s == 11;
            } else if (s == 12 || s == 13) {
                c.scale = FP4_SCALE_MXFP4;
                c.mx_rule = s == 13 ? FP4_MX_RCEIL : FP4_MX_FLOOR;
            } else if (s == 14) c.scale = FP4_SCALE_TENSOR;
            else continue;
            if (f.max && (c.scale == FP4_SCALE_MXFP4)) continue; /* e2m1:max: amax-based only */
            if (fp4_qconfig_check(&c) != FP4_OK) continue;
            assert_true(n < MAXCFG);
            out[n++] = c;
        }
    }
    return n;
}

static float amax_of(const fp4_qconfig *c, const float *x, int64_t rows, int64_t len)
{
    float a = 0.0f;
    fp4_amax_rows(c, x, rows, len, &a);
    return a;
}

static void cfg_name(const fp4_qconfig *c, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%.0d %s%s%s block %d rht %d", fp4_format_traits_of(c->format.id)->name,
             c->format.max ? ":max=" : "", c->format.max, fp4_scale_name(c->scale),
             c->weight_2d ? " weight_2d" : "", c->mx_rule ? " rceil" : "", c->block,
             c->rht ? c->rht->n : 0);
}

static void test_variants_equal_reference(void **state)
{
    (void)state;
    fp4_rht_signs sg[5];
    assert_int_equal(fp4_rht_signs_make("te", 16, &sg[0]), FP4_OK);
    assert_int_equal(fp4_rht_signs_make("seed:7", 32, &sg[1]), FP4_OK);
    assert_int_equal(fp4_rht_signs_make("te", 64, &sg[2]), FP4_OK);
    assert_int_equal(fp4_rht_signs_make("seed:3", 128, &sg[3]), FP4_OK);
    assert_int_equal(fp4_rht_signs_make("te", 256, &sg[4]), FP4_OK);
    const int R = 19, L = 600; /* weight_2d: one partial tile row; 2 chunks at blocks <= 8 */
    float *x = malloc(sizeof(float) * R * L);
    float *deq = malloc(sizeof(float) * R * (L + 2048));
    fp4_qconfig *cfgs = malloc(sizeof *cfgs * MAXCFG);
    fp4_metrics *ref = malloc(sizeof *ref * MAXCFG), *got = malloc(sizeof *got * MAXCFG);
    assert_true(x && deq && cfgs && ref && got);
    int variants = 0, checked = 0;
    for (int f = 0; f < NFMT; f++) {
        const fp4c_grid g = fp4c_grid_make((int)fmts[f].id, fmts[f].max);
        fill_rows(&g, x, R, L);
        const int n = make_cfgs(fmts[f], sg, cfgs);
        fp4_engine_use(fp4_engine_get(FP4_ISA_GENERIC));
        for (int c = 0; c < n; c++) { /* the reference: ref.c per block (deq asked for) */
            fp4_metrics_init(&ref[c]);
            fp4_qout o = {deq, NULL, NULL};
            assert_int_equal(fp4_quantize_rows(&cfgs[c], amax_of(&cfgs[c], x, R, L), x, 0, R, L,
                                               &o, &ref[c]),
                             FP4_OK);
            fp4_metrics_finish(&ref[c]);
        }
        for (int v = 0; v < FP4_ISA_COUNT; v++) {
            const fp4_engine *e = fp4_engine_get((fp4_isa)v);
            if (!e) continue;
            variants += f == 0;
            fp4_engine_use(e);
            for (int c = 0; c < n; c++) { /* fp4_quantize_rows: groups loaded per config */
                fp4_metrics m;
                fp4_metrics_init(&m);
                assert_int_equal(fp4_quantize_rows(&cfgs[c], amax_of(&cfgs[c], x, R, L), x, 0, R,
                                                   L, NULL, &m),
                                 FP4_OK);
                fp4_metrics_finish(&m);
                if (memcmp(&m, &ref[c], sizeof m) != 0) {
                    char nm[96];
                    cfg_name(&cfgs[c], nm, sizeof nm);
                    fail_msg("%s, %s: quantize_rows differs from the reference (err2 %a / %a, "
                             "hist[1] %llu / %llu)",
                             fp4_isa_name((fp4_isa)v), nm, m.sum_err2, ref[c].sum_err2,
                             (unsigned long long)m.hist[1], (unsigned long long)ref[c].hist[1]);
                }
                checked++;
            }
            /* the CPU backend: every config in one analysis (shared preparation and grouped-row
             * cache), 2 threads, two slabs (weight_2d: a slab holds whole tiles) */
            fp4_backend *be;
            fp4_analysis *an;
            assert_int_equal(fp4_backend_open(FP4_DEVICE_CPU, 2, &be), FP4_OK);
            assert_int_equal(fp4_analysis_begin(be, cfgs, n, R, L, &an), FP4_OK);
            if (fp4_analysis_needs_amax(an)) {
                assert_int_equal(fp4_analysis_amax(an, x, 16), FP4_OK);
                assert_int_equal(fp4_analysis_amax(an, x + 16 * L, R - 16), FP4_OK);
            }
            assert_int_equal(fp4_analysis_feed(an, x, 16), FP4_OK);
            assert_int_equal(fp4_analysis_feed(an, x + 16 * L, R - 16), FP4_OK);
            assert_int_equal(fp4_analysis_end(an, got), FP4_OK);
            fp4_backend_close(be);
            for (int c = 0; c < n; c++)
                if (memcmp(&got[c], &ref[c], sizeof got[c]) != 0) {
                    char nm[96];
                    cfg_name(&cfgs[c], nm, sizeof nm);
                    fail_msg("%s, %s: CPU backend differs from the reference (err2 %a / %a)",
                             fp4_isa_name((fp4_isa)v), nm, got[c].sum_err2, ref[c].sum_err2);
                }
        }
    }
    fp4_engine_use(NULL);
    assert_true(variants >= 1);
    assert_true(checked >= variants * NFMT * 20);
    free(x);
    free(deq);
    free(cfgs);
    free(ref);
    free(got);
}

/* The amax pass's known answers (fp4_amax_row): max |x| over finite values only; NaN of
 * either sign and ±Inf skipped, -0 gives +0 (bits 0), subnormals and FLT_MAX kept, at every
 * position of rows of every length 1..70 (vector bodies and tails); with RHT a group holding
 * a NaN is all NaN (nothing counted) and a partial last group is zero-padded. */
static void test_amax_known_answers(void **state)
{
    (void)state;
    fp4_qconfig c;
    fp4_qconfig_default(&c);
    const float nonfin[] = {-0.0f, NAN, -NAN, INFINITY, -INFINITY, -0.0f};
    float a = fp4_amax_row(&c, nonfin, 6);
    assert_int_equal(fp4c_f2u(a), 0u);
    const float mixed[] = {1.5f, -3.0f, NAN, -INFINITY, 2.0f, -0.0f};
    assert_true(fp4_amax_row(&c, mixed, 6) == 3.0f);
    const float sub[] = {-1e-45f, 1e-40f, -0.0f, NAN};
    assert_int_equal(fp4c_f2u(fp4_amax_row(&c, sub, 4)), fp4c_f2u(1e-40f));
    const float big[] = {INFINITY, -FLT_MAX, NAN, 1.0f};
    assert_true(fp4_amax_row(&c, big, 4) == FLT_MAX);
    float x[70];
    for (int n = 1; n <= 70; n++)
        for (int p = 0; p < n; p++) {
            for (int j = 0; j < n; j++) x[j] = (j % 3 == 0) ? -0.5f : (j % 3 == 1) ? NAN : INFINITY;
            x[p] = -7.0f;
            if (p + 1 < n) x[p + 1] = -INFINITY;
            assert_true(fp4_amax_row(&c, x, n) == 7.0f);
        }
    fp4_rht_signs sg;
    assert_int_equal(fp4_rht_signs_make("te", 16, &sg), FP4_OK);
    c.rht = &sg;
    float r[20] = {0};
    r[0] = NAN;
    assert_int_equal(fp4c_f2u(fp4_amax_row(&c, r, 16)), 0u);
    r[16] = 8.0f; /* the last group [8, 0, 0, 0] padded to 16: every rotated value ±8/4 */
    assert_true(fp4_amax_row(&c, r, 20) == 2.0f);
}

/* The reference can fail the comparison: a metric the reference computes differently (one
 * ulp on one block's input) changes the bits compared above. */
static void test_comparison_can_fail(void **state)
{
    (void)state;
    const int R = 3, L = 256;
    float x[3 * 256];
    for (int i = 0; i < R * L; i++) x[i] = grand();
    fp4_qconfig c;
    fp4_qconfig_default(&c);
    assert_int_equal(fp4_qconfig_check(&c), FP4_OK);
    fp4_metrics a, b;
    fp4_metrics_init(&a);
    fp4_metrics_init(&b);
    assert_int_equal(fp4_quantize_rows(&c, 0.0f, x, 0, R, L, NULL, &a), FP4_OK);
    x[37] = nextafterf(x[37], 100.0f);
    assert_int_equal(fp4_quantize_rows(&c, 0.0f, x, 0, R, L, NULL, &b), FP4_OK);
    assert_true(memcmp(&a, &b, sizeof a) != 0);
}

static void test_table_and_names(void **state)
{
    (void)state;
    assert_non_null(fp4_engine_get(FP4_ISA_GENERIC)); /* every build, every CPU */
    assert_null(fp4_engine_get(FP4_ISA_COUNT));
    for (int v = 0; v < FP4_ISA_COUNT; v++) {
        fp4_isa back;
        assert_int_equal(fp4_isa_parse(fp4_isa_name((fp4_isa)v), &back), FP4_OK);
        assert_int_equal((int)back, v);
        const fp4_engine *e = fp4_engine_get((fp4_isa)v);
        if (e) assert_int_equal((int)fp4_engine_isa(e), v);
    }
    fp4_isa back;
    assert_int_equal(fp4_isa_parse("sse9", &back), FP4_ERR_USAGE);
#if defined(__x86_64__)
    assert_null(fp4_engine_get(FP4_ISA_NEON));
#endif
#if defined(__aarch64__)
    assert_null(fp4_engine_get(FP4_ISA_AVX2));
    assert_null(fp4_engine_get(FP4_ISA_AVX512));
#endif
    /* fp4_engine_use overrides the choice and NULL gives it back */
    const fp4_engine *def = fp4_engine_active();
    fp4_engine_use(fp4_engine_get(FP4_ISA_GENERIC));
    assert_ptr_equal(fp4_engine_active(), fp4_engine_get(FP4_ISA_GENERIC));
    fp4_engine_use(NULL);
    assert_ptr_equal(fp4_engine_active(), def);
}

/* RTNE ties at every level of every grid, for every variant this CPU runs and the reference
 * (deq asked for), as known answers: each midpoint (q_i + q_{i+1}) / 2 goes to the even index.
 * Twice, from independent data: (A) positive ties at block scale 1 (fp32 scale, block 16,
 * blocks [g_max, mid_i, 0 x 14]); (B) negative ties at block scale 2^-3 (block 32, blocks
 * [-g_max/8, -mid_i/8, 0 x 30]). 8 blocks per level, so that the grouped kernels (8 blocks
 * a group) see every level in every lane. Checked: the histogram of codes, Σx̂² and Σ(x̂-x)²
 * exactly (dyadic values: the fp64 sums are exact in any order). */
static void check_ties(const fp4c_grid *g, fp4_format f, int set, const char *who)
{
    const int n = g->n, B = set == 0 ? 16 : 32, NB = 8 * (n - 1), L = B * NB;
    const float k = set == 0 ? 1.0f : 0.125f, sgn = set == 0 ? 1.0f : -1.0f;
    float *x = calloc((size_t)L, sizeof *x), *deq = malloc(sizeof(float) * (size_t)L);
    assert_true(x && deq);
    uint64_t hist[16] = {0};
    double xq2 = 0.0, err2 = 0.0;
    const int off = set == 0 ? 0 : 8;
    for (int j = 0; j < NB; j++) {
        const int i = (j * 3) % (n - 1); /* levels spread over the lanes of each group */
        const int even = i % 2 == 0 ? i : i + 1;
        const double q = g->q[even] * (double)k, mid = 0.5 * ((double)g->q[i] + g->q[i + 1]) * k;
        x[j * B] = sgn * g->gmax * k;
        x[j * B + 1 + j % (B - 1)] = sgn * (float)mid;
        assert_true((double)fabsf(x[j * B + 1 + j % (B - 1)]) == mid); /* representable */
        hist[off + n - 1]++;
        hist[off + even]++;
        hist[0] += (uint64_t)(B - 2); /* +0.0 */
        xq2 += (double)g->gmax * k * g->gmax * k + q * q;
        err2 += (q - mid) * (q - mid);
    }
    fp4_qconfig c;
    fp4_qconfig_default(&c);
    c.format = f;
    c.block = B;
    assert_int_equal(fp4_qconfig_check(&c), FP4_OK);
    fp4_metrics m;
    fp4_metrics_init(&m);
    fp4_qout o = {deq, NULL, NULL};
    assert_int_equal(fp4_quantize_rows(&c, 0.0f, x, 0, 1, L, who ? NULL : &o, &m), FP4_OK);
    char nm[96];
    cfg_name(&c, nm, sizeof nm);
    for (int h = 0; h < 16; h++)
        if (m.hist[h] != hist[h])
            fail_msg("%s, %s, ties %s: hist[%d] = %llu, want %llu", who ? who : "reference", nm,
                     set == 0 ? "A" : "B", h, (unsigned long long)m.hist[h],
                     (unsigned long long)hist[h]);
    assert_double_exact(m.sum_xq2, xq2);
    assert_double_exact(m.sum_err2, err2);
    if (!who) /* the reference's x̂: each tie at its even level */
        for (int j = 0; j < NB; j++) {
            const int i = (j * 3) % (n - 1), even = i % 2 == 0 ? i : i + 1;
            assert_double_exact(deq[j * B + 1 + j % (B - 1)], sgn * g->q[even] * k);
        }
    free(x);
    free(deq);
}

static void test_ties_every_level_every_variant(void **state)
{
    (void)state;
    int ran = 0;
    for (int v = -1; v < FP4_ISA_COUNT; v++) {
        const fp4_engine *e = v < 0 ? fp4_engine_get(FP4_ISA_GENERIC) : fp4_engine_get((fp4_isa)v);
        if (!e) {
            print_message("ties: %s skipped: this build or CPU does not run it\n",
                          fp4_isa_name((fp4_isa)v));
            continue;
        }
        fp4_engine_use(e);
        for (int f = 0; f < NFMT; f++) {
            const fp4c_grid g = fp4c_grid_make((int)fmts[f].id, fmts[f].max);
            for (int set = 0; set < 2; set++)
                check_ties(&g, fmts[f], set, v < 0 ? NULL : fp4_isa_name((fp4_isa)v));
        }
        ran += v >= 0;
    }
    fp4_engine_use(NULL);
    assert_true(ran >= 1);
}

/* ---- recipe statistics (SPEC §5.1) -------------------------------------------------------- */
static fp4_metrics stats_run(const fp4_qconfig *c, const float *x, int R, int L, float *deq)
{
    fp4_metrics m;
    fp4_metrics_init(&m);
    fp4_qout o = {deq, NULL, NULL};
    assert_int_equal(fp4_quantize_rows(c, amax_of(c, x, R, L), x, 0, R, L, deq ? &o : NULL, &m),
                     FP4_OK);
    fp4_metrics_finish(&m);
    return m;
}

/* Known answers, by hand: e2m1, fp32 block scale amax/6 = 1 (t = |x|), one block of 16. */
static void test_stats_known_answers_fp32(void **state)
{
    (void)state;
    const float x[16] = {6.0f, 0.2f, -0.2f, 0.3f, 0.0f, 1.0f, 1.2f, 2.4f,
                         5.5f, 4.9f, 0.25f, 0.75f, 0.0f, -0.0f, 0.0f, 0.0f};
    /* RTNE on {0, .5, 1, 1.5, 2, 3, 4, 6}: 0.2, -0.2 and the tie 0.25 go to 0 (underflows) */
    const float q[16] = {6.0f, 0.0f, -0.0f, 0.5f, 0.0f, 1.0f, 1.0f, 2.0f,
                         6.0f, 4.0f, 0.0f, 1.0f, 0.0f, -0.0f, 0.0f, 0.0f};
    fp4_qconfig c;
    fp4_qconfig_default(&c);
    assert_int_equal(fp4_qconfig_check(&c), FP4_OK);
    assert_int_equal(c.block, 16);
    for (int v = 0; v < FP4_ISA_COUNT; v++) {
        const fp4_engine *e = fp4_engine_get((fp4_isa)v);
        if (!e) continue;
        fp4_engine_use(e);
        const fp4_metrics m = stats_run(&c, x, 1, 16, NULL);
        assert_true(m.stats_ok);
        assert_int_equal(m.st_blocks, 1);
        assert_int_equal(m.st_count, 16);
        assert_int_equal(m.st_nonzero, 11);
        assert_int_equal(m.underflows, 3);
        assert_double_exact(m.underflows_pct, 18.75);
        assert_double_exact(m.underflow_share, 3.0 / 11.0);
        assert_double_exact(m.saturated_pct, 0.0);
        assert_double_exact(m.max_abs_err, (double)4.9f - 4.0); /* 4.9 -> 4 */
        double x2 = 0, e2 = 0;
        for (int j = 1; j < 16; j++) { /* all but the amax (index 0), in order */
            x2 += (double)x[j] * x[j];
            e2 += ((double)q[j] - x[j]) * ((double)q[j] - x[j]);
        }
        assert_double_exact(m.sum_x2_na, x2);
        assert_double_exact(m.sum_err2_na, e2);
        assert_double_exact(m.sqnr_na_db, 10.0 * log10(x2 / e2));
        assert_int_equal(m.sqnr_na_status, FP4_SQNR_OK);
        /* one block, amax 6 in the half-octave bin [6, 8); fp32 scales store no byte */
        assert_int_equal(m.hist_blocks, 1);
        assert_int_equal(m.amax_hist[fp4_amax_bin(6.0f)], 1);
        assert_double_exact(m.amax_p50, 6.0);
        assert_double_exact(m.amax_p99, 6.0);
        for (int i = 0; i < 256; i++) assert_int_equal(m.scale_hist[i], 0);
        /* relative errors of the 11 non-zero entries: 6 and 1 exact (r = 0); 5.5 -> 6: 1/11
         * in [1/16, 3/32); 1.2 -> 1, 2.4 -> 2: 1/6 and 4.9 -> 4: 0.18 in [1/8, 3/16); 0.75 -> 1:
         * 1/3 in [1/4, 3/8); 0.3 -> 0.5: 2/3 in [1/2, 3/4); the 3 flushed: r = 1 in [1, 3/2).
         * Ranks 6 (p50) and 11 (p95, p99) of 11: 1/8 and 1. */
        assert_int_equal(m.rerr_hist[0], 2);
        assert_int_equal(m.rerr_hist[fp4_rerr_bin(1.0f, 16.0f)], 1);
        assert_int_equal(m.rerr_hist[fp4_rerr_bin(1.0f, 8.0f)], 3);
        assert_int_equal(m.rerr_hist[fp4_rerr_bin(1.0f, 4.0f)], 1);
        assert_int_equal(m.rerr_hist[fp4_rerr_bin(1.0f, 2.0f)], 1);
        assert_int_equal(m.rerr_hist[fp4_rerr_bin(1.0f, 1.0f)], 3);
        assert_double_exact(m.rerr_p50, 0.125);
        assert_double_exact(m.rerr_p95, 1.0);
        assert_double_exact(m.rerr_p99, 1.0);
    }
    fp4_engine_use(NULL);
}

/* mxfp4 (floor rule): amax 7 takes the scale 2^(2-2) = 1, so 7 and 6.5 saturate to 6; a block
 * of NaN is excluded from every statistic; an nvfp4 block 1e8 times below the tensor amax gets
 * a zero E4M3 scale and every non-zero value of it underflows. */
static void test_stats_known_answers_scales(void **state)
{
    (void)state;
    float x[64] = {0};
    x[0] = 7.0f;
    x[1] = -6.5f;
    x[2] = 0.2f;
    x[32] = NAN; /* the second block: non-finite */
    x[33] = 3.0f;
    fp4_qconfig c;
    fp4_qconfig_default(&c);
    c.scale = FP4_SCALE_MXFP4;
    c.block = 32;
    assert_int_equal(fp4_qconfig_check(&c), FP4_OK);
    fp4_metrics m = stats_run(&c, x, 1, 64, NULL);
    assert_true(m.stats_ok);
    assert_int_equal(m.nonfinite_blocks, 1);
    assert_int_equal(m.st_blocks, 1);
    assert_int_equal(m.st_count, 32);
    assert_int_equal(m.st_nonzero, 3);
    assert_int_equal(m.saturated, 2);
    assert_int_equal(m.underflows, 1);
    assert_double_exact(m.saturated_pct, 100.0 * 2.0 / 32.0);
    assert_double_exact(m.max_abs_err, 1.0);
    assert_double_exact(m.sum_x2_na, 6.5 * 6.5 + (double)0.2f * 0.2f);
    assert_double_exact(m.sum_err2_na, 0.5 * 0.5 + (double)0.2f * 0.2f);
    /* E8M0 byte of 2^(floor(log2 7) - 2) = 2^0: 127; amax 7 in the bin [6, 8) */
    assert_int_equal(m.hist_blocks, 1);
    assert_int_equal(m.scale_hist[127], 1);
    assert_double_exact(m.amax_p50, 6.0);

    float y[32] = {0};
    y[0] = 1e6f;
    for (int j = 16; j < 32; j++) y[j] = j % 2 ? 0.01f : -0.01f;
    fp4_qconfig_default(&c);
    c.scale = FP4_SCALE_NVFP4;
    assert_int_equal(fp4_qconfig_check(&c), FP4_OK);
    m = stats_run(&c, y, 1, 32, NULL);
    assert_int_equal(m.scale_underflow_blocks, 1);
    assert_int_equal(m.st_nonzero, 17);
    assert_int_equal(m.underflows, 16);
    assert_double_exact(m.max_abs_err, (double)0.01f);
    assert_double_exact(m.underflows_pct, 50.0);
    /* the flushed block has no amax entry left out but its first: 15 of 16 in the sums */
    assert_double_exact(m.sum_err2_na, 15.0 * (double)0.01f * (double)0.01f);
    /* E4M3 bytes: the tensor's amax block at 448 (0x7E), the flushed one at 0x00; amax bins
     * [2^-7, 1.5·2^-7) holds 0.01 and [786432, 2^20) holds 1e6: the median is the first */
    assert_int_equal(m.hist_blocks, 2);
    assert_int_equal(m.scale_hist[0x7E], 1);
    assert_int_equal(m.scale_hist[0x00], 1);
    assert_double_exact(m.amax_p50, 0.0078125);
    assert_double_exact(m.amax_p90, 786432.0);

    /* a backend that did not run the pass: not computed, every statistic NaN */
    fp4_metrics z;
    fp4_metrics_init(&z);
    z.blocks = 3;
    fp4_metrics_finish(&z);
    assert_false(z.stats_ok);
    assert_double_nan(z.underflows_pct);
    assert_double_nan(z.sqnr_na_db);
}

/* The relative-error bin of r >= 0 by frexp, not by bits (SPEC §5.1): 0 below 2^-40, 127 from
 * 2^23, else 1 + 2·(e + 40) + (r >= 1.5·2^e) for 2^e <= r < 2^(e+1). */
static int ref_rerr_bin(double r)
{
    if (r < 0x1p-40) return 0;
    if (r >= 0x1p23) return 127;
    int e;
    const double f = frexp(r, &e); /* r = f · 2^e, f in [0.5, 1) */
    e -= 1;
    return 1 + 2 * (e + 40) + (f >= 0.75);
}

/* The statistics pass against an independent computation from the reference's x̂ (deq): the
 * counts, the relative-error bins (on every CPU variant), the max, and the two sums in SPEC §7's order (block sums from 0 in element order,
 * added to the chunk partial in block order, chunks merged in (row, chunk) order), for every
 * config without RHT (the input is then the quantized domain), SR included. */
static void test_stats_match_reference_deq(void **state)
{
    (void)state;
    const int R = 19, L = 600;
    float *x = malloc(sizeof(float) * R * L);
    float *deq = malloc(sizeof(float) * R * (L + 2048));
    fp4_qconfig *cfgs = malloc(sizeof *cfgs * MAXCFG);
    assert_true(x && deq && cfgs);
    fp4_rht_signs sg[5];
    for (int i = 0; i < 5; i++) assert_int_equal(fp4_rht_signs_make("te", 16, &sg[i]), FP4_OK);
    int checked = 0;
    for (int f = 0; f < NFMT; f++) {
        const fp4c_grid g = fp4c_grid_make((int)fmts[f].id, fmts[f].max);
        fill_rows(&g, x, R, L);
        const int n = make_cfgs(fmts[f], sg, cfgs);
        for (int c0 = 0; c0 < n; c0++) {
            for (int sr = 0; sr < 2; sr++) {
                fp4_qconfig c = cfgs[c0];
                if (c.rht) continue;
                if (sr) {
                    c.rounding = FP4_ROUND_SR;
                    if (fp4_qconfig_check(&c) != FP4_OK) continue;
                }
                const fp4_metrics m = stats_run(&c, x, R, L, deq);
                uint64_t rh[FP4_RERR_BINS] = {0};
                const int B = c.block;
                const int64_t P = (L + B - 1) / B * B;
                double tx2 = 0, te2 = 0, mx = 0;
                uint64_t cnt = 0, nz = 0, uf = 0, nb = 0;
                for (int r = 0; r < R; r++) {
                    double cx2 = 0, ce2 = 0;
                    for (int64_t b0 = 0; b0 < L; b0 += B) {
                        const float *xb = x + (int64_t)r * L + b0, *qb = deq + r * P + b0;
                        const int jn = (int)(L - b0 < B ? L - b0 : B);
                        int k = 0, bad = 0;
                        float a = 0;
                        for (int j = 0; j < jn; j++) {
                            if (!isfinite(xb[j])) bad = 1;
                            else if (fabsf(xb[j]) > a) a = fabsf(xb[j]), k = j;
                        }
                        if (!bad) {
                            double bx2 = 0, be2 = 0;
                            nb++;
                            for (int j = 0; j < jn; j++) {
                                const double d = (double)qb[j] - xb[j];
                                cnt++;
                                nz += xb[j] != 0.0f;
                                uf += xb[j] != 0.0f && qb[j] == 0.0f;
                                if (xb[j] != 0.0f) /* fp32 difference and quotient */
                                    rh[ref_rerr_bin(fabsf(qb[j] - xb[j]) / fabsf(xb[j]))]++;
                                mx = fabs(d) > mx ? fabs(d) : mx;
                                if (j != k) {
                                    bx2 += (double)xb[j] * xb[j];
                                    be2 += d * d;
                                }
                            }
                            cx2 += bx2;
                            ce2 += be2;
                        }
                        if ((b0 / B + 1) % FP4_CHUNK_BLOCKS == 0 || b0 + B >= L) {
                            tx2 += cx2;
                            te2 += ce2;
                            cx2 = ce2 = 0;
                        }
                    }
                }
                char nm[96];
                cfg_name(&c, nm, sizeof nm);
                if (m.st_blocks != nb || m.st_count != cnt || m.st_nonzero != nz ||
                    m.underflows != uf || m.max_abs_err != mx || m.sum_x2_na != tx2 ||
                    m.sum_err2_na != te2)
                    fail_msg("%s%s: statistics differ from the reference's x̂ (underflows %llu / "
                             "%llu, max %a / %a, err2_na %a / %a)",
                             nm, sr ? " sr" : "", (unsigned long long)m.underflows,
                             (unsigned long long)uf, m.max_abs_err, mx, m.sum_err2_na, te2);
                assert_true(m.stats_ok);
                for (int i = 0; i < FP4_RERR_BINS; i++)
                    if (m.rerr_hist[i] != rh[i])
                        fail_msg("%s%s: relative-error bin %d holds %llu, the reference %llu", nm,
                                 sr ? " sr" : "", i, (unsigned long long)m.rerr_hist[i],
                                 (unsigned long long)rh[i]);
                /* every CPU variant: the same bins (the counts above are order-free; SR's
                 * pass is one scalar code) */
                for (int v = 0; !sr && v < FP4_ISA_COUNT; v++) {
                    const fp4_engine *e = fp4_engine_get((fp4_isa)v);
                    if (!e) continue;
                    fp4_engine_use(e);
                    const fp4_metrics mv = stats_run(&c, x, R, L, NULL);
                    fp4_engine_use(NULL);
                    if (memcmp(mv.rerr_hist, rh, sizeof rh) || mv.underflows != uf)
                        fail_msg("%s%s: variant %d's statistics differ", nm, sr ? " sr" : "", v);
                }
                checked++;
            }
        }
    }
    assert_true(checked >= NFMT * 10);
    free(x);
    free(deq);
    free(cfgs);
}

/* Four over Six (SPEC §5.1), known answers by hand: nvfp4 e2m1 with tensor amax 2688 = 6·448,
 * so S_enc = S_dec = 1. Block 0 (2688, zeros) stores 448 both ways (2688/4 = 672 saturates at
 * 448): equal errors (0), scale to 6 kept. Block 1 (6, then 5 fifteen times): scale to 6 is
 * 1, 5 ties between 4 and 6 and goes to 4 (even code): error 15·1; scale to 4 is 1.5, 6 -> 4
 * exact and 5 -> 3.33 -> 3, decoded 4.5: error 15·0.25 = 3.75, chosen. Block 2 holds a NaN:
 * excluded. Every CPU variant, the grouped path and the deq path (fp4_row_fos). */
static void test_fos_known_answers(void **state)
{
    (void)state;
    float x[48] = {0};
    x[0] = 2688.0f;
    x[16] = 6.0f;
    for (int j = 17; j < 32; j++) x[j] = j % 2 ? 5.0f : -5.0f;
    x[33] = NAN;
    x[34] = 1.0f;
    float deq[48];
    fp4_qconfig c;
    fp4_qconfig_default(&c);
    c.scale = FP4_SCALE_NVFP4;
    assert_int_equal(fp4_qconfig_check(&c), FP4_OK);
    assert_true(fp4_fos_applies(&c));
    for (int v = 0; v < FP4_ISA_COUNT; v++) {
        const fp4_engine *e = fp4_engine_get((fp4_isa)v);
        if (!e) continue;
        fp4_engine_use(e);
        for (int path = 0; path < 2; path++) {
            const fp4_metrics m = stats_run(&c, x, 1, 48, path ? deq : NULL);
            assert_int_equal(m.nonfinite_blocks, 1);
            assert_double_exact(m.sum_err2, 15.0);
            assert_true(m.fos_ok);
            assert_int_equal(m.fos_blocks, 2);
            assert_int_equal(m.fos_blocks4, 1);
            assert_double_exact(m.fos_err2, 3.75);
            const double x2 = 2688.0 * 2688.0 + 36.0 + 15.0 * 25.0;
            assert_double_exact(m.sum_x2, x2);
            assert_double_exact(m.fos_sqnr_db, 10.0 * log10(x2 / 3.75));
        }
    }
    fp4_engine_use(NULL);
    /* not evaluated elsewhere: e1m2, SR, fp32 scales, e2m1:max=4 */
    for (int k = 0; k < 4; k++) {
        fp4_qconfig_default(&c);
        c.scale = k == 2 ? FP4_SCALE_FP32 : FP4_SCALE_NVFP4;
        if (k == 0) c.format.id = FP4_FMT_E1M2;
        if (k == 1) c.rounding = FP4_ROUND_SR;
        if (k == 3) c.format.max = 4;
        assert_int_equal(fp4_qconfig_check(&c), FP4_OK);
        assert_false(fp4_fos_applies(&c));
        const fp4_metrics m = stats_run(&c, x, 1, 48, NULL);
        assert_int_equal(m.fos_blocks, 0);
        assert_false(m.fos_ok);
        assert_double_nan(m.fos_sqnr_db);
    }
}

/* Four over Six on random rows (every nvfp4 e2m1 config of make_cfgs: RHT sizes, weight_2d):
 * every CPU variant and the deq path give the generic variant's bits; the chosen error never
 * exceeds the config's (each block's min, added in the same order as sum_err2), and equals it
 * bit for bit where no block chose 4. */
static void test_fos_variants_and_bounds(void **state)
{
    (void)state;
    const int R = 35, L = 600;
    float *x = malloc(sizeof(float) * R * L);
    float *deq = malloc(sizeof(float) * R * (L + 2048));
    fp4_qconfig *cfgs = malloc(sizeof *cfgs * MAXCFG);
    assert_true(x && deq && cfgs);
    fp4_rht_signs sg[5];
    for (int i = 0; i < 5; i++) assert_int_equal(fp4_rht_signs_make("te", 16, &sg[i]), FP4_OK);
    const fp4c_grid g = fp4c_grid_make(FP4_FMT_E2M1, 0);
    fill_rows(&g, x, R, L);
    const int n = make_cfgs(fmts[0], sg, cfgs);
    int checked = 0;
    for (int c0 = 0; c0 < n; c0++) {
        const fp4_qconfig c = cfgs[c0];
        if (!fp4_fos_applies(&c)) continue;
        char nm[96];
        cfg_name(&c, nm, sizeof nm);
        fp4_engine_use(fp4_engine_get(FP4_ISA_GENERIC));
        const fp4_metrics ref = stats_run(&c, x, R, L, NULL);
        assert_true(ref.fos_ok);
        assert_true(ref.fos_blocks4 > 0 && ref.fos_blocks4 < ref.fos_blocks);
        assert_true(ref.fos_err2 < ref.sum_err2);
        for (int v = 0; v <= FP4_ISA_COUNT; v++) {
            const fp4_engine *e = fp4_engine_get((fp4_isa)(v < FP4_ISA_COUNT ? v : 0));
            if (!e) continue;
            fp4_engine_use(e);
            const fp4_metrics m = stats_run(&c, x, R, L, v < FP4_ISA_COUNT ? NULL : deq);
            if (m.fos_blocks != ref.fos_blocks || m.fos_blocks4 != ref.fos_blocks4 ||
                m.fos_err2 != ref.fos_err2)
                fail_msg("%s: variant %d (%s path) gives fos %llu/%llu %a, generic %llu/%llu %a",
                         nm, v, v < FP4_ISA_COUNT ? "grouped" : "deq",
                         (unsigned long long)m.fos_blocks4, (unsigned long long)m.fos_blocks,
                         m.fos_err2, (unsigned long long)ref.fos_blocks4,
                         (unsigned long long)ref.fos_blocks, ref.fos_err2);
        }
        fp4_engine_use(NULL);
        checked++;
    }
    assert_true(checked >= 4);
    /* no block chooses 4 (every block's amax is the tensor's, 2688 = 6·448: its scale to 4,
     * 672, saturates at 448, the scale to 6, so both candidates are the same): the chosen
     * error is the config's, bit for bit, and not 0 */
    for (int i = 0; i < R * L; i++)
        x[i] = (i % L % 16 ? 1000.0f + (float)(i % 5) : 2688.0f) * (i % 3 ? 1.0f : -1.0f);
    fp4_qconfig c;
    fp4_qconfig_default(&c);
    c.scale = FP4_SCALE_NVFP4;
    assert_int_equal(fp4_qconfig_check(&c), FP4_OK);
    const fp4_metrics m = stats_run(&c, x, R, L, NULL);
    assert_true(m.fos_ok);
    assert_int_equal(m.fos_blocks4, 0);
    assert_true(m.sum_err2 > 0.0);
    assert_double_exact(m.fos_err2, m.sum_err2);
    free(x);
    free(deq);
    free(cfgs);
}

/* The error split (SPEC §5.1), known answers by hand: mxfp4 (floor rule), one block of 32 with
 * amax 7: the stored scale is 2^(2-2) = 1, the unrounded one s* = 7/6. 7 saturates to 6 while
 * x̃ = 6·s* = 7 (scale term 1, grid 0); 0.2 is flushed (0.04); 3 stays 3 while 3/s* = 2.57
 * rounds to 3, x̃ = 3.5 (scale 0.25, grid 0.25, cross −0.25). Σ(x̂ − x)² = 1.04 = 0.04 +
 * 1.25 + 0.25 + 2·(−0.25). Every CPU variant, both paths; SR: not evaluated. */
static void test_split_known_answers(void **state)
{
    (void)state;
    float x[64] = {0};
    x[0] = 7.0f;
    x[1] = 0.2f;
    x[2] = -3.0f;
    x[33] = INFINITY; /* the second block: non-finite, excluded */
    float deq[64];
    fp4_qconfig c;
    fp4_qconfig_default(&c);
    c.scale = FP4_SCALE_MXFP4;
    c.block = 32;
    assert_int_equal(fp4_qconfig_check(&c), FP4_OK);
    assert_false(fp4_split_applies(&c)); /* opt-in: not asked for, not computed */
    const fp4_metrics m0 = stats_run(&c, x, 1, 64, NULL);
    assert_int_equal(m0.split_blocks, 0);
    assert_double_exact(m0.split_scale, 0.0);
    c.error_split = true;
    assert_true(fp4_split_applies(&c));
    const double ss = 7.0 / 6.0, x3 = 3.0 * ss; /* s* and x̃ of 3, as the split computes them */
    const double a7 = 6.0 - 6.0 * ss, b7 = 6.0 * ss - 7.0, a3 = 3.0 - x3, b3 = x3 - 3.0;
    for (int v = 0; v < FP4_ISA_COUNT; v++) {
        const fp4_engine *e = fp4_engine_get((fp4_isa)v);
        if (!e) continue;
        fp4_engine_use(e);
        for (int path = 0; path < 2; path++) {
            const fp4_metrics m = stats_run(&c, x, 1, 64, path ? deq : NULL);
            assert_true(m.split_ok);
            assert_int_equal(m.split_blocks, 1);
            assert_double_exact(m.sum_err2, 1.0 + (double)0.2f * 0.2f);
            assert_double_exact(m.split_flush, (double)0.2f * 0.2f);
            assert_double_exact(m.split_scale, a7 * a7 + a3 * a3);
            assert_double_exact(m.split_grid, b7 * b7 + b3 * b3);
            assert_double_exact(m.split_cross, a7 * b7 + a3 * b3);
            assert_true(fabs(m.split_scale - 1.25) < 1e-14 && fabs(m.split_grid - 0.25) < 1e-14 &&
                        fabs(m.split_cross + 0.25) < 1e-14);
        }
    }
    fp4_engine_use(NULL);
    c.rounding = FP4_ROUND_SR;
    assert_int_equal(fp4_qconfig_check(&c), FP4_OK);
    assert_false(fp4_split_applies(&c));
    const fp4_metrics m = stats_run(&c, x, 1, 64, NULL);
    assert_int_equal(m.split_blocks, 0);
    assert_false(m.split_ok);
}

/* The error split on random rows, every RTNE config of every format (RHT, every scale and
 * block): the parts sum to Σ(x̂ − x)² within 1e-12 relative; every CPU variant and the deq
 * path give the generic variant's bits. */
static void test_split_sums_and_variants(void **state)
{
    (void)state;
    const int R = 19, L = 600;
    float *x = malloc(sizeof(float) * R * L);
    float *deq = malloc(sizeof(float) * R * (L + 2048));
    fp4_qconfig *cfgs = malloc(sizeof *cfgs * MAXCFG);
    assert_true(x && deq && cfgs);
    fp4_rht_signs sg[5];
    for (int i = 0; i < 5; i++) assert_int_equal(fp4_rht_signs_make("te", 16, &sg[i]), FP4_OK);
    int checked = 0;
    for (int f = 0; f < NFMT; f++) {
        const fp4c_grid g = fp4c_grid_make((int)fmts[f].id, fmts[f].max);
        fill_rows(&g, x, R, L);
        const int n = make_cfgs(fmts[f], sg, cfgs);
        for (int c0 = 0; c0 < n; c0++) {
            fp4_qconfig c = cfgs[c0];
            c.error_split = true;
            char nm[96];
            cfg_name(&c, nm, sizeof nm);
            fp4_engine_use(fp4_engine_get(FP4_ISA_GENERIC));
            const fp4_metrics ref = stats_run(&c, x, R, L, NULL);
            if (!fp4_split_applies(&c)) { /* SR: not computed */
                assert_int_equal(ref.split_blocks, 0);
                fp4_engine_use(NULL);
                continue;
            }
            assert_true(ref.split_ok);
            const double tot = ref.split_flush + ref.split_scale + ref.split_grid +
                               2.0 * ref.split_cross;
            if (isfinite(ref.sum_err2) && /* not where x̂ overflows (an rceil scale 2^128) */
                !(fabs(tot - ref.sum_err2) <= 1e-12 * ref.sum_err2))
                fail_msg("%s: split sums to %.17g, err2 %.17g", nm, tot, ref.sum_err2);
            for (int v = 0; v <= FP4_ISA_COUNT; v++) {
                const fp4_engine *e = fp4_engine_get((fp4_isa)(v < FP4_ISA_COUNT ? v : 0));
                if (!e) continue;
                fp4_engine_use(e);
                const fp4_metrics m = stats_run(&c, x, R, L, v < FP4_ISA_COUNT ? NULL : deq);
                if (m.split_blocks != ref.split_blocks ||
                    memcmp(&m.split_flush, &ref.split_flush, sizeof m.split_flush) ||
                    memcmp(&m.split_scale, &ref.split_scale, sizeof m.split_scale) ||
                    memcmp(&m.split_grid, &ref.split_grid, sizeof m.split_grid) ||
                    memcmp(&m.split_cross, &ref.split_cross, sizeof m.split_cross))
                    fail_msg("%s: variant %d (%s path): another split", nm, v,
                             v < FP4_ISA_COUNT ? "grouped" : "deq");
            }
            fp4_engine_use(NULL);
            checked++;
        }
    }
    assert_true(checked >= NFMT * 10);
    free(x);
    free(deq);
    free(cfgs);
}

/* One group through variant e's group_params_nv and through the scalar group_params
 * (fp4c_block_params per lane) with p->nv_m = m: every output bit for bit. Returns the
 * number of lanes that differ (0) after printing the first. */
static int nv_group_differs(const fp4_engine *e, const fp4_qplan *p0, float m, const float *am,
                            const int32_t *bad, const float *tile, int nb)
{
    fp4_qplan p = *p0;
    p.nv_m = m;
    int jnv[GRP];
    for (int b = 0; b < GRP; b++) jnv[b] = b < nb ? 16 - b % 3 : 0;
    float mul[2][GRP], dv[2][GRP], d1[2][GRP], d2[2][GRP];
    double se[2][GRP];
    int32_t jn[2][GRP], lv[2][GRP], uf[2][GRP];
    uint8_t sb[2][GRP];
    group_params(&p, am, bad, tile, nb, jnv, mul[0], dv[0], d1[0], d2[0], se[0], jn[0], lv[0],
                 uf[0], sb[0]);
    e->nv_params(&p, am, bad, tile, nb, jnv, m, mul[1], dv[1], d1[1], d2[1], se[1], jn[1], lv[1],
                 uf[1], sb[1]);
    for (int b = 0; b < GRP; b++) {
        if (memcmp(&mul[0][b], &mul[1][b], 4) || memcmp(&dv[0][b], &dv[1][b], 4) ||
            memcmp(&d1[0][b], &d1[1][b], 4) || memcmp(&d2[0][b], &d2[1][b], 4) ||
            memcmp(&se[0][b], &se[1][b], 8) || jn[0][b] != jn[1][b] || lv[0][b] != lv[1][b] ||
            uf[0][b] != uf[1][b] || sb[0][b] != sb[1][b]) {
            print_error("%s: amax %a tile %a m %a S_dec %a nb %d bad %d lane %d: scalar mul %a "
                        "d1 %a d2 %a se %a live %d uf %d byte %d, vector mul %a d1 %a d2 %a se "
                        "%a live %d uf %d byte %d\n",
                        fp4_isa_name(e->isa), (double)am[b], tile ? (double)tile[b] : 0.0,
                        (double)m, (double)p.nv_sdec, nb, bad[b], b, (double)mul[0][b],
                        (double)d1[0][b], (double)d2[0][b], se[0][b], lv[0][b], uf[0][b],
                        sb[0][b], (double)mul[1][b], (double)d1[1][b], (double)d2[1][b],
                        se[1][b], lv[1][b], uf[1][b], sb[1][b]);
            return 1;
        }
    }
    return 0;
}

/* The nvfp4 block parameters in vectors (group_params_nv: the row kernels' and Four over Six's,
 * with nv_m and nv_m4) equal fp4c_block_params' lane by lane, on every variant this CPU runs:
 * amax 0, subnormal amax, the E4M3 subnormal steps and their ties (RTNE), 2^-6 and its
 * neighbour, the normal ties of every E4M3 binade and their neighbours, 448 (E4M3 max) and
 * around it, amax_s · m overflowing to +Inf, 448 × 6 under m = 1/6, FLT_MAX, S_dec products
 * that underflow to 0 (not live, underflow), lanes past nb and non-finite, weight_2d's tile
 * amax, and random bit patterns. */
static void test_nv_params_vector_equals_scalar(void **state)
{
    (void)state;
    fp4_qconfig c;
    fp4_qconfig_default(&c);
    c.scale = FP4_SCALE_NVFP4;
    assert_int_equal(fp4_qconfig_check(&c), FP4_OK);
    fp4_qconfig c2 = c;
    c2.weight_2d = 1;
    assert_int_equal(fp4_qconfig_check(&c2), FP4_OK);
    fp4_qplan pl[2];
    assert_int_equal(fp4_qplan_make(&c, 37.5f, 64, &pl[0]), FP4_OK);
    assert_int_equal(fp4_qplan_make(&c2, 37.5f, 64, &pl[1]), FP4_OK);
    /* amax_s · m with m = 1: the encoder's edge cases */
    float v[640];
    int nv = 0;
    v[nv++] = 0.0f;
    v[nv++] = 1e-45f;
    v[nv++] = 1e-40f;
    v[nv++] = 0x1p-12f;
    for (int k = 0; k <= 8; k++) { /* subnormal steps of 2^-9 and the ties between them */
        v[nv++] = (float)k * 0x1p-9f;
        v[nv++] = ((float)k + 0.5f) * 0x1p-9f;
        v[nv++] = nextafterf(((float)k + 0.5f) * 0x1p-9f, 0.0f);
        v[nv++] = nextafterf(((float)k + 0.5f) * 0x1p-9f, 1.0f);
    }
    v[nv++] = nextafterf(0x1p-6f, 0.0f);
    for (int e = -6; e <= 8; e++)
        for (int k = 0; k < 8; k++) { /* 3-bit mantissas, ties to even between them */
            const float t = ldexpf(1.0f + (2.0f * (float)k + 1.0f) / 16.0f, e);
            v[nv++] = ldexpf(1.0f + (float)k / 8.0f, e);
            v[nv++] = t;
            v[nv++] = nextafterf(t, 0.0f);
            v[nv++] = nextafterf(t, 1e30f);
        }
    v[nv++] = 448.0f;
    v[nv++] = nextafterf(448.0f, 0.0f);
    v[nv++] = nextafterf(448.0f, 1e30f);
    v[nv++] = 464.0f;
    v[nv++] = 2688.0f; /* 448 × 6 */
    v[nv++] = 1e30f;
    v[nv++] = FLT_MAX;
    assert_true(nv <= (int)(sizeof v / sizeof v[0]));
    const float ms[] = {1.0f, 1.0f / 6.0f, 0.25f, pl[0].nv_m, pl[0].nv_m4, 3e38f, 1e-30f};
    const float sdecs[] = {pl[0].nv_sdec, 1.0f, 1e-38f, 1e-45f, 3.0f};
    int checked = 0;
    for (int vi = 0; vi < FP4_ISA_COUNT; vi++) {
        const fp4_engine *e = fp4_engine_get((fp4_isa)vi);
        if (!e || !e->nv_params) continue;
        for (int w = 0; w < 2; w++)
            for (size_t si = 0; si < sizeof sdecs / sizeof sdecs[0]; si++)
                for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
                    for (int i0 = 0; i0 < nv; i0 += 5) {
                        fp4_qplan p = pl[w];
                        p.nv_sdec = sdecs[si];
                        float am[GRP], tile[GRP];
                        int32_t bad[GRP];
                        const int nb = (i0 / 5) % 4 == 3 ? 5 : GRP;
                        for (int b = 0; b < GRP; b++) {
                            am[b] = v[(i0 + b) % nv];
                            tile[b] = v[(i0 + 3 * b + 1) % nv];
                            bad[b] = (i0 + b) % 11 == 0;
                        }
                        assert_int_equal(nv_group_differs(e, &p, ms[mi], am, bad, tile, nb), 0);
                    }
        /* random amax bit patterns (finite, >= 0) under random m and S_dec (an RNG of its
         * own: the later tests' rows come from urand's sequence) */
        uint64_t r = 0x9E3779B97F4A7C15ull;
#define NV_RAND() (r ^= r << 13, r ^= r >> 7, r ^= r << 17, (uint32_t)(r >> 32))
        for (int it = 0; it < 20000; it++) {
            fp4_qplan p = pl[it & 1];
            float am[GRP], tile[GRP];
            int32_t bad[GRP] = {0};
            for (int b = 0; b < GRP; b++) {
                const uint32_t ua = NV_RAND() % 0x7F800000u; /* below +Inf */
                const uint32_t ut = NV_RAND() % 0x7F800000u;
                memcpy(&am[b], &ua, 4);
                memcpy(&tile[b], &ut, 4);
            }
            const uint32_t um = 0x20000000u + NV_RAND() % 0x3F000000u,
                           us = 0x00800000u + NV_RAND() % 0x7E000000u;
            float m, sd;
            memcpy(&m, &um, 4);
            memcpy(&sd, &us, 4);
            p.nv_sdec = sd;
            assert_int_equal(nv_group_differs(e, &p, m, am, bad, tile, GRP), 0);
        }
#undef NV_RAND
        checked++;
    }
    assert_true(checked >= 1); /* generic at least */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_and_names),
        cmocka_unit_test(test_comparison_can_fail),
        cmocka_unit_test(test_amax_known_answers),
        cmocka_unit_test(test_variants_equal_reference),
        cmocka_unit_test(test_ties_every_level_every_variant),
        cmocka_unit_test(test_stats_known_answers_fp32),
        cmocka_unit_test(test_stats_known_answers_scales),
        cmocka_unit_test(test_stats_match_reference_deq),
        cmocka_unit_test(test_nv_params_vector_equals_scalar),
        cmocka_unit_test(test_fos_known_answers),
        cmocka_unit_test(test_fos_variants_and_bounds),
        cmocka_unit_test(test_split_known_answers),
        cmocka_unit_test(test_split_sums_and_variants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
