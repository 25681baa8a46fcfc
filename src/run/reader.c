/* reader.c — the reader pipeline behind reader.h: one thread, a ring of ready slabs, slab
 * buffers reused through a small cache, the memory budget, and the kept buffers registered with
 * the backend. */
#include "run/reader.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/trace.h"

/* Slab buffers of its own the reader may hold ready ahead of the analysis (each also within
 * --mem-limit; slabs read into a tensor's kept rows and runs of never-written zeros take no
 * buffer and are not bounded by it), and slab buffers kept for reuse. */
#define READER_QUEUE 8
#define READER_CACHE 4

/* Slabs read straight into a tensor's kept rows are read several at a time, up to this many
 * bytes per read (at least one slab): a slab of ~4 MiB of stored words is only 8 pieces of
 * FP4_PARIO_PIECE, so a read of one slab could never take more than 8 of the read pool's
 * threads (16 on the 16-core host), and each read is one fork and join of the pool. The
 * slabs are still handed over one by one, the same bytes at the same places. */
#define READER_GROUP_BYTES ((int64_t)32 << 20)

size_t fp4_read_elem_size(int words) { return words ? 2 : sizeof(float); }

static fp4_status read_slab(fp4_source *src, const fp4_tensor_desc *t, int dim, int64_t start,
                            int64_t cnt, int words, void *buf)
{
    return words ? fp4_source_read_raw(src, t, dim, start, cnt, buf)
                 : fp4_source_read_f32(src, t, dim, start, cnt, buf);
}

struct fp4_reader {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    fp4_source *src;
    const fp4_tensor_desc *const *infos; /* [n], in analysis order */
    const fp4_read_plan *plans;          /* [n] */
    fp4_tensor_mem *mem;                 /* [n], the reader's */
    int n;
    int64_t budget, inuse; /* bytes: --mem-limit, and what buffers hold now (cached ones too) */
    fp4_ready_slab *q;     /* ring of ready slabs [qcap], grown as needed */
    int qcap, qhead, qn;
    int qown;          /* queued slabs holding a buffer of their own (at most READER_QUEUE) */
    void *cache[READER_CACHE];
    int64_t cache_cap[READER_CACHE];
    int ncache;
    int cancel;        /* a tensor the analysis gave up: read no more of it (-1: none) */
    int ndone;         /* tensors the analysis is through with (its position in the order) */
    bool waiting;      /* the analysis waits for a slab */
    bool blocked;      /* the reader waits for memory */
    void *pinned[FP4_HOST_REGS]; /* buffers registered with the backend
                          (fp4_backend_host_register; NULL: free): freed by the analysis'
                          thread alone, after unregistering them */
    fp4_backend *be;   /* NULL: no buffer is registered */
    int64_t kept_all;  /* > 0: bytes of every kept buffer (the largest tensor's kept rows) */
    bool stop;
    /* FP4DIAG_TRACE (seconds; 0 when off): the reader's reads and its waits for room or for
     * the analysis (reader thread), the analysis' waits for slabs (analysis thread, under mu;
     * wait_seq: per tensor, reset by fp4_reader_passed) */
    double t_read, t_room, t_wait, t_wait_seq;
};

/* Whether b is one of the registered buffers. */
static bool is_pinned(const fp4_reader *r, const void *b)
{
    for (int i = 0; i < FP4_HOST_REGS; i++)
        if (b && r->pinned[i] == b) return true;
    return false;
}

/* On the analysis' thread: unregister b (a registered buffer) before it is freed. */
static void unpin(fp4_reader *r, const void *b)
{
    for (int i = 0; i < FP4_HOST_REGS; i++)
        if (b && r->pinned[i] == b) {
            fp4_backend_host_unregister(r->be, r->pinned[i]);
            r->pinned[i] = NULL;
        }
}

/* Under mu: whether `bytes` more may be taken now. Beyond the budget only when the analysis
 * waits on an empty queue (then it holds nothing but its current tensor's own buffers, as
 * without the reader): the reader never deadlocks on its own read-ahead. Idle cached buffers
 * are given back first. */
