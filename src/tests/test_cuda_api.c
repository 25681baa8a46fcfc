/* test_cuda_api.c — fp4d_analyze_cuda (include/fp4diag.h): a tensor in device memory analysed
 * where it lies gives the JSON of the same values analysed from host memory on the CPU, byte
 * for byte, for f32/f16/bf16, C-order rows read in place, an unaligned pointer, transposed,
 * negative and broadcast strides, another --axis, rank 0 and 3, an empty tensor, and a config
 * the kernels lack (the host reference's, its rows counted as copied); on a non-default stream
 * whose copy into the tensor is still running when the call is made (no synchronisation by the
 * caller); nothing copied to the host otherwise (the driver's count). Skips (cmocka skip) where
 * the build has no CUDA or the machine no GPU. */
#include "testutil.h"

#include <math.h>

#include "fp4diag.h"
#include "api/impl.h"
#include "backend/backend.h"
#include "io/memsrc.h"
#include "run/driver.h"

#ifdef FP4_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

enum { N = 48 * 300 };
static float h32[N];
static uint16_t h16[N], hbf[N];

#ifdef FP4_HAVE_CUDA
static int gpu_present(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
    return n > 0;
}
#endif

#define SKIP_WITHOUT_GPU()                                                                     \
    do {                                                                                       \
        if (!have_gpu) {                                                                       \
            print_message("[ SKIP     ] no CUDA GPU here or a build without CUDA: "            \
                          "fp4d_analyze_cuda not run\n");                                      \
            skip();                                                                            \
        }                                                                                      \
    } while (0)

static int have_gpu;

static uint16_t to_f16(float f)
{
    /* round to nearest even through a double: exact enough for test data in f16's range */
    uint32_t u;
    memcpy(&u, &f, 4);
    const uint32_t sign = (u >> 16) & 0x8000u;
    float a = fabsf(f);
    if (a < 6.1035156e-05f) return (uint16_t)(sign | (uint16_t)lrintf(a / 5.9604645e-08f));
    int e;
    double m = frexp(a, &e); /* a = m 2^e, m in [0.5, 1) */
    long q = lrint(m * 2048.0); /* 11 bits */
    if (q == 2048) q = 1024, e++;
    return (uint16_t)(sign | (uint32_t)((e + 14) << 10) | (uint32_t)(q - 1024));
}

static int setup(void **state)
{
    (void)state;
    uint64_t s = 99;
    for (int i = 0; i < N; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(s >> 11) / 9007199254740992.0;
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double v = (double)(s >> 11) / 9007199254740992.0;
        double g = sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
        h32[i] = (float)(i % 61 == 0 ? g * 20.0 : g);
        uint32_t b;
        memcpy(&b, &h32[i], 4);
        hbf[i] = (uint16_t)(b >> 16);
        h16[i] = to_f16(h32[i]);
    }
    h32[77] = NAN;
    h32[500] = 0.0f;
#ifdef FP4_HAVE_CUDA
    have_gpu = gpu_present();
#endif
    return 0;
}

#ifdef FP4_HAVE_CUDA
/* The JSON of view v over host memory `host` under opts on the CPU, and of the same view over
 * device memory `dev` through fp4d_analyze_cuda on `stream`: equal. */
static void same(const char *opts, fp4d_tensor_view v, const void *host, const void *dev,
                 void *stream)
{
    char cpu_opts[256], msg[FP4T_MSG_SIZE];
    snprintf(cpu_opts, sizeof cpu_opts, "%s --device cpu", opts);
    fp4d_config *cc = NULL, *gc = NULL;
    assert_int_equal(fp4d_config_parse(cpu_opts, &cc), FP4D_OK);
    assert_int_equal(fp4d_config_parse(opts, &gc), FP4D_OK);
    fp4d_result *a = NULL, *b = NULL;
    v.data = host;
    v.memory = FP4D_MEM_HOST;
    assert_int_equal(fp4d_analyze_memory(&v, cc, &a), FP4D_OK);
    v.data = dev;
    v.memory = FP4D_MEM_CUDA;
    fp4d_status st = fp4d_analyze_cuda(&v, gc, stream, &b);
    if (st != FP4D_OK) {
        snprintf(msg, sizeof msg, "%s: %s", opts, fp4d_last_error());
        print_message("%s\n", msg);
        fail();
    }
    if (strcmp(fp4d_result_json(a), fp4d_result_json(b)) != 0) {
        print_message("%s\nCPU:\n%.600s\nGPU:\n%.600s\n", opts, fp4d_result_json(a),
                      fp4d_result_json(b));
        fail();
    }
    fp4d_result_free(a);
    fp4d_result_free(b);
    fp4d_config_free(cc);
    fp4d_config_free(gc);
}
#endif

