/* plan.c — a config's plan for one tensor (SPEC §3): grid, row geometry, tensor-level
 * scales, and the scratch one unit needs. */
#include <string.h>

#include "engine/engine_impl.h"

fp4_status fp4_qplan_make(const fp4_qconfig *cfg, float tensor_amax, int64_t row_len,
                          fp4_qplan *p)
{
    memset(p, 0, sizeof *p);
    p->cfg = *cfg;
    FP4_TRY(fp4_qconfig_check(&p->cfg));
    if (p->cfg.block != cfg->block)
        return fp4_error(FP4_ERR_USAGE, "config block %d: %s needs block %d (call "
                         "fp4_qconfig_check first)", cfg->block, fp4_scale_name(cfg->scale),
                         p->cfg.block);
    if (row_len < 0) return fp4_error(FP4_ERR_USAGE, "negative row length");
    p->grid = fp4c_grid_make((int)cfg->format.id, cfg->format.max);
    p->row_len = row_len;
    p->padded_len = fp4_padded_len(cfg, row_len);
    p->counted_len = cfg->rht ? (row_len + cfg->rht->n - 1) / cfg->rht->n * cfg->rht->n : row_len;
    p->block = cfg->block;
    p->nblk = (int)(p->padded_len / cfg->block);
    p->nchunk = (p->nblk + FP4_CHUNK_BLOCKS - 1) / FP4_CHUNK_BLOCKS;
    p->unit_rows = cfg->weight_2d ? 16 : 1;
    if (!fp4c_isfinite(tensor_amax) || tensor_amax < 0.0f) tensor_amax = 0.0f;
    p->tensor_amax = tensor_amax;
    const float gmax = p->grid.gmax;
    /* SPEC §3, Transformer Engine's fp32 operation order */
    float senc = tensor_amax == 0.0f ? 1.0f : (gmax * FP4C_E4M3_MAX) / tensor_amax;
    senc = fp4c_minf(senc, FP4C_FLT_MAX);
    p->nv_sdec = 1.0f / senc;
    p->nv_m = senc * p->grid.inv_gmax;
    p->nv_m4 = senc * 0.25f; /* exact: a power of two */
    p->ts = tensor_amax / gmax;
    return FP4_OK;
}

int64_t fp4_qplan_scratch_floats(const fp4_qplan *p)
{
    /* grouped path: T and W (GRP * block floats each), then the row kernels' level error
     * terms (GRP * block' doubles) and indices (GRP * block' int32), block' = block rounded
     * up to 8, after 16 floats of alignment slack, then the AVX2 kernel's x̂, q, two lane
     * masks and Four over Six's x̂ at the scale to 4 (GRP * block floats or int32 each); then the row kernel's per-block error sums
     * for Four over Six (nblk doubles, 8-byte aligned in 2 * nblk + 2 floats) */
    const int64_t bp = ((int64_t)p->block + 7) / 8 * 8;
    return (int64_t)p->unit_rows * p->padded_len + p->nblk +
           (p->block <= GRP_MAX_BLOCK
                ? (int64_t)2 * GRP * p->block + 16 + 3 * GRP * bp + (int64_t)5 * GRP * p->block
                : 0) +
           2 * (int64_t)p->nblk + 2 +
           (int64_t)GRP * p->block; /* last: the statistics pass's partial group (stats.c) */
}

