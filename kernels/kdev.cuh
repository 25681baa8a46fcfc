/* kdev.cuh — the device side's view of one block: scan, scale, per-element quantization.
 * PROVISIONAL until src/base/common.h lands: then every function here becomes a thin call into it,
 * so the CPU and GPU share one definition. */
#ifndef FP4_KDEV_CUH
#define FP4_KDEV_CUH

#include <float.h>
#include <math.h>
#include <stdint.h>

#include <Random123/philox.h>

#include "kernels.h"

#define FP4K_CHUNK_BLOCKS FP4C_CHUNK_BLOCKS /* common.h */

struct kdev_grid {
    float lv[8];
    int nlev;
    float gmax;
    int emax;
};

struct kdev_scale {
    float s_tensor; /* tensor mode: amax_t / g_max */
    float s_enc, s_dec, m; /* nvfp4 */
};

struct kdev_block_stats {
    float amax;
    int amax_pos; /* first element with |x| == amax (-1 if none) */
    int nan, inf, nonfinite;
    int all_zero;
};

struct kdev_block_scale {
    int mode;       /* 0: t = |x| / div; 1: t = |x| * mul */
    float div, mul; /* normalizer */
    float deq;      /* decode factor: q * deq (mode 0, 2) */
    float e;        /* nvfp4: fp32(E4M3 scale); decode (q * e) * s_dec */
    float s_dec;
    uint8_t byte;
    int underflow;
    int zero;       /* block decodes to 0 */
    float gmax;
};

struct kdev_elem {
    int code;
    float deq, t, level;
    int saturated, clipped;
};

static const float kdev_levels[4][8] = {
    {0.f, .5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f},
    {0.f, .5f, 1.f, 1.5f, 2.f, 2.5f, 3.f, 3.5f},
    {0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f},
    {0.f, .25f, .5f, 1.f, 2.f, 4.f, 8.f, 16.f},
};
static const int kdev_emax[4] = {2, 1, 2, 4};

static inline void kdev_grid_make(const fp4k_cfg *c, kdev_grid *g)
{
    int n = 8;
    for (int i = 0; i < 8; i++) g->lv[i] = kdev_levels[c->format][i];
    if (c->format == 0 && c->fmt_max) {
        n = 0;
        while (n < 8 && g->lv[n] <= (float)c->fmt_max) n++;
    }
    for (int i = n; i < 8; i++) g->lv[i] = g->lv[n - 1];
    g->nlev = n;
    g->gmax = g->lv[n - 1];
    g->emax = (int)floorf(log2f(g->gmax));
}

static inline void kdev_scale_make(const fp4k_cfg *c, const kdev_grid *g, kdev_scale *s)
{
    s->s_tensor = c->tensor_amax / g->gmax;
    float amax_t = c->tensor_amax;
    float senc = amax_t == 0.f ? 1.f : (g->gmax * 448.f) / amax_t;
    if (senc > FLT_MAX) senc = FLT_MAX;
    s->s_enc = senc;
    s->s_dec = 1.f / senc;
    s->m = senc * (1.f / g->gmax);
}

__device__ __forceinline__ double kdev_rht_in(float x, float s)
{
    return s < 0.f ? -(double)x : (double)x;
}

__device__ __forceinline__ float kdev_rht_out(double v, int n)
{
    /* 1/sqrt(n) applied in fp64, rounded once */
    double inv = n == 16 ? 0.25 : n == 64 ? 0.125 : n == 256 ? 0.0625
               : n == 32 ? 0.17677669529663687 : 0.088388347648318440;
    return (float)__dmul_rn(v, inv);
}

__device__ __forceinline__ void kdev_block_scan(const float *x, int block, int nreal,
                                                kdev_block_stats *bs)
{
    float amax = 0.f;
    int pos = -1, nan = 0, inf = 0, nz = 0;
    for (int e = 0; e < nreal; e++) {
        float v = x[e];
        if (isnan(v)) nan++;
        else if (isinf(v)) inf++;
        else {
            float a = fabsf(v);
            if (a > amax || pos < 0) {
                if (a > amax || pos < 0) pos = a > amax || pos < 0 ? e : pos;
                amax = fmaxf(amax, a);
            }
            nz += v != 0.f;
        }
    }
    bs->amax = amax;
    bs->amax_pos = pos;
    bs->nan = nan;
    bs->inf = inf;
    bs->nonfinite = nan + inf;
    bs->all_zero = nz == 0 && nan + inf == 0;
}

