/* shard.c — parse `--shard I/N` and split a selection into N shares balanced by element count
 * (greedy, largest first: deterministic and machine-independent). */
#include "run/shard.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

fp4_status fp4_shard_parse(const char *s, fp4_shard *out)
{
    char *end;
    errno = 0;
    if (!s || *s < '0' || *s > '9') goto bad;
    long i = strtol(s, &end, 10);
    if (errno || *end != '/' || end[1] < '0' || end[1] > '9') goto bad;
    long n = strtol(end + 1, &end, 10);
    if (errno || *end) goto bad;
    if (n < 1 || n > FP4_SHARD_MAX || i < 0 || i >= n)
        return fp4_error(FP4_ERR_USAGE, "--shard %s: want I/N with 0 <= I < N <= %d", s,
                         FP4_SHARD_MAX);
    out->index = (int)i;
    out->count = (int)n;
    return FP4_OK;
bad:
    return fp4_error(FP4_ERR_USAGE, "--shard '%s' is not I/N (share I of N, counted from 0)",
                     s ? s : "");
}

typedef struct item {
    int64_t w;
    int i;
} item;

static int by_weight_desc(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->w != y->w) return x->w > y->w ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* A binary min-heap of shares by (load, share index). */
static bool share_less(const int64_t *load, int a, int b)
{
    return load[a] != load[b] ? load[a] < load[b] : a < b;
}

static void heap_down(int *h, int n, const int64_t *load, int k)
{
    for (;;) {
        int l = 2 * k + 1, r = l + 1, m = k;
        if (l < n && share_less(load, h[l], h[m])) m = l;
        if (r < n && share_less(load, h[r], h[m])) m = r;
        if (m == k) return;
        int t = h[k];
        h[k] = h[m];
        h[m] = t;
        k = m;
    }
}

fp4_status fp4_shard_assign(const int64_t *weight, int n, int count, int *owner)
{
    if (n <= 0) return FP4_OK;
    if (count <= 1) {
        for (int i = 0; i < n; i++) owner[i] = 0;
        return FP4_OK;
    }
    item *it = malloc((size_t)n * sizeof *it);
    int64_t *load = calloc((size_t)count, sizeof *load);
    int *heap = malloc((size_t)count * sizeof *heap);
    if (!it || !load || !heap) {
        free(it);
        free(load);
        free(heap);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        int64_t w = weight[i] > 0 ? weight[i] : 0;
        it[i] = (item){w < INT64_MAX / 2 ? w + 1 : INT64_MAX / 2, i};
    }
    qsort(it, (size_t)n, sizeof *it, by_weight_desc);
    for (int s = 0; s < count; s++) heap[s] = s; /* all loads 0: already a heap */
    for (int k = 0; k < n; k++) {
        const int best = heap[0];
        owner[it[k].i] = best;
        load[best] = load[best] > INT64_MAX - it[k].w ? INT64_MAX : load[best] + it[k].w;
        heap_down(heap, count, load, 0);
    }
    free(it);
    free(load);
    free(heap);
    return FP4_OK;
}
