/* test_gpu_parity.c — CPU vs GPU (SPEC §7): identical codes, scales, histograms and counts,
 * the recipe statistics of SPEC §5.1 bit for bit, other fp64 sums within 1e-12 relative, for
 * every format x scale mode x rounding x RHT size, on random tensors. Skips (cmocka skip) where the build has no CUDA or the machine no GPU. */
#include "testutil.h"

#include <math.h>

#include "backend/backend.h"
#include "backend/impl.h"
#include "io/widen.h"
#include "num/metrics.h"
#include "num/quant.h"
#include "num/rht.h"

#ifdef FP4_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels.h"
#endif

enum { R = 48, L1 = 300, L2 = 1024, L3 = 301 };
/* L1: a row tail of 12 (blocks of 16 and 32); L3: rows not float4-aligned (element loads) */
static float data1[R * L1], data2[R * L2], data3[R * L3];
static fp4_rht_signs sg[6]; /* none, 16, 32, 64, 128, 256 */

static void fill(float *d, int n, uint64_t s, int specials)
{
    for (int i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(s >> 11) / 9007199254740992.0;
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double v = (double)(s >> 11) / 9007199254740992.0;
        /* Gaussian with occasional outliers and exact ties of the grids */
        double g = sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
        d[i] = (float)(i % 53 == 0 ? g * 30.0 : i % 41 == 0 ? 0.75 : g);
    }
    if (specials) {
        d[7 * L1 + 5] = NAN;
        d[20 * L1 + 299] = -INFINITY;
        for (int j = 0; j < 40; j++) d[30 * L1 + j] = 0.0f;
        d[31 * L1 + 3] = -0.0f;
        d[33 * L1 + 10] = 1e-41f; /* subnormal: a scale-underflow block */
    }
}

static int gpu_present(void)
{
#ifdef FP4_HAVE_CUDA
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
    return n > 0;
#else
    return 0;
#endif
}

static int setup(void **state)
{
    (void)state;
    fill(data1, R * L1, 12345, 1);
    fill(data2, R * L2, 777, 0);
    fill(data3, R * L3, 4242, 0);
    static const int sizes[5] = {16, 32, 64, 128, 256};
    for (int i = 0; i < 5; i++)
        if (fp4_rht_signs_make(i == 1 ? "seed:5" : "te", sizes[i], &sg[i + 1])) return -1;
    return 0;
}

#define SKIP_WITHOUT_GPU()                                                                     \
    do {                                                                                       \
        if (!gpu_present()) {                                                                  \
            print_message("[ SKIP     ] no CUDA GPU here (build %s CUDA): CPU-vs-GPU parity "  \
                          "not run\n",                                                         \
                          FP4_BUILD_CUDA);                                                     \
            skip();                                                                            \
        }                                                                                      \
    } while (0)
#ifdef FP4_HAVE_CUDA
#define FP4_BUILD_CUDA "with"
#else
#define FP4_BUILD_CUDA "without"
#endif

/* Every config of the matrix. */
static int make_configs(fp4_qconfig *out, int cap)
{
    int n = 0;
    for (int f = 0; f < FP4_FMT_COUNT; f++)
        for (int sm = 0; sm < 7; sm++)
            for (int rd = 0; rd < 2; rd++)
                for (int rh = 0; rh < 6; rh++) {
                    fp4_qconfig c;
                    fp4_qconfig_default(&c);
                    c.format.id = (fp4_format_id)f;
                    c.rounding = rd ? FP4_ROUND_SR : FP4_ROUND_RTNE;
                    c.seed = 1234567ull + (uint64_t)n;
                    c.stream = (uint32_t)rh;
                    c.rht = rh ? &sg[rh] : NULL;
                    c.error_split = true; /* SPEC §5.1's opt-in split (RTNE), on both */
                    switch (sm) {
                    case 0: c.scale = FP4_SCALE_FP32; break;
                    case 1: c.scale = FP4_SCALE_FP32; c.block = 64; break;
                    case 2: c.scale = FP4_SCALE_NVFP4; break;
                    case 3: c.scale = FP4_SCALE_NVFP4; c.weight_2d = true; break;
                    case 4: c.scale = FP4_SCALE_MXFP4; break;
                    case 5: c.scale = FP4_SCALE_MXFP4; c.mx_rule = FP4_MX_RCEIL; break;
                    default: c.scale = FP4_SCALE_TENSOR; break;
                    }
                    if (rd && f == FP4_FMT_E2M1 && sm == 2) c.sr_bits = 8;
                    if (fp4_qconfig_check(&c) != FP4_OK) continue;
                    if (n < cap) out[n] = c;
                    n++;
                }
    return n;
}

static int rel_ok(double a, double b, double scale)
{
    if (a == b) return 1;
    double d = fabs(a - b), m = fmax(fmax(fabs(a), fabs(b)), scale);
    return d <= 1e-12 * m;
}

