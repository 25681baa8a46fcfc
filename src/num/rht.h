/* rht.h — Random Hadamard Transform (SPEC §4): sign vectors and the blocked fast
 * Walsh–Hadamard transform, fp64 butterfly in a fixed order, rounded once to fp32. */
#ifndef FP4_RHT_H
#define FP4_RHT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"

#define FP4_RHT_MAX 256

typedef struct fp4_rht_signs {
    int n;                   /* group size: power of two 16..256 */
    float s[FP4_RHT_MAX];    /* +1 / -1 */
    char desc[48];           /* "te", "seed:N", "none" — as reported */
} fp4_rht_signs;

/* Parse --rht-signs ("te" default, "seed:N", "none") for size n into *out. te is defined for
 * n = 16 (mask 0xD7E8) and tiled for larger n. FP4_ERR_USAGE on a bad spec or size. */
fp4_status fp4_rht_signs_make(const char *spec, int n, fp4_rht_signs *out);

/* SPEC §4: y = ((x ⊙ s) · H_n) / sqrt(n) for each of the len/n groups of x (len a multiple of n; a
 * trailing partial group is left unwritten); x and y may alias (x == y). fp64 butterfly in
 * common.h's fixed order, rounded once to fp32. Runs the variant fp4_isa_active() names
 * (base/isa.h: FP4DIAG_ISA, else the widest this CPU has): AVX-512, AVX2, else plain C (generic
 * and neon); every variant gives the same bits as the plain C one. Records FP4_ISA_SITE_RHT. */
void fp4_rht_forward(const fp4_rht_signs *sg, const float *x, float *y, int64_t len);

/* The implementations behind fp4_rht_forward: AUTO is its dispatch (fp4_isa_active), SCALAR the
 * plain C reference, AVX2 / AVX512 the SIMD variants (x86-64 GCC builds only). */
typedef enum fp4_rht_impl {
    FP4_RHT_IMPL_AUTO = 0,
    FP4_RHT_IMPL_SCALAR,
    FP4_RHT_IMPL_AVX2,
    FP4_RHT_IMPL_AVX512
} fp4_rht_impl;

/* fp4_rht_forward through one implementation (for tests and benchmarks): same arguments and
 * result. Returns false, writing nothing, when impl is not compiled in or this CPU lacks its
 * instructions; true otherwise. */
bool fp4_rht_forward_impl(fp4_rht_impl impl, const fp4_rht_signs *sg, const float *x, float *y,
                          int64_t len);

/* x = s ⊙ (y · H_n) / sqrt(n), the inverse. */
void fp4_rht_inverse(const fp4_rht_signs *sg, const float *y, float *x, int64_t len);

#endif
