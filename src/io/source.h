/* io/source.h — where tensors come from: the tensor-source interface (one table of operations
 * per file format), the format-neutral tensor descriptor, and the one selection grammar
 * (SPEC §8). The driver, `ls` and `gemm` read tensors only through fp4_source_*.
 *
 * Adding a source (a file format):
 *   1. Write src/io/FORMAT.c with one `const fp4_source_ops fp4_source_FORMAT` filling at
 *      least probe, open, close, list, describe and read_raw (or read_f32); everything it
 *      calls of a foreign library stays in that file.
 *   2. Declare it `extern` in source_reg.c and add it to the table there, before HDF5 (the fallback that claims any file no
 *      probe recognised, and gives the "not an " FP4_INPUT_FORMATS " file" error), and its
 *      name to FP4_INPUT_FORMATS below.
 *   3. Fill every descriptor field (fp4_tensor_desc below): `stored` says how the words are
 *      stored, so the caller widens them (io/widen.h); FP4_STORED_OTHER means "only read_f32
 *      can read it" (then read_f32 is required).
 *   4. Names: `separators` lists the characters that split a name into components for the
 *      selection grammar ("/" for HDF5; "/." for names like "model.layers.0.mlp.weight"), and
 *      `rooted` says whether names begin with '/'.
 *   5. Tests: src/tests/test_FORMAT.c writes its own small files in a temp dir; a CLI case runs
 *      `ls` and `sqnr` on one.
 * Operations are called from one thread at a time per open source (the driver's reader thread
 * while it reads; never two at once). */
#ifndef FP4_IO_SOURCE_H
#define FP4_IO_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "base/status.h"

/* The formats read, as every message that lists them names them (one list: a format added to
 * fp4_source_table is added here): "not an " FP4_INPUT_FORMATS " file". */
#define FP4_INPUT_FORMATS "HDF5, safetensors, PyTorch, GGUF or NumPy"

#define FP4_MAX_RANK 8

/* How a tensor's elements are stored (the stored word); byte order in fp4_tensor_desc.
 * FP4_STORED_OTHER: a layout this program does not widen itself (an unusual custom float, a
 * non-numeric class); numeric ones are read through the source's read_f32. */
typedef enum fp4_stored {
    FP4_STORED_OTHER = 0,
    FP4_STORED_F16,  /* IEEE binary16 */
    FP4_STORED_BF16, /* sign 15, exponent 7..14, mantissa 0..6, bias 127 */
    FP4_STORED_F32,
    FP4_STORED_F64,
    FP4_STORED_I8,
    FP4_STORED_U8,
    FP4_STORED_I16,
    FP4_STORED_U16,
    FP4_STORED_I32,
    FP4_STORED_U32,
    FP4_STORED_I64,
    FP4_STORED_U64,
    FP4_STORED_COUNT
} fp4_stored;

/* Bytes of one stored word (0 for FP4_STORED_OTHER). */
int fp4_stored_size(fp4_stored s);

/* One tensor, described the same way whatever the format. */
typedef struct fp4_tensor_desc {
    char *name;                  /* full name as the format spells it: "/blocks/0/fc1/weight"
                                    (HDF5), "model.layers.0.mlp.weight" (owned) */
    int rank;                    /* 0 for a scalar */
    int64_t dims[FP4_MAX_RANK];
    int64_t nelems;              /* product of dims (1 for scalar); -1 when it overflows */
    char dtype[48];              /* "f16", "bf16", "f32", "f64", "i8".."u64",
                                    "float(s,e,m,bias)" for other custom floats (s sign bits,
                                    e exponent bits, m mantissa bits, exponent bias), e.g. bf16
                                    would be float(1,8,7,127); or the class name ("string",
                                    "compound", "opaque", "enum", …) when unsupported */
    char byte_order[4];          /* "le", "be" or "" (one-byte and non-numeric types) */
    fp4_stored stored;           /* the stored word, for our own widening (see above) */
    bool numeric;                /* float or integer: can be read as fp32 */
    bool exact_fp32;             /* widening to fp32 is exact (f16, bf16, f32, ints <= 24 bit) */
    int chunk_rank;              /* 0 when not chunked */
    int64_t chunk[FP4_MAX_RANK];
    char codec[96];              /* the stored form's filters/codec in order: "deflate(4),shuffle",
                                    or "" */
    bool codec_available;        /* every filter of `codec` can decode here */
    int64_t logical_bytes;       /* nelems * stored element size; -1 on overflow */
    int64_t stored_bytes;        /* bytes the tensor takes in the file */
    int64_t file_offset;         /* where its stored bytes begin in the file (or in `part`);
                                    -1 when not one plain range (HDF5 chunks) */
    char part[128];              /* the file of a multi-file source holding it (a shard's
                                    name) or its member (an .npz's "x.npy"); "" otherwise */
    char view[96];               /* where and how its numbers are read, for a source where
                                    two names may read the same ones (a PyTorch storage
                                    viewed under two names: tied weights; an HDF5 dataset
                                    under two hard links): tensors of one source with equal
                                    non-empty `view` hold the same numbers (the analyses
                                    read it once, SPEC §9); "" otherwise or when `problem` */
    char problem[160];           /* "" when the tensor can be read; else why not, the text of
                                    its error after "FILE: NAME: " ("string class is not
                                    supported", "filter blosc (32001) is not available",
                                    "size overflows 64 bits") */
} fp4_tensor_desc;

