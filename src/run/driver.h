/* driver.h — the streaming analysis of whole checkpoints shared by sqnr, bias, buckets and rht:
 * select datasets, canonicalize each to rows along the block axis, read it in slabs bounded by
 * --mem-limit, feed every config through the backend, pool the results (SPEC §3, §5, §8). */
#ifndef FP4_DRIVER_H
#define FP4_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "io/fingerprint.h"
#include "io/quantized.h"
#include "io/source.h"
#include "num/metrics.h"
#include "num/quant.h"
#include "run/config.h"
#include "run/shard.h"
#include "base/status.h"

/* One analysed tensor: its dataset description, the block axis it was quantized along (as a
 * non-negative dimension index), the canonical row layout, and one finished fp4_metrics per
 * config (same order as fp4_run.cfgs). */
typedef struct fp4_tensor_result {
    fp4_tensor_desc info;
    int axis;
    int64_t n_rows, row_len;
    fp4_metrics *metrics; /* ncfg entries */
    int index;            /* its position in fp4_run.datasets (the selection) */
} fp4_tensor_result;

/* A tensor that could not be analysed (non-numeric class, unavailable filter, read failure,
 * bad axis): it is reported in `errors` and the run continues. */
typedef struct fp4_tensor_error {
    char *tensor;  /* dataset path */
    fp4_status status;
    char *message; /* "FILE: DSET: why" */
    int index;     /* position in fp4_run.datasets */
} fp4_tensor_error;

/* ΔSQNR, Δα, ΔB15, ΔB8 = rotated − plain for one (format, scale, block, rounding) (SPEC §5).
 * sqnr_ok is false when either SQNR is not finite (then delta_sqnr_db is 0 and unused). */
typedef struct fp4_rht_delta {
    int plain, rotated; /* indices into fp4_run.cfgs */
    double delta_sqnr_db;
    bool sqnr_ok;
    double delta_alpha, delta_bucket_ratio_15, delta_bucket_ratio_8;
} fp4_rht_delta;

/* A selected tensor the default selection leaves out (rank < 2, integer, not numeric, or
 * --exclude): listed in the report's `skipped`, never analysed or pooled, not an error. */
typedef struct fp4_tensor_skip {
    fp4_tensor_desc info;
    char *reason; /* "rank 1", "integer (i64)", ... (see fp4_source_skip_reason) */
    fp4_qsummary *quant; /* an already-quantized tensor's codes and scales (malloc'd; NULL
                            for every other skipped tensor) */
} fp4_tensor_skip;

typedef struct fp4_run {
    const fp4_run_config *config; /* borrowed: outlives the run (cfgs point into it) */
    char *file;
    fp4_qconfig *cfgs;
    int ncfg;
    char **datasets;           /* every selected dataset path not skipped, in walk order */
    int ndatasets;
    int *assigned;             /* --shard: the positions in datasets[] of this share's
                                  tensors, ascending (tensors and errors come from these) */
    int nassigned;
    fp4_shard_shape *shapes;   /* --shard: [ndatasets], each selected dataset's shape and
                                  dtype as described before the split (shard.shapes,
                                  shard.dtypes: merge checks every tensor against them) */
    fp4_file_print *prints;    /* --shard: the input's fingerprint (io/fingerprint.h), taken
                                  before any tensor is read */
    int nprints;
    fp4_tensor_result *tensors; /* analysed tensors, in walk order */
    int ntensors;
    fp4_tensor_error *errors;
    int nerrors;
    fp4_tensor_skip *skipped;  /* left out by the default selection or --exclude, walk order */
    int nskipped;
    fp4_metrics *pooled;       /* ncfg entries: merged over tensors in order, finished */
    fp4_rht_delta *pairs;      /* (plain, rotated) pairs when --rht both, else none */
    int npairs;
    char device[16];           /* the backend that ran: "cpu" or "cuda" */
    double seconds;
    int64_t bytes_read;
    char **warnings;           /* one line each, for stderr: a selection pattern or an
                                  --exclude pattern that matched nothing */
    int nwarnings;
} fp4_run;

