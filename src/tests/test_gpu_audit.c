/* test_gpu_audit.c — the export decode of `audit` (SPEC §10, §11) on the host and the GPU:
 * common.h fp4c_qdec_value with io/quantized.c fp4_quant_qdec's tables gives fp4_quant_decode's
 * bits for every layout and producer, random packed bytes and every block-scale byte value
 * (E4M3 NaN 0x7F/0xFF, E8M0 0x00 and 0xFF, UE4M3 0x7F); the GPU's decode (fp4k_qdecode) and its
 * per-segment audit sums (fp4_backend_audit_sums) are the CPU's bit for bit. The GPU tests
 * skip (cmocka skip) where the build has no CUDA or the machine no GPU. */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "backend/backend.h"
#include "io/quantized.h"

#ifdef FP4_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels.h"
#define FP4_BUILD_CUDA "with"
#else
#define FP4_BUILD_CUDA "without"
#endif

enum { R = 128, K = 256, NV_CASES = 9 };

/* One layout of the matrix: a quantized tensor as fp4_quant_scan would describe it. */
typedef struct qcase {
    const char *what;
    fp4_qtensor q;
    float global;
} qcase;

static int make_case(int i, qcase *c)
{
    memset(c, 0, sizeof *c);
    fp4_qtensor *q = &c->q;
    q->rank = 2;
    q->dims[0] = R;
    q->dims[1] = K;
    q->rows = R;
    q->scale_layout = FP4_QS_FLAT;
    c->global = 1.0f;
    switch (i) {
    case 0: c->what = "modelopt nvfp4 flat"; q->format = FP4_QF_NVFP4;
        q->producer = FP4_QP_MODELOPT; c->global = 0.0123f; break;
    case 1: c->what = "modelopt nvfp4 swizzled"; q->format = FP4_QF_NVFP4;
        q->producer = FP4_QP_MODELOPT; q->scale_layout = FP4_QS_SWIZZLED; c->global = 3.7e-5f;
        break;
    case 2: c->what = "compressed-tensors nvfp4"; q->format = FP4_QF_NVFP4;
        q->producer = FP4_QP_COMPRESSED_TENSORS; c->global = 1234.567f; break;
    case 3: c->what = "compressed-tensors nvfp4 swizzled"; q->format = FP4_QF_NVFP4;
        q->producer = FP4_QP_COMPRESSED_TENSORS; q->scale_layout = FP4_QS_SWIZZLED;
        c->global = 3.0e7f; break;
    case 4: c->what = "modelopt mxfp4"; q->format = FP4_QF_MXFP4; q->producer = FP4_QP_MODELOPT;
        break;
    case 5: c->what = "compressed-tensors mxfp4"; q->format = FP4_QF_MXFP4;
        q->producer = FP4_QP_COMPRESSED_TENSORS; break;
    case 6: c->what = "gpt-oss mxfp4"; q->format = FP4_QF_MXFP4; q->producer = FP4_QP_GPT_OSS;
        break;
    case 7: c->what = "gguf mxfp4 (39)"; q->format = FP4_QF_MXFP4; q->producer = FP4_QP_GGUF;
        q->scale_layout = FP4_QS_GGUF; break;
    case 8: c->what = "gguf nvfp4 (40)"; q->format = FP4_QF_NVFP4; q->producer = FP4_QP_GGUF;
        q->scale_layout = FP4_QS_GGUF; c->global = 0.377f; break;
    default: return 0;
    }
    q->block = q->format == FP4_QF_NVFP4 ? 16 : 32;
    q->scale_cols = K / q->block;
    return 1;
}

/* The stored bytes of a case: random packed codes, the block-scale bytes cycling through every
 * value 0..255 (GGUF: the e / d bytes inside the blocks); *np, *ns their sizes. */
