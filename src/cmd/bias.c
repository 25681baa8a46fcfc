/* cmd_bias.c — `fp4diag bias`: shrinkage bias — per-level analytic vs measured bias, mean signed
 * error, alpha, delta (SPEC §5); the shared analysis of cmd_analysis.c. */
#include "cmd/analysis.h"
#include "cmd/commands.h"

const char fp4_usage_bias[] =
    "usage: fp4diag bias [OPTIONS] FILE [DATASET|GROUP|GLOB ...]\n"
    "\n"
    "Shrinkage bias of each tensor under each 4-bit format: attenuation\n"
    "alpha = <xq,x>/<x,x>, delta = 1 - alpha, mean signed normalized error, and per\n"
    "level the analytic conditional bias (l - r)/2 next to the measured mean error\n"
    "and occupancy (the table shows them pooled with -v, the JSON per tensor).\n"
    "--layers K adds the compound shrinkage prod(1 - delta) and exp(-K delta)\n"
    "of the pooled delta over K layers.\n"
    "Defaults: --format e2m1,e1m2,int4 --scale fp32 --block 16\n"
    "--rounding rtne --rht off.\n"
    "\n"
    "options:\n" FP4_OPTIONS_HELP
    "\n"
    "Exit status: 0 ok, 2 usage, 3 input error (report still written),\n"
    "4 device error.\n";

fp4_status cmd_bias(int argc, char **argv)
{
    return fp4_cmd_analysis("bias", argc, argv, FP4_RHT_OFF, false, fp4_usage_bias);
}
