/* gemm.c — GEMM diagnostics (SPEC §6): per-path operand quantization along the contraction
 * axis, the fp64 reference and quantized products through dgemm (CBLAS or cuBLAS: gemm_blas.h), and the output SQNR,
 * gain η and operand attenuations. */
#include "run/gemm.h"
#include "run/gemm_blas.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "engine/engine.h"

static const char *const path_names[FP4_GEMM_NPATHS] = {"fprop", "dgrad", "wgrad"};
static const char *const tensor_names[3] = {"x", "w", "dy"};
static const char *const recipe_names[4] = {"ufp4", "e2m1", "custom", "nvfp4"};
static const char *const rht_scope_names[3] = {"none", "wgrad", "all"};
static const char *const sr_scope_names[3] = {"none", "dy", "all"};

/* Path traits: which tensor is A and B, and whether its quantization rows are the stored
 * tensor's columns (SPEC §6). */
static const struct {
    fp4_gemm_tensor a, b;
    bool a_t, b_t;
} path_traits[FP4_GEMM_NPATHS] = {
    [FP4_GEMM_FPROP] = {FP4_GEMM_X, FP4_GEMM_W, false, false},
    [FP4_GEMM_DGRAD] = {FP4_GEMM_DY, FP4_GEMM_W, false, true},
    [FP4_GEMM_WGRAD] = {FP4_GEMM_DY, FP4_GEMM_X, true, true},
};

static const char *name_of(const char *const *names, int n, int i)
{
    return i >= 0 && i < n ? names[i] : "?";
}

const char *fp4_gemm_path_name(fp4_gemm_path p) { return name_of(path_names, 3, (int)p); }
const char *fp4_gemm_tensor_name(fp4_gemm_tensor t) { return name_of(tensor_names, 3, (int)t); }
const char *fp4_gemm_recipe_name(fp4_gemm_recipe r) { return name_of(recipe_names, 4, (int)r); }
const char *fp4_rht_scope_name(fp4_rht_scope s) { return name_of(rht_scope_names, 3, (int)s); }
const char *fp4_sr_scope_name(fp4_sr_scope s) { return name_of(sr_scope_names, 3, (int)s); }

static fp4_status parse_name(const char *s, const char *const *names, int n, const char *what,
                             int *out)
{
    for (int i = 0; i < n; i++)
        if (s && !strcmp(s, names[i])) {
            *out = i;
            return FP4_OK;
        }
    return fp4_error(FP4_ERR_USAGE, "unknown %s '%s'", what, s ? s : "");
}

fp4_status fp4_gemm_path_parse(const char *s, fp4_gemm_path *out)
{
    int i = 0;
    FP4_TRY(parse_name(s, path_names, 3, "path (fprop, dgrad, wgrad, all)", &i));
    *out = (fp4_gemm_path)i;
    return FP4_OK;
}

fp4_status fp4_gemm_path_parse_list(const char *s, unsigned *mask)
{
    *mask = 0;
    if (!s || !*s) return fp4_error(FP4_ERR_USAGE, "empty --path");
    if (!strcmp(s, "all")) {
        *mask = (1u << FP4_GEMM_NPATHS) - 1;
        return FP4_OK;
    }
    const char *p = s;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char item[16];
        if (len == 0 || len >= sizeof item)
            return fp4_error(FP4_ERR_USAGE, "bad --path list '%s'", s);
        memcpy(item, p, len);
        item[len] = '\0';
        fp4_gemm_path path;
        FP4_TRY(fp4_gemm_path_parse(item, &path));
        *mask |= 1u << path;
        if (!e) break;
        p = e + 1;
        if (!*p) return fp4_error(FP4_ERR_USAGE, "bad --path list '%s'", s);
    }
    return FP4_OK;
}

fp4_status fp4_gemm_recipe_parse(const char *s, fp4_gemm_recipe *out)
{
    int i = 0;
    FP4_TRY(parse_name(s, recipe_names, 4, "recipe (ufp4, e2m1, nvfp4, custom)", &i));
    *out = (fp4_gemm_recipe)i;
    return FP4_OK;
}

fp4_status fp4_rht_scope_parse(const char *s, fp4_rht_scope *out)
{
    int i = 0;
    FP4_TRY(parse_name(s, rht_scope_names, 3, "--rht-scope (none, wgrad, all)", &i));
    *out = (fp4_rht_scope)i;
    return FP4_OK;
}

