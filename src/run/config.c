/* config.c — the run configuration's defaults, its resolution into the qconfig list, and the
 * names reports give its modes. */
#include "run/config.h"

#include <stdio.h>
#include <string.h>

void fp4_run_config_default(fp4_run_config *c, const char *formats, fp4_rht_mode rht)
{
    memset(c, 0, sizeof *c);
    if (fp4_format_parse_list(formats ? formats : FP4_DEFAULT_FORMATS, c->formats,
                              FP4_MAX_FORMATS, &c->nformats) != FP4_OK) {
        c->formats[0] = (fp4_format){FP4_FMT_E2M1, 0};
        c->nformats = 1;
    }
    for (int i = 0; i < FP4_MAX_FORMATS; i++) c->fmt_scale[i] = -1;
    c->scale = FP4_SCALE_FP32;
    c->block = 16;
    c->axis = -1;
    c->rounding = FP4_ROUND_RTNE;
    c->sr_bits = 24;
    c->seed = 0;
    c->rht = rht;
    c->rht_size = 16;
    snprintf(c->rht_signs_spec, sizeof c->rht_signs_spec, "te");
    c->mx_rule = FP4_MX_FLOOR;
    c->device = FP4_DEVICE_AUTO;
    c->mem_limit = FP4_DEFAULT_MEM_LIMIT;
}

const char *fp4_rht_mode_name(fp4_rht_mode m)
{
    switch (m) {
    case FP4_RHT_OFF: return "off";
    case FP4_RHT_ON: return "on";
    case FP4_RHT_BOTH: return "both";
    }
    return "?";
}

const char *fp4_rank_by_name(fp4_rank_by r)
{
    switch (r) {
    case FP4_RANK_GAP: return "gap";
    case FP4_RANK_SQNR: return "sqnr";
    case FP4_RANK_DELTA: return "delta";
    case FP4_RANK_UNDERFLOW: return "underflow";
    case FP4_RANK_SQNR_NONAMAX: return "sqnr-nonamax";
    case FP4_RANK_MAXERR: return "maxerr";
    case FP4_RANK_RELERR: return "relerr";
    }
    return "?";
}

const char *fp4_device_name(fp4_device d)
{
    switch (d) {
    case FP4_DEVICE_CPU: return "cpu";
    case FP4_DEVICE_CUDA: return "cuda";
    case FP4_DEVICE_AUTO: return "auto";
    }
    return "?";
}

fp4_status fp4_run_config_finish(fp4_run_config *o)
{
    FP4_TRY(fp4_rht_signs_make(o->rht_signs_spec, o->rht_size, &o->signs));
    /* Each format's scale: nvfp4/mxfp4 name theirs (a different given scale is a conflict),
     * the others take `scale`; then repeated (format, scale) pairs are merged. */
    bool any_fp32 = false, any_nv = false;
    int k = 0;
    for (int f = 0; f < o->nformats; f++) {
        int sc = o->fmt_scale[f];
        if (sc >= 0 && o->scale_given && sc != (int)o->scale)
            return fp4_error(FP4_ERR_USAGE, "--format %s is e2m1 with %s scales; it conflicts "
                                            "with --scale %s",
                             fp4_scale_name((fp4_scale_mode)sc), fp4_scale_name((fp4_scale_mode)sc),
                             fp4_scale_name(o->scale));
        if (sc < 0) sc = (int)o->scale;
        bool dup = false;
        for (int j = 0; j < k && !dup; j++)
            dup = o->formats[j].id == o->formats[f].id && o->formats[j].max == o->formats[f].max &&
                  o->fmt_scale[j] == sc;
        if (dup) continue;
        o->formats[k] = o->formats[f];
        o->fmt_scale[k] = sc;
        k++;
        any_fp32 |= sc == FP4_SCALE_FP32;
        any_nv |= sc == FP4_SCALE_NVFP4;
    }
    o->nformats = k;
    /* nvfp4 and mxfp4 fix their block; an explicit other block would be silently ignored,
     * unless fp32-scaled formats use it */
    for (int f = 0; f < o->nformats && o->block_given; f++) {
        int sc = o->fmt_scale[f];
        int fixed = sc == FP4_SCALE_NVFP4 ? 16 : sc == FP4_SCALE_MXFP4 ? 32 : 0;
        if (sc == FP4_SCALE_TENSOR && o->block != 16)
            return fp4_error(FP4_ERR_USAGE, "--block %d has no effect with --scale tensor (one "
                                            "scale per tensor; its block is fixed at 16)",
                             o->block);
        if (!fixed || o->block == fixed) continue;
        if (sc == (int)o->scale && (o->scale_given || !any_fp32))
            return fp4_error(FP4_ERR_USAGE, "--block %d conflicts with --scale %s (fixed block %d)",
                             o->block, fp4_scale_name(o->scale), fixed);
        if (!any_fp32)
            return fp4_error(FP4_ERR_USAGE, "--block %d conflicts with --format %s (fixed block "
                                            "%d)",
                             o->block, fp4_scale_name((fp4_scale_mode)sc), fixed);
    }
    int fixed = o->scale == FP4_SCALE_NVFP4 ? 16 : o->scale == FP4_SCALE_MXFP4 ? 32 : 0;
    if (o->weight_2d && !any_nv)
        return fp4_error(FP4_ERR_USAGE, "--weight-2d needs --scale nvfp4 (not %s)",
                         fp4_scale_name(o->scale));
    if (!o->block_given) o->block = fixed ? fixed : 16;
    fp4_qconfig tmp[2 * FP4_MAX_FORMATS];
    int ncfg;
    return fp4_run_config_qconfigs(o, tmp, 2 * FP4_MAX_FORMATS, &ncfg);
}

fp4_status fp4_run_config_qconfigs(const fp4_run_config *o, fp4_qconfig *out, int cap,
                                   int *count)
{
    int n = 0;
    for (int f = 0; f < o->nformats; f++) {
        for (int r = 0; r < 2; r++) {
            bool rot = r == 1;
            if (rot && o->rht == FP4_RHT_OFF) continue;
            if (!rot && o->rht == FP4_RHT_ON) continue;
            if (n >= cap) return fp4_error(FP4_ERR_USAGE, "too many configurations (max %d)", cap);
            fp4_qconfig *c = &out[n];
            fp4_qconfig_default(c);
            c->format = o->formats[f];
            c->scale = o->fmt_scale[f] >= 0 ? (fp4_scale_mode)o->fmt_scale[f] : o->scale;
            c->block = c->scale == FP4_SCALE_MXFP4                                   ? 32
                       : c->scale == FP4_SCALE_NVFP4 || c->scale == FP4_SCALE_TENSOR ? 16
                                                                                      : o->block;
            c->rounding = o->rounding;
            c->sr_bits = o->sr_bits;
            c->seed = o->seed;
            c->mx_rule = o->mx_rule;
            c->weight_2d = o->weight_2d && c->scale == FP4_SCALE_NVFP4;
            c->rht = rot ? &o->signs : NULL;
            c->error_split = o->error_split;
            fp4_status st = fp4_qconfig_check(c);
            if (st != FP4_OK) return st;
            n++;
        }
    }
    *count = n;
    return FP4_OK;
}