static void make_bytes(const qcase *c, uint8_t **packed, int64_t *np, uint8_t **scales,
                       int64_t *ns, uint64_t seed)
{
    const fp4_qtensor *q = &c->q;
    uint64_t s = seed;
#define RND() (s = s * 6364136223846793005ull + 1442695040888963407ull, (uint8_t)(s >> 56))
    if (q->scale_layout == FP4_QS_GGUF) {
        const int mx = q->format == FP4_QF_MXFP4;
        *np = *ns = mx ? (int64_t)R * (K / 32) * 17 : (int64_t)R * (K / 64) * 36;
        *packed = malloc((size_t)*np);
        assert_non_null(*packed);
        for (int64_t i = 0; i < *np; i++) (*packed)[i] = RND();
        int64_t g = 0; /* every scale byte value in turn */
        for (int64_t r = 0; r < R; r++)
            for (int64_t b = 0; b < q->scale_cols; b++, g++) {
                fp4c_qdec d;
                fp4_quant_qdec(q, &d);
                (*packed)[fp4c_qdec_scale_index(&d, r, b)] = (uint8_t)(g % 256);
            }
        *scales = *packed;
        return;
    }
    *np = (int64_t)R * K / 2;
    *ns = (int64_t)R * q->scale_cols;
    *packed = malloc((size_t)*np);
    *scales = malloc((size_t)*ns);
    assert_non_null(*packed);
    assert_non_null(*scales);
    for (int64_t i = 0; i < *np; i++) (*packed)[i] = RND();
    for (int64_t i = 0; i < *ns; i++) (*scales)[i] = (uint8_t)((i * 7 + (int64_t)(seed & 3)) % 256);
#undef RND
}