void fp4_tensor_desc_free(fp4_tensor_desc *t);
void fp4_tensor_desc_free_list(fp4_tensor_desc *list, int n);

/* One encoded chunk of a chunked tensor (for decoding on worker threads; see chunk_read). */
typedef struct fp4_source_chunk {
    int64_t offset[FP4_MAX_RANK]; /* element coordinates of the chunk's first element */
    uint32_t filter_mask;         /* bit i set: filter i of `codec` was not applied */
    int64_t file_offset;          /* where its bytes lie in the file; -1 when unknown */
    int64_t bytes;                /* encoded size; 0 = never written (the fill value) */
} fp4_source_chunk;

/* What a name is in a file (the selection grammar's question to a format). */
typedef enum fp4_name_kind { FP4_NAME_NONE = 0, FP4_NAME_GROUP, FP4_NAME_TENSOR } fp4_name_kind;

/* The operations of one format. `impl` is the format's own open-file object. Every operation
 * returns FP4_OK or an error value with a one-line detail "FILE: NAME: why". */
typedef struct fp4_source_ops {
    const char *name;       /* "hdf5" */
    const char *separators; /* characters splitting a name into components: "/" or "/." */
    bool rooted;            /* names begin with '/' (patterns get one when they lack it) */
    /* Whether `head` (the first n bytes of the file, n <= 4096, fewer for a short file) is
     * this format. NULL: the fallback (only the last entry of the table). */
    bool (*probe)(const unsigned char *head, size_t n);
    /* Optional. Asked when `probe` says no: whether the regular file `file` (whose first bytes
     * are head) is this format when its first bytes alone cannot tell (a safetensors index's
     * "weight_map" key may stand anywhere in its JSON). Opens the file only with
     * fp4_open_regular (never blocks). */
    bool (*probe_file)(const char *file, const unsigned char *head, size_t n);
    /* Optional. Whether the directory `dir` is this format (a sharded checkpoint's folder). */
    bool (*probe_dir)(const char *dir);
    /* Open read-only. FP4_ERR_INPUT "FILE: why" for a missing, unreadable or corrupt file. */
    fp4_status (*open)(const char *file, void **impl);
    void (*close)(void *impl);
    /* Every tensor's name in listing order (cheap: nothing is described). *names is a malloc'd
     * array of malloc'd strings, freed by the caller. */
    fp4_status (*list)(void *impl, char ***names, int *n);
    /* Describe one tensor by exact name (normalized: see `rooted`), including ones `list`
     * does not reach (HDF5 soft links). *kind says what the name is: a tensor (FP4_OK, or an
     * error reading its header), a group/prefix (FP4_ERR_INPUT "FILE: NAME: is a group, not a
     * dataset"; an empty group selects nothing and is no error) or nothing (FP4_ERR_INPUT
     * "FILE: NAME: no such dataset"). A tensor that cannot be read is described with FP4_OK
     * and `problem` set. */
    fp4_status (*describe)(void *impl, const char *name, fp4_tensor_desc *out,
                           fp4_name_kind *kind);
    /* The slab [start, start+count) along dimension `dim` (all of the others) as stored words
     * in host byte order, row-major within the slab: count * nelems / dims[dim] words of
     * fp4_stored_size(t->stored) bytes. Scalar: dim 0, start 0, count 1. FP4_ERR_USAGE for
     * a bad range; FP4_ERR_INPUT for data that cannot be read. NULL while a source has only
     * read_f32. */
    fp4_status (*read_raw)(void *impl, const fp4_tensor_desc *t, int dim, int64_t start,
                           int64_t count, void *buf);
    /* Optional. The same slab converted to fp32 by the format's own library (the fallback for
     * FP4_STORED_OTHER and the reference the widening tests compare against). */
    fp4_status (*read_f32)(void *impl, const fp4_tensor_desc *t, int dim, int64_t start,
                           int64_t count, float *buf);
    /* Optional. The whole tensor's stored words inside a read-only mapping, or NULL when it
     * is not stored plainly (zero-copy formats). Valid until close. */
    const void *(*view)(void *impl, const fp4_tensor_desc *t);
    /* Optional. The tensor's stored bytes as the file holds them (t->stored_bytes of them),
     * whatever its type, readable or not (F8_E8M0, packed 4-bit), or NULL when they are not
     * one range of a mapping. Valid until close. (io/quantized.c reads packed codes and
     * block scales through it.) */
    const void *(*bytes)(void *impl, const fp4_tensor_desc *t);
    /* Optional. The chunks of a chunked tensor, and the encoded bytes of chunk i into buf
     * (cap bytes). */
    fp4_status (*chunk_count)(void *impl, const fp4_tensor_desc *t, int64_t *n);
    fp4_status (*chunk_read)(void *impl, const fp4_tensor_desc *t, int64_t i,
                             fp4_source_chunk *info, void *buf, size_t cap);
    /* Optional. The file's free-form metadata as key/value strings in the file's order
     * (safetensors' __metadata__); *keys and *vals are malloc'd arrays of malloc'd strings. */
    fp4_status (*metadata)(void *impl, char ***keys, char ***vals, int *n);
    /* Optional. A sharded checkpoint's index "metadata" ({"total_size": ...}) in its order,
     * each value as unformatted JSON text; as `metadata` otherwise. */
    fp4_status (*index_metadata)(void *impl, char ***keys, char ***vals, int *n);
    /* Optional. The other files an open of `path` (a file or directory this format claims)
     * would read, found without reading tensor data: a sharded checkpoint's shards named by
     * its index. *files is a malloc'd array of malloc'd paths (none: *n = 0). */
    fp4_status (*files)(const char *path, char ***files, int *n);
    /* Optional. Let the library print its own error stack (-vv) or keep it silent. */
    void (*set_verbose)(bool verbose);
    /* Optional (formats whose files can point at other files). Follow such pointers outside
     * the directory tree of the file opened (--allow-external); by default only inside it,
     * and always only to regular files. */
    void (*set_allow_external)(bool allow);
    /* Optional. Whether every value of the slab [start, start+count) along dim lies in
     * storage never written whose fill value is zero (every byte 0): the slab then reads as
     * 0.0 throughout and need not be read. false when unknown. Cheap per call (what is stored
     * is looked up once per tensor). */
    bool (*zero_fill)(void *impl, const fp4_tensor_desc *t, int dim, int64_t start,
                      int64_t count);
} fp4_source_ops;