static void compare_metrics(const fp4_metrics *c, const fp4_metrics *g, const char *what,
                            int *exact_sums)
{
    for (int i = 0; i < 16; i++)
        if (c->hist[i] != g->hist[i]) fail_msg("%s: hist[%d] %llu vs %llu", what, i,
                                               (unsigned long long)c->hist[i],
                                               (unsigned long long)g->hist[i]);
    for (int i = 0; i < 8; i++)
        if (c->level_count[i] != g->level_count[i]) fail_msg("%s: level_count[%d]", what, i);
#define EQ(f)                                                                                  \
    if (c->f != g->f)                                                                          \
        fail_msg("%s: " #f " %llu vs %llu", what, (unsigned long long)c->f,                    \
                 (unsigned long long)g->f);
    EQ(signed_err_n) EQ(elements) EQ(padded) EQ(zero) EQ(nan) EQ(inf) EQ(saturated) EQ(clipped)
    EQ(blocks) EQ(zero_blocks) EQ(scale_underflow_blocks) EQ(nonfinite_blocks)
    /* the recipe statistics (SPEC §5.1): counts, histograms, the max and the ordered fp64 sums
     * (each block's from +0 in element order, then chunk by chunk in block order), identical
     * bit for bit on every backend */
    EQ(st_blocks) EQ(st_count) EQ(st_nonzero) EQ(underflows) EQ(fos_blocks) EQ(fos_blocks4)
    EQ(split_blocks) EQ(hist_blocks)
    for (int i = 0; i < 256; i++) EQ(scale_hist[i])
    for (int i = 0; i < FP4_AMAX_BINS; i++) EQ(amax_hist[i])
    for (int i = 0; i < FP4_RERR_BINS; i++) EQ(rerr_hist[i])
#undef EQ
    const double sb[8][2] = {{c->max_abs_err, g->max_abs_err}, {c->sum_x2_na, g->sum_x2_na},
                             {c->sum_err2_na, g->sum_err2_na}, {c->fos_err2, g->fos_err2},
                             {c->split_flush, g->split_flush}, {c->split_scale, g->split_scale},
                             {c->split_grid, g->split_grid}, {c->split_cross, g->split_cross}};
    static const char *const sn[8] = {"max_abs_err", "sum_x2_na", "sum_err2_na", "fos_err2",
                                      "split_flush", "split_scale", "split_grid", "split_cross"};
    for (int i = 0; i < 8; i++)
        if (memcmp(&sb[i][0], &sb[i][1], sizeof(double)) != 0)
            fail_msg("%s: %s %a vs %a (not bit-identical)", what, sn[i], sb[i][0], sb[i][1]);
    if (c->tensor_amax != g->tensor_amax)
        fail_msg("%s: tensor_amax %g vs %g", what, c->tensor_amax, g->tensor_amax);
    /* signed sums may cancel: relative to the sum of the magnitudes they come from */
    const double mag = c->sum_x2 > 0 ? sqrt(c->sum_x2) : 1.0;
    const double pos[4][2] = {{c->sum_x2, g->sum_x2}, {c->sum_err2, g->sum_err2},
                              {c->sum_xqx, g->sum_xqx}, {c->sum_xq2, g->sum_xq2}};
    for (int i = 0; i < 4; i++)
        if (!rel_ok(pos[i][0], pos[i][1], 0.0))
            fail_msg("%s: sum %d: %.17g vs %.17g", what, i, pos[i][0], pos[i][1]);
    if (!rel_ok(c->signed_err_sum, g->signed_err_sum, 1e-3 * mag))
        fail_msg("%s: signed_err_sum %.17g vs %.17g", what, c->signed_err_sum,
                 g->signed_err_sum);
    for (int i = 0; i < 8; i++)
        if (!rel_ok(c->level_err_sum[i], g->level_err_sum[i], 1e-3 * mag))
            fail_msg("%s: level_err_sum[%d] %.17g vs %.17g", what, i, c->level_err_sum[i],
                     g->level_err_sum[i]);
    int ex = c->sum_x2 == g->sum_x2 && c->sum_err2 == g->sum_err2 && c->sum_xqx == g->sum_xqx &&
             c->sum_xq2 == g->sum_xq2 && c->signed_err_sum == g->signed_err_sum;
    for (int i = 0; i < 8; i++) ex &= c->level_err_sum[i] == g->level_err_sum[i];
    *exact_sums += ex;
    static int shown;
    if (!ex && shown < 6) { /* name what differs (within tolerance): diagnostics only */
        shown++;
        unsigned mask = 0;
        for (int i = 0; i < 4; i++) mask |= (pos[i][0] != pos[i][1]) << i;
        mask |= (c->signed_err_sum != g->signed_err_sum) << 4;
        for (int i = 0; i < 8; i++) mask |= (c->level_err_sum[i] != g->level_err_sum[i]) << (5 + i);
        print_message("[ INFO     ] not bit-identical: %s (fields mask 0x%x: bit 0-3 x2 err2 xqx "
                      "xq2, 4 signed, 5+ levels)\n", what, mask);
    }
}

static void run_backend(fp4_backend *be, const fp4_qconfig *cfgs, int n, const float *d,
                        int64_t rows, int64_t len, int64_t slab, fp4_metrics *out)
{
    fp4_analysis *an;
    assert_int_equal(fp4_analysis_begin(be, cfgs, n, rows, len, &an), FP4_OK);
    if (fp4_analysis_needs_amax(an))
        for (int64_t r = 0; r < rows; r += slab)
            assert_int_equal(fp4_analysis_amax(an, d + r * len, r + slab <= rows ? slab : rows - r),
                             FP4_OK);
    for (int64_t r = 0; r < rows; r += slab)
        assert_int_equal(fp4_analysis_feed(an, d + r * len, r + slab <= rows ? slab : rows - r),
                         FP4_OK);
    assert_int_equal(fp4_analysis_end(an, out), FP4_OK);
}

