/* widen.cu — stored 16-bit words (IEEE f16, bf16; host byte order) -> fp32 on the device, with
 * exactly the bits of src/io/widen.c (and so of HDF5's conversion): f16 and bf16 are exact, a
 * NaN becomes its sign with every other bit set. Integer operations only, so no flush-to-zero
 * setting can touch the f16 subnormals. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels.h"

namespace {

/* HDF5's soft conversion writes a NaN as its sign and every other bit set (io/widen.c). */
constexpr uint32_t NAN_BITS = 0x7fffffffu;

__device__ __forceinline__ uint32_t f16_to_f32_bits(uint32_t h)
{
    const uint32_t sign = (h & 0x8000u) << 16, mag = h & 0x7fffu;
    uint32_t u;
    if (mag >= 0x7c00u) u = mag > 0x7c00u ? NAN_BITS : 0x7f800000u;
    else if (mag >= 0x0400u) u = (mag << 13) + (112u << 23); /* rebias 15 -> 127 */
    else if (mag == 0) u = 0;
    else { /* subnormal: mag * 2^-24 = 2^(p - 24) * (mag / 2^p), p the top bit of mag */
        const uint32_t p = 31u - (uint32_t)__clz(mag);
        u = ((p + 103u) << 23) | ((mag << (23u - p)) & 0x7fffffu);
    }
    return u | sign;
}

__device__ __forceinline__ uint32_t bf16_to_f32_bits(uint32_t h)
{
    uint32_t u = h << 16;
    if ((h & 0x7fffu) > 0x7f80u) u |= NAN_BITS;
    return u;
}

template <bool BF>
__device__ __forceinline__ float widen1(uint32_t h)
{
    return __uint_as_float(BF ? bf16_to_f32_bits(h) : f16_to_f32_bits(h));
}

/* Eight words per thread per step: one 16-byte load, two 16-byte stores (both buffers come
 * from cudaMalloc, aligned); the tail below a multiple of eight word by word. */
template <bool BF>
__global__ void widen16_kernel(const uint16_t *__restrict__ in, float *__restrict__ out,
                               int64_t n)
{
    const int64_t n8 = n / 8;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += stride) {
        const uint4 v = reinterpret_cast<const uint4 *>(in)[i];
        float4 a, b;
        a.x = widen1<BF>(v.x & 0xffffu);
        a.y = widen1<BF>(v.x >> 16);
        a.z = widen1<BF>(v.y & 0xffffu);
        a.w = widen1<BF>(v.y >> 16);
        b.x = widen1<BF>(v.z & 0xffffu);
        b.y = widen1<BF>(v.z >> 16);
        b.z = widen1<BF>(v.w & 0xffffu);
        b.w = widen1<BF>(v.w >> 16);
        reinterpret_cast<float4 *>(out)[2 * i] = a;
        reinterpret_cast<float4 *>(out)[2 * i + 1] = b;
    }
    for (int64_t i = n8 * 8 + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = widen1<BF>(in[i]);
}

} // namespace

extern "C" int fp4k_widen16(const void *words, int bf16, float *out, int64_t n, void *stream)
{
    if (n <= 0) return 0;
    if (((uintptr_t)words & 15) || ((uintptr_t)out & 15)) return (int)cudaErrorInvalidValue;
    const int threads = 256;
    int64_t blocks = (n / 8 + threads - 1) / threads;
    if (blocks < 1) blocks = 1;
    if (blocks > 4096) blocks = 4096; /* grid-stride beyond: ~1M threads fill the chip */
    cudaStream_t st = (cudaStream_t)stream;
    if (bf16)
        widen16_kernel<true><<<(unsigned)blocks, threads, 0, st>>>((const uint16_t *)words, out, n);
    else
        widen16_kernel<false><<<(unsigned)blocks, threads, 0, st>>>((const uint16_t *)words, out, n);
    return (int)cudaGetLastError();
}
