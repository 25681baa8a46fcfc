/* format.c — the traits table of the 4-bit element grids (SPEC §2) and their names/parsers.
 * The magnitudes here must equal common.h's switch (test_format checks every entry). */
#include "num/format.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"

static const fp4_format_traits fp4_traits[FP4_FMT_COUNT] = {
    [FP4_FMT_E2M1] = {"e2m1", {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f}, 6.0f, 2},
    [FP4_FMT_E1M2] = {"e1m2", {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f}, 3.5f, 1},
    [FP4_FMT_INT4] = {"int4", {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f}, 7.0f, 2},
    [FP4_FMT_E3M0] = {"e3m0", {0.0f, 0.25f, 0.5f, 1.0f, 2.0f, 4.0f, 8.0f, 16.0f}, 16.0f, 4},
};
_Static_assert(sizeof fp4_traits / sizeof fp4_traits[0] == FP4_FMT_COUNT,
               "traits table and fp4_format_id differ in length");
_Static_assert(FP4_FMT_E2M1 == FP4C_E2M1 && FP4_FMT_E1M2 == FP4C_E1M2 &&
                   FP4_FMT_INT4 == FP4C_INT4 && FP4_FMT_E3M0 == FP4C_E3M0,
               "format ids differ between format.h and common.h");

const fp4_format_traits *fp4_format_traits_of(fp4_format_id id)
{
    if ((int)id < 0 || id >= FP4_FMT_COUNT) return NULL;
    return &fp4_traits[id];
}

fp4_status fp4_format_parse(const char *s, fp4_format *out)
{
    if (!s) return fp4_error(FP4_ERR_USAGE, "format: missing name");
    size_t len = strcspn(s, ":");
    for (int i = 0; i < FP4_FMT_COUNT; i++) {
        if (strlen(fp4_traits[i].name) != len || strncmp(s, fp4_traits[i].name, len) != 0)
            continue;
        fp4_format f = {(fp4_format_id)i, 0};
        if (s[len] == ':') {
            const char *opt = s + len + 1;
            if (i != FP4_FMT_E2M1 || strncmp(opt, "max=", 4) != 0 || !opt[4] || opt[5] ||
                opt[4] < '2' || opt[4] > '4')
                return fp4_error(FP4_ERR_USAGE,
                                 "format '%s': only e2m1:max=M with M in 2, 3, 4 is known", s);
            f.max = opt[4] - '0';
        }
        *out = f;
        return FP4_OK;
    }
    return fp4_error(FP4_ERR_USAGE, "unknown format '%s' (known: e2m1, e1m2, int4, e3m0, "
                                    "e2m1:max=M; nvfp4, mxfp4: e2m1 with those scales)",
                     s);
}

fp4_status fp4_format_parse_list(const char *s, fp4_format *out, int cap, int *n)
{
    *n = 0;
    if (!s) return fp4_error(FP4_ERR_USAGE, "format: empty list");
    if (strcmp(s, "all") == 0) {
        if (cap < FP4_FMT_COUNT)
            return fp4_error(FP4_ERR_USAGE, "format: 'all' is more than %d formats", cap);
        for (int i = 0; i < FP4_FMT_COUNT; i++) out[i] = (fp4_format){(fp4_format_id)i, 0};
        *n = FP4_FMT_COUNT;
        return FP4_OK;
    }
    const char *p = s;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len == 0) return fp4_error(FP4_ERR_USAGE, "format list '%s': empty item", s);
        if (*n >= cap) return fp4_error(FP4_ERR_USAGE, "format list '%s': more than %d", s, cap);
        char item[32];
        if (len >= sizeof item) return fp4_error(FP4_ERR_USAGE, "unknown format in '%s'", s);
        memcpy(item, p, len);
        item[len] = 0;
        FP4_TRY(fp4_format_parse(item, &out[*n]));
        (*n)++;
        if (!p[len]) break;
        p += len + 1;
    }
    return FP4_OK;
}

void fp4_format_name(fp4_format f, char *buf, size_t n)
{
    const fp4_format_traits *t = fp4_format_traits_of(f.id);
    if (!n) return;
    if (!t) snprintf(buf, n, "?");
    else if (f.max) snprintf(buf, n, "%s:max=%d", t->name, f.max);
    else snprintf(buf, n, "%s", t->name);
}

int fp4_format_levels(fp4_format f, float levels[8], float *g_max)
{
    const fp4_format_traits *t = fp4_format_traits_of(f.id);
    if (!t) return 0;
    int k = 0;
    for (int i = 0; i < 8; i++)
        if (!f.max || t->mag[i] <= (float)f.max) levels[k++] = t->mag[i];
    for (int i = k; i < 8; i++) levels[i] = levels[k - 1];
    if (g_max) *g_max = levels[k - 1];
    return k;
}

bool fp4_format_same_grid(fp4_format a, fp4_format b)
{
    float la[8], lb[8], ga, gb;
    int na = fp4_format_levels(a, la, &ga), nb = fp4_format_levels(b, lb, &gb);
    if (na == 0 || na != nb || !(ga > 0.0f) || !(gb > 0.0f)) return false;
    int k;
    if (frexpf(gb / ga, &k) != 0.5f) return false; /* the ratio is not a power of two */
    for (int i = 0; i < na; i++)
        if (ldexpf(la[i], k - 1) != lb[i]) return false;
    return true;
}
