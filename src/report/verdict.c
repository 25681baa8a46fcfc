/* verdict.c — the verdict's computation (verdict.h): tensors ranked, the winning config and
 * its runner-up; report.c writes them as JSON, the table prints them. */
#include "report/verdict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "run/recipe.h"

bool fp4_verdict_sqnr_ok(const fp4_metrics *m)
{
    return m->sqnr_status == FP4_SQNR_OK && isfinite(m->sqnr_db);
}

/* the keep score as a rank key: rank_key's `by` beyond the fp4_rank_by values */
#define RANK_KEEP ((fp4_rank_by)1000)

static double rank_key(const fp4_verdict_row *r, fp4_rank_by by)
{
    if (by == RANK_KEEP) return -r->keep_score;         /* largest keep score first */
    switch (by) {
    case FP4_RANK_SQNR: return r->best_db;              /* lowest best SQNR first */
    case FP4_RANK_DELTA: return -fabs(r->delta);        /* largest |delta| first */
    case FP4_RANK_UNDERFLOW: return -r->underflows_pct; /* largest underflow first */
    case FP4_RANK_SQNR_NONAMAX: return r->sqnr_na_db;   /* lowest non-amax SQNR first */
    case FP4_RANK_MAXERR: return -r->maxerr_rel;        /* largest relative max error first */
    case FP4_RANK_RELERR: return -r->rel_err_p99;       /* largest 99th pct rel. error first */
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

bool fp4_verdict_by_keep(const fp4_run *run)
{
    if (run->config->rank_by != FP4_RANK_GAP) return false;
    bool any = false;
    double g0 = 0;
    for (int t = 0; t < run->ntensors; t++) {
        const fp4_metrics *m = run->tensors[t].metrics;
        int best = -1, worst = -1;
        for (int c = 0; c < run->ncfg; c++) {
            if (!fp4_verdict_sqnr_ok(&m[c])) continue;
            if (best < 0 || m[c].sqnr_db > m[best].sqnr_db) best = c;
            if (worst < 0 || m[c].sqnr_db < m[worst].sqnr_db) worst = c;
        }
        if (best < 0) continue;
        const double g = m[best].sqnr_db - m[worst].sqnr_db;
        if (any && g != g0) return false;
        g0 = g;
        any = true;
    }
    return true;
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
            const fp4_metrics *b = &m[r->best];
            r->underflows_pct = b->stats_ok ? b->underflows_pct : NAN;
            r->sqnr_na_db = b->stats_ok && b->sqnr_na_status == FP4_SQNR_OK ? b->sqnr_na_db : NAN;
            r->maxerr_rel = b->stats_ok && b->tensor_amax > 0.0f
                                ? b->max_abs_err / (double)b->tensor_amax
                                : NAN;
            r->rel_err_p99 = b->stats_ok ? b->rerr_p99 : NAN;
        }
    }
    fp4_keep k;
    if (fp4_verdict_keep(run, &k) != FP4_OK) {
        free(rows);
        free(tmp);
        return NULL;
    }
    for (int t = 0; t < run->ntensors; t++) rows[t].keep_score = NAN;
    for (int i = 0; i < k.n; i++) {
        rows[k.rows[i].t].keep_score = k.rows[i].score;
        rows[k.rows[i].t].kept = k.rows[i].keep;
    }
    fp4_keep_free(&k);
    rank_sort(rows, tmp, run->ntensors,
              fp4_verdict_by_keep(run) ? RANK_KEEP : run->config->rank_by);
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


bool fp4_verdict_tie(const fp4_run *run, int w, int r)
{
    if (w < 0 || r < 0) return false;
    double d = run->pooled[w].sqnr_db - run->pooled[r].sqnr_db;
    return isfinite(d) && d < FP4_VERDICT_TIE_DB;
}

double fp4_flushed_share(const fp4_metrics *m)
{
    if (m->elements <= m->zero) return NAN;
    const double nonzero = (double)(m->elements - m->zero);
    double coded0 = (double)m->hist[0] + (double)m->hist[8];
    double f = (coded0 - (double)m->zero) / nonzero;
    return f < 0 ? 0 : f > 1 ? 1 : f;
}

/* The median of v[0..n) (n > 0; v is sorted in place). */
static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, dcmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* median and MAD of the finite entries of x[0..n) (NaN, NaN when none) */
static fp4_status med_mad(const double *x, int n, double *med, double *mad)
{
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i])) v[k++] = x[i];
    if (k == 0) {
        *med = *mad = NAN;
        free(v);
        return FP4_OK;
    }
    *med = median(v, k);
    for (int i = 0; i < k; i++) v[i] = fabs(v[i] - *med);
    *mad = median(v, k);
    free(v);
    return FP4_OK;
}

