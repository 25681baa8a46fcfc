/* report.c — every cJSON call: the analysis and grid reports of SPEC §9, their whole-or-absent
 * output (through output.c), and the human tables. */
#include "report/report.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "engine/engine.h"
#include "num/metrics.h"
#include "base/term.h"
#include "report/verdict.h"
#include "run/config.h"
#include "run/recipe.h"
#include "num/quant.h"
#include "base/version.h"

/* ---------------------------------------------------------------- JSON helpers */

static const char *status_name(fp4_status st)
{
    switch (st) {
    case FP4_OK: return "ok";
    case FP4_ERR_THRESHOLD: return "threshold";
    case FP4_ERR_USAGE: return "usage_error";
    case FP4_ERR_INPUT: return "input_error";
    case FP4_ERR_DEVICE: return "device_error";
    case FP4_ERR_INTERNAL: return "internal_error";
    }
    return "internal_error";
}

fp4_status fp4_status_from_name(const char *name)
{
    static const fp4_status all[] = {FP4_OK, FP4_ERR_THRESHOLD, FP4_ERR_USAGE, FP4_ERR_INPUT,
                                     FP4_ERR_DEVICE, FP4_ERR_INTERNAL};
    for (size_t i = 0; name && i < sizeof all / sizeof *all; i++)
        if (!strcmp(status_name(all[i]), name)) return all[i];
    return FP4_ERR_INTERNAL;
}

static const char *sqnr_status_name(fp4_sqnr_status s)
{
    switch (s) {
    case FP4_SQNR_OK: return "ok";
    case FP4_SQNR_ZERO_SIGNAL: return "zero_signal";
    case FP4_SQNR_EXACT: return "exact";
    case FP4_SQNR_NONFINITE: return "nonfinite";
    }
    return "ok";
}

/* A finite number, else null (the caller writes the sibling status). Returns NULL on OOM. */
static cJSON *num(cJSON *obj, const char *name, double v)
{
    if (isfinite(v)) return cJSON_AddNumberToObject(obj, name, v);
    return cJSON_AddNullToObject(obj, name);
}

static cJSON *u64(cJSON *obj, const char *name, uint64_t v)
{
    return cJSON_AddNumberToObject(obj, name, (double)v);
}

static void format_name(fp4_format f, char *buf, size_t n) { fp4_format_name(f, buf, n); }

static cJSON *rht_json(const fp4_qconfig *c)
{
    if (!c->rht) return cJSON_CreateFalse();
    cJSON *r = cJSON_CreateObject();
    if (!r) return NULL;
    cJSON_AddNumberToObject(r, "size", c->rht->n);
    cJSON_AddStringToObject(r, "signs", c->rht->desc);
    return r;
}

/* format, scale, block, rht, rounding: the identity of a result (with the tensor name). */
static void add_identity(cJSON *o, const fp4_qconfig *c, bool with_rht)
{
    char fname[32];
    format_name(c->format, fname, sizeof fname);
    cJSON_AddStringToObject(o, "format", fname);
    cJSON_AddStringToObject(o, "scale", fp4_scale_name(c->scale));
    cJSON_AddNumberToObject(o, "block", c->block);
    if (with_rht) cJSON_AddItemToObject(o, "rht", rht_json(c));
    cJSON_AddStringToObject(o, "rounding", fp4_rounding_name(c->rounding));
}

/* The recipe statistics (SPEC §5.1): null with stats_status "not_computed" where the backend
 * did not run the statistics pass over every block (fp4_metrics.stats_ok). */
static void add_stats(cJSON *o, const fp4_qconfig *c, const fp4_metrics *m)
{
    const bool ok = m->stats_ok;
    cJSON_AddStringToObject(o, "stats_status", ok ? "ok" : "not_computed");
    num(o, "underflows_pct", ok ? m->underflows_pct : NAN);
    num(o, "underflow_share", ok ? m->underflow_share : NAN);
    num(o, "saturated_pct", ok ? m->saturated_pct : NAN);
    num(o, "max_abs_err", ok ? m->max_abs_err : NAN);
    const bool na = ok && m->sqnr_na_status == FP4_SQNR_OK;
    num(o, "sqnr_nonamax_db", na ? m->sqnr_na_db : NAN);
    cJSON_AddStringToObject(o, "sqnr_nonamax_status",
                            ok ? sqnr_status_name(m->sqnr_na_status) : "not_computed");
    cJSON *ct = cJSON_GetObjectItemCaseSensitive(o, "counts");
    if (ct && ok) {
        u64(ct, "stat_elements", m->st_count);
        u64(ct, "nonzero", m->st_nonzero);
        u64(ct, "underflows", m->underflows);
    }
    /* block-scale statistics (SPEC §5.1): block amax percentiles (lower bin edges), and for
     * nvfp4 (E4M3) and mxfp4 (E8M0) the stored scale bytes of the non-zero blocks */
    cJSON *bp = cJSON_AddObjectToObject(o, "block_amax_percentiles");
    if (bp) {
        num(bp, "p50", ok ? m->amax_p50 : NAN);
        num(bp, "p90", ok ? m->amax_p90 : NAN);
        num(bp, "p99", ok ? m->amax_p99 : NAN);
    }
    /* relative-error percentiles (lower edges of half-octave bins of |x̂ − x| / |x|, x != 0) */
    cJSON *rp = cJSON_AddObjectToObject(o, "rel_err_percentiles");
    if (rp) {
        num(rp, "p50", ok ? m->rerr_p50 : NAN);
        num(rp, "p95", ok ? m->rerr_p95 : NAN);
        num(rp, "p99", ok ? m->rerr_p99 : NAN);
    }
    /* Four over Six (nvfp4 + e2m1 + RTNE; null elsewhere and where not computed) */
    if (ok && fp4_fos_applies(c) && m->fos_ok) {
        cJSON *fo = cJSON_AddObjectToObject(o, "four_over_six");
        if (fo) {
            u64(fo, "blocks", m->fos_blocks);
            u64(fo, "blocks4", m->fos_blocks4);
            num(fo, "block_share4",
                m->fos_blocks ? (double)m->fos_blocks4 / (double)m->fos_blocks : NAN);
            num(fo, "sqnr_db", m->fos_sqnr_db);
            num(fo, "gain_db", m->sqnr_status == FP4_SQNR_OK ? m->fos_sqnr_db - m->sqnr_db : NAN);
        }
    } else
        cJSON_AddNullToObject(o, "four_over_six");
    /* the error split, only with --error-split: shares of E = F + S + G + 2C, which is
     * Σ(x̂ − x)² up to fp64 rounding and, unlike the main pass's Σ(x̂ − x)², the same bits on
     * every backend (RTNE; null for SR, not computed, or E 0 or not finite) */
    const double se = m->split_flush + m->split_scale + m->split_grid + 2.0 * m->split_cross;
    if (!c->error_split) {
    } else if (ok && fp4_split_applies(c) && m->split_ok && se > 0.0 && isfinite(se)) {
        cJSON *es = cJSON_AddObjectToObject(o, "error_split");
        if (es) {
            num(es, "scale", m->split_scale / se);
            num(es, "flushed", m->split_flush / se);
            num(es, "grid", m->split_grid / se);
            num(es, "cross", 2.0 * m->split_cross / se);
            num(es, "scale_net", (m->split_scale + 2.0 * m->split_cross) / se);
        }
    } else
        cJSON_AddNullToObject(o, "error_split");
    const bool e4m3 = c->scale == FP4_SCALE_NVFP4, e8m0 = c->scale == FP4_SCALE_MXFP4;
    if (!ok || !(e4m3 || e8m0)) {
        cJSON_AddNullToObject(o, "scale_histogram");
        return;
    }
    cJSON *sh = cJSON_AddArrayToObject(o, "scale_histogram"); /* [byte, count], count > 0 */
    uint64_t floor_b = 0, max_b = 0;
    for (int i = 0; i < 256; i++) {
        if (e4m3 ? i <= 0x07 : i == 0x00) floor_b += m->scale_hist[i];
        if (i == (e4m3 ? 0x7E : 0xFE)) max_b += m->scale_hist[i];
        if (!m->scale_hist[i] || !sh) continue;
        cJSON *pr = cJSON_CreateArray();
        if (!pr) break;
        cJSON_AddItemToArray(pr, cJSON_CreateNumber(i));
        cJSON_AddItemToArray(pr, cJSON_CreateNumber((double)m->scale_hist[i]));
        cJSON_AddItemToArray(sh, pr);
    }
    if (ct) {
        u64(ct, "scale_floor_blocks", floor_b);
        u64(ct, "scale_max_blocks", max_b);
    }
}

static void add_metrics(cJSON *o, const fp4_qconfig *c, const fp4_metrics *m, bool per_tensor)
{
    bool ok = m->sqnr_status == FP4_SQNR_OK;
    num(o, "sqnr_db", ok ? m->sqnr_db : NAN);
    cJSON_AddStringToObject(o, "sqnr_status", sqnr_status_name(m->sqnr_status));
    num(o, "nmse", m->nmse);
    num(o, "alpha", m->alpha);
    num(o, "delta", m->delta);
    num(o, "mean_signed_error", m->mean_signed_error);
    num(o, "bucket_ratio_15", m->bucket_ratio_15);
    num(o, "bucket_ratio_8", m->bucket_ratio_8);

    cJSON *h = cJSON_AddArrayToObject(o, "histogram");
    for (int i = 0; h && i < 16; i++) cJSON_AddItemToArray(h, cJSON_CreateNumber((double)m->hist[i]));

    fp4_level_geom g[8];
    int nl = fp4_level_geometry(c->format, g);
    cJSON *lv = cJSON_AddArrayToObject(o, "levels");
    for (int i = 0; lv && i < nl && i < 8; i++) {
        cJSON *l = cJSON_CreateObject();
        if (!l) break;
        cJSON_AddItemToArray(lv, l);
        num(l, "q", g[i].q);
        num(l, "left", g[i].left);
        num(l, "right", g[i].right);
        num(l, "analytic_bias", g[i].analytic_bias);
        u64(l, "count", m->level_count[i]);
        num(l, "mean_error",
            m->level_count[i] ? m->level_err_sum[i] / (double)m->level_count[i] : NAN);
    }

    cJSON *ct = cJSON_AddObjectToObject(o, "counts");
    if (ct) {
        u64(ct, "elements", m->elements);
        u64(ct, "padded", m->padded);
        u64(ct, "zero", m->zero);
        u64(ct, "nan", m->nan);
        u64(ct, "inf", m->inf);
        u64(ct, "saturated", m->saturated);
        u64(ct, "clipped", m->clipped);
        u64(ct, "blocks", m->blocks);
        u64(ct, "scale_underflow_blocks", m->scale_underflow_blocks);
        u64(ct, "zero_blocks", m->zero_blocks);
        u64(ct, "nonfinite_blocks", m->nonfinite_blocks);
    }
    if (per_tensor) num(o, "tensor_amax", m->tensor_amax);
    add_stats(o, c, m);
}

static cJSON *delta_json(const fp4_qconfig *plain, const fp4_qconfig *rot,
                         const fp4_metrics *mp, const fp4_metrics *mr)
{
    fp4_rht_delta d;
    fp4_rht_delta_compute(mp, mr, &d);
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    add_identity(o, plain, false);
    cJSON_AddItemToObject(o, "rht", rht_json(rot));
    num(o, "delta_sqnr_db", d.sqnr_ok ? d.delta_sqnr_db : NAN);
    cJSON_AddStringToObject(o, "delta_sqnr_status",
                            d.sqnr_ok ? "ok"
                            : mp->sqnr_status != FP4_SQNR_OK ? sqnr_status_name(mp->sqnr_status)
                                                             : sqnr_status_name(mr->sqnr_status));
    num(o, "sqnr_db_plain", mp->sqnr_status == FP4_SQNR_OK ? mp->sqnr_db : NAN);
    num(o, "sqnr_db_rht", mr->sqnr_status == FP4_SQNR_OK ? mr->sqnr_db : NAN);
    num(o, "delta_alpha", d.delta_alpha);
    num(o, "delta_bucket_ratio_15", d.delta_bucket_ratio_15);
    num(o, "delta_bucket_ratio_8", d.delta_bucket_ratio_8);
    return o;
}

static void add_header(cJSON *root, const char *command, int argc, char **argv)
{
    cJSON_AddStringToObject(root, "schema", FP4_REPORT_SCHEMA);
    cJSON *tool = cJSON_AddObjectToObject(root, "tool");
    if (tool) {
        cJSON_AddStringToObject(tool, "name", FP4DIAG_NAME);
        cJSON_AddStringToObject(tool, "version", FP4DIAG_VERSION);
    }
    cJSON_AddStringToObject(root, "command", command);
    cJSON *av = cJSON_AddArrayToObject(root, "argv");
    if (av) cJSON_AddItemToArray(av, cJSON_CreateString(FP4DIAG_NAME));
    for (int i = 0; av && i < argc; i++) cJSON_AddItemToArray(av, cJSON_CreateString(argv[i]));
}

