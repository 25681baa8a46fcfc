/* report/audit.c — the audit report: JSON (fp4diag.audit/1) and the table (see
 * report/audit.h). */
#include "report/audit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "base/status.h"
#include "base/term.h"
#include "base/version.h"
#include "report/report.h"
#include "report/verdict.h"

static const char *status_name(fp4_status st)
{
    switch (st) {
    case FP4_OK: return "ok";
    case FP4_ERR_USAGE: return "usage_error";
    case FP4_ERR_INPUT: return "input_error";
    case FP4_ERR_DEVICE: return "device_error";
    default: return "internal_error";
    }
}

/* A number, or null when not finite. */
static void num(cJSON *o, const char *key, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

static double frac(int64_t a, int64_t b) { return b > 0 ? (double)a / (double)b : NAN; }

/* One side (export, requant) against the source: SQNR, status, alpha, the non-amax SQNR and
 * its status (sums na), the code histogram and its bucket use (bucket_ratio_15,
 * bucket_ratio_8, max_frac). `none`: the pool of no tensor, both statuses "none_pooled"
 * (never "zero_signal", which says the tensors' source is all zero). */
static void sums_json(cJSON *parent, const char *key, const fp4_audit_sums *s,
                      const fp4_audit_sums *na, const int64_t hist[16], bool none)
{
    cJSON *o = cJSON_AddObjectToObject(parent, key);
    if (!o) return;
    const char *status;
    num(o, "sqnr_db", fp4_audit_sqnr(s, &status));
    cJSON_AddStringToObject(o, "sqnr_status", none ? "none_pooled" : status);
    num(o, "alpha", fp4_audit_alpha(s));
    num(o, "sqnr_nonamax_db", fp4_audit_sqnr(na, &status));
    cJSON_AddStringToObject(o, "sqnr_nonamax_status", none ? "none_pooled" : status);
    cJSON *h = cJSON_AddArrayToObject(o, "histogram");
    for (int c = 0; h && c < 16; c++)
        cJSON_AddItemToArray(h, cJSON_CreateNumber((double)hist[c]));
    const fp4_audit_buckets b = fp4_audit_bucket_use(hist);
    num(o, "bucket_ratio_15", b.b15);
    num(o, "bucket_ratio_8", b.b8);
    num(o, "max_frac", b.max_frac);
}

cJSON *fp4_report_audit_pooled_json(int tensors, const fp4_audit_sums ex[2],
                                    const fp4_audit_sums rq[2], const int64_t ex_hist[16],
                                    const int64_t rq_hist[16], int64_t nonnearest,
                                    int64_t elements, int64_t scale_match, int64_t scale_bytes)
{
    cJSON *po = cJSON_CreateObject();
    if (!po) return NULL;
    cJSON_AddNumberToObject(po, "tensors", tensors);
    sums_json(po, "export", &ex[0], &ex[1], ex_hist, tensors == 0);
    sums_json(po, "requant", &rq[0], &rq[1], rq_hist, tensors == 0);
    num(po, "nonnearest_frac", frac(nonnearest, elements));
    num(po, "scale_match_frac", frac(scale_match, scale_bytes));
    return po;
}

static cJSON *hex3(const fp4_audit_sums *s)
{
    cJSON *a = cJSON_CreateArray();
    const double v[3] = {s->xx, s->ee, s->xq};
    for (int k = 0; a && k < 3; k++) {
        char b[48];
        snprintf(b, sizeof b, "%a", v[k]);
        cJSON_AddItemToArray(a, cJSON_CreateString(b));
    }
    return a;
}

/* --shard: the share, the selection positions it took, the name and shape at every position
 * of the selection (whichever share holds it), per tensor the exact state `merge`
 * pools and checks the shown numbers against (hex floats: the sums, those of each layout
 * hypothesis tried; the counts), the positions of its errors, and the inputs' fingerprint. */
static void add_shard(cJSON *root, const fp4_audit *a)
{
    cJSON *sh = cJSON_AddObjectToObject(root, "shard");
    if (!sh) return;
    cJSON_AddNumberToObject(sh, "index", a->shard.index);
    cJSON_AddNumberToObject(sh, "count", a->shard.count);
    cJSON_AddNumberToObject(sh, "selected", a->selected);
    cJSON *as = cJSON_AddArrayToObject(sh, "assigned");
    for (int i = 0; as && i < a->nassigned; i++)
        cJSON_AddItemToArray(as, cJSON_CreateNumber(a->assigned[i]));
    cJSON *nm = cJSON_AddArrayToObject(sh, "names");
    for (int i = 0; nm && a->selnames && i < a->selected; i++)
        cJSON_AddItemToArray(nm, cJSON_CreateString(a->selnames[i]));
    cJSON *ss = cJSON_AddArrayToObject(sh, "shapes");
    for (int i = 0; ss && a->selshapes && i < a->selected; i++) {
        cJSON *d = cJSON_CreateArray();
        if (!d) return;
        cJSON_AddItemToArray(ss, d);
        for (int k = 0; k < a->selshapes[i].rank; k++)
            cJSON_AddItemToArray(d, cJSON_CreateNumber((double)a->selshapes[i].dims[k]));
    }
    cJSON *ts = cJSON_AddArrayToObject(sh, "tensors");
    for (int i = 0; ts && i < a->n; i++) {
        const fp4_audit_tensor *t = &a->t[i];
        if (t->layout_fit < 0) continue; /* as the "tensors" array */
        cJSON *o = cJSON_CreateObject();
        if (!o) return;
        cJSON_AddItemToArray(ts, o);
        cJSON_AddNumberToObject(o, "index", t->position);
        cJSON_AddItemToObject(o, "export", hex3(&t->export_));
        cJSON_AddItemToObject(o, "requant", hex3(&t->requant));
        cJSON_AddItemToObject(o, "export_nonamax", hex3(&t->export_na));
        cJSON_AddItemToObject(o, "requant_nonamax", hex3(&t->requant_na));
        cJSON_AddNumberToObject(o, "elements", (double)t->export_.n);
        cJSON_AddNumberToObject(o, "nonnearest", (double)t->nonnearest);
        cJSON_AddNumberToObject(o, "scale_match", (double)t->scale_match);
        cJSON_AddNumberToObject(o, "scale_bytes", (double)t->scale_bytes);
        cJSON_AddBoolToObject(o, "pooled", t->layout_fit == FP4_AUDIT_H_DECLARED);
        cJSON_AddNumberToObject(o, "zero_blocks", (double)t->zero_blocks);
        cJSON *hs = cJSON_AddArrayToObject(o, "hypotheses"); /* as layout_check lists them */
        for (int k = 0; hs && k < FP4_AUDIT_NH; k++)
            if (t->hyp_tried[k]) cJSON_AddItemToArray(hs, hex3(&t->hyp[k]));
    }
    cJSON *es = cJSON_AddArrayToObject(sh, "errors");
    for (int i = 0; es && i < a->nerrors; i++)
        cJSON_AddItemToArray(es, cJSON_CreateNumber(a->errors[i].position));
    cJSON_AddItemToObject(sh, "fingerprint", fp4_report_fingerprint_json(a->prints, a->nprints));
}

static const char *fit_name(const fp4_audit_tensor *t)
{
    return t->layout_fit >= 0 ? fp4_audit_hypothesis_label(t, t->layout_fit) : "none";
}

/* Where the requantization's per-tensor scale comes from (SPEC §11, requant.global_scale_from):
 * NVFP4 "group amax" (a member of a fused group: the group's amax, as the producer computes it),
 * "tensor amax" (no group), "none" (GGUF: 1.0, llama-quantize writes none); MXFP4 NULL. */
static const char *global_scale_from(const fp4_audit_tensor *t)
{
    if (t->q.format != FP4_QF_NVFP4) return NULL;
    if (t->q.producer == FP4_QP_GGUF) return "none";
    return t->group[0] ? "group amax" : "tensor amax";
}

/* Whether the table flags t REEXPORT and the JSON's "reexport" is true: read as declared and
 * fp4_audit_reexport (SPEC §11). */
static bool tensor_reexport(const fp4_audit_tensor *t)
{
    return t->layout_fit == FP4_AUDIT_H_DECLARED &&
           fp4_audit_reexport(&t->export_, &t->requant, t->nonnearest, t->export_.n);
}

char *fp4_report_audit_json(int argc, char **argv, const fp4_audit *a)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON_AddStringToObject(root, "schema", "fp4diag.audit/1");
    cJSON *tool = cJSON_AddObjectToObject(root, "tool");
    if (tool) {
        cJSON_AddStringToObject(tool, "name", FP4DIAG_NAME);
        cJSON_AddStringToObject(tool, "version", FP4DIAG_VERSION);
    }
    cJSON_AddStringToObject(root, "command", "audit");
    cJSON *av = cJSON_AddArrayToObject(root, "argv");
    if (av) cJSON_AddItemToArray(av, cJSON_CreateString(FP4DIAG_NAME));
    for (int i = 0; av && i < argc; i++) cJSON_AddItemToArray(av, cJSON_CreateString(argv[i]));
    cJSON *in = cJSON_AddObjectToObject(root, "input");
    if (in) {
        cJSON_AddStringToObject(in, "source", a->source);
        cJSON_AddStringToObject(in, "quantized", a->quantized);
        if (a->declared[0])
            cJSON_AddStringToObject(in, "declared", a->declared);
        else
            cJSON_AddNullToObject(in, "declared");
    }
    cJSON_AddStringToObject(root, "device", a->device[0] ? a->device : "cpu");
    cJSON *arr = cJSON_AddArrayToObject(root, "tensors");
    for (int i = 0; arr && i < a->n; i++) {
        const fp4_audit_tensor *t = &a->t[i];
        if (t->layout_fit < 0) continue; /* an errors entry */
        const fp4_qtensor *q = &t->q;
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON *sh = cJSON_AddArrayToObject(o, "shape");
        for (int d = 0; sh && d < q->rank; d++)
            cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)q->dims[d]));
        cJSON *qo = cJSON_AddObjectToObject(o, "quant");
        if (qo) {
            cJSON_AddStringToObject(qo, "format", fp4_qformat_name(q->format));
            cJSON_AddStringToObject(qo, "producer", fp4_qproducer_name(q->producer));
            cJSON_AddStringToObject(qo, "layout", q->layout);
            cJSON_AddNumberToObject(qo, "block", q->block);
        }
        sums_json(o, "export", &t->export_, &t->export_na, t->histogram, false);
        sums_json(o, "requant", &t->requant, &t->requant_na, t->rq_histogram, false);
        cJSON *rqo = cJSON_GetObjectItemCaseSensitive(o, "requant");
        const char *gfrom = global_scale_from(t);
        if (rqo && gfrom)
            cJSON_AddStringToObject(rqo, "global_scale_from", gfrom);
        else if (rqo)
            cJSON_AddNullToObject(rqo, "global_scale_from");
        cJSON_AddNumberToObject(o, "elements", (double)t->export_.n);
        num(o, "nonnearest_frac", frac(t->nonnearest, t->export_.n));
        cJSON_AddNumberToObject(o, "nonnearest", (double)t->nonnearest);
        if (t->layout_fit == FP4_AUDIT_H_DECLARED)
            cJSON_AddBoolToObject(o, "reexport", tensor_reexport(t));
        else
            cJSON_AddNullToObject(o, "reexport");
        num(o, "scale_match_frac", frac(t->scale_match, t->scale_bytes));
        cJSON_AddNumberToObject(o, "scale_bytes", (double)t->scale_bytes);
        cJSON *df = cJSON_AddArrayToObject(o, "scale_byte_diff");
        for (int k = 0; df && k < FP4_AUDIT_DIFF_BINS; k++)
            cJSON_AddItemToArray(df, cJSON_CreateNumber((double)t->diff[k]));
        if (q->format == FP4_QF_NVFP4) {
            cJSON *g = cJSON_AddObjectToObject(o, "global_scale");
            if (g) {
                num(g, "stored", t->global_stored);
                num(g, "rule", t->global_rule);
                cJSON_AddBoolToObject(g, "match", t->global_stored == t->global_rule);
                num(g, "group_amax", t->group_amax);
                if (t->group[0])
                    cJSON_AddStringToObject(g, "group", t->group);
                else
                    cJSON_AddNullToObject(g, "group");
                if (t->group_shared >= 0)
                    cJSON_AddBoolToObject(g, "group_shared", t->group_shared == 1);
                else
                    cJSON_AddNullToObject(g, "group_shared");
            }
        } else {
            cJSON_AddNullToObject(o, "global_scale");
        }
        cJSON *sp = cJSON_AddObjectToObject(o, "special_scale_bytes");
        if (sp) {
            cJSON_AddNumberToObject(sp, "e8m0_ff", (double)t->e8m0_ff);
            cJSON_AddNumberToObject(sp, "e4m3_nan", (double)t->e4m3_nan);
        }
        cJSON_AddNumberToObject(o, "zero_blocks", (double)t->zero_blocks);
        if (t->scale_rule_fit >= 0)
            cJSON_AddStringToObject(o, "scale_rule_fit", fp4_audit_mx_rule_name(t->scale_rule_fit));
        else
            cJSON_AddNullToObject(o, "scale_rule_fit");
        cJSON *lo = cJSON_AddObjectToObject(o, "layout_check");
        if (lo) {
            cJSON_AddStringToObject(lo, "fits", fit_name(t));
            cJSON_AddBoolToObject(lo, "as_declared", t->layout_fit == FP4_AUDIT_H_DECLARED);
            cJSON *hy = cJSON_AddArrayToObject(lo, "hypotheses");
            for (int k = 0; hy && k < FP4_AUDIT_NH; k++) {
                if (!t->hyp_tried[k]) continue;
                cJSON *e = cJSON_CreateObject();
                if (!e) break;
                cJSON_AddItemToArray(hy, e);
                cJSON_AddStringToObject(e, "layout", fp4_audit_hypothesis_label(t, k));
                const char *status;
                num(e, "sqnr_db", fp4_audit_sqnr(&t->hyp[k], &status));
                cJSON_AddStringToObject(e, "sqnr_status", status);
            }
        }
    }
    int np = 0;
    for (int i = 0; i < a->n; i++) np += a->t[i].layout_fit == FP4_AUDIT_H_DECLARED;
    const fp4_audit_sums pex[2] = {a->pooled_export, a->pooled_export_na};
    const fp4_audit_sums prq[2] = {a->pooled_requant, a->pooled_requant_na};
    cJSON *po = fp4_report_audit_pooled_json(np, pex, prq,
                                             a->pooled_histogram, a->pooled_rq_histogram,
                                             a->pooled_nonnearest, a->pooled_elements,
                                             a->pooled_scale_match, a->pooled_scale_bytes);
    if (po) cJSON_AddItemToObject(root, "pooled", po);
    cJSON *sk = cJSON_AddArrayToObject(root, "skipped");
    for (int i = 0; sk && i < a->nskipped; i++) {
        const fp4_audit_skip *x = &a->skipped[i];
        cJSON *e = cJSON_CreateObject();
        if (!e) break;
        cJSON_AddItemToArray(sk, e);
        cJSON_AddStringToObject(e, "name", x->name);
        cJSON *sh = cJSON_AddArrayToObject(e, "shape");
        for (int d = 0; sh && d < x->rank; d++)
            cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)x->dims[d]));
        cJSON_AddStringToObject(e, "dtype", x->dtype);
        if (x->format[0])
            cJSON_AddStringToObject(e, "format", x->format);
        else
            cJSON_AddNullToObject(e, "format");
        cJSON_AddStringToObject(e, "reason", x->reason);
    }
    cJSON *er = cJSON_AddArrayToObject(root, "errors");
    for (int i = 0; er && i < a->nerrors; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!e) break;
        cJSON_AddItemToArray(er, e);
        cJSON_AddStringToObject(e, "tensor", a->errors[i].tensor);
        cJSON_AddStringToObject(e, "status", status_name(a->errors[i].status));
        cJSON_AddStringToObject(e, "message", a->errors[i].message);
    }
    cJSON_AddItemToObject(root, "provenance", fp4_report_provenance_json(a->prints, a->nprints));
    cJSON *tm = cJSON_AddObjectToObject(root, "timing");
    if (tm) cJSON_AddNumberToObject(tm, "seconds", a->seconds);
    if (a->shard.count > 0) add_shard(root, a);
    fp4_json_make_valid(root);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

