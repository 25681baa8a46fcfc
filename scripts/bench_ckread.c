/* bench_ckread.c — the read floor of `make bench-ckpt`: every byte of the given files read
 * through fp4diag's own parallel reader (fp4_pario_pread: pieces of FP4_PARIO_PIECE bytes on
 * FP4DIAG_READ_THREADS threads) in runs of RUN_MIB, into one reused buffer, no analysis.
 * Prints "SECONDS BYTES". Usage: FP4DIAG_READ_THREADS=T bench_ckread RUN_MIB FILE... */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/pario.h"

int main(int argc, char **argv)
{
    if (argc < 3 || atoll(argv[1]) <= 0) {
        fprintf(stderr, "usage: FP4DIAG_READ_THREADS=T bench_ckread RUN_MIB FILE...\n");
        return 2;
    }
    const int64_t run = atoll(argv[1]) << 20;
    unsigned char *buf = malloc((size_t)run);
    if (!buf) {
        fprintf(stderr, "bench_ckread: out of memory\n");
        return 1;
    }
    fp4_pario_set_threads(0); /* takes FP4DIAG_READ_THREADS */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int64_t total = 0;
    unsigned sum = 0;
    for (int i = 2; i < argc; i++) {
        const int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0) {
            fprintf(stderr, "bench_ckread: %s: cannot open\n", argv[i]);
            return 1;
        }
        for (int64_t off = 0; off < st.st_size; off += run) {
            const int64_t len = st.st_size - off < run ? st.st_size - off : run;
            if (fp4_pario_pread(fd, argv[i], "(whole file)", buf, 0, off, 0, 1, len, 1) != FP4_OK) {
                fprintf(stderr, "bench_ckread: %s\n", fp4_last_error());
                return 1;
            }
            sum += buf[len - 1]; /* touch the data */
        }
        total += st.st_size;
        close(fd);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%.6f %lld %u\n", (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec),
           (long long)total, sum & 1u);
    free(buf);
    return 0;
}