const char *fp4_keep_by_name(fp4_keep_by by)
{
    switch (by) {
    case FP4_KEEP_BY_SQNR: return "sqnr";
    case FP4_KEEP_BY_SQNR_NONAMAX: return "sqnr_nonamax";
    case FP4_KEEP_BY_FLUSHED: break;
    }
    return "flushed";
}

const char *fp4_keep_by_word(fp4_keep_by by)
{
    switch (by) {
    case FP4_KEEP_BY_SQNR: return "SQNR";
    case FP4_KEEP_BY_SQNR_NONAMAX: return "non-amax";
    case FP4_KEEP_BY_FLUSHED: break;
    }
    return "flushed";
}

double fp4_keep_score(double z_flushed, double z_sqnr, double z_sqnr_na, fp4_keep_by *by)
{
    /* the score: the largest z. `by`: the first of flushed, SQNR, non-amax SQNR whose z is
     * above the threshold (the plainest reading of the loss: a flushing tensor's non-amax SQNR
     * falls too), else the largest z (equal: in that order) */
    fp4_keep_by b = FP4_KEEP_BY_FLUSHED;
    double score = z_flushed;
    if (z_sqnr > score) b = FP4_KEEP_BY_SQNR, score = z_sqnr;
    if (z_sqnr_na > score) b = FP4_KEEP_BY_SQNR_NONAMAX, score = z_sqnr_na;
    if (z_flushed > FP4_KEEP_Z) b = FP4_KEEP_BY_FLUSHED;
    else if (z_sqnr > FP4_KEEP_Z) b = FP4_KEEP_BY_SQNR;
    *by = b;
    return score;
}

static int keep_cmp(const fp4_keep_row *a, const fp4_keep_row *b)
{
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return (a->t > b->t) - (a->t < b->t);
}

