/* report_gemm.c — the `gemm` JSON report and its human table (SPEC §6, §9). Part of the report
 * module: with report.c, the only file that calls cJSON. */
#include "report/gemm.h"

#include "run/gemm_blas.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/term.h"
#include "num/format.h"
#include "report/report.h"
#include "base/version.h"

/* A number, or null plus a sibling "<key>_status" when it is not finite (never a bare NaN). */
static void add_num(cJSON *o, const char *key, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

static const char *sqnr_status_name(fp4_sqnr_status s)
{
    switch (s) {
    case FP4_SQNR_OK: return "ok";
    case FP4_SQNR_ZERO_SIGNAL: return "zero_signal";
    case FP4_SQNR_NONFINITE: return "nonfinite";
    default: return "exact";
    }
}

static void add_sqnr(cJSON *o, double db, fp4_sqnr_status st)
{
    if (st == FP4_SQNR_OK && isfinite(db))
        cJSON_AddNumberToObject(o, "sqnr_db", db);
    else
        cJSON_AddNullToObject(o, "sqnr_db");
    cJSON_AddStringToObject(o, "sqnr_status", sqnr_status_name(st));
}

static cJSON *rht_json(const fp4_rht_signs *s)
{
    if (!s) return cJSON_CreateFalse();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "size", s->n);
    cJSON_AddStringToObject(o, "signs", s->desc);
    return o;
}

static cJSON *operand_json(const fp4_gemm_operand_result *r)
{
    cJSON *o = cJSON_CreateObject();
    char fname[32];
    fp4_format_name(r->cfg.format, fname, sizeof fname);
    cJSON_AddStringToObject(o, "name", fp4_gemm_tensor_name(r->tensor));
    cJSON_AddStringToObject(o, "role", r->role == 'a' ? "a" : "b");
    cJSON_AddBoolToObject(o, "transposed", r->transposed);
    cJSON_AddStringToObject(o, "format", fname);
    cJSON_AddStringToObject(o, "scale", fp4_scale_name(r->cfg.scale));
    cJSON_AddNumberToObject(o, "block", r->cfg.block);
    cJSON_AddBoolToObject(o, "weight_2d", r->cfg.weight_2d);
    cJSON_AddItemToObject(o, "rht", rht_json(r->cfg.rht));
    cJSON_AddStringToObject(o, "rounding", fp4_rounding_name(r->cfg.rounding));
    if (r->cfg.rounding == FP4_ROUND_SR) cJSON_AddNumberToObject(o, "sr_stream", r->cfg.stream);
    add_sqnr(o, r->m.sqnr_db, r->m.sqnr_status);
    add_num(o, "nmse", r->m.nmse);
    add_num(o, "alpha", r->m.alpha);
    add_num(o, "delta", r->m.delta);
    add_num(o, "tensor_amax", (double)r->m.tensor_amax);
    return o;
}

static cJSON *path_json(const fp4_gemm_path_result *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", fp4_gemm_path_name(r->path));
    cJSON *shape = cJSON_AddArrayToObject(o, "shape");
    cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)r->rows));
    cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)r->cols));
    cJSON_AddNumberToObject(o, "contraction", (double)r->contraction);
    cJSON_AddNumberToObject(o, "padded_contraction", (double)r->padded_contraction);
    cJSON_AddItemToObject(o, "rht", rht_json(r->op[0].cfg.rht));
    add_sqnr(o, r->sqnr_db, r->sqnr_status);
    add_num(o, "eta", r->eta);
    add_num(o, "alpha_a", r->alpha_a);
    add_num(o, "alpha_b", r->alpha_b);
    add_num(o, "alpha_product", r->alpha_product);
    cJSON *ops = cJSON_AddArrayToObject(o, "operands");
    cJSON_AddItemToArray(ops, operand_json(&r->op[0]));
    cJSON_AddItemToArray(ops, operand_json(&r->op[1]));
    return o;
}

