/* io/fingerprint.h — what a partial report (--shard I/N) says about the input it read, so that
 * `merge` can refuse shares computed from different contents at the same path (SPEC §9
 * "Partial reports"). Every share of a run computes the same fingerprint from the files'
 * contents alone (not their times, owners or the machine), whatever tensors it analyses. */
#ifndef FP4_IO_FINGERPRINT_H
#define FP4_IO_FINGERPRINT_H

#include <stdint.h>

#include "base/status.h"

/* One input file: its size and a 64-bit XXH3 of its size and sampled content. */
typedef struct fp4_file_print {
    char *path;     /* as fp4_source_input_files spells it (owned) */
    int64_t size;   /* bytes */
    uint64_t xxh3;  /* XXH3-64 (seed 0) of the size as 8 little-endian bytes, then the sample */
    int64_t hashed; /* bytes of the file in the sample: all of it up to FP4_PRINT_WHOLE */
} fp4_file_print;

/* Files up to this size are hashed whole; a larger one by a fixed sample: its first and last
 * FP4_PRINT_END bytes and FP4_PRINT_PIECES pieces of FP4_PRINT_PIECE bytes spread evenly
 * between them (3 MiB per file, read with pread, whatever the share). A change confined to
 * bytes outside the sample is not seen. */
#define FP4_PRINT_WHOLE (4 << 20)
#define FP4_PRINT_END (1 << 20)
#define FP4_PRINT_PIECES 32
#define FP4_PRINT_PIECE (32 << 10)

/* The fingerprint of everything reading `input` may read (fp4_source_input_files: the file, a
 * directory's entries, an index's shards), one entry per regular file sorted by path (the
 * same order on every machine; directories, FIFOs, devices and names that cannot be opened
 * are left out: seen by stat, never opened or waited on; so is, unless --allow-external
 * (fp4_source_allow_external), a file the input names that resolves outside its tree
 * (fp4_source_tree: a directory entry or shard symlinked elsewhere is never read, not even
 * hashed). *out is malloc'd (free with
 * fp4_fingerprint_free). FP4_ERR_INPUT "FILE: read error: ..." when a regular file cannot be
 * read; FP4_ERR_INTERNAL when out of memory. */
fp4_status fp4_fingerprint_input(const char *input, fp4_file_print **out, int *n);

/* The same for several inputs together (NULL entries skipped): one list sorted by path, a
 * file named by two inputs once (gemm's --x/--w/--dy operand files). */
fp4_status fp4_fingerprint_inputs(const char *const *inputs, int ninputs, fp4_file_print **out,
                                  int *n);

/* The same for one regular file (size and hash); FP4_ERR_INPUT when it cannot be opened or
 * read, or is not a regular file. */
fp4_status fp4_fingerprint_file(const char *path, fp4_file_print *out);

/* Whether the files of `inputs` still have the fingerprint p[0..n) that
 * fp4_fingerprint_inputs gave for them before they were read (a --shard run, after reading:
 * its numbers and its fingerprint must describe the same contents, SPEC §9): FP4_OK, or
 * FP4_ERR_INPUT naming the first file that changed (size or sampled contents), went or
 * appeared; FP4_ERR_INTERNAL when out of memory. */
fp4_status fp4_fingerprint_recheck(const char *const *inputs, int ninputs,
                                   const fp4_file_print *p, int n);

void fp4_fingerprint_free(fp4_file_print *p, int n);

/* The bytes the fingerprint of a file of `size` bytes (>= 0) hashes (fp4_file_print.hashed):
 * size up to FP4_PRINT_WHOLE, else the fixed sample's 2 * FP4_PRINT_END + FP4_PRINT_PIECES *
 * FP4_PRINT_PIECE (3 MiB). For checking a print read back from a report. */
int64_t fp4_fingerprint_hashed(int64_t size);

/* "%016llx" of the hash into buf (17 bytes). */
void fp4_fingerprint_hex(uint64_t h, char buf[17]);

#endif
