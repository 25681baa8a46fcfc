/* isa.c — FP4DIAG_ISA read once, the CPU's features, the variant every dispatch runs, and
 * the record of which variant each dispatch ran (isa.h). */
#include "base/isa.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const isa_names[FP4_ISA_COUNT] = {"generic", "avx2", "avx512", "neon"};
static const char *const site_names[FP4_ISA_SITE_COUNT] = {"quant",  "rht",       "amax",
                                                           "counts", "words-max", "widen-f16"};

const char *fp4_isa_name(fp4_isa isa)
{
    return (int)isa >= 0 && isa < FP4_ISA_COUNT ? isa_names[isa] : "?";
}

const char *fp4_isa_site_name(fp4_isa_site site)
{
    return (int)site >= 0 && site < FP4_ISA_SITE_COUNT ? site_names[site] : "?";
}

fp4_status fp4_isa_parse(const char *s, fp4_isa *out)
{
    for (int i = 0; s && i < FP4_ISA_COUNT; i++)
        if (strcmp(s, isa_names[i]) == 0) {
            *out = (fp4_isa)i;
            return FP4_OK;
        }
    char *shown = fp4_text_escape(s ? s : "", FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
    fp4_status st = fp4_error(FP4_ERR_USAGE, "unknown instruction set '%s' (known: generic, "
                              "avx2, avx512, neon)", shown ? shown : "?");
    free(shown);
    return st;
}

bool fp4_isa_cpu_runs(fp4_isa isa)
{
    switch (isa) {
    case FP4_ISA_GENERIC: return true;
#ifdef FP4_ISA_X86
    case FP4_ISA_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case FP4_ISA_AVX512:
        return fp4_isa_cpu_runs(FP4_ISA_AVX2) && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512dq");
#endif
#if defined(__aarch64__) && defined(__GNUC__)
    case FP4_ISA_NEON: return true; /* Advanced SIMD is part of every aarch64 CPU */
#endif
    default: return false;
    }
}

static fp4_isa isa_widest(void)
{
    static const fp4_isa widest[] = {FP4_ISA_AVX512, FP4_ISA_AVX2, FP4_ISA_NEON};
    for (size_t i = 0; i < sizeof widest / sizeof *widest; i++)
        if (fp4_isa_cpu_runs(widest[i])) return widest[i];
    return FP4_ISA_GENERIC;
}

/* Resolved once (under a lock: the first caller may be any thread): env_status is
 * fp4_isa_init's answer, env_isa the variant it chose (the default when unset or refused). */
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static fp4_status env_status;
static char env_msg[FP4_ERROR_MAX];
static fp4_isa env_isa;

static void env_resolve(void)
{
    env_isa = isa_widest();
    env_status = FP4_OK;
    const char *env = getenv("FP4DIAG_ISA");
    if (!env || !*env) return;
    fp4_isa isa;
    if (fp4_isa_parse(env, &isa) != FP4_OK) {
        /* as cmd/env.c shows every FP4DIAG_* value: cut to 64 characters, escaped */
        char cut[68];
        snprintf(cut, sizeof cut, "%.64s%s", env, strlen(env) > 64 ? "..." : "");
        char *shown = fp4_text_escape(cut, FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
        snprintf(env_msg, sizeof env_msg,
                 "FP4DIAG_ISA='%s': want generic, avx2, avx512 or neon", shown ? shown : "?");
        free(shown);
        env_status = FP4_ERR_USAGE;
        fp4_error_clear();
        return;
    }
    if (fp4_isa_cpu_runs(isa)) {
        env_isa = isa;
        return;
    }
    fprintf(stderr, "fp4diag: FP4DIAG_ISA=%s: this build or CPU does not run it; using %s\n",
            fp4_isa_name(isa), fp4_isa_name(env_isa));
}

fp4_status fp4_isa_init(void)
{
    pthread_once(&env_once, env_resolve);
    return env_status == FP4_OK ? FP4_OK : fp4_error(env_status, "%s", env_msg);
}

static int isa_used = -1; /* fp4_isa_use's, or -1 */

fp4_isa fp4_isa_active(void)
{
    const int u = __atomic_load_n(&isa_used, __ATOMIC_RELAXED);
    if (u >= 0) return (fp4_isa)u;
    pthread_once(&env_once, env_resolve);
    return env_isa;
}

bool fp4_isa_use(fp4_isa isa)
{
    if (isa == FP4_ISA_COUNT) {
        __atomic_store_n(&isa_used, -1, __ATOMIC_RELAXED);
        return true;
    }
    if ((int)isa < 0 || isa > FP4_ISA_COUNT || !fp4_isa_cpu_runs(isa)) return false;
    __atomic_store_n(&isa_used, (int)isa, __ATOMIC_RELAXED);
    return true;
}

fp4_isa fp4_isa_dispatch(fp4_isa_site site)
{
    const fp4_isa a = fp4_isa_active();
    const fp4_isa r = a == FP4_ISA_AVX512 || a == FP4_ISA_AVX2 ? a : FP4_ISA_GENERIC;
    fp4_isa_note(site, r);
    return r;
}

static int isa_ran[FP4_ISA_SITE_COUNT] = {-1, -1, -1, -1, -1, -1};

void fp4_isa_note(fp4_isa_site site, fp4_isa ran)
{
    /* read first: the threads of one pass record the same variant, and a store only when it
     * changes keeps the line shared between their caches */
    if (__atomic_load_n(&isa_ran[site], __ATOMIC_RELAXED) != (int)ran)
        __atomic_store_n(&isa_ran[site], (int)ran, __ATOMIC_RELAXED);
}

int fp4_isa_ran(fp4_isa_site site)
{
    return (int)site >= 0 && site < FP4_ISA_SITE_COUNT
               ? __atomic_load_n(&isa_ran[site], __ATOMIC_RELAXED)
               : -1;
}

void fp4_isa_ran_describe(char *buf, size_t n)
{
    if (!n) return;
    size_t o = (size_t)snprintf(buf, n, "active=%s", fp4_isa_name(fp4_isa_active()));
    for (int i = 0; i < FP4_ISA_SITE_COUNT && o < n; i++) {
        const int r = fp4_isa_ran((fp4_isa_site)i);
        o += (size_t)snprintf(buf + o, n - o, " %s=%s", site_names[i],
                              r < 0 ? "-" : fp4_isa_name((fp4_isa)r));
    }
}

void fp4_isa_ran_reset(void)
{
    for (int i = 0; i < FP4_ISA_SITE_COUNT; i++) __atomic_store_n(&isa_ran[i], -1, __ATOMIC_RELAXED);
}
