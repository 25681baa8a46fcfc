/* compare.c — reads two fp4diag reports (cJSON, reading only; report.c owns writing) and
 * matches their results by key, differencing SQNR, alpha (gemm: eta) and bucket ratios. */
#include "report/compare.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "io/st_parse.h" /* fp4_json_doc_check */
#include "report/report.h" /* fp4_json_same */

#define FP4_REPORT_SCHEMA "fp4diag.report/1"
#define FP4_AUDIT_SCHEMA "fp4diag.audit/1"
/* Room for rounding in the differences themselves: a difference equal to a threshold passes. */
#define CMP_EPS 1e-9

fp4_compare_opts fp4_compare_opts_default(void)
{
    fp4_compare_opts o = {.max_sqnr_drop_db = 0.05, .max_alpha_change = 0.001,
                          .max_bucket_drop = 0.01};
    return o;
}

fp4_status fp4_compare_ignore_parse(const char *list, unsigned *bits)
{
    static const struct {
        const char *name;
        unsigned bit;
    } keys[] = {{"format", FP4_CMP_KEY_FORMAT}, {"formats", FP4_CMP_KEY_FORMAT},
                {"scale", FP4_CMP_KEY_SCALE},   {"block", FP4_CMP_KEY_BLOCK},
                {"rht", FP4_CMP_KEY_RHT},       {"rounding", FP4_CMP_KEY_ROUNDING},
                {"recipe", FP4_CMP_KEY_RECIPE}};
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        unsigned bit = 0;
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
            if (strlen(keys[k].name) == len && !strncmp(p, keys[k].name, len)) bit = keys[k].bit;
        if (!bit)
            return fp4_error(FP4_ERR_USAGE, "--ignore-key: '%.*s' is not a key field (format, "
                                            "scale, block, rht, rounding, recipe)",
                             (int)len, p);
        *bits |= bit;
        if (!p[len]) break;
        p += len + 1;
    }
    return FP4_OK;
}

void fp4_compare_keys_list(unsigned bits, char *buf, size_t n)
{
    static const char *const names[] = {"format", "scale", "block", "rht", "rounding", "recipe"};
    size_t len = 0;
    if (n) buf[0] = '\0';
    for (unsigned k = 0; k < sizeof names / sizeof *names; k++) {
        if (!(bits & (1u << k)) || len >= n) continue;
        int w = snprintf(buf + len, n - len, "%s%s", len ? "," : "", names[k]);
        if (w > 0) len += (size_t)w;
    }
}

/* One result read from a report. */
typedef struct entry {
    char *name, *variant;
    char *blob; /* grid reports: the format's entry, printed unformatted */
    double sqnr, alpha, b15, b8;
    char status[16];
    size_t order;
    int used;
} entry;

typedef struct entries {
    entry *v;
    size_t n, cap;
} entries;

static void entries_free(entries *e)
{
    for (size_t i = 0; i < e->n; i++) {
        free(e->v[i].name);
        free(e->v[i].variant);
        free(e->v[i].blob);
    }
    free(e->v);
    e->v = NULL;
    e->n = e->cap = 0;
}

static fp4_status entries_push(entries *e, const char *name, const char *variant, entry **out)
{
    if (e->n == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 64;
        entry *v = realloc(e->v, cap * sizeof *v);
        if (!v) return fp4_error(FP4_ERR_INTERNAL, "compare: out of memory");
        e->v = v;
        e->cap = cap;
    }
    entry *x = &e->v[e->n];
    memset(x, 0, sizeof *x);
    x->name = strdup(name);
    x->variant = strdup(variant);
    if (!x->name || !x->variant) {
        free(x->name);
        free(x->variant);
        return fp4_error(FP4_ERR_INTERNAL, "compare: out of memory");
    }
    x->sqnr = x->alpha = x->b15 = x->b8 = NAN;
    x->order = e->n++;
    *out = x;
    return FP4_OK;
}

/* A number member, or NAN when absent or null; FP4_ERR_INPUT when of another type. */
static fp4_status get_num(const cJSON *obj, const char *key, double *v, const char *label,
                          const char *where)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    *v = NAN;
    if (!it || cJSON_IsNull(it)) return FP4_OK;
    if (!cJSON_IsNumber(it))
        return fp4_error(FP4_ERR_INPUT, "%s: %s: \"%s\" is not a number", label, where, key);
    /* JSON has no infinity: a number past the double range (1e400) is no value a run wrote */
    if (!isfinite(it->valuedouble))
        return fp4_error(FP4_ERR_INPUT, "%s: %s: \"%s\" is out of the range of a double (no "
                                        "run writes it)",
                         label, where, key);
    *v = it->valuedouble;
    return FP4_OK;
}

static fp4_status get_str(const cJSON *obj, const char *key, const char **s, const char *label,
                          const char *where)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsString(it) || !it->valuestring)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: missing string \"%s\"", label, where, key);
    *s = it->valuestring;
    return FP4_OK;
}

/* sqnr_db and sqnr_status of one result or path; a number without a status is "ok", a null
 * without one is "null" (a writer bug, but still comparable). A status is one a run writes,
 * and sqnr_db a number exactly when it is "ok" (null otherwise): a report whose SQNRs were
 * lost (null beside "ok") is refused, never compared as merely "changed". */