static cJSON *config_json(const fp4_gemm_run *run)
{
    const fp4_run_config *opt = run->config;
    const fp4_gemm_config *gc = run->gc;
    cJSON *c = cJSON_CreateObject();
    fp4_qconfig q;
    /* the format and block as the recipe resolves them (FPROP's X: same for every operand) */
    if (fp4_gemm_operand_config(gc, FP4_GEMM_FPROP, FP4_GEMM_X, &q) != FP4_OK) q = gc->base;
    char fname[32];
    fp4_format_name(q.format, fname, sizeof fname);
    cJSON *fmts = cJSON_AddArrayToObject(c, "formats");
    cJSON_AddItemToArray(fmts, cJSON_CreateString(fname));
    cJSON_AddStringToObject(c, "recipe", fp4_gemm_recipe_name(gc->recipe));
    cJSON *paths = cJSON_AddArrayToObject(c, "paths");
    for (int p = 0; p < FP4_GEMM_NPATHS; p++)
        if (run->paths & (1u << p))
            cJSON_AddItemToArray(paths, cJSON_CreateString(fp4_gemm_path_name((fp4_gemm_path)p)));
    cJSON_AddStringToObject(c, "scale", fp4_scale_name(q.scale));
    cJSON_AddNumberToObject(c, "block", q.block);
    /* Blocks run along the last axis of each operand in its quantization layout (the
     * contraction axis, after transposing where the path needs it). */
    cJSON_AddNumberToObject(c, "axis", -1);
    bool rht_wgrad = fp4_gemm_path_rht(gc, FP4_GEMM_WGRAD),
         rht_fprop = fp4_gemm_path_rht(gc, FP4_GEMM_FPROP);
    const char *rht_scope = rht_fprop ? "all" : rht_wgrad ? "wgrad" : "none";
    const char *sr_scope = gc->recipe == FP4_RECIPE_CUSTOM ? fp4_sr_scope_name(gc->sr_scope) : "dy";
    /* rounding per operand tensor (the recipe decides; the same in every path using it) */
    cJSON *rnd = cJSON_AddObjectToObject(c, "rounding");
    for (int t = 0; rnd && t < 3; t++) {
        fp4_qconfig qt;
        fp4_gemm_path p = t == FP4_GEMM_DY ? FP4_GEMM_DGRAD : FP4_GEMM_FPROP;
        const char *r = fp4_gemm_operand_config(gc, p, (fp4_gemm_tensor)t, &qt) == FP4_OK
                            ? fp4_rounding_name(qt.rounding)
                            : "?";
        cJSON_AddStringToObject(rnd, fp4_gemm_tensor_name((fp4_gemm_tensor)t), r);
    }
    cJSON_AddStringToObject(c, "sr_scope", sr_scope);
    cJSON_AddNumberToObject(c, "sr_bits", q.sr_bits);
    char seed[24]; /* exact: a JSON integer literal (seeds above 2^53) */
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)q.seed);
    cJSON_AddRawToObject(c, "seed", seed);
    cJSON_AddStringToObject(c, "sr_streams", "0x474D0000 + 4*path + tensor "
                                             "(path fprop 0, dgrad 1, wgrad 2; x 0, w 1, dy 2)");
    /* RHT per path (the recipe's scope) */
    cJSON *rp = cJSON_AddObjectToObject(c, "rht");
    for (int p = 0; rp && p < FP4_GEMM_NPATHS; p++)
        cJSON_AddStringToObject(rp, fp4_gemm_path_name((fp4_gemm_path)p),
                                fp4_gemm_path_rht(gc, (fp4_gemm_path)p) ? "on" : "off");
    cJSON_AddStringToObject(c, "rht_scope", rht_scope);
    cJSON_AddNumberToObject(c, "rht_size", opt->rht_size);
    cJSON_AddStringToObject(c, "rht_signs", opt->signs.desc[0] ? opt->signs.desc
                                                               : opt->rht_signs_spec);
    cJSON_AddStringToObject(c, "mx_rule", fp4_mx_rule_name(q.mx_rule));
    cJSON_AddBoolToObject(c, "weight_2d", gc->base.weight_2d);
    cJSON_AddStringToObject(c, "device", fp4_dgemm_device(gc->products));
    cJSON_AddNumberToObject(c, "threads", opt->threads);
    cJSON_AddNumberToObject(c, "mem_limit", (double)opt->mem_limit);
    if (opt->layers > 0)
        cJSON_AddNumberToObject(c, "layers", opt->layers);
    else
        cJSON_AddNullToObject(c, "layers");
    cJSON_AddNumberToObject(c, "block_rows", (double)(gc->block_rows > 0 ? gc->block_rows : 256));
    return c;
}

static cJSON *layer_json(const fp4_gemm_run *run, const fp4_gemm_layer *L)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", L->name);
    cJSON_AddStringToObject(o, "recipe", fp4_gemm_recipe_name(run->gc->recipe));
    cJSON *opnds = cJSON_AddObjectToObject(o, "inputs");
    const int64_t dims[3][2] = {{L->m, L->k}, {L->n, L->k}, {L->m, L->n}};
    for (int t = 0; t < 3; t++) {
        if (!L->src[t]) continue;
        cJSON *d = cJSON_AddObjectToObject(opnds, fp4_gemm_tensor_name((fp4_gemm_tensor)t));
        cJSON_AddStringToObject(d, "source", L->src[t]);
        cJSON *shape = cJSON_AddArrayToObject(d, "shape");
        cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)dims[t][0]));
        cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)dims[t][1]));
        cJSON_AddStringToObject(d, "dtype", L->dtype[t]);
    }
    cJSON *paths = cJSON_AddArrayToObject(o, "paths");
    for (int p = 0; p < FP4_GEMM_NPATHS; p++)
        if (L->paths & (1u << p)) cJSON_AddItemToArray(paths, path_json(&L->res[p]));
    return o;
}

