/* merge.c — join partial reports (--shard I/N, MPI ranks) into the one-process report: check
 * that the parts are one run's shares, pool the exact per-tensor sums in selection order, and
 * render through the same report code a single run uses. */
#include "report/merge.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "io/gguf_parse.h" /* fp4_ggml_type_name */
#include "io/quantized.h"  /* fp4_qlayout_possible */
#include "io/rawconv.h"    /* fp4_raw_name */
#include "io/st_parse.h"   /* fp4_json_doc_check */
#include "run/driver.h"
#include "run/gemm.h"
#include "num/metrics.h"
#include "report/report.h"
#include "report/audit.h"
#include "report/gemm.h"
#include "run/audit.h"
#include "run/shard.h"

typedef struct part {
    const char *name;
    cJSON *doc;
    const cJSON *shard;
    int index, count, selected;
    bool audit; /* schema fp4diag.audit/1 */
} part;

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* A JSON integer in [0, max] (a hostile part may hold 1e300 or -0.5), else -1. */
static int int_of(const cJSON *v, int max)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > (double)max ||
        v->valuedouble != floor(v->valuedouble))
        return -1;
    return (int)v->valuedouble;
}

/* What a JSON value holds, for a message: a number as written (99, 4611686018427387904, 2.5),
 * anything else as JSON ("2", null), cut to fit buf. */
static void value_text(const cJSON *v, char *buf, size_t size)
{
    if (cJSON_IsNumber(v)) {
        const double x = v->valuedouble;
        if (x == floor(x) && fabs(x) < 1e21) snprintf(buf, size, "%.0f", x);
        else {
            snprintf(buf, size, "%.15g", x);
            if (strtod(buf, NULL) != x) snprintf(buf, size, "%.17g", x);
        }
        return;
    }
    char *t = cJSON_PrintUnformatted(v);
    snprintf(buf, size, "%s", t ? t : "(a value)");
    cJSON_free(t);
}

static int get_int(const cJSON *o, const char *k, int dflt)
{
    int v = int_of(get(o, k), 1 << 30);
    return v < 0 ? dflt : v;
}

/* --------------------------------------------------------------- argv */

/* Whether token t is the long option `name` (getopt_long accepts unique prefixes of at least
 * `minlen` characters); *inline_val is set when it carries "=VALUE". */
static bool is_long(const char *t, const char *name, size_t minlen, bool *inline_val)
{
    if (strncmp(t, "--", 2) != 0) return false;
    const char *n = t + 2, *eq = strchr(n, '=');
    size_t len = eq ? (size_t)(eq - n) : strlen(n);
    if (len < minlen || len > strlen(name) || strncmp(n, name, len) != 0) return false;
    *inline_val = eq != NULL;
    return true;
}

/* The parts' argv as the one process would have had it: without --shard, with -o `output`
 * (dropped when output is NULL; appended when the parts had none). NULL-terminated copies of
 * the strings (free with argv_free); NULL when out of memory or argv is not an array of
 * strings. */
static char **argv_canonical(const cJSON *argv, const char *output, int *argc)
{
    int n = cJSON_GetArraySize(argv);
    char **out = calloc((size_t)n + 3, sizeof *out);
    if (!out) return NULL;
    int k = 0;
    bool had_output = false, ended = false;
    for (int i = 0; i < n; i++) {
        const cJSON *a = cJSON_GetArrayItem(argv, i);
        if (!cJSON_IsString(a)) goto fail;
        const char *t = a->valuestring;
        const char *next = i + 1 < n && cJSON_IsString(cJSON_GetArrayItem(argv, i + 1))
                               ? cJSON_GetArrayItem(argv, i + 1)->valuestring
                               : NULL;
        bool inl = false;
        if (!ended && i >= 2 && !strcmp(t, "--")) ended = true;
        else if (!ended && i >= 2 && is_long(t, "shard", 2, &inl)) {
            if (!inl) i++;
            continue;
        } else if (!ended && i >= 2 && (is_long(t, "output", 1, &inl) || !strncmp(t, "-o", 2))) {
            bool separate = strcmp(t, "-o") == 0 || (t[1] == '-' && !inl);
            if (separate) i++;
            had_output = true;
            if (output) {
                if (!(out[k++] = strdup("-o")) || !(out[k++] = strdup(output))) goto fail;
            }
            (void)next;
            continue;
        }
        if (!(out[k++] = strdup(t))) goto fail;
    }
    if (!had_output && output)
        if (!(out[k++] = strdup("-o")) || !(out[k++] = strdup(output))) goto fail;
    *argc = k;
    return out;
fail:
    for (int i = 0; i < k; i++) free(out[i]);
    free(out);
    return NULL;
}

static void argv_free(char **a)
{
    for (int i = 0; a && a[i]; i++) free(a[i]);
    free(a);
}

static bool argv_equal(char **a, char **b)
{
    int i = 0;
    for (; a[i] && b[i]; i++)
        if (strcmp(a[i], b[i])) return false;
    return !a[i] && !b[i];
}

/* --------------------------------------------------------------- checks */

/* One entry of a "shard.fingerprint" array: file, size (whole), xxh3 (16 hex digits). */
static bool print_entry(const cJSON *e, const char **file, double *size, const char **hash)
{
    const cJSON *f = get(e, "file"), *z = get(e, "size"), *h = get(e, "xxh3");
    if (!cJSON_IsString(f) || !cJSON_IsNumber(z) || !(z->valuedouble >= 0) ||
        z->valuedouble != floor(z->valuedouble) || !cJSON_IsString(h) ||
        strlen(h->valuestring) != 16 || strspn(h->valuestring, "0123456789abcdef") != 16)
        return false;
    *file = f->valuestring, *size = z->valuedouble, *hash = h->valuestring;
    return true;
}

/* The longest run time and the most bytes a part may say it took and read: a year, and 2^53
 * bytes (8 PiB; every such count is exact in a JSON number). */
#define TIMING_SECONDS_MAX (366.0 * 86400.0)
#define TIMING_BYTES_MAX 9007199254740992.0

/* "timing" {seconds, bytes_read} of a part: finite, non-negative, plausible (the merged report
 * takes the largest seconds and the sum of the bytes; bytes_read a whole number). */
static fp4_status timing_check(const part *p)
{
    const cJSON *tm = get(p->doc, "timing");
    const cJSON *s = get(tm, "seconds"), *b = get(tm, "bytes_read");
    if (!cJSON_IsObject(tm))
        return fp4_error(FP4_ERR_INPUT, "%s: no \"timing\" object", p->name);
    if (!cJSON_IsNumber(s) || !(s->valuedouble >= 0) || !(s->valuedouble <= TIMING_SECONDS_MAX))
        return fp4_error(FP4_ERR_INPUT, "%s: timing.seconds is not a run time (a number from 0 "
                                        "to one year)",
                         p->name);
    if (p->audit && !b) return FP4_OK; /* an audit says its seconds only */
    if (!cJSON_IsNumber(b) || !(b->valuedouble >= 0) || !(b->valuedouble <= TIMING_BYTES_MAX) ||
        b->valuedouble != floor(b->valuedouble))
        return fp4_error(FP4_ERR_INPUT, "%s: timing.bytes_read is not a byte count (a whole "
                                        "number from 0 to 2^53)",
                         p->name);
    return FP4_OK;
}

/* Two JSON values alike exactly, objects member by member in order (keys too: a run writes
 * them in one order): fp4_json_same in order. */
static bool same_json(const cJSON *a, const cJSON *b) { return fp4_json_same(a, b, false); }

/* A shape as a part writes it: an array of at most FP4_MAX_RANK whole numbers in [0, 4e18]. */
static bool shape_ok(const cJSON *a)
{
    const cJSON *d;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) > FP4_MAX_RANK) return false;
    cJSON_ArrayForEach(d, a)
        if (!cJSON_IsNumber(d) || !(d->valuedouble >= 0) || d->valuedouble > 4.0e18 ||
            d->valuedouble != floor(d->valuedouble))
            return false;
    return true;
}

/* Two shapes with the same dims in the same order, exactly (a number compared as its double:
 * cJSON_Compare would take two within a relative DBL_EPSILON as equal). */
static bool same_dims(const cJSON *a, const cJSON *b)
{
    if (!shape_ok(a) || !shape_ok(b) || cJSON_GetArraySize(a) != cJSON_GetArraySize(b))
        return false;
    for (const cJSON *x = a->child, *y = b->child; x && y; x = x->next, y = y->next)
        if (x->valuedouble != y->valuedouble) return false;
    return true;
}

/* Two parts' shard.shapes: the same shapes at every position. */
static bool same_shapes(const cJSON *a, const cJSON *b)
{
    if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) return false;
    for (const cJSON *x = a ? a->child : NULL, *y = b ? b->child : NULL; x && y;
         x = x->next, y = y->next)
        if (!same_dims(x, y)) return false;
    return true;
}

/* One entry of a gemm part's shard.inputs: an object of the operands x, w, dy the run could
 * describe, each {shape, dtype}. */
static bool inputs_entry_ok(const cJSON *o)
{
    const cJSON *t;
    if (!cJSON_IsObject(o)) return false;
    cJSON_ArrayForEach(t, o)
    {
        if (strcmp(t->string, "x") && strcmp(t->string, "w") && strcmp(t->string, "dy"))
            return false;
        if (!cJSON_IsObject(t) || cJSON_GetArraySize(t) != 2 || !shape_ok(get(t, "shape")) ||
            !cJSON_IsString(get(t, "dtype")))
            return false;
    }
    return true;
}

/* Two parts' shard.inputs (entries checked by inputs_entry_ok): the same operands, shapes and
 * dtypes at every position. */
static bool same_inputs(const cJSON *a, const cJSON *b)
{
    if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) return false;
    for (const cJSON *x = a ? a->child : NULL, *y = b ? b->child : NULL; x && y;
         x = x->next, y = y->next) {
        if (cJSON_GetArraySize(x) != cJSON_GetArraySize(y)) return false;
        for (const cJSON *u = x->child, *v = y->child; u && v; u = u->next, v = v->next)
            if (strcmp(u->string, v->string) || !same_dims(get(u, "shape"), get(v, "shape")) ||
                strcmp(get(u, "dtype")->valuestring, get(v, "dtype")->valuestring))
                return false;
    }
    return true;
}

/* The shape and dtype of every selection position a part records (SPEC §9; analysis:
 * shard.shapes and shard.dtypes, audit: shard.shapes, gemm: shard.inputs): `selected` of each,
 * well formed. FP4_ERR_INPUT naming the part (a part of an older fp4diag has none). */
static fp4_status shapes_load(const part *p, bool gemm)
{
    if (gemm) {
        const cJSON *in = get(p->shard, "inputs"), *x;
        if (!cJSON_IsArray(in) || cJSON_GetArraySize(in) != p->selected)
            return fp4_error(FP4_ERR_INPUT, "%s: no shard.inputs of the %d selected layers (a "
                                            "part of an older fp4diag: make the shares again)",
                             p->name, p->selected);
        cJSON_ArrayForEach(x, in)
            if (!inputs_entry_ok(x))
                return fp4_error(FP4_ERR_INPUT, "%s: shard.inputs holds an entry that is not a "
                                                "layer's inputs", p->name);
        return FP4_OK;
    }
    const cJSON *ss = get(p->shard, "shapes"), *ds = get(p->shard, "dtypes"), *e;
    const bool dtypes = !p->audit;
    if (!cJSON_IsArray(ss) || cJSON_GetArraySize(ss) != p->selected ||
        (dtypes && (!cJSON_IsArray(ds) || cJSON_GetArraySize(ds) != p->selected)))
        return fp4_error(FP4_ERR_INPUT, "%s: no shard.shapes%s of the %d selected tensors (a "
                                        "part of an older fp4diag: make the shares again)",
                         p->name, dtypes ? " and shard.dtypes" : "", p->selected);
    cJSON_ArrayForEach(e, ss)
        if (!shape_ok(e))
            return fp4_error(FP4_ERR_INPUT, "%s: shard.shapes holds an entry that is not a "
                                            "shape", p->name);
    const cJSON *dtypes_or_none = dtypes ? ds : NULL;
    cJSON_ArrayForEach(e, dtypes_or_none)
        if (!cJSON_IsString(e))
            return fp4_error(FP4_ERR_INPUT, "%s: shard.dtypes holds an entry that is not a "
                                            "dtype", p->name);
    return FP4_OK;
}

static fp4_status load(const char *const *texts, const char *const *names, int n, part *p)
{
    for (int i = 0; i < n; i++) {
        p[i].name = names[i];
        /* one document and nothing after it; then no key twice (cJSON finds the first,
         * another reader the last: one part, two readings), no NUL in a string */
        const char *end = NULL;
        p[i].doc = cJSON_ParseWithOpts(texts[i], &end, 1);
        if (!p[i].doc) return fp4_error(FP4_ERR_INPUT, "%s: not JSON", names[i]);
        FP4_TRY(fp4_json_doc_check(names[i], "report", texts[i], strlen(texts[i]), p[i].doc));
        const cJSON *sc = get(p[i].doc, "schema");
        p[i].audit = cJSON_IsString(sc) && !strcmp(sc->valuestring, "fp4diag.audit/1");
        if (!p[i].audit && (!cJSON_IsString(sc) || strcmp(sc->valuestring, FP4_REPORT_SCHEMA)))
            return fp4_error(FP4_ERR_INPUT, "%s: not an fp4diag report (schema %s)", names[i],
                             FP4_REPORT_SCHEMA);
        p[i].shard = get(p[i].doc, "shard");
        if (!cJSON_IsObject(p[i].shard))
            return fp4_error(FP4_ERR_INPUT,
                             "%s: not a partial report (no \"shard\"; made without --shard)",
                             names[i]);
        p[i].index = int_of(get(p[i].shard, "index"), FP4_SHARD_MAX);
        p[i].count = int_of(get(p[i].shard, "count"), FP4_SHARD_MAX);
        p[i].selected = int_of(get(p[i].shard, "selected"), 1 << 28);
        if (p[i].count < 1 || p[i].index < 0 || p[i].index >= p[i].count || p[i].selected < 0)
            return fp4_error(FP4_ERR_INPUT, "%s: malformed \"shard\" (index, count, selected)",
                             names[i]);
        const cJSON *c = get(p[i].doc, "command");
        if (!cJSON_IsString(c) || !cJSON_IsArray(get(p[i].doc, "argv")))
            return fp4_error(FP4_ERR_INPUT, "%s: no command or argv", names[i]);
        fp4_status st = timing_check(&p[i]);
        if (st != FP4_OK) return st;
        const cJSON *fa = get(p[i].shard, "fingerprint"), *e;
        if (!cJSON_IsArray(fa))
            return fp4_error(FP4_ERR_INPUT, "%s: no shard.fingerprint (a part of an older "
                                            "fp4diag: make the shares again)",
                             names[i]);
        cJSON_ArrayForEach(e, fa)
        {
            const char *file, *hash;
            double size;
            if (!print_entry(e, &file, &size, &hash))
                return fp4_error(FP4_ERR_INPUT, "%s: malformed shard.fingerprint entry",
                                 names[i]);
            /* the bytes sampled follow from the size (io/fingerprint.h): the merged
             * provenance shows them */
            const cJSON *h = get(e, "hashed");
            if (!cJSON_IsNumber(h) || size > TIMING_BYTES_MAX ||
                h->valuedouble != (double)fp4_fingerprint_hashed((int64_t)size))
                return fp4_error(FP4_ERR_INPUT, "%s: shard.fingerprint of %s: \"hashed\" is "
                                                "not the bytes its size samples (edited part?)",
                                 names[i], file);
        }
        const cJSON *sn = get(p[i].shard, "names");
        if (p[i].audit && (!cJSON_IsArray(sn) || cJSON_GetArraySize(sn) != p[i].selected))
            return fp4_error(FP4_ERR_INPUT, "%s: no shard.names of the %d selected tensors (a "
                                            "part of an older fp4diag: make the shares again)",
                             names[i], p[i].selected);
        const cJSON *names_or_none = p[i].audit ? sn : NULL;
        cJSON_ArrayForEach(e, names_or_none)
            if (!cJSON_IsString(e) || !*e->valuestring)
                return fp4_error(FP4_ERR_INPUT, "%s: shard.names holds an entry that is not a "
                                                "name", names[i]);
        if ((st = shapes_load(&p[i], !strcmp(c->valuestring, "gemm"))) != FP4_OK) return st;
    }
    return FP4_OK;
}

