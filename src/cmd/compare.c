/* compare.c — `fp4diag compare BASE.json NEW.json`: its thresholds (an extension of the
 * shared option parser), the difference table (or --json), and one stderr line per
 * regression; the matching itself is report/compare.c. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "cmd/commands.h"
#include "cmd/options.h"
#include "cmd/world.h"
#include "report/compare.h"
#include "report/report.h"
#include "base/status.h"
#include "base/term.h"
#include "base/version.h"
#include "io/fingerprint.h"

const char fp4_usage_compare[] =
    "usage: fp4diag compare [OPTIONS] BASE.json NEW.json\n"
    "\n"
    "Compare two reports and fail when NEW regressed against BASE. sqnr, bias,\n"
    "buckets and rht reports hold the same result objects and compare with each other\n"
    "(kind 'analysis'): results matched by tensor, format, scale, block, rht,\n"
    "rounding, plus the pooled summary results. gemm reports: paths matched by layer,\n"
    "recipe, path. grid reports: each format's grid, compared exactly. audit reports:\n"
    "each tensor's export and requant SQNR, alpha and bucket ratios, matched by\n"
    "tensor name, plus the pooled line ('(pooled)'). One report may be '-' (stdin).\n"
    "\n"
    "options:\n"
    "  --max-sqnr-drop DB      largest allowed SQNR drop, BASE - NEW, in\n"
    "                          dB (default 0.05)\n"
    "  --max-alpha-change X    largest allowed move of alpha (gemm: eta) away from 1,\n"
    "                          |1 - alpha_NEW| - |1 - alpha_BASE| (default 0.001)\n"
    "  --max-bucket-drop X     largest allowed drop of bucket_ratio_15 or\n"
    "                          bucket_ratio_8 (default 0.01)\n"
    "  --ignore-key F[,F]      leave key fields out of the match, to put two settings\n"
    "                          side by side: format, scale, block, rht, rounding\n"
    "                          (analysis), recipe (gemm); e.g. --ignore-key recipe\n"
    "                          (ufp4 vs e2m1) or --ignore-key scale,block (nvfp4 vs\n"
    "                          mxfp4: blocks 16 vs 32)\n"
    "  --all                   list every result, not only those that differ\n"
    "  --json                  write the comparison as JSON (schema\n"
    "                          fp4diag.compare/1)\n"
    "  -o FILE                 write the JSON comparison to FILE (implies --json)\n"
    "  -q                      no table (regressions are still named on stderr)\n"
    "  -v, -vv                 every row: a table of more than 24 results that differ\n"
    "                          opens with the count and overall lines and shows 24\n"
    "                          (the regressed first, then the largest SQNR change)\n"
    "                          and the pooled rows\n"
    "  -h, --help              this text\n"
    "\n"
    "A regression is: an SQNR drop, a bucket-ratio drop or a move of alpha away from\n"
    "1 beyond its threshold (a difference equal to a threshold passes); an\n"
    "sqnr_status change (ok/zero_signal/exact, i.e. a null SQNR on one side only),\n"
    "except to 'exact'; a result in BASE that NEW lacks. Results only in NEW are\n"
    "listed as 'added' and pass. The same amounts the other way (SQNR or a bucket\n"
    "ratio up, alpha closer to 1) are 'improved'. A last line says which report is\n"
    "better overall and by how much: the mean SQNR difference of the pooled summary\n"
    "results (else of all results), with how many results rose or fell and moved\n"
    "alpha closer to or away from 1; e.g. two recipes,\n"
    "  fp4diag compare --ignore-key scale,block nvfp4.json mxfp4.json\n"
    "Config fields that differ between the reports (key fields such as formats, scale\n"
    "and recipe as well as axis, seed, mx_rule, ...) are each named in one note on\n"
    "stderr.\n"
    "\n"
    "Exit status: 0 within thresholds; 1 a threshold failed (each regression named on\n"
    "stderr); 2 usage; 3 a report unreadable, not JSON, not schema fp4diag.report/1\n"
    "(audit: fp4diag.audit/1), or the two reports of different commands.\n"
    "\n"
    "example:\n"
    "  fp4diag sqnr ckpt.h5 -o new.json && fp4diag compare golden.json new.json\n";

static const char *const state_name[] = {"same", "changed", "REGRESSED", "added", "improved"};

static fp4_status parse_threshold(const char *opt, const char *arg, double *v)
{
    char *end = NULL;
    double x = strtod(arg, &end);
    if (!*arg || *end || !isfinite(x) || x < 0)
        return fp4_error(FP4_ERR_USAGE, "%s needs a number >= 0, not '%s'", opt, arg);
    *v = x;
    return FP4_OK;
}

/* Text read from a report (names, statuses, paths) as shown on a terminal: control characters
 * and bytes that are not UTF-8 as \xNN (no escape sequence or newline from a report reaches
 * the terminal). malloc'd; NULL when out of memory. */
static char *shown(const char *s)
{
    return fp4_text_escape(s ? s : "", FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
}

static void fmt_num(char *buf, size_t n, double v, const char *status, const char *fmt)
{
    if (!isnan(v)) {
        snprintf(buf, n, fmt, v);
    } else {
        char *e = shown(status && *status ? status : "-");
        snprintf(buf, n, "%s", e ? e : "?");
        free(e);
    }
}

static void fmt_delta(char *buf, size_t n, double a, double b, const char *fmt)
{
    if (isnan(a) || isnan(b))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, fmt, b - a);
}