static fp4_status read_sqnr(const cJSON *obj, entry *e, const char *label, const char *where)
{
    FP4_TRY(get_num(obj, "sqnr_db", &e->sqnr, label, where));
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(obj, "sqnr_status");
    if (st) {
        static const char *const known[] = {"ok", "exact", "zero_signal", "nonfinite"};
        bool is_known = false;
        for (size_t k = 0; cJSON_IsString(st) && k < sizeof known / sizeof *known; k++)
            is_known |= !strcmp(st->valuestring, known[k]);
        if (!is_known)
            return fp4_error(FP4_ERR_INPUT, "%s: %s: \"sqnr_status\" is not one of ok, exact, "
                                            "zero_signal, nonfinite",
                             label, where);
        const bool ok = !strcmp(st->valuestring, "ok");
        if (ok == isnan(e->sqnr))
            return fp4_error(FP4_ERR_INPUT, "%s: %s: \"sqnr_db\" is %s beside sqnr_status "
                                            "\"%s\" (a run writes a number exactly for \"ok\")",
                             label, where, ok ? "null or absent" : "a number", st->valuestring);
    }
    const char *s = cJSON_IsString(st) && st->valuestring ? st->valuestring
                    : cJSON_GetObjectItemCaseSensitive(obj, "sqnr_db") == NULL ? ""
                    : isnan(e->sqnr)                                           ? "null"
                                                                               : "ok";
    snprintf(e->status, sizeof e->status, "%s", s);
    return FP4_OK;
}

/* "format/scale/block/rht=off|N:signs/rounding" from the key members of a result. */
static fp4_status result_variant(const cJSON *r, unsigned ignore, char *buf, size_t n,
                                 const char *label, const char *where)
{
    const char *format = NULL, *scale = NULL, *rounding = NULL;
    FP4_TRY(get_str(r, "format", &format, label, where));
    FP4_TRY(get_str(r, "scale", &scale, label, where));
    FP4_TRY(get_str(r, "rounding", &rounding, label, where));
    const cJSON *block = cJSON_GetObjectItemCaseSensitive(r, "block");
    if (!cJSON_IsNumber(block))
        return fp4_error(FP4_ERR_INPUT, "%s: %s: missing number \"block\"", label, where);
    const cJSON *rht = cJSON_GetObjectItemCaseSensitive(r, "rht");
    char rbuf[96];
    if (cJSON_IsFalse(rht)) {
        snprintf(rbuf, sizeof rbuf, "off");
    } else if (cJSON_IsObject(rht)) {
        const cJSON *size = cJSON_GetObjectItemCaseSensitive(rht, "size");
        const cJSON *signs = cJSON_GetObjectItemCaseSensitive(rht, "signs");
        if (!cJSON_IsNumber(size) || !cJSON_IsString(signs))
            return fp4_error(FP4_ERR_INPUT, "%s: %s: \"rht\" needs size and signs", label,
                             where);
        snprintf(rbuf, sizeof rbuf, "%d:%s", size->valueint, signs->valuestring);
    } else {
        return fp4_error(FP4_ERR_INPUT, "%s: %s: \"rht\" is neither false nor an object", label,
                         where);
    }
    char bbuf[32];
    snprintf(bbuf, sizeof bbuf, "%.0f", block->valuedouble);
    int k = snprintf(buf, n, "%s/%s/%s/rht=%s/%s", ignore & FP4_CMP_KEY_FORMAT ? "*" : format,
                     ignore & FP4_CMP_KEY_SCALE ? "*" : scale,
                     ignore & FP4_CMP_KEY_BLOCK ? "*" : bbuf,
                     ignore & FP4_CMP_KEY_RHT ? "*" : rbuf,
                     ignore & FP4_CMP_KEY_ROUNDING ? "*" : rounding);
    if (k < 0 || (size_t)k >= n)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: key members too long", label, where);
    return FP4_OK;
}

/* A result's "counts" (when present): an object of whole counts in [0, 2^53] (every count a
 * run makes is exact in a JSON number), "elements" among them. */
static fp4_status check_counts(const cJSON *counts, const char *label, const char *where)
{
    if (!counts) return FP4_OK;
    if (!cJSON_IsObject(counts))
        return fp4_error(FP4_ERR_INPUT, "%s: %s: \"counts\" is not an object", label, where);
    const cJSON *el = cJSON_GetObjectItemCaseSensitive(counts, "elements"), *c;
    if (!el)
        return fp4_error(FP4_ERR_INPUT, "%s: %s: \"counts\" without \"elements\"", label,
                         where);
    cJSON_ArrayForEach(c, counts)
    {
        if (!cJSON_IsNumber(c) || !(c->valuedouble >= 0) ||
            !(c->valuedouble <= 9007199254740992.0) || c->valuedouble != floor(c->valuedouble))
            return fp4_error(FP4_ERR_INPUT, "%s: %s: counts.%s is not a count (a whole number "
                                            "from 0 to 2^53)",
                             label, where, c->string ? c->string : "?");
    }
    return FP4_OK;
}

static fp4_status read_results(const cJSON *results, const char *name, unsigned ignore,
                               entries *out, const char *label, const char *where)
{
    if (!cJSON_IsArray(results))
        return fp4_error(FP4_ERR_INPUT, "%s: %s: \"results\" is not an array", label, where);
    int j = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, results)
    {
        char w[160], variant[256];
        snprintf(w, sizeof w, "%s.results[%d]", where, j++);
        if (!cJSON_IsObject(r))
            return fp4_error(FP4_ERR_INPUT, "%s: %s: not an object", label, w);
        FP4_TRY(result_variant(r, ignore, variant, sizeof variant, label, w));
        entry *e;
        FP4_TRY(entries_push(out, name, variant, &e));
        FP4_TRY(read_sqnr(r, e, label, w));
        FP4_TRY(get_num(r, "alpha", &e->alpha, label, w));
        FP4_TRY(get_num(r, "bucket_ratio_15", &e->b15, label, w));
        FP4_TRY(get_num(r, "bucket_ratio_8", &e->b8, label, w));
        FP4_TRY(check_counts(cJSON_GetObjectItemCaseSensitive(r, "counts"), label, w));
    }
    return FP4_OK;
}

