/* cmd_gemm.c — `fp4diag gemm`: read the operands of one or more layers (x, w, dy by group or
 * by --x/--w/--dy), run FPROP/DGRAD/WGRAD under a recipe (SPEC §6), write the report. */
#include <cblas.h>
#include <inttypes.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/progress.h"
#include "cmd/commands.h"
#include "run/gemm.h"
#include "run/gemm_blas.h"
#include "io/chunked.h"
#include "io/pario.h"
#include "io/source.h"
#include "cmd/options.h"
#include "report/output.h"
#include "report/gemm.h"
#include "cmd/world.h"

const char fp4_usage_gemm[] =
    "usage: fp4diag gemm [OPTIONS] FILE [GROUP...]\n"
    "       fp4diag gemm [OPTIONS] --x FILE:/DSET --w FILE:/DSET --dy FILE:/DSET\n"
    "\n"
    "Output SQNR of the three training GEMMs of a linear layer y = x w^T under\n"
    "a 4-bit recipe, against the fp64 product of the unquantized operands (SPEC 6):\n"
    "  fprop  Y  = X W^T   (contract in-features K; quantize rows of X and of W)\n"
    "  dgrad  dX = dY W    (contract out-features N; rows of dY, columns of W)\n"
    "  wgrad  dW = dY^T X  (contract tokens M; columns of dY and of X)\n"
    "Each GROUP is one layer holding datasets x (tokens x in), w (out x in), dy\n"
    "(tokens x out); no GROUP: every group of FILE that holds a dataset w.\n"
    "\n"
    "gemm options:\n"
    "  --recipe R          ufp4 (default): e1m2, RHT on all paths, SR on dy, RTNE\n"
    "                        elsewhere\n"
    "                      nvfp4: the NVFP4 training recipe: e2m1, nvfp4 scales,\n"
    "                        16x16 weight tiles, RHT on wgrad, SR on dy\n"
    "                      e2m1: e2m1, RHT on wgrad only, SR on dy (with\n"
    "                        --scale nvfp4 --weight-2d: the full NVFP4 training\n"
    "                        recipe; 16x16 tiles on w only)\n"
    "                      custom: --format F, --rht-scope, --sr\n"
    "  --format F          custom only: one format, default e2m1 (any case)\n"
    "  --path LIST|all     fprop,dgrad,wgrad (default all)\n"
    "  --rht-scope S       custom: none (default), wgrad, all\n"
    "  --sr S              custom: none, dy (default), all\n"
    "  --x/--w/--dy FILE:/DSET  operands by dataset (files may differ); one layer\n"
    "  --layers K          compound gain over K layers (cycling through the layers\n"
    "                      given): prod eta and exp(-sum(1 - eta)) per path\n"
    "SR streams: 0x474D0000 + 4*path + tensor (fprop 0, dgrad 1, wgrad 2; x 0, w 1,\n"
    "dy 2), keyed by --seed. The recipe decides RHT, rounding and the block axis\n"
    "of each operand: --rht, --rounding and --axis are usage errors here (use\n"
    "--recipe custom with --rht-scope/--sr).\n"
    "\n"
    "quantizer options (as for sqnr):\n" FP4_OPTHELP_SCALE FP4_OPTHELP_SR FP4_OPTHELP_RHT_SHAPE
    "  --threads N         CPU threads for quantizing and BLAS\n"
    "                      (default 0 = all cores)\n"
    "  --mem-limit SIZE    working memory for decoding compressed chunks: bytes,\n"
    "                      512M, 1G (default 1G); the operands themselves are\n"
    "                      held whole as fp32\n"
    "  --shard I/N         share I of N (0 <= I < N) of the layers, balanced by\n"
    "                      element count; 'fp4diag merge' joins the N partial reports\n"
    "  --device D          where the fp64 products run: cpu (CBLAS), cuda (cuBLAS;\n"
    "                      exit 4 without a GPU) or auto (default: cuda when a GPU is\n"
    "                      usable); operands are quantized on the CPU either way\n"
    "  --rank-by R         the verdict's ranking of layers, worst first: gap\n"
    "                      (default; best-worst path SQNR), sqnr (lowest worst-path\n"
    "                      SQNR) or delta (largest |1 - eta| of the worst path)\n"
    FP4_OPTHELP_IO
    "\n"
    "JSON report on stdout (or -o); on a terminal the table instead (--json for\n"
    "the JSON). Exit 3 when shapes disagree (both shapes are named) or an\n"
    "operand is missing.\n";

enum { OPT_RECIPE = 1000, OPT_PATH, OPT_RHT_SCOPE, OPT_SR, OPT_X, OPT_W, OPT_DY };

