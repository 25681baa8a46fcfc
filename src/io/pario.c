/* io/pario.c — large reads in pieces on several threads (a small pool of its own, beside the
 * analysis' OpenMP team): pread of byte runs, and widening of stored words. */
#include "io/pario.h"

#include <errno.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/widen.h"

/* Threads a read takes at most by default; FP4DIAG_READ_THREADS may ask for up to
 * FP4_PARIO_MAX_THREADS (the pool's capacity). 16: on the 16-core H200 host, parallel preads
 * of a checkpoint from the page cache kept getting faster up to 16 threads (4.11 / 1.22 /
 * 0.71 / 0.50 s for 1 / 4 / 8 / 16 threads, 6.48 GB; 0.58 s on 32), so a cap of 4 left the
 * read at 2.4x its floor; idle pool threads block, so a machine with fewer CPUs or a run
 * with fewer --threads is not affected (min(--threads, CPUs, 16)). */
#define PARIO_DEFAULT_MAX 16
#define PARIO_MAX_THREADS FP4_PARIO_MAX_THREADS

static int g_threads = 1;

void fp4_pario_set_threads(int threads)
{
    int n = threads > 0 ? threads : omp_get_max_threads();
    if (n > PARIO_DEFAULT_MAX) n = PARIO_DEFAULT_MAX;
    const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu >= 1 && n > ncpu) n = (int)ncpu;
    const char *e = getenv("FP4DIAG_READ_THREADS");
    if (e && *e) {
        char *end = NULL;
        const long v = strtol(e, &end, 10);
        /* cmd/env.c refuses any other value before a command runs; here a value the pool
         * cannot hold is never taken (a library caller's environment) */
        if (end && *end == '\0' && v >= 1 && v <= PARIO_MAX_THREADS) n = (int)v;
    }
    g_threads = n < 1 ? 1 : n;
}

int fp4_pario_threads(int64_t bytes)
{
    if (bytes < FP4_PARIO_MIN || g_threads <= 1) return 1;
    const int64_t pieces = (bytes + FP4_PARIO_PIECE - 1) / FP4_PARIO_PIECE;
    return pieces < g_threads ? (int)pieces : g_threads;
}

/* The pool: up to PARIO_MAX_THREADS - 1 workers, started at the first large read and kept;
 * the calling thread takes pieces too. Idle workers block on a condition variable (they never
 * spin: an OpenMP team's spinning at each barrier beside the analysis' busy threads cost more
 * than the reads on a loaded machine). One job at a time: a second caller meanwhile runs its
 * pieces alone. */
typedef fp4_pario_fn piece_fn;
static void pool_run(piece_fn fn, void *ctx, int64_t n, int nth);
static struct {
    pthread_mutex_t mu, busy;
    pthread_cond_t go, done;
    pthread_t th[PARIO_MAX_THREADS];
    int nworkers;
    bool stop, atexit_set;
    uint64_t gen;  /* job number */
    uint64_t gen0[PARIO_MAX_THREADS]; /* gen when each worker was started (before its job) */
    piece_fn fn;
    void *ctx;
    int64_t n, next; /* pieces, and the next to take (under mu) */
    int want;         /* workers asked to join this job */
    int64_t inflight; /* pieces taken and not yet done */
} g_pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .busy = PTHREAD_MUTEX_INITIALIZER,
            .go = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

void fp4_pario_for(fp4_pario_fn fn, void *ctx, int64_t n, int nth) { pool_run(fn, ctx, n, nth); }

/* Take pieces of the current job until none is left (mu held on entry and on return). The
 * caller returns once no piece is left to take or in flight: it never waits for a worker that
 * has not woken yet. */
static void pool_drain(void)
{
    while (g_pool.next < g_pool.n) {
        const int64_t k = g_pool.next++;
        piece_fn fn = g_pool.fn;
        void *ctx = g_pool.ctx;
        g_pool.inflight++;
        pthread_mutex_unlock(&g_pool.mu);
        fn(ctx, k);
        pthread_mutex_lock(&g_pool.mu);
        if (--g_pool.inflight == 0 && g_pool.next >= g_pool.n) pthread_cond_signal(&g_pool.done);
    }
}