/* Pool the finished per-tensor metrics into run->pooled (fp4_metrics_merge in tensor order,
 * then fp4_metrics_finish; no tensors: tensor_amax 0) and, under --rht both, the pooled
 * (plain, rotated) deltas into run->pairs. The one pooling order of a report (SPEC §7), used
 * by the run and by `merge`. FP4_ERR_INTERNAL when out of memory. */
fp4_status fp4_run_pool(fp4_run *run);

/* Analyse `file` (patterns select tensors as in fp4_source_select; none = all; what the
 * default selection of fp4_source_skip_reason leaves out under config->all_tensors and
 * config->exclude goes to run->skipped) under the config's qconfigs (config resolved by
 * fp4_run_config_finish; borrowed for the run's lifetime); with config->shard.count > 0 only
 * share config->shard.index of what is left (fp4_shard_assign by element count;
 * run->datasets still lists all of it). Per-tensor failures become run->errors and the run
 * goes on. Selection patterns that match nothing while others do, and --exclude patterns that
 * match no selected tensor, are run->warnings. Returns FP4_ERR_INPUT (file missing, every
 * pattern matching nothing, or no tensor left to analyse: "FILE: no tensor to analyse: why"),
 * FP4_ERR_USAGE (bad
 * config), FP4_ERR_DEVICE or FP4_ERR_INTERNAL for failures of the whole run; FP4_OK
 * otherwise, even when some tensors failed (see run->nerrors). Free with fp4_run_free in
 * every case. */
fp4_status fp4_run_analysis(const fp4_run_config *config, const char *file,
                            const char *const *patterns, int npatterns, fp4_run *run);

/* The same over an open source (caller memory, io/memsrc.h; an input opened once and analysed
 * tensor by tensor): `src` is read, not closed, and its fp4_source_file names the run. */
fp4_status fp4_run_analysis_source(const fp4_run_config *config, fp4_source *src,
                                   const char *const *patterns, int npatterns, fp4_run *run);
void fp4_run_free(fp4_run *run);

/* The same for the one tensor of `src`, a source over device memory (io/memsrc.h opened on a
 * device pointer: only described, never read) of stored kind F32, F16 or BF16 whose elements
 * are at data + sum(i_d * strides[d]) (strides in elements; NULL: C order), analysed where it
 * lies by `be` (a CUDA backend: fp4_analysis_device) with every device call ordered on
 * `stream` (a cudaStream_t; NULL the legacy default stream). The run is the one
 * fp4_run_analysis_source makes of the same values in host memory, bit for bit (a bad --axis
 * is its error entry). *host_bytes (may be NULL): the bytes copied to the host for the
 * configurations the kernels lack. `be` is borrowed (kept open by the caller). */
fp4_status fp4_run_analysis_device(const fp4_run_config *config, fp4_source *src, fp4_backend *be,
                                   const void *data, const int64_t *strides, void *stream,
                                   int64_t *host_bytes, fp4_run *run);

/* The rotated-minus-plain deltas of two finished metrics (SPEC §5 "RHT comparison"). */
void fp4_rht_delta_compute(const fp4_metrics *plain, const fp4_metrics *rotated,
                           fp4_rht_delta *d);

/* Canonical layout of a dataset for block axis `axis` (already non-negative, < rank; rank 0 is
 * one row of one element): rows of row_len = dims[axis] elements, ordered by the other
 * dimensions in row-major order. slab_dim is the dimension slabs are read along (the outermost
 * one that is not the axis; 0 for rank <= 1) and rows_per_index the rows one index of it holds.
 * A rank-1 tensor is one row read whole (slab_dim 0, rows_per_index 0 marks it). */
typedef struct fp4_layout {
    int64_t n_rows, row_len;
    int slab_dim;
    int64_t rows_per_index;
    int64_t outer_stride; /* elements per slab index */
} fp4_layout;
void fp4_layout_of(const int64_t *dims, int rank, int axis, fp4_layout *L);

/* Turn a slab read along slab_dim (count indices; dims with dims[slab_dim] = count) into rows
 * of length dims[axis]: rows[r * A + k] = slab[(o * A + k) * inner + i], r = o * inner + i,
 * where inner is the product of the dimensions after the axis. When inner == 1 the slab is
 * already in row order and is copied. */
void fp4_slab_to_rows(const float *slab, float *rows, const int64_t *dims, int rank, int axis,
                      int slab_dim, int64_t count);

#endif
