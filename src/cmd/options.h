/* options.h — the one set of command-line options shared by the analysis commands (sqnr, bias,
 * buckets, rht, grid), gemm, merge and compare: parsed with getopt_long, named as SPEC names
 * them, meaning the same in every subcommand, into the run configuration (run/config.h). */
#ifndef FP4_OPTIONS_H
#define FP4_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "run/config.h"

/* The parsed command line: the run configuration it asks for, and what only argv has. */
typedef struct fp4_options {
    fp4_run_config cfg;    /* every option's value (output and exclude point into argv) */
    uint64_t given;        /* bit i: the i-th shared option was on the command line; ask with
                            * fp4_options_given */
    bool help;             /* --help / -h seen: the command prints its usage and returns OK */
    char **args;           /* positional arguments (into argv), nargs of them */
    int nargs;
} fp4_options;

/* The rules of the analysis commands (sqnr, bias, buckets, rht) for options that would change
 * nothing under the others given: FP4_ERR_USAGE "--sr-bits needs --rounding sr", "--rht-size
 * needs --rht on or both" (and --rht-signs), "--mx-rule needs mxfp4 scales (--scale mxfp4 or
 * --format mxfp4)". One message per rule. */
fp4_status fp4_options_check_effect(const fp4_options *o);

/* An extension for commands with options of their own (gemm, compare): extra long options (terminated
 * by a zero entry; their `val` must be >= 1000 to stay clear of the shared ones) and a handler
 * called with that `val` and optarg. The handler returns FP4_ERR_USAGE with a detail on a bad
 * value. */
typedef struct fp4_options_ext {
    const struct option *longopts;
    fp4_status (*handle)(void *ctx, int val, const char *arg);
    void *ctx;
} fp4_options_ext;

/* Defaults: o->cfg from fp4_run_config_default(formats, rht), nothing given, no arguments. */
void fp4_options_default(fp4_options *o, const char *formats, fp4_rht_mode rht);

/* Parse argv[1..argc) (argv[0] is the command name) over the defaults in *o; options and
 * positional arguments may mix. ext may be NULL. On success o->cfg is resolved
 * (fp4_run_config_finish: signs made, every config checked). FP4_ERR_USAGE with a one-line
 * detail on an unknown option, a missing or bad value, a conflict. Not reentrant (getopt
 * state). getopt_long permutes argv (operands end up after the options): pass a copy
 * (fp4_argv_dup) when the original order matters, as it does for a report's "argv". */
fp4_status fp4_options_parse(fp4_options *o, int argc, char **argv, const fp4_options_ext *ext);

/* Whether the shared option `name` (its long name without "--": "rht", "block", "output",
 * "verbose", ...) was given on the command line of the last fp4_options_parse of *o. */
bool fp4_options_given(const fp4_options *o, const char *name);

/* FP4_ERR_USAGE "CMD: --X does not apply ..." naming the first shared option given that is
 * not in `allowed` (a NULL-terminated list of long names; "output", "quiet", "verbose",
 * "help" and "json" are always allowed). `why` ends the message ("grid takes --format, -o, -q, -v"). */
fp4_status fp4_options_only(const fp4_options *o, const char *command,
                            const char *const *allowed, const char *why);

/* The run configuration an analysis command line parses to: argv[0..argc) with argv[0] the
 * command name ("sqnr", "bias", "buckets", "rht"), over that command's defaults (rht: --rht
 * both). String fields of *out point into argv's strings; argv itself is not permuted.
 * FP4_ERR_USAGE as fp4_options_parse; FP4_ERR_INTERNAL when out of memory. merge's
 * fp4_merge_config_fn. */
fp4_status fp4_options_config_of_argv(int argc, char **argv, fp4_run_config *out);

/* A malloc'd copy of the pointer array argv[0..argc) (NULL-terminated; the strings are shared);
 * NULL when out of memory. Free with free(). */
char **fp4_argv_dup(int argc, char **argv);

/* Parse a byte size: "1073741824", "512K", "512M", "1G", "2GiB", "1.5G" (binary units,
 * case-insensitive, optional "B"/"iB"). FP4_ERR_USAGE on garbage, zero or overflow. */
fp4_status fp4_parse_size(const char *s, int64_t *out);

/* The help text of the shared options (for the commands' usage strings), in pieces so a
 * command lists only the options that change something for it. */
#define FP4_OPTHELP_FORMAT                                                                     \
    "  --format LIST|all   4-bit grids: e2m1, e1m2, int4, e3m0, e2m1:max=M (any\n"             \
    "                      case); nvfp4 = e2m1 with nvfp4 scales, mxfp4 = e2m1 with\n"         \
    "                      mxfp4 scales (default e2m1,e1m2,int4;\n"                            \
    "                      all = e2m1,e1m2,int4,e3m0; repeats merged)\n"
#define FP4_OPTHELP_SCALE                                                                      \
    "  --scale MODE        fp32 (default), nvfp4, mxfp4, tensor\n"                             \
    "  --block N           elements per block for fp32 (default 16); nvfp4 is fixed\n"         \
    "                      at 16, mxfp4 at 32 (another N is a usage error); with\n"            \
    "                      --scale tensor it is only the RHT/padding granule (one\n"           \
    "                      scale for the tensor)\n"
