/* format.h — the 4-bit element grids (SPEC §2) as one traits table: name, magnitudes, g_max,
 * emax. Adding a format is adding a row (see format.c); tests loop over the table. */
#ifndef FP4_FORMAT_H
#define FP4_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

typedef enum fp4_format_id {
    FP4_FMT_E2M1 = 0, /* 0, .5, 1, 1.5, 2, 3, 4, 6 — NVFP4/MXFP4 element */
    FP4_FMT_E1M2,     /* k/2, k = 0..7 — uniform, code == k */
    FP4_FMT_INT4,     /* 0..7 — symmetric sign-magnitude */
    FP4_FMT_E3M0,     /* 0, .25, .5, 1, 2, 4, 8, 16 — optional control */
    FP4_FMT_COUNT
} fp4_format_id;

/* One row of the traits table. mag[] is ascending, mag[0] == 0; the 3-bit magnitude code of
 * mag[i] is i; the 4-bit code is (sign << 3) | i. */
typedef struct fp4_format_traits {
    const char *name; /* "e2m1" … as on the command line and in reports */
    float mag[8];     /* magnitudes q_0 < … < q_7 */
    float g_max;      /* q_7 */
    int emax;         /* floor(log2 g_max): the MXFP4 E8M0 offset (SPEC §3) */
} fp4_format_traits;

/* A concrete grid: a table row plus the optional ablation cap of `e2m1:max=M` (SPEC §2). */
typedef struct fp4_format {
    fp4_format_id id;
    int max; /* 0: the full grid; else M in {2,3,4} (e2m1 only): levels up to M, g_max = M */
} fp4_format;

/* The table row of `id`; NULL when id is out of range. */
const fp4_format_traits *fp4_format_traits_of(fp4_format_id id);

/* Parse one name ("e2m1", "e1m2", "int4", "e3m0", "e2m1:max=3"). FP4_ERR_USAGE with a detail
 * naming the string when unknown. */
fp4_status fp4_format_parse(const char *s, fp4_format *out);

/* Parse a comma list or "all" (e2m1,e1m2,int4,e3m0) into out[0..*n). FP4_ERR_USAGE on an unknown
 * name, an empty item, or more than `cap` items. */
fp4_status fp4_format_parse_list(const char *s, fp4_format *out, int cap, int *n);

/* Write the canonical name ("e2m1", "e2m1:max=3") into buf (NUL-terminated, truncated to n). */
void fp4_format_name(fp4_format f, char *buf, size_t n);

/* The levels of f (ascending, levels[0] == 0) into levels[0..8); returns their number (8, or
 * fewer for e2m1:max=M). *g_max receives the largest level. */
int fp4_format_levels(fp4_format f, float levels[8], float *g_max);

/* Whether a and b are the same grid up to a power-of-two factor (as many levels, each of b
 * equal to the same level of a times 2^k): then every amax-based scale mode gives identical
 * dequantized values under either (SPEC §2: e1m2 and int4). True for a == b. */
bool fp4_format_same_grid(fp4_format a, fp4_format b);

#endif