/* Metrics through backend.h: CPU engine vs CUDA engine, every config, three tensors; twice:
 * with fp4k_stats's register-resident kernel where it applies, and with its general kernel for
 * every config (fp4k_stats_generic). */
static void metrics_parity(int gen);

static void stats_generic(int on)
{
#ifdef FP4_HAVE_CUDA
    fp4k_stats_generic(on);
#else
    (void)on;
#endif
}

static void test_metrics_parity(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    for (int gen = 0; gen < 2; gen++) {
        stats_generic(gen);
        metrics_parity(gen);
    }
    stats_generic(0);
}

static void metrics_parity(int gen)
{
    static fp4_qconfig cfgs[512];
    const int n = make_configs(cfgs, 512);
    assert_true(n > 300 && n <= 512);
    fp4_metrics *mc = calloc((size_t)n, sizeof *mc), *mg = calloc((size_t)n, sizeof *mg);
    assert_non_null(mc);
    assert_non_null(mg);
    fp4_backend *cpu, *gpu;
    assert_int_equal(fp4_backend_open(FP4_DEVICE_CPU, 0, &cpu), FP4_OK);
    assert_int_equal(fp4_backend_open(FP4_DEVICE_CUDA, 0, &gpu), FP4_OK);
    assert_string_equal(fp4_backend_name(gpu), "cuda");
    int exact = 0, total = 0;
    for (int t = 0; t < 3; t++) {
        const float *d = t == 2 ? data3 : t ? data2 : data1;
        const int64_t len = t == 2 ? L3 : t ? L2 : L1;
        run_backend(cpu, cfgs, n, d, R, len, R, mc);
        run_backend(gpu, cfgs, n, d, R, len, 16, mg); /* another slab split on purpose */
        for (int c = 0; c < n; c++) {
            char what[160], fn[32];
            fp4_format_name(cfgs[c].format, fn, sizeof fn);
            snprintf(what, sizeof what, "%s stats kernel, tensor %d, %s %s/%d%s %s rht %d",
                     gen ? "general" : "block", t, fn,
                     fp4_scale_name(cfgs[c].scale), cfgs[c].block,
                     cfgs[c].weight_2d ? " 2d" : "", fp4_rounding_name(cfgs[c].rounding),
                     cfgs[c].rht ? cfgs[c].rht->n : 0);
            compare_metrics(&mc[c], &mg[c], what, &exact);
            total++;
            /* the statistics were computed (by both: compare_metrics made them equal) for
             * every finite block, Four over Six where it applies, so the report shows them */
            const uint64_t fin = mc[c].blocks - mc[c].nonfinite_blocks;
            if (mc[c].st_blocks != fin || !fin)
                fail_msg("%s: statistics over %llu of %llu finite blocks", what,
                         (unsigned long long)mc[c].st_blocks, (unsigned long long)fin);
            if (mc[c].fos_blocks != (fp4_fos_applies(&cfgs[c]) ? fin : 0))
                fail_msg("%s: Four over Six over %llu blocks", what,
                         (unsigned long long)mc[c].fos_blocks);
            if (mc[c].split_blocks != (fp4_split_applies(&cfgs[c]) ? fin : 0))
                fail_msg("%s: the error split over %llu blocks", what,
                         (unsigned long long)mc[c].split_blocks);
            fp4_metrics_finish(&mg[c]);
            if (fp4_split_applies(&cfgs[c]) && !mg[c].split_ok)
                fail_msg("%s: gpu split_ok 0", what);
            if (!mg[c].stats_ok || mg[c].fos_ok != fp4_fos_applies(&cfgs[c]))
                fail_msg("%s: gpu stats_ok %d, fos_ok %d", what, mg[c].stats_ok, mg[c].fos_ok);
        }
    }
    print_message("[ INFO     ] %s stats kernel: %d configs x 3 tensors: counts identical, "
                  "recipe statistics bit-identical, other sums within 1e-12; "
                  "%d of %d bit-identical in every sum\n", gen ? "general" : "block", n, exact,
                  total);
    fp4_backend_close(cpu);
    fp4_backend_close(gpu);
    free(mc);
    free(mg);
}

