/* report_gemm.h — the `gemm` report (SPEC §6, §9): "layers" [ {name, recipe, paths […]} ]
 * instead of "tensors", built with cJSON (part of the report module: report.c and this file
 * are the only cJSON users), and the human table of a gemm run. */
#ifndef FP4_REPORT_GEMM_H
#define FP4_REPORT_GEMM_H

#include <stdbool.h>
#include <stdio.h>

#include "io/fingerprint.h"
#include "run/gemm.h"
#include "run/config.h"
#include "run/shard.h"
#include "base/status.h"

/* A finished gemm run: its run configuration, the resolved gemm config, the selected
 * paths (mask), the layers in command-line order, and timing. */
/* A layer that could not be run (an operand unreadable, too large, shapes disagreeing): an
 * `errors` entry; the other layers still run. */
typedef struct fp4_gemm_error {
    char *layer;   /* the layer's name (owned) */
    char *message; /* one line naming the file and dataset (owned) */
} fp4_gemm_error;

typedef struct fp4_gemm_run {
    const fp4_run_config *config;
    const fp4_gemm_config *gc;
    unsigned paths;
    fp4_gemm_layer *layers;
    int nlayers;
    fp4_gemm_error *errors;
    int nerrors;
    /* --shard (config->shard.count > 0): every layer the run selected (names, in order), this
     * share's positions in it, and the position of each of layers[] and of errors[] */
    char **selected;
    int nselected;
    int *assigned;
    int nassigned;
    int *index;
    int *error_index;
    const fp4_shard_shape (*inputs)[3]; /* --shard: [nselected][x, w, dy], each operand's shape
                                            and dtype as described before any layer is read
                                            (dtype "": none), shard.inputs */
    const fp4_file_print *prints; /* --shard: the fingerprint of the operand files */
    int nprints;
    double seconds;
    int64_t bytes_read;
} fp4_gemm_run;

/* The report as a malloc'd JSON string (argv[0] = "fp4diag"); NULL when out of memory. */
char *fp4_report_gemm_json(int argc, char **argv, const fp4_gemm_run *run);

/* The report's "summary" object (per selected path: the layers pooled in order, and the
 * compound gain under --layers) from run->config->layers, run->paths and each layer's paths, sums
 * and eta. NULL when out of memory. (struct cJSON: the report module's cJSON type.) */
struct cJSON;
struct cJSON *fp4_report_gemm_summary(const fp4_gemm_run *run);

/* The report's "verdict" object (pooled SQNR and eta per path, the worst path, the layers
 * ranked by run->config->rank_by) from run->gc->recipe, the paths and each layer's name, paths,
 * sums, SQNR and eta. NULL when out of memory. */
struct cJSON *fp4_report_gemm_verdict(const fp4_gemm_run *run);

/* Build the report, write it to run->config->output (stdout when NULL) with fp4_output_write, and
 * print the table where fp4_report_table_stream says (report.h); terminal first (stdout a
 * terminal, no -o, no --json, not -q): the table on stdout in place of the JSON.
 * FP4_ERR_INPUT on a write error, FP4_ERR_INTERNAL when out of memory. */
fp4_status fp4_report_gemm(int argc, char **argv, const fp4_gemm_run *run);

/* The human table: one line per (layer, path): SQNR, η, α_A·α_B and both operands' SQNRs. */
void fp4_report_gemm_table(FILE *out, const fp4_gemm_run *run);

#endif
