/* output.h — where a report goes (SPEC §9): -o FILE checked before any input is read (never an
 * input, never a directory, its directory writable), then written whole: a regular file through
 * a temporary file and rename, a pipe, terminal or character device directly, never appended. */
#ifndef FP4_OUTPUT_H
#define FP4_OUTPUT_H

#include <stddef.h>

#include "base/status.h"

/* Check -o `path` against the run's input files, before anything is read, and keep what the
 * final write needs. NULL or "-" is stdout (nothing to check). Refused:
 *   FP4_ERR_USAGE  "-o PATH is the input FILE ..." when PATH resolves (symlinks, hard links,
 *                  /proc/self/cwd/...: same st_dev and st_ino) to any of inputs[0..ninputs)
 *                  (an input that does not exist is skipped: it cannot be overwritten);
 *                  "-o PATH is F, read as part of the input FILE ..." when it resolves to a
 *                  file reading an input reads: an entry of an input directory, a shard
 *                  named by a safetensors index (fp4_source_input_files);
 *                  a block device, socket or other special file;
 *   FP4_ERR_INPUT  "-o PATH: is a directory"; the directory of a new file missing or not
 *                  writable; an existing regular file that is read-only (no write bit in its
 *                  mode, or access says no: it is not replaced); a dangling symlink; a regular
 *                  file under /proc; a FIFO with no reader (opened O_NONBLOCK: ENXIO, never
 *                  blocks).
 * A FIFO or character device is opened here (write only, never O_APPEND, never created) and the
 * descriptor kept for fp4_output_write, so a reader present now still gets the report. One
 * prepared output per process: a second call replaces the first (closing its descriptor). */
fp4_status fp4_output_prepare(const char *path, const char *const *inputs, int ninputs);

/* Write `len` bytes of `text` to `path` (NULL or "-": stdout). When `path` is the prepared one,
 * what fp4_output_prepare found is used; otherwise the same checks run now (with no inputs).
 * A regular file, or a path that does not exist yet, is written to a temporary file in the same
 * directory as the file itself (symlinks resolved; fp4_cleanup_mkstemp), fsync'd and rename()d
 * over it, so the report is whole or absent and never appended; a pipe, terminal or character
 * device (/dev/null, /dev/full, /dev/stdout when it is one) is written directly and never
 * renamed over or unlinked. Errors: FP4_ERR_INPUT "PATH: why" (ENOSPC, EPIPE, ...), the
 * refusals of fp4_output_prepare; on error no temporary file is left behind. */
fp4_status fp4_output_write(const char *path, const char *text, size_t len);

/* The checks of fp4_output_prepare for a second output file given with `option` (as messages
 * name it: "--emit-exclude"), before anything is read, keeping nothing: the prepared output
 * is left alone, and a FIFO or character device is not opened (fp4_output_write_as opens it). */
fp4_status fp4_output_check(const char *option, const char *path, const char *const *inputs,
                            int ninputs);

/* fp4_output_write for a file given with `option`: its messages name that option. */
fp4_status fp4_output_write_as(const char *option, const char *path, const char *text,
                               size_t len);

/* The verbosity of the run (-q: -1, default 0, -v: 1+): with 1 or more, or 0 and stderr a
 * terminal, each fp4_output_write to a file (not stdout) says so on stderr in one line,
 * "fp4diag: wrote PATH (N bytes)"; -q never. Default 0. */
void fp4_output_set_verbosity(int verbosity);

/* Forget the prepared output (closing a kept descriptor). Safe when none is prepared. */
void fp4_output_forget(void);

#endif