static const struct option gemm_longopts[] = {
    {"recipe", required_argument, NULL, OPT_RECIPE},
    {"path", required_argument, NULL, OPT_PATH},
    {"rht-scope", required_argument, NULL, OPT_RHT_SCOPE},
    {"sr", required_argument, NULL, OPT_SR},
    {"x", required_argument, NULL, OPT_X},
    {"w", required_argument, NULL, OPT_W},
    {"dy", required_argument, NULL, OPT_DY},
    {NULL, 0, NULL, 0},
};

typedef struct gemm_args {
    fp4_gemm_recipe recipe;
    unsigned paths;
    fp4_rht_scope rht_scope;
    fp4_sr_scope sr_scope;
    bool scope_given;
    const char *spec[3]; /* --x, --w, --dy */
} gemm_args;

static fp4_status gemm_opt(void *ctx, int val, const char *arg)
{
    gemm_args *g = ctx;
    switch (val) {
    case OPT_RECIPE: return fp4_gemm_recipe_parse(arg, &g->recipe);
    case OPT_PATH: return fp4_gemm_path_parse_list(arg, &g->paths);
    case OPT_RHT_SCOPE: g->scope_given = true; return fp4_rht_scope_parse(arg, &g->rht_scope);
    case OPT_SR: g->scope_given = true; return fp4_sr_scope_parse(arg, &g->sr_scope);
    case OPT_X: g->spec[FP4_GEMM_X] = arg; return FP4_OK;
    case OPT_W: g->spec[FP4_GEMM_W] = arg; return FP4_OK;
    case OPT_DY: g->spec[FP4_GEMM_DY] = arg; return FP4_OK;
    default: return fp4_error(FP4_ERR_USAGE, "unknown option");
    }
}

/* Which tensors the selected paths read. */
static unsigned tensors_needed(unsigned paths)
{
    unsigned t = 0;
    for (int p = 0; p < FP4_GEMM_NPATHS; p++) {
        if (!(paths & (1u << p))) continue;
        fp4_gemm_path_shape sh;
        fp4_gemm_path_shape_of((fp4_gemm_path)p, 1, 1, 1, &sh);
        t |= 1u << sh.a | 1u << sh.b;
    }
    return t;
}

/* One operand to read: file and dataset path. */
typedef struct operand_src {
    char *file, *dset;
} operand_src;

static fp4_status split_spec(const char *opt, const char *spec, operand_src *out)
{
    const char *sep = NULL;
    for (const char *s = strstr(spec, ":/"); s; s = strstr(s + 1, ":/")) sep = s;
    if (!sep || sep == spec) {
        /* FILE:NAME for formats whose names have no leading '/' (model.layers.0.mlp.x): the
         * last ':' after which a name follows */
        sep = strrchr(spec, ':');
        if (sep && (sep == spec || !sep[1])) sep = NULL;
    }
    if (!sep || sep == spec)
        return fp4_error(FP4_ERR_USAGE, "--%s wants FILE:/DATASET, got '%s'", opt, spec);
    out->file = strndup(spec, (size_t)(sep - spec));
    out->dset = strdup(sep + 1);
    if (!out->file || !out->dset) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    return FP4_OK;
}

/* A whole tensor as fp32 (buf holds t->nelems floats). */
static fp4_status read_whole(fp4_source *s, const fp4_tensor_desc *t, float *buf)
{
    return fp4_source_read_f32(s, t, 0, 0, t->rank == 0 ? 1 : t->dims[0], buf);
}

static void layer_free(fp4_gemm_layer *L)
{
    free(L->name);
    for (int t = 0; t < 3; t++) free(L->src[t]);
}

