/* gemm_blas.c — CBLAS or cuBLAS behind gemm_blas.h. */
#include "run/gemm_blas.h"

#include <stdbool.h>

#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FP4_HAVE_CUDA_BACKEND
#include <cuda_runtime_api.h>

#include "kernels.h"
#endif

struct fp4_dgemm {
    int cuda;
    const double *b, *bq; /* CPU: borrowed */
    int64_t cols, k, kq;
#ifdef FP4_HAVE_CUDA_BACKEND
    void *handle;                       /* cublasHandle_t */
    double *d_b, *d_bq, *d_a, *d_aq, *d_z, *d_zq; /* device buffers */
    size_t cap_b, cap_bq, cap_a, cap_aq, cap_z, cap_zq; /* their sizes in doubles */
#endif
};

#ifdef FP4_HAVE_CUDA_BACKEND
static fp4_status cuda_err(const char *what, int err)
{
    return fp4_error(FP4_ERR_DEVICE, "gemm on cuda: %s failed (%s)", what,
                     fp4k_error_string(err));
}

/* *buf holds at least n doubles on the device. */
static fp4_status dev_reserve(double **buf, size_t *cap, size_t n)
{
    if (*cap >= n && *buf) return FP4_OK;
    cudaFree(*buf);
    *buf = NULL;
    *cap = 0;
    cudaError_t e = cudaMalloc((void **)buf, (n ? n : 1) * sizeof(double));
    if (e != cudaSuccess) {
        *buf = NULL;
        cudaGetLastError();
        return fp4_error(FP4_ERR_DEVICE, "gemm on cuda: cannot allocate %.1f MiB on the GPU (%s)",
                         (double)n * 8.0 / 1048576.0, cudaGetErrorString(e));
    }
    *cap = n;
    return FP4_OK;
}

static fp4_status upload(double *dst, const double *src, size_t n)
{
    cudaError_t e = cudaMemcpy(dst, src, n * sizeof(double), cudaMemcpyHostToDevice);
    return e == cudaSuccess ? FP4_OK : cuda_err("copy to the GPU", (int)e);
}

static fp4_status download(double *dst, const double *src, size_t n)
{
    cudaError_t e = cudaMemcpy(dst, src, n * sizeof(double), cudaMemcpyDeviceToHost);
    return e == cudaSuccess ? FP4_OK : cuda_err("copy from the GPU", (int)e);
}

static fp4_status cuda_open(fp4_dgemm *e)
{
    if (fp4k_device_count() <= 0)
        return fp4_error(FP4_ERR_DEVICE, "CUDA requested but no CUDA GPU/driver is available on "
                                         "this machine");
    if (fp4k_blas_create(&e->handle) != 0) {
        e->handle = NULL;
        return fp4_error(FP4_ERR_DEVICE, "CUDA requested but cuBLAS could not start: %s",
                         fp4k_blas_last_error());
    }
    e->cuda = 1;
    return FP4_OK;
}
#endif

fp4_status fp4_dgemm_open(fp4_device dev, fp4_dgemm **out)
{
    *out = NULL;
    fp4_dgemm *e = calloc(1, sizeof *e);
    if (!e) return fp4_error(FP4_ERR_INTERNAL, "gemm: out of memory");
    switch (dev) {
    case FP4_DEVICE_CPU: break;
    case FP4_DEVICE_CUDA: {
#ifdef FP4_HAVE_CUDA_BACKEND
        fp4_status st = cuda_open(e);
        if (st != FP4_OK) {
            free(e);
            return st;
        }
        break;
#else
        free(e);
        return fp4_error(FP4_ERR_DEVICE, "CUDA requested but this build has no CUDA support "
                                         "(rebuild with nvcc present, CUDA=1)");
#endif
    }
    case FP4_DEVICE_AUTO:
#ifdef FP4_HAVE_CUDA_BACKEND
        if (cuda_open(e) != FP4_OK) fp4_error_clear();
#endif
        break;
    default: free(e); return fp4_error(FP4_ERR_USAGE, "unknown device %d", (int)dev);
    }
    *out = e;
    return FP4_OK;
}

void fp4_dgemm_close(fp4_dgemm *e)
{
    if (!e) return;
#ifdef FP4_HAVE_CUDA_BACKEND
    if (e->cuda) {
        cudaFree(e->d_b);
        cudaFree(e->d_bq);
        cudaFree(e->d_a);
        cudaFree(e->d_aq);
        cudaFree(e->d_z);
        cudaFree(e->d_zq);
        fp4k_blas_destroy(e->handle);
    }
#endif
    free(e);
}