fp4_status fp4_sr_scope_parse(const char *s, fp4_sr_scope *out)
{
    int i = 0;
    FP4_TRY(parse_name(s, sr_scope_names, 3, "--sr (none, dy, all)", &i));
    *out = (fp4_sr_scope)i;
    return FP4_OK;
}

void fp4_gemm_config_default(fp4_gemm_config *gc)
{
    memset(gc, 0, sizeof *gc);
    gc->recipe = FP4_RECIPE_UFP4;
    gc->format.id = FP4_FMT_E2M1;
    gc->format.max = 0;
    gc->rht_scope = FP4_RHT_SCOPE_NONE;
    gc->sr_scope = FP4_SR_SCOPE_DY;
    fp4_qconfig_default(&gc->base);
    gc->signs = NULL;
    gc->block_rows = 256;
}

static fp4_rht_scope effective_rht_scope(const fp4_gemm_config *gc)
{
    switch (gc->recipe) {
    case FP4_RECIPE_UFP4: return FP4_RHT_SCOPE_ALL;
    case FP4_RECIPE_E2M1:
    case FP4_RECIPE_NVFP4: return FP4_RHT_SCOPE_WGRAD;
    default: return gc->rht_scope;
    }
}

static fp4_sr_scope effective_sr_scope(const fp4_gemm_config *gc)
{
    return gc->recipe == FP4_RECIPE_CUSTOM ? gc->sr_scope : FP4_SR_SCOPE_DY;
}

bool fp4_gemm_path_rht(const fp4_gemm_config *gc, fp4_gemm_path p)
{
    fp4_rht_scope s = effective_rht_scope(gc);
    return s == FP4_RHT_SCOPE_ALL || (s == FP4_RHT_SCOPE_WGRAD && p == FP4_GEMM_WGRAD);
}

fp4_status fp4_gemm_operand_config(const fp4_gemm_config *gc, fp4_gemm_path p,
                                   fp4_gemm_tensor t, fp4_qconfig *out)
{
    if ((int)p < 0 || p >= FP4_GEMM_NPATHS || (int)t < 0 || t > FP4_GEMM_DY)
        return fp4_error(FP4_ERR_USAGE, "gemm: bad path or operand");
    *out = gc->base;
    switch (gc->recipe) {
    case FP4_RECIPE_UFP4: out->format = (fp4_format){FP4_FMT_E1M2, 0}; break;
    case FP4_RECIPE_E2M1:
    case FP4_RECIPE_NVFP4: out->format = (fp4_format){FP4_FMT_E2M1, 0}; break;
    default: out->format = gc->format; break;
    }
    fp4_sr_scope sr = effective_sr_scope(gc);
    bool use_sr = sr == FP4_SR_SCOPE_ALL || (sr == FP4_SR_SCOPE_DY && t == FP4_GEMM_DY);
    out->rounding = use_sr ? FP4_ROUND_SR : FP4_ROUND_RTNE;
    out->stream = FP4_GEMM_STREAM_BASE + 4u * (uint32_t)p + (uint32_t)t;
    /* NVFP4 uses 16x16 tiles for weights only; activations and gradients keep 1x16 blocks. */
    out->weight_2d = gc->base.weight_2d && t == FP4_GEMM_W;
    out->rht = NULL;
    if (fp4_gemm_path_rht(gc, p)) {
        if (!gc->signs)
            return fp4_error(FP4_ERR_USAGE, "gemm: %s uses RHT but no sign vector was given",
                             fp4_gemm_path_name(p));
        out->rht = gc->signs;
    }
    return fp4_qconfig_check(out);
}

static void dims_str(const int64_t *d, int rank, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    if (rank == 0) {
        snprintf(buf, n, "a scalar");
        return;
    }
    for (int i = 0; i < rank && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, i ? "x%" PRId64 : "%" PRId64, d[i]);
}