/* Read the needed operands of one layer, check shapes, run the selected paths. */
static fp4_status layer_run(const fp4_gemm_config *gc, unsigned paths, const char *name,
                            operand_src src[3], fp4_gemm_layer *L, int64_t *bytes_read)
{
    memset(L, 0, sizeof *L);
    L->name = strdup(name);
    if (!L->name) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    unsigned need = tensors_needed(paths);
    fp4_tensor_desc info[3];
    bool have[3] = {false, false, false};
    float *buf[3] = {NULL, NULL, NULL};
    fp4_source *fh[3] = {NULL, NULL, NULL};
    fp4_status st = FP4_OK;
    for (int t = 0; t < 3; t++) {
        if (!(need & (1u << t))) continue;
        if (!src[t].file) {
            st = fp4_error(FP4_ERR_USAGE, "the selected paths need --%s (or choose --path)",
                           fp4_gemm_tensor_name((fp4_gemm_tensor)t));
            goto out;
        }
        if ((st = fp4_source_open(src[t].file, &fh[t])) != FP4_OK) goto out;
        if ((st = fp4_source_describe(fh[t], src[t].dset, &info[t])) != FP4_OK) goto out;
        have[t] = true;
        if (!info[t].numeric) {
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: unsupported dtype %s", src[t].file,
                           src[t].dset, info[t].dtype);
            goto out;
        }
        size_t len = strlen(src[t].file) + strlen(src[t].dset) + 2;
        L->src[t] = malloc(len);
        if (!L->src[t]) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        snprintf(L->src[t], len, "%s:%s", src[t].file, src[t].dset);
        snprintf(L->dtype[t], sizeof L->dtype[t], "%s", info[t].dtype);
    }
    st = fp4_gemm_shapes_check(have[0] ? info[0].dims : NULL, have[0] ? info[0].rank : 0,
                               have[1] ? info[1].dims : NULL, have[1] ? info[1].rank : 0,
                               have[2] ? info[2].dims : NULL, have[2] ? info[2].rank : 0,
                               &L->m, &L->n, &L->k);
    if (st != FP4_OK) {
        /* name the layer (and files) in front of the shapes */
        char msg[512], srcs[1024] = "";
        snprintf(msg, sizeof msg, "%s", fp4_last_error());
        size_t used = 0;
        for (int t = 0; t < 3 && used < sizeof srcs; t++)
            if (L->src[t])
                used += (size_t)snprintf(srcs + used, sizeof srcs - used, "%s%s = %s",
                                         used ? ", " : "",
                                         fp4_gemm_tensor_name((fp4_gemm_tensor)t), L->src[t]);
        st = fp4_error(st, "%s: %s [%s]", name, msg, srcs);
        goto out;
    }
    /* The fp32 copies of the operands: sizes checked for overflow and against the memory
     * there is before anything is allocated or read (a declared 2^62-value operand). */
    int64_t bytes[3] = {0, 0, 0}, total = 0;
    for (int t = 0; t < 3; t++) {
        if (!have[t]) continue;
        if (info[t].nelems < 0 || !fp4_size_mul(info[t].nelems, (int64_t)sizeof(float), &bytes[t]) ||
            !fp4_size_add(total, bytes[t], &total)) {
            st = fp4_error(FP4_ERR_INPUT, "%s: %s: the operand's size overflows 64 bits",
                           name, L->src[t]);
            goto out;
        }
    }
    const int64_t cap = fp4_gemm_memory_cap();
    if (total > cap) {
        st = fp4_error(FP4_ERR_INPUT, "%s: the operands need %" PRId64 " MiB as fp32, more "
                       "than the memory available (%" PRId64 " MiB)",
                       name, total >> 20, cap >> 20);
        goto out;
    }
    for (int t = 0; t < 3; t++) {
        if (!have[t]) continue;
        buf[t] = malloc((size_t)(bytes[t] ? bytes[t] : 1));
        if (!buf[t]) {
            st = fp4_error(FP4_ERR_INPUT, "%s: cannot allocate %" PRId64 " MiB for the operand",
                           L->src[t], bytes[t] >> 20);
            goto out;
        }
        if ((st = read_whole(fh[t], &info[t], buf[t])) != FP4_OK) goto out;
        *bytes_read += info[t].logical_bytes;
    }
    fp4_gemm_operands ops = {buf[0], buf[1], buf[2], L->m, L->n, L->k};
    for (int p = 0; p < FP4_GEMM_NPATHS; p++) {
        if (!(paths & (1u << p))) continue;
        st = fp4_gemm_path_run(gc, (fp4_gemm_path)p, &ops, &L->res[p]);
        if (st != FP4_OK) goto out;
        L->paths |= 1u << p;
    }
out:
    for (int t = 0; t < 3; t++) {
        free(buf[t]);
        if (have[t]) fp4_tensor_desc_free(&info[t]);
        if (fh[t]) fp4_source_close(fh[t]);
    }
    return st;
}

/* No group given: every group of FILE that holds a dataset named w (file walk order). */
/* Same group spelled twice ("/fc2", "fc2/", "/fc2//")? */
static bool same_group(const char *a, const char *b)
{
    while (*a == '/') a++;
    while (*b == '/') b++;
    size_t la = strlen(a), lb = strlen(b);
    while (la > 0 && a[la - 1] == '/') la--;
    while (lb > 0 && b[lb - 1] == '/') lb--;
    return la == lb && strncmp(a, b, la) == 0;
}

/* The groups given on the command line, each once, in first-seen order (copies; a layer given
 * twice would be counted twice in the pooled results). NULL when out of memory. */
static char **dedup_groups(char **g, int *n)
{
    char **out = calloc((size_t)*n + 1, sizeof *out);
    int k = 0;
    for (int i = 0; out && i < *n; i++) {
        bool seen = false;
        for (int j = 0; j < k && !seen; j++) seen = same_group(out[j], g[i]);
        if (seen) continue;
        if (!(out[k] = strdup(g[i]))) {
            for (int j = 0; j < k; j++) free(out[j]);
            free(out);
            return NULL;
        }
        k++;
    }
    if (out) *n = k;
    return out;
}