const char *fp4_dgemm_device(const fp4_dgemm *e) { return e && e->cuda ? "cuda" : "cpu"; }

fp4_status fp4_dgemm_set_b(fp4_dgemm *e, const double *b, const double *bq, int64_t cols,
                           int64_t k, int64_t kq)
{
    if (cols < 0 || k < 0 || kq < 0 || cols > INT_MAX || k > INT_MAX || kq > INT_MAX)
        return fp4_error(FP4_ERR_INPUT, "gemm: dimension too large for BLAS int (%lld x %lld)",
                         (long long)cols, (long long)(k > kq ? k : kq));
    e->b = b;
    e->bq = bq;
    e->cols = cols;
    e->k = k;
    e->kq = kq;
#ifdef FP4_HAVE_CUDA_BACKEND
    if (e->cuda) {
        FP4_TRY(dev_reserve(&e->d_b, &e->cap_b, (size_t)(cols * k)));
        FP4_TRY(dev_reserve(&e->d_bq, &e->cap_bq, (size_t)(cols * kq)));
        FP4_TRY(upload(e->d_b, b, (size_t)(cols * k)));
        FP4_TRY(upload(e->d_bq, bq, (size_t)(cols * kq)));
    }
#endif
    return FP4_OK;
}

fp4_status fp4_dgemm_products(fp4_dgemm *e, const double *a, const double *aq, int64_t nr,
                              double *z, double *zq)
{
    if (nr <= 0 || e->cols == 0) return FP4_OK;
    if (nr > INT_MAX) return fp4_error(FP4_ERR_INPUT, "gemm: %lld rows: too many for BLAS int",
                                       (long long)nr);
    const int m = (int)nr, n = (int)e->cols, k = (int)e->k, kq = (int)e->kq;
#ifdef FP4_HAVE_CUDA_BACKEND
    if (e->cuda) {
        FP4_TRY(dev_reserve(&e->d_a, &e->cap_a, (size_t)nr * (size_t)k));
        FP4_TRY(dev_reserve(&e->d_aq, &e->cap_aq, (size_t)nr * (size_t)kq));
        FP4_TRY(dev_reserve(&e->d_z, &e->cap_z, (size_t)nr * (size_t)n));
        FP4_TRY(dev_reserve(&e->d_zq, &e->cap_zq, (size_t)nr * (size_t)n));
        FP4_TRY(upload(e->d_a, a, (size_t)nr * (size_t)k));
        FP4_TRY(upload(e->d_aq, aq, (size_t)nr * (size_t)kq));
        int err = fp4k_dgemm_abt(e->handle, e->d_a, e->d_b, e->d_z, nr, n, k, NULL);
        if (!err) err = fp4k_dgemm_abt(e->handle, e->d_aq, e->d_bq, e->d_zq, nr, n, kq, NULL);
        if (err) return cuda_err("cuBLAS dgemm", err);
        FP4_TRY(download(z, e->d_z, (size_t)nr * (size_t)n));
        return download(zq, e->d_zq, (size_t)nr * (size_t)n);
    }
#endif
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0, a, k, e->b, k, 0.0, z, n);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, kq, 1.0, aq, kq, e->bq, kq, 0.0,
                zq, n);
    return FP4_OK;
}


/* OpenBLAS's own exported call (blas_server.c; it also serves fork handling): joins the
 * workers; its next threaded call starts them again. Weak: absent in other BLAS. */
extern int blas_thread_shutdown_(void) __attribute__((weak));

void fp4_blas_threads_release(void)
{
    if (blas_thread_shutdown_) blas_thread_shutdown_();
}

const char *fp4_dgemm_openblas_core_wanted(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
    if (getenv("OPENBLAS_CORETYPE")) return NULL; /* the user's choice, or our second run */
    const char *core = openblas_get_corename();
    /* the generic fallbacks of OpenBLAS's dynamic dispatch for an unknown model */
    static const char *const fallback[] = {"Prescott", "Core2", "Katmai", "Coppermine",
                                           "Northwood", "Banias", "unknown", NULL};
    bool generic = core == NULL;
    for (int i = 0; !generic && fallback[i]; i++) generic = strcmp(core, fallback[i]) == 0;
    if (!generic) return NULL;
    __builtin_cpu_init();
    const char *want = NULL;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        want = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        want = "Haswell";
    return want;
#else
    return NULL;
#endif
}
