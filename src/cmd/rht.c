/* cmd_rht.c — `fp4diag rht`: each format with and without the Random Hadamard Transform side by
 * side, with ΔSQNR, Δα, ΔB15, ΔB8 per tensor and pooled (SPEC §4, §5). */
#include "cmd/analysis.h"
#include "cmd/commands.h"
#include "cmd/options.h"

const char fp4_usage_rht[] =
    "usage: fp4diag rht [OPTIONS] FILE [DATASET|GROUP|GLOB ...]\n"
    "\n"
    "Each format with and without the Random Hadamard Transform (--rht both, always),\n"
    "side by side: per tensor and pooled, rht_delta holds\n"
    "dSQNR = SQNR_rht - SQNR_plain (dB), d_alpha, dB15 and dB8. Metrics with RHT are\n"
    "in the rotated domain (SPEC 4).\n"
    "Defaults: --format e2m1,e1m2,int4 --scale fp32 --block 16 --rounding rtne\n"
    "--rht both --rht-size 16 --rht-signs te.\n"
    "\n"
    "options (--rht is fixed at both here: 'sqnr --rht on' gives one side):\n"
    FP4_OPTHELP_FORMAT FP4_OPTHELP_SCALE FP4_OPTHELP_AXIS FP4_OPTHELP_SR FP4_OPTHELP_RHT_SHAPE
    FP4_OPTHELP_LAYERS FP4_OPTHELP_SELECT FP4_OPTHELP_RUN FP4_OPTHELP_SHARD
        FP4_OPTHELP_RANK FP4_OPTHELP_IO FP4_OPTHELP_EMIT
    "\n"
    "Exit status: 0 ok, 2 usage, 3 input error (report still written),\n"
    "4 device error.\n";

fp4_status cmd_rht(int argc, char **argv)
{
    return fp4_cmd_analysis("rht", argc, argv, FP4_RHT_BOTH, true, fp4_usage_rht);
}
