/* npy_parse.h — NumPy .npy headers (format versions 1.0, 2.0, 3.0) and the zip directory of an
 * .npz archive (stored and deflated members, zip64): pure parsers over bytes in memory. */
#ifndef FP4_NPY_PARSE_H
#define FP4_NPY_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define FP4_NPY_MAX_RANK 8

typedef struct fp4_npy_header {
    int major, minor;         /* format version: 1.0, 2.0 or 3.0 */
    uint64_t data_offset;     /* bytes from the start of the .npy to its first element */
    char descr[32];           /* the dtype as written ("<f4", ">i2", "|u1", "<V2", "|O");
                                 "[structured]" for a list of fields */
    char kind;                /* 'f', 'i' or 'u' for a readable type; else the descr's kind */
    int itemsize;             /* bytes per element (0 when unknown) */
    bool big_endian;          /* stored most significant byte first ('>' with itemsize > 1) */
    bool fortran_order;       /* column-major: dims reversed gives the row-major layout */
    int rank;
    int64_t dims[FP4_NPY_MAX_RANK];
    int64_t nelems;           /* product of the dims (1 for a scalar) */
    uint64_t data_bytes;      /* nelems * itemsize */
    char problem[192];        /* "" when the array can be read; else why not ("<V2: raw 2-byte
                                 void elements …", "object array …", "type b1 (bool) …") */
} fp4_npy_header;

/* Parse the .npy whose bytes are buf[0..size) (a mapping, or an .npz member). FP4_ERR_INPUT
 * "FILE: <what is wrong>" for: a missing magic, an unknown version, a header length past the
 * end, a header that is not the dict literal {'descr': …, 'fortran_order': …, 'shape': (…)}
 * with exactly these keys, a negative or non-integer dimension, a rank above 8, an element
 * count or byte size that overflows, data shorter than the shape needs (bytes after it are
 * ignored, as numpy does). A type fp4diag does not read is not an error: `problem` says why
 * (its data size is then checked only when the item size is known). Every byte read lies
 * inside buf[0..size). */
fp4_status fp4_npy_parse(const char *file, const uint8_t *buf, uint64_t size,
                         fp4_npy_header *out);

/* The same, from the first `have` bytes of an .npy of `total` bytes (a deflated .npz member
 * inflated only as far as its header): the header must lie inside buf[0..have), the data
 * size is checked against total. fp4_npy_parse(f, b, n, o) is fp4_npy_parse_prefix(f, b, n,
 * n, o). */
fp4_status fp4_npy_parse_prefix(const char *file, const uint8_t *buf, uint64_t have,
                                uint64_t total, fp4_npy_header *out);

/* One member of a zip archive, from its central directory and local header. */
typedef struct fp4_zip_member {
    char *name;               /* as stored (owned), valid UTF-8 without NUL */
    int method;               /* 0 stored, 8 deflated */
    uint64_t csize, usize;    /* stored and uncompressed sizes (zip64 sizes where given) */
    uint32_t crc32;
    uint64_t data_offset;     /* absolute offset of the member's (compressed) bytes */
    char problem[96];         /* "" when it can be read; else why not (encrypted, method N) */
} fp4_zip_member;

/* List the members of the zip archive buf[0..size): the end-of-central-directory record (the
 * zip64 one where the classic fields overflow), every central directory entry and its local
 * header, in central-directory order. FP4_ERR_INPUT "FILE: <what is wrong>" for a missing or
 * inconsistent directory, a multi-disk archive, any offset or size outside the file, a name
 * that is not UTF-8 or holds a NUL, duplicate names; members that are encrypted or use another
 * method than stored/deflated get `problem`. *out (free with fp4_zip_free) on FP4_OK; NULL
 * and 0 on an error. The list is *out, *n while it is built: a call abandoned midway (a read
 * of a shrunk mapping under io/mapguard.h) leaves the part made there, to free. */
fp4_status fp4_zip_list(const char *file, const uint8_t *buf, uint64_t size,
                        fp4_zip_member **out, int *n);
void fp4_zip_free(fp4_zip_member *m, int n);

/* Whether buf starts like a zip archive (a local file header or an empty archive's EOCD). */
bool fp4_zip_probe(const uint8_t *buf, uint64_t size);
/* Whether buf starts with the .npy magic "\x93NUMPY". */
bool fp4_npy_probe(const uint8_t *buf, uint64_t size);

#endif
