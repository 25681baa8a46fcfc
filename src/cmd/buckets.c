/* cmd_buckets.c — `fp4diag buckets`: 16-code histograms and the effective bucket ratios B15 and
 * B8 (SPEC §5); the shared analysis of cmd_analysis.c. */
#include "cmd/analysis.h"
#include "cmd/commands.h"

const char fp4_usage_buckets[] =
    "usage: fp4diag buckets [OPTIONS] FILE [DATASET|GROUP|GLOB ...]\n"
    "\n"
    "Bucket utilization of each tensor under each 4-bit format: the 16-code histogram\n"
    "(code = sign<<3 | magnitude), B15 = exp(H)/15 over the 15 signed values (+-0\n"
    "merged) and B8 = exp(H)/8 over the 8 magnitudes, per tensor and from\n"
    "the pooled histogram.\n"
    "Defaults: --format e2m1,e1m2,int4 --scale fp32 --block 16\n"
    "--rounding rtne --rht off.\n"
    "\n"
    "options:\n" FP4_OPTIONS_HELP
    "\n"
    "Exit status: 0 ok, 2 usage, 3 input error (report still written),\n"
    "4 device error.\n";

fp4_status cmd_buckets(int argc, char **argv)
{
    return fp4_cmd_analysis("buckets", argc, argv, FP4_RHT_OFF, false, fp4_usage_buckets);
}
