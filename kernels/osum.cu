/* osum.cu — the per-chunk fp64 partials of fp4k_quantize / fp4k_stats added on the device into
 * running sums, one field at a time in chunk order (SPEC §7's fixed order): the additions the
 * host made when it merged the partials copied back (metrics.h fp4_fsums_add, in (row, chunk)
 * order), the same IEEE round-to-nearest double additions in the same order, so the same bits,
 * without copying the partials back or merging them on one host thread. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels.h"

namespace {

constexpr int OS_THREADS = 256;
constexpr int OS_TILE = 2048; /* chunks per tile: two tiles of doubles, 32 KiB of shared memory */

struct OsumP {
    fp4k_osum e[FP4K_OSUM_MAX];
};

/* Block (field f = blockIdx.x, entry blockIdx.y): thread 0 adds the field of every chunk to
 * acc[f] in chunk order, one tile at a time from shared memory, while the other threads load
 * the next tile. */
__global__ void __launch_bounds__(OS_THREADS) osum_kernel(OsumP p)
{
    const fp4k_osum e = p.e[blockIdx.y];
    const int f = (int)blockIdx.x;
    if (f >= e.nsums) return;
    __shared__ double buf[2][OS_TILE];
    const int64_t ntiles = (e.nch + OS_TILE - 1) / OS_TILE;
    const int tid = (int)threadIdx.x;
    for (int i = tid; i < OS_TILE && i < e.nch; i += OS_THREADS)
        buf[0][i] = e.part[(int64_t)i * e.nsums + f];
    __syncthreads();
    double acc = tid == 0 ? e.acc[f] : 0.0;
    for (int64_t t = 0; t < ntiles; t++) {
        const int64_t c0 = t * OS_TILE;
        if (tid == 0) {
            const double *b = buf[t & 1];
            const int n = e.nch - c0 < OS_TILE ? (int)(e.nch - c0) : OS_TILE;
#pragma unroll 16
            for (int i = 0; i < n; i++) acc = __dadd_rn(acc, b[i]);
        } else if (t + 1 < ntiles) {
            const int64_t c1 = c0 + OS_TILE;
            double *b = buf[(t + 1) & 1];
            for (int i = tid - 1; i < OS_TILE && c1 + i < e.nch; i += OS_THREADS - 1)
                b[i] = e.part[(c1 + i) * e.nsums + f];
        }
        __syncthreads();
    }
    if (tid == 0) e.acc[f] = acc;
}

} // namespace

extern "C" int fp4k_ordered_sums(const fp4k_osum *list, int n, void *stream)
{
    cudaStream_t st = (cudaStream_t)stream;
    for (int i = 0; i < n;) {
        OsumP p = {};
        int k = 0, maxf = 0;
        for (; k < FP4K_OSUM_MAX && i < n; i++) {
            if (list[i].nch <= 0 || list[i].nsums <= 0) continue;
            p.e[k] = list[i];
            if (list[i].nsums > maxf) maxf = list[i].nsums;
            k++;
        }
        if (k == 0) break;
        osum_kernel<<<dim3((unsigned)maxf, (unsigned)k), OS_THREADS, 0, st>>>(p);
        const cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) return (int)e;
    }
    return 0;
}