/* The registry (source_reg.c): every format, HDF5 last (the fallback). */
extern const fp4_source_ops *const fp4_source_table[];
extern const int fp4_source_count;

typedef struct fp4_source fp4_source;

/* Open FILE read-only as the format whose probe recognises its first bytes (HDF5 when none
 * does). Errors of the format's open: FP4_ERR_INPUT "FILE: no such file", "FILE: not an HDF5
 * file", … */
fp4_status fp4_source_open(const char *file, fp4_source **out);
void fp4_source_close(fp4_source *s);

/* A source over an already-open `impl` of `ops` (a source that no file probe reaches: caller
 * memory, io/memsrc.h), named `file` in messages; on success it owns impl (ops->close on
 * fp4_source_close). FP4_ERR_INTERNAL when out of memory (impl not closed then). */
fp4_status fp4_source_wrap(const fp4_source_ops *ops, void *impl, const char *file,
                           fp4_source **out);
const char *fp4_source_file(const fp4_source *s);
const fp4_source_ops *fp4_source_format(const fp4_source *s);
/* What a name that selects nothing is not, in the source's own words: "dataset or group"
 * (HDF5), else "tensor or name prefix" (safetensors, PyTorch, NumPy, GGUF keys). */
const char *fp4_source_what(const fp4_source *s);

/* The source's metadata (see fp4_source_ops.metadata); none (*n = 0) for formats without. Free
 * with fp4_source_metadata_free. */
