/* gemm_blas.h — the fp64 products of the gemm command (SPEC §6): Z = A·Bᵀ and Ẑ = Â·B̂ᵀ on
 * row-major fp64 operands, through CBLAS dgemm on the CPU or cuBLAS dgemm on a CUDA GPU
 * (kernels/blas.cu). Both accumulate in fp64; their summation orders differ, so CPU and GPU
 * products agree to a few ulps, not bit for bit (SPEC §6 names both; §7's 1e-12 relative
 * bound on the sums holds with a wide margin). */
#ifndef FP4_GEMM_BLAS_H
#define FP4_GEMM_BLAS_H

#include <stdint.h>

#include "backend/backend.h"
#include "base/status.h"

typedef struct fp4_dgemm fp4_dgemm;

/* Open the product engine for dev: FP4_DEVICE_CPU → CBLAS; FP4_DEVICE_CUDA → cuBLAS on GPU 0,
 * FP4_ERR_DEVICE "CUDA requested but …" in a build without CUDA or without a usable GPU (never
 * a silent fall back); FP4_DEVICE_AUTO → cuBLAS when a GPU is usable, else CBLAS. */
fp4_status fp4_dgemm_open(fp4_device dev, fp4_dgemm **out);
void fp4_dgemm_close(fp4_dgemm *e); /* NULL is fine */

/* "cpu" (CBLAS) or "cuda" (cuBLAS): the report's device field. */
const char *fp4_dgemm_device(const fp4_dgemm *e);

/* The right-hand operands of the next products: b (cols × k) and bq (cols × kq), row-major
 * fp64, borrowed until the next fp4_dgemm_set_b (the GPU engine copies them to the device).
 * cols, k, kq <= INT_MAX (BLAS int dimensions): else FP4_ERR_INPUT. FP4_ERR_DEVICE on a CUDA
 * error, FP4_ERR_INTERNAL when out of memory. */
fp4_status fp4_dgemm_set_b(fp4_dgemm *e, const double *b, const double *bq, int64_t cols,
                           int64_t k, int64_t kq);

/* z = a · bᵀ (a: nr × k) and zq = aq · bqᵀ (aq: nr × kq), each nr × cols row-major, for the
 * operands given to fp4_dgemm_set_b (the GPU engine keeps its device buffers between calls
 * and grows them as needed). Errors as fp4_dgemm_set_b. */
fp4_status fp4_dgemm_products(fp4_dgemm *e, const double *a, const double *aq, int64_t nr,
                              double *z, double *zq);

/* OpenBLAS with runtime CPU dispatch (Debian's build) picks its kernels once, at load time,
 * from the CPUID model or from the environment variable OPENBLAS_CORETYPE. CPUs newer than the
 * library (Sapphire Rapids guests, for one) come out as "Prescott", an SSE3 kernel 3x slower
 * at dgemm than its AVX-512 one. When OPENBLAS_CORETYPE is unset, OpenBLAS reports such a
 * fallback core and this CPU has AVX-512 (AVX2), this returns the core to ask for,
 * "SkylakeX" ("Haswell"); otherwise NULL. Products agree either way within a few ulps.
 * Setting it takes a second start of the program, which is the program's business
 * (cmd/reexec.h fp4_reexec_openblas_core). */
const char *fp4_dgemm_openblas_core_wanted(void);

/* For commands that run no BLAS: ends the worker threads OpenBLAS (pthreads build) starts
 * when it is loaded, one per CPU but one. Each of them polls with sched_yield for about 2^28
 * cycles after the start (0.1 s of CPU per thread: 1.5 s of CPU on 16 cores, most of it
 * system time, beside the analysis' own threads) before it sleeps. OpenBLAS starts them
 * again should BLAS be called later. No-op with another BLAS (a weak reference to
 * OpenBLAS's blas_thread_shutdown_). */
void fp4_blas_threads_release(void);

#endif