__device__ __forceinline__ uint8_t kdev_e4m3_rtne_sat(float v, float *out)
{
    /* v >= 0, <= 448 */
    if (v == 0.f) { *out = 0.f; return 0; }
    int ex;
    frexpf(v, &ex); /* v = f * 2^ex, f in [0.5, 1) */
    int e = ex - 1; /* v in [2^e, 2^(e+1)) */
    if (e < -6) e = -6; /* subnormal spacing 2^-9 */
    float q = ldexpf(1.f, e - 3);
    float r = rintf(v / q) * q;
    if (r > 448.f) r = 448.f;
    *out = r;
    int ee;
    float f = frexpf(r, &ee);
    if (r == 0.f) return 0;
    int biased = (ee - 1) + 7;
    if (biased <= 0) return (uint8_t)(int)(r / ldexpf(1.f, -9));
    int mant = (int)((f * 2.f - 1.f) * 8.f);
    return (uint8_t)((biased << 3) | mant);
}

__device__ __forceinline__ void kdev_scale_block(const kdev_grid *g, const kdev_scale *s,
                                                 const fp4k_cfg *c, const kdev_block_stats *bs,
                                                 float tile_amax, kdev_block_scale *o)
{
    float amax = c->weight_2d ? tile_amax : bs->amax;
    o->gmax = g->gmax;
    o->underflow = 0;
    o->zero = 0;
    o->byte = 0;
    o->mode = 0;
    switch (c->scale) {
    case 0: /* fp32 */
        o->div = amax / g->gmax;
        o->deq = o->div;
        o->zero = amax == 0.f;
        break;
    case 3: /* tensor */
        o->div = s->s_tensor;
        o->deq = o->div;
        o->zero = s->s_tensor == 0.f;
        break;
    case 1: { /* nvfp4 */
        float e;
        o->byte = kdev_e4m3_rtne_sat(fminf(amax * s->m, 448.f), &e);
        o->e = e;
        o->s_dec = s->s_dec;
        o->mode = 1;
        if (e == 0.f) {
            o->underflow = 1;
            o->zero = 1;
            o->mul = 0.f;
        } else {
            o->mul = fminf(1.f / (e * s->s_dec), FLT_MAX);
        }
        break;
    }
    default: { /* mxfp4 */
        int ex;
        if (amax == 0.f) ex = -127;
        else if (c->mx_rule == 0) {
            int fe;
            frexpf(amax, &fe);
            ex = (fe - 1) - g->emax;
        } else {
            ex = (int)ceilf(log2f(amax / g->gmax));
        }
        if (ex < -127) ex = -127;
        if (ex > 127) ex = 127;
        o->byte = (uint8_t)(ex + 127);
        o->div = ldexpf(1.f, ex);
        o->deq = o->div;
        o->zero = amax == 0.f;
        o->mode = 2;
        break;
    }
    }
}

__device__ __forceinline__ float kdev_u01(uint64_t idx, const fp4k_cfg *c)
{
    philox4x32_ctr_t ctr = {{(uint32_t)idx, (uint32_t)(idx >> 32), c->stream, 0u}};
    philox4x32_key_t key = {{(uint32_t)c->seed, (uint32_t)(c->seed >> 32)}};
    philox4x32_ctr_t r = philox4x32(ctr, key);
    if (c->sr_bits == 8) return (float)(r.v[0] >> 24) * (1.f / 256.f);
    return (float)(r.v[0] >> 8) * (1.f / 16777216.f);
}

__device__ __forceinline__ void kdev_quantize_elem(const kdev_grid *g, const fp4k_cfg *c,
                                                   const kdev_block_scale *b, float x,
                                                   uint64_t idx, kdev_elem *r)
{
    int neg = signbit(x) ? 1 : 0;
    float ax = fabsf(x);
    float t;
    r->saturated = 0;
    r->clipped = 0;
    if (b->zero) t = 0.f;
    else if (b->mode == 1) {
        t = ax * b->mul;
        if (t > g->gmax) { r->saturated = 1; t = g->gmax; }
    } else {
        t = ax / b->div;
        if (b->mode == 2 && t > g->gmax) r->clipped = 1;
        if (t > g->gmax) r->saturated = 1;
    }
    int i;
    float tc = fminf(t, g->gmax);
    if (c->rounding == 0) {
        i = 0;
        for (int k = 1; k < g->nlev; k++) {
            float lo = g->lv[k - 1], hi = g->lv[k];
            float mid = (lo + hi) * 0.5f;
            if (tc > mid || (tc == mid && ((k & 1) == 0))) i = k;
        }
    } else {
        int k = 0;
        while (k + 1 < g->nlev && g->lv[k + 1] <= tc) k++;
        i = k;
        if (k + 1 < g->nlev && tc > g->lv[k]) {
            float lo = g->lv[k], hi = g->lv[k + 1];
            float p = (tc - lo) / (hi - lo);
            if (kdev_u01(idx, c) < p) i = k + 1;
        }
    }
    float q = g->lv[i];
    r->code = (neg << 3) | i;
    r->t = t;
    r->level = q;
    float d;
    if (b->zero) d = 0.f;
    else if (b->mode == 1) d = (q * b->e) * b->s_dec;
    else d = q * b->deq;
    r->deq = neg ? -d : d;
}

#endif
