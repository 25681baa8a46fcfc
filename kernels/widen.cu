/* widen.cu — stored 16-bit words (IEEE f16, bf16; host byte order) -> fp32 on the device, with
 * exactly the bits of src/io/widen.c (and so of HDF5's conversion): f16 and bf16 are exact, a
 * NaN becomes its sign with every other bit set. Integer operations only, so no flush-to-zero
 * setting can touch the f16 subnormals. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

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

/* ---- strided device tensors gathered into rows (fp4k_gather) ----------------------------- */
namespace {

struct GatherP {
    int rank, axis;
    int64_t dims[FP4K_MAX_RANK], strides[FP4K_MAX_RANK];
    int64_t row_len;
};

/* out[i] = the element of canonical row row0 + i / row_len, index i % row_len along the axis;
 * the other dimensions in row-major order number the rows (driver.h fp4_layout_of). W: the
 * element's bytes (4 or 2), read as one word when ALIGNED, else byte by byte. */
template <typename T, bool ALIGNED>
__global__ void gather_kernel(const unsigned char *__restrict__ base, GatherP p, int64_t row0,
                              int64_t n, T *__restrict__ out)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int64_t r = row0 + i / p.row_len;
        int64_t off = (i % p.row_len) * p.strides[p.axis];
        for (int d = p.rank - 1; d >= 0; d--) {
            if (d == p.axis) continue;
            const int64_t q = r % p.dims[d];
            r /= p.dims[d];
            off += q * p.strides[d];
        }
        const unsigned char *src = base + off * (int64_t)sizeof(T);
        if (ALIGNED) {
            out[i] = *(const T *)src;
        } else {
            T v;
            unsigned char *b = (unsigned char *)&v;
            for (int k = 0; k < (int)sizeof(T); k++) b[k] = src[k];
            out[i] = v;
        }
    }
}

template <typename T>
int gather_launch(const void *data, const GatherP &p, int64_t row0, int64_t n, void *out,
                  cudaStream_t st)
{
    const int threads = 256;
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > 4096) blocks = 4096;
    const bool al = ((uintptr_t)data % sizeof(T)) == 0;
    if (al)
        gather_kernel<T, true><<<(unsigned)blocks, threads, 0, st>>>(
            (const unsigned char *)data, p, row0, n, (T *)out);
    else
        gather_kernel<T, false><<<(unsigned)blocks, threads, 0, st>>>(
            (const unsigned char *)data, p, row0, n, (T *)out);
    return (int)cudaGetLastError();
}

} // namespace

extern "C" int fp4k_gather(const void *data, int esz, int rank, const int64_t *dims,
                           const int64_t *strides, int axis, int64_t row0, int64_t nrows,
                           void *out, void *stream)
{
    GatherP p;
    memset(&p, 0, sizeof p);
    if ((esz != 2 && esz != 4) || rank < 0 || rank > FP4K_MAX_RANK || (rank && (axis < 0 || axis >= rank)))
        return (int)cudaErrorInvalidValue;
    if (rank == 0) { /* one element: one row of one */
        p.rank = 1;
        p.dims[0] = 1;
    } else {
        p.rank = rank;
        p.axis = axis;
        for (int d = 0; d < rank; d++) {
            p.dims[d] = dims[d];
            p.strides[d] = strides[d];
        }
    }
    p.row_len = p.dims[p.axis];
    const int64_t n = nrows * p.row_len;
    if (n <= 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
    return esz == 4 ? gather_launch<uint32_t>(data, p, row0, n, out, st)
                    : gather_launch<uint16_t>(data, p, row0, n, out, st);
}
