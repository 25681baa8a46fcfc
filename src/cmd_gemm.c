/* cmd_gemm.c — `fp4diag gemm` (not implemented yet). */
#include "commands.h"

const char fp4_usage_gemm[] = "usage: fp4diag gemm ...\n(not implemented yet)\n";

fp4_status cmd_gemm(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return fp4_error(FP4_ERR_INTERNAL, "not implemented yet");
}
