/* generic.c — the portable variant of the CPU engine: the grouped kernel in GCC vectors
 * with the baseline instruction set of the target (SSE2 on x86-64, Advanced SIMD on aarch64),
 * the level quotient as a division. Any CPU runs it. */
#include "engine/engine_impl.h"

static void group_plain(GROUP_ARGS) { group_body(GROUP_PASS, 0); }
static void load_plain(LOAD_ARGS) { group_load_body(LOAD_PASS); }

static void nv_params_plain(NV_ARGS) { group_params_nv(NV_PASS); }

const fp4_engine fp4_engine_generic = {FP4_ISA_GENERIC, group_plain, load_plain, NULL, 0,
                                       nv_params_plain, 0};
