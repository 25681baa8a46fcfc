/* blas.cu — the fp64 reference products of SPEC §6 on the GPU through cuBLAS: C = A · Bᵀ with
 * row-major operands, for the gemm command's GPU path. */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels.h"

extern "C" int fp4k_blas_create(void **handle)
{
    cublasHandle_t h = nullptr;
    cublasStatus_t s = cublasCreate(&h);
    *handle = h;
    return s == CUBLAS_STATUS_SUCCESS ? 0 : (int)cudaErrorUnknown;
}

extern "C" void fp4k_blas_destroy(void *handle)
{
    if (handle) cublasDestroy((cublasHandle_t)handle);
}

extern "C" int fp4k_dgemm_abt(void *handle, const double *a, const double *b, double *c,
                              int64_t m, int64_t n, int64_t k, void *stream)
{
    /* row-major C (m x n) is column-major Cᵀ = B · Aᵀ: B is column-major k x n (op T), A is
     * column-major k x m (op N) */
    cublasHandle_t h = (cublasHandle_t)handle;
    if (cublasSetStream(h, (cudaStream_t)stream) != CUBLAS_STATUS_SUCCESS)
        return (int)cudaErrorUnknown;
    const double one = 1.0, zero = 0.0;
    cublasStatus_t s = cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b,
                                   (int)k, a, (int)k, &zero, c, (int)n);
    return s == CUBLAS_STATUS_SUCCESS ? 0 : (int)cudaErrorUnknown;
}