static fp4_status groups_find(const char *file, char ***groups, int *ngroups)
{
    fp4_source *f = NULL;
    fp4_tensor_desc *list = NULL;
    int n = 0;
    *groups = NULL;
    *ngroups = 0;
    FP4_TRY(fp4_source_open(file, &f));
    fp4_status st = fp4_source_select(f, NULL, 0, &list, &n);
    if (st == FP4_OK) {
        *groups = calloc((size_t)(n > 0 ? n : 1), sizeof **groups);
        if (!*groups) st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
    }
    const char *seps = fp4_source_format(f)->separators;
    for (int i = 0; st == FP4_OK && i < n; i++) {
        const char *p = list[i].name;
        const char *slash = NULL; /* the last separator */
        for (const char *q = p; *q; q++)
            if (strchr(seps, *q)) slash = q;
        if (!slash || strcmp(slash + 1, "w")) continue;
        char *g = slash == p ? strdup("/") : strndup(p, (size_t)(slash - p));
        if (!g) st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        else (*groups)[(*ngroups)++] = g;
    }
    if (st == FP4_OK && *ngroups == 0)
        st = fp4_error(FP4_ERR_INPUT, "%s: no group holds a dataset 'w'; name the groups",
                       file);
    fp4_tensor_desc_free_list(list, n);
    fp4_source_close(f);
    return st;
}

/* Operands by --x/--w/--dy name their layer after the group they share (same file, same
 * parent group), when they do. */
static bool spec_layer_name(const operand_src src[3], char *buf, size_t n)
{
    const char *file = NULL, *dset = NULL;
    size_t glen = 0;
    for (int t = 0; t < 3; t++) {
        if (!src[t].dset) continue;
        const char *slash = strrchr(src[t].dset, '/');
        size_t len = slash ? (size_t)(slash - src[t].dset) : 0;
        if (!dset) {
            file = src[t].file, dset = src[t].dset, glen = len;
        } else if (strcmp(file, src[t].file) || len != glen || strncmp(dset, src[t].dset, len)) {
            return false;
        }
    }
    if (!dset || glen == 0 || glen >= n) return false;
    memcpy(buf, dset, glen);
    buf[glen] = '\0';
    return true;
}

/* The name of operand t of the layer in group grp, as the file's format spells it: rooted
 * ("/blocks/0" + "/x"; the root group "/" gives "/x") or not ("model.layers.1.mlp" + "." + "x").
 * malloc'd; NULL when out of memory. */
static char *operand_name(const char *grp, bool rooted, char sep, fp4_gemm_tensor t)
{
    size_t gl = strlen(grp);
    while (gl > 1 && grp[gl - 1] == '/') gl--;
    const size_t len = gl + 8;
    char *d = malloc(len);
    if (!d) return NULL;
    if (!rooted)
        snprintf(d, len, "%.*s%c%s", (int)gl, grp, sep, fp4_gemm_tensor_name(t));
    else
        snprintf(d, len, "%s%.*s%s%s", grp[0] == '/' ? "" : "/", (int)gl, grp,
                 gl == 1 && grp[0] == '/' ? "" : "/", fp4_gemm_tensor_name(t));
    return d;
}

/* The shape and dtype of `dset` in f as a part records them (dtype "" when it cannot be
 * described, or f is NULL), its elements added to *w. */
static void operand_describe(fp4_source *f, const char *dset, fp4_shard_shape *sh, int64_t *w)
{
    fp4_tensor_desc info;
    memset(sh, 0, sizeof *sh);
    if (!f || fp4_source_describe(f, dset, &info) != FP4_OK) {
        fp4_error_clear();
        return;
    }
    if (info.nelems > 0) *w += info.nelems;
    sh->rank = info.rank;
    memcpy(sh->dims, info.dims, sizeof sh->dims);
    snprintf(sh->dtype, sizeof sh->dtype, "%s", info.dtype);
    fp4_tensor_desc_free(&info);
}

/* --shard: each group's layer operands (x, w, dy as far as they exist; the --x/--w/--dy
 * datasets of `spec` under by_spec) described before any layer is read: shapes[i] gets their
 * shapes and dtypes (what every share records, shard.inputs) and their elements weigh layer i
 * (0 when unreadable: the layer then fails in its own share) for fp4_shard_assign. mine[]
 * gets this share's positions, ascending. */