/* The input files' fingerprints a part's shard.fingerprint holds (checked by parts_check and
 * equal in every part), for the merged report's provenance. FP4_ERR_INTERNAL out of memory. */
static fp4_status prints_from_part(const part *p, fp4_file_print **out, int *n)
{
    const cJSON *fa = get(p->shard, "fingerprint"), *e;
    int k = cJSON_GetArraySize(fa);
    *out = NULL, *n = 0;
    if (k <= 0) return FP4_OK;
    fp4_file_print *v = calloc((size_t)k, sizeof *v);
    if (!v) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    int i = 0;
    cJSON_ArrayForEach(e, fa)
    {
        const char *file, *hash;
        double size;
        if (i >= k || !print_entry(e, &file, &size, &hash)) continue;
        const cJSON *h = get(e, "hashed");
        v[i].path = strdup(file);
        if (!v[i].path) {
            fp4_fingerprint_free(v, i);
            return fp4_error(FP4_ERR_INTERNAL, "out of memory");
        }
        v[i].size = (int64_t)size;
        v[i].xxh3 = (uint64_t)strtoull(hash, NULL, 16);
        v[i].hashed = (int64_t)h->valuedouble; /* load: what the size samples */
        i++;
    }
    *out = v, *n = i;
    return FP4_OK;
}

/* Part i against part 0: the same run? `what` names the first difference. */
static bool same_run(const part *a, const part *b, bool gemm, const char **what)
{
    static const char *const keys[] = {"schema", "tool", "command", "config"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        const cJSON *x = get(a->doc, keys[k]), *y = get(b->doc, keys[k]);
        if ((x || y) && !same_json(x, y)) { /* absent in both: an audit's config */
            *what = keys[k];
            return false;
        }
    }
    if (!gemm && !same_json(get(a->doc, "input"), get(b->doc, "input"))) {
        *what = "input";
        return false;
    }
    if (!gemm && (get(a->doc, "skipped") || get(b->doc, "skipped")) &&
        !same_json(get(a->doc, "skipped"), get(b->doc, "skipped"))) {
        *what = "skipped list";
        return false;
    }
    if (gemm && !same_json(get(a->shard, "layers"), get(b->shard, "layers"))) {
        *what = "input (layers)";
        return false;
    }
    if (gemm && !same_inputs(get(a->shard, "inputs"), get(b->shard, "inputs"))) {
        *what = "layers' inputs (shard.inputs)";
        return false;
    }
    if (a->audit && !same_json(get(a->shard, "names"), get(b->shard, "names"))) {
        *what = "selection (shard.names)";
        return false;
    }
    if (!gemm && !same_shapes(get(a->shard, "shapes"), get(b->shard, "shapes"))) {
        *what = "selection's shapes (shard.shapes)";
        return false;
    }
    if (!gemm && !a->audit &&
        !same_json(get(a->shard, "dtypes"), get(b->shard, "dtypes"))) {
        *what = "selection's dtypes (shard.dtypes)";
        return false;
    }
    if (a->count != b->count) {
        *what = "share count N";
        return false;
    }
    if (a->selected != b->selected) {
        *what = "selection";
        return false;
    }
    int na, nb;
    char **x = argv_canonical(get(a->doc, "argv"), NULL, &na);
    char **y = argv_canonical(get(b->doc, "argv"), NULL, &nb);
    bool eq = x && y && argv_equal(x, y);
    argv_free(x);
    argv_free(y);
    if (!eq) *what = "command line (argv apart from --shard and -o)";
    return eq;
}

static const cJSON *print_find(const cJSON *arr, const char *file)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        const cJSON *f = get(e, "file");
        if (cJSON_IsString(f) && !strcmp(f->valuestring, file)) return e;
    }
    return NULL;
}

/* Part b read the same input files as part a (the fingerprints every share takes: size and
 * sampled XXH3 per file; io/fingerprint.h): FP4_ERR_INPUT naming the file and what differs. */
static fp4_status same_input(const part *a, const part *b)
{
    const cJSON *fa = get(a->shard, "fingerprint"), *fb = get(b->shard, "fingerprint");
    for (int s = 0; s < 2; s++) {
        const cJSON *x = s ? fb : fa, *y = s ? fa : fb, *e;
        const part *px = s ? b : a, *py = s ? a : b;
        cJSON_ArrayForEach(e, x)
        {
            const char *file, *hx, *hy;
            double zx, zy;
            print_entry(e, &file, &zx, &hx); /* checked by load */
            const cJSON *o = print_find(y, file);
            if (!o)
                return fp4_error(FP4_ERR_INPUT, "%s is not a share of the run of %s: %s read "
                                                "%s, %s did not (shares of different inputs)",
                                 b->name, a->name, px->name, file, py->name);
            if (s) continue; /* both ways for names; sizes and hashes once */
            print_entry(o, &file, &zy, &hy);
            if (zx != zy)
                return fp4_error(FP4_ERR_INPUT, "%s is not a share of the run of %s: its input "
                                                "%s had %.0f bytes, %.0f in %s (shares of "
                                                "different contents at the same path)",
                                 b->name, a->name, file, zy, zx, a->name);
            if (strcmp(hx, hy))
                return fp4_error(FP4_ERR_INPUT, "%s is not a share of the run of %s: its input "
                                                "%s had other contents (xxh3 %s, %s in %s; "
                                                "shares of different contents at the same "
                                                "path)",
                                 b->name, a->name, file, hy, hx, a->name);
        }
    }
    return FP4_OK;
}

static fp4_status check_parts(part *p, int n, bool gemm)
{
    for (int i = 1; i < n; i++) {
        const char *what = "";
        if (!same_run(&p[0], &p[i], gemm, &what))
            return fp4_error(FP4_ERR_INPUT,
                             "%s is not a share of the run of %s: its %s differs (foreign part)",
                             p[i].name, p[0].name, what);
        fp4_status st = same_input(&p[0], &p[i]);
        if (st != FP4_OK) return st;
    }
    const int N = p[0].count;
    int *seen = malloc((size_t)N * sizeof *seen);
    if (!seen) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    for (int s = 0; s < N; s++) seen[s] = -1;
    for (int i = 0; i < n; i++) {
        if (seen[p[i].index] >= 0) {
            fp4_status st = fp4_error(FP4_ERR_INPUT, "share %d/%d given twice: %s and %s",
                                      p[i].index, N, p[seen[p[i].index]].name, p[i].name);
            free(seen);
            return st;
        }
        seen[p[i].index] = i;
    }
    char miss[400] = "";
    int nmiss = 0;
    size_t used = 0;
    for (int s = 0; s < N; s++)
        if (seen[s] < 0) {
            if (used < sizeof miss - 32)
                used += (size_t)snprintf(miss + used, sizeof miss - used, "%s%d/%d",
                                         nmiss ? ", " : "", s, N);
            else if (used < sizeof miss - 1)
                used += (size_t)snprintf(miss + used, sizeof miss - used, ", ...");
            nmiss++;
        }
    free(seen);
    if (nmiss)
        return fp4_error(FP4_ERR_INPUT, "%d of %d shares missing: %s (%d given)", nmiss, N,
                         miss, n);
    /* Together the shares must cover the selection once (the split is deterministic, so this
     * fails only for parts made by different builds or edited by hand). */
    const int S = p[0].selected;
    int *owner = malloc((size_t)(S ? S : 1) * sizeof *owner);
    if (!owner) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    for (int u = 0; u < S; u++) owner[u] = -1;
    fp4_status st = FP4_OK;
    for (int i = 0; i < n && st == FP4_OK; i++) {
        const cJSON *as = get(p[i].shard, "assigned"), *a;
        if (!cJSON_IsArray(as)) st = fp4_error(FP4_ERR_INPUT, "%s: no shard.assigned", p[i].name);
        cJSON_ArrayForEach(a, as)
        {
            int u = int_of(a, S > 0 ? S - 1 : 0);
            if (u < 0 || u >= S || owner[u] >= 0) {
                char held[64];
                value_text(a, held, sizeof held);
                st = fp4_error(FP4_ERR_INPUT, "%s: shard.assigned holds %s, %s", p[i].name, held,
                               u < 0 || u >= S ? "outside the selection" : "also in another part");
                break;
            }
            owner[u] = i;
        }
    }
    for (int u = 0; u < S && st == FP4_OK; u++)
        if (owner[u] < 0)
            st = fp4_error(FP4_ERR_INPUT, "no part holds selected item %d (parts of different "
                                          "builds?)", u);
    free(owner);
    return st;
}

/* Sets o's `key`, which o holds, to item (which it takes); false (item freed) when o has no
 * such key or item is NULL (out of memory). */
static bool put(cJSON *o, const char *key, cJSON *item)
{
    if (item && cJSON_ReplaceItemInObjectCaseSensitive(o, key, item)) return true;
    cJSON_Delete(item);
    return false;
}

/* The top-level keys of an audit or gemm part the merged report is made from (its copy of
 * part 0, each of these replaced): every part has each, of its type (a part without one is
 * not a part of a run); a gemm part's "input" holds its "file" and "datasets"; and no key
 * the run does not write (report/audit.c, report/gemm.c: it would be copied unchecked).
 * FP4_ERR_INPUT naming the part and the key. */
static fp4_status parts_keys(const part *p, int n, bool gemm)
{
    static const char *const audit_all[] = {"schema",  "tool",   "command", "argv",
                                            "input",   "device", "tensors", "pooled",
                                            "skipped", "errors", "provenance", "timing",
                                            "shard",   NULL};
    static const char *const gemm_all[] = {"schema", "tool",    "command", "argv",
                                           "input",  "config",  "layers",  "summary",
                                           "verdict", "errors", "provenance", "timing",
                                           "shard",  NULL};
    for (int i = 0; i < n; i++) {
        const cJSON *x;
        cJSON_ArrayForEach(x, p[i].doc)
        {
            const char *const *k = gemm ? gemm_all : audit_all;
            while (*k && strcmp(*k, x->string)) k++;
            if (!*k)
                return fp4_error(FP4_ERR_INPUT, "%s: top-level key \"%.64s\" is not one %s "
                                                "run writes (edited part?)",
                                 p[i].name, x->string, gemm ? "a gemm" : "an audit");
        }
    }
    static const char *const audit_keys[] = {"[argv", "[tensors", "{pooled", "[errors",
                                             "{provenance", "{timing", NULL};
    static const char *const gemm_keys[] = {"[argv",    "{input",      "[layers", "{summary",
                                            "{verdict", "[errors",     "{provenance",
                                            "{timing",  "'input.file", "[input.datasets",
                                            NULL};
    for (int i = 0; i < n; i++)
        for (const char *const *k = gemm ? gemm_keys : audit_keys; *k; k++) {
            const char *key = *k + 1, *dot = strchr(key, '.');
            const cJSON *v = dot ? get(get(p[i].doc, "input"), dot + 1) : get(p[i].doc, key);
            const bool ok = **k == '[' ? cJSON_IsArray(v)
                            : **k == '{' ? cJSON_IsObject(v)
                                         : cJSON_IsString(v);
            const char *type = **k == '[' ? "an array" : **k == '{' ? "an object" : "a string";
            if (!ok && !v)
                return fp4_error(FP4_ERR_INPUT, "%s: no \"%s\" (%s every part of a run has; "
                                                "edited part?)",
                                 p[i].name, key, type);
            if (!ok)
                return fp4_error(FP4_ERR_INPUT, "%s: \"%s\" is not %s (as every part of a run "
                                                "has it; edited part?)",
                                 p[i].name, key, type);
        }
    return FP4_OK;
}

/* --------------------------------------------------------------- analysis */

typedef struct unit {
    int index; /* position in the selection */
    int part;
    const cJSON *obj;     /* the tensor or error object in the part */
    const cJSON *partial; /* shard.tensors[k] (tensors only) */
} unit;