static void add_config(cJSON *root, const fp4_run *run)
{
    const fp4_run_config *o = run->config;
    cJSON *c = cJSON_AddObjectToObject(root, "config");
    if (!c) return;
    cJSON *f = cJSON_AddArrayToObject(c, "formats");
    for (int i = 0; f && i < o->nformats; i++) {
        char name[32];
        format_name(o->formats[i], name, sizeof name);
        cJSON_AddItemToArray(f, cJSON_CreateString(name));
    }
    cJSON_AddStringToObject(c, "scale", fp4_scale_name(o->scale));
    bool mixed = false; /* --format nvfp4/mxfp4 next to others: each format's own scale */
    for (int i = 0; i < o->nformats; i++) mixed |= o->fmt_scale[i] != (int)o->scale;
    cJSON *scs = mixed ? cJSON_AddArrayToObject(c, "scales") : NULL;
    for (int i = 0; scs && i < o->nformats; i++)
        cJSON_AddItemToArray(scs,
                             cJSON_CreateString(fp4_scale_name((fp4_scale_mode)o->fmt_scale[i])));
    cJSON_AddNumberToObject(c, "block", run->ncfg > 0 ? run->cfgs[0].block : o->block);
    cJSON_AddNumberToObject(c, "axis", o->axis);
    cJSON_AddStringToObject(c, "rounding", fp4_rounding_name(o->rounding));
    cJSON_AddNumberToObject(c, "sr_bits", o->sr_bits);
    char seed[24]; /* exact: a JSON integer literal, not a double (seeds above 2^53) */
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
    cJSON_AddRawToObject(c, "seed", seed);
    cJSON_AddStringToObject(c, "rht", fp4_rht_mode_name(o->rht));
    cJSON_AddNumberToObject(c, "rht_size", o->rht_size);
    cJSON_AddStringToObject(c, "rht_signs", o->signs.desc[0] ? o->signs.desc : o->rht_signs_spec);
    cJSON_AddStringToObject(c, "mx_rule", fp4_mx_rule_name(o->mx_rule));
    cJSON_AddBoolToObject(c, "weight_2d", o->weight_2d);
    cJSON_AddStringToObject(c, "device", run->device[0] ? run->device : fp4_device_name(o->device));
    cJSON_AddNumberToObject(c, "threads", o->threads);
    cJSON_AddNumberToObject(c, "mem_limit", (double)o->mem_limit);
    if (o->layers > 0) cJSON_AddNumberToObject(c, "layers", o->layers);
    else cJSON_AddNullToObject(c, "layers");
    cJSON_AddBoolToObject(c, "all_tensors", o->all_tensors);
    if (o->all_weights) cJSON_AddBoolToObject(c, "all_weights", true);
    if (o->error_split) cJSON_AddBoolToObject(c, "error_split", true);
    cJSON *ex = cJSON_AddArrayToObject(c, "exclude");
    for (int i = 0; ex && i < o->nexclude; i++)
        cJSON_AddItemToArray(ex, cJSON_CreateString(o->exclude[i]));
}

/* ---------------------------------------------------------------- verdict */

/* {format, scale, rht} of config c, with its pooled SQNR when with_sqnr. */
static cJSON *verdict_cfg(const fp4_run *run, int c, bool with_sqnr)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    char f[32];
    format_name(run->cfgs[c].format, f, sizeof f);
    cJSON_AddStringToObject(o, "format", f);
    cJSON_AddStringToObject(o, "scale", fp4_scale_name(run->cfgs[c].scale));
    cJSON_AddBoolToObject(o, "rht", run->cfgs[c].rht != NULL);
    if (with_sqnr) num(o, "sqnr_db", run->pooled[c].sqnr_db);
    return o;
}

static cJSON *verdict_pick(const fp4_qconfig *c, const fp4_metrics *m)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    char f[32];
    format_name(c->format, f, sizeof f);
    cJSON_AddStringToObject(o, "format", f);
    cJSON_AddStringToObject(o, "scale", fp4_scale_name(c->scale));
    cJSON_AddBoolToObject(o, "rht", c->rht != NULL);
    num(o, "sqnr_db", fp4_verdict_sqnr_ok(m) ? m->sqnr_db : NAN);
    return o;
}

/* The verdict's notes (SPEC §9 "Verdict"): i = 0, which grids have a tensor-core path (only
 * when a config uses another grid than E2M1); i = 1, what weights alone do not show. NULL when
 * note i does not apply. */
static const char *verdict_note(const fp4_run *run, int i)
{
    if (i == 0) {
        bool other = false;
        for (int c = 0; c < run->ncfg; c++) other |= run->cfgs[c].format.id != FP4_FMT_E2M1;
        return other ? "E2M1 is the grid with a block-scaled 4-bit tensor-core path (NVFP4 and "
                       "MXFP4 on NVIDIA Blackwell); E1M2, INT4 and E3M0 under these block "
                       "scales have none on today's hardware: choosing them is a recipe choice "
                       "that needs its own kernels"
                     : NULL;
    }
    return "weights alone: these are each tensor's own quantization error; the error of "
           "activations and gradients, and what reaches a GEMM's output, is not shown "
           "('fp4diag gemm' on dumped operands measures it)";
}

/* The kept tensors' modules with their fused partners (fp4_verdict_fused), and how many of
 * them are partners that are not themselves kept (*nadded; they are flagged in added[], which
 * is malloc'd like the list). NULL list with n 0 when none or out of memory. */
static char **keep_modules(const fp4_run *run, const fp4_keep *k, int *n, bool **added)
{
    char **mods = NULL;
    *n = 0;
    *added = NULL;
    for (int i = 0; i < k->nkeep; i++) {
        const char *nm = run->tensors[k->rows[i].t].info.name;
        if (nm && !fp4_verdict_fused(run, nm, &mods, n)) break;
    }
    *added = calloc((size_t)(*n ? *n : 1), sizeof **added);
    for (int j = 0; *added && j < *n; j++) {
        bool kept = false;
        for (int i = 0; i < k->nkeep && !kept; i++) {
            char m[1024];
            const char *nm = run->tensors[k->rows[i].t].info.name;
            if (!nm) continue;
            fp4_recipe_module(nm, m, sizeof m);
            kept = !strcmp(m, mods[j]);
        }
        (*added)[j] = !kept;
    }
    return mods;
}

static void free_modules(char **mods, int n, bool *added)
{
    for (int i = 0; i < n; i++) free(mods[i]);
    free(mods);
    free(added);
}

/* verdict.keep: which tensors stay in high precision (verdict.h, SPEC §9). */
static void add_keep(cJSON *v, const fp4_run *run)
{
    fp4_keep k;
    if (fp4_verdict_keep(run, &k) != FP4_OK || k.cfg < 0) {
        fp4_keep_free(&k);
        cJSON_AddNullToObject(v, "keep");
        return;
    }
    cJSON *o = cJSON_AddObjectToObject(v, "keep");
    if (!o) {
        fp4_keep_free(&k);
        return;
    }
    cJSON_AddItemToObject(o, "config", verdict_cfg(run, k.cfg, false));
    cJSON_AddStringToObject(o, "config_rule", k.recipe ? "recipe" : "best_plain");
    cJSON_AddNumberToObject(o, "z_threshold", FP4_KEEP_Z);
    num(o, "median_flushed", k.median_flushed);
    num(o, "mad_flushed", k.mad_flushed);
    num(o, "median_sqnr_db", k.median_sqnr_db);
    num(o, "mad_sqnr_db", k.mad_sqnr_db);
    num(o, "median_sqnr_nonamax_db", k.median_sqnr_na_db);
    num(o, "mad_sqnr_nonamax_db", k.mad_sqnr_na_db);
    cJSON *names = cJSON_AddArrayToObject(o, "tensors");
    for (int i = 0; names && i < k.nkeep; i++) {
        const char *nm = run->tensors[k.rows[i].t].info.name;
        cJSON_AddItemToArray(names, cJSON_CreateString(nm ? nm : ""));
    }
    {
        int nm = 0;
        bool *added = NULL;
        char **mods = keep_modules(run, &k, &nm, &added);
        cJSON *fp = cJSON_AddArrayToObject(o, "fused_partners");
        for (int j = 0; fp && added && j < nm; j++)
            if (added[j]) cJSON_AddItemToArray(fp, cJSON_CreateString(mods[j]));
        free_modules(mods, nm, added);
    }
    num(o, "pooled_sqnr_db", k.pooled_sqnr_db);
    num(o, "pooled_sqnr_db_kept", k.pooled_sqnr_kept_db);
    num(o, "gain_db", k.pooled_sqnr_kept_db - k.pooled_sqnr_db);
    num(o, "pooled_flushed", k.pooled_flushed);
    num(o, "pooled_flushed_kept", k.pooled_flushed_kept);
    cJSON *rk = cJSON_AddArrayToObject(o, "ranking");
    for (int i = 0; rk && i < k.n; i++) {
        const fp4_keep_row *r = &k.rows[i];
        cJSON *e = cJSON_CreateObject();
        if (!e) break;
        cJSON_AddItemToArray(rk, e);
        const char *nm = run->tensors[r->t].info.name;
        cJSON_AddStringToObject(e, "tensor", nm ? nm : "");
        num(e, "flushed", r->flushed);
        num(e, "sqnr_db", r->sqnr_db);
        num(e, "z_flushed", r->z_flushed);
        num(e, "sqnr_nonamax_db", r->sqnr_na_db);
        num(e, "z_sqnr", r->z_sqnr);
        num(e, "z_sqnr_nonamax", r->z_sqnr_na);
        num(e, "score", r->score);
        cJSON_AddStringToObject(e, "by", fp4_keep_by_name(r->by));
        cJSON_AddBoolToObject(e, "keep", r->keep);
    }
    fp4_keep_free(&k);
}

static void add_verdict(cJSON *root, const fp4_run *run)
{
    cJSON *v = cJSON_AddObjectToObject(root, "verdict");
    if (!v) return;
    cJSON_AddStringToObject(v, "rank_by", fp4_rank_by_name(run->config->rank_by));
    cJSON_AddStringToObject(v, "ranked_by", fp4_verdict_by_keep(run)
                                                ? "keep"
                                                : fp4_rank_by_name(run->config->rank_by));
    cJSON *cs = cJSON_AddArrayToObject(v, "configs");
    for (int c = 0; cs && c < run->ncfg; c++) {
        const fp4_qconfig *q = &run->cfgs[c];
        const fp4_metrics *m = &run->pooled[c];
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        cJSON_AddItemToArray(cs, o);
        char f[32];
        format_name(q->format, f, sizeof f);
        cJSON_AddStringToObject(o, "format", f);
        cJSON_AddStringToObject(o, "scale", fp4_scale_name(q->scale));
        cJSON_AddBoolToObject(o, "rht", q->rht != NULL);
        cJSON_AddStringToObject(o, "rounding", fp4_rounding_name(q->rounding));
        cJSON_AddNumberToObject(o, "block", q->block);
        num(o, "sqnr_db", fp4_verdict_sqnr_ok(m) ? m->sqnr_db : NAN);
        num(o, "alpha", m->alpha);
        num(o, "bucket_ratio_15", m->bucket_ratio_15);
        cJSON_AddNumberToObject(o, "tensors", run->ntensors);
    }
    int runner, w = fp4_verdict_winner(run, &runner);
    if (w < 0) {
        cJSON_AddNullToObject(v, "winner");
    } else {
        cJSON *o = cJSON_AddObjectToObject(v, "winner");
        if (o) {
            char f[32];
            format_name(run->cfgs[w].format, f, sizeof f);
            cJSON_AddStringToObject(o, "format", f);
            cJSON_AddStringToObject(o, "scale", fp4_scale_name(run->cfgs[w].scale));
            cJSON_AddBoolToObject(o, "rht", run->cfgs[w].rht != NULL);
            num(o, "sqnr_db", run->pooled[w].sqnr_db);
            num(o, "margin_db",
                runner >= 0 ? run->pooled[w].sqnr_db - run->pooled[runner].sqnr_db : NAN);
            if (runner >= 0) cJSON_AddItemToObject(o, "runner_up", verdict_cfg(run, runner, true));
            else cJSON_AddNullToObject(o, "runner_up");
            cJSON_AddBoolToObject(o, "tie", fp4_verdict_tie(run, w, runner));
            cJSON_AddNumberToObject(o, "tolerance_db", FP4_VERDICT_TIE_DB);
            cJSON *same = cJSON_AddArrayToObject(o, "same_values");
            for (int c = 0; same && c < run->ncfg; c++)
                if (fp4_verdict_same(run, w, c))
                    cJSON_AddItemToArray(same, verdict_cfg(run, c, false));
        }
    }
    cJSON *notes = cJSON_AddArrayToObject(v, "notes");
    for (int i = 0; notes && i < 2; i++) {
        const char *nt = verdict_note(run, i);
        if (nt) cJSON_AddItemToArray(notes, cJSON_CreateString(nt));
    }
    add_keep(v, run);
    cJSON *rk = cJSON_AddArrayToObject(v, "ranking");
    fp4_verdict_row *rows = fp4_verdict_rank(run);
    for (int i = 0; rk && rows && i < run->ntensors; i++) {
        const fp4_verdict_row *r = &rows[i];
        const fp4_tensor_result *tr = &run->tensors[r->t];
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        cJSON_AddItemToArray(rk, o);
        cJSON_AddStringToObject(o, "tensor", tr->info.name ? tr->info.name : "");
        if (r->ok) {
            cJSON_AddItemToObject(o, "best", verdict_pick(&run->cfgs[r->best], &tr->metrics[r->best]));
            cJSON_AddItemToObject(o, "worst",
                                  verdict_pick(&run->cfgs[r->worst], &tr->metrics[r->worst]));
        } else {
            cJSON_AddNullToObject(o, "best");
            cJSON_AddNullToObject(o, "worst");
        }
        num(o, "gap_db", r->ok ? r->gap_db : NAN);
        num(o, "delta", r->ok ? r->delta : NAN);
        num(o, "underflows_pct", r->ok ? r->underflows_pct : NAN);
        num(o, "sqnr_nonamax_db", r->ok ? r->sqnr_na_db : NAN);
        num(o, "maxerr_rel", r->ok ? r->maxerr_rel : NAN);
        num(o, "rel_err_p99", r->ok ? r->rel_err_p99 : NAN);
    }
    free(rows);
}

/* The state merge needs to pool exactly: fp4_fsums' 13 sums as C99 hex floats ("%a", exact),
 * the integer counts, and the tensor amax (hex). */
