/* io/h5io.h — the HDF5 tensor source (fp4_source_hdf5, registered in source_reg.c) and its
 * direct interface for tests: open, walk and describe datasets, read them (whole or in slabs
 * along one dimension) into fp32 through HDF5's own type conversion or as stored words
 * (SPEC §8). h5io.c is the only file that includes hdf5.h. */
#ifndef FP4_IO_H5IO_H
#define FP4_IO_H5IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/source.h"
#include "base/status.h"

typedef struct fp4_h5file fp4_h5file;

/* Open FILE read-only. FP4_ERR_INPUT "FILE: no such file" / "FILE: permission denied" /
 * "FILE: is a directory, not an " FP4_INPUT_FORMATS " checkpoint" / "FILE: not an "
 * FP4_INPUT_FORMATS " file" (io/source.h) / … (errno is checked
 * before HDF5 is asked). HDF5 is not thread-safe here: use one fp4_h5file from one thread. */
fp4_status fp4_h5_open(const char *file, fp4_h5file **out);
void fp4_h5_close(fp4_h5file *f);
const char *fp4_h5_filename(const fp4_h5file *f);

/* Follow external links, external raw storage and virtual-dataset sources outside the
 * directory tree of the file opened (--allow-external); by default only inside it. Either
 * way only to regular files, resolved against the pointing file's own directory, checked
 * before reading; a refused pointer makes the dataset's `problem` (an errors entry). */
void fp4_h5_set_allow_external(bool allow);

/* Turn HDF5's automatic error-stack printing on (verbose) or off (default). */
void fp4_h5_set_verbose(bool verbose);

/* Describe one dataset by exact path (leading '/' optional). FP4_ERR_INPUT
 * "FILE: DSET: no such dataset" (or "is a group, not a dataset"). A dataset that cannot be
 * read (class, filter, size overflow) is described with OK status and `problem` set. */
fp4_status fp4_h5_info(fp4_h5file *f, const char *path, fp4_tensor_desc *out);

/* Read the slab [start, start+count) along dimension `dim` (all of the other dimensions) into
 * buf, in the dataset's row-major order restricted to the slab, converted to fp32 by HDF5.
 * buf holds count * (nelems / dims[dim]) floats. For a scalar dataset use dim 0, start 0,
 * count 1. Errors: FP4_ERR_INPUT "FILE: DSET: <why>" for a non-numeric class (named), an
 * unavailable filter (named), or a read failure; FP4_ERR_USAGE for a bad range. The open
 * dataset is kept between calls with the same path, so consecutive slabs reuse HDF5's chunk
 * cache (16 MiB at most); memory beyond buf stays bounded by that and HDF5's 1 MiB conversion
 * buffer. */
fp4_status fp4_h5_read_slab(fp4_h5file *f, const char *path, int dim, int64_t start,
                            int64_t count, float *buf);

/* The same slab as stored words in host byte order (memory type = the file type, only the
 * byte order swapped when it differs): count * (nelems / dims[dim]) words of the dataset's
 * element size. FP4_ERR_INPUT for a type that is not integer or float. */
fp4_status fp4_h5_read_slab_raw(fp4_h5file *f, const char *path, int dim, int64_t start,
                                int64_t count, void *buf);

/* Read a whole dataset (convenience for small tensors and tests); buf holds nelems floats. */
fp4_status fp4_h5_read_all(fp4_h5file *f, const char *path, float *buf);

/* Read a whole integer dataset as uint8 (used for the TE oracle codes/scales). */
fp4_status fp4_h5_read_u8(fp4_h5file *f, const char *path, uint8_t *buf);

/* Read a scalar numeric attribute of an object as double. */
fp4_status fp4_h5_read_attr_double(fp4_h5file *f, const char *obj, const char *name,
                                   double *out);

#endif