static int by_sqnr(const void *pa, const void *pb)
{
    const fp4_audit_tensor *a = *(const fp4_audit_tensor *const *)pa;
    const fp4_audit_tensor *b = *(const fp4_audit_tensor *const *)pb;
    const char *s;
    double x = fp4_audit_sqnr(&a->export_, &s), y = fp4_audit_sqnr(&b->export_, &s);
    if (isnan(x)) x = INFINITY; /* exact exports last */
    if (isnan(y)) y = INFINITY;
    return x < y ? -1 : x > y ? 1 : strcmp(a->name, b->name);
}

/* The table's order (issue 29): a tensor left out of the pool for its layout first; then, with
 * FP4_KEEP_MIN_TENSORS or more, the verdict's keep score (SPEC 9, fp4_keep_score) of the export:
 * the largest of the modified z-scores of its flushed share (higher than the typical tensor's),
 * of its SQNR (lower) and of its non-amax SQNR (lower), highest first, kept above FP4_KEEP_Z: a
 * tensor whose small values were flushed, or one whose outlier input channel coarsened the
 * rest of its blocks, has a high SQNR and would otherwise come last; ties and fewer tensors:
 * lowest export SQNR first. */
typedef struct audit_row {
    const fp4_audit_tensor *t;
    double f, score;    /* f: the export's flushed share (the table's column) */
    fp4_keep_by by;
    bool reexport;      /* read as declared and fp4_audit_reexport */
} audit_row;