static fp4_status shard_layers(const fp4_options *opt, const char *const spec[3], char **groups,
                               int ngroups, bool by_spec, fp4_shard_shape (*shapes)[3],
                               int *mine, int *nmine)
{
    int64_t *w = calloc((size_t)(ngroups ? ngroups : 1), sizeof *w);
    int *owner = malloc((size_t)(ngroups ? ngroups : 1) * sizeof *owner);
    fp4_status st = FP4_OK;
    if (!w || !owner) st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
    fp4_source *f = NULL;
    if (st == FP4_OK && !by_spec && fp4_source_open(opt->args[0], &f) != FP4_OK) fp4_error_clear();
    const bool rooted = f ? fp4_source_format(f)->rooted : true;
    const char sep = f ? fp4_source_format(f)->separators[0] : '/';
    for (int t = 0; st == FP4_OK && by_spec && t < 3; t++) { /* the one layer */
        operand_src o = {NULL, NULL};
        fp4_source *g = NULL;
        memset(&shapes[0][t], 0, sizeof shapes[0][t]);
        if (!spec[t]) continue;
        st = split_spec(fp4_gemm_tensor_name((fp4_gemm_tensor)t), spec[t], &o);
        if (st == FP4_OK && fp4_source_open(o.file, &g) != FP4_OK) fp4_error_clear();
        if (st == FP4_OK) operand_describe(g, o.dset, &shapes[0][t], &w[0]);
        if (g) fp4_source_close(g);
        free(o.file), free(o.dset);
    }
    for (int i = 0; st == FP4_OK && !by_spec && i < ngroups; i++)
        for (int t = 0; t < 3 && st == FP4_OK; t++) {
            char *dset = operand_name(groups[i], rooted, sep, (fp4_gemm_tensor)t);
            if (!dset) {
                st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
                break;
            }
            operand_describe(f, dset, &shapes[i][t], &w[i]);
            free(dset);
        }
    if (f) fp4_source_close(f);
    if (st == FP4_OK) st = fp4_shard_assign(w, ngroups, opt->cfg.shard.count, owner);
    *nmine = 0;
    for (int i = 0; st == FP4_OK && i < ngroups; i++)
        if (owner[i] == opt->cfg.shard.index) mine[(*nmine)++] = i;
    free(w);
    free(owner);
    return st;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* argv: a copy for getopt to permute; typed: the command line as typed, for the report. Under
 * mpirun (*world set once the ranks are known) the report is not written but returned in *part
 * for rank 0 to gather, and every failure after that point returns here too, so that no rank
 * leaves the others waiting; *output is the -o to write the merged report to. */
static fp4_status gemm_main(int argc, char **argv, char **typed, char **part, bool *world,
                            const char **output)
{
    double t0 = now_seconds();
    fp4_progress pm;
    memset(&pm, 0, sizeof pm); /* off until the layers start */
    gemm_args g = {.recipe = FP4_RECIPE_UFP4, .paths = (1u << FP4_GEMM_NPATHS) - 1,
                   .rht_scope = FP4_RHT_SCOPE_NONE, .sr_scope = FP4_SR_SCOPE_DY};
    fp4_options opt;
    fp4_options_default(&opt, "e2m1", FP4_RHT_OFF);
    const fp4_options_ext ext = {gemm_longopts, gemm_opt, &g};
    FP4_TRY(fp4_options_parse(&opt, argc, argv, &ext));
    if (opt.help) {
        fp4_print_usage("gemm");
        return FP4_OK;
    }
    static const char *const allowed[] = {"format", "scale", "block", "sr-bits", "seed",
                                          "rht-size", "rht-signs", "mx-rule", "weight-2d",
                                          "layers", "threads", "device", "rank-by",
                                          "shard", "allow-external", "mem-limit", NULL};
    static const char *const by_recipe[] = {"rht", "rounding", "axis"};
    for (int i = 0; i < 3; i++)
        if (fp4_options_given(&opt, by_recipe[i]))
            return fp4_error(FP4_ERR_USAGE, "--%s does not apply to gemm: the recipe decides RHT, "
                                            "rounding and axis; use --recipe custom with "
                                            "--rht-scope/--sr",
                             by_recipe[i]);
    FP4_TRY(fp4_options_only(&opt, "gemm", allowed, "see 'fp4diag gemm --help'"));
    if (opt.cfg.rank_by > FP4_RANK_DELTA)
        return fp4_error(FP4_ERR_USAGE, "--rank-by %s does not apply to gemm (gap, sqnr, delta)",
                         fp4_rank_by_name(opt.cfg.rank_by));
    bool format_given = fp4_options_given(&opt, "format");
    if (g.recipe != FP4_RECIPE_CUSTOM && (format_given || g.scope_given))
        return fp4_error(FP4_ERR_USAGE, "--format, --rht-scope and --sr need --recipe custom "
                                        "(recipe %s fixes them)", fp4_gemm_recipe_name(g.recipe));
    if (g.recipe == FP4_RECIPE_CUSTOM && opt.cfg.nformats != 1)
        return fp4_error(FP4_ERR_USAGE, "--recipe custom takes one --format, not %d",
                         opt.cfg.nformats);
    if (g.recipe == FP4_RECIPE_NVFP4) { /* the full recipe: nvfp4 scales, 16x16 weight tiles */
        if (fp4_options_given(&opt, "scale") && opt.cfg.scale != FP4_SCALE_NVFP4)
            return fp4_error(FP4_ERR_USAGE, "--recipe nvfp4 uses nvfp4 scales; it conflicts "
                                            "with --scale %s",
                             fp4_scale_name(opt.cfg.scale));
        if (opt.cfg.block_given && opt.cfg.block != 16)
            return fp4_error(FP4_ERR_USAGE, "--block %d conflicts with --recipe nvfp4 (fixed "
                                            "block 16)",
                             opt.cfg.block);
        opt.cfg.scale = FP4_SCALE_NVFP4;
        opt.cfg.block = 16;
        opt.cfg.weight_2d = true;
    }
    if (g.recipe == FP4_RECIPE_CUSTOM && opt.cfg.fmt_scale[0] >= 0) /* --format nvfp4|mxfp4 */
        opt.cfg.scale = (fp4_scale_mode)opt.cfg.fmt_scale[0];
    if (opt.cfg.scale == FP4_SCALE_NVFP4 && !opt.cfg.block_given) opt.cfg.block = 16;
    if (opt.cfg.scale == FP4_SCALE_MXFP4 && !opt.cfg.block_given) opt.cfg.block = 32;
    /* options that would change nothing under the recipe: one message per rule */
    bool custom = g.recipe == FP4_RECIPE_CUSTOM;
    if (fp4_options_given(&opt, "sr-bits") && custom && g.sr_scope == FP4_SR_SCOPE_NONE)
        return fp4_error(FP4_ERR_USAGE, "--sr-bits needs SR on some operand (--sr dy or all)");
    static const char *const rht_opts[] = {"rht-size", "rht-signs"};
    for (int i = 0; i < 2; i++)
        if (fp4_options_given(&opt, rht_opts[i]) && custom &&
            g.rht_scope == FP4_RHT_SCOPE_NONE)
            return fp4_error(FP4_ERR_USAGE, "--%s needs RHT on some path (--rht-scope wgrad or "
                                            "all)",
                             rht_opts[i]);
    if (fp4_options_given(&opt, "mx-rule") && opt.cfg.scale != FP4_SCALE_MXFP4)
        return fp4_error(FP4_ERR_USAGE, "--mx-rule needs mxfp4 scales (--scale mxfp4)");
    fp4_source_set_verbose(opt.cfg.verbosity > 1);
    fp4_source_set_allow_external(opt.cfg.allow_external);
    fp4_source_set_notes(opt.cfg.verbosity > 0);
    bool by_spec = g.spec[0] || g.spec[1] || g.spec[2];
    if (by_spec && opt.nargs > 0)
        return fp4_error(FP4_ERR_USAGE, "give either FILE [GROUP...] or --x/--w/--dy, not both");
    if (!by_spec && opt.nargs < 1)
        return fp4_error(FP4_ERR_USAGE, "missing FILE; see 'fp4diag gemm --help'");

    fp4_gemm_config gc;
    fp4_gemm_config_default(&gc);
    gc.recipe = g.recipe;
    gc.format = opt.cfg.formats[0];
    gc.rht_scope = g.rht_scope;
    gc.sr_scope = g.sr_scope;
    gc.base.scale = opt.cfg.scale;
    gc.base.block = opt.cfg.block;
    gc.base.sr_bits = opt.cfg.sr_bits;
    gc.base.seed = opt.cfg.seed;
    gc.base.mx_rule = opt.cfg.mx_rule;
    gc.base.weight_2d = opt.cfg.weight_2d;
    gc.signs = &opt.cfg.signs;
    /* Validate every operand config before reading anything. */
    for (int p = 0; p < FP4_GEMM_NPATHS; p++)
        for (int t = 0; t < 3; t++) {
            fp4_qconfig q;
            FP4_TRY(fp4_gemm_operand_config(&gc, (fp4_gemm_path)p, (fp4_gemm_tensor)t, &q));
        }
    fp4_world w; /* under mpirun: this rank's share of the layers, one report from rank 0 */
    int world_threads;
    FP4_TRY(fp4_world_init(&w));
    FP4_TRY(fp4_world_prepare(&w, &opt.cfg, &world_threads));
    *world = w.active;
    *output = opt.cfg.output;
    /* -o checked before anything is read: never one of the operand files (rank 0 writes it;
     * under mpirun its refusal goes through the gather, so no rank waits) */
    if (!fp4_world_quiet()) {
        operand_src in[3] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
        const char *files[3] = {NULL, NULL, NULL};
        fp4_status pst = FP4_OK;
        for (int t = 0; t < 3 && pst == FP4_OK; t++) {
            if (!by_spec) files[t] = t == 0 ? opt.args[0] : NULL;
            else if (g.spec[t] &&
                     (pst = split_spec(fp4_gemm_tensor_name((fp4_gemm_tensor)t), g.spec[t],
                                       &in[t])) == FP4_OK)
                files[t] = in[t].file;
        }
        if (pst == FP4_OK) pst = fp4_output_prepare(opt.cfg.output, files, 3);
        for (int t = 0; t < 3; t++) free(in[t].file), free(in[t].dset);
        if (pst != FP4_OK) return pst;
    }
    const int nthreads = opt.cfg.threads > 0 ? opt.cfg.threads : world_threads;
    if (nthreads > 0) { /* quantizing (OpenMP) and CBLAS */
        openblas_set_num_threads(nthreads);
        omp_set_num_threads(nthreads);
    }
    /* chunk decoding (io/chunked.c): the same threads, its working memory within --mem-limit */
    fp4_chunked_set_threads(nthreads > 0 ? nthreads : omp_get_max_threads());
    fp4_pario_set_threads(nthreads > 0 ? nthreads : omp_get_max_threads());
    fp4_chunked_set_memory(opt.cfg.mem_limit);
    fp4_dgemm *products = NULL;
    FP4_TRY(fp4_dgemm_open(opt.cfg.device, &products));
    gc.products = products;

    char **groups = NULL;
    int ngroups = 0;
    bool groups_owned = false;
    fp4_status st = FP4_OK;
    operand_src pin[3] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}}; /* --x/--w/--dy files */
    const char *pfiles[3] = {NULL, NULL, NULL}; /* the files fingerprinted */
    bool rooted = true; /* how the file's format spells names: "/qkv/x" or "model.qkv.x" */
    char name_sep = '/';
    if (!by_spec) {
        fp4_source *probe = NULL;
        if (fp4_source_open(opt.args[0], &probe) == FP4_OK) { /* else the read says why */
            rooted = fp4_source_format(probe)->rooted;
            name_sep = fp4_source_format(probe)->separators[0];
            fp4_source_close(probe);
        }
        fp4_error_clear();
    }
    if (!by_spec) {
        if (opt.nargs > 1) {
            groups = opt.args + 1;
            ngroups = opt.nargs - 1;
            groups = dedup_groups(groups, &ngroups);
            if (!groups) {
                fp4_dgemm_close(products);
                return fp4_error(FP4_ERR_INTERNAL, "out of memory");
            }
            groups_owned = true;
        } else {
            if ((st = groups_find(opt.args[0], &groups, &ngroups)) != FP4_OK) {
                fp4_dgemm_close(products); /* the products' engine is open by now */
                return st;
            }
            groups_owned = true;
        }
    }
    int nlayers = by_spec ? 1 : ngroups;
    fp4_gemm_layer *layers = calloc((size_t)nlayers, sizeof *layers);
    fp4_gemm_error *errs = NULL;
    int *mine = calloc((size_t)nlayers, sizeof *mine);
    int *lindex = calloc((size_t)nlayers, sizeof *lindex);
    int *eindex = calloc((size_t)nlayers, sizeof *eindex);
    fp4_shard_shape(*shapes)[3] = calloc((size_t)nlayers, sizeof *shapes);
    char *spec_name = (char *)"--x/--w/--dy";
    fp4_gemm_run run = {.config = &opt.cfg, .gc = &gc, .paths = g.paths, .layers = layers,
                        .selected = by_spec ? &spec_name : groups, .nselected = nlayers,
                        .assigned = mine, .index = lindex, .error_index = eindex};
    if (!layers || !mine || !lindex || !eindex || !shapes) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    int nmine = nlayers;
    for (int i = 0; i < nlayers; i++) mine[i] = i;
    if (opt.cfg.shard.count > 0) {
        st = shard_layers(&opt, g.spec, groups, nlayers, by_spec, shapes, mine, &nmine);
        if (st != FP4_OK) goto out;
        run.inputs = (const fp4_shard_shape(*)[3])shapes;
    }
    run.nassigned = nmine;
    /* the provenance, and what every share reads the same: the operand files, before any
     * layer is read (a --shard run checks them again once every layer is read) */
    pfiles[0] = by_spec ? NULL : opt.args[0];
    for (int t = 0; by_spec && t < 3 && st == FP4_OK; t++)
        if (g.spec[t] && (st = split_spec(fp4_gemm_tensor_name((fp4_gemm_tensor)t),
                                          g.spec[t], &pin[t])) == FP4_OK)
            pfiles[t] = pin[t].file;
    /* the one layer of --x/--w/--dy is named as the loop below names it (a part's
     * shard.layers lists it, and merge holds the layer's name to it) */
    char spec_layer[256] = "";
    if (st == FP4_OK && by_spec && spec_layer_name(pin, spec_layer, sizeof spec_layer))
        spec_name = spec_layer;
    {
        fp4_file_print *prints = NULL;
        if (st == FP4_OK) st = fp4_fingerprint_inputs(pfiles, 3, &prints, &run.nprints);
        run.prints = prints;
        if (st != FP4_OK && opt.cfg.shard.count == 0) fp4_error_clear(), st = FP4_OK;
        if (st != FP4_OK) goto out;
    }
    fp4_progress_start(&pm, opt.cfg.verbosity, nmine, 0); /* the bytes come as they are read */
    fp4_progress_share(&pm, opt.cfg.shard.index, opt.cfg.shard.count);
    for (int k = 0; k < nmine; k++) {
        const int i = mine[k];
        operand_src src[3] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
        const char *name = "--x/--w/--dy";
        char spec_group[256] = "";
        for (int t = 0; t < 3 && st == FP4_OK; t++) {
            if (by_spec) {
                if (g.spec[t])
                    st = split_spec(fp4_gemm_tensor_name((fp4_gemm_tensor)t), g.spec[t], &src[t]);
                continue;
            }
            const char *grp = groups[i];
            src[t].file = strdup(opt.args[0]);
            src[t].dset = operand_name(grp, rooted, name_sep, (fp4_gemm_tensor)t);
            if (!src[t].file || !src[t].dset) {
                st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
                break;
            }
            name = grp;
        }
        if (st == FP4_OK && by_spec && spec_layer_name(src, spec_group, sizeof spec_group))
            name = spec_group;
        if (st == FP4_OK) fp4_progress_step(&pm, k, name, run.bytes_read);
        if (st == FP4_OK)
            st = layer_run(&gc, g.paths, name, src, &layers[run.nlayers], &run.bytes_read);
        lindex[run.nlayers++] = i;
        for (int t = 0; t < 3; t++) free(src[t].file), free(src[t].dset);
        if (st == FP4_ERR_INPUT) { /* this layer only: an errors entry, the others still run */
            run.nlayers--;
            layer_free(&layers[run.nlayers]);
            memset(&layers[run.nlayers], 0, sizeof layers[run.nlayers]);
            fp4_gemm_error *e = realloc(errs, (size_t)(run.nerrors + 1) * sizeof *e);
            if (e) errs = e, run.errors = e;
            char *msg = e ? fp4_text_escape(fp4_last_error(), FP4_ESC_CONTROL, NULL) : NULL;
            char *lname = msg ? strdup(name) : NULL;
            if (!lname) {
                free(msg);
                st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
                goto out;
            }
            eindex[run.nerrors] = i;
            errs[run.nerrors++] = (fp4_gemm_error){lname, msg};
            st = FP4_OK;
            continue;
        }
        if (st != FP4_OK) goto out;
    }
    fp4_progress_finish(&pm, run.bytes_read);
    if (opt.cfg.shard.count > 0 &&
        (st = fp4_fingerprint_recheck(pfiles, 3, run.prints, run.nprints)) != FP4_OK)
        goto out;
    if (run.nlayers == 0 && run.nerrors > 0 && opt.cfg.shard.count == 0) {
        /* nothing ran: no report, the first error (a share still reports: merge decides) */
        st = fp4_error(FP4_ERR_INPUT, "%s", errs[0].message);
        goto out;
    }
    run.seconds = now_seconds() - t0;
    /* the report's argv starts with the program name, then the command and its arguments */
    char **full = malloc((size_t)(argc + 2) * sizeof *full);
    if (!full) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    full[0] = (char *)"fp4diag";
    for (int i = 0; i < argc; i++) full[i + 1] = typed[i];
    full[argc + 1] = NULL;
    if (w.active) {
        if (!(*part = fp4_report_gemm_json(argc + 1, full, &run)))
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory building the report");
    } else {
        st = fp4_report_gemm(argc + 1, full, &run);
    }
    free(full);
    if (st == FP4_OK && run.nerrors > 0)
        st = fp4_error(FP4_ERR_INPUT, "%d of %d layers failed (see \"errors\" in the report); "
                                      "first: %s",
                       run.nerrors, nlayers, errs[0].message);
