/* arm.c — the aarch64 variant of the CPU engine (neon): the grouped kernel and loader in GCC
 * vectors lowered to Advanced SIMD, with the FMA-corrected level quotient (aarch64 always has
 * a fused multiply-add; see group_body). Same bits as ref.c (test_engine, make check-aarch64). */
#include "engine/engine_impl.h"

#if defined(__aarch64__) && defined(__GNUC__)
static void group_neon(GROUP_ARGS) { group_body(GROUP_PASS, 1); }
static void load_neon(LOAD_ARGS) { group_load_body(LOAD_PASS); }

static const fp4_engine neon = {FP4_ISA_NEON, group_neon, load_neon, NULL, FP4_RHT_IMPL_SCALAR,
                                NULL};

const fp4_engine *fp4_engine_arm(fp4_isa isa) { return isa == FP4_ISA_NEON ? &neon : NULL; }
#else
const fp4_engine *fp4_engine_arm(fp4_isa isa)
{
    (void)isa;
    return NULL;
}
#endif