/* The name of the rows' gain in text: "eta" for gemm reports (SPEC §6: the measured gain η of
 * a path), else "alpha" (the attenuation α). The JSON's field names are SPEC §9's. */
static const char *gain_name(const fp4_compare_result *res)
{
    return !strcmp(res->command, "gemm") ? "eta" : "alpha";
}

/* The failed checks of a row, short: "sqnr,alpha" ("sqnr,eta": `gain` names the check). */
static void row_flags(const fp4_compare_row *r, const char *gain, char *buf, size_t n)
{
    const char *const names[] = {"sqnr", "status", gain, "b15", "b8", "missing", "grid"};
    size_t len = 0;
    buf[0] = '\0';
    for (unsigned k = 0; k < sizeof names / sizeof *names; k++) {
        if (!(r->fails & (1u << k)) || len >= n) continue;
        int w = snprintf(buf + len, n - len, "%s%s", len ? "," : "", names[k]);
        if (w > 0) len += (size_t)w;
    }
}

/* The number cells of one row as both tables print them, to 3 places in the compact layout
 * and 4 in the full one (deltas of alpha one more): the two SQNRs ("-" for an added row,
 * "missing" for a missing one), the SQNR, alpha and bucket-ratio deltas and the failed checks. */
typedef struct row_text {
    char s0[24], s1[24], ds[24], da[24], d15[24], d8[24], why[96];
} row_text;

static void row_text_of(const fp4_compare_row *r, const char *gain, bool compact, row_text *t)
{
    fmt_num(t->s0, sizeof t->s0, r->sqnr[0], r->status[0], compact ? "%.3f" : "%.4f");
    fmt_num(t->s1, sizeof t->s1, r->sqnr[1], r->status[1], compact ? "%.3f" : "%.4f");
    if (r->state == FP4_CMP_ADDED) snprintf(t->s0, sizeof t->s0, "-");
    if (r->fails & FP4_CMP_FAIL_MISSING) snprintf(t->s1, sizeof t->s1, "missing");
    fmt_delta(t->ds, sizeof t->ds, r->sqnr[0], r->sqnr[1], compact ? "%+.3f" : "%+.4f");
    fmt_delta(t->da, sizeof t->da, r->alpha[0], r->alpha[1], compact ? "%+.5f" : "%+.6f");
    fmt_delta(t->d15, sizeof t->d15, r->b15[0], r->b15[1], compact ? "%+.3f" : "%+.4f");
    fmt_delta(t->d8, sizeof t->d8, r->b8[0], r->b8[1], compact ? "%+.3f" : "%+.4f");
    t->why[0] = '\0';
    if (r->fails) row_flags(r, gain, t->why, sizeof t->why);
}

/* Why a row failed, as one readable clause per failed check (`gain`: gain_name). */
static void row_reasons(const fp4_compare_row *r, const char *gain, const fp4_compare_opts *o,
                        char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
#define ADD(...)                                                                               \
    do {                                                                                       \
        if (len < n) {                                                                         \
            int k_ = snprintf(buf + len, n - len, "%s", len ? "; " : "");                      \
            if (k_ > 0) len += (size_t)k_;                                                     \
        }                                                                                      \
        if (len < n) {                                                                         \
            int k_ = snprintf(buf + len, n - len, __VA_ARGS__);                                \
            if (k_ > 0) len += (size_t)k_;                                                     \
        }                                                                                      \
    } while (0)
    if (r->fails & FP4_CMP_FAIL_MISSING) ADD("in BASE, missing from NEW");
    if (r->fails & FP4_CMP_FAIL_GRID) ADD("the grid (levels, bins, analytic bias) differs");
    if (r->fails & FP4_CMP_FAIL_STATUS)
        ADD("sqnr_status %s -> %s", r->status[0][0] ? r->status[0] : "absent",
            r->status[1][0] ? r->status[1] : "absent");
    if (r->fails & FP4_CMP_FAIL_SQNR)
        ADD("SQNR %.4f -> %.4f dB (drop %.4f > %g dB)", r->sqnr[0], r->sqnr[1],
            r->sqnr[0] - r->sqnr[1], o->max_sqnr_drop_db);
    if (r->fails & FP4_CMP_FAIL_ALPHA)
        ADD("%s %.6f -> %.6f (%.6f farther from 1 > %g)", gain, r->alpha[0], r->alpha[1],
            fabs(1.0 - r->alpha[1]) - fabs(1.0 - r->alpha[0]), o->max_alpha_change);
    if (r->fails & FP4_CMP_FAIL_B15)
        ADD("B15 %.4f -> %.4f (drop %.4f > %g)", r->b15[0], r->b15[1], r->b15[0] - r->b15[1],
            o->max_bucket_drop);
    if (r->fails & FP4_CMP_FAIL_B8)
        ADD("B8 %.4f -> %.4f (drop %.4f > %g)", r->b8[0], r->b8[1], r->b8[0] - r->b8[1],
            o->max_bucket_drop);
#undef ADD
}

/* "overall: NEW is better than BASE by +2.31 dB (pooled SQNR); 40 of 42 results higher by more
 * than 0.05 dB, 0 lower (mean +2.1, min +0.5, max +7.0 dB); alpha closer to 1 by more than 0.001
 * in 38, farther in 0" ("eta closer" for gemm reports): the counts are those beyond o's
 * thresholds (max_sqnr_drop_db, max_alpha_change), as overall.higher/lower/alpha_closer/
 * alpha_farther. False when there is
 * nothing to judge (no result with an SQNR on both sides). */