static int unit_cmp(const void *a, const void *b)
{
    const unit *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* The units of kind `key` ("tensors"/"errors"; gemm: "layers") of every part, each with its
 * selection index from the parallel shard array, sorted by index. */
static fp4_status collect(part *p, int n, const char *key, const char *shard_key, unit **out,
                          int *nout)
{
    int total = 0;
    for (int i = 0; i < n; i++) total += cJSON_GetArraySize(get(p[i].doc, key));
    unit *u = calloc((size_t)(total ? total : 1), sizeof *u);
    if (!u) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    int k = 0;
    for (int i = 0; i < n; i++) {
        const cJSON *arr = get(p[i].doc, key), *idx = get(p[i].shard, shard_key);
        if (cJSON_GetArraySize(arr) != cJSON_GetArraySize(idx)) {
            free(u);
            return fp4_error(FP4_ERR_INPUT, "%s: \"%s\" and shard.%s differ in length",
                             p[i].name, key, shard_key);
        }
        for (int j = 0; j < cJSON_GetArraySize(arr); j++) {
            const cJSON *x = cJSON_GetArrayItem(idx, j);
            const cJSON *xi = cJSON_IsObject(x) ? get(x, "index") : x;
            if (int_of(xi, p[i].selected > 0 ? p[i].selected - 1 : 0) < 0) {
                free(u);
                return fp4_error(FP4_ERR_INPUT, "%s: shard.%s[%d] has no index", p[i].name,
                                 shard_key, j);
            }
            u[k++] = (unit){(int)xi->valuedouble, i, cJSON_GetArrayItem(arr, j), x};
        }
    }
    qsort(u, (size_t)k, sizeof *u, unit_cmp);
    *out = u;
    *nout = k;
    return FP4_OK;
}

/* The results (tensors or layers) and errors of every part against the shares: each position
 * one its part was assigned (shard.assigned), none twice, none both a result and an error, and
 * together the whole selection (the run reports every selected item as one or the other).
 * FP4_ERR_INPUT naming the part and the position (an edited part). */
static fp4_status check_units(const part *p, int n, const unit *r, int nr, const unit *e, int ne,
                              const char *what)
{
    const int S = p[0].selected;
    int *owner = malloc((size_t)(S ? S : 1) * sizeof *owner);
    unsigned char *used = calloc((size_t)(S ? S : 1), 1);
    fp4_status st = FP4_OK;
    if (!owner || !used) {
        free(owner);
        free(used);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    for (int u = 0; u < S; u++) owner[u] = -1;
    for (int i = 0; i < n; i++) { /* check_parts: every entry in range, each in one part */
        const cJSON *a;
        cJSON_ArrayForEach(a, get(p[i].shard, "assigned"))
        {
            int u = int_of(a, S > 0 ? S - 1 : 0);
            if (u >= 0) owner[u] = i;
        }
    }
    for (int k = 0; k < nr + ne && st == FP4_OK; k++) {
        const unit *x = k < nr ? &r[k] : &e[k - nr];
        const int u = x->index;
        if (u < 0 || u >= S || owner[u] != x->part)
            st = fp4_error(FP4_ERR_INPUT, "%s: %s at position %d, which is not in its "
                                          "shard.assigned (edited part?)",
                           p[x->part].name, k < nr ? what : "an errors entry", u);
        else if (used[u])
            st = fp4_error(FP4_ERR_INPUT, "%s: position %d is given twice (%s; edited part?)",
                           p[x->part].name, u,
                           used[u] == 1 && k >= nr ? "both a result and an errors entry"
                                                   : "a duplicated index");
        else
            used[u] = k < nr ? 1 : 2;
    }
    for (int u = 0; u < S && st == FP4_OK; u++)
        if (!used[u])
            st = fp4_error(FP4_ERR_INPUT, "%s: position %d is assigned to it but neither a "
                                          "result nor an errors entry (edited part?)",
                           p[owner[u] >= 0 ? owner[u] : 0].name, u);
    free(owner);
    free(used);
    return st;
}

/* Whether `s` names a dtype a reader of fp4diag gives (io/rawconv.c, io/gguf_parse.c, the
 * HDF5 reader's "float(1,E,M,B)" of other float layouts). */
static bool dtype_read(const char *s)
{
    for (int k = FP4_RAW_NONE + 1; k < FP4_RAW_COUNT; k++)
        if (!strcmp(s, fp4_raw_name((fp4_raw)k))) return true;
    for (uint32_t t = 0; t < 256; t++) {
        const char *g = fp4_ggml_type_name(t, NULL, NULL);
        if (g && !strcmp(s, g)) return true;
    }
    unsigned e = 0, m = 0, b = 0;
    char again[64];
    if (sscanf(s, "float(1,%u,%u,%u)", &e, &m, &b) == 3) {
        snprintf(again, sizeof again, "float(1,%u,%u,%u)", e, m, b);
        return !strcmp(again, s);
    }
    return false;
}

/* One analysed tensor of a part: its exact partial sums into tr->metrics, and what the tensor
 * shows beside them checked (SPEC §9): the shape holds the elements every result counted, the
 * axis is the one the run's --axis gives for its rank, the dtype one a reader gives.
 * FP4_ERR_INPUT naming the part, the tensor and the field. */
static fp4_status tensor_from_json(const part *pt, const unit *u, const fp4_run_config *o,
                                   int ncfg, fp4_tensor_result *tr)
{
    const cJSON *obj = u->obj;
    const cJSON *name = get(obj, "name"), *shape = get(obj, "shape"), *dtype = get(obj, "dtype");
    const cJSON *ps = get(u->partial, "partials");
    if (!cJSON_IsString(name) || !cJSON_IsArray(shape) || !cJSON_IsString(dtype) ||
        cJSON_GetArraySize(shape) > FP4_MAX_RANK || cJSON_GetArraySize(ps) != ncfg)
        return fp4_error(FP4_ERR_INPUT, "%s: tensor %d: malformed (name, shape, dtype, partials)",
                         pt->name, u->index);
    tr->index = u->index;
    if (!(tr->info.name = strdup(name->valuestring)))
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    if (strlen(dtype->valuestring) >= sizeof tr->info.dtype || !dtype_read(dtype->valuestring))
        return fp4_error(FP4_ERR_INPUT, "%s: %s: \"dtype\" is not a dtype fp4diag reads "
                                        "(edited part?)",
                         pt->name, tr->info.name);
    snprintf(tr->info.dtype, sizeof tr->info.dtype, "%s", dtype->valuestring);
    tr->info.rank = cJSON_GetArraySize(shape);
    uint64_t elements = 1;
    bool fits = true;
    for (int d = 0; d < tr->info.rank; d++) {
        const cJSON *x = cJSON_GetArrayItem(shape, d);
        if (!cJSON_IsNumber(x) || !(x->valuedouble >= 0) || x->valuedouble > 4.0e18 ||
            x->valuedouble != floor(x->valuedouble))
            return fp4_error(FP4_ERR_INPUT, "%s: %s: malformed shape", pt->name, tr->info.name);
        tr->info.dims[d] = (int64_t)x->valuedouble;
        const uint64_t n = (uint64_t)tr->info.dims[d];
        if (n && elements > UINT64_MAX / n) fits = false;
        else elements *= n;
    }
    /* the axis as the run resolves --axis for the tensor's rank (run/driver.c) */
    const int rank = tr->info.rank;
    const int want = rank == 0 ? 0 : o->axis < 0 ? o->axis + rank : o->axis;
    tr->axis = int_of(get(obj, "axis"), FP4_MAX_RANK);
    if (tr->axis < 0 || tr->axis != want || (rank > 0 && tr->axis >= rank))
        return fp4_error(FP4_ERR_INPUT, "%s: %s: \"axis\" is not the axis --axis %d gives a "
                                        "tensor of rank %d (edited part?)",
                         pt->name, tr->info.name, o->axis, rank);
    tr->info.nelems = -1; /* unused: the report prints the shape */
    tr->metrics = calloc((size_t)(ncfg ? ncfg : 1), sizeof *tr->metrics);
    if (!tr->metrics) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    for (int c = 0; c < ncfg; c++) {
        if (!fp4_metrics_raw_parse(cJSON_GetArrayItem(ps, c), &tr->metrics[c]))
            return fp4_error(FP4_ERR_INPUT, "%s: %s: malformed exact partial sums", pt->name,
                             tr->info.name);
        fp4_metrics_finish(&tr->metrics[c]);
        /* every result counts the tensor's elements (counts.elements: of the input) */
        if (!fits || tr->metrics[c].elements != elements)
            return fp4_error(FP4_ERR_INPUT, "%s: %s: \"shape\" does not hold the %llu elements "
                                            "its exact sums count (edited part?)",
                             pt->name, tr->info.name,
                             (unsigned long long)tr->metrics[c].elements);
    }
    return FP4_OK;
}

static double part_seconds_max(const part *p, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        const cJSON *v = get(get(p[i].doc, "timing"), "seconds");
        if (cJSON_IsNumber(v) && v->valuedouble > s) s = v->valuedouble;
    }
    return s;
}

static double part_bytes_sum(const part *p, int n)
{
    double b = 0;
    for (int i = 0; i < n; i++) {
        const cJSON *v = get(get(p[i].doc, "timing"), "bytes_read");
        if (cJSON_IsNumber(v)) b += v->valuedouble;
    }
    return b;
}

/* What an audit and a gemm merge set alike in doc (their copy of part 0, which holds each key:
 * parts_keys): "argv" the one process's argv[0..argc) (argv_canonical), "errors" the parts'
 * errors entries eu[0..ne) in selection order, and "provenance" as an sqnr merge's, from the
 * inputs' fingerprints every part took alike (same_input), never a part's copy; then res's
 * error count and first error message. FP4_ERR_INTERNAL out of memory. */
static fp4_status put_common(cJSON *doc, const part *p, char **argv, int argc, const unit *eu,
                             int ne, fp4_merge_result *res)
{
    cJSON *av = cJSON_CreateArray(), *ea = cJSON_CreateArray();
    if (!av || !ea) {
        cJSON_Delete(av), cJSON_Delete(ea);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    for (int i = 0; i < argc; i++) cJSON_AddItemToArray(av, cJSON_CreateString(argv[i]));
    for (int i = 0; i < ne; i++) cJSON_AddItemToArray(ea, cJSON_Duplicate(eu[i].obj, true));
    cJSON *pv = NULL;
    fp4_file_print *prints = NULL;
    int nprints = 0;
    fp4_status st = prints_from_part(&p[0], &prints, &nprints);
    if (st == FP4_OK) pv = fp4_report_provenance_json(prints, nprints);
    fp4_fingerprint_free(prints, nprints);
    /* put frees what it cannot place */
    int lost = !put(doc, "argv", av);
    lost += !put(doc, "errors", ea);
    lost += !put(doc, "provenance", pv);
    if (st != FP4_OK) return st;
    if (lost) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    res->nerrors = ne;
    if (ne) {
        const cJSON *m = get(eu[0].obj, "message");
        snprintf(res->first_error, sizeof res->first_error, "%s",
                 cJSON_IsString(m) ? m->valuestring : "");
    }
    return FP4_OK;
}

/* The merged report's text into res->text: doc as cJSON_Print writes it and a newline, as the
 * run writes its report (report/audit.c, report/gemm.c). FP4_ERR_INTERNAL out of memory. */
static fp4_status put_text(const cJSON *doc, fp4_merge_result *res)
{
    char *t = cJSON_Print(doc);
    if (!t) return fp4_error(FP4_ERR_INTERNAL, "out of memory building the report");
    size_t len = strlen(t);
    res->text = malloc(len + 2);
    if (res->text) memcpy(res->text, t, len), res->text[len] = '\n', res->text[len + 1] = '\0';
    cJSON_free(t);
    if (!res->text) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    return FP4_OK;
}

/* Every tensor and error of the merged report must equal the part's own: the parts then came
 * from this build's report code, and the merge added nothing of its own. */
static fp4_status check_rendered(const char *text, const unit *t, int nt, const unit *e, int ne,
                                 const part *p)
{
    cJSON *doc = cJSON_Parse(text);
    if (!doc) return fp4_error(FP4_ERR_INTERNAL, "merge: the merged report does not parse");
    fp4_status st = FP4_OK;
    const cJSON *ts = get(doc, "tensors"), *es = get(doc, "errors");
    for (int i = 0; i < nt && st == FP4_OK; i++)
        if (!same_json(cJSON_GetArrayItem(ts, i), t[i].obj))
            st = fp4_error(FP4_ERR_INPUT, "%s: tensor %s does not re-render as written (a part "
                                          "of another fp4diag build, or edited?)",
                           p[t[i].part].name,
                           cJSON_IsString(get(t[i].obj, "name")) ? get(t[i].obj, "name")->valuestring : "?");
    for (int i = 0; i < ne && st == FP4_OK; i++)
        if (!same_json(cJSON_GetArrayItem(es, i), e[i].obj))
            st = fp4_error(FP4_ERR_INPUT, "%s: an errors entry does not re-render as written",
                           p[e[i].part].name);
    cJSON_Delete(doc);
    return st;
}

/* The parts' "notes" (names that were not valid UTF-8, escaped when the parts were written):
 * every part lists the whole selection, so part 0's notes are the run's; the merged strings
 * are valid by now, so the rendering did not add them again. */
static fp4_status keep_notes(const part *p, fp4_merge_result *res)
{
    const cJSON *notes = get(p[0].doc, "notes");
    if (!cJSON_IsArray(notes)) return FP4_OK;
    cJSON *doc = cJSON_Parse(res->text);
    if (!doc) return fp4_error(FP4_ERR_INTERNAL, "merge: the merged report does not parse");
    if (!get(doc, "notes")) cJSON_AddItemToObject(doc, "notes", cJSON_Duplicate(notes, true));
    char *t = cJSON_Print(doc);
    cJSON_Delete(doc);
    char *nt = t ? malloc(strlen(t) + 2) : NULL;
    if (nt) sprintf(nt, "%s\n", t);
    cJSON_free(t);
    if (!nt) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    free(res->text);
    res->text = nt;
    return FP4_OK;
}

static fp4_status merge_analysis(part *p, int n, const char *output, FILE *table,
                                 fp4_merge_config_fn config_of, fp4_merge_result *res)
{
    fp4_status st = FP4_OK;
    int argc = 0;
    char **argv = argv_canonical(get(p[0].doc, "argv"), output, &argc);
    unit *tu = NULL, *eu = NULL;
    int nt = 0, ne = 0;
    fp4_run run;
    memset(&run, 0, sizeof run);
    fp4_run_config o;
    if (!argv || argc < 2) {
        st = argv ? fp4_error(FP4_ERR_INPUT, "%s: argv too short", p[0].name)
                  : fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    const char *command = argv[1];
    /* the config as the run parsed it (its command's defaults, then its argv) */
    if ((st = config_of(argc - 1, argv + 1, &o)) != FP4_OK) {
        st = fp4_error(FP4_ERR_INPUT, "%s: its argv does not parse here: %s", p[0].name,
                       fp4_last_error());
        goto out;
    }
    run.config = &o;
    const cJSON *in = get(p[0].doc, "input"), *cfg = get(p[0].doc, "config");
    const cJSON *file = get(in, "file"), *ds = get(in, "datasets"), *dev = get(cfg, "device");
    run.file = strdup(cJSON_IsString(file) ? file->valuestring : "");
    run.cfgs = calloc(2 * FP4_MAX_FORMATS, sizeof *run.cfgs);
    run.datasets = calloc((size_t)cJSON_GetArraySize(ds) + 1, sizeof *run.datasets);
    if (!run.file || !run.cfgs || !run.datasets) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    if ((st = fp4_run_config_qconfigs(&o, run.cfgs, 2 * FP4_MAX_FORMATS, &run.ncfg)) != FP4_OK)
        goto out;
    snprintf(run.device, sizeof run.device, "%s", cJSON_IsString(dev) ? dev->valuestring : "");
    const cJSON *d;
    cJSON_ArrayForEach(d, ds)
    {
        if (!cJSON_IsString(d) || !(run.datasets[run.ndatasets] = strdup(d->valuestring))) {
            st = fp4_error(FP4_ERR_INPUT, "%s: malformed input.datasets", p[0].name);
            goto out;
        }
        run.ndatasets++;
    }
    /* what the default selection left out: decided before the split, the same in every part */
    const cJSON *skl = get(p[0].doc, "skipped"), *x;
    run.skipped = calloc((size_t)cJSON_GetArraySize(skl) + 1, sizeof *run.skipped);
    if (!run.skipped) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    cJSON_ArrayForEach(x, skl)
    {
        const cJSON *nm = get(x, "name"), *sh = get(x, "shape"), *dt = get(x, "dtype"),
                    *why = get(x, "reason");
        if (!cJSON_IsString(nm) || !cJSON_IsArray(sh) || !cJSON_IsString(dt) ||
            !cJSON_IsString(why) || cJSON_GetArraySize(sh) > FP4_MAX_RANK) {
            st = fp4_error(FP4_ERR_INPUT, "%s: malformed skipped entry", p[0].name);
            goto out;
        }
        fp4_tensor_skip *k = &run.skipped[run.nskipped];
        if (!(k->info.name = strdup(nm->valuestring)) || !(k->reason = strdup(why->valuestring))) {
            free(k->info.name);
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        run.nskipped++;
        const cJSON *qo = get(x, "quant");
        if (qo && (!(k->quant = malloc(sizeof *k->quant)) ||
                   !fp4_qsummary_parse(qo, k->quant))) {
            st = k->quant ? fp4_error(FP4_ERR_INPUT, "%s: malformed skipped entry", p[0].name)
                          : fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        snprintf(k->info.dtype, sizeof k->info.dtype, "%s", dt->valuestring);
        k->info.rank = cJSON_GetArraySize(sh);
        for (int r = 0; r < k->info.rank; r++) {
            const cJSON *v = cJSON_GetArrayItem(sh, r);
            if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 4.0e18) {
                st = fp4_error(FP4_ERR_INPUT, "%s: malformed skipped entry", p[0].name);
                goto out;
            }
            k->info.dims[r] = (int64_t)v->valuedouble;
        }
    }
    if (run.ndatasets != p[0].selected) {
        st = fp4_error(FP4_ERR_INPUT, "%s: shard.selected %d but %d input datasets", p[0].name,
                       p[0].selected, run.ndatasets);
        goto out;
    }
    if ((st = collect(p, n, "tensors", "tensors", &tu, &nt)) != FP4_OK) goto out;
    if ((st = collect(p, n, "errors", "errors", &eu, &ne)) != FP4_OK) goto out;
    if ((st = check_units(p, n, tu, nt, eu, ne, "a tensor")) != FP4_OK) goto out;
    run.tensors = calloc((size_t)(nt ? nt : 1), sizeof *run.tensors);
    run.errors = calloc((size_t)(ne ? ne : 1), sizeof *run.errors);
    if (!run.tensors || !run.errors) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (int i = 0; i < nt; i++) {
        st = tensor_from_json(&p[tu[i].part], &tu[i], &o, run.ncfg, &run.tensors[i]);
        run.ntensors = i + 1;
        if (st != FP4_OK) goto out;
        if (strcmp(run.tensors[i].info.name, run.datasets[tu[i].index])) {
            st = fp4_error(FP4_ERR_INPUT, "%s: tensor %s at position %d, where the selection "
                                          "(input.datasets) lists %s (edited part?)",
                           p[tu[i].part].name, run.tensors[i].info.name, tu[i].index,
                           run.datasets[tu[i].index]);
            goto out;
        }
        /* the shape and dtype described at its position before the split: its exact sums
         * count the elements only, which a shape's dims permuted keep */
        const part *pt = &p[tu[i].part];
        const cJSON *want = cJSON_GetArrayItem(get(pt->shard, "shapes"), tu[i].index);
        const cJSON *wdt = cJSON_GetArrayItem(get(pt->shard, "dtypes"), tu[i].index);
        const bool shape_bad = !same_dims(get(tu[i].obj, "shape"), want);
        if (shape_bad || strcmp(run.tensors[i].info.dtype, wdt->valuestring)) {
            char shown[160], listed[160];
            value_text(get(tu[i].obj, shape_bad ? "shape" : "dtype"), shown, sizeof shown);
            value_text(shape_bad ? want : wdt, listed, sizeof listed);
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: \"%s\" %s is not the one the selection "
                                          "lists at its position (shard.%s: %s; edited part?)",
                           pt->name, run.tensors[i].info.name, shape_bad ? "shape" : "dtype",
                           shown, shape_bad ? "shapes" : "dtypes", listed);
            goto out;
        }
    }
    for (int i = 0; i < ne; i++) {
        const cJSON *t = get(eu[i].obj, "tensor"), *s = get(eu[i].obj, "status"),
                    *m = get(eu[i].obj, "message");
        if (!cJSON_IsString(t) || !cJSON_IsString(s) || !cJSON_IsString(m)) {
            st = fp4_error(FP4_ERR_INPUT, "%s: malformed errors entry", p[eu[i].part].name);
            goto out;
        }
        if (strcmp(t->valuestring, run.datasets[eu[i].index])) {
            st = fp4_error(FP4_ERR_INPUT, "%s: errors entry for %s at position %d, where the "
                                          "selection (input.datasets) lists %s (edited part?)",
                           p[eu[i].part].name, t->valuestring, eu[i].index,
                           run.datasets[eu[i].index]);
            goto out;
        }
        fp4_tensor_error *e = &run.errors[run.nerrors++];
        e->index = eu[i].index;
        e->status = fp4_status_from_name(s->valuestring);
        e->tensor = strdup(t->valuestring);
        e->message = strdup(m->valuestring);
        if (!e->tensor || !e->message) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
    }
    if ((st = fp4_run_pool(&run)) != FP4_OK) goto out;
    run.seconds = part_seconds_max(p, n);
    run.bytes_read = (int64_t)part_bytes_sum(p, n);
    if ((st = prints_from_part(&p[0], &run.prints, &run.nprints)) != FP4_OK) goto out;
    res->text = fp4_report_analysis_json(command, argc - 1, argv + 1, &run);
    if (!res->text) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory building the report");
        goto out;
    }
    if ((st = check_rendered(res->text, tu, nt, eu, ne, p)) != FP4_OK) goto out;
    if ((st = keep_notes(p, res)) != FP4_OK) goto out;
    if (table) fp4_report_table(table, command, &run);
    snprintf(res->command, sizeof res->command, "%s", command);
    res->nerrors = run.nerrors;
    res->nunits = run.ndatasets;
    if (run.nerrors) snprintf(res->first_error, sizeof res->first_error, "%s", run.errors[0].message);
out:
    if (run.config) fp4_run_free(&run);
    free(tu);
    free(eu);
    argv_free(argv);
    return st;
}

/* --------------------------------------------------------------- gemm */

/* A visible number against the value v it was printed from (null when v is not finite): cJSON
 * prints 15 significant digits whenever they read back within one DBL_EPSILON of v (relative),
 * so equal within that; `rel` widens it for a value recomputed from printed ones. */
static bool num_matches(const cJSON *shown, double v, double rel)
{
    if (!isfinite(v)) return cJSON_IsNull(shown);
    /* a number out of the double range (1e999) reads as inf: within no tolerance of v */
    if (!cJSON_IsNumber(shown) || !isfinite(shown->valuedouble)) return false;
    double a = fabs(shown->valuedouble), b = fabs(v);
    return fabs(shown->valuedouble - v) <= (a > b ? a : b) * rel;
}

/* Bitwise equality of two doubles read back from hex floats (NaN equals NaN). */
static bool same_double(double a, double b)
{
    return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

static double num_or_nan(const cJSON *v) { return cJSON_IsNumber(v) ? v->valuedouble : NAN; }

static const char *sqnr_status_str(fp4_sqnr_status s)
{
    return s == FP4_SQNR_OK            ? "ok"
           : s == FP4_SQNR_ZERO_SIGNAL ? "zero_signal"
           : s == FP4_SQNR_NONFINITE   ? "nonfinite"
                                       : "exact";
}

/* One layer of a gemm part: its exact sums (shard.partials[k]) into L, and every number the
 * layer shows that they decide recomputed from them (fp4_gemm_sums_finish, the run's own
 * formula) and compared, as merge_analysis re-renders each tensor: the path list, sqnr_db,
 * sqnr_status and eta of layers[k].paths[j], the η and SQNR the sums array repeats,
 * alpha_product = alpha_a * alpha_b, and the operands' alpha (role a, then b) equal to them;
 * the layer's name is the one the selection lists at its position. FP4_ERR_INPUT naming the part and the field that differs (an edited part). */
static fp4_status gemm_layer_from_json(const part *pt, const unit *u, const cJSON *selnames,
                                       fp4_gemm_layer *L)
{
    const cJSON *ln = get(u->obj, "name"), *sel = cJSON_GetArrayItem(selnames, u->index);
    if (!cJSON_IsString(ln) || !cJSON_IsString(sel) || strcmp(ln->valuestring, sel->valuestring))
        return fp4_error(FP4_ERR_INPUT, "%s: layer %d: \"name\" is not the layer the selection "
                                        "lists there (shard.layers[%d]; edited part?)",
                         pt->name, u->index, u->index);
    const char *lname = ln->valuestring;
    const cJSON *ps = get(u->partial, "paths"), *shown = get(u->obj, "paths");
    if (!cJSON_IsArray(ps) || !cJSON_IsArray(shown) ||
        cJSON_GetArraySize(ps) != cJSON_GetArraySize(shown) ||
        cJSON_GetArraySize(ps) > FP4_GEMM_NPATHS)
        return fp4_error(FP4_ERR_INPUT, "%s: layer %s: \"paths\" and its exact sums "
                                        "(shard.partials) differ in length (edited part?)",
                         pt->name, lname);
    for (int j = 0; j < cJSON_GetArraySize(ps); j++) {
        const cJSON *x = cJSON_GetArrayItem(ps, j), *y = cJSON_GetArrayItem(shown, j);
        const cJSON *pn = get(x, "path"), *sums = get(x, "sums"), *ss = get(x, "sqnr_status");
        fp4_gemm_path path;
        if (!cJSON_IsString(pn) || fp4_gemm_path_parse(pn->valuestring, &path) != FP4_OK ||
            (L->paths & (1u << path)) || cJSON_GetArraySize(sums) != 5 || !cJSON_IsString(ss))
            return fp4_error(FP4_ERR_INPUT, "%s: layer %s: malformed exact sums "
                                            "(shard.partials)",
                             pt->name, lname);
        double v[5];
        for (int k = 0; k < 5; k++) {
            const cJSON *h = cJSON_GetArrayItem(sums, k);
            char *end = NULL;
            v[k] = cJSON_IsString(h) ? strtod(h->valuestring, &end) : 0;
            if (!end || end == h->valuestring || *end)
                return fp4_error(FP4_ERR_INPUT, "%s: layer %s: malformed exact sums "
                                                "(shard.partials)",
                                 pt->name, lname);
        }
        fp4_gemm_path_result *r = &L->res[path];
        r->path = path;
        r->sum_z2 = v[0], r->sum_err2 = v[1], r->sum_zqz = v[2];
        fp4_gemm_sums_finish(r->sum_z2, r->sum_err2, r->sum_zqz, &r->sqnr_status, &r->sqnr_db,
                             &r->eta);
        L->paths |= 1u << path;
        const char *pname = fp4_gemm_path_name(path), *field = NULL;
        const cJSON *yp = get(y, "path"), *ys = get(y, "sqnr_status");
        /* η is one division (the same bits on every machine); the SQNR's log10 may differ
         * in its last bit between C libraries */
        if (!same_double(v[3], r->eta) ||
            !(same_double(v[4], r->sqnr_db) ||
              fabs(v[4] - r->sqnr_db) <= fabs(r->sqnr_db) * 4 * DBL_EPSILON) ||
            strcmp(ss->valuestring, sqnr_status_str(r->sqnr_status)))
            field = "shard.partials sums (eta, sqnr_db, sqnr_status)";
        else if (!cJSON_IsString(yp) || strcmp(yp->valuestring, pname))
            field = "path";
        else if (!cJSON_IsString(ys) || strcmp(ys->valuestring, ss->valuestring))
            field = "sqnr_status";
        else if (!num_matches(get(y, "sqnr_db"),
                              r->sqnr_status == FP4_SQNR_OK ? r->sqnr_db : (double)NAN,
                              DBL_EPSILON))
            field = "sqnr_db";
        else if (!num_matches(get(y, "eta"), r->eta, DBL_EPSILON))
            field = "eta";
        else {
            const cJSON *aa = get(y, "alpha_a"), *ab = get(y, "alpha_b");
            double prod = cJSON_IsNumber(aa) && cJSON_IsNumber(ab)
                              ? aa->valuedouble * ab->valuedouble
                              : (double)NAN;
            /* alpha_a, alpha_b as printed: each within an epsilon of the run's */
            if (!num_matches(get(y, "alpha_product"), prod, 8 * DBL_EPSILON))
                field = "alpha_product";
            /* the operands' own alpha (Σx·q(x)/Σx², role a then b) are the path's two */
            const cJSON *ops = get(y, "operands");
            for (int k = 0; !field && k < 2; k++) {
                const cJSON *op = cJSON_GetArrayItem(ops, k), *role = get(op, "role");
                const cJSON *want = k ? ab : aa;
                if (cJSON_GetArraySize(ops) != 2 || !cJSON_IsString(role) ||
                    strcmp(role->valuestring, k ? "b" : "a") ||
                    !(cJSON_IsNumber(want) ? num_matches(get(op, "alpha"), want->valuedouble,
                                                         DBL_EPSILON)
                                           : cJSON_IsNull(get(op, "alpha"))))
                    field = "operands[].alpha (alpha_a, alpha_b)";
            }
        }
        if (field)
            return fp4_error(FP4_ERR_INPUT, "%s: layer %s path %s: \"%s\" is not what its "
                                            "exact sums give (edited part?)",
                             pt->name, lname, pname, field);
        /* what the table shows beside the sums: the operands (which tensor, transposed, their
         * SQNR) and the alphas, as the part printed them (cJSON prints numbers that read back
         * to the same double) */
        r->alpha_a = num_or_nan(get(y, "alpha_a"));
        r->alpha_b = num_or_nan(get(y, "alpha_b"));
        r->alpha_product = num_or_nan(get(y, "alpha_product"));
        for (int k = 0; k < 2; k++) {
            const cJSON *op = cJSON_GetArrayItem(get(y, "operands"), k);
            const cJSON *on = get(op, "name"), *os = get(op, "sqnr_status");
            fp4_gemm_operand_result *o = &r->op[k];
            o->role = k ? 'b' : 'a';
            o->transposed = cJSON_IsTrue(get(op, "transposed"));
            for (int t = FP4_GEMM_X; t <= FP4_GEMM_DY; t++)
                if (cJSON_IsString(on) && !strcmp(on->valuestring, fp4_gemm_tensor_name(t)))
                    o->tensor = (fp4_gemm_tensor)t;
            o->m.sqnr_db = num_or_nan(get(op, "sqnr_db"));
            o->m.sqnr_status = FP4_SQNR_OK;
            for (int q = 0; q <= FP4_SQNR_NONFINITE; q++)
                if (cJSON_IsString(os) &&
                    !strcmp(os->valuestring, sqnr_status_str((fp4_sqnr_status)q)))
                    o->m.sqnr_status = (fp4_sqnr_status)q;
            o->m.alpha = num_or_nan(get(op, "alpha"));
        }
    }
    if (!(L->name = strdup(lname))) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    return FP4_OK;
}


static bool same_num(const cJSON *a, const cJSON *b);

/* Whether object o has exactly the keys `keys` (NULL-terminated), `opt` (may be NULL) as an
 * optional one: a key a run does not write would be copied unchecked. */
static bool keys_exactly(const cJSON *o, const char *const *keys, const char *opt)
{
    if (!cJSON_IsObject(o)) return false;
    int want = 0;
    for (; keys[want]; want++)
        if (!get(o, keys[want])) return false;
    int have = cJSON_GetArraySize(o);
    return have == want || (opt && get(o, opt) && have == want + 1);
}

/* A whole count in [1, 2^53]. */
static int64_t dim_of(const cJSON *v)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 1) || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble != floor(v->valuedouble))
        return -1;
    return (int64_t)v->valuedouble;
}

