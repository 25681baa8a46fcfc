/* codec.h — decoding of stored HDF5 chunks as pure functions: inflate (libdeflate), the inverse
 * of HDF5's shuffle filter, Fletcher-32 exactly as HDF5 computes it, and a chunk's filter
 * pipeline applied in reverse honouring the chunk's filter mask (SPEC §8, reading). */
#ifndef FP4_IO_CODEC_H
#define FP4_IO_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* HDF5's filter identifiers (H5Zpublic.h) of the filters decoded here. */
#define FP4_FILTER_DEFLATE 1
#define FP4_FILTER_SHUFFLE 2
#define FP4_FILTER_FLETCHER32 3

/* At most this many filters in a pipeline (HDF5's own limit is 32; real files hold 1-3). */
#define FP4_CODEC_MAX_FILTERS 16

/* One filter of a pipeline. param: for shuffle the element size in bytes (HDF5 stores it as
 * the filter's first client value, set from the datatype size); unused by the others. */
typedef struct fp4_filter {
    int id;
    uint32_t param;
} fp4_filter;

/* A dataset's filter pipeline in HDF5's order: the order the filters were applied when the
 * chunk was written (e.g. h5py: shuffle, deflate, fletcher32). Decoding runs it backwards.
 * Bit i of a chunk's filter mask set = filter i was skipped for that chunk. */
typedef struct fp4_pipeline {
    int n;
    fp4_filter f[FP4_CODEC_MAX_FILTERS];
} fp4_pipeline;

/* True when every filter of p is one decoded here (deflate, shuffle with 1 <= param, and
 * fletcher32) and n is in [0, FP4_CODEC_MAX_FILTERS]. */
bool fp4_pipeline_supported(const fp4_pipeline *p);

/* A decoding workspace: a libdeflate decompressor and growable scratch buffers. One per thread
 * (not thread-safe); reused across chunks so nothing is allocated per chunk in steady state. */
typedef struct fp4_codec fp4_codec;

/* FP4_ERR_INTERNAL "out of memory" when it cannot be made. */
fp4_status fp4_codec_new(fp4_codec **out);
void fp4_codec_free(fp4_codec *c);

/* Bytes of scratch the workspace holds now (for memory accounting). */
size_t fp4_codec_scratch_bytes(const fp4_codec *c);

/* Fletcher-32 of n bytes exactly as HDF5's H5_checksum_fletcher32: 16-bit words read big-endian
 * (first byte high), both sums starting at 0, folded every 360 words, an odd last byte taken as
 * the high byte of a word. */
uint32_t fp4_fletcher32(const void *data, size_t n);

/* The inverse of HDF5's shuffle filter: in holds n bytes as byte planes (byte 0 of every
 * element, then byte 1, ...) of n / elem_size elements followed by the n % elem_size leftover
 * bytes unshuffled; out gets the elements interleaved. in and out must not overlap. With
 * elem_size <= 1 or fewer than two elements, HDF5 leaves the bytes as they are: so does this. */
void fp4_unshuffle(const void *in, void *out, size_t n, size_t elem_size);

/* The forward shuffle (HDF5's write direction), for tests and fixtures. */
void fp4_shuffle(const void *in, void *out, size_t n, size_t elem_size);

/* Inflate one zlib stream (HDF5's deflate filter) of at most in_n bytes into out, which must
 * come out at exactly out_n bytes (bytes after the end of the stream are ignored, as HDF5 does).
 * Errors (FP4_ERR_INPUT, detail "WHERE: ..."): corrupt data or a failed Adler-32 check, a stream
 * that ends early (truncated), a stream that decodes to fewer or more than out_n bytes.
 * Never reads past in + in_n or writes past out + out_n. */
fp4_status fp4_inflate(fp4_codec *c, const void *in, size_t in_n, void *out, size_t out_n,
                       const char *where);

/* Decode one stored chunk: in (in_n bytes, as read from the file) through p's filters in
 * reverse, skipping filter i when bit i of filter_mask is set, into out, which receives
 * exactly out_n bytes (the chunk's full size: the product of the chunk dimensions times the
 * element size). Fletcher-32 is verified as HDF5 does (the stored checksum, little-endian, or
 * its byte-pair-swapped form written by HDF5 before 1.6.3) and stripped. A chunk with no
 * active filter is copied.
 * Errors: FP4_ERR_INPUT "WHERE: <why>" (where names file, dataset and chunk; it is the caller's)
 * for corrupt or truncated deflate data, a failed checksum, a stored chunk shorter than its
 * checksum, a decoded size other than out_n, or a filter not decoded here that the mask does not
 * skip; FP4_ERR_INTERNAL when scratch memory runs out. Scratch use: at most two buffers of the
 * largest intermediate size (out_n + 4 per active Fletcher-32); the usual pipelines (shuffle,
 * deflate, fletcher32 in any subset) need at most one of out_n bytes. */
fp4_status fp4_chunk_decode(fp4_codec *c, const fp4_pipeline *p, uint32_t filter_mask,
                            const void *in, size_t in_n, void *out, size_t out_n,
                            const char *where);

#endif
