/* cmd_analysis.c — the shared body of sqnr, bias, buckets and rht: options, the streaming run
 * (driver.c) and the report (report.c). */
#include "cmd/analysis.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "cmd/commands.h"
#include "cmd/reexec.h"
#include "run/driver.h"
#include "io/chunked.h"
#include "io/pario.h"
#include "io/source.h"
#include "report/output.h"
#include "report/report.h"
#include "report/verdict.h"
#include "cmd/world.h"

/* --emit-exclude FORMAT:FILE checked before anything is read: a whole run (not --shard, not
 * under mpirun: a part has no verdict of its own), FILE neither -o nor stdout nor a file the
 * input reads, and writable as -o is (SPEC §9). */
static fp4_status emit_check(const fp4_options *o, bool mpi)
{
    const char *p = o->cfg.emit_exclude_path;
    if (o->cfg.shard.count > 0 || mpi)
        return fp4_error(FP4_ERR_USAGE, "--emit-exclude needs the whole run's verdict (not "
                                        "--shard or mpirun: merge the parts, then rerun)");
    if (!strcmp(p, "-"))
        return fp4_error(FP4_ERR_USAGE, "--emit-exclude: FILE '-' (stdout holds the report)");
    struct stat se, sx;
    bool exists = stat(p, &se) == 0;
    if ((o->cfg.output && !strcmp(o->cfg.output, p)) ||
        (exists && o->cfg.output && stat(o->cfg.output, &sx) == 0 && se.st_dev == sx.st_dev &&
         se.st_ino == sx.st_ino))
        return fp4_error(FP4_ERR_USAGE, "--emit-exclude %s is the report's -o", p);
    /* where it cannot be written (a directory, a missing or read-only directory), as -o */
    if (!exists) return fp4_output_check("--emit-exclude", p, NULL, 0);
    char **files = NULL;
    int n = 0;
    fp4_status st = fp4_source_input_files(o->args[0], &files, &n);
    for (int i = 0; st == FP4_OK && i < n; i++)
        if (stat(files[i], &sx) == 0 && se.st_dev == sx.st_dev && se.st_ino == sx.st_ino)
            st = fp4_error(FP4_ERR_USAGE, "--emit-exclude %s is %s, read as part of the input",
                           p, files[i]);
    fp4_source_files_free(files, n);
    return st == FP4_OK ? fp4_output_check("--emit-exclude", p, NULL, 0) : st;
}

fp4_status fp4_cmd_analysis(const char *command, int argc, char **argv, fp4_rht_mode default_rht,
                            bool force_both, const char *usage)
{
    fp4_options o;
    fp4_options_default(&o, NULL, default_rht);
    /* getopt permutes its argv; the report records the command line as typed */
    char **args = fp4_argv_dup(argc, argv);
    if (!args) return fp4_error(FP4_ERR_INTERNAL, "out of memory");
    fp4_status st = fp4_options_parse(&o, argc, args, NULL);
    if (st != FP4_OK) goto out;
    if (o.help) {
        fputs(usage, stdout);
        goto out;
    }
    if (force_both && o.cfg.rht != FP4_RHT_BOTH) {
        st = fp4_error(FP4_ERR_USAGE, "rht compares each format with and without RHT; "
                                      "--rht must be both (use sqnr --rht on for one side)");
        goto out;
    }
    st = fp4_options_check_effect(&o);
    if (st != FP4_OK) goto out;
    if (o.nargs < 1) {
        st = fp4_error(FP4_ERR_USAGE, "missing FILE; see 'fp4diag %s --help'", command);
        goto out;
    }
    /* an empty SELECT is a usage error before anything is read */
    if ((st = fp4_select_check((const char *const *)(o.args + 1), o.nargs - 1)) != FP4_OK)
        goto out;
    fp4_source_set_verbose(o.cfg.verbosity > 1);
    fp4_source_set_notes(o.cfg.verbosity > 0);
    /* OpenMP's wait default, before any thread starts (may run the program again) */
    if (o.cfg.device != FP4_DEVICE_CUDA)
        fp4_omp_wait_default(o.args[0],
                             o.cfg.threads > 0 ? o.cfg.threads : omp_get_max_threads());
    fp4_world w; /* under mpirun: this rank's share, one report from rank 0 */
    int threads;
    if ((st = fp4_world_init(&w)) != FP4_OK ||
        (st = fp4_world_prepare(&w, &o.cfg, &threads)) != FP4_OK)
        goto out;
    fp4_source_set_allow_external(o.cfg.allow_external);
    /* chunk decoding: the analysis' threads, and half of --mem-limit beside the slabs */
    fp4_chunked_set_threads(o.cfg.threads > 0 ? o.cfg.threads : omp_get_max_threads());
    fp4_pario_set_threads(o.cfg.threads > 0 ? o.cfg.threads : omp_get_max_threads());
    fp4_chunked_set_memory(o.cfg.mem_limit / 2);
    /* -o checked before anything is read: never the input, its directory writable (rank 0
     * writes it; under mpirun its refusal still goes through the gather: no rank waits) */
    if (!fp4_world_quiet()) st = fp4_output_prepare(o.cfg.output, (const char *const *)o.args, 1);

    if (st == FP4_OK && o.cfg.emit_exclude) st = emit_check(&o, w.active);

    fp4_run run;
    memset(&run, 0, sizeof run);
    /* the run is the program's last CUDA work (not under mpirun: MPI may use CUDA after it):
     * the GPU's release overlaps the report's writing */
    fp4_cuda_backend_release_at_close(!w.active);
    if (st == FP4_OK)
        st = fp4_run_analysis(&o.cfg, o.args[0], (const char *const *)(o.args + 1), o.nargs - 1,
                              &run);
    for (int i = 0; i < run.nwarnings && (!w.active || w.rank == 0); i++)
        fprintf(stderr, "fp4diag %s: warning: %s\n", command, run.warnings[i]);
    if (w.active) {
        char *part = st == FP4_OK ? fp4_report_analysis_json(command, argc, argv, &run) : NULL;
        if (st == FP4_OK && !part) st = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        FILE *table = w.rank == 0 ? fp4_report_table_stream(o.cfg.output, o.cfg.verbosity)
                                  : NULL;
        st = fp4_world_report(&w, part, st, o.cfg.output, table);
        free(part);
        fp4_run_free(&run);
        goto out;
    }
    if (st == FP4_OK) st = fp4_report_analysis(command, argc, argv, &run);
    if (st == FP4_OK && o.cfg.emit_exclude) {
        char *text = fp4_verdict_exclude_text(&run, o.cfg.emit_exclude);
        st = text ? fp4_output_write_as("--emit-exclude", o.cfg.emit_exclude_path, text,
                                                strlen(text))
                  : FP4_ERR_INTERNAL;
        free(text);
    }
    if (st == FP4_OK && run.nerrors > 0)
        st = fp4_error(FP4_ERR_INPUT, "%d of %d tensors failed (see \"errors\" in the report); "
                                      "first: %s",
                       run.nerrors, run.ndatasets, run.errors[0].message);
    fp4_run_free(&run);
out:
    fp4_cuda_backend_release_join();
    fp4_output_forget();
    free(args);
    return st;
}
