/* audit.cu — already-quantized exports on the device (SPEC §11, audit --device cuda): the
 * stored packed codes and block-scale bytes decoded in the producer's fp32 order (common.h
 * fp4c_qdec_value, round-to-nearest intrinsics), and the audit's fp64 sums of the decode
 * against its source per segment, in the CPU's order (run/audit.c). */
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels.h"

namespace {

__global__ void qdecode_kernel(const fp4c_qdec *__restrict__ dec, const uint8_t *packed,
                               const uint8_t *scales, float global, int64_t row0, int64_t n,
                               float *__restrict__ out)
{
    const int64_t K = dec->K;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = fp4c_qdec_value(dec, packed, scales, global, row0 + i / K, i % K);
}

/* One thread per segment: the segment's elements in order, each measure from +0 (the CPU's
 * order, run/audit.c seg_sums); the non-amax sums per block of the segment. */
__global__ void audit_sums_kernel(const fp4c_qdec *__restrict__ dec, int use_recip, int use_swz,
                                  const uint8_t *packed, const uint8_t *scales, float global,
                                  int64_t row0, int64_t nrows, const float *__restrict__ x,
                                  double *__restrict__ seg)
{
    const fp4c_qdec *d = &dec[0];
    const int64_t K = d->K, nseg = (K + FP4C_AUDIT_SEG - 1) / FP4C_AUDIT_SEG;
    const int64_t total = nrows * nseg;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const int64_t r = i / nseg, k0 = (i % nseg) * FP4C_AUDIT_SEG;
        const int64_t k1 = k0 + FP4C_AUDIT_SEG < K ? k0 + FP4C_AUDIT_SEG : K;
        const float *xr = x + r * K;
        const int64_t row = row0 + r;
        double s[FP4C_AS_N];
        for (int j = 0; j < FP4C_AS_N; j++) s[j] = 0.0;
        for (int64_t k = k0; k < k1; k++) {
            const float v = fp4c_qdec_value(d, packed, scales, global, row, k);
            fp4c_audit_acc(s + FP4C_AS_DECL, xr[k], v);
            fp4c_audit_acc(s + FP4C_AS_SWAP, xr[k],
                           fp4c_qdec_value(d, packed, scales, global, row, k ^ 1));
            if (use_recip)
                fp4c_audit_acc(s + FP4C_AS_RECIP, xr[k],
                               fp4c_qdec_value(&dec[1], packed, scales, global, row, k));
            if (use_swz)
                fp4c_audit_acc(s + FP4C_AS_SWZ, xr[k],
                               fp4c_qdec_value(&dec[2], packed, scales, global, row, k));
        }
        const int B = d->block;
        for (int64_t b0 = k0; b0 + B <= k1; b0 += B) {
            float a = 0.0f;
            int kk = 0;
            for (int j = 0; j < B; j++) {
                const float v = fabsf(xr[b0 + j]);
                if (isfinite(v) && v > a) a = v, kk = j;
            }
            for (int j = 0; j < B; j++)
                if (j != kk)
                    fp4c_audit_acc(s + FP4C_AS_NA, xr[b0 + j],
                                   fp4c_qdec_value(d, packed, scales, global, row, b0 + j));
        }
        double *o = seg + i * FP4C_AS_N;
        for (int j = 0; j < FP4C_AS_N; j++) o[j] = s[j];
    }
}

unsigned grid_for(int64_t n, int threads)
{
    int64_t b = (n + threads - 1) / threads;
    if (b < 1) b = 1;
    if (b > 65536) b = 65536; /* grid-stride beyond */
    return (unsigned)b;
}

} // namespace

extern "C" int fp4k_qdecode(const fp4c_qdec *dec, int64_t K, const uint8_t *packed,
                            const uint8_t *scales, float global, int64_t row0, int64_t nrows,
                            float *out, void *stream)
{
    if (nrows <= 0 || K <= 0) return 0;
    const int64_t n = nrows * K;
    qdecode_kernel<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(dec, packed, scales,
                                                                       global, row0, n, out);
    return (int)cudaGetLastError();
}

extern "C" int fp4k_audit_sums(const fp4c_qdec *dec, int64_t K, int use_recip, int use_swz,
                               const uint8_t *packed, const uint8_t *scales, float global,
                               int64_t row0, int64_t nrows, const float *x, double *seg,
                               void *stream)
{
    if (nrows <= 0 || K <= 0) return 0;
    /* one thread per segment: some thousands a slab, so small blocks */
    const int threads = 64;
    const int64_t nseg = nrows * ((K + FP4C_AUDIT_SEG - 1) / FP4C_AUDIT_SEG);
    audit_sums_kernel<<<grid_for(nseg, threads), threads, 0, (cudaStream_t)stream>>>(
        dec, use_recip, use_swz, packed, scales, global, row0, nrows, x, seg);
    return (int)cudaGetLastError();
}