static void *pool_worker(void *arg)
{
    const int id = (int)(intptr_t)arg;
    pthread_mutex_lock(&g_pool.mu);
    uint64_t seen = g_pool.gen0[id];
    for (;;) {
        while (g_pool.gen == seen && !g_pool.stop) pthread_cond_wait(&g_pool.go, &g_pool.mu);
        if (g_pool.stop) break;
        seen = g_pool.gen;
        if (id >= g_pool.want) continue;
        pool_drain(); /* a worker late for its job finds nothing left */
    }
    pthread_mutex_unlock(&g_pool.mu);
    return NULL;
}

static void pool_stop(void)
{
    pthread_mutex_lock(&g_pool.mu);
    g_pool.stop = true;
    pthread_cond_broadcast(&g_pool.go);
    pthread_mutex_unlock(&g_pool.mu);
    for (int i = 0; i < g_pool.nworkers; i++) pthread_join(g_pool.th[i], NULL);
    g_pool.nworkers = 0;
}

/* fn(ctx, k) for every k in [0, n), on this thread and up to nth - 1 workers; returns when
 * all are done. */
static void pool_run(piece_fn fn, void *ctx, int64_t n, int nth)
{
    if (nth > n) nth = (int)n;
    if (nth > PARIO_MAX_THREADS) nth = PARIO_MAX_THREADS; /* what the pool holds */
    if (nth <= 1 || pthread_mutex_trylock(&g_pool.busy) != 0) {
        for (int64_t k = 0; k < n; k++) fn(ctx, k);
        return;
    }
    pthread_mutex_lock(&g_pool.mu);
    if (!g_pool.atexit_set) g_pool.atexit_set = atexit(pool_stop) == 0;
    while (g_pool.atexit_set && !g_pool.stop && g_pool.nworkers < nth - 1 &&
           (g_pool.gen0[g_pool.nworkers] = g_pool.gen, true) &&
           pthread_create(&g_pool.th[g_pool.nworkers], NULL, pool_worker,
                          (void *)(intptr_t)g_pool.nworkers) == 0)
        g_pool.nworkers++;
    g_pool.fn = fn;
    g_pool.ctx = ctx;
    g_pool.n = n;
    g_pool.next = 0;
    g_pool.want = nth - 1 < g_pool.nworkers ? nth - 1 : g_pool.nworkers;
    g_pool.gen++;
    pthread_cond_broadcast(&g_pool.go);
    pool_drain();
    while (g_pool.inflight > 0) pthread_cond_wait(&g_pool.done, &g_pool.mu);
    pthread_mutex_unlock(&g_pool.mu);
    pthread_mutex_unlock(&g_pool.busy);
}

/* One piece: pread exactly n bytes at off; the reason of a failure in why. */
static bool piece_read(int fd, unsigned char *p, int64_t n, int64_t off, int64_t *at,
                       char *why, size_t whysz)
{
    while (n > 0) {
        const ssize_t r = pread(fd, p, (size_t)n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            *at = off;
            snprintf(why, whysz, "%s", r < 0 ? strerror(errno) : "unexpected end of file");
            return false;
        }
        p += r;
        n -= r;
        off += r;
    }
    return true;
}

typedef struct pread_job {
    int fd, swap;
    unsigned char *dst0;
    int64_t dst_step, off0, off_step, len, per;
    pthread_mutex_t mu;
    int64_t bad, bad_at; /* the first failing piece (INT64_MAX: none), its byte */
    char why[256];
} pread_job;

static void pread_piece(void *ctx, int64_t k)
{
    pread_job *J = ctx;
    pthread_mutex_lock(&J->mu);
    const bool skip = k > J->bad; /* after a failure in file order: not needed */
    pthread_mutex_unlock(&J->mu);
    if (skip) return;
    const int64_t run = k / J->per, j = (k % J->per) * FP4_PARIO_PIECE;
    const int64_t n = J->len - j < FP4_PARIO_PIECE ? J->len - j : FP4_PARIO_PIECE;
    unsigned char *p = J->dst0 + run * J->dst_step + j;
    int64_t at = 0;
    char why[256];
    if (!piece_read(J->fd, p, n, J->off0 + run * J->off_step + j, &at, why, sizeof why)) {
        pthread_mutex_lock(&J->mu);
        if (k < J->bad) {
            J->bad = k;
            J->bad_at = at;
            snprintf(J->why, sizeof J->why, "%s", why);
        }
        pthread_mutex_unlock(&J->mu);
        return;
    }
    if (J->swap > 1) fp4_swap_words(p, (size_t)(n / J->swap), (size_t)J->swap);
}