#define FP4_OPTHELP_AXIS                                                                       \
    "  --axis A            block axis, negative from the end (default -1, the last)\n"         \
    "  --rounding R        rtne (default) or sr\n"
#define FP4_OPTHELP_SR                                                                         \
    "  --sr-bits N         random bits per element for sr: 24 (default) or 8\n"                \
    "  --seed N            Philox seed for sr and seeded RHT signs (default 0)\n"
#define FP4_OPTHELP_RHT                                                                        \
    "  --rht off|on|both   Random Hadamard Transform before quantizing\n"
#define FP4_OPTHELP_RHT_SHAPE                                                                  \
    "  --rht-size N        RHT group size, power of two 16..256 (default 16)\n"                \
    "  --rht-signs S       te (default), seed:N, none\n"                                       \
    "  --mx-rule R         mxfp4 scale rule: floor (default) or rceil\n"                       \
    "  --weight-2d         nvfp4 only: one block scale per 16x16 tile\n"
#define FP4_OPTHELP_LAYERS                                                                     \
    "  --layers K          also report compound shrinkage over K layers\n"                     \
    "  --error-split       also the error split (rtne): flushed, scale\n"                      \
    "                      and grid rounding\n"
#define FP4_OPTHELP_RUN                                                                        \
    "  --threads N         CPU threads (default 0 = all cores)\n"                              \
    "  --device D          cpu, cuda or auto (default auto)\n"                                 \
    "  --mem-limit SIZE    bound on tensor memory: bytes, 512M, 1G (default 1G)\n"
#define FP4_OPTHELP_SELECT                                                                     \
    "  --all-tensors       every numeric tensor, whatever its rank or type (default:\n"        \
    "                      the floating-point tensors of rank >= 2 that 4-bit recipes\n"       \
    "                      quantize; the rest is listed as skipped; a tensor named\n"          \
    "                      exactly always runs)\n"                                             \
    "  --all-weights       also the weights recipes keep in high precision:\n"                 \
    "                      embeddings, lm_head, norms, MoE routers, biases,\n"                 \
    "                      the checkpoint's own exclude list (default: listed as\n"            \
    "                      kept, not analysed)\n"                                              \
    "  --exclude GLOB      leave out tensors matching GLOB (name, group or\n"                  \
    "                      glob; repeatable)\n"
#define FP4_OPTHELP_SHARD                                                                      \
    "  --shard I/N         share I of N (0 <= I < N) of the selected tensors,\n"               \
    "                      balanced by element count; 'fp4diag merge' joins\n"                 \
    "                      the N partial reports\n"
#define FP4_OPTHELP_IO                                                                         \
    "  --allow-external    read files the input names outside its directory tree:\n"           \
    "                      HDF5 external links/storage/virtual-dataset sources,\n"             \
    "                      safetensors and PyTorch shards, directory entries\n"                \
    "                      symlinked out (regular only)\n"                                     \
    "  -o FILE             write the JSON report to FILE (never over an input);\n"             \
    "                      without -o the JSON goes to stdout, or, when stdout is\n"           \
    "                      a terminal, the table\n"                                            \
    "  --json              the JSON report on stdout even when it is a terminal\n"             \
    "  -q                  quiet: no progress, no table\n"                                     \
    "  -v, -vv             every row of the table (over 24 tensors: the verdict and\n"         \
    "                      the top 24 by default), the table on stderr beside\n"               \
    "                      the JSON report, and progress lines when stderr is not\n"           \
    "                      a terminal; -vv adds HDF5's own error stack\n"                      \
    "  -h, --help          this help\n"
#define FP4_OPTHELP_RANK                                                                       \
    "  --rank-by R         the verdict's ranking, worst first (SPEC 5.1): gap\n"               \
    "                      (default; best-worst SQNR), sqnr (lowest), delta (largest\n"        \
    "                      |delta|), underflow (largest underflow %), sqnr-nonamax\n"          \
    "                      (lowest SQNR of the values not their block's amax), maxerr\n"       \
    "                      (largest max abs error / amax), relerr (largest\n"                  \
    "                      p99 relative error)\n"
#define FP4_OPTHELP_EMIT                                                                       \
    "  --emit-exclude FORMAT:FILE  write the verdict's tensors to keep in high\n"              \
    "                      precision (SPEC 9) to FILE as FORMAT: modelopt\n"                   \
    "                      (exclude_modules JSON) or llm-compressor (ignore:\n"                \
    "                      YAML), ready to paste\n"
#define FP4_OPTIONS_HELP                                                                       \
    FP4_OPTHELP_FORMAT FP4_OPTHELP_SCALE FP4_OPTHELP_AXIS FP4_OPTHELP_SR FP4_OPTHELP_RHT       \
        FP4_OPTHELP_RHT_SHAPE FP4_OPTHELP_LAYERS FP4_OPTHELP_SELECT FP4_OPTHELP_RUN            \
            FP4_OPTHELP_SHARD FP4_OPTHELP_RANK FP4_OPTHELP_IO FP4_OPTHELP_EMIT

#endif
