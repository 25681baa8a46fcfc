/* st_parse.h — the safetensors header parser and the sharded index (model.safetensors.index.json)
 * parser: pure functions over bytes in memory, no file access. Checks as strict as the format's
 * reference implementation (huggingface/safetensors, Metadata::validate). */
#ifndef FP4_ST_PARSE_H
#define FP4_ST_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* The largest header the reference implementation accepts (bytes of JSON). */
#define FP4_ST_MAX_HEADER 100000000u
/* Dimensions kept per tensor; a tensor of higher rank is listed with `problem` set. */
#define FP4_ST_MAX_RANK 8

/* Stored element types of safetensors (the reference's Dtype names). */
typedef enum fp4_st_dtype {
    FP4_ST_UNKNOWN = 0,
    FP4_ST_BOOL, FP4_ST_U8, FP4_ST_I8, FP4_ST_U16, FP4_ST_I16, FP4_ST_U32, FP4_ST_I32,
    FP4_ST_U64, FP4_ST_I64, FP4_ST_F16, FP4_ST_BF16, FP4_ST_F32, FP4_ST_F64,
    FP4_ST_F8_E4M3, FP4_ST_F8_E5M2, FP4_ST_F8_E8M0, FP4_ST_F4, FP4_ST_F6_E2M3, FP4_ST_F6_E3M2,
    FP4_ST_C64,
    FP4_ST_NDTYPES
} fp4_st_dtype;

/* The type named NAME (exact, case-sensitive), FP4_ST_UNKNOWN if none. */
fp4_st_dtype fp4_st_dtype_from_name(const char *name);
/* Bits per element (4, 6, 8 … 64); 0 for FP4_ST_UNKNOWN. */
int fp4_st_dtype_bits(fp4_st_dtype t);
/* Whether fp4diag reads the type as numbers (F32/F16/BF16/F64, F8_E4M3/E5M2, integers). */
bool fp4_st_dtype_readable(fp4_st_dtype t);

typedef struct fp4_st_tensor {
    char *name;               /* stored name, valid UTF-8 without NUL (owned) */
    char dtype[24];           /* the stored type name as written (truncated at 23 bytes) */
    fp4_st_dtype type;
    int rank;                 /* may exceed FP4_ST_MAX_RANK (then dims holds the first ones) */
    int64_t dims[FP4_ST_MAX_RANK];
    int64_t nelems;           /* product of the dims */
    uint64_t begin, end;      /* data_offsets: bytes relative to the start of the data section */
    bool cut;                 /* its bytes run past the file's end (a truncated file): `problem`
                                 says so, and nothing of it may be read */
    char problem[128];        /* "" when the tensor can be read; else why not ("type BOOL is not
                                 numeric", "unknown type X1", "rank 9 exceeds 8", its bytes past
                                 the end of a truncated file) */
} fp4_st_tensor;

typedef struct fp4_st_header {
    uint64_t header_len;      /* N, the JSON's length; the data section starts at 8 + N */
    uint64_t data_start;      /* 8 + N */
    uint64_t data_len;        /* file size - data_start = the end of the last tensor, or less
                                 when the file is truncated (the tensors past it `cut`) */
    fp4_st_tensor *t;         /* tensors in data order (ascending offsets: the file's order) */
    int n;
    char **meta_keys;         /* __metadata__ in header order (owned) */
    char **meta_vals;
    int nmeta;
} fp4_st_header;

