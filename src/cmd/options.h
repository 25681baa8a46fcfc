/* options.h — the one set of command-line options shared by the analysis commands (sqnr, bias,
 * buckets, rht, grid) and gemm: parsed with getopt_long, named as SPEC names them, meaning the
 * same in every subcommand; and the qconfig list (formats x RHT modes) they select. */
#ifndef FP4_OPTIONS_H
#define FP4_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "num/format.h"
#include "num/quant.h"
#include "num/rht.h"
#include "run/shard.h"
#include "base/status.h"

#define FP4_MAX_FORMATS 16
#define FP4_DEFAULT_FORMATS "e2m1,e1m2,int4"
#define FP4_DEFAULT_MEM_LIMIT ((int64_t)1 << 30)

#define FP4_MAX_EXCLUDE 32

/* --rank-by: how the verdict ranks tensors (gemm: layers). gap: largest best-minus-worst SQNR
 * gap first; sqnr: lowest best SQNR first; delta: largest |delta| of the best config first. */
typedef enum fp4_rank_by { FP4_RANK_GAP = 0, FP4_RANK_SQNR, FP4_RANK_DELTA } fp4_rank_by;
const char *fp4_rank_by_name(fp4_rank_by r);

/* --rht: off (default for sqnr/bias/buckets), on, or both (each format with and without). */
typedef enum fp4_rht_mode { FP4_RHT_OFF = 0, FP4_RHT_ON, FP4_RHT_BOTH } fp4_rht_mode;