static bool is_shape2(const cJSON *sh, int64_t a, int64_t b)
{
    return cJSON_GetArraySize(sh) == 2 && dim_of(cJSON_GetArrayItem(sh, 0)) == a &&
           dim_of(cJSON_GetArrayItem(sh, 1)) == b;
}

/* The rht object a path of the run shows: {size, signs} of the config when the config turns
 * it on for `path`, else false. */
static bool rht_matches(const cJSON *shown, const cJSON *cfg, const char *path)
{
    const cJSON *on = get(get(cfg, "rht"), path);
    if (!cJSON_IsString(on)) return false;
    if (strcmp(on->valuestring, "on")) return cJSON_IsFalse(shown);
    const cJSON *sz = get(shown, "size"), *sg = get(shown, "signs");
    return cJSON_IsObject(shown) && cJSON_GetArraySize(shown) == 2 &&
           same_num(sz, get(cfg, "rht_size")) && cJSON_IsString(sg) &&
           same_json(sg, get(cfg, "rht_signs"));
}

/* Whether the run named its operands itself (--x, --w, --dy; their datasets then any). */
static bool gemm_named_operands(const part *pt)
{
    const cJSON *a;
    cJSON_ArrayForEach(a, get(pt->doc, "argv"))
    {
        if (!cJSON_IsString(a)) continue;
        const char *t = a->valuestring;
        if (!strcmp(t, "--")) break;
        if (!strncmp(t, "--x", 3) || !strncmp(t, "--w", 3) || !strncmp(t, "--dy", 4))
            if (!t[t[2] == 'd' ? 4 : 3] || t[t[2] == 'd' ? 4 : 3] == '=') return true;
    }
    return false;
}