static bool overall_line(const fp4_compare_result *res, const fp4_compare_opts *o, char *buf,
                         size_t n)
{
    if (!res->npaired && !res->npooled) return false;
    const bool pooled = res->npooled > 0;
    const double d = pooled ? res->dsqnr_pooled : res->dsqnr_mean;
    int k;
    if (res->better > 0)
        k = snprintf(buf, n, "overall: NEW is better than BASE by %+.2f dB (%s SQNR)", d,
                     pooled ? "pooled" : "mean");
    else if (res->better < 0)
        k = snprintf(buf, n, "overall: BASE is better than NEW by %+.2f dB (%s SQNR)", -d,
                     pooled ? "pooled" : "mean");
    else
        k = snprintf(buf, n, "overall: neither is better (%s SQNR differs by %+.2f dB)",
                     pooled ? "pooled" : "mean", d);
    if (k < 0 || (size_t)k >= n || !res->npaired) return k >= 0;
    snprintf(buf + k, n - (size_t)k,
             "; %zu of %zu results higher by more than %g dB, %zu lower (mean %+.2f, min %+.2f, "
             "max %+.2f dB); %s closer to 1 by more than %g in %zu, farther in %zu",
             res->nup, res->npaired, o->max_sqnr_drop_db, res->ndown, res->dsqnr_mean,
             res->dsqnr_min, res->dsqnr_max, gain_name(res), o->max_alpha_change, res->ncloser,
             res->nfarther);
    return true;
}

/* The count line and the overall line of the table. */
static void summary_lines(FILE *out, const fp4_compare_result *res, const fp4_compare_opts *o)
{
    fprintf(out, "%s reports: %zu results: %zu same, %zu changed, %zu improved, %zu regressed (%zu "
           "missing from NEW), %zu added\n",
           res->command, res->nrows, res->nsame, res->nchanged, res->nimproved, res->nregressed,
           res->nmissing, res->nadded);
    char line[512];
    if (overall_line(res, o, line, sizeof line)) fprintf(out, "%s\n", line);
}

/* A line on stderr, wrapped at spaces to ecols (0: as it is). */
static void err_line(int ecols, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void err_line(int ecols, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *b = NULL;
    size_t n = 0;
    FILE *m = ecols > 0 ? open_memstream(&b, &n) : NULL;
    vfprintf(m ? m : stderr, fmt, ap);
    va_end(ap);
    if (m && fclose(m) == 0 && b) fp4_term_write(stderr, b, ecols);
    free(b);
}

/* A name shown in at most w columns: elided in the middle (fp4_term_elide, keeping the layer
 * number) under a width, padded to w. */
static void put_cell(FILE *out, const char *s, int w, bool elide)
{
    char *el = elide && fp4_term_columns(s) > w ? fp4_term_elide(s, w) : NULL;
    const char *t = el ? el : s;
    fputs(t, out);
    for (int c = fp4_term_columns(t); c < w; c++) fputc(' ', out);
    free(el);
}

/* The parts ('/'-separated) of every shown variant that are the same on every row, when all
 * have the same number of parts: common[j]. Returns the number of parts (0: not uniform). */
enum { CMP_PARTS = 8 };
static int common_parts(const fp4_compare_result *res, int all, char *const *ev,
                        bool common[CMP_PARTS])
{
    int np = -1;
    const char *first = NULL;
    for (size_t i = 0; i < res->nrows; i++) {
        if (!all && res->rows[i].state == FP4_CMP_SAME) continue;
        if (!ev[i]) continue; /* a row not shown (many rows: top_rows) */
        int k = 1;
        for (const char *c = ev[i]; *c; c++) k += *c == '/';
        if (k > CMP_PARTS || (np >= 0 && k != np)) return 0;
        if (np < 0) {
            np = k;
            first = ev[i];
            for (int j = 0; j < np; j++) common[j] = true;
            continue;
        }
        const char *a = first, *b = ev[i];
        for (int j = 0; j < np; j++) {
            size_t la = strcspn(a, "/"), lb = strcspn(b, "/");
            if (la != lb || memcmp(a, b, la)) common[j] = false;
            a += la + (a[la] == '/');
            b += lb + (b[lb] == '/');
        }
    }
    return np < 0 ? 0 : np;
}

/* v's parts: those not in `common` (a row's RESULT cell: what tells it from the others,
 * e.g. the format), or, for the line above the table (header), the common ones with '?' for
 * the others. */
static void variant_parts(char *buf, size_t n, const char *v, int np, const bool common[CMP_PARTS],
                          bool header)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int j = 0; j < np && len < n; j++) {
        size_t l = strcspn(v, "/");
        if (header || !common[j]) {
            int k = header && !common[j]
                        ? snprintf(buf + len, n - len, "%s?", len ? "/" : "")
                        : snprintf(buf + len, n - len, "%s%.*s", len ? "/" : "", (int)l, v);
            if (k > 0) len += (size_t)k;
        }
        v += l + (v[l] == '/');
    }
}

/* The table: without a width (a pipe or file) as it always was; under a width (SPEC §9
 * "Terminal output") the full layout when it fits, else the compact one (the result parts that
 * are the same on every row said once above the table, number columns as narrow as their
 * values, one space between columns, names elided keeping the layer number, at least 12
 * columns), else, narrower still, one record per result: the name on its own line and the
 * values as FIELD=VALUE under it. */
