/* compare.h — regression check between two fp4diag reports (SPEC §9): match results by key,
 * difference their metrics, and judge each difference against thresholds. Computation only:
 * cmd_compare.c prints the table, the JSON and the regressions. */
#ifndef FP4_COMPARE_H
#define FP4_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Thresholds; a difference equal to a threshold passes. Defaults (fp4_compare_opts_default):
 *   max_sqnr_drop_db  0.05 dB  SQNR_base - SQNR_new; SPEC §7 makes reports deterministic, and
 *                              the only legitimate drift SPEC §3 names (operation order near
 *                              E4M3 ties) moves SQNR by up to 0.01 dB, so 0.05 dB is 5x that
 *                              and still far below the effects fp4diag measures (tenths of dB)
 *   max_alpha_change  0.001    how much farther from 1 alpha moved, |1 - alpha_new| -
 *                              |1 - alpha_base| (gemm: eta): alpha = 1 is no shrinkage, and
 *                              the compounded bias grows with the distance from 1
 *   max_bucket_drop   0.01     B15_base - B15_new and B8_base - B8_new (ratios in [0, 1])
 * The same amounts the other way (an SQNR or bucket-ratio rise, alpha closer to 1) are
 * improvements: shown, never a regression. */
typedef struct fp4_compare_opts {
    double max_sqnr_drop_db;
    double max_alpha_change;
    double max_bucket_drop;
    unsigned ignore; /* FP4_CMP_KEY_* bits: key fields left out of the match (--ignore-key) */
} fp4_compare_opts;

fp4_compare_opts fp4_compare_opts_default(void);

/* Key fields of a result (analysis: format, scale, block, rht, rounding; gemm: recipe). An
 * ignored field is "*" in the row's variant, so results differing only there are paired:
 * two scale modes or two recipes side by side. */
enum {
    FP4_CMP_KEY_FORMAT = 1u << 0,
    FP4_CMP_KEY_SCALE = 1u << 1,
    FP4_CMP_KEY_BLOCK = 1u << 2,
    FP4_CMP_KEY_RHT = 1u << 3,
    FP4_CMP_KEY_ROUNDING = 1u << 4,
    FP4_CMP_KEY_RECIPE = 1u << 5
};

/* Parse "scale,block" (names: format, scale, block, rht, rounding, recipe) into FP4_CMP_KEY_*
 * bits OR'd into *bits. FP4_ERR_USAGE naming an unknown field. */
fp4_status fp4_compare_ignore_parse(const char *list, unsigned *bits);

/* Why a row is a regression: a bit set per failed check. */
enum {
    FP4_CMP_FAIL_SQNR = 1u << 0,   /* SQNR dropped by more than max_sqnr_drop_db */
    FP4_CMP_FAIL_STATUS = 1u << 1, /* sqnr_status changed (e.g. ok -> zero_signal, exact -> ok) */
    FP4_CMP_FAIL_ALPHA = 1u << 2,  /* |delta alpha| (gemm: eta) above max_alpha_change */
    FP4_CMP_FAIL_B15 = 1u << 3,    /* bucket_ratio_15 dropped by more than max_bucket_drop */
    FP4_CMP_FAIL_B8 = 1u << 4,     /* bucket_ratio_8 dropped by more than max_bucket_drop */
    FP4_CMP_FAIL_MISSING = 1u << 5, /* in BASE, absent from NEW */
    FP4_CMP_FAIL_GRID = 1u << 6     /* a `grid` report's format entry differs (exact check) */
};

typedef enum fp4_compare_state {
    FP4_CMP_SAME = 0,  /* every compared metric equal */
    FP4_CMP_CHANGED,   /* some metric differs, within the thresholds */
    FP4_CMP_REGRESSED, /* at least one FP4_CMP_FAIL_* bit */
    FP4_CMP_ADDED,     /* in NEW only: shown, never a regression */
    FP4_CMP_IMPROVED   /* no check failed, and the SQNR rose by more than max_sqnr_drop_db,
                        * alpha came closer to 1 by more than max_alpha_change, or a bucket
                        * ratio rose by more than max_bucket_drop */
} fp4_compare_state;

/* One matched (or unmatched) result. Metrics absent from a report, or null, are NAN; the
 * sqnr_status strings say why ("ok", "zero_signal", "exact", "" when absent). For gemm reports
 * `alpha` holds eta and the bucket ratios are NAN. `grid` reports (analytic constants, no
 * tolerance) give one row per format, variant "grid", metrics NAN, compared exactly. */
typedef struct fp4_compare_row {
    char *name;    /* tensor name, "(summary)" for a pooled summary result, or a gemm layer */
    char *variant; /* the rest of the key: "e2m1/fp32/16/rht=off/rtne"; gemm "ufp4/fprop" */
    double sqnr[2], alpha[2], b15[2], b8[2]; /* [0] BASE, [1] NEW */
    char status[2][16];
    unsigned fails; /* FP4_CMP_FAIL_* bits */
    fp4_compare_state state;
} fp4_compare_row;