cJSON *fp4_report_gemm_summary(const fp4_gemm_run *run)
{
    cJSON *summary = cJSON_CreateObject();
    cJSON *sp = cJSON_AddArrayToObject(summary, "paths");
    for (int p = 0; sp && p < FP4_GEMM_NPATHS; p++) {
        if (!(run->paths & (1u << p))) continue;
        fp4_gemm_pooled pool;
        if (fp4_gemm_pool(run->layers, run->nlayers, (fp4_gemm_path)p, run->config->layers,
                          &pool) != FP4_OK)
            continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "path", fp4_gemm_path_name((fp4_gemm_path)p));
        cJSON_AddNumberToObject(o, "layers", pool.nlayers);
        add_sqnr(o, pool.sqnr_db, pool.sqnr_status);
        add_num(o, "eta", pool.eta);
        if (run->config->layers > 0) {
            cJSON *cmp = cJSON_AddObjectToObject(o, "compound");
            cJSON_AddNumberToObject(cmp, "layers", pool.compound_layers);
            add_num(cmp, "prod_eta", pool.prod_eta);
            add_num(cmp, "exp_neg_sum_delta", pool.exp_neg_sum_delta);
        }
        cJSON_AddItemToArray(sp, o);
    }
    return summary;
}

static cJSON *hexnum(double v)
{
    char b[64];
    snprintf(b, sizeof b, "%a", v);
    return cJSON_CreateString(b);
}

/* --shard: which share, every selected layer and its operands' shapes and dtypes, this share's
 * positions, and per layer and path the exact sums the pooled summary reads (C99 hex floats:
 * Σz², Σ(ẑ−z)², Σẑz, η) and its operands' own (Σx², Σ(x̂−x)², Σx̂x, the amax), which merge
 * checks the layer against. */
static void add_shard(cJSON *root, const fp4_gemm_run *run)
{
    cJSON *sh = cJSON_AddObjectToObject(root, "shard");
    if (!sh) return;
    cJSON_AddNumberToObject(sh, "index", run->config->shard.index);
    cJSON_AddNumberToObject(sh, "count", run->config->shard.count);
    cJSON_AddNumberToObject(sh, "selected", run->nselected);
    cJSON *ls = cJSON_AddArrayToObject(sh, "layers");
    for (int i = 0; ls && i < run->nselected; i++)
        cJSON_AddItemToArray(ls, cJSON_CreateString(run->selected[i]));
    cJSON *as = cJSON_AddArrayToObject(sh, "assigned");
    for (int i = 0; as && i < run->nassigned; i++)
        cJSON_AddItemToArray(as, cJSON_CreateNumber(run->assigned[i]));
    /* every selected layer's operands as described before any layer is read */
    cJSON *in = cJSON_AddArrayToObject(sh, "inputs");
    for (int i = 0; in && run->inputs && i < run->nselected; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o) return;
        cJSON_AddItemToArray(in, o);
        for (int t = 0; t < 3; t++) {
            const fp4_shard_shape *x = &run->inputs[i][t];
            if (!x->dtype[0]) continue;
            cJSON *d = cJSON_AddObjectToObject(o, fp4_gemm_tensor_name((fp4_gemm_tensor)t));
            cJSON *shape = d ? cJSON_AddArrayToObject(d, "shape") : NULL;
            for (int k = 0; shape && k < x->rank; k++)
                cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)x->dims[k]));
            if (d) cJSON_AddStringToObject(d, "dtype", x->dtype);
        }
    }
    cJSON *ps = cJSON_AddArrayToObject(sh, "partials");
    for (int i = 0; ps && i < run->nlayers; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o) return;
        cJSON_AddItemToArray(ps, o);
        cJSON_AddNumberToObject(o, "index", run->index[i]);
        cJSON *pa = cJSON_AddArrayToObject(o, "paths");
        for (int p = 0; pa && p < FP4_GEMM_NPATHS; p++) {
            if (!(run->layers[i].paths & (1u << p))) continue;
            const fp4_gemm_path_result *r = &run->layers[i].res[p];
            cJSON *x = cJSON_CreateObject();
            if (!x) return;
            cJSON_AddItemToArray(pa, x);
            cJSON_AddStringToObject(x, "path", fp4_gemm_path_name((fp4_gemm_path)p));
            cJSON *s = cJSON_AddArrayToObject(x, "sums");
            const double v[5] = {r->sum_z2, r->sum_err2, r->sum_zqz, r->eta, r->sqnr_db};
            for (int k = 0; s && k < 5; k++) cJSON_AddItemToArray(s, hexnum(v[k]));
            cJSON_AddStringToObject(x, "sqnr_status", sqnr_status_name(r->sqnr_status));
            /* the operands' own sums (Σx², Σ(x̂−x)², Σx̂x) and amax: their NMSE, SQNR,
             * alpha, delta and tensor_amax */
            cJSON *os = cJSON_AddArrayToObject(x, "operands");
            for (int k = 0; os && k < 2; k++) {
                const fp4_metrics *m = &r->op[k].m;
                cJSON *e = cJSON_CreateObject();
                if (!e) return;
                cJSON_AddItemToArray(os, e);
                cJSON *ms = cJSON_AddArrayToObject(e, "sums");
                const double w[3] = {m->sum_x2, m->sum_err2, m->sum_xqx};
                for (int q = 0; ms && q < 3; q++) cJSON_AddItemToArray(ms, hexnum(w[q]));
                cJSON_AddItemToObject(e, "tensor_amax", hexnum((double)m->tensor_amax));
            }
        }
    }
    cJSON *es = cJSON_AddArrayToObject(sh, "errors");
    for (int i = 0; es && i < run->nerrors; i++)
        cJSON_AddItemToArray(es, cJSON_CreateNumber(run->error_index[i]));
    cJSON_AddItemToObject(sh, "fingerprint", fp4_report_fingerprint_json(run->prints, run->nprints));
}