fp4_status fp4_pario_pread(int fd, const char *file, const char *name, unsigned char *dst0,
                           int64_t dst_step, int64_t off0, int64_t off_step, int64_t nruns,
                           int64_t len, int swap)
{
    if (nruns <= 0 || len <= 0) return FP4_OK;
    pread_job J = {.fd = fd, .swap = swap, .dst0 = dst0, .dst_step = dst_step, .off0 = off0,
                   .off_step = off_step, .len = len, .bad = INT64_MAX};
    J.per = (len + FP4_PARIO_PIECE - 1) / FP4_PARIO_PIECE; /* pieces per run */
    pthread_mutex_init(&J.mu, NULL);
    /* the first failing piece in file order is reported, whatever the thread count (the runs
     * go forward through the file; every piece before it is read) */
    pool_run(pread_piece, &J, nruns * J.per, fp4_pario_threads(nruns * len));
    pthread_mutex_destroy(&J.mu);
    if (J.bad != INT64_MAX)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: read failed at byte %lld: %s", file, name,
                         (long long)J.bad_at, J.why);
    return FP4_OK;
}

/* Values per piece of widening, and the least left to widen for another parallel round. */
#define WIDEN_PIECE ((int64_t)128 << 10)
#define WIDEN_ROUND_MIN (2 * WIDEN_PIECE)

typedef struct widen_job {
    fp4_stored s;
    const unsigned char *raw; /* the words of value 0 */
    float *buf;
    int64_t w, c, k; /* word size; this round widens values [c, c + k) */
} widen_job;

static void widen_piece(void *ctx, int64_t p)
{
    const widen_job *J = ctx;
    const int64_t a = J->c + p * WIDEN_PIECE;
    const int64_t m = J->c + J->k - a < WIDEN_PIECE ? J->c + J->k - a : WIDEN_PIECE;
    if (J->w == 4) /* each value in its own word's place */
        fp4_widen_inplace(J->s, false, J->buf + a, (size_t)m);
    else
        fp4_widen(J->s, false, J->raw + J->w * a, J->buf + a, (size_t)m);
}

bool fp4_pario_widen_inplace(fp4_stored s, float *buf, size_t n)
{
    if (!fp4_widen_supported(s)) return false;
    const int64_t w = fp4_stored_size(s);
    if (w > (int64_t)sizeof(float)) return false;
    if (s == FP4_STORED_F32) return true; /* the words are the floats */
    const int nth = fp4_pario_threads((int64_t)n * (int64_t)sizeof(float));
    if (nth <= 1) return fp4_widen_inplace(s, false, buf, n);
    widen_job J = {.s = s, .raw = (const unsigned char *)buf + (int64_t)n * (4 - w), .buf = buf,
                   .w = w};
    if (w == 4) { /* any split */
        J.k = (int64_t)n;
        pool_run(widen_piece, &J, (J.k + WIDEN_PIECE - 1) / WIDEN_PIECE, nth);
        return true;
    }
    /* Rounds: with the first c values done, the words of values c.. start at byte
     * n*(4-w) + w*c; widening values [c, c+k) writes bytes [4c, 4c+4k), below that start
     * when k <= (4-w)*(n-c)/4: the round's pieces neither overlap nor touch a word still
     * to be read. What is left when small is widened in place on this thread. */
    while ((int64_t)n - J.c >= WIDEN_ROUND_MIN) {
        J.k = (4 - w) * ((int64_t)n - J.c) / 4;
        pool_run(widen_piece, &J, (J.k + WIDEN_PIECE - 1) / WIDEN_PIECE, nth);
        J.c += J.k;
    }
    /* values [c, n): their words are the last (n-c)*w bytes of buf + c's 4(n-c) */
    return fp4_widen_inplace(s, false, buf + J.c, n - (size_t)J.c);
}
