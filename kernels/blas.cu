/* blas.cu — the fp64 reference products of SPEC §6 on the GPU through cuBLAS: C = A · Bᵀ with
 * row-major operands, for the gemm command's GPU path. cuBLAS (several hundred MB with
 * cuBLASLt) is loaded with dlopen at the first fp4k_blas_create, not linked: every other run of
 * fp4diag starts without it (and runs under valgrind without reading its symbols). */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>

#include "kernels.h"

#define FP4K_STR2(x) #x
#define FP4K_STR(x) FP4K_STR2(x)

namespace {
void *g_lib = nullptr;
char g_err[512];
decltype(&cublasCreate_v2) p_create;
decltype(&cublasDestroy_v2) p_destroy;
decltype(&cublasSetStream_v2) p_set_stream;
decltype(&cublasDgemm_v2) p_dgemm;

/* 0, or -1 with g_err set. Not thread-safe (one gemm run at a time calls it). */
int load_cublas()
{
    if (g_lib) return 0;
    const char *names[] = {"libcublas.so." FP4K_STR(CUBLAS_VER_MAJOR), "libcublas.so"};
    const char *why = "";
    for (const char *n : names) {
        if ((g_lib = dlopen(n, RTLD_NOW | RTLD_LOCAL))) break;
        const char *e = dlerror();
        if (n == names[0] && e) snprintf(g_err, sizeof g_err, "%s", e);
    }
    if (!g_lib) {
        char first[512];
        snprintf(first, sizeof first, "%s", g_err);
        snprintf(g_err, sizeof g_err, "cannot load cuBLAS (%s)", first);
        return -1;
    }
    p_create = (decltype(p_create))dlsym(g_lib, "cublasCreate_v2");
    p_destroy = (decltype(p_destroy))dlsym(g_lib, "cublasDestroy_v2");
    p_set_stream = (decltype(p_set_stream))dlsym(g_lib, "cublasSetStream_v2");
    p_dgemm = (decltype(p_dgemm))dlsym(g_lib, "cublasDgemm_v2");
    if (!p_create || !p_destroy || !p_set_stream || !p_dgemm) why = "a cuBLAS v2 entry point is missing";
    if (why[0]) {
        snprintf(g_err, sizeof g_err, "cannot use cuBLAS: %s", why);
        dlclose(g_lib);
        g_lib = nullptr;
        return -1;
    }
    return 0;
}
} // namespace

extern "C" const char *fp4k_blas_last_error(void) { return g_err; }

extern "C" int fp4k_blas_create(void **handle)
{
    *handle = nullptr;
    if (load_cublas() != 0) return -1;
    cublasHandle_t h = nullptr;
    cublasStatus_t s = p_create(&h);
    if (s != CUBLAS_STATUS_SUCCESS) {
        snprintf(g_err, sizeof g_err, "cublasCreate failed (status %d)", (int)s);
        return -1;
    }
    *handle = h;
    return 0;
}

extern "C" void fp4k_blas_destroy(void *handle)
{
    if (handle && g_lib) p_destroy((cublasHandle_t)handle);
}

extern "C" int fp4k_dgemm_abt(void *handle, const double *a, const double *b, double *c,
                              int64_t m, int64_t n, int64_t k, void *stream)
{
    /* row-major C (m x n) is column-major Cᵀ = B · Aᵀ: B is column-major k x n (op T), A is
     * column-major k x m (op N) */
    cublasHandle_t h = (cublasHandle_t)handle;
    if (!g_lib || !h) return (int)cudaErrorInvalidValue;
    if (p_set_stream(h, (cudaStream_t)stream) != CUBLAS_STATUS_SUCCESS)
        return (int)cudaErrorUnknown;
    const double one = 1.0, zero = 0.0;
    cublasStatus_t s = p_dgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b,
                               (int)k, a, (int)k, &zero, c, (int)n);
    return s == CUBLAS_STATUS_SUCCESS ? 0 : (int)cudaErrorUnknown;
}