static void gemm_add_verdict(cJSON *root, const fp4_gemm_run *run);

cJSON *fp4_report_gemm_verdict(const fp4_gemm_run *run)
{
    cJSON *tmp = cJSON_CreateObject();
    if (!tmp) return NULL;
    gemm_add_verdict(tmp, run);
    cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(tmp, "verdict");
    cJSON_Delete(tmp);
    return v;
}

/* "FILE:/dataset" → the file part (up to the last ":/"). */
static char *source_file(const char *src)
{
    const char *sep = NULL;
    for (const char *s = strstr(src, ":/"); s; s = strstr(s + 1, ":/")) sep = s;
    size_t n = sep ? (size_t)(sep - src) : strlen(src);
    char *f = malloc(n + 1);
    if (f) memcpy(f, src, n), f[n] = '\0';
    return f;
}

static void fmt_db(char *buf, size_t n, double db, fp4_sqnr_status st);

/* ---- verdict: pooled SQNR and eta per path, the worst path, the layers ranked ------------ */

/* One layer of the ranking: its worst and best path by SQNR (status ok only) and their gap. */
typedef struct gemm_vrow {
    int layer, worst, best; /* path indices; -1 when no path has a finite SQNR */
    double gap_db, worst_db, worst_eta;
} gemm_vrow;

static fp4_rank_by gemm_rank_by; /* qsort has no context argument */

static double gemm_key(const gemm_vrow *r)
{
    switch (gemm_rank_by) {
    case FP4_RANK_SQNR: return r->worst_db;             /* lowest worst-path SQNR first */
    case FP4_RANK_DELTA: return -fabs(1.0 - r->worst_eta); /* largest |1 - eta| first */
    default: break; /* gap (the statistics keys are refused for gemm: cmd/gemm.c) */
    }
    return -r->gap_db; /* largest gap between paths first */
}

static int gemm_vcmp(const void *pa, const void *pb)
{
    const gemm_vrow *a = pa, *b = pb;
    bool oa = a->worst >= 0, ob = b->worst >= 0;
    if (oa != ob) return oa ? -1 : 1;
    if (oa) {
        double ka = gemm_key(a), kb = gemm_key(b);
        bool na = isnan(ka), nb = isnan(kb);
        if (na != nb) return na ? 1 : -1;
        if (!na && ka != kb) return ka < kb ? -1 : 1;
    }
    return (a->layer > b->layer) - (a->layer < b->layer);
}