/* Whether `dset` is the dataset the run reads as operand `tn` of the layer (group) `name`: the
 * group's member as the file spells it (cmd/gemm.c operand_name: "/blocks/0/x", "/x" in the
 * root group, "model.layers.1.mlp.x"), or, when the run named its operands, any. */
static bool gemm_dataset_ok(const char *name, const char *tn, const char *dset, bool named)
{
    if (named) return true;
    size_t nl = strlen(name);
    if (!strcmp(name, "/")) return dset[0] == '/' && !strcmp(dset + 1, tn);
    return !strncmp(dset, name, nl) && (dset[nl] == '/' || dset[nl] == '.') &&
           !strcmp(dset + nl + 1, tn);
}

/* What one layer of a gemm part shows besides the numbers its exact sums decide (those:
 * gemm_layer_from_json), against the run's config (the same in every part), the parts'
 * input fingerprints and the layer's own operand shapes (SPEC §9): the recipe the config's;
 * each input read from a fingerprinted file, a dtype a reader gives, its shape the layer's
 * M x K, N x K, M x N, its shape and dtype the ones described before any layer was read
 * (`described`: the layer's shard.inputs entry); each path's shape, contraction and padding
 * what M, N, K and the operands' block and RHT give, its RHT the config's for the path; each
 * operand the tensor, role and transposition the path takes, the config's format, scale,
 * block, rounding and the path's RHT, the SR stream the run numbers it, its NMSE and SQNR, alpha and delta one
 * another's (the run's formulas), the same configuration as the layers before it (`first`:
 * the first layer's paths, NULL for it). The inputs exactly the tensors its paths read. No
 * key a run does not write. NULL when all hold, else the field that does not. */
static const char *gemm_layer_fields(const part *pt, const cJSON *L, const cJSON *pps,
                                     const cJSON *first, const cJSON *described)
{
    static const char *const lkeys[] = {"name", "recipe", "inputs", "paths", NULL};
    static const char *const ikeys[] = {"source", "shape", "dtype", NULL};
    static const char *const pkeys[] = {"path", "shape", "contraction", "padded_contraction",
                                        "rht", "sqnr_db", "sqnr_status", "eta", "alpha_a",
                                        "alpha_b", "alpha_product", "operands", NULL};
    static const char *const okeys[] = {"name", "role", "transposed", "format", "scale",
                                        "block", "weight_2d", "rht", "rounding", "sqnr_db",
                                        "sqnr_status", "nmse", "alpha", "delta", "tensor_amax",
                                        NULL};
    const cJSON *cfg = get(pt->doc, "config"), *in = get(L, "inputs");
    const bool named = gemm_named_operands(pt);
    if (!keys_exactly(L, lkeys, NULL)) return "layer keys";
    if (!cJSON_IsString(get(L, "recipe")) ||
        !same_json(get(L, "recipe"), get(cfg, "recipe")))
        return "recipe";
    /* the operand shapes: x M x K, w N x K, dy M x N, as the run reads M, N, K */
    const cJSON *sx = get(get(in, "x"), "shape"), *sw = get(get(in, "w"), "shape"),
                *sd = get(get(in, "dy"), "shape");
    const int64_t m = dim_of(cJSON_GetArrayItem(sx ? sx : sd, 0));
    const int64_t k = dim_of(cJSON_GetArrayItem(sx ? sx : sw, 1));
    const int64_t nn = dim_of(cJSON_GetArrayItem(sw ? sw : sd, sw ? 0 : 1));
    if (!cJSON_IsObject(in) || cJSON_GetArraySize(in) < 1) return "inputs";
    const cJSON *t;
    unsigned have = 0, need = 0; /* the tensors given as inputs, and those the paths read */
    cJSON_ArrayForEach(t, in)
    {
        int ti = -1;
        for (int q = FP4_GEMM_X; q <= FP4_GEMM_DY; q++)
            if (t->string && !strcmp(t->string, fp4_gemm_tensor_name((fp4_gemm_tensor)q))) ti = q;
        if (ti < 0 || !keys_exactly(t, ikeys, NULL)) return "inputs";
        have |= 1u << ti;
        const cJSON *src = get(t, "source"), *dt = get(t, "dtype"), *e, *ln = get(L, "name");
        bool read = false; /* "FILE:DATASET" of a file every share fingerprinted */
        cJSON_ArrayForEach(e, get(pt->shard, "fingerprint"))
        {
            const cJSON *f = get(e, "file");
            size_t fl = cJSON_IsString(f) ? strlen(f->valuestring) : 0;
            read |= fl && cJSON_IsString(src) && !strncmp(src->valuestring, f->valuestring, fl) &&
                    src->valuestring[fl] == ':' && cJSON_IsString(ln) &&
                    gemm_dataset_ok(ln->valuestring, t->string, src->valuestring + fl + 1, named);
        }
        if (!read) return "inputs[].source";
        if (!cJSON_IsString(dt) || !dtype_read(dt->valuestring)) return "inputs[].dtype";
        const int64_t d0 = ti == FP4_GEMM_W ? nn : m, d1 = ti == FP4_GEMM_DY ? nn : k;
        if (m < 0 || nn < 0 || k < 0 || !is_shape2(get(t, "shape"), d0, d1))
            return "inputs[].shape";
    }
    cJSON_ArrayForEach(t, in) /* as described before any layer was read (shard.inputs) */
    {
        const cJSON *was = get(described, t->string);
        if (!was || !same_dims(get(t, "shape"), get(was, "shape")))
            return "inputs[].shape (shard.inputs)";
        if (strcmp(get(t, "dtype")->valuestring, get(was, "dtype")->valuestring))
            return "inputs[].dtype (shard.inputs)";
    }
    const cJSON *paths = get(L, "paths"), *y;
    int j = -1;
    cJSON_ArrayForEach(y, paths)
    {
        fp4_gemm_path path;
        const cJSON *pn = get(y, "path");
        j++;
        if (!keys_exactly(y, pkeys, NULL) || !cJSON_IsString(pn) ||
            fp4_gemm_path_parse(pn->valuestring, &path) != FP4_OK)
            return "paths[] keys";
        fp4_gemm_path_shape sh;
        fp4_gemm_path_shape_of(path, m, nn, k, &sh);
        need |= 1u << sh.a | 1u << sh.b;
        if (!is_shape2(get(y, "shape"), sh.rows, sh.cols)) return "paths[].shape";
        if (dim_of(get(y, "contraction")) != sh.contraction) return "paths[].contraction";
        if (!rht_matches(get(y, "rht"), cfg, pn->valuestring)) return "paths[].rht";
        const cJSON *ops = get(y, "operands"), *fy = NULL, *f;
        cJSON_ArrayForEach(f, first)
            if (same_json(get(f, "path"), pn)) fy = f;
        for (int q = 0; q < 2; q++) {
            const cJSON *op = cJSON_GetArrayItem(ops, q), *nm = get(op, "name");
            const fp4_gemm_tensor tt = q ? sh.b : sh.a;
            const char *tn = fp4_gemm_tensor_name(tt);
            const cJSON *rnd = get(op, "rounding");
            const bool sr = cJSON_IsString(rnd) && !strcmp(rnd->valuestring, "sr");
            if (!keys_exactly(op, okeys, sr ? "sr_stream" : NULL)) return "operands[] keys";
            if (!cJSON_IsString(nm) || strcmp(nm->valuestring, tn) ||
                cJSON_IsTrue(get(op, "transposed")) != (q ? sh.b_transposed : sh.a_transposed) ||
                !cJSON_IsBool(get(op, "transposed")))
                return "operands[].name, transposed";
            if (!same_json(get(op, "format"), cJSON_GetArrayItem(get(cfg, "formats"), 0)) ||
                cJSON_GetArraySize(get(cfg, "formats")) != 1)
                return "operands[].format";
            if (!same_json(get(op, "scale"), get(cfg, "scale")))
                return "operands[].scale";
            if (!same_num(get(op, "block"), get(cfg, "block")) || dim_of(get(op, "block")) < 0)
                return "operands[].block";
            if (!cJSON_IsBool(get(op, "weight_2d"))) return "operands[].weight_2d";
            if (!same_json(get(op, "rht"), get(y, "rht"))) return "operands[].rht";
            if (!same_json(rnd, get(get(cfg, "rounding"), tn)))
                return "operands[].rounding";
            if (sr) {
                const cJSON *ss = get(op, "sr_stream");
                const double want =
                    (double)(FP4_GEMM_STREAM_BASE + 4u * (uint32_t)path + (uint32_t)tt);
                if (!cJSON_IsNumber(ss) || ss->valuedouble != want) return "operands[].sr_stream";
            }
            /* SQNR, NMSE, alpha, delta and amax from the operand's exact sums
             * (shard.partials[].paths[].operands), by the run's fp4_metrics_finish */
            const cJSON *xo = cJSON_GetArrayItem(get(cJSON_GetArrayItem(pps, j), "operands"), q);
            const cJSON *xs = get(xo, "sums");
            double v[4];
            for (int w = 0; w < 4; w++) {
                const cJSON *h = w < 3 ? cJSON_GetArrayItem(xs, w) : get(xo, "tensor_amax");
                char *end = NULL;
                v[w] = cJSON_IsString(h) ? strtod(h->valuestring, &end) : 0;
                if (!end || end == h->valuestring || *end || cJSON_GetArraySize(xs) != 3 ||
                    cJSON_GetArraySize(xo) != 2)
                    return "shard.partials operands sums";
            }
            fp4_metrics mt;
            memset(&mt, 0, sizeof mt);
            mt.sum_x2 = v[0], mt.sum_err2 = v[1], mt.sum_xqx = v[2];
            mt.tensor_amax = (float)v[3];
            if ((double)mt.tensor_amax != v[3] && !isnan(v[3]))
                return "shard.partials operands sums";
            fp4_metrics_finish(&mt);
            const cJSON *st = get(op, "sqnr_status");
            if (!cJSON_IsString(st) || strcmp(st->valuestring, sqnr_status_str(mt.sqnr_status)))
                return "operands[].sqnr_status";
            if (!num_matches(get(op, "sqnr_db"),
                             mt.sqnr_status == FP4_SQNR_OK ? mt.sqnr_db : (double)NAN,
                             DBL_EPSILON))
                return "operands[].sqnr_db";
            if (!num_matches(get(op, "nmse"), mt.nmse, DBL_EPSILON)) return "operands[].nmse";
            if (!num_matches(get(op, "alpha"), mt.alpha, DBL_EPSILON)) return "operands[].alpha";
            if (!num_matches(get(op, "delta"), mt.delta, DBL_EPSILON)) return "operands[].delta";
            if (!num_matches(get(op, "tensor_amax"), (double)mt.tensor_amax, DBL_EPSILON))
                return "operands[].tensor_amax";
            /* the configuration the layers before it show for the same path and operand */
            if (fy) {
                const cJSON *fo = cJSON_GetArrayItem(get(fy, "operands"), q);
                static const char *const same[] = {"weight_2d", "rht",   "rounding",
                                                   "format",    "block", "scale"};
                for (size_t w = 0; w < sizeof same / sizeof *same; w++)
                    if (!same_json(get(op, same[w]), get(fo, same[w])))
                        return "operands[] (another configuration than the first layer's)";
            }
        }
        /* the padded contraction: K up to the block, or the RHT size when larger */
        const cJSON *rh = get(y, "rht");
        int64_t g = dim_of(get(cJSON_GetArrayItem(ops, 0), "block"));
        if (cJSON_IsObject(rh) && dim_of(get(rh, "size")) > g) g = dim_of(get(rh, "size"));
        if (g < 1 || dim_of(get(y, "padded_contraction")) != (sh.contraction + g - 1) / g * g)
            return "paths[].padded_contraction";
    }
    if (have != need) return "inputs (the tensors its paths read)";
    return NULL;
}

