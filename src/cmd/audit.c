/* cmd/audit.c — `fp4diag audit SOURCE QUANTIZED [SELECT...]`: an already-quantized checkpoint
 * against its high-precision source (run/audit.c computes, report/audit.c prints; SPEC §11). */
#include <errno.h>
#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/commands.h"
#include "cmd/options.h"
#include "io/pario.h"
#include "io/source.h"
#include "report/audit.h"
#include "report/output.h"
#include "run/audit.h"

const char fp4_usage_audit[] =
    "usage: fp4diag audit [-o FILE] [--json] [-q] [-v] [--shard I/N] [--device D]\n"
    "                     SOURCE QUANTIZED [SELECT...]\n"
    "\n"
    "Audit an already-quantized checkpoint (NVFP4/MXFP4 exported by ModelOpt,\n"
    "compressed-tensors / llm-compressor, or laid out as gpt-oss) against the\n"
    "high-precision checkpoint it was made from. Each quantized tensor of QUANTIZED\n"
    "(one logical tensor: codes, block scales, per-tensor scale; see 'fp4diag ls') is\n"
    "paired by name with SOURCE's tensor and measured, all sums in fp64:\n"
    "  export     SQNR and alpha of the checkpoint as stored (decoded bit for bit in\n"
    "             the producer's order) against the source;\n"
    "  RTN        SQNR and alpha of fp4diag's own round-to-nearest quantization\n"
    "             of the source with the producer's scale rule (per-tensor scales per\n"
    "             fused group q/k/v, gate/up, w1/w3); gain = export - RTN is what\n"
    "             the exporter's algorithm bought;\n"
    "  nonnearest_frac   codes that are not a nearest grid point of the source under\n"
    "             the stored scale (exact, fp64; ~0 for a round-to-nearest export);\n"
    "  scale_match_frac  stored block-scale bytes equal to the producer's rule from\n"
    "             the source block's amax and the stored per-tensor scale (1 for\n"
    "             a round-to-nearest export of this source; a per-tensor scale other\n"
    "             than the rule's is its own \"global scale:\" line);\n"
    "  layout     the declared nibble order, global-scale direction and scale layout\n"
    "             checked against the source: a layout only another convention makes\n"
    "             sane is named, the tensor measured under it (LAYOUT, left out\n"
    "             of the pool); one no convention makes sane is an errors entry.\n"
    "  flushed%   the source's non-zero values the export stores as +-0 (table only);\n"
    "             with 4 or more tensors the rows are ranked like the verdict's keep\n"
    "             list (the flushed share and the SQNR against the typical tensor's;\n"
    "             KEEP: keep it in high precision), else lowest export SQNR first.\n"
    "SELECT: names, groups or globs of the logical tensors or of their members (a\n"
    "member's name, e.g. q_proj.weight_scale, selects its tensor; default: every\n"
    "quantized tensor).\n"
    "Nothing is left out silently: a tensor of QUANTIZED that cannot be described (an\n"
    "unknown GGUF type) is an errors entry; every other selected one not audited\n"
    "(high precision, FP8, other GGUF block types) and each of SOURCE that QUANTIZED\n"
    "lacks is listed as skipped, with its reason. A SOURCE that is itself a quantized\n"
    "export, or the two operands swapped, is a usage error (exit 2) saying so.\n"
    "\n"
    "options:\n"
    "  -o FILE   write the JSON report (schema fp4diag.audit/1) to FILE; the table\n"
    "            still goes to standard output\n"
    "  --json    the JSON report on standard output instead of the table; with -o\n"
    "            FILE, FILE alone gets it and nothing is printed (as the analyses)\n"
    "  -q        no table\n"
    "  -v, -vv   accepted as by every command (the table always lists every tensor)\n"
    "  --shard I/N  audit share I of N of the selection (whole fused groups, balanced\n"
    "            by elements) and write a partial report (-o or --json);\n"
    "            'fp4diag merge' puts the N parts together into the report of one run\n"
    "  --device D  cpu, cuda or auto (default auto: cuda when a GPU is present): with\n"
    "            cuda the export's stored bytes are decoded on the GPU and their sums\n"
    "            taken there, in the CPU's order; every number of the report is\n"
    "            the same on either\n"
    "  -h, --help  this text\n"
    "\n"
    "Threads: each slab of a tensor is read, decoded and requantized on up to\n"
    "min(CPUs, OMP_NUM_THREADS, 16) threads (FP4DIAG_READ_THREADS sets the number);\n"
    "the fp64 sums are taken per 256 elements of a row and added in row order, so\n"
    "every number is the same for any count, and on either device.\n"
    "\n"
    "Exit status: 0 ok, 2 usage, 3 a file unreadable, no quantized tensor, a pattern\n"
    "that selects none, or any errors entry (the report is written first);\n"
    "4 --device cuda without a usable GPU, or a CUDA failure.\n";

static fp4_status audit_main(int argc, char **argv, char **orig);

