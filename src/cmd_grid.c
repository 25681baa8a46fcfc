/* cmd_grid.c — `fp4diag grid` (not implemented yet). */
#include "commands.h"

const char fp4_usage_grid[] = "usage: fp4diag grid ...\n(not implemented yet)\n";

fp4_status cmd_grid(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return fp4_error(FP4_ERR_INTERNAL, "not implemented yet");
}