static fp4_status merge_gemm(part *p, int n, const char *output, FILE *table,
                             fp4_merge_result *res)
{
    fp4_status st = FP4_OK;
    unit *lu = NULL, *eu = NULL;
    int nl = 0, ne = 0, argc = 0;
    fp4_gemm_layer *layers = NULL;
    cJSON *doc = cJSON_Duplicate(p[0].doc, true);
    char **argv = argv_canonical(get(p[0].doc, "argv"), output, &argc);
    if (!doc || !argv) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    if ((st = collect(p, n, "layers", "partials", &lu, &nl)) != FP4_OK) goto out;
    if ((st = collect(p, n, "errors", "errors", &eu, &ne)) != FP4_OK) goto out;
    if ((st = check_units(p, n, lu, nl, eu, ne, "a layer")) != FP4_OK) goto out;
    if (nl + ne != p[0].selected) {
        st = fp4_error(FP4_ERR_INPUT, "the parts hold %d layers and %d errors, the run selected "
                                      "%d layers", nl, ne, p[0].selected);
        goto out;
    }
    for (int i = 0; i < ne; i++) { /* an errors entry names the layer at its position */
        const cJSON *t = get(eu[i].obj, "tensor");
        const cJSON *sel = cJSON_GetArrayItem(get(p[0].shard, "layers"), eu[i].index);
        if (!cJSON_IsString(t) || !cJSON_IsString(sel) || strcmp(t->valuestring, sel->valuestring)) {
            st = fp4_error(FP4_ERR_INPUT, "%s: errors entry at position %d: \"tensor\" is not "
                                          "the layer the selection lists there (shard.layers[%d]; "
                                          "edited part?)",
                           p[eu[i].part].name, eu[i].index, eu[i].index);
            goto out;
        }
    }
    if (nl == 0 && ne > 0) { /* as one process: nothing ran, no report, the first error */
        const cJSON *m = get(eu[0].obj, "message");
        st = fp4_error(FP4_ERR_INPUT, "%s", cJSON_IsString(m) ? m->valuestring : "layer failed");
        goto out;
    }
    layers = calloc((size_t)(nl ? nl : 1), sizeof *layers);
    if (!layers) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    /* the exact per-layer sums the pooled summary reads, each layer checked against them */
    const cJSON *selnames = get(p[0].shard, "layers");
    for (int i = 0; i < nl; i++) {
        if ((st = gemm_layer_from_json(&p[lu[i].part], &lu[i], selnames, &layers[i])) != FP4_OK)
            goto out;
        const char *field =
            gemm_layer_fields(&p[lu[i].part], lu[i].obj, get(lu[i].partial, "paths"),
                              i ? get(lu[0].obj, "paths") : NULL,
                              cJSON_GetArrayItem(get(p[0].shard, "inputs"), lu[i].index));
        if (field) {
            st = fp4_error(FP4_ERR_INPUT, "%s: layer %s: \"%s\" is not what the run's config, "
                                          "its inputs and shapes give (edited part?)",
                           p[lu[i].part].name, layers[i].name, field);
            goto out;
        }
    }
    unsigned paths = 0;
    const cJSON *cp = get(get(doc, "config"), "paths"), *x;
    cJSON_ArrayForEach(x, cp)
    {
        fp4_gemm_path path;
        if (cJSON_IsString(x) && fp4_gemm_path_parse(x->valuestring, &path) == FP4_OK)
            paths |= 1u << path;
    }
    fp4_run_config o;
    fp4_run_config_default(&o, "e2m1", FP4_RHT_OFF);
    o.layers = get_int(get(doc, "config"), "layers", 0);
    /* the verdict as one process ranks it: its recipe and --rank-by, as the parts say */
    const cJSON *vd = get(doc, "verdict"), *rb = get(vd, "rank_by");
    fp4_gemm_config gc;
    fp4_gemm_config_default(&gc);
    const cJSON *rc = get(get(doc, "config"), "recipe");
    if (cJSON_IsString(rc) && fp4_gemm_recipe_parse(rc->valuestring, &gc.recipe) != FP4_OK)
        fp4_error_clear();
    for (int r = FP4_RANK_GAP; r < FP4_RANK_COUNT; r++)
        if (cJSON_IsString(rb) && !strcmp(rb->valuestring, fp4_rank_by_name((fp4_rank_by)r)))
            o.rank_by = (fp4_rank_by)r;
    fp4_gemm_run run = {.config = &o, .gc = &gc, .paths = paths, .layers = layers, .nlayers = nl};
    cJSON *summary = fp4_report_gemm_summary(&run);
    if (vd) {
        cJSON *nv = fp4_report_gemm_verdict(&run);
        if (!nv) {
            cJSON_Delete(summary);
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        if (!put(doc, "verdict", nv)) {
            cJSON_Delete(summary);
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
    }
    cJSON *la = cJSON_CreateArray(), *dsets = cJSON_CreateArray();
    if (!summary || !la || !dsets) {
        cJSON_Delete(summary), cJSON_Delete(la), cJSON_Delete(dsets);
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (int i = 0; i < nl; i++) {
        cJSON_AddItemToArray(la, cJSON_Duplicate(lu[i].obj, true));
        const cJSON *in = get(lu[i].obj, "inputs"), *t;
        cJSON_ArrayForEach(t, in)
        {
            const cJSON *src = get(t, "source");
            if (cJSON_IsString(src)) cJSON_AddItemToArray(dsets, cJSON_CreateString(src->valuestring));
        }
    }
    /* input.file as the run writes it (report/gemm.c): the file of the first layer's first
     * input ("FILE:DATASET" up to its last ":/", checked by gemm_layer_fields), never a
     * part's word for it */
    char *file = NULL;
    if (dsets->child && cJSON_IsString(dsets->child)) {
        const char *s = dsets->child->valuestring, *sep = NULL;
        for (const char *q = strstr(s, ":/"); q; q = strstr(q + 1, ":/")) sep = q;
        const size_t len = sep ? (size_t)(sep - s) : strlen(s);
        if ((file = malloc(len + 1))) memcpy(file, s, len), file[len] = '\0';
    }
    cJSON *fs = cJSON_CreateString(file ? file : "");
    if (dsets->child && !file) cJSON_Delete(fs), fs = NULL; /* out of memory */
    free(file);
    /* each key there (parts_keys); put frees what it cannot place */
    cJSON *in = cJSON_GetObjectItemCaseSensitive(doc, "input");
    int lost = !put(in, "file", fs);
    lost += !put(in, "datasets", dsets);
    lost += !put(doc, "layers", la);
    lost += !put(doc, "summary", summary);
    if (lost) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    if ((st = put_common(doc, p, argv, argc, eu, ne, res)) != FP4_OK) goto out;
    cJSON *tm = cJSON_GetObjectItemCaseSensitive(doc, "timing");
    if (!put(tm, "seconds", cJSON_CreateNumber(part_seconds_max(p, n))) ||
        !put(tm, "bytes_read", cJSON_CreateNumber(part_bytes_sum(p, n)))) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "shard");
    if ((st = put_text(doc, res)) != FP4_OK) goto out;
    snprintf(res->command, sizeof res->command, "gemm");
    res->nunits = nl;
    if (table) fp4_report_gemm_table(table, &run); /* the table the single run prints */
out:
    for (int i = 0; layers && i < nl; i++) free(layers[i].name);
    free(layers);
    free(lu);
    free(eu);
    argv_free(argv);
    cJSON_Delete(doc);
    return st;
}

/* --------------------------------------------------------------- audit */

/* A part's [xx, ee, xq] hex floats (shard.tensors[k].export / .requant) into s. */
static bool audit_sums_of(const cJSON *arr, int64_t n, fp4_audit_sums *s)
{
    double v[3];
    if (cJSON_GetArraySize(arr) != 3) return false;
    for (int k = 0; k < 3; k++) {
        const cJSON *h = cJSON_GetArrayItem(arr, k);
        char *end = NULL;
        if (!cJSON_IsString(h) || !*h->valuestring) return false;
        v[k] = strtod(h->valuestring, &end);
        if (*end || !isfinite(v[k])) return false;
    }
    s->xx = v[0], s->ee = v[1], s->xq = v[2], s->n = n;
    return true;
}

static int64_t count_of(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble != floor(v->valuedouble))
        return -1;
    return (int64_t)v->valuedouble;
}

/* The non-amax SQNR and its status a side shows are the ones its exact non-amax sums give. */
static bool audit_nonamax_ok(const cJSON *shown, const fp4_audit_sums *na)
{
    const char *status;
    const double q = fp4_audit_sqnr(na, &status);
    const cJSON *ss = get(shown, "sqnr_nonamax_status");
    return num_matches(get(shown, "sqnr_nonamax_db"), q, 1e-13) && cJSON_IsString(ss) &&
           !strcmp(ss->valuestring, status);
}

/* The SQNR and alpha a tensor (or hypothesis) shows are the ones its exact sums give. */
static bool audit_shown_ok(const cJSON *shown, const fp4_audit_sums *s)
{
    const char *status;
    double q = fp4_audit_sqnr(s, &status), al = fp4_audit_alpha(s);
    const cJSON *sq = get(shown, "sqnr_db"), *ss = get(shown, "sqnr_status"), *a = get(shown, "alpha");
    /* the JSON shows 15 significant digits where they read back within 1e-15 */
    return num_matches(sq, q, 1e-13) && num_matches(a, al, 1e-13) && cJSON_IsString(ss) &&
           !strcmp(ss->valuestring, status);
}

typedef struct named {
    const char *name;
    int part;
} named;

static int named_cmp(const void *a, const void *b)
{
    return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

/* The names of an audit's selection (shard.names, the same in every part: same_run) against
 * the parts: each audited tensor's "name" and each errors entry's "tensor" is the name at its
 * position, no name is there twice, and no "skipped" entry is a selected tensor. FP4_ERR_INPUT
 * naming the part, the name and the position (an edited part). */
static fp4_status audit_names_check(const part *p, const unit *t, int nt, const unit *e, int ne)
{
    const int S = p[0].selected;
    const cJSON **sel = calloc((size_t)(S ? S : 1), sizeof *sel), *x;
    named *v = calloc((size_t)(S ? S : 1), sizeof *v);
    fp4_status st = FP4_OK;
    if (!sel || !v) {
        free(sel);
        free(v);
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    int k = 0;
    cJSON_ArrayForEach(x, get(p[0].shard, "names")) /* load: S non-empty strings */
        if (k < S) sel[k] = x, v[k] = (named){x->valuestring, 0}, k++;
    for (int i = 0; i < nt + ne && st == FP4_OK; i++) {
        const unit *u = i < nt ? &t[i] : &e[i - nt];
        const cJSON *nm = get(u->obj, i < nt ? "name" : "tensor");
        if (!cJSON_IsString(nm) || strcmp(nm->valuestring, sel[u->index]->valuestring))
            st = fp4_error(FP4_ERR_INPUT, "%s: %s %s at position %d, where the selection "
                                          "(shard.names) lists %s (edited part?)",
                           p[u->part].name, i < nt ? "tensor" : "errors entry for",
                           cJSON_IsString(nm) ? nm->valuestring : "(no name)", u->index,
                           sel[u->index]->valuestring);
    }
    if (st == FP4_OK) qsort(v, (size_t)S, sizeof *v, named_cmp);
    for (int i = 1; i < S && st == FP4_OK; i++)
        if (!strcmp(v[i].name, v[i - 1].name))
            st = fp4_error(FP4_ERR_INPUT, "%s: shard.names lists %s twice (edited part?)",
                           p[0].name, v[i].name);
    cJSON_ArrayForEach(x, get(p[0].doc, "skipped"))
    {
        const cJSON *nm = get(x, "name");
        named key = {cJSON_IsString(nm) ? nm->valuestring : "", 0};
        if (st != FP4_OK) break;
        if (!cJSON_IsString(nm))
            st = fp4_error(FP4_ERR_INPUT, "%s: a skipped entry without a name", p[0].name);
        else if (bsearch(&key, v, (size_t)S, sizeof *v, named_cmp))
            st = fp4_error(FP4_ERR_INPUT, "%s: skipped entry %s is a selected tensor "
                                          "(shard.names; edited part?)",
                           p[0].name, key.name);
    }
    free(sel);
    free(v);
    return st;
}

/* The sum of an array of `len` whole counts (each at most 2^53), or -1 when it is not one. */
static int64_t counts_sum(const cJSON *arr, int len)
{
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != len) return -1;
    double sum = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, arr)
    {
        if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 9007199254740992.0 ||
            v->valuedouble != floor(v->valuedouble))
            return -1;
        sum += v->valuedouble;
    }
    return sum <= 9007199254740992.0 ? (int64_t)sum : -1;
}

/* The producer named `s` (fp4_qproducer_name), or -1. */
static int producer_of(const char *s)
{
    for (int p = FP4_QP_MODELOPT; p <= FP4_QP_GGUF; p++)
        if (!strcmp(s, fp4_qproducer_name((fp4_qproducer)p))) return p;
    return -1;
}

static double frac_of(int64_t a, int64_t b) { return b > 0 ? (double)a / (double)b : NAN; }

static bool is_num_or_null(const cJSON *v) { return cJSON_IsNumber(v) || cJSON_IsNull(v); }

/* A hypotheses entry's SQNR as the run computed it: sqnr_db a number exactly when the status
 * is "ok" (cJSON prints a double so that it reads back to the same bits). */
static bool hyp_entry(const cJSON *h, const char **label, double *v, const char **status)
{
    static const char *const st[] = {"ok", "exact", "zero_signal", "nonfinite"};
    const cJSON *l = get(h, "layout"), *q = get(h, "sqnr_db"), *s = get(h, "sqnr_status");
    if (!cJSON_IsString(l) || !cJSON_IsString(s)) return false;
    *status = NULL;
    for (size_t k = 0; k < sizeof st / sizeof *st; k++)
        if (!strcmp(s->valuestring, st[k])) *status = st[k];
    if (!*status || (!strcmp(*status, "ok") ? !cJSON_IsNumber(q) || !isfinite(q->valuedouble)
                                            : !cJSON_IsNull(q)))
        return false;
    *label = l->valuestring;
    *v = cJSON_IsNumber(q) ? q->valuedouble : NAN;
    return true;
}

