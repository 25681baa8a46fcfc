/* bench_gpu.cu — throughput of the fused quantize+statistics kernel on a tensor already on the
 * GPU, beside a device-to-device copy in the same run (cudaEvent timing, warm-up, median).
 * Usage: bench_gpu [GiB=1] [repeats=20]. Prints one table row per case; exit 1 on a CUDA error. */
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <Random123/philox.h>
#define FP4_HAVE_CUDA_BACKEND 1
extern "C" {
#include "backend/impl.h"
#include "num/rht.h"
}
#include "kernels.h"

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)
#define CKI(x) CK((cudaError_t)(x))

/* Gaussian-ish data from a counter hash (sum of 4 uniforms, centred), never all zeros. */
__global__ void k_fill(float *x, int64_t n, uint32_t seed)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        float s = 0.f;
        for (int k = 0; k < 4; k++) {
            h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
            s += (h >> 8) * (1.f / 16777216.f);
        }
        x[i] = (s - 2.f) * 1.7320508f;
    }
}

struct Case {
    const char *name;
    int format, scale, block, rounding, rht;
};

static float median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char **argv)
{
    double gib = argc > 1 ? atof(argv[1]) : 1.0;
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    const int64_t row_len = 16384;
    const int64_t n_rows = (int64_t)(gib * 1073741824.0 / 4 / row_len);
    const int64_t n = n_rows * row_len;
    const double bytes = (double)n * 4;
    char dev[256];
    fp4k_device_name(dev, sizeof dev);
    printf("device: %s\ntensor: %lld x %lld fp32 (%.3f GiB), repeats %d (median), warm-up 3\n",
           dev, (long long)n_rows, (long long)row_len, bytes / 1073741824.0, reps);

    float *x, *y, *amax, *signs;
    double *part;
    uint64_t *counts;
    CK(cudaMalloc(&x, n * 4));
    CK(cudaMalloc(&y, n * 4));
    CK(cudaMalloc(&amax, 4));
    CK(cudaMalloc(&signs, 256 * 4));
    k_fill<<<132 * 8, 256>>>(x, n, 12345u);
    CK(cudaGetLastError());
    float hs[256];
    for (int i = 0; i < 256; i++) hs[i] = ((0xD7E8u >> (i & 15)) & 1) ? -1.f : 1.f;
    CK(cudaMemcpy(signs, hs, sizeof hs, cudaMemcpyHostToDevice)); /* te, tiled */
    CK(cudaMemset(amax, 0, 4));
    CKI(fp4k_amax(x, n_rows, row_len, row_len, 0, nullptr, amax, nullptr));
    /* (amax without RHT serves every case: only nvfp4/tensor read it, as a constant) */
    float h_amax;
    CK(cudaMemcpy(&h_amax, amax, 4, cudaMemcpyDeviceToHost));

    fp4_rht_signs sgs[3];
    fp4_rht_signs_make("te", 16, &sgs[0]);
    fp4_rht_signs_make("te", 64, &sgs[1]);
    fp4_rht_signs_make("te", 256, &sgs[2]);
    int64_t max_chunks = n_rows * (row_len / 2 / 64 + 1);
    CK(cudaMalloc(&part, max_chunks * FP4K_NSUMS * 8));
    CK(cudaMalloc(&counts, FP4K_NCOUNTS * 8));

    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    auto timeit = [&](auto fn) {
        for (int i = 0; i < 3; i++) fn();
        CK(cudaDeviceSynchronize());
        std::vector<float> ms;
        for (int i = 0; i < reps; i++) {
            CK(cudaEventRecord(e0));
            fn();
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float t;
            CK(cudaEventElapsedTime(&t, e0, e1));
            ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        return std::make_pair(median(ms), ms.back() - ms.front());
    };

    auto cp = timeit([&] { CK(cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice)); });
    double copy_rw = 2 * bytes / (cp.first * 1e-3) / 1e12, copy_r = copy_rw / 2;
    printf("\n%-34s %9s %9s %10s %8s %9s\n", "case", "ms", "spread", "read TB/s", "vs copy",
           "SQNR dB");
    printf("%-34s %9.4f %9.4f %10.3f %8s %9s   (read+write %.3f TB/s)\n", "d2d copy (1 read + 1 write)",
           cp.first, cp.second, bytes / (cp.first * 1e-3) / 1e12, "-", "-", copy_rw);

    Case cases[] = {
        {"e2m1 fp32/16 rtne", 0, 0, 16, 0, 0},     {"e2m1 fp32/16 rtne rht16", 0, 0, 16, 0, 16},
        {"int4 fp32/16 rtne", 2, 0, 16, 0, 0},     {"int4 fp32/16 rtne rht16", 2, 0, 16, 0, 16},
        {"e2m1 nvfp4 rtne", 0, 1, 16, 0, 0},       {"e2m1 nvfp4 rtne rht16", 0, 1, 16, 0, 16},
        {"e2m1 mxfp4 rtne", 0, 2, 32, 0, 0},       {"e2m1 mxfp4 rtne rht16", 0, 2, 32, 0, 16},
        {"e1m2 fp32/16 rtne", 1, 0, 16, 0, 0},     {"e2m1 fp32/16 rtne rht64", 0, 0, 16, 0, 64},
        {"e2m1 fp32/16 rtne rht256", 0, 0, 16, 0, 256}, {"e2m1 fp32/16 sr", 0, 0, 16, 1, 0},
        {"e2m1 tensor rtne", 0, 3, 16, 0, 0},
    };
    float t_plain[4] = {0, 0, 0, 0};
    struct SRow {
        const char *name;
        float gen, blk;
        bool same;
    };
    std::vector<SRow> srow;
    double *spart;
    uint64_t *scounts;
    CK(cudaMalloc(&spart, max_chunks * FP4K_NTSUMS * 8));
    CK(cudaMalloc(&scounts, FP4K_NSCOUNTS * 8));
    for (const Case &k : cases) {
        fp4_qconfig q;
        fp4_qconfig_default(&q);
        q.format.id = (fp4_format_id)k.format;
        q.scale = (fp4_scale_mode)k.scale;
        q.block = k.block;
        q.rounding = (fp4_rounding)k.rounding;
        q.rht = k.rht == 16 ? &sgs[0] : k.rht == 64 ? &sgs[1] : k.rht == 256 ? &sgs[2] : nullptr;
        if (fp4_qconfig_check(&q) != FP4_OK) { fprintf(stderr, "bad config\n"); return 1; }
        fp4_qplan plan;
        if (fp4_qplan_make(&q, h_amax, row_len, &plan) != FP4_OK) return 1;
        fp4k_cfg c;
        fp4_cuda_cfg_of(&plan, &c);
        auto r = timeit([&] {
            CK(cudaMemsetAsync(counts, 0, FP4K_NCOUNTS * 8));
            CKI(fp4k_quantize(&c, x, 0, n_rows, k.rht ? signs : nullptr, nullptr, part, counts,
                              nullptr, nullptr, nullptr));
        });
        /* SQNR from the partials (host sum in chunk order) as a sanity check */
        int64_t nch = fp4k_nchunks(&c, n_rows);
        std::vector<double> hp(nch * FP4K_NSUMS);
        CK(cudaMemcpy(hp.data(), part, hp.size() * 8, cudaMemcpyDeviceToHost));
        double sx2 = 0, se2 = 0;
        for (int64_t i = 0; i < nch; i++) {
            sx2 += hp[i * FP4K_NSUMS + FP4K_S_X2];
            se2 += hp[i * FP4K_NSUMS + FP4K_S_ERR2];
        }
        double tr = bytes / (r.first * 1e-3) / 1e12;
        printf("%-34s %9.4f %9.4f %10.3f %7.1f%% %9.3f", k.name, r.first, r.second, tr,
               100.0 * tr / copy_r, 10 * log10(sx2 / se2));
        if (k.rht == 16 && k.scale == 0)
            printf("   (%.3fx the time without RHT)", r.first / t_plain[k.format]);
        printf("\n");
        if (k.rht == 0 && k.scale == 0 && k.rounding == 0) t_plain[k.format] = r.first;
        /* the recipe statistics (fp4k_stats): its general kernel, then the register-resident
         * one where it applies; their outputs compared bit for bit */
        std::vector<double> sp[2];
        std::vector<uint64_t> sk[2];
        std::pair<float, float> rs[2];
        for (int gen = 1; gen >= 0; gen--) {
            fp4k_stats_generic(gen);
            auto run = [&] {
                CK(cudaMemsetAsync(scounts, 0, FP4K_NSCOUNTS * 8));
                CKI(fp4k_stats(&c, x, 0, n_rows, k.rht ? signs : nullptr, nullptr,
                               k.rht ? y : nullptr, spart, scounts, nullptr));
            };
            rs[gen] = timeit(run);
            run();
            sp[gen].resize(nch * FP4K_NTSUMS);
            sk[gen].resize(FP4K_NSCOUNTS);
            CK(cudaMemcpy(sp[gen].data(), spart, sp[gen].size() * 8, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(sk[gen].data(), scounts, sk[gen].size() * 8, cudaMemcpyDeviceToHost));
        }
        fp4k_stats_generic(0);
        const bool same = memcmp(sp[0].data(), sp[1].data(), sp[0].size() * 8) == 0 &&
                          memcmp(sk[0].data(), sk[1].data(), sk[0].size() * 8) == 0;
        srow.push_back({k.name, rs[1].first, rs[0].first, same});
    }
    printf("\n%-34s %12s %12s %9s %s\n", "fp4k_stats (recipe statistics)", "general ms",
           "block ms", "speed-up", "outputs");
    for (const SRow &r : srow)
        printf("%-34s %12.4f %12.4f %8.2fx %s\n", r.name, r.gen, r.blk, r.gen / r.blk,
               r.same ? "bit-identical" : "DIFFER");
    for (const SRow &r : srow)
        if (!r.same) return 1;
    CK(cudaDeviceSynchronize());
    printf("\nread TB/s counts the input bytes once; 'vs copy' is against the copy's read "
           "bandwidth (its bytes read per second), as issue 6's target counts it.\n");
    return 0;
}
