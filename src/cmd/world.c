/* world.c — every MPI call: start MPI when launched by mpirun, one share per rank, one GPU and a
 * fair part of the node's cores per rank, and the gather of the ranks' partial reports on
 * rank 0. Without MPI (MPI=0) every process is a world of one. */
#define _GNU_SOURCE /* sched_getaffinity */
#include "cmd/world.h"

#include "backend/backend.h"
#include "cmd/options.h"
#include "report/merge.h"
#include "report/report.h"

#include <limits.h>
#include <omp.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FP4_HAVE_MPI
#include <mpi.h>
#endif
#ifdef FP4_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

static fp4_world g_world = {false, 0, 1, 0, 1};
static bool g_init, g_started;

bool fp4_world_built(void)
{
#ifdef FP4_HAVE_MPI
    return true;
#else
    return false;
#endif
}

fp4_status fp4_world_init(fp4_world *w)
{
    if (!g_init) {
        g_init = true;
#ifdef FP4_HAVE_MPI
        if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK")) {
            int provided = 0;
            /* only the main thread calls MPI (the slab reader and OpenMP threads never do) */
            if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
                return fp4_error(FP4_ERR_INTERNAL, "MPI_Init failed");
            g_started = true;
            MPI_Comm_rank(MPI_COMM_WORLD, &g_world.rank);
            MPI_Comm_size(MPI_COMM_WORLD, &g_world.size);
            MPI_Comm node;
            if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_world.rank,
                                    MPI_INFO_NULL, &node) == MPI_SUCCESS) {
                MPI_Comm_rank(node, &g_world.local_rank);
                MPI_Comm_size(node, &g_world.local_size);
                MPI_Comm_free(&node);
            }
            g_world.active = g_world.size > 1;
        }
#endif
    }
    *w = g_world;
    return FP4_OK;
}

void fp4_world_finalize(void)
{
#ifdef FP4_HAVE_MPI
    if (g_started) MPI_Finalize();
#endif
    g_started = false;
}

bool fp4_world_quiet(void) { return g_world.active && g_world.rank != 0; }

/* The CPUs this rank may use: its affinity mask when the launcher bound it to fewer than the
 * node has, else the node's CPUs shared evenly among its ranks. */
static int fair_threads(const fp4_world *w)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online < 1) online = 1;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int mine = CPU_COUNT(&set);
        if (mine > 0 && mine < online) return mine;
    }
    long t = online / (w->local_size > 0 ? w->local_size : 1);
    return t < 1 ? 1 : (int)t;
}

fp4_status fp4_world_prepare(const fp4_world *w, fp4_run_config *o, int *threads)
{
    *threads = 0;
    if (!w->active) return FP4_OK;
    if (o->shard.count > 0)
        return fp4_error(FP4_ERR_USAGE, "--shard does not apply under mpirun: the %d ranks take "
                                        "the %d shares",
                         w->size, w->size);
    o->shard.index = w->rank;
    o->shard.count = w->size;
    if (o->threads == 0) {
        *threads = fair_threads(w);
        omp_set_num_threads(*threads);
    }
#ifdef FP4_HAVE_CUDA
    if (o->device != FP4_DEVICE_CPU) { /* one GPU per rank, by local rank */
        int n = 0;
        if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0) {
            cudaSetDevice(w->local_rank % n);
            fp4_cuda_backend_set_device(w->local_rank % n);
        } else {
            cudaGetLastError();
        }
    }
#endif
    return FP4_OK;
}

void fp4_world_parts_free(const fp4_world *w, char **texts, fp4_status *sts, char **msgs)
{
    for (int r = 0; r < w->size; r++) {
        if (texts) free(texts[r]);
        if (msgs) free(msgs[r]);
    }
    free(texts);
    free(sts);
    free(msgs);
}

