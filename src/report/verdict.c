/* verdict.c — the verdict's computation (verdict.h): tensors ranked, the winning config and
 * its runner-up; report.c writes them as JSON, the table prints them. */
#include "report/verdict.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool fp4_verdict_sqnr_ok(const fp4_metrics *m)
{
    return m->sqnr_status == FP4_SQNR_OK && isfinite(m->sqnr_db);
}

static double rank_key(const fp4_verdict_row *r, fp4_rank_by by)
{
    switch (by) {
    case FP4_RANK_SQNR: return r->best_db;              /* lowest best SQNR first */
    case FP4_RANK_DELTA: return -fabs(r->delta);        /* largest |delta| first */
    case FP4_RANK_GAP: break;
    }
    return -r->gap_db;                                  /* largest gap first */
}

/* By `by`; its ties by the other keys (gap, then sqnr, then delta), so that the order
 * does not hang on the order a file lists its tensors in (one config: every gap is 0); what
 * still ties (equal numbers throughout), and tensors without a finite SQNR (last), in tensor
 * order. */
static int rank_cmp(const fp4_verdict_row *a, const fp4_verdict_row *b, fp4_rank_by by)
{
    if (a->ok != b->ok) return a->ok ? -1 : 1; /* tensors without a finite SQNR last */
    if (a->ok) {
        const fp4_rank_by keys[4] = {by, FP4_RANK_GAP, FP4_RANK_SQNR, FP4_RANK_DELTA};
        for (int i = 0; i < 4; i++) {
            double ka = rank_key(a, keys[i]), kb = rank_key(b, keys[i]);
            bool na = isnan(ka), nb = isnan(kb);
            if (na != nb) return na ? 1 : -1;
            if (!na && ka != kb) return ka < kb ? -1 : 1;
        }
    }
    return (a->t > b->t) - (a->t < b->t); /* ties: tensor order */
}

/* Merge sort of rows[0..n) by rank_cmp under `by`, through tmp[n] (a context argument, which
 * qsort lacks: no global, so reports may be built on several threads at once). rank_cmp is a
 * total order (ties end on the tensor index): any sort gives the same order. */
static void rank_sort(fp4_verdict_row *rows, fp4_verdict_row *tmp, int n, fp4_rank_by by)
{
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int a = lo, b = mid, k = lo;
            while (a < mid && b < hi) tmp[k++] = rank_cmp(&rows[b], &rows[a], by) < 0 ? rows[b++]
                                                                                   : rows[a++];
            while (a < mid) tmp[k++] = rows[a++];
            while (b < hi) tmp[k++] = rows[b++];
        }
        memcpy(rows, tmp, (size_t)n * sizeof *rows);
    }
}

fp4_verdict_row *fp4_verdict_rank(const fp4_run *run)
{
    if (run->ntensors <= 0) return NULL;
    fp4_verdict_row *rows = calloc((size_t)run->ntensors, sizeof *rows);
    fp4_verdict_row *tmp = malloc((size_t)run->ntensors * sizeof *tmp);
    if (!rows || !tmp) {
        free(rows);
        free(tmp);
        return NULL;
    }
    for (int t = 0; t < run->ntensors; t++) {
        fp4_verdict_row *r = &rows[t];
        r->t = t;
        r->best = r->worst = -1;
        const fp4_metrics *m = run->tensors[t].metrics;
        for (int c = 0; c < run->ncfg; c++) {
            if (!fp4_verdict_sqnr_ok(&m[c])) continue;
            if (r->best < 0 || m[c].sqnr_db > m[r->best].sqnr_db) r->best = c;
            if (r->worst < 0 || m[c].sqnr_db < m[r->worst].sqnr_db) r->worst = c;
        }
        r->ok = r->best >= 0;
        if (r->ok) {
            r->best_db = m[r->best].sqnr_db;
            r->gap_db = m[r->best].sqnr_db - m[r->worst].sqnr_db;
            r->delta = m[r->best].delta;
        }
    }
    rank_sort(rows, tmp, run->ntensors, run->config->rank_by);
    free(tmp);
    return rows;
}

/* The config with the highest pooled SQNR (-1 when none is finite; ties: the first in config
 * order) and the runner-up: the best config whose dequantized values differ from the winner's
 * (-1 when none has a finite SQNR). A config giving the same values (fp4_qconfig_same_values:
 * e1m2 and int4 under the same scales and RHT) has the same SQNR, so a margin over it would
 * always be 0: it is named beside the winner instead (fp4_verdict_same). */
int fp4_verdict_winner(const fp4_run *run, int *runner)
{
    int w = -1, r = -1;
    for (int c = 0; c < run->ncfg; c++)
        if (fp4_verdict_sqnr_ok(&run->pooled[c]) &&
            (w < 0 || run->pooled[c].sqnr_db > run->pooled[w].sqnr_db))
            w = c;
    for (int c = 0; w >= 0 && c < run->ncfg; c++)
        if (fp4_verdict_sqnr_ok(&run->pooled[c]) &&
            !fp4_qconfig_same_values(&run->cfgs[w], &run->cfgs[c]) &&
            (r < 0 || run->pooled[c].sqnr_db > run->pooled[r].sqnr_db))
            r = c;
    *runner = r;
    return w;
}

/* Whether config c is another name for the winner w's quantizer (same dequantized values). */
bool fp4_verdict_same(const fp4_run *run, int w, int c)
{
    return c != w && fp4_qconfig_same_values(&run->cfgs[w], &run->cfgs[c]);
}