static void test_views_equal_cpu(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
#ifdef FP4_HAVE_CUDA
    void *d32 = NULL, *d16 = NULL, *dbf = NULL, *dodd = NULL;
    assert_int_equal(cudaMalloc(&d32, sizeof h32), cudaSuccess);
    assert_int_equal(cudaMalloc(&dodd, sizeof h32 + 16), cudaSuccess);
    assert_int_equal(cudaMalloc(&d16, sizeof h16), cudaSuccess);
    assert_int_equal(cudaMalloc(&dbf, sizeof hbf), cudaSuccess);
    assert_int_equal(cudaMemcpy(d32, h32, sizeof h32, cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(cudaMemcpy((char *)dodd + 4, h32, sizeof h32, cudaMemcpyHostToDevice),
                     cudaSuccess); /* a copy at an address 4 bytes past 16-byte alignment */
    assert_int_equal(cudaMemcpy(d16, h16, sizeof h16, cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(cudaMemcpy(dbf, hbf, sizeof hbf, cudaMemcpyHostToDevice), cudaSuccess);
    const int64_t shape[2] = {48, 300}, tshape[2] = {300, 48}, tstr[2] = {1, 300};
    const int64_t neg[2] = {-300, 1}, bshape[2] = {7, 300}, bstr[2] = {0, 1};
    const int64_t shape3[3] = {4, 12, 300}, one[1] = {N}, zero[2] = {0, 300};
    const char *opts[] = {"--format nvfp4 --rht both", "--format e2m1,int4 --block 32",
                          "--format nvfp4 --axis 0", "--format mxfp4 --rht both --rht-size 64",
                          "--format nvfp4 --weight-2d", "--format e2m1 --block 512"};
    for (size_t k = 0; k < sizeof opts / sizeof *opts; k++) {
        const char *o = opts[k];
        fp4d_tensor_view v = {.name = "t", .dtype = FP4D_F32, .rank = 2, .shape = shape};
        same(o, v, h32, d32, NULL);                      /* rows in place */
        v.dtype = FP4D_BF16;
        same(o, v, hbf, dbf, NULL);                      /* widened where they lie */
        v.dtype = FP4D_F16;
        same(o, v, h16, d16, NULL);
        v.shape = tshape;                                /* transposed: gathered */
        v.strides = tstr;
        same(o, v, h16, d16, NULL);
        v.dtype = FP4D_F32;
        same(o, v, h32, d32, NULL);
        v.shape = shape;                                 /* rows backwards */
        v.strides = neg;
        same(o, v, h32 + 47 * 300, (float *)d32 + 47 * 300, NULL);
        v.shape = bshape;                                /* a broadcast row */
        v.strides = bstr;
        same(o, v, h32, d32, NULL);
        v.shape = shape;                                 /* an odd element offset */
        v.strides = NULL;
        same(o, v, h32, (char *)dodd + 4, NULL);
        v.rank = 3;
        v.shape = shape3;
        same(o, v, h32, d32, NULL);
        v.rank = 1;
        v.shape = one;
        if (!strstr(o, "weight")) same(o, v, h32, d32, NULL);
        v.rank = 0;                                      /* one scalar */
        if (!strstr(o, "weight") && !strstr(o, "axis")) same(o, v, h32 + 3, (float *)d32 + 3, NULL);
        v.rank = 2;
        v.shape = zero;                                  /* empty */
        same(o, v, h32, d32, NULL);
    }
    cudaFree(d32);
    cudaFree(d16);
    cudaFree(dbf);
    cudaFree(dodd);
#endif
}

/* A 64 MiB copy into the tensor on a non-blocking stream, the call right after it on that
 * stream: the analysis must see the copied values, not the zeros before. */
static void test_caller_stream(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
#ifdef FP4_HAVE_CUDA
    const int64_t n = (int64_t)16 << 20;
    float *h = NULL, *d = NULL;
    cudaStream_t s;
    assert_int_equal(cudaMallocHost((void **)&h, (size_t)n * 4), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&d, (size_t)n * 4), cudaSuccess);
    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    for (int64_t i = 0; i < n; i++) h[i] = h32[i % N] + (float)(i % 7);
    for (int rep = 0; rep < 3; rep++) {
        assert_int_equal(cudaMemset(d, 0, (size_t)n * 4), cudaSuccess);
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        assert_int_equal(cudaMemcpyAsync(d, h, (size_t)n * 4, cudaMemcpyHostToDevice, s),
                         cudaSuccess);
        const int64_t shape[2] = {n / 1024, 1024};
        fp4d_tensor_view v = {.name = "s", .dtype = FP4D_F32, .rank = 2, .shape = shape};
        same("--format nvfp4 --rht both", v, h, d, s);
    }
    cudaStreamDestroy(s);
    cudaFree(d);
    cudaFreeHost(h);
#endif
}

/* The driver's count of bytes copied to the host: 0 for configs the kernels cover, the rows
 * for one they lack (--block 512: the host reference). */
static void test_no_host_copy(void **state)
{
    (void)state;
    SKIP_WITHOUT_GPU();
#ifdef FP4_HAVE_CUDA
    void *d = NULL;
    assert_int_equal(cudaMalloc(&d, sizeof hbf), cudaSuccess);
    assert_int_equal(cudaMemcpy(d, hbf, sizeof hbf, cudaMemcpyHostToDevice), cudaSuccess);
    fp4_backend *be = NULL;
    assert_int_equal(fp4_backend_open(FP4_DEVICE_CUDA, 1, &be), FP4_OK);
    const int64_t shape[2] = {48, 300}, tstr[2] = {1, 300}, tshape[2] = {300, 48};
    const char *opts[] = {"--format nvfp4 --rht both", "--format e2m1 --block 512"};
    for (int k = 0; k < 2; k++) {
        for (int t = 0; t < 2; t++) {
            fp4d_config *c = NULL;
            assert_int_equal(fp4d_config_parse(opts[k], &c), FP4D_OK);
            fp4_source *src = NULL;
            assert_int_equal(fp4_source_open_memory("memory", "h", FP4_STORED_BF16, 2,
                                                    t ? tshape : shape, t ? tstr : NULL, d,
                                                    &src),
                             FP4_OK);
            fp4_run run;
            int64_t hb = -1;
            assert_int_equal(fp4_run_analysis_device(&c->cfg, src, be, d, t ? tstr : NULL, NULL,
                                                     &hb, &run),
                             FP4_OK);
            assert_int_equal(run.ntensors, 1);
            assert_int_equal(hb, k == 0 ? 0 : N * 4);
            fp4_run_free(&run);
            fp4_source_close(src);
            fp4d_config_free(c);
        }
    }
    fp4_backend_close(be);
    cudaFree(d);
#endif
}

/* Host memory, and a host pointer said to be CUDA memory: refused with a message. */
static void test_errors(void **state)
{
    (void)state;
    fp4d_config *c = NULL;
    assert_int_equal(fp4d_config_parse("--format nvfp4", &c), FP4D_OK);
    const int64_t shape[1] = {4};
    fp4d_tensor_view v = {.name = "e", .data = h32, .dtype = FP4D_F32, .rank = 1,
                          .shape = shape};
    fp4d_result *r = (fp4d_result *)1;
    assert_int_equal(fp4d_analyze_cuda(&v, c, NULL, &r), FP4D_ERR_USAGE);
    assert_null(r);
    assert_non_null(strstr(fp4d_last_error(), "memory: e: fp4d_analyze_cuda takes CUDA device memory"));
    v.memory = FP4D_MEM_CUDA;
#ifdef FP4_HAVE_CUDA
    if (have_gpu) {
        assert_int_equal(fp4d_analyze_cuda(&v, c, NULL, &r), FP4D_ERR_USAGE);
        assert_non_null(strstr(fp4d_last_error(), "memory: e: the data pointer is not CUDA"));
    }
#else
    assert_int_equal(fp4d_analyze_cuda(&v, c, NULL, &r), FP4D_ERR_DEVICE);
    assert_non_null(strstr(fp4d_last_error(), "memory: e: this library was built without CUDA"));
#endif
    fp4d_config_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_views_equal_cpu),
        cmocka_unit_test(test_caller_stream),
        cmocka_unit_test(test_no_host_copy),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
