/* cmd_merge.c — `fp4diag merge`: join the partial reports of one run's shares (--shard I/N)
 * into the report one process would have written (merge.c does the work). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/commands.h"
#include "report/compare.h"
#include "report/merge.h"
#include "cmd/options.h"
#include "report/output.h"
#include "report/report.h"

const char fp4_usage_merge[] =
    "usage: fp4diag merge [OPTIONS] PART.json...\n"
    "\n"
    "Join the partial reports of one run's shares (each made with --shard I/N by\n"
    "sqnr, bias, buckets, rht, gemm or audit) into the report one process would have\n"
    "written: tensors (layers) in the same order, the pooled summary bit for bit,\n"
    "errors kept; only \"timing\" differs (the slowest part's seconds, the parts' bytes\n"
    "summed). The parts must come from the same command line apart from --shard and\n"
    "-o, the same options, input and fp4diag version, with every share 0..N-1 given\n"
    "once; its \"argv\" is theirs without --shard, with this -o.\n"
    "\n"
    "options:\n"
    "  -o FILE             write the merged report to FILE (default stdout; on\n"
    "                      a terminal the merged run's table there instead: an\n"
    "                      audit's pooled line)\n"
    "  --json              the merged report on stdout even when it is a terminal\n"
    "  -q                  quiet: no table\n"
    "  -v                  the table on stderr beside the JSON report\n"
    "  -h, --help          this help\n"
    "\n"
    "Exit status: 0 ok, 2 usage, 3 a part unreadable, foreign (another run), given\n"
    "twice or missing (all named), or the merged report holds errors entries (as\n"
    "the run would exit).\n";

fp4_status cmd_merge(int argc, char **argv)
{
    fp4_options o;
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    char **args = fp4_argv_dup(argc, argv);
    if (!args) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    fp4_status st = fp4_options_parse(&o, argc, args, NULL);
    if (st == FP4_OK && !o.help)
        st = fp4_options_only(&o, "merge", NULL, "merge takes -o, --json, -q, -v; see 'fp4diag merge --help'");
    if (st != FP4_OK || o.help) {
        if (st == FP4_OK) fputs(fp4_usage_merge, stdout);
        free(args);
        return st;
    }
    if (o.nargs < 1) {
        free(args);
        return fp4_error(FP4_ERR_USAGE, "missing PART.json; see 'fp4diag merge --help'");
    }
    /* -o checked before anything is read: never one of the parts */
    st = fp4_output_prepare(o.cfg.output, (const char *const *)o.args, o.nargs);
    char **texts = st == FP4_OK ? calloc((size_t)o.nargs, sizeof *texts) : NULL;
    if (st == FP4_OK && !texts) st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
    /* never /dev/zero; each part at most 256 MiB, all of them parsed within 1 GiB */
    int64_t budget = FP4_REPORT_PARSE_MAX;
    for (int i = 0; st == FP4_OK && i < o.nargs; i++)
        st = fp4_report_file_read_budget(o.args[i], &budget, &texts[i]);
    /* nor one of the files the parts' run read (their provenance), as audit -o refuses them */
    if (st == FP4_OK && o.cfg.output && strcmp(o.cfg.output, "-")) {
        char **files = NULL;
        int nfiles = 0;
        st = fp4_merge_input_files((const char *const *)texts, o.nargs, &files, &nfiles);
        if (st == FP4_OK)
            st = fp4_output_check("-o", o.cfg.output, (const char *const *)files, nfiles);
        for (int i = 0; i < nfiles; i++) free(files[i]);
        free(files);
    }
    fp4_merge_result res;
    memset(&res, 0, sizeof res);
    /* terminal first, as every command: on a terminal the merged run's table in place of the
     * JSON (an audit merge: its pooled line; the per-tensor table is the run's own) */
    const bool tfirst = fp4_report_terminal_first(&o.cfg);
    if (st == FP4_OK)
        st = fp4_merge_reports((const char *const *)texts, (const char *const *)o.args, o.nargs,
                               o.cfg.output,
                               tfirst ? stdout
                                      : fp4_report_table_stream(o.cfg.output, o.cfg.verbosity),
                               fp4_options_config_of_argv, &res);
    if (st == FP4_OK && fp4_report_quiet_terminal(o.cfg.output, o.cfg.json, o.cfg.verbosity))
        fp4_report_quiet_note(); /* -q on a terminal: no JSON flood */
    else if (st == FP4_OK && tfirst)
        st = fp4_report_terminal_note();
    else if (st == FP4_OK)
        st = fp4_output_write(o.cfg.output, res.text, strlen(res.text));
    if (st == FP4_OK && res.nerrors > 0)
        st = fp4_error(FP4_ERR_INPUT, "%d of %d tensors failed (see \"errors\" in the report); "
                                      "first: %s",
                       res.nerrors, res.nunits, res.first_error);
    free(res.text);
    for (int i = 0; texts && i < o.nargs; i++) free(texts[i]);
    free(texts);
    fp4_output_forget();
    free(args);
    return st;
}
