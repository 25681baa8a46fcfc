/* bench_engine.c — developer micro-benchmark and bit-identity check of the CPU engine through
 * backend.h: `bench_engine check` prints a hash of the raw metrics of many configs on fixed
 * data, and a line over block sizes 2..1024 (compare before/after an engine change;
 * `check-quick` the small shapes and the block line only, the same lines; the variant is
 * FP4DIAG_ISA's or the widest); `bench_engine time [MiB] [threads]` times one
 * config, six (e2m1,e1m2,int4 x RHT off/on), e2m1 + RHT, and e2m1 under nvfp4 and mxfp4
 * scales (wall time; with threads 1 the thread's CPU time unless BENCH_WALL is set); `bench_engine rht [reps]` times fp4_rht_forward's variants (plain C, AVX2,
 * AVX-512, dispatch) for n = 16..256, in place on 64 rows of 4096 (L2-resident, as in
 * fp4_qplan_prep), medians over interleaved repetitions. Not a test; built
 * by `make build/bench_engine`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "engine/engine.h"
#include "num/metrics.h"
#include "num/quant.h"
#include "num/rht.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}
static float nrand(void)
{
    double s = 0;
    for (int i = 0; i < 4; i++) s += urand();
    return (float)((s - 2.0) * 1.7320508);
}

static void fill(float *x, int64_t n, int specials)
{
    for (int64_t i = 0; i < n; i++) {
        float v = nrand();
        double u = urand();
        if (u < 0.001) v *= 40.0f;          /* outliers */
        else if (u < 0.002) v = 0.0f;       /* zeros */
        else if (u < 0.0025) v = -0.0f;
        else if (u < 0.003) v *= 1e-39f;    /* subnormal */
        if (specials && u > 0.99999) v = u > 0.999995 ? (float)(1.0 / 0.0) : (float)(0.0 / 0.0);
        x[i] = v;
    }
    /* a whole zero row region and a tiny-scale region */
    for (int64_t i = 0; i < 64 && i < n; i++) x[i] = 0.0f;
    for (int64_t i = 64; i < 128 && i < n; i++) x[i] *= 1e-44f;
}

static uint64_t h = 1469598103934665603ull;
static void hb(const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
}

static int hash_stats;
static void hash_metrics(const fp4_metrics *m)
{
    hb(&m->sum_x2, 8); hb(&m->sum_err2, 8); hb(&m->sum_xqx, 8); hb(&m->sum_xq2, 8);
    hb(&m->signed_err_sum, 8); hb(&m->signed_err_n, 8);
    hb(m->level_count, sizeof m->level_count); hb(m->level_err_sum, sizeof m->level_err_sum);
    hb(m->hist, sizeof m->hist);
    hb(&m->elements, 8 * 11);
    hb(&m->tensor_amax, 4);
    if (hash_stats) { /* BENCH_STATS=1: the recipe and block-scale statistics too */
        hb(&m->st_blocks, 8); hb(&m->st_count, 8); hb(&m->st_nonzero, 8);
        hb(&m->underflows, 8); hb(&m->max_abs_err, 8); hb(&m->sum_x2_na, 8);
        hb(&m->sum_err2_na, 8);
        hb(&m->hist_blocks, 8);
        hb(m->scale_hist, sizeof m->scale_hist);
        hb(m->amax_hist, sizeof m->amax_hist);
        hb(m->rerr_hist, sizeof m->rerr_hist);
        hb(&m->fos_blocks, 8); hb(&m->fos_blocks4, 8); hb(&m->fos_err2, 8);
    }
}

/* wall time; the calling thread's CPU time for `time MiB 1` (one thread runs on the caller):
 * what other jobs on a shared machine disturb least */
