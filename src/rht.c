/* rht.c — Random Hadamard Transform (SPEC §4): sign vectors (te, seed:N, none) and the
 * blocked transform, fp64 butterfly in common.h's fixed order, rounded once to fp32. */
#include "rht.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static int is_pow2_in(int n) { return n >= 16 && n <= FP4_RHT_MAX && (n & (n - 1)) == 0; }

fp4_status fp4_rht_signs_make(const char *spec, int n, fp4_rht_signs *out)
{
    if (!is_pow2_in(n))
        return fp4_error(FP4_ERR_USAGE, "rht size %d: must be a power of two in 16..256", n);
    if (!spec || !*spec) spec = "te";
    memset(out, 0, sizeof *out);
    out->n = n;
    if (strcmp(spec, "te") == 0) {
        /* TE's 16-vector, tiled for n > 16: s[i] = te16[i % 16] */
        for (int i = 0; i < n; i++) out->s[i] = (FP4C_RHT_TE_MASK >> (i % 16)) & 1u ? -1.0f : 1.0f;
        snprintf(out->desc, sizeof out->desc, "te");
    } else if (strcmp(spec, "none") == 0) {
        for (int i = 0; i < n; i++) out->s[i] = 1.0f;
        snprintf(out->desc, sizeof out->desc, "none");
    } else if (strncmp(spec, "seed:", 5) == 0) {
        const char *num = spec + 5;
        char *end = NULL;
        errno = 0;
        unsigned long long seed = strtoull(num, &end, 10);
        if (!*num || *num == '-' || *num == '+' || errno || !end || *end)
            return fp4_error(FP4_ERR_USAGE, "rht signs '%s': seed:N needs a decimal N", spec);
        for (int i = 0; i < n; i++)
            out->s[i] = fp4c_philox_word0(seed, (uint64_t)i, FP4C_RHT_SIGN_STREAM) & 1u ? -1.0f
                                                                                         : 1.0f;
        snprintf(out->desc, sizeof out->desc, "seed:%llu", seed);
    } else {
        return fp4_error(FP4_ERR_USAGE, "rht signs '%s': expected te, seed:N or none", spec);
    }
    return FP4_OK;
}

void fp4_rht_forward(const fp4_rht_signs *sg, const float *x, float *y, int64_t len)
{
    const int n = sg->n;
    const double rs = sqrt((double)n);
    double d[FP4_RHT_MAX];
    for (int64_t g = 0; g + n <= len; g += n) {
        for (int i = 0; i < n; i++) d[i] = (double)x[g + i] * (double)sg->s[i];
        fp4c_fwht_f64(d, n);
        for (int i = 0; i < n; i++) y[g + i] = (float)(d[i] / rs);
    }
}

void fp4_rht_inverse(const fp4_rht_signs *sg, const float *y, float *x, int64_t len)
{
    const int n = sg->n;
    const double rs = sqrt((double)n);
    double d[FP4_RHT_MAX];
    for (int64_t g = 0; g + n <= len; g += n) {
        for (int i = 0; i < n; i++) d[i] = (double)y[g + i];
        fp4c_fwht_f64(d, n);
        for (int i = 0; i < n; i++) x[g + i] = (float)(d[i] / rs * (double)sg->s[i]);
    }
}