/* Codes and scales: fp4k_quantize vs fp4_quantize_rows, byte for byte. */
static void test_codes_scales_parity(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
#ifdef FP4_HAVE_CUDA
    static fp4_qconfig cfgs[512];
    const int n = make_configs(cfgs, 512);
    const int64_t len = L1;
    float *d_in, *d_signs, *d_tile;
    double *d_part;
    uint64_t *d_cnt;
    uint8_t *d_codes, *d_scales;
    const int64_t P = 512 > len ? 512 : len; /* padded_len <= 512 for every config here */
    assert_int_equal(cudaMalloc((void **)&d_in, sizeof data1), 0);
    assert_int_equal(cudaMalloc((void **)&d_signs, 256 * sizeof(float)), 0);
    assert_int_equal(cudaMalloc((void **)&d_tile, (size_t)R * P * sizeof(float)), 0);
    assert_int_equal(cudaMalloc((void **)&d_part, (size_t)R * 64 * FP4K_NSUMS * 8), 0);
    assert_int_equal(cudaMalloc((void **)&d_cnt, FP4K_NCOUNTS * 8), 0);
    assert_int_equal(cudaMalloc((void **)&d_codes, (size_t)R * P), 0);
    assert_int_equal(cudaMalloc((void **)&d_scales, (size_t)R * P), 0);
    assert_int_equal(cudaMemcpy(d_in, data1, sizeof data1, cudaMemcpyHostToDevice), 0);
    uint8_t *hc = malloc((size_t)R * P), *hs = malloc((size_t)R * P);
    uint8_t *gc = malloc((size_t)R * P), *gs = malloc((size_t)R * P);
    assert_true(hc && hs && gc && gs);
    int checked = 0;
    for (int c = 0; c < n; c++) {
        const fp4_qconfig *cfg = &cfgs[c];
        float amax = 0.0f;
        fp4_amax_rows(cfg, data1, R, len, &amax);
        fp4_qplan plan;
        assert_int_equal(fp4_qplan_make(cfg, amax, len, &plan), FP4_OK);
        struct fp4k_cfg kc;
        fp4_cuda_cfg_of(&plan, &kc);
        if (!fp4k_cfg_supported(&kc)) continue;
        fp4_qout out = {NULL, hc, hs};
        const int64_t row0 = 32; /* SR counters of rows 32.. */
        assert_int_equal(fp4_quantize_rows(cfg, amax, data1, row0, R, len, &out, NULL), FP4_OK);
        if (cfg->rht)
            assert_int_equal(cudaMemcpy(d_signs, cfg->rht->s, (size_t)cfg->rht->n * 4,
                                        cudaMemcpyHostToDevice), 0);
        if (kc.weight_2d)
            assert_int_equal(fp4k_tile_amax(d_in, R, len, kc.padded_len, kc.rht_n, d_signs,
                                            d_tile, NULL), 0);
        assert_int_equal(cudaMemset(d_cnt, 0, FP4K_NCOUNTS * 8), 0);
        assert_int_equal(fp4k_quantize(&kc, d_in, row0, R, d_signs, d_tile, d_part, d_cnt,
                                       d_codes, d_scales, NULL), 0);
        assert_int_equal(cudaDeviceSynchronize(), 0);
        /* also the device amax (pass 1) against the CPU's */
        float *d_amax = (float *)d_part, gamax = -1.0f;
        assert_int_equal(cudaMemset(d_amax, 0, 4), 0);
        assert_int_equal(fp4k_amax(d_in, R, len, kc.rht_n ? kc.padded_len : (len + 15) / 16 * 16,
                                   kc.rht_n, d_signs, d_amax, NULL), 0);
        assert_int_equal(cudaMemcpy(&gamax, d_amax, 4, cudaMemcpyDeviceToHost), 0);
        if (gamax != amax) fail_msg("config %d: amax %g vs %g", c, gamax, amax);
        const size_t nc = (size_t)R * (size_t)plan.padded_len, ns = (size_t)R * (size_t)plan.nblk;
        assert_int_equal(cudaMemcpy(gc, d_codes, nc, cudaMemcpyDeviceToHost), 0);
        assert_int_equal(cudaMemcpy(gs, d_scales, ns, cudaMemcpyDeviceToHost), 0);
        for (size_t i = 0; i < nc; i++)
            if (hc[i] != gc[i])
                fail_msg("config %d (scale %s rht %d sr %d): code %zu: %d vs %d", c,
                         fp4_scale_name(cfg->scale), kc.rht_n, kc.rounding, i, hc[i], gc[i]);
        for (size_t i = 0; i < ns; i++)
            if (hs[i] != gs[i]) fail_msg("config %d: scale %zu: %d vs %d", c, i, hs[i], gs[i]);
        checked++;
    }
    print_message("[ INFO     ] codes, scales and amax identical for %d configs\n", checked);
    assert_true(checked > 300);
    free(hc);
    free(hs);
    free(gc);
    free(gs);
    cudaFree(d_in);
    cudaFree(d_signs);
    cudaFree(d_tile);
    cudaFree(d_part);
    cudaFree(d_cnt);
    cudaFree(d_codes);
    cudaFree(d_scales);
#endif
}

/* Stored-word rows of R x L1: bf16 from data1's top halves, f16 from patterns of every class
 * (normal, subnormal, zero, inf, NaN with payloads, both signs). */
static uint16_t wbf[R * L1], wf16[R * L1];

static void fill_words(void)
{
    uint32_t x = 99;
    for (int i = 0; i < R * L1; i++) {
        uint32_t u;
        memcpy(&u, &data1[i], 4);
        wbf[i] = (uint16_t)(u >> 16);
        x = x * 1664525u + 1013904223u;
        /* exponents 1..22 mostly (magnitudes ~2^-14..2^7), some subnormals and zeros */
        const uint32_t e = (x >> 24) % 40;
        uint32_t h = (x >> 8) & 0x83ffu;
        h |= (e < 22 ? e + 1 : e < 30 ? 0 : 14) << 10;
        wf16[i] = (uint16_t)h;
    }
    const uint16_t sp[] = {0x7c00, 0xfc00, 0x7c01, 0xfe00, 0x7fff, 0x0001, 0x8001, 0x03ff, 0x8000};
    const uint16_t sb[] = {0x7f80, 0xff80, 0x7f81, 0xffc0, 0x7fff, 0x0001, 0x8001, 0x007f, 0x8000};
    for (int k = 0; k < 9; k++) {
        wf16[(11 + 4 * k) * L1 + 7 * k] = sp[k];
        wbf[(11 + 4 * k) * L1 + 7 * k] = sb[k];
    }
}