fp4_status fp4_verdict_keep(const fp4_run *run, fp4_keep *out)
{
    memset(out, 0, sizeof *out);
    out->cfg = -1;
    /* the recipe formats first: plain E2M1 (full grid, RTNE) under NVFP4 scales, else under
     * MXFP4 (what ModelOpt and llm-compressor write); else the plain config with the highest
     * pooled SQNR, else the winner */
    int c = -1;
    const fp4_scale_mode recipe[2] = {FP4_SCALE_NVFP4, FP4_SCALE_MXFP4};
    for (int p = 0; p < 2 && c < 0; p++)
        for (int i = 0; i < run->ncfg && c < 0; i++) {
            const fp4_qconfig *q = &run->cfgs[i];
            if (!q->rht && q->format.id == FP4_FMT_E2M1 && q->format.max == 0 &&
                q->scale == recipe[p] && q->rounding == FP4_ROUND_RTNE &&
                fp4_verdict_sqnr_ok(&run->pooled[i]))
                c = i;
        }
    out->recipe = c >= 0;
    for (int i = 0; !out->recipe && i < run->ncfg; i++)
        if (!run->cfgs[i].rht && fp4_verdict_sqnr_ok(&run->pooled[i]) &&
            (c < 0 || run->pooled[i].sqnr_db > run->pooled[c].sqnr_db))
            c = i;
    if (c < 0) {
        int runner;
        c = fp4_verdict_winner(run, &runner);
    }
    if (c < 0 || run->ntensors <= 0) return FP4_OK;
    const int n = run->ntensors;
    out->cfg = c;
    out->n = n;
    out->rows = calloc((size_t)n, sizeof *out->rows);
    double *f = malloc((size_t)n * sizeof *f), *s = malloc((size_t)n * sizeof *s);
    double *a = malloc((size_t)n * sizeof *a);
    fp4_status st = FP4_OK;
    if (!out->rows || !f || !s || !a) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto done;
    }
    for (int t = 0; t < n; t++) {
        const fp4_metrics *m = &run->tensors[t].metrics[c];
        f[t] = fp4_flushed_share(m);
        s[t] = fp4_verdict_sqnr_ok(m) ? m->sqnr_db : NAN;
        a[t] = m->stats_ok && m->sqnr_na_status == FP4_SQNR_OK && isfinite(m->sqnr_na_db)
                   ? m->sqnr_na_db
                   : NAN;
    }
    if ((st = med_mad(f, n, &out->median_flushed, &out->mad_flushed)) != FP4_OK ||
        (st = med_mad(s, n, &out->median_sqnr_db, &out->mad_sqnr_db)) != FP4_OK ||
        (st = med_mad(a, n, &out->median_sqnr_na_db, &out->mad_sqnr_na_db)) != FP4_OK)
        goto done;
    const double df = fmax(out->mad_flushed, FP4_KEEP_MAD_FLUSHED);
    const double ds = fmax(out->mad_sqnr_db, FP4_KEEP_MAD_SQNR_DB);
    const double da = fmax(out->mad_sqnr_na_db, FP4_KEEP_MAD_SQNR_DB);
    for (int t = 0; t < n; t++) {
        fp4_keep_row *r = &out->rows[t];
        r->t = t;
        r->flushed = f[t];
        r->sqnr_db = s[t];
        r->sqnr_na_db = a[t];
        r->z_flushed = isfinite(f[t]) && isfinite(out->median_flushed)
                           ? 0.6745 * (f[t] - out->median_flushed) / df
                           : 0;
        r->z_sqnr = isfinite(s[t]) && isfinite(out->median_sqnr_db)
                        ? 0.6745 * (out->median_sqnr_db - s[t]) / ds
                        : 0;
        r->z_sqnr_na = isfinite(a[t]) && isfinite(out->median_sqnr_na_db)
                           ? 0.6745 * (out->median_sqnr_na_db - a[t]) / da
                           : 0;
        r->score = fp4_keep_score(r->z_flushed, r->z_sqnr, r->z_sqnr_na, &r->by);
        r->keep = n >= FP4_KEEP_MIN_TENSORS && r->score > FP4_KEEP_Z;
    }
    /* insertion sort: a total order (ties on the tensor index) */
    for (int i = 1; i < n; i++) {
        fp4_keep_row x = out->rows[i];
        int j = i;
        for (; j > 0 && keep_cmp(&x, &out->rows[j - 1]) < 0; j--) out->rows[j] = out->rows[j - 1];
        out->rows[j] = x;
    }
    for (int i = 0; i < n; i++) out->nkeep += out->rows[i].keep;
    /* pooled, in tensor order */
    double x2 = 0, e2 = 0, e2k = 0, fl = 0, flk = 0, nz = 0;
    for (int t = 0; t < n; t++) {
        const fp4_metrics *m = &run->tensors[t].metrics[c];
        bool kept = false;
        for (int i = 0; i < out->nkeep; i++) kept |= out->rows[i].t == t;
        x2 += m->sum_x2;
        e2 += m->sum_err2;
        if (!kept) e2k += m->sum_err2;
        if (m->elements > m->zero) {
            double nzt = (double)(m->elements - m->zero), ft = f[t] * nzt;
            nz += nzt;
            fl += ft;
            if (!kept) flk += ft;
        }
    }
    out->pooled_sqnr_db = x2 > 0 && e2 > 0 ? 10.0 * log10(x2 / e2) : NAN;
    out->pooled_sqnr_kept_db = x2 > 0 && e2k > 0 ? 10.0 * log10(x2 / e2k) : NAN;
    out->pooled_flushed = nz > 0 ? fl / nz : NAN;
    out->pooled_flushed_kept = nz > 0 ? flk / nz : NAN;
done:
    free(f);
    free(s);
    free(a);
    if (st != FP4_OK) fp4_keep_free(out);
    return st;
}

void fp4_keep_free(fp4_keep *k)
{
    if (!k) return;
    free(k->rows);
    memset(k, 0, sizeof *k);
    k->cfg = -1;
}

/* Fused partners (SPEC §9): the projections an inference engine fuses into one GEMM and
 * quantizes all or none of (vLLM's qkv_proj and gate_up_proj refuse "some but not all shards
 * quantized"), by the last component of the module; MoE experts in the Mixtral form
 * (experts.N.w1 / w3: gate and up). */
static const char *const fused_groups[][4] = {
    {"q_proj", "k_proj", "v_proj", NULL},
    {"gate_proj", "up_proj", NULL, NULL},
    {"w1", "w3", NULL, NULL},
};

/* Append module m (a module path, not a tensor name) to list (n entries) unless present. */
static bool add_module_path(char ***list, int *n, const char *m)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp((*list)[i], m)) return true;
    char **l = realloc(*list, ((size_t)*n + 1) * sizeof *l);
    if (!l) return false;
    *list = l;
    if (!(l[*n] = strdup(m))) return false;
    (*n)++;
    return true;
}

/* Append tensor `name`'s module unless present. */
static bool add_module(char ***list, int *n, const char *name)
{
    char m[1024];
    fp4_recipe_module(name, m, sizeof m);
    return add_module_path(list, n, m);
}

