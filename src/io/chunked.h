/* io/chunked.h — a slab of a chunked tensor read from its stored chunks without the format's
 * library: each chunk's bytes read with pread at its file address (bounds-checked against the
 * file size), decoded on worker threads (io/codec.h), and placed in order into the slab;
 * chunks never written are the fill value. Format-neutral: the source (h5io.c) lists the
 * chunks and the filter pipeline once and hands them over (SPEC §8, reading). */
#ifndef FP4_IO_CHUNKED_H
#define FP4_IO_CHUNKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/codec.h"
#include "base/status.h"

#define FP4_CHUNKED_MAX_RANK 8

/* One stored chunk. */
typedef struct fp4_chunk_ref {
    int64_t lin;       /* linear index in the chunk grid (row-major over grid[]) */
    uint64_t addr;     /* absolute byte offset of its stored bytes in the file */
    uint64_t bytes;    /* stored (encoded) size */
    uint32_t mask;     /* filter mask: bit i set = filter i skipped for this chunk */
} fp4_chunk_ref;

/* A chunked tensor as this reader needs it. Filled by the source, then fp4_chunked_prepare. */
typedef struct fp4_chunked {
    const char *file;  /* for messages: "FILE: NAME: chunk (r,c): why" */
    const char *name;
    int fd;            /* open read-only on `file`; pread only (thread-safe); not owned */
    int64_t file_size; /* bytes: a chunk reaching past it is an error, never read */
    int rank;          /* 1..FP4_CHUNKED_MAX_RANK */
    int64_t dims[FP4_CHUNKED_MAX_RANK];
    int64_t chunk[FP4_CHUNKED_MAX_RANK];  /* chunk dimensions, each >= 1 */
    size_t elem_size;  /* bytes of one stored word, 1..16 */
    bool swap;         /* the stored words' byte order is not the host's: swap when placing */
    fp4_pipeline pipeline;
    bool fill_defined; /* false: a never-written chunk is an error (no defined value) */
    unsigned char fill[16]; /* the fill value's stored word (file byte order) */
    bool fill_zero;    /* set by fp4_chunked_prepare: fill_defined and every byte 0 */
    fp4_chunk_ref *refs;    /* the stored chunks (owned by the caller); sorted by prepare */
    int64_t nrefs;
    /* set by fp4_chunked_prepare */
    int64_t grid[FP4_CHUNKED_MAX_RANK]; /* chunks per dimension */
    size_t chunk_bytes;                 /* decoded bytes of one chunk */
} fp4_chunked;

/* Validate the fields, compute grid and chunk_bytes, and sort refs by lin. FP4_ERR_INPUT
 * "FILE: NAME: why" for a rank, dimension or chunk size that overflows, a chunk listed twice
 * or outside the grid, or an unsupported pipeline (the caller then reads through the format's
 * library instead). A chunk pointing outside the file is not an error here: only reading it is
 * (the other slabs of the tensor stay readable, and the tensor's error names that chunk). */
fp4_status fp4_chunked_prepare(fp4_chunked *c);

/* Working memory the reader may use for decoding, in bytes, across all its threads (0: no
 * bound). Set once from --mem-limit before reading; process-wide. */
void fp4_chunked_set_memory(int64_t bytes);
/* The bound set by fp4_chunked_set_memory (0: none); other whole-unit decoders (a deflated
 * .npz member, a chunk the HDF5 library decodes: io/h5io.c) hold to it too. */
int64_t fp4_chunked_memory(void);

/* Threads decoding at once (0: OpenMP's default). Process-wide. */
void fp4_chunked_set_threads(int threads);

/* Read the slab [start, start+count) along dimension dim (all of the others) into buf as
 * stored words in host byte order, row-major within the slab: count * prod(dims)/dims[dim]
 * words of elem_size bytes. Each chunk that meets the slab is read and decoded once, on up to
 * the set number of threads (fewer when one chunk's working memory times the threads would
 * pass the memory bound).
 * Errors: FP4_ERR_USAGE for a bad range; FP4_ERR_INPUT "FILE: NAME: chunk (i,j,..): why" for
 * the first bad chunk in grid order (corrupt, truncated, checksum, wrong decoded size, an
 * address outside the file, a read error, never written with no fill value, or a chunk whose
 * decoding needs more memory than the bound allows: decoding cannot be split); then buf is
 * partly written and must not be used. FP4_ERR_INTERNAL when memory runs out. */
fp4_status fp4_chunked_read(const fp4_chunked *c, int dim, int64_t start, int64_t count,
                            void *buf);

/* Bytes one decoding thread needs for chunk working memory (stored bytes, scratch, the decoded
 * chunk) at most, given the largest stored chunk. */
size_t fp4_chunked_thread_bytes(const fp4_chunked *c);

#endif