/* Many rows and no -v (nor --all): the rows worth the screen, as the analyses' tables do
 * (SPEC 9): every pooled row, then FP4_TABLE_TOP_TENSORS of the others: the regressed and
 * added ones first, each class by the largest |dSQNR| first, shown in the reports' order:
 * show[i], of the rows in en. */
typedef struct top_row {
    size_t i;
    int cls; /* 0 regressed or added, 1 the others */
    double d;
} top_row;

static int top_cmp(const void *a, const void *b)
{
    const top_row *x = a, *y = b;
    if (x->cls != y->cls) return x->cls - y->cls;
    if (x->d != y->d) return x->d > y->d ? -1 : 1; /* NaN is -1: below every |d| */
    return x->i < y->i ? -1 : x->i > y->i;
}

static void top_rows(const fp4_compare_result *res, char *const *en, bool *show)
{
    top_row *t = malloc((res->nrows ? res->nrows : 1) * sizeof *t);
    size_t nt = 0;
    for (size_t i = 0; i < res->nrows; i++) {
        const fp4_compare_row *r = &res->rows[i];
        show[i] = en[i] && (!t || (r->name && r->name[0] == '('));
        if (!en[i] || show[i]) continue;
        const double d = fabs(r->sqnr[1] - r->sqnr[0]);
        t[nt++] = (top_row){i, r->state == FP4_CMP_REGRESSED || r->state == FP4_CMP_ADDED ? 0 : 1,
                            isnan(d) ? -1 : d};
    }
    if (t) {
        qsort(t, nt, sizeof *t, top_cmp);
        for (size_t k = 0; k < nt && k < FP4_TABLE_TOP_TENSORS; k++) show[t[k].i] = true;
    }
    free(t);
}