/* Whether module m is the module of a tensor of the run (analysed or skipped). */
static bool run_has_module(const fp4_run *run, const char *m)
{
    char b[1024];
    for (int i = 0; i < run->ntensors; i++) {
        if (!run->tensors[i].info.name) continue;
        fp4_recipe_module(run->tensors[i].info.name, b, sizeof b);
        if (!strcmp(b, m)) return true;
    }
    for (int i = 0; i < run->nskipped; i++) {
        if (!run->skipped[i].info.name) continue;
        fp4_recipe_module(run->skipped[i].info.name, b, sizeof b);
        if (!strcmp(b, m)) return true;
    }
    return false;
}

bool fp4_verdict_fused(const fp4_run *run, const char *name, char ***list, int *n)
{
    char m[1024];
    fp4_recipe_module(name, m, sizeof m);
    const char *dot = strrchr(m, '.');
    const char *leaf = dot ? dot + 1 : m;
    const size_t pre = (size_t)(leaf - m);
    for (size_t g = 0; g < sizeof fused_groups / sizeof fused_groups[0]; g++) {
        bool in = false;
        for (int j = 0; fused_groups[g][j]; j++) in |= !strcmp(leaf, fused_groups[g][j]);
        if (!in) continue;
        for (int j = 0; fused_groups[g][j]; j++) {
            char c[1024];
            if (pre + strlen(fused_groups[g][j]) + 1 > sizeof c) continue;
            memcpy(c, m, pre);
            strcpy(c + pre, fused_groups[g][j]);
            if ((!strcmp(c, m) || run_has_module(run, c)) && !add_module_path(list, n, c))
                return false;
        }
        return true;
    }
    return add_module_path(list, n, m);
}

char *fp4_verdict_exclude_text(const fp4_run *run, int format)
{
    static const char by_recipe[] = "kept in high precision by recipe: ";
    static const char by_file[] = "kept in high precision by ";
    char **mods = NULL;
    int n = 0;
    bool ok = true;
    for (int i = 0; ok && i < run->nskipped; i++) {
        const char *r = run->skipped[i].reason, *nm = run->skipped[i].info.name;
        if (!r || !nm) continue;
        if (!strncmp(r, by_recipe, sizeof by_recipe - 1)) {
            const char *kind = r + sizeof by_recipe - 1;
            if (!strncmp(kind, "output head", 11) || !strncmp(kind, "MoE router", 10))
                ok = add_module(&mods, &n, nm);
        } else if (!strncmp(r, by_file, sizeof by_file - 1)) {
            ok = add_module(&mods, &n, nm);
        }
    }
    fp4_keep k;
    if (ok && fp4_verdict_keep(run, &k) == FP4_OK) {
        for (int i = 0; ok && i < k.nkeep; i++) {
            const char *nm = run->tensors[k.rows[i].t].info.name;
            if (nm) ok = fp4_verdict_fused(run, nm, &mods, &n);
        }
        fp4_keep_free(&k);
    } else {
        ok = false;
    }
    char *text = NULL;
    if (ok && format == FP4_EMIT_MODELOPT) {
        cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "exclude_modules");
        for (int i = 0; arr && i < n; i++) cJSON_AddItemToArray(arr, cJSON_CreateString(mods[i]));
        char *j = arr ? cJSON_Print(root) : NULL;
        cJSON_Delete(root);
        if (j && (text = malloc(strlen(j) + 2))) sprintf(text, "%s\n", j);
        free(j);
    } else if (ok && format == FP4_EMIT_LLM_COMPRESSOR) {
        /* each name as a JSON string: a valid YAML double-quoted scalar */
        size_t cap = 16, len;
        text = malloc(cap);
        if (text) len = (size_t)sprintf(text, "ignore:%s\n", n ? "" : " []");
        for (int i = 0; text && i < n; i++) {
            cJSON *str = cJSON_CreateString(mods[i]);
            char *q = str ? cJSON_PrintUnformatted(str) : NULL;
            cJSON_Delete(str);
            char *t2 = q ? realloc(text, len + strlen(q) + 8) : NULL;
            if (!t2) {
                free(q);
                free(text);
                text = NULL;
                break;
            }
            text = t2;
            len += (size_t)sprintf(text + len, "  - %s\n", q);
            free(q);
        }
    }
    for (int i = 0; i < n; i++) free(mods[i]);
    free(mods);
    if (!text) fp4_error(FP4_ERR_INTERNAL, "out of memory");
    return text;
}
