/* report.h — every cJSON call lives in report.c: the JSON report of SPEC §9 (schema
 * "fp4diag.report/1", see schema/report.schema.json), its safe output to stdout or -o FILE, and
 * the short human table on stderr. */
#ifndef FP4_REPORT_H
#define FP4_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "run/driver.h"
#include "num/format.h"
#include "run/config.h"
#include "report/output.h"
#include "base/status.h"

#define FP4_REPORT_SCHEMA "fp4diag.report/1"

/* Build the analysis report (command "sqnr", "bias", "buckets" or "rht") of a finished run and
 * write it with fp4_output_write to run->config->output. argc/argv are the command's (argv[0] =
 * the command name); the report's "argv" is "fp4diag" followed by them. Also prints the human
 * table where fp4_report_table_stream says (-o FILE and stdout a terminal: stdout; -v:
 * stderr); when fp4_report_terminal_first, the table goes to stdout in place of the JSON.
 * FP4_ERR_INPUT on a write error, FP4_ERR_INTERNAL when out of memory. */
fp4_status fp4_report_analysis(const char *command, int argc, char **argv, const fp4_run *run);

/* Terminal first: true when the human table replaces the JSON on stdout — stdout is a
 * terminal, no -o, no --json, no -q. fp4_report_terminal_note prints the one line saying how
 * to get the JSON (FP4_ERR_INPUT on a write error). */
bool fp4_report_terminal_first(const fp4_run_config *c);
fp4_status fp4_report_terminal_note(void);

/* Quiet on a terminal: -q, stdout a terminal, no -o, no --json (output and json as the
 * command has them). Nothing goes to stdout then: no table, no JSON flooding the terminal;
 * fp4_report_quiet_note says on stderr, in one line, that no report was written and how to
 * get one. */
bool fp4_report_quiet_terminal(const char *output, bool json, int verbosity);
void fp4_report_quiet_note(void);

/* Where the human table goes when the report itself is JSON (not terminal first; SPEC §9):
 * nowhere with -q (verbosity < 0); stdout when the JSON went to -o FILE and stdout is a
 * terminal; stderr with -v; else nowhere (NULL): by default stderr carries progress and
 * warnings only, so a JSON piped to another program is never interleaved with a table. */
FILE *fp4_report_table_stream(const char *output, int verbosity);

/* The same report as a malloc'd JSON string (for tests); NULL when out of memory. */
char *fp4_report_analysis_json(const char *command, int argc, char **argv, const fp4_run *run);

/* Entry t (0 <= t < run->ntensors) of the report's "tensors" array as a malloc'd JSON text at
 * top level, ending in a newline: the bytes fp4_report_analysis writes for it, less the two
 * tabs of indentation its nesting gives each line after the first (invalid UTF-8 escaped as
 * there). NULL for a bad t or when out of memory. The public API's fp4d_result_json. */
char *fp4_report_tensor_json(const fp4_run *run, int t);

/* The exact state of a finished fp4_metrics that pooling reads (the 13 fp64 sums as C99 hex
 * floats, the integer counts, the tensor amax), as a partial report (--shard) holds it per
 * tensor and config under "shard"; and its parser (false on a malformed or inexact object).
 * A cJSON object (struct cJSON: report.c and merge.c are the cJSON users). */
struct cJSON;
struct cJSON *fp4_metrics_raw_json(const fp4_metrics *m);

/* A partial report's "shard.fingerprint": per input file (io/fingerprint.h) {file, size, xxh3
 * (16 hex digits), hashed (bytes in the sample)}, in the given (path) order. */
struct cJSON *fp4_report_fingerprint_json(const fp4_file_print *p, int n);
bool fp4_metrics_raw_parse(const struct cJSON *o, fp4_metrics *m);

/* A skipped already-quantized tensor's "quant" object (SPEC §10): {format, producer, layout,
 * block, histogram (16 counts, code order), scale_bytes, special_scale_bytes {e8m0_ff,
 * e4m3_nan}, scales {zero, nonfinite, min, max (null when none)}, tensor_scale (null when
 * none)}; NULL when out of memory. Its parser (merge): false on a malformed object. */