static void print_table(const fp4_compare_result *res, const fp4_compare_opts *o, int all,
                        int verbosity)
{
    const int cols = fp4_term_width(stdout);
    char *buf = NULL;
    size_t blen = 0;
    FILE *mem = cols > 0 ? open_memstream(&buf, &blen) : NULL;
    FILE *out = mem ? mem : stdout;
    int wn = 6, wv = 6, gemm = !strcmp(res->command, "gemm");
    size_t nshown = 0;
    char **en = calloc(res->nrows ? res->nrows : 1, sizeof *en);
    char **ev = calloc(res->nrows ? res->nrows : 1, sizeof *ev);
    int wn_cols = 6; /* the longest name in columns */
    for (size_t i = 0; en && ev && i < res->nrows; i++) {
        const fp4_compare_row *r = &res->rows[i];
        if (!all && r->state == FP4_CMP_SAME) continue;
        en[i] = shown(r->name);
        ev[i] = shown(r->variant);
        int a = en[i] ? (int)strlen(en[i]) : 1, b = ev[i] ? (int)strlen(ev[i]) : 1;
        if (a > wn) wn = a;
        if (b > wv) wv = b;
        int c = en[i] ? fp4_term_columns(en[i]) : 1;
        if (c > wn_cols) wn_cols = c;
        nshown++;
    }
    if (wn > 48) wn = 48;
    /* many rows: the summary first, the top rows, a line saying what was left out */
    size_t nlisted = nshown, nall = 0;
    bool *show = verbosity <= 0 && !all && nshown > FP4_TABLE_TOP_TENSORS + 0u && en && ev
                     ? calloc(res->nrows, sizeof *show)
                     : NULL;
    if (show) {
        top_rows(res, en, show);
        nlisted = 0;
        for (size_t i = 0; i < res->nrows; i++) {
            if (!en[i]) continue;
            if (res->rows[i].name && res->rows[i].name[0] != '(') nall++;
            if (!show[i]) {
                free(en[i]), free(ev[i]);
                en[i] = ev[i] = NULL;
                continue;
            }
            if (res->rows[i].name && res->rows[i].name[0] != '(') nlisted++;
        }
        summary_lines(out, res, o);
        fputc('\n', out);
    }
    int grid = !strcmp(res->command, "grid");
    const char *h_name = gemm ? "LAYER" : grid ? "FORMAT" : "TENSOR";
    const char *h_var = gemm ? "RECIPE/PATH" : "RESULT";
    /* under a width: the full row, names in full, or the compact layout */
    int layout = 0; /* 0 full, 1 compact, 2 records */
    int vw = 0;
    if (cols > 0 && nshown && en && ev) {
        for (size_t i = 0; i < res->nrows; i++) {
            if (!en[i]) continue;
            const fp4_compare_row *r = &res->rows[i];
            char why[96] = "";
            if (r->fails) row_flags(r, gain_name(res), why, sizeof why);
            int w = (int)strlen(state_name[r->state]) + (why[0] ? 1 + (int)strlen(why) : 0);
            if (w > vw) vw = w;
        }
        if (wn_cols + 2 + wv + 2 + 71 + 2 + vw > cols) layout = 1;
    }
    bool common[CMP_PARTS] = {false};
    int np = layout ? common_parts(res, all, ev, common) : 0;
    bool any_common = false, all_common = np > 0;
    for (int j = 0; j < np; j++) {
        any_common |= common[j];
        all_common &= common[j];
    }
    if (!any_common) np = 0;
    /* the compact cells: [0] result, [1..6] numbers, [7] verdict */
    enum { NC = 8 };
    static const char *const hdr_compact[NC] = {"", "BASE", "NEW", "dSQNR", "", "dB15", "dB8",
                                                "VERDICT"};
    int cw[NC] = {0};
    bool short_verdict = false;
    char ***cells = NULL;
    if (layout) {
        cells = calloc(res->nrows, sizeof *cells);
        for (int k = 0; k < NC; k++) {
            const char *h = k == 0 ? h_var : k == 4 ? (gemm ? "dETA" : "dALPHA") : hdr_compact[k];
            cw[k] = (int)strlen(h);
        }
        if (all_common) cw[0] = 0;
        for (size_t i = 0; cells && i < res->nrows; i++) {
            if (!en[i]) continue;
            const fp4_compare_row *r = &res->rows[i];
            char **c = cells[i] = calloc(NC, sizeof *c);
            if (!c) continue;
            char v[256] = "", vd[128];
            row_text t;
            if (np) variant_parts(v, sizeof v, ev[i], np, common, false);
            else snprintf(v, sizeof v, "%s", ev[i]);
            row_text_of(r, gain_name(res), true, &t);
            snprintf(vd, sizeof vd, "%s%s%s", state_name[r->state], t.why[0] ? " " : "", t.why);
            const char *src[NC] = {all_common ? "" : v, t.s0, t.s1, t.ds, t.da, t.d15, t.d8, vd};
            for (int k = 0; k < NC; k++) {
                c[k] = strdup(src[k]);
                int w = c[k] ? fp4_term_columns(c[k]) : 0;
                if (w > cw[k]) cw[k] = w;
            }
        }
        int fixed = cw[0] ? cw[0] + 1 : 0;
        for (int k = 1; k < NC; k++) fixed += cw[k] + 1;
        wn = cols - fixed;
        if (wn < 24 && wn < wn_cols) {
            /* the verdict without its failed checks (the regression lines on stderr name
             * them): "REGRESSED" rather than "REGRESSED sqnr,alpha,b15,b8" */
            int sw = (int)strlen("VERDICT");
            for (size_t i = 0; i < res->nrows; i++)
                if (en[i] && (int)strlen(state_name[res->rows[i].state]) > sw)
                    sw = (int)strlen(state_name[res->rows[i].state]);
            if (sw < cw[NC - 1]) {
                wn += cw[NC - 1] - sw;
                cw[NC - 1] = sw;
                short_verdict = true;
            }
        }
        if (wn > wn_cols) wn = wn_cols;
        if (wn < 12) layout = 2;
        if (layout == 2) short_verdict = false;
        if (np) {
            char t[256];
            for (size_t i = 0; i < res->nrows; i++)
                if (ev[i] && en[i]) {
                    variant_parts(t, sizeof t, ev[i], np, common, true);
                    break;
                }
            if (all_common) fprintf(out, "every %s is %s\n", gemm ? "recipe/path" : "result", t);
            else
                fprintf(out, "every %s is %s, ? in the %s column\n",
                        gemm ? "recipe/path" : "result", t, h_var);
        }
    }
    if (nshown && layout == 0) {
        fprintf(out, "%-*s  %-*s  %11s %11s %9s %10s %8s %8s  %s\n", wn, h_name, wv, h_var,
                "SQNR_BASE", "SQNR_NEW", "dSQNR", gemm ? "dETA" : "dALPHA", "dB15", "dB8",
                "VERDICT");
        for (size_t i = 0; i < res->nrows; i++) {
            const fp4_compare_row *r = &res->rows[i];
            if (!all && r->state == FP4_CMP_SAME) continue;
            if (show && !show[i]) continue;
            row_text t;
            row_text_of(r, gain_name(res), false, &t);
            if (cols > 0) {
                put_cell(out, en && en[i] ? en[i] : "?", wn_cols, false);
                fprintf(out, "  %-*s  %11s %11s %9s %10s %8s %8s  %s%s%s\n", wv,
                        ev && ev[i] ? ev[i] : "?", t.s0, t.s1, t.ds, t.da, t.d15, t.d8,
                        state_name[r->state], t.why[0] ? " " : "", t.why);
            } else {
                fprintf(out, "%-*s  %-*s  %11s %11s %9s %10s %8s %8s  %s%s%s\n", wn,
                        en && en[i] ? en[i] : "?", wv, ev && ev[i] ? ev[i] : "?", t.s0, t.s1,
                        t.ds, t.da, t.d15, t.d8, state_name[r->state], t.why[0] ? " " : "",
                        t.why);
            }
        }
    } else if (nshown && layout == 1 && cells) {
        put_cell(out, h_name, wn, false);
        for (int k = 0; k < NC; k++) {
            if (k == 0 && !cw[0]) continue;
            const char *h = k == 0 ? h_var : k == 4 ? (gemm ? "dETA" : "dALPHA") : hdr_compact[k];
            if (k == 0 || k == NC - 1) fprintf(out, " %-*s", k == NC - 1 ? 0 : cw[k], h);
            else fprintf(out, " %*s", cw[k], h);
        }
        fputc('\n', out);
        for (size_t i = 0; i < res->nrows; i++) {
            if (!en[i] || !cells[i]) continue;
            put_cell(out, en[i], wn, true);
            for (int k = 0; k < NC; k++) {
                const char *c = cells[i][k] ? cells[i][k] : "?";
                if (k == NC - 1 && short_verdict) c = state_name[res->rows[i].state];
                if (k == 0 && !cw[0]) continue;
                if (k == 0) {
                    fputc(' ', out);
                    put_cell(out, c, cw[0], false);
                } else if (k == NC - 1) {
                    fprintf(out, " %s", c);
                } else {
                    fprintf(out, " %*s", cw[k] + (int)strlen(c) - fp4_term_columns(c), c);
                }
            }
            fputc('\n', out);
        }
        if (short_verdict && res->nregressed)
            fprintf(out, "(the checks each regression failed: the regression lines on standard "
                         "error)\n");
    } else if (nshown && layout == 2 && cells) {
        /* one record per result: the name, then FIELD=VALUE pairs wrapped at spaces */
        for (size_t i = 0; i < res->nrows; i++) {
            if (!en[i] || !cells[i]) continue;
            char *el = fp4_term_columns(en[i]) > cols ? fp4_term_elide(en[i], cols) : NULL;
            fprintf(out, "%s\n ", el ? el : en[i]);
            free(el);
            char **c = cells[i];
            if (cw[0] && c[0]) fprintf(out, " %s", c[0]);
            fprintf(out, " BASE=%s NEW=%s dSQNR=%s %s=%s dB15=%s dB8=%s %s\n", c[1] ? c[1] : "?",
                    c[2] ? c[2] : "?", c[3] ? c[3] : "?", gemm ? "dETA" : "dALPHA",
                    c[4] ? c[4] : "?", c[5] ? c[5] : "?", c[6] ? c[6] : "?", c[7] ? c[7] : "?");
        }
    }
    for (size_t i = 0; cells && i < res->nrows; i++) {
        for (int k = 0; cells[i] && k < NC; k++) free(cells[i][k]);
        free(cells[i]);
    }
    free(cells);
    for (size_t i = 0; en && ev && i < res->nrows; i++) {
        free(en[i]);
        free(ev[i]);
    }
    free(en);
    free(ev);
    if (show)
        fprintf(out, "(rows of %zu of %zu results that differ: the regressed and added first, "
                     "then the largest SQNR change, in the reports' order, and the pooled rows; "
                     "-v shows all %zu, --json holds all%s)\n",
                nlisted, nall, nall,
                res->nregressed ? "; every regression is named on standard error" : "");
    else summary_lines(out, res, o);
    free(show);
    if (mem) {
        if (fclose(mem) == 0 && buf) fp4_term_write(stdout, buf, cols);
        free(buf);
    }
}