#define RAW_NCOUNTS 36
static void raw_counts(fp4_metrics *m, uint64_t **c)
{
    int k = 0;
    c[k++] = &m->signed_err_n;
    for (int i = 0; i < 8; i++) c[k++] = &m->level_count[i];
    for (int i = 0; i < 16; i++) c[k++] = &m->hist[i];
    c[k++] = &m->elements, c[k++] = &m->padded, c[k++] = &m->zero, c[k++] = &m->nan;
    c[k++] = &m->inf, c[k++] = &m->saturated, c[k++] = &m->clipped, c[k++] = &m->blocks;
    c[k++] = &m->zero_blocks, c[k++] = &m->scale_underflow_blocks;
    c[k++] = &m->nonfinite_blocks;
}

static void raw_sums(fp4_metrics *m, double **d)
{
    int k = 0;
    d[k++] = &m->sum_x2, d[k++] = &m->sum_err2, d[k++] = &m->sum_xqx, d[k++] = &m->sum_xq2;
    d[k++] = &m->signed_err_sum;
    for (int i = 0; i < 8; i++) d[k++] = &m->level_err_sum[i];
}

static cJSON *hexnum(double v)
{
    char b[64];
    snprintf(b, sizeof b, "%a", v);
    return cJSON_CreateString(b);
}

cJSON *fp4_metrics_raw_json(const fp4_metrics *src)
{
    fp4_metrics m = *src;
    double *d[13];
    uint64_t *c[RAW_NCOUNTS];
    raw_sums(&m, d);
    raw_counts(&m, c);
    cJSON *o = cJSON_CreateObject();
    cJSON *sa = o ? cJSON_AddArrayToObject(o, "sums") : NULL;
    for (int i = 0; sa && i < 13; i++) cJSON_AddItemToArray(sa, hexnum(*d[i]));
    cJSON *ca = o ? cJSON_AddArrayToObject(o, "counts") : NULL;
    for (int i = 0; ca && i < RAW_NCOUNTS; i++) { /* strings: exact beyond 2^53 too */
        char b[32];
        snprintf(b, sizeof b, "%llu", (unsigned long long)*c[i]);
        cJSON_AddItemToArray(ca, cJSON_CreateString(b));
    }
    if (o) cJSON_AddItemToObject(o, "tensor_amax", hexnum((double)m.tensor_amax));
    /* the recipe statistics (SPEC §5.1): sums [x2_na, err2_na], counts [st_blocks, st_count,
     * st_nonzero, underflows], max_abs_err (hex) */
    cJSON *st = o ? cJSON_AddObjectToObject(o, "stats") : NULL;
    cJSON *ss = st ? cJSON_AddArrayToObject(st, "sums") : NULL;
    if (ss) {
        cJSON_AddItemToArray(ss, hexnum(m.sum_x2_na));
        cJSON_AddItemToArray(ss, hexnum(m.sum_err2_na));
    }
    cJSON *sc = st ? cJSON_AddArrayToObject(st, "counts") : NULL;
    const uint64_t cv[4] = {m.st_blocks, m.st_count, m.st_nonzero, m.underflows};
    for (int i = 0; sc && i < 4; i++) {
        char b[32];
        snprintf(b, sizeof b, "%llu", (unsigned long long)cv[i]);
        cJSON_AddItemToArray(sc, cJSON_CreateString(b));
    }
    if (st) cJSON_AddItemToObject(st, "max_abs_err", hexnum(m.max_abs_err));
    /* Four over Six: [fos_blocks, fos_blocks4] and fos_err2 (hex); absent when none evaluated */
    if (st && m.fos_blocks) {
        cJSON *fo = cJSON_AddObjectToObject(st, "fos");
        cJSON *fc = fo ? cJSON_AddArrayToObject(fo, "counts") : NULL;
        const uint64_t fv[2] = {m.fos_blocks, m.fos_blocks4};
        for (int i = 0; fc && i < 2; i++) {
            char b[32];
            snprintf(b, sizeof b, "%llu", (unsigned long long)fv[i]);
            cJSON_AddItemToArray(fc, cJSON_CreateString(b));
        }
        if (fo) cJSON_AddItemToObject(fo, "err2", hexnum(m.fos_err2));
    }
    /* the error split: [split_blocks] and [flush, scale, grid, cross] (hex); absent: none */
    if (st && m.split_blocks) {
        cJSON *so = cJSON_AddObjectToObject(st, "split");
        cJSON *sn = so ? cJSON_AddArrayToObject(so, "counts") : NULL;
        if (sn) {
            char b[32];
            snprintf(b, sizeof b, "%llu", (unsigned long long)m.split_blocks);
            cJSON_AddItemToArray(sn, cJSON_CreateString(b));
        }
        cJSON *sv = so ? cJSON_AddArrayToObject(so, "sums") : NULL;
        const double spv[4] = {m.split_flush, m.split_scale, m.split_grid, m.split_cross};
        for (int i = 0; sv && i < 4; i++) cJSON_AddItemToArray(sv, hexnum(spv[i]));
    }
    /* the block-scale histograms, sparse: [bin, count] for every non-zero bin */
    for (int h = 0; st && h < 3; h++) {
        const uint64_t *hv = h == 2 ? m.rerr_hist : h ? m.amax_hist : m.scale_hist;
        const int nbin = h == 2 ? FP4_RERR_BINS : h ? FP4_AMAX_BINS : 256;
        cJSON *ha = cJSON_AddArrayToObject(st, h == 2 ? "rerr_hist" : h ? "amax_hist" : "scale_hist");
        for (int i = 0; ha && i < nbin; i++) {
            if (!hv[i]) continue;
            char b[32];
            cJSON *pr = cJSON_CreateArray();
            if (!pr) break;
            cJSON_AddItemToArray(pr, cJSON_CreateNumber(i));
            snprintf(b, sizeof b, "%llu", (unsigned long long)hv[i]);
            cJSON_AddItemToArray(pr, cJSON_CreateString(b));
            cJSON_AddItemToArray(ha, pr);
        }
    }
    return o;
}

static bool hex_parse(const cJSON *j, double *out)
{
    if (!cJSON_IsString(j)) return false;
    char *end;
    *out = strtod(j->valuestring, &end);
    return end != j->valuestring && !*end;
}

cJSON *fp4_qsummary_json(const fp4_qsummary *q)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "format", q->format);
    cJSON_AddStringToObject(o, "producer", q->producer);
    cJSON_AddStringToObject(o, "layout", q->layout);
    cJSON_AddNumberToObject(o, "block", q->block);
    cJSON *h = cJSON_AddArrayToObject(o, "histogram");
    for (int c = 0; h && c < 16; c++)
        cJSON_AddItemToArray(h, cJSON_CreateNumber((double)q->histogram[c]));
    u64(o, "scale_bytes", (uint64_t)q->scale_bytes);
    cJSON *sp = cJSON_AddObjectToObject(o, "special_scale_bytes");
    if (sp) {
        u64(sp, "e8m0_ff", (uint64_t)q->e8m0_ff);
        u64(sp, "e4m3_nan", (uint64_t)q->e4m3_nan);
    }
    cJSON *sc = cJSON_AddObjectToObject(o, "scales");
    if (sc) {
        u64(sc, "zero", (uint64_t)q->scale_zero);
        u64(sc, "nonfinite", (uint64_t)q->scale_nonfinite);
        num(sc, "min", q->scale_min);
        num(sc, "max", q->scale_max);
    }
    num(o, "tensor_scale", q->tensor_scale);
    return o;
}

/* A count of a quant object: a whole number 0..2^53. */
static bool count_parse(const cJSON *v, int64_t *out)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble != floor(v->valuedouble))
        return false;
    *out = (int64_t)v->valuedouble;
    return true;
}

/* A number or null (NaN). */
static bool num_parse(const cJSON *v, double *out)
{
    if (cJSON_IsNull(v)) {
        *out = NAN;
        return true;
    }
    if (!cJSON_IsNumber(v)) return false;
    *out = v->valuedouble;
    return true;
}

static bool str_parse(const cJSON *v, char *buf, size_t n)
{
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= n) return false;
    snprintf(buf, n, "%s", v->valuestring);
    return true;
}

bool fp4_qsummary_parse(const cJSON *o, fp4_qsummary *q)
{
    memset(q, 0, sizeof *q);
#define QGET(obj, k) cJSON_GetObjectItemCaseSensitive(obj, k)
    const cJSON *h = QGET(o, "histogram"), *sp = QGET(o, "special_scale_bytes"),
                *sc = QGET(o, "scales"), *b = QGET(o, "block");
    int64_t block = 0;
    if (!cJSON_IsObject(o) || !str_parse(QGET(o, "format"), q->format, sizeof q->format) ||
        !str_parse(QGET(o, "producer"), q->producer, sizeof q->producer) ||
        !str_parse(QGET(o, "layout"), q->layout, sizeof q->layout) || !count_parse(b, &block) ||
        block > 1024 || !cJSON_IsArray(h) || cJSON_GetArraySize(h) != 16 ||
        !count_parse(QGET(o, "scale_bytes"), &q->scale_bytes) || !cJSON_IsObject(sp) ||
        !count_parse(QGET(sp, "e8m0_ff"), &q->e8m0_ff) ||
        !count_parse(QGET(sp, "e4m3_nan"), &q->e4m3_nan) || !cJSON_IsObject(sc) ||
        !count_parse(QGET(sc, "zero"), &q->scale_zero) ||
        !count_parse(QGET(sc, "nonfinite"), &q->scale_nonfinite) ||
        !num_parse(QGET(sc, "min"), &q->scale_min) || !num_parse(QGET(sc, "max"), &q->scale_max) ||
        !num_parse(QGET(o, "tensor_scale"), &q->tensor_scale))
        return false;
#undef QGET
    q->block = (int)block;
    for (int c = 0; c < 16; c++)
        if (!count_parse(cJSON_GetArrayItem(h, c), &q->histogram[c])) return false;
    return true;
}

bool fp4_metrics_raw_parse(const cJSON *o, fp4_metrics *m)
{
    fp4_metrics_init(m);
    double *d[13];
    uint64_t *c[RAW_NCOUNTS];
    raw_sums(m, d);
    raw_counts(m, c);
    const cJSON *sa = cJSON_GetObjectItemCaseSensitive(o, "sums");
    const cJSON *ca = cJSON_GetObjectItemCaseSensitive(o, "counts");
    if (cJSON_GetArraySize(sa) != 13 || cJSON_GetArraySize(ca) != RAW_NCOUNTS) return false;
    for (int i = 0; i < 13; i++)
        if (!hex_parse(cJSON_GetArrayItem(sa, i), d[i])) return false;
    for (int i = 0; i < RAW_NCOUNTS; i++) {
        const cJSON *v = cJSON_GetArrayItem(ca, i);
        if (!cJSON_IsString(v) || v->valuestring[0] < '0' || v->valuestring[0] > '9') return false;
        char *end;
        errno = 0;
        unsigned long long u = strtoull(v->valuestring, &end, 10);
        if (errno || *end) return false;
        *c[i] = (uint64_t)u;
    }
    double amax;
    if (!hex_parse(cJSON_GetObjectItemCaseSensitive(o, "tensor_amax"), &amax)) return false;
    m->tensor_amax = (float)amax;
    if ((double)m->tensor_amax != amax && !isnan(amax)) return false;
    /* the recipe statistics: absent in a state written before them (then "not computed") */
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "stats");
    if (!st) return true;
    const cJSON *ss = cJSON_GetObjectItemCaseSensitive(st, "sums");
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(st, "counts");
    if (cJSON_GetArraySize(ss) != 2 || cJSON_GetArraySize(sc) != 4) return false;
    if (!hex_parse(cJSON_GetArrayItem(ss, 0), &m->sum_x2_na) ||
        !hex_parse(cJSON_GetArrayItem(ss, 1), &m->sum_err2_na) ||
        !hex_parse(cJSON_GetObjectItemCaseSensitive(st, "max_abs_err"), &m->max_abs_err))
        return false;
    uint64_t *cv[4] = {&m->st_blocks, &m->st_count, &m->st_nonzero, &m->underflows};
    for (int i = 0; i < 4; i++) {
        const cJSON *v = cJSON_GetArrayItem(sc, i);
        if (!cJSON_IsString(v) || v->valuestring[0] < '0' || v->valuestring[0] > '9') return false;
        char *end;
        errno = 0;
        unsigned long long u = strtoull(v->valuestring, &end, 10);
        if (errno || *end) return false;
        *cv[i] = (uint64_t)u;
    }
    const cJSON *fo = cJSON_GetObjectItemCaseSensitive(st, "fos"); /* absent: none evaluated */
    if (fo) {
        const cJSON *fc = cJSON_GetObjectItemCaseSensitive(fo, "counts");
        if (cJSON_GetArraySize(fc) != 2 ||
            !hex_parse(cJSON_GetObjectItemCaseSensitive(fo, "err2"), &m->fos_err2))
            return false;
        uint64_t *fv[2] = {&m->fos_blocks, &m->fos_blocks4};
        for (int i = 0; i < 2; i++) {
            const cJSON *v = cJSON_GetArrayItem(fc, i);
            if (!cJSON_IsString(v) || v->valuestring[0] < '0' || v->valuestring[0] > '9')
                return false;
            char *end;
            errno = 0;
            unsigned long long u = strtoull(v->valuestring, &end, 10);
            if (errno || *end) return false;
            *fv[i] = (uint64_t)u;
        }
        if (m->fos_blocks4 > m->fos_blocks) return false;
    }
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(st, "split"); /* absent: none evaluated */
    if (so) {
        const cJSON *sn = cJSON_GetObjectItemCaseSensitive(so, "counts");
        const cJSON *sv = cJSON_GetObjectItemCaseSensitive(so, "sums");
        if (cJSON_GetArraySize(sn) != 1 || cJSON_GetArraySize(sv) != 4) return false;
        double *spv[4] = {&m->split_flush, &m->split_scale, &m->split_grid, &m->split_cross};
        for (int i = 0; i < 4; i++)
            if (!hex_parse(cJSON_GetArrayItem(sv, i), spv[i])) return false;
        const cJSON *v = cJSON_GetArrayItem(sn, 0);
        if (!cJSON_IsString(v) || v->valuestring[0] < '0' || v->valuestring[0] > '9') return false;
        char *end;
        errno = 0;
        unsigned long long u = strtoull(v->valuestring, &end, 10);
        if (errno || *end) return false;
        m->split_blocks = (uint64_t)u;
    }
    for (int h = 0; h < 3; h++) { /* absent in a state written before them: empty */
        uint64_t *hv = h == 2 ? m->rerr_hist : h ? m->amax_hist : m->scale_hist;
        const int nbin = h == 2 ? FP4_RERR_BINS : h ? FP4_AMAX_BINS : 256;
        const cJSON *ha =
            cJSON_GetObjectItemCaseSensitive(st, h == 2 ? "rerr_hist" : h ? "amax_hist" : "scale_hist");
        if (!ha) continue;
        if (!cJSON_IsArray(ha)) return false;
        const cJSON *pr;
        cJSON_ArrayForEach(pr, ha)
        {
            const cJSON *k = cJSON_GetArrayItem(pr, 0), *v = cJSON_GetArrayItem(pr, 1);
            if (cJSON_GetArraySize(pr) != 2 || !cJSON_IsNumber(k) || k->valuedouble < 0 ||
                k->valuedouble >= nbin || k->valuedouble != (double)(int)k->valuedouble ||
                !cJSON_IsString(v) || v->valuestring[0] < '0' || v->valuestring[0] > '9')
                return false;
            char *end;
            errno = 0;
            unsigned long long u = strtoull(v->valuestring, &end, 10);
            if (errno || *end) return false;
            hv[(int)k->valuedouble] += (uint64_t)u;
            if (h == 1) m->hist_blocks += (uint64_t)u;
        }
    }
    return true;
}

