/* io/gguf_parse.h — the GGUF header parser (SPEC §8, "GGUF"): pure functions over bytes in
 * memory, no file access (io/gguf.c maps the file and hands this the bytes).
 *
 * A GGUF file (ggml-org/ggml docs/gguf.md) is, little-endian throughout:
 *   "GGUF", uint32 version, uint64 tensor count, uint64 metadata count,
 *   metadata: (string key, uint32 value type, value) * count,
 *   tensor infos: (string name, uint32 n_dims, uint64 ne[n_dims], uint32 ggml type,
 *                  uint64 offset) * count,
 *   padding to `general.alignment` (default 32), the data section.
 * A string is a uint64 byte count and the bytes (no NUL); an array a uint32 element type, a
 * uint64 count and the elements. ne[0] is the innermost (contiguous) dimension: the parser
 * keeps ne as stored, io/gguf.c reports the shape row-major (ne reversed) like every other
 * source. */
#ifndef FP4_GGUF_PARSE_H
#define FP4_GGUF_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define FP4_GGUF_MAX_DIMS 4 /* GGML_MAX_DIMS */
#define FP4_GGUF_DEFAULT_ALIGNMENT 32
#define FP4_GGUF_MAX_KEY 65535u       /* longest metadata key or tensor name accepted */
#define FP4_GGUF_MAX_DEPTH 4          /* arrays nested deeper are refused */

/* ggml type ids this program knows (gguf-py constants.py GGMLQuantizationType). */
enum {
    FP4_GGML_F32 = 0, FP4_GGML_F16 = 1, FP4_GGML_Q4_0 = 2, FP4_GGML_Q8_0 = 8,
    FP4_GGML_I8 = 24, FP4_GGML_I16 = 25, FP4_GGML_I32 = 26, FP4_GGML_I64 = 27,
    FP4_GGML_F64 = 28, FP4_GGML_BF16 = 30, FP4_GGML_MXFP4 = 39, FP4_GGML_NVFP4 = 40
};

/* Metadata value types (GGUFValueType). */
enum {
    FP4_GGUF_U8 = 0, FP4_GGUF_I8 = 1, FP4_GGUF_U16 = 2, FP4_GGUF_I16 = 3, FP4_GGUF_U32 = 4,
    FP4_GGUF_I32 = 5, FP4_GGUF_F32 = 6, FP4_GGUF_BOOL = 7, FP4_GGUF_STRING = 8,
    FP4_GGUF_ARRAY = 9, FP4_GGUF_U64 = 10, FP4_GGUF_I64 = 11, FP4_GGUF_F64 = 12
};

/* The ggml type's name as ggml spells it ("f32", "q4_0", "q4_K", "mxfp4"), or NULL for an id
 * this program does not know. *block and *bytes: elements per block and bytes per block
 * (1 and the word size for the plain types); 0 for an unknown id. */
const char *fp4_ggml_type_name(uint32_t type, int *block, int *bytes);

/* The metadata value type's name ("u8", "string", "array", …), or NULL. */
const char *fp4_gguf_value_type_name(uint32_t type);

typedef struct fp4_gguf_kv {
    char *key;                /* as stored, control characters and bytes that are not
                                 UTF-8 shown as \xNN (owned) */
    uint32_t type;            /* FP4_GGUF_* */
    uint32_t elem_type;       /* arrays: the element type */
    uint64_t count;           /* arrays: the element count */
    uint64_t u;               /* unsigned integers and bool: the value */
    int64_t i;                /* signed integers: the value */
    double f;                 /* floats: the value */
    char *text;               /* the value as one line of text (owned): numbers in C's form, a
                                 string as stored (escaped as the key is, at most 512
                                 bytes then "..."), an array "[a, b, c, ... (N strings)]" with
                                 at most 8 elements shown */
} fp4_gguf_kv;

typedef struct fp4_gguf_tensor {
    char *name;               /* as stored (owned) */
    uint32_t type;            /* ggml type id */
    int n_dims;
    uint64_t ne[FP4_GGUF_MAX_DIMS]; /* ne[0] innermost, as stored */
    int64_t nelems;           /* product of ne; -1 when it overflows */
    uint64_t offset;          /* relative to the data section */
    int64_t nbytes;           /* bytes of its data (blocks * block bytes); -1 when unknown */
    char problem[160];        /* "" when readable as far as the header can tell; else why not
                                 ("unknown ggml type 77", "ne[0] = 40 is not a whole number of
                                 32-element q4_0 blocks", "data [A, B) lies past the end of the
                                 file (N bytes of data)", "overlaps TENSOR") */
} fp4_gguf_tensor;

typedef struct fp4_gguf_header {
    uint32_t version;         /* 2 or 3 */
    uint64_t alignment;       /* general.alignment or 32 */
    uint64_t data_start;      /* where the data section begins (aligned) */
    uint64_t header_bytes;    /* bytes the parse read (metadata and tensor infos) */
    fp4_gguf_kv *kv;
    int nkv;
    fp4_gguf_tensor *t;       /* in the file's order */
    int n;
} fp4_gguf_header;

/* Parse the GGUF file whose first `len` bytes are buf and whose size is `size` (len <= size).
 * When the header runs past buf but not past `size`, *need_more is set and FP4_ERR_INPUT
 * returned: call again with more bytes. Errors (FP4_ERR_INPUT "FILE: <what is wrong>"):
 * not "GGUF"; version 1 or > 3; a big-endian file; counts larger than the bytes that could
 * hold them; a string or array running past the end of the file; a key or tensor name longer
 * than 65535 bytes or empty; an unknown metadata value type; arrays nested deeper than 4;
 * a duplicate key or tensor name; general.alignment not a u32 power of two; n_dims outside
 * 1..4; a dimension over 2^62; the data section beginning past the end of the file while a
 * tensor has data. Per-tensor faults (unknown type, partial block, misaligned offset, data past
 * the end of the file, overlap) set the tensor's `problem`, not an error. Every byte read
 * lies in buf[0..len). *out is filled (free with fp4_gguf_header_free) only on FP4_OK;
 * FP4_ERR_INTERNAL when out of memory. */
fp4_status fp4_gguf_parse(const char *file, const uint8_t *buf, uint64_t len, uint64_t size,
                          fp4_gguf_header *out, bool *need_more);
void fp4_gguf_header_free(fp4_gguf_header *h);

/* The metadata entry `key`, or NULL. */
const fp4_gguf_kv *fp4_gguf_find_kv(const fp4_gguf_header *h, const char *key);

#endif
