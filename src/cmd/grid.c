/* cmd_grid.c — `fp4diag grid`: each format's levels, RTNE bins, half-widths and analytic
 * conditional bias (SPEC §2, §5). No input file. */
#include <stdio.h>
#include <stdlib.h>

#include "cmd/commands.h"
#include "cmd/options.h"
#include "report/report.h"

const char fp4_usage_grid[] =
    "usage: fp4diag grid [--format LIST|all] [-o FILE] [--json] [-q] [-v]\n"
    "\n"
    "The levels q_0..q_7 of each format in normalized units (t = |x|/s), their RTNE\n"
    "bins [q - l, q + r] (closed for even codes: ties go to the even code),\n"
    "half-widths l and r, bin width, and the analytic conditional bias (l - r)/2,\n"
    "absolute and relative to q. uniform_mean_error is E[rho(t) - t] for t uniform on\n"
    "[0, g_max] (exactly 0). On a terminal (no -o, no --json) the table goes to\n"
    "stdout; otherwise the JSON report goes to stdout (or -o FILE), the table to\n"
    "stdout with -o FILE on a terminal (stderr: -v). Default --format e2m1,e1m2,int4;\n"
    "'all' adds e3m0. The grid depends on the format alone: the other analysis\n"
    "options (--scale, --block, --rht, ...) are usage errors here.\n"
    "\n"
    "options:\n" FP4_OPTHELP_FORMAT
    "  -o FILE             write the JSON report to FILE (default stdout)\n"
    "  --json              the JSON report on stdout even when it is a terminal\n"
    "  -q                  quiet: no table (on a terminal without -o or --json: no\n"
    "                      output at all)\n"
    "  -v                  the table on stderr beside the JSON report\n"
    "  -h, --help          this help\n";

fp4_status cmd_grid(int argc, char **argv)
{
    fp4_options o;
    fp4_options_default(&o, NULL, FP4_RHT_OFF);
    char **args = fp4_argv_dup(argc, argv); /* getopt permutes; the report keeps the order */
    if (!args) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    fp4_status st = fp4_options_parse(&o, argc, args, NULL);
    static const char *const allowed[] = {"format", NULL};
    if (st == FP4_OK && !o.help)
        st = fp4_options_only(&o, "grid", allowed,
                              "the grid depends on --format alone; see 'fp4diag grid --help'");
    if (st == FP4_OK && o.help) fputs(fp4_usage_grid, stdout);
    else if (st == FP4_OK && o.nargs > 0)
        st = fp4_error(FP4_ERR_USAGE, "grid takes no file ('%s'); see 'fp4diag grid --help'",
                       o.args[0]);
    else if (st == FP4_OK)
        st = fp4_report_grid(argc, argv, o.cfg.formats, o.cfg.nformats, o.cfg.output, o.cfg.json,
                             o.cfg.verbosity);
    free(args);
    return st;
}