cJSON *fp4_report_fingerprint_json(const fp4_file_print *p, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        cJSON_AddItemToArray(a, o);
        char hex[17];
        fp4_fingerprint_hex(p[i].xxh3, hex);
        cJSON_AddStringToObject(o, "file", p[i].path);
        cJSON_AddNumberToObject(o, "size", (double)p[i].size);
        cJSON_AddStringToObject(o, "xxh3", hex);
        cJSON_AddNumberToObject(o, "hashed", (double)p[i].hashed);
    }
    return a;
}

/* The report's time: SOURCE_DATE_EPOCH when it is a whole number of seconds since 1970
 * in ASCII digits only (reproducible-builds.org: no sign, space or other base), up to the
 * end of 9999, else the clock; as UTC "YYYY-MM-DDTHH:MM:SSZ". */
static void report_time(char buf[32])
{
    const char *e = getenv("SOURCE_DATE_EPOCH");
    time_t t = time(NULL);
    const size_t n = e ? strlen(e) : 0;
    bool digits = n > 0 && n <= 12;
    for (size_t i = 0; digits && i < n; i++) digits = e[i] >= '0' && e[i] <= '9';
    if (digits) {
        long long v = strtoll(e, NULL, 10);
        if (v <= 253402300799LL) t = (time_t)v; /* <= 9999-12-31T23:59:59Z */
    }
    struct tm tmv;
    if (!gmtime_r(&t, &tmv) || !strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tmv))
        snprintf(buf, 32, "1970-01-01T00:00:00Z");
}

cJSON *fp4_report_provenance_json(const fp4_file_print *p, int n)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    char when[32];
    report_time(when);
    cJSON_AddStringToObject(o, "time", when);
    cJSON_AddStringToObject(o, "version", FP4DIAG_VERSION);
    cJSON *b = cJSON_AddObjectToObject(o, "build");
    if (b) {
#ifdef FP4_HAVE_CUDA
        cJSON_AddBoolToObject(b, "cuda", true);
#else
        cJSON_AddBoolToObject(b, "cuda", false);
#endif
        cJSON_AddStringToObject(b, "isa", fp4_isa_name(fp4_engine_isa(fp4_engine_active())));
        cJSON *av = cJSON_AddArrayToObject(b, "isa_available");
        for (int i = 0; av && i < FP4_ISA_COUNT; i++)
            if (fp4_engine_get((fp4_isa)i))
                cJSON_AddItemToArray(av, cJSON_CreateString(fp4_isa_name((fp4_isa)i)));
    }
    cJSON_AddItemToObject(o, "inputs", fp4_report_fingerprint_json(p, n));
    return o;
}

/* --shard: which share this is, the selection positions it was given, the shape and dtype at
 * every position, and per tensor the exact state `merge` pools (see fp4_metrics_raw_json). */
static void add_shard(cJSON *root, const fp4_run *run)
{
    cJSON *sh = cJSON_AddObjectToObject(root, "shard");
    if (!sh) return;
    cJSON_AddNumberToObject(sh, "index", run->config->shard.index);
    cJSON_AddNumberToObject(sh, "count", run->config->shard.count);
    cJSON_AddNumberToObject(sh, "selected", run->ndatasets);
    cJSON *as = cJSON_AddArrayToObject(sh, "assigned");
    for (int i = 0; as && i < run->nassigned; i++)
        cJSON_AddItemToArray(as, cJSON_CreateNumber(run->assigned[i]));
    /* every position's shape and dtype, whichever share holds it (the same in every part) */
    cJSON *ss = cJSON_AddArrayToObject(sh, "shapes");
    cJSON *ds = cJSON_AddArrayToObject(sh, "dtypes");
    for (int i = 0; ss && ds && run->shapes && i < run->ndatasets; i++) {
        cJSON *d = cJSON_CreateArray();
        if (!d) return;
        cJSON_AddItemToArray(ss, d);
        for (int k = 0; k < run->shapes[i].rank; k++)
            cJSON_AddItemToArray(d, cJSON_CreateNumber((double)run->shapes[i].dims[k]));
        cJSON_AddItemToArray(ds, cJSON_CreateString(run->shapes[i].dtype));
    }
    cJSON *ts = cJSON_AddArrayToObject(sh, "tensors");
    for (int t = 0; ts && t < run->ntensors; t++) {
        cJSON *to = cJSON_CreateObject();
        if (!to) return;
        cJSON_AddItemToArray(ts, to);
        cJSON_AddNumberToObject(to, "index", run->tensors[t].index);
        cJSON *ps = cJSON_AddArrayToObject(to, "partials");
        for (int c = 0; ps && c < run->ncfg; c++)
            cJSON_AddItemToArray(ps, fp4_metrics_raw_json(&run->tensors[t].metrics[c]));
    }
    cJSON *es = cJSON_AddArrayToObject(sh, "errors");
    for (int i = 0; es && i < run->nerrors; i++)
        cJSON_AddItemToArray(es, cJSON_CreateNumber(run->errors[i].index));
    cJSON_AddItemToObject(sh, "fingerprint", fp4_report_fingerprint_json(run->prints, run->nprints));
}

/* One entry of the report's "tensors" array: the tensor's identity, one results entry per
 * config, and its RHT deltas under --rht both. NULL when out of memory. */
static cJSON *tensor_json(const fp4_run *run, int t)
{
    const fp4_tensor_result *tr = &run->tensors[t];
    cJSON *to = cJSON_CreateObject();
    if (!to) return NULL;
    cJSON_AddStringToObject(to, "name", tr->info.name ? tr->info.name : "");
    cJSON *sh = cJSON_AddArrayToObject(to, "shape");
    for (int d = 0; sh && d < tr->info.rank; d++)
        cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)tr->info.dims[d]));
    cJSON_AddStringToObject(to, "dtype", tr->info.dtype);
    cJSON_AddNumberToObject(to, "axis", tr->axis);
    cJSON *rs = cJSON_AddArrayToObject(to, "results");
    for (int c = 0; rs && c < run->ncfg; c++) {
        cJSON *r = cJSON_CreateObject();
        if (!r) break;
        cJSON_AddItemToArray(rs, r);
        add_identity(r, &run->cfgs[c], true);
        add_metrics(r, &run->cfgs[c], &tr->metrics[c], true);
    }
    if (run->npairs > 0) {
        cJSON *rd = cJSON_AddArrayToObject(to, "rht_delta");
        for (int p = 0; rd && p < run->npairs; p++) {
            int a = run->pairs[p].plain, b = run->pairs[p].rotated;
            cJSON_AddItemToArray(rd, delta_json(&run->cfgs[a], &run->cfgs[b],
                                                &tr->metrics[a], &tr->metrics[b]));
        }
    }
    return to;
}

static cJSON *build_analysis(const char *command, int argc, char **argv, const fp4_run *run)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    add_header(root, command, argc, argv);
    cJSON *in = cJSON_AddObjectToObject(root, "input");
    if (in) {
        cJSON_AddStringToObject(in, "file", run->file ? run->file : "");
        cJSON *ds = cJSON_AddArrayToObject(in, "datasets");
        for (int i = 0; ds && i < run->ndatasets; i++)
            cJSON_AddItemToArray(ds, cJSON_CreateString(run->datasets[i]));
    }
    add_config(root, run);

    cJSON *ts = cJSON_AddArrayToObject(root, "tensors");
    for (int t = 0; ts && t < run->ntensors; t++) {
        cJSON *to = tensor_json(run, t);
        if (!to) break;
        cJSON_AddItemToArray(ts, to);
    }

    cJSON *sm = cJSON_AddObjectToObject(root, "summary");
    cJSON *sr = sm ? cJSON_AddArrayToObject(sm, "results") : NULL;
    for (int c = 0; sr && c < run->ncfg; c++) {
        const fp4_metrics *m = &run->pooled[c];
        cJSON *r = cJSON_CreateObject();
        if (!r) break;
        cJSON_AddItemToArray(sr, r);
        add_identity(r, &run->cfgs[c], true);
        cJSON_AddNumberToObject(r, "tensors", run->ntensors);
        add_metrics(r, &run->cfgs[c], m, false);
        if (run->config->layers > 0) {
            int k = run->config->layers;
            double *d = malloc((size_t)k * sizeof *d);
            cJSON *co = cJSON_AddObjectToObject(r, "compound");
            if (d && co) {
                for (int i = 0; i < k; i++) d[i] = m->delta;
                double prod = NAN, expo = NAN;
                fp4_compound_shrinkage(d, k, &prod, &expo);
                cJSON_AddNumberToObject(co, "layers", k);
                num(co, "prod_one_minus_delta", prod);
                num(co, "exp_neg_sum_delta", expo);
            }
            free(d);
        }
    }
    if (sm && run->npairs > 0) {
        cJSON *rd = cJSON_AddArrayToObject(sm, "rht_delta");
        for (int p = 0; rd && p < run->npairs; p++) {
            int a = run->pairs[p].plain, b = run->pairs[p].rotated;
            cJSON_AddItemToArray(rd, delta_json(&run->cfgs[a], &run->cfgs[b], &run->pooled[a],
                                                &run->pooled[b]));
        }
    }

    add_verdict(root, run);
    cJSON *sk = cJSON_AddArrayToObject(root, "skipped");
    for (int i = 0; sk && i < run->nskipped; i++) {
        const fp4_tensor_skip *x = &run->skipped[i];
        cJSON *e = cJSON_CreateObject();
        if (!e) break;
        cJSON_AddItemToArray(sk, e);
        cJSON_AddStringToObject(e, "name", x->info.name ? x->info.name : "");
        cJSON *sh = cJSON_AddArrayToObject(e, "shape");
        for (int d = 0; sh && d < x->info.rank; d++)
            cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)x->info.dims[d]));
        cJSON_AddStringToObject(e, "dtype", x->info.dtype);
        cJSON_AddStringToObject(e, "reason", x->reason);
        if (x->quant) cJSON_AddItemToObject(e, "quant", fp4_qsummary_json(x->quant));
    }
    cJSON *er = cJSON_AddArrayToObject(root, "errors");
    for (int i = 0; er && i < run->nerrors; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!e) break;
        cJSON_AddItemToArray(er, e);
        cJSON_AddStringToObject(e, "tensor", run->errors[i].tensor);
        cJSON_AddStringToObject(e, "status", status_name(run->errors[i].status));
        cJSON_AddStringToObject(e, "message", run->errors[i].message);
    }
    cJSON_AddItemToObject(root, "provenance", fp4_report_provenance_json(run->prints, run->nprints));
    cJSON *tm = cJSON_AddObjectToObject(root, "timing");
    if (tm) {
        num(tm, "seconds", run->seconds);
        cJSON_AddNumberToObject(tm, "bytes_read", (double)run->bytes_read);
    }
    if (run->config->shard.count > 0) add_shard(root, run);
    return root;
}

/* Escape the invalid UTF-8 of every string under `node`; true when any was. */
static bool json_strings_valid(cJSON *node)
{
    bool changed = false;
    for (; node; node = node->next) {
        if (cJSON_IsString(node) && node->valuestring) {
            bool ch = false;
            char *v = fp4_text_escape(node->valuestring, FP4_ESC_UTF8, &ch);
            if (ch && v && cJSON_SetValuestring(node, v)) changed = true;
            free(v);
        }
        if (node->child && json_strings_valid(node->child)) changed = true;
    }
    return changed;
}

bool fp4_json_make_valid(cJSON *root)
{
    if (!root || !json_strings_valid(root->child)) return false;
    cJSON *notes = cJSON_GetObjectItemCaseSensitive(root, "notes");
    if (!notes) notes = cJSON_AddArrayToObject(root, "notes");
    if (notes)
        cJSON_AddItemToArray(notes, cJSON_CreateString(FP4_NOTE_NOT_UTF8));
    return true;
}