static void run_words(fp4_backend *be, const fp4_qconfig *cfgs, int n, const uint16_t *w,
                      fp4_words kind, int64_t slab, fp4_metrics *out)
{
    fp4_analysis *an;
    assert_int_equal(fp4_analysis_begin(be, cfgs, n, R, L1, &an), FP4_OK);
    if (fp4_analysis_needs_amax(an))
        for (int64_t r = 0; r < R; r += slab)
            assert_int_equal(fp4_analysis_amax_words(an, w + r * L1, kind,
                                                     r + slab <= R ? slab : R - r),
                             FP4_OK);
    for (int64_t r = 0; r < R; r += slab)
        assert_int_equal(fp4_analysis_feed_words(an, w + r * L1, kind, r + slab <= R ? slab : R - r),
                         FP4_OK);
    assert_int_equal(fp4_analysis_end(an, out), FP4_OK);
}

/* Analyses fed stored words give what the fp32 rows they widen to give: on the CPU (widened a
 * row group at a time by backend_cpu.c) and on the GPU (uploaded and widened on the device) bit for bit, and
 * the GPU within the parity of test_metrics_parity of the CPU. Without a GPU: the CPU part. */
static void test_words_parity(void **state)
{
    (void)state;
    static fp4_qconfig cfgs[512];
    const int n = make_configs(cfgs, 512);
    fill_words();
    static float wide[R * L1];
    fp4_metrics *ref = calloc((size_t)n, sizeof *ref), *got = calloc((size_t)n, sizeof *got);
    assert_true(ref && got);
    fp4_backend *cpu, *gpu = NULL;
    assert_int_equal(fp4_backend_open(FP4_DEVICE_CPU, 0, &cpu), FP4_OK);
    if (!getenv("FP4DIAG_CPU_WORDS")) { /* the CPU widens a row group at a time itself */
        assert_true(fp4_backend_takes_words(cpu, FP4_WORDS_BF16));
        assert_true(fp4_backend_takes_words(cpu, FP4_WORDS_F16));
    }
    if (gpu_present()) {
        assert_int_equal(fp4_backend_open(FP4_DEVICE_CUDA, 0, &gpu), FP4_OK);
        assert_true(fp4_backend_takes_words(gpu, FP4_WORDS_BF16));
        assert_true(fp4_backend_takes_words(gpu, FP4_WORDS_F16));
    }
    int exact = 0, total = 0;
    for (int k = 0; k < 2; k++) {
        const fp4_words kind = k ? FP4_WORDS_F16 : FP4_WORDS_BF16;
        const uint16_t *w = k ? wf16 : wbf;
        assert_true(fp4_widen(k ? FP4_STORED_F16 : FP4_STORED_BF16, false, w, wide, R * L1));
        run_backend(cpu, cfgs, n, wide, R, L1, R, ref);
        run_words(cpu, cfgs, n, w, kind, 16, got);
        for (int c = 0; c < n; c++) {
            int ex = 0;
            compare_metrics(&ref[c], &got[c], k ? "cpu f16 words" : "cpu bf16 words", &ex);
            if (!ex) fail_msg("config %d: cpu words vs fp32: sums differ", c);
        }
        if (!gpu) continue;
        fp4_metrics *g32 = calloc((size_t)n, sizeof *g32);
        assert_non_null(g32);
        run_backend(gpu, cfgs, n, wide, R, L1, 16, g32);
        run_words(gpu, cfgs, n, w, kind, 16, got);
        for (int c = 0; c < n; c++) {
            char what[64];
            snprintf(what, sizeof what, "%s words config %d", k ? "f16" : "bf16", c);
            int ex = 0;
            compare_metrics(&g32[c], &got[c], what, &ex);
            if (!ex) fail_msg("%s: gpu words vs gpu fp32: sums differ", what);
            compare_metrics(&ref[c], &got[c], what, &exact);
            total++;
        }
        free(g32);
    }
    if (gpu)
        print_message("[ INFO     ] words: %d configs x bf16, f16: gpu words == gpu fp32 bit for "
                      "bit; vs cpu %d of %d bit-identical in every sum\n", n, exact, total);
    else
        print_message("[ SKIP     ] no CUDA GPU here: words checked on the CPU backend only\n");
    fp4_backend_close(cpu);
    if (gpu) fp4_backend_close(gpu);
    free(ref);
    free(got);
}

/* Amax pass in slabs of a rows, second pass in slabs of b, of rows stored as fp32 (kind 0)
 * or words. */
