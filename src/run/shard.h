/* shard.h — `--shard I/N`: which share of a run's selected tensors (or GEMM layers) one process
 * takes. The split is a pure function of the selection (order and element counts), so every
 * process, on any machine, computes the same one, and `merge` can put the shares back together. */
#ifndef FP4_SHARD_H
#define FP4_SHARD_H

#include <stdint.h>

#include "base/status.h"
#include "io/source.h" /* FP4_MAX_RANK */

/* One share: index in [0, count); count 0 means "not sharded" (the whole selection). */
typedef struct fp4_shard {
    int index, count;
} fp4_shard;

#define FP4_SHARD_MAX 65536

/* A selected tensor's shape and dtype as its source describes it before the split: a part
 * records them for every position of the selection, whichever share holds it (SPEC §9:
 * shard.shapes and shard.dtypes; a gemm part's shard.inputs), and merge holds every tensor a
 * part shows to them (the exact sums count elements only: a shape's dims permuted keep them). */
typedef struct fp4_shard_shape {
    int rank;                   /* 0..FP4_MAX_RANK */
    int64_t dims[FP4_MAX_RANK];
    char dtype[48];             /* as fp4_tensor_desc.dtype spells it ("bf16", "f32", ...) */
} fp4_shard_shape;

/* Parse "I/N" (decimal, 0 <= I < N <= FP4_SHARD_MAX). FP4_ERR_USAGE "--shard: ..." otherwise. */
fp4_status fp4_shard_parse(const char *s, fp4_shard *out);

/* Assign n items with element counts weight[0..n) (negative counts as 0) to `count` shares,
 * balanced by elements: items in decreasing weight (ties: lower index first) each go to the
 * share with the fewest elements so far (ties: lower share), each item costing weight + 1 so
 * that empty items spread too. owner[i] receives item i's share. Integer arithmetic only: the
 * same on every machine. count <= 0 gives every item share 0. FP4_ERR_INTERNAL when out of
 * memory. */
fp4_status fp4_shard_assign(const int64_t *weight, int n, int count, int *owner);

#endif
