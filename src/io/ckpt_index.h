/* io/ckpt_index.h — the sharded checkpoint index (NAME.index.json: "weight_map" from tensor
 * names to shard files, "metadata"), read the same way by the safetensors source
 * (model.safetensors.index.json) and the PyTorch one (pytorch_model.bin.index.json): the file
 * read and parsed (io/st_parse.h fp4_st_index_parse), the shard paths beside it, the metadata
 * kept for fp4_source_ops.index_metadata, the `files` op's list. SPEC section 8. */
#ifndef FP4_IO_CKPT_INDEX_H
#define FP4_IO_CKPT_INDEX_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"
#include "io/st_parse.h"

/* dir + "/" + name, or the directory part of path ("." without a slash, "/" at the root);
 * malloc'd, NULL when out of memory. */
char *fp4_path_join(const char *dir, const char *name);
char *fp4_dir_of(const char *path);

/* Read the index file `index` (a regular file, never a FIFO: fp4_open_regular; at most
 * FP4_ST_MAX_HEADER bytes, else FP4_ERR_INPUT "... exceeds the 100 MB limit") and parse it
 * into *ix (free with fp4_st_index_free). Its metadata is moved into *meta (what *meta held
 * is freed first), ix's left empty. FP4_ERR_INPUT naming the file, FP4_ERR_INTERNAL when out
 * of memory; *ix is empty then. */
fp4_status fp4_ckpt_index_load(const char *index, fp4_st_index *ix, fp4_st_index *meta);

/* ix's shards as paths beside `index` (*paths: ix->nshards malloc'd strings and a NULL, free
 * each and the array); FP4_ERR_INTERNAL when out of memory (nothing to free then). */
fp4_status fp4_ckpt_index_paths(const char *index, const fp4_st_index *ix, char ***paths);

/* The `files` op of a sharded source (io/source.h fp4_source_ops.files): when `path` is a
 * directory holding exactly one file whose name ends in `suffix`, or a regular file that
 * is_index accepts from its first 4096 bytes, the shard paths its index names (*files, *n:
 * free each and the array); else none (FP4_OK, *n = 0: the open says what is wrong). */
fp4_status fp4_ckpt_index_files(const char *path, const char *suffix,
                                bool (*is_index)(const char *path, const unsigned char *head,
                                                 size_t n),
                                char ***files, int *n);

/* The checkpoint files of directory `dir` (its own entries): names ending in idx_suffix are
 * indexes, names is_file accepts are files. Exactly one index: *index its path (malloc'd) and
 * no files. Several: FP4_ERR_INPUT "DIR: holds N index files (A, B, ...): name the one to
 * read". None: *files the files' paths in name order (*nfiles of them, and a NULL: free each
 * and the array), or FP4_ERR_INPUT "DIR: no WHAT in this directory" when there is none. A
 * directory that cannot be read: FP4_ERR_INPUT "DIR: <strerror>". Nothing to free on an
 * error. */
fp4_status fp4_ckpt_dir_scan(const char *dir, const char *idx_suffix,
                             bool (*is_file)(const char *name), const char *what, char **index,
                             char ***files, int *nfiles);

/* A copy of meta's keys and values (fp4_source_ops.index_metadata; free with
 * fp4_source_metadata_free); FP4_ERR_INTERNAL when out of memory (nothing to free then). */
fp4_status fp4_ckpt_index_metadata(const fp4_st_index *meta, char ***keys, char ***vals, int *n);

#endif