fp4_status fp4_gemm_shapes_check(const int64_t *xdims, int xrank, const int64_t *wdims,
                                 int wrank, const int64_t *dydims, int dyrank, int64_t *m,
                                 int64_t *n, int64_t *k)
{
    const int64_t *dims[3] = {xdims, wdims, dydims};
    const int ranks[3] = {xrank, wrank, dyrank};
    char s1[96], s2[96];
    for (int t = 0; t < 3; t++) {
        if (!dims[t]) continue;
        if (ranks[t] != 2) {
            dims_str(dims[t], ranks[t], s1, sizeof s1);
            return fp4_error(FP4_ERR_INPUT, "%s is %s but gemm operands must be 2-D (%s)",
                             tensor_names[t], s1,
                             t == 0 ? "tokens x in" : t == 1 ? "out x in" : "tokens x out");
        }
    }
    /* Each dimension is named by two tensors: (tensor, axis) pairs that must agree. */
    static const struct {
        int t1, a1, t2, a2;
        const char *what;
    } pairs[3] = {
        {FP4_GEMM_X, 1, FP4_GEMM_W, 1, "in-features K"},
        {FP4_GEMM_X, 0, FP4_GEMM_DY, 0, "tokens M"},
        {FP4_GEMM_W, 0, FP4_GEMM_DY, 1, "out-features N"},
    };
    for (int i = 0; i < 3; i++) {
        const int64_t *d1 = dims[pairs[i].t1], *d2 = dims[pairs[i].t2];
        if (d1 && d2 && d1[pairs[i].a1] != d2[pairs[i].a2]) {
            dims_str(d1, 2, s1, sizeof s1);
            dims_str(d2, 2, s2, sizeof s2);
            return fp4_error(FP4_ERR_INPUT, "%s is %s but %s is %s (%s differ)",
                             tensor_names[pairs[i].t1], s1, tensor_names[pairs[i].t2], s2,
                             pairs[i].what);
        }
    }
    *m = xdims ? xdims[0] : dydims ? dydims[0] : 0;
    *k = xdims ? xdims[1] : wdims ? wdims[1] : 0;
    *n = wdims ? wdims[0] : dydims ? dydims[1] : 0;
    return FP4_OK;
}

void fp4_gemm_path_shape_of(fp4_gemm_path p, int64_t m, int64_t n, int64_t k,
                            fp4_gemm_path_shape *out)
{
    out->a = path_traits[p].a;
    out->b = path_traits[p].b;
    out->a_transposed = path_traits[p].a_t;
    out->b_transposed = path_traits[p].b_t;
    switch (p) {
    case FP4_GEMM_FPROP: out->rows = m, out->cols = n, out->contraction = k; break;
    case FP4_GEMM_DGRAD: out->rows = m, out->cols = k, out->contraction = n; break;
    default: out->rows = n, out->cols = k, out->contraction = m; break;
    }
}

/* A tensor seen in quantization layout: `rows` rows of `len` along the contraction axis. */
typedef struct operand_view {
    const float *p;
    bool transposed; /* stored as len x rows (row stride `rows`) */
    int64_t rows, len;
} operand_view;

/* Copy rows [r0, r0 + nr) of the view into dst (nr x len, row-major). */
static void view_gather(const operand_view *v, int64_t r0, int64_t nr, float *dst)
{
    if (!v->transposed) {
        memcpy(dst, v->p + r0 * v->len, (size_t)(nr * v->len) * sizeof *dst);
        return;
    }
    /* Tiled transpose: the stored tensor is len x rows. */
    const int64_t T = 32;
    for (int64_t j0 = 0; j0 < v->len; j0 += T) {
        int64_t j1 = j0 + T < v->len ? j0 + T : v->len;
        for (int64_t i = 0; i < nr; i++)
            for (int64_t j = j0; j < j1; j++) dst[i * v->len + j] = v->p[j * v->rows + r0 + i];
    }
}

/* Quantize nr rows (row-major, len each) into deq (nr x lp), accumulating operand metrics.
 * With the test hook only pad and rotate, and account the rotated values as exact. */
static fp4_status operand_quantize(const fp4_qconfig *cfg, bool skip, float amax,
                                   const float *rows, int64_t r0, int64_t nr, int64_t len,
                                   int64_t lp, float *deq, fp4_metrics *m)
{
    if (!skip) {
        fp4_qout qo = {.deq = deq, .codes = NULL, .scales = NULL};
        return fp4_quantize_rows(cfg, amax, rows, r0, nr, len, &qo, m);
    }
    for (int64_t i = 0; i < nr; i++) {
        float *d = deq + i * lp;
        memcpy(d, rows + i * len, (size_t)len * sizeof *d);
        memset(d + len, 0, (size_t)(lp - len) * sizeof *d);
        if (cfg->rht) fp4_rht_forward(cfg->rht, d, d, lp);
        for (int64_t j = 0; j < lp; j++) {
            double v = d[j];
            m->sum_x2 += v * v;
            m->sum_xqx += v * v;
            m->sum_xq2 += v * v;
        }
        m->elements += (uint64_t)len;
        m->padded += (uint64_t)(lp - len);
    }
    return FP4_OK;
}

