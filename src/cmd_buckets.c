/* cmd_buckets.c — `fp4diag buckets` (not implemented yet). */
#include "commands.h"

const char fp4_usage_buckets[] = "usage: fp4diag buckets ...\n(not implemented yet)\n";

fp4_status cmd_buckets(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return fp4_error(FP4_ERR_INTERNAL, "not implemented yet");
}
