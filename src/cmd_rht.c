/* cmd_rht.c — `fp4diag rht` (not implemented yet). */
#include "commands.h"

const char fp4_usage_rht[] = "usage: fp4diag rht ...\n(not implemented yet)\n";

fp4_status cmd_rht(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return fp4_error(FP4_ERR_INTERNAL, "not implemented yet");
}