static fp4_status read_tensors(const cJSON *doc, unsigned ignore, entries *out,
                               const char *label)
{
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(doc, "tensors");
    if (!cJSON_IsArray(tensors))
        return fp4_error(FP4_ERR_INPUT, "%s: no \"tensors\" array", label);
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tensors)
    {
        char w[64];
        snprintf(w, sizeof w, "tensors[%d]", i++);
        const char *name = NULL;
        FP4_TRY(get_str(t, "name", &name, label, w));
        FP4_TRY(read_results(cJSON_GetObjectItemCaseSensitive(t, "results"), name, ignore, out,
                             label, w));
    }
    const cJSON *summary = cJSON_GetObjectItemCaseSensitive(doc, "summary");
    const cJSON *sres = cJSON_GetObjectItemCaseSensitive(summary, "results");
    if (sres) FP4_TRY(read_results(sres, "(summary)", ignore, out, label, "summary"));
    return FP4_OK;
}

/* An audit report (SPEC §11): per tensor, then "(pooled)", two rows: "export" (the checkpoint
 * as stored against its source) and "requant" (fp4diag's round-to-nearest of the source), each
 * with sqnr_db, sqnr_status, alpha and the bucket ratios of its codes. */
static fp4_status read_audit_pair(const cJSON *obj, const char *name, entries *out,
                                  const char *label, const char *where)
{
    static const char *const sides[] = {"export", "requant"};
    for (int k = 0; k < 2; k++) {
        char w[160];
        snprintf(w, sizeof w, "%s.%s", where, sides[k]);
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, sides[k]);
        if (!cJSON_IsObject(m))
            return fp4_error(FP4_ERR_INPUT, "%s: %s: not an object", label, w);
        entry *e;
        FP4_TRY(entries_push(out, name, sides[k], &e));
        FP4_TRY(read_sqnr(m, e, label, w));
        FP4_TRY(get_num(m, "alpha", &e->alpha, label, w));
        /* the bucket use of its codes (absent from audits of older versions: not compared) */
        FP4_TRY(get_num(m, "bucket_ratio_15", &e->b15, label, w));
        FP4_TRY(get_num(m, "bucket_ratio_8", &e->b8, label, w));
    }
    return FP4_OK;
}

static fp4_status read_audit(const cJSON *doc, entries *out, const char *label)
{
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(doc, "tensors");
    if (!cJSON_IsArray(tensors))
        return fp4_error(FP4_ERR_INPUT, "%s: audit report without a \"tensors\" array", label);
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tensors)
    {
        char w[64];
        snprintf(w, sizeof w, "tensors[%d]", i++);
        const char *name = NULL;
        FP4_TRY(get_str(t, "name", &name, label, w));
        FP4_TRY(read_audit_pair(t, name, out, label, w));
    }
    const cJSON *pooled = cJSON_GetObjectItemCaseSensitive(doc, "pooled");
    if (pooled) FP4_TRY(read_audit_pair(pooled, "(pooled)", out, label, "pooled"));
    return FP4_OK;
}

static fp4_status read_layers(const cJSON *doc, unsigned ignore, entries *out,
                              const char *label)
{
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(doc, "layers");
    if (!cJSON_IsArray(layers))
        return fp4_error(FP4_ERR_INPUT, "%s: gemm report without a \"layers\" array", label);
    int i = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, layers)
    {
        char w[64];
        snprintf(w, sizeof w, "layers[%d]", i++);
        const char *name = NULL, *recipe = NULL;
        FP4_TRY(get_str(l, "name", &name, label, w));
        FP4_TRY(get_str(l, "recipe", &recipe, label, w));
        const cJSON *paths = cJSON_GetObjectItemCaseSensitive(l, "paths");
        if (!cJSON_IsArray(paths))
            return fp4_error(FP4_ERR_INPUT, "%s: %s: \"paths\" is not an array", label, w);
        int j = 0;
        const cJSON *p;
        cJSON_ArrayForEach(p, paths)
        {
            char wp[96], variant[160];
            snprintf(wp, sizeof wp, "%s.paths[%d]", w, j++);
            const char *path = NULL;
            FP4_TRY(get_str(p, "path", &path, label, wp));
            snprintf(variant, sizeof variant, "%s/%s",
                     ignore & FP4_CMP_KEY_RECIPE ? "*" : recipe, path);
            entry *e;
            FP4_TRY(entries_push(out, name, variant, &e));
            FP4_TRY(read_sqnr(p, e, label, wp));
            FP4_TRY(get_num(p, "eta", &e->alpha, label, wp));
        }
    }
    return FP4_OK;
}

static fp4_status read_grids(const cJSON *doc, entries *out, const char *label)
{
    const cJSON *grids = cJSON_GetObjectItemCaseSensitive(doc, "grids");
    if (!cJSON_IsArray(grids))
        return fp4_error(FP4_ERR_INPUT, "%s: grid report without a \"grids\" array", label);
    int i = 0;
    const cJSON *g;
    cJSON_ArrayForEach(g, grids)
    {
        char w[64];
        snprintf(w, sizeof w, "grids[%d]", i++);
        const char *format = NULL;
        FP4_TRY(get_str(g, "format", &format, label, w));
        entry *e;
        FP4_TRY(entries_push(out, format, "grid", &e));
        e->blob = cJSON_PrintUnformatted(g);
        if (!e->blob) return fp4_error(FP4_ERR_INTERNAL, "compare: out of memory");
    }
    return FP4_OK;
}

static int entry_cmp(const void *a, const void *b)
{
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->variant, y->variant);
}

