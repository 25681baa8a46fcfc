/* world.h — runs under `mpirun`: the ranks of MPI_COMM_WORLD take the shares of one run (rank r
 * is --shard r/N), rank 0 gathers their partial reports and merges them (merge.h) into the one
 * report. Every MPI call lives in world.c; a build without MPI (MPI=0) is always one process. */
#ifndef FP4_WORLD_H
#define FP4_WORLD_H

#include <stdbool.h>
#include <stdio.h>

#include "run/config.h"
#include "base/status.h"

typedef struct fp4_world {
    bool active;           /* launched by mpirun with more than one rank, MPI started */
    int rank, size;        /* in MPI_COMM_WORLD (0 and 1 when not active) */
    int local_rank, local_size; /* among the ranks on this node (shared memory) */
} fp4_world;

/* Whether this build has MPI (MPI=1 or auto with Open MPI found). */
bool fp4_world_built(void);

/* Start MPI when the process was launched by an MPI launcher (OMPI_COMM_WORLD_SIZE, PMI_SIZE or
 * PMIX_RANK in the environment) and the build has MPI; otherwise (or with one rank) *w says one
 * process. Idempotent. FP4_ERR_INTERNAL when MPI_Init fails. */
fp4_status fp4_world_init(fp4_world *w);

/* End MPI if it was started (main.c, after the command). */
void fp4_world_finalize(void);

/* Whether this process must stay silent: a rank other than 0 of an active world (it prints
 * neither report, table nor error line; rank 0 speaks for the job). */
bool fp4_world_quiet(void);

/* Prepare an analysis or gemm run on an active world: refuse --shard (FP4_ERR_USAGE: the ranks
 * take the shares), set o->shard to (rank, size), and, when --threads is not given, share the
 * node's cores among its ranks (OpenMP threads = cores / local ranks, at least 1); under a CUDA
 * build and --device cuda|auto, use GPU local_rank mod (GPUs on the node). Returns the thread
 * count it chose (0: left to the default). */
fp4_status fp4_world_prepare(const fp4_world *w, fp4_run_config *o, int *threads);

/* Rank 0 receives every rank's part: its report text (NULL when the rank failed) and, for a
 * failed rank, its status and one-line message. On rank 0, texts/sts/msgs are malloc'd arrays of
 * w->size entries (free with fp4_world_parts_free); other ranks get NULL. Then the outcome is
 * shared: every rank returns the same status (see fp4_world_share_status). FP4_ERR_INTERNAL on an
 * MPI failure or out of memory. */
fp4_status fp4_world_gather(const fp4_world *w, const char *text, fp4_status st, const char *msg,
                            char ***texts, fp4_status **sts, char ***msgs);
void fp4_world_parts_free(const fp4_world *w, char **texts, fp4_status *sts, char **msgs);

/* The end of an analysis or gemm run on an active world: gather every rank's partial report
 * (text, or NULL with the rank's failure st and its detail), and on rank 0 merge them
 * (fp4_merge_reports; the human table to `table` when not NULL) and write the one report to
 * `output` (NULL: stdout). A failed rank fails the job with its message ("rank 2 of 4: ...");
 * a merged report with errors entries returns FP4_ERR_INPUT after it is written, as one
 * process would. Every rank returns rank 0's status. */
fp4_status fp4_world_report(const fp4_world *w, const char *text, fp4_status st,
                            const char *output, FILE *table);

/* Rank 0's final status, broadcast: every rank exits with it. */
fp4_status fp4_world_share_status(const fp4_world *w, fp4_status st);

#endif