static double flushed_share(const fp4_audit_tensor *t)
{
    return t->src_nonzero > 0 ? (double)t->flushed / (double)t->src_nonzero : NAN;
}

static int dbl_cmp(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

/* median and MAD of the finite values of v[0..n) (work: n doubles); NaN when none */
static void med_mad(const double *v, int n, double *work, double *med, double *mad)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) work[k++] = v[i];
    if (k == 0) {
        *med = *mad = NAN;
        return;
    }
    qsort(work, (size_t)k, sizeof *work, dbl_cmp);
    *med = k % 2 ? work[k / 2] : 0.5 * (work[k / 2 - 1] + work[k / 2]);
    for (int i = 0; i < k; i++) work[i] = fabs(work[i] - *med);
    qsort(work, (size_t)k, sizeof *work, dbl_cmp);
    *mad = k % 2 ? work[k / 2] : 0.5 * (work[k / 2 - 1] + work[k / 2]);
}

static int by_rank(const void *pa, const void *pb)
{
    const audit_row *a = pa, *b = pb;
    const bool la = a->t->layout_fit != FP4_AUDIT_H_DECLARED,
               lb = b->t->layout_fit != FP4_AUDIT_H_DECLARED;
    if (la != lb) return la ? -1 : 1;
    if (a->reexport != b->reexport) return a->reexport ? -1 : 1;
    const double x = isnan(a->score) ? -INFINITY : a->score,
                 y = isnan(b->score) ? -INFINITY : b->score;
    if (x != y) return x > y ? -1 : 1;
    return by_sqnr(&a->t, &b->t);
}