/* Pointers to the entries sorted by key; FP4_ERR_INPUT when a key repeats. */
static fp4_status entries_index(entries *e, entry ***idx, const char *label)
{
    *idx = malloc((e->n ? e->n : 1) * sizeof **idx);
    if (!*idx) return fp4_error(FP4_ERR_INTERNAL, "compare: out of memory");
    for (size_t i = 0; i < e->n; i++) (*idx)[i] = &e->v[i];
    qsort(*idx, e->n, sizeof **idx, entry_cmp);
    for (size_t i = 1; i < e->n; i++)
        if (entry_cmp(&(*idx)[i - 1], &(*idx)[i]) == 0)
            return fp4_error(FP4_ERR_INPUT, "%s: result %s %s appears twice", label,
                             (*idx)[i]->name, (*idx)[i]->variant);
    return FP4_OK;
}

/* name + '\n' + variant with the key fields in `bits` replaced by '*' (the variant's fields:
 * analysis format/scale/block/rht=../rounding, gemm recipe/path: only its first is a key);
 * NULL when out of memory. */
static char *masked_key(const entry *x, unsigned bits, bool gemm)
{
    size_t nn = strlen(x->name), nv = strlen(x->variant);
    char *k = malloc(nn + nv + 2);
    if (!k) return NULL;
    memcpy(k, x->name, nn);
    k[nn] = '\n';
    char *o = k + nn + 1;
    const char *p = x->variant;
    for (int f = 0; *p || f == 0; f++) {
        size_t len = gemm && f > 0 ? strlen(p) : strcspn(p, "/");
        unsigned bit = gemm ? (f == 0 ? FP4_CMP_KEY_RECIPE : 0) : f < 5 ? 1u << f : 0;
        if (f) *o++ = '/';
        if (bits & bit) *o++ = '*';
        else {
            memcpy(o, p, len);
            o += len;
        }
        p += len;
        if (*p == '/') p++;
        else break;
    }
    *o = '\0';
    return k;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* How many results of b pair with one of a when the key fields in `bits` are left out; -1
 * when out of memory. */
static long pairs_without(const entries *a, const entries *b, unsigned bits, bool gemm)
{
    char **ka = calloc(a->n ? a->n : 1, sizeof *ka);
    long hits = ka ? 0 : -1;
    for (size_t i = 0; ka && i < a->n && hits >= 0; i++)
        if (!(ka[i] = masked_key(&a->v[i], bits, gemm))) hits = -1;
    if (hits >= 0) qsort(ka, a->n, sizeof *ka, str_cmp);
    for (size_t i = 0; hits >= 0 && i < b->n; i++) {
        char *k = masked_key(&b->v[i], bits, gemm);
        if (!k) hits = -1;
        else if (bsearch(&k, ka, a->n, sizeof *ka, str_cmp)) hits++;
        free(k);
    }
    for (size_t i = 0; ka && i < a->n; i++) free(ka[i]);
    free(ka);
    return hits;
}

/* The fewest key fields, `ignored` included, whose leaving out pairs some results (the most
 * pairs among sets of that size); 0 when none does. */
static unsigned pair_keys(const entries *a, const entries *b, unsigned ignored, bool gemm)
{
    const unsigned all = gemm ? FP4_CMP_KEY_RECIPE
                              : FP4_CMP_KEY_FORMAT | FP4_CMP_KEY_SCALE | FP4_CMP_KEY_BLOCK |
                                    FP4_CMP_KEY_RHT | FP4_CMP_KEY_ROUNDING;
    for (int size = 1; size <= 6; size++) {
        unsigned best = 0;
        long most = 0;
        for (unsigned s = 1; s <= all; s++) {
            if ((s & ~all) || __builtin_popcount(s & ~ignored) != size) continue;
            long h = pairs_without(a, b, s | ignored, gemm);
            if (h > most) {
                most = h;
                best = s | ignored;
            }
        }
        if (best) return best;
    }
    return 0;
}

/* The key field a config member stands for (0: not a key field). */
static unsigned key_bit(const char *name)
{
    return !strcmp(name, "formats")    ? FP4_CMP_KEY_FORMAT
           : !strcmp(name, "scale")    ? FP4_CMP_KEY_SCALE
           : !strcmp(name, "scales")   ? FP4_CMP_KEY_SCALE
           : !strcmp(name, "block")    ? FP4_CMP_KEY_BLOCK
           : !strcmp(name, "rht")      ? FP4_CMP_KEY_RHT
           : !strcmp(name, "rht_size") ? FP4_CMP_KEY_RHT
           : !strcmp(name, "rht_signs") ? FP4_CMP_KEY_RHT
           : !strcmp(name, "rounding") ? FP4_CMP_KEY_ROUNDING
           : !strcmp(name, "recipe")   ? FP4_CMP_KEY_RECIPE
                                       : 0;
}

/* Every config member that differs (key fields included; not device, threads, mem_limit,
 * which do not change numbers); *keys collects the FP4_CMP_KEY_* bits among them. */
static void config_diff(const cJSON *a, const cJSON *b, char *buf, size_t n, size_t len,
                        unsigned *keys)
{
    static const char *const skip[] = {"device", "threads", "mem_limit"};
    if (!cJSON_IsObject(a) || !cJSON_IsObject(b)) return;
    for (int pass = 0; pass < 2; pass++) {
        const cJSON *x = pass ? b : a, *y = pass ? a : b, *it;
        cJSON_ArrayForEach(it, x)
        {
            int skipped = 0;
            for (size_t k = 0; k < sizeof skip / sizeof *skip; k++)
                skipped |= it->string && !strcmp(it->string, skip[k]);
            if (skipped || !it->string) continue;
            const cJSON *other = cJSON_GetObjectItemCaseSensitive(y, it->string);
            if (pass == 1 && other) continue; /* pairs were handled in pass 0 */
            /* exactly, members by name (a report has no key twice: parse_doc); not
             * cJSON_Compare: a config's block or seed spelled 1e999 hid that they differ */
            if (other && fp4_json_same(it, other, true)) continue;
            *keys |= key_bit(it->string);
            char *sx = cJSON_PrintUnformatted(it);
            char *sy = other ? cJSON_PrintUnformatted(other) : NULL;
            const char *va = pass ? "absent" : (sx ? sx : "?");
            const char *vb = pass ? (sx ? sx : "?") : (sy ? sy : "absent");
            if (len < n) {
                int k = snprintf(buf + len, n - len, "%s%s: %s vs %s", len ? "; " : "",
                                 it->string, va, vb);
                if (k > 0) len += (size_t)k;
            }
            free(sx);
            free(sy);
        }
    }
}

static fp4_status parse_doc(const char *text, const char *label, cJSON **doc, const char **cmd)
{
    const char *end = NULL;
    *doc = cJSON_ParseWithOpts(text, &end, 1);
    if (!*doc) {
        long off = end ? (long)(end - text) : -1L;
        return fp4_error(FP4_ERR_INPUT, "%s: not JSON (parse error near byte %ld)", label, off);
    }
    if (!cJSON_IsObject(*doc))
        return fp4_error(FP4_ERR_INPUT, "%s: not a report (top level is not an object)", label);
    /* no key twice (cJSON finds the first, another reader the last), no NUL in a string */
    FP4_TRY(fp4_json_doc_check(label, "report", text, strlen(text), *doc));
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(*doc, "schema");
    bool audit = cJSON_IsString(schema) && !strcmp(schema->valuestring, FP4_AUDIT_SCHEMA);
    if (!audit && (!cJSON_IsString(schema) || strcmp(schema->valuestring, FP4_REPORT_SCHEMA) != 0))
        return fp4_error(FP4_ERR_INPUT, "%s: schema is %s%s%s, expected \"%s\" or \"%s\"",
                         label, cJSON_IsString(schema) ? "\"" : "",
                         cJSON_IsString(schema) ? schema->valuestring : "missing",
                         cJSON_IsString(schema) ? "\"" : "", FP4_REPORT_SCHEMA,
                         FP4_AUDIT_SCHEMA);
    FP4_TRY(get_str(*doc, "command", cmd, label, "top level"));
    /* the command the run was: argv ["fp4diag", COMMAND, ...] as every writer puts it (a
     * report whose "command" was edited would be compared as another kind) */
    const cJSON *argv = cJSON_GetObjectItemCaseSensitive(*doc, "argv");
    if (argv) {
        const cJSON *a0 = cJSON_GetArrayItem(argv, 0), *a1 = cJSON_GetArrayItem(argv, 1);
        if (!cJSON_IsArray(argv) || !cJSON_IsString(a0) || !cJSON_IsString(a1))
            return fp4_error(FP4_ERR_INPUT, "%s: \"argv\" is not the command line of a run "
                                            "(an array of strings, the command second)",
                             label);
        if (strcmp(a1->valuestring, *cmd))
            return fp4_error(FP4_ERR_INPUT, "%s: \"command\" is \"%s\" but the run was '%s' "
                                            "(argv): the report is not what that run wrote",
                             label, *cmd, a1->valuestring);
    }
    if (audit != !strcmp(*cmd, "audit"))
        return fp4_error(FP4_ERR_INPUT, "%s: a '%s' report with schema \"%s\"", label, *cmd,
                         schema->valuestring);
    return FP4_OK;
}

static int num_differs(double a, double b)
{
    if (isnan(a) || isnan(b)) return isnan(a) != isnan(b);
    return a != b;
}

/* "input: a.h5 vs b.h5" when the input files differ; returns the length written. */
static size_t input_diff(const cJSON *a, const cJSON *b, char *buf, size_t n)
{
    buf[0] = '\0';
    const cJSON *ia = cJSON_GetObjectItemCaseSensitive(a, "input");
    const cJSON *ib = cJSON_GetObjectItemCaseSensitive(b, "input");
    if (cJSON_GetObjectItemCaseSensitive(ia, "quantized")) { /* an audit: both checkpoints */
        static const char *const keys[] = {"source", "quantized", "declared"};
        size_t len = 0;
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
            const cJSON *x = cJSON_GetObjectItemCaseSensitive(ia, keys[k]);
            const cJSON *y = cJSON_GetObjectItemCaseSensitive(ib, keys[k]);
            if (!cJSON_IsString(x) || !cJSON_IsString(y) || !strcmp(x->valuestring, y->valuestring))
                continue;
            int w = snprintf(buf + len, n - len, "%s%s: %s vs %s", len ? "; " : "", keys[k],
                             x->valuestring, y->valuestring);
            if (w < 0) break;
            len = (size_t)w < n - len ? len + (size_t)w : n - 1;
        }
        return len;
    }
    const cJSON *fa = cJSON_GetObjectItemCaseSensitive(ia, "file");
    const cJSON *fb = cJSON_GetObjectItemCaseSensitive(ib, "file");
    if (!cJSON_IsString(fa) || !cJSON_IsString(fb) || !strcmp(fa->valuestring, fb->valuestring))
        return 0;
    int k = snprintf(buf, n, "input: %s vs %s", fa->valuestring, fb->valuestring);
    return k < 0 ? 0 : (size_t)k < n ? (size_t)k : n;
}

