/* options.c — getopt_long parsing of the shared command-line options into the run
 * configuration (run/config.h). */
#include "cmd/options.h"
#include "report/output.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_FORMAT = 256,
    OPT_SCALE,
    OPT_BLOCK,
    OPT_AXIS,
    OPT_ROUNDING,
    OPT_SEED,
    OPT_RHT,
    OPT_RHT_SIZE,
    OPT_RHT_SIGNS,
    OPT_MX_RULE,
    OPT_WEIGHT_2D,
    OPT_ERROR_SPLIT,
    OPT_SR_BITS,
    OPT_THREADS,
    OPT_DEVICE,
    OPT_MEM_LIMIT,
    OPT_LAYERS,
    OPT_ALL_TENSORS,
    OPT_ALL_WEIGHTS,
    OPT_EMIT_EXCLUDE,
    OPT_EXCLUDE,
    OPT_JSON,
    OPT_RANK_BY,
    OPT_SHARD,
    OPT_ALLOW_EXTERNAL,
    OPT_OUTPUT = 'o',
};

static const struct option base_longopts[] = {
    {"format", required_argument, NULL, OPT_FORMAT},
    {"scale", required_argument, NULL, OPT_SCALE},
    {"block", required_argument, NULL, OPT_BLOCK},
    {"axis", required_argument, NULL, OPT_AXIS},
    {"rounding", required_argument, NULL, OPT_ROUNDING},
    {"seed", required_argument, NULL, OPT_SEED},
    {"rht", required_argument, NULL, OPT_RHT},
    {"rht-size", required_argument, NULL, OPT_RHT_SIZE},
    {"rht-signs", required_argument, NULL, OPT_RHT_SIGNS},
    {"mx-rule", required_argument, NULL, OPT_MX_RULE},
    {"weight-2d", no_argument, NULL, OPT_WEIGHT_2D},
    {"error-split", no_argument, NULL, OPT_ERROR_SPLIT},
    {"sr-bits", required_argument, NULL, OPT_SR_BITS},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"mem-limit", required_argument, NULL, OPT_MEM_LIMIT},
    {"layers", required_argument, NULL, OPT_LAYERS},
    {"all-tensors", no_argument, NULL, OPT_ALL_TENSORS},
    {"all-weights", no_argument, NULL, OPT_ALL_WEIGHTS},
    {"emit-exclude", required_argument, NULL, OPT_EMIT_EXCLUDE},
    {"exclude", required_argument, NULL, OPT_EXCLUDE},
    {"json", no_argument, NULL, OPT_JSON},
    {"rank-by", required_argument, NULL, OPT_RANK_BY},
    {"shard", required_argument, NULL, OPT_SHARD},
    {"allow-external", no_argument, NULL, OPT_ALLOW_EXTERNAL},
    {"output", required_argument, NULL, OPT_OUTPUT},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
};
#define N_BASE ((int)(sizeof base_longopts / sizeof base_longopts[0]))
#define MAX_EXT 32

void fp4_options_default(fp4_options *o, const char *formats, fp4_rht_mode rht)
{
    memset(o, 0, sizeof *o);
    fp4_run_config_default(&o->cfg, formats, rht);
}

/* A whole decimal integer in [lo, hi]. */
static fp4_status parse_int(const char *opt, const char *s, long long lo, long long hi,
                            long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi)
        return fp4_error(FP4_ERR_USAGE, "--%s: '%s' is not an integer in [%lld, %lld]", opt, s,
                         lo, hi);
    *out = v;
    return FP4_OK;
}

char **fp4_argv_dup(int argc, char **argv)
{
    char **c = malloc((size_t)(argc + 1) * sizeof *c);
    if (!c) return NULL;
    for (int i = 0; i < argc; i++) c[i] = argv[i];
    c[argc] = NULL;
    return c;
}

