/* io/memsrc.h — a tensor source over the caller's memory: one tensor of f32, f16 or bf16 words
 * in host byte order, any shape and strides, read in place (nothing copied until a slab is
 * read). The public API (api/) analyses caller memory through it with the driver, so memory
 * and files take the one path. */
#ifndef FP4_IO_MEMSRC_H
#define FP4_IO_MEMSRC_H

#include <stdint.h>

#include "io/source.h"

/* The checks fp4_source_open_memory makes of a view before it keeps it: `stored` F32, F16 or
 * BF16, 0 <= rank <= FP4_MAX_RANK, dims non-NULL for rank > 0 and each >= 0, the product of
 * the non-zero dimensions (so every C-order stride) at 8 bytes an element within int64, data
 * non-NULL when there are elements, and with `strides` every byte offset the view reaches
 * (sum_d i_d * strides[d] words, strides of any sign, zero included) within int64.
 * FP4_ERR_USAGE naming label, name and the dimension; *nelems (may be NULL) the element
 * count. No arithmetic on a view that passes can overflow. */
fp4_status fp4_memory_view_check(const char *label, const char *name, fp4_stored stored,
                                 int rank, const int64_t *dims, const int64_t *strides,
                                 const void *data, int64_t *nelems);

/* Open a source named `label` (messages say "LABEL: NAME: why") holding one tensor `name`
 * (as given, less trailing '/'; "/a/b" is a rooted name as HDF5's are; NULL or "" is "tensor") of `stored` words (FP4_STORED_F32,
 * F16 or BF16) with dims[0..rank) (rank <= FP4_MAX_RANK, each >= 0) at `data`; element
 * (i0, ...) at data + sum(i_d * strides[d]) words; strides NULL = C order. The memory is
 * borrowed: it must stay valid and unchanged until fp4_source_close. FP4_ERR_USAGE for a bad
 * stored type, rank or dimension, a size or strides past 64-bit byte offsets, or NULL data
 * with elements (fp4_memory_view_check); FP4_ERR_INTERNAL when out of memory. */
fp4_status fp4_source_open_memory(const char *label, const char *name, fp4_stored stored,
                                  int rank, const int64_t *dims, const int64_t *strides,
                                  const void *data, fp4_source **out);

#endif