fp4_status fp4_source_metadata(fp4_source *s, char ***keys, char ***vals, int *n);
void fp4_source_metadata_free(char **keys, char **vals, int n);

/* The index metadata of a sharded source (see fp4_source_ops.index_metadata; values are JSON
 * text); none (*n = 0) for others. Free with fp4_source_metadata_free. */
fp4_status fp4_source_index_metadata(fp4_source *s, char ***keys, char ***vals, int *n);

/* Open `path` read-only to read its bytes, never blocking on it: anything but a regular file
 * (a FIFO, a device, a socket, a directory) is refused before the open (stat) and again on the
 * descriptor (fstat: a file swapped meanwhile), and the open itself is O_NONBLOCK|O_NOCTTY
 * (then made blocking again for reads). Every input path (files, shards, indexes, directory
 * entries) is opened through it. Returns the descriptor (O_CLOEXEC) with *sb its fstat, or -1
 * with *why the reason ("no such file", "a FIFO, not a regular file", strerror's text). */
int fp4_open_regular(const char *path, struct stat *sb, const char **why);

/* The input's tree (SPEC section 8): the real path of the directory `input` names, or the real
 * directory of the file it names (malloc'd; NULL when it cannot be resolved); a directory at or
 * below a Hugging Face cache snapshot (REPO/snapshots/REV, with REPO/blobs a directory) has the
 * repository folder REPO as its tree. Files an input names (shards, directory entries) are read
 * only inside it unless --allow-external. */
char *fp4_source_tree(const char *input);

/* Whether `path` resolves (realpath: symlinks of the file or of any directory above it)
 * outside the tree `root` (fp4_source_tree). False when it cannot be resolved (its open then
 * says why) or root is NULL. */
bool fp4_source_outside_tree(const char *path, const char *root);

/* Every file that reading the input `path` may read, for the check that -o is none of them
 * (SPEC §9): `path` itself; for a directory a format reads (probe_dir) every entry directly
 * in it; and what the format's `files` names (the shards of a safetensors index, given or
 * found in the directory). An index that cannot be parsed adds nothing (opening it gives the error).
 * *files is malloc'd with malloc'd paths (free with fp4_source_files_free); FP4_ERR_INTERNAL
 * only when out of memory. */
fp4_status fp4_source_input_files(const char *path, char ***files, int *n);
void fp4_source_files_free(char **files, int n);

/* Every format's library prints its own error stack (true, -vv) or stays silent (default). */
void fp4_source_set_verbose(bool verbose);

/* --allow-external for every format (see fp4_source_ops.set_allow_external). */
void fp4_source_set_allow_external(bool allow);
/* The value last set by fp4_source_set_allow_external (false until then): for files read
 * beside an input that are no format's own (a quantized checkpoint's hf_quant_config.json,
 * config.json: io/quantized.c). */
bool fp4_source_allow_external(void);
/* -v: sources say on stderr when a tensor is read by a slower path ("FILE: DSET: read through
 * HDF5: filter szip is not decoded here"); off by default. */
void fp4_source_set_notes(bool on);
bool fp4_source_notes(void);

/* The selection grammar (SPEC §8), the same for every format. Each pattern is an exact tensor
 * name, a group/prefix (every tensor below it: the name continues with a separator), or a
 * glob on the full name (fnmatch: '*' does not cross a separator; a glob matching a group
 * selects every tensor below it; names of any length); no patterns
 * = every tensor. A leading '/' is optional. Results in listing order, de-duplicated, every
 * one described (tensors that cannot be read included, with `problem` set). *out is freed
 * with fp4_tensor_desc_free_list. A pattern that matches nothing: FP4_ERR_INPUT
 * "FILE: PATTERN: no such dataset or group"; an empty pattern: FP4_ERR_USAGE
 * (fp4_select_check). */
fp4_status fp4_source_select(fp4_source *s, const char *const *patterns, int npatterns,
                             fp4_tensor_desc **out, int *n);

/* An empty selection pattern ('') is refused, never read as "every tensor" (SPEC §8,
 * "Operands"): FP4_ERR_USAGE "selection pattern N is empty (''): ..." naming the first one
 * (N counts from 1), FP4_OK when every pattern has a character. fp4_source_select and the audit
 * run check it; the commands check it before any file is opened. */
fp4_status fp4_select_check(const char *const *patterns, int npatterns);

/* The name of names[0..nnames) closest to the pattern `pat` by edit distance when it is a
 * typo of it (at most 2 edits, or a quarter of the pattern's length for longer names), NULL
 * otherwise or for a glob: the "did you mean" of a pattern that selects nothing. */