out:
    fp4_progress_end(&pm);
    for (int t = 0; t < 3; t++) free(pin[t].file), free(pin[t].dset);
    fp4_output_forget();
    fp4_dgemm_close(products);
    fp4_fingerprint_free((fp4_file_print *)run.prints, run.nprints);
    for (int i = 0; i < run.nlayers; i++) layer_free(&layers[i]);
    free(layers);
    for (int i = 0; i < run.nerrors; i++) free(errs[i].layer), free(errs[i].message);
    free(errs);
    free(mine);
    free(lindex);
    free(eindex);
    free(shapes);
    if (groups_owned) {
        for (int i = 0; i < ngroups; i++) free(groups[i]);
        free(groups);
    }
    return st;
}

fp4_status cmd_gemm(int argc, char **argv)
{
    /* getopt permutes its argv; the report records the command line as typed */
    char **args = fp4_argv_dup(argc, argv);
    if (!args) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    char *part = NULL;
    bool world = false;
    const char *output = NULL;
    fp4_status st = gemm_main(argc, args, argv, &part, &world, &output);
    if (world) { /* every rank, failed or not, meets the others here */
        fp4_world w;
        fp4_world_init(&w);
        /* a part with errors entries is still a part (the merged report exits 3) */
        st = fp4_world_report(&w, part, part ? FP4_OK : st, output, NULL);
    }
    free(part);
    free(args);
    return st;
}
