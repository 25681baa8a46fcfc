/* merge.h — put the partial reports of one run's shares (`--shard I/N`, or the ranks of an MPI
 * run) back together into the report one process would have written (SPEC §7, §9). Part of the
 * report module: with report.c and report_gemm.c, the only cJSON user. */
#ifndef FP4_MERGE_H
#define FP4_MERGE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/status.h"
#include "run/config.h"

/* What the merged report holds, for the caller's exit status and messages. */
typedef struct fp4_merge_result {
    char *text;          /* the merged report, JSON + newline (malloc'd) */
    char command[16];    /* "sqnr", "bias", "buckets", "rht", "gemm" or "audit" */
    int nerrors;         /* entries of its "errors" */
    int nunits;          /* tensors (or layers) selected by the run */
    char first_error[512]; /* the message of its first "errors" entry ("" when none) */
} fp4_merge_result;

/* The run configuration of an analysis report's command line: argv[0..argc) is its "argv"
 * after "fp4diag" (argv[0] the command name, "sqnr"), parsed over that command's defaults.
 * String fields of *out may point into argv's strings (they outlive the merge). FP4_ERR_USAGE
 * with a detail when it does not parse. The program supplies it (how argv reads is its
 * business, not the report's): fp4_options_config_of_argv. */
typedef fp4_status (*fp4_merge_config_fn)(int argc, char **argv, fp4_run_config *out);

/* Merge the partial reports texts[0..n) (JSON; names[i] is how messages call part i: its file
 * name, "rank 2"). Every part must be a partial report (a "shard" object) of the same run:
 * same tool version, command, options (config), input and argv apart from --shard and -o, the
 * same share count N, each share 0..N-1 given once, and together their shares cover the
 * selection once. The result is the report of one process: tensors (layers) in selection
 * order, the summary pooled from the parts' exact per-tensor sums in that order (bit for bit
 * the single run's), errors in selection order; "timing" has the largest part's seconds and
 * the parts' bytes summed. Its "argv" is the parts' without --shard, with -o `output` (none
 * when output is NULL).
 * Errors: FP4_ERR_INPUT naming the parts: not JSON, not an fp4diag report, not a partial
 * report, of another run than the first part ("foreign": naming what differs), a share given
 * twice, shares missing (naming them), a part whose tensors do not re-render as written, a
 * gemm part whose layers' sqnr_db, sqnr_status, eta or alpha_product are not what its exact
 * sums give (naming the layer, path and field), "timing" that no run writes (seconds not in
 * [0, one year], bytes_read not a whole number in [0, 2^53]), a part without a well-formed
 * shard.fingerprint or whose input files' sizes or hashes differ from the first part's
 * (naming the file);
 * FP4_ERR_INTERNAL when out of memory. Free res->text in every case. With `table` not NULL,
 * the human table of the merged report is printed there: an analysis' or gemm's as the run
 * prints it, an audit's pooled line (its per-tensor table needs the run's own data). config_of
 * rebuilds an analysis run's config from its argv (FP4_ERR_INPUT "its argv does not parse
 * here" when it fails). */
fp4_status fp4_merge_reports(const char *const *texts, const char *const *names, int n,
                             const char *output, FILE *table, fp4_merge_config_fn config_of,
                             fp4_merge_result *res);

/* The input files the parts' provenance names, for the -o check (SPEC §9: never a write over
 * an input): every "file" of each part's provenance.inputs and shard.fingerprint, and the
 * paths of its "input" (file; an audit's source and quantized), as written (a
 * relative path is the run's, read here from the current directory). A part that is not JSON
 * names nothing (the merge says why). *files is malloc'd with malloc'd paths, duplicates kept;
 * free each and the array. FP4_ERR_INTERNAL when out of memory. */
fp4_status fp4_merge_input_files(const char *const *texts, int n, char ***files, int *nfiles);

#endif