static void run_split(fp4_backend *be, const fp4_qconfig *cfgs, int n, const void *rows,
                      fp4_words kind, int64_t len, int64_t a, int64_t b, fp4_metrics *out)
{
    const size_t esz = kind ? 2 : sizeof(float);
    const unsigned char *p = rows;
    fp4_analysis *an;
    assert_int_equal(fp4_analysis_begin(be, cfgs, n, R, len, &an), FP4_OK);
    if (fp4_analysis_needs_amax(an))
        for (int64_t r = 0; r < R; r += a) {
            const int64_t m = r + a <= R ? a : R - r;
            const void *at = p + (size_t)(r * len) * esz;
            assert_int_equal(kind ? fp4_analysis_amax_words(an, at, kind, m)
                                  : fp4_analysis_amax(an, at, m),
                             FP4_OK);
        }
    for (int64_t r = 0; r < R; r += b) {
        const int64_t m = r + b <= R ? b : R - r;
        const void *at = p + (size_t)(r * len) * esz;
        assert_int_equal(kind ? fp4_analysis_feed_words(an, at, kind, m)
                              : fp4_analysis_feed(an, at, m),
                         FP4_OK);
    }
    assert_int_equal(fp4_analysis_end(an, out), FP4_OK);
}

/* Rows the caller registers (fp4_backend_host_register, as the driver does with a tensor's
 * kept rows) are uploaded and widened once: the amax pass leaves them on the device and the
 * second pass quantizes from there. Every sum and count the same bits as through staging,
 * for bf16 and f16 words and fp32, every config, with second-pass slabs other than the
 * first's (16 then 32 rows; 48 then 16; 32 then 16: the last slab of the amax pass, 16 rows,
 * is the second pass's third). */
static void test_kept_on_device(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    static fp4_qconfig cfgs[512];
    const int n = make_configs(cfgs, 512);
    fill_words();
    fp4_backend *gpu;
    assert_int_equal(fp4_backend_open(FP4_DEVICE_CUDA, 0, &gpu), FP4_OK);
    fp4_metrics *ref = calloc((size_t)n, sizeof *ref), *got = calloc((size_t)n, sizeof *got);
    assert_true(ref && got);
    static const int64_t splits[][2] = {{16, 16}, {16, 32}, {48, 16}, {32, 16}};
    for (int k = 0; k < 3; k++) {
        const fp4_words kind = k == 0 ? FP4_WORDS_BF16 : k == 1 ? FP4_WORDS_F16 : (fp4_words)0;
        void *rows = k == 0 ? (void *)wbf : k == 1 ? (void *)wf16 : (void *)data1;
        const size_t bytes = (size_t)R * L1 * (kind ? 2 : sizeof(float));
        run_split(gpu, cfgs, n, rows, kind, L1, 16, 16, ref); /* not registered: staged */
        fp4_backend_host_register(gpu, rows, bytes);
        for (size_t q = 0; q < sizeof splits / sizeof splits[0]; q++) {
            run_split(gpu, cfgs, n, rows, kind, L1, splits[q][0], splits[q][1], got);
            for (int c = 0; c < n; c++) {
                char what[96];
                snprintf(what, sizeof what, "%s kept, slabs %lld/%lld, config %d",
                         k == 0 ? "bf16" : k == 1 ? "f16" : "fp32", (long long)splits[q][0],
                         (long long)splits[q][1], c);
                int ex = 0;
                compare_metrics(&ref[c], &got[c], what, &ex);
                if (!ex) fail_msg("%s: kept on the device vs staged: sums differ", what);
            }
        }
        fp4_backend_host_unregister(gpu, rows);
    }
    print_message("[ INFO     ] kept rows on the device: %d configs x bf16, f16, fp32 x 4 slab "
                  "splits == staged, bit for bit\n", n);
    fp4_backend_close(gpu);
    free(ref);
    free(got);
}

/* The device widening: every bf16 and f16 pattern gives io/widen.c's bits (host order; and
 * big-endian words swapped by the host give the same), also at a length not a multiple of 8. */
static void test_widen16_device(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
#ifdef FP4_HAVE_CUDA
    enum { N = 65536 + 5 };
    uint16_t *h = malloc(N * 2), *hs = malloc(N * 2);
    float *ref = malloc(N * 4), *refs = malloc(N * 4), *got = malloc(N * 4);
    assert_true(h && hs && ref && refs && got);
    for (int i = 0; i < N; i++) {
        h[i] = (uint16_t)(i * 40503u); /* every pattern once in the first 65536 (odd multiplier) */
        hs[i] = __builtin_bswap16(h[i]);
    }
    void *dw;
    float *dout;
    assert_int_equal(cudaMalloc(&dw, N * 2), 0);
    assert_int_equal(cudaMalloc((void **)&dout, N * 4), 0);
    assert_int_equal(cudaMemcpy(dw, h, N * 2, cudaMemcpyHostToDevice), 0);
    for (int bf = 0; bf < 2; bf++) {
        const fp4_stored st = bf ? FP4_STORED_BF16 : FP4_STORED_F16;
        assert_true(fp4_widen(st, false, h, ref, N));
        assert_true(fp4_widen(st, true, hs, refs, N));
        assert_int_equal(cudaMemset(dout, 0x5a, N * 4), 0);
        assert_int_equal(fp4k_widen16(dw, bf, dout, N, NULL), 0);
        assert_int_equal(cudaMemcpy(got, dout, N * 4, cudaMemcpyDeviceToHost), 0);
        for (int i = 0; i < N; i++) {
            uint32_t a, b, c;
            memcpy(&a, &ref[i], 4);
            memcpy(&b, &got[i], 4);
            memcpy(&c, &refs[i], 4);
            if (a != b || a != c)
                fail_msg("%s 0x%04x: host 0x%08x, device 0x%08x, swapped host 0x%08x",
                         bf ? "bf16" : "f16", h[i], a, b, c);
        }
    }
    print_message("[ INFO     ] device widening: all 65,536 f16 and bf16 patterns as io/widen.c\n");
    cudaFree(dw);
    cudaFree(dout);
    free(h);
    free(hs);
    free(ref);
    free(refs);
    free(got);
#endif
}