/* A side (0 export, 1 requant) of an audit tensor: its histogram of whole counts
 * sums to `elements` (read into h) and its bucket use is the one the histogram gives
 * (fp4_audit_bucket_use). NULL when so, else the field that is not. */
static const char *audit_buckets_check(const cJSON *o, int side, int64_t elements, int64_t h[16])
{
    static const char *const field[2][4] = {
        {"export.histogram", "export.bucket_ratio_15", "export.bucket_ratio_8", "export.max_frac"},
        {"requant.histogram", "requant.bucket_ratio_15", "requant.bucket_ratio_8",
         "requant.max_frac"}};
    const cJSON *sd = get(o, side ? "requant" : "export"), *arr = get(sd, "histogram");
    if (counts_sum(arr, 16) != elements) return field[side][0];
    for (int c = 0; c < 16; c++) h[c] = (int64_t)cJSON_GetArrayItem(arr, c)->valuedouble;
    const fp4_audit_buckets b = fp4_audit_bucket_use(h);
    if (!num_matches(get(sd, "bucket_ratio_15"), b.b15, DBL_EPSILON)) return field[side][1];
    if (!num_matches(get(sd, "bucket_ratio_8"), b.b8, DBL_EPSILON)) return field[side][2];
    if (!num_matches(get(sd, "max_frac"), b.max_frac, DBL_EPSILON)) return field[side][3];
    return NULL;
}

/* One audit tensor o of a part against its exact state x (shard.tensors[k]: the sums e and r,
 * the counts): every number o shows that the state decides is the one it gives (SPEC §11) —
 * SQNR, alpha and status of export and requant, the counts and their fractions, the histograms
 * (export and requant, read into eh and rh) summing to the elements and their bucket use what
 * they give, the scale-byte differences summing to the counts (the 0 bin the matches), the shape and
 * block holding the elements, the layout verdict and the pool flag as the run decides them
 * (fp4_audit_sane from the SQNRs, the fitting hypothesis the sane one of the highest SQNR), the
 * per-tensor scale's match, the re-export flag (fp4_audit_reexport; null when not read as
 * declared). NULL when all agree, else the field that does not. */
static const char *audit_tensor_check(const cJSON *o, const cJSON *x, const fp4_audit_sums e[2],
                                      const fp4_audit_sums r[2], int64_t elements, int64_t nonnear,
                                      int64_t match, int64_t bytes, int64_t eh[16], int64_t rh[16])
{
    if (!audit_shown_ok(get(o, "export"), &e[0])) return "export";
    if (!audit_shown_ok(get(o, "requant"), &r[0])) return "requant";
    if (!audit_nonamax_ok(get(o, "export"), &e[1])) return "export.sqnr_nonamax_db";
    if (!audit_nonamax_ok(get(o, "requant"), &r[1])) return "requant.sqnr_nonamax_db";
    if (count_of(o, "elements") != elements) return "elements";
    if (count_of(o, "nonnearest") != nonnear || nonnear > elements) return "nonnearest";
    if (count_of(o, "scale_bytes") != bytes) return "scale_bytes";
    if (match > bytes) return "scale_match";
    if (!num_matches(get(o, "nonnearest_frac"), frac_of(nonnear, elements), DBL_EPSILON))
        return "nonnearest_frac";
    if (!num_matches(get(o, "scale_match_frac"), frac_of(match, bytes), DBL_EPSILON))
        return "scale_match_frac";
    const char *bf = audit_buckets_check(o, 0, elements, eh);
    if (bf || (bf = audit_buckets_check(o, 1, elements, rh))) return bf;
    const cJSON *df = get(o, "scale_byte_diff");
    if (counts_sum(df, FP4_AUDIT_DIFF_BINS) != bytes ||
        cJSON_GetArrayItem(df, FP4_AUDIT_DIFF_BINS / 2)->valuedouble != (double)match)
        return "scale_byte_diff";
    /* the shape holds the elements, one scale byte per block */
    const cJSON *sh = get(o, "shape"), *d, *qo = get(o, "quant");
    double prod = 1;
    if (!cJSON_IsArray(sh) || cJSON_GetArraySize(sh) < 1 || cJSON_GetArraySize(sh) > FP4_MAX_RANK)
        return "shape";
    cJSON_ArrayForEach(d, sh)
    {
        if (!cJSON_IsNumber(d) || !(d->valuedouble >= 1) || d->valuedouble != floor(d->valuedouble))
            return "shape";
        prod *= d->valuedouble;
    }
    if (prod != (double)elements) return "shape";
    const cJSON *fmt = get(qo, "format");
    if (!cJSON_IsString(fmt) || !cJSON_IsString(get(qo, "producer")) ||
        !cJSON_IsString(get(qo, "layout")) || count_of(qo, "block") < 1 ||
        (double)bytes * (double)count_of(qo, "block") != (double)elements)
        return "quant";
    const int producer = producer_of(get(qo, "producer")->valuestring);
    if (producer < 0) return "quant.producer";
    const bool nv = !strcmp(fmt->valuestring, "nvfp4");
    if (!nv && strcmp(fmt->valuestring, "mxfp4")) return "quant.format";
    /* the special bytes the format has: E4M3 NaN bytes (NVFP4, not GGUF's), E8M0 0xFF (MXFP4) */
    const cJSON *sp = get(o, "special_scale_bytes");
    int64_t ff = count_of(sp, "e8m0_ff"), nan8 = count_of(sp, "e4m3_nan");
    if (ff < 0 || nan8 < 0 || ff > bytes || nan8 > bytes || (nan8 > 0 && (!nv || producer == FP4_QP_GGUF)) ||
        (ff > 0 && nv))
        return "special_scale_bytes";
    /* such a byte decodes its block to NaN (E4M3 NaN; E8M0 0xFF is 2^128, inf, and 0 x inf
     * NaN) outside GGUF's blocks, and the export's sums, finite here, would not be */
    if (producer != FP4_QP_GGUF && isfinite(e->ee) && (nan8 > 0 || ff > 0))
        return "special_scale_bytes";
    /* the layout is one the reader writes for the format and producer */
    bool swizzled = false;
    if (!fp4_qlayout_possible(nv ? FP4_QF_NVFP4 : FP4_QF_MXFP4, (fp4_qproducer)producer,
                              get(qo, "layout")->valuestring, &swizzled))
        return "quant.layout";
    /* the other MX rule named as the one the stored bytes follow: a known name, never the
     * declared producer's own rule, only for MXFP4 when the declared rule misses a byte */
    const cJSON *rf = get(o, "scale_rule_fit");
    if (!cJSON_IsNull(rf)) {
        int rule = -1;
        for (int m = 0; cJSON_IsString(rf) && m < FP4_AUDIT_MX_RULES; m++)
            if (!strcmp(rf->valuestring, fp4_audit_mx_rule_name(m))) rule = m;
        if (rule < 0 || nv || match >= bytes ||
            rule == fp4_audit_mx_rule_of((fp4_qproducer)producer))
            return "scale_rule_fit";
    }
    /* blocks of an all-zero source: all of them when the source's energy is 0, not all when
     * it is finite and positive */
    int64_t zb = count_of(o, "zero_blocks");
    if (zb < 0 || zb > bytes || zb != count_of(x, "zero_blocks") ||
        (e->n > 0 && e->xx == 0 && zb != bytes) ||
        (bytes > 0 && zb == bytes && isfinite(e->xx) && e->xx > 0))
        return "zero_blocks";
    /* the per-tensor scale (NVFP4 only): match is stored == rule */
    const cJSON *g = get(o, "global_scale");
    if (nv) {
        const cJSON *gs = get(g, "stored"), *gr = get(g, "rule"), *gm = get(g, "match");
        const cJSON *gg = get(g, "group"), *gsh = get(g, "group_shared");
        const cJSON *ga = get(g, "group_amax"), *nm = get(o, "name");
        if (!cJSON_IsObject(g) || !is_num_or_null(gs) || !is_num_or_null(gr) ||
            !cJSON_IsBool(gm) || !is_num_or_null(ga) ||
            !(cJSON_IsString(gg) || cJSON_IsNull(gg)) || !(cJSON_IsBool(gsh) || cJSON_IsNull(gsh)))
            return "global_scale";
        /* the group from the name; the rule from the group's amax, as the run computes it */
        if (!cJSON_IsString(nm)) return "name";
        char key[8], kind[32];
        fp4_audit_group_key(nm->valuestring, key, sizeof key, kind, sizeof kind);
        if (kind[0] ? !cJSON_IsString(gg) || strcmp(gg->valuestring, kind) : !cJSON_IsNull(gg))
            return "global_scale.group";
        if (!kind[0] && !cJSON_IsNull(gsh)) return "global_scale.group_shared";
        if (cJSON_IsNumber(ga)) {
            const float am = (float)ga->valuedouble;
            const float rule = fp4_audit_global_rule((fp4_qproducer)producer, am);
            /* fp32 values, as fp32: cJSON prints 15 significant digits where they read back
             * within a relative DBL_EPSILON, not always to the float's own double */
            if (!(am >= 0) || !num_matches(ga, (double)am, DBL_EPSILON) ||
                (isfinite(rule) ? !cJSON_IsNumber(gr) || (float)gr->valuedouble != rule ||
                                      !num_matches(gr, (double)rule, DBL_EPSILON)
                                : !cJSON_IsNull(gr)))
                return "global_scale.rule";
        }
        if (cJSON_IsNumber(gs) && cJSON_IsNumber(gr) &&
            cJSON_IsTrue(gm) != (gs->valuedouble == gr->valuedouble))
            return "global_scale.match";
        if (cJSON_IsTrue(gm) && (cJSON_IsNull(gs) || cJSON_IsNull(gr)) &&
            !(cJSON_IsNull(gs) && cJSON_IsNull(gr)))
            return "global_scale.match";
    } else if (!cJSON_IsNull(g)) {
        return "global_scale";
    }
    /* where requant's per-tensor scale comes from: the format, producer and name decide it */
    {
        const cJSON *gf = get(get(o, "requant"), "global_scale_from"), *nm = get(o, "name");
        char key[8], kind[32] = "";
        if (cJSON_IsString(nm))
            fp4_audit_group_key(nm->valuestring, key, sizeof key, kind, sizeof kind);
        const char *want = !nv                      ? NULL
                           : producer == FP4_QP_GGUF ? "none"
                           : kind[0]                 ? "group amax"
                                                     : "tensor amax";
        if (want ? !cJSON_IsString(gf) || strcmp(gf->valuestring, want) : !cJSON_IsNull(gf))
            return "requant.global_scale_from";
    }
    /* the layout verdict, decided as the run decides it (run/audit.c) */
    const cJSON *lo = get(o, "layout_check"), *fits = get(lo, "fits"), *asd = get(lo, "as_declared");
    const cJSON *hy = get(lo, "hypotheses"), *pooled = get(x, "pooled");
    const char *es, *rs, *label, *status;
    double eq = fp4_audit_sqnr(e, &es), rq = fp4_audit_sqnr(r, &rs), v;
    if (!cJSON_IsString(fits) || !cJSON_IsBool(asd) || !cJSON_IsArray(hy) ||
        cJSON_GetArraySize(hy) < 1 || cJSON_GetArraySize(hy) > FP4_AUDIT_NH)
        return "layout_check";
    /* each hypothesis' SQNR from its exact sums (shard.tensors[].hypotheses, in the order
     * shown; the first is as declared), its label the run's name for it in the run's order
     * ("scales flat" for the swizzle test of swizzled scales) */
    const cJSON *hx = get(x, "hypotheses");
    if (cJSON_GetArraySize(hx) != cJSON_GetArraySize(hy)) return "layout_check.hypotheses";
    fp4_audit_sums hsum[FP4_AUDIT_NH];
    int last = -1;
    for (int h = 0; h < cJSON_GetArraySize(hy); h++) {
        const cJSON *hh = cJSON_GetArrayItem(hy, h);
        const char *hst;
        if (!hyp_entry(hh, &label, &v, &status) ||
            !audit_sums_of(cJSON_GetArrayItem(hx, h), elements, &hsum[h]))
            return "layout_check.hypotheses";
        const double hq = fp4_audit_sqnr(&hsum[h], &hst);
        if (strcmp(status, hst) || !num_matches(get(hh, "sqnr_db"), hq, 1e-13))
            return "layout_check.hypotheses";
        int k = last + 1;
        while (k < FP4_AUDIT_NH &&
               strcmp(label, k == FP4_AUDIT_H_SWIZZLE && swizzled
                                 ? "scales flat"
                                 : fp4_audit_hypothesis_name(k)))
            k++;
        if (k >= FP4_AUDIT_NH || (h == 0 && k != FP4_AUDIT_H_DECLARED))
            return "layout_check.hypotheses[].layout";
        last = k;
    }
    hyp_entry(cJSON_GetArrayItem(hy, 0), &label, &v, &status);
    const bool declared = fp4_audit_sane(v, status, rq);
    const char *fit = declared ? label : NULL, *fit_status = status;
    const cJSON *fit_entry = cJSON_GetArrayItem(hy, 0);
    int fit_h = 0;
    double best = -INFINITY;
    for (int h = 1; h < cJSON_GetArraySize(hy); h++) {
        const cJSON *hh = cJSON_GetArrayItem(hy, h);
        hyp_entry(hh, &label, &v, &status);
        if (!declared && fp4_audit_sane(v, status, rq) && !(v <= best)) {
            best = isnan(v) ? INFINITY : v;
            fit = label;
            fit_status = status;
            fit_entry = hh;
            fit_h = h;
        }
    }
    if (!fit || strcmp(fits->valuestring, fit)) return "layout_check.fits";
    /* the export's numbers are those of the reading that fits (SPEC §11) */
    if (strcmp(fit_status, es) || !num_matches(get(fit_entry, "sqnr_db"), eq, 1e-13) ||
        !(same_double(hsum[fit_h].xx, e->xx) && same_double(hsum[fit_h].ee, e->ee) &&
          same_double(hsum[fit_h].xq, e->xq)))
        return "layout_check.hypotheses";
    if (cJSON_IsTrue(asd) != declared) return "layout_check.as_declared";
    if (cJSON_IsTrue(pooled) != declared) return "shard.tensors[].pooled";
    /* the re-export flag: the rule on the sums and counts, for a tensor read as declared */
    const cJSON *rx = get(o, "reexport");
    if (declared ? !cJSON_IsBool(rx) ||
                       cJSON_IsTrue(rx) != fp4_audit_reexport(e, r, nonnear, elements)
                 : !cJSON_IsNull(rx))
        return "reexport";
    return NULL;
}

