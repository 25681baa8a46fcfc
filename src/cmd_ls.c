/* cmd_ls.c — `fp4diag ls` (not implemented yet). */
#include "commands.h"

const char fp4_usage_ls[] = "usage: fp4diag ls ...\n(not implemented yet)\n";

fp4_status cmd_ls(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return fp4_error(FP4_ERR_INTERNAL, "not implemented yet");
}