static fp4_status row_add(fp4_compare_result *out, size_t *cap, const entry *b, const entry *n)
{
    if (out->nrows == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        fp4_compare_row *v = realloc(out->rows, c * sizeof *v);
        if (!v) return fp4_error(FP4_ERR_INTERNAL, "compare: out of memory");
        out->rows = v;
        *cap = c;
    }
    fp4_compare_row *r = &out->rows[out->nrows];
    memset(r, 0, sizeof *r);
    const entry *k = b ? b : n;
    r->name = strdup(k->name);
    r->variant = strdup(k->variant);
    if (!r->name || !r->variant) {
        free(r->name);
        free(r->variant);
        return fp4_error(FP4_ERR_INTERNAL, "compare: out of memory");
    }
    out->nrows++;
    const entry *side[2] = {b, n};
    for (int s = 0; s < 2; s++) {
        r->sqnr[s] = side[s] ? side[s]->sqnr : NAN;
        r->alpha[s] = side[s] ? side[s]->alpha : NAN;
        r->b15[s] = side[s] ? side[s]->b15 : NAN;
        r->b8[s] = side[s] ? side[s]->b8 : NAN;
        snprintf(r->status[s], sizeof r->status[s], "%s", side[s] ? side[s]->status : "");
    }
    return FP4_OK;
}

