/* isa.h — the one place that decides which instruction-set variant the CPU code runs
 * (SPEC §7: every variant gives the same bits; they differ in speed only). FP4DIAG_ISA is read
 * and checked here once; every dispatch (the engine's kernels, the RHT, the amax passes on
 * fp32 rows and on stored words, the zero/NaN/Inf counts, the f16 widening) asks
 * fp4_isa_active() and records what it ran (fp4_isa_ran), so a test can see that a variant
 * runs its own code everywhere. */
#ifndef FP4_ISA_H
#define FP4_ISA_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

/* One row per instruction set:
 *   generic  portable C (GCC vectors): every CPU, aarch64 included
 *   avx2     x86-64 AVX2 + FMA
 *   avx512   x86-64 AVX-512 F/VL/BW/DQ
 *   neon     aarch64 Advanced SIMD */
typedef enum fp4_isa {
    FP4_ISA_GENERIC = 0,
    FP4_ISA_AVX2,
    FP4_ISA_AVX512,
    FP4_ISA_NEON,
    FP4_ISA_COUNT
} fp4_isa;

/* "generic", "avx2", "avx512", "neon"; "?" out of range. */
const char *fp4_isa_name(fp4_isa isa);
/* The name as fp4_isa_name spells it; FP4_ERR_USAGE with the value (escaped) and the known
 * names otherwise. */
fp4_status fp4_isa_parse(const char *s, fp4_isa *out);

/* Whether this build compiles isa's code and this CPU (and OS) runs its instructions. generic
 * always. */
bool fp4_isa_cpu_runs(fp4_isa isa);

/* Read FP4DIAG_ISA (once per process; later calls return the first answer): unset or "" is
 * the default; a known name this CPU does not run is a one-line warning on stderr and the
 * default; anything else is FP4_ERR_USAGE, "FP4DIAG_ISA='VALUE': want generic, ..." with the
 * value cut to 64 characters and its control characters and invalid UTF-8 escaped (the
 * program exits 2 with it before any command runs: cmd/env.c). */
fp4_status fp4_isa_init(void);

/* The variant every dispatch runs: the one fp4_isa_use set, else FP4DIAG_ISA's (fp4_isa_init;
 * an unknown value falls back to the default here, the program refused it before), else
 * the widest this CPU runs (avx512, avx2, neon, generic). Always one fp4_isa_cpu_runs accepts. */
fp4_isa fp4_isa_active(void);

/* Run every later dispatch on isa (FP4_ISA_COUNT: back to the choice above); false, changing
 * nothing, when this CPU does not run it. Process-wide; for tests and benchmarks, not while
 * another thread is inside a dispatch. */
bool fp4_isa_use(fp4_isa isa);

/* The dispatches, for fp4_isa_ran. */
typedef enum fp4_isa_site {
    FP4_ISA_SITE_QUANT = 0, /* engine: the grouped quantizer's kernels (fp4_engine) */
    FP4_ISA_SITE_RHT,       /* num/rht.c: fp4_rht_forward */
    FP4_ISA_SITE_AMAX,      /* engine: the finite amax over fp32 values (fp4_amax_row) */
    FP4_ISA_SITE_COUNTS,    /* engine: zero/NaN/Inf counts of the input (fp4_input_counts) */
    FP4_ISA_SITE_WORDS_MAX, /* backend/cpu.c: the amax over stored f16/bf16 words */
    FP4_ISA_SITE_WIDEN_F16, /* io/widen.c: f16 words widened to fp32 (avx2: F16C) */
    FP4_ISA_SITE_COUNT
} fp4_isa_site;

/* "quant", "rht", "amax", "counts", "words-max", "widen-f16"; "?" out of range. */
const char *fp4_isa_site_name(fp4_isa_site site);

/* A dispatch records the variant whose code it ran (a relaxed store, only when it changes). */
void fp4_isa_note(fp4_isa_site site, fp4_isa ran);
/* The variant site last ran since the start or fp4_isa_ran_reset, or -1 when it has not run. */
int fp4_isa_ran(fp4_isa_site site);
void fp4_isa_ran_reset(void);
/* "active=NAME quant=NAME rht=NAME ..." (every site; "-" where it has not run) into buf[n]
 * (cut to fit): the developer trace's last lines (FP4DIAG_TRACE, main.c). */
void fp4_isa_ran_describe(char *buf, size_t n);

/* For a dispatch with code for avx512, avx2 and the rest: the active variant as one of those
 * three (neon runs the portable code: generic), recorded for site. */
fp4_isa fp4_isa_dispatch(fp4_isa_site site);

/* Function attributes for the x86-64 variants (GCC/Clang). */
#if defined(__x86_64__) && defined(__GNUC__)
#define FP4_ISA_X86 1
#define FP4_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define FP4_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))
#endif

/* FP4_ISA_VARIANTS(site, ret, name, params, args): a loop written once, as
 *   static inline FP4_ISA_INLINE ret name##_body params
 * (no void return), compiled for AVX-512, AVX2 (x86-64) and the baseline, and the dispatcher
 *   static ret name params
 * that runs the one fp4_isa_dispatch(site) picks. The variants must give the same bits (the
 * loops it serves are integer or exact). */
#define FP4_ISA_INLINE __attribute__((always_inline))
#ifdef FP4_ISA_X86
#define FP4_ISA_VARIANTS(site, ret, name, params, args)                                         \
    FP4_TARGET_AVX512 static ret name##_avx512 params { return name##_body args; }             \
    FP4_TARGET_AVX2 static ret name##_avx2 params { return name##_body args; }                 \
    static ret name##_plain params { return name##_body args; }                                \
    static ret name params                                                                     \
    {                                                                                          \
        switch (fp4_isa_dispatch(site)) {                                                      \
        case FP4_ISA_AVX512: return name##_avx512 args;                                        \
        case FP4_ISA_AVX2: return name##_avx2 args;                                            \
        default: return name##_plain args;                                                     \
        }                                                                                      \
    }
#else
#define FP4_ISA_VARIANTS(site, ret, name, params, args)                                         \
    static ret name params                                                                     \
    {                                                                                          \
        fp4_isa_dispatch(site);                                                                \
        return name##_body args;                                                               \
    }
#endif

#endif