bool fp4_json_same(const cJSON *a, const cJSON *b, bool by_name)
{
    if (!a || !b) return a == b;
    const int ta = a->type & 0xFF, tb = b->type & 0xFF;
    if (ta != tb) return false;
    switch (ta) {
    case cJSON_Number:
        return a->valuedouble == b->valuedouble &&
               signbit(a->valuedouble) == signbit(b->valuedouble);
    case cJSON_String:
    case cJSON_Raw:
        return a->valuestring && b->valuestring && !strcmp(a->valuestring, b->valuestring);
    case cJSON_Array: {
        const cJSON *x = a->child, *y = b->child;
        for (; x && y; x = x->next, y = y->next)
            if (!fp4_json_same(x, y, by_name)) return false;
        return !x && !y;
    }
    case cJSON_Object: {
        if (by_name) {
            if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) return false;
            const cJSON *x;
            cJSON_ArrayForEach(x, a)
            {
                if (!x->string) return false;
                if (!fp4_json_same(x, cJSON_GetObjectItemCaseSensitive(b, x->string), by_name))
                    return false;
            }
            return true;
        }
        const cJSON *x = a->child, *y = b->child;
        for (; x && y; x = x->next, y = y->next)
            if (!x->string || !y->string || strcmp(x->string, y->string) ||
                !fp4_json_same(x, y, by_name))
                return false;
        return !x && !y;
    }
    default: /* false, true, null */
        return true;
    }
}

/* One element of a member array of the root, printed alone at depth 0, then indented by the
 * two tabs its place adds after every line break (cJSON escapes a line break inside a string,
 * so every '\n' of the text is one of the layout's). NULL on OOM. */
static char *print_at_depth2(const cJSON *item)
{
    char *s = cJSON_Print(item);
    if (!s) return NULL;
    size_t n = 0, breaks = 0;
    for (; s[n]; n++) breaks += s[n] == '\n';
    char *t = malloc(n + 2 * breaks + 1);
    if (t) {
        char *o = t;
        for (size_t i = 0; i < n; i++) {
            *o++ = s[i];
            if (s[i] == '\n') {
                *o++ = '\t';
                *o++ = '\t';
            }
        }
        *o = '\0';
    }
    cJSON_free(s);
    return t;
}

char *fp4_json_print(cJSON *root)
{
    int n = 0;
    for (const cJSON *m = root ? root->child : NULL; m; m = m->next)
        if (cJSON_IsArray(m))
            for (const cJSON *e = m->child; e; e = e->next) n += e->child != NULL;
    if (n < 2) return cJSON_Print(root);
    cJSON **el = malloc((size_t)n * sizeof *el);
    char **txt = calloc((size_t)n, sizeof *txt);
    cJSON **child = malloc((size_t)n * sizeof *child);
    int *type = malloc((size_t)n * sizeof *type);
    if (!el || !txt || !child || !type) {
        free(el);
        free(txt);
        free(child);
        free(type);
        return cJSON_Print(root);
    }
    int k = 0;
    for (cJSON *m = root->child; m; m = m->next)
        if (cJSON_IsArray(m))
            for (cJSON *e = m->child; e; e = e->next)
                if (e->child) el[k++] = e;
    int failed = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(| : failed)
    for (int i = 0; i < n; i++) failed |= !(txt[i] = print_at_depth2(el[i]));
    char *out = NULL;
    if (!failed) {
        /* each element stands in as its text (a raw item), then is put back as it was (an
         * object's or array's valuestring is NULL) */
        for (int i = 0; i < n; i++) {
            type[i] = el[i]->type;
            child[i] = el[i]->child;
            el[i]->type = cJSON_Raw;
            el[i]->child = NULL;
            el[i]->valuestring = txt[i];
        }
        out = cJSON_Print(root);
        for (int i = 0; i < n; i++) {
            el[i]->type = type[i];
            el[i]->child = child[i];
            el[i]->valuestring = NULL;
        }
    } else {
        out = cJSON_Print(root);
    }
    for (int i = 0; i < n; i++) free(txt[i]);
    free(txt);
    free(el);
    free(child);
    free(type);
    return out;
}

/* Serialize with a trailing newline; NULL on OOM. Invalid UTF-8 escaped first. */
static char *to_text(cJSON *root)
{
    fp4_json_make_valid(root);
    char *s = fp4_json_print(root);
    if (!s) return NULL;
    size_t n = strlen(s);
    char *t = malloc(n + 2);
    if (t) {
        memcpy(t, s, n);
        t[n] = '\n';
        t[n + 1] = '\0';
    }
    cJSON_free(s);
    return t;
}

char *fp4_report_analysis_json(const char *command, int argc, char **argv, const fp4_run *run)
{
    cJSON *root = build_analysis(command, argc, argv, run);
    if (!root) return NULL;
    char *t = to_text(root);
    cJSON_Delete(root);
    return t;
}

char *fp4_report_tensor_json(const fp4_run *run, int t)
{
    if (!run || t < 0 || t >= run->ntensors) return NULL;
    cJSON *to = tensor_json(run, t);
    if (!to) return NULL;
    json_strings_valid(to->child);
    char *s = cJSON_Print(to);
    cJSON_Delete(to);
    if (!s) return NULL;
    size_t n = strlen(s);
    char *out = malloc(n + 2);
    if (out) {
        memcpy(out, s, n);
        out[n] = '\n';
        out[n + 1] = '\0';
    }
    cJSON_free(s);
    return out;
}

/* ---------------------------------------------------------------- human tables */

static void fmt_num(char *buf, size_t n, double v, const char *f)
{
    if (isfinite(v)) snprintf(buf, n, f, v);
    else snprintf(buf, n, "-");
}

static void fmt_sqnr(char *buf, size_t n, const fp4_metrics *m)
{
    if (m->sqnr_status == FP4_SQNR_OK) fmt_num(buf, n, m->sqnr_db, "%.3f");
    else snprintf(buf, n, "%s", m->sqnr_status == FP4_SQNR_EXACT ? "exact" : "zero");
}

/* Whether the table being printed holds configs of several scale modes (--format
 * nvfp4,mxfp4,e1m2): then a config's label names its scale. Set by fp4_report_table, which
 * prints from one thread. */
static bool label_scales;

static void cfg_label(char *buf, size_t n, const fp4_qconfig *c)
{
    char f[32];
    format_name(c->format, f, sizeof f);
    if (label_scales) snprintf(buf, n, "%s/%s%s", f, fp4_scale_name(c->scale), c->rht ? "+rht" : "");
    else snprintf(buf, n, "%s%s", f, c->rht ? "+rht" : "");
}

/* The tensor-name column of the tables: at least 32 columns, wider for the longest name shown
 * (names such as model.layers.10.self_attn.qkv_proj.weight), at most 96 (a longer name runs
 * past it). Widths count UTF-8 characters of the escaped name, not bytes. */
enum { NAME_COLS_MIN = 32, NAME_COLS_MAX = 96 };

