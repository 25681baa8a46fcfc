/* cmd_analysis.h — the one implementation behind sqnr, bias, buckets and rht: they differ only in
 * their default options and in the columns of the human table (every report holds the full
 * result objects). */
#ifndef FP4_CMD_ANALYSIS_H
#define FP4_CMD_ANALYSIS_H

#include "cmd/options.h"
#include "base/status.h"

/* Parse the shared options over the command's defaults (formats e2m1,e1m2,int4; --rht
 * `default_rht`), expect `FILE [DATASET|GROUP|GLOB ...]`, run the streaming analysis and write
 * the report. force_both: the rht command, which compares each format with and without RHT and
 * refuses --rht off|on. Returns FP4_ERR_INPUT (exit 3) after writing the whole report when any
 * tensor failed. */
fp4_status fp4_cmd_analysis(const char *command, int argc, char **argv, fp4_rht_mode default_rht,
                            bool force_both, const char *usage);

#endif
