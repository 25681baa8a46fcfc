/* arm.c — the aarch64 variant of the CPU engine (neon). */
#include "engine/engine_impl.h"

const fp4_engine *fp4_engine_arm(fp4_isa isa)
{
    (void)isa;
    return NULL;
}