fp4_status cmd_audit(int argc, char **argv)
{
    /* getopt_long permutes its argv: parse a copy, the report keeps the order as given */
    char **args = fp4_argv_dup(argc, argv);
    if (!args) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    fp4_status st = audit_main(argc, args, argv);
    free(args);
    return st;
}

static fp4_status audit_main(int argc, char **argv, char **orig)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"output", required_argument, NULL, 'o'},
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},
        {"shard", required_argument, NULL, 's'},
        {"device", required_argument, NULL, 'D'},
        {"help", no_argument, NULL, 'h'},
        {"error-split", no_argument, NULL, 'E'},
        {NULL, 0, NULL, 0},
    };
    bool json = false, quiet = false;
    const char *output = NULL;
    fp4_shard shard = {0, 0};
    fp4_device device = FP4_DEVICE_AUTO;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "o:qvh", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 'o': output = optarg; break;
        case 'q':
            quiet = true;
            fp4_output_set_verbosity(-1); /* no "wrote FILE" line */
            break;
        case 's': FP4_TRY(fp4_shard_parse(optarg, &shard)); break;
        case 'D':
            if (!strcmp(optarg, "cpu")) device = FP4_DEVICE_CPU;
            else if (!strcmp(optarg, "cuda")) device = FP4_DEVICE_CUDA;
            else if (!strcmp(optarg, "auto")) device = FP4_DEVICE_AUTO;
            else
                return fp4_error(FP4_ERR_USAGE, "--device: '%s' is not cpu, cuda or auto; see "
                                                "'fp4diag audit --help'",
                                 optarg);
            break;
        case 'v': break; /* as every command takes it: the table always lists every tensor */
        case 'h': fputs(fp4_usage_audit, stdout); return FP4_OK;
        case 'E': /* the analyses' option: say why it has no meaning here, not "unknown" */
            return fp4_error(FP4_ERR_USAGE,
                             "--error-split does not apply to audit: it splits the error of "
                             "fp4diag's own round-to-nearest quantization (SPEC 5.1), not of "
                             "a producer's codes; 'fp4diag sqnr SOURCE --format nvfp4 "
                             "--error-split' gives it for the source");
        case ':':
            return fp4_error(FP4_ERR_USAGE, "option '%s' needs a value; see 'fp4diag audit --help'",
                             argv[optind - 1]);
        default:
            return fp4_error(FP4_ERR_USAGE, "unknown option '%s'; see 'fp4diag audit --help'",
                             argv[optind - 1]);
        }
    }
    if (argc - optind < 2)
        return fp4_error(FP4_ERR_USAGE,
                         "missing SOURCE or QUANTIZED; see 'fp4diag audit --help'");
    const char *source = argv[optind], *quantized = argv[optind + 1];
    /* an empty SELECT is a usage error before anything is read */
    FP4_TRY(fp4_select_check((const char *const *)argv + optind + 2, argc - optind - 2));
    const char *inputs[2] = {source, quantized};
    if (output) FP4_TRY(fp4_output_prepare(output, inputs, 2));
    fp4_audit a;
    if (shard.count > 0 && !output && !json)
        return fp4_error(FP4_ERR_USAGE, "--shard writes a partial report: give -o FILE (or "
                                        "--json); see 'fp4diag audit --help'");
    /* the slabs' reads and their decodes, counts and requantization on the read pool's
     * threads (OMP_NUM_THREADS, the CPUs, FP4DIAG_READ_THREADS; the numbers are the same) */
    fp4_pario_set_threads(omp_get_max_threads());
    fp4_audit_set_progress(quiet ? -1 : 0);
    fp4_audit_set_device(device);
    fp4_status st = fp4_audit_run_shard(source, quantized,
                                        (const char *const *)argv + optind + 2,
                                        argc - optind - 2, shard, &a);
    if (st != FP4_OK) {
        fp4_audit_free(&a);
        fp4_output_forget();
        return st;
    }
    if (output || json) {
        char *text = fp4_report_audit_json(argc, orig, &a);
        if (!text) {
            st = fp4_error(FP4_ERR_INTERNAL, "out of memory building JSON");
        } else {
            size_t len = strlen(text);
            char *full = malloc(len + 2);
            if (!full) {
                st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            } else {
                memcpy(full, text, len);
                full[len] = '\n';
                full[len + 1] = '\0';
                if (output)
                    st = fp4_output_write(output, full, len + 1);
                else
                    fputs(full, stdout);
                free(full);
            }
            free(text);
        }
    }
    if (st == FP4_OK && !quiet && !json) fp4_report_audit_table(stdout, &a);
    if (st == FP4_OK && (fflush(stdout) != 0 || ferror(stdout)))
        st = fp4_error(FP4_ERR_INPUT, "stdout: write error: %s",
                       errno == EPIPE ? "the reading end of the pipe was closed"
                                      : strerror(errno));
    if (st == FP4_OK && a.nerrors > 0)
        st = fp4_error(FP4_ERR_INPUT, "%d tensor%s failed (see \"errors\"); first: %s",
                       a.nerrors, a.nerrors == 1 ? "" : "s", a.errors[0].message);
    fp4_audit_free(&a);
    fp4_output_forget();
    return st;
}