/* Fill rows[0..n) (ord's tensors) with the flushed share, the re-export flag, the score and its
 * reason, and sort them. The score judges each tensor by its export's flushed share, SQNR and
 * non-amax SQNR; a re-export tensor by our round-to-nearest's (what re-exporting it gives). */
static void audit_rank(audit_row *rows, int n)
{
    double *j[3], *v[3], *w = calloc((size_t)n + 1, sizeof *w);
    bool ok = w != NULL;
    for (int k = 0; k < 3; k++) {
        j[k] = calloc((size_t)n + 1, sizeof *j[k]);
        v[k] = calloc((size_t)n + 1, sizeof *v[k]);
        ok = ok && j[k] && v[k];
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        const fp4_audit_tensor *t = rows[i].t;
        const char *st;
        rows[i].f = flushed_share(t);
        rows[i].reexport = tensor_reexport(t);
        rows[i].score = NAN;
        rows[i].by = FP4_KEEP_BY_FLUSHED;
        if (t->layout_fit != FP4_AUDIT_H_DECLARED || !ok) continue;
        const bool rq = rows[i].reexport;
        j[0][i] = !rq ? rows[i].f
                  : t->src_nonzero > 0 ? (double)t->rq_flushed / (double)t->src_nonzero
                                       : NAN;
        j[1][i] = fp4_audit_sqnr(rq ? &t->requant : &t->export_, &st);
        j[2][i] = fp4_audit_sqnr(rq ? &t->requant_na : &t->export_na, &st);
        for (int k = 0; k < 3; k++) v[k][m] = j[k][i];
        m++;
    }
    if (ok && m >= FP4_KEEP_MIN_TENSORS) {
        double med[3], mad[3];
        for (int k = 0; k < 3; k++) med_mad(v[k], m, w, &med[k], &mad[k]);
        mad[0] = fmax(mad[0], FP4_KEEP_MAD_FLUSHED);
        mad[1] = fmax(mad[1], FP4_KEEP_MAD_SQNR_DB);
        mad[2] = fmax(mad[2], FP4_KEEP_MAD_SQNR_DB);
        for (int i = 0; i < n; i++) {
            if (rows[i].t->layout_fit != FP4_AUDIT_H_DECLARED) continue;
            /* as the verdict's: a value that is not finite has that z 0 */
            const double f = j[0][i], sq = j[1][i], a = j[2][i];
            double zf = isfinite(f) && isfinite(med[0]) ? 0.6745 * (f - med[0]) / mad[0] : 0;
            double zs = isfinite(sq) && isfinite(med[1]) ? 0.6745 * (med[1] - sq) / mad[1] : 0;
            double za = isfinite(a) && isfinite(med[2]) ? 0.6745 * (med[2] - a) / mad[2] : 0;
            rows[i].score = fp4_keep_score(zf, zs, za, &rows[i].by);
        }
    }
    for (int k = 0; k < 3; k++) free(j[k]), free(v[k]);
    free(w);
    qsort(rows, (size_t)n, sizeof *rows, by_rank);
}