static cJSON *num_or_null(double v) { return isnan(v) ? cJSON_CreateNull() : cJSON_CreateNumber(v); }

static cJSON *pair(double a, double b)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "base", num_or_null(a));
    cJSON_AddItemToObject(o, "new", num_or_null(b));
    cJSON_AddItemToObject(o, "delta", num_or_null(isnan(a) || isnan(b) ? NAN : b - a));
    return o;
}

static fp4_status print_json(const fp4_compare_result *res, const fp4_compare_opts *o,
                             const char *base, const char *newp, int all, const char *output)
{
    cJSON *doc = cJSON_CreateObject();
    if (!doc) return fp4_error(FP4_ERR_INTERNAL, "compare: out of memory");
    cJSON_AddStringToObject(doc, "schema", "fp4diag.compare/1");
    cJSON *tool = cJSON_AddObjectToObject(doc, "tool");
    if (tool) {
        cJSON_AddStringToObject(tool, "name", FP4DIAG_NAME);
        cJSON_AddStringToObject(tool, "version", FP4DIAG_VERSION);
    }
    cJSON_AddStringToObject(doc, "command", res->command);
    cJSON_AddStringToObject(doc, "base", base);
    cJSON_AddStringToObject(doc, "new", newp);
    cJSON *th = cJSON_AddObjectToObject(doc, "thresholds");
    cJSON_AddNumberToObject(th, "max_sqnr_drop_db", o->max_sqnr_drop_db);
    cJSON_AddNumberToObject(th, "max_alpha_change", o->max_alpha_change);
    cJSON_AddNumberToObject(th, "max_bucket_drop", o->max_bucket_drop);
    cJSON_AddBoolToObject(doc, "pass", res->nregressed == 0);
    cJSON *cnt = cJSON_AddObjectToObject(doc, "counts");
    cJSON_AddNumberToObject(cnt, "results", (double)res->nrows);
    cJSON_AddNumberToObject(cnt, "same", (double)res->nsame);
    cJSON_AddNumberToObject(cnt, "changed", (double)res->nchanged);
    cJSON_AddNumberToObject(cnt, "regressed", (double)res->nregressed);
    cJSON_AddNumberToObject(cnt, "missing", (double)res->nmissing);
    cJSON_AddNumberToObject(cnt, "added", (double)res->nadded);
    cJSON_AddNumberToObject(cnt, "improved", (double)res->nimproved);
    if (res->npaired || res->npooled) {
        cJSON *ov = cJSON_AddObjectToObject(doc, "overall");
        cJSON_AddStringToObject(ov, "better", res->better > 0   ? "new"
                                              : res->better < 0 ? "base"
                                                                : "neither");
        cJSON_AddItemToObject(ov, "pooled_delta_sqnr_db",
                              num_or_null(res->npooled ? res->dsqnr_pooled : NAN));
        cJSON_AddNumberToObject(ov, "pooled_results", (double)res->npooled);
        cJSON_AddNumberToObject(ov, "results", (double)res->npaired);
        cJSON_AddItemToObject(ov, "mean_delta_sqnr_db",
                              num_or_null(res->npaired ? res->dsqnr_mean : NAN));
        cJSON_AddItemToObject(ov, "min_delta_sqnr_db",
                              num_or_null(res->npaired ? res->dsqnr_min : NAN));
        cJSON_AddItemToObject(ov, "max_delta_sqnr_db",
                              num_or_null(res->npaired ? res->dsqnr_max : NAN));
        cJSON_AddNumberToObject(ov, "higher", (double)res->nup);
        cJSON_AddNumberToObject(ov, "lower", (double)res->ndown);
        cJSON_AddNumberToObject(ov, "alpha_closer", (double)res->ncloser);
        cJSON_AddNumberToObject(ov, "alpha_farther", (double)res->nfarther);
    }
    if (res->config_diff[0]) cJSON_AddStringToObject(doc, "config_diff", res->config_diff);
    { /* the two report files (stdin "-" is left out of the inputs) */
        const char *const in[2] = {strcmp(base, "-") ? base : NULL, strcmp(newp, "-") ? newp : NULL};
        fp4_file_print *pr = NULL;
        int npr = 0;
        if (fp4_fingerprint_inputs(in, 2, &pr, &npr) != FP4_OK) fp4_error_clear(), npr = 0;
        cJSON_AddItemToObject(doc, "provenance", fp4_report_provenance_json(pr, npr));
        fp4_fingerprint_free(pr, npr);
    }
    cJSON *rows = cJSON_AddArrayToObject(doc, "rows");
    int gemm = !strcmp(res->command, "gemm");
    for (size_t i = 0; i < res->nrows; i++) {
        const fp4_compare_row *r = &res->rows[i];
        if (!all && r->state == FP4_CMP_SAME) continue;
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToArray(rows, j);
        cJSON_AddStringToObject(j, gemm ? "layer" : "tensor", r->name);
        cJSON_AddStringToObject(j, "result", r->variant);
        cJSON_AddStringToObject(j, "verdict", r->state == FP4_CMP_REGRESSED ? "regressed"
                                              : r->state == FP4_CMP_ADDED   ? "added"
                                                                            : state_name[r->state]);
        cJSON_AddItemToObject(j, "sqnr_db", pair(r->sqnr[0], r->sqnr[1]));
        cJSON *st = cJSON_AddObjectToObject(j, "sqnr_status");
        cJSON_AddItemToObject(st, "base", r->status[0][0] ? cJSON_CreateString(r->status[0])
                                                          : cJSON_CreateNull());
        cJSON_AddItemToObject(st, "new", r->status[1][0] ? cJSON_CreateString(r->status[1])
                                                         : cJSON_CreateNull());
        cJSON_AddItemToObject(j, gemm ? "eta" : "alpha", pair(r->alpha[0], r->alpha[1]));
        if (!gemm) {
            cJSON_AddItemToObject(j, "bucket_ratio_15", pair(r->b15[0], r->b15[1]));
            cJSON_AddItemToObject(j, "bucket_ratio_8", pair(r->b8[0], r->b8[1]));
        }
        if (r->fails) {
            char why[512];
            row_reasons(r, gain_name(res), o, why, sizeof why);
            cJSON_AddStringToObject(j, "why", why);
        }
    }
    char *text = cJSON_Print(doc);
    cJSON_Delete(doc);
    if (!text) return fp4_error(FP4_ERR_INTERNAL, "compare: out of memory");
    size_t len = strlen(text);
    fp4_status st = FP4_OK;
    char *line = malloc(len + 2);
    if (!line) st = fp4_error(FP4_ERR_INTERNAL, "compare: out of memory");
    else {
        memcpy(line, text, len);
        line[len] = '\n';
        line[len + 1] = '\0';
        st = fp4_output_write(output, line, len + 1);
    }
    free(line);
    free(text);
    return st;
}

