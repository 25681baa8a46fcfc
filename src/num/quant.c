/* quant.c — one quantization configuration (SPEC §2–§4): names, defaults, consistency checks
 * and padding. The quantizer itself (fp4_quantize_rows, fp4_amax_rows) is the CPU engine's,
 * src/engine/. */
#include <string.h>

#include "base/common.h"
#include "num/quant.h"

/* ---- names ------------------------------------------------------------------------------- */
static const char *const scale_names[FP4_SCALE_COUNT] = {"fp32", "nvfp4", "mxfp4", "tensor"};

const char *fp4_scale_name(fp4_scale_mode m)
{
    return (int)m >= 0 && m < FP4_SCALE_COUNT ? scale_names[m] : "?";
}
const char *fp4_rounding_name(fp4_rounding r) { return r == FP4_ROUND_SR ? "sr" : "rtne"; }
const char *fp4_mx_rule_name(fp4_mx_rule r) { return r == FP4_MX_RCEIL ? "rceil" : "floor"; }

fp4_status fp4_scale_parse(const char *s, fp4_scale_mode *out)
{
    for (int i = 0; s && i < FP4_SCALE_COUNT; i++)
        if (strcmp(s, scale_names[i]) == 0) {
            *out = (fp4_scale_mode)i;
            return FP4_OK;
        }
    return fp4_error(FP4_ERR_USAGE, "unknown scale mode '%s' (known: fp32, nvfp4, mxfp4, tensor)",
                     s ? s : "");
}

fp4_status fp4_rounding_parse(const char *s, fp4_rounding *out)
{
    if (s && strcmp(s, "rtne") == 0) *out = FP4_ROUND_RTNE;
    else if (s && strcmp(s, "sr") == 0) *out = FP4_ROUND_SR;
    else return fp4_error(FP4_ERR_USAGE, "unknown rounding '%s' (known: rtne, sr)", s ? s : "");
    return FP4_OK;
}

fp4_status fp4_mx_rule_parse(const char *s, fp4_mx_rule *out)
{
    if (s && strcmp(s, "floor") == 0) *out = FP4_MX_FLOOR;
    else if (s && strcmp(s, "rceil") == 0) *out = FP4_MX_RCEIL;
    else return fp4_error(FP4_ERR_USAGE, "unknown mx rule '%s' (known: floor, rceil)", s ? s : "");
    return FP4_OK;
}

void fp4_qconfig_default(fp4_qconfig *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->format = (fp4_format){FP4_FMT_E2M1, 0};
    cfg->scale = FP4_SCALE_FP32;
    cfg->block = 16;
    cfg->rounding = FP4_ROUND_RTNE;
    cfg->sr_bits = 24;
    cfg->seed = 0;
    cfg->stream = 0;
    cfg->mx_rule = FP4_MX_FLOOR;
    cfg->weight_2d = false;
    cfg->error_split = false;
    cfg->rht = NULL;
}

static int is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

fp4_status fp4_qconfig_check(fp4_qconfig *cfg)
{
    const fp4_format_traits *t = fp4_format_traits_of(cfg->format.id);
    if (!t) return fp4_error(FP4_ERR_USAGE, "invalid format id %d", (int)cfg->format.id);
    if (cfg->format.max &&
        (cfg->format.id != FP4_FMT_E2M1 || cfg->format.max < 2 || cfg->format.max > 4))
        return fp4_error(FP4_ERR_USAGE, "format cap max=%d: only e2m1:max=2|3|4", cfg->format.max);
    switch (cfg->scale) {
    case FP4_SCALE_FP32:
        if (!is_pow2(cfg->block) || cfg->block < 2 || cfg->block > (1 << 20))
            return fp4_error(FP4_ERR_USAGE, "block %d: must be a power of two in 2..2^20",
                             cfg->block);
        break;
    case FP4_SCALE_NVFP4: cfg->block = 16; break;
    case FP4_SCALE_MXFP4: cfg->block = 32; break;
    case FP4_SCALE_TENSOR: cfg->block = 16; break;
    default: return fp4_error(FP4_ERR_USAGE, "invalid scale mode %d", (int)cfg->scale);
    }
    if (cfg->weight_2d && cfg->scale != FP4_SCALE_NVFP4)
        return fp4_error(FP4_ERR_USAGE, "--weight-2d needs --scale nvfp4");
    if (cfg->rounding != FP4_ROUND_RTNE && cfg->rounding != FP4_ROUND_SR)
        return fp4_error(FP4_ERR_USAGE, "invalid rounding %d", (int)cfg->rounding);
    if (cfg->sr_bits != 24 && cfg->sr_bits != 8)
        return fp4_error(FP4_ERR_USAGE, "sr bits %d: must be 24 or 8", cfg->sr_bits);
    if (cfg->mx_rule != FP4_MX_FLOOR && cfg->mx_rule != FP4_MX_RCEIL)
        return fp4_error(FP4_ERR_USAGE, "invalid mx rule %d", (int)cfg->mx_rule);
    if (cfg->rht && (!is_pow2(cfg->rht->n) || cfg->rht->n < 16 || cfg->rht->n > FP4_RHT_MAX))
        return fp4_error(FP4_ERR_USAGE, "rht size %d: must be a power of two in 16..256",
                         cfg->rht->n);
    return FP4_OK;
}

int64_t fp4_padded_len(const fp4_qconfig *cfg, int64_t row_len)
{
    int64_t g = cfg->block > 0 ? cfg->block : 16;
    if (cfg->rht && cfg->rht->n > g) g = cfg->rht->n;
    return (row_len + g - 1) / g * g;
}

bool fp4_qconfig_same_values(const fp4_qconfig *a, const fp4_qconfig *b)
{
    if (!fp4_format_same_grid(a->format, b->format) || a->scale != b->scale ||
        a->block != b->block || a->rounding != b->rounding || a->mx_rule != b->mx_rule ||
        a->weight_2d != b->weight_2d || (a->rht == NULL) != (b->rht == NULL))
        return false;
    if (a->rounding == FP4_ROUND_SR &&
        (a->sr_bits != b->sr_bits || a->seed != b->seed || a->stream != b->stream))
        return false;
    if (a->rht && a->rht != b->rht &&
        (a->rht->n != b->rht->n || memcmp(a->rht->s, b->rht->s, sizeof(float) * (size_t)a->rht->n)))
        return false;
    return true;
}

bool fp4_needs_tensor_amax(const fp4_qconfig *cfg)
{
    return cfg->scale == FP4_SCALE_NVFP4 || cfg->scale == FP4_SCALE_TENSOR;
}

bool fp4_fos_applies(const fp4_qconfig *cfg)
{
    return cfg->scale == FP4_SCALE_NVFP4 && cfg->format.id == FP4_FMT_E2M1 &&
           cfg->format.max == 0 && cfg->rounding == FP4_ROUND_RTNE;
}

bool fp4_split_applies(const fp4_qconfig *cfg)
{
    return cfg->error_split && cfg->rounding == FP4_ROUND_RTNE;
}
