/* bench_mapread.c — the measurement behind io/mapguard.h (issue 26): one file read in slabs
 * from the page cache on one thread, (a) by pread into a buffer, (b) from a fresh read-only
 * mapping with one sigsetjmp guard per slab (a SIGBUS handler that siglongjmps), as the
 * safetensors and NumPy sources read. Best of 7 alternated repetitions each.
 * Build: cc -O2 -o /tmp/bench_mapread scripts/bench_mapread.c
 * Usage: bench_mapread FILE SLAB_MIB   (cat FILE > /dev/null first: from the page cache) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
static __thread sigjmp_buf *g;
static void h(int s, siginfo_t *i, void *u) { (void)s; (void)i; (void)u; if (g) siglongjmp(*g, 1); signal(SIGBUS, SIG_DFL); }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
    struct sigaction sa = {0}; sa.sa_sigaction = h; sa.sa_flags = SA_SIGINFO; sigaction(SIGBUS, &sa, NULL);
    int fd = open(argv[1], O_RDONLY); struct stat sb; fstat(fd, &sb);
    size_t slab = (size_t)atoi(argv[2]) << 20, n = sb.st_size;
    char *buf = malloc(slab); memset(buf, 1, slab);
    double tp = 1e9, tm = 1e9;
    for (int rep = 0; rep < 7; rep++) {
        double t0 = now(); volatile long s = 0;
        for (size_t o = 0; o < n; o += slab) { size_t k = n - o < slab ? n - o : slab; size_t d = 0; while (d < k) { ssize_t r = pread(fd, buf + d, k - d, o + d); if (r <= 0) return 1; d += r; } s += buf[0]; }
        double t1 = now(); if (t1 - t0 < tp) tp = t1 - t0;
        t0 = now();
        char *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
        for (size_t o = 0; o < n; o += slab) { size_t k = n - o < slab ? n - o : slab; sigjmp_buf jb; if (sigsetjmp(jb, 1)) return 2; g = &jb; memcpy(buf, m + o, k); g = NULL; s += buf[0]; }
        munmap(m, n);
        t1 = now(); if (t1 - t0 < tm) tm = t1 - t0;
    }
    printf("%zu MiB, slab %s MiB: pread %.4f s, mmap+guard %.4f s, mmap/pread %.2f\n", n >> 20, argv[2], tp, tm, tm / tp);
    return 0;
}