/* Parse the safetensors file whose whole contents are buf[0..size) (a read-only mapping).
 * Checks, each an FP4_ERR_INPUT "FILE: <what is wrong>":
 *   size >= 8; the 8-byte little-endian header length N <= 100 MB and 8 + N <= size; the header
 *   valid UTF-8, with no NUL and no control character inside a string (raw or as \u0000), a JSON
 *   object (starting with '{', trailing spaces allowed); `__metadata__` an object of strings;
 *   every other member an object with "dtype" (string), "shape" (array of integers >= 0) and
 *   "data_offsets" ([begin, end], integers, begin <= end); duplicate names refused; product of
 *   the shape times the element bits without overflow and a whole number of bytes equal to
 *   end - begin (for a known type); the tensors, sorted by offset, cover the data section
 *   exactly: no overlap ("TENSOR overlaps TENSOR2"), no gap, no byte after the last one.
 * A file cut short (the last tensor ending past the file's end) is not a header error: each
 * tensor whose bytes run past the end is `cut`, with `problem` saying so; the others are read
 * (SPEC §8: one bad tensor does not stop the others).
 * An unknown type or an unreadable one (BOOL, F8_E8M0, F4, F6_*, C64) is not a header error:
 * the tensor gets `problem` set, so that the others still run. An unknown type's size is not
 * checked beyond being in bounds and not overlapping.
 * Every byte read lies inside buf[0..8 + header length) (and so inside buf[0..size)): the
 * caller may pass only those bytes (a copy of a mapping's header) with the file's size. A key
 * twice in any object of the header is refused. *out is filled (free with fp4_st_header_free) only
 * on FP4_OK; FP4_ERR_INTERNAL when out of memory. */
fp4_status fp4_st_parse(const char *file, const uint8_t *buf, uint64_t size, fp4_st_header *out);
void fp4_st_header_free(fp4_st_header *h);

/* Whether a file of `size` bytes, buf its first min(size, 8) bytes, is a safetensors file cut
 * short inside its header (fp4_st_parse refuses it): under 8 bytes, or a header length within
 * the 100 MB limit running past the file's end, the length not being JSON text (an index named
 * as a safetensors file is not cut). A shard of a sharded checkpoint cut so makes only the
 * tensors the index gives it errors entries (SPEC section 8). */
bool fp4_st_header_cut(const uint8_t *buf, uint64_t size);

/* A sharded checkpoint's index: weight_map in the index file's order. */
typedef struct fp4_st_index {
    char **names;             /* tensor names in index order (owned) */
    int *shard;               /* shard number of each name: shards[shard[i]] */
    int n;
    char **shards;            /* distinct shard file names, in order of first appearance */
    int nshards;
    char **meta_keys;         /* the index's "metadata" object in its order (owned) ... */
    char **meta_vals;         /* ... each value as unformatted JSON text ("1718272", "\"pt\"") */
    int nmeta;
} fp4_st_index;

/* Parse an index file's JSON (buf[0..size), need not be NUL-terminated): an object with
 * "weight_map", an object mapping each tensor name to a shard file name (a string, relative,
 * no ".." component, no NUL); "metadata" optional, any JSON object (kept as JSON text; a
 * "metadata" that is not an object is ignored). Duplicate tensor names are
 * refused. FP4_ERR_INPUT "FILE: <what is wrong>". */
fp4_status fp4_st_index_parse(const char *file, const char *buf, size_t size, fp4_st_index *out);
void fp4_st_index_free(fp4_st_index *ix);

/* Whether the n bytes at s are valid UTF-8 (no overlong forms, no surrogates, <= U+10FFFF).
 * A NUL byte is valid UTF-8; callers that refuse it check separately. */
bool fp4_utf8_valid(const uint8_t *s, size_t n);

/* A JSON document read beside an input (a quantized checkpoint's hf_quant_config.json,
 * config.json) parsed with the checks every JSON header gets: valid UTF-8, no NUL or control
 * character in a string, one object and nothing after it, no key twice in any object (cJSON
 * finds the first, Python's json the last: one file, two readings). Errors (FP4_ERR_INPUT)
 * read "FILE: WHAT ..." ("FILE: WHAT: PARENT: key K appears twice"). *out: free with
 * cJSON_Delete. */
struct cJSON;
fp4_status fp4_json_parse_object(const char *file, const char *what, const char *s, size_t n,
                                 struct cJSON **out);

/* The same checks on a document the caller parsed itself (a report read by merge or compare:
 * its own messages for text that is not JSON or not an object) from the n bytes at s: valid
 * UTF-8, no NUL or raw control character in a string, no key twice in any object ("FILE:
 * WHAT: key K appears twice", "FILE: WHAT: PARENT: key K appears twice"). FP4_ERR_INPUT. */
fp4_status fp4_json_doc_check(const char *file, const char *what, const char *s, size_t n,
                              const struct cJSON *doc);

#endif
