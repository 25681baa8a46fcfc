/* cmd_bias.c — `fp4diag bias` (not implemented yet). */
#include "commands.h"

const char fp4_usage_bias[] = "usage: fp4diag bias ...\n(not implemented yet)\n";

fp4_status cmd_bias(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return fp4_error(FP4_ERR_INTERNAL, "not implemented yet");
}