/* Judge one row with both sides present. */
static void row_judge(fp4_compare_row *r, const fp4_compare_opts *o)
{
    if (strcmp(r->status[0], r->status[1]) != 0 && strcmp(r->status[1], "exact") != 0)
        r->fails |= FP4_CMP_FAIL_STATUS; /* NEW exact is +inf dB: never a drop */
    if (!isnan(r->sqnr[0]) && !isnan(r->sqnr[1]) &&
        r->sqnr[0] - r->sqnr[1] > o->max_sqnr_drop_db + CMP_EPS)
        r->fails |= FP4_CMP_FAIL_SQNR;
    if (!isnan(r->alpha[0]) && !isnan(r->alpha[1]) &&
        fabs(1.0 - r->alpha[1]) - fabs(1.0 - r->alpha[0]) > o->max_alpha_change + CMP_EPS)
        r->fails |= FP4_CMP_FAIL_ALPHA;
    if (!isnan(r->b15[0]) && !isnan(r->b15[1]) &&
        r->b15[0] - r->b15[1] > o->max_bucket_drop + CMP_EPS)
        r->fails |= FP4_CMP_FAIL_B15;
    if (!isnan(r->b8[0]) && !isnan(r->b8[1]) && r->b8[0] - r->b8[1] > o->max_bucket_drop + CMP_EPS)
        r->fails |= FP4_CMP_FAIL_B8;
    /* A metric present on one side only (e.g. a bias report against an older writer) is a
     * difference to show, not a regression. */
    int differs = strcmp(r->status[0], r->status[1]) != 0 || num_differs(r->sqnr[0], r->sqnr[1]) ||
                  num_differs(r->alpha[0], r->alpha[1]) || num_differs(r->b15[0], r->b15[1]) ||
                  num_differs(r->b8[0], r->b8[1]);
    /* The same amounts the other way: an improvement (alpha: closer to 1). */
    const bool better =
        (!isnan(r->sqnr[0]) && !isnan(r->sqnr[1]) &&
         r->sqnr[1] - r->sqnr[0] > o->max_sqnr_drop_db + CMP_EPS) ||
        (!isnan(r->alpha[0]) && !isnan(r->alpha[1]) &&
         fabs(1.0 - r->alpha[0]) - fabs(1.0 - r->alpha[1]) > o->max_alpha_change + CMP_EPS) ||
        (!isnan(r->b15[0]) && !isnan(r->b15[1]) &&
         r->b15[1] - r->b15[0] > o->max_bucket_drop + CMP_EPS) ||
        (!isnan(r->b8[0]) && !isnan(r->b8[1]) && r->b8[1] - r->b8[0] > o->max_bucket_drop + CMP_EPS);
    r->state = r->fails  ? FP4_CMP_REGRESSED
               : better  ? FP4_CMP_IMPROVED
               : differs ? FP4_CMP_CHANGED
                         : FP4_CMP_SAME;
}

/* The overall judgement of fp4_compare_result (better, the mean SQNR differences, ...). */
static void overall(fp4_compare_result *out, const fp4_compare_opts *o)
{
    double sum = 0, psum = 0;
    /* audit reports: the export rows only (the requant rows are fp4diag's own rounding of the
     * same source, the same in both reports when only the checkpoint changed) */
    const bool audit = !strcmp(out->command, "audit");
    out->dsqnr_mean = out->dsqnr_min = out->dsqnr_max = out->dsqnr_pooled = NAN;
    for (size_t i = 0; i < out->nrows; i++) {
        const fp4_compare_row *r = &out->rows[i];
        if (r->state == FP4_CMP_ADDED || (r->fails & FP4_CMP_FAIL_MISSING)) continue;
        if (audit && (!r->variant || strcmp(r->variant, "export"))) continue;
        if (isnan(r->sqnr[0]) || isnan(r->sqnr[1])) continue;
        const double d = r->sqnr[1] - r->sqnr[0];
        if (r->name[0] == '(') {
            out->npooled++;
            psum += d;
            continue;
        }
        if (out->npaired == 0 || d < out->dsqnr_min) out->dsqnr_min = d;
        if (out->npaired == 0 || d > out->dsqnr_max) out->dsqnr_max = d;
        out->npaired++;
        sum += d;
        out->nup += d > o->max_sqnr_drop_db + CMP_EPS;
        out->ndown += -d > o->max_sqnr_drop_db + CMP_EPS;
        if (!isnan(r->alpha[0]) && !isnan(r->alpha[1])) {
            const double c = fabs(1.0 - r->alpha[0]) - fabs(1.0 - r->alpha[1]);
            out->ncloser += c > o->max_alpha_change + CMP_EPS;
            out->nfarther += -c > o->max_alpha_change + CMP_EPS;
        }
    }
    if (out->npaired) out->dsqnr_mean = sum / (double)out->npaired;
    if (out->npooled) out->dsqnr_pooled = psum / (double)out->npooled;
    const double d = out->npooled ? out->dsqnr_pooled : out->dsqnr_mean;
    out->better = isnan(d) || fabs(d) <= o->max_sqnr_drop_db + CMP_EPS ? 0 : d > 0 ? 1 : -1;
}

