/* io/memsrc.h — a tensor source over the caller's memory: one tensor of f32, f16 or bf16 words
 * in host byte order, any shape and strides, read in place (nothing copied until a slab is
 * read). The public API (api/) analyses caller memory through it with the driver, so memory
 * and files take the one path. */
#ifndef FP4_IO_MEMSRC_H
#define FP4_IO_MEMSRC_H

#include <stdint.h>

#include "io/source.h"

/* Open a source named `label` (messages say "LABEL: NAME: why") holding one tensor `name`
 * (as given, less trailing '/'; "/a/b" is a rooted name as HDF5's are; NULL or "" is "tensor") of `stored` words (FP4_STORED_F32,
 * F16 or BF16) with dims[0..rank) (rank <= FP4_MAX_RANK, each >= 0) at `data`; element
 * (i0, ...) at data + sum(i_d * strides[d]) words; strides NULL = C order. The memory is
 * borrowed: it must stay valid and unchanged until fp4_source_close. FP4_ERR_USAGE for a bad
 * stored type, rank or dimension, or NULL data with elements; FP4_ERR_INTERNAL when out of
 * memory. */
fp4_status fp4_source_open_memory(const char *label, const char *name, fp4_stored stored,
                                  int rank, const int64_t *dims, const int64_t *strides,
                                  const void *data, fp4_source **out);

#endif
