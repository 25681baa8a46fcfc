/* cmd/libconfig.c — the public API's configuration (include/fp4diag.h: fp4d_config_parse)
 * from the CLI's own option strings, through the program's parser (cmd/options.c), so that a
 * library caller and the command line name every option alike. It lives in cmd/, above api/,
 * because argv parsing is the program's; api/ takes the fp4_run_config it makes. */
#include <stdlib.h>
#include <string.h>

#include "api/impl.h"
#include "cmd/options.h"

/* The options an analysis of one tensor takes (the rest are about the CLI's output, its
 * selection or its process). */
static const char *const api_options[] = {
    "format", "scale",   "block",  "axis",   "rounding",  "seed",           "rht",
    "rht-size", "rht-signs", "mx-rule", "weight-2d", "sr-bits", "threads", "device",
    "mem-limit", "allow-external", "error-split", NULL};

fp4d_status fp4d_config_parse_argv(int argc, const char *const *argv, fp4d_config **out)
{
    fp4_error_clear();
    if (!out) return fp4_api_status(fp4_error(FP4_ERR_USAGE, "fp4d_config_parse: out is NULL"));
    *out = NULL;
    if (argc < 0 || (argc > 0 && !argv))
        return fp4_api_status(fp4_error(FP4_ERR_USAGE, "fp4d_config_parse: bad argc/argv"));
    fp4d_config *c = calloc(1, sizeof *c);
    if (!c) return fp4_api_status(fp4_error(FP4_ERR_INTERNAL, "out of memory"));
    /* our own copies: the options point into them, getopt permutes the array; argv[0] is
     * "sqnr", the command whose options these are, so messages read as the CLI's */
    c->strings = calloc((size_t)argc + 2, sizeof *c->strings);
    char **av = calloc((size_t)argc + 2, sizeof *av);
    fp4_status st = FP4_OK;
    if (!c->strings || !av || !(c->strings[0] = strdup("sqnr"))) {
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        goto out;
    }
    c->nstrings = 1;
    for (int i = 0; i < argc; i++) {
        if (!argv[i]) {
            st = fp4_error(FP4_ERR_USAGE, "fp4d_config_parse: argv[%d] is NULL", i);
            goto out;
        }
        if (!(c->strings[c->nstrings] = strdup(argv[i]))) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        c->nstrings++;
    }
    for (int i = 0; i < c->nstrings; i++) av[i] = c->strings[i];
    fp4_options o;
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    st = fp4_options_parse(&o, c->nstrings, av, NULL);
    if (st != FP4_OK) goto out;
    if (o.help || fp4_options_given(&o, "output") || fp4_options_given(&o, "quiet") ||
        fp4_options_given(&o, "verbose") || fp4_options_given(&o, "json")) {
        st = fp4_error(FP4_ERR_USAGE, "%s does not apply to an analysis through the library",
                       o.help ? "--help" : fp4_options_given(&o, "output") ? "-o"
                                     : fp4_options_given(&o, "json")  ? "--json"
                                     : fp4_options_given(&o, "quiet") ? "-q"
                                                                           : "-v");
        goto out;
    }
    st = fp4_options_only(&o, "the library",
                          api_options, "options of the configuration and the run only");
    if (st != FP4_OK) goto out;
    if (o.nargs > 0) {
        st = fp4_error(FP4_ERR_USAGE, "'%s': operands do not apply to a configuration",
                       o.args[0]);
        goto out;
    }
    st = fp4_options_check_effect(&o);
    if (st != FP4_OK) goto out;
    c->cfg = o.cfg;
    c->cfg.verbosity = -1; /* a library prints nothing: no progress line on the caller's stderr */
    fp4_qconfig cfgs[2 * FP4_MAX_FORMATS];
    st = fp4_run_config_qconfigs(&c->cfg, cfgs, 2 * FP4_MAX_FORMATS, &c->ncfg);
out:
    free(av);
    if (st != FP4_OK) {
        fp4d_config_free(c);
        return fp4_api_status(st);
    }
    *out = c;
    return FP4D_OK;
}

fp4d_status fp4d_config_parse(const char *options, fp4d_config **out)
{
    fp4_error_clear();
    if (!out) return fp4_api_status(fp4_error(FP4_ERR_USAGE, "fp4d_config_parse: out is NULL"));
    *out = NULL;
    char *copy = strdup(options ? options : "");
    size_t cap = strlen(options ? options : "") / 2 + 2;
    const char **av = calloc(cap, sizeof *av);
    if (!copy || !av) {
        free(copy);
        free(av);
        return fp4_api_status(fp4_error(FP4_ERR_INTERNAL, "out of memory"));
    }
    int argc = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, " \t\n\r\f\v", &save); tok;
         tok = strtok_r(NULL, " \t\n\r\f\v", &save))
        av[argc++] = tok;
    fp4d_status st = fp4d_config_parse_argv(argc, av, out);
    free(copy);
    free(av);
    return st;
}