static gemm_vrow *gemm_verdict_rank(const fp4_gemm_run *run)
{
    if (run->nlayers <= 0) return NULL;
    gemm_vrow *rows = calloc((size_t)run->nlayers, sizeof *rows);
    if (!rows) return NULL;
    for (int i = 0; i < run->nlayers; i++) {
        const fp4_gemm_layer *L = &run->layers[i];
        gemm_vrow *r = &rows[i];
        r->layer = i;
        r->worst = r->best = -1;
        for (int p = 0; p < FP4_GEMM_NPATHS; p++) {
            const fp4_gemm_path_result *x = &L->res[p];
            if (!(L->paths & (1u << p)) || x->sqnr_status != FP4_SQNR_OK || !isfinite(x->sqnr_db))
                continue;
            if (r->worst < 0 || x->sqnr_db < L->res[r->worst].sqnr_db) r->worst = p;
            if (r->best < 0 || x->sqnr_db > L->res[r->best].sqnr_db) r->best = p;
        }
        if (r->worst >= 0) {
            r->worst_db = L->res[r->worst].sqnr_db;
            r->worst_eta = L->res[r->worst].eta;
            r->gap_db = L->res[r->best].sqnr_db - r->worst_db;
        }
    }
    gemm_rank_by = run->config->rank_by;
    qsort(rows, (size_t)run->nlayers, sizeof *rows, gemm_vcmp);
    return rows;
}

/* The path with the lowest pooled SQNR, or -1. */
static int gemm_worst_path(const fp4_gemm_run *run, fp4_gemm_pooled pool[FP4_GEMM_NPATHS],
                           bool have[FP4_GEMM_NPATHS])
{
    int w = -1;
    for (int p = 0; p < FP4_GEMM_NPATHS; p++) {
        have[p] = (run->paths & (1u << p)) &&
                  fp4_gemm_pool(run->layers, run->nlayers, (fp4_gemm_path)p, run->config->layers,
                                &pool[p]) == FP4_OK;
        if (!have[p] || pool[p].sqnr_status != FP4_SQNR_OK || !isfinite(pool[p].sqnr_db))
            continue;
        if (w < 0 || pool[p].sqnr_db < pool[w].sqnr_db) w = p;
    }
    return w;
}

static void gemm_add_verdict(cJSON *root, const fp4_gemm_run *run)
{
    cJSON *v = cJSON_AddObjectToObject(root, "verdict");
    if (!v) return;
    cJSON_AddStringToObject(v, "rank_by", fp4_rank_by_name(run->config->rank_by));
    cJSON_AddStringToObject(v, "recipe", fp4_gemm_recipe_name(run->gc->recipe));
    fp4_gemm_pooled pool[FP4_GEMM_NPATHS];
    bool have[FP4_GEMM_NPATHS];
    int w = gemm_worst_path(run, pool, have);
    cJSON *ps = cJSON_AddArrayToObject(v, "paths");
    for (int p = 0; ps && p < FP4_GEMM_NPATHS; p++) {
        if (!have[p]) continue;
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        cJSON_AddItemToArray(ps, o);
        cJSON_AddStringToObject(o, "path", fp4_gemm_path_name((fp4_gemm_path)p));
        add_num(o, "sqnr_db", pool[p].sqnr_status == FP4_SQNR_OK ? pool[p].sqnr_db : NAN);
        add_num(o, "eta", pool[p].eta);
        cJSON_AddNumberToObject(o, "layers", pool[p].nlayers);
    }
    if (w >= 0) cJSON_AddStringToObject(v, "worst_path", fp4_gemm_path_name((fp4_gemm_path)w));
    else cJSON_AddNullToObject(v, "worst_path");
    cJSON *rk = cJSON_AddArrayToObject(v, "ranking");
    gemm_vrow *rows = gemm_verdict_rank(run);
    for (int i = 0; rk && rows && i < run->nlayers; i++) {
        const gemm_vrow *r = &rows[i];
        const fp4_gemm_layer *L = &run->layers[r->layer];
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        cJSON_AddItemToArray(rk, o);
        cJSON_AddStringToObject(o, "layer", L->name ? L->name : "");
        if (r->worst >= 0) {
            cJSON_AddStringToObject(o, "worst_path", fp4_gemm_path_name((fp4_gemm_path)r->worst));
            add_num(o, "sqnr_db", r->worst_db);
            add_num(o, "eta", r->worst_eta);
            cJSON_AddStringToObject(o, "best_path", fp4_gemm_path_name((fp4_gemm_path)r->best));
            add_num(o, "best_sqnr_db", L->res[r->best].sqnr_db);
            add_num(o, "gap_db", r->gap_db);
        } else {
            cJSON_AddNullToObject(o, "worst_path");
            cJSON_AddNullToObject(o, "sqnr_db");
            cJSON_AddNullToObject(o, "eta");
            cJSON_AddNullToObject(o, "best_path");
            cJSON_AddNullToObject(o, "best_sqnr_db");
            cJSON_AddNullToObject(o, "gap_db");
        }
    }
    free(rows);
}