fp4_status fp4_compare_texts(const char *base_text, const char *base_label, const char *new_text,
                             const char *new_label, const fp4_compare_opts *opts,
                             fp4_compare_result *out)
{
    memset(out, 0, sizeof *out);
    fp4_compare_opts dflt = fp4_compare_opts_default();
    if (!opts) opts = &dflt;
    cJSON *doc[2] = {NULL, NULL};
    entries e[2] = {{0}, {0}};
    entry **idx[2] = {NULL, NULL};
    const char *label[2] = {base_label ? base_label : "BASE", new_label ? new_label : "NEW"};
    const char *text[2] = {base_text, new_text};
    const char *cmd[2] = {NULL, NULL};
    size_t cap = 0;
    fp4_status st = FP4_OK;

    for (int s = 0; s < 2 && st == FP4_OK; s++) st = parse_doc(text[s], label[s], &doc[s], &cmd[s]);
    if (st != FP4_OK) goto out;
    int gemm = strcmp(cmd[0], "gemm") == 0, grid = strcmp(cmd[0], "grid") == 0,
        audit = strcmp(cmd[0], "audit") == 0;
    if (strcmp(cmd[0], cmd[1]) != 0) {
        /* sqnr, bias, buckets and rht reports hold the same result objects */
        bool analysis = true;
        for (int s = 0; s < 2; s++)
            analysis = analysis && (!strcmp(cmd[s], "sqnr") || !strcmp(cmd[s], "bias") ||
                                    !strcmp(cmd[s], "buckets") || !strcmp(cmd[s], "rht"));
        if (!analysis) {
            st = fp4_error(FP4_ERR_INPUT,
                           "%s is a '%s' report and %s a '%s' report: not comparable (sqnr, "
                           "bias, buckets and rht compare with each other; gemm, grid and audit "
                           "only with their own kind)",
                           label[0], cmd[0], label[1], cmd[1]);
            goto out;
        }
        snprintf(out->command, sizeof out->command, "analysis");
    } else {
        snprintf(out->command, sizeof out->command, "%s", cmd[0]);
    }
    for (int s = 0; s < 2 && st == FP4_OK; s++) {
        st = gemm    ? read_layers(doc[s], opts->ignore, &e[s], label[s])
             : grid  ? read_grids(doc[s], &e[s], label[s])
             : audit ? read_audit(doc[s], &e[s], label[s])
                     : read_tensors(doc[s], opts->ignore, &e[s], label[s]);
        if (st == FP4_OK) st = entries_index(&e[s], &idx[s], label[s]);
    }
    if (st != FP4_OK) goto out;
    config_diff(cJSON_GetObjectItemCaseSensitive(doc[0], "config"),
                cJSON_GetObjectItemCaseSensitive(doc[1], "config"), out->config_diff,
                sizeof out->config_diff,
                input_diff(doc[0], doc[1], out->config_diff, sizeof out->config_diff),
                &out->key_diff);
    out->key_diff &= ~opts->ignore;

    for (size_t i = 0; i < e[0].n && st == FP4_OK; i++) {
        entry *b = &e[0].v[i], *key = b;
        entry **hit = bsearch(&key, idx[1], e[1].n, sizeof *idx[1], entry_cmp);
        entry *n = hit ? *hit : NULL;
        if (n) n->used = 1;
        st = row_add(out, &cap, b, n);
        if (st != FP4_OK) break;
        fp4_compare_row *r = &out->rows[out->nrows - 1];
        if (n) {
            row_judge(r, opts);
            if (b->blob && n->blob && strcmp(b->blob, n->blob) != 0) {
                r->fails |= FP4_CMP_FAIL_GRID;
                r->state = FP4_CMP_REGRESSED;
            }
        } else {
            r->fails = FP4_CMP_FAIL_MISSING;
            r->state = FP4_CMP_REGRESSED;
            out->nmissing++;
        }
    }
    for (size_t i = 0; i < e[1].n && st == FP4_OK; i++) {
        if (e[1].v[i].used) continue;
        st = row_add(out, &cap, NULL, &e[1].v[i]);
        if (st == FP4_OK) {
            out->rows[out->nrows - 1].state = FP4_CMP_ADDED;
            out->nadded++;
        }
    }
    if (!grid && !audit && st == FP4_OK && e[0].n && e[1].n && out->nmissing == e[0].n)
        out->pair_keys = pair_keys(&e[0], &e[1], opts->ignore, gemm);
    for (size_t i = 0; i < out->nrows; i++) {
        out->nsame += out->rows[i].state == FP4_CMP_SAME;
        out->nchanged += out->rows[i].state == FP4_CMP_CHANGED;
        out->nregressed += out->rows[i].state == FP4_CMP_REGRESSED;
        out->nimproved += out->rows[i].state == FP4_CMP_IMPROVED;
    }
    if (!grid) overall(out, opts);
out:
    for (int s = 0; s < 2; s++) {
        cJSON_Delete(doc[s]);
        entries_free(&e[s]);
        free(idx[s]);
    }
    return st;
}

/* Whether a report may come from this kind of file: a regular file or a pipe (a FIFO, a
 * socket). A device (/dev/zero, a terminal), a directory: never read. */