typedef struct fp4_options {
    fp4_format formats[FP4_MAX_FORMATS]; /* --format LIST|all (nvfp4/mxfp4: e2m1 here) */
    int nformats;
    int fmt_scale[FP4_MAX_FORMATS]; /* each format's scale mode (fp4_scale_mode): nvfp4 and
                                     * mxfp4 name theirs, the others take --scale; resolved by
                                     * parse (repeated format+scale pairs merged) */
    fp4_scale_mode scale;  /* --scale fp32|nvfp4|mxfp4|tensor (default fp32) */
    int block;             /* --block N (default 16; nvfp4 16, mxfp4 32 when not given) */
    bool block_given;
    int axis;              /* --axis A: block axis, negative counts from the end (default -1) */
    fp4_rounding rounding; /* --rounding rtne|sr */
    int sr_bits;           /* --sr-bits 24|8 */
    uint64_t seed;         /* --seed N */
    fp4_rht_mode rht;      /* --rht off|on|both */
    int rht_size;          /* --rht-size N, power of two 16..256 (default 16) */
    char rht_signs_spec[48]; /* --rht-signs te|seed:N|none (default te) */
    fp4_rht_signs signs;   /* the run's sign vector, made from the two above by parse */
    fp4_mx_rule mx_rule;   /* --mx-rule floor|rceil */
    bool weight_2d;        /* --weight-2d (nvfp4 only) */
    int threads;           /* --threads N (0 = all cores) */
    fp4_device device;     /* --device cpu|cuda|auto (default auto) */
    const char *output;    /* -o FILE; NULL = stdout */
    int64_t mem_limit;     /* --mem-limit SIZE in bytes (default 1 GiB) */
    int layers;            /* --layers K; 0 = not given */
    fp4_shard shard;       /* --shard I/N: share I of N of the selection (count 0: all) */
    bool allow_external;   /* --allow-external: follow external links, external raw storage
                              and virtual-dataset sources outside the input file's directory
                              tree (still only to regular files) */
    int verbosity;         /* -q: -1, default 0, -v: +1 per -v (-vv: HDF5 error stack too) */
    bool all_tensors;      /* --all-tensors: every numeric tensor, whatever its rank or type */
    const char *exclude[FP4_MAX_EXCLUDE]; /* --exclude GLOB (repeatable; into argv) */
    int nexclude;
    bool json;             /* --json: the JSON report on stdout even when it is a terminal */
    fp4_rank_by rank_by;   /* --rank-by gap|sqnr|delta: order of the verdict's ranking */
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

/* An extension for commands with options of their own (gemm): extra long options (terminated
 * by a zero entry; their `val` must be >= 1000 to stay clear of the shared ones) and a handler
 * called with that `val` and optarg. The handler returns FP4_ERR_USAGE with a detail on a bad
 * value. */
typedef struct fp4_options_ext {
    const struct option *longopts;
    fp4_status (*handle)(void *ctx, int val, const char *arg);
    void *ctx;
} fp4_options_ext;

/* Defaults: formats from `formats` (a --format list; NULL = FP4_DEFAULT_FORMATS), scale fp32,
 * block 16, axis -1, rtne, sr_bits 24, seed 0, rht `rht`, rht_size 16, signs te, floor,
 * threads 0, device auto, stdout, mem_limit 1 GiB, no layers. */
void fp4_options_default(fp4_options *o, const char *formats, fp4_rht_mode rht);

/* Parse argv[1..argc) (argv[0] is the command name) over the defaults in *o; options and
 * positional arguments may mix. ext may be NULL. On success the RHT sign vector is made and
 * every config of fp4_options_configs is checked. FP4_ERR_USAGE with a one-line detail on an
 * unknown option, a missing or bad value. Not reentrant (getopt state). getopt_long permutes
 * argv (operands end up after the options): pass a copy (fp4_argv_dup) when the original order
 * matters, as it does for a report's "argv". */
fp4_status fp4_options_parse(fp4_options *o, int argc, char **argv, const fp4_options_ext *ext);

/* Whether the shared option `name` (its long name without "--": "rht", "block", "output",
 * "verbose", ...) was given on the command line of the last fp4_options_parse of *o. */
bool fp4_options_given(const fp4_options *o, const char *name);

/* FP4_ERR_USAGE "CMD: --X does not apply ..." naming the first shared option given that is
 * not in `allowed` (a NULL-terminated list of long names; "output", "quiet", "verbose" and
 * "help" are always allowed). `why` ends the message ("grid takes --format, -o, -q, -v"). */
fp4_status fp4_options_only(const fp4_options *o, const char *command,
                            const char *const *allowed, const char *why);

/* The configs the options select: for each format in order, the plain config (rht off|both)
 * then the rotated one (rht on|both). Returns the count (<= cap), writing out[0..count);
 * each config is passed through fp4_qconfig_check. cfg.rht points into o->signs, so *o must
 * outlive the configs. FP4_ERR_USAGE with a detail for an inconsistent combination, or when
 * more than cap configs would be made. */
fp4_status fp4_options_configs(const fp4_options *o, fp4_qconfig *out, int cap, int *count);

/* A malloc'd copy of the pointer array argv[0..argc) (NULL-terminated; the strings are shared);
 * NULL when out of memory. Free with free(). */
char **fp4_argv_dup(int argc, char **argv);

/* Parse a byte size: "1073741824", "512K", "512M", "1G", "2GiB", "1.5G" (binary units,
 * case-insensitive, optional "B"/"iB"). FP4_ERR_USAGE on garbage, zero or overflow. */
fp4_status fp4_parse_size(const char *s, int64_t *out);

/* Names as reports spell them: "off", "on", "both"; "cpu", "cuda", "auto". */
const char *fp4_rht_mode_name(fp4_rht_mode m);
const char *fp4_device_name(fp4_device d);

/* The help text of the shared options (for the commands' usage strings), in pieces so a
 * command lists only the options that change something for it. */
#define FP4_OPTHELP_FORMAT                                                                     \
    "  --format LIST|all   4-bit grids: e2m1, e1m2, int4, e3m0, e2m1:max=M (any case);\n"     \
    "                      nvfp4 = e2m1 with nvfp4 scales, mxfp4 = e2m1 with mxfp4 scales\n"  \
    "                      (default e2m1,e1m2,int4; all = e2m1,e1m2,int4,e3m0; repeats merged)\n"
#define FP4_OPTHELP_SCALE                                                                      \
    "  --scale MODE        fp32 (default), nvfp4, mxfp4, tensor\n"                             \
    "  --block N           elements per block for fp32 (default 16); nvfp4 is fixed at 16,\n"  \
    "                      mxfp4 at 32 (another N is a usage error); with --scale tensor it\n"  \
    "                      is only the RHT/padding granule (one scale for the tensor)\n"
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
    "  --layers K          also report compound shrinkage over K layers\n"
#define FP4_OPTHELP_RUN                                                                        \
    "  --threads N         CPU threads (default 0 = all cores)\n"                              \
    "  --device D          cpu, cuda or auto (default auto)\n"                                 \
    "  --mem-limit SIZE    bound on tensor memory: bytes, 512M, 1G (default 1G)\n"
#define FP4_OPTHELP_SELECT                                                                     \
    "  --all-tensors       every numeric tensor, whatever its rank or type (default: the\n"    \
    "                      floating-point tensors of rank >= 2, what 4-bit recipes quantize;\n" \
    "                      the rest is listed as skipped; a tensor named exactly always runs)\n" \
    "  --exclude GLOB      leave out tensors matching GLOB (name, group or glob; repeatable)\n"
#define FP4_OPTHELP_SHARD                                                                      \
    "  --shard I/N         share I of N (0 <= I < N) of the selected tensors, balanced by\n"   \
    "                      element count; 'fp4diag merge' joins the N partial reports\n"
#define FP4_OPTHELP_IO                                                                         \
    "  --allow-external    follow external links, external storage and virtual-dataset\n"     \
    "                      sources outside the file's directory (regular files only)\n"       \
    "  -o FILE             write the JSON report to FILE (never over an input); without -o\n"  \
    "                      the JSON goes to stdout, or, when stdout is a terminal, the table\n" \
    "  --json              the JSON report on stdout even when it is a terminal\n"            \
    "  --rank-by R         the verdict's ranking: gap (default; best-worst SQNR), sqnr\n"     \
    "                      (lowest first) or delta (largest |delta| first)\n"                  \
    "  -q                  quiet: no progress, no table\n"                                     \
    "  -v, -vv             table on stderr even when it is not a terminal; -vv adds the\n"     \
    "                      HDF5 library's own error stack\n"                                   \
    "  -h, --help          this help\n"
#define FP4_OPTIONS_HELP                                                                       \
    FP4_OPTHELP_FORMAT FP4_OPTHELP_SCALE FP4_OPTHELP_AXIS FP4_OPTHELP_SR FP4_OPTHELP_RHT       \
        FP4_OPTHELP_RHT_SHAPE FP4_OPTHELP_LAYERS FP4_OPTHELP_SELECT FP4_OPTHELP_RUN            \
            FP4_OPTHELP_SHARD FP4_OPTHELP_IO

#endif