static void free_bytes(uint8_t *packed, uint8_t *scales)
{
    if (scales != packed) free(scales);
    free(packed);
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* The common decode, on the host, is the reference decode bit for bit (NaN payloads too). */
static void test_qdec_host(void **state)
{
    (void)state;
    float *ref = malloc((size_t)R * K * sizeof *ref);
    assert_non_null(ref);
    for (int i = 0; i < NV_CASES; i++) {
        qcase c;
        assert_true(make_case(i, &c));
        uint8_t *packed, *scales;
        int64_t np, ns;
        make_bytes(&c, &packed, &np, &scales, &ns, 99 + (uint64_t)i);
        fp4_quant_decode(&c.q, packed, scales, c.global, 0, R, ref);
        fp4c_qdec d;
        fp4_quant_qdec(&c.q, &d);
        int64_t bad = 0, nan = 0, seen[256] = {0};
        for (int64_t r = 0; r < R; r++)
            for (int64_t k = 0; k < K; k++) {
                const float v = fp4c_qdec_value(&d, packed, scales, c.global, r, k);
                bad += bits(v) != bits(ref[r * K + k]);
                nan += isnan(v);
                seen[scales[fp4c_qdec_scale_index(&d, r, k / d.block)]]++;
                assert_int_equal(fp4c_qdec_code(&d, packed, r, k),
                                 fp4_quant_code(&c.q, packed, r, k));
            }
        for (int b = 0; b < 256; b++) assert_true(seen[b] > 0); /* every scale byte decoded */
        if (bad) print_message("%s: %lld of %d differ\n", c.what, (long long)bad, R * K);
        assert_int_equal(bad, 0);
        /* the special bytes are there: E4M3 NaN (safetensors NVFP4), E8M0 0xFF (MXFP4) */
        if (c.q.scale_layout != FP4_QS_GGUF) assert_true(nan > 0);
        free_bytes(packed, scales);
    }
    free(ref);
}

/* A decode that differs from the reference is caught: a ModelOpt NVFP4 tensor read as
 * compressed-tensors (the global divided) disagrees (the test above can fail). */
static void test_qdec_host_detects(void **state)
{
    (void)state;
    qcase c;
    assert_true(make_case(0, &c));
    uint8_t *packed, *scales;
    int64_t np, ns;
    make_bytes(&c, &packed, &np, &scales, &ns, 5);
    float *ref = malloc((size_t)R * K * sizeof *ref);
    assert_non_null(ref);
    fp4_quant_decode(&c.q, packed, scales, c.global, 0, R, ref);
    fp4_qtensor o = c.q;
    o.producer = FP4_QP_COMPRESSED_TENSORS;
    fp4c_qdec d;
    fp4_quant_qdec(&o, &d);
    int64_t bad = 0;
    for (int64_t i = 0; i < (int64_t)R * K; i++)
        bad += bits(fp4c_qdec_value(&d, packed, scales, c.global, i / K, i % K)) != bits(ref[i]);
    assert_true(bad > R * K / 2);
    free(ref);
    free_bytes(packed, scales);
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

#define SKIP_WITHOUT_GPU()                                                                     \
    do {                                                                                       \
        if (!gpu_present()) {                                                                  \
            print_message("[ SKIP     ] no CUDA GPU here (build %s CUDA): the GPU decode of "   \
                          "audit not run\n",                                                   \
                          FP4_BUILD_CUDA);                                                     \
            skip();                                                                            \
        }                                                                                      \
    } while (0)

/* Equal bits, or both NaN (the GPU's NaN has its own payload; a sum with one is NaN either
 * way and the report says "nonfinite"). */
#ifdef FP4_HAVE_CUDA
static int same_float(float a, float b) { return bits(a) == bits(b) || (isnan(a) && isnan(b)); }
#endif
static int same_double(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

/* fp4k_qdecode on the device gives fp4_quant_decode's bits, every case, rows from an offset. */
static void test_qdecode_device(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
#ifdef FP4_HAVE_CUDA
    float *ref = malloc((size_t)R * K * sizeof *ref), *got = malloc((size_t)R * K * sizeof *got);
    assert_non_null(ref);
    assert_non_null(got);
    for (int i = 0; i < NV_CASES; i++) {
        qcase c;
        assert_true(make_case(i, &c));
        uint8_t *packed, *scales;
        int64_t np, ns;
        make_bytes(&c, &packed, &np, &scales, &ns, 1000 + (uint64_t)i);
        const int64_t row0 = 5, nr = R - 5;
        fp4_quant_decode(&c.q, packed, scales, c.global, row0, nr, ref);
        fp4c_qdec d;
        fp4_quant_qdec(&c.q, &d);
        uint8_t *dp, *ds;
        fp4c_qdec *dd;
        float *dout;
        assert_int_equal(cudaMalloc((void **)&dp, (size_t)np), cudaSuccess);
        assert_int_equal(cudaMalloc((void **)&ds, (size_t)ns), cudaSuccess);
        assert_int_equal(cudaMalloc((void **)&dd, sizeof d), cudaSuccess);
        assert_int_equal(cudaMalloc((void **)&dout, (size_t)R * K * sizeof(float)), cudaSuccess);
        assert_int_equal(cudaMemcpy(dp, packed, (size_t)np, cudaMemcpyHostToDevice), cudaSuccess);
        assert_int_equal(cudaMemcpy(ds, scales, (size_t)ns, cudaMemcpyHostToDevice), cudaSuccess);
        assert_int_equal(cudaMemcpy(dd, &d, sizeof d, cudaMemcpyHostToDevice), cudaSuccess);
        assert_int_equal(fp4k_qdecode(dd, K, dp, ds, c.global, row0, nr, dout, NULL), 0);
        assert_int_equal(cudaMemcpy(got, dout, (size_t)(nr * K) * sizeof(float),
                                    cudaMemcpyDeviceToHost),
                         cudaSuccess);
        int64_t bad = 0, nan = 0;
        for (int64_t j = 0; j < nr * K; j++) {
            bad += !same_float(got[j], ref[j]);
            nan += isnan(ref[j]);
        }
        print_message("[ INFO     ] %s: %lld values (%lld NaN) bit for bit: %s\n", c.what,
                      (long long)(nr * K), (long long)nan, bad ? "NO" : "yes");
        assert_int_equal(bad, 0);
        cudaFree(dp);
        cudaFree(ds);
        cudaFree(dd);
        cudaFree(dout);
        free_bytes(packed, scales);
    }
    free(ref);
    free(got);
#endif
}

/* The CPU's per-segment sums of the audit (run/audit.c's order) from decoded buffers. */
static void cpu_segs(const float *x, const float *dec, const float *rec, const float *swz,
                     int64_t nr, int block, double *seg)
{
    const int64_t nseg = (K + FP4C_AUDIT_SEG - 1) / FP4C_AUDIT_SEG;
    for (int64_t r = 0; r < nr; r++)
        for (int64_t j = 0; j < nseg; j++) {
            double *s = seg + (r * nseg + j) * FP4C_AS_N;
            memset(s, 0, FP4C_AS_N * sizeof *s);
            const int64_t k0 = j * FP4C_AUDIT_SEG,
                          k1 = k0 + FP4C_AUDIT_SEG < K ? k0 + FP4C_AUDIT_SEG : K;
            const float *xr = x + r * K, *dr = dec + r * K;
            for (int64_t k = k0; k < k1; k++) {
                fp4c_audit_acc(s + FP4C_AS_DECL, xr[k], dr[k]);
                fp4c_audit_acc(s + FP4C_AS_SWAP, xr[k], dr[k ^ 1]);
                if (rec) fp4c_audit_acc(s + FP4C_AS_RECIP, xr[k], rec[r * K + k]);
                if (swz) fp4c_audit_acc(s + FP4C_AS_SWZ, xr[k], swz[r * K + k]);
            }
            for (int64_t b0 = k0; b0 + block <= k1; b0 += block) {
                float a = 0.0f;
                int kk = 0;
                for (int t = 0; t < block; t++) {
                    const float v = fabsf(xr[b0 + t]);
                    if (isfinite(v) && v > a) a = v, kk = t;
                }
                for (int t = 0; t < block; t++)
                    if (t != kk) fp4c_audit_acc(s + FP4C_AS_NA, xr[b0 + t], dr[b0 + t]);
            }
        }
}

/* fp4_backend_audit_sums on the CUDA backend: the CPU's per-segment sums bit for bit, with
 * the other global-scale direction and the other scale layout, source values with NaN, inf,
 * zeros and subnormals; two slabs of one tensor (its bytes uploaded once). */
static void test_audit_sums_device(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
    fp4_backend *be = NULL;
    assert_int_equal(fp4_backend_open(FP4_DEVICE_CUDA, 0, &be), FP4_OK);
    assert_true(fp4_backend_audits(be));
    const int64_t nseg = (K + FP4C_AUDIT_SEG - 1) / FP4C_AUDIT_SEG;
    float *x = malloc((size_t)R * K * sizeof *x), *dec = malloc((size_t)R * K * sizeof *dec),
          *rec = malloc((size_t)R * K * sizeof *rec), *swz = malloc((size_t)R * K * sizeof *swz);
    double *want = malloc((size_t)(R * nseg * FP4C_AS_N) * sizeof *want),
           *got = malloc((size_t)(R * nseg * FP4C_AS_N) * sizeof *got);
    assert_true(x && dec && rec && swz && want && got);
    uint64_t s = 42;
    for (int64_t i = 0; i < (int64_t)R * K; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = ((float)(int64_t)(s >> 40) - 8388608.0f) * 1e-6f;
    }
    x[3] = NAN;
    x[K + 17] = -INFINITY;
    for (int j = 0; j < 64; j++) x[2 * K + j] = 0.0f;
    x[3 * K + 9] = 1e-41f;
    int64_t total = 0, exact = 0;
    for (int i = 0; i < NV_CASES; i++) {
        qcase c;
        assert_true(make_case(i, &c));
        uint8_t *packed, *scales;
        int64_t np, ns;
        make_bytes(&c, &packed, &np, &scales, &ns, 7 + (uint64_t)i);
        const bool nv = c.q.format == FP4_QF_NVFP4, gguf = c.q.scale_layout == FP4_QS_GGUF;
        fp4_qtensor recip = c.q, other = c.q;
        recip.producer = c.q.producer == FP4_QP_COMPRESSED_TENSORS ? FP4_QP_MODELOPT
                                                                   : FP4_QP_COMPRESSED_TENSORS;
        other.scale_layout = c.q.scale_layout == FP4_QS_FLAT ? FP4_QS_SWIZZLED : FP4_QS_FLAT;
        const bool try_recip = nv && !gguf, try_swz = nv && !gguf;
        fp4c_qdec qd[3];
        fp4_quant_qdec(&c.q, &qd[0]);
        fp4_quant_qdec(&recip, &qd[1]);
        fp4_quant_qdec(&other, &qd[2]);
        for (int half = 0; half < 2; half++) { /* two slabs: rows [0, 40), [40, R) */
            const int64_t row0 = half ? 40 : 0, nr = half ? R - 40 : 40;
            fp4_quant_decode(&c.q, packed, scales, c.global, row0, nr, dec);
            if (try_recip) fp4_quant_decode(&recip, packed, scales, c.global, row0, nr, rec);
            if (try_swz) fp4_quant_decode(&other, packed, scales, c.global, row0, nr, swz);
            cpu_segs(x + row0 * K, dec, try_recip ? rec : NULL, try_swz ? swz : NULL, nr,
                     c.q.block, want);
            const fp4_audit_slab sl = {.dec = {&qd[0], try_recip ? &qd[1] : NULL,
                                               try_swz ? &qd[2] : NULL},
                                       .tensor = i, .packed = packed, .scales = scales,
                                       .packed_bytes = np, .scale_bytes = ns,
                                       .global = c.global, .row0 = row0, .nrows = nr,
                                       .x = x + row0 * K, .seg = got};
            assert_int_equal(fp4_backend_audit_sums(be, &sl), FP4_OK);
            int64_t bad = 0;
            for (int64_t j = 0; j < nr * nseg * FP4C_AS_N; j++) {
                const int h = (int)(j % FP4C_AS_N) / 3 * 3;
                if ((h == FP4C_AS_RECIP && !try_recip) || (h == FP4C_AS_SWZ && !try_swz)) {
                    bad += got[j] != 0.0;
                    continue;
                }
                total++;
                exact += same_double(got[j], want[j]);
                bad += !same_double(got[j], want[j]);
            }
            if (bad) print_message("%s slab %d: %lld sums differ\n", c.what, half, (long long)bad);
            assert_int_equal(bad, 0);
        }
        free_bytes(packed, scales);
    }
    print_message("[ INFO     ] audit sums: %lld of %lld bit-identical\n", (long long)exact,
                  (long long)total);
    fp4_backend_close(be);
    free(x);
    free(dec);
    free(rec);
    free(swz);
    free(want);
    free(got);
}

/* The CPU backend does not audit on a device: the call says so (FP4_ERR_USAGE). */
static void test_cpu_does_not_audit(void **state)
{
    (void)state;
    fp4_backend *be = NULL;
    assert_int_equal(fp4_backend_open(FP4_DEVICE_CPU, 1, &be), FP4_OK);
    assert_false(fp4_backend_audits(be));
    fp4_audit_slab sl;
    memset(&sl, 0, sizeof sl);
    assert_int_equal(fp4_backend_audit_sums(be, &sl), FP4_ERR_USAGE);
    fp4_error_clear();
    fp4_backend_close(be);
    assert_false(fp4_backend_audits(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qdec_host),
        cmocka_unit_test(test_qdec_host_detects),
        cmocka_unit_test(test_cpu_does_not_audit),
        cmocka_unit_test(test_qdecode_device),
        cmocka_unit_test(test_audit_sums_device),
    };
    return cmocka_run_group_tests_name("gpu_audit", tests, NULL, NULL);
}