const char *fp4_source_nearest_name(const char *pat, char *const *names, int nnames);

/* fp4_source_select, except that a pattern matching nothing (neither a tensor nor a group) is
 * no error when `unmatched` is given: unmatched[j] (npatterns entries, zeroed by the caller)
 * is set and the other patterns select as usual. The analysis commands warn about these. */
fp4_status fp4_source_select_some(fp4_source *s, const char *const *patterns, int npatterns,
                                  fp4_tensor_desc **out, int *n, bool *unmatched);

/* Whether `pattern` (the selection grammar, as --exclude takes it) matches the name of any of
 * list[0..n) (*any). FP4_ERR_INTERNAL only when out of memory. */
fp4_status fp4_source_pattern_hits(const fp4_source *s, const char *pattern,
                                   const fp4_tensor_desc *list, int n, bool *any);

/* Whether selection pattern `pattern` (as the user wrote it) names tensor `name` exactly (the
 * source's normalisation applied: a leading '/' optional). False when out of memory. */
bool fp4_source_names_exactly(const fp4_source *s, const char *pattern, const char *name);

/* Whether `pattern` (normalized: see fp4_select_normalize) selects tensor `name` under the
 * separators `seps` (exposed for tests). */
bool fp4_select_matches(const char *pattern, const char *name, const char *seps);

/* The analysis commands' default selection (SPEC §8): what the 4-bit recipes quantize,
 * floating-point tensors of rank >= 2. Whether tensor `t` (selected by `patterns`) is left out,
 * and why: NULL when it is analysed, else `buf` holding the reason ("rank 1", "rank 0
 * (scalar)", "integer (i64)", "not numeric (string)", "excluded by --exclude GLOB").
 *   - a pattern naming `t` exactly analyses it whatever its rank or type;
 *   - all_tensors: every tensor is analysed (a non-numeric one then fails as an error entry);
 *   - a tensor matching any of exclude[0..nexclude) (the selection grammar: name, group or
 *     glob) is left out in every case.
 * FP4_ERR_INTERNAL only when out of memory (*reason untouched then). */
fp4_status fp4_source_skip_reason(const fp4_source *s, const fp4_tensor_desc *t,
                                  const char *const *patterns, int npatterns, bool all_tensors,
                                  const char *const *exclude, int nexclude, char *buf,
                                  size_t n, const char **reason);

/* Describe one tensor by exact name (leading '/' optional). FP4_ERR_INPUT "FILE: NAME: no
 * such dataset" / "is a group, not a dataset". */
fp4_status fp4_source_describe(fp4_source *s, const char *name, fp4_tensor_desc *out);

/* The slab [start, start+count) along `dim` as fp32, row-major within the slab; buf holds
 * count * nelems / dims[dim] floats (scalar: dim 0, start 0, count 1). The stored words are
 * read raw and widened in our own code (io/widen.h: the bits the library's conversion gives)
 * whenever fp4_source_widens; else the format's read_f32. Errors as read_raw;
 * FP4_ERR_INPUT "FILE: NAME: <problem>" for a tensor with `problem` set. */
fp4_status fp4_source_read_f32(fp4_source *s, const fp4_tensor_desc *t, int dim, int64_t start,
                               int64_t count, float *buf);

/* Whether fp4_source_read_f32 widens t's stored words in our own code (io/widen.h) rather
 * than through the format library's conversion (the slower fallback for layouts we do not
 * know: `ls -v` names the path). */
bool fp4_source_widens(const fp4_source *s, const fp4_tensor_desc *t);

/* Whether the slab reads as 0.0 throughout without being read: never-written storage with a
 * zero fill value (see fp4_source_ops.zero_fill); false when unknown or not so. */
bool fp4_source_zero_fill(fp4_source *s, const fp4_tensor_desc *t, int dim, int64_t start,
                          int64_t count);

/* The tensor's stored bytes as the file holds them (see fp4_source_ops.bytes); NULL when the
 * format cannot give them. */
const void *fp4_source_bytes(fp4_source *s, const fp4_tensor_desc *t);

/* The slab's stored words in host order (see fp4_source_ops.read_raw). FP4_ERR_INPUT when the
 * format cannot give them (FP4_STORED_OTHER). */
fp4_status fp4_source_read_raw(fp4_source *s, const fp4_tensor_desc *t, int dim, int64_t start,
                               int64_t count, void *buf);

#endif
