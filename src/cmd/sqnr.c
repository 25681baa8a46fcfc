/* cmd_sqnr.c — `fp4diag sqnr`: SQNR, NMSE and attenuation of every selected tensor under each
 * format (SPEC §5); the shared analysis of cmd_analysis.c with --rht off by default. */
#include "cmd/analysis.h"
#include "cmd/commands.h"

const char fp4_usage_sqnr[] =
    "usage: fp4diag sqnr [OPTIONS] FILE [DATASET|GROUP|GLOB ...]\n"
    "\n"
    "SQNR (dB), NMSE and attenuation alpha of each tensor under each 4-bit format,\n"
    "per tensor and pooled over all tensors (energy-weighted). No DATASET: every\n"
    "floating-point tensor of rank >= 2 in FILE (the rest is listed as skipped;\n"
    "--all-tensors takes it too).\n"
    "On a terminal: the table (--json or -o FILE for the JSON report);\n"
    "else JSON on stdout.\n"
    "Defaults: --format e2m1,e1m2,int4 --scale fp32 --block 16\n"
    "--rounding rtne --rht off.\n"
    "\n"
    "options:\n" FP4_OPTIONS_HELP
    "\n"
    "Exit status: 0 ok, 2 usage, 3 input error (the report is still written when only\n"
    "some tensors failed; they are listed in \"errors\"), 4 device error.\n";

fp4_status cmd_sqnr(int argc, char **argv)
{
    return fp4_cmd_analysis("sqnr", argc, argv, FP4_RHT_OFF, false, fp4_usage_sqnr);
}
