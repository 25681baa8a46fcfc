/* cmd_compare.c — `fp4diag compare` (not implemented yet). */
#include "commands.h"

const char fp4_usage_compare[] = "usage: fp4diag compare ...\n(not implemented yet)\n";

fp4_status cmd_compare(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return fp4_error(FP4_ERR_INTERNAL, "not implemented yet");
}