/* compare's own options, on top of the shared parser's -o, --json, -q, -v, -h */
enum { OPT_SQNR = 1000, OPT_ALPHA, OPT_BUCKET, OPT_ALL, OPT_IGNORE };
static const struct option compare_longopts[] = {
    {"max-sqnr-drop", required_argument, NULL, OPT_SQNR},
    {"max-alpha-change", required_argument, NULL, OPT_ALPHA},
    {"max-bucket-drop", required_argument, NULL, OPT_BUCKET},
    {"ignore-key", required_argument, NULL, OPT_IGNORE},
    {"all", no_argument, NULL, OPT_ALL},
    {NULL, 0, NULL, 0}};

typedef struct compare_args {
    fp4_compare_opts o;
    int all;
} compare_args;

static fp4_status compare_opt(void *ctx, int val, const char *arg)
{
    compare_args *a = ctx;
    switch (val) {
    case OPT_SQNR: return parse_threshold("--max-sqnr-drop", arg, &a->o.max_sqnr_drop_db);
    case OPT_ALPHA: return parse_threshold("--max-alpha-change", arg, &a->o.max_alpha_change);
    case OPT_BUCKET: return parse_threshold("--max-bucket-drop", arg, &a->o.max_bucket_drop);
    case OPT_IGNORE: return fp4_compare_ignore_parse(arg, &a->o.ignore);
    case OPT_ALL: a->all = 1; return FP4_OK;
    default: return fp4_error(FP4_ERR_INTERNAL, "compare: option %d not handled", val);
    }
}