static int text_columns(const char *s)
{
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static int name_width(const fp4_run *run)
{
    int w = NAME_COLS_MIN;
    for (int t = 0; t < run->ntensors; t++) {
        const char *nm = run->tensors[t].info.name ? run->tensors[t].info.name : "";
        char *shown = fp4_text_escape(nm, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
        int c = text_columns(shown ? shown : nm);
        free(shown);
        if (c > w) w = c < NAME_COLS_MAX ? c : NAME_COLS_MAX;
    }
    return w;
}

/* The width the table being written must fit (fp4_term_width; 0: no limit). With a limit a
 * name longer than its column is elided in the middle; without one it runs past it. */
static int table_cols;

/* With a width the full rows do not fit: the label column as wide as the longest label (at
 * least "format") and the number columns as wide as their values; 0 for the full layout. */
static int compact_lw;

/* Narrower still (the names would get under 12 columns): one record per tensor, its name on
 * a line of its own (elided to the width) and under it one line per config, "LABEL KEY=VALUE
 * ...", wrapped at spaces (SPEC 9). rec_last: the name of the record being written. */
static bool record_layout;
static char *rec_last;

/* In the record layout: the name line when `name` starts a new record. */
static void record_name(FILE *out, const char *name)
{
    if (rec_last && !strcmp(rec_last, name)) return;
    free(rec_last);
    rec_last = strdup(name);
    char *shown = fp4_text_escape(name, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
    const char *s = shown ? shown : name;
    char *el = text_columns(s) > table_cols ? fp4_term_elide(s, table_cols) : NULL;
    fprintf(out, "%s\n", el ? el : s);
    free(el);
    free(shown);
}

/* The name column of a row with `fixed` columns besides the name: w, narrowed to what the
 * table's width leaves (never below 12 columns; a row that still does not fit is wrapped by
 * fp4_term_write). */
static int fit_name(int w, int fixed)
{
    if (table_cols <= 0) return w;
    int room = table_cols - fixed;
    if (room < 12) room = 12;
    return w < room ? w : room;
}

/* name (escaped: control characters and invalid UTF-8 shown as \xNN), padded to w columns;
 * elided in the middle to w columns when the table has a width (table_cols). */
static void put_name(FILE *out, const char *name, int w)
{
    char *shown = fp4_text_escape(name, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
    const char *s = shown ? shown : name;
    char *el = table_cols > 0 && text_columns(s) > w ? fp4_term_elide(s, w) : NULL;
    if (el) s = el;
    fputs(s, out);
    for (int c = text_columns(s); c < w; c++) fputc(' ', out);
    free(el);
    free(shown);
}

static void table_row(FILE *out, const char *command, const char *name, const fp4_qconfig *c,
                      const fp4_metrics *m, int w)
{
    char lab[48], sq[24], a[24], b15[24], x1[24], x2[24];
    cfg_label(lab, sizeof lab, c);
    fmt_sqnr(sq, sizeof sq, m);
    fmt_num(a, sizeof a, m->alpha, "%.5f");
    fmt_num(b15, sizeof b15, m->bucket_ratio_15, "%.4f");
    if (!strcmp(command, "bias")) {
        fmt_num(x1, sizeof x1, m->delta, "%+.5f");
        fmt_num(x2, sizeof x2, m->mean_signed_error, "%+.5f");
    } else if (!strcmp(command, "buckets")) {
        fmt_num(x1, sizeof x1, m->bucket_ratio_8, "%.4f");
        snprintf(x2, sizeof x2, "%llu", (unsigned long long)m->saturated);
    } else {
        fmt_num(x1, sizeof x1, m->nmse, "%.3e");
        snprintf(x2, sizeof x2, "%llu", (unsigned long long)m->elements);
    }
    /* non-finite inputs are marked on the row: they are counted, not quantized */
    char nf[80] = "";
    if (m->nan || m->inf) /* a flag: under a width on a line of its own when the row is full */
        snprintf(nf, sizeof nf, "%s  ! non-finite input: %llu NaN, %llu Inf",
                 table_cols > 0 && !record_layout ? FP4_TERM_FLAG : "",
                 (unsigned long long)m->nan, (unsigned long long)m->inf);
    if (record_layout) {
        const bool bias = !strcmp(command, "bias"), buckets = !strcmp(command, "buckets");
        record_name(out, name);
        fprintf(out, "  %s SQNR_dB=%s alpha=%s B15=%s %s=%s %s=%s%s\n", lab, sq, a, b15,
                bias ? "delta" : buckets ? "B8" : "NMSE", x1,
                bias ? "mean_err(t)" : buckets ? "saturated" : "elements", x2, nf);
        return;
    }
    put_name(out, name, w);
    if (compact_lw > 0)
        fprintf(out, " %-*s %7s %8s %6s %9s %11s%s\n", compact_lw, lab, sq, a, b15, x1, x2, nf);
    else
        fprintf(out, " %-12s %9s %9s %7s %11s %11s%s\n", lab, sq, a, b15, x1, x2, nf);
}

static void table_delta_row(FILE *out, const char *name, const fp4_qconfig *c,
                            const fp4_metrics *mp, const fp4_metrics *mr, int w)
{
    fp4_rht_delta d;
    fp4_rht_delta_compute(mp, mr, &d);
    char f[32], sp[24], sr[24], ds[24], da[24], db[24];
    cfg_label(f, sizeof f, c); /* the plain config of the pair: its format (and scale) */
    fmt_sqnr(sp, sizeof sp, mp);
    fmt_sqnr(sr, sizeof sr, mr);
    fmt_num(ds, sizeof ds, d.sqnr_ok ? d.delta_sqnr_db : NAN, "%+.3f");
    fmt_num(da, sizeof da, d.delta_alpha, "%+.5f");
    fmt_num(db, sizeof db, d.delta_bucket_ratio_15, "%+.4f");
    if (record_layout) {
        record_name(out, name);
        fprintf(out, "  %s SQNR=%s SQNR+rht=%s dSQNR=%s d_alpha=%s dB15=%s\n", f, sp, sr, ds,
                da, db);
        return;
    }
    put_name(out, name, w);
    fprintf(out, " %-*s %9s %9s %8s %9s %8s\n", label_scales ? 12 : 8, f, sp, sr, ds, da, db);
}

/* With --layers K: the compound shrinkage of a pooled result over K layers (as in the report's
 * summary "compound"), on a line under its pooled row. */
static void table_compound_row(FILE *out, const fp4_run *run, int c, int w)
{
    int k = run->config->layers;
    if (k <= 0) return;
    double *d = malloc((size_t)k * sizeof *d);
    if (!d) return;
    for (int i = 0; i < k; i++) d[i] = run->pooled[c].delta;
    double prod = NAN, expo = NAN;
    fp4_compound_shrinkage(d, k, &prod, &expo);
    free(d);
    char lab[48], a[24], b[24];
    cfg_label(lab, sizeof lab, &run->cfgs[c]);
    fmt_num(a, sizeof a, prod, "%.5f");
    fmt_num(b, sizeof b, expo, "%.5f");
    if (record_layout) {
        fprintf(out, "  %s compound over K=%d layers: prod(1-delta)=%s exp(-sum delta)=%s\n",
                lab, k, a, b);
        return;
    }
    put_name(out, "  (compound)", w);
    fprintf(out, " %-*s K=%d layers: prod(1-delta) %s, exp(-sum delta) %s\n",
            compact_lw > 0 ? compact_lw : 12, lab, k, a, b);
}

/* The verdict under the table: pooled SQNR, alpha and B15 per config, the winner with its
 * margin, and the top 10 tensors of the ranking (the JSON holds all of them). */
/* The table's classes of skipped tensors: 0 already quantized, 1 kept in high precision by
 * a recipe rule or the checkpoint's exclude list (run/recipe.h), 2 the rest. */
static const char kept_pfx[] = "kept in high precision by ";
static int skip_class(const char *reason)
{
    static const char qpfx[] = "already quantized";
    if (!strncmp(reason, qpfx, sizeof qpfx - 1)) return 0;
    if (!strncmp(reason, kept_pfx, sizeof kept_pfx - 1)) return 1;
    return 2;
}

/* The table's "keep in high precision" lines (verdict.h). */
static void keep_table(FILE *out, const fp4_run *run, int nw)
{
    fp4_keep k;
    if (fp4_verdict_keep(run, &k) != FP4_OK || k.cfg < 0) {
        fp4_keep_free(&k);
        return;
    }
    char lab[48];
    cfg_label(lab, sizeof lab, &run->cfgs[k.cfg]);
    if (k.n < FP4_KEEP_MIN_TENSORS) {
        fprintf(out, "  keep in high precision: not judged (%d tensor%s; %d or more needed for "
                     "a typical tensor)\n", k.n, k.n == 1 ? "" : "s", FP4_KEEP_MIN_TENSORS);
        fp4_keep_free(&k);
        return;
    }
    fprintf(out, "  keep in high precision (%s %s scales; flushed share, SQNR deficit or non-amax "
                 "SQNR deficit with a modified z-score > %.1f, SPEC 9): %d tensor%s\n",
            lab, fp4_scale_name(run->cfgs[k.cfg].scale), FP4_KEEP_Z, k.nkeep,
            k.nkeep == 1 ? "" : "s");
    if (!k.recipe)
        fprintf(out, "    judged under %s %s scales, the plain config with the highest pooled "
                     "SQNR: the run has no NVFP4 or MXFP4 E2M1 config, the formats recipes "
                     "write (--format e2m1 --scale nvfp4 judges under it)\n",
                lab, fp4_scale_name(run->cfgs[k.cfg].scale));
    fprintf(out, "    typical tensor: flushed %.2f%%, SQNR %.3f dB, non-amax SQNR %.3f dB (medians)\n",
            100.0 * k.median_flushed, k.median_sqnr_db, k.median_sqnr_na_db);
    /* the row's numbers take 76 columns after the indent and the name; a name that would be
     * narrowed under a width goes on a line of its own, the numbers under it */
    const int fixed = 80;
    const bool own_line = table_cols > 0 && table_cols - fixed < nw;
    for (int i = 0; i < k.nkeep && i < 10; i++) {
        const fp4_keep_row *r = &k.rows[i];
        const char *nm = run->tensors[r->t].info.name ? run->tensors[r->t].info.name : "";
        fputs("    ", out);
        if (own_line) {
            put_name(out, nm, fit_name(text_columns(nm), 4));
            fputs("\n   ", out);
        } else {
            put_name(out, nm, nw);
        }
        fprintf(out, " flushed %6.2f%%  SQNR %7.3f dB  non-amax %7.3f dB  z %.1f (%s)\n",
                100.0 * r->flushed, r->sqnr_db, r->sqnr_na_db, r->score, fp4_keep_by_word(r->by));
    }
    if (k.nkeep > 10) fprintf(out, "    ... (%d more in the JSON)\n", k.nkeep - 10);
    {
        int nm = 0, na = 0;
        bool *added = NULL;
        char **mods = keep_modules(run, &k, &nm, &added);
        for (int j = 0; added && j < nm; j++) na += added[j];
        if (na > 0) {
            fputs("    with their fused partners (vLLM fuses q/k/v and gate/up into one GEMM and "
                  "quantizes all or none: --emit-exclude lists them too):",
                  out);
            for (int j = 0, c = 0; j < nm; j++)
                if (added[j]) fprintf(out, "%s %s", c++ ? "," : "", mods[j]);
            fputc('\n', out);
        }
        free_modules(mods, nm, added);
    }
    if (k.nkeep > 0)
        fprintf(out, "    keeping them: pooled SQNR %.3f -> %.3f dB (%+.3f dB), flushed %.2f%% -> "
                     "%.2f%% of the non-zero inputs\n",
                k.pooled_sqnr_db, k.pooled_sqnr_kept_db, k.pooled_sqnr_kept_db - k.pooled_sqnr_db,
                100.0 * k.pooled_flushed, 100.0 * k.pooled_flushed_kept);
    fp4_keep_free(&k);
}

/* The last column of a ranking row (16 columns, as "  delta +0.00000"): the statistic the
 * ranking is by (`by`: a fp4_rank_by, -1 the keep score), delta for gap, sqnr and delta. */
static void rank_column(char *buf, size_t n, const fp4_verdict_row *r, int by)
{
    double v;
    const char *lab, *fmt;
    switch (by) {
    case -1: v = r->keep_score, lab = "keep z", fmt = "%7.1f"; break;
    case FP4_RANK_UNDERFLOW: v = r->underflows_pct, lab = "uflow%", fmt = "%7.3f"; break;
    case FP4_RANK_SQNR_NONAMAX: v = r->sqnr_na_db, lab = "nonamax", fmt = "%6.2f"; break;
    case FP4_RANK_MAXERR: v = r->maxerr_rel, lab = "maxerr", fmt = "%7.4f"; break;
    case FP4_RANK_RELERR: v = r->rel_err_p99, lab = "p99", fmt = "%10.4f"; break;
    default: v = r->delta, lab = "delta", fmt = "%+.5f"; break;
    }
    char num_[24];
    if (isfinite(v)) snprintf(num_, sizeof num_, fmt, v);
    else snprintf(num_, sizeof num_, "%*s", (int)(13 - strlen(lab)), "n/a");
    snprintf(buf, n, "  %s %s", lab, num_);
}

/* The verdict under the table (pooled rows, winner, notes, the kept configs, the ranking); nw
 * the longest name's columns. first: it opens the table (many tensors, SPEC §9), no blank line
 * before it. */
static void verdict_table(FILE *out, const fp4_run *run, int nw, bool first)
{
    if (run->ntensors <= 0 || run->ncfg <= 0) return;
    fprintf(out, "%sverdict (pooled over %d tensor%s):\n", first ? "" : "\n", run->ntensors,
            run->ntensors == 1 ? "" : "s");
    /* label columns as wide as the longest label (e2m1/nvfp4+rht), never narrower than before */
    int lw = 0;
    bool mixed = false;
    for (int c = 0; c < run->ncfg; c++) {
        char lab[48];
        cfg_label(lab, sizeof lab, &run->cfgs[c]);
        if ((int)strlen(lab) > lw) lw = (int)strlen(lab);
        if (run->cfgs[c].scale != run->cfgs[0].scale) mixed = true;
    }
    int lw_list = lw > 12 ? lw : 12, lw_rank = lw > 10 ? lw : 10;
    for (int c = 0; c < run->ncfg; c++) {
        char lab[48], sq[24], a[24], b[24];
        cfg_label(lab, sizeof lab, &run->cfgs[c]);
        fmt_sqnr(sq, sizeof sq, &run->pooled[c]);
        fmt_num(a, sizeof a, run->pooled[c].alpha, "%.5f");
        fmt_num(b, sizeof b, run->pooled[c].bucket_ratio_15, "%.4f");
        fprintf(out, "  %-*s %-6s SQNR %9s dB  alpha %s  B15 %s\n", lw_list, lab,
                fp4_scale_name(run->cfgs[c].scale), sq, a, b);
    }
    if (mixed)
        fprintf(out, "  note: the configs use different scales (see the scale column): a gap "
                     "mixes grid and scale\n");
    int runner, w = fp4_verdict_winner(run, &runner);
    if (w >= 0) {
        char lab[48], lab2[48];
        cfg_label(lab, sizeof lab, &run->cfgs[w]);
        const bool tie = fp4_verdict_tie(run, w, runner);
        if (tie) {
            cfg_label(lab2, sizeof lab2, &run->cfgs[runner]);
            fprintf(out, "  tie: %s (%s scales) and %s (%s scales) within %.2f dB (%+.3f dB): no "
                         "winner at the verdict's tolerance (SPEC 9)",
                    lab, fp4_scale_name(run->cfgs[w].scale), lab2,
                    fp4_scale_name(run->cfgs[runner].scale), FP4_VERDICT_TIE_DB,
                    run->pooled[w].sqnr_db - run->pooled[runner].sqnr_db);
        } else if (runner >= 0) {
            fprintf(out, "  winner: %s (%s scales)", lab, fp4_scale_name(run->cfgs[w].scale));
        } else {
            /* nothing to win against: one config, or the others give the same values or no
             * finite SQNR (issue 29: "winner ... no other config" read as a contest) */
            int nsame_all = 0;
            for (int c = 0; c < run->ncfg; c++) nsame_all += fp4_verdict_same(run, w, c);
            const int nother = run->ncfg - 1 - nsame_all;
            if (nother == 0)
                fprintf(out, "  %s: %s (%s scales)",
                        run->ncfg == 1 ? "the only config" : "the only distinct config", lab,
                        fp4_scale_name(run->cfgs[w].scale));
            else
                fprintf(out, "  winner: %s (%s scales), the only config with a finite SQNR", lab,
                        fp4_scale_name(run->cfgs[w].scale));
        }
        if (!tie && runner >= 0) {
            cfg_label(lab2, sizeof lab2, &run->cfgs[runner]);
            fprintf(out, ", %+.3f dB over %s (%s scales)",
                    run->pooled[w].sqnr_db - run->pooled[runner].sqnr_db, lab2,
                    fp4_scale_name(run->cfgs[runner].scale));
        }
        int nsame = 0;
        for (int c = 0; c < run->ncfg; c++) {
            if (!fp4_verdict_same(run, w, c)) continue;
            cfg_label(lab2, sizeof lab2, &run->cfgs[c]);
            fprintf(out, "%s%s", nsame++ ? ", " : "; ", lab2);
        }
        if (nsame) fprintf(out, " give%s the same values (same grid)", nsame == 1 ? "s" : "");
        if (!tie && runner < 0 && run->ncfg - 1 - nsame == 0)
            fprintf(out, "; nothing to rank it against (give --format a list to compare grids)");
        fputc('\n', out);
    }
    for (int i = 0; i < 2; i++) {
        const char *nt = verdict_note(run, i);
        if (nt) fprintf(out, "  note: %s\n", nt);
    }
    keep_table(out, run, nw);
    fp4_verdict_row *rows = fp4_verdict_rank(run);
    if (!rows) return;
    const fp4_rank_by rb = run->config->rank_by;
    const char *by = rb == FP4_RANK_SQNR              ? "lowest best SQNR first"
                     : rb == FP4_RANK_DELTA           ? "largest |delta| first"
                     : rb == FP4_RANK_UNDERFLOW       ? "largest underflow % (best config) first"
                     : rb == FP4_RANK_SQNR_NONAMAX    ? "lowest non-amax SQNR (best config) first"
                     : rb == FP4_RANK_MAXERR          ? "largest max error / amax (best config) first"
                     : rb == FP4_RANK_RELERR          ? "largest p99 relative error (best config) first"
                                                      : "largest SQNR gap best-worst first";
    /* one quantizer (one config, or configs giving the same values: e1m2 and int4): no worst
     * config, every gap 0, so the rows show the one SQNR; a gap ranking where every gap is
     * equal ranks nothing: the ranking is by the keep score (fp4_verdict_by_keep) */
    bool single = true;
    for (int c = 1; c < run->ncfg; c++)
        if (!fp4_verdict_same(run, 0, c)) single = false;
    const bool by_keep = fp4_verdict_by_keep(run);
    if (by_keep)
        by = single ? "largest keep score first (one quantizer: no gap to rank by)"
                    : "largest keep score first (every gap equal: no gap to rank by)";
    int top = run->ntensors < 10 ? run->ntensors : 10;
    fprintf(out, "  tensors, %s (%d of %d; all in the JSON):\n", by, top, run->ntensors);
    /* the full row is 2 + name + 61 + 2 label columns; a narrow table leaves the worst
     * config out (it is in the JSON) before it narrows the name below 24 columns */
    const int full_fixed = 63 + 2 * lw_rank, short_fixed = 47 + lw_rank;
    const bool brief = table_cols > 0 && table_cols - full_fixed < (nw < 24 ? nw : 24);
    const int rw = fit_name(nw, brief ? short_fixed : full_fixed);
    for (int i = 0; i < top; i++) {
        const fp4_verdict_row *r = &rows[i];
        const fp4_tensor_result *tr = &run->tensors[r->t];
        fputs("  ", out);
        put_name(out, tr->info.name ? tr->info.name : "", rw);
        char last[40];
        rank_column(last, sizeof last, r, by_keep ? -1 : (int)rb);
        if (!r->ok) {
            fprintf(out, " no finite SQNR\n");
        } else if (single) {
            char lb[48];
            cfg_label(lb, sizeof lb, &run->cfgs[r->best]);
            fprintf(out, " %-*s %7.3f dB%s\n", lw_rank, lb, tr->metrics[r->best].sqnr_db, last);
        } else if (brief) {
            char lb[48];
            cfg_label(lb, sizeof lb, &run->cfgs[r->best]);
            fprintf(out, " best %-*s %7.3f  gap %6.3f dB%s\n", lw_rank, lb,
                    tr->metrics[r->best].sqnr_db, r->gap_db, last);
        } else {
            char lb[48], lwst[48];
            cfg_label(lb, sizeof lb, &run->cfgs[r->best]);
            cfg_label(lwst, sizeof lwst, &run->cfgs[r->worst]);
            fprintf(out, " best %-*s %7.3f  worst %-*s %7.3f  gap %6.3f dB%s\n", lw_rank, lb,
                    tr->metrics[r->best].sqnr_db, lw_rank, lwst, tr->metrics[r->worst].sqnr_db,
                    r->gap_db, last);
        }
    }
    free(rows);
    fputs("  alpha = <q(x),x>/<x,x> (below 1: the format shrinks the tensor); delta = 1 - alpha of "
          "the best config;\n  B15 = effective use of the 15 signed codes (1: all used "
          "equally; SPEC 5)\n",
          out);
}

/* The table's last line (SPEC §9 "Terminal output"): the verdict in one line, so that the
 * answer is on the screen after a long table without scrolling back to the verdict. */
static void verdict_summary(FILE *out, const fp4_run *run)
{
    if (run->ntensors <= 0 || run->ncfg <= 0) return;
    fprintf(out, "verdict over %d tensor%s: ", run->ntensors, run->ntensors == 1 ? "" : "s");
    int runner, w = fp4_verdict_winner(run, &runner);
    if (w < 0) {
        fputs("no config has a finite pooled SQNR\n", out);
        return;
    }
    char lab[48], lab2[48], scales[48] = "";
    cfg_label(lab, sizeof lab, &run->cfgs[w]);
    /* one scale for every config: said once; else each label names its scale (e2m1/fp32) */
    if (!label_scales)
        snprintf(scales, sizeof scales, " (%s scales)", fp4_scale_name(run->cfgs[w].scale));
    if (runner < 0) {
        char sq[24];
        fmt_sqnr(sq, sizeof sq, &run->pooled[w]);
        fprintf(out, "%s%s %s dB; one quantizer, nothing to rank it against\n", lab, scales, sq);
        return;
    }
    cfg_label(lab2, sizeof lab2, &run->cfgs[runner]);
    const double d = run->pooled[w].sqnr_db - run->pooled[runner].sqnr_db;
    if (fp4_verdict_tie(run, w, runner))
        fprintf(out, "tie, %s and %s within %.2f dB (%+.3f dB): no winner\n", lab, lab2,
                FP4_VERDICT_TIE_DB, d);
    else fprintf(out, "%s best, %+.3f dB over %s%s\n", lab, d, lab2, scales);
}

/* The already-quantized tensors (SPEC §10), one row each under a heading: format, producer,
 * the share of elements at code +-0 and at +-6 (the grid's top), the decoded block scales'
 * smallest and largest (finite, non-zero), how many decode to 0 and to inf/NaN, and the
 * per-tensor scale as stored. Under a width the rows do not fit, the producer column goes
 * (the heading names the producers). The first FP4_TABLE_TOP_TENSORS rows unless -v. */
static void quant_rows(FILE *out, const fp4_run *run, int count, bool quant_only)
{
    char prod[96] = "";
    int nw = NAME_COLS_MIN, nprod = 0;
    for (int i = 0; i < run->nskipped; i++) {
        const fp4_tensor_skip *x = &run->skipped[i];
        if (skip_class(x->reason) != 0) continue;
        char *shown = fp4_text_escape(x->info.name, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
        int c = text_columns(shown ? shown : x->info.name);
        free(shown);
        if (c > nw) nw = c < NAME_COLS_MAX ? c : NAME_COLS_MAX;
        if (x->quant && !strstr(prod, x->quant->producer) &&
            strlen(prod) + strlen(x->quant->producer) + 3 < sizeof prod) {
            if (nprod++) strcat(prod, ", ");
            strcat(prod, x->quant->producer);
        }
    }
    /* columns besides the name: full 83 (format 6, producer 18, shares 6, scales 10, counts
     * 9, tensor scale 10), compact 56 (no producer; 5, 5, 9, 7, 9 and fewer digits) */
    enum { FULL = 83, COMPACT = 56 };
    const bool compact = table_cols > 0 && table_cols - FULL < nw;
    const int w = fit_name(nw, compact ? COMPACT : FULL);
    const int fw = compact ? 5 : 6, pw = compact ? 5 : 6, sw = compact ? 9 : 10,
              bw = compact ? 7 : 9, tw = compact ? 9 : 10;
    const char *pf = compact ? "%.1f" : "%.2f", *gf = compact ? "%.3g" : "%.4g";
    char *file = run->file ? fp4_text_escape(run->file, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL)
                           : NULL;
    fprintf(out, "already quantized: %d tensor%s%s%s (not analysed, not pooled; %s; 'fp4diag "
                 "audit SOURCE %s' measures these against their source):\n",
            count, count == 1 ? "" : "s", nprod ? " by " : "", prod,
            quant_only ? "no tensor in high precision selected: no verdict"
                       : "the verdict covers the tensors in high precision only",
            file ? file : "QUANTIZED");
    free(file);
    put_name(out, "tensor", w);
    fprintf(out, " %-*s", fw, compact ? "fmt" : "format");
    if (!compact) fprintf(out, " %-18s", "producer");
    fprintf(out, " %*s %*s %*s %*s %*s %*s\n", pw, "zero%", pw, "max%", sw, "scale_min", sw,
            "scale_max", bw, compact ? "s0/nf" : "s0/nonfin", tw, "tensor_sc");
    const int most = run->config && run->config->verbosity > 0 ? count : FP4_TABLE_TOP_TENSORS;
    int shown = 0;
    for (int i = 0; i < run->nskipped && shown < most; i++) {
        const fp4_tensor_skip *x = &run->skipped[i];
        if (skip_class(x->reason) != 0) continue;
        const fp4_qsummary *q = x->quant;
        put_name(out, x->info.name, w);
        shown++;
        if (!q) { /* a report without the summary (not one of ours) */
            fprintf(out, " -\n");
            continue;
        }
        int64_t n = 0;
        for (int c = 0; c < 16; c++) n += q->histogram[c];
        char zero[16] = "-", top[16] = "-", lo[16] = "-", hi[16] = "-", bad[48], ts[16] = "-";
        if (n > 0) {
            snprintf(zero, sizeof zero, pf,
                     100.0 * (double)(q->histogram[0] + q->histogram[8]) / (double)n);
            snprintf(top, sizeof top, pf,
                     100.0 * (double)(q->histogram[7] + q->histogram[15]) / (double)n);
        }
        if (isfinite(q->scale_min)) snprintf(lo, sizeof lo, gf, q->scale_min);
        if (isfinite(q->scale_max)) snprintf(hi, sizeof hi, gf, q->scale_max);
        snprintf(bad, sizeof bad, "%lld/%lld", (long long)q->scale_zero,
                 (long long)q->scale_nonfinite);
        if (!isnan(q->tensor_scale)) snprintf(ts, sizeof ts, gf, q->tensor_scale);
        fprintf(out, " %-*s", fw, q->format);
        if (!compact) fprintf(out, " %-18s", q->producer);
        fprintf(out, " %*s %*s %*s %*s %*s %*s\n", pw, zero, pw, top, sw, lo, sw, hi, bw, bad,
                tw, ts);
    }
    if (shown < count)
        fprintf(out, "(%d of %d already-quantized tensors, in the model's order; -v shows all, "
                     "the JSON holds all)\n", shown, count);
    fprintf(out, "zero%%, max%%: elements at code +-0 and at +-6 (the grid's top); scale_min, "
                 "scale_max: decoded block scales, finite and non-zero; %s: block scales "
                 "decoding to 0 and to inf/NaN; tensor_sc: the per-tensor scale as stored "
                 "(SPEC 10)\n", compact ? "s0/nf" : "s0/nonfin");
}

/* bias -v: per config, per level of its grid, pooled over the tensors, the analytic conditional
 * error (l - r)/2 beside the measured mean of rho(t) - t and the level's share of the non-amax
 * elements (SPEC 5). One column per level, 8 columns of 8 characters: 76 columns at most. */
static void bias_levels_table(FILE *out, const fp4_run *run)
{
    fprintf(out, "\nper level, pooled (t = |x|/s, non-amax elements): analytic = (l - r)/2,\n"
                 "the mean error of a flat density in the bin; measured = mean rho(t) - t\n");
    for (int c = 0; c < run->ncfg; c++) {
        const fp4_metrics *m = &run->pooled[c];
        fp4_level_geom g[8];
        int nl = fp4_level_geometry(run->cfgs[c].format, g);
        if (nl > 8) nl = 8;
        uint64_t total = 0;
        for (int i = 0; i < nl; i++) total += m->level_count[i];
        char lab[48];
        cfg_label(lab, sizeof lab, &run->cfgs[c]);
        fprintf(out, "  %s (%s scales)\n    %-8s", lab, fp4_scale_name(run->cfgs[c].scale),
                "level");
        for (int i = 0; i < nl; i++) fprintf(out, " %7g", g[i].q);
        fprintf(out, "\n    %-8s", "analytic");
        for (int i = 0; i < nl; i++) fprintf(out, " %7.4f", g[i].analytic_bias + 0.0);
        fprintf(out, "\n    %-8s", "measured");
        for (int i = 0; i < nl; i++) {
            if (m->level_count[i])
                fprintf(out, " %7.4f", m->level_err_sum[i] / (double)m->level_count[i] + 0.0);
            else
                fprintf(out, " %7s", "-");
        }
        fprintf(out, "\n    %-8s", "share %");
        for (int i = 0; i < nl; i++) {
            if (total)
                fprintf(out, " %7.2f", 100.0 * (double)m->level_count[i] / (double)total);
            else
                fprintf(out, " %7s", "-");
        }
        fputc('\n', out);
    }
}

static void table_text(FILE *out, const char *command, const fp4_run *run)
{
    bool rht = !strcmp(command, "rht") && run->npairs > 0;
    int nw = name_width(run);
    label_scales = false;
    for (int c = 1; c < run->ncfg; c++) label_scales |= run->cfgs[c].scale != run->cfgs[0].scale;
    /* the rows besides the name: rht 49 + the format column, the others 65, or 47 + the
     * longest label in the compact layout (when the full one would narrow the names) */
    compact_lw = 0;
    if (!rht && table_cols > 0 && table_cols - 65 < nw) {
        compact_lw = 6;
        for (int c = 0; c < run->ncfg; c++) {
            char lab[48];
            cfg_label(lab, sizeof lab, &run->cfgs[c]);
            if ((int)strlen(lab) > compact_lw) compact_lw = (int)strlen(lab);
        }
    }
    const int fixed = rht ? 49 + (label_scales ? 12 : 8) : compact_lw ? 47 + compact_lw : 65;
    int w = fit_name(nw, fixed);
    record_layout = table_cols > 0 && table_cols - fixed < 12 && w < nw;
    free(rec_last);
    rec_last = NULL;
    /* many tensors and no -v: the verdict first, then the rows of the tensors kept in high
     * precision and of those first in its ranking, FP4_TABLE_TOP_TENSORS in all (more when
     * more are kept; in model order), and a line saying how many were left out */
    bool *top = NULL;
    int ntop = 0, nkept = 0;
    if (run->config->verbosity <= 0 && run->ntensors > FP4_TABLE_TOP_TENSORS) {
        fp4_verdict_row *rows = fp4_verdict_rank(run);
        top = rows ? calloc((size_t)run->ntensors, sizeof *top) : NULL;
        for (int i = 0; top && i < run->ntensors; i++)
            if (rows[i].kept) top[rows[i].t] = true, ntop++, nkept++;
        for (int i = 0; top && i < run->ntensors && ntop < FP4_TABLE_TOP_TENSORS; i++)
            if (!top[rows[i].t]) top[rows[i].t] = true, ntop++;
        free(rows);
        if (top) {
            verdict_table(out, run, nw, true);
            fputc('\n', out);
        }
    }
    /* a checkpoint whose selected weights are all already quantized: their lines alone (no
     * empty pooled rows, no verdict) */
    bool quant_only = run->ntensors == 0;
    for (int i = 0; quant_only && i < run->nskipped; i++)
        if (run->skipped[i].quant) break;
        else if (i == run->nskipped - 1) quant_only = false;
    if (run->nskipped == 0) quant_only = false;
    if (quant_only) {
        /* nothing: the already-quantized lines below */
    } else if (rht) {
        if (!record_layout) {
            put_name(out, "tensor", w);
            fprintf(out, " %-*s %9s %9s %8s %9s %8s\n", label_scales ? 12 : 8, "format", "SQNR",
                    "SQNR+rht", "dSQNR", "d_alpha", "dB15");
        }
        for (int t = 0; t < run->ntensors; t++)
            for (int p = 0; p < run->npairs && (!top || top[t]); p++) {
                int a = run->pairs[p].plain, b = run->pairs[p].rotated;
                table_delta_row(out, run->tensors[t].info.name, &run->cfgs[a],
                                &run->tensors[t].metrics[a], &run->tensors[t].metrics[b], w);
            }
        for (int p = 0; p < run->npairs; p++) {
            int a = run->pairs[p].plain, b = run->pairs[p].rotated;
            table_delta_row(out, "(pooled)", &run->cfgs[a], &run->pooled[a], &run->pooled[b], w);
        }
    } else {
        const char *x1 = !strcmp(command, "bias") ? "delta"
                         : !strcmp(command, "buckets") ? "B8" : "NMSE";
        const char *x2 = !strcmp(command, "bias") ? "mean_err(t)"
                         : !strcmp(command, "buckets") ? "saturated" : "elements";
        if (!record_layout) {
            put_name(out, "tensor", w);
            if (compact_lw > 0)
                fprintf(out, " %-*s %7s %8s %6s %9s %11s\n", compact_lw, "format", "SQNR_dB",
                        "alpha", "B15", x1, x2);
            else
                fprintf(out, " %-12s %9s %9s %7s %11s %11s\n", "format", "SQNR_dB", "alpha",
                        "B15", x1, x2);
        }
        for (int t = 0; t < run->ntensors; t++)
            for (int c = 0; c < run->ncfg && (!top || top[t]); c++)
                table_row(out, command, run->tensors[t].info.name, &run->cfgs[c],
                          &run->tensors[t].metrics[c], w);
        for (int c = 0; c < run->ncfg; c++) {
            table_row(out, command, "(pooled)", &run->cfgs[c], &run->pooled[c], w);
            table_compound_row(out, run, c, w);
        }
        if (!strcmp(command, "bias"))
            fprintf(out, "mean_err(t): mean error in normalized units t = |x|/s (per grid)\n");
        if (!strcmp(command, "bias") && run->config->verbosity > 0) bias_levels_table(out, run);
        if (!strcmp(command, "buckets")) {
            bool uniform = false;
            for (int c = 0; c < run->ncfg; c++)
                uniform |= run->cfgs[c].format.id == FP4_FMT_E1M2 ||
                           run->cfgs[c].format.id == FP4_FMT_INT4;
            fprintf(out, "saturated: elements whose scaled value lay above the grid's top level "
                         "and were clamped to it%s\n",
                    uniform ? "; under e1m2/int4 with amax scales these are fp32 rounding "
                              "leftovers (the block amax lands a hair above g_max), not "
                              "clipping"
                            : "");
        }
    }
    if (top)
        fprintf(out, "(rows of %d of %d tensors, %sthose first in the verdict's ranking, in the "
                     "model's order; -v shows all %d rows, the JSON holds all)\n",
                ntop, run->ntensors, nkept ? "those kept in high precision and " : "",
                run->ntensors);
    else verdict_table(out, run, nw, false);
    free(top);
    /* already-quantized tensors (io/quantized.h), one row each (quant_rows): no option analyses
     * them; then the weights recipes keep in high precision (run/recipe.h: --all-weights
     * analyses them); then the rest */
    int nclass[3] = {0, 0, 0};
    int64_t kept_elems = 0, all_elems = 0;
    for (int i = 0; i < run->nskipped; i++) {
        int c = skip_class(run->skipped[i].reason);
        nclass[c]++;
        if (c == 1 && run->skipped[i].info.nelems > 0) kept_elems += run->skipped[i].info.nelems;
        if (c == 0 && run->skipped[i].info.nelems > 0) all_elems += run->skipped[i].info.nelems;
    }
    for (int i = 0; i < run->ntensors; i++)
        if (run->tensors[i].info.nelems > 0) all_elems += run->tensors[i].info.nelems;
    all_elems += kept_elems;
    for (int pass = 0; pass < 3; pass++) {
        int count = nclass[pass], shown = 0, most = pass == 1 ? 6 : 4;
        if (count == 0) continue;
        if (pass == 0) {
            quant_rows(out, run, count, quant_only);
            continue;
        }
        if (pass == 1)
            fprintf(out, "kept in high precision by recipe: %d tensor%s, %.1f%% of the "
                    "elements (not analysed, not pooled):", count, count == 1 ? "" : "s",
                    all_elems > 0 ? 100.0 * (double)kept_elems / (double)all_elems : 0.0);
        else /* one line: how many, the first few with their reasons, how to include them */
            fprintf(out, "skipped %d tensor%s (not analysed, not pooled):", count,
                    count == 1 ? "" : "s");
        for (int i = 0; i < run->nskipped && shown < most; i++) {
            const fp4_tensor_skip *x = &run->skipped[i];
            if (skip_class(x->reason) != pass) continue;
            char *nm = fp4_text_escape(x->info.name, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
            /* "kept in high precision by recipe: embedding (*embed*)" shows as [embedding
             * (*embed*)], "... by config.json ignore: lm_head" as [config.json ignore:
             * lm_head] */
            char fmt[160] = "";
            if (pass == 1) {
                const char *by = x->reason + sizeof kept_pfx - 1;
                if (!strncmp(by, "recipe: ", 8)) by += 8;
                snprintf(fmt, sizeof fmt, "%s", by);
            }
            char *why = fp4_text_escape(fmt[0] ? fmt : x->reason,
                                        FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
            fprintf(out, "%s %s [%s]", shown ? "," : "", nm ? nm : x->info.name,
                    why ? why : x->reason);
            free(nm);
            free(why);
            shown++;
        }
        if (pass == 1)
            fprintf(out, "%s; --all-weights analyses them\n", count > most ? ", ..." : "");
        else
            fprintf(out, "%s; --all-tensors or an exact name analyses them\n",
                    count > 4 ? ", ..." : "");
    }
    for (int i = 0; i < run->nerrors; i++) {
        char *m = fp4_text_escape(run->errors[i].message, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
        fprintf(out, "error: %s\n", m ? m : run->errors[i].message);
        free(m);
    }
    if (!quant_only) verdict_summary(out, run);
    record_layout = false;
    free(rec_last);
    rec_last = NULL;
}

void fp4_report_table(FILE *out, const char *command, const fp4_run *run)
{
    table_cols = fp4_term_width(out);
    if (table_cols <= 0) {
        table_text(out, command, run);
        return;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) {
        table_text(out, command, run);
        table_cols = 0;
        return;
    }
    table_text(mem, command, run);
    if (fclose(mem) == 0 && buf) fp4_term_write(out, buf, table_cols);
    free(buf);
    table_cols = 0;
}

bool fp4_report_terminal_first(const fp4_run_config *o)
{
    return !o->output && !o->json && o->verbosity >= 0 && isatty(STDOUT_FILENO);
}

bool fp4_report_quiet_terminal(const char *output, bool json, int verbosity)
{
    return !output && !json && verbosity < 0 && isatty(STDOUT_FILENO);
}

FILE *fp4_report_table_stream(const char *output, int verbosity)
{
    if (verbosity < 0) return NULL;
    if (output && strcmp(output, "-") && isatty(STDOUT_FILENO)) return stdout;
    return verbosity > 0 ? stderr : NULL;
}

void fp4_report_quiet_note(void)
{
    fputs("fp4diag: -q on a terminal: no report written (-o FILE or --json writes it)\n", stderr);
}

fp4_status fp4_report_terminal_note(void)
{
    fputs("(the JSON report: -o FILE, or --json for standard output)\n", stdout);
    if (fflush(stdout) != 0 || ferror(stdout))
        return fp4_error(FP4_ERR_INPUT, "stdout: write error: %s", strerror(errno));
    return FP4_OK;
}

fp4_status fp4_report_analysis(const char *command, int argc, char **argv, const fp4_run *run)
{
    if (fp4_report_terminal_first(run->config)) {
        fp4_report_table(stdout, command, run);
        return fp4_report_terminal_note();
    }
    if (fp4_report_quiet_terminal(run->config->output, run->config->json, run->config->verbosity)) {
        fp4_report_quiet_note();
        return FP4_OK;
    }
    char *text = fp4_report_analysis_json(command, argc, argv, run);
    if (!text) return fp4_error(FP4_ERR_INTERNAL, "out of memory building the report");
    fp4_status st = fp4_output_write(run->config->output, text, strlen(text));
    free(text);
    if (st != FP4_OK) return st;
    FILE *table = fp4_report_table_stream(run->config->output, run->config->verbosity);
    if (table) fp4_report_table(table, command, run);
    return FP4_OK;
}

/* ---------------------------------------------------------------- grid */

static cJSON *build_grid(int argc, char **argv, const fp4_format *formats, int nformats)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    add_header(root, "grid", argc, argv);
    cJSON *cfg = cJSON_AddObjectToObject(root, "config");
    cJSON *fl = cfg ? cJSON_AddArrayToObject(cfg, "formats") : NULL;
    cJSON *gr = cJSON_AddArrayToObject(root, "grids");
    for (int i = 0; gr && i < nformats; i++) {
        char name[32];
        format_name(formats[i], name, sizeof name);
        if (fl) cJSON_AddItemToArray(fl, cJSON_CreateString(name));
        float lv[8], gmax = 0;
        int nl = fp4_format_levels(formats[i], lv, &gmax);
        fp4_level_geom g[8];
        int ng = fp4_level_geometry(formats[i], g);
        if (ng < nl) nl = ng;
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        cJSON_AddItemToArray(gr, o);
        cJSON_AddStringToObject(o, "format", name);
        num(o, "g_max", gmax);
        const fp4_format_traits *tr = fp4_format_traits_of(formats[i].id);
        if (tr) cJSON_AddNumberToObject(o, "emax", tr->emax);
        cJSON_AddNumberToObject(o, "nlevels", nl);
        cJSON *la = cJSON_AddArrayToObject(o, "levels");
        double uniform = 0, interior_max = 0;
        for (int k = 0; la && k < nl; k++) {
            cJSON *l = cJSON_CreateObject();
            if (!l) break;
            cJSON_AddItemToArray(la, l);
            cJSON_AddNumberToObject(l, "code", k);
            num(l, "q", g[k].q);
            num(l, "left", g[k].left);
            num(l, "right", g[k].right);
            /* RTNE: the bin of q_k is [q_k − ℓ_k, q_k + r_k]; a midpoint goes to the even code,
             * so both edges are closed for even k and open for odd k (SPEC §2). */
            num(l, "bin_lo", g[k].q - g[k].left);
            num(l, "bin_hi", g[k].q + g[k].right);
            cJSON_AddBoolToObject(l, "bin_lo_closed", k % 2 == 0);
            cJSON_AddBoolToObject(l, "bin_hi_closed", k % 2 == 0 || k == nl - 1);
            num(l, "bin_width", g[k].left + g[k].right);
            num(l, "analytic_bias", g[k].analytic_bias);
            num(l, "analytic_bias_relative", g[k].q > 0 ? g[k].analytic_bias / g[k].q : 0.0);
            uniform += (g[k].left * g[k].left - g[k].right * g[k].right) / 2;
            if (k > 0 && k < nl - 1 && fabs(g[k].analytic_bias) > fabs(interior_max))
                interior_max = g[k].analytic_bias;
        }
        /* E[ρ(t) − t] for t uniform on [0, g_max]: Σ (ℓ² − r²)/2 / g_max, exactly 0 (SPEC §5). */
        num(o, "uniform_mean_error", gmax > 0 ? uniform / gmax : NAN);
        num(o, "max_interior_bias", interior_max);
    }
    cJSON_AddItemToObject(root, "provenance", fp4_report_provenance_json(NULL, 0)); /* no input */
    return root;
}

char *fp4_report_grid_json(int argc, char **argv, const fp4_format *formats, int nformats)
{
    cJSON *root = build_grid(argc, argv, formats, nformats);
    if (!root) return NULL;
    char *t = to_text(root);
    cJSON_Delete(root);
    return t;
}

static void grid_table(FILE *out, const fp4_format *formats, int nformats)
{
    /* under a width of less than the 61 columns of a row: without the left and right
     * distances, which the bin holds (SPEC 9), 38 columns */
    const int cols = fp4_term_width(out);
    const bool narrow = cols > 0 && cols < 61;
    for (int i = 0; i < nformats; i++) {
        char name[32];
        format_name(formats[i], name, sizeof name);
        fp4_level_geom g[8];
        int nl = fp4_level_geometry(formats[i], g);
        if (narrow)
            fprintf(out, "%s\n  %4s %6s %15s %8s\n", name, "code", "q", "bin", "bias");
        else
            fprintf(out, "%s\n  %4s %8s %8s %8s %17s %9s\n", name, "code", "q", "left", "right",
                    "bin", "bias");
        for (int k = 0; k < nl && k < 8; k++) {
            const char lo = k % 2 == 0 ? '[' : '(', hi = k % 2 == 0 || k == nl - 1 ? ']' : ')';
            if (narrow)
                fprintf(out, "  %4d %6.4g %c%6.4g,%6.4g%c %+8.4g\n", k, g[k].q, lo,
                        g[k].q - g[k].left, g[k].q + g[k].right, hi, g[k].analytic_bias);
            else
                fprintf(out, "  %4d %8.4g %8.4g %8.4g %c%7.4g,%7.4g%c %+9.4g\n", k, g[k].q,
                        g[k].left, g[k].right, lo, g[k].q - g[k].left, g[k].q + g[k].right, hi,
                        g[k].analytic_bias);
        }
    }
    if (narrow) fprintf(out, "(the left and right distances are in\n  the bins and the JSON)\n");
}

fp4_status fp4_report_grid(int argc, char **argv, const fp4_format *formats, int nformats,
                           const char *output, bool json, int verbosity)
{
    if (!output && !json && isatty(STDOUT_FILENO)) { /* terminal first, as the analyses */
        if (verbosity < 0) {
            fp4_report_quiet_note();
            return FP4_OK;
        }
        grid_table(stdout, formats, nformats);
        return fp4_report_terminal_note();
    }
    char *text = fp4_report_grid_json(argc, argv, formats, nformats);
    if (!text) return fp4_error(FP4_ERR_INTERNAL, "out of memory building the report");
    fp4_status st = fp4_output_write(output, text, strlen(text));
    free(text);
    FILE *table = st == FP4_OK ? fp4_report_table_stream(output, verbosity) : NULL;
    if (table) grid_table(table, formats, nformats);
    return st;
}