static bool reader_may_take(fp4_reader *r, int64_t bytes)
{
    for (int i = r->ncache - 1; i >= 0 && r->inuse + bytes > r->budget; i--) {
        if (is_pinned(r, r->cache[i])) continue; /* the analysis' thread frees those */
        free(r->cache[i]);
        r->inuse -= r->cache_cap[i];
        r->ncache--;
        r->cache[i] = r->cache[r->ncache];
        r->cache_cap[i] = r->cache_cap[r->ncache];
    }
    return r->inuse + bytes <= r->budget || (r->waiting && r->qn == 0);
}

enum { SLOT_NONE, SLOT_ENTRY, SLOT_OWNED };

/* Under mu: whether a queue entry may be added (of a slab with its own buffer: owned). The
 * ring grows (in order from qhead) when full; out of memory, the reader waits instead. */
static bool queue_room(fp4_reader *r, bool owned)
{
    if (owned && r->qown >= READER_QUEUE) return false;
    if (r->qn < r->qcap) return true;
    const int cap = r->qcap ? 2 * r->qcap : 2 * READER_QUEUE;
    fp4_ready_slab *q = malloc((size_t)cap * sizeof *q);
    if (!q) return false;
    for (int i = 0; i < r->qn; i++) q[i] = r->q[(r->qhead + i) % r->qcap];
    free(r->q);
    r->q = q;
    r->qcap = cap;
    r->qhead = 0;
    return true;
}

/* Under mu: wait until a queue entry (slot: SLOT_ENTRY or SLOT_OWNED) and `bytes` may be
 * taken; false when stopped. */
static bool reader_reserve(fp4_reader *r, int64_t bytes, int slot)
{
    const double t0 = fp4_trace_clock();
    while (!r->stop &&
           ((slot && !queue_room(r, slot == SLOT_OWNED)) || !reader_may_take(r, bytes))) {
        r->blocked = true;
        pthread_cond_broadcast(&r->cv);
        pthread_cond_wait(&r->cv, &r->mu);
    }
    r->blocked = false;
    r->t_room += fp4_trace_clock() - t0;
    if (r->stop) return false;
    r->inuse += bytes;
    return true;
}

/* Under mu: a slab buffer of at least `bytes`: a cached one, else a new one (reserved). */
static void *reader_buffer(fp4_reader *r, int64_t bytes, int64_t *cap)
{
    int best = -1;
    for (int i = 0; i < r->ncache; i++)
        if (r->cache_cap[i] >= bytes && (best < 0 || r->cache_cap[i] < r->cache_cap[best]))
            best = i;
    if (best >= 0) {
        void *b = r->cache[best];
        *cap = r->cache_cap[best];
        r->ncache--;
        r->cache[best] = r->cache[r->ncache];
        r->cache_cap[best] = r->cache_cap[r->ncache];
        return b;
    }
    if (!reader_reserve(r, bytes, SLOT_NONE)) return NULL;
    void *b = malloc((size_t)bytes);
    if (!b) r->inuse -= bytes;
    *cap = b ? bytes : 0;
    return b;
}

/* Under mu: a buffer no longer used, kept for reuse (its pages stay mapped: no page faults
 * when the next tensor or slab takes it) or freed. */
static void reader_cache_put(fp4_reader *r, void *b, int64_t cap)
{
    if (!b) return;
    if (r->ncache < READER_CACHE) {
        r->cache[r->ncache] = b;
        r->cache_cap[r->ncache++] = cap;
    } else {
        unpin(r, b); /* only the analysis' thread puts buffers back */
        free(b);
        r->inuse -= cap;
    }
    pthread_cond_broadcast(&r->cv);
}

/* Under mu: queue a finished slab. */
static void reader_push(fp4_reader *r, const fp4_ready_slab *s)
{
    r->q[(r->qhead + r->qn) % r->qcap] = *s;
    r->qn++;
    r->qown += s->own;
    pthread_cond_broadcast(&r->cv);
}

static char *dup_error(void)
{
    const char *m = fp4_last_error();
    return strdup(m && m[0] ? m : "read failed");
}