/* The row's flag: "LAYOUT" (left out of the pool); else "REEXPORT" (the export is worse than
 * round-to-nearest) and/or "KEEP (WHY)" (WHY the keep list's word for the z-score that decided:
 * flushed, SQNR, non-amax), space-separated; or "". */
static void row_flag(const audit_row *r, char *buf, size_t cap)
{
    const bool keep = r->score > FP4_KEEP_Z;
    buf[0] = '\0';
    if (r->t->layout_fit != FP4_AUDIT_H_DECLARED)
        snprintf(buf, cap, "LAYOUT");
    else if (r->reexport || keep)
        snprintf(buf, cap, "%s%s%s%s%s", r->reexport ? "REEXPORT" : "",
                 r->reexport && keep ? " " : "", keep ? "KEEP (" : "",
                 keep ? fp4_keep_by_word(r->by) : "", keep ? ")" : "");
}

static void pct_text(char *buf, size_t cap, double v, const char *fmt)
{
    if (isnan(v)) snprintf(buf, cap, "-");
    else snprintf(buf, cap, fmt, 100.0 * v);
}

static void db_text(char *buf, size_t cap, const fp4_audit_sums *s)
{
    const char *status;
    double v = fp4_audit_sqnr(s, &status);
    if (isnan(v))
        snprintf(buf, cap, "%s", status);
    else
        snprintf(buf, cap, "%.3f", v);
}

