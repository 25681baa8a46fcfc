/* commands.h — the command table: one entry per subcommand, each implemented in src/cmd_<name>.c.
 * `fp4diag --help` is generated from this table, so help cannot drift from what exists. */
#ifndef FP4_COMMANDS_H
#define FP4_COMMANDS_H

#include "base/status.h"

/* A subcommand: argv[0] is the command name; returns a status that main.c maps to the exit
 * code (SPEC §9). Commands print results to stdout or -o, diagnostics to stderr. */
typedef fp4_status (*fp4_cmd_fn)(int argc, char **argv);

typedef struct fp4_command {
    const char *name;
    fp4_cmd_fn fn;
    const char *summary; /* one line for `fp4diag --help` */
    const char *usage;   /* full text for `fp4diag help CMD` and `CMD --help` */
} fp4_command;

extern const fp4_command fp4_commands[];
extern const int fp4_ncommands;

/* Print the usage of `name` to stdout (for --help) */
void fp4_print_usage(const char *name);

fp4_status cmd_ls(int argc, char **argv);
fp4_status cmd_sqnr(int argc, char **argv);
fp4_status cmd_bias(int argc, char **argv);
fp4_status cmd_buckets(int argc, char **argv);
fp4_status cmd_rht(int argc, char **argv);
fp4_status cmd_grid(int argc, char **argv);
fp4_status cmd_gemm(int argc, char **argv);
fp4_status cmd_compare(int argc, char **argv);
fp4_status cmd_merge(int argc, char **argv);
fp4_status cmd_audit(int argc, char **argv);

/* Usage texts, defined beside each command. */
extern const char fp4_usage_ls[], fp4_usage_sqnr[], fp4_usage_bias[], fp4_usage_buckets[],
    fp4_usage_rht[], fp4_usage_grid[], fp4_usage_gemm[], fp4_usage_compare[],
    fp4_usage_merge[], fp4_usage_audit[];

#endif