/* Tensor amax of a view as cfg sees it (after RHT), in blocks of nb rows through buf. */
static void view_amax(const fp4_qconfig *cfg, const operand_view *v, int64_t nb, float *buf,
                      float *amax)
{
    *amax = 0.0f;
    for (int64_t r0 = 0; r0 < v->rows; r0 += nb) {
        int64_t nr = r0 + nb < v->rows ? nb : v->rows - r0;
        view_gather(v, r0, nr, buf);
        fp4_amax_rows(cfg, buf, nr, v->len, amax);
    }
}

int64_t fp4_gemm_memory_cap(void)
{
    int64_t cap = INT64_MAX;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    int64_t phys;
    if (pages > 0 && psz > 0 && fp4_size_mul(pages, psz, &phys)) cap = phys;
    const int res[2] = {RLIMIT_AS, RLIMIT_DATA};
    for (int i = 0; i < 2; i++) {
        struct rlimit rl;
        if (getrlimit(res[i], &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
            rl.rlim_cur < (rlim_t)cap)
            cap = (int64_t)rl.rlim_cur;
    }
    return cap;
}

bool fp4_size_mul(int64_t a, int64_t b, int64_t *out)
{
    return a >= 0 && b >= 0 && !__builtin_mul_overflow(a, b, out);
}

bool fp4_size_add(int64_t a, int64_t b, int64_t *out)
{
    return a >= 0 && b >= 0 && !__builtin_add_overflow(a, b, out);
}

static void widen(const float *src, double *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = (double)src[i];
}

static double attenuation(const fp4_metrics *m)
{
    return m->sum_x2 > 0.0 ? m->sum_xqx / m->sum_x2 : NAN;
}

fp4_status fp4_gemm_path_run(const fp4_gemm_config *gc, fp4_gemm_path p,
                             const fp4_gemm_operands *ops, fp4_gemm_path_result *out)
{
    if ((int)p < 0 || p >= FP4_GEMM_NPATHS)
        return fp4_error(FP4_ERR_USAGE, "gemm: bad path %d", (int)p);
    memset(out, 0, sizeof *out);
    out->path = p;
    fp4_gemm_path_shape sh;
    fp4_gemm_path_shape_of(p, ops->m, ops->n, ops->k, &sh);
    const float *tp[3] = {ops->x, ops->w, ops->dy};
    if (!tp[sh.a] || !tp[sh.b])
        return fp4_error(FP4_ERR_INPUT, "gemm: %s needs %s and %s", fp4_gemm_path_name(p),
                         fp4_gemm_tensor_name(sh.a), fp4_gemm_tensor_name(sh.b));
    if (sh.rows <= 0 || sh.cols <= 0 || sh.contraction <= 0)
        return fp4_error(FP4_ERR_INPUT, "gemm: %s: empty operand (M=%" PRId64 " N=%" PRId64
                         " K=%" PRId64 ")", fp4_gemm_path_name(p), ops->m, ops->n, ops->k);

    fp4_qconfig cfg_a, cfg_b;
    FP4_TRY(fp4_gemm_operand_config(gc, p, sh.a, &cfg_a));
    FP4_TRY(fp4_gemm_operand_config(gc, p, sh.b, &cfg_b));
    const int64_t L = sh.contraction, rows = sh.rows, cols = sh.cols;
    const int64_t lp = fp4_padded_len(&cfg_a, L);
    if (fp4_padded_len(&cfg_b, L) != lp)
        return fp4_error(FP4_ERR_INTERNAL, "gemm: operands padded differently");
    if (lp > INT_MAX || cols > INT_MAX)
        return fp4_error(FP4_ERR_INPUT, "gemm: %s: dimension too large for BLAS int",
                         fp4_gemm_path_name(p));
    fp4_dgemm *own = NULL, *prod = gc->products;
    if (!prod) FP4_TRY(fp4_dgemm_open(FP4_DEVICE_CPU, &own));
    if (!prod) prod = own;
    int64_t nb = gc->block_rows > 0 ? gc->block_rows : 256;
    if (gc->base.weight_2d && nb % 16) nb += 16 - nb % 16;

    out->rows = rows;
    out->cols = cols;
    out->contraction = L;
    out->padded_contraction = lp;
    out->rht = cfg_a.rht != NULL;
    out->op[0] = (fp4_gemm_operand_result){.tensor = sh.a, .role = 'a',
                                           .transposed = sh.a_transposed, .cfg = cfg_a};
    out->op[1] = (fp4_gemm_operand_result){.tensor = sh.b, .role = 'b',
                                           .transposed = sh.b_transposed, .cfg = cfg_b};
    fp4_metrics_init(&out->op[0].m);
    fp4_metrics_init(&out->op[1].m);

    const operand_view va = {tp[sh.a], sh.a_transposed, rows, L};
    const operand_view vb = {tp[sh.b], sh.b_transposed, cols, L};
    fp4_status st = FP4_OK;
    /* B whole (fp32 staging, fp64 original and dequantized); A and Z in blocks of nb rows.
     * Every size checked for overflow and against the memory there is, before allocating. */
    int64_t stage_rows = cols > nb ? cols : nb;
    {
        const int64_t terms[8][3] = {{stage_rows, L, 4}, {stage_rows, lp, 4}, {cols, L, 8},
                                     {cols, lp, 8},      {nb, L, 8},          {nb, lp, 8},
                                     {nb, cols, 8},      {nb, cols, 8}};
        int64_t total = 0, t1, t2;
        bool ok = true;
        for (int i = 0; i < 8 && ok; i++)
            ok = fp4_size_mul(terms[i][0], terms[i][1], &t1) && fp4_size_mul(t1, terms[i][2], &t2) &&
                 fp4_size_add(total, t2, &total);
        const int64_t cap = fp4_gemm_memory_cap();
        if (!ok || total > cap) {
            fp4_dgemm_close(own);
            return fp4_error(FP4_ERR_INPUT,
                             "gemm: %s: M=%" PRId64 " N=%" PRId64 " K=%" PRId64 ": the working "
                             "buffers %s (memory available: %" PRId64 " MiB)",
                             fp4_gemm_path_name(p), ops->m, ops->n, ops->k,
                             ok ? "do not fit in memory" : "overflow 64-bit sizes", cap >> 20);
        }
    }
    float *stage = malloc((size_t)(stage_rows * L) * sizeof *stage);
    float *stage_q = malloc((size_t)(stage_rows * lp) * sizeof *stage_q);
    double *b64 = malloc((size_t)(cols * L) * sizeof *b64);
    double *bq64 = malloc((size_t)(cols * lp) * sizeof *bq64);
    double *a64 = malloc((size_t)(nb * L) * sizeof *a64);
    double *aq64 = malloc((size_t)(nb * lp) * sizeof *aq64);
    double *z = malloc((size_t)(nb * cols) * sizeof *z);
    double *zq = malloc((size_t)(nb * cols) * sizeof *zq);
    if (!stage || !stage_q || !b64 || !bq64 || !a64 || !aq64 || !z || !zq) {
        st = fp4_error(FP4_ERR_INTERNAL, "gemm: %s: out of memory", fp4_gemm_path_name(p));
        goto out;
    }

    float amax_a = 0.0f, amax_b = 0.0f;
    if (!gc->test_skip_rounding && fp4_needs_tensor_amax(&cfg_a))
        view_amax(&cfg_a, &va, nb, stage, &amax_a);
    if (!gc->test_skip_rounding && fp4_needs_tensor_amax(&cfg_b))
        view_amax(&cfg_b, &vb, nb, stage, &amax_b);

    /* B: one call over all rows keeps weight_2d tiles whole and the SR counters global. */
    view_gather(&vb, 0, cols, stage);
    widen(stage, b64, cols * L);
    st = operand_quantize(&cfg_b, gc->test_skip_rounding, amax_b, stage, 0, cols, L, lp,
                          stage_q, &out->op[1].m);
    if (st != FP4_OK) goto out;
    widen(stage_q, bq64, cols * lp);
    st = fp4_dgemm_set_b(prod, b64, bq64, cols, L, lp);
    if (st != FP4_OK) goto out;

    double s_z2 = 0.0, s_e2 = 0.0, s_zqz = 0.0, s_zq2 = 0.0;
    for (int64_t r0 = 0; r0 < rows; r0 += nb) {
        int64_t nr = r0 + nb < rows ? nb : rows - r0;
        view_gather(&va, r0, nr, stage);
        widen(stage, a64, nr * L);
        st = operand_quantize(&cfg_a, gc->test_skip_rounding, amax_a, stage, r0, nr, L, lp,
                              stage_q, &out->op[0].m);
        if (st != FP4_OK) goto out;
        widen(stage_q, aq64, nr * lp);
        st = fp4_dgemm_products(prod, a64, aq64, nr, z, zq);
        if (st != FP4_OK) goto out;
        for (int64_t i = 0; i < nr * cols; i++) {
            double e = zq[i] - z[i];
            s_z2 += z[i] * z[i];
            s_e2 += e * e;
            s_zqz += zq[i] * z[i];
            s_zq2 += zq[i] * zq[i];
        }
    }
    out->sum_z2 = s_z2;
    out->sum_err2 = s_e2;
    out->sum_zqz = s_zqz;
    out->sum_zq2 = s_zq2;
    /* a NaN/Inf in an operand reaches every sum through the products: no SQNR, no η */
    fp4_gemm_sums_finish(s_z2, s_e2, s_zqz, &out->sqnr_status, &out->sqnr_db, &out->eta);
    fp4_metrics_finish(&out->op[0].m);
    fp4_metrics_finish(&out->op[1].m);
    out->alpha_a = attenuation(&out->op[0].m);
    out->alpha_b = attenuation(&out->op[1].m);
    out->alpha_product = out->alpha_a * out->alpha_b;

out:
    fp4_dgemm_close(own);
    free(stage);
    free(stage_q);
    free(b64);
    free(bq64);
    free(a64);
    free(aq64);
    free(z);
    free(zq);
    return st;
}

void fp4_gemm_sums_finish(double z2, double err2, double zqz, fp4_sqnr_status *status,
                          double *sqnr_db, double *eta)
{
    if (!isfinite(z2) || !isfinite(err2) || !isfinite(zqz)) {
        *status = FP4_SQNR_NONFINITE;
        *sqnr_db = NAN;
        *eta = NAN;
    } else if (z2 == 0.0) {
        *status = FP4_SQNR_ZERO_SIGNAL;
        *sqnr_db = NAN;
        *eta = NAN;
    } else {
        *eta = zqz / z2;
        *status = err2 == 0.0 ? FP4_SQNR_EXACT : FP4_SQNR_OK;
        *sqnr_db = err2 == 0.0 ? NAN : 10.0 * log10(z2 / err2);
    }
}

void fp4_gemm_compound(const double *eta, int n, int layers, double *prod_eta,
                       double *exp_neg_sum_delta)
{
    if (layers <= 0) layers = n;
    double prod = 1.0, sum_delta = 0.0;
    for (int i = 0; n > 0 && i < layers; i++) {
        prod *= eta[i % n];
        sum_delta += 1.0 - eta[i % n];
    }
    *prod_eta = prod;
    *exp_neg_sum_delta = exp(-sum_delta);
}

fp4_status fp4_gemm_pool(const fp4_gemm_layer *layers, int nlayers, fp4_gemm_path p,
                         int compound_layers, fp4_gemm_pooled *out)
{
    memset(out, 0, sizeof *out);
    out->path = p;
    double *eta = malloc((size_t)(nlayers > 0 ? nlayers : 1) * sizeof *eta);
    if (!eta) return fp4_error(FP4_ERR_INTERNAL, "gemm: out of memory");
    for (int i = 0; i < nlayers; i++) {
        if (!(layers[i].paths & (1u << p))) continue;
        const fp4_gemm_path_result *r = &layers[i].res[p];
        out->sum_z2 += r->sum_z2;
        out->sum_err2 += r->sum_err2;
        out->sum_zqz += r->sum_zqz;
        eta[out->nlayers++] = r->eta;
    }
    fp4_gemm_sums_finish(out->sum_z2, out->sum_err2, out->sum_zqz, &out->sqnr_status,
                         &out->sqnr_db, &out->eta);
    out->compound_layers = compound_layers > 0 ? compound_layers : out->nlayers;
    fp4_gemm_compound(eta, out->nlayers, out->compound_layers, &out->prod_eta,
                      &out->exp_neg_sum_delta);
    free(eta);
    return FP4_OK;
}
