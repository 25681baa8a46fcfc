/* main.c — global options, lookup in the command table, status -> exit code (SPEC §9). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp4diag.h"

#include "backend/backend.h"
#include "cmd/commands.h"
#include "cmd/env.h"
#include "engine/engine.h"
#include "run/gemm_blas.h"
#include "cmd/reexec.h"
#include "base/isa.h"
#include "base/status.h"
#include "base/trace.h"
#include "base/version.h"
#include "cmd/world.h"
#include "io/source.h" /* FP4_INPUT_FORMATS */

const fp4_command fp4_commands[] = {
    {"ls", cmd_ls, "list the tensors of a file (shape, dtype, chunks, filters, size)",
     fp4_usage_ls},
    {"sqnr", cmd_sqnr, "SQNR, NMSE and attenuation of each tensor under 4-bit formats",
     fp4_usage_sqnr},
    {"bias", cmd_bias, "shrinkage bias: per-level analytic vs measured bias, alpha, delta",
     fp4_usage_bias},
    {"buckets", cmd_buckets, "code histograms and effective bucket ratios B15, B8",
     fp4_usage_buckets},
    {"rht", cmd_rht, "each format with and without the Random Hadamard Transform", fp4_usage_rht},
    {"grid", cmd_grid, "a format's levels, bin widths and analytic bias (no input file)",
     fp4_usage_grid},
    {"gemm", cmd_gemm, "FPROP/DGRAD/WGRAD output SQNR under the UFP4 and E2M1 recipes",
     fp4_usage_gemm},
    {"compare", cmd_compare, "compare two reports; exit 1 when a threshold is exceeded",
     fp4_usage_compare},
    {"merge", cmd_merge, "join the partial reports of --shard I/N runs into one report",
     fp4_usage_merge},
    {"audit", cmd_audit, "an NVFP4/MXFP4 export against its source: SQNR, RTN, scales, layout",
     fp4_usage_audit},
};
const int fp4_ncommands = (int)(sizeof fp4_commands / sizeof fp4_commands[0]);

static const fp4_command *command_find(const char *name)
{
    for (int i = 0; i < fp4_ncommands; i++)
        if (strcmp(fp4_commands[i].name, name) == 0) return &fp4_commands[i];
    return NULL;
}

void fp4_print_usage(const char *name)
{
    const fp4_command *c = command_find(name);
    if (c) fputs(c->usage, stdout);
}

static void print_help(FILE *out)
{
    fprintf(out, "usage: fp4diag [--version] [--help] COMMAND [OPTIONS] [ARGS]\n\n"
                 "4-bit quantization diagnostics\nfor tensors in " FP4_INPUT_FORMATS " files.\n\n"
                 "commands:\n");
    for (int i = 0; i < fp4_ncommands; i++)
        fprintf(out, "  %-9s %s\n", fp4_commands[i].name, fp4_commands[i].summary);
    fprintf(out, "\n'fp4diag help COMMAND' or 'fp4diag COMMAND --help' for a command's options.\n"
                 "Exit status: 0 ok, 1 compare threshold failed, 2 usage, 3 input or data error,\n"
                 "4 device error, 5 internal error.\n");
}

/* The trace's time 0 (FP4DIAG_TRACE, trace.h): taken from the executable's .preinit_array,
 * which runs before any shared library's constructor, so the trace's first line ("main")
 * shows what loading and the libraries' start-up (OpenBLAS, OpenMP, HDF5, MPI) took. */
static void trace_t0(int argc, char **argv, char **envp)
{
    (void)argc, (void)argv, (void)envp;
    fp4_trace_start();
}
__attribute__((section(".preinit_array"), used)) static void (*const trace_t0_entry)(
    int, char **, char **) = trace_t0;

int main(int argc, char **argv)
{
    /* A report over `ulimit -f` or into a closed pipe is a write error (EFBIG, EPIPE): exit 3
     * with a message and no partial report, instead of death by SIGXFSZ / SIGPIPE. */
    signal(SIGXFSZ, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        print_help(stderr);
        return FP4_ERR_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
        print_help(stdout);
        return FP4_OK;
    }
    /* FP4DIAG_* values the code cannot hold: exit 2 before anything reads them */
    fp4_error_clear();
    if (fp4_env_check() != FP4_OK) {
        fprintf(stderr, "fp4diag: %s\n", fp4_last_error());
        return FP4_ERR_USAGE;
    }
    if (!strcmp(name, "--version") || !strcmp(name, "-V")) {
        /* the CPU engine's variant (FP4DIAG_ISA) and the ones this CPU runs */
        const fp4_isa isa = fp4_engine_isa(fp4_engine_active());
        printf("%s %s\n", FP4DIAG_NAME, fp4d_version()); /* the library's: one version */
        printf("cpu engine: %s (this CPU runs:", fp4_isa_name(isa));
        for (int i = 0; i < FP4_ISA_COUNT; i++)
            if (fp4_engine_get((fp4_isa)i)) printf(" %s", fp4_isa_name((fp4_isa)i));
        printf(")\n");
#ifdef FP4_HAVE_CUDA
        printf("cuda: on (--device cuda)\n");
#else
        printf("cuda: off (built without CUDA)\n");
#endif
        printf("mpi: %s\n", fp4_world_built() ? "on (mpirun mode)" : "off (built without MPI)");
        return FP4_OK;
    }
    if (!strcmp(name, "help")) {
        if (argc < 3 || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")) {
            print_help(stdout);
            return FP4_OK;
        }
        if (!command_find(argv[2])) {
            fprintf(stderr, "fp4diag: '%s' is not a command; see 'fp4diag --help'\n", argv[2]);
            return FP4_ERR_USAGE;
        }
        fp4_print_usage(argv[2]);
        return FP4_OK;
    }
    fp4_threads_cap_default(); /* before any parallel region */
    fp4_reexec_set_argv(argv); /* settings read at load time: the program may run again */
    if (!strcmp(name, "gemm")) fp4_reexec_openblas_core(argv); /* may re-exec */
    else fp4_blas_threads_release(); /* no BLAS: its idle pollers off the analysis' cores */
    fp4_trace("main: %s", name);
    const fp4_command *c = command_find(name);
    if (!c) {
        fprintf(stderr, "fp4diag: '%s' is not a command; see 'fp4diag --help'\n", name);
        return FP4_ERR_USAGE;
    }
    fp4_error_clear();
    fp4_world w; /* under mpirun: MPI starts here, and only rank 0 speaks */
    fp4_status st = fp4_world_init(&w);
    if (st == FP4_OK) st = c->fn(argc - 1, argv + 1);
    if (st != FP4_OK && fp4_last_error()[0] && !fp4_world_quiet()) {
        /* names from a file may hold newlines or terminal escapes: one safe line */
        char *line = fp4_text_escape(fp4_last_error(), FP4_ESC_CONTROL | FP4_ESC_UTF8, NULL);
        fprintf(stderr, "fp4diag %s: %s\n", c->name, line ? line : fp4_last_error());
        free(line);
    }
    fp4_world_finalize();
    if (fp4_trace_on()) { /* which variant each CPU dispatch ran (FP4DIAG_ISA, base/isa.h) */
        char ran[256];
        fp4_isa_ran_describe(ran, sizeof ran);
        fp4_trace("isa ran: %s", ran);
    }
    fp4_trace("main returns %d", (int)st);
    return (int)st;
}
