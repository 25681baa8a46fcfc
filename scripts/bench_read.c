/* bench_read.c — the I/O baseline of `make bench`: read every element of one dataset through
 * fp4_h5_read_slab (our HDF5 path, fp32 conversion included) in slabs along dimension 0, as
 * the driver does, and print the seconds. Usage: bench_read FILE DSET [SLAB_MIB] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "io/h5io.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_read FILE DSET [SLAB_MIB]\n");
        return 2;
    }
    const int64_t slab_bytes = (argc > 3 ? atoll(argv[3]) : 512) << 20;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fp4_h5file *f;
    fp4_tensor_desc info;
    if (fp4_h5_open(argv[1], &f) != FP4_OK || fp4_h5_info(f, argv[2], &info) != FP4_OK) {
        fprintf(stderr, "bench_read: %s\n", fp4_last_error());
        return 1;
    }
    const int64_t d0 = info.rank ? info.dims[0] : 1, per = d0 ? info.nelems / d0 : 0;
    int64_t count = per ? slab_bytes / (per * 4) : d0;
    if (count < 1) count = 1;
    if (count > d0) count = d0;
    float *buf = malloc((size_t)(count * per) * sizeof *buf + 1);
    double sum = 0.0;
    for (int64_t s = 0; s < d0; s += count) {
        const int64_t n = d0 - s < count ? d0 - s : count;
        if (fp4_h5_read_slab(f, argv[2], 0, s, n, buf) != FP4_OK) {
            fprintf(stderr, "bench_read: %s\n", fp4_last_error());
            return 1;
        }
        sum += buf[0]; /* touch the data */
    }
    fp4_h5_close(f);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%.6f %lld %g\n", (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec),
           (long long)(info.nelems * 4), sum);
    fp4_tensor_desc_free(&info);
    free(buf);
    return 0;
}