static bool readable_kind(mode_t m) { return S_ISREG(m) || S_ISFIFO(m) || S_ISSOCK(m); }

int64_t fp4_report_parse_cost(const char *text, size_t len)
{
    int64_t values = 0;
    bool in_scalar = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '"') { /* a string (key or value): to its closing quote */
            values++;
            in_scalar = false;
            for (i++; i < len && text[i] != '"'; i++)
                if (text[i] == '\\') i++;
        } else if (c == '{' || c == '[') {
            values++;
            in_scalar = false;
        } else if (c == ',' || c == ':' || c == '}' || c == ']' || c == ' ' || c == '\t' ||
                   c == '\n' || c == '\r') {
            in_scalar = false;
        } else if (!in_scalar) { /* a number or literal starts */
            values++;
            in_scalar = true;
        }
    }
    return values * FP4_REPORT_VALUE_BYTES + (int64_t)len;
}

fp4_status fp4_report_file_read(const char *path, char **text)
{
    int64_t budget = FP4_REPORT_PARSE_MAX;
    return fp4_report_file_read_budget(path, &budget, text);
}

fp4_status fp4_report_file_read_budget(const char *path, int64_t *budget, char **text)
{
    *text = NULL;
    int is_stdin = strcmp(path, "-") == 0;
    const char *shown = is_stdin ? "stdin" : path;
    struct stat sb;
    if (!is_stdin) {
        if (stat(path, &sb) != 0)
            return fp4_error(FP4_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
        if (!readable_kind(sb.st_mode))
            return fp4_error(FP4_ERR_INPUT, "%s: %s", path,
                             S_ISDIR(sb.st_mode) ? "is a directory"
                                                 : "not a regular file or a pipe: not read");
    }
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) return fp4_error(FP4_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *buf = NULL;
    fp4_status st = FP4_OK;
    /* Checked again on what was opened (the name may have been replaced since stat). */
    if (fstat(fileno(f), &sb) != 0 || !readable_kind(sb.st_mode)) {
        st = fp4_error(FP4_ERR_INPUT, "%s: not a regular file or a pipe: not read", shown);
        goto out;
    }
    if (S_ISREG(sb.st_mode) && sb.st_size > FP4_COMPARE_MAX_BYTES) {
        st = fp4_error(FP4_ERR_INPUT, "%s: %lld bytes: larger than any report (at most %d MiB "
                       "are read)", shown, (long long)sb.st_size, FP4_COMPARE_MAX_BYTES >> 20);
        goto out;
    }
    buf = malloc(cap);
    if (!buf) {
        st = fp4_error(FP4_ERR_INTERNAL, "compare: out of memory");
        goto out;
    }
    for (;;) {
        if (cap - len < 2) {
            /* one byte past the bound tells a file over it */
            size_t ncap = cap * 2 < (size_t)FP4_COMPARE_MAX_BYTES + 2
                              ? cap * 2 : (size_t)FP4_COMPARE_MAX_BYTES + 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                st = fp4_error(FP4_ERR_INTERNAL, "compare: out of memory");
                goto out;
            }
            buf = nb;
            cap = ncap;
        }
        size_t k = fread(buf + len, 1, cap - len - 1, f);
        if (memchr(buf + len, '\0', k)) { /* /dev/zero behind a pipe: stop at once */
            st = fp4_error(FP4_ERR_INPUT, "%s: not JSON (binary data)", shown);
            goto out;
        }
        len += k;
        if (k == 0) break;
        if (len > FP4_COMPARE_MAX_BYTES) {
            st = fp4_error(FP4_ERR_INPUT, "%s: more than %d MiB: larger than any report "
                           "(not read further)", shown, FP4_COMPARE_MAX_BYTES >> 20);
            goto out;
        }
    }
    if (ferror(f)) {
        st = fp4_error(FP4_ERR_INPUT, "%s: read error: %s", shown, strerror(errno));
        goto out;
    }
    buf[len] = '\0';
    int64_t cost = fp4_report_parse_cost(buf, len);
    if (cost > *budget) {
        st = fp4_error(FP4_ERR_INPUT, "%s: %lld JSON values in %.1f MiB would take about %lld "
                       "MiB to parse, more than the %lld MiB left of the %lld MiB that the "
                       "reports of one command may take (not parsed)",
                       shown, (long long)((cost - (int64_t)len) / FP4_REPORT_VALUE_BYTES),
                       (double)len / (1 << 20), (long long)(cost >> 20),
                       (long long)(*budget >> 20), (long long)(FP4_REPORT_PARSE_MAX >> 20));
        goto out;
    }
    *budget -= cost;
    *text = buf;
    buf = NULL;
out:
    free(buf);
    if (!is_stdin) fclose(f);
    return st;
}

fp4_status fp4_compare_files(const char *base_path, const char *new_path,
                             const fp4_compare_opts *opts, fp4_compare_result *out)
{
    memset(out, 0, sizeof *out);
    if (!strcmp(base_path, "-") && !strcmp(new_path, "-"))
        return fp4_error(FP4_ERR_INPUT, "compare: only one report can come from stdin");
    char *a = NULL, *b = NULL;
    int64_t budget = FP4_REPORT_PARSE_MAX; /* both reports together */
    fp4_status st = fp4_report_file_read_budget(base_path, &budget, &a);
    if (st == FP4_OK) st = fp4_report_file_read_budget(new_path, &budget, &b);
    if (st == FP4_OK) st = fp4_compare_texts(a, base_path, b, new_path, opts, out);
    free(a);
    free(b);
    return st;
}

void fp4_compare_result_free(fp4_compare_result *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->nrows; i++) {
        free(r->rows[i].name);
        free(r->rows[i].variant);
    }
    free(r->rows);
    memset(r, 0, sizeof *r);
}