/* The end (a slab number) of the run of never-written zero slabs of t beginning at slab k,
 * or 0 when slab k is not one. The run grows in doubling steps of whole slabs: a 4 TiB tensor
 * with 1 MiB stored is a few lookups. */
static int64_t zero_run(fp4_source *src, const fp4_tensor_desc *t, const fp4_read_plan *P,
                        int64_t k)
{
    const int64_t cm = P->count_max, total = P->total, nslabs = (total + cm - 1) / cm;
    const int dim = P->L.slab_dim;
    const int64_t start = k * cm;
    const int64_t cnt = total - start < cm ? total - start : cm;
    if (!P->skip_zero || !fp4_source_zero_fill(src, t, dim, start, cnt)) return 0;
    int64_t end = k + 1;
    for (int64_t step = 1; end < nslabs;) {
        const int64_t m = nslabs - end < step ? nslabs - end : step;
        const int64_t s0 = end * cm;
        const int64_t s1 = end + m < nslabs ? (end + m) * cm : total;
        if (fp4_source_zero_fill(src, t, dim, s0, s1 - s0)) {
            end += m;
            step = step > nslabs ? step : 2 * step;
        } else if (step > 1) {
            step = 1;
        } else {
            break;
        }
    }
    return end;
}

static void *reader_main(void *arg)
{
    fp4_reader *r = arg;
    pthread_mutex_lock(&r->mu);
    for (int seq = 0; seq < r->n && !r->stop; seq++) {
        const fp4_read_plan *P = &r->plans[seq];
        const fp4_tensor_desc *t = r->infos[seq];
        if (P->err != FP4_OK || !P->reads) continue;
        const double tr0 = r->t_read, tm0 = r->t_room, tt0 = fp4_trace_clock();
        fp4_ready_slab fail = {.seq = seq, .last = true, .st = FP4_ERR_INPUT};
        /* the tensor's own buffers first */
        const int64_t kept_n = P->keep ? t->nelems * P->esz : 0; /* bytes */
        const int64_t rows_n = P->need_transpose && !P->keep ? P->buf_elems : 0;
        fp4_tensor_mem *m = &r->mem[seq];
        if (kept_n + rows_n > 0) {
            /* one tensor ahead at most: the next tensor's rows are read while the current
             * one is analysed, into a buffer of their own (later ones would only take more
             * fresh pages, and memory, without starting sooner) */
            const double t0 = fp4_trace_clock();
            while (!r->stop && seq > r->ndone + 1) pthread_cond_wait(&r->cv, &r->mu);
            r->t_room += fp4_trace_clock() - t0;
            if (r->stop) break;
            if (kept_n)
                m->kept = reader_buffer(r, kept_n > r->kept_all ? kept_n : r->kept_all,
                                        &m->kept_cap);
            if (r->stop) break;
            if (rows_n) m->rows = reader_buffer(r, rows_n * (int64_t)sizeof(float), &m->rows_cap);
            if (r->stop) break;
            if ((kept_n && !m->kept) || (rows_n && !m->rows)) {
                fp4_error(FP4_ERR_INPUT, "%s: %s: cannot allocate a slab of %lld values",
                          fp4_source_file(r->src), t->name, (long long)P->buf_elems);
                fail.err = dup_error();
                if (!reader_reserve(r, 0, SLOT_ENTRY)) break;
                reader_push(r, &fail);
                continue;
            }
        }
        const bool direct = P->keep && !P->need_transpose; /* slabs read straight into kept */
        const int64_t nslabs = (P->total + P->count_max - 1) / P->count_max;
        /* direct slabs along dimension 0 lie one after another in the file's order and in
         * kept: several are one read (READER_GROUP_BYTES) */
        const int64_t slab_bytes = P->count_max * P->L.outer_stride * P->esz;
        int64_t group = 1;
        if (direct && P->L.slab_dim == 0 && !P->skip_zero && slab_bytes > 0)
            group = READER_GROUP_BYTES / slab_bytes > 1 ? READER_GROUP_BYTES / slab_bytes : 1;
        int64_t gend = 0; /* slabs before gend are read (by a group read) */
        bool failed = false;
        for (int pass = 0; pass < P->read_passes && !failed && !r->stop; pass++) {
            for (int64_t k = 0; k < nslabs && !r->stop;) {
                const int64_t start = k * P->count_max;
                const int64_t cnt = P->total - start < P->count_max ? P->total - start
                                                                      : P->count_max;
                fp4_ready_slab s = {.seq = seq, .pass = pass, .k = k, .cnt = cnt, .st = FP4_OK};
                if (r->cancel == seq) { /* the analysis gave this tensor up */
                    s.last = true;
                    if (!reader_reserve(r, 0, SLOT_ENTRY)) break;
                    reader_push(r, &s);
                    failed = true;
                    break;
                }
                if (P->skip_zero) { /* a run of never-written zeros: counted, not read */
                    pthread_mutex_unlock(&r->mu);
                    fp4_error_clear();
                    s.zend = zero_run(r->src, t, P, k);
                    pthread_mutex_lock(&r->mu);
                }
                const int64_t next = s.zend ? s.zend : k + 1;
                s.last = pass + 1 == P->read_passes && next == nslabs;
                if (!reader_reserve(r, 0, direct || s.zend ? SLOT_ENTRY : SLOT_OWNED)) break;
                if (s.zend) {
                    reader_push(r, &s);
                    k = next;
                    continue;
                }
                if (direct) {
                    s.buf = m->kept + start * P->L.outer_stride * P->esz;
                    if (group > 1 && k < gend) { /* read with its group's first slab */
                        reader_push(r, &s);
                        k = next;
                        continue;
                    }
                    if (group > 1) { /* slabs k .. gend-1 in one read, into their places */
                        gend = k + group < nslabs ? k + group : nslabs;
                        const int64_t gcnt = (gend == nslabs ? P->total : gend * P->count_max) - start;
                        pthread_mutex_unlock(&r->mu);
                        fp4_error_clear();
                        const double t0 = fp4_trace_clock();
                        s.st = read_slab(r->src, t, P->L.slab_dim, start, gcnt, P->words, s.buf);
                        r->t_read += fp4_trace_clock() - t0;
                        if (s.st != FP4_OK) s.err = dup_error();
                        pthread_mutex_lock(&r->mu);
                        if (s.st != FP4_OK) {
                            s.last = true;
                            failed = true;
                        }
                        reader_push(r, &s);
                        if (failed) break;
                        k = next;
                        continue;
                    }
                } else {
                    s.buf = reader_buffer(r, (P->buf_elems ? P->buf_elems : 1) * P->esz,
                                          &s.cap);
                    if (r->stop) break;
                    if (!s.buf) {
                        fp4_error(FP4_ERR_INPUT, "%s: %s: cannot allocate a slab of %lld values",
                                  fp4_source_file(r->src), t->name, (long long)P->buf_elems);
                        s.st = FP4_ERR_INPUT;
                        s.err = dup_error();
                    }
                    s.own = s.buf != NULL;
                }
                if (s.st == FP4_OK) {
                    pthread_mutex_unlock(&r->mu);
                    fp4_error_clear();
                    const double t0 = fp4_trace_clock();
                    s.st = read_slab(r->src, t, P->L.slab_dim, start, cnt, P->words, s.buf);
                    r->t_read += fp4_trace_clock() - t0;
                    if (s.st != FP4_OK) s.err = dup_error();
                    pthread_mutex_lock(&r->mu);
                }
                if (s.st != FP4_OK) {
                    s.last = true;
                    failed = true;
                }
                /* room was made when reserved and only this thread fills the queue */
                reader_push(r, &s);
                if (failed) break;
                k = next;
            }
        }
        if (fp4_trace_on()) {
            const double rd = r->t_read - tr0;
            const double b = (double)t->nelems * (double)P->esz * P->read_passes;
            fp4_trace("reader: tensor %d read: %.0f bytes, %.4f s in reads (%.2f GB/s), "
                      "%.4f s waiting for room, %.4f s in all", seq + 1, b, rd,
                      rd > 0 ? b / rd * 1e-9 : 0.0, r->t_room - tm0, fp4_trace_clock() - tt0);
        }
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

fp4_status fp4_reader_start(fp4_source *src, fp4_backend *be,
                            const fp4_tensor_desc *const *infos, const fp4_read_plan *plans,
                            int n, int64_t budget, fp4_reader **out)
{
    *out = NULL;
    fp4_reader *r = calloc(1, sizeof *r);
    fp4_tensor_mem *mem = calloc((size_t)(n > 0 ? n : 1), sizeof *mem);
    if (!r || !mem) {
        free(r);
        free(mem);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    r->src = src;
    r->be = be;
    r->infos = infos;
    r->plans = plans;
    r->mem = mem;
    r->n = n;
    r->budget = budget;
    /* A backend that pins the kept buffers (CUDA) has FP4_HOST_REGS of them pinned at a time,
     * each once for its lifetime: kept buffers all as large as the largest tensor's rows (when
     * two fit the budget), so that the two the reader cycles through serve every tensor. Sized
     * each to its tensor, the first two (attention, 32 MiB in bf16) were pinned and every larger
     * one (MLP, 86 MiB) went through CUDA's staging copies on one thread: 27 of the 28 ms of
     * such a tensor on the H100 host, three of seven tensors a layer. */
    if (fp4_backend_pins_host(be)) {
        int64_t most = 0;
        for (int i = 0; i < n; i++) {
            const fp4_read_plan *P = &plans[i];
            const int64_t b = P->err == FP4_OK && P->reads && P->keep ? infos[i]->nelems * P->esz : 0;
            most = b > most ? b : most;
        }
        if (most > 0 && most <= budget / 2) r->kept_all = most;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->cancel = -1;
    if (pthread_create(&r->th, NULL, reader_main, r) != 0) {
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        free(mem);
        free(r);
        return fp4_error(FP4_ERR_INTERNAL, "cannot start the reader thread");
    }
    *out = r;
    return FP4_OK;
}

/* The next ready slab, which is of tensor seq (the reader's order is the analysis'). A read
 * failure is re-recorded on this thread and returned; the slab is then the tensor's last. */
fp4_status fp4_reader_next(fp4_reader *r, int seq, fp4_ready_slab *s)
{
    pthread_mutex_lock(&r->mu);
    r->waiting = true;
    pthread_cond_broadcast(&r->cv);
    const double t0 = r->qn == 0 ? fp4_trace_clock() : 0.0;
    while (r->qn == 0) {
        /* the reader waits for memory registered buffers hold idle: free them here (the
         * backend's calls stay on this thread) */
        for (int i = 0; r->blocked && i < r->ncache; i++)
            if (is_pinned(r, r->cache[i])) {
                unpin(r, r->cache[i]);
                free(r->cache[i]);
                r->inuse -= r->cache_cap[i];
                r->ncache--;
                r->cache[i] = r->cache[r->ncache];
                r->cache_cap[i] = r->cache_cap[r->ncache];
                i--; /* the entry moved here is looked at too */
                pthread_cond_broadcast(&r->cv);
            }
        pthread_cond_wait(&r->cv, &r->mu);
    }
    if (t0 > 0.0) {
        const double w = fp4_trace_clock() - t0;
        r->t_wait += w;
        r->t_wait_seq += w;
    }
    r->waiting = false;
    *s = r->q[r->qhead];
    r->qhead = (r->qhead + 1) % r->qcap;
    r->qn--;
    r->qown -= s->own;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (s->seq != seq) /* cannot happen: both follow the plans */
        return fp4_error(FP4_ERR_INTERNAL, "reader out of order (tensor %d, expected %d)",
                         s->seq, seq);
    if (s->st != FP4_OK) {
        fp4_status st = fp4_error(s->st, "%s", s->err ? s->err : "read failed");
        free(s->err);
        s->err = NULL;
        return st;
    }
    return FP4_OK;
}

/* Give a slab's buffer back (kept for reuse, or freed). */
void fp4_reader_release(fp4_reader *r, fp4_ready_slab *s)
{
    free(s->err);
    s->err = NULL;
    if (!s->own) return;
    pthread_mutex_lock(&r->mu);
    reader_cache_put(r, s->buf, s->cap);
    pthread_mutex_unlock(&r->mu);
    s->own = false;
    s->buf = NULL;
}

/* The analysis is through with tensor seq (analysed, or an error entry). */
void fp4_reader_passed(fp4_reader *r, int seq)
{
    pthread_mutex_lock(&r->mu);
    r->ndone = seq + 1;
    const double w = r->t_wait_seq;
    r->t_wait_seq = 0.0;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    fp4_trace("reader: the analysis waited %.4f s for tensor %d's slabs", w, seq + 1);
}

/* Give a tensor's own buffers back once its analysis is over. */
void fp4_reader_tensor_done(fp4_reader *r, int seq)
{
    pthread_mutex_lock(&r->mu);
    fp4_tensor_mem *m = &r->mem[seq];
    reader_cache_put(r, m->kept, m->kept_cap);
    reader_cache_put(r, m->rows, m->rows_cap);
    memset(m, 0, sizeof *m);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* The analysis gave tensor seq up after `seen_last` said whether its last slab came: the
 * reader reads no more of it, and its remaining slabs are dropped. */
void fp4_reader_skip(fp4_reader *r, int seq, bool seen_last)
{
    pthread_mutex_lock(&r->mu);
    r->cancel = seq;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    while (!seen_last) {
        fp4_ready_slab s;
        fp4_status st = fp4_reader_next(r, seq, &s);
        seen_last = s.last || st == FP4_ERR_INTERNAL;
        fp4_reader_release(r, &s);
    }
    fp4_error_clear();
}

void fp4_reader_join(fp4_reader *r)
{
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->th, NULL);
    fp4_trace("reader: totals: %.4f s in reads, %.4f s waiting for room or the analysis; "
              "the analysis waited %.4f s for slabs", r->t_read, r->t_room, r->t_wait);
    for (int i = 0; i < FP4_HOST_REGS; i++) unpin(r, r->pinned[i]);
    while (r->qn > 0) {
        fp4_ready_slab *s = &r->q[r->qhead];
        free(s->err);
        if (s->own) free(s->buf);
        r->qhead = (r->qhead + 1) % r->qcap;
        r->qn--;
    }
    free(r->q);
    r->q = NULL;
    r->qcap = r->qown = 0;
    for (int i = 0; i < r->ncache; i++) free(r->cache[i]);
    r->ncache = 0;
    for (int i = 0; i < r->n; i++) {
        free(r->mem[i].kept);
        free(r->mem[i].rows);
        memset(&r->mem[i], 0, sizeof r->mem[i]);
    }
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r->mem);
    free(r);
}

const fp4_tensor_mem *fp4_reader_mem(const fp4_reader *r, int seq) { return &r->mem[seq]; }

/* Kept-rows buffers are handed to the backend as stable ranges (fp4_backend_host_register:
 * CUDA pins each at its first use and copies from it without staging) and stay registered
 * while the reader hands them back for later tensors: the tensor analysed and the one read
 * ahead each have one (FP4_HOST_REGS). One registration per buffer lifetime (pinning is not
 * cheap), dropped on this thread before the buffer is freed; a buffer beyond those goes
 * through staging. */
void fp4_reader_register_kept(fp4_reader *r, int seq)
{
    unsigned char *const kept = r->mem[seq].kept;
    const int64_t cap = r->mem[seq].kept_cap;
    if (!r->be || !kept) return;
    pthread_mutex_lock(&r->mu);
    int slot = -1;
    for (int i = 0; i < FP4_HOST_REGS && !is_pinned(r, kept); i++)
        if (!r->pinned[i] && slot < 0) slot = i;
    if (slot >= 0 && !is_pinned(r, kept)) {
        fp4_backend_host_register(r->be, kept, (size_t)cap);
        r->pinned[slot] = kept;
    }
    pthread_mutex_unlock(&r->mu);
}