static clockid_t clock_id = CLOCK_MONOTONIC;
static double now(void)
{
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int run(fp4_backend *be, const fp4_qconfig *cfgs, int n, const float *x, int64_t rows,
               int64_t L, int64_t slab, fp4_metrics *out)
{
    fp4_analysis *an;
    if (fp4_analysis_begin(be, cfgs, n, rows, L, &an) != FP4_OK) return 1;
    if (fp4_analysis_needs_amax(an))
        for (int64_t r = 0; r < rows; r += slab)
            if (fp4_analysis_amax(an, x + r * L, rows - r < slab ? rows - r : slab)) return 1;
    for (int64_t r = 0; r < rows; r += slab)
        if (fp4_analysis_feed(an, x + r * L, rows - r < slab ? rows - r : slab)) return 1;
    return fp4_analysis_end(an, out) != FP4_OK;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "check";
    hash_stats = getenv("BENCH_STATS") && atoi(getenv("BENCH_STATS")) > 0;
    static fp4_rht_signs te16, te64, s256, s16;
    fp4_rht_signs_make("te", 16, &te16);
    fp4_rht_signs_make("te", 64, &te64);
    fp4_rht_signs_make("seed:7", 256, &s256);
    fp4_rht_signs_make("seed:3", 16, &s16);
    /* check-quick: the three small shapes only (the same lines as check prints for them): what
     * make check-aarch64 runs under qemu */
    const int quick = strcmp(mode, "check-quick") == 0;
    if (strcmp(mode, "check") == 0 || quick) {
        int threads = argc > 2 ? atoi(argv[2]) : 0;
        fp4_backend *be;
        if (fp4_backend_open(FP4_DEVICE_CPU, threads, &be)) return 1;
        fp4_qconfig cfgs[512];
        int n = 0;
        const fp4_format fmts[] = {{FP4_FMT_E2M1, 0}, {FP4_FMT_E1M2, 0}, {FP4_FMT_INT4, 0},
                                   {FP4_FMT_E3M0, 0}, {FP4_FMT_E2M1, 3}};
        const fp4_rht_signs *rhts[] = {NULL, &te16, &te64, &s256, &s16};
        for (int f = 0; f < 5; f++)
            for (int s = 0; s < 4; s++)
                for (int r = 0; r < 5; r++)
                    for (int rd = 0; rd < 2; rd++) {
                        fp4_qconfig c;
                        fp4_qconfig_default(&c);
                        c.format = fmts[f];
                        c.scale = (fp4_scale_mode)s;
                        c.rht = rhts[r];
                        c.rounding = rd ? FP4_ROUND_SR : FP4_ROUND_RTNE;
                        c.seed = 11;
                        c.stream = 5;
                        if (s == 0) c.block = r == 4 ? 64 : (f == 2 ? 32 : 16);
                        if (s == 2 && f == 0 && rd) c.mx_rule = FP4_MX_RCEIL;
                        if (s == 1 && r == 0 && rd == 0 && f == 0) c.weight_2d = true;
                        if (rd && f == 1) c.sr_bits = 8;
                        if (fp4_qconfig_check(&c) == FP4_OK) cfgs[n++] = c;
                    }
        const int64_t shapes[][2] = {{70, 1000}, {33, 4096}, {5, 7}, {40, 256}, {1, 300}};
        fp4_metrics out[512];
        for (int sh = 0; sh < 5; sh++) {
            int64_t R = shapes[sh][0], L = shapes[sh][1];
            float *x = malloc((size_t)(R * L) * sizeof *x);
            fill(x, R * L, sh != 3);
            if (quick && sh < 2) { /* the data still drawn: the later shapes get check's data */
                free(x);
                continue;
            }
            /* whole config list in one analysis (shared rotation paths), then one by one */
            if (run(be, cfgs, n, x, R, L, 16, out)) { fprintf(stderr, "run failed\n"); return 1; }
            uint64_t h0;
            h = 1469598103934665603ull;
            for (int c = 0; c < n; c++) hash_metrics(&out[c]);
            h0 = h;
            h = 1469598103934665603ull;
            for (int c = 0; c < n; c++) {
                fp4_metrics o1;
                if (run(be, &cfgs[c], 1, x, R, L, 32, &o1)) return 1;
                hash_metrics(&o1);
            }
            /* the scalar reference */
            uint64_t h1 = h;
            h = 1469598103934665603ull;
            for (int c = 0; c < n; c++) {
                float amax = 0.0f;
                fp4_metrics o2;
                fp4_metrics_init(&o2);
                if (fp4_needs_tensor_amax(&cfgs[c])) fp4_amax_rows(&cfgs[c], x, R, L, &amax);
                if (fp4_quantize_rows(&cfgs[c], amax, x, 0, R, L, NULL, &o2)) return 1;
                fp4_metrics_finish(&o2);
                hash_metrics(&o2);
            }
            printf("shape %lldx%lld configs %d: all %016llx single %016llx ref %016llx%s\n",
                   (long long)R, (long long)L, n, (unsigned long long)h0,
                   (unsigned long long)h1, (unsigned long long)h,
                   h0 == h1 && h1 == h ? "" : "  MISMATCH");
            free(x);
        }
        /* block sizes the list above lacks (2..1024: partial vectors and loader tiles of the
         * grouped kernels, long blocks), fp32 scales, every format, RHT off and on, on rows
         * that end in a partial group */
        const int blocks[] = {2, 4, 8, 128, 1024};
        int nbc = 0;
        for (int f = 0; f < 5; f++)
            for (int b = 0; b < 5; b++)
                for (int r = 0; r < 2; r++) {
                    fp4_qconfig c;
                    fp4_qconfig_default(&c);
                    c.format = fmts[f];
                    c.block = blocks[b];
                    c.rht = r ? &s16 : NULL;
                    if (fp4_qconfig_check(&c) == FP4_OK) cfgs[nbc++] = c;
                }
        {
            const int64_t R = 3, L = 2100;
            float *x = malloc((size_t)(R * L) * sizeof *x);
            fill(x, R * L, 1);
            fp4_metrics o1;
            if (run(be, cfgs, nbc, x, R, L, 2, out)) return 1;
            h = 1469598103934665603ull;
            for (int c = 0; c < nbc; c++) hash_metrics(&out[c]);
            const uint64_t h0 = h;
            h = 1469598103934665603ull;
            for (int c = 0; c < nbc; c++) {
                if (run(be, &cfgs[c], 1, x, R, L, 1, &o1)) return 1;
                hash_metrics(&o1);
            }
            const uint64_t h1 = h;
            /* the scalar reference (ref.c: a deq output takes that path) */
            h = 1469598103934665603ull;
            float *deq = malloc((size_t)(R * (L + 1024)) * sizeof *deq);
            for (int c = 0; c < nbc; c++) {
                fp4_qout qo = {deq, NULL, NULL};
                fp4_metrics_init(&o1);
                if (fp4_quantize_rows(&cfgs[c], 0.0f, x, 0, R, L, &qo, &o1)) return 1;
                fp4_metrics_finish(&o1);
                hash_metrics(&o1);
            }
            free(deq);
            printf("blocks %lldx%lld configs %d: all %016llx single %016llx ref %016llx%s\n",
                   (long long)R, (long long)L, nbc, (unsigned long long)h0,
                   (unsigned long long)h1, (unsigned long long)h,
                   h0 == h1 && h1 == h ? "" : "  MISMATCH");
            free(x);
        }
        fp4_backend_close(be);
        return 0;
    }
    if (strcmp(mode, "rht") == 0) {
        const int reps = argc > 2 ? atoi(argv[2]) : 15;
        enum { NE = 64 * 4096, MAXR = 101 };
        static float src[NE], buf[NE];
        static double t[5][4][MAXR];
        fill(src, NE, 0);
        const fp4_rht_impl im[4] = {FP4_RHT_IMPL_SCALAR, FP4_RHT_IMPL_AVX2, FP4_RHT_IMPL_AVX512,
                                    FP4_RHT_IMPL_AUTO};
        const char *nm[4] = {"scalar", "avx2", "avx512", "auto"};
        for (int r = 0; r < reps && r < MAXR; r++)
            for (int k = 0; k < 5; k++) {
                fp4_rht_signs sg;
                fp4_rht_signs_make("te", 16 << k, &sg);
                for (int v = 0; v < 4; v++) {
                    memcpy(buf, src, sizeof buf);
                    double t0 = now();
                    int ok = 1;
                    for (int it = 0; it < 8 && ok; it++) ok = fp4_rht_forward_impl(im[v], &sg, buf, buf, NE);
                    t[k][v][r] = ok ? (now() - t0) * 1e9 / (8.0 * NE) : -1.0;
                }
            }
        const int R = reps < MAXR ? reps : MAXR;
        printf("fp4_rht_forward ns/element, median of %d (ratio = scalar / variant)\n", R);
        for (int k = 0; k < 5; k++) {
            printf("n %3d:", 16 << k);
            double med[4];
            for (int v = 0; v < 4; v++) {
                double *a = t[k][v];
                for (int i = 1; i < R; i++) /* insertion sort */
                    for (int j = i; j > 0 && a[j] < a[j - 1]; j--) {
                        double c = a[j]; a[j] = a[j - 1]; a[j - 1] = c;
                    }
                med[v] = a[R / 2];
                if (med[v] < 0) printf("  %s n/a", nm[v]);
                else printf("  %s %.3f (x%.2f)", nm[v], med[v], med[0] / med[v]);
            }
            printf("\n");
        }
        return 0;
    }
    /* time */
    int64_t mib = argc > 2 ? atoll(argv[2]) : 64;
    int threads = argc > 3 ? atoi(argv[3]) : 0;
    if (threads == 1 && !getenv("BENCH_WALL")) clock_id = CLOCK_THREAD_CPUTIME_ID;
    const int64_t L = 4096, R = mib * 1024 * 1024 / 4 / L;
    float *x = malloc((size_t)(R * L) * sizeof *x);
    fill(x, R * L, 0);
    fp4_backend *be;
    if (fp4_backend_open(FP4_DEVICE_CPU, threads, &be)) return 1;
    fp4_qconfig six[6];
    const fp4_format fm[3] = {{FP4_FMT_E2M1, 0}, {FP4_FMT_E1M2, 0}, {FP4_FMT_INT4, 0}};
    for (int i = 0; i < 6; i++) {
        fp4_qconfig_default(&six[i]);
        six[i].format = fm[i % 3];
        six[i].rht = i >= 3 ? &te16 : NULL;
    }
    /* the other scale modes take the per-lane block parameters (group_params) */
    fp4_qconfig nv, mx;
    fp4_qconfig_default(&nv);
    nv.scale = FP4_SCALE_NVFP4;
    fp4_qconfig_default(&mx);
    mx.scale = FP4_SCALE_MXFP4;
    mx.block = 32;
    if (fp4_qconfig_check(&nv) || fp4_qconfig_check(&mx)) return 1;
    fp4_metrics out[6];
    const int64_t slab = 8192; /* rows per feed: 128 MiB */
    for (int k = 0; k < 3; k++) {
        double t0 = now();
        run(be, six, 1, x, R, L, slab, out);
        double t1 = now();
        run(be, six, 6, x, R, L, slab, out);
        double t2 = now();
        run(be, six + 3, 1, x, R, L, slab, out);
        double t3 = now();
        run(be, &nv, 1, x, R, L, slab, out + 1);
        double t4 = now();
        run(be, &mx, 1, x, R, L, slab, out + 1);
        double t5 = now();
        printf("%lld MiB, %s threads%s: one %.4f s (%.2f ns/elem), six %.4f s, rht-one %.4f s, "
               "nvfp4 %.4f s, mxfp4 %.4f s  sqnr %.4f\n", (long long)mib,
               threads ? argv[3] : "all", clock_id == CLOCK_THREAD_CPUTIME_ID ? " (thread CPU time)" : "", t1 - t0, (t1 - t0) * 1e9 / (double)(R * L), t2 - t1,
               t3 - t2, t4 - t3, t5 - t4, out[0].sqnr_db);
    }
    fp4_backend_close(be);
    free(x);
    return 0;
}