fp4_status cmd_compare(int argc, char **argv)
{
    compare_args a = {fp4_compare_opts_default(), 0};
    fp4_options opt;
    fp4_options_default(&opt, NULL, FP4_RHT_OFF);
    const fp4_options_ext ext = {compare_longopts, compare_opt, &a};
    FP4_TRY(fp4_options_parse(&opt, argc, argv, &ext));
    if (opt.help) {
        fputs(fp4_usage_compare, stdout);
        return FP4_OK;
    }
    FP4_TRY(fp4_options_only(&opt, "compare", NULL, "see 'fp4diag compare --help'"));
    const fp4_compare_opts o = a.o;
    const int all = a.all, verbosity = opt.cfg.verbosity;
    const char *output = opt.cfg.output;
    const int json = opt.cfg.json || output; /* -o FILE implies --json */
    if (opt.nargs != 2)
        return fp4_error(FP4_ERR_USAGE, "expected BASE.json NEW.json, got %d file%s; see "
                                        "'fp4diag compare --help'",
                         opt.nargs, opt.nargs == 1 ? "" : "s");
    const char *base = opt.args[0], *newp = opt.args[1];
    if (output) { /* before reading: never one of the two reports compared */
        const char *const inputs[2] = {base, newp};
        FP4_TRY(fp4_output_prepare(output, inputs, 2));
    }
    fp4_compare_result res;
    fp4_status st = fp4_compare_files(base, newp, &o, &res);
    if (st != FP4_OK) {
        fp4_output_forget();
        fp4_compare_result_free(&res);
        return st;
    }
    /* stderr's lines fit its width when it is a terminal (a pipe or file gets them whole) */
    const int ecols = isatty(STDERR_FILENO) ? fp4_term_width(stderr) : 0;
    if (res.config_diff[0]) {
        char *d = shown(res.config_diff);
        err_line(ecols, "fp4diag compare: note: the reports' configs differ: %s%s\n",
                 d ? d : "?",
                 res.key_diff ? " (key fields differ: only equal keys are paired; "
                                "--ignore-key FIELD pairs them)"
                              : "");
        free(d);
    }
    if (res.pair_keys) { /* nothing paired: the exact option that pairs them (issue 29) */
        char keys[64];
        fp4_compare_keys_list(res.pair_keys, keys, sizeof keys);
        char *eb = shown(base), *en = shown(newp);
        err_line(ecols, "fp4diag compare: note: no result of %s pairs with one of %s: they "
                        "differ in key fields; --ignore-key %s puts them side by side\n",
                 eb ? eb : "?", en ? en : "?", keys);
        free(eb);
        free(en);
    }
    if (json)
        st = print_json(&res, &o, base, newp, all, output);
    else if (verbosity >= 0)
        print_table(&res, &o, all, verbosity);
    /* a table that did not reach stdout (a full disk, a closed pipe) is no comparison */
    if (st == FP4_OK && (fflush(stdout) != 0 || ferror(stdout)))
        st = fp4_error(FP4_ERR_INPUT, "stdout: write error: %s",
                       errno == EPIPE ? "the reading end of the pipe was closed"
                                      : strerror(errno));
    for (size_t i = 0; i < res.nrows; i++) {
        const fp4_compare_row *r = &res.rows[i];
        if (!r->fails) continue;
        char why[512];
        row_reasons(r, gain_name(&res), &o, why, sizeof why);
        char *en = shown(r->name), *ev = shown(r->variant), *ew = shown(why);
        err_line(ecols, "regression: %s %s: %s\n", en ? en : "?", ev ? ev : "?", ew ? ew : "?");
        free(en);
        free(ev);
        free(ew);
    }
    /* the thresholds that apply: a gemm report's paths have no bucket ratios; a grid report's
     * grids are compared exactly, with none */
    if (st == FP4_OK && res.nregressed && !strcmp(res.command, "grid"))
        st = fp4_error(FP4_ERR_THRESHOLD, "%zu of %zu results regressed (grids are compared "
                       "exactly: no threshold applies)", res.nregressed, res.nrows);
    else if (st == FP4_OK && res.nregressed && !strcmp(res.command, "gemm"))
        st = fp4_error(FP4_ERR_THRESHOLD, "%zu of %zu results regressed (thresholds: SQNR drop "
                       "%g dB, eta change %g)",
                       res.nregressed, res.nrows, o.max_sqnr_drop_db, o.max_alpha_change);
    else if (st == FP4_OK && res.nregressed)
        st = fp4_error(FP4_ERR_THRESHOLD, "%zu of %zu results regressed (thresholds: SQNR drop "
                       "%g dB, alpha change %g, bucket drop %g)",
                       res.nregressed, res.nrows, o.max_sqnr_drop_db, o.max_alpha_change,
                       o.max_bucket_drop);
    /* on a terminal the final error is wrapped as the lines above it are (main writes it
     * whole, one line, to a pipe or file) */
    if (st != FP4_OK && ecols > 0 && fp4_last_error()[0] && !fp4_world_quiet()) {
        char *e = shown(fp4_last_error());
        err_line(ecols, "fp4diag compare: %s\n", e ? e : "?");
        free(e);
        fp4_error_clear(); /* said: main does not write it again */
    }
    fp4_output_forget();
    fp4_compare_result_free(&res);
    return st;
}