/* fp4k_ordered_sums: every field's partials added to its running sum in chunk order, the bits
 * of the host's chain (metrics.h fp4_fsums_add chunk by chunk), over tile edges (2048 chunks),
 * an empty entry, from a non-zero start, and more entries than one launch takes. The values
 * are chosen so that any other order gives other bits (checked: the reverse order differs). */
static void test_ordered_sums_device(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
#ifdef FP4_HAVE_CUDA
    enum { NE = FP4K_OSUM_MAX + 9, MAXF = 13 };
    static const int64_t nchs[] = {1, 2047, 2048, 2049, 5000, 0, 4097, 3};
    fp4k_osum e[NE];
    double *hp[NE], *ha0[NE], *dp[NE], *da[NE];
    uint64_t s = 99;
    int reorder = 0; /* fields where the reverse order gives other bits */
    for (int j = 0; j < NE; j++) {
        const int nsums = j % 3 == 0 ? FP4K_NSUMS : j % 3 == 1 ? FP4K_NTSUMS : 1;
        const int64_t nch = nchs[j % 8];
        const size_t np = (size_t)(nch > 0 ? nch : 1) * (size_t)nsums;
        hp[j] = malloc(np * sizeof(double));
        ha0[j] = malloc(MAXF * sizeof(double));
        assert_true(hp[j] && ha0[j]);
        for (size_t i = 0; i < np; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            const double u = (double)(s >> 11) / 9007199254740992.0 - 0.5;
            const int ex = (int)((s >> 3) % 90) - 45; /* magnitudes 2^-45 .. 2^44 */
            hp[j][i] = i % 97 == 5 ? -0.0 : ldexp(u, ex);
        }
        for (int f = 0; f < MAXF; f++) ha0[j][f] = j % 2 ? 0.0 : ldexp(1.0 + f, 20);
        assert_int_equal(cudaMalloc((void **)&dp[j], np * sizeof(double)), 0);
        assert_int_equal(cudaMalloc((void **)&da[j], MAXF * sizeof(double)), 0);
        assert_int_equal(cudaMemcpy(dp[j], hp[j], np * sizeof(double), cudaMemcpyHostToDevice), 0);
        assert_int_equal(cudaMemcpy(da[j], ha0[j], MAXF * sizeof(double), cudaMemcpyHostToDevice),
                         0);
        e[j] = (fp4k_osum){dp[j], da[j], nch, nsums};
    }
    /* in two calls: a running sum goes on from where the first left it */
    assert_int_equal(fp4k_ordered_sums(e, NE, NULL), 0);
    assert_int_equal(fp4k_ordered_sums(e, NE, NULL), 0);
    assert_int_equal(cudaDeviceSynchronize(), 0);
    for (int j = 0; j < NE; j++) {
        double got[MAXF];
        assert_int_equal(cudaMemcpy(got, da[j], sizeof got, cudaMemcpyDeviceToHost), 0);
        for (int f = 0; f < e[j].nsums; f++) {
            double a = ha0[j][f], r = ha0[j][f];
            for (int pass = 0; pass < 2; pass++)
                for (int64_t i = 0; i < e[j].nch; i++) {
                    a += hp[j][i * e[j].nsums + f];
                    r += hp[j][(e[j].nch - 1 - i) * e[j].nsums + f];
                }
            if (memcmp(&a, &r, sizeof a) != 0) reorder++;
            if (memcmp(&a, &got[f], sizeof a) != 0)
                fail_msg("entry %d (%lld chunks x %d) field %d: host %.17g, device %.17g", j,
                         (long long)e[j].nch, e[j].nsums, f, a, got[f]);
        }
        cudaFree(dp[j]);
        cudaFree(da[j]);
        free(hp[j]);
        free(ha0[j]);
    }
    assert_true(reorder > 100); /* the data tell one order from another */
    print_message("[ INFO     ] ordered sums: %d entries as the host's chain (%d fields order-"
                  "sensitive)\n", NE, reorder);
#endif
}

/* One analysis of rows x len values d in slabs of 16 rows, the rows [z0, z1) and [t0, rows)
 * (zeros in d) in one call each: given as fp4_analysis_amax_zero/feed_zero (never-written
 * storage) when give_zero, else fed as values. */
static void run_zero(fp4_backend *be, const fp4_qconfig *cfgs, int n, const float *d,
                     int64_t rows, int64_t len, int64_t z0, int64_t z1, int64_t t0,
                     bool give_zero, fp4_metrics *out)
{
    fp4_analysis *an;
    assert_int_equal(fp4_analysis_begin(be, cfgs, n, rows, len, &an), FP4_OK);
    for (int pass = fp4_analysis_needs_amax(an) ? 0 : 1; pass < 2; pass++)
        for (int64_t r = 0; r < rows;) {
            const bool zero = (r >= z0 && r < z1) || r >= t0;
            const int64_t end = r < z0 ? z0 : r < z1 ? z1 : r < t0 ? t0 : rows;
            const int64_t k = zero ? end - r : (end - r < 16 ? end - r : 16);
            fp4_status st;
            if (zero && give_zero)
                st = pass ? fp4_analysis_feed_zero(an, k) : fp4_analysis_amax_zero(an, k);
            else st = pass ? fp4_analysis_feed(an, d + r * len, k) : fp4_analysis_amax(an, d + r * len, k);
            assert_int_equal(st, FP4_OK);
            r += k;
        }
    assert_int_equal(fp4_analysis_end(an, out), FP4_OK);
}

