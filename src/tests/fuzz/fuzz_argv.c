/* fuzz_argv.c — libFuzzer target over the command line: the input is a command (first byte)
 * and its arguments (the rest, split at newlines or NULs), parsed by the shared option parser
 * (options.c) and, when that succeeds, run as the analysis command would run it (driver.c,
 * report.c) on a small fixture written at start-up, or as `grid`. Whatever the arguments, the
 * input file is that fixture and -o a scratch file (the fuzzer never names real paths), threads
 * at most 2, and stdout goes to /dev/null. Must not crash, leak, or hang. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#include "report/cleanup.h"
#include "run/driver.h"
#include "fuzzutil.h"
#include "io/source.h"
#include "cmd/options.h"
#include "report/report.h"

#define FZ_MAX_ARGS 48
#define FZ_MAX_ARG 200

static char fz_fixture[4200], fz_out[4200];

/* The fixture: /w (f32 8x48, a ramp with a NaN and an Inf), /g/b (f64 big-endian 40), /s (scalar). */
static void fz_make_fixture(void)
{
    snprintf(fz_fixture, sizeof fz_fixture, "%s/fixture.h5", fz_scratch());
    snprintf(fz_out, sizeof fz_out, "%s/out.json", fz_scratch());
    hid_t f = H5Fcreate(fz_fixture, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    float w[8 * 48], b[40], s = 2.5f;
    for (int i = 0; i < 8 * 48; i++) w[i] = (float)((i * 37) % 101 - 50) / 7.0f;
    w[5] = 0.0f / 0.0f;
    w[77] = 1.0f / 0.0f;
    for (int i = 0; i < 40; i++) b[i] = (float)i / 8.0f - 2.0f;
    hsize_t dw[2] = {8, 48}, db[1] = {40};
    hid_t sw = H5Screate_simple(2, dw, NULL), sb = H5Screate_simple(1, db, NULL),
          ss = H5Screate(H5S_SCALAR);
    hid_t g = H5Gcreate2(f, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t d1 = H5Dcreate2(f, "w", H5T_IEEE_F32LE, sw, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t d2 = H5Dcreate2(g, "b", H5T_IEEE_F64BE, sb, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t d3 = H5Dcreate2(f, "s", H5T_IEEE_F64LE, ss, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0 || d1 < 0 || d2 < 0 || d3 < 0 ||
        H5Dwrite(d1, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, w) < 0 ||
        H5Dwrite(d2, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, b) < 0 ||
        H5Dwrite(d3, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, &s) < 0) {
        fprintf(stderr, "fuzz_argv: cannot write the fixture\n");
        abort();
    }
    H5Dclose(d1);
    H5Dclose(d2);
    H5Dclose(d3);
    H5Gclose(g);
    H5Sclose(sw);
    H5Sclose(sb);
    H5Sclose(ss);
    H5Fclose(f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_make_fixture();
    if (!freopen("/dev/null", "w", stdout)) abort();
    return 0;
}

static const char *const fz_cmds[] = {"sqnr", "bias", "buckets", "rht", "grid"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const char *cmd = fz_cmds[data[0] % (sizeof fz_cmds / sizeof fz_cmds[0])];
    char *store[FZ_MAX_ARGS + 1];
    char *argv[FZ_MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = (char *)cmd;
    size_t i = 1;
    while (i < size && argc < FZ_MAX_ARGS) {
        size_t j = i;
        while (j < size && data[j] != '\n' && data[j] != '\0' && j - i < FZ_MAX_ARG) j++;
        char *a = malloc(j - i + 1);
        if (!a) break;
        memcpy(a, data + i, j - i);
        a[j - i] = '\0';
        store[argc - 1] = a;
        argv[argc++] = a;
        i = j + 1;
    }
    argv[argc] = NULL;
    int nstore = argc - 1;

    char *parse_argv[FZ_MAX_ARGS + 2];
    memcpy(parse_argv, argv, sizeof(char *) * (size_t)(argc + 1)); /* getopt permutes */
    fp4_options o;
    fp4_options_default(&o, NULL, strcmp(cmd, "rht") ? FP4_RHT_OFF : FP4_RHT_BOTH);
    fp4_status st = fp4_options_parse(&o, argc, parse_argv, NULL);
    int64_t sz;
    for (int k = 1; k < argc; k++) (void)fp4_parse_size(argv[k], &sz);
    if (st == FP4_OK && !o.help) {
        o.cfg.output = fz_out; /* never a path from the input */
        if (o.cfg.threads > 2 || o.cfg.threads <= 0) o.cfg.threads = 2;
        o.cfg.verbosity = -1;
        if (!strcmp(cmd, "grid")) {
            (void)fp4_report_grid(argc, argv, o.cfg.formats, o.cfg.nformats, fz_out, false, -1);
        } else if (o.nargs >= 1 && o.cfg.device != FP4_DEVICE_CUDA) {
            fp4_run run;
            st = fp4_run_analysis(&o.cfg, fz_fixture, (const char *const *)(o.args + 1),
                                  o.nargs - 1, &run);
            if (st == FP4_OK) (void)fp4_report_analysis(cmd, argc, argv, &run);
            fp4_run_free(&run);
        }
    }
    fp4_error_clear();
    fp4_cleanup_unregister();
    for (int k = 0; k < nstore; k++) free(store[k]);
    return 0;
}