fp4_status fp4_parse_size(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    if (!s || !*s || !(isdigit((unsigned char)*s) || *s == '.'))
        return fp4_error(FP4_ERR_USAGE, "'%s' is not a size (bytes, 512M, 1G)", s ? s : "");
    double v = strtod(s, &end);
    if (errno || end == s) return fp4_error(FP4_ERR_USAGE, "'%s' is not a size", s);
    double mult = 1;
    switch (tolower((unsigned char)*end)) {
    case 'k': mult = 1024.0; end++; break;
    case 'm': mult = 1024.0 * 1024; end++; break;
    case 'g': mult = 1024.0 * 1024 * 1024; end++; break;
    case 't': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (mult > 1 && tolower((unsigned char)*end) == 'i') end++;
    if (tolower((unsigned char)*end) == 'b') end++;
    if (*end) return fp4_error(FP4_ERR_USAGE, "'%s' is not a size (bytes, 512M, 1G)", s);
    double b = v * mult;
    if (!(b >= 1) || b > 9.0e18) return fp4_error(FP4_ERR_USAGE, "size '%s' out of range", s);
    *out = (int64_t)b;
    return FP4_OK;
}

static fp4_status handle_base(fp4_options *opt, int c, const char *arg)
{
    fp4_run_config *o = &opt->cfg;
    long long v;
    switch (c) {
    case OPT_FORMAT: {
        /* names are case-insensitive (E2M1 = e2m1); reports spell them canonically; nvfp4 and
         * mxfp4 are e2m1 with their scales (the results still name format and scale apart) */
        char low[256];
        size_t n = strlen(arg);
        if (n >= sizeof low) return fp4_error(FP4_ERR_USAGE, "--format: list too long");
        for (size_t i = 0; i <= n; i++) low[i] = (char)tolower((unsigned char)arg[i]);
        for (int i = 0; i < FP4_MAX_FORMATS; i++) o->fmt_scale[i] = -1;
        if (!strcmp(low, "all") || !*low)
            return fp4_format_parse_list(low, o->formats, FP4_MAX_FORMATS, &o->nformats);
        o->nformats = 0;
        for (char *p = low;;) {
            size_t len = strcspn(p, ",");
            char item[32];
            if (len == 0) return fp4_error(FP4_ERR_USAGE, "format list '%s': empty item", arg);
            if (len >= sizeof item || o->nformats >= FP4_MAX_FORMATS)
                return fp4_error(FP4_ERR_USAGE, "--format: '%s' is too long a list", arg);
            memcpy(item, p, len);
            item[len] = '\0';
            int k = o->nformats;
            if (!strcmp(item, "nvfp4") || !strcmp(item, "mxfp4")) {
                o->formats[k] = (fp4_format){FP4_FMT_E2M1, 0};
                o->fmt_scale[k] = item[0] == 'n' ? FP4_SCALE_NVFP4 : FP4_SCALE_MXFP4;
            } else {
                FP4_TRY(fp4_format_parse(item, &o->formats[k]));
            }
            o->nformats++;
            if (!p[len]) break;
            p += len + 1;
        }
        return FP4_OK;
    }
    case OPT_SCALE: return fp4_scale_parse(arg, &o->scale);
    case OPT_BLOCK:
        if (parse_int("block", arg, 2, 1 << 20, &v) != FP4_OK || (v & (v - 1)))
            return fp4_error(FP4_ERR_USAGE, "--block: '%s' must be a power of two in [2, %d]",
                             arg, 1 << 20);
        o->block = (int)v;
        o->block_given = true;
        return FP4_OK;
    case OPT_AXIS:
        FP4_TRY(parse_int("axis", arg, -8, 7, &v));
        o->axis = (int)v;
        return FP4_OK;
    case OPT_ROUNDING: return fp4_rounding_parse(arg, &o->rounding);
    case OPT_SEED: {
        char *end;
        errno = 0;
        /* decimal digits only: no sign, no space, no octal or hex reading of "010" */
        if (!isdigit((unsigned char)arg[0]))
            return fp4_error(FP4_ERR_USAGE, "--seed: '%s' is not an unsigned decimal integer",
                             arg);
        unsigned long long u = strtoull(arg, &end, 10);
        if (*end || errno)
            return fp4_error(FP4_ERR_USAGE, "--seed: '%s' is not an unsigned decimal integer "
                                            "below 2^64",
                             arg);
        o->seed = (uint64_t)u;
        return FP4_OK;
    }
    case OPT_RHT:
        if (!strcmp(arg, "off")) o->rht = FP4_RHT_OFF;
        else if (!strcmp(arg, "on")) o->rht = FP4_RHT_ON;
        else if (!strcmp(arg, "both")) o->rht = FP4_RHT_BOTH;
        else return fp4_error(FP4_ERR_USAGE, "--rht: '%s' is not off, on or both", arg);
        return FP4_OK;
    case OPT_RHT_SIZE:
        if (parse_int("rht-size", arg, 16, FP4_RHT_MAX, &v) != FP4_OK || (v & (v - 1)))
            return fp4_error(FP4_ERR_USAGE,
                             "--rht-size: '%s': RHT size must be a power of two in [16, %d]",
                             arg, FP4_RHT_MAX);
        o->rht_size = (int)v;
        return FP4_OK;
    case OPT_RHT_SIGNS:
        if (strlen(arg) >= sizeof o->rht_signs_spec)
            return fp4_error(FP4_ERR_USAGE, "--rht-signs: '%s' is too long", arg);
        snprintf(o->rht_signs_spec, sizeof o->rht_signs_spec, "%s", arg);
        return FP4_OK;
    case OPT_MX_RULE: return fp4_mx_rule_parse(arg, &o->mx_rule);
    case OPT_WEIGHT_2D: o->weight_2d = true; return FP4_OK;
    case OPT_ERROR_SPLIT: o->error_split = true; return FP4_OK;
    case OPT_SR_BITS:
        if (parse_int("sr-bits", arg, 1, 24, &v) != FP4_OK || (v != 24 && v != 8))
            return fp4_error(FP4_ERR_USAGE, "--sr-bits: '%s' must be 24 or 8", arg);
        o->sr_bits = (int)v;
        return FP4_OK;
    case OPT_THREADS:
        FP4_TRY(parse_int("threads", arg, 0, 4096, &v));
        o->threads = (int)v;
        return FP4_OK;
    case OPT_DEVICE:
        if (!strcmp(arg, "cpu")) o->device = FP4_DEVICE_CPU;
        else if (!strcmp(arg, "cuda")) o->device = FP4_DEVICE_CUDA;
        else if (!strcmp(arg, "auto")) o->device = FP4_DEVICE_AUTO;
        else return fp4_error(FP4_ERR_USAGE, "--device: '%s' is not cpu, cuda or auto", arg);
        return FP4_OK;
    case OPT_MEM_LIMIT: {
        fp4_status st = fp4_parse_size(arg, &o->mem_limit);
        if (st != FP4_OK)
            return fp4_error(st, "--mem-limit: '%s' is not a size (bytes, 512M, 1G)", arg);
        return FP4_OK;
    }
    case OPT_LAYERS:
        FP4_TRY(parse_int("layers", arg, 1, 1000000, &v));
        o->layers = (int)v;
        return FP4_OK;
    case OPT_ALL_TENSORS: o->all_tensors = true; return FP4_OK;
    case OPT_ALL_WEIGHTS: o->all_weights = true; return FP4_OK;
    case OPT_EMIT_EXCLUDE: {
        const char *colon = strchr(arg, ':');
        size_t fl = colon ? (size_t)(colon - arg) : strlen(arg);
        if (fl == 8 && !strncmp(arg, "modelopt", fl)) o->emit_exclude = FP4_EMIT_MODELOPT;
        else if (fl == 14 && !strncmp(arg, "llm-compressor", fl))
            o->emit_exclude = FP4_EMIT_LLM_COMPRESSOR;
        else
            return fp4_error(FP4_ERR_USAGE, "--emit-exclude: '%.*s' is not modelopt or "
                             "llm-compressor (--emit-exclude FORMAT:FILE)", (int)fl, arg);
        if (!colon || !colon[1])
            return fp4_error(FP4_ERR_USAGE, "--emit-exclude %.*s: no FILE (--emit-exclude "
                             "FORMAT:FILE)", (int)fl, arg);
        o->emit_exclude_path = colon + 1;
        return FP4_OK;
    }
    case OPT_EXCLUDE:
        if (!*arg) return fp4_error(FP4_ERR_USAGE, "--exclude: empty pattern");
        if (o->nexclude >= FP4_MAX_EXCLUDE)
            return fp4_error(FP4_ERR_USAGE, "--exclude: more than %d patterns", FP4_MAX_EXCLUDE);
        o->exclude[o->nexclude++] = arg;
        return FP4_OK;
    case OPT_JSON: o->json = true; return FP4_OK;
    case OPT_RANK_BY:
        for (int r = 0; r < FP4_RANK_COUNT; r++)
            if (!strcmp(arg, fp4_rank_by_name((fp4_rank_by)r))) {
                o->rank_by = (fp4_rank_by)r;
                return FP4_OK;
            }
    {
        /* the list from the names the loop above accepts, so that it cannot fall behind */
        char names[256] = "";
        for (int r = 0; r < FP4_RANK_COUNT; r++) {
            size_t n = strlen(names);
            snprintf(names + n, sizeof names - n, "%s%s",
                     r == 0 ? "" : r == FP4_RANK_COUNT - 1 ? " or " : ", ",
                     fp4_rank_by_name((fp4_rank_by)r));
        }
        return fp4_error(FP4_ERR_USAGE, "--rank-by: '%s' is not %s", arg, names);
    }
    case OPT_SHARD: return fp4_shard_parse(arg, &o->shard);
    case OPT_ALLOW_EXTERNAL: o->allow_external = true; return FP4_OK;
    case OPT_OUTPUT:
        if (!*arg) return fp4_error(FP4_ERR_USAGE, "-o: empty file name");
        o->output = arg;
        return FP4_OK;
    case 'q':
        o->verbosity = -1;
        fp4_output_set_verbosity(o->verbosity);
        return FP4_OK;
    case 'v':
        o->verbosity = o->verbosity < 0 ? 1 : o->verbosity + 1;
        fp4_output_set_verbosity(o->verbosity);
        return FP4_OK;
    case 'h': opt->help = true; return FP4_OK;
    default: return fp4_error(FP4_ERR_INTERNAL, "option %d not handled", c);
    }
}

fp4_status fp4_options_parse(fp4_options *o, int argc, char **argv, const fp4_options_ext *ext)
{
    struct option longopts[N_BASE + MAX_EXT + 1];
    int n = 0;
    for (int i = 0; i < N_BASE; i++) longopts[n++] = base_longopts[i];
    if (ext && ext->longopts)
        for (int i = 0; ext->longopts[i].name; i++) {
            if (i >= MAX_EXT) return fp4_error(FP4_ERR_INTERNAL, "too many extra options");
            longopts[n++] = ext->longopts[i];
        }
    memset(&longopts[n], 0, sizeof longopts[n]);

    optind = 0; /* glibc: full reinitialisation, so parse can run more than once */
    opterr = 0;
    bool seen_format = false, seen_scale = false; /* in this argv: once each */
    for (;;) {
        optopt = 0;
        int li = -1;
        int c = getopt_long(argc, argv, ":o:qvh", longopts, &li);
        if (c == -1) break;
        /* a second --format or --scale would silently replace the first: refused */
        if (c == OPT_FORMAT && seen_format)
            return fp4_error(FP4_ERR_USAGE, "--format given twice: list the formats in one "
                                            "(e.g. --format e2m1,int4)");
        if (c == OPT_SCALE && seen_scale)
            return fp4_error(FP4_ERR_USAGE, "--scale given twice: one scale mode per run (or "
                                            "--format nvfp4,mxfp4,e2m1 for each format's own)");
        seen_format |= c == OPT_FORMAT;
        seen_scale |= c == OPT_SCALE;
        if (li >= 0 && li < N_BASE) o->given |= (uint64_t)1 << li;
        else if (c < 1000)
            for (int i = 0; i < N_BASE; i++)
                if (base_longopts[i].val == c) o->given |= (uint64_t)1 << i;
        if (c == ':') {
            if (optopt == 'o')
                return fp4_error(FP4_ERR_USAGE, "option '-o' needs a value; see 'fp4diag %s "
                                                "--help'",
                                 argv[0]);
            for (int i = 0; i < n; i++)
                if (optopt == longopts[i].val)
                    return fp4_error(FP4_ERR_USAGE, "option '--%s' needs a value; see 'fp4diag "
                                                    "%s --help'",
                                     longopts[i].name, argv[0]);
            return fp4_error(FP4_ERR_USAGE, "option '%s' needs a value; see 'fp4diag %s --help'",
                             argv[optind - 1], argv[0]);
        }
        if (c == '?') {
            if (optopt > 0 && optopt < 256)
                return fp4_error(FP4_ERR_USAGE, "unknown option '-%c'; see 'fp4diag %s --help'",
                                 optopt, argv[0]);
            return fp4_error(FP4_ERR_USAGE, "unknown option '%s'; see 'fp4diag %s --help'",
                             argv[optind - 1], argv[0]);
        }
        fp4_status st;
        if (c >= 1000 && ext && ext->handle) st = ext->handle(ext->ctx, c, optarg);
        else st = handle_base(o, c, optarg);
        if (st != FP4_OK) return st;
    }
    o->args = argv + optind;
    o->nargs = argc - optind;
    if (o->help) return FP4_OK;

    o->cfg.scale_given = fp4_options_given(o, "scale");
    return fp4_run_config_finish(&o->cfg);
}

fp4_status fp4_options_config_of_argv(int argc, char **argv, fp4_run_config *out)
{
    if (argc < 1) return fp4_error(FP4_ERR_USAGE, "no command");
    fp4_options o;
    fp4_options_default(&o, NULL, !strcmp(argv[0], "rht") ? FP4_RHT_BOTH : FP4_RHT_OFF);
    char **args = fp4_argv_dup(argc, argv); /* getopt permutes the copy, not the caller's */
    if (!args) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    fp4_status st = fp4_options_parse(&o, argc, args, NULL);
    free(args);
    if (st == FP4_OK) *out = o.cfg;
    return st;
}

fp4_status fp4_options_check_effect(const fp4_options *o)
{
    if (fp4_options_given(o, "sr-bits") && o->cfg.rounding != FP4_ROUND_SR)
        return fp4_error(FP4_ERR_USAGE, "--sr-bits needs --rounding sr (it sets the random bits "
                                        "of stochastic rounding)");
    static const char *const rht_opts[] = {"rht-size", "rht-signs"};
    for (int i = 0; i < 2; i++)
        if (fp4_options_given(o, rht_opts[i]) && o->cfg.rht == FP4_RHT_OFF)
            return fp4_error(FP4_ERR_USAGE, "--%s needs --rht on or both", rht_opts[i]);
    bool mx = false;
    for (int f = 0; f < o->cfg.nformats; f++)
        mx |= (o->cfg.fmt_scale[f] >= 0 ? o->cfg.fmt_scale[f] : (int)o->cfg.scale) ==
              FP4_SCALE_MXFP4;
    if (fp4_options_given(o, "mx-rule") && !mx)
        return fp4_error(FP4_ERR_USAGE, "--mx-rule needs mxfp4 scales (--scale mxfp4 or "
                                        "--format mxfp4)");
    return FP4_OK;
}

bool fp4_options_given(const fp4_options *o, const char *name)
{
    for (int i = 0; i < N_BASE; i++)
        if (!strcmp(base_longopts[i].name, name)) return (o->given >> i) & 1;
    return false;
}

fp4_status fp4_options_only(const fp4_options *o, const char *command,
                            const char *const *allowed, const char *why)
{
    static const char *const always[] = {"output", "quiet", "verbose", "help", "json"};
    for (int i = 0; i < N_BASE; i++) {
        if (!((o->given >> i) & 1)) continue;
        bool ok = false;
        for (size_t k = 0; k < sizeof always / sizeof *always; k++)
            ok |= !strcmp(base_longopts[i].name, always[k]);
        for (int k = 0; allowed && allowed[k]; k++) ok |= !strcmp(base_longopts[i].name, allowed[k]);
        if (!ok)
            return fp4_error(FP4_ERR_USAGE, "--%s does not apply to %s (%s)",
                             base_longopts[i].name, command, why);
    }
    return FP4_OK;
}