/* name (escaped) left-aligned in w columns, elided in the middle to them when `elide`. */
static void audit_put_name(FILE *out, const char *name, int w, bool elide)
{
    char *shown = fp4_text_escape(name, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
    const char *s = shown ? shown : name;
    char *el = elide && fp4_term_columns(s) > w ? fp4_term_elide(s, w) : NULL;
    if (el) s = el;
    fputs(s, out);
    for (int c = fp4_term_columns(s); c < w; c++) fputc(' ', out);
    free(el);
    free(shown);
}

/* One line for the skipped list (as sqnr's): how many, the first few with their reasons (those
 * stored in another quantized format first: FP8, other GGUF block types), "..." for more. */
static void audit_skipped_line(FILE *out, const fp4_audit *a)
{
    if (a->nskipped == 0) return;
    enum { MOST = 4 };
    fprintf(out, "skipped %d tensor%s (not audited, not pooled):", a->nskipped,
            a->nskipped == 1 ? "" : "s");
    int shown = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < a->nskipped && shown < MOST; i++) {
            const fp4_audit_skip *x = &a->skipped[i];
            if ((x->format[0] != '\0') != (pass == 0)) continue;
            char *nm = fp4_text_escape(x->name, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
            char *why = fp4_text_escape(x->reason, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
            fprintf(out, "%s %s [%s]", shown ? "," : "", nm ? nm : x->name,
                    why ? why : x->reason);
            free(nm);
            free(why);
            shown++;
        }
    fprintf(out, "%s\n", a->nskipped > shown ? ", ... (the JSON report's \"skipped\" lists all)"
                                             : "");
}

/* The compact layout's number columns: one row's texts, and each column's width (the widest
 * of its header and every row's text: a negative alpha, a gain of -23.993 or a status word
 * widens its column rather than push the row's later columns right). */
enum { AUDIT_NCOLS = 8 };
typedef struct audit_cells {
    char c[AUDIT_NCOLS][32];
} audit_cells;
static const char *const audit_heads[AUDIT_NCOLS] = {"export", "alpha", "flush%",   "RTN",
                                                     "alpha",  "gain",  "nonnear%", "same%"};

static void audit_cells_of(audit_cells *c, const fp4_audit_sums *ex, const fp4_audit_sums *rq,
                           double flushed, const char *gain, double nonnear, double same)
{
    db_text(c->c[0], sizeof c->c[0], ex);
    snprintf(c->c[1], sizeof c->c[1], "%.5f", fp4_audit_alpha(ex));
    pct_text(c->c[2], sizeof c->c[2], flushed, "%.2f");
    db_text(c->c[3], sizeof c->c[3], rq);
    snprintf(c->c[4], sizeof c->c[4], "%.5f", fp4_audit_alpha(rq));
    snprintf(c->c[5], sizeof c->c[5], "%s", gain);
    snprintf(c->c[6], sizeof c->c[6], "%.4f", 100.0 * nonnear);
    snprintf(c->c[7], sizeof c->c[7], "%.4f", 100.0 * same);
}

static void audit_cells_widen(int *cw, const audit_cells *c)
{
    for (int k = 0; k < AUDIT_NCOLS; k++) {
        int l = (int)strlen(c->c[k]);
        if (l > cw[k]) cw[k] = l;
    }
}

static void audit_cells_put(FILE *out, const int *cw, const audit_cells *c)
{
    for (int k = 0; k < AUDIT_NCOLS; k++) fprintf(out, " %*s", cw[k], c->c[k]);
}

static void audit_table_text(FILE *out, const fp4_audit *a, int cols)
{
    int n = 0, w = 6;
    const fp4_audit_tensor **ord = calloc((size_t)a->n + 1, sizeof *ord);
    if (!ord) return;
    for (int i = 0; i < a->n; i++) {
        if (a->t[i].layout_fit < 0) continue;
        ord[n++] = &a->t[i];
        char *shown = fp4_text_escape(a->t[i].name, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
        int l = fp4_term_columns(shown ? shown : a->t[i].name);
        free(shown);
        if (l > w) w = l;
    }
    audit_row *rows = calloc((size_t)n + 1, sizeof *rows);
    if (!rows) {
        free(ord);
        return;
    }
    for (int i = 0; i < n; i++) rows[i].t = ord[i];
    audit_rank(rows, n);
    bool ranked = false, reexport = false, nvgroup = false;
    for (int i = 0; i < n; i++) {
        ord[i] = rows[i].t;
        ranked |= !isnan(rows[i].score);
        reexport |= rows[i].reexport;
        const char *gf = global_scale_from(ord[i]);
        nvgroup |= gf && !strcmp(gf, "group amax");
    }
    char e[32], r[32], fp[48], fl[32];
    /* under a width, when the full row does not fit: the compact layout (one space between
     * columns, number columns as narrow as their values, the format/producer column left out
     * when every tensor has the same one: it is said on a line above the table) and the names
     * narrowed to what is left (at least 12), elided in the middle */
    bool compact = false, fpcol = true, record = false;
    int fw = 24;
    /* the flag after a row's last column: under a width it follows FP4_TERM_FLAG, so that a
     * row whose flag does not fit keeps its columns and has the flag on a continuation line
     * (fp4_term_write); the names are narrowed to leave room for it */
    const char *mark = cols > 0 ? FP4_TERM_FLAG : "";
    int flagw = 0;
    for (int i = 0; i < n; i++) { /* the widest flag and its space */
        char flag[64];
        row_flag(&rows[i], flag, sizeof flag);
        if (flag[0] && (int)strlen(flag) + 1 > flagw) flagw = (int)strlen(flag) + 1;
    }
    int cw[AUDIT_NCOLS] = {6, 7, 6, 6, 7, 6, 8, 8};
    audit_cells *cells = calloc((size_t)n + 1, sizeof *cells);
    if (!cells) {
        free(rows);
        free(ord);
        return;
    }
    if (cols > 0 && w + 107 + (flagw ? flagw + 1 : 0) > cols) {
        compact = true;
        fw = 6;
        for (int i = 0; i < n; i++) {
            snprintf(fp, sizeof fp, "%s %s", fp4_qformat_name(ord[i]->q.format),
                     fp4_qproducer_name(ord[i]->q.producer));
            int l = (int)strlen(fp);
            if (l > fw) fw = l;
            fpcol = fpcol && ord[i]->q.format == ord[0]->q.format &&
                    ord[i]->q.producer == ord[0]->q.producer;
        }
        fpcol = !fpcol || n == 0;
        if (!fpcol)
            fprintf(out, "format/producer: %s %s (every tensor)\n", fp4_qformat_name(ord[0]->q.format),
                    fp4_qproducer_name(ord[0]->q.producer));
        /* the number columns as wide as their widest text (the pooled row's too) */
        for (int i = 0; i < n; i++) {
            const fp4_audit_tensor *t = ord[i];
            const char *s1, *s2;
            double ev = fp4_audit_sqnr(&t->export_, &s1), rv = fp4_audit_sqnr(&t->requant, &s2);
            char gain[16] = "-";
            if (!isnan(ev) && !isnan(rv)) snprintf(gain, sizeof gain, "%+.3f", ev - rv);
            audit_cells_of(&cells[i], &t->export_, &t->requant, rows[i].f, gain,
                           frac(t->nonnearest, t->export_.n), frac(t->scale_match, t->scale_bytes));
            audit_cells_widen(cw, &cells[i]);
        }
        int64_t pf = 0, pnz = 0;
        for (int i = 0; i < a->n; i++) {
            if (a->t[i].layout_fit != FP4_AUDIT_H_DECLARED) continue;
            pf += a->t[i].flushed;
            pnz += a->t[i].src_nonzero;
        }
        audit_cells_of(&cells[n], &a->pooled_export, &a->pooled_requant, frac(pf, pnz), "",
                       frac(a->pooled_nonnearest, a->pooled_elements),
                       frac(a->pooled_scale_match, a->pooled_scale_bytes));
        audit_cells_widen(cw, &cells[n]);
        int fixed = 0;
        for (int k = 0; k < AUDIT_NCOLS; k++) fixed += 1 + cw[k];
        int room = cols - fixed - (fpcol ? fw + 1 : 0);
        if (room - flagw >= 12) room -= flagw; /* else the flags go on continuation lines */
        /* narrower still (a width of 40): one record per tensor, its name on a line of its
         * own and its values as KEY=VALUE words under it, wrapped at spaces (SPEC 9) */
        record = room < 12 && w > room;
        if (room < 12) room = 12;
        if (w > room) w = room;
    }
    if (record) {
        /* no header: every value is named */
    } else {
        audit_put_name(out, "tensor", w, false);
    }
    if (record) {
    } else if (compact) {
        if (fpcol) fprintf(out, " %-*s", fw, "format");
        for (int k = 0; k < AUDIT_NCOLS; k++) fprintf(out, " %*s", cw[k], audit_heads[k]);
        fputc('\n', out);
    } else {
        fprintf(out, "  %-24s  %9s %8s %9s  %9s %8s  %7s  %9s  %11s\n", "format/producer",
                "export dB", "alpha", "flushed%", "RTN dB", "alpha", "gain dB", "nonnear%",
                "scale same%");
    }
    for (int i = 0; i < n; i++) {
        const fp4_audit_tensor *t = ord[i];
        const char *s1, *s2;
        double ev = fp4_audit_sqnr(&t->export_, &s1), rv = fp4_audit_sqnr(&t->requant, &s2);
        db_text(e, sizeof e, &t->export_);
        db_text(r, sizeof r, &t->requant);
        snprintf(fp, sizeof fp, "%s %s", fp4_qformat_name(t->q.format),
                 fp4_qproducer_name(t->q.producer));
        char gain[16] = "-";
        if (!isnan(ev) && !isnan(rv)) snprintf(gain, sizeof gain, "%+.3f", ev - rv);
        char flag[64];
        row_flag(&rows[i], flag, sizeof flag);
        const char *sep = !flag[0] ? "" : compact ? " " : "  "; /* record: compact too */
        if (record) {
            char *sh = fp4_text_escape(t->name, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
            const char *nm = sh ? sh : t->name;
            char *el = fp4_term_columns(nm) > cols ? fp4_term_elide(nm, cols) : NULL;
            fputs(el ? el : nm, out);
            free(el);
            free(sh);
            pct_text(fl, sizeof fl, rows[i].f, "%.2f");
            fprintf(out, "\n %s%s export=%s alpha=%.5f flush%%=%s RTN=%s RTN_alpha=%.5f gain=%s "
                         "nonnear%%=%.4f same%%=%.4f%s%s\n",
                    fpcol ? " " : "", fpcol ? fp : "", e, fp4_audit_alpha(&t->export_), fl, r,
                    fp4_audit_alpha(&t->requant), gain,
                    100.0 * frac(t->nonnearest, t->export_.n),
                    100.0 * frac(t->scale_match, t->scale_bytes),
                    sep, flag);
            continue;
        }
        audit_put_name(out, t->name, w, compact);
        if (compact) {
            if (fpcol) fprintf(out, " %-*s", fw, fp);
            audit_cells_put(out, cw, &cells[i]);
            fprintf(out, "%s%s%s\n", flag[0] ? mark : "", sep, flag);
        } else {
            pct_text(fl, sizeof fl, rows[i].f, "%.4f");
            fprintf(out, "  %-24s  %9s %8.5f %9s  %9s %8.5f  %7s  %9.4f  %11.4f%s%s%s\n", fp, e,
                    fp4_audit_alpha(&t->export_), fl, r, fp4_audit_alpha(&t->requant), gain,
                    100.0 * frac(t->nonnearest, t->export_.n),
                    100.0 * frac(t->scale_match, t->scale_bytes), flag[0] ? mark : "", sep,
                    flag);
        }
    }
    int npool = 0;
    int64_t pf = 0, pnz = 0;
    for (int i = 0; i < a->n; i++) {
        if (a->t[i].layout_fit != FP4_AUDIT_H_DECLARED) continue;
        npool++;
        pf += a->t[i].flushed;
        pnz += a->t[i].src_nonzero;
    }
    if (npool > 0) {
        db_text(e, sizeof e, &a->pooled_export);
        db_text(r, sizeof r, &a->pooled_requant);
        char label[64];
        snprintf(label, sizeof label, "(pooled, %d tensor%s)", npool, npool == 1 ? "" : "s");
        if (compact && !record && (int)strlen(label) > w) /* a narrow name column: in line */
            snprintf(label, sizeof label, "(pooled, %d)", npool);
        if (record) {
            pct_text(fl, sizeof fl, frac(pf, pnz), "%.2f");
            fprintf(out, "%s\n  export=%s alpha=%.5f flush%%=%s RTN=%s RTN_alpha=%.5f "
                         "nonnear%%=%.4f same%%=%.4f\n",
                    label, e, fp4_audit_alpha(&a->pooled_export), fl, r,
                    fp4_audit_alpha(&a->pooled_requant),
                    100.0 * frac(a->pooled_nonnearest, a->pooled_elements),
                    100.0 * frac(a->pooled_scale_match, a->pooled_scale_bytes));
        } else {
            audit_put_name(out, label, w, compact);
        }
        if (record) {
        } else if (compact) {
            if (fpcol) fprintf(out, " %-*s", fw, "");
            audit_cells_put(out, cw, &cells[n]);
            fputc('\n', out);
        } else {
            pct_text(fl, sizeof fl, frac(pf, pnz), "%.4f");
            fprintf(out, "  %-24s  %9s %8.5f %9s  %9s %8.5f  %7s  %9.4f  %11.4f\n", "", e,
                    fp4_audit_alpha(&a->pooled_export), fl, r,
                    fp4_audit_alpha(&a->pooled_requant), "",
                    100.0 * frac(a->pooled_nonnearest, a->pooled_elements),
                    100.0 * frac(a->pooled_scale_match, a->pooled_scale_bytes));
        }
        fprintf(out, "export: the checkpoint as stored vs SOURCE; RTN: fp4diag's round-to-nearest "
                     "of SOURCE with the producer's scale rule%s;\n",
                nvgroup ? ", NVFP4 with the export's per-tensor scale rule (amax of the fused "
                          "group; sqnr --format nvfp4 takes the tensor's own amax)"
                        : "");
        fprintf(out, "gain = export - RTN; nonnear%%: codes not a nearest grid point of the source "
                     "under the stored scale; %sscale same%%: stored block-scale bytes the rule "
                     "reproduces (SPEC 11)\n", compact ? "same% = " : "");
        fprintf(out, "%s: non-zero source values the export stores as +-0; rows: %s\n",
                compact ? "flush%" : "flushed%",
                ranked ? "most outlying first by the verdict's keep score (SPEC 9: the largest "
                         "modified z-score of the flushed share, the export SQNR and its non-amax "
                         "SQNR against the typical tensor's); KEEP: above 3.5, a tensor to keep "
                         "in high precision, with the statistic that tells why (flushed, SQNR, "
                         "non-amax)"
                       : "lowest export SQNR first");
        if (reexport)
            fprintf(out, "REEXPORT: the export is worse than round-to-nearest of its source: "
                         "re-export (its SQNR more than %g dB below RTN's, over %g%% of its codes "
                         "not nearest; listed first, its keep score judged on the RTN numbers)\n",
                    FP4_AUDIT_REEXPORT_DB, 100.0 * FP4_AUDIT_REEXPORT_NONNEAR);
    } else if (n > 0) {
        fprintf(out, "(no tensor pooled: every one audited needs another layout)\n");
    }
    /* findings: every audited tensor needing one other layout is one line */
    bool one_layout = n > 1;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n && one_layout; i++) {
        const char *s1;
        const double v = fp4_audit_sqnr(&ord[i]->hyp[FP4_AUDIT_H_DECLARED], &s1);
        one_layout = ord[i]->layout_fit != FP4_AUDIT_H_DECLARED &&
                     !strcmp(fp4_audit_hypothesis_label(ord[i], ord[i]->layout_fit),
                             fp4_audit_hypothesis_label(ord[0], ord[0]->layout_fit));
        if (!isnan(v)) lo = fmin(lo, v), hi = fmax(hi, v);
    }
    if (one_layout) {
        fprintf(out, "layout: every tensor: %s, not as declared (as declared: ",
                fp4_audit_hypothesis_label(ord[0], ord[0]->layout_fit));
        if (lo <= hi) fprintf(out, "%.3f to %.3f dB", lo, hi);
        else fprintf(out, "no SQNR");
        fprintf(out, "); each tensor measured so, left out of the pool\n");
    }
    for (int i = 0; i < n; i++) {
        const fp4_audit_tensor *t = ord[i];
        if (t->layout_fit != FP4_AUDIT_H_DECLARED && !one_layout) {
            const char *s1, *s2;
            fprintf(out,
                    "layout: %s: the export is sane only with %s (%.3f dB; as declared: "
                    "%.3f dB); measured so (%s), left out of the pool\n",
                    t->name, fp4_audit_hypothesis_label(t, t->layout_fit),
                    fp4_audit_sqnr(&t->hyp[t->layout_fit], &s1),
                    fp4_audit_sqnr(&t->hyp[FP4_AUDIT_H_DECLARED], &s2), t->q.layout);
        }
        if (rows[i].reexport) {
            const char *s1, *s2;
            const double ev = fp4_audit_sqnr(&t->export_, &s1);
            const double rv = fp4_audit_sqnr(&t->requant, &s2);
            char rt[48];
            if (isnan(rv))
                snprintf(rt, sizeof rt, "%s", s2);
            else
                snprintf(rt, sizeof rt, "%.3f dB, gain %+.3f dB", rv, ev - rv);
            fprintf(out, "re-export: %s: the export (%.3f dB) is worse than fp4diag's "
                         "round-to-nearest of its source (%s) and %.2f%% of its codes are not "
                         "nearest: re-export it with round-to-nearest\n",
                    t->name, ev, rt, 100.0 * frac(t->nonnearest, t->export_.n));
        }
        if (t->q.format == FP4_QF_NVFP4 && t->global_stored != t->global_rule) {
            /* a scale from the tensor's own amax where the rule takes its fused group's */
            const bool own = t->group[0] && t->tensor_amax >= 0 &&
                             t->global_stored ==
                                 fp4_audit_global_rule(t->q.producer, (float)t->tensor_amax);
            fprintf(out, "global scale: %s: stored %.9g, the %s rule gives %.9g from the %s amax %.9g",
                    t->name, (double)t->global_stored, fp4_qproducer_name(t->q.producer),
                    (double)t->global_rule, t->group[0] ? t->group : "tensor", t->group_amax);
            if (own)
                fprintf(out, " (one scale per fused group); the stored one is the rule's from this "
                             "tensor's own amax %.9g (per tensor); block scales judged under the "
                             "stored one",
                        t->tensor_amax);
            fputc('\n', out);
        }
        if (t->scale_match < t->scale_bytes) {
            fprintf(out, "scale bytes: %s: %lld of %lld block scales are not what the %s rule "
                         "gives from the source",
                    t->name, (long long)(t->scale_bytes - t->scale_match),
                    (long long)t->scale_bytes,
                    t->q.format == FP4_QF_MXFP4
                        ? fp4_audit_mx_rule_name(fp4_audit_mx_rule_of(t->q.producer))
                        : fp4_qproducer_name(t->q.producer));
            if (t->scale_rule_fit >= 0)
                fprintf(out, "; every stored byte is what the %s rule gives (exported with it)",
                        fp4_audit_mx_rule_name(t->scale_rule_fit));
            fputc('\n', out);
        }
        if (t->group_shared == 0)
            fprintf(out, "fused group: %s: its %s partners do not share one per-tensor scale "
                         "(this one stores %.9g)\n",
                    t->name, t->group, (double)t->global_stored);
        if (t->e8m0_ff || t->e4m3_nan)
            fprintf(out, "special scale bytes: %s: %lld E8M0 0xFF, %lld E4M3 NaN\n", t->name,
                    (long long)t->e8m0_ff, (long long)t->e4m3_nan);
    }
    audit_skipped_line(out, a);
    for (int i = 0; i < a->nerrors; i++) fprintf(out, "error: %s\n", a->errors[i].message);
    free(cells);
    free(rows);
    free(ord);
}

void fp4_report_audit_table(FILE *out, const fp4_audit *a)
{
    int cols = fp4_term_width(out);
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = cols > 0 ? open_memstream(&buf, &len) : NULL;
    if (!mem) {
        audit_table_text(out, a, 0);
        return;
    }
    audit_table_text(mem, a, cols); /* the notes and findings wrap at spaces */
    if (fclose(mem) == 0 && buf) fp4_term_write(out, buf, cols);
    free(buf);
}