/* The width the gemm table fits (fp4_term_width of its stream; 0: none) while it is written. */
static int gemm_cols;

/* name (escaped) left-aligned in w columns: elided in the middle to them under a width; padded
 * to them when `pad`. */
static void gemm_put_name(FILE *out, const char *name, int w, bool pad)
{
    char *shown = fp4_text_escape(name, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
    const char *s = shown ? shown : name;
    char *el = gemm_cols > 0 && fp4_term_columns(s) > w ? fp4_term_elide(s, w) : NULL;
    if (el) s = el;
    fputs(s, out);
    for (int c = fp4_term_columns(s); pad && c < w; c++) fputc(' ', out);
    free(el);
    free(shown);
}

/* The columns of the longest escaped layer name among the first `n` of `rows` (all layers when
 * rows is NULL), at least `least`. */
static int gemm_name_cols(const fp4_gemm_run *run, const gemm_vrow *rows, int n, int least)
{
    int w = least;
    for (int i = 0; i < n; i++) {
        const char *nm = run->layers[rows ? rows[i].layer : i].name;
        char *shown = fp4_text_escape(nm, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
        int c = fp4_term_columns(shown ? shown : nm);
        free(shown);
        if (c > w) w = c;
    }
    return w;
}

static void gemm_verdict_table(FILE *out, const fp4_gemm_run *run)
{
    if (run->nlayers <= 0) return;
    fp4_gemm_pooled pool[FP4_GEMM_NPATHS];
    bool have[FP4_GEMM_NPATHS];
    int w = gemm_worst_path(run, pool, have);
    fprintf(out, "\nverdict (recipe %s, pooled over %d layer%s):\n",
            fp4_gemm_recipe_name(run->gc->recipe), run->nlayers, run->nlayers == 1 ? "" : "s");
    for (int p = 0; p < FP4_GEMM_NPATHS; p++) {
        if (!have[p]) continue;
        char s[16];
        fmt_db(s, sizeof s, pool[p].sqnr_db, pool[p].sqnr_status);
        fprintf(out, "  %-6s SQNR %9s dB  eta %.5f%s\n", fp4_gemm_path_name((fp4_gemm_path)p), s,
                pool[p].eta, p == w ? "   <- worst path" : "");
    }
    gemm_vrow *rows = gemm_verdict_rank(run);
    if (!rows) return;
    int top = run->nlayers < 10 ? run->nlayers : 10;
    const char *by = run->config->rank_by == FP4_RANK_SQNR    ? "lowest worst-path SQNR first"
                     : run->config->rank_by == FP4_RANK_DELTA ? "largest |1 - eta| first"
                                                          : "largest SQNR gap between paths first";
    fprintf(out, "  layers, %s (%d of %d; all in the JSON):\n", by, top, run->nlayers);
    /* the name column as wide as the longest name shown (at least 24); under a width what the
     * numbers leave (at least 16): when the full line would narrow the names below 24, the
     * compact line (narrower number columns, the worst path's eta left out: it is in the JSON) */
    int nw = gemm_name_cols(run, rows, top, 24);
    bool compact = false;
    if (gemm_cols > 0) {
        const int full = 78, brief = 60; /* the columns of a line besides the name */
        if (nw > gemm_cols - full) compact = gemm_cols - full < 24;
        int room = gemm_cols - (compact ? brief : full);
        if (room < 16) room = 16;
        if (nw > room) nw = room;
    }
    const int wp = compact ? 5 : 6, wn = compact ? 7 : 8;
    for (int i = 0; i < top; i++) {
        const gemm_vrow *r = &rows[i];
        const fp4_gemm_layer *L = &run->layers[r->layer];
        fputs("  ", out);
        gemm_put_name(out, L->name, nw, r->worst >= 0);
        if (r->worst < 0) {
            fputs(" no finite SQNR\n", out);
            continue;
        }
        fprintf(out, " worst %-*s %*.3f dB", wp, fp4_gemm_path_name((fp4_gemm_path)r->worst), wn,
                r->worst_db);
        if (!compact) fprintf(out, " (eta %.5f)", r->worst_eta);
        fprintf(out, "  best %-*s %*.3f  gap %6.3f dB\n", wp,
                fp4_gemm_path_name((fp4_gemm_path)r->best), wn, L->res[r->best].sqnr_db,
                r->gap_db);
    }
    free(rows);
}

char *fp4_report_gemm_json(int argc, char **argv, const fp4_gemm_run *run)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON_AddStringToObject(root, "schema", FP4_REPORT_SCHEMA);
    cJSON *tool = cJSON_AddObjectToObject(root, "tool");
    cJSON_AddStringToObject(tool, "name", FP4DIAG_NAME);
    cJSON_AddStringToObject(tool, "version", FP4DIAG_VERSION);
    cJSON_AddStringToObject(root, "command", "gemm");
    cJSON *av = cJSON_AddArrayToObject(root, "argv");
    for (int i = 0; i < argc; i++) cJSON_AddItemToArray(av, cJSON_CreateString(argv[i]));

    cJSON *input = cJSON_AddObjectToObject(root, "input");
    char *file = NULL;
    for (int i = 0; i < run->nlayers && !file; i++)
        for (int t = 0; t < 3 && !file; t++)
            if (run->layers[i].src[t]) file = source_file(run->layers[i].src[t]);
    cJSON_AddStringToObject(input, "file", file ? file : "");
    free(file);
    cJSON *dsets = cJSON_AddArrayToObject(input, "datasets");
    for (int i = 0; i < run->nlayers; i++)
        for (int t = 0; t < 3; t++)
            if (run->layers[i].src[t])
                cJSON_AddItemToArray(dsets, cJSON_CreateString(run->layers[i].src[t]));

    cJSON_AddItemToObject(root, "config", config_json(run));
    cJSON *layers = cJSON_AddArrayToObject(root, "layers");
    for (int i = 0; i < run->nlayers; i++)
        cJSON_AddItemToArray(layers, layer_json(run, &run->layers[i]));

    cJSON_AddItemToObject(root, "summary", fp4_report_gemm_summary(run));
    gemm_add_verdict(root, run);
    cJSON *errs = cJSON_AddArrayToObject(root, "errors");
    for (int i = 0; i < run->nerrors; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "tensor", run->errors[i].layer);
        cJSON_AddStringToObject(e, "status", "input_error");
        cJSON_AddStringToObject(e, "message", run->errors[i].message);
        cJSON_AddItemToArray(errs, e);
    }
    cJSON_AddItemToObject(root, "provenance", fp4_report_provenance_json(run->prints, run->nprints));
    cJSON *timing = cJSON_AddObjectToObject(root, "timing");
    cJSON_AddNumberToObject(timing, "seconds", run->seconds);
    cJSON_AddNumberToObject(timing, "bytes_read", (double)run->bytes_read);
    if (run->config->shard.count > 0) add_shard(root, run);

    fp4_json_make_valid(root);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

static void fmt_db(char *buf, size_t n, double db, fp4_sqnr_status st)
{
    if (st == FP4_SQNR_OK && isfinite(db))
        snprintf(buf, n, "%.2f", db);
    else
        snprintf(buf, n, "%s", st == FP4_SQNR_EXACT       ? "exact"
                               : st == FP4_SQNR_NONFINITE ? "nonfinite"
                                                          : "-");
}

static void gemm_table_text(FILE *out, const fp4_gemm_run *run)
{
    /* the layer column as wide as the longest name (at least 12); under a width, when the full
     * row does not fit, the compact layout (narrow number columns) and the name narrowed to
     * what the numbers leave (at least 12), elided in the middle */
    int nw = gemm_name_cols(run, NULL, run->nlayers, 12);
    bool compact = false, record = false;
    if (gemm_cols > 0 && nw + 70 > gemm_cols) {
        compact = true;
        int room = gemm_cols - 53;
        /* narrower still (a width of 40): one record per layer, its name on a line of its
         * own and a line of KEY=VALUE words per path under it (SPEC 9) */
        record = room < 12 && nw > room;
        if (room < 12) room = 12;
        if (nw > room) nw = room;
    }
    /* layer path operands SQNR eta aA*aB A-dB B-dB; compact: 5 8 7 7 7 6 6 */
    const int wp = compact ? 5 : 6, wo = compact ? 8 : 12, wn = compact ? 7 : 9,
              wd = compact ? 6 : 9;
    if (!record) {
        gemm_put_name(out, "layer", nw, true);
        fprintf(out, " %-*s %-*s %*s %*s %*s %*s %*s\n", wp, "path", wo, "operands", wn,
                "SQNR dB", wn, "eta", wn, "aA*aB", wd, "A dB", wd, "B dB");
    }
    for (int i = 0; i < run->nlayers; i++) {
        const fp4_gemm_layer *L = &run->layers[i];
        for (int p = 0; p < FP4_GEMM_NPATHS; p++) {
            if (!(L->paths & (1u << p))) continue;
            const fp4_gemm_path_result *r = &L->res[p];
            char ops[16], s[16], sa[16], sb[16];
            snprintf(ops, sizeof ops, "%s%s.%s%s", fp4_gemm_tensor_name(r->op[0].tensor),
                     r->op[0].transposed ? "T" : "", fp4_gemm_tensor_name(r->op[1].tensor),
                     r->op[1].transposed ? "T" : "");
            fmt_db(s, sizeof s, r->sqnr_db, r->sqnr_status);
            fmt_db(sa, sizeof sa, r->op[0].m.sqnr_db, r->op[0].m.sqnr_status);
            fmt_db(sb, sizeof sb, r->op[1].m.sqnr_db, r->op[1].m.sqnr_status);
            if (record) {
                if (p == 0 || !(L->paths & ((1u << p) - 1))) { /* the layer's first path */
                    gemm_put_name(out, L->name, gemm_cols, false);
                    fputc('\n', out);
                }
                fprintf(out, "  %s %s SQNR_dB=%s eta=%.5f aA*aB=%.5f A_dB=%s B_dB=%s\n",
                        fp4_gemm_path_name(r->path), ops, s, r->eta, r->alpha_product, sa, sb);
                continue;
            }
            gemm_put_name(out, L->name, nw, true);
            fprintf(out, " %-*s %-*s %*s %*.5f %*.5f %*s %*s\n", wp, fp4_gemm_path_name(r->path),
                    wo, ops, wn, s, wn, r->eta, wn, r->alpha_product, wd, sa, wd, sb);
        }
    }
    if (run->config->layers > 0 || run->nlayers > 1) {
        for (int p = 0; p < FP4_GEMM_NPATHS; p++) {
            fp4_gemm_pooled pool;
            if (!(run->paths & (1u << p)) ||
                fp4_gemm_pool(run->layers, run->nlayers, (fp4_gemm_path)p, run->config->layers,
                              &pool) != FP4_OK)
                continue;
            char s[16];
            fmt_db(s, sizeof s, pool.sqnr_db, pool.sqnr_status);
            if (record) {
                if (p == 0 || !(run->paths & ((1u << p) - 1))) fputs("pooled\n", out);
                fprintf(out, "  %s SQNR_dB=%s eta=%.5f", fp4_gemm_path_name((fp4_gemm_path)p), s,
                        pool.eta);
            } else {
                gemm_put_name(out, "pooled", nw, true);
                fprintf(out, " %-*s %-*s %*s %*.5f", wp, fp4_gemm_path_name((fp4_gemm_path)p),
                        wo, "", wn, s, wn, pool.eta);
            }
            if (run->config->layers > 0) /* the compounds, as the JSON has them: --layers only;
                                          * under a width on a line of their own */
                fprintf(out, "%s(over %d layers: prod eta %.5f, exp(-sum delta) %.5f)",
                        gemm_cols > 0 ? "\n  " : "   ", pool.compound_layers, pool.prod_eta,
                        pool.exp_neg_sum_delta);
            fputc('\n', out);
        }
    }
    gemm_verdict_table(out, run);
}

void fp4_report_gemm_table(FILE *out, const fp4_gemm_run *run)
{
    gemm_cols = fp4_term_width(out);
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = gemm_cols > 0 ? open_memstream(&buf, &len) : NULL;
    if (!mem) {
        gemm_table_text(out, run);
        gemm_cols = 0;
        return;
    }
    gemm_table_text(mem, run); /* a line still too long (the compound note) wraps at spaces */
    if (fclose(mem) == 0 && buf) fp4_term_write(out, buf, gemm_cols);
    free(buf);
    gemm_cols = 0;
}

fp4_status fp4_report_gemm(int argc, char **argv, const fp4_gemm_run *run)
{
    if (fp4_report_terminal_first(run->config)) {
        fp4_report_gemm_table(stdout, run);
        return fp4_report_terminal_note();
    }
    if (fp4_report_quiet_terminal(run->config->output, run->config->json, run->config->verbosity)) {
        fp4_report_quiet_note();
        return FP4_OK;
    }
    char *text = fp4_report_gemm_json(argc, argv, run);
    if (!text) return fp4_error(FP4_ERR_INTERNAL, "out of memory building the report");
    size_t len = strlen(text);
    char *withnl = realloc(text, len + 2);
    if (!withnl) {
        free(text);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory building the report");
    }
    withnl[len] = '\n';
    withnl[len + 1] = '\0';
    fp4_status st = fp4_output_write(run->config->output, withnl, len + 1);
    free(withnl);
    if (st != FP4_OK) return st;
    FILE *table = fp4_report_table_stream(run->config->output, run->config->verbosity);
    if (table) fp4_report_gemm_table(table, run);
    return FP4_OK;
}