/* Whether two shown numbers (or nulls) are the same. */
static bool same_num(const cJSON *a, const cJSON *b)
{
    return cJSON_IsNull(a) ? cJSON_IsNull(b)
                           : cJSON_IsNumber(a) && cJSON_IsNumber(b) && a->valuedouble == b->valuedouble;
}

/* The fused groups across the merged tensors (SPEC §11): the members of a group (NVFP4, the
 * same fp4_audit_group_key; a group is always in one share) show one group_amax, and each
 * shows group_shared as the run decides it from their stored per-tensor scales (more than one
 * member: whether all are equal; else null). A stored scale shown as null (not finite) leaves
 * group_shared unchecked for its group. */
static fp4_status audit_groups_check(const part *p, const unit *tu, int nt)
{
    enum { KEY = 1200 };
    char *keys = malloc((size_t)(nt ? nt : 1) * KEY);
    if (!keys) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    for (int i = 0; i < nt; i++) {
        char kind[32];
        const cJSON *fmt = get(get(tu[i].obj, "quant"), "format");
        fp4_audit_group_key(get(tu[i].obj, "name")->valuestring, keys + (size_t)i * KEY, KEY,
                            kind, sizeof kind);
        if (!kind[0] || strcmp(fmt->valuestring, "nvfp4")) keys[(size_t)i * KEY] = '\0';
    }
    fp4_status st = FP4_OK;
    for (int i = 0; i < nt && st == FP4_OK; i++) {
        const char *ki = keys + (size_t)i * KEY;
        if (!ki[0]) continue;
        const cJSON *gi = get(tu[i].obj, "global_scale");
        int members = 0;
        bool same = true, unknown = false;
        const char *field = NULL;
        for (int j = 0; j < nt; j++) {
            if (strcmp(keys + (size_t)j * KEY, ki)) continue;
            const cJSON *gj = get(tu[j].obj, "global_scale");
            members++;
            if (!same_num(get(gi, "group_amax"), get(gj, "group_amax"))) field = "group_amax";
            const cJSON *a = get(gi, "stored"), *b = get(gj, "stored");
            if (cJSON_IsNull(a) || cJSON_IsNull(b))
                unknown = true;
            else
                same &= a->valuedouble == b->valuedouble;
        }
        const cJSON *gsh = get(gi, "group_shared");
        if (!field && !unknown &&
            (members > 1 ? !cJSON_IsBool(gsh) || cJSON_IsTrue(gsh) != same : !cJSON_IsNull(gsh)))
            field = "group_shared";
        if (field)
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: global_scale.%s is not what its fused group's "
                                          "members give (edited part?)",
                           p[tu[i].part].name, get(tu[i].obj, "name")->valuestring, field);
    }
    free(keys);
    return st;
}

/* Audit parts (SPEC §11): tensors and errors in selection order, the pooled line from the
 * parts' exact sums in that order (the single run's own arithmetic, so bit for bit), every
 * tensor's export and requant checked against its sums. */
static fp4_status merge_audit(part *p, int n, const char *output, FILE *table,
                              fp4_merge_result *res)
{
    fp4_status st = FP4_OK;
    unit *tu = NULL, *eu = NULL;
    int nt = 0, ne = 0, argc = 0;
    cJSON *doc = cJSON_Duplicate(p[0].doc, true);
    char **argv = argv_canonical(get(p[0].doc, "argv"), output, &argc);
    if (!doc || !argv) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    if ((st = collect(p, n, "tensors", "tensors", &tu, &nt)) != FP4_OK) goto out;
    if ((st = collect(p, n, "errors", "errors", &eu, &ne)) != FP4_OK) goto out;
    if ((st = check_units(p, n, tu, nt, eu, ne, "a tensor")) != FP4_OK) goto out;
    if (nt + ne != p[0].selected) {
        st = fp4_error(FP4_ERR_INPUT, "the parts hold %d tensors and %d errors, the run selected "
                                      "%d quantized tensors", nt, ne, p[0].selected);
        goto out;
    }
    if ((st = audit_names_check(p, tu, nt, eu, ne)) != FP4_OK) goto out;
    fp4_audit_sums pe[2] = {{0}}, pr[2] = {{0}};
    int64_t nn = 0, el = 0, sm = 0, sb = 0, peh[16] = {0}, prh[16] = {0};
    int np = 0;
    for (int i = 0; i < nt; i++) {
        const cJSON *x = tu[i].partial, *o = tu[i].obj;
        const cJSON *nm = get(o, "name");
        fp4_audit_sums e[2], r[2];
        int64_t elements = count_of(x, "elements"), nonnear = count_of(x, "nonnearest");
        int64_t match = count_of(x, "scale_match"), bytes = count_of(x, "scale_bytes");
        const cJSON *pooled = get(x, "pooled");
        if (elements < 0 || nonnear < 0 || match < 0 || bytes < 0 || !cJSON_IsBool(pooled) ||
            !audit_sums_of(get(x, "export"), elements, &e[0]) ||
            !audit_sums_of(get(x, "requant"), elements, &r[0]) ||
            !audit_sums_of(get(x, "export_nonamax"), elements - bytes, &e[1]) ||
            !audit_sums_of(get(x, "requant_nonamax"), elements - bytes, &r[1])) {
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: malformed exact partial sums",
                           p[tu[i].part].name, cJSON_IsString(nm) ? nm->valuestring : "?");
            goto out;
        }
        int64_t eh[16], rh[16];
        const char *field =
            audit_tensor_check(o, x, e, r, elements, nonnear, match, bytes, eh, rh);
        if (field || !cJSON_IsString(nm) || !*nm->valuestring) {
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: the numbers shown are not what its exact sums "
                                          "give (\"%s\"; edited part?)",
                           p[tu[i].part].name, cJSON_IsString(nm) ? nm->valuestring : "?",
                           field ? field : "name");
            goto out;
        }
        /* the shape described at its position before the split (shard.shapes, the same in
         * every part): the sums count elements only, which a shape's dims permuted keep */
        const cJSON *want = cJSON_GetArrayItem(get(p[0].shard, "shapes"), tu[i].index);
        if (!same_dims(get(o, "shape"), want)) {
            char shown[160], listed[160];
            value_text(get(o, "shape"), shown, sizeof shown);
            value_text(want, listed, sizeof listed);
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: \"shape\" %s is not the one the selection "
                                          "lists at its position (shard.shapes: %s; edited "
                                          "part?)",
                           p[tu[i].part].name, nm->valuestring, shown, listed);
            goto out;
        }
        if (cJSON_IsTrue(pooled)) { /* as the run pools: in selection order */
            for (int k = 0; k < 2; k++) {
                pe[k].xx += e[k].xx, pe[k].ee += e[k].ee, pe[k].xq += e[k].xq, pe[k].n += e[k].n;
                pr[k].xx += r[k].xx, pr[k].ee += r[k].ee, pr[k].xq += r[k].xq, pr[k].n += r[k].n;
            }
            nn += nonnear, el += elements, sm += match, sb += bytes;
            for (int c = 0; c < 16; c++) peh[c] += eh[c], prh[c] += rh[c];
            np++;
        }
    }
    if ((st = audit_groups_check(p, tu, nt)) != FP4_OK) goto out;
    cJSON *po = fp4_report_audit_pooled_json(np, pe, pr, peh, prh, nn, el, sm, sb);
    cJSON *ta = cJSON_CreateArray();
    if (!po || !ta) {
        cJSON_Delete(po), cJSON_Delete(ta);
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (int i = 0; i < nt; i++) cJSON_AddItemToArray(ta, cJSON_Duplicate(tu[i].obj, true));
    /* each key there (parts_keys); put frees what it cannot place */
    int lost = !put(doc, "tensors", ta);
    lost += !put(doc, "pooled", po);
    if (lost) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    if ((st = put_common(doc, p, argv, argc, eu, ne, res)) != FP4_OK) goto out;
    if (!put(cJSON_GetObjectItemCaseSensitive(doc, "timing"), "seconds",
             cJSON_CreateNumber(part_seconds_max(p, n)))) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "shard");
    /* parts run on different devices (the numbers are the same on either): "cpu+cuda" */
    for (int i = 0; i < n; i++) {
        const cJSON *d = get(p[i].doc, "device");
        if (!cJSON_IsString(d) ||
            (strcmp(d->valuestring, "cpu") && strcmp(d->valuestring, "cuda"))) {
            st = fp4_error(FP4_ERR_INPUT, "%s: \"device\" is not one an audit runs on (cpu, "
                                          "cuda; edited part?)",
                           p[i].name);
            goto out;
        }
    }
    for (int i = 1; i < n && cJSON_IsString(get(doc, "device")); i++) {
        const cJSON *d = get(p[i].doc, "device");
        if (!same_json(d, get(doc, "device")) &&
            !cJSON_ReplaceItemInObjectCaseSensitive(doc, "device", cJSON_CreateString("cpu+cuda"))) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
    }
    fp4_json_make_valid(doc);
    if ((st = put_text(doc, res)) != FP4_OK) goto out;
    snprintf(res->command, sizeof res->command, "audit");
    res->nunits = p[0].selected;
    if (table) { /* the pooled line of the merged audit (its per-tensor table: the run's own) */
        const char *es, *rs;
        double e = fp4_audit_sqnr(&pe[0], &es), r = fp4_audit_sqnr(&pr[0], &rs);
        char et[24], rt[24];
        snprintf(et, sizeof et, "%s", es);
        if (!isnan(e)) snprintf(et, sizeof et, "%.2f dB", e);
        snprintf(rt, sizeof rt, "%s", rs);
        if (!isnan(r)) snprintf(rt, sizeof rt, "%.2f dB", r);
        fprintf(table, "audit of %d quantized tensor%s merged from %d parts: %d audited, %d "
                       "error%s\n",
                p[0].selected, p[0].selected == 1 ? "" : "s", n, nt, ne, ne == 1 ? "" : "s");
        if (np > 0)
            fprintf(table, "pooled over %d tensor%s:\n  export SQNR %s (alpha %.5f), our "
                           "requantization %s\n  non-nearest codes %.3f%%, scale bytes "
                           "matching %.3f%%\n",
                    np, np == 1 ? "" : "s", et, fp4_audit_alpha(&pe[0]), rt,
                    100.0 * frac_of(nn, el), 100.0 * frac_of(sm, sb));
        const int nsk = cJSON_GetArraySize(get(doc, "skipped"));
        if (nsk > 0)
            fprintf(table, "skipped %d tensor%s (not audited; the JSON report's "
                           "\"skipped\" lists them)\n", nsk, nsk == 1 ? "" : "s");
        fputs("(the per-tensor table: the JSON report's \"tensors\", or the audit run whole)\n",
              table);
    }
out:
    free(tu);
    free(eu);
    argv_free(argv);
    cJSON_Delete(doc);
    return st;
}

/* --------------------------------------------------------------- entry */

static bool file_add(char ***v, int *n, int *cap, const char *path)
{
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 16;
        char **nv = realloc(*v, (size_t)nc * sizeof *nv);
        if (!nv) return false;
        *v = nv, *cap = nc;
    }
    if (!((*v)[*n] = strdup(path))) return false;
    (*n)++;
    return true;
}

/* The "file" strings of the entries of array `a`. */
static bool files_of(const cJSON *a, char ***v, int *n, int *cap)
{
    const cJSON *e;
    if (!cJSON_IsArray(a)) return true;
    cJSON_ArrayForEach(e, a)
    {
        const cJSON *f = get(e, "file");
        if (cJSON_IsString(f) && f->valuestring[0] && !file_add(v, n, cap, f->valuestring))
            return false;
    }
    return true;
}

fp4_status fp4_merge_input_files(const char *const *texts, int n, char ***files, int *nfiles)
{
    char **v = NULL;
    int k = 0, cap = 0;
    bool ok = true;
    for (int i = 0; ok && i < n; i++) {
        cJSON *doc = texts[i] ? cJSON_Parse(texts[i]) : NULL;
        if (!doc) continue;
        static const char *const keys[] = {"file", "source", "quantized"}; /* input paths */
        for (size_t j = 0; ok && j < sizeof keys / sizeof *keys; j++) {
            const cJSON *f = get(get(doc, "input"), keys[j]);
            if (cJSON_IsString(f) && f->valuestring[0]) ok = file_add(&v, &k, &cap, f->valuestring);
        }
        ok = ok && files_of(get(get(doc, "provenance"), "inputs"), &v, &k, &cap) &&
             files_of(get(get(doc, "shard"), "fingerprint"), &v, &k, &cap);
        cJSON_Delete(doc);
    }
    if (!ok) {
        for (int j = 0; j < k; j++) free(v[j]);
        free(v);
        *files = NULL, *nfiles = 0;
        return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    *files = v, *nfiles = k;
    return FP4_OK;
}

fp4_status fp4_merge_reports(const char *const *texts, const char *const *names, int n,
                             const char *output, FILE *table, fp4_merge_config_fn config_of,
                             fp4_merge_result *res)
{
    memset(res, 0, sizeof *res);
    if (n < 1) return fp4_error(FP4_ERR_USAGE, "merge: no parts given");
    part *p = calloc((size_t)n, sizeof *p);
    if (!p) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    fp4_status st = load(texts, names, n, p);
    bool gemm = false, audit = false;
    if (st == FP4_OK) {
        const char *cmd = get(p[0].doc, "command")->valuestring;
        gemm = !strcmp(cmd, "gemm");
        audit = !strcmp(cmd, "audit") && p[0].audit;
        if (!gemm && !audit && strcmp(cmd, "sqnr") && strcmp(cmd, "bias") &&
            strcmp(cmd, "buckets") && strcmp(cmd, "rht"))
            st = fp4_error(FP4_ERR_INPUT, "%s: a %s report cannot be merged", p[0].name, cmd);
        else if (p[0].audit != !strcmp(cmd, "audit"))
            st = fp4_error(FP4_ERR_INPUT, "%s: a %s report with the %s schema", p[0].name, cmd,
                           p[0].audit ? "audit" : "report");
    }
    if (st == FP4_OK) st = check_parts(p, n, gemm);
    if (st == FP4_OK && (gemm || audit)) st = parts_keys(p, n, gemm);
    if (st == FP4_OK)
        st = gemm    ? merge_gemm(p, n, output, table, res)
             : audit ? merge_audit(p, n, output, table, res)
                     : merge_analysis(p, n, output, table, config_of, res);
    for (int i = 0; i < n; i++) cJSON_Delete(p[i].doc);
    free(p);
    return st;
}