fp4_status fp4_world_gather(const fp4_world *w, const char *text, fp4_status st, const char *msg,
                            char ***texts, fp4_status **sts, char ***msgs)
{
    *texts = NULL;
    *sts = NULL;
    *msgs = NULL;
#ifdef FP4_HAVE_MPI
    if (!w->active) return FP4_OK;
    const char *payload = text ? text : (msg ? msg : "");
    size_t plen = strlen(payload);
    /* per rank: payload length (-1: too long to send), status, whether it is a report */
    long long mine[3] = {plen < (size_t)INT_MAX ? (long long)plen : -1, (long long)st,
                         text != NULL};
    long long *all = NULL;
    int *counts = NULL, *displs = NULL;
    char *buf = NULL;
    int ok = 1;
    fp4_status res = FP4_OK;
    if (w->rank == 0) {
        all = malloc((size_t)w->size * 3 * sizeof *all);
        counts = malloc((size_t)w->size * sizeof *counts);
        displs = malloc((size_t)w->size * sizeof *displs);
        ok = all && counts && displs;
    }
    if (MPI_Gather(mine, 3, MPI_LONG_LONG, all, 3, MPI_LONG_LONG, 0, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
        return fp4_error(FP4_ERR_INTERNAL, "MPI_Gather failed");
    long long total = 0;
    if (w->rank == 0 && ok) {
        for (int r = 0; r < w->size; r++) {
            if (all[3 * r] < 0) ok = 0;
            displs[r] = (int)total;
            counts[r] = all[3 * r] < 0 ? 0 : (int)all[3 * r];
            total += counts[r];
        }
        if (total >= INT_MAX) ok = 0;
        if (ok && !(buf = malloc((size_t)total + 1))) ok = 0;
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok) {
        res = fp4_error(FP4_ERR_INTERNAL, "the ranks' reports are too large to gather "
                                          "(2 GiB); use --shard and merge");
        goto out;
    }
    if (MPI_Gatherv(payload, (int)plen, MPI_CHAR, buf, counts, displs, MPI_CHAR, 0,
                    MPI_COMM_WORLD) != MPI_SUCCESS) {
        res = fp4_error(FP4_ERR_INTERNAL, "MPI_Gatherv failed");
        goto out;
    }
    if (w->rank == 0) {
        *texts = calloc((size_t)w->size, sizeof **texts);
        *msgs = calloc((size_t)w->size, sizeof **msgs);
        *sts = calloc((size_t)w->size, sizeof **sts);
        if (!*texts || !*msgs || !*sts) {
            res = fp4_error(FP4_ERR_INTERNAL, "out of memory");
            goto out;
        }
        for (int r = 0; r < w->size; r++) {
            char *s = malloc((size_t)counts[r] + 1);
            if (!s) {
                res = fp4_error(FP4_ERR_INTERNAL, "out of memory");
                goto out;
            }
            memcpy(s, buf + displs[r], (size_t)counts[r]);
            s[counts[r]] = '\0';
            (*sts)[r] = (fp4_status)all[3 * r + 1];
            if (all[3 * r + 2]) (*texts)[r] = s;
            else (*msgs)[r] = s;
        }
    }
out:
    if (res != FP4_OK && w->rank == 0) {
        fp4_world_parts_free(w, *texts, *sts, *msgs);
        *texts = NULL, *sts = NULL, *msgs = NULL;
    }
    free(all);
    free(counts);
    free(displs);
    free(buf);
    return res;
#else
    (void)w, (void)text, (void)st, (void)msg;
    return FP4_OK;
#endif
}

fp4_status fp4_world_share_status(const fp4_world *w, fp4_status st)
{
#ifdef FP4_HAVE_MPI
    if (!w->active) return st;
    int s = (int)st;
    MPI_Bcast(&s, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return (fp4_status)s;
#else
    (void)w;
    return st;
#endif
}

fp4_status fp4_world_report(const fp4_world *w, const char *text, fp4_status st,
                            const char *output, FILE *table)
{
    char **texts = NULL, **msgs = NULL;
    fp4_status *sts = NULL;
    fp4_status res = fp4_world_gather(w, st == FP4_OK ? text : NULL, st,
                                      st == FP4_OK ? "" : fp4_last_error(), &texts, &sts, &msgs);
    if (res == FP4_OK && w->rank == 0 && texts && sts && msgs) {
        for (int r = 0; r < w->size && res == FP4_OK; r++)
            if (!texts[r]) {
                const char *why = msgs[r] ? msgs[r] : "failed";
                const fp4_status rs = sts[r] != FP4_OK ? sts[r] : FP4_ERR_INTERNAL;
                res = r == 0 ? fp4_error(rs, "%s", why)
                             : fp4_error(rs, "rank %d of %d: %s", r, w->size, why);
            }
        char **names = res == FP4_OK ? calloc((size_t)w->size, sizeof *names) : NULL;
        if (res == FP4_OK && !names) res = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        for (int r = 0; res == FP4_OK && r < w->size; r++) {
            char b[32];
            snprintf(b, sizeof b, "rank %d", r);
            if (!(names[r] = strdup(b))) res = fp4_error(FP4_ERR_INTERNAL, "out of memory");
        }
        fp4_merge_result m;
        memset(&m, 0, sizeof m);
        if (res == FP4_OK)
            res = fp4_merge_reports((const char *const *)texts, (const char *const *)names,
                                    w->size, output, table, fp4_options_config_of_argv, &m);
        if (res == FP4_OK) res = fp4_output_write(output, m.text, strlen(m.text));
        if (res == FP4_OK && m.nerrors > 0)
            res = fp4_error(FP4_ERR_INPUT, "%d of %d tensors failed (see \"errors\" in the "
                                           "report); first: %s",
                            m.nerrors, m.nunits, m.first_error);
        free(m.text);
        for (int r = 0; names && r < w->size; r++) free(names[r]);
        free(names);
    }
    fp4_world_parts_free(w, texts, sts, msgs);
    return fp4_world_share_status(w, res);
}
