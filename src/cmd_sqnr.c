/* cmd_sqnr.c — `fp4diag sqnr` (not implemented yet). */
#include "commands.h"

const char fp4_usage_sqnr[] = "usage: fp4diag sqnr ...\n(not implemented yet)\n";

fp4_status cmd_sqnr(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return fp4_error(FP4_ERR_INTERNAL, "not implemented yet");
}
