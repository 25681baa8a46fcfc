/* cmd/libreport.c — the public API's whole reports (include/fp4diag.h: fp4d_report): the run
 * and the JSON of `fp4diag sqnr|bias|buckets|rht|audit ARGS`, from the CLI's own argument
 * strings through the program's parser, returned as text instead of written. It lives in cmd/
 * beside libconfig.c for the same reason: argv parsing is the program's. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "api/impl.h"
#include "cmd/options.h"
#include "io/chunked.h"
#include "io/pario.h"
#include "io/source.h"
#include "report/audit.h"
#include "report/report.h"
#include "run/audit.h"
#include "run/driver.h"

/* "audit [SELECT...]": SOURCE QUANTIZED [SELECT...], no options (audit's own are about its
 * output). */
static fp4_status report_audit(int argc, char **argv, char **json)
{
    int first = 1;
    if (argc > 1 && argv[1][0] == '-' && argv[1][1] != '\0')
        return fp4_error(FP4_ERR_USAGE, "audit: %s does not apply to a report through the "
                                        "library (it takes SOURCE QUANTIZED [SELECT...])",
                         argv[1]);
    if (argc - first < 2)
        return fp4_error(FP4_ERR_USAGE,
                         "missing SOURCE or QUANTIZED; see 'fp4diag audit --help'");
    fp4_audit a;
    fp4_status st = fp4_audit_run(argv[first], argv[first + 1],
                                  (const char *const *)argv + first + 2, argc - first - 2, &a);
    if (st == FP4_OK && !(*json = fp4_report_audit_json(argc, argv, &a)))
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory building JSON");
    fp4_audit_free(&a);
    return st;
}

/* sqnr, bias, buckets, rht: cmd/analysis.c's run without its output, its MPI world and its
 * re-execution for OpenMP's wait policy. */
static fp4_status report_analysis(int argc, char **argv, char **json)
{
    const char *command = argv[0];
    const bool rht = strcmp(command, "rht") == 0;
    fp4_options o;
    fp4_options_default(&o, NULL, rht ? FP4_RHT_BOTH : FP4_RHT_OFF);
    char **args = fp4_argv_dup(argc, argv); /* getopt permutes; the report keeps the order */
    if (!args) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    fp4_status st = fp4_options_parse(&o, argc, args, NULL);
    if (st == FP4_OK && (o.help || fp4_options_given(&o, "output") ||
                         fp4_options_given(&o, "quiet") || fp4_options_given(&o, "verbose") ||
                         fp4_options_given(&o, "json")))
        st = fp4_error(FP4_ERR_USAGE, "%s does not apply to a report through the library",
                       o.help                              ? "--help"
                       : fp4_options_given(&o, "output") ? "-o"
                       : fp4_options_given(&o, "json")   ? "--json"
                       : fp4_options_given(&o, "quiet")  ? "-q"
                                                         : "-v");
    if (st == FP4_OK && o.cfg.emit_exclude)
        st = fp4_error(FP4_ERR_USAGE, "--emit-exclude does not apply to a report through the "
                                      "library (its verdict.keep holds the list)");
    if (st == FP4_OK && rht && o.cfg.rht != FP4_RHT_BOTH)
        st = fp4_error(FP4_ERR_USAGE, "rht compares each format with and without RHT; "
                                      "--rht must be both (use sqnr --rht on for one side)");
    if (st == FP4_OK) st = fp4_options_check_effect(&o);
    if (st == FP4_OK && o.nargs < 1)
        st = fp4_error(FP4_ERR_USAGE, "missing FILE; see 'fp4diag %s --help'", command);
    if (st != FP4_OK) {
        free(args);
        return st;
    }
    const int threads = o.cfg.threads > 0 ? o.cfg.threads : omp_get_max_threads();
    fp4_source_set_allow_external(o.cfg.allow_external);
    fp4_chunked_set_threads(threads);
    fp4_pario_set_threads(threads);
    fp4_chunked_set_memory(o.cfg.mem_limit / 2);
    fp4_run run;
    memset(&run, 0, sizeof run);
    st = fp4_run_analysis(&o.cfg, o.args[0], (const char *const *)(o.args + 1), o.nargs - 1,
                          &run);
    if (st == FP4_OK && !(*json = fp4_report_analysis_json(command, argc, argv, &run)))
        st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
    fp4_run_free(&run);
    free(args);
    return st;
}

fp4d_status fp4d_report(const char *command, int argc, const char *const *argv, char **json)
{
    fp4_error_clear();
    if (!json) return fp4_api_status(fp4_error(FP4_ERR_USAGE, "fp4d_report: json is NULL"));
    *json = NULL;
    if (!command || argc < 0 || (argc > 0 && !argv))
        return fp4_api_status(fp4_error(FP4_ERR_USAGE, "fp4d_report: bad command/argc/argv"));
    static const char *const commands[] = {"sqnr", "bias", "buckets", "rht", "audit"};
    bool known = false;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        known = known || strcmp(command, commands[i]) == 0;
    if (!known)
        return fp4_api_status(fp4_error(
            FP4_ERR_USAGE, "fp4d_report: '%s' is not sqnr, bias, buckets, rht or audit",
            command));
    /* our own argv: argv[0] the command, as the program's commands take it */
    char **av = calloc((size_t)argc + 2, sizeof *av);
    if (!av) return fp4_api_status(fp4_error(FP4_ERR_INTERNAL, "out of memory"));
    av[0] = (char *)command;
    for (int i = 0; i < argc; i++) {
        if (!argv[i]) {
            free(av);
            return fp4_api_status(
                fp4_error(FP4_ERR_USAGE, "fp4d_report: argv[%d] is NULL", i));
        }
        av[i + 1] = (char *)argv[i];
    }
    char *text = NULL;
    fp4_status st = strcmp(command, "audit") == 0 ? report_audit(argc + 1, av, &text)
                                                  : report_analysis(argc + 1, av, &text);
    free(av);
    if (st != FP4_OK) {
        free(text);
        return fp4_api_status(st);
    }
    *json = text;
    return FP4D_OK;
}
