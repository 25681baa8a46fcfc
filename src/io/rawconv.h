/* rawconv.h — stored words of the zero-copy formats (safetensors, .npy) to fp32: IEEE f16,
 * bf16, f32, f64, the integer types as values, F8_E4M3/F8_E5M2; either byte order, any
 * alignment, with a stride (a Fortran-order gather). */
#ifndef FP4_RAWCONV_H
#define FP4_RAWCONV_H

#include <stdbool.h>
#include <stdint.h>

#include "io/source.h"
#include "base/status.h"

typedef enum fp4_raw {
    FP4_RAW_NONE = 0,
    FP4_RAW_F16, FP4_RAW_BF16, FP4_RAW_F32, FP4_RAW_F64,
    FP4_RAW_I8, FP4_RAW_U8, FP4_RAW_I16, FP4_RAW_U16, FP4_RAW_I32, FP4_RAW_U32,
    FP4_RAW_I64, FP4_RAW_U64,
    FP4_RAW_F8_E4M3, FP4_RAW_F8_E5M2,
    FP4_RAW_COUNT
} fp4_raw;

/* The type's name as `ls` and reports spell it: "f16", "bf16", "f32", "f64", "i8".."u64",
 * "f8_e4m3", "f8_e5m2"; "" for FP4_RAW_NONE. */
const char *fp4_raw_name(fp4_raw k);
/* The stored word our own widening (io/widen.h) takes; FP4_STORED_OTHER for F8 (widened by
 * the source's read_f32) and FP4_RAW_NONE. */
fp4_stored fp4_raw_stored(fp4_raw k);

/* The range check of every slab read (fp4_source_ops.read_raw): FP4_OK when [start,
 * start+count) along `dim` lies inside a tensor of `rank` dims (a scalar: dim 0, extent 1);
 * else FP4_ERR_USAGE "FILE: NAME: slab [START, +COUNT) along dimension DIM is out of range". */
fp4_status fp4_raw_slab_check(const char *file, const char *name, int rank, const int64_t *dims,
                              int dim, int64_t start, int64_t count);

/* Bytes per word (0 for FP4_RAW_NONE). */
int fp4_raw_size(fp4_raw k);
/* Whether every value of the type is exactly an fp32 (all but f64 and ints wider than 24 bits). */
bool fp4_raw_exact(fp4_raw k);

/* dst[i] = the word at src + i * stride (bytes), i < n: little-endian words, or big-endian when
 * big_endian. f16/bf16/F8/ints <= 24 bits exactly; f64 and wider ints rounded to nearest even
 * (as a C conversion: f64 beyond fp32's range becomes +-Inf). */
void fp4_raw_to_f32(fp4_raw k, bool big_endian, const uint8_t *src, int64_t stride, int64_t n,
                    float *dst);


/* The slab [start, start+count) along dimension `dim` (all of the others) of a tensor of
 * `rank` dims whose words start at base, stored row-major (C order) or column-major
 * (fortran), written row-major within the slab into buf: fp32 values (raw false) or the
 * stored words in host byte order (raw true; fp4_raw_size(k) bytes each). A scalar (rank 0)
 * is dim 0, start 0, count 1. The range is the caller's to check; every byte read lies in
 * [base, base + nelems * size). */
void fp4_raw_slab(const uint8_t *base, fp4_raw k, bool big_endian, int rank,
                  const int64_t *dims, bool fortran, int dim, int64_t start, int64_t count,
                  bool raw, void *buf);

/* fp4_raw_slab from a memory mapping of a file that may shrink meanwhile: every byte read
 * under fp4_mapguard_call (io/mapguard.h), on each thread that reads. False when a page read
 * lies past the file's new end (buf then holds part of the slab): the caller's error, "the
 * file shrank while it was read". */
bool fp4_raw_slab_mapped(const uint8_t *base, fp4_raw k, bool big_endian, int rank,
                         const int64_t *dims, bool fortran, int dim, int64_t start, int64_t count,
                         bool raw, void *buf);

#endif