struct cJSON *fp4_qsummary_json(const fp4_qsummary *q);
bool fp4_qsummary_parse(const struct cJSON *o, fp4_qsummary *q);

/* Every report's "provenance" (SPEC §9 "Provenance"): {time (UTC, "YYYY-MM-DDTHH:MM:SSZ";
 * SOURCE_DATE_EPOCH when set to whole seconds, for reproducible output), version, build {cuda
 * (built in), isa (the CPU engine variant that ran), isa_available (those this build and CPU
 * run)}, inputs (fp4_report_fingerprint_json of p[0..n): each input file's size and content
 * fingerprint)}. NULL when out of memory. */
struct cJSON *fp4_report_provenance_json(const fp4_file_print *p, int n);

/* The status of an errors entry by its name in a report ("input_error", ...); FP4_ERR_INTERNAL
 * for an unknown name. */
fp4_status fp4_status_from_name(const char *name);

/* Tensors whose rows the default table shows: with more (and no -v) the verdict comes first
 * and only the rows of the tensors first in its ranking follow (SPEC §9 "Terminal output"). */
enum { FP4_TABLE_TOP_TENSORS = 24 };

/* The human table of a run (what fp4_report_analysis prints on a terminal) to `out`, fitted to
 * fp4_term_width(out) ($COLUMNS, else the terminal's width; none on a pipe or file): tensor
 * names elided in the middle to the room their column has, longer text lines wrapped at
 * spaces, numbers never split (SPEC §9 "Terminal output"). */
void fp4_report_table(FILE *out, const char *command, const fp4_run *run);

/* The `grid` report: levels, bin edges, half-widths and analytic bias of each format
 * (SPEC §2, §5), written to `output` (NULL = stdout). Terminal first as the analyses: stdout a
 * terminal, no -o, no --json (`json`) and verbosity >= 0 -> the table on stdout in place of the
 * JSON; -q there -> nothing on stdout (fp4_report_quiet_note). Otherwise the JSON, and the
 * table on stderr when it is a terminal or verbosity > 0 (never when verbosity < 0). */
fp4_status fp4_report_grid(int argc, char **argv, const fp4_format *formats, int nformats,
                           const char *output, bool json, int verbosity);
char *fp4_report_grid_json(int argc, char **argv, const fp4_format *formats, int nformats);

/* Names and paths come from files and command lines and need not be valid UTF-8, which JSON
 * must be. Escape each invalid byte of every string under `root` as the text \xNN and, when
 * any was, add FP4_NOTE_NOT_UTF8 to root's "notes" array (created if missing). Returns
 * whether anything was escaped. Every report and `ls --json` pass through it. */
typedef struct cJSON cJSON;
bool fp4_json_make_valid(cJSON *root);
#define FP4_NOTE_NOT_UTF8                                                                      \
    "a name or path is not valid UTF-8: each byte that is not is written as \\xNN"

/* cJSON_Print(root) (the formatted text, no trailing newline), byte for byte, with the
 * elements of root's member arrays (a report's tensors, errors, layers) printed in parallel on
 * the OpenMP threads: each is printed alone and indented to its place. Number formatting is
 * most of a large report's writing time. The tree is left as it was. Returns a string for
 * cJSON_free, NULL on OOM (as cJSON_Print). */
char *fp4_json_print(cJSON *root);

/* Whether two JSON values are alike exactly: of one type (false, true and null equal their
 * kind), numbers the same double and sign (-0 is not 0; 1e999, read as inf, equals no finite
 * number), strings (and raw text) the same bytes, arrays element by element in order. Objects:
 * `by_name`, the same members by name in any order (for documents without a key twice, as
 * compare's parse_doc checks: SPEC §9 compare's config_diff); else member by member in order,
 * keys included (a run writes them in one order: merge's checks of its parts, SPEC §7). NULL
 * equals only NULL. Not cJSON_Compare, which takes two numbers within a relative DBL_EPSILON
 * as equal, and an infinite one as equal to any number. */
bool fp4_json_same(const cJSON *a, const cJSON *b, bool by_name);

#endif