typedef struct fp4_compare_result {
    char command[16]; /* the reports' command ("sqnr", "rht", "gemm", ...); "analysis" when
                       * two of sqnr/bias/buckets/rht (same result objects) are compared */
    fp4_compare_row *rows;
    size_t nrows;
    size_t nsame, nchanged, nregressed, nmissing, nadded, nimproved;
    /* Which report is better overall (both sides present and finite; pooled rows are those
     * whose name starts with '(': "(summary)", "(pooled)"): over the other rows, npaired of
     * them, the mean, min and max of SQNR_new - SQNR_base in dB (NAN when none), how many
     * rose and fell by more than max_sqnr_drop_db, and how many moved alpha (eta) closer to
     * and farther from 1 by more than max_alpha_change; over the pooled rows, npooled of them,
     * the mean SQNR difference. better: +1 NEW, -1 BASE, 0 neither (the mean difference, the
     * pooled one when there are pooled rows, within max_sqnr_drop_db) or nothing to judge. */
    size_t npaired, nup, ndown, ncloser, nfarther, npooled;
    double dsqnr_mean, dsqnr_min, dsqnr_max, dsqnr_pooled;
    int better;
    /* Config fields and the input file differing between the two reports ("input: a.h5 vs
     * b.h5; formats: [...] vs [...]; mx_rule: floor vs rceil"), key fields included (every
     * differing field is named; device, threads, mem_limit are not): a note, not an error. */
    char config_diff[1024];
    unsigned key_diff; /* FP4_CMP_KEY_* bits of the key fields among them, less opts->ignore */
    /* When no result of BASE paired with one of NEW (both non-empty; analysis and gemm
     * reports): the fewest key fields, opts->ignore included, whose leaving out pairs some
     * (the most pairs among sets of that size); 0 when none would (no tensor in common). */
    unsigned pair_keys;
} fp4_compare_result;

/* "scale,block": the --ignore-key list of FP4_CMP_KEY_* bits (format, scale, block, rht,
 * rounding, recipe order); "" for 0. */
void fp4_compare_keys_list(unsigned bits, char *buf, size_t n);

/* Compare two reports given as JSON text. `base_label`/`new_label` name them in error details
 * (file names). Rows come in BASE order, then rows ADDED in NEW, in NEW order.
 * Errors: FP4_ERR_INPUT when a text is not JSON, its schema is not "fp4diag.report/1", the
 * commands differ (sqnr, bias, buckets and rht hold the same result objects and compare with
 * each other, by result key), a required member is missing or of the wrong type, or a key repeats within
 * one report; FP4_ERR_INTERNAL on out of memory. The verdict is in `out` (nregressed > 0 means
 * a threshold failed); the return value is FP4_OK whenever both reports could be compared.
 * `out` must be freed with fp4_compare_result_free, also after an error. */
fp4_status fp4_compare_texts(const char *base_text, const char *base_label, const char *new_text,
                             const char *new_label, const fp4_compare_opts *opts,
                             fp4_compare_result *out);

/* Reports are read in bounded memory (compare, merge): a report file over
 * FP4_COMPARE_MAX_BYTES (256 MiB) is refused before it is read (a pipe once it has given
 * more), and a report is parsed only when its parsed form fits what is left of a budget of
 * FP4_REPORT_PARSE_MAX (1 GiB) shared by every report of the command: FP4_REPORT_VALUE_BYTES
 * (80) per JSON value (each cJSON node with its allocation) plus the text. Our reports take
 * 19-23 bytes of text per value, so a report past 256 MiB would need more than the budget in
 * any case; a text of tiny values ("[1,1,1,...]", 2 bytes each) is refused before parsing. */
#define FP4_COMPARE_MAX_BYTES (256 << 20)
#define FP4_REPORT_PARSE_MAX ((int64_t)1 << 30)
#define FP4_REPORT_VALUE_BYTES 80

/* The memory the parsed form of JSON `text` (len bytes) is estimated to take: values x
 * FP4_REPORT_VALUE_BYTES + len, counting every object, array, string (keys included), number
 * and literal in one pass without allocating (not a validation: the parse does that). */
int64_t fp4_report_parse_cost(const char *text, size_t len);

/* The whole of a report file ("-": stdin) as a NUL-terminated malloc'd string, for compare and
 * merge: only a regular file or a pipe is read (never a device such as /dev/zero, nor a
 * directory), at most FP4_COMPARE_MAX_BYTES, stopping at a NUL byte (binary data); then its
 * fp4_report_parse_cost is taken from *budget, and a report costing more than is left is
 * refused ("PATH: N JSON values in M MiB would take about K MiB to parse, more than the
 * L MiB left of the 1024 MiB that the reports of one command may take") and not kept. FP4_ERR_INPUT "PATH: why";
 * FP4_ERR_INTERNAL when out of memory. */
fp4_status fp4_report_file_read_budget(const char *path, int64_t *budget, char **text);

/* fp4_report_file_read_budget with a budget of its own (FP4_REPORT_PARSE_MAX). */
fp4_status fp4_report_file_read(const char *path, char **text);

/* As fp4_compare_texts, reading the two files ("-" is stdin, at most one of them).
 * Errors: also FP4_ERR_INPUT when a file cannot be read. */
fp4_status fp4_compare_files(const char *base_path, const char *new_path,
                             const fp4_compare_opts *opts, fp4_compare_result *out);

void fp4_compare_result_free(fp4_compare_result *r);

#endif
