/* h5io.h — every HDF5 call lives in h5io.c and nowhere else: open, walk, select and describe
 * datasets, and read them (whole or in slabs along one dimension) into fp32 through HDF5's
 * own type conversion (SPEC §8). */
#ifndef FP4_H5IO_H
#define FP4_H5IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#define FP4_MAX_RANK 8

typedef struct fp4_h5file fp4_h5file;

typedef struct fp4_dsinfo {
    char *path;                  /* full path, "/blocks/0/fc1/weight" (owned) */
    int rank;                    /* 0 for a scalar dataset */
    int64_t dims[FP4_MAX_RANK];
    int64_t nelems;              /* product of dims (1 for scalar) */
    char dtype[48];              /* "f16", "bf16", "f32", "f64", "i8".."u64",
                                    "float(s,e,m,bias)" for other custom floats (s sign bits,
                                    e exponent bits, m mantissa bits, exponent bias), e.g. bf16
                                    would be float(1,8,7,127); or the class name ("string",
                                    "compound", "opaque", "enum", …) when unsupported */
    char byte_order[4];          /* "le", "be" or "" */
    bool numeric;                /* float or integer class: can be read as fp32 */
    bool exact_fp32;             /* widening to fp32 is exact (f16, bf16, f32, ints <= 24 bit) */
    int chunk_rank;              /* 0 when contiguous/compact */
    int64_t chunk[FP4_MAX_RANK];
    char filters[96];            /* "deflate(4),shuffle" or "" */
    bool filters_available;      /* every filter in the pipeline can decode here */
    int64_t logical_bytes;       /* nelems * on-disk element size */
    int64_t stored_bytes;        /* H5Dget_storage_size */
    char problem[160];           /* "" when fp4_h5_read_slab can read it; else why not, the
                                    text of its error after "FILE: DSET: " ("string class is
                                    not supported", "filter blosc (32001) is not available",
                                    "size overflows 64 bits") */
} fp4_dsinfo;

/* Open FILE read-only. FP4_ERR_INPUT "FILE: no such file" / "FILE: permission denied" /
 * "FILE: is a directory, not an HDF5 file" / "FILE: not an HDF5 file" / … (errno is checked
 * before HDF5 is asked). HDF5 is not thread-safe here: use one fp4_h5file from one thread. */
fp4_status fp4_h5_open(const char *file, fp4_h5file **out);
void fp4_h5_close(fp4_h5file *f);
const char *fp4_h5_filename(const fp4_h5file *f);

/* Turn HDF5's automatic error-stack printing on (verbose) or off (default). */
void fp4_h5_set_verbose(bool verbose);

/* Select datasets: each pattern is an exact dataset path, a group (every dataset below it), or
 * a glob on the full path (fnmatch, '*' does not cross '/'; a glob matching groups selects
 * every dataset below them; paths over 1023 bytes are matched whole only); no patterns =
 * every dataset.
 * A leading '/' is optional. Results in file walk order (name order), de-duplicated.
 * *out is a malloc'd array of *n infos (free with fp4_dsinfo_free_list), including datasets
 * that are not numeric (the caller reports those as errors). A pattern that matches nothing:
 * FP4_ERR_INPUT "FILE: PATTERN: no such dataset or group". */
fp4_status fp4_h5_select(fp4_h5file *f, const char *const *patterns, int npatterns,
                         fp4_dsinfo **out, int *n);
void fp4_dsinfo_free_list(fp4_dsinfo *list, int n);

/* Describe one dataset by exact path (leading '/' optional). FP4_ERR_INPUT
 * "FILE: DSET: no such dataset" (or "is a group, not a dataset"). A dataset that cannot be
 * read (class, filter, size overflow) is described with OK status and `problem` set. */
fp4_status fp4_h5_info(fp4_h5file *f, const char *path, fp4_dsinfo *out);
void fp4_dsinfo_free(fp4_dsinfo *info);

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

/* Read a whole dataset (convenience for small tensors and tests); buf holds nelems floats. */
fp4_status fp4_h5_read_all(fp4_h5file *f, const char *path, float *buf);

/* Read a whole integer dataset as uint8 (used for the TE oracle codes/scales). */
fp4_status fp4_h5_read_u8(fp4_h5file *f, const char *path, uint8_t *buf);

/* Read a scalar numeric attribute of an object as double. */
fp4_status fp4_h5_read_attr_double(fp4_h5file *f, const char *obj, const char *name,
                                   double *out);

#endif