/* Rows of zeros given without values (fp4_analysis_feed_zero: the CUDA backend counts them as
 * the CPU's does, without uploading them) give on the GPU the bits of the same zeros written
 * out and fed, and the CPU's feed_zero counts with its sums within test_metrics_parity's
 * parity: every config family, a 16-row run in the middle and a tail of 11 rows (fed under
 * weight_2d, counted row by row without it), rows of 300 (padded) and of 1024, the zero counts
 * measured once per tensor and reused by the next tensor's analysis. */
static void test_zero_rows_parity(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    static fp4_qconfig all[512], flat[512];
    const int n = make_configs(all, 512);
    int nf = 0;
    for (int c = 0; c < n; c++)
        if (!all[c].weight_2d) flat[nf++] = all[c];
    assert_true(nf > 0 && nf < n);
    fp4_metrics *mc = calloc((size_t)n, sizeof *mc), *mg = calloc((size_t)n, sizeof *mg),
                *mw = calloc((size_t)n, sizeof *mw);
    static float z1[R * L1], z2[R * L2];
    assert_true(mc && mg && mw);
    fp4_backend *cpu, *gpu;
    assert_int_equal(fp4_backend_open(FP4_DEVICE_CPU, 0, &cpu), FP4_OK);
    assert_int_equal(fp4_backend_open(FP4_DEVICE_CUDA, 0, &gpu), FP4_OK);
    int exact = 0, total = 0;
    for (int set = 0; set < 2; set++) {
        const fp4_qconfig *cf = set ? flat : all;
        const int m = set ? nf : n;
        /* weight_2d: the tail begins at a tile (32) in a tensor of 43 rows, whose last tile is
         * short; without: at row 37, after 5 rows of values */
        const int64_t rows = set ? R : 43, t0 = set ? 37 : 32;
        for (int t = 0; t < 2; t++) {
            float *d = t ? z2 : z1;
            const int64_t len = t ? L2 : L1;
            memcpy(d, t ? data2 : data1, (size_t)(R * len) * sizeof *d);
            memset(d + 16 * len, 0, (size_t)(16 * len) * sizeof *d);
            memset(d + t0 * len, 0, (size_t)((rows - t0) * len) * sizeof *d);
            run_zero(gpu, cf, m, d, rows, len, 16, 32, t0, false, mw);
            run_zero(gpu, cf, m, d, rows, len, 16, 32, t0, true, mg);
            run_zero(cpu, cf, m, d, rows, len, 16, 32, t0, true, mc);
            for (int c = 0; c < m; c++) {
                char what[96];
                snprintf(what, sizeof what, "zero rows, %s, tensor %d, config %d",
                         set ? "no weight_2d" : "all configs", t, c);
                if (memcmp(&mg[c], &mw[c], sizeof mg[c]) != 0) {
                    int ex = 0;
                    compare_metrics(&mw[c], &mg[c], what, &ex);
                    fail_msg("%s: gpu feed_zero vs gpu zeros fed: not bit-identical", what);
                }
                compare_metrics(&mc[c], &mg[c], what, &exact);
                total++;
            }
        }
    }
    print_message("[ INFO     ] zero rows: gpu feed_zero == gpu zeros fed bit for bit; counts "
                  "as the cpu's, %d of %d bit-identical in every sum\n", exact, total);
    fp4_backend_close(cpu);
    fp4_backend_close(gpu);
    free(mc);
    free(mg);
    free(mw);
}

/* --device cuda never falls back silently: without a GPU it is FP4_ERR_DEVICE. */
static void test_cuda_requested(void **state)
{
    (void)state;
    fp4_backend *be = NULL;
    fp4_status st = fp4_backend_open(FP4_DEVICE_CUDA, 0, &be);
    if (gpu_present()) {
        assert_int_equal(st, FP4_OK);
        assert_string_equal(fp4_backend_name(be), "cuda");
        fp4_backend_close(be);
    } else {
        assert_int_equal(st, FP4_ERR_DEVICE);
        assert_null(be);
        assert_non_null(strstr(fp4_last_error(), "CUDA requested but"));
    }
    assert_int_equal(fp4_backend_open(FP4_DEVICE_AUTO, 0, &be), FP4_OK);
    assert_string_equal(fp4_backend_name(be), gpu_present() ? "cuda" : "cpu");
    fp4_backend_close(be);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuda_requested),
        cmocka_unit_test(test_codes_scales_parity),
        cmocka_unit_test(test_metrics_parity),
        cmocka_unit_test(test_widen16_device),
        cmocka_unit_test(test_ordered_sums_device),
        cmocka_unit_test(test_words_parity),
        cmocka_unit_test(test_kept_on_device),
        cmocka_unit_test(test_zero_rows_parity),
    };
    return cmocka_run_group_tests_name("gpu_parity", tests, setup, NULL);
}
